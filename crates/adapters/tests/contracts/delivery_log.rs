//! The delivery log: pages, tests, resends and replays.

use super::*;
use crate::subscriptions::{stored_key, subscription};

contract!(the_delivery_log_pages_tests_resends_and_replays_alike);
contract!(an_events_deliveries_are_read_across_a_members_live_subscriptions);

async fn the_delivery_log_pages_tests_resends_and_replays_alike(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let audit = |action: &'static str, minutes: i64| AuditEntry {
        workspace_id: ws.id,
        actor_user_id: Some(member.id),
        action,
        target_type: "webhook",
        target_id: String::new(),
        reason: None,
        at: T0 + Duration::minutes(minutes),
    };
    let key = stored_key(&s, 50, &ws, &member).await;
    let hook = subscription(1, &key, 0);
    let other = subscription(2, &key, 0);
    s.subscriptions.create(&hook, 10).await.unwrap();
    s.subscriptions.create(&other, 10).await.unwrap();
    // An event the outbox fans out to both (they list CLIENT_CREATED).
    let created = Event {
        id: EventId(id(900)),
        workspace_id: ws.id,
        event_type: EventType::ClientCreated,
        body: r#"{"name": "Acme", "id": 1}"#.into(),
        created_at: T0 + Duration::minutes(1),
        subject: EventSubject::default(),
        ordering_key: "c11".into(),
    };
    s.clients
        .create(&client(11, &ws, "Acme", 1), std::slice::from_ref(&created))
        .await
        .unwrap();
    let everything = DeliveryQuery {
        since: T0 - Duration::days(1),
        status: None,
        event_type: None,
        event_id: None,
        entity_id: None,
        before: None,
        limit: 100,
    };
    let log = s.log.deliveries(&hook.id, &everything).await.unwrap();
    assert_eq!(log.len(), 1);
    let fanned = log[0].clone();
    assert_eq!(
        (fanned.event_id, fanned.kind, fanned.status, fanned.attempts),
        (created.id, DeliveryKind::Event, DeliveryStatus::Pending, 0)
    );
    assert_eq!(fanned.next_attempt_at, Some(created.created_at));

    let test = Event {
        id: EventId(id(901)),
        workspace_id: ws.id,
        event_type: EventType::WebhookTest,
        body: r#"{"event": "WEBHOOK_TEST"}"#.into(),
        created_at: T0 + Duration::minutes(2),
        subject: EventSubject::default(),
        ordering_key: hook.id.to_string(),
    };
    let tested = s.log.queue_test(&hook.id, &test, None).await.unwrap();
    assert_eq!(
        (tested.event_id, tested.kind, tested.status),
        (test.id, DeliveryKind::Test, DeliveryStatus::Pending)
    );
    let resent = s
        .log
        .resend(&hook.id, fanned.id, T0 + Duration::minutes(3))
        .await
        .unwrap();
    assert_eq!(
        (resent.event_id, resent.kind, resent.created_at),
        (created.id, DeliveryKind::Resend, T0 + Duration::minutes(3))
    );
    let ids: Vec<DeliveryId> = s
        .log
        .deliveries(&hook.id, &everything)
        .await
        .unwrap()
        .iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(ids, [resent.id, tested.id, fanned.id], "newest first");
    let page = DeliveryQuery {
        before: Some(resent.id),
        limit: 1,
        ..everything.clone()
    };
    assert_eq!(
        s.log.deliveries(&hook.id, &page).await.unwrap()[0].id,
        tested.id
    );
    let tests_only = DeliveryQuery {
        event_type: Some(EventType::WebhookTest),
        ..everything.clone()
    };
    assert_eq!(
        s.log.deliveries(&hook.id, &tests_only).await.unwrap().len(),
        1
    );
    // Searched by event: the event's two deliveries (fanned out and resent), not the test.
    let of_event = DeliveryQuery {
        event_id: Some(created.id),
        ..everything.clone()
    };
    let found: Vec<DeliveryId> = s
        .log
        .deliveries(&hook.id, &of_event)
        .await
        .unwrap()
        .iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(found, [resent.id, fanned.id]);
    // Searched by entity: the client's, or the test's (it is about the webhook).
    for (entity, expected) in [
        ("c11", vec![resent.id, fanned.id]),
        (hook.id.as_str(), vec![tested.id]),
        ("c12", vec![]),
    ] {
        let about = DeliveryQuery {
            entity_id: Some(entity.to_owned()),
            ..everything.clone()
        };
        let found: Vec<DeliveryId> = s
            .log
            .deliveries(&hook.id, &about)
            .await
            .unwrap()
            .iter()
            .map(|d| d.id)
            .collect();
        assert_eq!(found, expected, "{entity}");
    }
    let elsewhere = DeliveryQuery {
        event_id: Some(created.id),
        ..everything.clone()
    };
    assert_eq!(
        s.log.deliveries(&other.id, &elsewhere).await.unwrap().len(),
        1,
        "the other webhook's log holds its own delivery of the event"
    );
    let recent = DeliveryQuery {
        since: T0 + Duration::minutes(2),
        ..everything.clone()
    };
    assert_eq!(s.log.deliveries(&hook.id, &recent).await.unwrap().len(), 2);

    let detail = s.log.delivery(&hook.id, fanned.id).await.unwrap().unwrap();
    assert_eq!(detail.payload, created.body, "the exact body");
    assert_eq!(detail.record, fanned);
    assert!(detail.attempts.is_empty());
    assert_eq!(s.log.delivery(&other.id, fanned.id).await.unwrap(), None);
    match s.log.resend(&other.id, fanned.id, T0).await {
        Err(DomainError::NotFound("delivery")) => {}
        other => panic!("another webhook's delivery: {other:?}"),
    }
    match s.log.resend(&hook.id, DeliveryId(987_654), T0).await {
        Err(DomainError::NotFound("delivery")) => {}
        other => panic!("{other:?}"),
    }

    let window = ReplayWindow {
        since: T0,
        until: T0 + Duration::hours(1),
        only_failed: true,
        limit: 10,
        at: T0 + Duration::minutes(4),
    };
    assert_eq!(
        s.log.replay(&hook.id, &window).await.unwrap(),
        ReplayOutcome {
            queued: 0,
            truncated: false,
            next_since: None
        },
        "pending: on its way"
    );
    let all = ReplayWindow {
        only_failed: false,
        ..window
    };
    // The test event is not one the webhook lists.
    assert_eq!(s.log.replay(&hook.id, &all).await.unwrap().queued, 1);
    let none = ReplayWindow { limit: 0, ..all };
    assert_eq!(
        s.log.replay(&hook.id, &none).await.unwrap(),
        ReplayOutcome {
            queued: 0,
            truncated: true,
            next_since: Some(created.created_at)
        }
    );

    s.subscriptions
        .delete(&hook.id, &audit("webhook.deleted", 5))
        .await
        .unwrap();
    match s.log.queue_test(&hook.id, &test, None).await {
        Err(DomainError::NotFound("webhook")) => {}
        other => panic!("a deleted webhook: {other:?}"),
    }
    match s.log.replay(&hook.id, &window).await {
        Err(DomainError::NotFound("webhook")) => {}
        other => panic!("{other:?}"),
    }
}

