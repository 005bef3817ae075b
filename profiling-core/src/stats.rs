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
    /// Statistics of `samples` (reordered in place); `None` when empty.
    /// Percentiles use the nearest-rank method, so every figure is a sample.
    /// The percentiles are selected, not sorted for: linear time, which
    /// matters for the million samples of a long run.
    pub fn from_samples(samples: &mut [u64]) -> Option<DurationStats> {
        if samples.is_empty() {
            return None;
        }
        let count = samples.len() as u64;
        let (mut min, mut max, mut total) = (u64::MAX, 0u64, 0u128);
        for &sample in samples.iter() {
            min = min.min(sample);
            max = max.max(sample);
            total += u128::from(sample);
        }
        let mean = total as f64 / count as f64;
        let variance = samples
            .iter()
            .map(|&s| (s as f64 - mean).powi(2))
            .sum::<f64>()
            / count as f64;
        let rank = |p: f64| ((p * count as f64).ceil() as usize).clamp(1, samples.len()) - 1;
        // Highest rank first: each selection leaves the lower ranks to its
        // left, so the next one searches only there.
        let (i99, i90, i50) = (rank(0.99), rank(0.90), rank(0.50));
        let p99 = *samples.select_nth_unstable(i99).1;
        let p90 = *samples[..=i99].select_nth_unstable(i90).1;
        let p50 = *samples[..=i90].select_nth_unstable(i50).1;
        Some(DurationStats {
            count,
            min_ns: min,
            p50_ns: p50,
            mean_ns: mean.round() as u64,
            p90_ns: p90,
            p99_ns: p99,
            max_ns: max,
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

    #[test]
    fn selected_percentiles_are_those_of_the_sorted_samples() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for length in [1usize, 2, 3, 10, 99, 100, 101, 1_000, 4_097] {
            let samples: Vec<u64> = (0..length)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state % 1_000 // many ties
                })
                .collect();
            let mut sorted = samples.clone();
            sorted.sort_unstable();
            let rank = |p: f64| sorted[((p * length as f64).ceil() as usize).clamp(1, length) - 1];
            let stats = DurationStats::from_samples(&mut samples.clone()).unwrap();
            assert_eq!(
                (
                    stats.min_ns,
                    stats.p50_ns,
                    stats.p90_ns,
                    stats.p99_ns,
                    stats.max_ns
                ),
                (
                    sorted[0],
                    rank(0.5),
                    rank(0.9),
                    rank(0.99),
                    sorted[length - 1]
                ),
                "{length} samples"
            );
        }
    }
}
