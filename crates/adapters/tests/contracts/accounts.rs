//! Workspaces, users and API keys.

use super::*;

contract!(workspaces_are_stored_once_per_id);
contract!(users_are_unique_by_email_and_join_existing_workspaces_once);
contract!(api_keys_are_found_by_hash_until_revoked);
contract!(the_first_member_owns_the_workspace_and_it_keeps_an_owner);
contract!(workspace_settings_start_at_their_defaults_and_change_only_over_what_was_read);
contract!(members_are_filtered_by_name_or_email_and_by_when_their_membership_changed);

async fn the_first_member_owns_the_workspace_and_it_keeps_an_owner(s: Subject) {
    let (ws, first) = seeded(&s, 1).await;
    let first_member = s.users.member(ws.id, first.id).await.unwrap().unwrap();
    assert_eq!(
        first_member.role,
        Role::Owner,
        "the first member is the owner"
    );
    let second = user(2, "second@example.com");
    assert_eq!(
        s.users
            .create_member(&second, ws.id, Role::Admin, T0 + Duration::minutes(1))
            .await
            .unwrap(),
        Role::Admin
    );
    let third = user(3, "third@example.com");
    s.users
        .create_member(&third, ws.id, Role::Member, T0 + Duration::minutes(2))
        .await
        .unwrap();

    // Listed the earliest to join first, paged by cursor.
    let page = s
        .users
        .members(
            ws.id,
            &ListFilter::default(),
            PageRequest::new(Some(2), None).unwrap(),
        )
        .await
        .unwrap();
    let roles: Vec<(UserId, Role)> = page.items.iter().map(|m| (m.id, m.role)).collect();
    assert_eq!(
        roles,
        vec![(first.id, Role::Owner), (second.id, Role::Admin)]
    );
    let next = PageRequest::new(Some(2), Some(&page.next.unwrap().encode())).unwrap();
    let rest = s
        .users
        .members(ws.id, &ListFilter::default(), next)
        .await
        .unwrap();
    assert_eq!(rest.items.len(), 1);
    assert_eq!(rest.items[0].id, third.id);
    assert_eq!(rest.items[0].email, "third@example.com");
    assert!(rest.next.is_none());

    // The only owner cannot stop being one; with a second owner, either may.
    assert!(matches!(
        s.users
            .set_role(ws.id, first.id, None, Role::Admin, T0)
            .await,
        Err(DomainError::Conflict(m)) if m == LAST_OWNER
    ));
    assert_eq!(
        s.users.member(ws.id, first.id).await.unwrap().unwrap().role,
        Role::Owner,
        "nothing changed"
    );
    let promoted = s
        .users
        .set_role(
            ws.id,
            second.id,
            None,
            Role::Owner,
            T0 + Duration::minutes(5),
        )
        .await
        .unwrap();
    assert_eq!(promoted.role, Role::Owner);
    let demoted = s
        .users
        .set_role(
            ws.id,
            first.id,
            None,
            Role::Member,
            T0 + Duration::minutes(6),
        )
        .await
        .unwrap();
    assert_eq!((demoted.id, demoted.role), (first.id, Role::Member));
    // A change decided on a role that changed meanwhile is refused and changes nothing.
    assert!(matches!(
        s.users
            .set_role(ws.id, first.id, Some(Role::Owner), Role::Admin, T0)
            .await,
        Err(DomainError::Conflict(m)) if m == ROLE_CHANGED
    ));
    assert_eq!(
        s.users.member(ws.id, first.id).await.unwrap().unwrap().role,
        Role::Member,
        "nothing changed"
    );
    assert!(matches!(
        s.users
            .set_role(ws.id, UserId(id(4242)), None, Role::Admin, T0)
            .await,
        Err(DomainError::NotFound("member"))
    ));

    // A key reads its user's role in its workspace.
    let key = ApiKey {
        id: ApiKeyId(id(7)),
        workspace_id: ws.id,
        user_id: second.id,
        name: None,
        prefix: "tt_abcdefg".into(),
        created_at: T0,
        revoked_at: None,
        last_used_at: None,
        scopes: Scopes::ALL,
        expires_at: None,
    };
    s.keys.create(&key, &KeyHash([3; 32])).await.unwrap();
    let (_, role) = s
        .keys
        .find_active_by_hash(&KeyHash([3; 32]))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(role, Role::Owner);
}

