//! The application: `build_app`, which `main` and the tests share, and the middleware every
//! request passes through (request span, JSON errors, panics, idempotency).

use actix_web::body::{BoxBody, EitherBody, MessageBody};
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::middleware::{Next, from_fn};
use actix_web::{App, HttpMessage, web};
use timetrack_domain::ratelimit::RateDecision;
use tracing_actix_web::{RequestId, RootSpanBuilder, TracingLogger};

use crate::error::json_error;
use crate::routes;
use crate::routes::RoutePattern;
use crate::state::AppState;

/// Largest request body accepted, in bytes; larger bodies get 413.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Builds the whole application without binding a socket.
pub fn build_app(
    state: AppState,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    app_with(state, routes::configure)
}

/// The application with `routes` behind the shared extractor settings, fallback 404 and
/// middleware; `build_app` passes the real routes, unit tests their own.
fn app_with(
    state: AppState,
    routes: impl FnOnce(&mut web::ServiceConfig),
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let state = web::Data::new(state);
    App::new()
        .app_data(state.clone())
        .app_data(web::PayloadConfig::new(MAX_BODY_BYTES))
        .app_data(
            web::PathConfig::default()
                .error_handler(|_, _| json_error_value(StatusCode::NOT_FOUND, "Not found")),
        )
        .configure(routes)
        .service(crate::mcp::scope(state, MAX_BODY_BYTES))
        .default_service(web::to(|| async {
            json_error(StatusCode::NOT_FOUND, "Not found")
        }))
        // Inside idempotency: a stored answer keeps the position its write committed at.
        .wrap(from_fn(crate::replica::note_commits))
        .wrap(from_fn(crate::idempotency::idempotency))
        .wrap(from_fn(contain_panics))
        .wrap(from_fn(json_errors))
        // Every answer, errors included: a browser never takes JSON for something to run.
        .wrap(
            actix_web::middleware::DefaultHeaders::new()
                .add((header::X_CONTENT_TYPE_OPTIONS, "nosniff")),
        )
        .wrap(from_fn(access_log))
        .wrap(TracingLogger::<RequestSpan>::new())
}

/// The span of each request: its request id, so that every line logged while it is answered
/// (its access line, an error's cause, a panic) says which request it belongs to.
///
/// tracing-actix-web's default span (method, path, host, scheme, HTTP version, an OpenTelemetry
/// name...) computes its values for every request whether the span is recorded or not, and
/// matches the path against every route a second time for the route: work a cheap request pays
/// for on every call, logged or not (ADR 0015 in docs/adr/). Its fields would also be repeated in
/// front of every line logged inside the request. Here the span holds the id alone; what the
/// request was and how it ended is the access line's (see [`access_log`]).
struct RequestSpan;

impl RootSpanBuilder for RequestSpan {
    fn on_request_start(request: &ServiceRequest) -> tracing::Span {
        tracing::info_span!(
            "request",
            id = request
                .extensions()
                .get::<RequestId>()
                .map(|id| tracing::field::display(*id)),
        )
    }

    fn on_request_end<B: MessageBody>(
        _: tracing::Span,
        _: &Result<ServiceResponse<B>, actix_web::Error>,
    ) {
    }
}

/// The target of the access lines: `--log info,access=off` leaves them out.
const ACCESS: &str = "access";

/// The access log: one INFO line per answered request, inside its span (so with its request id):
/// method, path, the route pattern when the path holds ids (or `unmatched`), status, time taken in
/// milliseconds, the client's address, the start of its user agent and, for a refused request, the
/// error's message. Values are computed only when the line is logged.
///
/// Text a client chose (path, user agent) is recorded as a string, which the text format quotes and
/// escapes, so it cannot pass for fields of its own; the client's address is an address (see
/// `client_ip`), never a header's text.
async fn access_log(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if !tracing::enabled!(target: ACCESS, tracing::Level::INFO) {
        return next.call(req).await;
    }
    let started = std::time::Instant::now();
    let method = req.method().clone();
    let path = req.path().to_owned();
    let client = req.app_data::<web::Data<AppState>>().and_then(|state| {
        state
            .trusted_proxies
            .client(req.peer_addr().map(|a| a.ip()), req.headers())
    });
    let agent = req
        .headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(|agent| shortened(agent).into_owned());
    let answered = next.call(req).await;
    let (route, status, error) = match &answered {
        Ok(res) => (
            route_of(res),
            res.status(),
            res.response().error().map(ToString::to_string),
        ),
        Err(err) => (
            "unmatched",
            err.as_response_error().status_code(),
            Some(err.to_string()),
        ),
    };
    let millis = started.elapsed().as_secs_f64() * 1000.0;
    // The error's message only (never a debug dump of it); 5xx causes are logged by the error
    // itself, and a 4xx is the client's mistake, not a warning about the service.
    tracing::info!(
        target: ACCESS,
        method = %method,
        path = path.as_str(),
        route = (route != path).then_some(route),
        status = status.as_u16(),
        ms = %format_args!("{millis:.1}"),
        client = client.map(tracing::field::display),
        agent = agent.as_deref(),
        error = error.as_deref(),
    );
    answered
}

