//! Rate-limit counts.

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::error::DomainResult;

/// Where rate-limit counts live: in the process, or shared by several instances.
#[async_trait]
pub trait RateLimitStore: Send + Sync {
    /// Decides on one request of `key` at `now` under `policy` (see
    /// [`crate::ratelimit::decide`]) and counts it if admitted, atomically for the key.
    async fn hit(
        &self,
        key: &str,
        now: OffsetDateTime,
        policy: crate::ratelimit::RatePolicy,
    ) -> DomainResult<crate::ratelimit::RateDecision>;

    /// Decides on one request of `key` at `now` under `policy` as [`RateLimitStore::hit`] would,
    /// and MUST NOT count it.
    async fn peek(
        &self,
        key: &str,
        now: OffsetDateTime,
        policy: crate::ratelimit::RatePolicy,
    ) -> DomainResult<crate::ratelimit::RateDecision>;
}
