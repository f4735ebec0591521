//! Per-test PostgreSQL databases cloned from a migrated template.

use std::path::PathBuf;
use std::sync::OnceLock;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use tokio_postgres::NoTls;

use timetrack_adapters::postgres::sql_functions_fingerprint;
use timetrack_adapters::{
    Durability, LocalPostgres, PgPool, PoolSettings, build_pool, run_migrations,
};

struct Server {
    /// URL of the server with the database part left for [`with_database`].
    base_url: String,
    template: String,
}

static SERVER: OnceLock<Result<Server, String>> = OnceLock::new();

/// The private cluster of this process, if it started one; taken and stopped at exit.
static LOCAL: std::sync::Mutex<Option<LocalPostgres>> = std::sync::Mutex::new(None);

/// Registered with `atexit`: stops this process's private cluster and removes its directory, so
/// a test run leaves nothing in the temporary directory. (Statics are never dropped.)
extern "C" fn remove_local_cluster() {
    let local = LOCAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    if let Some(mut local) = local {
        let root = local.root().to_owned();
        local.stop();
        drop(local);
        let _ = std::fs::remove_dir_all(root);
    }
}

/// One test's database; dropped (forcibly) when this handle is dropped.
#[derive(Debug)]
pub struct TestDatabase {
    name: String,
    url: String,
}

impl TestDatabase {
    /// A fresh, migrated, empty database for one test.
    pub async fn new() -> Self {
        let server = server();
        let name = format!("timetrack_test_{}", uuid::Uuid::new_v4().simple());
        let admin = connect(&with_database(&server.base_url, "postgres"))
            .await
            .expect("connecting to the test server");
        // Cloning a template fails while another session is connected to it; retry briefly.
        let mut attempt = 0;
        loop {
            let sql = format!(
                "CREATE DATABASE \"{name}\" TEMPLATE \"{}\"",
                server.template
            );
            match admin.batch_execute(&sql).await {
                Ok(()) => break,
                Err(err) if attempt < 50 && err.to_string().contains("being accessed") => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                Err(err) => panic!("creating test database {name}: {err}"),
            }
        }
        let url = with_database(&server.base_url, &name);
        Self { name, url }
    }

    /// The database's connection URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A pool on this database, with the production settings.
    pub fn pool(&self) -> PgPool {
        build_pool(&self.url, PoolSettings::default()).expect("building a test pool")
    }

    /// The URL of the server's maintenance database, for tests that manage databases.
    pub fn server_url() -> String {
        with_database(&server().base_url, "postgres")
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let admin_url = with_database(&server().base_url, "postgres");
        let name = self.name.clone();
        // Drop runs inside an async test; the clean-up gets a runtime of its own on a thread.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("clean-up runtime");
            runtime.block_on(async {
                if let Ok(admin) = connect(&admin_url).await {
                    let _ = admin
                        .batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                        .await;
                }
            });
        })
        .join();
    }
}

fn server() -> &'static Server {
    SERVER
        .get_or_init(|| start_server().map_err(|e| format!("{e:#}")))
        .as_ref()
        .unwrap_or_else(|e| panic!("test PostgreSQL unavailable: {e}"))
}

/// Registers [`remove_local_cluster`] to run at normal exit.
#[allow(unsafe_code)]
fn remove_at_exit() {
    // SAFETY: registers a plain function taking and returning nothing, as atexit(3) requires; it
    // runs once, at normal exit, on the exiting thread.
    unsafe {
        libc::atexit(remove_local_cluster);
    }
}

fn start_server() -> Result<Server> {
    let base_url = match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => {
            remove_stale_clusters();
            let dir =
                std::env::temp_dir().join(format!("timetrack-test-pg-{}", std::process::id()));
            let local = LocalPostgres::start(&dir, Durability::Ephemeral)?;
            let url = local.url("postgres");
            *LOCAL
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(local);
            remove_at_exit();
            url
        }
    };
    let template = format!("timetrack_tpl_{}", migrations_fingerprint()?);
    // Template creation needs async I/O; it runs on a runtime of its own, on its own thread, so it
    // works whichever runtime (if any) the first test runs on.
    let setup_url = base_url.clone();
    let setup_template = template.clone();
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?
            .block_on(ensure_template(&setup_url, &setup_template))
    })
    .join()
    .map_err(|_| anyhow::anyhow!("template set-up panicked"))??;
    Ok(Server { base_url, template })
}

async fn ensure_template(base_url: &str, template: &str) -> Result<()> {
    let admin = connect(&with_database(base_url, "postgres")).await?;
    admin
        .batch_execute("SELECT pg_advisory_lock(74657374747060)")
        .await
        .context("taking the template lock")?;
    let exists = admin
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&template])
        .await?
        .is_some();
    let result = async {
        if !exists {
            // Built under another name and renamed, so a half-built template is never used.
            let building = format!("{template}_building");
            admin
                .batch_execute(&format!(
                    "DROP DATABASE IF EXISTS \"{building}\" WITH (FORCE)"
                ))
                .await?;
            admin
                .batch_execute(&format!("CREATE DATABASE \"{building}\""))
                .await?;
            run_migrations(&with_database(base_url, &building)).await?;
            admin
                .batch_execute(&format!(
                    "ALTER DATABASE \"{building}\" RENAME TO \"{template}\""
                ))
                .await?;
        }
        anyhow::Ok(())
    }
    .await;
    let _ = admin
        .batch_execute("SELECT pg_advisory_unlock(74657374747060)")
        .await;
    result
}

