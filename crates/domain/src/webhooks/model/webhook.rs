//! Webhook subscriptions (REST hooks) and the record of their deliveries.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use time::OffsetDateTime;

use crate::error::{DomainError, DomainResult};
use crate::ids::{ApiKeyId, EventId, UserId, WorkspaceId};
use crate::masked::Masks;
use crate::system::RandomSource;
use crate::webhooks::model::EventType;

/// A webhook id: `wh_` followed by 24 base62 characters (about 143 random bits).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WebhookId(String);

impl WebhookId {
    /// Random characters after the prefix in new ids.
    pub const TOKEN_LEN: usize = 24;

    /// A new random id.
    pub fn generate(random: &dyn RandomSource) -> Self {
        Self(format!(
            "wh_{}",
            crate::accounts::model::token::base62(random, Self::TOKEN_LEN)
        ))
    }

    /// Accepts `wh_` followed by 16 to 64 ASCII letters and digits; anything else is `None`.
    pub fn parse(text: &str) -> Option<Self> {
        let token = text.strip_prefix("wh_")?;
        ((16..=64).contains(&token.len()) && token.bytes().all(|b| b.is_ascii_alphanumeric()))
            .then(|| Self(text.to_owned()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for WebhookId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A delivery's id: a positive integer of one sequence for the whole installation.
///
/// Tenants never see it as it is: it is shown through the installation's [`Masks`] as another
/// integer from 1 to 2^53 - 1, in decimal ([`shown`](Self::shown)), so that the ids of a tenant's own
/// deliveries say nothing of how many deliveries the others had between them. It has no
/// `Display`, so that it cannot be shown by accident; logs and storage use the number itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeliveryId(pub i64);

impl DeliveryId {
    /// The decimal text a tenant sees for this delivery.
    pub fn shown(self, masks: &Masks) -> String {
        // Every stored id is positive (an identity column from 1); a zero or negative one, which
        // no delivery has, is shown as `0`, which names no delivery.
        masks.show_delivery(self.0).unwrap_or(0).to_string()
    }

    /// The delivery shown as `text`: the decimal text of an integer from 1 to 2^53 - 1 (no sign,
    /// no leading zero); anything else is `None`.
    pub fn parse_shown(text: &str, masks: &Masks) -> Option<Self> {
        if text.is_empty() || text.len() > 19 || text.starts_with('0') {
            return None;
        }
        if !text.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let shown: i64 = text.parse().ok()?;
        masks.read_delivery(shown).map(Self)
    }

    /// The opaque cursor of a log page that ends with this delivery: URL-safe base64 of
    /// `l:<shown id>`.
    pub fn cursor(self, masks: &Masks) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("l:{}", self.shown(masks)))
    }

    /// Parses [`cursor`](Self::cursor)'s form; anything else is `Validation("invalid cursor")`.
    pub fn from_cursor(text: &str, masks: &Masks) -> DomainResult<Self> {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .and_then(|text| {
                text.strip_prefix("l:")
                    .and_then(|shown| Self::parse_shown(shown, masks))
            })
            .ok_or_else(|| DomainError::validation("invalid cursor"))
    }
}

/// Why a delivery was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeliveryKind {
    /// The fan-out of an event to the subscriptions that listed its type.
    Event,
    /// Queued again by a replay (or an enable with `replay_since`).
    Replay,
    /// Queued again by a resend of one delivery.
    Resend,
    /// A `WEBHOOK_TEST` sent on the owner's request: one attempt, no retry, no effect on health.
    Test,
}

impl DeliveryKind {
    /// Every kind.
    pub const ALL: [DeliveryKind; 4] = [Self::Event, Self::Replay, Self::Resend, Self::Test];

    /// The published spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Event => "event",
            Self::Replay => "replay",
            Self::Resend => "resend",
            Self::Test => "test",
        }
    }

    /// Parses the published spelling.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeliveryStatus {
    /// To be sent or retried.
    Pending,
    /// Answered with a 2xx.
    Delivered,
    /// Failed for good.
    Failed,
    /// Not sent: its subscription was deleted or disabled, or its key revoked.
    Cancelled,
}

impl DeliveryStatus {
    /// Every status.
    pub const ALL: [DeliveryStatus; 4] = [
        Self::Pending,
        Self::Delivered,
        Self::Failed,
        Self::Cancelled,
    ];

    /// The published spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "PENDING",
            Self::Delivered => "DELIVERED",
            Self::Failed => "FAILED",
            Self::Cancelled => "CANCELLED",
        }
    }

    /// Parses the published spelling.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

/// A new signing secret: `whsec_` + base64 of 32 random bytes (the Standard Webhooks form).
pub fn generate_secret(random: &dyn RandomSource) -> String {
    let mut bytes = [0u8; 32];
    random.fill(&mut bytes);
    format!("whsec_{}", STANDARD.encode(bytes))
}

