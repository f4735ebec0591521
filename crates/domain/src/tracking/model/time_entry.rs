//! Time entries: timers (running until stopped) and manual entries (always finished).

use time::OffsetDateTime;

use crate::ids::{ProjectId, TagId, TaskId, TimeEntryId, UserId, WorkspaceId};

/// How an entry came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntrySource {
    /// Started and stopped as a timer.
    Timer,
    /// Created by hand with a start and an end.
    Manual,
}

impl EntrySource {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Timer => "timer",
            Self::Manual => "manual",
        }
    }
}

/// A time entry. Times are whole seconds; `end` is `None` while a timer runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeEntry {
    /// Identifier.
    pub id: TimeEntryId,
    /// The owning workspace.
    pub workspace_id: WorkspaceId,
    /// The member who tracked the time.
    pub user_id: UserId,
    /// Timer or manual.
    pub source: EntrySource,
    /// What was done; may be empty.
    pub description: String,
    /// The project, if any.
    pub project_id: Option<ProjectId>,
    /// The task (of the project), if any.
    pub task_id: Option<TaskId>,
    /// The tags, possibly none.
    pub tag_ids: Vec<TagId>,
    /// Whether the time is billable.
    pub billable: bool,
    /// Start, whole seconds.
    pub start: OffsetDateTime,
    /// End, whole seconds; `None` while a timer runs.
    pub end: Option<OffsetDateTime>,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last modification time (for a stopped timer: the stop).
    pub updated_at: OffsetDateTime,
}

impl TimeEntry {
    /// Whether this is a timer that has not been stopped.
    pub fn is_running(&self) -> bool {
        self.end.is_none()
    }

    /// Whole seconds from start to end, when finished.
    pub fn duration_seconds(&self) -> Option<i64> {
        self.end.map(|end| (end - self.start).whole_seconds())
    }
}

/// `at` truncated to the whole second, as every entry time is.
pub(crate) fn whole_seconds(at: OffsetDateTime) -> OffsetDateTime {
    at.replace_nanosecond(0).unwrap_or(at)
}
