//! A private PostgreSQL cluster, started from the installed server binaries, for `timetrack serve`
//! without `DATABASE_URL` and for the test suites.
//!
//! The cluster lives in one directory (`pgdata/`, `postgres.log`, `cluster.json` with its port and
//! password). It listens on 127.0.0.1 only, on a free port, with password authentication and no
//! Unix socket. The server process is a child of the calling process: it is stopped when the
//! handle is dropped, and on Linux also when the calling process dies however it dies (parent-death
//! signal), so no cluster outlives its owner. It runs in a process group of its own, so a Ctrl-C
//! in the owner's terminal reaches the owner only, which stops the server once it has finished.
//! PostgreSQL refuses to run as root; when the caller is root, the cluster's processes run as an
//! unprivileged user (`TIMETRACK_PG_USER`, else `postgres`, else `nobody`).
//!
//! A second process that finds the cluster already running (for example `timetrack admin` beside
//! `timetrack serve`) attaches to it instead and leaves it running.

use std::fs;
use std::io::Write;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, PoisonError, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::{Pid, User};
use serde::{Deserialize, Serialize};

/// The cluster's superuser, which the service connects as.
const SUPERUSER: &str = "timetrack";
/// How long the server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a fast shutdown may take before the server is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// How the cluster is tuned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Normal crash-safe settings, for data that matters (`timetrack serve`).
    Durable,
    /// `fsync`, synchronous commit and full-page writes off: fast, and lost on a machine crash.
    /// For throw-away test clusters only.
    Ephemeral,
}

#[derive(Debug, Serialize, Deserialize)]
struct ClusterFile {
    port: u16,
    password: String,
}

/// A running private cluster; dropping the handle stops the server if this handle started it.
#[derive(Debug)]
pub struct LocalPostgres {
    root: PathBuf,
    port: u16,
    password: String,
    server: Option<Server>,
}

#[derive(Debug)]
struct Server {
    pid: Pid,
    /// Receives once the server process has exited. In a mutex so the handle is `Sync`.
    exited: Mutex<mpsc::Receiver<()>>,
}

impl Server {
    fn wait_exit(&self, timeout: Duration) -> bool {
        let exited = self.exited.lock().unwrap_or_else(PoisonError::into_inner);
        exited.recv_timeout(timeout).is_ok()
    }
}

impl LocalPostgres {
    /// Starts the cluster under `root`, creating it on first use, or attaches to the server that
    /// already runs there. Blocks until the server accepts connections.
    pub fn start(root: &Path, durability: Durability) -> Result<Self> {
        let (bin, run_as, root) = prepare(root)?;
        let data = root.join("pgdata");
        let cluster_file = root.join("cluster.json");

        if let Some(user) = &run_as {
            check_reachable(&root, user)?;
        }
        if !data.join("PG_VERSION").exists() {
            init_cluster(&bin, &root, &data, &cluster_file, run_as.as_ref())?;
        }
        let mut cluster: ClusterFile = serde_json::from_slice(
            &fs::read(&cluster_file)
                .with_context(|| format!("reading {}", cluster_file.display()))?,
        )
        .with_context(|| format!("parsing {}", cluster_file.display()))?;

        if let Some(pid) = running_postmaster(&data) {
            tracing::info!(
                pid,
                port = cluster.port,
                "attaching to the running private PostgreSQL"
            );
            let attached = Self {
                root,
                port: cluster.port,
                password: cluster.password,
                server: None,
            };
            wait_until_ready(&bin, attached.port, &attached.root, None)?;
            return Ok(attached);
        }

        if !port_is_free(cluster.port) {
            cluster.port = free_port()?;
            write_private(&cluster_file, &serde_json::to_vec_pretty(&cluster)?)?;
        }
        let server = spawn_server(
            &bin,
            &root,
            &data,
            cluster.port,
            durability,
            run_as.as_ref(),
        )?;
        let mut started = Self {
            root,
            port: cluster.port,
            password: cluster.password,
            server: Some(server),
        };
        if let Err(err) =
            wait_until_ready(&bin, started.port, &started.root, started.server.as_mut())
        {
            started.stop();
            return Err(err);
        }
        tracing::info!(port = started.port, dir = %started.root.display(), "private PostgreSQL started");
        Ok(started)
    }

