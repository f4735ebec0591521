//! Workspaces, users and API keys.

use super::*;

#[async_trait]
impl WorkspaceRepository for InMemoryStore {
    async fn create(&self, workspace: &Workspace) -> DomainResult<()> {
        let mut t = self.tables();
        if t.workspaces.contains_key(&workspace.id) {
            return Err(DomainError::Conflict("workspace exists".into()));
        }
        t.workspaces.insert(workspace.id, workspace.clone());
        t.settings
            .insert(workspace.id, WorkspaceSettings::default());
        Ok(())
    }

    async fn get(&self, id: WorkspaceId) -> DomainResult<Option<Workspace>> {
        Ok(self.tables().workspaces.get(&id).cloned())
    }

    async fn settings(&self, id: WorkspaceId) -> DomainResult<Option<WorkspaceSettings>> {
        Ok(self.tables().settings.get(&id).cloned())
    }

    async fn update(
        &self,
        before: &(Workspace, WorkspaceSettings),
        after: &(Workspace, WorkspaceSettings),
    ) -> DomainResult<WriteOutcome> {
        let mut t = self.tables();
        let id = before.0.id;
        let stored = (t.workspaces.get(&id).cloned(), t.settings.get(&id).cloned());
        if stored != (Some(before.0.clone()), Some(before.1.clone())) {
            return Ok(WriteOutcome::Raced);
        }
        t.workspaces.insert(id, after.0.clone());
        t.settings.insert(id, after.1.clone());
        if before.0.timezone != after.0.timezone
            || before.0.currency != after.0.currency
            || before.1.lock_before != after.1.lock_before
        {
            t.reprice(id, |_, _| true);
        }
        Ok(WriteOutcome::Applied)
    }
}

impl Tables {
    /// The role a new member of `workspace` gets when `role` is asked: owner for the first.
    fn role_of_newcomer(&self, workspace: WorkspaceId, role: Role) -> Role {
        if self.memberships.iter().any(|m| m.workspace == workspace) {
            role
        } else {
            Role::Owner
        }
    }

    fn member_of(&self, membership: &Membership) -> Option<Member> {
        let user = self.users.get(&membership.user)?;
        Some(Member {
            id: user.id,
            name: user.name.clone(),
            email: user.email.clone(),
            role: membership.role,
            joined_at: membership.at,
            updated_at: membership.updated_at,
        })
    }
}

#[async_trait]
impl UserRepository for InMemoryStore {
    async fn create_member(
        &self,
        user: &User,
        workspace: WorkspaceId,
        role: Role,
        at: OffsetDateTime,
    ) -> DomainResult<Role> {
        let mut t = self.tables();
        if !t.workspaces.contains_key(&workspace) {
            return Err(DomainError::NotFound("workspace"));
        }
        let email = user.email.to_lowercase();
        if t.users.values().any(|u| u.email.to_lowercase() == email) {
            return Err(DomainError::Conflict("e-mail already in use".into()));
        }
        let role = t.role_of_newcomer(workspace, role);
        t.users.insert(user.id, user.clone());
        t.memberships.push(Membership {
            workspace,
            user: user.id,
            role,
            at,
            updated_at: at,
        });
        Ok(role)
    }

    async fn add_membership(
        &self,
        user: UserId,
        workspace: WorkspaceId,
        role: Role,
        at: OffsetDateTime,
    ) -> DomainResult<Role> {
        let mut t = self.tables();
        if !t.workspaces.contains_key(&workspace) {
            return Err(DomainError::NotFound("workspace"));
        }
        if t.is_member(workspace, user) {
            return Err(DomainError::Conflict(
                "user is already a member of the workspace".into(),
            ));
        }
        let role = t.role_of_newcomer(workspace, role);
        t.memberships.push(Membership {
            workspace,
            user,
            role,
            at,
            updated_at: at,
        });
        Ok(role)
    }

