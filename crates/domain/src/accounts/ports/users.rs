//! Storage of users and their memberships.

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::accounts::model::{Member, Role, User};
use crate::error::DomainResult;
use crate::ids::{UserId, WorkspaceId};
use crate::page::{ListFilter, Page, PageRequest};

/// The conflict of a role change that would leave a workspace without an owner.
pub const LAST_OWNER: &str = "A workspace keeps at least one owner";

/// The refusal of a role change decided on a role that changed before it was made.
pub const ROLE_CHANGED: &str = "The member's role changed meanwhile; read it again and retry";

/// Storage of users and their workspace memberships.
#[async_trait]
pub trait UserRepository: Send + Sync {
    /// Stores a new user and makes them a member of `workspace` with `role`, in one transaction,
    /// and returns the role stored: the first member of a workspace is its owner, whatever `role`
    /// says.
    ///
    /// MUST return `NotFound("workspace")` if the workspace does not exist and `Conflict` if a user
    /// with the same e-mail (case-insensitively) exists; nothing is stored then.
    async fn create_member(
        &self,
        user: &User,
        workspace: WorkspaceId,
        role: Role,
        at: OffsetDateTime,
    ) -> DomainResult<Role>;

    /// Makes an existing user a member of `workspace` with `role` and returns the role stored
    /// (owner for the first member, as for [`UserRepository::create_member`]).
    ///
    /// MUST return `NotFound("workspace")` if the workspace does not exist and `Conflict` if the
    /// user already is a member.
    async fn add_membership(
        &self,
        user: UserId,
        workspace: WorkspaceId,
        role: Role,
        at: OffsetDateTime,
    ) -> DomainResult<Role>;

    /// A page of `workspace`'s members that pass `filter` (`q` in the user's name or e-mail,
    /// `updated_since` against the membership's `updated_at`), the earliest to join first.
    async fn members(
        &self,
        workspace: WorkspaceId,
        filter: &ListFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Member>>;

    /// `user`'s membership of `workspace`, or `None`.
    async fn member(&self, workspace: WorkspaceId, user: UserId) -> DomainResult<Option<Member>>;

    /// Gives `user` `role` in `workspace` and returns the membership as stored.
    ///
    /// MUST return `NotFound("member")` if the user is not a member, and `Conflict` (with
    /// [`LAST_OWNER`]) when the change would leave the workspace without an owner, also when two
    /// such changes run at once; and `Conflict` (with [`ROLE_CHANGED`]) when `expected` is given
    /// and the member's role is no longer it (the caller's permission was decided on it). Nothing
    /// is changed then. A change stamps the membership's `updated_at` with `at`.
    async fn set_role(
        &self,
        workspace: WorkspaceId,
        user: UserId,
        expected: Option<Role>,
        role: Role,
        at: OffsetDateTime,
    ) -> DomainResult<Member>;

    /// The user with this e-mail (compared case-insensitively), or `None`.
    async fn find_by_email(&self, email: &str) -> DomainResult<Option<User>>;

    /// The user with this id, or `None`.
    async fn get(&self, id: UserId) -> DomainResult<Option<User>>;
}
