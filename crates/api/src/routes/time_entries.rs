//! The core API's time entries: timers, manual entries, listing and changes.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use timetrack_domain::DomainError;
use timetrack_domain::ids::{ProjectId, TagId, TaskId, TimeEntryId, UserId};
use timetrack_domain::model::{Page, PageRequest, Principal, TimeEntry};
use timetrack_domain::ports::EntryFilter;
use timetrack_domain::services::{EntryDraft, EntryPatch, EntryPricing};
use timetrack_domain::timefmt::{parse_rfc3339, rfc3339};
use uuid::Uuid;

use crate::error::ApiError;
use crate::extract::{Caller, Id, JsonBody, JsonOrEmpty, QueryParams, Unread, nullable};
use crate::openapi::fields;
use crate::routes::ListResponse;
use crate::state::AppState;

/// A time entry as the core API shows it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EntryResponse {
    id: String,
    user_id: String,
    source: &'static str,
    description: String,
    project_id: Option<String>,
    task_id: Option<String>,
    tag_ids: Vec<String>,
    billable: bool,
    start: String,
    end: Option<String>,
    duration: Option<i64>,
    running: bool,
    created_at: String,
    updated_at: String,
    pricing: PricingBody,
}

/// An entry's price (`docs/billing.md`). A caller who may not see billable rates gets none of the
/// `billable_*`, `rate_scope` and `rate_id` keys; one who may not see cost rates (every member)
/// none of the `cost_*` keys. Shown keys are never left out: a rate is null when none applies, an
/// amount 0.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PricingBody {
    /// ISO 4217: the project's client's currency, or else the workspace's.
    currency: String,
    /// The billable rate in minor units an hour; null when none applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    billable_rate_minor: Option<Option<i64>>,
    /// `round_half_up(billable_rate_minor × rounded_seconds / 3600)`; 0 without a rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    billable_amount_minor: Option<i64>,
    /// The cost rate in minor units an hour; null when none applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_rate_minor: Option<Option<i64>>,
    /// `round_half_up(cost_rate_minor × rounded_seconds / 3600)`; 0 without a rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_amount_minor: Option<i64>,
    /// The scope of the billable rate's row (`project_member`, `task`, ...); null without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    rate_scope: Option<Option<String>>,
    /// The billable rate's row; null without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    rate_id: Option<Option<String>>,
    /// The duration after the workspace's rounding (running entries: up to now).
    rounded_seconds: i64,
    /// The invoice the entry is on; null while on none.
    invoice_id: Option<String>,
    /// Whether the entry is locked: on an invoice, or before the workspace's lock date.
    locked: bool,
}

impl From<EntryPricing> for PricingBody {
    fn from(p: EntryPricing) -> Self {
        let billable = p.billable.as_ref();
        let cost = p.cost.as_ref();
        Self {
            currency: p.currency,
            billable_rate_minor: billable.map(|l| l.rate.as_ref().map(|r| r.hourly_minor)),
            billable_amount_minor: billable.map(|l| l.amount_minor),
            cost_rate_minor: cost.map(|l| l.rate.as_ref().map(|r| r.hourly_minor)),
            cost_amount_minor: cost.map(|l| l.amount_minor),
            rate_scope: billable.map(|l| l.rate.as_ref().map(|r| r.scope.clone())),
            rate_id: billable.map(|l| l.rate.as_ref().map(|r| r.id.to_string())),
            rounded_seconds: p.rounded_seconds,
            invoice_id: p.invoice_id.map(|id| id.to_string()),
            locked: p.locked,
        }
    }
}

impl EntryResponse {
    /// `entries` with their prices as `caller` may see them.
    pub(crate) async fn of(
        state: &AppState,
        caller: &Principal,
        entries: Vec<TimeEntry>,
    ) -> Result<Vec<Self>, ApiError> {
        let pricing = state.rates.pricing_of(caller, &entries).await?;
        Ok(entries
            .into_iter()
            .zip(pricing)
            .map(|(entry, pricing)| Self::new(entry, pricing))
            .collect())
    }

