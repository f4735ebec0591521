//! A webhook's deliveries: the log and one delivery's detail, and the deliveries its owner asks
//! for (a test, a resend, a replay).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use timetrack_domain::DomainError;
use timetrack_domain::delivery::attempt_request_headers;
use timetrack_domain::ids::EventId;
use timetrack_domain::masked::Masks;
use timetrack_domain::model::{DeliveryAttempt, DeliveryDetail, DeliveryRecord, ReplayOutcome};
use timetrack_domain::services::{DeliveryFilter, ReplayRequest};
use timetrack_domain::timefmt::rfc3339;

use crate::error::ApiError;
use crate::extract::{
    Caller, InvalidParams, JsonBody, JsonOrEmpty, QueryParams, Unread, body_time,
};
use crate::openapi::fields;
use crate::replica::ReadAfter;
use crate::routes::{WEBHOOK_ID, shown_delivery, webhook_id};
use crate::state::AppState;

/// A delivery as the log shows it (`D`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DeliveryObject {
    /// The delivery's id.
    id: String,
    /// The event (also the `webhook-id` header).
    event_id: String,
    event_type: &'static str,
    /// `event`, `replay`, `resend` or `test`.
    kind: &'static str,
    /// `PENDING`, `DELIVERED`, `FAILED` or `CANCELLED`.
    status: &'static str,
    /// Attempts made so far.
    attempts: i32,
    /// When the next attempt is due, while pending.
    next_attempt_at: Option<String>,
    last_attempt_at: Option<String>,
    last_status_code: Option<i32>,
    last_error: Option<String>,
    created_at: String,
    updated_at: String,
}

impl DeliveryObject {
    /// `d` as the log shows it, its id through the installation's `masks`.
    fn new(d: DeliveryRecord, masks: &Masks) -> Self {
        Self {
            id: d.id.shown(masks),
            event_id: d.event_id.to_string(),
            event_type: d.event_type.as_str(),
            kind: d.kind.as_str(),
            status: d.status.as_str(),
            attempts: d.attempts,
            next_attempt_at: d.next_attempt_at.map(rfc3339),
            last_attempt_at: d.last_attempt_at.map(rfc3339),
            last_status_code: d.last_status_code,
            last_error: d.last_error,
            created_at: rfc3339(d.created_at),
            updated_at: rfc3339(d.updated_at),
        }
    }
}

/// One HTTP attempt of a delivery.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AttemptObject {
    /// 1 for the first.
    number: i32,
    started_at: String,
    duration_ms: i32,
    /// The response's status code, null without a response.
    status_code: Option<i32>,
    /// What went wrong, null after a 2xx.
    error: Option<String>,
    /// The response body, cut to 1 KiB.
    response_body: Option<String>,
    /// True when the body was not UTF-8 text (an image, protobuf, a compressed body) or held
    /// NUL: each invalid sequence and each NUL is shown as U+FFFD in `response_body`.
    response_body_lossy: bool,
    /// The request's headers as sent, by lowercase name and in the order sent:
    /// `webhook-signature` with the signature of that attempt (the secret is never shown), then
    /// the webhook's custom headers as they were then, each value masked; the body sent is the
    /// delivery's `payload`. Null for an attempt recorded before signatures
    /// were kept.
    #[schema(value_type = Option<std::collections::BTreeMap<String, String>>)]
    request_headers: Option<SentHeaders>,
}

/// Headers as a JSON object whose members keep the order they were sent in.
#[derive(Debug)]
struct SentHeaders(timetrack_domain::delivery::Headers);

impl Serialize for SentHeaders {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(name, value)| (name, value)))
    }
}

impl AttemptObject {
    /// `a`, an attempt of `detail`, with the headers it was sent with.
    fn new(detail: &DeliveryDetail, a: &DeliveryAttempt) -> Self {
        Self {
            number: a.number,
            started_at: rfc3339(a.started_at),
            duration_ms: a.duration_ms,
            status_code: a.status_code,
            error: a.error.clone(),
            response_body: a.response_body.clone(),
            response_body_lossy: a.response_body_lossy,
            request_headers: attempt_request_headers(detail, a).map(SentHeaders),
        }
    }
}

/// A delivery with the exact body it sends and every attempt.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DeliveryDetailObject {
    #[serde(flatten)]
    delivery: DeliveryObject,
    /// The exact body sent, byte for byte.
    #[schema(schema_with = fields::event_payload)]
    payload: Box<RawValue>,
    /// Every attempt, first first.
    attempts_log: Vec<AttemptObject>,
}

