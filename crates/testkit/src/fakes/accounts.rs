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
        Ok(())
    }

    async fn get(&self, id: WorkspaceId) -> DomainResult<Option<Workspace>> {
        Ok(self.tables().workspaces.get(&id).cloned())
    }
}

#[async_trait]
impl UserRepository for InMemoryStore {
    async fn create_member(
        &self,
        user: &User,
        workspace: WorkspaceId,
        _at: OffsetDateTime,
    ) -> DomainResult<()> {
        let mut t = self.tables();
        if !t.workspaces.contains_key(&workspace) {
            return Err(DomainError::NotFound("workspace"));
        }
        let email = user.email.to_lowercase();
        if t.users.values().any(|u| u.email.to_lowercase() == email) {
            return Err(DomainError::Conflict("e-mail already in use".into()));
        }
        t.users.insert(user.id, user.clone());
        t.memberships.push((workspace, user.id));
        Ok(())
    }

    async fn add_membership(
        &self,
        user: UserId,
        workspace: WorkspaceId,
        _at: OffsetDateTime,
    ) -> DomainResult<()> {
        let mut t = self.tables();
        if !t.workspaces.contains_key(&workspace) {
            return Err(DomainError::NotFound("workspace"));
        }
        if t.memberships.contains(&(workspace, user)) {
            return Err(DomainError::Conflict(
                "user is already a member of the workspace".into(),
            ));
        }
        t.memberships.push((workspace, user));
        Ok(())
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
        if !t.memberships.contains(&(key.workspace_id, key.user_id)) {
            return Err(DomainError::NotFound("membership"));
        }
        t.keys.insert(key.id, (key.clone(), *hash));
        Ok(())
    }

    async fn find_active_by_hash(&self, hash: &KeyHash) -> DomainResult<Option<ApiKey>> {
        Ok(self
            .tables()
            .keys
            .values()
            .find(|(k, h)| h == hash && k.revoked_at.is_none())
            .map(|(k, _)| k.clone()))
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
        let mut disabled = Vec::new();
        for subscription in t
            .subscriptions
            .iter_mut()
            .filter(|s| s.api_key_id == id && s.status == SubscriptionStatus::Active)
        {
            subscription.status = SubscriptionStatus::Disabled;
            subscription.updated_at = at;
            disabled.push(subscription.id.clone());
        }
        for (subscription, record) in &mut t.deliveries {
            if disabled.contains(subscription) && record.status == DeliveryStatus::Pending {
                record.status = DeliveryStatus::Cancelled;
            }
        }
        Ok(key)
    }
}
