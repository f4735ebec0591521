//! `Idempotency-Key` on POST requests.

use actix_web::test;
use serde_json::{Value, json};

use crate::support::{TestApp, call};

fn post(t: &TestApp, uri: &str, key: &str, body: Value) -> actix_http::Request {
    test::TestRequest::post()
        .uri(uri)
        .insert_header(t.bearer())
        .insert_header(("Idempotency-Key", key))
        .set_json(body)
        .to_request()
}

#[actix_web::test]
async fn a_repeat_returns_the_first_response_and_changes_nothing() {
    let t = TestApp::new().await;
    t.insert_subscription(
        "wh_idem0000000000000a",
        &t.workspace,
        &["CLIENT_CREATED"],
        "ACTIVE",
    )
    .await;
    let app = t.service().await;
    let first = test::call_service(
        &app,
        post(&t, "/api/clients", "create-acme", json!({"name": "Acme"})),
    )
    .await;
    assert_eq!(first.status(), 201);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first_body = test::read_body(first).await;
    let again = test::call_service(
        &app,
        post(&t, "/api/clients", "create-acme", json!({"name": "Acme"})),
    )
    .await;
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers().get("idempotent-replayed").unwrap(), "true");
    assert_eq!(test::read_body(again).await, first_body);
    assert_eq!(t.scalar("SELECT count(*) AS n FROM clients").await, 1);
    assert_eq!(t.scalar("SELECT count(*) AS n FROM events").await, 1);
    assert_eq!(t.scalar("SELECT count(*) AS n FROM deliveries").await, 1);
}

#[actix_web::test]
async fn the_same_key_with_another_body_is_422_and_changes_nothing() {
    let t = TestApp::new().await;
    let app = t.service().await;
    assert_eq!(
        call(
            &app,
            post(&t, "/api/clients", "k1", json!({"name": "Acme"}))
        )
        .await
        .0,
        201
    );
    let (status, _, body) = call(
        &app,
        post(&t, "/api/clients", "k1", json!({"name": "Globex"})),
    )
    .await;
    assert_eq!(
        (status, body),
        (
            422,
            json!({"error": "Idempotency-Key was already used with a different request"})
        )
    );
    let (status, _, _) = call(&app, post(&t, "/api/tags", "k1", json!({"name": "Acme"}))).await;
    assert_eq!(status, 422, "another path is another request");
    assert_eq!(t.scalar("SELECT count(*) AS n FROM clients").await, 1);
    assert_eq!(t.scalar("SELECT count(*) AS n FROM tags").await, 0);
}

#[actix_web::test]
async fn subscribe_and_timer_starts_are_idempotent_too() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let body = json!({"url": "https://hooks.example.com/h", "events": ["CLIENT_CREATED"]});
    let (s1, _, first) = call(
        &app,
        post(
            &t,
            "/api/integrations/automation/webhooks/subscribe",
            "zap-1",
            body.clone(),
        ),
    )
    .await;
    let (s2, _, second) = call(
        &app,
        post(
            &t,
            "/api/integrations/automation/webhooks/subscribe",
            "zap-1",
            body,
        ),
    )
    .await;
    assert_eq!((s1, s2), (201, 201));
    assert_eq!(first, second, "same id and secret");
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM webhook_subscriptions")
            .await,
        1
    );

    let (_, _, a) = call(
        &app,
        post(&t, "/api/time-entries/start", "start-1", json!({})),
    )
    .await;
    let (_, _, b) = call(
        &app,
        post(&t, "/api/time-entries/start", "start-1", json!({})),
    )
    .await;
    assert_eq!(a["id"], b["id"]);
    assert_eq!(t.scalar("SELECT count(*) AS n FROM time_entries").await, 1);
}

#[actix_web::test]
async fn keys_are_scoped_to_the_api_key() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, other_key) = t.other_workspace().await;
    assert_eq!(
        call(&app, post(&t, "/api/tags", "shared", json!({"name": "x"})))
            .await
            .0,
        201
    );
    let req = test::TestRequest::post()
        .uri("/api/tags")
        .insert_header(("Authorization", other_key.as_str()))
        .insert_header(("Idempotency-Key", "shared"))
        .set_json(json!({"name": "x"}))
        .to_request();
    let res = test::call_service(&app, req).await;
    assert_eq!(res.status(), 201);
    assert!(res.headers().get("idempotent-replayed").is_none());
    assert_eq!(t.scalar("SELECT count(*) AS n FROM tags").await, 2);
}