    /// Starts a streaming standby of `primary` under `root`, made on first use by `pg_basebackup
    /// -R` from it (so it follows the primary with `primary_conninfo` and `standby.signal`), on a
    /// port of its own and with the primary's password; or attaches to it as [`start`] does.
    /// For replication and failover tests, and for trying read replicas on one machine.
    ///
    /// [`start`]: Self::start
    pub fn start_standby(primary: &Self, root: &Path, durability: Durability) -> Result<Self> {
        let (bin, run_as, root) = prepare(root)?;
        let data = root.join("pgdata");
        if !data.join("PG_VERSION").exists() {
            if data.exists() {
                fs::remove_dir_all(&data)
                    .with_context(|| format!("removing {}", data.display()))?;
            }
            fs::create_dir_all(&data)?;
            fs::set_permissions(&data, fs::Permissions::from_mode(0o700))?;
            if let Some(user) = &run_as {
                check_reachable(&root, user)?;
                nix::unistd::chown(&data, Some(user.uid), Some(user.gid))?;
            }
            let mut cmd = Command::new(bin.join("pg_basebackup"));
            cmd.args(["--host", "127.0.0.1", "--port", &primary.port.to_string()])
                .args(["--username", SUPERUSER, "--no-password"])
                .arg("--pgdata")
                .arg(&data)
                .args(["--write-recovery-conf", "--wal-method=stream"])
                .args(["--checkpoint=fast"])
                .env("PGPASSWORD", &primary.password)
                .current_dir(&root)
                .stdin(Stdio::null());
            as_user(&mut cmd, run_as.as_ref());
            let out = cmd.output().context("running pg_basebackup")?;
            if !out.status.success() {
                bail!(
                    "pg_basebackup failed ({}): {}{}",
                    out.status,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            let cluster = ClusterFile {
                port: free_port()?,
                password: primary.password.clone(),
            };
            write_private(
                &root.join("cluster.json"),
                &serde_json::to_vec_pretty(&cluster)?,
            )?;
        }
        Self::start(&root, durability)
    }

    /// Kills the server with `SIGKILL` if this handle started it, as a crash of its host would
    /// end it (its backends notice the postmaster's death and exit), and waits for it to exit.
    pub fn kill(&mut self) {
        if let Some(server) = self.server.take() {
            let _ = kill(server.pid, Signal::SIGKILL);
            server.wait_exit(Duration::from_secs(10));
        }
    }

    /// The connection URL of `database` on this cluster.
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://{SUPERUSER}:{}@127.0.0.1:{}/{database}",
            self.password, self.port
        )
    }

    /// Creates `database` unless it exists, and returns its connection URL.
    pub async fn ensure_database(&self, database: &str) -> Result<String> {
        let (client, connection) =
            tokio_postgres::connect(&self.url("postgres"), tokio_postgres::NoTls)
                .await
                .context("connecting to the private PostgreSQL")?;
        let driver = tokio::spawn(connection);
        let exists = client
            .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&database])
            .await?
            .is_some();
        if !exists {
            let quoted = database.replace('"', "\"\"");
            client
                .batch_execute(&format!("CREATE DATABASE \"{quoted}\""))
                .await?;
        }
        drop(client);
        let _ = driver.await;
        Ok(self.url(database))
    }

    /// The port the server listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory holding the cluster.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether this handle started the server (and so stops it when dropped).
    pub fn owns_server(&self) -> bool {
        self.server.is_some()
    }

    /// Stops the server if this handle started it: a fast shutdown, then a kill after 30 s.
    pub fn stop(&mut self) {
        let Some(server) = self.server.take() else {
            return;
        };
        // SIGINT is PostgreSQL's fast shutdown: roll back open transactions, checkpoint, exit.
        let _ = kill(server.pid, Signal::SIGINT);
        if !server.wait_exit(STOP_TIMEOUT) {
            tracing::warn!(pid = %server.pid, "PostgreSQL did not stop in time; killing it");
            let _ = kill(server.pid, Signal::SIGKILL);
            server.wait_exit(Duration::from_secs(5));
        }
    }
}

