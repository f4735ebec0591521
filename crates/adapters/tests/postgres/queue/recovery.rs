//! The end of an outage: the success that ends a streak of failures brings the waiting retries
//! forward, fifty a round, until drained or a new failure.

use super::{Claim, T0, record, setup, text};
use time::Duration;
use timetrack_adapters::postgres::PgDeliveryQueue;
use timetrack_domain::delivery::{
    AttemptOutcome, AttemptRecord, ClaimWhen, ClaimedDelivery, InFlightCaps, NextStep,
};
use timetrack_domain::ports::DeliveryQueue;
use timetrack_testkit::TestDatabase;

#[tokio::test]
async fn a_success_after_five_failures_in_a_row_brings_the_waiting_retries_forward() {
    let (db, queue) = setup(8).await;
    let c = queue
        .claim(T0, T0 + Duration::minutes(5), 10, 100)
        .await
        .unwrap();
    assert_eq!(c.len(), 8);
    // One failing payload among successes: its retry keeps its time.
    round(&queue, vec![(c[0].clone(), at(1_000, later(), failed()))]).await;
    round(
        &queue,
        vec![(c[1].clone(), at(2_000, NextStep::Done, ok()))],
    )
    .await;
    assert_eq!(waiting(&db).await, "1");
    // Five failures in a row over two rounds, then a success: the endpoint is back, and every
    // retry waiting on it is due at the success, but for the one its receiver asked to wait for.
    round(
        &queue,
        vec![
            (c[2].clone(), at(3_000, later(), failed())),
            (c[3].clone(), at(4_000, later(), failed())),
        ],
    )
    .await;
    round(
        &queue,
        vec![
            (c[4].clone(), at(5_000, later(), failed())),
            (c[5].clone(), at(6_000, later(), failed())),
            (
                c[6].clone(),
                at(
                    7,
                    NextStep::RetryAt(T0 + Duration::hours(3)),
                    AttemptOutcome::Rejected {
                        status: 503,
                        retry_after: Some(Duration::hours(3)),
                    },
                ),
            ),
        ],
    )
    .await;
    assert_eq!(
        text(&db, "SELECT failing_attempts::text || ':' || (failing_since IS NOT NULL)::text AS v FROM webhook_subscriptions WHERE id LIKE 'wh_a%'").await,
        "5:true"
    );
    assert_eq!(waiting(&db).await, "6");
    round(
        &queue,
        vec![(c[7].clone(), at(8_000, NextStep::Done, ok()))],
    )
    .await;
    let due = T0 + Duration::seconds(8) + Duration::milliseconds(42);
    assert_eq!(
        text(&db, &format!("SELECT count(*)::text AS v FROM deliveries WHERE subscription_id LIKE 'wh_a%' AND status = 'PENDING' AND next_attempt_at = '{due}'")).await,
        "5"
    );
    assert_eq!(waiting(&db).await, "1");
    assert_eq!(
        queue
            .claim(due, due + Duration::minutes(1), 10, 100)
            .await
            .unwrap()
            .len(),
        5
    );
    assert_eq!(
        text(&db, "SELECT failing_attempts::text || ':' || (failing_since IS NOT NULL)::text AS v FROM webhook_subscriptions WHERE id LIKE 'wh_a%'").await,
        "0:false"
    );
}

#[tokio::test]
async fn a_backlog_is_brought_forward_fifty_a_round_until_drained_or_a_failure() {
    // 129 failures, then the success that ends the streak: 50 of the 129 waiting are due.
    let (db, queue, c) = failed_in_a_row(130, 129).await;
    assert_eq!(c.len(), 130);
    assert_eq!(waiting(&db).await, "129");
    round(
        &queue,
        vec![(c[129].clone(), at(8_000, NextStep::Done, ok()))],
    )
    .await;
    assert_eq!(waiting(&db).await, "79");
    assert_eq!(back_since(&db).await, "2026-03-01 09:00:08.042+00");
    // Each round with a success brings 50 more, and the one that finds fewer ends it.
    let due = T0 + Duration::seconds(8) + Duration::milliseconds(42);
    let pulled = queue
        .claim(due, due + Duration::minutes(1), 200, 200)
        .await
        .unwrap();
    assert_eq!(pulled.len(), 50);
    // A payload that fails beside the successes keeps its schedule: its retry is not brought.
    round(
        &queue,
        vec![
            (pulled[4].clone(), at(9_000, later(), failed())),
            (pulled[0].clone(), at(10_000, NextStep::Done, ok())),
        ],
    )
    .await;
    assert_eq!(waiting(&db).await, "30");
    assert_eq!(back_since(&db).await, "2026-03-01 09:00:08.042+00");
    round(
        &queue,
        vec![(pulled[1].clone(), at(11_000, NextStep::Done, ok()))],
    )
    .await;
    assert_eq!(waiting(&db).await, "1");
    assert_eq!(back_since(&db).await, "none");
    // Once drained, a success brings nothing.
    round(
        &queue,
        vec![(pulled[2].clone(), at(12_000, later(), failed()))],
    )
    .await;
    round(
        &queue,
        vec![(pulled[3].clone(), at(13_000, NextStep::Done, ok()))],
    )
    .await;
    assert_eq!(waiting(&db).await, "2");
}

