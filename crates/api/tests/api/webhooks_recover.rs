//! Testing, rotating and resending, and the delivery log: what an owner does to see and recover a
//! webhook's deliveries (`subscriptions.md` sections 3, 4 and 6; replays are in
//! `webhooks_replay`). No worker runs here, so what is queued stays pending.

use serde_json::{Value, json};

use crate::support::{TestApp, call, error_of};
use crate::webhooks_operate::{colleague, request, run_all, subscribed};

pub(crate) const E0: &str = "00000000-0000-0000-0000-0000000000e0";
pub(crate) const E1: &str = "00000000-0000-0000-0000-0000000000e1";
pub(crate) const E2: &str = "00000000-0000-0000-0000-0000000000e2";
pub(crate) const E3: &str = "00000000-0000-0000-0000-0000000000e3";
pub(crate) const E4: &str = "00000000-0000-0000-0000-0000000000e4";

/// Webhook `id` made a day ago; events `E1`..`E4` (CLIENT_CREATED, an hour apart from 5 hours
/// ago) and its deliveries of them: E1 delivered (one attempt answered 200), E2 failed (two
/// attempts answered 500), E3 pending, E4 never queued (as while disabled); and `E0`, two days
/// old, from before the webhook.
pub(crate) async fn history(t: &TestApp, id: &str) {
    let ws = t.workspace.id;
    let mut sql = format!(
        "UPDATE webhook_subscriptions SET created_at = now() - interval '1 day' \
         WHERE id = '{id}'; \
         INSERT INTO events (id, workspace_id, event_type, body, created_at) VALUES \
         ('{E0}', '{ws}', 'CLIENT_CREATED', '{{}}', now() - interval '2 days'); "
    );
    for (n, event) in [E1, E2, E3, E4].iter().enumerate() {
        let hours = 5 - n;
        sql.push_str(&format!(
            "INSERT INTO events (id, workspace_id, event_type, body, created_at) VALUES \
             ('{event}', '{ws}', 'CLIENT_CREATED', '{{\"n\": {n}, \"z\": 1, \"a\": 2}}', \
              now() - interval '{hours} hours'); "
        ));
    }
    for (event, status, attempts) in [(E1, "DELIVERED", 1), (E2, "FAILED", 2), (E3, "PENDING", 0)] {
        sql.push_str(&format!(
            "INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, attempts, \
                                     next_attempt_at, created_at, updated_at) \
             SELECT id, '{id}', workspace_id, '{status}', {attempts}, created_at, created_at, \
                    created_at FROM events WHERE id = '{event}'; "
        ));
    }
    sql.push_str(&format!(
        "INSERT INTO delivery_attempts (workspace_id, delivery_id, subscription_id, attempt, started_at, \
                                        latency_ms, status_code, error, response_excerpt) \
         SELECT d.workspace_id, d.id, d.subscription_id, a.n, d.created_at + a.n * interval '1 minute', 12, \
                a.code, a.error, a.body \
         FROM deliveries d JOIN (VALUES ('{E1}'::uuid, 1, 200, NULL, 'ok'), \
                                        ('{E2}'::uuid, 1, 500, 'HTTP 500', 'boom'), \
                                        ('{E2}'::uuid, 2, 500, 'HTTP 500', 'boom again')) \
              AS a(event, n, code, error, body) ON a.event = d.event_id \
         WHERE d.subscription_id = '{id}'"
    ));
    run_all(t, &sql).await;
}

