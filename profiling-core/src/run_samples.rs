//! `samples.bin`: the raw durations of a run, kept beside its manifest so
//! that runs can be compared sample by sample.
//!
//! It holds one series per pass, per call and per range name (inclusive
//! and exclusive), bounded the way the manifest's statistics are: the
//! samples kept one by one, in the order measured, and past them the
//! non-empty buckets of the histogram the run used.
//!
//! # Layout, version 1
//!
//! All integers little-endian; `varint` is unsigned LEB128 (7 bits a byte,
//! low bits first), which stores a duration of a microsecond in 2 bytes and
//! of a second in 5.
//!
//! ```text
//! magic          8 bytes   "PCSAMPLS"
//! version        u32       1
//! series         u32       how many series follow
//! each series:
//!   kind         u8        0 pass, 1 call, 2 range inclusive, 3 range exclusive,
//!                          4 warmup pass (its target calls, validation aside;
//!                          optional)
//!   name length  u32       then the name, UTF-8 (empty for pass and call)
//!   count        u64       every sample of the series
//!   kept         u64       the samples stored one by one
//!   min, max     u64, u64  of every sample (0 and 0 when count is 0)
//!   total        u128      the sum of every sample
//!   samples      varint    `kept` of them, in the order measured
//!   buckets      u32       histogram buckets that follow, each
//!                          (index varint, count varint); the counts add up
//!                          to count - kept
//! end            4 bytes   "END."
//! ```
//!
//! A histogram bucket `i` holds the values of one log-linear bucket of the
//! version's histogram (64 sub-buckets per power of two); a reader
//! counts its samples at the bucket's middle, clamped to `min..=max`.

use std::collections::BTreeMap;

use crate::timing::samples::{Histogram, BUCKETS};
use crate::timing::SampleSet;

/// The file's name, beside `manifest.yaml`.
pub const SAMPLES_FILE: &str = "samples.bin";
/// The version this build writes and reads.
pub const SAMPLES_VERSION: u32 = 1;
const MAGIC: &[u8; 8] = b"PCSAMPLS";
const END: &[u8; 4] = b"END.";

/// What a series times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SeriesKind {
    /// A measured pass over every record.
    Pass,
    /// One target call in a measured pass.
    Call,
    /// A range, from opening to closing.
    RangeInclusive,
    /// A range's own time: inclusive minus the recorded ranges inside it.
    RangeExclusive,
    /// A warmup pass: the time of its target calls, validation aside.
    WarmupPass,
}

impl SeriesKind {
    fn code(self) -> u8 {
        match self {
            SeriesKind::Pass => 0,
            SeriesKind::Call => 1,
            SeriesKind::RangeInclusive => 2,
            SeriesKind::RangeExclusive => 3,
            SeriesKind::WarmupPass => 4,
        }
    }

    fn from_code(code: u8) -> Option<SeriesKind> {
        Some(match code {
            0 => SeriesKind::Pass,
            1 => SeriesKind::Call,
            2 => SeriesKind::RangeInclusive,
            3 => SeriesKind::RangeExclusive,
            4 => SeriesKind::WarmupPass,
            _ => return None,
        })
    }
}

/// The durations of one series, in nanoseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Series {
    /// Every sample of the series, kept or not.
    pub count: u64,
    /// The samples kept one by one, in the order measured.
    pub kept: Vec<u64>,
    /// Past the kept samples: non-empty histogram buckets, `(index, count)`.
    pub buckets: Vec<(u32, u64)>,
    pub min: u64,
    pub max: u64,
    pub total: u128,
}

impl Series {
    /// The series of a sample set.
    pub fn from_set(set: &SampleSet) -> Series {
        let (min, max) = set.extremes().unwrap_or((0, 0));
        Series {
            count: set.count(),
            kept: set.kept().to_vec(),
            buckets: set.sketched_buckets().collect(),
            min,
            max,
            total: set.total(),
        }
    }

    /// True when some samples are known only by their histogram bucket.
    pub fn is_sketched(&self) -> bool {
        !self.buckets.is_empty()
    }

