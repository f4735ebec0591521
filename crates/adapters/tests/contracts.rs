//! Port contracts, written once and run against both implementations of each port: the
//! in-memory fake of `timetrack_testkit::fakes` (which the domain's service tests rely on) and
//! the PostgreSQL adapter (real database). A fake that drifts from the adapter's behaviour fails
//! here, not in a service test that trusted it.

use std::sync::Arc;

use time::macros::datetime;
use time::{Duration, OffsetDateTime};
use timetrack_adapters::SecretBox;
use timetrack_adapters::postgres::{
    DeliveryAnnouncer, PgApiKeyRepository, PgCatalogRepository, PgClientRepository,
    PgSubscriptionRepository, PgUserRepository, PgWorkspaceRepository,
};
use timetrack_domain::DomainError;
use timetrack_domain::ids::{ApiKeyId, ClientId, ProjectId, TagId, TaskId, UserId, WorkspaceId};
use timetrack_domain::model::{
    ApiKey, AuditEntry, Client, ClientStatus, ClientType, EventType, KeyHash, PageRequest, Project,
    Subscription, SubscriptionStatus, Tag, Task, User, WebhookId, Workspace,
};
use timetrack_domain::ports::{
    ApiKeyRepository, CatalogRepository, ClientRepository, SubscriptionRepository, UserRepository,
    WorkspaceRepository,
};
use timetrack_testkit::TestDatabase;
use timetrack_testkit::fakes::InMemoryStore;
use uuid::Uuid;

/// One implementation of the ports under test, with what keeps it alive.
struct Subject {
    workspaces: Arc<dyn WorkspaceRepository>,
    users: Arc<dyn UserRepository>,
    keys: Arc<dyn ApiKeyRepository>,
    clients: Arc<dyn ClientRepository>,
    catalog: Arc<dyn CatalogRepository>,
    subscriptions: Arc<dyn SubscriptionRepository>,
    _db: Option<TestDatabase>,
}

fn fake() -> Subject {
    let store = Arc::new(InMemoryStore::default());
    Subject {
        workspaces: store.clone(),
        users: store.clone(),
        keys: store.clone(),
        clients: store.clone(),
        catalog: store.clone(),
        subscriptions: store,
        _db: None,
    }
}

async fn postgres() -> Subject {
    let db = TestDatabase::new().await;
    let pool = db.pool();
    Subject {
        workspaces: Arc::new(PgWorkspaceRepository::new(pool.clone())),
        users: Arc::new(PgUserRepository::new(pool.clone())),
        keys: Arc::new(PgApiKeyRepository::new(pool.clone())),
        clients: Arc::new(PgClientRepository::new(
            pool.clone(),
            DeliveryAnnouncer::new(),
        )),
        catalog: Arc::new(PgCatalogRepository::new(pool.clone())),
        subscriptions: Arc::new(PgSubscriptionRepository::new(pool, SecretBox::ephemeral())),
        _db: Some(db),
    }
}

/// Two tests per contract: the fake and the PostgreSQL adapter.
macro_rules! contract {
    ($name:ident) => {
        mod $name {
            #[tokio::test]
            async fn in_memory_fake() {
                super::$name(super::fake()).await;
            }

            #[tokio::test]
            async fn postgres_adapter() {
                super::$name(super::postgres().await).await;
            }
        }
    };
}

contract!(workspaces_are_stored_once_per_id);
contract!(users_are_unique_by_email_and_join_existing_workspaces_once);
contract!(api_keys_are_found_by_hash_until_revoked);
contract!(clients_are_unique_by_name_per_workspace_and_listed_newest_first);
contract!(client_search_is_a_literal_substring_of_the_lowercased_name);
contract!(client_updates_and_deletes_name_what_is_missing);
contract!(projects_tasks_and_tags_stay_in_their_workspace);
contract!(subscriptions_are_capped_refused_for_revoked_keys_and_deleted_softly);

const T0: OffsetDateTime = datetime!(2026-01-05 09:00 UTC);

