//! The core API's clients: `POST/GET /api/clients`, `GET/PATCH/DELETE /api/clients/{id}`.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};
use timetrack_domain::DomainError;
use timetrack_domain::ids::ClientId;
use timetrack_domain::model::client::{MAX_ADDRESS_CHARS, MAX_NOTE_CHARS, MAX_PHONE_CHARS};
use timetrack_domain::model::{
    Client, ClientDraft, ClientPatch, ClientStatus, ClientType, ListFilter, PageRequest,
};
use timetrack_domain::timefmt::rfc3339;
use timetrack_domain::values::{Currency, Email, Name, Text};

use crate::error::ApiError;
use crate::extract::{Caller, Id, JsonBody, JsonOrEmpty, QueryParams, Unread, nullable};
use crate::openapi::fields;
use crate::routes::ListResponse;
use crate::state::AppState;

/// A client as the API shows it (snake_case; every field present, null when unset).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ClientResponse {
    id: String,
    name: String,
    #[serde(rename = "type")]
    client_type: &'static str,
    status: &'static str,
    email: Option<String>,
    phone: Option<String>,
    address: Option<String>,
    note: Option<String>,
    currency: String,
    created_at: String,
    updated_at: String,
}

impl From<Client> for ClientResponse {
    fn from(c: Client) -> Self {
        Self {
            id: c.id.to_string(),
            name: c.name,
            client_type: c.client_type.as_str(),
            status: c.status.as_str(),
            email: c.email,
            phone: c.phone,
            address: c.address,
            note: c.note,
            currency: c.currency,
            created_at: rfc3339(c.created_at),
            updated_at: rfc3339(c.updated_at),
        }
    }
}

/// Body of `POST /api/clients`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct CreateClientBody {
    #[schema(schema_with = fields::name, required = true)]
    name: Option<String>,
    #[serde(rename = "type")]
    #[schema(schema_with = fields::client_type)]
    client_type: Option<String>,
    #[schema(schema_with = fields::client_status)]
    status: Option<String>,
    #[schema(schema_with = fields::email)]
    email: Option<String>,
    #[schema(schema_with = fields::phone)]
    phone: Option<String>,
    #[schema(schema_with = fields::address)]
    address: Option<String>,
    #[schema(schema_with = fields::note)]
    note: Option<String>,
    #[schema(schema_with = fields::currency)]
    currency: Option<String>,
}

/// Body of `PATCH /api/clients/{id}`: absent fields stay, null clears an optional one.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct UpdateClientBody {
    #[schema(schema_with = fields::optional_name)]
    name: Option<String>,
    #[serde(rename = "type")]
    #[schema(schema_with = fields::client_type)]
    client_type: Option<String>,
    #[schema(schema_with = fields::client_status)]
    status: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = fields::email)]
    email: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = fields::phone)]
    phone: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = fields::address)]
    address: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = fields::note)]
    note: Option<Option<String>>,
    #[schema(schema_with = fields::currency)]
    currency: Option<String>,
}

/// A body's `type` and `status`, each parsed if given: the first fields an error reports.
fn type_and_status(
    client_type: &Option<String>,
    status: &Option<String>,
) -> Result<(Option<ClientType>, Option<ClientStatus>), DomainError> {
    Ok((
        client_type.as_deref().map(ClientType::parse).transpose()?,
        status.as_deref().map(ClientStatus::parse).transpose()?,
    ))
}

/// The body parsed, field by field, in the order the fields are reported: the first invalid
/// field is the error.
impl TryFrom<CreateClientBody> for ClientDraft {
    type Error = DomainError;

    fn try_from(body: CreateClientBody) -> Result<Self, DomainError> {
        let (client_type, status) = type_and_status(&body.client_type, &body.status)?;
        Ok(Self {
            client_type,
            status,
            name: Name::parse("name", body.name.as_deref().unwrap_or_default())?,
            email: Email::parse_optional(body.email.as_deref())?,
            phone: Text::parse_optional("phone", body.phone.as_deref(), MAX_PHONE_CHARS)?,
            address: Text::parse_optional("address", body.address.as_deref(), MAX_ADDRESS_CHARS)?,
            note: Text::parse_optional("note", body.note.as_deref(), MAX_NOTE_CHARS)?,
            currency: body.currency.as_deref().map(Currency::parse).transpose()?,
        })
    }
}

/// As for [`CreateClientBody`]; an absent field is no change, a null or blank optional one
/// clears it.
impl TryFrom<UpdateClientBody> for ClientPatch {
    type Error = DomainError;

    fn try_from(body: UpdateClientBody) -> Result<Self, DomainError> {
        let text = |field: &str, value: Option<Option<String>>, max: usize| {
            value
                .map(|v| Text::parse_optional(field, v.as_deref(), max))
                .transpose()
        };
        let (client_type, status) = type_and_status(&body.client_type, &body.status)?;
        Ok(Self {
            client_type,
            status,
            name: body
                .name
                .as_deref()
                .map(|n| Name::parse("name", n))
                .transpose()?,
            email: body
                .email
                .map(|e| Email::parse_optional(e.as_deref()))
                .transpose()?,
            phone: text("phone", body.phone, MAX_PHONE_CHARS)?,
            address: text("address", body.address, MAX_ADDRESS_CHARS)?,
            note: text("note", body.note, MAX_NOTE_CHARS)?,
            currency: body.currency.as_deref().map(Currency::parse).transpose()?,
        })
    }
}

