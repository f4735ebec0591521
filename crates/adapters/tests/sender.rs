//! The HTTPS sender against a real local HTTPS receiver with its own CA.

use std::time::Duration;

use timetrack_adapters::{HyperWebhookSender, SenderSettings};
use timetrack_domain::delivery::{
    AttemptOutcome, FailureReason, ResponseExcerpt, WebhookRequest, build_request,
};
use timetrack_domain::model::CustomHeaders;
use timetrack_domain::ports::WebhookSender;
use timetrack_testkit::{Behaviour, HttpsReceiver};

fn sender(receiver: &HttpsReceiver, total: Duration) -> HyperWebhookSender {
    HyperWebhookSender::new(SenderSettings {
        allow_private_targets: true,
        extra_roots: Some(receiver.ca_pem_path()),
        total_timeout: total,
        ..SenderSettings::default()
    })
    .unwrap()
}

fn request(url: &str) -> WebhookRequest {
    request_with(url, &CustomHeaders::none())
}

fn request_with(url: &str, custom: &CustomHeaders) -> WebhookRequest {
    build_request(
        url,
        timetrack_domain::delivery::Secrets {
            current: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            previous: None,
        },
        "0196d6d8-0000-7000-8000-000000000001",
        "CLIENT_CREATED",
        r#"{"id":"c1","name":"Acme"}"#,
        time::OffsetDateTime::now_utc(),
        timetrack_domain::delivery::Ordering {
            key: "c1",
            sequence: 1,
        },
        custom,
    )
    .unwrap()
}

