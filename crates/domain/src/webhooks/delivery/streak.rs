//! A subscription's failure streak and its recovery: what a round of recorded attempts changes.
//!
//! The queue records attempts many at a time (a *round*: every attempt a worker finished since
//! its last round). For each subscription of the round, [`after_round`] takes what storage keeps
//! of its streak ([`Streak`], read and locked in the round's transaction) and what the round
//! did ([`Round`], from [`rounds`]) and says what changes ([`StreakChange`]):
//!
//! - a success ends the streak (and what the owner was told of it); a failure starts one or
//!   counts into it;
//! - an endpoint that failed at least [`BACK_AFTER_FAILURES`] times in a row and then answers is
//!   *back*: its retries that were waiting since before it came back are due now, not at their
//!   schedule's next step (hours away late in the schedule). At most
//!   [`BRING_FORWARD_PER_ROUND`] are brought forward per round, oldest first, so no round pays
//!   for a whole backlog; while a round brings a full batch, the next round brings more;
//! - one failing payload among successes never makes five in a row, so its schedule stands; a
//!   new failure stops the bringing forward (the endpoint may be down again), except one of an
//!   attempt that started before the success finished: at the end of an outage, attempts sent
//!   while the endpoint was down still answer after the first success, and are not a new
//!   outage.
//!
//! The queue adapter applies the change as it is given (see `DeliveryQueue::record_and_claim`),
//! and a round whose subscriptions are all quiet and all succeeded changes nothing
//! ([`Round::changes_nothing_for`]), which lets it skip reading the streaks at all.
//!
//! Test deliveries are not part of a round: they say how the endpoint answers a test, not how
//! the webhook is doing.

use time::OffsetDateTime;

use super::{AttemptRecord, ClaimedDelivery, NextStep};
use crate::webhooks::model::{DeliveryKind, WebhookId};

/// Failures in a row after which a success means the endpoint is back, and its waiting retries
/// are brought forward.
pub const BACK_AFTER_FAILURES: u32 = 5;

/// Most waiting retries of one subscription brought forward by one round. The claim takes a
/// subscription's deliveries a few at a time, so this keeps its in-flight slots full without any
/// round paying for the whole backlog.
pub const BRING_FORWARD_PER_ROUND: u32 = 50;

/// What storage keeps of a subscription's streak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Streak {
    /// When the current streak of failures started; `None` while the webhook is doing well.
    pub failing_since: Option<OffsetDateTime>,
    /// Failures in a row in the current streak.
    pub failures: u32,
    /// While the endpoint's waiting retries are being brought forward: it is back since this
    /// time, and the retries last scheduled at or before it are the ones brought.
    pub back_since: Option<OffsetDateTime>,
}

impl Streak {
    /// Not failing and not being brought back: a round of successes leaves it as it is.
    pub fn is_quiet(&self) -> bool {
        self.failing_since.is_none() && self.back_since.is_none()
    }
}

/// One recorded attempt as the streak sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome<'a> {
    /// The attempt's subscription.
    pub subscription: &'a WebhookId,
    /// Whether it was delivered.
    pub delivered: bool,
    /// When it was sent.
    pub started_at: OffsetDateTime,
    /// When its answer (or its failure) came.
    pub finished_at: OffsetDateTime,
}

/// What one subscription's attempts of a round did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    /// Whether its latest attempt (the last to finish) was delivered.
    pub delivered: bool,
    /// When its latest attempt started.
    pub started_at: OffsetDateTime,
    /// When its latest attempt finished.
    pub finished_at: OffsetDateTime,
    /// Failures that finished after its last success (all of them when none succeeded).
    pub failed_after: u32,
    /// Failures that finished before its last success.
    pub failed_before: u32,
    /// When its last success finished.
    pub succeeded_at: Option<OffsetDateTime>,
    /// When its latest failure started.
    pub failure_started_at: Option<OffsetDateTime>,
}

impl Round {
    /// Whether the round cannot change a streak stored as `stored`: every attempt succeeded and
    /// the subscription is quiet. [`after_round`] then returns `None`.
    pub fn changes_nothing_for(&self, stored: &Streak) -> bool {
        self.delivered && self.failed_after + self.failed_before == 0 && stored.is_quiet()
    }
}

