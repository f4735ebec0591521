//! `GET /api/health`: is the service up and its database reachable.

use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use serde::Serialize;

use crate::state::AppState;
use timetrack_domain::timefmt::rfc3339;

/// The `service` field of the health body.
pub const SERVICE_NAME: &str = "timetrack";
/// The whole check answers within this bound, whatever the database does.
const HEALTH_DEADLINE: Duration = Duration::from_secs(3);

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HealthyResponse {
    status: &'static str,
    timestamp: String,
    service: &'static str,
    version: &'static str,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct UnhealthyResponse {
    status: &'static str,
    timestamp: String,
    service: &'static str,
    /// Always `database connection failed` (the published text).
    error: &'static str,
    /// Why: `no database connection`, `the database is read-only (a standby): no primary
    /// reachable`, or `the database did not answer within 3 s`.
    reason: &'static str,
}

/// 200 `healthy` when the database answers, 503 `unhealthy` otherwise; never needs a key.
#[utoipa::path(
    operation_id = "getHealth",
    get,
    path = "/api/health",
    tag = "Health",
    summary = "Health check",


    responses(
        (status = 200, description = "Service and database reachable", body = HealthyResponse),
        (status = 503, description = "Database unreachable", body = UnhealthyResponse)
    )
)]
pub async fn health(state: web::Data<AppState>) -> HttpResponse {
    let check = tokio::time::timeout(HEALTH_DEADLINE, state.health.check_database()).await;
    let timestamp = rfc3339(state.clock.now());
    match check {
        Ok(Ok(())) => HttpResponse::Ok().json(HealthyResponse {
            status: "healthy",
            timestamp,
            service: SERVICE_NAME,
            version: env!("CARGO_PKG_VERSION"),
        }),
        failure => {
            let (cause, reason) = match failure {
                Ok(Err(err)) => {
                    let cause = err.to_string();
                    let read_only = timetrack_adapters::postgres::HEALTH_READ_ONLY;
                    let reason = if cause.contains(read_only) {
                        read_only
                    } else {
                        "no database connection"
                    };
                    (cause, reason)
                }
                _ => (
                    format!("no answer within {HEALTH_DEADLINE:?}"),
                    "the database did not answer within 3 s",
                ),
            };
            static FAILURES: timetrack_adapters::LogThrottle =
                timetrack_adapters::LogThrottle::new();
            if let Some(unlogged) = FAILURES.admit() {
                tracing::warn!(
                    error = cause,
                    unlogged_since_last = unlogged,
                    "health check failed"
                );
            }
            HttpResponse::build(StatusCode::SERVICE_UNAVAILABLE)
                .insert_header((
                    actix_web::http::header::RETRY_AFTER,
                    crate::error::UNAVAILABLE_RETRY_AFTER_SECS.to_string(),
                ))
                .json(UnhealthyResponse {
                    status: "unhealthy",
                    timestamp,
                    service: SERVICE_NAME,
                    error: "database connection failed",
                    reason,
                })
        }
    }
}
