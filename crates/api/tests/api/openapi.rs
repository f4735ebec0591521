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
        ("get", "/api/projects/{id}"),
        ("get", "/api/integrations/automation/events"),
        ("get", "/api/integrations/automation/event-types"),
        ("patch", "/api/projects/{id}"),
        ("delete", "/api/projects/{id}"),
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
        ("get", "/api/workspace"),
        ("patch", "/api/workspace"),
        ("get", "/api/members"),
        ("patch", "/api/members/{user_id}"),
        ("get", "/api/keys"),
        ("post", "/api/keys"),
        ("delete", "/api/keys/{id}"),
        ("get", "/api/rates"),
        ("post", "/api/rates"),
        ("delete", "/api/rates/{id}"),
        ("get", "/api/reports/summary"),
        ("get", "/api/reports/detailed"),
        ("get", "/api/reports/uninvoiced"),
        ("post", "/api/invoices/preview"),
        ("post", "/api/invoices"),
        ("get", "/api/invoices"),
        ("get", "/api/invoices/{id}"),
        ("patch", "/api/invoices/{id}"),
        ("delete", "/api/invoices/{id}"),
        ("post", "/api/invoices/{id}/issue"),
        ("post", "/api/invoices/{id}/void"),
        ("post", "/api/invoices/{id}/payments"),
        ("delete", "/api/invoices/{id}/payments/{payment_id}"),
    ]
    .into_iter()
    .map(|(m, p)| (m, p.to_owned()))
    .collect();
    for (m, p) in [
        ("post", "/triggers/clients/find"),
        ("post", "/triggers/projects/find"),
        ("get", "/triggers/time-entries/running"),
        ("post", "/webhooks/subscribe"),
        ("get", "/webhooks"),
        ("get", "/webhooks/{id}"),
        ("patch", "/webhooks/{id}"),
        ("post", "/webhooks/{id}/enable"),
        ("post", "/webhooks/{id}/disable"),
        ("post", "/webhooks/{id}/rotate-secret"),
        ("delete", "/webhooks/{id}"),
        ("get", "/webhooks/{id}/stats"),
        ("post", "/webhooks/{id}/test"),
        ("post", "/webhooks/{id}/replay"),
        ("get", "/webhooks/{id}/deliveries"),
        ("get", "/webhooks/{id}/deliveries/{delivery_id}"),
        ("post", "/webhooks/{id}/deliveries/{delivery_id}/resend"),
        ("get", "/events/{id}/deliveries"),
        ("get", "/triggers/time-entries/manual_entry/fallback"),
        ("get", "/triggers/time-entries/stop/fallback"),
        ("get", "/triggers/time-entries/start/fallback"),
        ("get", "/triggers/clients/fallback"),
    ] {
        routes.push((m, format!("{I}{p}")));
    }
    routes
}

pub(crate) async fn document(t: &TestApp) -> Value {
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

/// Every operation of the document: (method, path, operation).
pub(crate) fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, ops)| {
            ops.as_object()
                .unwrap()
                .iter()
                .map(move |(method, op)| (method.clone(), path.clone(), op.clone()))
        })
        .collect()
}

/// `schema` with a `$ref` followed, and a nullable `oneOf: [X, {type: null}]` unwrapped to `X`.
pub(crate) fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.trim_start_matches("#/components/schemas/");
        return resolve(doc, &doc["components"]["schemas"][name]);
    }
    if let Some([first, second]) = schema["oneOf"].as_array().map(Vec::as_slice) {
        if second["type"] == "null" {
            return resolve(doc, first);
        }
        if first["type"] == "null" {
            return resolve(doc, second);
        }
    }
    schema
}

/// The properties of a request body schema, `allOf` parts included: (name, schema, required).
fn properties<'a>(doc: &'a Value, schema: &'a Value) -> Vec<(String, &'a Value, bool)> {
    let schema = resolve(doc, schema);
    let mut found: Vec<(String, &Value, bool)> = schema["allOf"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|part| properties(doc, part))
        .collect();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        found.push((
            name.clone(),
            resolve(doc, property),
            required.contains(&name.as_str()),
        ));
    }
    found
}

/// The schema of property `field` of the JSON body of `method path`.
fn body_field<'a>(doc: &'a Value, method: &str, path: &str, field: &str) -> &'a Value {
    let body = &doc["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"];
    properties(doc, body)
        .into_iter()
        .find(|(name, _, _)| name == field)
        .unwrap_or_else(|| panic!("{method} {path} has no body field {field}"))
        .1
}

