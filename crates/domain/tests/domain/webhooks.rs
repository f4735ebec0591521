use timetrack_domain::ids::EventId;
use timetrack_domain::model::Role;
use timetrack_domain::services::webhooks::*;
use timetrack_domain::{DomainError, DomainResult, model::*, ports::*};
use timetrack_testkit::fakes::{TestWorld, run_ready};
use timetrack_testkit::fakes::{email, name};

fn setup() -> (TestWorld, Principal) {
    let world = TestWorld::new();
    let (ws, user) = world.workspace_with_user();
    let (key, _) = run_ready(world.admin.create_api_key(user.id, ws.id, None)).unwrap();
    world.resolver.set("hooks.example.com", &["93.184.216.34"]);
    (world, key.principal(Role::Owner))
}

fn new(url: &str, events: &[&str]) -> NewSubscription {
    NewSubscription {
        url: url.into(),
        events: events.iter().map(|e| (*e).to_owned()).collect(),
        description: None,
        filters: SubscriptionFilters::default(),
        headers: Vec::new(),
    }
}

fn validation(result: DomainResult<Subscription>) -> String {
    match result {
        Err(DomainError::Validation(message)) => message,
        Err(DomainError::Invalid { message, .. }) => message.to_owned(),
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[test]
fn subscribe_creates_an_active_owned_subscription_with_deduplicated_events() {
    let (world, caller) = setup();
    let sub = run_ready(world.webhooks.subscribe(
        &caller,
        new(
            "https://hooks.example.com/h",
            &["TIMER_STOPPED", "CLIENT_CREATED", "TIMER_STOPPED"],
        ),
    ))
    .unwrap();
    assert_eq!(sub.status, SubscriptionStatus::Active);
    assert_eq!(
        sub.events,
        [EventType::TimerStopped, EventType::ClientCreated]
    );
    assert_eq!(
        (sub.workspace_id, sub.user_id, sub.api_key_id),
        (caller.workspace_id, caller.user_id, caller.api_key_id)
    );
    assert!(sub.id.as_str().starts_with("wh_") && sub.secret.starts_with("whsec_"));
    let listed = run_ready(world.webhooks.list(&caller)).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].0, sub);
    assert_eq!(listed[0].1.state, HealthState::Unknown, "no attempt yet");
}

/// A local receiver (`timetrack listen`) on one port, for one workspace.
#[derive(Debug)]
struct ListeningOn(u16, timetrack_domain::ids::WorkspaceId);

impl LocalReceivers for ListeningOn {
    fn receives_at(&self, port: u16, workspace: timetrack_domain::ids::WorkspaceId) -> bool {
        port == self.0 && workspace == self.1
    }
}

#[test]
fn a_loopback_literal_is_accepted_only_at_a_port_a_local_receiver_listens_on() {
    let (mut world, caller) = setup();
    world.webhooks = world
        .webhooks
        .with_local_receivers(Some(std::sync::Arc::new(ListeningOn(
            4431,
            caller.workspace_id,
        ))));
    let s = |n: NewSubscription| run_ready(world.webhooks.subscribe(&caller, n));
    assert!(s(new("https://127.0.0.1:4431/", &["CLIENT_CREATED"])).is_ok());
    for refused in [
        "https://127.0.0.1:4432/",
        "https://127.0.0.2:4431/",
        "https://[::1]:4431/",
        "https://127.0.0.1/",
        "https://localhost:4431/",
        "https://10.0.0.1:4431/",
        "http://127.0.0.1:4431/",
    ] {
        assert_eq!(
            validation(s(new(refused, &["CLIENT_CREATED"]))),
            INVALID_URL,
            "{refused}"
        );
    }
}

#[test]
fn a_local_receiver_takes_only_its_own_workspaces_webhooks() {
    let (mut world, caller) = setup();
    let another = timetrack_domain::ids::WorkspaceId(uuid::Uuid::from_u128(0xfeed));
    world.webhooks = world
        .webhooks
        .with_local_receivers(Some(std::sync::Arc::new(ListeningOn(4431, another))));
    let refused = run_ready(
        world
            .webhooks
            .subscribe(&caller, new("https://127.0.0.1:4431/", &["CLIENT_CREATED"])),
    );
    assert_eq!(validation(refused), INVALID_URL);
}

