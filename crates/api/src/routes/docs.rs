//! `GET /api/openapi.json`: the OpenAPI description of the API.

use actix_web::{HttpResponse, web};

use crate::openapi::OpenApiDocument;

/// `GET /api/openapi.json`: this description (no key needed).
#[utoipa::path(
    get,
    operation_id = "getOpenApi",
    path = "/api/openapi.json",
    tag = "Health",
    summary = "The OpenAPI 3.1 description of the API",
    responses((status = 200, description = "The description (an OpenAPI 3.1 document)", body = std::collections::HashMap<String, serde_json::Value>, content_type = "application/json"))
)]
pub async fn openapi_json(document: web::Data<OpenApiDocument>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(document.0)
}
