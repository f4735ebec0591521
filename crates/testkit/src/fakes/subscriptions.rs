//! Webhook subscriptions.

use super::*;

impl InMemoryStore {
    /// As the port's `delete` and `disable` say: moves the subscription to `status` (with
    /// `reason`), cancels its pending deliveries and records `audit`; one already in `status`
    /// stays as it is; none, or a deleted one asked to change, is `NotFound("webhook")`.
    fn end(
        &self,
        id: &WebhookId,
        status: SubscriptionStatus,
        reason: Option<DisabledReason>,
        audit: &AuditEntry,
    ) -> DomainResult<()> {
        let mut t = self.tables();
        let subscription = t
            .subscriptions
            .iter_mut()
            .find(|s| &s.id == id)
            .ok_or(DomainError::NotFound("webhook"))?;
        if subscription.status == status {
            return Ok(());
        }
        if subscription.status == SubscriptionStatus::Deleted {
            return Err(DomainError::NotFound("webhook"));
        }
        subscription.status = status;
        subscription.disabled_reason = reason;
        subscription.updated_at = audit.at;
        for (sub, record) in &mut t.deliveries {
            if sub == id && record.status == DeliveryStatus::Pending {
                record.status = DeliveryStatus::Cancelled;
            }
        }
        t.audit.push(audit.clone());
        Ok(())
    }
}

#[async_trait]
impl SubscriptionRepository for InMemoryStore {
    async fn create(&self, subscription: &Subscription, max_active: u32) -> DomainResult<()> {
        let mut t = self.tables();
        let revoked = t
            .keys
            .get(&subscription.api_key_id)
            .is_some_and(|(key, _)| key.revoked_at.is_some());
        if revoked {
            return Err(DomainError::Unauthorized);
        }
        let active = t
            .subscriptions
            .iter()
            .filter(|s| {
                s.workspace_id == subscription.workspace_id
                    && s.status == SubscriptionStatus::Active
            })
            .count();
        if active >= max_active as usize {
            return Err(DomainError::Conflict("Subscription limit reached".into()));
        }
        t.subscriptions.push(subscription.clone());
        Ok(())
    }

    async fn get(&self, id: &WebhookId) -> DomainResult<Option<Subscription>> {
        Ok(self
            .tables()
            .subscriptions
            .iter()
            .find(|s| &s.id == id)
            .cloned())
    }

    async fn list(&self, workspace: WorkspaceId, user: UserId) -> DomainResult<Vec<Subscription>> {
        let mut found: Vec<Subscription> = self
            .tables()
            .subscriptions
            .iter()
            .filter(|s| {
                s.workspace_id == workspace
                    && s.user_id == user
                    && s.status != SubscriptionStatus::Deleted
            })
            .cloned()
            .collect();
        found.sort_by_key(|s| std::cmp::Reverse((s.created_at, s.id.to_string())));
        Ok(found)
    }

    async fn update(
        &self,
        id: &WebhookId,
        change: &SubscriptionChange,
        audit: &AuditEntry,
    ) -> DomainResult<Subscription> {
        let mut t = self.tables();
        let stored = t
            .subscriptions
            .iter_mut()
            .find(|s| &s.id == id && s.status != SubscriptionStatus::Deleted)
            .ok_or(DomainError::NotFound("webhook"))?;
        if let Some(url) = &change.url {
            stored.url.clone_from(url);
        }
        if let Some(events) = &change.events {
            stored.events.clone_from(events);
        }
        if let Some(description) = &change.description {
            stored.description.clone_from(description);
        }
        if let Some(filters) = &change.filters {
            stored.filters.clone_from(filters);
        }
        if let Some(headers) = &change.headers {
            stored.headers.clone_from(headers);
        }
        stored.updated_at = change.updated_at;
        let stored = stored.clone();
        t.audit.push(audit.clone());
        Ok(stored)
    }

