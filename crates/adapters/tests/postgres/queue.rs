//! The delivery queue: leased claims and recorded outcomes.

mod concurrency;
mod outcomes;
mod plans;
mod recovery;

use diesel_async::RunQueryDsl;
use time::macros::datetime;
use time::{Duration, OffsetDateTime};
use timetrack_adapters::postgres::PgDeliveryQueue;
use timetrack_domain::DomainResult;
use timetrack_domain::delivery::{
    AttemptOutcome, AttemptRecord, AttemptReport, ClaimWhen, ClaimedDelivery, InFlightCaps,
    NextStep, QueueStats, ResponseExcerpt,
};
use timetrack_domain::ports::DeliveryQueue;
use timetrack_testkit::TestDatabase;

const T0: OffsetDateTime = datetime!(2026-03-01 09:00 UTC);

/// A round with nothing to record: a plain claim.
trait Claim {
    async fn claim(
        &self,
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        limit: u32,
        per_subscription: u32,
    ) -> DomainResult<Vec<ClaimedDelivery>>;
}

impl Claim for PgDeliveryQueue {
    async fn claim(
        &self,
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        limit: u32,
        per_subscription: u32,
    ) -> DomainResult<Vec<ClaimedDelivery>> {
        self.record_and_claim(
            &[],
            now,
            lease_until,
            limit,
            &InFlightCaps::per_subscription(per_subscription),
            ClaimWhen::Always,
        )
        .await
    }
}

async fn sql(db: &TestDatabase, statement: &str) {
    let pool = db.pool();
    let mut conn = pool.get().await.unwrap();
    diesel::sql_query(statement)
        .execute(&mut conn)
        .await
        .unwrap();
}

async fn text(db: &TestDatabase, query: &str) -> String {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        v: String,
    }
    let pool = db.pool();
    let mut conn = pool.get().await.unwrap();
    let rows: Vec<Row> = diesel::sql_query(query).load(&mut conn).await.unwrap();
    rows.into_iter().map(|r| r.v).collect::<Vec<_>>().join(",")
}

/// Workspace `...a1`, its member `...b1` and the member's API key `...c1`.
const ACCOUNT: [&str; 4] = [
    "INSERT INTO workspaces (id, name, created_at) VALUES ('00000000-0000-0000-0000-0000000000a1', 'W', now())",
    "INSERT INTO users (id, name, email, created_at) VALUES ('00000000-0000-0000-0000-0000000000b1', 'U', 'u@example.com', now())",
    "INSERT INTO memberships VALUES ('00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000b1', now())",
    "INSERT INTO api_keys (id, workspace_id, user_id, key_prefix, key_hash, created_at) VALUES ('00000000-0000-0000-0000-0000000000c1', '00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000b1', 'tt_x', decode(repeat('00', 32), 'hex'), now())",
];

/// A workspace with one key, subscriptions `wh_a...` (ACTIVE) and `wh_b...` (DISABLED), and
/// `events` events each with a pending delivery to both.
async fn setup(events: u32) -> (TestDatabase, PgDeliveryQueue) {
    let db = TestDatabase::new().await;
    for statement in ACCOUNT {
        sql(&db, statement).await;
    }
    for statement in [
        "INSERT INTO webhook_subscriptions (id, workspace_id, user_id, api_key_id, url, events, secret, status, created_at, updated_at, disabled_reason) VALUES \
         ('wh_aaaaaaaaaaaaaaaaaaaaaaaa', '00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-0000000000c1', 'https://a.example.com/h', ARRAY['CLIENT_CREATED'], 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'ACTIVE', now(), now(), NULL), \
         ('wh_bbbbbbbbbbbbbbbbbbbbbbbb', '00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-0000000000c1', 'https://b.example.com/h', ARRAY['CLIENT_CREATED'], 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'DISABLED', now(), now(), 'failing')".to_owned(),
        format!("INSERT INTO events (id, workspace_id, event_type, body, created_at) SELECT ('00000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid, '00000000-0000-0000-0000-0000000000a1', 'CLIENT_CREATED', '{{\"n\":' || g || '}}', '{T0}' FROM generate_series(1, {events}) g"),
        format!("INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, next_attempt_at, created_at, updated_at, ordering_key, sequence) SELECT e.id, s.id, e.workspace_id, 'PENDING', '{T0}', '{T0}', '{T0}', e.id::text, e.seq FROM events e CROSS JOIN webhook_subscriptions s"),
    ] {
        sql(&db, &statement).await;
    }
    let queue = PgDeliveryQueue::new(db.pool(), timetrack_adapters::SecretBox::ephemeral());
    (db, queue)
}

