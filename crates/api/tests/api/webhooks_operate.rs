//! Operating a webhook after day one: the webhook object with its health, reading one, changing
//! one, and the rule that every operation is the owner's alone.

use serde_json::{Value, json};

use crate::support::{TestApp, call, error_of, keyed};
use timetrack_testkit::fakes::{email, name};

pub(crate) const BASE: &str = "/api/integrations/automation/webhooks";

pub(crate) fn request(
    method: &str,
    auth: &str,
    path: &str,
    body: Option<Value>,
) -> actix_http::Request {
    keyed(method, &format!("{BASE}{path}"), auth, body)
}

/// Subscribes as the test's user: the webhook's id.
pub(crate) async fn subscribed<S, B>(t: &TestApp, app: &S, url: &str) -> String
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: actix_web::body::MessageBody,
{
    let (status, _, body) = call(
        app,
        request(
            "POST",
            &t.bearer().1,
            "/subscribe",
            Some(json!({"url": url, "events": ["CLIENT_CREATED"], "description": "Zap"})),
        ),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body["webhook"]["id"].as_str().unwrap().to_owned()
}

/// Runs each `;`-separated statement of `sql` (a prepared statement holds one).
pub(crate) async fn run_all(t: &TestApp, sql: &str) {
    for statement in sql.split("; ") {
        t.execute(statement).await;
    }
}

/// A second member of the test's workspace: their bearer header value.
pub(crate) async fn colleague(t: &TestApp) -> String {
    let eve = t
        .admin
        .create_user(t.workspace.id, name("Eve"), email("eve@example.com"))
        .await
        .unwrap();
    let (_, secret) = t
        .admin
        .create_api_key(eve.id, t.workspace.id, None)
        .await
        .unwrap();
    format!("Bearer {}", secret.expose())
}

#[actix_web::test]
async fn the_webhook_object_reports_health_from_the_attempts_and_never_the_secret() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let id = subscribed(&t, &app, "https://hooks.example.com/h").await;
    let auth = t.bearer().1;

    let (status, _, body) = call(&app, request("GET", &auth, &format!("/{id}"), None)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    let w = &body["webhook"];
    assert_eq!(w["id"], id.as_str());
    assert_eq!(w["url"], "https://hooks.example.com/h");
    assert_eq!(w["events"], json!(["CLIENT_CREATED"]));
    assert_eq!(w["status"], "ACTIVE");
    assert_eq!(w["description"], "Zap");
    assert_eq!(w["filters"], json!({}));
    assert_eq!(w["secret_rotation"], Value::Null);
    assert_eq!(w["created_at"], w["updated_at"]);
    assert_eq!(
        w["health"],
        json!({
            "state": "unknown",
            "consecutive_failures": 0,
            "last_attempt_at": null,
            "last_success_at": null,
            "last_failure_at": null,
            "last_status_code": null,
            "last_error": null,
            "failing_since": null,
            "pending_deliveries": 0
        })
    );
    assert!(!body.to_string().contains("whsec_"), "{body}");

    // One event, its pending delivery, and four attempts: a failure, a success, then two
    // failures (one without a response).
    run_all(&t, &format!(
        "INSERT INTO events (id, workspace_id, event_type, body, created_at) \
         VALUES ('00000000-0000-0000-0000-0000000000e1', '{ws}', 'CLIENT_CREATED', '{{}}', \
                 '2026-03-01T09:00:00Z'); \
         INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, attempts, \
                                 next_attempt_at, created_at, updated_at) \
         VALUES ('00000000-0000-0000-0000-0000000000e1', '{id}', '{ws}', 'PENDING', 4, \
                 '2026-03-01T10:00:00Z', '2026-03-01T09:00:00Z', '2026-03-01T09:04:00Z'); \
         INSERT INTO delivery_attempts (workspace_id, delivery_id, subscription_id, attempt, started_at, \
                                        latency_ms, status_code, error) \
         SELECT d.workspace_id, d.id, d.subscription_id, v.a, v.t::timestamptz, v.l, v.c, v.e FROM deliveries d JOIN (VALUES \
         ('00000000-0000-0000-0000-0000000000e1', '{id}', 1, '2026-03-01T09:01:00Z', 10, 500, 'HTTP 500'), \
         ('00000000-0000-0000-0000-0000000000e1', '{id}', 2, '2026-03-01T09:02:00Z', 10, 200, NULL), \
         ('00000000-0000-0000-0000-0000000000e1', '{id}', 3, '2026-03-01T09:03:00Z', 10, NULL, 'timeout: no answer within 10 s'), \
         ('00000000-0000-0000-0000-0000000000e1', '{id}', 4, '2026-03-01T09:04:00Z', 10, 503, 'HTTP 503')) AS v(ev, s, a, t, l, c, e) \
         ON d.event_id = v.ev::uuid AND d.subscription_id = v.s; \
         UPDATE webhook_subscriptions SET failing_since = '2026-03-01T09:03:00Z' WHERE id = '{id}'",
        ws = t.workspace.id
    ))
    .await;
    let (_, _, body) = call(&app, request("GET", &auth, &format!("/{id}"), None)).await;
    assert_eq!(
        body["webhook"]["health"],
        json!({
            "state": "failing",
            "consecutive_failures": 2,
            "last_attempt_at": "2026-03-01T09:04:00Z",
            "last_success_at": "2026-03-01T09:02:00Z",
            "last_failure_at": "2026-03-01T09:04:00Z",
            "last_status_code": 503,
            "last_error": "HTTP 503",
            "failing_since": "2026-03-01T09:03:00Z",
            "pending_deliveries": 1
        })
    );

    // A success clears the streak; the listing shows the same object.
    run_all(&t, &format!(
        "INSERT INTO delivery_attempts (workspace_id, delivery_id, subscription_id, attempt, started_at, \
                                        latency_ms, status_code, error) \
         SELECT d.workspace_id, d.id, d.subscription_id, v.a, v.t::timestamptz, v.l, v.c, v.e FROM deliveries d JOIN (VALUES ('00000000-0000-0000-0000-0000000000e1', '{id}', 5, '2026-03-01T09:05:00Z', 10, 204, NULL)) AS v(ev, s, a, t, l, c, e) \
         ON d.event_id = v.ev::uuid AND d.subscription_id = v.s; \
         UPDATE deliveries SET status = 'DELIVERED' WHERE subscription_id = '{id}'; \
         UPDATE webhook_subscriptions SET failing_since = NULL WHERE id = '{id}'"
    ))
    .await;
    let (status, _, list) = call(&app, request("GET", &auth, "", None)).await;
    assert_eq!(status, 200);
    let health = &list["webhooks"][0]["health"];
    assert_eq!(health["state"], "healthy");
    assert_eq!(health["consecutive_failures"], 0);
    assert_eq!(health["last_success_at"], "2026-03-01T09:05:00Z");
    assert_eq!(health["last_failure_at"], "2026-03-01T09:04:00Z");
    assert_eq!(health["last_status_code"], 204);
    assert_eq!(health["last_error"], Value::Null);
    assert_eq!(health["pending_deliveries"], 0);

    // Disabled (its key revoked, say): the state says so.
    t.execute(&format!(
        "UPDATE webhook_subscriptions SET status = 'DISABLED', disabled_reason = 'failing' WHERE id = '{id}'"
    ))
    .await;
    let (_, _, body) = call(&app, request("GET", &auth, &format!("/{id}"), None)).await;
    assert_eq!(body["webhook"]["status"], "DISABLED");
    assert_eq!(body["webhook"]["health"]["state"], "disabled");
}

#[actix_web::test]
async fn every_operation_is_the_owners_alone_and_the_listing_shows_only_ones_own() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let id = subscribed(&t, &app, "https://hooks.example.com/mine").await;
    let eve = colleague(&t).await;
    let (_, outsider) = t.other_workspace().await;
    let (_, _, eves) = call(
        &app,
        request(
            "POST",
            &eve,
            "/subscribe",
            Some(json!({"url": "https://hooks.example.com/eve", "events": ["TIMER_STARTED"]})),
        ),
    )
    .await;

    let (_, _, mine) = call(&app, request("GET", &t.bearer().1, "", None)).await;
    let listed: Vec<&str> = mine["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, [id.as_str()], "not the colleague's");
    let (_, _, theirs) = call(&app, request("GET", &eve, "", None)).await;
    assert_eq!(theirs["webhooks"].as_array().unwrap().len(), 1);
    assert_eq!(theirs["webhooks"][0]["id"], eves["webhook"]["id"]);

    let not_found = json!({"error": "Webhook not found"});
    for auth in [&eve, &outsider] {
        for (method, path, body) in [
            ("GET", format!("/{id}"), None),
            (
                "PATCH",
                format!("/{id}"),
                Some(json!({"description": "mine now"})),
            ),
            ("GET", format!("/{id}/deliveries"), None),
            ("DELETE", format!("/{id}"), None),
        ] {
            let (status, _, body) = call(&app, request(method, auth, &path, body)).await;
            assert_eq!(
                (status, error_of(&body)),
                (404, not_found.clone()),
                "{method} {path}"
            );
        }
    }
    for unknown in ["wh_unknownunknownunknown1", "not-an-id", "wh_"] {
        let (status, _, body) = call(
            &app,
            request("GET", &t.bearer().1, &format!("/{unknown}"), None),
        )
        .await;
        assert_eq!(
            (status, error_of(&body)),
            (404, not_found.clone()),
            "{unknown}"
        );
        let (status, _, body) = call(
            &app,
            request(
                "PATCH",
                &t.bearer().1,
                &format!("/{unknown}"),
                Some(json!({})),
            ),
        )
        .await;
        assert_eq!(
            (status, error_of(&body)),
            (404, not_found.clone()),
            "{unknown}"
        );
    }
    let (_, _, body) = call(&app, request("GET", &t.bearer().1, &format!("/{id}"), None)).await;
    assert_eq!(body["webhook"]["description"], "Zap", "untouched");
    assert_eq!(body["webhook"]["status"], "ACTIVE");
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM audit_log WHERE action = 'webhook.updated'")
            .await,
        0
    );

    // Deleted: 404 for everything here, the owner included.
    call(
        &app,
        request("DELETE", &t.bearer().1, &format!("/{id}"), None),
    )
    .await;
    for (method, body) in [("GET", None), ("PATCH", Some(json!({"description": "x"})))] {
        let (status, _, body) = call(
            &app,
            request(method, &t.bearer().1, &format!("/{id}"), body),
        )
        .await;
        assert_eq!(
            (status, error_of(&body)),
            (404, not_found.clone()),
            "{method}"
        );
    }
}

