//! The measured run: warmup passes, then measured passes inside one NVTX
//! capture range, in exactly the order of the reference tool.
//!
//! [`run_target`] is generic over the target, so the pass loop is
//! monomorphized for it: no boxing or dynamic dispatch between the clock
//! reads, and nothing there allocates, logs or validates.

mod per_record;
mod stepped;

pub use per_record::{PerRecord, Throughput};
pub use stepped::{open_target, paired_blocks, run_paired, PairSide, SteppedRun};

use std::ffi::{c_char, CStr, CString};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::config::{Batches, Config, RecordLoading};
use crate::data::{AvailableMemory, DataError, DataRecord, DataSource};
use crate::device::{synchronize, Device};
use crate::interrupt;
use crate::memory::attribution::{self, Figures};
use crate::nvtx::PassRange;
use crate::panics::guard;
use crate::run_samples::{MemorySeries, RangeMemorySeries, RunSamples, Series};
use crate::stats::DurationStats;
use crate::target::{ProfileTarget, Summary};
use crate::timing::memory::{FigureSamples, MemoryTimings};
use crate::timing::{
    attach_gpu, now_ns, range_sets, readings_to_ns, span_ns, ticks, timings_of, Capture,
    EventBackend, GpuCapture, GpuEvents, GpuTimings, RangeLog, RangeTimings, Registration,
    SampleSet, TimerInfo,
};

/// Everything a run needs: the resolved config and the records (read
/// already when eager, a source to read from when lazy).
pub struct RunPlan {
    pub config: Config,
    pub records: Records,
    /// Waits for a CUDA device at the synchronization points of the config;
    /// [`crate::device::synchronize`] unless a test observes them.
    pub synchronize: fn(Device),
    /// Told how far the warmup and measured phases are, between passes
    /// (never inside a pass's timed window).
    pub progress: Option<Box<dyn Fn(Progress)>>,
    /// What the process could use before the records were read. With it,
    /// an eager run measures what `prepare` keeps of its first record and
    /// refuses, before preparing the rest, when the records and every
    /// prepared input would not fit ([`crate::data::check_within`]).
    pub memory: Option<AvailableMemory>,
    /// With it, ranges, calls and passes of the measured passes also
    /// record device events for their GPU time ([`crate::timing::gpu`]);
    /// the session sets it from `gpu_timing`.
    pub events: Option<Arc<dyn EventBackend>>,
}

impl RunPlan {
    /// A plan that synchronizes CUDA devices through the backend and
    /// reports no progress.
    pub fn new(config: Config, records: Records) -> RunPlan {
        RunPlan {
            config,
            records,
            synchronize,
            progress: None,
            memory: None,
            events: None,
        }
    }
}

/// How far a run is: `done` of `total` passes of a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub measured: bool,
    pub done: u32,
    pub total: u32,
}

/// Samples kept one by one per run (pass durations, call durations):
/// 8 MiB each; past it, exact aggregates and a histogram.
pub const SAMPLES_KEPT: usize = 1 << 20;

/// What reading the measuring thread's CPU time before and after a pass
/// costs, at most (`CLOCK_THREAD_CPUTIME_ID` is a system call: about 330
/// ns a reading on this project's two-core machine under load).
const CPU_READINGS_NS: u64 = 800;

/// Measured passes whose start and end are kept for the trace.
pub const PASSES_KEPT: usize = 100_000;

/// The records of a run.
pub enum Records {
    /// Read once, before the target is built.
    Eager(Vec<DataRecord>),
    /// Read afresh in every pass (needs `target.profile_prepare`).
    Lazy(Box<dyn DataSource>),
    /// Eager, read by the runner once the target is built: without
    /// `profile_prepare`, it reads and prepares the first record alone and
    /// checks the memory ([`RunPlan::memory`]) before reading the rest.
    Unread(Box<dyn DataSource>),
}

impl Records {
    /// How many records one pass covers.
    pub fn len(&self) -> usize {
        match self {
            Records::Eager(records) => records.len(),
            Records::Lazy(source) | Records::Unread(source) => source.len(),
        }
    }

    /// True when a pass would cover nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

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
    pub load_ns: u64,
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
    pub machine: Option<crate::machine::MachineState>,
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
    /// Start and end of each measured pass (the first [`PASSES_KEPT`]).
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

fn record_suffix(record_id: Option<&str>, batch: Option<u32>) -> String {
    match (record_id, batch) {
        (Some(id), Some(batch)) => format!(" on batch {batch} (from record `{id}`)"),
        (None, Some(batch)) => format!(" on batch {batch}"),
        (Some(id), None) => format!(" on record `{id}`"),
        (None, None) => String::new(),
    }
}

impl RunError {
    /// True when the data, not the target, failed (a record that could not
    /// be read in a lazy pass).
    pub fn is_data_error(&self) -> bool {
        self.phase == Phase::Load
    }
}

/// What failed, before the run adds where and how far it had got.
struct Failure {
    phase: Phase,
    record_id: Option<String>,
    batch: Option<u32>,
    source: anyhow::Error,
}

impl Failure {
    fn new(phase: Phase, record_id: Option<&str>, source: anyhow::Error) -> Failure {
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
    fn on_batch(
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
struct Tally {
    calls: CallCounts,
    completed_warmup: u32,
    completed_iterations: u32,
    /// The signal that stopped the run after the call in progress (see
    /// `interrupt`).
    interrupted: Option<i32>,
}

impl Tally {
    /// The one place a failure becomes a [`RunError`]: in `pass`, with the
    /// calls made and the measured passes completed until then.
    fn error(&self, pass: Pass, failure: Failure) -> RunError {
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

/// The inputs of a pass, in each of the three ways a run can get them, one
/// record or one batch per input.
trait Inputs<T: ProfileTarget> {
    /// Target calls in a pass.
    fn len(&self) -> usize;
    /// Prepares (when the pass does) and runs input `index`.
    fn call(
        &mut self,
        target: &mut T,
        index: usize,
        calls: &mut CallCounts,
    ) -> Result<T::Output, Failure>;
    /// The record of input `index`; of a batch, its first record.
    fn record_id(&self, index: usize) -> &str;
    /// Every record a pass runs, in order.
    fn record_ids(&self) -> Vec<String>;
    /// The batch input `index` is, when inputs are batches.
    fn batch(&self, index: usize) -> Option<u32> {
        let _ = index;
        None
    }
    /// Inputs whose slots (an output, a call's time) are set aside before
    /// the passes: all of them where the records are in memory already; of
    /// a lazily read source, no more than [`LAZY_ROOM`], the rest growing
    /// as its records are read (a source may be far larger than memory).
    fn room(&self) -> usize {
        self.len()
    }
}

/// The inputs of a lazily read source whose slots are set aside before
/// the passes.
const LAZY_ROOM: usize = 1 << 16;

/// Eager without `profile_prepare`: prepared once, before the passes, one
/// input per record or per batch.
struct Prepared<'r, P> {
    prepared: Vec<P>,
    /// The records a pass runs.
    records: &'r [DataRecord],
    /// `Some` with `batch_size` > 1: input `i` is batch `i`.
    batches: Option<Batches>,
}

impl<T: ProfileTarget> Inputs<T> for Prepared<'_, T::Prepared> {
    fn len(&self) -> usize {
        self.prepared.len()
    }

    #[inline]
    fn call(
        &mut self,
        target: &mut T,
        index: usize,
        calls: &mut CallCounts,
    ) -> Result<T::Output, Failure> {
        calls.run += 1;
        guard(|| target.run(&self.prepared[index])).map_err(|source| match self.batches {
            None => Failure::new(Phase::Run, Some(&self.records[index].id), source),
            Some(batches) => {
                let records = &self.records[batches.range(index)];
                Failure::on_batch(Phase::Run, records, index, source)
            }
        })
    }

    fn record_id(&self, index: usize) -> &str {
        let first = self.batches.map_or(index, |b| b.range(index).start);
        &self.records[first].id
    }

    fn batch(&self, index: usize) -> Option<u32> {
        self.batches.map(|_| index as u32)
    }

    fn record_ids(&self) -> Vec<String> {
        self.records.iter().map(|r| r.id.clone()).collect()
    }
}

/// Eager with `profile_prepare`: every pass prepares each record again.
struct EagerRecords<'r> {
    records: &'r [DataRecord],
    device: Device,
}

impl<T: ProfileTarget> Inputs<T> for EagerRecords<'_> {
    fn len(&self) -> usize {
        self.records.len()
    }

    #[inline]
    fn call(
        &mut self,
        target: &mut T,
        index: usize,
        calls: &mut CallCounts,
    ) -> Result<T::Output, Failure> {
        prepare_and_run(target, &self.records[index], self.device, calls)
    }

    fn record_id(&self, index: usize) -> &str {
        &self.records[index].id
    }

    fn record_ids(&self) -> Vec<String> {
        self.records.iter().map(|r| r.id.clone()).collect()
    }
}

/// Eager with `profile_prepare` and batches: every pass prepares each
/// batch again.
struct EagerBatches<'r> {
    /// The records a pass runs.
    records: &'r [DataRecord],
    batches: Batches,
    device: Device,
}

impl<T: ProfileTarget> Inputs<T> for EagerBatches<'_> {
    fn len(&self) -> usize {
        self.batches.batches
    }

