//! Reports in PostgreSQL: every figure is summed in the database from the entries' stored rates,
//! with `timetrack_code.rounded_seconds` and `timetrack_code.amount_minor` (the domain's rounding
//! and amount, held equal to them by a test), over one range scan of the workspace's entries by
//! start (`time_entries_workspace_start_idx`).
//!
//! The statements are put together from fixed fragments: the base (`statements/report_base.sql`,
//! the filter as bound parameters) and, for a summary, one grouped select: the cells of every
//! key's value and currency, hashed in one pass over the entries, then every level's groups from
//! the cells with `GROUPING SETS` (a second select from the tag level on, where an entry counts
//! under each of its tags). No text of a request reaches the SQL; the keys choose among the
//! fragments below. The figures and the plans are in docs/benchmarks.md.

use std::collections::HashMap;

use async_trait::async_trait;
use diesel::sql_types::{
    Array, BigInt, Bool, Date as SqlDate, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use time::{Date, OffsetDateTime};
use timetrack_domain::ids::{TimeEntryId, WorkspaceId};
use timetrack_domain::model::{
    Amounts, Cursor, DetailedRow, Figures, GroupKey, GroupValue, Named, ReportFilter, SummaryRow,
    UninvoicedRow,
};
use timetrack_domain::ports::ReportRepository;
use timetrack_domain::{DomainError, DomainResult};
use uuid::Uuid;

use super::errors::{map_db_error, map_pool_error};
use super::pool::{PgPool, opaque_debug};

/// The entries of a report with their figures: `priced` (see the file).
const BASE: &str = include_str!("statements/report_base.sql");
/// The same figures summed per day and bucket, as `priced` (see the file).
const DAY_TOTALS: &str = include_str!("statements/report_day_totals.sql");

/// What a summary is summed from: the entries of its period, or the workspace's day totals
/// (`report_day_totals`), a bucket per local day, project, task, billable, invoiced and
/// currency, which answer the same figures from a fraction of the rows when no member, tag or
/// other zone is asked for (ADR 0024).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The period's entries, one by one (`statements/report_base.sql`).
    Entries,
    /// The workspace's day totals (`statements/report_day_totals.sql`).
    DayTotals,
}

impl Source {
    /// The statement's first part, which defines `priced`.
    fn base(self) -> &'static str {
        match self {
            Source::Entries => BASE,
            Source::DayTotals => DAY_TOTALS,
        }
    }

    /// The figures of a cell, summed over its rows (entries, or buckets of `entries` each).
    fn cell_sums(self) -> &'static str {
        match self {
            Source::Entries => CELL_SUMS,
            Source::DayTotals => BUCKET_SUMS,
        }
    }
}

/// Binds the base's parameters ($1 to $13) to `query`.
macro_rules! bind_base {
    ($query:expr, $workspace:expr, $filter:expr) => {{
        let f: &ReportFilter = $filter;
        let ids = |v: Vec<Uuid>| v;
        $query
            .bind::<SqlUuid, _>($workspace.0)
            .bind::<Text, _>(f.timezone.clone())
            .bind::<SqlDate, _>(f.from)
            .bind::<SqlDate, _>(f.to)
            .bind::<Array<SqlUuid>, _>(ids(f.client_ids.iter().map(|i| i.0).collect()))
            .bind::<Array<SqlUuid>, _>(ids(f.project_ids.iter().map(|i| i.0).collect()))
            .bind::<Array<SqlUuid>, _>(ids(f.task_ids.iter().map(|i| i.0).collect()))
            .bind::<Array<SqlUuid>, _>(ids(f.tag_ids.iter().map(|i| i.0).collect()))
            .bind::<Array<SqlUuid>, _>(ids(f.user_ids.iter().map(|i| i.0).collect()))
            .bind::<Nullable<Bool>, _>(f.billable)
            .bind::<Nullable<Bool>, _>(f.invoiced)
            .bind::<Integer, _>(i32::from(f.rounding.minutes))
            .bind::<Text, _>(f.rounding.mode.as_str())
    }};
}

