//! Billing: services: the rules, written against ports only.

pub mod invoices;
pub mod rates;
pub mod reports;

pub use invoices::{InvoicePatch, InvoiceRequest, InvoiceService, InvoiceView, NewPayment};
pub use rates::{EntryPricing, NewRate, PriceLine, RateService, entry_pricing};
pub use reports::{ReportRequest, ReportScope, ReportService, Visibility};
