//! Reports in PostgreSQL: every figure is summed in the database from the entries' stored rates,
//! with `timetrack_code.rounded_seconds` and `timetrack_code.amount_minor` (the domain's rounding
//! and amount, held equal to them by a test), over one range scan of the workspace's entries by
//! start (`time_entries_workspace_start_idx`).
//!
//! The statements are put together from fixed fragments: the base (`statements/report_base.sql`,
//! the filter as bound parameters) and, for a summary, one grouped select per level of its keys.
//! No text of a request reaches the SQL; the keys choose among the fragments below.

use std::collections::HashMap;

use async_trait::async_trait;
use diesel::sql_types::{
    Array, BigInt, Bool, Date as SqlDate, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::{Date, OffsetDateTime};
use timetrack_domain::DomainResult;
use timetrack_domain::ids::{TimeEntryId, WorkspaceId};
use timetrack_domain::model::{
    Amounts, Cursor, DetailedRow, Figures, GroupKey, GroupValue, Named, ReportFilter, SummaryRow,
    UninvoicedRow,
};
use timetrack_domain::ports::ReportRepository;
use uuid::Uuid;

use super::errors::{map_db_error, map_pool_error};
use super::pool::{PgPool, opaque_debug};

/// The entries of a report with their figures: `priced` (see the file).
const BASE: &str = include_str!("statements/report_base.sql");

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

/// The text of a key's value in a grouped select over `priced x` (and `tt`, its tags).
fn key_sql(key: GroupKey) -> &'static str {
    match key {
        GroupKey::Client => "x.client_id::text",
        GroupKey::Project => "x.project_id::text",
        GroupKey::Task => "x.task_id::text",
        GroupKey::User => "x.user_id::text",
        GroupKey::Tag => "tt.tag_id::text",
        GroupKey::Day => "to_char(x.day, 'YYYY-MM-DD')",
        GroupKey::Week => "to_char(x.day, 'IYYY-\"W\"IW')",
        GroupKey::Month => "to_char(x.day, 'YYYY-MM')",
    }
}

/// The sums of a group, in the order [`GroupRow`] reads them.
const SUMS: &str = "x.currency, sum(x.seconds)::bigint AS seconds, \
    sum(CASE WHEN x.billable THEN x.seconds ELSE 0 END)::bigint AS billable_seconds, \
    sum(x.rounded)::bigint AS rounded, count(*)::bigint AS entries, \
    sum(x.bill)::bigint AS bill, sum(x.cost)::bigint AS cost";

/// The summary's statement: the totals (level 0) and one grouped select per level of
/// `group_by` (none: the totals alone).
fn summary_sql(group_by: &[GroupKey]) -> String {
    let mut sql = format!(
        "{BASE}\nSELECT 0 AS level, NULL::text AS k1, NULL::text AS k2, NULL::text AS k3, {SUMS} \
         FROM priced x GROUP BY x.currency"
    );
    for depth in 1..=group_by.len() {
        let keys = &group_by[..depth];
        let columns: Vec<String> = (0..3)
            .map(|i| {
                keys.get(i)
                    .map_or("NULL::text".to_owned(), |k| key_sql(*k).to_owned())
            })
            .collect();
        let tags = if keys.contains(&GroupKey::Tag) {
            " LEFT JOIN time_entry_tags tt ON tt.workspace_id = $1 AND tt.time_entry_id = x.id"
        } else {
            ""
        };
        sql.push_str(&format!(
            "\nUNION ALL SELECT {depth}, {}, {}, {}, {SUMS} FROM priced x{tags} \
             GROUP BY 2, 3, 4, x.currency",
            columns[0], columns[1], columns[2]
        ));
    }
    sql
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
    #[diesel(sql_type = BigInt)]
    seconds: i64,
    #[diesel(sql_type = BigInt)]
    billable_seconds: i64,
    #[diesel(sql_type = BigInt)]
    rounded: i64,
    #[diesel(sql_type = BigInt)]
    entries: i64,
    #[diesel(sql_type = BigInt)]
    bill: i64,
    #[diesel(sql_type = BigInt)]
    cost: i64,
}

impl GroupRow {
    fn figures(&self) -> Figures {
        Figures {
            seconds: self.seconds,
            billable_seconds: self.billable_seconds,
            rounded_seconds: self.rounded,
            entries: self.entries,
            amounts: vec![Amounts {
                currency: self.currency.clone(),
                billable_minor: self.bill,
                cost_minor: self.cost,
            }],
        }
    }
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
        let rows: Vec<GroupRow> =
            bind_base!(diesel::sql_query(summary_sql(&[])), workspace, filter)
                .load(&mut conn)
                .await
                .map_err(|e| map_db_error(e, "summing a report"))?;
        let mut totals = Figures::default();
        for row in &rows {
            totals.add(&row.figures());
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
        let rows: Vec<GroupRow> =
            bind_base!(diesel::sql_query(summary_sql(group_by)), workspace, filter)
                .load(&mut conn)
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
        Ok(rows
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
                SummaryRow {
                    values,
                    figures: row.figures(),
                }
            })
            .collect())
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
        let sql = format!(
            "{BASE}\nSELECT 2 AS level, x.client_id::text AS k1, x.project_id::text AS k2, \
             NULL::text AS k3, {SUMS} FROM priced x WHERE x.billable \
             GROUP BY 2, 3, x.currency"
        );
        let rows: Vec<GroupRow> = bind_base!(diesel::sql_query(sql), workspace, filter)
            .load(&mut conn)
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
            .map(|r| UninvoicedRow {
                client: thing(&r.k1, &clients),
                project: thing(&r.k2, &projects),
                figures: r.figures(),
            })
            .collect();
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
