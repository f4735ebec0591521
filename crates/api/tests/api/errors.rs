//! Errors that do not come from handlers: unknown routes, wrong methods; all JSON.

use actix_web::test;
use serde_json::json;

use crate::support::{TestApp, call};

#[actix_web::test]
async fn unknown_routes_are_json_404() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for uri in [
        "/",
        "/api",
        "/api/nope",
        "/api/health/x",
        "/api/me/../../etc/passwd",
        "/%ff",
    ] {
        let (status, content_type, body) =
            call(&app, test::TestRequest::get().uri(uri).to_request()).await;
        assert_eq!(status, 404, "{uri}");
        assert_eq!(content_type, "application/json");
        assert_eq!(body, json!({"error": "Not found"}), "{uri}");
    }
}

#[actix_web::test]
async fn wrong_methods_are_json_405_naming_the_allowed_ones() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for (method, uri, allow) in [
        ("POST", "/api/health", "GET"),
        ("DELETE", "/api/health", "GET"),
        ("PUT", "/api/me", "GET"),
        ("PATCH", "/api/me", "GET"),
        ("PUT", "/api/clients", "POST, GET"),
        (
            "POST",
            "/api/clients/00000000-0000-4000-8000-000000000000",
            "GET, PATCH, DELETE",
        ),
        (
            "GET",
            "/api/integrations/automation/webhooks/subscribe",
            "POST",
        ),
        ("TRACE", "/api/time-entries", "POST, GET"),
    ] {
        let req = test::TestRequest::default()
            .method(method.parse().unwrap())
            .uri(uri)
            .insert_header(t.bearer())
            .to_request();
        let res = test::call_service(&app, req).await;
        assert_eq!(res.status(), 405, "{method} {uri}");
        assert_eq!(
            res.headers().get("allow").and_then(|v| v.to_str().ok()),
            Some(allow),
            "{method} {uri}"
        );
        assert_eq!(
            res.headers().get("content-type").unwrap(),
            "application/json"
        );
        let body: serde_json::Value = test::read_body_json(res).await;
        assert_eq!(body, json!({"error": "Method not allowed"}));
    }
}

#[actix_web::test]
async fn every_response_carries_a_request_id() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for uri in ["/api/health", "/api/nope"] {
        let res = test::call_service(&app, test::TestRequest::get().uri(uri).to_request()).await;
        let id = res
            .headers()
            .get("x-request-id")
            .expect("x-request-id")
            .to_str()
            .unwrap();
        assert!(uuid::Uuid::parse_str(id).is_ok(), "{id}");
    }
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[actix_web::test]
async fn each_request_logs_one_line_with_its_route_status_and_request_id() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let captured = Captured::default();
    let writer = captured.clone();
    // The server's logger as `telemetry::init` installs it in JSON at `info`, on this thread.
    let subscriber = timetrack_api::telemetry::subscriber(
        tracing_subscriber::EnvFilter::new("info"),
        timetrack_api::config::LogFormat::Json,
        move || writer.clone(),
    );
    let _guard = tracing::subscriber::set_default(subscriber);
    let id = uuid::Uuid::new_v4();
    let mut answered = Vec::new();
    for req in [
        test::TestRequest::get()
            .uri(&format!("/api/clients/{id}"))
            .insert_header(t.bearer()),
        test::TestRequest::post().uri("/api/health"),
        test::TestRequest::get().uri("/api/nope?x=1"),
    ] {
        let res = test::call_service(&app, req.to_request()).await;
        let request_id = res
            .headers()
            .get("x-request-id")
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        answered.push((res.status().as_u16(), request_id));
    }
    let lines: Vec<serde_json::Value> = String::from_utf8(captured.0.lock().unwrap().clone())
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        // Each request's access line (an error also logs its own).
        .filter(|line: &serde_json::Value| line["target"] == "access")
        .collect();
    assert_eq!(lines.len(), 3, "{lines:#?}");
    // The route is named when the path is not the route itself.
    let expected = [
        (
            "GET",
            format!("/api/clients/{id}"),
            Some("/api/clients/{id}"),
        ),
        ("POST", "/api/health".to_owned(), None),
        ("GET", "/api/nope".to_owned(), Some("unmatched")),
    ];
    for ((line, (status, request_id)), (method, target, route)) in
        lines.iter().zip(&answered).zip(expected)
    {
        let fields = &line["fields"];
        assert_eq!(fields["method"], method, "{line}");
        assert_eq!(fields["path"], target.as_str(), "{line}");
        assert_eq!(fields["route"].as_str(), route, "{line}");
        assert_eq!(fields["status"], *status, "{line}");
        assert!(
            fields["ms"].as_str().unwrap().parse::<f64>().is_ok(),
            "{line}"
        );
        assert_eq!(line["span"]["name"], "request", "{line}");
        assert_eq!(line["span"]["id"], request_id.as_str(), "{line}");
    }
    assert_eq!(
        answered.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
        [404, 405, 404]
    );
}