    #[inline]
    fn call(
        &mut self,
        target: &mut T,
        index: usize,
        calls: &mut CallCounts,
    ) -> Result<T::Output, Failure> {
        let records = &self.records[self.batches.range(index)];
        prepare_batch_and_run(target, records, index, self.device, calls)
    }

    fn record_id(&self, index: usize) -> &str {
        &self.records[self.batches.range(index).start].id
    }

    fn batch(&self, index: usize) -> Option<u32> {
        Some(index as u32)
    }

    fn record_ids(&self) -> Vec<String> {
        self.records.iter().map(|r| r.id.clone()).collect()
    }
}

/// Lazy: every pass reads each record afresh, then prepares and runs it.
struct LazyRecords<'s> {
    source: &'s dyn DataSource,
    device: Device,
    /// The ids of the records read so far, by index: grown as they are
    /// read, so that memory follows the records the run reaches, not the
    /// source's length.
    ids: Vec<String>,
}

/// Sets `ids[index]`, growing `ids` to reach it.
fn set_id(ids: &mut Vec<String>, index: usize, id: String) {
    if ids.len() <= index {
        ids.resize(index + 1, String::new());
    }
    ids[index] = id;
}

impl<T: ProfileTarget> Inputs<T> for LazyRecords<'_> {
    fn len(&self) -> usize {
        self.source.len()
    }

    fn call(
        &mut self,
        target: &mut T,
        index: usize,
        calls: &mut CallCounts,
    ) -> Result<T::Output, Failure> {
        let record = self
            .source
            .read(index)
            .map_err(|error: DataError| Failure::new(Phase::Load, None, error.into()))?;
        let output = prepare_and_run(target, &record, self.device, calls);
        set_id(&mut self.ids, index, record.id);
        output
    }

    fn record_id(&self, index: usize) -> &str {
        self.ids.get(index).map_or("", String::as_str)
    }

    fn room(&self) -> usize {
        self.source.len().min(LAZY_ROOM)
    }

    fn record_ids(&self) -> Vec<String> {
        self.ids.clone()
    }
}

/// Lazy with batches: every pass reads each batch's records afresh, then
/// prepares and runs the batch.
struct LazyBatches<'s> {
    source: &'s dyn DataSource,
    batches: Batches,
    device: Device,
    /// The records of the batch in progress.
    batch: Vec<DataRecord>,
    /// One per record read so far, grown as they are read.
    ids: Vec<String>,
}

impl<T: ProfileTarget> Inputs<T> for LazyBatches<'_> {
    fn len(&self) -> usize {
        self.batches.batches
    }

    fn call(
        &mut self,
        target: &mut T,
        index: usize,
        calls: &mut CallCounts,
    ) -> Result<T::Output, Failure> {
        let range = self.batches.range(index);
        self.batch.clear();
        for record in range.clone() {
            let record = self
                .source
                .read(record)
                .map_err(|error: DataError| Failure {
                    batch: Some(index as u32),
                    ..Failure::new(Phase::Load, None, error.into())
                })?;
            self.batch.push(record);
        }
        let output = prepare_batch_and_run(target, &self.batch, index, self.device, calls);
        for (at, record) in range.zip(self.batch.drain(..)) {
            set_id(&mut self.ids, at, record.id);
        }
        output
    }

    fn record_id(&self, index: usize) -> &str {
        let start = self.batches.range(index).start;
        self.ids.get(start).map_or("", String::as_str)
    }

    fn room(&self) -> usize {
        self.batches.batches.min(LAZY_ROOM)
    }

    fn batch(&self, index: usize) -> Option<u32> {
        Some(index as u32)
    }

    fn record_ids(&self) -> Vec<String> {
        self.ids.clone()
    }
}

#[inline]
fn prepare_and_run<T: ProfileTarget>(
    target: &mut T,
    record: &DataRecord,
    device: Device,
    calls: &mut CallCounts,
) -> Result<T::Output, Failure> {
    calls.prepare += 1;
    let prepared = guard(|| target.prepare(record, device))
        .map_err(|source| Failure::new(Phase::Prepare, Some(&record.id), source))?;
    calls.run += 1;
    guard(|| target.run(&prepared))
        .map_err(|source| Failure::new(Phase::Run, Some(&record.id), source))
}

#[inline]
fn prepare_batch_and_run<T: ProfileTarget>(
    target: &mut T,
    records: &[DataRecord],
    index: usize,
    device: Device,
    calls: &mut CallCounts,
) -> Result<T::Output, Failure> {
    calls.prepare_batch += 1;
    let prepared = guard(|| target.prepare_batch(records, device))
        .map_err(|source| Failure::on_batch(Phase::Prepare, records, index, source))?;
    calls.run += 1;
    guard(|| target.run(&prepared))
        .map_err(|source| Failure::on_batch(Phase::Run, records, index, source))
}

