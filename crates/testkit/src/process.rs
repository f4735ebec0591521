//! The real `timetrack` binary as a child process, for tools and tests that drive it from outside:
//! `serve` on a free port (waited on until healthy, killed when dropped, `kill -9` on demand) and
//! accounts made with its own `admin` commands.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use nix::sys::signal::{self, Signal};
use nix::unistd::Pid;
use serde_json::Value;

/// How long a new server may take to answer its health check.
const START_TIMEOUT: Duration = Duration::from_secs(90);

/// How long a server may take to stop after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

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
    envs: Vec<(String, String)>,
    removed: Vec<String>,
    wrapper: Vec<String>,
    log: Option<Log>,
    dir: Option<PathBuf>,
    metrics: bool,
    own_group: bool,
    capture_stdout: bool,
    bare: bool,
}

/// Where a server's stderr (its log) goes.
#[derive(Debug, Clone)]
enum Log {
    /// Appended to a file that stays.
    Kept(PathBuf),
    /// Written to a file that is printed if the holder panics, and removed otherwise.
    ShownOnFailure(PathBuf),
}

impl ServeCommand {
    /// `bin serve` on `database_url`, on a free port, with metrics off and warnings logged.
    pub fn new(bin: &Path, database_url: &str) -> Self {
        Self::without_database(bin).env("DATABASE_URL", database_url)
    }

    /// `bin serve` with no `DATABASE_URL` (nor a data directory or secret key from the
    /// environment): the binary starts a private cluster of its own in its working directory.
    pub fn on_private_cluster(bin: &Path) -> Self {
        Self::without_database(bin)
            .env_remove("DATABASE_URL")
            .env_remove("TIMETRACK_DATA_DIR")
            .env_remove("TIMETRACK_SECRET_KEY")
    }

    fn without_database(bin: &Path) -> Self {
        Self {
            bin: bin.to_owned(),
            envs: vec![
                ("TIMETRACK_LOG".to_owned(), "warn".to_owned()),
                (
                    "TIMETRACK_SECRET_KEY".to_owned(),
                    super::TEST_SECRET_KEY.to_owned(),
                ),
            ],
            removed: Vec::new(),
            wrapper: Vec::new(),
            log: None,
            dir: None,
            metrics: false,
            own_group: false,
            capture_stdout: false,
            bare: false,
        }
    }

    /// Sets an environment variable of the server (a later value of the same name wins).
    #[must_use]
    pub fn env(mut self, name: &str, value: impl Into<String>) -> Self {
        self.envs.retain(|(n, _)| n != name);
        self.removed.retain(|n| n != name);
        self.envs.push((name.to_owned(), value.into()));
        self
    }

    /// Removes an environment variable, whether set here or inherited.
    #[must_use]
    pub fn env_remove(mut self, name: &str) -> Self {
        self.envs.retain(|(n, _)| n != name);
        self.removed.push(name.to_owned());
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

    /// Rate limits (and the quota on queueing deliveries again) lifted, for load that is not
    /// about them.
    #[must_use]
    pub fn unlimited(self) -> Self {
        self.env("TIMETRACK_RATE_LIMIT_PER_MINUTE", "1000000000")
            .env("TIMETRACK_RATE_LIMIT_PER_SECOND", "1000000000")
            .env("TIMETRACK_WEBHOOK_REQUEUE_PER_MINUTE", "1000000")
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
        self.log = Some(Log::Kept(path.to_owned()));
        self
    }

    /// Writes the server's log to a new file under `dir`, printed (to the test harness's captured
    /// stderr) if the [`ServerProcess`] is dropped while its thread panics, removed otherwise: a
    /// passing test stays quiet, a failing one shows what the server said.
    #[must_use]
    pub fn log_shown_on_failure(mut self, dir: &Path) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("server-{}-{n}.log", std::process::id());
        self.log = Some(Log::ShownOnFailure(dir.join(name)));
        self
    }

    /// Runs the server in `dir`.
    #[must_use]
    pub fn current_dir(mut self, dir: &Path) -> Self {
        self.dir = Some(dir.to_owned());
        self
    }

    /// Serves metrics on a free port of their own (see [`ServerProcess::metrics`]).
    #[must_use]
    pub fn with_metrics(mut self) -> Self {
        self.metrics = true;
        self
    }

    /// Starts the server as the leader of a process group of its own, as a shell does with a
    /// terminal's foreground job.
    #[must_use]
    pub fn own_process_group(mut self) -> Self {
        self.own_group = true;
        self
    }

    /// Runs the binary with no command at all (`timetrack`, as `cargo run` does), which serves.
    #[must_use]
    pub fn without_command_name(mut self) -> Self {
        self.bare = true;
        self
    }

    /// Pipes the server's stdout, for [`ServerProcess::take_stdout`] (else it goes nowhere).
    #[must_use]
    pub fn capture_stdout(mut self) -> Self {
        self.capture_stdout = true;
        self
    }