#[actix_web::test]
async fn patch_changes_what_it_names_with_subscribes_messages_and_is_audited() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let id = subscribed(&t, &app, "https://hooks.example.com/h").await;
    let auth = t.bearer().1;
    let patch = |body: Value| request("PATCH", &auth, &format!("/{id}"), Some(body));

    for (body, message) in [
        (
            json!({"url": "http://hooks.example.com/h"}),
            "Invalid URL format",
        ),
        (json!({"url": "https://127.0.0.1/h"}), "Invalid URL format"),
        (json!({"url": 7}), "Invalid URL format"),
        (json!({"url": null}), "URL and events array are required"),
        // As subscribe reads them: the events before the URL's type.
        (
            json!({"url": 42, "events": []}),
            "URL and events array are required",
        ),
        (
            json!({"url": "http://x.example.com", "events": ["NOPE"]}),
            "Invalid URL format",
        ),
        (json!({"events": []}), "URL and events array are required"),
        (
            json!({"events": "CLIENT_CREATED"}),
            "URL and events array are required",
        ),
        (json!({"events": ["NOPE"]}), "Invalid event type: NOPE"),
        (
            json!({"description": "d".repeat(256)}),
            "description must be at most 255 characters",
        ),
        (json!({"description": 5}), "description must be a string"),
        (json!({"secret": "whsec_x"}), "Invalid request parameters"),
        (json!(["url"]), "Invalid request parameters"),
        (
            json!({"filters": []}),
            "Invalid filter: filters (must be an object)",
        ),
    ] {
        let (status, _, answer) = call(&app, patch(body.clone())).await;
        assert_eq!(
            (status, error_of(&answer)),
            (400, json!({"error": message})),
            "{body}"
        );
    }
    let (status, _, answer) = call(&app, patch(json!({"filters": {"project_ids": []}}))).await;
    assert_eq!(status, 400);
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .starts_with("Invalid filter: project_ids"),
        "{answer}"
    );
    let (_, _, unchanged) = call(&app, request("GET", &auth, &format!("/{id}"), None)).await;
    assert_eq!(unchanged["webhook"]["url"], "https://hooks.example.com/h");
    assert_eq!(unchanged["webhook"]["events"], json!(["CLIENT_CREATED"]));

    let (status, _, answer) = call(
        &app,
        patch(json!({
            "url": "https://hooks.example.com/new",
            "events": ["TIMER_STOPPED", "CLIENT_CREATED", "TIMER_STOPPED"],
            "description": null,
            "filters": {}
        })),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["success"], true);
    let w = &answer["webhook"];
    assert_eq!(w["url"], "https://hooks.example.com/new");
    assert_eq!(w["events"], json!(["TIMER_STOPPED", "CLIENT_CREATED"]));
    assert_eq!(w["description"], Value::Null);
    assert_eq!(w["status"], "ACTIVE");
    assert!(w["updated_at"].as_str().unwrap() >= w["created_at"].as_str().unwrap());
    assert!(!answer.to_string().contains("whsec_"));
    assert_eq!(
        t.scalar(&format!(
            "SELECT count(*) AS n FROM audit_log WHERE action = 'webhook.updated' \
             AND target_id = '{id}' AND actor_user_id = '{}' \
             AND reason = 'changed url, events, description, filters'",
            t.user.id
        ))
        .await,
        1
    );
    // The stored subscription is what the answer says: later events and attempts use it.
    assert_eq!(
        t.scalar(&format!(
            "SELECT count(*) AS n FROM webhook_subscriptions WHERE id = '{id}' \
             AND url = 'https://hooks.example.com/new' \
             AND events = ARRAY['TIMER_STOPPED', 'CLIENT_CREATED'] AND description IS NULL"
        ))
        .await,
        1
    );

    // An empty change changes nothing and is not audited.
    let (status, _, _) = call(&app, patch(json!({}))).await;
    assert_eq!(status, 200);
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM audit_log WHERE action = 'webhook.updated'")
            .await,
        1
    );
}

