//! `GET /api/openapi.json`, continued: the other formats' media types and required parameters.

use serde_json::Value;

use crate::openapi::{document, operations, resolve};
use crate::support::{TestApp, call, keyed};

/// Every `format` an operation takes has its media type among the 200's contents (a generated
/// client decodes the answer by it), and a query parameter the operation cannot do without is
/// marked required (the summary's `group_by`, shared with the other reports, which ignore it).
#[actix_web::test]
async fn other_formats_have_their_media_types_and_required_parameters_are_marked() {
    let t = TestApp::new().await;
    let doc = document(&t).await;
    let media = |format: &str| match format {
        "json" => "application/json",
        "csv" => "text/csv",
        "pdf" => "application/pdf",
        other => panic!("a format without a media type here: {other}"),
    };
    let mut checked = 0;
    for (method, path, op) in operations(&doc) {
        let Some(format) = op["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"] == "format")
        else {
            continue;
        };
        let schema = resolve(&doc, &format["schema"]);
        let mut formats: Vec<String> = schema["enum"]
            .as_array()
            .map(|e| {
                e.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if formats.is_empty() {
            let pattern = schema["pattern"]
                .as_str()
                .unwrap_or_else(|| panic!("{path}: {schema}"));
            let inner = pattern.trim_start_matches("^(").trim_end_matches(")$");
            formats = inner.split('|').map(str::to_owned).collect();
        }
        let content = op["responses"]["200"]["content"]
            .as_object()
            .unwrap_or_else(|| panic!("{method} {path}: no 200 content"));
        for format in formats.iter().filter(|f| !f.is_empty()) {
            assert!(
                content.contains_key(media(format)),
                "{method} {path}: format={format} answers {}, not documented: {:?}",
                media(format),
                content.keys().collect::<Vec<_>>()
            );
        }
        checked += 1;
    }
    assert!(checked >= 4, "the reports and the invoice take a format");

    let summary = &doc["paths"]["/api/reports/summary"]["get"]["parameters"];
    let required: Vec<&str> = summary
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["required"] == true)
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(required, ["from", "to", "group_by"]);
    // As the server decides it.
    let app = t.service().await;
    let (status, _, body) = call(
        &app,
        keyed(
            "GET",
            "/api/reports/summary?from=2026-01-01&to=2026-01-31",
            &t.bearer().1,
            None,
        ),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    // An event's payload, in the feed and in a delivery's detail, is one of the catalog's.
    for component in ["FeedEventObject", "DeliveryDetailObject"] {
        // Its own properties, or those of an `allOf` part (a flattened struct).
        let schema = &doc["components"]["schemas"][component];
        let payload = std::iter::once(schema)
            .chain(schema["allOf"].as_array().into_iter().flatten())
            .map(|part| &part["properties"]["payload"])
            .find(|p| !p.is_null())
            .unwrap_or(&Value::Null);
        let refs: Vec<&str> = payload["anyOf"]
            .as_array()
            .unwrap_or_else(|| panic!("{component}: {payload}"))
            .iter()
            .filter_map(|r| r["$ref"].as_str())
            .collect();
        assert_eq!(refs.len(), 6, "{component}: {payload}");
        for target in refs {
            let name = target.trim_start_matches("#/components/schemas/");
            assert!(
                doc["components"]["schemas"][name]["properties"].is_object(),
                "{component}: {target}"
            );
        }
    }
    // A query string cannot carry a JSON null: no query parameter's schema admits one.
    for (method, path, op) in operations(&doc) {
        for parameter in op["parameters"].as_array().into_iter().flatten() {
            if parameter["in"] != "query" {
                continue;
            }
            let schema = resolve(&doc, &parameter["schema"]);
            let text = schema.to_string();
            assert!(
                !text.contains("\"null\"")
                    && !schema["enum"]
                        .as_array()
                        .is_some_and(|e| e.contains(&Value::Null)),
                "{method} {path} ?{}: {text}",
                parameter["name"]
            );
        }
    }
    let detailed = &doc["paths"]["/api/reports/detailed"]["get"]["parameters"];
    assert!(
        detailed
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "group_by" && p["required"] == false)
    );
}
