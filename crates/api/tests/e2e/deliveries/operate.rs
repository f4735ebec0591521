//! Operating a webhook: tests, rotations, recovery, notices, deletion and revocation.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_test_delivery_is_signed_sent_once_logged_and_leaves_health_alone() {
    let s = Setup::new().await;
    s.receiver.respond("/t", Behaviour::Respond(200, vec![]));
    let (id, secret) = s.subscribe("/t", &["TIMER_STARTED"]).await;
    let base = format!("/api/integrations/automation/webhooks/{id}");
    let (status, queued) = s.post(&format!("{base}/test"), json!({})).await;
    assert_eq!(status, 202, "{queued}");
    let received = received_until(&s, Duration::from_secs(10), |r| !r.is_empty()).await;
    let test = on(&received, "/t")[0];
    assert_eq!(test.header("x-webhook-event"), Some("WEBHOOK_TEST"));
    assert_signed(test, &secret);
    assert_verified_by_standard_webhooks(test, &secret);
    let body = body_of(test);
    assert_eq!(body["event"], "WEBHOOK_TEST");
    assert_eq!(body["webhook_id"], id.as_str());
    let detail = settled(&s, &id, queued["delivery"]["id"].as_str().unwrap()).await;
    assert_eq!(detail["status"], "DELIVERED", "{detail}");
    assert_eq!(detail["kind"], "test");
    assert_eq!(detail["attempts_log"][0]["status_code"], 200, "{detail}");
    assert_eq!(
        test.header("webhook-id"),
        detail["event_id"].as_str(),
        "the log names the webhook-id sent"
    );
    // The request as sent: every header the receiver got from the service, the signature
    // included, and the body as the payload.
    let shown = &detail["attempts_log"][0]["request_headers"];
    for name in [
        "content-type",
        "user-agent",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
        "x-webhook-event",
        "webhook-ordering-key",
        "webhook-sequence",
    ] {
        assert_eq!(shown[name].as_str(), test.header(name), "{name}: {shown}");
    }
    assert_eq!(shown.as_object().unwrap().len(), 8, "{shown}");
    assert!(!shown.to_string().contains(&secret), "never the secret");
    assert_eq!(detail["payload"], body);
    let health = s.get(&base).await["webhook"]["health"].clone();
    assert_eq!(
        health["state"], "unknown",
        "a test is not the webhook's health: {health}"
    );

    // A test sent as another type: that type's catalog sample, with that type's header, signed;
    // still a test (kind, never in the feed as that type).
    let (status, queued) = s
        .post(
            &format!("{base}/test"),
            json!({"event_type": "TIMER_STOPPED"}),
        )
        .await;
    assert_eq!(status, 202, "{queued}");
    assert_eq!(queued["delivery"]["event_type"], "TIMER_STOPPED");
    assert_eq!(queued["delivery"]["kind"], "test");
    let received = received_until(&s, Duration::from_secs(10), |r| on(r, "/t").len() == 2).await;
    let typed = on(&received, "/t")[1];
    assert_eq!(typed.header("x-webhook-event"), Some("TIMER_STOPPED"));
    assert_signed(typed, &secret);
    let catalog = s.get("/api/integrations/automation/event-types").await;
    let sample = catalog
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "TIMER_STOPPED")
        .unwrap()["sample"]
        .clone();
    assert_eq!(body_of(typed), sample, "the catalog's sample");
    let detail = settled(&s, &id, queued["delivery"]["id"].as_str().unwrap()).await;
    assert_eq!(
        detail["attempts_log"][0]["request_headers"]["x-webhook-event"],
        "TIMER_STOPPED"
    );
    let feed = s
        .get("/api/integrations/automation/events?types=TIMER_STOPPED")
        .await;
    assert_eq!(
        feed["data"],
        json!([]),
        "not a TIMER_STOPPED of the feed: {feed}"
    );
    for (body, code) in [
        (json!({"event_type": "NOPE"}), 400),
        (json!({"event_type": 5}), 400),
    ] {
        let (status, answer) = s.post(&format!("{base}/test"), body).await;
        assert_eq!(status, code, "{answer}");
    }

    // A failing test: one attempt, no retry, still no effect on health.
    s.receiver.respond("/t", Behaviour::Respond(500, vec![]));
    let (_, queued) = s.post(&format!("{base}/test"), json!({})).await;
    let detail = settled(&s, &id, queued["delivery"]["id"].as_str().unwrap()).await;
    assert_eq!(detail["status"], "FAILED", "{detail}");
    assert_eq!(detail["attempts"], 1);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(on(&s.receiver.received(), "/t").len(), 3, "never retried");
    let health = s.get(&base).await["webhook"]["health"].clone();
    assert_eq!(health["state"], "unknown", "{health}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rotated_secret_signs_beside_the_old_one_for_the_window_then_alone() {
    let s = Setup::new().await;
    s.receiver.respond("/r", Behaviour::Respond(200, vec![]));
    let (id, old) = s.subscribe("/r", &["CLIENT_CREATED"]).await;
    let (status, rotated) = s
        .post(
            &format!("/api/integrations/automation/webhooks/{id}/rotate-secret"),
            json!({"previous_valid_for_seconds": 4}),
        )
        .await;
    assert_eq!(status, 200, "{rotated}");
    let new = rotated["secret"].as_str().unwrap().to_owned();
    assert_ne!(new, old);

    // Inside the window: two signatures, new first; the libraries accept either secret.
    s.post("/api/clients", json!({"name": "Inside"})).await;
    let received = received_until(&s, Duration::from_secs(10), |r| !r.is_empty()).await;
    let inside = received[0].clone();
    let signatures: Vec<&str> = inside
        .header("webhook-signature")
        .unwrap()
        .split(' ')
        .collect();
    assert_eq!(signatures.len(), 2, "{signatures:?}");
    for secret in [&new, &old] {
        assert_verified_by_standard_webhooks(&inside, secret);
        assert_verified_by_the_guides_node_example(&inside, secret);
    }
    let unrelated = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    let (said, _) = verifier_says(python_verifier(), &inside, unrelated);
    assert!(said.starts_with("rejected"), "{said}");

    // After the window: the new secret alone.
    tokio::time::sleep(Duration::from_millis(4500)).await;
    s.post("/api/clients", json!({"name": "After"})).await;
    let received = received_until(&s, Duration::from_secs(10), |r| r.len() >= 2).await;
    let after = received[1].clone();
    assert!(
        !after.header("webhook-signature").unwrap().contains(' '),
        "one signature"
    );
    assert_signed(&after, &new);
    assert_verified_by_standard_webhooks(&after, &new);
    let (said, _) = verifier_says(python_verifier(), &after, &old);
    assert!(
        said.starts_with("rejected"),
        "the old secret no more: {said}"
    );
    let webhook = s
        .get(&format!("/api/integrations/automation/webhooks/{id}"))
        .await;
    assert_eq!(
        webhook["webhook"]["secret_rotation"],
        Value::Null,
        "{webhook}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_webhook_down_for_days_is_reported_disabled_tested_enabled_and_given_what_it_missed() {
    let s = Setup::with(&[
        ("TIMETRACK_WEBHOOK_FAILING_AFTER", "1s"),
        ("TIMETRACK_WEBHOOK_DISABLE_AFTER", "3s"),
        (
            "TIMETRACK_WEBHOOK_RETRY_SCHEDULE",
            "500ms,500ms,500ms,500ms,500ms,500ms,500ms,500ms,500ms,500ms",
        ),
    ])
    .await;
    s.receiver.respond("/down", Behaviour::Respond(500, vec![]));
    s.receiver
        .respond("/watch", Behaviour::Respond(200, vec![]));
    let notices = ["WEBHOOK_FAILING", "WEBHOOK_DISABLED", "WEBHOOK_RECOVERED"];
    // The failing webhook lists the notices too: it must never get those about itself.
    let (down, down_secret) = s
        .subscribe(
            "/down",
            &[
                "CLIENT_CREATED",
                "WEBHOOK_FAILING",
                "WEBHOOK_DISABLED",
                "WEBHOOK_RECOVERED",
            ],
        )
        .await;
    let (_watch, watch_secret) = s.subscribe("/watch", &notices).await;
    let since = time::OffsetDateTime::now_utc() - time::Duration::seconds(1);
    s.post("/api/clients", json!({"name": "Missed"})).await;

    let received =
        received_until(&s, Duration::from_secs(20), |r| on(r, "/watch").len() >= 2).await;
    let told: Vec<Value> = on(&received, "/watch").into_iter().map(body_of).collect();
    assert_eq!(told.len(), 2, "{told:?}");
    assert_eq!(told[0]["event"], "WEBHOOK_FAILING", "{told:?}");
    assert_eq!(told[1]["event"], "WEBHOOK_DISABLED", "{told:?}");
    assert_eq!(told[1]["reason"], "failing");
    for notice in &told {
        assert_eq!(notice["webhook"]["id"], down.as_str());
        assert_eq!(notice["webhook"]["url"], s.receiver.url("/down"));
        assert_eq!(notice["last_status_code"], 500);
        assert_eq!(notice["last_error"], "HTTP 500");
        assert!(notice["failing_since"].is_string(), "{notice}");
        assert!(notice["timestamp"].is_string(), "{notice}");
    }
    assert_eq!(told[0]["reason"], Value::Null);
    assert_eq!(told[0]["webhook"]["status"], "ACTIVE");
    assert_eq!(told[1]["webhook"]["status"], "DISABLED");
    let first_notice = on(&received, "/watch")[0];
    assert_eq!(
        first_notice.header("x-webhook-event"),
        Some("WEBHOOK_FAILING")
    );
    assert_verified_by_standard_webhooks(first_notice, &watch_secret);
    let failed: Vec<&Received> = on(&received, "/down");
    assert!(
        failed.iter().all(|r| body_of(r)["event"].is_null()),
        "no notice about itself"
    );
    let missed_id = failed[0].header("webhook-id").unwrap().to_owned();
    let log = s.server.log().unwrap();
    assert!(
        log.lines().any(|l| l.contains(" WARN ")
            && l.contains("webhook owner notified")
            && l.contains("WEBHOOK_DISABLED")),
        "{log}"
    );

    // Repaired: a test reaches the disabled webhook; enabling it replays what it missed.
    s.receiver.respond("/down", Behaviour::Respond(200, vec![]));
    let base = format!("/api/integrations/automation/webhooks/{down}");
    let (status, _) = s.post(&format!("{base}/test"), json!({})).await;
    assert_eq!(status, 202);
    let before = failed.len();
    let received = received_until(&s, Duration::from_secs(10), |r| {
        on(r, "/down").len() > before
    })
    .await;
    let test = on(&received, "/down")[before];
    assert_eq!(test.header("x-webhook-event"), Some("WEBHOOK_TEST"));
    assert_signed(test, &down_secret);
    assert_eq!(
        s.get(&base).await["webhook"]["status"],
        "DISABLED",
        "a test does not enable"
    );
    assert_eq!(
        s.get(&base).await["webhook"]["disabled_reason"],
        "failing",
        "disabled by the worker for failing"
    );
    let (status, enabled) = s
        .post(
            &format!("{base}/enable"),
            json!({"replay_since": timetrack_domain::timefmt::rfc3339(since)}),
        )
        .await;
    assert_eq!(status, 200, "{enabled}");
    assert_eq!(enabled["webhook"]["status"], "ACTIVE");
    assert_eq!(enabled["replayed"], 1, "{enabled}");
    let received = received_until(&s, Duration::from_secs(10), |r| {
        on(r, "/down").len() > before + 1
    })
    .await;
    let replayed = on(&received, "/down")[before + 1];
    assert_eq!(replayed.header("webhook-id"), Some(missed_id.as_str()));
    assert_eq!(body_of(replayed)["name"], "Missed");
    assert_signed(replayed, &down_secret);

    // Resend: the same event once more, with the same webhook-id.
    let page = s.get(&format!("{base}/deliveries")).await;
    let original = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "event" && d["event_type"] == "CLIENT_CREATED")
        .cloned()
        .unwrap();
    assert_eq!(original["status"], "CANCELLED", "{page}");
    let (status, resent) = s
        .post(
            &format!(
                "{base}/deliveries/{}/resend",
                original["id"].as_str().unwrap()
            ),
            json!({}),
        )
        .await;
    assert_eq!(status, 202, "{resent}");
    let received = received_until(&s, Duration::from_secs(10), |r| {
        on(r, "/down").len() > before + 2
    })
    .await;
    assert_eq!(
        on(&received, "/down")[before + 2].header("webhook-id"),
        Some(missed_id.as_str())
    );
    let detail = settled(&s, &down, resent["delivery"]["id"].as_str().unwrap()).await;
    assert_eq!(
        (detail["kind"].clone(), detail["status"].clone()),
        (json!("resend"), json!("DELIVERED"))
    );
    // Re-enabled by its owner: no WEBHOOK_RECOVERED for that.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(on(&s.receiver.received(), "/watch").len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn owners_are_told_of_a_failing_webhook_its_recovery_and_a_410() {
    let s = Setup::with(&[
        ("TIMETRACK_WEBHOOK_FAILING_AFTER", "1s"),
        (
            "TIMETRACK_WEBHOOK_RETRY_SCHEDULE",
            "600ms,600ms,600ms,600ms,600ms,600ms",
        ),
    ])
    .await;
    s.receiver
        .respond("/flaky", Behaviour::Sequence(vec![500, 500, 500, 500, 200]));
    s.receiver.respond("/gone", Behaviour::Respond(410, vec![]));
    s.receiver
        .respond("/watch", Behaviour::Respond(200, vec![]));
    let (flaky, _) = s.subscribe("/flaky", &["CLIENT_CREATED"]).await;
    let (gone, _) = s.subscribe("/gone", &["CLIENT_CREATED"]).await;
    s.subscribe(
        "/watch",
        &["WEBHOOK_FAILING", "WEBHOOK_DISABLED", "WEBHOOK_RECOVERED"],
    )
    .await;
    s.post("/api/clients", json!({"name": "Bumpy"})).await;
    let received =
        received_until(&s, Duration::from_secs(20), |r| on(r, "/watch").len() >= 3).await;
    let mut told: Vec<(String, String)> = on(&received, "/watch")
        .into_iter()
        .map(|r| {
            let body = body_of(r);
            (
                body["event"].as_str().unwrap().to_owned(),
                body["webhook"]["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    told.sort();
    assert_eq!(
        told,
        [
            ("WEBHOOK_DISABLED".to_owned(), gone.clone()),
            ("WEBHOOK_FAILING".to_owned(), flaky.clone()),
            ("WEBHOOK_RECOVERED".to_owned(), flaky.clone()),
        ]
    );
    let gone_notice = on(&received, "/watch")
        .into_iter()
        .map(body_of)
        .find(|b| b["event"] == "WEBHOOK_DISABLED")
        .unwrap();
    assert_eq!(gone_notice["reason"], "gone");
    assert_eq!(gone_notice["webhook"]["status"], "DELETED");
    assert_eq!(gone_notice["last_status_code"], 410);
    let recovered = on(&received, "/watch")
        .into_iter()
        .map(body_of)
        .find(|b| b["event"] == "WEBHOOK_RECOVERED")
        .unwrap();
    assert_eq!(recovered["last_status_code"], 200);
    assert_eq!(recovered["last_error"], Value::Null);
    assert_eq!(recovered["reason"], Value::Null);
    // The notices fit the catalog's schemas.
    assert_eq!(
        assert_valid_against_the_catalog(&s, &on(&received, "/watch")).await,
        ["WEBHOOK_DISABLED", "WEBHOOK_FAILING", "WEBHOOK_RECOVERED"]
    );
    // Once per streak: nothing more.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(on(&s.receiver.received(), "/watch").len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_subscription_gets_nothing_and_delivery_is_prompt() {
    // It measures latency: not beside the tests that load the machine.
    let _heavy = HEAVY.lock().await;
    let s = Setup::new().await;
    let (id, _) = s.subscribe("/deleted", &["CLIENT_CREATED"]).await;
    let res = s
        .client
        .delete(format!(
            "{}/api/integrations/automation/webhooks/{id}",
            s.server.base
        ))
        .bearer_auth(&s.key)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    s.subscribe("/live", &["CLIENT_CREATED"]).await;
    let before = Instant::now();
    s.post("/api/clients", json!({"name": "Prompt"})).await;
    assert!(s.receiver.wait_for(1, Duration::from_secs(5)).await);
    // Woken by NOTIFY, not by the poll: well under a second on an idle system.
    assert!(
        before.elapsed() < Duration::from_millis(400),
        "{:?}",
        before.elapsed()
    );
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        s.receiver
            .received()
            .iter()
            .map(|r| r.path.as_str())
            .collect::<Vec<_>>(),
        ["/live"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revoked_keys_subscription_gets_nothing_more_not_even_retries() {
    let s = Setup::new().await;
    let me = s.get("/api/me").await;
    let url = s._db.url().to_owned();
    let (user, workspace) = (
        me["user"]["id"].as_str().unwrap().to_owned(),
        me["workspace"]["id"].as_str().unwrap().to_owned(),
    );
    let doomed = tokio::task::spawn_blocking(move || {
        json_stdout(&run(
            &[
                "admin",
                "create-api-key",
                "--user",
                &user,
                "--workspace",
                &workspace,
            ],
            &url,
        ))
    })
    .await
    .unwrap();
    let original_key = s.key.clone();
    let s = Setup {
        key: doomed["key"].as_str().unwrap().to_owned(),
        ..s
    };
    s.receiver
        .respond("/revoked", Behaviour::Respond(500, vec![]));
    s.subscribe("/revoked", &["CLIENT_CREATED"]).await;
    s.post("/api/clients", json!({"name": "Before"})).await;
    // The first attempt fails with 500; its retry is queued for a second later.
    assert!(s.receiver.wait_for(1, Duration::from_secs(10)).await);
    let url = s._db.url().to_owned();
    let key_id = doomed["id"].as_str().unwrap().to_owned();
    let revoked = tokio::task::spawn_blocking(move || {
        json_stdout(&run(&["admin", "revoke-api-key", "--id", &key_id], &url))
    })
    .await
    .unwrap();
    assert!(revoked["revoked_at"].is_string(), "{revoked}");
    let attempts_at_revocation = on(&s.receiver.received(), "/revoked").len();

    // Events from another key of the workspace reach its own subscription only.
    let s = Setup {
        key: original_key,
        ..s
    };
    s.subscribe("/witness", &["CLIENT_CREATED"]).await;
    s.post("/api/clients", json!({"name": "After"})).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while on(&s.receiver.received(), "/witness").is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(on(&s.receiver.received(), "/witness").len(), 1);
    // Three retries a second apart would have come by now.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(
        on(&s.receiver.received(), "/revoked").len(),
        attempts_at_revocation,
        "nothing more reached the revoked key's subscription"
    );
}
