//! Port contracts, written once and run against both implementations of each port: the
//! in-memory fake of `timetrack_testkit::fakes` (which the domain's service tests rely on) and
//! the PostgreSQL adapter (real database). A fake that drifts from the adapter's behaviour fails
//! here, not in a service test that trusted it.

use std::sync::Arc;

use time::macros::datetime;
use time::{Duration, OffsetDateTime};
use timetrack_adapters::postgres::{
    DeliveryAnnouncer, PgApiKeyRepository, PgCatalogRepository, PgClientRepository, PgDeliveryLog,
    PgSubscriptionRepository, PgTimeEntryRepository, PgUserRepository, PgWorkspaceRepository,
};
use timetrack_adapters::{PgPool, SecretBox};
use timetrack_domain::DomainError;
use timetrack_domain::ids::{
    ApiKeyId, ClientId, EventId, ProjectId, TagId, TaskId, TimeEntryId, UserId, WorkspaceId,
};
use timetrack_domain::model::{
    ApiKey, AuditEntry, Client, ClientStatus, ClientType, Cursor, EntrySource, Event, EventSubject,
    EventType, KeyHash, Page, PageRequest, Project, Subscription, SubscriptionChange,
    SubscriptionFilters, SubscriptionStatus, Tag, Task, TimeEntry, User, WebhookId, Workspace,
};
use timetrack_domain::model::{
    DeliveryId, DeliveryKind, DeliveryQuery, DeliveryStatus, ReplayOutcome, ReplayWindow,
};
use timetrack_domain::ports::{
    ApiKeyRepository, CatalogRepository, ClientRepository, DeliveryLog, EntryFilter,
    SubscriptionRepository, TimeEntryRepository, TimerStop, UserRepository, WorkspaceRepository,
    WriteOutcome,
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
    log: Arc<dyn DeliveryLog>,
    entries: Arc<dyn TimeEntryRepository>,
    outbox: Outbox,
    _db: Option<TestDatabase>,
}

/// Where an implementation keeps the events its writes record, read back to check that they were
/// recorded with the change (and not without it).
enum Outbox {
    Fake(Arc<InMemoryStore>),
    Postgres(PgPool),
}

impl Outbox {
    /// Every recorded event, by id.
    async fn events(&self) -> Vec<Event> {
        let mut events = match self {
            Self::Fake(store) => store.events(),
            Self::Postgres(pool) => stored_events(pool).await,
        };
        events.sort_by_key(|e| e.id);
        events
    }
}

async fn stored_events(pool: &PgPool) -> Vec<Event> {
    use diesel::sql_types::{Nullable, Text, Timestamptz};
    use diesel_async::RunQueryDsl;

    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Uuid)]
        id: Uuid,
        #[diesel(sql_type = diesel::sql_types::Uuid)]
        workspace_id: Uuid,
        #[diesel(sql_type = Text)]
        event_type: String,
        #[diesel(sql_type = Text)]
        body: String,
        #[diesel(sql_type = Timestamptz)]
        created_at: OffsetDateTime,
        #[diesel(sql_type = Nullable<diesel::sql_types::Uuid>)]
        project_id: Option<Uuid>,
        #[diesel(sql_type = Nullable<diesel::sql_types::Uuid>)]
        client_id: Option<Uuid>,
        #[diesel(sql_type = Nullable<diesel::sql_types::Uuid>)]
        user_id: Option<Uuid>,
        #[diesel(sql_type = Nullable<diesel::sql_types::Bool>)]
        billable: Option<bool>,
        #[diesel(sql_type = Nullable<Text>)]
        ordering_key: Option<String>,
    }
    let mut conn = pool.get().await.unwrap();
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT id, workspace_id, event_type, body, created_at, project_id, client_id, user_id, \
         billable, ordering_key FROM events",
    )
    .load(&mut conn)
    .await
    .unwrap();
    rows.into_iter()
        .map(|row| Event {
            id: EventId(row.id),
            workspace_id: WorkspaceId(row.workspace_id),
            event_type: EventType::parse(&row.event_type).unwrap(),
            body: row.body,
            created_at: row.created_at,
            subject: EventSubject {
                project_id: row.project_id.map(ProjectId),
                client_id: row.client_id.map(ClientId),
                user_id: row.user_id.map(UserId),
                billable: row.billable,
            },
            ordering_key: row.ordering_key.unwrap_or_default(),
        })
        .collect()
}

