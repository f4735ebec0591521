//! Delivering claimed webhook deliveries: sign, send, decide what follows, record it (and claim
//! the next in the same round trip).

use std::sync::Arc;

use time::Duration;

use crate::delivery::{
    AttemptRecord, ClaimedDelivery, DEFAULT_DISABLE_AFTER, NextStep, RetrySchedule, build_request,
    next_step, should_disable,
};
use crate::error::DomainResult;
use crate::ports::{Clock, DeliveryQueue, RandomSource, WebhookSender};

/// How deliveries are claimed and retried.
#[derive(Debug, Clone)]
pub struct DeliverySettings {
    /// Waits between attempts.
    pub schedule: RetrySchedule,
    /// How long a claim is held; longer than the sender's total time-out.
    pub lease: Duration,
    /// Most deliveries of one subscription in flight at once, across all workers.
    pub max_in_flight_per_subscription: u32,
    /// How long a subscription's deliveries may all fail before it is disabled.
    pub disable_after: Duration,
}

impl Default for DeliverySettings {
    fn default() -> Self {
        Self {
            schedule: RetrySchedule::default(),
            lease: Duration::seconds(30),
            max_in_flight_per_subscription: 10,
            disable_after: DEFAULT_DISABLE_AFTER,
        }
    }
}

/// Claims and delivers webhook deliveries; the worker loop around it decides when and how many.
#[derive(Clone)]
pub struct DeliveryService {
    queue: Arc<dyn DeliveryQueue>,
    sender: Arc<dyn WebhookSender>,
    clock: Arc<dyn Clock>,
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
        random: Arc<dyn RandomSource>,
        settings: DeliverySettings,
    ) -> Self {
        Self {
            queue,
            sender,
            clock,
            random,
            settings,
        }
    }

    /// Records `done` (attempts that do not end their subscription, see
    /// [`AttemptRecord::ends_subscription`]) and claims up to `limit` due deliveries, leased for
    /// the configured time, in one transaction: the slots `done` held are free for the claim.
    pub async fn record_and_claim(
        &self,
        done: &[(ClaimedDelivery, AttemptRecord)],
        limit: u32,
    ) -> DomainResult<Vec<ClaimedDelivery>> {
        let now = self.clock.now();
        self.queue
            .record_and_claim(
                done,
                now,
                now + self.settings.lease,
                limit,
                self.settings.max_in_flight_per_subscription,
            )
            .await
    }

    /// Records one attempt on its own, with the subscription's end if it ends it.
    pub async fn record(
        &self,
        claimed: &ClaimedDelivery,
        record: &AttemptRecord,
    ) -> DomainResult<()> {
        self.queue.record(claimed, record).await
    }

    /// Sends one claimed delivery and decides what follows; the caller records the result
    /// ([`record_and_claim`](Self::record_and_claim), or [`record`](Self::record) when it ends
    /// the subscription).
    pub async fn attempt(&self, claimed: &ClaimedDelivery) -> DomainResult<AttemptRecord> {
        let started = self.clock.now();
        let request = build_request(
            &claimed.url,
            &claimed.secret,
            &claimed.event_id.to_string(),
            claimed.event_type.as_str(),
            &claimed.body,
            started,
        )?;
        let report = self.sender.send(&request).await;
        let finished = started + report.latency;
        let next = next_step(
            &report.outcome,
            claimed.attempts + 1,
            finished,
            &self.settings.schedule,
            self.random.as_ref(),
        );
        let failing = !matches!(next, NextStep::Done | NextStep::Unsubscribe);
        let disable_subscription = failing
            && should_disable(
                Some(claimed.failing_since.unwrap_or(started)),
                finished,
                self.settings.disable_after,
            );
        Ok(AttemptRecord {
            started_at: started,
            report,
            next,
            disable_subscription,
        })
    }
}
