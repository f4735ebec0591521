//! The real `timetrack` binary as a child process, for tools and tests that drive it from outside:
//! `serve` on a free port (waited on until healthy, killed when dropped, `kill -9` on demand) and
//! accounts made with its own `admin` commands.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// How long a new server may take to answer its health check.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A free TCP port on 127.0.0.1 (free when asked; another process may take it later).
pub fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// `timetrack serve`, configured before it starts.
#[derive(Debug, Clone)]
pub struct ServeCommand {
    bin: PathBuf,
    port: u16,
    envs: Vec<(String, String)>,
    wrapper: Vec<String>,
    log: Option<PathBuf>,
}

impl ServeCommand {
    /// `bin serve` on `database_url`, on a free port, with metrics off and warnings logged.
    pub fn new(bin: &Path, database_url: &str) -> Result<Self> {
        let port = free_port()?;
        Ok(Self {
            bin: bin.to_owned(),
            port,
            envs: vec![
                ("DATABASE_URL".to_owned(), database_url.to_owned()),
                ("TIMETRACK_BIND".to_owned(), format!("127.0.0.1:{port}")),
                ("TIMETRACK_METRICS_BIND".to_owned(), "off".to_owned()),
                ("TIMETRACK_LOG".to_owned(), "warn".to_owned()),
                (
                    "TIMETRACK_SECRET_KEY".to_owned(),
                    super::TEST_SECRET_KEY.to_owned(),
                ),
            ],
            wrapper: Vec::new(),
            log: None,
        })
    }

    /// Sets an environment variable of the server (a later value of the same name wins).
    #[must_use]
    pub fn env(mut self, name: &str, value: impl Into<String>) -> Self {
        self.envs.retain(|(n, _)| n != name);
        self.envs.push((name.to_owned(), value.into()));
        self
    }

    /// Delivery settings for a loopback receiver: private targets allowed, `ca_pem` trusted.
    #[must_use]
    pub fn trusting_receiver(self, ca_pem: &Path) -> Self {
        self.env("TIMETRACK_WEBHOOK_ALLOW_PRIVATE_TARGETS", "true")
            .env(
                "TIMETRACK_WEBHOOK_ROOT_CERTS",
                ca_pem.to_string_lossy().into_owned(),
            )
    }

    /// Rate limits lifted, for load that is not about rate limits.
    #[must_use]
    pub fn unlimited(self) -> Self {
        self.env("TIMETRACK_RATE_LIMIT_PER_MINUTE", "1000000000")
            .env("TIMETRACK_RATE_LIMIT_PER_SECOND", "1000000000")
    }

    /// Runs the server through `program args... <bin> serve` (for example under `unshare`).
    #[must_use]
    pub fn wrapped_in(mut self, program_and_args: &[&str]) -> Self {
        self.wrapper = program_and_args.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// Appends the server's stderr (its log) to `path` instead of passing it through.
    #[must_use]
    pub fn log_to(mut self, path: &Path) -> Self {
        self.log = Some(path.to_owned());
        self
    }

    /// The port it will listen on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Starts the server and waits until `GET /api/health` answers 200.
    pub async fn start(&self) -> Result<ServerProcess> {
        let mut command = match self.wrapper.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(&self.bin);
                c
            }
            None => Command::new(&self.bin),
        };
        let stderr = match &self.log {
            Some(path) => Stdio::from(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .with_context(|| format!("opening {}", path.display()))?,
            ),
            None => Stdio::inherit(),
        };
        command
            .arg("serve")
            .envs(self.envs.iter().map(|(n, v)| (n, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        let child = command
            .spawn()
            .with_context(|| format!("starting {}", self.bin.display()))?;
        let mut server = ServerProcess {
            child,
            base: format!("http://127.0.0.1:{}", self.port),
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(64)
                .build()?,
        };
        server.wait_healthy(START_TIMEOUT).await?;
        Ok(server)
    }
}

/// A running `timetrack serve`; killed when dropped.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// A client with kept-alive connections to it.
    pub http: reqwest::Client,
}

/// Resident memory of a process.
#[derive(Debug, Clone, Copy, Default)]
pub struct Memory {
    /// Resident now, in kB.
    pub rss_kb: u64,
    /// The peak resident size so far, in kB.
    pub peak_kb: u64,
}

impl Memory {
    /// Resident now, in MiB.
    pub fn rss_mb(&self) -> f64 {
        self.rss_kb as f64 / 1024.0
    }

