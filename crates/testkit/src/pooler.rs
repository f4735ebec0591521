//! PgBouncer in transaction mode in front of a test database, as operators run it in front of
//! PostgreSQL: Debian's `pgbouncer`, installed on first use when missing.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tokio_postgres::config::Host;

/// A running PgBouncer, stopped and its directory removed when dropped.
#[derive(Debug)]
pub struct Pgbouncer {
    child: Child,
    dir: PathBuf,
    port: u16,
    user: String,
    password: Option<String>,
    database: String,
}

impl Pgbouncer {
    /// Starts PgBouncer on a free loopback port with `pool_mode = transaction`, forwarding the
    /// database of `upstream` (same name, same user and password) with at most `pool_size`
    /// server connections, whatever the number of clients.
    pub fn start_transaction_mode(upstream: &str, pool_size: u32) -> Result<Self> {
        let bin = crate::pgbouncer();
        let config: tokio_postgres::Config =
            upstream.parse().context("parsing the upstream URL")?;
        let user = config
            .get_user()
            .context("the upstream URL names no user")?
            .to_owned();
        let password = config
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned());
        let database = config.get_dbname().unwrap_or(&user).to_owned();
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(name)) => name.clone(),
            Some(Host::Unix(dir)) => dir.display().to_string(),
            None => "127.0.0.1".to_owned(),
        };
        let upstream_port = config.get_ports().first().copied().unwrap_or(5432);
        let port = crate::free_port()?;
        let dir = std::env::temp_dir().join(format!("timetrack-pgbouncer-{port}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let server_password = password
            .as_deref()
            .map(|p| format!(" password={p}"))
            .unwrap_or_default();
        let (auth_type, auth_line) = match &password {
            Some(p) => ("scram-sha-256", format!("\"{user}\" \"{p}\"\n")),
            None => ("trust", format!("\"{user}\" \"\"\n")),
        };
        std::fs::write(dir.join("users.txt"), auth_line)?;
        std::fs::write(
            dir.join("pgbouncer.ini"),
            format!(
                "[databases]\n\
                 {database} = host={host} port={upstream_port} dbname={database} \
                 user={user}{server_password}\n\
                 [pgbouncer]\n\
                 listen_addr = 127.0.0.1\n\
                 listen_port = {port}\n\
                 unix_socket_dir =\n\
                 auth_type = {auth_type}\n\
                 auth_file = {users}\n\
                 admin_users = {user}\n\
                 pool_mode = transaction\n\
                 default_pool_size = {pool_size}\n\
                 max_client_conn = 1000\n\
                 logfile = {log}\n",
                users = dir.join("users.txt").display(),
                log = dir.join("pgbouncer.log").display(),
            ),
        )?;
        // PgBouncer refuses to run as root, like PostgreSQL: it runs as the private cluster's user.
        let run_as = timetrack_adapters::local_postgres::unprivileged_user()?;
        let mut cmd = Command::new(bin);
        cmd.arg(dir.join("pgbouncer.ini"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(user) = &run_as {
            use std::os::unix::process::CommandExt as _;
            nix::unistd::chown(&dir, Some(user.uid), Some(user.gid))?;
            for file in ["users.txt", "pgbouncer.ini"] {
                nix::unistd::chown(&dir.join(file), Some(user.uid), Some(user.gid))?;
            }
            cmd.uid(user.uid.as_raw()).gid(user.gid.as_raw());
        }
        let child = cmd.spawn().context("starting pgbouncer")?;
        let mut bouncer = Self {
            child,
            dir,
            port,
            user,
            password,
            database,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = bouncer.child.try_wait()? {
                bail!("pgbouncer exited ({status}): {}", bouncer.log());
            }
            if Instant::now() > deadline {
                bail!("pgbouncer did not listen within 10 s: {}", bouncer.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(bouncer)
    }

    /// The URL of the forwarded database, through PgBouncer.
    pub fn url(&self) -> String {
        self.url_of(&self.database)
    }

    fn url_of(&self, database: &str) -> String {
        let password = self
            .password
            .as_deref()
            .map(|p| format!(":{p}"))
            .unwrap_or_default();
        format!(
            "postgres://{}{password}@127.0.0.1:{}/{database}",
            self.user, self.port
        )
    }

    /// PgBouncer's process id (one process: it is single-threaded).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What PgBouncer's log holds so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("pgbouncer.log")).unwrap_or_default()
    }

    /// The rows of an admin console command (`SHOW POOLS`, `SHOW SERVERS`, ...), each a map of
    /// column name to text.
    pub async fn show(&self, command: &str) -> Result<Vec<HashMap<String, String>>> {
        let (client, conn) =
            tokio_postgres::connect(&self.url_of("pgbouncer"), tokio_postgres::NoTls).await?;
        tokio::spawn(conn);
        let mut rows = Vec::new();
        for message in client.simple_query(command).await? {
            if let tokio_postgres::SimpleQueryMessage::Row(row) = message {
                let mut map = HashMap::new();
                for (i, column) in row.columns().iter().enumerate() {
                    map.insert(
                        column.name().to_owned(),
                        row.get(i).unwrap_or_default().to_owned(),
                    );
                }
                rows.push(map);
            }
        }
        Ok(rows)
    }
}

impl Drop for Pgbouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
