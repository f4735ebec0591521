//! A three-member Patroni cluster with one etcd on loopback, for the failover scenarios of the
//! full run: Debian's `patroni` and `etcd-server` (installed with apt when missing and the suite
//! runs as root), PostgreSQL's server binaries, every process as the unprivileged user the
//! private clusters use. Patroni's timings are the ones `docs/operations.md` gives: `ttl: 10`,
//! `loop_wait: 1`, `retry_timeout: 4`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The cluster's superuser password (loopback only, thrown away with the cluster).
const PASSWORD: &str = "chaos-patroni";

/// How a member's leader acknowledges commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Patroni's default: asynchronous; a failover may lose up to `maximum_lag_on_failover`.
    Asynchronous,
    /// `synchronous_mode: true` with `synchronous_mode_strict: true`: no acknowledged commit lost.
    SynchronousStrict,
}

struct Member {
    name: String,
    pg_port: u16,
    api_port: u16,
    config: PathBuf,
    data: PathBuf,
    patroni: Option<Child>,
}

/// The cluster; dropping it kills every process and removes its directory.
pub struct PatroniCluster {
    dir: PathBuf,
    etcd: Child,
    members: Vec<Member>,
    run_as: (u32, u32),
    http: reqwest::Client,
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Installs `patroni` and `etcd-server` with apt when they are missing and this runs as root.
pub fn ensure_installed() -> Result<()> {
    crate::env::ensure_debian_packages(
        &["patroni", "etcd", "patronictl"],
        &["patroni", "etcd-server"],
    )
}

impl PatroniCluster {
    /// Starts etcd and three Patroni members under a new directory in `parent`, and waits until
    /// a leader accepts writes and both replicas stream from it.
    pub async fn start(parent: &Path, mode: Mode) -> Result<Self> {
        ensure_installed()?;
        let bin_dir = timetrack_adapters::local_postgres::find_bin_dir()?;
        let user = nix::unistd::User::from_name("postgres")?
            .or(nix::unistd::User::from_name("nobody")?)
            .context("no unprivileged user to run PostgreSQL")?;
        let run_as = (user.uid.as_raw(), user.gid.as_raw());
        let dir = parent.join(format!("patroni-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir)?;
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
        nix::unistd::chown(&dir, Some(user.uid), Some(user.gid))?;
        let (client_port, peer_port) = (free_port()?, free_port()?);
        let etcd = spawn_as(
            Command::new("etcd")
                .args(["--name", "e1", "--data-dir"])
                .arg(dir.join("etcd"))
                .arg(format!(
                    "--listen-client-urls=http://127.0.0.1:{client_port}"
                ))
                .arg(format!(
                    "--advertise-client-urls=http://127.0.0.1:{client_port}"
                ))
                .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"))
                .arg(format!(
                    "--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}"
                ))
                .arg(format!("--initial-cluster=e1=http://127.0.0.1:{peer_port}"))
                .arg("--enable-v2=true"),
            &dir.join("etcd.log"),
            run_as,
        )?;
        let synchronous = mode == Mode::SynchronousStrict;
        let mut members = Vec::new();
        for n in 1..=3 {
            let (pg_port, api_port) = (free_port()?, free_port()?);
            let name = format!("pg{n}");
            let data = dir.join(format!("data{n}"));
            let config = dir.join(format!("{name}.yml"));
            std::fs::write(
                &config,
                format!(
                    "scope: timetrack-chaos
name: {name}
restapi:
  listen: 127.0.0.1:{api_port}
  connect_address: 127.0.0.1:{api_port}
etcd:
  host: 127.0.0.1:{client_port}
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: {synchronous}
    synchronous_mode_strict: {synchronous}
    postgresql:
      use_pg_rewind: true
      parameters:
        wal_log_hints: 'on'
        max_connections: 200
        wal_retrieve_retry_interval: 1s
  initdb:
  - encoding: UTF8
  - locale: C
  pg_hba:
  - host replication replicator 127.0.0.1/32 scram-sha-256
  - host all all 127.0.0.1/32 scram-sha-256
postgresql:
  listen: 127.0.0.1:{pg_port}
  connect_address: 127.0.0.1:{pg_port}
  data_dir: {data}
  bin_dir: {bin}
  pgpass: {pgpass}
  authentication:
    replication: {{username: replicator, password: {PASSWORD}}}
    superuser: {{username: postgres, password: {PASSWORD}}}
    rewind: {{username: rewinder, password: {PASSWORD}}}
  parameters:
    unix_socket_directories: '{dir}'
",
                    data = data.display(),
                    bin = bin_dir.display(),
                    pgpass = dir.join(format!("pgpass{n}")).display(),
                    dir = dir.display(),
                ),
            )?;
            nix::unistd::chown(&config, Some(user.uid), Some(user.gid))?;
            members.push(Member {
                name,
                pg_port,
                api_port,
                config,
                data,
                patroni: None,
            });
        }
        let mut cluster = Self {
            dir,
            etcd,
            members,
            run_as,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(2))
                .build()?,
        };
        tokio::time::sleep(Duration::from_secs(1)).await;
        for i in 0..3 {
            cluster.start_member(i)?;
        }
        let leader = cluster
            .wait_for_leader(None, Duration::from_secs(90))
            .await
            .context("no Patroni leader within 90 s")?;
        cluster
            .wait_for_replicas(2, Duration::from_secs(90))
            .await
            .with_context(|| format!("the replicas of {leader} did not stream within 90 s"))?;
        Ok(cluster)
    }

    /// Starts (again) member `i`'s Patroni.
    pub fn start_member(&mut self, i: usize) -> Result<()> {
        let log = self.dir.join(format!("{}.log", self.members[i].name));
        let child = spawn_as(
            Command::new("patroni").arg(&self.members[i].config),
            &log,
            self.run_as,
        )?;
        self.members[i].patroni = Some(child);
        Ok(())
    }

    /// The URL of `database` naming every member (the service finds the primary).
    pub fn url(&self, database: &str) -> String {
        let hosts: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("127.0.0.1:{}", m.pg_port))
            .collect();
        format!(
            "postgres://postgres:{PASSWORD}@{}/{database}",
            hosts.join(",")
        )
    }

