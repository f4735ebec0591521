//! The production clock, id generator and random source.

use rand::TryRngCore;
use time::OffsetDateTime;
use timetrack_domain::ports::{Clock, IdGenerator, RandomSource};
use uuid::Uuid;

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    /// Now, truncated to the microsecond: PostgreSQL's precision, so a time read back from the
    /// database equals the one written (and shown in payloads).
    fn now(&self) -> OffsetDateTime {
        let now = OffsetDateTime::now_utc();
        now.replace_nanosecond(now.nanosecond() / 1_000 * 1_000)
            .unwrap_or(now)
    }
}

/// Time-ordered UUIDv7 ids, so new rows land at the right end of their indexes.
#[derive(Debug, Default, Clone, Copy)]
pub struct UuidV7Ids;

impl IdGenerator for UuidV7Ids {
    fn new_uuid(&self) -> Uuid {
        Uuid::now_v7()
    }
}

/// The operating system's cryptographically secure generator.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsRandom;

impl RandomSource for OsRandom {
    fn fill(&self, buf: &mut [u8]) {
        // The OS generator failing is unrecoverable: no key may be made from anything weaker.
        rand::rngs::OsRng
            .try_fill_bytes(buf)
            .expect("the operating system's random generator failed");
    }
}