/// Most characters of a user agent the access log keeps: enough to tell clients apart, while a
/// browser's (over 100 characters) would make every line of the log twice as long.
const USER_AGENT_SHOWN: usize = 64;

/// `agent`, cut after [`USER_AGENT_SHOWN`] characters (with `…` when it was longer).
fn shortened(agent: &str) -> std::borrow::Cow<'_, str> {
    match agent.char_indices().nth(USER_AGENT_SHOWN) {
        None => agent.into(),
        Some((end, _)) => format!("{}…", &agent[..end]).into(),
    }
}

/// The pattern of the route that answered, or `unmatched`. A response given before routing (an
/// idempotent replay, a rate-limit refusal) is matched against the routes here.
fn route_of<B>(res: &ServiceResponse<B>) -> &'static str {
    let request = res.request();
    match request.app_data::<RoutePattern>() {
        Some(pattern) => pattern.0,
        None => request
            .match_pattern()
            .and_then(|pattern| routes::registered_pattern(&pattern))
            .unwrap_or("unmatched"),
    }
}

fn json_error_value(status: StatusCode, message: &'static str) -> actix_web::Error {
    actix_web::error::InternalError::from_response(message, json_error(status, message)).into()
}

/// `at` in Unix seconds, rounded up (a slot frees no earlier than this).
fn unix_seconds_up(at: time::OffsetDateTime) -> i64 {
    let secs = at.unix_timestamp();
    if at.nanosecond() > 0 { secs + 1 } else { secs }
}

/// The last line of defence: a panic anywhere below (a handler, an extractor, the idempotency
/// layer) becomes a JSON 500 instead of a dropped connection, and the worker goes on serving.
/// The panic hook `telemetry::init` installs has logged it, on one line.
///
/// The answer is an error rather than a response: a response needs the request, which routing
/// must hold alone (a clone kept here would make it panic), and the server turns an error into
/// its response.
async fn contain_panics(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    use futures_util::FutureExt as _;
    match std::panic::AssertUnwindSafe(next.call(req))
        .catch_unwind()
        .await
    {
        Ok(answered) => answered,
        Err(_) => Err(json_error_value(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Internal server error",
        )),
    }
}