    /// Whether `member`'s Patroni REST API answers 200 to `GET path` (one of its health checks).
    async fn answers_ok(&self, member: &Member, path: &str) -> bool {
        let url = format!("http://127.0.0.1:{}{path}", member.api_port);
        self.http
            .get(&url)
            .send()
            .await
            .is_ok_and(|r| r.status().as_u16() == 200)
    }

    /// The index of the member whose REST API says it is the running primary, if any.
    pub async fn leader(&self) -> Option<usize> {
        for (i, m) in self.members.iter().enumerate() {
            if self.answers_ok(m, "/primary").await {
                return Some(i);
            }
        }
        None
    }

    /// Waits for a running primary other than `not`; its index.
    pub async fn wait_for_leader(&self, not: Option<usize>, within: Duration) -> Result<usize> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(i) = self.leader().await
                && Some(i) != not
            {
                return Ok(i);
            }
            if Instant::now() > deadline {
                bail!("no new leader within {within:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until `count` replicas answer Patroni's `/replica` health check (running, streaming).
    pub async fn wait_for_replicas(&self, count: usize, within: Duration) -> Result<()> {
        let deadline = Instant::now() + within;
        loop {
            let mut streaming = 0;
            for m in &self.members {
                if self.answers_ok(m, "/replica?lag=1MB").await {
                    streaming += 1;
                }
            }
            if streaming >= count {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("{streaming} of {count} replicas streaming after {within:?}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Kills member `i` as a crash of its host would: its Patroni and its postmaster, both with
    /// `SIGKILL` (a postmaster killed alone is restarted in place by its Patroni).
    pub fn kill_member(&mut self, i: usize) -> Result<()> {
        let member = &mut self.members[i];
        if let Some(mut child) = member.patroni.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let pid = postmaster_pid(&member.data)
            .with_context(|| format!("no postmaster.pid in {}", member.data.display()))?;
        let _ = kill(pid, Signal::SIGKILL);
        Ok(())
    }

    /// A planned switchover from member `from` to `to` with `patronictl`; returns once it has
    /// answered.
    pub fn switchover(&self, from: usize, to: usize) -> Result<()> {
        let out = Command::new("patronictl")
            .arg("-c")
            .arg(&self.members[from].config)
            .args(["switchover", "--leader", &self.members[from].name])
            .args(["--candidate", &self.members[to].name, "--force"])
            .output()
            .context("running patronictl switchover")?;
        if !out.status.success() {
            bail!(
                "patronictl switchover: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }

    /// Member `i`'s name.
    pub fn name(&self, i: usize) -> &str {
        &self.members[i].name
    }
}

impl Drop for PatroniCluster {
    fn drop(&mut self) {
        for m in &mut self.members {
            if let Some(mut child) = m.patroni.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
            if let Some(pid) = postmaster_pid(&m.data) {
                let _ = kill(pid, Signal::SIGKILL);
            }
        }
        let _ = self.etcd.kill();
        let _ = self.etcd.wait();
        std::thread::sleep(Duration::from_millis(500));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The pid of the postmaster running on `data`, from its `postmaster.pid`.
fn postmaster_pid(data: &Path) -> Option<Pid> {
    std::fs::read_to_string(data.join("postmaster.pid"))
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
        .map(Pid::from_raw)
}

/// Spawns `cmd` as the user `run_as` (uid, gid) when running as root, its output to `log`.
fn spawn_as(cmd: &mut Command, log: &Path, run_as: (u32, u32)) -> Result<Child> {
    use std::os::unix::process::CommandExt as _;
    let file = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    if nix::unistd::geteuid().is_root() {
        cmd.uid(run_as.0).gid(run_as.1);
        cmd.env("HOME", log.parent().unwrap_or(Path::new("/tmp")));
    }
    cmd.stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .spawn()
        .context("spawning")
}
