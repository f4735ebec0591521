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
    // One event queued for both before the revocation.
    for statement in [
        "INSERT INTO events (id, workspace_id, event_type, body, created_at) \
         VALUES ('00000000-0000-0000-0000-0000000000e1', $1, 'CLIENT_CREATED', '{}', now())",
        "INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, \
         next_attempt_at, created_at, updated_at) \
         SELECT '00000000-0000-0000-0000-0000000000e1', id, workspace_id, 'PENDING', now(), \
         now(), now() FROM webhook_subscriptions WHERE workspace_id = $1",
    ] {
        diesel::sql_query(statement)
            .bind::<diesel::sql_types::Uuid, _>(ws.id.0)
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
    // What was queued for the revoked key's subscription is cancelled, not left pending.
    let deliveries: Vec<Row> = diesel::sql_query(
        "SELECT subscription_id AS id, status FROM deliveries ORDER BY subscription_id",
    )
    .load(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        deliveries,
        vec![
            Row {
                id: "wh_aaaaaaaaaaaaaaaa".into(),
                status: "CANCELLED".into()
            },
            Row {
                id: "wh_bbbbbbbbbbbbbbbb".into(),
                status: "PENDING".into()
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

/// A client on `url`, its connection driven in the background.
async fn sql_client(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
}

/// The functions of the schema whose name starts with `timetrack_`.
async fn installed_functions(client: &tokio_postgres::Client) -> Vec<String> {
    client
        .query(
            "SELECT proname::text FROM pg_proc WHERE proname LIKE 'timetrack\\_%' ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[tokio::test]
async fn a_function_whose_text_changed_is_recreated_and_one_no_longer_defined_is_dropped() {
    let db = TestDatabase::new().await;
    let client = sql_client(db.url()).await;
    assert_eq!(
        installed_functions(&client).await,
        [
            "timetrack_claim_deliveries",
            "timetrack_record_and_claim",
            "timetrack_record_attempts"
        ]
    );
    // An older text of the claim (a body that claims nothing), and a function since removed.
    client
        .batch_execute(
            "CREATE OR REPLACE FUNCTION timetrack_claim_deliveries(timestamptz, timestamptz, \
             bigint, bigint) RETURNS TABLE (event_id uuid, subscription_id text, \
             workspace_id uuid, event_type text, body text, url text, secret text, \
             attempts integer, failing_since timestamptz) LANGUAGE sql AS \
             $$ SELECT NULL::uuid, NULL, NULL::uuid, NULL, NULL, NULL, NULL, 0, NULL::timestamptz \
             WHERE false $$; \
             UPDATE timetrack_functions SET sha256 = 'old' \
             WHERE signature LIKE 'timetrack_claim_deliveries(%'; \
             CREATE FUNCTION timetrack_retired() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$; \
             INSERT INTO timetrack_functions VALUES ('timetrack_retired()', 'x', now());",
        )
        .await
        .unwrap();
    assert_eq!(
        run_migrations(db.url()).await.unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(
        installed_functions(&client).await,
        [
            "timetrack_claim_deliveries",
            "timetrack_record_and_claim",
            "timetrack_record_attempts"
        ]
    );
    let language: String = client
        .query_one(
            "SELECT l.lanname::text FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang \
             WHERE p.proname = 'timetrack_claim_deliveries'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        language, "plpgsql",
        "the claim was re-created from its file"
    );
    let recorded: Vec<String> = client
        .query(
            "SELECT sha256 FROM timetrack_functions ORDER BY signature",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(recorded.len(), 3);
    assert!(recorded.iter().all(|sha| sha.len() == 64), "{recorded:?}");
}

#[tokio::test]
async fn a_database_from_before_the_squash_is_refused_with_what_to_do() {
    let db = TestDatabase::new().await;
    let admin = sql_client(&TestDatabase::server_url()).await;
    let name = format!("timetrack_presquash_{}", uuid::Uuid::new_v4().simple());
    admin
        .batch_execute(&format!("CREATE DATABASE \"{name}\""))
        .await
        .unwrap();
    let url = db
        .url()
        .replace(db.url().rsplit('/').next().unwrap(), &name);
    sql_client(&url)
        .await
        .batch_execute(
            "CREATE TABLE __diesel_schema_migrations (version varchar(50) PRIMARY KEY, \
             run_on timestamp NOT NULL DEFAULT now()); \
             INSERT INTO __diesel_schema_migrations (version) VALUES ('20261122000001'); \
             CREATE TABLE workspaces (id uuid PRIMARY KEY);",
        )
        .await
        .unwrap();
    let err = format!("{:#}", run_migrations(&url).await.unwrap_err());
    assert!(
        err.contains("squashed") && err.contains(".timetrack/") && err.contains("20261122000001"),
        "{err}"
    );
    admin
        .batch_execute(&format!("DROP DATABASE \"{name}\" WITH (FORCE)"))
        .await
        .unwrap();
}

#[tokio::test]
async fn health_probe_reports_a_reachable_database() {
    let db = TestDatabase::new().await;
    let probe = PgHealthProbe::new(db.pool(), Duration::from_secs(2));
    probe.check_database().await.unwrap();
}

/// After a burst, the pool hands out the connection returned last, so a lighter load stays on a
/// few warm backends instead of rotating through every connection the burst opened.
#[tokio::test]
async fn the_pool_reuses_the_connection_returned_last() {
    #[derive(diesel::QueryableByName)]
    struct Backend {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        pid: i32,
    }
    async fn backend(conn: &mut diesel_async::AsyncPgConnection) -> i32 {
        diesel::sql_query("SELECT pg_backend_pid() AS pid")
            .get_result::<Backend>(conn)
            .await
            .unwrap()
            .pid
    }
    let db = TestDatabase::new().await;
    let pool = db.pool();
    let mut burst = Vec::new();
    for _ in 0..3 {
        burst.push(pool.get().await.unwrap());
    }
    let mut pids = Vec::new();
    for conn in &mut burst {
        pids.push(backend(conn).await);
    }
    assert_eq!(
        pids.iter().collect::<std::collections::HashSet<_>>().len(),
        3
    );
    // Returned in order: the third one is the most recent.
    drop(burst);
    for _ in 0..5 {
        let mut conn = pool.get().await.unwrap();
        assert_eq!(backend(&mut conn).await, pids[2]);
    }
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
        DeliveryAnnouncer, PgApiKeyRepository, PgTimeEntryRepository, PgUserRepository,
        PgWorkspaceRepository,
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
        (
            db,
            PgTimeEntryRepository::new(pool, DeliveryAnnouncer::new()),
            ws.id,
            user.id,
        )
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

mod queue {
    //! The delivery queue: leased claims and recorded outcomes.

    use diesel_async::RunQueryDsl;
    use time::macros::datetime;
    use time::{Duration, OffsetDateTime};
    use timetrack_adapters::postgres::PgDeliveryQueue;
    use timetrack_adapters::testing::TestDatabase;
    use timetrack_domain::DomainResult;
    use timetrack_domain::delivery::{
        AttemptOutcome, AttemptRecord, AttemptReport, ClaimedDelivery, FailureReason, NextStep,
        QueueStats,
    };
    use timetrack_domain::ports::DeliveryQueue;

    const T0: OffsetDateTime = datetime!(2026-03-01 09:00 UTC);

    /// A round with nothing to record: a plain claim.
    trait Claim {
        async fn claim(
            &self,
            now: OffsetDateTime,
            lease_until: OffsetDateTime,
            limit: u32,
            per_subscription: u32,
        ) -> DomainResult<Vec<ClaimedDelivery>>;
    }

    impl Claim for PgDeliveryQueue {
        async fn claim(
            &self,
            now: OffsetDateTime,
            lease_until: OffsetDateTime,
            limit: u32,
            per_subscription: u32,
        ) -> DomainResult<Vec<ClaimedDelivery>> {
            self.record_and_claim(&[], now, lease_until, limit, per_subscription)
                .await
        }
    }

    async fn sql(db: &TestDatabase, statement: &str) {
        let pool = db.pool();
        let mut conn = pool.get().await.unwrap();
        diesel::sql_query(statement)
            .execute(&mut conn)
            .await
            .unwrap();
    }

    async fn text(db: &TestDatabase, query: &str) -> String {
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Text)]
            v: String,
        }
        let pool = db.pool();
        let mut conn = pool.get().await.unwrap();
        let rows: Vec<Row> = diesel::sql_query(query).load(&mut conn).await.unwrap();
        rows.into_iter().map(|r| r.v).collect::<Vec<_>>().join(",")
    }

    /// A workspace with one key, subscriptions `wh_a...` (ACTIVE) and `wh_b...` (DISABLED), and
    /// `events` events each with a pending delivery to both.
    async fn setup(events: u32) -> (TestDatabase, PgDeliveryQueue) {
        let db = TestDatabase::new().await;
        for statement in [
            "INSERT INTO workspaces (id, name, created_at) VALUES ('00000000-0000-0000-0000-0000000000a1', 'W', now())".to_owned(),
            "INSERT INTO users (id, name, email, created_at) VALUES ('00000000-0000-0000-0000-0000000000b1', 'U', 'u@example.com', now())".to_owned(),
            "INSERT INTO memberships VALUES ('00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000b1', now())".to_owned(),
            "INSERT INTO api_keys (id, workspace_id, user_id, key_prefix, key_hash, created_at) VALUES ('00000000-0000-0000-0000-0000000000c1', '00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000b1', 'tt_x', decode(repeat('00', 32), 'hex'), now())".to_owned(),
            "INSERT INTO webhook_subscriptions (id, workspace_id, user_id, api_key_id, url, events, secret, status, created_at, updated_at) VALUES \
             ('wh_aaaaaaaaaaaaaaaaaaaaaaaa', '00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-0000000000c1', 'https://a.example.com/h', ARRAY['CLIENT_CREATED'], 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'ACTIVE', now(), now()), \
             ('wh_bbbbbbbbbbbbbbbbbbbbbbbb', '00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-0000000000c1', 'https://b.example.com/h', ARRAY['CLIENT_CREATED'], 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'DISABLED', now(), now())".to_owned(),
            format!("INSERT INTO events (id, workspace_id, event_type, body, created_at) SELECT ('00000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid, '00000000-0000-0000-0000-0000000000a1', 'CLIENT_CREATED', '{{\"n\":' || g || '}}', '{T0}' FROM generate_series(1, {events}) g"),
            format!("INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, next_attempt_at, created_at, updated_at) SELECT e.id, s.id, e.workspace_id, 'PENDING', '{T0}', '{T0}', '{T0}' FROM events e CROSS JOIN webhook_subscriptions s"),
        ] {
            sql(&db, &statement).await;
        }
        let queue = PgDeliveryQueue::new(db.pool(), timetrack_adapters::SecretBox::ephemeral());
        (db, queue)
    }

    fn record(next: NextStep, outcome: AttemptOutcome) -> AttemptRecord {
        AttemptRecord {
            started_at: T0 + Duration::seconds(1),
            report: AttemptReport {
                outcome,
                latency: Duration::milliseconds(42),
                response_excerpt: Some("ok".into()),
            },
            next,
            disable_subscription: false,
        }
    }

    #[tokio::test]
    async fn stats_count_pending_deliveries_of_active_subscriptions_by_state() {
        let (_db, queue) = setup(3).await;
        let stats = queue.stats(T0 + Duration::seconds(10)).await.unwrap();
        assert_eq!(
            stats,
            QueueStats {
                due: 3,
                scheduled: 0,
                in_flight: 0,
                oldest_due_age: Duration::seconds(10),
            },
            "the disabled subscription's deliveries are not counted"
        );
        assert_eq!(
            queue.stats(T0 - Duration::seconds(1)).await.unwrap(),
            QueueStats {
                scheduled: 3,
                ..QueueStats::default()
            }
        );
        let claimed = queue
            .claim(T0, T0 + Duration::seconds(30), 2, 100)
            .await
            .unwrap();
        assert_eq!(claimed.len(), 2);
        queue
            .record(
                &claimed[0],
                &record(
                    NextStep::RetryAt(T0 + Duration::hours(1)),
                    AttemptOutcome::Rejected {
                        status: 500,
                        retry_after: None,
                    },
                ),
            )
            .await
            .unwrap();
        assert_eq!(
            queue.stats(T0 + Duration::seconds(5)).await.unwrap(),
            QueueStats {
                due: 1,
                scheduled: 1,
                in_flight: 1,
                oldest_due_age: Duration::seconds(5),
            }
        );
        // An expired lease makes its delivery due again.
        assert_eq!(
            queue.stats(T0 + Duration::seconds(40)).await.unwrap(),
            QueueStats {
                due: 2,
                scheduled: 1,
                in_flight: 0,
                oldest_due_age: Duration::seconds(40),
            }
        );
    }

    #[tokio::test]
    async fn claims_are_leased_due_and_for_active_subscriptions_only() {
        let (_db, queue) = setup(1).await;
        assert!(
            queue
                .claim(
                    T0 - Duration::seconds(1),
                    T0 + Duration::seconds(30),
                    10,
                    100
                )
                .await
                .unwrap()
                .is_empty(),
            "not yet due"
        );
        let claimed = queue
            .claim(T0, T0 + Duration::seconds(30), 10, 100)
            .await
            .unwrap();
        assert_eq!(
            claimed.len(),
            1,
            "the disabled subscription's delivery is not claimed"
        );
        let c = &claimed[0];
        assert_eq!(
            (
                c.subscription_id.as_str(),
                c.url.as_str(),
                c.body.as_str(),
                c.attempts
            ),
            (
                "wh_aaaaaaaaaaaaaaaaaaaaaaaa",
                "https://a.example.com/h",
                r#"{"n":1}"#,
                0
            )
        );
        assert!(
            queue
                .claim(
                    T0 + Duration::seconds(10),
                    T0 + Duration::seconds(60),
                    10,
                    100
                )
                .await
                .unwrap()
                .is_empty(),
            "leased"
        );
        let again = queue
            .claim(
                T0 + Duration::seconds(30),
                T0 + Duration::seconds(90),
                10,
                100,
            )
            .await
            .unwrap();
        assert_eq!(again.len(), 1, "an expired lease is claimable again");
    }

    #[tokio::test]
    async fn a_subscription_whose_key_is_revoked_is_never_claimed_even_while_active() {
        // As if a subscribe had raced the revocation: the subscription is still ACTIVE.
        let (db, queue) = setup(1).await;
        sql(&db, "UPDATE api_keys SET revoked_at = now()").await;
        let claimed = queue
            .claim(T0, T0 + Duration::seconds(30), 10, 100)
            .await
            .unwrap();
        assert!(claimed.is_empty(), "{claimed:?}");
    }

    #[tokio::test]
    async fn a_subscription_never_has_more_than_its_cap_in_flight() {
        let (_db, queue) = setup(30).await;
        let first = queue
            .claim(T0, T0 + Duration::seconds(30), 100, 10)
            .await
            .unwrap();
        assert_eq!(first.len(), 10);
        assert!(
            queue
                .claim(T0, T0 + Duration::seconds(30), 100, 10)
                .await
                .unwrap()
                .is_empty(),
            "10 already in flight"
        );
        let first_id = first[0].clone();
        queue
            .record(
                &first_id,
                &record(NextStep::Done, AttemptOutcome::Delivered { status: 200 }),
            )
            .await
            .unwrap();
        assert_eq!(
            queue
                .claim(T0, T0 + Duration::seconds(30), 100, 10)
                .await
                .unwrap()
                .len(),
            1,
            "one slot freed"
        );
    }

    /// 20,000 more events of the setup's workspace (ids `...-0001-<n>`, after the setup's own),
    /// with no deliveries yet: the burst that grows the event log.
    async fn burst_of_events(db: &TestDatabase) {
        sql(db, "INSERT INTO events (id, workspace_id, event_type, body, created_at) SELECT ('00000000-0000-0000-0001-' || lpad(g::text, 12, '0'))::uuid, '00000000-0000-0000-0000-0000000000a1', 'CLIENT_CREATED', '{}', '2026-03-01 09:00Z' FROM generate_series(1, 20000) g").await;
    }

    /// The rows of `table` that `client`'s open transaction has read, scanned or fetched through
    /// an index.
    async fn rows_read(client: &tokio_postgres::Client, table: &str) -> i64 {
        client
            .query_one(
                "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) \
                 FROM pg_stat_xact_user_tables WHERE relname = $1",
                &[&table],
            )
            .await
            .unwrap()
            .get(0)
    }

    /// Runs the statement of PL/pgSQL function `function` (its one SQL statement, as the
    /// function runs it) on `arguments`, under `EXPLAIN (ANALYZE, BUFFERS)` with
    /// `plan_cache_mode` `mode`, in a transaction rolled back afterwards.
    async fn statement_cost(
        db: &TestDatabase,
        function: &str,
        mode: &str,
        arguments: &str,
    ) -> Cost {
        let (client, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        let driver = tokio::spawn(connection);
        let row = client
            .query_one(
                "SELECT prosrc, pg_get_function_identity_arguments(oid), \
                        coalesce(array_to_string(proconfig, ';'), '') \
                 FROM pg_proc WHERE proname = $1",
                &[&function],
            )
            .await
            .unwrap();
        let (source, types, config): (String, String, String) =
            (row.get(0), row.get(1), row.get(2));
        // The function's own settings, as it runs with them.
        let settings: String = config
            .split(';')
            .filter_map(|setting| setting.split_once('='))
            .map(|(name, value)| format!("SET LOCAL {name} = {value}; "))
            .collect();
        let body = source
            .split_once("BEGIN")
            .and_then(|(_, rest)| rest.rsplit_once("END"))
            .map(|(body, _)| {
                let body = body.trim();
                body.strip_prefix("RETURN QUERY")
                    .unwrap_or(body)
                    .trim()
                    .trim_end_matches(';')
            })
            .expect("the function is BEGIN <one statement> END");
        client
            .batch_execute(&format!(
                "BEGIN; {settings}SET LOCAL plan_cache_mode = {mode}; \
                 PREPARE measured({types}) AS {body}"
            ))
            .await
            .unwrap();
        let explained = client
            .simple_query(&format!(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE measured({arguments})"
            ))
            .await
            .unwrap();
        client.batch_execute("ROLLBACK").await.unwrap();
        drop(client);
        let _ = driver.await;
        let plan: serde_json::Value = explained
            .iter()
            .find_map(|message| match message {
                tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0),
                _ => None,
            })
            .and_then(|json| serde_json::from_str(json).ok())
            .expect("EXPLAIN gives one JSON row");
        let top = &plan[0]["Plan"];
        let blocks = |key: &str| top[key].as_u64().unwrap_or(0);
        Cost {
            rows: top["Actual Rows"].as_u64().unwrap(),
            deliveries_read: deliveries_read(top),
            buffers: blocks("Shared Hit Blocks") + blocks("Shared Read Blocks"),
        }
    }

    /// What one run of a statement cost.
    struct Cost {
        /// The rows of its top node.
        rows: u64,
        /// The rows of `deliveries` it read (see [`deliveries_read`]).
        deliveries_read: u64,
        /// The shared buffers it touched, each time it touched one.
        buffers: u64,
    }

    /// The rows of `deliveries` a plan node and its children read: those they returned and
    /// those their filters removed, on every loop.
    fn deliveries_read(node: &serde_json::Value) -> u64 {
        let count = |key: &str| node[key].as_u64().unwrap_or(0);
        let own = if node["Relation Name"] == "deliveries" {
            (count("Actual Rows") + count("Rows Removed by Filter")) * count("Actual Loops")
        } else {
            0
        };
        own + node["Plans"]
            .as_array()
            .map_or(0, |plans| plans.iter().map(deliveries_read).sum())
    }

    /// Arguments of `timetrack_record_attempts` for a success of each of `leased` at `at`.
    fn record_arguments(leased: &[ClaimedDelivery], at: OffsetDateTime) -> String {
        let n = leased.len();
        let column = |f: &dyn Fn(&ClaimedDelivery) -> String| {
            leased.iter().map(f).collect::<Vec<_>>().join(",")
        };
        let same = |value: &str| format!("array_fill({value}, ARRAY[{n}])");
        let at_sql = format!("'{at}'::timestamptz");
        [
            format!("'{{{}}}'", column(&|c| c.event_id.0.to_string())),
            format!(
                "'{{{}}}'",
                column(&|c| c.subscription_id.as_str().to_owned())
            ),
            same("1"),
            same(&at_sql),
            same("3"),
            same("200"),
            same("NULL::text"),
            same("NULL::text"),
            same("'DELIVERED'::text"),
            same(&at_sql),
            same(&at_sql),
            same("true"),
        ]
        .join(", ")
    }

    #[tokio::test]
    async fn queue_statements_cost_what_they_touch_even_when_the_statistics_say_it_is_empty() {
        // The queue is analyzed while empty (its usual state), then a burst arrives: the
        // statistics say nothing is pending while 6,000 deliveries are. Plans trusting them
        // once joined every pending delivery with a subquery re-run per row (seconds a claim),
        // and scanned every pending delivery to record a batch of attempts.
        let (db, queue) = setup(30_000).await;
        sql(
            &db,
            "ALTER TABLE deliveries SET (autovacuum_enabled = false)",
        )
        .await;
        sql(&db, "UPDATE deliveries SET status = 'DELIVERED'").await;
        sql(&db, "VACUUM (FULL, ANALYZE) deliveries").await;
        sql(&db, "UPDATE deliveries SET status = 'PENDING' WHERE event_id > '00000000-0000-0000-0000-000000027000'").await;
        assert_eq!(
            text(&db, "SELECT most_common_vals::text AS v FROM pg_stats WHERE tablename = 'deliveries' AND attname = 'status'").await,
            "{DELIVERED}",
            "the statistics are stale as intended"
        );
        let at = T0 + Duration::seconds(5);
        let claim = format!("'{at}', '{}', 100, 10", at + Duration::seconds(30));
        for mode in ["force_custom_plan", "force_generic_plan"] {
            let Cost {
                rows: claimed,
                deliveries_read: read,
                ..
            } = statement_cost(&db, "timetrack_claim_deliveries", mode, &claim).await;
            assert_eq!(claimed, 10, "{mode}: 10 in flight at most");
            assert!(
                read < 200,
                "{mode}: claiming 10 of 6,000 pending read {read} deliveries"
            );
        }
        // Ten leased deliveries, whose outcomes the record statement then writes.
        let leased = queue
            .claim(at, at + Duration::seconds(30), 10, 10)
            .await
            .unwrap();
        assert_eq!(leased.len(), 10);
        let record = record_arguments(&leased, at);
        for mode in ["force_custom_plan", "force_generic_plan"] {
            let read = statement_cost(&db, "timetrack_record_attempts", mode, &record)
                .await
                .deliveries_read;
            assert!(
                read < 200,
                "{mode}: recording 10 attempts read {read} deliveries"
            );
        }
    }

    #[tokio::test]
    async fn recording_on_a_connection_that_first_recorded_into_a_tiny_queue_finds_rows_by_key() {
        // A connection's first rounds meet a queue that holds a row or two (a new installation,
        // or one just emptied by housekeeping and vacuumed), then a burst grows it. A plan made
        // then and kept for the connection drove the join from deliveries and read all of
        // deliveries_subscription_idx for every batch (about 10 ms a round at 5,000 rows).
        let (db, queue) = setup(1).await;
        sql(
            &db,
            "ALTER TABLE deliveries SET (autovacuum_enabled = false)",
        )
        .await;
        sql(&db, "VACUUM (ANALYZE) deliveries").await;
        let at = T0 + Duration::seconds(5);
        let leased = queue
            .claim(at, at + Duration::seconds(30), 10, 10)
            .await
            .unwrap();
        assert_eq!(leased.len(), 1);
        let record = format!(
            "SELECT timetrack_record_attempts({})",
            record_arguments(&leased, at)
        );
        let (client, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        let driver = tokio::spawn(connection);
        // More than the five custom plans after which a kept plan may become generic.
        for _ in 0..10 {
            client.batch_execute(&record).await.unwrap();
        }
        burst_of_events(&db).await;
        sql(&db, "INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, attempts, next_attempt_at, created_at, updated_at) SELECT id, 'wh_aaaaaaaaaaaaaaaaaaaaaaaa', workspace_id, 'DELIVERED', 1, created_at, created_at, created_at FROM events WHERE id > '00000000-0000-0000-0001-000000000000'").await;
        client.batch_execute("BEGIN").await.unwrap();
        client.batch_execute(&record).await.unwrap();
        let read = rows_read(&client, "deliveries").await;
        client.batch_execute("ROLLBACK").await.unwrap();
        drop(client);
        let _ = driver.await;
        assert!(
            read < 100,
            "recording one attempt among 20,000 deliveries read {read} of them"
        );
    }

    #[tokio::test]
    async fn a_claim_planned_on_statistics_of_a_tiny_queue_still_claims_by_key_in_a_burst() {
        // The claim's statistics often come from a queue and an event log that were nearly
        // empty (a new installation, a quiet spell after housekeeping, a benchmark that cleared
        // its history), and a burst grows both before anything analyzes them again. A plan of an
        // earlier claim, made on such statistics and kept, read the whole primary key of events
        // for every claimed delivery (305,474 buffers for a claim of 54). Three starting points:
        // analyzed with one pending delivery, analyzed empty, and never analyzed; the connection
        // claims ten times on them, then once after the burst.
        for (start, analyzed) in [(1, true), (0, true), (1, false)] {
            let (db, _queue) = setup(start).await;
            for table in ["deliveries", "events"] {
                sql(
                    &db,
                    &format!("ALTER TABLE {table} SET (autovacuum_enabled = false)"),
                )
                .await;
                if analyzed {
                    sql(&db, &format!("VACUUM (ANALYZE) {table}")).await;
                }
            }
            let at = T0 + Duration::seconds(5);
            let claim = format!(
                "SELECT count(*) FROM timetrack_claim_deliveries('{at}', '{}', 100, 10)",
                at + Duration::seconds(30)
            );
            let (client, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
                .await
                .unwrap();
            let driver = tokio::spawn(connection);
            for _ in 0..10 {
                client
                    .batch_execute(&format!("BEGIN; {claim}; ROLLBACK"))
                    .await
                    .unwrap();
            }
            burst_of_events(&db).await;
            sql(&db, "INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, attempts, next_attempt_at, created_at, updated_at) SELECT e.id, s.id, e.workspace_id, 'PENDING', 0, e.created_at, e.created_at, e.created_at FROM events e CROSS JOIN webhook_subscriptions s WHERE e.id > '00000000-0000-0000-0001-000000000000'").await;
            client.batch_execute("BEGIN").await.unwrap();
            let claimed: i64 = client.query_one(&claim, &[]).await.unwrap().get(0);
            let mut read = Vec::new();
            for table in ["deliveries", "events"] {
                read.push((table, rows_read(&client, table).await));
            }
            client.batch_execute("ROLLBACK").await.unwrap();
            drop(client);
            let _ = driver.await;
            let first = format!(
                "first claim on {start} pending, {}",
                if analyzed {
                    "analyzed"
                } else {
                    "never analyzed"
                }
            );
            assert_eq!(claimed, 10, "{first}: 10 in flight at most");
            for (table, rows) in read {
                assert!(
                    rows < 200,
                    "{first}: claiming 10 of 40,000 pending read {rows} rows of {table}"
                );
            }
        }
    }

    #[tokio::test]
    async fn the_queue_functions_are_never_compiled_just_in_time() {
        // A kept plan is costed without the call's values, and once a large queue was analyzed
        // the claim's estimate passed `jit_above_cost`: every claim compiled 61 expressions
        // first, about 20 ms a round, and delivery fell seconds behind. Here every statement of
        // the session passes the threshold, and `auto_explain` reports each plan, nested ones
        // included, as a notice.
        use futures_util::StreamExt;
        let (db, queue) = setup(20).await;
        let (client, mut connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let driver = tokio::spawn(async move {
            let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(Ok(message)) = messages.next().await {
                if let tokio_postgres::AsyncMessage::Notice(notice) = message {
                    let _ = tx.send(notice.message().to_owned());
                }
            }
        });
        let plans = |rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>| {
            let mut all = Vec::new();
            while let Ok(plan) = rx.try_recv() {
                all.push(plan);
            }
            all
        };
        client
            .batch_execute(
                "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; \
                 SET auto_explain.log_nested_statements = on; SET auto_explain.log_analyze = on; \
                 SET client_min_messages = log; SET jit_above_cost = 0",
            )
            .await
            .unwrap();
        client
            .batch_execute("SELECT count(*) FROM deliveries WHERE attempts >= 0")
            .await
            .unwrap();
        assert!(
            plans(&mut rx).iter().any(|plan| plan.contains("JIT:")),
            "this server compiles an ordinary statement here (else the test could not fail)"
        );
        let at = T0 + Duration::seconds(5);
        let leased = queue
            .claim(at, at + Duration::seconds(30), 10, 10)
            .await
            .unwrap();
        let calls = [
            format!(
                "SELECT count(*) FROM timetrack_claim_deliveries('{at}', '{}', 100, 10)",
                at + Duration::seconds(30)
            ),
            format!(
                "SELECT timetrack_record_attempts({})",
                record_arguments(&leased, at)
            ),
        ];
        for call in calls {
            for _ in 0..3 {
                client
                    .batch_execute(&format!("BEGIN; {call}; ROLLBACK"))
                    .await
                    .unwrap();
            }
            // The statements inside the function, not the call itself (this session's own
            // statement, compiled here as any would be).
            let inside: Vec<String> = plans(&mut rx)
                .into_iter()
                .filter(|plan| !plan.contains(&call))
                .collect();
            assert!(!inside.is_empty(), "the plans inside {call} were reported");
            assert!(
                inside.iter().all(|plan| !plan.contains("JIT:")),
                "a statement inside {call} was compiled just in time: {inside:#?}"
            );
        }
        drop(client);
        let _ = driver.await;
    }

    #[tokio::test]
    async fn a_held_snapshot_makes_a_claim_walk_its_dead_entries_once_not_three_times() {
        // While a snapshot older than the deliveries' last changes is held, the index entries of
        // their earlier versions cannot be marked dead, and a scan meeting them visits the heap
        // for each. 2,000 deliveries of one subscription were leased and delivered under such a
        // snapshot (two dead entries each in the pending index, one in the leased index); 10
        // newer ones are due. Finding the subscription walks the dead entries once; counting
        // its leases and picking its due deliveries start at its oldest live one (they walked
        // them again, twice: 8,286 buffers against 4,251 when this was written).
        let (db, queue) = setup(2_010).await;
        sql(
            &db,
            "ALTER TABLE deliveries SET (autovacuum_enabled = false)",
        )
        .await;
        sql(
            &db,
            &format!(
                "UPDATE deliveries SET next_attempt_at = '{T0}'::timestamptz \
                 + right(event_id::text, 12)::int * interval '1 millisecond'"
            ),
        )
        .await;
        sql(&db, "VACUUM deliveries").await;
        let (holder, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        let driver = tokio::spawn(connection);
        holder
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM deliveries")
            .await
            .unwrap();
        let delivered = "subscription_id = 'wh_aaaaaaaaaaaaaaaaaaaaaaaa' \
                         AND right(event_id::text, 12)::int <= 2000";
        sql(
            &db,
            &format!(
                "UPDATE deliveries SET lease_expires_at = '{}' WHERE {delivered}",
                T0 + Duration::days(1)
            ),
        )
        .await;
        sql(
            &db,
            &format!(
                "UPDATE deliveries SET status = 'DELIVERED', lease_expires_at = NULL \
                 WHERE {delivered}"
            ),
        )
        .await;

        let at = T0 + Duration::hours(1);
        let claim = format!("'{at}', '{}', 100, 10", at + Duration::seconds(30));
        // As the function runs it: with the plan kept for the connection (its `plan_cache_mode`).
        let cost = statement_cost(
            &db,
            "timetrack_claim_deliveries",
            "force_generic_plan",
            &claim,
        )
        .await;
        assert_eq!(cost.rows, 10);
        assert!(
            cost.buffers < 6_000,
            "claiming 10 behind 2,000 delivered under a held snapshot touched {} buffers",
            cost.buffers
        );
        // And it claims the right ones, then counts them in flight.
        let claimed = queue
            .claim(at, at + Duration::seconds(30), 100, 10)
            .await
            .unwrap();
        // The event ids end in their number, in decimal.
        let mut numbers: Vec<u32> = claimed
            .iter()
            .map(|c| c.event_id.0.to_string()[24..].parse().unwrap())
            .collect();
        numbers.sort_unstable();
        assert_eq!(numbers, (2_001..=2_010).collect::<Vec<u32>>());
        assert!(
            queue
                .claim(at, at + Duration::seconds(30), 100, 10)
                .await
                .unwrap()
                .is_empty(),
            "10 in flight"
        );
        holder.batch_execute("ROLLBACK").await.unwrap();
        drop(holder);
        let _ = driver.await;
    }

    #[tokio::test]
    async fn a_lease_taken_by_a_process_whose_clock_runs_ahead_still_counts() {
        // Another process, its clock an hour ahead, leased a delivery that is due an hour from
        // now by this one's clock: it is in flight all the same.
        let (db, queue) = setup(12).await;
        sql(
            &db,
            &format!(
                "UPDATE deliveries SET next_attempt_at = '{}', lease_expires_at = '{}' \
                 WHERE subscription_id = 'wh_aaaaaaaaaaaaaaaaaaaaaaaa' \
                 AND event_id = '00000000-0000-0000-0000-000000000001'",
                T0 + Duration::hours(1),
                T0 + Duration::hours(2)
            ),
        )
        .await;
        let claimed = queue
            .claim(
                T0 + Duration::seconds(1),
                T0 + Duration::seconds(31),
                100,
                10,
            )
            .await
            .unwrap();
        assert_eq!(claimed.len(), 9, "one of the 10 slots is taken");
    }

    #[tokio::test]
    async fn concurrent_claims_never_share_a_delivery() {
        let (_db, queue) = setup(40).await;
        let (a, b) = tokio::join!(
            queue.claim(T0, T0 + Duration::seconds(30), 25, 100),
            queue.claim(T0, T0 + Duration::seconds(30), 25, 100),
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(a.len() + b.len(), 40);
        assert!(a.iter().all(|x| b.iter().all(|y| x.event_id != y.event_id)));
    }

    #[tokio::test]
    async fn outcomes_move_the_delivery_and_the_failure_clock() {
        let (db, queue) = setup(2).await;
        let claimed = queue
            .claim(T0, T0 + Duration::seconds(30), 10, 100)
            .await
            .unwrap();
        let retry_at = T0 + Duration::minutes(5);
        let failed = AttemptOutcome::Failed {
            reason: FailureReason::Timeout,
            detail: "15 s".into(),
        };
        queue
            .record(&claimed[0], &record(NextStep::RetryAt(retry_at), failed))
            .await
            .unwrap();
        queue
            .record(
                &claimed[1],
                &record(NextStep::Done, AttemptOutcome::Delivered { status: 204 }),
            )
            .await
            .unwrap();
        assert_eq!(
            text(&db, "SELECT status || ':' || attempts || ':' || coalesce(last_status_code::text, '-') || ':' || coalesce(last_error, '-') AS v FROM deliveries WHERE subscription_id LIKE 'wh_a%' ORDER BY event_id").await,
            "PENDING:1:-:timeout: 15 s,DELIVERED:1:204:-"
        );
        assert_eq!(
            text(&db, "SELECT count(*)::text AS v FROM delivery_attempts").await,
            "2"
        );
        // The success after the failure cleared the clock (both recorded in order: fail, then ok).
        assert_eq!(text(&db, "SELECT coalesce(failing_since::text, 'none') AS v FROM webhook_subscriptions WHERE id LIKE 'wh_a%'").await, "none");
        assert!(
            queue
                .claim(
                    retry_at - Duration::seconds(1),
                    retry_at + Duration::seconds(30),
                    10,
                    100
                )
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            queue
                .claim(retry_at, retry_at + Duration::seconds(30), 10, 100)
                .await
                .unwrap()[0]
                .attempts,
            1
        );
    }

    #[tokio::test]
    async fn an_attempt_recorded_after_its_delivery_was_cancelled_leaves_it_cancelled() {
        let (db, queue) = setup(1).await;
        let claimed = queue
            .claim(T0, T0 + Duration::seconds(30), 10, 100)
            .await
            .unwrap();
        // Cancelled while in flight (its subscription deleted, or its key revoked).
        sql(&db, "UPDATE deliveries SET status = 'CANCELLED', lease_expires_at = NULL WHERE subscription_id LIKE 'wh_a%'").await;
        queue
            .record(
                &claimed[0],
                &record(NextStep::Done, AttemptOutcome::Delivered { status: 200 }),
            )
            .await
            .unwrap();
        assert_eq!(
            text(&db, "SELECT status || ':' || attempts AS v FROM deliveries WHERE subscription_id LIKE 'wh_a%'").await,
            "CANCELLED:0"
        );
        assert_eq!(
            text(&db, "SELECT count(*)::text AS v FROM delivery_attempts").await,
            "1",
            "the attempt itself is logged"
        );
    }

    #[tokio::test]
    async fn one_round_records_attempts_and_refills_the_slots_they_freed() {
        let (db, queue) = setup(30).await;
        let lease = T0 + Duration::seconds(30);
        let first = queue
            .record_and_claim(&[], T0, lease, 100, 10)
            .await
            .unwrap();
        assert_eq!(first.len(), 10, "an empty round is a plain claim");
        let delivered = record(NextStep::Done, AttemptOutcome::Delivered { status: 200 });
        let done: Vec<_> = first[..3]
            .iter()
            .map(|d| (d.clone(), delivered.clone()))
            .collect();
        let next = queue
            .record_and_claim(&done, T0, lease, 100, 10)
            .await
            .unwrap();
        assert_eq!(next.len(), 3, "the three slots just freed are refilled");
        assert!(
            next.iter()
                .all(|n| first.iter().all(|f| f.event_id != n.event_id)),
            "never a delivery already claimed"
        );
        assert_eq!(
            text(&db, "SELECT status || ':' || count(*) AS v FROM deliveries WHERE subscription_id LIKE 'wh_a%' GROUP BY status ORDER BY status").await,
            "DELIVERED:3,PENDING:27"
        );
        assert_eq!(
            text(&db, "SELECT count(*)::text AS v FROM delivery_attempts").await,
            "3"
        );
        assert!(
            queue
                .record_and_claim(&[], T0, lease, 100, 10)
                .await
                .unwrap()
                .is_empty(),
            "10 in flight again"
        );
        let failed = record(
            NextStep::RetryAt(T0 + Duration::minutes(5)),
            AttemptOutcome::Failed {
                reason: FailureReason::Timeout,
                detail: "15 s".into(),
            },
        );
        let recorded_only = queue
            .record_and_claim(&[(next[0].clone(), failed)], T0, lease, 0, 10)
            .await
            .unwrap();
        assert!(recorded_only.is_empty(), "limit 0 records only");
        assert_eq!(
            text(&db, "SELECT count(*)::text AS v FROM deliveries WHERE lease_expires_at IS NOT NULL AND status = 'PENDING'").await,
            "9"
        );
    }

    #[tokio::test]
    async fn a_round_refuses_an_attempt_that_ends_its_subscription_and_changes_nothing() {
        let (db, queue) = setup(3).await;
        let lease = T0 + Duration::seconds(30);
        let claimed = queue.record_and_claim(&[], T0, lease, 1, 10).await.unwrap();
        let gone = record(
            NextStep::Unsubscribe,
            AttemptOutcome::Rejected {
                status: 410,
                retry_after: None,
            },
        );
        let mut failing = record(
            NextStep::RetryAt(T0 + Duration::minutes(5)),
            AttemptOutcome::Rejected {
                status: 500,
                retry_after: None,
            },
        );
        failing.disable_subscription = true;
        for ending in [gone, failing] {
            assert!(
                queue
                    .record_and_claim(&[(claimed[0].clone(), ending)], T0, lease, 10, 10)
                    .await
                    .is_err()
            );
        }
        assert_eq!(
            text(&db, "SELECT (SELECT count(*) FROM delivery_attempts) || ':' || (SELECT count(*) FROM deliveries WHERE lease_expires_at IS NOT NULL) || ':' || (SELECT status FROM webhook_subscriptions WHERE id LIKE 'wh_a%') AS v").await,
            "0:1:ACTIVE",
            "nothing recorded, nothing more claimed, the subscription untouched"
        );
    }

    #[tokio::test]
    async fn a_round_commits_asynchronously_and_only_its_own_transaction() {
        let (db, _queue) = setup(1).await;
        let pool = db.pool();
        let mut conn = pool.get().await.unwrap();
        #[derive(diesel::QueryableByName)]
        struct Setting {
            #[diesel(sql_type = diesel::sql_types::Text)]
            synchronous_commit: String,
        }
        let round = format!(
            "SELECT count(*) FROM timetrack_record_and_claim('{{}}', '{{}}', '{{}}', '{{}}', '{{}}', \
             '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', '{T0}', '{}', 10, 10)",
            T0 + Duration::seconds(30)
        );
        let mut seen = Vec::new();
        // The test cluster itself runs with it off: the session asks for it on first.
        for statement in [
            "SET synchronous_commit = on",
            "BEGIN",
            round.as_str(),
            "SHOW synchronous_commit",
            "COMMIT",
            "SHOW synchronous_commit",
        ] {
            if statement.starts_with("SHOW") {
                let setting: Setting = diesel::sql_query(statement)
                    .get_result(&mut conn)
                    .await
                    .unwrap();
                seen.push(setting.synchronous_commit);
            } else {
                diesel::sql_query(statement)
                    .execute(&mut conn)
                    .await
                    .unwrap();
            }
        }
        assert_eq!(
            seen,
            ["off", "on"],
            "the round's transaction commits without waiting for its flush; the session is unchanged"
        );
    }

    #[tokio::test]
    async fn a_410_deletes_the_subscription_and_cancels_its_queue() {
        let (db, queue) = setup(3).await;
        let claimed = queue
            .claim(T0, T0 + Duration::seconds(30), 1, 100)
            .await
            .unwrap();
        queue
            .record(
                &claimed[0],
                &record(
                    NextStep::Unsubscribe,
                    AttemptOutcome::Rejected {
                        status: 410,
                        retry_after: None,
                    },
                ),
            )
            .await
            .unwrap();
        assert_eq!(
            text(
                &db,
                "SELECT status AS v FROM webhook_subscriptions WHERE id LIKE 'wh_a%'"
            )
            .await,
            "DELETED"
        );
        assert_eq!(text(&db, "SELECT string_agg(status, ',' ORDER BY status) AS v FROM deliveries WHERE subscription_id LIKE 'wh_a%'").await, "CANCELLED,CANCELLED,FAILED");
        assert_eq!(
            text(&db, "SELECT action || ':' || reason AS v FROM audit_log").await,
            "webhook.deleted:410 Gone from the receiver"
        );
        assert!(
            queue
                .claim(T0 + Duration::hours(1), T0 + Duration::hours(2), 10, 100)
                .await
                .unwrap()
                .is_empty()
        );
    }

    #[tokio::test]
    async fn a_subscription_failing_for_five_days_is_disabled_and_its_queue_cancelled() {
        let (db, queue) = setup(2).await;
        let claimed = queue
            .claim(T0, T0 + Duration::seconds(30), 1, 100)
            .await
            .unwrap();
        let failed = AttemptOutcome::Rejected {
            status: 500,
            retry_after: None,
        };
        let mut attempt = record(NextStep::GiveUp, failed);
        attempt.disable_subscription = true;
        queue.record(&claimed[0], &attempt).await.unwrap();
        assert_eq!(
            text(
                &db,
                "SELECT status AS v FROM webhook_subscriptions WHERE id LIKE 'wh_a%'"
            )
            .await,
            "DISABLED"
        );
        assert_eq!(text(&db, "SELECT string_agg(status, ',' ORDER BY status) AS v FROM deliveries WHERE subscription_id LIKE 'wh_a%'").await, "CANCELLED,FAILED");
        assert_eq!(
            text(&db, "SELECT action AS v FROM audit_log").await,
            "webhook.disabled"
        );
    }

    #[tokio::test]
    async fn housekeeping_removes_what_outlived_its_retention_and_keeps_the_rest() {
        use timetrack_adapters::postgres::PgHousekeeping;
        use timetrack_domain::ports::Housekeeping;
        let (db, queue) = setup(3).await;
        // Event 1: old and final; event 2: old but still pending; event 3: recent and final.
        sql(&db, "UPDATE events SET created_at = now() - interval '8 days' WHERE id IN ('00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000002')").await;
        sql(&db, "UPDATE events SET created_at = now() - interval '6 days' WHERE id = '00000000-0000-0000-0000-000000000003'").await;
        sql(&db, "UPDATE deliveries SET status = 'DELIVERED' WHERE event_id IN ('00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000003')").await;
        sql(&db, "UPDATE deliveries SET status = 'CANCELLED' WHERE event_id = '00000000-0000-0000-0000-000000000002' AND subscription_id LIKE 'wh_b%'").await;
        let claimed = queue
            .claim(T0, T0 + Duration::seconds(30), 100, 100)
            .await
            .unwrap();
        assert_eq!(
            claimed.len(),
            1,
            "only event 2's active delivery is pending"
        );
        sql(&db, "INSERT INTO idempotency_keys (api_key_id, key, fingerprint, created_at) VALUES \
                  ('00000000-0000-0000-0000-0000000000c1', 'old', decode(repeat('00', 32), 'hex'), now() - interval '25 hours'), \
                  ('00000000-0000-0000-0000-0000000000c1', 'new', decode(repeat('00', 32), 'hex'), now())").await;
        sql(&db, "INSERT INTO rate_limit_hits (key, at) VALUES ('k', now() - interval '2 minutes'), ('k', now())").await;

        let purged = PgHousekeeping::new(db.pool())
            .purge(OffsetDateTime::now_utc(), Duration::days(7))
            .await
            .unwrap();
        assert_eq!(
            (
                purged.events,
                purged.idempotency_keys,
                purged.rate_limit_hits
            ),
            (1, 1, 1)
        );
        assert_eq!(
            text(
                &db,
                "SELECT string_agg(right(id::text, 1), ',' ORDER BY id) AS v FROM events"
            )
            .await,
            "2,3"
        );
        assert_eq!(
            text(&db, "SELECT count(*)::text AS v FROM deliveries").await,
            "4"
        );
        assert_eq!(
            text(
                &db,
                "SELECT string_agg(key, ',') AS v FROM idempotency_keys"
            )
            .await,
            "new"
        );
        assert_eq!(
            text(&db, "SELECT count(*)::text AS v FROM rate_limit_hits").await,
            "1"
        );
    }
}

mod client_search {
    use diesel::QueryableByName;
    use diesel::sql_types::{BigInt, Text, Uuid as SqlUuid};
    use diesel_async::AsyncPgConnection;
    use timetrack_adapters::postgres::{DeliveryAnnouncer, PgClientRepository};
    use timetrack_adapters::{SearchSlots, SlottedSearches};
    use timetrack_domain::DomainResult;
    use timetrack_domain::model::Client;
    use timetrack_domain::ports::ClientRepository;

    use super::*;

    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }

    #[derive(QueryableByName)]
    struct Setting {
        #[diesel(sql_type = Text)]
        setting: String,
    }

    #[derive(QueryableByName)]
    struct Plans {
        #[diesel(sql_type = BigInt)]
        statements: i64,
        #[diesel(sql_type = BigInt)]
        generic: i64,
        #[diesel(sql_type = BigInt)]
        custom: i64,
    }

    /// Scans of the trigram index so far, as PostgreSQL counts them (a backend reports its
    /// counts when idle or when it ends).
    async fn trigram_scans(db: &TestDatabase) -> i64 {
        let mut conn = db.pool().get().await.unwrap();
        let count: Count = diesel::sql_query(
            "SELECT idx_scan AS n FROM pg_stat_user_indexes \
             WHERE indexrelname = 'clients_workspace_name_trgm_idx'",
        )
        .get_result(&mut conn)
        .await
        .unwrap();
        count.n
    }

    /// The trigram index's scans since `before`: once they reach `expected` (or after ten
    /// seconds); when none is expected, after 1.5 s, time for a backend to report a scan that
    /// should not be (reports arrive within about 0.3 s here).
    async fn trigram_scans_since(db: &TestDatabase, before: i64, expected: i64) -> i64 {
        if expected == 0 {
            tokio::time::sleep(Duration::from_millis(1_500)).await;
            return trigram_scans(db).await - before;
        }
        let mut after = trigram_scans(db).await;
        for _ in 0..100 {
            if after - before >= expected {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            after = trigram_scans(db).await;
        }
        after - before
    }

    /// Inserts clients into `ws` named by `name(i)` for `i` in `1..=count`, one second apart
    /// (the highest `i` newest), then analyzes the table.
    async fn insert_named(f: &Fixture, ws: WorkspaceId, count: i32, name_sql: &str) {
        let mut conn = f.db.pool().get().await.unwrap();
        diesel::sql_query(format!(
            "INSERT INTO clients (id, workspace_id, name, name_lower, type, status, currency, \
                                  created_at, updated_at) \
             SELECT gen_random_uuid(), $1, n, lower(n), 'company', 'active', 'USD', \
                    timestamptz '2026-01-01' + i * interval '1 second', \
                    timestamptz '2026-01-01' + i * interval '1 second' \
             FROM (SELECT i, {name_sql} FROM generate_series(1, $2) i) AS t(i, n)"
        ))
        .bind::<SqlUuid, _>(ws.0)
        .bind::<diesel::sql_types::Integer, _>(count)
        .execute(&mut conn)
        .await
        .unwrap();
        diesel::sql_query("ANALYZE clients")
            .execute(&mut conn)
            .await
            .unwrap();
    }

    /// A workspace of 3,000 clients named "Acme Logistics N" (newest last) and one "Zqz Labs".
    async fn seeded(f: &Fixture) -> WorkspaceId {
        let ws = f.admin.create_workspace(named("Search")).await.unwrap().id;
        insert_named(
            f,
            ws,
            3_000,
            "CASE WHEN i = 10 THEN 'Zqz Labs' ELSE 'Acme Logistics ' || i END",
        )
        .await;
        ws
    }

    #[tokio::test]
    async fn three_characters_or_more_run_through_one_kept_statement_newest_first() {
        let f = fixture().await;
        let ws = seeded(&f).await;
        // One connection, so every search below runs on it.
        let pool = build_pool(
            f.db.url(),
            PoolSettings {
                max_size: 1,
                ..PoolSettings::default()
            },
        )
        .unwrap();
        let repository = PgClientRepository::new(pool.clone(), DeliveryAnnouncer::new());
        for _ in 0..3 {
            let found = repository.search(ws, "logistics", 100).await.unwrap();
            assert_eq!(found.len(), 100);
            assert_eq!(found[0].name, "Acme Logistics 3000");
            assert_eq!(found[99].name, "Acme Logistics 2901");
            let found = repository.search(ws, "zqz", 100).await.unwrap();
            assert_eq!(
                found.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
                ["Zqz Labs"]
            );
            assert!(repository.search(ws, "zqzq", 100).await.unwrap().is_empty());
        }
        // Kept by the connection (one round trip per search), one statement for every pattern,
        // and planned only for its first five runs: PostgreSQL keeps its generic plan after
        // them, since no plan of it depends on the values.
        let mut conn = pool.get().await.unwrap();
        // The text is a parameter, so this query's own text does not match it.
        let kept: Plans = diesel::sql_query(
            "SELECT count(*) AS statements, sum(generic_plans)::bigint AS generic, \
                    sum(custom_plans)::bigint AS custom \
             FROM pg_prepared_statements WHERE statement LIKE $1",
        )
        .bind::<Text, _>("%WITH newest AS MATERIALIZED%")
        .get_result(&mut conn)
        .await
        .unwrap();
        assert_eq!((kept.statements, kept.custom, kept.generic), (1, 5, 4));
    }

    /// Backends of this database running a query on clients right now, waiting or not.
    async fn searches_on_the_database(db: &TestDatabase) -> i64 {
        let mut conn = db.pool().get().await.unwrap();
        let count: Count = diesel::sql_query(
            "SELECT count(*) AS n FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid() \
               AND state = 'active' AND query ~* 'from \"?clients'",
        )
        .get_result(&mut conn)
        .await
        .unwrap();
        count.n
    }

    /// Locks the clients table against reads on `conn` until [`unlock`]: a search that reaches
    /// the database then waits there, holding its slot, and shows in pg_stat_activity.
    async fn lock_clients(conn: &mut AsyncPgConnection) {
        diesel::sql_query("BEGIN").execute(conn).await.unwrap();
        diesel::sql_query("LOCK TABLE clients IN ACCESS EXCLUSIVE MODE")
            .execute(conn)
            .await
            .unwrap();
    }

    async fn unlock(conn: &mut AsyncPgConnection) {
        diesel::sql_query("COMMIT").execute(conn).await.unwrap();
    }

    /// One task per needle searching `ws`.
    fn spawn_searches(
        repository: &Arc<dyn ClientRepository>,
        ws: WorkspaceId,
        needles: &[&'static str],
    ) -> Vec<tokio::task::JoinHandle<DomainResult<Vec<Client>>>> {
        needles
            .iter()
            .map(|&needle| {
                let repository = repository.clone();
                tokio::spawn(async move { repository.search(ws, needle, 100).await })
            })
            .collect()
    }

    /// Searches on the database once they reach `expected` (or after five seconds).
    async fn searches_reaching(db: &TestDatabase, expected: i64) -> i64 {
        let mut reached = 0;
        for _ in 0..100 {
            reached = searches_on_the_database(db).await;
            if reached >= expected {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        reached
    }

    #[tokio::test]
    async fn searches_beyond_the_slots_wait_before_reaching_the_database() {
        let f = fixture().await;
        let ws = seeded(&f).await;
        let repository: Arc<dyn ClientRepository> = Arc::new(SlottedSearches::new(
            Arc::new(PgClientRepository::new(
                f.db.pool(),
                DeliveryAnnouncer::new(),
            )),
            SearchSlots::new(1),
            Duration::from_secs(2),
        ));
        let mut lock = f.db.pool().get().await.unwrap();
        lock_clients(&mut lock).await;
        let searches = spawn_searches(&repository, ws, &["a", "logistics"]);
        assert_eq!(
            searches_reaching(&f.db, 1).await,
            1,
            "the first search reaches the database"
        );
        // The second waits for the slot, not in PostgreSQL: without the slots it shows up within
        // milliseconds.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(searches_on_the_database(&f.db).await, 1);
        unlock(&mut lock).await;
        for search in searches {
            assert_eq!(search.await.unwrap().unwrap().len(), 100);
        }
        // A slot is waited for no longer than a pooled connection (2 s): a search behind one
        // that does not finish gets "unavailable" (503), not an endless wait.
        lock_clients(&mut lock).await;
        let stuck = spawn_searches(&repository, ws, &["logistics"]);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let waited = Instant::now();
        let behind = repository.search(ws, "a", 100).await;
        assert!(
            matches!(behind, Err(DomainError::Unavailable(_))),
            "{behind:?}"
        );
        assert!(waited.elapsed() >= Duration::from_millis(1_500));
        unlock(&mut lock).await;
        for search in stuck {
            assert_eq!(search.await.unwrap().unwrap().len(), 100);
        }
        // Without slots both reach the database at once (the check above can fail).
        let unlimited: Arc<dyn ClientRepository> = Arc::new(PgClientRepository::new(
            f.db.pool(),
            DeliveryAnnouncer::new(),
        ));
        lock_clients(&mut lock).await;
        let searches = spawn_searches(&unlimited, ws, &["a", "logistics"]);
        assert_eq!(searches_reaching(&f.db, 2).await, 2);
        unlock(&mut lock).await;
        for search in searches {
            assert_eq!(search.await.unwrap().unwrap().len(), 100);
        }
    }

    #[tokio::test]
    async fn a_search_of_one_or_two_characters_never_reads_the_trigram_index() {
        // A trigram index cannot narrow a pattern of fewer than three characters; asked for one,
        // it returns every client of the workspace to be checked and sorted (about 900 ms for
        // "a" on 200,000 clients). The short search is a statement each connection keeps, and a
        // plan kept for it once chose that index. Here every statement of the database keeps
        // its generic plan from the first call; the index's scans are counted by PostgreSQL
        // and read once the repository's connections have closed (a backend reports them when
        // it ends).
        let f = fixture().await;
        let ws = seeded(&f).await;
        // Many small workspaces beside the big one.
        crowd(&f, 300, 10).await;
        {
            let mut conn = f.db.pool().get().await.unwrap();
            diesel::sql_query(
                "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET plan_cache_mode = \
                 force_generic_plan', current_database()); END $$",
            )
            .execute(&mut conn)
            .await
            .unwrap();
        }
        let before = trigram_scans(&f.db).await;
        {
            let repository = PgClientRepository::new(f.db.pool(), DeliveryAnnouncer::new());
            for (needle, expected) in [("a", 100), ("lo", 100), ("zq", 1), ("qj", 0)] {
                for _ in 0..3 {
                    let found = repository.search(ws, needle, 100).await.unwrap();
                    assert_eq!(found.len(), expected, "{needle}");
                }
            }
            // Three characters: the trigram index is the plan for a rare pattern (and shows
            // that its scans are counted here).
            let found = repository.search(ws, "zqz", 100).await.unwrap();
            assert_eq!(found.len(), 1);
        }
        assert_eq!(
            trigram_scans_since(&f.db, before, 1).await,
            1,
            "the trigram index was read by the searches of one and two characters"
        );
    }

    /// `workspaces` more workspaces of `each` clients, as in any installation: a kept plan is
    /// costed for the average workspace, which is then small. Analyzed.
    async fn crowd(f: &Fixture, workspaces: i32, each: i32) {
        let mut conn = f.db.pool().get().await.unwrap();
        diesel::sql_query(
            "INSERT INTO workspaces (id, name, created_at) \
             SELECT gen_random_uuid(), 'Crowd ' || w, now() FROM generate_series(1, $1) w",
        )
        .bind::<diesel::sql_types::Integer, _>(workspaces)
        .execute(&mut conn)
        .await
        .unwrap();
        diesel::sql_query(
            "INSERT INTO clients (id, workspace_id, name, name_lower, type, status, currency, \
                                  created_at, updated_at) \
             SELECT gen_random_uuid(), w.id, 'Crowd Client ' || i, 'crowd client ' || i, \
                    'company', 'active', 'USD', now(), now() \
             FROM workspaces w CROSS JOIN generate_series(1, $1) i \
             WHERE w.name LIKE 'Crowd %'",
        )
        .bind::<diesel::sql_types::Integer, _>(each)
        .execute(&mut conn)
        .await
        .unwrap();
        diesel::sql_query("ANALYZE clients")
            .execute(&mut conn)
            .await
            .unwrap();
    }

    /// Two workspaces. One whose newest 500 names lack a word its older names carry, and carry
    /// words their elders lack: 2,400 "Acme Freight N", then 580 "Nova Labs N", then 20 "Orbit
    /// Works N" (newest). One of 40 "Tiny Freight N", fewer than the 500 newest names a search
    /// counts.
    async fn shifting_and_tiny(f: &Fixture) -> (WorkspaceId, WorkspaceId) {
        let ws = f
            .admin
            .create_workspace(named("Shifting"))
            .await
            .unwrap()
            .id;
        insert_named(
            f,
            ws,
            3_000,
            "CASE WHEN i <= 2400 THEN 'Acme Freight ' || i \
                  WHEN i <= 2980 THEN 'Nova Labs ' || i ELSE 'Orbit Works ' || i END",
        )
        .await;
        let tiny = f.admin.create_workspace(named("Tiny")).await.unwrap().id;
        insert_named(f, tiny, 40, "'Tiny Freight ' || i").await;
        (ws, tiny)
    }

    #[tokio::test]
    async fn a_needle_common_among_the_newest_names_walks_and_a_rare_one_reads_the_trigram_index() {
        let f = fixture().await;
        let (ws, tiny) = shifting_and_tiny(&f).await;
        // 20,000 clients in 4,000 workspaces of 5.
        crowd(&f, 4_000, 5).await;
        let names = |found: &[Client]| found.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
        let range = |word: &str, newest: i32, count: i32| {
            (0..count)
                .map(|k| format!("{word} {}", newest - k))
                .collect::<Vec<_>>()
        };
        // (workspace, needle, limit, expected names, trigram index read)
        let cases = [
            // In 480 of the 500 newest: the walk, stopping at 100.
            (ws, "nova", 100, range("Nova Labs", 2980, 100), false),
            // In 20 of the 500 newest (4 %): the walk, which reads to the oldest client to
            // find that there are only 20.
            (ws, "orbit", 100, range("Orbit Works", 3000, 20), false),
            // In none of the 500 newest, in 2,400 older ones: the trigram index.
            (ws, "freight", 100, range("Acme Freight", 2400, 100), true),
            (ws, "freight", 1, range("Acme Freight", 2400, 1), true),
            // In none at all: the trigram index.
            (ws, "zqz", 100, Vec::new(), true),
            // A workspace of fewer than 500 clients is read whole in the sample: the walk.
            (tiny, "freight", 100, range("Tiny Freight", 40, 40), false),
            (tiny, "zqz", 100, Vec::new(), false),
        ];
        for (workspace, needle, limit, expected, trigram) in cases {
            let before = trigram_scans(&f.db).await;
            {
                // A pool of its own, closed before counting, so its backend reports its scans.
                let pool = f.db.pool();
                let repository = PgClientRepository::new(pool.clone(), DeliveryAnnouncer::new());
                let found = repository.search(workspace, needle, limit).await.unwrap();
                assert_eq!(names(&found), expected, "{needle} (limit {limit})");
                pool.close();
            }
            assert_eq!(
                trigram_scans_since(&f.db, before, i64::from(trigram)).await,
                i64::from(trigram),
                "trigram index scans for {needle} (limit {limit})"
            );
        }
    }

    #[tokio::test]
    async fn every_search_returns_what_a_plain_substring_query_returns() {
        let f = fixture().await;
        let (ws, tiny) = shifting_and_tiny(&f).await;
        // Among the oldest names, so that a search for their `%`, `_` and `\` (none in the
        // newest 500) goes through the trigram index and its LIKE pattern, where they must be
        // taken literally: "t_1" as a pattern would match every "acme freight 1...".
        insert_named(&f, ws, 5, "'Promo t_1 50% Off\\Deal ' || i").await;
        let repository = PgClientRepository::new(f.db.pool(), DeliveryAnnouncer::new());
        let mut conn = f.db.pool().get().await.unwrap();
        #[derive(QueryableByName)]
        struct Name {
            #[diesel(sql_type = Text)]
            name: String,
        }
        let needles = [
            "a",
            "ov",
            "acme",
            "freight",
            "nova",
            "orbit",
            "labs",
            "works 2",
            "t 1",
            "2999",
            "e f",
            "zqz",
            "s 29",
            "ight 24",
            "nova labs 2980",
            "orbit works 3000x",
            "t_1",
            "0% o",
            "f\\de",
            "%",
            "_",
            "\\",
        ];
        for workspace in [ws, tiny] {
            for needle in needles {
                for limit in [1, 7, 100] {
                    let expected: Vec<Name> = diesel::sql_query(
                        "SELECT name FROM clients \
                         WHERE workspace_id = $1 AND position($2 IN name_lower) > 0 \
                         ORDER BY created_at DESC, id DESC LIMIT $3",
                    )
                    .bind::<SqlUuid, _>(workspace.0)
                    .bind::<Text, _>(needle)
                    .bind::<BigInt, _>(i64::from(limit))
                    .load(&mut conn)
                    .await
                    .unwrap();
                    let found = repository.search(workspace, needle, limit).await.unwrap();
                    assert_eq!(
                        found.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
                        expected.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(),
                        "{needle} (limit {limit})"
                    );
                }
            }
        }
    }

    #[tokio::test]
    async fn the_trigram_index_keeps_a_short_pending_list() {
        let f = fixture().await;
        let ws = seeded(&f).await;
        let mut conn = f.db.pool().get().await.unwrap();
        let found: Setting = diesel::sql_query(
            "SELECT array_to_string(reloptions, ',') AS setting FROM pg_class \
             WHERE relname = 'clients_workspace_name_trgm_idx'",
        )
        .get_result(&mut conn)
        .await
        .unwrap();
        assert_eq!(found.setting, "gin_pending_list_limit=128");
        // A name still waiting in the pending list is found like any other.
        diesel::sql_query(
            "INSERT INTO clients (id, workspace_id, name, name_lower, type, status, currency, \
                                  created_at, updated_at) \
             VALUES (gen_random_uuid(), $1, 'Qqzz Freight', 'qqzz freight', 'company', \
                     'active', 'USD', now(), now())",
        )
        .bind::<SqlUuid, _>(ws.0)
        .execute(&mut conn)
        .await
        .unwrap();
        let repository = PgClientRepository::new(f.db.pool(), DeliveryAnnouncer::new());
        let found = repository.search(ws, "qqzz", 100).await.unwrap();
        assert_eq!(found.len(), 1);
    }
}

mod announcements {
    //! A commit announced in one process wakes the delivery worker of another through
    //! PostgreSQL (`run_notifier` sends, `run_listener` listens), not after its poll.

    use std::sync::Arc;
    use std::time::Duration;

    use timetrack_adapters::postgres::{DeliveryAnnouncer, run_notifier};
    use timetrack_adapters::run_listener;
    use timetrack_adapters::testing::TestDatabase;
    use tokio::sync::{Notify, watch};

    #[tokio::test]
    async fn an_announcement_in_one_process_wakes_the_worker_of_another() {
        let db = TestDatabase::new().await;
        let (stop, stopped) = watch::channel(false);
        // "This" process: its announcer and notifier.
        let announcer = DeliveryAnnouncer::new();
        let notifier = tokio::spawn(run_notifier(db.pool(), announcer.clone(), stopped.clone()));
        // "Another" process: its worker's wake-up, fed by its listening connection.
        let other = Arc::new(Notify::new());
        let listener = tokio::spawn(run_listener(
            db.url().to_owned(),
            other.clone(),
            stopped.clone(),
        ));
        // The listener wakes its worker once when it starts listening (for anything announced
        // before): from then on, notifications reach it.
        tokio::time::timeout(Duration::from_secs(10), other.notified())
            .await
            .expect("the listener reaches LISTEN");
        assert!(
            tokio::time::timeout(Duration::from_millis(300), other.notified())
                .await
                .is_err(),
            "nothing announced, nothing wakes it"
        );
        announcer.announce(0);
        assert!(
            tokio::time::timeout(Duration::from_millis(300), other.notified())
                .await
                .is_err(),
            "a write that queued nothing announces nothing"
        );
        for round in 0..3 {
            announcer.announce(2);
            tokio::time::timeout(Duration::from_secs(5), other.notified())
                .await
                .unwrap_or_else(|_| panic!("announcement {round} did not reach the other process"));
        }
        stop.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), async {
            notifier.await.unwrap();
            listener.await.unwrap();
        })
        .await
        .expect("both stop on shutdown");
    }
}

mod secrets_at_rest {
    use super::*;
    use timetrack_adapters::postgres::{
        PgDeliveryQueue, PgIdempotencyStore, PgSubscriptionRepository, reseal_all,
    };
    use timetrack_adapters::{SecretBox, SecretKey};
    use timetrack_domain::delivery::ClaimedDelivery;
    use timetrack_domain::model::{EventType, Subscription, SubscriptionStatus, WebhookId};
    use timetrack_domain::ports::{
        DeliveryQueue, IdempotencyBegin, IdempotencyStore, SubscriptionRepository,
    };

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwAAAAAAAAAAA=";

    async fn column(db: &TestDatabase, sql: &str) -> Vec<String> {
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Text)]
            v: String,
        }
        let pool = db.pool();
        let mut conn = pool.get().await.unwrap();
        let rows: Vec<Row> = diesel::sql_query(sql).load(&mut conn).await.unwrap();
        rows.into_iter().map(|r| r.v).collect()
    }

    /// A subscription stored through the repository with `secrets`, and one event queued for it.
    async fn subscribed(f: &Fixture, secrets: &SecretBox) -> Subscription {
        let ws = f.admin.create_workspace(named("S")).await.unwrap();
        let ada = f
            .admin
            .create_user(ws.id, "Ada", "ada@example.com")
            .await
            .unwrap();
        let (key, _) = f.admin.create_api_key(ada.id, ws.id, None).await.unwrap();
        let at = datetime!(2026-03-01 12:00 UTC);
        let subscription = Subscription {
            id: WebhookId::parse("wh_secretsecretsecretsecre").unwrap(),
            workspace_id: ws.id,
            user_id: ada.id,
            api_key_id: key.id,
            url: "https://hooks.example.com/h".into(),
            events: vec![EventType::ClientCreated],
            description: None,
            secret: SECRET.into(),
            status: SubscriptionStatus::Active,
            created_at: at,
            updated_at: at,
        };
        PgSubscriptionRepository::new(f.db.pool(), secrets.clone())
            .create(&subscription, 100)
            .await
            .unwrap();
        let pool = f.db.pool();
        let mut conn = pool.get().await.unwrap();
        for statement in [
            "INSERT INTO events (id, workspace_id, event_type, body, created_at) \
             VALUES ('00000000-0000-0000-0000-0000000000e1', $1, 'CLIENT_CREATED', '{}', now())",
            "INSERT INTO deliveries (event_id, subscription_id, workspace_id, status, \
             next_attempt_at, created_at, updated_at) \
             SELECT '00000000-0000-0000-0000-0000000000e1', id, workspace_id, 'PENDING', now(), \
             now(), now() FROM webhook_subscriptions WHERE workspace_id = $1",
        ] {
            diesel::sql_query(statement)
                .bind::<diesel::sql_types::Uuid, _>(ws.id.0)
                .execute(&mut conn)
                .await
                .unwrap();
        }
        subscription
    }

    /// A claim `later` after now (past the leases of earlier claims).
    async fn claim(
        db: &TestDatabase,
        secrets: &SecretBox,
        later: time::Duration,
    ) -> DomainResult<Vec<ClaimedDelivery>> {
        let now = time::OffsetDateTime::now_utc() + later;
        PgDeliveryQueue::new(db.pool(), secrets.clone())
            .record_and_claim(&[], now, now + time::Duration::seconds(30), 10, 10)
            .await
    }

    use timetrack_domain::DomainResult;

    #[tokio::test]
    async fn webhook_secrets_are_stored_sealed_and_opened_for_the_sender() {
        let f = fixture().await;
        let secrets = SecretBox::ephemeral();
        let subscription = subscribed(&f, &secrets).await;
        let stored = column(&f.db, "SELECT secret AS v FROM webhook_subscriptions").await;
        assert_eq!(stored.len(), 1);
        assert!(
            stored[0].starts_with(&format!("tt1:{}:", secrets.current_id())),
            "{stored:?}"
        );
        assert!(!stored[0].contains("MfKQ9r8G"), "{stored:?}");
        let read = PgSubscriptionRepository::new(f.db.pool(), secrets.clone())
            .get(&subscription.id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(read.secret, SECRET);
        // Under another key, the stored value opens to nothing.
        assert!(
            claim(&f.db, &SecretBox::ephemeral(), time::Duration::ZERO)
                .await
                .is_err()
        );
        let claimed = claim(&f.db, &secrets, time::Duration::minutes(1))
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1);
        assert_eq!(claimed[0].secret, SECRET);
    }

    #[tokio::test]
    async fn idempotent_responses_are_stored_sealed_and_replayed_in_clear() {
        let f = fixture().await;
        let ws = f.admin.create_workspace(named("I")).await.unwrap();
        let ada = f
            .admin
            .create_user(ws.id, "Ada", "ada@example.com")
            .await
            .unwrap();
        let (key, _) = f.admin.create_api_key(ada.id, ws.id, None).await.unwrap();
        let store = PgIdempotencyStore::new(f.db.pool(), SecretBox::ephemeral());
        let now = time::OffsetDateTime::now_utc();
        let body = format!(r#"{{"success":true,"webhook":{{"secret":"{SECRET}"}}}}"#);
        assert_eq!(
            store.begin(key.id, "k", [7; 32], now).await.unwrap(),
            IdempotencyBegin::Started
        );
        store.complete(key.id, "k", 201, &body).await.unwrap();
        let stored = column(&f.db, "SELECT body AS v FROM idempotency_keys").await;
        assert!(
            stored[0].starts_with("tt1:") && !stored[0].contains("whsec_"),
            "{stored:?}"
        );
        assert_eq!(
            store.begin(key.id, "k", [7; 32], now).await.unwrap(),
            IdempotencyBegin::Replay { status: 201, body }
        );
    }

    #[tokio::test]
    async fn a_rotation_reseals_plain_and_old_values_under_the_new_key() {
        let f = fixture().await;
        let (old, new) = (SecretKey::generate(), SecretKey::generate());
        let before = SecretBox::new(&old, &[]);
        subscribed(&f, &before).await;
        // A value from before encryption at rest, too.
        diesel::sql_query(
                "INSERT INTO webhook_subscriptions (id, workspace_id, user_id, api_key_id, url, \
                 events, secret, status, created_at, updated_at) SELECT 'wh_plainplainplainplainpla', \
                 workspace_id, user_id, api_key_id, url, events, 'whsec_plain', status, created_at, \
                 updated_at FROM webhook_subscriptions",
            )
            .execute(&mut f.db.pool().get().await.unwrap())
            .await
            .unwrap();
        let without_old = SecretBox::new(&new, &[]);
        let err = reseal_all(&f.db.pool(), &without_old).await.unwrap_err();
        assert!(format!("{err:#}").contains(&old.id()), "{err:#}");

        let rotated = SecretBox::new(&new, std::slice::from_ref(&old));
        let resealed = reseal_all(&f.db.pool(), &rotated).await.unwrap();
        assert_eq!(resealed.webhook_secrets, 2);
        assert_eq!(
            reseal_all(&f.db.pool(), &rotated)
                .await
                .unwrap()
                .webhook_secrets,
            0
        );
        for stored in column(&f.db, "SELECT secret AS v FROM webhook_subscriptions").await {
            assert!(
                stored.starts_with(&format!("tt1:{}:", new.id())),
                "{stored}"
            );
        }
        // Once resealed, the old key is no longer needed.
        let mut secrets: Vec<String> = claim(&f.db, &without_old, time::Duration::ZERO)
            .await
            .unwrap()
            .into_iter()
            .map(|c| c.secret)
            .collect();
        secrets.sort();
        assert_eq!(secrets, [SECRET]);
        let repo = PgSubscriptionRepository::new(f.db.pool(), without_old);
        let plain = repo
            .get(&WebhookId::parse("wh_plainplainplainplainpla").unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(plain.secret, "whsec_plain");
    }
}
