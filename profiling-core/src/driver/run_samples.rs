//! `samples.bin`: the raw durations of a run, kept beside its manifest so
//! that runs can be compared sample by sample.
//!
//! It holds one series per pass, per call and per range name (inclusive
//! and exclusive), bounded the way the manifest's statistics are: the
//! samples kept one by one, in the order measured, and past them the
//! non-empty buckets of the histogram the run used.
//!
//! # Layout, version 3
//!
//! All integers little-endian; `varint` is unsigned LEB128 (7 bits a byte,
//! low bits first), which stores a duration of a microsecond in 2 bytes and
//! of a second in 5.
//!
//! ```text
//! magic          8 bytes   "PCSAMPLS"
//! version        u32       3 (2 when it holds no memory series)
//! series         u32       how many series follow
//! each series:
//!   kind         u8        0 pass, 1 call, 2 range inclusive, 3 range exclusive,
//!                          4 warmup pass (its target calls, validation aside;
//!                          optional); with `memory: on`, one sample per
//!                          pass: 5 its allocations, 6 the bytes they
//!                          asked for, 7 its peak of live bytes, and per
//!                          range name 8 its allocations, 9 their bytes
//!                          (version 3)
//!   name length  u32       then the name, UTF-8 (empty for pass and call)
//!   count        u64       every sample of the series
//!   kept         u64       the samples stored one by one
//!   min, max     u64, u64  of every sample (0 and 0 when count is 0)
//!   total        u128      the sum of every sample
//!   samples      varint    `kept` of them, in the order measured
//!   buckets      u32       histogram buckets that follow, each
//!                          (value varint, count varint), values ascending;
//!                          the counts add up to count - kept
//! end            4 bytes   "END."
//! ```
//!
//! A bucket's value is the middle of one bucket of the run's histogram
//! (hdrhistogram at two significant figures, see
//! `timing::samples`): within 1/256 (0.4 %) of every sample it
//! counts. A reader counts its samples at that value, clamped to
//! `min..=max`, and needs to know nothing of the histogram.
//!
//! # Version 1
//!
//! Files of version 1 are still read. They differ only in their buckets,
//! `(index varint, count varint)`: `index` names a bucket of the earlier
//! log-linear histogram (64 sub-buckets per power of two), read at its
//! middle, within 1/64 (1.6 %) of its samples; [`RunSamples::version`]
//! says which a file was, and [`RunSamples::histogram_error`] its bound.

use std::collections::BTreeMap;

use crate::timing::samples::HISTOGRAM_ERROR;
use crate::timing::SampleSet;

/// The file's name, beside `manifest.yaml`.
pub const SAMPLES_FILE: &str = "samples.bin";
/// The version this build writes with memory series; without them it
/// writes [`SAMPLES_VERSION_WITHOUT_MEMORY`], which earlier builds read.
pub const SAMPLES_VERSION: u32 = 3;
/// The version of a file with no memory series.
pub const SAMPLES_VERSION_WITHOUT_MEMORY: u32 = 2;
/// Every version this build reads, the oldest first.
pub const SAMPLES_VERSIONS_READ: [u32; 3] = [1, 2, SAMPLES_VERSION];
const MAGIC: &[u8; 8] = b"PCSAMPLS";
const END: &[u8; 4] = b"END.";

/// The histogram of version 1 files: 64 sub-buckets per power of two,
/// bucket `index` read at its middle.
mod version_1 {
    const SUB_BUCKET_BITS: u32 = 6;
    const SUB_BUCKETS: usize = 1 << SUB_BUCKET_BITS;
    /// Values below `SUB_BUCKETS` had a bucket each; every power of two
    /// above, `SUB_BUCKETS / 2` more.
    pub(crate) const BUCKETS: u64 =
        (SUB_BUCKETS + (64 - SUB_BUCKET_BITS as usize) * (SUB_BUCKETS / 2)) as u64;
    /// Half a bucket's relative width.
    pub(crate) const ERROR: f64 = 1.0 / SUB_BUCKETS as f64;

