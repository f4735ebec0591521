//! Services: the product's rules, written against ports only.

pub mod account;
pub mod admin;
pub mod admission;
pub mod auth;
pub mod catalog;
pub mod clients;
pub mod delivery;
pub mod time_entries;
pub mod webhooks;

pub use account::{AccountService, Profile};
pub use admin::{AdminService, NewWorkspace};
pub use admission::{Admission, AdmissionLimits, Admitted, Refusal};
pub use auth::Authenticator;
pub use catalog::CatalogService;
pub use clients::ClientService;
pub use delivery::{DeliveryService, DeliverySettings};
pub use time_entries::{EntryDraft, EntryPatch, TimeEntryService};
pub use webhooks::{
    DeliveryFilter, NewSubscription, ReplayRequest, RotatedSecret, WebhookChange, WebhookService,
    WebhookSettings,
};
