//! Replaying a window of a webhook's events, and the quota on queueing again
//! (`subscriptions.md` section 5). No worker runs here, so what is queued stays pending.

use serde_json::{Value, json};

use crate::support::{TestApp, call, error_of};
use crate::webhooks_operate::{colleague, request, subscribed};
use crate::webhooks_recover::{E0, E1, E2, E3, E4, history};

#[actix_web::test]
async fn replay_queues_what_the_webhook_missed_in_the_window_oldest_first() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let id = subscribed(&t, &app, "https://hooks.example.com/replay").await;
    history(&t, &id).await;
    let replay = |body: Value| request("POST", &auth, &format!("/{id}/replay"), Some(body));
    let replayed = || async {
        let (_, _, page) = call(
            &app,
            request("GET", &auth, &format!("/{id}/deliveries?limit=200"), None),
        )
        .await;
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"] == "replay")
            .map(|d| d["event_id"].as_str().unwrap().to_owned())
            .rev()
            .collect::<Vec<_>>()
    };
    let since = time::OffsetDateTime::now_utc() - time::Duration::days(3);
    let since = timetrack_domain::timefmt::rfc3339(since);

    // Only failed (the default): the failed one and the one never queued; not the delivered
    // one, nor the pending one (on its way), nor the one from before the webhook.
    let (status, _, body) = call(&app, replay(json!({"since": since}))).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(
        body,
        json!({"success": true, "queued": 2, "truncated": false, "next_since": null})
    );
    assert_eq!(replayed().await, [E2, E4], "oldest first");
    // Again: both are pending now, so nothing.
    let (_, _, body) = call(&app, replay(json!({"since": since}))).await;
    assert_eq!(body["queued"], 0);

    // Everything in a window that ends before E4.
    let until = timetrack_domain::timefmt::rfc3339(
        time::OffsetDateTime::now_utc() - time::Duration::minutes(150),
    );
    let (_, _, body) = call(
        &app,
        replay(json!({"since": since, "until": until, "only_failed": false})),
    )
    .await;
    assert_eq!(body["queued"], 4, "{body}");
    assert_eq!(replayed().await, [E2, E4, E0, E1, E2, E3]);

    // Refusals, each changing nothing.
    let before = t.scalar("SELECT count(*) AS n FROM deliveries").await;
    let old = timetrack_domain::timefmt::rfc3339(
        time::OffsetDateTime::now_utc() - time::Duration::days(31),
    );
    for (body, status, message) in [
        (
            json!({"since": old}),
            400,
            "since is older than the retained events (30 days)",
        ),
        (
            json!({"since": since, "until": since}),
            400,
            "Invalid request parameters",
        ),
        (
            json!({"since": "yesterday"}),
            400,
            "Invalid request parameters",
        ),
        (json!({}), 400, "Invalid request parameters"),
        (
            json!({"since": since, "only_failed": "yes"}),
            400,
            "Invalid request parameters",
        ),
        (
            json!({"since": since, "extra": 1}),
            400,
            "Invalid request parameters",
        ),
    ] {
        let (got, _, answer) = call(&app, replay(body.clone())).await;
        assert_eq!(
            (got, error_of(&answer)),
            (status, json!({"error": message})),
            "{body}"
        );
    }
    let eve = colleague(&t).await;
    let (got, _, answer) = call(
        &app,
        request(
            "POST",
            &eve,
            &format!("/{id}/replay"),
            Some(json!({"since": since})),
        ),
    )
    .await;
    assert_eq!(
        (got, error_of(&answer)),
        (404, json!({"error": "Webhook not found"}))
    );
    t.execute(&format!(
        "UPDATE webhook_subscriptions SET status = 'DISABLED', disabled_reason = 'failing' WHERE id = '{id}'"
    ))
    .await;
    let (got, _, answer) = call(&app, replay(json!({"since": since}))).await;
    assert_eq!(
        (got, error_of(&answer)),
        (409, json!({"error": "Webhook is disabled"}))
    );
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM deliveries").await,
        before
    );

    // Enable with replay_since: active again, and what it missed is queued.
    t.execute(&format!(
        "UPDATE deliveries SET status = 'CANCELLED' WHERE subscription_id = '{id}' \
         AND status = 'PENDING'"
    ))
    .await;
    let (got, _, answer) = call(
        &app,
        request(
            "POST",
            &auth,
            &format!("/{id}/enable"),
            Some(json!({"replay_since": since})),
        ),
    )
    .await;
    assert_eq!(got, 200, "{answer}");
    assert_eq!(answer["webhook"]["status"], "ACTIVE");
    // Every event but the delivered one: E2, E3 and E4 were cancelled or failed.
    assert_eq!(answer["replayed"], 3, "{answer}");
}