fn record(next: NextStep, outcome: AttemptOutcome) -> AttemptRecord {
    AttemptRecord {
        started_at: T0 + Duration::seconds(1),
        report: AttemptReport {
            outcome,
            latency: Duration::milliseconds(42),
            response_excerpt: ResponseExcerpt::of(b"ok"),
        },
        next,
        disable_subscription: false,
        notice: None,
        signature: None,
        custom_headers: None,
    }
}

#[tokio::test]
async fn stats_count_pending_deliveries_of_active_subscriptions_by_state() {
    let (_db, queue) = setup(3).await;
    let stats = queue.stats(T0 + Duration::seconds(10)).await.unwrap();
    assert_eq!(
        stats,
        QueueStats {
            due: 3,
            scheduled: 0,
            in_flight: 0,
            oldest_due_age: Duration::seconds(10),
        },
        "the disabled subscription's deliveries are not counted"
    );
    assert_eq!(
        queue.stats(T0 - Duration::seconds(1)).await.unwrap(),
        QueueStats {
            scheduled: 3,
            ..QueueStats::default()
        }
    );
    let claimed = queue
        .claim(T0, T0 + Duration::seconds(30), 2, 100)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 2);
    queue
        .record(
            &claimed[0],
            &record(
                NextStep::RetryAt(T0 + Duration::hours(1)),
                AttemptOutcome::Rejected {
                    status: 500,
                    retry_after: None,
                },
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        queue.stats(T0 + Duration::seconds(5)).await.unwrap(),
        QueueStats {
            due: 1,
            scheduled: 1,
            in_flight: 1,
            oldest_due_age: Duration::seconds(5),
        }
    );
    // An expired lease makes its delivery due again.
    assert_eq!(
        queue.stats(T0 + Duration::seconds(40)).await.unwrap(),
        QueueStats {
            due: 2,
            scheduled: 1,
            in_flight: 0,
            oldest_due_age: Duration::seconds(40),
        }
    );
}

#[tokio::test]
async fn claims_are_leased_due_and_for_active_subscriptions_only() {
    let (_db, queue) = setup(1).await;
    assert!(
        queue
            .claim(
                T0 - Duration::seconds(1),
                T0 + Duration::seconds(30),
                10,
                100
            )
            .await
            .unwrap()
            .is_empty(),
        "not yet due"
    );
    let claimed = queue
        .claim(T0, T0 + Duration::seconds(30), 10, 100)
        .await
        .unwrap();
    assert_eq!(
        claimed.len(),
        1,
        "the disabled subscription's delivery is not claimed"
    );
    let c = &claimed[0];
    assert_eq!(
        (
            c.subscription_id.as_str(),
            c.url.as_str(),
            c.body.as_str(),
            c.attempts
        ),
        (
            "wh_aaaaaaaaaaaaaaaaaaaaaaaa",
            "https://a.example.com/h",
            r#"{"n":1}"#,
            0
        )
    );
    assert!(
        queue
            .claim(
                T0 + Duration::seconds(10),
                T0 + Duration::seconds(60),
                10,
                100
            )
            .await
            .unwrap()
            .is_empty(),
        "leased"
    );
    let again = queue
        .claim(
            T0 + Duration::seconds(30),
            T0 + Duration::seconds(90),
            10,
            100,
        )
        .await
        .unwrap();
    assert_eq!(again.len(), 1, "an expired lease is claimable again");
}

#[tokio::test]
async fn a_subscription_whose_key_is_revoked_is_never_claimed_even_while_active() {
    // As if a subscribe had raced the revocation: the subscription is still ACTIVE.
    let (db, queue) = setup(1).await;
    sql(&db, "UPDATE api_keys SET revoked_at = now()").await;
    let claimed = queue
        .claim(T0, T0 + Duration::seconds(30), 10, 100)
        .await
        .unwrap();
    assert!(claimed.is_empty(), "{claimed:?}");
}

#[tokio::test]
async fn a_subscription_never_has_more_than_its_cap_in_flight() {
    let (_db, queue) = setup(30).await;
    let first = queue
        .claim(T0, T0 + Duration::seconds(30), 100, 10)
        .await
        .unwrap();
    assert_eq!(first.len(), 10);
    assert!(
        queue
            .claim(T0, T0 + Duration::seconds(30), 100, 10)
            .await
            .unwrap()
            .is_empty(),
        "10 already in flight"
    );
    let first_id = first[0].clone();
    queue
        .record(
            &first_id,
            &record(NextStep::Done, AttemptOutcome::Delivered { status: 200 }),
        )
        .await
        .unwrap();
    assert_eq!(
        queue
            .claim(T0, T0 + Duration::seconds(30), 100, 10)
            .await
            .unwrap()
            .len(),
        1,
        "one slot freed"
    );
}

