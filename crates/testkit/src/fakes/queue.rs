//! The delivery queue in memory: leases, caps, ordering, and what follows an attempt, decided by
//! the domain's rules as the PostgreSQL queue stores them (held together by the `delivery_queue`
//! contracts).

use timetrack_domain::delivery::streak::{self, Round, Streak};
use timetrack_domain::delivery::{
    AttemptOutcome, AttemptRecord, ClaimWhen, ClaimedDelivery, InFlightCaps, NextStep, QueueStats,
};
use timetrack_domain::ports::DeliveryQueue;

use super::*;

/// What the fake keeps of a subscription's streak beside [`Streak`].
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct StoredStreak {
    streak: Streak,
    /// Whether the owner was told of the current streak (`WEBHOOK_FAILING`).
    told: bool,
}

impl Tables {
    /// Whether `id`'s lease runs at `now`.
    fn leased(&self, id: DeliveryId, now: OffsetDateTime) -> bool {
        self.leases.get(&id).is_some_and(|until| *until > now)
    }

    /// The delivery's ordering key and sequence: its event's key and place.
    pub(super) fn order_of(&self, event: EventId) -> (String, i64) {
        let key = self
            .events
            .iter()
            .find(|e| e.id == event)
            .map(|e| e.ordering_key.clone())
            .unwrap_or_default();
        let sequence = self.placed.get(&event).map_or(0, |(p, _)| p.seq);
        (key, sequence)
    }

    /// Writes one attempt as the queue does: the delivery's new state unless it is no longer
    /// pending, and its lease freed.
    fn write_attempt(&mut self, claimed: &ClaimedDelivery, attempt: &AttemptRecord) {
        let finished = attempt.finished_at();
        let (code, error) = attempt.last_result();
        let asked_to_wait = matches!(
            attempt.report.outcome,
            AttemptOutcome::Rejected {
                retry_after: Some(_),
                ..
            }
        );
        let Some((_, record)) = self
            .deliveries
            .iter_mut()
            .find(|(_, d)| d.id == claimed.delivery_id && d.status == DeliveryStatus::Pending)
        else {
            return;
        };
        let (status, next) = match attempt.next {
            NextStep::Done => (DeliveryStatus::Delivered, None),
            NextStep::RetryAt(at) => (DeliveryStatus::Pending, Some(at)),
            NextStep::GiveUp | NextStep::Unsubscribe => (DeliveryStatus::Failed, None),
        };
        record.status = status;
        record.attempts = i32::try_from(claimed.attempts).unwrap_or(i32::MAX - 1) + 1;
        record.next_attempt_at = next;
        record.last_attempt_at = Some(attempt.started_at);
        record.last_status_code = code;
        record.last_error = error;
        record.updated_at = finished;
        match attempt.next {
            NextStep::RetryAt(at) if asked_to_wait => {
                self.not_before.insert(claimed.delivery_id, at);
            }
            _ => {
                self.not_before.remove(&claimed.delivery_id);
            }
        }
        self.leases.remove(&claimed.delivery_id);
    }

    /// Applies what `rounds` change in their subscriptions' streaks, as the domain decides.
    fn apply_rounds(&mut self, rounds: &[(&WebhookId, Round)]) {
        for (id, round) in rounds {
            let stored = self.streaks.get(*id).copied().unwrap_or_default();
            let Some(change) = streak::after_round(&stored.streak, round) else {
                continue;
            };
            let back_since = change.bring_forward.and_then(|bring| {
                let mut waiting: Vec<&mut DeliveryRecord> = self
                    .deliveries
                    .iter_mut()
                    .filter(|(s, d)| {
                        s == *id
                            && d.status == DeliveryStatus::Pending
                            && d.next_attempt_at.is_some_and(|at| at > bring.due_at)
                            && d.updated_at <= bring.back_since
                            && not_before_allows(&self.not_before, d.id, bring.due_at)
                    })
                    .map(|(_, d)| d)
                    .collect();
                waiting.sort_by_key(|d| d.next_attempt_at);
                let mut brought = 0;
                for d in waiting.into_iter().take(bring.limit as usize) {
                    d.next_attempt_at = Some(bring.due_at);
                    d.updated_at = bring.due_at;
                    brought += 1;
                }
                bring.back_since_after(brought)
            });
            self.streaks.insert(
                (*id).clone(),
                StoredStreak {
                    streak: Streak {
                        failing_since: change.failing_since,
                        failures: change.failures,
                        back_since,
                    },
                    told: stored.told && !change.forget_told,
                },
            );
        }
    }

