//! `POST /api/integrations/automation/triggers/clients/find`: case-insensitive substring search
//! of a workspace's clients, newest first.

use actix_web::web;
use serde::Deserialize;
use timetrack_domain::DomainError;
use timetrack_domain::ids::WorkspaceId;
use uuid::Uuid;

use crate::error::ApiError;
use crate::extract::{Caller, InvalidParams, JsonBody, WholeNumber};
use crate::openapi::fields;
use crate::replica::ReadAfter;
use crate::routes::clients::ClientResponse;
use crate::state::AppState;

/// Body of the find request.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct FindClientBody {
    #[schema(schema_with = fields::search_workspace)]
    workspace_id: Uuid,
    #[schema(schema_with = fields::search_name)]
    name: String,
    #[schema(schema_with = fields::search_limit)]
    limit: Option<WholeNumber>,
}

/// 200 with an array of clients (possibly empty); 400 `Invalid request parameters` for a missing
/// or mistyped field, an invalid UUID or an empty or over-long name; 403 for another workspace.
#[utoipa::path(
    operation_id = "findClient",
    post,
    path = "/api/integrations/automation/triggers/clients/find",
    tag = "Clients",
    summary = "Find clients by name (case-insensitive substring, newest first, at most 100)",
    security(("bearer_auth" = [])),
    request_body = FindClientBody,
    responses(
        (status = 200, description = "Matching clients, possibly none", body = Vec<ClientResponse>),
        (status = 400, description = "Invalid request parameters", body = crate::openapi::ErrorBody),
        (status = 403, description = "Another workspace", body = crate::openapi::ErrorBody),
        (status = 500, description = "Internal server error", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn find(
    state: web::Data<AppState>,
    caller: Caller,
    seen: ReadAfter,
    body: JsonBody<FindClientBody, InvalidParams>,
) -> Result<web::Json<Vec<ClientResponse>>, ApiError> {
    let body = body.into_inner();
    let clients = crate::read_lagging!(state, &caller.0, seen, |s| {
        s.clients
            .find(
                &caller.0,
                WorkspaceId(body.workspace_id),
                &body.name,
                body.limit.map(|l| l.0),
            )
            .await
    })
    .map_err(invalid_params)?;
    Ok(web::Json(
        clients.into_iter().map(ClientResponse::from).collect(),
    ))
}

/// A search's error as the published search answers it: a broken rule is 400 `Invalid request
/// parameters` with the rule as `detail`; anything else as every endpoint answers it.
pub(crate) fn invalid_params(err: DomainError) -> ApiError {
    match err {
        DomainError::Validation(why) => {
            ApiError::bad_request("Invalid request parameters").with_detail(why)
        }
        other => other.into(),
    }
}