/// The ids of the deliveries of a log page, newest first, with their event ids.
fn listed(page: &Value) -> Vec<(String, String)> {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["id"].as_str().unwrap().to_owned(),
                d["event_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[actix_web::test]
async fn the_log_pages_newest_first_with_filters_and_a_delivery_shows_its_payload_and_attempts() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let id = subscribed(&t, &app, "https://hooks.example.com/log").await;
    history(&t, &id).await;
    let get = |path: String| request("GET", &auth, &path, None);

    let (status, _, all) = call(&app, get(format!("/{id}/deliveries"))).await;
    assert_eq!(status, 200, "{all}");
    let events: Vec<String> = listed(&all).into_iter().map(|(_, e)| e).collect();
    assert_eq!(events, [E3, E2, E1], "newest first");
    assert_eq!(all["next_cursor"], Value::Null);
    let failed = &all["data"][1];
    for key in [
        "id",
        "event_id",
        "event_type",
        "kind",
        "status",
        "attempts",
        "next_attempt_at",
        "last_attempt_at",
        "last_status_code",
        "last_error",
        "created_at",
        "updated_at",
    ] {
        assert!(failed.get(key).is_some(), "{key} in {failed}");
    }
    assert_eq!(failed["kind"], "event");
    assert_eq!(failed["status"], "FAILED");
    assert_eq!(failed["next_attempt_at"], Value::Null, "not pending");
    assert_ne!(all["data"][0]["next_attempt_at"], Value::Null, "pending");

    // Pages of one, by cursor, never repeating or skipping.
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let (status, _, page) = call(
            &app,
            get(format!("/{id}/deliveries?limit=1&cursor={cursor}")),
        )
        .await;
        assert_eq!(status, 200, "{page}");
        seen.extend(listed(&page).into_iter().map(|(_, e)| e));
        match page["next_cursor"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => break,
        }
    }
    assert_eq!(seen, events);

    // Filters.
    let (_, _, empty) = call(&app, get(format!("/{id}/deliveries?status=&event_type="))).await;
    assert_eq!(listed(&empty).len(), 3, "an empty filter is no filter");
    let (_, _, only) = call(&app, get(format!("/{id}/deliveries?status=FAILED"))).await;
    assert_eq!(listed(&only).len(), 1);
    assert_eq!(only["data"][0]["event_id"], E2);
    let (_, _, none) = call(
        &app,
        get(format!("/{id}/deliveries?event_type=TIMER_STARTED")),
    )
    .await;
    assert_eq!(none["data"], json!([]));
    // Searched by event, and by entity (the ordering key the deliveries were sent with).
    let (_, _, one) = call(&app, get(format!("/{id}/deliveries?event_id={E2}"))).await;
    assert_eq!(
        listed(&one).into_iter().map(|(_, e)| e).collect::<Vec<_>>(),
        [E2]
    );
    let entity = uuid::Uuid::new_v4();
    run_all(
        &t,
        &format!(
            "UPDATE deliveries SET ordering_key = '{entity}' \
             WHERE subscription_id = '{id}' AND event_id IN ('{E1}', '{E3}')"
        ),
    )
    .await;
    let (_, _, about) = call(&app, get(format!("/{id}/deliveries?entity_id={entity}"))).await;
    assert_eq!(
        listed(&about)
            .into_iter()
            .map(|(_, e)| e)
            .collect::<Vec<_>>(),
        [E3, E1]
    );
    let upper = entity.to_string().to_uppercase();
    let (_, _, about) = call(&app, get(format!("/{id}/deliveries?entity_id={upper}"))).await;
    assert_eq!(
        listed(&about)
            .into_iter()
            .map(|(_, e)| e)
            .collect::<Vec<_>>(),
        [E3, E1],
        "any UUID spelling"
    );
    let (_, _, both) = call(
        &app,
        get(format!(
            "/{id}/deliveries?entity_id={entity}&status=DELIVERED&event_id="
        )),
    )
    .await;
    assert_eq!(
        listed(&both)
            .into_iter()
            .map(|(_, e)| e)
            .collect::<Vec<_>>(),
        [E1]
    );
    let long = "x".repeat(101);
    for (query, message) in [
        ("event_id=nope", "event_id must be a UUID"),
        (
            &format!("entity_id={long}") as &str,
            "entity_id must be at most 100 characters",
        ),
        (
            "status=LOST",
            "status must be one of PENDING, DELIVERED, FAILED, CANCELLED",
        ),
        ("event_type=NOPE", "Invalid event type: NOPE"),
        ("cursor=%%%", "invalid cursor"),
        ("limit=0", "limit must be between 1 and 200"),
    ] {
        let (status, _, body) = call(&app, get(format!("/{id}/deliveries?{query}"))).await;
        assert_eq!(
            (status, error_of(&body)),
            (400, json!({"error": message})),
            "{query}"
        );
    }

    // One delivery: the exact payload, and every attempt.
    let delivery = failed["id"].as_str().unwrap();
    let (status, _, detail) = call(&app, get(format!("/{id}/deliveries/{delivery}"))).await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["status"], "FAILED");
    let raw =
        actix_web::test::call_and_read_body(&app, get(format!("/{id}/deliveries/{delivery}")))
            .await;
    let raw = String::from_utf8_lossy(&raw);
    assert!(
        raw.contains(r#""payload":{"n": 1, "z": 1, "a": 2}"#),
        "the stored body byte for byte: {raw}"
    );
    assert_eq!(
        detail["attempts_log"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (
                a["number"].clone(),
                a["status_code"].clone(),
                a["error"].clone(),
                a["response_body"].clone(),
                a["duration_ms"].clone()
            ))
            .collect::<Vec<_>>(),
        [
            (
                json!(1),
                json!(500),
                json!("HTTP 500"),
                json!("boom"),
                json!(12)
            ),
            (
                json!(2),
                json!(500),
                json!("HTTP 500"),
                json!("boom again"),
                json!(12)
            ),
        ]
    );
    assert!(detail["attempts_log"][0]["started_at"].is_string());

    // Another webhook's delivery, an unknown or a malformed id: 404 Delivery not found.
    let other = subscribed(&t, &app, "https://hooks.example.com/other").await;
    for path in [
        format!("/{other}/deliveries/{delivery}"),
        format!("/{id}/deliveries/999999999"),
        format!("/{id}/deliveries/abc"),
        format!("/{id}/deliveries/-1"),
        format!("/{id}/deliveries/0{delivery}"),
    ] {
        let (status, _, body) = call(&app, get(path.clone())).await;
        assert_eq!(
            (status, error_of(&body)),
            (404, json!({"error": "Delivery not found"})),
            "{path}"
        );
    }
    // Another member: 404 Webhook not found for the log and the detail, whatever the delivery
    // id (the webhook is looked at first).
    let eve = colleague(&t).await;
    for path in [
        format!("/{id}/deliveries"),
        format!("/{id}/deliveries/{delivery}"),
        format!("/{id}/deliveries/abc"),
    ] {
        let (status, _, body) = call(&app, request("GET", &eve, &path, None)).await;
        assert_eq!(
            (status, error_of(&body)),
            (404, json!({"error": "Webhook not found"})),
            "{path}"
        );
    }
    // An unknown or a malformed webhook id: 404 Webhook not found, whatever the delivery id.
    for path in [
        format!("/wh_unknownunknownunknown1/deliveries/{delivery}"),
        "/wh_unknownunknownunknown1/deliveries/abc".to_owned(),
        "/not-a-webhook/deliveries/abc".to_owned(),
        format!("/not-a-webhook/deliveries/{delivery}/resend"),
    ] {
        let method = if path.ends_with("/resend") {
            "POST"
        } else {
            "GET"
        };
        let (status, _, body) = call(&app, request(method, &auth, &path, None)).await;
        assert_eq!(
            (status, error_of(&body)),
            (404, json!({"error": "Webhook not found"})),
            "{path}"
        );
    }
}

