//! `GET/POST /api/rates` and `DELETE /api/rates/{id}`: hourly rates (`docs/billing.md`).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};
use timetrack_domain::DomainError;
use timetrack_domain::ids::{ClientId, ProjectId, RateId, TaskId, UserId};
use timetrack_domain::model::{PageRequest, Rate, RateKind, RateTarget};
use timetrack_domain::ports::{RateEffect, RateFilter};
use timetrack_domain::services::NewRate;
use timetrack_domain::timefmt::{iso_date, rfc3339};
use timetrack_domain::values::Currency;
use uuid::Uuid;

use crate::error::ApiError;
use crate::extract::{Caller, Id, JsonBody, JsonOrEmpty, QueryParams, Unread, body_date};
use crate::openapi::fields;
use crate::routes::ListResponse;
use crate::state::AppState;

/// A rate: `{id, kind, scope, user_id, client_id, project_id, task_id, currency, hourly_minor,
/// effective_from, created_at}`; the ids its scope does not use are null.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RateResponse {
    id: String,
    /// `billable` or `cost`.
    kind: &'static str,
    /// `workspace`, `member`, `client`, `project`, `task` or `project_member`.
    scope: &'static str,
    user_id: Option<String>,
    client_id: Option<String>,
    project_id: Option<String>,
    task_id: Option<String>,
    /// ISO 4217.
    currency: String,
    /// Minor units of the currency an hour.
    hourly_minor: i64,
    /// The first day in force (`YYYY-MM-DD`, the workspace's time zone).
    effective_from: String,
    created_at: String,
}

impl From<Rate> for RateResponse {
    fn from(r: Rate) -> Self {
        Self {
            id: r.id.to_string(),
            kind: r.kind.as_str(),
            scope: r.target.scope(),
            user_id: r.target.user_id().map(|id| id.to_string()),
            client_id: r.target.client_id().map(|id| id.to_string()),
            project_id: r.target.project_id().map(|id| id.to_string()),
            task_id: r.target.task_id().map(|id| id.to_string()),
            currency: r.currency,
            hourly_minor: r.hourly_minor,
            effective_from: iso_date(r.effective_from),
            created_at: rfc3339(r.created_at),
        }
    }
}

/// Body of `POST /api/rates`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct CreateRateBody {
    #[schema(schema_with = fields::rate_kind, required = true)]
    kind: Option<String>,
    #[schema(schema_with = fields::rate_scope, required = true)]
    scope: Option<String>,
    #[schema(schema_with = fields::member_ref)]
    user_id: Option<Uuid>,
    #[schema(schema_with = fields::client_ref)]
    client_id: Option<Uuid>,
    #[schema(schema_with = fields::project_ref)]
    project_id: Option<Uuid>,
    #[schema(schema_with = fields::task_ref)]
    task_id: Option<Uuid>,
    #[schema(schema_with = fields::rate_currency, required = true)]
    currency: Option<String>,
    #[schema(schema_with = fields::hourly_minor, required = true)]
    hourly_minor: Option<i64>,
    #[schema(schema_with = fields::date, required = true)]
    effective_from: Option<String>,
    /// true: write nothing, answer what the rate would change.
    #[serde(default)]
    dry_run: bool,
}

impl CreateRateBody {
    fn parse(&self) -> Result<NewRate, ApiError> {
        let required = |field: &str| DomainError::validation(format!("{field} is required"));
        let kind = RateKind::parse(self.kind.as_deref().ok_or_else(|| required("kind"))?)?;
        let target = RateTarget::parse(
            self.scope.as_deref().ok_or_else(|| required("scope"))?,
            self.user_id.map(UserId),
            self.client_id.map(ClientId),
            self.project_id.map(ProjectId),
            self.task_id.map(TaskId),
        )?;
        let currency = Currency::parse(
            self.currency
                .as_deref()
                .ok_or_else(|| required("currency"))?,
        )?;
        let hourly_minor =
            NewRate::hourly(self.hourly_minor.ok_or_else(|| required("hourly_minor"))?)?;
        let effective_from = body_date(
            "effective_from",
            self.effective_from
                .as_deref()
                .ok_or_else(|| required("effective_from"))?,
        )?;
        Ok(NewRate {
            kind,
            target,
            currency,
            hourly_minor,
            effective_from,
        })
    }
}

/// What a dry run answers: `{affected_entries, delta: [{currency, billable_minor}]}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DryRunResponse {
    /// Entries whose stored price would change.
    affected_entries: u64,
    /// Per currency, the change of those entries' billable amounts in sum, in minor units (with
    /// the workspace's rounding).
    delta: Vec<DeltaBody>,
}

/// `{currency, billable_minor}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DeltaBody {
    currency: String,
    billable_minor: i64,
}

impl From<RateEffect> for DryRunResponse {
    fn from(e: RateEffect) -> Self {
        Self {
            affected_entries: e.affected_entries,
            delta: e
                .delta
                .into_iter()
                .map(|(currency, billable_minor)| DeltaBody {
                    currency,
                    billable_minor,
                })
                .collect(),
        }
    }
}

