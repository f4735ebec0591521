//! Storage of invoices, their lines and payments, and the link of each billed entry to its
//! invoice (which locks the entry).

use async_trait::async_trait;
use time::{Date, OffsetDateTime};

use crate::accounts::model::{InvoiceNumberPattern, Workspace};
use crate::billing::model::{BillableEntry, Invoice, InvoiceFilter, InvoiceSelection, Payment};
use crate::error::DomainResult;
use crate::ids::{InvoiceId, PaymentId, WorkspaceId};
use crate::page::{Page, PageRequest};
use crate::webhooks::model::Event;
use crate::writes::WriteOutcome;

/// Builds the invoice from the entries it bills (oldest first), inside the create's transaction,
/// with the events its creation causes.
pub type InvoiceBuilder<'a> =
    dyn Fn(Vec<BillableEntry>) -> DomainResult<(Invoice, Vec<Event>)> + Send + Sync + 'a;

/// The events a change causes, from the invoice as the change left it (read in its transaction).
pub type InvoiceEvents<'a> = dyn Fn(&Invoice) -> DomainResult<Vec<Event>> + Send + Sync + 'a;

/// A change of a stored invoice, made only if it is still the version read (`updated_at`).
#[derive(Debug, Clone)]
pub enum InvoiceWrite {
    /// A draft's new header and extra lines (its time lines unchanged), and totals.
    Edit(Box<Invoice>),
    /// Deletes a draft and releases its entries.
    Delete,
    /// Issues a draft: the next number of `pattern`'s sequence for `issue_date`, the dates, and
    /// the issuer's and client's names as they are now.
    Issue {
        /// The workspace's pattern.
        pattern: InvoiceNumberPattern,
        /// The issue date (numbers count per the year and month of it).
        issue_date: Date,
        /// The due date.
        due_date: Date,
    },
    /// Voids an issued invoice with a reason and releases its entries.
    Void {
        /// Why.
        reason: String,
    },
    /// Records a payment.
    AddPayment(Payment),
    /// Deletes a payment; `NotFound("payment")` if the invoice has none of this id.
    DeletePayment(PaymentId),
}

/// Storage of invoices.
#[async_trait]
pub trait InvoiceRepository: Send + Sync {
    /// The entries `selection` bills, oldest first: the client's (through its projects), of the
    /// projects given if any, stopped, billable, with a billable rate, priced in the selection's
    /// currency, on no invoice, whose local day is in the period and not before the workspace's
    /// lock date.
    ///
    /// MUST return `Validation` when a project id is not one of the client's.
    async fn billable(&self, selection: &InvoiceSelection) -> DomainResult<Vec<BillableEntry>>;

    /// In one transaction: locks the entries `selection` bills (an entry another create took
    /// meanwhile is left out), builds the invoice from them with `build`, and stores it with its
    /// lines, the link of each entry to it and the events `build` gives. Two concurrent creates
    /// never bill one entry twice. Whatever `build` returns as an error is returned, with nothing
    /// written.
    async fn create(
        &self,
        selection: &InvoiceSelection,
        build: &InvoiceBuilder<'_>,
    ) -> DomainResult<Invoice>;

    /// The workspace's invoice `id`, with its lines and payments, or `None`.
    async fn get(&self, workspace: WorkspaceId, id: InvoiceId) -> DomainResult<Option<Invoice>>;

    /// A page of the workspace's invoices matching `filter`, newest first.
    async fn list(
        &self,
        workspace: WorkspaceId,
        filter: &InvoiceFilter,
        page: PageRequest,
    ) -> DomainResult<Page<Invoice>>;

    /// Applies `write` to `before` if the stored invoice is still that version, setting
    /// `updated_at` to `at`, and stores the events `events` gives for the invoice as the write
    /// left it (none for a deletion), atomically; `Raced` (nothing written) otherwise.
    ///
    /// MUST return `Conflict` when an issue's number is taken already (by an invoice numbered
    /// under another pattern), with nothing written.
    async fn write(
        &self,
        before: &Invoice,
        write: &InvoiceWrite,
        at: OffsetDateTime,
        events: &InvoiceEvents<'_>,
    ) -> DomainResult<WriteOutcome>;

    /// The issued invoices of every workspace whose due date (a day in the workspace's time
    /// zone) has passed with something left to pay, not yet announced overdue; at most `limit`,
    /// each with its workspace.
    async fn newly_overdue(
        &self,
        now: OffsetDateTime,
        limit: u32,
    ) -> DomainResult<Vec<(Invoice, Workspace)>>;

    /// Marks `invoice` announced overdue at `now` and stores `event`, atomically, if it is still
    /// issued, past due, unpaid and not yet announced (another process may have done it first:
    /// then nothing is written and `Raced` returned).
    async fn mark_overdue(
        &self,
        invoice: &Invoice,
        now: OffsetDateTime,
        event: &Event,
    ) -> DomainResult<WriteOutcome>;
}
