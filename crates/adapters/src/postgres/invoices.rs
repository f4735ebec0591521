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
    BillableEntry, Cursor, Event, Invoice, InvoiceClient, InvoiceFilter, InvoiceLine,
    InvoiceSelection, InvoiceStatus, LineGroup, Named, Page, PageRequest, Payment, Percent, Totals,
    Workspace,
};
use timetrack_domain::ports::{
    InvoiceBuilder, InvoiceEvents, InvoiceRepository, InvoiceWrite, WriteOutcome,
};
use timetrack_domain::{DomainError, DomainResult};
use uuid::Uuid;

use super::announce::DeliveryAnnouncer;
use super::errors::{map_db_error, map_pool_error, violated_constraint};
use super::outbox::record_events;
use super::pool::{PgPool, opaque_debug};
use super::rates::{price_written, pricing_lock};
use super::sql::named_query;

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
        let outside: Vec<Outside> = named_query!(
            include_str!("statements/invoice_projects_outside.sql");
            workspace_id: SqlUuid = s.workspace_id.0,
            client_id: SqlUuid = s.client_id.0,
            project_ids: Array<SqlUuid> = &projects,
        )
        .load(conn)
        .await?;
        if let Some(o) = <[_]>::first(&outside) {
            return Err(TxError::Domain(DomainError::validation(format!(
                "project_ids: {} is not a project of the client",
                o.id
            ))));
        }
    }
    // In a create, the rows are locked in the statement's order (see the file).
    macro_rules! billable {
        ($sql:expr) => {
            named_query!(
                $sql;
                workspace_id: SqlUuid = s.workspace_id.0,
                client_id: SqlUuid = s.client_id.0,
                project_ids: Array<SqlUuid> = &projects,
                from: SqlDate = s.from,
                to: SqlDate = s.to,
                currency: Text = &s.currency,
            )
            .load(conn)
            .await?
        };
    }
    let rows: Vec<BillableRow> = if lock {
        billable!(concat!(
            include_str!("statements/invoice_billable.sql"),
            "\nFOR UPDATE OF e"
        ))
    } else {
        billable!(include_str!("statements/invoice_billable.sql"))
    };
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
    let lines: Vec<LineRow> = named_query!(
        include_str!("statements/invoice_lines_of.sql");
        workspace_id: SqlUuid = workspace.0,
        invoice_ids: Array<SqlUuid> = &ids,
    )
    .load(conn)
    .await
    .map_err(|e| map_db_error(e, "reading invoice lines"))?;
    let payments: Vec<PaymentRow> = named_query!(
        include_str!("statements/invoice_payments_of.sql");
        workspace_id: SqlUuid = workspace.0,
        invoice_ids: Array<SqlUuid> = &ids,
    )
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
    named_query!(
        include_str!("statements/invoice_lines_insert.sql");
        entries: Array<SqlUuid> = &entries,
        entry_lines: Array<SqlUuid> = &entry_lines,
        workspace_id: SqlUuid = invoice.workspace_id.0,
        invoice_id: SqlUuid = invoice.id.0,
        ids: Array<SqlUuid> = &ids,
        positions: Array<Integer> = &positions,
        kinds: Array<Text> = &kinds,
        descriptions: Array<Text> = &descriptions,
        quantities: Array<BigInt> = &quantities,
        prices: Array<BigInt> = &prices,
        amounts: Array<BigInt> = &amounts,
    )
    .execute(conn)
    .await?;
    Ok(())
}

