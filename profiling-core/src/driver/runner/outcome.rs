//! What a run gives back: its outcome (the calls made, the timings, how
//! validation went) or the error that stopped it, and the tally of how far
//! it got that both are made of.

use super::per_record::PerRecord;

use serde::{Deserialize, Serialize};

use crate::data::DataRecord;
use crate::driver::run_samples::RunSamples;
use crate::stats::DurationStats;
use crate::target::Summary;
use crate::timing::memory::MemoryTimings;
use crate::timing::{GpuCapture, GpuTimings, RangeLog, RangeTimings, TimerInfo};

/// The steps of a run, named as the manifest and errors name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Building the target (`Default` or its factory).
    Construct,
    /// Reading a record (lazy loading).
    Load,
    Prepare,
    Run,
    Validate,
    Summarize,
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Phase::Construct => "construct",
            Phase::Load => "load",
            Phase::Prepare => "prepare",
            Phase::Run => "run",
            Phase::Validate => "validate",
            Phase::Summarize => "summarize",
        })
    }
}

/// Where in the run something happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "index", rename_all = "snake_case")]
pub enum Pass {
    /// Before the passes: building the target, eager `prepare`.
    Setup,
    Warmup(u32),
    Measured(u32),
    /// After the capture range closed: late validation and summaries.
    AfterCapture,
}

impl std::fmt::Display for Pass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pass::Setup => f.write_str("before the passes"),
            Pass::Warmup(i) => write!(f, "warmup pass {i}"),
            Pass::Measured(i) => write!(f, "measured pass {i}"),
            Pass::AfterCapture => f.write_str("after the capture"),
        }
    }
}

/// How often each method of the target was called.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallCounts {
    pub prepare: u64,
    /// With `batch_size` > 1: once per batch, in place of `prepare`.
    pub prepare_batch: u64,
    pub run: u64,
    pub validate: u64,
    pub summarize: u64,
}

/// Wall-clock figures of the run, from the host's monotonic clock.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Timings {
    /// One sample per measured pass.
    pub iterations: Option<DurationStats>,
    /// One sample per target call in a measured pass (`prepare` and `run`
    /// with `profile_prepare`, else `run`): one call per batch.
    pub runs: Option<DurationStats>,
    /// Every range name seen inside the capture range, largest inclusive
    /// total first.
    pub ranges: Vec<RangeTimings>,
    /// Every range path (`preprocess/letterbox/resize`) seen inside the
    /// capture range, as a tree: each after its parent.
    pub range_tree: Vec<crate::timing::RangePathTimings>,
    /// Said when some ranges are not in `range_tree`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_tree_note: Option<String>,
    /// The clock, its resolution and the cost of a reading: reported, never
    /// subtracted.
    pub timer: Option<TimerInfo>,
    /// GPU time of passes and calls from device events, on runs with GPU
    /// timing (each range's is in `ranges`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuTimings>,
    /// What these host clocks mean for the run's device and sync policy.
    pub host_timing_note: String,
    /// Said when some quantiles come from histograms rather than every
    /// sample (very long runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sketch_note: Option<String>,
    /// Reading an eager run's records from its source (each file read
    /// and decoded), before the passes and outside `prepare_ns`; 0 when
    /// the records came already read or are read inside the passes.
    /// Written `load_ns` in the manifest, the name it has always had there.
    #[serde(rename = "load_ns")]
    pub read_ns: u64,
    /// Eager `prepare` of every record, before the passes.
    pub prepare_ns: u64,
    /// All warmup passes together.
    pub warmup_ns: u64,
    /// From opening to closing the capture range.
    pub capture_ns: u64,
    /// Time per record and records per second of the pass, the call and
    /// every range: on every run that measured (completed or interrupted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_record: Option<PerRecord>,
    /// What the machine was doing during the capture: load, other
    /// processes, preemption, and per pass the measuring thread's CPU time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::driver::contention::MachineState>,
    /// With `memory: on`: allocations, bytes and peak per pass and call
    /// (each range's are in `ranges` and `range_tree`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryTimings>,
}

/// What the files beside the manifest need of a finished capture.
#[derive(Debug, Clone)]
pub struct CaptureRecord {
    /// The ranges every thread recorded.
    pub ranges: RangeLog,
    /// Start and end of each measured pass (the first [`PASSES_KEPT`](super::PASSES_KEPT)).
    pub passes: Vec<(u64, u64)>,
    /// Measured passes in all.
    pub pass_count: u32,
    /// The durations of passes, calls and ranges, for `samples.bin`.
    pub samples: RunSamples,
    /// The device events' spans, for the trace's GPU track.
    pub gpu: Option<GpuCapture>,
    /// What the passes are called before their index: `iteration`, or a
    /// paired run's `base iteration` and `candidate iteration`.
    pub pass_name: &'static str,
}

impl Default for CaptureRecord {
    /// An empty capture, its passes called `iteration`.
    fn default() -> Self {
        CaptureRecord {
            ranges: RangeLog::default(),
            passes: Vec::new(),
            pass_count: 0,
            samples: RunSamples::default(),
            gpu: None,
            pass_name: "iteration",
        }
    }
}

/// Which outputs were validated, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Validation {
    /// `validate_output: false`.
    Disabled,
    /// Every output of every warmup pass.
    Warmup,
    /// With no warmup: the outputs of the last measured pass, after the
    /// capture range closed.
    AfterCapture,
}

