//! Projects, tasks and tags: created and listed inside the caller's workspace.

use std::collections::HashMap;
use std::sync::Arc;

use time::OffsetDateTime;

use crate::accounts::model::{Principal, Workspace};
use crate::accounts::ports::WorkspaceRepository;
use crate::error::{DomainError, DomainResult};
use crate::ids::{ClientId, EventId, ProjectId, TagId, TaskId, WorkspaceId};
use crate::page::{ListFilter, Page, PageRequest};
use crate::payload::{self, ProjectPayload};
use crate::system::{Clock, IdGenerator};
use crate::tracking::model::{Client, Project, Tag, Task};
use crate::tracking::ports::{CatalogRepository, ClientRepository};
use crate::values::Name;
use crate::webhooks::model::{Event, EventSubject, EventType};
use crate::writes::WriteOutcome;

/// Changes to a project: `None` keeps a field; `client_id: Some(None)` clears the client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectPatch {
    /// New name.
    pub name: Option<Name>,
    /// New client (of the same workspace), or `Some(None)` for none.
    pub client_id: Option<Option<ClientId>>,
}

/// Project, task and tag operations.
#[derive(Clone)]
pub struct CatalogService {
    catalog: Arc<dyn CatalogRepository>,
    clients: Arc<dyn ClientRepository>,
    workspaces: Arc<dyn WorkspaceRepository>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
}

impl std::fmt::Debug for CatalogService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogService").finish_non_exhaustive()
    }
}

