//! Webhook subscriptions: subscribe, read, change, enable, delete, test, rotate the secret,
//! replay and resend, and the delivery log.

use std::sync::Arc;

use time::Duration;

use crate::accounts::model::Principal;
use crate::error::{DomainError, DomainResult};
use crate::ids::{EventId, WorkspaceId};
use crate::masked::Masks;
use crate::net::{
    RESOLVES_TO_PRIVATE, WebhookTarget, blocked_reason, loopback_literal_port, parse_webhook_url,
};
use crate::page::PageRequest;
use crate::payload::WebhookTestPayload;
use crate::system::{Clock, IdGenerator, RandomSource};
use crate::timefmt::rfc3339;
use crate::webhooks::model::webhook::generate_secret;
use crate::webhooks::model::{
    AuditEntry, CustomHeaders, DeliveryDetail, DeliveryId, DeliveryQuery, DeliveryRecord,
    DeliveryStatus, EventSubject, EventType, HourlyStats, ReplayOutcome, ReplayWindow,
    Subscription, SubscriptionChange, SubscriptionFilters, SubscriptionStatus, WebhookHealth,
    WebhookId,
};
use crate::webhooks::ports::{DeliveryLog, HostResolver, LocalReceivers, SubscriptionRepository};

/// The published message for a URL that breaks a rule.
pub const INVALID_URL: &str = "Invalid URL format";
/// The published message for a missing URL or events list.
pub const REQUIRED: &str = "URL and events array are required";
/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 255;
/// The published message for parameters that break a rule (replay and enable bodies).
pub use crate::error::INVALID_PARAMETERS;
/// Most events one replay queues.
pub const REPLAY_LIMIT: u32 = 10_000;

/// The room a member has to queue deliveries again at `now`, given when each of those queued in
/// the last minute was created (oldest first) and the quota `per_minute`: `Ok(room)`, at least
/// one; or, with none, `Err(seconds)` until the oldest that must leave the minute has left.
pub fn requeue_room(
    recent: &[time::OffsetDateTime],
    now: time::OffsetDateTime,
    per_minute: u32,
) -> Result<u32, u64> {
    let used = u32::try_from(recent.len()).unwrap_or(u32::MAX);
    if used < per_minute {
        return Ok(per_minute - used);
    }
    let frees = recent[recent.len() - per_minute as usize] + Duration::minutes(1) - now;
    let seconds = u64::try_from(frees.whole_seconds()).unwrap_or(0);
    Err(if frees > Duration::seconds(seconds as i64) {
        seconds + 1
    } else {
        seconds
    }
    .max(1))
}
/// How long a rotated-out secret keeps signing unless the owner says otherwise: one day.
pub const DEFAULT_PREVIOUS_VALID_FOR: Duration = Duration::days(1);
/// The longest a rotated-out secret may keep signing: seven days.
pub const MAX_PREVIOUS_VALID_FOR: Duration = Duration::days(7);

/// Settings of the webhook rules.
#[derive(Debug, Clone, Copy)]
pub struct WebhookSettings {
    /// Lift the SSRF guard (tests and development only).
    pub allow_private_targets: bool,
    /// Most active subscriptions per workspace.
    pub max_active_per_workspace: u32,
    /// How long delivery attempts are kept: the reach of the delivery log.
    pub retention: Duration,
    /// How long events (and their deliveries) are kept: the reach of a replay.
    pub event_retention: Duration,
    /// Most deliveries a member may queue again (replays, an enable's replay, resends, tests)
    /// in any 60 s: a replay points up to [`REPLAY_LIMIT`] signed requests at a URL its
    /// subscriber chose, and this bounds how many a minute.
    pub requeue_per_minute: u32,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            allow_private_targets: false,
            max_active_per_workspace: 100,
            retention: Duration::days(7),
            event_retention: Duration::days(30),
            requeue_per_minute: REPLAY_LIMIT,
        }
    }
}

