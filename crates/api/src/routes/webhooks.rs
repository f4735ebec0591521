//! The integration surface's webhooks: subscribe, read, change, enable, rotate the secret,
//! delete, list, and the hourly statistics.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use timetrack_domain::DomainError;
use timetrack_domain::ids::{ClientId, ProjectId, UserId};
use timetrack_domain::model::custom_headers::INVALID_HEADERS;
use timetrack_domain::model::webhook::MAX_FILTER_IDS;
use timetrack_domain::model::{
    CustomHeaders, ReplayOutcome, Subscription, SubscriptionFilters, WebhookHealth,
};
use timetrack_domain::services::webhooks::{INVALID_URL, REQUIRED};
use timetrack_domain::services::{NewSubscription, WebhookChange};
use timetrack_domain::timefmt::rfc3339;

use crate::error::ApiError;
use crate::extract::{
    BodyRejection, Caller, Given, InvalidParams, JsonBody, JsonOrEmpty, QueryParams, Unread,
    WholeNumber, body_time, nullable,
};
use crate::openapi::SuccessBody;
use crate::openapi::fields;
use crate::routes::{WEBHOOK_ID, webhook_id};
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

// Each field is taken as it came (`Given`) and converted once into the domain's
// `NewSubscription`, in the order the published messages imply: presence of `url` and a non-empty
// `events` array first, then the URL's type, then each event's. Fields not named here are ignored.
/// Body of the subscribe request.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
pub struct SubscribeBody {
    /// HTTPS destination of deliveries; null is a missing one.
    #[serde(default)]
    #[schema(schema_with = fields::webhook_url, required = true)]
    url: Option<Given<String>>,
    /// The event names.
    #[serde(default)]
    #[schema(schema_with = fields::events, required = true)]
    events: Option<Given<Vec<Given<String>>>>,
    /// Optional label.
    #[serde(default)]
    #[schema(schema_with = fields::webhook_description)]
    description: Option<Given<String>>,
    /// Optional filters, read in the order given ([`parse_filters`]).
    #[serde(default)]
    #[schema(schema_with = fields::filters)]
    filters: Option<Value>,
    /// Optional custom headers sent with every delivery ([`parse_headers`]).
    #[serde(default)]
    #[schema(schema_with = fields::webhook_headers)]
    headers: Option<Value>,
}

impl SubscribeBody {
    /// The body of a request that parsed as JSON: an object (anything else cannot carry a URL and
    /// events).
    fn of(body: &Value) -> Result<Self, ApiError> {
        let not_an_object = || {
            ApiError::bad_request(REQUIRED)
                .with_detail("the body must be a JSON object with url and events")
        };
        if !body.is_object() {
            return Err(not_an_object());
        }
        Self::deserialize(body).map_err(|_| not_an_object())
    }
}

/// The event names of a body's `events`: `None` when missing, null, not an array or empty; a
/// name that is not a string is `Invalid event type: <its JSON>`.
fn event_names_given(
    events: Option<Given<Vec<Given<String>>>>,
) -> Option<Result<Vec<String>, ApiError>> {
    match events {
        Some(Given::Valid(items)) if !items.is_empty() => Some(
            items
                .into_iter()
                .map(|item| match item {
                    Given::Valid(name) => Ok(name),
                    Given::Invalid(other) => {
                        Err(DomainError::validation(format!("Invalid event type: {other}")).into())
                    }
                })
                .collect(),
        ),
        _ => None,
    }
}

/// A URL that is not a string.
/// A description as given: text, or 400 `description must be a string`.
fn description_given(given: Given<String>) -> Result<String, ApiError> {
    match given {
        Given::Valid(text) => Ok(text),
        Given::Invalid(_) => Err(ApiError::bad_request("description must be a string")),
    }
}

fn url_not_a_string() -> ApiError {
    ApiError::bad_request(INVALID_URL).with_detail("url must be a string: an absolute https:// URL")
}

impl TryFrom<SubscribeBody> for NewSubscription {
    type Error = ApiError;

