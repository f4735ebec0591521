//! The SQL functions of the delivery queue, each defined once in `functions/*.sql`, and installed
//! by the migration runner: re-created when its text changes, dropped when it is no longer
//! defined. Tables and indexes are migrations; these are replaceable code.

use anyhow::{Context, Result};
use diesel::RunQueryDsl as _;
use diesel::sql_types::Text;
use sha2::{Digest, Sha256};

use super::sql::named_query;

/// One replaceable function: its signature (as `DROP FUNCTION` takes it) and its definition (a
/// `CREATE OR REPLACE FUNCTION` with the comments that say why it is written so).
struct Function {
    signature: &'static str,
    sql: &'static str,
}

/// Every function the service calls. To change one, edit its file (it is dropped and created
/// again); to change a signature, add the new one and remove the old (it is then dropped).
const FUNCTIONS: &[Function] = &[
    Function {
        signature: "timetrack_shows_to(uuid, uuid)",
        sql: include_str!("functions/shows_to.sql"),
    },
    Function {
        signature: "timetrack_claim_deliveries(timestamptz, timestamptz, bigint, bigint, bigint, \
                    uuid[], int[])",
        sql: include_str!("functions/claim_deliveries.sql"),
    },
    Function {
        signature: "timetrack_claim_after(text[], timestamptz, timestamptz, bigint, bigint, \
                    bigint, uuid[], int[], bool)",
        sql: include_str!("functions/claim_after.sql"),
    },
    Function {
        signature: "timetrack_record_attempts(bigint[], text[], int[], timestamptz[], int[], \
                    int[], text[], text[], text[], timestamptz[], timestamptz[], bool[], bool[], \
                    uuid[], timestamptz[], bool[])",
        sql: include_str!("functions/record_attempts.sql"),
    },
    Function {
        signature: "timetrack_lock_streaks(text[], bool[], bool[])",
        sql: include_str!("functions/lock_streaks.sql"),
    },
    Function {
        signature: "timetrack_record_round(bigint[], text[], int[], timestamptz[], int[], int[], \
                    text[], text[], text[], timestamptz[], timestamptz[], bool[], bool[], \
                    uuid[], timestamptz[], bool[])",
        sql: include_str!("functions/record_round.sql"),
    },
    Function {
        signature: "timetrack_apply_streaks(text[], timestamptz[], int[], bool[], timestamptz[], \
                    timestamptz[], int)",
        sql: include_str!("functions/apply_streaks.sql"),
    },
    Function {
        signature: "timetrack_record_and_claim(bigint[], text[], int[], timestamptz[], int[], \
                    int[], text[], text[], text[], timestamptz[], timestamptz[], bool[], bool[], \
                    uuid[], timestamptz[], bool[], timestamptz, timestamptz, bigint, bigint, \
                    bigint, uuid[], int[], bool)",
        sql: include_str!("functions/record_and_claim.sql"),
    },
    Function {
        signature: "timetrack_apply_and_claim(text[], timestamptz[], int[], bool[], \
                    timestamptz[], timestamptz[], int, text[], timestamptz, timestamptz, bigint, \
                    bigint, bigint, uuid[], int[], bool)",
        sql: include_str!("functions/apply_and_claim.sql"),
    },
];

/// The hex SHA-256 of a definition.
fn digest(sql: &str) -> String {
    Sha256::digest(sql.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A digest of every definition, for test templates that must follow them.
pub fn fingerprint() -> String {
    let mut all = String::new();
    for function in FUNCTIONS {
        all.push_str(function.signature);
        all.push_str(&digest(function.sql));
    }
    digest(&all)
}

#[derive(diesel::QueryableByName)]
struct Installed {
    #[diesel(sql_type = Text)]
    signature: String,
    #[diesel(sql_type = Text)]
    sha256: String,
}

/// Installs what changed, in one transaction, and returns the signatures (re-)created or
/// dropped. Runs after the migrations, under their lock.
pub fn install<C>(conn: &mut C) -> Result<Vec<String>>
where
    C: diesel::Connection<Backend = diesel::pg::Pg> + diesel::connection::LoadConnection,
{
    conn.transaction(|conn| {
        let installed: Vec<Installed> =
            diesel::sql_query(include_str!("statements/functions_installed.sql"))
                .load(conn)
                .context("reading timetrack_functions")?;
        let mut changed = Vec::new();
        for function in FUNCTIONS {
            let sha256 = digest(function.sql);
            let current = installed
                .iter()
                .any(|i| i.signature == function.signature && i.sha256 == sha256);
            if current {
                continue;
            }
            // Dropped first: `CREATE OR REPLACE` cannot change what a function returns.
            conn.batch_execute(&format!("DROP FUNCTION IF EXISTS {}", function.signature))
                .with_context(|| format!("dropping {}", function.signature))?;
            conn.batch_execute(function.sql)
                .with_context(|| format!("creating {}", function.signature))?;
            named_query!(
                include_str!("statements/function_installed.sql");
                signature: Text = function.signature,
                sha256: Text = &sha256,
            )
            .execute(conn)?;
            changed.push(function.signature.to_owned());
        }
        for stale in installed
            .iter()
            .filter(|i| FUNCTIONS.iter().all(|f| f.signature != i.signature))
        {
            conn.batch_execute(&format!("DROP FUNCTION IF EXISTS {}", stale.signature))
                .with_context(|| format!("dropping {}", stale.signature))?;
            named_query!(
                include_str!("statements/function_dropped.sql");
                signature: Text = &stale.signature,
            )
            .execute(conn)?;
            changed.push(stale.signature.clone());
        }
        Ok(changed)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_file_defines_the_function_of_its_signature() {
        for function in FUNCTIONS {
            let name = function.signature.split('(').next().unwrap();
            assert!(
                function
                    .sql
                    .contains(&format!("CREATE OR REPLACE FUNCTION {name}(")),
                "{name}"
            );
        }
        assert_eq!(fingerprint(), fingerprint());
        assert_eq!(fingerprint().len(), 64);
    }
}
