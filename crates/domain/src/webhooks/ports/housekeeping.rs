//! Removal of rows past their retention.

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::error::DomainResult;

/// What one housekeeping pass removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Purged {
    /// Events (with their deliveries and attempts) past retention.
    pub events: u64,
    /// Attempt rows past retention (of deliveries still kept).
    pub attempts: u64,
    /// Idempotency keys past 24 hours.
    pub idempotency_keys: u64,
    /// Rate-limit rows past their 60 s window.
    pub rate_limit_hits: u64,
}

/// How long rows are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Events, with their deliveries (the catch-up feed's and a replay's reach); never less than
    /// `deliveries`.
    pub events: time::Duration,
    /// Delivery attempts (the delivery log's reach).
    pub deliveries: time::Duration,
}

/// Removal of rows that have outlived their use, so tables do not grow without bound.
#[async_trait]
pub trait Housekeeping: Send + Sync {
    /// Removes, as of `now`: events older than `retention.events` (or `retention.deliveries`, if
    /// longer) whose deliveries are all final (with those deliveries and their attempts), attempt
    /// rows older than `retention.deliveries`, idempotency keys older than 24 hours, and
    /// rate-limit rows older than 60 s. Works in bounded batches.
    async fn purge(&self, now: OffsetDateTime, retention: Retention) -> DomainResult<Purged>;
}
