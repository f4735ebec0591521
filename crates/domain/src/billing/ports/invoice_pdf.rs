//! Rendering an invoice as a PDF document a business can send.

use crate::billing::model::{Invoice, PaymentStatus};
use crate::error::DomainResult;

/// Renders invoices. Rendering is CPU work without I/O: callers on an async runtime run it on a
/// blocking thread.
pub trait InvoicePdf: Send + Sync {
    /// The PDF of `invoice` (its payment status `payment_status`): the issuer, the client's name
    /// and address, the number and dates, every line, the totals, the notes; fonts embedded.
    fn render(&self, invoice: &Invoice, payment_status: PaymentStatus) -> DomainResult<Vec<u8>>;
}
