//! The rules of webhook delivery: signing (Standard Webhooks), what an attempt's outcome means,
//! when the next attempt is due, and when a subscription is given up on.

pub mod share;
pub mod streak;

pub use share::QuickWorkspaces;

use std::borrow::Cow;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use time::{Duration, OffsetDateTime};

use crate::error::{DomainError, DomainResult};
use crate::system::RandomSource;

/// The Standard Webhooks signature of a delivery: `v1,` + base64 of HMAC-SHA256, keyed with the
/// decoded secret, over `{id}.{timestamp}.{body}`.
///
/// `secret` is the subscription's `whsec_<base64>` secret; one that does not decode is a bug.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> DomainResult<String> {
    let encoded = secret.strip_prefix("whsec_").unwrap_or(secret);
    let key = STANDARD
        .decode(encoded)
        .map_err(|e| DomainError::Unexpected(anyhow::anyhow!("malformed signing secret: {e}")))?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key)
        .map_err(|e| DomainError::Unexpected(anyhow::anyhow!("signing key: {e}")))?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Ok(format!(
        "v1,{}",
        STANDARD.encode(mac.finalize().into_bytes())
    ))
}

/// A request's headers: (lowercase name, value), in the order sent.
pub type Headers = Vec<(Cow<'static, str>, String)>;

/// One HTTP request of a delivery: where, which headers, what body. Built by
/// [`build_request`]; the sender adds nothing and follows no redirect.
///
/// Its `Debug` masks the value of every header that is not the delivery's own (a webhook's custom
/// headers are credentials as often as not), so that no log prints one.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookRequest {
    /// The subscription's HTTPS URL.
    pub url: String,
    /// Header names (lowercase) and values, in order: the delivery's own, then the
    /// subscription's custom ones.
    pub headers: Headers,
    /// The event's exact JSON body.
    pub body: String,
    /// The workspace whose delivery this is, when known: a local receiver (`timetrack listen`)
    /// takes only its own workspace's deliveries. [`build_request`] leaves it unset;
    /// [`WebhookRequest::of_workspace`] sets it.
    pub workspace: Option<crate::ids::WorkspaceId>,
}

impl std::fmt::Debug for WebhookRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, String)> = self
            .headers
            .iter()
            .map(|(name, value)| match name {
                Cow::Borrowed(own) => (*own, value.clone()),
                Cow::Owned(custom) => (
                    custom.as_str(),
                    crate::webhooks::model::custom_headers::mask(value),
                ),
            })
            .collect();
        f.debug_struct("WebhookRequest")
            .field("url", &self.url)
            .field("headers", &headers)
            .field("body", &self.body)
            .field("workspace", &self.workspace)
            .finish()
    }
}

impl WebhookRequest {
    /// The request, as a delivery of `workspace`.
    #[must_use]
    pub fn of_workspace(mut self, workspace: crate::ids::WorkspaceId) -> Self {
        self.workspace = Some(workspace);
        self
    }
}

/// The request delivering an event: the body as stored, the Standard Webhooks headers
/// (`webhook-id` is the event id, the same on every retry; `webhook-timestamp` is the attempt's
/// Unix time), `X-Webhook-Event`, `Content-Type` and `User-Agent`, then the subscription's
/// `custom` headers.
///
/// With a `previous_secret` (inside a rotation's window), `webhook-signature` carries both
/// signatures separated by a space, the new one first: `v1,<new> v1,<old>`.
///
/// `webhook-ordering-key` and `webhook-sequence` say which entity the event is about and where
/// it stands among that entity's events (`events.md` section 4).
#[allow(clippy::too_many_arguments)]
pub fn build_request(
    url: &str,
    secrets: Secrets<'_>,
    event_id: &str,
    event_type: &str,
    body: &str,
    at: OffsetDateTime,
    ordering: Ordering<'_>,
    custom: &crate::webhooks::model::CustomHeaders,
) -> DomainResult<WebhookRequest> {
    let timestamp = at.unix_timestamp();
    let mut signature = sign(secrets.current, event_id, timestamp, body.as_bytes())?;
    if let Some(previous) = secrets.previous {
        signature.push(' ');
        signature.push_str(&sign(previous, event_id, timestamp, body.as_bytes())?);
    }
    Ok(WebhookRequest {
        url: url.to_owned(),
        headers: request_headers(
            event_id,
            event_type,
            timestamp,
            signature,
            ordering,
            custom.iter(),
        ),
        body: body.to_owned(),
        workspace: None,
    })
}

