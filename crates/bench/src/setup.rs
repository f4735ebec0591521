//! What the workloads run against: the database, the HTTPS receiver, the server process, and
//! accounts made with the server's own admin commands.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use timetrack_adapters::{
    Durability, LocalPostgres, PgPool, PoolSettings, build_pool, run_migrations,
};
pub use timetrack_testkit::{Account, Memory, ServerProcess as Server};
use timetrack_testkit::{Admin, HttpsReceiver, ServeCommand};

use crate::Options;

/// The bench's database on `DATABASE_URL`'s server.
pub const DATABASE: &str = "timetrack_bench";

/// The database, the receiver and the binary.
pub struct Environment {
    pub database_url: String,
    pub database_label: String,
    pub receiver: HttpsReceiver,
    pub pool: PgPool,
    server_bin: PathBuf,
    local: Option<LocalPostgres>,
}

impl Environment {
    /// Opens (or creates) the bench database, migrates it, and starts the receiver.
    pub async fn start(options: &Options) -> Result<Self> {
        if !options.server_bin.is_file() {
            bail!(
                "{} not found: build it first (`cargo build --release -p timetrack-api`)",
                options.server_bin.display()
            );
        }
        let (database_url, database_label, mut local) = match std::env::var("DATABASE_URL") {
            Ok(url) if !url.is_empty() => {
                let url = ensure_database(&url).await?;
                (url, format!("`{DATABASE}` on DATABASE_URL's server"), None)
            }
            _ => {
                let dir = std::path::absolute(&options.data_dir)?.join("postgres");
                std::fs::create_dir_all(&dir)?;
                let local = tokio::task::spawn_blocking(move || {
                    LocalPostgres::start(&dir, Durability::Durable)
                })
                .await??;
                let url = local.ensure_database(DATABASE).await?;
                (
                    url,
                    "private cluster, durable settings (fsync and synchronous commit on)"
                        .to_owned(),
                    Some(local),
                )
            }
        };
        if let Err(err) = run_migrations(&database_url).await {
            // A bench database kept from a build with other migrations (the dataset is rebuilt
            // when missing): start it afresh rather than stop.
            if !format!("{err:#}").contains("migrations this timetrack does not know") {
                return Err(err.context("migrating the bench database"));
            }
            crate::progress("the bench database was made by other migrations: recreating it");
            timetrack_testkit::recreate_database(&database_url, DATABASE).await?;
            run_migrations(&database_url)
                .await
                .context("migrating the bench database")?;
        }
        if let Some(cluster) = local.as_mut()
            && load_statement_stats(&database_url).await?
        {
            crate::progress("restarting the private cluster with pg_stat_statements loaded");
            cluster.stop();
            let dir = std::path::absolute(&options.data_dir)?.join("postgres");
            *cluster = tokio::task::spawn_blocking(move || {
                LocalPostgres::start(&dir, Durability::Durable)
            })
            .await??;
            load_statement_stats(&database_url).await?;
        }
        watch_database(&database_url).await?;
        clear_earlier_runs(&database_url).await?;
        let pool = build_pool(&database_url, PoolSettings::default())?;
        Ok(Self {
            database_url,
            database_label,
            receiver: HttpsReceiver::start().await,
            pool,
            server_bin: std::path::absolute(&options.server_bin)?,
            local,
        })
    }

    /// Starts `timetrack serve` on a free port: rate limits lifted, the receiver's CA trusted,
    /// private targets allowed (the receiver is on loopback), metrics off.
    pub async fn start_server(&self, options: &Options) -> Result<Server> {
        self.start_server_with(options, &[]).await
    }

    /// [`start_server`](Self::start_server), with these environment variables set as well.
    pub async fn start_server_with(
        &self,
        _options: &Options,
        envs: &[(&str, &str)],
    ) -> Result<Server> {
        let mut command = ServeCommand::new(&self.server_bin, &self.database_url)
            .trusting_receiver(&self.receiver.ca_pem_path())
            .unlimited();
        for (name, value) in envs {
            command = command.env(name, *value);
        }
        command.start().await
    }

