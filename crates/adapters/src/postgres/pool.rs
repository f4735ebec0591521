//! The connection pool every PostgreSQL adapter shares, and the checks of a database URL.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use diesel_async::AsyncPgConnection;
use diesel_async::pg::StatementMode;
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
};

/// The pool every PostgreSQL adapter shares.
pub type PgPool = diesel_async::pooled_connection::deadpool::Pool<AsyncPgConnection>;

/// Implements `Debug` for an adapter that holds a pool, showing its name only.
macro_rules! opaque_debug {
    ($($name:ident),+) => {$(
        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name)).finish_non_exhaustive()
            }
        }
    )+};
}
pub(crate) use opaque_debug;

/// Sizing and time bounds of the pool.
#[derive(Debug, Clone, Copy)]
pub struct PoolSettings {
    /// Most connections open at once.
    pub max_size: usize,
    /// Longest wait for a free connection before giving up with `Unavailable`.
    pub wait_timeout: Duration,
    /// Longest time to open a new connection.
    pub connect_timeout: Duration,
    /// What stands between the pool and PostgreSQL.
    pub pooler: Pooler,
}

/// What stands between a pool's connections and PostgreSQL (`--database-pooler`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pooler {
    /// Nothing, or a pooler in session mode: a connection is one server session for its
    /// life, and keeps the statements it prepared (`Prepared` texts are planned once per
    /// connection).
    #[default]
    None,
    /// A pooler in transaction mode (PgBouncer's `pool_mode = transaction`): between
    /// transactions, each round trip may reach another server session, so nothing may outlive a
    /// transaction. Every statement is sent as the unnamed statement, parsed, bound and run in one
    /// round trip (a named one prepared on one session would be missing, or taken by another
    /// process's, on the next), and nothing else the service does through a pool keeps session
    /// state: its locks and settings are the transaction's own, and the two things that need a
    /// session (`LISTEN`, the migrations' lock) use the direct URL instead.
    Transaction,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self {
            max_size: 16,
            wait_timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(2),
            pooler: Pooler::None,
        }
    }
}

/// Seconds one connection attempt to one host may take (libpq's `connect_timeout`), unless the
/// URL says otherwise: a host that does not answer (a dead primary's address) costs this much
/// before the next host of a multi-host URL is tried.
pub const HOST_CONNECT_TIMEOUT_SECS: u64 = 2;

/// `url` as every connection that may write opens it: with `target_session_attrs=read-write`
/// unless the URL sets it, so that of the hosts a multi-host URL names the one that accepts
/// writes is taken, and a standby or a demoted primary is passed over. Both URL
/// (`postgres://…`) and key-value (`host=… user=…`) forms are kept in their form.
pub fn for_writes(url: &str) -> String {
    with_defaults(url, &[("target_session_attrs", "read-write")])
}

/// [`for_writes`], with a per-host `connect_timeout` unless the URL sets one: for connections
/// opened on the service's runtime (the time-out needs its timers; the migrations' blocking
/// connection has none, and is bounded by the start-up check before it).
pub fn for_writes_bounded(url: &str) -> String {
    with_defaults(
        &for_writes(url),
        &[("connect_timeout", &HOST_CONNECT_TIMEOUT_SECS.to_string())],
    )
}

/// `url` with each `(key, value)` parameter added that it does not set already.
fn with_defaults(url: &str, defaults: &[(&str, &str)]) -> String {
    let is_uri = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let mut out = url.to_owned();
    for (key, value) in defaults {
        if is_uri {
            let query = url.split_once('?').map_or("", |(_, q)| q);
            if query
                .split('&')
                .any(|pair| pair.split('=').next() == Some(key))
            {
                continue;
            }
            out.push(if out.contains('?') { '&' } else { '?' });
            out.push_str(&format!("{key}={value}"));
        } else {
            let set = url
                .split_whitespace()
                .any(|pair| pair.split('=').next().map(str::trim) == Some(key));
            if !set {
                out.push_str(&format!(" {key}={value}"));
            }
        }
    }
    out
}

/// How many hosts `url` names (1 when it does not parse or names none: the default socket).
fn host_count(url: &str) -> u32 {
    use std::str::FromStr as _;
    tokio_postgres::Config::from_str(url)
        .map_or(1, |config| {
            u32::try_from(config.get_hosts().len()).unwrap_or(1)
        })
        .max(1)
}

/// Builds the pool; no connection is opened until one is needed.
///
/// Connections are opened by [`for_writes`]: on the host that accepts writes. One found
/// read-only later (a primary demoted under it) is dropped instead of being handed out again:
/// see [`read_only_seen`].
///
/// Every wait is bounded, so a dead or unreachable database yields an error within seconds, never a
/// hang: opening a connection may take the connect time-out once per host the URL names.
pub fn build_pool(url: &str, settings: PoolSettings) -> Result<PgPool> {
    // A broken connection surfaces on its first use and is dropped; no ping on every checkout,
    // except for a while after a connection was found read-only (see `read_only_seen`).
    let recycle = RecyclingMethod::CustomFunction(Box::new(|conn| {
        Box::pin(async move {
            if !read_only_suspected() {
                return Ok(());
            }
            check_writable(conn).await
        })
    }));
    pool_on(for_writes_bounded(url), settings, recycle)
}

