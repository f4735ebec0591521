//! The metrics listener, and a client's malformed bytes counted.

use super::*;

fn metric(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_are_served_on_their_own_listener() {
    let s = Setup::new().await;
    s.subscribe("/ok", &["CLIENT_CREATED"]).await;
    for n in 0..3 {
        s.post("/api/clients", json!({"name": format!("Client {n}")}))
            .await;
    }
    assert!(s.receiver.wait_for(3, Duration::from_secs(10)).await);
    s.receiver
        .respond("/failing", Behaviour::Respond(500, vec![]));
    s.subscribe("/failing", &["CLIENT_CREATED"]).await;
    // Deliveries of the new client: one to /ok, one failing to /failing.
    s.post("/api/clients", json!({"name": "Fourth"})).await;
    assert!(s.receiver.wait_for(5, Duration::from_secs(10)).await);
    // The console's page and an asset are labelled with their routes too.
    for path in ["/console", "/console/assets/app.js"] {
        let res = s
            .client
            .get(format!("{}{path}", s.server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{path}");
    }
    // The outcome is recorded just after the response.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let res = s
        .client
        .get(format!("{}/metrics", s.server.metrics.as_ref().unwrap()))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    let text = res.text().await.unwrap();
    assert_eq!(
        metric(
            &text,
            r#"timetrack_http_requests_total{method="POST",route="/api/clients",status="201"}"#
        ),
        4.0
    );
    for route in ["/console", "/console/assets/{name:.+}"] {
        let series = format!(
            r#"timetrack_http_requests_total{{method="GET",route="{route}",status="200"}}"#
        );
        assert_eq!(metric(&text, &series), 1.0, "{route}");
    }
    assert!(!text.contains(r#"route="unmatched""#), "{text}");
    assert_eq!(
        metric(
            &text,
            r#"timetrack_webhook_attempts_total{outcome="delivered",detail="2xx"}"#
        ),
        4.0
    );
    assert!(
        metric(
            &text,
            r#"timetrack_webhook_attempts_total{outcome="rejected",detail="5xx"}"#
        ) >= 1.0
    );
    assert!(metric(&text, "timetrack_webhook_attempt_duration_seconds_count") >= 5.0);
    assert_eq!(metric(&text, "timetrack_webhook_queue_readable"), 1.0);
    // The failing delivery is pending, in exactly one state; nothing else is.
    let pending: f64 = ["due", "scheduled", "in_flight"]
        .iter()
        .map(|state| {
            metric(
                &text,
                &format!(r#"timetrack_webhook_queue_depth{{state="{state}"}}"#),
            )
        })
        .sum();
    assert_eq!(pending, 1.0, "{text}");
    metric(&text, "timetrack_webhook_oldest_due_age_seconds");

    // Not on the public port; anything else on the metrics port is JSON 404.
    let public = s
        .client
        .get(format!("{}/metrics", s.server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(public.status(), 404);
    let other = s
        .client
        .get(format!("{}/other", s.server.metrics.as_ref().unwrap()))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 404);
    assert_eq!(
        other.json::<Value>().await.unwrap(),
        json!({"error": "Not found"})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clients_malformed_bytes_are_counted_not_logged_as_errors() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = Setup::new().await;
    let address = s.server.base.trim_start_matches("http://").to_owned();
    for garbage in [
        &b"GARBAGE\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03",
    ] {
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        stream.write_all(garbage).await.unwrap();
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let text = s
        .client
        .get(format!("{}/metrics", s.server.metrics.as_ref().unwrap()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        metric(&text, "timetrack_http_client_faults_total"),
        3.0,
        "{text}"
    );
    let log = s.server.log().unwrap_or_default();
    assert!(
        !log.lines().any(|l| l.contains("ERROR")),
        "a client's fault is not an ERROR line: {log}"
    );
}
