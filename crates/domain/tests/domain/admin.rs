use timetrack_domain::services::admin::*;
use timetrack_domain::values::{Currency, Name, TimeZoneName};
use timetrack_domain::{DomainError, ids::*, ports::*};
use timetrack_testkit::fakes::TestWorld;
use timetrack_testkit::fakes::run_ready as block_on;
use timetrack_testkit::fakes::{email, name};

#[test]
fn workspace_defaults_to_utc_and_usd() {
    let world = TestWorld::new();
    let ws = block_on(
        world
            .admin
            .create_workspace(NewWorkspace::named(name(" Acme "))),
    )
    .unwrap();
    assert_eq!(ws.name, "Acme");
    assert_eq!(ws.timezone, "UTC");
    assert_eq!(ws.currency, "USD");
    assert_eq!(ws.created_at, world.clock.now());
}

#[test]
fn invalid_workspace_settings_cannot_become_a_new_workspace() {
    // A `NewWorkspace` holds parsed values: the invalid ones stop at parsing, with these messages.
    let refused = [
        Name::parse("name", "").map(|_| ()),
        TimeZoneName::parse("Nowhere/City").map(|_| ()),
        Currency::parse("eur").map(|_| ()),
    ];
    let messages: Vec<String> = refused
        .into_iter()
        .map(|r| r.unwrap_err().to_string())
        .collect();
    assert_eq!(
        messages,
        [
            "name must not be empty",
            "unknown time zone: Nowhere/City",
            "currency must be an ISO 4217 code, got: eur",
        ]
    );
}

#[test]
fn create_user_in_unknown_workspace_is_not_found() {
    let world = TestWorld::new();
    let err = block_on(world.admin.create_user(
        WorkspaceId(uuid::Uuid::nil()),
        name("Ada"),
        email("ada@example.com"),
    ))
    .unwrap_err();
    assert!(matches!(err, DomainError::NotFound("workspace")), "{err:?}");
}

#[test]
fn an_existing_email_joins_the_second_workspace_and_a_repeat_conflicts() {
    let world = TestWorld::new();
    let a = block_on(world.admin.create_workspace(NewWorkspace::named(name("A")))).unwrap();
    let b = block_on(world.admin.create_workspace(NewWorkspace::named(name("B")))).unwrap();
    let ada = block_on(
        world
            .admin
            .create_user(a.id, name("Ada"), email("ada@example.com")),
    )
    .unwrap();
    let again = block_on(
        world
            .admin
            .create_user(b.id, name("Other"), email("ADA@example.com")),
    )
    .unwrap();
    assert_eq!(again, ada);
    let err = block_on(
        world
            .admin
            .create_user(b.id, name("Ada"), email("ada@example.com")),
    )
    .unwrap_err();
    assert!(matches!(err, DomainError::Conflict(_)), "{err:?}");
}

#[test]
fn api_key_needs_a_membership_and_stores_only_the_hash() {
    let world = TestWorld::new();
    let (ws, user) = world.workspace_with_user();
    let other = block_on(
        world
            .admin
            .create_workspace(NewWorkspace::named(name("Other"))),
    )
    .unwrap();
    let err = block_on(world.admin.create_api_key(user.id, other.id, None)).unwrap_err();
    assert!(
        matches!(err, DomainError::NotFound("membership")),
        "{err:?}"
    );

    let (key, secret) = block_on(
        world
            .admin
            .create_api_key(user.id, ws.id, Some(name("zapier"))),
    )
    .unwrap();
    assert_eq!(key.prefix, &secret.expose()[..10]);
    assert_eq!(world.store.stored_hash(key.id), Some(secret.hash()));
}