    /// The peak resident size, in MiB.
    pub fn peak_mb(&self) -> f64 {
        self.peak_kb as f64 / 1024.0
    }
}

impl ServerProcess {
    /// Waits until the health check answers 200; fails if the process exits or `timeout` passes.
    pub async fn wait_healthy(&mut self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(res) = self
                .http
                .get(format!("{}/api/health", self.base))
                .send()
                .await
                && res.status() == 200
            {
                return Ok(());
            }
            if let Some(status) = self.exited() {
                bail!("the server exited before it was healthy ({status})");
            }
            if Instant::now() > deadline {
                bail!("the server did not become healthy within {timeout:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The exit status, if the process has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// `kill -9`, and waits for the process to be gone.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The process's resident and peak resident memory, from `/proc`.
    pub fn memory(&self) -> Result<Memory> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))?;
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

    /// `POST path` with `key` and a JSON body: the status and the parsed body (`null` if none).
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

    /// `GET path` with `key`: the status and the parsed body (`null` if none).
    pub async fn get(&self, key: &str, path: &str) -> Result<(u16, Value)> {
        let res = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(key)
            .send()
            .await?;
        let status = res.status().as_u16();
        Ok((status, res.json().await.unwrap_or(Value::Null)))
    }

    /// Subscribes `url` to `events` with `key`; the webhook's id and signing secret.
    pub async fn subscribe(
        &self,
        key: &str,
        url: &str,
        events: &[&str],
    ) -> Result<(String, String)> {
        let (status, body) = self
            .post(
                key,
                "/api/integrations/automation/webhooks/subscribe",
                &serde_json::json!({"url": url, "events": events}),
            )
            .await?;
        if status != 201 {
            bail!("subscribing {url} failed: {status} {body}");
        }
        Ok((
            field(&body["webhook"], "id")?,
            field(&body["webhook"], "secret")?,
        ))
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A user's key in a workspace, made with the admin commands.
#[derive(Debug, Clone)]
pub struct Account {
    /// The API key.
    pub key: String,
    /// The user's id.
    pub user_id: String,
    /// The workspace's id.
    pub workspace_id: String,
}

/// The binary's `admin` commands on one database.
#[derive(Debug, Clone)]
pub struct Admin {
    bin: PathBuf,
    database_url: String,
}

impl Admin {
    /// `bin admin ...` on `database_url`.
    pub fn new(bin: &Path, database_url: &str) -> Self {
        Self {
            bin: bin.to_owned(),
            database_url: database_url.to_owned(),
        }
    }

    /// Runs `admin args...`; its JSON output, or the error it printed.
    pub fn run(&self, args: &[&str]) -> Result<Value> {
        let out = Command::new(&self.bin)
            .arg("admin")
            .args(args)
            .env("DATABASE_URL", &self.database_url)
            .env("TIMETRACK_LOG", "warn")
            .output()
            .with_context(|| format!("running {}", self.bin.display()))?;
        if !out.status.success() {
            bail!(
                "timetrack admin {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    /// A new workspace named `name`, with one user and a key.
    pub fn account(&self, name: &str) -> Result<Account> {
        let ws = self.run(&["create-workspace", "--name", name])?;
        self.member(&field(&ws, "id")?)
    }

    /// A new user of `workspace_id`, with a key.
    pub fn member(&self, workspace_id: &str) -> Result<Account> {
        let email = format!("user-{}@example.com", uuid::Uuid::new_v4().simple());
        let user = self.run(&[
            "create-user",
            "--workspace",
            workspace_id,
            "--name",
            "Member",
            "--email",
            &email,
        ])?;
        let user_id = field(&user, "id")?;
        let key = self.run(&[
            "create-api-key",
            "--user",
            &user_id,
            "--workspace",
            workspace_id,
        ])?;
        Ok(Account {
            key: field(&key, "key")?,
            user_id,
            workspace_id: workspace_id.to_owned(),
        })
    }
}

/// The string `name` of a JSON object.
pub fn field(value: &Value, name: &str) -> Result<String> {
    value[name]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("no {name} in {value}"))
}
