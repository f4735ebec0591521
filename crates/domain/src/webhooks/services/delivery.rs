//! Delivering claimed webhook deliveries: sign, send, decide what follows, record it (and claim
//! the next in the same round trip).

use std::sync::Arc;

use time::Duration;

use crate::delivery::{
    AttemptOutcome, AttemptRecord, ClaimWhen, ClaimedDelivery, DEFAULT_DISABLE_AFTER,
    DEFAULT_FAILING_AFTER, InFlightCaps, NextStep, Notice, Ordering, RetrySchedule, Secrets,
    build_request, next_step, should_disable,
};
use crate::error::DomainResult;
use crate::ids::{EventId, WorkspaceId};
use crate::payload::{NoticeWebhook, WebhookNoticePayload};
use crate::system::{Clock, IdGenerator, RandomSource};
use crate::timefmt::rfc3339;
use crate::webhooks::model::{DeliveryKind, EventSubject, EventType};
use crate::webhooks::ports::{DeliveryQueue, WebhookSender};

/// How deliveries are claimed and retried.
#[derive(Debug, Clone)]
pub struct DeliverySettings {
    /// Waits between attempts.
    pub schedule: RetrySchedule,
    /// How long a claim is held; longer than the sender's total time-out.
    pub lease: Duration,
    /// Most deliveries of one subscription in flight at once, across all workers.
    pub max_in_flight_per_subscription: u32,
    /// Most deliveries of one workspace in flight at once in one process
    /// ([`InFlightCaps`]; by default half the process's slots).
    pub max_in_flight_per_workspace: u32,
    /// How long a subscription's deliveries may all fail before it is disabled.
    pub disable_after: Duration,
    /// How long a subscription's deliveries may all fail before its owner is told
    /// (`WEBHOOK_FAILING`).
    pub failing_after: Duration,
}

impl Default for DeliverySettings {
    fn default() -> Self {
        Self {
            schedule: RetrySchedule::default(),
            lease: Duration::seconds(30),
            max_in_flight_per_subscription: 10,
            max_in_flight_per_workspace: u32::MAX,
            disable_after: DEFAULT_DISABLE_AFTER,
            failing_after: DEFAULT_FAILING_AFTER,
        }
    }
}

/// Claims and delivers webhook deliveries; the worker loop around it decides when and how many.
#[derive(Clone)]
pub struct DeliveryService {
    queue: Arc<dyn DeliveryQueue>,
    sender: Arc<dyn WebhookSender>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    random: Arc<dyn RandomSource>,
    settings: DeliverySettings,
}

