//! Projects, tasks and tags in PostgreSQL.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use time::OffsetDateTime;
use timetrack_domain::ids::{ClientId, ProjectId, TagId, TaskId, WorkspaceId};
use timetrack_domain::model::{Cursor, Event, ListFilter, Page, PageRequest, Project, Tag, Task};
use timetrack_domain::ports::{CatalogRepository, WriteOutcome};
use timetrack_domain::{DomainError, DomainResult};
use uuid::Uuid;

use super::announce::DeliveryAnnouncer;
use super::errors::violated_constraint;
use super::errors::{map_db_error, map_pool_error};
use super::outbox::{record_events, record_if_found};
use super::paging::{keyset_before, name_contains};
use super::pool::{PgPool, opaque_debug};
use super::rates::{Reach, pricing_lock, reprice_under_lock};
use super::schema::{projects, tags, tasks};

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = projects, check_for_backend(diesel::pg::Pg))]
struct ProjectRow {
    id: Uuid,
    workspace_id: Uuid,
    client_id: Option<Uuid>,
    name: String,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

impl From<ProjectRow> for Project {
    fn from(r: ProjectRow) -> Self {
        Self {
            id: ProjectId(r.id),
            workspace_id: WorkspaceId(r.workspace_id),
            client_id: r.client_id.map(ClientId),
            name: r.name,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = tasks, check_for_backend(diesel::pg::Pg))]
struct TaskRow {
    id: Uuid,
    workspace_id: Uuid,
    project_id: Uuid,
    name: String,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

impl From<TaskRow> for Task {
    fn from(r: TaskRow) -> Self {
        Self {
            id: TaskId(r.id),
            workspace_id: WorkspaceId(r.workspace_id),
            project_id: ProjectId(r.project_id),
            name: r.name,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = tags, check_for_backend(diesel::pg::Pg))]
struct TagRow {
    id: Uuid,
    workspace_id: Uuid,
    name: String,
    name_lower: String,
    created_at: OffsetDateTime,
}

impl From<TagRow> for Tag {
    fn from(r: TagRow) -> Self {
        Self {
            id: TagId(r.id),
            workspace_id: WorkspaceId(r.workspace_id),
            name: r.name,
            created_at: r.created_at,
        }
    }
}

fn page<R, T: From<R>>(rows: Vec<R>, limit: u32, position: impl Fn(&T) -> Cursor) -> Page<T> {
    Page::from_overfetch(rows.into_iter().map(T::from).collect(), limit, position)
}

impl From<&Project> for ProjectRow {
    fn from(project: &Project) -> Self {
        Self {
            id: project.id.0,
            workspace_id: project.workspace_id.0,
            client_id: project.client_id.map(|c| c.0),
            name: project.name.clone(),
            created_at: project.created_at,
            updated_at: project.updated_at,
        }
    }
}

/// A project write's error: a client of another workspace is the caller's mistake, and so is
/// deleting a project time entries are booked on.
fn project_error(err: diesel::result::Error, context: &'static str) -> DomainError {
    match violated_constraint(&err) {
        Some("projects_client_fkey") => {
            DomainError::validation("client_id does not name a client of this workspace")
        }
        Some("time_entries_project_fkey" | "time_entries_task_fkey") => {
            DomainError::Conflict("Project is used by time entries".into())
        }
        _ => map_db_error(err, context),
    }
}

/// [`CatalogRepository`] on PostgreSQL.
#[derive(Clone)]
pub struct PgCatalogRepository {
    pool: PgPool,
    announcer: DeliveryAnnouncer,
}

opaque_debug!(PgCatalogRepository);

impl PgCatalogRepository {
    /// The repository on `pool`; `announcer` hears of the deliveries its writes queue.
    pub fn new(pool: PgPool, announcer: DeliveryAnnouncer) -> Self {
        Self { pool, announcer }
    }
}

#[async_trait]
impl CatalogRepository for PgCatalogRepository {
    async fn create_project(&self, project: &Project, events: &[Event]) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let queued = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                diesel::insert_into(projects::table)
                    .values(&ProjectRow::from(project))
                    .execute(conn)
                    .await?;
                record_events(conn, events).await
            })
            .await
            .map_err(|e| project_error(e, "creating a project"))?;
        self.announcer.announce(queued);
        Ok(())
    }