/// Longest entity id the log is searched by: ids are UUIDs (36) or webhook ids (`wh_` and up to 64).
const MAX_ENTITY_ID: usize = 100;

/// Which deliveries of the log to show, as received (`?status=`, `?event_type=`, `?event_id=`,
/// `?entity_id=`, `?limit=`, `?cursor=`).
#[derive(Debug, Clone, Default)]
pub struct DeliveryFilter {
    /// `PENDING`, `DELIVERED`, `FAILED` or `CANCELLED`.
    pub status: Option<String>,
    /// An event type name.
    pub event_type: Option<String>,
    /// An event id (a UUID).
    pub event_id: Option<String>,
    /// An entity id: what the events are about (their ordering key).
    pub entity_id: Option<String>,
    /// Page size, 1 to 200 (default 50).
    pub limit: Option<u32>,
    /// The previous page's `next_cursor`.
    pub cursor: Option<String>,
}

/// A replay as asked for: events recorded in `[since, until)`, `until` now when `None`.
#[derive(Debug, Clone, Copy)]
pub struct ReplayRequest {
    /// The window's start.
    pub since: time::OffsetDateTime,
    /// The window's end (now when `None`).
    pub until: Option<time::OffsetDateTime>,
    /// Only the events the webhook has not received (default true).
    pub only_failed: bool,
}

/// A new secret and until when the previous one still signs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RotatedSecret {
    /// The new signing secret (`whsec_...`), shown only here.
    pub secret: String,
    /// Until when the previous secret signs beside it (now, with no window).
    pub previous_expires_at: time::OffsetDateTime,
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
    /// Filters (typed; their ids are checked against the caller's workspace here).
    pub filters: SubscriptionFilters,
    /// Custom headers as given, (name, value) in order; checked here ([`CustomHeaders::parse`]).
    pub headers: Vec<(String, String)>,
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
    /// New filters, replacing all of them (`{}`: none).
    pub filters: Option<SubscriptionFilters>,
    /// New custom headers, replacing all of them (`{}`: none).
    pub headers: Option<Vec<(String, String)>>,
}

/// Subscription operations for the caller's user and workspace.
#[derive(Clone)]
pub struct WebhookService {
    subscriptions: Arc<dyn SubscriptionRepository>,
    log: Arc<dyn DeliveryLog>,
    resolver: Arc<dyn HostResolver>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    random: Arc<dyn RandomSource>,
    settings: WebhookSettings,
    masks: Masks,
    /// Loopback ports a local receiver takes deliveries on (`timetrack listen`), if any.
    local_receivers: Option<Arc<dyn LocalReceivers>>,
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
    #[allow(clippy::too_many_arguments)] // Six ports, the settings and the installation's key.
    pub fn new(
        subscriptions: Arc<dyn SubscriptionRepository>,
        log: Arc<dyn DeliveryLog>,
        resolver: Arc<dyn HostResolver>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
        random: Arc<dyn RandomSource>,
        settings: WebhookSettings,
        masks: Masks,
    ) -> Self {
        Self {
            subscriptions,
            log,
            resolver,
            clock,
            ids,
            random,
            settings,
            masks,
            local_receivers: None,
        }
    }

    /// The same service, letting subscriptions point at the loopback ports where `receivers`
    /// (when given) says a local receiver (`timetrack listen`) listens now, beside public hosts.
    #[must_use]
    pub fn with_local_receivers(mut self, receivers: Option<Arc<dyn LocalReceivers>>) -> Self {
        self.local_receivers = receivers;
        self
    }

    /// How this installation shows its delivery ids ([`DeliveryId::shown`]).
    pub fn masks(&self) -> &Masks {
        &self.masks
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
        let target = self.parsed_url(&new.url, caller.workspace_id)?;
        let events = parse_events(&new.events)?;
        require_may_receive(caller, &events)?;
        let description = checked_description(new.description)?;
        let headers = CustomHeaders::parse(new.headers)?;
        self.check_filters(caller.workspace_id, &events, &new.filters)
            .await?;
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
            disabled_reason: None,
            created_at: now,
            updated_at: now,
            previous_secret_expires_at: None,
            filters: new.filters,
            headers,
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
        self.list_where(caller, |_| true).await
    }

