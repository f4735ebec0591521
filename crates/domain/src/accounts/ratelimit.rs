//! Rate limiting by exact sliding windows: a request is admitted when fewer than `per_minute`
//! requests were admitted in the last 60 s and fewer than `per_second` in the last second.
//! Refused requests are not counted, so a client that waits as told always gets through.

use time::{Duration, OffsetDateTime};

/// The limits of one kind of caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RatePolicy {
    /// Requests per rolling 60 s.
    pub per_minute: u32,
    /// Requests per rolling second.
    pub per_second: u32,
}

/// The long window.
pub const MINUTE: Duration = Duration::seconds(60);
/// The short window.
pub(crate) const SECOND: Duration = Duration::seconds(1);

/// The outcome of one request against a policy, with what the `X-RateLimit-*` headers show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    /// Whether the request may proceed (and was counted).
    pub allowed: bool,
    /// The per-minute limit.
    pub limit: u32,
    /// Requests left in the current 60 s window.
    pub remaining: u32,
    /// When the next slot of the 60 s window frees (the oldest counted request leaves it).
    pub reset_at: OffsetDateTime,
    /// Whole seconds to wait before retrying, when refused.
    pub retry_after_secs: Option<u64>,
}

/// Decides on a request at `now`, given the times of the requests counted in the last 60 s
/// (oldest first). On admission the caller MUST record `now`.
pub fn decide(recent: &[OffsetDateTime], now: OffsetDateTime, policy: RatePolicy) -> RateDecision {
    // Binary searches on the sorted times: the cost does not grow with the window's size.
    let in_minute = &recent[recent.partition_point(|t| *t <= now - MINUTE)..];
    let in_second = &in_minute[in_minute.partition_point(|t| *t <= now - SECOND)..];
    let minute_full = in_minute.len() >= policy.per_minute as usize;
    let second_full = in_second.len() >= policy.per_second as usize;
    let allowed = !minute_full && !second_full;
    let counted = in_minute.len() + usize::from(allowed);
    let oldest = in_minute.first().copied().unwrap_or(now);
    let reset_at = oldest + MINUTE;
    let retry_after_secs = (!allowed).then(|| {
        let mut wait = Duration::ZERO;
        if minute_full {
            // The request that must leave the window for a slot to free.
            let idx = in_minute.len() + 1 - policy.per_minute.max(1) as usize;
            wait = wait.max(in_minute[idx.saturating_sub(1)] + MINUTE - now);
        }
        if second_full {
            let idx = in_second.len() + 1 - policy.per_second.max(1) as usize;
            wait = wait.max(in_second[idx.saturating_sub(1)] + SECOND - now);
        }
        let secs = wait.as_seconds_f64().ceil();
        (secs as u64).max(1)
    });
    RateDecision {
        allowed,
        limit: policy.per_minute,
        remaining: policy
            .per_minute
            .saturating_sub(u32::try_from(counted).unwrap_or(u32::MAX)),
        reset_at,
        retry_after_secs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const POLICY: RatePolicy = RatePolicy {
        per_minute: 100,
        per_second: 10,
    };

    /// Runs `count` requests at `at` through `decide`, recording the admitted ones.
    fn burst(log: &mut Vec<OffsetDateTime>, at: OffsetDateTime, count: usize) -> Vec<RateDecision> {
        (0..count)
            .map(|_| {
                let d = decide(log, at, POLICY);
                if d.allowed {
                    log.push(at);
                }
                d
            })
            .collect()
    }

    #[test]
    fn ten_per_second_then_refused_until_the_second_passes() {
        let t0 = datetime!(2026-01-05 09:00 UTC);
        let mut log = Vec::new();
        let decisions = burst(&mut log, t0, 11);
        assert!(decisions[..10].iter().all(|d| d.allowed));
        assert_eq!(decisions[9].remaining, 90);
        assert!(!decisions[10].allowed);
        assert_eq!(decisions[10].retry_after_secs, Some(1));
        assert_eq!(
            decisions[10].remaining, 90,
            "refused requests are not counted"
        );
        assert!(!decide(&log, t0 + Duration::milliseconds(999), POLICY).allowed);
        assert!(decide(&log, t0 + Duration::seconds(1), POLICY).allowed);
    }

    #[test]
    fn a_hundred_per_rolling_minute() {
        let t0 = datetime!(2026-01-05 09:00 UTC);
        let mut log = Vec::new();
        for s in 0..10 {
            let d = burst(&mut log, t0 + Duration::seconds(s), 10);
            assert!(d.iter().all(|d| d.allowed), "second {s}");
        }
        let refused = decide(&log, t0 + Duration::seconds(10), POLICY);
        assert!(!refused.allowed);
        assert_eq!(refused.remaining, 0);
        // The oldest ten were at t0: the first slot frees at t0 + 60 s.
        assert_eq!(refused.retry_after_secs, Some(50));
        assert_eq!(refused.reset_at, t0 + MINUTE);
        assert!(!decide(&log, t0 + Duration::milliseconds(59_999), POLICY).allowed);
        let after = decide(&log, t0 + MINUTE, POLICY);
        assert!(after.allowed);
        assert_eq!(after.remaining, 9, "90 still in the window, plus this one");
    }

    #[test]
    fn an_empty_window_has_everything_left() {
        let now = datetime!(2026-01-05 09:00 UTC);
        let d = decide(&[], now, POLICY);
        assert_eq!(
            (d.allowed, d.limit, d.remaining, d.reset_at),
            (true, 100, 99, now + MINUTE)
        );
    }
}