/// The headers of a delivery's request, in the order sent, given its signature header's value
/// and its custom headers: what [`build_request`] sends, and what the delivery log shows of an
/// attempt that was sent (the signature as recorded then, the custom headers masked; the secret
/// never). Custom names are sent in lowercase, as HTTP/1.1 and HTTP/2 both may; a custom
/// `user-agent` replaces the default one in its place.
pub fn request_headers<'a>(
    event_id: &str,
    event_type: &str,
    timestamp: i64,
    signature: String,
    ordering: Ordering<'_>,
    custom: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Headers {
    let mut headers: Headers = vec![
        ("content-type".into(), "application/json".to_owned()),
        (
            "user-agent".into(),
            format!("timetrack-webhooks/{}", env!("CARGO_PKG_VERSION")),
        ),
        ("webhook-id".into(), event_id.to_owned()),
        ("webhook-timestamp".into(), timestamp.to_string()),
        ("webhook-signature".into(), signature),
        ("x-webhook-event".into(), event_type.to_owned()),
        ("webhook-ordering-key".into(), ordering.key.to_owned()),
        ("webhook-sequence".into(), ordering.sequence.to_string()),
    ];
    for (name, value) in custom {
        if name.eq_ignore_ascii_case("user-agent") {
            headers[1] = (Cow::Owned("user-agent".to_owned()), value.to_owned());
        } else {
            headers.push((Cow::Owned(name.to_ascii_lowercase()), value.to_owned()));
        }
    }
    headers
}

/// The headers `attempt` of `detail`'s delivery was sent with ([`request_headers`], from the
/// signature and the masked custom headers recorded with the attempt and the Unix second it
/// started); `None` for an attempt recorded without its signature (before signatures were kept).
pub fn attempt_request_headers(
    detail: &crate::webhooks::model::DeliveryDetail,
    attempt: &crate::webhooks::model::DeliveryAttempt,
) -> Option<Headers> {
    let signature = attempt.signature.clone()?;
    // Masked when recorded; a record that cannot be read shows none rather than failing the
    // whole log.
    let custom = attempt
        .custom_headers
        .as_deref()
        .and_then(|text| crate::webhooks::model::CustomHeaders::from_stored(text).ok())
        .unwrap_or_default();
    Some(request_headers(
        &detail.record.event_id.to_string(),
        detail.record.event_type.as_str(),
        attempt.started_at.unix_timestamp(),
        signature,
        Ordering {
            key: &detail.ordering_key,
            sequence: detail.sequence,
        },
        custom.iter(),
    ))
}

/// Where a delivery's event stands among the events of its entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ordering<'a> {
    /// The entity's id: the time entry, client or project (the webhook, for a notice or a test).
    pub key: &'a str,
    /// A number that grows with each event of the key.
    pub sequence: i64,
}

/// The secrets a delivery is signed with.
#[derive(Debug, Clone, Copy)]
pub struct Secrets<'a> {
    /// The subscription's secret.
    pub current: &'a str,
    /// The secret it replaced, while a rotation's window lasts.
    pub previous: Option<&'a str>,
}

/// What an attempt produced, for the delivery log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptReport {
    /// The outcome.
    pub outcome: AttemptOutcome,
    /// From the start of the attempt to its end.
    pub latency: Duration,
    /// The first kilobyte of the response body, if there was one.
    pub response_excerpt: Option<ResponseExcerpt>,
}

/// The first kilobyte of a receiver's response body, as text that storage can always hold.
///
/// A receiver may answer anything: an image, protobuf, a compressed body. Text that is valid
/// UTF-8 without NUL is kept as it came; anything else is kept *lossy*: each invalid sequence and
/// each NUL becomes U+FFFD, and the excerpt says so. No answer can make the record of its attempt
/// unwritable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseExcerpt {
    text: String,
    lossy: bool,
}

impl ResponseExcerpt {
    /// Most bytes an excerpt holds (a character is never cut).
    pub const MAX_BYTES: usize = 1024;

