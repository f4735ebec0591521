//! What the workloads run against: the database, the HTTPS receiver, the server process, and
//! accounts made with the server's own admin commands.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use timetrack_adapters::testing::HttpsReceiver;
use timetrack_adapters::{
    Durability, LocalPostgres, PgPool, PoolSettings, build_pool, run_migrations,
};

use crate::Options;

/// The bench's database on `DATABASE_URL`'s server.
const DATABASE: &str = "timetrack_bench";

/// The database, the receiver and the binary.
pub struct Environment {
    pub database_url: String,
    pub database_label: String,
    pub receiver: HttpsReceiver,
    pub pool: PgPool,
    server_bin: PathBuf,
    local: Option<LocalPostgres>,
}

impl Environment {
    /// Opens (or creates) the bench database, migrates it, and starts the receiver.
    pub async fn start(options: &Options) -> Result<Self> {
        if !options.server_bin.is_file() {
            bail!(
                "{} not found: build it first (`cargo build --release -p timetrack-api`)",
                options.server_bin.display()
            );
        }
        let (database_url, database_label, local) = match std::env::var("DATABASE_URL") {
            Ok(url) if !url.is_empty() => {
                let url = ensure_database(&url).await?;
                (url, format!("`{DATABASE}` on DATABASE_URL's server"), None)
            }
            _ => {
                let dir = std::path::absolute(&options.data_dir)?.join("postgres");
                std::fs::create_dir_all(&dir)?;
                let local = tokio::task::spawn_blocking(move || {
                    LocalPostgres::start(&dir, Durability::Durable)
                })
                .await??;
                let url = local.ensure_database(DATABASE).await?;
                (
                    url,
                    "private cluster, durable settings (fsync and synchronous commit on)"
                        .to_owned(),
                    Some(local),
                )
            }
        };
        run_migrations(&database_url)
            .await
            .context("migrating the bench database")?;
        let pool = build_pool(&database_url, PoolSettings::default())?;
        Ok(Self {
            database_url,
            database_label,
            receiver: HttpsReceiver::start().await,
            pool,
            server_bin: std::path::absolute(&options.server_bin)?,
            local,
        })
    }

    /// Starts `timetrack serve` on a free port: rate limits lifted, the receiver's CA trusted,
    /// private targets allowed (the receiver is on loopback), metrics off.
    pub async fn start_server(&self, _options: &Options) -> Result<Server> {
        let port = free_port()?;
        let child = Command::new(&self.server_bin)
            .arg("serve")
            .env("DATABASE_URL", &self.database_url)
            .env("TIMETRACK_BIND", format!("127.0.0.1:{port}"))
            .env("TIMETRACK_METRICS_BIND", "off")
            .env("TIMETRACK_LOG", "warn")
            .env("TIMETRACK_WEBHOOK_ALLOW_PRIVATE_TARGETS", "true")
            .env("TIMETRACK_WEBHOOK_ROOT_CERTS", self.receiver.ca_pem_path())
            .env("TIMETRACK_RATE_LIMIT_PER_MINUTE", "1000000000")
            .env("TIMETRACK_RATE_LIMIT_PER_SECOND", "1000000000")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {}", self.server_bin.display()))?;
        let server = Server {
            child,
            base: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(64)
                .build()?,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(res) = server
                .http
                .get(format!("{}/api/health", server.base))
                .send()
                .await
                && res.status() == 200
            {
                return Ok(server);
            }
            if Instant::now() > deadline {
                bail!("the server did not become healthy within 60 s");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A new workspace with one user and key, made by the server's admin commands.
    pub async fn account(&self, name: &str) -> Result<Account> {
        let bin = self.server_bin.clone();
        let url = self.database_url.clone();
        let name = name.to_owned();
        tokio::task::spawn_blocking(move || {
            let ws = admin(&bin, &url, &["create-workspace", "--name", &name])?;
            let workspace_id = field(&ws, "id")?;
            Self::key_for(&bin, &url, &workspace_id)
        })
        .await?
    }

    /// A user and key in an existing workspace.
    pub async fn account_in(&self, workspace_id: &str) -> Result<Account> {
        let bin = self.server_bin.clone();
        let url = self.database_url.clone();
        let workspace_id = workspace_id.to_owned();
        tokio::task::spawn_blocking(move || Self::key_for(&bin, &url, &workspace_id)).await?
    }

    fn key_for(bin: &Path, url: &str, workspace_id: &str) -> Result<Account> {
        let email = format!("bench-{}@example.com", uuid::Uuid::new_v4().simple());
        let user = admin(
            bin,
            url,
            &[
                "create-user",
                "--workspace",
                workspace_id,
                "--name",
                "Bench",
                "--email",
                &email,
            ],
        )?;
        let user_id = field(&user, "id")?;
        let key = admin(
            bin,
            url,
            &[
                "create-api-key",
                "--user",
                &user_id,
                "--workspace",
                workspace_id,
            ],
        )?;
        Ok(Account {
            key: field(&key, "key")?,
        })
    }

    /// One line on where the figures come from.
    pub fn describe(&self) -> String {
        let cpus = std::thread::available_parallelism().map_or(0, usize::from);
        let model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|m| m.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown CPU".to_owned());
        let memory = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|l| l.starts_with("MemTotal"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|kb| kb.parse::<f64>().ok())
            })
            .map_or_else(String::new, |kb| {
                format!(", {:.0} GiB", kb / 1024.0 / 1024.0)
            });
        format!(
            "{cpus} CPUs ({model}){memory}; PostgreSQL: {}",
            self.database_label
        )
    }

    /// Stops the private cluster, if the bench started one.
    pub fn stop(mut self) {
        if let Some(local) = self.local.as_mut() {
            local.stop();
        }
    }
}

/// A workspace's key.
#[derive(Debug, Clone)]
pub struct Account {
    pub key: String,
}

/// A running server; killed when dropped.
pub struct Server {
    child: Child,
    pub base: String,
    pub http: reqwest::Client,
}

/// Resident memory of the server.
#[derive(Debug, Clone, Copy, Default)]
pub struct Memory {
    /// Resident now, in kB.
    pub rss_kb: u64,
    /// The peak resident size so far, in kB.
    pub peak_kb: u64,
}

impl Memory {
    pub fn rss_mb(&self) -> f64 {
        self.rss_kb as f64 / 1024.0
    }

