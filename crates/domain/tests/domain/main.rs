//! The domain's services and rules, run against the in-memory fakes of `timetrack-testkit`.

mod account;
mod admin;
mod api_key;
mod auth;
mod clients;
mod delivery;
mod keys;
mod time_entries;
mod webhook_model;
mod webhooks;
