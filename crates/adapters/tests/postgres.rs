//! Adapter tests against a real PostgreSQL: repositories, migrations, health, and the private
//! cluster.

use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel_async::RunQueryDsl;
use time::macros::datetime;
use timetrack_adapters::postgres::{
    PgApiKeyRepository, PgHealthProbe, PgUserRepository, PgWorkspaceRepository,
};
use timetrack_adapters::testing::TestDatabase;
use timetrack_adapters::{Durability, LocalPostgres, PoolSettings, build_pool, run_migrations};
use timetrack_domain::DomainError;
use timetrack_domain::ids::{ApiKeyId, WorkspaceId};
use timetrack_domain::ports::{ApiKeyRepository, HealthProbe, UserRepository, WorkspaceRepository};
use timetrack_domain::services::{AdminService, NewWorkspace};
use timetrack_domain::testing::{ManualClock, SeededRandom, SequentialIds};

struct Fixture {
    db: TestDatabase,
    admin: AdminService,
    keys: Arc<PgApiKeyRepository>,
    users: Arc<PgUserRepository>,
    workspaces: Arc<PgWorkspaceRepository>,
}

async fn fixture() -> Fixture {
    let db = TestDatabase::new().await;
    let pool = db.pool();
    let workspaces = Arc::new(PgWorkspaceRepository::new(pool.clone()));
    let users = Arc::new(PgUserRepository::new(pool.clone()));
    let keys = Arc::new(PgApiKeyRepository::new(pool));
    let admin = AdminService::new(
        workspaces.clone(),
        users.clone(),
        keys.clone(),
        Arc::new(ManualClock::at(datetime!(2026-03-01 12:00 UTC))),
        Arc::new(SequentialIds::default()),
        Arc::new(SeededRandom::new(9)),
    );
    Fixture {
        db,
        admin,
        keys,
        users,
        workspaces,
    }
}

fn named(name: &str) -> NewWorkspace {
    NewWorkspace {
        name: name.into(),
        ..NewWorkspace::default()
    }
}

#[tokio::test]
async fn workspaces_round_trip_with_their_settings() {
    let f = fixture().await;
    let ws = f
        .admin
        .create_workspace(NewWorkspace {
            name: "Acme".into(),
            timezone: Some("Europe/Paris".into()),
            currency: Some("EUR".into()),
        })
        .await
        .unwrap();
    assert_eq!(f.workspaces.get(ws.id).await.unwrap(), Some(ws.clone()));
    assert_eq!(
        f.workspaces
            .get(WorkspaceId(uuid::Uuid::nil()))
            .await
            .unwrap(),
        None
    );
    let err = f.workspaces.create(&ws).await.unwrap_err();
    assert!(matches!(err, DomainError::Conflict(_)), "{err:?}");
}

#[tokio::test]
async fn users_join_workspaces_and_emails_are_unique_case_insensitively() {
    let f = fixture().await;
    let a = f.admin.create_workspace(named("A")).await.unwrap();
    let b = f.admin.create_workspace(named("B")).await.unwrap();
    let ada = f
        .admin
        .create_user(a.id, "Ada", "ada@example.com")
        .await
        .unwrap();
    assert_eq!(f.users.get(ada.id).await.unwrap(), Some(ada.clone()));
    assert_eq!(
        f.users.find_by_email("ADA@EXAMPLE.COM").await.unwrap(),
        Some(ada.clone())
    );

    // The same e-mail joins a second workspace as the same user.
    let again = f
        .admin
        .create_user(b.id, "Someone", "Ada@Example.com")
        .await
        .unwrap();
    assert_eq!(again.id, ada.id);
    let err = f
        .admin
        .create_user(b.id, "Ada", "ada@example.com")
        .await
        .unwrap_err();
    assert!(matches!(err, DomainError::Conflict(_)), "{err:?}");

    // A user stored directly with a clashing e-mail is refused by the database.
    let clash = timetrack_domain::model::User {
        id: timetrack_domain::ids::UserId(uuid::Uuid::new_v4()),
        name: "Clash".into(),
        email: "ADA@example.com".into(),
        created_at: ada.created_at,
    };
    let err = f
        .users
        .create_member(&clash, a.id, ada.created_at)
        .await
        .unwrap_err();
    assert!(matches!(err, DomainError::Conflict(_)), "{err:?}");
}

