//! Invoices in PostgreSQL: the create locks the entries it bills and links them in one
//! transaction; every later change is conditional on the version read; issue numbers come from a
//! per-workspace sequence row advanced in the issue's transaction (gap-free, serial).

use std::collections::HashMap;

use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{
    Array, BigInt, Date as SqlDate, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use time::{Date, OffsetDateTime};
use timetrack_domain::ids::{
    ClientId, InvoiceId, InvoiceLineId, PaymentId, TimeEntryId, WorkspaceId,
};
use timetrack_domain::model::{
    BillableEntry, Cursor, Invoice, InvoiceClient, InvoiceFilter, InvoiceLine, InvoiceSelection,
    InvoiceStatus, LineGroup, Named, Page, PageRequest, Payment, Percent, Totals,
};
use timetrack_domain::ports::{InvoiceBuilder, InvoiceRepository, InvoiceWrite, WriteOutcome};
use timetrack_domain::{DomainError, DomainResult};
use uuid::Uuid;

use super::errors::{map_db_error, map_pool_error, violated_constraint};
use super::pool::{PgPool, opaque_debug};
use super::rates::{price_written, pricing_lock};

/// The unique index of issued numbers.
const NUMBER_TAKEN: &str = "invoices_number_key";

/// An error inside a transaction: the database's, or a rule's (which rolls it back too).
enum TxError {
    Db(diesel::result::Error),
    Domain(DomainError),
}

impl From<diesel::result::Error> for TxError {
    fn from(e: diesel::result::Error) -> Self {
        Self::Db(e)
    }
}

impl TxError {
    fn into_domain(self, context: &'static str) -> DomainError {
        match self {
            Self::Db(e) => map_db_error(e, context),
            Self::Domain(e) => e,
        }
    }
}

#[derive(QueryableByName)]
struct BillableRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    user_id: Uuid,
    #[diesel(sql_type = Text)]
    user_name: String,
    #[diesel(sql_type = SqlUuid)]
    project_id: Uuid,
    #[diesel(sql_type = Text)]
    project_name: String,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    task_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    task_name: Option<String>,
    #[diesel(sql_type = SqlDate)]
    day: Date,
    #[diesel(sql_type = BigInt)]
    seconds: i64,
    #[diesel(sql_type = BigInt)]
    rate_minor: i64,
}

impl From<BillableRow> for BillableEntry {
    fn from(r: BillableRow) -> Self {
        Self {
            id: TimeEntryId(r.id),
            user: Named {
                id: r.user_id.to_string(),
                name: r.user_name,
            },
            project: Some(Named {
                id: r.project_id.to_string(),
                name: r.project_name,
            }),
            task: r.task_id.zip(r.task_name).map(|(id, name)| Named {
                id: id.to_string(),
                name,
            }),
            day: r.day,
            seconds: r.seconds,
            rate_minor: r.rate_minor,
        }
    }
}

/// The entries a selection bills (see [`InvoiceRepository::billable`]), oldest first; `FOR
/// UPDATE` in a create (rows are locked in that order, so two creates never deadlock, and one
/// that waited re-checks each row: an entry the other took is left out).
fn billable_sql(lock: bool) -> String {
    format!(
        "SELECT e.id, e.user_id, u.name AS user_name, e.project_id, p.name AS project_name, \
                e.task_id, t.name AS task_name, \
                (e.start_at AT TIME ZONE w.timezone)::date AS day, \
                date_part('epoch', e.end_at - e.start_at)::bigint AS seconds, \
                e.billable_rate_minor AS rate_minor \
         FROM time_entries e \
         JOIN workspaces w ON w.id = e.workspace_id \
         JOIN projects p ON p.workspace_id = e.workspace_id AND p.id = e.project_id \
         JOIN users u ON u.id = e.user_id \
         LEFT JOIN tasks t ON t.workspace_id = e.workspace_id AND t.id = e.task_id \
         WHERE e.workspace_id = $1 AND p.client_id = $2 \
           AND (cardinality($3::uuid[]) = 0 OR e.project_id = ANY ($3)) \
           AND e.start_at >= ($4::date::timestamp AT TIME ZONE w.timezone) \
           AND e.start_at < (($5::date + 1)::timestamp AT TIME ZONE w.timezone) \
           AND e.end_at IS NOT NULL AND e.billable AND e.billable_rate_minor IS NOT NULL \
           AND e.price_currency = $6 AND e.invoice_id IS NULL \
           AND (w.lock_before IS NULL \
                OR (e.start_at AT TIME ZONE w.timezone)::date >= w.lock_before) \
         ORDER BY e.start_at, e.id{}",
        if lock { " FOR UPDATE OF e" } else { "" }
    )
}

