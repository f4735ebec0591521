//! The connection pool every PostgreSQL adapter shares, and the checks of a database URL.

use std::time::Duration;

use anyhow::{Context, Result};
use diesel_async::AsyncPgConnection;
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
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self {
            max_size: 16,
            wait_timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(2),
        }
    }
}

/// Builds the pool; no connection is opened until one is needed.
///
/// Every wait is bounded, so a dead or unreachable database yields an error within seconds, never a
/// hang.
pub fn build_pool(url: &str, settings: PoolSettings) -> Result<PgPool> {
    let mut config = ManagerConfig::default();
    // A broken connection surfaces on its first use and is dropped; no ping on every checkout.
    config.recycling_method = RecyclingMethod::Fast;
    let manager = AsyncDieselConnectionManager::<AsyncPgConnection>::new_with_config(url, config);
    PgPool::builder(manager)
        .max_size(settings.max_size)
        .wait_timeout(Some(settings.wait_timeout))
        .create_timeout(Some(settings.connect_timeout))
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
    let config = tokio_postgres::Config::from_str(url).map_err(|err| {
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
    use super::is_on_this_machine;

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