#[test]
fn subscribe_refuses_with_the_published_messages() {
    let (world, caller) = setup();
    world
        .resolver
        .set("internal.example.com", &["93.184.216.34", "10.0.0.7"]);
    let s = |n: NewSubscription| validation(run_ready(world.webhooks.subscribe(&caller, n)));
    assert_eq!(s(new("https://hooks.example.com/h", &[])), REQUIRED);
    assert_eq!(
        s(new("http://hooks.example.com/h", &["CLIENT_CREATED"])),
        INVALID_URL
    );
    assert_eq!(
        s(new("https://127.0.0.1/h", &["CLIENT_CREATED"])),
        INVALID_URL
    );
    assert_eq!(
        s(new("https://internal.example.com/h", &["CLIENT_CREATED"])),
        INVALID_URL
    );
    assert_eq!(
        s(new(
            "https://hooks.example.com/h",
            &["CLIENT_CREATED", "client_created"]
        )),
        "Invalid event type: client_created"
    );
    let long = NewSubscription {
        description: Some("d".repeat(256)),
        ..new("https://hooks.example.com/h", &["CLIENT_CREATED"])
    };
    assert_eq!(s(long), "description must be at most 255 characters");
    assert!(run_ready(world.webhooks.list(&caller)).unwrap().is_empty());
}

#[test]
fn an_unresolvable_host_is_accepted_because_every_send_checks_again() {
    let (world, caller) = setup();
    assert!(
        run_ready(world.webhooks.subscribe(
            &caller,
            new("https://not-yet.example.org/h", &["CLIENT_CREATED"])
        ))
        .is_ok()
    );
}

#[test]
fn the_cap_counts_active_subscriptions_of_the_workspace() {
    let (world, caller) = setup();
    for _ in 0..100 {
        run_ready(world.webhooks.subscribe(
            &caller,
            new("https://hooks.example.com/h", &["CLIENT_CREATED"]),
        ))
        .unwrap();
    }
    let err = run_ready(world.webhooks.subscribe(
        &caller,
        new("https://hooks.example.com/h", &["CLIENT_CREATED"]),
    ))
    .unwrap_err();
    assert!(
        matches!(&err, DomainError::Conflict(m) if m == "Subscription limit reached"),
        "{err:?}"
    );
    let (first, _) = run_ready(world.webhooks.list(&caller))
        .unwrap()
        .pop()
        .unwrap();
    run_ready(world.webhooks.delete(&caller, &first.id)).unwrap();
    assert!(
        run_ready(world.webhooks.subscribe(
            &caller,
            new("https://hooks.example.com/h", &["CLIENT_CREATED"])
        ))
        .is_ok()
    );
}