#[actix_web::test]
async fn a_test_delivery_is_queued_for_this_webhook_only_also_when_disabled() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let id = subscribed(&t, &app, "https://hooks.example.com/test").await;
    let other = subscribed(&t, &app, "https://hooks.example.com/other").await;

    let (status, _, body) = call(&app, request("POST", &auth, &format!("/{id}/test"), None)).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["success"], true);
    let delivery = &body["delivery"];
    assert_eq!(delivery["kind"], "test");
    assert_eq!(delivery["event_type"], "WEBHOOK_TEST");
    assert_eq!(delivery["status"], "PENDING");
    assert_eq!(delivery["attempts"], 0);
    let (_, _, detail) = call(
        &app,
        request(
            "GET",
            &auth,
            &format!("/{id}/deliveries/{}", delivery["id"].as_str().unwrap()),
            None,
        ),
    )
    .await;
    let payload = &detail["payload"];
    assert_eq!(
        payload.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["event", "webhook_id", "workspace_id", "timestamp"]
    );
    assert_eq!(payload["event"], "WEBHOOK_TEST");
    assert_eq!(payload["webhook_id"], id.as_str());
    assert_eq!(payload["workspace_id"], t.workspace.id.to_string());
    // To this webhook only.
    let (_, _, others) = call(
        &app,
        request("GET", &auth, &format!("/{other}/deliveries"), None),
    )
    .await;
    assert_eq!(others["data"], json!([]));

    // Disabled: still queued (to check a repaired endpoint before enabling it).
    t.execute(&format!(
        "UPDATE webhook_subscriptions SET status = 'DISABLED', disabled_reason = 'failing' WHERE id = '{id}'"
    ))
    .await;
    let (status, _, body) = call(&app, request("POST", &auth, &format!("/{id}/test"), None)).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(
        t.scalar(&format!(
            "SELECT count(*) AS n FROM deliveries WHERE subscription_id = '{id}' AND kind = 'test'"
        ))
        .await,
        2
    );

    // Not the owner's, unknown, deleted: 404.
    let eve = colleague(&t).await;
    let (status, _, body) = call(&app, request("POST", &eve, &format!("/{id}/test"), None)).await;
    assert_eq!(
        (status, error_of(&body)),
        (404, json!({"error": "Webhook not found"}))
    );
    call(&app, request("DELETE", &auth, &format!("/{other}"), None)).await;
    for target in [other.as_str(), "wh_unknownunknownunknown1", "nope"] {
        let (status, _, body) = call(
            &app,
            request("POST", &auth, &format!("/{target}/test"), None),
        )
        .await;
        assert_eq!(
            (status, error_of(&body)),
            (404, json!({"error": "Webhook not found"})),
            "{target}"
        );
    }
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM deliveries WHERE kind = 'test'")
            .await,
        2,
        "nothing more queued"
    );
}

