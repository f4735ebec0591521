//! A webhook's statistics and an event's deliveries across one's own webhooks.

use serde_json::json;

use crate::support::{TestApp, call, error_of, keyed};
use crate::webhooks_operate::{colleague, request, run_all, subscribed};

#[actix_web::test]
async fn stats_count_the_last_24_hours_of_attempts_by_hour_for_the_owner_only() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let id = subscribed(&t, &app, "https://hooks.example.com/h").await;
    let auth = t.bearer().1;
    let stats = || request("GET", &auth, &format!("/{id}/stats"), None);

    let (status, _, empty) = call(&app, stats()).await;
    assert_eq!(status, 200, "{empty}");
    let buckets = empty["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 24);
    let starts: Vec<time::OffsetDateTime> = buckets
        .iter()
        .map(|b| {
            time::OffsetDateTime::parse(
                b["start"].as_str().unwrap(),
                &time::format_description::well_known::Rfc3339,
            )
            .unwrap()
        })
        .collect();
    for pair in starts.windows(2) {
        assert_eq!(
            pair[1] - pair[0],
            time::Duration::hours(1),
            "consecutive hours"
        );
    }
    let current = starts[23];
    assert_eq!((current.minute(), current.second()), (0, 0));
    assert!(time::OffsetDateTime::now_utc() - current < time::Duration::hours(1));
    assert!(buckets.iter().all(|b| b["delivered"] == 0
        && b["failed"] == 0
        && b["p50_ms"].is_null()
        && b["p95_ms"].is_null()));

    // Attempts in the current hour, two hours back, and one older than the window.
    let hour = empty["buckets"][23]["start"].as_str().unwrap().to_owned();
    let at = |offset: &str| format!("'{hour}'::timestamptz + interval '{offset}'");
    run_all(
        &t,
        &format!(
            "INSERT INTO events (id, workspace_id, event_type, body, created_at) \
         VALUES ('00000000-0000-0000-0000-0000000000e3', '{ws}', 'CLIENT_CREATED', '{{}}', now()); \
         INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, attempts, \
                                 next_attempt_at, created_at, updated_at) \
         VALUES ('00000000-0000-0000-0000-0000000000e3', '{id}', '{ws}', 'DELIVERED', 5, \
                 now(), now(), now()); \
         INSERT INTO delivery_attempts (workspace_id, delivery_id, subscription_id, attempt, started_at, \
                                        latency_ms, status_code, error) \
         SELECT d.workspace_id, d.id, d.subscription_id, v.a, v.t::timestamptz, v.l, v.c, v.e FROM deliveries d JOIN (VALUES \
         ('00000000-0000-0000-0000-0000000000e3', '{id}', 1, {a1}, 100, 500, 'HTTP 500'), \
         ('00000000-0000-0000-0000-0000000000e3', '{id}', 2, {a2}, 300, 200, NULL), \
         ('00000000-0000-0000-0000-0000000000e3', '{id}', 3, {a3}, 40, 204, NULL), \
         ('00000000-0000-0000-0000-0000000000e3', '{id}', 4, {a4}, 20, 200, NULL), \
         ('00000000-0000-0000-0000-0000000000e3', '{id}', 5, {a5}, 10, NULL, 'timeout')) AS v(ev, s, a, t, l, c, e) \
         ON d.event_id = v.ev::uuid AND d.subscription_id = v.s",
            ws = t.workspace.id,
            a1 = at("1 second"),
            a2 = at("2 seconds"),
            a3 = at("3 seconds"),
            a4 = at("-2 hours 5 minutes"),
            a5 = at("-24 hours"),
        ),
    )
    .await;
    let (_, _, body) = call(&app, stats()).await;
    let buckets = body["buckets"].as_array().unwrap();
    if buckets[23]["start"] != empty["buckets"][23]["start"] {
        // The hour turned between the two requests: the attempts are an hour back now.
        return;
    }
    assert_eq!(
        buckets[23],
        json!({"start": empty["buckets"][23]["start"], "delivered": 2, "failed": 1,
               "p50_ms": 100, "p95_ms": 300})
    );
    assert_eq!(buckets[21]["delivered"], 1);
    assert_eq!(buckets[21]["failed"], 0);
    assert_eq!(buckets[21]["p50_ms"], 20);
    let others: u64 = buckets
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 21 && *i != 23)
        .map(|(_, b)| b["delivered"].as_u64().unwrap() + b["failed"].as_u64().unwrap())
        .sum();
    assert_eq!(others, 0, "the attempt older than 24 hours is not counted");

    // Another member: 404.
    let eve = colleague(&t).await;
    let (status, _, body) = call(&app, request("GET", &eve, &format!("/{id}/stats"), None)).await;
    assert_eq!(
        (status, error_of(&body)),
        (404, json!({"error": "Webhook not found"}))
    );
}

#[actix_web::test]
async fn an_events_deliveries_are_listed_across_ones_own_live_webhooks() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let auth = t.bearer().1;
    let first = subscribed(&t, &app, "https://hooks.example.com/1").await;
    let second = subscribed(&t, &app, "https://hooks.example.com/2").await;
    let gone = subscribed(&t, &app, "https://hooks.example.com/3").await;
    let (status, _, _) = call(
        &app,
        keyed(
            "POST",
            "/api/clients",
            &auth,
            Some(json!({"name": "Fanned Co"})),
        ),
    )
    .await;
    assert_eq!(status, 201);
    call(&app, request("DELETE", &auth, &format!("/{gone}"), None)).await;
    let event = t
        .texts("SELECT id::text AS t FROM events WHERE event_type = 'CLIENT_CREATED'")
        .await
        .pop()
        .unwrap();
    let path = format!("/api/integrations/automation/events/{event}/deliveries");

    let (status, _, answer) = call(&app, keyed("GET", &path, &auth, None)).await;
    assert_eq!(status, 200, "{answer}");
    let data = answer["data"].as_array().unwrap();
    let webhooks: Vec<&str> = data
        .iter()
        .map(|d| d["webhook_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        webhooks,
        [second.as_str(), first.as_str()],
        "newest first, the deleted one left out"
    );
    for d in data {
        assert_eq!(d["event_id"], event.as_str());
        assert_eq!(d["event_type"], "CLIENT_CREATED");
        assert_eq!(d["status"], "PENDING");
        assert_eq!(d["kind"], "event");
    }

    // Another member of the workspace sees the event but has no webhook: none.
    let eve = colleague(&t).await;
    let (status, _, answer) = call(&app, keyed("GET", &path, &eve, None)).await;
    assert_eq!((status, answer), (200, json!({"data": []})));

    // Another workspace's key, an unknown and a malformed id: not found.
    let (_, stranger) = t.other_workspace().await;
    let unknown = format!(
        "/api/integrations/automation/events/{}/deliveries",
        uuid::Uuid::new_v4()
    );
    for (who, path) in [
        (&stranger, path.clone()),
        (&auth, unknown),
        (
            &auth,
            "/api/integrations/automation/events/nope/deliveries".to_owned(),
        ),
    ] {
        let (status, _, answer) = call(&app, keyed("GET", &path, who, None)).await;
        assert_eq!(
            (status, error_of(&answer)),
            (404, json!({"error": "Event not found"})),
            "{path}"
        );
    }
}