async fn workspace_settings_start_at_their_defaults_and_change_only_over_what_was_read(s: Subject) {
    let ws = workspace(1);
    s.workspaces.create(&ws).await.unwrap();
    let defaults = s.workspaces.settings(ws.id).await.unwrap().unwrap();
    assert_eq!(defaults, WorkspaceSettings::default());
    assert_eq!(
        s.workspaces.settings(WorkspaceId(id(2))).await.unwrap(),
        None
    );

    let before = (ws.clone(), defaults.clone());
    let mut after = before.clone();
    after.0.name = "Renamed".into();
    after.0.timezone = "Europe/Paris".into();
    after.1.members_see_rates = true;
    after.1.members_manage_catalog = false;
    after.1.rounding = timetrack_domain::model::Rounding::new(15, RoundingMode::Up).unwrap();
    after.1.payment_terms_days = 14;
    after.1.lock_before = Some(time::macros::date!(2026 - 01 - 01));
    after.1.invoice_number_pattern =
        timetrack_domain::model::InvoiceNumberPattern::parse("INV-{SEQ:5}").unwrap();
    assert_eq!(
        s.workspaces.update(&before, &after).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.workspaces.get(ws.id).await.unwrap(),
        Some(after.0.clone())
    );
    assert_eq!(
        s.workspaces.settings(ws.id).await.unwrap(),
        Some(after.1.clone())
    );

    // Written over a state that is no longer stored: a race, and nothing is written.
    let mut late = before.clone();
    late.1.payment_terms_days = 60;
    assert_eq!(
        s.workspaces.update(&before, &late).await.unwrap(),
        WriteOutcome::Raced
    );
    assert_eq!(s.workspaces.settings(ws.id).await.unwrap(), Some(after.1));
}

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
        s.users.create_member(&twin, ws.id, Role::Member, T0).await,
        Err(DomainError::Conflict(_))
    ));
    assert_eq!(s.users.get(twin.id).await.unwrap(), None, "nothing stored");
    let lost = user(3, "lost@example.com");
    assert!(matches!(
        s.users
            .create_member(&lost, WorkspaceId(id(99)), Role::Member, T0)
            .await,
        Err(DomainError::NotFound("workspace"))
    ));
    assert_eq!(s.users.get(lost.id).await.unwrap(), None, "nothing stored");

    let other = workspace(5);
    s.workspaces.create(&other).await.unwrap();
    s.users
        .add_membership(member.id, other.id, Role::Member, T0)
        .await
        .unwrap();
    assert!(matches!(
        s.users
            .add_membership(member.id, other.id, Role::Member, T0)
            .await,
        Err(DomainError::Conflict(_))
    ));
    assert!(matches!(
        s.users
            .add_membership(member.id, WorkspaceId(id(99)), Role::Member, T0)
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
        scopes: Scopes::ALL,
        expires_at: None,
    };
    let hash = KeyHash([7; 32]);
    s.keys.create(&key, &hash).await.unwrap();
    assert_eq!(
        s.keys.find_active_by_hash(&hash).await.unwrap(),
        Some((key.clone(), Role::Owner))
    );
    assert_eq!(
        s.keys.find_active_by_hash(&KeyHash([8; 32])).await.unwrap(),
        None
    );
    assert!(s.keys.active_hashes().await.unwrap().contains(&hash));

    let used = T0 + Duration::minutes(3);
    s.keys.record_use(key.id, used).await.unwrap();
    let (found, _) = s.keys.find_active_by_hash(&hash).await.unwrap().unwrap();
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

    // Scopes and an expiry are kept as given; a key is got by id, and listed by workspace (and
    // user), newest first.
    let scoped = ApiKey {
        id: ApiKeyId(id(10)),
        name: Some("assistant".into()),
        created_at: T0 + Duration::minutes(1),
        scopes: Scopes::of([Scope::Read, Scope::TimeWrite]),
        expires_at: Some(T0 + Duration::days(30)),
        last_used_at: None,
        ..key.clone()
    };
    let scoped_hash = KeyHash([10; 32]);
    s.keys.create(&scoped, &scoped_hash).await.unwrap();
    assert_eq!(
        s.keys.find_active_by_hash(&scoped_hash).await.unwrap(),
        Some((scoped.clone(), Role::Owner))
    );
    assert_eq!(s.keys.get(scoped.id).await.unwrap(), Some(scoped.clone()));
    assert_eq!(s.keys.get(ApiKeyId(id(4243))).await.unwrap(), None);
    let listed: Vec<ApiKeyId> = s
        .keys
        .list(ws.id, Some(member.id))
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.id)
        .collect();
    assert_eq!(listed, [scoped.id, key.id]);
    assert_eq!(
        s.keys.list(ws.id, Some(UserId(id(4242)))).await.unwrap(),
        []
    );
    assert_eq!(s.keys.list(WorkspaceId(id(4244)), None).await.unwrap(), []);

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

async fn members_are_filtered_by_name_or_email_and_by_when_their_membership_changed(s: Subject) {
    let (ws, first) = seeded(&s, 1).await;
    let mut second = user(2, "zoe@example.com");
    second.name = "Ærøskøbing Ltd".into();
    s.users
        .create_member(&second, ws.id, Role::Member, T0 + Duration::minutes(1))
        .await
        .unwrap();
    let third = user(3, "grace@example.com");
    s.users
        .create_member(&third, ws.id, Role::Member, T0 + Duration::minutes(2))
        .await
        .unwrap();
    let listed = |q: Option<&'static str>, since: Option<OffsetDateTime>| {
        let s = &s;
        async move {
            let filter = ListFilter {
                q: q.map(str::to_owned),
                updated_since: since,
            };
            s.users
                .members(ws.id, &filter, PageRequest::new(None, None).unwrap())
                .await
                .unwrap()
                .items
                .into_iter()
                .map(|m| m.id)
                .collect::<Vec<_>>()
        }
    };
    // `q` is lowercased by its parser; the store folds the names the same way.
    assert_eq!(listed(Some("ærø"), None).await, vec![second.id]);
    assert_eq!(listed(Some("grace@"), None).await, vec![third.id]);
    assert_eq!(listed(Some("nobody"), None).await, Vec::<UserId>::new());
    assert_eq!(
        listed(None, Some(T0 + Duration::minutes(1))).await,
        vec![second.id, third.id],
        "inclusive"
    );
    let changed = s
        .users
        .set_role(
            ws.id,
            second.id,
            None,
            Role::Admin,
            T0 + Duration::minutes(9),
        )
        .await
        .unwrap();
    assert_eq!(changed.updated_at, T0 + Duration::minutes(9));
    assert_eq!(
        listed(None, Some(T0 + Duration::minutes(9))).await,
        vec![second.id],
        "a role change moves updated_at"
    );
    assert_eq!(
        listed(None, None).await,
        vec![first.id, second.id, third.id]
    );
    let member = s.users.member(ws.id, third.id).await.unwrap().unwrap();
    assert_eq!(member.updated_at, T0 + Duration::minutes(2));
}
