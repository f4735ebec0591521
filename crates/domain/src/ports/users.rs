//! Storage of users and their memberships.

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::error::DomainResult;
use crate::ids::{UserId, WorkspaceId};
use crate::model::User;

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