/// `?limit=&cursor=&q=&updated_since=` of the catalog's lists (clients, projects, tasks, tags,
/// members).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    #[param(schema_with = fields::page_limit)]
    limit: Option<u32>,
    #[param(schema_with = fields::page_cursor)]
    cursor: Option<String>,
    #[param(schema_with = fields::list_q)]
    q: Option<String>,
    #[param(schema_with = fields::updated_since)]
    updated_since: Option<String>,
}

impl ListQuery {
    /// The validated page request.
    pub fn page(&self) -> Result<PageRequest, ApiError> {
        Ok(PageRequest::new(self.limit, self.cursor.as_deref())?)
    }

    /// The validated filter.
    pub fn filter(&self) -> Result<ListFilter, ApiError> {
        Ok(ListFilter::new(
            self.q.as_deref(),
            self.updated_since.as_deref(),
        )?)
    }
}

/// `POST /api/clients`: 201 with the client; emits `CLIENT_CREATED`.
#[utoipa::path(
    operation_id = "createClient",
    post,
    path = "/api/clients",
    tag = "Clients",
    summary = "Create a client (emits CLIENT_CREATED)",
    security(("bearer_auth" = [])),
    request_body = CreateClientBody,
    responses(
        (status = 201, description = "Created", body = ClientResponse),
        (status = 400, description = "Invalid fields", body = crate::openapi::ErrorBody),
        (status = 409, description = "A client with this name exists", body = crate::openapi::ConflictBody),
        (status = 403, description = "A member, where the workspace keeps the catalog to admins", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn create(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonBody<CreateClientBody>,
) -> Result<HttpResponse, ApiError> {
    let draft = ClientDraft::try_from(body.into_inner())?;
    let client = state.clients.create(&caller.0, draft).await?;
    Ok(HttpResponse::build(StatusCode::CREATED).json(ClientResponse::from(client)))
}

/// `GET /api/clients`: newest first, paginated.
#[utoipa::path(
    operation_id = "listClients",
    get,
    path = "/api/clients",
    tag = "Clients",
    summary = "List clients, newest first",
    security(("bearer_auth" = [])),
    params(ListQuery),
    responses(
        (status = 200, description = "A page", body = ListResponse<ClientResponse>),
        (status = 400, description = "Invalid limit, cursor, q or updated_since", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn list(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryParams<ListQuery>,
) -> Result<web::Json<ListResponse<ClientResponse>>, ApiError> {
    let page = state
        .clients
        .list(&caller.0, &query.filter()?, query.page()?)
        .await?;
    Ok(web::Json(ListResponse::from_page(
        page,
        ClientResponse::from,
    )))
}

/// `GET /api/clients/{id}`.
#[utoipa::path(
    operation_id = "getClient",
    get,
    path = "/api/clients/{id}",
    tag = "Clients",
    summary = "Get a client",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::ClientPath),
    responses(
        (status = 200, description = "The client", body = ClientResponse),
        (status = 404, description = "Client not found", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn get(
    state: web::Data<AppState>,
    caller: Caller,
    id: Id<ClientId>,
) -> Result<web::Json<ClientResponse>, ApiError> {
    let client = state.clients.get(&caller.0, id.get()?).await?;
    Ok(web::Json(client.into()))
}

/// `PATCH /api/clients/{id}`.
#[utoipa::path(
    operation_id = "updateClient",
    patch,
    path = "/api/clients/{id}",
    tag = "Clients",
    summary = "Change a client (null clears an optional field)",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::ClientPath), request_body = UpdateClientBody,
    responses(
        (status = 200, description = "The changed client", body = ClientResponse),
        (status = 400, description = "Invalid fields", body = crate::openapi::ErrorBody),
        (status = 404, description = "Client not found", body = crate::openapi::ErrorBody),
        (status = 409, description = "A client with this name exists", body = crate::openapi::ConflictBody),
        (status = 403, description = "A member, where the workspace keeps the catalog to admins", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn update(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonBody<UpdateClientBody>,
    id: Id<ClientId>,
) -> Result<web::Json<ClientResponse>, ApiError> {
    let id = id.get()?;
    let body = body.into_inner();
    // As ever: type and status first, then an unknown client, then the other fields.
    type_and_status(&body.client_type, &body.status)?;
    state.clients.get(&caller.0, id).await?;
    let patch = ClientPatch::try_from(body)?;
    let client = state.clients.update(&caller.0, id, &patch).await?;
    Ok(web::Json(client.into()))
}

/// `DELETE /api/clients/{id}`: 200 `{success: true}`; 409 while a project uses the client.
#[utoipa::path(
    operation_id = "deleteClient",
    delete,
    path = "/api/clients/{id}",
    tag = "Clients",
    summary = "Delete a client",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::ClientPath),
    responses(
        (status = 200, description = "Deleted", body = crate::openapi::SuccessBody),
        (status = 404, description = "Client not found", body = crate::openapi::ErrorBody),
        (status = 409, description = "Client is used by projects", body = crate::openapi::ErrorBody),
        (status = 403, description = "A member, where the workspace keeps the catalog to admins", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn delete(
    state: web::Data<AppState>,
    caller: Caller,
    _body: JsonOrEmpty<Unread>,
    id: Id<ClientId>,
) -> Result<HttpResponse, ApiError> {
    state.clients.delete(&caller.0, id.get()?).await?;
    Ok(HttpResponse::Ok().json(crate::openapi::SuccessBody::TRUE))
}
