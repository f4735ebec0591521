//! Tracking: clients, the catalog (projects, tasks, tags) and time entries with their timers.
//!
//! Each part as the crate's layers have it: [`model`], [`ports`], [`services`]. The crate's
//! `model`, `ports` and `services` modules show every capability's together.

pub mod model;
pub mod ports;
pub mod services;
