//! Admission of client searches: a [`ClientRepository`] wrapped so that at most so many of its
//! searches run on the database at once. Concurrency policy, kept out of the repository that
//! holds the SQL.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use timetrack_domain::ids::{ClientId, WorkspaceId};
use timetrack_domain::model::{Client, Event, ListFilter, Page, PageRequest};
use timetrack_domain::ports::{ClientRepository, WriteOutcome};
use timetrack_domain::{DomainError, DomainResult};
use tokio::sync::Semaphore;

/// How many client searches may run on the database at once, shared by every
/// [`SlottedSearches`] that holds a copy; further searches wait in arrival order, before taking a
/// pooled connection.
///
/// A search is CPU work on the database (it reads index entries until it has its matches), and
/// one beyond the database's cores only shares them: it finishes no sooner, and the searches
/// then take turns at the scheduler's whim. Admitted in order, the same searches finish at the
/// same rate and the waits are first come, first served (ADR 0011 in docs/adr/). The API gives
/// each worker thread its own, as a slot freed on one thread for a search waiting on another
/// costs two cross-thread wake-ups.
#[derive(Debug, Clone)]
pub struct SearchSlots(Arc<Semaphore>);

impl SearchSlots {
    /// Room for `slots` searches at once (at least one).
    pub fn new(slots: usize) -> Self {
        Self(Arc::new(Semaphore::new(slots.max(1))))
    }
}

/// A [`ClientRepository`] whose searches are admitted through [`SearchSlots`]; every other
/// method passes straight through.
#[derive(Clone)]
pub struct SlottedSearches {
    inner: Arc<dyn ClientRepository>,
    slots: SearchSlots,
    wait: Duration,
}

impl std::fmt::Debug for SlottedSearches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlottedSearches")
            .field("slots", &self.slots)
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

impl SlottedSearches {
    /// `inner`'s searches through `slots`, each waiting for one at most `wait` (the pool's own
    /// wait for a connection, so a stalled database gives 503 rather than a queue that never
    /// moves).
    pub fn new(inner: Arc<dyn ClientRepository>, slots: SearchSlots, wait: Duration) -> Self {
        Self { inner, slots, wait }
    }
}

#[async_trait]
impl ClientRepository for SlottedSearches {
    async fn create(&self, client: &Client, events: &[Event]) -> DomainResult<()> {
        self.inner.create(client, events).await
    }

    async fn get(&self, workspace: WorkspaceId, id: ClientId) -> DomainResult<Option<Client>> {
        self.inner.get(workspace, id).await
    }

    async fn list(
        &self,
        workspace: WorkspaceId,
        filter: &ListFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Client>> {
        self.inner.list(workspace, filter, page).await
    }

    async fn search(
        &self,
        workspace: WorkspaceId,
        needle: &str,
        limit: u32,
    ) -> DomainResult<Vec<Client>> {
        // Held until the rows are read. The semaphore is never closed, so acquiring fails only
        // by timing out.
        let _slot = match tokio::time::timeout(self.wait, self.slots.0.acquire()).await {
            Ok(slot) => slot.ok(),
            Err(_) => {
                return Err(DomainError::Unavailable(
                    "no database connection: every search slot stayed busy".into(),
                ));
            }
        };
        self.inner.search(workspace, needle, limit).await
    }

    async fn newest(&self, workspace: WorkspaceId) -> DomainResult<Option<Client>> {
        self.inner.newest(workspace).await
    }

    async fn update(
        &self,
        before: &Client,
        after: &Client,
        events: &[Event],
    ) -> DomainResult<WriteOutcome> {
        self.inner.update(before, after, events).await
    }

    async fn delete(&self, client: &Client, events: &[Event]) -> DomainResult<WriteOutcome> {
        self.inner.delete(client, events).await
    }
}
