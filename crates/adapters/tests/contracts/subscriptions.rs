//! Webhook subscriptions.

use super::*;

contract!(subscriptions_are_listed_per_member_and_changed_unless_deleted);
contract!(subscriptions_are_capped_refused_for_revoked_keys_and_deleted_softly);
contract!(a_paused_subscription_says_why_until_enabled);
contract!(an_expired_keys_webhooks_are_disabled_as_a_revoked_keys_are);

/// An API key of `member` in `ws`, stored.
pub(crate) async fn stored_key(s: &Subject, n: u128, ws: &Workspace, member: &User) -> ApiKey {
    let key = ApiKey {
        id: ApiKeyId(id(n)),
        workspace_id: ws.id,
        user_id: member.id,
        name: None,
        prefix: "tt_abcdefg".into(),
        created_at: T0,
        revoked_at: None,
        last_used_at: None,
        scopes: Scopes::ALL,
        expires_at: None,
    };
    let byte = u8::try_from(n % 251).unwrap();
    s.keys.create(&key, &KeyHash([byte; 32])).await.unwrap();
    key
}

pub(crate) fn subscription(n: usize, key: &ApiKey, minutes: i64) -> Subscription {
    let at = T0 + Duration::minutes(minutes);
    Subscription {
        id: WebhookId::parse(&format!("wh_{n:0>24}")).unwrap(),
        workspace_id: key.workspace_id,
        user_id: key.user_id,
        api_key_id: key.id,
        url: format!("https://hooks.example.com/{n}"),
        events: vec![EventType::ClientCreated, EventType::TimerStopped],
        description: Some(format!("Zap {n}")),
        secret: format!("whsec_{n:0>32}"),
        status: SubscriptionStatus::Active,
        disabled_reason: None,
        created_at: at,
        updated_at: at,
        previous_secret_expires_at: None,
        filters: SubscriptionFilters::default(),
        headers: CustomHeaders::parse(vec![("X-Zap".into(), n.to_string())]).unwrap(),
    }
}

/// The custom headers a change sets in the contract below.
fn bearer() -> CustomHeaders {
    CustomHeaders::parse(vec![(
        "Authorization".into(),
        "Bearer tok_5NnqV7fR2kWm9yXc".into(),
    )])
    .unwrap()
}

fn ids(subscriptions: &[Subscription]) -> Vec<String> {
    subscriptions.iter().map(|s| s.id.to_string()).collect()
}

async fn subscriptions_are_listed_per_member_and_changed_unless_deleted(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let colleague = user(2002, "colleague@example.com");
    s.users
        .create_member(&colleague, ws.id, Role::Member, T0)
        .await
        .unwrap();
    let mine = subscription(1, &stored_key(&s, 50, &ws, &member).await, 0);
    let theirs = subscription(2, &stored_key(&s, 51, &ws, &colleague).await, 1);
    s.subscriptions.create(&mine, 10).await.unwrap();
    s.subscriptions.create(&theirs, 10).await.unwrap();
    assert_eq!(
        ids(&s.subscriptions.list(ws.id, member.id).await.unwrap()),
        ids(std::slice::from_ref(&mine)),
        "a member's own only"
    );
    assert_eq!(
        ids(&s.subscriptions.list(ws.id, colleague.id).await.unwrap()),
        ids(std::slice::from_ref(&theirs))
    );

    let audit = |action: &'static str, minutes: i64| AuditEntry {
        workspace_id: ws.id,
        actor_user_id: Some(member.id),
        action,
        target_type: "webhook",
        target_id: mine.id.to_string(),
        reason: Some("changed url".into()),
        at: T0 + Duration::minutes(minutes),
    };
    let change = SubscriptionChange {
        url: Some("https://elsewhere.example.com/new".into()),
        events: None,
        description: Some(None),
        filters: None,
        headers: Some(bearer()),
        updated_at: T0 + Duration::minutes(5),
    };
    let stored = s
        .subscriptions
        .update(&mine.id, &change, &audit("webhook.updated", 5))
        .await
        .unwrap();
    let changed = Subscription {
        url: "https://elsewhere.example.com/new".into(),
        description: None,
        headers: bearer(),
        updated_at: T0 + Duration::minutes(5),
        ..mine.clone()
    };
    assert_eq!(
        stored, changed,
        "url, description and headers changed, events kept"
    );
    assert_eq!(
        s.subscriptions.get(&mine.id).await.unwrap(),
        Some(changed.clone())
    );
    // A change of other fields keeps the first change's: only what a change sets is written.
    let events_only = SubscriptionChange {
        url: None,
        events: Some(vec![EventType::TimerStarted]),
        description: None,
        filters: None,
        headers: None,
        updated_at: T0 + Duration::minutes(5),
    };
    let changed = Subscription {
        events: vec![EventType::TimerStarted],
        ..changed
    };
    assert_eq!(
        s.subscriptions
            .update(&mine.id, &events_only, &audit("webhook.updated", 5))
            .await
            .unwrap(),
        changed
    );
    // Headers set to none are removed, all of them.
    let no_headers = SubscriptionChange {
        events: None,
        headers: Some(CustomHeaders::none()),
        ..events_only.clone()
    };
    let changed = Subscription {
        headers: CustomHeaders::none(),
        ..changed
    };
    assert_eq!(
        s.subscriptions
            .update(&mine.id, &no_headers, &audit("webhook.updated", 5))
            .await
            .unwrap(),
        changed
    );
    assert_eq!(
        s.subscriptions.get(&mine.id).await.unwrap(),
        Some(changed.clone())
    );

    s.subscriptions
        .delete(&mine.id, &audit("webhook.deleted", 6))
        .await
        .unwrap();
    let late = SubscriptionChange {
        url: Some("https://late.example.com/".into()),
        ..events_only.clone()
    };
    assert!(matches!(
        s.subscriptions
            .update(&mine.id, &late, &audit("webhook.updated", 7))
            .await,
        Err(DomainError::NotFound("webhook"))
    ));
    let kept = s.subscriptions.get(&mine.id).await.unwrap().unwrap();
    assert_eq!(
        kept.url, changed.url,
        "a deleted subscription is not changed"
    );
    assert_eq!(kept.status, SubscriptionStatus::Deleted);
    let unknown = WebhookId::parse("wh_zzzzzzzzzzzzzzzzzzzzzzzz").unwrap();
    assert!(matches!(
        s.subscriptions
            .update(&unknown, &late, &audit("webhook.updated", 8))
            .await,
        Err(DomainError::NotFound("webhook"))
    ));
}

