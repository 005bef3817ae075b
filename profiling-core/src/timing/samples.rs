//! Bounded sets of duration samples.
//!
//! A [`SampleSet`] keeps every sample up to a fixed capacity, allocated
//! before measuring starts, and from then on only exact counts, totals and
//! extremes plus a log-linear histogram, so memory stays bounded on any run
//! length. Quantiles are exact while every sample was kept, and within the
//! histogram's relative error (about 1.6 %) after.

use crate::stats::DurationStats;

/// Sub-buckets per power of two: the relative width of a bucket is
/// `1 / SUB_BUCKETS`, so a quantile read from the histogram is within about
/// 1.6 % of the true sample.
const SUB_BUCKET_BITS: u32 = 6;
const SUB_BUCKETS: usize = 1 << SUB_BUCKET_BITS;
/// Values below `SUB_BUCKETS` get a bucket each; every power of two above
/// gets `SUB_BUCKETS / 2` more (the top bit is implied).
pub(crate) const BUCKETS: usize = SUB_BUCKETS + (64 - SUB_BUCKET_BITS as usize) * (SUB_BUCKETS / 2);

/// A log-linear histogram of nanosecond values (an HDR-style sketch).
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Box<[u64]>,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BUCKETS].into_boxed_slice(),
        }
    }
}

impl Histogram {
    #[inline]
    fn bucket(value: u64) -> usize {
        if value < SUB_BUCKETS as u64 {
            return value as usize;
        }
        // The position of the top bit picks the octave, the next bits the
        // sub-bucket within it.
        let top = 63 - value.leading_zeros();
        let shift = top + 1 - SUB_BUCKET_BITS;
        let sub = (value >> shift) as usize - SUB_BUCKETS / 2;
        SUB_BUCKETS + (shift as usize - 1) * (SUB_BUCKETS / 2) + sub
    }

    /// The middle of bucket `index`: what a quantile in it reads as.
    pub(crate) fn representative(index: usize) -> u64 {
        if index < SUB_BUCKETS {
            return index as u64;
        }
        let offset = index - SUB_BUCKETS;
        let shift = (offset / (SUB_BUCKETS / 2)) as u32 + 1;
        let sub = (offset % (SUB_BUCKETS / 2) + SUB_BUCKETS / 2) as u64;
        let low = sub << shift;
        low + ((1u64 << shift) >> 1)
    }

    /// Counts `value`.
    #[inline]
    pub fn record(&mut self, value: u64) {
        self.counts[Self::bucket(value)] += 1;
    }

    /// The value of nearest rank `rank` (1-based) among `total` counted.
    fn value_at_rank(&self, rank: u64) -> u64 {
        let mut seen = 0;
        for (index, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Self::representative(index);
            }
        }
        0
    }
}

/// Durations in nanoseconds: every sample up to a capacity, then exact
/// aggregates and a histogram.
#[derive(Debug, Clone)]
pub struct SampleSet {
    kept: Vec<u64>,
    histogram: Option<Histogram>,
    count: u64,
    total: u128,
    total_squares: f64,
    min: u64,
    max: u64,
}

