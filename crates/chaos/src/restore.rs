//! Scenario 13: a backup restored to a point in time, the same in quick and full runs (about
//! 20 s). A cluster of its own archives its WAL with pgBackRest (Debian's package, installed when
//! missing) and has a full backup; the service writes on it (clients, an issued invoice,
//! deliveries to a receiver and to one that answers 503, so that some stay pending); a point in
//! time is taken, more is written after it; the cluster is stopped as if its disk were lost, and
//! the backup is restored with `--type=time --target=<point>` into a fresh data directory. The
//! service started on the restored cluster with the same `TIMETRACK_SECRET_KEY` must have every
//! change acknowledged before the point and none after it, sign with the webhook secrets it
//! decrypts, resolve the delivery ids and feed cursors handed out before the point, send the
//! deliveries pending at the point, and number the next invoice after the last one it has.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::str::FromStr as _;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use hmac::{Hmac, Mac as _};
use serde_json::json;
use timetrack_adapters::{Durability, LocalPostgres};
use timetrack_testkit::{Behaviour, HttpsReceiver, Received, ServerProcess};

use crate::env::{Db, Env};
use crate::scenario::{Scenario, say};

/// The stanza's name.
const STANZA: &str = "timetrack";

/// Clients created before the point, and after it.
const BEFORE: usize = 20;
const AFTER: usize = 10;

