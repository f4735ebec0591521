//! Roles in a workspace, and every rule of who may do what, in one place.
//!
//! A member manages their own time entries (another member's may be read, not changed), their own
//! webhooks, and the catalog unless the workspace says otherwise; admins and owners manage every
//! entry, the members' roles (an admin cannot make or unmake an owner) and the workspace's
//! settings. Who sees money is decided here too ([`Principal::sees_billable_rates`],
//! [`Principal::sees_cost_rates`]): every answer that carries an amount asks these, so no path
//! can forget the rule.

use serde::Serialize;
use time::OffsetDateTime;

use crate::accounts::model::{Principal, WorkspaceSettings};
use crate::error::{DomainError, DomainResult};
use crate::ids::UserId;

/// A membership's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Everything an admin may do, and making or unmaking owners. A workspace keeps at least one.
    Owner,
    /// Every entry, the catalog, the members' roles (owners excepted), settings and rates.
    Admin,
    /// Their own entries and webhooks, and the catalog when the workspace allows it.
    Member,
}

impl Role {
    /// Every role, most powerful first.
    pub const ALL: [Role; 3] = [Role::Owner, Role::Admin, Role::Member];

    /// The role as the API and the database spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Admin => "admin",
            Role::Member => "member",
        }
    }

    /// The role spelled `value`; a 400 naming the choices otherwise.
    pub fn parse(value: &str) -> DomainResult<Self> {
        Self::ALL
            .into_iter()
            .find(|role| role.as_str() == value)
            .ok_or_else(|| {
                DomainError::validation(format!(
                    "role must be one of owner, admin, member, got: {value}"
                ))
            })
    }

    /// Whether this role administers the workspace (owners and admins).
    pub fn administers(self) -> bool {
        matches!(self, Role::Owner | Role::Admin)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A person's membership of a workspace, as `GET /api/members` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The user.
    pub id: UserId,
    /// Their display name.
    pub name: String,
    /// Their e-mail address.
    pub email: String,
    /// Their role in this workspace.
    pub role: Role,
    /// When they joined the workspace (the list's order).
    pub joined_at: OffsetDateTime,
    /// When the membership last changed (joined, or its role changed).
    pub updated_at: OffsetDateTime,
}

impl Principal {
    /// `Ok` for owners and admins; 403 for members.
    pub fn require_admin(&self) -> DomainResult<()> {
        if self.role.administers() {
            Ok(())
        } else {
            Err(DomainError::Forbidden)
        }
    }

    /// Whether the caller may change or delete an entry of `owner`: their own, or any as an admin.
    pub fn may_change_entry_of(&self, owner: UserId) -> bool {
        owner == self.user_id || self.role.administers()
    }

    /// `Ok` when the caller may create, change or delete clients, projects, tasks and tags.
    pub fn require_catalog(&self, settings: &WorkspaceSettings) -> DomainResult<()> {
        if self.role.administers() || settings.members_manage_catalog {
            Ok(())
        } else {
            Err(DomainError::Forbidden)
        }
    }

    /// Whether the caller may see billable rates and amounts: admins and owners always, members
    /// when the workspace's `members_see_rates` says so.
    pub fn sees_billable_rates(&self, settings: &WorkspaceSettings) -> bool {
        self.role.administers() || settings.members_see_rates
    }

    /// Whether the caller may see cost rates and amounts: admins and owners only.
    pub fn sees_cost_rates(&self) -> bool {
        self.role.administers()
    }

    /// Whether the caller may change `target`'s role (now `current`) to `wanted`: admins and
    /// owners may, but only an owner makes or unmakes an owner. Whether an owner remains is
    /// storage's check, under a lock.
    pub fn require_role_change(&self, current: Role, wanted: Role) -> DomainResult<()> {
        self.require_admin()?;
        let touches_owner = current == Role::Owner || wanted == Role::Owner;
        if touches_owner && self.role != Role::Owner {
            return Err(DomainError::Forbidden);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{ApiKeyId, WorkspaceId};
    use uuid::Uuid;

    fn caller(role: Role) -> Principal {
        Principal {
            api_key_id: ApiKeyId(Uuid::from_u128(1)),
            user_id: UserId(Uuid::from_u128(2)),
            workspace_id: WorkspaceId(Uuid::from_u128(3)),
            role,
            scopes: crate::accounts::model::Scopes::ALL,
        }
    }

    #[test]
    fn roles_round_trip_and_an_unknown_one_names_the_choices() {
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()).unwrap(), role);
        }
        let err = Role::parse("Owner").unwrap_err().to_string();
        assert_eq!(err, "role must be one of owner, admin, member, got: Owner");
    }

    #[test]
    fn a_member_changes_only_their_own_entries() {
        let other = UserId(Uuid::from_u128(9));
        let member = caller(Role::Member);
        assert!(member.may_change_entry_of(member.user_id));
        assert!(!member.may_change_entry_of(other));
        assert!(caller(Role::Admin).may_change_entry_of(other));
        assert!(caller(Role::Owner).may_change_entry_of(other));
    }

    #[test]
    fn the_catalog_is_the_members_unless_the_workspace_says_otherwise() {
        let mut settings = WorkspaceSettings::default();
        assert!(caller(Role::Member).require_catalog(&settings).is_ok());
        settings.members_manage_catalog = false;
        assert!(matches!(
            caller(Role::Member).require_catalog(&settings),
            Err(DomainError::Forbidden)
        ));
        assert!(caller(Role::Admin).require_catalog(&settings).is_ok());
    }

    #[test]
    fn money_is_seen_by_admins_and_by_members_only_when_allowed_and_never_cost() {
        let mut settings = WorkspaceSettings::default();
        let member = caller(Role::Member);
        assert!(!member.sees_billable_rates(&settings));
        settings.members_see_rates = true;
        assert!(member.sees_billable_rates(&settings));
        assert!(!member.sees_cost_rates());
        assert!(caller(Role::Admin).sees_cost_rates());
        assert!(caller(Role::Owner).sees_billable_rates(&WorkspaceSettings::default()));
    }

    #[test]
    fn only_an_owner_makes_or_unmakes_an_owner() {
        let admin = caller(Role::Admin);
        assert!(admin.require_role_change(Role::Member, Role::Admin).is_ok());
        assert!(admin.require_role_change(Role::Admin, Role::Member).is_ok());
        assert!(
            admin
                .require_role_change(Role::Member, Role::Owner)
                .is_err()
        );
        assert!(admin.require_role_change(Role::Owner, Role::Admin).is_err());
        let owner = caller(Role::Owner);
        assert!(owner.require_role_change(Role::Owner, Role::Member).is_ok());
        assert!(
            caller(Role::Member)
                .require_role_change(Role::Member, Role::Member)
                .is_err()
        );
    }
}