async fn insert_invoice(conn: &mut AsyncPgConnection, i: &Invoice) -> QueryResult<()> {
    let group_by: Vec<&str> = i.group_by.iter().map(|g| g.as_str()).collect();
    named_query!(
        include_str!("statements/invoice_insert.sql");
        id: SqlUuid = i.id.0,
        workspace_id: SqlUuid = i.workspace_id.0,
        client_id: SqlUuid = i.client.id.0,
        client_name: Text = &i.client.name,
        client_address: Nullable<Text> = i.client.address.as_deref(),
        issuer_name: Text = &i.issuer_name,
        currency: Text = &i.currency,
        period_from: SqlDate = i.period_from,
        period_to: SqlDate = i.period_to,
        group_by: Array<Text> = &group_by,
        issue_date: Nullable<SqlDate> = i.issue_date,
        due_date: Nullable<SqlDate> = i.due_date,
        discount_percent_milli: Integer = i.discount_percent.milli() as i32,
        tax_percent_milli: Integer = i.tax_percent.milli() as i32,
        subtotal_minor: BigInt = i.totals.subtotal_minor,
        discount_minor: BigInt = i.totals.discount_minor,
        tax_minor: BigInt = i.totals.tax_minor,
        total_minor: BigInt = i.totals.total_minor,
        notes: Nullable<Text> = i.notes.as_deref(),
        created_at: Timestamptz = i.created_at,
    )
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
    let released: Vec<Released> = named_query!(
        include_str!("statements/invoice_release_entries.sql");
        workspace_id: SqlUuid = invoice.workspace_id.0,
        invoice_id: SqlUuid = invoice.id.0,
    )
    .load(conn)
    .await?;
    let ids: Vec<Uuid> = released.into_iter().map(|r| r.id).collect();
    if !ids.is_empty() {
        price_written(conn, invoice.workspace_id, &ids).await?;
    }
    Ok(())
}

/// The invoice `id` of `workspace` with its lines and payments, as `conn` sees it.
async fn load(
    conn: &mut AsyncPgConnection,
    workspace: WorkspaceId,
    id: InvoiceId,
) -> DomainResult<Option<Invoice>> {
    let rows: Vec<InvoiceRow> = named_query!(
        concat!(
                include_str!("statements/invoice_columns.sql"),
                include_str!("statements/invoice_get.sql")
            );
        workspace_id: SqlUuid = workspace.0,
        id: SqlUuid = id.0,
    )
    .load(conn)
    .await
    .map_err(|e| map_db_error(e, "reading an invoice"))?;
    Ok(with_parts(conn, workspace, rows).await?.pop())
}

/// [`InvoiceRepository`] on PostgreSQL.
#[derive(Clone)]
pub struct PgInvoiceRepository {
    pool: PgPool,
    announcer: DeliveryAnnouncer,
}

opaque_debug!(PgInvoiceRepository);

impl PgInvoiceRepository {
    /// The repository on `pool`; `announcer` hears of the deliveries its events queue.
    pub fn new(pool: PgPool, announcer: DeliveryAnnouncer) -> Self {
        Self { pool, announcer }
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
        let (invoice, queued) = conn
            .transaction::<_, TxError, _>(async |conn| {
                // Shared: rates wait (the prices read stay the prices billed), entry writes do not.
                pricing_lock(conn, selection.workspace_id, false).await?;
                let entries = load_billable(conn, selection, true).await?;
                let ids: Vec<Uuid> = entries.iter().map(|e| e.id.0).collect();
                let (invoice, events) = build(entries).map_err(TxError::Domain)?;
                insert_invoice(conn, &invoice).await?;
                let lines: Vec<(i32, &InvoiceLine)> = invoice
                    .lines
                    .iter()
                    .enumerate()
                    .map(|(n, l)| (n as i32, l))
                    .collect();
                insert_lines(conn, &invoice, &lines).await?;
                named_query!(
                    include_str!("statements/invoice_link_entries.sql");
                    invoice_id: SqlUuid = invoice.id.0,
                    workspace_id: SqlUuid = selection.workspace_id.0,
                    entry_ids: Array<SqlUuid> = &ids,
                )
                .execute(conn)
                .await?;
                let queued = record_events(conn, &events).await?;
                Ok((invoice, queued))
            })
            .await
            .map_err(|e| e.into_domain("creating an invoice"))?;
        self.announcer.announce(queued);
        Ok(invoice)
    }

