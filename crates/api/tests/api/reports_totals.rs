//! Reports (`docs/billing.md` §4), continued: for random entries, rates, roundings and time zones
//! the detailed rows add up to the summary's totals per currency; the detailed CSV streams every
//! row once across its pages; the day totals stay the sum of the entries through every write.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use timetrack_domain::model::Role;

use crate::reports::call_text;
use crate::support::{TestApp, call, keyed as req};

/// For random entries, rates, roundings and time zones, the detailed rows (every page) add up to
/// the summary's totals, and the summary's top groups to its totals, per currency, exactly.
#[actix_web::test]
async fn detailed_rows_sum_exactly_to_the_summary_totals_for_random_data() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let mut rng = StdRng::seed_from_u64(4646);
    let (_, _, usd) = call(
        &app,
        req(
            "POST",
            "/api/clients",
            &key,
            Some(json!({"name": "Dollar", "currency": "USD"})),
        ),
    )
    .await;
    let (_, _, jpy) = call(
        &app,
        req(
            "POST",
            "/api/clients",
            &key,
            Some(json!({"name": "Yen", "currency": "JPY"})),
        ),
    )
    .await;
    let mut projects = vec![Value::Null];
    for (name, client) in [
        ("A", Value::Null),
        ("B", usd["id"].clone()),
        ("C", jpy["id"].clone()),
    ] {
        let (_, _, p) = call(
            &app,
            req(
                "POST",
                "/api/projects",
                &key,
                Some(json!({"name": name, "client_id": client})),
            ),
        )
        .await;
        projects.push(p["id"].clone());
    }
    let (_, _, tag) = call(
        &app,
        req("POST", "/api/tags", &key, Some(json!({"name": "t"}))),
    )
    .await;
    for n in 0..60 {
        let day = rng.random_range(1..28);
        let minute = rng.random_range(0..24 * 60);
        let start = format!(
            "2026-10-{day:02}T{:02}:{:02}:{:02}Z",
            minute / 60,
            minute % 60,
            rng.random_range(0..60)
        );
        let length = rng.random_range(1..20_000);
        let end =
            time::OffsetDateTime::parse(&start, &time::format_description::well_known::Rfc3339)
                .unwrap()
                + time::Duration::seconds(length);
        let body = json!({
            "start": start, "end": timetrack_domain::timefmt::rfc3339(end),
            "project_id": projects[rng.random_range(0..4)], "billable": rng.random_bool(0.7),
            "tag_ids": if n % 3 == 0 { vec![tag["id"].clone()] } else { vec![] },
        });
        assert_eq!(
            call(&app, req("POST", "/api/time-entries", &key, Some(body)))
                .await
                .0,
            201
        );
    }
    for round in 0..10 {
        let currency = ["EUR", "USD", "JPY"][rng.random_range(0..3)];
        let scope = if rng.random_bool(0.5) {
            json!({"scope": "workspace"})
        } else {
            json!({"scope": "project", "project_id": projects[rng.random_range(1..4)]})
        };
        let mut rate = json!({"kind": if rng.random_bool(0.7) { "billable" } else { "cost" }, "currency": currency,
                              "hourly_minor": rng.random_range(1..2_000_000), "effective_from": format!("2026-10-{:02}", rng.random_range(1..28))});
        rate.as_object_mut()
            .unwrap()
            .extend(scope.as_object().unwrap().clone());
        let status = call(&app, req("POST", "/api/rates", &key, Some(rate)))
            .await
            .0;
        assert!(status == 201 || status == 409);
        let minutes = [0, 1, 6, 15, 60][rng.random_range(0..5)];
        let mode = ["up", "down", "nearest"][rng.random_range(0..3)];
        let zone = [
            "UTC",
            "Europe/Berlin",
            "America/Los_Angeles",
            "Asia/Kolkata",
            "Pacific/Chatham",
        ][rng.random_range(0..5)];
        // Half the time the workspace moves to the report's zone: its summaries are then read
        // from its day totals (ADR 0024), otherwise from the entries.
        let mut settings = json!({"settings": {"rounding": {"minutes": minutes, "mode": mode}}});
        if rng.random_bool(0.5) {
            settings["timezone"] = json!(zone);
        }
        let (status, _, body) =
            call(&app, req("PATCH", "/api/workspace", &key, Some(settings))).await;
        assert_eq!(status, 200, "{body}");
        let filter = format!("from=2026-10-03&to=2026-10-24&timezone={zone}");
        let group =
            ["project", "day", "week", "client,user", "month,project,day"][rng.random_range(0..5)];
        let (status, _, summary) = call(
            &app,
            req(
                "GET",
                &format!("/api/reports/summary?{filter}&group_by={group}"),
                &key,
                None,
            ),
        )
        .await;
        assert_eq!(status, 200, "{summary}");
        // Every page of the detailed report, summed.
        let limit = rng.random_range(1..25);
        let mut cursor: Option<String> = None;
        let mut sums: std::collections::BTreeMap<String, (i64, i64, i64, i64, i64, i64)> =
            Default::default();
        let (mut seconds, mut rounded, mut entries) = (0, 0, 0);
        loop {
            let page = match &cursor {
                Some(c) => format!("/api/reports/detailed?{filter}&limit={limit}&cursor={c}"),
                None => format!("/api/reports/detailed?{filter}&limit={limit}"),
            };
            let (status, _, body) = call(&app, req("GET", &page, &key, None)).await;
            assert_eq!(status, 200, "{body}");
            assert_eq!(
                body["totals"], summary["totals"],
                "round {round}: totals on every page"
            );
            for row in body["data"].as_array().unwrap() {
                seconds += row["seconds"].as_i64().unwrap();
                rounded += row["rounded_seconds"].as_i64().unwrap();
                entries += 1;
                let p = &row["pricing"];
                let sum = sums
                    .entry(p["currency"].as_str().unwrap().to_owned())
                    .or_default();
                sum.0 += p["billable_amount_minor"].as_i64().unwrap();
                sum.1 += p["cost_amount_minor"].as_i64().unwrap();
            }
            cursor = body["next_cursor"].as_str().map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
        let totals = &summary["totals"];
        assert_eq!(
            (seconds, rounded, entries),
            (
                totals["seconds"].as_i64().unwrap(),
                totals["rounded_seconds"].as_i64().unwrap(),
                totals["entries"].as_i64().unwrap()
            ),
            "round {round} ({zone}, {minutes} min {mode})"
        );
        let amounts: std::collections::BTreeMap<String, (i64, i64)> = totals["amounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["currency"].as_str().unwrap().to_owned(),
                    (
                        a["billable_minor"].as_i64().unwrap(),
                        a["cost_minor"].as_i64().unwrap(),
                    ),
                )
            })
            .collect();
        let detailed: std::collections::BTreeMap<String, (i64, i64)> =
            sums.iter().map(|(c, s)| (c.clone(), (s.0, s.1))).collect();
        assert_eq!(detailed, amounts, "round {round}: amounts per currency");
        // The top groups add up to the totals too (no tag grouping here).
        let top: i64 = summary["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["rounded_seconds"].as_i64().unwrap())
            .sum();
        assert_eq!(top, totals["rounded_seconds"].as_i64().unwrap());
    }
}

