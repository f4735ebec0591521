//! Invoices from tracked time (`docs/billing.md`, section 5): preview and create in one
//! transaction, the draft's edits, issue with the workspace's numbering, void, and payments. Only
//! owners and admins see or change invoices.

use std::sync::Arc;

use time::{Date, Duration};

use crate::accounts::model::{Principal, Workspace, WorkspaceSettings};
use crate::accounts::ports::WorkspaceRepository;
use crate::billing::model::invoice::{
    INVOICE_IS_DRAFT, INVOICE_IS_ISSUED, INVOICE_IS_VOID, MAX_EXTRA_LINES, MAX_INVOICE_DAYS,
    MAX_NOTES_CHARS, MAX_PAYMENT_NOTE_CHARS, MAX_REASON_CHARS, NOTHING_TO_INVOICE, time_lines,
};
use crate::billing::model::{
    ExtraLine, Invoice, InvoiceClient, InvoiceFilter, InvoiceSelection, InvoiceStatus, LineGroup,
    Payment, PaymentStatus, Percent, Totals,
};
use crate::billing::ports::{InvoicePdf, InvoiceRepository, InvoiceWrite};
use crate::error::{DomainError, DomainResult};
use crate::ids::{ClientId, EventId, InvoiceId, InvoiceLineId, PaymentId, ProjectId};
use crate::page::{Page, PageRequest};
use crate::system::{Clock, IdGenerator};
use crate::tracking::ports::ClientRepository;
use crate::webhooks::model::{Event, EventSubject, EventType};
use crate::writes::WriteOutcome;

/// What to invoice, parsed: a client's billable time in a period, grouped, with percentages,
/// notes and extra lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvoiceRequest {
    /// The client billed.
    pub client_id: ClientId,
    /// The first day (workspace's time zone).
    pub from: Date,
    /// The last day.
    pub to: Date,
    /// Only these projects of the client (empty: all).
    pub project_ids: Vec<ProjectId>,
    /// How time lines are grouped.
    pub group_by: Vec<LineGroup>,
    /// The tax, on what remains after the discount.
    pub tax_percent: Percent,
    /// The discount.
    pub discount_percent: Percent,
    /// Free text printed on the invoice.
    pub notes: Option<String>,
    /// Lines beyond time.
    pub extra_lines: Vec<ExtraLine>,
}

/// A change of a draft; `None` leaves a field as it is, `Some(None)` clears it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InvoicePatch {
    /// New notes.
    pub notes: Option<Option<String>>,
    /// A new issue date.
    pub issue_date: Option<Option<Date>>,
    /// A new due date.
    pub due_date: Option<Option<Date>>,
    /// A new tax.
    pub tax_percent: Option<Percent>,
    /// A new discount.
    pub discount_percent: Option<Percent>,
    /// New extra lines (replacing the old ones).
    pub extra_lines: Option<Vec<ExtraLine>>,
}

/// A payment to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPayment {
    /// Minor units, 1 to the balance.
    pub amount_minor: i64,
    /// The day it was paid.
    pub paid_on: Date,
    /// A note.
    pub note: Option<String>,
}

/// An invoice as answered: with its payment status on the workspace's today.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvoiceView {
    /// The invoice.
    pub invoice: Invoice,
    /// Its payment status today.
    pub payment_status: PaymentStatus,
}

/// Invoices for owners and admins.
#[derive(Clone)]
pub struct InvoiceService {
    invoices: Arc<dyn InvoiceRepository>,
    pdf: Arc<dyn InvoicePdf>,
    clients: Arc<dyn ClientRepository>,
    workspaces: Arc<dyn WorkspaceRepository>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
}

impl std::fmt::Debug for InvoiceService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InvoiceService").finish_non_exhaustive()
    }
}

/// Checks free text: no NUL, at most `max` characters; blank is none.
fn text(field: &str, value: Option<&str>, max: usize) -> DomainResult<Option<String>> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    crate::values::no_nul(field, value)?;
    if value.chars().count() > max {
        return Err(DomainError::validation(format!(
            "{field} must be at most {max} characters"
        )));
    }
    Ok(Some(value.to_owned()))
}

