//! Services: the product's rules, written against ports only.

pub mod account;
pub mod admin;
pub mod auth;
pub mod clients;
pub mod webhooks;

pub use account::{AccountService, Profile};
pub use admin::{AdminService, NewWorkspace};
pub use auth::Authenticator;
pub use clients::ClientService;
pub use webhooks::{NewSubscription, WebhookService, WebhookSettings};