#[tokio::test]
async fn a_failure_stops_bringing_the_backlog_forward() {
    let (db, queue, c) = failed_in_a_row(60, 59).await;
    round(
        &queue,
        vec![(c[59].clone(), at(8_000, NextStep::Done, ok()))],
    )
    .await;
    assert_eq!(waiting(&db).await, "9");
    let due = T0 + Duration::seconds(8) + Duration::milliseconds(42);
    let pulled = queue
        .claim(due, due + Duration::minutes(1), 200, 200)
        .await
        .unwrap();
    // The endpoint fails again: the rest keeps its schedule, even past the next success.
    round(
        &queue,
        vec![(pulled[0].clone(), at(9_000, later(), failed()))],
    )
    .await;
    round(
        &queue,
        vec![(pulled[1].clone(), at(10_000, NextStep::Done, ok()))],
    )
    .await;
    assert_eq!(waiting(&db).await, "10");
    assert_eq!(back_since(&db).await, "none");
}

#[tokio::test]
async fn a_failure_sent_before_the_recovery_and_answered_after_it_does_not_stop_it() {
    // The success ends at 8.042 s; a 503 sent at 8.010 s (the endpoint still down) is answered
    // after it, in the same round. The endpoint is back all the same.
    let db = streak_ended_beside_a_failure(8_010).await;
    assert_eq!(waiting(&db).await, "10");
    // One sent after the success had ended would have said it is down again.
    let db = streak_ended_beside_a_failure(8_050).await;
    assert_eq!(waiting(&db).await, "60");
}

#[tokio::test]
async fn a_late_failure_recorded_in_a_round_of_its_own_does_not_stop_it_either() {
    // The success (started at 8 s, ended at 8.042 s) brings 50 of the 59 waiting retries forward.
    // A 503 sent at 8.001 s, while the endpoint was still down, is answered after that round and
    // lands in the next round alone, with no success beside it: it is compared with the success
    // the bringing forward started from, and the round brings the other 9 forward (the failed
    // one keeps its schedule). One sent after that success says the endpoint is down again.
    for (failure_millis, left) in [(8_001, "1"), (8_050, "10")] {
        let (db, queue, c) = failed_in_a_row(61, 59).await;
        round(
            &queue,
            vec![(c[59].clone(), at(8_000, NextStep::Done, ok()))],
        )
        .await;
        assert_eq!(waiting(&db).await, "9", "50 brought forward");
        round(
            &queue,
            vec![(c[60].clone(), at(failure_millis, later(), failed()))],
        )
        .await;
        assert_eq!(
            waiting(&db).await,
            left,
            "a failure sent at {failure_millis} ms (one sent after the success stops it)"
        );
    }
}

/// 59 failures of wh_a, then a round with the success that ends the streak (started at 8 s,
/// ended at 8.042 s) and one more failure, started `failure_millis` after T0.
async fn streak_ended_beside_a_failure(failure_millis: i64) -> TestDatabase {
    let (db, queue, c) = failed_in_a_row(61, 59).await;
    round(
        &queue,
        vec![
            (c[59].clone(), at(8_000, NextStep::Done, ok())),
            (c[60].clone(), at(failure_millis, later(), failed())),
        ],
    )
    .await;
    db
}

/// `events` deliveries of wh_a (and the rest of `setup`), all claimed, and a round that records
/// a failure (a 503 at 3 s, retried two hours after T0) of each of the first `failures`.
async fn failed_in_a_row(
    events: u32,
    failures: usize,
) -> (TestDatabase, PgDeliveryQueue, Vec<ClaimedDelivery>) {
    let (db, queue) = setup(events).await;
    let c = queue
        .claim(T0, T0 + Duration::minutes(5), 200, 200)
        .await
        .unwrap();
    round(
        &queue,
        c[..failures]
            .iter()
            .map(|d| (d.clone(), at(3_000, later(), failed())))
            .collect(),
    )
    .await;
    (db, queue, c)
}

/// An attempt of the tests of an outage's end: started `millis` after T0, then `next`.
fn at(millis: i64, next: NextStep, outcome: AttemptOutcome) -> AttemptRecord {
    let mut attempt = record(next, outcome);
    attempt.started_at = T0 + Duration::milliseconds(millis);
    attempt
}

/// A 503 without `Retry-After`.
fn failed() -> AttemptOutcome {
    AttemptOutcome::Rejected {
        status: 503,
        retry_after: None,
    }
}

fn ok() -> AttemptOutcome {
    AttemptOutcome::Delivered { status: 200 }
}

/// A retry two hours after T0.
fn later() -> NextStep {
    NextStep::RetryAt(T0 + Duration::hours(2))
}

/// A round at T0 + 1 min that records `attempts` and claims nothing.
async fn round(queue: &PgDeliveryQueue, attempts: Vec<(ClaimedDelivery, AttemptRecord)>) {
    queue
        .record_and_claim(
            &attempts,
            T0 + Duration::minutes(1),
            T0 + Duration::minutes(2),
            0,
            &InFlightCaps::per_subscription(200),
            ClaimWhen::IfHeldBack,
        )
        .await
        .unwrap();
}

/// How many of wh_a's pending deliveries wait past T0 + 1 min.
async fn waiting(db: &TestDatabase) -> String {
    text(db, &format!("SELECT count(*)::text AS v FROM deliveries WHERE subscription_id LIKE 'wh_a%' AND status = 'PENDING' AND next_attempt_at > '{}'", T0 + Duration::minutes(1))).await
}

/// When wh_a came back, while its backlog is being brought forward ("none" otherwise).
async fn back_since(db: &TestDatabase) -> String {
    text(db, "SELECT coalesce(recovered_at::text, 'none') AS v FROM webhook_subscriptions WHERE id LIKE 'wh_a%'").await
}
