//! Migrations: the SQL files of `migrations/`, applied under an advisory lock, then the
//! replaceable SQL functions.

use anyhow::{Context, Result};
use diesel::RunQueryDsl as _;
use diesel::connection::Connection as _;
use diesel_async::AsyncPgConnection;
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

use super::functions;

/// The SQL migrations of `migrations/`, compiled into the binary.
pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations");

/// Key of the advisory lock that serialises migrations between processes.
const MIGRATION_LOCK: i64 = 0x7469_6d65_7472_6163; // "timetrac"

/// Applies every pending migration and returns the versions applied.
///
/// Runs on its own thread with its own connection, under an advisory lock, so several processes
/// starting at once migrate one after the other.
pub async fn run_migrations(url: &str) -> Result<Vec<String>> {
    let url = url.to_owned();
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("migrations".into())
        .spawn(move || {
            let _ = tx.send(migrate_blocking(&url));
        })
        .context("starting the migration thread")?;
    rx.await.context("the migration thread died")?
}

fn migrate_blocking(url: &str) -> Result<Vec<String>> {
    // On the primary, of the hosts a multi-host URL names.
    let mut conn = AsyncConnectionWrapper::<AsyncPgConnection>::establish(&super::for_writes(url))
        .context("connecting to PostgreSQL")?;
    diesel::sql_query(format!("SELECT pg_advisory_lock({MIGRATION_LOCK})"))
        .execute(&mut conn)
        .context("taking the migration lock")?;
    let applied = refuse_unknown_history(&mut conn)
        .and_then(|()| {
            conn.run_pending_migrations(MIGRATIONS)
                .map(|versions| versions.iter().map(ToString::to_string).collect::<Vec<_>>())
                .map_err(|e| anyhow::anyhow!(e).context("applying migrations"))
        })
        .and_then(|applied| {
            let functions = functions::install(&mut conn).context("installing SQL functions")?;
            if !functions.is_empty() {
                // Their names (some thirty) only at DEBUG: at INFO they made one start-up line
                // of over 500 characters.
                tracing::info!(
                    count = functions.len(),
                    schema = functions::SCHEMA,
                    "SQL functions installed"
                );
                tracing::debug!(functions = functions.join(", "), "SQL functions installed");
            }
            Ok(applied)
        });
    let _ = diesel::sql_query(format!("SELECT pg_advisory_unlock({MIGRATION_LOCK})"))
        .execute(&mut conn);
    applied
}

/// A digest of the SQL functions `run_migrations` installs, for test databases built from a
/// template that must follow them as it follows the migrations.
pub fn sql_functions_fingerprint() -> String {
    functions::fingerprint()
}

/// Refuses a database whose schema was made by migrations this build does not have: the
/// development schemas from before the migrations were squashed into one baseline (nothing was
/// released before it), or a newer release's.
fn refuse_unknown_history(conn: &mut AsyncConnectionWrapper<AsyncPgConnection>) -> Result<()> {
    use diesel::migration::MigrationSource;
    let known: Vec<String> = MigrationSource::<diesel::pg::Pg>::migrations(&MIGRATIONS)
        .map_err(|e| anyhow::anyhow!(e))?
        .iter()
        .map(|m| m.name().version().to_string())
        .collect();
    let applied = conn
        .applied_migrations()
        .map_err(|e| anyhow::anyhow!(e).context("reading the applied migrations"))?;
    let unknown: Vec<String> = applied
        .iter()
        .map(ToString::to_string)
        .filter(|v| !known.contains(v))
        .collect();
    if let Some(first) = unknown.first() {
        anyhow::bail!(
            "this database's schema was made by migrations this timetrack does not know ({} of \
             them, e.g. {first}): either a development database from before the migrations were \
             squashed into one baseline (remove the private cluster's directory, `.timetrack/` by \
             default, or recreate the database), or a newer timetrack's",
            unknown.len()
        );
    }
    Ok(())
}
