//! Port contracts, written once and run against both implementations of each port: the
//! in-memory fake of `timetrack_testkit::fakes` (which the domain's service tests rely on) and
//! the PostgreSQL adapter (real database). A fake that drifts from the adapter's behaviour fails
//! here, not in a service test that trusted it.

use std::sync::Arc;

use time::macros::datetime;
use time::{Duration, OffsetDateTime};
use timetrack_adapters::postgres::{
    DeliveryAnnouncer, PgApiKeyRepository, PgCatalogRepository, PgClientRepository, PgDeliveryLog,
    PgDeliveryQueue, PgEventFeed, PgIdempotencyStore, PgRateRepository, PgSubscriptionRepository,
    PgTimeEntryRepository, PgUserRepository, PgWorkspaceRepository,
};
use timetrack_adapters::{PgPool, SecretBox};
use timetrack_domain::DomainError;
use timetrack_domain::ids::{
    ApiKeyId, ClientId, EventId, ProjectId, TagId, TaskId, TimeEntryId, UserId, WorkspaceId,
};
use timetrack_domain::model::{
    ApiKey, AuditEntry, Client, ClientStatus, ClientType, Cursor, CustomHeaders, DisabledReason,
    EntrySource, Event, EventSubject, EventType, KeyHash, ListFilter, Page, PageRequest, Project,
    Subscription, SubscriptionChange, SubscriptionFilters, SubscriptionStatus, Tag, Task,
    TimeEntry, User, WebhookId, Workspace,
};
use timetrack_domain::model::{
    DeliveryId, DeliveryKind, DeliveryQuery, DeliveryStatus, ReplayOutcome, ReplayWindow,
};
use timetrack_domain::model::{Role, RoundingMode, Scope, Scopes, WorkspaceSettings};
use timetrack_domain::ports::{
    ApiKeyRepository, CatalogRepository, ClientRepository, DeliveryLog, DeliveryQueue, EntryFilter,
    EventFeed, IdempotencyStore, LAST_OWNER, ROLE_CHANGED, RateRepository, SubscriptionRepository,
    TimeEntryRepository, TimerStop, UserRepository, WorkspaceRepository, WriteOutcome,
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
    feed: Arc<dyn EventFeed>,
    idempotency: Arc<dyn IdempotencyStore>,
    queue: Arc<dyn DeliveryQueue>,
    rates: Arc<dyn RateRepository>,
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
        feed: store.clone(),
        idempotency: store.clone(),
        queue: store.clone(),
        rates: store.clone(),
        outbox: Outbox::Fake(store),
        _db: None,
    }
}

async fn postgres() -> Subject {
    let db = TestDatabase::new().await;
    let pool = db.pool();
    // One box for the secrets the subscriptions seal and the queue opens.
    let secrets = SecretBox::ephemeral();
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
        subscriptions: Arc::new(PgSubscriptionRepository::new(pool.clone(), secrets.clone())),
        log: Arc::new(PgDeliveryLog::new(pool.clone(), DeliveryAnnouncer::new())),
        entries: Arc::new(PgTimeEntryRepository::new(
            pool.clone(),
            DeliveryAnnouncer::new(),
        )),
        feed: Arc::new(PgEventFeed::new(pool.clone())),
        idempotency: Arc::new(PgIdempotencyStore::new(
            pool.clone(),
            SecretBox::ephemeral(),
        )),
        queue: Arc::new(PgDeliveryQueue::new(pool.clone(), secrets)),
        rates: Arc::new(PgRateRepository::new(pool.clone())),
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

mod accounts;
mod catalog;
mod clients;
mod delivery_log;
mod delivery_queue;
mod entries;
mod feed;
mod idempotency;
mod rate_limits;
mod rates;
mod subscriptions;
mod timers;

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
    s.users
        .create_member(&member, ws.id, Role::Member, T0)
        .await
        .unwrap();
    (ws, member)
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