    async fn members(
        &self,
        workspace: WorkspaceId,
        filter: &ListFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Member>> {
        let t = self.tables();
        let mut members: Vec<Member> = t
            .memberships
            .iter()
            .filter(|m| m.workspace == workspace)
            .filter_map(|m| t.member_of(m))
            .filter(|m| {
                filter.admits(&m.name, m.updated_at) || filter.admits(&m.email, m.updated_at)
            })
            .filter(|m| {
                page.after
                    .is_none_or(|c| (m.joined_at, m.id.0) > (c.created_at, c.id))
            })
            .collect();
        members.sort_by_key(|m| (m.joined_at, m.id.0));
        members.truncate(page.limit as usize + 1);
        Ok(Page::from_overfetch(members, page.limit, |m| Cursor {
            created_at: m.joined_at,
            id: m.id.0,
        }))
    }

    async fn member(&self, workspace: WorkspaceId, user: UserId) -> DomainResult<Option<Member>> {
        let t = self.tables();
        Ok(t.memberships
            .iter()
            .find(|m| m.workspace == workspace && m.user == user)
            .and_then(|m| t.member_of(m)))
    }

    async fn set_role(
        &self,
        workspace: WorkspaceId,
        user: UserId,
        expected: Option<Role>,
        role: Role,
        at: OffsetDateTime,
    ) -> DomainResult<Member> {
        let mut t = self.tables();
        let owners = t
            .memberships
            .iter()
            .filter(|m| m.workspace == workspace && m.role == Role::Owner)
            .count();
        let membership = t
            .memberships
            .iter_mut()
            .find(|m| m.workspace == workspace && m.user == user)
            .ok_or(DomainError::NotFound("member"))?;
        if expected.is_some_and(|e| e != membership.role) {
            return Err(DomainError::Conflict(ROLE_CHANGED.into()));
        }
        if membership.role == Role::Owner && role != Role::Owner && owners <= 1 {
            return Err(DomainError::Conflict(LAST_OWNER.into()));
        }
        membership.role = role;
        membership.updated_at = at;
        let membership = membership.clone();
        t.member_of(&membership)
            .ok_or(DomainError::NotFound("member"))
    }

    async fn find_by_email(&self, email: &str) -> DomainResult<Option<User>> {
        let email = email.to_lowercase();
        Ok(self
            .tables()
            .users
            .values()
            .find(|u| u.email.to_lowercase() == email)
            .cloned())
    }

    async fn get(&self, id: UserId) -> DomainResult<Option<User>> {
        Ok(self.tables().users.get(&id).cloned())
    }
}

#[async_trait]
impl ApiKeyRepository for InMemoryStore {
    async fn create(&self, key: &ApiKey, hash: &KeyHash) -> DomainResult<()> {
        let mut t = self.tables();
        if !t.is_member(key.workspace_id, key.user_id) {
            return Err(DomainError::NotFound("membership"));
        }
        t.keys.insert(key.id, (key.clone(), *hash));
        Ok(())
    }

    async fn find_active_by_hash(&self, hash: &KeyHash) -> DomainResult<Option<(ApiKey, Role)>> {
        let t = self.tables();
        Ok(t.keys
            .values()
            .find(|(k, h)| h == hash && k.revoked_at.is_none())
            .and_then(|(k, _)| {
                let membership = t
                    .memberships
                    .iter()
                    .find(|m| m.workspace == k.workspace_id && m.user == k.user_id)?;
                Some((k.clone(), membership.role))
            }))
    }

    async fn active_hashes(&self) -> DomainResult<Vec<KeyHash>> {
        Ok(self
            .tables()
            .keys
            .values()
            .filter(|(k, _)| k.revoked_at.is_none())
            .map(|(_, h)| *h)
            .collect())
    }

    async fn record_use(&self, id: ApiKeyId, at: OffsetDateTime) -> DomainResult<()> {
        if let Some((key, _)) = self.tables().keys.get_mut(&id) {
            key.last_used_at = Some(at);
        }
        Ok(())
    }

    async fn revoke(&self, id: ApiKeyId, at: OffsetDateTime) -> DomainResult<ApiKey> {
        let mut t = self.tables();
        let (key, _) = t
            .keys
            .get_mut(&id)
            .ok_or(DomainError::NotFound("api key"))?;
        key.revoked_at.get_or_insert(at);
        let key = key.clone();
        // As the port says: the key's active subscriptions are disabled, and their pending
        // deliveries cancelled, with the revocation.
        disable_webhooks_of(&mut t, &[id], at);
        Ok(key)
    }

    async fn get(&self, id: ApiKeyId) -> DomainResult<Option<ApiKey>> {
        Ok(self.tables().keys.get(&id).map(|(k, _)| k.clone()))
    }

    async fn list(
        &self,
        workspace: WorkspaceId,
        user: Option<UserId>,
    ) -> DomainResult<Vec<ApiKey>> {
        let mut keys: Vec<ApiKey> = self
            .tables()
            .keys
            .values()
            .map(|(k, _)| k.clone())
            .filter(|k| k.workspace_id == workspace && user.is_none_or(|u| k.user_id == u))
            .collect();
        keys.sort_by_key(|k| std::cmp::Reverse((k.created_at, k.id.0)));
        Ok(keys)
    }

    async fn disable_webhooks_of_expired(&self, now: OffsetDateTime) -> DomainResult<u64> {
        let mut t = self.tables();
        let expired: Vec<ApiKeyId> = t
            .keys
            .values()
            .filter(|(k, _)| k.expired_at(now))
            .map(|(k, _)| k.id)
            .collect();
        Ok(disable_webhooks_of(&mut t, &expired, now))
    }
}

/// Disables the active subscriptions of `keys` (reason `key_revoked`) and cancels their pending
/// deliveries; how many it disabled.
fn disable_webhooks_of(t: &mut Tables, keys: &[ApiKeyId], at: OffsetDateTime) -> u64 {
    let mut disabled = Vec::new();
    for subscription in t
        .subscriptions
        .iter_mut()
        .filter(|s| keys.contains(&s.api_key_id) && s.status == SubscriptionStatus::Active)
    {
        subscription.status = SubscriptionStatus::Disabled;
        subscription.disabled_reason = Some(DisabledReason::KeyRevoked);
        subscription.updated_at = at;
        disabled.push(subscription.id.clone());
    }
    for (subscription, record) in &mut t.deliveries {
        if disabled.contains(subscription) && record.status == DeliveryStatus::Pending {
            record.status = DeliveryStatus::Cancelled;
        }
    }
    disabled.len() as u64
}
