//! The triggers' fallback (sample) endpoints: each answers an array of exactly one element in the
//! shape of the trigger's live payload, the latest real record or a fixed sample.

use actix_web::{HttpResponse, web};
use serde::Serialize;

use crate::app::AppState;
use crate::error::ApiError;
use crate::extract::Caller;

const FAILED_ENTRIES: &str = "Failed to fetch time entries";

fn one(element: impl Serialize) -> HttpResponse {
    HttpResponse::Ok().json([element])
}

/// `GET .../triggers/time-entries/manual_entry/fallback`.
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
pub async fn stop(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let payload = state
        .entries
        .stopped_fallback(&caller.0)
        .await
        .map_err(ApiError::internal(FAILED_ENTRIES))?;
    Ok(one(payload))
}

/// `GET .../triggers/time-entries/start/fallback`.
pub async fn start(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let payload = state
        .entries
        .started_fallback(&caller.0)
        .await
        .map_err(ApiError::internal(FAILED_ENTRIES))?;
    Ok(one(payload))
}

/// `GET .../triggers/clients/fallback`.
pub async fn clients(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let payload = state
        .clients
        .newest_payload(&caller.0)
        .await
        .map_err(ApiError::internal("Failed to fetch clients"))?;
    Ok(one(payload))
}
