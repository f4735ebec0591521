//! Webhooks: subscriptions, the event outbox and its payloads, the delivery policy (retries, streaks, fair shares), the delivery log and the catch-up feed.
//!
//! Each part as the crate's layers have it: [`model`], [`ports`], [`services`]. The crate's
//! `model`, `ports` and `services` modules show every capability's together.

pub mod delivery;
pub mod model;
pub mod net;
pub mod payload;
pub mod ports;
pub mod services;
