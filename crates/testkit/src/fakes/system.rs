//! The clock, ids, randomness and name resolution: set by hand, counting up, seeded, from a table.

use super::*;

/// A clock that stands still until told to move.
#[derive(Debug)]
pub struct ManualClock(Mutex<OffsetDateTime>);

impl ManualClock {
    /// A clock showing `at`.
    pub fn at(at: OffsetDateTime) -> Self {
        Self(Mutex::new(at))
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> OffsetDateTime {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Ids `00000000-0000-0000-0000-000000000001`, `...02`, and so on.
#[derive(Debug, Default)]
pub struct SequentialIds(AtomicU64);

impl IdGenerator for SequentialIds {
    fn new_uuid(&self) -> Uuid {
        Uuid::from_u128(u128::from(self.0.fetch_add(1, Ordering::Relaxed) + 1))
    }
}

/// A deterministic, non-cryptographic byte stream (xorshift64*), for reproducible tests.
#[derive(Debug)]
pub struct SeededRandom(Mutex<u64>);

impl SeededRandom {
    /// A stream starting from `seed` (0 is replaced by 1).
    pub fn new(seed: u64) -> Self {
        Self(Mutex::new(seed.max(1)))
    }
}

impl RandomSource for SeededRandom {
    fn fill(&self, buf: &mut [u8]) {
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for byte in buf {
            *state ^= *state >> 12;
            *state ^= *state << 25;
            *state ^= *state >> 27;
            *byte = (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8;
        }
    }
}

/// A resolver answering from a fixed table; names not in it fail to resolve.
#[derive(Debug, Default)]
pub struct StaticResolver(Mutex<HashMap<String, Vec<std::net::IpAddr>>>);

impl StaticResolver {
    /// Makes `host` resolve to `addresses`.
    pub fn set(&self, host: &str, addresses: &[&str]) {
        let parsed = addresses
            .iter()
            .map(|a| a.parse().expect("an IP address"))
            .collect();
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(host.to_owned(), parsed);
    }
}

#[async_trait]
impl HostResolver for StaticResolver {
    async fn resolve(&self, host: &str, _port: u16) -> Result<Vec<std::net::IpAddr>, String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(host)
            .cloned()
            .ok_or_else(|| format!("{host}: no such host"))
    }
}
