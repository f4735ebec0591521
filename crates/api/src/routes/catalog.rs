//! The core API's projects, tasks and tags.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};
use timetrack_domain::DomainError;
use timetrack_domain::ids::{ClientId, ProjectId};
use timetrack_domain::model::{Project, Tag, Task};
use timetrack_domain::services::ProjectPatch;
use timetrack_domain::timefmt::rfc3339;
use timetrack_domain::values::Name;
use uuid::Uuid;

use crate::error::ApiError;
use crate::extract::{Caller, Id, JsonBody, JsonOrEmpty, QueryParams, Unread};
use crate::openapi::fields;
use crate::routes::ListResponse;
use crate::routes::clients::ListQuery;
use crate::state::AppState;

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ProjectResponse {
    id: String,
    name: String,
    client_id: Option<String>,
    created_at: String,
    updated_at: String,
}

impl From<Project> for ProjectResponse {
    fn from(p: Project) -> Self {
        Self {
            id: p.id.to_string(),
            name: p.name,
            client_id: p.client_id.map(|c| c.to_string()),
            created_at: rfc3339(p.created_at),
            updated_at: rfc3339(p.updated_at),
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TaskResponse {
    id: String,
    project_id: String,
    name: String,
    created_at: String,
    updated_at: String,
}

impl From<Task> for TaskResponse {
    fn from(t: Task) -> Self {
        Self {
            id: t.id.to_string(),
            project_id: t.project_id.to_string(),
            name: t.name,
            created_at: rfc3339(t.created_at),
            updated_at: rfc3339(t.updated_at),
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TagResponse {
    id: String,
    name: String,
    created_at: String,
}

impl From<Tag> for TagResponse {
    fn from(t: Tag) -> Self {
        Self {
            id: t.id.to_string(),
            name: t.name,
            created_at: rfc3339(t.created_at),
        }
    }
}

/// Body of `POST /api/projects`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct CreateProjectBody {
    #[schema(schema_with = fields::name, required = true)]
    name: Option<String>,
    #[schema(schema_with = fields::client_ref)]
    client_id: Option<Uuid>,
}

/// Body of `POST /api/projects/{id}/tasks` and `POST /api/tags`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct NameBody {
    #[schema(schema_with = fields::name, required = true)]
    name: Option<String>,
}

impl TryFrom<NameBody> for Name {
    type Error = DomainError;

    fn try_from(body: NameBody) -> Result<Self, DomainError> {
        Name::parse("name", body.name.as_deref().unwrap_or_default())
    }
}

/// `POST /api/projects`: 201 with the project.
#[utoipa::path(
    operation_id = "createProject",
    post,
    path = "/api/projects",
    tag = "Projects",
    summary = "Create a project",
    security(("bearer_auth" = [])),
    request_body = CreateProjectBody,
    responses(
        (status = 201, description = "Created", body = ProjectResponse),
        (status = 400, description = "Invalid fields or another workspace's client", body = crate::openapi::ErrorBody),
        (status = 403, description = "A member, where the workspace keeps the catalog to admins", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn create_project(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonBody<CreateProjectBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.into_inner();
    let project = state
        .catalog
        .create_project(
            &caller.0,
            Name::parse("name", body.name.as_deref().unwrap_or_default())?,
            body.client_id.map(ClientId),
        )
        .await?;
    Ok(HttpResponse::build(StatusCode::CREATED).json(ProjectResponse::from(project)))
}

/// `GET /api/projects`.
#[utoipa::path(
    operation_id = "listProjects",
    get,
    path = "/api/projects",
    tag = "Projects",
    summary = "List projects, newest first",
    security(("bearer_auth" = [])),
    params(ListQuery),
    responses(
        (status = 200, description = "A page", body = ListResponse<ProjectResponse>),
        (status = 400, description = "Invalid limit, cursor, q or updated_since", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn list_projects(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryParams<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = state
        .catalog
        .projects(&caller.0, &query.filter()?, query.page()?)
        .await?;
    Ok(HttpResponse::Ok().json(ListResponse::from_page(page, ProjectResponse::from)))
}

/// Body of `PATCH /api/projects/{id}`: absent fields are kept; a null `client_id` clears it.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct UpdateProjectBody {
    #[schema(schema_with = fields::optional_name)]
    name: Option<String>,
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(schema_with = fields::client_ref)]
    client_id: Option<Option<Uuid>>,
}

/// `GET /api/projects/{id}`.
#[utoipa::path(
    operation_id = "getProject",
    get,
    path = "/api/projects/{id}",
    tag = "Projects",
    summary = "Get a project",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::ProjectPath),
    responses(
        (status = 200, description = "The project", body = ProjectResponse),
        (status = 404, description = "Project not found", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn get_project(
    state: web::Data<AppState>,
    caller: Caller,
    id: Id<ProjectId>,
) -> Result<web::Json<ProjectResponse>, ApiError> {
    let project = state.catalog.project(&caller.0, id.get()?).await?;
    Ok(web::Json(project.into()))
}

/// `PATCH /api/projects/{id}`: emits `PROJECT_UPDATED` when something changed.
#[utoipa::path(
    operation_id = "updateProject",
    patch,
    path = "/api/projects/{id}",
    tag = "Projects",
    summary = "Change a project (a null client_id clears it)",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::ProjectPath),
    request_body = UpdateProjectBody,
    responses(
        (status = 200, description = "The changed project", body = ProjectResponse),
        (status = 400, description = "Invalid name or another workspace's client", body = crate::openapi::ErrorBody),
        (status = 404, description = "Project not found", body = crate::openapi::ErrorBody),
        (status = 403, description = "A member, where the workspace keeps the catalog to admins", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn update_project(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonBody<UpdateProjectBody>,
    id: Id<ProjectId>,
) -> Result<web::Json<ProjectResponse>, ApiError> {
    let id = id.get()?;
    let body = body.into_inner();
    // An unknown project first, then the fields.
    state.catalog.project(&caller.0, id).await?;
    let patch = ProjectPatch {
        name: body
            .name
            .as_deref()
            .map(|name| Name::parse("name", name))
            .transpose()?,
        client_id: body.client_id.map(|client| client.map(ClientId)),
    };
    let project = state.catalog.update_project(&caller.0, id, &patch).await?;
    Ok(web::Json(project.into()))
}

/// `DELETE /api/projects/{id}`: 200 `{success: true}` (its tasks go with it); 409 while a time
/// entry is booked on it.
#[utoipa::path(
    operation_id = "deleteProject",
    delete,
    path = "/api/projects/{id}",
    tag = "Projects",
    summary = "Delete a project and its tasks",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::ProjectPath),
    responses(
        (status = 200, description = "Deleted", body = crate::openapi::SuccessBody),
        (status = 404, description = "Project not found", body = crate::openapi::ErrorBody),
        (status = 409, description = "Project is used by time entries", body = crate::openapi::ErrorBody),
        (status = 403, description = "A member, where the workspace keeps the catalog to admins", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn delete_project(
    state: web::Data<AppState>,
    caller: Caller,
    _body: JsonOrEmpty<Unread>,
    id: Id<ProjectId>,
) -> Result<HttpResponse, ApiError> {
    state.catalog.delete_project(&caller.0, id.get()?).await?;
    Ok(HttpResponse::Ok().json(crate::openapi::SuccessBody::TRUE))
}

/// `POST /api/projects/{id}/tasks`: 201 with the task; 404 for another workspace's project.
#[utoipa::path(
    operation_id = "createTask",
    post,
    path = "/api/projects/{id}/tasks",
    tag = "Projects",
    summary = "Create a task of a project",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::ProjectPath), request_body = NameBody,
    responses(
        (status = 201, description = "Created", body = TaskResponse),
        (status = 400, description = "Invalid name", body = crate::openapi::ErrorBody),
        (status = 404, description = "Project not found", body = crate::openapi::ErrorBody),
        (status = 403, description = "A member, where the workspace keeps the catalog to admins", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn create_task(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonBody<NameBody>,
    id: Id<ProjectId>,
) -> Result<HttpResponse, ApiError> {
    let project = id.get()?;
    let name = Name::try_from(body.into_inner())?;
    let task = state.catalog.create_task(&caller.0, project, name).await?;
    Ok(HttpResponse::build(StatusCode::CREATED).json(TaskResponse::from(task)))
}

/// `GET /api/projects/{id}/tasks`.
#[utoipa::path(
    operation_id = "listTasks",
    get,
    path = "/api/projects/{id}/tasks",
    tag = "Projects",
    summary = "List a project's tasks",
    security(("bearer_auth" = [])),
    params(crate::openapi::paths::ProjectPath, ListQuery),
    responses(
        (status = 200, description = "A page", body = ListResponse<TaskResponse>),
        (status = 400, description = "Invalid limit, cursor, q or updated_since", body = crate::openapi::ErrorBody),
        (status = 404, description = "Project not found", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn list_tasks(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryParams<ListQuery>,
    id: Id<ProjectId>,
) -> Result<HttpResponse, ApiError> {
    let page = state
        .catalog
        .tasks(&caller.0, id.get()?, &query.filter()?, query.page()?)
        .await?;
    Ok(HttpResponse::Ok().json(ListResponse::from_page(page, TaskResponse::from)))
}

/// `POST /api/tags`: 201 with the tag; 409 with `existing_id` for a name in use.
#[utoipa::path(
    operation_id = "createTag",
    post,
    path = "/api/tags",
    tag = "Tags",
    summary = "Create a tag",
    security(("bearer_auth" = [])),
    request_body = NameBody,
    responses(
        (status = 201, description = "Created", body = TagResponse),
        (status = 400, description = "Invalid name", body = crate::openapi::ErrorBody),
        (status = 409, description = "A tag with this name exists", body = crate::openapi::ConflictBody),
        (status = 403, description = "A member, where the workspace keeps the catalog to admins", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn create_tag(
    state: web::Data<AppState>,
    caller: Caller,
    body: JsonBody<NameBody>,
) -> Result<HttpResponse, ApiError> {
    let name = Name::try_from(body.into_inner())?;
    let tag = state.catalog.create_tag(&caller.0, name).await?;
    Ok(HttpResponse::build(StatusCode::CREATED).json(TagResponse::from(tag)))
}

/// `GET /api/tags`.
#[utoipa::path(
    operation_id = "listTags",
    get,
    path = "/api/tags",
    tag = "Tags",
    summary = "List tags, newest first",
    security(("bearer_auth" = [])),
    params(ListQuery),
    responses(
        (status = 200, description = "A page", body = ListResponse<TagResponse>),
        (status = 400, description = "Invalid limit, cursor, q or updated_since", body = crate::openapi::ErrorBody),
        crate::openapi::AuthErrors
    )
)]
pub async fn list_tags(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryParams<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = state
        .catalog
        .tags(&caller.0, &query.filter()?, query.page()?)
        .await?;
    Ok(HttpResponse::Ok().json(ListResponse::from_page(page, TagResponse::from)))
}