#[tokio::test]
async fn a_2xx_is_delivered_with_the_exact_body_and_signed_headers() {
    let receiver = HttpsReceiver::start().await;
    let report = sender(&receiver, Duration::from_secs(15))
        .send(&request(&receiver.url("/hook?zap=1")))
        .await;
    assert_eq!(report.outcome, AttemptOutcome::Delivered { status: 200 });
    assert_eq!(
        report.response_excerpt.as_ref().map(ResponseExcerpt::text),
        Some("ok")
    );
    let got = &receiver.received()[0];
    assert_eq!(got.path, "/hook?zap=1");
    assert_eq!(got.body, br#"{"id":"c1","name":"Acme"}"#);
    assert_eq!(got.header("content-type"), Some("application/json"));
    assert_eq!(
        got.header("webhook-id"),
        Some("0196d6d8-0000-7000-8000-000000000001")
    );
    assert_eq!(got.header("x-webhook-event"), Some("CLIENT_CREATED"));
    assert!(got.header("webhook-signature").unwrap().starts_with("v1,"));
    assert!(
        got.header("user-agent")
            .unwrap()
            .starts_with("timetrack-webhooks/")
    );
}

#[tokio::test]
async fn a_webhooks_custom_headers_arrive_as_given() {
    let receiver = HttpsReceiver::start().await;
    let custom = CustomHeaders::parse(vec![
        ("Authorization".into(), "Bearer tok_5NnqV7fR2kWm9yXc".into()),
        ("X-Tenant".into(), "café\tnord".into()),
        ("User-Agent".into(), "acme-relay/2".into()),
    ])
    .unwrap();
    let report = sender(&receiver, Duration::from_secs(15))
        .send(&request_with(&receiver.url("/hook"), &custom))
        .await;
    assert_eq!(report.outcome, AttemptOutcome::Delivered { status: 200 });
    let got = &receiver.received()[0];
    assert_eq!(
        got.header("authorization"),
        Some("Bearer tok_5NnqV7fR2kWm9yXc")
    );
    assert_eq!(got.header("x-tenant"), Some("café\tnord"));
    assert_eq!(got.header("user-agent"), Some("acme-relay/2"));
    assert!(got.header("webhook-signature").unwrap().starts_with("v1,"));
}

#[tokio::test]
async fn other_statuses_are_rejections_and_redirects_are_not_followed() {
    let receiver = HttpsReceiver::start().await;
    let canary = HttpsReceiver::start().await;
    receiver.respond("/fail", Behaviour::Respond(500, vec![]));
    receiver.respond("/gone", Behaviour::Respond(410, vec![]));
    receiver.respond(
        "/moved",
        Behaviour::Respond(302, vec![("location".into(), canary.url("/canary"))]),
    );
    receiver.respond(
        "/busy",
        Behaviour::Respond(429, vec![("retry-after".into(), "7".into())]),
    );
    let s = sender(&receiver, Duration::from_secs(15));
    let outcome = |path: &str| {
        let s = s.clone();
        let url = receiver.url(path);
        async move { s.send(&request(&url)).await.outcome }
    };
    assert_eq!(
        outcome("/fail").await,
        AttemptOutcome::Rejected {
            status: 500,
            retry_after: None
        }
    );
    assert_eq!(
        outcome("/gone").await,
        AttemptOutcome::Rejected {
            status: 410,
            retry_after: None
        }
    );
    assert_eq!(
        outcome("/moved").await,
        AttemptOutcome::Rejected {
            status: 302,
            retry_after: None
        }
    );
    assert_eq!(
        outcome("/busy").await,
        AttemptOutcome::Rejected {
            status: 429,
            retry_after: Some(time::Duration::seconds(7))
        }
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(canary.received().is_empty(), "the redirect was followed");
}

#[tokio::test]
async fn a_receiver_that_never_answers_times_out() {
    let receiver = HttpsReceiver::start().await;
    receiver.respond("/slow", Behaviour::Slow(Duration::from_secs(30), 200));
    let started = std::time::Instant::now();
    let report = sender(&receiver, Duration::from_millis(800))
        .send(&request(&receiver.url("/slow")))
        .await;
    assert!(
        matches!(
            report.outcome,
            AttemptOutcome::Failed {
                reason: FailureReason::Timeout,
                ..
            }
        ),
        "{:?}",
        report.outcome
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn an_endless_body_is_read_only_up_to_the_cap() {
    let receiver = HttpsReceiver::start().await;
    receiver.respond("/endless", Behaviour::Endless);
    let report = sender(&receiver, Duration::from_secs(10))
        .send(&request(&receiver.url("/endless")))
        .await;
    assert_eq!(report.outcome, AttemptOutcome::Delivered { status: 200 });
    assert_eq!(report.response_excerpt.unwrap().text().len(), 1024);
}

#[tokio::test]
async fn connections_are_reused() {
    let receiver = HttpsReceiver::start().await;
    let s = sender(&receiver, Duration::from_secs(15));
    for _ in 0..5 {
        assert!(matches!(
            s.send(&request(&receiver.url("/h"))).await.outcome,
            AttemptOutcome::Delivered { .. }
        ));
    }
    assert_eq!(receiver.accepts(), 1);
}

#[tokio::test]
async fn an_untrusted_certificate_is_a_tls_failure() {
    let receiver = HttpsReceiver::start().await;
    let untrusting = HyperWebhookSender::new(SenderSettings {
        allow_private_targets: true,
        ..SenderSettings::default()
    })
    .unwrap();
    let report = untrusting.send(&request(&receiver.url("/h"))).await;
    assert!(
        matches!(
            &report.outcome,
            AttemptOutcome::Failed {
                reason: FailureReason::Tls,
                detail,
                ..
            } if detail.contains("UnknownIssuer") && detail.contains("--webhook-root-certs")
        ),
        "{:?}",
        report.outcome
    );
    assert!(receiver.received().is_empty());
}

#[tokio::test]
async fn refused_connections_and_blocked_targets_are_named() {
    let receiver = HttpsReceiver::start().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let report = sender(&receiver, Duration::from_secs(15))
        .send(&request(&format!("https://127.0.0.1:{port}/h")))
        .await;
    assert!(
        matches!(
            report.outcome,
            AttemptOutcome::Failed {
                reason: FailureReason::Connect,
                ..
            }
        ),
        "{:?}",
        report.outcome
    );

    // With the guard on, the receiver's loopback address is refused before any connection.
    let guarded = HyperWebhookSender::new(SenderSettings {
        extra_roots: Some(receiver.ca_pem_path()),
        ..SenderSettings::default()
    })
    .unwrap();
    for url in [
        receiver.url("/h"),
        format!("https://localhost:{}/h", receiver.addr().port()),
        format!("https://2130706433:{}/h", receiver.addr().port()),
    ] {
        let report = guarded.send(&request(&url)).await;
        assert!(
            matches!(
                report.outcome,
                AttemptOutcome::Failed {
                    reason: FailureReason::BlockedTarget,
                    ..
                }
            ),
            "{url}: {:?}",
            report.outcome
        );
    }
    assert!(receiver.received().is_empty());
    assert_eq!(receiver.accepts(), 0);
}

#[tokio::test]
async fn a_binary_answer_is_kept_lossy_and_without_nul() {
    let receiver = HttpsReceiver::start().await;
    receiver.respond(
        "/png",
        Behaviour::Body(200, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\xff".to_vec()),
    );
    let report = sender(&receiver, Duration::from_secs(10))
        .send(&request(&receiver.url("/png")))
        .await;
    assert_eq!(report.outcome, AttemptOutcome::Delivered { status: 200 });
    let excerpt = report.response_excerpt.unwrap();
    assert!(excerpt.is_lossy());
    assert_eq!(
        excerpt.text(),
        "\u{FFFD}PNG\r\n\u{1a}\n\u{FFFD}\u{FFFD}\u{FFFD}\rIHDR\u{FFFD}"
    );
}
