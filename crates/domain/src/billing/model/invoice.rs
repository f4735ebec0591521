//! Invoices from tracked time (`docs/billing.md`, section 5): what an invoice bills, its lines and
//! totals, its life cycle and its payments. Every figure is integer minor units of the invoice's
//! currency; a time line's amount is the sum of its entries' amounts, so an invoice adds up to the
//! minor unit with the reports over the same entries.

use std::collections::BTreeMap;

use time::{Date, OffsetDateTime};

use crate::accounts::model::Rounding;
use crate::billing::model::rate::amount_minor;
use crate::billing::model::report::Named;
use crate::error::{DomainError, DomainResult};
use crate::ids::{ClientId, ProjectId, TimeEntryId, WorkspaceId};
pub use crate::ids::{InvoiceId, InvoiceLineId, PaymentId};

/// 409 when a preview or create finds nothing to bill.
pub const NOTHING_TO_INVOICE: &str = "Nothing to invoice";
/// 409 when a change is asked of an issued invoice that only a draft takes.
pub const INVOICE_IS_ISSUED: &str = "Invoice is issued";
/// 409 when a change is asked of a void invoice.
pub const INVOICE_IS_VOID: &str = "Invoice is void";
/// 409 when an issued invoice's step is asked of a draft.
pub const INVOICE_IS_DRAFT: &str = "Invoice is a draft";
/// 409 for a change of a locked entry (`docs/billing.md`, section 6), with a `detail`.
pub const ENTRY_LOCKED: &str = "Time entry is locked";

/// The 409 for a change of an entry on invoice `id` (numbered `number` once issued).
pub fn locked_by_invoice(id: InvoiceId, number: Option<&str>) -> DomainError {
    DomainError::refused(
        ENTRY_LOCKED,
        match number {
            Some(number) => {
                format!("The entry is on invoice {number} ({id}); void it to change the entry")
            }
            None => {
                format!("The entry is on draft invoice {id}; delete the draft to change the entry")
            }
        },
    )
}

/// The longest period of an invoice, in days (`to - from`), as for reports.
pub const MAX_INVOICE_DAYS: i64 = 366;
/// The most extra lines of an invoice.
pub const MAX_EXTRA_LINES: usize = 100;
/// The largest quantity of an extra line, in thousandths (1,000,000.000).
pub const MAX_QUANTITY_MILLI: i64 = 1_000_000_000;
/// The largest unit price of an extra line, in minor units (as for an hourly rate).
pub const MAX_UNIT_PRICE_MINOR: i64 = 1_000_000_000;
/// The longest description of an extra line, in characters.
pub const MAX_LINE_DESCRIPTION_CHARS: usize = 500;
/// The longest notes of an invoice, in characters.
pub const MAX_NOTES_CHARS: usize = 5000;
/// The longest reason of a void, in characters.
pub const MAX_REASON_CHARS: usize = 1000;
/// The longest note of a payment, in characters.
pub const MAX_PAYMENT_NOTE_CHARS: usize = 1000;
/// The largest sum an invoice holds, in minor units: every figure stays an exact JSON number.
pub const MAX_INVOICE_MINOR: i64 = 9_000_000_000_000_000 / 1000;

/// Where an invoice is in its life: `draft` → `issued` → `void`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InvoiceStatus {
    /// Editable and deletable; its entries are locked.
    Draft,
    /// Numbered and frozen; takes payments.
    Issued,
    /// Ended; its entries are released.
    Void,
}

impl InvoiceStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Issued => "issued",
            Self::Void => "void",
        }
    }

    /// The status named `value`.
    pub fn parse(value: &str) -> DomainResult<Self> {
        match value {
            "draft" => Ok(Self::Draft),
            "issued" => Ok(Self::Issued),
            "void" => Ok(Self::Void),
            other => Err(DomainError::validation(format!(
                "status must be draft, issued or void, got: {other}"
            ))),
        }
    }
}

