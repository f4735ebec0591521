//! The look-ups an automation platform's searches call, in the shape of the published client
//! search: find a project by name, and the caller's running timer (docs/integration-guide.md, section 2a).

use actix_web::web;
use serde::Deserialize;
use timetrack_domain::ids::WorkspaceId;
use timetrack_domain::payload::{ProjectPayload, TimeEntryPayload};
use uuid::Uuid;

use crate::error::ApiError;
use crate::extract::{Caller, InvalidParams, JsonBody, WholeNumber};
use crate::openapi::fields;
use crate::replica::ReadAfter;
use crate::routes::find_client::invalid_params;
use crate::state::AppState;

/// Body of the project find.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct FindProjectBody {
    /// The workspace to search; the caller's when absent (another one is 403).
    workspace_id: Option<Uuid>,
    #[schema(schema_with = fields::search_name)]
    name: String,
    #[schema(schema_with = fields::search_limit)]
    limit: Option<WholeNumber>,
}

/// 200 with an array of projects in the `PROJECT_CREATED` shape (an exact name first, then newest
/// first; possibly empty); 400 `Invalid request parameters` as the client search.
#[utoipa::path(
    operation_id = "findProject",
    post,
    path = "/api/integrations/automation/triggers/projects/find",
    tag = "Triggers",
    summary = "Find projects by name (case-insensitive substring; an exact name first, then newest first; at most 100)",
    security(("bearer_auth" = [])),
    request_body = FindProjectBody,
    responses(
        (status = 200, description = "Matching projects, possibly none", body = Vec<ProjectPayload>),
        (status = 400, description = "Invalid request parameters", body = crate::openapi::ErrorBody),
        (status = 403, description = "Another workspace", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn find_projects(
    state: web::Data<AppState>,
    caller: Caller,
    seen: ReadAfter,
    body: JsonBody<FindProjectBody, InvalidParams>,
) -> Result<web::Json<Vec<ProjectPayload>>, ApiError> {
    let body = body.into_inner();
    let found = crate::read_lagging!(state, &caller.0, seen, |s| {
        s.catalog
            .find_projects(
                &caller.0,
                body.workspace_id.map(WorkspaceId),
                &body.name,
                body.limit.map(|l| l.0),
            )
            .await
    })
    .map_err(invalid_params)?;
    Ok(web::Json(found))
}

/// 200 with the caller's running timer in the `TIMER_STARTED` shape, as an array of one element,
/// or `[]` when no timer runs.
#[utoipa::path(
    operation_id = "findRunningTimer",
    get,
    path = "/api/integrations/automation/triggers/time-entries/running",
    tag = "Triggers",
    summary = "The caller's running timer, as an array ([] when none runs)",
    security(("bearer_auth" = [])),
    responses(
        (status = 200, description = "The running timer (action start_timer), or none", body = Vec<TimeEntryPayload>),
        crate::openapi::AuthErrors
    )
)]
pub async fn running(
    state: web::Data<AppState>,
    caller: Caller,
    seen: ReadAfter,
) -> Result<web::Json<Vec<TimeEntryPayload>>, ApiError> {
    let running = crate::read_lagging!(state, &caller.0, seen, |s| {
        s.entries.running_payloads(&caller.0).await
    })?;
    Ok(web::Json(running))
}