/// The `type` of a schema, as a list.
fn types(schema: &Value) -> Vec<&str> {
    match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

#[actix_web::test]
async fn every_operation_reading_a_body_or_a_query_declares_400_with_the_error_body() {
    let t = TestApp::new().await;
    let doc = document(&t).await;
    for (method, path, op) in operations(&doc) {
        let reads_query = op["parameters"]
            .as_array()
            .is_some_and(|ps| ps.iter().any(|p| p["in"] == "query"));
        if !reads_query && op.get("requestBody").is_none() {
            continue;
        }
        let schema = &op["responses"]["400"]["content"]["application/json"]["schema"]["$ref"];
        assert!(
            schema.as_str().is_some_and(|s| s.ends_with("/ErrorBody")),
            "{method} {path} reads a body or query but declares no 400 {{error}}"
        );
    }
}

#[actix_web::test]
async fn list_limits_are_documented_with_the_bounds_the_service_enforces() {
    let t = TestApp::new().await;
    let doc = document(&t).await;
    let app = t.service().await;
    let (status, _, project) = call(
        &app,
        test::TestRequest::post()
            .uri("/api/projects")
            .insert_header(t.bearer())
            .set_json(json!({"name": "Paged"}))
            .to_request(),
    )
    .await;
    assert_eq!(status, 201, "{project}");
    let webhook =
        crate::webhooks_operate::subscribed(&t, &app, "https://hooks.example.com/paged").await;
    let mut lists = 0;
    for (method, path, op) in operations(&doc) {
        let params = op["parameters"].as_array().cloned().unwrap_or_default();
        let Some(limit) = params.iter().find(|p| p["name"] == "limit") else {
            continue;
        };
        lists += 1;
        let schema = &limit["schema"];
        assert_eq!(types(schema), ["integer"], "{method} {path} limit");
        let (min, max) = (schema["minimum"].as_i64(), schema["maximum"].as_i64());
        // The catch-up feed pages up to 1000 events and goes on `after` a cursor.
        let feed = path == "/api/integrations/automation/events";
        // The detailed report pages up to 1000 rows, within its required range.
        let report = path == "/api/reports/detailed";
        let (top, cursor_name) = if feed {
            (1000, "after")
        } else if report {
            (1000, "cursor")
        } else {
            (200, "cursor")
        };
        assert_eq!((min, max), (Some(1), Some(top)), "{method} {path} limit");
        let cursor = params.iter().find(|p| p["name"] == cursor_name);
        let cursor = cursor.unwrap_or_else(|| panic!("{method} {path} has no cursor"));
        assert_eq!(
            types(&cursor["schema"]),
            ["string"],
            "{method} {path} cursor"
        );

        // The documented bounds are the enforced ones: in range is a page, out of range 400.
        let id = if path.contains("/webhooks/") {
            webhook.as_str()
        } else {
            project["id"].as_str().unwrap()
        };
        let uri = path.replace("{id}", id);
        let range = if report {
            "from=2026-01-01&to=2026-01-31&"
        } else {
            ""
        };
        for (value, expected) in [(1, 200), (top, 200), (0, 400), (top + 1, 400), (-1, 400)] {
            let req = test::TestRequest::get()
                .uri(&format!("{uri}?{range}limit={value}"))
                .insert_header(t.bearer())
                .to_request();
            let (status, _, body) = call(&app, req).await;
            assert_eq!(status, expected, "{method} {uri}?limit={value}: {body}");
        }
    }
    assert_eq!(lists, 11, "the paginated lists");
}

#[actix_web::test]
async fn request_fields_say_what_the_validation_accepts() {
    let t = TestApp::new().await;
    let doc = document(&t).await;
    for (method, path, op) in operations(&doc) {
        for param in op["parameters"].as_array().into_iter().flatten() {
            let schema = &param["schema"];
            if param["in"] == "path" {
                assert!(
                    schema["format"] == "uuid" || schema["pattern"].is_string(),
                    "{method} {path}: path parameter {} is any string",
                    param["name"]
                );
            }
        }
        let body = &op["requestBody"]["content"]["application/json"]["schema"];
        if body.is_null() {
            continue;
        }
        let fields = properties(&doc, body);
        assert!(!fields.is_empty(), "{method} {path}: body without fields");
        for (name, schema, _) in fields {
            let what = format!("{method} {path}: body field {name}");
            if name.ends_with("_id") {
                assert_eq!(schema["format"], "uuid", "{what}");
            }
            if name.ends_with("_ids") {
                assert_eq!(schema["items"]["format"], "uuid", "{what}");
            }
            if types(schema).contains(&"string") {
                let constrained = ["format", "pattern", "enum", "maxLength"]
                    .iter()
                    .any(|k| schema.get(*k).is_some());
                assert!(constrained, "{what} is any string: {schema}");
            }
        }
    }
}

#[actix_web::test]
async fn required_fields_and_enums_match_the_validation() {
    let t = TestApp::new().await;
    let doc = document(&t).await;
    let required = |method: &str, path: &str| -> Vec<String> {
        let body =
            &doc["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"];
        properties(&doc, body)
            .into_iter()
            .filter(|(_, _, required)| *required)
            .map(|(name, _, _)| name)
            .collect()
    };
    let find = format!("{I}/triggers/clients/find");
    let subscribe = format!("{I}/webhooks/subscribe");
    assert_eq!(required("post", "/api/clients"), ["name"]);
    assert_eq!(required("post", "/api/projects"), ["name"]);
    assert_eq!(required("post", "/api/projects/{id}/tasks"), ["name"]);
    assert_eq!(required("post", "/api/tags"), ["name"]);
    assert_eq!(required("post", "/api/time-entries"), ["start", "end"]);
    assert_eq!(required("post", &find), ["workspace_id", "name"]);
    assert_eq!(required("post", &subscribe), ["url", "events"]);
    for path in [
        "/api/time-entries/start",
        "/api/clients/{id}",
        "/api/time-entries/{id}",
    ] {
        let method = if path.ends_with("start") {
            "post"
        } else {
            "patch"
        };
        assert!(required(method, path).is_empty(), "{method} {path}");
    }
    // The start body is optional (no body at all is fine), but when present it is an object.
    let start = &doc["paths"]["/api/time-entries/start"]["post"]["requestBody"];
    assert_eq!(start["required"], false);
    assert_eq!(
        resolve(&doc, &start["content"]["application/json"]["schema"])["type"],
        "object"
    );

    for method in ["post", "patch"] {
        let path = if method == "post" {
            "/api/clients"
        } else {
            "/api/clients/{id}"
        };
        let field = |name| body_field(&doc, method, path, name)["enum"].clone();
        assert_eq!(field("type"), json!(["company", "individual", null]));
        assert_eq!(field("status"), json!(["active", "inactive", null]));
        let currencies = field("currency");
        assert!(currencies.as_array().unwrap().contains(&json!("EUR")));
        assert!(!currencies.as_array().unwrap().contains(&json!("XYZ")));
    }
    let events = body_field(&doc, "post", &subscribe, "events");
    assert_eq!(events["minItems"], 1);
    assert_eq!(
        events["items"]["enum"],
        json!([
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
            "INVOICE_CREATED",
            "INVOICE_ISSUED",
            "INVOICE_VOIDED",
            "INVOICE_PAID",
            "INVOICE_OVERDUE"
        ])
    );
}

/// A request body built around one field's value.
type BodyWith = Box<dyn Fn(&str) -> Value>;

/// A text of exactly `len` characters that starts with `tag` (to keep names unique).
fn text_of(tag: &str, len: usize) -> String {
    format!("{tag}{}", "a".repeat(len - tag.len()))
}

#[actix_web::test]
async fn documented_maximum_lengths_are_the_enforced_ones() {
    let t = TestApp::new().await;
    let doc = document(&t).await;
    let app = t.service().await;
    let find = format!("{I}/triggers/clients/find");
    let subscribe = format!("{I}/webhooks/subscribe");
    let workspace = t.workspace.id.to_string();
    // (path, field, body with the field set to `value`)
    let cases: Vec<(&str, &str, BodyWith)> = vec![
        ("/api/clients", "name", Box::new(|v| json!({"name": v}))),
        (
            "/api/clients",
            "phone",
            Box::new(|v| json!({"name": format!("p{}", v.len()), "phone": v})),
        ),
        (
            "/api/clients",
            "address",
            Box::new(|v| json!({"name": format!("a{}", v.len()), "address": v})),
        ),
        (
            "/api/clients",
            "note",
            Box::new(|v| json!({"name": format!("n{}", v.len()), "note": v})),
        ),
        ("/api/projects", "name", Box::new(|v| json!({"name": v}))),
        ("/api/tags", "name", Box::new(|v| json!({"name": v}))),
        (
            "/api/time-entries/start",
            "description",
            Box::new(|v| json!({"description": v})),
        ),
        (
            &find,
            "name",
            Box::new(move |v| json!({"workspace_id": workspace, "name": v})),
        ),
        (
            &subscribe,
            "description",
            Box::new(|v| {
                json!({
                    "url": "https://hooks.example.com/h", "events": ["CLIENT_CREATED"], "description": v
                })
            }),
        ),
    ];
    for (path, field, body) in cases {
        let max = body_field(&doc, "post", path, field)["maxLength"]
            .as_u64()
            .unwrap_or_else(|| panic!("POST {path} {field} has no maxLength"))
            as usize;
        for (len, accepted) in [(max, true), (max + 1, false)] {
            let value = text_of(&format!("{field}{len}-"), len);
            let req = test::TestRequest::post()
                .uri(path)
                .insert_header(t.bearer())
                .set_json(body(&value))
                .to_request();
            let (status, _, answer) = call(&app, req).await;
            assert_eq!(
                (200..300).contains(&status),
                accepted,
                "POST {path} with {field} of {len} characters (maxLength {max}): {status} {answer}"
            );
            if !accepted {
                assert_eq!(status, 400, "POST {path} {field} {len}: {answer}");
            }
        }
    }

    // The longest e-mail address the document admits (254 characters) is accepted; one more is not.
    let email = body_field(&doc, "post", "/api/clients", "email");
    assert_eq!(email["maxLength"], 254);
    let domain = format!("{}.{}.{}", "d".repeat(63), "e".repeat(63), "f".repeat(61));
    for (local, accepted) in [("l".repeat(64), true), ("l".repeat(65), false)] {
        let address = format!("{local}@{domain}");
        let req = test::TestRequest::post()
            .uri("/api/clients")
            .insert_header(t.bearer())
            .set_json(json!({"name": format!("mail{}", address.len()), "email": address}))
            .to_request();
        let (status, _, answer) = call(&app, req).await;
        assert_eq!(
            status,
            if accepted { 201 } else { 400 },
            "{} characters: {answer}",
            address.len()
        );
    }
}

/// The validator's release the test installs from PyPI (into the test target directory, once).
const SPEC_VALIDATOR: &str = "openapi-spec-validator==0.9.0";

/// A directory holding `openapi-spec-validator`, installed on first use with pip.
fn spec_validator() -> std::path::PathBuf {
    timetrack_testkit::python_package(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
        SPEC_VALIDATOR,
        "openapi_spec_validator",
    )
}

#[actix_web::test]
async fn the_served_document_passes_an_independent_openapi_validator() {
    let t = TestApp::new().await;
    let doc = document(&t).await;
    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("openapi.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let out = std::process::Command::new("python3")
        .args([
            "-m",
            "openapi_spec_validator",
            "--schema",
            "3.1",
            "--validation-errors",
            "all",
        ])
        .arg(&file)
        .env("PYTHONPATH", spec_validator())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openapi-spec-validator refused the document:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[actix_web::test]
async fn operation_ids_are_unique_and_the_version_is_the_services() {
    let t = TestApp::new().await;
    let doc = document(&t).await;
    let mut seen = BTreeSet::new();
    for (method, path, op) in operations(&doc) {
        let id = op["operationId"].as_str().unwrap_or_default().to_owned();
        assert!(!id.is_empty(), "{method} {path} has no operationId");
        assert!(
            seen.insert(id.clone()),
            "{method} {path}: {id} is used twice"
        );
    }
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(doc["servers"][0]["url"], "/");
}

/// `X-Commit-Position` (docs/operations.md, "Reads from a replica") is documented as a header of
/// every write's 2xx answers, not of the two searches, which only read. (A read's request header
/// of the same name is described in docs/operations.md, not as a parameter: Schemathesis's
/// coverage phase sends `0` and an empty value as valid for any header pattern, which the service
/// refuses with 400.)
#[actix_web::test]
async fn commit_positions_are_documented_on_every_writes_success() {
    let t = TestApp::new().await;
    let doc = document(&t).await;
    let mut documented = 0;
    for (method, path, op) in operations(&doc) {
        let writes = method != "get" && !path.ends_with("/find");
        for (status, response) in op["responses"].as_object().unwrap() {
            let has = response["headers"].get("X-Commit-Position").is_some();
            assert_eq!(
                has,
                writes && status.starts_with('2'),
                "{method} {path} {status}"
            );
            documented += usize::from(has);
        }
    }
    assert!(documented > 30, "{documented}");
}