/// How much of an invoice is paid, derived from its payments and due date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PaymentStatus {
    /// Nothing paid (and not past due).
    Unpaid,
    /// Some paid, some left (and not past due).
    PartiallyPaid,
    /// Nothing left to pay.
    Paid,
    /// Issued, something left to pay, and the due date has passed.
    Overdue,
}

impl PaymentStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unpaid => "unpaid",
            Self::PartiallyPaid => "partially_paid",
            Self::Paid => "paid",
            Self::Overdue => "overdue",
        }
    }

    /// The payment status named `value`.
    pub fn parse(value: &str) -> DomainResult<Self> {
        match value {
            "unpaid" => Ok(Self::Unpaid),
            "partially_paid" => Ok(Self::PartiallyPaid),
            "paid" => Ok(Self::Paid),
            "overdue" => Ok(Self::Overdue),
            other => Err(DomainError::validation(format!(
                "payment_status must be unpaid, partially_paid, paid or overdue, got: {other}"
            ))),
        }
    }
}

/// What time lines are grouped by, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LineGroup {
    /// The entry's project.
    Project,
    /// The entry's task (named with its project).
    Task,
    /// The member who tracked it.
    User,
    /// Its day in the workspace's time zone.
    Day,
}

impl LineGroup {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::Task => "task",
            Self::User => "user",
            Self::Day => "day",
        }
    }

    /// A `group_by` list: each of `project`, `task`, `user`, `day` at most once.
    pub fn parse_list(values: &[String]) -> DomainResult<Vec<Self>> {
        let mut out = Vec::with_capacity(values.len());
        for value in values {
            let group = match value.as_str() {
                "project" => Self::Project,
                "task" => Self::Task,
                "user" => Self::User,
                "day" => Self::Day,
                other => {
                    return Err(DomainError::validation(format!(
                        "group_by takes project, task, user and day, got: {other}"
                    )));
                }
            };
            if out.contains(&group) {
                return Err(DomainError::validation(format!(
                    "group_by names {value} twice"
                )));
            }
            out.push(group);
        }
        Ok(out)
    }
}

/// A percentage in thousandths of a percent, 0 to 100 % (`12.5` is 12,500).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Percent(u32);

impl Percent {
    /// 100 %.
    pub const HUNDRED: u32 = 100_000;

    /// The percentage `value` of field `field` (a decimal with at most 3 decimals, 0 to 100).
    pub fn parse(field: &str, value: &str) -> DomainResult<Self> {
        let milli = parse_milli(value).filter(|m| (0..=i64::from(Self::HUNDRED)).contains(m));
        match milli {
            Some(milli) => Ok(Self(milli as u32)),
            None => Err(DomainError::validation(format!(
                "{field} must be a number from 0 to 100 with at most 3 decimals, got: {value}"
            ))),
        }
    }

    /// From thousandths of a percent, if within 0 to 100 %.
    pub fn from_milli(milli: u32) -> Option<Self> {
        (milli <= Self::HUNDRED).then_some(Self(milli))
    }

    /// Thousandths of a percent.
    pub fn milli(self) -> u32 {
        self.0
    }

    /// `round_half_up(amount × self / 100)` for a non-negative amount.
    pub fn of(self, amount: i64) -> i64 {
        let product = i128::from(amount.max(0)) * i128::from(self.0);
        i64::try_from((product + i128::from(Self::HUNDRED / 2)) / i128::from(Self::HUNDRED))
            .unwrap_or(i64::MAX)
    }

    /// As a decimal string without trailing zeros (`"12.5"`, `"20"`).
    pub fn to_decimal(self) -> String {
        decimal_milli(i64::from(self.0), false)
    }
}

/// `value` (a decimal string with at most 3 decimals, no sign, no exponent) in thousandths.
pub fn parse_milli(value: &str) -> Option<i64> {
    let (whole, fraction) = value.split_once('.').unwrap_or((value, ""));
    if whole.is_empty()
        || whole.len() > 12
        || fraction.len() > 3
        || (value.contains('.') && fraction.is_empty())
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let whole: i64 = whole.parse().ok()?;
    let mut milli: i64 = 0;
    for (i, b) in fraction.bytes().enumerate() {
        milli += i64::from(b - b'0') * 10_i64.pow(2 - i as u32);
    }
    whole.checked_mul(1000)?.checked_add(milli)
}

