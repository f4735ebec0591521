//! What the scenarios run against: the suite's own PostgreSQL cluster (it stops and starts it),
//! a fresh database per scenario, the real binary, and a load generator.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use timetrack_adapters::{Durability, LocalPostgres, run_migrations};
use timetrack_testkit::{Admin, HttpsReceiver, Received, ServeCommand};

/// The suite's surroundings.
pub struct Env {
    /// The `timetrack` binary under test.
    pub bin: PathBuf,
    /// Where the cluster and the server logs live.
    pub dir: PathBuf,
    /// Short sizes, for CI.
    pub quick: bool,
    local: Option<LocalPostgres>,
}

impl Env {
    /// Starts (or reuses) the suite's private, durable cluster under `dir`.
    pub async fn start(bin: &Path, dir: &Path, quick: bool) -> Result<Self> {
        if !bin.is_file() {
            bail!(
                "{} not found: build it first (`cargo build -p timetrack-api`)",
                bin.display()
            );
        }
        std::fs::create_dir_all(dir)?;
        let dir = std::path::absolute(dir)?;
        let mut env = Self {
            bin: std::path::absolute(bin)?,
            dir,
            quick,
            local: None,
        };
        env.start_database().await?;
        Ok(env)
    }

    /// A new, migrated, empty database named `chaos_<name>` (an older one of that name is
    /// dropped); its URL.
    pub async fn database(&self, name: &str) -> Result<String> {
        let local = self.local.as_ref().context("the database is stopped")?;
        let database = format!("chaos_{name}");
        timetrack_testkit::recreate_database(&local.url("postgres"), &database).await?;
        let url = local.url(&database);
        run_migrations(&url).await.context("migrating")?;
        Ok(url)
    }

    /// The admin commands on `database_url`.
    pub fn admin(&self, database_url: &str) -> Admin {
        Admin::new(&self.bin, database_url)
    }

    /// A new workspace with a user and key, made with the admin commands.
    pub async fn account(
        &self,
        database_url: &str,
        name: &str,
    ) -> Result<timetrack_testkit::Account> {
        let admin = self.admin(database_url);
        let name = name.to_owned();
        tokio::task::spawn_blocking(move || admin.account(&name)).await?
    }

    /// A second user with a key in `workspace_id`.
    pub async fn member(
        &self,
        database_url: &str,
        workspace_id: &str,
    ) -> Result<timetrack_testkit::Account> {
        let admin = self.admin(database_url);
        let workspace_id = workspace_id.to_owned();
        tokio::task::spawn_blocking(move || admin.member(&workspace_id)).await?
    }

    /// `timetrack serve` on `database_url` for delivery to `receiver`: its CA trusted, private
    /// targets allowed, rate limits lifted, retries after 1 s, 1 s and 2 s, a 3 s time-out, and
    /// its log appended to `<dir>/<log>.log`.
    pub fn serve(
        &self,
        database_url: &str,
        receiver: &HttpsReceiver,
        log: &str,
    ) -> Result<ServeCommand> {
        Ok(self
            .plain_serve(database_url, log)?
            .trusting_receiver(&receiver.ca_pem_path())
            .unlimited()
            .env("TIMETRACK_WEBHOOK_RETRY_SCHEDULE", "1s,1s,2s")
            .env("TIMETRACK_WEBHOOK_TIMEOUT", "3"))
    }

    /// `timetrack serve` on `database_url` with the default settings, its log in `<dir>/<log>.log`.
    pub fn plain_serve(&self, database_url: &str, log: &str) -> Result<ServeCommand> {
        Ok(ServeCommand::new(&self.bin, database_url)
            .env("TIMETRACK_LOG", "warn")
            .log_to(&self.log_path(log)))
    }