/// Runs a target on a plan: the body `#[profile_target]` registers for
/// every target, monomorphized for its type.
pub fn run_target<T, F>(plan: &RunPlan, make: F) -> Result<RunOutcome, RunError>
where
    T: ProfileTarget,
    F: FnOnce() -> anyhow::Result<T>,
{
    let config = &plan.config;
    let mut tally = Tally::default();
    crate::target::set_parameters(&config.target.parameters);
    let mut target = guard(make)
        .map_err(|source| tally.error(Pass::Setup, Failure::new(Phase::Construct, None, source)))?;
    // One input per record with batch size 1, else one per batch.
    let batches = Batches::new(plan.records.len(), config.batch_size, config.last_batch);
    let batched = (config.batch_size > 1).then_some(batches);
    if batches.batches == 0 {
        let source = anyhow::anyhow!(
            "last_batch: drop leaves no batch: {} record(s) make no whole batch of {}",
            plan.records.len(),
            batches.size
        );
        return Err(tally.error(Pass::Setup, Failure::new(Phase::Load, None, source)));
    }
    let loaded: Vec<DataRecord>;
    let mut first_input = None;
    let mut load_ns = 0;
    let records = match &plan.records {
        Records::Unread(source) => {
            let (records, first, ns) =
                read_eager(&mut target, source.as_ref(), plan, batched, &mut tally)?;
            loaded = records;
            first_input = first;
            load_ns = ns;
            Some(&loaded[..batches.records])
        }
        Records::Eager(records) => Some(&records[..batches.records]),
        Records::Lazy(_) => None,
    };
    let outcome = match (records, &plan.records, config.target.profile_prepare) {
        (Some(records), _, false) => {
            let mut prepared = Vec::with_capacity(batches.batches);
            let mut prepare_ns = 0;
            if let Some((input, ns)) = first_input {
                prepared.push(input);
                prepare_ns = ns;
            }
            let started = now_ns();
            for index in prepared.len()..batches.batches {
                // Eager records given whole are checked on the first too.
                let memory = match (&plan.memory, prepared.is_empty()) {
                    (Some(available), true) => {
                        Some((available, records_bytes(records), batches.batches))
                    }
                    _ => None,
                };
                let input = prepare_measured(
                    &mut target,
                    &records[batches.range(index)],
                    batched.map(|_| index),
                    config.device,
                    &mut tally,
                    memory,
                )?;
                prepared.push(input);
            }
            prepare_ns += now_ns() - started;
            let inputs = Prepared {
                prepared,
                records,
                batches: batched,
            };
            let mut outcome = drive(&mut target, inputs, plan, tally, batches)?;
            outcome.timings.prepare_ns = prepare_ns;
            Ok(outcome)
        }
        (Some(records), _, true) => match batched {
            None => {
                let inputs = EagerRecords {
                    records,
                    device: config.device,
                };
                drive(&mut target, inputs, plan, tally, batches)
            }
            Some(batches) => {
                let inputs = EagerBatches {
                    records,
                    batches,
                    device: config.device,
                };
                drive(&mut target, inputs, plan, tally, batches)
            }
        },
        (None, Records::Lazy(source), true) => match batched {
            None => {
                let inputs = LazyRecords {
                    source: source.as_ref(),
                    device: config.device,
                    ids: Vec::new(),
                };
                drive(&mut target, inputs, plan, tally, batches)
            }
            Some(batches) => {
                let inputs = LazyBatches {
                    source: source.as_ref(),
                    batches,
                    device: config.device,
                    batch: Vec::with_capacity(batches.size.min(1 << 16)),
                    ids: Vec::new(),
                };
                drive(&mut target, inputs, plan, tally, batches)
            }
        },
        (None, _, _) => {
            let source = anyhow::anyhow!(
                "record_loading: {} needs target.profile_prepare: true",
                RecordLoading::Lazy
            );
            Err(tally.error(Pass::Setup, Failure::new(Phase::Load, None, source)))
        }
    };
    let mut outcome = outcome?;
    outcome.timings.load_ns = load_ns;
    // Parameters the target never asked for (in its factory or any method)
    // configure nothing: a typo of another target's settings, or a target
    // that takes none. Refused like an unknown key, once the run has shown
    // that nothing reads them.
    match crate::target::unread_parameter().filter(|_| outcome.interrupted.is_none()) {
        Some(key) => Err(unread_parameters(config, &outcome, key)),
        None => Ok(outcome),
    }
}

/// The refusal of a run whose `target.parameters` (first `key`) the
/// target never read.
fn unread_parameters(config: &Config, outcome: &RunOutcome, key: String) -> RunError {
    let message = format!(
        "unknown parameter: target `{}` reads no `target.parameters` (it never calls `profiling_core::target::parameters`)",
        config.target.name
    );
    RunError {
        phase: Phase::Construct,
        record_id: None,
        batch: None,
        pass: Pass::Setup,
        source: crate::target::ParameterError::new(key, message).into(),
        calls: outcome.calls,
        completed_iterations: outcome.completed_iterations,
    }
}

/// Reads an eager source. Without `profile_prepare`, the first input (the
/// first record, or the first batch of `batched`) is read and prepared
/// alone first, so that a run whose prepared inputs would not fit
/// ([`RunPlan::memory`]) is refused before the rest is read (after them,
/// and without reading them again); its prepared
/// input is returned with the time preparing it took, and the records with
/// the time reading them took (that preparing left out).
#[allow(clippy::type_complexity)]
fn read_eager<T: ProfileTarget>(
    target: &mut T,
    source: &dyn DataSource,
    plan: &RunPlan,
    batched: Option<Batches>,
    tally: &mut Tally,
) -> Result<(Vec<DataRecord>, Option<(T::Prepared, u64)>, u64), RunError> {
    let reading = now_ns();
    let load_error = |error: DataError, tally: &Tally| {
        tally.error(Pass::Setup, Failure::new(Phase::Load, None, error.into()))
    };
    let config = &plan.config;
    let mut first_input = None;
    let mut first_records = Vec::new();
    if !config.target.profile_prepare {
        let first = batched.map_or(0..1, |b| b.range(0));
        let first = first
            .map(|index| source.read(index))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| load_error(e, tally))?;
        let estimate = crate::data::eager_bytes(source).map_err(|e| load_error(e, tally))?;
        let inputs = batched.map_or(source.len(), |b| b.batches);
        let memory = plan.memory.as_ref().map(|m| (m, estimate, inputs));
        let started = now_ns();
        let batch = batched.map(|_| 0);
        let input = prepare_measured(target, &first, batch, config.device, tally, memory)?;
        first_input = Some((input, now_ns() - started));
        first_records = first;
    }
    // The first input's records are not read again.
    let records = source
        .read_rest(first_records)
        .map_err(|e| load_error(e, tally))?;
    let preparing = first_input.as_ref().map_or(0, |(_, ns)| *ns);
    let load_ns = (now_ns() - reading).saturating_sub(preparing);
    Ok((records, first_input, load_ns))
}