#[actix_web::test]
async fn enable_makes_a_disabled_webhook_active_again_once_and_audited() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let id = subscribed(&t, &app, "https://hooks.example.com/h").await;
    let auth = t.bearer().1;
    let enable = |body: Option<Value>| request("POST", &auth, &format!("/{id}/enable"), body);

    // Disabled after days of failures.
    run_all(&t, &format!(
        "INSERT INTO events (id, workspace_id, event_type, body, created_at) \
         VALUES ('00000000-0000-0000-0000-0000000000e2', '{ws}', 'CLIENT_CREATED', '{{}}', \
                 now() - interval '6 days'); \
         INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, attempts, \
                                 next_attempt_at, created_at, updated_at) \
         VALUES ('00000000-0000-0000-0000-0000000000e2', '{id}', '{ws}', 'CANCELLED', 2, \
                 now(), now() - interval '6 days', now()); \
         INSERT INTO delivery_attempts (workspace_id, delivery_id, subscription_id, attempt, started_at, \
                                        latency_ms, status_code, error) \
         SELECT d.workspace_id, d.id, d.subscription_id, v.a, v.t::timestamptz, v.l, v.c, v.e FROM deliveries d JOIN (VALUES \
         ('00000000-0000-0000-0000-0000000000e2', '{id}', 1, now() - interval '5 days', 10, 500, 'HTTP 500'), \
         ('00000000-0000-0000-0000-0000000000e2', '{id}', 2, now() - interval '1 hour', 10, 500, 'HTTP 500')) AS v(ev, s, a, t, l, c, e) \
         ON d.event_id = v.ev::uuid AND d.subscription_id = v.s; \
         UPDATE webhook_subscriptions SET status = 'DISABLED', disabled_reason = 'failing', \
         failing_since = now() - interval '5 days' WHERE id = '{id}'",
        ws = t.workspace.id
    ))
    .await;
    for (body, detail) in [
        (json!({"replay_since": "last week"}), "replay_since"),
        (
            json!({"since": "2026-03-01T00:00:00Z"}),
            "unknown field `since`",
        ),
        (json!([1]), "object"),
    ] {
        let (status, _, answer) = call(&app, enable(Some(body.clone()))).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(answer["error"], "Invalid request parameters", "{body}");
        assert!(
            answer["detail"].as_str().unwrap().contains(detail),
            "{answer}"
        );
    }
    // Older than the retained events: refused before anything changes.
    let (status, _, answer) = call(
        &app,
        enable(Some(json!({"replay_since": "2026-03-01T00:00:00Z"}))),
    )
    .await;
    assert_eq!(
        (status, error_of(&answer)),
        (
            400,
            json!({"error": "since is older than the retained events (30 days)"})
        )
    );
    let (_, _, still) = call(&app, request("GET", &auth, &format!("/{id}"), None)).await;
    assert_eq!(
        still["webhook"]["status"], "DISABLED",
        "a refused request changes nothing"
    );
    assert_eq!(still["webhook"]["disabled_reason"], "failing");

    let (status, _, answer) = call(&app, enable(None)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["success"], true);
    assert_eq!(answer["replayed"], 0, "no replay asked for");
    assert_eq!(answer["webhook"]["status"], "ACTIVE");
    assert_eq!(answer["webhook"]["disabled_reason"], Value::Null);
    // The failure streak is cleared; the facts of the last attempt stay.
    let health = &answer["webhook"]["health"];
    assert_eq!(health["failing_since"], Value::Null, "{health}");
    assert_eq!(health["consecutive_failures"], 0, "{health}");
    assert_eq!(health["state"], "unknown", "no attempt since: {health}");
    assert_eq!(health["last_error"], "HTTP 500", "{health}");
    let audited = format!(
        "SELECT count(*) AS n FROM audit_log WHERE action = 'webhook.enabled' \
         AND target_id = '{id}' AND actor_user_id = '{}'",
        t.user.id
    );
    assert_eq!(t.scalar(&audited).await, 1);

    // Already active: 200 again, nothing more written.
    let (status, _, answer) = call(&app, enable(Some(json!({})))).await;
    assert_eq!(status, 200);
    assert_eq!(answer["webhook"]["status"], "ACTIVE");
    assert_eq!(t.scalar(&audited).await, 1);

    // Not the owner's: 404, untouched.
    t.execute(&format!(
        "UPDATE webhook_subscriptions SET status = 'DISABLED', disabled_reason = 'failing' WHERE id = '{id}'"
    ))
    .await;
    let eve = colleague(&t).await;
    let (status, _, answer) =
        call(&app, request("POST", &eve, &format!("/{id}/enable"), None)).await;
    assert_eq!(
        (status, error_of(&answer)),
        (404, json!({"error": "Webhook not found"}))
    );
    let (_, _, still) = call(&app, request("GET", &auth, &format!("/{id}"), None)).await;
    assert_eq!(still["webhook"]["status"], "DISABLED");
}

