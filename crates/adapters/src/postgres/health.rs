//! The database health probe.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use timetrack_domain::ports::HealthProbe;
use timetrack_domain::{DomainError, DomainResult};
use tokio::sync::Mutex;

use super::errors::{map_db_error, map_pool_error};
use super::pool::{PgPool, opaque_debug};

/// What a check finds when the database answers but accepts no writes.
pub const READ_ONLY: &str = "the database is read-only (a standby): no primary reachable";

/// When a check came back, and what it found (the error as its message).
type LastCheck = (Instant, Result<(), String>);

/// Checks that the database answers and accepts writes (`SHOW transaction_read_only` on a pooled
/// connection, which the pool opened on the primary), bounded in time.
///
/// Checks asked for at the same time share one query: while a check runs, the others wait for it
/// (in arrival order) and take its outcome, since it came back after they asked. A flood of health
/// requests therefore costs one pooled connection at a time, not one each, and does not queue
/// behind itself for the pool.
#[derive(Clone)]
pub struct PgHealthProbe {
    pool: PgPool,
    timeout: Duration,
    /// When the last check came back, and what it found.
    last: Arc<Mutex<Option<LastCheck>>>,
}

opaque_debug!(PgHealthProbe);

impl PgHealthProbe {
    /// A probe that gives up after `timeout` (2 s in production).
    pub fn new(pool: PgPool, timeout: Duration) -> Self {
        Self {
            pool,
            timeout,
            last: Arc::new(Mutex::new(None)),
        }
    }

    async fn select_one(&self) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let read_only = super::pool::is_read_only(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "health check"))?;
        if read_only {
            // A standby, or a primary demoted under the connection: no write would succeed.
            super::pool::read_only_seen();
            return Err(DomainError::Unavailable(READ_ONLY.to_owned()));
        }
        Ok(())
    }
}

#[async_trait]
impl HealthProbe for PgHealthProbe {
    async fn check_database(&self) -> DomainResult<()> {
        let asked = Instant::now();
        let check = async {
            let mut last = self.last.lock().await;
            if let Some((finished, outcome)) = last.as_ref()
                && *finished >= asked
            {
                // A check that came back after this one was asked for: its outcome is current.
                return outcome.clone().map_err(DomainError::Unavailable);
            }
            let outcome = self.select_one().await;
            *last = Some((
                Instant::now(),
                outcome.as_ref().map(|_| ()).map_err(ToString::to_string),
            ));
            outcome
        };
        tokio::time::timeout(self.timeout, check)
            .await
            .map_err(|_| DomainError::Unavailable("health check timed out".into()))?
    }
}
