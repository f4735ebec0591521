//! The delivery queue: leased claims and recorded outcomes.

use diesel_async::RunQueryDsl;
use time::macros::datetime;
use time::{Duration, OffsetDateTime};
use timetrack_adapters::postgres::PgDeliveryQueue;
use timetrack_domain::DomainResult;
use timetrack_domain::delivery::{
    AttemptOutcome, AttemptRecord, AttemptReport, ClaimedDelivery, FailureReason, NextStep,
    QueueStats,
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
        self.record_and_claim(&[], now, lease_until, limit, per_subscription)
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

/// A workspace with one key, subscriptions `wh_a...` (ACTIVE) and `wh_b...` (DISABLED), and
/// `events` events each with a pending delivery to both.
async fn setup(events: u32) -> (TestDatabase, PgDeliveryQueue) {
    let db = TestDatabase::new().await;
    for statement in [
        "INSERT INTO workspaces (id, name, created_at) VALUES ('00000000-0000-0000-0000-0000000000a1', 'W', now())".to_owned(),
        "INSERT INTO users (id, name, email, created_at) VALUES ('00000000-0000-0000-0000-0000000000b1', 'U', 'u@example.com', now())".to_owned(),
        "INSERT INTO memberships VALUES ('00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000b1', now())".to_owned(),
        "INSERT INTO api_keys (id, workspace_id, user_id, key_prefix, key_hash, created_at) VALUES ('00000000-0000-0000-0000-0000000000c1', '00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000b1', 'tt_x', decode(repeat('00', 32), 'hex'), now())".to_owned(),
        "INSERT INTO webhook_subscriptions (id, workspace_id, user_id, api_key_id, url, events, secret, status, created_at, updated_at) VALUES \
         ('wh_aaaaaaaaaaaaaaaaaaaaaaaa', '00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-0000000000c1', 'https://a.example.com/h', ARRAY['CLIENT_CREATED'], 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'ACTIVE', now(), now()), \
         ('wh_bbbbbbbbbbbbbbbbbbbbbbbb', '00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-0000000000c1', 'https://b.example.com/h', ARRAY['CLIENT_CREATED'], 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'DISABLED', now(), now())".to_owned(),
        format!("INSERT INTO events (id, workspace_id, event_type, body, created_at) SELECT ('00000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid, '00000000-0000-0000-0000-0000000000a1', 'CLIENT_CREATED', '{{\"n\":' || g || '}}', '{T0}' FROM generate_series(1, {events}) g"),
        format!("INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, next_attempt_at, created_at, updated_at) SELECT e.id, s.id, e.workspace_id, 'PENDING', '{T0}', '{T0}', '{T0}' FROM events e CROSS JOIN webhook_subscriptions s"),
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
            response_excerpt: Some("ok".into()),
        },
        next,
        disable_subscription: false,
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

/// 20,000 more events of the setup's workspace (ids `...-0001-<n>`, after the setup's own),
/// with no deliveries yet: the burst that grows the event log.
async fn burst_of_events(db: &TestDatabase) {
    sql(db, "INSERT INTO events (id, workspace_id, event_type, body, created_at) SELECT ('00000000-0000-0000-0001-' || lpad(g::text, 12, '0'))::uuid, '00000000-0000-0000-0000-0000000000a1', 'CLIENT_CREATED', '{}', '2026-03-01 09:00Z' FROM generate_series(1, 20000) g").await;
}

/// The rows of `table` that `client`'s open transaction has read, scanned or fetched through
/// an index.
async fn rows_read(client: &tokio_postgres::Client, table: &str) -> i64 {
    client
        .query_one(
            "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) \
             FROM pg_stat_xact_user_tables WHERE relname = $1",
            &[&table],
        )
        .await
        .unwrap()
        .get(0)
}

/// Runs the statement of PL/pgSQL function `function` (its one SQL statement, as the
/// function runs it) on `arguments`, under `EXPLAIN (ANALYZE, BUFFERS)` with
/// `plan_cache_mode` `mode`, in a transaction rolled back afterwards.
async fn statement_cost(db: &TestDatabase, function: &str, mode: &str, arguments: &str) -> Cost {
    let (client, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    let driver = tokio::spawn(connection);
    let row = client
        .query_one(
            "SELECT prosrc, pg_get_function_identity_arguments(oid), \
                    coalesce(array_to_string(proconfig, ';'), '') \
             FROM pg_proc WHERE proname = $1",
            &[&function],
        )
        .await
        .unwrap();
    let (source, types, config): (String, String, String) = (row.get(0), row.get(1), row.get(2));
    // The function's own settings, as it runs with them.
    let settings: String = config
        .split(';')
        .filter_map(|setting| setting.split_once('='))
        .map(|(name, value)| format!("SET LOCAL {name} = {value}; "))
        .collect();
    let body = source
        .split_once("BEGIN")
        .and_then(|(_, rest)| rest.rsplit_once("END"))
        .map(|(body, _)| {
            let body = body.trim();
            body.strip_prefix("RETURN QUERY")
                .unwrap_or(body)
                .trim()
                .trim_end_matches(';')
        })
        .expect("the function is BEGIN <one statement> END");
    client
        .batch_execute(&format!(
            "BEGIN; {settings}SET LOCAL plan_cache_mode = {mode}; \
             PREPARE measured({types}) AS {body}"
        ))
        .await
        .unwrap();
    let explained = client
        .simple_query(&format!(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE measured({arguments})"
        ))
        .await
        .unwrap();
    client.batch_execute("ROLLBACK").await.unwrap();
    drop(client);
    let _ = driver.await;
    let plan: serde_json::Value = explained
        .iter()
        .find_map(|message| match message {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0),
            _ => None,
        })
        .and_then(|json| serde_json::from_str(json).ok())
        .expect("EXPLAIN gives one JSON row");
    let top = &plan[0]["Plan"];
    let blocks = |key: &str| top[key].as_u64().unwrap_or(0);
    Cost {
        rows: top["Actual Rows"].as_u64().unwrap(),
        deliveries_read: deliveries_read(top),
        buffers: blocks("Shared Hit Blocks") + blocks("Shared Read Blocks"),
    }
}

/// What one run of a statement cost.
struct Cost {
    /// The rows of its top node.
    rows: u64,
    /// The rows of `deliveries` it read (see [`deliveries_read`]).
    deliveries_read: u64,
    /// The shared buffers it touched, each time it touched one.
    buffers: u64,
}

/// The rows of `deliveries` a plan node and its children read: those they returned and
/// those their filters removed, on every loop.
fn deliveries_read(node: &serde_json::Value) -> u64 {
    let count = |key: &str| node[key].as_u64().unwrap_or(0);
    let own = if node["Relation Name"] == "deliveries" {
        (count("Actual Rows") + count("Rows Removed by Filter")) * count("Actual Loops")
    } else {
        0
    };
    own + node["Plans"]
        .as_array()
        .map_or(0, |plans| plans.iter().map(deliveries_read).sum())
}

/// Arguments of `timetrack_record_attempts` for a success of each of `leased` at `at`.
fn record_arguments(leased: &[ClaimedDelivery], at: OffsetDateTime) -> String {
    let n = leased.len();
    let column =
        |f: &dyn Fn(&ClaimedDelivery) -> String| leased.iter().map(f).collect::<Vec<_>>().join(",");
    let same = |value: &str| format!("array_fill({value}, ARRAY[{n}])");
    let at_sql = format!("'{at}'::timestamptz");
    [
        format!("'{{{}}}'", column(&|c| c.event_id.0.to_string())),
        format!(
            "'{{{}}}'",
            column(&|c| c.subscription_id.as_str().to_owned())
        ),
        same("1"),
        same(&at_sql),
        same("3"),
        same("200"),
        same("NULL::text"),
        same("NULL::text"),
        same("'DELIVERED'::text"),
        same(&at_sql),
        same(&at_sql),
        same("true"),
    ]
    .join(", ")
}

#[tokio::test]
async fn queue_statements_cost_what_they_touch_even_when_the_statistics_say_it_is_empty() {
    // The queue is analyzed while empty (its usual state), then a burst arrives: the
    // statistics say nothing is pending while 6,000 deliveries are. Plans trusting them
    // once joined every pending delivery with a subquery re-run per row (seconds a claim),
    // and scanned every pending delivery to record a batch of attempts.
    let (db, queue) = setup(30_000).await;
    sql(
        &db,
        "ALTER TABLE deliveries SET (autovacuum_enabled = false)",
    )
    .await;
    sql(&db, "UPDATE deliveries SET status = 'DELIVERED'").await;
    sql(&db, "VACUUM (FULL, ANALYZE) deliveries").await;
    sql(&db, "UPDATE deliveries SET status = 'PENDING' WHERE event_id > '00000000-0000-0000-0000-000000027000'").await;
    assert_eq!(
        text(&db, "SELECT most_common_vals::text AS v FROM pg_stats WHERE tablename = 'deliveries' AND attname = 'status'").await,
        "{DELIVERED}",
        "the statistics are stale as intended"
    );
    let at = T0 + Duration::seconds(5);
    let claim = format!("'{at}', '{}', 100, 10", at + Duration::seconds(30));
    for mode in ["force_custom_plan", "force_generic_plan"] {
        let Cost {
            rows: claimed,
            deliveries_read: read,
            ..
        } = statement_cost(&db, "timetrack_claim_deliveries", mode, &claim).await;
        assert_eq!(claimed, 10, "{mode}: 10 in flight at most");
        assert!(
            read < 200,
            "{mode}: claiming 10 of 6,000 pending read {read} deliveries"
        );
    }
    // Ten leased deliveries, whose outcomes the record statement then writes.
    let leased = queue
        .claim(at, at + Duration::seconds(30), 10, 10)
        .await
        .unwrap();
    assert_eq!(leased.len(), 10);
    let record = record_arguments(&leased, at);
    for mode in ["force_custom_plan", "force_generic_plan"] {
        let read = statement_cost(&db, "timetrack_record_attempts", mode, &record)
            .await
            .deliveries_read;
        assert!(
            read < 200,
            "{mode}: recording 10 attempts read {read} deliveries"
        );
    }
}

#[tokio::test]
async fn recording_on_a_connection_that_first_recorded_into_a_tiny_queue_finds_rows_by_key() {
    // A connection's first rounds meet a queue that holds a row or two (a new installation,
    // or one just emptied by housekeeping and vacuumed), then a burst grows it. A plan made
    // then and kept for the connection drove the join from deliveries and read all of
    // deliveries_subscription_idx for every batch (about 10 ms a round at 5,000 rows).
    let (db, queue) = setup(1).await;
    sql(
        &db,
        "ALTER TABLE deliveries SET (autovacuum_enabled = false)",
    )
    .await;
    sql(&db, "VACUUM (ANALYZE) deliveries").await;
    let at = T0 + Duration::seconds(5);
    let leased = queue
        .claim(at, at + Duration::seconds(30), 10, 10)
        .await
        .unwrap();
    assert_eq!(leased.len(), 1);
    let record = format!(
        "SELECT timetrack_record_attempts({})",
        record_arguments(&leased, at)
    );
    let (client, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    let driver = tokio::spawn(connection);
    // More than the five custom plans after which a kept plan may become generic.
    for _ in 0..10 {
        client.batch_execute(&record).await.unwrap();
    }
    burst_of_events(&db).await;
    sql(&db, "INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, attempts, next_attempt_at, created_at, updated_at) SELECT id, 'wh_aaaaaaaaaaaaaaaaaaaaaaaa', workspace_id, 'DELIVERED', 1, created_at, created_at, created_at FROM events WHERE id > '00000000-0000-0000-0001-000000000000'").await;
    client.batch_execute("BEGIN").await.unwrap();
    client.batch_execute(&record).await.unwrap();
    let read = rows_read(&client, "deliveries").await;
    client.batch_execute("ROLLBACK").await.unwrap();
    drop(client);
    let _ = driver.await;
    assert!(
        read < 100,
        "recording one attempt among 20,000 deliveries read {read} of them"
    );
}

#[tokio::test]
async fn a_claim_planned_on_statistics_of_a_tiny_queue_still_claims_by_key_in_a_burst() {
    // The claim's statistics often come from a queue and an event log that were nearly
    // empty (a new installation, a quiet spell after housekeeping, a benchmark that cleared
    // its history), and a burst grows both before anything analyzes them again. A plan of an
    // earlier claim, made on such statistics and kept, read the whole primary key of events
    // for every claimed delivery (305,474 buffers for a claim of 54). Three starting points:
    // analyzed with one pending delivery, analyzed empty, and never analyzed; the connection
    // claims ten times on them, then once after the burst.
    for (start, analyzed) in [(1, true), (0, true), (1, false)] {
        let (db, _queue) = setup(start).await;
        for table in ["deliveries", "events"] {
            sql(
                &db,
                &format!("ALTER TABLE {table} SET (autovacuum_enabled = false)"),
            )
            .await;
            if analyzed {
                sql(&db, &format!("VACUUM (ANALYZE) {table}")).await;
            }
        }
        let at = T0 + Duration::seconds(5);
        let claim = format!(
            "SELECT count(*) FROM timetrack_claim_deliveries('{at}', '{}', 100, 10)",
            at + Duration::seconds(30)
        );
        let (client, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        let driver = tokio::spawn(connection);
        for _ in 0..10 {
            client
                .batch_execute(&format!("BEGIN; {claim}; ROLLBACK"))
                .await
                .unwrap();
        }
        burst_of_events(&db).await;
        sql(&db, "INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, attempts, next_attempt_at, created_at, updated_at) SELECT e.id, s.id, e.workspace_id, 'PENDING', 0, e.created_at, e.created_at, e.created_at FROM events e CROSS JOIN webhook_subscriptions s WHERE e.id > '00000000-0000-0000-0001-000000000000'").await;
        client.batch_execute("BEGIN").await.unwrap();
        let claimed: i64 = client.query_one(&claim, &[]).await.unwrap().get(0);
        let mut read = Vec::new();
        for table in ["deliveries", "events"] {
            read.push((table, rows_read(&client, table).await));
        }
        client.batch_execute("ROLLBACK").await.unwrap();
        drop(client);
        let _ = driver.await;
        let first = format!(
            "first claim on {start} pending, {}",
            if analyzed {
                "analyzed"
            } else {
                "never analyzed"
            }
        );
        assert_eq!(claimed, 10, "{first}: 10 in flight at most");
        for (table, rows) in read {
            assert!(
                rows < 200,
                "{first}: claiming 10 of 40,000 pending read {rows} rows of {table}"
            );
        }
    }
}

#[tokio::test]
async fn the_queue_functions_are_never_compiled_just_in_time() {
    // A kept plan is costed without the call's values, and once a large queue was analyzed
    // the claim's estimate passed `jit_above_cost`: every claim compiled 61 expressions
    // first, about 20 ms a round, and delivery fell seconds behind. Here every statement of
    // the session passes the threshold, and `auto_explain` reports each plan, nested ones
    // included, as a notice.
    use futures_util::StreamExt;
    let (db, queue) = setup(20).await;
    let (client, mut connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(message)) = messages.next().await {
            if let tokio_postgres::AsyncMessage::Notice(notice) = message {
                let _ = tx.send(notice.message().to_owned());
            }
        }
    });
    let plans = |rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>| {
        let mut all = Vec::new();
        while let Ok(plan) = rx.try_recv() {
            all.push(plan);
        }
        all
    };
    client
        .batch_execute(
            "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; \
             SET auto_explain.log_nested_statements = on; SET auto_explain.log_analyze = on; \
             SET client_min_messages = log; SET jit_above_cost = 0",
        )
        .await
        .unwrap();
    client
        .batch_execute("SELECT count(*) FROM deliveries WHERE attempts >= 0")
        .await
        .unwrap();
    assert!(
        plans(&mut rx).iter().any(|plan| plan.contains("JIT:")),
        "this server compiles an ordinary statement here (else the test could not fail)"
    );
    let at = T0 + Duration::seconds(5);
    let leased = queue
        .claim(at, at + Duration::seconds(30), 10, 10)
        .await
        .unwrap();
    let calls = [
        format!(
            "SELECT count(*) FROM timetrack_claim_deliveries('{at}', '{}', 100, 10)",
            at + Duration::seconds(30)
        ),
        format!(
            "SELECT timetrack_record_attempts({})",
            record_arguments(&leased, at)
        ),
    ];
    for call in calls {
        for _ in 0..3 {
            client
                .batch_execute(&format!("BEGIN; {call}; ROLLBACK"))
                .await
                .unwrap();
        }
        // The statements inside the function, not the call itself (this session's own
        // statement, compiled here as any would be).
        let inside: Vec<String> = plans(&mut rx)
            .into_iter()
            .filter(|plan| !plan.contains(&call))
            .collect();
        assert!(!inside.is_empty(), "the plans inside {call} were reported");
        assert!(
            inside.iter().all(|plan| !plan.contains("JIT:")),
            "a statement inside {call} was compiled just in time: {inside:#?}"
        );
    }
    drop(client);
    let _ = driver.await;
}

#[tokio::test]
async fn a_held_snapshot_makes_a_claim_walk_its_dead_entries_once_not_three_times() {
    // While a snapshot older than the deliveries' last changes is held, the index entries of
    // their earlier versions cannot be marked dead, and a scan meeting them visits the heap
    // for each. 2,000 deliveries of one subscription were leased and delivered under such a
    // snapshot (two dead entries each in the pending index, one in the leased index); 10
    // newer ones are due. Finding the subscription walks the dead entries once; counting
    // its leases and picking its due deliveries start at its oldest live one (they walked
    // them again, twice: 8,286 buffers against 4,251 when this was written).
    let (db, queue) = setup(2_010).await;
    sql(
        &db,
        "ALTER TABLE deliveries SET (autovacuum_enabled = false)",
    )
    .await;
    sql(
        &db,
        &format!(
            "UPDATE deliveries SET next_attempt_at = '{T0}'::timestamptz \
             + right(event_id::text, 12)::int * interval '1 millisecond'"
        ),
    )
    .await;
    sql(&db, "VACUUM deliveries").await;
    let (holder, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    let driver = tokio::spawn(connection);
    holder
        .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM deliveries")
        .await
        .unwrap();
    let delivered = "subscription_id = 'wh_aaaaaaaaaaaaaaaaaaaaaaaa' \
                     AND right(event_id::text, 12)::int <= 2000";
    sql(
        &db,
        &format!(
            "UPDATE deliveries SET lease_expires_at = '{}' WHERE {delivered}",
            T0 + Duration::days(1)
        ),
    )
    .await;
    sql(
        &db,
        &format!(
            "UPDATE deliveries SET status = 'DELIVERED', lease_expires_at = NULL \
             WHERE {delivered}"
        ),
    )
    .await;

    let at = T0 + Duration::hours(1);
    let claim = format!("'{at}', '{}', 100, 10", at + Duration::seconds(30));
    // As the function runs it: with the plan kept for the connection (its `plan_cache_mode`).
    let cost = statement_cost(
        &db,
        "timetrack_claim_deliveries",
        "force_generic_plan",
        &claim,
    )
    .await;
    assert_eq!(cost.rows, 10);
    assert!(
        cost.buffers < 6_000,
        "claiming 10 behind 2,000 delivered under a held snapshot touched {} buffers",
        cost.buffers
    );
    // And it claims the right ones, then counts them in flight.
    let claimed = queue
        .claim(at, at + Duration::seconds(30), 100, 10)
        .await
        .unwrap();
    // The event ids end in their number, in decimal.
    let mut numbers: Vec<u32> = claimed
        .iter()
        .map(|c| c.event_id.0.to_string()[24..].parse().unwrap())
        .collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (2_001..=2_010).collect::<Vec<u32>>());
    assert!(
        queue
            .claim(at, at + Duration::seconds(30), 100, 10)
            .await
            .unwrap()
            .is_empty(),
        "10 in flight"
    );
    holder.batch_execute("ROLLBACK").await.unwrap();
    drop(holder);
    let _ = driver.await;
}

#[tokio::test]
async fn a_lease_taken_by_a_process_whose_clock_runs_ahead_still_counts() {
    // Another process, its clock an hour ahead, leased a delivery that is due an hour from
    // now by this one's clock: it is in flight all the same.
    let (db, queue) = setup(12).await;
    sql(
        &db,
        &format!(
            "UPDATE deliveries SET next_attempt_at = '{}', lease_expires_at = '{}' \
             WHERE subscription_id = 'wh_aaaaaaaaaaaaaaaaaaaaaaaa' \
             AND event_id = '00000000-0000-0000-0000-000000000001'",
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
    sql(&db, "UPDATE deliveries SET status = 'CANCELLED', lease_expires_at = NULL WHERE subscription_id LIKE 'wh_a%'").await;
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
        .record_and_claim(&[], T0, lease, 100, 10)
        .await
        .unwrap();
    assert_eq!(first.len(), 10, "an empty round is a plain claim");
    let delivered = record(NextStep::Done, AttemptOutcome::Delivered { status: 200 });
    let done: Vec<_> = first[..3]
        .iter()
        .map(|d| (d.clone(), delivered.clone()))
        .collect();
    let next = queue
        .record_and_claim(&done, T0, lease, 100, 10)
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
            .record_and_claim(&[], T0, lease, 100, 10)
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
        .record_and_claim(&[(next[0].clone(), failed)], T0, lease, 0, 10)
        .await
        .unwrap();
    assert!(recorded_only.is_empty(), "limit 0 records only");
    assert_eq!(
        text(&db, "SELECT count(*)::text AS v FROM deliveries WHERE lease_expires_at IS NOT NULL AND status = 'PENDING'").await,
        "9"
    );
}

#[tokio::test]
async fn a_round_refuses_an_attempt_that_ends_its_subscription_and_changes_nothing() {
    let (db, queue) = setup(3).await;
    let lease = T0 + Duration::seconds(30);
    let claimed = queue.record_and_claim(&[], T0, lease, 1, 10).await.unwrap();
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
                .record_and_claim(&[(claimed[0].clone(), ending)], T0, lease, 10, 10)
                .await
                .is_err()
        );
    }
    assert_eq!(
        text(&db, "SELECT (SELECT count(*) FROM delivery_attempts) || ':' || (SELECT count(*) FROM deliveries WHERE lease_expires_at IS NOT NULL) || ':' || (SELECT status FROM webhook_subscriptions WHERE id LIKE 'wh_a%') AS v").await,
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
        "SELECT count(*) FROM timetrack_record_and_claim('{{}}', '{{}}', '{{}}', '{{}}', '{{}}', \
         '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', '{T0}', '{}', 10, 10)",
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
            "SELECT status AS v FROM webhook_subscriptions WHERE id LIKE 'wh_a%'"
        )
        .await,
        "DISABLED"
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
    let (db, queue) = setup(3).await;
    // Event 1: old and final; event 2: old but still pending; event 3: recent and final.
    sql(&db, "UPDATE events SET created_at = now() - interval '8 days' WHERE id IN ('00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000002')").await;
    sql(&db, "UPDATE events SET created_at = now() - interval '6 days' WHERE id = '00000000-0000-0000-0000-000000000003'").await;
    sql(&db, "UPDATE deliveries SET status = 'DELIVERED' WHERE event_id IN ('00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000003')").await;
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
    sql(&db, "INSERT INTO idempotency_keys (api_key_id, key, fingerprint, created_at) VALUES \
              ('00000000-0000-0000-0000-0000000000c1', 'old', decode(repeat('00', 32), 'hex'), now() - interval '25 hours'), \
              ('00000000-0000-0000-0000-0000000000c1', 'new', decode(repeat('00', 32), 'hex'), now())").await;
    sql(&db, "INSERT INTO rate_limit_hits (key, at) VALUES ('k', now() - interval '2 minutes'), ('k', now())").await;

    let purged = PgHousekeeping::new(db.pool())
        .purge(OffsetDateTime::now_utc(), Duration::days(7))
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
        "2,3"
    );
    assert_eq!(
        text(&db, "SELECT count(*)::text AS v FROM deliveries").await,
        "4"
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
