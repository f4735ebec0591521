//! Routes: one module per resource, each handler thin (parse, call one service, map the result).

pub(crate) mod catalog;
pub(crate) mod clients;
pub(crate) mod console;
pub(crate) mod docs;
pub(crate) mod event_types;
pub(crate) mod events;
pub(crate) mod fallbacks;
pub(crate) mod find_client;
pub(crate) mod health;
pub mod invoices;
pub(crate) mod keys;
pub(crate) mod lookups;
pub(crate) mod me;
pub(crate) mod members;
pub(crate) mod rates;
pub(crate) mod reports;
mod reports_csv;
pub(crate) mod time_entries;
pub(crate) mod webhook_deliveries;
pub(crate) mod webhooks;
pub(crate) mod workspace;

use std::sync::LazyLock;

use actix_web::http::Method;
use actix_web::{Route, web};
use serde::Serialize;
use timetrack_domain::model::Page;
use utoipa::OpenApi as _;
use utoipa::openapi::HttpMethod;
use utoipa_actix_web::OpenApiFactory;

use timetrack_domain::DomainError;
use timetrack_domain::model::{DeliveryId, Principal, WebhookId};

use crate::error::{ApiError, method_not_allowed};
use crate::openapi::OpenApiDocument;
use crate::state::AppState;

/// How the OpenAPI document describes a webhook id in a path.
pub(crate) const WEBHOOK_ID: &str = "`wh_...` (a malformed one is 404, like an unknown one)";

/// The webhook a path names: a malformed id is 404 `Webhook not found`, as an unknown one is.
/// Parsed where the handler calls its service, so every check the handler makes before keeps
/// its place.
pub(crate) fn webhook_id(raw: &str) -> Result<WebhookId, ApiError> {
    WebhookId::parse(raw).ok_or_else(|| ApiError::from(DomainError::NotFound("webhook")))
}

/// The delivery a path names, as tenants see its id ([`DeliveryId::parse_shown`]). One that is
/// malformed names no delivery: 404 `Delivery not found` once `webhook` is found as the caller's
/// (404 `Webhook not found` otherwise), as for an unknown delivery.
pub(crate) async fn shown_delivery(
    state: &AppState,
    caller: &Principal,
    webhook: &WebhookId,
    raw: &str,
) -> Result<DeliveryId, ApiError> {
    match DeliveryId::parse_shown(raw, state.webhooks.masks()) {
        Some(delivery) => Ok(delivery),
        None => {
            state.webhooks.get(caller, webhook).await?;
            Err(DomainError::NotFound("delivery").into())
        }
    }
}

/// `{data: [...], next_cursor: string|null}`, the body of every paginated list.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ListResponse<T> {
    data: Vec<T>,
    next_cursor: Option<String>,
}

impl<T> ListResponse<T> {
    /// Converts a domain page, encoding its cursor.
    pub fn from_page<U>(page: Page<U>, convert: impl Fn(U) -> T) -> Self {
        Self {
            data: page.items.into_iter().map(convert).collect(),
            next_cursor: page.next.map(|c| c.encode()),
        }
    }
}

/// The pattern of the resource that served a request, in the request's app data: the route
/// label of metrics and logs, read without matching the path again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoutePattern(pub &'static str);

/// One endpoint: the handler of one method on one path. Its method, path and OpenAPI operation
/// all come from the handler's `#[utoipa::path]`, so a route is declared there and named once in
/// [`ENDPOINTS`].
struct Endpoint {
    path: &'static str,
    method: Method,
    route: fn() -> Route,
    doc: Box<dyn OpenApiFactory + Send + Sync>,
}

impl Endpoint {
    /// The endpoint of `handler`, described by `described` (the struct `#[utoipa::path]` made).
    fn new<P>(described: P, route: fn() -> Route) -> Self
    where
        P: utoipa::Path + OpenApiFactory + Send + Sync + 'static,
    {
        let methods = P::methods();
        let [method] = methods.as_slice() else {
            panic!(
                "{} declares {} methods; one per handler",
                P::path(),
                methods.len()
            );
        };
        let method = match method {
            HttpMethod::Get => Method::GET,
            HttpMethod::Post => Method::POST,
            HttpMethod::Put => Method::PUT,
            HttpMethod::Patch => Method::PATCH,
            HttpMethod::Delete => Method::DELETE,
            HttpMethod::Head => Method::HEAD,
            HttpMethod::Options => Method::OPTIONS,
            HttpMethod::Trace => Method::TRACE,
        };
        Self {
            // Once per process (the list is built once): the route label of logs and metrics.
            path: Box::leak(P::path().into_boxed_str()),
            method,
            route,
            doc: Box::new(described),
        }
    }
}

/// `module::handler`, as an [`Endpoint`].
macro_rules! endpoint {
    ($module:ident :: $handler:ident) => {
        pastey::paste! {
            Endpoint::new($module::[<__path_ $handler>], || web::to($module::$handler))
        }
    };
}