/// Prepares one input outside every range: `records` holds one record, or
/// with `batch` the records of that batch. With `memory` (what the process
/// may use, the bytes of the run's records, the number of inputs), also
/// measures what preparing kept and refuses the run when the records and
/// that much for every input would not fit.
fn prepare_measured<T: ProfileTarget>(
    target: &mut T,
    records: &[DataRecord],
    batch: Option<usize>,
    device: Device,
    tally: &mut Tally,
    memory: Option<(&AvailableMemory, u64, usize)>,
) -> Result<T::Prepared, RunError> {
    let setup_error = |source: anyhow::Error, tally: &Tally| {
        let failure = match batch {
            Some(index) => Failure::on_batch(Phase::Prepare, records, index, source),
            None => Failure::new(Phase::Prepare, Some(&records[0].id), source),
        };
        tally.error(Pass::Setup, failure)
    };
    match batch {
        Some(_) => tally.calls.prepare_batch += 1,
        None => tally.calls.prepare += 1,
    }
    let mut prepare = || match batch {
        Some(_) => guard(|| target.prepare_batch(records, device)),
        None => guard(|| target.prepare(&records[0], device)),
    };
    let Some((available, record_bytes, count)) = memory else {
        return prepare().map_err(|e| setup_error(e, tally));
    };
    let (input, held) = crate::memory::measure_held(prepare);
    let input = input.map_err(|e| setup_error(e, tally))?;
    let each = held.saturating_add(std::mem::size_of::<T::Prepared>() as u64);
    let total = each.saturating_mul(count as u64);
    let prepared = crate::data::PreparedBytes {
        each,
        total,
        record_id: records[0].id.clone(),
        batch: batch.map(|_| records.len()),
    };
    crate::data::check_within(
        record_bytes.saturating_add(total),
        Some(prepared),
        available,
    )
    .map_err(|e| setup_error(e.into(), tally))?;
    Ok(input)
}

/// What eager records hold by the memory check's count: their decoded data
/// and [`crate::data::RECORD_OVERHEAD_BYTES`] each.
fn records_bytes(records: &[DataRecord]) -> u64 {
    records
        .iter()
        .map(|r| r.decoded_bytes() as u64 + crate::data::RECORD_OVERHEAD_BYTES)
        .fold(0, u64::saturating_add)
}

/// Warmup, capture, validation and summaries over prepared inputs, one per
/// batch of `batches` (per record with batch size 1).
fn drive<T: ProfileTarget, I: Inputs<T>>(
    target: &mut T,
    mut inputs: I,
    plan: &RunPlan,
    mut tally: Tally,
    batches: Batches,
) -> Result<RunOutcome, RunError> {
    let config = &plan.config;
    // From here to the outcome, a signal stops the run after the call in
    // progress (see `interrupt`), rather than the process.
    let _passes = interrupt::Hold::new();
    let timer = TimerInfo::measure();
    let mut gpu = match &plan.events {
        Some(backend) => {
            let device = config.device.to_string();
            Some(
                GpuEvents::start(Arc::clone(backend), &device).map_err(|source| {
                    let source = source.context("cannot start GPU timing (gpu_timing)");
                    tally.error(Pass::Setup, Failure::new(Phase::Run, None, source))
                })?,
            )
        }
        None => None,
    };
    check_memory_attribution(config)
        .map_err(|source| tally.error(Pass::Setup, Failure::new(Phase::Run, None, source)))?;
    // Ranges record device events (and bind their threads in warmup) only
    // while this lives.
    let gpu_mode = Switch::set(gpu.is_some(), crate::timing::recorder::set_gpu);
    let (warmup_ns, warmup_passes, last_warmup_opens) =
        warmup(target, &mut inputs, plan, &mut tally)?;
    if let Some(gpu) = gpu.as_mut() {
        // Two events per range of the last warmup pass, and the runner's
        // boundaries: one before each call and one after the last.
        let per_pass = (config.warmup > 0)
            .then(|| (last_warmup_opens as usize).saturating_mul(2) + inputs.len() + 1);
        gpu.prepare_capture(per_pass, config.iterations, inputs.len())
            .map_err(|source| {
                let source = source.context("cannot create the GPU events (gpu_timing)");
                tally.error(Pass::Setup, Failure::new(Phase::Run, None, source))
            })?;
    }

    // Everything the measured loop touches exists before the capture opens.
    let capture_name = CString::new(config.capture_range.as_str()).map_err(|_| {
        let source = anyhow::anyhow!("capture_range contains a NUL character");
        tally.error(Pass::Setup, Failure::new(Phase::Run, None, source))
    })?;
    let mut measured = Measured::expecting(config.iterations, inputs.len(), inputs.room());
    measured.expected_range_events =
        (last_warmup_opens as usize).saturating_mul(config.iterations as usize);
    measured.memory = config.memory.is_on().then(|| {
        MeasuredMemory::expecting(config.iterations as usize, inputs.len(), inputs.room())
    });
    let memory_mode = Switch::set(config.memory.is_on(), crate::timing::recorder::set_memory);
    let measured = capture(
        target,
        &mut inputs,
        plan,
        &mut tally,
        &capture_name,
        measured,
        gpu.as_mut(),
    )?;
    drop(gpu_mode);
    drop(memory_mode);
    let gpu = gpu.map(|gpu| gpu.finish(&measured.ranges));
    let warmed = Warmed {
        timer,
        warmup_ns,
        warmup_passes,
    };
    conclude(target, &inputs, plan, tally, batches, measured, warmed, gpu)
}

/// What the warmup left for the outcome: the clock it ran on, its time
/// and its passes' times.
struct Warmed {
    timer: TimerInfo,
    warmup_ns: u64,
    warmup_passes: SampleSet,
}

/// After the measured passes: the timings (with the GPU's, when it
/// timed), validation and summaries, and the outcome.
#[allow(clippy::too_many_arguments)]
fn conclude<T: ProfileTarget, I: Inputs<T>>(
    target: &mut T,
    inputs: &I,
    plan: &RunPlan,
    mut tally: Tally,
    batches: Batches,
    mut measured: Measured<T::Output>,
    warmed: Warmed,
    gpu: Option<Result<GpuCapture, anyhow::Error>>,
) -> Result<RunOutcome, RunError> {
    let config = &plan.config;
    let Warmed {
        timer,
        warmup_ns,
        warmup_passes,
    } = warmed;
    let gpu_read = gpu.as_ref().and_then(|read| read.as_ref().ok());
    let (mut timings, mut samples) = measured.timings(plan, timer, warmup_ns, gpu_read);
    timings.per_record = Some(PerRecord::of(
        config.batch_size,
        batches,
        timings.iterations.as_ref(),
        timings.runs.as_ref(),
        &timings.ranges,
    ));
    let gpu = match gpu {
        Some(Ok(gpu)) => {
            attach_gpu(&mut timings.ranges, &gpu.ranges);
            timings.gpu = Some(gpu.timings());
            Some(gpu)
        }
        // The host timings stand; the run says why the GPU's are missing.
        Some(Err(error)) => {
            timings.gpu = Some(GpuTimings::unreadable(&error));
            None
        }
        None => None,
    };
    samples.warmup = crate::run_samples::Series::from_set(&warmup_passes);

    // A signal after the last call's look (while the statistics were made)
    // stops the run too: every pass completed, and the run says it was
    // interrupted.
    if tally.interrupted.is_none() {
        tally.interrupted = interrupt::requested();
    }
    let record_ids = inputs.record_ids();
    let (validation, output_summaries) = match tally.interrupted {
        // What completed is reported; outputs of a cut pass are neither
        // validated nor summarized.
        Some(_) if validates_in_warmup(config) => (Validation::Warmup, Vec::new()),
        Some(_) => (Validation::Disabled, Vec::new()),
        None => {
            let outputs = &measured.outputs;
            let validation = validate_after_capture(target, inputs, outputs, config, &mut tally)?;
            let batched = (config.batch_size > 1).then_some(batches);
            let summaries = summarize(target, &record_ids, batched, outputs, &mut tally)?;
            (validation, summaries)
        }
    };
    Ok(RunOutcome {
        record_batches: (0..record_ids.len())
            .map(|record| (record / batches.size) as u32)
            .collect(),
        record_ids,
        output_summaries,
        calls: tally.calls,
        completed_warmup: tally.completed_warmup,
        completed_iterations: tally.completed_iterations,
        validation,
        timings,
        capture: CaptureRecord {
            ranges: measured.ranges,
            passes: measured.passes,
            pass_count: tally.completed_iterations,
            samples,
            gpu,
            pass_name: "iteration",
        },
        interrupted: tally.interrupted,
    })
}

