//! The report: `docs/benchmarks.md` (figures, targets, machine, date, commands) and an SVG plot of
//! the delivery latencies beside it.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

use crate::Sizes;
use crate::cpu::CpuPerRequest;
use crate::dbstats::DbPerEvent;
use crate::delivery::{Latency, Throughput};
use crate::fanout::{self, Fanout};
use crate::hang::{self, Hang};
use crate::limits::{COMMIT_CONNECTIONS, HTTPS_CONCURRENCY, HTTPS_WIDE_CONCURRENCY, Limits};
use crate::mcp::Mcp;
use crate::outage::{self, Outage};
use crate::pooler::Pooled;
use crate::replay::Replay;
use crate::replica::ReplicaReads;
use crate::reports::Reports;
use crate::scaleout::{self, ScaleOut};
use crate::search::Search;
use crate::setup::Memory;
use crate::stats::Repeated;

/// The heading of `docs/benchmarks.md`'s hand-kept section (measurements behind design
/// choices, each with its machine and method), which a new run keeps.
pub const KEPT_SECTION: &str = "## Measurements behind the design";

/// Everything one run of the tool measured.
pub struct Report {
    pub started: time::OffsetDateTime,
    pub smoke: bool,
    pub sizes: Sizes,
    pub environment: String,
    pub limits: Limits,
    pub idle_rss: Memory,
    pub load_rss: Memory,
    pub throughput: Vec<Throughput>,
    pub latency: Vec<Latency>,
    pub search: Search,
    pub replay: Option<Replay>,
    pub scaleout: Option<ScaleOut>,
    pub outage: Option<Outage>,
    pub fanout: Option<Fanout>,
    pub hang: Option<Hang>,
    pub reports: Option<Reports>,
    pub mcp: Option<Mcp>,
    pub replica: Option<ReplicaReads>,
    pub pooler: Option<Pooled>,
}

/// A target and whether it was met.
struct Target {
    what: String,
    goal: String,
    measured: String,
    met: bool,
}

impl Report {
    /// Lost deliveries, refused requests and failed searches: these fail the run whatever the
    /// sizes (the smoke run included).
    pub fn correctness_failures(&self) -> Vec<String> {
        let mut failures = Vec::new();
        for t in &self.throughput {
            if t.lost > 0 {
                failures.push(format!("S={}: {} deliveries lost", t.subscriptions, t.lost));
            }
            if t.refused > 0 {
                failures.push(format!(
                    "S={}: {} event requests refused",
                    t.subscriptions, t.refused
                ));
            }
        }
        for l in &self.latency {
            if l.lost > 0 {
                failures.push(format!(
                    "latency S={}: {} deliveries lost",
                    l.subscriptions, l.lost
                ));
            }
        }
        if let Some(r) = &self.replay
            && r.lost > 0
        {
            failures.push(format!("replay: {} deliveries or feed events lost", r.lost));
        }
        if let Some(x) = &self.scaleout {
            let lost = x.one_lost + x.two_lost + x.four_lost + x.killed_lost;
            if lost > 0 {
                failures.push(format!("scale-out: {lost} deliveries lost"));
            }
            let duplicates = x.one_duplicates + x.two_duplicates + x.four_duplicates;
            if duplicates > 0 {
                failures.push(format!(
                    "scale-out: {duplicates} deliveries duplicated without a kill"
                ));
            }
            if x.killed_duplicates > x.leased_at_kill {
                failures.push(format!(
                    "scale-out: {} duplicates at a kill, more than the {} in flight",
                    x.killed_duplicates, x.leased_at_kill
                ));
            }
        }
        if let Some(r) = &self.reports {
            failures.extend(r.failures.iter().cloned());
        }
        if let Some(m) = self.mcp.as_ref().filter(|m| m.lost > 0 || m.failed > 0) {
            failures.push(format!(
                "mcp: {} deliveries lost, {} calls failed",
                m.lost, m.failed
            ));
        }
        if let Some(h) = self.hang.as_ref().filter(|h| h.lost > 0) {
            failures.push(format!("hang: {} deliveries lost", h.lost));
        }
        if let Some(o) = &self.outage {
            if o.lost > 0 {
                failures.push(format!("outage: {} deliveries lost", o.lost));
            }
            if o.duplicates > 0 {
                failures.push(format!("outage: {} deliveries duplicated", o.duplicates));
            }
        }
        if let Some(f) = &self.fanout {
            for (name, side) in [
                ("ordered", &f.ordered),
                ("unrelated", &f.unrelated),
                ("filtered", &f.filtered),
                ("unfiltered", &f.unfiltered),
            ] {
                if side.lost > 0 || side.duplicates > 0 {
                    failures.push(format!(
                        "{name}: {} deliveries lost, {} duplicated",
                        side.lost, side.duplicates
                    ));
                }
            }
        }
        for c in &self.search.cases {
            if c.errors > 0 {
                failures.push(format!(
                    "find {:?} c={}: {} failed requests",
                    c.query, c.concurrency, c.errors
                ));
            }
        }
        failures
    }

