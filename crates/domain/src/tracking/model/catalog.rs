//! Projects, tasks and tags: what time entries are booked against.

use time::OffsetDateTime;

use crate::ids::{ClientId, ProjectId, TagId, TaskId, WorkspaceId};

/// A project of a workspace, optionally for a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// Identifier.
    pub id: ProjectId,
    /// The owning workspace.
    pub workspace_id: WorkspaceId,
    /// The client the project is for, if any.
    pub client_id: Option<ClientId>,
    /// Name.
    pub name: String,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last modification time.
    pub updated_at: OffsetDateTime,
}

/// A task of a project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// Identifier.
    pub id: TaskId,
    /// The owning workspace.
    pub workspace_id: WorkspaceId,
    /// The project the task belongs to.
    pub project_id: ProjectId,
    /// Name.
    pub name: String,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last modification time.
    pub updated_at: OffsetDateTime,
}

/// A tag of a workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    /// Identifier.
    pub id: TagId,
    /// The owning workspace.
    pub workspace_id: WorkspaceId,
    /// Name, unique in the workspace case-insensitively.
    pub name: String,
    /// Creation time.
    pub created_at: OffsetDateTime,
}