/// Outputs are validated in warmup when there is one; else after the
/// capture, in [`validate_after_capture`].
fn validates_in_warmup(config: &Config) -> bool {
    config.validate_output && config.warmup > 0
}

/// A synchronize after every call means something only on a CUDA device.
fn synchronizes_each_call(config: &Config) -> bool {
    config.cuda.synchronize_each_iteration && config.device.is_cuda()
}

/// Waits for the device at a synchronization point the config asks for
/// (`point`): only a CUDA device has anything to wait for.
fn synchronize_at(plan: &RunPlan, point: bool) {
    if point && plan.config.device.is_cuda() {
        (plan.synchronize)(plan.config.device);
    }
}

/// Tells the plan's `progress`, between passes, that `done` of `total`
/// passes of a phase are done.
#[inline]
fn report(plan: &RunPlan, measured: bool, done: u32, total: u32) {
    if let Some(progress) = &plan.progress {
        progress(Progress {
            measured,
            done,
            total,
        });
    }
}

/// The warmup passes, before the capture range: every output validated
/// when the config asks for that, and the threads and range names they use
/// registered. Returns how long they took.
/// The warmup passes; returns their time in all and, per pass, the time
/// of its target calls (validation aside), for the pass timeline.
fn warmup<T: ProfileTarget, I: Inputs<T>>(
    target: &mut T,
    inputs: &mut I,
    plan: &RunPlan,
    tally: &mut Tally,
) -> Result<(u64, SampleSet, u64), RunError> {
    let config = &plan.config;
    let (device, count) = (config.device, inputs.len());
    let sync_each = synchronizes_each_call(config);
    let validate = validates_in_warmup(config);

    synchronize_at(plan, config.cuda.synchronize_before_warmup);
    // Threads and range names seen in warmup get their place in the
    // recorder now, so the capture allocates nothing for them.
    let registration = Registration::begin();
    let mut passes = SampleSet::expecting(config.warmup as usize, SAMPLES_KEPT);
    let warmup_started = now_ns();
    let mut last_pass_opens = 0;
    'warmup: for pass in 0..config.warmup {
        let opens_before = crate::timing::recorder::registered_opens();
        let mut calls_ns = 0;
        for index in 0..count {
            let call_started = now_ns();
            let output = inputs
                .call(target, index, &mut tally.calls)
                .map_err(|e| tally.error(Pass::Warmup(pass), e))?;
            if sync_each {
                (plan.synchronize)(device);
            }
            calls_ns += now_ns() - call_started;
            if validate {
                tally.calls.validate += 1;
                guard(|| target.validate(&output)).map_err(|source| {
                    let failure = Failure {
                        batch: inputs.batch(index),
                        ..Failure::new(Phase::Validate, Some(inputs.record_id(index)), source)
                    };
                    tally.error(Pass::Warmup(pass), failure)
                })?;
            }
            drop(output);
            // A signal stops the run after the call in progress (see
            // `interrupt`).
            if let Some(signal) = interrupt::requested() {
                tally.interrupted = Some(signal);
                break 'warmup;
            }
        }
        tally.completed_warmup = pass + 1;
        last_pass_opens = crate::timing::recorder::registered_opens() - opens_before;
        passes.push(calls_ns);
        report(plan, false, pass + 1, config.warmup);
    }
    let warmup_ns = now_ns() - warmup_started;
    drop(registration);
    synchronize_at(plan, config.cuda.synchronize_after_warmup);
    Ok((warmup_ns, passes, last_pass_opens))
}

/// Refuses `memory: on` where the allocator cannot attribute: a binary
/// whose global allocator is not [`crate::memory::CountingAllocator`]
/// would report no figure at all, or a wrong one.
pub fn check_memory_attribution(config: &Config) -> anyhow::Result<()> {
    if config.memory.is_on() && !crate::memory::counting_installed() {
        anyhow::bail!(
            "memory: on: memory attribution is unavailable in this binary: its global allocator is not profiling_core::memory::CountingAllocator (a target or crate installs its own #[global_allocator]); run with memory: off, or drop the other allocator"
        );
    }
    Ok(())
}

/// A recorder switch that ranges read (device events, memory
/// attribution), on while it lives when it was set on.
struct Switch(Option<fn(bool)>);

impl Switch {
    fn set(on: bool, switch: fn(bool)) -> Switch {
        if on {
            switch(true);
        }
        Switch(on.then_some(switch))
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        if let Some(switch) = self.0 {
            switch(false);
        }
    }
}

/// What the measured passes fill: one output slot per input (the last
/// pass's outputs), the samples, and the ranges of the capture. Allocated
/// before the capture opens, so that nothing in it allocates.
struct Measured<O> {
    outputs: Vec<Option<O>>,
    pass_samples: SampleSet,
    call_samples: SampleSet,
    /// The call durations of the pass in progress, one slot per input:
    /// added to `call_samples` between passes, so that a pass's own time
    /// holds no sample bookkeeping (nor, past the kept samples, any
    /// histogram record).
    pass_calls: Vec<u64>,
    /// Start and end of the first [`PASSES_KEPT`] passes.
    passes: Vec<(u64, u64)>,
    ranges: RangeLog,
    /// From opening to closing the capture range.
    capture_ns: u64,
    /// The ranges the measured passes should record (as many per pass as
    /// the last warmup pass opened): their buffer pages are touched before
    /// the capture.
    expected_range_events: usize,
    /// Wall and CPU time of the measuring thread in the passes whose CPU
    /// time was read (between passes; every `cpu_stride`-th), up to
    /// [`PASSES_KEPT`].
    pass_cpu: Vec<(u64, u64)>,
    /// Every how many passes the CPU time is read: 1, unless the passes
    /// are so short that two readings a pass would cost more than 1 % of
    /// the capture ([`CPU_READINGS_NS`]).
    cpu_stride: u32,
    /// The last booked pass's wall time.
    last_pass_ns: u64,
    /// The machine just before the capture opened and just after it closed.
    machine: Option<(crate::machine::Snapshot, crate::machine::Snapshot)>,
    /// With `memory: on`: what each pass and call allocated.
    memory: Option<MeasuredMemory>,
}

/// The memory figures of the measured passes ([`crate::memory::attribution`]),
/// with room for every sample before the capture opens.
struct MeasuredMemory {
    passes: FigureSamples,
    calls: FigureSamples,
    /// The calls of the pass in progress: added to `calls` between passes.
    pass_calls: Vec<Figures>,
    /// The pass in progress, once it ended.
    pass: Figures,
    /// What attribution costs, measured before the capture.
    cost: crate::memory::attribution::Cost,
}