    /// The middle of bucket `index`, below [`BUCKETS`].
    pub(crate) fn bucket_middle(index: u64) -> u64 {
        let index = index as usize;
        if index < SUB_BUCKETS {
            return index as u64;
        }
        let offset = index - SUB_BUCKETS;
        let shift = (offset / (SUB_BUCKETS / 2)) as u32 + 1;
        let sub = (offset % (SUB_BUCKETS / 2) + SUB_BUCKETS / 2) as u64;
        (sub << shift) + ((1u64 << shift) >> 1)
    }
}

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
    /// Per pass: its allocations (`memory: on`).
    PassAllocations,
    /// Per pass: the bytes its allocations asked for.
    PassAllocatedBytes,
    /// Per pass: its peak of live bytes.
    PassPeakBytes,
    /// Per pass: a range name's allocations, its children's included.
    RangeAllocations,
    /// Per pass: the bytes they asked for.
    RangeAllocatedBytes,
}

impl SeriesKind {
    fn code(self) -> u8 {
        match self {
            SeriesKind::Pass => 0,
            SeriesKind::Call => 1,
            SeriesKind::RangeInclusive => 2,
            SeriesKind::RangeExclusive => 3,
            SeriesKind::WarmupPass => 4,
            SeriesKind::PassAllocations => 5,
            SeriesKind::PassAllocatedBytes => 6,
            SeriesKind::PassPeakBytes => 7,
            SeriesKind::RangeAllocations => 8,
            SeriesKind::RangeAllocatedBytes => 9,
        }
    }

