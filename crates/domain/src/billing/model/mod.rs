//! Billing: entities and value objects.

pub mod invoice;
pub mod rate;
pub mod report;

pub use invoice::{
    BillableEntry, ExtraLine, Invoice, InvoiceClient, InvoiceFilter, InvoiceLine, InvoiceSelection,
    InvoiceStatus, LineGroup, Payment, PaymentStatus, Percent, Totals,
};
pub use rate::{
    AppliedRate, MAX_HOURLY_MINOR, PricedEntry, Rate, RateId, RateKind, RateTarget, StoredPrice,
    choose_rate,
};
pub use report::{
    Amounts, DetailedRow, Figures, GroupKey, GroupValue, Named, ReportFilter, Summary,
    SummaryGroup, SummaryRow, UninvoicedRow, summary_tree,
};
