//! The caller's own account: who the key belongs to and where it acts.

use std::sync::Arc;

use crate::accounts::model::{Principal, Role, User, Workspace};
use crate::accounts::ports::{UserRepository, WorkspaceRepository};
use crate::error::{DomainError, DomainResult};

/// The user and workspace behind a principal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The key's user.
    pub user: User,
    /// The key's workspace.
    pub workspace: Workspace,
    /// The user's role there.
    pub role: Role,
}

/// Answers "who am I", which automation platforms call to test a connection.
#[derive(Clone)]
pub struct AccountService {
    users: Arc<dyn UserRepository>,
    workspaces: Arc<dyn WorkspaceRepository>,
}

impl std::fmt::Debug for AccountService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccountService").finish_non_exhaustive()
    }
}

impl AccountService {
    /// Builds the service on its ports.
    pub fn new(users: Arc<dyn UserRepository>, workspaces: Arc<dyn WorkspaceRepository>) -> Self {
        Self { users, workspaces }
    }

    /// The user and workspace of `principal`.
    ///
    /// Both exist for any authenticated principal (keys cascade with their membership); a missing
    /// one is reported as `NotFound`.
    pub async fn profile(&self, principal: &Principal) -> DomainResult<Profile> {
        let user = self
            .users
            .get(principal.user_id)
            .await?
            .ok_or(DomainError::NotFound("user"))?;
        let workspace = self
            .workspaces
            .get(principal.workspace_id)
            .await?
            .ok_or(DomainError::NotFound("workspace"))?;
        Ok(Profile {
            user,
            workspace,
            role: principal.role,
        })
    }
}