impl DeliveryDetailObject {
    /// `d` with its exact body, its id through the installation's `masks`.
    fn new(d: DeliveryDetail, masks: &Masks) -> Result<Self, ApiError> {
        let payload = RawValue::from_string(d.payload.clone()).map_err(|e| {
            ApiError::from(DomainError::Unexpected(anyhow::anyhow!(
                "a stored event body is not JSON: {e}"
            )))
        })?;
        let attempts_log = d
            .attempts
            .iter()
            .map(|a| AttemptObject::new(&d, a))
            .collect();
        Ok(Self {
            delivery: DeliveryObject::new(d.record, masks),
            payload,
            attempts_log,
        })
    }
}

/// `{success: true, delivery: D}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DeliveryResponse {
    success: bool,
    delivery: DeliveryObject,
}

/// A page of the delivery log.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DeliveryPage {
    /// Newest first.
    data: Vec<DeliveryObject>,
    /// The cursor of the next page; null on the last.
    next_cursor: Option<String>,
}

/// `?status=&event_type=&event_id=&entity_id=&limit=&cursor=` of the delivery log.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveryLogQuery {
    /// Only deliveries with this status: `PENDING`, `DELIVERED`, `FAILED` or `CANCELLED` (empty:
    /// no filter).
    #[param(schema_with = fields::delivery_status)]
    status: Option<String>,
    /// Only deliveries of this event type.
    event_type: Option<String>,
    /// Only deliveries of this event (a UUID).
    event_id: Option<String>,
    /// Only deliveries of events about this entity: the time entry, client, project or invoice
    /// id that is their `webhook-ordering-key` (at most 100 characters).
    #[param(max_length = 100, pattern = r"^[^\u0000]*$")]
    entity_id: Option<String>,
    #[param(schema_with = fields::page_limit)]
    limit: Option<u32>,
    #[param(schema_with = fields::page_cursor)]
    cursor: Option<String>,
}

/// `GET .../webhooks/{id}/deliveries`: one page of the log, newest first.
#[utoipa::path(
    operation_id = "listWebhookDeliveries",
    get,
    path = "/api/integrations/automation/webhooks/{id}/deliveries",
    tag = "Webhooks",
    summary = "One's subscription's deliveries over the retention period, newest first",
    security(("bearer_auth" = [])),
    params(("id" = String, Path, pattern = "^wh_[A-Za-z0-9]{16,64}$", description = WEBHOOK_ID), DeliveryLogQuery),
    responses(
        (status = 200, description = "A page of deliveries, newest first", body = DeliveryPage),
        (status = 400, description = "Invalid status, event type, event id, entity id, limit or cursor", body = crate::openapi::ErrorBody),
        (status = 404, description = "Webhook not found", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn deliveries(
    state: web::Data<AppState>,
    caller: Caller,
    seen: ReadAfter,
    id: web::Path<String>,
    query: QueryParams<DeliveryLogQuery>,
) -> Result<web::Json<DeliveryPage>, ApiError> {
    let QueryParams(query) = query;
    let webhook = webhook_id(&id)?;
    let (records, next_cursor) = crate::read_lagging!(state, &caller.0, seen, |s| {
        s.webhooks
            .deliveries(
                &caller.0,
                &webhook,
                DeliveryFilter {
                    status: query.status.clone(),
                    event_type: query.event_type.clone(),
                    event_id: query.event_id.clone(),
                    entity_id: query.entity_id.clone(),
                    limit: query.limit,
                    cursor: query.cursor.clone(),
                },
            )
            .await
    })?;
    Ok(web::Json(DeliveryPage {
        data: records
            .into_iter()
            .map(|d| DeliveryObject::new(d, state.webhooks.masks()))
            .collect(),
        next_cursor,
    }))
}

/// A delivery of an event to one of the caller's webhooks: `D` and the webhook's id.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EventDeliveryObject {
    /// The webhook it goes to (`wh_...`).
    webhook_id: String,
    #[serde(flatten)]
    delivery: DeliveryObject,
}

/// The deliveries of one event.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EventDeliveries {
    /// Newest first, at most 200.
    data: Vec<EventDeliveryObject>,
}

