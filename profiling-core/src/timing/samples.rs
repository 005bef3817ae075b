//! Bounded sets of duration samples.
//!
//! A [`SampleSet`] keeps every sample up to a fixed capacity, allocated
//! before measuring starts, and from then on only exact counts, totals and
//! extremes plus an HDR histogram (the `hdrhistogram` crate), so memory
//! stays bounded on any run length. Quantiles are exact while every sample
//! was kept, and within [`HISTOGRAM_ERROR`] (under 0.4 %) after.

use crate::stats::DurationStats;

/// Two significant figures: hdrhistogram then keeps 256 sub-buckets per
/// power of two (unit resolution up to 2 x 10^2, rounded up to a power of
/// two), so a bucket is at most 1/128 of its lowest value wide.
const SIGNIFICANT_FIGURES: u8 = 2;

/// How far, relative to a sample, the value a quantile reads from the
/// histogram can be: a bucket's middle is within half its width, 1/256,
/// of every value it counts (values below 256 ns have a bucket each).
pub(crate) const HISTOGRAM_ERROR: f64 = 1.0 / 256.0;

/// A histogram of nanosecond values over the whole `u64` range, allocated
/// once (about 58 KiB): recording never resizes it, so never allocates.
#[derive(Debug, Clone)]
pub(crate) struct Histogram(hdrhistogram::Histogram<u64>);

impl Default for Histogram {
    fn default() -> Self {
        Histogram(
            hdrhistogram::Histogram::new_with_bounds(1, u64::MAX, SIGNIFICANT_FIGURES)
                .expect("1..=u64::MAX at two significant figures is a valid histogram"),
        )
    }
}

impl Histogram {
    /// Counts `value`.
    #[inline]
    pub(crate) fn record(&mut self, value: u64) {
        // Every u64 is in range: nothing is clamped, nothing can fail.
        self.0.saturating_record(value);
    }

    /// Counts every value `other` counted.
    fn add(&mut self, other: &Histogram) {
        for bucket in other.0.iter_recorded() {
            self.0
                .saturating_record_n(bucket.value_iterated_to(), bucket.count_at_value());
        }
    }

    /// The non-empty buckets, `(middle, count)`, in ascending order: the
    /// middle is what a sample counted there reads as.
    pub(crate) fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.0.iter_recorded().map(|bucket| {
            (
                self.0.median_equivalent(bucket.value_iterated_to()),
                bucket.count_at_value(),
            )
        })
    }

    /// The value of nearest rank `rank` (1-based): the middle of its bucket.
    fn value_at_rank(&self, rank: u64) -> u64 {
        let mut seen = 0u64;
        for (middle, count) in self.buckets() {
            seen = seen.saturating_add(count);
            if seen >= rank {
                return middle;
            }
        }
        0
    }
}

/// Durations in nanoseconds: every sample up to a capacity, then exact
/// aggregates and a histogram.
///
/// Adding a sample that is kept is one store: the aggregates of the kept
/// samples are computed when asked for, so the measured loop carries no
/// running sums. Only the samples past the capacity are summed as they come.
#[derive(Debug, Clone)]
pub struct SampleSet {
    kept: Vec<u64>,
    histogram: Option<Histogram>,
    /// The samples past `kept`.
    past: Aggregates,
}

/// Exact count, total, sum of squares and extremes of some samples.
#[derive(Debug, Clone, Copy)]
struct Aggregates {
    count: u64,
    total: u128,
    squares: f64,
    min: u64,
    max: u64,
}

impl Aggregates {
    const EMPTY: Aggregates = Aggregates {
        count: 0,
        total: 0,
        squares: 0.0,
        min: u64::MAX,
        max: 0,
    };

