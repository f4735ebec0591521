//! Medians, spreads and percentiles.

use std::time::Duration;

use timetrack_testkit::percentile;

/// One figure measured once per repetition.
#[derive(Debug, Clone, Default)]
pub struct Repeated(pub Vec<f64>);

impl Repeated {
    /// Adds one repetition's value.
    pub fn push(&mut self, value: f64) {
        self.0.push(value);
    }

    /// The median of the repetitions (0 when there are none).
    pub fn median(&self) -> f64 {
        percentile(&self.0, 50.0)
    }

    /// The smallest and largest repetition.
    pub fn spread(&self) -> (f64, f64) {
        let min = self.0.iter().copied().fold(f64::INFINITY, f64::min);
        let max = self.0.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if self.0.is_empty() {
            (0.0, 0.0)
        } else {
            (min, max)
        }
    }

    /// `median (min–max)` with `decimals` decimals.
    pub fn show(&self, decimals: usize) -> String {
        let (min, max) = self.spread();
        if self.0.len() <= 1 {
            format!("{:.*}", decimals, self.median())
        } else {
            format!(
                "{:.*} ({:.*}–{:.*})",
                decimals,
                self.median(),
                decimals,
                min,
                decimals,
                max
            )
        }
    }
}

/// Latencies in milliseconds.
#[derive(Debug, Clone, Default)]
pub struct Latencies(pub Vec<f64>);

impl Latencies {
    /// Adds one latency.
    pub fn push(&mut self, latency: Duration) {
        self.0.push(latency.as_secs_f64() * 1_000.0);
    }

    /// The `p`th percentile, in milliseconds.
    pub fn percentile(&self, p: f64) -> f64 {
        percentile(&self.0, p)
    }
}

/// Where in a run its slow samples fell: given `(seconds into the run, latency in ms)` pairs,
/// those strictly over `threshold_ms`, as how many, the first and last of their times, and the
/// whole second holding the most of them with its count. `None` when no sample is over.
pub fn slow_span(timed: &[(f64, f64)], threshold_ms: f64) -> Option<SlowSpan> {
    let slow: Vec<f64> = timed
        .iter()
        .filter(|(_, ms)| *ms > threshold_ms)
        .map(|(at, _)| *at)
        .collect();
    let first = slow.iter().copied().fold(f64::INFINITY, f64::min);
    let last = slow.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut per_second = std::collections::BTreeMap::<u64, usize>::new();
    for at in &slow {
        // A second is the time's whole part (times are never negative).
        *per_second.entry(*at as u64).or_default() += 1;
    }
    // The earliest of the busiest seconds.
    let (worst_second, worst_count) = per_second.into_iter().fold(
        None,
        |best: Option<(u64, usize)>, (second, n)| match best {
            Some((_, most)) if most >= n => best,
            _ => Some((second, n)),
        },
    )?;
    Some(SlowSpan {
        count: slow.len(),
        first,
        last,
        worst_second,
        worst_count,
    })
}

/// See [`slow_span`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowSpan {
    pub count: usize,
    pub first: f64,
    pub last: f64,
    pub worst_second: u64,
    pub worst_count: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 50.0), 50.0);
        assert_eq!(percentile(&values, 99.0), 99.0);
        assert_eq!(percentile(&values, 100.0), 100.0);
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 50.0), 2.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn slow_samples_are_placed_in_the_run() {
        let timed = [
            (0.2, 1.0),
            (1.5, 30.0),
            (2.1, 25.0),
            (2.7, 40.0),
            (3.0, 5.0),
        ];
        assert_eq!(
            slow_span(&timed, 10.0),
            Some(SlowSpan {
                count: 3,
                first: 1.5,
                last: 2.7,
                worst_second: 2,
                worst_count: 2,
            })
        );
        // A tie goes to the earlier second; nothing over the threshold is no span.
        assert_eq!(
            slow_span(&timed[..3], 10.0).map(|s| s.worst_second),
            Some(1)
        );
        assert_eq!(slow_span(&timed, 40.0), None);
        assert_eq!(slow_span(&[], 1.0), None);
    }

    #[test]
    fn median_and_spread_of_repetitions() {
        let r = Repeated(vec![10.0, 30.0, 20.0]);
        assert_eq!(r.median(), 20.0);
        assert_eq!(r.spread(), (10.0, 30.0));
        assert_eq!(r.show(0), "20 (10–30)");
        assert_eq!(Repeated(vec![5.0]).show(1), "5.0");
    }
}
