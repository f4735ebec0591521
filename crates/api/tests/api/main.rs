//! API tests: the real application from `build_app`, on a real PostgreSQL database per test.

mod auth;
mod clients;
mod errors;
mod find_client;
mod health;
mod support;
mod webhooks;
