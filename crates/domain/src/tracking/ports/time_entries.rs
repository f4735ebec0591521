//! Storage of time entries and timers.

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::error::DomainResult;
use crate::ids::{TimeEntryId, UserId, WorkspaceId};
use crate::page::{Page, PageRequest};
use crate::tracking::model::TimeEntry;
use crate::webhooks::model::Event;
use crate::writes::WriteOutcome;

/// A timer to stop as part of another write: the entry, its end, and its `TIMER_STOPPED` event.
#[derive(Debug, Clone)]
pub struct TimerStop {
    /// The running entry.
    pub entry: TimeEntryId,
    /// Its end (whole seconds).
    pub end: OffsetDateTime,
    /// The event announcing the stop.
    pub event: Event,
}

/// Which entries a list returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EntryFilter {
    /// Entries starting at or after this time.
    pub from: Option<OffsetDateTime>,
    /// Entries starting before this time.
    pub to: Option<OffsetDateTime>,
    /// Entries of this member only.
    pub user: Option<UserId>,
}

/// Storage of time entries. Writes that cause events store them in the same transaction.
#[async_trait]
pub trait TimeEntryRepository: Send + Sync {
    /// The user's running timer, in any workspace, or `None`.
    async fn running(&self, user: UserId) -> DomainResult<Option<TimeEntry>>;

    /// In one transaction: stops `stop` if given (only if it is still running) and inserts the new
    /// running `entry`, with `events`. `Raced` (and nothing written) when `stop`'s timer is no
    /// longer running or another timer of the user started meanwhile.
    async fn start(
        &self,
        stop: Option<&TimerStop>,
        entry: &TimeEntry,
        events: &[Event],
    ) -> DomainResult<WriteOutcome>;

    /// Stops `stop` (only if still running) with its event; `Raced` if it was not running.
    async fn stop(&self, stop: &TimerStop) -> DomainResult<WriteOutcome>;

    /// Inserts a finished entry (manual) with `events`.
    async fn create(&self, entry: &TimeEntry, events: &[Event]) -> DomainResult<()>;

    /// The workspace's entry, or `None`.
    async fn get(&self, workspace: WorkspaceId, id: TimeEntryId)
    -> DomainResult<Option<TimeEntry>>;

    /// A page of the workspace's entries matching `filter`, latest start first (the cursor's time
    /// is the start).
    async fn list(
        &self,
        workspace: WorkspaceId,
        filter: EntryFilter,
        page: PageRequest,
    ) -> DomainResult<Page<TimeEntry>>;

    /// Replaces the stored entry `before` with `after` (same id and workspace), tags included,
    /// and stores `events`, atomically, if the stored entry is still `before` (same
    /// `updated_at`); otherwise writes nothing and returns `Raced`.
    async fn update(
        &self,
        before: &TimeEntry,
        after: &TimeEntry,
        events: &[Event],
    ) -> DomainResult<WriteOutcome>;

    /// Deletes `entry` and stores `events`, atomically, if the stored entry is still `entry`
    /// (same `updated_at`); otherwise deletes nothing and returns `Raced`.
    async fn delete(&self, entry: &TimeEntry, events: &[Event]) -> DomainResult<WriteOutcome>;

    /// The user's most recently created manual entry in the workspace.
    async fn latest_manual(
        &self,
        workspace: WorkspaceId,
        user: UserId,
    ) -> DomainResult<Option<TimeEntry>>;

    /// The workspace's most recently stopped timer entry (by end time).
    async fn latest_stopped(&self, workspace: WorkspaceId) -> DomainResult<Option<TimeEntry>>;

    /// The workspace's most recently started timer entry (by start time), running or not.
    async fn latest_started(&self, workspace: WorkspaceId) -> DomainResult<Option<TimeEntry>>;
}