/// The round of each subscription among `outcomes`, in the order of their ids.
pub fn rounds<'a>(outcomes: impl IntoIterator<Item = Outcome<'a>>) -> Vec<(&'a WebhookId, Round)> {
    let mut outcomes: Vec<Outcome<'a>> = outcomes.into_iter().collect();
    outcomes.sort_by(|a, b| {
        (a.subscription.as_str(), a.finished_at).cmp(&(b.subscription.as_str(), b.finished_at))
    });
    outcomes
        .chunk_by(|a, b| a.subscription == b.subscription)
        .map(|attempts| {
            let latest = attempts[attempts.len() - 1];
            let succeeded_at = attempts
                .iter()
                .filter(|a| a.delivered)
                .map(|a| a.finished_at)
                .max();
            let failures = attempts.iter().filter(|a| !a.delivered);
            let count = |keep: &dyn Fn(&&Outcome<'_>) -> bool| {
                u32::try_from(failures.clone().filter(keep).count()).unwrap_or(u32::MAX)
            };
            let round = Round {
                delivered: latest.delivered,
                started_at: latest.started_at,
                finished_at: latest.finished_at,
                failed_after: count(&|a| succeeded_at.is_none_or(|s| a.finished_at > s)),
                failed_before: count(&|a| succeeded_at.is_some_and(|s| a.finished_at < s)),
                succeeded_at,
                failure_started_at: failures.clone().map(|a| a.started_at).max(),
            };
            (latest.subscription, round)
        })
        .collect()
}

/// The round of each subscription among finished `attempts` (each with the delivery it was
/// made for), in the order of their ids. Test deliveries are left out.
pub fn rounds_of<'a>(
    attempts: impl IntoIterator<Item = (&'a ClaimedDelivery, &'a AttemptRecord)>,
) -> Vec<(&'a WebhookId, Round)> {
    rounds(
        attempts
            .into_iter()
            .filter(|(claimed, _)| claimed.kind != DeliveryKind::Test)
            .map(|(claimed, attempt)| Outcome {
                subscription: &claimed.subscription_id,
                delivered: attempt.next == NextStep::Done,
                started_at: attempt.started_at,
                finished_at: attempt.finished_at(),
            }),
    )
}

/// Retries of one subscription to bring forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BringForward {
    /// The endpoint is back since then: retries last scheduled at or before it are brought.
    pub back_since: OffsetDateTime,
    /// Their new due time (the round's latest answer), which they must be scheduled after; one
    /// whose receiver asked to wait (`Retry-After`) longer than that is left alone.
    pub due_at: OffsetDateTime,
    /// At most this many, oldest due first.
    pub limit: u32,
}

impl BringForward {
    /// What the streak keeps as [`Streak::back_since`] once `brought` retries were brought: a
    /// full batch may leave more, so the next round brings more; fewer means none is left.
    pub fn back_since_after(&self, brought: u32) -> Option<OffsetDateTime> {
        (brought >= self.limit).then_some(self.back_since)
    }
}

/// What a round changes in a subscription's streak: its new state, and what to bring forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreakChange {
    /// The new start of the streak (`None`: it ended).
    pub failing_since: Option<OffsetDateTime>,
    /// The new count of failures in a row.
    pub failures: u32,
    /// Whether the owner's having been told of the streak is forgotten (it ended), so that the
    /// next streak is told again.
    pub forget_told: bool,
    /// Retries to bring forward, if the endpoint is back; the streak's new
    /// [`Streak::back_since`] follows from how many were ([`BringForward::back_since_after`]),
    /// and is `None` without this.
    pub bring_forward: Option<BringForward>,
}