    /// `entry` with its prices as `caller` may see them.
    pub(crate) async fn one(
        state: &AppState,
        caller: &Principal,
        entry: TimeEntry,
    ) -> Result<Self, ApiError> {
        Self::of(state, caller, vec![entry])
            .await?
            .pop()
            .ok_or_else(|| ApiError::from(DomainError::NotFound("time entry")))
    }

    fn new(e: TimeEntry, pricing: EntryPricing) -> Self {
        Self {
            pricing: pricing.into(),
            duration: e.duration_seconds(),
            running: e.is_running(),
            id: e.id.to_string(),
            user_id: e.user_id.to_string(),
            source: e.source.as_str(),
            description: e.description,
            project_id: e.project_id.map(|p| p.to_string()),
            task_id: e.task_id.map(|t| t.to_string()),
            tag_ids: e.tag_ids.iter().map(ToString::to_string).collect(),
            billable: e.billable,
            start: rfc3339(e.start),
            end: e.end.map(rfc3339),
            created_at: rfc3339(e.created_at),
            updated_at: rfc3339(e.updated_at),
        }
    }
}

/// The fields every entry body may carry.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
pub struct EntryFields {
    #[schema(schema_with = fields::entry_description)]
    description: Option<String>,
    #[schema(schema_with = fields::project_ref)]
    project_id: Option<Uuid>,
    #[schema(schema_with = fields::task_ref)]
    task_id: Option<Uuid>,
    #[serde(default)]
    #[schema(schema_with = fields::tag_ids)]
    tag_ids: Vec<Uuid>,
    #[schema(schema_with = fields::optional_bool)]
    billable: Option<bool>,
}

impl From<EntryFields> for EntryDraft {
    fn from(f: EntryFields) -> Self {
        Self {
            description: f.description,
            project_id: f.project_id.map(ProjectId),
            task_id: f.task_id.map(TaskId),
            tag_ids: f.tag_ids.into_iter().map(TagId).collect(),
            billable: f.billable,
        }
    }
}

/// Body of `POST /api/time-entries` (manual).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct ManualBody {
    #[schema(schema_with = fields::manual_start, required = true)]
    start: Option<String>,
    #[schema(schema_with = fields::manual_end, required = true)]
    end: Option<String>,
    #[serde(flatten)]
    fields: EntryFields,
}

/// Body of `PATCH /api/time-entries/{id}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct PatchBody {
    #[schema(schema_with = fields::entry_description)]
    description: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = fields::project_ref)]
    project_id: Option<Option<Uuid>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = fields::task_ref)]
    task_id: Option<Option<Uuid>>,
    #[schema(schema_with = fields::optional_tag_ids)]
    tag_ids: Option<Vec<Uuid>>,
    #[schema(schema_with = fields::optional_bool)]
    billable: Option<bool>,
    #[schema(schema_with = fields::new_start)]
    start: Option<String>,
    #[schema(schema_with = fields::new_end)]
    end: Option<String>,
}

/// `?from=&to=&user_id=&limit=&cursor=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EntryQuery {
    #[param(schema_with = fields::range_from)]
    from: Option<String>,
    #[param(schema_with = fields::range_to)]
    to: Option<String>,
    #[param(schema_with = fields::member)]
    user_id: Option<String>,
    #[param(schema_with = fields::page_limit)]
    limit: Option<u32>,
    #[param(schema_with = fields::page_cursor)]
    cursor: Option<String>,
}

fn timestamp(field: &str, value: &str) -> Result<OffsetDateTime, ApiError> {
    Ok(parse_rfc3339(field, value)?)
}

fn required_timestamp(field: &str, value: Option<&str>) -> Result<OffsetDateTime, ApiError> {
    let value = value.ok_or_else(|| DomainError::validation(format!("{field} is required")))?;
    timestamp(field, value)
}

