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
/// was being done.
pub fn map_db_error(err: DieselError, context: &'static str) -> DomainError {
    match &err {
        DieselError::DatabaseError(DatabaseErrorKind::ClosedConnection, _)
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
