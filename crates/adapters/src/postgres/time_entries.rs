//! Time entries and their tags in PostgreSQL; timer starts and stops are conditional writes that
//! report a lost race instead of failing.

use std::collections::HashMap;

use async_trait::async_trait;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use timetrack_domain::ids::{
    InvoiceId, ProjectId, TagId, TaskId, TimeEntryId, UserId, WorkspaceId,
};
use timetrack_domain::model::invoice::locked_by_invoice;
use timetrack_domain::model::{Cursor, EntrySource, Event, Page, PageRequest, TimeEntry};
use timetrack_domain::ports::{EntryFilter, TimeEntryRepository, TimerStop, WriteOutcome};
use timetrack_domain::{DomainError, DomainResult};
use uuid::Uuid;

use super::announce::DeliveryAnnouncer;
use super::errors::violated_constraint;
use super::errors::{map_db_error, map_pool_error};
use super::outbox::{record_events, record_if_found};
use super::paging::keyset_before;
use super::pool::{PgPool, opaque_debug};
use super::rates::{price_written, pricing_lock};
use super::schema::{time_entries, time_entry_tags};
use super::sql::named_query;

/// The partial unique index holding one running timer per user.
const ONE_RUNNING_TIMER: &str = "time_entries_one_running_timer_idx";

