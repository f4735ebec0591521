//! Tracking: ports (storage and the outside world); each method's documentation states its contract.

mod catalog;
mod clients;
mod time_entries;

pub use crate::writes::WriteOutcome;
pub use catalog::CatalogRepository;
pub use clients::ClientRepository;
pub use time_entries::{EntryFilter, TimeEntryRepository, TimerStop};