#[actix_web::test]
async fn enable_refuses_a_revoked_keys_webhook_and_one_over_the_cap() {
    let t = TestApp::with_settings(timetrack_api::StateSettings {
        webhooks: timetrack_domain::services::WebhookSettings {
            max_active_per_workspace: 1,
            ..timetrack_domain::services::WebhookSettings::default()
        },
        ..TestApp::relaxed()
    })
    .await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let first = subscribed(&t, &app, "https://hooks.example.com/1").await;
    t.execute(&format!(
        "UPDATE webhook_subscriptions SET status = 'DISABLED', disabled_reason = 'failing' WHERE id = '{first}'"
    ))
    .await;
    let second = subscribed(&t, &app, "https://hooks.example.com/2").await;
    let (status, _, answer) = call(
        &app,
        request("POST", &auth, &format!("/{first}/enable"), None),
    )
    .await;
    assert_eq!(
        (status, error_of(&answer)),
        (409, json!({"error": "Subscription limit reached"}))
    );

    // With room again, a webhook disabled by its key's revocation stays disabled.
    call(&app, request("DELETE", &auth, &format!("/{second}"), None)).await;
    let (key, secret) = t
        .admin
        .create_api_key(t.user.id, t.workspace.id, None)
        .await
        .unwrap();
    let other_auth = format!("Bearer {}", secret.expose());
    let (_, _, made) = call(
        &app,
        request(
            "POST",
            &other_auth,
            "/subscribe",
            Some(json!({"url": "https://hooks.example.com/3", "events": ["CLIENT_CREATED"]})),
        ),
    )
    .await;
    let third = made["webhook"]["id"].as_str().unwrap().to_owned();
    t.admin.revoke_api_key(key.id).await.unwrap();
    let (status, _, answer) = call(
        &app,
        request("POST", &auth, &format!("/{third}/enable"), None),
    )
    .await;
    assert_eq!(
        (status, error_of(&answer)),
        (409, json!({"error": "API key revoked"}))
    );
    let (_, _, still) = call(&app, request("GET", &auth, &format!("/{third}"), None)).await;
    assert_eq!(still["webhook"]["status"], "DISABLED");
    assert_eq!(still["webhook"]["disabled_reason"], "key_revoked");
}