#[actix_web::test]
async fn resend_queues_the_same_event_again_whatever_the_original_became() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let id = subscribed(&t, &app, "https://hooks.example.com/resend").await;
    history(&t, &id).await;
    let (_, _, all) = call(
        &app,
        request("GET", &auth, &format!("/{id}/deliveries"), None),
    )
    .await;
    let ids = listed(&all);
    for (delivery, event) in &ids {
        let (status, _, body) = call(
            &app,
            request(
                "POST",
                &auth,
                &format!("/{id}/deliveries/{delivery}/resend"),
                None,
            ),
        )
        .await;
        assert_eq!(status, 202, "{body}");
        let new = &body["delivery"];
        assert_eq!(new["event_id"], event.as_str(), "the same webhook-id");
        assert_eq!(new["kind"], "resend");
        assert_eq!(new["status"], "PENDING");
        assert_eq!(new["attempts"], 0, "fresh retries");
        assert_ne!(new["id"], delivery.as_str());
    }
    let (_, _, after) = call(
        &app,
        request("GET", &auth, &format!("/{id}/deliveries"), None),
    )
    .await;
    assert_eq!(listed(&after).len(), 6);

    let other = subscribed(&t, &app, "https://hooks.example.com/other").await;
    let (delivery, _) = &ids[0];
    for path in [
        format!("/{other}/deliveries/{delivery}/resend"),
        format!("/{id}/deliveries/123456789/resend"),
        format!("/{id}/deliveries/x/resend"),
    ] {
        let (status, _, body) = call(&app, request("POST", &auth, &path, None)).await;
        assert_eq!(
            (status, error_of(&body)),
            (404, json!({"error": "Delivery not found"})),
            "{path}"
        );
    }
    t.execute(&format!(
        "UPDATE webhook_subscriptions SET status = 'DISABLED', disabled_reason = 'failing' WHERE id = '{id}'"
    ))
    .await;
    let (status, _, body) = call(
        &app,
        request(
            "POST",
            &auth,
            &format!("/{id}/deliveries/{delivery}/resend"),
            None,
        ),
    )
    .await;
    assert_eq!(
        (status, error_of(&body)),
        (409, json!({"error": "Webhook is disabled"}))
    );
    let eve = colleague(&t).await;
    let (status, _, body) = call(
        &app,
        request(
            "POST",
            &eve,
            &format!("/{id}/deliveries/{delivery}/resend"),
            None,
        ),
    )
    .await;
    assert_eq!(
        (status, error_of(&body)),
        (404, json!({"error": "Webhook not found"}))
    );
    assert_eq!(
        t.scalar(&format!(
            "SELECT count(*) AS n FROM deliveries WHERE subscription_id = '{id}'"
        ))
        .await,
        6,
        "refusals queue nothing"
    );
}

