//! The catch-up feed (`events.md` section 5): oldest first, the delivered bytes, a cursor on
//! every page, and a cursor that never passes an event whose transaction commits late.

use actix_web::test;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use diesel_async::RunQueryDsl;
use serde_json::{Value, json};

use crate::support::{TestApp, call, error_of};

const FEED: &str = "/api/integrations/automation/events";

/// GET `path` as `auth`: status, body as JSON, and the raw body.
async fn get<S, B>(app: &S, auth: &str, path: &str) -> (u16, Value, String)
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: actix_web::body::MessageBody,
{
    let req = test::TestRequest::get()
        .uri(path)
        .insert_header(("Authorization", auth.to_owned()))
        .to_request();
    let res = test::call_service(app, req).await;
    let status = res.status().as_u16();
    let raw = String::from_utf8(test::read_body(res).await.to_vec()).unwrap();
    (status, serde_json::from_str(&raw).unwrap(), raw)
}

async fn create_client<S, B>(t: &TestApp, app: &S, name: String) -> String
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: actix_web::body::MessageBody,
{
    let req = test::TestRequest::post()
        .uri("/api/clients")
        .insert_header(t.bearer())
        .set_json(json!({ "name": name }))
        .to_request();
    let (status, _, body) = call(app, req).await;
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

/// The ids and types of a page.
fn ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Reads the feed from `cursor` (or the start) to its current end: every event id, in order,
/// and the last cursor.
async fn read_all<S, B>(
    app: &S,
    auth: &str,
    query: &str,
    mut cursor: Option<String>,
) -> (Vec<String>, String)
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: actix_web::body::MessageBody,
{
    let mut seen = Vec::new();
    loop {
        let after = cursor
            .as_deref()
            .map(|c| format!("&after={c}"))
            .unwrap_or_default();
        let (status, page, _) = get(app, auth, &format!("{FEED}?limit=3{query}{after}")).await;
        assert_eq!(status, 200, "{page}");
        let found = ids(&page);
        let next = page["next_cursor"]
            .as_str()
            .expect("always a cursor")
            .to_owned();
        seen.extend(found.iter().cloned());
        cursor = Some(next.clone());
        if found.len() < 3 {
            return (seen, next);
        }
    }
}

/// Reads on from `cursor` until `n` events were read: the feed holds an event back while any
/// older transaction of the cluster (another test's too) is still running.
async fn read_until<S, B>(
    app: &S,
    auth: &str,
    query: &str,
    mut cursor: Option<String>,
    n: usize,
) -> (Vec<String>, String)
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: actix_web::body::MessageBody,
{
    let mut seen = Vec::new();
    for _ in 0..500 {
        let (found, next) = read_all(app, auth, query, cursor).await;
        seen.extend(found);
        cursor = Some(next);
        if seen.len() >= n {
            break;
        }
        actix_web::rt::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    (seen, cursor.unwrap())
}

/// The workspace's event ids in the order they were recorded (one writer at a time here).
async fn recorded(t: &TestApp, types: &str) -> Vec<String> {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        id: String,
    }
    let mut conn = t.pool.get().await.unwrap();
    let rows: Vec<Row> = diesel::sql_query(format!(
        "SELECT id::text AS id FROM events WHERE workspace_id = '{}' AND event_type IN ({types}) \
         ORDER BY seq",
        t.workspace.id
    ))
    .load(&mut conn)
    .await
    .unwrap();
    rows.into_iter().map(|r| r.id).collect()
}

#[actix_web::test]
async fn the_feed_shows_the_workspaces_events_oldest_first_with_the_delivered_bytes() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;

    // An empty feed still gives a cursor.
    let (status, empty, _) = get(&app, &auth, FEED).await;
    assert_eq!(status, 200, "{empty}");
    assert_eq!(empty["data"], json!([]));
    let start = empty["next_cursor"].as_str().unwrap().to_owned();

    for n in 0..4 {
        create_client(&t, &app, format!("Client {n}")).await;
    }
    let req = test::TestRequest::post()
        .uri("/api/time-entries")
        .insert_header(t.bearer())
        .set_json(json!({"start": "2026-01-05T09:00:00Z", "end": "2026-01-05T10:00:00Z"}))
        .to_request();
    assert_eq!(call(&app, req).await.0, 201);
    // Another workspace's events are not this one's.
    let (_, other) = t.other_workspace().await;
    let req = test::TestRequest::post()
        .uri("/api/clients")
        .insert_header(("Authorization", other.clone()))
        .set_json(json!({"name": "Theirs"}))
        .to_request();
    assert_eq!(call(&app, req).await.0, 201);

    let expected = recorded(&t, "'CLIENT_CREATED', 'TIME_ENTRY_CREATED'").await;
    assert_eq!(expected.len(), 5);
    let (all, end) = read_until(&app, &auth, "", None, 5).await;
    assert_eq!(
        all, expected,
        "every event once, oldest first, from the start"
    );
    assert_eq!(
        read_all(&app, &auth, "", Some(end)).await.0,
        Vec::<String>::new()
    );
    let (after_start, _) = read_until(&app, &auth, "", Some(start), 5).await;
    assert_eq!(
        after_start, expected,
        "the empty page's cursor loses nothing"
    );
    let (theirs, _) = read_until(&app, &other, "", None, 1).await;
    assert_eq!(theirs.len(), 1);

    // One page: the shape, and the payload byte for byte as stored (and delivered).
    let (_, page, raw) = get(&app, &auth, &format!("{FEED}?limit=1")).await;
    let event = &page["data"][0];
    assert_eq!(
        event.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["id", "type", "created_at", "payload"]
    );
    assert_eq!(event["type"], "CLIENT_CREATED");
    assert_eq!(event["payload"]["name"], "Client 0");
    let body = t.event_body(event["id"].as_str().unwrap()).await;
    assert!(raw.contains(&format!("\"payload\":{body}")), "{raw}");

    // Types: only those, comma-separated.
    let (entries, _) = read_until(&app, &auth, "&types=TIME_ENTRY_CREATED", None, 1).await;
    assert_eq!(entries, recorded(&t, "'TIME_ENTRY_CREATED'").await);
    let (both, _) = read_until(
        &app,
        &auth,
        "&types=TIME_ENTRY_CREATED,CLIENT_CREATED",
        None,
        5,
    )
    .await;
    assert_eq!(both, expected);
    // The default limit is 100.
    let (_, page, _) = get(&app, &auth, FEED).await;
    assert_eq!(ids(&page), expected);
}

