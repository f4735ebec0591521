//! The one-shot commands: `admin`, `migrate`, `--help`, and the deployment examples.

use super::*;

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
async fn admin_commands_give_roles_and_keep_an_owner() {
    let db = TestDatabase::new().await;
    let url = db.url().to_owned();
    tokio::task::spawn_blocking(move || {
        let ws = json_stdout(&run(&["admin", "create-workspace", "--name", "Acme"], &url));
        let ws_id = ws["id"].as_str().unwrap().to_owned();
        let create = |name: &str, role: Option<&str>| {
            let email = format!("{}@example.com", name.to_lowercase());
            let mut args = vec![
                "admin",
                "create-user",
                "--workspace",
                &ws_id,
                "--name",
                name,
                "--email",
                &email,
            ];
            if let Some(role) = role {
                args.extend(["--role", role]);
            }
            json_stdout(&run(&args, &url))
        };
        // The first member owns the workspace, whatever was asked; the default is member.
        let ada = create("Ada", Some("member"));
        assert_eq!(ada["role"], "owner");
        let grace = create("Grace", Some("admin"));
        assert_eq!(grace["role"], "admin");
        assert_eq!(create("Linus", None)["role"], "member");

        let set_role = |user: &Value, role: &str| {
            run(
                &[
                    "admin",
                    "set-role",
                    "--workspace",
                    &ws_id,
                    "--user",
                    user["id"].as_str().unwrap(),
                    "--role",
                    role,
                ],
                &url,
            )
        };
        let out = set_role(&ada, "admin");
        assert!(!out.status.success());
        assert!(out.stdout.is_empty());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("A workspace keeps at least one owner"),
            "{stderr}"
        );
        let out = set_role(&grace, "superuser");
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("role must be one of"));

        let promoted = json_stdout(&set_role(&grace, "owner"));
        assert_eq!(
            (
                promoted["id"].clone(),
                promoted["role"].clone(),
                promoted["workspace_id"].clone()
            ),
            (grace["id"].clone(), "owner".into(), ws_id.as_str().into())
        );
        assert_eq!(json_stdout(&set_role(&ada, "member"))["role"], "member");
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
