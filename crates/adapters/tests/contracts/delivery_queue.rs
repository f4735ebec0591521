//! The delivery queue: leases, caps, ordering, outcomes, streaks and a subscription's end.

use timetrack_domain::delivery::streak::{BACK_AFTER_FAILURES, BRING_FORWARD_PER_ROUND};
use timetrack_domain::delivery::{
    AttemptOutcome, AttemptRecord, AttemptReport, ClaimWhen, ClaimedDelivery, InFlightCaps,
    NextStep, Notice, QueueStats,
};

use super::*;
use crate::subscriptions::{stored_key, subscription};

contract!(due_deliveries_are_leased_once_and_come_back_when_the_lease_expires);
contract!(outcomes_are_stored_and_a_retry_comes_due_at_its_time);
contract!(no_subscription_exceeds_its_cap_nor_a_workspace_its_share);
contract!(an_ordering_key_is_delivered_one_at_a_time_in_order);
contract!(five_failures_in_a_row_then_a_success_bring_the_waiting_retries_forward);
contract!(a_410_ends_the_subscription_and_a_failing_notice_is_written_once_per_streak);

/// Caps that hold nothing back but the subscription's `per_subscription`.
fn caps(per_subscription: u32) -> InFlightCaps {
    InFlightCaps {
        per_subscription,
        per_workspace: 1_000,
        held: Vec::new(),
        unshared: Vec::new(),
    }
}

/// Claims up to `limit` at `now` (leases of a minute), recording nothing.
async fn claim(
    s: &Subject,
    now: OffsetDateTime,
    limit: u32,
    caps: &InFlightCaps,
) -> Vec<ClaimedDelivery> {
    s.queue
        .record_and_claim(
            &[],
            now,
            now + Duration::minutes(1),
            limit,
            caps,
            ClaimWhen::Always,
        )
        .await
        .unwrap()
}

/// Records `attempts` without claiming.
async fn record(s: &Subject, attempts: &[(ClaimedDelivery, AttemptRecord)], now: OffsetDateTime) {
    let none = s
        .queue
        .record_and_claim(
            attempts,
            now,
            now + Duration::minutes(1),
            0,
            &caps(10),
            ClaimWhen::Always,
        )
        .await
        .unwrap();
    assert!(none.is_empty());
}

/// An attempt started at `started` and answered 20 ms later with `outcome`, followed by `next`.
fn attempt(started: OffsetDateTime, outcome: AttemptOutcome, next: NextStep) -> AttemptRecord {
    AttemptRecord {
        started_at: started,
        report: AttemptReport {
            outcome,
            latency: Duration::milliseconds(20),
            response_excerpt: None,
        },
        next,
        disable_subscription: false,
        notice: None,
        signature: None,
        custom_headers: None,
    }
}

fn delivered(started: OffsetDateTime) -> AttemptRecord {
    attempt(
        started,
        AttemptOutcome::Delivered { status: 200 },
        NextStep::Done,
    )
}

fn failed(started: OffsetDateTime, retry_at: OffsetDateTime) -> AttemptRecord {
    attempt(
        started,
        AttemptOutcome::Rejected {
            status: 500,
            retry_after: None,
        },
        NextStep::RetryAt(retry_at),
    )
}

/// Creates client `n` with its `CLIENT_CREATED` event `n` at `minutes`, of ordering key `key`;
/// the outbox queues a delivery of it to every listening subscription.
async fn created(s: &Subject, ws: &Workspace, n: u128, minutes: i64, key: &str) -> EventId {
    let event = Event {
        ordering_key: key.into(),
        subject: EventSubject {
            client_id: Some(ClientId(id(n))),
            ..EventSubject::default()
        },
        ..event(n, ws.id, EventType::ClientCreated, minutes)
    };
    s.clients
        .create(
            &client(n, ws, &format!("Client {n}"), minutes),
            std::slice::from_ref(&event),
        )
        .await
        .unwrap();
    event.id
}

/// The status of each of `hook`'s deliveries, with its attempts and next attempt, by event.
async fn log_of(
    s: &Subject,
    hook: &WebhookId,
) -> Vec<(EventId, DeliveryStatus, i32, Option<OffsetDateTime>)> {
    let query = DeliveryQuery {
        since: T0 - Duration::days(1),
        status: None,
        event_type: None,
        event_id: None,
        entity_id: None,
        before: None,
        limit: 100,
    };
    let mut log: Vec<_> = s
        .log
        .deliveries(hook, &query)
        .await
        .unwrap()
        .into_iter()
        .map(|d| {
            let next = (d.status == DeliveryStatus::Pending)
                .then_some(d.next_attempt_at)
                .flatten();
            (d.event_id, d.status, d.attempts, next)
        })
        .collect();
    log.sort_by_key(|(event, ..)| *event);
    log
}