/// A key's value in the cells of a grouped select over `priced x` (and `tt`, its tags), in its
/// own type: grouping by a uuid or a date is cheaper than by text.
fn key_value(key: GroupKey) -> &'static str {
    match key {
        GroupKey::Client => "x.client_id",
        GroupKey::Project => "x.project_id",
        GroupKey::Task => "x.task_id",
        GroupKey::User => "x.user_id",
        GroupKey::Tag => "tt.tag_id",
        GroupKey::Day => "x.day",
        GroupKey::Week => "date_trunc('week', x.day)::date",
        GroupKey::Month => "date_trunc('month', x.day)::date",
    }
}

/// The text of a key's value `column` of the cells: an id, or a period as the API writes it.
fn key_text(key: GroupKey, column: &str) -> String {
    match key {
        GroupKey::Client | GroupKey::Project | GroupKey::Task | GroupKey::User | GroupKey::Tag => {
            format!("{column}::text")
        }
        GroupKey::Day => format!("to_char({column}, 'YYYY-MM-DD')"),
        GroupKey::Week => format!("to_char({column}, 'IYYY-\"W\"IW')"),
        GroupKey::Month => format!("to_char({column}, 'YYYY-MM')"),
    }
}

/// The figures of a cell, summed over its entries.
const CELL_SUMS: &str = "count(*) AS entries, sum(x.seconds) AS seconds, \
    coalesce(sum(x.seconds) FILTER (WHERE x.billable), 0) AS billable_seconds, \
    sum(x.rounded) AS rounded, sum(x.bill) AS bill, sum(x.cost) AS cost";

/// The figures of a cell, summed over its day totals.
const BUCKET_SUMS: &str = "sum(x.entries) AS entries, sum(x.seconds) AS seconds, \
    coalesce(sum(x.seconds) FILTER (WHERE x.billable), 0) AS billable_seconds, \
    sum(x.rounded) AS rounded, sum(x.bill) AS bill, sum(x.cost) AS cost";

/// The figures of a group, summed over its cells, as text: a sum of many large entries can pass
/// the range of bigint, which the reader refuses with a clear error instead of the database
/// failing the statement.
const GROUP_SUMS: &str = "sum(c.seconds)::text AS seconds, \
    sum(c.billable_seconds)::text AS billable_seconds, sum(c.rounded)::text AS rounded, \
    sum(c.entries)::text AS entries, sum(c.bill)::text AS bill, sum(c.cost)::text AS cost";

/// The figures of a cell as they are, as text (the cells are the groups of the deepest level).
const CELL_TEXTS: &str = "c.seconds::text AS seconds, \
    c.billable_seconds::text AS billable_seconds, c.rounded::text AS rounded, \
    c.entries::text AS entries, c.bill::text AS bill, c.cost::text AS cost";

