use timetrack_domain::services::admin::*;
use timetrack_domain::{DomainError, ids::*, ports::*};
use timetrack_testkit::fakes::TestWorld;
use timetrack_testkit::fakes::run_ready as block_on;

#[test]
fn workspace_defaults_to_utc_and_usd() {
    let world = TestWorld::new();
    let ws = block_on(world.admin.create_workspace(NewWorkspace {
        name: " Acme ".into(),
        ..NewWorkspace::default()
    }))
    .unwrap();
    assert_eq!(ws.name, "Acme");
    assert_eq!(ws.timezone, "UTC");
    assert_eq!(ws.currency, "USD");
    assert_eq!(ws.created_at, world.clock.now());
}

#[test]
fn invalid_workspace_settings_are_refused_and_nothing_is_stored() {
    let world = TestWorld::new();
    for new in [
        NewWorkspace {
            name: "".into(),
            ..NewWorkspace::default()
        },
        NewWorkspace {
            name: "A".into(),
            timezone: Some("Nowhere/City".into()),
            ..NewWorkspace::default()
        },
        NewWorkspace {
            name: "A".into(),
            currency: Some("eur".into()),
            ..NewWorkspace::default()
        },
    ] {
        let err = block_on(world.admin.create_workspace(new)).unwrap_err();
        assert!(matches!(err, DomainError::Validation(_)), "{err:?}");
    }
    assert_eq!(world.store.workspace_count(), 0);
}

#[test]
fn create_user_in_unknown_workspace_is_not_found() {
    let world = TestWorld::new();
    let err = block_on(world.admin.create_user(
        WorkspaceId(uuid::Uuid::nil()),
        "Ada",
        "ada@example.com",
    ))
    .unwrap_err();
    assert!(matches!(err, DomainError::NotFound("workspace")), "{err:?}");
}

#[test]
fn an_existing_email_joins_the_second_workspace_and_a_repeat_conflicts() {
    let world = TestWorld::new();
    let a = block_on(world.admin.create_workspace(NewWorkspace {
        name: "A".into(),
        ..NewWorkspace::default()
    }))
    .unwrap();
    let b = block_on(world.admin.create_workspace(NewWorkspace {
        name: "B".into(),
        ..NewWorkspace::default()
    }))
    .unwrap();
    let ada = block_on(world.admin.create_user(a.id, "Ada", "ada@example.com")).unwrap();
    let again = block_on(world.admin.create_user(b.id, "Other", "ADA@example.com")).unwrap();
    assert_eq!(again, ada);
    let err = block_on(world.admin.create_user(b.id, "Ada", "ada@example.com")).unwrap_err();
    assert!(matches!(err, DomainError::Conflict(_)), "{err:?}");
}

#[test]
fn api_key_needs_a_membership_and_stores_only_the_hash() {
    let world = TestWorld::new();
    let (ws, user) = world.workspace_with_user();
    let other = block_on(world.admin.create_workspace(NewWorkspace {
        name: "Other".into(),
        ..NewWorkspace::default()
    }))
    .unwrap();
    let err = block_on(world.admin.create_api_key(user.id, other.id, None)).unwrap_err();
    assert!(
        matches!(err, DomainError::NotFound("membership")),
        "{err:?}"
    );

    let (key, secret) =
        block_on(world.admin.create_api_key(user.id, ws.id, Some("zapier"))).unwrap();
    assert_eq!(key.prefix, &secret.expose()[..10]);
    assert_eq!(world.store.stored_hash(key.id), Some(secret.hash()));
}