/// What `round` changes in the streak stored as `stored`; `None` when nothing.
pub fn after_round(stored: &Streak, round: &Round) -> Option<StreakChange> {
    let failing = stored.failing_since.is_some();
    if round.delivered && !failing && stored.back_since.is_none() {
        return None;
    }
    let in_a_row = if failing { stored.failures } else { 0 } + round.failed_before;
    // A failure that started after the endpoint was last seen answering stops the bringing
    // forward; one that started earlier is a late answer from the outage.
    let seen_back = round.succeeded_at.or(stored.back_since);
    let failed_since_back = round
        .failure_started_at
        .is_some_and(|started| seen_back.is_none_or(|back| started > back));
    let back_since = if failed_since_back {
        None
    } else if in_a_row >= BACK_AFTER_FAILURES {
        Some(round.finished_at)
    } else {
        stored.back_since
    };
    let (failing_since, failures) = if round.delivered {
        (None, 0)
    } else if failing && round.failed_before == 0 {
        (
            stored.failing_since,
            stored.failures.saturating_add(round.failed_after),
        )
    } else {
        (
            stored.failing_since.or(Some(round.started_at)),
            round.failed_after,
        )
    };
    Some(StreakChange {
        failing_since,
        failures,
        forget_told: round.delivered,
        bring_forward: back_since.map(|back_since| BringForward {
            back_since,
            due_at: round.finished_at,
            limit: BRING_FORWARD_PER_ROUND,
        }),
    })
}

#[cfg(test)]
mod tests {
    use time::Duration;
    use time::macros::datetime;

    use super::*;

    const T: OffsetDateTime = datetime!(2026-03-01 12:00 UTC);

    fn at(seconds: i64) -> OffsetDateTime {
        T + Duration::seconds(seconds)
    }

    fn hook(id: &str) -> WebhookId {
        WebhookId::parse(&format!("wh_{id:0>24}")).expect("a webhook id")
    }