impl SampleSet {
    /// A set that keeps up to `capacity` samples, allocated now.
    pub fn with_capacity(capacity: usize) -> SampleSet {
        SampleSet {
            kept: Vec::with_capacity(capacity),
            histogram: None,
            count: 0,
            total: 0,
            total_squares: 0.0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// A set for `expected` samples: up to `kept` of them one by one, and
    /// the histogram for the rest allocated now, so that [`SampleSet::push`]
    /// never allocates.
    pub fn expecting(expected: usize, kept: usize) -> SampleSet {
        let mut set = SampleSet::with_capacity(expected.min(kept));
        if expected > kept {
            set.histogram = Some(Histogram::default());
        }
        set
    }

    /// Adds a sample; allocates only the first time the capacity is passed
    /// (the histogram, unless [`SampleSet::expecting`] made it), never while
    /// samples are still kept.
    #[inline]
    pub fn push(&mut self, value: u64) {
        self.count += 1;
        self.total += u128::from(value);
        self.total_squares += (value as f64) * (value as f64);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        if self.kept.len() < self.kept.capacity() {
            self.kept.push(value);
        } else {
            self.histogram
                .get_or_insert_with(Histogram::default)
                .record(value);
        }
    }

    /// Adds every sample of `other`: its kept samples one by one, its
    /// histogram and aggregates as they are.
    pub fn absorb(&mut self, other: &SampleSet) {
        for &value in &other.kept {
            self.push(value);
        }
        if let Some(theirs) = &other.histogram {
            let ours = self.histogram.get_or_insert_with(Histogram::default);
            for (mine, count) in ours.counts.iter_mut().zip(theirs.counts.iter()) {
                *mine += count;
            }
            let kept = other.kept.len() as u64;
            let kept_total: u128 = other.kept.iter().map(|&v| u128::from(v)).sum();
            let kept_squares: f64 = other.kept.iter().map(|&v| (v as f64) * (v as f64)).sum();
            self.count += other.count - kept;
            self.total += other.total - kept_total;
            self.total_squares += other.total_squares - kept_squares;
            self.min = self.min.min(other.min);
            self.max = self.max.max(other.max);
        }
    }

    /// How many samples were added.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// True when some samples live only in the histogram.
    pub fn is_sketched(&self) -> bool {
        self.count > self.kept.len() as u64
    }

    /// The samples kept, in the order added.
    pub fn kept(&self) -> &[u64] {
        &self.kept
    }

    /// The sum of every sample added.
    pub fn total(&self) -> u128 {
        self.total
    }

    /// The smallest and largest sample added; `None` when empty.
    pub fn extremes(&self) -> Option<(u64, u64)> {
        (self.count > 0).then_some((self.min, self.max))
    }

    /// The histogram's non-empty buckets, `(index, count)`, of the samples
    /// past the kept ones (none while every sample is kept).
    pub fn sketched_buckets(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.histogram
            .iter()
            .flat_map(|h| h.counts.iter().enumerate())
            .filter(|&(_, &count)| count > 0)
            .map(|(index, &count)| (index as u32, count))
    }

    /// Statistics of every sample added: exact counts, totals, extremes,
    /// mean and spread; quantiles exact while every sample was kept, else
    /// from the histogram. `None` when empty.
    pub fn stats(&self) -> Option<DurationStats> {
        if self.count == 0 {
            return None;
        }
        let sketched = self.histogram.as_ref().filter(|_| self.is_sketched());
        let mut stats = if let Some(histogram) = sketched {
            let mut all = histogram.clone();
            for &value in &self.kept {
                all.record(value);
            }
            let rank = |p: f64| ((p * self.count as f64).ceil() as u64).clamp(1, self.count);
            DurationStats {
                count: self.count,
                min_ns: self.min,
                p50_ns: all.value_at_rank(rank(0.50)),
                mean_ns: 0,
                p90_ns: all.value_at_rank(rank(0.90)),
                p99_ns: all.value_at_rank(rank(0.99)),
                max_ns: self.max,
                stddev_ns: 0,
                total_ns: 0,
            }
        } else {
            DurationStats::from_samples(&mut self.kept.clone())?
        };
        let count = self.count as f64;
        let mean = self.total as f64 / count;
        let variance = (self.total_squares / count - mean * mean).max(0.0);
        stats.mean_ns = mean.round() as u64;
        stats.stddev_ns = variance.sqrt().round() as u64;
        stats.total_ns = u64::try_from(self.total).unwrap_or(u64::MAX);
        // Quantiles read from buckets stay within the exact extremes.
        stats.p50_ns = stats.p50_ns.clamp(self.min, self.max);
        stats.p90_ns = stats.p90_ns.clamp(self.min, self.max);
        stats.p99_ns = stats.p99_ns.clamp(self.min, self.max);
        Some(stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_tight() {
        let mut previous = 0;
        for value in (0..1_000_000u64).step_by(7).chain([u64::MAX / 2, u64::MAX]) {
            let bucket = Histogram::bucket(value);
            assert!(bucket >= previous, "{value}");
            assert!(bucket < BUCKETS);
            previous = bucket;
            let representative = Histogram::representative(bucket) as f64;
            let error = (representative - value as f64).abs() / (value as f64).max(1.0);
            assert!(
                error <= 1.0 / SUB_BUCKETS as f64,
                "{value}: {representative} ({error})"
            );
        }
    }

    #[test]
    fn the_table_ends_at_the_largest_value_and_fits_in_15_kib() {
        assert_eq!(Histogram::bucket(u64::MAX), BUCKETS - 1);
        assert_eq!(Histogram::bucket(1 << 63), BUCKETS - SUB_BUCKETS / 2);
        assert_eq!(
            Histogram::default().counts.len() * std::mem::size_of::<u64>(),
            15_360
        );
    }

    #[test]
    fn a_set_expecting_more_than_it_keeps_has_its_histogram_and_is_exact_until_used() {
        let mut set = SampleSet::expecting(10, 4);
        assert_eq!(set.kept.capacity(), 4);
        assert!(set.histogram.is_some());
        for value in [5, 1, 3] {
            set.push(value);
        }
        assert!(!set.is_sketched());
        let stats = set.stats().unwrap();
        assert_eq!((stats.min_ns, stats.p50_ns, stats.max_ns), (1, 3, 5));
        for value in [7, 9] {
            set.push(value);
        }
        assert!(set.is_sketched());
        assert_eq!(set.count(), 5);
        assert!(SampleSet::expecting(3, 4).histogram.is_none());
    }

    #[test]
    fn kept_samples_give_exact_stats() {
        let mut set = SampleSet::with_capacity(100);
        for value in (1..=100).rev() {
            set.push(value);
        }
        assert!(!set.is_sketched());
        let stats = set.stats().unwrap();
        assert_eq!(
            (
                stats.count,
                stats.min_ns,
                stats.p50_ns,
                stats.p90_ns,
                stats.p99_ns,
                stats.max_ns
            ),
            (100, 1, 50, 90, 99, 100)
        );
        assert_eq!(
            (stats.total_ns, stats.mean_ns, stats.stddev_ns),
            (5050, 51, 29)
        );
    }

    #[test]
    fn past_the_capacity_counts_stay_exact_and_quantiles_close() {
        let mut set = SampleSet::with_capacity(1_000);
        let values: Vec<u64> = (0..200_000u64)
            .map(|i| 10_000 + (i * 7919) % 90_000)
            .collect();
        for &value in &values {
            set.push(value);
        }
        assert!(set.is_sketched());
        assert_eq!(set.kept().len(), 1_000);
        let stats = set.stats().unwrap();
        let mut sorted = values.clone();
        let exact = DurationStats::from_samples(&mut sorted).unwrap();
        assert_eq!(
            (stats.count, stats.min_ns, stats.max_ns, stats.total_ns),
            (exact.count, exact.min_ns, exact.max_ns, exact.total_ns)
        );
        assert_eq!(stats.mean_ns, exact.mean_ns);
        assert!(
            stats.stddev_ns.abs_diff(exact.stddev_ns) <= 1,
            "{} vs {}",
            stats.stddev_ns,
            exact.stddev_ns
        );
        for (sketched, exact) in [
            (stats.p50_ns, exact.p50_ns),
            (stats.p90_ns, exact.p90_ns),
            (stats.p99_ns, exact.p99_ns),
        ] {
            let error = sketched.abs_diff(exact) as f64 / exact as f64;
            assert!(error < 0.02, "{sketched} vs {exact}");
        }
    }

    #[test]
    fn absorbing_a_set_with_kept_and_sketched_samples_counts_each_once() {
        let mut other = SampleSet::with_capacity(5);
        let mut ours = SampleSet::with_capacity(4);
        let mut reference = SampleSet::with_capacity(100);
        for value in [700, 300, 900, 100, 500, 1100, 1300, 200, 1700, 1900] {
            other.push(value);
            reference.push(value);
        }
        for value in [50, 60, 4000] {
            ours.push(value);
            reference.push(value);
        }
        assert!(other.is_sketched() && !ours.is_sketched());
        ours.absorb(&other);
        let (merged, exact) = (ours.stats().unwrap(), reference.stats().unwrap());
        assert_eq!(
            (
                merged.count,
                merged.total_ns,
                merged.min_ns,
                merged.max_ns,
                merged.mean_ns
            ),
            (13, exact.total_ns, 50, 4000, exact.mean_ns)
        );
        assert!(
            merged.stddev_ns.abs_diff(exact.stddev_ns) <= 1,
            "{} vs {}",
            merged.stddev_ns,
            exact.stddev_ns
        );
        for (sketched, exact) in [(merged.p50_ns, exact.p50_ns), (merged.p90_ns, exact.p90_ns)] {
            assert!(
                sketched.abs_diff(exact) as f64 <= exact as f64 / 32.0,
                "{sketched} vs {exact}"
            );
        }
    }

    #[test]
    fn a_quantile_from_the_histogram_reads_as_its_bucket_middle() {
        // 64 and 65 share the first two-wide bucket, whose middle is 65.
        assert_eq!(Histogram::bucket(64), Histogram::bucket(65));
        assert_eq!(Histogram::representative(Histogram::bucket(64)), 65);
        let mut set = SampleSet::with_capacity(0);
        for value in [64, 64, 65] {
            set.push(value);
        }
        let stats = set.stats().unwrap();
        assert_eq!((stats.min_ns, stats.p50_ns, stats.max_ns), (64, 65, 65));
    }

    #[test]
    fn absorbing_a_sketched_set_keeps_exact_aggregates() {
        let mut overflow = SampleSet::with_capacity(0);
        let mut kept = SampleSet::with_capacity(10);
        let mut reference = SampleSet::with_capacity(20);
        for value in 1..=10 {
            kept.push(value * 100);
            overflow.push(value * 1000);
            reference.push(value * 100);
            reference.push(value * 1000);
        }
        kept.absorb(&overflow);
        let (merged, exact) = (kept.stats().unwrap(), reference.stats().unwrap());
        assert_eq!(
            (
                merged.count,
                merged.total_ns,
                merged.min_ns,
                merged.max_ns,
                merged.mean_ns
            ),
            (20, exact.total_ns, 100, 10_000, exact.mean_ns)
        );
        assert!(kept.is_sketched());
        assert!(merged.p50_ns.abs_diff(exact.p50_ns) as f64 <= exact.p50_ns as f64 / 64.0);
    }

    #[test]
    fn an_empty_set_has_no_stats() {
        assert!(SampleSet::with_capacity(4).stats().is_none());
    }
}
