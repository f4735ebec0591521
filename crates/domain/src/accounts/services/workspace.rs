//! The caller's workspace: its settings, and its members with their roles.

use std::sync::Arc;

use time::Date;

use crate::accounts::model::{
    InvoiceNumberPattern, Member, Principal, Role, Rounding, RoundingMode, Workspace,
    WorkspaceSettings,
};
use crate::accounts::ports::{UserRepository, WorkspaceRepository};
use crate::error::{DomainError, DomainResult};
use crate::ids::UserId;
use crate::page::{ListFilter, Page, PageRequest};
use crate::system::Clock;
use crate::values::{Currency, Name, TimeZoneName};
use crate::writes::WriteOutcome;

/// Changes to a workspace: `None` keeps a field; `lock_before: Some(None)` clears the lock date.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspacePatch {
    /// New name.
    pub name: Option<Name>,
    /// New time zone.
    pub timezone: Option<TimeZoneName>,
    /// New default currency.
    pub currency: Option<Currency>,
    /// New `members_manage_catalog`.
    pub members_manage_catalog: Option<bool>,
    /// New `members_see_rates`.
    pub members_see_rates: Option<bool>,
    /// New rounding step, 0 to 60 minutes.
    pub rounding_minutes: Option<u8>,
    /// New rounding direction.
    pub rounding_mode: Option<RoundingMode>,
    /// New invoice number pattern.
    pub invoice_number_pattern: Option<InvoiceNumberPattern>,
    /// New payment terms, 0 to 365 days.
    pub payment_terms_days: Option<u16>,
    /// New lock date, or `Some(None)` for none.
    pub lock_before: Option<Option<Date>>,
}

impl WorkspacePatch {
    /// `workspace` with the patch applied and checked.
    fn apply(
        &self,
        (workspace, settings): &(Workspace, WorkspaceSettings),
    ) -> DomainResult<(Workspace, WorkspaceSettings)> {
        let mut workspace = workspace.clone();
        let mut settings = settings.clone();
        if let Some(name) = &self.name {
            workspace.name = name.as_str().to_owned();
        }
        if let Some(timezone) = &self.timezone {
            workspace.timezone = timezone.as_str().to_owned();
        }
        if let Some(currency) = &self.currency {
            workspace.currency = currency.as_str().to_owned();
        }
        if let Some(value) = self.members_manage_catalog {
            settings.members_manage_catalog = value;
        }
        if let Some(value) = self.members_see_rates {
            settings.members_see_rates = value;
        }
        settings.rounding = Rounding::new(
            self.rounding_minutes.unwrap_or(settings.rounding.minutes),
            self.rounding_mode.unwrap_or(settings.rounding.mode),
        )?;
        if let Some(pattern) = &self.invoice_number_pattern {
            settings.invoice_number_pattern = pattern.clone();
        }
        if let Some(days) = self.payment_terms_days {
            if days > WorkspaceSettings::MAX_PAYMENT_TERMS_DAYS {
                return Err(DomainError::validation(format!(
                    "payment_terms_days must be between 0 and {}, got: {days}",
                    WorkspaceSettings::MAX_PAYMENT_TERMS_DAYS
                )));
            }
            settings.payment_terms_days = days;
        }
        if let Some(lock_before) = self.lock_before {
            settings.lock_before = lock_before;
        }
        Ok((workspace, settings))
    }
}

/// Reads and changes the caller's workspace and its members' roles.
#[derive(Clone)]
pub struct WorkspaceService {
    workspaces: Arc<dyn WorkspaceRepository>,
    users: Arc<dyn UserRepository>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for WorkspaceService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkspaceService").finish_non_exhaustive()
    }
}

impl WorkspaceService {
    /// Builds the service on its ports.
    pub fn new(
        workspaces: Arc<dyn WorkspaceRepository>,
        users: Arc<dyn UserRepository>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            workspaces,
            users,
            clock,
        }
    }

    /// The caller's workspace with its settings (every role may read them).
    pub async fn get(&self, caller: &Principal) -> DomainResult<(Workspace, WorkspaceSettings)> {
        workspace_and_settings(self.workspaces.as_ref(), caller.workspace_id).await
    }

    /// Applies `patch` to the caller's workspace (owners and admins; 403 for members, before
    /// anything is checked or written). A patch that changes nothing writes nothing.
    pub async fn update(
        &self,
        caller: &Principal,
        patch: &WorkspacePatch,
    ) -> DomainResult<(Workspace, WorkspaceSettings)> {
        caller.require_admin()?;
        for _ in 0..crate::writes::WRITE_ATTEMPTS {
            let before = self.get(caller).await?;
            let after = patch.apply(&before)?;
            if after == before {
                return Ok(before);
            }
            if self.workspaces.update(&before, &after).await? == WriteOutcome::Applied {
                return Ok(after);
            }
        }
        Err(crate::writes::kept_changing("workspace"))
    }

    /// `Ok` when the caller may change the catalog (clients, projects, tasks, tags); 403
    /// otherwise. The catalog's services check it themselves; the API asks first, so a refused
    /// member gets 403 whatever the body holds.
    pub async fn require_catalog(&self, caller: &Principal) -> DomainResult<()> {
        require_catalog(self.workspaces.as_ref(), caller).await
    }

    /// A page of the caller's workspace's members, the earliest to join first (every role).
    pub async fn members(
        &self,
        caller: &Principal,
        filter: &ListFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Member>> {
        self.users.members(caller.workspace_id, filter, page).await
    }

    /// Gives the member `user` `role`: owners and admins may, but only an owner makes or unmakes
    /// an owner (403), and the workspace keeps at least one owner (409). Not a member: 404. A role
    /// changed by someone else between the check and the change: 409, nothing changed.
    pub async fn set_role(
        &self,
        caller: &Principal,
        user: UserId,
        role: Role,
    ) -> DomainResult<Member> {
        caller.require_admin()?;
        let member = self
            .users
            .member(caller.workspace_id, user)
            .await?
            .ok_or(DomainError::NotFound("member"))?;
        caller.require_role_change(member.role, role)?;
        if member.role == role {
            return Ok(member);
        }
        // Made only if the role is still the one the permission was decided on.
        self.users
            .set_role(
                caller.workspace_id,
                user,
                Some(member.role),
                role,
                self.clock.now(),
            )
            .await
    }
}

/// The workspace `id` with its settings; `NotFound("workspace")` if there is none.
pub(crate) async fn workspace_and_settings(
    workspaces: &dyn WorkspaceRepository,
    id: crate::ids::WorkspaceId,
) -> DomainResult<(Workspace, WorkspaceSettings)> {
    workspaces
        .with_settings(id)
        .await?
        .ok_or(DomainError::NotFound("workspace"))
}

/// `Ok` when `caller` may change the catalog (clients, projects, tasks, tags): an admin always,
/// a member when the workspace's `members_manage_catalog` allows it; 403 otherwise.
pub(crate) async fn require_catalog(
    workspaces: &dyn WorkspaceRepository,
    caller: &Principal,
) -> DomainResult<()> {
    if caller.role.administers() {
        return Ok(());
    }
    let settings = workspaces
        .settings(caller.workspace_id)
        .await?
        .ok_or(DomainError::NotFound("workspace"))?;
    caller.require_catalog(&settings)
}