    /// Every sample, sorted: the kept ones exactly, the rest at their
    /// bucket's middle (within 1.6 %), clamped to the exact extremes; the
    /// smallest and the largest are exact.
    pub fn sorted_values(&self) -> Vec<u64> {
        let mut values = Vec::with_capacity(usize::try_from(self.count).unwrap_or(0));
        values.extend_from_slice(&self.kept);
        for &(index, count) in &self.buckets {
            let value = Histogram::representative(index as usize).clamp(self.min, self.max);
            values.extend(std::iter::repeat_n(value, count as usize));
        }
        values.sort_unstable();
        // One sample was the minimum and one the maximum.
        if let (Some(first), true) = (values.first_mut(), self.count > 0) {
            *first = self.min;
        }
        if let (Some(last), true) = (values.last_mut(), self.count > 0) {
            *last = self.max;
        }
        values
    }
}

/// The durations of one range name, over every thread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeSeries {
    pub name: String,
    pub inclusive: Series,
    pub exclusive: Series,
}

/// Every series of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSamples {
    pub passes: Series,
    pub calls: Series,
    /// By name.
    pub ranges: Vec<RangeSeries>,
    /// The warmup passes, in order (empty without warmup).
    pub warmup: Series,
}

impl RunSamples {
    /// The samples of a run's pass and call sets and its per-name range
    /// sets (inclusive, exclusive).
    pub fn from_sets(
        passes: &SampleSet,
        calls: &SampleSet,
        ranges: &BTreeMap<String, (SampleSet, SampleSet)>,
    ) -> RunSamples {
        RunSamples {
            passes: Series::from_set(passes),
            calls: Series::from_set(calls),
            ranges: ranges
                .iter()
                .map(|(name, (inclusive, exclusive))| RangeSeries {
                    name: name.clone(),
                    inclusive: Series::from_set(inclusive),
                    exclusive: Series::from_set(exclusive),
                })
                .collect(),
            warmup: Series::default(),
        }
    }

    /// How many series the file holds.
    pub fn series_count(&self) -> usize {
        3 + 2 * self.ranges.len()
    }

    /// True when some series are known past their kept samples only by
    /// histogram buckets.
    pub fn is_sketched(&self) -> bool {
        self.passes.is_sketched()
            || self.calls.is_sketched()
            || self
                .ranges
                .iter()
                .any(|r| r.inclusive.is_sketched() || r.exclusive.is_sketched())
    }

    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let samples: usize = [&self.passes, &self.calls]
            .into_iter()
            .chain(
                self.ranges
                    .iter()
                    .flat_map(|r| [&r.inclusive, &r.exclusive]),
            )
            .map(|s| s.kept.len())
            .sum();
        let mut bytes = Vec::with_capacity(64 + samples * 3);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&SAMPLES_VERSION.to_le_bytes());
        bytes.extend_from_slice(&(self.series_count() as u32).to_le_bytes());
        encode_series(&mut bytes, SeriesKind::Pass, "", &self.passes);
        encode_series(&mut bytes, SeriesKind::Call, "", &self.calls);
        encode_series(&mut bytes, SeriesKind::WarmupPass, "", &self.warmup);
        for range in &self.ranges {
            encode_series(
                &mut bytes,
                SeriesKind::RangeInclusive,
                &range.name,
                &range.inclusive,
            );
            encode_series(
                &mut bytes,
                SeriesKind::RangeExclusive,
                &range.name,
                &range.exclusive,
            );
        }
        bytes.extend_from_slice(END);
        bytes
    }

    /// Reads the file's bytes back.
    pub fn decode(bytes: &[u8]) -> Result<RunSamples, SamplesError> {
        let mut reader = Reader { bytes, at: 0 };
        if reader.take(MAGIC.len()).ok() != Some(MAGIC.as_slice()) {
            return Err(SamplesError::NotSamples);
        }
        let version = reader.u32()?;
        if version != SAMPLES_VERSION {
            return Err(SamplesError::Version { found: version });
        }
        let count = reader.u32()?;
        let mut samples = RunSamples::default();
        let mut seen = [false; 3];
        let mut ranges: BTreeMap<String, (Option<Series>, Option<Series>)> = BTreeMap::new();
        for _ in 0..count {
            let at = reader.at;
            let (kind, name, series) = reader.series()?;
            let duplicate = || SamplesError::Corrupt {
                at,
                what: format!("a second {kind:?} series{}", named(&name)),
            };
            match kind {
                SeriesKind::Pass | SeriesKind::Call | SeriesKind::WarmupPass => {
                    let index = match kind {
                        SeriesKind::Pass => 0,
                        SeriesKind::Call => 1,
                        _ => 2,
                    };
                    if std::mem::replace(&mut seen[index], true) {
                        return Err(duplicate());
                    }
                    *[&mut samples.passes, &mut samples.calls, &mut samples.warmup][index] = series;
                }
                SeriesKind::RangeInclusive | SeriesKind::RangeExclusive => {
                    let entry = ranges.entry(name.clone()).or_default();
                    let slot = if kind == SeriesKind::RangeInclusive {
                        &mut entry.0
                    } else {
                        &mut entry.1
                    };
                    if slot.replace(series).is_some() {
                        return Err(duplicate());
                    }
                }
            }
        }
        let end_at = reader.at;
        if reader.take(END.len())? != END {
            return Err(SamplesError::Corrupt {
                at: end_at,
                what: "no end marker after the last series".to_owned(),
            });
        }
        if reader.at != bytes.len() {
            return Err(SamplesError::Corrupt {
                at: reader.at,
                what: format!("{} bytes after the end marker", bytes.len() - reader.at),
            });
        }
        if !(seen[0] && seen[1]) {
            return Err(SamplesError::Corrupt {
                at: end_at,
                what: "the pass or the call series is missing".to_owned(),
            });
        }
        for (name, pair) in ranges {
            match pair {
                (Some(inclusive), Some(exclusive)) => samples.ranges.push(RangeSeries {
                    name,
                    inclusive,
                    exclusive,
                }),
                _ => {
                    return Err(SamplesError::Corrupt {
                        at: end_at,
                        what: format!("range `{name}` has only one of its two series"),
                    })
                }
            }
        }
        Ok(samples)
    }
}

