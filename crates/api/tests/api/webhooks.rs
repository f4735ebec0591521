//! Webhook subscriptions on the integration surface.

use actix_web::test;
use serde_json::{Value, json};
use timetrack_api::StateSettings;
use timetrack_domain::services::WebhookSettings;

use crate::support::{TestApp, call, error_of};
use timetrack_testkit::fakes::{email, name};

const BASE: &str = "/api/integrations/automation/webhooks";

fn subscribe_as(auth: &str, body: Value) -> actix_http::Request {
    test::TestRequest::post()
        .uri(&format!("{BASE}/subscribe"))
        .insert_header(("Authorization", auth))
        .set_json(body)
        .to_request()
}

fn subscribe(t: &TestApp, body: Value) -> actix_http::Request {
    subscribe_as(&t.bearer().1, body)
}

fn delete_as(auth: &str, id: &str) -> actix_http::Request {
    test::TestRequest::delete()
        .uri(&format!("{BASE}/{id}"))
        .insert_header(("Authorization", auth))
        .to_request()
}

#[actix_web::test]
async fn subscribe_returns_201_with_the_documented_shape_and_secret() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (status, content_type, body) = call(&app, subscribe(&t, json!({
        "url": "https://hooks.example.com/catch/1",
        "events": ["TIMER_STOPPED", "CLIENT_CREATED", "TIMER_STOPPED", "TIME_ENTRY_CREATED"],
        "description": "Zap 42"
    }))).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(content_type, "application/json");
    let webhook = &body["webhook"];
    let id = webhook["id"].as_str().unwrap();
    let secret = webhook["secret"].as_str().unwrap();
    assert!(id.starts_with("wh_") && id.len() == 27, "{id}");
    assert!(secret.starts_with("whsec_"), "{secret}");
    assert_eq!(
        body,
        json!({
            "success": true,
            "webhook": {
                "id": id,
                "url": "https://hooks.example.com/catch/1",
                "events": ["TIMER_STOPPED", "CLIENT_CREATED", "TIME_ENTRY_CREATED"],
                "status": "ACTIVE",
                "secret": secret
            }
        })
    );
    assert_eq!(t.scalar(&format!("SELECT count(*) AS n FROM webhook_subscriptions WHERE id = '{id}' AND description = 'Zap 42' AND user_id = '{}'", t.user.id)).await, 1);
}

#[actix_web::test]
async fn missing_url_or_events_is_400_url_and_events_array_are_required() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for body in [
        json!({}),
        json!({"url": "https://hooks.example.com/h"}),
        json!({"events": ["CLIENT_CREATED"]}),
        json!({"url": "https://hooks.example.com/h", "events": []}),
        json!({"url": "https://hooks.example.com/h", "events": "CLIENT_CREATED"}),
        json!({"url": null, "events": ["CLIENT_CREATED"]}),
        json!([]),
        json!("text"),
    ] {
        let (status, _, json) = call(&app, subscribe(&t, body.clone())).await;
        assert_eq!(
            (status, error_of(&json)),
            (400, json!({"error": "URL and events array are required"})),
            "{body}"
        );
        assert!(json["detail"].is_string(), "{body}: {json}");
    }
    let req = test::TestRequest::post()
        .uri(&format!("{BASE}/subscribe"))
        .insert_header(t.bearer())
        .set_payload("{not json")
        .to_request();
    let (status, _, json) = call(&app, req).await;
    assert_eq!(
        (status, error_of(&json)),
        (400, json!({"error": "URL and events array are required"}))
    );
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM webhook_subscriptions")
            .await,
        0
    );
}