/// Thousandths as a decimal: with exactly 3 decimals (`"1.500"`) or, `trim`med, without trailing
/// zeros (`"1.5"`, `"2"`).
pub fn decimal_milli(milli: i64, exact: bool) -> String {
    let sign = if milli < 0 { "-" } else { "" };
    let abs = milli.unsigned_abs();
    let text = format!("{sign}{}.{:03}", abs / 1000, abs % 1000);
    if exact {
        return text;
    }
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// An entry an invoice can bill: stopped, billable, priced, on no invoice, unlocked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BillableEntry {
    /// The entry.
    pub id: TimeEntryId,
    /// Who tracked it.
    pub user: Named,
    /// Its project, if any.
    pub project: Option<Named>,
    /// Its task, if any.
    pub task: Option<Named>,
    /// Its day in the workspace's time zone.
    pub day: Date,
    /// Its duration in whole seconds (before rounding).
    pub seconds: i64,
    /// Its billable rate, minor units an hour.
    pub rate_minor: i64,
}

/// A line of an invoice: time (the entries it bills, all at one unit price) or an extra line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvoiceLine {
    /// Identifier.
    pub id: InvoiceLineId,
    /// What it bills.
    pub description: String,
    /// Thousandths of the quantity (hours for time).
    pub quantity_milli: i64,
    /// Minor units per unit (an hour for time).
    pub unit_price_minor: i64,
    /// Minor units: the sum of its entries' amounts, or `round_half_up(quantity × unit price)`.
    pub amount_minor: i64,
    /// The entries it bills (none for an extra line), oldest first.
    pub entry_ids: Vec<TimeEntryId>,
    /// Whether it is an extra line (not time).
    pub extra: bool,
}

/// An extra line as asked for: a description, a quantity and a unit price.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraLine {
    /// What it bills.
    pub description: String,
    /// Thousandths of the quantity.
    pub quantity_milli: i64,
    /// Minor units per unit.
    pub unit_price_minor: i64,
}

impl ExtraLine {
    /// The line, checked: a description of 1 to 500 characters, a quantity from 0 to
    /// 1,000,000 (3 decimals), a unit price from 0 to 10^9 minor units.
    pub fn new(
        index: usize,
        description: &str,
        quantity_milli: i64,
        unit_price_minor: i64,
    ) -> DomainResult<Self> {
        let field = |name: &str| format!("extra_lines[{index}].{name}");
        let description = description.trim();
        crate::values::no_nul(&field("description"), description)?;
        if description.is_empty() || description.chars().count() > MAX_LINE_DESCRIPTION_CHARS {
            return Err(DomainError::validation(format!(
                "{} must have 1 to {MAX_LINE_DESCRIPTION_CHARS} characters",
                field("description")
            )));
        }
        if !(0..=MAX_QUANTITY_MILLI).contains(&quantity_milli) {
            return Err(DomainError::validation(format!(
                "{} must be from 0 to {} with at most 3 decimals",
                field("quantity"),
                MAX_QUANTITY_MILLI / 1000
            )));
        }
        if !(0..=MAX_UNIT_PRICE_MINOR).contains(&unit_price_minor) {
            return Err(DomainError::validation(format!(
                "{} must be an integer from 0 to {MAX_UNIT_PRICE_MINOR}",
                field("unit_price_minor")
            )));
        }
        Ok(Self {
            description: description.to_owned(),
            quantity_milli,
            unit_price_minor,
        })
    }

    /// `round_half_up(quantity × unit price)`: at most 10^15, exact.
    pub fn amount_minor(&self) -> i64 {
        let product = i128::from(self.quantity_milli) * i128::from(self.unit_price_minor);
        i64::try_from((product + 500) / 1000).unwrap_or(i64::MAX)
    }