#[actix_web::test]
async fn rotating_the_secret_keeps_the_previous_one_for_the_window_asked_for() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let id = subscribed(&t, &app, "https://hooks.example.com/rotate").await;
    let rotate =
        |body: Option<Value>| request("POST", &auth, &format!("/{id}/rotate-secret"), body);
    let secret_len =
        format!("SELECT length(secret)::bigint AS n FROM webhook_subscriptions WHERE id = '{id}'");
    let before_len = t.scalar(&secret_len).await;

    let (status, _, body) = call(&app, rotate(None)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    let secret = body["secret"].as_str().unwrap();
    assert!(
        secret.starts_with("whsec_") && secret.len() == 50,
        "{secret}"
    );
    let expires = time::OffsetDateTime::parse(
        body["previous_expires_at"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let in_a_day = time::OffsetDateTime::now_utc() + time::Duration::days(1);
    assert!(
        (expires - in_a_day).abs() < time::Duration::minutes(1),
        "{expires}"
    );
    let (_, _, got) = call(&app, request("GET", &auth, &format!("/{id}"), None)).await;
    assert_eq!(
        got["webhook"]["secret_rotation"]["previous_expires_at"],
        body["previous_expires_at"]
    );
    assert!(!got.to_string().contains(secret), "never shown again");
    assert_eq!(
        t.scalar(&secret_len).await,
        before_len,
        "stored sealed, as before"
    );
    assert_eq!(
        t.scalar(&format!(
            "SELECT count(*) AS n FROM webhook_subscriptions WHERE id = '{id}' \
             AND previous_secret IS NOT NULL"
        ))
        .await,
        1
    );

    // With 0 the old secret stops at once.
    let (status, _, body) =
        call(&app, rotate(Some(json!({"previous_valid_for_seconds": 0})))).await;
    assert_eq!(status, 200, "{body}");
    let (_, _, got) = call(&app, request("GET", &auth, &format!("/{id}"), None)).await;
    assert_eq!(got["webhook"]["secret_rotation"], Value::Null);
    assert_eq!(
        t.scalar(&format!(
            "SELECT count(*) AS n FROM webhook_subscriptions WHERE id = '{id}' \
             AND previous_secret IS NULL"
        ))
        .await,
        1
    );
    let (status, _, _) = call(
        &app,
        rotate(Some(json!({"previous_valid_for_seconds": 604800}))),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        t.scalar(&format!(
            "SELECT count(*) AS n FROM audit_log WHERE action = 'webhook.secret_rotated' \
             AND target_id = '{id}'"
        ))
        .await,
        3
    );

    for body in [
        json!({"previous_valid_for_seconds": 604801}),
        json!({"previous_valid_for_seconds": -1}),
        json!({"previous_valid_for_seconds": "60"}),
        json!({"previous_valid_for_seconds": 1.5}),
        json!({"valid_for": 60}),
        json!([]),
    ] {
        let (status, _, answer) = call(&app, rotate(Some(body.clone()))).await;
        assert_eq!(
            (status, error_of(&answer)),
            (400, json!({"error": "Invalid request parameters"})),
            "{body}"
        );
    }
    let eve = colleague(&t).await;
    let (status, _, answer) = call(
        &app,
        request("POST", &eve, &format!("/{id}/rotate-secret"), None),
    )
    .await;
    assert_eq!(
        (status, error_of(&answer)),
        (404, json!({"error": "Webhook not found"}))
    );
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM audit_log WHERE action = 'webhook.secret_rotated'")
            .await,
        3,
        "refusals rotate nothing"
    );
}

#[actix_web::test]
async fn every_recovery_operation_is_404_for_another_workspace_and_touches_nothing() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let id = subscribed(&t, &app, "https://hooks.example.com/mine").await;
    history(&t, &id).await;
    let (_, _, log) = call(
        &app,
        request("GET", &auth, &format!("/{id}/deliveries"), None),
    )
    .await;
    let delivery = log["data"][0]["id"].as_str().unwrap().to_owned();
    let (_, outsider) = t.other_workspace().await;
    let eve = colleague(&t).await;
    let since = timetrack_domain::timefmt::rfc3339(
        time::OffsetDateTime::now_utc() - time::Duration::days(1),
    );
    let before = (
        t.scalar("SELECT count(*) AS n FROM deliveries").await,
        t.scalar("SELECT count(*) AS n FROM audit_log").await,
        t.scalar("SELECT count(*) AS n FROM events").await,
    );
    for auth in [&outsider, &eve] {
        for (method, path, body) in [
            ("POST", format!("/{id}/test"), None),
            (
                "POST",
                format!("/{id}/rotate-secret"),
                Some(json!({"previous_valid_for_seconds": 0})),
            ),
            (
                "POST",
                format!("/{id}/replay"),
                Some(json!({"since": since})),
            ),
            (
                "POST",
                format!("/{id}/enable"),
                Some(json!({"replay_since": since})),
            ),
            ("POST", format!("/{id}/deliveries/{delivery}/resend"), None),
            ("GET", format!("/{id}/deliveries"), None),
            ("GET", format!("/{id}/deliveries/{delivery}"), None),
            ("GET", format!("/{id}/stats"), None),
        ] {
            let (status, _, body) = call(&app, request(method, auth, &path, body)).await;
            assert_eq!(
                (status, error_of(&body)),
                (404, json!({"error": "Webhook not found"})),
                "{method} {path}"
            );
        }
    }
    let after = (
        t.scalar("SELECT count(*) AS n FROM deliveries").await,
        t.scalar("SELECT count(*) AS n FROM audit_log").await,
        t.scalar("SELECT count(*) AS n FROM events").await,
    );
    assert_eq!(
        after, before,
        "nothing queued, rotated, enabled or recorded"
    );
}
