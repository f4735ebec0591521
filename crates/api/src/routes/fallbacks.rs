//! The triggers' fallback (sample) endpoints: each answers an array of exactly one element in the
//! shape of the trigger's live payload, the latest real record or a fixed sample.

use actix_web::{HttpResponse, web};
use serde::Serialize;

use crate::error::ApiError;
use crate::extract::Caller;
use crate::state::AppState;

const FAILED_ENTRIES: &str = "Failed to fetch time entries";

fn one(element: impl Serialize) -> HttpResponse {
    HttpResponse::Ok().json([element])
}

/// `GET .../triggers/time-entries/manual_entry/fallback`.
#[utoipa::path(
    operation_id = "sampleManualEntries",
    get,
    path = "/api/integrations/automation/triggers/time-entries/manual_entry/fallback",
    tag = "Triggers",
    summary = "Sample for the manual-entry trigger",
    security(("bearer_auth" = [])),

    responses(
        (status = 200, description = "Exactly one entry (action manual_entry)", body = Vec<timetrack_domain::payload::TimeEntryPayload>),
        (status = 500, description = "Failed to fetch time entries", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn manual_entry(
    state: web::Data<AppState>,
    caller: Caller,
) -> Result<HttpResponse, ApiError> {
    let payload = state
        .entries
        .manual_fallback(&caller.0)
        .await
        .map_err(ApiError::internal(FAILED_ENTRIES))?;
    Ok(one(payload))
}

/// `GET .../triggers/time-entries/stop/fallback`.
#[utoipa::path(
    operation_id = "sampleStoppedTimers",
    get,
    path = "/api/integrations/automation/triggers/time-entries/stop/fallback",
    tag = "Triggers",
    summary = "Sample for the timer-stopped trigger",
    security(("bearer_auth" = [])),

    responses(
        (status = 200, description = "Exactly one entry (action stop_timer)", body = Vec<timetrack_domain::payload::TimeEntryPayload>),
        (status = 500, description = "Failed to fetch time entries", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn stop(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let payload = state
        .entries
        .stopped_fallback(&caller.0)
        .await
        .map_err(ApiError::internal(FAILED_ENTRIES))?;
    Ok(one(payload))
}

/// `GET .../triggers/time-entries/start/fallback`.
#[utoipa::path(
    operation_id = "sampleStartedTimers",
    get,
    path = "/api/integrations/automation/triggers/time-entries/start/fallback",
    tag = "Triggers",
    summary = "Sample for the timer-started trigger (no endTime, no duration)",
    security(("bearer_auth" = [])),

    responses(
        (status = 200, description = "Exactly one entry (action start_timer)", body = Vec<timetrack_domain::payload::TimeEntryPayload>),
        (status = 500, description = "Failed to fetch time entries", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn start(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let payload = state
        .entries
        .started_fallback(&caller.0)
        .await
        .map_err(ApiError::internal(FAILED_ENTRIES))?;
    Ok(one(payload))
}

/// `GET .../triggers/clients/fallback`.
#[utoipa::path(
    operation_id = "sampleCreatedClients",
    get,
    path = "/api/integrations/automation/triggers/clients/fallback",
    tag = "Triggers",
    summary = "Sample for the new-client trigger",
    security(("bearer_auth" = [])),

    responses(
        (status = 200, description = "Exactly one client", body = Vec<timetrack_domain::payload::ClientPayload>),
        (status = 500, description = "Failed to fetch clients", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn clients(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let payload = state
        .clients
        .newest_payload(&caller.0)
        .await
        .map_err(ApiError::internal("Failed to fetch clients"))?;
    Ok(one(payload))
}
