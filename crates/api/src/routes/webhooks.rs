//! The integration surface's webhooks: subscribe, read, change, delete, list, and the delivery
//! log.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use timetrack_domain::DomainError;
use timetrack_domain::model::{DeliveryRecord, Subscription, WebhookHealth};
use timetrack_domain::services::webhooks::{INVALID_URL, REQUIRED};
use timetrack_domain::services::{NewSubscription, WebhookChange};
use timetrack_domain::timefmt::rfc3339;

use crate::error::ApiError;
use crate::extract::{BodyRejection, Caller, InvalidParams, JsonBody};
use crate::openapi::fields;
use crate::state::AppState;

/// A subscribe body that is not a JSON object cannot carry a URL and events.
#[derive(Debug)]
pub struct MissingUrlOrEvents;

impl BodyRejection for MissingUrlOrEvents {
    fn rejection(detail: String) -> ApiError {
        ApiError::bad_request(REQUIRED).with_detail(detail)
    }
}

/// The `detail` of a body without a usable `events`.
const EVENTS_DETAIL: &str = "events must be a non-empty array of event names";

/// Reads the subscribe body, in the order the published messages imply: presence of `url` and a
/// non-empty `events` array first, then the URL's type, then each event's.
fn parse_subscribe(body: &Value) -> Result<NewSubscription, ApiError> {
    let obj = body.as_object().ok_or_else(|| {
        ApiError::bad_request(REQUIRED)
            .with_detail("the body must be a JSON object with url and events")
    })?;
    let url = obj.get("url").filter(|v| !v.is_null());
    let events = match obj.get("events") {
        Some(Value::Array(items)) if !items.is_empty() => items,
        _ => return Err(ApiError::bad_request(REQUIRED).with_detail(EVENTS_DETAIL)),
    };
    let url = match url {
        None => return Err(ApiError::bad_request(REQUIRED).with_detail("url is required")),
        Some(Value::String(url)) => url.clone(),
        Some(_) => {
            return Err(ApiError::bad_request(INVALID_URL)
                .with_detail("url must be a string: an absolute https:// URL"));
        }
    };
    let events = events
        .iter()
        .map(|e| match e {
            Value::String(name) => Ok(name.clone()),
            other => Err(DomainError::validation(format!("Invalid event type: {other}")).into()),
        })
        .collect::<Result<Vec<String>, ApiError>>()?;
    let description = match obj.get("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) => Some(d.clone()),
        Some(_) => return Err(ApiError::bad_request("description must be a string")),
    };
    Ok(NewSubscription {
        url,
        events,
        description,
    })
}

fn event_names(subscription: &Subscription) -> Vec<&'static str> {
    subscription.events.iter().map(|e| e.as_str()).collect()
}

