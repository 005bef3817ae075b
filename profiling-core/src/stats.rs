//! Summary statistics of nanosecond samples.

use serde::{Deserialize, Serialize};

/// Count, extremes, mean, percentiles and spread of a set of durations.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DurationStats {
    pub count: u64,
    pub min_ns: u64,
    pub p50_ns: u64,
    pub mean_ns: u64,
    pub p90_ns: u64,
    /// Absent from manifests written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95_ns: Option<u64>,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub stddev_ns: u64,
    pub total_ns: u64,
}

impl DurationStats {
    /// Statistics of `samples`; `None` when empty. The order of `samples`
    /// is left as it was.
    pub fn from_samples(samples: &mut [u64]) -> Option<DurationStats> {
        DurationStats::of(samples)
    }

    /// Statistics of `samples`; `None` when empty. Percentiles use the
    /// nearest-rank method, so every figure is a sample.
    ///
    /// Linear time, without copying the samples: one pass takes the
    /// extremes, the sums and a count per bucket (each value under 256 its
    /// own bucket, then 256 buckets per power of two); a second gathers the
    /// samples of the buckets the percentiles fall in, and only those are
    /// selected among. That matters for the million samples of a long run.
    pub fn of(samples: &[u64]) -> Option<DurationStats> {
        let first = *samples.first()?;
        let count = samples.len() as u64;
        let (mut min, mut max, mut total) = (u64::MAX, 0u64, 0u128);
        // Sums of the differences from the first sample: the spread
        // without the cancellation of raw squares; four of each, so that
        // the additions do not wait on one another.
        let (mut shifted, mut shifted_squares) = ([0f64; 4], [0f64; 4]);
        let mut add = |lane: usize, sample: u64| {
            min = min.min(sample);
            max = max.max(sample);
            total += u128::from(sample);
            let difference = sample as f64 - first as f64;
            shifted[lane] += difference;
            shifted_squares[lane] += difference * difference;
        };
        let mut chunks = samples.chunks_exact(4);
        for chunk in &mut chunks {
            for (lane, &sample) in chunk.iter().enumerate() {
                add(lane, sample);
            }
        }
        for &sample in chunks.remainder() {
            add(0, sample);
        }
        let shifted: f64 = shifted.iter().sum();
        let shifted_squares: f64 = shifted_squares.iter().sum();
        // Counts per bucket, in four lanes: consecutive samples of one
        // bucket do not wait on each other's increment.
        let small = samples.len() < SELECT_BELOW || samples.len() > u32::MAX as usize;
        let mut counts = if small {
            Vec::new()
        } else {
            vec![[0u32; 4]; BUCKETS]
        };
        if !small {
            let mut chunks = samples.chunks_exact(4);
            for chunk in &mut chunks {
                for lane in 0..4 {
                    counts[bucket(chunk[lane])][lane] += 1;
                }
            }
            for &sample in chunks.remainder() {
                counts[bucket(sample)][0] += 1;
            }
        }
        let n = count as f64;
        let variance = ((shifted_squares - shifted * shifted / n) / n).max(0.0);
        let mean = total as f64 / n;
        let rank = |p: f64| ((p * n).ceil() as usize).clamp(1, samples.len()) - 1;
        let ranks = [rank(0.50), rank(0.90), rank(0.95), rank(0.99)];
        let [p50, p90, p95, p99] = if small {
            select_copied(samples, ranks)
        } else {
            select_bucketed(samples, &counts, ranks)
        };
        Some(DurationStats {
            count,
            min_ns: min,
            p50_ns: p50,
            mean_ns: mean.round() as u64,
            p90_ns: p90,
            p95_ns: Some(p95),
            p99_ns: p99,
            max_ns: max,
            stddev_ns: variance.sqrt().round() as u64,
            total_ns: u64::try_from(total).unwrap_or(u64::MAX),
        })
    }
}

/// Fewer samples than this are copied and selected among directly.
const SELECT_BELOW: usize = 1024;

/// Buckets of [`bucket`]: 256 values, then 256 for each power of two from
/// 2^8 to 2^63.
const BUCKETS: usize = 256 + 56 * 256;

