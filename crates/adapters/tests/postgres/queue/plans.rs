//! The queue's statements under the planner: what they cost and what they touch, whatever the
//! statistics say.

use super::{Claim, T0, setup, sql, text};
use time::{Duration, OffsetDateTime};
use timetrack_domain::delivery::ClaimedDelivery;
use timetrack_testkit::TestDatabase;

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
    let plan = explained(db, function, mode, arguments, "ANALYZE, BUFFERS, ").await;
    let top = &plan[0]["Plan"];
    let blocks = |key: &str| top[key].as_u64().unwrap_or(0);
    Cost {
        rows: top["Actual Rows"].as_u64().unwrap(),
        deliveries_read: deliveries_read(top),
        buffers: blocks("Shared Hit Blocks") + blocks("Shared Read Blocks"),
    }
}

/// The JSON plan of the statement of PL/pgSQL function `function` on `arguments`, prepared as
/// the function runs it (with its settings and `plan_cache_mode` `mode`) and explained with
/// `options` (each followed by ", "), in a transaction rolled back afterwards.
async fn explained(
    db: &TestDatabase,
    function: &str,
    mode: &str,
    arguments: &str,
    options: &str,
) -> serde_json::Value {
    let (client, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    let driver = tokio::spawn(connection);
    let row = client
        .query_one(
            "SELECT prosrc, oidvectortypes(proargtypes), \
                    coalesce(array_to_string(proconfig, ';'), ''), \
                    coalesce(proargnames, '{}') \
             FROM pg_proc WHERE proname = $1 \
               AND pronamespace = 'timetrack_code'::regnamespace",
            &[&function],
        )
        .await
        .unwrap();
    let (source, types, config, names): (String, String, String, Vec<String>) =
        (row.get(0), row.get(1), row.get(2), row.get(3));
    // A parameter the body names as `function.name` is `$n` in the prepared statement.
    let source = names.iter().enumerate().fold(source, |body, (n, name)| {
        body.replace(&format!("{function}.{name}"), &format!("${}", n + 1))
    });
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
            // The query a function returns, after what it does first (the claim's lock).
            body.split_once("RETURN QUERY")
                .map_or(body, |(_, query)| query)
                .trim()
                .trim_end_matches(';')
        })
        .expect("the function is BEGIN <one statement, or locks then RETURN QUERY> END");
    client
        .batch_execute(&format!(
            "BEGIN; {settings}SET LOCAL plan_cache_mode = {mode}; \
             PREPARE measured({types}) AS {body}"
        ))
        .await
        .unwrap();
    let explained = client
        .simple_query(&format!(
            "EXPLAIN ({options}FORMAT JSON) EXECUTE measured({arguments})"
        ))
        .await
        .unwrap();
    client.batch_execute("ROLLBACK").await.unwrap();
    drop(client);
    let _ = driver.await;
    explained
        .iter()
        .find_map(|message| match message {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0),
            _ => None,
        })
        .and_then(|json| serde_json::from_str(json).ok())
        .expect("EXPLAIN gives one JSON row")
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