#[actix_web::test]
async fn unacceptable_urls_are_400_invalid_url_format() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let long = format!("https://hooks.example.com/{}", "a".repeat(2048));
    let https = "url must be an absolute https:// URL";
    let public = "url must point to a public host";
    for (url, detail) in [
        (json!("http://hooks.example.com/h"), https),
        (json!("ftp://hooks.example.com/h"), https),
        (json!("hooks.example.com/h"), https),
        (
            json!("https://user:pass@hooks.example.com/h"),
            "url must not contain a backslash or a user name or password",
        ),
        (json!("https://127.0.0.1/h"), public),
        (json!("https://2130706433/h"), public),
        (json!("https://[::1]/h"), public),
        (json!("https://[::ffff:169.254.169.254]/h"), public),
        (json!("https://169.254.169.254/latest/meta-data"), public),
        (json!("https://10.1.2.3/h"), public),
        (json!("https://192.168.1.1/h"), public),
        (json!("https://localhost/h"), public),
        (
            json!("https://hooks.example.com/a\u{0}b"),
            "url must not contain spaces or control characters",
        ),
        (json!("https://"), "url must name a host"),
        (json!(""), https),
        (json!(long), "url must be at most 2048 bytes long"),
        (json!(42), "url must be a string"),
    ] {
        let (status, _, body) = call(
            &app,
            subscribe(&t, json!({"url": url, "events": ["CLIENT_CREATED"]})),
        )
        .await;
        assert_eq!(status, 400, "{url}");
        // The published message exactly, and what to change beside it.
        assert_eq!(body["error"], "Invalid URL format", "{url}");
        assert!(
            body["detail"].as_str().unwrap().starts_with(detail),
            "{url}: {body}"
        );
        // A refused private target names the setting a development server would use.
        assert_eq!(
            body["detail"]
                .as_str()
                .unwrap()
                .contains("--webhook-allow-private-targets"),
            detail == public,
            "{url}: {body}"
        );
        assert_eq!(body.as_object().unwrap().len(), 2, "{body}");
    }
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM webhook_subscriptions")
            .await,
        0
    );
}

#[actix_web::test]
async fn unknown_events_and_long_descriptions_are_400() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let cases = [
        (
            json!({"url": "https://hooks.example.com/h", "events": ["CLIENT_CREATED", "CLIENT_ARCHIVED"]}),
            "Invalid event type: CLIENT_ARCHIVED",
        ),
        (
            json!({"url": "https://hooks.example.com/h", "events": ["timer_started"]}),
            "Invalid event type: timer_started",
        ),
        (
            json!({"url": "https://hooks.example.com/h", "events": [null]}),
            "Invalid event type: null",
        ),
        (
            json!({"url": "https://hooks.example.com/h", "events": ["CLIENT_CREATED"], "description": "d".repeat(256)}),
            "description must be at most 255 characters",
        ),
        (
            json!({"url": "https://hooks.example.com/h", "events": ["CLIENT_CREATED"], "description": ["x"]}),
            "description must be a string",
        ),
    ];
    for (body, message) in cases {
        let (status, _, json) = call(&app, subscribe(&t, body.clone())).await;
        assert_eq!((status, json), (400, json!({"error": message})), "{body}");
    }
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM webhook_subscriptions")
            .await,
        0
    );
}

#[actix_web::test]
async fn private_targets_are_accepted_only_when_allowed() {
    let t = TestApp::with_settings(StateSettings {
        webhooks: WebhookSettings {
            allow_private_targets: true,
            ..WebhookSettings::default()
        },
        ..TestApp::relaxed()
    })
    .await;
    let app = t.service().await;
    let (status, _, _) = call(
        &app,
        subscribe(
            &t,
            json!({"url": "https://127.0.0.1:8443/h", "events": ["CLIENT_CREATED"]}),
        ),
    )
    .await;
    assert_eq!(status, 201);
    // Still HTTPS only.
    let (status, _, _) = call(
        &app,
        subscribe(
            &t,
            json!({"url": "http://127.0.0.1:8443/h", "events": ["CLIENT_CREATED"]}),
        ),
    )
    .await;
    assert_eq!(status, 400);
}

#[actix_web::test]
async fn the_101st_active_subscription_of_a_workspace_is_409() {
    let t = TestApp::new().await;
    let app = t.service().await;
    t.execute(&format!(
        "INSERT INTO webhook_subscriptions (id, workspace_id, user_id, api_key_id, url, events, secret, status, created_at, updated_at) \
         SELECT 'wh_bulk' || lpad(g::text, 16, '0'), '{}', '{}', '{}', 'https://hooks.example.com/h', ARRAY['CLIENT_CREATED'], 'whsec_x', 'ACTIVE', now(), now() \
         FROM generate_series(1, 100) g",
        t.workspace.id, t.user.id, t.key.id
    ))
    .await;
    let body = json!({"url": "https://hooks.example.com/h", "events": ["CLIENT_CREATED"]});
    let (status, _, json) = call(&app, subscribe(&t, body.clone())).await;
    assert_eq!(
        (status, json),
        (409, json!({"error": "Subscription limit reached"}))
    );
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM webhook_subscriptions")
            .await,
        100
    );
    let (status, _, _) = call(&app, delete_as(&t.bearer().1, "wh_bulk0000000000000001")).await;
    assert_eq!(status, 200);
    let (status, _, _) = call(&app, subscribe(&t, body)).await;
    assert_eq!(status, 201);
}

