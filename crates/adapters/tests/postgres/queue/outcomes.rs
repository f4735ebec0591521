//! Recorded outcomes: what an attempt does to its delivery and subscription, and housekeeping.

use super::{Claim, T0, record, setup, sql, text};
use diesel_async::RunQueryDsl;
use time::{Duration, OffsetDateTime};
use timetrack_domain::delivery::{
    AttemptOutcome, ClaimWhen, FailureReason, InFlightCaps, NextStep,
};
use timetrack_domain::ports::{DeliveryQueue, Retention};

#[tokio::test]
async fn outcomes_move_the_delivery_and_the_failure_clock() {
    let (db, queue) = setup(2).await;
    let claimed = queue
        .claim(T0, T0 + Duration::seconds(30), 10, 100)
        .await
        .unwrap();
    let retry_at = T0 + Duration::minutes(5);
    let failed = AttemptOutcome::Failed {
        reason: FailureReason::Timeout,
        detail: "15 s".into(),
    };
    queue
        .record(&claimed[0], &record(NextStep::RetryAt(retry_at), failed))
        .await
        .unwrap();
    queue
        .record(
            &claimed[1],
            &record(NextStep::Done, AttemptOutcome::Delivered { status: 204 }),
        )
        .await
        .unwrap();
    assert_eq!(
        text(&db, "SELECT status || ':' || attempts || ':' || coalesce(last_status_code::text, '-') || ':' || coalesce(last_error, '-') AS v FROM deliveries WHERE subscription_id LIKE 'wh_a%' ORDER BY event_id").await,
        "PENDING:1:-:timeout: 15 s,DELIVERED:1:204:-"
    );
    assert_eq!(
        text(&db, "SELECT count(*)::text AS v FROM delivery_attempts").await,
        "2"
    );
    // The success after the failure cleared the clock (both recorded in order: fail, then ok).
    assert_eq!(text(&db, "SELECT coalesce(failing_since::text, 'none') AS v FROM webhook_subscriptions WHERE id LIKE 'wh_a%'").await, "none");
    assert!(
        queue
            .claim(
                retry_at - Duration::seconds(1),
                retry_at + Duration::seconds(30),
                10,
                100
            )
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        queue
            .claim(retry_at, retry_at + Duration::seconds(30), 10, 100)
            .await
            .unwrap()[0]
            .attempts,
        1
    );
}

#[tokio::test]
async fn an_attempt_recorded_after_its_delivery_was_cancelled_leaves_it_cancelled() {
    let (db, queue) = setup(1).await;
    let claimed = queue
        .claim(T0, T0 + Duration::seconds(30), 10, 100)
        .await
        .unwrap();
    // Cancelled while in flight (its subscription deleted, or its key revoked).
    sql(&db, "WITH c AS (UPDATE deliveries SET status = 'CANCELLED' WHERE subscription_id LIKE 'wh_a%') DELETE FROM delivery_leases WHERE subscription_id LIKE 'wh_a%'").await;
    queue
        .record(
            &claimed[0],
            &record(NextStep::Done, AttemptOutcome::Delivered { status: 200 }),
        )
        .await
        .unwrap();
    assert_eq!(
        text(&db, "SELECT status || ':' || attempts AS v FROM deliveries WHERE subscription_id LIKE 'wh_a%'").await,
        "CANCELLED:0"
    );
    assert_eq!(
        text(&db, "SELECT count(*)::text AS v FROM delivery_attempts").await,
        "1",
        "the attempt itself is logged"
    );
}