#[derive(Debug, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = time_entries, check_for_backend(diesel::pg::Pg), treat_none_as_null = true)]
struct EntryRow {
    id: Uuid,
    workspace_id: Uuid,
    user_id: Uuid,
    source: String,
    description: String,
    project_id: Option<Uuid>,
    task_id: Option<Uuid>,
    billable: bool,
    start_at: OffsetDateTime,
    end_at: Option<OffsetDateTime>,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

impl From<&TimeEntry> for EntryRow {
    fn from(e: &TimeEntry) -> Self {
        Self {
            id: e.id.0,
            workspace_id: e.workspace_id.0,
            user_id: e.user_id.0,
            source: e.source.as_str().to_owned(),
            description: e.description.clone(),
            project_id: e.project_id.map(|p| p.0),
            task_id: e.task_id.map(|t| t.0),
            billable: e.billable,
            start_at: e.start,
            end_at: e.end,
            created_at: e.created_at,
            updated_at: e.updated_at,
        }
    }
}

#[derive(Debug, Insertable)]
#[diesel(table_name = time_entry_tags)]
struct EntryTagRow {
    workspace_id: Uuid,
    time_entry_id: Uuid,
    tag_id: Uuid,
}

fn entry_of(row: EntryRow, tags: Vec<TagId>) -> DomainResult<TimeEntry> {
    let source = match row.source.as_str() {
        "timer" => EntrySource::Timer,
        "manual" => EntrySource::Manual,
        other => {
            return Err(DomainError::Unexpected(anyhow::anyhow!(
                "stored time entry has source {other}"
            )));
        }
    };
    Ok(TimeEntry {
        id: TimeEntryId(row.id),
        workspace_id: WorkspaceId(row.workspace_id),
        user_id: UserId(row.user_id),
        source,
        description: row.description,
        project_id: row.project_id.map(ProjectId),
        task_id: row.task_id.map(TaskId),
        tag_ids: tags,
        billable: row.billable,
        start: row.start_at,
        end: row.end_at,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

/// Loads the tags of `rows` in one query and builds the entries.
async fn with_tags(
    conn: &mut AsyncPgConnection,
    rows: Vec<EntryRow>,
) -> DomainResult<Vec<TimeEntry>> {
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let pairs: Vec<(Uuid, Uuid)> = if ids.is_empty() {
        Vec::new()
    } else {
        time_entry_tags::table
            .filter(time_entry_tags::time_entry_id.eq_any(&ids))
            .order((time_entry_tags::time_entry_id, time_entry_tags::tag_id))
            .select((time_entry_tags::time_entry_id, time_entry_tags::tag_id))
            .load(conn)
            .await
            .map_err(|e| map_db_error(e, "reading entry tags"))?
    };
    let mut by_entry: HashMap<Uuid, Vec<TagId>> = HashMap::new();
    for (entry, tag) in pairs {
        by_entry.entry(entry).or_default().push(TagId(tag));
    }
    rows.into_iter()
        .map(|row| {
            let tags = by_entry.remove(&row.id).unwrap_or_default();
            entry_of(row, tags)
        })
        .collect()
}

async fn insert_entry(conn: &mut AsyncPgConnection, entry: &TimeEntry) -> QueryResult<()> {
    diesel::insert_into(time_entries::table)
        .values(&EntryRow::from(entry))
        .execute(conn)
        .await?;
    insert_tags(conn, entry).await
}

async fn insert_tags(conn: &mut AsyncPgConnection, entry: &TimeEntry) -> QueryResult<()> {
    if entry.tag_ids.is_empty() {
        return Ok(());
    }
    let rows: Vec<EntryTagRow> = entry
        .tag_ids
        .iter()
        .map(|t| EntryTagRow {
            workspace_id: entry.workspace_id.0,
            time_entry_id: entry.id.0,
            tag_id: t.0,
        })
        .collect();
    diesel::insert_into(time_entry_tags::table)
        .values(&rows)
        .execute(conn)
        .await?;
    Ok(())
}

/// Ends `stop`'s timer if it is still running: the rows ended, 0 or 1 (its event is the caller's
/// to record, in the same transaction).
async fn end_timer(conn: &mut AsyncPgConnection, stop: &TimerStop) -> QueryResult<usize> {
    diesel::update(
        time_entries::table
            .filter(time_entries::id.eq(stop.entry.0))
            .filter(time_entries::end_at.is_null()),
    )
    .set((
        time_entries::end_at.eq(stop.end),
        time_entries::updated_at.eq(stop.event.created_at),
    ))
    .execute(conn)
    .await
}

/// Why a conditional write of `entry` found no row: the 409 of the invoice holding it (draft or
/// issued: either locks it), or — gone or changed meanwhile — `Ok(None)`, a lost race.
async fn invoice_lock(
    conn: &mut AsyncPgConnection,
    entry: &TimeEntry,
) -> QueryResult<DomainResult<Option<i64>>> {
    #[derive(QueryableByName)]
    struct Holder {
        #[diesel(sql_type = diesel::sql_types::Uuid)]
        id: Uuid,
        #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
        number: Option<String>,
    }
    let holder: Option<Holder> = named_query!(
        include_str!("statements/entry_invoice.sql");
        workspace_id: diesel::sql_types::Uuid = entry.workspace_id.0,
        id: diesel::sql_types::Uuid = entry.id.0,
    )
    .get_result(conn)
    .await
    .optional()?;
    Ok(match holder {
        Some(h) => Err(locked_by_invoice(InvoiceId(h.id), h.number.as_deref())),
        None => Ok(None),
    })
}

/// References to another workspace's rows are caught by the composite foreign keys.
fn write_error(err: diesel::result::Error, context: &'static str) -> DomainError {
    match violated_constraint(&err) {
        Some("time_entries_project_fkey") => {
            DomainError::validation("project_id does not name a project of this workspace")
        }
        Some("time_entries_task_fkey") => {
            DomainError::validation("task_id does not belong to project_id")
        }
        Some(c) if c.starts_with("time_entry_tags_") => {
            DomainError::validation("tag_ids contains an id that is not a tag of this workspace")
        }
        _ => map_db_error(err, context),
    }
}

/// [`TimeEntryRepository`] on PostgreSQL.
#[derive(Clone)]
pub struct PgTimeEntryRepository {
    pool: PgPool,
    announcer: DeliveryAnnouncer,
}

opaque_debug!(PgTimeEntryRepository);

impl PgTimeEntryRepository {
    /// The repository on `pool`; `announcer` hears of the deliveries its writes queue.
    pub fn new(pool: PgPool, announcer: DeliveryAnnouncer) -> Self {
        Self { pool, announcer }
    }

    async fn one(
        &self,
        query: time_entries::BoxedQuery<'_, diesel::pg::Pg>,
        context: &'static str,
    ) -> DomainResult<Option<TimeEntry>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let row: Option<EntryRow> = query
            .select(EntryRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(|e| map_db_error(e, context))?;
        match row {
            Some(row) => Ok(with_tags(&mut conn, vec![row]).await?.pop()),
            None => Ok(None),
        }
    }
}

#[async_trait]
impl TimeEntryRepository for PgTimeEntryRepository {
    async fn running(&self, user: UserId) -> DomainResult<Option<TimeEntry>> {
        self.one(
            time_entries::table
                .filter(time_entries::user_id.eq(user.0))
                .filter(time_entries::end_at.is_null())
                .into_boxed(),
            "reading the running timer",
        )
        .await
    }

    async fn start(
        &self,
        stop: Option<&TimerStop>,
        entry: &TimeEntry,
        events: &[Event],
    ) -> DomainResult<WriteOutcome> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let result = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                pricing_lock(conn, entry.workspace_id, false).await?;
                let mut recorded = Vec::with_capacity(events.len() + 1);
                if let Some(stop) = stop {
                    if end_timer(conn, stop).await? == 0 {
                        return Ok((WriteOutcome::Raced, 0));
                    }
                    recorded.push(stop.event.clone());
                }
                insert_entry(conn, entry).await?;
                price_written(conn, entry.workspace_id, &[entry.id.0]).await?;
                // The stop's event, then the start's, in one statement of the outbox.
                recorded.extend_from_slice(events);
                let queued = record_events(conn, &recorded).await?;
                Ok((WriteOutcome::Applied, queued))
            })
            .await;
        match result {
            Ok((outcome, queued)) => {
                self.announcer.announce(queued);
                Ok(outcome)
            }
            // Another start of the same user committed first; the whole transaction rolled back.
            Err(e) if violated_constraint(&e) == Some(ONE_RUNNING_TIMER) => Ok(WriteOutcome::Raced),
            Err(e) => Err(write_error(e, "starting a timer")),
        }
    }

    async fn stop(&self, stop: &TimerStop) -> DomainResult<WriteOutcome> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let applied = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let ended = end_timer(conn, stop).await?;
                record_if_found(conn, ended, std::slice::from_ref(&stop.event)).await
            })
            .await
            .map_err(|e| map_db_error(e, "stopping a timer"))?;
        Ok(match applied {
            Some(queued) => {
                self.announcer.announce(queued);
                WriteOutcome::Applied
            }
            None => WriteOutcome::Raced,
        })
    }

    async fn create(&self, entry: &TimeEntry, events: &[Event]) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let queued = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                pricing_lock(conn, entry.workspace_id, false).await?;
                insert_entry(conn, entry).await?;
                price_written(conn, entry.workspace_id, &[entry.id.0]).await?;
                record_events(conn, events).await
            })
            .await
            .map_err(|e| write_error(e, "creating a time entry"))?;
        self.announcer.announce(queued);
        Ok(())
    }

    async fn get(
        &self,
        workspace: WorkspaceId,
        id: TimeEntryId,
    ) -> DomainResult<Option<TimeEntry>> {
        self.one(
            time_entries::table
                .filter(time_entries::workspace_id.eq(workspace.0))
                .filter(time_entries::id.eq(id.0))
                .into_boxed(),
            "reading a time entry",
        )
        .await
    }

    async fn list(
        &self,
        workspace: WorkspaceId,
        filter: EntryFilter,
        page: PageRequest,
    ) -> DomainResult<Page<TimeEntry>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let mut query = time_entries::table
            .filter(time_entries::workspace_id.eq(workspace.0))
            .order((time_entries::start_at.desc(), time_entries::id.desc()))
            .limit(i64::from(page.limit) + 1)
            .select(EntryRow::as_select())
            .into_boxed();
        if let Some(from) = filter.from {
            query = query.filter(time_entries::start_at.ge(from));
        }
        if let Some(to) = filter.to {
            query = query.filter(time_entries::start_at.lt(to));
        }
        if let Some(user) = filter.user {
            query = query.filter(time_entries::user_id.eq(user.0));
        }
        if let Some(after) = page.after {
            query = query.filter(keyset_before("start_at", after));
        }
        let rows = query
            .load(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "listing time entries"))?;
        let entries = with_tags(&mut conn, rows).await?;
        Ok(Page::from_overfetch(entries, page.limit, |e| Cursor {
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
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let row = EntryRow::from(after);
        let queued = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                pricing_lock(conn, before.workspace_id, false).await?;
                // The row next: its lock orders this change's events after any earlier one's.
                let n = diesel::update(
                    time_entries::table
                        .filter(time_entries::workspace_id.eq(before.workspace_id.0))
                        .filter(time_entries::id.eq(before.id.0))
                        .filter(time_entries::updated_at.eq(before.updated_at))
                        .filter(time_entries::invoice_id.is_null()),
                )
                .set(&row)
                .execute(conn)
                .await?;
                if n == 0 {
                    return invoice_lock(conn, before).await;
                }
                if before.tag_ids != after.tag_ids {
                    diesel::delete(
                        time_entry_tags::table
                            .filter(time_entry_tags::time_entry_id.eq(after.id.0)),
                    )
                    .execute(conn)
                    .await?;
                    insert_tags(conn, after).await?;
                }
                price_written(conn, after.workspace_id, &[after.id.0]).await?;
                record_events(conn, events).await.map(|n| Ok(Some(n)))
            })
            .await
            .map_err(|e| write_error(e, "updating a time entry"))?;
        Ok(self.announcer.outcome(queued?))
    }

    async fn delete(&self, entry: &TimeEntry, events: &[Event]) -> DomainResult<WriteOutcome> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let queued = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let n = diesel::delete(
                    time_entries::table
                        .filter(time_entries::workspace_id.eq(entry.workspace_id.0))
                        .filter(time_entries::id.eq(entry.id.0))
                        .filter(time_entries::updated_at.eq(entry.updated_at))
                        .filter(time_entries::invoice_id.is_null()),
                )
                .execute(conn)
                .await?;
                if n == 0 {
                    return invoice_lock(conn, entry).await;
                }
                record_if_found(conn, n, events).await.map(Ok)
            })
            .await
            .map_err(|e| map_db_error(e, "deleting a time entry"))?;
        Ok(self.announcer.outcome(queued?))
    }

    async fn latest_manual(
        &self,
        workspace: WorkspaceId,
        user: UserId,
    ) -> DomainResult<Option<TimeEntry>> {
        self.one(
            time_entries::table
                .filter(time_entries::workspace_id.eq(workspace.0))
                .filter(time_entries::user_id.eq(user.0))
                .filter(time_entries::source.eq("manual"))
                .order((time_entries::created_at.desc(), time_entries::id.desc()))
                .into_boxed(),
            "reading the latest manual entry",
        )
        .await
    }

    async fn latest_stopped(&self, workspace: WorkspaceId) -> DomainResult<Option<TimeEntry>> {
        self.one(
            time_entries::table
                .filter(time_entries::workspace_id.eq(workspace.0))
                .filter(time_entries::source.eq("timer"))
                .filter(time_entries::end_at.is_not_null())
                .order((time_entries::end_at.desc(), time_entries::id.desc()))
                .into_boxed(),
            "reading the latest stopped timer",
        )
        .await
    }

    async fn latest_started(&self, workspace: WorkspaceId) -> DomainResult<Option<TimeEntry>> {
        self.one(
            time_entries::table
                .filter(time_entries::workspace_id.eq(workspace.0))
                .filter(time_entries::source.eq("timer"))
                .order((time_entries::start_at.desc(), time_entries::id.desc()))
                .into_boxed(),
            "reading the latest started timer",
        )
        .await
    }
}