    /// [`Self::list`], narrowed to the subscriptions whose URL is exactly `url` as stored (the
    /// text subscribed, trimmed): how a platform finds the hook it made before (n8n's
    /// `checkExists`, Make's `attach`).
    pub async fn list_with_url(
        &self,
        caller: &Principal,
        url: &str,
    ) -> DomainResult<Vec<(Subscription, WebhookHealth)>> {
        let url = url.trim();
        self.list_where(caller, |s| s.url == url).await
    }

    async fn list_where(
        &self,
        caller: &Principal,
        keep: impl Fn(&Subscription) -> bool,
    ) -> DomainResult<Vec<(Subscription, WebhookHealth)>> {
        let subscriptions = self
            .subscriptions
            .list(caller.workspace_id, caller.user_id)
            .await?;
        let mut listed = Vec::new();
        for subscription in subscriptions.into_iter().filter(|s| keep(s)) {
            listed.push(self.with_health(subscription).await?);
        }
        Ok(listed)
    }

    /// The caller's own subscription `id` with its health. `NotFound("webhook")` for an id that
    /// is unknown, deleted, or another user's.
    pub async fn get(
        &self,
        caller: &Principal,
        id: &WebhookId,
    ) -> DomainResult<(Subscription, WebhookHealth)> {
        let subscription = self.live(caller, id).await?;
        self.with_health(subscription).await
    }

    /// `subscription` with its health, its rotation window dropped once past.
    async fn with_health(
        &self,
        mut subscription: Subscription,
    ) -> DomainResult<(Subscription, WebhookHealth)> {
        let now = self.clock.now();
        subscription.previous_secret_expires_at = subscription
            .previous_secret_expires_at
            .filter(|at| *at > now);
        let attempts = self.subscriptions.attempt_summary(&subscription.id).await?;
        let health = WebhookHealth::of(&subscription, attempts);
        Ok((subscription, health))
    }

    /// Changes the caller's own subscription `id`: the fields `change` sets, checked as
    /// subscribe checks them (same messages). A change is audited with the fields it names; a
    /// change that names none changes nothing. New `events` apply to events recorded after it,
    /// a new `url` to every later attempt, retries already queued included.
    ///
    /// `NotFound("webhook")` as for [`get`](Self::get).
    pub async fn update(
        &self,
        caller: &Principal,
        id: &WebhookId,
        change: WebhookChange,
    ) -> DomainResult<(Subscription, WebhookHealth)> {
        let subscription = self.live(caller, id).await?;
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
            .map(|u| self.parsed_url(u, caller.workspace_id))
            .transpose()?;
        let events = change.events.as_deref().map(parse_events).transpose()?;
        if let Some(events) = &events {
            require_may_receive(caller, events)?;
        }
        let description = change.description.map(checked_description).transpose()?;
        let headers = change.headers.map(CustomHeaders::parse).transpose()?;
        // The filters as they will be, against the events as they will be.
        if change.filters.is_some() || events.is_some() {
            let filters = change.filters.as_ref().unwrap_or(&subscription.filters);
            let listed = events.as_deref().unwrap_or(&subscription.events);
            self.check_filters(subscription.workspace_id, listed, filters)
                .await?;
        }
        if let Some(target) = &target {
            self.refuse_private_resolution(target).await?;
        }
        let change = SubscriptionChange {
            url: target.map(|t| t.url),
            events,
            description,
            filters: change.filters,
            headers,
            updated_at: self.clock.now(),
        };
        let fields = change.fields();
        if fields.is_empty() {
            return self.with_health(subscription).await;
        }
        let audit = owner_audit(
            caller,
            &subscription,
            "webhook.updated",
            format!("changed {}", fields.join(", ")),
            change.updated_at,
        );
        let subscription = self
            .subscriptions
            .update(&subscription.id, &change, &audit)
            .await?;
        self.with_health(subscription).await
    }