    fn try_from(body: SubscribeBody) -> Result<Self, ApiError> {
        let Some(events) = event_names_given(body.events) else {
            return Err(ApiError::bad_request(REQUIRED).with_detail(EVENTS_DETAIL));
        };
        let url = match body.url {
            None => return Err(ApiError::bad_request(REQUIRED).with_detail("url is required")),
            Some(Given::Valid(url)) => url,
            Some(Given::Invalid(_)) => return Err(url_not_a_string()),
        };
        let events = events?;
        let description = body.description.map(description_given).transpose()?;
        let filters = match body.filters {
            None => SubscriptionFilters::default(),
            Some(value) => parse_filters(&value)?,
        };
        let headers = match body.headers {
            None => Vec::new(),
            Some(value) => parse_headers(value)?,
        };
        Ok(NewSubscription {
            url,
            events,
            description,
            filters,
            headers,
        })
    }
}

/// Reads a `filters` object (`events.md` section 3): `project_ids`, `client_ids`, `user_ids`
/// (arrays of 1 to 100 UUIDs; duplicates collapse) and `billable` (true or false); a null one is
/// no such filter. Anything else is 400 `Invalid filter: ...` naming the filter. Whether each
/// applies to the listed events, and whether its ids are the workspace's, the service checks.
fn parse_filters(value: &Value) -> Result<SubscriptionFilters, ApiError> {
    let invalid =
        |what: String| ApiError::from(DomainError::validation(format!("Invalid filter: {what}")));
    let Value::Object(given) = value else {
        return Err(invalid("filters (must be an object)".into()));
    };
    let ids = |name: &str, value: &Value| -> Result<Option<Vec<uuid::Uuid>>, ApiError> {
        let items = match value {
            Value::Null => return Ok(None),
            Value::Array(items) if (1..=MAX_FILTER_IDS).contains(&items.len()) => items,
            _ => {
                return Err(invalid(format!(
                    "{name} (must be an array of 1 to {MAX_FILTER_IDS} ids)"
                )));
            }
        };
        let mut ids: Vec<uuid::Uuid> = Vec::with_capacity(items.len());
        for item in items {
            let id = item
                .as_str()
                .and_then(|text| uuid::Uuid::parse_str(text).ok())
                .ok_or_else(|| invalid(format!("{name} ({item} is not an id)")))?;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        Ok(Some(ids))
    };
    let mut filters = SubscriptionFilters::default();
    for (name, value) in given {
        match name.as_str() {
            "project_ids" => {
                filters.project_ids =
                    ids(name, value)?.map(|v| v.into_iter().map(ProjectId).collect());
            }
            "client_ids" => {
                filters.client_ids =
                    ids(name, value)?.map(|v| v.into_iter().map(ClientId).collect());
            }
            "user_ids" => {
                filters.user_ids = ids(name, value)?.map(|v| v.into_iter().map(UserId).collect());
            }
            "billable" => {
                filters.billable = match value {
                    Value::Null => None,
                    Value::Bool(b) => Some(*b),
                    _ => return Err(invalid("billable (must be true or false)".into())),
                };
            }
            other => {
                return Err(invalid(format!(
                    "{other} (unknown; the filters are project_ids, client_ids, user_ids and \
                     billable)"
                )));
            }
        }
    }
    Ok(filters)
}

/// Reads a `headers` object: `{name: value}` with string values, in the order given (null: none).
/// The service checks the names and values ([`timetrack_domain::model::CustomHeaders::parse`]).
fn parse_headers(value: Value) -> Result<Vec<(String, String)>, ApiError> {
    let invalid = |detail: String| ApiError::bad_request(INVALID_HEADERS).with_detail(detail);
    let given = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Object(given) => given,
        _ => {
            return Err(invalid(
                "headers must be an object of header names and string values".into(),
            ));
        }
    };
    given
        .into_iter()
        .map(|(name, value)| match value {
            Value::String(value) => Ok((name, value)),
            _ => Err(invalid(format!("the value of {name} must be a string"))),
        })
        .collect()
}

/// Custom headers as every answer shows them: each value masked (`Bear…(38)`), in order.
#[derive(Debug)]
pub struct MaskedHeaders(Vec<(String, String)>);

impl MaskedHeaders {
    fn of(headers: &CustomHeaders) -> Self {
        Self(headers.masked())
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for MaskedHeaders {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(name, value)| (name, value)))
    }
}

