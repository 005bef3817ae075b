//! Summary statistics of nanosecond samples.

use serde::Serialize;

/// Count, extremes, mean, percentiles and spread of a set of durations.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DurationStats {
    pub count: u64,
    pub min_ns: u64,
    pub p50_ns: u64,
    pub mean_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub stddev_ns: u64,
    pub total_ns: u64,
}

impl DurationStats {
    /// Statistics of `samples` (sorted in place); `None` when empty.
    /// Percentiles use the nearest-rank method, so every figure is a sample.
    pub fn from_samples(samples: &mut [u64]) -> Option<DurationStats> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let count = samples.len() as u64;
        let total: u128 = samples.iter().map(|&s| u128::from(s)).sum();
        let mean = total as f64 / count as f64;
        let variance = samples
            .iter()
            .map(|&s| (s as f64 - mean).powi(2))
            .sum::<f64>()
            / count as f64;
        let rank = |p: f64| -> u64 {
            let index = ((p * count as f64).ceil() as usize).clamp(1, samples.len()) - 1;
            samples[index]
        };
        Some(DurationStats {
            count,
            min_ns: samples[0],
            p50_ns: rank(0.50),
            mean_ns: mean.round() as u64,
            p90_ns: rank(0.90),
            p99_ns: rank(0.99),
            max_ns: samples[samples.len() - 1],
            stddev_ns: variance.sqrt().round() as u64,
            total_ns: u64::try_from(total).unwrap_or(u64::MAX),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_has_no_stats() {
        assert_eq!(DurationStats::from_samples(&mut []), None);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let mut samples: Vec<u64> = (1..=100).rev().collect();
        let stats = DurationStats::from_samples(&mut samples).unwrap();
        assert_eq!((stats.count, stats.min_ns, stats.max_ns), (100, 1, 100));
        assert_eq!((stats.p50_ns, stats.p90_ns, stats.p99_ns), (50, 90, 99));
        assert_eq!(stats.mean_ns, 51); // 50.5 rounds up
        assert_eq!(stats.total_ns, 5050);
        assert_eq!(stats.stddev_ns, 29); // sqrt(833.25) = 28.87
    }

    #[test]
    fn single_sample() {
        let stats = DurationStats::from_samples(&mut [42]).unwrap();
        assert_eq!(
            (
                stats.min_ns,
                stats.p50_ns,
                stats.p99_ns,
                stats.max_ns,
                stats.stddev_ns
            ),
            (42, 42, 42, 42, 0)
        );
    }
}