    /// Writes `notice` as the queue does: its event, shown to the owner of the webhook it is
    /// about alone, and one pending delivery for each other active subscription of the workspace
    /// that lists its type and that it shows to.
    fn notice(&mut self, notice: &timetrack_domain::delivery::Notice) {
        let event = &notice.event;
        let owner = self
            .subscriptions
            .iter()
            .find(|s| s.id == notice.about)
            .map(|s| s.user_id);
        self.place(std::slice::from_ref(event), owner);
        self.events.push(event.clone());
        let listeners: Vec<WebhookId> = self
            .subscriptions
            .iter()
            .filter(|s| {
                s.workspace_id == event.workspace_id
                    && s.status == SubscriptionStatus::Active
                    && s.events.contains(&event.event_type)
                    && s.id != notice.about
                    && owner.is_none_or(|o| s.user_id == o)
            })
            .map(|s| s.id.clone())
            .collect();
        for listener in listeners {
            self.queue(&listener, event, DeliveryKind::Event, event.created_at);
        }
    }

    /// Ends `subscription` if it is active (`status`), cancelling what is queued for it and
    /// freeing its leases; whether it did.
    fn end_subscription(
        &mut self,
        subscription: &WebhookId,
        status: SubscriptionStatus,
        action: &'static str,
        reason: String,
        at: OffsetDateTime,
    ) -> bool {
        let Some(sub) = self
            .subscriptions
            .iter_mut()
            .find(|s| &s.id == subscription && s.status == SubscriptionStatus::Active)
        else {
            return false;
        };
        sub.status = status;
        sub.updated_at = at;
        let workspace_id = sub.workspace_id;
        let mut freed = Vec::new();
        for (s, d) in &mut self.deliveries {
            if s == subscription && d.status == DeliveryStatus::Pending {
                d.status = DeliveryStatus::Cancelled;
                d.updated_at = at;
                freed.push(d.id);
            }
        }
        for id in freed {
            self.leases.remove(&id);
        }
        self.audit.push(AuditEntry {
            workspace_id,
            actor_user_id: None,
            action,
            target_type: "webhook",
            target_id: subscription.to_string(),
            reason: Some(reason),
            at,
        });
        true
    }

    /// What `subscription` is claimed with, for `record`.
    fn claimed(
        &self,
        subscription: &Subscription,
        record: &DeliveryRecord,
        now: OffsetDateTime,
    ) -> Option<ClaimedDelivery> {
        let event = self.events.iter().find(|e| e.id == record.event_id)?;
        let (ordering_key, sequence) = self.sent_order(record.event_id);
        let stored = self
            .streaks
            .get(&subscription.id)
            .copied()
            .unwrap_or_default();
        Some(ClaimedDelivery {
            delivery_id: record.id,
            kind: record.kind,
            event_id: event.id,
            subscription_id: subscription.id.clone(),
            workspace_id: subscription.workspace_id,
            // The type it is sent as (a test may be sent as another type).
            event_type: record.event_type,
            body: event.body.clone(),
            url: subscription.url.clone(),
            description: subscription.description.clone(),
            secret: subscription.secret.clone(),
            previous_secret: subscription
                .previous_secret_expires_at
                .filter(|until| *until > now)
                .and_then(|_| self.previous_secrets.get(&subscription.id).cloned()),
            headers: subscription.headers.clone(),
            attempts: u32::try_from(record.attempts).unwrap_or(0),
            ordering_key,
            sequence,
            failing_since: stored.streak.failing_since,
            failing_notified: stored.told,
        })
    }

