//! Webhook subscriptions: subscribe, list, delete, and the delivery log.

use std::sync::Arc;

use time::Duration;

use crate::error::{DomainError, DomainResult};
use crate::model::webhook::generate_secret;
use crate::model::{
    AuditEntry, DeliveryRecord, EventType, HourlyStats, Principal, Subscription,
    SubscriptionChange, SubscriptionStatus, WebhookHealth, WebhookId,
};
use crate::net::{RESOLVES_TO_PRIVATE, WebhookTarget, blocked_reason, parse_webhook_url};
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

/// A change to a subscription as received: each field set is changed; `description:
/// Some(None)` clears it.
#[derive(Debug, Clone, Default)]
pub struct WebhookChange {
    /// New destination URL.
    pub url: Option<String>,
    /// New event names (not empty).
    pub events: Option<Vec<String>>,
    /// New label, or `Some(None)` to clear it.
    pub description: Option<Option<String>>,
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
        let target = self.parsed_url(&new.url)?;
        let events = parse_events(&new.events)?;
        let description = checked_description(new.description)?;
        self.refuse_private_resolution(&target).await?;
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

    /// The caller's own subscriptions in their workspace that are not deleted, newest first,
    /// each with its health. Only the caller's: a hook URL is a capability, which other members
    /// must not see.
    pub async fn list(
        &self,
        caller: &Principal,
    ) -> DomainResult<Vec<(Subscription, WebhookHealth)>> {
        let subscriptions = self
            .subscriptions
            .list(caller.workspace_id, caller.user_id)
            .await?;
        let mut listed = Vec::with_capacity(subscriptions.len());
        for subscription in subscriptions {
            let attempts = self.subscriptions.attempt_summary(&subscription.id).await?;
            let health = WebhookHealth::of(&subscription, attempts);
            listed.push((subscription, health));
        }
        Ok(listed)
    }

    /// The caller's own subscription `raw_id` with its health. `NotFound("webhook")` for an id
    /// that is malformed, unknown, deleted, or another user's.
    pub async fn get(
        &self,
        caller: &Principal,
        raw_id: &str,
    ) -> DomainResult<(Subscription, WebhookHealth)> {
        let subscription = self.live(caller, raw_id).await?;
        let attempts = self.subscriptions.attempt_summary(&subscription.id).await?;
        let health = WebhookHealth::of(&subscription, attempts);
        Ok((subscription, health))
    }

