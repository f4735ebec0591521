//! Time entries: timers, manual entries, the events they record, and the one-running-timer rule.

use actix_web::test;
use futures_util::future::join_all;
use serde_json::{Value, json};

use crate::support::{TestApp, call, error_of};

fn post(t: &TestApp, uri: &str, body: Value) -> actix_http::Request {
    test::TestRequest::post()
        .uri(uri)
        .insert_header(t.bearer())
        .set_json(body)
        .to_request()
}

fn get(t: &TestApp, uri: &str) -> actix_http::Request {
    test::TestRequest::get()
        .uri(uri)
        .insert_header(t.bearer())
        .to_request()
}

async fn event_types(t: &TestApp) -> Vec<String> {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        event_type: String,
    }
    let mut conn = t.pool.get().await.unwrap();
    let rows: Vec<Row> = diesel::sql_query("SELECT event_type FROM events ORDER BY id")
        .load(&mut conn)
        .await
        .unwrap();
    rows.into_iter().map(|r| r.event_type).collect()
}

#[actix_web::test]
async fn a_timer_starts_runs_and_stops_with_its_events() {
    let t = TestApp::new().await;
    t.insert_subscription(
        "wh_timers0000000000a",
        &t.workspace,
        &["TIMER_STARTED", "TIMER_STOPPED"],
        "ACTIVE",
    )
    .await;
    let app = t.service().await;
    let (status, _, started) = call(
        &app,
        post(
            &t,
            "/api/time-entries/start",
            json!({"description": "Writing", "billable": true}),
        ),
    )
    .await;
    assert_eq!(status, 201, "{started}");
    assert_eq!(started["running"], true);
    assert_eq!(started["end"], Value::Null);
    assert_eq!(started["duration"], Value::Null);
    assert_eq!(started["source"], "timer");
    assert!(
        started["start"].as_str().unwrap().ends_with(":00Z")
            || started["start"].as_str().unwrap().len() == 20,
        "whole seconds: {}",
        started["start"]
    );

    let (_, _, current) = call(&app, get(&t, "/api/time-entries/current")).await;
    assert_eq!(current["id"], started["id"]);

    let (status, _, stopped) = call(&app, post(&t, "/api/time-entries/stop", json!({}))).await;
    assert_eq!(status, 200);
    assert_eq!(stopped["id"], started["id"]);
    assert_eq!(stopped["running"], false);
    assert!(stopped["duration"].as_i64().unwrap() >= 0);

    let (status, _, current) = call(&app, get(&t, "/api/time-entries/current")).await;
    assert_eq!((status, current), (200, Value::Null));
    let (status, _, body) = call(&app, post(&t, "/api/time-entries/stop", json!({}))).await;
    assert_eq!((status, body), (409, json!({"error": "No running timer"})));

    assert_eq!(event_types(&t).await, ["TIMER_STARTED", "TIMER_STOPPED"]);
    assert_eq!(
        t.scalar(
            "SELECT count(*) AS n FROM deliveries WHERE subscription_id = 'wh_timers0000000000a'"
        )
        .await,
        2
    );
}

#[actix_web::test]
async fn starting_while_running_stops_first_in_one_transaction() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, _, first) = call(&app, post(&t, "/api/time-entries/start", json!({}))).await;
    let (_, _, second) = call(
        &app,
        post(
            &t,
            "/api/time-entries/start",
            json!({"description": "next"}),
        ),
    )
    .await;
    assert_ne!(first["id"], second["id"]);
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM time_entries WHERE end_at IS NULL")
            .await,
        1
    );
    assert_eq!(
        event_types(&t).await,
        ["TIMER_STARTED", "TIMER_STOPPED", "TIMER_STARTED"]
    );
    let (_, _, first_now) = call(
        &app,
        get(
            &t,
            &format!("/api/time-entries/{}", first["id"].as_str().unwrap()),
        ),
    )
    .await;
    assert_eq!(first_now["running"], false);
}

#[actix_web::test]
async fn concurrent_starts_by_one_user_leave_exactly_one_running_timer() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let requests = (0..6).map(|n| {
        test::call_service(
            &app,
            post(
                &t,
                "/api/time-entries/start",
                json!({"description": format!("start {n}")}),
            ),
        )
    });
    let responses = join_all(requests).await;
    let created = responses.iter().filter(|r| r.status() == 201).count() as i64;
    assert!(
        responses
            .iter()
            .all(|r| r.status() == 201 || r.status() == 409),
        "{:?}",
        responses.iter().map(|r| r.status()).collect::<Vec<_>>()
    );
    assert!(created >= 1);
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM time_entries WHERE end_at IS NULL")
            .await,
        1
    );
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM time_entries").await,
        created
    );
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM events WHERE event_type = 'TIMER_STARTED'")
            .await,
        created
    );
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM events WHERE event_type = 'TIMER_STOPPED'")
            .await,
        created - 1
    );
}

