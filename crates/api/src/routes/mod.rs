//! Routes: one module per resource, each handler thin (parse, call one service, map the result).

mod health;
mod me;

use actix_web::web;

use crate::app::method_not_allowed;

/// Registers every route of the API.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/api/health")
            .route(web::get().to(health::health))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/api/me")
            .route(web::get().to(me::me))
            .default_service(web::to(method_not_allowed)),
    );
}
