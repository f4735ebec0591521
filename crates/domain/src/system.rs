//! The system's own ports: time, identifiers and randomness. They depend on nothing else of the
//! domain, so entities and value objects can take them without depending on the storage ports.

use time::OffsetDateTime;
use uuid::Uuid;

/// The current time.
pub trait Clock: Send + Sync {
    /// Now, in UTC.
    fn now(&self) -> OffsetDateTime;
}

/// New unique identifiers.
pub trait IdGenerator: Send + Sync {
    /// A new UUID, never returned before; production uses time-ordered UUIDv7.
    fn new_uuid(&self) -> Uuid;
}

/// Cryptographically secure random bytes (API keys, webhook ids and secrets).
pub trait RandomSource: Send + Sync {
    /// Fills `buf` with random bytes. MUST use a cryptographically secure generator in production.
    fn fill(&self, buf: &mut [u8]);
}
