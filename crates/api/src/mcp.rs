//! The Model Context Protocol server at `/mcp` (docs/integration-guide.md, section 7): the REST
//! API's own handlers offered as tools to an assistant, over Streamable HTTP.
//!
//! A request is admitted as every REST request is (the bearer key, its rate limit, 401 and 429
//! as JSON) before the protocol sees it; the caller it names travels to the tool in the request's
//! extensions. Each tool then calls the REST handler of the same operation with that caller, so
//! ownership, roles, isolation, validation, events and answers are the REST API's by
//! construction: a tool's result is the REST answer's JSON, its failure the REST error body as
//! a tool error (`{"error": "No running timer"}`), never a protocol error.
//!
//! The server is stateless (no `Mcp-Session-Id`, nothing kept between requests): every `POST`
//! is answered on its own, so an abandoned client holds no memory and any process of several can
//! answer any request.

use std::sync::Arc;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::{Next, from_fn};
use actix_web::{HttpMessage, HttpResponse, ResponseError, web};
use rmcp::handler::server::tool::Extension;
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{CallToolResult, Implementation, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::{ServerHandler, schemars, tool, tool_handler, tool_router};
use rmcp_actix_web::transport::StreamableHttpService;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use timetrack_domain::model::Principal;

use crate::error::ApiError;
use crate::extract::{Caller, Id, JsonBody, JsonOrEmpty, QueryParams, Unread};
use crate::mcp_schemas::Output;
use crate::replica::ReadAfter;
use crate::routes::{catalog, clients, events, find_client, me, members, reports, time_entries};
use crate::state::AppState;

/// The path the server answers at.
pub const PATH: &str = "/mcp";

/// The tools, on the application's state.
#[derive(Clone)]
pub struct Tools {
    state: web::Data<AppState>,
    tool_router: ToolRouter<Self>,
}

impl std::fmt::Debug for Tools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tools").finish_non_exhaustive()
    }
}

/// `find_clients`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct FindClients {
    /// Part of the client's name; matched ignoring case, newest client first.
    pub name: String,
}

/// `list_projects`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListProjects {
    /// Only projects whose name contains this text, ignoring case.
    pub q: Option<String>,
}

/// `start_timer`, and the entry's fields of `log_time` (every one optional).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct EntryInput {
    /// What the time is for.
    pub description: Option<String>,
    /// A project of the workspace (UUID).
    pub project_id: Option<String>,
    /// A task of that project (UUID).
    pub task_id: Option<String>,
    /// Tags of the workspace (UUIDs).
    pub tag_ids: Option<Vec<String>>,
    /// Whether the time is billable (the project's default when absent).
    pub billable: Option<bool>,
}

impl EntryInput {
    /// The REST body's fields.
    fn body(self) -> Map<String, Value> {
        let mut body = Map::new();
        body.insert("description".into(), json!(self.description));
        body.insert("project_id".into(), json!(self.project_id));
        body.insert("task_id".into(), json!(self.task_id));
        body.insert("tag_ids".into(), json!(self.tag_ids.unwrap_or_default()));
        body.insert("billable".into(), json!(self.billable));
        body
    }
}

/// `log_time`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct LogTime {
    /// Start, RFC 3339 (e.g. `2026-11-28T09:00:00+01:00`).
    pub start: String,
    /// End, RFC 3339, after the start.
    pub end: String,
    /// The entry's fields.
    #[serde(flatten)]
    pub entry: EntryInput,
}

/// `list_time_entries`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListTimeEntries {
    /// Entries starting at or after this instant (RFC 3339).
    pub from: String,
    /// Entries starting before this instant (RFC 3339).
    pub to: String,
    /// Only this project's entries (UUID).
    pub project_id: Option<String>,
    /// Only this member's entries (UUID).
    pub user_id: Option<String>,
}

/// `summary_report`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SummaryReport {
    /// First day, `YYYY-MM-DD`.
    pub from: String,
    /// Last day, inclusive, `YYYY-MM-DD` (at most 366 days after `from`).
    pub to: String,
    /// One to three of client, project, task, user, tag, day, week, month, comma-separated
    /// (e.g. `project,day`).
    pub group_by: String,
}