async fn load_billable(
    conn: &mut AsyncPgConnection,
    s: &InvoiceSelection,
    lock: bool,
) -> Result<Vec<BillableEntry>, TxError> {
    let projects: Vec<Uuid> = s.project_ids.iter().map(|p| p.0).collect();
    if !projects.is_empty() {
        #[derive(QueryableByName)]
        struct Outside {
            #[diesel(sql_type = SqlUuid)]
            id: Uuid,
        }
        let outside: Vec<Outside> = diesel::sql_query(
            "SELECT x.id FROM unnest($3::uuid[]) AS x(id) \
             WHERE NOT EXISTS (SELECT 1 FROM projects p \
                               WHERE p.workspace_id = $1 AND p.id = x.id AND p.client_id = $2) \
             LIMIT 1",
        )
        .bind::<SqlUuid, _>(s.workspace_id.0)
        .bind::<SqlUuid, _>(s.client_id.0)
        .bind::<Array<SqlUuid>, _>(&projects)
        .load(conn)
        .await?;
        if let Some(o) = <[_]>::first(&outside) {
            return Err(TxError::Domain(DomainError::validation(format!(
                "project_ids: {} is not a project of the client",
                o.id
            ))));
        }
    }
    let rows: Vec<BillableRow> = diesel::sql_query(billable_sql(lock))
        .bind::<SqlUuid, _>(s.workspace_id.0)
        .bind::<SqlUuid, _>(s.client_id.0)
        .bind::<Array<SqlUuid>, _>(&projects)
        .bind::<SqlDate, _>(s.from)
        .bind::<SqlDate, _>(s.to)
        .bind::<Text, _>(&s.currency)
        .load(conn)
        .await?;
    Ok(rows.into_iter().map(BillableEntry::from).collect())
}

#[derive(QueryableByName)]
struct InvoiceRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    workspace_id: Uuid,
    #[diesel(sql_type = Nullable<Text>)]
    number: Option<String>,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = SqlUuid)]
    client_id: Uuid,
    #[diesel(sql_type = Text)]
    client_name: String,
    #[diesel(sql_type = Nullable<Text>)]
    client_address: Option<String>,
    #[diesel(sql_type = Text)]
    issuer_name: String,
    #[diesel(sql_type = Text)]
    currency: String,
    #[diesel(sql_type = SqlDate)]
    period_from: Date,
    #[diesel(sql_type = SqlDate)]
    period_to: Date,
    #[diesel(sql_type = Array<Text>)]
    group_by: Vec<String>,
    #[diesel(sql_type = Nullable<SqlDate>)]
    issue_date: Option<Date>,
    #[diesel(sql_type = Nullable<SqlDate>)]
    due_date: Option<Date>,
    #[diesel(sql_type = Integer)]
    discount_percent_milli: i32,
    #[diesel(sql_type = Integer)]
    tax_percent_milli: i32,
    #[diesel(sql_type = BigInt)]
    subtotal_minor: i64,
    #[diesel(sql_type = BigInt)]
    discount_minor: i64,
    #[diesel(sql_type = BigInt)]
    tax_minor: i64,
    #[diesel(sql_type = BigInt)]
    total_minor: i64,
    #[diesel(sql_type = Nullable<Text>)]
    notes: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    void_reason: Option<String>,
    #[diesel(sql_type = Timestamptz)]
    created_at: OffsetDateTime,
    #[diesel(sql_type = Timestamptz)]
    updated_at: OffsetDateTime,
}

