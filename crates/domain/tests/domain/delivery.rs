use time::macros::datetime;

use time::Duration;
use timetrack_domain::delivery::*;
use timetrack_domain::model::CustomHeaders;
use timetrack_testkit::fakes::SeededRandom;

#[test]
fn only_a_410_or_a_disabling_failure_ends_the_subscription() {
    let at = datetime!(2026-03-01 09:00 UTC);
    let attempt = |next: NextStep, disable_subscription: bool| AttemptRecord {
        started_at: at,
        report: AttemptReport {
            outcome: AttemptOutcome::Delivered { status: 200 },
            latency: Duration::milliseconds(5),
            response_excerpt: None,
        },
        next,
        disable_subscription,
        notice: None,
        signature: None,
        custom_headers: None,
    };
    assert!(attempt(NextStep::Unsubscribe, false).ends_subscription());
    assert!(attempt(NextStep::RetryAt(at), true).ends_subscription());
    for next in [NextStep::Done, NextStep::RetryAt(at), NextStep::GiveUp] {
        assert!(!attempt(next, false).ends_subscription(), "{next:?}");
    }
}

/// Custom headers follow the delivery's own, in the order given, by lowercase name; a custom
/// `User-Agent` takes the default one's place; `Debug` masks their values.
#[test]
fn requests_carry_the_custom_headers_after_their_own() {
    let custom = CustomHeaders::parse(vec![
        ("X-Api-Key".into(), "key_0123456789abcdef".into()),
        ("User-Agent".into(), "acme-relay/2".into()),
        ("Accept".into(), "*/*".into()),
    ])
    .unwrap();
    let req = build_request(
        "https://hooks.example.com/h",
        Secrets {
            current: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            previous: None,
        },
        "msg_1",
        "CLIENT_CREATED",
        "{}",
        datetime!(2026-03-01 12:00 UTC),
        Ordering {
            key: "c1",
            sequence: 1,
        },
        &custom,
    )
    .unwrap();
    let names: Vec<&str> = req.headers.iter().map(|(n, _)| n.as_ref()).collect();
    assert_eq!(
        names,
        [
            "content-type",
            "user-agent",
            "webhook-id",
            "webhook-timestamp",
            "webhook-signature",
            "x-webhook-event",
            "webhook-ordering-key",
            "webhook-sequence",
            "x-api-key",
            "accept"
        ]
    );
    let value = |name: &str| {
        req.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(value("user-agent"), Some("acme-relay/2"));
    assert_eq!(value("x-api-key"), Some("key_0123456789abcdef"));
    let logged = format!("{req:?}");
    assert!(!logged.contains("key_0123456789abcdef"), "{logged}");
    assert!(logged.contains("key_…(20)"), "{logged}");
    assert!(logged.contains("webhook-signature"), "{logged}");
}

#[test]
fn signatures_match_the_standard_webhooks_test_vector() {
    let signature = sign(
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1_614_265_330,
        br#"{"test": 2432232314}"#,
    )
    .unwrap();
    assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

#[test]
fn requests_carry_the_signed_headers_and_the_exact_body() {
    let at = datetime!(2021-02-25 15:02:10 UTC);
    let req = build_request(
        "https://hooks.example.com/h",
        Secrets {
            current: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            previous: None,
        },
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "CLIENT_CREATED",
        r#"{"test": 2432232314}"#,
        at,
        Ordering {
            key: "c1",
            sequence: 1,
        },
        &CustomHeaders::none(),
    )
    .unwrap();
    assert_eq!(at.unix_timestamp(), 1_614_265_330);
    let header = |name: &str| {
        req.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(
        header("webhook-signature"),
        Some("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    );
    assert_eq!(header("webhook-id"), Some("msg_p5jXN8AQM9LWM0D4loKWxJek"));
    assert_eq!(header("webhook-timestamp"), Some("1614265330"));
    assert_eq!(header("x-webhook-event"), Some("CLIENT_CREATED"));
    assert_eq!(header("webhook-ordering-key"), Some("c1"));
    assert_eq!(header("webhook-sequence"), Some("1"));
    assert_eq!(header("content-type"), Some("application/json"));
    assert!(
        header("user-agent")
            .unwrap()
            .starts_with("timetrack-webhooks/")
    );
    assert_eq!(req.body, r#"{"test": 2432232314}"#);
}

#[test]
fn a_malformed_secret_is_a_bug_not_a_signature() {
    assert!(sign("whsec_!!!", "id", 1, b"{}").is_err());
}

#[test]
fn the_schedule_parses_and_ends() {
    let schedule = RetrySchedule::parse("1s, 2s,500ms,1m,1h").unwrap();
    assert_eq!(schedule.wait_after(1), Some(Duration::seconds(1)));
    assert_eq!(schedule.wait_after(3), Some(Duration::milliseconds(500)));
    assert_eq!(schedule.wait_after(5), Some(Duration::hours(1)));
    assert_eq!(schedule.wait_after(6), None);
    assert_eq!(schedule.wait_after(0), None);
    assert_eq!(schedule.max_attempts(), 6);
    assert_eq!(RetrySchedule::parse("").unwrap().max_attempts(), 1);
    for bad in ["1", "s", "1d", "-1s", "1s,,2s"] {
        assert!(RetrySchedule::parse(bad).is_err(), "{bad}");
    }
    assert_eq!(RetrySchedule::default().max_attempts(), 10);
    assert_eq!(
        RetrySchedule::default().wait_after(9),
        Some(Duration::hours(24))
    );
}

#[test]
fn outcomes_decide_the_next_step_with_bounded_jitter() {
    let now = datetime!(2026-01-05 09:00 UTC);
    let schedule = RetrySchedule::default();
    let random = SeededRandom::new(11);
    assert_eq!(
        next_step(
            &AttemptOutcome::Delivered { status: 204 },
            1,
            now,
            &schedule,
            &random
        ),
        NextStep::Done
    );
    assert_eq!(
        next_step(
            &AttemptOutcome::Rejected {
                status: 410,
                retry_after: None
            },
            1,
            now,
            &schedule,
            &random
        ),
        NextStep::Unsubscribe
    );
    let mut waits = Vec::new();
    for _ in 0..200 {
        match next_step(
            &AttemptOutcome::Rejected {
                status: 500,
                retry_after: None,
            },
            2,
            now,
            &schedule,
            &random,
        ) {
            NextStep::RetryAt(at) => waits.push((at - now).as_seconds_f64()),
            other => panic!("{other:?}"),
        }
    }
    // 5 minutes ± 20 %, and really spread.
    assert!(
        waits.iter().all(|w| (240.0..=360.0).contains(w)),
        "{waits:?}"
    );
    assert!(waits.iter().any(|w| *w < 270.0) && waits.iter().any(|w| *w > 330.0));
    let failed = AttemptOutcome::Failed {
        reason: FailureReason::Timeout,
        detail: "15 s".into(),
    };
    assert_eq!(
        next_step(&failed, 10, now, &schedule, &random),
        NextStep::GiveUp
    );
    // A 3xx is a failure like any other (redirects are not followed).
    assert!(matches!(
        next_step(
            &AttemptOutcome::Rejected {
                status: 302,
                retry_after: None
            },
            1,
            now,
            &schedule,
            &random
        ),
        NextStep::RetryAt(_)
    ));
}

#[test]
fn retry_after_is_honoured_on_429_and_503_and_capped_at_a_day() {
    let now = datetime!(2026-01-05 09:00 UTC);
    let schedule = RetrySchedule::parse("1s").unwrap();
    let random = SeededRandom::new(3);
    let step = |status, secs| {
        next_step(
            &AttemptOutcome::Rejected {
                status,
                retry_after: Some(Duration::seconds(secs)),
            },
            1,
            now,
            &schedule,
            &random,
        )
    };
    assert_eq!(
        step(429, 120),
        NextStep::RetryAt(now + Duration::seconds(120))
    );
    assert_eq!(
        step(503, 120),
        NextStep::RetryAt(now + Duration::seconds(120))
    );
    assert_eq!(
        step(429, 10 * 86_400),
        NextStep::RetryAt(now + Duration::hours(24))
    );
    // Other statuses ignore it.
    match step(500, 120) {
        NextStep::RetryAt(at) => assert!(at - now <= Duration::milliseconds(1200)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn subscriptions_are_disabled_after_five_days_of_failures_by_default() {
    let now = datetime!(2026-01-10 09:00 UTC);
    let after = DEFAULT_DISABLE_AFTER;
    assert_eq!(after, Duration::days(5));
    assert!(!should_disable(None, now, after));
    assert!(!should_disable(
        Some(now - Duration::days(5) + Duration::seconds(1)),
        now,
        after
    ));
    assert!(should_disable(Some(now - Duration::days(5)), now, after));
    // A shorter setting, as tests use.
    let short = Duration::seconds(3);
    assert!(!should_disable(
        Some(now - Duration::seconds(2)),
        now,
        short
    ));
    assert!(should_disable(Some(now - Duration::seconds(3)), now, short));
}

#[test]
fn durations_take_a_whole_number_and_a_unit() {
    assert_eq!(parse_duration("5d").unwrap(), Duration::days(5));
    assert_eq!(parse_duration("24h").unwrap(), Duration::hours(24));
    assert_eq!(parse_duration(" 3s ").unwrap(), Duration::seconds(3));
    assert_eq!(parse_duration("10m").unwrap(), Duration::minutes(10));
    assert_eq!(
        parse_duration("500ms").unwrap(),
        Duration::milliseconds(500)
    );
    for bad in ["", "5", "d", "0s", "-1s", "1.5h", "5 days", "5w"] {
        let err = parse_duration(bad).unwrap_err().to_string();
        assert!(err.starts_with("invalid duration"), "{bad}: {err}");
    }
    // The retry schedule keeps its units: a day-long wait is written 24h.
    assert!(RetrySchedule::parse("1s,1d").is_err());
}

#[test]
fn inside_a_rotation_window_the_signature_header_carries_the_new_then_the_old_signature() {
    let at = datetime!(2021-02-25 15:02:10 UTC);
    let old = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let new = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    let req = build_request(
        "https://hooks.example.com/h",
        Secrets {
            current: new,
            previous: Some(old),
        },
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "CLIENT_CREATED",
        r#"{"test": 2432232314}"#,
        at,
        Ordering {
            key: "c1",
            sequence: 1,
        },
        &CustomHeaders::none(),
    )
    .unwrap();
    let signature = req
        .headers
        .iter()
        .find(|(n, _)| *n == "webhook-signature")
        .map(|(_, v)| v.clone())
        .unwrap();
    let expected_new = sign(
        new,
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1_614_265_330,
        br#"{"test": 2432232314}"#,
    )
    .unwrap();
    assert_eq!(
        signature,
        format!("{expected_new} v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    );
}

mod notices {
    use std::sync::Arc;

    use async_trait::async_trait;
    use serde_json::Value;
    use time::Duration;
    use time::macros::datetime;
    use timetrack_domain::DomainResult;
    use timetrack_domain::delivery::*;
    use timetrack_domain::ids::{EventId, WorkspaceId};
    use timetrack_domain::model::{CustomHeaders, DeliveryId, DeliveryKind, EventType, WebhookId};
    use timetrack_domain::ports::{DeliveryQueue, WebhookSender};
    use timetrack_domain::services::{DeliveryService, DeliverySettings};
    use timetrack_testkit::fakes::{ManualClock, SeededRandom, SequentialIds};

    /// A receiver that always answers `outcome`.
    struct Answers(AttemptOutcome);

    #[async_trait]
    impl WebhookSender for Answers {
        async fn send(&self, _request: &WebhookRequest) -> AttemptReport {
            AttemptReport {
                outcome: self.0.clone(),
                latency: Duration::milliseconds(5),
                response_excerpt: None,
            }
        }
    }

    /// The decisions under test are made before anything is recorded.
    struct Unused;

    #[async_trait]
    impl DeliveryQueue for Unused {
        async fn record(&self, _: &ClaimedDelivery, _: &AttemptRecord) -> DomainResult<bool> {
            unreachable!()
        }
        async fn record_and_claim(
            &self,
            _: &[(ClaimedDelivery, AttemptRecord)],
            _: time::OffsetDateTime,
            _: time::OffsetDateTime,
            _: u32,
            _: &InFlightCaps,
            _: ClaimWhen,
        ) -> DomainResult<Vec<ClaimedDelivery>> {
            unreachable!()
        }
        async fn stats(&self, _: time::OffsetDateTime) -> DomainResult<QueueStats> {
            unreachable!()
        }
    }

    const NOW: time::OffsetDateTime = datetime!(2026-03-01 12:00 UTC);

    fn claimed(failing_for: Option<Duration>, told: bool, kind: DeliveryKind) -> ClaimedDelivery {
        ClaimedDelivery {
            delivery_id: DeliveryId(7),
            kind,
            event_id: EventId(uuid::Uuid::from_u128(1)),
            subscription_id: WebhookId::parse("wh_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap(),
            workspace_id: WorkspaceId(uuid::Uuid::from_u128(2)),
            event_type: EventType::ClientCreated,
            body: "{}".into(),
            url: "https://hooks.example.com/h".into(),
            description: Some("Zap".into()),
            secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
            previous_secret: None,
            headers: CustomHeaders::parse(vec![
                ("Authorization".into(), "Bearer tok_5NnqV7fR2kWm9yXc".into()),
                ("X-Tenant".into(), "acme".into()),
            ])
            .unwrap(),
            attempts: 1,
            ordering_key: "c1".into(),
            sequence: 1,
            failing_since: failing_for.map(|d| NOW - d),
            failing_notified: told,
        }
    }

    fn attempt(outcome: AttemptOutcome, delivery: &ClaimedDelivery) -> AttemptRecord {
        let service = DeliveryService::new(
            Arc::new(Unused),
            Arc::new(Answers(outcome)),
            Arc::new(ManualClock::at(NOW)),
            Arc::new(SequentialIds::default()),
            Arc::new(SeededRandom::new(1)),
            DeliverySettings {
                failing_after: Duration::hours(24),
                disable_after: Duration::days(5),
                ..DeliverySettings::default()
            },
        );
        timetrack_testkit::fakes::run_ready(service.attempt(delivery)).unwrap()
    }

    fn notice(record: &AttemptRecord) -> Option<(EventType, Value)> {
        record.notice.as_ref().map(|n| {
            (
                n.event.event_type,
                serde_json::from_str(&n.event.body).unwrap(),
            )
        })
    }

    const FAILED: AttemptOutcome = AttemptOutcome::Rejected {
        status: 503,
        retry_after: None,
    };
    const OK: AttemptOutcome = AttemptOutcome::Delivered { status: 204 };

    /// The record keeps the signature header sent and the custom headers masked, and the
    /// headers rebuilt from them for the log are the ones sent, each custom value masked.
    #[test]
    fn an_attempt_records_the_signature_it_was_sent_with() {
        let delivery = claimed(None, false, DeliveryKind::Event);
        let record = attempt(OK, &delivery);
        let expected = sign(
            &delivery.secret,
            &delivery.event_id.to_string(),
            NOW.unix_timestamp(),
            delivery.body.as_bytes(),
        )
        .unwrap();
        assert_eq!(record.signature.as_deref(), Some(expected.as_str()));
        let recorded = record.custom_headers.clone().unwrap();
        assert!(!recorded.contains("tok_5Nn"), "{recorded}");
        let sent = build_request(
            &delivery.url,
            Secrets {
                current: &delivery.secret,
                previous: None,
            },
            &delivery.event_id.to_string(),
            delivery.event_type.as_str(),
            &delivery.body,
            NOW,
            Ordering {
                key: &delivery.ordering_key,
                sequence: delivery.sequence,
            },
            &delivery.headers,
        )
        .unwrap();
        let masked = CustomHeaders::from_stored(&recorded).unwrap();
        let rebuilt = request_headers(
            &delivery.event_id.to_string(),
            delivery.event_type.as_str(),
            record.started_at.unix_timestamp(),
            record.signature.unwrap(),
            Ordering {
                key: &delivery.ordering_key,
                sequence: delivery.sequence,
            },
            masked.iter(),
        );
        let shown: Vec<(String, String)> = sent
            .headers
            .iter()
            .map(|(name, value)| match name.as_ref() {
                "authorization" => (name.to_string(), "Bear…(27)".to_owned()),
                "x-tenant" => (name.to_string(), "…(4)".to_owned()),
                _ => (name.to_string(), value.clone()),
            })
            .collect();
        let rebuilt: Vec<(String, String)> = rebuilt
            .into_iter()
            .map(|(name, value)| (name.into_owned(), value))
            .collect();
        assert_eq!(rebuilt, shown);
        // A test delivery records them too.
        let test = attempt(OK, &claimed(None, false, DeliveryKind::Test));
        assert_eq!(test.custom_headers, Some(recorded));
    }

    #[test]
    fn failing_for_the_setting_is_told_once_per_streak() {
        let record = attempt(
            FAILED,
            &claimed(Some(Duration::hours(25)), false, DeliveryKind::Event),
        );
        let (kind, body) = notice(&record).unwrap();
        assert_eq!(kind, EventType::WebhookFailing);
        assert!(record.recorded_alone() && !record.ends_subscription());
        assert_eq!(
            body.as_object().unwrap().keys().collect::<Vec<_>>(),
            [
                "event",
                "webhook",
                "reason",
                "failing_since",
                "last_status_code",
                "last_error",
                "timestamp"
            ]
        );
        assert_eq!(body["event"], "WEBHOOK_FAILING");
        assert_eq!(
            body["webhook"],
            serde_json::json!({"id": "wh_aaaaaaaaaaaaaaaaaaaaaaaa",
                               "url": "https://hooks.example.com/h",
                               "description": "Zap", "status": "ACTIVE"})
        );
        assert_eq!(body["reason"], Value::Null);
        assert_eq!(body["failing_since"], "2026-02-28T11:00:00Z");
        assert_eq!(body["last_status_code"], 503);
        assert_eq!(body["last_error"], "HTTP 503");
        let told = record.notice.as_ref().unwrap();
        assert_eq!(told.about.as_str(), "wh_aaaaaaaaaaaaaaaaaaaaaaaa");
        assert_eq!(
            told.streak_started_by,
            Some(record.finished_at() - Duration::hours(24)),
            "storage checks the streak as it stands then"
        );

        // Told already, or not failing long enough: nothing.
        let told = attempt(
            FAILED,
            &claimed(Some(Duration::hours(25)), true, DeliveryKind::Event),
        );
        assert_eq!(notice(&told), None);
        assert!(!told.recorded_alone());
        let young = attempt(
            FAILED,
            &claimed(Some(Duration::hours(2)), false, DeliveryKind::Event),
        );
        assert_eq!(notice(&young), None);
    }

    #[test]
    fn a_success_after_a_told_streak_is_a_recovery_and_only_then() {
        let record = attempt(
            OK,
            &claimed(Some(Duration::hours(30)), true, DeliveryKind::Event),
        );
        let (kind, body) = notice(&record).unwrap();
        assert_eq!(kind, EventType::WebhookRecovered);
        assert_eq!(body["last_status_code"], 204);
        assert_eq!(body["last_error"], Value::Null);
        assert_eq!(body["failing_since"], "2026-02-28T06:00:00Z");
        // Failing at the claim, not told then: told since, perhaps, by another worker; storage
        // writes the recovery only if so.
        let maybe = attempt(
            OK,
            &claimed(Some(Duration::hours(2)), false, DeliveryKind::Event),
        );
        assert_eq!(notice(&maybe).unwrap().0, EventType::WebhookRecovered);
        // Not failing at all: nothing to recover from, recorded in a batch.
        let healthy = attempt(OK, &claimed(None, false, DeliveryKind::Event));
        assert_eq!(notice(&healthy), None);
        assert!(!healthy.recorded_alone());
    }

    #[test]
    fn disabling_and_a_410_are_told_with_their_reason() {
        let record = attempt(
            FAILED,
            &claimed(Some(Duration::days(6)), false, DeliveryKind::Event),
        );
        assert!(record.disable_subscription);
        let (kind, body) = notice(&record).unwrap();
        assert_eq!(
            kind,
            EventType::WebhookDisabled,
            "disabled, not merely failing"
        );
        assert_eq!(body["reason"], "failing");
        assert_eq!(body["webhook"]["status"], "DISABLED");

        let gone = AttemptOutcome::Rejected {
            status: 410,
            retry_after: None,
        };
        let record = attempt(gone, &claimed(None, false, DeliveryKind::Event));
        let (kind, body) = notice(&record).unwrap();
        assert_eq!(kind, EventType::WebhookDisabled);
        assert_eq!(body["reason"], "gone");
        assert_eq!(body["webhook"]["status"], "DELETED");
        assert_eq!(body["last_status_code"], 410);
        assert_eq!(
            body["failing_since"],
            Value::Null,
            "a 410 after a success starts no streak"
        );
    }

    #[test]
    fn a_test_delivery_gets_one_attempt_and_changes_nothing() {
        let gone = AttemptOutcome::Rejected {
            status: 410,
            retry_after: None,
        };
        for (outcome, next) in [
            (OK, NextStep::Done),
            (FAILED, NextStep::GiveUp),
            (gone, NextStep::GiveUp),
        ] {
            let record = attempt(
                outcome.clone(),
                &claimed(Some(Duration::days(6)), true, DeliveryKind::Test),
            );
            assert_eq!(record.next, next, "{outcome:?}");
            assert!(!record.disable_subscription, "{outcome:?}");
            assert_eq!(notice(&record), None, "{outcome:?}");
        }
    }
}

#[test]
fn a_text_body_is_kept_as_it_came_cut_on_a_character() {
    use timetrack_domain::delivery::ResponseExcerpt;
    assert_eq!(ResponseExcerpt::of(b""), None);
    let ok = ResponseExcerpt::of(b"ok").unwrap();
    assert_eq!((ok.text(), ok.is_lossy()), ("ok", false));
    // A three-byte character: 341 of them are 1,023 bytes, and the 342nd is cut, not replaced.
    let long = "€".repeat(400);
    let cut = ResponseExcerpt::of(long.as_bytes()).unwrap();
    assert_eq!(cut.text(), "€".repeat(341));
    assert!(!cut.is_lossy());
}

#[test]
fn a_binary_body_is_stored_lossy_without_nul_within_a_kilobyte() {
    use timetrack_domain::delivery::ResponseExcerpt;
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    let excerpt = ResponseExcerpt::of(png).unwrap();
    assert!(excerpt.is_lossy());
    assert!(!excerpt.text().contains('\0'));
    assert_eq!(
        excerpt.text(),
        "\u{FFFD}PNG\r\n\u{1a}\n\u{FFFD}\u{FFFD}\u{FFFD}\rIHDR"
    );
    // Valid UTF-8 with a NUL is lossy too.
    let nul = ResponseExcerpt::of(b"a\0b").unwrap();
    assert_eq!((nul.text(), nul.is_lossy()), ("a\u{FFFD}b", true));
    // Every byte invalid: the replacements (3 bytes each) are cut to the kilobyte again.
    let noise = vec![0xffu8; 4096];
    let excerpt = ResponseExcerpt::of(&noise).unwrap();
    assert!(excerpt.text().len() <= ResponseExcerpt::MAX_BYTES);
    assert_eq!(excerpt.text(), "\u{FFFD}".repeat(341));
}

#[test]
fn a_failure_detail_quoting_a_nul_is_stored_without_it() {
    let record = AttemptRecord {
        started_at: time::OffsetDateTime::UNIX_EPOCH,
        report: AttemptReport {
            outcome: AttemptOutcome::Failed {
                reason: FailureReason::Tls,
                detail: "certificate not valid for name \"a\0b\"".into(),
            },
            latency: Duration::milliseconds(1),
            response_excerpt: None,
        },
        next: NextStep::GiveUp,
        disable_subscription: false,
        notice: None,
        signature: None,
        custom_headers: None,
    };
    assert_eq!(
        record.last_result(),
        (
            None,
            Some("tls: certificate not valid for name \"a\u{FFFD}b\"".to_owned())
        )
    );
}
