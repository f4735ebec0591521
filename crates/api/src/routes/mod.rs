//! Routes: one module per resource, each handler thin (parse, call one service, map the result).

pub(crate) mod catalog;
pub(crate) mod clients;
pub(crate) mod fallbacks;
pub(crate) mod find_client;
pub(crate) mod health;
pub(crate) mod me;
pub(crate) mod time_entries;
pub(crate) mod webhooks;

use actix_web::http::Method;
use actix_web::{Route, web};
use serde::Serialize;
use timetrack_domain::model::Page;

use crate::app::method_not_allowed;

/// A path of the integration surface (under `/api/integrations/automation`), as a
/// `&'static str`.
macro_rules! integration {
    ($path:literal) => {
        concat!("/api/integrations/automation", $path)
    };
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

/// Registers every route of the API.
///
/// actix tries the resources in the order registered, and a pattern with a `{param}` is matched
/// by a regular expression, a fixed one by comparing strings. The integration surface's fixed
/// paths, polled by the automation platform, come first; the patterns with parameters of the
/// integration surface come last, so no request runs more of them than it must. No two patterns
/// overlap, so the order changes nothing else.
pub fn configure(cfg: &mut web::ServiceConfig) {
    integration_fixed(cfg);
    core(cfg);
    integration_with_ids(cfg);
}

/// The core REST API.
fn core(cfg: &mut web::ServiceConfig) {
    cfg.service(resource(
        "/api/health",
        vec![(Method::GET, web::to(health::health))],
    ))
    .service(resource(
        "/api/openapi.json",
        vec![(Method::GET, web::to(crate::openapi::openapi_json))],
    ))
    .service(resource("/api/me", vec![(Method::GET, web::to(me::me))]))
    .service(resource(
        "/api/clients",
        vec![
            (Method::POST, web::to(clients::create)),
            (Method::GET, web::to(clients::list)),
        ],
    ))
    .service(resource(
        "/api/clients/{id}",
        vec![
            (Method::GET, web::to(clients::get)),
            (Method::PATCH, web::to(clients::update)),
            (Method::DELETE, web::to(clients::delete)),
        ],
    ))
    .service(resource(
        "/api/projects",
        vec![
            (Method::POST, web::to(catalog::create_project)),
            (Method::GET, web::to(catalog::list_projects)),
        ],
    ))
    .service(resource(
        "/api/projects/{id}/tasks",
        vec![
            (Method::POST, web::to(catalog::create_task)),
            (Method::GET, web::to(catalog::list_tasks)),
        ],
    ))
    .service(resource(
        "/api/tags",
        vec![
            (Method::POST, web::to(catalog::create_tag)),
            (Method::GET, web::to(catalog::list_tags)),
        ],
    ))
    .service(resource(
        "/api/time-entries/start",
        vec![(Method::POST, web::to(time_entries::start))],
    ))
    .service(resource(
        "/api/time-entries/stop",
        vec![(Method::POST, web::to(time_entries::stop))],
    ))
    .service(resource(
        "/api/time-entries/current",
        vec![(Method::GET, web::to(time_entries::current))],
    ))
    .service(resource(
        "/api/time-entries",
        vec![
            (Method::POST, web::to(time_entries::create)),
            (Method::GET, web::to(time_entries::list)),
        ],
    ))
    .service(resource(
        "/api/time-entries/{id}",
        vec![
            (Method::GET, web::to(time_entries::get)),
            (Method::PATCH, web::to(time_entries::update)),
            (Method::DELETE, web::to(time_entries::delete)),
        ],
    ));
}

/// The integration surface's paths without parameters.
fn integration_fixed(cfg: &mut web::ServiceConfig) {
    cfg.service(resource(
        integration!("/triggers/time-entries/manual_entry/fallback"),
        vec![(Method::GET, web::to(fallbacks::manual_entry))],
    ))
    .service(resource(
        integration!("/triggers/time-entries/stop/fallback"),
        vec![(Method::GET, web::to(fallbacks::stop))],
    ))
    .service(resource(
        integration!("/triggers/time-entries/start/fallback"),
        vec![(Method::GET, web::to(fallbacks::start))],
    ))
    .service(resource(
        integration!("/triggers/clients/fallback"),
        vec![(Method::GET, web::to(fallbacks::clients))],
    ))
    .service(resource(
        integration!("/triggers/clients/find"),
        vec![(Method::POST, web::to(find_client::find))],
    ))
    .service(resource(
        integration!("/webhooks/subscribe"),
        vec![(Method::POST, web::to(webhooks::subscribe))],
    ))
    .service(resource(
        integration!("/webhooks"),
        vec![(Method::GET, web::to(webhooks::list))],
    ));
}

/// The integration surface's paths with a subscription id.
fn integration_with_ids(cfg: &mut web::ServiceConfig) {
    cfg.service(resource(
        integration!("/webhooks/{id}"),
        vec![(Method::DELETE, web::to(webhooks::delete))],
    ))
    .service(resource(
        integration!("/webhooks/{id}/deliveries"),
        vec![(Method::GET, web::to(webhooks::deliveries))],
    ));
}