#[tokio::test]
async fn one_round_records_attempts_and_refills_the_slots_they_freed() {
    let (db, queue) = setup(30).await;
    let lease = T0 + Duration::seconds(30);
    let first = queue
        .record_and_claim(
            &[],
            T0,
            lease,
            100,
            &InFlightCaps::per_subscription(10),
            ClaimWhen::Always,
        )
        .await
        .unwrap();
    assert_eq!(first.len(), 10, "an empty round is a plain claim");
    let delivered = record(NextStep::Done, AttemptOutcome::Delivered { status: 200 });
    let done: Vec<_> = first[..3]
        .iter()
        .map(|d| (d.clone(), delivered.clone()))
        .collect();
    let next = queue
        .record_and_claim(
            &done,
            T0,
            lease,
            100,
            &InFlightCaps::per_subscription(10),
            ClaimWhen::Always,
        )
        .await
        .unwrap();
    assert_eq!(next.len(), 3, "the three slots just freed are refilled");
    assert!(
        next.iter()
            .all(|n| first.iter().all(|f| f.event_id != n.event_id)),
        "never a delivery already claimed"
    );
    assert_eq!(
        text(&db, "SELECT status || ':' || count(*) AS v FROM deliveries WHERE subscription_id LIKE 'wh_a%' GROUP BY status ORDER BY status").await,
        "DELIVERED:3,PENDING:27"
    );
    assert_eq!(
        text(&db, "SELECT count(*)::text AS v FROM delivery_attempts").await,
        "3"
    );
    assert!(
        queue
            .record_and_claim(
                &[],
                T0,
                lease,
                100,
                &InFlightCaps::per_subscription(10),
                ClaimWhen::Always
            )
            .await
            .unwrap()
            .is_empty(),
        "10 in flight again"
    );
    let failed = record(
        NextStep::RetryAt(T0 + Duration::minutes(5)),
        AttemptOutcome::Failed {
            reason: FailureReason::Timeout,
            detail: "15 s".into(),
        },
    );
    let recorded_only = queue
        .record_and_claim(
            &[(next[0].clone(), failed)],
            T0,
            lease,
            0,
            &InFlightCaps::per_subscription(10),
            ClaimWhen::Always,
        )
        .await
        .unwrap();
    assert!(recorded_only.is_empty(), "limit 0 records only");
    assert_eq!(
        text(&db, "SELECT count(*)::text AS v FROM delivery_leases l JOIN deliveries d ON d.id = l.delivery_id WHERE d.status = 'PENDING'").await,
        "9"
    );
}

#[tokio::test]
async fn a_round_refuses_an_attempt_that_ends_its_subscription_and_changes_nothing() {
    let (db, queue) = setup(3).await;
    let lease = T0 + Duration::seconds(30);
    let claimed = queue
        .record_and_claim(
            &[],
            T0,
            lease,
            1,
            &InFlightCaps::per_subscription(10),
            ClaimWhen::Always,
        )
        .await
        .unwrap();
    let gone = record(
        NextStep::Unsubscribe,
        AttemptOutcome::Rejected {
            status: 410,
            retry_after: None,
        },
    );
    let mut failing = record(
        NextStep::RetryAt(T0 + Duration::minutes(5)),
        AttemptOutcome::Rejected {
            status: 500,
            retry_after: None,
        },
    );
    failing.disable_subscription = true;
    for ending in [gone, failing] {
        assert!(
            queue
                .record_and_claim(
                    &[(claimed[0].clone(), ending)],
                    T0,
                    lease,
                    10,
                    &InFlightCaps::per_subscription(10),
                    ClaimWhen::Always
                )
                .await
                .is_err()
        );
    }
    assert_eq!(
        text(&db, "SELECT (SELECT count(*) FROM delivery_attempts) || ':' || (SELECT count(*) FROM delivery_leases) || ':' || (SELECT status FROM webhook_subscriptions WHERE id LIKE 'wh_a%') AS v").await,
        "0:1:ACTIVE",
        "nothing recorded, nothing more claimed, the subscription untouched"
    );
}

#[tokio::test]
async fn a_round_commits_asynchronously_and_only_its_own_transaction() {
    let (db, _queue) = setup(1).await;
    let pool = db.pool();
    let mut conn = pool.get().await.unwrap();
    #[derive(diesel::QueryableByName)]
    struct Setting {
        #[diesel(sql_type = diesel::sql_types::Text)]
        synchronous_commit: String,
    }
    let round = format!(
        "SELECT count(*) FROM timetrack_code.record_and_claim('{{}}', '{{}}', '{{}}', '{{}}', '{{}}', \
         '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', '{T0}', \
         '{}', \
         10, 10, 1000, '{{}}', '{{}}', '{{}}', true)",
        T0 + Duration::seconds(30)
    );
    let mut seen = Vec::new();
    // The test cluster itself runs with it off: the session asks for it on first.
    for statement in [
        "SET synchronous_commit = on",
        "BEGIN",
        round.as_str(),
        "SHOW synchronous_commit",
        "COMMIT",
        "SHOW synchronous_commit",
    ] {
        if statement.starts_with("SHOW") {
            let setting: Setting = diesel::sql_query(statement)
                .get_result(&mut conn)
                .await
                .unwrap();
            seen.push(setting.synchronous_commit);
        } else {
            diesel::sql_query(statement)
                .execute(&mut conn)
                .await
                .unwrap();
        }
    }
    assert_eq!(
        seen,
        ["off", "on"],
        "the round's transaction commits without waiting for its flush; the session is unchanged"
    );
}

