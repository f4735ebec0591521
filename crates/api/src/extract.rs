//! Request extractors: the authenticated caller, and JSON bodies with endpoint-chosen errors.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::time::Duration;

use actix_web::dev::Payload;
use actix_web::http::{Method, StatusCode, header};
use actix_web::{FromRequest, HttpMessage, HttpRequest, web};
use serde::de::DeserializeOwned;
use timetrack_domain::DomainError;
use timetrack_domain::model::Principal;
use timetrack_domain::services::{Access, Admitted, Refusal};

use crate::error::{ApiError, json_error};
use crate::state::AppState;

/// How long a request body may take to arrive. actix bounds the request head alone (its client
/// request time-out, 5 s); without this, a client sending a body a byte at a time would hold a
/// connection and a worker's task for as long as it liked.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// The whole body, or 408 `Request body not received in time` (and the connection closed: the
/// rest of the body would be read as the next request) once [`BODY_TIMEOUT`] has passed.
pub async fn body_within_timeout(
    body: impl Future<Output = Result<web::Bytes, actix_web::Error>>,
) -> Result<web::Bytes, actix_web::Error> {
    match tokio::time::timeout(BODY_TIMEOUT, body).await {
        Ok(read) => read,
        Err(_) => {
            let mut response = json_error(
                StatusCode::REQUEST_TIMEOUT,
                "Request body not received in time",
            );
            response
                .head_mut()
                .set_connection_type(actix_web::http::ConnectionType::Close);
            Err(actix_web::error::InternalError::from_response("body time-out", response).into())
        }
    }
}

/// The caller, authenticated by `Authorization: Bearer <key>` and admitted by its rate limit
/// (see [`admit`]); 401 `Unauthorized` or 429 `Too many requests` otherwise.
#[derive(Debug, Clone, Copy)]
pub struct Caller(pub Principal);

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { admit(&req).await.map(Caller) })
    }
}

/// The principal a request was admitted as, once [`admit`] has let it in.
#[derive(Debug, Clone, Copy)]
struct AdmittedAs(Principal);

/// The principal `req` was admitted as, if [`admit`] let it in.
pub(crate) fn admitted(req: &HttpRequest) -> Option<Principal> {
    req.extensions()
        .get::<AdmittedAs>()
        .map(|admitted| admitted.0)
}

/// Authenticates the request and applies its rate limits, once per request: the idempotency
/// layer asks before it answers from a stored response, and the [`Caller`] extractor of the
/// handler gets the same answer without counting the request again.
///
/// Failed authentications count against the client's address (see [`crate::client_ip`]). The
/// key's limit decision is kept in the request's extensions, where the response middleware turns
/// it into `X-RateLimit-*` headers.
pub async fn admit(req: &HttpRequest) -> Result<Principal, ApiError> {
    let principal = admit_key(req).await?;
    let Some(pattern) = req.match_pattern() else {
        return Ok(principal);
    };
    // The key's scopes, then the caller's role, for this route: 403 before any handler runs, so
    // before the body is read (`crate::scopes`, `crate::roles`, ADR 0026).
    if let Some(scope) = crate::scopes::required(req.method(), &pattern) {
        principal.require(scope)?;
    }
    match crate::roles::required(req.method(), &pattern) {
        None => {}
        Some(crate::roles::Needs::Admin) => principal.require_admin()?,
        Some(crate::roles::Needs::Catalog) => {
            let Some(state) = req.app_data::<web::Data<AppState>>() else {
                return Err(ApiError::unauthorized());
            };
            state.workspace.require_catalog(&principal).await?;
        }
    }
    Ok(principal)
}