impl Drop for LocalPostgres {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The server binaries, the user to run them as, and `root` made and resolved.
fn prepare(root: &Path) -> Result<(PathBuf, Option<User>, PathBuf)> {
    let bin = find_bin_dir()?;
    let run_as = unprivileged_user()?;
    fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    let root = root
        .canonicalize()
        .with_context(|| format!("resolving {}", root.display()))?;
    Ok((bin, run_as, root))
}

/// Finds the directory holding `initdb`, `postgres` and `pg_isready`.
///
/// Looks at `TIMETRACK_PG_BIN_DIR`, then `pg_config --bindir`, then `PATH`, then the usual
/// install locations of Debian/Ubuntu, Red Hat and Homebrew (newest version first).
pub fn find_bin_dir() -> Result<PathBuf> {
    find_bin_dir_in(
        std::env::var_os("TIMETRACK_PG_BIN_DIR").map(PathBuf::from),
        default_candidates(),
    )
}

/// The first of `candidates` holding every server binary; `explicit` alone when it is given.
fn find_bin_dir_in(explicit: Option<PathBuf>, candidates: Vec<PathBuf>) -> Result<PathBuf> {
    let has_all = |dir: &Path| {
        ["initdb", "postgres", "pg_isready"]
            .iter()
            .all(|b| dir.join(b).is_file())
    };
    if let Some(dir) = explicit {
        if has_all(&dir) {
            return Ok(dir);
        }
        bail!(
            "TIMETRACK_PG_BIN_DIR={} does not contain initdb, postgres and pg_isready",
            dir.display()
        );
    }
    candidates
        .into_iter()
        .find(|dir| has_all(dir))
        .ok_or_else(|| {
            anyhow!(
                "PostgreSQL server binaries (initdb, postgres, pg_isready) were not found. Install \
             the PostgreSQL server (Debian/Ubuntu: `apt install postgresql`; macOS: `brew \
             install postgresql@16`), or point TIMETRACK_PG_BIN_DIR at its bin directory, or \
             set DATABASE_URL to use a server you run yourself"
            )
        })
}

/// Where server binaries usually are: `pg_config --bindir`, `PATH`, then the install locations of
/// Debian/Ubuntu, Red Hat and Homebrew, newest version first.
fn default_candidates() -> Vec<PathBuf> {
    let mut candidates = Vec::new();
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        candidates.push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path));
    }
    for parent in [
        "/usr/lib/postgresql",
        "/usr/local/opt",
        "/opt/homebrew/opt",
        "/usr",
    ] {
        let Ok(entries) = fs::read_dir(parent) else {
            continue;
        };
        let mut versions: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                parent == "/usr/lib/postgresql"
                    || name.starts_with("postgresql")
                    || name.starts_with("pgsql")
            })
            .map(|p| p.join("bin"))
            .collect();
        versions.sort_by_key(|p| std::cmp::Reverse(version_of(p)));
        candidates.extend(versions);
    }
    candidates.push(PathBuf::from("/usr/local/pgsql/bin"));
    candidates
}

/// The numeric version in a path such as `/usr/lib/postgresql/15/bin`, for ordering.
fn version_of(bin: &Path) -> u32 {
    bin.parent()
        .and_then(|p| p.file_name())
        .map(|n| {
            n.to_string_lossy()
                .chars()
                .filter(char::is_ascii_digit)
                .collect::<String>()
        })
        .and_then(|digits| digits.parse().ok())
        .unwrap_or(0)
}

/// The user the server runs as when the caller is root, `None` otherwise. Public for the test
/// kit's other servers that refuse root too (PgBouncer).
pub fn unprivileged_user() -> Result<Option<User>> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    let names: Vec<String> = match std::env::var("TIMETRACK_PG_USER") {
        Ok(name) => vec![name],
        Err(_) => vec!["postgres".into(), "nobody".into()],
    };
    for name in &names {
        if let Some(user) = User::from_name(name).context("looking up a user")?
            && !user.uid.is_root()
        {
            return Ok(Some(user));
        }
    }
    bail!(
        "running as root, and PostgreSQL refuses to run as root: none of the users {names:?} \
         exists to run it; create one, or set TIMETRACK_PG_USER to an unprivileged user"
    )
}