#[tokio::test]
async fn a_410_deletes_the_subscription_and_cancels_its_queue() {
    let (db, queue) = setup(3).await;
    let claimed = queue
        .claim(T0, T0 + Duration::seconds(30), 1, 100)
        .await
        .unwrap();
    queue
        .record(
            &claimed[0],
            &record(
                NextStep::Unsubscribe,
                AttemptOutcome::Rejected {
                    status: 410,
                    retry_after: None,
                },
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        text(
            &db,
            "SELECT status AS v FROM webhook_subscriptions WHERE id LIKE 'wh_a%'"
        )
        .await,
        "DELETED"
    );
    assert_eq!(text(&db, "SELECT string_agg(status, ',' ORDER BY status) AS v FROM deliveries WHERE subscription_id LIKE 'wh_a%'").await, "CANCELLED,CANCELLED,FAILED");
    assert_eq!(
        text(&db, "SELECT action || ':' || reason AS v FROM audit_log").await,
        "webhook.deleted:410 Gone from the receiver"
    );
    assert!(
        queue
            .claim(T0 + Duration::hours(1), T0 + Duration::hours(2), 10, 100)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_subscription_failing_for_five_days_is_disabled_and_its_queue_cancelled() {
    let (db, queue) = setup(2).await;
    let claimed = queue
        .claim(T0, T0 + Duration::seconds(30), 1, 100)
        .await
        .unwrap();
    let failed = AttemptOutcome::Rejected {
        status: 500,
        retry_after: None,
    };
    let mut attempt = record(NextStep::GiveUp, failed);
    attempt.disable_subscription = true;
    queue.record(&claimed[0], &attempt).await.unwrap();
    assert_eq!(
        text(
            &db,
            "SELECT status || ' ' || disabled_reason AS v FROM webhook_subscriptions WHERE id LIKE 'wh_a%'"
        )
        .await,
        "DISABLED failing"
    );
    assert_eq!(text(&db, "SELECT string_agg(status, ',' ORDER BY status) AS v FROM deliveries WHERE subscription_id LIKE 'wh_a%'").await, "CANCELLED,FAILED");
    assert_eq!(
        text(&db, "SELECT action AS v FROM audit_log").await,
        "webhook.disabled"
    );
}

#[tokio::test]
async fn housekeeping_removes_what_outlived_its_retention_and_keeps_the_rest() {
    use timetrack_adapters::postgres::PgHousekeeping;
    use timetrack_domain::ports::Housekeeping;
    let (db, queue) = setup(4).await;
    // Event 1: old and final; event 2: old but still pending; event 3: recent and final; event
    // 4: old and final, but resent lately (its resend is in the delivery log's period).
    sql(&db, "UPDATE events SET created_at = now() - interval '8 days' WHERE id IN ('00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000002', '00000000-0000-0000-0000-000000000004')").await;
    sql(&db, "UPDATE events SET created_at = now() - interval '6 days' WHERE id = '00000000-0000-0000-0000-000000000003'").await;
    sql(&db, "UPDATE deliveries SET status = 'DELIVERED' WHERE event_id IN ('00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000003', '00000000-0000-0000-0000-000000000004')").await;
    sql(&db, "INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, attempts, next_attempt_at, created_at, updated_at, kind) SELECT event_id, subscription_id, workspace_id, 'DELIVERED', 1, now(), now() - interval '1 day', now(), 'resend' FROM deliveries WHERE event_id = '00000000-0000-0000-0000-000000000004' AND subscription_id LIKE 'wh_a%'").await;
    sql(&db, "UPDATE deliveries SET status = 'CANCELLED' WHERE event_id = '00000000-0000-0000-0000-000000000002' AND subscription_id LIKE 'wh_b%'").await;
    let claimed = queue
        .claim(T0, T0 + Duration::seconds(30), 100, 100)
        .await
        .unwrap();
    assert_eq!(
        claimed.len(),
        1,
        "only event 2's active delivery is pending"
    );
    sql(&db, "INSERT INTO idempotency_keys (workspace_id, api_key_id, key, fingerprint, created_at) VALUES \
              ('00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000c1', 'old', decode(repeat('00', 32), 'hex'), now() - interval '25 hours'), \
              ('00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000c1', 'new', decode(repeat('00', 32), 'hex'), now())").await;
    sql(&db, "INSERT INTO rate_limit_hits (key, at) VALUES ('k', now() - interval '2 minutes'), ('k', now())").await;

    let purged = PgHousekeeping::new(db.pool())
        .purge(
            OffsetDateTime::now_utc(),
            Retention {
                events: Duration::days(7),
                deliveries: Duration::days(7),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (
            purged.events,
            purged.idempotency_keys,
            purged.rate_limit_hits
        ),
        (1, 1, 1)
    );
    assert_eq!(
        text(
            &db,
            "SELECT string_agg(right(id::text, 1), ',' ORDER BY id) AS v FROM events"
        )
        .await,
        "2,3,4"
    );
    assert_eq!(
        text(&db, "SELECT count(*)::text AS v FROM deliveries").await,
        "7"
    );
    assert_eq!(
        text(
            &db,
            "SELECT string_agg(key, ',') AS v FROM idempotency_keys"
        )
        .await,
        "new"
    );
    assert_eq!(
        text(&db, "SELECT count(*)::text AS v FROM rate_limit_hits").await,
        "1"
    );
}

#[tokio::test]
async fn a_notice_reaches_the_owners_other_webhooks_that_list_it_once_per_streak() {
    use timetrack_domain::delivery::Notice;
    use timetrack_domain::ids::{EventId, WorkspaceId};
    use timetrack_domain::model::{Event, EventSubject, EventType, WebhookId};
    let (db, queue) = setup(1).await;
    // The failing webhook (wh_a) lists the notices too; the owner has another webhook that
    // lists them (wh_c); another member of the workspace has one (wh_d).
    for statement in [
        "INSERT INTO users (id, name, email, created_at) VALUES ('00000000-0000-0000-0000-0000000000b2', 'V', 'v@example.com', now())",
        "INSERT INTO memberships VALUES ('00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000b2', now())",
        "INSERT INTO api_keys (id, workspace_id, user_id, key_prefix, key_hash, created_at) VALUES ('00000000-0000-0000-0000-0000000000c2', '00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000b2', 'tt_y', decode(repeat('11', 32), 'hex'), now())",
        "INSERT INTO webhook_subscriptions (id, workspace_id, user_id, api_key_id, url, events, secret, status, created_at, updated_at) VALUES \
         ('wh_cccccccccccccccccccccccc', '00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-0000000000c1', 'https://c.example.com/h', ARRAY['WEBHOOK_FAILING'], 'x', 'ACTIVE', now(), now()), \
         ('wh_dddddddddddddddddddddddd', '00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000b2', '00000000-0000-0000-0000-0000000000c2', 'https://d.example.com/h', ARRAY['WEBHOOK_FAILING'], 'x', 'ACTIVE', now(), now())",
        "UPDATE webhook_subscriptions SET events = ARRAY['CLIENT_CREATED', 'WEBHOOK_FAILING'], failing_since = now() - interval '2 days' WHERE id LIKE 'wh_a%'",
    ] {
        sql(&db, statement).await;
    }
    let claimed = queue
        .claim(T0, T0 + Duration::seconds(30), 10, 100)
        .await
        .unwrap();
    assert_eq!(
        claimed.len(),
        1,
        "the disabled webhook's delivery is not claimed"
    );
    let failed = AttemptOutcome::Rejected {
        status: 500,
        retry_after: None,
    };
    let notice = |n: u128| Notice {
        event: Event {
            id: EventId(uuid::Uuid::from_u128(0xfeed_0000 + n)),
            workspace_id: WorkspaceId(claimed[0].workspace_id.0),
            event_type: EventType::WebhookFailing,
            body: "{}".into(),
            created_at: T0 + Duration::seconds(2),
            subject: EventSubject::default(),
            ordering_key: "wh_aaaaaaaaaaaaaaaaaaaaaaaa".into(),
        },
        about: WebhookId::parse("wh_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap(),
        streak_started_by: Some(OffsetDateTime::now_utc() - Duration::days(1)),
    };
    let mut attempt = record(NextStep::RetryAt(T0 + Duration::hours(1)), failed);
    attempt.notice = Some(notice(1));
    assert!(queue.record(&claimed[0], &attempt).await.unwrap(), "told");
    assert_eq!(
        text(
            &db,
            "SELECT string_agg(subscription_id, ',') AS v FROM deliveries \
             WHERE event_id = '00000000-0000-0000-0000-0000feed0001'"
        )
        .await,
        "wh_cccccccccccccccccccccccc",
        "not the webhook it is about, not another member's"
    );
    assert_eq!(
        text(
            &db,
            "SELECT visible_to::text AS v FROM events \
             WHERE id = '00000000-0000-0000-0000-0000feed0001'"
        )
        .await,
        "00000000-0000-0000-0000-0000000000b1",
        "visible to the webhook's owner alone"
    );
    // Once per streak: a second failing attempt tells nothing more.
    attempt.notice = Some(notice(2));
    assert!(!queue.record(&claimed[0], &attempt).await.unwrap());
    assert_eq!(
        text(
            &db,
            "SELECT count(*)::text AS v FROM events WHERE event_type = 'WEBHOOK_FAILING'"
        )
        .await,
        "1"
    );
}

#[tokio::test]
async fn a_round_asked_to_claim_only_if_held_back_claims_what_its_attempts_held_back_only() {
    let delivered = record(NextStep::Done, AttemptOutcome::Delivered { status: 200 });
    let lease = T0 + Duration::seconds(30);

    // Held back by the in-flight cap: three recorded, three of the same subscription claimed.
    let (_db, queue) = setup(30).await;
    let first = queue.claim(T0, lease, 100, 10).await.unwrap();
    assert_eq!(first.len(), 10);
    let done: Vec<_> = first[..3]
        .iter()
        .map(|d| (d.clone(), delivered.clone()))
        .collect();
    let next = queue
        .record_and_claim(
            &done,
            T0,
            lease,
            100,
            &InFlightCaps::per_subscription(10),
            ClaimWhen::IfHeldBack,
        )
        .await
        .unwrap();
    assert_eq!(next.len(), 3, "the cap held these back");

    // Held back by ordering: the next event of the key goes once the first is recorded.
    let (db, queue) = setup(2).await;
    sql(
        &db,
        "UPDATE deliveries SET ordering_key = 'k', sequence = right(event_id::text, 1)::bigint",
    )
    .await;
    let first = queue.claim(T0, lease, 100, 10).await.unwrap();
    assert_eq!(first.len(), 1);
    let next = queue
        .record_and_claim(
            &[(first[0].clone(), delivered.clone())],
            T0,
            lease,
            100,
            &InFlightCaps::per_subscription(10),
            ClaimWhen::IfHeldBack,
        )
        .await
        .unwrap();
    assert_eq!(next.len(), 1, "the next of the key");
    assert_eq!(next[0].sequence, 2);

    // Nothing held back: another subscription's due deliveries wait for a claim asked for.
    let (db, queue) = setup(2).await;
    let first = queue.claim(T0, lease, 100, 10).await.unwrap();
    assert_eq!(first.len(), 2);
    sql(
        &db,
        "UPDATE webhook_subscriptions SET status = 'ACTIVE', disabled_reason = NULL WHERE id LIKE 'wh_b%'",
    )
    .await;
    let done: Vec<_> = first
        .iter()
        .map(|d| (d.clone(), delivered.clone()))
        .collect();
    let next = queue
        .record_and_claim(
            &done,
            T0,
            lease,
            100,
            &InFlightCaps::per_subscription(10),
            ClaimWhen::IfHeldBack,
        )
        .await
        .unwrap();
    assert!(next.is_empty(), "no claim ran");
    assert_eq!(
        text(
            &db,
            "SELECT status || ':' || count(*) AS v FROM deliveries GROUP BY status ORDER BY status"
        )
        .await,
        "DELIVERED:2,PENDING:2",
        "the attempts were recorded"
    );
    let asked = queue
        .record_and_claim(
            &[],
            T0,
            lease,
            100,
            &InFlightCaps::per_subscription(10),
            ClaimWhen::Always,
        )
        .await
        .unwrap();
    assert_eq!(asked.len(), 2);
    assert!(
        asked
            .iter()
            .all(|d| d.subscription_id.as_str().starts_with("wh_b"))
    );
}