    fn targets(&self) -> Vec<Target> {
        let mut targets = Vec::new();
        // The goals of round two (new features on: filters configured, ordering on).
        for t in &self.throughput {
            let goal = if t.subscriptions == 1 {
                2_800.0
            } else {
                7_500.0
            };
            targets.push(Target {
                what: format!("deliveries/s, S = {}", t.subscriptions),
                goal: format!("≥ {goal:.0}"),
                measured: format!("{:.0}", t.deliveries_per_s.median()),
                met: t.deliveries_per_s.median() >= goal,
            });
        }
        // Latency goals hold in every run: the worst run is what is compared.
        let worst = |r: &Repeated| r.spread().1;
        for l in &self.latency {
            let mut goal = |what: String, limit: f64, r: &Repeated| {
                targets.push(Target {
                    what,
                    goal: format!("≤ {limit} ms in every run"),
                    measured: format!("{:.2} ms (worst run {:.2})", r.median(), worst(r)),
                    met: worst(r) <= limit,
                });
            };
            if l.subscriptions == 1 {
                goal("delivery latency p50, S = 1".into(), 1.5, &l.p50);
                goal("delivery latency p99, S = 1".into(), 3.0, &l.p99);
            } else {
                goal(
                    format!("delivery latency p99, S = {}", l.subscriptions),
                    6.0,
                    &l.p99,
                );
            }
            if l.subscriptions == 1
                && let Some(c) = CpuPerRequest::median(&l.cpu)
            {
                let per_event = (c.server + c.database) / 1000.0;
                targets.push(Target {
                    what: "server + database CPU per event at 200 events/s, S = 1".into(),
                    goal: "≤ 1.0 ms".into(),
                    measured: format!("{per_event:.2} ms"),
                    met: per_event <= 1.0,
                });
            }
        }
        for c in self
            .search
            .cases
            .iter()
            .filter(|c| c.chars >= 3 && c.concurrency == 8)
        {
            targets.push(Target {
                what: format!("find {:?} p99, c = 8", c.query),
                goal: "≤ 10 ms".into(),
                measured: format!("{:.2} ms", c.service_p99.median()),
                met: c.service_p99.median() <= 10.0,
            });
            targets.push(Target {
                what: format!("find {:?} service / direct SQL, c = 8", c.query),
                goal: "≥ 0.80".into(),
                measured: format!("{:.2}", c.ratio()),
                met: c.ratio() >= 0.8,
            });
        }
        if let Some(r) = &self.replay {
            let n = r.events;
            targets.extend([
                Target {
                    what: format!("replay of {n} events: queued in"),
                    goal: "≤ 5 s".into(),
                    measured: format!("{:.2} s", r.queued_in_s.median()),
                    met: r.queued_in_s.median() <= 5.0,
                },
                Target {
                    what: format!("replay of {n} events: deliveries/s"),
                    goal: "≥ 2000".into(),
                    measured: format!("{:.0}", r.delivered_per_s.median()),
                    met: r.delivered_per_s.median() >= 2_000.0,
                },
                Target {
                    what: "live subscription p99 during the replay".into(),
                    goal: "≤ 10 ms".into(),
                    measured: format!("{:.2} ms", r.live_p99.median()),
                    met: r.live_p99.median() <= 10.0,
                },
                Target {
                    what: format!("feed read of {n} events, pages of 1000"),
                    goal: "≥ 20000 events/s".into(),
                    measured: format!("{:.0} events/s", r.feed_per_s.median()),
                    met: r.feed_per_s.median() >= 20_000.0,
                },
            ]);
        }
        if let Some(x) = &self.scaleout {
            for (processes, ratio) in [("two", x.ratio()), ("four", x.ratio_four())] {
                targets.push(Target {
                    what: format!(
                        "deliveries/s, {processes} processes / one, S = {}",
                        scaleout::SUBSCRIPTIONS
                    ),
                    goal: "≥ 0.95".into(),
                    measured: format!("{ratio:.2}"),
                    met: ratio >= 0.95,
                });
            }
        }
        if let Some(o) = &self.outage {
            targets.extend([
                Target {
                    what: format!(
                        "outage: healthy subscriptions' p99 while one answers 503 for {} s",
                        o.outage_seconds
                    ),
                    goal: "≤ 10 ms".into(),
                    measured: format!("{:.2} ms", o.healthy_p99.median()),
                    met: o.healthy_p99.median() <= 10.0,
                },
                Target {
                    what: format!(
                        "outage: backlog ({:.0}) delivered after the recovery in",
                        o.backlog.median()
                    ),
                    goal: "≤ 15 s".into(),
                    measured: format!("{:.1} s", o.drained_in_s.median()),
                    met: o.drained_in_s.median() <= 15.0,
                },
            ]);
        }
        if let Some(h) = &self.hang {
            targets.push(Target {
                what: format!(
                    "hang: a healthy tenant's p99 at {} events/s while {} webhooks of another \
                     hang",
                    h.rate,
                    hang::HANGING
                ),
                goal: "≤ 10 ms".into(),
                measured: format!("{:.2} ms", h.p99.median()),
                met: h.p99.median() <= 10.0,
            });
        }
        if let Some(f) = &self.fanout {
            targets.extend([
                Target {
                    what: format!(
                        "deliveries/s, start/stop pairs on {} entities / unrelated entities",
                        f.entities
                    ),
                    goal: "≥ 0.90".into(),
                    measured: format!("{:.2}", f.ordering_ratio()),
                    met: f.ordering_ratio() >= 0.9,
                },
                Target {
                    what: format!(
                        "events/s, one match among {} filtered subscriptions / one unfiltered",
                        fanout::FILTERED
                    ),
                    goal: "≥ 0.90".into(),
                    measured: format!("{:.2}", f.filter_ratio()),
                    met: f.filter_ratio() >= 0.9,
                },
            ]);
        }
        if let Some(m) = &self.mcp {
            targets.push(Target {
                what: format!(
                    "MCP `start_timer` to its webhook delivery, end to end, at {} calls/s",
                    m.rate
                ),
                goal: "p99 ≤ 10 ms in every run".into(),
                measured: format!(
                    "{:.2} ms (worst run {:.2})",
                    m.e2e_p99.median(),
                    worst(&m.e2e_p99)
                ),
                met: worst(&m.e2e_p99) <= 10.0,
            });
        }
        if let Some(r) = &self.reports {
            targets.extend([
                Target {
                    what: format!(
                        "reports: a month's summary by project and day ({} entries of {})",
                        r.month_entries, r.entries
                    ),
                    goal: "p99 ≤ 50 ms".into(),
                    measured: format!("p99 {:.1} ms", r.month.percentile(99.0)),
                    met: r.month.percentile(99.0) <= 50.0,
                },
                Target {
                    what: format!("reports: a year's summary ({} entries)", r.year_entries),
                    goal: "≤ 300 ms".into(),
                    measured: format!("{:.0} ms", r.year.median()),
                    met: r.year.median() <= 300.0,
                },
                Target {
                    what: format!("reports: a year's detailed CSV ({} rows)", r.csv_rows),
                    goal: "≥ 100,000 rows/s".into(),
                    measured: format!("{:.0} rows/s", r.csv_rows_per_second.median()),
                    met: r.csv_rows_per_second.median() >= 100_000.0,
                },
                Target {
                    what: "reports: the server's RSS growth while the CSV streams".into(),
                    goal: "< 50 MB".into(),
                    measured: format!("{:.1} MB", r.csv_rss_growth_mb.median()),
                    met: r.csv_rss_growth_mb.median() < 50.0,
                },
                Target {
                    what: format!(
                        "rates: a rate reaching {} entries, dry run and change",
                        r.rate_reach
                    ),
                    goal: "≤ 2 s each".into(),
                    measured: format!(
                        "{:.2} s and {:.2} s",
                        r.dry_run.median() / 1_000.0,
                        r.change.median() / 1_000.0
                    ),
                    met: r.dry_run.median() <= 2_000.0 && r.change.median() <= 2_000.0,
                },
                Target {
                    what: format!(
                        "invoices: an invoice of {} entries by project and task, preview and create",
                        r.invoice_entries
                    ),
                    goal: "≤ 1 s each".into(),
                    measured: format!(
                        "{:.2} s and {:.2} s",
                        r.preview.median() / 1_000.0,
                        r.create.median() / 1_000.0
                    ),
                    met: r.preview.median() <= 1_000.0 && r.create.median() <= 1_000.0,
                },
                Target {
                    what: "invoices: its PDF".into(),
                    goal: "≤ 500 ms".into(),
                    measured: format!("{:.0} ms", r.pdf.median()),
                    met: r.pdf.median() <= 500.0,
                },
                Target {
                    what: "invoices: the server's RSS growth while 8 PDFs render at once".into(),
                    goal: "< 30 MB".into(),
                    measured: format!("{:.1} MB", r.pdf_rss_growth_mb.median()),
                    met: r.pdf_rss_growth_mb.median() < 30.0,
                },
            ]);
        }
        targets.push(Target {
            what: "RSS idle".into(),
            goal: "≤ 50 MB".into(),
            measured: format!("{:.1} MB", self.idle_rss.rss_mb()),
            met: self.idle_rss.rss_mb() <= 50.0,
        });
        targets.push(Target {
            what: "peak RSS, workload 1".into(),
            goal: "≤ 200 MB".into(),
            measured: format!("{:.1} MB", self.load_rss.peak_mb()),
            met: self.load_rss.peak_mb() <= 200.0,
        });
        targets
    }

