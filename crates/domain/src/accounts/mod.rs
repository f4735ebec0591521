//! Accounts: workspaces and their settings, members and roles, API keys and their scopes, who a request is (authentication) and how much it may do (admission, rate limits).
//!
//! Each part as the crate's layers have it: [`model`], [`ports`], [`services`]. The crate's
//! `model`, `ports` and `services` modules show every capability's together.

pub mod model;
pub mod ports;
pub mod ratelimit;
pub mod services;
