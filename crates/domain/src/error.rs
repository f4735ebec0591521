//! The errors every service and port speaks, in domain words.

/// What went wrong, as the domain sees it; the API maps each variant to one HTTP status.
#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    /// The input breaks a rule; the message is safe to show to the caller.
    #[error("{0}")]
    Validation(String),
    /// The input breaks a rule whose message is published and fixed (`Invalid URL format`):
    /// `detail` says which field and why, for the caller to fix it. Both are safe to show.
    #[error("{message} ({detail})")]
    Invalid {
        /// The published message.
        message: &'static str,
        /// Which field, and what it must be.
        detail: String,
    },
    /// The thing asked for does not exist for this caller.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The change conflicts with the current state (a duplicate, a limit, a dependent row).
    #[error("{0}")]
    Conflict(String),
    /// The change conflicts with the current state, with a published `message` and a `detail`
    /// naming why (`Time entry is locked`: the invoice or the lock date).
    #[error("{message} ({detail})")]
    Refused {
        /// The published message.
        message: &'static str,
        /// Why, for the caller.
        detail: String,
    },
    /// A resource with the same identity (for example a client name) exists; `id` names it.
    #[error("{what} already exists: {id}")]
    AlreadyExists {
        /// What kind of resource, e.g. `client`.
        what: &'static str,
        /// The existing resource's id.
        id: String,
    },
    /// The caller is authenticated but may not act on this resource.
    #[error("forbidden")]
    Forbidden,
    /// The caller's key lacks the scope (its published name) this needs: a 403 that says so.
    #[error("forbidden: the key lacks the scope {0}")]
    LacksScope(&'static str),
    /// The credentials are missing, malformed, unknown or revoked.
    #[error("unauthorized")]
    Unauthorized,
    /// The caller has used up a quota for now; `retry_after_secs` says when some frees.
    #[error("too many requests (retry after {retry_after_secs} s)")]
    TooManyRequests {
        /// Whole seconds until the quota has room again.
        retry_after_secs: u64,
    },
    /// A dependency (the database) cannot be reached right now; retrying later may succeed.
    #[error("service unavailable: {0}")]
    Unavailable(String),
    /// Anything else: a bug or an unexpected failure; never shown to callers.
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

impl DomainError {
    /// Builds a [`DomainError::Validation`] from anything displayable.
    pub fn validation(message: impl Into<String>) -> Self {
        Self::Validation(message.into())
    }

    /// Builds a [`DomainError::Refused`]: a 409 with a published `message` and a `detail`.
    pub fn refused(message: &'static str, detail: impl Into<String>) -> Self {
        Self::Refused {
            message,
            detail: detail.into(),
        }
    }

    /// Builds a [`DomainError::Invalid`]: a published `message` with a `detail`.
    pub fn invalid(message: &'static str, detail: impl Into<String>) -> Self {
        Self::Invalid {
            message,
            detail: detail.into(),
        }
    }
}

/// Result of domain operations.
pub type DomainResult<T> = Result<T, DomainError>;

/// The message of a request whose parameters do not fit together (a report's, a delivery log's).
pub const INVALID_PARAMETERS: &str = "Invalid request parameters";
