//! `timetrack-bench`: measures timetrack on loopback against the machine's own limits and writes
//! a report. It starts everything itself: its PostgreSQL (a private durable cluster, or a
//! database on `DATABASE_URL`'s server), the release `timetrack` binary, and an HTTPS receiver
//! with its own CA.
//!
//! Workloads: delivery throughput (S = 1 and 10), delivery latency at a fixed rate, client
//! search on a large dataset beside the same query run directly through a pool, the machine's
//! HTTPS and commit rates, the server's peak memory, a replay of a large history beside live
//! traffic and the feed read whole, two server processes on one database against one, an
//! outage of one subscriber and its recovery, what ordering and filters cost, reports and a
//! rate change on a workspace of a million entries, and the MCP server. See
//! `docs/benchmarks.md`.

mod cpu;
mod dbstats;
mod delivery;
mod fanout;
mod hang;
mod lean;
mod limits;
mod loads;
mod mcp;
mod outage;
mod pooler;
mod replay;
mod replica;
mod report;
mod reports;
mod scaleout;
mod search;
mod setup;
mod stats;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Parser;

/// Command-line options.
#[derive(Debug, Clone, Parser)]
#[command(name = "timetrack-bench", version, about)]
pub struct Options {
    /// Small sizes and one repetition, in seconds: proves the tool works (CI), measures nothing.
    #[arg(long)]
    pub smoke: bool,
    /// The `timetrack` binary to measure (build it with `cargo build --release`).
    #[arg(long, default_value = "target/release/timetrack")]
    pub server_bin: PathBuf,
    /// Where the report goes.
    #[arg(long, default_value = "docs/benchmarks.md")]
    pub report: PathBuf,
    /// Where the private PostgreSQL cluster lives (when `DATABASE_URL` is unset).
    #[arg(long, default_value = "target/timetrack-bench")]
    pub data_dir: PathBuf,
    /// Repetitions of each workload (the report gives the median and the spread).
    #[arg(long)]
    pub runs: Option<usize>,
    /// Skip the client-search workload (quicker runs while working on delivery).
    #[arg(long)]
    pub skip_search: bool,
    /// Run only these workloads (comma-separated), for quick looks while profiling; the report
    /// then lacks the others.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub only: Vec<Workload>,
    /// Search only these queries (comma-separated, from the workload's list), for quick looks.
    #[arg(long, value_delimiter = ',')]
    pub search_queries: Vec<String>,
    /// Search only at these concurrencies (comma-separated, from 1, 8 and 32), for quick looks.
    #[arg(long, value_delimiter = ',')]
    pub search_concurrency: Vec<usize>,
    /// How long each search measurement lasts, in milliseconds (default: 1,500; smoke: 100).
    #[arg(long)]
    pub search_window_ms: Option<u64>,
}

/// The workloads `--only` can pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    Throughput,
    Latency,
    Search,
    /// Two and four `serve` processes on one database against one (and one of two killed), with
    /// the database's CPU per delivery and the claims' lock waits.
    Scaleout,
    /// A replay of a large history beside a live subscription, and the feed read whole.
    Replay,
    /// One of ten subscriptions answers 503 for a while, then recovers.
    Outage,
    /// Ordering's cost (start/stop pairs against unrelated entities) and filter fan-out (one
    /// matching subscription of 100 filtered against one unfiltered).
    Fanout,
    /// A healthy tenant's latency while 100 webhooks of another tenant hang.
    Hang,
    /// Summary and detailed reports and a rate change on a workspace of 1,000,000 entries.
    Reports,
    /// An MCP `start_timer` until its webhook delivery at a steady rate, and the MCP layer's
    /// cost per call against the same REST call.
    Mcp,
    /// The search and report loads without and with `--database-replica-url`: the primary's
    /// CPU per request in each.
    Replica,
    /// A write, the search and the report loads connected directly and through PgBouncer in
    /// transaction mode (`--database-pooler transaction`): what the pooler costs per request.
    Pooler,
}

impl Options {
    fn runs(&self, workload: Workload) -> bool {
        match workload {
            Workload::Search if self.skip_search => false,
            _ => self.only.is_empty() || self.only.contains(&workload),
        }
    }
}

/// The sizes of one run of the tool.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub runs: usize,
    /// Events of the throughput workload.
    pub burst_events: usize,
    /// Concurrent API clients of the throughput workload.
    pub burst_clients: usize,
    /// Rate and duration of the latency workload.
    pub latency_rate: u32,
    pub latency_seconds: u64,
    /// The search dataset: workspaces × clients, plus one big workspace.
    pub small_workspaces: usize,
    pub clients_per_workspace: usize,
    pub big_workspace_clients: usize,
    /// How long each search measurement lasts.
    pub search_window: Duration,
    /// How long each machine-limit measurement lasts.
    pub limit_window: Duration,
    /// Events of the replayed history (and of the feed read).
    pub replay_events: usize,
    /// How long the outage workload's failing subscription answers 503, and how long events
    /// keep coming after it recovers.
    pub outage_seconds: u64,
    pub recovery_seconds: u64,
    /// Entities of the ordering workload (two events each), and events of the filter fan-out.
    pub ordering_entities: usize,
    pub fanout_events: usize,
    /// Entries of the reports workspace, and the month summaries asked for one after another.
    pub report_entries: usize,
    pub report_month_requests: usize,
    /// Rate and duration of the MCP end-to-end part, and calls of each door per repetition of
    /// its overhead part.
    pub mcp_rate: u32,
    pub mcp_seconds: u64,
    pub mcp_overhead_calls: usize,
}