#[test]
fn delete_is_owner_only_idempotent_audited_and_cancels_pending_deliveries() {
    let (world, caller) = setup();
    let sub = run_ready(world.webhooks.subscribe(
        &caller,
        new("https://hooks.example.com/h", &["CLIENT_CREATED"]),
    ))
    .unwrap();
    world.store.add_delivery(
        &sub.id,
        DeliveryRecord {
            id: DeliveryId(1),
            event_id: EventId(uuid::Uuid::from_u128(1)),
            event_type: EventType::ClientCreated,
            kind: DeliveryKind::Event,
            status: DeliveryStatus::Pending,
            attempts: 0,
            last_attempt_at: None,
            last_status_code: None,
            last_error: None,
            next_attempt_at: Some(world.clock.now()),
            created_at: world.clock.now(),
            updated_at: world.clock.now(),
        },
    );

    // Another user of the same workspace: not found, and nothing changes.
    let other_user = run_ready(world.admin.create_user(
        caller.workspace_id,
        name("Eve"),
        email("eve@example.com"),
    ))
    .unwrap();
    let (other_key, _) = run_ready(world.admin.create_api_key(
        other_user.id,
        caller.workspace_id,
        None,
    ))
    .unwrap();
    let err = run_ready(
        world
            .webhooks
            .delete(&other_key.principal(Role::Member), &sub.id),
    )
    .unwrap_err();
    assert!(matches!(err, DomainError::NotFound("webhook")));
    assert_eq!(run_ready(world.webhooks.list(&caller)).unwrap().len(), 1);

    run_ready(world.webhooks.delete(&caller, &sub.id)).unwrap();
    assert!(run_ready(world.webhooks.list(&caller)).unwrap().is_empty());
    assert_eq!(
        world.store.delivery_statuses(&sub.id),
        [DeliveryStatus::Cancelled]
    );
    // Its delivery log went with it.
    let err = run_ready(
        world
            .webhooks
            .deliveries(&caller, &sub.id, DeliveryFilter::default()),
    )
    .unwrap_err();
    assert!(matches!(err, DomainError::NotFound("webhook")));
    let audit = world.store.audit();
    assert_eq!(audit.len(), 1);
    assert_eq!(
        (
            audit[0].action,
            audit[0].target_id.as_str(),
            audit[0].actor_user_id
        ),
        ("webhook.deleted", sub.id.as_str(), Some(caller.user_id))
    );

    // Again: success, no second audit row.
    run_ready(world.webhooks.delete(&caller, &sub.id)).unwrap();
    assert_eq!(world.store.audit().len(), 1);

    let unknown = WebhookId::parse("wh_doesnotexist000000000").unwrap();
    assert!(matches!(
        run_ready(world.webhooks.delete(&caller, &unknown)),
        Err(DomainError::NotFound("webhook"))
    ));
    // A malformed id names no webhook at all (the HTTP layer answers it 404 like an unknown one).
    for malformed in ["not-an-id", ""] {
        assert_eq!(WebhookId::parse(malformed), None);
    }
}

#[test]
fn update_checks_like_subscribe_changes_only_what_it_names_and_is_audited() {
    let (world, caller) = setup();
    let sub = run_ready(world.webhooks.subscribe(
        &caller,
        new("https://hooks.example.com/h", &["CLIENT_CREATED"]),
    ))
    .unwrap();
    let id = sub.id.clone();
    let change = |url: Option<&str>, events: Option<&[&str]>| WebhookChange {
        url: url.map(str::to_owned),
        events: events.map(|e| e.iter().map(|n| (*n).to_owned()).collect()),
        description: None,
        filters: None,
        headers: None,
    };
    let refused = |c: WebhookChange| {
        validation(run_ready(world.webhooks.update(&caller, &id, c)).map(|(s, _)| s))
    };
    assert_eq!(
        refused(change(Some("http://hooks.example.com/h"), None)),
        INVALID_URL
    );
    assert_eq!(refused(change(None, Some(&[]))), REQUIRED);
    assert_eq!(
        refused(change(None, Some(&["NOPE"]))),
        "Invalid event type: NOPE"
    );
    assert_eq!(
        run_ready(world.webhooks.get(&caller, &id)).unwrap().0,
        sub,
        "a refused change changes nothing"
    );
    assert!(world.store.audit().is_empty());

    world.clock.advance(time::Duration::seconds(3));
    let (changed, health) = run_ready(world.webhooks.update(
        &caller,
        &id,
        WebhookChange {
            events: Some(vec!["TIMER_STARTED".into(), "TIMER_STARTED".into()]),
            description: Some(Some("Zap".into())),
            ..WebhookChange::default()
        },
    ))
    .unwrap();
    assert_eq!(changed.url, sub.url, "not named, not changed");
    assert_eq!(changed.events, [EventType::TimerStarted]);
    assert_eq!(changed.description.as_deref(), Some("Zap"));
    assert_eq!(changed.secret, sub.secret);
    assert_eq!(
        changed.updated_at,
        sub.created_at + time::Duration::seconds(3)
    );
    assert_eq!(health.state, HealthState::Unknown);
    let audit = world.store.audit();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].action, "webhook.updated");
    assert_eq!(
        audit[0].reason.as_deref(),
        Some("changed events, description")
    );

    // Naming nothing changes nothing and writes no audit row.
    run_ready(
        world
            .webhooks
            .update(&caller, &id, WebhookChange::default()),
    )
    .unwrap();
    assert_eq!(world.store.audit().len(), 1);
}