/// One select of the groups of `keys` at the depths `depths` (0: the totals), over the entries
/// joined to their tags when a key is the tag: first the cells (one per value of every key and
/// currency, by hashing, in one pass over the entries), then the groups of each depth from the
/// cells. The cells are the groups of the deepest level, so asked for that level alone, the
/// select answers them as they are (grouping 10,000 cells again took a third of a year's
/// summary from the day totals).
fn grouped_select(
    source: Source,
    keys: &[GroupKey],
    depths: std::ops::RangeInclusive<usize>,
) -> String {
    let tagged = keys.contains(&GroupKey::Tag);
    let columns: Vec<String> = keys
        .iter()
        .enumerate()
        .map(|(i, key)| format!("{} AS k{}", key_value(*key), i + 1))
        .collect();
    let cell_keys: String = columns.iter().map(|c| format!("{c}, ")).collect();
    let group_by: String = (1..=keys.len()).map(|i| format!("{i}, ")).collect();
    let tags = if tagged {
        " LEFT JOIN time_entry_tags tt ON tt.workspace_id = $1 AND tt.time_entry_id = x.id"
    } else {
        ""
    };
    let deepest_only = depths == (keys.len()..=keys.len());
    let sets: Vec<String> = depths
        .map(|depth| {
            let mut set: Vec<String> = (1..=depth).map(|i| format!("c.k{i}")).collect();
            set.push("c.currency".to_owned());
            format!("({})", set.join(", "))
        })
        .collect();
    let level = if keys.is_empty() {
        "0".to_owned()
    } else {
        let ungrouped: String = (1..=keys.len())
            .map(|i| format!(" - grouping(c.k{i})"))
            .collect();
        format!("{}{ungrouped}", keys.len())
    };
    let texts: Vec<String> = (0..3)
        .map(|i| {
            keys.get(i).map_or("NULL::text".to_owned(), |key| {
                key_text(*key, &format!("c.k{}", i + 1))
            })
        })
        .collect();
    let cells = format!(
        "SELECT {cell_keys}x.currency, {} FROM priced x{tags} GROUP BY {group_by}{}",
        source.cell_sums(),
        keys.len() + 1,
    );
    if deepest_only {
        return format!(
            "SELECT {} AS level, {} AS k1, {} AS k2, {} AS k3, c.currency, {CELL_TEXTS} \
             FROM ({cells}) c",
            keys.len(),
            texts[0],
            texts[1],
            texts[2],
        );
    }
    format!(
        "SELECT {level} AS level, {} AS k1, {} AS k2, {} AS k3, c.currency, {GROUP_SUMS} \
         FROM ({cells}) c \
         GROUP BY GROUPING SETS ({})",
        texts[0],
        texts[1],
        texts[2],
        sets.join(", ")
    )
}

/// The summary's statement as the repository runs it from `source` (parameters as in
/// `statements/report_base.sql`), for the benchmark to plan and time it directly.
pub fn summary_statement(source: Source, group_by: &[GroupKey]) -> String {
    summary_sql(source, group_by)
}

/// The summary's statement. Without a tag key: the groups of the deepest level of `group_by`
/// alone (the totals without keys), each level above summed from them by [`with_upper_levels`]
/// (in the database, the grouping sets of a year by project and day took twice as long as its
/// deepest groups alone). With one: the totals (level 0) and the groups of every level, since
/// keys before a tag key count each entry once and from the tag key on an entry counts under
/// each of its tags (and "no tag" when it has none), so those levels are summed over the
/// entries joined to their tags, in a second select.
fn summary_sql(source: Source, group_by: &[GroupKey]) -> String {
    let select = match group_by.iter().position(|k| *k == GroupKey::Tag) {
        None => grouped_select(source, group_by, group_by.len()..=group_by.len()),
        Some(tag) => format!(
            "{}\nUNION ALL {}",
            grouped_select(source, &group_by[..tag], 0..=tag),
            grouped_select(source, group_by, tag + 1..=group_by.len())
        ),
    };
    format!("{}\n{select}", source.base())
}

#[derive(QueryableByName)]
struct GroupRow {
    #[diesel(sql_type = Integer)]
    level: i32,
    #[diesel(sql_type = Nullable<Text>)]
    k1: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    k2: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    k3: Option<String>,
    #[diesel(sql_type = Text)]
    currency: String,
    #[diesel(sql_type = Text)]
    seconds: String,
    #[diesel(sql_type = Text)]
    billable_seconds: String,
    #[diesel(sql_type = Text)]
    rounded: String,
    #[diesel(sql_type = Text)]
    entries: String,
    #[diesel(sql_type = Text)]
    bill: String,
    #[diesel(sql_type = Text)]
    cost: String,
}

/// `rows` (the groups of the deepest level, each of one currency) and, for every level above,
/// its groups summed from them: what the grouping sets of every level would answer, a group's
/// currencies in one row.
fn with_upper_levels(rows: Vec<SummaryRow>, depth: usize) -> DomainResult<Vec<SummaryRow>> {
    let mut upper: HashMap<Vec<GroupValue>, Figures> = HashMap::new();
    for row in &rows {
        for above in 0..depth.min(row.values.len()) {
            upper
                .entry(row.values[..above].to_vec())
                .or_default()
                .add(&row.figures)?;
        }
    }
    let mut all = rows;
    all.extend(
        upper
            .into_iter()
            .map(|(values, figures)| SummaryRow { values, figures }),
    );
    Ok(all)
}