/// The filters as `W` shows them: the given ones only (`{}` when none).
#[derive(Debug, Serialize)]
struct FiltersObject {
    #[serde(skip_serializing_if = "Option::is_none")]
    project_ids: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_ids: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user_ids: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    billable: Option<bool>,
}

impl From<&SubscriptionFilters> for FiltersObject {
    fn from(filters: &SubscriptionFilters) -> Self {
        fn texts<T: ToString>(ids: Option<&Vec<T>>) -> Option<Vec<String>> {
            ids.map(|ids| ids.iter().map(ToString::to_string).collect())
        }
        Self {
            project_ids: texts(filters.project_ids.as_ref()),
            client_ids: texts(filters.client_ids.as_ref()),
            user_ids: texts(filters.user_ids.as_ref()),
            billable: filters.billable,
        }
    }
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
    request_body = SubscribeBody,
    responses(
        (status = 201, description = "Subscribed; the secret is shown only here", body = SubscribeResponse),
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
    let new = NewSubscription::try_from(SubscribeBody::of(&body.into_inner())?)?;
    let subscription = state.webhooks.subscribe(&caller.0, new).await?;
    tracing::info!(webhook_id = %subscription.id, user_id = %caller.0.user_id, "webhook subscribed");
    Ok(
        HttpResponse::build(StatusCode::CREATED).json(SubscribeResponse {
            success: true,
            webhook: WebhookCreated {
                id: subscription.id.to_string(),
                events: event_names(&subscription),
                status: subscription.status.as_str(),
                headers: MaskedHeaders::of(&subscription.headers),
                url: subscription.url,
                secret: subscription.secret,
            },
        }),
    )
}

/// The created subscription, with its signing secret (shown only here).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookCreated {
    /// `wh_...`.
    id: String,
    /// Destination.
    url: String,
    /// Subscribed events.
    events: Vec<&'static str>,
    /// `ACTIVE`.
    status: &'static str,
    /// `whsec_...`: the Standard Webhooks signing secret.
    secret: String,
    /// The custom headers, each value masked; only when some were given (the published
    /// answer otherwise).
    #[serde(skip_serializing_if = "MaskedHeaders::is_empty")]
    #[schema(value_type = Option<std::collections::BTreeMap<String, String>>)]
    headers: MaskedHeaders,
}

