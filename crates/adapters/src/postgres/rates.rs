//! Rates and entry prices in PostgreSQL. The rule that picks an entry's rate is the SQL function
//! `timetrack_code.repricing` (functions/repricing.sql), which `price_entries` (filtered
//! re-pricings) and `price_written` (entries a write made) write; every change that can move a
//! price calls it in its own transaction, after taking the workspace's pricing lock
//! (`timetrack_code.pricing_lock`) first.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{
    BigInt, Date as SqlDate, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use time::{Date, OffsetDateTime};
use timetrack_domain::ids::{
    ClientId, InvoiceId, ProjectId, RateId, TaskId, TimeEntryId, UserId, WorkspaceId,
};
use timetrack_domain::model::{
    AppliedRate, Cursor, Page, PageRequest, Rate, RateKind, RateTarget, Rounding, StoredPrice,
};
use timetrack_domain::ports::{PriceChange, RateEffect, RateFilter, RateRepository};
use timetrack_domain::{DomainError, DomainResult};
use uuid::Uuid;

use super::errors::{map_db_error, map_pool_error, violated_constraint};
use super::paging::keyset_before;
use super::pool::{PgPool, opaque_debug};
use super::schema::{rates, time_entries};

/// Takes the workspace's pricing lock for the transaction: `exclusive` for a change that
/// re-prices many entries, shared for writes of entries.
pub(crate) async fn pricing_lock(
    conn: &mut AsyncPgConnection,
    workspace: WorkspaceId,
    exclusive: bool,
) -> QueryResult<()> {
    diesel::sql_query("SELECT timetrack_code.pricing_lock($1, $2)")
        .bind::<SqlUuid, _>(workspace.0)
        .bind::<diesel::sql_types::Bool, _>(exclusive)
        .execute(conn)
        .await
        .map(drop)
}

/// What `price_entries` reports of one entry whose price changed.
#[derive(QueryableByName)]
struct Repriced {
    #[diesel(sql_type = BigInt)]
    seconds: i64,
    #[diesel(sql_type = Nullable<Text>)]
    old_currency: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    old_billable_minor: Option<i64>,
    #[diesel(sql_type = Text)]
    new_currency: String,
    #[diesel(sql_type = Nullable<BigInt>)]
    new_billable_minor: Option<i64>,
}

/// Which of a workspace's entries a re-pricing looks at.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reach {
    pub user: Option<Uuid>,
    pub client: Option<Uuid>,
    pub project: Option<Uuid>,
    pub task: Option<Uuid>,
    pub since: Option<OffsetDateTime>,
    pub rate: Option<Uuid>,
}

impl Reach {
    /// The entries a rate can price: those of its target (its member, client, project or task;
    /// all of the workspace's for a workspace rate) that start on or after its first day. Entries
    /// that start before that day (in any time zone) cannot get it: a day's margin keeps the
    /// filter on the index without the zone.
    fn of_rate(rate: &Rate) -> Self {
        Self {
            user: rate.target.user_id().map(|id| id.0),
            client: rate.target.client_id().map(|id| id.0),
            project: rate.target.project_id().map(|id| id.0),
            task: rate.target.task_id().map(|id| id.0),
            since: Some(rate.effective_from.midnight().assume_utc() - time::Duration::days(1)),
            rate: None,
        }
    }
}

impl From<Repriced> for PriceChange {
    fn from(r: Repriced) -> Self {
        Self {
            seconds: r.seconds,
            old_currency: r.old_currency,
            old_billable_minor: r.old_billable_minor,
            new_currency: r.new_currency,
            new_billable_minor: r.new_billable_minor,
        }
    }
}

/// What re-pricing the workspace's entries in `reach` changes (see `entry_prices.sql`), written
/// when `write` (`price_entries`), or only read for a dry run; the caller holds the pricing lock.
async fn changes(
    conn: &mut AsyncPgConnection,
    workspace: WorkspaceId,
    reach: &Reach,
    write: bool,
) -> QueryResult<Vec<PriceChange>> {
    const ARGUMENTS: &str = "(p_workspace => $1, p_user => $2, p_client => $3, p_project => $4, \
         p_task => $5, p_since => $6, p_rate => $7)";
    let sql = if write {
        format!(
            "SELECT seconds, old_currency, old_billable_minor, new_currency, new_billable_minor \
             FROM timetrack_code.price_entries{ARGUMENTS}"
        )
    } else {
        format!(
            "SELECT seconds, old_currency, old_billable_minor, new_currency, \
                    billable_rate_minor AS new_billable_minor \
             FROM timetrack_code.entry_prices{ARGUMENTS}"
        )
    };
    let changed: Vec<Repriced> = diesel::sql_query(sql)
        .bind::<SqlUuid, _>(workspace.0)
        .bind::<Nullable<SqlUuid>, _>(reach.user)
        .bind::<Nullable<SqlUuid>, _>(reach.client)
        .bind::<Nullable<SqlUuid>, _>(reach.project)
        .bind::<Nullable<SqlUuid>, _>(reach.task)
        .bind::<Nullable<Timestamptz>, _>(reach.since)
        .bind::<Nullable<SqlUuid>, _>(reach.rate)
        .load(conn)
        .await?;
    Ok(changed.into_iter().map(PriceChange::from).collect())
}

