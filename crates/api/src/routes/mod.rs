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

/// The integration surface's prefix.
pub const INTEGRATION: &str = "/api/integrations/automation";

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

/// A resource at `path` serving each route for its method, and 405 JSON with `Allow` for any
/// other method.
fn resource(path: &str, routes: Vec<(Method, Route)>) -> actix_web::Resource {
    let allow = routes
        .iter()
        .map(|(method, _)| method.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    routes
        .into_iter()
        .fold(web::resource(path), |resource, (method, route)| {
            resource.route(route.method(method))
        })
        .default_service(web::to(move || method_not_allowed(allow.clone())))
}

/// Registers every route of the API.
pub fn configure(cfg: &mut web::ServiceConfig) {
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
    ))
    .service(resource(
        &format!("{INTEGRATION}/triggers/time-entries/manual_entry/fallback"),
        vec![(Method::GET, web::to(fallbacks::manual_entry))],
    ))
    .service(resource(
        &format!("{INTEGRATION}/triggers/time-entries/stop/fallback"),
        vec![(Method::GET, web::to(fallbacks::stop))],
    ))
    .service(resource(
        &format!("{INTEGRATION}/triggers/time-entries/start/fallback"),
        vec![(Method::GET, web::to(fallbacks::start))],
    ))
    .service(resource(
        &format!("{INTEGRATION}/triggers/clients/fallback"),
        vec![(Method::GET, web::to(fallbacks::clients))],
    ))
    .service(resource(
        &format!("{INTEGRATION}/triggers/clients/find"),
        vec![(Method::POST, web::to(find_client::find))],
    ))
    .service(resource(
        &format!("{INTEGRATION}/webhooks/subscribe"),
        vec![(Method::POST, web::to(webhooks::subscribe))],
    ))
    .service(resource(
        &format!("{INTEGRATION}/webhooks"),
        vec![(Method::GET, web::to(webhooks::list))],
    ))
    .service(resource(
        &format!("{INTEGRATION}/webhooks/{{id}}"),
        vec![(Method::DELETE, web::to(webhooks::delete))],
    ))
    .service(resource(
        &format!("{INTEGRATION}/webhooks/{{id}}/deliveries"),
        vec![(Method::GET, web::to(webhooks::deliveries))],
    ));
}