/// 201 of the subscribe request.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SubscribeResponse {
    /// True.
    success: bool,
    /// The subscription.
    webhook: WebhookCreated,
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
    params(("id" = String, Path, pattern = "^wh_[A-Za-z0-9]{16,64}$", description = WEBHOOK_ID)),
    responses(
        (status = 200, description = "Deleted (or already deleted)", body = SuccessBody),
        (status = 404, description = "Webhook not found", body = crate::openapi::ErrorBody),
        (status = 500, description = "Failed to delete webhook", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn delete(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    _body: JsonOrEmpty<Unread>,
) -> Result<HttpResponse, ApiError> {
    state
        .webhooks
        .delete(&caller.0, &webhook_id(&id)?)
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
    Ok(HttpResponse::Ok().json(SuccessBody::TRUE))
}

/// A webhook as the API shows it (`W`): never its secret.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookObject {
    id: String,
    url: String,
    events: Vec<&'static str>,
    /// `ACTIVE` or `DISABLED`.
    status: &'static str,
    /// Why it is `DISABLED`: `manual` (paused by its owner with `POST .../disable`), `failing`
    /// (its deliveries failed for the disable-after period) or `key_revoked` (its API key was
    /// revoked; it cannot be enabled again). Null when `ACTIVE`.
    #[schema(value_type = Option<String>, example = "manual")]
    disabled_reason: Option<&'static str>,
    description: Option<String>,
    /// The subscription's filters; `{}` when none.
    #[schema(value_type = Object)]
    filters: FiltersObject,
    /// The custom headers sent with every delivery, each value masked (its first four characters
    /// and its length, or only its length when shorter than twelve); `{}` when none.
    #[schema(value_type = std::collections::BTreeMap<String, String>)]
    headers: MaskedHeaders,
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
            disabled_reason: subscription.disabled_reason.map(|r| r.as_str()),
            description: subscription.description,
            filters: FiltersObject::from(&subscription.filters),
            headers: MaskedHeaders::of(&subscription.headers),
            created_at: rfc3339(subscription.created_at),
            updated_at: rfc3339(subscription.updated_at),
            secret_rotation: subscription
                .previous_secret_expires_at
                .map(|at| SecretRotation {
                    previous_expires_at: rfc3339(at),
                }),
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

/// `?url=` of the webhooks list.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WebhookListQuery {
    /// Only the webhooks subscribed with exactly this URL (as sent when subscribing, trimmed).
    url: Option<String>,
}

/// `GET .../webhooks`: the caller's own subscriptions that are not deleted, newest first; with
/// `?url=`, those with exactly that URL.
#[utoipa::path(
    operation_id = "listWebhooks",
    get,
    path = "/api/integrations/automation/webhooks",
    tag = "Webhooks",
    summary = "List one's own subscriptions, with their health (?url= finds them by URL)",
    security(("bearer_auth" = [])),
    params(WebhookListQuery),
    responses(
        (status = 200, description = "The caller's subscriptions, newest first, without secrets", body = WebhookList),
        (status = 400, description = "Invalid query parameters (a `url` given twice)", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn list(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryParams<WebhookListQuery>,
) -> Result<HttpResponse, ApiError> {
    let listed = match query.url.as_deref() {
        Some(url) => state.webhooks.list_with_url(&caller.0, url).await?,
        None => state.webhooks.list(&caller.0).await?,
    };
    let webhooks: Vec<WebhookObject> = listed
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
    params(("id" = String, Path, pattern = "^wh_[A-Za-z0-9]{16,64}$", description = WEBHOOK_ID)),
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
    let (subscription, health) = state.webhooks.get(&caller.0, &webhook_id(&id)?).await?;
    Ok(web::Json(WebhookResponse {
        success: true,
        webhook: WebhookObject::new(subscription, health),
    }))
}

// Each field is of the type subscribe takes, taken as it came (`Given`; absent, null and a value
// told apart) and converted once into the domain's `WebhookChange` in the order subscribe reads
// them. A field not named here is 400 `Invalid request parameters` (`unknown field NAME`, the
// first in the body).
/// Body of `PATCH .../webhooks/{id}`: any of these fields.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
pub struct WebhookPatchBody {
    /// A new absolute `https://` URL.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = fields::webhook_url)]
    url: Option<Option<Given<String>>>,
    /// New event names (not empty).
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = fields::events)]
    events: Option<Option<Given<Vec<Given<String>>>>>,
    /// A new label, or null to clear it.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = fields::webhook_description)]
    description: Option<Option<Given<String>>>,
    /// All the filters, replacing the current ones (`{}` or null: none).
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = fields::filters)]
    filters: Option<Option<Value>>,
    /// All the custom headers, replacing the current ones (`{}` or null: none).
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = fields::webhook_headers)]
    headers: Option<Option<Value>>,
    /// Every other field, in the body's order.
    #[serde(flatten)]
    #[schema(ignore)]
    unknown: serde_json::Map<String, Value>,
}

impl WebhookPatchBody {
    /// The body of a request that parsed as JSON: an object.
    fn of(body: &Value) -> Result<Self, ApiError> {
        let not_an_object = || {
            ApiError::bad_request("Invalid request parameters")
                .with_detail("the body must be a JSON object")
        };
        if !body.is_object() {
            return Err(not_an_object());
        }
        Self::deserialize(body).map_err(|_| not_an_object())
    }
}

impl TryFrom<WebhookPatchBody> for WebhookChange {
    type Error = ApiError;

    fn try_from(body: WebhookPatchBody) -> Result<Self, ApiError> {
        if let Some(unknown) = body.unknown.keys().next() {
            return Err(ApiError::bad_request("Invalid request parameters")
                .with_detail(format!("unknown field {unknown}")));
        }
        let events = match body.events {
            None => None,
            Some(given) => match event_names_given(given) {
                Some(names) => Some(names?),
                None => return Err(ApiError::bad_request(REQUIRED).with_detail(EVENTS_DETAIL)),
            },
        };
        // After the events, as subscribe reads them; a null URL is a missing one.
        let url = match body.url {
            None => None,
            Some(None) => {
                return Err(ApiError::bad_request(REQUIRED).with_detail("url must not be null"));
            }
            Some(Some(Given::Valid(url))) => Some(url),
            Some(Some(Given::Invalid(_))) => return Err(url_not_a_string()),
        };
        let description = body
            .description
            .map(|given| given.map(description_given).transpose())
            .transpose()?;
        // Null clears them, as `{}` does.
        let filters = match body.filters {
            None => None,
            Some(None) => Some(SubscriptionFilters::default()),
            Some(Some(value)) => Some(parse_filters(&value)?),
        };
        let headers = match body.headers {
            None => None,
            Some(None) => Some(Vec::new()),
            Some(Some(value)) => Some(parse_headers(value)?),
        };
        Ok(WebhookChange {
            url,
            events,
            description,
            filters,
            headers,
        })
    }
}