/// Re-prices the workspace's entries in `reach`; the caller holds the pricing lock. Returns what
/// changed.
async fn reprice(
    conn: &mut AsyncPgConnection,
    workspace: WorkspaceId,
    reach: &Reach,
) -> QueryResult<Vec<PriceChange>> {
    changes(conn, workspace, reach, true).await
}

/// Re-prices the workspace's entries in `reach` in a transaction of the caller's, taking the
/// exclusive pricing lock: for changes of clients, projects and the workspace that move prices.
pub(crate) async fn reprice_under_lock(
    conn: &mut AsyncPgConnection,
    workspace: WorkspaceId,
    reach: &Reach,
) -> QueryResult<()> {
    reprice(conn, workspace, reach).await.map(drop)
}

/// Prices the entries `ids` just written (the caller took the shared pricing lock first), by
/// `price_written.sql`: the rule of every re-pricing, through a plan kept per connection.
pub(crate) async fn price_written(
    conn: &mut AsyncPgConnection,
    workspace: WorkspaceId,
    ids: &[Uuid],
) -> QueryResult<()> {
    diesel::sql_query("SELECT timetrack_code.price_written($1, $2)")
        .bind::<SqlUuid, _>(workspace.0)
        .bind::<diesel::sql_types::Array<SqlUuid>, _>(ids)
        .execute(conn)
        .await
        .map(drop)
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = rates, check_for_backend(diesel::pg::Pg))]
struct RateRow {
    id: Uuid,
    workspace_id: Uuid,
    kind: String,
    scope: String,
    user_id: Option<Uuid>,
    client_id: Option<Uuid>,
    project_id: Option<Uuid>,
    task_id: Option<Uuid>,
    currency: String,
    hourly_minor: i64,
    effective_from: Date,
    created_at: OffsetDateTime,
}

impl From<&Rate> for RateRow {
    fn from(r: &Rate) -> Self {
        Self {
            id: r.id.0,
            workspace_id: r.workspace_id.0,
            kind: r.kind.as_str().to_owned(),
            scope: r.target.scope().to_owned(),
            user_id: r.target.user_id().map(|id| id.0),
            client_id: r.target.client_id().map(|id| id.0),
            project_id: r.target.project_id().map(|id| id.0),
            task_id: r.target.task_id().map(|id| id.0),
            currency: r.currency.clone(),
            hourly_minor: r.hourly_minor,
            effective_from: r.effective_from,
            created_at: r.created_at,
        }
    }
}

impl TryFrom<RateRow> for Rate {
    type Error = DomainError;

    fn try_from(row: RateRow) -> DomainResult<Self> {
        let unexpected =
            |e: DomainError| DomainError::Unexpected(anyhow::anyhow!("stored rate: {e}"));
        Ok(Rate {
            id: RateId(row.id),
            workspace_id: WorkspaceId(row.workspace_id),
            kind: RateKind::parse(&row.kind).map_err(unexpected)?,
            target: RateTarget::parse(
                &row.scope,
                row.user_id.map(UserId),
                row.client_id.map(ClientId),
                row.project_id.map(ProjectId),
                row.task_id.map(TaskId),
            )
            .map_err(unexpected)?,
            currency: row.currency,
            hourly_minor: row.hourly_minor,
            effective_from: row.effective_from,
            created_at: row.created_at,
        })
    }
}

/// The id of the rate `rate` clashes with (same kind, scope, target, currency and date).
async fn clashing(conn: &mut AsyncPgConnection, rate: &RateRow) -> QueryResult<Option<Uuid>> {
    rates::table
        .filter(rates::workspace_id.eq(rate.workspace_id))
        .filter(rates::kind.eq(&rate.kind))
        .filter(rates::scope.eq(&rate.scope))
        .filter(rates::user_id.is_not_distinct_from(rate.user_id))
        .filter(rates::client_id.is_not_distinct_from(rate.client_id))
        .filter(rates::project_id.is_not_distinct_from(rate.project_id))
        .filter(rates::task_id.is_not_distinct_from(rate.task_id))
        .filter(rates::currency.eq(&rate.currency))
        .filter(rates::effective_from.eq(rate.effective_from))
        .select(rates::id)
        .first(conn)
        .await
        .optional()
}