fn fake() -> Subject {
    let store = Arc::new(InMemoryStore::default());
    Subject {
        workspaces: store.clone(),
        users: store.clone(),
        keys: store.clone(),
        clients: store.clone(),
        catalog: store.clone(),
        subscriptions: store.clone(),
        log: store.clone(),
        entries: store.clone(),
        outbox: Outbox::Fake(store),
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
        catalog: Arc::new(PgCatalogRepository::new(
            pool.clone(),
            DeliveryAnnouncer::new(),
        )),
        subscriptions: Arc::new(PgSubscriptionRepository::new(
            pool.clone(),
            SecretBox::ephemeral(),
        )),
        log: Arc::new(PgDeliveryLog::new(pool.clone(), DeliveryAnnouncer::new())),
        entries: Arc::new(PgTimeEntryRepository::new(
            pool.clone(),
            DeliveryAnnouncer::new(),
        )),
        outbox: Outbox::Postgres(pool),
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
contract!(projects_are_changed_and_deleted_with_their_events_unless_in_use);
contract!(subscriptions_are_capped_refused_for_revoked_keys_and_deleted_softly);
contract!(subscriptions_are_listed_per_member_and_changed_unless_deleted);
contract!(the_delivery_log_pages_tests_resends_and_replays_alike);
contract!(timers_run_one_per_user_and_stop_only_while_running);
contract!(entry_writes_refuse_references_outside_the_workspace_and_write_nothing);
contract!(entries_are_read_replaced_and_deleted_only_in_their_workspace);
contract!(entries_are_listed_latest_start_first_filtered_and_paged);
contract!(latest_manual_stopped_and_started_entries_are_per_workspace);

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
    let updated = event(40, ws.id, EventType::ClientUpdated, 60);
    assert_eq!(
        s.clients
            .update(&acme, &renamed, std::slice::from_ref(&updated))
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.clients.get(ws.id, acme.id).await.unwrap(),
        Some(renamed.clone())
    );
    assert_eq!(s.outbox.events().await, std::slice::from_ref(&updated));

    match s
        .clients
        .update(
            &renamed,
            &Client {
                name: "beta".into(),
                ..renamed.clone()
            },
            &[],
        )
        .await
    {
        Err(DomainError::AlreadyExists { what, id }) => {
            assert_eq!((what, id), ("client", beta.id.to_string()));
        }
        other => panic!("{other:?}"),
    }
    // A client changed since it was read, a missing one and another workspace's are not written,
    // nor are their events.
    let ghost = client(99, &ws, "Ghost", 2);
    for (before, after) in [
        (
            &acme,
            &Client {
                name: "Stale".into(),
                ..acme.clone()
            },
        ),
        (&ghost, &ghost),
        (
            &Client {
                workspace_id: WorkspaceId(id(2)),
                ..renamed.clone()
            },
            &Client {
                workspace_id: WorkspaceId(id(2)),
                name: "Moved".into(),
                ..renamed.clone()
            },
        ),
    ] {
        let stray = event(41, ws.id, EventType::ClientUpdated, 61);
        assert_eq!(
            s.clients.update(before, after, &[stray]).await.unwrap(),
            WriteOutcome::Raced,
            "{after:?}"
        );
    }
    assert_eq!(
        s.clients.get(ws.id, acme.id).await.unwrap(),
        Some(renamed.clone())
    );
    assert_eq!(s.outbox.events().await, std::slice::from_ref(&updated));

    let deleted = event(42, ws.id, EventType::ClientDeleted, 62);
    assert_eq!(
        s.clients
            .delete(&beta, std::slice::from_ref(&deleted))
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(s.clients.get(ws.id, beta.id).await.unwrap(), None);
    assert_eq!(s.outbox.events().await, [updated.clone(), deleted.clone()]);
    assert_eq!(
        s.clients.delete(&beta, &[]).await.unwrap(),
        WriteOutcome::Raced
    );
    // A stale read of a client is not deleted.
    assert_eq!(
        s.clients.delete(&acme, &[]).await.unwrap(),
        WriteOutcome::Raced
    );
    assert!(s.clients.get(ws.id, acme.id).await.unwrap().is_some());
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
    s.catalog.create_project(&website, &[]).await.unwrap();
    s.catalog
        .create_project(&project(21, None, 2), &[])
        .await
        .unwrap();
    match s
        .catalog
        .create_project(&project(22, Some(foreign.id), 3), &[])
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
    match s.clients.delete(&acme, &[]).await {
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

async fn projects_are_changed_and_deleted_with_their_events_unless_in_use(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let (other, _) = seeded(&s, 2).await;
    let acme = client(10, &ws, "Acme", 0);
    let foreign = client(11, &other, "Foreign", 0);
    s.clients.create(&acme, &[]).await.unwrap();
    s.clients.create(&foreign, &[]).await.unwrap();
    let website = stored_project(&s, 20, &ws).await;
    let created = event(600, ws.id, EventType::ProjectCreated, 0);
    let intranet = Project {
        id: ProjectId(id(21)),
        name: "Intranet".into(),
        ..website.clone()
    };
    s.catalog
        .create_project(&intranet, std::slice::from_ref(&created))
        .await
        .unwrap();

    let renamed = Project {
        name: "Website 2".into(),
        client_id: Some(acme.id),
        updated_at: T0 + Duration::minutes(5),
        ..website.clone()
    };
    let updated = event(601, ws.id, EventType::ProjectUpdated, 5);
    assert_eq!(
        s.catalog
            .update_project(&website, &renamed, std::slice::from_ref(&updated))
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.catalog.project(ws.id, website.id).await.unwrap(),
        Some(renamed.clone())
    );
    // Stale, and another workspace's client: nothing written.
    assert_eq!(
        s.catalog
            .update_project(
                &website,
                &website,
                &[event(602, ws.id, EventType::ProjectUpdated, 6)]
            )
            .await
            .unwrap(),
        WriteOutcome::Raced
    );
    match s
        .catalog
        .update_project(
            &renamed,
            &Project {
                client_id: Some(foreign.id),
                ..renamed.clone()
            },
            &[event(603, ws.id, EventType::ProjectUpdated, 6)],
        )
        .await
    {
        Err(DomainError::Validation(m)) => {
            assert_eq!(m, "client_id does not name a client of this workspace");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.outbox.events().await, [created.clone(), updated.clone()]);

    // A project a time entry is booked on stays; its tasks go with it otherwise.
    let task = stored_task(&s, 30, &renamed).await;
    let entry = TimeEntry {
        project_id: Some(renamed.id),
        ..manual(100, &ws, &member, 0)
    };
    s.entries.create(&entry, &[]).await.unwrap();
    match s
        .catalog
        .delete_project(&renamed, &[event(604, ws.id, EventType::ProjectDeleted, 7)])
        .await
    {
        Err(DomainError::Conflict(m)) => assert_eq!(m, "Project is used by time entries"),
        other => panic!("{other:?}"),
    }
    assert!(
        s.catalog
            .project(ws.id, renamed.id)
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        s.entries.delete(&entry, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.catalog.delete_project(&website, &[]).await.unwrap(),
        WriteOutcome::Raced,
        "a stale read is not deleted"
    );
    let deleted = event(605, ws.id, EventType::ProjectDeleted, 8);
    assert_eq!(
        s.catalog
            .delete_project(&renamed, std::slice::from_ref(&deleted))
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(s.catalog.project(ws.id, renamed.id).await.unwrap(), None);
    assert_eq!(s.catalog.task(ws.id, task.id).await.unwrap(), None);
    assert_eq!(s.outbox.events().await, [created, updated, deleted]);
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
        previous_secret_expires_at: None,
        filters: SubscriptionFilters::default(),
    }
}

fn ids(subscriptions: &[Subscription]) -> Vec<String> {
    subscriptions.iter().map(|s| s.id.to_string()).collect()
}

async fn subscriptions_are_listed_per_member_and_changed_unless_deleted(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let colleague = user(2002, "colleague@example.com");
    s.users.create_member(&colleague, ws.id, T0).await.unwrap();
    let mine = subscription(1, &stored_key(&s, 50, &ws, &member).await, 0);
    let theirs = subscription(2, &stored_key(&s, 51, &ws, &colleague).await, 1);
    s.subscriptions.create(&mine, 10).await.unwrap();
    s.subscriptions.create(&theirs, 10).await.unwrap();
    assert_eq!(
        ids(&s.subscriptions.list(ws.id, member.id).await.unwrap()),
        ids(std::slice::from_ref(&mine)),
        "a member's own only"
    );
    assert_eq!(
        ids(&s.subscriptions.list(ws.id, colleague.id).await.unwrap()),
        ids(std::slice::from_ref(&theirs))
    );

    let audit = |action: &'static str, minutes: i64| AuditEntry {
        workspace_id: ws.id,
        actor_user_id: Some(member.id),
        action,
        target_type: "webhook",
        target_id: mine.id.to_string(),
        reason: Some("changed url".into()),
        at: T0 + Duration::minutes(minutes),
    };
    let change = SubscriptionChange {
        url: Some("https://elsewhere.example.com/new".into()),
        events: None,
        description: Some(None),
        filters: None,
        updated_at: T0 + Duration::minutes(5),
    };
    let stored = s
        .subscriptions
        .update(&mine.id, &change, &audit("webhook.updated", 5))
        .await
        .unwrap();
    let changed = Subscription {
        url: "https://elsewhere.example.com/new".into(),
        description: None,
        updated_at: T0 + Duration::minutes(5),
        ..mine.clone()
    };
    assert_eq!(stored, changed, "url and description changed, events kept");
    assert_eq!(
        s.subscriptions.get(&mine.id).await.unwrap(),
        Some(changed.clone())
    );
    // A change of other fields keeps the first change's: only what a change sets is written.
    let events_only = SubscriptionChange {
        url: None,
        events: Some(vec![EventType::TimerStarted]),
        description: None,
        filters: None,
        updated_at: T0 + Duration::minutes(5),
    };
    let changed = Subscription {
        events: vec![EventType::TimerStarted],
        ..changed
    };
    assert_eq!(
        s.subscriptions
            .update(&mine.id, &events_only, &audit("webhook.updated", 5))
            .await
            .unwrap(),
        changed
    );

    s.subscriptions
        .delete(&mine.id, &audit("webhook.deleted", 6))
        .await
        .unwrap();
    let late = SubscriptionChange {
        url: Some("https://late.example.com/".into()),
        ..events_only.clone()
    };
    assert!(matches!(
        s.subscriptions
            .update(&mine.id, &late, &audit("webhook.updated", 7))
            .await,
        Err(DomainError::NotFound("webhook"))
    ));
    let kept = s.subscriptions.get(&mine.id).await.unwrap().unwrap();
    assert_eq!(
        kept.url, changed.url,
        "a deleted subscription is not changed"
    );
    assert_eq!(kept.status, SubscriptionStatus::Deleted);
    let unknown = WebhookId::parse("wh_zzzzzzzzzzzzzzzzzzzzzzzz").unwrap();
    assert!(matches!(
        s.subscriptions
            .update(&unknown, &late, &audit("webhook.updated", 8))
            .await,
        Err(DomainError::NotFound("webhook"))
    ));
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
        ids(&s.subscriptions.list(ws.id, member.id).await.unwrap()),
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
        workspace_id: ws.id,
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
        ids(&s.subscriptions.list(ws.id, member.id).await.unwrap()),
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

fn at(minutes: i64) -> OffsetDateTime {
    T0 + Duration::minutes(minutes)
}

/// A running timer of `member` in `ws`, started `minutes` after T0.
fn timer(n: u128, ws: &Workspace, member: &User, minutes: i64) -> TimeEntry {
    TimeEntry {
        id: TimeEntryId(id(n)),
        workspace_id: ws.id,
        user_id: member.id,
        source: EntrySource::Timer,
        description: format!("Entry {n}"),
        project_id: None,
        task_id: None,
        tag_ids: vec![],
        billable: false,
        start: at(minutes),
        end: None,
        created_at: at(minutes),
        updated_at: at(minutes),
    }
}

/// A manual entry of `member` in `ws`: ten minutes from `minutes` after T0, created at its end.
fn manual(n: u128, ws: &Workspace, member: &User, minutes: i64) -> TimeEntry {
    TimeEntry {
        source: EntrySource::Manual,
        end: Some(at(minutes + 10)),
        created_at: at(minutes + 10),
        updated_at: at(minutes + 10),
        ..timer(n, ws, member, minutes)
    }
}

fn event(n: u128, workspace: WorkspaceId, event_type: EventType, minutes: i64) -> Event {
    Event {
        id: EventId(id(n)),
        workspace_id: workspace,
        event_type,
        body: format!(r#"{{"n":{n}}}"#),
        created_at: at(minutes),
        subject: EventSubject::default(),
        ordering_key: format!("k{n}"),
    }
}

/// The stop of `entry` at `minutes` after T0, announced by event `n` two seconds later (so that
/// the stopped entry's `updated_at`, the event's time, differs from its end).
fn stop_of(entry: &TimeEntry, n: u128, minutes: i64) -> TimerStop {
    let mut event = event(n, entry.workspace_id, EventType::TimerStopped, minutes);
    event.created_at += Duration::seconds(2);
    TimerStop {
        entry: entry.id,
        end: at(minutes),
        event,
    }
}

/// `entry` as stored once `stop` applied.
fn stopped(entry: &TimeEntry, stop: &TimerStop) -> TimeEntry {
    TimeEntry {
        end: Some(stop.end),
        updated_at: stop.event.created_at,
        ..entry.clone()
    }
}

/// The entries' ids, as the numbers they were made from.
fn numbers(entries: &[TimeEntry]) -> Vec<u128> {
    entries.iter().map(|e| e.id.0.as_u128()).collect()
}

async fn stored_project(s: &Subject, n: u128, ws: &Workspace) -> Project {
    let project = Project {
        id: ProjectId(id(n)),
        workspace_id: ws.id,
        client_id: None,
        name: format!("Project {n}"),
        created_at: T0,
        updated_at: T0,
    };
    s.catalog.create_project(&project, &[]).await.unwrap();
    project
}

async fn stored_task(s: &Subject, n: u128, project: &Project) -> Task {
    let task = Task {
        id: TaskId(id(n)),
        workspace_id: project.workspace_id,
        project_id: project.id,
        name: format!("Task {n}"),
        created_at: T0,
        updated_at: T0,
    };
    s.catalog.create_task(&task).await.unwrap();
    task
}

async fn stored_tag(s: &Subject, n: u128, ws: &Workspace) -> Tag {
    let tag = Tag {
        id: TagId(id(n)),
        workspace_id: ws.id,
        name: format!("Tag {n}"),
        created_at: T0,
    };
    s.catalog.create_tag(&tag).await.unwrap();
    tag
}

async fn timers_run_one_per_user_and_stop_only_while_running(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let (other, colleague) = seeded(&s, 2).await;
    s.users
        .add_membership(member.id, other.id, T0)
        .await
        .unwrap();
    assert_eq!(s.entries.running(member.id).await.unwrap(), None);

    let first = timer(100, &ws, &member, 0);
    let first_started = event(500, ws.id, EventType::TimerStarted, 0);
    assert_eq!(
        s.entries
            .start(None, &first, std::slice::from_ref(&first_started))
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.entries.running(member.id).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        s.entries.get(ws.id, first.id).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        s.outbox.events().await,
        std::slice::from_ref(&first_started)
    );

    // Another user's timer runs beside it.
    let theirs = timer(101, &other, &colleague, 1);
    assert_eq!(
        s.entries.start(None, &theirs, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.entries.running(colleague.id).await.unwrap(),
        Some(theirs.clone())
    );
    assert_eq!(
        s.entries.running(member.id).await.unwrap(),
        Some(first.clone())
    );

    // A second timer of the same user, even in another workspace, while the first runs.
    let second = timer(102, &other, &member, 30);
    assert_eq!(
        s.entries
            .start(
                None,
                &second,
                &[event(501, other.id, EventType::TimerStarted, 30)]
            )
            .await
            .unwrap(),
        WriteOutcome::Raced
    );
    // Stopping a timer that is not running (no entry has this id) before starting.
    let ghost = timer(199, &ws, &member, 0);
    assert_eq!(
        s.entries
            .start(
                Some(&stop_of(&ghost, 502, 30)),
                &second,
                &[event(503, other.id, EventType::TimerStarted, 30)]
            )
            .await
            .unwrap(),
        WriteOutcome::Raced
    );
    assert_eq!(
        s.entries.get(other.id, second.id).await.unwrap(),
        None,
        "nothing stored"
    );
    assert_eq!(
        s.entries.running(member.id).await.unwrap(),
        Some(first.clone()),
        "nothing stopped"
    );
    assert_eq!(
        s.outbox.events().await,
        std::slice::from_ref(&first_started),
        "no event recorded"
    );

    // The stop and the start in one write, with both events.
    let stop_first = stop_of(&first, 504, 30);
    let second_started = event(505, other.id, EventType::TimerStarted, 30);
    assert_eq!(
        s.entries
            .start(
                Some(&stop_first),
                &second,
                std::slice::from_ref(&second_started)
            )
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    let first_stopped = stopped(&first, &stop_first);
    assert_eq!(
        s.entries.get(ws.id, first.id).await.unwrap(),
        Some(first_stopped.clone()),
        "ended, updated at the stop event's time"
    );
    assert_eq!(
        s.entries.running(member.id).await.unwrap(),
        Some(second.clone())
    );
    assert_eq!(
        s.outbox.events().await,
        [
            first_started.clone(),
            stop_first.event.clone(),
            second_started.clone()
        ]
    );

    // A stopped timer stops no more, alone or before a start: nothing written.
    assert_eq!(
        s.entries.stop(&stop_of(&first, 506, 40)).await.unwrap(),
        WriteOutcome::Raced
    );
    let third = timer(103, &ws, &member, 40);
    assert_eq!(
        s.entries
            .start(
                Some(&stop_of(&first, 507, 40)),
                &third,
                &[event(508, ws.id, EventType::TimerStarted, 40)]
            )
            .await
            .unwrap(),
        WriteOutcome::Raced
    );
    assert_eq!(
        s.entries.get(ws.id, first.id).await.unwrap(),
        Some(first_stopped)
    );
    assert_eq!(s.entries.get(ws.id, third.id).await.unwrap(), None);
    assert_eq!(
        s.entries.running(member.id).await.unwrap(),
        Some(second.clone())
    );

    let stop_second = stop_of(&second, 509, 60);
    assert_eq!(
        s.entries.stop(&stop_second).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(s.entries.running(member.id).await.unwrap(), None);
    assert_eq!(
        s.entries.get(other.id, second.id).await.unwrap(),
        Some(stopped(&second, &stop_second))
    );
    assert_eq!(
        s.entries.stop(&stop_of(&second, 510, 70)).await.unwrap(),
        WriteOutcome::Raced
    );
    assert_eq!(
        s.entries.stop(&stop_of(&ghost, 511, 70)).await.unwrap(),
        WriteOutcome::Raced
    );
    assert_eq!(
        s.entries.running(colleague.id).await.unwrap(),
        Some(theirs),
        "another user's timer untouched"
    );
    assert_eq!(
        s.outbox.events().await,
        [
            first_started,
            stop_first.event,
            second_started,
            stop_second.event
        ]
    );
}

async fn entry_writes_refuse_references_outside_the_workspace_and_write_nothing(s: Subject) {
    const NOT_OUR_PROJECT: &str = "project_id does not name a project of this workspace";
    const NOT_ITS_TASK: &str = "task_id does not belong to project_id";
    const NOT_OUR_TAG: &str = "tag_ids contains an id that is not a tag of this workspace";
    let (ws, member) = seeded(&s, 1).await;
    let (other, stranger) = seeded(&s, 2).await;
    let website = stored_project(&s, 20, &ws).await;
    let design = stored_task(&s, 30, &website).await;
    let intranet = stored_project(&s, 21, &ws).await;
    let wiki = stored_task(&s, 31, &intranet).await;
    let urgent = stored_tag(&s, 40, &ws).await;
    let their_project = stored_project(&s, 22, &other).await;
    let their_tag = stored_tag(&s, 41, &other).await;

    let entry = manual(100, &ws, &member, 0);
    let refused = [
        (
            TimeEntry {
                project_id: Some(their_project.id),
                ..entry.clone()
            },
            NOT_OUR_PROJECT,
        ),
        (
            TimeEntry {
                project_id: Some(website.id),
                task_id: Some(wiki.id),
                ..entry.clone()
            },
            NOT_ITS_TASK,
        ),
        (
            TimeEntry {
                tag_ids: vec![urgent.id, their_tag.id],
                ..entry.clone()
            },
            NOT_OUR_TAG,
        ),
        (
            TimeEntry {
                tag_ids: vec![urgent.id, urgent.id],
                ..entry.clone()
            },
            NOT_OUR_TAG,
        ),
    ];
    for (n, (refused, message)) in (500..).zip(&refused) {
        let created = event(n, ws.id, EventType::TimeEntryCreated, 10);
        match s.entries.create(refused, &[created]).await {
            Err(DomainError::Validation(m)) => assert_eq!(m, *message),
            other => panic!("{message}: {other:?}"),
        }
    }
    // A user who is no member of the workspace has no entries in it.
    let outsiders = TimeEntry {
        user_id: stranger.id,
        ..entry.clone()
    };
    let created = event(504, ws.id, EventType::TimeEntryCreated, 10);
    assert!(matches!(
        s.entries.create(&outsiders, &[created]).await,
        Err(DomainError::Unexpected(_))
    ));
    assert_eq!(
        s.entries.get(ws.id, entry.id).await.unwrap(),
        None,
        "nothing stored"
    );
    assert_eq!(s.outbox.events().await, [], "no event recorded");

    // With the workspace's own project, task and tag it is stored, with its event.
    let kept = TimeEntry {
        project_id: Some(website.id),
        task_id: Some(design.id),
        tag_ids: vec![urgent.id],
        ..entry.clone()
    };
    let created = event(505, ws.id, EventType::TimeEntryCreated, 10);
    s.entries
        .create(&kept, std::slice::from_ref(&created))
        .await
        .unwrap();
    assert_eq!(
        s.entries.get(ws.id, kept.id).await.unwrap(),
        Some(kept.clone())
    );
    assert_eq!(s.outbox.events().await, std::slice::from_ref(&created));

    // A replacement naming another workspace's rows changes nothing.
    let replacements = [
        (
            TimeEntry {
                project_id: Some(their_project.id),
                task_id: None,
                ..kept.clone()
            },
            NOT_OUR_PROJECT,
        ),
        (
            TimeEntry {
                task_id: Some(wiki.id),
                ..kept.clone()
            },
            NOT_ITS_TASK,
        ),
        (
            TimeEntry {
                description: "Retagged".into(),
                tag_ids: vec![their_tag.id],
                ..kept.clone()
            },
            NOT_OUR_TAG,
        ),
    ];
    for (refused, message) in &replacements {
        match s.entries.update(&kept, refused, &[]).await {
            Err(DomainError::Validation(m)) => assert_eq!(m, *message),
            other => panic!("{message}: {other:?}"),
        }
    }
    assert_eq!(
        s.entries.get(ws.id, kept.id).await.unwrap(),
        Some(kept.clone()),
        "unchanged, tags included"
    );

    // A start whose entry is refused leaves the timer it would have stopped running.
    let running = timer(101, &ws, &member, 20);
    let started = event(506, ws.id, EventType::TimerStarted, 20);
    assert_eq!(
        s.entries
            .start(None, &running, std::slice::from_ref(&started))
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    let next = TimeEntry {
        project_id: Some(their_project.id),
        ..timer(102, &ws, &member, 30)
    };
    match s
        .entries
        .start(
            Some(&stop_of(&running, 507, 30)),
            &next,
            &[event(508, ws.id, EventType::TimerStarted, 30)],
        )
        .await
    {
        Err(DomainError::Validation(m)) => assert_eq!(m, NOT_OUR_PROJECT),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        s.entries.running(member.id).await.unwrap(),
        Some(running),
        "the stop is undone"
    );
    assert_eq!(s.entries.get(ws.id, next.id).await.unwrap(), None);
    assert_eq!(s.outbox.events().await, [created, started]);
}

async fn entries_are_read_replaced_and_deleted_only_in_their_workspace(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let (other, _) = seeded(&s, 2).await;
    let website = stored_project(&s, 20, &ws).await;
    let design = stored_task(&s, 30, &website).await;
    let urgent = stored_tag(&s, 40, &ws).await;
    let billable = stored_tag(&s, 41, &ws).await;

    let entry = TimeEntry {
        description: "Design review".into(),
        project_id: Some(website.id),
        task_id: Some(design.id),
        tag_ids: vec![billable.id, urgent.id],
        billable: true,
        ..manual(100, &ws, &member, 0)
    };
    let created = event(500, ws.id, EventType::TimeEntryCreated, 10);
    s.entries
        .create(&entry, std::slice::from_ref(&created))
        .await
        .unwrap();
    assert_eq!(s.outbox.events().await, std::slice::from_ref(&created));
    assert_eq!(
        s.entries.get(ws.id, entry.id).await.unwrap(),
        Some(TimeEntry {
            tag_ids: vec![urgent.id, billable.id],
            ..entry.clone()
        }),
        "tags read back in id order"
    );
    assert_eq!(
        s.entries.get(other.id, entry.id).await.unwrap(),
        None,
        "another workspace's entry is not found"
    );
    assert_eq!(
        s.entries.get(ws.id, TimeEntryId(id(199))).await.unwrap(),
        None
    );

    let replaced = TimeEntry {
        description: "Review".into(),
        project_id: None,
        task_id: None,
        tag_ids: vec![billable.id],
        billable: false,
        start: at(5),
        end: Some(at(25)),
        updated_at: at(60),
        ..entry.clone()
    };
    let updated = event(501, ws.id, EventType::TimeEntryUpdated, 60);
    assert_eq!(
        s.entries
            .update(&entry, &replaced, std::slice::from_ref(&updated))
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.entries.get(ws.id, entry.id).await.unwrap(),
        Some(replaced.clone())
    );
    let untagged = TimeEntry {
        tag_ids: vec![],
        updated_at: at(61),
        ..replaced.clone()
    };
    assert_eq!(
        s.entries.update(&replaced, &untagged, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.entries.get(ws.id, entry.id).await.unwrap(),
        Some(untagged.clone())
    );
    assert_eq!(
        s.outbox.events().await,
        [created.clone(), updated.clone()],
        "a replacement records the events it is given"
    );

    // A stale read, another workspace's entry and a missing one are not written.
    for (before, after) in [
        (
            &replaced,
            &TimeEntry {
                description: "Stale".into(),
                ..untagged.clone()
            },
        ),
        (
            &TimeEntry {
                workspace_id: other.id,
                ..untagged.clone()
            },
            &TimeEntry {
                workspace_id: other.id,
                description: "Moved".into(),
                ..untagged.clone()
            },
        ),
        (&manual(101, &ws, &member, 0), &manual(101, &ws, &member, 0)),
    ] {
        let stray = event(502, ws.id, EventType::TimeEntryUpdated, 62);
        assert_eq!(
            s.entries.update(before, after, &[stray]).await.unwrap(),
            WriteOutcome::Raced,
            "{after:?}"
        );
    }
    assert_eq!(
        s.entries.get(ws.id, entry.id).await.unwrap(),
        Some(untagged.clone())
    );
    assert_eq!(
        s.entries.get(ws.id, TimeEntryId(id(101))).await.unwrap(),
        None
    );

    assert_eq!(
        s.entries
            .delete(
                &TimeEntry {
                    workspace_id: other.id,
                    ..untagged.clone()
                },
                &[]
            )
            .await
            .unwrap(),
        WriteOutcome::Raced
    );
    assert_eq!(
        s.entries.delete(&replaced, &[]).await.unwrap(),
        WriteOutcome::Raced
    );
    assert_eq!(
        s.entries.get(ws.id, entry.id).await.unwrap(),
        Some(untagged.clone())
    );
    let deleted = event(503, ws.id, EventType::TimeEntryDeleted, 63);
    assert_eq!(
        s.entries
            .delete(&untagged, std::slice::from_ref(&deleted))
            .await
            .unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(s.entries.get(ws.id, entry.id).await.unwrap(), None);
    assert_eq!(s.outbox.events().await, [created, updated, deleted]);
    assert_eq!(
        s.entries.delete(&untagged, &[]).await.unwrap(),
        WriteOutcome::Raced
    );

    // Deleting a running timer lets its user start another.
    let first = timer(102, &ws, &member, 30);
    assert_eq!(
        s.entries.start(None, &first, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.entries.delete(&first, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(s.entries.running(member.id).await.unwrap(), None);
    let second = timer(103, &ws, &member, 40);
    assert_eq!(
        s.entries.start(None, &second, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(s.entries.running(member.id).await.unwrap(), Some(second));
}

/// A page of `workspace`'s entries, the cursor passed in its text form.
async fn listed(
    s: &Subject,
    workspace: WorkspaceId,
    filter: EntryFilter,
    limit: u32,
    after: Option<Cursor>,
) -> Page<TimeEntry> {
    let cursor = after.map(|c| c.encode());
    let page = PageRequest::new(Some(limit), cursor.as_deref()).unwrap();
    s.entries.list(workspace, filter, page).await.unwrap()
}

async fn entries_are_listed_latest_start_first_filtered_and_paged(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let (other, outsider) = seeded(&s, 2).await;
    let colleague = user(3, "colleague@example.com");
    s.users.create_member(&colleague, ws.id, T0).await.unwrap();
    let urgent = stored_tag(&s, 40, &ws).await;

    let tagged = TimeEntry {
        tag_ids: vec![urgent.id],
        ..manual(113, &ws, &member, 120)
    };
    for entry in [
        manual(110, &ws, &member, 0),
        manual(112, &ws, &member, 60),
        manual(111, &ws, &colleague, 60),
        tagged.clone(),
        manual(114, &ws, &colleague, 180),
        manual(120, &other, &outsider, 100),
    ] {
        s.entries.create(&entry, &[]).await.unwrap();
    }
    let running = timer(115, &ws, &member, 240);
    assert_eq!(
        s.entries.start(None, &running, &[]).await.unwrap(),
        WriteOutcome::Applied
    );

    let all = EntryFilter::default();
    let first = listed(&s, ws.id, all, 4, None).await;
    assert_eq!(numbers(&first.items), [115, 114, 113, 112]);
    assert_eq!(first.items[0], running, "a running timer is listed");
    assert_eq!(first.items[2], tagged, "with its tags");
    assert_eq!(
        first.next,
        Some(Cursor {
            created_at: at(60),
            id: id(112)
        }),
        "the cursor's time is the start"
    );
    let second = listed(&s, ws.id, all, 4, first.next).await;
    assert_eq!(
        numbers(&second.items),
        [111, 110],
        "equal starts ordered by id"
    );
    assert_eq!(second.next, None);
    let exact = listed(&s, ws.id, all, 6, None).await;
    assert_eq!(numbers(&exact.items), [115, 114, 113, 112, 111, 110]);
    assert_eq!(exact.next, None, "no next page when exactly full");

    let window = EntryFilter {
        from: Some(at(60)),
        to: Some(at(180)),
        user: None,
    };
    assert_eq!(
        numbers(&listed(&s, ws.id, window, 50, None).await.items),
        [113, 112, 111],
        "from inclusive, to exclusive"
    );
    let theirs = EntryFilter {
        user: Some(colleague.id),
        ..all
    };
    assert_eq!(
        numbers(&listed(&s, ws.id, theirs, 50, None).await.items),
        [114, 111]
    );

    let mine_since = EntryFilter {
        from: Some(at(60)),
        user: Some(member.id),
        ..all
    };
    let mut after = None;
    for (expected, more) in [(115, true), (113, true), (112, false)] {
        let page = listed(&s, ws.id, mine_since, 1, after).await;
        assert_eq!(numbers(&page.items), [expected]);
        assert_eq!(page.next.is_some(), more, "after {expected}");
        after = page.next;
    }

    let outsiders = EntryFilter {
        user: Some(outsider.id),
        ..all
    };
    assert_eq!(listed(&s, ws.id, outsiders, 50, None).await.items, []);
    assert_eq!(
        numbers(&listed(&s, other.id, all, 50, None).await.items),
        [120]
    );
    let nowhere = listed(&s, WorkspaceId(id(77)), all, 50, None).await;
    assert_eq!((nowhere.items, nowhere.next), (vec![], None));
}

async fn latest_manual_stopped_and_started_entries_are_per_workspace(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let (other, outsider) = seeded(&s, 2).await;
    let colleague = user(3, "colleague@example.com");
    s.users.create_member(&colleague, ws.id, T0).await.unwrap();
    s.users
        .add_membership(member.id, other.id, T0)
        .await
        .unwrap();
    assert_eq!(
        s.entries.latest_manual(ws.id, member.id).await.unwrap(),
        None
    );
    assert_eq!(s.entries.latest_stopped(ws.id).await.unwrap(), None);
    assert_eq!(s.entries.latest_started(ws.id).await.unwrap(), None);

    // The latest manual entry is the last created, whatever its times and the insertion order.
    let newer = TimeEntry {
        created_at: at(400),
        ..manual(101, &ws, &member, -600)
    };
    let older = TimeEntry {
        created_at: at(300),
        ..manual(100, &ws, &member, 0)
    };
    let colleagues = TimeEntry {
        created_at: at(500),
        ..manual(102, &ws, &colleague, 0)
    };
    let elsewhere = TimeEntry {
        created_at: at(600),
        ..manual(103, &other, &member, 0)
    };
    for entry in [&newer, &older, &colleagues, &elsewhere] {
        s.entries.create(entry, &[]).await.unwrap();
    }
    assert_eq!(
        s.entries.latest_manual(ws.id, member.id).await.unwrap(),
        Some(newer.clone())
    );
    assert_eq!(
        s.entries.latest_manual(ws.id, colleague.id).await.unwrap(),
        Some(colleagues)
    );
    assert_eq!(
        s.entries.latest_manual(other.id, member.id).await.unwrap(),
        Some(elsewhere)
    );
    assert_eq!(
        s.entries
            .latest_manual(other.id, colleague.id)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        s.entries.latest_stopped(ws.id).await.unwrap(),
        None,
        "manual entries are no timers"
    );
    assert_eq!(s.entries.latest_started(ws.id).await.unwrap(), None);

    let early = timer(110, &ws, &member, 100);
    let late = timer(111, &ws, &colleague, 130);
    for timer in [&early, &late] {
        assert_eq!(
            s.entries.start(None, timer, &[]).await.unwrap(),
            WriteOutcome::Applied
        );
    }
    assert_eq!(
        s.entries.latest_started(ws.id).await.unwrap(),
        Some(late.clone()),
        "running or not"
    );
    assert_eq!(s.entries.latest_stopped(ws.id).await.unwrap(), None);
    let stop_late = stop_of(&late, 500, 160);
    let stop_early = stop_of(&early, 501, 200);
    for stop in [&stop_late, &stop_early] {
        assert_eq!(s.entries.stop(stop).await.unwrap(), WriteOutcome::Applied);
    }
    assert_eq!(
        s.entries.latest_stopped(ws.id).await.unwrap(),
        Some(stopped(&early, &stop_early)),
        "by end, not start"
    );
    assert_eq!(
        s.entries.latest_started(ws.id).await.unwrap(),
        Some(stopped(&late, &stop_late))
    );

    // Of two timers stopped at the same time, the greater id.
    let tied = timer(112, &ws, &colleague, 170);
    let stop_tied = stop_of(&tied, 502, 200);
    assert_eq!(
        s.entries.start(None, &tied, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.entries.stop(&stop_tied).await.unwrap(),
        WriteOutcome::Applied
    );
    let latest_stop = stopped(&tied, &stop_tied);
    assert_eq!(
        s.entries.latest_stopped(ws.id).await.unwrap(),
        Some(latest_stop.clone())
    );

    // A running timer is the latest started, not stopped; a later manual entry is neither.
    let current = timer(113, &ws, &member, 250);
    assert_eq!(
        s.entries.start(None, &current, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    s.entries
        .create(&manual(104, &ws, &member, 300), &[])
        .await
        .unwrap();
    assert_eq!(
        s.entries.latest_started(ws.id).await.unwrap(),
        Some(current.clone())
    );
    assert_eq!(
        s.entries.latest_stopped(ws.id).await.unwrap(),
        Some(latest_stop.clone())
    );
    assert_eq!(
        s.entries.latest_manual(ws.id, member.id).await.unwrap(),
        Some(newer),
        "created before the newer one"
    );

    // Another workspace's timers are its own.
    let theirs = timer(114, &other, &outsider, 1000);
    let stop_theirs = stop_of(&theirs, 503, 1100);
    assert_eq!(
        s.entries.start(None, &theirs, &[]).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.entries.stop(&stop_theirs).await.unwrap(),
        WriteOutcome::Applied
    );
    assert_eq!(
        s.entries.latest_started(ws.id).await.unwrap(),
        Some(current)
    );
    assert_eq!(
        s.entries.latest_stopped(ws.id).await.unwrap(),
        Some(latest_stop)
    );
    let theirs_stopped = stopped(&theirs, &stop_theirs);
    assert_eq!(
        s.entries.latest_started(other.id).await.unwrap(),
        Some(theirs_stopped.clone())
    );
    assert_eq!(
        s.entries.latest_stopped(other.id).await.unwrap(),
        Some(theirs_stopped)
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

async fn the_delivery_log_pages_tests_resends_and_replays_alike(s: Subject) {
    let (ws, member) = seeded(&s, 1).await;
    let audit = |action: &'static str, minutes: i64| AuditEntry {
        workspace_id: ws.id,
        actor_user_id: Some(member.id),
        action,
        target_type: "webhook",
        target_id: String::new(),
        reason: None,
        at: T0 + Duration::minutes(minutes),
    };
    let key = stored_key(&s, 50, &ws, &member).await;
    let hook = subscription(1, &key, 0);
    let other = subscription(2, &key, 0);
    s.subscriptions.create(&hook, 10).await.unwrap();
    s.subscriptions.create(&other, 10).await.unwrap();
    // An event the outbox fans out to both (they list CLIENT_CREATED).
    let created = Event {
        id: EventId(id(900)),
        workspace_id: ws.id,
        event_type: EventType::ClientCreated,
        body: r#"{"name": "Acme", "id": 1}"#.into(),
        created_at: T0 + Duration::minutes(1),
        subject: EventSubject::default(),
        ordering_key: "c11".into(),
    };
    s.clients
        .create(&client(11, &ws, "Acme", 1), std::slice::from_ref(&created))
        .await
        .unwrap();
    let everything = DeliveryQuery {
        since: T0 - Duration::days(1),
        status: None,
        event_type: None,
        before: None,
        limit: 100,
    };
    let log = s.log.deliveries(&hook.id, &everything).await.unwrap();
    assert_eq!(log.len(), 1);
    let fanned = log[0].clone();
    assert_eq!(
        (fanned.event_id, fanned.kind, fanned.status, fanned.attempts),
        (created.id, DeliveryKind::Event, DeliveryStatus::Pending, 0)
    );
    assert_eq!(fanned.next_attempt_at, Some(created.created_at));

    let test = Event {
        id: EventId(id(901)),
        workspace_id: ws.id,
        event_type: EventType::WebhookTest,
        body: r#"{"event": "WEBHOOK_TEST"}"#.into(),
        created_at: T0 + Duration::minutes(2),
        subject: EventSubject::default(),
        ordering_key: hook.id.to_string(),
    };
    let tested = s.log.queue_test(&hook.id, &test).await.unwrap();
    assert_eq!(
        (tested.event_id, tested.kind, tested.status),
        (test.id, DeliveryKind::Test, DeliveryStatus::Pending)
    );
    let resent = s
        .log
        .resend(&hook.id, fanned.id, T0 + Duration::minutes(3))
        .await
        .unwrap();
    assert_eq!(
        (resent.event_id, resent.kind, resent.created_at),
        (created.id, DeliveryKind::Resend, T0 + Duration::minutes(3))
    );
    let ids: Vec<DeliveryId> = s
        .log
        .deliveries(&hook.id, &everything)
        .await
        .unwrap()
        .iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(ids, [resent.id, tested.id, fanned.id], "newest first");
    let page = DeliveryQuery {
        before: Some(resent.id),
        limit: 1,
        ..everything.clone()
    };
    assert_eq!(
        s.log.deliveries(&hook.id, &page).await.unwrap()[0].id,
        tested.id
    );
    let tests_only = DeliveryQuery {
        event_type: Some(EventType::WebhookTest),
        ..everything.clone()
    };
    assert_eq!(
        s.log.deliveries(&hook.id, &tests_only).await.unwrap().len(),
        1
    );
    let recent = DeliveryQuery {
        since: T0 + Duration::minutes(2),
        ..everything.clone()
    };
    assert_eq!(s.log.deliveries(&hook.id, &recent).await.unwrap().len(), 2);

    let detail = s.log.delivery(&hook.id, fanned.id).await.unwrap().unwrap();
    assert_eq!(detail.payload, created.body, "the exact body");
    assert_eq!(detail.record, fanned);
    assert!(detail.attempts.is_empty());
    assert_eq!(s.log.delivery(&other.id, fanned.id).await.unwrap(), None);
    match s.log.resend(&other.id, fanned.id, T0).await {
        Err(DomainError::NotFound("delivery")) => {}
        other => panic!("another webhook's delivery: {other:?}"),
    }
    match s.log.resend(&hook.id, DeliveryId(987_654), T0).await {
        Err(DomainError::NotFound("delivery")) => {}
        other => panic!("{other:?}"),
    }

    let window = ReplayWindow {
        since: T0,
        until: T0 + Duration::hours(1),
        only_failed: true,
        limit: 10,
        at: T0 + Duration::minutes(4),
    };
    assert_eq!(
        s.log.replay(&hook.id, &window).await.unwrap(),
        ReplayOutcome {
            queued: 0,
            truncated: false,
            next_since: None
        },
        "pending: on its way"
    );
    let all = ReplayWindow {
        only_failed: false,
        ..window
    };
    // The test event is not one the webhook lists.
    assert_eq!(s.log.replay(&hook.id, &all).await.unwrap().queued, 1);
    let none = ReplayWindow { limit: 0, ..all };
    assert_eq!(
        s.log.replay(&hook.id, &none).await.unwrap(),
        ReplayOutcome {
            queued: 0,
            truncated: true,
            next_since: Some(created.created_at)
        }
    );

    s.subscriptions
        .delete(&hook.id, &audit("webhook.deleted", 5))
        .await
        .unwrap();
    match s.log.queue_test(&hook.id, &test).await {
        Err(DomainError::NotFound("webhook")) => {}
        other => panic!("a deleted webhook: {other:?}"),
    }
    match s.log.replay(&hook.id, &window).await {
        Err(DomainError::NotFound("webhook")) => {}
        other => panic!("{other:?}"),
    }
}
