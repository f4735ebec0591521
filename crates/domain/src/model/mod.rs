//! Entities and value objects.

pub mod api_key;
pub mod user;
pub mod workspace;

pub use api_key::{ApiKey, ApiKeySecret, KeyHash, Principal};
pub use user::User;
pub use workspace::Workspace;
