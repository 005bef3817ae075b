//! The measured run: warmup passes, then measured passes inside one NVTX
//! capture range, in exactly the order of the reference tool.
//!
//! [`run_target`] is generic over the target, so the pass loop is
//! monomorphized for it: no boxing or dynamic dispatch between the clock
//! reads, and nothing there allocates, logs or validates.

mod exclusive;
mod inputs;
mod iteration_name;
mod measured;
mod outcome;
mod per_record;
mod sizing;
mod stepped;

pub use outcome::{
    CallCounts, CaptureRecord, NotRun, OutputSummary, Pass, Phase, RunError, RunOutcome, Timings,
    Validation,
};
pub use per_record::{PerRecord, Throughput};
pub use sizing::{MeasurementTime, MAX_SIZED_PASSES, MAX_SIZED_RANGE_EVENTS};

pub(crate) use exclusive::exclusive;
use inputs::{EagerBatches, EagerRecords, Inputs, LazyBatches, LazyRecords, Prepared};
use iteration_name::IterationName;
use measured::{capture, pass_calls, Measured, MeasuredMemory, Switch};
use outcome::{Failure, Tally};
pub use stepped::{open_target, paired_blocks, Next, PairSide, Step, SteppedRun};
pub(crate) use stepped::{run_alone, run_paired};

use std::ffi::CString;
use std::sync::Arc;

use crate::backend::synchronize;
use crate::data::{AvailableMemory, DataError, DataRecord, DataSource};
use crate::device::Device;
use crate::driver::config::{Batches, Config, RecordReading};
use crate::driver::interrupt;
use crate::driver::panics::guard;
use crate::target::ProfileTarget;
use crate::timing::{
    attach_gpu, now_ns, readings_to_ns, EventBackend, GpuCapture, GpuEvents, GpuTimings, RangeLog,
    Registration, SampleSet, TimerInfo,
};

/// Everything a run needs: the resolved config and the records (read
/// already when eager, a source to read from when lazy).
pub struct RunPlan {
    pub config: Config,
    pub records: Records,
    /// Waits for a CUDA device at the synchronization points of the config;
    /// [`crate::backend::synchronize`] unless a test observes them.
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

/// Runs a target on a plan: the body `#[profile_target]` registers for
/// every target, monomorphized for its type.
pub fn run_target<T, F>(plan: &RunPlan, make: F) -> Result<RunOutcome, RunError>
where
    T: ProfileTarget,
    F: FnOnce() -> anyhow::Result<T>,
{
    // No other run's ranges in this one's capture, nor this one's in
    // another's (see `exclusive`).
    let _exclusive = exclusive::exclusive();
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
    let mut read_ns = 0;
    let records = match &plan.records {
        Records::Unread(source) => {
            let (records, first, ns) =
                read_eager(&mut target, source.as_ref(), plan, batched, &mut tally)?;
            loaded = records;
            first_input = first;
            read_ns = ns;
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
                RecordReading::Lazy
            );
            Err(tally.error(Pass::Setup, Failure::new(Phase::Load, None, source)))
        }
    };
    let mut outcome = outcome?;
    outcome.timings.read_ns = read_ns;
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
    let read_ns = (now_ns() - reading).saturating_sub(preparing);
    Ok((records, first_input, read_ns))
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
    // `measurement_time`: the passes sized now, at the warmup's pace.
    let sized = config.measurement_time_ns.map(|asked| {
        let pace = warmup_passes
            .stats()
            .map_or(warmup_ns, |stats| stats.p50_ns);
        MeasurementTime::size(asked, pace, last_warmup_opens)
    });
    let iterations = sized
        .as_ref()
        .map_or(config.iterations, |sized| sized.passes);
    if let Some(gpu) = gpu.as_mut() {
        // Two events per range of the last warmup pass, and the runner's
        // boundaries: one before each call and one after the last.
        let per_pass = (config.warmup > 0)
            .then(|| (last_warmup_opens as usize).saturating_mul(2) + inputs.len() + 1);
        gpu.prepare_capture(per_pass, iterations, inputs.len())
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
    let mut measured = Measured::expecting(iterations, inputs.len(), inputs.room());
    measured.canary =
        crate::driver::canary::worth_reading(warmup_ns, tally.completed_warmup, iterations);
    measured.expected_range_events =
        (last_warmup_opens as usize).saturating_mul(iterations as usize);
    measured.memory = config
        .memory
        .is_on()
        .then(|| MeasuredMemory::expecting(iterations as usize, inputs.len(), inputs.room()));
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
    let mut outcome = conclude(target, &inputs, plan, tally, batches, measured, warmed, gpu)?;
    outcome.measurement_time = sized;
    Ok(outcome)
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
    samples.warmup = crate::driver::run_samples::Series::from_set(&warmup_passes);

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
        measurement_time: None,
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
pub(crate) fn check_memory_attribution(config: &Config) -> anyhow::Result<()> {
    if config.memory.is_on() && !crate::memory::counting_installed() {
        anyhow::bail!(
            "memory: on: memory attribution is unavailable in this binary: its global allocator is not profiling_core::memory::CountingAllocator (a target or crate installs its own #[global_allocator]); run with memory: off, or drop the other allocator"
        );
    }
    Ok(())
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
pub fn host_timing_note(device: Device, policy: &crate::driver::config::CudaPolicy) -> String {
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