/// Why a transaction of [`PgRateRepository::add`] ended without committing.
enum Undo {
    /// A dry run: everything is undone, and this is what it did.
    DryRun(RateEffect),
    /// The database refused it.
    Failed(diesel::result::Error),
}

impl From<diesel::result::Error> for Undo {
    fn from(e: diesel::result::Error) -> Self {
        Undo::Failed(e)
    }
}

/// [`RateRepository`] on PostgreSQL.
#[derive(Clone)]
pub struct PgRateRepository {
    pool: PgPool,
}

opaque_debug!(PgRateRepository);

impl PgRateRepository {
    /// The repository on `pool`.
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

#[async_trait]
impl RateRepository for PgRateRepository {
    async fn add(
        &self,
        rate: &Rate,
        rounding: Rounding,
        dry_run: bool,
    ) -> DomainResult<RateEffect> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let row = RateRow::from(rate);
        let outcome = conn
            .transaction::<_, Undo, _>(async |conn| {
                pricing_lock(conn, rate.workspace_id, true).await?;
                if let Some(existing) = clashing(conn, &row).await? {
                    return Ok(Err(DomainError::AlreadyExists {
                        what: "rate",
                        id: existing.to_string(),
                    }));
                }
                diesel::insert_into(rates::table)
                    .values(&row)
                    .execute(conn)
                    .await?;
                // A dry run reads what would change, writes nothing, and undoes the rate.
                let reach = Reach::of_rate(rate);
                let changed = changes(conn, rate.workspace_id, &reach, !dry_run).await?;
                let effect = RateEffect::of(&changed, rounding);
                if dry_run {
                    return Err(Undo::DryRun(effect));
                }
                Ok(Ok(effect))
            })
            .await;
        match outcome {
            Ok(result) => result,
            Err(Undo::DryRun(effect)) => Ok(effect),
            Err(Undo::Failed(e)) => Err(match violated_constraint(&e) {
                Some("rates_member_fkey") => {
                    DomainError::validation("user_id does not name a member of this workspace")
                }
                Some("rates_client_fkey") => {
                    DomainError::validation("client_id does not name a client of this workspace")
                }
                Some("rates_project_fkey") => {
                    DomainError::validation("project_id does not name a project of this workspace")
                }
                Some("rates_task_fkey") => {
                    DomainError::validation("task_id does not name a task of this workspace")
                }
                _ => map_db_error(e, "adding a rate"),
            }),
        }
    }

