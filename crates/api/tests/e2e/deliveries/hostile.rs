//! Receivers that answer binary or never answer hold up nobody else.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_binary_answer_is_logged_lossy_and_holds_up_no_other_delivery() {
    let s = Setup::new().await;
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    s.receiver.respond("/binary", Behaviour::Body(200, png));
    let (binary, _) = s.subscribe("/binary", &["CLIENT_CREATED"]).await;
    s.subscribe("/healthy", &["CLIENT_CREATED"]).await;
    for n in 0..10 {
        let (status, body) = s
            .post("/api/clients", json!({"name": format!("Client {n}")}))
            .await;
        assert_eq!(status, 201, "{body}");
    }
    received_until(&s, Duration::from_secs(5), |r| {
        on(r, "/healthy").len() >= 10 && on(r, "/binary").len() >= 10
    })
    .await;
    // Recorded once each: nothing is sent again.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let received = s.receiver.received();
    assert_eq!(on(&received, "/healthy").len(), 10);
    assert_eq!(on(&received, "/binary").len(), 10);
    let log = s
        .get(&format!(
            "/api/integrations/automation/webhooks/{binary}/deliveries"
        ))
        .await;
    let deliveries = log["data"].as_array().unwrap();
    assert_eq!(deliveries.len(), 10, "{log}");
    assert!(
        deliveries.iter().all(|d| d["status"] == "DELIVERED"),
        "{log}"
    );
    let detail = settled(&s, &binary, deliveries[0]["id"].as_str().unwrap()).await;
    let attempt = &detail["attempts_log"][0];
    assert_eq!(attempt["status_code"], 200, "{detail}");
    assert_eq!(
        attempt["response_body"],
        "\u{FFFD}PNG\r\n\u{1a}\n\u{FFFD}\u{FFFD}\u{FFFD}\rIHDR"
    );
    assert_eq!(attempt["response_body_lossy"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subscriber_that_never_answers_does_not_delay_the_others() {
    let _heavy = HEAVY.lock().await;
    let s = Setup::new().await;
    s.receiver
        .respond("/stuck", Behaviour::Slow(Duration::from_secs(60), 200));
    s.subscribe("/stuck", &["CLIENT_CREATED"]).await;
    s.subscribe("/healthy", &["CLIENT_CREATED"]).await;
    for n in 0..20 {
        let (status, body) = s
            .post("/api/clients", json!({"name": format!("Client {n}")}))
            .await;
        assert_eq!(status, 201, "{body}");
    }
    let started = Instant::now();
    loop {
        if on(&s.receiver.received(), "/healthy").len() == 20 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "healthy deliveries held up behind the stuck subscriber"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The stuck subscriber holds at most its in-flight cap of connections.
    assert!(on(&s.receiver.received(), "/stuck").len() <= 10);
}

#[tokio::test(flavor = "multi_thread")]
async fn workspaces_whose_endpoints_hang_leave_the_other_workspaces_their_slots() {
    let _heavy = HEAVY.lock().await;
    let s = Setup::new().await;
    let url = s._db.url().to_owned();
    let keys = tokio::task::spawn_blocking(move || {
        ["Hangs too", "Healthy"].map(|name| seed_account(&url, &["--name", name]))
    })
    .await
    .unwrap();
    let [second, healthy] = [&keys[0], &keys[1]];
    let send = |key: &str, path: &str, body: Value| {
        s.client
            .post(format!("{}{path}", s.server.base))
            .bearer_auth(key)
            .json(&body)
            .send()
    };
    // Two workspaces, each with eight webhooks that accept the request and never answer (the
    // time-out is 15 s) and 96 deliveries to them (80 within the webhooks' in-flight caps):
    // each alone wants more than the process's 64 slots.
    for (n, key) in [&s.key, second].into_iter().enumerate() {
        for hook in 0..8 {
            let path = format!("/hang-{n}/{hook}");
            s.receiver
                .respond(&path, Behaviour::Slow(Duration::from_secs(60), 200));
            let res = send(
                key,
                "/api/integrations/automation/webhooks/subscribe",
                json!({"url": s.receiver.url(&path), "events": ["CLIENT_CREATED"]}),
            )
            .await
            .unwrap();
            assert_eq!(res.status(), 201);
        }
        for event in 0..12 {
            let res = send(
                key,
                "/api/clients",
                json!({"name": format!("C {n} {event}")}),
            )
            .await
            .unwrap();
            assert_eq!(res.status(), 201);
        }
        let prefix = format!("/hang-{n}/");
        let hung = move |r: &[Received]| r.iter().filter(|r| r.path.starts_with(&prefix)).count();
        let h = hung.clone();
        received_until(&s, Duration::from_secs(5), move |r| h(r) >= 48).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            hung(&s.receiver.received()),
            48,
            "workspace {n} holds its share of the process's slots (three quarters), no more"
        );
    }

    // A third workspace: each of its events arrives at once, not after the time-out, though
    // the two hold every slot between them (their attempts, unanswered for over a second,
    // are slow and no longer take the process's slots).
    let res = send(
        healthy,
        "/api/integrations/automation/webhooks/subscribe",
        json!({"url": s.receiver.url("/healthy"), "events": ["CLIENT_CREATED"]}),
    )
    .await
    .unwrap();
    assert_eq!(res.status(), 201);
    for n in 0..5 {
        let created = Instant::now();
        let res = send(
            healthy,
            "/api/clients",
            json!({"name": format!("Healthy {n}")}),
        )
        .await
        .unwrap();
        assert_eq!(res.status(), 201);
        let got =
            received_until(&s, Duration::from_secs(10), |r| on(r, "/healthy").len() > n).await;
        assert!(
            on(&got, "/healthy").len() > n && created.elapsed() < Duration::from_secs(2),
            "event {n} of the other workspace took {:?}",
            created.elapsed()
        );
    }
}