impl std::fmt::Debug for DeliveryService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeliveryService")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl DeliveryService {
    /// Builds the service on its ports.
    pub fn new(
        queue: Arc<dyn DeliveryQueue>,
        sender: Arc<dyn WebhookSender>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
        random: Arc<dyn RandomSource>,
        settings: DeliverySettings,
    ) -> Self {
        Self {
            queue,
            sender,
            clock,
            ids,
            random,
            settings,
        }
    }

    /// Records `done` (attempts that do not end their subscription, see
    /// [`AttemptRecord::recorded_alone`]) and claims up to `limit` due deliveries, leased for
    /// the configured time, in one transaction: the slots `done` held are free for the claim.
    /// `when` says whether to claim in any case or only when `done` held deliveries back.
    /// `held` is what this process has in flight besides `done`, per workspace: the claim keeps
    /// each workspace within its share of the process's slots ([`InFlightCaps`]), but those of
    /// `unshared`, which may take past it what no other workspace wants.
    pub async fn record_and_claim(
        &self,
        done: &[(ClaimedDelivery, AttemptRecord)],
        limit: u32,
        when: ClaimWhen,
        held: Vec<(WorkspaceId, u32)>,
        unshared: Vec<WorkspaceId>,
    ) -> DomainResult<Vec<ClaimedDelivery>> {
        let now = self.clock.now();
        let caps = InFlightCaps {
            per_subscription: self.settings.max_in_flight_per_subscription,
            per_workspace: self.settings.max_in_flight_per_workspace,
            held,
            unshared,
        };
        self.queue
            .record_and_claim(done, now, now + self.settings.lease, limit, &caps, when)
            .await
    }

    /// Records one attempt on its own, with the subscription's end if it ends it and its notice
    /// if it gives one. Returns whether the notice was written (a notice sent once per streak is
    /// not written twice).
    pub async fn record(
        &self,
        claimed: &ClaimedDelivery,
        record: &AttemptRecord,
    ) -> DomainResult<bool> {
        self.queue.record(claimed, record).await
    }

    /// Sends one claimed delivery and decides what follows; the caller records the result
    /// ([`record_and_claim`](Self::record_and_claim), or [`record`](Self::record) when it is
    /// recorded alone).
    ///
    /// A test delivery gets one attempt: delivered or failed for good (a `410` included: it does
    /// not end the subscription), and it neither disables the subscription nor gives a notice.
    pub async fn attempt(&self, claimed: &ClaimedDelivery) -> DomainResult<AttemptRecord> {
        let started = self.clock.now();
        let request = build_request(
            &claimed.url,
            Secrets {
                current: &claimed.secret,
                previous: claimed.previous_secret.as_deref(),
            },
            &claimed.event_id.to_string(),
            claimed.event_type.as_str(),
            &claimed.body,
            started,
            Ordering {
                key: &claimed.ordering_key,
                sequence: claimed.sequence,
            },
            &claimed.headers,
        )?
        .of_workspace(claimed.workspace_id);
        let signature = request
            .headers
            .iter()
            .find(|(name, _)| name == "webhook-signature")
            .map(|(_, value)| value.clone());
        let custom_headers = claimed.headers.masked_stored();
        let report = self.sender.send(&request).await;
        let finished = started + report.latency;
        if claimed.kind == DeliveryKind::Test {
            let next = match report.outcome {
                AttemptOutcome::Delivered { .. } => NextStep::Done,
                _ => NextStep::GiveUp,
            };
            return Ok(AttemptRecord {
                started_at: started,
                report,
                next,
                disable_subscription: false,
                notice: None,
                signature,
                custom_headers,
            });
        }
        let next = next_step(
            &report.outcome,
            claimed.attempts + 1,
            finished,
            &self.settings.schedule,
            self.random.as_ref(),
        );
        let failing = !matches!(next, NextStep::Done | NextStep::Unsubscribe);
        let failing_since = claimed.failing_since.unwrap_or(started);
        let disable_subscription =
            failing && should_disable(Some(failing_since), finished, self.settings.disable_after);
        let mut record = AttemptRecord {
            started_at: started,
            report,
            next,
            disable_subscription,
            notice: None,
            signature,
            custom_headers,
        };
        let notice = if next == NextStep::Unsubscribe {
            Some((EventType::WebhookDisabled, Some("gone"), "DELETED"))
        } else if disable_subscription {
            Some((EventType::WebhookDisabled, Some("failing"), "DISABLED"))
        } else if failing
            && !claimed.failing_notified
            && should_disable(Some(failing_since), finished, self.settings.failing_after)
        {
            Some((EventType::WebhookFailing, None, "ACTIVE"))
        } else if next == NextStep::Done
            && (claimed.failing_notified || claimed.failing_since.is_some())
        {
            // Storage writes it only if the owner was told of the streak this success ends
            // (which another worker may have done since the claim).
            Some((EventType::WebhookRecovered, None, "ACTIVE"))
        } else {
            None
        };
        if let Some((event_type, reason, status)) = notice {
            record.notice = Some(self.notice(claimed, &record, event_type, reason, status)?);
        }
        Ok(record)
    }

    /// The notice of type `event_type` about `claimed`'s subscription after `record`.
    fn notice(
        &self,
        claimed: &ClaimedDelivery,
        record: &AttemptRecord,
        event_type: EventType,
        reason: Option<&'static str>,
        status: &'static str,
    ) -> DomainResult<Notice> {
        let (last_status_code, last_error) = record.last_result();
        let at = record.finished_at();
        // The streak a notice speaks of: the one this attempt ended or extends; a `410` after a
        // success starts none.
        let failing_since = match record.next {
            NextStep::Done | NextStep::Unsubscribe => claimed.failing_since,
            _ => Some(claimed.failing_since.unwrap_or(record.started_at)),
        };
        let payload = WebhookNoticePayload {
            event: event_type.as_str(),
            webhook: NoticeWebhook {
                id: claimed.subscription_id.to_string(),
                url: claimed.url.clone(),
                description: claimed.description.clone(),
                status,
            },
            reason,
            failing_since: failing_since.map(rfc3339),
            last_status_code,
            last_error,
            timestamp: rfc3339(at),
        };
        Ok(Notice {
            event: crate::webhooks::model::event::event_of(
                EventId(self.ids.new_uuid()),
                claimed.workspace_id,
                event_type,
                &payload,
                at,
                EventSubject::default(),
                &claimed.subscription_id,
            )?,
            about: claimed.subscription_id.clone(),
            streak_started_by: (event_type == EventType::WebhookFailing)
                .then(|| record.finished_at() - self.settings.failing_after),
        })
    }
}
