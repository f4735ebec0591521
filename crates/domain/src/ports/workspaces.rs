//! Storage of workspaces.

use async_trait::async_trait;

use crate::error::DomainResult;
use crate::ids::WorkspaceId;
use crate::model::Workspace;

/// Storage of workspaces.
#[async_trait]
pub trait WorkspaceRepository: Send + Sync {
    /// Stores a new workspace. MUST return `Conflict` if its id exists.
    async fn create(&self, workspace: &Workspace) -> DomainResult<()>;

    /// The workspace with this id, or `None`.
    async fn get(&self, id: WorkspaceId) -> DomainResult<Option<Workspace>>;
}