    /// Deletes the caller's own subscription at once: pending deliveries are cancelled and an
    /// audit row is written. Deleting one's already-deleted subscription succeeds again.
    ///
    /// `NotFound("webhook")` for an id that is unknown, or another user's (which is
    /// left untouched and not revealed).
    pub async fn delete(&self, caller: &Principal, id: &WebhookId) -> DomainResult<()> {
        let subscription = self.owned(caller, id).await?;
        if subscription.status == SubscriptionStatus::Deleted {
            return Ok(());
        }
        let audit = owner_audit(
            caller,
            &subscription,
            "webhook.deleted",
            "deleted by its owner".into(),
            self.clock.now(),
        );
        self.subscriptions.delete(&subscription.id, &audit).await
    }

    /// Pauses the caller's own `ACTIVE` subscription (audited): it becomes `DISABLED` with reason
    /// `manual`, receives nothing (its pending deliveries are cancelled, new events are not
    /// queued for it) and is not counted as failing, until [`enable`](Self::enable) resumes it;
    /// what it missed can be replayed then. A `DISABLED` one is left as it is, its reason kept.
    /// `NotFound("webhook")` as for [`get`](Self::get).
    pub async fn disable(
        &self,
        caller: &Principal,
        id: &WebhookId,
    ) -> DomainResult<(Subscription, WebhookHealth)> {
        let subscription = self.live(caller, id).await?;
        if subscription.status == SubscriptionStatus::Active {
            let audit = owner_audit(
                caller,
                &subscription,
                "webhook.disabled",
                "paused by its owner".into(),
                self.clock.now(),
            );
            self.subscriptions.disable(&subscription.id, &audit).await?;
        }
        self.get(caller, id).await
    }

    /// Makes the caller's own `DISABLED` subscription `ACTIVE` again, its failure streak cleared
    /// (audited); an `ACTIVE` one is left as it is. `Conflict("API key revoked")` when it was
    /// disabled because its key was revoked, `Conflict("Subscription limit reached")` at the
    /// workspace's cap, `NotFound("webhook")` as for [`get`](Self::get).
    ///
    /// With `replay_since`, then replays what the webhook missed since then (as
    /// [`replay`](Self::replay) with `only_failed`); a `replay_since` older than the retained
    /// events is refused before anything changes.
    pub async fn enable(
        &self,
        caller: &Principal,
        id: &WebhookId,
        replay_since: Option<time::OffsetDateTime>,
    ) -> DomainResult<(Subscription, WebhookHealth, Option<ReplayOutcome>)> {
        let subscription = self.live(caller, id).await?;
        let now = self.clock.now();
        let room = match replay_since {
            Some(since) => {
                self.check_retained(since, now)?;
                self.requeue_room(caller, now).await?
            }
            None => 0,
        };
        let audit = owner_audit(
            caller,
            &subscription,
            "webhook.enabled",
            "enabled by its owner".into(),
            now,
        );
        self.subscriptions
            .enable(
                &subscription.id,
                self.settings.max_active_per_workspace,
                &audit,
            )
            .await?;
        let replayed = match replay_since {
            // Up to now, after the enable: an event recorded while it committed was not fanned
            // out to the webhook, and must be in the window.
            Some(since) => {
                let until = self.clock.now();
                Some(
                    self.log
                        .replay(
                            &subscription.id,
                            &ReplayWindow {
                                since,
                                until: until.max(since + Duration::microseconds(1)),
                                only_failed: true,
                                limit: REPLAY_LIMIT.min(room),
                                at: until,
                            },
                        )
                        .await?,
                )
            }
            None => None,
        };
        let (subscription, health) = self.get(caller, id).await?;
        Ok((subscription, health, replayed))
    }