    /// The private cluster, when the bench runs on one (no `DATABASE_URL`).
    pub fn local(&self) -> Option<&LocalPostgres> {
        self.local.as_ref()
    }

    /// A new workspace with one user and key, made by the server's admin commands.
    pub async fn account(&self, name: &str) -> Result<Account> {
        let admin = Admin::new(&self.server_bin, &self.database_url);
        let name = name.to_owned();
        tokio::task::spawn_blocking(move || admin.account(&name)).await?
    }

    /// A new key of an existing user of an existing workspace.
    pub async fn key_for(&self, workspace_id: &str, user_id: &str) -> Result<String> {
        let admin = Admin::new(&self.server_bin, &self.database_url);
        let (workspace, user) = (workspace_id.to_owned(), user_id.to_owned());
        tokio::task::spawn_blocking(move || {
            let key = admin.run(&["create-api-key", "--user", &user, "--workspace", &workspace])?;
            timetrack_testkit::field(&key, "key")
        })
        .await?
    }

    /// A user and key in an existing workspace.
    pub async fn account_in(&self, workspace_id: &str) -> Result<Account> {
        let admin = Admin::new(&self.server_bin, &self.database_url);
        let workspace_id = workspace_id.to_owned();
        tokio::task::spawn_blocking(move || admin.member(&workspace_id)).await?
    }

    /// One line on where the figures come from.
    pub fn describe(&self) -> String {
        let cpus = std::thread::available_parallelism().map_or(0, usize::from);
        let model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|m| m.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown CPU".to_owned());
        let memory = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|l| l.starts_with("MemTotal"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|kb| kb.parse::<f64>().ok())
            })
            .map_or_else(String::new, |kb| {
                format!(", {:.0} GiB", kb / 1024.0 / 1024.0)
            });
        format!(
            "{cpus} CPUs ({model}){memory}; PostgreSQL: {}",
            self.database_label
        )
    }

    /// Stops the private cluster, if the bench started one.
    pub fn stop(mut self) {
        if let Some(local) = self.local.as_mut() {
            local.stop();
        }
    }
}

/// Ends what earlier runs left: their subscriptions point at receivers that are gone, so their
/// pending deliveries (a run that was stopped, or one that ended with a backlog) would only
/// compete with this run's. Then replaces the event history (events, deliveries, attempts) with a
/// fixed one and vacuums, so every run starts from the same tables however many runs came before:
/// each run adds about 300,000 deliveries, and a queue table grown over a day of runs made its
/// autovacuum passes, and so the figures, depend on the day's history rather than on this run.
/// The search dataset (clients, workspaces) is kept; the workspaces the delivery workloads made
/// (`Bench burst…`, `Bench steady…`, some 54,000 clients a run) are deleted and the clients table
/// vacuumed, so the search's table and its statistics do not grow with every run and measure
/// the dataset, not the day's runs (docs/benchmarks.md, "Method of the benchmark tool").
///
/// The fixed history is [`HISTORY_EVENTS`] delivered events of the past day, as an installation
/// that has been running has. Emptied tables instead measured a new installation's first minute:
/// the server's connections plan their foreign-key checks on the first requests, when `events`
/// is a page or two and a sequential scan is its cheapest plan; PostgreSQL keeps that plan for
/// the connection until autovacuum next analyzes the table (up to a minute), while the burst grows
/// it by thousands of rows, and each check reads the whole table. See docs/reliability.md ("A
/// new installation's first minute").
async fn clear_earlier_runs(url: &str) -> Result<()> {
    let (client, driver) = connect(url)
        .await
        .context("connecting to the bench database")?;
    client
        .batch_execute(
            "UPDATE webhook_subscriptions SET status = 'DELETED', disabled_reason = NULL, updated_at = now() \
             WHERE status <> 'DELETED'; \
             TRUNCATE delivery_attempts, delivery_leases, deliveries, events",
        )
        .await
        .context("ending earlier runs' subscriptions")?;
    // Their clients, memberships, keys and subscriptions go with them (ON DELETE CASCADE).
    client
        .batch_execute(
            "DELETE FROM workspaces WHERE name LIKE 'Bench burst%' OR name LIKE 'Bench steady%' \
             OR name LIKE 'Bench scale%' OR name LIKE 'Bench replay%' \
             OR name LIKE 'Bench outage%' OR name LIKE 'Bench ordered%' \
             OR name LIKE 'Bench unrelated%' OR name LIKE 'Bench filtered%' \
             OR name LIKE 'Bench unfiltered%'",
        )
        .await
        .context("deleting earlier runs' delivery workspaces")?;
    client
        .batch_execute("VACUUM (ANALYZE) clients")
        .await
        .context("vacuuming clients")?;
    client
        .batch_execute(&history_sql(HISTORY_EVENTS))
        .await
        .context("writing the event history")?;
    vacuum_delivery_tables(&client).await?;
    drop(client);
    let _ = driver.await;
    Ok(())
}

