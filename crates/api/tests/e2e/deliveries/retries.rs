//! Retries, a 410, and a webhook failing until it is disabled.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_500_is_retried_with_the_same_webhook_id_and_a_410_ends_the_subscription() {
    let s = Setup::new().await;
    s.receiver
        .respond("/flaky", Behaviour::Sequence(vec![500, 500, 200]));
    s.receiver.respond("/gone", Behaviour::Respond(410, vec![]));
    let (flaky_id, _) = s.subscribe("/flaky", &["CLIENT_CREATED"]).await;
    let (gone_id, _) = s.subscribe("/gone", &["CLIENT_CREATED"]).await;
    s.post("/api/clients", json!({"name": "First"})).await;
    assert!(
        s.receiver.wait_for(4, Duration::from_secs(20)).await,
        "got {}",
        s.receiver.received().len()
    );
    let received = s.receiver.received();
    let flaky = on(&received, "/flaky");
    assert_eq!(flaky.len(), 3);
    let ids: Vec<_> = flaky
        .iter()
        .map(|r| r.header("webhook-id").unwrap())
        .collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    assert!(
        flaky[1].at - flaky[0].at >= Duration::from_millis(700),
        "retried after the schedule's wait"
    );

    // The outcome is recorded just after the receiver answered: wait for it.
    let mut log = Value::Null;
    for _ in 0..50 {
        log = s
            .get(&format!(
                "/api/integrations/automation/webhooks/{flaky_id}/deliveries"
            ))
            .await;
        if log["data"][0]["status"] == "DELIVERED" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(log["data"][0]["status"], "DELIVERED", "{log}");
    assert_eq!(log["data"][0]["attempts"], 3);
    assert_eq!(log["data"][0]["last_status_code"], 200);

    // The 410 subscription is gone: not listed, and a new event does not reach it.
    let list = s.get("/api/integrations/automation/webhooks").await;
    let ids: Vec<&str> = list["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [flaky_id.as_str()]);
    assert!(!ids.contains(&gone_id.as_str()));
    s.post("/api/clients", json!({"name": "Second"})).await;
    assert!(s.receiver.wait_for(5, Duration::from_secs(10)).await);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(on(&s.receiver.received(), "/gone").len(), 1);

    // Failed attempts are WARN lines, one per webhook per minute: the two 500s are one line.
    let log = s.server.log().unwrap();
    let failed = |id: &str| {
        log.lines()
            .filter(|l| l.contains(" WARN ") && l.contains("delivery attempt failed"))
            .filter(|l| l.contains(id))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let flaky_lines = failed(&flaky_id);
    assert_eq!(flaky_lines.len(), 1, "{log}");
    assert!(
        flaky_lines[0].contains(r#"outcome="HTTP 500""#) && flaky_lines[0].contains("retry at"),
        "{log}"
    );
    let gone_lines = failed(&gone_id);
    assert_eq!(gone_lines.len(), 1, "{log}");
    assert!(gone_lines[0].contains("410 Gone"), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_webhook_failing_for_longer_than_the_setting_is_disabled_and_shows_it() {
    let s = Setup::with(&[
        ("TIMETRACK_WEBHOOK_DISABLE_AFTER", "2s"),
        (
            "TIMETRACK_WEBHOOK_RETRY_SCHEDULE",
            "1s,1s,1s,1s,1s,1s,1s,1s",
        ),
    ])
    .await;
    s.receiver.respond("/down", Behaviour::Respond(500, vec![]));
    let (id, _) = s.subscribe("/down", &["CLIENT_CREATED"]).await;
    let path = format!("/api/integrations/automation/webhooks/{id}");
    let health = s.get(&path).await["webhook"]["health"].clone();
    assert_eq!(health["state"], "unknown", "{health}");
    s.post("/api/clients", json!({"name": "First"})).await;

    let mut webhook = Value::Null;
    for _ in 0..200 {
        webhook = s.get(&path).await["webhook"].clone();
        if webhook["status"] == "DISABLED" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(webhook["status"], "DISABLED", "{webhook}");
    let health = &webhook["health"];
    assert_eq!(health["state"], "disabled", "{health}");
    assert_eq!(health["last_status_code"], 500, "{health}");
    assert_eq!(health["last_error"], "HTTP 500", "{health}");
    assert_eq!(health["last_success_at"], Value::Null, "{health}");
    assert!(
        health["consecutive_failures"].as_u64().unwrap() >= 3,
        "{health}"
    );
    let attempts = on(&s.receiver.received(), "/down").len();
    assert!(
        (3..=5).contains(&attempts),
        "disabled after about 2 s of failures, not before: {attempts} attempts"
    );

    // Nothing more is sent to it.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(on(&s.receiver.received(), "/down").len(), attempts);
}