    /// Sends one signed test delivery to the caller's own webhook, whatever its events and also
    /// when it is `DISABLED`: one attempt, no retry, no effect on its health. Returns the queued
    /// delivery (kind `test`).
    ///
    /// Without `sent_as` (or with `WEBHOOK_TEST`) it is a `WEBHOOK_TEST` naming the webhook. With
    /// another type, its body is that type's catalog sample (`payload::samples::body`) and it is
    /// sent with that type in `X-Webhook-Event`, so a receiver's handler for the type can be
    /// tried; the event stays a `WEBHOOK_TEST` wherever events are listed or replayed. An unknown
    /// type is 400 `Invalid event type: X`; an invoice type is 403 for a member, as subscribing
    /// to one is. `Conflict("API key revoked")` if the webhook's key was revoked,
    /// `NotFound("webhook")` as for [`get`](Self::get).
    pub async fn test(
        &self,
        caller: &Principal,
        id: &WebhookId,
        sent_as: Option<&str>,
    ) -> DomainResult<DeliveryRecord> {
        let sent_as =
            match sent_as.map(str::trim).filter(|name| !name.is_empty()) {
                None => None,
                Some(name) => Some(EventType::parse(name).ok_or_else(|| {
                    DomainError::validation(format!("Invalid event type: {name}"))
                })?),
            }
            .filter(|t| *t != EventType::WebhookTest);
        if let Some(event_type) = sent_as {
            require_may_receive(caller, &[event_type])?;
        }
        let subscription = self.live(caller, id).await?;
        let now = self.clock.now();
        self.requeue_room(caller, now).await?;
        let mut event = crate::webhooks::model::event::event_of(
            EventId(self.ids.new_uuid()),
            subscription.workspace_id,
            EventType::WebhookTest,
            &WebhookTestPayload {
                event: EventType::WebhookTest.as_str(),
                webhook_id: subscription.id.to_string(),
                workspace_id: subscription.workspace_id.to_string(),
                timestamp: rfc3339(now),
            },
            now,
            EventSubject::default(),
            &subscription.id,
        )?;
        if let Some(event_type) = sent_as {
            event.body = crate::payload::samples::body(event_type);
        }
        self.log.queue_test(&subscription.id, &event, sent_as).await
    }

    /// A new signing secret for the caller's own webhook, used at once; the previous one keeps
    /// signing beside it for `previous_valid_for` (default one day, 0 to 7 days; 0 stops it at
    /// once). Rotating again inside the window drops the oldest. Audited.
    /// `NotFound("webhook")` as for [`get`](Self::get).
    pub async fn rotate_secret(
        &self,
        caller: &Principal,
        id: &WebhookId,
        previous_valid_for: Option<Duration>,
    ) -> DomainResult<RotatedSecret> {
        let subscription = self.live(caller, id).await?;
        let valid_for = previous_valid_for.unwrap_or(DEFAULT_PREVIOUS_VALID_FOR);
        if valid_for.is_negative() || valid_for > MAX_PREVIOUS_VALID_FOR {
            return Err(DomainError::invalid(
                INVALID_PARAMETERS,
                format!(
                    "previous_valid_for_seconds must be between 0 and {}",
                    MAX_PREVIOUS_VALID_FOR.whole_seconds()
                ),
            ));
        }
        let now = self.clock.now();
        let secret = generate_secret(self.random.as_ref());
        let previous_expires_at = now + valid_for;
        let audit = owner_audit(
            caller,
            &subscription,
            "webhook.secret_rotated",
            format!(
                "previous secret signs until {}",
                rfc3339(previous_expires_at)
            ),
            now,
        );
        self.subscriptions
            .rotate_secret(&subscription.id, &secret, previous_expires_at, &audit)
            .await?;
        Ok(RotatedSecret {
            secret,
            previous_expires_at,
        })
    }