    /// An attempt of `subscription` sent at `start` seconds and answered at `end`.
    fn outcome(subscription: &WebhookId, delivered: bool, start: i64, end: i64) -> Outcome<'_> {
        Outcome {
            subscription,
            delivered,
            started_at: at(start),
            finished_at: at(end),
        }
    }

    fn round_of(outcomes: &[Outcome<'_>]) -> Round {
        let rounds = rounds(outcomes.iter().copied());
        assert_eq!(rounds.len(), 1);
        rounds[0].1
    }

    fn failing(since: i64, failures: u32) -> Streak {
        Streak {
            failing_since: Some(at(since)),
            failures,
            back_since: None,
        }
    }

    #[test]
    fn a_round_is_told_per_subscription_in_the_order_of_their_ids() {
        let (a, b) = (hook("a"), hook("b"));
        let rounds = rounds([
            outcome(&b, false, 0, 1),
            outcome(&a, true, 0, 2),
            outcome(&b, true, 2, 3),
            outcome(&b, false, 3, 4),
            outcome(&b, false, 1, 2),
        ]);
        assert_eq!(rounds.len(), 2);
        assert_eq!(rounds[0].0, &a);
        assert_eq!(rounds[1].0, &b);
        assert_eq!(
            rounds[1].1,
            Round {
                delivered: false,
                started_at: at(3),
                finished_at: at(4),
                failed_after: 1,
                failed_before: 2,
                succeeded_at: Some(at(3)),
                failure_started_at: Some(at(3)),
            }
        );
    }

    #[test]
    fn successes_of_a_quiet_subscription_change_nothing() {
        let hook = hook("a");
        let round = round_of(&[outcome(&hook, true, 0, 1), outcome(&hook, true, 1, 2)]);
        assert!(round.changes_nothing_for(&Streak::default()));
        assert_eq!(after_round(&Streak::default(), &round), None);
        assert!(!round.changes_nothing_for(&failing(-10, 1)));
    }

    #[test]
    fn a_first_failure_starts_a_streak_at_its_start() {
        let hook = hook("a");
        let round = round_of(&[outcome(&hook, false, 0, 1), outcome(&hook, false, 2, 3)]);
        assert!(!round.changes_nothing_for(&Streak::default()));
        let change = after_round(&Streak::default(), &round).expect("a change");
        assert_eq!(change.failing_since, Some(at(2)));
        assert_eq!(change.failures, 2);
        assert!(!change.forget_told);
        assert_eq!(change.bring_forward, None);
    }

    #[test]
    fn failures_count_into_a_running_streak_which_keeps_its_start() {
        let hook = hook("a");
        let round = round_of(&[outcome(&hook, false, 0, 1)]);
        let change = after_round(&failing(-100, 3), &round).expect("a change");
        assert_eq!(change.failing_since, Some(at(-100)));
        assert_eq!(change.failures, 4);
    }

    #[test]
    fn a_success_between_failures_of_a_round_keeps_a_stored_streak_going() {
        let hook = hook("a");
        let round = round_of(&[outcome(&hook, true, 0, 1), outcome(&hook, false, 2, 3)]);
        let change = after_round(&failing(-100, 3), &round).expect("a change");
        // The round ends failing: the stored streak keeps its start and counts on.
        assert_eq!(change.failing_since, Some(at(-100)));
        assert_eq!(change.failures, 4);
        // With failures before the success, the count starts again after it.
        let round = round_of(&[
            outcome(&hook, false, 0, 1),
            outcome(&hook, true, 1, 2),
            outcome(&hook, false, 2, 3),
        ]);
        let change = after_round(&failing(-100, 3), &round).expect("a change");
        assert_eq!(change.failing_since, Some(at(-100)));
        assert_eq!(change.failures, 1);
        // Three stored and none before the success: not five in a row, and the failure stops
        // any bringing forward.
        assert_eq!(change.bring_forward, None);
    }

    #[test]
    fn a_success_ends_a_short_streak_without_bringing_anything_forward() {
        let hook = hook("a");
        let round = round_of(&[outcome(&hook, true, 0, 1)]);
        let change =
            after_round(&failing(-100, BACK_AFTER_FAILURES - 1), &round).expect("a change");
        assert_eq!(change.failing_since, None);
        assert_eq!(change.failures, 0);
        assert!(change.forget_told);
        assert_eq!(change.bring_forward, None);
    }

    #[test]
    fn a_success_after_five_failures_in_a_row_brings_the_waiting_retries_forward() {
        let hook = hook("a");
        let round = round_of(&[outcome(&hook, true, 0, 1)]);
        let change = after_round(&failing(-100, BACK_AFTER_FAILURES), &round).expect("a change");
        assert_eq!(change.failing_since, None);
        assert_eq!(
            change.bring_forward,
            Some(BringForward {
                back_since: at(1),
                due_at: at(1),
                limit: BRING_FORWARD_PER_ROUND,
            })
        );
    }

    #[test]
    fn failures_before_the_success_in_the_same_round_count_into_the_five() {
        let hook = hook("a");
        let round = round_of(&[
            outcome(&hook, false, 0, 1),
            outcome(&hook, false, 1, 2),
            outcome(&hook, true, 3, 4),
        ]);
        let change = after_round(&failing(-100, 3), &round).expect("a change");
        assert_eq!(change.bring_forward.map(|b| b.back_since), Some(at(4)));
        // Without a stored streak, two are not enough.
        assert_eq!(after_round(&Streak::default(), &round), None);
    }

    #[test]
    fn a_late_answer_from_the_outage_does_not_stop_the_bringing_forward() {
        let hook = hook("a");
        let stored = Streak {
            failing_since: None,
            failures: 0,
            back_since: Some(at(10)),
        };
        // Sent at 5 while the endpoint was down, answered at 12, after it was back at 10.
        let late = round_of(&[outcome(&hook, false, 5, 12)]);
        let change = after_round(&stored, &late).expect("a change");
        assert_eq!(change.bring_forward.map(|b| b.back_since), Some(at(10)));
        assert_eq!(change.bring_forward.map(|b| b.due_at), Some(at(12)));
        // Sent at 11, after it was back: it may be down again.
        let new = round_of(&[outcome(&hook, false, 11, 12)]);
        assert_eq!(
            after_round(&stored, &new).expect("a change").bring_forward,
            None
        );
    }

    #[test]
    fn successes_keep_bringing_forward_while_the_endpoint_is_back() {
        let hook = hook("a");
        let stored = Streak {
            failing_since: None,
            failures: 0,
            back_since: Some(at(10)),
        };
        let round = round_of(&[outcome(&hook, true, 20, 21)]);
        assert!(!round.changes_nothing_for(&stored));
        let change = after_round(&stored, &round).expect("a change");
        let bring = change.bring_forward.expect("brought forward");
        assert_eq!((bring.back_since, bring.due_at), (at(10), at(21)));
        assert_eq!(bring.back_since_after(bring.limit), Some(at(10)));
        assert_eq!(bring.back_since_after(bring.limit - 1), None);
    }
}
