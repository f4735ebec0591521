//! Webhook subscriptions: subscribe, list, delete, and the delivery log.

use std::sync::Arc;

use time::Duration;

use crate::error::{DomainError, DomainResult};
use crate::model::webhook::generate_secret;
use crate::model::{
    AuditEntry, DeliveryRecord, EventType, Principal, Subscription, SubscriptionStatus, WebhookId,
};
use crate::net::{RESOLVES_TO_PRIVATE, blocked_reason, parse_webhook_url};
use crate::ports::{Clock, HostResolver, RandomSource, SubscriptionRepository};

/// The published message for a URL that breaks a rule.
pub const INVALID_URL: &str = "Invalid URL format";
/// The published message for a missing URL or events list.
pub const REQUIRED: &str = "URL and events array are required";
/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 255;
/// How far back the delivery log reaches.
pub const DELIVERY_LOG_DAYS: i64 = 7;
/// Most deliveries one log request returns.
pub const DELIVERY_LOG_LIMIT: u32 = 1000;

/// Settings of the webhook rules.
#[derive(Debug, Clone, Copy)]
pub struct WebhookSettings {
    /// Lift the SSRF guard (tests and development only).
    pub allow_private_targets: bool,
    /// Most active subscriptions per workspace.
    pub max_active_per_workspace: u32,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            allow_private_targets: false,
            max_active_per_workspace: 100,
        }
    }
}

/// A subscribe request as received.
#[derive(Debug, Clone, Default)]
pub struct NewSubscription {
    /// Destination URL.
    pub url: String,
    /// Event names as sent.
    pub events: Vec<String>,
    /// Optional label.
    pub description: Option<String>,
}

/// Subscription operations for the caller's user and workspace.
#[derive(Clone)]
pub struct WebhookService {
    subscriptions: Arc<dyn SubscriptionRepository>,
    resolver: Arc<dyn HostResolver>,
    clock: Arc<dyn Clock>,
    random: Arc<dyn RandomSource>,
    settings: WebhookSettings,
}