    /// Queues again, oldest first, the events of the caller's own webhook's workspace recorded
    /// in the window that it would receive now; with `only_failed`, only those it has not
    /// received (and has none pending for). At most [`REPLAY_LIMIT`] a call, and no more than
    /// the caller's room under [`WebhookSettings::requeue_per_minute`] (the rest is left for
    /// `next_since`); `TooManyRequests` with none (as for a test, a resend and an enable's
    /// replay).
    ///
    /// `Invalid` ([`INVALID_PARAMETERS`]) for `until <= since`, a `Validation` naming the
    /// retention for a `since` older than the retained events, `Conflict("Webhook is
    /// disabled")` for a `DISABLED` webhook, `NotFound("webhook")` as for [`get`](Self::get).
    pub async fn replay(
        &self,
        caller: &Principal,
        id: &WebhookId,
        request: ReplayRequest,
    ) -> DomainResult<ReplayOutcome> {
        let subscription = self.live(caller, id).await?;
        let now = self.clock.now();
        let until = request.until.unwrap_or(now);
        if until <= request.since {
            return Err(DomainError::invalid(
                INVALID_PARAMETERS,
                "until must be later than since",
            ));
        }
        self.check_retained(request.since, now)?;
        if subscription.status != SubscriptionStatus::Active {
            return Err(DomainError::Conflict("Webhook is disabled".into()));
        }
        let room = self.requeue_room(caller, now).await?;
        self.log
            .replay(
                &subscription.id,
                &ReplayWindow {
                    since: request.since,
                    until,
                    only_failed: request.only_failed,
                    limit: REPLAY_LIMIT.min(room),
                    at: now,
                },
            )
            .await
    }

    /// A new delivery (`resend`) of the event of the caller's own webhook's delivery `delivery`,
    /// with fresh retries, whatever that delivery's status. `NotFound("delivery")` for a delivery
    /// that is unknown or another webhook's; `Conflict("Webhook is disabled")` for a `DISABLED` webhook;
    /// `NotFound("webhook")` as for [`get`](Self::get).
    pub async fn resend(
        &self,
        caller: &Principal,
        id: &WebhookId,
        delivery: DeliveryId,
    ) -> DomainResult<DeliveryRecord> {
        let subscription = self.live(caller, id).await?;
        let now = self.clock.now();
        self.requeue_room(caller, now).await?;
        self.log.resend(&subscription.id, delivery, now).await
    }

    /// The caller's own webhook's delivery `delivery` with its exact body and every attempt.
    /// `NotFound("delivery")` as for [`resend`](Self::resend), `NotFound("webhook")` as for
    /// [`get`](Self::get).
    pub async fn delivery(
        &self,
        caller: &Principal,
        id: &WebhookId,
        delivery: DeliveryId,
    ) -> DomainResult<DeliveryDetail> {
        let subscription = self.live(caller, id).await?;
        self.log
            .delivery(&subscription.id, delivery)
            .await?
            .filter(|d| d.record.created_at >= self.clock.now() - self.settings.retention)
            .ok_or(DomainError::NotFound("delivery"))
    }

    /// Refuses filters that cannot match one of the `events` (`Invalid filter: NAME does not
    /// apply to TYPE`) or name an id outside `workspace` (`Invalid filter: NAME (ID is not in
    /// this workspace)`).
    async fn check_filters(
        &self,
        workspace: WorkspaceId,
        events: &[EventType],
        filters: &SubscriptionFilters,
    ) -> DomainResult<()> {
        for name in filters.names() {
            if let Some(event) = events
                .iter()
                .find(|e| !SubscriptionFilters::applies(name, **e))
            {
                return Err(DomainError::validation(format!(
                    "Invalid filter: {name} does not apply to {}",
                    event.as_str()
                )));
            }
        }
        if let Some((name, id)) = self
            .subscriptions
            .filter_id_outside(workspace, filters)
            .await?
        {
            return Err(DomainError::validation(format!(
                "Invalid filter: {name} ({id} is not in this workspace)"
            )));
        }
        Ok(())
    }

