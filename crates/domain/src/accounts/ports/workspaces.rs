//! Storage of workspaces.

use async_trait::async_trait;

use crate::accounts::model::{Workspace, WorkspaceSettings};
use crate::error::DomainResult;
use crate::ids::WorkspaceId;
use crate::writes::WriteOutcome;

/// Storage of workspaces.
#[async_trait]
pub trait WorkspaceRepository: Send + Sync {
    /// Stores a new workspace. MUST return `Conflict` if its id exists.
    async fn create(&self, workspace: &Workspace) -> DomainResult<()>;

    /// The workspace with this id, or `None`.
    async fn get(&self, id: WorkspaceId) -> DomainResult<Option<Workspace>>;

    /// The settings of the workspace with this id, or `None`.
    async fn settings(&self, id: WorkspaceId) -> DomainResult<Option<WorkspaceSettings>>;

    /// The workspace with this id and its settings, or `None`: what `get` and `settings` answer,
    /// which a store SHOULD read at once (one look-up on a request's path instead of two).
    async fn with_settings(
        &self,
        id: WorkspaceId,
    ) -> DomainResult<Option<(Workspace, WorkspaceSettings)>> {
        Ok(self.get(id).await?.zip(self.settings(id).await?))
    }

    /// Stores `after` over the workspace if it still is `before` (name, time zone, currency and
    /// every setting); `Raced` when it changed in between, and nothing is written then.
    async fn update(
        &self,
        before: &(Workspace, WorkspaceSettings),
        after: &(Workspace, WorkspaceSettings),
    ) -> DomainResult<WriteOutcome>;
}