impl MeasuredMemory {
    /// Room for `iterations` passes over `count` inputs, `room` of them
    /// set aside now ([`Inputs::room`]).
    fn expecting(iterations: usize, count: usize, room: usize) -> MeasuredMemory {
        let mut memory = MeasuredMemory {
            passes: FigureSamples::expecting(iterations, SAMPLES_KEPT),
            calls: FigureSamples::expecting(iterations.saturating_mul(count), SAMPLES_KEPT),
            pass_calls: Vec::with_capacity(room),
            pass: Figures::default(),
            cost: crate::timing::recorder::measure_memory_cost(),
        };
        memory.passes.prefault();
        memory.calls.prefault();
        memory
    }

    /// The statistics of the run's memory, from the samples and the range
    /// log.
    fn timings(&self) -> MemoryTimings {
        let untracked = crate::memory::attribution::untracked_blocks();
        MemoryTimings {
            per_pass: self.passes.stats(),
            per_call: self.calls.stats(),
            cost_per_allocation_ns: self.cost.per_allocation_ns,
            cost_per_range_ns: self.cost.per_range_ns,
            untracked_blocks: untracked,
            note: (untracked > 0).then(|| {
                format!(
                    "{untracked} block(s) allocated in the capture found no room in the table of blocks: their frees were counted as memory allocated elsewhere"
                )
            }),
        }
    }
}

impl<O> Measured<O> {
    /// After a pass from `started` to `ended` (clock readings): its calls'
    /// spans into the call samples (an interrupted pass's calls included:
    /// each completed), then, unless a signal cut it, its own sample and
    /// bounds. False when it was cut.
    #[inline(always)]
    fn book_pass(&mut self, started: u64, ended: u64, tally: &mut Tally, iteration: u32) -> bool {
        let mut call_ns = 0;
        for &span in &self.pass_calls {
            call_ns = span_ns(span);
            self.call_samples.push(call_ns);
        }
        let calls = self.pass_calls.len();
        self.pass_calls.clear();
        if let Some(memory) = self.memory.as_mut() {
            for figures in &memory.pass_calls {
                memory.calls.push(figures);
            }
            memory.pass_calls.clear();
        }
        if tally.interrupted.is_some() {
            return false;
        }
        if let Some(memory) = self.memory.as_mut() {
            memory.passes.push(&memory.pass);
        }
        // One call: the pass is that call, to the same readings.
        let pass_ns = if calls == 1 {
            call_ns
        } else {
            span_ns(ended - started)
        };
        self.pass_samples.push(pass_ns);
        self.last_pass_ns = pass_ns;
        if self.passes.len() < self.passes.capacity() {
            // Clock readings, on the host timeline after the capture.
            self.passes.push((started, ended));
        }
        tally.completed_iterations = iteration + 1;
        true
    }

    /// Whether pass `iteration` reads the measuring thread's CPU time
    /// around it.
    #[inline(always)]
    fn reads_cpu(&self, iteration: u32) -> bool {
        iteration.is_multiple_of(self.cpu_stride) && self.pass_cpu.len() < self.pass_cpu.capacity()
    }

    /// The measuring thread's CPU time in the pass just booked, from its
    /// reading `before` the pass; after the first, the stride of the
    /// readings from how long that pass took.
    #[inline(always)]
    fn book_cpu(&mut self, before: u64) {
        let cpu = crate::machine::thread_cpu_ns().saturating_sub(before);
        self.pass_cpu.push((self.last_pass_ns, cpu));
        if self.pass_cpu.len() == 1 {
            let stride = CPU_READINGS_NS * 100 / self.last_pass_ns.max(1);
            self.cpu_stride = stride.clamp(1, u64::from(u32::MAX)) as u32;
        }
    }

    /// Room for `iterations` passes over `count` inputs, `room` of them
    /// set aside now ([`Inputs::room`]).
    fn expecting(iterations: u32, count: usize, room: usize) -> Self {
        let iterations = iterations as usize;
        Measured {
            outputs: (0..room).map(|_| None).collect(),
            pass_samples: SampleSet::expecting(iterations, SAMPLES_KEPT),
            call_samples: SampleSet::expecting(iterations.saturating_mul(count), SAMPLES_KEPT),
            pass_calls: Vec::with_capacity(room),
            passes: Vec::with_capacity(iterations.min(PASSES_KEPT)),
            ranges: RangeLog::default(),
            capture_ns: 0,
            expected_range_events: 0,
            pass_cpu: Vec::with_capacity(iterations.min(PASSES_KEPT)),
            cpu_stride: 1,
            last_pass_ns: 0,
            machine: None,
            memory: None,
        }
    }

    /// The run's host timings, from the capture and the warmup's time, and
    /// the samples they come from.
    fn timings(
        &mut self,
        plan: &RunPlan,
        timer: TimerInfo,
        warmup_ns: u64,
        gpu: Option<&GpuCapture>,
    ) -> (Timings, RunSamples) {
        let machine = self
            .machine
            .as_ref()
            .map(|(start, end)| crate::machine::state(start, end, &self.pass_cpu));
        // The sets move into the samples written with the run: no copy.
        let passes = std::mem::replace(&mut self.pass_samples, SampleSet::with_capacity(0));
        let calls = std::mem::replace(&mut self.call_samples, SampleSet::with_capacity(0));
        let sets = range_sets(&self.ranges);
        let (mut ranges, ranges_sketched) = timings_of(&sets);
        let memory = self.memory.as_ref().map(MeasuredMemory::timings);
        let range_memory = match &self.memory {
            Some(_) => crate::timing::memory::range_memory(&self.ranges, passes.count() as usize),
            None => Default::default(),
        };
        for range in &mut ranges {
            range.memory = range_memory.get(&range.name).map(|m| m.memory.clone());
        }
        let iterations = passes.stats();
        // One call per pass, every pass complete: each pass's sample is its
        // call's, the same number, so the statistics are the same.
        let runs = if self.outputs.len() == 1 && passes.count() == calls.count() {
            debug_assert_eq!(passes.kept(), calls.kept());
            iterations
        } else {
            calls.stats()
        };
        let sketch_note = sketch_note(&passes, &calls, ranges_sketched, &self.ranges);
        let tree = crate::timing::RangeTree::build_with_gpu(&self.ranges, &self.passes, gpu);
        let mut samples = RunSamples::from_owned_sets(passes, calls, sets);
        samples.memory = self.memory.as_ref().map(|memory| MemorySeries {
            allocations: Series::from_set(&memory.passes.allocations),
            allocated_bytes: Series::from_set(&memory.passes.allocated_bytes),
            peak_bytes: Series::from_set(&memory.passes.peak_bytes),
            ranges: range_memory
                .iter()
                .map(|(name, range)| RangeMemorySeries {
                    name: name.clone(),
                    allocations: Series::from_owned(SampleSet::of_values(
                        &range.allocations_per_pass,
                    )),
                    allocated_bytes: Series::from_owned(SampleSet::of_values(
                        &range.allocated_bytes_per_pass,
                    )),
                })
                .collect(),
        });
        let timings = Timings {
            iterations,
            runs,
            ranges,
            range_tree: tree.paths,
            range_tree_note: tree.note,
            timer: Some(timer),
            gpu: None,
            host_timing_note: host_timing_note(plan.config.device, &plan.config.cuda),
            sketch_note,
            load_ns: 0,
            prepare_ns: 0,
            warmup_ns,
            capture_ns: self.capture_ns,
            per_record: None,
            machine,
            memory,
        };
        (timings, samples)
    }
}

