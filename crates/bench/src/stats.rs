//! Medians, spreads and percentiles.

use std::time::Duration;

use timetrack_adapters::testing::percentile;

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
    fn median_and_spread_of_repetitions() {
        let r = Repeated(vec![10.0, 30.0, 20.0]);
        assert_eq!(r.median(), 20.0);
        assert_eq!(r.spread(), (10.0, 30.0));
        assert_eq!(r.show(0), "20 (10–30)");
        assert_eq!(Repeated(vec![5.0]).show(1), "5.0");
    }
}