#[actix_web::test]
async fn bad_queries_and_cursors_are_400_and_an_old_cursor_says_so() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let old = URL_SAFE_NO_PAD.encode(format!(
        "p:1:1:{}",
        time::OffsetDateTime::now_utc().unix_timestamp() - 31 * 86_400
    ));
    let recent = URL_SAFE_NO_PAD.encode(format!(
        "p:1:1:{}",
        time::OffsetDateTime::now_utc().unix_timestamp() - 29 * 86_400
    ));
    for (query, message) in [
        ("limit=0", "limit must be between 1 and 1000"),
        ("limit=1001", "limit must be between 1 and 1000"),
        ("types=CLIENT_MADE", "Invalid event type: CLIENT_MADE"),
        ("types=CLIENT_CREATED,", "Invalid event type: "),
        ("types=WEBHOOK_TEST", "Invalid event type: WEBHOOK_TEST"),
        ("after=nope", "invalid cursor"),
        (
            &format!("after={old}"),
            "cursor is older than the retained events",
        ),
    ] {
        let (status, body, _) = get(&app, &auth, &format!("{FEED}?{query}")).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert_eq!(error_of(&body)["error"], message, "{query}");
    }
    for query in ["limit=abc", "limit=-1"] {
        let (status, body, _) = get(&app, &auth, &format!("{FEED}?{query}")).await;
        assert_eq!(status, 400, "{query}: {body}");
    }
    let (status, _, _) = get(&app, &auth, &format!("{FEED}?after={recent}&limit=1000")).await;
    assert_eq!(status, 200, "a cursor inside the retention is read");
    let (status, body, _) = get(&app, "Bearer tt_nope", FEED).await;
    assert_eq!(status, 401, "{body}");
}