#[actix_web::test]
async fn manual_entries_need_start_before_end_and_record_time_entry_created() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let cases = [
        (json!({"end": "2026-01-05T10:00:00Z"}), "start is required"),
        (json!({"start": "2026-01-05T10:00:00Z"}), "end is required"),
        (
            json!({"start": "yesterday", "end": "2026-01-05T10:00:00Z"}),
            "start must be an RFC 3339 timestamp",
        ),
        (
            json!({"start": "2026-01-05T10:00:00Z", "end": "2026-01-05T10:00:00Z"}),
            "end must be after start",
        ),
        (
            json!({"start": "2026-01-05T10:00:00Z", "end": "2026-01-05T09:00:00Z"}),
            "end must be after start",
        ),
        (
            json!({"start": "2026-01-05T10:00:00.2Z", "end": "2026-01-05T10:00:00.8Z"}),
            "end must be after start",
        ),
        (
            json!({"start": "2026-01-05T09:00:00Z", "end": "2026-01-05T10:00:00Z", "description": "x".repeat(3001)}),
            "description must be at most 3000 characters",
        ),
        (
            json!({"start": "2026-01-05T09:00:00Z", "end": "2026-01-05T10:00:00Z", "project_id": "00000000-0000-0000-0000-000000000001"}),
            "project_id does not name a project of this workspace",
        ),
    ];
    for (body, message) in cases {
        let (status, _, json) = call(&app, post(&t, "/api/time-entries", body.clone())).await;
        assert_eq!((status, json), (400, json!({"error": message})), "{body}");
    }
    assert_eq!(t.scalar("SELECT count(*) AS n FROM time_entries").await, 0);
    assert_eq!(t.scalar("SELECT count(*) AS n FROM events").await, 0);

    let (status, _, entry) = call(&app, post(&t, "/api/time-entries", json!({"start": "2026-01-05T09:00:00.9+01:00", "end": "2026-01-05T10:30:00Z", "billable": true}))).await;
    assert_eq!(status, 201, "{entry}");
    assert_eq!(entry["start"], "2026-01-05T08:00:00Z");
    assert_eq!(entry["end"], "2026-01-05T10:30:00Z");
    assert_eq!(entry["duration"], 9000);
    assert_eq!(entry["source"], "manual");
    assert_eq!(event_types(&t).await, ["TIME_ENTRY_CREATED"]);
}

#[actix_web::test]
async fn entries_refer_only_to_the_workspaces_project_task_and_tags() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, _, project) = call(&app, post(&t, "/api/projects", json!({"name": "Site"}))).await;
    let (_, _, task) = call(
        &app,
        post(
            &t,
            &format!("/api/projects/{}/tasks", project["id"].as_str().unwrap()),
            json!({"name": "Design"}),
        ),
    )
    .await;
    let (_, _, tag) = call(&app, post(&t, "/api/tags", json!({"name": "deep work"}))).await;
    let (_, other_key) = t.other_workspace().await;
    let req = test::TestRequest::post()
        .uri("/api/tags")
        .insert_header(("Authorization", other_key.as_str()))
        .set_json(json!({"name": "theirs"}))
        .to_request();
    let (_, _, their_tag) = call(&app, req).await;

    let (status, _, body) = call(
        &app,
        post(
            &t,
            "/api/time-entries/start",
            json!({"tag_ids": [their_tag["id"]]}),
        ),
    )
    .await;
    assert_eq!(
        (status, body),
        (
            400,
            json!({"error": "tag_ids contains an id that is not a tag of this workspace"})
        )
    );
    let (status, _, entry) = call(
        &app,
        post(
            &t,
            "/api/time-entries/start",
            json!({"task_id": task["id"], "tag_ids": [tag["id"]]}),
        ),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(
        (&entry["project_id"], &entry["task_id"], &entry["tag_ids"]),
        (&project["id"], &task["id"], &json!([tag["id"]]))
    );

    // PATCH: clearing the project drops the task; foreign tags are refused and change nothing.
    let id = entry["id"].as_str().unwrap();
    let patch = |body: Value| {
        test::TestRequest::patch()
            .uri(&format!("/api/time-entries/{id}"))
            .insert_header(t.bearer())
            .set_json(body)
            .to_request()
    };
    let (status, _, body) = call(&app, patch(json!({"tag_ids": [their_tag["id"]]}))).await;
    assert_eq!(status, 400, "{body}");
    let (status, _, updated) = call(
        &app,
        patch(json!({"project_id": null, "description": "changed"})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            &updated["project_id"],
            &updated["task_id"],
            &updated["tag_ids"]
        ),
        (&Value::Null, &Value::Null, &json!([tag["id"]]))
    );
    let (status, _, body) = call(&app, patch(json!({"end": "2030-01-01T00:00:00Z"}))).await;
    assert_eq!(
        (status, body),
        (
            400,
            json!({"error": "a running timer has no end; stop it instead"})
        )
    );
}