/// One output summary, with the record (or batch) it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputSummary {
    /// The record; of a batch, its first record.
    pub record_id: String,
    /// The index of the output's batch in the pass: the record's index
    /// with `batch_size` 1.
    pub batch: u32,
    /// With `batch_size` > 1: every record of the batch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub record_ids: Vec<String>,
    pub summary: Summary,
}

/// What a finished run did.
#[derive(Debug, Clone, Serialize)]
pub struct RunOutcome {
    /// The records of the last measured pass, in order (a dropped last
    /// batch left out).
    pub record_ids: Vec<String>,
    /// The batch of each record of `record_ids`: its index with
    /// `batch_size` 1.
    pub record_batches: Vec<u32>,
    pub output_summaries: Vec<OutputSummary>,
    pub calls: CallCounts,
    pub completed_warmup: u32,
    pub completed_iterations: u32,
    /// How `measurement_time` sized the measured passes, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measurement_time: Option<super::MeasurementTime>,
    pub validation: Validation,
    pub timings: Timings,
    /// The raw ranges and passes, for the trace.
    #[serde(skip)]
    pub capture: CaptureRecord,
    /// The signal that stopped the run early, if one did.
    pub interrupted: Option<i32>,
}

/// Why a run stopped, where, and how far it had got.
#[derive(Debug, thiserror::Error)]
#[error("{phase} failed{}{} ({pass}): {source:#}", record_suffix(.record_id.as_deref(), *.batch), "")]
pub struct RunError {
    pub phase: Phase,
    /// The record; on a batch, its first record.
    pub record_id: Option<String>,
    /// The batch, with `batch_size` > 1.
    pub batch: Option<u32>,
    pub pass: Pass,
    pub source: anyhow::Error,
    pub calls: CallCounts,
    pub completed_iterations: u32,
}

pub(super) fn record_suffix(record_id: Option<&str>, batch: Option<u32>) -> String {
    match (record_id, batch) {
        (Some(id), Some(batch)) => format!(" on batch {batch} (from record `{id}`)"),
        (None, Some(batch)) => format!(" on batch {batch}"),
        (Some(id), None) => format!(" on record `{id}`"),
        (None, None) => String::new(),
    }
}

/// The error of one side of a paired run that did not run, or stopped,
/// because the other side failed first: `other` is that side ("the
/// base", "the candidate"). Found with [`RunError::not_run`], so that
/// what is said first is the other side's own error.
#[derive(Debug)]
pub struct NotRun {
    pub other: &'static str,
    /// What the other side could not do: "could not be built", "failed
    /// before the paired passes".
    pub because: &'static str,
}

impl std::fmt::Display for NotRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not run: {} {}", self.other, self.because)
    }
}

impl std::error::Error for NotRun {}

impl RunError {
    /// The error of a side that did not run because `other` failed first
    /// ([`NotRun`]).
    pub fn not_run(other: &'static str, because: &'static str, phase: Phase) -> RunError {
        RunError {
            phase,
            record_id: None,
            batch: None,
            pass: Pass::Setup,
            source: anyhow::Error::new(NotRun { other, because }),
            calls: CallCounts::default(),
            completed_iterations: 0,
        }
    }

    /// The other side's failure, when this side did not run because of it.
    pub fn as_not_run(&self) -> Option<&NotRun> {
        self.source.downcast_ref::<NotRun>()
    }

    /// True when the data, not the target, failed (a record that could not
    /// be read in a lazy pass).
    pub fn is_data_error(&self) -> bool {
        self.phase == Phase::Load
    }
}

/// What failed, before the run adds where and how far it had got.
pub(super) struct Failure {
    pub(super) phase: Phase,
    pub(super) record_id: Option<String>,
    pub(super) batch: Option<u32>,
    pub(super) source: anyhow::Error,
}

impl Failure {
    pub(super) fn new(phase: Phase, record_id: Option<&str>, source: anyhow::Error) -> Failure {
        Failure {
            phase,
            record_id: record_id.map(str::to_owned),
            batch: None,
            source,
        }
    }

    /// A failure on batch `index`, whose records are `records` (the first
    /// names it).
    #[cold]
    pub(super) fn on_batch(
        phase: Phase,
        records: &[DataRecord],
        index: usize,
        source: anyhow::Error,
    ) -> Failure {
        Failure {
            batch: Some(index as u32),
            ..Failure::new(phase, records.first().map(|r| r.id.as_str()), source)
        }
    }
}

/// How far a run has got: the outcome is made of it, and every failure
/// reports it.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) calls: CallCounts,
    pub(super) completed_warmup: u32,
    pub(super) completed_iterations: u32,
    /// The signal that stopped the run after the call in progress (see
    /// `interrupt`).
    pub(super) interrupted: Option<i32>,
}

impl Tally {
    /// The one place a failure becomes a [`RunError`]: in `pass`, with the
    /// calls made and the measured passes completed until then.
    pub(super) fn error(&self, pass: Pass, failure: Failure) -> RunError {
        RunError {
            phase: failure.phase,
            record_id: failure.record_id,
            batch: failure.batch,
            pass,
            source: failure.source,
            calls: self.calls,
            completed_iterations: self.completed_iterations,
        }
    }
}
