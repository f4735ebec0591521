use time::Duration;
use timetrack_domain::model::Role;
use timetrack_domain::services::auth::*;
use timetrack_domain::{DomainError, model::*, ports::*};
use timetrack_testkit::fakes::TestWorld;
use timetrack_testkit::fakes::run_ready as block_on;

fn setup(ttl: Duration) -> (TestWorld, Authenticator, String, Principal) {
    let world = TestWorld::new();
    let (ws, user) = world.workspace_with_user();
    let (key, secret) = block_on(world.admin.create_api_key(user.id, ws.id, None)).unwrap();
    let auth = Authenticator::new(world.store.clone(), world.clock.clone(), ttl);
    (
        world,
        auth,
        secret.expose().to_owned(),
        key.principal(Role::Owner),
    )
}

#[test]
fn a_valid_key_yields_its_principal() {
    let (_world, auth, key, principal) = setup(Duration::seconds(5));
    assert_eq!(
        block_on(auth.authenticate(&key, Access::Read)).unwrap(),
        principal
    );
}

#[test]
fn malformed_and_unknown_keys_are_unauthorized() {
    let (_world, auth, key, _) = setup(Duration::seconds(5));
    let mut unknown = key.clone();
    unknown.replace_range(10..11, if &key[10..11] == "a" { "b" } else { "a" });
    for presented in ["", "Bearer x", "tt_short", &key[..45], unknown.as_str()] {
        let err = block_on(auth.authenticate(presented, Access::Read)).unwrap_err();
        assert!(
            matches!(err, DomainError::Unauthorized),
            "{presented}: {err:?}"
        );
    }
}

#[test]
fn a_revoked_key_fails_once_the_cache_entry_expires() {
    let (world, auth, key, principal) = setup(Duration::seconds(5));
    block_on(auth.authenticate(&key, Access::Read)).unwrap();
    block_on(world.admin.revoke_api_key(principal.api_key_id)).unwrap();

    world.clock.advance(Duration::seconds(4));
    assert!(
        block_on(auth.authenticate(&key, Access::Read)).is_ok(),
        "still cached"
    );
    world.clock.advance(Duration::seconds(1));
    let err = block_on(auth.authenticate(&key, Access::Read)).unwrap_err();
    assert!(matches!(err, DomainError::Unauthorized), "{err:?}");
}

#[test]
fn constant_use_does_not_extend_the_cache_entry() {
    let (world, auth, key, principal) = setup(Duration::seconds(5));
    block_on(auth.authenticate(&key, Access::Read)).unwrap();
    block_on(world.admin.revoke_api_key(principal.api_key_id)).unwrap();
    for _ in 0..4 {
        world.clock.advance(Duration::seconds(1));
        assert!(block_on(auth.authenticate(&key, Access::Read)).is_ok());
    }
    world.clock.advance(Duration::seconds(1));
    assert!(block_on(auth.authenticate(&key, Access::Read)).is_err());
}

#[test]
fn without_cache_a_revoked_key_fails_at_once() {
    let (world, auth, key, principal) = setup(Duration::ZERO);
    block_on(auth.authenticate(&key, Access::Read)).unwrap();
    block_on(world.admin.revoke_api_key(principal.api_key_id)).unwrap();
    assert!(block_on(auth.authenticate(&key, Access::Read)).is_err());
}

#[test]
fn ttl_is_clamped_to_thirty_seconds() {
    let (world, auth, key, principal) = setup(Duration::hours(1));
    block_on(auth.authenticate(&key, Access::Read)).unwrap();
    block_on(world.admin.revoke_api_key(principal.api_key_id)).unwrap();
    world.clock.advance(Duration::seconds(30));
    assert!(block_on(auth.authenticate(&key, Access::Read)).is_err());
}

#[test]
fn last_used_is_written_at_most_once_a_minute() {
    let (world, auth, key, principal) = setup(Duration::seconds(5));
    block_on(auth.authenticate(&key, Access::Read)).unwrap();
    let first = world.store.last_used(principal.api_key_id);
    assert_eq!(first, Some(world.clock.now()));
    world.clock.advance(Duration::seconds(59));
    block_on(auth.authenticate(&key, Access::Read)).unwrap();
    assert_eq!(world.store.last_used(principal.api_key_id), first);
    world.clock.advance(Duration::seconds(1));
    block_on(auth.authenticate(&key, Access::Read)).unwrap();
    assert_eq!(
        world.store.last_used(principal.api_key_id),
        Some(world.clock.now())
    );
}

#[test]
fn a_write_asks_storage_and_a_revoked_key_leaves_the_cache() {
    let (world, auth, key, principal) = setup(Duration::seconds(30));
    assert_eq!(
        block_on(auth.authenticate(&key, Access::Write)).unwrap(),
        principal
    );
    block_on(auth.authenticate(&key, Access::Read)).unwrap();
    block_on(world.admin.revoke_api_key(principal.api_key_id)).unwrap();
    assert!(
        block_on(auth.authenticate(&key, Access::Read)).is_ok(),
        "a read trusts the cache"
    );
    let err = block_on(auth.authenticate(&key, Access::Write)).unwrap_err();
    assert!(matches!(err, DomainError::Unauthorized), "{err:?}");
    let err = block_on(auth.authenticate(&key, Access::Read)).unwrap_err();
    assert!(
        matches!(err, DomainError::Unauthorized),
        "the write made the cache forget it: {err:?}"
    );
}