/// `recent_events`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct RecentEvents {
    /// Event types, comma-separated (e.g. `TIMER_STARTED,TIMER_STOPPED`); every type when
    /// absent.
    pub types: Option<String>,
    /// The `next_cursor` of an earlier answer, to read on from there (oldest first); absent,
    /// the newest events, newest first.
    pub after: Option<String>,
    /// Events per answer, 1 to 1000 (100 when absent).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<u32>,
}

/// `list_tags` and `list_members`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct NameFilter {
    /// Only those whose name contains this text, ignoring case.
    pub q: Option<String>,
}

/// `list_tasks`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListTasks {
    /// The project (UUID).
    pub project_id: String,
    /// Only tasks whose name contains this text, ignoring case.
    pub q: Option<String>,
}

/// `create_client`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CreateClient {
    /// The client's name (1 to 255 characters).
    pub name: String,
    /// An e-mail address.
    pub email: Option<String>,
    /// A note.
    pub note: Option<String>,
    /// ISO 4217 currency its time is billed in (the workspace's when absent).
    pub currency: Option<String>,
}

/// `create_project`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CreateProject {
    /// The project's name (1 to 255 characters).
    pub name: String,
    /// Its client (UUID), if any.
    pub client_id: Option<String>,
}

/// `create_tag`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CreateTag {
    /// The tag's name (1 to 255 characters).
    pub name: String,
}

/// `update_time_entry`: the entry, and the fields to change (absent ones stay; null clears
/// project_id or task_id).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct UpdateTimeEntry {
    /// The entry (UUID).
    pub id: String,
    /// A new description.
    pub description: Option<String>,
    /// A new project (UUID), or null for none.
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    pub project_id: Option<Option<String>>,
    /// A new task of the project (UUID), or null for none.
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    pub task_id: Option<Option<String>>,
    /// The new tags (UUIDs), all of them.
    pub tag_ids: Option<Vec<String>>,
    /// Whether it is billable.
    pub billable: Option<bool>,
    /// A new start, RFC 3339.
    pub start: Option<String>,
    /// A new end, RFC 3339 (a stopped entry's).
    pub end: Option<String>,
}

impl UpdateTimeEntry {
    /// The REST body: the fields given, a null kept where it clears.
    fn body(self) -> Map<String, Value> {
        let mut body = Map::new();
        let mut set = |name: &str, value: Option<Value>| {
            if let Some(value) = value {
                body.insert(name.to_owned(), value);
            }
        };
        set("description", self.description.map(Value::from));
        set("project_id", self.project_id.map(|p| json!(p)));
        set("task_id", self.task_id.map(|t| json!(t)));
        set("tag_ids", self.tag_ids.map(|t| json!(t)));
        set("billable", self.billable.map(Value::from));
        set("start", self.start.map(Value::from));
        set("end", self.end.map(Value::from));
        body
    }
}

/// `delete_time_entry`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct EntryId {
    /// The entry (UUID).
    pub id: String,
}

/// Most entries `list_time_entries` answers.
const MAX_LISTED_ENTRIES: usize = 200;
/// Most pages of 200 entries `list_time_entries` reads to find them (a project's entries among
/// everyone's).
const MAX_READ_PAGES: usize = 25;

#[tool_router]
impl Tools {
    /// The tools on `state`.
    pub fn new(state: web::Data<AppState>) -> Self {
        Self {
            state,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "Who the API key belongs to: the user (with their role) and the workspace (name, time zone, currency). Call this first to learn the workspace.",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        output_schema = crate::mcp_schemas::of("whoami", Output::Answer("get", "/api/me", "200"))
    )]
    async fn whoami(&self, Extension(parts): Extension<http::request::Parts>) -> CallToolResult {
        settle(async move {
            let caller = caller(&parts)?;
            of_json(me::me(self.state.clone(), caller).await)
        })
        .await
    }