/// The request lines a text-format logger writes while `requests` are answered by an app with
/// `settings`.
async fn text_log_lines(
    settings: timetrack_api::StateSettings,
    requests: impl FnOnce(&TestApp) -> Vec<test::TestRequest>,
) -> Vec<String> {
    let t = TestApp::with_settings(settings).await;
    let requests = requests(&t);
    let app = t.service().await;
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = timetrack_api::telemetry::subscriber(
        tracing_subscriber::EnvFilter::new("info"),
        timetrack_api::config::LogFormat::Text,
        move || writer.clone(),
    );
    let _guard = tracing::subscriber::set_default(subscriber);
    for req in requests {
        test::call_service(&app, req.to_request()).await;
    }
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    text.lines()
        .filter(|line| line.contains(" access: "))
        .map(str::to_owned)
        .collect()
}

#[actix_web::test]
async fn the_access_log_shows_the_socket_peer_and_quotes_what_clients_send() {
    let lines = text_log_lines(TestApp::relaxed(), |_| {
        vec![
            test::TestRequest::get()
                .uri("/api/health")
                .peer_addr("203.0.113.9:5000".parse().unwrap())
                .insert_header(("X-Forwarded-For", "1.2.3.4 admin=true"))
                .insert_header(("Forwarded", "for=5.6.7.8"))
                .insert_header(("User-Agent", "probe status=999 otel=1")),
        ]
    })
    .await;
    assert_eq!(lines.len(), 1, "{lines:#?}");
    let line = &lines[0];
    assert!(line.contains("client=203.0.113.9 "), "{line}");
    assert!(
        !line.contains("1.2.3.4") && !line.contains("5.6.7.8"),
        "{line}"
    );
    assert!(
        line.contains(r#"agent="probe status=999 otel=1""#),
        "{line}"
    );
    assert!(!line.contains(" admin=true"), "{line}");
}

#[actix_web::test]
async fn the_access_log_keeps_the_start_of_a_user_agent_whatever_its_length() {
    let browser = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
                   Chrome/131.0.0.0 Safari/537.36";
    let huge = "x".repeat(4000);
    let lines = text_log_lines(TestApp::relaxed(), |_| {
        [browser, huge.as_str()]
            .into_iter()
            .map(|agent| {
                test::TestRequest::get()
                    .uri("/api/health")
                    .peer_addr("203.0.113.9:5000".parse().unwrap())
                    .insert_header(("User-Agent", agent))
            })
            .collect()
    })
    .await;
    assert_eq!(lines.len(), 2, "{lines:#?}");
    let kept: String = browser.chars().take(64).collect();
    assert!(
        lines[0].contains(&format!(r#"agent="{kept}…""#)),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains(&format!(r#"agent="{}…""#, "x".repeat(64))),
        "{}",
        lines[1]
    );
    assert!(lines.iter().all(|line| line.len() < 400), "{lines:#?}");
}

#[actix_web::test]
async fn behind_a_trusted_proxy_the_client_is_the_nearest_untrusted_forwarded_address() {
    let settings = timetrack_api::StateSettings {
        trusted_proxies: timetrack_api::TrustedProxies::parse("203.0.113.0/24, 10.0.0.1").unwrap(),
        ..TestApp::relaxed()
    };
    let from_proxy = |xff: &str| {
        test::TestRequest::get()
            .uri("/api/health")
            .peer_addr("203.0.113.9:5000".parse().unwrap())
            .insert_header(("X-Forwarded-For", xff.to_owned()))
    };
    let lines = text_log_lines(settings, move |_| {
        vec![
            // A client's own claim (the first entry) is ignored; the proxies' are believed.
            from_proxy("6.6.6.6, 198.51.100.4, 10.0.0.1"),
            // Nothing but trusted hops: the farthest of them.
            from_proxy("10.0.0.1"),
            // Not an address: the peer.
            from_proxy("admin=true"),
            test::TestRequest::get()
                .uri("/api/health")
                .peer_addr("192.0.2.50:5000".parse().unwrap())
                .insert_header(("X-Forwarded-For", "198.51.100.4")),
        ]
    })
    .await;
    let clients: Vec<&str> = lines
        .iter()
        .map(|line| {
            line.split("client=")
                .nth(1)
                .and_then(|rest| rest.split(' ').next())
                .unwrap_or("")
        })
        .collect();
    assert_eq!(
        clients,
        ["198.51.100.4", "10.0.0.1", "203.0.113.9", "192.0.2.50"],
        "{lines:#?}"
    );
}

#[actix_web::test]
async fn a_refused_request_is_one_info_line_with_its_message_and_no_debug_dump() {
    let lines = text_log_lines(TestApp::relaxed(), |_| {
        vec![
            test::TestRequest::get()
                .uri("/api/me")
                .insert_header(("Authorization", "Bearer tt_not_a_key")),
        ]
    })
    .await;
    assert_eq!(lines.len(), 1, "{lines:#?}");
    let line = &lines[0];
    assert!(line.contains(" INFO "), "{line}");
    assert!(line.contains("status=401"), "{line}");
    assert!(line.contains(r#"error="Unauthorized""#), "{line}");
    for noise in [
        "WARN",
        "otel.",
        "exception.details",
        "Status {",
        "message: ",
    ] {
        assert!(!line.contains(noise), "{noise}: {line}");
    }
}

#[actix_web::test]
async fn a_replayed_idempotent_request_is_logged_like_the_first() {
    let lines = text_log_lines(TestApp::relaxed(), |t| {
        (0..2)
            .map(|_| {
                test::TestRequest::post()
                    .uri("/api/clients")
                    .insert_header(t.bearer())
                    .insert_header(("Idempotency-Key", "log-route-1"))
                    .set_json(serde_json::json!({"name": "Logged Twice"}))
            })
            .collect()
    })
    .await;
    assert_eq!(lines.len(), 2, "{lines:#?}");
    for line in &lines {
        assert!(line.contains(r#"path="/api/clients""#), "{line}");
        assert!(!line.contains("route="), "{line}");
        assert!(line.contains("status=201"), "{line}");
    }
}

#[actix_web::test]
async fn every_json_answer_says_nosniff_errors_included() {
    let t = TestApp::new().await;
    let app = t.service().await;
    for (uri, auth) in [
        ("/api/me", true),
        ("/api/health", false),
        ("/api/nope", false),
        ("/api/me", false),
        ("/api/openapi.json", false),
    ] {
        let mut req = test::TestRequest::get().uri(uri);
        if auth {
            req = req.insert_header(t.bearer());
        }
        let res = test::call_service(&app, req.to_request()).await;
        assert_eq!(
            res.headers()
                .get("x-content-type-options")
                .map(|v| v.to_str().unwrap()),
            Some("nosniff"),
            "{uri} ({})",
            res.status()
        );
    }
}

#[actix_web::test]
async fn writes_that_read_no_body_still_check_it_and_change_nothing() {
    let t = TestApp::new().await;
    let app = t.service().await;
    let base = "/api/integrations/automation/webhooks";
    let (status, _, body) = call(
        &app,
        test::TestRequest::post()
            .uri(&format!("{base}/subscribe"))
            .insert_header(t.bearer())
            .set_json(json!({"url": "https://hooks.example.com/x", "events": ["CLIENT_CREATED"]}))
            .to_request(),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let id = body["webhook"]["id"].as_str().unwrap().to_owned();
    let (status, _, _) = call(
        &app,
        test::TestRequest::post()
            .uri("/api/time-entries/start")
            .insert_header(t.bearer())
            .set_json(json!({}))
            .to_request(),
    )
    .await;
    assert_eq!(status, 201);
    let rows = "SELECT (SELECT count(*) FROM deliveries) + (SELECT count(*) FROM events) \
                + (SELECT count(*) FROM webhook_subscriptions WHERE status = 'ACTIVE') \
                + (SELECT count(*) FROM time_entries WHERE end_at IS NULL) AS n";
    let before = t.scalar(rows).await;
    let big = format!(r#"{{"pad":"{}"}}"#, "a".repeat(70 * 1024));
    for (method, path) in [
        ("POST", format!("{base}/{id}/test")),
        ("POST", format!("{base}/{id}/deliveries/1/resend")),
        ("DELETE", format!("{base}/{id}")),
        ("POST", "/api/time-entries/stop".to_owned()),
    ] {
        for (body, status, error) in [
            ("{not json", 400, "Invalid JSON body"),
            ("[1, 2]", 400, "Invalid JSON body"),
            (big.as_str(), 413, "Payload too large"),
        ] {
            let req = test::TestRequest::default()
                .method(method.parse().unwrap())
                .uri(&path)
                .insert_header(t.bearer())
                .insert_header(("content-type", "application/json"))
                .set_payload(body.to_owned())
                .to_request();
            let (got, _, answer) = call(&app, req).await;
            assert_eq!(
                (got, answer["error"].as_str()),
                (status, Some(error)),
                "{method} {path} with {}",
                &body[..body.len().min(12)]
            );
        }
    }
    assert_eq!(t.scalar(rows).await, before, "nothing changed");
    // An empty body, or any JSON object, is still fine.
    let (status, _, body) = call(
        &app,
        test::TestRequest::post()
            .uri(&format!("{base}/{id}/test"))
            .insert_header(t.bearer())
            .set_json(json!({"whatever": 1}))
            .to_request(),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let (status, _, _) = call(
        &app,
        test::TestRequest::post()
            .uri("/api/time-entries/stop")
            .insert_header(t.bearer())
            .to_request(),
    )
    .await;
    assert_eq!(status, 200);
}
