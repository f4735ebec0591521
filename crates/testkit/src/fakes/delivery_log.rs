//! The delivery log and the deliveries queued again on request.

use super::*;

/// The fake keeps no attempts: a delivery's detail lists none.
#[async_trait]
impl DeliveryLog for InMemoryStore {
    async fn deliveries(
        &self,
        id: &WebhookId,
        query: &DeliveryQuery,
    ) -> DomainResult<Vec<DeliveryRecord>> {
        let t = self.tables();
        // A delivery's ordering key is its event's.
        let about = |event: EventId| {
            t.events
                .iter()
                .find(|e| e.id == event)
                .map(|e| &e.ordering_key)
        };
        let mut found: Vec<DeliveryRecord> = t
            .deliveries
            .iter()
            .filter(|(sub, r)| {
                sub == id
                    && r.created_at >= query.since
                    && query.status.is_none_or(|s| r.status == s)
                    && query.event_type.is_none_or(|t| r.event_type == t)
                    && query.event_id.is_none_or(|e| r.event_id == e)
                    && query
                        .entity_id
                        .as_ref()
                        .is_none_or(|key| about(r.event_id) == Some(key))
                    && query.before.is_none_or(|b| r.id < b)
            })
            .map(|(_, r)| r.clone())
            .collect();
        found.sort_by_key(|r| std::cmp::Reverse(r.id));
        found.truncate(query.limit as usize);
        Ok(found)
    }

    async fn event_deliveries(
        &self,
        workspace: WorkspaceId,
        user: UserId,
        event: EventId,
        limit: u32,
    ) -> DomainResult<Option<(EventType, Vec<(WebhookId, DeliveryRecord)>)>> {
        let t = self.tables();
        let Some(shown) = t.events.iter().find(|e| {
            e.id == event
                && e.workspace_id == workspace
                && t.placed
                    .get(&e.id)
                    .is_none_or(|(_, visible_to)| visible_to.is_none_or(|owner| owner == user))
        }) else {
            return Ok(None);
        };
        let mut found: Vec<(WebhookId, DeliveryRecord)> = t
            .deliveries
            .iter()
            .filter(|(sub, r)| {
                r.event_id == event
                    && t.subscriptions.iter().any(|s| {
                        &s.id == sub && s.user_id == user && s.status != SubscriptionStatus::Deleted
                    })
            })
            .map(|(sub, r)| (sub.clone(), r.clone()))
            .collect();
        found.sort_by_key(|(_, r)| std::cmp::Reverse(r.id));
        found.truncate(limit as usize);
        Ok(Some((shown.event_type, found)))
    }

    async fn delivery(
        &self,
        id: &WebhookId,
        delivery: DeliveryId,
    ) -> DomainResult<Option<DeliveryDetail>> {
        let t = self.tables();
        Ok(t.deliveries
            .iter()
            .find(|(sub, r)| sub == id && r.id == delivery)
            .map(|(_, r)| {
                let (ordering_key, sequence) = t.sent_order(r.event_id);
                DeliveryDetail {
                    record: r.clone(),
                    payload: t
                        .events
                        .iter()
                        .find(|e| e.id == r.event_id)
                        .map(|e| e.body.clone())
                        .unwrap_or_default(),
                    attempts: Vec::new(),
                    ordering_key,
                    sequence,
                }
            }))
    }

    async fn queue_test(
        &self,
        id: &WebhookId,
        event: &Event,
        sent_as: Option<EventType>,
    ) -> DomainResult<DeliveryRecord> {
        let mut t = self.tables();
        let subscription = t
            .live_subscription(id)
            .ok_or(DomainError::NotFound("webhook"))?;
        if !t.key_live(subscription.api_key_id) {
            return Err(DomainError::Conflict("API key revoked".into()));
        }
        let owner = subscription.user_id;
        if let Some(sent_as) = sent_as {
            t.sent_as.insert(event.id, sent_as);
        }
        t.place(std::slice::from_ref(event), Some(owner));
        t.events.push(event.clone());
        Ok(t.queue(id, event, DeliveryKind::Test, event.created_at))
    }

    async fn resend(
        &self,
        id: &WebhookId,
        delivery: DeliveryId,
        at: OffsetDateTime,
    ) -> DomainResult<DeliveryRecord> {
        let mut t = self.tables();
        let subscription = t
            .live_subscription(id)
            .ok_or(DomainError::NotFound("webhook"))?;
        let active = subscription.status == SubscriptionStatus::Active;
        let event = t
            .deliveries
            .iter()
            .find(|(sub, r)| sub == id && r.id == delivery)
            .and_then(|(_, r)| t.events.iter().find(|e| e.id == r.event_id))
            .cloned()
            .ok_or(DomainError::NotFound("delivery"))?;
        if !active {
            return Err(DomainError::Conflict("Webhook is disabled".into()));
        }
        Ok(t.queue(id, &event, DeliveryKind::Resend, at))
    }

    async fn requeued_since(
        &self,
        workspace: WorkspaceId,
        user: UserId,
        since: OffsetDateTime,
    ) -> DomainResult<Vec<OffsetDateTime>> {
        let t = self.tables();
        let mine = |id: &WebhookId| {
            t.subscriptions
                .iter()
                .any(|s| &s.id == id && s.workspace_id == workspace && s.user_id == user)
        };
        let mut created: Vec<OffsetDateTime> = t
            .deliveries
            .iter()
            .filter(|(sub, r)| r.kind != DeliveryKind::Event && r.created_at >= since && mine(sub))
            .map(|(_, r)| r.created_at)
            .collect();
        created.sort();
        Ok(created)
    }

    async fn replay(&self, id: &WebhookId, window: &ReplayWindow) -> DomainResult<ReplayOutcome> {
        let mut t = self.tables();
        let subscription = t
            .live_subscription(id)
            .cloned()
            .ok_or(DomainError::NotFound("webhook"))?;
        if subscription.status != SubscriptionStatus::Active {
            return Err(DomainError::Conflict("Webhook is disabled".into()));
        }
        let received = |t: &Tables, event: &Event| {
            t.deliveries.iter().any(|(sub, r)| {
                sub == id
                    && r.event_id == event.id
                    && matches!(
                        r.status,
                        DeliveryStatus::Delivered | DeliveryStatus::Pending
                    )
            })
        };
        let mut candidates: Vec<Event> = t
            .events
            .iter()
            .filter(|e| {
                e.workspace_id == subscription.workspace_id
                    && e.created_at >= window.since
                    && e.created_at < window.until
                    && subscription.events.contains(&e.event_type)
                    && subscription.filters.matches(&e.subject)
                    && !(window.only_failed && e.created_at < subscription.created_at)
                    && !(window.only_failed && received(&t, e))
            })
            .cloned()
            .collect();
        candidates.sort_by_key(|e| (e.created_at, e.id));
        let times: Vec<OffsetDateTime> = candidates.iter().map(|e| e.created_at).collect();
        let (take, next_since) = window.cut(&times);
        candidates.truncate(take);
        for event in &candidates {
            t.queue(id, event, DeliveryKind::Replay, window.at);
        }
        Ok(ReplayOutcome {
            queued: candidates.len() as u64,
            truncated: next_since.is_some(),
            next_since,
        })
    }
}
