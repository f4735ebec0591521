//! Tracking: services: the rules, written against ports only.

pub mod catalog;
pub mod clients;
pub mod time_entries;

pub use catalog::{CatalogService, ProjectPatch};
pub use clients::ClientService;
pub use time_entries::{EntryDraft, EntryPatch, TimeEntryService};