#[tokio::test]
async fn a_lease_taken_by_a_process_whose_clock_runs_ahead_still_counts() {
    // Another process, its clock an hour ahead, leased a delivery that is due an hour from
    // now by this one's clock: it is in flight all the same.
    let (db, queue) = setup(12).await;
    sql(
        &db,
        &format!(
            "WITH d AS (UPDATE deliveries SET next_attempt_at = '{0}' \
             WHERE subscription_id = 'wh_aaaaaaaaaaaaaaaaaaaaaaaa' \
             AND event_id = '00000000-0000-0000-0000-000000000001' \
             RETURNING id, workspace_id, subscription_id) \
             INSERT INTO delivery_leases SELECT id, workspace_id, subscription_id, '{0}', '{1}' \
             FROM d",
            T0 + Duration::hours(1),
            T0 + Duration::hours(2)
        ),
    )
    .await;
    let claimed = queue
        .claim(
            T0 + Duration::seconds(1),
            T0 + Duration::seconds(31),
            100,
            10,
        )
        .await
        .unwrap();
    assert_eq!(claimed.len(), 9, "one of the 10 slots is taken");
}

#[tokio::test]
async fn a_claim_leases_in_its_own_table_and_leaves_the_deliveries_rows_as_they_were() {
    // A lease written into the delivery's row made a new version of it, with an entry in each
    // of the table's indexes, on every claim; a lease is a row of delivery_leases instead, with
    // the delivery's due time, and the round that records the attempt deletes it.
    let (db, queue) = setup(3).await;
    let versions =
        "SELECT string_agg(ctid::text || xmin::text, ',' ORDER BY id) AS v FROM deliveries";
    let before = text(&db, versions).await;
    let claimed = queue
        .claim(T0, T0 + Duration::seconds(30), 10, 100)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 3);
    assert_eq!(
        text(&db, versions).await,
        before,
        "no delivery row rewritten"
    );
    assert_eq!(
        text(
            &db,
            &format!(
                "SELECT count(*)::text AS v FROM delivery_leases l JOIN deliveries d \
                 ON d.id = l.delivery_id AND d.workspace_id = l.workspace_id \
                 AND d.subscription_id = l.subscription_id \
                 WHERE l.due_at = d.next_attempt_at AND l.expires_at = '{}'",
                T0 + Duration::seconds(30)
            )
        )
        .await,
        "3"
    );
    // A running lease is not taken over, an expired one is (and moved on).
    sql(
        &db,
        &format!(
            "UPDATE delivery_leases SET expires_at = '{}' WHERE delivery_id = {}",
            T0 + Duration::seconds(1),
            claimed[0].delivery_id.0
        ),
    )
    .await;
    let again = queue
        .claim(
            T0 + Duration::seconds(2),
            T0 + Duration::seconds(40),
            10,
            100,
        )
        .await
        .unwrap();
    assert_eq!(
        again.iter().map(|c| c.delivery_id).collect::<Vec<_>>(),
        vec![claimed[0].delivery_id]
    );
    assert_eq!(
        text(
            &db,
            &format!(
                "SELECT count(*)::text || ':' || (max(expires_at) = '{}')::text AS v \
                 FROM delivery_leases",
                T0 + Duration::seconds(40)
            )
        )
        .await,
        "3:true"
    );
}

#[tokio::test]
async fn concurrent_claims_never_share_a_delivery() {
    let (_db, queue) = setup(40).await;
    let (a, b) = tokio::join!(
        queue.claim(T0, T0 + Duration::seconds(30), 25, 100),
        queue.claim(T0, T0 + Duration::seconds(30), 25, 100),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.len() + b.len(), 40);
    assert!(a.iter().all(|x| b.iter().all(|y| x.event_id != y.event_id)));
}

/// The events (1 to 3 of `setup`) of the deliveries in `claimed`, in claim order.
fn claimed_events(claimed: &[ClaimedDelivery]) -> Vec<u128> {
    claimed.iter().map(|c| c.event_id.0.as_u128()).collect()
}

