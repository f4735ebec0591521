//! API tests: the real application from `build_app`, on a real PostgreSQL database per test.

mod auth;
mod errors;
mod health;
mod support;