async fn subscriptions_are_capped_refused_for_revoked_keys_and_deleted_softly(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let key = stored_key(&s, 50, &ws, &member).await;
    let first = subscription(1, &key, 0);
    let second = subscription(2, &key, 1);
    s.subscriptions.create(&first, 2).await.unwrap();
    s.subscriptions.create(&second, 2).await.unwrap();
    assert_eq!(
        s.subscriptions.get(&first.id).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        ids(&s.subscriptions.list(ws.id, member.id).await.unwrap()),
        ids(&[second.clone(), first.clone()]),
        "newest first"
    );

    let third = subscription(3, &key, 2);
    match s.subscriptions.create(&third, 2).await {
        Err(DomainError::Conflict(message)) => assert_eq!(message, "Subscription limit reached"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        s.subscriptions.get(&third.id).await.unwrap(),
        None,
        "nothing stored"
    );

    let audit = AuditEntry {
        workspace_id: ws.id,
        actor_user_id: Some(member.id),
        action: "webhook.deleted",
        target_type: "webhook",
        target_id: first.id.to_string(),
        reason: None,
        at: T0 + Duration::hours(1),
    };
    s.subscriptions.delete(&first.id, &audit).await.unwrap();
    let deleted = s.subscriptions.get(&first.id).await.unwrap().unwrap();
    assert_eq!(
        deleted.status,
        SubscriptionStatus::Deleted,
        "kept, marked deleted"
    );
    assert_eq!(
        ids(&s.subscriptions.list(ws.id, member.id).await.unwrap()),
        ids(std::slice::from_ref(&second))
    );
    s.subscriptions.delete(&first.id, &audit).await.unwrap();
    let unknown = WebhookId::parse("wh_zzzzzzzzzzzzzzzzzzzzzzzz").unwrap();
    assert!(matches!(
        s.subscriptions.delete(&unknown, &audit).await,
        Err(DomainError::NotFound("webhook"))
    ));
    // A deleted one no longer counts against the cap.
    s.subscriptions.create(&third, 2).await.unwrap();

    // Revoking the key disables what it created; a revoked key subscribes nothing.
    s.keys
        .revoke(key.id, T0 + Duration::hours(2))
        .await
        .unwrap();
    for id in [&second.id, &third.id] {
        let after = s.subscriptions.get(id).await.unwrap().unwrap();
        assert_eq!(after.status, SubscriptionStatus::Disabled, "{id}");
        assert_eq!(
            after.disabled_reason,
            Some(DisabledReason::KeyRevoked),
            "{id}"
        );
    }
    let late = subscription(4, &key, 3);
    assert!(matches!(
        s.subscriptions.create(&late, 100).await,
        Err(DomainError::Unauthorized)
    ));
    assert_eq!(
        s.subscriptions.get(&late.id).await.unwrap(),
        None,
        "nothing stored"
    );
}

async fn a_paused_subscription_says_why_until_enabled(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let key = stored_key(&s, 50, &ws, &member).await;
    let hook = subscription(1, &key, 0);
    s.subscriptions.create(&hook, 2).await.unwrap();
    let audit = |action: &'static str, hours: i64| AuditEntry {
        workspace_id: ws.id,
        actor_user_id: Some(member.id),
        action,
        target_type: "webhook",
        target_id: hook.id.to_string(),
        reason: None,
        at: T0 + Duration::hours(hours),
    };
    s.subscriptions
        .disable(&hook.id, &audit("webhook.disabled", 1))
        .await
        .unwrap();
    let paused = s.subscriptions.get(&hook.id).await.unwrap().unwrap();
    assert_eq!(
        (paused.status, paused.disabled_reason, paused.updated_at),
        (
            SubscriptionStatus::Disabled,
            Some(DisabledReason::Manual),
            T0 + Duration::hours(1)
        )
    );
    // Again: as it is.
    s.subscriptions
        .disable(&hook.id, &audit("webhook.disabled", 2))
        .await
        .unwrap();
    let again = s.subscriptions.get(&hook.id).await.unwrap().unwrap();
    assert_eq!(again.updated_at, T0 + Duration::hours(1), "unchanged");

    s.subscriptions
        .enable(&hook.id, 2, &audit("webhook.enabled", 3))
        .await
        .unwrap();
    let resumed = s.subscriptions.get(&hook.id).await.unwrap().unwrap();
    assert_eq!(
        (resumed.status, resumed.disabled_reason),
        (SubscriptionStatus::Active, None)
    );

    s.subscriptions
        .delete(&hook.id, &audit("webhook.deleted", 4))
        .await
        .unwrap();
    let unknown = WebhookId::parse("wh_zzzzzzzzzzzzzzzzzzzzzzzz").unwrap();
    for id in [&hook.id, &unknown] {
        assert!(
            matches!(
                s.subscriptions
                    .disable(id, &audit("webhook.disabled", 5))
                    .await,
                Err(DomainError::NotFound("webhook"))
            ),
            "{id}"
        );
    }
    let deleted = s.subscriptions.get(&hook.id).await.unwrap().unwrap();
    assert_eq!(
        (deleted.status, deleted.disabled_reason),
        (SubscriptionStatus::Deleted, None)
    );
}

