//! Black-box tests of the real `timetrack` binary over HTTP.
//!
//! What these tests print goes through `eprintln!`, which the test harness captures and shows
//! for a failing test only, so a passing run stays quiet.
#![allow(clippy::print_stderr)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use timetrack_testkit::{ServeCommand, ServerProcess, TestDatabase};

const BIN: &str = env!("CARGO_BIN_EXE_timetrack");

/// Runs a one-shot command of the binary.
fn run(args: &[&str], database_url: &str) -> Output {
    Command::new(BIN)
        .args(args)
        .env("DATABASE_URL", database_url)
        .env("TIMETRACK_LOG", "warn")
        .output()
        .expect("running timetrack")
}

fn json_stdout(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {:?}", String::from_utf8_lossy(&out.stdout)))
}

/// Creates a workspace (with `workspace_args`), a user Ada and an API key through the CLI, and
/// returns the key.
fn seed_account(url: &str, workspace_args: &[&str]) -> String {
    let mut args = vec!["admin", "create-workspace"];
    args.extend_from_slice(workspace_args);
    let ws = json_stdout(&run(&args, url));
    let ws_id = ws["id"].as_str().unwrap().to_owned();
    let user = json_stdout(&run(
        &[
            "admin",
            "create-user",
            "--workspace",
            &ws_id,
            "--name",
            "Ada",
            "--email",
            "ada@example.com",
        ],
        url,
    ));
    let key = json_stdout(&run(
        &[
            "admin",
            "create-api-key",
            "--user",
            user["id"].as_str().unwrap(),
            "--workspace",
            &ws_id,
        ],
        url,
    ));
    key["key"].as_str().unwrap().to_owned()
}

/// `timetrack serve` on `database_url` as these tests start it: metrics on a port of their own,
/// stdout captured, the log shown if the test fails.
fn serve(database_url: &str) -> ServeCommand {
    tuned(ServeCommand::new(Path::new(BIN), database_url))
}

/// The settings every server of these tests has.
fn tuned(command: ServeCommand) -> ServeCommand {
    command
        .with_metrics()
        .capture_stdout()
        .log_shown_on_failure(&Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e-logs"))
}

mod reqwest {
    //! A tiny blocking HTTP/1.1 client, enough to talk to the server under test.
    pub use ::reqwest::*;

    /// `GET url` with an optional bearer key: status and body.
    pub fn get_with(url: &str, key: Option<&str>) -> std::io::Result<(u16, String)> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let mut req = Client::new()
                .get(url)
                .timeout(std::time::Duration::from_secs(5));
            if let Some(key) = key {
                req = req.bearer_auth(key);
            }
            let res = req.send().await.map_err(std::io::Error::other)?;
            let status = res.status().as_u16();
            let body = res.text().await.map_err(std::io::Error::other)?;
            Ok((status, body))
        })
    }
}

