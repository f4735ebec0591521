//! The integration guide's examples are what the service really answers: every JSON block after a
//! `response: METHOD PATH STATUS` marker comment is compared, key by key and type by type, with the
//! live answer to the request the guide describes.

use actix_web::test;
use serde_json::{Value, json};

use crate::support::{TestApp, call};

struct Example {
    method: String,
    path: String,
    status: u16,
    without_key: bool,
    body: Value,
}

fn guide() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/integration-guide.md"
    ))
    .unwrap()
}

/// The JSON block after each marker `<!-- {kind}: ... -->`, with the marker's words.
fn blocks(text: &str, kind: &str) -> Vec<(Vec<String>, Value)> {
    let marker = format!("<!-- {kind}: ");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(&marker) {
        let after = &rest[start + marker.len()..];
        let end = after.find(" -->").unwrap();
        let words = after[..end].split_whitespace().map(str::to_owned).collect();
        let code = &after[end..];
        let open = code.find("```json\n").unwrap() + "```json\n".len();
        let close = code[open..].find("\n```").unwrap();
        let body: Value = serde_json::from_str(&code[open..open + close])
            .unwrap_or_else(|e| panic!("example after {marker}{}: {e}", &after[..end]));
        out.push((words, body));
        rest = &code[open + close..];
    }
    out
}

fn examples() -> Vec<Example> {
    blocks(&guide(), "response")
        .into_iter()
        .map(|(words, body)| Example {
            method: words[0].clone(),
            path: words[1].clone(),
            status: words[2].parse().unwrap(),
            without_key: words.get(3).is_some_and(|w| w == "no-key"),
            body,
        })
        .collect()
}

fn request_body(path: &str) -> Value {
    blocks(&guide(), "request")
        .into_iter()
        .find(|(words, _)| words[1] == path)
        .map(|(_, body)| body)
        .unwrap_or_else(|| panic!("no request example for {path}"))
}

/// Same keys in the same order, same JSON types (null matching anything), recursively; arrays
/// compare their first elements.
fn assert_same_shape(documented: &Value, real: &Value, at: &str) {
    match (documented, real) {
        (Value::Object(d), Value::Object(r)) => {
            let dk: Vec<&String> = d.keys().collect();
            let rk: Vec<&String> = r.keys().collect();
            assert_eq!(dk, rk, "keys at {at}");
            for (key, value) in d {
                assert_same_shape(value, &r[key], &format!("{at}.{key}"));
            }
        }
        (Value::Array(d), Value::Array(r)) => {
            assert_eq!(d.is_empty(), r.is_empty(), "emptiness at {at}");
            if let (Some(d0), Some(r0)) = (d.first(), r.first()) {
                assert_same_shape(d0, r0, &format!("{at}[0]"));
            }
        }
        // Optional fields are `string | null`: a documented value may be null in a real answer and
        // the other way round (the sample-equality test pins the documented values themselves).
        (Value::Null, _) | (_, Value::Null) => {}
        (d, r) => assert_eq!(
            std::mem::discriminant(d),
            std::mem::discriminant(r),
            "type at {at}: {d} vs {r}"
        ),
    }
}

#[actix_web::test]
async fn every_documented_response_matches_the_live_one() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let req = test::TestRequest::post()
        .uri("/api/clients")
        .insert_header(t.bearer())
        .set_json(json!({"name": "Acme Corporation", "email": "billing@acme.example"}))
        .to_request();
    let (status, _, client) = call(&app, req).await;
    assert_eq!(status, 201);
    let req = test::TestRequest::post()
        .uri("/api/projects")
        .insert_header(t.bearer())
        .set_json(json!({"name": "Website", "client_id": client["id"]}))
        .to_request();
    assert_eq!(call(&app, req).await.0, 201);

    let examples = examples();
    assert!(examples.len() >= 7, "found {} examples", examples.len());
    let mut webhook_id = String::new();
    for example in examples {
        let mut uri = example.path.clone();
        let mut body = None;
        match (example.method.as_str(), example.path.as_str()) {
            ("POST", p) if p.ends_with("/clients/find") => {
                let mut b = request_body(p);
                b["workspace_id"] = json!(t.workspace.id.to_string());
                body = Some(b);
            }
            ("POST", p) if p.ends_with("/webhooks/subscribe") || p.ends_with("/projects/find") => {
                body = Some(request_body(p))
            }
            ("DELETE", p) if p.ends_with("/webhooks/{id}") => uri = p.replace("{id}", &webhook_id),
            _ => {}
        }
        let mut req = test::TestRequest::default()
            .method(example.method.parse().unwrap())
            .uri(&uri);
        if !example.without_key {
            req = req.insert_header(t.bearer());
        }
        if let Some(body) = body {
            req = req.set_json(body);
        }
        let (status, _, real) = call(&app, req.to_request()).await;
        let label = format!("{} {} {}", example.method, example.path, example.status);
        assert_eq!(status, example.status, "{label}: {real}");
        assert_same_shape(&example.body, &real, &label);
        if example.path.ends_with("/webhooks/subscribe") {
            webhook_id = real["webhook"]["id"].as_str().unwrap().to_owned();
            assert_eq!(real["webhook"]["url"], example.body["webhook"]["url"]);
            assert_eq!(real["webhook"]["events"], example.body["webhook"]["events"]);
        }
    }
    assert!(
        !webhook_id.is_empty(),
        "the guide subscribes before it unsubscribes"
    );
}

#[core::prelude::v1::test]
fn the_documented_samples_are_the_real_samples() {
    use timetrack_domain::payload::{EntryAction, samples};
    let by_path = |path: &str| {
        examples()
            .into_iter()
            .find(|e| e.path.ends_with(path))
            .unwrap()
            .body
    };
    assert_eq!(
        by_path("time-entries/stop/fallback"),
        json!([samples::time_entry(EntryAction::StopTimer)])
    );
    assert_eq!(by_path("clients/fallback"), json!([samples::client()]));
}
