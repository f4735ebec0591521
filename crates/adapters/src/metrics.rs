//! Prometheus metrics of one process: HTTP requests, delivery attempts and the delivery queue,
//! rendered in the OpenMetrics text format that Prometheus scrapes.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use timetrack_domain::delivery::{AttemptOutcome, AttemptRecord, NextStep, QueueStats};

/// Connections the HTTP server ended on a client's malformed bytes, process-wide: counted by the
/// logger when the HTTP stack reports one (it knows nothing of [`Metrics`]), rendered by every
/// [`Metrics`] of the process.
static CLIENT_FAULTS: std::sync::LazyLock<Counter> = std::sync::LazyLock::new(Counter::default);

/// Counts a connection ended on a client's malformed bytes.
pub fn count_client_fault() {
    CLIENT_FAULTS.inc();
}

/// The content type of [`Metrics::render`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    route: &'static str,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: &'static str,
    route: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AttemptLabels {
    /// `delivered`, `rejected` or `failed`.
    outcome: &'static str,
    /// The status class (`2xx` ... `5xx`) or the failure reason (`timeout`, `connect`, ...).
    detail: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    /// `delivered`, `retrying`, `failed` or `gone`.
    result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NoticeLabels {
    /// `WEBHOOK_FAILING`, `WEBHOOK_DISABLED` or `WEBHOOK_RECOVERED`.
    event_type: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    /// `due`, `scheduled` or `in_flight`.
    state: &'static str,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// Upper bounds of the latency buckets, in seconds: 0.5 ms to 16 s.
fn latency_histogram() -> Histogram {
    Histogram::new([
        0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 16.0,
    ])
}

/// The metrics of one process. Cheap to share behind an `Arc`; recording never blocks on I/O.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    request_seconds: HistogramFamily<RouteLabels>,
    attempts: Family<AttemptLabels, Counter>,
    attempt_seconds: Histogram,
    deliveries: Family<ResultLabels, Counter>,
    record_errors: Counter,
    notices: Family<NoticeLabels, Counter>,
    queue: Family<StateLabels, Gauge>,
    oldest_due_seconds: Gauge<f64, AtomicU64>,
    queue_readable: Gauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every metric, registered under the `timetrack_` prefix.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("timetrack");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by method, route pattern and status",
            requests.clone(),
        );
        let request_seconds: HistogramFamily<RouteLabels> =
            Family::new_with_constructor(latency_histogram);
        registry.register(
            "http_request_duration_seconds",
            "Time to answer HTTP requests, by method and route pattern",
            request_seconds.clone(),
        );
        let attempts = Family::<AttemptLabels, Counter>::default();
        registry.register(
            "webhook_attempts",
            "Webhook delivery attempts, by outcome and status class or failure reason",
            attempts.clone(),
        );
        let attempt_seconds = latency_histogram();
        registry.register(
            "webhook_attempt_duration_seconds",
            "Duration of webhook delivery attempts, from connecting to the end of the response",
            attempt_seconds.clone(),
        );
        let deliveries = Family::<ResultLabels, Counter>::default();
        registry.register(
            "webhook_deliveries",
            "What followed each attempt: delivered, retrying, failed (no attempts left) or gone \
             (410, subscription ended)",
            deliveries.clone(),
        );
        let record_errors = Counter::default();
        registry.register(
            "webhook_record_errors",
            "Attempts whose outcome could not be recorded (the delivery is sent again once its \
             lease expires)",
            record_errors.clone(),
        );
        registry.register(
            "http_client_faults",
            "Connections ended on a client's bytes that are not HTTP/1 (logged at DEBUG, target \
             actix_http::client_fault)",
            CLIENT_FAULTS.clone(),
        );
        let notices = Family::<NoticeLabels, Counter>::default();
        registry.register(
            "webhook_notices",
            "Notices to webhook owners written, by type (WEBHOOK_FAILING, WEBHOOK_DISABLED, \
             WEBHOOK_RECOVERED)",
            notices.clone(),
        );
        let queue = Family::<StateLabels, Gauge>::default();
        registry.register(
            "webhook_queue_depth",
            "Pending deliveries in the shared queue, by state, read at scrape time",
            queue.clone(),
        );
        let oldest_due_seconds = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "webhook_oldest_due_age_seconds",
            "How long the oldest due delivery has waited past its attempt time, read at scrape time",
            oldest_due_seconds.clone(),
        );
        let queue_readable = Gauge::default();
        registry.register(
            "webhook_queue_readable",
            "1 if the last scrape could read the queue from the database, else 0",
            queue_readable.clone(),
        );
        Self {
            registry,
            requests,
            request_seconds,
            attempts,
            attempt_seconds,
            deliveries,
            record_errors,
            notices,
            queue,
            oldest_due_seconds,
            queue_readable,
        }
    }

    /// Counts an answered HTTP request. `route` is the matched pattern (not the path, so ids do
    /// not make new series), or `unmatched`. The labels are borrowed, so counting allocates
    /// nothing once a series exists.
    pub fn observe_request(
        &self,
        method: &str,
        route: &'static str,
        status: u16,
        elapsed: Duration,
    ) {
        // Any other method is one series, so clients cannot create series at will.
        let method = match method {
            "GET" => "GET",
            "HEAD" => "HEAD",
            "POST" => "POST",
            "PUT" => "PUT",
            "PATCH" => "PATCH",
            "DELETE" => "DELETE",
            "OPTIONS" => "OPTIONS",
            _ => "OTHER",
        };
        self.requests
            .get_or_create(&RequestLabels {
                method,
                route,
                status,
            })
            .inc();
        self.request_seconds
            .get_or_create(&RouteLabels { method, route })
            .observe(elapsed.as_secs_f64());
    }

    /// Counts a recorded delivery attempt and what followed it.
    pub fn observe_attempt(&self, record: &AttemptRecord) {
        let (outcome, detail) = match &record.report.outcome {
            AttemptOutcome::Delivered { status } => ("delivered", status_class(*status)),
            AttemptOutcome::Rejected { status, .. } => ("rejected", status_class(*status)),
            AttemptOutcome::Failed { reason, .. } => ("failed", reason.as_str()),
        };
        self.attempts
            .get_or_create(&AttemptLabels { outcome, detail })
            .inc();
        self.attempt_seconds
            .observe(record.report.latency.as_seconds_f64().max(0.0));
        let result = match record.next {
            NextStep::Done => "delivered",
            NextStep::RetryAt(_) => "retrying",
            NextStep::GiveUp => "failed",
            NextStep::Unsubscribe => "gone",
        };
        self.deliveries
            .get_or_create(&ResultLabels { result })
            .inc();
    }

    /// Counts a notice to a webhook's owner.
    pub fn observe_notice(&self, event_type: timetrack_domain::model::EventType) {
        self.notices
            .get_or_create(&NoticeLabels {
                event_type: event_type.as_str(),
            })
            .inc();
    }

    /// Counts an attempt whose outcome could not be recorded.
    pub fn observe_record_error(&self) {
        self.record_errors.inc();
    }

    /// The registry rendered in the OpenMetrics text format, with the queue figures `queue`
    /// (`None` when the database could not be read: the gauges keep their last values and
    /// `timetrack_webhook_queue_readable` drops to 0).
    pub fn render(&self, queue: Option<QueueStats>) -> String {
        match queue {
            Some(stats) => {
                for (state, value) in [
                    ("due", stats.due),
                    ("scheduled", stats.scheduled),
                    ("in_flight", stats.in_flight),
                ] {
                    self.queue
                        .get_or_create(&StateLabels { state })
                        .set(i64::try_from(value).unwrap_or(i64::MAX));
                }
                self.oldest_due_seconds
                    .set(stats.oldest_due_age.as_seconds_f64().max(0.0));
                self.queue_readable.set(1);
            }
            None => {
                self.queue_readable.set(0);
            }
        }
        let mut out = String::with_capacity(8 * 1024);
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

fn status_class(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

#[cfg(test)]
mod tests {
    use time::OffsetDateTime;
    use timetrack_domain::delivery::{AttemptReport, FailureReason};

    use super::*;

    fn record(outcome: AttemptOutcome, next: NextStep, millis: i64) -> AttemptRecord {
        AttemptRecord {
            started_at: OffsetDateTime::UNIX_EPOCH,
            report: AttemptReport {
                outcome,
                latency: time::Duration::milliseconds(millis),
                response_excerpt: None,
            },
            next,
            disable_subscription: false,
            notice: None,
            signature: None,
            custom_headers: None,
        }
    }

    fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line starting with {prefix} in\n{text}"))
    }

    #[test]
    fn notices_to_owners_are_counted_by_type() {
        use timetrack_domain::model::EventType;
        let metrics = Metrics::new();
        metrics.observe_notice(EventType::WebhookFailing);
        metrics.observe_notice(EventType::WebhookFailing);
        metrics.observe_notice(EventType::WebhookDisabled);
        let text = metrics.render(None);
        line(
            &text,
            r#"timetrack_webhook_notices_total{event_type="WEBHOOK_FAILING"} 2"#,
        );
        line(
            &text,
            r#"timetrack_webhook_notices_total{event_type="WEBHOOK_DISABLED"} 1"#,
        );
    }

    #[test]
    fn attempts_are_counted_by_outcome_with_their_latency() {
        let metrics = Metrics::new();
        metrics.observe_attempt(&record(
            AttemptOutcome::Delivered { status: 204 },
            NextStep::Done,
            3,
        ));
        metrics.observe_attempt(&record(
            AttemptOutcome::Delivered { status: 200 },
            NextStep::Done,
            1,
        ));
        metrics.observe_attempt(&record(
            AttemptOutcome::Rejected {
                status: 503,
                retry_after: None,
            },
            NextStep::RetryAt(OffsetDateTime::UNIX_EPOCH),
            7,
        ));
        metrics.observe_attempt(&record(
            AttemptOutcome::Failed {
                reason: FailureReason::Timeout,
                detail: String::new(),
            },
            NextStep::GiveUp,
            15_000,
        ));
        metrics.observe_attempt(&record(
            AttemptOutcome::Rejected {
                status: 410,
                retry_after: None,
            },
            NextStep::Unsubscribe,
            2,
        ));
        let text = metrics.render(None);
        assert_eq!(
            line(
                &text,
                r#"timetrack_webhook_attempts_total{outcome="delivered",detail="2xx"}"#
            ),
            r#"timetrack_webhook_attempts_total{outcome="delivered",detail="2xx"} 2"#
        );
        line(
            &text,
            r#"timetrack_webhook_attempts_total{outcome="rejected",detail="5xx"} 1"#,
        );
        line(
            &text,
            r#"timetrack_webhook_attempts_total{outcome="failed",detail="timeout"} 1"#,
        );
        for (result, n) in [
            ("delivered", 2),
            ("retrying", 1),
            ("failed", 1),
            ("gone", 1),
        ] {
            line(
                &text,
                &format!(r#"timetrack_webhook_deliveries_total{{result="{result}"}} {n}"#),
            );
        }
        line(&text, "timetrack_webhook_attempt_duration_seconds_count 5");
        line(
            &text,
            r#"timetrack_webhook_attempt_duration_seconds_bucket{le="0.001"} 1"#,
        );
        line(
            &text,
            r#"timetrack_webhook_attempt_duration_seconds_bucket{le="0.005"} 3"#,
        );
        line(
            &text,
            r#"timetrack_webhook_attempt_duration_seconds_bucket{le="+Inf"} 5"#,
        );
        line(&text, "timetrack_webhook_queue_readable 0");
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn queue_figures_are_those_of_the_last_scrape() {
        let metrics = Metrics::new();
        let text = metrics.render(Some(QueueStats {
            due: 12,
            scheduled: 3,
            in_flight: 4,
            oldest_due_age: time::Duration::milliseconds(2_500),
        }));
        line(&text, r#"timetrack_webhook_queue_depth{state="due"} 12"#);
        line(
            &text,
            r#"timetrack_webhook_queue_depth{state="scheduled"} 3"#,
        );
        line(
            &text,
            r#"timetrack_webhook_queue_depth{state="in_flight"} 4"#,
        );
        line(&text, "timetrack_webhook_oldest_due_age_seconds 2.5");
        line(&text, "timetrack_webhook_queue_readable 1");
        let text = metrics.render(None);
        line(&text, "timetrack_webhook_queue_readable 0");
        line(&text, "timetrack_webhook_oldest_due_age_seconds 2.5");
    }

    #[test]
    fn requests_are_counted_by_route_pattern_not_path() {
        let metrics = Metrics::new();
        for _ in 0..3 {
            metrics.observe_request("GET", "/api/clients/{id}", 200, Duration::from_micros(800));
        }
        metrics.observe_request("POST", "/api/clients", 400, Duration::from_millis(3));
        metrics.observe_request("BREW", "unmatched", 404, Duration::from_millis(1));
        metrics.observe_request("QUUX", "unmatched", 404, Duration::from_millis(1));
        let text = metrics.render(None);
        line(
            &text,
            r#"timetrack_http_requests_total{method="GET",route="/api/clients/{id}",status="200"} 3"#,
        );
        line(
            &text,
            r#"timetrack_http_requests_total{method="POST",route="/api/clients",status="400"} 1"#,
        );
        line(
            &text,
            r#"timetrack_http_request_duration_seconds_bucket{le="0.001",method="GET",route="/api/clients/{id}"} 3"#,
        );
        line(
            &text,
            r#"timetrack_http_requests_total{method="OTHER",route="unmatched",status="404"} 2"#,
        );
    }
}