#[actix_web::test]
async fn the_list_shows_ones_own_live_subscriptions_newest_first_without_secrets() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, other_key) = t.other_workspace().await;
    call(
        &app,
        subscribe_as(
            &other_key,
            json!({"url": "https://theirs.example.com/h", "events": ["CLIENT_CREATED"]}),
        ),
    )
    .await;
    let (_, _, first) = call(&app, subscribe(&t, json!({"url": "https://a.example.com/h", "events": ["CLIENT_CREATED"], "description": "first"}))).await;
    let (_, _, second) = call(
        &app,
        subscribe(
            &t,
            json!({"url": "https://b.example.com/h", "events": ["TIMER_STARTED"]}),
        ),
    )
    .await;
    let (_, _, gone) = call(
        &app,
        subscribe(
            &t,
            json!({"url": "https://c.example.com/h", "events": ["TIMER_STARTED"]}),
        ),
    )
    .await;
    call(
        &app,
        delete_as(&t.bearer().1, gone["webhook"]["id"].as_str().unwrap()),
    )
    .await;

    let req = test::TestRequest::get()
        .uri(BASE)
        .insert_header(t.bearer())
        .to_request();
    let (status, _, body) = call(&app, req).await;
    assert_eq!(status, 200);
    let items = body["webhooks"].as_array().unwrap();
    assert_eq!(body["success"], true);
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["id"], second["webhook"]["id"]);
    assert_eq!(items[1]["id"], first["webhook"]["id"]);
    assert_eq!(
        items[1]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        [
            "id",
            "url",
            "events",
            "status",
            "disabled_reason",
            "description",
            "filters",
            "headers",
            "created_at",
            "updated_at",
            "secret_rotation",
            "health"
        ]
    );
    assert_eq!(items[1]["description"], "first");
    assert_eq!(items[0]["description"], Value::Null);
    assert!(!body.to_string().contains("whsec_"));
}

#[actix_web::test]
async fn delete_is_immediate_idempotent_owner_only_audited_and_cancels_queued_deliveries() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, _, created) = call(
        &app,
        subscribe(
            &t,
            json!({"url": "https://hooks.example.com/h", "events": ["CLIENT_CREATED"]}),
        ),
    )
    .await;
    let id = created["webhook"]["id"].as_str().unwrap().to_owned();
    // A queued delivery for it.
    let req = test::TestRequest::post()
        .uri("/api/clients")
        .insert_header(t.bearer())
        .set_json(json!({"name": "Queued"}))
        .to_request();
    assert_eq!(call(&app, req).await.0, 201);
    assert_eq!(t.scalar(&format!("SELECT count(*) AS n FROM deliveries WHERE subscription_id = '{id}' AND status = 'PENDING'")).await, 1);

    // Another user of the same workspace, and another workspace: 404, and the webhook untouched.
    let eve = t
        .admin
        .create_user(t.workspace.id, name("Eve"), email("eve@example.com"))
        .await
        .unwrap();
    let (_, eve_key) = t
        .admin
        .create_api_key(eve.id, t.workspace.id, None)
        .await
        .unwrap();
    let (_, other_key) = t.other_workspace().await;
    for auth in [format!("Bearer {}", eve_key.expose()), other_key] {
        let (status, _, body) = call(&app, delete_as(&auth, &id)).await;
        assert_eq!((status, body), (404, json!({"error": "Webhook not found"})));
    }
    assert_eq!(t.scalar(&format!("SELECT count(*) AS n FROM webhook_subscriptions WHERE id = '{id}' AND status = 'ACTIVE'")).await, 1);

    let (status, _, body) = call(&app, delete_as(&t.bearer().1, &id)).await;
    assert_eq!((status, body), (200, json!({"success": true})));
    assert_eq!(t.scalar(&format!("SELECT count(*) AS n FROM webhook_subscriptions WHERE id = '{id}' AND status = 'DELETED'")).await, 1);
    assert_eq!(t.scalar(&format!("SELECT count(*) AS n FROM deliveries WHERE subscription_id = '{id}' AND status = 'CANCELLED'")).await, 1);
    assert_eq!(
        t.scalar(&format!("SELECT count(*) AS n FROM audit_log WHERE action = 'webhook.deleted' AND target_id = '{id}' AND actor_user_id = '{}'", t.user.id)).await,
        1
    );
    // New events no longer reach it.
    let req = test::TestRequest::post()
        .uri("/api/clients")
        .insert_header(t.bearer())
        .set_json(json!({"name": "After"}))
        .to_request();
    assert_eq!(call(&app, req).await.0, 201);
    assert_eq!(
        t.scalar(&format!(
            "SELECT count(*) AS n FROM deliveries WHERE subscription_id = '{id}'"
        ))
        .await,
        1
    );

    // Safe to retry.
    let (status, _, body) = call(&app, delete_as(&t.bearer().1, &id)).await;
    assert_eq!((status, body), (200, json!({"success": true})));
    assert_eq!(t.scalar("SELECT count(*) AS n FROM audit_log").await, 1);

    for unknown in [
        "wh_neverexisted00000000",
        "not-a-webhook",
        "wh_%27%20OR%201%3D1",
    ] {
        let (status, _, body) = call(&app, delete_as(&t.bearer().1, unknown)).await;
        assert_eq!(
            (status, body),
            (404, json!({"error": "Webhook not found"})),
            "{unknown}"
        );
    }
}

