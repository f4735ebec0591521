//! Behind PgBouncer in transaction mode (`docs/operations.md`, "PgBouncer"): two processes share
//! a few server connections through the pooler, with the LISTEN connection and the migrations
//! direct.

use timetrack_testkit::Pgbouncer;

use super::*;

/// Server connections the pooler opens to PostgreSQL, whatever the number of clients.
const POOL_SIZE: u32 = 3;

/// `timetrack` settings for `bouncer` in front of `db`.
fn behind_pooler(bouncer: &Pgbouncer, db: &TestDatabase) -> [(&'static str, String); 3] {
    [
        ("DATABASE_URL", bouncer.url()),
        ("TIMETRACK_DATABASE_POOLER", "transaction".to_owned()),
        ("TIMETRACK_DATABASE_DIRECT_URL", db.url().to_owned()),
    ]
}

/// Runs `timetrack admin ...` with `envs`; its JSON output.
fn admin(envs: &[(&str, String)], args: &[&str]) -> Value {
    let mut command = Command::new(crate::BIN);
    command.args(args).env("TIMETRACK_LOG", "warn");
    for (name, value) in envs {
        command.env(name, value);
    }
    json_stdout(&command.output().unwrap())
}

/// A workspace with an owner, made through the pooler: its key and its id.
fn account(envs: &[(&str, String)], name: &str) -> (String, String) {
    let ws = admin(envs, &["admin", "create-workspace", "--name", name]);
    let ws = ws["id"].as_str().unwrap();
    let email = format!("{}@example.com", name.to_lowercase());
    let user = admin(
        envs,
        &[
            "admin",
            "create-user",
            "--workspace",
            ws,
            "--name",
            name,
            "--email",
            &email,
            "--role",
            "owner",
        ],
    );
    let user = user["id"].as_str().unwrap();
    let key = admin(
        envs,
        &["admin", "create-api-key", "--user", user, "--workspace", ws],
    );
    (key["key"].as_str().unwrap().to_owned(), ws.to_owned())
}

/// One caller's round: a client created (with an idempotency key, sent twice), a manual time
/// entry, and four reads (the client list, a search, a summary report, the running timer).
/// Every status, in order.
async fn round(
    http: &::reqwest::Client,
    base: &str,
    (key, workspace): &(String, String),
    tag: &str,
) -> Vec<(String, u16)> {
    let now = time::OffsetDateTime::now_utc();
    let day = |offset: i64| (now + time::Duration::days(offset)).date().to_string();
    let entry_start = (now - time::Duration::hours(2))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let entry_end = (now - time::Duration::hours(1))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let mut statuses = Vec::new();
    for attempt in ["first", "again"] {
        let res = http
            .post(format!("{base}/api/clients"))
            .bearer_auth(key)
            .header("Idempotency-Key", format!("pooler-{tag}"))
            .json(&json!({"name": format!("Client {tag}")}))
            .send()
            .await
            .unwrap();
        statuses.push((format!("create client ({attempt})"), res.status().as_u16()));
    }
    let res = http
        .post(format!("{base}/api/time-entries"))
        .bearer_auth(key)
        .json(&json!({"start": entry_start, "end": entry_end, "description": tag}))
        .send()
        .await
        .unwrap();
    statuses.push(("create entry".to_owned(), res.status().as_u16()));
    let reads = [
        format!("{base}/api/clients?limit=5"),
        format!(
            "{base}/api/reports/summary?from={}&to={}&group_by=day",
            day(-1),
            day(1)
        ),
        format!("{base}/api/time-entries/current"),
    ];
    for url in reads {
        let res = http.get(&url).bearer_auth(key).send().await.unwrap();
        statuses.push((url, res.status().as_u16()));
    }
    let res = http
        .post(format!(
            "{base}/api/integrations/automation/triggers/clients/find"
        ))
        .bearer_auth(key)
        .json(&json!({"workspace_id": workspace, "name": format!("Client {tag}")}))
        .send()
        .await
        .unwrap();
    statuses.push(("find".to_owned(), res.status().as_u16()));
    statuses
}

/// Two processes behind PgBouncer in transaction mode with three server connections: every
/// request of 16 concurrent callers from two workspaces answers 2xx (none finds a statement
/// missing or taken: statements are unnamed), every created client's event is delivered once,
/// the pooler holds at most three server connections for the two processes' pools, and each
/// process's LISTEN connection is on PostgreSQL itself.
#[tokio::test(flavor = "multi_thread")]
async fn two_processes_behind_pgbouncer_in_transaction_mode_answer_and_deliver_everything() {
    let _heavy = HEAVY.lock().await;
    let db = TestDatabase::new().await;
    let upstream = db.url().to_owned();
    let bouncer = tokio::task::spawn_blocking(move || {
        Pgbouncer::start_transaction_mode(&upstream, POOL_SIZE).unwrap()
    })
    .await
    .unwrap();
    let envs = behind_pooler(&bouncer, &db);
    let receiver = HttpsReceiver::start().await;
    let ca = receiver.ca_pem_path();
    let start_envs = envs.clone();
    let (keys, a, b) = tokio::task::spawn_blocking(move || {
        let keys = [account(&start_envs, "Ada"), account(&start_envs, "Bea")];
        let server = || {
            let mut command = serve(&start_envs[0].1)
                .trusting_receiver(&ca)
                .env("TIMETRACK_RATE_LIMIT_PER_MINUTE", "1000000")
                .env("TIMETRACK_RATE_LIMIT_PER_SECOND", "1000000");
            for (name, value) in &start_envs[1..] {
                command = command.env(name, value.clone());
            }
            command.start_blocking().unwrap()
        };
        (keys, server(), server())
    })
    .await
    .unwrap();
    let http = ::reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    for (key, _) in &keys {
        let res = http
            .post(format!(
                "{}/api/integrations/automation/webhooks/subscribe",
                a.base
            ))
            .bearer_auth(key)
            .json(&json!({"url": receiver.url("/pooled"), "events": ["CLIENT_CREATED"]}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201, "{}", res.text().await.unwrap());
    }

    const CALLERS: usize = 16;
    const ROUNDS: usize = 10;
    let callers: Vec<_> = (0..CALLERS)
        .map(|caller| {
            let http = http.clone();
            let key = keys[caller % keys.len()].clone();
            let base = [&a.base, &b.base][caller / 2 % 2].clone();
            tokio::spawn(async move {
                let mut statuses = Vec::new();
                for n in 0..ROUNDS {
                    let tag = format!("{caller}-{n}");
                    statuses.extend(round(&http, &base, &key, &tag).await);
                }
                statuses
            })
        })
        .collect();
    let mut failed = Vec::new();
    let mut answered = 0;
    for caller in callers {
        for (what, status) in caller.await.unwrap() {
            answered += 1;
            if !(200..300).contains(&status) {
                failed.push((what, status));
            }
        }
    }
    assert_eq!(answered, CALLERS * ROUNDS * 7);
    assert!(
        failed.is_empty(),
        "{} of {answered} requests failed, e.g. {:?}\n{}\n{}",
        failed.len(),
        &failed[..failed.len().min(5)],
        a.log().unwrap_or_default(),
        b.log().unwrap_or_default()
    );

    let clients = CALLERS * ROUNDS;
    assert!(
        receiver.wait_for(clients, Duration::from_secs(30)).await,
        "{} of {clients} deliveries",
        receiver.received().len()
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(unique_ids(&receiver.received(), "/pooled"), (clients, 0));

    // Two processes' pools (at least one connection per HTTP worker, the background and the
    // delivery pools each) reached PostgreSQL through at most three server connections.
    let pool_clients = bouncer.show("SHOW CLIENTS").await.unwrap();
    let servers = bouncer.show("SHOW SERVERS").await.unwrap();
    assert!(
        servers.len() <= POOL_SIZE as usize && !servers.is_empty(),
        "{servers:?}"
    );
    assert!(
        pool_clients.len() > 2 * POOL_SIZE as usize,
        "{} client connections",
        pool_clients.len()
    );
    // Each process listens on PostgreSQL itself: its LISTEN connection is not one of the
    // pooler's (whose application_name is PgBouncer's own).
    let (direct, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let listening = direct
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
             AND application_name LIKE 'timetrack-listener %'",
            &[],
        )
        .await
        .unwrap()
        .get::<_, i64>(0);
    assert_eq!(listening, 2);
    for server in [&a, &b] {
        let log = server.log().unwrap_or_default();
        assert!(!log.contains("prepared statement"), "{log}");
    }
    drop((a, b));
}

/// A transaction pooler without a direct URL is refused at start, saying what is missing, and
/// nothing is started.
#[test]
fn a_transaction_pooler_without_a_direct_url_is_refused_at_start() {
    let out = Command::new(crate::BIN)
        .args(["migrate"])
        .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
        .env("TIMETRACK_DATABASE_POOLER", "transaction")
        .env_remove("TIMETRACK_DATABASE_DIRECT_URL")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "TIMETRACK_DATABASE_DIRECT_URL (--database-direct-url) is required with \
             --database-pooler transaction"
        ),
        "{stderr}"
    );
    let out = Command::new(crate::BIN)
        .args(["migrate", "--database-pooler", "sometimes"])
        .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("possible values: none, transaction"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
