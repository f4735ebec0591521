//! Billing: ports (storage and the outside world); each method's documentation states its contract.

mod invoice_pdf;
mod invoices;
mod rates;
mod reports;

pub use invoice_pdf::InvoicePdf;
pub use invoices::{InvoiceBuilder, InvoiceEvents, InvoiceRepository, InvoiceWrite};
pub use rates::{PriceChange, RateEffect, RateFilter, RateRepository};
pub use reports::ReportRepository;
