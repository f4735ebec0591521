//! Workspaces, users and API keys.

use super::*;
use timetrack_domain::model::Role;
use timetrack_domain::values::{Currency, TimeZoneName};
use timetrack_testkit::fakes::{email, name};

#[tokio::test]
async fn workspaces_round_trip_with_their_settings() {
    let f = fixture().await;
    let ws = f
        .admin
        .create_workspace(NewWorkspace {
            name: name("Acme"),
            timezone: Some(TimeZoneName::parse("Europe/Paris").unwrap()),
            currency: Some(Currency::parse("EUR").unwrap()),
        })
        .await
        .unwrap();
    assert_eq!(f.workspaces.get(ws.id).await.unwrap(), Some(ws.clone()));
    assert_eq!(
        f.workspaces
            .get(WorkspaceId(uuid::Uuid::nil()))
            .await
            .unwrap(),
        None
    );
    let err = f.workspaces.create(&ws).await.unwrap_err();
    assert!(matches!(err, DomainError::Conflict(_)), "{err:?}");
}

#[tokio::test]
async fn users_join_workspaces_and_emails_are_unique_case_insensitively() {
    let f = fixture().await;
    let a = f.admin.create_workspace(named("A")).await.unwrap();
    let b = f.admin.create_workspace(named("B")).await.unwrap();
    let ada = f
        .admin
        .create_user(a.id, name("Ada"), email("ada@example.com"))
        .await
        .unwrap();
    assert_eq!(f.users.get(ada.id).await.unwrap(), Some(ada.clone()));
    assert_eq!(
        f.users.find_by_email("ADA@EXAMPLE.COM").await.unwrap(),
        Some(ada.clone())
    );

    // The same e-mail joins a second workspace as the same user.
    let again = f
        .admin
        .create_user(b.id, name("Someone"), email("Ada@Example.com"))
        .await
        .unwrap();
    assert_eq!(again.id, ada.id);
    let err = f
        .admin
        .create_user(b.id, name("Ada"), email("ada@example.com"))
        .await
        .unwrap_err();
    assert!(matches!(err, DomainError::Conflict(_)), "{err:?}");

    // A user stored directly with a clashing e-mail is refused by the database.
    let clash = timetrack_domain::model::User {
        id: timetrack_domain::ids::UserId(uuid::Uuid::new_v4()),
        name: "Clash".into(),
        email: "ADA@example.com".into(),
        created_at: ada.created_at,
    };
    let err = f
        .users
        .create_member(&clash, a.id, Role::Member, ada.created_at)
        .await
        .unwrap_err();
    assert!(matches!(err, DomainError::Conflict(_)), "{err:?}");
}

#[tokio::test]
async fn a_user_in_an_unknown_workspace_is_not_found_and_nothing_is_stored() {
    let f = fixture().await;
    let err = f
        .admin
        .create_user(
            WorkspaceId(uuid::Uuid::new_v4()),
            name("Ada"),
            email("ada@example.com"),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, DomainError::NotFound("workspace")), "{err:?}");
    assert_eq!(
        f.users.find_by_email("ada@example.com").await.unwrap(),
        None
    );
}

#[tokio::test]
async fn api_keys_are_found_by_hash_only_while_not_revoked() {
    let f = fixture().await;
    let ws = f.admin.create_workspace(named("A")).await.unwrap();
    let ada = f
        .admin
        .create_user(ws.id, name("Ada"), email("ada@example.com"))
        .await
        .unwrap();
    let (key, secret) = f
        .admin
        .create_api_key(ada.id, ws.id, Some(name("zapier")))
        .await
        .unwrap();

    let found = f
        .keys
        .find_active_by_hash(&secret.hash())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found, (key.clone(), Role::Owner));

    // Only the hash is stored: the key text appears nowhere in the table.
    let pool = f.db.pool();
    let mut conn = pool.get().await.unwrap();
    #[derive(diesel::QueryableByName)]
    struct Hit {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let hits: Vec<Hit> = diesel::sql_query(
        "SELECT count(*) AS n FROM api_keys WHERE position($1 in api_keys::text) > 0",
    )
    .bind::<diesel::sql_types::Text, _>(&secret.expose()[10..])
    .load(&mut conn)
    .await
    .unwrap();
    assert_eq!(hits[0].n, 0);

    let at = datetime!(2026-03-01 12:05 UTC);
    f.keys.record_use(key.id, at).await.unwrap();
    let revoked = f.admin.revoke_api_key(key.id).await.unwrap();
    assert!(revoked.revoked_at.is_some());
    assert_eq!(revoked.last_used_at, Some(at));
    assert_eq!(
        f.keys.find_active_by_hash(&secret.hash()).await.unwrap(),
        None
    );

    // Revoking again changes nothing.
    let again = f.admin.revoke_api_key(key.id).await.unwrap();
    assert_eq!(again.revoked_at, revoked.revoked_at);

    let err = f
        .admin
        .revoke_api_key(ApiKeyId(uuid::Uuid::new_v4()))
        .await
        .unwrap_err();
    assert!(matches!(err, DomainError::NotFound("api key")), "{err:?}");
}