const INVOICE_COLUMNS: &str = "i.id, i.workspace_id, i.number, i.status, i.client_id, \
    i.client_name, i.client_address, i.issuer_name, i.currency, i.period_from, i.period_to, \
    i.group_by, i.issue_date, i.due_date, i.discount_percent_milli, i.tax_percent_milli, \
    i.subtotal_minor, i.discount_minor, i.tax_minor, i.total_minor, i.notes, i.void_reason, \
    i.created_at, i.updated_at";

#[derive(QueryableByName)]
struct LineRow {
    #[diesel(sql_type = SqlUuid)]
    invoice_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    description: String,
    #[diesel(sql_type = BigInt)]
    quantity_milli: i64,
    #[diesel(sql_type = BigInt)]
    unit_price_minor: i64,
    #[diesel(sql_type = BigInt)]
    amount_minor: i64,
    #[diesel(sql_type = Array<SqlUuid>)]
    entry_ids: Vec<Uuid>,
}

#[derive(QueryableByName)]
struct PaymentRow {
    #[diesel(sql_type = SqlUuid)]
    invoice_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = BigInt)]
    amount_minor: i64,
    #[diesel(sql_type = SqlDate)]
    paid_on: Date,
    #[diesel(sql_type = Nullable<Text>)]
    note: Option<String>,
    #[diesel(sql_type = Timestamptz)]
    created_at: OffsetDateTime,
}

fn unexpected(what: String) -> DomainError {
    DomainError::Unexpected(anyhow::anyhow!(what))
}

