//! Storage of projects, tasks and tags.

use async_trait::async_trait;

use crate::error::DomainResult;
use crate::ids::{ProjectId, TagId, TaskId, WorkspaceId};
use crate::page::{ListFilter, Page, PageRequest};
use crate::tracking::model::{Project, Tag, Task};
use crate::webhooks::model::Event;
use crate::writes::WriteOutcome;

/// Storage of projects, tasks and tags.
#[async_trait]
pub trait CatalogRepository: Send + Sync {
    /// Stores a project. Its client, if any, MUST be a client of the same workspace: otherwise
    /// `Validation("client_id does not name a client of this workspace")`.
    /// `events` are stored with it, atomically.
    async fn create_project(&self, project: &Project, events: &[Event]) -> DomainResult<()>;

    /// Replaces the stored project `before` with `after` and stores `events`, atomically, if the
    /// stored project is still `before` (same `updated_at`); otherwise `Raced`. A client of
    /// another workspace is the `Validation` of `create_project`.
    async fn update_project(
        &self,
        before: &Project,
        after: &Project,
        events: &[Event],
    ) -> DomainResult<WriteOutcome>;

    /// Deletes `project` (and its tasks) and stores `events`, atomically, if the stored project
    /// is still `project`; otherwise `Raced`.
    ///
    /// MUST return `Conflict("Project is used by time entries")` while a time entry refers to it.
    async fn delete_project(
        &self,
        project: &Project,
        events: &[Event],
    ) -> DomainResult<WriteOutcome>;

    /// The workspace's project, or `None`.
    async fn project(&self, workspace: WorkspaceId, id: ProjectId)
    -> DomainResult<Option<Project>>;

    /// A page of the workspace's projects that pass `filter` (name, `updated_at`), newest first.
    async fn projects(
        &self,
        workspace: WorkspaceId,
        filter: &ListFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Project>>;

    /// Up to `limit` of the workspace's projects whose name contains `needle` (already lowercase)
    /// ignoring case: those named exactly `needle` ignoring case first, then the others, each
    /// group newest first.
    async fn find_projects(
        &self,
        workspace: WorkspaceId,
        needle: &str,
        limit: u32,
    ) -> DomainResult<Vec<Project>>;

    /// Stores a task of an existing project of the same workspace.
    async fn create_task(&self, task: &Task) -> DomainResult<()>;

    /// The workspace's task, or `None`.
    async fn task(&self, workspace: WorkspaceId, id: TaskId) -> DomainResult<Option<Task>>;

    /// A page of a project's tasks that pass `filter` (name, `updated_at`), newest first.
    async fn tasks(
        &self,
        workspace: WorkspaceId,
        project: ProjectId,
        filter: &ListFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Task>>;

    /// Stores a tag. MUST return `AlreadyExists { what: "tag", id }` when the workspace has a tag
    /// of the same name case-insensitively.
    async fn create_tag(&self, tag: &Tag) -> DomainResult<()>;

    /// A page of the workspace's tags that pass `filter` (name; a tag never changes, so its
    /// `created_at` is its `updated_at`), newest first.
    async fn tags(
        &self,
        workspace: WorkspaceId,
        filter: &ListFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Tag>>;

    /// The workspace's tags among `ids` (unknown or foreign ids are left out), in `ids` order.
    async fn tags_by_id(&self, workspace: WorkspaceId, ids: &[TagId]) -> DomainResult<Vec<Tag>>;
}
