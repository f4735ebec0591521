//! Storage of API keys.

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::accounts::model::{ApiKey, KeyHash, Role};
use crate::error::DomainResult;
use crate::ids::{ApiKeyId, UserId, WorkspaceId};

/// Storage of API keys, by hash.
#[async_trait]
pub trait ApiKeyRepository: Send + Sync {
    /// Stores a new key with the hash of its secret.
    ///
    /// MUST return `NotFound("membership")` if the user is not a member of the key's workspace.
    async fn create(&self, key: &ApiKey, hash: &KeyHash) -> DomainResult<()>;

    /// The key with this hash if it exists and is not revoked, with its user's role in its
    /// workspace, or `None`.
    async fn find_active_by_hash(&self, hash: &KeyHash) -> DomainResult<Option<(ApiKey, Role)>>;

    /// The hashes of every key that is not revoked: past an address's failure limit, a key that
    /// is not among them is refused without a look-up of its own.
    async fn active_hashes(&self) -> DomainResult<Vec<KeyHash>>;

    /// Records that the key authenticated a request at `at`.
    async fn record_use(&self, id: ApiKeyId, at: OffsetDateTime) -> DomainResult<()>;

    /// Revokes the key and disables every active webhook subscription created with it, in one
    /// transaction, and returns the key as now stored.
    ///
    /// Revoking a revoked key changes nothing and returns it. MUST return `NotFound("api key")` if
    /// no key has this id.
    async fn revoke(&self, id: ApiKeyId, at: OffsetDateTime) -> DomainResult<ApiKey>;

    /// The key with this id, revoked or not, or `None`.
    async fn get(&self, id: ApiKeyId) -> DomainResult<Option<ApiKey>>;

    /// The keys of `workspace` (only `user`'s when given), revoked ones included, newest first.
    async fn list(&self, workspace: WorkspaceId, user: Option<UserId>)
    -> DomainResult<Vec<ApiKey>>;

    /// Disables, as a revocation does, every active webhook subscription created with a key that
    /// has expired at `now` (reason `key_revoked`), cancelling what was queued for them; returns
    /// how many subscriptions it disabled. The key itself is left as it is: its expiry already
    /// refuses it.
    async fn disable_webhooks_of_expired(&self, now: OffsetDateTime) -> DomainResult<u64>;
}