/// [`admit`]'s authentication and rate limits, without the scope check.
async fn admit_key(req: &HttpRequest) -> Result<Principal, ApiError> {
    if let Some(AdmittedAs(principal)) = req.extensions().get::<AdmittedAs>().copied() {
        return Ok(principal);
    }
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        return Err(ApiError::unauthorized());
    };
    let client = state
        .trusted_proxies
        .client(req.peer_addr().map(|a| a.ip()), req.headers())
        .map_or_else(|| "unknown".to_owned(), |ip| ip.to_string());
    // A write checks its key in storage, so that a revocation stops every write at once.
    let access = if matches!(*req.method(), Method::GET | Method::HEAD) {
        Access::Read
    } else {
        Access::Write
    };
    let mut admitted = state
        .admission_for(access)
        .admit(bearer_token(req.headers()), &client, access)
        .await;
    // A read whose key the primary could not look up (it went away before the replica's watch
    // noticed) is admitted by the replica's copy, which finds keys there.
    if access == Access::Read
        && matches!(admitted, Err(Refusal::Failed(DomainError::Unavailable(_))))
        && let Some(replica) = state.replica_admission()
    {
        admitted = replica
            .admit(bearer_token(req.headers()), &client, access)
            .await;
    }
    match admitted {
        Ok(Admitted {
            principal,
            decision,
        }) => {
            let mut extensions = req.extensions_mut();
            extensions.insert(decision);
            extensions.insert(AdmittedAs(principal));
            Ok(principal)
        }
        Err(Refusal::Unauthorized) => Err(ApiError::unauthorized()),
        Err(Refusal::TooManyRequests {
            retry_after_secs,
            decision,
        }) => {
            if let Some(decision) = decision {
                req.extensions_mut().insert(decision);
            }
            Err(ApiError::TooManyRequests { retry_after_secs })
        }
        Err(Refusal::Failed(err)) => Err(err.into()),
    }
}

/// The token of an `Authorization: Bearer <token>` header (scheme matched case-insensitively).
pub(crate) fn bearer_token(headers: &header::HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// What a JSON body extractor answers when the body is not valid JSON of the expected shape.
pub trait BodyRejection {
    /// The error for a body that is not JSON, or not of the expected shape; `detail` says where
    /// and why (see [`body_error_detail`]).
    fn rejection(detail: String) -> ApiError;
}

/// The generic rejection: 400 `Invalid JSON body`.
#[derive(Debug)]
pub struct InvalidJson;

impl BodyRejection for InvalidJson {
    fn rejection(detail: String) -> ApiError {
        ApiError::bad_request("Invalid JSON body").with_detail(detail)
    }
}

/// The integration surface's rejection: 400 `Invalid request parameters`.
#[derive(Debug)]
pub struct InvalidParams;

impl BodyRejection for InvalidParams {
    fn rejection(detail: String) -> ApiError {
        ApiError::bad_request("Invalid request parameters").with_detail(detail)
    }
}

/// Parses `bytes` as a `T`; on failure, the `detail` for the caller: which field (its path in
/// the body) and why, or where the JSON itself breaks.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    // serde reads a struct from an array too; every body here is an object. Valid JSON that is
    // something else is said so; invalid JSON gets the parser's position below.
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{')
        && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
    {
        return Err("the body must be a JSON object".to_owned());
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value =
        serde_path_to_error::deserialize(&mut deserializer).map_err(|e| body_error_detail(&e))?;
    deserializer
        .end()
        .map_err(|e| format!("the body is not valid JSON: {e}"))?;
    Ok(value)
}

/// `field: what is wrong` for a shape error, or `the body is not valid JSON: ...` for a syntax
/// error (with serde's line and column).
pub fn body_error_detail(err: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let inner = err.inner();
    if inner.is_syntax() || inner.is_eof() {
        return if inner.is_eof() && inner.line() == 1 && inner.column() == 0 {
            "the body is empty; send a JSON object".to_owned()
        } else {
            format!("the body is not valid JSON: {inner}")
        };
    }
    let path = err.path().to_string();
    // serde's `missing field` errors name the field but sit at the enclosing object's path.
    let message = strip_position(&inner.to_string());
    if path == "." {
        if message.starts_with("invalid type") {
            return format!("the body must be a JSON object ({message})");
        }
        message
    } else {
        format!("{path}: {message}")
    }
}

/// serde_json's message without its ` at line L column C` suffix.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

/// The query string parsed as `T`; otherwise 400 `Invalid query parameters` with a `detail`
/// naming the parameter and what it must be.
#[derive(Debug)]
pub struct QueryParams<T>(pub T);

impl<T> std::ops::Deref for QueryParams<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: DeserializeOwned> FromRequest for QueryParams<T> {
    type Error = actix_web::Error;
    type Future = std::future::Ready<Result<Self, actix_web::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let pairs = url::form_urlencoded::parse(req.query_string().as_bytes());
        let parsed = serde_path_to_error::deserialize(serde_urlencoded::Deserializer::new(pairs))
            .map(QueryParams)
            .map_err(|err| {
                let path = err.path().to_string();
                let detail = if path == "." {
                    err.inner().to_string()
                } else {
                    format!("{path}: {}", err.inner())
                };
                ApiError::bad_request("Invalid query parameters")
                    .with_detail(detail)
                    .into()
            });
        std::future::ready(parsed)
    }
}

/// A body field as it came: a `T`, or another JSON value, kept so that the route can answer a
/// wrong type in the order its published messages imply (a presence check before a type check)
/// instead of failing the whole body at the first field.
#[derive(Debug, Clone, PartialEq)]
pub enum Given<T> {
    /// Of the expected type.
    Valid(T),
    /// Any other JSON value.
    Invalid(serde_json::Value),
}

impl<'de, T: DeserializeOwned> serde::Deserialize<'de> for Given<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Ok(match T::deserialize(&value) {
            Ok(valid) => Self::Valid(valid),
            Err(_) => Self::Invalid(value),
        })
    }
}