/// The bucket of `value`, ascending with it: values under 256 each their
/// own, then a power of two and the 8 bits after its leading one.
#[inline]
fn bucket(value: u64) -> usize {
    if value < 256 {
        value as usize
    } else {
        let exponent = 63 - value.leading_zeros() as usize;
        let mantissa = ((value >> (exponent - 8)) & 0xff) as usize;
        256 + (exponent - 8) * 256 + mantissa
    }
}

/// The values of ascending 0-based ranks `ranks`, from a copy.
fn select_copied<const N: usize>(samples: &[u64], ranks: [usize; N]) -> [u64; N] {
    let mut copy = samples.to_vec();
    // Highest rank first: each selection leaves the lower ranks to its
    // left, so the next one searches only there.
    let mut values = [0; N];
    let mut end = copy.len();
    for at in (0..N).rev() {
        values[at] = *copy[..end].select_nth_unstable(ranks[at]).1;
        end = ranks[at] + 1;
    }
    values
}

/// The values of ascending 0-based ranks `ranks`, given each bucket's
/// count: the bucket each rank falls in, then a selection among that
/// bucket's samples only.
fn select_bucketed<const N: usize>(
    samples: &[u64],
    counts: &[[u32; 4]],
    ranks: [usize; N],
) -> [u64; N] {
    let count = |bucket: usize| counts[bucket].iter().map(|&c| c as usize).sum::<usize>();
    // Each rank's bucket and its rank inside it.
    let mut found = [(0usize, 0usize); N];
    let (mut next, mut before) = (0, 0usize);
    for index in 0..counts.len() {
        let through = before + count(index);
        while next < N && ranks[next] < through {
            found[next] = (index, ranks[next] - before);
            next += 1;
        }
        if next == N {
            break;
        }
        before = through;
    }
    // A bucket under 256 holds one value: the rank's. The samples of the
    // other (at most N) buckets are gathered, once per bucket.
    let buckets = found.map(|(bucket, _)| bucket);
    if buckets.iter().all(|&b| b < 256) {
        return buckets.map(|b| b as u64);
    }
    // The first rank of each bucket holds the bucket's samples.
    let holder: [usize; N] =
        std::array::from_fn(|i| buckets.iter().position(|&b| b == buckets[i]).unwrap_or(i));
    let mut gathered: [Vec<u64>; N] = std::array::from_fn(|i| {
        if holder[i] == i && buckets[i] >= 256 {
            Vec::with_capacity(count(buckets[i]))
        } else {
            Vec::new()
        }
    });
    // The distinct buckets of 256 and above, and where their samples go.
    let wanted: Vec<(usize, usize)> = (0..N)
        .filter(|&i| holder[i] == i && buckets[i] >= 256)
        .map(|i| (buckets[i], i))
        .collect();
    for &sample in samples {
        let at = bucket(sample);
        if let Some(&(_, i)) = wanted.iter().find(|&&(b, _)| b == at) {
            gathered[i].push(sample);
        }
    }
    std::array::from_fn(|i| {
        let (bucket, inside) = found[i];
        if bucket < 256 {
            return bucket as u64;
        }
        *gathered[holder[i]].select_nth_unstable(inside).1
    })
}

/// The nearest-rank median, `x_(ceil(n/2))` of the sorted samples (the
/// lower median for even `n`), the same definition as the manifest's p50.
/// Never panics: `None` when empty.
///
/// ```
/// use profiling_core::stats::lower_median;
///
/// assert_eq!(lower_median(&[10, 20, 30, 40]), Some(20));
/// assert_eq!(lower_median(&[10, 20, 30]), Some(20));
/// assert_eq!(lower_median(&[]), None);
/// ```
pub fn lower_median(sorted: &[u64]) -> Option<u64> {
    let rank = sorted.len().div_ceil(2);
    sorted.get(rank.checked_sub(1)?).copied()
}