#[actix_web::test]
async fn the_delivery_log_lists_the_webhooks_deliveries_to_its_owner_only() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let (_, _, created) = call(
        &app,
        subscribe(
            &t,
            json!({"url": "https://hooks.example.com/h", "events": ["CLIENT_CREATED"]}),
        ),
    )
    .await;
    let id = created["webhook"]["id"].as_str().unwrap();
    let req = test::TestRequest::post()
        .uri("/api/clients")
        .insert_header(t.bearer())
        .set_json(json!({"name": "Logged"}))
        .to_request();
    call(&app, req).await;

    let req = test::TestRequest::get()
        .uri(&format!("{BASE}/{id}/deliveries"))
        .insert_header(t.bearer())
        .to_request();
    let (status, _, body) = call(&app, req).await;
    assert_eq!(status, 200);
    let items = body["data"].as_array().unwrap();
    assert_eq!(body["next_cursor"], Value::Null);
    assert_eq!(items[0]["kind"], "event");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["event_type"], "CLIENT_CREATED");
    assert_eq!(items[0]["status"], "PENDING");
    assert_eq!(items[0]["attempts"], 0);
    assert_eq!(items[0]["last_status_code"], Value::Null);

    let (_, other_key) = t.other_workspace().await;
    let req = test::TestRequest::get()
        .uri(&format!("{BASE}/{id}/deliveries"))
        .insert_header(("Authorization", other_key.as_str()))
        .to_request();
    let (status, _, body) = call(&app, req).await;
    assert_eq!((status, body), (404, json!({"error": "Webhook not found"})));

    // Deleted, its log goes with it, as it leaves the listing.
    let req = test::TestRequest::delete()
        .uri(&format!("{BASE}/{id}"))
        .insert_header(t.bearer())
        .to_request();
    assert_eq!(call(&app, req).await.0, 200);
    let req = test::TestRequest::get()
        .uri(&format!("{BASE}/{id}/deliveries"))
        .insert_header(t.bearer())
        .to_request();
    let (status, _, body) = call(&app, req).await;
    assert_eq!((status, body), (404, json!({"error": "Webhook not found"})));
}

#[actix_web::test]
async fn every_webhook_endpoint_needs_a_key() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for req in [
        test::TestRequest::post()
            .uri(&format!("{BASE}/subscribe"))
            .set_json(json!({}))
            .to_request(),
        test::TestRequest::get().uri(BASE).to_request(),
        test::TestRequest::delete()
            .uri(&format!("{BASE}/wh_aaaaaaaaaaaaaaaaaaaaaaaa"))
            .to_request(),
        test::TestRequest::get()
            .uri(&format!("{BASE}/wh_aaaaaaaaaaaaaaaaaaaaaaaa/deliveries"))
            .to_request(),
    ] {
        let (status, _, body) = call(&app, req).await;
        assert_eq!((status, body), (401, json!({"error": "Unauthorized"})));
    }
}