impl CatalogService {
    /// Builds the service on its ports.
    pub fn new(
        catalog: Arc<dyn CatalogRepository>,
        clients: Arc<dyn ClientRepository>,
        workspaces: Arc<dyn WorkspaceRepository>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> Self {
        Self {
            catalog,
            clients,
            workspaces,
            clock,
            ids,
        }
    }

    async fn workspace(&self, id: WorkspaceId) -> DomainResult<Workspace> {
        self.workspaces
            .get(id)
            .await?
            .ok_or(DomainError::NotFound("workspace"))
    }

    /// The payload of `project`: its client must be one of its workspace.
    async fn payload(
        &self,
        project: &Project,
        workspace: &Workspace,
    ) -> DomainResult<ProjectPayload> {
        let client = match project.client_id {
            Some(id) => Some(
                self.clients
                    .get(project.workspace_id, id)
                    .await?
                    .ok_or_else(|| {
                        DomainError::validation(
                            "client_id does not name a client of this workspace",
                        )
                    })?,
            ),
            None => None,
        };
        Ok(payload::project(project, client.as_ref(), workspace))
    }

    fn event(
        &self,
        event_type: EventType,
        project: &Project,
        body: &ProjectPayload,
        at: OffsetDateTime,
    ) -> DomainResult<Event> {
        crate::webhooks::model::event::event_of(
            EventId(self.ids.new_uuid()),
            project.workspace_id,
            event_type,
            body,
            at,
            EventSubject {
                project_id: Some(project.id),
                client_id: project.client_id,
                ..EventSubject::default()
            },
            project.id,
        )
    }

    /// Creates a project, optionally for a client of the same workspace, and records
    /// `PROJECT_CREATED`.
    pub async fn create_project(
        &self,
        caller: &Principal,
        name: Name,
        client: Option<ClientId>,
    ) -> DomainResult<Project> {
        crate::accounts::services::workspace::require_catalog(self.workspaces.as_ref(), caller)
            .await?;
        let now = self.clock.now();
        let project = Project {
            id: ProjectId(self.ids.new_uuid()),
            workspace_id: caller.workspace_id,
            client_id: client,
            name: name.into_string(),
            created_at: now,
            updated_at: now,
        };
        let workspace = self.workspace(caller.workspace_id).await?;
        let body = self.payload(&project, &workspace).await?;
        let event = self.event(EventType::ProjectCreated, &project, &body, now)?;
        self.catalog.create_project(&project, &[event]).await?;
        Ok(project)
    }

    /// The caller's project `id`; `NotFound("project")` for anything else.
    pub async fn project(&self, caller: &Principal, id: ProjectId) -> DomainResult<Project> {
        self.catalog
            .project(caller.workspace_id, id)
            .await?
            .ok_or(DomainError::NotFound("project"))
    }

    /// Applies `patch` to the caller's project `id` and records `PROJECT_UPDATED` with the fields
    /// that changed; a patch that changes nothing writes nothing.
    pub async fn update_project(
        &self,
        caller: &Principal,
        id: ProjectId,
        patch: &ProjectPatch,
    ) -> DomainResult<Project> {
        crate::accounts::services::workspace::require_catalog(self.workspaces.as_ref(), caller)
            .await?;
        let workspace = self.workspace(caller.workspace_id).await?;
        for _ in 0..crate::writes::WRITE_ATTEMPTS {
            let before = self.project(caller, id).await?;
            let mut after = before.clone();
            if let Some(name) = &patch.name {
                after.name = name.to_string();
            }
            if let Some(client) = patch.client_id {
                after.client_id = client;
            }
            if after == before {
                return Ok(before);
            }
            after.updated_at = self.clock.now();
            let mut body = self.payload(&after, &workspace).await?;
            let changed =
                payload::changed_fields(&self.payload(&before, &workspace).await?, &body)?;
            let events = if changed.is_empty() {
                Vec::new()
            } else {
                body.changed_fields = Some(changed);
                vec![self.event(EventType::ProjectUpdated, &after, &body, after.updated_at)?]
            };
            if self
                .catalog
                .update_project(&before, &after, &events)
                .await?
                == WriteOutcome::Applied
            {
                return Ok(after);
            }
        }
        Err(crate::writes::kept_changing("project"))
    }

    /// Deletes the caller's project `id` (and its tasks) and records `PROJECT_DELETED` with the
    /// project as it was; 409 while a time entry is booked on it.
    pub async fn delete_project(&self, caller: &Principal, id: ProjectId) -> DomainResult<()> {
        crate::accounts::services::workspace::require_catalog(self.workspaces.as_ref(), caller)
            .await?;
        let workspace = self.workspace(caller.workspace_id).await?;
        for _ in 0..crate::writes::WRITE_ATTEMPTS {
            let project = self.project(caller, id).await?;
            let body = self.payload(&project, &workspace).await?;
            let event = self.event(EventType::ProjectDeleted, &project, &body, self.clock.now())?;
            if self.catalog.delete_project(&project, &[event]).await? == WriteOutcome::Applied {
                return Ok(());
            }
        }
        Err(crate::writes::kept_changing("project"))
    }

    /// A page of the workspace's projects that pass `filter`.
    pub async fn projects(
        &self,
        caller: &Principal,
        filter: &ListFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Project>> {
        self.catalog
            .projects(caller.workspace_id, filter, page)
            .await
    }

    /// The projects whose name contains `name` ignoring case, as `PROJECT_CREATED` payloads: an
    /// exact match (ignoring case) first, then the others, each newest first; at most `limit`
    /// (1 to 100, 100 when absent). The rules of the published client search: `name` of 1 to 255
    /// characters, and a `workspace` other than the caller's is 403.
    pub async fn find_projects(
        &self,
        caller: &Principal,
        workspace: Option<WorkspaceId>,
        name: &str,
        limit: Option<u32>,
    ) -> DomainResult<Vec<ProjectPayload>> {
        let workspace = workspace.unwrap_or(caller.workspace_id);
        let Some(limit) =
            crate::tracking::services::clients::search_limit(caller, workspace, name, limit)?
        else {
            return Ok(Vec::new());
        };
        let found = self
            .catalog
            .find_projects(caller.workspace_id, &name.to_lowercase(), limit)
            .await?;
        let workspace = self.workspace(caller.workspace_id).await?;
        let mut clients: HashMap<ClientId, Option<Client>> = HashMap::new();
        let mut payloads = Vec::with_capacity(found.len());
        for project in &found {
            let client = match project.client_id {
                Some(id) => match clients.get(&id) {
                    Some(known) => known.clone(),
                    None => {
                        let read = self.clients.get(caller.workspace_id, id).await?;
                        clients.insert(id, read.clone());
                        read
                    }
                },
                None => None,
            };
            payloads.push(payload::project(project, client.as_ref(), &workspace));
        }
        Ok(payloads)
    }

    /// Creates a task of one of the workspace's projects; `NotFound("project")` otherwise.
    pub async fn create_task(
        &self,
        caller: &Principal,
        project: ProjectId,
        name: Name,
    ) -> DomainResult<Task> {
        crate::accounts::services::workspace::require_catalog(self.workspaces.as_ref(), caller)
            .await?;
        let project = self
            .catalog
            .project(caller.workspace_id, project)
            .await?
            .ok_or(DomainError::NotFound("project"))?;
        let now = self.clock.now();
        let task = Task {
            id: TaskId(self.ids.new_uuid()),
            workspace_id: caller.workspace_id,
            project_id: project.id,
            name: name.into_string(),
            created_at: now,
            updated_at: now,
        };
        self.catalog.create_task(&task).await?;
        Ok(task)
    }

    /// A page of a project's tasks; `NotFound("project")` for another workspace's project.
    pub async fn tasks(
        &self,
        caller: &Principal,
        project: ProjectId,
        filter: &ListFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Task>> {
        self.catalog
            .project(caller.workspace_id, project)
            .await?
            .ok_or(DomainError::NotFound("project"))?;
        self.catalog
            .tasks(caller.workspace_id, project, filter, page)
            .await
    }

    /// Creates a tag; a name the workspace has (case-insensitively) is `AlreadyExists`.
    pub async fn create_tag(&self, caller: &Principal, name: Name) -> DomainResult<Tag> {
        crate::accounts::services::workspace::require_catalog(self.workspaces.as_ref(), caller)
            .await?;
        let tag = Tag {
            id: TagId(self.ids.new_uuid()),
            workspace_id: caller.workspace_id,
            name: name.into_string(),
            created_at: self.clock.now(),
        };
        self.catalog.create_tag(&tag).await?;
        Ok(tag)
    }

    /// A page of the workspace's tags that pass `filter`.
    pub async fn tags(
        &self,
        caller: &Principal,
        filter: &ListFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Tag>> {
        self.catalog.tags(caller.workspace_id, filter, page).await
    }
}