/// Fails with a clear message when `user` cannot traverse every directory down to `dir`.
fn check_reachable(dir: &Path, user: &User) -> Result<()> {
    for ancestor in dir.ancestors() {
        let meta =
            fs::metadata(ancestor).with_context(|| format!("inspecting {}", ancestor.display()))?;
        let mode = meta.mode();
        let can_enter = if meta.uid() == user.uid.as_raw() {
            mode & 0o100 != 0
        } else if meta.gid() == user.gid.as_raw() {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !can_enter {
            bail!(
                "PostgreSQL runs as user `{}` (it refuses to run as root) and cannot enter {}; \
                 make it traversable (`chmod o+x {}`), choose another data directory \
                 (TIMETRACK_DATA_DIR), or set DATABASE_URL",
                user.name,
                ancestor.display(),
                ancestor.display()
            );
        }
    }
    Ok(())
}

fn init_cluster(
    bin: &Path,
    root: &Path,
    data: &Path,
    cluster_file: &Path,
    run_as: Option<&User>,
) -> Result<()> {
    let password = random_token(32);
    let port = free_port()?;
    if data.exists() {
        // A previous initdb was interrupted: start over.
        fs::remove_dir_all(data).with_context(|| format!("removing {}", data.display()))?;
    }
    fs::create_dir_all(data)?;
    fs::set_permissions(data, fs::Permissions::from_mode(0o700))?;
    let pwfile = root.join(".initdb-password");
    write_private(&pwfile, password.as_bytes())?;
    if let Some(user) = run_as {
        nix::unistd::chown(data, Some(user.uid), Some(user.gid))?;
        nix::unistd::chown(&pwfile, Some(user.uid), Some(user.gid))?;
    }
    let mut cmd = Command::new(bin.join("initdb"));
    cmd.arg("--pgdata")
        .arg(data)
        .args(["--username", SUPERUSER, "--auth", "scram-sha-256"])
        .args(["--encoding", "UTF8", "--locale", "C", "--no-instructions"])
        .arg(format!("--pwfile={}", pwfile.display()))
        .current_dir(root)
        .stdin(Stdio::null());
    as_user(&mut cmd, run_as);
    let out = cmd.output().context("running initdb");
    let _ = fs::remove_file(&pwfile);
    let out = out?;
    if !out.status.success() {
        bail!(
            "initdb failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    write_private(
        cluster_file,
        &serde_json::to_vec_pretty(&ClusterFile { port, password })?,
    )?;
    Ok(())
}

fn spawn_server(
    bin: &Path,
    root: &Path,
    data: &Path,
    port: u16,
    durability: Durability,
    run_as: Option<&User>,
) -> Result<Server> {
    let log_path = root.join("postgres.log");
    let log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    let mut cmd = Command::new(bin.join("postgres"));
    cmd.arg("-D")
        .arg(data)
        .args(["-p", &port.to_string()])
        .args([
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "unix_socket_directories=",
        ])
        // 1 GB of shared buffers (PostgreSQL's own default is 128 MB): enough to keep a
        // workspace of a million entries, its table and the indexes a report or a re-pricing
        // reads, in PostgreSQL's memory, as a server sized for such a team would. Taken only as
        // pages are used. With 128 MB, a rate reaching a tenth of such a workspace spent half
        // its time reading pages back from the operating system (ADR 0025).
        .args(["-c", "max_connections=200", "-c", "shared_buffers=1GB"]);
    if durability == Durability::Ephemeral {
        cmd.args([
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
        ]);
    }
    cmd.current_dir(root)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    as_user(&mut cmd, run_as);
    stop_with_parent(&mut cmd);
    // A process group of its own: Ctrl-C in a terminal signals the whole foreground group, and
    // the server must stop after timetrack has finished its requests, not with it.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);

    // The server is spawned from a thread that lives exactly as long as the server: the Linux
    // parent-death signal fires when the spawning *thread* exits, and this thread only exits once
    // the server has.
    let (spawned_tx, spawned_rx) = mpsc::channel::<std::io::Result<u32>>();
    let (exited_tx, exited_rx) = mpsc::channel();
    thread::Builder::new()
        .name("local-postgres".into())
        .spawn(move || {
            let child: Child = match cmd.spawn() {
                Ok(child) => child,
                Err(err) => {
                    let _ = spawned_tx.send(Err(err));
                    return;
                }
            };
            let _ = spawned_tx.send(Ok(child.id()));
            let mut child = child;
            let _ = child.wait();
            let _ = exited_tx.send(());
        })
        .context("starting the PostgreSQL keeper thread")?;
    let pid = spawned_rx
        .recv()
        .context("the PostgreSQL keeper thread died")?
        .context("starting postgres")?;
    Ok(Server {
        pid: Pid::from_raw(i32::try_from(pid)?),
        exited: Mutex::new(exited_rx),
    })
}

fn wait_until_ready(
    bin: &Path,
    port: u16,
    root: &Path,
    mut server: Option<&mut Server>,
) -> Result<()> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let ready = Command::new(bin.join("pg_isready"))
            .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string(), "-t", "2"])
            .status()
            .context("running pg_isready")?
            .success();
        if ready {
            return Ok(());
        }
        let exited = server.as_mut().is_some_and(|s| s.wait_exit(Duration::ZERO));
        if exited || Instant::now() > deadline {
            let log = fs::read_to_string(root.join("postgres.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(15).collect();
            bail!(
                "the private PostgreSQL {} (log {}):\n{}",
                if exited {
                    "exited during start-up"
                } else {
                    "did not start within 60 s"
                },
                root.join("postgres.log").display(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
        thread::sleep(Duration::from_millis(100));
    }
}

/// Whether a process with this pid exists (signal 0 checks without sending anything).
pub(crate) fn process_alive(pid: i32) -> bool {
    kill(Pid::from_raw(pid), None).is_ok()
}

/// The pid of a live postmaster serving `data`, if any.
fn running_postmaster(data: &Path) -> Option<i32> {
    let pid_file = fs::read_to_string(data.join("postmaster.pid")).ok()?;
    let pid: i32 = pid_file.lines().next()?.trim().parse().ok()?;
    // Signal 0 checks that the process exists; the `postgres` name guards against a reused pid.
    process_alive(pid).then_some(())?;
    let comm =
        fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_else(|_| "postgres".into());
    (comm.trim() == "postgres").then_some(pid)
}

fn port_is_free(port: u16) -> bool {
    port != 0 && TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .context("finding a free port")?
        .local_addr()?
        .port())
}

fn write_private(path: &Path, content: &[u8]) -> Result<()> {
    let mut file = fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(content)?;
    Ok(())
}

/// A random alphanumeric token of `len` characters from the OS generator.
fn random_token(len: usize) -> String {
    use rand::distr::Alphanumeric;
    use rand::{Rng, TryRngCore};
    rand::rngs::OsRng
        .unwrap_err()
        .sample_iter(Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}

fn as_user(cmd: &mut Command, user: Option<&User>) {
    use std::os::unix::process::CommandExt;
    if let Some(user) = user {
        cmd.uid(user.uid.as_raw()).gid(user.gid.as_raw());
        cmd.env("HOME", &user.dir).env("USER", &user.name);
    }
}

/// Makes the child receive SIGINT (fast shutdown) when the spawning thread's process dies.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn stop_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = nix::unistd::getpid();
    // SAFETY: the closure runs in the child between fork and exec and calls only the
    // async-signal-safe prctl(2) and getppid(2). It runs after the uid/gid change, which matters:
    // changing credentials clears the parent-death signal.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGINT)?;
            if nix::unistd::getppid() != parent {
                // The parent died before the signal was armed.
                return Err(std::io::Error::other("parent exited"));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn stop_with_parent(_cmd: &mut Command) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_read_from_the_install_path() {
        assert_eq!(version_of(Path::new("/usr/lib/postgresql/15/bin")), 15);
        assert_eq!(
            version_of(Path::new("/opt/homebrew/opt/postgresql@16/bin")),
            16
        );
        assert_eq!(version_of(Path::new("/usr/bin")), 0);
    }

    #[test]
    fn missing_binaries_are_reported_with_what_to_install() {
        let empty = std::env::temp_dir().join(format!("tt-no-pg-{}", std::process::id()));
        fs::create_dir_all(&empty).unwrap();
        let err = find_bin_dir_in(None, vec![empty.clone()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("were not found"), "{err}");
        assert!(err.contains("apt install postgresql"), "{err}");
        assert!(err.contains("DATABASE_URL"), "{err}");

        let err = find_bin_dir_in(Some(empty.clone()), vec![])
            .unwrap_err()
            .to_string();
        assert!(err.contains("TIMETRACK_PG_BIN_DIR"), "{err}");

        for bin in ["initdb", "postgres", "pg_isready"] {
            fs::write(empty.join(bin), "").unwrap();
        }
        assert_eq!(
            find_bin_dir_in(None, vec![PathBuf::from("/nonexistent"), empty.clone()]).unwrap(),
            empty
        );
        fs::remove_dir_all(&empty).unwrap();
    }

    #[test]
    fn random_tokens_are_alphanumeric_and_distinct() {
        let a = random_token(32);
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a, random_token(32));
    }
}