impl InvoiceService {
    /// Builds the service on its ports.
    pub fn new(
        invoices: Arc<dyn InvoiceRepository>,
        pdf: Arc<dyn InvoicePdf>,
        clients: Arc<dyn ClientRepository>,
        workspaces: Arc<dyn WorkspaceRepository>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> Self {
        Self {
            invoices,
            pdf,
            clients,
            workspaces,
            clock,
            ids,
        }
    }

    async fn workspace(&self, caller: &Principal) -> DomainResult<(Workspace, WorkspaceSettings)> {
        caller.require_admin()?;
        crate::accounts::services::workspace::workspace_and_settings(
            self.workspaces.as_ref(),
            caller.workspace_id,
        )
        .await
    }

    fn today(&self, workspace: &Workspace) -> DomainResult<Date> {
        crate::timefmt::local_day(self.clock.now(), &workspace.timezone)
    }

    fn view(invoice: Invoice, today: Date) -> InvoiceView {
        InvoiceView {
            payment_status: invoice.payment_status(today),
            invoice,
        }
    }

    /// The invoice `request` asks for, built from `entries` (the create's, or the preview's).
    fn draft(
        &self,
        request: &InvoiceRequest,
        selection: &InvoiceSelection,
        client: &InvoiceClient,
        workspace: &Workspace,
        settings: &WorkspaceSettings,
        entries: &[crate::billing::model::BillableEntry],
    ) -> DomainResult<Invoice> {
        if entries.is_empty() && request.extra_lines.is_empty() {
            return Err(DomainError::Conflict(NOTHING_TO_INVOICE.into()));
        }
        let mut lines = time_lines(
            entries,
            &request.group_by,
            settings.rounding,
            (request.from, request.to),
            || InvoiceLineId(self.ids.new_uuid()),
        );
        lines.extend(
            request
                .extra_lines
                .iter()
                .map(|extra| extra.line(InvoiceLineId(self.ids.new_uuid()))),
        );
        let totals = Totals::of(&lines, request.discount_percent, request.tax_percent)?;
        let now = self.clock.now();
        Ok(Invoice {
            id: InvoiceId(self.ids.new_uuid()),
            workspace_id: workspace.id,
            number: None,
            status: InvoiceStatus::Draft,
            client: client.clone(),
            issuer_name: workspace.name.clone(),
            currency: selection.currency.clone(),
            period_from: request.from,
            period_to: request.to,
            group_by: request.group_by.clone(),
            issue_date: None,
            due_date: None,
            discount_percent: request.discount_percent,
            tax_percent: request.tax_percent,
            lines,
            totals,
            payments: Vec::new(),
            notes: request.notes.clone(),
            void_reason: None,
            created_at: now,
            updated_at: now,
        })
    }

    /// Checks `request` and finds its client: the selection of entries it bills.
    async fn selection(
        &self,
        workspace: &Workspace,
        request: &InvoiceRequest,
    ) -> DomainResult<(InvoiceSelection, InvoiceClient)> {
        if request.to < request.from {
            return Err(DomainError::validation("to must not be before from"));
        }
        if (request.to - request.from).whole_days() > MAX_INVOICE_DAYS {
            return Err(DomainError::validation(format!(
                "from and to must be at most {MAX_INVOICE_DAYS} days apart"
            )));
        }
        if request.extra_lines.len() > MAX_EXTRA_LINES {
            return Err(DomainError::validation(format!(
                "extra_lines takes at most {MAX_EXTRA_LINES} lines"
            )));
        }
        let client = self
            .clients
            .get(workspace.id, request.client_id)
            .await?
            .ok_or_else(|| {
                DomainError::validation("client_id does not name a client of this workspace")
            })?;
        Ok((
            InvoiceSelection {
                workspace_id: workspace.id,
                client_id: client.id,
                currency: client.currency.clone(),
                project_ids: request.project_ids.clone(),
                from: request.from,
                to: request.to,
                timezone: workspace.timezone.clone(),
            },
            InvoiceClient {
                id: client.id,
                name: client.name,
                address: client.address,
            },
        ))
    }

    /// The event of `event_type` about `invoice` (as it is now) of `workspace`.
    fn event(
        &self,
        event_type: EventType,
        invoice: &Invoice,
        payment_status: PaymentStatus,
        workspace: &Workspace,
    ) -> DomainResult<Event> {
        crate::webhooks::model::event::event_of(
            EventId(self.ids.new_uuid()),
            invoice.workspace_id,
            event_type,
            &crate::payload::invoice(invoice, payment_status, workspace),
            invoice.updated_at,
            EventSubject {
                client_id: Some(invoice.client.id),
                ..EventSubject::default()
            },
            invoice.id,
        )
    }

    /// The events of a change from `before` to `after` (`docs/billing.md`, Events): issued,
    /// voided, and paid when an issued invoice's balance reaches zero (by a payment, or at the
    /// issue of an invoice with nothing to pay).
    fn events_of(
        &self,
        before: &Invoice,
        after: &Invoice,
        workspace: &Workspace,
        today: Date,
    ) -> DomainResult<Vec<Event>> {
        let status = after.payment_status(today);
        let mut events = Vec::new();
        match (before.status, after.status) {
            (InvoiceStatus::Draft, InvoiceStatus::Issued) => {
                events.push(self.event(EventType::InvoiceIssued, after, status, workspace)?);
            }
            (InvoiceStatus::Issued, InvoiceStatus::Void) => {
                events.push(self.event(EventType::InvoiceVoided, after, status, workspace)?);
            }
            _ => {}
        }
        let was_paid = before.status == InvoiceStatus::Issued && before.balance_minor() <= 0;
        if after.status == InvoiceStatus::Issued && after.balance_minor() <= 0 && !was_paid {
            events.push(self.event(EventType::InvoicePaid, after, status, workspace)?);
        }
        Ok(events)
    }

    /// Announces the invoices that became overdue: one `INVOICE_OVERDUE` per invoice, ever (the
    /// mark is stored with the event; several processes may run this at once). At most `limit`
    /// a call; returns how many it announced.
    pub async fn announce_overdue(&self, limit: u32) -> DomainResult<usize> {
        let mut announced = 0;
        let now = self.clock.now();
        for (invoice, workspace) in self.invoices.newly_overdue(now, limit).await? {
            let event = self.event(
                EventType::InvoiceOverdue,
                &invoice,
                PaymentStatus::Overdue,
                &workspace,
            )?;
            if self.invoices.mark_overdue(&invoice, now, &event).await? == WriteOutcome::Applied {
                announced += 1;
            }
        }
        Ok(announced)
    }

    /// Checks notes of a request.
    pub fn notes(value: Option<&str>) -> DomainResult<Option<String>> {
        text("notes", value, MAX_NOTES_CHARS)
    }

    /// The invoice a create would make now, written nowhere (no id is kept).
    pub async fn preview(
        &self,
        caller: &Principal,
        request: &InvoiceRequest,
    ) -> DomainResult<InvoiceView> {
        let (workspace, settings) = self.workspace(caller).await?;
        let (selection, client) = self.selection(&workspace, request).await?;
        let entries = self.invoices.billable(&selection).await?;
        let invoice = self.draft(
            request, &selection, &client, &workspace, &settings, &entries,
        )?;
        Ok(Self::view(invoice, self.today(&workspace)?))
    }

    /// Creates the draft: its lines and the link of every entry billed, in one transaction.
    pub async fn create(
        &self,
        caller: &Principal,
        request: &InvoiceRequest,
    ) -> DomainResult<InvoiceView> {
        let (workspace, settings) = self.workspace(caller).await?;
        let (selection, client) = self.selection(&workspace, request).await?;
        let build = |entries: Vec<crate::billing::model::BillableEntry>| {
            let invoice = self.draft(
                request, &selection, &client, &workspace, &settings, &entries,
            )?;
            let created = self.event(
                EventType::InvoiceCreated,
                &invoice,
                PaymentStatus::Unpaid,
                &workspace,
            )?;
            Ok((invoice, vec![created]))
        };
        let invoice = self.invoices.create(&selection, &build).await?;
        Ok(Self::view(invoice, self.today(&workspace)?))
    }

    /// `view` as a PDF document. CPU work: run it on a blocking thread.
    pub fn render(&self, view: &InvoiceView) -> DomainResult<Vec<u8>> {
        self.pdf.render(&view.invoice, view.payment_status)
    }

    /// The workspace's invoice `id`.
    pub async fn get(&self, caller: &Principal, id: InvoiceId) -> DomainResult<InvoiceView> {
        let (workspace, _) = self.workspace(caller).await?;
        let invoice = self.stored(caller, id).await?;
        Ok(Self::view(invoice, self.today(&workspace)?))
    }

    async fn stored(&self, caller: &Principal, id: InvoiceId) -> DomainResult<Invoice> {
        self.invoices
            .get(caller.workspace_id, id)
            .await?
            .ok_or(DomainError::NotFound("invoice"))
    }

    /// A page of the workspace's invoices, newest first.
    pub async fn list(
        &self,
        caller: &Principal,
        mut filter: InvoiceFilter,
        page: PageRequest,
    ) -> DomainResult<Page<InvoiceView>> {
        let (workspace, _) = self.workspace(caller).await?;
        let today = self.today(&workspace)?;
        filter.today = Some(today);
        let page = self
            .invoices
            .list(caller.workspace_id, &filter, page)
            .await?;
        Ok(Page {
            items: page
                .items
                .into_iter()
                .map(|i| Self::view(i, today))
                .collect(),
            next: page.next,
        })
    }

    /// Reads the invoice, checks and makes `change` of it, and answers it as stored after; tried
    /// again when a concurrent change of the same invoice came first.
    async fn change(
        &self,
        caller: &Principal,
        id: InvoiceId,
        change: impl Fn(&Invoice, &WorkspaceSettings, Date) -> DomainResult<Option<InvoiceWrite>>,
    ) -> DomainResult<Option<InvoiceView>> {
        let (workspace, settings) = self.workspace(caller).await?;
        let today = self.today(&workspace)?;
        for _ in 0..crate::writes::WRITE_ATTEMPTS {
            let before = self.stored(caller, id).await?;
            let Some(write) = change(&before, &settings, today)? else {
                return Ok(Some(Self::view(before, today)));
            };
            let at = self.clock.now().max(before.updated_at);
            let events = |after: &Invoice| self.events_of(&before, after, &workspace, today);
            if self.invoices.write(&before, &write, at, &events).await? == WriteOutcome::Applied {
                return match write {
                    InvoiceWrite::Delete => Ok(None),
                    _ => Ok(Some(Self::view(self.stored(caller, id).await?, today))),
                };
            }
        }
        Err(crate::writes::kept_changing("invoice"))
    }

    /// Changes a draft (409 `Invoice is issued` otherwise); the totals follow.
    pub async fn update(
        &self,
        caller: &Principal,
        id: InvoiceId,
        patch: &InvoicePatch,
    ) -> DomainResult<InvoiceView> {
        if patch
            .extra_lines
            .as_ref()
            .is_some_and(|l| l.len() > MAX_EXTRA_LINES)
        {
            return Err(DomainError::validation(format!(
                "extra_lines takes at most {MAX_EXTRA_LINES} lines"
            )));
        }
        let view = self
            .change(caller, id, |before, _, _| {
                require_draft(before)?;
                let mut after = before.clone();
                if let Some(notes) = &patch.notes {
                    after.notes = notes.clone();
                }
                if let Some(date) = patch.issue_date {
                    after.issue_date = date;
                }
                if let Some(date) = patch.due_date {
                    after.due_date = date;
                }
                if let (Some(issue), Some(due)) = (after.issue_date, after.due_date)
                    && due < issue
                {
                    return Err(DomainError::validation(
                        "due_date must not be before issue_date",
                    ));
                }
                if let Some(tax) = patch.tax_percent {
                    after.tax_percent = tax;
                }
                if let Some(discount) = patch.discount_percent {
                    after.discount_percent = discount;
                }
                if let Some(extra) = &patch.extra_lines {
                    after.lines.retain(|l| !l.extra);
                    after.lines.extend(
                        extra
                            .iter()
                            .map(|e| e.line(InvoiceLineId(self.ids.new_uuid()))),
                    );
                }
                after.recompute()?;
                if after.lines.is_empty() {
                    return Err(DomainError::Conflict(NOTHING_TO_INVOICE.into()));
                }
                Ok((after != *before).then(|| InvoiceWrite::Edit(Box::new(after))))
            })
            .await?;
        view.ok_or(DomainError::NotFound("invoice"))
    }

    /// Deletes a draft and releases its entries (409 `Invoice is issued` otherwise).
    pub async fn delete(&self, caller: &Principal, id: InvoiceId) -> DomainResult<()> {
        self.change(caller, id, |before, _, _| {
            require_draft(before)?;
            Ok(Some(InvoiceWrite::Delete))
        })
        .await
        .map(|_| ())
    }

    /// Issues a draft: the next number of the workspace's pattern, the issue date (the draft's
    /// or today) and the due date (the draft's or the issue date plus the payment terms).
    pub async fn issue(&self, caller: &Principal, id: InvoiceId) -> DomainResult<InvoiceView> {
        let view = self
            .change(caller, id, |before, settings, today| {
                match before.status {
                    InvoiceStatus::Draft => {}
                    InvoiceStatus::Issued => {
                        return Err(DomainError::Conflict(INVOICE_IS_ISSUED.into()));
                    }
                    InvoiceStatus::Void => {
                        return Err(DomainError::Conflict(INVOICE_IS_VOID.into()));
                    }
                }
                let issue_date = before.issue_date.unwrap_or(today);
                let due_date = before.due_date.unwrap_or_else(|| {
                    issue_date
                        .checked_add(Duration::days(i64::from(settings.payment_terms_days)))
                        .unwrap_or(issue_date)
                });
                if due_date < issue_date {
                    return Err(DomainError::validation(
                        "due_date must not be before issue_date",
                    ));
                }
                Ok(Some(InvoiceWrite::Issue {
                    pattern: settings.invoice_number_pattern.clone(),
                    issue_date,
                    due_date,
                }))
            })
            .await?;
        view.ok_or(DomainError::NotFound("invoice"))
    }

    /// Voids an issued invoice with a reason (1 to 1000 characters) and releases its entries. A
    /// draft is deleted instead (409), a void one stays as it is (409).
    pub async fn void(
        &self,
        caller: &Principal,
        id: InvoiceId,
        reason: Option<&str>,
    ) -> DomainResult<InvoiceView> {
        let reason = text("reason", reason, MAX_REASON_CHARS)?
            .ok_or_else(|| DomainError::validation("reason is required"))?;
        let view = self
            .change(caller, id, |before, _, _| {
                match before.status {
                    InvoiceStatus::Issued => {}
                    InvoiceStatus::Draft => {
                        return Err(DomainError::refused(
                            INVOICE_IS_DRAFT,
                            "A draft is not voided; delete it to release its entries",
                        ));
                    }
                    InvoiceStatus::Void => {
                        return Err(DomainError::Conflict(INVOICE_IS_VOID.into()));
                    }
                }
                Ok(Some(InvoiceWrite::Void {
                    reason: reason.clone(),
                }))
            })
            .await?;
        view.ok_or(DomainError::NotFound("invoice"))
    }

    /// Records a payment on an issued invoice: from 1 to the balance (400 otherwise).
    pub async fn add_payment(
        &self,
        caller: &Principal,
        id: InvoiceId,
        payment: &NewPayment,
    ) -> DomainResult<InvoiceView> {
        let note = text("note", payment.note.as_deref(), MAX_PAYMENT_NOTE_CHARS)?;
        let view = self
            .change(caller, id, |before, _, _| {
                require_issued(before)?;
                let balance = before.balance_minor();
                if payment.amount_minor < 1 || payment.amount_minor > balance {
                    return Err(DomainError::validation(format!(
                        "amount_minor must be an integer from 1 to the balance, {balance}, got: {}",
                        payment.amount_minor
                    )));
                }
                Ok(Some(InvoiceWrite::AddPayment(Payment {
                    id: PaymentId(self.ids.new_uuid()),
                    amount_minor: payment.amount_minor,
                    paid_on: payment.paid_on,
                    note: note.clone(),
                    created_at: self.clock.now(),
                })))
            })
            .await?;
        view.ok_or(DomainError::NotFound("invoice"))
    }

    /// Deletes a payment of an issued invoice (404 for one it does not have).
    pub async fn delete_payment(
        &self,
        caller: &Principal,
        id: InvoiceId,
        payment: PaymentId,
    ) -> DomainResult<InvoiceView> {
        let view = self
            .change(caller, id, |before, _, _| {
                if !before.payments.iter().any(|p| p.id == payment) {
                    return Err(DomainError::NotFound("payment"));
                }
                require_issued(before)?;
                Ok(Some(InvoiceWrite::DeletePayment(payment)))
            })
            .await?;
        view.ok_or(DomainError::NotFound("invoice"))
    }
}

/// `Ok` for a draft; 409 `Invoice is issued` (or `Invoice is void`) otherwise.
fn require_draft(invoice: &Invoice) -> DomainResult<()> {
    match invoice.status {
        InvoiceStatus::Draft => Ok(()),
        InvoiceStatus::Issued => Err(DomainError::Conflict(INVOICE_IS_ISSUED.into())),
        InvoiceStatus::Void => Err(DomainError::Conflict(INVOICE_IS_VOID.into())),
    }
}

/// `Ok` for an issued invoice; 409 otherwise.
fn require_issued(invoice: &Invoice) -> DomainResult<()> {
    match invoice.status {
        InvoiceStatus::Issued => Ok(()),
        InvoiceStatus::Draft => Err(DomainError::refused(
            INVOICE_IS_DRAFT,
            "Payments are recorded on issued invoices; issue it first",
        )),
        InvoiceStatus::Void => Err(DomainError::Conflict(INVOICE_IS_VOID.into())),
    }
}
