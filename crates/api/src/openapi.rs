//! The OpenAPI 3.1 description of every endpoint, generated from the handlers' annotations and
//! served at `GET /api/openapi.json`.

use actix_web::HttpResponse;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

use crate::routes;

pub mod fields;

/// `{error: string, detail?: string}`: every error body.
#[derive(Debug, ToSchema)]
pub struct ErrorBody {
    /// What went wrong: the published message.
    pub error: String,
    /// For a request refused for its content: which field, and why.
    #[schema(nullable = false)]
    pub detail: Option<String>,
}

/// The answers every authenticated operation can give besides its own.
#[derive(Debug, utoipa::IntoResponses)]
pub enum AuthErrors {
    /// Missing, malformed, unknown or revoked key.
    #[response(status = 401, description = "Missing or invalid key")]
    Unauthorized(ErrorBody),
    /// Over the key's rate limit.
    #[response(status = 429, description = "Rate limited; see Retry-After")]
    TooManyRequests(ErrorBody),
    /// The database cannot be reached.
    #[response(status = 503, description = "Database unavailable")]
    Unavailable(ErrorBody),
}

/// A 409 for a duplicate name: the error and the existing resource's id.
#[derive(Debug, ToSchema)]
pub struct ConflictBody {
    /// What went wrong.
    pub error: String,
    /// The id of the resource that already has the name.
    pub existing_id: String,
}

/// `{success: true}`.
#[derive(Debug, ToSchema)]
pub struct SuccessBody {
    /// Always true.
    pub success: bool,
}

/// Body of the subscribe request.
#[derive(Debug, ToSchema)]
pub struct SubscribeBody {
    /// HTTPS destination of deliveries.
    #[schema(schema_with = fields::webhook_url)]
    pub url: String,
    /// `TIMER_STARTED`, `TIMER_STOPPED`, `TIME_ENTRY_CREATED`, `CLIENT_CREATED`; duplicates collapse.
    #[schema(schema_with = fields::events)]
    pub events: Vec<String>,
    /// Optional label, at most 255 characters.
    #[schema(schema_with = fields::webhook_description)]
    pub description: Option<String>,
}

/// The created subscription, with its signing secret (shown only here).
#[derive(Debug, ToSchema)]
pub struct WebhookCreated {
    /// `wh_...`.
    pub id: String,
    /// Destination.
    pub url: String,
    /// Subscribed events.
    pub events: Vec<String>,
    /// `ACTIVE`.
    pub status: String,
    /// `whsec_...`: the Standard Webhooks signing secret.
    pub secret: String,
}

/// 201 of the subscribe request.
#[derive(Debug, ToSchema)]
pub struct SubscribeResponse {
    /// True.
    pub success: bool,
    /// The subscription.
    pub webhook: WebhookCreated,
}

/// The workspace's subscriptions.
#[derive(Debug, ToSchema)]
pub struct WebhookList {
    /// True.
    pub success: bool,
    /// Newest first.
    pub webhooks: Vec<routes::webhooks::WebhookListItem>,
}

/// A subscription's recent deliveries.
#[derive(Debug, ToSchema)]
pub struct DeliveryList {
    /// True.
    pub success: bool,
    /// Newest first.
    pub deliveries: Vec<routes::webhooks::DeliveryItem>,
}

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer_auth",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

/// `POST /api/time-entries/start` takes no body as well as an object: its body is optional.
///
/// utoipa marks a body required unless its type is `Option<...>`, and an `Option` would document
/// `null` too, which the endpoint refuses; so the body is declared as the object and made optional
/// here.
struct OptionalBodies;

impl Modify for OptionalBodies {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let body = openapi
            .paths
            .paths
            .get_mut("/api/time-entries/start")
            .and_then(|item| item.post.as_mut())
            .and_then(|op| op.request_body.as_mut());
        if let Some(body) = body {
            body.required = Some(utoipa::openapi::Required::False);
        }
    }
}

/// The description of the whole API.
#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "timetrack",
        description = "Time tracking with an integration surface for automation platforms: \
                       client search, REST-hook webhook subscriptions, trigger fallbacks, and the \
                       core time-tracking API. Authenticate with `Authorization: Bearer <API key>`."
    ),
    paths(
        routes::health::health,
        openapi_json,
        routes::me::me,
        routes::clients::create,
        routes::clients::list,
        routes::clients::get,
        routes::clients::update,
        routes::clients::delete,
        routes::catalog::create_project,
        routes::catalog::list_projects,
        routes::catalog::create_task,
        routes::catalog::list_tasks,
        routes::catalog::create_tag,
        routes::catalog::list_tags,
        routes::time_entries::start,
        routes::time_entries::stop,
        routes::time_entries::current,
        routes::time_entries::create,
        routes::time_entries::list,
        routes::time_entries::get,
        routes::time_entries::update,
        routes::time_entries::delete,
        routes::find_client::find,
        routes::webhooks::subscribe,
        routes::webhooks::list,
        routes::webhooks::delete,
        routes::webhooks::deliveries,
        routes::fallbacks::manual_entry,
        routes::fallbacks::stop,
        routes::fallbacks::start,
        routes::fallbacks::clients,
    ),
    servers((url = "/", description = "The server that serves this document")),
    components(schemas(ErrorBody, ConflictBody, SuccessBody)),
    modifiers(&BearerAuth, &OptionalBodies),
    tags(
        (name = "Health"), (name = "Account"), (name = "Clients"), (name = "Projects"),
        (name = "Tags"), (name = "Time entries"), (name = "Webhooks"), (name = "Triggers"),
    )
)]
pub struct ApiDoc;

/// `GET /api/openapi.json`: this description (no key needed).
#[utoipa::path(
    get,
    operation_id = "getOpenApi",
    path = "/api/openapi.json",
    tag = "Health",
    summary = "The OpenAPI 3.1 description of the API",
    responses((status = 200, description = "The description", content_type = "application/json"))
)]
pub async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok().json(ApiDoc::openapi())
}
