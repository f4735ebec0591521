//! Accounts: services: the rules, written against ports only.

pub mod account;
pub mod admin;
pub mod admission;
pub mod auth;
pub mod keys;
pub mod workspace;

pub use account::{AccountService, Profile};
pub use admin::{AdminService, NewWorkspace};
pub use admission::{Admission, AdmissionLimits, Admitted, Refusal};
pub use auth::{Access, Authenticator};
pub use keys::{KeyService, NewKey};
pub use workspace::{WorkspacePatch, WorkspaceService};