    /// Writes the Markdown report at `path` and the plot beside it, keeping the hand-kept section
    /// that starts at [`KEPT_SECTION`] in the file it replaces.
    pub fn write(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir)?;
        }
        let svg_name = "benchmarks-latency.svg";
        let svg_path = path.with_file_name(svg_name);
        std::fs::write(&svg_path, self.svg())?;
        let old = std::fs::read_to_string(path).ok();
        std::fs::write(
            path,
            keeping_section(self.markdown(svg_name), old.as_deref()),
        )?;
        Ok(())
    }

    fn markdown(&self, svg_name: &str) -> String {
        let mut md = String::new();
        let date = self
            .started
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        let s = self.sizes;
        let _ = writeln!(md, "# Benchmarks\n");
        if self.smoke {
            let _ = writeln!(
                md,
                "> **Smoke run** (tiny sizes, one repetition): proves the tool works; the figures \
                 mean nothing.\n"
            );
        }
        let _ = writeln!(
            md,
            "Written by `timetrack-bench` (`just bench`) on {date}.\n\n\
             - Machine: {}.\n\
             - Everything on loopback in one run: the release `timetrack serve` (default settings, \
             rate limits lifted, metrics off), its PostgreSQL, and the tool itself with an HTTPS \
             receiver (its own CA; it records every request) and the load generators. They share \
             the machine's cores, as they would the reference's.\n\
             - Each workload is repeated {} time(s); figures are medians, with the spread \
             (min–max) in brackets.\n\
             - Rerun: `just bench` (or `cargo build --release -p timetrack-api -p timetrack-bench \
             && target/release/timetrack-bench`). `DATABASE_URL` set: a `timetrack_bench` \
             database on that server; unset: a private durable cluster under \
             `target/timetrack-bench/`. The search dataset is seeded once and kept. Each run \
             starts from the same event history: {} delivered events of the past day, each with \
             its delivery and attempt (an installation that has been running, not a new one; \
             see docs/reliability.md on a new installation's first minute).\n",
            self.environment,
            s.runs,
            crate::setup::HISTORY_EVENTS
        );

        let _ = writeln!(md, "## Targets\n");
        let _ = writeln!(md, "| target | goal | measured | met |\n|---|---|---|---|");
        for t in self.targets() {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} |",
                t.what,
                t.goal,
                t.measured,
                if t.met { "yes" } else { "**no**" }
            );
        }

        let l = &self.limits;
        let _ = writeln!(
            md,
            "\n## Machine limits (same run)\n\n\
             | measure | per second |\n|---|---|\n\
             | HTTPS POSTs to the receiver, kept-alive, {HTTPS_CONCURRENCY} at a time (the \
             service's sender, no queue) | {} |\n\
             | same, {HTTPS_WIDE_CONCURRENCY} at a time | {} |\n\
             | one-row INSERT commits, {COMMIT_CONNECTIONS} connections | {} |\n\
             | one-row INSERT commits, 1 connection | {} |\n",
            l.https_posts.show(0),
            l.https_posts_wide.show(0),
            l.commits.show(0),
            l.commits_serial.show(0)
        );

        let _ = writeln!(
            md,
            "## 1. Delivery throughput\n\n\
             {} events created by `POST /api/clients` from {} concurrent clients, as fast as they \
             are accepted; every event goes to S subscriptions of one workspace, which also has a \
             subscription filtered on another client (every event is checked against it, and \
             none matches; ordering is always on). Deliveries/s run \
             from the first request to the last arrival; each delivery is durable in PostgreSQL \
             (claimed, sent, recorded). \"While creating\" counts the deliveries that arrived \
             before the last event was accepted, per second of creation: delivery shares the \
             machine's cores with the burst, and catches up once it ends.\n",
            s.burst_events, s.burst_clients
        );
        let _ = writeln!(
            md,
            "| S | events accepted/s | deliveries/s | deliveries/s while creating | of HTTPS limit | \
             lost | duplicates |\n|---|---|---|---|---|---|---|"
        );
        for t in &self.throughput {
            let limit = if t.subscriptions == 1 {
                l.https_posts.median()
            } else {
                l.https_posts_wide.median()
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {:.0} % | {} | {} |",
                t.subscriptions,
                t.accepted_per_s.show(0),
                t.deliveries_per_s.show(0),
                t.during_creation_per_s.show(0),
                100.0 * t.deliveries_per_s.median() / limit.max(1e-9),
                t.lost,
                t.duplicates
            );
        }
        let _ = writeln!(
            md,
            "\nEvents accepted/s as a fraction of the {COMMIT_CONNECTIONS}-connection commit \
             rate: {}.\n",
            self.throughput
                .iter()
                .map(|t| format!(
                    "S = {}: {:.0} %",
                    t.subscriptions,
                    100.0 * t.accepted_per_s.median() / l.commits.median().max(1e-9)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(
            md,
            "{}",
            cost_table(
                "Where each event's cost goes in this workload",
                self.throughput.iter().map(|t| (
                    t.subscriptions,
                    t.cpu.as_slice(),
                    t.db.as_slice()
                )),
            )
        );

        let _ = writeln!(
            md,
            "## 2. Delivery latency\n\n\
             {} events/s for {} s, to S subscriptions beside a filtered one, as in workload 1; \
             latency from the API's response to the event's arrival at the receiver (a delivery that beats the response counts as 0). CPU per event: the server's \
             and the database's over the run, from the first request until every delivery \
             arrived, divided by the events; medians of the runs (the split, and the database's \
             transactions and statements per event, in the table below).\n\n\
             | S | p50 | p95 | p99 | lost | CPU per event: server + database = total |\n\
             |---|---|---|---|---|---|",
            s.latency_rate, s.latency_seconds
        );
        for l in &self.latency {
            let cpu = CpuPerRequest::median(&l.cpu).map_or_else(
                || "not measured".to_owned(),
                |c| {
                    format!(
                        "{:.2} + {:.2} = {:.2} ms",
                        c.server / 1000.0,
                        c.database / 1000.0,
                        (c.server + c.database) / 1000.0
                    )
                },
            );
            let _ = writeln!(
                md,
                "| {} | {} ms | {} ms | {} ms | {} | {cpu} |",
                l.subscriptions,
                l.p50.show(2),
                l.p95.show(2),
                l.p99.show(2),
                l.lost
            );
        }
        let _ = writeln!(
            md,
            "{}",
            cost_table(
                "\nWhere each event's cost goes in this workload",
                self.latency
                    .iter()
                    .map(|l| (l.subscriptions, l.cpu.as_slice(), l.db.as_slice())),
            )
        );
        let _ = writeln!(md, "![Delivery latency by percentile]({svg_name})\n");

        let _ = writeln!(
            md,
            "## 3. Find client\n\n\
             Dataset: {}. `POST /api/integrations/automation/triggers/clients/find` on the big \
             workspace, rate limit lifted, sent as `wrk` sends it (one kept-alive HTTP/1.1 \
             connection per concurrent loop, the body serialized once); \"direct\" is the same \
             repository query through a pool of the same size in the tool's process. Each \
             measurement lasts {:.1} s.\n",
            self.search.dataset,
            s.search_window.as_secs_f64()
        );
        let _ = writeln!(
            md,
            "| query | chars | hit | rows | c | req/s | p50 ms | p99 ms | direct req/s | direct p99 ms | ratio |\n\
             |---|---|---|---|---|---|---|---|---|---|---|"
        );
        for c in &self.search.cases {
            let _ = writeln!(
                md,
                "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} |",
                c.query,
                c.chars,
                if c.hit { "yes" } else { "no" },
                c.rows,
                c.concurrency,
                c.service_rps.show(0),
                c.service_p50.show(2),
                c.service_p99.show(2),
                c.direct_rps.show(0),
                c.direct_p99.show(2),
                c.ratio()
            );
        }
        let _ = writeln!(
            md,
            "\nOne- and two-character queries cannot use the trigram index (a trigram needs three \
             characters): they take the newest matching ids from the newest-first index alone (it \
             carries the name), stopping at 100, then fetch those rows by key; a miss reads every \
             index entry of the workspace. The target applies to 3+ characters.\n"
        );
        let cpu_rows: Vec<_> = self
            .search
            .cases
            .iter()
            .filter(|c| c.chars >= 3)
            .filter_map(|c| {
                let service = CpuPerRequest::median(&c.service_cpu)?;
                let direct = CpuPerRequest::median(&c.direct_cpu)?;
                Some((c, service, direct))
            })
            .collect();
        if !cpu_rows.is_empty() {
            let _ = writeln!(
                md,
                "CPU time per request, in µs (medians; from `/proc`: the tool's and the server's \
                 own time, and the rest of the machine's busy time, which is the database's and \
                 little else on an otherwise idle machine). Where the two shared cores are \
                 saturated (c = 8 and 32), a throughput is about 2 s of CPU per second divided \
                 by the total, so the ratio is about the direct total over the service's; at \
                 c = 1 the round trips' waits set the rate.\n\n\
                 | query | c | service: tool | server | database and rest | total | direct: tool | database and rest | total |\n\
                 |---|---|---|---|---|---|---|---|---|"
            );
            for (c, service, direct) in cpu_rows {
                let _ = writeln!(
                    md,
                    "| `{}` | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} |",
                    c.query,
                    c.concurrency,
                    service.tool,
                    service.server,
                    service.database + service.rest,
                    service.total(),
                    direct.tool,
                    direct.database + direct.rest + direct.server,
                    direct.total()
                );
            }
            let _ = writeln!(md);
        }
        for (query, plan) in &self.search.plans {
            let _ = writeln!(
                md,
                "`EXPLAIN (ANALYZE, BUFFERS)` for `{query}` on the big workspace:\n\n```\n{}```\n",
                plan
            );
        }

        let _ = writeln!(
            md,
            "## 5. Memory\n\n\
             | server state | resident memory |\n|---|---|\n\
             | idle, after start-up | {:.1} MB |\n\
             | peak during workload 1 | {:.1} MB |\n",
            self.idle_rss.rss_mb(),
            self.load_rss.peak_mb()
        );
        if let Some(r) = &self.replay {
            let _ = writeln!(
                md,
                "## 6. Replay and the feed\n\n\
                 A workspace with {} CLIENT_CREATED events of the last hour gets a new webhook, \
                 which replays them all (`only_failed: false`, a call per 10,000 events) while \
                 another workspace's subscription takes {} new events/s; \"queued in\" runs from \
                 the first replay call to the answer of the last, deliveries/s from the first \
                 call to the last replayed arrival. Then the {} events are read through the \
                 feed in pages of 1,000.\n\n\
                 | queued in | replayed deliveries/s | live p50 | live p99 | feed events/s | lost |\n\
                 |---|---|---|---|---|---|\n\
                 | {} s | {} | {} ms | {} ms | {} | {} |\n",
                r.events,
                self.sizes.latency_rate,
                r.events,
                r.queued_in_s.show(2),
                r.delivered_per_s.show(0),
                r.live_p50.show(2),
                r.live_p99.show(2),
                r.feed_per_s.show(0),
                r.lost
            );
        }
        if let Some(x) = &self.scaleout {
            let _ = writeln!(
                md,
                "## 7. Scale-out\n\n\
                 Workload 1's burst at S = {}, in each repetition through one `serve` process, \
                 then through two and four on the same database (the publishers spread over \
                 them), then through two of which one is killed (SIGKILL) once half the events \
                 are taken, its publishers going on through the other. The processes share this \
                 machine's {} cores with PostgreSQL and the tool, so this measures what more \
                 processes cost or gain on one machine, not more machines' worth. Duplicates at \
                 a kill are bounded by the deliveries leased (in flight, by either process) at \
                 the moment of the kill. PostgreSQL's CPU is its processes' over the burst, per \
                 delivery; lock waits are sampled from `pg_stat_activity` every 10 ms (each \
                 backend found waiting counts 10 ms), per delivery: on the claim lock (advisory, \
                 ADR 0019) and on any lock.\n\n\
                 | processes | deliveries/s | PostgreSQL CPU/delivery | claim lock wait/delivery | any lock wait/delivery | lost | duplicates |\n\
                 |---|---|---|---|---|---|---|",
                scaleout::SUBSCRIPTIONS,
                std::thread::available_parallelism().map_or(0, usize::from),
            );
            let rows = [
                (1, &x.one, None, x.one_lost, x.one_duplicates),
                (2, &x.two, Some(x.ratio()), x.two_lost, x.two_duplicates),
                (
                    4,
                    &x.four,
                    Some(x.ratio_four()),
                    x.four_lost,
                    x.four_duplicates,
                ),
            ];
            for (i, (processes, rate, ratio, lost, duplicates)) in rows.into_iter().enumerate() {
                let of_one =
                    ratio.map_or(String::new(), |r| format!(" ({:.0} % of one)", 100.0 * r));
                let _ = writeln!(
                    md,
                    "| {processes} | {}{of_one} | {} µs | {} µs | {} µs | {lost} | {duplicates} |",
                    rate.show(0),
                    x.database_us[i].show(0),
                    x.claim_wait_us[i].show(1),
                    x.lock_wait_us[i].show(1),
                );
            }
            let _ = writeln!(
                md,
                "| 2, one killed halfway | | | | | {} | {} (≤ {} leased at the kills) |\n",
                x.killed_lost, x.killed_duplicates, x.leased_at_kill
            );
        }
        if let Some(o) = &self.outage {
            let _ = writeln!(
                md,
                "## 8. Outage and recovery\n\n\
                 A server of its own with the retry schedule `{}`; one \
                 workspace with {} subscriptions takes {} events/s. One of them answers 503 (no \
                 `Retry-After`) for the first {} s, then 200; events keep coming for {} s more. \
                 The healthy subscriptions' latency runs from each event's answer to its \
                 arrival, over the whole run, and split at the recovery by when the event was \
                 answered; the backlog is what the failing one had not received at the recovery, \
                 and \"delivered in\" runs from the recovery to the arrival of the last of it. \
                 \"Failed for good\" counts the failing subscription's deliveries whose seven \
                 attempts all fell inside the outage: the schedule adds up to 61 s and each wait \
                 has ±20 % jitter (decisions.md), so the first second's events can spend it \
                 before the receiver answers again; they are in the delivery log as failed, and \
                 a replay sends them. Lost counts what was neither received nor failed.\n\n\
                 | healthy p50 | healthy p99 | p99, during the outage | p99, after it | backlog | delivered in | 503s answered | failed for good | lost | duplicates |\n\
                 |---|---|---|---|---|---|---|---|---|---|\n\
                 | {} ms | {} ms | {} ms | {} ms | {} | {} s | {} | {} | {} | {} |\n",
                outage::SCHEDULE,
                outage::HEALTHY + 1,
                o.rate,
                o.outage_seconds,
                self.sizes.recovery_seconds,
                o.healthy_p50.show(2),
                o.healthy_p99.show(2),
                o.healthy_p99_outage.show(2),
                o.healthy_p99_recovery.show(2),
                o.backlog.show(0),
                o.drained_in_s.show(1),
                o.refused_attempts.show(0),
                o.gave_up,
                o.lost,
                o.duplicates
            );
        }
        if let Some(f) = &self.fanout {
            let side = |s: &fanout::Side| {
                format!(
                    "{} | {} | {} | {} | {}",
                    s.events_per_s.show(0),
                    s.deliveries_per_s.show(0),
                    s.delivered_events_per_s.show(0),
                    s.lost,
                    s.duplicates
                )
            };
            let _ = writeln!(
                md,
                "## 9. Ordering and filters\n\n\
                 Bursts from {} users of one workspace at once, each sending its share one \
                 request after another; rates run from the first request to the last arrival. \
                 **Ordering**: a timer started then stopped on each of {} time entries (the \
                 stop's delivery waits until the start's is final), against {} manual entries \
                 (each its own entity), both to {} subscriptions. **Filter fan-out**: {} manual \
                 entries on one project, to {} subscriptions each filtered on its own project \
                 (one matches), against one unfiltered subscription.\n\n\
                 | burst | events accepted/s | deliveries/s | events delivered/s | lost | duplicates |\n\
                 |---|---|---|---|---|---|\n\
                 | start/stop pairs | {} |\n\
                 | unrelated entities | {} |\n\
                 | one of {} filtered | {} |\n\
                 | one unfiltered | {} |\n\n\
                 Pairs / unrelated deliveries/s: {:.2}. Filtered / unfiltered events delivered/s: \
                 {:.2}.\n",
                fanout::PUBLISHERS,
                f.entities,
                2 * f.entities,
                fanout::ORDERED_SUBSCRIPTIONS,
                f.events,
                fanout::FILTERED,
                side(&f.ordered),
                side(&f.unrelated),
                fanout::FILTERED,
                side(&f.filtered),
                side(&f.unfiltered),
                f.ordering_ratio(),
                f.filter_ratio()
            );
        }
        if let Some(h) = &self.hang {
            let _ = writeln!(
                md,
                "## 10. A tenant whose endpoints hang\n\n\
                 A server of its own with every default (64 slots, 48 of them a workspace's \
                 share, a 15 s time-out). One workspace has {} webhooks whose receiver reads \
                 each request and never answers, and {} events for each (more than the \
                 process's slots); another workspace has one healthy webhook and takes {} \
                 events/s for {} s. Its latency runs from each event's answer to its arrival; \
                 \"hanging\" counts the requests the first workspace's endpoints held when the \
                 measurement began (each run's hanging workspace is a new one, and the previous \
                 run's attempts still hang for the rest of their time-out).\n\n\
                 | healthy p50 | healthy p99 | hanging | lost |\n\
                 |---|---|---|---|\n\
                 | {} ms | {} ms | {} | {} |\n",
                hang::HANGING,
                hang::HANGING_EVENTS,
                h.rate,
                self.sizes.latency_seconds,
                h.p50.show(2),
                h.p99.show(2),
                h.hung.show(0),
                h.lost
            );
        }
        if let Some(r) = &self.reports {
            let ms = |v: &Repeated| v.show(0);
            let _ = writeln!(
                md,
                "## 11. Reports and rates\n\n\
                 A workspace of 50 members in Europe/Berlin, 10 clients (two billing in USD), 40 \
                 projects, {} stopped entries evenly over 2025 and 2026, a third tagged, priced \
                 by workspace rates (the tool checks the seed's prices are the ones the service \
                 would store). Through the API with the owner's key, one request at a time: a \
                 month's summary by project and day ({} entries; {} requests after 3 to warm up), \
                 a year's ({} entries; the longest range a report takes), and the year's detailed \
                 CSV read whole while the server's resident memory is sampled every 50 ms. The \
                 owner's summaries are summed from the workspace's day totals ({} buckets in the \
                 month, {} in the year). On a connection of the tool's: the summary's statement \
                 itself (prepared, as the service runs it), the same summary summed from the \
                 entries (as for a member, a tag or another zone; the tool checks both answer \
                 the same rows), and the machine's own limit for the entries, the bare scan of \
                 the period's (a count and a sum of durations, nothing grouped).\n\n\
                 | | through the API | the statement directly | from the entries | bare scan of \
                 the entries |\n|---|---|---|---|---|\n\
                 | month summary, p50 / p99 | {:.1} / {:.1} ms | {} ms | {} ms | {} ms |\n\
                 | year summary | {} ms | {} ms | {} ms | {} ms |\n\n\
                 | year detailed CSV | rows | rows/s | server RSS growth |\n|---|---|---|---|\n\
                 | | {} | {} | {} MB |\n\n\
                 A billable rate for one client, in force from before the first entry, reaches \
                 {} entries and re-prices {} (the billable ones): `dry_run` first, then the \
                 change, then its removal (which re-prices them back). Beside them, the \
                 machine's cost of writing those rows: a plain `UPDATE` of one column of the \
                 same rows, rolled back. A `VACUUM` of the entries follows each run (its dead \
                 row versions are on every page of the client's entries; between an admin's \
                 changes, reads of the entries prune them, and here nothing else reads them).\n\n\
                 | dry run | change | removal | plain UPDATE of the rows |\n|---|---|---|---|\n\
                 | {} ms | {} ms | {} ms | {} ms |\n",
                r.entries,
                r.month_entries,
                self.sizes.report_month_requests,
                r.year_entries,
                r.month_buckets,
                r.year_buckets,
                r.month.percentile(50.0),
                r.month.percentile(99.0),
                r.month_direct.show(1),
                r.month_from_entries.show(1),
                r.month_scan.show(1),
                ms(&r.year),
                ms(&r.year_direct),
                ms(&r.year_from_entries),
                ms(&r.year_scan),
                r.csv_rows,
                r.csv_rows_per_second.show(0),
                r.csv_rss_growth_mb.show(1),
                r.rate_reach,
                r.rate_affected,
                ms(&r.dry_run),
                ms(&r.change),
                ms(&r.removal),
                ms(&r.plain_update),
            );
            let _ = writeln!(
                md,
                "Invoices on the same data: one client's billable entries from 2026-01-01 to {} \
                 ({} entries; 10,000 at full size), grouped by project and task into {} lines, \
                 with 19 % tax. The part starts with a `VACUUM ANALYZE` of the entries (the \
                 rate part's dead row versions cleaned up, as autovacuum does within a minute or \
                 so). Each run previews the invoice, creates it (the entries locked and \
                 linked in one transaction) and deletes the draft again (which releases the \
                 entries and prices them anew). The first draft's PDF is fetched one at a time, \
                 then eight at once while the server's resident memory is sampled every 20 ms.\n\n\
                 | preview | create | draft deleted | PDF ({:.0} KB) | 8 PDFs at once | RSS growth \
                 (8 at once) |\n|---|---|---|---|---|---|\n\
                 | {} ms | {} ms | {} ms | {} ms | {} ms | {} MB |\n",
                r.invoice_to,
                r.invoice_entries,
                r.invoice_lines,
                r.pdf_kb,
                ms(&r.preview),
                ms(&r.create),
                ms(&r.draft_delete),
                ms(&r.pdf),
                ms(&r.pdf_eight),
                r.pdf_rss_growth_mb.show(1),
            );
            for (name, plan) in &r.plans {
                let _ = writeln!(
                    md,
                    "The {name}'s summary statement, `EXPLAIN (ANALYZE, BUFFERS)`:\n\n```\n{}```\n",
                    plan
                );
            }
        }
        if let Some(m) = &self.mcp {
            let _ = writeln!(
                md,
                "## 12. The MCP server\n\n\
                 An assistant's `start_timer` through `POST /mcp` (Streamable HTTP, JSON answers, \
                 the server stateless), {} calls a second for {} s ({} calls) from ten members of a \
                 new workspace in turn, with a webhook subscribed to `TIMER_STARTED`; each start \
                 also stops its member's timer before it. Measured from sending the call until the receiver has the \
                 timer's delivery.\n\n\
                 | p50 | p95 | p99 | the call's own answer, p99 | lost | failed calls |\n\
                 |---|---|---|---|---|---|\n\
                 | {} ms | {} ms | {} ms | {} ms | {} | {} |\n\n\
                 What the protocol layer costs: the same operation through its REST endpoint and \
                 through the MCP tool (which calls the same handler), {} calls one after another \
                 through each door per repetition, on kept-alive connections. The answer time is \
                 the median per call; the server's CPU is its user and system time per call over \
                 the block.\n\n\
                 | operation | REST answer | MCP answer | MCP / REST | REST server CPU | MCP server \
                 CPU | MCP / REST |\n|---|---|---|---|---|---|---|",
                m.rate,
                self.sizes.mcp_seconds,
                m.calls,
                m.e2e_p50.show(2),
                m.e2e_p95.show(2),
                m.e2e_p99.show(2),
                m.answer_p99.show(2),
                m.lost,
                m.failed,
                self.sizes.mcp_overhead_calls,
            );
            for o in &m.overhead {
                let ratio = |a: &Repeated, b: &Repeated| a.median() / b.median().max(1e-9);
                let _ = writeln!(
                    md,
                    "| {} | {} µs | {} µs | {:.2} | {} µs | {} µs | {:.2} |",
                    o.operation,
                    o.rest_us.show(0),
                    o.mcp_us.show(0),
                    ratio(&o.mcp_us, &o.rest_us),
                    o.rest_cpu_us.show(0),
                    o.mcp_cpu_us.show(0),
                    ratio(&o.mcp_cpu_us, &o.rest_cpu_us),
                );
            }
            let _ = writeln!(md);
        }
        if let Some(r) = &self.replica {
            let _ = writeln!(
                md,
                "## 13. Reads from a replica\n\n\
                 A streaming standby of the bench's cluster (`pg_basebackup -R`, the datasets of \
                 sections 3 and 11 included) beside it; two servers on the same primary, one \
                 without `--database-replica-url` and one with it, each driven in turn for {} ms \
                 per load and repetition: the client search of section 3 for `lo` (8 at once) and \
                 the month's summary of section 11 (2 at once, the owner's key). CPU is each \
                 side's user and system time per request over the window (the primary's and the \
                 replica's PostgreSQL processes, the server); requests a second are what both \
                 clusters, the server and the tool make of 2 shared CPUs.\n",
                self.sizes.search_window.as_millis()
            );
            match &r.skipped {
                Some(why) => {
                    let _ = writeln!(md, "Not measured: {why}.\n");
                }
                None => {
                    let _ = writeln!(
                        md,
                        "| load | replica | requests/s | primary CPU/request | replica \
                         CPU/request | server CPU/request |\n|---|---|---|---|---|---|"
                    );
                    for load in &r.loads {
                        for (label, side) in [("without", &load.without), ("with", &load.with)] {
                            let _ = writeln!(
                                md,
                                "| {} | {label} | {} | {} µs | {} µs | {} µs |",
                                load.name,
                                side.rps.show(0),
                                side.primary_us.show(0),
                                side.replica_us.show(0),
                                side.server_us.show(0),
                            );
                        }
                    }
                    let _ = writeln!(md);
                }
            }
        }
        if let Some(p) = &self.pooler {
            let _ = writeln!(
                md,
                "## 14. Behind PgBouncer in transaction mode\n\n\
                 PgBouncer (Debian's) in front of the bench's cluster, `pool_mode = transaction`, \
                 {} server connections; two servers on the same database, one connected \
                 directly and one through PgBouncer with `--database-pooler transaction` \
                 (statements unnamed, parsed and planned on every run), each driven in turn for \
                 {} ms per load and repetition: a client created (8 at once), the client search \
                 of section 3 for `lo` (8 at once) and the month's summary of section 11 (2 at \
                 once). CPU is each process's user and system time per request over the window; \
                 requests a second are what PostgreSQL, PgBouncer, the server and the tool make \
                 of 2 shared CPUs.\n",
                crate::pooler::POOL_SIZE,
                self.sizes.search_window.as_millis()
            );
            let _ = writeln!(
                md,
                "| load | connected | requests/s | PostgreSQL CPU/request | server CPU/request \
                 | PgBouncer CPU/request |\n|---|---|---|---|---|---|"
            );
            for load in &p.loads {
                for (label, side) in [
                    ("directly", &load.direct),
                    ("through PgBouncer", &load.pooled),
                ] {
                    let _ = writeln!(
                        md,
                        "| {} | {label} | {} | {} µs | {} µs | {} |",
                        load.name,
                        side.rps.show(0),
                        side.database_us.show(0),
                        side.server_us.show(0),
                        if side.pooler_us.0.is_empty() {
                            "–".to_owned()
                        } else {
                            format!("{} µs", side.pooler_us.show(0))
                        },
                    );
                }
            }
            let _ = writeln!(md);
        }
        md
    }

    /// Latency by percentile (log scale), one line per subscription count.
    fn svg(&self) -> String {
        const W: f64 = 640.0;
        const H: f64 = 360.0;
        const LEFT: f64 = 60.0;
        const RIGHT: f64 = 20.0;
        const TOP: f64 = 30.0;
        const BOTTOM: f64 = 50.0;
        let colours = ["#1f77b4", "#d62728", "#2ca02c"];
        let max_ms = self
            .latency
            .iter()
            .flat_map(|l| l.samples.0.iter().copied())
            .fold(1.0_f64, f64::max);
        let (lo, hi) = (0.1_f64.log10(), (max_ms * 1.2).log10().max(1.0));
        let y =
            |ms: f64| TOP + (H - TOP - BOTTOM) * (1.0 - ((ms.max(0.1).log10() - lo) / (hi - lo)));
        let x = |p: f64| LEFT + (W - LEFT - RIGHT) * p / 100.0;
        let mut svg = format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">
<rect width="{W}" height="{H}" fill="white"/>
<text x="{}" y="18" text-anchor="middle" font-size="14">Delivery latency at {} events/s (median run)</text>
"#,
            W / 2.0,
            self.sizes.latency_rate
        );
        let mut tick = 0.1;
        while tick <= 10f64.powf(hi) {
            let ty = y(tick);
            let _ = writeln!(
                svg,
                r##"<line x1="{LEFT}" y1="{ty:.1}" x2="{}" y2="{ty:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{tick} ms</text>"##,
                W - RIGHT,
                LEFT - 6.0,
                ty + 4.0
            );
            tick *= 10.0;
        }
        for p in [0.0, 25.0, 50.0, 75.0, 90.0, 99.0, 100.0] {
            let _ = writeln!(
                svg,
                r#"<text x="{:.1}" y="{}" text-anchor="middle">p{p}</text>"#,
                x(p),
                H - BOTTOM + 16.0
            );
        }
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle">percentile</text>"#,
            W / 2.0,
            H - 12.0
        );
        for (i, l) in self.latency.iter().enumerate() {
            let mut sorted = l.samples.0.clone();
            sorted.sort_by(f64::total_cmp);
            if sorted.is_empty() {
                continue;
            }
            let n = sorted.len();
            let step = (n / 400).max(1);
            let points: Vec<String> = (0..n)
                .step_by(step)
                .chain(std::iter::once(n - 1))
                .map(|k| {
                    let p = 100.0 * (k + 1) as f64 / n as f64;
                    format!("{:.1},{:.1}", x(p), y(sorted[k]))
                })
                .collect();
            let colour = colours[i % colours.len()];
            let _ = writeln!(
                svg,
                r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
                points.join(" ")
            );
            let _ = writeln!(
                svg,
                r#"<text x="{}" y="{}" fill="{colour}">S = {} (p50 {:.2} ms, p99 {:.2} ms)</text>"#,
                LEFT + 10.0,
                TOP + 16.0 + 16.0 * i as f64,
                l.subscriptions,
                l.samples.percentile(50.0),
                l.samples.percentile(99.0)
            );
        }
        svg.push_str("</svg>\n");
        svg
    }
}