    /// As an invoice line.
    pub fn line(&self, id: InvoiceLineId) -> InvoiceLine {
        InvoiceLine {
            id,
            description: self.description.clone(),
            quantity_milli: self.quantity_milli,
            unit_price_minor: self.unit_price_minor,
            amount_minor: self.amount_minor(),
            entry_ids: Vec::new(),
            extra: true,
        }
    }
}

/// The totals of an invoice: subtotal = Σ lines; the discount, then the tax on what remains, each
/// rounded half up once; total = subtotal − discount + tax.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Σ lines' amounts.
    pub subtotal_minor: i64,
    /// `round_half_up(subtotal × discount %)`.
    pub discount_minor: i64,
    /// `round_half_up((subtotal − discount) × tax %)`.
    pub tax_minor: i64,
    /// `subtotal − discount + tax`.
    pub total_minor: i64,
}

impl Totals {
    /// The totals of `lines` with `discount` and `tax`; a 400 when they pass
    /// [`MAX_INVOICE_MINOR`].
    pub fn of(lines: &[InvoiceLine], discount: Percent, tax: Percent) -> DomainResult<Self> {
        let subtotal = lines
            .iter()
            .try_fold(0_i64, |sum, line| sum.checked_add(line.amount_minor))
            .filter(|sum| *sum <= MAX_INVOICE_MINOR)
            .ok_or_else(too_large)?;
        let discount_minor = discount.of(subtotal);
        let tax_minor = tax.of(subtotal - discount_minor);
        let total = subtotal - discount_minor + tax_minor;
        if total > MAX_INVOICE_MINOR {
            return Err(too_large());
        }
        Ok(Self {
            subtotal_minor: subtotal,
            discount_minor,
            tax_minor,
            total_minor: total,
        })
    }
}

fn too_large() -> DomainError {
    DomainError::validation(format!(
        "the invoice's total would pass {MAX_INVOICE_MINOR} minor units; bill a shorter period \
         or fewer extra lines"
    ))
}

/// The time lines billing `entries`: one per group of `group_by` and unit price (a group whose
/// entries have two rates becomes two lines), ordered by the groups' names and then the price.
/// A line's quantity is its entries' durations after `rounding`, in hours to 3 decimals (half
/// up); its amount the sum of its entries' amounts. `entries` come oldest first, and each line
/// keeps them so. Without grouping, the description names the period.
pub fn time_lines(
    entries: &[BillableEntry],
    group_by: &[LineGroup],
    rounding: Rounding,
    period: (Date, Date),
    mut new_id: impl FnMut() -> InvoiceLineId,
) -> Vec<InvoiceLine> {
    #[derive(Default)]
    struct Sum {
        seconds: i64,
        amount: i64,
        ids: Vec<TimeEntryId>,
        description: String,
    }
    // The key sorts by names (then ids, so two projects of one name stay apart), then price.
    let mut groups: BTreeMap<(Vec<(String, String)>, i64), Sum> = BTreeMap::new();
    for entry in entries {
        let parts: Vec<(String, String)> = group_by
            .iter()
            .map(|group| group_part(entry, *group))
            .collect();
        let sum = groups.entry((parts, entry.rate_minor)).or_default();
        if sum.ids.is_empty() {
            sum.description = if group_by.is_empty() {
                format!(
                    "Time from {} to {}",
                    crate::timefmt::iso_date(period.0),
                    crate::timefmt::iso_date(period.1)
                )
            } else {
                group_by
                    .iter()
                    .map(|group| group_part(entry, *group).0)
                    .collect::<Vec<_>>()
                    .join(" · ")
            };
        }
        let seconds = rounding.apply(entry.seconds);
        sum.seconds += seconds;
        sum.amount += amount_minor(entry.rate_minor, seconds);
        sum.ids.push(entry.id);
    }
    groups
        .into_iter()
        .map(|((_, rate), sum)| InvoiceLine {
            id: new_id(),
            description: sum.description,
            quantity_milli: hours_milli(sum.seconds),
            unit_price_minor: rate,
            amount_minor: sum.amount,
            entry_ids: sum.ids,
            extra: false,
        })
        .collect()
}