    /// The excerpt of `body`; `None` for an empty body.
    pub fn of(body: &[u8]) -> Option<Self> {
        if body.is_empty() {
            return None;
        }
        let head = &body[..body.len().min(Self::MAX_BYTES)];
        // A character cut by the kilobyte's end is dropped, not replaced.
        let (text, lossy) = match std::str::from_utf8(head) {
            Ok(text) => (text.to_owned(), false),
            Err(e) if e.error_len().is_none() => (
                String::from_utf8_lossy(&head[..e.valid_up_to()]).into_owned(),
                false,
            ),
            Err(_) => (String::from_utf8_lossy(head).into_owned(), true),
        };
        let (mut text, lossy) = if text.contains('\0') {
            (text.replace('\0', "\u{FFFD}"), true)
        } else {
            (text, lossy)
        };
        // Replacements are three bytes each: cut again on a character boundary.
        let mut end = text.len().min(Self::MAX_BYTES);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        Some(Self { text, lossy })
    }

    /// The excerpt as stored: a kilobyte at most, never a NUL.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the body was not UTF-8 text, or held NUL: its bytes that were not are shown as
    /// U+FFFD.
    pub fn is_lossy(&self) -> bool {
        self.lossy
    }
}

/// `text` as storage can hold it: every NUL (which no stored text may contain) shown as U+FFFD.
/// For what a receiver or its TLS stack says about a failed attempt, which may quote its bytes.
pub fn storable(text: &str) -> Cow<'_, str> {
    if text.contains('\0') {
        Cow::Owned(text.replace('\0', "\u{FFFD}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// A delivery claimed by a worker, with everything needed to send it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedDelivery {
    /// The delivery.
    pub delivery_id: crate::webhooks::model::DeliveryId,
    /// Why it is made: a test gets one attempt and leaves the webhook's health alone.
    pub kind: crate::webhooks::model::DeliveryKind,
    /// The event (and the `webhook-id`).
    pub event_id: crate::ids::EventId,
    /// The subscription.
    pub subscription_id: crate::webhooks::model::WebhookId,
    /// The subscription's workspace.
    pub workspace_id: crate::ids::WorkspaceId,
    /// The event's type.
    pub event_type: crate::webhooks::model::EventType,
    /// The exact body.
    pub body: String,
    /// The destination.
    pub url: String,
    /// The subscription's description (for the notices about it).
    pub description: Option<String>,
    /// The signing secret.
    pub secret: String,
    /// The previous signing secret, while a rotation's window lasts.
    pub previous_secret: Option<String>,
    /// The subscription's custom headers.
    pub headers: crate::webhooks::model::CustomHeaders,
    /// Attempts made before this one.
    pub attempts: u32,
    /// The event's entity (`webhook-ordering-key`).
    pub ordering_key: String,
    /// Where the event stands among its entity's events (`webhook-sequence`).
    pub sequence: i64,
    /// Since when the subscription's deliveries have been failing, if they are.
    pub failing_since: Option<OffsetDateTime>,
    /// Whether the owner was told that the current failure streak has lasted
    /// (`WEBHOOK_FAILING`), so that a success is worth a `WEBHOOK_RECOVERED`.
    pub failing_notified: bool,
}

/// A notice to a webhook's owner, delivered to the other webhooks of its workspace that list
/// its type: `WEBHOOK_FAILING`, `WEBHOOK_DISABLED` or `WEBHOOK_RECOVERED`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The event, its body built.
    pub event: crate::webhooks::model::Event,
    /// The webhook it is about (which never receives it).
    pub about: crate::webhooks::model::WebhookId,
    /// For `WEBHOOK_FAILING`: the latest time the failure streak may have started. Storage
    /// checks it against the streak as it stands when the attempt is recorded (a success
    /// recorded meanwhile by another worker has ended the streak the claim saw).
    pub streak_started_by: Option<OffsetDateTime>,
}

/// What a worker records after an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    /// When the attempt started.
    pub started_at: OffsetDateTime,
    /// What it produced.
    pub report: AttemptReport,
    /// What follows.
    pub next: NextStep,
    /// Whether the subscription is to be disabled (failing for the configured time).
    pub disable_subscription: bool,
    /// The notice this attempt gives the owner, if any. `WEBHOOK_FAILING` and
    /// `WEBHOOK_RECOVERED` are sent once per streak: storage writes them only if no other
    /// attempt did first.
    pub notice: Option<Notice>,
    /// The `webhook-signature` header the request was sent with (kept to show the request as
    /// sent; it is no secret); `None` for a record of no request.
    pub signature: Option<String>,
    /// The custom headers the request was sent with, masked (never their values), as
    /// [`CustomHeaders::to_stored`](crate::webhooks::model::CustomHeaders::to_stored) writes them; `None`
    /// when it had none.
    pub custom_headers: Option<String>,
}