#[actix_web::test]
async fn list_filters_and_paginates_and_other_workspaces_entries_are_404() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for hour in [8, 9, 10] {
        let body = json!({"start": format!("2026-01-05T{hour:02}:00:00Z"), "end": format!("2026-01-05T{hour:02}:30:00Z")});
        assert_eq!(call(&app, post(&t, "/api/time-entries", body)).await.0, 201);
    }
    let starts = |body: &Value| {
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["start"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let (_, _, all) = call(&app, get(&t, "/api/time-entries")).await;
    assert_eq!(
        starts(&all),
        [
            "2026-01-05T10:00:00Z",
            "2026-01-05T09:00:00Z",
            "2026-01-05T08:00:00Z"
        ]
    );
    let (_, _, window) = call(
        &app,
        get(
            &t,
            "/api/time-entries?from=2026-01-05T09:00:00Z&to=2026-01-05T10:00:00Z",
        ),
    )
    .await;
    assert_eq!(starts(&window), ["2026-01-05T09:00:00Z"]);
    let (_, _, page1) = call(&app, get(&t, "/api/time-entries?limit=2")).await;
    let (_, _, page2) = call(
        &app,
        get(
            &t,
            &format!(
                "/api/time-entries?limit=2&cursor={}",
                page1["next_cursor"].as_str().unwrap()
            ),
        ),
    )
    .await;
    assert_eq!(starts(&page2), ["2026-01-05T08:00:00Z"]);
    let (_, _, mine) = call(
        &app,
        get(&t, &format!("/api/time-entries?user_id={}", t.user.id)),
    )
    .await;
    assert_eq!(starts(&mine).len(), 3);
    for (uri, message) in [
        (
            "/api/time-entries?from=soon",
            "from must be an RFC 3339 timestamp",
        ),
        ("/api/time-entries?user_id=me", "user_id must be a UUID"),
        (
            "/api/time-entries?from=2026-01-05T10:00:00Z&to=2026-01-05T09:00:00Z",
            "to must be after from",
        ),
        ("/api/time-entries?cursor=%%%", "invalid cursor"),
        ("/api/time-entries?limit=-1", "Invalid query parameters"),
    ] {
        let (status, _, body) = call(&app, get(&t, uri)).await;
        assert_eq!(
            (status, error_of(&body)),
            (400, json!({"error": message})),
            "{uri}"
        );
    }

    let id = all["data"][0]["id"].as_str().unwrap();
    let (_, other_key) = t.other_workspace().await;
    for method in ["GET", "PATCH", "DELETE"] {
        let req = test::TestRequest::default()
            .method(method.parse().unwrap())
            .uri(&format!("/api/time-entries/{id}"))
            .insert_header(("Authorization", other_key.as_str()))
            .set_json(json!({"description": "mine"}))
            .to_request();
        let (status, _, body) = call(&app, req).await;
        assert_eq!(
            (status, body),
            (404, json!({"error": "Time entry not found"})),
            "{method}"
        );
    }
    let req = test::TestRequest::delete()
        .uri(&format!("/api/time-entries/{id}"))
        .insert_header(t.bearer())
        .to_request();
    assert_eq!(
        call(&app, req).await,
        (200, "application/json".into(), json!({"success": true}))
    );
    assert_eq!(t.scalar("SELECT count(*) AS n FROM time_entries").await, 2);
}

/// URL-safe base64 (no padding) of a cursor's text, `<unix microseconds>:<uuid>`.
fn cursor(micros: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(format!("{micros}:00000000-0000-0000-0000-000000000001"))
}

#[actix_web::test]
async fn times_at_the_edges_of_the_calendar_are_400_in_bodies_queries_and_patches() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let range = |field: &str| {
        format!("{field} must be between 0001-01-02T00:00:00Z and 9999-12-30T23:59:59Z")
    };
    // Each converts past year 9999 or before year 1 in UTC, or leaves no four-digit date in some
    // time zone.
    let edges = [
        "9999-12-31T23:30:00-01:00",
        "9999-12-31T23:59:59Z",
        "9999-12-31T23:59:59.999999999Z",
        "0000-01-01T00:00:00Z",
        "0000-01-01T00:30:00+01:00",
        "0001-01-01T00:00:00Z",
    ];
    for edge in edges {
        let body = json!({"start": "2026-01-05T09:00:00Z", "end": edge});
        let (status, _, json) = call(&app, post(&t, "/api/time-entries", body)).await;
        assert_eq!(
            (status, json),
            (400, json!({"error": range("end")})),
            "{edge}"
        );
        let body = json!({"start": edge, "end": "2026-01-05T09:00:00Z"});
        let (status, _, json) = call(&app, post(&t, "/api/time-entries", body)).await;
        assert_eq!(
            (status, json),
            (400, json!({"error": range("start")})),
            "{edge}"
        );
        let query = format!("/api/time-entries?to={}", edge.replace('+', "%2B"));
        let (status, _, json) = call(&app, get(&t, &query)).await;
        assert_eq!(
            (status, json),
            (400, json!({"error": range("to")})),
            "{edge}"
        );
    }
    assert_eq!(t.scalar("SELECT count(*) AS n FROM time_entries").await, 0);

    // The edges of the range itself are accepted, and shown in RFC 3339.
    let body = json!({"start": "0001-01-02T00:00:00Z", "end": "9999-12-30T23:59:59Z"});
    let (status, _, entry) = call(&app, post(&t, "/api/time-entries", body)).await;
    assert_eq!(status, 201, "{entry}");
    assert_eq!(
        (&entry["start"], &entry["end"]),
        (
            &json!("0001-01-02T00:00:00Z"),
            &json!("9999-12-30T23:59:59Z")
        )
    );
    let (status, _, sample) = call(
        &app,
        get(
            &t,
            "/api/integrations/automation/triggers/time-entries/manual_entry/fallback",
        ),
    )
    .await;
    assert_eq!(status, 200, "{sample}");
    assert_eq!(
        (&sample[0]["startTime"], &sample[0]["endTime"]),
        (
            &json!("0001-01-02T00:00:00Z"),
            &json!("9999-12-30T23:59:59Z")
        )
    );

    let id = entry["id"].as_str().unwrap();
    for edge in edges {
        let req = test::TestRequest::patch()
            .uri(&format!("/api/time-entries/{id}"))
            .insert_header(t.bearer())
            .set_json(json!({"end": edge}))
            .to_request();
        let (status, _, json) = call(&app, req).await;
        assert_eq!(
            (status, json),
            (400, json!({"error": range("end")})),
            "{edge}"
        );
    }
    let (_, _, unchanged) = call(&app, get(&t, &format!("/api/time-entries/{id}"))).await;
    assert_eq!(unchanged, entry);
}