/// Where a subscription stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscriptionStatus {
    /// Receives deliveries (set on creation).
    Active,
    /// Receives nothing: paused by its owner, its key was revoked, or its deliveries failed for
    /// too long ([`DisabledReason`]).
    Disabled,
    /// Deleted by its owner or by a `410 Gone`; receives nothing.
    Deleted,
}

impl SubscriptionStatus {
    /// The published spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "ACTIVE",
            Self::Disabled => "DISABLED",
            Self::Deleted => "DELETED",
        }
    }

    /// Parses the published spelling.
    pub fn parse(text: &str) -> DomainResult<Self> {
        match text {
            "ACTIVE" => Ok(Self::Active),
            "DISABLED" => Ok(Self::Disabled),
            "DELETED" => Ok(Self::Deleted),
            other => Err(DomainError::Unexpected(anyhow::anyhow!(
                "unknown subscription status {other}"
            ))),
        }
    }
}

/// Why a subscription is `DISABLED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DisabledReason {
    /// Its deliveries failed without a success for the disable-after period.
    Failing,
    /// The API key it was created with was revoked (it cannot be enabled again).
    KeyRevoked,
    /// Its owner paused it (`POST .../disable`).
    Manual,
}

impl DisabledReason {
    /// Every reason.
    pub const ALL: [Self; 3] = [Self::Failing, Self::KeyRevoked, Self::Manual];

    /// The published spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Failing => "failing",
            Self::KeyRevoked => "key_revoked",
            Self::Manual => "manual",
        }
    }

    /// Parses the published spelling.
    pub fn parse(text: &str) -> DomainResult<Self> {
        Self::ALL
            .into_iter()
            .find(|r| r.as_str() == text)
            .ok_or_else(|| {
                DomainError::Unexpected(anyhow::anyhow!("unknown disabled reason {text}"))
            })
    }
}

/// Most ids in one filter.
pub const MAX_FILTER_IDS: usize = 100;

/// What a subscription wants of the events of its listed types (`events.md` section 3): an event
/// is delivered only when every given filter matches. `None`: no such filter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubscriptionFilters {
    /// Time entries of these projects.
    pub project_ids: Option<Vec<crate::ids::ProjectId>>,
    /// Clients with these ids, time entries of their projects.
    pub client_ids: Option<Vec<crate::ids::ClientId>>,
    /// Time entries of these members.
    pub user_ids: Option<Vec<UserId>>,
    /// Billable (or not) time entries.
    pub billable: Option<bool>,
}

impl SubscriptionFilters {
    /// The names of the filters given, in a fixed order.
    pub fn names(&self) -> Vec<&'static str> {
        [
            ("project_ids", self.project_ids.is_some()),
            ("client_ids", self.client_ids.is_some()),
            ("user_ids", self.user_ids.is_some()),
            ("billable", self.billable.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect()
    }

    /// Whether the filter `name` can match events of `event_type`.
    pub fn applies(name: &str, event_type: EventType) -> bool {
        match name {
            "client_ids" => {
                event_type.is_time_entry()
                    || event_type.is_client()
                    || event_type.is_project()
                    || event_type.is_invoice()
            }
            "project_ids" => event_type.is_time_entry() || event_type.is_project(),
            "user_ids" | "billable" => event_type.is_time_entry(),
            _ => false,
        }
    }

    /// Whether an event about `subject` passes every filter given.
    pub fn matches(&self, subject: &crate::webhooks::model::EventSubject) -> bool {
        fn within<T: PartialEq>(allowed: Option<&Vec<T>>, value: Option<T>) -> bool {
            allowed.is_none_or(|ids| value.is_some_and(|v| ids.contains(&v)))
        }
        within(self.project_ids.as_ref(), subject.project_id)
            && within(self.client_ids.as_ref(), subject.client_id)
            && within(self.user_ids.as_ref(), subject.user_id)
            && self
                .billable
                .is_none_or(|wanted| subject.billable == Some(wanted))
    }
}

/// A webhook subscription: the events of one workspace sent to one HTTPS URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// `wh_...` id.
    pub id: WebhookId,
    /// The workspace whose events are sent.
    pub workspace_id: WorkspaceId,
    /// The user who subscribed (and alone may delete it).
    pub user_id: UserId,
    /// The key it was created with; revoking the key disables it.
    pub api_key_id: ApiKeyId,
    /// The HTTPS destination.
    pub url: String,
    /// The subscribed events, without duplicates.
    pub events: Vec<EventType>,
    /// Optional label.
    pub description: Option<String>,
    /// The signing secret (`whsec_...`), shown once at creation.
    pub secret: String,
    /// Active, disabled or deleted.
    pub status: SubscriptionStatus,
    /// Why it is disabled; `None` unless `status` is `Disabled`.
    pub disabled_reason: Option<DisabledReason>,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last change.
    pub updated_at: OffsetDateTime,
    /// Until when the secret this one replaced still signs beside it (`None` when it does not,
    /// or no more: the time may be past).
    pub previous_secret_expires_at: Option<OffsetDateTime>,
    /// What it wants of its events' subjects.
    pub filters: SubscriptionFilters,
    /// Headers sent with every delivery besides the delivery's own (shown only masked).
    pub headers: crate::webhooks::model::CustomHeaders,
}