impl AttemptRecord {
    /// When the attempt ended: its start plus its latency.
    pub fn finished_at(&self) -> OffsetDateTime {
        self.started_at + self.report.latency
    }

    /// Whether recording this attempt ends its subscription: deleted after a 410, or disabled
    /// after failing for the configured time. Such an attempt is recorded on its own, with the subscription's
    /// end, rather than in a batch.
    pub fn ends_subscription(&self) -> bool {
        self.next == NextStep::Unsubscribe || self.disable_subscription
    }

    /// The status code and error text this attempt leaves on its delivery (text storage can
    /// hold: see [`storable`]).
    pub fn last_result(&self) -> (Option<i32>, Option<String>) {
        match &self.report.outcome {
            AttemptOutcome::Delivered { status } => (Some(i32::from(*status)), None),
            AttemptOutcome::Rejected { status, .. } => {
                (Some(i32::from(*status)), Some(format!("HTTP {status}")))
            }
            AttemptOutcome::Failed { reason, detail } => (
                None,
                Some(format!("{}: {}", reason.as_str(), storable(detail))),
            ),
        }
    }

    /// This attempt with none of the receiver's text: no excerpt of its answer, and a failure's
    /// detail replaced by a fixed one. What is recorded when the whole record cannot be written,
    /// so that the delivery's state still moves on.
    pub fn without_receiver_text(&self) -> Self {
        let outcome = match &self.report.outcome {
            AttemptOutcome::Failed { reason, .. } => AttemptOutcome::Failed {
                reason: *reason,
                detail: "the details of this failure could not be stored".to_owned(),
            },
            other => other.clone(),
        };
        Self {
            report: AttemptReport {
                outcome,
                latency: self.report.latency,
                response_excerpt: None,
            },
            ..self.clone()
        }
    }

    /// Whether this attempt is recorded on its own rather than in a batch: it ends its
    /// subscription, or it gives a notice.
    pub fn recorded_alone(&self) -> bool {
        self.ends_subscription() || self.notice.is_some()
    }
}

/// Refuses a batch of `attempts` holding one that must be recorded on its own
/// ([`AttemptRecord::recorded_alone`]): `DeliveryQueue::record_and_claim` takes none of those,
/// whatever stores it.
pub fn none_recorded_alone(attempts: &[(ClaimedDelivery, AttemptRecord)]) -> DomainResult<()> {
    match attempts.iter().find(|(_, a)| a.recorded_alone()) {
        Some((claimed, _)) => Err(DomainError::Unexpected(anyhow::anyhow!(
            "the attempt on {} must be recorded on its own",
            claimed.subscription_id.as_str()
        ))),
        None => Ok(()),
    }
}

/// How many deliveries a claim may lease, beyond its limit: the caps that keep one subscription,
/// and one workspace, from taking the slots the others need.
///
/// A subscription has at most `per_subscription` deliveries in flight across every process (a
/// slow or dead endpoint holds no more). A workspace has at most `per_workspace` in flight in the
/// claiming process, counting `held`, what that process already holds of each: however many of
/// its endpoints hang, the other workspaces keep the rest of the process's slots. Within those
/// caps the claim is fair between workspaces: each workspace's next delivery comes before any
/// workspace's one after it, counting what each holds (round-robin over the workspaces that
/// wait, the least served first), oldest first among equals.
///
/// The share is work-conserving for the workspaces of `unshared`: past their share they may
/// take what no other workspace wants in the same claim (their deliveries past it come after
/// every other workspace's within its own, in the same fair order). The worker names there the
/// workspaces whose endpoints are answering quickly ([`QuickWorkspaces`]), so a lone tenant's
/// burst uses every slot while a tenant whose endpoints hang stays within its share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlightCaps {
    /// Most deliveries of one subscription in flight at once, across all processes.
    pub per_subscription: u32,
    /// Most deliveries of one workspace in flight at once in the claiming process, while
    /// another workspace has deliveries waiting (always, for a workspace not in `unshared`).
    pub per_workspace: u32,
    /// What the claiming process holds in flight, per workspace (claimed and not yet recorded,
    /// not counting attempts recorded by the same round).
    pub held: Vec<(crate::ids::WorkspaceId, u32)>,
    /// The workspaces that may go past `per_workspace` with what no other workspace wants.
    pub unshared: Vec<crate::ids::WorkspaceId>,
}