#[actix_web::test]
async fn client_errors_are_replayed_and_expired_keys_run_again() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let bad = json!({"start": "2026-01-05T10:00:00Z", "end": "2026-01-05T09:00:00Z"});
    let (s1, _, b1) = call(&app, post(&t, "/api/time-entries", "bad-1", bad.clone())).await;
    let (s2, _, b2) = call(&app, post(&t, "/api/time-entries", "bad-1", bad)).await;
    assert_eq!(
        (s1, &b1),
        (400, &json!({"error": "end must be after start"}))
    );
    assert_eq!((s2, &b2), (s1, &b1));

    let good = json!({"start": "2026-01-05T09:00:00Z", "end": "2026-01-05T10:00:00Z"});
    assert_eq!(
        call(&app, post(&t, "/api/time-entries", "good-1", good.clone()))
            .await
            .0,
        201
    );
    t.execute("UPDATE idempotency_keys SET created_at = created_at - interval '24 hours 1 second' WHERE key = 'good-1'").await;
    let res = test::call_service(&app, post(&t, "/api/time-entries", "good-1", good)).await;
    assert_eq!(res.status(), 201);
    assert!(res.headers().get("idempotent-replayed").is_none());
    assert_eq!(t.scalar("SELECT count(*) AS n FROM time_entries").await, 2);
}

#[actix_web::test]
async fn malformed_keys_are_400_and_unauthenticated_requests_are_401() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for key in ["has space", &"k".repeat(256)] {
        let (status, _, body) = call(&app, post(&t, "/api/tags", key, json!({"name": "x"}))).await;
        assert_eq!(
            (status, body),
            (
                400,
                json!({"error": "Idempotency-Key must be 1 to 255 visible ASCII characters"})
            )
        );
    }
    let req = test::TestRequest::post()
        .uri("/api/tags")
        .insert_header(("Idempotency-Key", "k"))
        .set_json(json!({"name": "x"}))
        .to_request();
    let (status, _, _) = call(&app, req).await;
    assert_eq!(status, 401);
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM idempotency_keys").await,
        0
    );
    assert_eq!(t.scalar("SELECT count(*) AS n FROM tags").await, 0);
}

/// The PostgreSQL store, with its first `failures` `complete`s refused as the database being
/// away (as when the primary dies between the request's write and the stored answer).
struct FailingCompletes {
    inner: std::sync::Arc<dyn timetrack_domain::ports::IdempotencyStore>,
    failures: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl timetrack_domain::ports::IdempotencyStore for FailingCompletes {
    async fn begin(
        &self,
        workspace: timetrack_domain::ids::WorkspaceId,
        api_key: timetrack_domain::ids::ApiKeyId,
        key: &str,
        fingerprint: [u8; 32],
        now: time::OffsetDateTime,
    ) -> timetrack_domain::DomainResult<timetrack_domain::ports::IdempotencyBegin> {
        self.inner
            .begin(workspace, api_key, key, fingerprint, now)
            .await
    }

    async fn complete(
        &self,
        api_key: timetrack_domain::ids::ApiKeyId,
        key: &str,
        status: u16,
        body: &str,
    ) -> timetrack_domain::DomainResult<()> {
        use std::sync::atomic::Ordering;
        if self
            .failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(timetrack_domain::DomainError::Unavailable(
                "no database connection".into(),
            ));
        }
        self.inner.complete(api_key, key, status, body).await
    }

    async fn abandon(
        &self,
        api_key: timetrack_domain::ids::ApiKeyId,
        key: &str,
    ) -> timetrack_domain::DomainResult<()> {
        self.inner.abandon(api_key, key).await
    }
}

/// An answer the database could not store at once (it was away) is stored as soon as it is
/// back: a retry meanwhile is told the first is still in progress, and after it gets the first
/// answer; the request is never done twice.
#[actix_web::test]
async fn an_answer_the_database_could_not_store_is_stored_once_it_is_back() {
    let mut t = TestApp::new().await;
    t.state.idempotency = std::sync::Arc::new(FailingCompletes {
        inner: t.state.idempotency.clone(),
        failures: std::sync::atomic::AtomicUsize::new(2),
    });
    let app = t.service().await;
    let first = test::call_service(
        &app,
        post(&t, "/api/clients", "create-once", json!({"name": "Once"})),
    )
    .await;
    assert_eq!(first.status(), 201);
    let first_body = test::read_body(first).await;
    let meanwhile = test::call_service(
        &app,
        post(&t, "/api/clients", "create-once", json!({"name": "Once"})),
    )
    .await;
    assert_eq!(meanwhile.status(), 409, "still in progress");
    // Stored by the second retry, a second apart.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        actix_web::rt::time::sleep(std::time::Duration::from_millis(200)).await;
        let again = test::call_service(
            &app,
            post(&t, "/api/clients", "create-once", json!({"name": "Once"})),
        )
        .await;
        if again.status() == 201 {
            assert_eq!(again.headers().get("idempotent-replayed").unwrap(), "true");
            assert_eq!(test::read_body(again).await, first_body);
            break;
        }
        assert_eq!(again.status(), 409);
        assert!(std::time::Instant::now() < deadline, "never stored");
    }
    assert_eq!(t.scalar("SELECT count(*) AS n FROM clients").await, 1);
}