#[actix_web::test]
async fn a_key_revoked_while_still_cached_can_make_no_write_at_all() {
    let t = TestApp::new().await;
    let app = t.service().await;
    // The same member's second key made the webhook, so it stays active when the first is
    // revoked; the first is verified, and so trusted by the cache for its lifetime (5 s).
    let (_, other) = t
        .admin
        .create_api_key(t.user.id, t.workspace.id, None)
        .await
        .unwrap();
    let other = format!("Bearer {}", other.expose());
    let (status, _, body) = call(
        &app,
        subscribe_as(
            &other,
            json!({"url": "https://hooks.example.com/mine", "events": ["CLIENT_CREATED"]}),
        ),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let id = body["webhook"]["id"].as_str().unwrap().to_owned();
    let read = || {
        test::TestRequest::get()
            .uri(&format!("{BASE}/{id}"))
            .insert_header(t.bearer())
            .to_request()
    };
    assert_eq!(call(&app, read()).await.0, 200);
    t.admin.revoke_api_key(t.key.id).await.unwrap();
    let state = "SELECT count(*) AS n FROM webhook_subscriptions \
                 WHERE url = 'https://hooks.example.com/mine' AND status = 'ACTIVE'";
    let rows = "SELECT (SELECT count(*) FROM deliveries) + (SELECT count(*) FROM clients) \
                + (SELECT count(*) FROM webhook_subscriptions) + (SELECT count(*) FROM events) \
                AS n";
    let before = (t.scalar(state).await, t.scalar(rows).await);
    assert_eq!(before.0, 1);
    let secret_before = t
        .texts(&format!(
            "SELECT secret AS t FROM webhook_subscriptions WHERE id = '{id}'"
        ))
        .await;
    let since = timetrack_domain::timefmt::rfc3339(
        time::OffsetDateTime::now_utc() - time::Duration::hours(1),
    );
    for (method, path, body) in [
        (
            "PATCH",
            format!("{BASE}/{id}"),
            json!({"url": "https://evil.example.com/x"}),
        ),
        ("POST", format!("{BASE}/{id}/rotate-secret"), json!({})),
        ("POST", format!("{BASE}/{id}/test"), json!({})),
        (
            "POST",
            format!("{BASE}/{id}/replay"),
            json!({"since": since}),
        ),
        ("POST", format!("{BASE}/{id}/enable"), json!({})),
        ("POST", format!("{BASE}/{id}/disable"), json!({})),
        ("DELETE", format!("{BASE}/{id}"), json!({})),
        ("POST", "/api/clients".to_owned(), json!({"name": "Evil"})),
        ("POST", "/api/time-entries/start".to_owned(), json!({})),
    ] {
        let req = test::TestRequest::default()
            .method(method.parse().unwrap())
            .uri(&path)
            .insert_header(t.bearer())
            .set_json(body)
            .to_request();
        assert_eq!(
            call(&app, req).await,
            (
                401,
                "application/json".into(),
                json!({"error": "Unauthorized"})
            ),
            "{method} {path}"
        );
    }
    assert_eq!((t.scalar(state).await, t.scalar(rows).await), before);
    assert_eq!(
        t.texts(&format!(
            "SELECT secret AS t FROM webhook_subscriptions WHERE id = '{id}'"
        ))
        .await,
        secret_before
    );
    // Its reads fail at once too, in this process: the write found it revoked.
    assert_eq!(call(&app, read()).await.0, 401);
}

#[actix_web::test]
async fn a_key_revoked_while_still_cached_cannot_subscribe() {
    let t = TestApp::new().await;
    let app = t.service().await;
    // The key is verified, and so trusted by the cache for its lifetime (5 s).
    let me = test::TestRequest::get()
        .uri("/api/me")
        .insert_header(t.bearer())
        .to_request();
    assert_eq!(call(&app, me).await.0, 200);
    t.admin.revoke_api_key(t.key.id).await.unwrap();

    let req = test::TestRequest::post()
        .uri("/api/integrations/automation/webhooks/subscribe")
        .insert_header(t.bearer())
        .set_json(
            json!({"url": "https://hooks.example.com/after-revoke", "events": ["CLIENT_CREATED"]}),
        )
        .to_request();
    assert_eq!(
        call(&app, req).await,
        (
            401,
            "application/json".into(),
            json!({"error": "Unauthorized"})
        )
    );
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM webhook_subscriptions")
            .await,
        0
    );
}