async fn an_events_deliveries_are_read_across_a_members_live_subscriptions(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let key = stored_key(&s, 50, &ws, &member).await;
    let hook = subscription(1, &key, 0);
    let other = subscription(2, &key, 0);
    let gone = subscription(3, &key, 0);
    for h in [&hook, &other, &gone] {
        s.subscriptions.create(h, 10).await.unwrap();
    }
    let created = Event {
        id: EventId(id(910)),
        workspace_id: ws.id,
        event_type: EventType::ClientCreated,
        body: r#"{"name": "Acme"}"#.into(),
        created_at: T0 + Duration::minutes(1),
        subject: EventSubject::default(),
        ordering_key: "c12".into(),
    };
    s.clients
        .create(&client(12, &ws, "Acme", 1), std::slice::from_ref(&created))
        .await
        .unwrap();
    let audit = AuditEntry {
        workspace_id: ws.id,
        actor_user_id: Some(member.id),
        action: "webhook.deleted",
        target_type: "webhook",
        target_id: gone.id.to_string(),
        reason: None,
        at: T0 + Duration::minutes(2),
    };
    s.subscriptions.delete(&gone.id, &audit).await.unwrap();
    let (event_type, found) = s
        .log
        .event_deliveries(ws.id, member.id, created.id, 10)
        .await
        .unwrap()
        .expect("the event shows");
    assert_eq!(event_type, EventType::ClientCreated);
    let mut hooks: Vec<String> = found.iter().map(|(h, _)| h.to_string()).collect();
    hooks.sort();
    let mut expected = vec![hook.id.to_string(), other.id.to_string()];
    expected.sort();
    assert_eq!(
        hooks, expected,
        "the deleted subscription's delivery is left out"
    );
    assert!(found.iter().all(|(_, d)| d.event_id == created.id));
    assert!(found[0].1.id > found[1].1.id, "newest first");
    assert_eq!(
        s.log
            .event_deliveries(ws.id, member.id, created.id, 1)
            .await
            .unwrap()
            .unwrap()
            .1
            .len(),
        1,
        "at most the limit"
    );
    // Another workspace, and no such event: none.
    let (elsewhere, _) = seeded(&s, 2).await;
    assert!(
        s.log
            .event_deliveries(elsewhere.id, member.id, created.id, 10)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        s.log
            .event_deliveries(ws.id, member.id, EventId(id(999)), 10)
            .await
            .unwrap()
            .is_none()
    );
}