/// The refusal of a report whose sums pass what a figure can hold.
fn too_large() -> DomainError {
    DomainError::Validation(
        "The report's figures are too large to sum; narrow the period or the filter".to_owned(),
    )
}

impl GroupRow {
    fn figures(&self) -> DomainResult<Figures> {
        let number = |text: &str| text.parse::<i64>().map_err(|_| too_large());
        Ok(Figures {
            seconds: number(&self.seconds)?,
            billable_seconds: number(&self.billable_seconds)?,
            rounded_seconds: number(&self.rounded)?,
            entries: number(&self.entries)?,
            amounts: vec![Amounts {
                currency: self.currency.clone(),
                billable_minor: number(&self.bill)?,
                cost_minor: number(&self.cost)?,
            }],
        })
    }
}

/// Settings for one large aggregate, for the transaction a report's statement runs in: no JIT
/// compilation (its start-up costs more than it saves on a report), room to hash the cells in
/// memory, and a plan made for the call's own values: a generic plan cannot see that an empty
/// filter list filters nothing, expects one row, and then joins and groups row by row (ten times
/// slower on a year; docs/benchmarks.md, section 11).
pub const FOR_ONE_AGGREGATE: &str = "SET LOCAL jit = off; SET LOCAL work_mem = '64MB'; SET LOCAL plan_cache_mode = force_custom_plan";

/// Starts a report's transaction: one snapshot for the choice of its source and the statement
/// that reads it (a change of zone or rounding rebuilds the day totals in the transaction that
/// makes it), and [`FOR_ONE_AGGREGATE`].
async fn for_one_aggregate(conn: &mut AsyncPgConnection) -> QueryResult<()> {
    conn.batch_execute(&format!(
        "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY; {FOR_ONE_AGGREGATE}"
    ))
    .await
}

/// What a report of `filter` grouped by `keys` is summed from: the day totals when they hold
/// its answer (no member or tag filtered or grouped by, the workspace's own zone, and rounding
/// none or the workspace's), else the entries. Read in the report's snapshot.
async fn source_for(
    conn: &mut AsyncPgConnection,
    workspace: WorkspaceId,
    filter: &ReportFilter,
    keys: &[GroupKey],
) -> QueryResult<Source> {
    #[derive(QueryableByName)]
    struct Settings {
        #[diesel(sql_type = Text)]
        timezone: String,
        #[diesel(sql_type = diesel::sql_types::SmallInt)]
        rounding_minutes: i16,
        #[diesel(sql_type = Text)]
        rounding_mode: String,
    }
    if !filter.tag_ids.is_empty()
        || !filter.user_ids.is_empty()
        || keys
            .iter()
            .any(|k| matches!(k, GroupKey::Tag | GroupKey::User))
    {
        return Ok(Source::Entries);
    }
    let settings: Option<Settings> = diesel::sql_query(
        "SELECT timezone, rounding_minutes, rounding_mode FROM workspaces WHERE id = $1",
    )
    .bind::<SqlUuid, _>(workspace.0)
    .get_result(conn)
    .await
    .optional()?;
    let serves = settings.is_some_and(|s| {
        s.timezone == filter.timezone
            && (filter.rounding.minutes == 0
                || (i32::from(s.rounding_minutes) == i32::from(filter.rounding.minutes)
                    && s.rounding_mode == filter.rounding.mode.as_str()))
    });
    Ok(if serves {
        Source::DayTotals
    } else {
        Source::Entries
    })
}

