//! Errors that do not come from handlers: unknown routes, wrong methods; all JSON.

use actix_web::test;
use serde_json::json;

use crate::support::{TestApp, call};

#[actix_web::test]
async fn unknown_routes_are_json_404() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for uri in [
        "/",
        "/api",
        "/api/nope",
        "/api/health/x",
        "/api/me/../../etc/passwd",
        "/%ff",
    ] {
        let (status, content_type, body) =
            call(&app, test::TestRequest::get().uri(uri).to_request()).await;
        assert_eq!(status, 404, "{uri}");
        assert_eq!(content_type, "application/json");
        assert_eq!(body, json!({"error": "Not found"}), "{uri}");
    }
}

#[actix_web::test]
async fn wrong_methods_are_json_405_naming_the_allowed_ones() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for (method, uri, allow) in [
        ("POST", "/api/health", "GET"),
        ("DELETE", "/api/health", "GET"),
        ("PUT", "/api/me", "GET"),
        ("PATCH", "/api/me", "GET"),
        ("PUT", "/api/clients", "POST, GET"),
        (
            "POST",
            "/api/clients/00000000-0000-4000-8000-000000000000",
            "GET, PATCH, DELETE",
        ),
        (
            "GET",
            "/api/integrations/automation/webhooks/subscribe",
            "POST",
        ),
        ("TRACE", "/api/time-entries", "POST, GET"),
    ] {
        let req = test::TestRequest::default()
            .method(method.parse().unwrap())
            .uri(uri)
            .insert_header(t.bearer())
            .to_request();
        let res = test::call_service(&app, req).await;
        assert_eq!(res.status(), 405, "{method} {uri}");
        assert_eq!(
            res.headers().get("allow").and_then(|v| v.to_str().ok()),
            Some(allow),
            "{method} {uri}"
        );
        assert_eq!(
            res.headers().get("content-type").unwrap(),
            "application/json"
        );
        let body: serde_json::Value = test::read_body_json(res).await;
        assert_eq!(body, json!({"error": "Method not allowed"}));
    }
}

#[actix_web::test]
async fn every_response_carries_a_request_id() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for uri in ["/api/health", "/api/nope"] {
        let res = test::call_service(&app, test::TestRequest::get().uri(uri).to_request()).await;
        let id = res
            .headers()
            .get("x-request-id")
            .expect("x-request-id")
            .to_str()
            .unwrap();
        assert!(uuid::Uuid::parse_str(id).is_ok(), "{id}");
    }
}
