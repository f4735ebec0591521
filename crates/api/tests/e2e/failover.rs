//! Following the primary (`docs/operations.md`, "Failover"): the real binary on a multi-host
//! `DATABASE_URL` naming a primary and its streaming standby (two private clusters,
//! `pg_basebackup -R`), through a crash of the primary and a promotion, and through a primary
//! demoted while it still runs.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use timetrack_testkit::replication::query;
use timetrack_testkit::{
    Admin, HttpsReceiver, ReplicaPair, Replication, ServeCommand, ServerProcess,
};

use crate::BIN;

async fn sql(url: &str, statement: &str) -> Vec<tokio_postgres::Row> {
    query(url, statement)
        .await
        .unwrap_or_else(|err| panic!("{err:#}"))
}

async fn count(url: &str, statement: &str) -> i64 {
    sql(url, statement).await[0].get(0)
}

fn start_pair() -> ReplicaPair {
    ReplicaPair::start(None, Replication::Asynchronous).unwrap()
}

struct Service {
    server: ServerProcess,
    key: String,
    http: reqwest::Client,
    receiver: HttpsReceiver,
}

impl Service {
    async fn start(pair: &ReplicaPair) -> Self {
        // The database is made on the primary and streamed to the standby.
        pair.primary.ensure_database("timetrack").await.unwrap();
        let url = pair.url("timetrack");
        let receiver = HttpsReceiver::start().await;
        let ca = receiver.ca_pem_path();
        let logs = pair.dir().to_owned();
        let (key, server) = tokio::task::spawn_blocking(move || {
            let key = Admin::new(Path::new(BIN), &url)
                .account("Failover")
                .unwrap()
                .key;
            let server = ServeCommand::new(Path::new(BIN), &url)
                .trusting_receiver(&ca)
                .unlimited()
                .env("TIMETRACK_LOG", "info")
                .env("TIMETRACK_WEBHOOK_RETRY_SCHEDULE", "1s,1s,1s,1s,1s")
                .log_to(&logs.join("serve.log"))
                .start_blocking()
                .unwrap();
            (key, server)
        })
        .await
        .unwrap();
        Self {
            server,
            key,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(20))
                .build()
                .unwrap(),
            receiver,
        }
    }

    /// `POST /api/clients` (with `idempotency_key`, if any): status, `Retry-After`, body.
    async fn create_client(
        &self,
        name: &str,
        idempotency_key: Option<&str>,
    ) -> (u16, Option<String>, Value, bool) {
        let mut req = self
            .http
            .post(format!("{}/api/clients", self.server.base))
            .bearer_auth(&self.key)
            .json(&json!({"name": name}));
        if let Some(key) = idempotency_key {
            req = req.header("Idempotency-Key", key);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        let retry_after = res
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_owned());
        let replayed = res.headers().contains_key("idempotent-replayed");
        (status, retry_after, res.json().await.unwrap(), replayed)
    }

    async fn health(&self) -> (u16, Value) {
        let res = self
            .http
            .get(format!("{}/api/health", self.server.base))
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.json().await.unwrap())
    }

    fn log(&self) -> String {
        self.server.log().unwrap_or_default()
    }

    /// Whether a delivery of the client named `name` reached the receiver within `within`.
    async fn delivered(&self, name: &str, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if self
                .receiver
                .received()
                .iter()
                .any(|r| String::from_utf8_lossy(&r.body).contains(name))
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }
}

/// Whether the process's listener is connected to the server at `url` (its `LISTEN` connection
/// shows there as `timetrack-listener <origin>`).
async fn listener_on(url: &str) -> bool {
    !sql(
        url,
        "SELECT 1 FROM pg_stat_activity WHERE application_name LIKE 'timetrack-listener %'",
    )
    .await
    .is_empty()
}

/// Waits until the service listens on the primary and the standby has replayed everything.
async fn settled(pair: &ReplicaPair) {
    wait_for(
        "the listener on the primary",
        Duration::from_secs(10),
        async || listener_on(&pair.primary.url("postgres")).await,
    )
    .await;
    pair.caught_up().await.unwrap();
}

