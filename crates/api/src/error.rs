//! The one error type of the HTTP layer: every failure becomes a status and `{"error": "..."}`.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use serde_json::json;
use timetrack_domain::DomainError;

/// An error answered to an HTTP client.
///
/// 5xx answers never carry the cause; it is logged once, here, inside the request's span (which
/// carries the request id).
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A domain error, mapped by its kind.
    #[error(transparent)]
    Domain(#[from] DomainError),
    /// A fixed status and message (for example 400 `Invalid request parameters`), and what to
    /// fix in a `detail` when there is more to say than the fixed message.
    #[error("{message}")]
    Status {
        /// The HTTP status.
        status: StatusCode,
        /// The `error` text.
        message: &'static str,
        /// The `detail` text: which field, and why.
        detail: Option<String>,
    },
    /// 429 `Too many requests`, with `Retry-After`.
    #[error("too many requests")]
    TooManyRequests {
        /// Seconds to wait.
        retry_after_secs: u64,
    },
    /// A server failure answered with an endpoint's own 500 message, with its cause for the log.
    #[error("{message}: {cause}")]
    Internal {
        /// The `error` text, e.g. `Failed to fetch time entries`.
        message: &'static str,
        /// What went wrong, logged and never sent.
        cause: DomainError,
    },
}

impl ApiError {
    /// A fixed status and message.
    pub fn status(status: StatusCode, message: &'static str) -> Self {
        Self::Status {
            status,
            message,
            detail: None,
        }
    }

    /// This error with a `detail` that says which field is wrong and why; at most
    /// [`MAX_DETAIL_CHARS`] characters of it are sent (a parser's message can quote the input).
    #[must_use]
    pub fn with_detail(self, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        let detail = match detail.char_indices().nth(MAX_DETAIL_CHARS) {
            Some((end, _)) => format!("{}…", &detail[..end]),
            None => detail,
        };
        match self {
            Self::Status {
                status, message, ..
            } => Self::Status {
                status,
                message,
                detail: Some(detail),
            },
            other => other,
        }
    }

    /// The `detail` of the answer, if it has one.
    fn detail(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self {
            Self::Status { detail, .. } => detail.as_deref().map(Into::into),
            Self::Domain(
                DomainError::Invalid { detail, .. } | DomainError::Refused { detail, .. },
            ) => Some(detail.as_str().into()),
            Self::Domain(DomainError::LacksScope(scope)) => {
                Some(format!("this key lacks the scope {scope}").into())
            }
            _ => None,
        }
    }

    /// 400 with `message`.
    pub fn bad_request(message: &'static str) -> Self {
        Self::status(StatusCode::BAD_REQUEST, message)
    }

    /// 401 `Unauthorized`.
    pub fn unauthorized() -> Self {
        Self::status(StatusCode::UNAUTHORIZED, "Unauthorized")
    }

    /// Keeps availability errors as 503 and turns every other failure into a 500 with `message`.
    pub fn internal(message: &'static str) -> impl FnOnce(DomainError) -> Self {
        move |cause| match cause {
            DomainError::Unavailable(_) => Self::Domain(cause),
            cause => Self::Internal { message, cause },
        }
    }

    fn message(&self) -> String {
        match self {
            Self::Status { message, .. } | Self::Internal { message, .. } => (*message).to_owned(),
            Self::TooManyRequests { .. } => "Too many requests".into(),
            Self::Domain(err) => match err {
                DomainError::Validation(message) | DomainError::Conflict(message) => {
                    message.clone()
                }
                DomainError::Invalid { message, .. } | DomainError::Refused { message, .. } => {
                    (*message).to_owned()
                }
                DomainError::AlreadyExists { what, .. } => sentence(what, "already exists"),
                DomainError::NotFound(what) => sentence(what, "not found"),
                DomainError::Forbidden | DomainError::LacksScope(_) => "Forbidden".into(),
                DomainError::Unauthorized => "Unauthorized".into(),
                DomainError::TooManyRequests { .. } => "Too many requests".into(),
                DomainError::Unavailable(_) => "Service unavailable".into(),
                DomainError::Unexpected(_) => "Internal server error".into(),
            },
        }
    }
}