/// Arguments of `timetrack_code.record_attempts` for a success of each of `leased` at `at`.
fn record_arguments(leased: &[ClaimedDelivery], at: OffsetDateTime) -> String {
    let n = leased.len();
    let column =
        |f: &dyn Fn(&ClaimedDelivery) -> String| leased.iter().map(f).collect::<Vec<_>>().join(",");
    let same = |value: &str| format!("array_fill({value}, ARRAY[{n}])");
    let at_sql = format!("'{at}'::timestamptz");
    [
        format!(
            "'{{{}}}'::bigint[]",
            column(&|c| c.delivery_id.0.to_string())
        ),
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
        same("false"),
        format!(
            "'{{{}}}'::uuid[]",
            column(&|c| c.workspace_id.0.to_string())
        ),
        same("NULL::timestamptz"),
        same("false"),
        same("'v1,c2lnbmF0dXJl'::text"),
        same("NULL::text"),
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
    let claim = format!(
        "'{at}', '{}', 100, 10, 1000, '{{}}', '{{}}', '{{}}'",
        at + Duration::seconds(30)
    );
    for mode in ["force_custom_plan", "force_generic_plan"] {
        let Cost {
            rows: claimed,
            deliveries_read: read,
            ..
        } = statement_cost(&db, "claim_deliveries", mode, &claim).await;
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
        let read = statement_cost(&db, "record_attempts", mode, &record)
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
    // then and kept for the connection can drive the join from deliveries and read all of
    // deliveries_subscription_idx for every batch, a round's cost growing with the queue.
    let (db, queue) = setup(1).await;
    freeze_statistics(&db, "deliveries", true).await;
    let at = T0 + Duration::seconds(5);
    let leased = queue
        .claim(at, at + Duration::seconds(30), 10, 10)
        .await
        .unwrap();
    assert_eq!(leased.len(), 1);
    let record = format!(
        "SELECT timetrack_code.record_attempts({})",
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

/// A claim whose plan a connection made and kept before a burst (see
/// [`claim_planned_before_a_burst`]).
struct KeptClaim {
    client: tokio_postgres::Client,
    driver: tokio::task::JoinHandle<Result<(), tokio_postgres::Error>>,
    /// The claim: up to 100, at `at`, leases of 30 s, 10 in flight a subscription.
    sql: String,
    at: OffsetDateTime,
}

impl KeptClaim {
    /// Runs the claim once more on the kept plan, in a transaction rolled back afterwards;
    /// returns how many it claimed and the rows it read of each of `tables`.
    async fn run(self, tables: &[&str]) -> (i64, Vec<i64>) {
        self.client.batch_execute("BEGIN").await.unwrap();
        let claimed: i64 = self.client.query_one(&self.sql, &[]).await.unwrap().get(0);
        let mut read = Vec::new();
        for table in tables {
            read.push(rows_read(&self.client, table).await);
        }
        self.client.batch_execute("ROLLBACK").await.unwrap();
        drop(self.client);
        let _ = self.driver.await;
        (claimed, read)
    }
}

/// Turns autovacuum off for `table` of `db`, so that its statistics stay as they are, after
/// analyzing it now if `analyze`.
async fn freeze_statistics(db: &TestDatabase, table: &str, analyze: bool) {
    sql(
        db,
        &format!("ALTER TABLE {table} SET (autovacuum_enabled = false)"),
    )
    .await;
    if analyze {
        sql(db, &format!("VACUUM (ANALYZE) {table}")).await;
    }
}

/// A new connection that claimed ten times (each rolled back; PL/pgSQL keeps the plan for the
/// connection), and the claim it keeps.
async fn claiming_connection(db: &TestDatabase) -> KeptClaim {
    let at = T0 + Duration::seconds(5);
    let claim = format!(
        "SELECT count(*) FROM timetrack_code.claim_deliveries('{at}', '{}', 100, 10, 1000, '{{}}', '{{}}', '{{}}')",
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
    KeptClaim {
        client,
        driver,
        sql: claim,
        at,
    }
}

/// Freezes the statistics of `db`'s queue (autovacuum off; analyzed now if `analyze`), has a
/// new connection claim ten times on them (see [`claiming_connection`]), then writes a burst:
/// 20,000 more events, each with a pending delivery to every subscription.
async fn claim_planned_before_a_burst(db: &TestDatabase, analyze: bool) -> KeptClaim {
    for table in ["deliveries", "events"] {
        freeze_statistics(db, table, analyze).await;
    }
    let kept = claiming_connection(db).await;
    burst_of_events(db).await;
    sql(db, "INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, attempts, next_attempt_at, created_at, updated_at, ordering_key, sequence) SELECT e.id, s.id, e.workspace_id, 'PENDING', 0, e.created_at, e.created_at, e.created_at, e.id::text, e.seq FROM events e CROSS JOIN webhook_subscriptions s WHERE e.id > '00000000-0000-0000-0001-000000000000'").await;
    kept
}

#[tokio::test]
async fn a_claim_planned_on_statistics_of_a_tiny_queue_still_claims_by_key_in_a_burst() {
    // The claim's statistics often come from a queue and an event log that were nearly
    // empty (a new installation, a quiet spell after housekeeping, a benchmark that cleared
    // its history), and a burst grows both before anything analyzes them again. A plan made on
    // such statistics and kept can read the whole primary key of events for every claimed
    // delivery unless every step has one access path (ADR 0013 in docs/adr/). Three starting
    // points: analyzed with one pending delivery, analyzed empty, and never analyzed; the
    // connection claims ten times on them, then once after the burst.
    for (start, analyzed) in [(1, true), (0, true), (1, false)] {
        let (db, _queue) = setup(start).await;
        let tables = ["deliveries", "events"];
        let (claimed, read) = claim_planned_before_a_burst(&db, analyzed)
            .await
            .run(&tables)
            .await;
        let first = format!(
            "first claim on {start} pending, {}",
            if analyzed {
                "analyzed"
            } else {
                "never analyzed"
            }
        );
        assert_eq!(claimed, 10, "{first}: 10 in flight at most");
        for (table, rows) in tables.iter().zip(read) {
            assert!(
                rows < 200,
                "{first}: claiming 10 of 40,000 pending read {rows} rows of {table}"
            );
        }
    }
}

#[tokio::test]
async fn a_claim_planned_after_a_burst_reads_only_what_it_claims_in_the_next() {
    // Two states the statistics are often taken in between bursts, and a plan kept from each
    // into the next burst:
    // - a subscription with 2,000 pending deliveries (the end of a burst): a bitmap scan of all
    //   of them and a sort looked cheaper than walking them in order, and read every one, with
    //   the ordering probe for each, on every claim (84,000 rows here; 100 ms a claim in the
    //   scale-out benchmark, where a second process delivered a tenth as much);
    // - 40,000 delivered deliveries and none pending (a burst just delivered and vacuumed), the
    //   state in which the benchmark's claims once scanned the whole ordering index (see
    //   `the_ordering_index_serves_the_claims_ordering_probe_and_nothing_else`, which makes that
    //   plan the planner's only cheap choice; here it merely may be).
    for (events, delivered) in [(2_000, false), (20_000, true)] {
        let (db, _queue) = setup(events).await;
        if delivered {
            sql(
                &db,
                "UPDATE deliveries SET status = 'DELIVERED', attempts = 1",
            )
            .await;
        }
        let kept = claim_planned_before_a_burst(&db, true).await;
        // Another process holds five of the subscription's ten in-flight slots.
        sql(&db, &format!("INSERT INTO delivery_leases SELECT id, workspace_id, subscription_id, next_attempt_at, '{}' FROM deliveries WHERE subscription_id LIKE 'wh_a%' AND status = 'PENDING' ORDER BY next_attempt_at, id LIMIT 5", kept.at + Duration::seconds(30))).await;
        let (claimed, read) = kept.run(&["deliveries"]).await;
        let read = read[0];
        let state = if delivered {
            "planned on 40,000 delivered"
        } else {
            "planned on 4,000 pending"
        };
        assert_eq!(claimed, 5, "{state}: the five free slots");
        assert!(
            read < 1_000,
            "{state}: claiming 5 in a burst of 40,000 read {read} rows of deliveries"
        );
    }
}

/// The scans of index `index` in a plan node and its children, each with its index condition
/// (`None` for a scan of the whole index).
fn scans_of(node: &serde_json::Value, index: &str, found: &mut Vec<Option<String>>) {
    if node["Index Name"] == index {
        found.push(node["Index Cond"].as_str().map(str::to_owned));
    }
    for child in node["Plans"].as_array().into_iter().flatten() {
        scans_of(child, index, found);
    }
}

#[tokio::test]
async fn the_ordering_index_serves_the_claims_ordering_probe_and_nothing_else() {
    // Its predicate (not final) can be proven from the claim's `status = 'PENDING'`; analyzed
    // while nothing was pending, it looked the cheapest way to read a subscription's pending
    // deliveries, and the claim's kept plan scanned the whole index for each subscription in the
    // next burst (1.5 s a claim). With the other indexes of deliveries gone but the primary key,
    // every step but the probe would take it if it could; each scan of it must be by its key.
    let (db, _queue) = setup(20).await;
    for index in [
        "deliveries_pending_subscription_idx",
        "deliveries_pending_test_idx",
        "deliveries_subscription_idx",
        "deliveries_event_idx",
    ] {
        sql(&db, &format!("DROP INDEX {index}")).await;
    }
    sql(&db, "VACUUM (ANALYZE) deliveries").await;
    let at = T0 + Duration::seconds(5);
    let plan = explained(
        &db,
        "claim_deliveries",
        "force_generic_plan",
        &format!(
            "'{at}', '{}', 100, 10, 1000, '{{}}', '{{}}', '{{}}'",
            at + Duration::seconds(30)
        ),
        "",
    )
    .await;
    let mut scans = Vec::new();
    scans_of(&plan[0]["Plan"], "deliveries_ordering_idx", &mut scans);
    assert!(
        scans.iter().any(Option::is_some),
        "the probe uses the index: {scans:?}"
    );
    assert!(
        scans.iter().all(Option::is_some),
        "only by its key: {scans:?}"
    );
}

#[tokio::test]
async fn the_queue_functions_are_never_compiled_just_in_time() {
    // A kept plan is costed without the call's values, and once a large queue is analyzed
    // the claim's estimate can pass `jit_above_cost`: every claim would then compile its
    // expressions first, far longer than the round itself, and delivery would fall behind.
    // Here every statement of the session passes the threshold, and `auto_explain` reports
    // each plan, nested ones included, as a notice.
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
            "SELECT count(*) FROM timetrack_code.claim_deliveries('{at}', '{}', 100, 10, 1000, '{{}}', '{{}}', '{{}}')",
            at + Duration::seconds(30)
        ),
        format!(
            "SELECT timetrack_code.record_attempts({})",
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
    // snapshot (a dead entry each in the pending index, and a dead lease each); 10 newer ones
    // are due. Finding the subscription walks the dead entries once; counting
    // its leases and picking its due deliveries start at its oldest live one, so they do not
    // walk them again (figures in docs/benchmarks.md, "A held snapshot").
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
            "INSERT INTO delivery_leases \
             SELECT id, workspace_id, subscription_id, next_attempt_at, '{}' \
             FROM deliveries WHERE {delivered}",
            T0 + Duration::days(1)
        ),
    )
    .await;
    sql(
        &db,
        &format!(
            "WITH d AS (UPDATE deliveries SET status = 'DELIVERED' WHERE {delivered} \
             RETURNING id) DELETE FROM delivery_leases WHERE delivery_id IN (SELECT id FROM d)"
        ),
    )
    .await;

    let at = T0 + Duration::hours(1);
    let claim = format!(
        "'{at}', '{}', 100, 10, 1000, '{{}}', '{{}}', '{{}}'",
        at + Duration::seconds(30)
    );
    // As the function runs it: with the plan kept for the connection (its `plan_cache_mode`).
    let cost = statement_cost(&db, "claim_deliveries", "force_generic_plan", &claim).await;
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
async fn a_claim_reads_the_subscriptions_with_due_deliveries_only() {
    // An installation grows from a few subscriptions to thousands while its processes keep
    // their plans. A claim that joined its probes with the subscriptions, planned while there
    // were two, walked every active one (and every one, to find the disabled) on every claim.
    let (db, _queue) = setup(20).await;
    freeze_statistics(&db, "webhook_subscriptions", true).await;
    let KeptClaim {
        client,
        driver,
        sql: claim,
        ..
    } = claiming_connection(&db).await;
    sql(&db, "INSERT INTO webhook_subscriptions (id, workspace_id, user_id, api_key_id, url, events, secret, status, created_at, updated_at, disabled_reason) \
              SELECT 'wh_' || lpad(g::text, 24, '0'), workspace_id, user_id, api_key_id, url, events, secret, \
                     CASE WHEN g % 4 = 0 THEN 'DISABLED' ELSE 'ACTIVE' END, created_at, updated_at, \
                     CASE WHEN g % 4 = 0 THEN 'failing' END \
              FROM webhook_subscriptions CROSS JOIN generate_series(1, 2000) g WHERE id LIKE 'wh_a%'").await;
    client.batch_execute("BEGIN").await.unwrap();
    // The counts may still hold the connection's earlier claims, not yet reported.
    let before = rows_read(&client, "webhook_subscriptions").await;
    let claimed: i64 = client.query_one(&claim, &[]).await.unwrap().get(0);
    let read = rows_read(&client, "webhook_subscriptions").await - before;
    client.batch_execute("ROLLBACK").await.unwrap();
    drop(client);
    let _ = driver.await;
    assert_eq!(claimed, 10);
    assert!(
        read < 50,
        "claiming for 2 of 2,002 subscriptions read {read} subscription rows"
    );
}
