//! Reports (`docs/billing.md` §4): exact figures, grouping, the member's own time, money only for
//! who may see it, hostile parameters, CSV, and a property: for random entries, rates, roundings
//! and time zones, the detailed rows add up to the summary's totals per currency.

use actix_web::test;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use timetrack_domain::model::Role;

use crate::support::{TestApp, call, keyed as req};

/// Sends `req` and returns the status, the content type and the body as text.
async fn call_text<S, B>(app: &S, req: actix_http::Request) -> (u16, String, String)
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: actix_web::body::MessageBody,
{
    let res = test::call_service(app, req).await;
    let status = res.status().as_u16();
    let content_type = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = test::read_body(res).await;
    (
        status,
        content_type,
        String::from_utf8(body.to_vec()).unwrap(),
    )
}

#[actix_web::test]
async fn a_summary_groups_exactly_keeps_members_to_their_time_and_money_to_who_may_see_it() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let (linus, linus_key) = t.colleague("Linus", Role::Member).await;
    let (_, _, usd_client) = call(
        &app,
        req(
            "POST",
            "/api/clients",
            &key,
            Some(json!({"name": "Yankee", "currency": "USD"})),
        ),
    )
    .await;
    let (_, _, web) = call(
        &app,
        req(
            "POST",
            "/api/projects",
            &key,
            Some(json!({"name": "Web", "client_id": usd_client["id"]})),
        ),
    )
    .await;
    let (_, _, ops) = call(
        &app,
        req("POST", "/api/projects", &key, Some(json!({"name": "Ops"}))),
    )
    .await;
    let (_, _, urgent) = call(
        &app,
        req("POST", "/api/tags", &key, Some(json!({"name": "urgent"}))),
    )
    .await;
    let (_, _, late) = call(
        &app,
        req("POST", "/api/tags", &key, Some(json!({"name": "late"}))),
    )
    .await;
    for body in [
        json!({"kind": "billable", "scope": "workspace", "currency": "EUR", "hourly_minor": 6000, "effective_from": "2026-01-01"}),
        json!({"kind": "billable", "scope": "workspace", "currency": "USD", "hourly_minor": 10000, "effective_from": "2026-01-01"}),
        json!({"kind": "cost", "scope": "workspace", "currency": "EUR", "hourly_minor": 2500, "effective_from": "2026-01-01"}),
    ] {
        assert_eq!(
            call(&app, req("POST", "/api/rates", &key, Some(body)))
                .await
                .0,
            201
        );
    }
    // Berlin: 2026-04-01T22:30Z is the 2nd locally.
    let entries = [
        (
            &key,
            "2026-04-01T08:00:00Z",
            "2026-04-01T09:30:00Z",
            &web,
            vec![&urgent, &late],
            true,
        ),
        (
            &key,
            "2026-04-01T22:30:00Z",
            "2026-04-01T23:00:00Z",
            &ops,
            vec![],
            true,
        ),
        (
            &linus_key,
            "2026-04-02T10:00:00Z",
            "2026-04-02T10:20:00Z",
            &ops,
            vec![&urgent],
            true,
        ),
        (
            &linus_key,
            "2026-04-03T10:00:00Z",
            "2026-04-03T11:00:00Z",
            &web,
            vec![],
            false,
        ),
    ];
    for (who, start, end, project, tags, billable) in entries {
        let tag_ids: Vec<&Value> = tags.iter().map(|t| &t["id"]).collect();
        let body = json!({"start": start, "end": end, "project_id": project["id"], "tag_ids": tag_ids, "billable": billable});
        assert_eq!(
            call(&app, req("POST", "/api/time-entries", who, Some(body)))
                .await
                .0,
            201
        );
    }
    // Running and out-of-range entries are left out.
    call(
        &app,
        req(
            "POST",
            "/api/time-entries/start",
            &key,
            Some(json!({"project_id": ops["id"]})),
        ),
    )
    .await;
    call(
        &app,
        req(
            "POST",
            "/api/time-entries",
            &key,
            Some(json!({"start": "2026-05-01T08:00:00Z", "end": "2026-05-01T09:00:00Z"})),
        ),
    )
    .await;

    let uri = "/api/reports/summary?from=2026-04-01&to=2026-04-30&group_by=project,day";
    let (status, _, summary) = call(&app, req("GET", uri, &key, None)).await;
    assert_eq!(status, 200, "{summary}");
    assert_eq!(
        summary["totals"],
        json!({"seconds": 5400 + 1800 + 1200 + 3600, "billable_seconds": 8400, "rounded_seconds": 12000, "entries": 4,
               "amounts": [{"currency": "EUR", "billable_minor": 3000 + 2000, "cost_minor": 1250 + 833},
                           {"currency": "USD", "billable_minor": 15000, "cost_minor": 0}]})
    );
    let groups = summary["groups"].as_array().unwrap();
    assert_eq!(
        groups
            .iter()
            .map(|g| (g["label"].as_str().unwrap(), g["entries"].as_i64().unwrap()))
            .collect::<Vec<_>>(),
        [("Ops", 2), ("Web", 2)]
    );
    let ops_days: Vec<&str> = groups[0]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        ops_days,
        ["2026-04-02"],
        "both Ops entries are on the 2nd in Berlin"
    );
    assert_eq!(groups[0]["groups"][0]["groups"], json!([]));
    assert_eq!(
        summary["meta"],
        json!({"timezone": "Europe/Berlin", "rounding": "workspace", "from": "2026-04-01", "to": "2026-04-30", "tag_overlap": false})
    );

    // In UTC the late entry is on the 1st.
    let (_, _, utc) = call(&app, req("GET", &format!("{uri}&timezone=UTC"), &key, None)).await;
    let ops_days: Vec<&str> = utc["groups"][0]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap())
        .collect();
    assert_eq!(ops_days, ["2026-04-01", "2026-04-02"]);

    // By tag: an entry with two tags counts under each, one without under the null key; the
    // totals still count it once.
    let (_, _, by_tag) = call(
        &app,
        req(
            "GET",
            "/api/reports/summary?from=2026-04-01&to=2026-04-30&group_by=tag",
            &key,
            None,
        ),
    )
    .await;
    let tags: Vec<(Value, i64)> = by_tag["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["key"].clone(), g["entries"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        tags,
        [
            (late["id"].clone(), 1),
            (urgent["id"].clone(), 2),
            (Value::Null, 2)
        ]
    );
    assert_eq!(by_tag["totals"]["entries"], 4);
    assert_eq!(by_tag["meta"]["tag_overlap"], true);

    // A member: their own time only, whatever the filter, and no money.
    let (_, _, mine) = call(
        &app,
        req(
            "GET",
            &format!("{uri}&user_ids={}", t.user.id),
            &linus_key,
            None,
        ),
    )
    .await;
    assert_eq!(
        mine["totals"]["entries"], 0,
        "asking for Ada's time gives nothing"
    );
    let (_, _, mine) = call(&app, req("GET", uri, &linus_key, None)).await;
    assert_eq!(
        mine["totals"],
        json!({"seconds": 4800, "billable_seconds": 1200, "rounded_seconds": 4800, "entries": 2})
    );
    assert!(mine.to_string().find("amounts").is_none(), "{mine}");
    let _ = linus;

    // The uninvoiced report: billable time per client and project and currency.
    let (_, _, open) = call(
        &app,
        req(
            "GET",
            "/api/reports/uninvoiced?from=2026-04-01&to=2026-04-30",
            &key,
            None,
        ),
    )
    .await;
    assert_eq!(
        open["data"],
        json!([
            {"client": {"id": usd_client["id"], "name": "Yankee"}, "project": {"id": web["id"], "name": "Web"}, "currency": "USD",
             "billable_seconds": 5400, "rounded_seconds": 5400, "entries": 1, "billable_minor": 15000},
            {"client": null, "project": {"id": ops["id"], "name": "Ops"}, "currency": "EUR",
             "billable_seconds": 3000, "rounded_seconds": 3000, "entries": 2, "billable_minor": 5000}
        ])
    );
}