/// The safety net: any error response that is not JSON yet (actix's own payload, routing and
/// extractor errors) is replaced by `{"error": <reason>}`; every response gets `x-request-id`.
async fn json_errors(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<BoxBody>>, actix_web::Error> {
    let started = std::time::Instant::now();
    let request_id = req.extensions().get::<RequestId>().map(ToString::to_string);
    let metrics = req
        .app_data::<web::Data<AppState>>()
        .map(|state| state.metrics.clone());
    let res = next.call(req).await?;
    let status = res.status();
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let mut res = if (status.is_client_error() || status.is_server_error()) && !is_json {
        let message = match status {
            StatusCode::PAYLOAD_TOO_LARGE => "Payload too large",
            StatusCode::NOT_FOUND => "Not found",
            StatusCode::METHOD_NOT_ALLOWED => "Method not allowed",
            StatusCode::INTERNAL_SERVER_ERROR => "Internal server error",
            other => other.canonical_reason().unwrap_or("Request failed"),
        };
        let (req, _) = res.into_parts();
        ServiceResponse::new(req, json_error(status, message)).map_into_right_body()
    } else {
        res.map_body(|_, body| EitherBody::left(body.boxed()))
    };
    let decision = res.request().extensions().get::<RateDecision>().copied();
    if let Some(decision) = decision {
        let headers = res.headers_mut();
        for (name, value) in [
            ("x-ratelimit-limit", decision.limit.to_string()),
            ("x-ratelimit-remaining", decision.remaining.to_string()),
            (
                "x-ratelimit-reset",
                unix_seconds_up(decision.reset_at).to_string(),
            ),
        ] {
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.insert(header::HeaderName::from_static(name), value);
            }
        }
    }
    if let Some(id) = request_id.and_then(|id| HeaderValue::from_str(&id).ok()) {
        res.headers_mut()
            .insert(header::HeaderName::from_static("x-request-id"), id);
    }
    if let Some(metrics) = metrics {
        metrics.observe_request(
            res.request().method().as_str(),
            route_of(&res),
            status.as_u16(),
            started.elapsed(),
        );
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use actix_web::HttpResponse;
    use actix_web::dev::Service as _;
    use actix_web::test;
    use serde_json::{Value, json};

    use super::*;
    use crate::extract::JsonBody;
    use crate::state::StateSettings;

    #[derive(Debug, serde::Deserialize)]
    struct Payload {
        name: String,
    }

    #[actix_web::test]
    async fn the_access_log_keeps_the_first_64_characters_of_a_user_agent() {
        assert_eq!(shortened("curl/8.5.0"), "curl/8.5.0");
        let exact = "é".repeat(USER_AGENT_SHOWN);
        assert_eq!(shortened(&exact), exact);
        let long = format!("{exact}x");
        assert_eq!(shortened(&long), format!("{exact}…"));
    }

    /// A state whose pool never connects, for routes that do not touch the database.
    fn offline_state() -> AppState {
        let pool = timetrack_adapters::build_pool(
            "postgres://nobody@127.0.0.1:1/none",
            timetrack_adapters::PoolSettings::default(),
        )
        .unwrap();
        AppState::new(
            pool,
            Arc::new(timetrack_adapters::SystemClock),
            StateSettings::default(),
        )
    }

    /// An app with the production layers and one echo route reading a JSON body.
    async fn echo_app() -> impl actix_web::dev::Service<
        actix_http::Request,
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
    > {
        test::init_service(app_with(offline_state(), |cfg| {
            cfg.route(
                "/echo",
                web::post().to(|body: JsonBody<Payload>| async move {
                    HttpResponse::Ok().json(json!({"name": body.into_inner().name}))
                }),
            );
        }))
        .await
    }

    async fn post(body: Vec<u8>) -> (u16, Value) {
        let app = echo_app().await;
        let req = test::TestRequest::post()
            .uri("/echo")
            .insert_header(("content-type", "application/json"))
            .set_payload(body)
            .to_request();
        let res = test::call_service(&app, req).await;
        let status = res.status().as_u16();
        assert_eq!(
            res.headers().get("content-type").unwrap(),
            "application/json"
        );
        (
            status,
            serde_json::from_slice(&test::read_body(res).await).unwrap(),
        )
    }

    #[actix_web::test]
    async fn a_panicking_handler_is_a_json_500_and_the_app_keeps_serving() {
        let app = test::init_service(app_with(offline_state(), |cfg| {
            cfg.route(
                "/panic",
                web::get().to(|| async {
                    if std::hint::black_box(true) {
                        panic!("a bug in a handler");
                    }
                    HttpResponse::Ok().finish()
                }),
            )
            .route(
                "/fine",
                web::get().to(|| async { HttpResponse::Ok().json(json!({})) }),
            );
        }))
        .await;
        for _ in 0..2 {
            // As the server does, an error is answered with its own response.
            let res = match app
                .call(test::TestRequest::get().uri("/panic").to_request())
                .await
            {
                Ok(res) => res.into_parts().1.map_into_boxed_body(),
                Err(err) => err.error_response(),
            };
            assert_eq!(res.status(), 500);
            assert_eq!(
                res.headers().get("content-type").unwrap(),
                "application/json"
            );
            assert_eq!(
                actix_web::body::to_bytes(res.into_body()).await.unwrap(),
                r#"{"error":"Internal server error"}"#
            );
            let res =
                test::call_service(&app, test::TestRequest::get().uri("/fine").to_request()).await;
            assert_eq!(res.status(), 200);
        }
    }

    #[actix_web::test]
    async fn a_valid_body_is_parsed() {
        assert_eq!(
            post(br#"{"name":"x"}"#.to_vec()).await,
            (200, json!({"name": "x"}))
        );
    }

    #[actix_web::test]
    async fn malformed_or_mistyped_bodies_are_json_400() {
        for (body, detail) in [
            (
                &b"{"[..],
                "the body is not valid JSON: EOF while parsing an object",
            ),
            (b"", "the body is empty; send a JSON object"),
            (b"null", "the body must be a JSON object"),
            (b"[]", "the body must be a JSON object"),
            (
                br#"{"name": 5}"#,
                "name: invalid type: integer `5`, expected a string",
            ),
            (b"\xff\xfe", "the body is not valid JSON: expected value"),
            (br#"{"other":"x"}"#, "missing field `name`"),
            (
                br#"{"name":"x"} {}"#,
                "the body is not valid JSON: trailing characters",
            ),
        ] {
            let (status, answer) = post(body.to_vec()).await;
            assert_eq!(status, 400, "{body:?}");
            assert_eq!(answer["error"], "Invalid JSON body", "{body:?}");
            assert!(
                answer["detail"].as_str().unwrap().starts_with(detail),
                "{body:?}: {answer}"
            );
        }
    }

    #[actix_web::test]
    async fn bodies_over_64_kib_are_json_413() {
        let big = format!(r#"{{"name":"{}"}}"#, "a".repeat(MAX_BODY_BYTES));
        assert_eq!(
            post(big.into_bytes()).await,
            (413, json!({"error": "Payload too large"}))
        );
        let fits = format!(r#"{{"name":"{}"}}"#, "a".repeat(MAX_BODY_BYTES - 20));
        assert_eq!(post(fits.into_bytes()).await.0, 200);
    }
}