    pub fn peak_mb(&self) -> f64 {
        self.peak_kb as f64 / 1024.0
    }
}

impl Server {
    /// The process's resident and peak resident memory, from `/proc`.
    pub fn memory(&self) -> Result<Memory> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let kb = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0)
        };
        Ok(Memory {
            rss_kb: kb("VmRSS:"),
            peak_kb: kb("VmHWM:"),
        })
    }

    /// `POST path` with `key` and a JSON body; the status and the parsed body.
    pub async fn post(&self, key: &str, path: &str, body: &Value) -> Result<(u16, Value)> {
        let res = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(key)
            .json(body)
            .send()
            .await?;
        let status = res.status().as_u16();
        Ok((status, res.json().await.unwrap_or(Value::Null)))
    }

    /// Subscribes the receiver's `path` to `CLIENT_CREATED` with `key`.
    pub async fn subscribe(&self, key: &str, url: &str) -> Result<()> {
        let (status, body) = self
            .post(
                key,
                "/api/integrations/automation/webhooks/subscribe",
                &serde_json::json!({"url": url, "events": ["CLIENT_CREATED"]}),
            )
            .await?;
        if status != 201 {
            bail!("subscribing failed: {status} {body}");
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn admin(bin: &Path, url: &str, args: &[&str]) -> Result<Value> {
    let out = Command::new(bin)
        .arg("admin")
        .args(args)
        .env("DATABASE_URL", url)
        .env("TIMETRACK_LOG", "warn")
        .output()?;
    if !out.status.success() {
        bail!(
            "timetrack admin {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

fn field(value: &Value, name: &str) -> Result<String> {
    value[name]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("no {name} in {value}"))
}

/// Creates the bench database on `url`'s server unless it exists; its URL.
async fn ensure_database(url: &str) -> Result<String> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .context("connecting to DATABASE_URL")?;
    let driver = tokio::spawn(connection);
    let exists = client
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&DATABASE])
        .await?
        .is_some();
    if !exists {
        client
            .batch_execute(&format!("CREATE DATABASE {DATABASE}"))
            .await
            .context("creating the bench database (the role needs CREATEDB)")?;
    }
    drop(client);
    let _ = driver.await;
    let mut parsed = url::Url::parse(url).context("DATABASE_URL is not a URL")?;
    parsed.set_path(&format!("/{DATABASE}"));
    Ok(parsed.to_string())
}