impl std::fmt::Debug for WebhookService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookService")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl WebhookService {
    /// Builds the service on its ports.
    pub fn new(
        subscriptions: Arc<dyn SubscriptionRepository>,
        resolver: Arc<dyn HostResolver>,
        clock: Arc<dyn Clock>,
        random: Arc<dyn RandomSource>,
        settings: WebhookSettings,
    ) -> Self {
        Self {
            subscriptions,
            resolver,
            clock,
            random,
            settings,
        }
    }

    /// Creates an `ACTIVE` subscription owned by the caller's user and workspace.
    ///
    /// Validation errors carry the published messages: [`REQUIRED`] for no events,
    /// [`INVALID_URL`] for a URL that breaks a rule or whose host resolves to a blocked address,
    /// `Invalid event type: NAME` for an unknown event. A host that cannot be resolved now is
    /// accepted: every send checks again. `Conflict` at the workspace's cap.
    pub async fn subscribe(
        &self,
        caller: &Principal,
        new: NewSubscription,
    ) -> DomainResult<Subscription> {
        if new.events.is_empty() {
            return Err(DomainError::invalid(
                REQUIRED,
                "events must be a non-empty array of event names",
            ));
        }
        let allow_private = self.settings.allow_private_targets;
        let target = parse_webhook_url(&new.url, allow_private)
            .map_err(|problem| DomainError::invalid(INVALID_URL, problem))?;
        let mut events: Vec<EventType> = Vec::with_capacity(new.events.len());
        for name in &new.events {
            let event = EventType::parse(name)
                .ok_or_else(|| DomainError::validation(format!("Invalid event type: {name}")))?;
            if !events.contains(&event) {
                events.push(event);
            }
        }
        let description = new
            .description
            .map(|d| {
                crate::validate::no_nul("description", &d)?;
                if d.chars().count() > MAX_DESCRIPTION_CHARS {
                    return Err(DomainError::validation(format!(
                        "description must be at most {MAX_DESCRIPTION_CHARS} characters"
                    )));
                }
                Ok(d)
            })
            .transpose()?;
        if let (Some(host), false) = (target.domain(), allow_private)
            && let Ok(addresses) = self.resolver.resolve(host, target.port()).await
            && addresses.iter().any(|ip| blocked_reason(*ip).is_some())
        {
            return Err(DomainError::invalid(INVALID_URL, RESOLVES_TO_PRIVATE));
        }
        let now = self.clock.now();
        let subscription = Subscription {
            id: WebhookId::generate(self.random.as_ref()),
            workspace_id: caller.workspace_id,
            user_id: caller.user_id,
            api_key_id: caller.api_key_id,
            url: target.url,
            events,
            description,
            secret: generate_secret(self.random.as_ref()),
            status: SubscriptionStatus::Active,
            created_at: now,
            updated_at: now,
        };
        self.subscriptions
            .create(&subscription, self.settings.max_active_per_workspace)
            .await?;
        Ok(subscription)
    }

    /// The caller's workspace's subscriptions that are not deleted, newest first.
    pub async fn list(&self, caller: &Principal) -> DomainResult<Vec<Subscription>> {
        self.subscriptions.list(caller.workspace_id).await
    }

    /// Deletes the caller's own subscription at once: pending deliveries are cancelled and an
    /// audit row is written. Deleting one's already-deleted subscription succeeds again.
    ///
    /// `NotFound("webhook")` for an id that is malformed, unknown, or another user's (which is
    /// left untouched and not revealed).
    pub async fn delete(&self, caller: &Principal, raw_id: &str) -> DomainResult<()> {
        let subscription = self.owned(caller, raw_id).await?;
        if subscription.status == SubscriptionStatus::Deleted {
            return Ok(());
        }
        let audit = AuditEntry {
            workspace_id: Some(subscription.workspace_id),
            actor_user_id: Some(caller.user_id),
            action: "webhook.deleted",
            target_type: "webhook",
            target_id: subscription.id.to_string(),
            reason: Some("deleted by its owner".into()),
            at: self.clock.now(),
        };
        self.subscriptions.delete(&subscription.id, &audit).await
    }

    /// The last 7 days of deliveries of a subscription of the caller's workspace, newest first.
    /// `NotFound("webhook")` for another workspace's, an unknown or a deleted one (a disabled one
    /// keeps its log: it tells why it was disabled).
    pub async fn deliveries(
        &self,
        caller: &Principal,
        raw_id: &str,
    ) -> DomainResult<Vec<DeliveryRecord>> {
        let subscription = self
            .find(raw_id)
            .await?
            .filter(|s| {
                s.workspace_id == caller.workspace_id && s.status != SubscriptionStatus::Deleted
            })
            .ok_or(DomainError::NotFound("webhook"))?;
        let since = self.clock.now() - Duration::days(DELIVERY_LOG_DAYS);
        self.subscriptions
            .deliveries(&subscription.id, since, DELIVERY_LOG_LIMIT)
            .await
    }

    async fn find(&self, raw_id: &str) -> DomainResult<Option<Subscription>> {
        match WebhookId::parse(raw_id) {
            Some(id) => self.subscriptions.get(&id).await,
            None => Ok(None),
        }
    }

    async fn owned(&self, caller: &Principal, raw_id: &str) -> DomainResult<Subscription> {
        self.find(raw_id)
            .await?
            .filter(|s| s.workspace_id == caller.workspace_id && s.user_id == caller.user_id)
            .ok_or(DomainError::NotFound("webhook"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::EventId;
    use crate::testing::{TestWorld, run_ready};

    fn setup() -> (TestWorld, Principal) {
        let world = TestWorld::new();
        let (ws, user) = world.workspace_with_user();
        let (key, _) = run_ready(world.admin.create_api_key(user.id, ws.id, None)).unwrap();
        world.resolver.set("hooks.example.com", &["93.184.216.34"]);
        (world, key.principal())
    }

    fn new(url: &str, events: &[&str]) -> NewSubscription {
        NewSubscription {
            url: url.into(),
            events: events.iter().map(|e| (*e).to_owned()).collect(),
            description: None,
        }
    }

    fn validation(result: DomainResult<Subscription>) -> String {
        match result {
            Err(DomainError::Validation(message)) => message,
            Err(DomainError::Invalid { message, .. }) => message.to_owned(),
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn subscribe_creates_an_active_owned_subscription_with_deduplicated_events() {
        let (world, caller) = setup();
        let sub = run_ready(world.webhooks.subscribe(
            &caller,
            new(
                "https://hooks.example.com/h",
                &["TIMER_STOPPED", "CLIENT_CREATED", "TIMER_STOPPED"],
            ),
        ))
        .unwrap();
        assert_eq!(sub.status, SubscriptionStatus::Active);
        assert_eq!(
            sub.events,
            [EventType::TimerStopped, EventType::ClientCreated]
        );
        assert_eq!(
            (sub.workspace_id, sub.user_id, sub.api_key_id),
            (caller.workspace_id, caller.user_id, caller.api_key_id)
        );
        assert!(sub.id.as_str().starts_with("wh_") && sub.secret.starts_with("whsec_"));
        assert_eq!(run_ready(world.webhooks.list(&caller)).unwrap(), vec![sub]);
    }

    #[test]
    fn subscribe_refuses_with_the_published_messages() {
        let (world, caller) = setup();
        world
            .resolver
            .set("internal.example.com", &["93.184.216.34", "10.0.0.7"]);
        let s = |n: NewSubscription| validation(run_ready(world.webhooks.subscribe(&caller, n)));
        assert_eq!(s(new("https://hooks.example.com/h", &[])), REQUIRED);
        assert_eq!(
            s(new("http://hooks.example.com/h", &["CLIENT_CREATED"])),
            INVALID_URL
        );
        assert_eq!(
            s(new("https://127.0.0.1/h", &["CLIENT_CREATED"])),
            INVALID_URL
        );
        assert_eq!(
            s(new("https://internal.example.com/h", &["CLIENT_CREATED"])),
            INVALID_URL
        );
        assert_eq!(
            s(new(
                "https://hooks.example.com/h",
                &["CLIENT_CREATED", "client_created"]
            )),
            "Invalid event type: client_created"
        );
        let long = NewSubscription {
            description: Some("d".repeat(256)),
            ..new("https://hooks.example.com/h", &["CLIENT_CREATED"])
        };
        assert_eq!(s(long), "description must be at most 255 characters");
        assert!(run_ready(world.webhooks.list(&caller)).unwrap().is_empty());
    }

    #[test]
    fn an_unresolvable_host_is_accepted_because_every_send_checks_again() {
        let (world, caller) = setup();
        assert!(
            run_ready(world.webhooks.subscribe(
                &caller,
                new("https://not-yet.example.org/h", &["CLIENT_CREATED"])
            ))
            .is_ok()
        );
    }

    #[test]
    fn the_cap_counts_active_subscriptions_of_the_workspace() {
        let (world, caller) = setup();
        for _ in 0..100 {
            run_ready(world.webhooks.subscribe(
                &caller,
                new("https://hooks.example.com/h", &["CLIENT_CREATED"]),
            ))
            .unwrap();
        }
        let err = run_ready(world.webhooks.subscribe(
            &caller,
            new("https://hooks.example.com/h", &["CLIENT_CREATED"]),
        ))
        .unwrap_err();
        assert!(
            matches!(&err, DomainError::Conflict(m) if m == "Subscription limit reached"),
            "{err:?}"
        );
        let first = run_ready(world.webhooks.list(&caller))
            .unwrap()
            .pop()
            .unwrap();
        run_ready(world.webhooks.delete(&caller, first.id.as_str())).unwrap();
        assert!(
            run_ready(world.webhooks.subscribe(
                &caller,
                new("https://hooks.example.com/h", &["CLIENT_CREATED"])
            ))
            .is_ok()
        );
    }

    #[test]
    fn delete_is_owner_only_idempotent_audited_and_cancels_pending_deliveries() {
        let (world, caller) = setup();
        let sub = run_ready(world.webhooks.subscribe(
            &caller,
            new("https://hooks.example.com/h", &["CLIENT_CREATED"]),
        ))
        .unwrap();
        world.store.add_delivery(
            &sub.id,
            DeliveryRecord {
                event_id: EventId(uuid::Uuid::from_u128(1)),
                event_type: EventType::ClientCreated,
                status: "PENDING".into(),
                attempts: 0,
                last_status_code: None,
                last_error: None,
                next_attempt_at: world.clock.now(),
                created_at: world.clock.now(),
                updated_at: world.clock.now(),
            },
        );

        // Another user of the same workspace: not found, and nothing changes.
        let other_user = run_ready(world.admin.create_user(
            caller.workspace_id,
            "Eve",
            "eve@example.com",
        ))
        .unwrap();
        let (other_key, _) = run_ready(world.admin.create_api_key(
            other_user.id,
            caller.workspace_id,
            None,
        ))
        .unwrap();
        let err = run_ready(
            world
                .webhooks
                .delete(&other_key.principal(), sub.id.as_str()),
        )
        .unwrap_err();
        assert!(matches!(err, DomainError::NotFound("webhook")));
        assert_eq!(run_ready(world.webhooks.list(&caller)).unwrap().len(), 1);

        run_ready(world.webhooks.delete(&caller, sub.id.as_str())).unwrap();
        assert!(run_ready(world.webhooks.list(&caller)).unwrap().is_empty());
        assert_eq!(world.store.delivery_statuses(&sub.id), ["CANCELLED"]);
        // Its delivery log went with it.
        let err = run_ready(world.webhooks.deliveries(&caller, sub.id.as_str())).unwrap_err();
        assert!(matches!(err, DomainError::NotFound("webhook")));
        let audit = world.store.audit();
        assert_eq!(audit.len(), 1);
        assert_eq!(
            (
                audit[0].action,
                audit[0].target_id.as_str(),
                audit[0].actor_user_id
            ),
            ("webhook.deleted", sub.id.as_str(), Some(caller.user_id))
        );

        // Again: success, no second audit row.
        run_ready(world.webhooks.delete(&caller, sub.id.as_str())).unwrap();
        assert_eq!(world.store.audit().len(), 1);

        for unknown in ["wh_doesnotexist000000000", "not-an-id", ""] {
            assert!(matches!(
                run_ready(world.webhooks.delete(&caller, unknown)),
                Err(DomainError::NotFound("webhook"))
            ));
        }
    }
}