/// Seconds in thousandths of an hour, rounded half up.
pub fn hours_milli(seconds: i64) -> i64 {
    let product = i128::from(seconds.max(0)) * 1000;
    i64::try_from((product + 1800) / 3600).unwrap_or(i64::MAX)
}

/// An entry's label (and id, to tell equal names apart) for a grouping.
fn group_part(entry: &BillableEntry, group: LineGroup) -> (String, String) {
    let named = |n: &Option<Named>, none: &str| match n {
        Some(n) => (n.name.clone(), n.id.clone()),
        None => (none.to_owned(), String::new()),
    };
    match group {
        LineGroup::Project => named(&entry.project, "No project"),
        LineGroup::Task => named(&entry.task, "No task"),
        LineGroup::User => (entry.user.name.clone(), entry.user.id.clone()),
        LineGroup::Day => (crate::timefmt::iso_date(entry.day), String::new()),
    }
}

/// The client an invoice bills, as copied onto it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvoiceClient {
    /// The client.
    pub id: ClientId,
    /// Its name.
    pub name: String,
    /// Its address, if any.
    pub address: Option<String>,
}

/// A payment recorded on an issued invoice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payment {
    /// Identifier.
    pub id: PaymentId,
    /// Minor units paid, more than 0.
    pub amount_minor: i64,
    /// The day it was paid.
    pub paid_on: Date,
    /// A note (a reference, the means of payment).
    pub note: Option<String>,
    /// When it was recorded.
    pub created_at: OffsetDateTime,
}

/// An invoice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invoice {
    /// Identifier.
    pub id: InvoiceId,
    /// The owning workspace.
    pub workspace_id: WorkspaceId,
    /// Its number, once issued.
    pub number: Option<String>,
    /// Where it is in its life.
    pub status: InvoiceStatus,
    /// Who it bills.
    pub client: InvoiceClient,
    /// Who issues it (the workspace's name).
    pub issuer_name: String,
    /// ISO 4217: the client's billing currency.
    pub currency: String,
    /// The first day billed (workspace's time zone).
    pub period_from: Date,
    /// The last day billed.
    pub period_to: Date,
    /// How its time lines are grouped.
    pub group_by: Vec<LineGroup>,
    /// The day it is (or will be) issued.
    pub issue_date: Option<Date>,
    /// The day payment is due.
    pub due_date: Option<Date>,
    /// The discount.
    pub discount_percent: Percent,
    /// The tax, on what remains after the discount.
    pub tax_percent: Percent,
    /// Its lines: time lines first, then the extra lines, in order.
    pub lines: Vec<InvoiceLine>,
    /// Its totals, following from the lines.
    pub totals: Totals,
    /// Its payments, oldest first.
    pub payments: Vec<Payment>,
    /// Free text printed on it.
    pub notes: Option<String>,
    /// Why it was voided.
    pub void_reason: Option<String>,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last change (its version: conditional writes compare it).
    pub updated_at: OffsetDateTime,
}

impl Invoice {
    /// Σ payments.
    pub fn paid_minor(&self) -> i64 {
        self.payments.iter().map(|p| p.amount_minor).sum()
    }

    /// What is left to pay.
    pub fn balance_minor(&self) -> i64 {
        self.totals.total_minor - self.paid_minor()
    }

    /// The payment status on `today` (the workspace's date): `overdue` when issued, something is
    /// left to pay and the due date has passed; otherwise by what is paid.
    pub fn payment_status(&self, today: Date) -> PaymentStatus {
        let balance = self.balance_minor();
        if balance <= 0 && self.status != InvoiceStatus::Draft {
            return PaymentStatus::Paid;
        }
        if self.status == InvoiceStatus::Issued && self.due_date.is_some_and(|due| today > due) {
            return PaymentStatus::Overdue;
        }
        if self.paid_minor() > 0 {
            PaymentStatus::PartiallyPaid
        } else {
            PaymentStatus::Unpaid
        }
    }