    async fn enable(
        &self,
        id: &WebhookId,
        max_active: u32,
        audit: &AuditEntry,
    ) -> DomainResult<()> {
        let mut t = self.tables();
        let Some(found) = t
            .subscriptions
            .iter()
            .find(|s| &s.id == id && s.status != SubscriptionStatus::Deleted)
            .cloned()
        else {
            return Err(DomainError::NotFound("webhook"));
        };
        if found.status == SubscriptionStatus::Active {
            return Ok(());
        }
        if !t.key_live(found.api_key_id) {
            return Err(DomainError::Conflict("API key revoked".into()));
        }
        let active = t
            .subscriptions
            .iter()
            .filter(|s| {
                s.workspace_id == found.workspace_id && s.status == SubscriptionStatus::Active
            })
            .count();
        if active >= max_active as usize {
            return Err(DomainError::Conflict("Subscription limit reached".into()));
        }
        if let Some(stored) = t.subscriptions.iter_mut().find(|s| &s.id == id) {
            stored.status = SubscriptionStatus::Active;
            stored.disabled_reason = None;
            stored.updated_at = audit.at;
        }
        t.audit.push(audit.clone());
        Ok(())
    }

    /// The fake keeps no attempts: 24 empty hours.
    async fn hourly_stats(
        &self,
        _id: &WebhookId,
        now: OffsetDateTime,
    ) -> DomainResult<Vec<HourlyStats>> {
        let hour = now
            .replace_minute(0)
            .and_then(|t| t.replace_second(0))
            .and_then(|t| t.replace_nanosecond(0))
            .map_err(|e| DomainError::Unexpected(std::io::Error::other(e).into()))?;
        Ok((0..24)
            .rev()
            .map(|back| HourlyStats {
                start: hour - Duration::hours(back),
                delivered: 0,
                failed: 0,
                p50_ms: None,
                p95_ms: None,
            })
            .collect())
    }

    /// The fake keeps delivery records but no attempts: it knows the pending deliveries and
    /// reports no attempt.
    async fn attempt_summary(&self, id: &WebhookId) -> DomainResult<AttemptSummary> {
        let pending = self
            .tables()
            .deliveries
            .iter()
            .filter(|(sub, record)| sub == id && record.status == DeliveryStatus::Pending)
            .count();
        Ok(AttemptSummary {
            pending_deliveries: pending as u64,
            ..AttemptSummary::default()
        })
    }

    async fn delete(&self, id: &WebhookId, audit: &AuditEntry) -> DomainResult<()> {
        self.end(id, SubscriptionStatus::Deleted, None, audit)
    }

    async fn disable(&self, id: &WebhookId, audit: &AuditEntry) -> DomainResult<()> {
        let reason = Some(DisabledReason::Manual);
        self.end(id, SubscriptionStatus::Disabled, reason, audit)
    }

    async fn filter_id_outside(
        &self,
        workspace: WorkspaceId,
        filters: &SubscriptionFilters,
    ) -> DomainResult<Option<(&'static str, Uuid)>> {
        let t = self.tables();
        let projects = filters
            .project_ids
            .iter()
            .flatten()
            .map(|p| ("project_ids", p.0));
        let clients = filters
            .client_ids
            .iter()
            .flatten()
            .map(|c| ("client_ids", c.0));
        let users = filters.user_ids.iter().flatten().map(|u| ("user_ids", u.0));
        Ok(projects.chain(clients).chain(users).find(|(name, id)| {
            let known = match *name {
                "project_ids" => t
                    .projects
                    .iter()
                    .any(|p| p.id.0 == *id && p.workspace_id == workspace),
                "client_ids" => t
                    .clients
                    .iter()
                    .any(|c| c.id.0 == *id && c.workspace_id == workspace),
                _ => t
                    .memberships
                    .iter()
                    .any(|m| m.workspace == workspace && m.user.0 == *id),
            };
            !known
        }))
    }

    async fn rotate_secret(
        &self,
        id: &WebhookId,
        secret: &str,
        previous_expires_at: OffsetDateTime,
        audit: &AuditEntry,
    ) -> DomainResult<()> {
        let mut t = self.tables();
        let stored = t
            .subscriptions
            .iter_mut()
            .find(|s| &s.id == id && s.status != SubscriptionStatus::Deleted)
            .ok_or(DomainError::NotFound("webhook"))?;
        let previous = std::mem::replace(&mut stored.secret, secret.to_owned());
        stored.previous_secret_expires_at =
            (previous_expires_at > audit.at).then_some(previous_expires_at);
        stored.updated_at = audit.at;
        t.previous_secrets.insert(id.clone(), previous);
        t.audit.push(audit.clone());
        Ok(())
    }
}
