//! `GET /api/members` and `PATCH /api/members/{user_id}`: the workspace's members and roles.

use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};
use timetrack_domain::DomainError;
use timetrack_domain::ids::UserId;
use timetrack_domain::model::{Member, Role};

use crate::error::ApiError;
use crate::extract::{Caller, Id, JsonBody, QueryParams};
use crate::routes::ListResponse;
use crate::routes::clients::ListQuery;
use crate::state::AppState;

/// A member: `{id, name, email, role}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MemberResponse {
    /// The user's id.
    id: String,
    name: String,
    email: String,
    /// `owner`, `admin` or `member`.
    role: &'static str,
}

impl From<Member> for MemberResponse {
    fn from(m: Member) -> Self {
        Self {
            id: m.id.to_string(),
            name: m.name,
            email: m.email,
            role: m.role.as_str(),
        }
    }
}

/// Body of `PATCH /api/members/{user_id}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct UpdateMemberBody {
    #[schema(schema_with = crate::openapi::fields::role, required = true)]
    role: Option<String>,
}

/// `GET /api/members`: every role (automation platforms fill drop-downs with it).
#[utoipa::path(
    operation_id = "listMembers",
    get,
    path = "/api/members",
    tag = "Billing",
    summary = "The workspace's members with their roles, the earliest to join first",
    security(("bearer_auth" = [])),
    params(ListQuery),
    responses(
        (status = 200, description = "A page", body = ListResponse<MemberResponse>),
        (status = 400, description = "Invalid limit, cursor, q or updated_since", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn list(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryParams<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = state
        .workspace
        .members(&caller.0, &query.filter()?, query.page()?)
        .await?;
    Ok(HttpResponse::Ok().json(ListResponse::from_page(page, MemberResponse::from)))
}

/// `PATCH /api/members/{user_id}`: owners and admins; only an owner makes or unmakes an owner.
#[utoipa::path(
    operation_id = "updateMember",
    patch,
    path = "/api/members/{user_id}",
    tag = "Billing",
    summary = "Change a member's role (owners and admins; only an owner makes or unmakes an owner)",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::MemberPath),
    request_body = UpdateMemberBody,
    responses(
        (status = 200, description = "The member", body = MemberResponse),
        (status = 400, description = "Invalid role", body = crate::openapi::ErrorBody),
        (status = 403, description = "A member, or an admin touching an owner", body = crate::openapi::ErrorBody),
        (status = 404, description = "Member not found", body = crate::openapi::ErrorBody),
        (status = 409, description = "The workspace would have no owner", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn update(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonBody<UpdateMemberBody>,
    user: Id<UserId>,
) -> Result<web::Json<MemberResponse>, ApiError> {
    let user = user.get()?;
    let role = match body.into_inner().role {
        Some(role) => Role::parse(&role)?,
        None => return Err(DomainError::validation("role is required").into()),
    };
    Ok(web::Json(
        state
            .workspace
            .set_role(&caller.0, user, role)
            .await?
            .into(),
    ))
}
