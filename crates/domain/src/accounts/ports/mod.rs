//! Accounts: ports (storage and the outside world); each method's documentation states its contract.

mod api_keys;
mod rate_limits;
mod users;
mod workspaces;

pub use api_keys::ApiKeyRepository;
pub use rate_limits::RateLimitStore;
pub use users::{LAST_OWNER, ROLE_CHANGED, UserRepository};
pub use workspaces::WorkspaceRepository;
