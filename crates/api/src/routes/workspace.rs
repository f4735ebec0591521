//! `GET/PATCH /api/workspace`: the key's workspace with its billing settings.

use actix_web::web;
use serde::{Deserialize, Serialize};
use timetrack_domain::model::{
    InvoiceNumberPattern, Rounding, RoundingMode, Workspace, WorkspaceSettings,
};
use timetrack_domain::services::WorkspacePatch;
use timetrack_domain::values::{Currency, Name, TimeZoneName};

use crate::error::ApiError;
use crate::extract::{Caller, JsonBody, nullable};
use crate::openapi::fields;
use crate::state::AppState;

/// The workspace with its settings.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WorkspaceResponse {
    id: String,
    name: String,
    timezone: String,
    currency: String,
    settings: SettingsBody,
}

/// A workspace's settings (`docs/billing.md`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SettingsBody {
    /// Whether members may create, change and delete clients, projects, tasks and tags.
    members_manage_catalog: bool,
    /// Whether members see billable rates and amounts (never cost).
    members_see_rates: bool,
    /// How durations are rounded when read, per entry.
    rounding: RoundingBody,
    /// How issued invoices are numbered.
    invoice_number_pattern: String,
    /// Days from an invoice's issue date to its due date.
    payment_terms_days: u16,
    /// Entries starting before this date (`YYYY-MM-DD`, the workspace's time zone) are locked.
    lock_before: Option<String>,
}

/// `{minutes, mode}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RoundingBody {
    /// The step, 0 (none) to 60 minutes.
    minutes: u8,
    /// `up`, `down` or `nearest`.
    mode: &'static str,
}

impl From<Rounding> for RoundingBody {
    fn from(r: Rounding) -> Self {
        Self {
            minutes: r.minutes,
            mode: r.mode.as_str(),
        }
    }
}

impl From<(Workspace, WorkspaceSettings)> for WorkspaceResponse {
    fn from((w, s): (Workspace, WorkspaceSettings)) -> Self {
        Self {
            id: w.id.to_string(),
            name: w.name,
            timezone: w.timezone,
            currency: w.currency,
            settings: SettingsBody {
                members_manage_catalog: s.members_manage_catalog,
                members_see_rates: s.members_see_rates,
                rounding: s.rounding.into(),
                invoice_number_pattern: s.invoice_number_pattern.as_str().to_owned(),
                payment_terms_days: s.payment_terms_days,
                lock_before: s.lock_before.map(timetrack_domain::timefmt::iso_date),
            },
        }
    }
}

/// Body of `PATCH /api/workspace`: absent fields stay; `settings.lock_before: null` clears it.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct UpdateWorkspaceBody {
    #[schema(schema_with = fields::optional_name)]
    name: Option<String>,
    #[schema(schema_with = fields::timezone)]
    timezone: Option<String>,
    #[schema(schema_with = fields::currency)]
    currency: Option<String>,
    settings: Option<UpdateSettingsBody>,
}

/// The settings a `PATCH /api/workspace` changes; absent fields stay.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct UpdateSettingsBody {
    members_manage_catalog: Option<bool>,
    members_see_rates: Option<bool>,
    rounding: Option<UpdateRoundingBody>,
    #[schema(schema_with = fields::invoice_number_pattern)]
    invoice_number_pattern: Option<String>,
    /// 0 to 365.
    #[schema(minimum = 0, maximum = 365)]
    payment_terms_days: Option<u16>,
    /// A date (`YYYY-MM-DD`) or null.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = fields::nullable_date)]
    lock_before: Option<Option<String>>,
}

/// `{minutes?, mode?}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct UpdateRoundingBody {
    /// 0 (none) to 60.
    #[schema(minimum = 0, maximum = 60)]
    minutes: Option<u8>,
    #[schema(schema_with = fields::rounding_mode)]
    mode: Option<String>,
}

impl TryFrom<UpdateWorkspaceBody> for WorkspacePatch {
    type Error = ApiError;

    fn try_from(body: UpdateWorkspaceBody) -> Result<Self, ApiError> {
        let settings = body.settings;
        let rounding = settings.as_ref().and_then(|s| s.rounding.as_ref());
        Ok(Self {
            name: body
                .name
                .as_deref()
                .map(|n| Name::parse("name", n))
                .transpose()?,
            timezone: body
                .timezone
                .as_deref()
                .map(TimeZoneName::parse)
                .transpose()?,
            currency: body.currency.as_deref().map(Currency::parse).transpose()?,
            members_manage_catalog: settings.as_ref().and_then(|s| s.members_manage_catalog),
            members_see_rates: settings.as_ref().and_then(|s| s.members_see_rates),
            rounding_minutes: rounding.and_then(|r| r.minutes),
            rounding_mode: rounding
                .and_then(|r| r.mode.as_deref())
                .map(RoundingMode::parse)
                .transpose()?,
            invoice_number_pattern: settings
                .as_ref()
                .and_then(|s| s.invoice_number_pattern.as_deref())
                .map(InvoiceNumberPattern::parse)
                .transpose()?,
            payment_terms_days: settings.as_ref().and_then(|s| s.payment_terms_days),
            lock_before: match settings.and_then(|s| s.lock_before) {
                None => None,
                Some(None) => Some(None),
                Some(Some(date)) => Some(Some(crate::extract::body_date(
                    "settings.lock_before",
                    &date,
                )?)),
            },
        })
    }
}

/// `GET /api/workspace`: every role.
#[utoipa::path(
    operation_id = "getWorkspace",
    get,
    path = "/api/workspace",
    tag = "Billing",
    summary = "The key's workspace and its settings",
    security(("bearer_auth" = [])),
    responses(
        (status = 200, description = "The workspace", body = WorkspaceResponse),
        crate::openapi::AuthErrors
    )
)]
pub async fn get(
    state: web::Data<AppState>,
    caller: Caller,
) -> Result<web::Json<WorkspaceResponse>, ApiError> {
    Ok(web::Json(state.workspace.get(&caller.0).await?.into()))
}

/// `PATCH /api/workspace`: owners and admins.
#[utoipa::path(
    operation_id = "updateWorkspace",
    patch,
    path = "/api/workspace",
    tag = "Billing",
    summary = "Change the workspace's name, time zone, currency or settings (owners and admins)",
    security(("bearer_auth" = [])),
    request_body = UpdateWorkspaceBody,
    responses(
        (status = 200, description = "The changed workspace", body = WorkspaceResponse),
        (status = 400, description = "Invalid fields", body = crate::openapi::ErrorBody),
        (status = 403, description = "A member", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn update(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonBody<UpdateWorkspaceBody>,
) -> Result<web::Json<WorkspaceResponse>, ApiError> {
    let patch = WorkspacePatch::try_from(body.into_inner())?;
    Ok(web::Json(
        state.workspace.update(&caller.0, &patch).await?.into(),
    ))
}