impl InFlightCaps {
    /// Only the per-subscription cap: no workspace is held back by the process's share.
    pub fn per_subscription(per_subscription: u32) -> Self {
        Self {
            per_subscription,
            per_workspace: u32::MAX,
            held: Vec::new(),
            unshared: Vec::new(),
        }
    }

    /// The default share of a process's `concurrency` slots that one workspace may hold: three
    /// quarters, at least one. A quarter always stays for the other workspaces; and a lone
    /// workspace's burst keeps most of its window (half cost a burst to ten subscriptions of one
    /// workspace about a fifth of its deliveries a second, in smaller rounds). Attempts that hang
    /// leave the process's slots after a second anyway (the worker's `slow_after`), so the
    /// share is what the others are sure of in that second, and a bound on what one workspace
    /// holds open.
    pub fn default_workspace_share(concurrency: usize) -> u32 {
        u32::try_from(concurrency - concurrency / 4)
            .unwrap_or(u32::MAX)
            .max(1)
    }
}

/// Whether a round that records attempts also claims due deliveries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimWhen {
    /// Always, up to the limit: the worker was woken by new deliveries, its poll came, or its
    /// last claim took all it asked for (more may be due).
    Always,
    /// Only when a subscription of the recorded attempts has due deliveries that no worker
    /// holds: those the recorded ones held back (the next of an ordering key, or those beyond
    /// the subscription's in-flight cap). Otherwise the claim would find nothing, so it is not
    /// run: at moderate load, every delivery's record would cost a claim that finds nothing.
    IfHeldBack,
}

/// The state of the delivery queue at one moment, for monitoring.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Pending deliveries whose next attempt is due and that no worker holds.
    pub due: u64,
    /// Pending deliveries waiting for a later retry time.
    pub scheduled: u64,
    /// Pending deliveries leased by a worker right now.
    pub in_flight: u64,
    /// How long the oldest due delivery has waited past its attempt time (zero when none).
    pub oldest_due_age: Duration,
}

/// Why an attempt got no HTTP response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureReason {
    /// The name did not resolve.
    Dns,
    /// The resolved address is in a blocked range (SSRF guard).
    BlockedTarget,
    /// No TCP connection within the connect time-out, or refused.
    Connect,
    /// The TLS handshake failed (certificate, protocol).
    Tls,
    /// No complete response within the total time-out.
    Timeout,
    /// The connection broke or the response was malformed.
    Protocol,
}

impl FailureReason {
    /// A short stable name, stored as the delivery's error kind.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dns => "dns",
            Self::BlockedTarget => "blocked_target",
            Self::Connect => "connect",
            Self::Tls => "tls",
            Self::Timeout => "timeout",
            Self::Protocol => "protocol",
        }
    }
}

/// What one HTTP attempt came to. An outcome is data, never an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// A 2xx response.
    Delivered {
        /// The status code.
        status: u16,
    },
    /// Any other response, 3xx included (redirects are never followed).
    Rejected {
        /// The status code.
        status: u16,
        /// The `Retry-After` of a 429 or 503, if it had a usable one.
        retry_after: Option<Duration>,
    },
    /// No response.
    Failed {
        /// Why.
        reason: FailureReason,
        /// Details for the delivery log.
        detail: String,
    },
}

/// The waits between attempts, after the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetrySchedule(Vec<Duration>);

impl Default for RetrySchedule {
    /// 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h: ten attempts over about three days.
    fn default() -> Self {
        Self(vec![
            Duration::seconds(5),
            Duration::minutes(5),
            Duration::minutes(30),
            Duration::hours(2),
            Duration::hours(5),
            Duration::hours(10),
            Duration::hours(14),
            Duration::hours(20),
            Duration::hours(24),
        ])
    }
}

impl RetrySchedule {
    /// Parses a comma-separated list of waits such as `1s,2s,4s` (units `ms`, `s`, `m`, `h`);
    /// an empty list means no retry.
    pub fn parse(text: &str) -> DomainResult<Self> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(Self(Vec::new()));
        }
        text.split(',')
            .map(|part| {
                let part = part.trim();
                let invalid = || DomainError::validation(format!(
                    "invalid retry wait {part:?}: expected waits like 5s,5m,1h (units ms, s, m, h)"
                ));
                match duration_with_unit(part) {
                    Some((wait, unit)) if unit != "d" => Ok(wait),
                    _ => Err(invalid()),
                }
            })
            .collect::<DomainResult<Vec<_>>>()
            .map(Self)
    }

    /// The wait before attempt `attempts_made + 1`, or `None` when the schedule is exhausted.
    pub fn wait_after(&self, attempts_made: u32) -> Option<Duration> {
        let index = usize::try_from(attempts_made).ok()?.checked_sub(1)?;
        self.0.get(index).copied()
    }

    /// Most attempts a delivery gets: the first and one per wait.
    pub fn max_attempts(&self) -> usize {
        self.0.len() + 1
    }
}

