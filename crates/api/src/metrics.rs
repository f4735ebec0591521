//! The metrics listener: `GET /metrics` in the Prometheus (OpenMetrics) text format, served on
//! its own address so that it is never exposed on the API's port.

use std::sync::Arc;
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::{App, HttpResponse, web};
use timetrack_adapters::Metrics;
use timetrack_adapters::metrics::CONTENT_TYPE;
use timetrack_domain::ports::{Clock, DeliveryQueue};

use crate::error::json_error;

/// Longest wait for the queue figures; a scrape never hangs on a stalled database.
const QUEUE_READ_TIMEOUT: Duration = Duration::from_secs(2);

/// What the metrics endpoint reads.
#[derive(Clone)]
pub struct MetricsState {
    /// The process's metrics, shared with the API and the workers.
    pub metrics: Arc<Metrics>,
    /// The delivery queue, read at each scrape.
    pub queue: Arc<dyn DeliveryQueue>,
    /// The current time.
    pub clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for MetricsState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsState").finish_non_exhaustive()
    }
}

/// The metrics application: `GET /metrics`, JSON 404 and 405 elsewhere.
pub fn metrics_app(
    state: MetricsState,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    App::new()
        .app_data(web::Data::new(state))
        .service(
            web::resource("/metrics")
                .route(web::get().to(metrics))
                .default_service(web::to(|| {
                    crate::error::method_not_allowed("GET".to_owned())
                })),
        )
        .default_service(web::to(|| async {
            json_error(StatusCode::NOT_FOUND, "Not found")
        }))
}

async fn metrics(state: web::Data<MetricsState>) -> HttpResponse {
    let stats = tokio::time::timeout(QUEUE_READ_TIMEOUT, state.queue.stats(state.clock.now()))
        .await
        .ok()
        .and_then(|read| {
            read.inspect_err(|err| tracing::warn!(error = %err, "reading queue metrics failed"))
                .ok()
        });
    HttpResponse::Ok()
        .content_type(CONTENT_TYPE)
        .body(state.metrics.render(stats))
}