/// Runs the scenario.
pub async fn run(env: &Env, s: &mut Scenario) -> Result<()> {
    ensure_installed()?;
    let root = env.dir.join("restore");
    if root.exists() {
        std::fs::remove_dir_all(&root).with_context(|| format!("removing {}", root.display()))?;
    }
    std::fs::create_dir_all(&root)?;
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755))?;
    let source_root = root.join("source");
    let mut source =
        tokio::task::block_in_place(|| LocalPostgres::start(&source_root, Durability::Durable))?;
    let backrest = Backrest::new(&root, &source)?;
    let admin_url = source.url("postgres");
    let db = Db::connect(&admin_url).await?;
    db.execute("ALTER SYSTEM SET archive_mode = on").await?;
    db.execute(&format!(
        "ALTER SYSTEM SET archive_command = '{}'",
        backrest.archive_command()
    ))
    .await?;
    drop(db);
    // archive_mode takes a restart.
    tokio::task::block_in_place(|| {
        source.stop();
        LocalPostgres::start(&source_root, Durability::Durable)
    })
    .map(|started| source = started)?;
    backrest.run(&["stanza-create"])?;
    backrest.run(&["check"])?;
    let backed_up = Instant::now();
    backrest.run(&["backup", "--type=full"])?;
    s.figure(
        "full backup (empty database)",
        format!("{:.1} s", backed_up.elapsed().as_secs_f64()),
    );

    // The service writes on it.
    let url = source.ensure_database("timetrack").await?;
    let receiver = HttpsReceiver::start().await;
    receiver.respond("/down", Behaviour::Respond(503, Vec::new()));
    let server = env
        .serve(&url, &receiver, "restore-source")?
        .start()
        .await?;
    let account = env.account(&url, "Restore").await?;
    let key = account.key.clone();
    let (hook, secret) = server
        .subscribe(&key, &receiver.url("/hook"), &["CLIENT_CREATED"])
        .await?;
    server
        .subscribe(&key, &receiver.url("/down"), &["CLIENT_CREATED"])
        .await?;
    for n in 0..BEFORE {
        create_client(&server, &key, &format!("before-{n}")).await?;
    }
    let first_number = issue_invoice(&server, &key, "Fee before").await?;
    wait_for_names(
        &receiver,
        "/hook",
        0,
        "before-",
        BEFORE,
        Duration::from_secs(30),
    )
    .await;
    let (status, log) = server
        .get(
            &key,
            &format!("/api/integrations/automation/webhooks/{hook}/deliveries?limit=1"),
        )
        .await?;
    let delivery = log["data"][0]["id"]
        .as_str()
        .with_context(|| format!("no delivery in the log: {status} {log}"))?
        .to_owned();
    let (status, feed) = server
        .get(&key, "/api/integrations/automation/events?limit=5")
        .await?;
    let cursor = feed["next_cursor"]
        .as_str()
        .with_context(|| format!("no feed cursor: {status} {feed}"))?
        .to_owned();

    // The point: everything acknowledged so far is before it, as the database's clock says.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let db = Db::connect(&url).await?;
    let point = db
        .text("SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00'")
        .await?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for n in 0..AFTER {
        create_client(&server, &key, &format!("after-{n}")).await?;
    }
    let lost_number = issue_invoice(&server, &key, "Fee after").await?;
    let pending_at_stop = db
        .count("SELECT count(*) FROM deliveries WHERE status = 'PENDING'")
        .await
        .unwrap_or(-1);
    drop(db);
    // What was written after the point is archived too, so that its absence is the restore's
    // doing, not a gap in the archive (`check` switches the WAL file and waits for it).
    backrest.run(&["check"])?;
    drop(server);
    tokio::task::block_in_place(|| source.stop());
    say(&format!("  restoring to {point}"));

    // The disk is gone: restore into a fresh data directory.
    let restored_root = root.join("restored");
    let restored_data = restored_root.join("pgdata");
    std::fs::create_dir_all(&restored_data)?;
    std::fs::set_permissions(&restored_root, std::fs::Permissions::from_mode(0o755))?;
    std::fs::set_permissions(&restored_data, std::fs::Permissions::from_mode(0o700))?;
    backrest.own(&restored_root)?;
    backrest.own(&restored_data)?;
    std::fs::copy(
        source_root.join("cluster.json"),
        restored_root.join("cluster.json"),
    )?;
    let restoring = Instant::now();
    backrest.run(&[
        &format!("--pg1-path={}", restored_data.display()),
        "--type=time",
        &format!("--target={point}"),
        "--target-action=promote",
        "restore",
    ])?;
    let restored =
        tokio::task::block_in_place(|| LocalPostgres::start(&restored_root, Durability::Durable))?;
    let admin = Db::connect(&restored.url("postgres")).await?;
    let deadline = Instant::now() + Duration::from_secs(120);
    while admin
        .count("SELECT pg_is_in_recovery()::int::bigint")
        .await?
        != 0
    {
        if Instant::now() > deadline {
            bail!("the restored cluster did not finish recovery within 120 s");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    s.figure(
        "restore and recovery to the point",
        format!("{:.1} s", restoring.elapsed().as_secs_f64()),
    );
    let url = restored.url("timetrack");
    let db = Db::connect(&url).await?;
    s.check_eq(
        "every client acknowledged before the point is restored",
        db.count("SELECT count(*) FROM clients WHERE name LIKE 'before-%'")
            .await?,
        BEFORE as i64,
    );
    s.check_eq(
        "no client created after the point is restored",
        db.count("SELECT count(*) FROM clients WHERE name LIKE 'after-%'")
            .await?,
        0,
    );
    let pending = db
        .count("SELECT count(*) FROM deliveries WHERE status = 'PENDING'")
        .await?;
    s.check(
        "the deliveries to the receiver that answered 503 were pending at the point",
        pending >= BEFORE as i64,
        format!("{pending} pending"),
    );
    s.figure(
        "deliveries pending when the cluster stopped",
        pending_at_stop,
    );

    // The service on the restored cluster, with the same secret key; the receiver that answered
    // 503 answers 200 now.
    receiver.respond("/down", Behaviour::Respond(200, Vec::new()));
    let since = receiver.count();
    let server = env
        .serve(&url, &receiver, "restore-restored")?
        .start()
        .await?;
    let (status, _) = server
        .get(
            &key,
            &format!("/api/integrations/automation/webhooks/{hook}/deliveries/{delivery}"),
        )
        .await?;
    s.check_eq(
        "a delivery id handed out before the point resolves",
        status,
        200,
    );
    let (status, page) = server
        .get(
            &key,
            &format!("/api/integrations/automation/events?after={cursor}&limit=100"),
        )
        .await?;
    s.check(
        "a feed cursor handed out before the point resolves",
        status == 200 && page["data"].is_array(),
        format!("{status}"),
    );
    let sent = wait_for_names(
        &receiver,
        "/down",
        since,
        "before-",
        BEFORE,
        Duration::from_secs(60),
    )
    .await;
    s.check_eq(
        "the deliveries pending at the point are sent (receivers deduplicate by webhook-id)",
        sent,
        BEFORE,
    );
    create_client(&server, &key, "restored-0").await?;
    wait_for_names(
        &receiver,
        "/hook",
        since,
        "restored-",
        1,
        Duration::from_secs(30),
    )
    .await;
    let signed = receiver
        .received_from(since)
        .into_iter()
        .filter(|r| r.path == "/hook" && body_has(r, "restored-"))
        .collect::<Vec<_>>();
    s.check(
        "a delivery after the restore is signed with the webhook's secret (decrypted)",
        !signed.is_empty() && signed.iter().all(|r| signature_holds(r, &secret)),
        format!("{} deliveries", signed.len()),
    );
    let next_number = issue_invoice(&server, &key, "Fee restored").await?;
    s.check(
        "invoice numbers continue after the last restored one, without reuse",
        next_number == following(&first_number)? && next_number != first_number,
        format!("before {first_number}, lost after the point {lost_number}, next {next_number}"),
    );
    drop(server);
    drop(db);
    drop(admin);
    drop(restored);
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}

async fn create_client(server: &ServerProcess, key: &str, name: &str) -> Result<()> {
    let (status, body) = server
        .post(key, "/api/clients", &json!({"name": name}))
        .await?;
    if status != 201 {
        bail!("creating client {name}: {status} {body}");
    }
    Ok(())
}

/// A draft for a new client with one extra line, issued; its number.
async fn issue_invoice(server: &ServerProcess, key: &str, what: &str) -> Result<String> {
    let (status, client) = server
        .post(
            key,
            "/api/clients",
            &json!({"name": format!("Billed {what}")}),
        )
        .await?;
    if status != 201 {
        bail!("creating the billed client: {status} {client}");
    }
    let client = client["id"].as_str().context("client id")?;
    let (status, draft) = server
        .post(
            key,
            "/api/invoices",
            &json!({
                "client_id": client,
                "from": "2026-06-01",
                "to": "2026-06-30",
                "extra_lines": [{"description": what, "quantity": 1, "unit_price_minor": 100}]
            }),
        )
        .await?;
    if status != 201 {
        bail!("creating a draft: {status} {draft}");
    }
    let id = draft["id"].as_str().context("draft id")?;
    let (status, issued) = server
        .post(key, &format!("/api/invoices/{id}/issue"), &json!({}))
        .await?;
    if status != 200 {
        bail!("issuing: {status} {issued}");
    }
    Ok(issued["number"].as_str().context("number")?.to_owned())
}

/// `YYYY-NNNN` + 1.
fn following(number: &str) -> Result<String> {
    let (year, n) = number.split_once('-').context("an invoice number")?;
    let n: u32 = n.parse()?;
    Ok(format!("{year}-{:04}", n + 1))
}

fn body_has(r: &Received, text: &str) -> bool {
    String::from_utf8_lossy(&r.body).contains(text)
}

/// Waits until `path` has received (from request `since` on, answered 2xx) deliveries of the
/// clients `prefix0` to `prefix<count-1>`; how many of them it had.
async fn wait_for_names(
    receiver: &HttpsReceiver,
    path: &str,
    since: usize,
    prefix: &str,
    count: usize,
    within: Duration,
) -> usize {
    let deadline = Instant::now() + within;
    loop {
        let bodies: Vec<String> = receiver
            .received_from(since)
            .iter()
            .filter(|r| r.path == path && r.answered.is_some_and(|s| (200..300).contains(&s)))
            .map(|r| String::from_utf8_lossy(&r.body).into_owned())
            .collect();
        let found = (0..count)
            .filter(|n| {
                let quoted = format!("\"{prefix}{n}\"");
                bodies.iter().any(|body| body.contains(&quoted))
            })
            .count();
        if found >= count || Instant::now() > deadline {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether `r`'s `webhook-signature` is the Standard Webhooks HMAC of its id, timestamp and body
/// under `secret` (`whsec_<base64>`).
fn signature_holds(r: &Received, secret: &str) -> bool {
    let (Some(id), Some(at), Some(signatures)) = (
        r.header("webhook-id"),
        r.header("webhook-timestamp"),
        r.header("webhook-signature"),
    ) else {
        return false;
    };
    let Ok(key) = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap_or(secret))
    else {
        return false;
    };
    let Ok(mut mac) = Hmac::<sha2::Sha256>::new_from_slice(&key) else {
        return false;
    };
    mac.update(format!("{id}.{at}.").as_bytes());
    mac.update(&r.body);
    let expected = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    signatures
        .split(' ')
        .any(|s| s.strip_prefix("v1,") == Some(expected.as_str()))
}

/// pgBackRest on one repository, run as the owner of the cluster's files (PostgreSQL's server
/// runs as that user, and so does its `archive_command`).
struct Backrest {
    config: PathBuf,
    uid: u32,
    gid: u32,
    password: String,
}

impl Backrest {
    /// A repository, log and lock directory under `root/backup`, and the configuration naming
    /// `cluster` (reached on 127.0.0.1: the private clusters have no Unix socket, and pgBackRest
    /// takes the host from libpq's `PGHOST`).
    fn new(root: &Path, cluster: &LocalPostgres) -> Result<Self> {
        let data = cluster.root().join("pgdata");
        let meta = std::fs::metadata(&data)?;
        let config = tokio_postgres::Config::from_str(&cluster.url("postgres"))?;
        let user = config.get_user().context("the cluster's user")?.to_owned();
        let password = config
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .unwrap_or_default();
        let backup = root.join("backup");
        let this = Self {
            config: backup.join("pgbackrest.conf"),
            uid: meta.uid(),
            gid: meta.gid(),
            password,
        };
        for dir in ["repo", "log", "lock", "spool"] {
            std::fs::create_dir_all(backup.join(dir))?;
            this.own(&backup.join(dir))?;
        }
        this.own(&backup)?;
        std::fs::write(
            &this.config,
            format!(
                "[global]\nrepo1-path={b}/repo\nrepo1-retention-full=2\nlog-path={b}/log\n\
                 lock-path={b}/lock\nspool-path={b}/spool\nstart-fast=y\n\
                 log-level-console=warn\n\n[{STANZA}]\npg1-path={d}\npg1-port={p}\npg1-user={user}\n",
                b = backup.display(),
                d = data.display(),
                p = cluster.port(),
            ),
        )?;
        this.own(&this.config)?;
        Ok(this)
    }

    fn own(&self, path: &Path) -> Result<()> {
        if nix::unistd::geteuid().is_root() {
            nix::unistd::chown(
                path,
                Some(nix::unistd::Uid::from_raw(self.uid)),
                Some(nix::unistd::Gid::from_raw(self.gid)),
            )?;
        }
        Ok(())
    }

    fn archive_command(&self) -> String {
        format!(
            "pgbackrest --config={} --stanza={STANZA} archive-push %p",
            self.config.display()
        )
    }

    /// `pgbackrest --config=… --stanza=… args…`, failing with its output.
    fn run(&self, args: &[&str]) -> Result<()> {
        let mut cmd = Command::new("pgbackrest");
        cmd.arg(format!("--config={}", self.config.display()))
            .arg(format!("--stanza={STANZA}"))
            .args(args)
            .env("PGHOST", "127.0.0.1")
            .env("PGPASSWORD", &self.password)
            .current_dir("/")
            .stdin(Stdio::null());
        if nix::unistd::geteuid().is_root() {
            cmd.uid(self.uid).gid(self.gid);
        }
        let out = cmd.output().context("running pgbackrest")?;
        if !out.status.success() {
            bail!(
                "pgbackrest {} failed ({}): {}{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }
}

/// Installs Debian's `pgbackrest` when it is missing (as root, with apt).
fn ensure_installed() -> Result<()> {
    crate::env::ensure_debian_packages(&["pgbackrest"], &["pgbackrest"])
}