#[actix_web::test]
async fn the_detailed_csv_streams_every_row_once_in_order_across_its_pages() {
    // 12,001 entries, every third tagged, written straight into the table as an import would,
    // with no statistics gathered yet: the CSV is written 5,000 rows a page, each next page read
    // while the one before is written out; every row must come once, in order, with its tag.
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let (_, _, tag) = call(
        &app,
        req(
            "POST",
            "/api/tags",
            &key,
            Some(json!({"name": "Deep work"})),
        ),
    )
    .await;
    let tag = tag["id"].as_str().unwrap().to_owned();
    let (workspace, user) = (t.workspace.id.0, t.user.id.0);
    t.execute(&format!(
        "INSERT INTO time_entries (id, workspace_id, user_id, source, description, billable, \
                                   start_at, end_at, created_at, updated_at) \
         SELECT gen_random_uuid(), '{workspace}', '{user}', 'manual', 'row ' || n, false, \
                timestamptz '2026-03-01 00:00:00+00' + n * interval '2 minutes', \
                timestamptz '2026-03-01 00:01:00+00' + n * interval '2 minutes', now(), now() \
         FROM generate_series(0, 12000) AS n"
    ))
    .await;
    t.execute(&format!(
        "INSERT INTO time_entry_tags (workspace_id, time_entry_id, tag_id) \
         SELECT '{workspace}', id, '{tag}' FROM time_entries \
         WHERE substr(description, 5)::int % 3 = 0"
    ))
    .await;
    let (status, content_type, body) = call_text(
        &app,
        req(
            "GET",
            "/api/reports/detailed?from=2026-03-01&to=2026-03-31&format=csv",
            &key,
            None,
        ),
    )
    .await;
    assert_eq!(
        (status, content_type.as_str()),
        (200, "text/csv; charset=utf-8")
    );
    let mut reader = csv::Reader::from_reader(body.as_bytes());
    let header = reader.headers().unwrap().clone();
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (description, tags) = (column("description"), column("tags"));
    let rows: Vec<(String, String)> = reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            (r[description].to_owned(), r[tags].to_owned())
        })
        .collect();
    let expected: Vec<(String, String)> = (0..=12000)
        .map(|n| {
            let tags = if n % 3 == 0 { "Deep work" } else { "" };
            (format!("row {n}"), tags.to_owned())
        })
        .collect();
    assert_eq!(rows.len(), expected.len());
    assert!(
        rows == expected,
        "every row once, oldest start first, with its tag"
    );
}