/// What happens to a delivery after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    /// Delivered: done.
    Done,
    /// Try again at this time.
    RetryAt(OffsetDateTime),
    /// The schedule is exhausted: `FAILED` for good.
    GiveUp,
    /// `410 Gone`: the subscriber asked to end the subscription.
    Unsubscribe,
}

/// Longest `Retry-After` honoured.
pub const MAX_RETRY_AFTER: Duration = Duration::hours(24);
/// Relative jitter of each wait: ±20 %.
pub const JITTER: f64 = 0.2;
/// A subscription whose deliveries all failed for this long is disabled, unless the setting
/// `TIMETRACK_WEBHOOK_DISABLE_AFTER` says otherwise.
pub const DEFAULT_DISABLE_AFTER: Duration = Duration::days(5);
/// The owner is told (`WEBHOOK_FAILING`) when a subscription's deliveries have all failed for
/// this long, unless the setting `TIMETRACK_WEBHOOK_FAILING_AFTER` says otherwise.
pub const DEFAULT_FAILING_AFTER: Duration = Duration::hours(24);

/// `text` as a whole number and a unit (`ms`, `s`, `m`, `h` or `d`), with the unit; `None` for
/// anything else.
fn duration_with_unit(text: &str) -> Option<(Duration, &str)> {
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let n: i64 = number.parse().ok()?;
    let duration = match unit {
        "ms" => Duration::milliseconds(n),
        "s" => Duration::seconds(n),
        "m" => Duration::minutes(n),
        "h" => Duration::hours(n),
        "d" => Duration::days(n),
        _ => return None,
    };
    Some((duration, unit))
}

/// Parses a positive duration with a unit: `500ms`, `3s`, `10m`, `24h`, `5d`.
pub fn parse_duration(text: &str) -> DomainResult<Duration> {
    match duration_with_unit(text.trim()) {
        Some((duration, _)) if duration.is_positive() => Ok(duration),
        _ => Err(DomainError::validation(format!(
            "invalid duration {text:?}: expected a positive whole number and a unit, like 3s, \
             24h or 5d (units ms, s, m, h, d)"
        ))),
    }
}

/// Decides what follows attempt number `attempts_made` (1 for the first) that ended in
/// `outcome` at `now`. Waits get ±20 % jitter drawn from `random`; a 429 or 503 with
/// `Retry-After` waits at least that long (at most 24 h).
pub fn next_step(
    outcome: &AttemptOutcome,
    attempts_made: u32,
    now: OffsetDateTime,
    schedule: &RetrySchedule,
    random: &dyn RandomSource,
) -> NextStep {
    let retry_after = match outcome {
        AttemptOutcome::Delivered { .. } => return NextStep::Done,
        AttemptOutcome::Rejected { status: 410, .. } => return NextStep::Unsubscribe,
        AttemptOutcome::Rejected {
            status: 429 | 503,
            retry_after,
        } => retry_after.map(|r| r.min(MAX_RETRY_AFTER)),
        _ => None,
    };
    let Some(wait) = schedule.wait_after(attempts_made) else {
        return NextStep::GiveUp;
    };
    let mut bytes = [0u8; 4];
    random.fill(&mut bytes);
    // A uniform factor in [1 - JITTER, 1 + JITTER].
    let unit = f64::from(u32::from_le_bytes(bytes)) / f64::from(u32::MAX);
    let jittered = wait * (1.0 + JITTER * (2.0 * unit - 1.0));
    NextStep::RetryAt(now + retry_after.map_or(jittered, |r| jittered.max(r)))
}

/// Whether a subscription failing since `failing_since` should be disabled at `now`, when
/// subscriptions are disabled after failing for `after`.
pub fn should_disable(
    failing_since: Option<OffsetDateTime>,
    now: OffsetDateTime,
    after: Duration,
) -> bool {
    failing_since.is_some_and(|since| now - since >= after)
}
