//! The frame of the OpenAPI 3.1 description (title, version, security scheme, tags) and the
//! schemas many endpoints share. Each endpoint's operation comes from its handler's
//! `#[utoipa::path]`; `routes` assembles the document from its list of endpoints.

use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

pub mod fields;
pub mod paths;

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
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct SuccessBody {
    /// Always true.
    pub success: bool,
}

impl SuccessBody {
    /// The only value it has.
    pub const TRUE: Self = Self { success: true };
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

/// Operations that take no body as well as an object: their body is optional.
///
/// utoipa marks a body required unless its type is `Option<...>`, and an `Option` would document
/// `null` too, which these endpoints refuse (an empty body is no body; `null` is not an object);
/// so each body is declared as the object and made optional here.
const OPTIONAL_BODIES: &[&str] = &[
    "/api/time-entries/start",
    "/api/integrations/automation/webhooks/{id}/enable",
    "/api/integrations/automation/webhooks/{id}/rotate-secret",
    "/api/integrations/automation/webhooks/{id}/test",
];

struct OptionalBodies;

impl Modify for OptionalBodies {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for path in OPTIONAL_BODIES {
            let body = openapi
                .paths
                .paths
                .get_mut(*path)
                .and_then(|item| item.post.as_mut())
                .and_then(|op| op.request_body.as_mut());
            if let Some(body) = body {
                body.required = Some(utoipa::openapi::Required::False);
            }
        }
    }
}

/// Bodies whose unknown fields are refused (400 `Invalid request parameters`, `unknown field
/// ...`): their schemas say so. (Derived schemas allow other properties unless told.)
const CLOSED_BODIES: &[&str] = &["WebhookPatchBody"];

struct ClosedBodies;

impl Modify for ClosedBodies {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let Some(components) = openapi.components.as_mut() else {
            return;
        };
        for name in CLOSED_BODIES {
            if let Some(utoipa::openapi::RefOr::T(utoipa::openapi::Schema::Object(object))) =
                components.schemas.get_mut(*name)
            {
                object.additional_properties = Some(Box::new(
                    utoipa::openapi::schema::AdditionalProperties::FreeForm(false),
                ));
            }
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
    servers((url = "/", description = "The server that serves this document")),
    components(schemas(
        ErrorBody,
        ConflictBody,
        SuccessBody,
        timetrack_domain::payload::TimeEntryPayload,
        timetrack_domain::payload::ClientPayload,
        timetrack_domain::payload::ProjectPayload,
        timetrack_domain::payload::InvoicePayload,
        timetrack_domain::payload::WebhookNoticePayload,
        timetrack_domain::payload::WebhookTestPayload,
    )),
    modifiers(&BearerAuth),
    tags(
        (name = "Health"), (name = "Account"), (name = "Clients"), (name = "Projects"),
        (name = "Tags"), (name = "Time entries"), (name = "Webhooks"), (name = "Events"),
        (name = "Triggers"),
    )
)]
pub struct ApiDoc;

/// The served document, in the app's data for `GET /api/openapi.json`.
#[derive(Debug, Clone, Copy)]
pub struct OpenApiDocument(pub &'static str);

/// A write's successful answers carry `X-Commit-Position` when the service reads from a replica
/// (`replica::note_commits`): every 2xx of a `POST`, `PUT`, `PATCH` or `DELETE` but the two
/// searches, which only read.
struct CommitPositions;

impl Modify for CommitPositions {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{ObjectBuilder, Type, header::HeaderBuilder};
        let header = HeaderBuilder::new()
            .schema(ObjectBuilder::new().schema_type(Type::String))
            .description(Some(
                "The primary's position once the write committed (e.g. `0/3000148`), sent only \
                 when the service reads from a replica (`--database-replica-url`). The same key's \
                 reads see the write in any case; another process behind the same address does \
                 when the read sends it back.",
            ))
            .build();
        for (path, item) in &mut openapi.paths.paths {
            if crate::replica::is_read_only_post(path) {
                continue;
            }
            let writes = [
                item.post.as_mut(),
                item.put.as_mut(),
                item.patch.as_mut(),
                item.delete.as_mut(),
            ];
            for operation in writes.into_iter().flatten() {
                for (status, response) in &mut operation.responses.responses {
                    if let (true, utoipa::openapi::RefOr::T(response)) =
                        (status.starts_with('2'), response)
                    {
                        response
                            .headers
                            .insert("X-Commit-Position".to_owned(), header.clone());
                    }
                }
            }
        }
    }
}

/// Query parameters of a shared parameter struct that one operation requires: the reports share
/// `ReportQuery`, whose `group_by` only the summary requires (400 without it).
const REQUIRED_PARAMETERS: &[(&str, &str)] = &[("/api/reports/summary", "group_by")];

struct RequiredParameters;

impl Modify for RequiredParameters {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (path, name) in REQUIRED_PARAMETERS {
            let parameters = openapi
                .paths
                .paths
                .get_mut(*path)
                .and_then(|item| item.get.as_mut())
                .and_then(|op| op.parameters.as_mut());
            for parameter in parameters.into_iter().flatten() {
                if parameter.name == *name {
                    parameter.required = utoipa::openapi::Required::True;
                }
            }
        }
    }
}

/// Takes `null` out of every query parameter's schema (its `type` list and its `enum`): a query
/// string cannot carry a JSON null, and the parameter structs' fields share their nullable
/// schemas with request bodies, where null means "absent". A generator reading `["string",
/// "null"]` with an enum made three types of each such parameter.
pub fn query_parameters_without_null(doc: &mut serde_json::Value) {
    let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) else {
        return;
    };
    let operations = paths
        .values_mut()
        .filter_map(|item| item.as_object_mut())
        .flat_map(|item| item.values_mut());
    for operation in operations {
        let Some(parameters) = operation
            .get_mut("parameters")
            .and_then(|p| p.as_array_mut())
        else {
            continue;
        };
        for parameter in parameters.iter_mut().filter(|p| p["in"] == "query") {
            let Some(schema) = parameter.get_mut("schema").and_then(|s| s.as_object_mut()) else {
                continue;
            };
            if let Some(types) = schema.get_mut("type").and_then(|t| t.as_array_mut()) {
                types.retain(|t| t != "null");
                if let [only] = types.as_slice() {
                    let only = only.clone();
                    schema.insert("type".to_owned(), only);
                }
            }
            if let Some(values) = schema.get_mut("enum").and_then(|e| e.as_array_mut()) {
                values.retain(|v| !v.is_null());
            }
        }
    }
}

/// What the document needs once every endpoint's operation is in it.
pub fn finish(doc: &mut utoipa::openapi::OpenApi) {
    RequiredParameters.modify(doc);
    OptionalBodies.modify(doc);
    ClosedBodies.modify(doc);
    CommitPositions.modify(doc);
}