fn invoice_of(
    row: InvoiceRow,
    lines: Vec<InvoiceLine>,
    payments: Vec<Payment>,
) -> DomainResult<Invoice> {
    let percent = |milli: i32, what: &str| {
        u32::try_from(milli)
            .ok()
            .and_then(Percent::from_milli)
            .ok_or_else(|| unexpected(format!("stored invoice has {what} {milli}")))
    };
    Ok(Invoice {
        id: InvoiceId(row.id),
        workspace_id: WorkspaceId(row.workspace_id),
        number: row.number,
        status: InvoiceStatus::parse(&row.status)
            .map_err(|_| unexpected(format!("stored invoice has status {}", row.status)))?,
        client: InvoiceClient {
            id: ClientId(row.client_id),
            name: row.client_name,
            address: row.client_address,
        },
        issuer_name: row.issuer_name,
        currency: row.currency,
        period_from: row.period_from,
        period_to: row.period_to,
        group_by: LineGroup::parse_list(&row.group_by)
            .map_err(|_| unexpected("stored invoice has an unknown grouping".into()))?,
        issue_date: row.issue_date,
        due_date: row.due_date,
        discount_percent: percent(row.discount_percent_milli, "discount")?,
        tax_percent: percent(row.tax_percent_milli, "tax")?,
        lines,
        totals: Totals {
            subtotal_minor: row.subtotal_minor,
            discount_minor: row.discount_minor,
            tax_minor: row.tax_minor,
            total_minor: row.total_minor,
        },
        payments,
        notes: row.notes,
        void_reason: row.void_reason,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

/// The invoices of `rows` with their lines and payments, in the order of `rows`.
async fn with_parts(
    conn: &mut AsyncPgConnection,
    workspace: WorkspaceId,
    rows: Vec<InvoiceRow>,
) -> DomainResult<Vec<Invoice>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let lines: Vec<LineRow> = diesel::sql_query(
        "SELECT invoice_id, id, kind, description, quantity_milli, unit_price_minor, \
                amount_minor, entry_ids \
         FROM invoice_lines WHERE workspace_id = $1 AND invoice_id = ANY ($2) \
         ORDER BY invoice_id, position",
    )
    .bind::<SqlUuid, _>(workspace.0)
    .bind::<Array<SqlUuid>, _>(&ids)
    .load(conn)
    .await
    .map_err(|e| map_db_error(e, "reading invoice lines"))?;
    let payments: Vec<PaymentRow> = diesel::sql_query(
        "SELECT invoice_id, id, amount_minor, paid_on, note, created_at \
         FROM invoice_payments WHERE workspace_id = $1 AND invoice_id = ANY ($2) \
         ORDER BY invoice_id, created_at, id",
    )
    .bind::<SqlUuid, _>(workspace.0)
    .bind::<Array<SqlUuid>, _>(&ids)
    .load(conn)
    .await
    .map_err(|e| map_db_error(e, "reading invoice payments"))?;
    let mut lines_of: HashMap<Uuid, Vec<InvoiceLine>> = HashMap::new();
    for l in lines {
        lines_of.entry(l.invoice_id).or_default().push(InvoiceLine {
            id: InvoiceLineId(l.id),
            description: l.description,
            quantity_milli: l.quantity_milli,
            unit_price_minor: l.unit_price_minor,
            amount_minor: l.amount_minor,
            entry_ids: l.entry_ids.into_iter().map(TimeEntryId).collect(),
            extra: l.kind == "extra",
        });
    }
    let mut payments_of: HashMap<Uuid, Vec<Payment>> = HashMap::new();
    for p in payments {
        payments_of.entry(p.invoice_id).or_default().push(Payment {
            id: PaymentId(p.id),
            amount_minor: p.amount_minor,
            paid_on: p.paid_on,
            note: p.note,
            created_at: p.created_at,
        });
    }
    rows.into_iter()
        .map(|row| {
            let id = row.id;
            invoice_of(
                row,
                lines_of.remove(&id).unwrap_or_default(),
                payments_of.remove(&id).unwrap_or_default(),
            )
        })
        .collect()
}

/// Inserts `lines` of `invoice` at their positions (from `first`), with the entries they bill.
async fn insert_lines(
    conn: &mut AsyncPgConnection,
    invoice: &Invoice,
    lines: &[(i32, &InvoiceLine)],
) -> QueryResult<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = lines.iter().map(|(_, l)| l.id.0).collect();
    let positions: Vec<i32> = lines.iter().map(|(p, _)| *p).collect();
    let kinds: Vec<&str> = lines
        .iter()
        .map(|(_, l)| if l.extra { "extra" } else { "time" })
        .collect();
    let descriptions: Vec<&str> = lines.iter().map(|(_, l)| l.description.as_str()).collect();
    let quantities: Vec<i64> = lines.iter().map(|(_, l)| l.quantity_milli).collect();
    let prices: Vec<i64> = lines.iter().map(|(_, l)| l.unit_price_minor).collect();
    let amounts: Vec<i64> = lines.iter().map(|(_, l)| l.amount_minor).collect();
    let (entries, entry_lines): (Vec<Uuid>, Vec<Uuid>) = lines
        .iter()
        .flat_map(|(_, l)| l.entry_ids.iter().map(|e| (e.0, l.id.0)))
        .unzip();
    diesel::sql_query(
        "WITH m AS ( \
             SELECT m.line, array_agg(m.entry ORDER BY m.ord) AS ids \
             FROM unnest($10::uuid[], $11::uuid[]) WITH ORDINALITY AS m (entry, line, ord) \
             GROUP BY m.line) \
         INSERT INTO invoice_lines (id, workspace_id, invoice_id, position, kind, description, \
                                    quantity_milli, unit_price_minor, amount_minor, entry_ids) \
         SELECT l.id, $1, $2, l.position, l.kind, l.description, l.quantity, l.price, l.amount, \
                coalesce(m.ids, '{}') \
         FROM unnest($3::uuid[], $4::int[], $5::text[], $6::text[], $7::bigint[], $8::bigint[], \
                     $9::bigint[]) AS l (id, position, kind, description, quantity, price, amount) \
         LEFT JOIN m ON m.line = l.id",
    )
    .bind::<SqlUuid, _>(invoice.workspace_id.0)
    .bind::<SqlUuid, _>(invoice.id.0)
    .bind::<Array<SqlUuid>, _>(&ids)
    .bind::<Array<Integer>, _>(&positions)
    .bind::<Array<Text>, _>(&kinds)
    .bind::<Array<Text>, _>(&descriptions)
    .bind::<Array<BigInt>, _>(&quantities)
    .bind::<Array<BigInt>, _>(&prices)
    .bind::<Array<BigInt>, _>(&amounts)
    .bind::<Array<SqlUuid>, _>(&entries)
    .bind::<Array<SqlUuid>, _>(&entry_lines)
    .execute(conn)
    .await?;
    Ok(())
}

async fn insert_invoice(conn: &mut AsyncPgConnection, i: &Invoice) -> QueryResult<()> {
    let group_by: Vec<&str> = i.group_by.iter().map(|g| g.as_str()).collect();
    diesel::sql_query(
        "INSERT INTO invoices (id, workspace_id, number, status, client_id, client_name, \
             client_address, issuer_name, currency, period_from, period_to, group_by, issue_date, \
             due_date, discount_percent_milli, tax_percent_milli, subtotal_minor, discount_minor, \
             tax_minor, total_minor, notes, created_at, updated_at) \
         VALUES ($1, $2, NULL, 'draft', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, \
                 $16, $17, $18, $19, $20, $20)",
    )
    .bind::<SqlUuid, _>(i.id.0)
    .bind::<SqlUuid, _>(i.workspace_id.0)
    .bind::<SqlUuid, _>(i.client.id.0)
    .bind::<Text, _>(&i.client.name)
    .bind::<Nullable<Text>, _>(i.client.address.as_deref())
    .bind::<Text, _>(&i.issuer_name)
    .bind::<Text, _>(&i.currency)
    .bind::<SqlDate, _>(i.period_from)
    .bind::<SqlDate, _>(i.period_to)
    .bind::<Array<Text>, _>(&group_by)
    .bind::<Nullable<SqlDate>, _>(i.issue_date)
    .bind::<Nullable<SqlDate>, _>(i.due_date)
    .bind::<Integer, _>(i.discount_percent.milli() as i32)
    .bind::<Integer, _>(i.tax_percent.milli() as i32)
    .bind::<BigInt, _>(i.totals.subtotal_minor)
    .bind::<BigInt, _>(i.totals.discount_minor)
    .bind::<BigInt, _>(i.totals.tax_minor)
    .bind::<BigInt, _>(i.totals.total_minor)
    .bind::<Nullable<Text>, _>(i.notes.as_deref())
    .bind::<Timestamptz, _>(i.created_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Clears the invoice link of `invoice`'s entries and prices them again: unlocked, they take the
/// rates in force now, as any unlocked entry does.
async fn release_entries(conn: &mut AsyncPgConnection, invoice: &Invoice) -> QueryResult<()> {
    #[derive(QueryableByName)]
    struct Released {
        #[diesel(sql_type = SqlUuid)]
        id: Uuid,
    }
    let released: Vec<Released> = diesel::sql_query(
        "UPDATE time_entries SET invoice_id = NULL \
         WHERE workspace_id = $1 AND invoice_id = $2 RETURNING id",
    )
    .bind::<SqlUuid, _>(invoice.workspace_id.0)
    .bind::<SqlUuid, _>(invoice.id.0)
    .load(conn)
    .await?;
    let ids: Vec<Uuid> = released.into_iter().map(|r| r.id).collect();
    if !ids.is_empty() {
        price_written(conn, invoice.workspace_id, &ids).await?;
    }
    Ok(())
}

/// [`InvoiceRepository`] on PostgreSQL.
#[derive(Clone)]
pub struct PgInvoiceRepository {
    pool: PgPool,
}

opaque_debug!(PgInvoiceRepository);

impl PgInvoiceRepository {
    /// The repository on `pool`.
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

#[async_trait]
impl InvoiceRepository for PgInvoiceRepository {
    async fn billable(&self, selection: &InvoiceSelection) -> DomainResult<Vec<BillableEntry>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        load_billable(&mut conn, selection, false)
            .await
            .map_err(|e| e.into_domain("reading the entries to invoice"))
    }

    async fn create(
        &self,
        selection: &InvoiceSelection,
        build: &InvoiceBuilder<'_>,
    ) -> DomainResult<Invoice> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        conn.transaction::<_, TxError, _>(async |conn| {
            // Shared: rates wait (the prices read stay the prices billed), entry writes do not.
            pricing_lock(conn, selection.workspace_id, false).await?;
            let entries = load_billable(conn, selection, true).await?;
            let ids: Vec<Uuid> = entries.iter().map(|e| e.id.0).collect();
            let invoice = build(entries).map_err(TxError::Domain)?;
            insert_invoice(conn, &invoice).await?;
            let lines: Vec<(i32, &InvoiceLine)> = invoice
                .lines
                .iter()
                .enumerate()
                .map(|(n, l)| (n as i32, l))
                .collect();
            insert_lines(conn, &invoice, &lines).await?;
            diesel::sql_query(
                "UPDATE time_entries SET invoice_id = $2 WHERE workspace_id = $1 AND id = ANY ($3)",
            )
            .bind::<SqlUuid, _>(selection.workspace_id.0)
            .bind::<SqlUuid, _>(invoice.id.0)
            .bind::<Array<SqlUuid>, _>(&ids)
            .execute(conn)
            .await?;
            Ok(invoice)
        })
        .await
        .map_err(|e| e.into_domain("creating an invoice"))
    }

    async fn get(&self, workspace: WorkspaceId, id: InvoiceId) -> DomainResult<Option<Invoice>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let rows: Vec<InvoiceRow> = diesel::sql_query(format!(
            "SELECT {INVOICE_COLUMNS} FROM invoices i WHERE i.workspace_id = $1 AND i.id = $2"
        ))
        .bind::<SqlUuid, _>(workspace.0)
        .bind::<SqlUuid, _>(id.0)
        .load(&mut conn)
        .await
        .map_err(|e| map_db_error(e, "reading an invoice"))?;
        Ok(with_parts(&mut conn, workspace, rows).await?.pop())
    }

    async fn list(
        &self,
        workspace: WorkspaceId,
        filter: &InvoiceFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Invoice>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        // The payment status as `Invoice::payment_status` derives it, for the filter.
        let rows: Vec<InvoiceRow> = diesel::sql_query(format!(
            "SELECT {INVOICE_COLUMNS} FROM invoices i \
             CROSS JOIN LATERAL (SELECT coalesce(sum(p.amount_minor), 0) AS paid \
                                 FROM invoice_payments p \
                                 WHERE p.workspace_id = i.workspace_id AND p.invoice_id = i.id) pay \
             WHERE i.workspace_id = $1 \
               AND ($2::text IS NULL OR i.status = $2) \
               AND ($3::uuid IS NULL OR i.client_id = $3) \
               AND ($4::text IS NULL OR $4 = CASE \
                     WHEN i.status <> 'draft' AND i.total_minor - pay.paid <= 0 THEN 'paid' \
                     WHEN i.status = 'issued' AND $5::date > i.due_date THEN 'overdue' \
                     WHEN pay.paid > 0 THEN 'partially_paid' \
                     ELSE 'unpaid' END) \
               AND ($6::timestamptz IS NULL OR (i.created_at, i.id) < ($6, $7)) \
             ORDER BY i.created_at DESC, i.id DESC LIMIT $8"
        ))
        .bind::<SqlUuid, _>(workspace.0)
        .bind::<Nullable<Text>, _>(filter.status.map(|s| s.as_str()))
        .bind::<Nullable<SqlUuid>, _>(filter.client_id.map(|c| c.0))
        .bind::<Nullable<Text>, _>(filter.payment_status.map(|s| s.as_str()))
        .bind::<Nullable<SqlDate>, _>(filter.today)
        .bind::<Nullable<Timestamptz>, _>(page.after.map(|c| c.created_at))
        .bind::<Nullable<SqlUuid>, _>(page.after.map(|c| c.id))
        .bind::<BigInt, _>(i64::from(page.limit) + 1)
        .load(&mut conn)
        .await
        .map_err(|e| map_db_error(e, "listing invoices"))?;
        let invoices = with_parts(&mut conn, workspace, rows).await?;
        Ok(Page::from_overfetch(invoices, page.limit, |i| Cursor {
            created_at: i.created_at,
            id: i.id.0,
        }))
    }

    async fn write(
        &self,
        before: &Invoice,
        write: &InvoiceWrite,
        at: OffsetDateTime,
    ) -> DomainResult<WriteOutcome> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let result = conn
            .transaction::<_, TxError, _>(async |conn| {
                if matches!(write, InvoiceWrite::Delete | InvoiceWrite::Void { .. }) {
                    // Releasing re-prices the entries: as any entry write, under the shared lock.
                    pricing_lock(conn, before.workspace_id, false).await?;
                }
                let n = diesel::sql_query(
                    "UPDATE invoices SET updated_at = $4 \
                     WHERE workspace_id = $1 AND id = $2 AND updated_at = $3",
                )
                .bind::<SqlUuid, _>(before.workspace_id.0)
                .bind::<SqlUuid, _>(before.id.0)
                .bind::<Timestamptz, _>(before.updated_at)
                .bind::<Timestamptz, _>(at)
                .execute(conn)
                .await?;
                if n == 0 {
                    return Ok(WriteOutcome::Raced);
                }
                apply(conn, before, write, at).await?;
                Ok(WriteOutcome::Applied)
            })
            .await;
        match result {
            Ok(outcome) => Ok(outcome),
            Err(TxError::Db(e)) if violated_constraint(&e) == Some(NUMBER_TAKEN) => {
                Err(DomainError::Conflict(
                    "The next invoice number is taken by an earlier invoice; change the \
                     workspace's invoice_number_pattern"
                        .into(),
                ))
            }
            Err(e) => Err(e.into_domain("changing an invoice")),
        }
    }
}