/// `("webhook", "not found")` → `Webhook not found`.
fn sentence(what: &str, rest: &str) -> String {
    let mut chars = what.chars();
    match chars.next() {
        Some(first) => format!("{}{} {rest}", first.to_uppercase(), chars.as_str()),
        None => {
            let mut chars = rest.chars();
            chars.next().map_or_else(String::new, |f| {
                format!("{}{}", f.to_uppercase(), chars.as_str())
            })
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::Status { status, .. } => *status,
            Self::Internal { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            Self::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Domain(err) => match err {
                DomainError::Validation(_) | DomainError::Invalid { .. } => StatusCode::BAD_REQUEST,
                DomainError::NotFound(_) => StatusCode::NOT_FOUND,
                DomainError::Conflict(_)
                | DomainError::Refused { .. }
                | DomainError::AlreadyExists { .. } => StatusCode::CONFLICT,
                DomainError::Forbidden | DomainError::LacksScope(_) => StatusCode::FORBIDDEN,
                DomainError::Unauthorized => StatusCode::UNAUTHORIZED,
                DomainError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
                DomainError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
                DomainError::Unexpected(_) => StatusCode::INTERNAL_SERVER_ERROR,
            },
        }
    }

    fn error_response(&self) -> HttpResponse {
        let status = self.status_code();
        if let Self::Domain(DomainError::Unavailable(cause)) = self {
            // The database is away (down, failing over, or only a standby reachable): every
            // request says so at once, and the log says it once a second at most, with how many
            // it did not repeat.
            if let Some(unlogged) = UNAVAILABLE_LOG.admit() {
                tracing::warn!(
                    status = status.as_u16(),
                    error = %cause,
                    unlogged_since_last = unlogged,
                    "request failed: database unavailable"
                );
            }
            return HttpResponse::build(status)
                .insert_header((
                    header::RETRY_AFTER,
                    UNAVAILABLE_RETRY_AFTER_SECS.to_string(),
                ))
                .json(json!({ "error": self.message() }));
        }
        if status.is_server_error() {
            // The whole chain of causes, in one line.
            let error = match self {
                Self::Internal {
                    message,
                    cause: DomainError::Unexpected(cause),
                } => format!("{message}: {cause:#}"),
                Self::Domain(DomainError::Unexpected(cause)) => format!("{cause:#}"),
                other => other.to_string(),
            };
            tracing::error!(status = status.as_u16(), error, "request failed");
        }
        if let Self::TooManyRequests { retry_after_secs }
        | Self::Domain(DomainError::TooManyRequests { retry_after_secs }) = self
        {
            return HttpResponse::build(status)
                .insert_header((header::RETRY_AFTER, retry_after_secs.to_string()))
                .json(json!({ "error": self.message() }));
        }
        if let Self::Domain(DomainError::AlreadyExists { id, .. }) = self {
            return HttpResponse::build(status)
                .json(json!({ "error": self.message(), "existing_id": id }));
        }
        match self.detail() {
            Some(detail) => HttpResponse::build(status)
                .json(json!({ "error": self.message(), "detail": detail })),
            None => json_error(status, &self.message()),
        }
    }
}

/// `Retry-After` of a 503 while the database is unavailable: about what a failover of the
/// database takes to show (a connection attempt per host, then the new primary's first answer).
pub const UNAVAILABLE_RETRY_AFTER_SECS: u64 = 2;

/// The log of unavailable answers: at most one line a second, however many requests fail.
static UNAVAILABLE_LOG: timetrack_adapters::LogThrottle = timetrack_adapters::LogThrottle::new();

/// 405 with a JSON body and the methods the resource serves in `Allow`, for resources hit with a
/// method they do not serve.
pub async fn method_not_allowed(allow: String) -> HttpResponse {
    let mut response = json_error(StatusCode::METHOD_NOT_ALLOWED, "Method not allowed");
    if let Ok(value) = HeaderValue::from_str(&allow) {
        response.headers_mut().insert(header::ALLOW, value);
    }
    response
}

/// Longest `detail` sent, in characters.
pub const MAX_DETAIL_CHARS: usize = 300;

/// A response with `status` and the body `{"error": message}`.
pub fn json_error(status: StatusCode, message: &str) -> HttpResponse {
    HttpResponse::build(status).json(json!({ "error": message }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unavailable_database_is_503_with_retry_after() {
        let response = ApiError::from(DomainError::Unavailable("no database connection".into()))
            .error_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            response.headers().get(header::RETRY_AFTER).unwrap(),
            &UNAVAILABLE_RETRY_AFTER_SECS.to_string()
        );
    }

    #[test]
    fn not_found_names_the_resource() {
        assert_eq!(sentence("webhook", "not found"), "Webhook not found");
        assert_eq!(sentence("api key", "not found"), "Api key not found");
        assert_eq!(
            sentence("client", "already exists"),
            "Client already exists"
        );
        assert_eq!(sentence("", "not found"), "Not found");
    }

    #[test]
    fn server_errors_hide_their_cause() {
        let err = ApiError::from(DomainError::Unexpected(anyhow::anyhow!("password=hunter2")));
        assert_eq!(err.status_code(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(err.message(), "Internal server error");
        let err = ApiError::internal("Failed to delete webhook")(DomainError::Unexpected(
            anyhow::anyhow!("boom"),
        ));
        assert_eq!(err.message(), "Failed to delete webhook");
        let err =
            ApiError::internal("Failed to delete webhook")(DomainError::Unavailable("x".into()));
        assert_eq!(err.status_code(), StatusCode::SERVICE_UNAVAILABLE);
    }
}