/// `PATCH .../webhooks/{id}`: 200 `{success: true, webhook: W}`.
#[utoipa::path(
    operation_id = "updateWebhook",
    patch,
    path = "/api/integrations/automation/webhooks/{id}",
    tag = "Webhooks",
    summary = "Change one's subscription: url, events, description, filters, headers",
    security(("bearer_auth" = [])),
    params(("id" = String, Path, pattern = "^wh_[A-Za-z0-9]{16,64}$", description = WEBHOOK_ID)),
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
    let change = WebhookChange::try_from(WebhookPatchBody::of(&body.into_inner())?)?;
    let (subscription, health) = state
        .webhooks
        .update(&caller.0, &webhook_id(&id)?, change)
        .await?;
    tracing::info!(webhook_id = %subscription.id, user_id = %caller.0.user_id, "webhook changed");
    Ok(web::Json(WebhookResponse {
        success: true,
        webhook: WebhookObject::new(subscription, health),
    }))
}

/// `POST .../webhooks/{id}/disable`: pauses the caller's own `ACTIVE` webhook (audited). It
/// becomes `DISABLED` with `disabled_reason: "manual"`: its pending deliveries are cancelled, new
/// events are not queued for it and it is not counted as failing, until `.../enable` resumes it
/// (with `replay_since`, what it missed meanwhile is queued). A `DISABLED` one is left as it is.
#[utoipa::path(
    operation_id = "disableWebhook",
    post,
    path = "/api/integrations/automation/webhooks/{id}/disable",
    tag = "Webhooks",
    summary = "Pause one's own subscription until it is enabled again",
    security(("bearer_auth" = [])),
    params(("id" = String, Path, pattern = "^wh_[A-Za-z0-9]{16,64}$", description = WEBHOOK_ID)),
    responses(
        (status = 200, description = "The webhook, disabled", body = WebhookResponse),
        (status = 404, description = "Webhook not found", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn disable(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<web::Json<WebhookResponse>, ApiError> {
    let (subscription, health) = state.webhooks.disable(&caller.0, &webhook_id(&id)?).await?;
    tracing::info!(webhook_id = %subscription.id, user_id = %caller.0.user_id, "webhook paused");
    Ok(web::Json(WebhookResponse {
        success: true,
        webhook: WebhookObject::new(subscription, health),
    }))
}

/// Body of `POST .../webhooks/{id}/enable` (optional).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EnableBody {
    #[schema(schema_with = fields::enable_replay_since)]
    #[serde(default)]
    replay_since: Option<String>,
}

/// `{success: true, webhook: W, replayed, truncated, next_since}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EnableResponse {
    success: bool,
    webhook: WebhookObject,
    /// Deliveries queued by `replay_since` (0 without it).
    replayed: u64,
    /// More missed events remain than one call replays (10,000): continue with
    /// `POST .../replay` from `next_since`.
    truncated: bool,
    /// Where to continue when truncated; null otherwise.
    next_since: Option<String>,
}

/// `POST .../webhooks/{id}/enable`: a `DISABLED` webhook becomes `ACTIVE`, its failure streak
/// cleared; an `ACTIVE` one is left as it is. With `replay_since`, what it missed since then is
/// queued again.
#[utoipa::path(
    operation_id = "enableWebhook",
    post,
    path = "/api/integrations/automation/webhooks/{id}/enable",
    tag = "Webhooks",
    summary = "Enable one's disabled subscription again, optionally replaying what it missed",
    security(("bearer_auth" = [])),
    params(("id" = String, Path, pattern = "^wh_[A-Za-z0-9]{16,64}$", description = WEBHOOK_ID)),
    request_body(content = EnableBody, description = "Optional (made so in `openapi::finish`)"),
    responses(
        (status = 200, description = "The webhook, active", body = EnableResponse),
        (status = 400, description = "Invalid request parameters, or replay_since is older than the retained events", body = crate::openapi::ErrorBody),
        (status = 404, description = "Webhook not found", body = crate::openapi::ErrorBody),
        (status = 409, description = "API key revoked, or Subscription limit reached", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn enable(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    body: JsonOrEmpty<EnableBody, InvalidParams>,
) -> Result<web::Json<EnableResponse>, ApiError> {
    let replay_since = body
        .into_inner()
        .replay_since
        .as_deref()
        .map(|t| body_time("replay_since", t))
        .transpose()?;
    let (subscription, health, replayed) = state
        .webhooks
        .enable(&caller.0, &webhook_id(&id)?, replay_since)
        .await?;
    let replayed = replayed.unwrap_or(ReplayOutcome {
        queued: 0,
        truncated: false,
        next_since: None,
    });
    tracing::info!(webhook_id = %subscription.id, user_id = %caller.0.user_id, replayed = replayed.queued, "webhook enabled");
    Ok(web::Json(EnableResponse {
        success: true,
        webhook: WebhookObject::new(subscription, health),
        replayed: replayed.queued,
        truncated: replayed.truncated,
        next_since: replayed.next_since.map(rfc3339),
    }))
}

/// Body of `POST .../webhooks/{id}/rotate-secret` (optional).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateBody {
    /// How long the previous secret keeps signing beside the new one, in seconds: 0 (it stops
    /// at once) to 604800 (seven days); 86400 when absent.
    #[schema(value_type = Option<u32>, minimum = 0, maximum = 604800)]
    #[serde(default)]
    previous_valid_for_seconds: Option<WholeNumber>,
}

/// The new secret, shown only here.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RotateResponse {
    success: bool,
    /// The new signing secret (`whsec_...`).
    secret: String,
    /// Until when the previous secret still signs beside it (now, with 0).
    previous_expires_at: String,
}

/// `POST .../webhooks/{id}/rotate-secret`: a new secret at once; the previous one signs beside it
/// for the window asked for.
#[utoipa::path(
    operation_id = "rotateWebhookSecret",
    post,
    path = "/api/integrations/automation/webhooks/{id}/rotate-secret",
    tag = "Webhooks",
    summary = "Rotate one's subscription's signing secret, with a window where both sign",
    security(("bearer_auth" = [])),
    params(("id" = String, Path, pattern = "^wh_[A-Za-z0-9]{16,64}$", description = WEBHOOK_ID)),
    request_body(content = RotateBody, description = "Optional (made so in `openapi::finish`)"),
    responses(
        (status = 200, description = "The new secret, shown only here", body = RotateResponse),
        (status = 400, description = "Invalid request parameters", body = crate::openapi::ErrorBody),
        (status = 404, description = "Webhook not found", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn rotate_secret(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    body: JsonOrEmpty<RotateBody, InvalidParams>,
) -> Result<web::Json<RotateResponse>, ApiError> {
    let valid_for = body
        .into_inner()
        .previous_valid_for_seconds
        .map(|WholeNumber(n)| time::Duration::seconds(i64::from(n)));
    let rotated = state
        .webhooks
        .rotate_secret(&caller.0, &webhook_id(&id)?, valid_for)
        .await?;
    tracing::info!(webhook_id = %id, user_id = %caller.0.user_id, "webhook secret rotated");
    Ok(web::Json(RotateResponse {
        success: true,
        secret: rotated.secret,
        previous_expires_at: rfc3339(rotated.previous_expires_at),
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
    params(("id" = String, Path, pattern = "^wh_[A-Za-z0-9]{16,64}$", description = WEBHOOK_ID)),
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
        .stats(&caller.0, &webhook_id(&id)?)
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

/// The caller's own subscriptions.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookList {
    /// True.
    pub success: bool,
    /// Newest first.
    pub webhooks: Vec<WebhookObject>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(body: &Value) -> String {
        match SubscribeBody::of(body).and_then(NewSubscription::try_from) {
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