    #[tool(
        description = "Find the workspace's clients whose name contains the given text (ignoring case), newest first, at most 100. Answers {clients: [...]}, empty when none matches.",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        output_schema = crate::mcp_schemas::of("find_clients", Output::Under("clients", ("post", "/api/integrations/automation/triggers/clients/find", "200")))
    )]
    async fn find_clients(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<FindClients>,
    ) -> CallToolResult {
        settle(async move {
            let caller = caller(&parts)?;
            let body =
                json!({"workspace_id": caller.0.workspace_id.to_string(), "name": input.name});
            let body = parsed(body)?;
            let found = find_client::find(
                self.state.clone(),
                caller,
                ReadAfter::default(),
                JsonBody::of(body),
            )
            .await;
            of_json_under("clients", found)
        })
        .await
    }

    #[tool(
        description = "List the workspace's projects, newest first (up to 200), optionally only those whose name contains q (ignoring case). Answers {data: [...], next_cursor}.",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        output_schema = crate::mcp_schemas::of("list_projects", Output::Answer("get", "/api/projects", "200"))
    )]
    async fn list_projects(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<ListProjects>,
    ) -> CallToolResult {
        settle(async move {
            let caller = caller(&parts)?;
            let query = parsed(json!({"q": input.q, "limit": 200}))?;
            of_response(
                catalog::list_projects(self.state.clone(), caller, QueryParams(query)).await,
            )
        })
        .await
    }

    #[tool(
        description = "The caller's running timer, or {timer: null} when none runs. Answers {timer: {...}}.",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        output_schema = crate::mcp_schemas::of("current_timer", Output::Under("timer", ("get", "/api/time-entries/current", "200")))
    )]
    async fn current_timer(
        &self,
        Extension(parts): Extension<http::request::Parts>,
    ) -> CallToolResult {
        settle(async move {
            let caller = caller(&parts)?;
            of_json_under(
                "timer",
                time_entries::current(self.state.clone(), caller).await,
            )
        })
        .await
    }

    #[tool(
        description = "Start a timer for the caller now (a running one is stopped first). All fields optional: description, project_id, task_id, tag_ids, billable. Answers the running entry; fires TIMER_STARTED.",
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false),
        output_schema = crate::mcp_schemas::of("start_timer", Output::Answer("post", "/api/time-entries/start", "201"))
    )]
    async fn start_timer(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<EntryInput>,
    ) -> CallToolResult {
        settle(async move {
            let caller = caller(&parts)?;
            let body = parsed(Value::Object(input.body()))?;
            of_response(
                time_entries::start(self.state.clone(), caller, JsonOrEmpty::of(body)).await,
            )
        })
        .await
    }

    #[tool(
        description = "Stop the caller's running timer now. Answers the stopped entry with its duration; fails with 'No running timer' when none runs. Fires TIMER_STOPPED.",
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false),
        output_schema = crate::mcp_schemas::of("stop_timer", Output::Answer("post", "/api/time-entries/stop", "200"))
    )]
    async fn stop_timer(
        &self,
        Extension(parts): Extension<http::request::Parts>,
    ) -> CallToolResult {
        settle(async move {
            let caller = caller(&parts)?;
            of_json(
                time_entries::stop(self.state.clone(), caller, JsonOrEmpty::of(Unread {})).await,
            )
        })
        .await
    }

    #[tool(
        description = "Record finished time for the caller: start and end (RFC 3339), optionally description, project_id, task_id, tag_ids, billable. Answers the entry; fires TIME_ENTRY_CREATED.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false),
        output_schema = crate::mcp_schemas::of("log_time", Output::Answer("post", "/api/time-entries", "201"))
    )]
    async fn log_time(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<LogTime>,
    ) -> CallToolResult {
        settle(async move {
            let caller = caller(&parts)?;
            let mut body = input.entry.body();
            body.insert("start".into(), json!(input.start));
            body.insert("end".into(), json!(input.end));
            let body = parsed(Value::Object(body))?;
            of_response(time_entries::create(self.state.clone(), caller, JsonBody::of(body)).await)
        })
        .await
    }

    #[tool(
        description = "The time entries that start within [from, to) (RFC 3339), latest first, optionally of one project or one member; at most 200. Answers {data: [...], truncated}.",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        output_schema = crate::mcp_schemas::of("list_time_entries", Output::DataTruncated("get", "/api/time-entries", "200"))
    )]
    async fn list_time_entries(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<ListTimeEntries>,
    ) -> CallToolResult {
        settle(async move {
            let caller = caller(&parts)?;
            let mut listed: Vec<Value> = Vec::new();
            let mut cursor: Option<String> = None;
            let mut truncated = false;
            // Pages of the REST list, narrowed to the project here (the list has no project
            // filter); at most MAX_READ_PAGES of them, so one call stays one bounded read.
            for _ in 0..MAX_READ_PAGES {
                let query = parsed(json!({
                    "from": input.from,
                    "to": input.to,
                    "user_id": input.user_id,
                    "limit": 200,
                    "cursor": cursor,
                }))?;
                let page = body_of(
                    time_entries::list(self.state.clone(), caller, QueryParams(query)).await,
                )?;
                for entry in page["data"].as_array().into_iter().flatten() {
                    let wanted = input
                        .project_id
                        .as_deref()
                        .is_none_or(|p| entry["project_id"].as_str() == Some(p));
                    if wanted {
                        if listed.len() == MAX_LISTED_ENTRIES {
                            truncated = true;
                            break;
                        }
                        listed.push(entry.clone());
                    }
                }
                cursor = page["next_cursor"].as_str().map(str::to_owned);
                if truncated || cursor.is_none() {
                    break;
                }
            }
            // Stopped with entries left unread: the answer is not the whole period.
            truncated |= cursor.is_some();
            Ok(CallToolResult::structured(
                json!({"data": listed, "truncated": truncated}),
            ))
        })
        .await
    }

    #[tool(
        description = "Hours and amounts from from to to (days, YYYY-MM-DD, inclusive) grouped by one to three of client, project, task, user, tag, day, week, month (e.g. group_by 'project,day'), with totals per currency. Members see only their own time, and amounts only where the workspace lets them.",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        output_schema = crate::mcp_schemas::of("summary_report", Output::Answer("get", "/api/reports/summary", "200"))
    )]
    async fn summary_report(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<SummaryReport>,
    ) -> CallToolResult {
        settle(async move {
            let caller = caller(&parts)?;
            let query = parsed(json!({
                "from": input.from,
                "to": input.to,
                "group_by": input.group_by,
            }))?;
            of_response(
                reports::summary_of(
                    self.state.clone(),
                    caller,
                    ReadAfter::default(),
                    QueryParams(query),
                    false,
                )
                .await,
            )
        })
        .await
    }

    #[tool(
        description = "Recent events of the workspace (timers started and stopped, entries, clients, projects, ...), newest first; with after (a next_cursor) the events after it, oldest first. Optional types (comma-separated) and limit. Answers {data: [...], next_cursor}.",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        output_schema = crate::mcp_schemas::of("recent_events", Output::Answer("get", "/api/integrations/automation/events", "200"))
    )]
    async fn recent_events(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<RecentEvents>,
    ) -> CallToolResult {
        settle(async move {
            let caller = caller(&parts)?;
            let before = input.after.is_none().then_some("latest");
            let query = parsed(json!({
                "types": input.types,
                "after": input.after,
                "before": before,
                "limit": input.limit,
            }))?;
            of_json(
                events::feed(
                    self.state.clone(),
                    caller,
                    ReadAfter::default(),
                    QueryParams(query),
                )
                .await,
            )
        })
        .await
    }
    #[tool(
        description = "List the workspace's tags, newest first (up to 200), optionally only those whose name contains q (ignoring case). Answers {data: [...], next_cursor}.",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        output_schema = crate::mcp_schemas::of("list_tags", Output::Answer("get", "/api/tags", "200"))
    )]
    async fn list_tags(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<NameFilter>,
    ) -> CallToolResult {
        settle(async move {
            let caller = caller(&parts)?;
            let query = parsed(json!({"q": input.q, "limit": 200}))?;
            of_response(catalog::list_tags(self.state.clone(), caller, QueryParams(query)).await)
        })
        .await
    }

    #[tool(
        description = "List a project's tasks, newest first (up to 200), optionally only those whose name contains q (ignoring case). Answers {data: [...], next_cursor}.",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        output_schema = crate::mcp_schemas::of("list_tasks", Output::Answer("get", "/api/projects/{id}/tasks", "200"))
    )]
    async fn list_tasks(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<ListTasks>,
    ) -> CallToolResult {
        settle(async move {
            let caller = caller(&parts)?;
            let query = parsed(json!({"q": input.q, "limit": 200}))?;
            of_response(
                catalog::list_tasks(
                    self.state.clone(),
                    caller,
                    QueryParams(query),
                    Id::parse(&input.project_id),
                )
                .await,
            )
        })
        .await
    }

    #[tool(
        description = "List the workspace's members with their roles (up to 200), optionally only those whose name or e-mail contains q (ignoring case). Answers {data: [...], next_cursor}.",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        output_schema = crate::mcp_schemas::of("list_members", Output::Answer("get", "/api/members", "200"))
    )]
    async fn list_members(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<NameFilter>,
    ) -> CallToolResult {
        settle(async move {
            let caller = caller(&parts)?;
            let query = parsed(json!({"q": input.q, "limit": 200}))?;
            of_response(members::list(self.state.clone(), caller, QueryParams(query)).await)
        })
        .await
    }

    #[tool(
        description = "Create a client of the workspace: name, optionally email, note and currency (ISO 4217). Answers the client; fires CLIENT_CREATED.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false),
        output_schema = crate::mcp_schemas::of("create_client", Output::Answer("post", "/api/clients", "201"))
    )]
    async fn create_client(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<CreateClient>,
    ) -> CallToolResult {
        settle(async move {
            let caller = caller(&parts)?;
            let body = parsed(json!({
                "name": input.name,
                "email": input.email,
                "note": input.note,
                "currency": input.currency,
            }))?;
            of_response(clients::create(self.state.clone(), caller, JsonBody::of(body)).await)
        })
        .await
    }

    #[tool(
        description = "Create a project of the workspace: name, optionally client_id. Answers the project; fires PROJECT_CREATED.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false),
        output_schema = crate::mcp_schemas::of("create_project", Output::Answer("post", "/api/projects", "201"))
    )]
    async fn create_project(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<CreateProject>,
    ) -> CallToolResult {
        settle(async move {
            let caller = caller(&parts)?;
            let body = parsed(json!({"name": input.name, "client_id": input.client_id}))?;
            of_response(
                catalog::create_project(self.state.clone(), caller, JsonBody::of(body)).await,
            )
        })
        .await
    }

    #[tool(
        description = "Create a tag of the workspace. Answers the tag.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false),
        output_schema = crate::mcp_schemas::of("create_tag", Output::Answer("post", "/api/tags", "201"))
    )]
    async fn create_tag(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<CreateTag>,
    ) -> CallToolResult {
        settle(async move {
            let caller = caller(&parts)?;
            let body = parsed(json!({"name": input.name}))?;
            of_response(catalog::create_tag(self.state.clone(), caller, JsonBody::of(body)).await)
        })
        .await
    }

    #[tool(
        description = "Change one of the caller's time entries (a running one too): any of description, project_id, task_id (null clears them), tag_ids, billable, start and end (RFC 3339). Absent fields stay. Answers the entry; fires TIME_ENTRY_UPDATED.",
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false),
        output_schema = crate::mcp_schemas::of("update_time_entry", Output::Answer("patch", "/api/time-entries/{id}", "200"))
    )]
    async fn update_time_entry(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<UpdateTimeEntry>,
    ) -> CallToolResult {
        settle(async move {
            let caller = caller(&parts)?;
            let id = input.id.clone();
            let body = serde_json::from_value(Value::Object(input.body())).map_err(
                |e| json!({"error": "Invalid request parameters", "detail": e.to_string()}),
            )?;
            of_json(
                time_entries::update(
                    self.state.clone(),
                    caller,
                    JsonBody::of(body),
                    Id::parse(&id),
                )
                .await,
            )
        })
        .await
    }

    #[tool(
        description = "Delete one of the caller's time entries for good. Answers {success: true}; fires TIME_ENTRY_DELETED.",
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false),
        output_schema = crate::mcp_schemas::of("delete_time_entry", Output::Answer("delete", "/api/time-entries/{id}", "200"))
    )]
    async fn delete_time_entry(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<EntryId>,
    ) -> CallToolResult {
        settle(async move {
            let caller = caller(&parts)?;
            of_response(
                time_entries::delete(
                    self.state.clone(),
                    caller,
                    JsonOrEmpty::of(Unread {}),
                    Id::parse(&input.id),
                )
                .await,
            )
        })
        .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        server_config()
    }

    /// Calls the tool, after refusing arguments its input schema does not name: a mistyped
    /// name (`projectId` for `project_id`) would otherwise be ignored, and the tool would do
    /// something else than asked (start a timer without its project). A tool error naming them,
    /// so the assistant can correct the call.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        if let Some(tool) = self.tool_router.get(&request.name)
            && let Some(refusal) = unknown_arguments(&tool.input_schema, request.arguments.as_ref())
        {
            return Ok(tool_error(&refusal).into());
        }
        // The key's scopes: a tool outside them is a tool error that says which it lacks, and
        // does nothing (`crate::scopes`).
        let principal = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| caller(parts).ok());
        if let (Some(scope), Some(Caller(principal))) =
            (crate::scopes::of_tool(&request.name), principal)
            && !principal.scopes.has(scope)
        {
            return Ok(tool_error(&json!({
                "error": "Forbidden",
                "detail": format!("this key lacks the scope {}", scope.as_str()),
            }))
            .into());
        }
        let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        self.tool_router.call(call).await
    }
}