/// The names of the things of `key` among `ids`, by id text.
async fn names(
    conn: &mut AsyncPgConnection,
    workspace: WorkspaceId,
    key: GroupKey,
    ids: Vec<Uuid>,
) -> QueryResult<HashMap<String, String>> {
    #[derive(QueryableByName)]
    struct Name {
        #[diesel(sql_type = Text)]
        id: String,
        #[diesel(sql_type = Text)]
        name: String,
    }
    let table = match key {
        GroupKey::Client => {
            "SELECT id::text, name FROM clients WHERE workspace_id = $1 AND id = ANY ($2)"
        }
        GroupKey::Project => {
            "SELECT id::text, name FROM projects WHERE workspace_id = $1 AND id = ANY ($2)"
        }
        GroupKey::Task => {
            "SELECT id::text, name FROM tasks WHERE workspace_id = $1 AND id = ANY ($2)"
        }
        GroupKey::Tag => {
            "SELECT id::text, name FROM tags WHERE workspace_id = $1 AND id = ANY ($2)"
        }
        GroupKey::User => {
            "SELECT u.id::text, u.name FROM users u JOIN memberships m ON m.user_id = u.id \
                           WHERE m.workspace_id = $1 AND u.id = ANY ($2)"
        }
        GroupKey::Day | GroupKey::Week | GroupKey::Month => return Ok(HashMap::new()),
    };
    let rows: Vec<Name> = diesel::sql_query(table)
        .bind::<SqlUuid, _>(workspace.0)
        .bind::<Array<SqlUuid>, _>(ids)
        .load(conn)
        .await?;
    Ok(rows.into_iter().map(|n| (n.id, n.name)).collect())
}

use diesel::result::QueryResult;

/// The label of "none" of a key.
fn none_label(key: GroupKey) -> &'static str {
    match key {
        GroupKey::Client => "No client",
        GroupKey::Project => "No project",
        GroupKey::Task => "No task",
        GroupKey::Tag => "No tag",
        GroupKey::User => "Unknown member",
        GroupKey::Day | GroupKey::Week | GroupKey::Month => "",
    }
}

/// [`ReportRepository`] on PostgreSQL.
#[derive(Clone)]
pub struct PgReportRepository {
    pool: PgPool,
}

opaque_debug!(PgReportRepository);

impl PgReportRepository {
    /// The repository on `pool`.
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

#[derive(QueryableByName)]
struct DetailRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlDate)]
    day: Date,
    #[diesel(sql_type = Timestamptz)]
    start_at: OffsetDateTime,
    #[diesel(sql_type = Timestamptz)]
    end_at: OffsetDateTime,
    #[diesel(sql_type = BigInt)]
    seconds: i64,
    #[diesel(sql_type = BigInt)]
    rounded: i64,
    #[diesel(sql_type = Text)]
    description: String,
    #[diesel(sql_type = Bool)]
    billable: bool,
    #[diesel(sql_type = SqlUuid)]
    user_id: Uuid,
    #[diesel(sql_type = Text)]
    user_name: String,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    client_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    client_name: Option<String>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    project_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    project_name: Option<String>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    task_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    task_name: Option<String>,
    #[diesel(sql_type = Array<Text>)]
    tag_ids: Vec<String>,
    #[diesel(sql_type = Array<Text>)]
    tag_names: Vec<String>,
    #[diesel(sql_type = Text)]
    currency: String,
    #[diesel(sql_type = Nullable<BigInt>)]
    billable_rate_minor: Option<i64>,
    #[diesel(sql_type = BigInt)]
    bill: i64,
    #[diesel(sql_type = Nullable<BigInt>)]
    cost_rate_minor: Option<i64>,
    #[diesel(sql_type = BigInt)]
    cost: i64,
}

fn named(id: Option<Uuid>, name: Option<String>) -> Option<Named> {
    Some(Named {
        id: id?.to_string(),
        name: name.unwrap_or_default(),
    })
}

impl From<DetailRow> for DetailedRow {
    fn from(r: DetailRow) -> Self {
        DetailedRow {
            id: TimeEntryId(r.id),
            date: r.day,
            start: r.start_at,
            end: r.end_at,
            seconds: r.seconds,
            rounded_seconds: r.rounded,
            description: r.description,
            billable: r.billable,
            user: Named {
                id: r.user_id.to_string(),
                name: r.user_name,
            },
            client: named(r.client_id, r.client_name),
            project: named(r.project_id, r.project_name),
            task: named(r.task_id, r.task_name),
            tags: r
                .tag_ids
                .into_iter()
                .zip(r.tag_names)
                .map(|(id, name)| Named { id, name })
                .collect(),
            currency: r.currency,
            billable_rate_minor: r.billable_rate_minor,
            billable_amount_minor: r.bill,
            cost_rate_minor: r.cost_rate_minor,
            cost_amount_minor: r.cost,
        }
    }
}