    fn from_code(code: u8) -> Option<SeriesKind> {
        Some(match code {
            0 => SeriesKind::Pass,
            1 => SeriesKind::Call,
            2 => SeriesKind::RangeInclusive,
            3 => SeriesKind::RangeExclusive,
            4 => SeriesKind::WarmupPass,
            5 => SeriesKind::PassAllocations,
            6 => SeriesKind::PassAllocatedBytes,
            7 => SeriesKind::PassPeakBytes,
            8 => SeriesKind::RangeAllocations,
            9 => SeriesKind::RangeAllocatedBytes,
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
    /// Past the kept samples: non-empty histogram buckets, `(middle,
    /// count)`, in ascending order.
    pub buckets: Vec<(u64, u64)>,
    pub min: u64,
    pub max: u64,
    pub total: u128,
}

impl Series {
    /// The series of a sample set.
    pub fn from_set(set: &SampleSet) -> Series {
        Series::from_owned(set.clone())
    }

    /// The series of a sample set, its kept samples moved, not copied.
    pub fn from_owned(set: SampleSet) -> Series {
        let (total, extremes) = set.total_and_extremes();
        let (min, max) = extremes.unwrap_or((0, 0));
        let count = set.count();
        let buckets = set.sketched_buckets().collect();
        Series {
            count,
            kept: set.into_kept(),
            buckets,
            min,
            max,
            total,
        }
    }

    /// True when some samples are known only by their histogram bucket.
    pub fn is_sketched(&self) -> bool {
        !self.buckets.is_empty()
    }

    /// Every sample, sorted: the kept ones exactly, the rest at their
    /// bucket's middle (within [`RunSamples::histogram_error`]), clamped to
    /// the exact extremes; the smallest and the largest are exact.
    pub fn sorted_values(&self) -> Vec<u64> {
        let mut values = Vec::with_capacity(usize::try_from(self.count).unwrap_or(0));
        values.extend_from_slice(&self.kept);
        for &(middle, count) in &self.buckets {
            let value = middle.clamp(self.min, self.max);
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

/// What a run with `memory: on` allocated, one sample per measured pass,
/// in the order measured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemorySeries {
    pub allocations: Series,
    pub allocated_bytes: Series,
    pub peak_bytes: Series,
    /// By range name.
    pub ranges: Vec<RangeMemorySeries>,
}

/// A range name's allocations and their bytes in each measured pass (0 in
/// a pass without one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeMemorySeries {
    pub name: String,
    pub allocations: Series,
    pub allocated_bytes: Series,
}

impl MemorySeries {
    fn series_count(&self) -> usize {
        3 + 2 * self.ranges.len()
    }
}

/// The file a paired run (`profile-cli ab`) writes in its directory,
/// beside the two sides' run directories.
pub const PAIRED_FILE: &str = "paired.json";

/// Looks of `ab --until-decided` at most, one after each stage from the
/// second (so at most `MAX_LOOKS + 1` stages, `AB_ID-1` ...): each more one
/// narrows every look's confidence level. Here, where a pair's stages are
/// recorded, so that a profiling binary that runs one stage names it as
/// `profile-cli`, which schedules them (`profiling_compare::sequential`),
/// does.
pub const MAX_LOOKS: u32 = 8;

/// The layout of [`PAIRED_FILE`].
pub const PAIRED_VERSION: u32 = 1;

/// What a paired run measured, pass by pass in the order they ran: what
/// its comparison pairs block by block.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PairedSamples {
    /// [`PAIRED_VERSION`].
    pub format_version: u32,
    /// The blocks in the order they ran: `base` or `candidate`, and how
    /// many of that side's passes in a row.
    pub blocks: Vec<(String, u32)>,
    pub base: SidePasses,
    pub candidate: SidePasses,
    /// The processes the two sides ran in: 1 (two targets of one build),
    /// or 2 (two builds, `ab --against`, paced in lock-step).
    #[serde(default = "one_process")]
    pub processes: u32,
    /// When pooled from stages that each built both sides' targets anew
    /// (`ab --until-decided`): how many block pairs each stage gave, in
    /// order. Empty: one stage. Where a target's data lands is drawn anew
    /// with each stage, so the comparison resamples stages as well as the
    /// pairs within them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<u32>,
    /// The machine-speed canary read between block pairs (a few of them,
    /// [`crate::driver::canary::between_blocks`]), in order; each reading
    /// streams a buffer allocated for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub canary: Vec<crate::driver::canary::Canary>,
}

fn one_process() -> u32 {
    1
}

/// One side's measured passes, in order.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SidePasses {
    /// Each pass's time.
    pub pass_ns: Vec<u64>,
    /// Each pass's median call (its only call with one input).
    pub call_ns: Vec<u64>,
    /// By range name: the inclusive time of its ranges in each pass (0 in
    /// a pass without one).
    pub ranges: BTreeMap<String, Vec<u64>>,
    /// With `memory: on`: each pass's allocations, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allocations: Vec<u64>,
    /// Each pass's allocated bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allocated_bytes: Vec<u64>,
    /// Each pass's peak of live bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peak_bytes: Vec<u64>,
    /// By range name: its allocations in each pass.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub range_allocations: BTreeMap<String, Vec<u64>>,
}

impl SidePasses {
    /// These passes with what each allocated, from a run's memory series.
    pub fn with_memory(mut self, memory: Option<&MemorySeries>) -> SidePasses {
        if let Some(memory) = memory {
            self.allocations = memory.allocations.kept.clone();
            self.allocated_bytes = memory.allocated_bytes.kept.clone();
            self.peak_bytes = memory.peak_bytes.kept.clone();
            self.range_allocations = memory
                .ranges
                .iter()
                .map(|range| (range.name.clone(), range.allocations.kept.clone()))
                .collect();
        }
        self
    }

    /// The passes of a capture: `passes` the pass durations in order,
    /// `calls` the call durations in order (`calls_per_pass` a pass),
    /// `bounds` each pass's start and end (ns) and `log` the ranges
    /// recorded inside them.
    pub fn of(
        passes: &[u64],
        calls: &[u64],
        calls_per_pass: usize,
        bounds: &[(u64, u64)],
        log: &crate::timing::RangeLog,
    ) -> SidePasses {
        let call_ns = calls
            .chunks(calls_per_pass.max(1))
            .take(passes.len())
            .map(|chunk| {
                let mut sorted = chunk.to_vec();
                sorted.sort_unstable();
                crate::stats::lower_median(&sorted).unwrap_or(0)
            })
            .collect();
        let mut ranges: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for thread in &log.threads {
            for event in &thread.events {
                let after = bounds.partition_point(|&(begin, _)| begin <= event.start_ns);
                let Some(pass) = after.checked_sub(1) else {
                    continue;
                };
                if event.start_ns > bounds[pass].1 {
                    continue;
                }
                let name = &thread.names[event.name as usize];
                let sums = ranges
                    .entry(name.clone())
                    .or_insert_with(|| vec![0; bounds.len()]);
                sums[pass] += event.inclusive_ns;
            }
        }
        SidePasses {
            pass_ns: passes.to_vec(),
            call_ns,
            ranges,
            ..SidePasses::default()
        }
    }
}

/// Every series of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSamples {
    pub passes: Series,
    pub calls: Series,
    /// By name.
    pub ranges: Vec<RangeSeries>,
    /// The warmup passes, in order (empty without warmup).
    pub warmup: Series,
    /// With `memory: on`: what each pass allocated.
    pub memory: Option<MemorySeries>,
    /// The layout its buckets come from: 2 for a run of this build and a
    /// file of version 2 or 3 (they share it), 1 for a file of version 1.
    pub version: u32,
}

impl Default for RunSamples {
    fn default() -> Self {
        RunSamples {
            passes: Series::default(),
            calls: Series::default(),
            ranges: Vec::new(),
            warmup: Series::default(),
            memory: None,
            version: SAMPLES_VERSION_WITHOUT_MEMORY,
        }
    }
}

impl RunSamples {
    /// The samples of a run's pass and call sets and its per-name range
    /// sets (inclusive, exclusive).
    pub fn from_sets(
        passes: &SampleSet,
        calls: &SampleSet,
        ranges: &BTreeMap<String, (SampleSet, SampleSet)>,
    ) -> RunSamples {
        RunSamples::from_owned_sets(passes.clone(), calls.clone(), ranges.clone())
    }