/// Vacuums and analyzes the tables a delivery workload writes.
async fn vacuum_delivery_tables(client: &tokio_postgres::Client) -> Result<()> {
    // VACUUM cannot run in a transaction block: one statement per call.
    for table in [
        "deliveries",
        "delivery_attempts",
        "events",
        "webhook_subscriptions",
    ] {
        client
            .batch_execute(&format!("VACUUM (ANALYZE) {table}"))
            .await
            .with_context(|| format!("vacuuming {table}"))?;
    }
    Ok(())
}

impl Environment {
    /// Lets the next workload start on settled tables, as `pgbench` vacuums before each run:
    /// the throughput workload leaves many dead delivery rows and index entries, and autovacuum
    /// clears them up to a minute later, in the middle of whatever is measured then: its
    /// figures would include the previous workload's clean-up. docs/reliability.md
    /// gives what a burst costs the traffic that follows it.
    pub async fn settle(&self) -> Result<()> {
        let (client, driver) = connect(&self.database_url)
            .await
            .context("connecting to the bench database")?;
        vacuum_delivery_tables(&client).await?;
        drop(client);
        let _ = driver.await;
        Ok(())
    }
}

/// Delivered events in the history every run starts from (see [`clear_earlier_runs`]).
pub const HISTORY_EVENTS: u32 = 20_000;

/// The history's owner: a workspace of its own, with the user, key and (deleted) subscription its
/// deliveries went to.
const HISTORY_WORKSPACE: &str = "7c000000-0000-4000-8000-000000000001";
const HISTORY_USER: &str = "7c000000-0000-4000-8000-000000000002";
const HISTORY_KEY: &str = "7c000000-0000-4000-8000-000000000003";
const HISTORY_SUBSCRIPTION: &str = "wh_benchhistory00000000";