#[test]
fn another_users_or_a_deleted_webhook_is_not_found_for_every_operation() {
    let (world, caller) = setup();
    let sub = run_ready(world.webhooks.subscribe(
        &caller,
        new("https://hooks.example.com/h", &["CLIENT_CREATED"]),
    ))
    .unwrap();
    let colleague = run_ready(world.admin.create_user(
        caller.workspace_id,
        name("Bob"),
        email("bob@example.com"),
    ))
    .unwrap();
    let (key, _) = run_ready(
        world
            .admin
            .create_api_key(colleague.id, caller.workspace_id, None),
    )
    .unwrap();
    let bob = key.principal(Role::Member);
    let not_found = |result: DomainResult<()>| {
        assert!(
            matches!(result, Err(DomainError::NotFound("webhook"))),
            "{result:?}"
        );
    };
    let id = sub.id;
    not_found(run_ready(world.webhooks.get(&bob, &id)).map(drop));
    not_found(
        run_ready(world.webhooks.update(
            &bob,
            &id,
            WebhookChange {
                description: Some(None),
                ..WebhookChange::default()
            },
        ))
        .map(drop),
    );
    not_found(
        run_ready(
            world
                .webhooks
                .deliveries(&bob, &id, DeliveryFilter::default()),
        )
        .map(drop),
    );
    assert!(run_ready(world.webhooks.list(&bob)).unwrap().is_empty());
    let unknown = WebhookId::parse("wh_unknownunknownunknown1").unwrap();
    not_found(run_ready(world.webhooks.get(&caller, &unknown)).map(drop));
    assert_eq!(WebhookId::parse("not-an-id"), None);
    run_ready(world.webhooks.delete(&caller, &id)).unwrap();
    not_found(run_ready(world.webhooks.get(&caller, &id)).map(drop));
    not_found(
        run_ready(
            world
                .webhooks
                .update(&caller, &id, WebhookChange::default()),
        )
        .map(drop),
    );
}

#[test]
fn health_is_decided_by_the_latest_attempt_and_the_status() {
    let (world, caller) = setup();
    let sub = run_ready(world.webhooks.subscribe(
        &caller,
        new("https://hooks.example.com/h", &["CLIENT_CREATED"]),
    ))
    .unwrap();
    let at = sub.created_at;
    let later = at + time::Duration::minutes(1);
    let of = |s: &Subscription, last: Option<_>, success: Option<_>| {
        WebhookHealth::of(
            s,
            AttemptSummary {
                last_attempt_at: last,
                last_success_at: success,
                ..AttemptSummary::default()
            },
        )
        .state
    };
    assert_eq!(of(&sub, None, None), HealthState::Unknown);
    assert_eq!(of(&sub, Some(later), Some(later)), HealthState::Healthy);
    assert_eq!(of(&sub, Some(later), Some(at)), HealthState::Failing);
    assert_eq!(of(&sub, Some(later), None), HealthState::Failing);
    let disabled = Subscription {
        status: SubscriptionStatus::Disabled,
        disabled_reason: Some(DisabledReason::Failing),
        ..sub
    };
    assert_eq!(
        of(&disabled, Some(later), Some(later)),
        HealthState::Disabled
    );
}

