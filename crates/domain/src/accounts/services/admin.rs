//! Administration: workspaces, users and API keys, as driven by the `timetrack admin` commands.

use std::sync::Arc;

use crate::accounts::model::{ApiKey, ApiKeySecret, Member, Role, User, Workspace};
use crate::accounts::ports::{ApiKeyRepository, UserRepository, WorkspaceRepository};
use crate::error::{DomainError, DomainResult};
use crate::ids::{ApiKeyId, UserId, WorkspaceId};
use crate::system::{Clock, IdGenerator, RandomSource};
use crate::values::{Currency, Email, Name, TimeZoneName};

/// What is needed to create a workspace; unset fields take the documented defaults.
#[derive(Debug, Clone)]
pub struct NewWorkspace {
    /// Display name.
    pub name: Name,
    /// IANA time zone; `UTC` when `None`.
    pub timezone: Option<TimeZoneName>,
    /// ISO 4217 currency; `USD` when `None`.
    pub currency: Option<Currency>,
}

impl NewWorkspace {
    /// A workspace named `name`, in UTC and USD.
    pub fn named(name: Name) -> Self {
        Self {
            name,
            timezone: None,
            currency: None,
        }
    }
}

/// Creates workspaces, users and API keys, and revokes keys.
#[derive(Clone)]
pub struct AdminService {
    workspaces: Arc<dyn WorkspaceRepository>,
    users: Arc<dyn UserRepository>,
    keys: Arc<dyn ApiKeyRepository>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    random: Arc<dyn RandomSource>,
}

impl std::fmt::Debug for AdminService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminService").finish_non_exhaustive()
    }
}

impl AdminService {
    /// Builds the service on its ports.
    pub fn new(
        workspaces: Arc<dyn WorkspaceRepository>,
        users: Arc<dyn UserRepository>,
        keys: Arc<dyn ApiKeyRepository>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
        random: Arc<dyn RandomSource>,
    ) -> Self {
        Self {
            workspaces,
            users,
            keys,
            clock,
            ids,
            random,
        }
    }

    /// Creates a workspace.
    pub async fn create_workspace(&self, new: NewWorkspace) -> DomainResult<Workspace> {
        let workspace = Workspace {
            id: WorkspaceId(self.ids.new_uuid()),
            name: new.name.into_string(),
            timezone: new.timezone.map_or_else(
                || Workspace::DEFAULT_TIMEZONE.to_owned(),
                TimeZoneName::into_string,
            ),
            currency: new.currency.map_or_else(
                || Workspace::DEFAULT_CURRENCY.to_owned(),
                Currency::into_string,
            ),
            created_at: self.clock.now(),
        };
        self.workspaces.create(&workspace).await?;
        Ok(workspace)
    }

    /// Makes a person a member of `workspace` (see [`AdminService::create_user_as`]), as a
    /// member, or as owner when they are its first.
    pub async fn create_user(
        &self,
        workspace: WorkspaceId,
        name: Name,
        email: Email,
    ) -> DomainResult<User> {
        Ok(self
            .create_user_as(workspace, name, email, Role::Member)
            .await?
            .0)
    }

    /// Makes a person a member of `workspace` with `role`, and returns them with the role
    /// stored: the first member of a workspace is its owner, whatever `role` says.
    ///
    /// A new e-mail creates a user; an e-mail that already belongs to a user adds that user to the
    /// workspace (their name is kept). Already being a member is a `Conflict`.
    pub async fn create_user_as(
        &self,
        workspace: WorkspaceId,
        name: Name,
        email: Email,
        role: Role,
    ) -> DomainResult<(User, Role)> {
        let (name, email) = (name.into_string(), email.into_string());
        let now = self.clock.now();
        if let Some(existing) = self.users.find_by_email(&email).await? {
            let role = self
                .users
                .add_membership(existing.id, workspace, role, now)
                .await?;
            return Ok((existing, role));
        }
        let user = User {
            id: UserId(self.ids.new_uuid()),
            name,
            email,
            created_at: now,
        };
        let role = self
            .users
            .create_member(&user, workspace, role, now)
            .await?;
        Ok((user, role))
    }

    /// Gives `user` `role` in `workspace` (the operator's command: any change, as long as the
    /// workspace keeps an owner).
    pub async fn set_role(
        &self,
        workspace: WorkspaceId,
        user: UserId,
        role: Role,
    ) -> DomainResult<Member> {
        self.users
            .set_role(workspace, user, None, role, self.clock.now())
            .await
    }

    /// Issues a key for `user` in `workspace`; the returned secret is the only copy of the key.
    pub async fn create_api_key(
        &self,
        user: UserId,
        workspace: WorkspaceId,
        name: Option<Name>,
    ) -> DomainResult<(ApiKey, ApiKeySecret)> {
        let name = name.map(Name::into_string);
        let secret = ApiKeySecret::generate(self.random.as_ref());
        let key = ApiKey {
            id: ApiKeyId(self.ids.new_uuid()),
            workspace_id: workspace,
            user_id: user,
            name,
            prefix: secret.shown_prefix(),
            created_at: self.clock.now(),
            revoked_at: None,
            last_used_at: None,
            scopes: crate::accounts::model::Scopes::ALL,
            expires_at: None,
        };
        self.keys.create(&key, &secret.hash()).await?;
        Ok((key, secret))
    }

    /// Revokes a key; its webhook subscriptions are disabled in the same transaction.
    pub async fn revoke_api_key(&self, id: ApiKeyId) -> DomainResult<ApiKey> {
        self.keys.revoke(id, self.clock.now()).await
    }

    /// The workspace with this id.
    pub async fn workspace(&self, id: WorkspaceId) -> DomainResult<Workspace> {
        self.workspaces
            .get(id)
            .await?
            .ok_or(DomainError::NotFound("workspace"))
    }
}
