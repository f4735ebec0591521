//! Custom headers per webhook (`integrations.md` section 4): set on subscribe and PATCH, checked,
//! stored sealed, and answered only masked.

use serde_json::{Value, json};

use crate::support::{TestApp, call};
use crate::webhooks_operate::request;

const BEARER: &str = "Bearer tok_5NnqV7fR2kWm9yXcQ2";

fn subscribe_body(headers: &Value) -> Value {
    json!({
        "url": "https://hooks.example.com/h",
        "events": ["CLIENT_CREATED"],
        "headers": headers,
    })
}

#[actix_web::test]
async fn headers_are_kept_sealed_and_shown_masked_in_every_answer() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let (status, _, body) = call(
        &app,
        request(
            "POST",
            &auth,
            "/subscribe",
            Some(subscribe_body(
                &json!({"Authorization": BEARER, "X-Tenant": "acme"}),
            )),
        ),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let masked = json!({"Authorization": "Bear…(29)", "X-Tenant": "…(4)"});
    assert_eq!(body["webhook"]["headers"], masked);
    assert!(body["webhook"]["secret"].is_string());
    let id = body["webhook"]["id"].as_str().unwrap().to_owned();

    let (_, _, got) = call(&app, request("GET", &auth, &format!("/{id}"), None)).await;
    assert_eq!(got["webhook"]["headers"], masked);
    let (_, _, listed) = call(&app, request("GET", &auth, "", None)).await;
    assert_eq!(listed["webhooks"][0]["headers"], masked);
    for shown in [&body, &got, &listed] {
        assert!(!shown.to_string().contains("tok_5Nn"), "{shown}");
    }
    // At rest, sealed like the signing secret.
    let stored = t
        .texts("SELECT headers AS t FROM webhook_subscriptions")
        .await;
    assert!(stored[0].starts_with("tt1:"), "{stored:?}");
    assert!(
        !stored[0].contains("tok_5Nn") && !stored[0].contains("acme"),
        "{stored:?}"
    );

    // PATCH replaces all of them; fields not named stay.
    let (status, _, patched) = call(
        &app,
        request(
            "PATCH",
            &auth,
            &format!("/{id}"),
            Some(json!({"headers": {"X-Api-Key": "key_0123456789abcdef"}})),
        ),
    )
    .await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(
        patched["webhook"]["headers"],
        json!({"X-Api-Key": "key_…(20)"})
    );
    let (status, _, patched) = call(
        &app,
        request(
            "PATCH",
            &auth,
            &format!("/{id}"),
            Some(json!({"description": "Zap"})),
        ),
    )
    .await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(
        patched["webhook"]["headers"],
        json!({"X-Api-Key": "key_…(20)"})
    );
    // Null (or {}) removes them.
    for none in [Value::Null, json!({})] {
        let (status, _, patched) = call(
            &app,
            request(
                "PATCH",
                &auth,
                &format!("/{id}"),
                Some(json!({"headers": none})),
            ),
        )
        .await;
        assert_eq!(status, 200, "{patched}");
        assert_eq!(patched["webhook"]["headers"], json!({}));
    }
    let stored = t
        .texts("SELECT coalesce(headers, 'none') AS t FROM webhook_subscriptions")
        .await;
    assert_eq!(stored, ["none"]);
    // A change of the headers is audited by name, never by value.
    let audit = t
        .texts(
            "SELECT reason AS t FROM audit_log WHERE action = 'webhook.updated' \
             ORDER BY created_at",
        )
        .await;
    assert!(audit.iter().any(|r| r.contains("headers")), "{audit:?}");
    assert!(!audit.iter().any(|r| r.contains("key_0123")), "{audit:?}");
}

#[actix_web::test]
async fn headers_that_break_a_rule_are_400_and_change_nothing() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let eleven: serde_json::Map<String, Value> =
        (0..11).map(|i| (format!("X-H{i}"), json!("v"))).collect();
    let cases = [
        (
            json!({"Webhook-Id": "x"}),
            "Webhook-Id is set by the delivery",
        ),
        (json!({"x-webhook-event": "x"}), "x-webhook-event is set"),
        (json!({"Content-Type": "text/plain"}), "Content-Type is set"),
        (json!({"Host": "evil.example"}), "Host is set"),
        (json!({"Transfer-Encoding": "chunked"}), "Transfer-Encoding"),
        (json!({"Connection": "close"}), "Connection is set"),
        (json!({"Bad Name": "x"}), "is not a header name"),
        (json!({"X-A": "a\r\nX-Injected: 1"}), "control character"),
        (json!({"X-A": " padded"}), "whitespace"),
        (json!({"X-A": "v".repeat(1001)}), "at most 1000"),
        (json!({"X-A": 5}), "must be a string"),
        (json!({"X-A": "1", "x-a": "2"}), "twice"),
        (json!(["X-A", "1"]), "must be an object"),
        (json!("X-A: 1"), "must be an object"),
        (Value::Object(eleven), "at most 10"),
    ];
    for (headers, detail) in &cases {
        let (status, _, body) = call(
            &app,
            request("POST", &auth, "/subscribe", Some(subscribe_body(headers))),
        )
        .await;
        assert_eq!(status, 400, "{headers}: {body}");
        assert_eq!(body["error"], "Invalid headers", "{headers}: {body}");
        assert!(
            body["detail"].as_str().unwrap().contains(detail),
            "{headers}: {body}"
        );
    }
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM webhook_subscriptions")
            .await,
        0
    );
    // The same rules on PATCH, and the webhook is left as it was.
    let (status, _, body) = call(
        &app,
        request(
            "POST",
            &auth,
            "/subscribe",
            Some(subscribe_body(&json!({"X-Tenant": "acme"}))),
        ),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let id = body["webhook"]["id"].as_str().unwrap().to_owned();
    for (headers, _) in &cases {
        let (status, _, body) = call(
            &app,
            request(
                "PATCH",
                &auth,
                &format!("/{id}"),
                Some(json!({"headers": headers, "description": "changed"})),
            ),
        )
        .await;
        assert_eq!(status, 400, "{headers}: {body}");
    }
    let (_, _, got) = call(&app, request("GET", &auth, &format!("/{id}"), None)).await;
    assert_eq!(got["webhook"]["headers"], json!({"X-Tenant": "…(4)"}));
    assert_eq!(got["webhook"]["description"], Value::Null);
    // Ten, a 1,000-byte value, a tab inside, UTF-8 and a User-Agent are fine.
    let ten: serde_json::Map<String, Value> =
        (0..10).map(|i| (format!("X-H{i}"), json!("v"))).collect();
    for headers in [
        Value::Object(ten),
        json!({"X-A": "v".repeat(1000), "User-Agent": "acme/1", "X-B": "a\tb é"}),
    ] {
        let (status, _, body) = call(
            &app,
            request(
                "PATCH",
                &auth,
                &format!("/{id}"),
                Some(json!({"headers": headers})),
            ),
        )
        .await;
        assert_eq!(status, 200, "{headers}: {body}");
    }
}
