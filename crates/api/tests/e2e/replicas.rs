//! Reads from a replica (`docs/operations.md`, "Reads from a replica"): the real binary with
//! `TIMETRACK_DATABASE_REPLICA_URL` naming a streaming standby (two private clusters,
//! `pg_basebackup -R`). The standby's replay is paused to tell its answers from the primary's.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use timetrack_testkit::replication::query;
use timetrack_testkit::{Account, Admin, ReplicaPair, Replication, ServeCommand, ServerProcess};

use crate::BIN;

/// Wide enough that a standby whose replay is slowed by a loaded machine (CI runs many clusters
/// at once on two cores) is still within it when the test pauses it.
const MAX_LAG: Duration = Duration::from_secs(8);

struct Service {
    server: ServerProcess,
    http: reqwest::Client,
}

impl Service {
    /// `POST /api/clients` by `who`: the status and the `X-Commit-Position` header.
    async fn create_client(&self, who: &Account, name: &str) -> (u16, Option<String>) {
        let res = self
            .http
            .post(format!("{}/api/clients", self.server.base))
            .bearer_auth(&who.key)
            .json(&json!({"name": name}))
            .send()
            .await
            .unwrap();
        let position = res
            .headers()
            .get("x-commit-position")
            .map(|v| v.to_str().unwrap().to_owned());
        (res.status().as_u16(), position)
    }

    /// The names of the clients `who` finds by `name` (with `X-Commit-Position: after`, if any).
    async fn find(&self, who: &Account, name: &str, after: Option<&str>) -> (u16, Value) {
        let mut req = self
            .http
            .post(format!(
                "{}/api/integrations/automation/triggers/clients/find",
                self.server.base
            ))
            .bearer_auth(&who.key)
            .json(&json!({"workspace_id": who.workspace_id, "name": name}));
        if let Some(after) = after {
            req = req.header("X-Commit-Position", after);
        }
        let res = req.send().await.unwrap();
        (res.status().as_u16(), res.json().await.unwrap())
    }

    async fn finds(&self, who: &Account, name: &str) -> bool {
        let (status, body) = self.find(who, name, None).await;
        assert_eq!(status, 200, "{body}");
        body.as_array().is_some_and(|found| !found.is_empty())
    }
}

async fn replay(pair: &ReplicaPair, paused: bool) {
    let call = if paused {
        "SELECT pg_wal_replay_pause()"
    } else {
        "SELECT pg_wal_replay_resume()"
    };
    query(&pair.standby.url("postgres"), call).await.unwrap();
}

