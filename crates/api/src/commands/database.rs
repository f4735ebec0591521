//! Which database a command uses: `DATABASE_URL`, or the private cluster under the data directory.

use std::path::Path;

use anyhow::{Context, Result};
use timetrack_adapters::{Durability, LocalPostgres, check_connection, run_migrations};

use crate::config::GlobalSettings;

/// Name of the database inside the private cluster.
const LOCAL_DATABASE: &str = "timetrack";

/// An open, migrated database; `close` stops the private cluster if this process started it.
#[derive(Debug)]
pub struct Database {
    url: String,
    local: Option<LocalPostgres>,
    applied: Vec<String>,
}

impl Database {
    /// Opens `DATABASE_URL`, or starts (or attaches to) the private cluster, and applies pending
    /// migrations.
    pub async fn open(settings: &GlobalSettings) -> Result<Self> {
        let mut db = match settings.database_url.as_deref().filter(|u| !u.is_empty()) {
            Some(url) => {
                check_connection(url).await.map_err(|err| {
                    anyhow::anyhow!(
                        "{err:#}. Check DATABASE_URL (--database-url), or unset it to use a \
                         private cluster under --data-dir"
                    )
                })?;
                Self {
                    url: url.to_owned(),
                    local: None,
                    applied: Vec::new(),
                }
            }
            None => Self::start_local(&settings.data_dir).await?,
        };
        db.applied = run_migrations(&db.url).await?;
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
            local: Some(local),
            applied: Vec::new(),
        })
    }

    /// The connection URL.
    pub fn url(&self) -> &str {
        &self.url
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