#[async_trait]
impl ReportRepository for PgReportRepository {
    async fn id_outside(
        &self,
        workspace: WorkspaceId,
        filter: &ReportFilter,
    ) -> DomainResult<Option<(&'static str, Uuid)>> {
        #[derive(QueryableByName)]
        struct Outside {
            #[diesel(sql_type = Text)]
            name: String,
            #[diesel(sql_type = SqlUuid)]
            id: Uuid,
        }
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let uuids = |v: Vec<Uuid>| v;
        let found: Option<Outside> =
            diesel::sql_query(include_str!("statements/report_ids_outside.sql"))
                .bind::<SqlUuid, _>(workspace.0)
                .bind::<Array<SqlUuid>, _>(uuids(filter.client_ids.iter().map(|i| i.0).collect()))
                .bind::<Array<SqlUuid>, _>(uuids(filter.project_ids.iter().map(|i| i.0).collect()))
                .bind::<Array<SqlUuid>, _>(uuids(filter.task_ids.iter().map(|i| i.0).collect()))
                .bind::<Array<SqlUuid>, _>(uuids(filter.tag_ids.iter().map(|i| i.0).collect()))
                .bind::<Array<SqlUuid>, _>(uuids(filter.user_ids.iter().map(|i| i.0).collect()))
                .get_result(&mut conn)
                .await
                .optional()
                .map_err(|e| map_db_error(e, "checking a report's filter"))?;
        Ok(found.map(|o| {
            let name = match o.name.as_str() {
                "client_ids" => "client_ids",
                "project_ids" => "project_ids",
                "task_ids" => "task_ids",
                "tag_ids" => "tag_ids",
                _ => "user_ids",
            };
            (name, o.id)
        }))
    }