    async fn list(
        &self,
        workspace: WorkspaceId,
        filter: &RateFilter,
        page_req: PageRequest,
    ) -> DomainResult<Page<Rate>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let mut query = rates::table
            .filter(rates::workspace_id.eq(workspace.0))
            .order((rates::created_at.desc(), rates::id.desc()))
            .limit(i64::from(page_req.limit) + 1)
            .select(RateRow::as_select())
            .into_boxed();
        if let Some(kind) = filter.kind {
            query = query.filter(rates::kind.eq(kind.as_str()));
        }
        if let Some(scope) = &filter.scope {
            query = query.filter(rates::scope.eq(scope.clone()));
        }
        if let Some(user) = filter.user_id {
            query = query.filter(rates::user_id.eq(user.0));
        }
        if let Some(client) = filter.client_id {
            query = query.filter(rates::client_id.eq(client.0));
        }
        if let Some(project) = filter.project_id {
            query = query.filter(rates::project_id.eq(project.0));
        }
        if let Some(task) = filter.task_id {
            query = query.filter(rates::task_id.eq(task.0));
        }
        if let Some(after) = page_req.after {
            query = query.filter(keyset_before("created_at", after));
        }
        let rows: Vec<RateRow> = query
            .load(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "listing rates"))?;
        let rates = rows
            .into_iter()
            .map(Rate::try_from)
            .collect::<DomainResult<Vec<_>>>()?;
        Ok(Page::from_overfetch(rates, page_req.limit, |r| Cursor {
            created_at: r.created_at,
            id: r.id.0,
        }))
    }

    async fn get(&self, workspace: WorkspaceId, id: RateId) -> DomainResult<Option<Rate>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        rates::table
            .filter(rates::workspace_id.eq(workspace.0))
            .filter(rates::id.eq(id.0))
            .select(RateRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(|e| map_db_error(e, "reading a rate"))?
            .map(Rate::try_from)
            .transpose()
    }

    async fn delete(&self, workspace: WorkspaceId, id: RateId) -> DomainResult<()> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            pricing_lock(conn, workspace, true).await?;
            let found: Option<RateRow> = rates::table
                .filter(rates::workspace_id.eq(workspace.0))
                .filter(rates::id.eq(id.0))
                .select(RateRow::as_select())
                .for_update()
                .first(conn)
                .await
                .optional()?;
            let Some(found) = found else {
                return Ok(Err(DomainError::NotFound("rate")));
            };
            let rate = match Rate::try_from(found) {
                Ok(rate) => rate,
                Err(e) => return Ok(Err(e)),
            };
            // Only entries in the rate's reach can carry it; the rate ids are in no index
            // (ADR 0025), so its target and first day find them. A locked entry keeps its
            // member, project, task and start, but its project may since have moved to another
            // client: the locked entries a client rate priced are looked for among all of the
            // workspace's (the client is left out of the check below, not of the re-pricing,
            // whose unlocked entries are always priced by their project's client of now).
            let reach = Reach {
                rate: Some(id.0),
                ..Reach::of_rate(&rate)
            };
            #[derive(QueryableByName)]
            struct Locked {
                #[diesel(sql_type = Nullable<SqlDate>)]
                lock_before: Option<Date>,
                #[diesel(sql_type = Integer)]
                locked: i32,
                #[diesel(sql_type = Integer)]
                invoiced: i32,
            }
            let locked: Locked = diesel::sql_query(
                "SELECT w.lock_before, \
                        count(e.id) FILTER (WHERE (e.start_at AT TIME ZONE w.timezone)::date \
                                                  < w.lock_before)::int AS locked, \
                        count(e.id) FILTER (WHERE e.invoice_id IS NOT NULL)::int AS invoiced \
                 FROM workspaces w \
                 LEFT JOIN time_entries e ON e.workspace_id = w.id \
                      AND (e.billable_rate_id = $2 OR e.cost_rate_id = $2) \
                      AND ($3::uuid IS NULL OR e.user_id = $3) \
                      AND ($4::uuid IS NULL OR e.project_id = $4) \
                      AND ($5::uuid IS NULL OR e.task_id = $5) \
                      AND e.start_at >= $6 \
                 WHERE w.id = $1 GROUP BY w.id",
            )
            .bind::<SqlUuid, _>(workspace.0)
            .bind::<SqlUuid, _>(id.0)
            .bind::<Nullable<SqlUuid>, _>(reach.user)
            .bind::<Nullable<SqlUuid>, _>(reach.project)
            .bind::<Nullable<SqlUuid>, _>(reach.task)
            .bind::<Nullable<Timestamptz>, _>(reach.since)
            .get_result(conn)
            .await?;
            if locked.locked > 0 {
                return Ok(Err(DomainError::Conflict(format!(
                    "Rate priced locked entries ({} before the lock date {})",
                    locked.locked,
                    locked
                        .lock_before
                        .map(timetrack_domain::timefmt::iso_date)
                        .unwrap_or_default()
                ))));
            }
            if locked.invoiced > 0 {
                return Ok(Err(DomainError::Conflict(format!(
                    "Rate priced locked entries ({} on an invoice)",
                    locked.invoiced
                ))));
            }
            diesel::delete(
                rates::table
                    .filter(rates::workspace_id.eq(workspace.0))
                    .filter(rates::id.eq(id.0)),
            )
            .execute(conn)
            .await?;
            reprice(conn, workspace, &reach).await?;
            Ok(Ok(()))
        })
        .await
        .map_err(|e| map_db_error(e, "deleting a rate"))?
    }

    async fn prices(
        &self,
        workspace: WorkspaceId,
        ids: &[TimeEntryId],
    ) -> DomainResult<Vec<(TimeEntryId, StoredPrice)>> {
        type PriceColumns = (
            Uuid,
            Option<String>,
            Option<Uuid>,
            Option<String>,
            Option<i64>,
            Option<Uuid>,
            Option<String>,
            Option<i64>,
            Option<Uuid>,
        );
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let raw: Vec<Uuid> = ids.iter().map(|id| id.0).collect();
        let rows: Vec<PriceColumns> = time_entries::table
            .filter(time_entries::workspace_id.eq(workspace.0))
            .filter(time_entries::id.eq_any(&raw))
            .select((
                time_entries::id,
                time_entries::price_currency,
                time_entries::billable_rate_id,
                time_entries::billable_rate_scope,
                time_entries::billable_rate_minor,
                time_entries::cost_rate_id,
                time_entries::cost_rate_scope,
                time_entries::cost_rate_minor,
                time_entries::invoice_id,
            ))
            .load(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "reading entry prices"))?;
        let applied = |id: Option<Uuid>, scope: Option<String>, minor: Option<i64>| {
            Some(AppliedRate {
                id: RateId(id?),
                scope: scope?,
                hourly_minor: minor?,
            })
        };
        Ok(rows
            .into_iter()
            .map(
                |(id, currency, bid, bscope, bminor, cid, cscope, cminor, invoice)| {
                    (
                        TimeEntryId(id),
                        StoredPrice {
                            currency,
                            billable: applied(bid, bscope, bminor),
                            cost: applied(cid, cscope, cminor),
                            invoice_id: invoice.map(InvoiceId),
                        },
                    )
                },
            )
            .collect())
    }
}
