//! What timetrack's tests and tools share, and production code never links: per-test databases,
//! an HTTPS receiver with a CA of its own ([`HttpsReceiver`]), and the real `timetrack` binary as
//! a child process ([`ServeCommand`]).
//!
//! Test databases: each test gets its own database, cloned from a template migrated once. The
//! server is `DATABASE_URL`'s when that is set (the role needs `CREATEDB`), else a private
//! cluster this process starts in the temporary directory; when the process exits, the cluster is
//! stopped and its directory removed (a crashed process's is removed by the next one).
//! The template's name carries a hash of the migrations, so a changed migration gets a new
//! template, and concurrent test processes on one server build it once, under an advisory lock.

pub mod fakes;

#[cfg(feature = "infra")]
mod browser;
#[cfg(feature = "infra")]
mod database;
#[cfg(feature = "infra")]
mod pooler;
#[cfg(feature = "infra")]
mod process;
#[cfg(feature = "infra")]
mod receiver;
#[cfg(feature = "infra")]
pub mod replication;

#[cfg(feature = "infra")]
pub use browser::{chromium, pdftotext, pgbouncer};
#[cfg(feature = "infra")]
pub use database::{TestDatabase, npm_package, python_package, recreate_database};
#[cfg(feature = "infra")]
pub use pooler::Pgbouncer;
#[cfg(feature = "infra")]
pub use process::{Account, Admin, Memory, ServeCommand, ServerProcess, field, free_port};
#[cfg(feature = "infra")]
pub use receiver::{Behaviour, HttpsReceiver, Received};
#[cfg(feature = "infra")]
pub use replication::{ReplicaPair, Replication};

/// The `TIMETRACK_SECRET_KEY` of servers the tests and tools start (every process of one test
/// database must share it); a published test value, never a production one.
pub const TEST_SECRET_KEY: &str = "dGVzdC1vbmx5IGtleTogbmV2ZXIgdXNlIGluIHByb2Q=";

/// The `p`th percentile (nearest rank) of `values`; 0 when empty. For the bench and fault tools'
/// latency figures.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}