/// `new`, followed by the hand-kept section of `old` (from [`KEPT_SECTION`] to its end) if it has
/// one: a run replaces the generated part only.
/// A table of each subscription count's CPU per event, part by part, and the database's
/// transactions and statements per event (medians of the runs).
fn cost_table<'a>(
    title: &str,
    rows: impl Iterator<Item = (usize, &'a [CpuPerRequest], &'a [DbPerEvent])>,
) -> String {
    let mut md = format!(
        "{title} (per event, medians; CPU from `/proc`: the server, the database server's \
         processes, the rest of the machine's busy time (the kernel's network work outside any \
         process, and anything else that ran), and the tool (load generator and receiver); the \
         database's write transactions from the transaction ids it handed out, its statements \
         from `pg_stat_statements`, top level only):\n\n\
         | S | server | database | rest | tool | transactions | statements |\n\
         |---|---|---|---|---|---|---|\n"
    );
    for (s, cpu, db) in rows {
        let cpu = CpuPerRequest::median(cpu).map_or_else(
            || "not measured | | | ".to_owned(),
            |c| {
                format!(
                    "{:.2} ms | {} | {:.2} ms | {:.2} ms",
                    c.server / 1000.0,
                    if crate::cpu::database_watched() {
                        format!("{:.2} ms", c.database / 1000.0)
                    } else {
                        "in rest (not on this machine)".to_owned()
                    },
                    c.rest / 1000.0,
                    c.tool / 1000.0
                )
            },
        );
        let db = DbPerEvent::median(db).map_or_else(
            || "not measured | ".to_owned(),
            |d| {
                format!(
                    "{:.2} | {}",
                    d.transactions,
                    d.statements
                        .map_or_else(|| "not loaded".to_owned(), |n| format!("{n:.2}"))
                )
            },
        );
        let _ = writeln!(md, "| {s} | {cpu} | {db} |");
    }
    md
}

fn keeping_section(mut new: String, old: Option<&str>) -> String {
    if let Some(kept) = old.and_then(|old| old.find(KEPT_SECTION).map(|at| &old[at..])) {
        if !new.ends_with('\n') {
            new.push('\n');
        }
        new.push('\n');
        new.push_str(kept);
    }
    new
}

#[cfg(test)]
mod tests {
    use super::{KEPT_SECTION, keeping_section};

    #[test]
    fn a_new_run_replaces_the_generated_part_and_keeps_the_hand_kept_section() {
        let old = format!("# Old run\n\n| 1 |\n\n{KEPT_SECTION}\n\nWhy we chose X: 42 ms.\n");
        let new = keeping_section("# New run\n\n| 2 |\n".to_owned(), Some(&old));
        assert_eq!(
            new,
            format!("# New run\n\n| 2 |\n\n{KEPT_SECTION}\n\nWhy we chose X: 42 ms.\n")
        );
        assert_eq!(keeping_section("# Run\n".to_owned(), None), "# Run\n");
        assert_eq!(
            keeping_section("# Run\n".to_owned(), Some("# Old\n")),
            "# Run\n"
        );
    }
}
