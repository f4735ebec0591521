//! Time entries: timers that start and stop, manual entries, and their events.

use std::sync::Arc;

use time::OffsetDateTime;

use crate::accounts::model::{Principal, User, Workspace};
use crate::accounts::ports::{UserRepository, WorkspaceRepository};
use crate::billing::model::invoice::ENTRY_LOCKED;
use crate::error::{DomainError, DomainResult};
use crate::ids::{EventId, ProjectId, TagId, TaskId, TimeEntryId, UserId};
use crate::page::{Page, PageRequest};
use crate::payload::{self, EntryAction, EntryContext, TimeEntryPayload};
use crate::system::{Clock, IdGenerator};
use crate::tracking::model::time_entry::whole_seconds;
use crate::tracking::model::{EntrySource, Project, Tag, Task, TimeEntry};
use crate::tracking::ports::{CatalogRepository, EntryFilter, TimeEntryRepository, TimerStop};
use crate::values;
use crate::webhooks::model::{Event, EventSubject};
use crate::writes::WriteOutcome;

/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 3000;
/// The message when there is no timer to stop.
pub const NO_RUNNING_TIMER: &str = "No running timer";
/// Attempts of a timer start against concurrent starts and stops of the same user.
const START_ATTEMPTS: usize = 5;

/// What an entry is booked against; every field optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryDraft {
    /// What is being done.
    pub description: Option<String>,
    /// A project of the workspace.
    pub project_id: Option<ProjectId>,
    /// A task of that project (its project is implied when `project_id` is unset).
    pub task_id: Option<TaskId>,
    /// Tags of the workspace.
    pub tag_ids: Vec<TagId>,
    /// Billable; false when unset.
    pub billable: Option<bool>,
}

/// Changes to an entry: `None` keeps a field; `Some(None)` clears an optional reference.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryPatch {
    /// New description.
    pub description: Option<String>,
    /// New project, or `Some(None)` to clear it (and the task).
    pub project_id: Option<Option<ProjectId>>,
    /// New task, or `Some(None)` to clear it.
    pub task_id: Option<Option<TaskId>>,
    /// New tags (replacing the old ones).
    pub tag_ids: Option<Vec<TagId>>,
    /// New billable flag.
    pub billable: Option<bool>,
    /// New start.
    pub start: Option<OffsetDateTime>,
    /// New end (finished entries only).
    pub end: Option<OffsetDateTime>,
}

/// Whether `a` and `b` hold the same ids, in any order.
fn same_set(a: &[TagId], b: &[TagId]) -> bool {
    a.iter().all(|id| b.contains(id)) && b.iter().all(|id| a.contains(id))
}

/// The project, task and tags an entry refers to, checked to be the workspace's.
#[derive(Debug, Clone, Default)]
struct Refs {
    project: Option<Project>,
    task: Option<Task>,
    tags: Vec<Tag>,
}

/// Time-entry operations for the caller.
#[derive(Clone)]
pub struct TimeEntryService {
    entries: Arc<dyn TimeEntryRepository>,
    catalog: Arc<dyn CatalogRepository>,
    workspaces: Arc<dyn WorkspaceRepository>,
    users: Arc<dyn UserRepository>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
}

impl std::fmt::Debug for TimeEntryService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimeEntryService").finish_non_exhaustive()
    }
}