/// Builds a pool of a replica's connections (`--database-replica-url`), for the reads that
/// tolerate lag: opened on whichever host of `url` answers first (its read-only connections are
/// what it is for, so none is dropped for being read-only), with the same bounds as
/// [`build_pool`]'s.
pub fn build_replica_pool(url: &str, settings: PoolSettings) -> Result<PgPool> {
    let url = with_defaults(
        url,
        &[("connect_timeout", &HOST_CONNECT_TIMEOUT_SECS.to_string())],
    );
    pool_on(url, settings, RecyclingMethod::Fast)
}

fn pool_on(
    url: String,
    settings: PoolSettings,
    recycle: RecyclingMethod<AsyncPgConnection>,
) -> Result<PgPool> {
    let mut config = ManagerConfig::default();
    config.recycling_method = recycle;
    if settings.pooler == Pooler::Transaction {
        config.custom_setup = Box::new(|url| {
            Box::pin(AsyncPgConnection::establish_with_statement_mode(
                url,
                StatementMode::Unnamed,
            ))
        });
    }
    let create_timeout = settings.connect_timeout * host_count(&url);
    let manager = AsyncDieselConnectionManager::<AsyncPgConnection>::new_with_config(url, config);
    PgPool::builder(manager)
        .max_size(settings.max_size)
        .wait_timeout(Some(settings.wait_timeout))
        .create_timeout(Some(create_timeout))
        .recycle_timeout(Some(settings.connect_timeout))
        // The most recently returned connection is handed out first, so after a burst the load
        // runs on a few warm backends instead of rotating through every connection the burst
        // opened, each with a cold cache and a share of the CPUs (ADR 0010 in docs/adr/; figures
        // in docs/benchmarks.md).
        .queue_mode(deadpool::managed::QueueMode::Lifo)
        .runtime(deadpool::Runtime::Tokio1)
        .build()
        .context("building the PostgreSQL pool")
}

/// How long after a connection was found read-only every connection handed out is checked first.
const READ_ONLY_SUSPICION: Duration = Duration::from_secs(30);

/// When a connection of this process was last found read-only, as milliseconds since
/// [`process_start`]; 0 for never.
static READ_ONLY_SEEN_MS: AtomicU64 = AtomicU64::new(0);

fn process_start() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

/// Notes that a statement failed because its connection is read-only (SQLSTATE 25006: the
/// server it was opened on is a standby now, or was demoted while running). For the next 30 s
/// every connection taken from any pool of this process is first asked whether it may still
/// write (one `SHOW transaction_read_only`), and dropped if not; the pools then open new
/// connections with `target_session_attrs=read-write`, which find the new primary. Outside these
/// windows checkouts cost no round trip.
pub fn read_only_seen() {
    let ms = u64::try_from(process_start().elapsed().as_millis()).unwrap_or(u64::MAX);
    READ_ONLY_SEEN_MS.store(ms.max(1), Ordering::Relaxed);
}

fn read_only_suspected() -> bool {
    let seen = READ_ONLY_SEEN_MS.load(Ordering::Relaxed);
    seen != 0 && process_start().elapsed() < Duration::from_millis(seen) + READ_ONLY_SUSPICION
}

/// Whether `conn` refuses writes (`SHOW transaction_read_only`: a standby, or a primary demoted
/// under the connection).
pub(crate) async fn is_read_only(conn: &mut AsyncPgConnection) -> diesel::QueryResult<bool> {
    use diesel_async::RunQueryDsl as _;
    #[derive(diesel::QueryableByName)]
    struct ReadOnly {
        #[diesel(sql_type = diesel::sql_types::Text)]
        transaction_read_only: String,
    }
    let row: ReadOnly = diesel::sql_query("SHOW transaction_read_only")
        .get_result(conn)
        .await?;
    Ok(row.transaction_read_only != "off")
}

/// `Ok` when `conn` may write; an error (which makes the pool drop it) when it is read-only.
async fn check_writable(conn: &mut AsyncPgConnection) -> diesel::QueryResult<()> {
    if !is_read_only(conn).await? {
        Ok(())
    } else {
        Err(diesel::result::Error::DatabaseError(
            diesel::result::DatabaseErrorKind::ReadOnlyTransaction,
            Box::new("the connection's server no longer accepts writes".to_owned()),
        ))
    }
}

