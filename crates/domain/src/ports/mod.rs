//! Ports: the traits through which the domain reaches storage, time and randomness.
//!
//! One file per port. Each method's documentation states its contract, errors included.
//! Implementations live in `timetrack-adapters` (PostgreSQL, HTTPS, system clock, OS randomness)
//! and, for tests, in `timetrack-testkit`'s `fakes`, held to the same contract suites
//! (ADR 0008).
//!
//! Each capability's ports are in its own `ports` ([`crate::accounts::ports`],
//! [`crate::tracking::ports`], [`crate::billing::ports`], [`crate::webhooks::ports`]) and shown here
//! together; the clock and randomness ([`crate::system`]), health ([`crate::health`]) and idempotency
//! ([`crate::idempotency`]) ports are shared.

pub use crate::accounts::ports::*;
pub use crate::billing::ports::*;
pub use crate::health::HealthProbe;
pub use crate::idempotency::{
    IDEMPOTENCY_RETENTION, IdempotencyBegin, IdempotencyStore, STALE_CLAIM,
};
pub use crate::system::{self, Clock, IdGenerator, RandomSource};
pub use crate::tracking::ports::*;
pub use crate::webhooks::ports::*;