    /// Changes the caller's own subscription `raw_id`: the fields `change` sets, checked as
    /// subscribe checks them (same messages). A change is audited with the fields it names; a
    /// change that names none changes nothing. New `events` apply to events recorded after it,
    /// a new `url` to every later attempt, retries already queued included.
    ///
    /// `NotFound("webhook")` as for [`get`](Self::get).
    pub async fn update(
        &self,
        caller: &Principal,
        raw_id: &str,
        change: WebhookChange,
    ) -> DomainResult<(Subscription, WebhookHealth)> {
        let subscription = self.live(caller, raw_id).await?;
        if change.events.as_ref().is_some_and(Vec::is_empty) {
            return Err(DomainError::invalid(
                REQUIRED,
                "events must be a non-empty array of event names",
            ));
        }
        // In subscribe's order: the URL's rules, the events, the description, and only then
        // where the URL's host resolves.
        let target = change
            .url
            .as_deref()
            .map(|u| self.parsed_url(u))
            .transpose()?;
        let events = change.events.as_deref().map(parse_events).transpose()?;
        let description = change.description.map(checked_description).transpose()?;
        if let Some(target) = &target {
            self.refuse_private_resolution(target).await?;
        }
        let change = SubscriptionChange {
            url: target.map(|t| t.url),
            events,
            description,
            updated_at: self.clock.now(),
        };
        let fields = change.fields();
        if fields.is_empty() {
            let attempts = self.subscriptions.attempt_summary(&subscription.id).await?;
            let health = WebhookHealth::of(&subscription, attempts);
            return Ok((subscription, health));
        }
        let audit = AuditEntry {
            workspace_id: Some(subscription.workspace_id),
            actor_user_id: Some(caller.user_id),
            action: "webhook.updated",
            target_type: "webhook",
            target_id: subscription.id.to_string(),
            reason: Some(format!("changed {}", fields.join(", "))),
            at: change.updated_at,
        };
        let subscription = self
            .subscriptions
            .update(&subscription.id, &change, &audit)
            .await?;
        let attempts = self.subscriptions.attempt_summary(&subscription.id).await?;
        let health = WebhookHealth::of(&subscription, attempts);
        Ok((subscription, health))
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

    /// Makes the caller's own `DISABLED` subscription `ACTIVE` again, its failure streak cleared
    /// (audited); an `ACTIVE` one is left as it is. `Conflict("API key revoked")` when it was
    /// disabled because its key was revoked, `Conflict("Subscription limit reached")` at the
    /// workspace's cap, `NotFound("webhook")` as for [`get`](Self::get).
    pub async fn enable(
        &self,
        caller: &Principal,
        raw_id: &str,
    ) -> DomainResult<(Subscription, WebhookHealth)> {
        let subscription = self.live(caller, raw_id).await?;
        let audit = AuditEntry {
            workspace_id: Some(subscription.workspace_id),
            actor_user_id: Some(caller.user_id),
            action: "webhook.enabled",
            target_type: "webhook",
            target_id: subscription.id.to_string(),
            reason: Some("enabled by its owner".into()),
            at: self.clock.now(),
        };
        self.subscriptions
            .enable(
                &subscription.id,
                self.settings.max_active_per_workspace,
                &audit,
            )
            .await?;
        self.get(caller, raw_id).await
    }

    /// The caller's own subscription's attempts over the last 24 hours, by hour, oldest first.
    /// `NotFound("webhook")` as for [`get`](Self::get).
    pub async fn stats(&self, caller: &Principal, raw_id: &str) -> DomainResult<Vec<HourlyStats>> {
        let subscription = self.live(caller, raw_id).await?;
        self.subscriptions
            .hourly_stats(&subscription.id, self.clock.now())
            .await
    }

    /// The last 7 days of deliveries of the caller's own subscription, newest first.
    /// `NotFound("webhook")` for another user's, an unknown or a deleted one (a disabled one
    /// keeps its log: it tells why it was disabled).
    pub async fn deliveries(
        &self,
        caller: &Principal,
        raw_id: &str,
    ) -> DomainResult<Vec<DeliveryRecord>> {
        let subscription = self.live(caller, raw_id).await?;
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

    /// `raw` parsed by the webhook URL rules (the SSRF guard unless private targets are allowed).
    fn parsed_url(&self, raw: &str) -> DomainResult<WebhookTarget> {
        parse_webhook_url(raw, self.settings.allow_private_targets)
            .map_err(|problem| DomainError::invalid(INVALID_URL, problem))
    }

    /// Refuses a host name that resolves to a blocked address now. One that cannot be resolved
    /// now passes: every send checks again.
    async fn refuse_private_resolution(&self, target: &WebhookTarget) -> DomainResult<()> {
        if let (Some(host), false) = (target.domain(), self.settings.allow_private_targets)
            && let Ok(addresses) = self.resolver.resolve(host, target.port()).await
            && addresses.iter().any(|ip| blocked_reason(*ip).is_some())
        {
            return Err(DomainError::invalid(INVALID_URL, RESOLVES_TO_PRIVATE));
        }
        Ok(())
    }

    /// The caller's own subscription, unless deleted.
    async fn live(&self, caller: &Principal, raw_id: &str) -> DomainResult<Subscription> {
        let subscription = self.owned(caller, raw_id).await?;
        if subscription.status == SubscriptionStatus::Deleted {
            return Err(DomainError::NotFound("webhook"));
        }
        Ok(subscription)
    }

    async fn owned(&self, caller: &Principal, raw_id: &str) -> DomainResult<Subscription> {
        self.find(raw_id)
            .await?
            .filter(|s| s.workspace_id == caller.workspace_id && s.user_id == caller.user_id)
            .ok_or(DomainError::NotFound("webhook"))
    }
}

/// The event names, each a subscribable type, without duplicates (first occurrence kept).
fn parse_events(names: &[String]) -> DomainResult<Vec<EventType>> {
    let mut events: Vec<EventType> = Vec::with_capacity(names.len());
    for name in names {
        let event = EventType::parse(name)
            .ok_or_else(|| DomainError::validation(format!("Invalid event type: {name}")))?;
        if !events.contains(&event) {
            events.push(event);
        }
    }
    Ok(events)
}

/// A description: `None` (null) clears it; at most [`MAX_DESCRIPTION_CHARS`], no NUL.
fn checked_description(description: Option<String>) -> DomainResult<Option<String>> {
    description
        .map(|d| {
            crate::values::no_nul("description", &d)?;
            if d.chars().count() > MAX_DESCRIPTION_CHARS {
                return Err(DomainError::validation(format!(
                    "description must be at most {MAX_DESCRIPTION_CHARS} characters"
                )));
            }
            Ok(d)
        })
        .transpose()
}