    /// The claim, as `functions/claim_deliveries.sql` makes it.
    fn claim(
        &mut self,
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        limit: u32,
        caps: &InFlightCaps,
    ) -> Vec<ClaimedDelivery> {
        let limit = limit as usize;
        let per_workspace = caps.per_workspace as usize;
        // Each subscription's picks: its oldest due deliveries without a running lease, first of
        // their ordering key, up to its free slots and its workspace's room.
        let mut picked: Vec<(DeliveryRecord, Subscription, i64, bool)> = Vec::new();
        for sub in &self.subscriptions {
            let revoked = self
                .keys
                .get(&sub.api_key_id)
                .is_none_or(|(key, _)| key.revoked_at.is_some());
            let tests_only = match sub.status {
                SubscriptionStatus::Active => false,
                SubscriptionStatus::Disabled => true,
                SubscriptionStatus::Deleted => continue,
            };
            if revoked {
                continue;
            }
            let held: usize = caps
                .held
                .iter()
                .filter(|(ws, _)| *ws == sub.workspace_id)
                .map(|(_, n)| *n as usize)
                .sum();
            // Signed: an unshared workspace may hold more than its share.
            let room = per_workspace as i64 - held as i64;
            let unshared = caps.unshared.contains(&sub.workspace_id);
            let reach = if unshared {
                limit
            } else {
                usize::try_from(room).unwrap_or(0)
            };
            let in_flight = self
                .deliveries
                .iter()
                .filter(|(s, d)| s == &sub.id && self.leased(d.id, now))
                .count();
            let slots = if tests_only {
                limit.min(reach)
            } else {
                limit
                    .min(reach)
                    .min((caps.per_subscription as usize).saturating_sub(in_flight))
            };
            let mut due: Vec<&DeliveryRecord> = self
                .deliveries
                .iter()
                .filter(|(s, d)| {
                    s == &sub.id
                        && d.status == DeliveryStatus::Pending
                        && d.next_attempt_at.is_some_and(|at| at <= now)
                        && !self.leased(d.id, now)
                        && (!tests_only || d.kind == DeliveryKind::Test)
                        && (tests_only || self.first_pending_of_key(&sub.id, d))
                })
                .map(|(_, d)| d)
                .collect();
            due.sort_by_key(|d| (d.next_attempt_at, d.id));
            for d in due.into_iter().take(slots) {
                picked.push((d.clone(), sub.clone(), room, unshared));
            }
        }
        // Each workspace's line, oldest first; then fairly between workspaces, those past their
        // share (of unshared workspaces) after all the others.
        picked.sort_by_key(|(d, s, _, _)| (s.workspace_id, d.next_attempt_at, d.id));
        let mut ranked: Vec<((bool, i64), DeliveryRecord, Subscription)> = Vec::new();
        let mut nth = 0_i64;
        let mut previous = None;
        for (d, s, room, unshared) in picked {
            nth = if previous == Some(s.workspace_id) {
                nth + 1
            } else {
                1
            };
            previous = Some(s.workspace_id);
            if nth <= room || unshared {
                ranked.push(((nth > room, (per_workspace as i64 - room) + nth), d, s));
            }
        }
        ranked.sort_by_key(|(turn, d, _)| (*turn, d.next_attempt_at, d.id));
        let mut claimed = Vec::new();
        for (_, d, s) in ranked.into_iter().take(limit) {
            self.leases.insert(d.id, lease_until);
            if let Some(c) = self.claimed(&s, &d, now) {
                claimed.push(c);
            }
        }
        claimed
    }

    /// The ordering key and sequence a delivery of `event` is sent with, as the claim gives
    /// them: the event's id and its place when the event names no key.
    pub(super) fn sent_order(&self, event: EventId) -> (String, i64) {
        let (key, sequence) = self.order_of(event);
        if key.is_empty() {
            (event.to_string(), sequence)
        } else {
            (key, sequence)
        }
    }

    /// Whether `record` is the first pending delivery of its ordering key to `subscription`.
    fn first_pending_of_key(&self, subscription: &WebhookId, record: &DeliveryRecord) -> bool {
        let (key, sequence) = self.order_of(record.event_id);
        if key.is_empty() {
            return true;
        }
        !self.deliveries.iter().any(|(s, other)| {
            s == subscription && other.status == DeliveryStatus::Pending && {
                let (other_key, other_sequence) = self.order_of(other.event_id);
                other_key == key && other_sequence < sequence
            }
        })
    }
}

/// Whether a retry held by its receiver's `Retry-After` until `not_before` may be due at `at`.
fn not_before_allows(
    not_before: &HashMap<DeliveryId, OffsetDateTime>,
    id: DeliveryId,
    at: OffsetDateTime,
) -> bool {
    not_before.get(&id).is_none_or(|until| *until <= at)
}

