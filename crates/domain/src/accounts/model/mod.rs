//! Accounts: entities and value objects.

pub mod api_key;
pub mod role;
pub(crate) mod token;
pub mod user;
pub mod workspace;

pub use api_key::{ApiKey, ApiKeySecret, KeyHash, Principal, Scope, Scopes};
pub use role::{Member, Role};
pub use user::User;
pub use workspace::{InvoiceNumberPattern, Rounding, RoundingMode, Workspace, WorkspaceSettings};
