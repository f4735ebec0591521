//! Bearer-key authentication, through `GET /api/me`.

use std::time::Duration;

use actix_web::test;
use serde_json::json;
use timetrack_api::StateSettings;

use crate::support::{TestApp, call};
use timetrack_testkit::fakes::{email, name};

fn me() -> test::TestRequest {
    test::TestRequest::get().uri("/api/me")
}

#[actix_web::test]
async fn a_valid_key_gets_its_user_and_workspace() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (status, content_type, body) =
        call(&app, me().insert_header(t.bearer()).to_request()).await;
    assert_eq!(status, 200);
    assert_eq!(content_type, "application/json");
    assert_eq!(
        body,
        json!({
            "user": {"id": t.user.id.to_string(), "name": "Ada Lovelace", "email": "ada@example.com", "role": "owner"},
            "workspace": {
                "id": t.workspace.id.to_string(),
                "name": "Acme",
                "timezone": "Europe/Berlin",
                "currency": "EUR"
            }
        })
    );
}

#[actix_web::test]
async fn the_bearer_scheme_is_case_insensitive() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let req = me()
        .insert_header(("Authorization", format!("bearer {}", t.secret)))
        .to_request();
    let (status, _, _) = call(&app, req).await;
    assert_eq!(status, 200);
}

#[actix_web::test]
async fn missing_malformed_and_unknown_keys_get_401_unauthorized() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let mut unknown = t.secret.clone();
    let last = unknown.pop().unwrap();
    unknown.push(if last == 'a' { 'b' } else { 'a' });
    let cases: Vec<Option<String>> = vec![
        None,
        Some(String::new()),
        Some("Bearer".into()),
        Some("Bearer ".into()),
        Some(format!("Basic {}", t.secret)),
        Some(t.secret.clone()),
        Some("Bearer tt_short".into()),
        Some(format!("Bearer {unknown}")),
        Some(format!("Bearer {}x", t.secret)),
        Some(format!("Bearer {}", "é".repeat(50))),
        Some("Bearer ' OR 1=1 --".into()),
    ];
    for header in cases {
        let mut req = me();
        if let Some(value) = &header {
            req = req.insert_header(("Authorization", value.as_str()));
        }
        let (status, content_type, body) = call(&app, req.to_request()).await;
        assert_eq!(status, 401, "{header:?}");
        assert_eq!(content_type, "application/json");
        assert_eq!(body, json!({"error": "Unauthorized"}), "{header:?}");
    }
}

#[actix_web::test]
async fn a_revoked_key_gets_401_once_the_cache_expires() {
    let t = TestApp::with_settings(StateSettings {
        auth_cache_ttl: time::Duration::seconds(1),
        ..TestApp::relaxed()
    })
    .await;
    let app = t.service().await;
    let (status, _, _) = call(&app, me().insert_header(t.bearer()).to_request()).await;
    assert_eq!(status, 200);

    t.admin.revoke_api_key(t.key.id).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (status, _, body) = call(&app, me().insert_header(t.bearer()).to_request()).await;
    assert_eq!(status, 401);
    assert_eq!(body, json!({"error": "Unauthorized"}));
}

#[actix_web::test]
async fn without_a_cache_a_revoked_key_fails_at_once() {
    let t = TestApp::with_settings(StateSettings {
        auth_cache_ttl: time::Duration::ZERO,
        ..TestApp::relaxed()
    })
    .await;
    let app = t.service().await;
    let (status, _, _) = call(&app, me().insert_header(t.bearer()).to_request()).await;
    assert_eq!(status, 200);
    t.admin.revoke_api_key(t.key.id).await.unwrap();
    let (status, _, _) = call(&app, me().insert_header(t.bearer()).to_request()).await;
    assert_eq!(status, 401);
}

#[actix_web::test]
async fn a_key_of_a_second_workspace_sees_that_workspace() {
    let t = TestApp::new().await;
    let other = t
        .admin
        .create_workspace(timetrack_domain::services::NewWorkspace::named(name(
            "Other",
        )))
        .await
        .unwrap();
    t.admin
        .create_user(other.id, name("Ada"), email("ada@example.com"))
        .await
        .unwrap();
    let (_, secret) = t
        .admin
        .create_api_key(t.user.id, other.id, None)
        .await
        .unwrap();
    let app = t.service().await;
    let req = me()
        .insert_header(("Authorization", format!("Bearer {}", secret.expose())))
        .to_request();
    let (status, _, body) = call(&app, req).await;
    assert_eq!(status, 200);
    assert_eq!(body["workspace"]["id"], other.id.to_string());
    assert_eq!(body["user"]["id"], t.user.id.to_string());
}

#[actix_web::test]
async fn use_of_a_key_is_recorded() {
    let t = TestApp::new().await;
    let app = t.service().await;
    call(&app, me().insert_header(t.bearer()).to_request()).await;
    let revoked = t.admin.revoke_api_key(t.key.id).await.unwrap();
    assert!(revoked.last_used_at.is_some());
}

#[actix_web::test]
async fn a_database_outage_during_authentication_is_503_not_401() {
    let t = TestApp::new().await;
    // Point the application at a port where nothing listens.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let pool = timetrack_adapters::build_pool(
        &format!("postgres://nobody@127.0.0.1:{port}/none"),
        timetrack_adapters::PoolSettings::default(),
    )
    .unwrap();
    let state = timetrack_api::AppState::new(
        pool,
        std::sync::Arc::new(timetrack_adapters::SystemClock),
        StateSettings::default(),
    );
    let app = test::init_service(timetrack_api::build_app(state)).await;
    let started = std::time::Instant::now();
    let (status, _, body) = call(&app, me().insert_header(t.bearer()).to_request()).await;
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(status, 503);
    assert_eq!(body, json!({"error": "Service unavailable"}));
}