#[tokio::test]
async fn a_user_in_an_unknown_workspace_is_not_found_and_nothing_is_stored() {
    let f = fixture().await;
    let err = f
        .admin
        .create_user(WorkspaceId(uuid::Uuid::new_v4()), "Ada", "ada@example.com")
        .await
        .unwrap_err();
    assert!(matches!(err, DomainError::NotFound("workspace")), "{err:?}");
    assert_eq!(
        f.users.find_by_email("ada@example.com").await.unwrap(),
        None
    );
}

#[tokio::test]
async fn api_keys_are_found_by_hash_only_while_not_revoked() {
    let f = fixture().await;
    let ws = f.admin.create_workspace(named("A")).await.unwrap();
    let ada = f
        .admin
        .create_user(ws.id, "Ada", "ada@example.com")
        .await
        .unwrap();
    let (key, secret) = f
        .admin
        .create_api_key(ada.id, ws.id, Some("zapier"))
        .await
        .unwrap();

    let found = f
        .keys
        .find_active_by_hash(&secret.hash())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found, key);

    // Only the hash is stored: the key text appears nowhere in the table.
    let pool = f.db.pool();
    let mut conn = pool.get().await.unwrap();
    #[derive(diesel::QueryableByName)]
    struct Hit {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let hits: Vec<Hit> = diesel::sql_query(
        "SELECT count(*) AS n FROM api_keys WHERE position($1 in api_keys::text) > 0",
    )
    .bind::<diesel::sql_types::Text, _>(&secret.expose()[10..])
    .load(&mut conn)
    .await
    .unwrap();
    assert_eq!(hits[0].n, 0);

    let at = datetime!(2026-03-01 12:05 UTC);
    f.keys.record_use(key.id, at).await.unwrap();
    let revoked = f.admin.revoke_api_key(key.id).await.unwrap();
    assert!(revoked.revoked_at.is_some());
    assert_eq!(revoked.last_used_at, Some(at));
    assert_eq!(
        f.keys.find_active_by_hash(&secret.hash()).await.unwrap(),
        None
    );

    // Revoking again changes nothing.
    let again = f.admin.revoke_api_key(key.id).await.unwrap();
    assert_eq!(again.revoked_at, revoked.revoked_at);

    let err = f
        .admin
        .revoke_api_key(ApiKeyId(uuid::Uuid::new_v4()))
        .await
        .unwrap_err();
    assert!(matches!(err, DomainError::NotFound("api key")), "{err:?}");
}

#[tokio::test]
async fn an_api_key_needs_a_membership() {
    let f = fixture().await;
    let a = f.admin.create_workspace(named("A")).await.unwrap();
    let b = f.admin.create_workspace(named("B")).await.unwrap();
    let ada = f
        .admin
        .create_user(a.id, "Ada", "ada@example.com")
        .await
        .unwrap();
    let err = f
        .admin
        .create_api_key(ada.id, b.id, None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, DomainError::NotFound("membership")),
        "{err:?}"
    );
}