/// The error body for `arguments` that `schema` (a tool's input schema) does not name, if any:
/// `{"error": "Unknown argument: projectId", "detail": "this tool takes: billable, ..."}`.
fn unknown_arguments(
    schema: &Map<String, Value>,
    arguments: Option<&Map<String, Value>>,
) -> Option<Value> {
    let known = schema.get("properties").and_then(Value::as_object);
    let mut unknown: Vec<&str> = arguments?
        .keys()
        .filter(|name| !known.is_some_and(|known| known.contains_key(name.as_str())))
        .map(String::as_str)
        .collect();
    if unknown.is_empty() {
        return None;
    }
    unknown.sort_unstable();
    let mut takes: Vec<&str> = known
        .map(|k| k.keys().map(String::as_str).collect())
        .unwrap_or_default();
    takes.sort_unstable();
    let detail = if takes.is_empty() {
        "this tool takes no arguments".to_owned()
    } else {
        format!("this tool takes: {}", takes.join(", "))
    };
    let noun = if unknown.len() == 1 {
        "argument"
    } else {
        "arguments"
    };
    Some(json!({
        "error": format!("Unknown {noun}: {}", unknown.join(", ")),
        "detail": detail,
    }))
}

/// What the server says of itself at `initialize`: tools, its name and version, how to use it.
/// `timetrack mcp` (stdio) says the same.
pub fn server_config() -> ServerConfig {
    ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        .with_server_info(Implementation::new("timetrack", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "timetrack: time tracking. Start with whoami. Times are RFC 3339, days \
             YYYY-MM-DD, amounts integer minor units of their currency. A failed tool \
             answers {\"error\": ...} with the API's message.",
        )
}

/// What a failed tool answers: the REST API's error body, `{"error", "detail"?}`.
type Failure = Value;

/// A tool's work, its failure made a tool error (never a protocol error).
async fn settle(work: impl Future<Output = Result<CallToolResult, Failure>>) -> CallToolResult {
    work.await.unwrap_or_else(|failure| tool_error(&failure))
}

/// A tool error (`isError: true`) whose text content is `failure`, the REST error body as JSON.
/// Not as structured content: that is the tool's answer, which its output schema describes (and
/// which the TypeScript SDK checks against it, a failure's too).
pub fn tool_error(failure: &Value) -> CallToolResult {
    CallToolResult::error(vec![rmcp::model::ContentBlock::text(failure.to_string())])
}

/// The caller the admission step put in the request, as the REST extractor would give it.
fn caller(parts: &http::request::Parts) -> Result<Caller, Failure> {
    // The transport carries the hook's extensions as one value in the request's extensions.
    parts
        .extensions
        .get::<rmcp::model::Extensions>()
        .and_then(|hooked| hooked.get::<Principal>())
        .copied()
        .map(Caller)
        .ok_or_else(|| json!({"error": "Unauthorized"}))
}

/// `value` read as a REST body or query type; a field of the wrong shape is the REST API's 400.
fn parsed<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, Failure> {
    // Absent optional inputs are left out rather than sent as null, as a REST client would.
    let value = match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .collect::<Map<String, Value>>(),
        ),
        other => other,
    };
    serde_json::from_value(value)
        .map_err(|e| json!({"error": "Invalid request parameters", "detail": e.to_string()}))
}

