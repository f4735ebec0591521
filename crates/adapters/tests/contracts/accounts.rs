//! Workspaces, users and API keys.

use super::*;

contract!(workspaces_are_stored_once_per_id);
contract!(users_are_unique_by_email_and_join_existing_workspaces_once);
contract!(api_keys_are_found_by_hash_until_revoked);

async fn workspaces_are_stored_once_per_id(s: Subject) {
    let ws = workspace(1);
    s.workspaces.create(&ws).await.unwrap();
    assert_eq!(s.workspaces.get(ws.id).await.unwrap(), Some(ws.clone()));
    assert!(matches!(
        s.workspaces.create(&ws).await,
        Err(DomainError::Conflict(_))
    ));
    assert_eq!(s.workspaces.get(WorkspaceId(id(2))).await.unwrap(), None);
}

async fn users_are_unique_by_email_and_join_existing_workspaces_once(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    assert_eq!(s.users.get(member.id).await.unwrap(), Some(member.clone()));
    assert_eq!(
        s.users
            .find_by_email(&member.email.to_uppercase())
            .await
            .unwrap(),
        Some(member.clone()),
        "e-mail compared case-insensitively"
    );
    assert_eq!(
        s.users.find_by_email("nobody@example.com").await.unwrap(),
        None
    );

    let twin = user(2, &member.email.to_uppercase());
    assert!(matches!(
        s.users.create_member(&twin, ws.id, T0).await,
        Err(DomainError::Conflict(_))
    ));
    assert_eq!(s.users.get(twin.id).await.unwrap(), None, "nothing stored");
    let lost = user(3, "lost@example.com");
    assert!(matches!(
        s.users.create_member(&lost, WorkspaceId(id(99)), T0).await,
        Err(DomainError::NotFound("workspace"))
    ));
    assert_eq!(s.users.get(lost.id).await.unwrap(), None, "nothing stored");

    let other = workspace(5);
    s.workspaces.create(&other).await.unwrap();
    s.users
        .add_membership(member.id, other.id, T0)
        .await
        .unwrap();
    assert!(matches!(
        s.users.add_membership(member.id, other.id, T0).await,
        Err(DomainError::Conflict(_))
    ));
    assert!(matches!(
        s.users
            .add_membership(member.id, WorkspaceId(id(99)), T0)
            .await,
        Err(DomainError::NotFound("workspace"))
    ));
}

async fn api_keys_are_found_by_hash_until_revoked(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let key = ApiKey {
        id: ApiKeyId(id(7)),
        workspace_id: ws.id,
        user_id: member.id,
        name: Some("zapier".into()),
        prefix: "tt_abcdefg".into(),
        created_at: T0,
        revoked_at: None,
        last_used_at: None,
    };
    let hash = KeyHash([7; 32]);
    s.keys.create(&key, &hash).await.unwrap();
    assert_eq!(
        s.keys.find_active_by_hash(&hash).await.unwrap(),
        Some(key.clone())
    );
    assert_eq!(
        s.keys.find_active_by_hash(&KeyHash([8; 32])).await.unwrap(),
        None
    );
    assert!(s.keys.active_hashes().await.unwrap().contains(&hash));

    let used = T0 + Duration::minutes(3);
    s.keys.record_use(key.id, used).await.unwrap();
    let found = s.keys.find_active_by_hash(&hash).await.unwrap().unwrap();
    assert_eq!(found.last_used_at, Some(used));

    let stranger = ApiKey {
        id: ApiKeyId(id(8)),
        user_id: UserId(id(4242)),
        ..key.clone()
    };
    assert!(matches!(
        s.keys.create(&stranger, &KeyHash([9; 32])).await,
        Err(DomainError::NotFound("membership"))
    ));

    let revoked_at = T0 + Duration::hours(1);
    let revoked = s.keys.revoke(key.id, revoked_at).await.unwrap();
    assert_eq!(revoked.revoked_at, Some(revoked_at));
    assert_eq!(s.keys.find_active_by_hash(&hash).await.unwrap(), None);
    assert!(!s.keys.active_hashes().await.unwrap().contains(&hash));
    // Revoking again changes nothing.
    let again = s
        .keys
        .revoke(key.id, revoked_at + Duration::hours(1))
        .await
        .unwrap();
    assert_eq!(again.revoked_at, Some(revoked_at));
    assert!(matches!(
        s.keys.revoke(ApiKeyId(id(9)), revoked_at).await,
        Err(DomainError::NotFound("api key"))
    ));
}
