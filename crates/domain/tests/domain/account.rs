use timetrack_domain::model::Role;
use timetrack_domain::services::account::*;
use timetrack_testkit::fakes::{TestWorld, run_ready};

#[test]
fn profile_is_the_keys_user_and_workspace() {
    let world = TestWorld::new();
    let (ws, user) = world.workspace_with_user();
    let (key, _) = run_ready(world.admin.create_api_key(user.id, ws.id, None)).unwrap();
    let service = AccountService::new(world.store.clone(), world.store);
    let profile = run_ready(service.profile(&key.principal(Role::Owner))).unwrap();
    assert_eq!(
        profile,
        Profile {
            user,
            workspace: ws,
            role: Role::Owner,
        }
    );
}