/// Deserializes a field that may be absent (`None`), null (`Some(None)`) or set (`Some(Some(v))`),
/// for PATCH bodies; use with `#[serde(default)]`.
pub fn nullable<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    serde::Deserialize::deserialize(deserializer).map(Some)
}

/// A JSON number without a fractional part (`7`, or `7.0`, which JSON Schema also calls an
/// integer) that fits a `u32`. Anything else does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WholeNumber(pub u32);

impl<'de> serde::Deserialize<'de> for WholeNumber {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let number = serde_json::Number::deserialize(deserializer)?;
        number
            .as_u64()
            .or_else(|| {
                number
                    .as_f64()
                    .filter(|f| f.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(f))
                    .map(|f| f as u64)
            })
            .and_then(|n| u32::try_from(n).ok())
            .map(Self)
            .ok_or_else(|| serde::de::Error::custom("not a whole number in range"))
    }
}

/// A JSON body of type `T`, rejected with `R`'s error when it does not parse.
///
/// The body is read whole, within the app's payload limit (64 KiB: larger is 413 before any
/// parsing), and parsed regardless of `Content-Type`, so a client that forgets the header is not
/// punished with an unhelpful 415.
#[derive(Debug)]
pub struct JsonBody<T, R = InvalidJson>(pub T, PhantomData<R>);

impl<T, R> JsonBody<T, R> {
    /// The parsed body.
    pub fn into_inner(self) -> T {
        self.0
    }

    /// A body parsed elsewhere (the MCP tools hand the REST handlers their arguments so).
    pub fn of(value: T) -> Self {
        Self(value, PhantomData)
    }
}

impl<T: DeserializeOwned + 'static, R: BodyRejection + 'static> FromRequest for JsonBody<T, R> {
    type Error = actix_web::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self, actix_web::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let bytes = web::Bytes::from_request(req, payload);
        Box::pin(async move {
            // Payload errors (too large, broken stream) keep actix's status; the app's error
            // middleware turns them into JSON.
            let bytes = body_within_timeout(bytes).await?;
            parse_json::<T>(&bytes)
                .map(|value| JsonBody(value, PhantomData))
                .map_err(|detail| R::rejection(detail).into())
        })
    }
}

/// A JSON body of type `T`, or `T::default()` when the body is empty (for `POST`s whose every field
/// is optional). A non-empty body that does not parse is rejected with `R`'s error (400 `Invalid
/// JSON body` by default).
#[derive(Debug)]
pub struct JsonOrEmpty<T, R = InvalidJson>(pub T, PhantomData<R>);

impl<T, R> JsonOrEmpty<T, R> {
    /// The parsed body.
    pub fn into_inner(self) -> T {
        self.0
    }

    /// A body parsed elsewhere (the MCP tools hand the REST handlers their arguments so).
    pub fn of(value: T) -> Self {
        Self(value, PhantomData)
    }
}

