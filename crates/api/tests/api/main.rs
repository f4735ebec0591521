//! API tests: the real application from `build_app`, on a real PostgreSQL database per test.

mod auth;
mod catalog;
mod clients;
mod console;
mod errors;
mod event_types;
mod events_changes;
mod events_feed;
mod fallbacks;
mod find_client;
mod guide;
mod health;
mod idempotency;
mod markdown;
mod openapi;
mod rate_limits;
mod rates;
mod reports;
mod roles;
mod support;
mod time_entries;
mod webhooks;
mod webhooks_filters;
mod webhooks_operate;
mod webhooks_recover;
mod webhooks_replay;