#[tokio::test]
async fn a_delivery_waits_while_an_earlier_one_of_its_key_is_pending_and_others_do_not() {
    // Events 1 and 2 are about entity k1, event 3 about k2; event 4 has no key (a row written
    // without one is never held).
    let (db, queue) = setup(4).await;
    sql(&db, "UPDATE deliveries SET ordering_key = CASE WHEN event_id IN ('00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000002') THEN 'k1' WHEN event_id = '00000000-0000-0000-0000-000000000003' THEN 'k2' END, sequence = CASE WHEN event_id = '00000000-0000-0000-0000-000000000004' THEN NULL ELSE right(event_id::text, 1)::bigint END").await;
    let at = T0 + Duration::seconds(5);
    let first = queue
        .claim(at, at + Duration::seconds(30), 10, 100)
        .await
        .unwrap();
    let mut got = claimed_events(&first);
    got.sort_unstable();
    assert_eq!(got, [1, 3, 4], "k1's second event waits for its first");
    assert_eq!(first[0].ordering_key, "k1");
    assert_eq!(first[0].sequence, 1);

    // The others are delivered; the first fails and waits for its retry: the second still
    // waits, though due.
    for done in first.iter().filter(|c| c.event_id.0.as_u128() != 1) {
        queue
            .record(
                done,
                &record(NextStep::Done, AttemptOutcome::Delivered { status: 200 }),
            )
            .await
            .unwrap();
    }
    let e1 = first.iter().find(|c| c.event_id.0.as_u128() == 1).unwrap();
    queue
        .record(
            e1,
            &record(
                NextStep::RetryAt(T0 + Duration::hours(1)),
                AttemptOutcome::Rejected {
                    status: 500,
                    retry_after: None,
                },
            ),
        )
        .await
        .unwrap();
    let later = at + Duration::seconds(40);
    assert!(
        queue
            .claim(later, later + Duration::seconds(30), 10, 100)
            .await
            .unwrap()
            .is_empty(),
        "nothing of k1 passes its pending first event"
    );
    // The retry goes first; a final failure then releases the one behind it.
    let retry_at = T0 + Duration::hours(1);
    let retried = queue
        .claim(retry_at, retry_at + Duration::seconds(30), 10, 100)
        .await
        .unwrap();
    assert_eq!(claimed_events(&retried), [1]);
    queue
        .record(
            &retried[0],
            &record(
                NextStep::GiveUp,
                AttemptOutcome::Rejected {
                    status: 500,
                    retry_after: None,
                },
            ),
        )
        .await
        .unwrap();
    let released = queue
        .claim(retry_at, retry_at + Duration::seconds(30), 10, 100)
        .await
        .unwrap();
    assert_eq!(
        claimed_events(&released),
        [2],
        "a final failure releases the next"
    );
    assert_eq!(released[0].sequence, 2);
}

#[tokio::test]
async fn a_cancelled_or_delivered_delivery_releases_the_next_of_its_key() {
    // Events 1 to 3 are about one entity; the first is cancelled (its subscription's queue was
    // cancelled, say), so the second is the first pending of the key and goes; once delivered,
    // the third goes.
    let (db, queue) = setup(3).await;
    sql(
        &db,
        "UPDATE deliveries SET ordering_key = 'k', sequence = right(event_id::text, 1)::bigint",
    )
    .await;
    sql(&db, "UPDATE deliveries SET status = 'CANCELLED' WHERE event_id = '00000000-0000-0000-0000-000000000001'").await;
    let at = T0 + Duration::seconds(5);
    let first = queue
        .claim(at, at + Duration::seconds(30), 10, 100)
        .await
        .unwrap();
    assert_eq!(
        claimed_events(&first),
        [2],
        "a cancelled delivery holds nothing back"
    );
    queue
        .record(
            &first[0],
            &record(NextStep::Done, AttemptOutcome::Delivered { status: 200 }),
        )
        .await
        .unwrap();
    let next = queue
        .claim(at, at + Duration::seconds(30), 10, 100)
        .await
        .unwrap();
    assert_eq!(
        claimed_events(&next),
        [3],
        "a delivered one releases the next"
    );
}