fn id(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

fn workspace(n: u128) -> Workspace {
    Workspace {
        id: WorkspaceId(id(n)),
        name: format!("Workspace {n}"),
        timezone: "UTC".into(),
        currency: "USD".into(),
        created_at: T0,
    }
}

fn user(n: u128, email: &str) -> User {
    User {
        id: UserId(id(n)),
        name: format!("User {n}"),
        email: email.into(),
        created_at: T0,
    }
}

fn client(n: u128, ws: &Workspace, name: &str, minutes: i64) -> Client {
    let at = T0 + Duration::minutes(minutes);
    Client {
        id: ClientId(id(n)),
        workspace_id: ws.id,
        name: name.into(),
        client_type: ClientType::Company,
        status: ClientStatus::Active,
        email: None,
        phone: None,
        address: None,
        note: None,
        currency: "USD".into(),
        created_at: at,
        updated_at: at,
    }
}

fn names(clients: &[Client]) -> Vec<&str> {
    clients.iter().map(|c| c.name.as_str()).collect()
}

/// A workspace with one member, stored through the ports.
async fn seeded(s: &Subject, n: u128) -> (Workspace, User) {
    let ws = workspace(n);
    s.workspaces.create(&ws).await.unwrap();
    let member = user(n + 1000, &format!("member{n}@example.com"));
    s.users.create_member(&member, ws.id, T0).await.unwrap();
    (ws, member)
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

async fn clients_are_unique_by_name_per_workspace_and_listed_newest_first(s: Subject) {
    let (ws, _) = seeded(&s, 1).await;
    let (other, _) = seeded(&s, 2).await;
    let acme = client(10, &ws, "Acme", 0);
    s.clients.create(&acme, &[]).await.unwrap();
    assert_eq!(
        s.clients.get(ws.id, acme.id).await.unwrap(),
        Some(acme.clone())
    );
    assert_eq!(
        s.clients.get(other.id, acme.id).await.unwrap(),
        None,
        "another workspace's client is not found"
    );

    match s.clients.create(&client(11, &ws, "ACME", 1), &[]).await {
        Err(DomainError::AlreadyExists { what, id }) => {
            assert_eq!((what, id), ("client", acme.id.to_string()));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.clients.get(ws.id, ClientId(id(11))).await.unwrap(), None);
    // The same name in another workspace is another client.
    s.clients
        .create(&client(12, &other, "Acme", 1), &[])
        .await
        .unwrap();

    for (n, name) in [(13, "Beta"), (14, "Gamma"), (15, "Delta")] {
        let minutes = i64::try_from(n).unwrap();
        s.clients
            .create(&client(n, &ws, name, minutes), &[])
            .await
            .unwrap();
    }
    let first = s
        .clients
        .list(ws.id, PageRequest::new(Some(3), None).unwrap())
        .await
        .unwrap();
    assert_eq!(names(&first.items), ["Delta", "Gamma", "Beta"]);
    let cursor = first.next.expect("a next page").encode();
    let second = s
        .clients
        .list(ws.id, PageRequest::new(Some(3), Some(&cursor)).unwrap())
        .await
        .unwrap();
    assert_eq!(names(&second.items), ["Acme"]);
    assert!(second.next.is_none());
    assert_eq!(
        s.clients.newest(ws.id).await.unwrap().map(|c| c.name),
        Some("Delta".to_owned())
    );
    assert_eq!(s.clients.newest(WorkspaceId(id(77))).await.unwrap(), None);
}

async fn client_search_is_a_literal_substring_of_the_lowercased_name(s: Subject) {
    let (ws, _) = seeded(&s, 1).await;
    let (other, _) = seeded(&s, 2).await;
    for (n, name) in [
        (10, "Acme Logistics"),
        (11, "Logistics 100%"),
        (12, "Blue_Sky"),
        (13, "BlueXSky"),
        (14, "Zeta"),
    ] {
        let minutes = i64::try_from(n).unwrap();
        s.clients
            .create(&client(n, &ws, name, minutes), &[])
            .await
            .unwrap();
    }
    s.clients
        .create(&client(20, &other, "Other Logistics", 30), &[])
        .await
        .unwrap();
    let search = |needle: &'static str, limit: u32| {
        let clients = s.clients.clone();
        async move {
            let found = clients.search(ws.id, needle, limit).await.unwrap();
            found.into_iter().map(|c| c.name).collect::<Vec<_>>()
        }
    };
    assert_eq!(
        search("logistics", 10).await,
        ["Logistics 100%", "Acme Logistics"],
        "newest first, this workspace only"
    );
    assert_eq!(search("logistics", 1).await, ["Logistics 100%"]);
    assert_eq!(search("%", 10).await, ["Logistics 100%"], "% is literal");
    assert_eq!(search("e_s", 10).await, ["Blue_Sky"], "_ is literal");
    assert_eq!(search("ze", 10).await, ["Zeta"], "a short needle");
    assert!(search("nothing", 10).await.is_empty());
}

async fn client_updates_and_deletes_name_what_is_missing(s: Subject) {
    let (ws, _) = seeded(&s, 1).await;
    let acme = client(10, &ws, "Acme", 0);
    let beta = client(11, &ws, "Beta", 1);
    s.clients.create(&acme, &[]).await.unwrap();
    s.clients.create(&beta, &[]).await.unwrap();

    let renamed = Client {
        name: "Acme Corporation".into(),
        note: Some("renamed".into()),
        updated_at: T0 + Duration::hours(1),
        ..acme.clone()
    };
    s.clients.update(&renamed).await.unwrap();
    assert_eq!(s.clients.get(ws.id, acme.id).await.unwrap(), Some(renamed));

    match s
        .clients
        .update(&Client {
            name: "beta".into(),
            ..acme.clone()
        })
        .await
    {
        Err(DomainError::AlreadyExists { what, id }) => {
            assert_eq!((what, id), ("client", beta.id.to_string()));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        s.clients.update(&client(99, &ws, "Ghost", 2)).await,
        Err(DomainError::NotFound("client"))
    ));

    s.clients.delete(ws.id, beta.id).await.unwrap();
    assert_eq!(s.clients.get(ws.id, beta.id).await.unwrap(), None);
    assert!(matches!(
        s.clients.delete(ws.id, beta.id).await,
        Err(DomainError::NotFound("client"))
    ));
    let (other, _) = seeded(&s, 2).await;
    assert!(matches!(
        s.clients.delete(other.id, acme.id).await,
        Err(DomainError::NotFound("client"))
    ));
}

async fn projects_tasks_and_tags_stay_in_their_workspace(s: Subject) {
    let (ws, _) = seeded(&s, 1).await;
    let (other, _) = seeded(&s, 2).await;
    let acme = client(10, &ws, "Acme", 0);
    let foreign = client(11, &other, "Foreign", 0);
    s.clients.create(&acme, &[]).await.unwrap();
    s.clients.create(&foreign, &[]).await.unwrap();
    let project = |n: u128, client: Option<ClientId>, minutes: i64| Project {
        id: ProjectId(id(n)),
        workspace_id: ws.id,
        client_id: client,
        name: format!("Project {n}"),
        created_at: T0 + Duration::minutes(minutes),
        updated_at: T0 + Duration::minutes(minutes),
    };

    let website = project(20, Some(acme.id), 1);
    s.catalog.create_project(&website).await.unwrap();
    s.catalog
        .create_project(&project(21, None, 2))
        .await
        .unwrap();
    match s
        .catalog
        .create_project(&project(22, Some(foreign.id), 3))
        .await
    {
        Err(DomainError::Validation(message)) => assert_eq!(
            message,
            "client_id does not name a client of this workspace"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        s.catalog.project(ws.id, website.id).await.unwrap(),
        Some(website.clone())
    );
    assert_eq!(s.catalog.project(other.id, website.id).await.unwrap(), None);
    let listed = s
        .catalog
        .projects(ws.id, PageRequest::new(None, None).unwrap())
        .await
        .unwrap();
    let listed: Vec<ProjectId> = listed.items.iter().map(|p| p.id).collect();
    assert_eq!(listed, [ProjectId(id(21)), website.id], "newest first");
    // A client a project refers to cannot be deleted.
    match s.clients.delete(ws.id, acme.id).await {
        Err(DomainError::Conflict(message)) => assert_eq!(message, "Client is used by projects"),
        other => panic!("{other:?}"),
    }
    assert!(s.clients.get(ws.id, acme.id).await.unwrap().is_some());

    let task = Task {
        id: TaskId(id(30)),
        workspace_id: ws.id,
        project_id: website.id,
        name: "Design".into(),
        created_at: T0,
        updated_at: T0,
    };
    s.catalog.create_task(&task).await.unwrap();
    assert_eq!(
        s.catalog.task(ws.id, task.id).await.unwrap(),
        Some(task.clone())
    );
    assert_eq!(s.catalog.task(other.id, task.id).await.unwrap(), None);

    let tag = |n: u128, workspace: &Workspace, name: &str| Tag {
        id: TagId(id(n)),
        workspace_id: workspace.id,
        name: name.into(),
        created_at: T0 + Duration::minutes(i64::try_from(n).unwrap()),
    };
    let urgent = tag(40, &ws, "Urgent");
    let later = tag(41, &ws, "Later");
    let theirs = tag(42, &other, "Theirs");
    for t in [&urgent, &later, &theirs] {
        s.catalog.create_tag(t).await.unwrap();
    }
    match s.catalog.create_tag(&tag(43, &ws, "URGENT")).await {
        Err(DomainError::AlreadyExists { what, id }) => {
            assert_eq!((what, id), ("tag", urgent.id.to_string()));
        }
        other => panic!("{other:?}"),
    }
    // Same name in another workspace: another tag.
    s.catalog
        .create_tag(&tag(44, &other, "Urgent"))
        .await
        .unwrap();
    let found = s
        .catalog
        .tags_by_id(ws.id, &[later.id, theirs.id, TagId(id(99)), urgent.id])
        .await
        .unwrap();
    assert_eq!(
        found,
        [later.clone(), urgent.clone()],
        "in ids order, foreign left out"
    );
    let page = s
        .catalog
        .tags(ws.id, PageRequest::new(None, None).unwrap())
        .await
        .unwrap();
    assert_eq!(page.items, [later, urgent], "newest first");
}

/// An API key of `member` in `ws`, stored.
async fn stored_key(s: &Subject, n: u128, ws: &Workspace, member: &User) -> ApiKey {
    let key = ApiKey {
        id: ApiKeyId(id(n)),
        workspace_id: ws.id,
        user_id: member.id,
        name: None,
        prefix: "tt_abcdefg".into(),
        created_at: T0,
        revoked_at: None,
        last_used_at: None,
    };
    let byte = u8::try_from(n % 251).unwrap();
    s.keys.create(&key, &KeyHash([byte; 32])).await.unwrap();
    key
}

fn subscription(n: usize, key: &ApiKey, minutes: i64) -> Subscription {
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
        created_at: at,
        updated_at: at,
    }
}

fn ids(subscriptions: &[Subscription]) -> Vec<String> {
    subscriptions.iter().map(|s| s.id.to_string()).collect()
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
        ids(&s.subscriptions.list(ws.id).await.unwrap()),
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
        workspace_id: Some(ws.id),
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
        ids(&s.subscriptions.list(ws.id).await.unwrap()),
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

/// The rate-limit stores: the in-process one and the one PostgreSQL shares between instances
/// decide the same sequence of requests the same way.
mod rate_limits {
    use std::sync::Arc;

    use time::Duration;
    use timetrack_adapters::{InMemoryRateLimitStore, PgRateLimitStore};
    use timetrack_domain::ports::RateLimitStore;
    use timetrack_domain::ratelimit::RatePolicy;
    use timetrack_testkit::TestDatabase;

    use super::T0;

    const POLICY: RatePolicy = RatePolicy {
        per_minute: 5,
        per_second: 2,
    };

    /// Each step: milliseconds after T0, key, counted (or only peeked), then the expected
    /// `allowed` and `remaining`.
    async fn decisions(store: Arc<dyn RateLimitStore>) {
        let steps: [(i64, &str, bool, bool, u32); 11] = [
            // A peek is decided like a hit (`remaining` as if admitted) and never counted.
            (0, "a", false, true, 4),
            (0, "a", false, true, 4),
            (0, "a", true, true, 4),
            (100, "a", true, true, 3),
            // Two per rolling second.
            (200, "a", true, false, 3),
            (200, "a", false, false, 3),
            // Another key has its own windows.
            (300, "b", true, true, 4),
            (1_200, "a", true, true, 2),
            (1_300, "a", true, true, 1),
            (2_500, "a", true, true, 0),
            // Five per rolling minute.
            (3_600, "a", true, false, 0),
        ];
        for (ms, key, count, allowed, remaining) in steps {
            let at = T0 + Duration::milliseconds(ms);
            let decision = if count {
                store.hit(key, at, POLICY).await.unwrap()
            } else {
                store.peek(key, at, POLICY).await.unwrap()
            };
            assert_eq!(
                (decision.allowed, decision.remaining),
                (allowed, remaining),
                "{ms} ms, {key}, counted {count}: {decision:?}"
            );
            assert_eq!(decision.limit, 5);
            assert_eq!(
                decision.retry_after_secs.is_some(),
                !allowed,
                "{decision:?}"
            );
        }
        // A minute after the first counted request, its slot is free again.
        let later = store
            .hit("a", T0 + Duration::milliseconds(60_001), POLICY)
            .await
            .unwrap();
        assert!(later.allowed, "{later:?}");
    }

    #[tokio::test]
    async fn in_process_store() {
        decisions(Arc::new(InMemoryRateLimitStore::default())).await;
    }

    #[tokio::test]
    async fn postgres_store() {
        let db = TestDatabase::new().await;
        decisions(Arc::new(PgRateLimitStore::new(db.pool()))).await;
    }
}