    /// How many deliveries the caller may still queue again now (at least one), or
    /// `TooManyRequests` when its quota ([`WebhookSettings::requeue_per_minute`]) is used up.
    async fn requeue_room(
        &self,
        caller: &Principal,
        now: time::OffsetDateTime,
    ) -> DomainResult<u32> {
        let recent = self
            .log
            .requeued_since(
                caller.workspace_id,
                caller.user_id,
                now - Duration::minutes(1),
            )
            .await?;
        requeue_room(&recent, now, self.settings.requeue_per_minute)
            .map_err(|retry_after_secs| DomainError::TooManyRequests { retry_after_secs })
    }

    /// Refuses a `since` older than the retained events.
    fn check_retained(
        &self,
        since: time::OffsetDateTime,
        now: time::OffsetDateTime,
    ) -> DomainResult<()> {
        let retained = self.settings.event_retention.max(self.settings.retention);
        if since < now - retained {
            return Err(DomainError::validation(format!(
                "since is older than the retained events ({} days)",
                retained.whole_days()
            )));
        }
        Ok(())
    }

    /// The caller's own subscription's attempts over the last 24 hours, by hour, oldest first.
    /// `NotFound("webhook")` as for [`get`](Self::get).
    pub async fn stats(
        &self,
        caller: &Principal,
        id: &WebhookId,
    ) -> DomainResult<Vec<HourlyStats>> {
        let subscription = self.live(caller, id).await?;
        self.subscriptions
            .hourly_stats(&subscription.id, self.clock.now())
            .await
    }

    /// What became of one event across the caller's own webhooks: its deliveries to them (not
    /// deleted), newest first, at most 200, each with its webhook's id. `NotFound("event")` for
    /// an event that is not of the caller's workspace, does not show to them (a notice about
    /// another member's webhook), or is an invoice event and they are a member.
    pub async fn event_deliveries(
        &self,
        caller: &Principal,
        event: EventId,
    ) -> DomainResult<Vec<(WebhookId, DeliveryRecord)>> {
        match self
            .log
            .event_deliveries(caller.workspace_id, caller.user_id, event, 200)
            .await?
        {
            Some((event_type, deliveries))
                if !event_type.is_invoice() || caller.role.administers() =>
            {
                Ok(deliveries)
            }
            _ => Err(DomainError::NotFound("event")),
        }
    }

