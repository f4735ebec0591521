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
    // it returns every client of the workspace to be checked and sorted, on a big workspace
    // far slower than the walk. The short search is a statement each connection keeps, and a
    // plan kept for it can choose that index when the name is matched with `LIKE`. Here
    // every statement of the database keeps its generic plan from the first call; the
    // index's scans are counted by PostgreSQL and read once the repository's connections
    // have closed (a backend reports them when it ends).
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
