//! Routes: one module per resource, each handler thin (parse, call one service, map the result).

pub(crate) mod catalog;
pub(crate) mod clients;
pub(crate) mod fallbacks;
pub(crate) mod find_client;
pub(crate) mod health;
pub(crate) mod me;
pub(crate) mod time_entries;
pub(crate) mod webhooks;

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

/// A resource at `path` serving `routes`, and 405 JSON for any other method.
fn resource(path: &str, routes: Vec<Route>) -> actix_web::Resource {
    routes
        .into_iter()
        .fold(web::resource(path), |resource, route| resource.route(route))
        .default_service(web::to(method_not_allowed))
}

/// Registers every route of the API.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/api/health", vec![web::get().to(health::health)]))
        .service(resource(
            "/api/openapi.json",
            vec![web::get().to(crate::openapi::openapi_json)],
        ))
        .service(resource("/api/me", vec![web::get().to(me::me)]))
        .service(resource(
            "/api/clients",
            vec![
                web::post().to(clients::create),
                web::get().to(clients::list),
            ],
        ))
        .service(resource(
            "/api/clients/{id}",
            vec![
                web::get().to(clients::get),
                web::patch().to(clients::update),
                web::delete().to(clients::delete),
            ],
        ))
        .service(resource(
            "/api/projects",
            vec![
                web::post().to(catalog::create_project),
                web::get().to(catalog::list_projects),
            ],
        ))
        .service(resource(
            "/api/projects/{id}/tasks",
            vec![
                web::post().to(catalog::create_task),
                web::get().to(catalog::list_tasks),
            ],
        ))
        .service(resource(
            "/api/tags",
            vec![
                web::post().to(catalog::create_tag),
                web::get().to(catalog::list_tags),
            ],
        ))
        .service(resource(
            "/api/time-entries/start",
            vec![web::post().to(time_entries::start)],
        ))
        .service(resource(
            "/api/time-entries/stop",
            vec![web::post().to(time_entries::stop)],
        ))
        .service(resource(
            "/api/time-entries/current",
            vec![web::get().to(time_entries::current)],
        ))
        .service(resource(
            "/api/time-entries",
            vec![
                web::post().to(time_entries::create),
                web::get().to(time_entries::list),
            ],
        ))
        .service(resource(
            "/api/time-entries/{id}",
            vec![
                web::get().to(time_entries::get),
                web::patch().to(time_entries::update),
                web::delete().to(time_entries::delete),
            ],
        ))
        .service(resource(
            &format!("{INTEGRATION}/triggers/time-entries/manual_entry/fallback"),
            vec![web::get().to(fallbacks::manual_entry)],
        ))
        .service(resource(
            &format!("{INTEGRATION}/triggers/time-entries/stop/fallback"),
            vec![web::get().to(fallbacks::stop)],
        ))
        .service(resource(
            &format!("{INTEGRATION}/triggers/time-entries/start/fallback"),
            vec![web::get().to(fallbacks::start)],
        ))
        .service(resource(
            &format!("{INTEGRATION}/triggers/clients/fallback"),
            vec![web::get().to(fallbacks::clients)],
        ))
        .service(resource(
            &format!("{INTEGRATION}/triggers/clients/find"),
            vec![web::post().to(find_client::find)],
        ))
        .service(resource(
            &format!("{INTEGRATION}/webhooks/subscribe"),
            vec![web::post().to(webhooks::subscribe)],
        ))
        .service(resource(
            &format!("{INTEGRATION}/webhooks"),
            vec![web::get().to(webhooks::list)],
        ))
        .service(resource(
            &format!("{INTEGRATION}/webhooks/{{id}}"),
            vec![web::delete().to(webhooks::delete)],
        ))
        .service(resource(
            &format!("{INTEGRATION}/webhooks/{{id}}/deliveries"),
            vec![web::get().to(webhooks::deliveries)],
        ));
}