    /// [`RunSamples::from_sets`], taking the sets: their kept samples are
    /// moved, not copied.
    pub fn from_owned_sets(
        passes: SampleSet,
        calls: SampleSet,
        ranges: BTreeMap<String, (SampleSet, SampleSet)>,
    ) -> RunSamples {
        RunSamples {
            passes: Series::from_owned(passes),
            calls: Series::from_owned(calls),
            ranges: ranges
                .into_iter()
                .map(|(name, (inclusive, exclusive))| RangeSeries {
                    name,
                    inclusive: Series::from_owned(inclusive),
                    exclusive: Series::from_owned(exclusive),
                })
                .collect(),
            ..RunSamples::default()
        }
    }

    /// How far, relative to a sample, a sample known only by its histogram
    /// bucket can be from the value it reads as: 1/256 (0.4 %), or 1/64
    /// (1.6 %) in a file of version 1.
    pub fn histogram_error(&self) -> f64 {
        match self.version {
            1 => version_1::ERROR,
            _ => HISTOGRAM_ERROR,
        }
    }

    /// How many series the file holds.
    pub fn series_count(&self) -> usize {
        3 + 2 * self.ranges.len() + self.memory.as_ref().map_or(0, MemorySeries::series_count)
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
        let version = match self.memory {
            Some(_) => SAMPLES_VERSION,
            None => SAMPLES_VERSION_WITHOUT_MEMORY,
        };
        bytes.extend_from_slice(&version.to_le_bytes());
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
        if let Some(memory) = &self.memory {
            encode_series(
                &mut bytes,
                SeriesKind::PassAllocations,
                "",
                &memory.allocations,
            );
            encode_series(
                &mut bytes,
                SeriesKind::PassAllocatedBytes,
                "",
                &memory.allocated_bytes,
            );
            encode_series(
                &mut bytes,
                SeriesKind::PassPeakBytes,
                "",
                &memory.peak_bytes,
            );
            for range in &memory.ranges {
                encode_series(
                    &mut bytes,
                    SeriesKind::RangeAllocations,
                    &range.name,
                    &range.allocations,
                );
                encode_series(
                    &mut bytes,
                    SeriesKind::RangeAllocatedBytes,
                    &range.name,
                    &range.allocated_bytes,
                );
            }
        }
        bytes.extend_from_slice(END);
        bytes
    }

