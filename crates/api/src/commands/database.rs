//! Which database a command uses: `DATABASE_URL`, or the private cluster under the data directory.

use std::path::Path;

use anyhow::{Context, Result};
use timetrack_adapters::{
    Durability, LocalPostgres, PoolSettings, Pooler, check_connection, run_migrations,
};

use crate::config::{GlobalSettings, PoolerArg};

/// Name of the database inside the private cluster.
const LOCAL_DATABASE: &str = "timetrack";

/// An open, migrated database; `close` stops the private cluster if this process started it.
#[derive(Debug)]
pub struct Database {
    url: String,
    /// The database itself, for the connections that keep a session; `url` unless set apart.
    direct_url: Option<String>,
    pooler: Pooler,
    local: Option<LocalPostgres>,
    applied: Vec<String>,
}

impl Database {
    /// Opens `DATABASE_URL`, or starts (or attaches to) the private cluster, and applies pending
    /// migrations.
    pub async fn open(settings: &GlobalSettings) -> Result<Self> {
        let url = settings.database_url.as_deref().filter(|u| !u.is_empty());
        let direct_url = settings
            .database_direct_url
            .as_deref()
            .filter(|u| !u.is_empty());
        let pooler = match settings.database_pooler {
            PoolerArg::None => Pooler::None,
            PoolerArg::Transaction => Pooler::Transaction,
        };
        let mut db = match url {
            Some(url) => {
                if pooler == Pooler::Transaction && direct_url.is_none() {
                    anyhow::bail!(
                        "TIMETRACK_DATABASE_DIRECT_URL (--database-direct-url) is required with \
                         --database-pooler transaction: the LISTEN connection and the \
                         migrations' lock need a session of their own, which a pooler in \
                         transaction mode does not keep (docs/operations.md#pgbouncer)"
                    );
                }
                check_connection(url).await.map_err(|err| {
                    anyhow::anyhow!(
                        "{err:#}. Check DATABASE_URL (--database-url), or unset it to use a \
                         private cluster under --data-dir"
                    )
                })?;
                if let Some(direct) = direct_url {
                    check_connection(direct).await.map_err(|err| {
                        anyhow::anyhow!(
                            "{err:#}. Check TIMETRACK_DATABASE_DIRECT_URL \
                             (--database-direct-url)"
                        )
                    })?;
                }
                Self {
                    url: url.to_owned(),
                    direct_url: direct_url.map(str::to_owned),
                    pooler,
                    local: None,
                    applied: Vec::new(),
                }
            }
            None if direct_url.is_some() || pooler != Pooler::None => anyhow::bail!(
                "--database-direct-url and --database-pooler need DATABASE_URL: the private \
                 cluster is always reached directly"
            ),
            None => Self::start_local(&settings.data_dir).await?,
        };
        db.applied = run_migrations(db.direct_url()).await?;
        if !db.applied.is_empty() {
            tracing::info!(applied = db.applied.join(","), "migrations applied");
        }
        Ok(db)
    }

    async fn start_local(data_dir: &Path) -> Result<Self> {
        let dir = data_dir.to_owned();
        let local =
            tokio::task::spawn_blocking(move || LocalPostgres::start(&dir, Durability::Durable))
                .await
                .context("starting the private PostgreSQL")??;
        let url = local
            .ensure_database(LOCAL_DATABASE)
            .await
            .context("creating the timetrack database")?;
        Ok(Self {
            url,
            direct_url: None,
            pooler: Pooler::None,
            local: Some(local),
            applied: Vec::new(),
        })
    }

    /// The URL the pools connect to (a pooler's, with `--database-pooler transaction`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL of the database itself, for a connection that keeps a session (`LISTEN`, the
    /// migrations' lock).
    pub fn direct_url(&self) -> &str {
        self.direct_url.as_deref().unwrap_or(&self.url)
    }

    /// Settings of a pool of at most `max_size` connections to [`url`](Self::url).
    pub fn pool_settings(&self, max_size: usize) -> PoolSettings {
        PoolSettings {
            max_size,
            pooler: self.pooler,
            ..PoolSettings::default()
        }
    }

    /// The migration versions applied when the database was opened.
    pub fn applied_migrations(&self) -> &[String] {
        &self.applied
    }

    /// Whether this is the private cluster (so the demo data may be created).
    pub fn is_private(&self) -> bool {
        self.local.is_some()
    }

    /// Stops the private cluster if this process started it.
    pub async fn close(self) {
        if let Some(local) = self.local {
            let _ = tokio::task::spawn_blocking(move || drop(local)).await;
        }
    }
}
