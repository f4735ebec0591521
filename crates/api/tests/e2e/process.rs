//! `serve` as a process: the private cluster, stopping, start-up errors, two processes on one
//! database.

use super::*;

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

    // A second start beside it, on its port, says what runs there, and leaves it running.
    let second = Command::new(BIN)
        .args(["serve", "--metrics-bind", "off", "--bind"])
        .arg(server.base.trim_start_matches("http://"))
        .current_dir(&dir)
        .env_remove("DATABASE_URL")
        .env_remove("TIMETRACK_DATA_DIR")
        .env_remove("TIMETRACK_SECRET_KEY")
        .env("TIMETRACK_LOG", "warn")
        .output()
        .unwrap();
    assert!(!second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains(&format!(
            "timetrack is already running here (pid {}, data dir ",
            server.pid()
        )) && stderr.contains(&format!("API on {})", server.base)),
        "{stderr}"
    );
    assert_eq!(get_json(&server, "/api/me", &key).0, 200);

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
    assert!(data.join("serve.pid").exists());
    assert!(server.stop().unwrap().success());
    assert!(
        !data.join("pgdata/postmaster.pid").exists(),
        "PostgreSQL still running after the server stopped"
    );
    assert!(!data.join("serve.pid").exists());

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