#[actix_web::test]
async fn hostile_report_parameters_are_a_clear_400() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let (_, other_key) = t.other_workspace().await;
    let (_, _, theirs) = call(
        &app,
        req(
            "POST",
            "/api/projects",
            &other_key,
            Some(json!({"name": "Theirs"})),
        ),
    )
    .await;
    let theirs = theirs["id"].as_str().unwrap();
    for (uri, error, detail) in [
        (
            "/api/reports/detailed?from=2026-01-01&to=2027-01-03",
            "Invalid request parameters",
            Some("from and to must be at most 366 days apart"),
        ),
        (
            "/api/reports/detailed?from=2026-02-01&to=2026-01-31",
            "Invalid request parameters",
            Some("to must not be before from"),
        ),
        (
            "/api/reports/detailed?to=2026-01-31",
            "Invalid request parameters",
            Some("from is required (YYYY-MM-DD)"),
        ),
        (
            "/api/reports/detailed?from=2026-01-01&to=2026-02-30",
            "Invalid request parameters",
            Some("to must be a date (YYYY-MM-DD)"),
        ),
        (
            "/api/reports/detailed?from=2026-01-01&to=2026-01-31&timezone=Mars/Base",
            "Invalid request parameters",
            Some("unknown time zone: Mars/Base"),
        ),
        (
            "/api/reports/detailed?from=2026-01-01&to=2026-01-31&billable=yes",
            "Invalid request parameters",
            Some("billable must be true or false, got: yes"),
        ),
        (
            "/api/reports/detailed?from=2026-01-01&to=2026-01-31&limit=1001",
            "Invalid request parameters",
            Some("limit must be between 1 and 1000"),
        ),
        (
            "/api/reports/summary?from=2026-01-01&to=2026-01-31",
            "Invalid request parameters",
            Some(
                "group_by is required: one to three of client, project, task, user, tag, day, week, month",
            ),
        ),
        (
            "/api/reports/summary?from=2026-01-01&to=2026-01-31&group_by=day,week,month,user",
            "Invalid request parameters",
            Some("group_by takes one to three keys"),
        ),
        (
            "/api/reports/summary?from=2026-01-01&to=2026-01-31&group_by=year",
            "Invalid request parameters",
            Some(
                "group_by: \"year\" is not one of client, project, task, user, tag, day, week, month",
            ),
        ),
        (
            "/api/reports/detailed?from=2026-01-01&to=2026-01-31&group_by=",
            "Invalid request parameters",
            Some("group_by: \"\" is not one of client, project, task, user, tag, day, week, month"),
        ),
        (
            "/api/reports/uninvoiced?from=2026-01-01&to=2026-01-31&group_by=year",
            "Invalid request parameters",
            Some(
                "group_by: \"year\" is not one of client, project, task, user, tag, day, week, month",
            ),
        ),
        (
            "/api/reports/detailed?from=2026-01-01&to=2026-01-31&project_ids=nope",
            "Invalid filter: project_ids (nope is not an id)",
            None,
        ),
    ] {
        let (status, _, body) = call(&app, req("GET", uri, &key, None)).await;
        assert_eq!(
            (status, body["error"].as_str().unwrap_or_default()),
            (400, error),
            "{uri}: {body}"
        );
        if let Some(detail) = detail {
            assert_eq!(body["detail"], detail, "{uri}");
        }
    }
    let uri = format!(
        "/api/reports/summary?from=2026-01-01&to=2026-01-31&group_by=project&project_ids={theirs}"
    );
    let (status, _, body) = call(&app, req("GET", &uri, &key, None)).await;
    assert_eq!(
        (status, body),
        (
            400,
            json!({"error": format!("Invalid filter: project_ids ({theirs} is not in this workspace)")})
        )
    );
    let uri = format!(
        "/api/reports/uninvoiced?from=2026-01-01&to=2026-01-31&user_ids={}",
        uuid::Uuid::nil()
    );
    assert_eq!(call(&app, req("GET", &uri, &key, None)).await.0, 400);
    // A year of 366 days is fine.
    assert_eq!(
        call(
            &app,
            req(
                "GET",
                "/api/reports/detailed?from=2028-01-01&to=2028-12-31",
                &key,
                None
            )
        )
        .await
        .0,
        200
    );
}