    async fn totals(&self, workspace: WorkspaceId, filter: &ReportFilter) -> DomainResult<Figures> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        // The summary's statement without groups: its totals alone.
        let rows: Vec<GroupRow> = conn
            .transaction(async |conn| {
                for_one_aggregate(conn).await?;
                let source = source_for(conn, workspace, filter, &[]).await?;
                bind_base!(
                    diesel::sql_query(summary_sql(source, &[])),
                    workspace,
                    filter
                )
                .load(conn)
                .await
            })
            .await
            .map_err(|e| map_db_error(e, "summing a report"))?;
        let mut totals = Figures::default();
        for row in &rows {
            totals.add(&row.figures()?)?;
        }
        Ok(totals)
    }

    async fn summary(
        &self,
        workspace: WorkspaceId,
        filter: &ReportFilter,
        group_by: &[GroupKey],
    ) -> DomainResult<Vec<SummaryRow>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let rows: Vec<GroupRow> = conn
            .transaction(async |conn| {
                for_one_aggregate(conn).await?;
                let source = source_for(conn, workspace, filter, group_by).await?;
                bind_base!(
                    diesel::sql_query(summary_sql(source, group_by)),
                    workspace,
                    filter
                )
                .load(conn)
                .await
            })
            .await
            .map_err(|e| map_db_error(e, "summing a report"))?;
        // The names of every thing that appears, one look-up per key.
        let mut labels: Vec<HashMap<String, String>> = Vec::new();
        for (i, key) in group_by.iter().enumerate() {
            let ids: Vec<Uuid> = rows
                .iter()
                .filter_map(|r| [&r.k1, &r.k2, &r.k3][i].as_deref())
                .filter_map(|k| k.parse().ok())
                .collect();
            labels.push(
                names(&mut conn, workspace, *key, ids)
                    .await
                    .map_err(|e| map_db_error(e, "naming a report's groups"))?,
            );
        }
        let groups: Vec<SummaryRow> = rows
            .iter()
            .map(|row| {
                let depth = usize::try_from(row.level).unwrap_or(0);
                let values = [&row.k1, &row.k2, &row.k3]
                    .into_iter()
                    .take(depth)
                    .enumerate()
                    .map(|(i, key)| {
                        let label = match key {
                            None => none_label(group_by[i]).to_owned(),
                            Some(k) if group_by[i].has_id() => {
                                labels[i].get(k).cloned().unwrap_or_else(|| k.clone())
                            }
                            Some(period) => period.clone(),
                        };
                        GroupValue {
                            key: key.clone(),
                            label,
                        }
                    })
                    .collect();
                Ok(SummaryRow {
                    values,
                    figures: row.figures()?,
                })
            })
            .collect::<DomainResult<_>>()?;
        if group_by.contains(&GroupKey::Tag) {
            Ok(groups)
        } else {
            with_upper_levels(groups, group_by.len())
        }
    }

    async fn detailed(
        &self,
        workspace: WorkspaceId,
        filter: &ReportFilter,
        after: Option<Cursor>,
        limit: u32,
    ) -> DomainResult<Vec<DetailedRow>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let sql = format!("{BASE}\n{}", include_str!("statements/report_detailed.sql"));
        let rows: Vec<DetailRow> = bind_base!(diesel::sql_query(sql), workspace, filter)
            .bind::<Nullable<Timestamptz>, _>(after.map(|c| c.created_at))
            .bind::<Nullable<SqlUuid>, _>(after.map(|c| c.id))
            .bind::<BigInt, _>(i64::from(limit))
            .load(&mut conn)
            .await
            .map_err(|e| map_db_error(e, "reading a detailed report"))?;
        Ok(rows.into_iter().map(DetailedRow::from).collect())
    }

    async fn uninvoiced(
        &self,
        workspace: WorkspaceId,
        filter: &ReportFilter,
    ) -> DomainResult<Vec<UninvoicedRow>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        // Billable time only, whatever the filter says.
        let filter = &ReportFilter {
            billable: Some(true),
            ..filter.clone()
        };
        let keys = [GroupKey::Client, GroupKey::Project];
        let rows: Vec<GroupRow> = conn
            .transaction(async |conn| {
                for_one_aggregate(conn).await?;
                let source = source_for(conn, workspace, filter, &keys).await?;
                let sql = format!(
                    "{}\n{}",
                    source.base(),
                    grouped_select(source, &keys, 2..=2)
                );
                bind_base!(diesel::sql_query(sql), workspace, filter)
                    .load(conn)
                    .await
            })
            .await
            .map_err(|e| map_db_error(e, "reading the uninvoiced report"))?;
        let ids = |i: usize| -> Vec<Uuid> {
            rows.iter()
                .filter_map(|r| [&r.k1, &r.k2][i].as_deref())
                .filter_map(|k| k.parse().ok())
                .collect()
        };
        let clients = names(&mut conn, workspace, GroupKey::Client, ids(0))
            .await
            .map_err(|e| map_db_error(e, "naming a report's groups"))?;
        let projects = names(&mut conn, workspace, GroupKey::Project, ids(1))
            .await
            .map_err(|e| map_db_error(e, "naming a report's groups"))?;
        let thing = |key: &Option<String>, names: &HashMap<String, String>| {
            key.as_ref().map(|k| Named {
                id: k.clone(),
                name: names.get(k).cloned().unwrap_or_default(),
            })
        };
        let mut out: Vec<UninvoicedRow> = rows
            .iter()
            .map(|r| {
                Ok(UninvoicedRow {
                    client: thing(&r.k1, &clients),
                    project: thing(&r.k2, &projects),
                    figures: r.figures()?,
                })
            })
            .collect::<DomainResult<_>>()?;
        out.sort_by(|a, b| {
            let key = |r: &UninvoicedRow| {
                (
                    r.client.is_none(),
                    r.client.as_ref().map(|c| c.name.clone()),
                    r.project.is_none(),
                    r.project.as_ref().map(|p| p.name.clone()),
                    <[_]>::first(&r.figures.amounts).map(|a| a.currency.clone()),
                )
            };
            key(a).cmp(&key(b))
        });
        Ok(out)
    }
}
