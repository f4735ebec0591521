//! Tracking: entities and value objects.

pub mod catalog;
pub mod client;
pub mod time_entry;

pub use catalog::{Project, Tag, Task};
pub use client::{Client, ClientDraft, ClientPatch, ClientStatus, ClientType};
pub use time_entry::{EntrySource, TimeEntry};