fn get_json(server: &ServerProcess, path: &str, key: &str) -> (u16, Value) {
    let (status, body) = reqwest::get_with(&format!("{}{path}", server.base), Some(key)).unwrap();
    (status, serde_json::from_str(&body).unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn admin_commands_issue_a_working_key_and_revocation_takes_effect() {
    let db = TestDatabase::new().await;
    let url = db.url().to_owned();
    tokio::task::spawn_blocking(move || {
        let ws = json_stdout(&run(
            &[
                "admin",
                "create-workspace",
                "--name",
                "Acme",
                "--timezone",
                "Europe/Paris",
                "--currency",
                "EUR",
            ],
            &url,
        ));
        assert_eq!(ws["name"], "Acme");
        assert_eq!(ws["timezone"], "Europe/Paris");
        assert_eq!(ws["currency"], "EUR");
        let ws_id = ws["id"].as_str().unwrap().to_owned();

        let user = json_stdout(&run(
            &[
                "admin",
                "create-user",
                "--workspace",
                &ws_id,
                "--name",
                "Ada",
                "--email",
                "ada@example.com",
            ],
            &url,
        ));
        assert_eq!(user["email"], "ada@example.com");
        assert_eq!(user["workspace_id"], ws_id.as_str());
        let user_id = user["id"].as_str().unwrap().to_owned();

        let key = json_stdout(&run(
            &[
                "admin",
                "create-api-key",
                "--user",
                &user_id,
                "--workspace",
                &ws_id,
                "--name",
                "zapier",
            ],
            &url,
        ));
        let secret = key["key"].as_str().unwrap().to_owned();
        assert!(secret.starts_with("tt_") && secret.len() == 46, "{secret}");
        assert_eq!(key["prefix"], &secret[..10]);
        assert_eq!(key["name"], "zapier");

        let mut server = serve(&url)
            .env("TIMETRACK_AUTH_CACHE_SECONDS", "1")
            .start_blocking()
            .unwrap();
        let (status, me) = get_json(&server, "/api/me", &secret);
        assert_eq!(status, 200);
        assert_eq!(me["user"]["id"], user_id.as_str());
        assert_eq!(me["workspace"]["id"], ws_id.as_str());

        let revoked = json_stdout(&run(
            &[
                "admin",
                "revoke-api-key",
                "--id",
                key["id"].as_str().unwrap(),
            ],
            &url,
        ));
        assert!(revoked["revoked_at"].is_string());
        std::thread::sleep(Duration::from_millis(1100));
        let (status, body) = get_json(&server, "/api/me", &secret);
        assert_eq!(
            (status, body),
            (401, serde_json::json!({"error": "Unauthorized"}))
        );

        assert!(server.stop().unwrap().success());
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn admin_commands_refuse_bad_input_with_a_message_and_no_output() {
    let db = TestDatabase::new().await;
    let url = db.url().to_owned();
    tokio::task::spawn_blocking(move || {
        for args in [
            vec![
                "admin",
                "create-workspace",
                "--name",
                "A",
                "--timezone",
                "Mars/Base",
            ],
            vec![
                "admin",
                "create-workspace",
                "--name",
                "A",
                "--currency",
                "XXX1",
            ],
            vec!["admin", "create-workspace", "--name", "   "],
            vec![
                "admin",
                "create-user",
                "--workspace",
                "00000000-0000-0000-0000-000000000000",
                "--name",
                "A",
                "--email",
                "a@example.com",
            ],
            vec![
                "admin",
                "revoke-api-key",
                "--id",
                "00000000-0000-0000-0000-000000000000",
            ],
        ] {
            let out = run(&args, &url);
            assert!(!out.status.success(), "{args:?}");
            assert!(out.stdout.is_empty(), "{args:?}");
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("error: "),
                "{args:?}"
            );
        }
        let out = run(
            &[
                "admin",
                "create-user",
                "--workspace",
                "not-a-uuid",
                "--name",
                "A",
                "--email",
                "a@example.com",
            ],
            &url,
        );
        assert_eq!(out.status.code(), Some(2), "clap usage error");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn migrate_applies_pending_migrations_once() {
    let db = TestDatabase::new().await;
    let name = format!("timetrack_e2e_blank_{}", uuid::Uuid::new_v4().simple());
    let (client, conn) =
        tokio_postgres::connect(&TestDatabase::server_url(), tokio_postgres::NoTls)
            .await
            .unwrap();
    tokio::spawn(conn);
    client
        .batch_execute(&format!("CREATE DATABASE \"{name}\""))
        .await
        .unwrap();
    let blank = db
        .url()
        .replace(db.url().rsplit('/').next().unwrap(), &name);
    let blank_url = blank.clone();
    let (first, second) = tokio::task::spawn_blocking(move || {
        (
            json_stdout(&run(&["migrate"], &blank_url)),
            json_stdout(&run(&["migrate"], &blank_url)),
        )
    })
    .await
    .unwrap();
    let migrations = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../migrations"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().is_dir())
        .count();
    assert!(migrations >= 1);
    assert_eq!(
        first["applied"].as_array().unwrap().len(),
        migrations,
        "{first}"
    );
    assert_eq!(second, serde_json::json!({"applied": []}));
    client
        .batch_execute(&format!("DROP DATABASE \"{name}\" WITH (FORCE)"))
        .await
        .unwrap();
}

/// The newcomer's path: no DATABASE_URL, nothing started by hand.
#[test]
fn serve_without_database_url_runs_on_a_private_cluster_it_stops_afterwards() {
    let dir = std::env::temp_dir().join(format!("timetrack-e2e-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let start = |dir: &Path| {
        tuned(ServeCommand::on_private_cluster(Path::new(BIN)))
            .without_command_name()
            .current_dir(dir)
            .start_blocking()
            .unwrap()
    };

    let mut server = start(&dir);
    let banner = read_banner(&mut server);
    let key = banner
        .split_whitespace()
        .find(|w| w.starts_with("tt_"))
        .map(|w| w.trim_end_matches('\'').to_owned())
        .expect("key in banner");
    assert!(
        banner.contains(&format!(
            "curl -s {}/api/me -H 'Authorization: Bearer {key}'",
            server.base
        )),
        "{banner}"
    );
    let (status, me) = get_json(&server, "/api/me", &key);
    assert_eq!(status, 200);
    assert_eq!(me["workspace"]["name"], "Demo workspace");
    assert_eq!(me["user"]["email"], "demo@example.com");

    let data = dir.join(".timetrack");
    assert!(data.join("pgdata/postmaster.pid").exists());
    // The key sealing webhook secrets at rest was made for this cluster, readable by its owner.
    let secret_key = std::fs::read_to_string(data.join("secret.key")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(data.join("secret.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert!(server.stop().unwrap().success());
    assert!(
        !data.join("pgdata/postmaster.pid").exists(),
        "PostgreSQL still running after the server stopped"
    );

    // A second start reuses the data and shows the same key.
    let mut server = start(&dir);
    assert!(read_banner(&mut server).contains(&key));
    assert_eq!(get_json(&server, "/api/me", &key).0, 200);
    assert!(server.stop().unwrap().success());
    assert_eq!(
        std::fs::read_to_string(data.join("secret.key")).unwrap(),
        secret_key
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Ctrl-C in a terminal signals the whole foreground process group: timetrack stops gracefully
/// (a request in flight is answered), and its private cluster, in a group of its own, is stopped
/// by timetrack afterwards, with no warning on the way.
#[test]
fn ctrl_c_finishes_requests_in_flight_then_stops_the_private_cluster_quietly() {
    use std::io::{Read as _, Write as _};
    let dir = std::env::temp_dir().join(format!("timetrack-e2e-ctrlc-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut server = tuned(ServeCommand::on_private_cluster(Path::new(BIN)))
        .without_command_name()
        .current_dir(&dir)
        .env("TIMETRACK_LOG", "info")
        // A process group like a terminal's foreground job, led by timetrack.
        .own_process_group()
        .start_blocking()
        .unwrap();
    let banner = read_banner(&mut server);
    let key = banner
        .split_whitespace()
        .find(|w| w.starts_with("tt_"))
        .map(|w| w.trim_end_matches('\'').to_owned())
        .expect("key in banner");
    let data = dir.join(".timetrack");
    let postmaster: i32 = std::fs::read_to_string(data.join("pgdata/postmaster.pid"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let group = nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(postmaster))).unwrap();
    assert_ne!(
        group.as_raw(),
        server.pid() as i32,
        "the cluster shares timetrack's process group"
    );

    // A request in flight: headers and half the body sent before the signal.
    let body = br#"{"name":"Finished after Ctrl-C"}"#;
    let mut conn = std::net::TcpStream::connect(server.base.trim_start_matches("http://")).unwrap();
    write!(
        conn,
        "POST /api/clients HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    conn.write_all(&body[..10]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let leader = nix::unistd::Pid::from_raw(-(server.pid() as i32));
    nix::sys::signal::kill(leader, nix::sys::signal::Signal::SIGINT).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    conn.write_all(&body[10..]).unwrap();
    let mut answer = String::new();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");

    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = server.exited() {
            break status;
        }
        assert!(Instant::now() < deadline, "still running after Ctrl-C");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    assert!(
        !data.join("pgdata/postmaster.pid").exists(),
        "PostgreSQL still running after timetrack stopped"
    );
    let log = server.log().unwrap();
    assert!(
        log.contains("stopping: requests in flight finish first"),
        "{log}"
    );
    assert!(!log.contains("forced shutdown"), "{log}");
    assert!(!log.contains(" WARN ") && !log.contains(" ERROR "), "{log}");
    // PostgreSQL itself saw a fast shutdown from timetrack, not the terminal's SIGINT first.
    let pg_log = std::fs::read_to_string(data.join("postgres.log")).unwrap();
    assert!(pg_log.contains("fast shutdown request"), "{pg_log}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Fatal errors say what failed, why, and which setting to change; each is printed once.
#[test]
fn start_up_errors_name_the_cause_and_the_setting_and_print_once() {
    /// Arguments, environment, and what stderr must say.
    type Case = (Vec<String>, Vec<(&'static str, String)>, Vec<String>);
    let cases: Vec<Case> = vec![
        (
            vec!["migrate".into()],
            vec![(
                "DATABASE_URL",
                "postgres://someone:pw@127.0.0.1:1/nothing".into(),
            )],
            vec![
                "cannot connect to PostgreSQL at 127.0.0.1:1".into(),
                "Connection refused".into(),
                "DATABASE_URL".into(),
            ],
        ),
        (
            vec!["serve".into(), "--bind".into(), "localhost".into()],
            vec![],
            vec!["--bind".into(), "host:port".into()],
        ),
        (
            vec!["--bnd".into(), "127.0.0.1:0".into()],
            vec![],
            vec!["a similar argument exists: '--bind'".into()],
        ),
    ];
    for (args, envs, expected) in cases {
        let out = Command::new(BIN)
            .args(&args)
            .env_remove("DATABASE_URL")
            .env_remove("TIMETRACK_SECRET_KEY")
            .envs(envs)
            .env("TIMETRACK_LOG", "warn")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        for text in &expected {
            assert!(stderr.contains(text.as_str()), "{args:?}: {stderr}");
        }
        assert!(!stderr.contains("to migrate"), "{args:?}: {stderr}");
        let error_lines = stderr.lines().filter(|l| l.contains("error")).count();
        assert_eq!(error_lines, 1, "{args:?}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_taken_port_names_the_flag_that_sets_it() {
    let db = TestDatabase::new().await;
    let url = db.url().to_owned();
    tokio::task::spawn_blocking(move || {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let taken = taken.local_addr().unwrap().to_string();
        for (flag, what) in [("--bind", "the API"), ("--metrics-bind", "metrics")] {
            let mut args = vec!["serve"];
            for other in ["--bind", "--metrics-bind"] {
                args.extend([other, if other == flag { &taken } else { "127.0.0.1:0" }]);
            }
            let out = Command::new(BIN)
                .args(&args)
                .env("DATABASE_URL", &url)
                .env("TIMETRACK_SECRET_KEY", timetrack_testkit::TEST_SECRET_KEY)
                .env("TIMETRACK_LOG", "warn")
                .output()
                .unwrap();
            assert!(!out.status.success(), "{flag}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains(&format!("cannot listen for {what} on {taken}"))
                    && stderr.contains(&format!("pick another port with {flag}")),
                "{flag}: {stderr}"
            );
            let error_lines = stderr.lines().filter(|l| l.contains("error")).count();
            assert_eq!(error_lines, 1, "{flag}: {stderr}");
        }
    })
    .await
    .unwrap();
}

#[test]
fn help_says_what_timetrack_is_and_keeps_shared_options_apart() {
    let out = Command::new(BIN).arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let first = help.lines().next().unwrap();
    assert!(
        first.starts_with("timetrack: a time-tracking API"),
        "{first}"
    );
    let out = Command::new(BIN)
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("Shared options (every command):"), "{help}");
    assert!(!help.contains("=]"), "an empty [env: X=] marker: {help}");
    assert!(
        help.contains("--webhook-allow-private-targets\n"),
        "a switch shows no value: {help}"
    );
}

#[test]
fn serve_on_a_database_url_without_a_secret_key_says_how_to_make_one() {
    let out = Command::new(BIN)
        .arg("serve")
        .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
        .env_remove("TIMETRACK_SECRET_KEY")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("TIMETRACK_SECRET_KEY (--secret-key) is required with DATABASE_URL")
            && stderr.contains("openssl rand -base64 32"),
        "{stderr}"
    );
    let out = Command::new(BIN)
        .arg("serve")
        .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
        .env("TIMETRACK_SECRET_KEY", "c2hvcnQ=")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("this one is 5"), "{stderr}");
}

#[test]
fn serve_without_postgres_binaries_says_what_to_install() {
    let dir = std::env::temp_dir().join(format!("timetrack-e2e-nopg-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(BIN)
        .current_dir(&dir)
        .env_remove("DATABASE_URL")
        .env("TIMETRACK_PG_BIN_DIR", &dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("does not contain initdb, postgres and pg_isready"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn read_banner(server: &mut ServerProcess) -> String {
    let stdout = server.take_stdout().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut banner = String::new();
    for _ in 0..4 {
        banner.push_str(&lines.next().expect("banner line").unwrap());
        banner.push('\n');
    }
    banner
}

/// Two `serve` processes on one database share the PostgreSQL rate-limit store.
#[tokio::test(flavor = "multi_thread")]
async fn two_processes_share_the_postgres_rate_limit_store() {
    let db = TestDatabase::new().await;
    let url = db.url().to_owned();
    tokio::task::spawn_blocking(move || {
        let key = seed_account(&url, &["--name", "Shared"]);
        let serve = || {
            serve(&url)
                .env("TIMETRACK_RATE_LIMIT_STORE", "postgres")
                .env("TIMETRACK_RATE_LIMIT_PER_MINUTE", "5")
                .env("TIMETRACK_RATE_LIMIT_PER_SECOND", "100")
                .start_blocking()
                .unwrap()
        };
        let (a, b) = (serve(), serve());
        let statuses: Vec<u16> = (0..8)
            .map(|n| {
                let server = if n % 2 == 0 { &a } else { &b };
                reqwest::get_with(&format!("{}/api/me", server.base), Some(&key))
                    .unwrap()
                    .0
            })
            .collect();
        assert_eq!(
            statuses.iter().filter(|s| **s == 200).count(),
            5,
            "{statuses:?}"
        );
        assert!(
            statuses.iter().all(|s| *s == 200 || *s == 429),
            "{statuses:?}"
        );
    })
    .await
    .unwrap();
}

mod deliveries {
    //! Webhook deliveries from the real binary to a local HTTPS receiver with its own CA.

    use std::process::Command;
    use std::time::{Duration, Instant};

    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use hmac::{Hmac, Mac};
    use serde_json::{Value, json};
    use sha2::Sha256;
    use timetrack_testkit::{Behaviour, HttpsReceiver, Received, TestDatabase};

    use super::{ServerProcess, json_stdout, run, seed_account, serve};

    /// Checks a Standard Webhooks signature with an HMAC computed here, not by the service's code.
    fn assert_signed(received: &Received, secret: &str) {
        let id = received.header("webhook-id").unwrap();
        let timestamp = received.header("webhook-timestamp").unwrap();
        let key = STANDARD
            .decode(secret.strip_prefix("whsec_").unwrap())
            .unwrap();
        let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
        mac.update(format!("{id}.{timestamp}.").as_bytes());
        mac.update(&received.body);
        let expected = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
        assert_eq!(
            received.header("webhook-signature"),
            Some(expected.as_str())
        );
        let age =
            time::OffsetDateTime::now_utc().unix_timestamp() - timestamp.parse::<i64>().unwrap();
        assert!((0..60).contains(&age), "timestamp {timestamp}");
    }

    /// The path holding the `standardwebhooks` package from PyPI, installed on first use: an
    /// implementation of the scheme independent of the service's.
    fn standard_webhooks() -> std::path::PathBuf {
        static INSTALLED: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
        INSTALLED
            .get_or_init(|| {
                timetrack_testkit::python_package(
                    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
                    "standardwebhooks==1.1.0",
                    "standardwebhooks",
                )
            })
            .clone()
    }

    /// Runs a verifier (`program`, which reads a case `{secret, body, headers}` of `received` on
    /// stdin) and asserts that it printed `verified`.
    fn assert_verifier_accepts(program: Command, received: &Received, secret: &str) {
        let (stdout, stderr) = verifier_says(program, received, secret);
        assert_eq!(stdout, "verified", "{stderr}");
    }

    /// What a verifier (`program`, as for [`assert_verifier_accepts`]) printed on stdout and on
    /// stderr for `received` checked with `secret`.
    fn verifier_says(mut program: Command, received: &Received, secret: &str) -> (String, String) {
        let case = json!({
            "secret": secret,
            "body": String::from_utf8(received.body.clone()).unwrap(),
            "headers": {
                "webhook-id": received.header("webhook-id"),
                "webhook-timestamp": received.header("webhook-timestamp"),
                "webhook-signature": received.header("webhook-signature"),
            },
        });
        let mut child = program
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {program:?}: {e}"));
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(case.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            String::from_utf8_lossy(&out.stdout).trim().to_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// The `standardwebhooks` package's verifier, as a program for [`verifier_says`]: it prints
    /// `verified`, or `rejected: <why>`.
    fn python_verifier() -> Command {
        let script = "import json, sys\n\
                      from standardwebhooks.webhooks import Webhook\n\
                      case = json.load(sys.stdin)\n\
                      try:\n\
                      \x20   Webhook(case['secret']).verify(case['body'].encode(), case['headers'])\n\
                      except Exception as e:\n\
                      \x20   print('rejected:', e)\n\
                      \x20   sys.exit(0)\n\
                      print('verified')\n";
        let mut python = Command::new("python3");
        python
            .arg("-c")
            .arg(script)
            .env("PYTHONPATH", standard_webhooks());
        python
    }

    /// Verifies a delivery with the `standardwebhooks` package.
    fn assert_verified_by_standard_webhooks(received: &Received, secret: &str) {
        assert_verifier_accepts(python_verifier(), received, secret);
    }

    /// The Node.js example of `docs/integration-guide.md` ("Verifying the signature"), as it is
    /// written there.
    fn guides_node_example() -> String {
        let guide = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../docs/integration-guide.md"),
        )
        .unwrap();
        let start = guide.find("```js\n").expect("the guide has a js example") + "```js\n".len();
        let end = start + guide[start..].find("```").unwrap();
        guide[start..end].to_owned()
    }

    /// Verifies a delivery with the guide's Node.js example, on the npm `standardwebhooks`
    /// package.
    fn assert_verified_by_the_guides_node_example(received: &Received, secret: &str) {
        static MODULES: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
        let modules = MODULES.get_or_init(|| {
            timetrack_testkit::npm_package(
                std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
                "standardwebhooks@1.1.1",
                "standardwebhooks",
            )
        });
        let script = format!(
            "{}\nconst c = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n\
             verify(c.secret, c.body, c.headers);\nconsole.log('verified');\n",
            guides_node_example()
        );
        let mut node = Command::new("node");
        node.arg("-e").arg(script).env("NODE_PATH", modules);
        assert_verifier_accepts(node, received, secret);
    }

    /// Fields drop in order: the server stops before its database goes.
    struct Setup {
        server: ServerProcess,
        receiver: HttpsReceiver,
        key: String,
        client: ::reqwest::Client,
        _db: TestDatabase,
    }

    impl Setup {
        async fn new() -> Self {
            Self::with(&[]).await
        }

        /// A setup whose server also has the settings `env`.
        async fn with(env: &[(&'static str, &'static str)]) -> Self {
            let env = env.to_vec();
            let db = TestDatabase::new().await;
            let receiver = HttpsReceiver::start().await;
            let url = db.url().to_owned();
            let ca = receiver.ca_pem_path();
            let (key, server) = tokio::task::spawn_blocking(move || {
                let key = seed_account(
                    &url,
                    &["--name", "Deliveries", "--timezone", "Europe/Paris"],
                );
                let mut command = serve(&url)
                    .env("TIMETRACK_WEBHOOK_ALLOW_PRIVATE_TARGETS", "true")
                    .env("TIMETRACK_WEBHOOK_ROOT_CERTS", ca.to_string_lossy())
                    .env("TIMETRACK_WEBHOOK_RETRY_SCHEDULE", "1s,1s,1s")
                    .env("TIMETRACK_RATE_LIMIT_PER_MINUTE", "1000000")
                    .env("TIMETRACK_RATE_LIMIT_PER_SECOND", "1000000");
                for (name, value) in env {
                    command = command.env(name, value);
                }
                let server = command.start_blocking().unwrap();
                (key, server)
            })
            .await
            .unwrap();
            Self {
                _db: db,
                receiver,
                server,
                key,
                client: ::reqwest::Client::new(),
            }
        }

        async fn post(&self, path: &str, body: Value) -> (u16, Value) {
            let res = self
                .client
                .post(format!("{}{path}", self.server.base))
                .bearer_auth(&self.key)
                .json(&body)
                .send()
                .await
                .unwrap();
            (res.status().as_u16(), res.json().await.unwrap())
        }

        async fn get(&self, path: &str) -> Value {
            self.client
                .get(format!("{}{path}", self.server.base))
                .bearer_auth(&self.key)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap()
        }

        /// `method` on `path` with an optional JSON body: status and body (`null` when empty).
        async fn send(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
            let mut req = self
                .client
                .request(
                    method.parse().unwrap(),
                    format!("{}{path}", self.server.base),
                )
                .bearer_auth(&self.key);
            if let Some(body) = body {
                req = req.json(&body);
            }
            let res = req.send().await.unwrap();
            let status = res.status().as_u16();
            let text = res.text().await.unwrap();
            (status, serde_json::from_str(&text).unwrap_or(Value::Null))
        }

        async fn subscribe(&self, path: &str, events: &[&str]) -> (String, String) {
            let (status, body) = self
                .post(
                    "/api/integrations/automation/webhooks/subscribe",
                    json!({"url": self.receiver.url(path), "events": events}),
                )
                .await;
            assert_eq!(status, 201, "{body}");
            (
                body["webhook"]["id"].as_str().unwrap().to_owned(),
                body["webhook"]["secret"].as_str().unwrap().to_owned(),
            )
        }
    }

    fn on<'a>(received: &'a [Received], path: &str) -> Vec<&'a Received> {
        received.iter().filter(|r| r.path == path).collect()
    }

    /// The `jsonschema` package (draft 2020-12), an independent validator.
    fn json_schema_package() -> std::path::PathBuf {
        static INSTALLED: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
        INSTALLED
            .get_or_init(|| {
                timetrack_testkit::python_package(
                    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
                    "jsonschema==4.26.0",
                    "jsonschema",
                )
            })
            .clone()
    }

    /// Validates every one of `received` against the schema the event-type catalog gives for its
    /// `X-Webhook-Event`, and every sample of the catalog against its own schema, with the
    /// `jsonschema` package; returns the types seen.
    async fn assert_valid_against_the_catalog(s: &Setup, received: &[&Received]) -> Vec<String> {
        let catalog = s.get("/api/integrations/automation/event-types").await;
        let schemas: serde_json::Map<String, Value> = catalog
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["type"].as_str().unwrap().to_owned(), e["schema"].clone()))
            .collect();
        let mut bodies: Vec<Value> = catalog
            .as_array()
            .unwrap()
            .iter()
            .map(|e| json!({"type": e["type"], "body": e["sample"].to_string(), "what": "sample"}))
            .collect();
        let mut types = Vec::new();
        for r in received {
            let t = r.header("x-webhook-event").unwrap().to_owned();
            bodies.push(json!({
                "type": t,
                "body": String::from_utf8(r.body.clone()).unwrap(),
                "what": "delivery",
            }));
            types.push(t);
        }
        let script = "import json, sys\n\
                      from jsonschema import Draft202012Validator\n\
                      case = json.load(sys.stdin)\n\
                      for schema in case['schemas'].values():\n\
                      \x20   Draft202012Validator.check_schema(schema)\n\
                      bad = []\n\
                      for item in case['bodies']:\n\
                      \x20   v = Draft202012Validator(case['schemas'][item['type']])\n\
                      \x20   for e in v.iter_errors(json.loads(item['body'])):\n\
                      \x20       bad.append(item['what'] + ' ' + item['type'] + ': ' + e.message)\n\
                      canary = Draft202012Validator(case['schemas']['TIMER_STARTED'])\n\
                      caught = len(list(canary.iter_errors(json.loads(case['canary']))))\n\
                      print(json.dumps({'checked': len(case['bodies']), 'bad': bad, 'caught': caught}))\n";
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(script)
            .env("PYTHONPATH", json_schema_package())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(
                json!({
                    "schemas": schemas,
                    "bodies": bodies,
                    // A stopped timer is not a started one: the validator must say so.
                    "canary": catalog[1]["sample"].to_string(),
                })
                .to_string()
                .as_bytes(),
            )
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let verdict: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            panic!(
                "the validator failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert_eq!(verdict["bad"], json!([]), "{verdict}");
        assert_eq!(verdict["checked"], bodies.len());
        assert!(verdict["caught"].as_u64().unwrap() > 0, "{verdict}");
        types.sort();
        types.dedup();
        types
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn every_delivered_body_of_every_type_validates_against_the_catalogs_schema() {
        let s = Setup::new().await;
        let subscribable: Vec<String> = s
            .get("/api/integrations/automation/event-types")
            .await
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["subscribable"] == true)
            .map(|e| e["type"].as_str().unwrap().to_owned())
            .collect();
        let listed: Vec<&str> = subscribable.iter().map(String::as_str).collect();
        let (id, _) = s.subscribe("/all", &listed).await;
        let created = |(status, body): (u16, Value)| {
            assert!(status < 300, "{status} {body}");
            body["id"].as_str().unwrap_or_default().to_owned()
        };
        let client = created(
            s.send(
                "POST",
                "/api/clients",
                Some(json!({"name": "Acme", "email": "a@acme.example"})),
            )
            .await,
        );
        created(
            s.send(
                "PATCH",
                &format!("/api/clients/{client}"),
                Some(json!({"name": "Acme 2", "phone": null})),
            )
            .await,
        );
        let project = created(
            s.send(
                "POST",
                "/api/projects",
                Some(json!({"name": "Site", "client_id": client})),
            )
            .await,
        );
        created(
            s.send(
                "PATCH",
                &format!("/api/projects/{project}"),
                Some(json!({"name": "Site 2"})),
            )
            .await,
        );
        let timer = created(
            s.send(
                "POST",
                "/api/time-entries/start",
                Some(json!({"project_id": project, "billable": true})),
            )
            .await,
        );
        created(
            s.send(
                "PATCH",
                &format!("/api/time-entries/{timer}"),
                Some(json!({"description": "Call"})),
            )
            .await,
        );
        created(s.send("POST", "/api/time-entries/stop", None).await);
        let manual = created(
            s.send(
                "POST",
                "/api/time-entries",
                Some(json!({"start": "2026-01-05T09:00:00Z", "end": "2026-01-05T10:00:00Z"})),
            )
            .await,
        );
        created(
            s.send(
                "PATCH",
                &format!("/api/time-entries/{manual}"),
                Some(json!({"end": "2026-01-05T11:00:00Z", "project_id": project})),
            )
            .await,
        );
        for path in [
            format!("/api/time-entries/{timer}"),
            format!("/api/time-entries/{manual}"),
            format!("/api/projects/{project}"),
            format!("/api/clients/{client}"),
        ] {
            assert_eq!(s.send("DELETE", &path, None).await.0, 200, "{path}");
        }
        let (status, _) = s
            .post(
                &format!("/api/integrations/automation/webhooks/{id}/test"),
                json!({}),
            )
            .await;
        assert_eq!(status, 202);
        let received =
            received_until(&s, Duration::from_secs(20), |r| on(r, "/all").len() >= 14).await;
        let all = on(&received, "/all");
        assert_eq!(all.len(), 14);
        let seen = assert_valid_against_the_catalog(&s, &all).await;
        let mut expected: Vec<String> = subscribable
            .iter()
            .filter(|t| !t.starts_with("WEBHOOK_"))
            .cloned()
            .chain(["WEBHOOK_TEST".to_owned()])
            .collect();
        expected.sort();
        assert_eq!(
            seen, expected,
            "every data type and the test, each validated"
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn every_event_type_arrives_signed_with_the_exact_payload() {
        let s = Setup::new().await;
        let (_, secret) = s
            .subscribe(
                "/all",
                &[
                    "CLIENT_CREATED",
                    "TIMER_STARTED",
                    "TIMER_STOPPED",
                    "TIME_ENTRY_CREATED",
                ],
            )
            .await;
        let (_, client) = s
            .post(
                "/api/clients",
                json!({"name": "Acme", "email": "a@acme.example"}),
            )
            .await;
        let (_, started) = s
            .post("/api/time-entries/start", json!({"description": "timer"}))
            .await;
        let (_, _) = s.post("/api/time-entries/stop", json!({})).await;
        let (_, manual) = s
            .post(
                "/api/time-entries",
                json!({"start": "2026-01-05T23:30:00Z", "end": "2026-01-06T00:00:00Z"}),
            )
            .await;
        assert!(
            s.receiver.wait_for(4, Duration::from_secs(15)).await,
            "got {:?}",
            s.receiver.received().len()
        );

        let received = s.receiver.received();
        let by_type = |event: &str| -> Value {
            let r = received
                .iter()
                .find(|r| r.header("x-webhook-event") == Some(event))
                .unwrap_or_else(|| panic!("no {event}"));
            assert_signed(r, &secret);
            assert_verified_by_standard_webhooks(r, &secret);
            assert_verified_by_the_guides_node_example(r, &secret);
            assert_eq!(r.header("content-type"), Some("application/json"));
            serde_json::from_slice(&r.body).unwrap()
        };
        let created = by_type("CLIENT_CREATED");
        assert_eq!(created["id"], client["id"]);
        assert_eq!(created["email"], "a@acme.example");
        assert_eq!(
            created
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect::<Vec<_>>(),
            [
                "id",
                "name",
                "email",
                "phone",
                "address",
                "status",
                "type",
                "workspace",
                "createdAt",
                "updatedAt"
            ]
        );
        let start = by_type("TIMER_STARTED");
        assert_eq!(
            (start["id"].clone(), start["action"].clone()),
            (started["id"].clone(), json!("start_timer"))
        );
        assert!(start.get("endTime").is_none() && start.get("duration").is_none());
        let stop = by_type("TIMER_STOPPED");
        assert_eq!(
            (stop["id"].clone(), stop["action"].clone()),
            (started["id"].clone(), json!("stop_timer"))
        );
        let manual_body = by_type("TIME_ENTRY_CREATED");
        assert_eq!(manual_body["id"], manual["id"]);
        assert_eq!(manual_body["duration"], 1800);
        // Europe/Paris: 23:30Z is 00:30 on the 6th.
        assert_eq!(manual_body["date"], "2026-01-06");
        // The fallback of the same trigger is the same document.
        let fallback = s
            .get("/api/integrations/automation/triggers/time-entries/manual_entry/fallback")
            .await;
        assert_eq!(fallback[0], manual_body);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_500_is_retried_with_the_same_webhook_id_and_a_410_ends_the_subscription() {
        let s = Setup::new().await;
        s.receiver
            .respond("/flaky", Behaviour::Sequence(vec![500, 500, 200]));
        s.receiver.respond("/gone", Behaviour::Respond(410, vec![]));
        let (flaky_id, _) = s.subscribe("/flaky", &["CLIENT_CREATED"]).await;
        let (gone_id, _) = s.subscribe("/gone", &["CLIENT_CREATED"]).await;
        s.post("/api/clients", json!({"name": "First"})).await;
        assert!(
            s.receiver.wait_for(4, Duration::from_secs(20)).await,
            "got {}",
            s.receiver.received().len()
        );
        let received = s.receiver.received();
        let flaky = on(&received, "/flaky");
        assert_eq!(flaky.len(), 3);
        let ids: Vec<_> = flaky
            .iter()
            .map(|r| r.header("webhook-id").unwrap())
            .collect();
        assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
        assert!(
            flaky[1].at - flaky[0].at >= Duration::from_millis(700),
            "retried after the schedule's wait"
        );

        // The outcome is recorded just after the receiver answered: wait for it.
        let mut log = Value::Null;
        for _ in 0..50 {
            log = s
                .get(&format!(
                    "/api/integrations/automation/webhooks/{flaky_id}/deliveries"
                ))
                .await;
            if log["data"][0]["status"] == "DELIVERED" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(log["data"][0]["status"], "DELIVERED", "{log}");
        assert_eq!(log["data"][0]["attempts"], 3);
        assert_eq!(log["data"][0]["last_status_code"], 200);

        // The 410 subscription is gone: not listed, and a new event does not reach it.
        let list = s.get("/api/integrations/automation/webhooks").await;
        let ids: Vec<&str> = list["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [flaky_id.as_str()]);
        assert!(!ids.contains(&gone_id.as_str()));
        s.post("/api/clients", json!({"name": "Second"})).await;
        assert!(s.receiver.wait_for(5, Duration::from_secs(10)).await);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(on(&s.receiver.received(), "/gone").len(), 1);

        // Failed attempts are WARN lines, one per webhook per minute: the two 500s are one line.
        let log = s.server.log().unwrap();
        let failed = |id: &str| {
            log.lines()
                .filter(|l| l.contains(" WARN ") && l.contains("delivery attempt failed"))
                .filter(|l| l.contains(id))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        let flaky_lines = failed(&flaky_id);
        assert_eq!(flaky_lines.len(), 1, "{log}");
        assert!(
            flaky_lines[0].contains(r#"outcome="HTTP 500""#) && flaky_lines[0].contains("retry at"),
            "{log}"
        );
        let gone_lines = failed(&gone_id);
        assert_eq!(gone_lines.len(), 1, "{log}");
        assert!(gone_lines[0].contains("410 Gone"), "{log}");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_webhook_failing_for_longer_than_the_setting_is_disabled_and_shows_it() {
        let s = Setup::with(&[
            ("TIMETRACK_WEBHOOK_DISABLE_AFTER", "2s"),
            (
                "TIMETRACK_WEBHOOK_RETRY_SCHEDULE",
                "1s,1s,1s,1s,1s,1s,1s,1s",
            ),
        ])
        .await;
        s.receiver.respond("/down", Behaviour::Respond(500, vec![]));
        let (id, _) = s.subscribe("/down", &["CLIENT_CREATED"]).await;
        let path = format!("/api/integrations/automation/webhooks/{id}");
        let health = s.get(&path).await["webhook"]["health"].clone();
        assert_eq!(health["state"], "unknown", "{health}");
        s.post("/api/clients", json!({"name": "First"})).await;

        let mut webhook = Value::Null;
        for _ in 0..200 {
            webhook = s.get(&path).await["webhook"].clone();
            if webhook["status"] == "DISABLED" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(webhook["status"], "DISABLED", "{webhook}");
        let health = &webhook["health"];
        assert_eq!(health["state"], "disabled", "{health}");
        assert_eq!(health["last_status_code"], 500, "{health}");
        assert_eq!(health["last_error"], "HTTP 500", "{health}");
        assert_eq!(health["last_success_at"], Value::Null, "{health}");
        assert!(
            health["consecutive_failures"].as_u64().unwrap() >= 3,
            "{health}"
        );
        let attempts = on(&s.receiver.received(), "/down").len();
        assert!(
            (3..=5).contains(&attempts),
            "disabled after about 2 s of failures, not before: {attempts} attempts"
        );

        // Nothing more is sent to it.
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert_eq!(on(&s.receiver.received(), "/down").len(), attempts);
    }

    /// Waits up to `timeout` until `done` holds for what the receiver got; what it got then.
    async fn received_until(
        s: &Setup,
        timeout: Duration,
        done: impl Fn(&[Received]) -> bool,
    ) -> Vec<Received> {
        let deadline = Instant::now() + timeout;
        loop {
            let received = s.receiver.received();
            if done(&received) || Instant::now() > deadline {
                return received;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The JSON body of a delivery.
    fn body_of(received: &Received) -> Value {
        serde_json::from_slice(&received.body).unwrap()
    }

    /// Waits until the log of webhook `id` shows delivery `delivery` in a final state; it.
    async fn settled(s: &Setup, id: &str, delivery: &str) -> Value {
        let path = format!("/api/integrations/automation/webhooks/{id}/deliveries/{delivery}");
        let mut detail = Value::Null;
        for _ in 0..100 {
            detail = s.get(&path).await;
            if detail["status"] != "PENDING" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        detail
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_test_delivery_is_signed_sent_once_logged_and_leaves_health_alone() {
        let s = Setup::new().await;
        s.receiver.respond("/t", Behaviour::Respond(200, vec![]));
        let (id, secret) = s.subscribe("/t", &["TIMER_STARTED"]).await;
        let base = format!("/api/integrations/automation/webhooks/{id}");
        let (status, queued) = s.post(&format!("{base}/test"), json!({})).await;
        assert_eq!(status, 202, "{queued}");
        let received = received_until(&s, Duration::from_secs(10), |r| !r.is_empty()).await;
        let test = on(&received, "/t")[0];
        assert_eq!(test.header("x-webhook-event"), Some("WEBHOOK_TEST"));
        assert_signed(test, &secret);
        assert_verified_by_standard_webhooks(test, &secret);
        let body = body_of(test);
        assert_eq!(body["event"], "WEBHOOK_TEST");
        assert_eq!(body["webhook_id"], id.as_str());
        let detail = settled(&s, &id, queued["delivery"]["id"].as_str().unwrap()).await;
        assert_eq!(detail["status"], "DELIVERED", "{detail}");
        assert_eq!(detail["kind"], "test");
        assert_eq!(detail["attempts_log"][0]["status_code"], 200, "{detail}");
        assert_eq!(
            test.header("webhook-id"),
            detail["event_id"].as_str(),
            "the log names the webhook-id sent"
        );
        let health = s.get(&base).await["webhook"]["health"].clone();
        assert_eq!(
            health["state"], "unknown",
            "a test is not the webhook's health: {health}"
        );

        // A failing test: one attempt, no retry, still no effect on health.
        s.receiver.respond("/t", Behaviour::Respond(500, vec![]));
        let (_, queued) = s.post(&format!("{base}/test"), json!({})).await;
        let detail = settled(&s, &id, queued["delivery"]["id"].as_str().unwrap()).await;
        assert_eq!(detail["status"], "FAILED", "{detail}");
        assert_eq!(detail["attempts"], 1);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(on(&s.receiver.received(), "/t").len(), 2, "never retried");
        let health = s.get(&base).await["webhook"]["health"].clone();
        assert_eq!(health["state"], "unknown", "{health}");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_rotated_secret_signs_beside_the_old_one_for_the_window_then_alone() {
        let s = Setup::new().await;
        s.receiver.respond("/r", Behaviour::Respond(200, vec![]));
        let (id, old) = s.subscribe("/r", &["CLIENT_CREATED"]).await;
        let (status, rotated) = s
            .post(
                &format!("/api/integrations/automation/webhooks/{id}/rotate-secret"),
                json!({"previous_valid_for_seconds": 4}),
            )
            .await;
        assert_eq!(status, 200, "{rotated}");
        let new = rotated["secret"].as_str().unwrap().to_owned();
        assert_ne!(new, old);

        // Inside the window: two signatures, new first; the libraries accept either secret.
        s.post("/api/clients", json!({"name": "Inside"})).await;
        let received = received_until(&s, Duration::from_secs(10), |r| !r.is_empty()).await;
        let inside = received[0].clone();
        let signatures: Vec<&str> = inside
            .header("webhook-signature")
            .unwrap()
            .split(' ')
            .collect();
        assert_eq!(signatures.len(), 2, "{signatures:?}");
        for secret in [&new, &old] {
            assert_verified_by_standard_webhooks(&inside, secret);
            assert_verified_by_the_guides_node_example(&inside, secret);
        }
        let unrelated = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
        let (said, _) = verifier_says(python_verifier(), &inside, unrelated);
        assert!(said.starts_with("rejected"), "{said}");

        // After the window: the new secret alone.
        tokio::time::sleep(Duration::from_millis(4500)).await;
        s.post("/api/clients", json!({"name": "After"})).await;
        let received = received_until(&s, Duration::from_secs(10), |r| r.len() >= 2).await;
        let after = received[1].clone();
        assert!(
            !after.header("webhook-signature").unwrap().contains(' '),
            "one signature"
        );
        assert_signed(&after, &new);
        assert_verified_by_standard_webhooks(&after, &new);
        let (said, _) = verifier_says(python_verifier(), &after, &old);
        assert!(
            said.starts_with("rejected"),
            "the old secret no more: {said}"
        );
        let webhook = s
            .get(&format!("/api/integrations/automation/webhooks/{id}"))
            .await;
        assert_eq!(
            webhook["webhook"]["secret_rotation"],
            Value::Null,
            "{webhook}"
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_webhook_down_for_days_is_reported_disabled_tested_enabled_and_given_what_it_missed()
    {
        let s = Setup::with(&[
            ("TIMETRACK_WEBHOOK_FAILING_AFTER", "1s"),
            ("TIMETRACK_WEBHOOK_DISABLE_AFTER", "3s"),
            (
                "TIMETRACK_WEBHOOK_RETRY_SCHEDULE",
                "500ms,500ms,500ms,500ms,500ms,500ms,500ms,500ms,500ms,500ms",
            ),
        ])
        .await;
        s.receiver.respond("/down", Behaviour::Respond(500, vec![]));
        s.receiver
            .respond("/watch", Behaviour::Respond(200, vec![]));
        let notices = ["WEBHOOK_FAILING", "WEBHOOK_DISABLED", "WEBHOOK_RECOVERED"];
        // The failing webhook lists the notices too: it must never get those about itself.
        let (down, down_secret) = s
            .subscribe(
                "/down",
                &[
                    "CLIENT_CREATED",
                    "WEBHOOK_FAILING",
                    "WEBHOOK_DISABLED",
                    "WEBHOOK_RECOVERED",
                ],
            )
            .await;
        let (_watch, watch_secret) = s.subscribe("/watch", &notices).await;
        let since = time::OffsetDateTime::now_utc() - time::Duration::seconds(1);
        s.post("/api/clients", json!({"name": "Missed"})).await;

        let received =
            received_until(&s, Duration::from_secs(20), |r| on(r, "/watch").len() >= 2).await;
        let told: Vec<Value> = on(&received, "/watch").into_iter().map(body_of).collect();
        assert_eq!(told.len(), 2, "{told:?}");
        assert_eq!(told[0]["event"], "WEBHOOK_FAILING", "{told:?}");
        assert_eq!(told[1]["event"], "WEBHOOK_DISABLED", "{told:?}");
        assert_eq!(told[1]["reason"], "failing");
        for notice in &told {
            assert_eq!(notice["webhook"]["id"], down.as_str());
            assert_eq!(notice["webhook"]["url"], s.receiver.url("/down"));
            assert_eq!(notice["last_status_code"], 500);
            assert_eq!(notice["last_error"], "HTTP 500");
            assert!(notice["failing_since"].is_string(), "{notice}");
            assert!(notice["timestamp"].is_string(), "{notice}");
        }
        assert_eq!(told[0]["reason"], Value::Null);
        assert_eq!(told[0]["webhook"]["status"], "ACTIVE");
        assert_eq!(told[1]["webhook"]["status"], "DISABLED");
        let first_notice = on(&received, "/watch")[0];
        assert_eq!(
            first_notice.header("x-webhook-event"),
            Some("WEBHOOK_FAILING")
        );
        assert_verified_by_standard_webhooks(first_notice, &watch_secret);
        let failed: Vec<&Received> = on(&received, "/down");
        assert!(
            failed.iter().all(|r| body_of(r)["event"].is_null()),
            "no notice about itself"
        );
        let missed_id = failed[0].header("webhook-id").unwrap().to_owned();
        let log = s.server.log().unwrap();
        assert!(
            log.lines().any(|l| l.contains(" WARN ")
                && l.contains("webhook owner notified")
                && l.contains("WEBHOOK_DISABLED")),
            "{log}"
        );

        // Repaired: a test reaches the disabled webhook; enabling it replays what it missed.
        s.receiver.respond("/down", Behaviour::Respond(200, vec![]));
        let base = format!("/api/integrations/automation/webhooks/{down}");
        let (status, _) = s.post(&format!("{base}/test"), json!({})).await;
        assert_eq!(status, 202);
        let before = failed.len();
        let received = received_until(&s, Duration::from_secs(10), |r| {
            on(r, "/down").len() > before
        })
        .await;
        let test = on(&received, "/down")[before];
        assert_eq!(test.header("x-webhook-event"), Some("WEBHOOK_TEST"));
        assert_signed(test, &down_secret);
        assert_eq!(
            s.get(&base).await["webhook"]["status"],
            "DISABLED",
            "a test does not enable"
        );
        let (status, enabled) = s
            .post(
                &format!("{base}/enable"),
                json!({"replay_since": timetrack_domain::timefmt::rfc3339(since)}),
            )
            .await;
        assert_eq!(status, 200, "{enabled}");
        assert_eq!(enabled["webhook"]["status"], "ACTIVE");
        assert_eq!(enabled["replayed"], 1, "{enabled}");
        let received = received_until(&s, Duration::from_secs(10), |r| {
            on(r, "/down").len() > before + 1
        })
        .await;
        let replayed = on(&received, "/down")[before + 1];
        assert_eq!(replayed.header("webhook-id"), Some(missed_id.as_str()));
        assert_eq!(body_of(replayed)["name"], "Missed");
        assert_signed(replayed, &down_secret);

        // Resend: the same event once more, with the same webhook-id.
        let page = s.get(&format!("{base}/deliveries")).await;
        let original = page["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["kind"] == "event" && d["event_type"] == "CLIENT_CREATED")
            .cloned()
            .unwrap();
        assert_eq!(original["status"], "CANCELLED", "{page}");
        let (status, resent) = s
            .post(
                &format!(
                    "{base}/deliveries/{}/resend",
                    original["id"].as_str().unwrap()
                ),
                json!({}),
            )
            .await;
        assert_eq!(status, 202, "{resent}");
        let received = received_until(&s, Duration::from_secs(10), |r| {
            on(r, "/down").len() > before + 2
        })
        .await;
        assert_eq!(
            on(&received, "/down")[before + 2].header("webhook-id"),
            Some(missed_id.as_str())
        );
        let detail = settled(&s, &down, resent["delivery"]["id"].as_str().unwrap()).await;
        assert_eq!(
            (detail["kind"].clone(), detail["status"].clone()),
            (json!("resend"), json!("DELIVERED"))
        );
        // Re-enabled by its owner: no WEBHOOK_RECOVERED for that.
        tokio::time::sleep(Duration::from_millis(1000)).await;
        assert_eq!(on(&s.receiver.received(), "/watch").len(), 2);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn owners_are_told_of_a_failing_webhook_its_recovery_and_a_410() {
        let s = Setup::with(&[
            ("TIMETRACK_WEBHOOK_FAILING_AFTER", "1s"),
            (
                "TIMETRACK_WEBHOOK_RETRY_SCHEDULE",
                "600ms,600ms,600ms,600ms,600ms,600ms",
            ),
        ])
        .await;
        s.receiver
            .respond("/flaky", Behaviour::Sequence(vec![500, 500, 500, 500, 200]));
        s.receiver.respond("/gone", Behaviour::Respond(410, vec![]));
        s.receiver
            .respond("/watch", Behaviour::Respond(200, vec![]));
        let (flaky, _) = s.subscribe("/flaky", &["CLIENT_CREATED"]).await;
        let (gone, _) = s.subscribe("/gone", &["CLIENT_CREATED"]).await;
        s.subscribe(
            "/watch",
            &["WEBHOOK_FAILING", "WEBHOOK_DISABLED", "WEBHOOK_RECOVERED"],
        )
        .await;
        s.post("/api/clients", json!({"name": "Bumpy"})).await;
        let received =
            received_until(&s, Duration::from_secs(20), |r| on(r, "/watch").len() >= 3).await;
        let mut told: Vec<(String, String)> = on(&received, "/watch")
            .into_iter()
            .map(|r| {
                let body = body_of(r);
                (
                    body["event"].as_str().unwrap().to_owned(),
                    body["webhook"]["id"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        told.sort();
        assert_eq!(
            told,
            [
                ("WEBHOOK_DISABLED".to_owned(), gone.clone()),
                ("WEBHOOK_FAILING".to_owned(), flaky.clone()),
                ("WEBHOOK_RECOVERED".to_owned(), flaky.clone()),
            ]
        );
        let gone_notice = on(&received, "/watch")
            .into_iter()
            .map(body_of)
            .find(|b| b["event"] == "WEBHOOK_DISABLED")
            .unwrap();
        assert_eq!(gone_notice["reason"], "gone");
        assert_eq!(gone_notice["webhook"]["status"], "DELETED");
        assert_eq!(gone_notice["last_status_code"], 410);
        let recovered = on(&received, "/watch")
            .into_iter()
            .map(body_of)
            .find(|b| b["event"] == "WEBHOOK_RECOVERED")
            .unwrap();
        assert_eq!(recovered["last_status_code"], 200);
        assert_eq!(recovered["last_error"], Value::Null);
        assert_eq!(recovered["reason"], Value::Null);
        // The notices fit the catalog's schemas.
        assert_eq!(
            assert_valid_against_the_catalog(&s, &on(&received, "/watch")).await,
            ["WEBHOOK_DISABLED", "WEBHOOK_FAILING", "WEBHOOK_RECOVERED"]
        );
        // Once per streak: nothing more.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(on(&s.receiver.received(), "/watch").len(), 3);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_deleted_subscription_gets_nothing_and_delivery_is_prompt() {
        // It measures latency: not beside the tests that load the machine.
        let _heavy = HEAVY.lock().await;
        let s = Setup::new().await;
        let (id, _) = s.subscribe("/deleted", &["CLIENT_CREATED"]).await;
        let res = s
            .client
            .delete(format!(
                "{}/api/integrations/automation/webhooks/{id}",
                s.server.base
            ))
            .bearer_auth(&s.key)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        s.subscribe("/live", &["CLIENT_CREATED"]).await;
        let before = Instant::now();
        s.post("/api/clients", json!({"name": "Prompt"})).await;
        assert!(s.receiver.wait_for(1, Duration::from_secs(5)).await);
        // Woken by NOTIFY, not by the poll: well under a second on an idle system.
        assert!(
            before.elapsed() < Duration::from_millis(400),
            "{:?}",
            before.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(800)).await;
        assert_eq!(
            s.receiver
                .received()
                .iter()
                .map(|r| r.path.as_str())
                .collect::<Vec<_>>(),
            ["/live"]
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_revoked_keys_subscription_gets_nothing_more_not_even_retries() {
        let s = Setup::new().await;
        let me = s.get("/api/me").await;
        let url = s._db.url().to_owned();
        let (user, workspace) = (
            me["user"]["id"].as_str().unwrap().to_owned(),
            me["workspace"]["id"].as_str().unwrap().to_owned(),
        );
        let doomed = tokio::task::spawn_blocking(move || {
            json_stdout(&run(
                &[
                    "admin",
                    "create-api-key",
                    "--user",
                    &user,
                    "--workspace",
                    &workspace,
                ],
                &url,
            ))
        })
        .await
        .unwrap();
        let original_key = s.key.clone();
        let s = Setup {
            key: doomed["key"].as_str().unwrap().to_owned(),
            ..s
        };
        s.receiver
            .respond("/revoked", Behaviour::Respond(500, vec![]));
        s.subscribe("/revoked", &["CLIENT_CREATED"]).await;
        s.post("/api/clients", json!({"name": "Before"})).await;
        // The first attempt fails with 500; its retry is queued for a second later.
        assert!(s.receiver.wait_for(1, Duration::from_secs(10)).await);
        let url = s._db.url().to_owned();
        let key_id = doomed["id"].as_str().unwrap().to_owned();
        let revoked = tokio::task::spawn_blocking(move || {
            json_stdout(&run(&["admin", "revoke-api-key", "--id", &key_id], &url))
        })
        .await
        .unwrap();
        assert!(revoked["revoked_at"].is_string(), "{revoked}");
        let attempts_at_revocation = on(&s.receiver.received(), "/revoked").len();

        // Events from another key of the workspace reach its own subscription only.
        let s = Setup {
            key: original_key,
            ..s
        };
        s.subscribe("/witness", &["CLIENT_CREATED"]).await;
        s.post("/api/clients", json!({"name": "After"})).await;
        let deadline = Instant::now() + Duration::from_secs(10);
        while on(&s.receiver.received(), "/witness").is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(on(&s.receiver.received(), "/witness").len(), 1);
        // Three retries a second apart would have come by now.
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert_eq!(
            on(&s.receiver.received(), "/revoked").len(),
            attempts_at_revocation,
            "nothing more reached the revoked key's subscription"
        );
    }

    fn metric(text: &str, series: &str) -> f64 {
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
            .parse()
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn metrics_are_served_on_their_own_listener() {
        let s = Setup::new().await;
        s.subscribe("/ok", &["CLIENT_CREATED"]).await;
        for n in 0..3 {
            s.post("/api/clients", json!({"name": format!("Client {n}")}))
                .await;
        }
        assert!(s.receiver.wait_for(3, Duration::from_secs(10)).await);
        s.receiver
            .respond("/failing", Behaviour::Respond(500, vec![]));
        s.subscribe("/failing", &["CLIENT_CREATED"]).await;
        // Deliveries of the new client: one to /ok, one failing to /failing.
        s.post("/api/clients", json!({"name": "Fourth"})).await;
        assert!(s.receiver.wait_for(5, Duration::from_secs(10)).await);
        // The outcome is recorded just after the response.
        tokio::time::sleep(Duration::from_millis(300)).await;

        let res = s
            .client
            .get(format!("{}/metrics", s.server.metrics.as_ref().unwrap()))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        assert!(
            res.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/openmetrics-text")
        );
        let text = res.text().await.unwrap();
        assert_eq!(
            metric(
                &text,
                r#"timetrack_http_requests_total{method="POST",route="/api/clients",status="201"}"#
            ),
            4.0
        );
        assert_eq!(
            metric(
                &text,
                r#"timetrack_webhook_attempts_total{outcome="delivered",detail="2xx"}"#
            ),
            4.0
        );
        assert!(
            metric(
                &text,
                r#"timetrack_webhook_attempts_total{outcome="rejected",detail="5xx"}"#
            ) >= 1.0
        );
        assert!(metric(&text, "timetrack_webhook_attempt_duration_seconds_count") >= 5.0);
        assert_eq!(metric(&text, "timetrack_webhook_queue_readable"), 1.0);
        // The failing delivery is pending, in exactly one state; nothing else is.
        let pending: f64 = ["due", "scheduled", "in_flight"]
            .iter()
            .map(|state| {
                metric(
                    &text,
                    &format!(r#"timetrack_webhook_queue_depth{{state="{state}"}}"#),
                )
            })
            .sum();
        assert_eq!(pending, 1.0, "{text}");
        metric(&text, "timetrack_webhook_oldest_due_age_seconds");

        // Not on the public port; anything else on the metrics port is JSON 404.
        let public = s
            .client
            .get(format!("{}/metrics", s.server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(public.status(), 404);
        let other = s
            .client
            .get(format!("{}/other", s.server.metrics.as_ref().unwrap()))
            .send()
            .await
            .unwrap();
        assert_eq!(other.status(), 404);
        assert_eq!(
            other.json::<Value>().await.unwrap(),
            json!({"error": "Not found"})
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_clients_malformed_bytes_are_counted_not_logged_as_errors() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let s = Setup::new().await;
        let address = s.server.base.trim_start_matches("http://").to_owned();
        for garbage in [
            &b"GARBAGE\r\n\r\n"[..],
            b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03",
        ] {
            let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
            stream.write_all(garbage).await.unwrap();
            let mut answer = Vec::new();
            let _ =
                tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let text = s
            .client
            .get(format!("{}/metrics", s.server.metrics.as_ref().unwrap()))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(
            metric(&text, "timetrack_http_client_faults_total"),
            3.0,
            "{text}"
        );
        let log = s.server.log().unwrap_or_default();
        assert!(
            !log.lines().any(|l| l.contains("ERROR")),
            "a client's fault is not an ERROR line: {log}"
        );
    }

    /// Tests that load the machine run one at a time: on two cores, several at once would measure
    /// the machine, not the service.
    static HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    /// A server on `url` for delivery tests: private targets allowed, the receiver's CA trusted,
    /// rate limits lifted, retries after a second.
    fn delivery_server(url: &str, ca: &std::path::Path) -> ServerProcess {
        serve(url)
            .trusting_receiver(ca)
            .env("TIMETRACK_WEBHOOK_RETRY_SCHEDULE", "1s,1s,1s")
            .env("TIMETRACK_WEBHOOK_TIMEOUT", "3")
            .env("TIMETRACK_RATE_LIMIT_PER_MINUTE", "1000000")
            .env("TIMETRACK_RATE_LIMIT_PER_SECOND", "1000000")
            .start_blocking()
            .unwrap()
    }

    async fn count_events(db: &TestDatabase) -> usize {
        let (client, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        let row = client
            .query_one("SELECT count(*) FROM events", &[])
            .await
            .unwrap();
        usize::try_from(row.get::<_, i64>(0)).unwrap()
    }

    /// Creates `count` clients through `base` with 16 concurrent callers; returns how many got 201.
    async fn create_clients(base: &str, key: &str, prefix: &str, count: usize) -> usize {
        let client = ::reqwest::Client::new();
        let created = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let workers: Vec<_> = (0..16)
            .map(|_| {
                let (client, created, next) = (client.clone(), created.clone(), next.clone());
                let (base, key, prefix) = (base.to_owned(), key.to_owned(), prefix.to_owned());
                tokio::spawn(async move {
                    loop {
                        let n = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        if n >= count {
                            return;
                        }
                        // A 503 (no database connection in time) and a request lost on its way
                        // (a kept-alive connection closed as it left) are retried with the same
                        // Idempotency-Key, as a careful client does: a retry never creates a
                        // second client.
                        for attempt in 1..=5 {
                            let res = client
                                .post(format!("{base}/api/clients"))
                                .bearer_auth(&key)
                                .header("Idempotency-Key", format!("{prefix}-{n}"))
                                .json(&json!({"name": format!("{prefix} {n}")}))
                                .send()
                                .await;
                            let retry = match res {
                                Ok(res) if res.status() == 201 => {
                                    created.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                                    break;
                                }
                                Ok(res) => res.status() == 503,
                                // A server that is down (connection refused) stays down here.
                                Err(err) => !err.is_connect(),
                            };
                            if !retry || attempt == 5 {
                                break;
                            }
                            tokio::time::sleep(Duration::from_millis(200)).await;
                        }
                    }
                })
            })
            .collect();
        for w in workers {
            w.await.unwrap();
        }
        created.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn unique_ids(received: &[Received], path: &str) -> (usize, usize) {
        let on_path = on(received, path);
        let unique: std::collections::HashSet<&str> = on_path
            .iter()
            .map(|r| r.header("webhook-id").unwrap())
            .collect();
        (unique.len(), on_path.len() - unique.len())
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_binary_answer_is_logged_lossy_and_holds_up_no_other_delivery() {
        let s = Setup::new().await;
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        s.receiver.respond("/binary", Behaviour::Body(200, png));
        let (binary, _) = s.subscribe("/binary", &["CLIENT_CREATED"]).await;
        s.subscribe("/healthy", &["CLIENT_CREATED"]).await;
        for n in 0..10 {
            let (status, body) = s
                .post("/api/clients", json!({"name": format!("Client {n}")}))
                .await;
            assert_eq!(status, 201, "{body}");
        }
        received_until(&s, Duration::from_secs(5), |r| {
            on(r, "/healthy").len() >= 10 && on(r, "/binary").len() >= 10
        })
        .await;
        // Recorded once each: nothing is sent again.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let received = s.receiver.received();
        assert_eq!(on(&received, "/healthy").len(), 10);
        assert_eq!(on(&received, "/binary").len(), 10);
        let log = s
            .get(&format!(
                "/api/integrations/automation/webhooks/{binary}/deliveries"
            ))
            .await;
        let deliveries = log["data"].as_array().unwrap();
        assert_eq!(deliveries.len(), 10, "{log}");
        assert!(
            deliveries.iter().all(|d| d["status"] == "DELIVERED"),
            "{log}"
        );
        let detail = settled(&s, &binary, deliveries[0]["id"].as_str().unwrap()).await;
        let attempt = &detail["attempts_log"][0];
        assert_eq!(attempt["status_code"], 200, "{detail}");
        assert_eq!(
            attempt["response_body"],
            "\u{FFFD}PNG\r\n\u{1a}\n\u{FFFD}\u{FFFD}\u{FFFD}\rIHDR"
        );
        assert_eq!(attempt["response_body_lossy"], true);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_subscriber_that_never_answers_does_not_delay_the_others() {
        let _heavy = HEAVY.lock().await;
        let s = Setup::new().await;
        s.receiver
            .respond("/stuck", Behaviour::Slow(Duration::from_secs(60), 200));
        s.subscribe("/stuck", &["CLIENT_CREATED"]).await;
        s.subscribe("/healthy", &["CLIENT_CREATED"]).await;
        for n in 0..20 {
            let (status, body) = s
                .post("/api/clients", json!({"name": format!("Client {n}")}))
                .await;
            assert_eq!(status, 201, "{body}");
        }
        let started = Instant::now();
        loop {
            if on(&s.receiver.received(), "/healthy").len() == 20 {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "healthy deliveries held up behind the stuck subscriber"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The stuck subscriber holds at most its in-flight cap of connections.
        assert!(on(&s.receiver.received(), "/stuck").len() <= 10);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn workspaces_whose_endpoints_hang_leave_the_other_workspaces_their_slots() {
        let _heavy = HEAVY.lock().await;
        let s = Setup::new().await;
        let url = s._db.url().to_owned();
        let keys = tokio::task::spawn_blocking(move || {
            ["Hangs too", "Healthy"].map(|name| seed_account(&url, &["--name", name]))
        })
        .await
        .unwrap();
        let [second, healthy] = [&keys[0], &keys[1]];
        let send = |key: &str, path: &str, body: Value| {
            s.client
                .post(format!("{}{path}", s.server.base))
                .bearer_auth(key)
                .json(&body)
                .send()
        };
        // Two workspaces, each with eight webhooks that accept the request and never answer (the
        // time-out is 15 s) and 96 deliveries to them (80 within the webhooks' in-flight caps):
        // each alone wants more than the process's 64 slots.
        for (n, key) in [&s.key, second].into_iter().enumerate() {
            for hook in 0..8 {
                let path = format!("/hang-{n}/{hook}");
                s.receiver
                    .respond(&path, Behaviour::Slow(Duration::from_secs(60), 200));
                let res = send(
                    key,
                    "/api/integrations/automation/webhooks/subscribe",
                    json!({"url": s.receiver.url(&path), "events": ["CLIENT_CREATED"]}),
                )
                .await
                .unwrap();
                assert_eq!(res.status(), 201);
            }
            for event in 0..12 {
                let res = send(
                    key,
                    "/api/clients",
                    json!({"name": format!("C {n} {event}")}),
                )
                .await
                .unwrap();
                assert_eq!(res.status(), 201);
            }
            let prefix = format!("/hang-{n}/");
            let hung =
                move |r: &[Received]| r.iter().filter(|r| r.path.starts_with(&prefix)).count();
            let h = hung.clone();
            received_until(&s, Duration::from_secs(5), move |r| h(r) >= 48).await;
            tokio::time::sleep(Duration::from_millis(500)).await;
            assert_eq!(
                hung(&s.receiver.received()),
                48,
                "workspace {n} holds its share of the process's slots (three quarters), no more"
            );
        }

        // A third workspace: each of its events arrives at once, not after the time-out, though
        // the two hold every slot between them (their attempts, unanswered for over a second,
        // are slow and no longer take the process's slots).
        let res = send(
            healthy,
            "/api/integrations/automation/webhooks/subscribe",
            json!({"url": s.receiver.url("/healthy"), "events": ["CLIENT_CREATED"]}),
        )
        .await
        .unwrap();
        assert_eq!(res.status(), 201);
        for n in 0..5 {
            let created = Instant::now();
            let res = send(
                healthy,
                "/api/clients",
                json!({"name": format!("Healthy {n}")}),
            )
            .await
            .unwrap();
            assert_eq!(res.status(), 201);
            let got =
                received_until(&s, Duration::from_secs(10), |r| on(r, "/healthy").len() > n).await;
            assert!(
                on(&got, "/healthy").len() > n && created.elapsed() < Duration::from_secs(2),
                "event {n} of the other workspace took {:?}",
                created.elapsed()
            );
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn two_processes_share_one_queue_without_double_sends() {
        let _heavy = HEAVY.lock().await;
        let db = TestDatabase::new().await;
        let receiver = HttpsReceiver::start().await;
        let (url, ca) = (db.url().to_owned(), receiver.ca_pem_path());
        let (key, a, b) = tokio::task::spawn_blocking(move || {
            let key = seed_account(&url, &["--name", "Two"]);
            (key, delivery_server(&url, &ca), delivery_server(&url, &ca))
        })
        .await
        .unwrap();
        let client = ::reqwest::Client::new();
        let res = client
            .post(format!(
                "{}/api/integrations/automation/webhooks/subscribe",
                a.base
            ))
            .bearer_auth(&key)
            .json(&json!({"url": receiver.url("/shared"), "events": ["CLIENT_CREATED"]}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
        let (x, y) = tokio::join!(
            create_clients(&a.base, &key, "A", 150),
            create_clients(&b.base, &key, "B", 150)
        );
        assert_eq!(x + y, 300);
        assert!(
            receiver.wait_for(300, Duration::from_secs(30)).await,
            "{}",
            receiver.received().len()
        );
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let (unique, duplicates) = unique_ids(&receiver.received(), "/shared");
        assert_eq!((unique, duplicates), (300, 0));
        drop((a, b));
    }

    /// Delivery ids and feed cursors show the installation's numbers through its key, from its
    /// database: two processes show one delivery alike and read each other's cursors, and neither
    /// shows a stored delivery id, transaction id or event sequence.
    #[tokio::test(flavor = "multi_thread")]
    async fn two_processes_show_delivery_ids_and_cursors_alike_and_never_the_stored_numbers() {
        let db = TestDatabase::new().await;
        let receiver = HttpsReceiver::start().await;
        let (url, ca) = (db.url().to_owned(), receiver.ca_pem_path());
        let (key, a, b) = tokio::task::spawn_blocking(move || {
            let key = seed_account(&url, &["--name", "Masked"]);
            (key, delivery_server(&url, &ca), delivery_server(&url, &ca))
        })
        .await
        .unwrap();
        let client = ::reqwest::Client::new();
        let get = |base: &str, path: &str| {
            let req = client
                .get(format!("{base}/api/integrations/automation{path}"))
                .bearer_auth(&key);
            async move {
                let res = req.send().await.unwrap();
                assert_eq!(res.status(), 200);
                res.json::<Value>().await.unwrap()
            }
        };
        let res = client
            .post(format!(
                "{}/api/integrations/automation/webhooks/subscribe",
                a.base
            ))
            .bearer_auth(&key)
            .json(&json!({"url": receiver.url("/masked"), "events": ["CLIENT_CREATED"]}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
        let id = res.json::<Value>().await.unwrap()["webhook"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(create_clients(&a.base, &key, "M", 6).await, 6);
        assert!(receiver.wait_for(6, Duration::from_secs(20)).await);

        let (sql, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        let stored: Vec<i64> = sql
            .query("SELECT id FROM deliveries ORDER BY id DESC", &[])
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        let mask_key: Vec<u8> = sql
            .query_one("SELECT mask_key FROM installation", &[])
            .await
            .unwrap()
            .get(0);
        let masks = timetrack_domain::masked::Masks::new(&mask_key.try_into().unwrap());
        let shown_of = |base: String| {
            let get = &get;
            let id = &id;
            async move {
                let log = get(&base, &format!("/webhooks/{id}/deliveries")).await;
                log["data"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d["id"].as_str().unwrap().parse::<i64>().unwrap())
                    .collect::<Vec<i64>>()
            }
        };
        let (from_a, from_b) = (
            shown_of(a.base.clone()).await,
            shown_of(b.base.clone()).await,
        );
        assert_eq!(stored.len(), 6);
        assert_eq!(from_a, from_b, "both processes show the installation's ids");
        let expected: Vec<i64> = stored
            .iter()
            .map(|id| masks.show_delivery(*id).unwrap())
            .collect();
        assert_eq!(from_a, expected, "the log is newest first, each id masked");
        assert!(
            from_a.iter().all(|shown| !stored.contains(shown)),
            "{from_a:?} against {stored:?}"
        );
        // A stored id names no delivery; a shown one does, in either process.
        let detail = |base: &str, delivery: i64| {
            client
                .get(format!(
                    "{base}/api/integrations/automation/webhooks/{id}/deliveries/{delivery}"
                ))
                .bearer_auth(&key)
                .send()
        };
        assert_eq!(detail(&b.base, from_a[0]).await.unwrap().status(), 200);
        assert_eq!(detail(&a.base, stored[0]).await.unwrap().status(), 404);

        // The log's cursor made by one process is read by the other, and shows no stored id.
        let page = get(&a.base, &format!("/webhooks/{id}/deliveries?limit=2")).await;
        let cursor = page["next_cursor"].as_str().unwrap().to_owned();
        let decoded = String::from_utf8(URL_SAFE_NO_PAD.decode(&cursor).unwrap()).unwrap();
        assert_eq!(decoded, format!("l:{}", from_a[1]));
        let next = get(
            &b.base,
            &format!("/webhooks/{id}/deliveries?limit=2&cursor={cursor}"),
        )
        .await;
        let ids: Vec<&str> = next["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [from_a[2].to_string(), from_a[3].to_string()]);

        // The feed's cursors name no stored transaction id or sequence, and travel between
        // processes.
        let numbers: Vec<String> = sql
            .query("SELECT txid::text, seq::text FROM events", &[])
            .await
            .unwrap()
            .iter()
            .flat_map(|row| [row.get::<_, String>(0), row.get::<_, String>(1)])
            .collect();
        let feed = get(&a.base, "/events?limit=3").await;
        assert_eq!(feed["data"].as_array().unwrap().len(), 3);
        let cursor = feed["next_cursor"].as_str().unwrap();
        let decoded = String::from_utf8(URL_SAFE_NO_PAD.decode(cursor).unwrap()).unwrap();
        let parts: Vec<&str> = decoded.split(':').collect();
        assert_eq!(parts[0], "p", "{decoded}");
        assert!(
            !numbers.iter().any(|n| n == parts[1] || n == parts[2]),
            "{decoded} shows one of {numbers:?}"
        );
        let rest = get(&b.base, &format!("/events?after={cursor}")).await;
        let all = get(&a.base, "/events").await;
        let event_ids = |page: &Value| -> Vec<String> {
            page["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["id"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(
            [event_ids(&feed), event_ids(&rest)].concat(),
            event_ids(&all),
            "the other process goes on where the cursor left"
        );
        drop((a, b));
    }

    /// Sends a JSON request to the first of `bases` that answers (a killed server refuses).
    async fn to_any(
        client: &::reqwest::Client,
        bases: &[String],
        key: &str,
        method: ::reqwest::Method,
        path: &str,
        body: Value,
    ) -> Value {
        for _ in 0..50 {
            for base in bases {
                let res = client
                    .request(method.clone(), format!("{base}{path}"))
                    .bearer_auth(key)
                    .json(&body)
                    .send()
                    .await;
                if let Ok(res) = res
                    && res.status().is_success()
                {
                    return res.json().await.unwrap();
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no server took {method} {path}");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn one_entitys_events_arrive_in_order_across_retries_two_processes_and_a_kill_9() {
        let _heavy = HEAVY.lock().await;
        let db = TestDatabase::new().await;
        let receiver = HttpsReceiver::start().await;
        // Every third of the first 240 answers is a 503: retries all along.
        let mut statuses: Vec<u16> = (0..240)
            .map(|n| if n % 3 == 1 { 503 } else { 200 })
            .collect();
        statuses.push(200);
        receiver.respond("/ordered", Behaviour::Sequence(statuses));
        let (url, ca) = (db.url().to_owned(), receiver.ca_pem_path());
        // Retries every 300 ms, long enough never to fail for good here.
        let ordering_server = |url: &str, ca: &std::path::Path| {
            serve(url)
                .trusting_receiver(ca)
                .env(
                    "TIMETRACK_WEBHOOK_RETRY_SCHEDULE",
                    vec!["300ms"; 40].join(","),
                )
                .env("TIMETRACK_WEBHOOK_TIMEOUT", "2")
                .env("TIMETRACK_RATE_LIMIT_PER_MINUTE", "1000000")
                .env("TIMETRACK_RATE_LIMIT_PER_SECOND", "1000000")
                .start_blocking()
                .unwrap()
        };
        let (key, mut a, b) = {
            let (url, ca) = (url.clone(), ca.clone());
            tokio::task::spawn_blocking(move || {
                let key = seed_account(&url, &["--name", "Ordered"]);
                (key, ordering_server(&url, &ca), ordering_server(&url, &ca))
            })
            .await
            .unwrap()
        };
        let client = ::reqwest::Client::new();
        let bases = [a.base.clone(), b.base.clone()];
        to_any(
            &client,
            &bases,
            &key,
            ::reqwest::Method::POST,
            "/api/integrations/automation/webhooks/subscribe",
            json!({"url": receiver.url("/ordered"), "events": ["CLIENT_CREATED", "CLIENT_UPDATED"]}),
        )
        .await;

        // 12 clients, each created then renamed 4 times, through both processes at once.
        let writers: Vec<_> = (0..12)
            .map(|c| {
                let (client, key) = (client.clone(), key.clone());
                let mut bases = bases.to_vec();
                bases.rotate_left(c % 2);
                tokio::spawn(async move {
                    let created = to_any(
                        &client,
                        &bases,
                        &key,
                        ::reqwest::Method::POST,
                        "/api/clients",
                        json!({"name": format!("C{c}")}),
                    )
                    .await;
                    let id = created["id"].as_str().unwrap().to_owned();
                    for r in 0..4 {
                        bases.rotate_left(1);
                        to_any(
                            &client,
                            &bases,
                            &key,
                            ::reqwest::Method::PATCH,
                            &format!("/api/clients/{id}"),
                            json!({"name": format!("C{c} r{r}")}),
                        )
                        .await;
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.await.unwrap();
        }
        // One process dies by kill -9 while deliveries and retries are under way; another
        // takes its place.
        a.kill9();
        let _ = a.wait();
        let c = {
            let (url, ca) = (url.clone(), ca.clone());
            tokio::task::spawn_blocking(move || ordering_server(&url, &ca))
                .await
                .unwrap()
        };

        let expected = count_events(&db).await;
        assert_eq!(expected, 60);
        let delivered_ids = |received: &[Received]| -> std::collections::HashSet<String> {
            on(received, "/ordered")
                .into_iter()
                .filter(|r| r.answered.is_some_and(|s| s < 300))
                .map(|r| r.header("webhook-id").unwrap().to_owned())
                .collect()
        };
        let deadline = Instant::now() + Duration::from_secs(90);
        while delivered_ids(&receiver.received()).len() < expected && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let received = receiver.received();
        assert_eq!(delivered_ids(&received).len(), expected, "nothing lost");
        // Per key, in arrival order: nothing arrives behind a delivered later event of its key.
        let mut delivered_up_to: std::collections::HashMap<String, i64> =
            std::collections::HashMap::new();
        let mut keys = std::collections::HashSet::new();
        for r in on(&received, "/ordered") {
            let key = r.header("webhook-ordering-key").unwrap().to_owned();
            let sequence: i64 = r.header("webhook-sequence").unwrap().parse().unwrap();
            let body = body_of(r);
            assert_eq!(
                body["id"].as_str(),
                Some(key.as_str()),
                "the key is the client's id"
            );
            if let Some(&done) = delivered_up_to.get(&key) {
                assert!(
                    sequence >= done,
                    "{key}: sequence {sequence} arrived after {done} was delivered"
                );
            }
            if r.answered.is_some_and(|s| s < 300) {
                delivered_up_to.insert(key.clone(), sequence);
            }
            keys.insert(key);
        }
        assert_eq!(keys.len(), 12);
        let retried = on(&received, "/ordered").len() - expected;
        assert!(retried >= 20, "retries happened: {retried}");
        drop((b, c));
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn kill_9_in_the_middle_of_a_burst_loses_nothing() {
        let _heavy = HEAVY.lock().await;
        let db = TestDatabase::new().await;
        let receiver = HttpsReceiver::start().await;
        let (url, ca) = (db.url().to_owned(), receiver.ca_pem_path());
        let (key, first) = {
            let (url, ca) = (url.clone(), ca.clone());
            tokio::task::spawn_blocking(move || {
                let key = seed_account(&url, &["--name", "Burst"]);
                (key, delivery_server(&url, &ca))
            })
            .await
            .unwrap()
        };
        let client = ::reqwest::Client::new();
        let res = client
            .post(format!(
                "{}/api/integrations/automation/webhooks/subscribe",
                first.base
            ))
            .bearer_auth(&key)
            .json(&json!({"url": receiver.url("/burst"), "events": ["CLIENT_CREATED"]}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);

        // A burst of 1,000, with the server killed when about a third has been accepted.
        let mut first = first;
        let killer = {
            let pid = nix::unistd::Pid::from_raw(i32::try_from(first.pid()).unwrap());
            let db_url = url.clone();
            tokio::spawn(async move {
                let (c, conn) = tokio_postgres::connect(&db_url, tokio_postgres::NoTls)
                    .await
                    .unwrap();
                tokio::spawn(conn);
                loop {
                    let n: i64 = c
                        .query_one("SELECT count(*) FROM events", &[])
                        .await
                        .unwrap()
                        .get(0);
                    if n >= 330 {
                        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
        };
        let before_kill = create_clients(&first.base, &key, "Before", 1000).await;
        killer.await.unwrap();
        let _ = first.wait();
        assert!(before_kill < 1000, "the kill interrupted the burst");

        // Restart on the same database and finish the burst.
        let second = {
            let (url, ca) = (url.clone(), ca.clone());
            tokio::task::spawn_blocking(move || delivery_server(&url, &ca))
                .await
                .unwrap()
        };
        let after = create_clients(&second.base, &key, "After", 1000 - before_kill).await;
        assert_eq!(after, 1000 - before_kill);

        let expected = count_events(&db).await;
        assert!(expected >= 1000, "{expected}");
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let (unique, _) = unique_ids(&receiver.received(), "/burst");
            if unique >= expected || Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let (unique, duplicates) = unique_ids(&receiver.received(), "/burst");
        // The figures, for `cargo test -- --nocapture` (captured otherwise).
        eprintln!(
            "kill -9 burst: events {expected}, delivered {unique}, lost {}, duplicates {duplicates}",
            expected - unique.min(expected)
        );
        assert_eq!(unique, expected, "lost {}", expected - unique.min(expected));
        // Only deliveries in flight at the kill may arrive twice: at most the in-flight cap.
        assert!(duplicates <= 10, "{duplicates} duplicates");
        drop(second);
    }

    /// The Rust verification snippet the console shows, compiled here as it is served.
    mod console_snippet {
        include!("../console/snippets/verify.rs");
    }

    /// The console in a real Chromium, through the proof list of the console spec: the script
    /// `tests/console/console.cjs` drives the page (playwright-core) and asks this test to change
    /// the HTTPS receiver's answer and to show what it received; screenshots go to
    /// `target/console-screenshots/`. Then the page's Python and Rust snippets verify the last
    /// delivery too.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_console_in_chromium_walks_the_proof_list() {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

        let chromium = timetrack_testkit::chromium();
        let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
        let modules = [
            timetrack_testkit::npm_package(tmp, "playwright-core@1.64.1", "playwright-core"),
            timetrack_testkit::npm_package(tmp, "standardwebhooks@1.1.1", "standardwebhooks"),
        ];
        let node_path = std::env::join_paths(&modules).unwrap();
        let shots = tmp.join("../console-screenshots");
        let _ = std::fs::remove_dir_all(&shots);
        // Failed deliveries wait for a resend rather than an automatic retry.
        let s = Setup::with(&[("TIMETRACK_WEBHOOK_RETRY_SCHEDULE", "1h")]).await;
        s.receiver
            .respond("/hook", Behaviour::Respond(200, Vec::new()));
        let script =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/console/console.cjs");
        let mut node = tokio::process::Command::new("node")
            .arg(&script)
            .env("NODE_PATH", node_path)
            .env("CONSOLE_BASE", &s.server.base)
            .env("CONSOLE_KEY", &s.key)
            .env("CONSOLE_RECEIVER", s.receiver.url(""))
            .env("CONSOLE_SHOTS", &shots)
            .env("CONSOLE_CHROMIUM", &chromium)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node is needed for the console test");
        let mut to_script = node.stdin.take().unwrap();
        let mut lines = BufReader::new(node.stdout.take().unwrap()).lines();
        let mut result = None;
        let deadline = Instant::now() + Duration::from_secs(240);
        loop {
            let line = tokio::time::timeout_at(deadline.into(), lines.next_line())
                .await
                .expect("the console script finished in time")
                .unwrap();
            let Some(line) = line else { break };
            if let Some(ask) = line.strip_prefix("ASK ") {
                let ask: Value = serde_json::from_str(ask).unwrap();
                let reply = if let Some(respond) = ask.get("respond") {
                    let status = u16::try_from(respond["status"].as_u64().unwrap()).unwrap();
                    s.receiver.respond(
                        respond["path"].as_str().unwrap(),
                        Behaviour::Respond(status, Vec::new()),
                    );
                    json!({"done": true})
                } else {
                    let path = ask["received"].as_str().unwrap();
                    let received: Vec<Value> = s
                        .receiver
                        .received()
                        .iter()
                        .filter(|r| r.path == path)
                        .map(|r| {
                            json!({
                                "headers": r.headers.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect::<serde_json::Map<_, _>>(),
                                "body": String::from_utf8_lossy(&r.body),
                            })
                        })
                        .collect();
                    Value::Array(received)
                };
                to_script
                    .write_all(format!("{reply}\n").as_bytes())
                    .await
                    .unwrap();
            } else if let Some(found) = line.strip_prefix("RESULT ") {
                result = Some(serde_json::from_str::<Value>(found).unwrap());
            } else {
                // The script's progress, shown with `--nocapture` or on failure.
                eprintln!("{line}");
            }
        }
        let status = node.wait().await.unwrap();
        assert!(
            status.success(),
            "the console script failed ({status}); its output is above"
        );
        let result = result.expect("the script reported its result");
        assert!(result["checks"].as_u64().unwrap() >= 40, "{result}");
        let taken = std::fs::read_dir(&shots)
            .unwrap()
            .filter(|entry| entry.as_ref().unwrap().path().extension() == Some("png".as_ref()))
            .count();
        assert!(taken >= 15, "{taken} screenshots in {}", shots.display());

        // The snippets the page showed are the served files, and they verify a real delivery.
        let secret = result["secret"].as_str().unwrap();
        let last = s
            .receiver
            .received()
            .into_iter()
            .rfind(|r| r.path == "/hook")
            .unwrap();
        let snippets = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("console/snippets");
        assert_eq!(
            result["rust"].as_str().unwrap(),
            std::fs::read_to_string(snippets.join("verify.rs")).unwrap()
        );
        assert!(console_snippet::verify(
            secret,
            last.header("webhook-id").unwrap(),
            last.header("webhook-timestamp").unwrap(),
            last.header("webhook-signature").unwrap(),
            &last.body,
            time::OffsetDateTime::now_utc().unix_timestamp(),
        ));
        assert!(!console_snippet::verify(
            "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
            last.header("webhook-id").unwrap(),
            last.header("webhook-timestamp").unwrap(),
            last.header("webhook-signature").unwrap(),
            &last.body,
            time::OffsetDateTime::now_utc().unix_timestamp(),
        ));
        let python = format!(
            "{}\nimport json, sys\nc = json.load(sys.stdin)\n\
             verify(c['secret'], c['body'].encode(), c['headers'])\nprint('verified')\n",
            result["python"].as_str().unwrap()
        );
        let mut program = Command::new("python3");
        program
            .arg("-c")
            .arg(python)
            .env("PYTHONPATH", standard_webhooks());
        assert_verifier_accepts(program, &last, secret);
    }
}

/// The deployment example of the README: the systemd unit passes `systemd-analyze verify` (no
/// error and no warning) where systemd is installed, and every variable of the settings example
/// is one `timetrack serve` reads.
#[test]
fn the_systemd_unit_and_settings_examples_are_valid() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/deploy");
    let help = Command::new(BIN)
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    let settings = std::fs::read_to_string(docs.join("timetrack.env.example")).unwrap();
    let mut names = 0;
    for line in settings.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, _) = line.split_once('=').expect("NAME=value");
        assert!(
            help.contains(&format!("[env: {name}]")),
            "{name} is not a setting"
        );
        names += 1;
    }
    assert!(names >= 5, "{settings}");

    let unit = std::fs::read_to_string(docs.join("timetrack.service")).unwrap();
    assert!(
        unit.contains("ExecStart=/usr/local/bin/timetrack serve"),
        "{unit}"
    );
    let analyze = Command::new("systemd-analyze").arg("--version").output();
    if !analyze.is_ok_and(|out| out.status.success()) {
        eprintln!("systemd-analyze is not installed here; the unit's syntax was not checked");
        return;
    }
    // verify also checks that ExecStart names an executable: the binary under test stands in
    // for the installed one.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("systemd-unit");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("timetrack.service");
    std::fs::write(&file, unit.replace("/usr/local/bin/timetrack", BIN)).unwrap();
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&file)
        .output()
        .unwrap();
    let complaints = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && complaints.trim().is_empty(),
        "systemd-analyze verify: {complaints}"
    );
}
