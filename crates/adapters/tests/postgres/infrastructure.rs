//! Health, the pool, an unreachable database, and the private cluster.

use super::*;

#[tokio::test]
async fn health_probe_reports_a_reachable_database() {
    let db = TestDatabase::new().await;
    let probe = PgHealthProbe::new(db.pool(), Duration::from_secs(2));
    probe.check_database().await.unwrap();
}

/// Health checks asked for together share one query: while the pool's only connection is taken,
/// twenty checks put one waiter in the pool's queue, not twenty, and all pass once it is free.
#[tokio::test]
async fn concurrent_health_checks_share_one_query() {
    let db = TestDatabase::new().await;
    let pool = build_pool(
        db.url(),
        PoolSettings {
            max_size: 1,
            wait_timeout: Duration::from_secs(5),
            ..PoolSettings::default()
        },
    )
    .unwrap();
    let probe = PgHealthProbe::new(pool.clone(), Duration::from_secs(5));
    let held = pool.get().await.unwrap();
    let checks: Vec<_> = (0..20)
        .map(|_| {
            let probe = probe.clone();
            tokio::spawn(async move { probe.check_database().await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(pool.status().waiting, 1, "{:?}", pool.status());
    drop(held);
    for check in checks {
        check.await.unwrap().unwrap();
    }
    // A later check runs its own query rather than reusing the earlier outcome.
    let held = pool.get().await.unwrap();
    let late = tokio::spawn({
        let probe = probe.clone();
        async move { probe.check_database().await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !late.is_finished(),
        "a later check reused an earlier outcome"
    );
    assert_eq!(pool.status().waiting, 1);
    drop(held);
    late.await.unwrap().unwrap();
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