/// A webhook's notices, as the worker writes them (`notice.sql`, checked in the adapter's
/// tests): about `about`, visible to its owner alone; their ids.
async fn notices_about(t: &TestApp, about: &str, first: u8) -> Vec<String> {
    let mut ids = Vec::new();
    for (n, event_type) in [(first, "WEBHOOK_FAILING"), (first + 1, "WEBHOOK_DISABLED")] {
        let id = format!("00000000-0000-4000-8000-0000000000{n:02x}");
        t.execute(&format!(
            "INSERT INTO events (id, workspace_id, event_type, body, created_at, \
                                 about_webhook_id, ordering_key, visible_to) \
             SELECT '{id}', workspace_id, '{event_type}', \
                    '{{\"webhook\": {{\"url\": \"' || url || '\"}}}}', \
                    now() - interval '1 hour', id, id, user_id \
             FROM webhook_subscriptions WHERE id = '{about}'"
        ))
        .await;
        ids.push(id);
    }
    ids
}

#[actix_web::test]
async fn replay_and_resend_never_send_a_notice_about_another_members_webhook() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let notices = json!(["WEBHOOK_FAILING", "WEBHOOK_DISABLED", "CLIENT_CREATED"]);
    let subscribe = |auth: &str, url: &str| {
        request(
            "POST",
            auth,
            "/subscribe",
            Some(json!({"url": url, "events": notices})),
        )
    };
    let (status, _, body) = call(&app, subscribe(&auth, "https://hooks.example.com/mine")).await;
    assert_eq!(status, 201, "{body}");
    let mine = body["webhook"]["id"].as_str().unwrap().to_owned();
    let other_of_mine = subscribed(&t, &app, "https://hooks.example.com/mine-too").await;
    let eve = colleague(&t).await;
    let (status, _, body) =
        call(&app, subscribe(&eve, "https://eve.example.com/secret-path")).await;
    assert_eq!(status, 201, "{body}");
    let eves = body["webhook"]["id"].as_str().unwrap().to_owned();
    let my_notices = notices_about(&t, &other_of_mine, 0x10).await;
    let eves_notices = notices_about(&t, &eves, 0x20).await;

    // Replay: my notices about my other webhook, never Eve's, whose URL they carry.
    let since = timetrack_domain::timefmt::rfc3339(
        time::OffsetDateTime::now_utc() - time::Duration::days(1),
    );
    let (status, _, body) = call(
        &app,
        request(
            "POST",
            &auth,
            &format!("/{mine}/replay"),
            Some(json!({"since": since, "only_failed": false})),
        ),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["queued"], 2, "{body}");
    let queued: Vec<String> = t
        .texts(&format!(
            "SELECT event_id::text AS t FROM deliveries WHERE subscription_id = '{mine}' \
             ORDER BY event_id"
        ))
        .await;
    assert_eq!(queued, my_notices);
    // Eve's replay the same way: hers, never mine.
    let (status, _, body) = call(
        &app,
        request(
            "POST",
            &eve,
            &format!("/{eves}/replay"),
            Some(json!({"since": since, "only_failed": false})),
        ),
    )
    .await;
    assert_eq!((status, &body["queued"]), (202, &json!(0)), "{body}");

    // A delivery of Eve's notice to my webhook (as a replay made before this rule could): the
    // log does not show it and resend does not send it.
    t.execute(&format!(
        "INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, attempts, \
                                 next_attempt_at, created_at, updated_at) \
         SELECT id, '{mine}', workspace_id, 'FAILED', 1, now(), now(), now() \
         FROM events WHERE id = '{}'",
        eves_notices[0]
    ))
    .await;
    let leaked = t
        .scalar(&format!(
            "SELECT id AS n FROM deliveries WHERE event_id = '{}'",
            eves_notices[0]
        ))
        .await;
    let before = t.scalar("SELECT count(*) AS n FROM deliveries").await;
    for (method, path) in [
        ("GET", format!("/{mine}/deliveries/{leaked}")),
        ("POST", format!("/{mine}/deliveries/{leaked}/resend")),
    ] {
        let (status, _, body) = call(&app, request(method, &auth, &path, None)).await;
        assert_eq!(
            (status, body),
            (404, json!({"error": "Delivery not found"})),
            "{method} {path}"
        );
    }
    let (_, _, log) = call(
        &app,
        request("GET", &auth, &format!("/{mine}/deliveries?limit=200"), None),
    )
    .await;
    assert!(!log.to_string().contains("secret-path"), "{log}");
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM deliveries").await,
        before
    );
}