/// The measured passes, inside the capture range and each in its own
/// `iteration <i>` range. A pass is timed from its first call's start to
/// its last call's end; between those clock reads there are only the
/// target's calls, the synchronize the config asks for, a store of each
/// call's duration, the device events of GPU timing and the interrupt
/// check; the samples are added between passes. Inlined into [`drive`], its one caller, so that the
/// counters of the [`Tally`] stay locals of the loop.
#[inline(always)]
fn capture<T: ProfileTarget, I: Inputs<T>>(
    target: &mut T,
    inputs: &mut I,
    plan: &RunPlan,
    tally: &mut Tally,
    capture_name: &CStr,
    mut measured: Measured<T::Output>,
    mut gpu: Option<&mut GpuEvents>,
) -> Result<Measured<T::Output>, RunError> {
    let config = &plan.config;
    let iterations = config.iterations;
    let sync_each = synchronizes_each_call(config);
    let mut name_buffer = IterationName::new();
    // Interrupted in warmup: no measured pass starts.
    let measured_passes = tally.interrupted.map_or(iterations, |_| 0);

    // The sample buffers' pages mapped now, in one call each: a page fault
    // every 512 samples would otherwise land between the passes, inside
    // the capture range.
    measured.pass_samples.prefault();
    measured.call_samples.prefault();
    crate::memory::prefault_spare(&mut measured.passes);
    synchronize_at(plan, config.cuda.synchronize_before_capture);
    let machine_start = crate::machine::Snapshot::now();
    let capture = Capture::begin_expecting(measured.expected_range_events);
    if let Some(gpu) = gpu.as_deref_mut() {
        gpu.capture_begins();
    }
    let capture_started = now_ns();
    let capture_range = PassRange::open(capture_name);
    for iteration in 0..measured_passes {
        if let Some(gpu) = gpu.as_deref_mut() {
            gpu.pass_begins();
            gpu.boundary();
        }
        let reads_cpu = measured.reads_cpu(iteration);
        let cpu_before = if reads_cpu {
            crate::machine::thread_cpu_ns()
        } else {
            0
        };
        let pass_range = PassRange::open(name_buffer.format(iteration));
        let calls = pass_calls(
            target,
            inputs,
            plan,
            sync_each,
            &mut measured,
            tally,
            gpu.as_deref_mut(),
        );
        drop(pass_range);
        let (started, ended) = match calls {
            Ok(bounds) => bounds,
            Err(error) => {
                abandon(capture_range, capture);
                return Err(tally.error(Pass::Measured(iteration), error));
            }
        };
        if !measured.book_pass(started, ended, tally, iteration) {
            // The pass in progress did not complete: it is not a sample.
            break;
        }
        if reads_cpu {
            measured.book_cpu(cpu_before);
        }
        if let Some(gpu) = gpu.as_deref_mut() {
            gpu.pass_ends();
        }
        report(plan, true, iteration + 1, iterations);
    }
    drop(capture_range);
    measured.capture_ns = now_ns() - capture_started;
    measured.ranges = capture.end();
    measured.machine = Some((machine_start, crate::machine::Snapshot::now()));
    readings_to_ns(
        measured
            .passes
            .iter_mut()
            .flat_map(|(start, end)| [start, end]),
    );
    synchronize_at(plan, config.cuda.synchronize_after_capture);
    Ok(measured)
}

/// Closes what a failed measured pass left open: the capture range, and
/// the capture.
#[cold]
fn abandon(capture_range: PassRange, capture: Capture) {
    drop(capture_range);
    drop(capture.end());
}

/// The calls of one measured pass, inside its range: two clock reads per
/// call, none of the pass's own, each call's span stored in `measured`
/// and its output in its slot. Returns the readings at the first call's
/// start and the last call's end; a signal stops the pass after the call
/// in progress (the tally says so).
#[inline(always)]
fn pass_calls<T: ProfileTarget, I: Inputs<T>>(
    target: &mut T,
    inputs: &mut I,
    plan: &RunPlan,
    sync_each: bool,
    measured: &mut Measured<T::Output>,
    tally: &mut Tally,
    gpu: Option<&mut GpuEvents>,
) -> Result<(u64, u64), Failure> {
    // Two loops, so that a run with memory off has no trace of it.
    if measured.memory.is_some() {
        pass_calls_of::<T, I, true>(target, inputs, plan, sync_each, measured, tally, gpu)
    } else {
        pass_calls_of::<T, I, false>(target, inputs, plan, sync_each, measured, tally, gpu)
    }
}

/// [`pass_calls`], with the memory of each call and the pass taken when
/// `MEMORY` ([`crate::memory::attribution`]).
#[inline(always)]
fn pass_calls_of<T: ProfileTarget, I: Inputs<T>, const MEMORY: bool>(
    target: &mut T,
    inputs: &mut I,
    plan: &RunPlan,
    sync_each: bool,
    measured: &mut Measured<T::Output>,
    tally: &mut Tally,
    mut gpu: Option<&mut GpuEvents>,
) -> Result<(u64, u64), Failure> {
    let device = plan.config.device;
    let mut started = None;
    let mut ended = 0;
    if MEMORY {
        attribution::pass_begins(tally.completed_iterations);
    }
    for index in 0..inputs.len() {
        if MEMORY {
            attribution::call_begins();
        }
        let call_started = ticks();
        started.get_or_insert(call_started);
        let output = inputs.call(target, index, &mut tally.calls)?;
        if sync_each {
            (plan.synchronize)(device);
        }
        ended = ticks();
        if MEMORY {
            let figures = attribution::call_ends();
            if let Some(memory) = measured.memory.as_mut() {
                memory.pass_calls.push(figures);
            }
        }
        measured.pass_calls.push(ended - call_started);
        // After the call's clock read: its host time leaves it out.
        if let Some(gpu) = gpu.as_deref_mut() {
            gpu.boundary();
        }
        // Set aside before the passes, but for a lazily read source's
        // inputs past its room.
        match measured.outputs.get_mut(index) {
            Some(slot) => *slot = Some(output),
            None => measured.outputs.push(Some(output)),
        }
        if let Some(signal) = interrupt::requested() {
            tally.interrupted = Some(signal);
            if let Some(gpu) = gpu.as_deref_mut() {
                gpu.pass_cut();
            }
            break;
        }
    }
    if MEMORY {
        let figures = attribution::pass_ends();
        if let Some(memory) = measured.memory.as_mut() {
            memory.pass = figures;
        }
    }
    Ok((started.unwrap_or(ended), ended))
}

/// Which outputs were validated. With no warmup to validate in, the
/// outputs of the last measured pass are validated now, after the capture
/// range closed.
fn validate_after_capture<T: ProfileTarget, I: Inputs<T>>(
    target: &T,
    inputs: &I,
    outputs: &[Option<T::Output>],
    config: &Config,
    tally: &mut Tally,
) -> Result<Validation, RunError> {
    if !config.validate_output {
        return Ok(Validation::Disabled);
    }
    if validates_in_warmup(config) {
        return Ok(Validation::Warmup);
    }
    for (index, output) in outputs.iter().enumerate() {
        let output = output
            .as_ref()
            .expect("every measured pass fills every slot");
        tally.calls.validate += 1;
        guard(|| target.validate(output)).map_err(|source| {
            let failure = Failure {
                batch: inputs.batch(index),
                ..Failure::new(Phase::Validate, Some(inputs.record_id(index)), source)
            };
            tally.error(Pass::AfterCapture, failure)
        })?;
    }
    Ok(Validation::AfterCapture)
}

