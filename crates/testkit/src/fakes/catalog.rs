//! Projects, tasks and tags.

use super::*;

#[async_trait]
impl CatalogRepository for InMemoryStore {
    async fn create_project(&self, project: &Project, events: &[Event]) -> DomainResult<()> {
        let mut t = self.tables();
        t.check_client(project)?;
        t.projects.push(project.clone());
        t.record(events);
        Ok(())
    }

    async fn update_project(
        &self,
        before: &Project,
        after: &Project,
        events: &[Event],
    ) -> DomainResult<WriteOutcome> {
        let mut t = self.tables();
        t.check_client(after)?;
        let Some(stored) = t.projects.iter_mut().find(|p| {
            p.id == before.id
                && p.workspace_id == before.workspace_id
                && p.updated_at == before.updated_at
        }) else {
            return Ok(WriteOutcome::Raced);
        };
        *stored = after.clone();
        if before.client_id != after.client_id {
            let project = after.id;
            t.reprice(after.workspace_id, |_, e| e.project_id == Some(project));
        }
        t.record(events);
        Ok(WriteOutcome::Applied)
    }

    async fn delete_project(
        &self,
        project: &Project,
        events: &[Event],
    ) -> DomainResult<WriteOutcome> {
        let mut t = self.tables();
        if t.entries
            .iter()
            .any(|e| e.workspace_id == project.workspace_id && e.project_id == Some(project.id))
        {
            return Err(DomainError::Conflict(
                "Project is used by time entries".into(),
            ));
        }
        let before = t.projects.len();
        t.projects.retain(|p| {
            !(p.workspace_id == project.workspace_id
                && p.id == project.id
                && p.updated_at == project.updated_at)
        });
        if t.projects.len() == before {
            return Ok(WriteOutcome::Raced);
        }
        t.tasks.retain(|task| task.project_id != project.id);
        t.record(events);
        Ok(WriteOutcome::Applied)
    }

    async fn project(
        &self,
        workspace: WorkspaceId,
        id: ProjectId,
    ) -> DomainResult<Option<Project>> {
        Ok(self
            .tables()
            .projects
            .iter()
            .find(|p| p.workspace_id == workspace && p.id == id)
            .cloned())
    }

    async fn projects(
        &self,
        workspace: WorkspaceId,
        filter: &ListFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Project>> {
        let items = self
            .tables()
            .projects
            .iter()
            .filter(|p| p.workspace_id == workspace && filter.admits(&p.name, p.updated_at))
            .cloned()
            .collect();
        Ok(page_of(items, page, |p| Cursor {
            created_at: p.created_at,
            id: p.id.0,
        }))
    }

    async fn find_projects(
        &self,
        workspace: WorkspaceId,
        needle: &str,
        limit: u32,
    ) -> DomainResult<Vec<Project>> {
        let mut found: Vec<Project> = self
            .tables()
            .projects
            .iter()
            .filter(|p| p.workspace_id == workspace && p.name.to_lowercase().contains(needle))
            .cloned()
            .collect();
        found.sort_by(|a, b| {
            let exact = |p: &Project| p.name.to_lowercase() == needle;
            exact(b)
                .cmp(&exact(a))
                .then((b.created_at, b.id.0).cmp(&(a.created_at, a.id.0)))
        });
        found.truncate(limit as usize);
        Ok(found)
    }

    async fn create_task(&self, task: &Task) -> DomainResult<()> {
        self.tables().tasks.push(task.clone());
        Ok(())
    }

    async fn task(&self, workspace: WorkspaceId, id: TaskId) -> DomainResult<Option<Task>> {
        Ok(self
            .tables()
            .tasks
            .iter()
            .find(|t| t.workspace_id == workspace && t.id == id)
            .cloned())
    }

    async fn tasks(
        &self,
        workspace: WorkspaceId,
        project: ProjectId,
        filter: &ListFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Task>> {
        let items = self
            .tables()
            .tasks
            .iter()
            .filter(|t| t.workspace_id == workspace && t.project_id == project)
            .filter(|t| filter.admits(&t.name, t.updated_at))
            .cloned()
            .collect();
        Ok(page_of(items, page, |t| Cursor {
            created_at: t.created_at,
            id: t.id.0,
        }))
    }

    async fn create_tag(&self, tag: &Tag) -> DomainResult<()> {
        let mut t = self.tables();
        let key = tag.name.to_lowercase();
        if let Some(existing) = t
            .tags
            .iter()
            .find(|x| x.workspace_id == tag.workspace_id && x.name.to_lowercase() == key)
        {
            return Err(DomainError::AlreadyExists {
                what: "tag",
                id: existing.id.to_string(),
            });
        }
        t.tags.push(tag.clone());
        Ok(())
    }

    async fn tags(
        &self,
        workspace: WorkspaceId,
        filter: &ListFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Tag>> {
        let items = self
            .tables()
            .tags
            .iter()
            .filter(|t| t.workspace_id == workspace && filter.admits(&t.name, t.created_at))
            .cloned()
            .collect();
        Ok(page_of(items, page, |t| Cursor {
            created_at: t.created_at,
            id: t.id.0,
        }))
    }

    async fn tags_by_id(&self, workspace: WorkspaceId, ids: &[TagId]) -> DomainResult<Vec<Tag>> {
        let t = self.tables();
        Ok(ids
            .iter()
            .filter_map(|id| {
                t.tags
                    .iter()
                    .find(|x| x.workspace_id == workspace && x.id == *id)
            })
            .cloned()
            .collect())
    }
}