/// A change to a subscription's settings, parsed: each field set is changed, the others kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionChange {
    /// The new destination, normalised.
    pub url: Option<String>,
    /// The new events, without duplicates, not empty.
    pub events: Option<Vec<EventType>>,
    /// The new label, or `Some(None)` to clear it.
    pub description: Option<Option<String>>,
    /// The new filters (all of them: absent ones are removed).
    pub filters: Option<SubscriptionFilters>,
    /// The new custom headers (all of them: `{}` removes every one).
    pub headers: Option<crate::webhooks::model::CustomHeaders>,
    /// When the change is made.
    pub updated_at: OffsetDateTime,
}

impl SubscriptionChange {
    /// The names of the fields it changes, in a fixed order.
    pub fn fields(&self) -> Vec<&'static str> {
        [
            ("url", self.url.is_some()),
            ("events", self.events.is_some()),
            ("description", self.description.is_some()),
            ("filters", self.filters.is_some()),
            ("headers", self.headers.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect()
    }
}

/// What storage knows of a subscription's attempts: the facts behind its [`WebhookHealth`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AttemptSummary {
    /// When the latest attempt started.
    pub last_attempt_at: Option<OffsetDateTime>,
    /// When the latest attempt answered with a 2xx started.
    pub last_success_at: Option<OffsetDateTime>,
    /// When the latest failed attempt started.
    pub last_failure_at: Option<OffsetDateTime>,
    /// The status code of the latest attempt, if it got a response.
    pub last_status_code: Option<i32>,
    /// The error of the latest attempt, if it failed.
    pub last_error: Option<String>,
    /// Attempts that failed since the latest success or the latest re-enable, whichever is
    /// later.
    pub consecutive_failures: u64,
    /// When the owner last enabled the webhook again, which cleared its failure streak.
    pub streak_reset_at: Option<OffsetDateTime>,
    /// The first failure of the current streak (`None` after a success).
    pub failing_since: Option<OffsetDateTime>,
    /// Deliveries still to be sent or retried.
    pub pending_deliveries: u64,
}

/// One hour of a webhook's attempts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HourlyStats {
    /// The hour's start (UTC).
    pub start: OffsetDateTime,
    /// Attempts answered with a 2xx.
    pub delivered: u64,
    /// Other attempts.
    pub failed: u64,
    /// Median duration, in milliseconds; `None` without attempts.
    pub p50_ms: Option<u32>,
    /// 95th-percentile duration, in milliseconds; `None` without attempts.
    pub p95_ms: Option<u32>,
}

/// How a webhook is doing, in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthState {
    /// No attempt yet.
    Unknown,
    /// The latest attempt succeeded.
    Healthy,
    /// The latest attempt failed.
    Failing,
    /// The webhook is disabled.
    Disabled,
}

impl HealthState {
    /// The published spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Healthy => "healthy",
            Self::Failing => "failing",
            Self::Disabled => "disabled",
        }
    }
}

/// A webhook's health: its state and the facts it was decided on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookHealth {
    /// Unknown, healthy, failing or disabled.
    pub state: HealthState,
    /// The facts.
    pub attempts: AttemptSummary,
}

impl WebhookHealth {
    /// The health of `subscription` given its `attempts`.
    pub fn of(subscription: &Subscription, attempts: AttemptSummary) -> Self {
        let state = if subscription.status != SubscriptionStatus::Active {
            HealthState::Disabled
        } else {
            match attempts.last_attempt_at {
                // No attempt yet, or none since the streak was cleared.
                None => HealthState::Unknown,
                Some(last) if attempts.streak_reset_at.is_some_and(|reset| last <= reset) => {
                    HealthState::Unknown
                }
                Some(last) if attempts.last_success_at == Some(last) => HealthState::Healthy,
                Some(_) => HealthState::Failing,
            }
        };
        Self { state, attempts }
    }
}