/// Entries of thousands of years at the highest rate make sums no 64-bit figure holds: the report
/// refuses them with a 400 saying so, never a 500 or a wrapped number.
#[actix_web::test]
async fn figures_too_large_to_sum_are_refused_clearly() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let rate = json!({"kind": "billable", "scope": "workspace", "currency": "EUR", "hourly_minor": 1_000_000_000, "effective_from": "2000-01-01"});
    assert_eq!(
        call(&app, req("POST", "/api/rates", &key, Some(rate)))
            .await
            .0,
        201
    );
    // Each entry is 7,972 years, about 7 × 10^16 minor units: 140 of them pass 9.2 × 10^18.
    for _ in 0..140 {
        let body = json!({"start": "2026-01-01T00:00:00Z", "end": "9998-01-01T00:00:00Z", "billable": true});
        let (status, _, entry) =
            call(&app, req("POST", "/api/time-entries", &key, Some(body))).await;
        assert_eq!(status, 201, "{entry}");
    }
    let message = "The report's figures are too large to sum; narrow the period or the filter";
    for uri in [
        "/api/reports/summary?from=2026-01-01&to=2026-01-01&group_by=project",
        "/api/reports/detailed?from=2026-01-01&to=2026-01-01",
        "/api/reports/uninvoiced?from=2026-01-01&to=2026-01-01",
        "/api/reports/summary?from=2026-01-01&to=2026-01-01&group_by=day&format=csv",
    ] {
        let (status, _, body) = call(&app, req("GET", uri, &key, None)).await;
        assert_eq!((status, body), (400, json!({"error": message})), "{uri}");
    }
    // Another day, without them, sums as ever.
    let uri = "/api/reports/summary?from=2026-01-02&to=2026-01-02&group_by=day";
    let (status, _, body) = call(&app, req("GET", uri, &key, None)).await;
    assert_eq!(
        (status, &body["totals"]["entries"]),
        (200, &json!(0)),
        "{body}"
    );
}

