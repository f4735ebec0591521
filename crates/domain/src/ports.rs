//! Ports: the traits through which the domain reaches storage, time and randomness.
//!
//! Each method's documentation states its contract, errors included. Implementations live in
//! `timetrack-adapters` (PostgreSQL, system clock, OS randomness) and, for tests, in
//! the `testing` module (feature `testing`).

use async_trait::async_trait;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::error::DomainResult;
use crate::ids::{ApiKeyId, UserId, WorkspaceId};
use crate::model::{ApiKey, KeyHash, User, Workspace};

/// The current time.
pub trait Clock: Send + Sync {
    /// Now, in UTC.
    fn now(&self) -> OffsetDateTime;
}

/// New unique identifiers.
pub trait IdGenerator: Send + Sync {
    /// A new UUID, never returned before; production uses time-ordered UUIDv7.
    fn new_uuid(&self) -> Uuid;
}

/// Cryptographically secure random bytes (API keys, webhook ids and secrets).
pub trait RandomSource: Send + Sync {
    /// Fills `buf` with random bytes. MUST use a cryptographically secure generator in production.
    fn fill(&self, buf: &mut [u8]);
}

/// Storage of workspaces.
#[async_trait]
pub trait WorkspaceRepository: Send + Sync {
    /// Stores a new workspace. MUST return `Conflict` if its id exists.
    async fn create(&self, workspace: &Workspace) -> DomainResult<()>;

    /// The workspace with this id, or `None`.
    async fn get(&self, id: WorkspaceId) -> DomainResult<Option<Workspace>>;
}

/// Storage of users and their workspace memberships.
#[async_trait]
pub trait UserRepository: Send + Sync {
    /// Stores a new user and makes them a member of `workspace`, in one transaction.
    ///
    /// MUST return `NotFound("workspace")` if the workspace does not exist and `Conflict` if a user
    /// with the same e-mail (case-insensitively) exists; nothing is stored then.
    async fn create_member(
        &self,
        user: &User,
        workspace: WorkspaceId,
        at: OffsetDateTime,
    ) -> DomainResult<()>;

    /// Makes an existing user a member of `workspace`.
    ///
    /// MUST return `NotFound("workspace")` if the workspace does not exist and `Conflict` if the
    /// user already is a member.
    async fn add_membership(
        &self,
        user: UserId,
        workspace: WorkspaceId,
        at: OffsetDateTime,
    ) -> DomainResult<()>;

    /// The user with this e-mail (compared case-insensitively), or `None`.
    async fn find_by_email(&self, email: &str) -> DomainResult<Option<User>>;

    /// The user with this id, or `None`.
    async fn get(&self, id: UserId) -> DomainResult<Option<User>>;
}

/// Storage of API keys, by hash.
#[async_trait]
pub trait ApiKeyRepository: Send + Sync {
    /// Stores a new key with the hash of its secret.
    ///
    /// MUST return `NotFound("membership")` if the user is not a member of the key's workspace.
    async fn create(&self, key: &ApiKey, hash: &KeyHash) -> DomainResult<()>;

    /// The key with this hash if it exists and is not revoked, or `None`.
    async fn find_active_by_hash(&self, hash: &KeyHash) -> DomainResult<Option<ApiKey>>;

    /// Records that the key authenticated a request at `at`.
    async fn record_use(&self, id: ApiKeyId, at: OffsetDateTime) -> DomainResult<()>;

    /// Revokes the key and disables every active webhook subscription created with it, in one
    /// transaction, and returns the key as now stored.
    ///
    /// Revoking a revoked key changes nothing and returns it. MUST return `NotFound("api key")` if
    /// no key has this id.
    async fn revoke(&self, id: ApiKeyId, at: OffsetDateTime) -> DomainResult<ApiKey>;
}

/// Reachability of the database, for the health check.
#[async_trait]
pub trait HealthProbe: Send + Sync {
    /// Runs a trivial query. MUST return within its own time bound (2 s in production) with
    /// `Unavailable` if the database cannot answer.
    async fn check_database(&self) -> DomainResult<()>;
}