/// A REST error's body.
fn failure(err: &ApiError) -> Failure {
    err.error_response()
        .into_body()
        .try_into_bytes()
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .unwrap_or_else(|| json!({"error": err.to_string()}))
}

/// The JSON of a handler's answer, or the error body of its failure.
fn body_of(result: Result<HttpResponse, ApiError>) -> Result<Value, Failure> {
    let response = result.map_err(|e| failure(&e))?;
    let status = response.status();
    let value = response
        .into_body()
        .try_into_bytes()
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .unwrap_or(Value::Null);
    if status.is_success() {
        Ok(value)
    } else {
        Err(value)
    }
}

/// A handler's `HttpResponse` as a tool result.
fn of_response(result: Result<HttpResponse, ApiError>) -> Result<CallToolResult, Failure> {
    body_of(result).map(structured)
}

/// A handler's JSON answer as a tool result.
fn of_json<T: serde::Serialize>(
    result: Result<web::Json<T>, ApiError>,
) -> Result<CallToolResult, Failure> {
    let web::Json(body) = result.map_err(|e| failure(&e))?;
    let value = serde_json::to_value(body).map_err(|e| json!({"error": e.to_string()}))?;
    Ok(structured(value))
}

/// A handler's JSON answer as a tool result, under `key` (an array or a null is no object).
fn of_json_under<T: serde::Serialize>(
    key: &str,
    result: Result<web::Json<T>, ApiError>,
) -> Result<CallToolResult, Failure> {
    let web::Json(body) = result.map_err(|e| failure(&e))?;
    let value = serde_json::to_value(body).map_err(|e| json!({"error": e.to_string()}))?;
    Ok(CallToolResult::structured(json!({ key: value })))
}

