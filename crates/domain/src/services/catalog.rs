//! Projects, tasks and tags: created and listed inside the caller's workspace.

use std::sync::Arc;

use crate::error::{DomainError, DomainResult};
use crate::ids::{ClientId, ProjectId, TagId, TaskId};
use crate::model::{Page, PageRequest, Principal, Project, Tag, Task};
use crate::ports::{CatalogRepository, Clock, IdGenerator};
use crate::values::Name;

/// Project, task and tag operations.
#[derive(Clone)]
pub struct CatalogService {
    catalog: Arc<dyn CatalogRepository>,
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
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> Self {
        Self {
            catalog,
            clock,
            ids,
        }
    }

    /// Creates a project, optionally for a client of the same workspace.
    pub async fn create_project(
        &self,
        caller: &Principal,
        name: Name,
        client: Option<ClientId>,
    ) -> DomainResult<Project> {
        let now = self.clock.now();
        let project = Project {
            id: ProjectId(self.ids.new_uuid()),
            workspace_id: caller.workspace_id,
            client_id: client,
            name: name.into_string(),
            created_at: now,
            updated_at: now,
        };
        self.catalog.create_project(&project).await?;
        Ok(project)
    }

    /// A page of the workspace's projects.
    pub async fn projects(
        &self,
        caller: &Principal,
        page: PageRequest,
    ) -> DomainResult<Page<Project>> {
        self.catalog.projects(caller.workspace_id, page).await
    }

    /// Creates a task of one of the workspace's projects; `NotFound("project")` otherwise.
    pub async fn create_task(
        &self,
        caller: &Principal,
        project: ProjectId,
        name: Name,
    ) -> DomainResult<Task> {
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
        page: PageRequest,
    ) -> DomainResult<Page<Task>> {
        self.catalog
            .project(caller.workspace_id, project)
            .await?
            .ok_or(DomainError::NotFound("project"))?;
        self.catalog.tasks(caller.workspace_id, project, page).await
    }

    /// Creates a tag; a name the workspace has (case-insensitively) is `AlreadyExists`.
    pub async fn create_tag(&self, caller: &Principal, name: Name) -> DomainResult<Tag> {
        let tag = Tag {
            id: TagId(self.ids.new_uuid()),
            workspace_id: caller.workspace_id,
            name: name.into_string(),
            created_at: self.clock.now(),
        };
        self.catalog.create_tag(&tag).await?;
        Ok(tag)
    }

    /// A page of the workspace's tags.
    pub async fn tags(&self, caller: &Principal, page: PageRequest) -> DomainResult<Page<Tag>> {
        self.catalog.tags(caller.workspace_id, page).await
    }
}
