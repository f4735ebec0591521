//! Translation of diesel and pool errors into domain errors.

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_async::pooled_connection::deadpool::PoolError;
use timetrack_domain::DomainError;

use super::pool::read_only_seen;

/// A pool failure: the database is unreachable or every connection is busy past the wait bound.
#[allow(clippy::needless_pass_by_value)] // shaped for `map_err(map_pool_error)`
pub fn map_pool_error(err: PoolError) -> DomainError {
    tracing::debug!(error = %err, "no database connection");
    DomainError::Unavailable(format!("no database connection: {err}"))
}

/// A query failure that no caller turned into a more specific domain error.
///
/// A lost connection is `Unavailable`; anything else is `Unexpected`, with `context` saying what
/// was being done. diesel-async reports every failure that carries no SQLSTATE (the connection
/// closed, an I/O error) as `UnableToSendCommand`: those are the connection's, not the query's.
/// A write refused because the connection is read-only (SQLSTATE 25006: its server became a
/// standby, or was demoted while running) is `Unavailable` too, and makes the pools check their
/// connections before handing them out for a while ([`read_only_seen`]), so that the read-only
/// ones are dropped and new ones open on the primary. So is a server shutting down, starting up
/// or in recovery (57P01-57P03), whose messages say so.
pub fn map_db_error(err: DieselError, context: &'static str) -> DomainError {
    match &err {
        DieselError::DatabaseError(DatabaseErrorKind::ReadOnlyTransaction, _) => {
            read_only_seen();
            DomainError::Unavailable(format!("{context}: {err}"))
        }
        DieselError::DatabaseError(DatabaseErrorKind::Unknown, info)
            if is_server_going_away(info.message()) =>
        {
            DomainError::Unavailable(format!("{context}: {err}"))
        }
        DieselError::DatabaseError(
            DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand,
            _,
        )
        | DieselError::BrokenTransactionManager => {
            DomainError::Unavailable(format!("{context}: {err}"))
        }
        DieselError::DatabaseError(DatabaseErrorKind::Unknown, info)
            if info.message().contains("connection") =>
        {
            DomainError::Unavailable(format!("{context}: {err}"))
        }
        _ => DomainError::Unexpected(anyhow::Error::new(err).context(context)),
    }
}

/// Whether a server's error message says it is stopping, starting or recovering (SQLSTATE
/// 57P01 `terminating connection due to administrator command`, 57P02 crash shutdown, 57P03
/// `the database system is starting up` / `is shutting down` / `is in recovery mode`): the
/// statement was fine, the server is going away or not there yet.
fn is_server_going_away(message: &str) -> bool {
    message.contains("the database system is")
        || message.contains("terminating connection")
        || message.contains("conflict with recovery")
}

/// The name of the constraint that `err` broke, if it is a unique or foreign-key violation.
pub(crate) fn violated_constraint(err: &DieselError) -> Option<&str> {
    match err {
        DieselError::DatabaseError(
            DatabaseErrorKind::UniqueViolation | DatabaseErrorKind::ForeignKeyViolation,
            info,
        ) => info.constraint_name(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_closed_under_a_query_is_unavailable_not_unexpected() {
        // What diesel-async makes of tokio-postgres's "connection closed" (no SQLSTATE).
        let closed = DieselError::DatabaseError(
            DatabaseErrorKind::UnableToSendCommand,
            Box::new("connection closed".to_owned()),
        );
        assert!(matches!(
            map_db_error(closed, "reading a workspace"),
            DomainError::Unavailable(message) if message.contains("reading a workspace")
        ));
        let violated = DieselError::DatabaseError(
            DatabaseErrorKind::CheckViolation,
            Box::new("new row violates check constraint".to_owned()),
        );
        assert!(matches!(
            map_db_error(violated, "writing"),
            DomainError::Unexpected(_)
        ));
    }

    #[test]
    fn a_read_only_connection_or_a_server_going_away_is_unavailable() {
        let read_only = DieselError::DatabaseError(
            DatabaseErrorKind::ReadOnlyTransaction,
            Box::new("cannot execute INSERT in a read-only transaction".to_owned()),
        );
        assert!(matches!(
            map_db_error(read_only, "creating a client"),
            DomainError::Unavailable(_)
        ));
        for message in [
            "the database system is shutting down",
            "the database system is in recovery mode",
            "terminating connection due to administrator command",
        ] {
            let going = DieselError::DatabaseError(
                DatabaseErrorKind::Unknown,
                Box::new(message.to_owned()),
            );
            assert!(
                matches!(map_db_error(going, "x"), DomainError::Unavailable(_)),
                "{message}"
            );
        }
    }
}