/// The lower median of `sorted` (ascending) with its distribution-free
/// confidence interval: order statistics `x(j) <= median <= x(n+1-j)`,
/// `j` the largest rank with `P(Binomial(n, 1/2) < j) <= (1 - confidence) / 2`,
/// which covers the population median with at least `confidence` whatever
/// the distribution. Below 6 samples no such `j` exists at 95 %: the
/// interval is then the whole range of the samples. `None` when empty.
///
/// ```
/// use profiling_core::stats::median_interval;
///
/// let samples: Vec<u64> = (1..=100).collect();
/// // Binomial(100, 1/2): ranks 40 and 61 hold 95 % between them.
/// assert_eq!(median_interval(&samples, 0.95), Some((50, 40, 61)));
/// assert_eq!(median_interval(&[7, 8, 9], 0.95), Some((8, 7, 9)));
/// assert_eq!(median_interval(&[], 0.95), None);
/// ```
pub fn median_interval(sorted: &[u64], confidence: f64) -> Option<(u64, u64, u64)> {
    let median = lower_median(sorted)?;
    let n = sorted.len();
    let tail = (1.0 - confidence.clamp(0.0, 1.0)) / 2.0;
    let cdf = binomial_cdf(n, 0.5);
    // `j` (1-based) is the largest rank with P(X <= j - 1) <= tail, for
    // X ~ Binomial(n, 1/2); at most the median's rank.
    let rank = (1..=n.div_ceil(2))
        .take_while(|&j| cdf(j - 1) <= tail)
        .last()
        .unwrap_or(0);
    if rank == 0 {
        return Some((median, sorted[0], sorted[n - 1]));
    }
    Some((median, sorted[rank - 1], sorted[n - rank]))
}