    /// Reads the file's bytes back.
    pub fn decode(bytes: &[u8]) -> Result<RunSamples, SamplesError> {
        let mut reader = Reader {
            bytes,
            at: 0,
            version: SAMPLES_VERSION,
        };
        if reader.take(MAGIC.len()).ok() != Some(MAGIC.as_slice()) {
            return Err(SamplesError::NotSamples);
        }
        let version = reader.u32()?;
        if !SAMPLES_VERSIONS_READ.contains(&version) {
            return Err(SamplesError::Version { found: version });
        }
        reader.version = version;
        let count = reader.u32()?;
        let mut samples = RunSamples {
            // Versions 2 and 3 share their buckets' layout.
            version: version.min(SAMPLES_VERSION_WITHOUT_MEMORY),
            ..RunSamples::default()
        };
        let mut seen = [false; 3];
        let mut ranges: BTreeMap<String, (Option<Series>, Option<Series>)> = BTreeMap::new();
        let mut memory: [Option<Series>; 3] = Default::default();
        let mut range_memory: BTreeMap<String, (Option<Series>, Option<Series>)> = BTreeMap::new();
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
                SeriesKind::PassAllocations
                | SeriesKind::PassAllocatedBytes
                | SeriesKind::PassPeakBytes => {
                    let index = match kind {
                        SeriesKind::PassAllocations => 0,
                        SeriesKind::PassAllocatedBytes => 1,
                        _ => 2,
                    };
                    if memory[index].replace(series).is_some() {
                        return Err(duplicate());
                    }
                }
                SeriesKind::RangeAllocations | SeriesKind::RangeAllocatedBytes => {
                    let entry = range_memory.entry(name.clone()).or_default();
                    let slot = if kind == SeriesKind::RangeAllocations {
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
        samples.memory = match memory {
            [None, None, None] if range_memory.is_empty() => None,
            [Some(allocations), Some(allocated_bytes), Some(peak_bytes)] => {
                let mut ranges = Vec::with_capacity(range_memory.len());
                for (name, pair) in range_memory {
                    match pair {
                        (Some(allocations), Some(allocated_bytes)) => {
                            ranges.push(RangeMemorySeries {
                                name,
                                allocations,
                                allocated_bytes,
                            })
                        }
                        _ => {
                            return Err(SamplesError::Corrupt {
                                at: end_at,
                                what: format!(
                                    "range `{name}` has only one of its two memory series"
                                ),
                            })
                        }
                    }
                }
                Some(MemorySeries {
                    allocations,
                    allocated_bytes,
                    peak_bytes,
                    ranges,
                })
            }
            _ => {
                return Err(SamplesError::Corrupt {
                    at: end_at,
                    what: "some of the pass's three memory series are missing".to_owned(),
                })
            }
        };
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
    for &(middle, count) in &series.buckets {
        put_varint(bytes, middle);
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
    #[error("samples file version {found}, but this profile-cli reads versions 1 to {SAMPLES_VERSION}: re-run the profile with this profile-cli")]
    Version { found: u32 },
    #[error("cut short: it ends at byte {len}, in the middle of what begins at byte {at}")]
    Truncated { at: usize, len: usize },
    #[error("corrupt at byte {at}: {what}")]
    Corrupt { at: usize, what: String },
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    /// The file's layout version: what its buckets hold.
    version: u32,
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
        let mut buckets: Vec<(u64, u64)> = Vec::with_capacity(bucket_count);
        let mut sketched = 0u64;
        for _ in 0..bucket_count {
            let key = self.varint()?;
            let count = self.varint()?;
            let middle = match self.version {
                1 => (key < version_1::BUCKETS).then(|| version_1::bucket_middle(key)),
                _ => Some(key),
            };
            let previous = buckets.last().map(|&(middle, _)| middle);
            let what = match middle {
                None => format!("histogram bucket {key} past the last one"),
                Some(_) if count == 0 => format!("histogram bucket {key} with no samples"),
                Some(middle) if previous.is_some_and(|p| p >= middle) => {
                    format!("histogram bucket {key} after one not below it")
                }
                Some(middle) => {
                    sketched = sketched.saturating_add(count);
                    buckets.push((middle, count));
                    continue;
                }
            };
            return Err(SamplesError::Corrupt { at, what });
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
    fn memory_series_make_version_3_and_read_back_as_written() {
        let mut samples = example();
        let per_pass = |values: &[u64]| Series::from_set(&set(values, values.len()));
        samples.memory = Some(MemorySeries {
            allocations: per_pass(&[3, 3, 4]),
            allocated_bytes: per_pass(&[3072, 3072, 4096]),
            peak_bytes: per_pass(&[1024, 1024, 1024]),
            ranges: vec![RangeMemorySeries {
                name: "decode".to_owned(),
                allocations: per_pass(&[1, 1, 2]),
                allocated_bytes: per_pass(&[64, 64, 128]),
            }],
        });
        let bytes = samples.encode();
        assert_eq!(&bytes[8..12], &3u32.to_le_bytes());
        assert_eq!(samples.series_count(), 7 + 5);
        let read = RunSamples::decode(&bytes).unwrap();
        assert_eq!(read, samples);
        assert_eq!(read.memory.unwrap().ranges[0].allocations.kept, [1, 1, 2]);
        // Without them, version 2: what earlier builds read.
        assert_eq!(&example().encode()[8..12], &2u32.to_le_bytes());
    }

    #[test]
    fn a_file_with_only_some_memory_series_is_corrupt() {
        let mut samples = example();
        samples.memory = Some(MemorySeries::default());
        let mut bytes = samples.encode();
        // Drop the last series (the pass's peak): three became two.
        let count = u32::from_le_bytes(bytes[12..16].try_into().unwrap());
        bytes[12..16].copy_from_slice(&(count - 1).to_le_bytes());
        let end = bytes.len() - 4;
        let peak_at = find_last_series(&bytes[..end], SeriesKind::PassPeakBytes);
        bytes.drain(peak_at..end);
        match RunSamples::decode(&bytes) {
            Err(SamplesError::Corrupt { what, .. }) => {
                assert!(what.contains("memory series are missing"), "{what}")
            }
            other => panic!("{other:?}"),
        }
    }

    /// Where the last series of `kind` (with an empty name and no sample)
    /// begins.
    fn find_last_series(bytes: &[u8], kind: SeriesKind) -> usize {
        // kind, an empty name, count 0, kept 0, min 0, max 0, total 0, no bucket.
        let empty_series = 1 + 4 + 8 * 4 + 16 + 4;
        let at = bytes.len() - empty_series;
        assert_eq!(bytes[at], kind.code());
        at
    }

    #[test]
    fn a_run_reads_back_as_written() {
        let samples = example();
        let bytes = samples.encode();
        assert_eq!(&bytes[..8], b"PCSAMPLS");
        assert_eq!(&bytes[8..12], &2u32.to_le_bytes());
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
        // 30, 40 and 50 went to the histogram: buckets of width 1 below 256.
        assert_eq!(
            samples.ranges[1].inclusive.sorted_values(),
            [10, 20, 30, 40, 50]
        );
        let wide = Series::from_set(&set(&[1_000, 1_001, 100_000], 0));
        let values = wide.sorted_values();
        assert_eq!(values.len(), 3);
        for (value, exact) in values.iter().zip([1_000u64, 1_001, 100_000]) {
            assert!(
                value.abs_diff(exact) as f64 <= exact as f64 * HISTOGRAM_ERROR,
                "{value} vs {exact}"
            );
        }
        assert_eq!((values[0], values[2]), (1_000, 100_000), "exact extremes");
    }

    /// A file written by the last build of version 1: passes 5,000, 7,000,
    /// 70,000, 70,100 and 123,456,789 ns keeping two; calls 3, 1,000, 1,001
    /// and 100,000 keeping none; range `decode` 900, 1,200, 1,000,000,007,
    /// 1,000,000,100, 64 and 65 keeping two, its self time 400, 500, 600
    /// and 0 keeping three.
    const VERSION_1_FILE: &[u8] = include_bytes!("../../tests/data/samples-v1.bin");

    #[test]
    fn a_version_1_file_reads_with_its_buckets_at_their_middles() {
        let samples = RunSamples::decode(VERSION_1_FILE).unwrap();
        assert_eq!(samples.version, 1);
        assert_eq!(samples.histogram_error(), 1.0 / 64.0);
        // The values the version 1 build read these series as.
        assert_eq!(
            samples.passes.sorted_values(),
            [5_000, 7_000, 70_656, 70_656, 123_456_789]
        );
        assert_eq!(samples.calls.sorted_values(), [3, 1_000, 1_000, 100_000]);
        let decode = &samples.ranges[0];
        assert_eq!(decode.name, "decode");
        assert_eq!(
            decode.inclusive.sorted_values(),
            [64, 65, 900, 1_200, 998_244_352, 1_000_000_100]
        );
        assert_eq!(decode.exclusive.sorted_values(), [0, 400, 500, 600]);
        assert_eq!(
            (decode.inclusive.count, decode.inclusive.total),
            (6, 2_000_002_336)
        );
        // Read back in this build's layout, it keeps those values.
        let again = RunSamples::decode(&samples.encode()).unwrap();
        assert_eq!(again.version, SAMPLES_VERSION_WITHOUT_MEMORY);
        assert_eq!(again.passes, samples.passes);
        assert_eq!(again.ranges, samples.ranges);
    }

    #[test]
    fn buckets_out_of_order_empty_or_past_the_last_are_corrupt() {
        let mut samples = example();
        let sketched = &mut samples.ranges[1].inclusive;
        assert_eq!(sketched.buckets, [(30, 1), (40, 1), (50, 1)]);
        sketched.buckets.swap(0, 1);
        assert!(matches!(
            RunSamples::decode(&samples.encode()),
            Err(SamplesError::Corrupt { what, .. }) if what == "histogram bucket 30 after one not below it"
        ));
        let mut samples = example();
        samples.ranges[1].inclusive.buckets[2] = (50, 0);
        samples.ranges[1].inclusive.count -= 1;
        assert!(matches!(
            RunSamples::decode(&samples.encode()),
            Err(SamplesError::Corrupt { what, .. }) if what == "histogram bucket 50 with no samples"
        ));
        // Version 1 had 1,920 buckets: the last bucket of the calls above
        // is bucket 400; make it 1,920.
        let mut bytes = VERSION_1_FILE.to_vec();
        let at = bytes
            .windows(4)
            .position(|w| w == [0x02, 0x90, 0x03, 0x01])
            .unwrap();
        bytes.splice(at + 1..at + 3, [0x80, 0x0f]);
        assert!(matches!(
            RunSamples::decode(&bytes),
            Err(SamplesError::Corrupt { what, .. }) if what == "histogram bucket 1920 past the last one"
        ));
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
        bytes[8] = 4;
        assert_eq!(
            RunSamples::decode(&bytes),
            Err(SamplesError::Version { found: 4 })
        );
        assert!(RunSamples::decode(&bytes)
            .unwrap_err()
            .to_string()
            .contains("samples file version 4, but this profile-cli reads versions 1 to 3"));
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