#[actix_web::test]
async fn disable_pauses_a_webhook_until_enable_resumes_it() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let id = subscribed(&t, &app, "https://hooks.example.com/h").await;
    let auth = t.bearer().1;
    let client = |name: &str| keyed("POST", "/api/clients", &auth, Some(json!({"name": name})));
    let deliveries = |status: &str| {
        format!(
            "SELECT count(*) AS n FROM deliveries WHERE subscription_id = '{id}' \
             AND status = '{status}'"
        )
    };
    let (status, _, _) = call(&app, client("Before the pause")).await;
    assert_eq!(status, 201);
    assert_eq!(t.scalar(&deliveries("PENDING")).await, 1);

    let (status, _, answer) = call(
        &app,
        request("POST", &auth, &format!("/{id}/disable"), None),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["success"], true);
    let paused = &answer["webhook"];
    assert_eq!(paused["status"], "DISABLED");
    assert_eq!(paused["disabled_reason"], "manual");
    assert_eq!(paused["health"]["state"], "disabled");
    assert_eq!(paused["health"]["failing_since"], Value::Null);
    // What was queued is cancelled; what happens now is not queued for it.
    assert_eq!(t.scalar(&deliveries("PENDING")).await, 0);
    assert_eq!(t.scalar(&deliveries("CANCELLED")).await, 1);
    let (status, _, _) = call(&app, client("During the pause")).await;
    assert_eq!(status, 201);
    assert_eq!(
        t.scalar(&format!(
            "SELECT count(*) AS n FROM deliveries WHERE subscription_id = '{id}'"
        ))
        .await,
        1
    );
    let audited = format!(
        "SELECT count(*) AS n FROM audit_log WHERE action = 'webhook.disabled' \
         AND target_id = '{id}' AND actor_user_id = '{}' AND reason = 'paused by its owner'",
        t.user.id
    );
    assert_eq!(t.scalar(&audited).await, 1);

    // Again: 200, as it is, nothing more written; an empty JSON body is accepted too.
    let (status, _, answer) = call(
        &app,
        request("POST", &auth, &format!("/{id}/disable"), Some(json!({}))),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["webhook"]["disabled_reason"], "manual");
    assert_eq!(t.scalar(&audited).await, 1);

    // Another member's, an unknown or a malformed id: 404, untouched.
    let eve = colleague(&t).await;
    for (who, path) in [
        (&eve, format!("/{id}/disable")),
        (&auth, "/wh_0000000000000000/disable".to_owned()),
        (&auth, "/nope/disable".to_owned()),
    ] {
        let (status, _, answer) = call(&app, request("POST", who, &path, None)).await;
        assert_eq!(
            (status, error_of(&answer)),
            (404, json!({"error": "Webhook not found"})),
            "{path}"
        );
    }

    // Enable resumes it, and replays what it missed since the pause began.
    let (status, _, answer) = call(
        &app,
        request(
            "POST",
            &auth,
            &format!("/{id}/enable"),
            Some(json!({"replay_since": time::OffsetDateTime::now_utc()
                .saturating_sub(time::Duration::minutes(5))
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap()})),
        ),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["webhook"]["status"], "ACTIVE");
    assert_eq!(answer["webhook"]["disabled_reason"], Value::Null);
    assert_eq!(
        answer["replayed"], 2,
        "both events, the cancelled and the never queued"
    );
    assert_eq!(t.scalar(&deliveries("PENDING")).await, 2);

    // A deleted one cannot be paused.
    call(&app, request("DELETE", &auth, &format!("/{id}"), None)).await;
    let (status, _, _) = call(
        &app,
        request("POST", &auth, &format!("/{id}/disable"), None),
    )
    .await;
    assert_eq!(status, 404);
}