/// `POST .../webhooks/subscribe`: 201 `{success, webhook: {id, url, events, status, secret}}`.
#[utoipa::path(
    operation_id = "subscribeWebhook",
    post,
    path = "/api/integrations/automation/webhooks/subscribe",
    tag = "Webhooks",
    summary = "Subscribe a URL to events",
    security(("bearer_auth" = [])),
    request_body = crate::openapi::SubscribeBody,
    responses(
        (status = 201, description = "Subscribed; the secret is shown only here", body = crate::openapi::SubscribeResponse),
        (status = 400, description = "Invalid URL format, URL and events array are required, or Invalid event type", body = crate::openapi::ErrorBody),
        (status = 409, description = "Subscription limit reached", body = crate::openapi::ErrorBody),
        (status = 500, description = "Internal server error", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn subscribe(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonBody<Value, MissingUrlOrEvents>,
) -> Result<HttpResponse, ApiError> {
    let new = parse_subscribe(&body.into_inner())?;
    let subscription = state.webhooks.subscribe(&caller.0, new).await?;
    tracing::info!(webhook_id = %subscription.id, user_id = %caller.0.user_id, "webhook subscribed");
    Ok(HttpResponse::build(StatusCode::CREATED).json(json!({
        "success": true,
        "webhook": {
            "id": subscription.id.as_str(),
            "url": subscription.url,
            "events": event_names(&subscription),
            "status": subscription.status.as_str(),
            "secret": subscription.secret,
        }
    })))
}

/// `DELETE .../webhooks/{id}`: 200 `{success: true}`, also for one's already-deleted webhook;
/// 404 `Webhook not found` for an unknown, malformed or another user's id.
#[utoipa::path(
    operation_id = "deleteWebhook",
    delete,
    path = "/api/integrations/automation/webhooks/{id}",
    tag = "Webhooks",
    summary = "Delete one's subscription (idempotent)",
    security(("bearer_auth" = [])),
    params(("id" = String, Path, pattern = "^wh_[A-Za-z0-9]{16,64}$", description = "`wh_...` (a malformed one is 404, like an unknown one)")),
    responses(
        (status = 200, description = "Deleted (or already deleted)", body = crate::openapi::SuccessBody),
        (status = 404, description = "Webhook not found", body = crate::openapi::ErrorBody),
        (status = 500, description = "Failed to delete webhook", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn delete(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state
        .webhooks
        .delete(&caller.0, &id)
        .await
        .map_err(|e| match e {
            DomainError::NotFound(_) => ApiError::from(e),
            other => ApiError::internal("Failed to delete webhook")(other),
        })?;
    tracing::info!(
        webhook_id = %id,
        user_id = %caller.0.user_id,
        workspace_id = %caller.0.workspace_id,
        "webhook deleted"
    );
    Ok(HttpResponse::Ok().json(json!({ "success": true })))
}

/// A webhook as the API shows it (`W`): never its secret.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookObject {
    id: String,
    url: String,
    events: Vec<&'static str>,
    /// `ACTIVE` or `DISABLED`.
    status: &'static str,
    description: Option<String>,
    /// The subscription's filters; `{}` when none.
    #[schema(value_type = Object)]
    filters: Value,
    created_at: String,
    updated_at: String,
    /// `{previous_expires_at}` while a previous secret still signs, else null.
    secret_rotation: Option<SecretRotation>,
    health: HealthObject,
}

/// While a previous secret still signs.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SecretRotation {
    previous_expires_at: String,
}

/// How a webhook is doing.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HealthObject {
    /// `unknown` (no attempt yet), `healthy` (the last attempt succeeded), `failing` (it failed)
    /// or `disabled`.
    state: &'static str,
    consecutive_failures: u64,
    last_attempt_at: Option<String>,
    last_success_at: Option<String>,
    last_failure_at: Option<String>,
    last_status_code: Option<i32>,
    last_error: Option<String>,
    /// The first failure of the current streak.
    failing_since: Option<String>,
    pending_deliveries: u64,
}

impl WebhookObject {
    fn new(subscription: Subscription, health: WebhookHealth) -> Self {
        let at = |t: Option<time::OffsetDateTime>| t.map(rfc3339);
        let facts = health.attempts;
        Self {
            events: event_names(&subscription),
            id: subscription.id.to_string(),
            url: subscription.url,
            status: subscription.status.as_str(),
            description: subscription.description,
            filters: json!({}),
            created_at: rfc3339(subscription.created_at),
            updated_at: rfc3339(subscription.updated_at),
            secret_rotation: None,
            health: HealthObject {
                state: health.state.as_str(),
                consecutive_failures: facts.consecutive_failures,
                last_attempt_at: at(facts.last_attempt_at),
                last_success_at: at(facts.last_success_at),
                last_failure_at: at(facts.last_failure_at),
                last_status_code: facts.last_status_code,
                last_error: facts.last_error,
                failing_since: at(facts.failing_since),
                pending_deliveries: facts.pending_deliveries,
            },
        }
    }
}

/// `GET .../webhooks`: the caller's own subscriptions that are not deleted, newest first.
#[utoipa::path(
    operation_id = "listWebhooks",
    get,
    path = "/api/integrations/automation/webhooks",
    tag = "Webhooks",
    summary = "List one's own subscriptions, with their health",
    security(("bearer_auth" = [])),

    responses(
        (status = 200, description = "The caller's subscriptions, newest first, without secrets", body = WebhookList),
        crate::openapi::AuthErrors
    )
)]
pub async fn list(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let webhooks: Vec<WebhookObject> = state
        .webhooks
        .list(&caller.0)
        .await?
        .into_iter()
        .map(|(subscription, health)| WebhookObject::new(subscription, health))
        .collect();
    Ok(HttpResponse::Ok().json(WebhookList {
        success: true,
        webhooks,
    }))
}

/// `{success: true, webhook: W}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookResponse {
    /// True.
    pub success: bool,
    /// The webhook.
    pub webhook: WebhookObject,
}

