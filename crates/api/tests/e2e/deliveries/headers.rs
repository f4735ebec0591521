//! A webhook's custom headers, from the real binary to a real HTTPS receiver: sent with every
//! delivery and test, shown masked in the request as sent, never in the server's log.

use super::*;

const BEARER: &str = "Bearer tok_5NnqV7fR2kWm9yXcQ2";

#[tokio::test(flavor = "multi_thread")]
async fn custom_headers_go_out_with_every_delivery_and_are_never_shown() {
    // Everything the service logs, down to debug.
    let s = Setup::with(&[("TIMETRACK_LOG", "debug")]).await;
    s.receiver.respond("/h", Behaviour::Respond(200, vec![]));
    let (status, body) = s
        .post(
            "/api/integrations/automation/webhooks/subscribe",
            json!({
                "url": s.receiver.url("/h"),
                "events": ["CLIENT_CREATED"],
                "headers": {"Authorization": BEARER, "X-Tenant": "acme"},
            }),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let id = body["webhook"]["id"].as_str().unwrap().to_owned();
    let secret = body["webhook"]["secret"].as_str().unwrap().to_owned();

    // An event's delivery: signed as ever, with the custom headers after the delivery's own.
    let (status, client) = s.post("/api/clients", json!({"name": "Acme"})).await;
    assert_eq!(status, 201, "{client}");
    let received = received_until(&s, Duration::from_secs(10), |r| !r.is_empty()).await;
    let event = on(&received, "/h")[0];
    assert_eq!(event.header("authorization"), Some(BEARER));
    assert_eq!(event.header("x-tenant"), Some("acme"));
    assert_eq!(event.header("x-webhook-event"), Some("CLIENT_CREATED"));
    assert_signed(event, &secret);
    assert_verified_by_standard_webhooks(event, &secret);

    // A test delivery sends them too; the request as sent shows them masked.
    let base = format!("/api/integrations/automation/webhooks/{id}");
    let (status, queued) = s.post(&format!("{base}/test"), json!({})).await;
    assert_eq!(status, 202, "{queued}");
    let received = received_until(&s, Duration::from_secs(10), |r| on(r, "/h").len() == 2).await;
    let test = on(&received, "/h")[1];
    assert_eq!(test.header("x-webhook-event"), Some("WEBHOOK_TEST"));
    assert_eq!(test.header("authorization"), Some(BEARER));
    let detail = settled(&s, &id, queued["delivery"]["id"].as_str().unwrap()).await;
    let shown = &detail["attempts_log"][0]["request_headers"];
    assert_eq!(shown["authorization"], "Bear…(29)", "{shown}");
    assert_eq!(shown["x-tenant"], "…(4)", "{shown}");
    assert_eq!(
        shown["webhook-signature"].as_str(),
        test.header("webhook-signature")
    );
    assert_eq!(shown.as_object().unwrap().len(), 10, "{shown}");

    // Changed: the next delivery carries the new ones only; the attempt before keeps what it
    // was sent with.
    let (status, changed) = s
        .send(
            "PATCH",
            &base,
            Some(json!({"headers": {"X-Api-Key": "key_0123456789abcdef"}})),
        )
        .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(
        changed["webhook"]["headers"],
        json!({"X-Api-Key": "key_…(20)"})
    );
    let (status, _) = s.post("/api/clients", json!({"name": "Beta"})).await;
    assert_eq!(status, 201);
    let received = received_until(&s, Duration::from_secs(10), |r| on(r, "/h").len() == 3).await;
    let after = on(&received, "/h")[2];
    assert_eq!(after.header("x-api-key"), Some("key_0123456789abcdef"));
    assert_eq!(after.header("authorization"), None);
    let detail = settled(&s, &id, queued["delivery"]["id"].as_str().unwrap()).await;
    assert_eq!(
        detail["attempts_log"][0]["request_headers"]["authorization"],
        "Bear…(29)"
    );

    // No answer and no line of the log holds a value.
    let log = s.server.log().expect("the server logs to a file");
    assert!(log.contains(&id), "the log is this server's:\n{log}");
    for value in ["tok_5NnqV7fR2kWm9yXcQ2", "key_0123456789abcdef"] {
        assert!(!log.contains(value), "{value} in the log:\n{log}");
    }
    let all = s.get("/api/integrations/automation/webhooks").await;
    assert!(!all.to_string().contains("key_0123"), "{all}");
}
