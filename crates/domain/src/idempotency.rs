//! Idempotency keys of POST requests.

use async_trait::async_trait;
use time::{Duration, OffsetDateTime};

use crate::error::DomainResult;
use crate::ids::{ApiKeyId, WorkspaceId};

/// How long a key is remembered.
pub const IDEMPOTENCY_RETENTION: Duration = Duration::hours(24);

/// How long an unfinished claim blocks its key; after that (a crash mid-request) it is retaken.
pub const STALE_CLAIM: Duration = Duration::seconds(60);

/// What [`IdempotencyStore::begin`] found for an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdempotencyBegin {
    /// First use: the request runs now, and its response is completed or abandoned after.
    Started,
    /// A finished earlier request with the same fingerprint: answer its response again.
    Replay {
        /// The stored status code.
        status: u16,
        /// The stored body.
        body: String,
    },
    /// The key was used with a different request.
    Mismatch,
    /// The first request with this key has not finished yet.
    InProgress,
}

/// Idempotency keys of POST requests, per API key, kept for 24 hours.
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Claims `key` of `api_key` for a request with `fingerprint` (SHA-256 of method, path and
    /// body), or reports what an earlier use of that key by that API key left. Uses older than
    /// [`IDEMPOTENCY_RETENTION`] at `now` are forgotten, and so is a claim older than
    /// [`STALE_CLAIM`] that was never completed. Atomic per key. `workspace` is the API key's
    /// (what it is kept with).
    async fn begin(
        &self,
        workspace: WorkspaceId,
        api_key: ApiKeyId,
        key: &str,
        fingerprint: [u8; 32],
        now: OffsetDateTime,
    ) -> DomainResult<IdempotencyBegin>;

    /// Stores the response of the request that [`begin`](Self::begin) started; later `begin`s
    /// with the same fingerprint replay it.
    async fn complete(
        &self,
        api_key: ApiKeyId,
        key: &str,
        status: u16,
        body: &str,
    ) -> DomainResult<()>;

    /// Forgets a started key whose request did not finish with a storable response, so a retry
    /// runs again. A completed key is kept.
    async fn abandon(&self, api_key: ApiKeyId, key: &str) -> DomainResult<()>;
}