fn named(name: &str) -> String {
    if name.is_empty() {
        String::new()
    } else {
        format!(" for `{name}`")
    }
}

fn encode_series(bytes: &mut Vec<u8>, kind: SeriesKind, name: &str, series: &Series) {
    bytes.push(kind.code());
    bytes.extend_from_slice(&(name.len() as u32).to_le_bytes());
    bytes.extend_from_slice(name.as_bytes());
    bytes.extend_from_slice(&series.count.to_le_bytes());
    bytes.extend_from_slice(&(series.kept.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&series.min.to_le_bytes());
    bytes.extend_from_slice(&series.max.to_le_bytes());
    bytes.extend_from_slice(&series.total.to_le_bytes());
    for &value in &series.kept {
        put_varint(bytes, value);
    }
    bytes.extend_from_slice(&(series.buckets.len() as u32).to_le_bytes());
    for &(index, count) in &series.buckets {
        put_varint(bytes, u64::from(index));
        put_varint(bytes, count);
    }
}

#[inline]
fn put_varint(bytes: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        bytes.push((value as u8) | 0x80);
        value >>= 7;
    }
    bytes.push(value as u8);
}

/// Why a samples file cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SamplesError {
    #[error("not a samples file: it does not begin with \"PCSAMPLS\"")]
    NotSamples,
    #[error("samples file version {found}, but this profile-cli reads version {SAMPLES_VERSION}: re-run the profile with this profile-cli")]
    Version { found: u32 },
    #[error("cut short: it ends at byte {len}, in the middle of what begins at byte {at}")]
    Truncated { at: usize, len: usize },
    #[error("corrupt at byte {at}: {what}")]
    Corrupt { at: usize, what: String },
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8], SamplesError> {
        let end = self
            .at
            .checked_add(len)
            .filter(|&end| end <= self.bytes.len())
            .ok_or(SamplesError::Truncated {
                at: self.at,
                len: self.bytes.len(),
            })?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], SamplesError> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(N)?);
        Ok(array)
    }

    fn u32(&mut self) -> Result<u32, SamplesError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, SamplesError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    #[inline]
    fn varint(&mut self) -> Result<u64, SamplesError> {
        let start = self.at;
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&byte) = self.bytes.get(self.at) else {
                return Err(SamplesError::Truncated {
                    at: start,
                    len: self.bytes.len(),
                });
            };
            self.at += 1;
            let bits = u64::from(byte & 0x7f);
            if shift == 63 && bits > 1 {
                break;
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(SamplesError::Corrupt {
            at: start,
            what: "a number longer than 64 bits".to_owned(),
        })
    }

    /// A count of items that each take at least one byte: more than the
    /// bytes left is corruption (or a cut), never an allocation.
    fn bounded(&mut self, count: u64, at: usize) -> Result<usize, SamplesError> {
        let left = self.bytes.len() - self.at;
        match usize::try_from(count) {
            Ok(count) if count <= left => Ok(count),
            _ => Err(SamplesError::Truncated {
                at,
                len: self.bytes.len(),
            }),
        }
    }

    fn series(&mut self) -> Result<(SeriesKind, String, Series), SamplesError> {
        let at = self.at;
        let code = self.take(1)?[0];
        let kind = SeriesKind::from_code(code).ok_or_else(|| SamplesError::Corrupt {
            at,
            what: format!("unknown series kind {code}"),
        })?;
        let name_len = u64::from(self.u32()?);
        let name_len = self.bounded(name_len, at)?;
        let name = std::str::from_utf8(self.take(name_len)?)
            .map_err(|_| SamplesError::Corrupt {
                at,
                what: "a range name that is not UTF-8".to_owned(),
            })?
            .to_owned();
        let count = self.u64()?;
        let kept = self.u64()?;
        let (min, max) = (self.u64()?, self.u64()?);
        let total = u128::from_le_bytes(self.array()?);
        let kept_len = self.bounded(kept, at)?;
        let mut values = Vec::with_capacity(kept_len);
        for _ in 0..kept_len {
            values.push(self.varint()?);
        }
        let bucket_count = u64::from(self.u32()?);
        let bucket_count = self.bounded(bucket_count, at)?;
        let mut buckets = Vec::with_capacity(bucket_count);
        let mut sketched = 0u64;
        for _ in 0..bucket_count {
            let index = self.varint()?;
            let count = self.varint()?;
            if index >= BUCKETS as u64 || count == 0 {
                return Err(SamplesError::Corrupt {
                    at,
                    what: format!("histogram bucket {index} with {count} samples"),
                });
            }
            sketched = sketched.saturating_add(count);
            buckets.push((index as u32, count));
        }
        let out_of_range = values.iter().any(|&v| v < min || v > max);
        if kept.checked_add(sketched) != Some(count) || (count > 0 && (min > max || out_of_range)) {
            return Err(SamplesError::Corrupt {
                at,
                what: format!(
                    "the {kind:?} series{} does not add up: {count} samples, {kept} kept and {sketched} in its histogram, between {min} and {max}",
                    named(&name)
                ),
            });
        }
        let series = Series {
            count,
            kept: values,
            buckets,
            min,
            max,
            total,
        };
        Ok((kind, name, series))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn set(values: &[u64], capacity: usize) -> SampleSet {
        let mut set = SampleSet::with_capacity(capacity);
        for &value in values {
            set.push(value);
        }
        set
    }

    fn example() -> RunSamples {
        let mut ranges = BTreeMap::new();
        ranges.insert(
            "decode".to_owned(),
            (
                set(&[900, 1_200, 1_000_000_007], 8),
                set(&[400, 500, 600], 8),
            ),
        );
        ranges.insert(
            "résumé ⏱".to_owned(),
            (set(&[10, 20, 30, 40, 50], 2), set(&[1, 2, 3, 4, 5], 2)),
        );
        RunSamples::from_sets(&set(&[5_000, 7_000], 4), &set(&[], 4), &ranges)
    }

    #[test]
    fn a_run_reads_back_as_written() {
        let samples = example();
        let bytes = samples.encode();
        assert_eq!(&bytes[..8], b"PCSAMPLS");
        assert_eq!(&bytes[8..12], &1u32.to_le_bytes());
        assert_eq!(&bytes[12..16], &7u32.to_le_bytes());
        assert_eq!(&bytes[bytes.len() - 4..], b"END.");
        assert_eq!(RunSamples::decode(&bytes), Ok(samples.clone()));
        let sketched = &samples.ranges[1].inclusive;
        assert_eq!(
            (sketched.count, sketched.kept.as_slice()),
            (5, &[10, 20][..])
        );
        assert!(sketched.is_sketched() && samples.is_sketched());
        assert!(!samples.passes.is_sketched());
        assert_eq!((sketched.min, sketched.max, sketched.total), (10, 50, 150));
    }

    #[test]
    fn sorted_values_are_exact_when_kept_and_bucket_middles_past_that() {
        let samples = example();
        assert_eq!(
            samples.ranges[0].inclusive.sorted_values(),
            [900, 1_200, 1_000_000_007]
        );
        // 30, 40 and 50 went to the histogram: buckets of width 1 below 64.
        assert_eq!(
            samples.ranges[1].inclusive.sorted_values(),
            [10, 20, 30, 40, 50]
        );
        let wide = Series::from_set(&set(&[1_000, 1_001, 100_000], 0));
        let values = wide.sorted_values();
        assert_eq!(values.len(), 3);
        for (value, exact) in values.iter().zip([1_000u64, 1_001, 100_000]) {
            assert!(
                value.abs_diff(exact) as f64 <= exact as f64 / 64.0,
                "{value} vs {exact}"
            );
        }
        assert_eq!((values[0], values[2]), (1_000, 100_000), "exact extremes");
    }

    #[test]
    fn every_cut_is_said_to_be_one_and_nothing_panics() {
        let bytes = example().encode();
        for len in 0..bytes.len() {
            let error = RunSamples::decode(&bytes[..len]).unwrap_err();
            match (len, &error) {
                (0..8, SamplesError::NotSamples) => {}
                (8.., SamplesError::Truncated { len: at_len, .. }) => assert_eq!(*at_len, len),
                _ => panic!("cut at {len}: {error}"),
            }
        }
    }

    #[test]
    fn another_version_another_file_and_trailing_bytes_are_refused() {
        let mut bytes = example().encode();
        bytes[8] = 2;
        assert_eq!(
            RunSamples::decode(&bytes),
            Err(SamplesError::Version { found: 2 })
        );
        assert!(RunSamples::decode(&bytes)
            .unwrap_err()
            .to_string()
            .contains("samples file version 2, but this profile-cli reads version 1"));
        assert_eq!(
            RunSamples::decode(b"profile_name: x\n"),
            Err(SamplesError::NotSamples)
        );
        let mut longer = example().encode();
        longer.push(0);
        assert!(matches!(
            RunSamples::decode(&longer),
            Err(SamplesError::Corrupt { what, .. }) if what == "1 bytes after the end marker"
        ));
    }

    #[test]
    fn a_series_that_does_not_add_up_is_corrupt() {
        let mut samples = example();
        samples.passes.count = 3; // two kept, none in the histogram
        let error = RunSamples::decode(&samples.encode()).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("the Pass series does not add up: 3 samples, 2 kept"),
            "{error}"
        );
        let mut samples = example();
        samples.ranges[0].exclusive.kept[0] = 7; // below its minimum
        assert!(matches!(
            RunSamples::decode(&samples.encode()),
            Err(SamplesError::Corrupt { .. })
        ));
    }

    #[test]
    fn a_huge_count_is_a_cut_not_an_allocation() {
        let mut bytes = example().encode();
        // The pass series' `kept`, after magic, version, count, kind and
        // an empty name.
        let kept_at = 8 + 4 + 4 + 1 + 4 + 8;
        bytes[kept_at..kept_at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            RunSamples::decode(&bytes),
            Err(SamplesError::Truncated { .. })
        ));
    }

    #[test]
    fn a_long_run_stays_small() {
        // 100,000 passes of about 2 ms with 5 ranges of 50 µs to 1 ms:
        // 1.2 million samples in about 3 bytes each.
        let passes = 100_000u64;
        let spread = |i: u64, base: u64| base + (i * 7919) % (base / 4);
        let mut ranges = BTreeMap::new();
        for (r, base) in [50_000u64, 100_000, 200_000, 400_000, 1_000_000]
            .into_iter()
            .enumerate()
        {
            let values: Vec<u64> = (0..passes).map(|i| spread(i, base)).collect();
            let selves: Vec<u64> = values.iter().map(|v| v / 3).collect();
            ranges.insert(
                format!("range {r}"),
                (set(&values, values.len()), set(&selves, selves.len())),
            );
        }
        let pass_values: Vec<u64> = (0..passes).map(|i| spread(i, 2_000_000)).collect();
        let samples = RunSamples::from_sets(
            &set(&pass_values, pass_values.len()),
            &set(&pass_values, pass_values.len()),
            &ranges,
        );
        let bytes = samples.encode();
        assert!(bytes.len() < 4_000_000, "{} bytes", bytes.len());
        assert_eq!(RunSamples::decode(&bytes).unwrap(), samples);
    }

    proptest! {
        #[test]
        fn any_run_round_trips(
            passes in proptest::collection::vec(any::<u64>(), 0..40),
            capacity in 0usize..50,
            names in proptest::collection::btree_set("[a-z ]{0,8}", 0..4),
        ) {
            let mut ranges = BTreeMap::new();
            for name in names {
                ranges.insert(name, (set(&passes, capacity), set(&passes, capacity / 2)));
            }
            let samples = RunSamples::from_sets(&set(&passes, capacity), &set(&passes, 0), &ranges);
            prop_assert_eq!(RunSamples::decode(&samples.encode()), Ok(samples));
        }
    }
}