/// Whether the database at `url` runs on this machine: every host it names is a Unix socket,
/// `localhost` or a loopback address (libpq's default, no host at all, is a Unix socket too).
/// `false` for a URL that does not parse; connecting reports that error.
pub fn is_on_this_machine(url: &str) -> bool {
    use std::str::FromStr as _;
    use tokio_postgres::config::Host;
    let Ok(config) = tokio_postgres::Config::from_str(url) else {
        return false;
    };
    let hosts_local = config.get_hosts().iter().all(|host| match host {
        Host::Unix(_) => true,
        Host::Tcp(name) => {
            let bare = name.trim_start_matches('[').trim_end_matches(']');
            name.eq_ignore_ascii_case("localhost")
                || bare
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
    });
    hosts_local
        && config
            .get_hostaddrs()
            .iter()
            .all(std::net::IpAddr::is_loopback)
}

/// Connects once to `url`, to fail early with a message that says which server could not be
/// reached and why (the refusal, the unknown host, the rejected password), without the password.
pub async fn check_connection(url: &str) -> Result<()> {
    use std::str::FromStr as _;
    let config = tokio_postgres::Config::from_str(&for_writes_bounded(url)).map_err(|err| {
        anyhow::anyhow!(
            "the database URL is not a valid PostgreSQL URL: {}",
            error_chain(&err)
        )
    })?;
    let connecting = tokio::time::timeout(
        Duration::from_secs(10),
        config.connect(tokio_postgres::NoTls),
    );
    let failure = match connecting.await {
        Ok(Ok((client, connection))) => {
            drop(client);
            let _ = connection.await;
            return Ok(());
        }
        Ok(Err(err)) => error_chain(&err),
        Err(_) => "no answer within 10 s".to_owned(),
    };
    anyhow::bail!(
        "cannot connect to PostgreSQL at {}: {failure}",
        describe_target(&config)
    )
}

/// `host:port, database D as user U`, from a parsed URL (never its password).
fn describe_target(config: &tokio_postgres::Config) -> String {
    use tokio_postgres::config::Host;
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            match host {
                Host::Tcp(name) => format!("{name}:{port}"),
                Host::Unix(dir) => format!("{}/.s.PGSQL.{port}", dir.display()),
            }
        })
        .collect();
    let hosts = if hosts.is_empty() {
        "the default socket".to_owned()
    } else {
        hosts.join(", ")
    };
    format!(
        "{hosts} (database {:?}, user {:?})",
        config.get_dbname().unwrap_or("(the user's)"),
        config.get_user().unwrap_or("(this user)")
    )
}

/// An error and each of its causes, joined with `: `, repeated texts once.
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(err);
    while let Some(err) = next {
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = err.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::{for_writes, for_writes_bounded, host_count, is_on_this_machine};

    #[test]
    fn connections_that_may_write_ask_for_the_primary_unless_the_url_says_otherwise() {
        assert_eq!(
            for_writes("postgres://u@h1:5432,h2:5433/db"),
            "postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write"
        );
        assert_eq!(
            for_writes_bounded("postgres://u@h1:5432,h2:5433/db"),
            "postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write&connect_timeout=2"
        );
        assert_eq!(
            for_writes_bounded("postgres://u@h/db?sslmode=disable&connect_timeout=5"),
            "postgres://u@h/db?sslmode=disable&connect_timeout=5&target_session_attrs=read-write"
        );
        assert_eq!(
            for_writes_bounded("postgresql://u@h/db?target_session_attrs=any"),
            "postgresql://u@h/db?target_session_attrs=any&connect_timeout=2"
        );
        assert_eq!(
            for_writes_bounded("host=h1,h2 user=u dbname=db"),
            "host=h1,h2 user=u dbname=db target_session_attrs=read-write connect_timeout=2"
        );
        let parsed: tokio_postgres::Config = for_writes("postgres://u@h1,h2/db").parse().unwrap();
        assert_eq!(
            parsed.get_target_session_attrs(),
            tokio_postgres::config::TargetSessionAttrs::ReadWrite
        );
        assert_eq!(host_count("postgres://u@h1:1,h2:2,h3:3/db"), 3);
        assert_eq!(host_count("postgres://u@/db"), 1);
    }

    #[test]
    fn a_database_on_loopback_or_a_socket_is_on_this_machine() {
        for local in [
            "postgres://u:p@127.0.0.1:5432/db",
            "postgres://u@localhost/db",
            "postgresql://u@LOCALHOST:6543/db?sslmode=disable",
            "postgres://u@[::1]:5432/db",
            "postgres://u@127.0.0.2/db",
            "postgres://u@localhost,127.0.0.1/db",
            "postgres://u@%2Frun%2Fpostgresql/db",
            "postgres:///db?host=/var/run/postgresql",
            "postgres://u@/db",
            "host=localhost user=u dbname=db",
        ] {
            assert!(is_on_this_machine(local), "{local}");
        }
        for remote in [
            "postgres://u:p@db.example.com:5432/db",
            "postgres://u@10.0.0.5/db",
            "postgres://u@localhost,db.example.com/db",
            "postgres://u@localhost/db?hostaddr=10.0.0.5",
            "host=db.internal user=u",
            "not a url",
        ] {
            assert!(!is_on_this_machine(remote), "{remote}");
        }
    }
}