    /// One page of the deliveries of the caller's own subscription over the retention period,
    /// newest first, with the cursor of the next page (`None` on the last).
    /// `NotFound("webhook")` for another user's, an unknown or a deleted one (a disabled one
    /// keeps its log: it tells why it was disabled); a `Validation` for a bad filter, size or
    /// cursor.
    pub async fn deliveries(
        &self,
        caller: &Principal,
        id: &WebhookId,
        filter: DeliveryFilter,
    ) -> DomainResult<(Vec<DeliveryRecord>, Option<String>)> {
        let subscription = self.live(caller, id).await?;
        // An empty filter is no filter, as an empty cursor is the first page.
        let status = filter
            .status
            .filter(|s| !s.is_empty())
            .map(|s| {
                DeliveryStatus::parse(&s).ok_or_else(|| {
                    DomainError::validation(
                        "status must be one of PENDING, DELIVERED, FAILED, CANCELLED",
                    )
                })
            })
            .transpose()?;
        let event_type = filter
            .event_type
            .filter(|name| !name.is_empty())
            .map(|name| {
                EventType::parse(&name)
                    .ok_or_else(|| DomainError::validation(format!("Invalid event type: {name}")))
            })
            .transpose()?;
        let event_id = filter
            .event_id
            .map(|raw| raw.trim().to_owned())
            .filter(|raw| !raw.is_empty())
            .map(|raw| {
                uuid::Uuid::parse_str(&raw)
                    .map(EventId)
                    .map_err(|_| DomainError::validation("event_id must be a UUID"))
            })
            .transpose()?;
        let entity_id = filter
            .entity_id
            .map(|raw| raw.trim().to_owned())
            .filter(|raw| !raw.is_empty())
            .map(|raw| {
                crate::values::no_nul("entity_id", &raw)?;
                if raw.chars().count() > MAX_ENTITY_ID {
                    return Err(DomainError::validation(format!(
                        "entity_id must be at most {MAX_ENTITY_ID} characters"
                    )));
                }
                // Entity ids are stored as their lower-case UUID text: any spelling `uuid`
                // reads finds them.
                Ok(uuid::Uuid::parse_str(&raw).map_or(raw, |id| id.to_string()))
            })
            .transpose()?;
        // The core API's page size rule; the cursor is the log's own.
        let limit = PageRequest::new(filter.limit, None)?.limit;
        let before = filter
            .cursor
            .as_deref()
            .filter(|c| !c.is_empty())
            .map(|cursor| DeliveryId::from_cursor(cursor, &self.masks))
            .transpose()?;
        let mut page = self
            .log
            .deliveries(
                &subscription.id,
                &DeliveryQuery {
                    since: self.clock.now() - self.settings.retention,
                    status,
                    event_type,
                    event_id,
                    entity_id,
                    before,
                    limit: limit + 1,
                },
            )
            .await?;
        let next = if page.len() > limit as usize {
            page.truncate(limit as usize);
            page.last().map(|d| d.id.cursor(&self.masks))
        } else {
            None
        };
        Ok((page, next))
    }

    /// `raw` parsed by the webhook URL rules (the SSRF guard unless private targets are allowed,
    /// or `raw` is a local receiver of `workspace`).
    fn parsed_url(&self, raw: &str, workspace: WorkspaceId) -> DomainResult<WebhookTarget> {
        let local = self.local_receivers.as_ref().is_some_and(|receivers| {
            loopback_literal_port(raw).is_some_and(|port| receivers.receives_at(port, workspace))
        });
        parse_webhook_url(raw, self.settings.allow_private_targets || local)
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
    async fn live(&self, caller: &Principal, id: &WebhookId) -> DomainResult<Subscription> {
        let subscription = self.owned(caller, id).await?;
        if subscription.status == SubscriptionStatus::Deleted {
            return Err(DomainError::NotFound("webhook"));
        }
        Ok(subscription)
    }

    async fn owned(&self, caller: &Principal, id: &WebhookId) -> DomainResult<Subscription> {
        self.subscriptions
            .get(id)
            .await?
            .filter(|s| s.workspace_id == caller.workspace_id && s.user_id == caller.user_id)
            .ok_or(DomainError::NotFound("webhook"))
    }
}

/// An audit row of `caller`'s `action` on their `subscription`, with its reason, at `at`.
fn owner_audit(
    caller: &Principal,
    subscription: &Subscription,
    action: &'static str,
    reason: String,
    at: time::OffsetDateTime,
) -> AuditEntry {
    AuditEntry {
        workspace_id: subscription.workspace_id,
        actor_user_id: Some(caller.user_id),
        action,
        target_type: "webhook",
        target_id: subscription.id.to_string(),
        reason: Some(reason),
        at,
    }
}

/// 403 when `events` names an invoice event and the caller is a member: invoices are for owners
/// and admins (`docs/billing.md`).
fn require_may_receive(caller: &Principal, events: &[EventType]) -> DomainResult<()> {
    if events.iter().any(|e| e.is_invoice()) && !caller.role.administers() {
        return Err(DomainError::Forbidden);
    }
    Ok(())
}

/// The event names, each a subscribable type, without duplicates (first occurrence kept).
fn parse_events(names: &[String]) -> DomainResult<Vec<EventType>> {
    let mut events: Vec<EventType> = Vec::with_capacity(names.len());
    for name in names {
        let event = EventType::parse(name)
            .filter(|t| t.is_subscribable())
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
