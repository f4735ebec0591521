//! Time entries and timers.

use super::*;

#[async_trait]
impl TimeEntryRepository for InMemoryStore {
    async fn running(&self, user: UserId) -> DomainResult<Option<TimeEntry>> {
        Ok(self
            .tables()
            .entries
            .iter()
            .find(|e| e.user_id == user && e.end.is_none())
            .cloned())
    }

    async fn start(
        &self,
        stop: Option<&TimerStop>,
        entry: &TimeEntry,
        events: &[Event],
    ) -> DomainResult<WriteOutcome> {
        let mut t = self.tables();
        // As the database's transaction: the stop (of whichever running entry it names), then the
        // insert, which loses to any other running timer of the user; all of it or nothing.
        if stop.is_some_and(|stop| {
            !t.entries
                .iter()
                .any(|e| e.id == stop.entry && e.end.is_none())
        }) {
            return Ok(WriteOutcome::Raced);
        }
        let other_running = entry.end.is_none()
            && t.entries.iter().any(|e| {
                e.user_id == entry.user_id
                    && e.end.is_none()
                    && stop.is_none_or(|stop| e.id != stop.entry)
            });
        if other_running {
            return Ok(WriteOutcome::Raced);
        }
        t.check_references(entry)?;
        if let Some(stop) = stop {
            t.apply_stop(stop);
        }
        t.entries.push(as_stored(entry));
        t.price_written(entry.workspace_id, entry.id);
        t.record(events);
        Ok(WriteOutcome::Applied)
    }

    async fn stop(&self, stop: &TimerStop) -> DomainResult<WriteOutcome> {
        Ok(if self.tables().apply_stop(stop) {
            WriteOutcome::Applied
        } else {
            WriteOutcome::Raced
        })
    }

    async fn create(&self, entry: &TimeEntry, events: &[Event]) -> DomainResult<()> {
        let mut t = self.tables();
        t.check_references(entry)?;
        t.entries.push(as_stored(entry));
        t.price_written(entry.workspace_id, entry.id);
        t.record(events);
        Ok(())
    }

    async fn get(
        &self,
        workspace: WorkspaceId,
        id: TimeEntryId,
    ) -> DomainResult<Option<TimeEntry>> {
        Ok(self
            .tables()
            .entries
            .iter()
            .find(|e| e.workspace_id == workspace && e.id == id)
            .cloned())
    }

    async fn list(
        &self,
        workspace: WorkspaceId,
        filter: EntryFilter,
        page: PageRequest,
    ) -> DomainResult<Page<TimeEntry>> {
        let items = self
            .tables()
            .entries
            .iter()
            .filter(|e| e.workspace_id == workspace)
            .filter(|e| filter.from.is_none_or(|from| e.start >= from))
            .filter(|e| filter.to.is_none_or(|to| e.start < to))
            .filter(|e| filter.user.is_none_or(|u| e.user_id == u))
            .cloned()
            .collect();
        Ok(page_of(items, page, |e| Cursor {
            created_at: e.start,
            id: e.id.0,
        }))
    }

    async fn update(
        &self,
        before: &TimeEntry,
        after: &TimeEntry,
        events: &[Event],
    ) -> DomainResult<WriteOutcome> {
        let mut t = self.tables();
        let Some(position) = t.entries.iter().position(|e| {
            e.id == before.id
                && e.workspace_id == before.workspace_id
                && e.updated_at == before.updated_at
        }) else {
            return Ok(WriteOutcome::Raced);
        };
        t.check_references(after)?;
        t.entries[position] = as_stored(after);
        t.price_written(after.workspace_id, after.id);
        t.record(events);
        Ok(WriteOutcome::Applied)
    }

    async fn delete(&self, entry: &TimeEntry, events: &[Event]) -> DomainResult<WriteOutcome> {
        let mut t = self.tables();
        let before = t.entries.len();
        t.entries.retain(|e| {
            !(e.workspace_id == entry.workspace_id
                && e.id == entry.id
                && e.updated_at == entry.updated_at)
        });
        if t.entries.len() == before {
            return Ok(WriteOutcome::Raced);
        }
        t.record(events);
        Ok(WriteOutcome::Applied)
    }

    async fn latest_manual(
        &self,
        workspace: WorkspaceId,
        user: UserId,
    ) -> DomainResult<Option<TimeEntry>> {
        Ok(self
            .tables()
            .entries
            .iter()
            .filter(|e| {
                e.workspace_id == workspace && e.user_id == user && e.source == EntrySource::Manual
            })
            .max_by_key(|e| (e.created_at, e.id))
            .cloned())
    }

    async fn latest_stopped(&self, workspace: WorkspaceId) -> DomainResult<Option<TimeEntry>> {
        Ok(self
            .tables()
            .entries
            .iter()
            .filter(|e| {
                e.workspace_id == workspace && e.source == EntrySource::Timer && e.end.is_some()
            })
            .max_by_key(|e| (e.end, e.id))
            .cloned())
    }

    async fn latest_started(&self, workspace: WorkspaceId) -> DomainResult<Option<TimeEntry>> {
        Ok(self
            .tables()
            .entries
            .iter()
            .filter(|e| e.workspace_id == workspace && e.source == EntrySource::Timer)
            .max_by_key(|e| (e.start, e.id))
            .cloned())
    }
}