    /// The extra lines, as asked for again (for an edit of a draft).
    pub fn extra_lines(&self) -> Vec<ExtraLine> {
        self.lines
            .iter()
            .filter(|l| l.extra)
            .map(|l| ExtraLine {
                description: l.description.clone(),
                quantity_milli: l.quantity_milli,
                unit_price_minor: l.unit_price_minor,
            })
            .collect()
    }

    /// Recomputes the totals from the lines and percentages.
    pub fn recompute(&mut self) -> DomainResult<()> {
        self.totals = Totals::of(&self.lines, self.discount_percent, self.tax_percent)?;
        Ok(())
    }
}

/// Which entries an invoice bills: a client's (through its projects), optionally some of its
/// projects, stopped, billable, priced in the client's currency, unlocked, on no invoice, whose
/// local day is in `[from, to]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvoiceSelection {
    /// The workspace.
    pub workspace_id: WorkspaceId,
    /// The client.
    pub client_id: ClientId,
    /// The currency (the client's): entries priced in another are left out.
    pub currency: String,
    /// Only these projects of the client (none: all).
    pub project_ids: Vec<ProjectId>,
    /// The first day.
    pub from: Date,
    /// The last day.
    pub to: Date,
    /// The workspace's time zone.
    pub timezone: String,
}