    /// The log file of `name`.
    pub fn log_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.log"))
    }

    /// Stops the cluster (PostgreSQL's fast shutdown).
    pub async fn stop_database(&mut self) {
        if let Some(mut local) = self.local.take() {
            let _ = tokio::task::spawn_blocking(move || local.stop()).await;
        }
    }

    /// Crashes the cluster: SIGQUIT to the postmaster, the signal `pg_ctl stop -m immediate`
    /// sends. Every server process exits at once, without a checkpoint and without flushing what
    /// asynchronous commits left in memory; the next start runs crash recovery. Returns once the
    /// postmaster is gone.
    pub async fn crash_database(&mut self) -> Result<()> {
        let local = self.local.take().context("the database is stopped")?;
        let pid_file = local.root().join("pgdata").join("postmaster.pid");
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .with_context(|| format!("reading {}", pid_file.display()))?
            .lines()
            .next()
            .and_then(|line| line.trim().parse().ok())
            .with_context(|| format!("no pid in {}", pid_file.display()))?;
        let pid = Pid::from_raw(pid);
        kill(pid, Signal::SIGQUIT).context("signalling the postmaster")?;
        // The handle's keeper thread reaps the postmaster as soon as it exits; after that the
        // pid answers ESRCH.
        let gone = tokio::task::spawn_blocking(move || {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while kill(pid, None).is_ok() {
                if std::time::Instant::now() > deadline {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            true
        })
        .await?;
        // Forgotten rather than dropped: dropping would signal the pid again, and it is no longer
        // the server's.
        std::mem::forget(local);
        if !gone {
            bail!("the postmaster ({pid}) did not exit within 30 s of SIGQUIT");
        }
        Ok(())
    }

    /// Starts the cluster again (same directory, same port while it is free).
    pub async fn start_database(&mut self) -> Result<()> {
        let root = self.dir.join("postgres");
        std::fs::create_dir_all(&root)?;
        let local =
            tokio::task::spawn_blocking(move || LocalPostgres::start(&root, Durability::Durable))
                .await??;
        if !local.owns_server() {
            bail!(
                "another process runs the suite's cluster under {}; stop it first",
                local.root().display()
            );
        }
        self.local = Some(local);
        Ok(())
    }

    /// Stops the cluster for good.
    pub async fn stop(mut self) {
        self.stop_database().await;
    }
}

/// A plain connection for the suite's own queries.
pub struct Db {
    client: tokio_postgres::Client,
}

impl Db {
    /// Connects to `url`.
    pub async fn connect(url: &str) -> Result<Self> {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .context("connecting to the suite's database")?;
        tokio::spawn(connection);
        Ok(Self { client })
    }

    /// The single number `sql` returns.
    pub async fn count(&self, sql: &str) -> Result<i64> {
        Ok(self.client.query_one(sql, &[]).await?.get(0))
    }

    /// The single text `sql` returns.
    pub async fn text(&self, sql: &str) -> Result<String> {
        Ok(self.client.query_one(sql, &[]).await?.try_get(0)?)
    }

    /// The rows `sql` returns.
    pub async fn rows(&self, sql: &str) -> Result<Vec<tokio_postgres::Row>> {
        Ok(self.client.query(sql, &[]).await?)
    }

    /// Runs statements.
    pub async fn execute(&self, sql: &str) -> Result<()> {
        Ok(self.client.batch_execute(sql).await?)
    }
}

/// Creates `count` clients (one event each) through the servers at `bases`, from `workers`
/// concurrent callers that take the servers in turn and move to the next one when a request
/// fails to connect or gets a 5xx; returns how many were answered 201 or 409 (already made by an
/// earlier try whose answer was lost).
pub async fn create_clients(
    bases: Arc<std::sync::Mutex<Vec<String>>>,
    key: &str,
    prefix: &str,
    count: usize,
    workers: usize,
) -> usize {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap_or_default();
    let created = Arc::new(AtomicUsize::new(0));
    let next = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..workers)
        .map(|w| {
            let (http, created, next, bases) =
                (http.clone(), created.clone(), next.clone(), bases.clone());
            let (key, prefix) = (key.to_owned(), prefix.to_owned());
            tokio::spawn(async move {
                let mut turn = w;
                loop {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    if n >= count {
                        return;
                    }
                    for _ in 0..100 {
                        let base = {
                            let bases = bases.lock().unwrap_or_else(|e| e.into_inner());
                            bases[turn % bases.len()].clone()
                        };
                        turn += 1;
                        let res = http
                            .post(format!("{base}/api/clients"))
                            .bearer_auth(&key)
                            .json(&json!({"name": format!("{prefix} {n}")}))
                            .send()
                            .await;
                        match res.map(|r| r.status().as_u16()) {
                            Ok(201 | 409) => {
                                created.fetch_add(1, Ordering::SeqCst);
                                break;
                            }
                            Ok(s) if s < 500 => break,
                            _ => tokio::time::sleep(Duration::from_millis(100)).await,
                        }
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    created.load(Ordering::SeqCst)
}

/// The (path, `webhook-id`) pairs that arrived.
pub fn arrived(received: &[Received]) -> HashSet<(String, String)> {
    received
        .iter()
        .map(|r| {
            (
                r.path.clone(),
                r.header("webhook-id").unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// Deliveries that have not arrived but are held by a live lease on the database of `db` (they
/// are sent again when the lease expires); `path_of` maps a subscription id to its path.
pub async fn held_by_lease(
    db: &Db,
    path_of: &HashMap<String, String>,
    arrived: &HashSet<(String, String)>,
) -> Result<usize> {
    let mut held = 0;
    for row in db
        .rows(
            "SELECT d.event_id::text, d.subscription_id FROM deliveries d \
             WHERE d.status = 'PENDING' AND EXISTS (SELECT 1 FROM delivery_leases l \
               WHERE l.delivery_id = d.id AND l.expires_at > now())",
        )
        .await?
    {
        let (event, subscription): (String, String) = (row.try_get(0)?, row.try_get(1)?);
        let path = path_of.get(&subscription).cloned().unwrap_or_default();
        if !arrived.contains(&(path, event)) {
            held += 1;
        }
    }
    Ok(held)
}

/// Per receiver path: distinct `webhook-id`s and the requests beyond the first of each.
pub fn arrivals_by_path(received: &[Received]) -> HashMap<String, (usize, usize)> {
    let mut seen: HashMap<&str, HashSet<&str>> = HashMap::new();
    let mut total: HashMap<&str, usize> = HashMap::new();
    for r in received {
        let id = r.header("webhook-id").unwrap_or("");
        seen.entry(r.path.as_str()).or_default().insert(id);
        *total.entry(r.path.as_str()).or_default() += 1;
    }
    seen.into_iter()
        .map(|(path, ids)| {
            let unique = ids.len();
            (path.to_owned(), (unique, total[path] - unique))
        })
        .collect()
}

/// Distinct (path, `webhook-id`) pairs and requests beyond the first of each, over every path.
pub fn arrivals(received: &[Received]) -> (usize, usize) {
    arrivals_by_path(received)
        .values()
        .fold((0, 0), |(u, d), (pu, pd)| (u + pu, d + pd))
}

/// Installs Debian's `packages` with apt when one of `commands` is missing from `PATH`, when
/// this runs as root (the suite's scenarios that need an engine PostgreSQL operators run).
pub fn ensure_debian_packages(commands: &[&str], packages: &[&str]) -> Result<()> {
    use std::process::{Command, Stdio};
    let have = |bin: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {bin}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if commands.iter().all(|bin| have(bin)) {
        return Ok(());
    }
    if !nix::unistd::geteuid().is_root() {
        bail!(
            "{} missing: install Debian's {}",
            commands.join(", "),
            packages.join(", ")
        );
    }
    let install = [&["install", "-y", "-qq"][..], packages].concat();
    for args in [vec!["update", "-qq"], install] {
        let status = Command::new("apt-get")
            .args(&args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
            .context("running apt-get")?;
        if !status.success() {
            bail!("apt-get {} failed", args.join(" "));
        }
    }
    Ok(())
}