#[actix_web::test]
async fn an_event_whose_transaction_commits_late_is_never_passed_by_a_cursor() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    create_client(&t, &app, "Before".into()).await;
    let (seen, cursor) = read_until(&app, &auth, "", None, 1).await;
    assert_eq!(seen.len(), 1);

    // A transaction records an event and stays open on purpose.
    let mut slow = t.pool.get().await.unwrap();
    diesel::sql_query("BEGIN").execute(&mut slow).await.unwrap();
    diesel::sql_query(format!(
        "INSERT INTO events (id, workspace_id, event_type, body, created_at, client_id) \
         VALUES ('00000000-0000-4000-8000-00000000abcd', '{}', 'CLIENT_CREATED', \
         '{{\"slow\":true}}', now(), NULL)",
        t.workspace.id
    ))
    .execute(&mut slow)
    .await
    .unwrap();

    // Later transactions commit first, while readers keep reading.
    let after_ids: Vec<String> = futures_util::future::join_all(
        (0..6).map(|n| create_client(&t, &app, format!("After {n}"))),
    )
    .await;
    let (meanwhile, cursor) = read_all(&app, &auth, "", Some(cursor)).await;
    assert!(
        meanwhile.is_empty(),
        "nothing after the open transaction is shown before it ends: {meanwhile:?}"
    );

    diesel::sql_query("COMMIT")
        .execute(&mut slow)
        .await
        .unwrap();
    drop(slow);
    let (then, _) = read_until(&app, &auth, "", Some(cursor), 7).await;
    assert_eq!(then.len(), 7, "{then:?}");
    assert_eq!(
        then[0], "00000000-0000-4000-8000-00000000abcd",
        "the late one first"
    );
    let mut later = then[1..].to_vec();
    later.sort();
    let mut created = t.event_ids_of_clients(&after_ids).await;
    created.sort();
    assert_eq!(later, created);
}

#[actix_web::test]
async fn concurrent_writers_and_a_polling_reader_see_every_event_exactly_once() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let writers = async {
        for round in 0..5 {
            futures_util::future::join_all(
                (0..8).map(|n| create_client(&t, &app, format!("W{round}-{n}"))),
            )
            .await;
        }
    };
    let reader = async {
        let mut seen = Vec::new();
        let mut cursor = None;
        for _ in 0..200 {
            let (found, next) = read_all(&app, &auth, "", cursor.clone()).await;
            seen.extend(found);
            cursor = Some(next);
            if seen.len() >= 40 {
                break;
            }
            actix_web::rt::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        seen
    };
    let ((), seen) = futures_util::future::join(writers, reader).await;
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), seen.len(), "no event twice");
    assert_eq!(seen.len(), 40, "every event");
}