async fn due_deliveries_are_leased_once_and_come_back_when_the_lease_expires(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let key = stored_key(&s, 50, &ws, &member).await;
    let hook = subscription(1, &key, 0);
    s.subscriptions.create(&hook, 10).await.unwrap();
    let mut events = Vec::new();
    for n in [103, 101, 102] {
        events.push(
            created(
                &s,
                &ws,
                n,
                i64::try_from(n).unwrap() - 100,
                &format!("c{n}"),
            )
            .await,
        );
    }
    // Not yet due.
    assert!(claim(&s, at(0), 10, &caps(10)).await.is_empty());
    let now = at(10);
    let first = claim(&s, now, 10, &caps(10)).await;
    let claimed: Vec<EventId> = first.iter().map(|c| c.event_id).collect();
    assert_eq!(
        claimed,
        [EventId(id(101)), EventId(id(102)), EventId(id(103))],
        "oldest first"
    );
    let one = &first[0];
    assert_eq!(
        (
            &one.subscription_id,
            one.workspace_id,
            one.event_type,
            one.attempts
        ),
        (&hook.id, ws.id, EventType::ClientCreated, 0)
    );
    assert_eq!(
        (one.url.as_str(), one.secret.as_str()),
        (hook.url.as_str(), hook.secret.as_str())
    );
    assert_eq!(
        (one.body.as_str(), one.ordering_key.as_str()),
        (r#"{"n":101}"#, "c101")
    );
    assert_eq!((one.failing_since, one.failing_notified), (None, false));
    // Leased: no other claim takes them, and they count as in flight.
    assert!(claim(&s, now, 10, &caps(10)).await.is_empty());
    assert_eq!(
        s.queue.stats(now).await.unwrap(),
        QueueStats {
            due: 0,
            scheduled: 0,
            in_flight: 3,
            oldest_due_age: Duration::ZERO,
        }
    );
    // The lease ran out (a crashed worker): they come back, as due as they were.
    let later = now + Duration::minutes(2);
    let stats = s.queue.stats(later).await.unwrap();
    assert_eq!((stats.due, stats.in_flight), (3, 0));
    assert_eq!(stats.oldest_due_age, later - at(1));
    assert_eq!(claim(&s, later, 10, &caps(10)).await.len(), 3);
}

async fn outcomes_are_stored_and_a_retry_comes_due_at_its_time(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let key = stored_key(&s, 50, &ws, &member).await;
    let hook = subscription(1, &key, 0);
    s.subscriptions.create(&hook, 10).await.unwrap();
    let sent = created(&s, &ws, 101, 1, "c101").await;
    let refused = created(&s, &ws, 102, 2, "c102").await;
    let now = at(10);
    let claimed = claim(&s, now, 10, &caps(10)).await;
    let retry_at = at(20);
    let attempts = vec![
        (claimed[0].clone(), delivered(now)),
        (
            claimed[1].clone(),
            failed(now + Duration::seconds(1), retry_at),
        ),
    ];
    // Recorded, and nothing more claimed: the retry is not due.
    let after = now + Duration::seconds(1);
    let next = s
        .queue
        .record_and_claim(
            &attempts,
            after,
            after + Duration::minutes(1),
            10,
            &caps(10),
            ClaimWhen::Always,
        )
        .await
        .unwrap();
    assert!(next.is_empty());
    assert_eq!(
        log_of(&s, &hook.id).await,
        [
            (sent, DeliveryStatus::Delivered, 1, None),
            (refused, DeliveryStatus::Pending, 1, Some(retry_at)),
        ]
    );
    let stats = s.queue.stats(after).await.unwrap();
    assert_eq!((stats.due, stats.scheduled, stats.in_flight), (0, 1, 0));
    // Due at its time, with its attempts so far and the streak the failure started.
    let again = claim(&s, retry_at, 10, &caps(10)).await;
    assert_eq!(again.len(), 1);
    assert_eq!(
        (again[0].event_id, again[0].attempts, again[0].failing_since),
        (refused, 1, Some(now + Duration::seconds(1)))
    );
    // A delivery recorded twice (a replayed round) keeps its first outcome.
    record(&s, &attempts[..1], after).await;
    assert_eq!(
        log_of(&s, &hook.id).await[0],
        (sent, DeliveryStatus::Delivered, 1, None)
    );
}

async fn no_subscription_exceeds_its_cap_nor_a_workspace_its_share(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let key = stored_key(&s, 50, &ws, &member).await;
    let hook = subscription(1, &key, 0);
    s.subscriptions.create(&hook, 10).await.unwrap();
    for n in 101..=104 {
        created(&s, &ws, n, 1, &format!("c{n}")).await;
    }
    let now = at(10);
    let first = claim(&s, now, 10, &caps(2)).await;
    assert_eq!(first.len(), 2, "two in flight at most");
    assert!(claim(&s, now, 10, &caps(2)).await.is_empty());
    // One recorded: its slot is taken again by the round that records it, even when the round
    // claims only what its attempts held back.
    let next = s
        .queue
        .record_and_claim(
            &[(first[0].clone(), delivered(now))],
            now,
            now + Duration::minutes(1),
            10,
            &caps(2),
            ClaimWhen::IfHeldBack,
        )
        .await
        .unwrap();
    assert_eq!(next.len(), 1);
    // The workspace's share in this process counts what the process holds.
    let share = InFlightCaps {
        per_subscription: 10,
        per_workspace: 3,
        held: vec![(ws.id, 2)],
        unshared: Vec::new(),
    };
    assert_eq!(claim(&s, now, 10, &share).await.len(), 1);
    // Unshared (its endpoints answer quickly), it takes past its share what nobody else wants,
    // within the subscription's cap: two more are due, the cap (10) leaves room for both.
    for n in 105..=106 {
        created(&s, &ws, n, 1, &format!("c{n}")).await;
    }
    let unshared = InFlightCaps {
        unshared: vec![ws.id],
        ..share
    };
    assert_eq!(claim(&s, now, 10, &unshared).await.len(), 2);
}

async fn an_ordering_key_is_delivered_one_at_a_time_in_order(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let key = stored_key(&s, 50, &ws, &member).await;
    let hook = subscription(1, &key, 0);
    s.subscriptions.create(&hook, 10).await.unwrap();
    let first = created(&s, &ws, 101, 1, "same").await;
    let second = created(&s, &ws, 102, 1, "same").await;
    let other = created(&s, &ws, 103, 2, "other").await;
    let now = at(10);
    let claimed = claim(&s, now, 10, &caps(10)).await;
    let ids: Vec<EventId> = claimed.iter().map(|c| c.event_id).collect();
    assert_eq!(
        ids,
        [first, other],
        "the second of a key waits for the first"
    );
    // Still waiting while the first is retried.
    let retry_at = now + Duration::minutes(5);
    record(
        &s,
        &[
            (claimed[0].clone(), failed(now, retry_at)),
            (claimed[1].clone(), delivered(now)),
        ],
        now,
    )
    .await;
    assert!(
        claim(&s, now + Duration::minutes(1), 10, &caps(10))
            .await
            .is_empty()
    );
    let retried = claim(&s, retry_at, 10, &caps(10)).await;
    assert_eq!(retried.len(), 1);
    assert_eq!(retried[0].event_id, first);
    record(&s, &[(retried[0].clone(), delivered(retry_at))], retry_at).await;
    let then = claim(&s, retry_at, 10, &caps(10)).await;
    assert_eq!(then.len(), 1);
    assert_eq!(then[0].event_id, second);
}

async fn five_failures_in_a_row_then_a_success_bring_the_waiting_retries_forward(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let key = stored_key(&s, 50, &ws, &member).await;
    // `down` fails five times in a row, `flaky` four; then each answers once.
    let down = subscription(1, &key, 0);
    let flaky = subscription(2, &key, 0);
    s.subscriptions.create(&down, 10).await.unwrap();
    s.subscriptions.create(&flaky, 10).await.unwrap();
    let failures = BACK_AFTER_FAILURES as usize;
    for n in 0..=failures {
        created(&s, &ws, 101 + n as u128, 1, &format!("c{n}")).await;
    }
    let now = at(10);
    let claimed = claim(&s, now, 100, &caps(10)).await;
    let of = |hook: &Subscription| -> Vec<ClaimedDelivery> {
        claimed
            .iter()
            .filter(|c| c.subscription_id == hook.id)
            .cloned()
            .collect()
    };
    let (down_claimed, flaky_claimed) = (of(&down), of(&flaky));
    assert_eq!(
        (down_claimed.len(), flaky_claimed.len()),
        (failures + 1, failures + 1)
    );
    let schedule = now + Duration::hours(5);
    let mut round = Vec::new();
    for (i, c) in down_claimed[..failures].iter().enumerate() {
        round.push((
            c.clone(),
            failed(now + Duration::seconds(i as i64), schedule),
        ));
    }
    for (i, c) in flaky_claimed[..failures - 1].iter().enumerate() {
        round.push((
            c.clone(),
            failed(now + Duration::seconds(i as i64), schedule),
        ));
    }
    let after_failures = now + Duration::seconds(10);
    record(&s, &round, after_failures).await;
    // Each is failing since the round's latest failure started (a new event shows it).
    let newer = created(&s, &ws, 200, 11, "new").await;
    let shown = claim(&s, at(11), 100, &caps(10)).await;
    let failing: Vec<(bool, Option<OffsetDateTime>)> = shown
        .iter()
        .filter(|c| c.event_id == newer)
        .map(|c| (c.subscription_id == down.id, c.failing_since))
        .collect();
    let latest = |n: usize| Some(now + Duration::seconds(n as i64 - 1));
    let mut expected = vec![(true, latest(failures)), (false, latest(failures - 1))];
    let mut failing = failing;
    failing.sort();
    expected.sort();
    assert_eq!(failing, expected);
    // Then each answers.
    let back = at(12);
    let answered: Vec<(ClaimedDelivery, AttemptRecord)> =
        [&down_claimed[failures], &flaky_claimed[failures - 1]]
            .into_iter()
            .map(|c| (c.clone(), delivered(back)))
            .collect();
    record(&s, &answered, back).await;
    let finished = back + Duration::milliseconds(20);
    // `down` was down: its retries waiting since before it came back are due now. `flaky` had
    // one payload refused among others: its retries keep their schedule.
    let due = claim(&s, finished, 100, &caps(10)).await;
    let brought: Vec<&ClaimedDelivery> = due.iter().filter(|c| c.attempts == 1).collect();
    assert_eq!(
        brought.len(),
        failures.min(BRING_FORWARD_PER_ROUND as usize)
    );
    assert!(
        brought
            .iter()
            .all(|c| c.subscription_id == down.id && c.failing_since.is_none())
    );
    assert_eq!(
        log_of(&s, &flaky.id)
            .await
            .iter()
            .filter(|(_, status, _, next)| *status == DeliveryStatus::Pending
                && *next == Some(schedule))
            .count(),
        failures - 1
    );
}

async fn a_410_ends_the_subscription_and_a_failing_notice_is_written_once_per_streak(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let key = stored_key(&s, 50, &ws, &member).await;
    let gone = subscription(1, &key, 0);
    let failing = subscription(2, &key, 0);
    let watcher = Subscription {
        events: vec![EventType::WebhookFailing],
        ..subscription(3, &key, 0)
    };
    for hook in [&gone, &failing, &watcher] {
        s.subscriptions.create(hook, 10).await.unwrap();
    }
    for n in 101..=102 {
        created(&s, &ws, n, 1, &format!("c{n}")).await;
    }
    let now = at(10);
    let claimed = claim(&s, now, 100, &caps(10)).await;
    let of = |hook: &Subscription| -> Vec<ClaimedDelivery> {
        claimed
            .iter()
            .filter(|c| c.subscription_id == hook.id)
            .cloned()
            .collect()
    };
    // A 410: the subscription is deleted, what it has queued cancelled, an audit row written.
    let went = attempt(
        now,
        AttemptOutcome::Rejected {
            status: 410,
            retry_after: None,
        },
        NextStep::Unsubscribe,
    );
    assert!(!s.queue.record(&of(&gone)[0], &went).await.unwrap());
    let ended = s.subscriptions.get(&gone.id).await.unwrap().unwrap();
    assert_eq!(ended.status, SubscriptionStatus::Deleted);
    let statuses: Vec<DeliveryStatus> = log_of(&s, &gone.id)
        .await
        .into_iter()
        .map(|(_, st, ..)| st)
        .collect();
    assert_eq!(
        statuses,
        [DeliveryStatus::Failed, DeliveryStatus::Cancelled]
    );
    // A failure that tells the owner: written once per streak, and delivered to the owner's
    // other webhooks that listen for it (never to the one it is about).
    let notice = |n: u128| Notice {
        event: Event {
            ordering_key: failing.id.to_string(),
            ..event(n, ws.id, EventType::WebhookFailing, 10)
        },
        about: failing.id.clone(),
        streak_started_by: Some(now),
    };
    let telling = |n: u128| AttemptRecord {
        notice: Some(notice(n)),
        signature: None,
        ..failed(now, at(20))
    };
    let [first, second] = [of(&failing)[0].clone(), of(&failing)[1].clone()];
    assert!(s.queue.record(&first, &telling(300)).await.unwrap());
    assert!(
        !s.queue.record(&second, &telling(301)).await.unwrap(),
        "told once"
    );
    let told: Vec<EventId> = log_of(&s, &watcher.id)
        .await
        .into_iter()
        .map(|(e, ..)| e)
        .collect();
    assert_eq!(told, [EventId(id(300))]);
    assert!(
        log_of(&s, &failing.id)
            .await
            .iter()
            .all(|(e, ..)| *e != EventId(id(300)))
    );
    let shown = claim(&s, at(20), 100, &caps(10)).await;
    let retried: Vec<&ClaimedDelivery> = shown
        .iter()
        .filter(|c| c.subscription_id == failing.id)
        .collect();
    assert!(!retried.is_empty());
    assert!(
        retried
            .iter()
            .all(|c| c.failing_notified && c.failing_since == Some(now))
    );
}
