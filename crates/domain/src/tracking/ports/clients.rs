//! Storage of clients, and the client search.

use async_trait::async_trait;

use crate::error::DomainResult;
use crate::ids::{ClientId, WorkspaceId};
use crate::page::{ListFilter, Page, PageRequest};
use crate::tracking::model::Client;
use crate::webhooks::model::Event;
use crate::writes::WriteOutcome;

/// Storage of clients. Writes that cause events take them and store them in the same transaction
/// (the transactional outbox), together with one pending delivery per active subscription of the
/// workspace that lists the event's type.
#[async_trait]
pub trait ClientRepository: Send + Sync {
    /// Stores a new client and `events`, atomically.
    ///
    /// MUST return `AlreadyExists { what: "client", id }` with the existing client's id when a
    /// client of the workspace has the same name case-insensitively; nothing is stored then.
    async fn create(&self, client: &Client, events: &[Event]) -> DomainResult<()>;

    /// The workspace's client with this id, or `None` (also for another workspace's client).
    async fn get(&self, workspace: WorkspaceId, id: ClientId) -> DomainResult<Option<Client>>;

    /// A page of the workspace's clients that pass `filter` (name, `updated_at`), newest first
    /// (`created_at`, then `id`, descending).
    async fn list(
        &self,
        workspace: WorkspaceId,
        filter: &ListFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Client>>;

    /// Up to `limit` of the workspace's clients whose lowercased name contains `needle` (already
    /// lowercase; every character literal, `%` and `_` included), newest first.
    async fn search(
        &self,
        workspace: WorkspaceId,
        needle: &str,
        limit: u32,
    ) -> DomainResult<Vec<Client>>;

    /// The workspace's newest client, or `None`.
    async fn newest(&self, workspace: WorkspaceId) -> DomainResult<Option<Client>>;

    /// Replaces the stored client `before` with `after` (same id and workspace) and stores
    /// `events`, atomically, if the stored client is still `before` (same `updated_at`);
    /// otherwise writes nothing and returns `Raced`.
    ///
    /// MUST return `AlreadyExists` as `create` does.
    async fn update(
        &self,
        before: &Client,
        after: &Client,
        events: &[Event],
    ) -> DomainResult<WriteOutcome>;

    /// Deletes `client` and stores `events`, atomically, if the stored client is still `client`
    /// (same `updated_at`); otherwise deletes nothing and returns `Raced`.
    ///
    /// MUST return `Conflict("Client is used by projects")` while a project refers to it.
    async fn delete(&self, client: &Client, events: &[Event]) -> DomainResult<WriteOutcome>;
}
