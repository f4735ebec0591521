//! The trigger fallbacks: one element, the latest real record or a fixed sample, in the live shape.

use actix_web::test;
use serde_json::{Value, json};

use crate::support::{TestApp, call};
use timetrack_testkit::fakes::{email, name};

const BASE: &str = "/api/integrations/automation/triggers";

fn get(t: &TestApp, uri: &str) -> actix_http::Request {
    test::TestRequest::get()
        .uri(uri)
        .insert_header(t.bearer())
        .to_request()
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

const FULL: [&str; 15] = [
    "id",
    "description",
    "date",
    "startTime",
    "endTime",
    "duration",
    "billable",
    "action",
    "workspace",
    "teamMember",
    "project",
    "task",
    "tags",
    "createdAt",
    "updatedAt",
];
const STARTED: [&str; 13] = [
    "id",
    "description",
    "date",
    "startTime",
    "billable",
    "action",
    "workspace",
    "teamMember",
    "project",
    "task",
    "tags",
    "createdAt",
    "updatedAt",
];
const CLIENT: [&str; 10] = [
    "id",
    "name",
    "email",
    "phone",
    "address",
    "status",
    "type",
    "workspace",
    "createdAt",
    "updatedAt",
];

#[actix_web::test]
async fn an_empty_workspace_gets_fixed_samples_identical_on_every_call() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for (path, expected_keys, action) in [
        (
            "time-entries/manual_entry/fallback",
            &FULL[..],
            Some("manual_entry"),
        ),
        ("time-entries/stop/fallback", &FULL[..], Some("stop_timer")),
        (
            "time-entries/start/fallback",
            &STARTED[..],
            Some("start_timer"),
        ),
        ("clients/fallback", &CLIENT[..], None),
    ] {
        let uri = format!("{BASE}/{path}");
        let first = test::read_body(test::call_service(&app, get(&t, &uri)).await).await;
        let second = test::read_body(test::call_service(&app, get(&t, &uri)).await).await;
        assert_eq!(first, second, "{path}: byte-for-byte the same");
        let body: Value = serde_json::from_slice(&first).unwrap();
        let items = body.as_array().unwrap();
        assert_eq!(items.len(), 1, "{path}");
        assert_eq!(keys(&items[0]), expected_keys, "{path}");
        if let Some(action) = action {
            assert_eq!(items[0]["action"], action);
        }
    }
}

#[actix_web::test]
async fn real_records_are_used_once_they_exist_in_the_live_shape() {
    let t = TestApp::new().await;
    t.insert_subscription(
        "wh_allevents00000000",
        &t.workspace,
        &[
            "TIMER_STARTED",
            "TIMER_STOPPED",
            "TIME_ENTRY_CREATED",
            "CLIENT_CREATED",
        ],
        "ACTIVE",
    )
    .await;
    let app = t.service().await;
    let post = |uri: &str, body: Value| {
        test::TestRequest::post()
            .uri(uri)
            .insert_header(t.bearer())
            .set_json(body)
            .to_request()
    };
    let (_, _, client) = call(
        &app,
        post("/api/clients", json!({"name": "Fallback Client"})),
    )
    .await;
    let (_, _, manual) = call(&app, post("/api/time-entries", json!({"start": "2026-01-05T23:30:00Z", "end": "2026-01-06T00:15:00Z", "description": "late"}))).await;
    let (_, _, timer) = call(
        &app,
        post("/api/time-entries/start", json!({"description": "timer"})),
    )
    .await;

    let (_, _, started) = call(
        &app,
        get(&t, &format!("{BASE}/time-entries/start/fallback")),
    )
    .await;
    assert_eq!(started[0]["id"], timer["id"]);
    assert_eq!(keys(&started[0]), STARTED);
    let (_, _, stop_sample) =
        call(&app, get(&t, &format!("{BASE}/time-entries/stop/fallback"))).await;
    assert_ne!(
        stop_sample[0]["id"], timer["id"],
        "a running timer is not a stopped one"
    );
    call(&app, post("/api/time-entries/stop", json!({}))).await;
    let (_, _, stopped) = call(&app, get(&t, &format!("{BASE}/time-entries/stop/fallback"))).await;
    assert_eq!(stopped[0]["id"], timer["id"]);
    let (_, _, manual_fb) = call(
        &app,
        get(&t, &format!("{BASE}/time-entries/manual_entry/fallback")),
    )
    .await;
    assert_eq!(manual_fb[0]["id"], manual["id"]);
    // Europe/Berlin: 23:30Z is 00:30 the next day.
    assert_eq!(manual_fb[0]["date"], "2026-01-06");
    assert_eq!(manual_fb[0]["duration"], 2700);
    assert_eq!(
        manual_fb[0]["teamMember"],
        json!({"id": t.user.id.to_string(), "name": "Ada Lovelace"})
    );
    let (_, _, client_fb) = call(&app, get(&t, &format!("{BASE}/clients/fallback"))).await;
    assert_eq!(client_fb[0]["id"], client["id"]);

    // Each fallback equals the body delivered for the same record (same builder, same data).
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        event_type: String,
        #[diesel(sql_type = diesel::sql_types::Text)]
        body: String,
    }
    let mut conn = t.pool.get().await.unwrap();
    let rows: Vec<Row> = diesel::sql_query("SELECT event_type, body FROM events ORDER BY id")
        .load(&mut conn)
        .await
        .unwrap();
    let body_of = |kind: &str| -> Value {
        serde_json::from_str(
            &rows
                .iter()
                .rev()
                .find(|r| r.event_type == kind)
                .unwrap()
                .body,
        )
        .unwrap()
    };
    assert_eq!(body_of("TIME_ENTRY_CREATED"), manual_fb[0]);
    assert_eq!(body_of("TIMER_STOPPED"), stopped[0]);
    assert_eq!(body_of("CLIENT_CREATED"), client_fb[0]);
    assert_eq!(body_of("TIMER_STARTED"), started[0]);
}

#[actix_web::test]
async fn the_manual_fallback_is_the_callers_own_latest_entry() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let eve = t
        .admin
        .create_user(t.workspace.id, name("Eve"), email("eve@example.com"))
        .await
        .unwrap();
    let (_, eve_key) = t
        .admin
        .create_api_key(eve.id, t.workspace.id, None)
        .await
        .unwrap();
    let req = test::TestRequest::post()
        .uri("/api/time-entries")
        .insert_header(("Authorization", format!("Bearer {}", eve_key.expose())))
        .set_json(json!({"start": "2026-01-05T09:00:00Z", "end": "2026-01-05T10:00:00Z"}))
        .to_request();
    assert_eq!(call(&app, req).await.0, 201);
    let (_, _, mine) = call(
        &app,
        get(&t, &format!("{BASE}/time-entries/manual_entry/fallback")),
    )
    .await;
    assert_eq!(
        mine[0]["description"], "Sample time entry",
        "Ada has none: the sample"
    );
}

#[actix_web::test]
async fn fallbacks_need_a_key() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for path in [
        "time-entries/manual_entry/fallback",
        "time-entries/stop/fallback",
        "time-entries/start/fallback",
        "clients/fallback",
    ] {
        let req = test::TestRequest::get()
            .uri(&format!("{BASE}/{path}"))
            .to_request();
        let (status, _, body) = call(&app, req).await;
        assert_eq!(
            (status, body),
            (401, json!({"error": "Unauthorized"})),
            "{path}"
        );
    }
}