/// How many buckets of the day totals (`report_day_totals`) differ from the workspace's stopped
/// entries summed afresh here, with the same rules written out independently: 0 when they are
/// the sum of the entries.
async fn day_totals_drift(t: &TestApp) -> i64 {
    t.scalar(
        "WITH fresh AS ( \
             SELECT e.workspace_id, (e.start_at AT TIME ZONE w.timezone)::date AS day, \
                    coalesce(e.project_id, '00000000-0000-0000-0000-000000000000') AS project_id, \
                    coalesce(e.task_id, '00000000-0000-0000-0000-000000000000') AS task_id, \
                    e.billable, e.invoice_id IS NOT NULL AS invoiced, \
                    coalesce(e.price_currency, '') AS currency, \
                    count(*)::bigint AS entries, sum(d.s)::bigint AS seconds, \
                    sum(r.r)::bigint AS rounded_seconds, \
                    sum(timetrack_code.amount_minor(e.billable_rate_minor, r.r))::numeric AS bill_rounded, \
                    sum(timetrack_code.amount_minor(e.cost_rate_minor, r.r))::numeric AS cost_rounded, \
                    sum(timetrack_code.amount_minor(e.billable_rate_minor, d.s))::numeric AS bill, \
                    sum(timetrack_code.amount_minor(e.cost_rate_minor, d.s))::numeric AS cost \
             FROM time_entries e JOIN workspaces w ON w.id = e.workspace_id \
             CROSS JOIN LATERAL (SELECT extract(epoch FROM e.end_at - e.start_at)::bigint AS s) d \
             CROSS JOIN LATERAL (SELECT timetrack_code.rounded_seconds(d.s, w.rounding_minutes, \
                                                                       w.rounding_mode) AS r) r \
             WHERE e.end_at IS NOT NULL \
             GROUP BY 1, 2, 3, 4, 5, 6, 7), \
         stored AS ( \
             SELECT workspace_id, day, project_id, task_id, billable, invoiced, currency, entries, \
                    seconds, rounded_seconds, bill_rounded, cost_rounded, bill, cost \
             FROM report_day_totals) \
         SELECT count(*) AS n FROM ( \
             (SELECT * FROM fresh EXCEPT ALL SELECT * FROM stored) \
             UNION ALL (SELECT * FROM stored EXCEPT ALL SELECT * FROM fresh)) x",
    )
    .await
}