#[tokio::test]
async fn a_claim_keeps_each_workspace_within_its_share_and_serves_the_workspaces_in_turn() {
    use timetrack_domain::ids::WorkspaceId;
    // Workspace a1 (from `setup`) has 30 due deliveries; a2 has 5, younger by a second.
    let (db, queue) = setup(30).await;
    for statement in [
        "INSERT INTO workspaces (id, name, created_at) VALUES ('00000000-0000-0000-0000-0000000000a2', 'W2', now())".to_owned(),
        "INSERT INTO users (id, name, email, created_at) VALUES ('00000000-0000-0000-0000-0000000000b2', 'V', 'v@example.com', now())".to_owned(),
        "INSERT INTO memberships VALUES ('00000000-0000-0000-0000-0000000000a2', '00000000-0000-0000-0000-0000000000b2', now())".to_owned(),
        "INSERT INTO api_keys (id, workspace_id, user_id, key_prefix, key_hash, created_at) VALUES ('00000000-0000-0000-0000-0000000000c2', '00000000-0000-0000-0000-0000000000a2', '00000000-0000-0000-0000-0000000000b2', 'tt_y', decode(repeat('22', 32), 'hex'), now())".to_owned(),
        "INSERT INTO webhook_subscriptions (id, workspace_id, user_id, api_key_id, url, events, secret, status, created_at, updated_at) VALUES \
         ('wh_eeeeeeeeeeeeeeeeeeeeeeee', '00000000-0000-0000-0000-0000000000a2', '00000000-0000-0000-0000-0000000000b2', '00000000-0000-0000-0000-0000000000c2', 'https://e.example.com/h', ARRAY['CLIENT_CREATED'], 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'ACTIVE', now(), now())".to_owned(),
        format!("INSERT INTO events (id, workspace_id, event_type, body, created_at) SELECT ('00000000-0000-0000-0002-' || lpad(g::text, 12, '0'))::uuid, '00000000-0000-0000-0000-0000000000a2', 'CLIENT_CREATED', '{{}}', '{T0}' FROM generate_series(1, 5) g"),
        format!("INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, next_attempt_at, created_at, updated_at, ordering_key, sequence) SELECT e.id, 'wh_eeeeeeeeeeeeeeeeeeeeeeee', e.workspace_id, 'PENDING', '{T0}'::timestamptz + interval '1 second', '{T0}', '{T0}', e.id::text, e.seq FROM events e WHERE e.workspace_id = '00000000-0000-0000-0000-0000000000a2'"),
    ] {
        sql(&db, &statement).await;
    }
    let (a1, a2) = (
        WorkspaceId("00000000-0000-0000-0000-0000000000a1".parse().unwrap()),
        WorkspaceId("00000000-0000-0000-0000-0000000000a2".parse().unwrap()),
    );
    let now = T0 + Duration::seconds(10);
    let lease = now + Duration::seconds(30);
    let claim_unshared = |limit: u32,
                          per_workspace: u32,
                          held: Vec<(WorkspaceId, u32)>,
                          unshared: Vec<WorkspaceId>| {
        let queue = queue.clone();
        async move {
            let caps = InFlightCaps {
                per_subscription: 100,
                per_workspace,
                held,
                unshared,
            };
            let claimed = queue
                .record_and_claim(&[], now, lease, limit, &caps, ClaimWhen::Always)
                .await
                .unwrap();
            let of = |ws: WorkspaceId| claimed.iter().filter(|c| c.workspace_id == ws).count();
            (of(a1), of(a2))
        }
    };
    let claim = |limit: u32, per_workspace: u32, held: Vec<(WorkspaceId, u32)>| {
        claim_unshared(limit, per_workspace, held, Vec::new())
    };
    // In turn, though a1's are all older: 6 of 35 go three and three.
    assert_eq!(claim(6, 100, vec![]).await, (3, 3));
    // Within each one's share of the process, counting what it holds.
    assert_eq!(claim(100, 5, vec![(a1, 3), (a2, 3)]).await, (2, 2));
    // A workspace at its share gets nothing, however old its deliveries; the other gets its own.
    sql(&db, "DELETE FROM delivery_leases").await;
    assert_eq!(claim(100, 5, vec![(a1, 5)]).await, (0, 5));
    // The least served first: a1 holds none, a2 holds four; two slots go to a1.
    sql(&db, "DELETE FROM delivery_leases").await;
    assert_eq!(claim(2, 100, vec![(a2, 4)]).await, (2, 0));
    // Work-conserving: a1, unshared (its endpoints answer quickly), takes past its share of 5
    // the slots a2 leaves; a2 still gets all of its own first.
    sql(&db, "DELETE FROM delivery_leases").await;
    assert_eq!(claim_unshared(20, 5, vec![], vec![a1]).await, (15, 5));
    // At its share already, it still gets what a2 does not want, never a2's.
    sql(&db, "DELETE FROM delivery_leases").await;
    assert_eq!(claim_unshared(8, 5, vec![(a1, 5)], vec![a1]).await, (3, 5));
    // Both unshared and past their share: fairly, by what each would hold.
    sql(&db, "DELETE FROM delivery_leases").await;
    assert_eq!(
        claim_unshared(4, 2, vec![(a1, 2), (a2, 2)], vec![a1, a2]).await,
        (2, 2)
    );
}
