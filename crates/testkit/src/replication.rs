//! A primary and its streaming standby on this machine, for failover tests: two private
//! clusters, the standby made by `pg_basebackup -R` from the primary.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use timetrack_adapters::{Durability, LocalPostgres};

/// How the primary acknowledges a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replication {
    /// Once it is on the primary's disk (PostgreSQL's default): a failover may lose what the
    /// standby had not received yet.
    Asynchronous,
    /// Once the standby has it on disk too (`synchronous_standby_names = '*'`): a failover loses
    /// nothing acknowledged; with the standby gone, commits wait.
    Synchronous,
}

/// A primary and its standby, each a durable private cluster under one directory, removed when
/// dropped.
#[derive(Debug)]
pub struct ReplicaPair {
    /// The primary (until [`promote`](Self::promote)).
    pub primary: LocalPostgres,
    /// The standby, following the primary.
    pub standby: LocalPostgres,
    dir: PathBuf,
    keep: bool,
}

impl ReplicaPair {
    /// A new pair under a fresh directory in `parent` (the temporary directory when `None`),
    /// replicating as `replication` says. Blocking.
    pub fn start(parent: Option<&Path>, replication: Replication) -> Result<Self> {
        let parent = parent.map_or_else(std::env::temp_dir, Path::to_owned);
        let dir = parent.join(format!("replicas-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        // The clusters' user (PostgreSQL refuses root) must be able to enter it.
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
        let primary = LocalPostgres::start(&dir.join("primary"), Durability::Durable)?;
        let standby =
            LocalPostgres::start_standby(&primary, &dir.join("standby"), Durability::Durable)?;
        let pair = Self {
            primary,
            standby,
            dir,
            keep: false,
        };
        if replication == Replication::Synchronous {
            let url = pair.primary.url("postgres");
            blocking_sql(&url, "ALTER SYSTEM SET synchronous_standby_names = '*'")?;
            blocking_sql(&url, "SELECT pg_reload_conf()")?;
            // Committed on both from here on: wait until the standby is the synchronous one.
            let deadline = Instant::now() + Duration::from_secs(30);
            while blocking_sql(
                &url,
                "SELECT 1 FROM pg_stat_replication WHERE sync_state = 'sync'",
            )? == 0
            {
                if Instant::now() > deadline {
                    bail!("the standby did not become synchronous within 30 s");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(pair)
    }

    /// Keeps the directory (the clusters' logs) when dropped.
    pub fn keep_files(&mut self) {
        self.keep = true;
    }

    /// The directory holding both clusters.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The URL of `database` naming both hosts, primary first, as an operator writes it (the
    /// service adds `target_session_attrs=read-write` itself).
    pub fn url(&self, database: &str) -> String {
        let (primary, standby) = (self.primary.port(), self.standby.port());
        self.primary.url(database).replacen(
            &format!("127.0.0.1:{primary}/"),
            &format!("127.0.0.1:{primary},127.0.0.1:{standby}/"),
            1,
        )
    }

    /// Waits until the standby has replayed everything the primary has written so far.
    pub async fn caught_up(&self) -> Result<()> {
        let lsn: String = query_one(
            &self.primary.url("postgres"),
            "SELECT pg_current_wal_lsn()::text",
        )
        .await?
        .get(0);
        let deadline = Instant::now() + Duration::from_secs(30);
        let standby = self.standby.url("postgres");
        loop {
            let row = query_one(
                &standby,
                &format!("SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn"),
            )
            .await?;
            if row.get::<_, bool>(0) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the standby did not replay {lsn} within 30 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Kills the primary's postmaster with `SIGKILL`, as a crash of its host would.
    pub fn kill_primary(&mut self) {
        self.primary.kill();
    }

    /// Promotes the standby (`pg_promote`, waiting until it accepts writes).
    pub async fn promote(&self) -> Result<()> {
        let row = query_one(&self.standby.url("postgres"), "SELECT pg_promote(true, 60)").await?;
        if !row.get::<_, bool>(0) {
            bail!("pg_promote did not finish within 60 s");
        }
        Ok(())
    }

    /// Makes the primary read-only while it runs, as a switchover leaves it until it restarts
    /// as a standby (`default_transaction_read_only`, reloaded). Returns once the reload is in
    /// effect: `pg_reload_conf()` only signals the postmaster, which reads the file and then
    /// signals every backend; a write sent in between ran read-write on an open connection
    /// (the test then saw one acknowledged write on the old primary). A new session showing the
    /// setting means the postmaster has read it and signalled the backends, and each applies
    /// it before its next command.
    pub async fn demote_primary_in_place(&self) -> Result<()> {
        let url = self.primary.url("postgres");
        query(&url, "ALTER SYSTEM SET default_transaction_read_only = on").await?;
        query(&url, "SELECT pg_reload_conf()").await?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let row = query_one(&url, "SHOW default_transaction_read_only").await?;
            if row.get::<_, String>(0) == "on" {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the primary did not become read-only within 10 s of the reload");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for ReplicaPair {
    fn drop(&mut self) {
        self.primary.stop();
        self.standby.stop();
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The rows of `sql` on `url`.
pub async fn query(url: &str, sql: &str) -> Result<Vec<tokio_postgres::Row>> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .with_context(|| format!("connecting for {sql}"))?;
    tokio::spawn(connection);
    client.query(sql, &[]).await.with_context(|| sql.to_owned())
}

/// The one row of `sql` on `url`.
pub async fn query_one(url: &str, sql: &str) -> Result<tokio_postgres::Row> {
    query(url, sql)
        .await?
        .into_iter()
        .next()
        .with_context(|| format!("no row from {sql}"))
}

/// Runs `sql` on `url` on a runtime of its own (for blocking callers); how many rows it gave.
fn blocking_sql(url: &str, sql: &str) -> Result<usize> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async { Ok(query(url, sql).await?.len()) })
}
