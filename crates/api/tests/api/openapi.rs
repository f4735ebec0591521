//! `GET /api/openapi.json`: the description covers exactly the routes the app serves.

use std::collections::BTreeSet;

use actix_web::test;
use serde_json::{Value, json};

use crate::support::{TestApp, call};

const I: &str = "/api/integrations/automation";

/// Every (method, path) the application serves.
fn served() -> Vec<(&'static str, String)> {
    let mut routes: Vec<(&'static str, String)> = [
        ("get", "/api/health"),
        ("get", "/api/openapi.json"),
        ("get", "/api/me"),
        ("post", "/api/clients"),
        ("get", "/api/clients"),
        ("get", "/api/clients/{id}"),
        ("patch", "/api/clients/{id}"),
        ("delete", "/api/clients/{id}"),
        ("post", "/api/projects"),
        ("get", "/api/projects"),
        ("post", "/api/projects/{id}/tasks"),
        ("get", "/api/projects/{id}/tasks"),
        ("post", "/api/tags"),
        ("get", "/api/tags"),
        ("post", "/api/time-entries/start"),
        ("post", "/api/time-entries/stop"),
        ("get", "/api/time-entries/current"),
        ("post", "/api/time-entries"),
        ("get", "/api/time-entries"),
        ("get", "/api/time-entries/{id}"),
        ("patch", "/api/time-entries/{id}"),
        ("delete", "/api/time-entries/{id}"),
    ]
    .into_iter()
    .map(|(m, p)| (m, p.to_owned()))
    .collect();
    for (m, p) in [
        ("post", "/triggers/clients/find"),
        ("post", "/webhooks/subscribe"),
        ("get", "/webhooks"),
        ("delete", "/webhooks/{id}"),
        ("get", "/webhooks/{id}/deliveries"),
        ("get", "/triggers/time-entries/manual_entry/fallback"),
        ("get", "/triggers/time-entries/stop/fallback"),
        ("get", "/triggers/time-entries/start/fallback"),
        ("get", "/triggers/clients/fallback"),
    ] {
        routes.push((m, format!("{I}{p}")));
    }
    routes
}

async fn document(t: &TestApp) -> Value {
    let app = t.service().await;
    let (status, content_type, doc) = call(
        &app,
        test::TestRequest::get()
            .uri("/api/openapi.json")
            .to_request(),
    )
    .await;
    assert_eq!((status, content_type.as_str()), (200, "application/json"));
    doc
}

#[actix_web::test]
async fn the_description_is_openapi_3_1_with_the_bearer_scheme_and_needs_no_key() {
    let t = TestApp::new().await;
    let doc = document(&t).await;
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    assert_eq!(doc["info"]["title"], "timetrack");
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer_auth"],
        json!({"type": "http", "scheme": "bearer"})
    );
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
    assert!(doc["components"]["schemas"]["TimeEntryPayload"].is_object());
}

#[actix_web::test]
async fn every_served_route_is_documented_and_nothing_else() {
    let t = TestApp::new().await;
    let doc = document(&t).await;
    let documented: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, ops)| {
            ops.as_object()
                .unwrap()
                .keys()
                .map(move |m| (m.clone(), path.clone()))
        })
        .collect();
    let served: BTreeSet<(String, String)> = served()
        .into_iter()
        .map(|(m, p)| (m.to_owned(), p))
        .collect();
    assert_eq!(documented, served);
}

#[actix_web::test]
async fn every_listed_route_is_really_served() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for (method, path) in served() {
        let uri = path
            .replace("{id}", "wh_aaaaaaaaaaaaaaaaaaaaaaaa")
            .replace("/clients/wh_", "/clients/x")
            .replace("/time-entries/wh_", "/time-entries/x");
        let req = test::TestRequest::default()
            .method(method.to_uppercase().parse().unwrap())
            .uri(&uri)
            .insert_header(t.bearer())
            .set_json(json!({}))
            .to_request();
        let (status, _, body) = call(&app, req).await;
        assert_ne!(status, 405, "{method} {uri}");
        assert_ne!(
            body,
            json!({"error": "Not found"}),
            "{method} {uri} fell through to the default 404"
        );
    }
}

#[actix_web::test]
async fn authenticated_operations_declare_security_and_their_errors() {
    let t = TestApp::new().await;
    let doc = document(&t).await;
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            let public = path == "/api/health" || path == "/api/openapi.json";
            if !public {
                assert_eq!(
                    op["security"],
                    json!([{"bearer_auth": []}]),
                    "{method} {path}"
                );
                for code in ["401", "429"] {
                    assert!(responses.contains_key(code), "{method} {path} lacks {code}");
                }
            }
            for (code, response) in responses {
                if code.starts_with('4') || code.starts_with('5') {
                    let schema = &response["content"]["application/json"]["schema"]["$ref"];
                    let schema = schema.as_str().unwrap_or_default();
                    assert!(
                        schema.ends_with("/ErrorBody")
                            || schema.ends_with("/ConflictBody")
                            || schema.ends_with("/UnhealthyResponse"),
                        "{method} {path} {code}: {schema}"
                    );
                }
            }
        }
    }
}