/// P(B <= k) for B ~ Binomial(n, p), 0 < p < 1: the probabilities from
/// the mode outwards by the ratio of neighbours, in logs, so that large
/// n neither overflow nor underflow where it matters. The one binomial
/// CDF of the project: the intervals of medians ([`median_interval`]) and
/// of a load's percentiles are read from it.
pub fn binomial_cdf(n: usize, p: f64) -> impl Fn(usize) -> f64 {
    let mode = (((n + 1) as f64) * p).floor().min(n as f64) as usize;
    let mut log = vec![f64::NEG_INFINITY; n + 1];
    log[mode] = 0.0;
    let odds = (p / (1.0 - p)).ln();
    for k in mode..n {
        log[k + 1] = log[k] + ((n - k) as f64 / (k + 1) as f64).ln() + odds;
        if log[k + 1] < -745.0 {
            break;
        }
    }
    for k in (1..=mode).rev() {
        log[k - 1] = log[k] - ((n - k + 1) as f64 / k as f64).ln() - odds;
        if log[k - 1] < -745.0 {
            break;
        }
    }
    let weights: Vec<f64> = log.iter().map(|l| l.exp()).collect();
    let total: f64 = weights.iter().sum();
    let mut cumulative = Vec::with_capacity(n + 1);
    let mut sum = 0.0;
    for w in &weights {
        sum += w / total;
        cumulative.push(sum);
    }
    move |k: usize| cumulative[k.min(n)]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CDF against sums of binomial coefficients, exact in f64.
    #[test]
    fn the_binomial_cdf_is_the_sum_of_the_probabilities_up_to_k() {
        let half = binomial_cdf(10, 0.5);
        // C(10, 0..=4) = 1, 10, 45, 120, 210: 386 of 1024.
        assert!((half(4) - 386.0 / 1024.0).abs() < 1e-12, "{}", half(4));
        assert!((half(10) - 1.0).abs() < 1e-12);
        assert!((half(99) - 1.0).abs() < 1e-12, "k past n is all of it");
        // p = 0.9, n = 3: P(B <= 1) = 0.1^3 + 3 * 0.9 * 0.1^2 = 0.028.
        let skewed = binomial_cdf(3, 0.9);
        assert!((skewed(1) - 0.028).abs() < 1e-12, "{}", skewed(1));
        // Large n: no overflow, and the median's mass where it belongs.
        let large = binomial_cdf(1_000_000, 0.5);
        assert!((large(499_999) - 0.5).abs() < 1e-3, "{}", large(499_999));
        assert!(large(490_000) < 1e-80);
    }

    /// The extremes and nearest-rank percentiles of `stats` are those of
    /// `samples` sorted.
    fn assert_percentiles_of_sorted(stats: &DurationStats, samples: &[u64], what: &str) {
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let length = sorted.len();
        let rank = |p: f64| sorted[((p * length as f64).ceil() as usize).clamp(1, length) - 1];
        assert_eq!(
            [
                stats.min_ns,
                stats.p50_ns,
                stats.p90_ns,
                stats.p95_ns.unwrap(),
                stats.p99_ns,
                stats.max_ns
            ],
            [
                sorted[0],
                rank(0.5),
                rank(0.9),
                rank(0.95),
                rank(0.99),
                sorted[length - 1]
            ],
            "{what}"
        );
    }

    #[test]
    fn empty_has_no_stats() {
        assert_eq!(DurationStats::from_samples(&mut []), None);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let mut samples: Vec<u64> = (1..=100).rev().collect();
        let stats = DurationStats::from_samples(&mut samples).unwrap();
        assert_eq!((stats.count, stats.min_ns, stats.max_ns), (100, 1, 100));
        assert_eq!(
            (stats.p50_ns, stats.p90_ns, stats.p95_ns, stats.p99_ns),
            (50, 90, Some(95), 99)
        );
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
            let stats = DurationStats::from_samples(&mut samples.clone()).unwrap();
            assert_percentiles_of_sorted(&stats, &samples, &format!("{length} samples"));
        }
    }

    /// Past [`SELECT_BELOW`] the percentiles come from buckets: on narrow,
    /// wide, heavy-tailed, constant and extreme samples, they are those of
    /// the sorted samples, and the spread is that of the two-pass formula.
    #[test]
    fn bucketed_percentiles_are_those_of_the_sorted_samples() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        type Shape = (&'static str, fn(u64) -> u64);
        let shapes: [Shape; 7] = [
            ("narrow", |r| 1_000 + r % 40),
            ("below 256", |r| r % 256),
            ("wide", |r| r % 10_000_000),
            ("heavy tail", |r| {
                if r % 100 == 0 {
                    r % (1 << 40)
                } else {
                    5_000 + r % 300
                }
            }),
            ("constant", |_| 123_456),
            ("powers of two", |r| (1u64 << (8 + r % 50)) - (r >> 62)),
            ("extreme", |r| u64::MAX - r % 1_000),
        ];
        for (name, shape) in shapes {
            for length in [SELECT_BELOW, SELECT_BELOW + 1, 5_000, 100_003] {
                let samples: Vec<u64> = (0..length).map(|_| shape(next())).collect();
                let stats = DurationStats::of(&samples).unwrap();
                assert_percentiles_of_sorted(
                    &stats,
                    &samples,
                    &format!("{name}, {length} samples"),
                );
                let mean = samples.iter().map(|&s| s as f64).sum::<f64>() / length as f64;
                let variance = samples
                    .iter()
                    .map(|&s| (s as f64 - mean).powi(2))
                    .sum::<f64>()
                    / length as f64;
                let expected = variance.sqrt();
                assert!(
                    (stats.stddev_ns as f64 - expected).abs() <= 1.0 + expected * 1e-9,
                    "{name}, {length} samples: {} vs {expected}",
                    stats.stddev_ns
                );
            }
        }
    }

    #[test]
    fn buckets_ascend_with_their_values() {
        let mut previous = 0;
        for value in 0..70_000u64 {
            let at = bucket(value);
            assert!(at >= previous, "{value}");
            previous = at;
        }
        for bit in 8..64 {
            let power = 1u64 << bit;
            let around = [
                power - 1,
                power,
                power + 1,
                power + power / 2,
                power + (power - 1),
            ];
            for pair in around.windows(2) {
                assert!(bucket(pair[0]) <= bucket(pair[1]), "{pair:?}");
            }
            assert!(bucket(power - 1) < bucket(power), "2^{bit}");
        }
        assert_eq!(bucket(255), 255);
        assert_eq!(bucket(256), 256);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
        assert!(bucket((1 << 40) - 1) < bucket(1 << 40));
    }
}
