//! The database health probe.

use std::time::Duration;

use async_trait::async_trait;
use diesel_async::RunQueryDsl;
use timetrack_domain::ports::HealthProbe;
use timetrack_domain::{DomainError, DomainResult};

use super::{PgPool, map_db_error, map_pool_error, opaque_debug};

/// Checks the database with `SELECT 1`, bounded in time.
#[derive(Clone)]
pub struct PgHealthProbe {
    pool: PgPool,
    timeout: Duration,
}

opaque_debug!(PgHealthProbe);

impl PgHealthProbe {
    /// A probe that gives up after `timeout` (2 s in production).
    pub fn new(pool: PgPool, timeout: Duration) -> Self {
        Self { pool, timeout }
    }
}

#[async_trait]
impl HealthProbe for PgHealthProbe {
    async fn check_database(&self) -> DomainResult<()> {
        let check = async {
            let mut conn = self.pool.get().await.map_err(map_pool_error)?;
            diesel::sql_query("SELECT 1")
                .execute(&mut conn)
                .await
                .map_err(|e| map_db_error(e, "health check"))?;
            Ok(())
        };
        tokio::time::timeout(self.timeout, check)
            .await
            .map_err(|_| DomainError::Unavailable("health check timed out".into()))?
    }
}
