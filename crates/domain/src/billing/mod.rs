//! Billing: rates and the price stored on each entry, reports, and invoices with their lines, totals and payments.
//!
//! Each part as the crate's layers have it: [`model`], [`ports`], [`services`]. The crate's
//! `model`, `ports` and `services` modules show every capability's together.

pub mod model;
pub mod ports;
pub mod services;
