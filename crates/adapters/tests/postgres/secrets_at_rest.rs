use super::*;
use timetrack_adapters::postgres::{
    PgDeliveryQueue, PgIdempotencyStore, PgSubscriptionRepository, reseal_all,
};
use timetrack_adapters::{SecretBox, SecretKey};
use timetrack_domain::delivery::{ClaimedDelivery, InFlightCaps};
use timetrack_domain::model::{
    CustomHeaders, EventType, Subscription, SubscriptionStatus, WebhookId,
};
use timetrack_domain::ports::{
    DeliveryQueue, IdempotencyBegin, IdempotencyStore, SubscriptionRepository,
};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwAAAAAAAAAAA=";
/// A custom header's value, as credential-like as they come.
const BEARER: &str = "Bearer tok_5NnqV7fR2kWm9yXc";

fn custom_headers() -> CustomHeaders {
    CustomHeaders::parse(vec![
        ("Authorization".into(), BEARER.into()),
        ("X-Tenant".into(), "acme".into()),
    ])
    .unwrap()
}

async fn column(db: &TestDatabase, sql: &str) -> Vec<String> {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        v: String,
    }
    let pool = db.pool();
    let mut conn = pool.get().await.unwrap();
    let rows: Vec<Row> = diesel::sql_query(sql).load(&mut conn).await.unwrap();
    rows.into_iter().map(|r| r.v).collect()
}

/// A subscription stored through the repository with `secrets`, and one event queued for it.
async fn subscribed(f: &Fixture, secrets: &SecretBox) -> Subscription {
    let ws = f.admin.create_workspace(named("S")).await.unwrap();
    let ada = f
        .admin
        .create_user(ws.id, name("Ada"), email("ada@example.com"))
        .await
        .unwrap();
    let (key, _) = f.admin.create_api_key(ada.id, ws.id, None).await.unwrap();
    let at = datetime!(2026-03-01 12:00 UTC);
    let subscription = Subscription {
        id: WebhookId::parse("wh_secretsecretsecretsecre").unwrap(),
        workspace_id: ws.id,
        user_id: ada.id,
        api_key_id: key.id,
        url: "https://hooks.example.com/h".into(),
        events: vec![EventType::ClientCreated],
        description: None,
        secret: SECRET.into(),
        status: SubscriptionStatus::Active,
        disabled_reason: None,
        created_at: at,
        updated_at: at,
        previous_secret_expires_at: None,
        filters: Default::default(),
        headers: custom_headers(),
    };
    PgSubscriptionRepository::new(f.db.pool(), secrets.clone())
        .create(&subscription, 100)
        .await
        .unwrap();
    let pool = f.db.pool();
    let mut conn = pool.get().await.unwrap();
    for statement in [
        "INSERT INTO events (id, workspace_id, event_type, body, created_at) \
         VALUES ('00000000-0000-0000-0000-0000000000e1', $1, 'CLIENT_CREATED', '{}', now())",
        "INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, \
         next_attempt_at, created_at, updated_at) \
         SELECT '00000000-0000-0000-0000-0000000000e1', id, workspace_id, 'PENDING', now(), \
         now(), now() FROM webhook_subscriptions WHERE workspace_id = $1",
    ] {
        diesel::sql_query(statement)
            .bind::<diesel::sql_types::Uuid, _>(ws.id.0)
            .execute(&mut conn)
            .await
            .unwrap();
    }
    subscription
}

/// A claim `later` after now (past the leases of earlier claims).
async fn claim(
    db: &TestDatabase,
    secrets: &SecretBox,
    later: time::Duration,
) -> DomainResult<Vec<ClaimedDelivery>> {
    let now = time::OffsetDateTime::now_utc() + later;
    PgDeliveryQueue::new(db.pool(), secrets.clone())
        .record_and_claim(
            &[],
            now,
            now + time::Duration::seconds(30),
            10,
            &InFlightCaps::per_subscription(10),
            timetrack_domain::delivery::ClaimWhen::Always,
        )
        .await
}

use timetrack_domain::DomainResult;
use timetrack_testkit::fakes::{email, name};

#[tokio::test]
async fn webhook_secrets_are_stored_sealed_and_opened_for_the_sender() {
    let f = fixture().await;
    let secrets = SecretBox::ephemeral();
    let subscription = subscribed(&f, &secrets).await;
    let stored = column(&f.db, "SELECT secret AS v FROM webhook_subscriptions").await;
    assert_eq!(stored.len(), 1);
    assert!(
        stored[0].starts_with(&format!("tt1:{}:", secrets.current_id())),
        "{stored:?}"
    );
    assert!(!stored[0].contains("MfKQ9r8G"), "{stored:?}");
    let read = PgSubscriptionRepository::new(f.db.pool(), secrets.clone())
        .get(&subscription.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.secret, SECRET);
    // The custom headers, sealed the same way (under their own label), opened for the owner.
    let stored = column(&f.db, "SELECT headers AS v FROM webhook_subscriptions").await;
    assert!(
        stored[0].starts_with(&format!("tt1:{}:", secrets.current_id())),
        "{stored:?}"
    );
    assert!(
        !stored[0].contains("tok_5Nn") && !stored[0].contains("acme"),
        "{stored:?}"
    );
    assert_eq!(read.headers, custom_headers());
    // Under another key, the stored value opens to nothing: the delivery is not sent (it is
    // logged and left to its lease, and the claim's other deliveries go out).
    assert!(
        claim(&f.db, &SecretBox::ephemeral(), time::Duration::ZERO)
            .await
            .unwrap()
            .is_empty()
    );
    let claimed = claim(&f.db, &secrets, time::Duration::minutes(1))
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].secret, SECRET);
    assert_eq!(claimed[0].headers, custom_headers());
}