impl TimeEntryService {
    /// Builds the service on its ports.
    pub fn new(
        entries: Arc<dyn TimeEntryRepository>,
        catalog: Arc<dyn CatalogRepository>,
        workspaces: Arc<dyn WorkspaceRepository>,
        users: Arc<dyn UserRepository>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> Self {
        Self {
            entries,
            catalog,
            workspaces,
            users,
            clock,
            ids,
        }
    }

    async fn workspace(&self, id: crate::ids::WorkspaceId) -> DomainResult<Workspace> {
        self.workspaces
            .get(id)
            .await?
            .ok_or(DomainError::NotFound("workspace"))
    }

    /// The workspace `id`, read with its settings: 409 `Time entry is locked` when one of
    /// `starts` falls on a day (in the workspace's time zone) before its `lock_before`.
    async fn open_workspace(
        &self,
        id: crate::ids::WorkspaceId,
        starts: &[OffsetDateTime],
    ) -> DomainResult<Workspace> {
        let (workspace, settings) = crate::accounts::services::workspace::workspace_and_settings(
            self.workspaces.as_ref(),
            id,
        )
        .await?;
        let Some(lock) = settings.lock_before else {
            return Ok(workspace);
        };
        for start in starts {
            if crate::timefmt::local_day(*start, &workspace.timezone)? < lock {
                return Err(DomainError::refused(
                    ENTRY_LOCKED,
                    format!(
                        "The workspace locks entries that start before {} (its lock_before)",
                        crate::timefmt::iso_date(lock)
                    ),
                ));
            }
        }
        Ok(workspace)
    }

    async fn user(&self, id: UserId) -> DomainResult<User> {
        self.users
            .get(id)
            .await?
            .ok_or(DomainError::NotFound("user"))
    }

    /// Checks and loads the references of an entry of `workspace`.
    async fn refs(
        &self,
        workspace: crate::ids::WorkspaceId,
        project_id: Option<ProjectId>,
        task_id: Option<TaskId>,
        tag_ids: &[TagId],
    ) -> DomainResult<Refs> {
        let task = match task_id {
            Some(id) => Some(self.catalog.task(workspace, id).await?.ok_or_else(|| {
                DomainError::validation("task_id does not name a task of this workspace")
            })?),
            None => None,
        };
        let project_id = match (project_id, &task) {
            (Some(project), Some(task)) if task.project_id != project => {
                return Err(DomainError::validation(
                    "task_id does not belong to project_id",
                ));
            }
            (None, Some(task)) => Some(task.project_id),
            (project, _) => project,
        };
        let project = match project_id {
            Some(id) => Some(self.catalog.project(workspace, id).await?.ok_or_else(|| {
                DomainError::validation("project_id does not name a project of this workspace")
            })?),
            None => None,
        };
        let mut unique: Vec<TagId> = Vec::with_capacity(tag_ids.len());
        for id in tag_ids {
            if !unique.contains(id) {
                unique.push(*id);
            }
        }
        let tags = if unique.is_empty() {
            Vec::new()
        } else {
            self.catalog.tags_by_id(workspace, &unique).await?
        };
        if tags.len() != unique.len() {
            return Err(DomainError::validation(
                "tag_ids contains an id that is not a tag of this workspace",
            ));
        }
        Ok(Refs {
            project,
            task,
            tags,
        })
    }

    /// The references of a stored entry (which the database keeps consistent).
    async fn stored_refs(&self, entry: &TimeEntry) -> DomainResult<Refs> {
        self.refs(
            entry.workspace_id,
            entry.project_id,
            entry.task_id,
            &entry.tag_ids,
        )
        .await
        .map_err(|e| match e {
            DomainError::Validation(m) => {
                DomainError::Unexpected(anyhow::anyhow!("stored entry {}: {m}", entry.id))
            }
            other => other,
        })
    }

    fn event(
        &self,
        entry: &TimeEntry,
        action: EntryAction,
        workspace: &Workspace,
        member: &User,
        refs: &Refs,
    ) -> DomainResult<Event> {
        let body = Self::payload(entry, action, workspace, member, refs)?;
        self.event_with(entry, action, &body, entry.updated_at, refs)
    }

    fn payload(
        entry: &TimeEntry,
        action: EntryAction,
        workspace: &Workspace,
        member: &User,
        refs: &Refs,
    ) -> DomainResult<TimeEntryPayload> {
        let ctx = EntryContext {
            workspace,
            member,
            project: refs.project.as_ref(),
            task: refs.task.as_ref(),
            tags: &refs.tags,
        };
        payload::time_entry(entry, action, &ctx)
    }

    fn event_with(
        &self,
        entry: &TimeEntry,
        action: EntryAction,
        body: &TimeEntryPayload,
        at: OffsetDateTime,
        refs: &Refs,
    ) -> DomainResult<Event> {
        crate::webhooks::model::event::event_of(
            EventId(self.ids.new_uuid()),
            entry.workspace_id,
            action.event_type(),
            body,
            at,
            EventSubject {
                project_id: entry.project_id,
                client_id: refs.project.as_ref().and_then(|p| p.client_id),
                user_id: Some(entry.user_id),
                billable: Some(entry.billable),
            },
            entry.id,
        )
    }

    /// The stop of `running` at `end`, with its `TIMER_STOPPED` event (in its own workspace:
    /// `known` when that is the one the caller has read already, else read here).
    async fn stop_of(
        &self,
        running: &TimeEntry,
        member: &User,
        end: OffsetDateTime,
        known: Option<&Workspace>,
    ) -> DomainResult<TimerStop> {
        let mut stopped = running.clone();
        stopped.end = Some(end.max(running.start));
        stopped.updated_at = self.clock.now();
        let workspace = match known {
            Some(w) if w.id == running.workspace_id => w.clone(),
            _ => self.workspace(running.workspace_id).await?,
        };
        let refs = self.stored_refs(running).await?;
        let event = self.event(&stopped, EntryAction::StopTimer, &workspace, member, &refs)?;
        Ok(TimerStop {
            entry: running.id,
            end: stopped.end.unwrap_or(end),
            event,
        })
    }

    fn validated_description(description: Option<&str>) -> DomainResult<String> {
        let description = description.unwrap_or_default().trim();
        values::no_nul("description", description)?;
        if description.chars().count() > MAX_DESCRIPTION_CHARS {
            return Err(DomainError::validation(format!(
                "description must be at most {MAX_DESCRIPTION_CHARS} characters"
            )));
        }
        Ok(description.to_owned())
    }

    /// Starts a timer for the caller now. A timer of the caller that is running (in any
    /// workspace) is stopped first, in the same transaction: `TIMER_STOPPED`, then
    /// `TIMER_STARTED`.
    pub async fn start(&self, caller: &Principal, draft: EntryDraft) -> DomainResult<TimeEntry> {
        let description = Self::validated_description(draft.description.as_deref())?;
        let workspace = self
            .open_workspace(caller.workspace_id, &[self.clock.now()])
            .await?;
        let member = self.user(caller.user_id).await?;
        let refs = self
            .refs(
                workspace.id,
                draft.project_id,
                draft.task_id,
                &draft.tag_ids,
            )
            .await?;
        for _ in 0..START_ATTEMPTS {
            let now = self.clock.now();
            let start = whole_seconds(now);
            let stop = match self.entries.running(caller.user_id).await? {
                Some(running) => Some(
                    self.stop_of(&running, &member, start, Some(&workspace))
                        .await?,
                ),
                None => None,
            };
            let entry = TimeEntry {
                id: TimeEntryId(self.ids.new_uuid()),
                workspace_id: workspace.id,
                user_id: caller.user_id,
                source: EntrySource::Timer,
                description: description.clone(),
                project_id: refs.project.as_ref().map(|p| p.id),
                task_id: refs.task.as_ref().map(|t| t.id),
                tag_ids: refs.tags.iter().map(|t| t.id).collect(),
                billable: draft.billable.unwrap_or(false),
                start,
                end: None,
                created_at: now,
                updated_at: now,
            };
            let started =
                self.event(&entry, EntryAction::StartTimer, &workspace, &member, &refs)?;
            if self
                .entries
                .start(stop.as_ref(), &entry, &[started])
                .await?
                == WriteOutcome::Applied
            {
                return Ok(entry);
            }
        }
        Err(DomainError::Conflict(
            "The running timer kept changing; try again".into(),
        ))
    }

    /// Stops the caller's running timer in the caller's workspace; 409 `No running timer` when
    /// there is none.
    pub async fn stop(&self, caller: &Principal) -> DomainResult<TimeEntry> {
        let running = self
            .current(caller)
            .await?
            .ok_or_else(|| DomainError::Conflict(NO_RUNNING_TIMER.into()))?;
        let member = self.user(caller.user_id).await?;
        let stop = self
            .stop_of(&running, &member, whole_seconds(self.clock.now()), None)
            .await?;
        match self.entries.stop(&stop).await? {
            WriteOutcome::Applied => {
                let mut stopped = running;
                stopped.end = Some(stop.end);
                stopped.updated_at = stop.event.created_at;
                Ok(stopped)
            }
            WriteOutcome::Raced => Err(DomainError::Conflict(NO_RUNNING_TIMER.into())),
        }
    }

    /// The caller's running timer in the caller's workspace, or `None`.
    pub async fn current(&self, caller: &Principal) -> DomainResult<Option<TimeEntry>> {
        Ok(self
            .entries
            .running(caller.user_id)
            .await?
            .filter(|e| e.workspace_id == caller.workspace_id))
    }

    /// The caller's running timer in the `TIMER_STARTED` shape, as an array for a platform's
    /// look-up: one element, or none when no timer runs.
    pub async fn running_payloads(
        &self,
        caller: &Principal,
    ) -> DomainResult<Vec<TimeEntryPayload>> {
        match self.current(caller).await? {
            Some(entry) => Ok(vec![
                self.payload_of(&entry, EntryAction::StartTimer).await?,
            ]),
            None => Ok(Vec::new()),
        }
    }

    /// Creates a finished entry by hand (`end > start`, both truncated to whole seconds) and
    /// records `TIME_ENTRY_CREATED`.
    pub async fn create_manual(
        &self,
        caller: &Principal,
        draft: EntryDraft,
        start: OffsetDateTime,
        end: OffsetDateTime,
    ) -> DomainResult<TimeEntry> {
        let (start, end) = (whole_seconds(start), whole_seconds(end));
        if end <= start {
            return Err(DomainError::validation("end must be after start"));
        }
        let description = Self::validated_description(draft.description.as_deref())?;
        let workspace = self.open_workspace(caller.workspace_id, &[start]).await?;
        let member = self.user(caller.user_id).await?;
        let refs = self
            .refs(
                workspace.id,
                draft.project_id,
                draft.task_id,
                &draft.tag_ids,
            )
            .await?;
        let now = self.clock.now();
        let entry = TimeEntry {
            id: TimeEntryId(self.ids.new_uuid()),
            workspace_id: workspace.id,
            user_id: caller.user_id,
            source: EntrySource::Manual,
            description,
            project_id: refs.project.as_ref().map(|p| p.id),
            task_id: refs.task.as_ref().map(|t| t.id),
            tag_ids: refs.tags.iter().map(|t| t.id).collect(),
            billable: draft.billable.unwrap_or(false),
            start,
            end: Some(end),
            created_at: now,
            updated_at: now,
        };
        let event = self.event(&entry, EntryAction::ManualEntry, &workspace, &member, &refs)?;
        self.entries.create(&entry, &[event]).await?;
        Ok(entry)
    }

    /// The workspace's entry `id`; `NotFound("time entry")` otherwise.
    pub async fn get(&self, caller: &Principal, id: TimeEntryId) -> DomainResult<TimeEntry> {
        self.entries
            .get(caller.workspace_id, id)
            .await?
            .ok_or(DomainError::NotFound("time entry"))
    }

    /// A page of the workspace's entries, latest start first.
    pub async fn list(
        &self,
        caller: &Principal,
        filter: EntryFilter,
        page: PageRequest,
    ) -> DomainResult<Page<TimeEntry>> {
        if let (Some(from), Some(to)) = (filter.from, filter.to)
            && to <= from
        {
            return Err(DomainError::validation("to must be after from"));
        }
        self.entries.list(caller.workspace_id, filter, page).await
    }

    /// Applies `patch` to the workspace's entry `id` and records `TIME_ENTRY_UPDATED` with the
    /// fields of the payload that changed; a patch that changes nothing writes nothing.
    pub async fn update(
        &self,
        caller: &Principal,
        id: TimeEntryId,
        patch: &EntryPatch,
    ) -> DomainResult<TimeEntry> {
        for _ in 0..crate::writes::WRITE_ATTEMPTS {
            let before = self.get(caller, id).await?;
            if !caller.may_change_entry_of(before.user_id) {
                return Err(DomainError::Forbidden);
            }
            let (mut after, refs) = self.patched(&before, patch).await?;
            if after == before {
                return Ok(before);
            }
            after.updated_at = self.clock.now();
            let workspace = self
                .open_workspace(before.workspace_id, &[before.start, after.start])
                .await?;
            let member = self.user(before.user_id).await?;
            let old_refs = self.stored_refs(&before).await?;
            let old = Self::payload(&before, EntryAction::Update, &workspace, &member, &old_refs)?;
            let mut new = Self::payload(&after, EntryAction::Update, &workspace, &member, &refs)?;
            let changed = payload::changed_fields(&old, &new)?;
            let events = if changed.is_empty() {
                Vec::new()
            } else {
                new.changed_fields = Some(changed);
                vec![self.event_with(&after, EntryAction::Update, &new, after.updated_at, &refs)?]
            };
            if self.entries.update(&before, &after, &events).await? == WriteOutcome::Applied {
                return Ok(after);
            }
        }
        Err(crate::writes::kept_changing("time entry"))
    }

    /// `entry` with `patch` applied and checked, and its references.
    async fn patched(
        &self,
        entry: &TimeEntry,
        patch: &EntryPatch,
    ) -> DomainResult<(TimeEntry, Refs)> {
        let mut entry = entry.clone();
        if let Some(description) = &patch.description {
            entry.description = Self::validated_description(Some(description))?;
        }
        let project = match patch.project_id {
            Some(project) => project,
            None => entry.project_id,
        };
        let task = match (patch.task_id, patch.project_id) {
            (Some(task), _) => task,
            // Changing or clearing the project drops a task that belonged to the old one.
            (None, Some(_)) => None,
            (None, None) => entry.task_id,
        };
        // The same tags in another order are no change: the stored order is kept.
        let tag_ids = match &patch.tag_ids {
            Some(ids) if !same_set(ids, &entry.tag_ids) => ids.clone(),
            _ => entry.tag_ids.clone(),
        };
        let refs = self
            .refs(entry.workspace_id, project, task, &tag_ids)
            .await?;
        entry.project_id = refs.project.as_ref().map(|p| p.id);
        entry.task_id = refs.task.as_ref().map(|t| t.id);
        entry.tag_ids = refs.tags.iter().map(|t| t.id).collect();
        if let Some(billable) = patch.billable {
            entry.billable = billable;
        }
        if let Some(start) = patch.start {
            entry.start = whole_seconds(start);
        }
        if let Some(end) = patch.end {
            if entry.is_running() {
                return Err(DomainError::validation(
                    "a running timer has no end; stop it instead",
                ));
            }
            entry.end = Some(whole_seconds(end));
        }
        match (entry.source, entry.end) {
            (EntrySource::Manual, Some(end)) if end <= entry.start => {
                return Err(DomainError::validation("end must be after start"));
            }
            (EntrySource::Timer, Some(end)) if end < entry.start => {
                return Err(DomainError::validation("end must not be before start"));
            }
            (_, None) if entry.start > whole_seconds(self.clock.now()) => {
                return Err(DomainError::validation(
                    "a running timer cannot start in the future",
                ));
            }
            _ => {}
        }
        Ok((entry, refs))
    }

    /// Deletes the workspace's entry `id` and records `TIME_ENTRY_DELETED` with the entry as it
    /// was.
    pub async fn delete(&self, caller: &Principal, id: TimeEntryId) -> DomainResult<()> {
        for _ in 0..crate::writes::WRITE_ATTEMPTS {
            let entry = self.get(caller, id).await?;
            if !caller.may_change_entry_of(entry.user_id) {
                return Err(DomainError::Forbidden);
            }
            let workspace = self
                .open_workspace(entry.workspace_id, &[entry.start])
                .await?;
            let member = self.user(entry.user_id).await?;
            let refs = self.stored_refs(&entry).await?;
            let body = Self::payload(&entry, EntryAction::Delete, &workspace, &member, &refs)?;
            let event =
                self.event_with(&entry, EntryAction::Delete, &body, self.clock.now(), &refs)?;
            if self.entries.delete(&entry, &[event]).await? == WriteOutcome::Applied {
                return Ok(());
            }
        }
        Err(crate::writes::kept_changing("time entry"))
    }

    async fn payload_of(
        &self,
        entry: &TimeEntry,
        action: EntryAction,
    ) -> DomainResult<TimeEntryPayload> {
        let workspace = self.workspace(entry.workspace_id).await?;
        let member = self.user(entry.user_id).await?;
        let refs = self.stored_refs(entry).await?;
        Self::payload(entry, action, &workspace, &member, &refs)
    }

    /// The fallback of the manual-entry trigger: the caller's newest manual entry, or the sample.
    pub async fn manual_fallback(&self, caller: &Principal) -> DomainResult<TimeEntryPayload> {
        match self
            .entries
            .latest_manual(caller.workspace_id, caller.user_id)
            .await?
        {
            Some(entry) => self.payload_of(&entry, EntryAction::ManualEntry).await,
            None => Ok(payload::samples::time_entry(EntryAction::ManualEntry)),
        }
    }

    /// The fallback of the timer-stopped trigger: the workspace's latest stopped timer, or the
    /// sample.
    pub async fn stopped_fallback(&self, caller: &Principal) -> DomainResult<TimeEntryPayload> {
        match self.entries.latest_stopped(caller.workspace_id).await? {
            Some(entry) => self.payload_of(&entry, EntryAction::StopTimer).await,
            None => Ok(payload::samples::time_entry(EntryAction::StopTimer)),
        }
    }

    /// The fallback of the timer-started trigger: the workspace's latest started timer, or the
    /// sample.
    pub async fn started_fallback(&self, caller: &Principal) -> DomainResult<TimeEntryPayload> {
        match self.entries.latest_started(caller.workspace_id).await? {
            Some(entry) => self.payload_of(&entry, EntryAction::StartTimer).await,
            None => Ok(payload::samples::time_entry(EntryAction::StartTimer)),
        }
    }
}