    fn add(&mut self, value: u64) {
        self.count += 1;
        self.total += u128::from(value);
        self.squares += (value as f64) * (value as f64);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    fn of(values: &[u64]) -> Aggregates {
        let mut aggregates = Aggregates::EMPTY;
        for &value in values {
            aggregates.add(value);
        }
        aggregates
    }

    fn merge(self, other: Aggregates) -> Aggregates {
        Aggregates {
            count: self.count + other.count,
            total: self.total + other.total,
            squares: self.squares + other.squares,
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }
}

impl SampleSet {
    /// A set that keeps up to `capacity` samples, allocated now.
    pub fn with_capacity(capacity: usize) -> SampleSet {
        SampleSet {
            kept: Vec::with_capacity(capacity),
            histogram: None,
            past: Aggregates::EMPTY,
        }
    }

    /// A set of `values`, every one kept.
    pub fn of_values(values: &[u64]) -> SampleSet {
        let mut set = SampleSet::with_capacity(values.len());
        set.kept.extend_from_slice(values);
        set
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

    /// Maps in the pages of the room left for kept samples now, in one
    /// call (see [`crate::memory::prefault_spare`]), rather than one page
    /// fault at a time as samples arrive.
    pub fn prefault(&mut self) {
        crate::memory::prefault_spare(&mut self.kept);
    }

    /// Adds a sample; allocates only the first time the capacity is passed
    /// (the histogram, unless [`SampleSet::expecting`] made it), never while
    /// samples are still kept.
    #[inline]
    pub fn push(&mut self, value: u64) {
        if self.kept.len() < self.kept.capacity() {
            self.kept.push(value);
        } else {
            self.push_past(value);
        }
    }

    /// A sample past the capacity: into the aggregates and the histogram.
    #[cold]
    #[inline(never)]
    fn push_past(&mut self, value: u64) {
        self.past.add(value);
        self.histogram
            .get_or_insert_with(Histogram::default)
            .record(value);
    }

    /// Adds every sample of `other`: its kept samples one by one, its
    /// histogram and aggregates as they are.
    pub fn absorb(&mut self, other: &SampleSet) {
        for &value in &other.kept {
            self.push(value);
        }
        if let Some(theirs) = &other.histogram {
            if other.past.count > 0 {
                self.histogram
                    .get_or_insert_with(Histogram::default)
                    .add(theirs);
                self.past = self.past.merge(other.past);
            }
        }
    }

    /// Every sample's aggregates: the kept ones summed now.
    fn aggregates(&self) -> Aggregates {
        Aggregates::of(&self.kept).merge(self.past)
    }

    /// How many samples were added.
    pub fn count(&self) -> u64 {
        self.kept.len() as u64 + self.past.count
    }

    /// True when some samples live only in the histogram.
    pub fn is_sketched(&self) -> bool {
        self.past.count > 0
    }

    /// The samples kept, in the order added.
    pub fn kept(&self) -> &[u64] {
        &self.kept
    }

    /// The samples kept, given up without a copy.
    pub fn into_kept(self) -> Vec<u64> {
        self.kept
    }

    /// The sum of every sample added.
    pub fn total(&self) -> u128 {
        self.kept.iter().map(|&v| u128::from(v)).sum::<u128>() + self.past.total
    }

    /// The sum of every sample added and the smallest and largest (`None`
    /// when empty), in one pass over the kept samples.
    pub fn total_and_extremes(&self) -> (u128, Option<(u64, u64)>) {
        let all = self.aggregates();
        (all.total, (all.count > 0).then_some((all.min, all.max)))
    }

    /// The smallest and largest sample added; `None` when empty.
    pub fn extremes(&self) -> Option<(u64, u64)> {
        let all = self.aggregates();
        (all.count > 0).then_some((all.min, all.max))
    }

    /// The histogram's non-empty buckets, `(middle, count)` in ascending
    /// order, of the samples past the kept ones (none while every sample is
    /// kept).
    pub fn sketched_buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.histogram
            .iter()
            .filter(|_| self.is_sketched())
            .flat_map(Histogram::buckets)
    }

    /// Statistics of every sample added: exact counts, totals, extremes,
    /// mean and spread; quantiles exact while every sample was kept, else
    /// from the histogram. `None` when empty.
    pub fn stats(&self) -> Option<DurationStats> {
        let Some(histogram) = self.histogram.as_ref().filter(|_| self.is_sketched()) else {
            // Every sample kept: exact, spread included.
            return DurationStats::of(&self.kept);
        };
        let all = self.aggregates();
        let mut every = histogram.clone();
        for &value in &self.kept {
            every.record(value);
        }
        let rank = |p: f64| ((p * all.count as f64).ceil() as u64).clamp(1, all.count);
        let count = all.count as f64;
        let mean = all.total as f64 / count;
        let variance = (all.squares / count - mean * mean).max(0.0);
        // Quantiles read from buckets stay within the exact extremes.
        let quantile = |p: f64| every.value_at_rank(rank(p)).clamp(all.min, all.max);
        Some(DurationStats {
            count: all.count,
            min_ns: all.min,
            p50_ns: quantile(0.50),
            mean_ns: mean.round() as u64,
            p90_ns: quantile(0.90),
            p95_ns: Some(quantile(0.95)),
            p99_ns: quantile(0.99),
            max_ns: all.max,
            stddev_ns: variance.sqrt().round() as u64,
            total_ns: u64::try_from(all.total).unwrap_or(u64::MAX),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_reads_within_the_stated_error_and_the_bound_is_reached() {
        let histogram = Histogram::default();
        let powers = (8..64).flat_map(|bit| {
            let power = 1u64 << bit;
            [power - 1, power, power + 1]
        });
        let mut worst = 0.0f64;
        for value in (0..1_000_000u64)
            .step_by(7)
            .chain(powers)
            .chain([u64::MAX / 2, u64::MAX])
        {
            let middle = histogram.0.median_equivalent(value);
            if value < 256 {
                assert_eq!(middle, value, "a bucket each below 256");
            }
            let error = middle.abs_diff(value) as f64 / value.max(1) as f64;
            assert!(error <= HISTOGRAM_ERROR, "{value}: {middle} ({error})");
            worst = worst.max(error);
        }
        // 256 and 257 share a bucket whose middle is 257.
        assert_eq!(worst, HISTOGRAM_ERROR);
    }

    #[test]
    fn the_histogram_counts_every_u64_in_58_kib_and_reads_buckets_in_order() {
        let mut histogram = Histogram::default();
        for value in [u64::MAX, 0, 1_000_000, 1_000_001, 5_000] {
            histogram.record(value);
        }
        let buckets: Vec<(u64, u64)> = histogram.buckets().collect();
        assert_eq!(
            buckets,
            [
                (0, 1),
                // 4,992 to 5,023; 999,424 to 1,003,519.
                (5_008, 1),
                (1_001_472, 2),
                (histogram.0.median_equivalent(u64::MAX), 1)
            ]
        );
        assert!(u64::MAX - buckets[3].0 <= (u64::MAX as f64 * HISTOGRAM_ERROR) as u64);
        assert_eq!(
            histogram.0.distinct_values() * std::mem::size_of::<u64>(),
            59_392
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
            assert!(error <= HISTOGRAM_ERROR, "{sketched} vs {exact}");
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
                sketched.abs_diff(exact) as f64 <= exact as f64 * HISTOGRAM_ERROR,
                "{sketched} vs {exact}"
            );
        }
    }

    #[test]
    fn a_quantile_from_the_histogram_reads_as_its_bucket_middle() {
        // 256 and 257 share the first two-wide bucket, whose middle is 257.
        let histogram = Histogram::default();
        assert_eq!(histogram.0.lowest_equivalent(257), 256);
        assert_eq!(histogram.0.median_equivalent(256), 257);
        let mut set = SampleSet::with_capacity(0);
        for value in [256, 256, 257] {
            set.push(value);
        }
        let stats = set.stats().unwrap();
        assert_eq!((stats.min_ns, stats.p50_ns, stats.max_ns), (256, 257, 257));
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
        assert!(
            merged.p50_ns.abs_diff(exact.p50_ns) as f64 <= exact.p50_ns as f64 * HISTOGRAM_ERROR
        );
    }

    #[test]
    fn an_empty_set_has_no_stats() {
        assert!(SampleSet::with_capacity(4).stats().is_none());
    }
}
