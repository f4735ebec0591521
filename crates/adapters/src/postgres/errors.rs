//! Translation of diesel and pool errors into domain errors.

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_async::pooled_connection::deadpool::PoolError;
use timetrack_domain::DomainError;

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
pub fn map_db_error(err: DieselError, context: &'static str) -> DomainError {
    match &err {
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
}