/// A write answers its commit's position; its key's reads see it at once (from the primary while
/// the replica lacks it), another key's reads come from the replica while it is within
/// `--replica-max-lag` (and do not see it yet), and from the primary once the replica is further
/// behind. A position sent back in `X-Commit-Position` is waited for too, and a malformed one is
/// 400. With the replica gone, reads keep answering from the primary.
#[tokio::test]
async fn reads_come_from_the_replica_within_its_lag_and_see_their_own_writes() {
    let mut pair = tokio::task::spawn_blocking(|| {
        ReplicaPair::start(None, Replication::Asynchronous).unwrap()
    })
    .await
    .unwrap();
    pair.primary.ensure_database("timetrack").await.unwrap();
    let primary = pair.primary.url("timetrack");
    let replica = pair.standby.url("timetrack");
    let logs = pair.dir().to_owned();
    let (writer, reader, server) = tokio::task::spawn_blocking(move || {
        let admin = Admin::new(Path::new(BIN), &primary);
        let writer = admin.account("Replica reads").unwrap();
        let reader = admin.member(&writer.workspace_id).unwrap();
        let server = ServeCommand::new(Path::new(BIN), &primary)
            .unlimited()
            .env("TIMETRACK_DATABASE_REPLICA_URL", replica)
            .env(
                "TIMETRACK_REPLICA_MAX_LAG",
                format!("{}s", MAX_LAG.as_secs()),
            )
            .log_to(&logs.join("serve.log"))
            .start_blocking()
            .unwrap();
        (writer, reader, server)
    })
    .await
    .unwrap();
    let s = Service {
        server,
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap(),
    };

    let (status, position) = s.create_client(&writer, "Alpha").await;
    assert_eq!(status, 201);
    let position = position.expect("a write answers X-Commit-Position");
    assert!(position.contains('/'), "{position}");
    assert!(
        s.finds(&writer, "Alpha").await,
        "a key reads its own write at once"
    );
    pair.caught_up().await.unwrap();
    // Reads that open the replica pools' connections (each HTTP worker has its own pool), so
    // that the reads below do not wait on a first connection.
    for _ in 0..8 {
        assert!(s.finds(&reader, "Alpha").await, "the replica has Alpha");
    }

    // The replica stops replaying: what is written from here on is on the primary only.
    replay(&pair, true).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let paused_at = Instant::now();
    let (status, bravo) = s.create_client(&writer, "Bravo").await;
    assert_eq!(status, 201);
    let bravo = bravo.unwrap();
    assert!(
        s.finds(&writer, "Bravo").await,
        "the writer's read waits for its write"
    );
    // Only the paused replica lacks Bravo. A read may still go to the primary when a replica
    // connection misses its time-out on a loaded machine (the read then falls back to the
    // primary, as designed), so the read is asked again, well within the bound.
    let mut from_replica = false;
    while !from_replica && paused_at.elapsed() < MAX_LAG * 3 / 4 {
        from_replica = !s.finds(&reader, "Bravo").await;
        if !from_replica {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let asked_within = paused_at.elapsed();
    let log = s.server.log().unwrap_or_default();
    let start = (log.len().saturating_sub(3000)..log.len())
        .find(|&i| log.is_char_boundary(i))
        .unwrap_or(log.len());
    let log_tail = &log[start..];
    assert!(
        from_replica,
        "another key's reads came from the primary for {asked_within:?} after the pause; the \
         replica was within {MAX_LAG:?}; the server's log ends:\n{log_tail}"
    );
    assert!(
        s.finds(&reader, "Alpha").await,
        "the replica has what it replayed"
    );
    let (status, found) = s.find(&reader, "Bravo", Some(&bravo)).await;
    assert_eq!(status, 200);
    assert_eq!(
        found.as_array().map(Vec::len),
        Some(1),
        "a read waits for the position it sends: {found}"
    );
    let (status, refused) = s.find(&reader, "Bravo", Some("not a position")).await;
    assert_eq!(
        (status, refused),
        (400, json!({"error": "Invalid X-Commit-Position header"}))
    );

    // Past the bound, the lagging replica is not used.
    tokio::time::sleep(MAX_LAG + Duration::from_millis(500)).await;
    assert!(
        s.finds(&reader, "Bravo").await,
        "a replica further behind than the bound served a read"
    );

    // Replaying again, it serves reads again.
    replay(&pair, false).await;
    pair.caught_up().await.unwrap();
    let (status, _) = s.create_client(&writer, "Charlie").await;
    assert_eq!(status, 201);
    pair.caught_up().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(s.finds(&reader, "Charlie").await);

    // Without the replica, reads answer from the primary.
    pair.standby.kill();
    for name in ["Alpha", "Bravo", "Charlie"] {
        assert!(
            s.finds(&reader, name).await,
            "{name} once the replica is gone"
        );
    }
    // The watch notices at its next sample (every 100 ms) and says so once.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut log = s.server.log().unwrap_or_default();
    while !log.contains("the replica cannot be read") && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        log = s.server.log().unwrap_or_default();
    }
    assert!(
        log.contains("the replica cannot be read"),
        "the replica's loss is logged:\n{log}"
    );
    assert_eq!(
        log.matches("the replica cannot be read").count(),
        1,
        "logged once, not per sample"
    );
    assert!(!log.contains("panicked"), "{log}");
}

/// While no primary answers, the reads that may use the replica keep answering from it (the
/// caller's key found there too), and writes are 503.
#[tokio::test]
async fn with_the_primary_gone_reads_answer_from_the_replica() {
    let mut pair = tokio::task::spawn_blocking(|| {
        ReplicaPair::start(None, Replication::Asynchronous).unwrap()
    })
    .await
    .unwrap();
    pair.primary.ensure_database("timetrack").await.unwrap();
    let primary = pair.primary.url("timetrack");
    let replica = pair.standby.url("timetrack");
    let logs = pair.dir().to_owned();
    let (writer, server) = tokio::task::spawn_blocking(move || {
        let writer = Admin::new(Path::new(BIN), &primary)
            .account("Replica only")
            .unwrap();
        let server = ServeCommand::new(Path::new(BIN), &primary)
            .unlimited()
            .env("TIMETRACK_DATABASE_REPLICA_URL", replica)
            // Past the key cache: the key is looked up again while the primary is away.
            .env("TIMETRACK_AUTH_CACHE_SECONDS", "0")
            .log_to(&logs.join("serve.log"))
            .start_blocking()
            .unwrap();
        (writer, server)
    })
    .await
    .unwrap();
    let s = Service {
        server,
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap(),
    };
    let (status, _) = s.create_client(&writer, "Before").await;
    assert_eq!(status, 201);
    pair.caught_up().await.unwrap();

    pair.kill_primary();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let feed = format!("{}/api/integrations/automation/events", s.server.base);
    for _ in 0..3 {
        let res = s
            .http
            .get(&feed)
            .bearer_auth(&writer.key)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 200);
        let body: Value = res.json().await.unwrap();
        assert!(
            body["data"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["type"] == "CLIENT_CREATED"),
            "{body}"
        );
    }
    let (status, _) = s.create_client(&writer, "During").await;
    assert_eq!(status, 503, "no primary, no write");
}
