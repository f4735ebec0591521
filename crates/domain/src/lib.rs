//! The timetrack domain: entities, value objects, ports and services, free of any I/O framework.
//!
//! Everything that talks to the outside world (PostgreSQL, HTTP, the clock, randomness) is a port
//! trait in [`ports`]; adapters implement them elsewhere. The services in [`services`] hold the
//! rules of the product and depend on ports only, so they run unchanged against in-memory fakes
//! (`timetrack-testkit`'s `fakes`) and against the real adapters.
//!
//! The crate's README follows; its example is compiled and run as a doc-test.
#![doc = ""]
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub mod accounts;
pub mod billing;
pub mod error;
pub mod health;
pub mod idempotency;
pub mod ids;
pub mod masked;
pub mod model;
pub mod page;
pub mod ports;
pub mod services;
pub mod system;
pub mod timefmt;
pub mod tracking;
pub mod values;
pub mod webhooks;
pub mod writes;

pub use accounts::ratelimit;
pub use error::{DomainError, DomainResult};
pub use webhooks::{delivery, net, payload};