impl<T: DeserializeOwned + Default + 'static, R: BodyRejection + 'static> FromRequest
    for JsonOrEmpty<T, R>
{
    type Error = actix_web::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self, actix_web::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let bytes = web::Bytes::from_request(req, payload);
        Box::pin(async move {
            let bytes = body_within_timeout(bytes).await?;
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return Ok(JsonOrEmpty(T::default(), PhantomData));
            }
            parse_json::<T>(&bytes)
                .map(|value| JsonOrEmpty(value, PhantomData))
                .map_err(|detail| R::rejection(detail).into())
        })
    }
}

/// The body of a write that reads none (a delete, a test, a resend, stopping a timer): empty, or
/// any JSON object, whose fields are not read. Taken as [`JsonOrEmpty<Unread>`], so that such a
/// route checks its body like every other (over 64 KiB: 413; not JSON: 400 `Invalid JSON body`)
/// instead of answering 2xx to anything.
#[derive(Debug, Default, serde::Deserialize)]
pub struct Unread {}

/// An RFC 3339 time of a body field; anything else is 400 `Invalid request parameters`.
pub fn body_time(field: &str, value: &str) -> Result<time::OffsetDateTime, ApiError> {
    timetrack_domain::timefmt::parse_rfc3339(field, value).map_err(|e| {
        ApiError::bad_request(timetrack_domain::services::webhooks::INVALID_PARAMETERS)
            .with_detail(format!("{field}: {e}"))
    })
}

/// A `YYYY-MM-DD` date of a body field; anything else is 400 `Invalid request parameters`.
pub fn body_date(field: &str, value: &str) -> Result<time::Date, ApiError> {
    timetrack_domain::timefmt::parse_date(field, value).map_err(|e| {
        ApiError::bad_request(timetrack_domain::services::webhooks::INVALID_PARAMETERS)
            .with_detail(e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_body_that_does_not_arrive_in_time_is_408_json_and_closes_the_connection() {
        let started = tokio::time::Instant::now();
        let err = body_within_timeout(std::future::pending())
            .await
            .expect_err("a body that never arrives");
        assert_eq!(started.elapsed(), BODY_TIMEOUT);
        let response = err.error_response();
        assert_eq!(response.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(
            response.head().connection_type(),
            actix_web::http::ConnectionType::Close
        );
        let body = actix_web::body::to_bytes(response.into_body())
            .await
            .unwrap();
        assert_eq!(
            &body[..],
            br#"{"error":"Request body not received in time"}"#
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_arrives_in_time_is_passed_on() {
        let body = body_within_timeout(async {
            tokio::time::sleep(BODY_TIMEOUT / 2).await;
            Ok(web::Bytes::from_static(b"{}"))
        })
        .await
        .unwrap();
        assert_eq!(&body[..], b"{}");
    }
}

/// A resource's id from the route's path, typed (`Id<InvoiceId>`). Reading it never fails: the
/// handler asks for it with [`Id::get`] where its checks put it (after the caller is admitted,
/// so a request with a bad key is 401 whatever its path), and one that is malformed names no
/// resource, so it is 404 `<Resource> not found`, as an unknown one is.
#[derive(Debug, Clone, Copy)]
pub struct Id<T>(Result<T, &'static str>);

/// An id a route's path names: which segment, and which resource a malformed one is not found as
/// (the domain's ids: `crate::openapi::paths`).
pub trait PathId: Sized {
    /// The path's segment (`{id}`, `{user_id}`, ...).
    const SEGMENT: &'static str;
    /// The resource, as its 404 names it.
    const RESOURCE: &'static str;
    /// The id, if `raw` is one.
    fn parse(raw: &str) -> Option<Self>;
}

impl<T: PathId> Id<T> {
    /// The id `raw` names (a path's segment, an MCP tool's argument).
    pub fn parse(raw: &str) -> Self {
        Self(T::parse(raw).ok_or(T::RESOURCE))
    }

    /// The id; 404 `<Resource> not found` for a malformed one.
    pub fn get(self) -> Result<T, ApiError> {
        self.0
            .map_err(|resource| DomainError::NotFound(resource).into())
    }
}

impl<T: PathId> FromRequest for Id<T> {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(Ok(Id::parse(
            req.match_info().get(T::SEGMENT).unwrap_or_default(),
        )))
    }
}
