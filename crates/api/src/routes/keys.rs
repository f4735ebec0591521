//! `/api/keys`: keys a member makes for themselves, with scopes and an expiry (`integrations.md`
//! section 4). The key itself is shown once, in the answer that makes it.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};
use timetrack_domain::ids::ApiKeyId;
use timetrack_domain::model::ApiKey;
use timetrack_domain::services::NewKey;
use timetrack_domain::timefmt::rfc3339;

use crate::error::ApiError;
use crate::extract::{Caller, Id, JsonBody, JsonOrEmpty, Unread, body_time};
use crate::state::AppState;

/// A key as listed: never the key itself.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct KeyObject {
    id: String,
    name: Option<String>,
    /// The key's first characters, to tell keys apart.
    prefix: String,
    /// What it may do: `read`, `time:write`, `catalog:write`, `billing:write`, `webhooks`,
    /// `admin`.
    scopes: Vec<&'static str>,
    created_at: String,
    /// When it stops working; null for never.
    expires_at: Option<String>,
    last_used_at: Option<String>,
    revoked_at: Option<String>,
}

impl From<ApiKey> for KeyObject {
    fn from(key: ApiKey) -> Self {
        Self {
            id: key.id.0.to_string(),
            name: key.name,
            prefix: key.prefix,
            scopes: key.scopes.names(),
            created_at: rfc3339(key.created_at),
            expires_at: key.expires_at.map(rfc3339),
            last_used_at: key.last_used_at.map(rfc3339),
            revoked_at: key.revoked_at.map(rfc3339),
        }
    }
}

/// 201 of `POST /api/keys`: the key's fields and the key, shown only here.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CreatedKey {
    #[serde(flatten)]
    listed: KeyObject,
    /// The key (`tt_...`): send it as `Authorization: Bearer <key>`. Shown once.
    key: String,
}

/// `{data: [...]}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct KeyList {
    data: Vec<KeyObject>,
}

/// Body of `POST /api/keys`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateKeyBody {
    /// A label, 1 to 255 characters.
    #[schema(required = true, min_length = 1, max_length = 255)]
    name: Option<String>,
    /// Scopes, at least one of `read`, `time:write`, `catalog:write`, `billing:write`,
    /// `webhooks`, `admin`; absent: all of them. Never more than the calling key holds.
    #[schema(value_type = Option<Vec<String>>)]
    scopes: Option<Vec<String>>,
    /// When it stops working (RFC 3339, in the future); absent: never.
    #[schema(value_type = Option<String>, format = DateTime)]
    expires_at: Option<String>,
}

/// `POST /api/keys`: a key for the caller's user in the caller's workspace.
#[utoipa::path(
    operation_id = "createKey",
    post,
    path = "/api/keys",
    tag = "Account",
    summary = "Make a key for oneself, with scopes and an expiry (the key is shown once)",
    security(("bearer_auth" = [])),
    request_body = CreateKeyBody,
    responses(
        (status = 201, description = "Made; `key` is shown only here", body = CreatedKey),
        (status = 400, description = "Invalid request parameters: name, scopes or expires_at", body = crate::openapi::ErrorBody),
        (status = 403, description = "The calling key lacks the admin scope, or a scope asked for", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn create(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonBody<CreateKeyBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let expires_at = body
        .expires_at
        .as_deref()
        .map(|at| body_time("expires_at", at))
        .transpose()?;
    let (key, secret) = state
        .keys
        .create(
            &caller.0,
            NewKey {
                name: body.name.unwrap_or_default(),
                scopes: body.scopes,
                expires_at,
            },
        )
        .await?;
    tracing::info!(api_key_id = %key.id.0, user_id = %caller.0.user_id, "API key made");
    Ok(HttpResponse::build(StatusCode::CREATED).json(CreatedKey {
        listed: key.into(),
        key: secret.expose().to_owned(),
    }))
}

/// `GET /api/keys`: the caller's keys (an owner's or admin's: the workspace's), newest first.
#[utoipa::path(
    operation_id = "listKeys",
    get,
    path = "/api/keys",
    tag = "Account",
    summary = "One's own keys (owners and admins: the workspace's), newest first, never the key",
    security(("bearer_auth" = [])),
    responses(
        (status = 200, description = "The keys, revoked and expired ones included", body = KeyList),
        (status = 403, description = "The calling key lacks the admin scope", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn list(
    state: web::Data<AppState>,
    caller: Caller,
) -> Result<web::Json<KeyList>, ApiError> {
    let keys = state.keys.list(&caller.0).await?;
    Ok(web::Json(KeyList {
        data: keys.into_iter().map(KeyObject::from).collect(),
    }))
}

/// `DELETE /api/keys/{id}`: revokes a key at once; its webhooks are disabled.
#[utoipa::path(
    operation_id = "revokeKey",
    delete,
    path = "/api/keys/{id}",
    tag = "Account",
    summary = "Revoke one's key (owners and admins: any of the workspace's); its webhooks stop",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::KeyPath),
    responses(
        (status = 200, description = "The key, revoked", body = KeyObject),
        (status = 403, description = "The calling key lacks the admin scope", body = crate::openapi::ErrorBody),
        (status = 404, description = "Api key not found", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn revoke(
    state: web::Data<AppState>,
    caller: Caller,
    _body: JsonOrEmpty<Unread>,
    id: Id<ApiKeyId>,
) -> Result<web::Json<KeyObject>, ApiError> {
    let key = state.keys.revoke(&caller.0, id.get()?).await?;
    // This process refuses it at once, reads too; others within their key cache's 30 s.
    state.admission.forget_key(key.id);
    if let Some(replica) = state.replica_admission() {
        replica.forget_key(key.id);
    }
    tracing::info!(api_key_id = %key.id.0, user_id = %caller.0.user_id, "API key revoked");
    Ok(web::Json(key.into()))
}