    /// Starts the server on free ports and waits until `GET /api/health` answers 200. A port is
    /// free only when asked, and the server may find it taken when it binds (by the private
    /// cluster it starts first, say): a server that exits before it is healthy is started again
    /// on new ports, up to three times.
    pub async fn start(&self) -> Result<ServerProcess> {
        let mut last = None;
        for _ in 0..3 {
            let mut server = self.spawn()?;
            match server.wait_healthy(START_TIMEOUT).await {
                Ok(()) => return Ok(server),
                Err(e) if server.exited().is_some() => {
                    if let Some(Log::ShownOnFailure(path)) = &server.log {
                        let log = std::fs::read_to_string(path).unwrap_or_default();
                        last = Some(e.context(log));
                    } else {
                        last = Some(e);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.map_or_else(
            || anyhow::anyhow!("the server did not start"),
            |e| e.context("the server exited before it was healthy, three times"),
        ))
    }

    /// [`start`](Self::start), for code outside an async runtime.
    pub fn start_blocking(&self) -> Result<ServerProcess> {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(self.start())
    }

    fn spawn(&self) -> Result<ServerProcess> {
        let mut command = match self.wrapper.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(&self.bin);
                c
            }
            None => Command::new(&self.bin),
        };
        let stderr = match &self.log {
            Some(Log::Kept(path)) => Stdio::from(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .with_context(|| format!("opening {}", path.display()))?,
            ),
            Some(Log::ShownOnFailure(path)) => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                Stdio::from(
                    std::fs::File::create(path)
                        .with_context(|| format!("creating {}", path.display()))?,
                )
            }
            None => Stdio::inherit(),
        };
        let port = free_port()?;
        let metrics_port = if self.metrics {
            Some(free_port()?)
        } else {
            None
        };
        if !self.bare {
            command.arg("serve");
        }
        command
            .envs(self.envs.iter().map(|(n, v)| (n, v)))
            .env("TIMETRACK_BIND", format!("127.0.0.1:{port}"))
            .env(
                "TIMETRACK_METRICS_BIND",
                metrics_port.map_or_else(|| "off".to_owned(), |p| format!("127.0.0.1:{p}")),
            )
            .stdin(Stdio::null())
            .stdout(if self.capture_stdout {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stderr(stderr);
        for name in &self.removed {
            command.env_remove(name);
        }
        if let Some(dir) = &self.dir {
            command.current_dir(dir);
        }
        if self.own_group {
            command.process_group(0);
        }
        let child = command
            .spawn()
            .with_context(|| format!("starting {}", self.bin.display()))?;
        Ok(ServerProcess {
            child,
            base: format!("http://127.0.0.1:{port}"),
            metrics: metrics_port.map(|p| format!("http://127.0.0.1:{p}")),
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(64)
                .build()?,
            log: self.log.clone(),
        })
    }
}

/// A running `timetrack serve`; stopped when dropped (SIGTERM, then `kill -9` if it does not exit
/// within 20 s).
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The metrics listener's `http://127.0.0.1:<port>`, when started [`with_metrics`].
    ///
    /// [`with_metrics`]: ServeCommand::with_metrics
    pub metrics: Option<String>,
    /// A client with kept-alive connections to it.
    pub http: reqwest::Client,
    log: Option<Log>,
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

    /// Waits for the process to exit.
    pub fn wait(&mut self) -> Result<ExitStatus> {
        Ok(self.child.wait()?)
    }

    /// SIGTERM, then the exit status; `kill -9` and an error if it has not exited within 20 s.
    pub fn stop(&mut self) -> Result<ExitStatus> {
        if let Some(status) = self.exited() {
            return Ok(status);
        }
        let pid = Pid::from_raw(i32::try_from(self.pid())?);
        let _ = signal::kill(pid, Signal::SIGTERM);
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(status) = self.exited() {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.kill9();
        bail!("the server did not stop within {STOP_TIMEOUT:?} of SIGTERM")
    }

    /// Its stdout, when started with [`ServeCommand::capture_stdout`] (once).
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    /// The log so far, when it goes to a file.
    pub fn log(&self) -> Option<String> {
        match self.log.as_ref()? {
            Log::Kept(path) | Log::ShownOnFailure(path) => std::fs::read_to_string(path).ok(),
        }
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
        let _ = self.stop();
        if let Some(Log::ShownOnFailure(path)) = &self.log {
            if std::thread::panicking() {
                let log = std::fs::read_to_string(path).unwrap_or_default();
                // Captured by the test harness, and printed with the failure.
                #[allow(clippy::print_stderr)]
                {
                    eprintln!("--- log of the server at {} ---\n{log}", self.base);
                }
            } else {
                let _ = std::fs::remove_file(path);
            }
        }
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
