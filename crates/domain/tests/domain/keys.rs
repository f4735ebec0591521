//! Keys made by their owners (`KeyService`) and what their scopes and expiry do.

use std::sync::Arc;

use time::Duration;
use timetrack_domain::model::{Principal, Role, Scope, Scopes};
use timetrack_domain::ports::{ApiKeyRepository, Clock};
use timetrack_domain::services::auth::{Access, Authenticator};
use timetrack_domain::services::{KeyService, NewKey};
use timetrack_domain::{DomainError, DomainResult};
use timetrack_testkit::fakes::{SeededRandom, TestWorld, email, name, run_ready};

fn service(world: &TestWorld) -> KeyService {
    KeyService::new(
        world.store.clone(),
        world.clock.clone(),
        world.ids.clone(),
        Arc::new(SeededRandom::new(7)),
    )
}

/// A world with an owner whose key holds every scope.
fn setup() -> (TestWorld, KeyService, Principal) {
    let world = TestWorld::new();
    let (ws, user) = world.workspace_with_user();
    let (key, _) = run_ready(world.admin.create_api_key(user.id, ws.id, None)).unwrap();
    let keys = service(&world);
    (world, keys, key.principal(Role::Owner))
}

fn new_key(scopes: Option<&[&str]>) -> NewKey {
    NewKey {
        name: "Assistant".into(),
        scopes: scopes.map(|s| s.iter().map(|n| (*n).to_owned()).collect()),
        expires_at: None,
    }
}

fn invalid_detail<T: std::fmt::Debug>(result: DomainResult<T>) -> String {
    match result {
        Err(DomainError::Invalid { detail, .. }) => detail,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn a_key_holds_the_scopes_named_or_all_and_the_principal_carries_them() {
    let (world, keys, owner) = setup();
    let (key, secret) =
        run_ready(keys.create(&owner, new_key(Some(&["time:write", "read", "read"])))).unwrap();
    assert_eq!(key.scopes, Scopes::of([Scope::Read, Scope::TimeWrite]));
    assert_eq!(key.name.as_deref(), Some("Assistant"));
    assert_eq!(key.user_id, owner.user_id);
    let (all, _) = run_ready(keys.create(&owner, new_key(None))).unwrap();
    assert_eq!(all.scopes, Scopes::ALL);

    let auth = Authenticator::new(world.store.clone(), world.clock, Duration::ZERO);
    let principal = run_ready(auth.authenticate(secret.expose(), Access::Read)).unwrap();
    assert!(principal.require(Scope::TimeWrite).is_ok());
    assert!(matches!(
        principal.require(Scope::Webhooks),
        Err(DomainError::LacksScope("webhooks"))
    ));
}

#[test]
fn a_key_never_makes_a_stronger_one() {
    let (_world, keys, owner) = setup();
    let admin_only = Principal {
        scopes: Scopes::of([Scope::Admin]),
        ..owner
    };
    assert!(matches!(
        run_ready(keys.create(&admin_only, new_key(Some(&["admin", "billing:write"])))),
        Err(DomainError::LacksScope("billing:write"))
    ));
    // Without scopes means all six: more than this key holds.
    assert!(matches!(
        run_ready(keys.create(&admin_only, new_key(None))),
        Err(DomainError::LacksScope("read"))
    ));
    run_ready(keys.create(&admin_only, new_key(Some(&["admin"])))).unwrap();
}

#[test]
fn bad_names_scopes_and_expiries_are_refused_before_anything_is_stored() {
    let (world, keys, owner) = setup();
    let detail = invalid_detail(run_ready(
        keys.create(&owner, new_key(Some(&["everything"]))),
    ));
    assert!(
        detail.contains("\"everything\"") && detail.contains("time:write"),
        "{detail}"
    );
    let detail = invalid_detail(run_ready(keys.create(&owner, new_key(Some(&[])))));
    assert!(detail.contains("at least one"), "{detail}");
    let past = NewKey {
        expires_at: Some(world.clock.now() - Duration::seconds(1)),
        ..new_key(None)
    };
    assert!(invalid_detail(run_ready(keys.create(&owner, past))).contains("future"));
    let unnamed = NewKey {
        name: "   ".into(),
        ..new_key(None)
    };
    assert!(matches!(
        run_ready(keys.create(&owner, unnamed)),
        Err(DomainError::Validation(_))
    ));
    assert_eq!(
        run_ready(keys.list(&owner)).unwrap().len(),
        1,
        "only the CLI's key"
    );
}

#[test]
fn an_expired_key_is_refused_even_from_the_cache() {
    let (world, keys, owner) = setup();
    let new = NewKey {
        expires_at: Some(world.clock.now() + Duration::minutes(10)),
        ..new_key(None)
    };
    let (_, secret) = run_ready(keys.create(&owner, new)).unwrap();
    let auth = Authenticator::new(
        world.store.clone(),
        world.clock.clone(),
        Duration::seconds(30),
    );
    run_ready(auth.authenticate(secret.expose(), Access::Read)).unwrap();
    world
        .clock
        .advance(Duration::minutes(10) - Duration::seconds(1));
    run_ready(auth.authenticate(secret.expose(), Access::Read)).unwrap();
    world.clock.advance(Duration::seconds(1));
    for access in [Access::Read, Access::Write] {
        assert!(matches!(
            run_ready(auth.authenticate(secret.expose(), access)),
            Err(DomainError::Unauthorized)
        ));
    }
}

#[test]
fn members_see_and_revoke_their_own_keys_and_admins_every_one() {
    let (world, keys, owner) = setup();
    let (member, _) = run_ready(world.admin.create_user_as(
        owner.workspace_id,
        name("Mia"),
        email("mia@example.com"),
        Role::Member,
    ))
    .unwrap();
    let (member_key, _) = run_ready(world.admin.create_api_key(
        member.id,
        owner.workspace_id,
        None,
    ))
    .unwrap();
    let mia = member_key.principal(Role::Member);
    let (hers, _) = run_ready(keys.create(&mia, new_key(Some(&["read"])))).unwrap();
    let (owners, _) = run_ready(keys.create(&owner, new_key(None))).unwrap();

    let listed: Vec<_> = run_ready(keys.list(&mia))
        .unwrap()
        .iter()
        .map(|k| k.id)
        .collect();
    assert_eq!(listed, [hers.id, member_key.id], "her own, newest first");
    assert_eq!(
        run_ready(keys.list(&owner)).unwrap().len(),
        4,
        "the workspace's"
    );

    assert!(matches!(
        run_ready(keys.revoke(&mia, owners.id)),
        Err(DomainError::NotFound("api key"))
    ));
    let kept = run_ready(ApiKeyRepository::get(&*world.store, owners.id)).unwrap();
    assert_eq!(kept.map(|k| k.revoked_at), Some(None), "left alone");
    let revoked = run_ready(keys.revoke(&owner, hers.id)).unwrap();
    let at = revoked.revoked_at.expect("revoked");
    world.clock.advance(Duration::minutes(1));
    assert_eq!(
        run_ready(keys.revoke(&mia, hers.id)).unwrap().revoked_at,
        Some(at),
        "revoking again changes nothing"
    );
}
