//! `GET /api/health`, against a live and a stopped database.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::test;
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use timetrack_adapters::{
    Durability, LocalPostgres, PoolSettings, SystemClock, build_pool, run_migrations,
};
use timetrack_api::{AppState, StateSettings, build_app};

use crate::support::{TestApp, call};

fn keys(body: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

fn assert_recent_utc(timestamp: &Value) {
    let text = timestamp.as_str().unwrap();
    assert!(text.ends_with('Z'), "{text}");
    let at = OffsetDateTime::parse(text, &Rfc3339).unwrap();
    assert!((OffsetDateTime::now_utc() - at).abs() < time::Duration::seconds(30));
}

#[actix_web::test]
async fn healthy_database_gives_200_with_exactly_the_documented_fields() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (status, content_type, body) = call(
        &app,
        test::TestRequest::get().uri("/api/health").to_request(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(content_type, "application/json");
    assert_eq!(keys(&body), ["service", "status", "timestamp", "version"]);
    assert_eq!(body["status"], "healthy");
    assert_eq!(body["service"], "timetrack");
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
    assert_recent_utc(&body["timestamp"]);
}

#[actix_web::test]
async fn health_needs_no_key_and_ignores_a_bad_one() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let req = test::TestRequest::get()
        .uri("/api/health")
        .insert_header(("Authorization", "Bearer wrong"))
        .to_request();
    let (status, _, body) = call(&app, req).await;
    assert_eq!(status, 200);
    assert_eq!(body["status"], "healthy");
}

/// A real database is stopped under the running application, then started again.
#[actix_web::test]
async fn stopped_database_gives_503_within_3_seconds_and_recovers() {
    let dir = std::env::temp_dir().join(format!("timetrack-health-test-{}", uuid::Uuid::new_v4()));
    let start = {
        let dir = dir.clone();
        move || LocalPostgres::start(&dir, Durability::Ephemeral).unwrap()
    };
    let mut local = tokio::task::spawn_blocking(start.clone()).await.unwrap();
    let url = local.url("postgres");
    run_migrations(&url).await.unwrap();
    let pool = build_pool(&url, PoolSettings::default()).unwrap();
    let app = test::init_service(build_app(AppState::new(
        pool,
        Arc::new(SystemClock),
        StateSettings::default(),
    )))
    .await;

    let (status, _, _) = call(
        &app,
        test::TestRequest::get().uri("/api/health").to_request(),
    )
    .await;
    assert_eq!(status, 200);

    local = tokio::task::spawn_blocking(move || {
        local.stop();
        local
    })
    .await
    .unwrap();
    drop(local);
    let started = Instant::now();
    let (status, content_type, body) = call(
        &app,
        test::TestRequest::get().uri("/api/health").to_request(),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(status, 503);
    assert_eq!(content_type, "application/json");
    assert_eq!(
        keys(&body),
        ["error", "reason", "service", "status", "timestamp"]
    );
    assert_eq!(body["status"], "unhealthy");
    assert_eq!(body["service"], "timetrack");
    assert_eq!(body["error"], "database connection failed");
    assert_eq!(body["reason"], "no database connection");
    assert_recent_utc(&body["timestamp"]);

    // Started again (same port and credentials): healthy again without restarting the app.
    let local = tokio::task::spawn_blocking(start).await.unwrap();
    assert_eq!(local.url("postgres"), url);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (status, _, _) = call(
            &app,
            test::TestRequest::get().uri("/api/health").to_request(),
        )
        .await;
        if status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still unhealthy 5 s after the database came back"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::task::spawn_blocking(move || drop(local))
        .await
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