#[actix_web::test]
async fn a_replay_stops_at_ten_thousand_and_says_where_to_go_on() {
    // Room for two calls' worth in the minute: the quota on queueing again has a test of its own.
    let t = TestApp::with_settings(timetrack_api::StateSettings {
        webhooks: timetrack_domain::services::WebhookSettings {
            requeue_per_minute: 20_000,
            ..timetrack_domain::services::WebhookSettings::default()
        },
        ..TestApp::relaxed()
    })
    .await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let id = subscribed(&t, &app, "https://hooks.example.com/many").await;
    t.execute(&format!(
        "UPDATE webhook_subscriptions SET created_at = now() - interval '1 day' WHERE id = '{id}'"
    ))
    .await;
    t.execute(&format!(
        "INSERT INTO events (id, workspace_id, event_type, body, created_at) \
         SELECT gen_random_uuid(), '{}', 'CLIENT_CREATED', '{{}}', \
                now() - interval '2 hours' + g * interval '1 millisecond' \
         FROM generate_series(1, 10005) g",
        t.workspace.id
    ))
    .await;
    let since = timetrack_domain::timefmt::rfc3339(
        time::OffsetDateTime::now_utc() - time::Duration::hours(3),
    );
    let (status, _, first) = call(
        &app,
        request(
            "POST",
            &auth,
            &format!("/{id}/replay"),
            Some(json!({"since": since})),
        ),
    )
    .await;
    assert_eq!(status, 202, "{first}");
    assert_eq!(first["queued"], 10_000);
    assert_eq!(first["truncated"], true);
    let next = first["next_since"].as_str().unwrap();
    let (_, _, rest) = call(
        &app,
        request(
            "POST",
            &auth,
            &format!("/{id}/replay"),
            Some(json!({"since": next, "only_failed": false})),
        ),
    )
    .await;
    assert_eq!(
        rest,
        json!({"success": true, "queued": 5, "truncated": false, "next_since": null})
    );
    assert_eq!(
        t.scalar(&format!(
            "SELECT count(DISTINCT event_id) AS n FROM deliveries WHERE subscription_id = '{id}'"
        ))
        .await,
        10_005,
        "every event once"
    );
}

#[actix_web::test]
async fn a_member_queues_again_at_most_the_quota_a_minute_and_a_replay_takes_what_fits() {
    let t = TestApp::with_settings(timetrack_api::StateSettings {
        webhooks: timetrack_domain::services::WebhookSettings {
            requeue_per_minute: 3,
            ..timetrack_domain::services::WebhookSettings::default()
        },
        ..TestApp::relaxed()
    })
    .await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let id = subscribed(&t, &app, "https://hooks.example.com/quota").await;
    history(&t, &id).await;
    let since = timetrack_domain::timefmt::rfc3339(
        time::OffsetDateTime::now_utc() - time::Duration::days(3),
    );
    // Five events in the window (E0 to E4), room for three: the oldest three, and where to go on.
    let (status, _, body) = call(
        &app,
        request(
            "POST",
            &auth,
            &format!("/{id}/replay"),
            Some(json!({"since": since, "only_failed": false})),
        ),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(
        (&body["queued"], &body["truncated"]),
        (&json!(3), &json!(true)),
        "{body}"
    );
    assert!(body["next_since"].is_string(), "{body}");
    // The quota is used up: a test, a resend and another replay are 429 with Retry-After, and
    // queue nothing.
    let before = t.scalar("SELECT count(*) AS n FROM deliveries").await;
    let (_, _, log) = call(
        &app,
        request("GET", &auth, &format!("/{id}/deliveries"), None),
    )
    .await;
    let delivery = log["data"][0]["id"].as_str().unwrap().to_owned();
    for (path, body) in [
        (format!("/{id}/test"), None),
        (format!("/{id}/deliveries/{delivery}/resend"), None),
        (format!("/{id}/replay"), Some(json!({"since": since}))),
    ] {
        let res = actix_web::test::call_service(&app, request("POST", &auth, &path, body)).await;
        assert_eq!(res.status(), 429, "{path}");
        let retry_after: u64 = res
            .headers()
            .get("retry-after")
            .unwrap()
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=60).contains(&retry_after), "{path}: {retry_after}");
        let body: Value = actix_web::test::read_body_json(res).await;
        assert_eq!(body, json!({"error": "Too many requests"}), "{path}");
    }
    assert_eq!(
        t.scalar("SELECT count(*) AS n FROM deliveries").await,
        before
    );
    // A minute later (as if: the counted deliveries made older), there is room again.
    t.execute("UPDATE deliveries SET created_at = created_at - interval '61 seconds' WHERE kind <> 'event'")
        .await;
    let (status, _, body) = call(&app, request("POST", &auth, &format!("/{id}/test"), None)).await;
    assert_eq!(status, 202, "{body}");
}
