//! The database health probe.

use async_trait::async_trait;

use crate::error::DomainResult;

/// Reachability of the database, for the health check.
#[async_trait]
pub trait HealthProbe: Send + Sync {
    /// Runs a trivial query. MUST return within its own time bound (2 s in production) with
    /// `Unavailable` if the database cannot answer.
    async fn check_database(&self) -> DomainResult<()>;
}