/// Structured content is an object: anything else is put under `value`.
fn structured(value: Value) -> CallToolResult {
    match value {
        Value::Object(_) => CallToolResult::structured(value),
        other => CallToolResult::structured(json!({ "value": other })),
    }
}

/// Admits a request to `/mcp` as every REST request is admitted (key, rate limit), or answers
/// the REST API's 401 or 429; the admitted caller goes along in the request's extensions.
async fn admit(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    match crate::extract::admit(req.request()).await {
        Ok(principal) => {
            req.extensions_mut().insert(principal);
            Ok(next.call(req).await?.map_into_left_body())
        }
        Err(err) => Ok(req
            .into_response(err.error_response())
            .map_into_right_body()),
    }
}

/// Answers a POSTed JSON body that is not one JSON-RPC message as JSON-RPC says, `400` with an
/// error object and no id: malformed JSON or an empty body is a parse error (`-32700`), a batch
/// (an array; MCP's Streamable HTTP takes one message a request) or an object that is no
/// request, notification or response an invalid request (`-32600`). The transport would answer
/// these `415` with a line of text, which no JSON-RPC client reads. Anything else goes on to the
/// transport with its body as read; a body past `max_bytes` is `413`, as the transport says.
async fn jsonrpc_checked(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
    max_bytes: usize,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let json_post = req.method() == actix_web::http::Method::POST
        && req
            .headers()
            .get(actix_web::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(';')
                    .next()
                    .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
            });
    if !json_post {
        return Ok(next.call(req).await?.map_into_left_body());
    }
    let mut payload = req.take_payload();
    let mut body = web::BytesMut::new();
    while let Some(chunk) = futures_util::StreamExt::next(&mut payload).await {
        let chunk = chunk?;
        if body.len() + chunk.len() > max_bytes {
            let refused =
                HttpResponse::PayloadTooLarge().json(json!({"error": "Payload too large"}));
            return Ok(req.into_response(refused).map_into_right_body());
        }
        body.extend_from_slice(&chunk);
    }
    let body = body.freeze();
    // A message is decoded once here (and again by the transport); only a refused body is read
    // a second time, to tell a parse error from an invalid request.
    if let Err(err) = serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(&body) {
        let (code, message) = match serde_json::from_slice::<Value>(&body) {
            Err(err) => (-32700, format!("Parse error: {err}")),
            Ok(Value::Array(_)) => (
                -32600,
                "Invalid Request: one JSON-RPC message a request, batches are not supported"
                    .to_owned(),
            ),
            Ok(_) => (-32600, format!("Invalid Request: {err}")),
        };
        let refused = HttpResponse::BadRequest().json(json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": code, "message": message},
        }));
        return Ok(req.into_response(refused).map_into_right_body());
    }
    req.set_payload(actix_web::dev::Payload::from(body));
    Ok(next.call(req).await?.map_into_left_body())
}

