//! `Idempotency-Key` on POST requests: a repeat with the same key and body within 24 hours gets
//! the first response again and changes nothing; the same key with another body is 422.
//!
//! Keys are scoped to the API key that sent them. Responses are stored once the first request
//! finishes, unless it failed in a way a retry should re-run (5xx, 401, 429); a repeat that
//! arrives while the first still runs gets 409. Replays carry `Idempotent-Replayed: true`; like
//! every authenticated request, they count against the key's rate limit first.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, web};
use sha2::{Digest, Sha256};
use timetrack_domain::ports::IdempotencyBegin;

use crate::error::json_error;
use crate::state::AppState;

/// The request header.
pub const HEADER: &str = "idempotency-key";

fn valid_key(key: &str) -> bool {
    (1..=255).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic())
}

fn fingerprint(req: &ServiceRequest, body: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(req.method().as_str());
    hasher.update([0]);
    hasher.update(req.uri().path_and_query().map_or("", |p| p.as_str()));
    hasher.update([0]);
    hasher.update(body);
    hasher.finalize().into()
}

fn storable(status: StatusCode) -> bool {
    !status.is_server_error()
        && status != StatusCode::UNAUTHORIZED
        && status != StatusCode::TOO_MANY_REQUESTS
}

/// The middleware; requests without the header, or not POST, pass straight through.
pub async fn idempotency(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let key = match req.headers().get(HEADER) {
        Some(value) if req.method() == Method::POST => value.to_str().ok().map(str::to_owned),
        _ => return Ok(next.call(req).await?.map_into_boxed_body()),
    };
    let Some(key) = key.filter(|k| valid_key(k)) else {
        let res = json_error(
            StatusCode::BAD_REQUEST,
            "Idempotency-Key must be 1 to 255 visible ASCII characters",
        );
        return Ok(req.into_response(res));
    };
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        return Ok(next.call(req).await?.map_into_boxed_body());
    };
    // Only an authenticated caller has a scope; without a key, the normal (401) path. A caller
    // is admitted first, so that a replay, a mismatch or a request still in progress counts
    // against its key's limit like any request, and a limited one costs no lookup of the key.
    if crate::extract::bearer_token(req.headers()).is_none() {
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    let principal = match crate::extract::admit(req.request()).await {
        Ok(principal) => principal,
        Err(refused) => return Ok(req.error_response(refused)),
    };

    let body = match crate::extract::body_within_timeout(req.extract::<web::Bytes>()).await {
        Ok(body) => body,
        Err(err) => return Ok(req.error_response(err)),
    };
    let print = fingerprint(&req, &body);
    let (_, mut payload) = actix_http::h1::Payload::create(true);
    payload.unread_data(body);
    req.set_payload(payload.into());

    let begun = state
        .idempotency
        .begin(
            principal.workspace_id,
            principal.api_key_id,
            &key,
            print,
            state.clock.now(),
        )
        .await;
    match begun {
        Ok(IdempotencyBegin::Started) => {}
        Ok(IdempotencyBegin::Replay { status, body }) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            let res = HttpResponse::build(status)
                .content_type("application/json")
                .insert_header(("idempotent-replayed", "true"))
                .body(body);
            return Ok(req.into_response(res));
        }
        Ok(IdempotencyBegin::Mismatch) => {
            let res = json_error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Idempotency-Key was already used with a different request",
            );
            return Ok(req.into_response(res));
        }
        Ok(IdempotencyBegin::InProgress) => {
            let res = json_error(
                StatusCode::CONFLICT,
                "A request with this Idempotency-Key is still in progress",
            );
            return Ok(req.into_response(res));
        }
        Err(err) => {
            let res = actix_web::ResponseError::error_response(&crate::error::ApiError::from(err));
            return Ok(req.into_response(res));
        }
    }

    let res = next.call(req).await?;
    let status = res.status();
    if !storable(status) {
        if let Err(err) = state.idempotency.abandon(principal.api_key_id, &key).await {
            settle_later(&state, principal.api_key_id, key, None, &err);
        }
        return Ok(res.map_into_boxed_body());
    }
    let (req, res) = res.into_parts();
    let (head, body) = res.into_parts();
    let bytes = actix_web::body::to_bytes(body)
        .await
        .map_err(|e| actix_web::error::ErrorInternalServerError(e.into().to_string()))?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if let Err(err) = state
        .idempotency
        .complete(principal.api_key_id, &key, status.as_u16(), &text)
        .await
    {
        settle_later(
            &state,
            principal.api_key_id,
            key,
            Some((status.as_u16(), text)),
            &err,
        );
    }
    Ok(ServiceResponse::new(
        req,
        head.set_body(BoxBody::new(bytes)),
    ))
}

/// How long a key is tried to be settled (its response stored, or its claim released) after the
/// database refused it: well within [`STALE_CLAIM`], after which another request would take the
/// claim over.
///
/// [`STALE_CLAIM`]: timetrack_domain::ports::STALE_CLAIM
const SETTLE_FOR: std::time::Duration = std::time::Duration::from_secs(40);

/// Settles a key the database could not settle at once (it was away: down, or failing over to a
/// new primary): stores `response` (or, with `None`, releases the claim) once a second until it
/// succeeds or [`SETTLE_FOR`] has passed. Meanwhile a retry of the request gets 409 (in
/// progress); after it, the first answer (the request was done) or a run of its own (it was
/// not). Without this, a response lost with the database would leave its claim until it went
/// stale, and the retry after that would do the request a second time.
fn settle_later(
    state: &AppState,
    api_key: timetrack_domain::ids::ApiKeyId,
    key: String,
    response: Option<(u16, String)>,
    first: &timetrack_domain::DomainError,
) {
    if !matches!(first, timetrack_domain::DomainError::Unavailable(_)) {
        tracing::warn!(error = %first, "could not settle an idempotency key");
        return;
    }
    let store = state.idempotency.clone();
    actix_web::rt::spawn(async move {
        let until = std::time::Instant::now() + SETTLE_FOR;
        loop {
            actix_web::rt::time::sleep(std::time::Duration::from_secs(1)).await;
            let settled = match &response {
                Some((status, body)) => store.complete(api_key, &key, *status, body).await,
                None => store.abandon(api_key, &key).await,
            };
            match settled {
                Ok(()) => return,
                Err(err) if std::time::Instant::now() >= until => {
                    tracing::warn!(error = %err, "could not settle an idempotency key; it goes stale");
                    return;
                }
                Err(_) => {}
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_bounded_visible_ascii() {
        assert!(valid_key("order-42"));
        assert!(valid_key(&"k".repeat(255)));
        assert!(!valid_key(""));
        assert!(!valid_key(&"k".repeat(256)));
        assert!(!valid_key("has space"));
        assert!(!valid_key("é"));
    }

    #[test]
    fn only_final_responses_are_stored() {
        assert!(storable(StatusCode::CREATED));
        assert!(storable(StatusCode::CONFLICT));
        assert!(storable(StatusCode::BAD_REQUEST));
        assert!(!storable(StatusCode::UNAUTHORIZED));
        assert!(!storable(StatusCode::TOO_MANY_REQUESTS));
        assert!(!storable(StatusCode::SERVICE_UNAVAILABLE));
    }
}