/// `?kind=&scope=&user_id=&client_id=&project_id=&task_id=&limit=&cursor=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RateQuery {
    #[param(schema_with = fields::rate_kind)]
    kind: Option<String>,
    #[param(schema_with = fields::rate_scope)]
    scope: Option<String>,
    #[param(schema_with = fields::member)]
    user_id: Option<String>,
    #[param(schema_with = fields::member)]
    client_id: Option<String>,
    #[param(schema_with = fields::member)]
    project_id: Option<String>,
    #[param(schema_with = fields::member)]
    task_id: Option<String>,
    #[param(schema_with = fields::page_limit)]
    limit: Option<u32>,
    #[param(schema_with = fields::page_cursor)]
    cursor: Option<String>,
}

fn uuid_param(field: &str, value: Option<&str>) -> Result<Option<Uuid>, ApiError> {
    value
        .map(|v| {
            v.parse::<Uuid>()
                .map_err(|_| DomainError::validation(format!("{field} must be a UUID")).into())
        })
        .transpose()
}

impl RateQuery {
    fn filter(&self) -> Result<RateFilter, ApiError> {
        if let Some(scope) = self.scope.as_deref()
            && !RateTarget::LEVELS.contains(&scope)
        {
            return Err(DomainError::validation(format!(
                "scope must be one of workspace, member, client, project, task, project_member, \
                 got: {scope}"
            ))
            .into());
        }
        Ok(RateFilter {
            kind: self.kind.as_deref().map(RateKind::parse).transpose()?,
            scope: self.scope.clone(),
            user_id: uuid_param("user_id", self.user_id.as_deref())?.map(UserId),
            client_id: uuid_param("client_id", self.client_id.as_deref())?.map(ClientId),
            project_id: uuid_param("project_id", self.project_id.as_deref())?.map(ProjectId),
            task_id: uuid_param("task_id", self.task_id.as_deref())?.map(TaskId),
        })
    }
}

/// `GET /api/rates`.
#[utoipa::path(
    operation_id = "listRates",
    get,
    path = "/api/rates",
    tag = "Billing",
    summary = "The workspace's rates, newest first (members: billable ones, when allowed to see rates)",
    security(("bearer_auth" = [])),
    params(RateQuery),
    responses(
        (status = 200, description = "A page", body = ListResponse<RateResponse>),
        (status = 400, description = "Invalid filter, limit or cursor", body = crate::openapi::ErrorBody),
        (status = 403, description = "A member who may not see rates", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn list(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryParams<RateQuery>,
) -> Result<HttpResponse, ApiError> {
    let filter = query.filter()?;
    let page = PageRequest::new(query.limit, query.cursor.as_deref())?;
    let page = state.rates.list(&caller.0, filter, page).await?;
    Ok(HttpResponse::Ok().json(ListResponse::from_page(page, RateResponse::from)))
}

/// `POST /api/rates`: 201 with the rate; with `dry_run`, 200 with what it would change.
#[utoipa::path(
    operation_id = "createRate",
    post,
    path = "/api/rates",
    tag = "Billing",
    summary = "Add a rate (owners and admins), re-pricing the unlocked entries it reaches; or try it with dry_run",
    security(("bearer_auth" = [])),
    request_body = CreateRateBody,
    responses(
        (status = 201, description = "The rate", body = RateResponse),
        (status = 200, description = "A dry run: what the rate would change", body = DryRunResponse),
        (status = 400, description = "Invalid fields", body = crate::openapi::ErrorBody),
        (status = 403, description = "A member", body = crate::openapi::ErrorBody),
        (status = 409, description = "A rate of the same kind, scope, target, currency and date exists", body = crate::openapi::ConflictBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn create(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonBody<CreateRateBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let new = body.parse()?;
    let (rate, effect) = state.rates.create(&caller.0, new, body.dry_run).await?;
    Ok(if body.dry_run {
        HttpResponse::Ok().json(DryRunResponse::from(effect))
    } else {
        HttpResponse::build(StatusCode::CREATED).json(RateResponse::from(rate))
    })
}

/// `DELETE /api/rates/{id}`: 200 `{success: true}`.
#[utoipa::path(
    operation_id = "deleteRate",
    delete,
    path = "/api/rates/{id}",
    tag = "Billing",
    summary = "Delete a rate (owners and admins); the entries it priced are priced again",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::RatePath),
    responses(
        (status = 200, description = "Deleted", body = crate::openapi::SuccessBody),
        (status = 403, description = "A member", body = crate::openapi::ErrorBody),
        (status = 404, description = "Rate not found", body = crate::openapi::ErrorBody),
        (status = 409, description = "A locked entry was priced by it", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn delete(
    state: web::Data<AppState>,
    caller: Caller,
    _body: JsonOrEmpty<Unread>,
    id: Id<RateId>,
) -> Result<HttpResponse, ApiError> {
    state.rates.delete(&caller.0, id.get()?).await?;
    Ok(HttpResponse::Ok().json(crate::openapi::SuccessBody::TRUE))
}
