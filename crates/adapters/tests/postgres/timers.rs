//! The conditional timer writes: a lost race writes nothing at all.

use std::sync::Arc;

use diesel_async::RunQueryDsl;
use time::macros::datetime;
use timetrack_adapters::postgres::{
    DeliveryAnnouncer, PgApiKeyRepository, PgTimeEntryRepository, PgUserRepository,
    PgWorkspaceRepository,
};
use timetrack_domain::ids::{EventId, TimeEntryId, UserId, WorkspaceId};
use timetrack_domain::model::{EntrySource, Event, EventType, TimeEntry};
use timetrack_domain::ports::{TimeEntryRepository, TimerStop, WriteOutcome};
use timetrack_domain::services::{AdminService, NewWorkspace};
use timetrack_testkit::TestDatabase;
use timetrack_testkit::fakes::{ManualClock, SeededRandom, SequentialIds};
use timetrack_testkit::fakes::{email, name};
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
        subject: timetrack_domain::model::EventSubject::default(),
        ordering_key: format!("k{n}"),
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
        .create_workspace(NewWorkspace::named(name("A")))
        .await
        .unwrap();
    let user = admin
        .create_user(ws.id, name("Ada"), email("ada@example.com"))
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
        WriteOutcome::Applied
    );

    // A start that would insert a second running timer without stopping the first: raced.
    let second = entry(ws, user, 2);
    assert_eq!(
        repo.start(None, &second, &[event(ws, EventType::TimerStarted, 101)])
            .await
            .unwrap(),
        WriteOutcome::Raced
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
        WriteOutcome::Raced
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
        WriteOutcome::Applied
    );
    assert_eq!(count(&db, "SELECT count(*) AS n FROM events").await, 3);
    assert_eq!(repo.running(user).await.unwrap().unwrap().id, second.id);
    // Stopping the already stopped first timer again: raced, no event.
    assert_eq!(repo.stop(&stop).await.unwrap(), WriteOutcome::Raced);
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