/// The day totals an owner's summaries are read from stay the exact sum of the entries through
/// every kind of write (created, timed, edited, re-priced, invoiced and released, deleted, a
/// member removed with their time) and a change of rounding and of zone; and a summary read from
/// them answers what the same summary read from the entries answers (a filter by every member
/// makes the service read the entries).
#[actix_web::test]
async fn the_day_totals_stay_the_sum_of_the_entries_through_every_kind_of_write() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let post = |path: &str, body: Value| {
        let (app, key, path) = (&app, &key, path.to_owned());
        async move {
            let (status, _, body) = call(app, req("POST", &path, key, Some(body))).await;
            assert!(status == 200 || status == 201, "{path}: {status} {body}");
            body
        }
    };
    let client = post("/api/clients", json!({"name": "Dollar", "currency": "USD"})).await;
    let billed = post(
        "/api/projects",
        json!({"name": "Billed", "client_id": client["id"]}),
    )
    .await;
    let inner = post("/api/projects", json!({"name": "Inner"})).await;
    let task = post(
        &format!("/api/projects/{}/tasks", billed["id"].as_str().unwrap()),
        json!({"name": "Design"}),
    )
    .await;
    let (colleague, colleague_key) = t.colleague("colleague", Role::Member).await;
    let mut ids = Vec::new();
    for (n, (project, task, billable)) in [
        (&billed["id"], &task["id"], true),
        (&billed["id"], &Value::Null, true),
        (&inner["id"], &Value::Null, false),
        (&Value::Null, &Value::Null, false),
    ]
    .into_iter()
    .cycle()
    .take(12)
    .enumerate()
    {
        // Around midnight in Berlin and in Los Angeles, so a change of zone moves days.
        let start = format!("2026-06-{:02}T{:02}:17:05Z", 1 + n % 5, [6, 22, 23][n % 3]);
        let end = format!("2026-06-{:02}T{:02}:59:31Z", 1 + n % 5, [7, 22, 23][n % 3]);
        let body = json!({"start": start, "end": end, "project_id": project, "task_id": task,
                          "billable": billable, "description": format!("entry {n}")});
        ids.push(post("/api/time-entries", body).await["id"].clone());
    }
    assert_eq!(day_totals_drift(&t).await, 0, "created");
    assert!(
        t.scalar("SELECT count(*) AS n FROM report_day_totals")
            .await
            > 0
    );

    // The colleague's time, and a timer: running it counts nowhere, stopped it counts.
    let (status, _, _) = call(
        &app,
        req(
            "POST",
            "/api/time-entries",
            &colleague_key,
            Some(
                json!({"start": "2026-06-02T10:00:00Z", "end": "2026-06-02T11:30:00Z",
                        "project_id": inner["id"]}),
            ),
        ),
    )
    .await;
    assert_eq!(status, 201);
    post(
        "/api/time-entries/start",
        json!({"project_id": billed["id"], "billable": true}),
    )
    .await;
    assert_eq!(day_totals_drift(&t).await, 0, "running");
    post("/api/time-entries/stop", json!({})).await;
    assert_eq!(day_totals_drift(&t).await, 0, "stopped");

    // Edited: another day, another project, not billable.
    let (status, _, body) = call(
        &app,
        req(
            "PATCH",
            &format!("/api/time-entries/{}", ids[0].as_str().unwrap()),
            &key,
            Some(
                json!({"start": "2026-06-09T12:00:00Z", "end": "2026-06-09T13:00:01Z",
                        "project_id": inner["id"], "task_id": null, "billable": false}),
            ),
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(day_totals_drift(&t).await, 0, "edited");

    // Re-priced by rates, in two currencies.
    post(
        "/api/rates",
        json!({"kind": "billable", "scope": "workspace", "currency": "EUR", "hourly_minor": 9000,
               "effective_from": "2026-01-01"}),
    )
    .await;
    post(
        "/api/rates",
        json!({"kind": "cost", "scope": "project", "project_id": billed["id"], "currency": "USD",
               "hourly_minor": 4321, "effective_from": "2026-06-03"}),
    )
    .await;
    post(
        "/api/rates",
        json!({"kind": "billable", "scope": "client", "client_id": client["id"], "currency": "USD",
               "hourly_minor": 12345, "effective_from": "2026-06-02"}),
    )
    .await;
    assert_eq!(day_totals_drift(&t).await, 0, "re-priced");

    // Rounded another way, then another zone: rebuilt.
    for settings in [
        json!({"settings": {"rounding": {"minutes": 15, "mode": "up"}}}),
        json!({"timezone": "America/Los_Angeles"}),
        json!({"timezone": "Europe/Berlin", "settings": {"rounding": {"minutes": 6, "mode": "nearest"}}}),
    ] {
        let (status, _, body) =
            call(&app, req("PATCH", "/api/workspace", &key, Some(settings))).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(day_totals_drift(&t).await, 0, "settings");
    }

    // Invoiced, and the draft deleted again.
    let invoice = post(
        "/api/invoices",
        json!({"client_id": client["id"], "from": "2026-06-01", "to": "2026-06-30", "group_by": []}),
    )
    .await;
    assert!(
        t.scalar("SELECT count(*) AS n FROM report_day_totals WHERE invoiced")
            .await
            > 0,
        "{invoice}"
    );
    assert_eq!(day_totals_drift(&t).await, 0, "invoiced");
    let summary = "/api/reports/summary?from=2026-05-25&to=2026-06-15&group_by=client,project,day";
    let every_member = format!("{summary}&user_ids={},{}", t.user.id.0, colleague.id.0);
    for path in [
        summary.to_owned(),
        format!("{summary}&invoiced=true&billable=true"),
    ] {
        let (_, _, from_totals) = call(&app, req("GET", &path, &key, None)).await;
        let entries_path = path.replace(summary, &every_member);
        let (_, _, from_entries) = call(&app, req("GET", &entries_path, &key, None)).await;
        assert!(
            from_totals["totals"]["entries"].as_i64().unwrap() > 0,
            "{from_totals}"
        );
        assert_eq!(from_totals["totals"], from_entries["totals"], "{path}");
        assert_eq!(from_totals["groups"], from_entries["groups"], "{path}");
    }
    let (status, _, _) = call(
        &app,
        req(
            "DELETE",
            &format!("/api/invoices/{}", invoice["id"].as_str().unwrap()),
            &key,
            None,
        ),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(day_totals_drift(&t).await, 0, "released");

    // Deleted, and a member removed with their time.
    let (status, _, _) = call(
        &app,
        req(
            "DELETE",
            &format!("/api/time-entries/{}", ids[5].as_str().unwrap()),
            &key,
            None,
        ),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(day_totals_drift(&t).await, 0, "deleted");
    t.execute(&format!(
        "DELETE FROM memberships WHERE user_id = '{}'",
        colleague.id.0
    ))
    .await;
    assert_eq!(day_totals_drift(&t).await, 0, "member removed");
}