/// Every endpoint of the API, in the order actix tries them.
///
/// A pattern with a `{param}` is matched by a regular expression, a fixed one by comparing
/// strings. The integration surface's fixed paths, polled by the automation platform, come
/// first; the patterns with parameters of the integration surface come last, so no request runs
/// more of them than it must. No two patterns overlap, so the order changes nothing else.
static ENDPOINTS: LazyLock<Vec<Endpoint>> = LazyLock::new(|| {
    vec![
        // The integration surface's paths without parameters.
        endpoint!(fallbacks::manual_entry),
        endpoint!(fallbacks::stop),
        endpoint!(fallbacks::start),
        endpoint!(fallbacks::clients),
        endpoint!(find_client::find),
        endpoint!(lookups::find_projects),
        endpoint!(lookups::running),
        endpoint!(webhooks::subscribe),
        endpoint!(webhooks::list),
        // The core REST API.
        endpoint!(health::health),
        endpoint!(docs::openapi_json),
        endpoint!(me::me),
        endpoint!(workspace::get),
        endpoint!(workspace::update),
        endpoint!(members::list),
        endpoint!(members::update),
        endpoint!(keys::list),
        endpoint!(keys::create),
        endpoint!(keys::revoke),
        endpoint!(rates::list),
        endpoint!(rates::create),
        endpoint!(rates::delete),
        endpoint!(reports::summary),
        endpoint!(reports::detailed),
        endpoint!(reports::uninvoiced),
        // Before /api/invoices/{id}, which would take "preview" for an id.
        endpoint!(invoices::preview),
        endpoint!(invoices::create),
        endpoint!(invoices::list),
        endpoint!(invoices::get),
        endpoint!(invoices::update),
        endpoint!(invoices::delete),
        endpoint!(invoices::issue),
        endpoint!(invoices::void),
        endpoint!(invoices::add_payment),
        endpoint!(invoices::delete_payment),
        endpoint!(clients::create),
        endpoint!(clients::list),
        endpoint!(clients::get),
        endpoint!(clients::update),
        endpoint!(clients::delete),
        endpoint!(catalog::create_project),
        endpoint!(catalog::list_projects),
        endpoint!(catalog::get_project),
        endpoint!(catalog::update_project),
        endpoint!(catalog::delete_project),
        endpoint!(catalog::create_task),
        endpoint!(catalog::list_tasks),
        endpoint!(catalog::create_tag),
        endpoint!(catalog::list_tags),
        endpoint!(time_entries::start),
        endpoint!(time_entries::stop),
        endpoint!(time_entries::current),
        endpoint!(time_entries::create),
        endpoint!(time_entries::list),
        endpoint!(time_entries::get),
        endpoint!(time_entries::update),
        endpoint!(time_entries::delete),
        // The integration surface's paths with a subscription id.
        endpoint!(webhooks::get),
        endpoint!(webhooks::update),
        endpoint!(webhooks::enable),
        endpoint!(webhooks::disable),
        endpoint!(webhooks::rotate_secret),
        endpoint!(webhooks::delete),
        endpoint!(webhooks::stats),
        endpoint!(webhook_deliveries::test),
        endpoint!(webhook_deliveries::replay),
        endpoint!(webhook_deliveries::deliveries),
        endpoint!(webhook_deliveries::delivery),
        endpoint!(webhook_deliveries::resend),
        endpoint!(webhook_deliveries::event_deliveries),
        endpoint!(events::feed),
        endpoint!(event_types::list),
    ]
});

/// The OpenAPI document of [`ENDPOINTS`], as served: built once.
static DOCUMENT: LazyLock<String> = LazyLock::new(|| {
    let mut doc = crate::openapi::ApiDoc::openapi();
    let mut schemas = Vec::new();
    for endpoint in ENDPOINTS.iter() {
        doc.paths.merge(endpoint.doc.paths());
        endpoint.doc.schemas(&mut schemas);
    }
    doc.components
        .get_or_insert_with(Default::default)
        .schemas
        .extend(schemas);
    crate::openapi::finish(&mut doc);
    let mut doc = serde_json::to_value(&doc).expect("the OpenAPI document serializes");
    crate::openapi::query_parameters_without_null(&mut doc);
    serde_json::to_string(&doc).expect("the OpenAPI document serializes")
});

/// The served OpenAPI document (JSON), for what describes the same answers elsewhere (the MCP
/// tools' output schemas).
pub fn openapi_document() -> &'static str {
    &DOCUMENT
}

/// A resource at `path` serving each route for its method, and 405 JSON with `Allow` for any
/// other method.
fn resource(path: &'static str, routes: Vec<(Method, Route)>) -> actix_web::Resource {
    let allow = routes
        .iter()
        .map(|(method, _)| method.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    routes
        .into_iter()
        .fold(
            web::resource(path).app_data(RoutePattern(path)),
            |resource, (method, route)| resource.route(route.method(method)),
        )
        .default_service(web::to(move || method_not_allowed(allow.clone())))
}

/// The registered pattern equal to `pattern`, as the `&'static str` logs and metrics label
/// routes with.
pub fn registered_pattern(pattern: &str) -> Option<&'static str> {
    ENDPOINTS
        .iter()
        .map(|endpoint| endpoint.path)
        .find(|path| *path == pattern)
}

/// Registers every endpoint (one resource per path, in the order of [`ENDPOINTS`]) and the
/// OpenAPI document they make.
pub fn configure(cfg: &mut web::ServiceConfig) {
    let mut paths: Vec<(&'static str, Vec<(Method, Route)>)> = Vec::new();
    for endpoint in ENDPOINTS.iter() {
        let route = (endpoint.method.clone(), (endpoint.route)());
        match paths.iter_mut().find(|(path, _)| *path == endpoint.path) {
            Some((_, routes)) => routes.push(route),
            None => paths.push((endpoint.path, vec![route])),
        }
    }
    for (path, routes) in paths {
        cfg.service(resource(path, routes));
    }
    cfg.app_data(web::Data::new(OpenApiDocument(DOCUMENT.as_str())));
    cfg.configure(console::configure);
}