#[async_trait]
impl DeliveryQueue for InMemoryStore {
    async fn record(
        &self,
        claimed: &ClaimedDelivery,
        attempt: &AttemptRecord,
    ) -> DomainResult<bool> {
        let mut t = self.tables();
        let finished = attempt.finished_at();
        let recovery = attempt
            .notice
            .as_ref()
            .is_some_and(|n| n.event.event_type == EventType::WebhookRecovered);
        let active = t
            .subscriptions
            .iter()
            .any(|s| s.id == claimed.subscription_id && s.status == SubscriptionStatus::Active);
        let told = t
            .streaks
            .get(&claimed.subscription_id)
            .is_some_and(|s| s.told);
        let recovered = recovery && active && told;
        if recovered && let Some(s) = t.streaks.get_mut(&claimed.subscription_id) {
            s.told = false;
        }
        t.write_attempt(claimed, attempt);
        t.apply_rounds(&streak::rounds_of([(claimed, attempt)]));
        let changed = if attempt.next == NextStep::Unsubscribe {
            t.end_subscription(
                &claimed.subscription_id,
                SubscriptionStatus::Deleted,
                "webhook.deleted",
                "410 Gone from the receiver".to_owned(),
                finished,
            )
        } else if attempt.disable_subscription {
            let since = claimed.failing_since.unwrap_or(attempt.started_at);
            t.end_subscription(
                &claimed.subscription_id,
                SubscriptionStatus::Disabled,
                "webhook.disabled",
                format!(
                    "every delivery failing since {}",
                    timetrack_domain::timefmt::rfc3339(since)
                ),
                finished,
            )
        } else {
            match &attempt.notice {
                Some(notice) if notice.event.event_type == EventType::WebhookFailing => {
                    let started_by = notice.streak_started_by.unwrap_or(finished);
                    let stored = t
                        .streaks
                        .get(&claimed.subscription_id)
                        .copied()
                        .unwrap_or_default();
                    let tell = active
                        && !stored.told
                        && stored
                            .streak
                            .failing_since
                            .is_some_and(|since| since <= started_by);
                    if tell && let Some(s) = t.streaks.get_mut(&claimed.subscription_id) {
                        s.told = true;
                    }
                    tell
                }
                _ => recovered,
            }
        };
        match &attempt.notice {
            Some(notice) if changed => {
                t.notice(notice);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn record_and_claim(
        &self,
        attempts: &[(ClaimedDelivery, AttemptRecord)],
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        limit: u32,
        caps: &InFlightCaps,
        when: ClaimWhen,
    ) -> DomainResult<Vec<ClaimedDelivery>> {
        timetrack_domain::delivery::none_recorded_alone(attempts)?;
        let mut t = self.tables();
        for (claimed, attempt) in attempts {
            t.write_attempt(claimed, attempt);
        }
        t.apply_rounds(&streak::rounds_of(attempts.iter().map(|(c, a)| (c, a))));
        let held_back = || {
            attempts.iter().any(|(claimed, _)| {
                t.deliveries.iter().any(|(s, d)| {
                    s == &claimed.subscription_id
                        && d.status == DeliveryStatus::Pending
                        && d.next_attempt_at.is_some_and(|at| at <= now)
                        && !t.leased(d.id, now)
                })
            })
        };
        if limit == 0 || (when == ClaimWhen::IfHeldBack && !held_back()) {
            return Ok(Vec::new());
        }
        Ok(t.claim(now, lease_until, limit, caps))
    }

    async fn stats(&self, now: OffsetDateTime) -> DomainResult<QueueStats> {
        let t = self.tables();
        let mut stats = QueueStats::default();
        let mut oldest: Option<OffsetDateTime> = None;
        for (s, d) in &t.deliveries {
            let active = t
                .subscriptions
                .iter()
                .any(|x| &x.id == s && x.status == SubscriptionStatus::Active);
            if !active || d.status != DeliveryStatus::Pending {
                continue;
            }
            let Some(at) = d.next_attempt_at else {
                continue;
            };
            if t.leased(d.id, now) {
                stats.in_flight += 1;
            } else if at <= now {
                stats.due += 1;
                oldest = Some(oldest.map_or(at, |o| o.min(at)));
            } else {
                stats.scheduled += 1;
            }
        }
        stats.oldest_due_age = oldest.map_or(Duration::ZERO, |at| (now - at).max(Duration::ZERO));
        Ok(stats)
    }
}
