//! The service's SQL functions, each defined once in `functions/*.sql`, live in their own schema,
//! `timetrack_code`, apart from the tables: replaceable code, not data. The migration runner
//! installs them: when the text of any of them changed, the schema is dropped and created again
//! with every function, in one transaction (ADR 0004). Tables and indexes are migrations.
//!
//! A function's signature is written once, in its file; nothing here repeats it. Each file holds
//! one `CREATE FUNCTION timetrack_code.<name>(...)` with named parameters, and the comments that
//! say why it is written so.

use anyhow::{Context, Result};
use diesel::RunQueryDsl as _;
use diesel::sql_types::Text;
use sha2::{Digest, Sha256};

use super::sql::named_query;

/// The schema the functions live in.
pub const SCHEMA: &str = "timetrack_code";

/// How `timetrack_functions` records the installed schema: one row, with the digest of every
/// definition. Rows of other names are functions of an older layout (one per signature, in
/// `public`), dropped at the next install.
const RECORD: &str = "schema timetrack_code";

/// Every function the service calls, in the order they are created. The order matters for the
/// plain SQL ones, whose bodies PostgreSQL checks when they are created: each comes after the
/// functions it calls (`rate_for` after `rate_level`, `repricing` after `rate_for`,
/// `prices_in_reach` after `repricing`, `claim_deliveries` after `sent_type`). PL/pgSQL resolves
/// its calls when it runs.
const FUNCTIONS: &[&str] = &[
    include_str!("functions/shows_to.sql"),
    include_str!("functions/receives.sql"),
    include_str!("functions/sent_type.sql"),
    include_str!("functions/claim_deliveries.sql"),
    include_str!("functions/claim_after.sql"),
    include_str!("functions/record_attempts.sql"),
    include_str!("functions/lock_streaks.sql"),
    include_str!("functions/record_round.sql"),
    include_str!("functions/apply_streaks.sql"),
    include_str!("functions/record_and_claim.sql"),
    include_str!("functions/apply_and_claim.sql"),
    include_str!("functions/pricing_lock.sql"),
    include_str!("functions/rate_level.sql"),
    include_str!("functions/rate_for.sql"),
    include_str!("functions/repricing.sql"),
    include_str!("functions/prices_in_reach.sql"),
    include_str!("functions/entry_prices.sql"),
    include_str!("functions/price_entries.sql"),
    include_str!("functions/price_written.sql"),
    include_str!("functions/rounded_seconds.sql"),
    include_str!("functions/amount_minor.sql"),
];

/// The hex SHA-256 of a text.
fn digest(sql: &str) -> String {
    Sha256::digest(sql.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A digest of every definition: what the installed schema is recorded with, and what test
/// templates that must follow the functions are keyed by.
pub fn fingerprint() -> String {
    digest(&FUNCTIONS.concat())
}

/// The name a definition creates: `timetrack_code.<name>`.
fn name_of(sql: &str) -> Option<&str> {
    let prefix = format!("CREATE FUNCTION {SCHEMA}.");
    let start = sql.find(&prefix)? + prefix.len();
    let rest = &sql[start..];
    Some(&rest[..rest.find('(')?])
}

#[derive(diesel::QueryableByName)]
struct Installed {
    #[diesel(sql_type = Text)]
    signature: String,
    #[diesel(sql_type = Text)]
    sha256: String,
}

/// Installs the functions if any text changed, in one transaction: drops what an older layout
/// left, drops and creates `timetrack_code` with every function, and records the digest.
/// Returns the names of the functions created (empty when nothing changed). Runs after the
/// migrations, under their lock.
pub fn install<C>(conn: &mut C) -> Result<Vec<String>>
where
    C: diesel::Connection<Backend = diesel::pg::Pg> + diesel::connection::LoadConnection,
{
    conn.transaction(|conn| {
        let installed: Vec<Installed> =
            diesel::sql_query(include_str!("statements/functions_installed.sql"))
                .load(conn)
                .context("reading timetrack_functions")?;
        let fingerprint = fingerprint();
        if let [only] = installed.as_slice()
            && only.signature == RECORD
            && only.sha256 == fingerprint
        {
            return Ok(Vec::new());
        }
        for old in installed.iter().filter(|i| i.signature != RECORD) {
            conn.batch_execute(&format!("DROP FUNCTION IF EXISTS {}", old.signature))
                .with_context(|| format!("dropping {}", old.signature))?;
            named_query!(
                include_str!("statements/function_dropped.sql");
                signature: Text = &old.signature,
            )
            .execute(conn)?;
        }
        conn.batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {SCHEMA} CASCADE; CREATE SCHEMA {SCHEMA}"
        ))
        .context("creating the functions' schema")?;
        let mut created = Vec::new();
        for sql in FUNCTIONS {
            let name = name_of(sql).unwrap_or("?");
            conn.batch_execute(sql)
                .with_context(|| format!("creating {SCHEMA}.{name}"))?;
            created.push(name.to_owned());
        }
        named_query!(
            include_str!("statements/function_installed.sql");
            signature: Text = RECORD,
            sha256: Text = &fingerprint,
        )
        .execute(conn)?;
        Ok(created)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_file_creates_one_function_in_the_schema_and_none_twice() {
        let mut names: Vec<&str> = FUNCTIONS
            .iter()
            .map(|sql| {
                assert_eq!(sql.matches("CREATE FUNCTION").count(), 1, "{sql}");
                name_of(sql).expect("a function of the schema")
            })
            .collect();
        names.sort_unstable();
        let count = names.len();
        names.dedup();
        assert_eq!(names.len(), count);
        assert_eq!(fingerprint().len(), 64);
    }
}