    async fn get(&self, workspace: WorkspaceId, id: InvoiceId) -> DomainResult<Option<Invoice>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        load(&mut conn, workspace, id).await
    }

    async fn list(
        &self,
        workspace: WorkspaceId,
        filter: &InvoiceFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Invoice>> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let rows: Vec<InvoiceRow> = named_query!(
            concat!(
                include_str!("statements/invoice_columns.sql"),
                include_str!("statements/invoice_list.sql")
            );
            workspace_id: SqlUuid = workspace.0,
            status: Nullable<Text> = filter.status.map(|s| s.as_str()),
            client_id: Nullable<SqlUuid> = filter.client_id.map(|c| c.0),
            payment_status: Nullable<Text> = filter.payment_status.map(|s| s.as_str()),
            today: Nullable<SqlDate> = filter.today,
            after_at: Nullable<Timestamptz> = page.after.map(|c| c.created_at),
            after_id: Nullable<SqlUuid> = page.after.map(|c| c.id),
            limit: BigInt = i64::from(page.limit) + 1,
        )
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
        events: &InvoiceEvents<'_>,
    ) -> DomainResult<WriteOutcome> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let result = conn
            .transaction::<_, TxError, _>(async |conn| {
                if matches!(write, InvoiceWrite::Delete | InvoiceWrite::Void { .. }) {
                    // Releasing re-prices the entries: as any entry write, under the shared lock.
                    pricing_lock(conn, before.workspace_id, false).await?;
                }
                let n = named_query!(
                    include_str!("statements/invoice_touch.sql");
                    at: Timestamptz = at,
                    workspace_id: SqlUuid = before.workspace_id.0,
                    id: SqlUuid = before.id.0,
                    before: Timestamptz = before.updated_at,
                )
                .execute(conn)
                .await?;
                if n == 0 {
                    return Ok(None);
                }
                apply(conn, before, write, at).await?;
                if matches!(write, InvoiceWrite::Delete) {
                    return Ok(Some(0));
                }
                let after = load(conn, before.workspace_id, before.id)
                    .await
                    .map_err(TxError::Domain)?
                    .ok_or_else(|| {
                        TxError::Domain(DomainError::Unexpected(anyhow::anyhow!(
                            "invoice {} vanished in its own write",
                            before.id
                        )))
                    })?;
                let events = events(&after).map_err(TxError::Domain)?;
                Ok(Some(record_events(conn, &events).await?))
            })
            .await;
        match result {
            Ok(queued) => Ok(self.announcer.outcome(queued)),
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
    async fn newly_overdue(
        &self,
        now: OffsetDateTime,
        limit: u32,
    ) -> DomainResult<Vec<(Invoice, Workspace)>> {
        #[derive(QueryableByName)]
        struct Overdue {
            #[diesel(embed)]
            invoice: InvoiceRow,
            #[diesel(sql_type = Text)]
            workspace_name: String,
            #[diesel(sql_type = Text)]
            workspace_timezone: String,
            #[diesel(sql_type = Text)]
            workspace_currency: String,
            #[diesel(sql_type = Timestamptz)]
            workspace_created_at: OffsetDateTime,
        }
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let rows: Vec<Overdue> = named_query!(
            concat!(
                include_str!("statements/invoice_columns.sql"),
                include_str!("statements/invoice_newly_overdue.sql")
            );
            now: Timestamptz = now,
            limit: BigInt = i64::from(limit),
        )
        .load(&mut conn)
        .await
        .map_err(|e| map_db_error(e, "finding overdue invoices"))?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let workspace = Workspace {
                id: WorkspaceId(row.invoice.workspace_id),
                name: row.workspace_name,
                timezone: row.workspace_timezone,
                currency: row.workspace_currency,
                created_at: row.workspace_created_at,
            };
            let invoice = with_parts(&mut conn, workspace.id, vec![row.invoice])
                .await?
                .pop()
                .ok_or_else(|| unexpected("an overdue invoice read without itself".into()))?;
            out.push((invoice, workspace));
        }
        Ok(out)
    }

    async fn mark_overdue(
        &self,
        invoice: &Invoice,
        now: OffsetDateTime,
        event: &Event,
    ) -> DomainResult<WriteOutcome> {
        let mut conn = self.pool.get().await.map_err(map_pool_error)?;
        let queued = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let n = named_query!(
                    include_str!("statements/invoice_mark_overdue.sql");
                    now: Timestamptz = now,
                    workspace_id: SqlUuid = invoice.workspace_id.0,
                    id: SqlUuid = invoice.id.0,
                )
                .execute(conn)
                .await?;
                if n == 0 {
                    return Ok(None);
                }
                record_events(conn, std::slice::from_ref(event))
                    .await
                    .map(Some)
            })
            .await
            .map_err(|e| map_db_error(e, "announcing an overdue invoice"))?;
        Ok(self.announcer.outcome(queued))
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
            named_query!(
                include_str!("statements/invoice_edit.sql");
                notes: Nullable<Text> = after.notes.as_deref(),
                issue_date: Nullable<SqlDate> = after.issue_date,
                due_date: Nullable<SqlDate> = after.due_date,
                discount_percent_milli: Integer = after.discount_percent.milli() as i32,
                tax_percent_milli: Integer = after.tax_percent.milli() as i32,
                subtotal_minor: BigInt = after.totals.subtotal_minor,
                discount_minor: BigInt = after.totals.discount_minor,
                tax_minor: BigInt = after.totals.tax_minor,
                total_minor: BigInt = after.totals.total_minor,
                workspace_id: SqlUuid = ws,
                id: SqlUuid = id,
            )
            .execute(conn)
            .await?;
            if after.extra_lines() != before.extra_lines() {
                named_query!(
                    include_str!("statements/invoice_delete_extra_lines.sql");
                    workspace_id: SqlUuid = ws,
                    id: SqlUuid = id,
                )
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
            named_query!(
                include_str!("statements/invoice_delete.sql");
                workspace_id: SqlUuid = ws,
                id: SqlUuid = id,
            )
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
            let next: Next = named_query!(
                include_str!("statements/invoice_next_number.sql");
                workspace_id: SqlUuid = ws,
                key: Text = pattern.sequence_key(year, month),
            )
            .get_result(conn)
            .await?;
            let number = pattern.render(year, month, next.last_value as u64);
            named_query!(
                include_str!("statements/invoice_issue.sql");
                number: Text = &number,
                issue_date: SqlDate = *issue_date,
                due_date: SqlDate = *due_date,
                at: Timestamptz = at,
                workspace_id: SqlUuid = ws,
                client_id: SqlUuid = before.client.id.0,
                id: SqlUuid = id,
            )
            .execute(conn)
            .await?;
        }
        InvoiceWrite::Void { reason } => {
            named_query!(
                include_str!("statements/invoice_void.sql");
                reason: Text = reason,
                at: Timestamptz = at,
                workspace_id: SqlUuid = ws,
                id: SqlUuid = id,
            )
            .execute(conn)
            .await?;
            release_entries(conn, before).await?;
        }
        InvoiceWrite::AddPayment(p) => {
            named_query!(
                include_str!("statements/invoice_payment_insert.sql");
                id: SqlUuid = p.id.0,
                workspace_id: SqlUuid = ws,
                invoice_id: SqlUuid = id,
                amount_minor: BigInt = p.amount_minor,
                paid_on: SqlDate = p.paid_on,
                note: Nullable<Text> = p.note.as_deref(),
                created_at: Timestamptz = p.created_at,
            )
            .execute(conn)
            .await?;
        }
        InvoiceWrite::DeletePayment(payment) => {
            let n = named_query!(
                include_str!("statements/invoice_payment_delete.sql");
                workspace_id: SqlUuid = ws,
                invoice_id: SqlUuid = id,
                id: SqlUuid = payment.0,
            )
            .execute(conn)
            .await?;
            if n == 0 {
                return Err(TxError::Domain(DomainError::NotFound("payment")));
            }
        }
    }
    Ok(())
}
