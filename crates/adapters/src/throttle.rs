//! A log line at most once a second for a failure that repeats with every request or every
//! round (the database away): the first of each second is logged with how many were held back.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Lets one log line a second through; counts the others.
#[derive(Debug)]
pub struct LogThrottle {
    /// The second (since the first use) of the last line let through, plus one; 0 for none.
    last: AtomicU64,
    /// Lines held back since the last one let through.
    held: AtomicU64,
    start: OnceLock<Instant>,
}

impl LogThrottle {
    /// A throttle that has let nothing through yet.
    pub const fn new() -> Self {
        Self {
            last: AtomicU64::new(0),
            held: AtomicU64::new(0),
            start: OnceLock::new(),
        }
    }

    /// `Some(lines held back since the last one)` when a line may be logged now, else `None`.
    pub fn admit(&self) -> Option<u64> {
        let second = self.start.get_or_init(Instant::now).elapsed().as_secs() + 1;
        let last = self.last.load(Ordering::Relaxed);
        if last != second
            && self
                .last
                .compare_exchange(last, second, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            return Some(self.held.swap(0, Ordering::Relaxed));
        }
        self.held.fetch_add(1, Ordering::Relaxed);
        None
    }
}

impl Default for LogThrottle {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_throttle_lets_one_line_a_second_through_and_counts_the_rest() {
        let throttle = LogThrottle::new();
        assert_eq!(throttle.admit(), Some(0));
        for _ in 0..5 {
            assert_eq!(throttle.admit(), None);
        }
        std::thread::sleep(std::time::Duration::from_millis(1100));
        assert_eq!(throttle.admit(), Some(5));
        assert_eq!(throttle.admit(), None);
    }
}
