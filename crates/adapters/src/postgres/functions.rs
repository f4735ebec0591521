//! The service's SQL functions and triggers, each defined once in `functions/*.sql`, live in their
//! own schema, `timetrack_code`, apart from the tables: replaceable code, not data. The migration
//! runner installs them: when the text of any of them changed, the schema is dropped and created
//! again with every function, then the triggers, in one transaction (ADR 0004). Tables and indexes
//! are migrations, and no migration defines a function or a trigger (a test holds it so).
//!
//! The triggers keep the report day totals (ADR 0024): when the text of the rule that sums them
//! changed, every workspace's totals are summed again in the same transaction, so the stored
//! totals are always those of the installed rule.
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
/// definition. Rows whose name holds a parenthesis are functions of an older layout (one per
/// signature, in `public`), dropped at the next install.
const RECORD: &str = "schema timetrack_code";

/// How `timetrack_functions` records the rule the report day totals were summed by: the digest
/// of `TOTALS_RULE`.
const TOTALS_RECORD: &str = "rule report_day_totals";

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
    include_str!("functions/report_day_bucket.sql"),
    include_str!("functions/report_day_totals_add.sql"),
    include_str!("functions/report_day_totals_on_entries.sql"),
    include_str!("functions/report_day_totals_rebuild.sql"),
    include_str!("functions/report_day_totals_on_settings.sql"),
];

/// The triggers, created after every function (each runs one of them).
const TRIGGERS: &[&str] = &[include_str!("functions/report_day_totals_triggers.sql")];

/// What the report day totals' figures follow, besides the triggers: the functions that make an
/// entry's bucket and figures and sum them, by name. A change to any of their texts sums every
/// workspace's totals again.
const TOTALS_RULE: &[&str] = &[
    "rounded_seconds",
    "amount_minor",
    "report_day_bucket",
    "report_day_totals_add",
    "report_day_totals_on_entries",
    "report_day_totals_rebuild",
    "report_day_totals_on_settings",
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
    digest(&[FUNCTIONS.concat(), TRIGGERS.concat()].concat())
}

/// A digest of the day totals' rule: its functions' texts, then the triggers'.
fn totals_fingerprint() -> String {
    let functions = FUNCTIONS
        .iter()
        .filter(|sql| name_of(sql).is_some_and(|name| TOTALS_RULE.contains(&name)));
    digest(&functions.chain(TRIGGERS).copied().collect::<String>())
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
/// left, drops and creates `timetrack_code` with every function and then the triggers, sums the
/// report day totals again if their rule changed, and records the digests. Returns the names of
/// the functions created (empty when nothing changed). Runs after the migrations, under their
/// lock.
pub fn install<C>(conn: &mut C) -> Result<Vec<String>>
where
    C: diesel::Connection<Backend = diesel::pg::Pg> + diesel::connection::LoadConnection,
{
    conn.transaction(|conn| {
        let installed: Vec<Installed> =
            diesel::sql_query(include_str!("statements/functions_installed.sql"))
                .load(conn)
                .context("reading timetrack_functions")?;
        let recorded = |name: &str| {
            installed
                .iter()
                .find(|i| i.signature == name)
                .map(|i| i.sha256.as_str())
        };
        let (fingerprint, totals) = (fingerprint(), totals_fingerprint());
        let older: Vec<&Installed> = installed
            .iter()
            .filter(|i| i.signature.contains('('))
            .collect();
        if recorded(RECORD) == Some(fingerprint.as_str())
            && recorded(TOTALS_RECORD) == Some(totals.as_str())
            && older.is_empty()
        {
            return Ok(Vec::new());
        }
        for old in older {
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
        for sql in TRIGGERS {
            conn.batch_execute(sql).context("creating the triggers")?;
        }
        if recorded(TOTALS_RECORD) != Some(totals.as_str()) {
            conn.batch_execute(include_str!("statements/day_totals_rebuilt.sql"))
                .context("summing the report day totals again")?;
        }
        for (signature, sha256) in [(RECORD, &fingerprint), (TOTALS_RECORD, &totals)] {
            named_query!(
                include_str!("statements/function_installed.sql");
                signature: Text = signature,
                sha256: Text = sha256,
            )
            .execute(conn)?;
        }
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

    #[test]
    fn the_trigger_files_create_triggers_of_the_schema_and_nothing_else() {
        for sql in TRIGGERS {
            assert!(!sql.contains("CREATE FUNCTION"), "{sql}");
            let triggers = sql.matches("CREATE TRIGGER").count();
            assert!(triggers >= 1, "{sql}");
            assert_eq!(
                sql.matches(&format!("EXECUTE FUNCTION {SCHEMA}.")).count(),
                triggers,
                "{sql}"
            );
        }
        for name in TOTALS_RULE {
            assert!(
                FUNCTIONS.iter().any(|sql| name_of(sql) == Some(name)),
                "a function of the day totals' rule that is not installed: {name}"
            );
        }
    }
}