#[tokio::test]
async fn an_api_key_needs_a_membership() {
    let f = fixture().await;
    let a = f.admin.create_workspace(named("A")).await.unwrap();
    let b = f.admin.create_workspace(named("B")).await.unwrap();
    let ada = f
        .admin
        .create_user(a.id, name("Ada"), email("ada@example.com"))
        .await
        .unwrap();
    let err = f
        .admin
        .create_api_key(ada.id, b.id, None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, DomainError::NotFound("membership")),
        "{err:?}"
    );
}

#[tokio::test]
async fn revoking_a_key_disables_its_active_subscriptions_only() {
    let f = fixture().await;
    let ws = f.admin.create_workspace(named("A")).await.unwrap();
    let ada = f
        .admin
        .create_user(ws.id, name("Ada"), email("ada@example.com"))
        .await
        .unwrap();
    let (revoked_key, _) = f.admin.create_api_key(ada.id, ws.id, None).await.unwrap();
    let (kept_key, _) = f.admin.create_api_key(ada.id, ws.id, None).await.unwrap();

    let pool = f.db.pool();
    let mut conn = pool.get().await.unwrap();
    for (id, key) in [
        ("wh_aaaaaaaaaaaaaaaa", revoked_key.id),
        ("wh_bbbbbbbbbbbbbbbb", kept_key.id),
    ] {
        diesel::sql_query(
            "INSERT INTO webhook_subscriptions (id, workspace_id, user_id, api_key_id, url, events, \
             secret, status, created_at, updated_at) VALUES ($1, $2, $3, $4, 'https://example.com/h', \
             ARRAY['CLIENT_CREATED'], 'whsec_x', 'ACTIVE', now(), now())",
        )
        .bind::<diesel::sql_types::Text, _>(id)
        .bind::<diesel::sql_types::Uuid, _>(ws.id.0)
        .bind::<diesel::sql_types::Uuid, _>(ada.id.0)
        .bind::<diesel::sql_types::Uuid, _>(key.0)
        .execute(&mut conn)
        .await
        .unwrap();
    }
    // One event queued for both before the revocation.
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
    f.admin.revoke_api_key(revoked_key.id).await.unwrap();

    #[derive(diesel::QueryableByName, Debug, PartialEq)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        id: String,
        #[diesel(sql_type = diesel::sql_types::Text)]
        status: String,
    }
    let rows: Vec<Row> =
        diesel::sql_query("SELECT id, status FROM webhook_subscriptions ORDER BY id")
            .load(&mut conn)
            .await
            .unwrap();
    assert_eq!(
        rows,
        vec![
            Row {
                id: "wh_aaaaaaaaaaaaaaaa".into(),
                status: "DISABLED".into()
            },
            Row {
                id: "wh_bbbbbbbbbbbbbbbb".into(),
                status: "ACTIVE".into()
            },
        ]
    );
    // What was queued for the revoked key's subscription is cancelled, not left pending.
    let deliveries: Vec<Row> = diesel::sql_query(
        "SELECT subscription_id AS id, status FROM deliveries ORDER BY subscription_id",
    )
    .load(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        deliveries,
        vec![
            Row {
                id: "wh_aaaaaaaaaaaaaaaa".into(),
                status: "CANCELLED".into()
            },
            Row {
                id: "wh_bbbbbbbbbbbbbbbb".into(),
                status: "PENDING".into()
            },
        ]
    );
}