/// `POST /api/time-entries/start`: 201 with the running entry.
#[utoipa::path(
    operation_id = "startTimer",
    post,
    path = "/api/time-entries/start",
    tag = "Time entries",
    summary = "Start a timer (stops a running one first; emits TIMER_STOPPED, TIMER_STARTED)",
    security(("bearer_auth" = [])),
    request_body(content = EntryFields, description = "Optional: a JSON object whose every field is optional, or no body at all (not `null`)"),
    responses(
        (status = 201, description = "The running entry", body = EntryResponse),
        (status = 400, description = "Invalid fields or references", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn start(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonOrEmpty<EntryFields>,
) -> Result<HttpResponse, ApiError> {
    let fields = body.0;
    let entry = state.entries.start(&caller.0, fields.into()).await?;
    let body = EntryResponse::one(&state, &caller.0, entry).await?;
    Ok(HttpResponse::build(StatusCode::CREATED).json(body))
}

/// `POST /api/time-entries/stop`: 200 with the stopped entry; 409 `No running timer`.
#[utoipa::path(
    operation_id = "stopTimer",
    post,
    path = "/api/time-entries/stop",
    tag = "Time entries",
    summary = "Stop the running timer (emits TIMER_STOPPED)",
    security(("bearer_auth" = [])),

    responses(
        (status = 200, description = "The stopped entry", body = EntryResponse),
        (status = 409, description = "No running timer", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn stop(
    state: web::Data<AppState>,
    caller: Caller,
    _body: JsonOrEmpty<Unread>,
) -> Result<web::Json<EntryResponse>, ApiError> {
    let entry = state.entries.stop(&caller.0).await?;
    Ok(web::Json(
        EntryResponse::one(&state, &caller.0, entry).await?,
    ))
}

/// `GET /api/time-entries/current`: the running entry or `null`.
#[utoipa::path(
    operation_id = "getCurrentTimer",
    get,
    path = "/api/time-entries/current",
    tag = "Time entries",
    summary = "The running timer, or null",
    security(("bearer_auth" = [])),

    responses(
        (status = 200, description = "The running entry or null", body = Option<EntryResponse>),
        crate::openapi::AuthErrors
    )
)]
pub async fn current(
    state: web::Data<AppState>,
    caller: Caller,
) -> Result<web::Json<Option<EntryResponse>>, ApiError> {
    let running = state.entries.current(&caller.0).await?;
    Ok(web::Json(
        EntryResponse::of(&state, &caller.0, running.into_iter().collect())
            .await?
            .pop(),
    ))
}

/// `POST /api/time-entries`: a manual entry, 201.
#[utoipa::path(
    operation_id = "createTimeEntry",
    post,
    path = "/api/time-entries",
    tag = "Time entries",
    summary = "Create a finished entry by hand (emits TIME_ENTRY_CREATED)",
    security(("bearer_auth" = [])),
    request_body = ManualBody,
    responses(
        (status = 201, description = "Created", body = EntryResponse),
        (status = 400, description = "Invalid fields, end not after start, or foreign references", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn create(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonBody<ManualBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let start = required_timestamp("start", body.start.as_deref())?;
    let end = required_timestamp("end", body.end.as_deref())?;
    let entry = state
        .entries
        .create_manual(&caller.0, body.fields.into(), start, end)
        .await?;
    let body = EntryResponse::one(&state, &caller.0, entry).await?;
    Ok(HttpResponse::build(StatusCode::CREATED).json(body))
}

/// `GET /api/time-entries`: latest start first, filtered, paginated.
#[utoipa::path(
    operation_id = "listTimeEntries",
    get,
    path = "/api/time-entries",
    tag = "Time entries",
    summary = "List entries, latest start first",
    security(("bearer_auth" = [])),
    params(EntryQuery),
    responses(
        (status = 200, description = "A page", body = ListResponse<EntryResponse>),
        (status = 400, description = "Invalid filter, limit or cursor", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn list(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryParams<EntryQuery>,
) -> Result<HttpResponse, ApiError> {
    let filter = EntryFilter {
        from: query
            .from
            .as_deref()
            .map(|v| timestamp("from", v))
            .transpose()?,
        to: query
            .to
            .as_deref()
            .map(|v| timestamp("to", v))
            .transpose()?,
        user: query
            .user_id
            .as_deref()
            .map(|v| {
                v.parse::<Uuid>()
                    .map(UserId)
                    .map_err(|_| ApiError::from(DomainError::validation("user_id must be a UUID")))
            })
            .transpose()?,
    };
    let page = PageRequest::new(query.limit, query.cursor.as_deref())?;
    let page = state.entries.list(&caller.0, filter, page).await?;
    let next = page.next;
    let data = EntryResponse::of(&state, &caller.0, page.items).await?;
    Ok(HttpResponse::Ok().json(ListResponse::from_page(Page { items: data, next }, |e| e)))
}

/// `GET /api/time-entries/{id}`.
#[utoipa::path(
    operation_id = "getTimeEntry",
    get,
    path = "/api/time-entries/{id}",
    tag = "Time entries",
    summary = "Get an entry",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::TimeEntryPath),
    responses(
        (status = 200, description = "The entry", body = EntryResponse),
        (status = 404, description = "Time entry not found", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn get(
    state: web::Data<AppState>,
    caller: Caller,
    id: Id<TimeEntryId>,
) -> Result<web::Json<EntryResponse>, ApiError> {
    let entry = state.entries.get(&caller.0, id.get()?).await?;
    Ok(web::Json(
        EntryResponse::one(&state, &caller.0, entry).await?,
    ))
}

/// `PATCH /api/time-entries/{id}`.
#[utoipa::path(
    operation_id = "updateTimeEntry",
    patch,
    path = "/api/time-entries/{id}",
    tag = "Time entries",
    summary = "Change an entry",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::TimeEntryPath), request_body = PatchBody,
    responses(
        (status = 200, description = "The changed entry", body = EntryResponse),
        (status = 400, description = "Invalid fields", body = crate::openapi::ErrorBody),
        (status = 404, description = "Time entry not found", body = crate::openapi::ErrorBody),
        (status = 409, description = "Time entry is locked: on an invoice, or before the workspace's lock date", body = crate::openapi::ErrorBody),
        (status = 403, description = "A member changing another member's entry", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn update(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonBody<PatchBody>,
    id: Id<TimeEntryId>,
) -> Result<web::Json<EntryResponse>, ApiError> {
    let id = id.get()?;
    let body = body.into_inner();
    let patch = EntryPatch {
        description: body.description,
        project_id: body.project_id.map(|p| p.map(ProjectId)),
        task_id: body.task_id.map(|t| t.map(TaskId)),
        tag_ids: body.tag_ids.map(|ids| ids.into_iter().map(TagId).collect()),
        billable: body.billable,
        start: body
            .start
            .as_deref()
            .map(|v| timestamp("start", v))
            .transpose()?,
        end: body
            .end
            .as_deref()
            .map(|v| timestamp("end", v))
            .transpose()?,
    };
    let entry = state.entries.update(&caller.0, id, &patch).await?;
    Ok(web::Json(
        EntryResponse::one(&state, &caller.0, entry).await?,
    ))
}

/// `DELETE /api/time-entries/{id}`: 200 `{success: true}`.
#[utoipa::path(
    operation_id = "deleteTimeEntry",
    delete,
    path = "/api/time-entries/{id}",
    tag = "Time entries",
    summary = "Delete an entry",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::TimeEntryPath),
    responses(
        (status = 200, description = "Deleted", body = crate::openapi::SuccessBody),
        (status = 404, description = "Time entry not found", body = crate::openapi::ErrorBody),
        (status = 409, description = "Time entry is locked: on an invoice, or before the workspace's lock date", body = crate::openapi::ErrorBody),
        (status = 403, description = "A member changing another member's entry", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn delete(
    state: web::Data<AppState>,
    caller: Caller,
    _body: JsonOrEmpty<Unread>,
    id: Id<TimeEntryId>,
) -> Result<HttpResponse, ApiError> {
    state.entries.delete(&caller.0, id.get()?).await?;
    Ok(HttpResponse::Ok().json(crate::openapi::SuccessBody::TRUE))
}