/// The `/mcp` scope on `state`: admission, then the Streamable HTTP transport, stateless, taking
/// JSON-RPC messages of at most `max_message_bytes` (the application's body limit).
pub fn scope(
    state: web::Data<AppState>,
    max_message_bytes: usize,
) -> actix_web::Scope<
    impl actix_web::dev::ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let service = StreamableHttpService::builder()
        .service_factory(Arc::new(move || Ok(Tools::new(state.clone()))))
        .session_manager(Arc::new(NeverSessionManager::default()))
        .stateful_mode(false)
        .json_response(true)
        .max_request_body_bytes(max_message_bytes)
        // Every request carries a key: a page that rebinds a name to this host has none.
        .allowed_hosts(Vec::new())
        .on_request_fn(|req, extensions| {
            if let Some(principal) = req.extensions().get::<Principal>() {
                extensions.insert(*principal);
            }
        })
        .build();
    service
        .scope_with_path(PATH)
        .wrap(from_fn(move |req, next| {
            jsonrpc_checked(req, next, max_message_bytes)
        }))
        .wrap(from_fn(admit))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tool's output schema is built from the served document (a missing answer or one
    /// that is not an object would fail here, not at a client's first listing), and every tool
    /// has its annotations.
    #[test]
    fn every_tool_declares_an_object_output_schema_and_annotations() {
        let tools = Tools::tool_router().list_all();
        assert_eq!(tools.len(), 18);
        for tool in tools {
            assert!(
                crate::scopes::of_tool(&tool.name).is_some(),
                "{} needs a scope",
                tool.name
            );
            let schema = tool
                .output_schema
                .as_ref()
                .unwrap_or_else(|| panic!("{} has no output schema", tool.name));
            assert_eq!(schema.get("type"), Some(&json!("object")), "{}", tool.name);
            let text = serde_json::to_string(schema).unwrap();
            assert!(!text.contains("#/components/"), "{}: {text}", tool.name);
            let hints = tool
                .annotations
                .as_ref()
                .unwrap_or_else(|| panic!("{} has no annotations", tool.name));
            assert!(
                hints.read_only_hint.is_some()
                    && hints.destructive_hint.is_some()
                    && hints.idempotent_hint.is_some()
                    && hints.open_world_hint == Some(false),
                "{}: {hints:?}",
                tool.name
            );
        }
    }
}