async fn wait_for(what: &str, within: Duration, mut probe: impl AsyncFnMut() -> bool) -> Duration {
    let started = Instant::now();
    loop {
        if probe().await {
            return started.elapsed();
        }
        assert!(started.elapsed() < within, "{what} not within {within:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The primary crashes (`SIGKILL` of its postmaster) and the standby is promoted: while no
/// primary answers, writes are 503 with `Retry-After` and health says why; after the promotion
/// the same process writes on the new primary without a restart, its listener is opened again
/// there, deliveries flow, an `Idempotency-Key` acknowledged before the crash answers its first
/// answer, and the log did not fill with a line per failed request.
#[tokio::test]
async fn after_the_primary_dies_and_the_standby_is_promoted_the_service_follows_it() {
    let mut pair = tokio::task::spawn_blocking(start_pair).await.unwrap();
    let s = Service::start(&pair).await;
    s.server
        .subscribe(&s.key, &s.receiver.url("/hook"), &["CLIENT_CREATED"])
        .await
        .unwrap();
    let (status, _, first, _) = s.create_client("Before the crash", Some("order-1")).await;
    assert_eq!(status, 201, "{first}");
    assert!(
        s.delivered("Before the crash", Duration::from_secs(10))
            .await
    );
    settled(&pair).await;

    pair.kill_primary();
    let down_at = Instant::now();
    // Only the standby answers: no write can succeed, and each says so quickly.
    let mut statuses = Vec::new();
    for n in 0..5 {
        let asked = Instant::now();
        let (status, retry_after, body, _) = s.create_client(&format!("During {n}"), None).await;
        assert!(
            asked.elapsed() < Duration::from_secs(6),
            "a write with no primary took {:?}",
            asked.elapsed()
        );
        assert_eq!(
            (status, &body),
            (503, &json!({"error": "Service unavailable"}))
        );
        assert!(
            retry_after.is_some_and(|v| v.parse::<u64>().is_ok_and(|s| (1..=10).contains(&s))),
            "a 503 says when to try again"
        );
        statuses.push(status);
    }
    let (status, health) = s.health().await;
    assert_eq!(status, 503, "{health}");
    assert_eq!(health["error"], "database connection failed");
    // With only a standby up, the pool opens no connection: the read-write host is missing.
    assert_eq!(health["reason"], "no database connection", "{health}");

    // The standby is promoted: the same process writes there, without a restart.
    pair.promote().await.unwrap();
    let promoted_at = Instant::now();
    let mut n = 0;
    let writes_again = wait_for(
        "a write on the new primary",
        Duration::from_secs(15),
        async || {
            n += 1;
            let (status, _, _, _) = s.create_client(&format!("After {n}"), None).await;
            assert!(
                status == 201 || status == 503,
                "only 201 or 503, got {status}"
            );
            status == 201
        },
    )
    .await;
    eprintln!(
        "writes again {writes_again:?} after the promotion ({:?} after the crash)",
        down_at.elapsed()
    );
    let (status, health) = s.health().await;
    assert_eq!((status, &health["status"]), (200, &json!("healthy")));

    // The acknowledged request, retried with its key: its first answer, not a second client.
    let (status, _, again, replayed) = s.create_client("Before the crash", Some("order-1")).await;
    assert_eq!((status, &again, replayed), (201, &first, true));

    // The listener is opened again on the new primary, and deliveries flow there.
    let new_primary = pair.standby.url("postgres");
    let listening = wait_for(
        "the listener on the new primary",
        Duration::from_secs(10),
        async || listener_on(&new_primary).await,
    )
    .await;
    eprintln!("listener on the new primary {listening:?} after the first write");
    let (status, _, _, _) = s.create_client("After the failover", None).await;
    assert_eq!(status, 201);
    assert!(
        s.delivered("After the failover", Duration::from_secs(5))
            .await,
        "a delivery after the failover"
    );
    // Every client written is there once: the acknowledged one was not lost nor made twice.
    let named = count(
        &pair.standby.url("timetrack"),
        "SELECT count(*) FROM clients WHERE name = 'Before the crash'",
    )
    .await;
    assert_eq!(named, 1);

    // The outage was logged, not once per failed request.
    let log = s.log();
    let outage_secs = promoted_at.duration_since(down_at).as_secs() + writes_again.as_secs() + 2;
    let unavailable = log.matches("database unavailable").count();
    assert!(
        unavailable as u64 <= outage_secs + 1,
        "{unavailable} 'database unavailable' lines in a {outage_secs} s outage"
    );
}

/// The primary is demoted while it still runs (read-only, as a switchover leaves it until it
/// restarts as a standby) and the standby is promoted: the pooled connections found read-only
/// are dropped, not reused, so writes move to the new primary within seconds and none answers
/// 500; the listener follows.
#[tokio::test]
async fn a_primary_demoted_while_running_is_left_for_the_new_one() {
    let pair = tokio::task::spawn_blocking(start_pair).await.unwrap();
    let s = Service::start(&pair).await;
    for n in 0..20 {
        let (status, _, body, _) = s.create_client(&format!("Warm {n}"), None).await;
        assert_eq!(status, 201, "{body}");
    }
    settled(&pair).await;
    pair.promote().await.unwrap();
    pair.demote_primary_in_place().await.unwrap();
    let demoted_at = Instant::now();

    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    let mut first_ok = None;
    let mut oks_in_a_row = 0;
    let mut n = 0;
    while oks_in_a_row < 20 {
        n += 1;
        let (status, _, body, _) = s.create_client(&format!("Moved {n}"), None).await;
        assert!(
            status == 201 || status == 503,
            "a write after the demotion answered {status} {body}"
        );
        *statuses.entry(status).or_default() += 1;
        if status == 201 {
            first_ok.get_or_insert(demoted_at.elapsed());
            oks_in_a_row += 1;
        } else {
            oks_in_a_row = 0;
        }
        assert!(
            demoted_at.elapsed() < Duration::from_secs(20),
            "writes did not settle on the new primary: {statuses:?}"
        );
    }
    eprintln!("after the demotion: {statuses:?}, first write {first_ok:?}");
    assert!(
        first_ok.is_some_and(|at| at < Duration::from_secs(5)),
        "writes moved within 5 s: {first_ok:?}"
    );
    // They are on the new primary, and the listener follows within a probe's time.
    let moved = count(
        &pair.standby.url("timetrack"),
        "SELECT count(*) FROM clients WHERE name LIKE 'Moved %'",
    )
    .await;
    assert_eq!(moved as usize, statuses.get(&201).copied().unwrap_or(0));
    let new_primary = pair.standby.url("postgres");
    wait_for(
        "the listener on the new primary",
        Duration::from_secs(20),
        async || listener_on(&new_primary).await,
    )
    .await;
}