/// Statements writing `events` delivered events of the past day, each with its delivery and one
/// successful attempt, into tables just emptied.
fn history_sql(events: u32) -> String {
    format!(
        "INSERT INTO workspaces (id, name, created_at) \
         VALUES ('{HISTORY_WORKSPACE}', 'bench history', now()) ON CONFLICT DO NOTHING; \
         INSERT INTO users (id, name, email, created_at) \
         VALUES ('{HISTORY_USER}', 'bench history', 'history@bench.invalid', now()) \
         ON CONFLICT DO NOTHING; \
         INSERT INTO memberships (workspace_id, user_id, created_at) \
         VALUES ('{HISTORY_WORKSPACE}', '{HISTORY_USER}', now()) ON CONFLICT DO NOTHING; \
         INSERT INTO api_keys (id, workspace_id, user_id, name, key_prefix, key_hash, created_at, \
                               revoked_at) \
         VALUES ('{HISTORY_KEY}', '{HISTORY_WORKSPACE}', '{HISTORY_USER}', 'bench history', \
                 'tt_history', sha256('bench history'), now(), now()) ON CONFLICT DO NOTHING; \
         INSERT INTO webhook_subscriptions (id, workspace_id, user_id, api_key_id, url, events, \
                                            secret, status, created_at, updated_at) \
         VALUES ('{HISTORY_SUBSCRIPTION}', '{HISTORY_WORKSPACE}', '{HISTORY_USER}', '{HISTORY_KEY}', \
                 'https://history.invalid/', ARRAY['CLIENT_CREATED'], 'whsec_history', 'DELETED', \
                 now(), now()) ON CONFLICT DO NOTHING; \
         INSERT INTO events (id, workspace_id, event_type, body, created_at) \
         SELECT gen_random_uuid(), '{HISTORY_WORKSPACE}', 'CLIENT_CREATED', \
                json_build_object('id', gen_random_uuid(), 'name', 'History client ' || n, \
                                  'type', 'COMPANY', 'status', 'ACTIVE', 'currency', 'USD')::text, \
                now() - interval '1 day' + n * (interval '1 day' / {events}) \
         FROM generate_series(1, {events}) AS n; \
         INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, attempts, \
                                 next_attempt_at, last_status_code, created_at, updated_at) \
         SELECT id, '{HISTORY_SUBSCRIPTION}', workspace_id, 'DELIVERED', 1, created_at, 200, \
                created_at, created_at \
         FROM events; \
         INSERT INTO delivery_attempts (workspace_id, delivery_id, subscription_id, attempt, \
                                        started_at, latency_ms, status_code) \
         SELECT workspace_id, id, subscription_id, 1, created_at, 2, 200 FROM deliveries;"
    )
}

/// Readies `pg_stat_statements` in the bench database (its statements per event go in the
/// report): created where the server loads it; where it does not but has it installed, asks
/// for it at the next start and returns true (the private cluster is then restarted; the
/// setting stays). A server without it is measured without statement counts.
async fn load_statement_stats(url: &str) -> Result<bool> {
    let (client, driver) = connect(url).await?;
    let loaded: String = client
        .query_one("SHOW shared_preload_libraries", &[])
        .await?
        .get(0);
    let restart = if loaded.contains("pg_stat_statements") {
        client
            .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            .await
            .context("creating pg_stat_statements")?;
        false
    } else {
        let installed = client
            .query_opt(
                "SELECT 1 FROM pg_available_extensions WHERE name = 'pg_stat_statements'",
                &[],
            )
            .await?
            .is_some();
        if installed {
            client
                .batch_execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
                .await
                .context("asking for pg_stat_statements")?;
        }
        installed
    };
    drop(client);
    let _ = driver.await;
    Ok(restart)
}

/// Counts the CPU of the database server's processes apart ([`crate::cpu::watch_database`])
/// when it runs on this machine.
async fn watch_database(url: &str) -> Result<()> {
    let (client, driver) = connect(url).await?;
    let backend: i32 = client
        .query_one("SELECT pg_backend_pid()", &[])
        .await?
        .get(0);
    // Looked at while the backend runs.
    if let Ok(backend) = u32::try_from(backend) {
        crate::cpu::watch_database(backend);
    }
    drop(client);
    let _ = driver.await;
    Ok(())
}

/// Creates the bench database on `url`'s server unless it exists; its URL.
async fn ensure_database(url: &str) -> Result<String> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .context("connecting to DATABASE_URL")?;
    let driver = tokio::spawn(connection);
    let exists = client
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&DATABASE])
        .await?
        .is_some();
    if !exists {
        client
            .batch_execute(&format!("CREATE DATABASE {DATABASE}"))
            .await
            .context("creating the bench database (the role needs CREATEDB)")?;
    }
    drop(client);
    let _ = driver.await;
    let mut parsed = url::Url::parse(url).context("DATABASE_URL is not a URL")?;
    parsed.set_path(&format!("/{DATABASE}"));
    Ok(parsed.to_string())
}

/// A tokio-postgres connection, its driver spawned.
pub async fn connect(
    url: &str,
) -> Result<(
    Arc<tokio_postgres::Client>,
    tokio::task::JoinHandle<Result<(), tokio_postgres::Error>>,
)> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    Ok((Arc::new(client), tokio::spawn(connection)))
}