async fn an_expired_keys_webhooks_are_disabled_as_a_revoked_keys_are(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let lasting = stored_key(&s, 60, &ws, &member).await;
    let expiring = ApiKey {
        id: ApiKeyId(id(61)),
        expires_at: Some(T0 + Duration::hours(1)),
        ..lasting.clone()
    };
    s.keys.create(&expiring, &KeyHash([61; 32])).await.unwrap();
    let kept = subscription(1, &lasting, 0);
    let ends = subscription(2, &expiring, 0);
    for hook in [&kept, &ends] {
        s.subscriptions.create(hook, 100).await.unwrap();
    }
    // Not yet expired: nothing changes.
    assert_eq!(
        s.keys
            .disable_webhooks_of_expired(T0 + Duration::minutes(59))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        s.subscriptions.get(&ends.id).await.unwrap().unwrap().status,
        SubscriptionStatus::Active
    );
    // Expired: its webhooks are disabled as a revoked key's, once; the other key's stay.
    let at = T0 + Duration::hours(1);
    assert_eq!(s.keys.disable_webhooks_of_expired(at).await.unwrap(), 1);
    let after = s.subscriptions.get(&ends.id).await.unwrap().unwrap();
    assert_eq!(
        (after.status, after.disabled_reason),
        (
            SubscriptionStatus::Disabled,
            Some(DisabledReason::KeyRevoked)
        )
    );
    assert_eq!(
        s.subscriptions.get(&kept.id).await.unwrap().unwrap().status,
        SubscriptionStatus::Active
    );
    assert_eq!(s.keys.disable_webhooks_of_expired(at).await.unwrap(), 0);
    // The key itself is left as it is: its expiry refuses it.
    assert_eq!(
        s.keys.get(expiring.id).await.unwrap().unwrap().revoked_at,
        None
    );
}