/// A short hash of every migration file and SQL function, so the template follows them.
fn migrations_fingerprint() -> Result<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let migration = entry?.path();
        if migration.is_dir() {
            files.push(migration.join("up.sql"));
        }
    }
    if files.is_empty() {
        bail!("no migrations in {}", dir.display());
    }
    files.sort();
    let mut hasher = Sha256::new();
    for file in files {
        hasher.update(
            file.file_name()
                .map(|n| n.as_encoded_bytes())
                .unwrap_or_default(),
        );
        hasher.update(
            file.parent()
                .and_then(|p| p.file_name())
                .map(|n| n.as_encoded_bytes())
                .unwrap_or_default(),
        );
        hasher.update(std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?);
    }
    // The functions are installed with the migrations: a changed one needs a new template too.
    hasher.update(sql_functions_fingerprint());
    let digest = hasher.finalize();
    Ok(digest[..8].iter().map(|b| format!("{b:02x}")).collect())
}

/// Removes private test clusters left by test processes that no longer exist.
fn remove_stale_clusters() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("timetrack-test-pg-")
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
        if !alive {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// `url` with its database (the path) replaced by `database`.
fn with_database(url: &str, database: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((head, query)) => (head, Some(query)),
        None => (url, None),
    };
    let authority_end = head
        .find("://")
        .map(|i| i + 3)
        .and_then(|start| head[start..].find('/').map(|i| start + i))
        .unwrap_or(head.len());
    let mut out = format!("{}/{database}", &head[..authority_end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

async fn connect(url: &str) -> Result<tokio_postgres::Client> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .with_context(|| "connecting to the test PostgreSQL server")?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// Drops the database `name` on the server of `server_url` (any database URL of that server; the
/// connection is made to its `postgres` database) and creates it again, empty.
pub async fn recreate_database(server_url: &str, name: &str) -> Result<()> {
    let (client, connection) =
        tokio_postgres::connect(&with_database(server_url, "postgres"), NoTls)
            .await
            .context("connecting to the server's postgres database")?;
    let driver = tokio::spawn(connection);
    // Two calls: a batch of statements runs as one transaction, which DROP DATABASE refuses.
    for sql in [
        format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"),
        format!("CREATE DATABASE \"{name}\""),
    ] {
        client
            .batch_execute(&sql)
            .await
            .with_context(|| format!("recreating {name}"))?;
    }
    drop(client);
    let _ = driver.await;
    Ok(())
}

/// Held while a package is checked for and installed: tests of one process run on several
/// threads, and two installs into the same directory at once would break each other, so every
/// caller gets a complete directory without guarding the call itself.
fn installing() -> std::sync::MutexGuard<'static, ()> {
    static INSTALLS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    INSTALLS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A directory under `target/` holding the PyPI package `spec` (`name==version`), installed there
/// with `python3 -m pip --target` unless `module` is already in it; for tests that check the
/// service against independent implementations (`standardwebhooks`, `openapi-spec-validator`).
/// Put it on `PYTHONPATH`.
///
/// # Panics
///
/// When pip is missing or the install fails: the test cannot check what it is for.
pub fn python_package(target_tmp: &std::path::Path, spec: &str, module: &str) -> PathBuf {
    let _one_at_a_time = installing();
    let dir = target_tmp.join(spec.replace("==", "-"));
    if !dir.join(module).exists() {
        let out = std::process::Command::new("python3")
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg("--target")
            .arg(&dir)
            .arg(spec)
            .output()
            .unwrap_or_else(|e| panic!("python3 with pip is needed to install {spec}: {e}"));
        assert!(
            out.status.success(),
            "installing {spec}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    dir
}

/// The `node_modules` directory holding the npm package `spec` (`name@version`), installed under
/// `target_tmp` on first use: for checking the service against independent implementations in
/// JavaScript (`standardwebhooks`).
pub fn npm_package(target_tmp: &std::path::Path, spec: &str, module: &str) -> PathBuf {
    let _one_at_a_time = installing();
    let dir = target_tmp.join(format!("npm-{}", spec.replace(['@', '/'], "-")));
    let modules = dir.join("node_modules");
    if !modules.join(module).exists() {
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
        let out = std::process::Command::new("npm")
            .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .arg(spec)
            .output()
            .unwrap_or_else(|e| panic!("npm is needed to install {spec}: {e}"));
        assert!(
            out.status.success(),
            "installing {spec}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    modules
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn database_is_replaced_in_every_url_shape() {
        assert_eq!(
            with_database("postgres://u:p@h:5/db", "x"),
            "postgres://u:p@h:5/x"
        );
        assert_eq!(with_database("postgres://u@h", "x"), "postgres://u@h/x");
        assert_eq!(
            with_database("postgres://h/db?sslmode=disable", "x"),
            "postgres://h/x?sslmode=disable"
        );
    }
}