#[test]
fn filters_match_only_events_with_a_value_they_allow() {
    use timetrack_domain::ids::{ClientId, ProjectId, UserId};
    let p = ProjectId(uuid::Uuid::from_u128(1));
    let c = ClientId(uuid::Uuid::from_u128(2));
    let u = UserId(uuid::Uuid::from_u128(3));
    let entry = EventSubject {
        project_id: Some(p),
        client_id: Some(c),
        user_id: Some(u),
        billable: Some(false),
    };
    assert!(SubscriptionFilters::default().matches(&entry));
    assert!(SubscriptionFilters::default().matches(&EventSubject::default()));
    let by_project = SubscriptionFilters {
        project_ids: Some(vec![p]),
        ..SubscriptionFilters::default()
    };
    assert!(by_project.matches(&entry));
    assert!(
        !by_project.matches(&EventSubject {
            project_id: None,
            ..entry
        }),
        "no value: no match"
    );
    let every = SubscriptionFilters {
        project_ids: Some(vec![p]),
        client_ids: Some(vec![c]),
        user_ids: Some(vec![u]),
        billable: Some(true),
    };
    assert!(!every.matches(&entry), "every given filter must match");
    assert!(every.matches(&EventSubject {
        billable: Some(true),
        ..entry
    }));
    assert_eq!(
        every.names(),
        ["project_ids", "client_ids", "user_ids", "billable"]
    );
    for name in ["project_ids", "user_ids", "billable"] {
        assert!(SubscriptionFilters::applies(name, EventType::TimerStopped));
        assert!(!SubscriptionFilters::applies(
            name,
            EventType::ClientCreated
        ));
    }
    assert!(SubscriptionFilters::applies(
        "client_ids",
        EventType::ClientCreated
    ));
    assert!(!SubscriptionFilters::applies(
        "client_ids",
        EventType::WebhookFailing
    ));
}

#[test]
fn a_replay_stops_before_the_instant_of_the_first_event_left_out() {
    use time::macros::datetime;
    let t = |s: i64| datetime!(2026-03-01 09:00 UTC) + time::Duration::seconds(s);
    let window = |limit| ReplayWindow {
        since: t(0),
        until: t(100),
        only_failed: true,
        limit,
        at: t(100),
    };
    assert_eq!(window(3).cut(&[t(1), t(2)]), (2, None), "all of them");
    assert_eq!(window(2).cut(&[t(1), t(2)]), (2, None), "exactly the limit");
    assert_eq!(window(2).cut(&[t(1), t(2), t(3)]), (2, Some(t(3))));
    assert_eq!(
        window(2).cut(&[t(1), t(2), t(2)]),
        (1, Some(t(2))),
        "the instant left out waits whole"
    );
    assert_eq!(
        window(2).cut(&[t(2), t(2), t(2)]),
        (2, Some(t(2))),
        "unless nothing would be left"
    );
    assert_eq!(window(0).cut(&[t(1)]), (0, Some(t(1))));
}

#[test]
fn the_requeue_quota_leaves_room_or_says_when_the_oldest_that_must_go_has_gone() {
    use timetrack_domain::services::webhooks::requeue_room;
    let now = time::macros::datetime!(2026-03-01 09:00:30 UTC);
    let at = |s: i64| now - time::Duration::seconds(s);
    assert_eq!(requeue_room(&[], now, 3), Ok(3));
    assert_eq!(requeue_room(&[at(50), at(10)], now, 3), Ok(1));
    // Full: the oldest leaves the minute in 10 s.
    assert_eq!(requeue_room(&[at(50), at(20), at(10)], now, 3), Err(10));
    // Over (two calls raced): the second oldest must leave too, in 40 s.
    assert_eq!(
        requeue_room(&[at(50), at(20), at(10), at(5)], now, 3),
        Err(40)
    );
    // A part of a second counts as a whole one, and never less than one.
    let late = now + time::Duration::milliseconds(9_500);
    assert_eq!(requeue_room(&[at(50), at(20), at(10)], late, 3), Err(1));
    assert_eq!(
        requeue_room(
            &[at(50), at(20), at(10)],
            now - time::Duration::milliseconds(500),
            3
        ),
        Err(11)
    );
}