#[actix_web::test]
async fn csv_exports_have_a_header_decimal_amounts_and_nothing_hidden_or_executable() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let key = t.key();
    let (_, linus_key) = t.colleague("Linus", Role::Member).await;
    call(&app, req("POST", "/api/rates", &key, Some(json!({"kind": "billable", "scope": "workspace", "currency": "EUR", "hourly_minor": 16100, "effective_from": "2026-01-01"})))).await;
    for (who, start) in [
        (&key, "2026-03-02T08:00:00Z"),
        (&linus_key, "2026-03-03T08:00:00Z"),
    ] {
        let body = json!({"start": start, "end": start.replace("T08", "T09"), "billable": true, "description": "=HYPERLINK(\"http://evil\")"});
        call(&app, req("POST", "/api/time-entries", who, Some(body))).await;
    }
    let detailed = "/api/reports/detailed?from=2026-03-01&to=2026-03-31";
    let csv_req = |bearer: &str, uri: &str| {
        test::TestRequest::get()
            .uri(uri)
            .insert_header(("Authorization", bearer.to_owned()))
            .insert_header(("Accept", "text/csv"))
            .to_request()
    };
    let (status, content_type, body) = call_text(&app, csv_req(&key, detailed)).await;
    assert_eq!(
        (status, content_type.as_str()),
        (200, "text/csv; charset=utf-8")
    );
    let mut reader = csv::Reader::from_reader(body.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        header,
        [
            "id",
            "date",
            "start",
            "end",
            "seconds",
            "rounded_seconds",
            "description",
            "billable",
            "user_id",
            "user_name",
            "client_id",
            "client_name",
            "project_id",
            "project_name",
            "task_id",
            "task_name",
            "tags",
            "currency",
            "billable_rate",
            "billable_amount",
            "cost_rate",
            "cost_amount"
        ]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(&rows[0][1], "2026-03-02");
    assert_eq!(
        &rows[0][6], "'=HYPERLINK(\"http://evil\")",
        "a formula is not run by a spreadsheet"
    );
    assert_eq!(
        (&rows[0][18], &rows[0][19], &rows[0][21]),
        ("161.00", "161.00", "0.00")
    );

    // `?format=csv` works alike; a member's export has their rows and no money columns.
    let (_, _, theirs) = call_text(
        &app,
        req("GET", &format!("{detailed}&format=csv"), &linus_key, None),
    )
    .await;
    let mut reader = csv::Reader::from_reader(theirs.as_bytes());
    assert!(
        !reader
            .headers()
            .unwrap()
            .iter()
            .any(|h| h.contains("amount") || h.contains("rate"))
    );
    assert_eq!(reader.records().count(), 1);

    let (status, _, summary) = call_text(
        &app,
        csv_req(
            &key,
            "/api/reports/summary?from=2026-03-01&to=2026-03-31&group_by=user",
        ),
    )
    .await;
    assert_eq!(status, 200);
    let lines: Vec<&str> = summary.lines().collect();
    assert_eq!(
        lines[0],
        "level,group_1,key_1,seconds,billable_seconds,rounded_seconds,entries,currency,billable_amount,cost_amount"
    );
    assert_eq!(
        lines[1],
        ",,,7200,7200,7200,2,EUR,322.00,0.00".replacen(",,,", "0,,,", 1)
    );
    assert_eq!(lines.len(), 4, "{summary}");
    let (status, _, open) = call_text(
        &app,
        csv_req(
            &key,
            "/api/reports/uninvoiced?from=2026-03-01&to=2026-03-31",
        ),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(open.lines().nth(1).unwrap(), ",,,,EUR,7200,7200,2,322.00");
}

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