#[tokio::test]
async fn revoking_a_key_disables_its_active_subscriptions_only() {
    let f = fixture().await;
    let ws = f.admin.create_workspace(named("A")).await.unwrap();
    let ada = f
        .admin
        .create_user(ws.id, "Ada", "ada@example.com")
        .await
        .unwrap();
    let (revoked_key, _) = f.admin.create_api_key(ada.id, ws.id, None).await.unwrap();
    let (kept_key, _) = f.admin.create_api_key(ada.id, ws.id, None).await.unwrap();

    let pool = f.db.pool();
    let mut conn = pool.get().await.unwrap();
    for (id, key) in [
        ("wh_aaaaaaaaaaaaaaaa", revoked_key.id),
        ("wh_bbbbbbbbbbbbbbbb", kept_key.id),
    ] {
        diesel::sql_query(
            "INSERT INTO webhook_subscriptions (id, workspace_id, user_id, api_key_id, url, events, \
             secret, status, created_at, updated_at) VALUES ($1, $2, $3, $4, 'https://example.com/h', \
             ARRAY['CLIENT_CREATED'], 'whsec_x', 'ACTIVE', now(), now())",
        )
        .bind::<diesel::sql_types::Text, _>(id)
        .bind::<diesel::sql_types::Uuid, _>(ws.id.0)
        .bind::<diesel::sql_types::Uuid, _>(ada.id.0)
        .bind::<diesel::sql_types::Uuid, _>(key.0)
        .execute(&mut conn)
        .await
        .unwrap();
    }
    f.admin.revoke_api_key(revoked_key.id).await.unwrap();

    #[derive(diesel::QueryableByName, Debug, PartialEq)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        id: String,
        #[diesel(sql_type = diesel::sql_types::Text)]
        status: String,
    }
    let rows: Vec<Row> =
        diesel::sql_query("SELECT id, status FROM webhook_subscriptions ORDER BY id")
            .load(&mut conn)
            .await
            .unwrap();
    assert_eq!(
        rows,
        vec![
            Row {
                id: "wh_aaaaaaaaaaaaaaaa".into(),
                status: "DISABLED".into()
            },
            Row {
                id: "wh_bbbbbbbbbbbbbbbb".into(),
                status: "ACTIVE".into()
            },
        ]
    );
}

#[tokio::test]
async fn migrations_are_idempotent() {
    let db = TestDatabase::new().await;
    assert_eq!(
        run_migrations(db.url()).await.unwrap(),
        Vec::<String>::new()
    );
}

#[tokio::test]
async fn health_probe_reports_a_reachable_database() {
    let db = TestDatabase::new().await;
    let probe = PgHealthProbe::new(db.pool(), Duration::from_secs(2));
    probe.check_database().await.unwrap();
}

#[tokio::test]
async fn health_probe_reports_an_unreachable_database_quickly() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let pool = build_pool(
        &format!("postgres://nobody@127.0.0.1:{port}/none"),
        PoolSettings::default(),
    )
    .unwrap();
    let probe = PgHealthProbe::new(pool, Duration::from_secs(2));
    let started = Instant::now();
    let err = probe.check_database().await.unwrap_err();
    assert!(matches!(err, DomainError::Unavailable(_)), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn repositories_answer_unavailable_when_the_database_is_gone() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let pool = build_pool(
        &format!("postgres://nobody@127.0.0.1:{port}/none"),
        PoolSettings::default(),
    )
    .unwrap();
    let err = PgWorkspaceRepository::new(pool)
        .get(WorkspaceId(uuid::Uuid::nil()))
        .await
        .unwrap_err();
    assert!(matches!(err, DomainError::Unavailable(_)), "{err:?}");
}