/// Which invoices a list shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InvoiceFilter {
    /// Only this status.
    pub status: Option<InvoiceStatus>,
    /// Only this payment status (derived on the workspace's `today`).
    pub payment_status: Option<PaymentStatus>,
    /// Only this client's.
    pub client_id: Option<ClientId>,
    /// The workspace's date today, for `payment_status`.
    pub today: Option<Date>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounts::model::RoundingMode;
    use time::macros::date;
    use uuid::Uuid;

    fn entry(n: u128, project: &str, seconds: i64, rate: i64) -> BillableEntry {
        BillableEntry {
            id: TimeEntryId(Uuid::from_u128(n)),
            user: Named {
                id: "u".into(),
                name: "Ann".into(),
            },
            project: Some(Named {
                id: project.to_lowercase(),
                name: project.into(),
            }),
            task: None,
            day: date!(2026 - 03 - 02),
            seconds,
            rate_minor: rate,
        }
    }

    fn ids() -> impl FnMut() -> InvoiceLineId {
        let mut n = 0;
        move || {
            n += 1;
            InvoiceLineId(Uuid::from_u128(1000 + n))
        }
    }

    #[test]
    fn a_group_with_two_rates_becomes_two_lines_and_amounts_are_the_entries_sums() {
        let entries = [
            entry(1, "Web", 5400, 10000),
            entry(2, "Web", 1800, 12000),
            entry(3, "App", 1, 10000),
            entry(4, "Web", 1801, 10000),
        ];
        let lines = time_lines(
            &entries,
            &[LineGroup::Project],
            Rounding::default(),
            (date!(2026 - 03 - 01), date!(2026 - 03 - 31)),
            ids(),
        );
        let summary: Vec<_> = lines
            .iter()
            .map(|l| {
                (
                    l.description.as_str(),
                    l.quantity_milli,
                    l.unit_price_minor,
                    l.amount_minor,
                    l.entry_ids.len(),
                )
            })
            .collect();
        // App: 1 s is 0.000 h but its amount is round_half_up(10000 / 3600) = 3.
        // Web at 100: 5400 + 1801 s = 2.000 h (7201 s → 2000.28 → 2000); 15000 + 5003 = 20003.
        assert_eq!(
            summary,
            [
                ("App", 0, 10000, 3, 1),
                ("Web", 2000, 10000, 20003, 2),
                ("Web", 500, 12000, 6000, 1)
            ]
        );
    }

    #[test]
    fn rounding_applies_per_entry_and_no_grouping_names_the_period() {
        let rounding = Rounding::new(15, RoundingMode::Up).unwrap();
        let lines = time_lines(
            &[entry(1, "Web", 60, 10000), entry(2, "App", 60, 10000)],
            &[],
            rounding,
            (date!(2026 - 03 - 01), date!(2026 - 03 - 31)),
            ids(),
        );
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].description, "Time from 2026-03-01 to 2026-03-31");
        assert_eq!(
            (lines[0].quantity_milli, lines[0].amount_minor),
            (500, 5000)
        );
    }

    #[test]
    fn totals_take_the_discount_then_the_tax_each_rounded_half_up_once() {
        let line = |amount| InvoiceLine {
            id: InvoiceLineId(Uuid::nil()),
            description: "x".into(),
            quantity_milli: 1000,
            unit_price_minor: amount,
            amount_minor: amount,
            entry_ids: vec![],
            extra: true,
        };
        let totals = Totals::of(
            &[line(1005), line(1000)],
            Percent::parse("discount_percent", "10").unwrap(),
            Percent::parse("tax_percent", "19.5").unwrap(),
        )
        .unwrap();
        // 2005; discount 200.5 → 201; tax on 1804 at 19.5 % = 351.78 → 352; total 2156.
        assert_eq!(
            totals,
            Totals {
                subtotal_minor: 2005,
                discount_minor: 201,
                tax_minor: 352,
                total_minor: 2156
            }
        );
    }

    #[test]
    fn percentages_and_quantities_parse_strictly() {
        assert_eq!(Percent::parse("p", "12.5").unwrap().milli(), 12_500);
        assert_eq!(Percent::parse("p", "100").unwrap().milli(), 100_000);
        for bad in [
            "100.001", "-1", "1e2", "", ".5", "5.", "1.2345", "NaN", " 5",
        ] {
            assert!(Percent::parse("p", bad).is_err(), "{bad}");
        }
        assert_eq!(parse_milli("1.5"), Some(1500));
        assert_eq!(parse_milli("0.001"), Some(1));
        assert_eq!(decimal_milli(1500, true), "1.500");
        assert_eq!(decimal_milli(1500, false), "1.5");
        assert_eq!(decimal_milli(2000, false), "2");
    }

    #[test]
    fn payment_status_is_derived_from_payments_and_the_due_date() {
        let mut invoice = Invoice {
            id: InvoiceId(Uuid::nil()),
            workspace_id: WorkspaceId(Uuid::nil()),
            number: Some("2026-0001".into()),
            status: InvoiceStatus::Issued,
            client: InvoiceClient {
                id: ClientId(Uuid::nil()),
                name: "Acme".into(),
                address: None,
            },
            issuer_name: "Studio".into(),
            currency: "EUR".into(),
            period_from: date!(2026 - 03 - 01),
            period_to: date!(2026 - 03 - 31),
            group_by: vec![],
            issue_date: Some(date!(2026 - 04 - 01)),
            due_date: Some(date!(2026 - 05 - 01)),
            discount_percent: Percent::default(),
            tax_percent: Percent::default(),
            lines: vec![],
            totals: Totals {
                total_minor: 1000,
                subtotal_minor: 1000,
                ..Totals::default()
            },
            payments: vec![],
            notes: None,
            void_reason: None,
            created_at: OffsetDateTime::UNIX_EPOCH,
            updated_at: OffsetDateTime::UNIX_EPOCH,
        };
        assert_eq!(
            invoice.payment_status(date!(2026 - 05 - 01)),
            PaymentStatus::Unpaid
        );
        assert_eq!(
            invoice.payment_status(date!(2026 - 05 - 02)),
            PaymentStatus::Overdue
        );
        invoice.payments.push(Payment {
            id: PaymentId(Uuid::nil()),
            amount_minor: 400,
            paid_on: date!(2026 - 04 - 10),
            note: None,
            created_at: OffsetDateTime::UNIX_EPOCH,
        });
        assert_eq!(
            invoice.payment_status(date!(2026 - 04 - 10)),
            PaymentStatus::PartiallyPaid
        );
        assert_eq!(invoice.balance_minor(), 600);
        invoice.payments[0].amount_minor = 1000;
        assert_eq!(
            invoice.payment_status(date!(2027 - 01 - 01)),
            PaymentStatus::Paid
        );
    }
}
