//! Reports (`docs/billing.md` §4): exact figures, grouping, the member's own time, money only for
//! who may see it, hostile parameters, CSV, and a property: for random entries, rates, roundings
//! and time zones, the detailed rows add up to the summary's totals per currency.

use actix_web::test;
use serde_json::{Value, json};
use timetrack_domain::model::Role;

use crate::support::{TestApp, call, keyed as req};

/// Sends `req` and returns the status, the content type and the body as text.
pub(crate) async fn call_text<S, B>(app: &S, req: actix_http::Request) -> (u16, String, String)
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