impl Sizes {
    fn full() -> Self {
        Self {
            runs: 3,
            burst_events: 5_000,
            burst_clients: 16,
            latency_rate: 200,
            latency_seconds: 20,
            small_workspaces: 1_000,
            clients_per_workspace: 1_000,
            big_workspace_clients: 200_000,
            search_window: Duration::from_millis(1_500),
            limit_window: Duration::from_secs(3),
            replay_events: 100_000,
            outage_seconds: 60,
            recovery_seconds: 20,
            ordering_entities: 1_000,
            fanout_events: 2_000,
            report_entries: 1_000_000,
            report_month_requests: 200,
            mcp_rate: 50,
            mcp_seconds: 20,
            mcp_overhead_calls: 500,
        }
    }

    fn smoke() -> Self {
        Self {
            runs: 1,
            burst_events: 200,
            burst_clients: 4,
            latency_rate: 50,
            latency_seconds: 2,
            small_workspaces: 5,
            clients_per_workspace: 50,
            big_workspace_clients: 2_000,
            search_window: Duration::from_millis(100),
            limit_window: Duration::from_millis(300),
            replay_events: 2_000,
            outage_seconds: 3,
            recovery_seconds: 2,
            ordering_entities: 40,
            fanout_events: 40,
            report_entries: 20_000,
            report_month_requests: 10,
            mcp_rate: 50,
            mcp_seconds: 1,
            mcp_overhead_calls: 10,
        }
    }
}

fn main() -> Result<()> {
    let options = Options::parse();
    let mut sizes = if options.smoke {
        Sizes::smoke()
    } else {
        Sizes::full()
    };
    if let Some(runs) = options.runs {
        sizes.runs = runs.max(1);
    }
    if let Some(ms) = options.search_window_ms {
        sizes.search_window = Duration::from_millis(ms.max(1));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(run(options, sizes))
}

async fn run(options: Options, sizes: Sizes) -> Result<()> {
    let started = time::OffsetDateTime::now_utc();
    let env = setup::Environment::start(&options).await?;
    progress(&format!("database {}", env.database_label));

    let limits = limits::measure(&env, sizes).await?;
    progress(&format!(
        "machine: {:.0} HTTPS POST/s, {:.0} commits/s",
        limits.https_posts.median(),
        limits.commits.median()
    ));

    let server = env.start_server(&options).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle_rss = server.memory()?;
    progress(&format!("idle RSS {:.1} MB", idle_rss.rss_mb()));

    let throughput = if options.runs(Workload::Throughput) {
        delivery::throughput(&env, &server, sizes).await?
    } else {
        Vec::new()
    };
    let load_rss = server.memory()?;
    progress(&format!("peak RSS under load {:.1} MB", load_rss.peak_mb()));
    // Each workload after a delivery workload starts on vacuumed delivery tables.
    let delivered = options.runs(Workload::Throughput);
    let latency = if options.runs(Workload::Latency) {
        if delivered {
            env.settle().await?;
        }
        delivery::latency(&env, &server, sizes).await?
    } else {
        Vec::new()
    };
    let delivered = delivered || options.runs(Workload::Latency);
    let search = if options.runs(Workload::Search) {
        if delivered {
            env.settle().await?;
        }
        search::measure(&env, &server, sizes, &options).await?
    } else {
        search::Search::default()
    };
    let replay = if options.runs(Workload::Replay) {
        env.settle().await?;
        Some(replay::measure(&env, &server, sizes).await?)
    } else {
        None
    };
    let scaleout = if options.runs(Workload::Scaleout) {
        env.settle().await?;
        Some(scaleout::measure(&env, &server, sizes, &options).await?)
    } else {
        None
    };
    let fanout = if options.runs(Workload::Fanout) {
        env.settle().await?;
        Some(fanout::measure(&env, &server, sizes).await?)
    } else {
        None
    };
    let mcp = if options.runs(Workload::Mcp) {
        env.settle().await?;
        Some(mcp::measure(&env, &server, sizes).await?)
    } else {
        None
    };
    let reports = if options.runs(Workload::Reports) {
        env.settle().await?;
        Some(reports::measure(&env, &server, sizes).await?)
    } else {
        None
    };
    drop(server);
    let replica = if options.runs(Workload::Replica) {
        env.settle().await?;
        Some(replica::measure(&env, &options, sizes).await?)
    } else {
        None
    };
    let pooler = if options.runs(Workload::Pooler) {
        env.settle().await?;
        Some(pooler::measure(&env, &options, sizes).await?)
    } else {
        None
    };
    let outage = if options.runs(Workload::Outage) {
        env.settle().await?;
        let server = env
            .start_server_with(
                &options,
                &[("TIMETRACK_WEBHOOK_RETRY_SCHEDULE", outage::SCHEDULE)],
            )
            .await?;
        Some(outage::measure(&env, &server, sizes).await?)
    } else {
        None
    };

    let hang = if options.runs(Workload::Hang) {
        env.settle().await?;
        let server = env.start_server(&options).await?;
        Some(hang::measure(&env, &server, sizes).await?)
    } else {
        None
    };

    let report = report::Report {
        started,
        smoke: options.smoke,
        sizes,
        environment: env.describe(),
        limits,
        idle_rss,
        load_rss,
        throughput,
        latency,
        search,
        replay,
        scaleout,
        outage,
        fanout,
        hang,
        reports,
        mcp,
        replica,
        pooler,
    };
    report.write(&options.report)?;
    progress(&format!("report written to {}", options.report.display()));
    let failures = report.correctness_failures();
    env.stop();
    if failures.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("{}", failures.join("; "))
    }
}

/// One line of progress on stderr.
pub fn progress(line: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "[bench] {line}");
}