/// `GET .../webhooks/{id}`: one's own webhook with its health.
#[utoipa::path(
    operation_id = "getWebhook",
    get,
    path = "/api/integrations/automation/webhooks/{id}",
    tag = "Webhooks",
    summary = "Get one's subscription, with its health",
    security(("bearer_auth" = [])),
    params(("id" = String, Path, pattern = "^wh_[A-Za-z0-9]{16,64}$", description = "`wh_...` (a malformed one is 404, like an unknown one)")),
    responses(
        (status = 200, description = "The webhook", body = WebhookResponse),
        (status = 404, description = "Webhook not found", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn get(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<web::Json<WebhookResponse>, ApiError> {
    let (subscription, health) = state.webhooks.get(&caller.0, &id).await?;
    Ok(web::Json(WebhookResponse {
        success: true,
        webhook: WebhookObject::new(subscription, health),
    }))
}

/// Body of `PATCH .../webhooks/{id}`: any of these fields.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct WebhookPatchBody {
    /// A new absolute `https://` URL.
    #[schema(schema_with = fields::webhook_url)]
    url: Option<Value>,
    /// New event names (not empty).
    #[schema(schema_with = fields::events)]
    events: Option<Value>,
    /// A new label, or null to clear it.
    #[schema(schema_with = fields::webhook_description)]
    description: Option<Value>,
    /// Filters; only `{}` (none) is accepted by this version.
    #[schema(value_type = Option<Object>)]
    filters: Option<Value>,
}

/// Reads a PATCH body: an object of the known fields only, each of the type subscribe takes.
fn parse_change(body: Value) -> Result<WebhookChange, ApiError> {
    let invalid = || ApiError::bad_request("Invalid request parameters");
    let Value::Object(fields) = body else {
        return Err(invalid().with_detail("the body must be a JSON object"));
    };
    if let Some(unknown) = fields
        .keys()
        .find(|k| !["url", "events", "description", "filters"].contains(&k.as_str()))
    {
        return Err(invalid().with_detail(format!("unknown field {unknown}")));
    }
    let body = WebhookPatchBody {
        url: fields.get("url").cloned(),
        events: fields.get("events").cloned(),
        description: fields.get("description").cloned(),
        filters: fields.get("filters").cloned(),
    };
    let events = match body.events {
        None => None,
        Some(Value::Array(items)) if !items.is_empty() => Some(
            items
                .iter()
                .map(|e| match e {
                    Value::String(name) => Ok(name.clone()),
                    other => Err(DomainError::validation(format!(
                        "Invalid event type: {other}"
                    ))),
                })
                .collect::<Result<Vec<String>, DomainError>>()?,
        ),
        Some(_) => return Err(ApiError::bad_request(REQUIRED).with_detail(EVENTS_DETAIL)),
    };
    // After the events, as subscribe reads them; a null URL is a missing one.
    let url = match body.url {
        None => None,
        Some(Value::Null) => {
            return Err(ApiError::bad_request(REQUIRED).with_detail("url must not be null"));
        }
        Some(Value::String(url)) => Some(url),
        Some(_) => {
            return Err(ApiError::bad_request(INVALID_URL)
                .with_detail("url must be a string: an absolute https:// URL"));
        }
    };
    let description = match body.description {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::String(d)) => Some(Some(d)),
        Some(_) => return Err(ApiError::bad_request("description must be a string")),
    };
    match body.filters {
        None => {}
        Some(Value::Object(filters)) if filters.is_empty() => {}
        Some(Value::Object(filters)) => {
            let name = filters.keys().next().cloned().unwrap_or_default();
            return Err(DomainError::validation(format!(
                "Invalid filter: {name} (this version accepts no filters, only {{}})"
            ))
            .into());
        }
        Some(_) => return Err(invalid().with_detail("filters must be an object")),
    }
    Ok(WebhookChange {
        url,
        events,
        description,
    })
}

/// `PATCH .../webhooks/{id}`: 200 `{success: true, webhook: W}`.
#[utoipa::path(
    operation_id = "updateWebhook",
    patch,
    path = "/api/integrations/automation/webhooks/{id}",
    tag = "Webhooks",
    summary = "Change one's subscription: url, events, description",
    security(("bearer_auth" = [])),
    params(("id" = String, Path, pattern = "^wh_[A-Za-z0-9]{16,64}$", description = "`wh_...` (a malformed one is 404, like an unknown one)")),
    request_body = WebhookPatchBody,
    responses(
        (status = 200, description = "The changed webhook", body = WebhookResponse),
        (status = 400, description = "Invalid URL format, URL and events array are required, Invalid event type, Invalid filter or Invalid request parameters", body = crate::openapi::ErrorBody),
        (status = 404, description = "Webhook not found", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn update(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    body: JsonBody<Value, InvalidParams>,
) -> Result<web::Json<WebhookResponse>, ApiError> {
    let change = parse_change(body.into_inner())?;
    let (subscription, health) = state.webhooks.update(&caller.0, &id, change).await?;
    tracing::info!(webhook_id = %subscription.id, user_id = %caller.0.user_id, "webhook changed");
    Ok(web::Json(WebhookResponse {
        success: true,
        webhook: WebhookObject::new(subscription, health),
    }))
}

/// Body of `POST .../webhooks/{id}/enable` (optional), for the OpenAPI document: the handler
/// reads the body itself, to accept none at all.
#[derive(Debug, utoipa::ToSchema)]
#[expect(dead_code, reason = "describes the body in the OpenAPI document only")]
pub struct EnableBody {
    /// Replaying missed events is not available in this version: a request naming it is 400.
    #[schema(value_type = Option<String>, format = DateTime)]
    replay_since: Option<Value>,
}

/// `POST .../webhooks/{id}/enable`: a `DISABLED` webhook becomes `ACTIVE`, its failure streak
/// cleared; an `ACTIVE` one is left as it is.
#[utoipa::path(
    operation_id = "enableWebhook",
    post,
    path = "/api/integrations/automation/webhooks/{id}/enable",
    tag = "Webhooks",
    summary = "Enable one's disabled subscription again",
    security(("bearer_auth" = [])),
    params(("id" = String, Path, pattern = "^wh_[A-Za-z0-9]{16,64}$", description = "`wh_...` (a malformed one is 404, like an unknown one)")),
    request_body(content = Option<EnableBody>, description = "Optional; `replay_since` is not available in this version"),
    responses(
        (status = 200, description = "The webhook, active", body = WebhookResponse),
        (status = 400, description = "Invalid request parameters", body = crate::openapi::ErrorBody),
        (status = 404, description = "Webhook not found", body = crate::openapi::ErrorBody),
        (status = 409, description = "API key revoked, or Subscription limit reached", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn enable(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    body: web::Bytes,
) -> Result<web::Json<WebhookResponse>, ApiError> {
    let invalid = || ApiError::bad_request("Invalid request parameters");
    if !body.iter().all(u8::is_ascii_whitespace) {
        let value: Value = serde_json::from_slice(&body)
            .map_err(|e| invalid().with_detail(format!("the body is not JSON: {e}")))?;
        let Value::Object(fields) = value else {
            return Err(invalid().with_detail("the body must be a JSON object"));
        };
        if let Some(name) = fields.keys().next() {
            let detail = if name == "replay_since" {
                "replay_since: replaying missed events is not available in this version".into()
            } else {
                format!("unknown field {name}")
            };
            return Err(invalid().with_detail(detail));
        }
    }
    let (subscription, health) = state.webhooks.enable(&caller.0, &id).await?;
    tracing::info!(webhook_id = %subscription.id, user_id = %caller.0.user_id, "webhook enabled");
    Ok(web::Json(WebhookResponse {
        success: true,
        webhook: WebhookObject::new(subscription, health),
    }))
}

/// One hour of a webhook's attempts.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StatsBucket {
    /// The hour's start (UTC).
    start: String,
    /// Attempts answered with a 2xx.
    delivered: u64,
    /// Other attempts.
    failed: u64,
    /// Median duration in milliseconds; null for an hour without attempts.
    p50_ms: Option<u32>,
    /// 95th-percentile duration in milliseconds; null for an hour without attempts.
    p95_ms: Option<u32>,
}

/// 24 hourly buckets, oldest first, ending with the current hour.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StatsResponse {
    buckets: Vec<StatsBucket>,
}

/// `GET .../webhooks/{id}/stats`: one's webhook's attempts over the last 24 hours, by hour.
#[utoipa::path(
    operation_id = "getWebhookStats",
    get,
    path = "/api/integrations/automation/webhooks/{id}/stats",
    tag = "Webhooks",
    summary = "One's subscription's attempts over the last 24 hours, by hour",
    security(("bearer_auth" = [])),
    params(("id" = String, Path, pattern = "^wh_[A-Za-z0-9]{16,64}$", description = "`wh_...` (a malformed one is 404, like an unknown one)")),
    responses(
        (status = 200, description = "24 hourly buckets, oldest first", body = StatsResponse),
        (status = 404, description = "Webhook not found", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn stats(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<web::Json<StatsResponse>, ApiError> {
    let buckets = state
        .webhooks
        .stats(&caller.0, &id)
        .await?
        .into_iter()
        .map(|hour| StatsBucket {
            start: rfc3339(hour.start),
            delivered: hour.delivered,
            failed: hour.failed,
            p50_ms: hour.p50_ms,
            p95_ms: hour.p95_ms,
        })
        .collect();
    Ok(web::Json(StatsResponse { buckets }))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DeliveryItem {
    event_id: String,
    event_type: &'static str,
    status: String,
    attempts: i32,
    last_status_code: Option<i32>,
    last_error: Option<String>,
    next_attempt_at: String,
    created_at: String,
    updated_at: String,
}

impl From<DeliveryRecord> for DeliveryItem {
    fn from(d: DeliveryRecord) -> Self {
        Self {
            event_id: d.event_id.to_string(),
            event_type: d.event_type.as_str(),
            status: d.status,
            attempts: d.attempts,
            last_status_code: d.last_status_code,
            last_error: d.last_error,
            next_attempt_at: rfc3339(d.next_attempt_at),
            created_at: rfc3339(d.created_at),
            updated_at: rfc3339(d.updated_at),
        }
    }
}

/// `GET .../webhooks/{id}/deliveries`: the last 7 days, newest first.
#[utoipa::path(
    operation_id = "listWebhookDeliveries",
    get,
    path = "/api/integrations/automation/webhooks/{id}/deliveries",
    tag = "Webhooks",
    summary = "The last 7 days of a subscription's deliveries",
    security(("bearer_auth" = [])),
    params(("id" = String, Path, pattern = "^wh_[A-Za-z0-9]{16,64}$", description = "`wh_...` (a malformed one is 404, like an unknown one)")),
    responses(
        (status = 200, description = "Deliveries, newest first", body = DeliveryList),
        (status = 404, description = "Webhook not found", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn deliveries(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let items: Vec<DeliveryItem> = state
        .webhooks
        .deliveries(&caller.0, &id)
        .await?
        .into_iter()
        .map(DeliveryItem::from)
        .collect();
    Ok(HttpResponse::Ok().json(DeliveryList {
        success: true,
        deliveries: items,
    }))
}

/// The caller's own subscriptions.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookList {
    /// True.
    pub success: bool,
    /// Newest first.
    pub webhooks: Vec<WebhookObject>,
}

/// A subscription's recent deliveries.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DeliveryList {
    /// True.
    pub success: bool,
    /// Newest first.
    pub deliveries: Vec<DeliveryItem>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(body: &Value) -> String {
        match parse_subscribe(body) {
            Err(ApiError::Status { message, .. }) => message.to_owned(),
            Err(ApiError::Domain(DomainError::Validation(m))) => m,
            Err(ApiError::Domain(DomainError::Invalid { message, .. })) => message.to_owned(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn presence_is_checked_before_types() {
        assert_eq!(message(&json!({})), REQUIRED);
        assert_eq!(message(&json!({"url": "https://x.io"})), REQUIRED);
        assert_eq!(message(&json!({"events": ["CLIENT_CREATED"]})), REQUIRED);
        assert_eq!(
            message(&json!({"url": null, "events": ["CLIENT_CREATED"]})),
            REQUIRED
        );
        assert_eq!(
            message(&json!({"url": "https://x.io", "events": []})),
            REQUIRED
        );
        assert_eq!(
            message(&json!({"url": "https://x.io", "events": "CLIENT_CREATED"})),
            REQUIRED
        );
        assert_eq!(
            message(&json!({"url": 5, "events": ["CLIENT_CREATED"]})),
            INVALID_URL
        );
        assert_eq!(
            message(&json!({"url": "https://x.io", "events": [7]})),
            "Invalid event type: 7"
        );
        assert_eq!(
            message(
                &json!({"url": "https://x.io", "events": ["CLIENT_CREATED"], "description": 1})
            ),
            "description must be a string"
        );
        assert_eq!(message(&json!(["url", "events"])), REQUIRED);
    }
}