/// One delivery of one event to one subscription, as the delivery log shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRecord {
    /// The delivery.
    pub id: DeliveryId,
    /// The event (also the `webhook-id` header).
    pub event_id: EventId,
    /// The event's type.
    pub event_type: EventType,
    /// Why it was made.
    pub kind: DeliveryKind,
    /// Where it stands.
    pub status: DeliveryStatus,
    /// Attempts made so far.
    pub attempts: i32,
    /// When the next attempt is due, while pending.
    pub next_attempt_at: Option<OffsetDateTime>,
    /// When the latest attempt started.
    pub last_attempt_at: Option<OffsetDateTime>,
    /// Status code of the last attempt, if it got a response.
    pub last_status_code: Option<i32>,
    /// Error of the last attempt, if it failed without a response or with a non-2xx one.
    pub last_error: Option<String>,
    /// When the delivery was created.
    pub created_at: OffsetDateTime,
    /// Last change.
    pub updated_at: OffsetDateTime,
}

/// One HTTP attempt of a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryAttempt {
    /// 1 for the first.
    pub number: i32,
    /// When it started.
    pub started_at: OffsetDateTime,
    /// How long it took, in milliseconds.
    pub duration_ms: i32,
    /// The response's status code, if there was a response.
    pub status_code: Option<i32>,
    /// What went wrong, if it failed.
    pub error: Option<String>,
    /// The first kilobyte of the response body, if there was one.
    pub response_body: Option<String>,
    /// Whether the body was not UTF-8 text (or held NUL): the bytes that were not are shown as
    /// U+FFFD in `response_body` ([`crate::delivery::ResponseExcerpt`]).
    pub response_body_lossy: bool,
    /// The `webhook-signature` header it was sent with; `None` if not recorded.
    pub signature: Option<String>,
    /// The custom headers it was sent with, masked, as
    /// [`CustomHeaders::to_stored`](crate::webhooks::model::CustomHeaders::to_stored) writes them; `None` if it
    /// had none.
    pub custom_headers: Option<String>,
}

/// A delivery with the exact body it sends and every attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryDetail {
    /// The delivery.
    pub record: DeliveryRecord,
    /// The exact body sent.
    pub payload: String,
    /// Its attempts, first first.
    pub attempts: Vec<DeliveryAttempt>,
    /// The entity it is about (`webhook-ordering-key`) and its place among that entity's events
    /// (`webhook-sequence`), as the claim gives them to the sender.
    pub ordering_key: String,
    /// See `ordering_key`.
    pub sequence: i64,
}

/// Which deliveries of a subscription a log page holds: newest first, created at or after
/// `since`, before `before` (a delivery id, the previous page's last), at most `limit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryQuery {
    /// The oldest creation time shown (the retention period).
    pub since: OffsetDateTime,
    /// Only this status.
    pub status: Option<DeliveryStatus>,
    /// Only this event type.
    pub event_type: Option<EventType>,
    /// Only deliveries of this event.
    pub event_id: Option<EventId>,
    /// Only deliveries of events about this entity (their ordering key: the time entry, client,
    /// project or invoice id).
    pub entity_id: Option<String>,
    /// Only deliveries with a smaller id (older).
    pub before: Option<DeliveryId>,
    /// Most deliveries returned.
    pub limit: u32,
}

/// A replay's window and rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayWindow {
    /// Events recorded at or after this time...
    pub since: OffsetDateTime,
    /// ...and before this one.
    pub until: OffsetDateTime,
    /// Only events the webhook has not received with a 2xx (and has none pending for).
    pub only_failed: bool,
    /// Most events queued.
    pub limit: u32,
    /// When the replay is made (the new deliveries' creation and first attempt time).
    pub at: OffsetDateTime,
}

impl ReplayWindow {
    /// How many of the candidates one replay queues, given their creation times oldest first
    /// (the window's first `limit + 1` events), and where the next call starts when more remain:
    /// the time of the first left out. The events of that instant wait for the next call too, so
    /// that a replay continued from there repeats none, unless that would leave this one empty.
    pub fn cut(&self, times: &[OffsetDateTime]) -> (usize, Option<OffsetDateTime>) {
        let limit = self.limit as usize;
        let Some(&next) = times.get(limit) else {
            return (times.len(), None);
        };
        let before = times[..limit].iter().take_while(|t| **t < next).count();
        (if before == 0 { limit } else { before }, Some(next))
    }
}

/// What a replay queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayOutcome {
    /// Deliveries queued.
    pub queued: u64,
    /// Whether more events of the window remain.
    pub truncated: bool,
    /// Where to continue when truncated: the creation time of the first event not queued.
    pub next_since: Option<OffsetDateTime>,
}

/// An audit-log row: who did what to what, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// The workspace concerned.
    pub workspace_id: WorkspaceId,
    /// The user who acted, `None` for the system.
    pub actor_user_id: Option<UserId>,
    /// What was done, e.g. `webhook.deleted`.
    pub action: &'static str,
    /// The kind of thing acted on, e.g. `webhook`.
    pub target_type: &'static str,
    /// Its id.
    pub target_id: String,
    /// Why.
    pub reason: Option<String>,
    /// When.
    pub at: OffsetDateTime,
}