#[tokio::test]
async fn idempotent_responses_are_stored_sealed_and_replayed_in_clear() {
    let f = fixture().await;
    let ws = f.admin.create_workspace(named("I")).await.unwrap();
    let ada = f
        .admin
        .create_user(ws.id, name("Ada"), email("ada@example.com"))
        .await
        .unwrap();
    let (key, _) = f.admin.create_api_key(ada.id, ws.id, None).await.unwrap();
    let store = PgIdempotencyStore::new(f.db.pool(), SecretBox::ephemeral());
    let now = time::OffsetDateTime::now_utc();
    let body = format!(r#"{{"success":true,"webhook":{{"secret":"{SECRET}"}}}}"#);
    assert_eq!(
        store.begin(ws.id, key.id, "k", [7; 32], now).await.unwrap(),
        IdempotencyBegin::Started
    );
    store.complete(key.id, "k", 201, &body).await.unwrap();
    let stored = column(&f.db, "SELECT body AS v FROM idempotency_keys").await;
    assert!(
        stored[0].starts_with("tt1:") && !stored[0].contains("whsec_"),
        "{stored:?}"
    );
    assert_eq!(
        store.begin(ws.id, key.id, "k", [7; 32], now).await.unwrap(),
        IdempotencyBegin::Replay { status: 201, body }
    );
}

#[tokio::test]
async fn a_rotation_reseals_plain_and_old_values_under_the_new_key() {
    let f = fixture().await;
    let (old, new) = (SecretKey::generate(), SecretKey::generate());
    let before = SecretBox::new(&old, &[]);
    let subscription = subscribed(&f, &before).await;
    // Inside a rotation's window: a new secret, the old one still signing beside it.
    const NEWER: &str = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    let at = time::OffsetDateTime::now_utc();
    PgSubscriptionRepository::new(f.db.pool(), before.clone())
        .rotate_secret(
            &subscription.id,
            NEWER,
            at + time::Duration::days(1),
            &timetrack_domain::model::AuditEntry {
                workspace_id: subscription.workspace_id,
                actor_user_id: None,
                action: "webhook.secret_rotated",
                target_type: "webhook",
                target_id: subscription.id.to_string(),
                reason: None,
                at,
            },
        )
        .await
        .unwrap();
    // A value from before encryption at rest, too.
    diesel::sql_query(
        "INSERT INTO webhook_subscriptions (id, workspace_id, user_id, api_key_id, url, \
             events, secret, status, disabled_reason, created_at, updated_at) \
             SELECT 'wh_plainplainplainplainpla', workspace_id, user_id, api_key_id, url, events, \
             'whsec_plain', status, disabled_reason, created_at, updated_at \
             FROM webhook_subscriptions",
    )
    .execute(&mut f.db.pool().get().await.unwrap())
    .await
    .unwrap();
    let without_old = SecretBox::new(&new, &[]);
    let err = reseal_all(&f.db.pool(), &without_old).await.unwrap_err();
    assert!(format!("{err:#}").contains(&old.id()), "{err:#}");

    let rotated = SecretBox::new(&new, std::slice::from_ref(&old));
    let resealed = reseal_all(&f.db.pool(), &rotated).await.unwrap();
    assert_eq!(
        resealed.webhook_secrets, 3,
        "two current secrets and the previous one"
    );
    assert_eq!(resealed.webhook_headers, 1, "the custom headers");
    assert_eq!(
        reseal_all(&f.db.pool(), &rotated).await.unwrap(),
        Default::default()
    );
    for stored in column(
        &f.db,
        "SELECT secret AS v FROM webhook_subscriptions UNION ALL \
         SELECT previous_secret FROM webhook_subscriptions WHERE previous_secret IS NOT NULL \
         UNION ALL SELECT headers FROM webhook_subscriptions WHERE headers IS NOT NULL",
    )
    .await
    {
        assert!(
            stored.starts_with(&format!("tt1:{}:", new.id())),
            "{stored}"
        );
    }
    // Once resealed, the old key is no longer needed.
    let secrets: Vec<(String, Option<String>, CustomHeaders)> =
        claim(&f.db, &without_old, time::Duration::ZERO)
            .await
            .unwrap()
            .into_iter()
            .map(|c| (c.secret, c.previous_secret, c.headers))
            .collect();
    assert_eq!(
        secrets,
        [(NEWER.to_owned(), Some(SECRET.to_owned()), custom_headers())]
    );
    let repo = PgSubscriptionRepository::new(f.db.pool(), without_old);
    let plain = repo
        .get(&WebhookId::parse("wh_plainplainplainplainpla").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(plain.secret, "whsec_plain");
}

/// The claim skips a subscription whose key has expired, as it skips a revoked key's, even
/// before housekeeping has disabled it.
#[tokio::test]
async fn an_expired_keys_deliveries_are_not_claimed() {
    let f = fixture().await;
    let secrets = SecretBox::ephemeral();
    subscribed(&f, &secrets).await;
    let pool = f.db.pool();
    let mut conn = pool.get().await.unwrap();
    diesel::sql_query("UPDATE api_keys SET expires_at = now() + interval '1 hour'")
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        claim(&f.db, &secrets, time::Duration::ZERO)
            .await
            .unwrap()
            .len(),
        1,
        "before its expiry"
    );
    diesel::sql_query("UPDATE api_keys SET expires_at = now() - interval '1 second'")
        .execute(&mut conn)
        .await
        .unwrap();
    assert!(
        claim(&f.db, &secrets, time::Duration::minutes(1))
            .await
            .unwrap()
            .is_empty(),
        "after it"
    );
}