/// The summary of each output of the last measured pass, with its record,
/// or with `batched`, its batch's records (`record_ids` holds every record
/// of the pass).
fn summarize<T: ProfileTarget>(
    target: &T,
    record_ids: &[String],
    batched: Option<Batches>,
    outputs: &[Option<T::Output>],
    tally: &mut Tally,
) -> Result<Vec<OutputSummary>, RunError> {
    let mut output_summaries = Vec::with_capacity(outputs.len());
    for (index, output) in outputs.iter().enumerate() {
        let output = output
            .as_ref()
            .expect("every measured pass fills every slot");
        tally.calls.summarize += 1;
        let records = match batched {
            Some(batches) => &record_ids[batches.range(index)],
            None => &record_ids[index..=index],
        };
        let record_id = records[0].clone();
        let summary = guard(|| Ok(target.summarize(output))).map_err(|source| {
            let failure = Failure {
                batch: batched.map(|_| index as u32),
                ..Failure::new(Phase::Summarize, Some(&record_id), source)
            };
            tally.error(Pass::AfterCapture, failure)
        })?;
        output_summaries.push(OutputSummary {
            record_id,
            batch: index as u32,
            record_ids: match batched {
                Some(_) => records.to_vec(),
                None => Vec::new(),
            },
            summary,
        });
    }
    Ok(output_summaries)
}

/// What host timings mean on `device` under `policy`: on CUDA without a
/// synchronize after each call, they time kernel launches, not the GPU work.
pub fn host_timing_note(device: Device, policy: &crate::config::CudaPolicy) -> String {
    match device {
        Device::Cpu => "host wall-clock time: on the CPU it covers all the work of each call".to_owned(),
        Device::Cuda(_) if policy.synchronize_each_iteration => {
            "host wall-clock time with a device synchronize after every call: it covers the GPU work too".to_owned()
        }
        Device::Cuda(_) => "host timings measure kernel launches, not their completion: CUDA work is asynchronous \
             and cuda.synchronize_each_iteration is false; the GPU time is in the Nsight trace"
            .to_owned(),
    }
}

/// Says which figures come from histograms, if any do, and what the
/// recorder had to allocate inside the measured passes, if anything.
fn sketch_note(
    passes: &SampleSet,
    calls: &SampleSet,
    ranges: bool,
    log: &RangeLog,
) -> Option<String> {
    let mut parts = Vec::new();
    if passes.is_sketched() {
        parts.push("iterations");
    }
    if calls.is_sketched() {
        parts.push("runs");
    }
    if ranges {
        parts.push("ranges");
    }
    let mut notes = Vec::new();
    if !parts.is_empty() {
        notes.push(format!(
            "the quantiles of {} come from a histogram (within {:.1} %): the run produced more samples than are kept one by one; counts, totals, means and extremes are exact",
            parts.join(", "),
            crate::timing::samples::HISTOGRAM_ERROR * 100.0
        ));
    }
    if log.late_threads > 0 || log.late_names > 0 {
        notes.push(format!(
            "{} thread(s) and {} range name(s) were first seen inside the capture, not in warmup: each cost an allocation (a thread also a lock) inside a measured pass; \
             with warmup passes that open the same ranges on the same threads, the measured passes allocate nothing",
            log.late_threads, log.late_names
        ));
    }
    (!notes.is_empty()).then(|| notes.join("; "))
}

/// `iteration <i>` as a C string, formatted on the stack.
struct IterationName {
    buffer: [u8; 32],
    /// The length of the words before the number.
    start: usize,
    /// The number the buffer holds, and how many digits it has.
    current: Option<u32>,
    digits: usize,
}

impl IterationName {
    fn new() -> Self {
        IterationName::after(b"iteration ")
    }

    /// `<prefix><index>`: a paired run's `base iteration 3`.
    fn after(prefix: &[u8]) -> Self {
        let mut buffer = [0u8; 32];
        // Room for the prefix, ten digits and the NUL.
        assert!(
            prefix.len() + 11 <= buffer.len(),
            "pass name prefix too long"
        );
        buffer[..prefix.len()].copy_from_slice(prefix);
        IterationName {
            buffer,
            start: prefix.len(),
            current: None,
            digits: 0,
        }
    }

    /// `iteration <index>` (after the prefix) as a C string. The passes count up one at a
    /// time: the next number is the last one's digits carried in place.
    #[inline]
    fn format(&mut self, index: u32) -> &CStr {
        let start = self.start;
        if self
            .current
            .is_some_and(|last| last.checked_add(1) == Some(index))
        {
            self.increment(start);
        } else {
            self.write(start, index);
        }
        self.current = Some(index);
        // SAFETY: the buffer holds the prefix, ASCII digits and a NUL at
        // `start + digits`, with no NUL before it.
        unsafe { CStr::from_ptr(self.buffer.as_ptr().cast::<c_char>()) }
    }

    #[inline(always)]
    fn increment(&mut self, start: usize) {
        let last = start + self.digits - 1;
        if self.buffer[last] != b'9' {
            self.buffer[last] += 1;
        } else {
            self.carry(start);
        }
    }

    #[cold]
    fn carry(&mut self, start: usize) {
        let digits = &mut self.buffer[start..start + self.digits];
        for digit in digits.iter_mut().rev() {
            if *digit == b'9' {
                *digit = b'0';
            } else {
                *digit += 1;
                return;
            }
        }
        // Every digit carried: one more, a leading 1 and zeros after it.
        digits[0] = b'1';
        self.buffer[start + self.digits] = b'0';
        self.digits += 1;
        self.buffer[start + self.digits] = 0;
    }

    fn write(&mut self, start: usize, index: u32) {
        let mut digits = [0u8; 10];
        let mut n = index;
        let mut len = 0;
        loop {
            digits[len] = b'0' + (n % 10) as u8;
            len += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for (offset, digit) in digits[..len].iter().rev().enumerate() {
            self.buffer[start + offset] = *digit;
        }
        self.buffer[start + len] = 0;
        self.digits = len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iteration_names_count_from_zero() {
        let mut name = IterationName::new();
        assert_eq!(name.format(0).to_str().unwrap(), "iteration 0");
        assert_eq!(name.format(42).to_str().unwrap(), "iteration 42");
        assert_eq!(name.format(7).to_str().unwrap(), "iteration 7");
        assert_eq!(
            name.format(u32::MAX).to_str().unwrap(),
            "iteration 4294967295"
        );
    }

    /// Counting up carries digits in place: every name from 0 to 12,345
    /// reads as its number, across each new digit.
    #[test]
    fn iteration_names_counted_up_carry_their_digits() {
        let mut name = IterationName::new();
        for index in 0..=12_345u32 {
            assert_eq!(
                name.format(index).to_str().unwrap(),
                format!("iteration {index}")
            );
        }
        assert_eq!(
            name.format(4_294_967_294).to_str().unwrap(),
            "iteration 4294967294"
        );
        assert_eq!(
            name.format(u32::MAX).to_str().unwrap(),
            "iteration 4294967295"
        );
        assert_eq!(name.format(0).to_str().unwrap(), "iteration 0");
        assert_eq!(name.format(1).to_str().unwrap(), "iteration 1");
    }
}
