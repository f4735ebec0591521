//! The event-type catalog (`events.md` section 2). Every delivered body is validated against
//! these schemas by an independent validator in the end-to-end tests (`e2e/deliveries/payloads.rs`).

use actix_web::test;
use serde_json::json;

use crate::support::{TestApp, call};

const CATALOG: &str = "/api/integrations/automation/event-types";

#[actix_web::test]
async fn the_catalog_lists_every_type_with_a_2020_12_schema_and_a_sample_that_fits_it() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let req = test::TestRequest::get().uri(CATALOG).to_request();
    assert_eq!(call(&app, req).await.0, 401, "needs a key");
    let req = test::TestRequest::get()
        .uri(CATALOG)
        .insert_header(t.bearer())
        .to_request();
    let (status, _, catalog) = call(&app, req).await;
    assert_eq!(status, 200, "{catalog}");
    let entries = catalog.as_array().unwrap();
    let types: Vec<&str> = entries
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "TIMER_STARTED",
            "TIMER_STOPPED",
            "TIME_ENTRY_CREATED",
            "CLIENT_CREATED",
            "TIME_ENTRY_UPDATED",
            "TIME_ENTRY_DELETED",
            "CLIENT_UPDATED",
            "CLIENT_DELETED",
            "PROJECT_CREATED",
            "PROJECT_UPDATED",
            "PROJECT_DELETED",
            "WEBHOOK_FAILING",
            "WEBHOOK_DISABLED",
            "WEBHOOK_RECOVERED",
            "WEBHOOK_TEST",
            "INVOICE_CREATED",
            "INVOICE_ISSUED",
            "INVOICE_VOIDED",
            "INVOICE_PAID",
            "INVOICE_OVERDUE",
        ]
    );
    for entry in entries {
        let t = entry["type"].as_str().unwrap();
        assert_eq!(
            entry.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["type", "description", "subscribable", "schema", "sample"]
        );
        assert_eq!(entry["subscribable"], json!(t != "WEBHOOK_TEST"), "{t}");
        assert!(!entry["description"].as_str().unwrap().is_empty());
        let schema = &entry["schema"];
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        assert_eq!(schema["type"], "object", "{t}");
        assert_eq!(schema["additionalProperties"], false, "{t}");
        // The sample has every required field and nothing the schema does not list.
        let properties = schema["properties"].as_object().unwrap();
        let sample = entry["sample"].as_object().unwrap();
        for name in sample.keys() {
            assert!(
                properties.contains_key(name),
                "{t}: {name} not in the schema"
            );
        }
        for name in schema["required"].as_array().unwrap() {
            assert!(
                sample.contains_key(name.as_str().unwrap()),
                "{t}: {name} missing"
            );
        }
        let changed = properties.contains_key("changedFields");
        assert_eq!(changed, t.ends_with("_UPDATED"), "{t}: changedFields");
    }
    let started = &entries[0]["schema"]["properties"];
    assert!(
        started.get("endTime").is_none(),
        "a started timer has no end"
    );
    assert_eq!(started["action"]["const"], "start_timer");
    let stopped = &entries[1]["schema"]["required"];
    assert!(stopped.as_array().unwrap().contains(&json!("endTime")));
}

#[actix_web::test]
async fn the_openapi_document_holds_the_payload_schemas_the_catalog_is_built_from() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let req = test::TestRequest::get()
        .uri("/api/openapi.json")
        .to_request();
    let (_, _, doc) = call(&app, req).await;
    let req = test::TestRequest::get()
        .uri(CATALOG)
        .insert_header(t.bearer())
        .to_request();
    let (_, _, catalog) = call(&app, req).await;
    let component = |name: &str| doc["components"]["schemas"][name]["properties"].clone();
    let listed = |t: usize| -> Vec<String> {
        let mut names: Vec<String> = catalog[t]["schema"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    };
    let mut documented: Vec<String> = component("ClientPayload")
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    documented.sort();
    assert_eq!(listed(6), documented, "CLIENT_UPDATED is ClientPayload");
    assert!(component("ProjectPayload").is_object());
    assert!(component("TimeEntryPayload").is_object());
}