    async fn update_project(
        &self,
        before: &Project,
        after: &Project,
        events: &[Event],
    ) -> DomainResult<WriteOutcome> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let row = ProjectRow::from(after);
        let queued = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                // Another client moves the prices of the project's entries (their currency is
                // the client's): priced again under the pricing lock, taken before any row.
                let client_changed = before.client_id != after.client_id;
                if client_changed {
                    pricing_lock(conn, before.workspace_id, true).await?;
                }
                // The row first: its lock orders this change's events after any earlier one's.
                let n = diesel::update(
                    projects::table
                        .filter(projects::workspace_id.eq(before.workspace_id.0))
                        .filter(projects::id.eq(before.id.0))
                        .filter(projects::updated_at.eq(before.updated_at)),
                )
                .set((
                    projects::name.eq(&row.name),
                    projects::client_id.eq(row.client_id),
                    projects::updated_at.eq(row.updated_at),
                ))
                .execute(conn)
                .await?;
                if client_changed && n > 0 {
                    let reach = Reach {
                        project: Some(before.id.0),
                        ..Reach::default()
                    };
                    reprice_under_lock(conn, before.workspace_id, &reach).await?;
                }
                record_if_found(conn, n, events).await
            })
            .await
            .map_err(|e| project_error(e, "updating a project"))?;
        Ok(self.announcer.outcome(queued))
    }

    async fn delete_project(
        &self,
        project: &Project,
        events: &[Event],
    ) -> DomainResult<WriteOutcome> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let queued = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let n = diesel::delete(
                    projects::table
                        .filter(projects::workspace_id.eq(project.workspace_id.0))
                        .filter(projects::id.eq(project.id.0))
                        .filter(projects::updated_at.eq(project.updated_at)),
                )
                .execute(conn)
                .await?;
                record_if_found(conn, n, events).await
            })
            .await
            .map_err(|e| project_error(e, "deleting a project"))?;
        Ok(self.announcer.outcome(queued))
    }

    async fn project(
        &self,
        workspace: WorkspaceId,
        id: ProjectId,
    ) -> DomainResult<Option<Project>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        projects::table
            .filter(projects::workspace_id.eq(workspace.0))
            .filter(projects::id.eq(id.0))
            .select(ProjectRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map(|r| r.map(Project::from))
            .map_err(|e| map_db_error(e, "reading a project"))
    }

    async fn projects(
        &self,
        workspace: WorkspaceId,
        filter: &ListFilter,
        page_req: PageRequest,
    ) -> DomainResult<Page<Project>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let mut query = projects::table
            .filter(projects::workspace_id.eq(workspace.0))
            .order((projects::created_at.desc(), projects::id.desc()))
            .limit(i64::from(page_req.limit) + 1)
            .select(ProjectRow::as_select())
            .into_boxed();
        if let Some(after) = page_req.after {
            query = query.filter(keyset_before("created_at", after));
        }
        if let Some(q) = &filter.q {
            query = query.filter(name_contains("projects.name", q));
        }
        if let Some(since) = filter.updated_since {
            query = query.filter(projects::updated_at.ge(since));
        }
        let rows = query
            .load(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "listing projects"))?;
        Ok(page(rows, page_req.limit, |p: &Project| Cursor {
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
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        // A workspace's projects are few (a drop-down's worth); the walk reads them newest first
        // and keeps the matches, the exact names ahead.
        let rows: Vec<ProjectRow> = projects::table
            .filter(projects::workspace_id.eq(workspace.0))
            .filter(name_contains("projects.name", needle))
            .order((
                diesel::dsl::sql::<diesel::sql_types::Bool>(
                    "lower(projects.name COLLATE \"und-x-icu\") = ",
                )
                .bind::<diesel::sql_types::Text, _>(needle.to_owned())
                .desc(),
                projects::created_at.desc(),
                projects::id.desc(),
            ))
            .limit(i64::from(limit))
            .select(ProjectRow::as_select())
            .load(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "finding projects"))?;
        Ok(rows.into_iter().map(Project::from).collect())
    }

    async fn create_task(&self, task: &Task) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        diesel::insert_into(tasks::table)
            .values(&TaskRow {
                id: task.id.0,
                workspace_id: task.workspace_id.0,
                project_id: task.project_id.0,
                name: task.name.clone(),
                created_at: task.created_at,
                updated_at: task.updated_at,
            })
            .execute(&mut conn)
            .await
            .map_err(|e| match violated_constraint(&e) {
                Some("tasks_project_fkey") => DomainError::NotFound("project"),
                _ => map_db_error(e, "creating a task"),
            })?;
        Ok(())
    }

    async fn task(&self, workspace: WorkspaceId, id: TaskId) -> DomainResult<Option<Task>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        tasks::table
            .filter(tasks::workspace_id.eq(workspace.0))
            .filter(tasks::id.eq(id.0))
            .select(TaskRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map(|r| r.map(Task::from))
            .map_err(|e| map_db_error(e, "reading a task"))
    }

    async fn tasks(
        &self,
        workspace: WorkspaceId,
        project: ProjectId,
        filter: &ListFilter,
        page_req: PageRequest,
    ) -> DomainResult<Page<Task>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let mut query = tasks::table
            .filter(tasks::workspace_id.eq(workspace.0))
            .filter(tasks::project_id.eq(project.0))
            .order((tasks::created_at.desc(), tasks::id.desc()))
            .limit(i64::from(page_req.limit) + 1)
            .select(TaskRow::as_select())
            .into_boxed();
        if let Some(after) = page_req.after {
            query = query.filter(keyset_before("created_at", after));
        }
        if let Some(q) = &filter.q {
            query = query.filter(name_contains("tasks.name", q));
        }
        if let Some(since) = filter.updated_since {
            query = query.filter(tasks::updated_at.ge(since));
        }
        let rows = query
            .load(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "listing tasks"))?;
        Ok(page(rows, page_req.limit, |t: &Task| Cursor {
            created_at: t.created_at,
            id: t.id.0,
        }))
    }

    async fn create_tag(&self, tag: &Tag) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let name_lower = tag.name.to_lowercase();
        let inserted = diesel::insert_into(tags::table)
            .values(&TagRow {
                id: tag.id.0,
                workspace_id: tag.workspace_id.0,
                name: tag.name.clone(),
                name_lower: name_lower.clone(),
                created_at: tag.created_at,
            })
            .execute(&mut conn)
            .await;
        match inserted {
            Ok(_) => Ok(()),
            Err(e) if violated_constraint(&e) == Some("tags_workspace_name_key") => {
                let id: Uuid = tags::table
                    .filter(tags::workspace_id.eq(tag.workspace_id.0))
                    .filter(tags::name_lower.eq(name_lower))
                    .select(tags::id)
                    .first(&mut conn)
                    .await
                    .map_err(|e| map_db_error(e, "finding a tag"))?;
                Err(DomainError::AlreadyExists {
                    what: "tag",
                    id: id.to_string(),
                })
            }
            Err(e) => Err(map_db_error(e, "creating a tag")),
        }
    }

    async fn tags(
        &self,
        workspace: WorkspaceId,
        filter: &ListFilter,
        page_req: PageRequest,
    ) -> DomainResult<Page<Tag>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let mut query = tags::table
            .filter(tags::workspace_id.eq(workspace.0))
            .order((tags::created_at.desc(), tags::id.desc()))
            .limit(i64::from(page_req.limit) + 1)
            .select(TagRow::as_select())
            .into_boxed();
        if let Some(after) = page_req.after {
            query = query.filter(keyset_before("created_at", after));
        }
        // The stored key is lowercased as `q` is (Unicode, in Rust). A tag never changes, so it
        // was last changed when it was created.
        if let Some(q) = &filter.q {
            query = query.filter(super::clients::strpos(tags::name_lower, q).gt(0));
        }
        if let Some(since) = filter.updated_since {
            query = query.filter(tags::created_at.ge(since));
        }
        let rows = query
            .load(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "listing tags"))?;
        Ok(page(rows, page_req.limit, |t: &Tag| Cursor {
            created_at: t.created_at,
            id: t.id.0,
        }))
    }

    async fn tags_by_id(&self, workspace: WorkspaceId, ids: &[TagId]) -> DomainResult<Vec<Tag>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let raw: Vec<Uuid> = ids.iter().map(|t| t.0).collect();
        let rows: Vec<TagRow> = tags::table
            .filter(tags::workspace_id.eq(workspace.0))
            .filter(tags::id.eq_any(&raw))
            .select(TagRow::as_select())
            .load(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "reading tags"))?;
        let mut found: Vec<Tag> = rows.into_iter().map(Tag::from).collect();
        found.sort_by_key(|t| raw.iter().position(|id| *id == t.id.0));
        Ok(found)
    }
}