/// `GET .../events/{id}/deliveries`: what became of one event across the caller's own webhooks.
#[utoipa::path(
    operation_id = "listEventDeliveries",
    get,
    path = "/api/integrations/automation/events/{id}/deliveries",
    tag = "Webhooks",
    summary = "An event's deliveries to one's own webhooks, newest first",
    security(("bearer_auth" = [])),
    params(("id" = String, Path, format = Uuid, description = "The event's id (also the `webhook-id` header of its deliveries)")),
    responses(
        (status = 200, description = "Its deliveries to the caller's webhooks that are not deleted, newest first (at most 200; none when none of them took it)", body = EventDeliveries),
        (status = 404, description = "Event not found (not of the caller's workspace, or not shown to them)", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn event_deliveries(
    state: web::Data<AppState>,
    caller: Caller,
    seen: ReadAfter,
    id: web::Path<String>,
) -> Result<web::Json<EventDeliveries>, ApiError> {
    let event = id
        .parse::<uuid::Uuid>()
        .map(EventId)
        .map_err(|_| DomainError::NotFound("event"))?;
    let found = crate::read_lagging!(state, &caller.0, seen, |s| {
        s.webhooks.event_deliveries(&caller.0, event).await
    })?;
    Ok(web::Json(EventDeliveries {
        data: found
            .into_iter()
            .map(|(webhook, d)| EventDeliveryObject {
                webhook_id: webhook.to_string(),
                delivery: DeliveryObject::new(d, state.webhooks.masks()),
            })
            .collect(),
    }))
}

/// `GET .../webhooks/{id}/deliveries/{delivery_id}`: one delivery, its body and attempts.
#[utoipa::path(
    operation_id = "getWebhookDelivery",
    get,
    path = "/api/integrations/automation/webhooks/{id}/deliveries/{delivery_id}",
    tag = "Webhooks",
    summary = "One delivery of one's subscription: the exact body and every attempt",
    security(("bearer_auth" = [])),
    params(
        ("id" = String, Path, pattern = "^wh_[A-Za-z0-9]{16,64}$", description = WEBHOOK_ID),
        ("delivery_id" = String, Path, pattern = "^[1-9][0-9]{0,18}$", description = "The delivery's `id` (another webhook's, unknown or malformed: 404)")
    ),
    responses(
        (status = 200, description = "The delivery", body = DeliveryDetailObject),
        (status = 404, description = "Webhook not found, or Delivery not found", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn delivery(
    state: web::Data<AppState>,
    caller: Caller,
    seen: ReadAfter,
    path: web::Path<(String, String)>,
) -> Result<web::Json<DeliveryDetailObject>, ApiError> {
    let (id, delivery) = path.into_inner();
    let webhook = webhook_id(&id)?;
    let on = AppState::serving(&state, &caller.0, seen);
    let delivery = shown_delivery(&on, &caller.0, &webhook, &delivery).await?;
    let detail = crate::read_lagging!(state, &caller.0, seen, |s| {
        s.webhooks.delivery(&caller.0, &webhook, delivery).await
    })?;
    Ok(web::Json(DeliveryDetailObject::new(
        detail,
        state.webhooks.masks(),
    )?))
}

/// Body of `POST .../webhooks/{id}/test` (optional; other fields are not read).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
pub struct TestBody {
    #[serde(default)]
    #[schema(schema_with = fields::test_event_type)]
    event_type: Option<String>,
}

/// `POST .../webhooks/{id}/test`: 202 with the queued test delivery.
#[utoipa::path(
    operation_id = "testWebhook",
    post,
    path = "/api/integrations/automation/webhooks/{id}/test",
    tag = "Webhooks",
    summary = "Send one signed test delivery: WEBHOOK_TEST, or a chosen type's sample (also to a disabled webhook)",
    security(("bearer_auth" = [])),
    params(("id" = String, Path, pattern = "^wh_[A-Za-z0-9]{16,64}$", description = WEBHOOK_ID)),
    request_body(content = TestBody, description = "Optional (made so in `openapi::finish`)"),
    responses(
        (status = 202, description = "Queued: one attempt, no retry; its outcome is in the delivery log", body = DeliveryResponse),
        (status = 400, description = "Invalid request parameters, or Invalid event type: X", body = crate::openapi::ErrorBody),
        (status = 403, description = "An invoice event type, for a member", body = crate::openapi::ErrorBody),
        (status = 404, description = "Webhook not found", body = crate::openapi::ErrorBody),
        (status = 409, description = "API key revoked", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn test(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    body: JsonOrEmpty<TestBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let record = state
        .webhooks
        .test(&caller.0, &webhook_id(&id)?, body.event_type.as_deref())
        .await?;
    tracing::info!(webhook_id = %id, delivery_id = record.id.0, "webhook test queued");
    Ok(
        HttpResponse::build(StatusCode::ACCEPTED).json(DeliveryResponse {
            success: true,
            delivery: DeliveryObject::new(record, state.webhooks.masks()),
        }),
    )
}

/// `POST .../webhooks/{id}/deliveries/{delivery_id}/resend`: 202 with the new delivery.
#[utoipa::path(
    operation_id = "resendWebhookDelivery",
    post,
    path = "/api/integrations/automation/webhooks/{id}/deliveries/{delivery_id}/resend",
    tag = "Webhooks",
    summary = "Deliver one delivery's event again (same webhook-id, fresh retries)",
    security(("bearer_auth" = [])),
    params(
        ("id" = String, Path, pattern = "^wh_[A-Za-z0-9]{16,64}$", description = WEBHOOK_ID),
        ("delivery_id" = String, Path, pattern = "^[1-9][0-9]{0,18}$", description = "The delivery's `id` (another webhook's, unknown or malformed: 404)")
    ),
    responses(
        (status = 202, description = "Queued", body = DeliveryResponse),
        (status = 404, description = "Webhook not found, or Delivery not found", body = crate::openapi::ErrorBody),
        (status = 409, description = "Webhook is disabled", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn resend(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
    _body: JsonOrEmpty<Unread>,
) -> Result<HttpResponse, ApiError> {
    let (id, delivery) = path.into_inner();
    let webhook = webhook_id(&id)?;
    let delivery = shown_delivery(&state, &caller.0, &webhook, &delivery).await?;
    let record = state.webhooks.resend(&caller.0, &webhook, delivery).await?;
    tracing::info!(webhook_id = %id, delivery_id = record.id.0, "delivery resend queued");
    Ok(
        HttpResponse::build(StatusCode::ACCEPTED).json(DeliveryResponse {
            success: true,
            delivery: DeliveryObject::new(record, state.webhooks.masks()),
        }),
    )
}

/// Body of `POST .../webhooks/{id}/replay`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayBody {
    #[schema(schema_with = fields::replay_since)]
    since: String,
    #[schema(schema_with = fields::replay_until)]
    #[serde(default)]
    until: Option<String>,
    /// Only the events the webhook has not received with a 2xx (failed, cancelled, never
    /// queued); pending ones are skipped. Default true.
    #[serde(default)]
    only_failed: Option<bool>,
}

/// What a replay queued.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ReplayResponse {
    success: bool,
    /// Deliveries queued.
    queued: u64,
    /// More events of the window remain (at most 10,000 a call).
    truncated: bool,
    /// Where to continue when truncated (the next call's `since`); null otherwise.
    next_since: Option<String>,
}

impl From<ReplayOutcome> for ReplayResponse {
    fn from(o: ReplayOutcome) -> Self {
        Self {
            success: true,
            queued: o.queued,
            truncated: o.truncated,
            next_since: o.next_since.map(rfc3339),
        }
    }
}

/// `POST .../webhooks/{id}/replay`: 202 with what was queued.
#[utoipa::path(
    operation_id = "replayWebhook",
    post,
    path = "/api/integrations/automation/webhooks/{id}/replay",
    tag = "Webhooks",
    summary = "Queue again the events of a time window (only the failed ones by default)",
    security(("bearer_auth" = [])),
    params(("id" = String, Path, pattern = "^wh_[A-Za-z0-9]{16,64}$", description = WEBHOOK_ID)),
    request_body = ReplayBody,
    responses(
        (status = 202, description = "Queued, oldest first", body = ReplayResponse),
        (status = 400, description = "Invalid request parameters, or since is older than the retained events", body = crate::openapi::ErrorBody),
        (status = 404, description = "Webhook not found", body = crate::openapi::ErrorBody),
        (status = 409, description = "Webhook is disabled", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn replay(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    body: JsonBody<ReplayBody, InvalidParams>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let request = ReplayRequest {
        since: body_time("since", &body.since)?,
        until: body
            .until
            .as_deref()
            .map(|u| body_time("until", u))
            .transpose()?,
        only_failed: body.only_failed.unwrap_or(true),
    };
    let outcome = state
        .webhooks
        .replay(&caller.0, &webhook_id(&id)?, request)
        .await?;
    tracing::info!(webhook_id = %id, queued = outcome.queued, "webhook replay queued");
    Ok(HttpResponse::build(StatusCode::ACCEPTED).json(ReplayResponse::from(outcome)))
}
