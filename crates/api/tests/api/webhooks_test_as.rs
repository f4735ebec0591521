//! A test delivery sent as another event type (`subscriptions.md` section 3): its body is that
//! type's catalog sample, and a resend of it is a webhook test.

use serde_json::{Value, json};

use crate::support::{TestApp, call, error_of};
use crate::webhooks_operate::{colleague, request, subscribed};

#[actix_web::test]
async fn a_test_can_be_sent_as_another_type_with_that_types_catalog_sample() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let id = subscribed(&t, &app, "https://hooks.example.com/typed").await;
    let test = |auth: &str, id: &str, body: Value| {
        request("POST", auth, &format!("/{id}/test"), Some(body))
    };

    let (status, _, body) = call(
        &app,
        test(&auth, &id, json!({"event_type": "CLIENT_UPDATED"})),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let delivery = &body["delivery"];
    assert_eq!(
        (&delivery["kind"], &delivery["event_type"]),
        (&json!("test"), &json!("CLIENT_UPDATED"))
    );
    let shown = delivery["id"].as_str().unwrap();
    let (_, _, detail) = call(
        &app,
        request("GET", &auth, &format!("/{id}/deliveries/{shown}"), None),
    )
    .await;
    let sample: Value = serde_json::from_str(&timetrack_domain::payload::samples::body(
        timetrack_domain::model::EventType::ClientUpdated,
    ))
    .unwrap();
    assert_eq!(detail["payload"], sample, "the catalog's sample");
    // Listed and filtered as the type it is sent as; its event stays a test.
    for (filter, found) in [("CLIENT_UPDATED", 1), ("WEBHOOK_TEST", 0)] {
        let (_, _, page) = call(
            &app,
            request(
                "GET",
                &auth,
                &format!("/{id}/deliveries?event_type={filter}"),
                None,
            ),
        )
        .await;
        assert_eq!(
            page["data"].as_array().unwrap().len(),
            found,
            "{filter}: {page}"
        );
    }
    assert_eq!(
        t.scalar(&format!(
            "SELECT count(*) AS n FROM events e JOIN deliveries d ON d.event_id = e.id \
             WHERE d.subscription_id = '{id}' AND e.event_type = 'WEBHOOK_TEST' \
             AND e.sent_as = 'CLIENT_UPDATED'"
        ))
        .await,
        1
    );

    // Empty, absent or WEBHOOK_TEST: the plain test.
    for body in [
        json!({}),
        json!({"event_type": ""}),
        json!({"event_type": "WEBHOOK_TEST"}),
    ] {
        let (status, _, answer) = call(&app, test(&auth, &id, body.clone())).await;
        assert_eq!(status, 202, "{body}: {answer}");
        assert_eq!(answer["delivery"]["event_type"], "WEBHOOK_TEST", "{body}");
    }
    // Refused, and nothing queued.
    let count = format!("SELECT count(*) AS n FROM deliveries WHERE subscription_id = '{id}'");
    let before = t.scalar(&count).await;
    for (body, expected) in [
        (
            json!({"event_type": "NOPE"}),
            json!({"error": "Invalid event type: NOPE"}),
        ),
        (
            json!({"event_type": 5}),
            json!({"error": "Invalid JSON body"}),
        ),
    ] {
        let (status, _, answer) = call(&app, test(&auth, &id, body.clone())).await;
        assert_eq!((status, error_of(&answer)), (400, expected), "{body}");
    }
    assert_eq!(t.scalar(&count).await, before);

    // A member may not be sent an invoice event, as they may not subscribe to one.
    let eve = colleague(&t).await;
    let (status, _, made) = call(
        &app,
        request(
            "POST",
            &eve,
            "/subscribe",
            Some(json!({"url": "https://hooks.example.com/eve", "events": ["CLIENT_CREATED"]})),
        ),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let hers = made["webhook"]["id"].as_str().unwrap().to_owned();
    let (status, _, _) = call(
        &app,
        test(&eve, &hers, json!({"event_type": "INVOICE_CREATED"})),
    )
    .await;
    assert_eq!(status, 403);
    let (status, _, _) = call(
        &app,
        test(&auth, &id, json!({"event_type": "INVOICE_CREATED"})),
    )
    .await;
    assert_eq!(status, 202, "the owner may");
}

#[actix_web::test]
async fn a_resend_of_a_test_sent_as_another_type_is_a_webhook_test() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let id = subscribed(&t, &app, "https://hooks.example.com/typed-resend").await;
    let (_, _, body) = call(
        &app,
        request(
            "POST",
            &auth,
            &format!("/{id}/test"),
            Some(json!({"event_type": "TIMER_STARTED"})),
        ),
    )
    .await;
    let shown = body["delivery"]["id"].as_str().unwrap().to_owned();
    let (status, _, again) = call(
        &app,
        request(
            "POST",
            &auth,
            &format!("/{id}/deliveries/{shown}/resend"),
            None,
        ),
    )
    .await;
    assert_eq!(status, 202, "{again}");
    assert_eq!(
        (&again["delivery"]["kind"], &again["delivery"]["event_type"]),
        (&json!("resend"), &json!("WEBHOOK_TEST")),
        "a resend, which has retries, never sends a sample as a real event"
    );
    // NUL is refused.
    let (status, _, body) = call(
        &app,
        request(
            "GET",
            &auth,
            &format!("/{id}/deliveries?entity_id=a%00b"),
            None,
        ),
    )
    .await;
    assert_eq!(
        (status, error_of(&body)),
        (
            400,
            json!({"error": "entity_id must not contain NUL characters"})
        )
    );
}