#[actix_web::test]
async fn well_formed_cursors_outside_the_calendar_are_400_on_every_list() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, _, project) = call(&app, post(&t, "/api/projects", json!({"name": "Site"}))).await;
    let tasks = format!("/api/projects/{}/tasks", project["id"].as_str().unwrap());
    for micros in [
        i64::MAX.to_string(),
        i64::MIN.to_string(),
        i128::MAX.to_string(),
        "-377705116800000000".into(),
        "253402300800000000".into(),
        "-62135596800000001".into(),
    ] {
        let cursor = cursor(&micros);
        for list in [
            "/api/clients",
            "/api/projects",
            "/api/tags",
            "/api/time-entries",
            &tasks,
        ] {
            let uri = format!("{list}?cursor={cursor}");
            let (status, _, body) = call(&app, get(&t, &uri)).await;
            assert_eq!(
                (status, body),
                (400, json!({"error": "invalid cursor"})),
                "{uri} ({micros})"
            );
        }
    }
    // A position inside the calendar is a valid (empty) page.
    let uri = format!("/api/clients?cursor={}", cursor("0"));
    let (status, _, body) = call(&app, get(&t, &uri)).await;
    assert_eq!(
        (status, body),
        (200, json!({"data": [], "next_cursor": null}))
    );
}