/// Makes `write` of `before` (whose version the caller has just advanced to `at`).
async fn apply(
    conn: &mut AsyncPgConnection,
    before: &Invoice,
    write: &InvoiceWrite,
    at: OffsetDateTime,
) -> Result<(), TxError> {
    let (ws, id) = (before.workspace_id.0, before.id.0);
    match write {
        InvoiceWrite::Edit(after) => {
            diesel::sql_query(
                "UPDATE invoices SET notes = $3, issue_date = $4, due_date = $5, \
                     discount_percent_milli = $6, tax_percent_milli = $7, subtotal_minor = $8, \
                     discount_minor = $9, tax_minor = $10, total_minor = $11 \
                 WHERE workspace_id = $1 AND id = $2",
            )
            .bind::<SqlUuid, _>(ws)
            .bind::<SqlUuid, _>(id)
            .bind::<Nullable<Text>, _>(after.notes.as_deref())
            .bind::<Nullable<SqlDate>, _>(after.issue_date)
            .bind::<Nullable<SqlDate>, _>(after.due_date)
            .bind::<Integer, _>(after.discount_percent.milli() as i32)
            .bind::<Integer, _>(after.tax_percent.milli() as i32)
            .bind::<BigInt, _>(after.totals.subtotal_minor)
            .bind::<BigInt, _>(after.totals.discount_minor)
            .bind::<BigInt, _>(after.totals.tax_minor)
            .bind::<BigInt, _>(after.totals.total_minor)
            .execute(conn)
            .await?;
            if after.extra_lines() != before.extra_lines() {
                diesel::sql_query(
                    "DELETE FROM invoice_lines \
                     WHERE workspace_id = $1 AND invoice_id = $2 AND kind = 'extra'",
                )
                .bind::<SqlUuid, _>(ws)
                .bind::<SqlUuid, _>(id)
                .execute(conn)
                .await?;
                let extra: Vec<(i32, &InvoiceLine)> = after
                    .lines
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| l.extra)
                    .map(|(n, l)| (n as i32, l))
                    .collect();
                insert_lines(conn, after, &extra).await?;
            }
        }
        InvoiceWrite::Delete => {
            release_entries(conn, before).await?;
            diesel::sql_query("DELETE FROM invoices WHERE workspace_id = $1 AND id = $2")
                .bind::<SqlUuid, _>(ws)
                .bind::<SqlUuid, _>(id)
                .execute(conn)
                .await?;
        }
        InvoiceWrite::Issue {
            pattern,
            issue_date,
            due_date,
        } => {
            let (year, month) = (issue_date.year(), u8::from(issue_date.month()));
            #[derive(QueryableByName)]
            struct Next {
                #[diesel(sql_type = BigInt)]
                last_value: i64,
            }
            // The row lock serialises concurrent issues; a rollback gives the number back.
            let next: Next = diesel::sql_query(
                "INSERT INTO invoice_sequences AS s (workspace_id, key, last_value) \
                 VALUES ($1, $2, 1) \
                 ON CONFLICT (workspace_id, key) DO UPDATE SET last_value = s.last_value + 1 \
                 RETURNING s.last_value",
            )
            .bind::<SqlUuid, _>(ws)
            .bind::<Text, _>(pattern.sequence_key(year, month))
            .get_result(conn)
            .await?;
            let number = pattern.render(year, month, next.last_value as u64);
            // The issuer's and the client's names as they are now; a deleted client keeps the
            // names copied at the create.
            diesel::sql_query(
                "UPDATE invoices i SET number = $3, status = 'issued', issue_date = $4, \
                     due_date = $5, issued_at = $6, \
                     issuer_name = (SELECT w.name FROM workspaces w WHERE w.id = i.workspace_id), \
                     client_name = coalesce(c.name, i.client_name), \
                     client_address = CASE WHEN c.found THEN c.address ELSE i.client_address END \
                 FROM (SELECT bool_or(true) AS found, max(name) AS name, max(address) AS address \
                       FROM clients WHERE workspace_id = $1 AND id = $7) c \
                 WHERE i.workspace_id = $1 AND i.id = $2",
            )
            .bind::<SqlUuid, _>(ws)
            .bind::<SqlUuid, _>(id)
            .bind::<Text, _>(&number)
            .bind::<SqlDate, _>(*issue_date)
            .bind::<SqlDate, _>(*due_date)
            .bind::<Timestamptz, _>(at)
            .bind::<SqlUuid, _>(before.client.id.0)
            .execute(conn)
            .await?;
        }
        InvoiceWrite::Void { reason } => {
            diesel::sql_query(
                "UPDATE invoices SET status = 'void', void_reason = $3, voided_at = $4 \
                 WHERE workspace_id = $1 AND id = $2",
            )
            .bind::<SqlUuid, _>(ws)
            .bind::<SqlUuid, _>(id)
            .bind::<Text, _>(reason)
            .bind::<Timestamptz, _>(at)
            .execute(conn)
            .await?;
            release_entries(conn, before).await?;
        }
        InvoiceWrite::AddPayment(p) => {
            diesel::sql_query(
                "INSERT INTO invoice_payments \
                     (id, workspace_id, invoice_id, amount_minor, paid_on, note, created_at) \
                 VALUES ($3, $1, $2, $4, $5, $6, $7)",
            )
            .bind::<SqlUuid, _>(ws)
            .bind::<SqlUuid, _>(id)
            .bind::<SqlUuid, _>(p.id.0)
            .bind::<BigInt, _>(p.amount_minor)
            .bind::<SqlDate, _>(p.paid_on)
            .bind::<Nullable<Text>, _>(p.note.as_deref())
            .bind::<Timestamptz, _>(p.created_at)
            .execute(conn)
            .await?;
        }
        InvoiceWrite::DeletePayment(payment) => {
            let n = diesel::sql_query(
                "DELETE FROM invoice_payments \
                 WHERE workspace_id = $1 AND invoice_id = $2 AND id = $3",
            )
            .bind::<SqlUuid, _>(ws)
            .bind::<SqlUuid, _>(id)
            .bind::<SqlUuid, _>(payment.0)
            .execute(conn)
            .await?;
            if n == 0 {
                return Err(TxError::Domain(DomainError::NotFound("payment")));
            }
        }
    }
    Ok(())
}
