//! The timetrack HTTP API (actix-web) and the commands of the `timetrack` binary.
//!
//! [`build_app`] builds the whole application from an [`AppState`] without binding a socket, so
//! `main` and the tests run the very same application.

pub mod app;
pub mod client_ip;
pub mod commands;
pub mod config;
pub mod error;
pub mod extract;
pub mod idempotency;
pub mod mcp;
mod mcp_schemas;
pub mod metrics;
pub mod openapi;
pub mod replica;
pub mod roles;
pub mod routes;
pub mod scopes;
pub mod state;
pub mod telemetry;

pub use app::build_app;
pub use client_ip::TrustedProxies;
pub use state::{AppState, RateLimitStoreKind, RateLimits, StateSettings};
