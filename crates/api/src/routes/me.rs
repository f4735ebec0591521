//! `GET /api/me`: the key's user (with their role) and workspace, for connection tests.

use actix_web::web;
use serde::Serialize;
use timetrack_domain::services::Profile;

use crate::error::ApiError;
use crate::extract::Caller;
use crate::state::AppState;

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MeResponse {
    user: UserBody,
    workspace: WorkspaceBody,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct UserBody {
    id: String,
    name: String,
    email: String,
    /// The user's role in the key's workspace: `owner`, `admin` or `member`.
    role: &'static str,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WorkspaceBody {
    id: String,
    name: String,
    timezone: String,
    currency: String,
}

impl From<Profile> for MeResponse {
    fn from(p: Profile) -> Self {
        Self {
            user: UserBody {
                id: p.user.id.to_string(),
                name: p.user.name,
                email: p.user.email,
                role: p.role.as_str(),
            },
            workspace: WorkspaceBody {
                id: p.workspace.id.to_string(),
                name: p.workspace.name,
                timezone: p.workspace.timezone,
                currency: p.workspace.currency,
            },
        }
    }
}

/// 200 `{user: {id, name, email, role}, workspace: {id, name, timezone, currency}}`.
#[utoipa::path(
    operation_id = "getMe",
    get,
    path = "/api/me",
    tag = "Account",
    summary = "The key's user and workspace",
    security(("bearer_auth" = [])),

    responses(
        (status = 200, description = "The caller", body = MeResponse),
        crate::openapi::AuthErrors
    )
)]
pub async fn me(
    state: web::Data<AppState>,
    caller: Caller,
) -> Result<web::Json<MeResponse>, ApiError> {
    let profile = state.accounts.profile(&caller.0).await?;
    Ok(web::Json(profile.into()))
}