#[actix_web::test]
async fn the_feed_never_shows_test_deliveries_and_shows_a_notice_to_its_webhooks_owner_only() {
    // Forwards and backwards: both reads share the condition, and each is checked.
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let mine =
        crate::webhooks_operate::subscribed(&t, &app, "https://hooks.example.com/mine").await;
    // Another member of the workspace, with a webhook of their own.
    let bob = t
        .admin
        .create_user(
            t.workspace.id,
            timetrack_testkit::fakes::name("Bob"),
            timetrack_testkit::fakes::email("bob@example.com"),
        )
        .await
        .unwrap();
    let (_, bob_secret) = t
        .admin
        .create_api_key(bob.id, t.workspace.id, None)
        .await
        .unwrap();
    let bob_auth = format!("Bearer {}", bob_secret.expose());
    let req = crate::webhooks_operate::request(
        "POST",
        &bob_auth,
        "/subscribe",
        Some(json!({"url": "https://hooks.example.com/bob", "events": ["CLIENT_CREATED"]})),
    );
    let (status, _, body) = call(&app, req).await;
    assert_eq!(status, 201, "{body}");
    let bobs = body["webhook"]["id"].as_str().unwrap().to_owned();

    // A test delivery (its WEBHOOK_TEST event is recorded), and a notice about each webhook.
    let req = crate::webhooks_operate::request("POST", &auth, &format!("/{mine}/test"), None);
    assert_eq!(call(&app, req).await.0, 202);
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM events WHERE event_type = 'WEBHOOK_TEST'")
            .await,
        1
    );
    for (n, about) in [(1, &mine), (2, &bobs)] {
        TestApp::execute(
            &t,
            &format!(
                "INSERT INTO events (id, workspace_id, event_type, body, created_at, \
             about_webhook_id, ordering_key, visible_to) \
             SELECT '00000000-0000-4000-8000-00000000000{n}', '{}', 'WEBHOOK_FAILING', '{{}}', \
                    now(), id, id, user_id FROM webhook_subscriptions WHERE id = '{about}'",
                t.workspace.id
            ),
        )
        .await;
    }
    for (auth, notice) in [
        (&auth, "00000000-0000-4000-8000-000000000001"),
        (&bob_auth, "00000000-0000-4000-8000-000000000002"),
    ] {
        let (seen, cursor) = read_until(&app, auth, "", None, 1).await;
        assert_eq!(
            seen,
            [notice],
            "the reader's own webhook's notice only, and no test"
        );
        let (status, page, _) = get(&app, auth, &format!("{FEED}?before=latest")).await;
        assert_eq!(status, 200, "{page}");
        assert_eq!(ids(&page), [notice], "read backwards, the same");
        // Nothing more once every transaction before the reads has ended.
        actix_web::rt::time::sleep(std::time::Duration::from_millis(300)).await;
        assert_eq!(
            read_all(&app, auth, "", Some(cursor)).await.0,
            Vec::<String>::new()
        );
    }
}

#[actix_web::test]
async fn the_feed_read_backwards_pages_newest_first_to_the_oldest() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    for n in 0..5 {
        create_client(&t, &app, format!("Backwards {n}")).await;
    }
    let mut oldest_first = recorded(&t, "'CLIENT_CREATED'").await;
    assert_eq!(oldest_first.len(), 5);
    let (forward, _) = read_until(&app, &auth, "", None, 5).await;
    assert_eq!(forward, oldest_first, "the forward feed, for comparison");
    oldest_first.reverse();
    let newest_first = oldest_first;

    // Pages of two: 2, 2, 1, then empty; each page newest first, together every event once.
    let mut seen = Vec::new();
    let mut before = "latest".to_owned();
    let mut sizes = Vec::new();
    for _ in 0..4 {
        let (status, page, _) = get(&app, &auth, &format!("{FEED}?before={before}&limit=2")).await;
        assert_eq!(status, 200, "{page}");
        sizes.push(page["data"].as_array().unwrap().len());
        seen.extend(ids(&page));
        before = page["next_cursor"].as_str().unwrap().to_owned();
    }
    assert_eq!(sizes, [2, 2, 1, 0]);
    assert_eq!(seen, newest_first);

    // The types filter applies; the shape is the forward feed's.
    let (_, page, _) = get(
        &app,
        &auth,
        &format!("{FEED}?before=latest&types=TIMER_STARTED"),
    )
    .await;
    assert_eq!(page["data"], json!([]));
    let (_, page, _) = get(&app, &auth, &format!("{FEED}?before=latest&limit=1")).await;
    assert_eq!(page["data"][0]["type"], "CLIENT_CREATED");
    assert_eq!(page["data"][0]["payload"]["name"], "Backwards 4");

    // Another workspace reads nothing of these.
    let (_, other) = t.other_workspace().await;
    let (status, page, _) = get(&app, &other, &format!("{FEED}?before=latest")).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["data"], json!([]));

    for (query, message) in [
        (
            "before=latest&after=latest",
            "after and before cannot be used together",
        ),
        ("before=nope", "invalid cursor"),
        ("before=latest&limit=0", "limit must be between 1 and 1000"),
        (
            "before=latest&types=WEBHOOK_TEST",
            "Invalid event type: WEBHOOK_TEST",
        ),
    ] {
        let (status, body, _) = get(&app, &auth, &format!("{FEED}?{query}")).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert_eq!(error_of(&body)["error"], message, "{query}");
    }
}