/// The private cluster: created on first start, reused by a second process-like handle, stopped
/// by its owner, and started again on the same data.
#[tokio::test(flavor = "multi_thread")]
async fn local_cluster_starts_attaches_stops_and_keeps_its_data() {
    let dir =
        std::env::temp_dir().join(format!("timetrack-local-pg-test-{}", uuid::Uuid::new_v4()));
    let url = {
        let owner = tokio::task::spawn_blocking({
            let dir = dir.clone();
            move || LocalPostgres::start(&dir, Durability::Ephemeral)
        })
        .await
        .unwrap()
        .unwrap();
        assert!(owner.owns_server());
        let url = owner.url("postgres");
        run_migrations(&url).await.unwrap();

        let attached = tokio::task::spawn_blocking({
            let dir = dir.clone();
            move || LocalPostgres::start(&dir, Durability::Ephemeral)
        })
        .await
        .unwrap()
        .unwrap();
        assert!(!attached.owns_server());
        assert_eq!(attached.url("postgres"), url);
        drop(attached);
        // The attached handle leaves the server running.
        let probe = PgHealthProbe::new(
            build_pool(&url, PoolSettings::default()).unwrap(),
            Duration::from_secs(2),
        );
        probe.check_database().await.unwrap();

        tokio::task::spawn_blocking(move || drop(owner))
            .await
            .unwrap();
        let probe = PgHealthProbe::new(
            build_pool(&url, PoolSettings::default()).unwrap(),
            Duration::from_secs(2),
        );
        assert!(
            probe.check_database().await.is_err(),
            "server still running after drop"
        );
        url
    };

    // Started again: same data (migrations already applied), same credentials.
    let again = tokio::task::spawn_blocking({
        let dir = dir.clone();
        move || LocalPostgres::start(&dir, Durability::Ephemeral)
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        run_migrations(&again.url("postgres")).await.unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(
        again.url("postgres").split('@').next(),
        url.split('@').next()
    );
    tokio::task::spawn_blocking(move || drop(again))
        .await
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

mod timers {
    //! The conditional timer writes: a lost race writes nothing at all.

    use std::sync::Arc;

    use diesel_async::RunQueryDsl;
    use time::macros::datetime;
    use timetrack_adapters::postgres::{
        PgApiKeyRepository, PgTimeEntryRepository, PgUserRepository, PgWorkspaceRepository,
    };
    use timetrack_adapters::testing::TestDatabase;
    use timetrack_domain::ids::{EventId, TimeEntryId, UserId, WorkspaceId};
    use timetrack_domain::model::{EntrySource, Event, EventType, TimeEntry};
    use timetrack_domain::ports::{TimeEntryRepository, TimerStop, TimerWrite};
    use timetrack_domain::services::{AdminService, NewWorkspace};
    use timetrack_domain::testing::{ManualClock, SeededRandom, SequentialIds};
    use uuid::Uuid;

    async fn count(db: &TestDatabase, sql: &str) -> i64 {
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let pool = db.pool();
        let mut conn = pool.get().await.unwrap();
        let rows: Vec<Row> = diesel::sql_query(sql).load(&mut conn).await.unwrap();
        rows[0].n
    }

    fn entry(ws: WorkspaceId, user: UserId, n: u128) -> TimeEntry {
        let at = datetime!(2026-03-01 09:00 UTC);
        TimeEntry {
            id: TimeEntryId(Uuid::from_u128(n)),
            workspace_id: ws,
            user_id: user,
            source: EntrySource::Timer,
            description: String::new(),
            project_id: None,
            task_id: None,
            tag_ids: vec![],
            billable: false,
            start: at,
            end: None,
            created_at: at,
            updated_at: at,
        }
    }

    fn event(ws: WorkspaceId, kind: EventType, n: u128) -> Event {
        Event {
            id: EventId(Uuid::from_u128(n)),
            workspace_id: ws,
            event_type: kind,
            body: "{}".into(),
            created_at: datetime!(2026-03-01 10:00 UTC),
        }
    }

    async fn setup() -> (TestDatabase, PgTimeEntryRepository, WorkspaceId, UserId) {
        let db = TestDatabase::new().await;
        let pool = db.pool();
        let admin = AdminService::new(
            Arc::new(PgWorkspaceRepository::new(pool.clone())),
            Arc::new(PgUserRepository::new(pool.clone())),
            Arc::new(PgApiKeyRepository::new(pool.clone())),
            Arc::new(ManualClock::at(datetime!(2026-03-01 08:00 UTC))),
            Arc::new(SequentialIds::default()),
            Arc::new(SeededRandom::new(1)),
        );
        let ws = admin
            .create_workspace(NewWorkspace {
                name: "A".into(),
                ..NewWorkspace::default()
            })
            .await
            .unwrap();
        let user = admin
            .create_user(ws.id, "Ada", "ada@example.com")
            .await
            .unwrap();
        (db, PgTimeEntryRepository::new(pool), ws.id, user.id)
    }

    #[tokio::test]
    async fn a_start_that_loses_to_another_running_timer_rolls_back_its_stop_and_events() {
        let (db, repo, ws, user) = setup().await;
        let first = entry(ws, user, 1);
        assert_eq!(
            repo.start(None, &first, &[event(ws, EventType::TimerStarted, 100)])
                .await
                .unwrap(),
            TimerWrite::Applied
        );

        // A start that would insert a second running timer without stopping the first: raced.
        let second = entry(ws, user, 2);
        assert_eq!(
            repo.start(None, &second, &[event(ws, EventType::TimerStarted, 101)])
                .await
                .unwrap(),
            TimerWrite::Raced
        );

        // A stop of an entry that is not running, bundled with a start: raced, nothing written.
        let bogus = TimerStop {
            entry: TimeEntryId(Uuid::from_u128(99)),
            end: datetime!(2026-03-01 10:00 UTC),
            event: event(ws, EventType::TimerStopped, 102),
        };
        assert_eq!(
            repo.start(
                Some(&bogus),
                &second,
                &[event(ws, EventType::TimerStarted, 103)]
            )
            .await
            .unwrap(),
            TimerWrite::Raced
        );

        assert_eq!(
            count(&db, "SELECT count(*) AS n FROM time_entries").await,
            1
        );
        assert_eq!(count(&db, "SELECT count(*) AS n FROM events").await, 1);
        assert_eq!(
            count(
                &db,
                "SELECT count(*) AS n FROM time_entries WHERE end_at IS NULL"
            )
            .await,
            1
        );

        // The real stop-then-start commits both, events included.
        let stop = TimerStop {
            entry: first.id,
            end: datetime!(2026-03-01 10:00 UTC),
            event: event(ws, EventType::TimerStopped, 104),
        };
        assert_eq!(
            repo.start(
                Some(&stop),
                &second,
                &[event(ws, EventType::TimerStarted, 105)]
            )
            .await
            .unwrap(),
            TimerWrite::Applied
        );
        assert_eq!(count(&db, "SELECT count(*) AS n FROM events").await, 3);
        assert_eq!(repo.running(user).await.unwrap().unwrap().id, second.id);
        // Stopping the already stopped first timer again: raced, no event.
        assert_eq!(repo.stop(&stop).await.unwrap(), TimerWrite::Raced);
        assert_eq!(count(&db, "SELECT count(*) AS n FROM events").await, 3);
    }

    #[tokio::test]
    async fn the_database_refuses_partial_seconds_and_a_second_running_timer() {
        let (db, _repo, ws, user) = setup().await;
        let pool = db.pool();
        let mut conn = pool.get().await.unwrap();
        let insert = |id: u128, start: &str| {
            format!(
                "INSERT INTO time_entries (id, workspace_id, user_id, source, start_at, created_at, updated_at) \
             VALUES ('{}', '{ws}', '{user}', 'timer', '{start}', now(), now())",
                Uuid::from_u128(id)
            )
        };
        diesel::sql_query(insert(1, "2026-03-01T09:00:00Z"))
            .execute(&mut conn)
            .await
            .unwrap();
        assert!(
            diesel::sql_query(insert(2, "2026-03-01T09:05:00Z"))
                .execute(&mut conn)
                .await
                .is_err(),
            "two running timers"
        );
        assert!(
            diesel::sql_query(insert(3, "2026-03-01T09:00:00.5Z"))
                .execute(&mut conn)
                .await
                .is_err(),
            "partial second"
        );
    }
}
