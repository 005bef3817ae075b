//! Two targets measured in one capture, their passes interleaved: the
//! paired runs of `profile-cli ab`.
//!
//! Each side is a run like any other (built, its inputs prepared, its
//! warmup passes run), driven here one measured pass at a time through
//! [`SteppedRun`], so that passes of the two alternate in blocks and
//! whatever the machine does meanwhile falls on both. A pass is the same
//! monomorphized loop a run's capture runs ([`super::pass_calls`]); the
//! dynamic call is once per pass, outside its timed window. After the
//! capture each side keeps the ranges that started inside its own passes
//! and makes its outcome as a run does.

use std::ffi::{CStr, CString};

use super::exclusive::{exclusive, Exclusive};
use super::{
    conclude, guard, now_ns, pass_calls, readings_to_ns, synchronizes_each_call, unread_parameters,
    warmup, Batches, EagerBatches, EagerRecords, Failure, Inputs, IterationName, Measured, Pass,
    Phase, Prepared, Records, RunError, RunOutcome, RunPlan, Tally, Warmed,
};
use crate::driver::contention::Snapshot;
use crate::driver::interrupt;
use crate::nvtx::PassRange;
use crate::target::ProfileTarget;
use crate::timing::{Capture, RangeLog, TimerInfo};

/// One side of a paired run, its measured passes run one at a time.
pub trait SteppedRun {
    /// The warmup passes, as a run has them: before the capture, every
    /// thread and range name they use registered.
    fn warmup(&mut self) -> Result<(), RunError>;
    /// The range events its measured passes should record (as many per
    /// pass as its last warmup pass opened).
    fn expected_range_events(&self) -> usize;
    /// True when its config attributes memory (`memory: on`).
    fn attributes_memory(&self) -> bool;
    /// One measured pass, inside an NVTX range named `name`. False when a
    /// signal cut it: it is not a sample, and no pass should follow.
    fn pass(&mut self, name: &CStr) -> Result<bool, RunError>;
    /// The outcome, from the ranges of the capture that started inside
    /// this side's passes and the capture's length.
    fn finish(
        self: Box<Self>,
        log: &RangeLog,
        capture_ns: u64,
        machine: &(Snapshot, Snapshot),
    ) -> Result<RunOutcome, RunError>;
}

/// A target built on `plan` with its inputs prepared, ready for
/// [`SteppedRun::warmup`]. The plan's records must be read already
/// ([`Records::Eager`]); GPU timing is not part of a paired run.
pub fn open_target<'p, T, F>(
    plan: &'p RunPlan,
    make: F,
) -> Result<Box<dyn SteppedRun + 'p>, RunError>
where
    T: ProfileTarget + 'p,
    F: FnOnce() -> anyhow::Result<T>,
{
    let exclusive = exclusive();
    let config = &plan.config;
    let tally = Tally::default();
    super::check_memory_attribution(config)
        .map_err(|source| tally.error(Pass::Setup, Failure::new(Phase::Run, None, source)))?;
    let parameters = config.target.parameters.clone();
    crate::target::set_parameters(&parameters);
    let mut target = guard(make)
        .map_err(|source| tally.error(Pass::Setup, Failure::new(Phase::Construct, None, source)))?;
    let parameters_read = crate::target::parameters_were_read();
    let batches = Batches::new(plan.records.len(), config.batch_size, config.last_batch);
    let batched = (config.batch_size > 1).then_some(batches);
    let setup_error = |message: String, tally: &Tally| {
        let source = anyhow::anyhow!(message);
        tally.error(Pass::Setup, Failure::new(Phase::Load, None, source))
    };
    if batches.batches == 0 {
        return Err(setup_error(
            format!(
                "last_batch: drop leaves no batch: {} record(s) make no whole batch of {}",
                plan.records.len(),
                batches.size
            ),
            &tally,
        ));
    }
    let Records::Eager(records) = &plan.records else {
        return Err(setup_error(
            "a paired run reads its records before it starts: record_loading: eager".to_owned(),
            &tally,
        ));
    };
    let records = &records[..batches.records];
    let device = config.device;
    let mut side = Side {
        plan,
        tally,
        batches,
        parameters,
        parameters_read,
        warmed: None,
        prepare_ns: 0,
        expected: 0,
        _exclusive: exclusive,
    };
    let stepped: Box<dyn SteppedRun + 'p> = match (config.target.profile_prepare, batched) {
        (false, _) => {
            let started = now_ns();
            let mut prepared = Vec::with_capacity(batches.batches);
            for index in 0..batches.batches {
                let input = super::prepare_measured(
                    &mut target,
                    &records[batches.range(index)],
                    batched.map(|_| index),
                    device,
                    &mut side.tally,
                    None,
                )?;
                prepared.push(input);
            }
            side.prepare_ns = now_ns() - started;
            side.parameters_read |= crate::target::parameters_were_read();
            let inputs = Prepared {
                prepared,
                records,
                batches: batched,
            };
            Box::new(Stepped::new(target, inputs, side))
        }
        (true, None) => Box::new(Stepped::new(target, EagerRecords { records, device }, side)),
        (true, Some(batches)) => {
            let inputs = EagerBatches {
                records,
                batches,
                device,
            };
            Box::new(Stepped::new(target, inputs, side))
        }
    };
    Ok(stepped)
}

/// What a side carries besides its target and inputs.
struct Side<'p> {
    plan: &'p RunPlan,
    tally: Tally,
    batches: Batches,
    /// Its `target.parameters`, set again before each of its steps: the
    /// two sides' targets read their own.
    parameters: serde_yaml::Mapping,
    /// Whether its target read them at some step.
    parameters_read: bool,
    warmed: Option<Warmed>,
    prepare_ns: u64,
    expected: usize,
    /// The process's one run, held from the target's construction until
    /// the side is dropped.
    _exclusive: Exclusive,
}

struct Stepped<'p, T: ProfileTarget, I> {
    target: T,
    inputs: I,
    side: Side<'p>,
    measured: Measured<T::Output>,
    sync_each: bool,
}

impl<'p, T: ProfileTarget, I: Inputs<T>> Stepped<'p, T, I> {
    fn new(target: T, inputs: I, side: Side<'p>) -> Self {
        let config = &side.plan.config;
        let mut measured = Measured::expecting(config.iterations, inputs.len(), inputs.room());
        measured.memory = config.memory.is_on().then(|| {
            super::MeasuredMemory::expecting(
                config.iterations as usize,
                inputs.len(),
                inputs.room(),
            )
        });
        Stepped {
            sync_each: synchronizes_each_call(config),
            target,
            inputs,
            side,
            measured,
        }
    }

    /// Its parameters in place for one of its steps.
    fn enter(&self) {
        crate::target::set_parameters(&self.side.parameters);
    }

    /// After a step: whether its target read them.
    fn leave(&mut self) {
        self.side.parameters_read |= crate::target::parameters_were_read();
    }
}

impl<T: ProfileTarget, I: Inputs<T>> SteppedRun for Stepped<'_, T, I> {
    fn warmup(&mut self) -> Result<(), RunError> {
        self.enter();
        let timer = TimerInfo::measure();
        let plan = self.side.plan;
        let (warmup_ns, warmup_passes, last_opens) = warmup(
            &mut self.target,
            &mut self.inputs,
            plan,
            &mut self.side.tally,
        )?;
        self.leave();
        self.side.expected = (last_opens as usize).saturating_mul(plan.config.iterations as usize);
        self.side.warmed = Some(Warmed {
            timer,
            warmup_ns,
            warmup_passes,
        });
        // The sample buffers' pages mapped now, not between passes.
        self.measured.pass_samples.prefault();
        self.measured.call_samples.prefault();
        crate::memory::prefault_spare(&mut self.measured.passes);
        Ok(())
    }

    fn expected_range_events(&self) -> usize {
        self.side.expected
    }

    fn attributes_memory(&self) -> bool {
        self.measured.memory.is_some()
    }

    fn pass(&mut self, name: &CStr) -> Result<bool, RunError> {
        let iteration = self.side.tally.completed_iterations;
        if self.side.tally.interrupted.is_some() {
            return Ok(false);
        }
        let reads_cpu = self.measured.reads_cpu(iteration);
        let cpu_before = if reads_cpu {
            crate::driver::contention::thread_cpu_ns()
        } else {
            0
        };
        let pass_range = PassRange::open(name);
        let calls = pass_calls(
            &mut self.target,
            &mut self.inputs,
            self.side.plan,
            self.sync_each,
            &mut self.measured,
            &mut self.side.tally,
            None,
        );
        drop(pass_range);
        let (started, ended) =
            calls.map_err(|error| self.side.tally.error(Pass::Measured(iteration), error))?;
        let booked = self
            .measured
            .book_pass(started, ended, &mut self.side.tally, iteration);
        if booked && reads_cpu {
            self.measured.book_cpu(cpu_before);
        }
        Ok(booked)
    }

    fn finish(
        mut self: Box<Self>,
        log: &RangeLog,
        capture_ns: u64,
        machine: &(Snapshot, Snapshot),
    ) -> Result<RunOutcome, RunError> {
        self.measured.machine = Some(machine.clone());
        self.enter();
        readings_to_ns(
            self.measured
                .passes
                .iter_mut()
                .flat_map(|(start, end)| [start, end]),
        );
        self.measured.ranges = log.within(&self.measured.passes);
        self.measured.capture_ns = capture_ns;
        let Stepped {
            mut target,
            inputs,
            side,
            measured,
            ..
        } = *self;
        let plan = side.plan;
        let warmed = side.warmed.unwrap_or(Warmed {
            timer: TimerInfo::measure(),
            warmup_ns: 0,
            warmup_passes: crate::timing::SampleSet::with_capacity(0),
        });
        let mut outcome = conclude(
            &mut target,
            &inputs,
            plan,
            side.tally,
            side.batches,
            measured,
            warmed,
            None,
        )?;
        outcome.timings.prepare_ns = side.prepare_ns;
        let read = side.parameters_read || crate::target::parameters_were_read();
        if !read && outcome.interrupted.is_none() {
            if let Some(key) = crate::target::unread_parameter() {
                return Err(unread_parameters(&plan.config, &outcome, key));
            }
        }
        Ok(outcome)
    }
}

/// Which side a pass belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairSide {
    Base,
    Candidate,
}

impl PairSide {
    /// The word its NVTX pass ranges start with.
    pub fn word(self) -> &'static str {
        match self {
            PairSide::Base => "base",
            PairSide::Candidate => "candidate",
        }
    }
}

/// The blocks of a paired run of `iterations` passes a side, `size`
/// passes a block: in pairs of blocks, each pair base then candidate or
/// candidate then base, the two orders in turn from a start `seed` picks
/// (ABBA, BAAB, ...), so that neither side always runs first. The last
/// pair may be shorter.
pub fn paired_blocks(iterations: u32, size: u32, seed: u64) -> Vec<(PairSide, u32)> {
    let size = size.max(1);
    let mut blocks = Vec::new();
    let mut left = iterations;
    let mut base_first = seed.is_multiple_of(2);
    while left > 0 {
        let passes = size.min(left);
        let (first, second) = if base_first {
            (PairSide::Base, PairSide::Candidate)
        } else {
            (PairSide::Candidate, PairSide::Base)
        };
        blocks.push((first, passes));
        blocks.push((second, passes));
        left -= passes;
        base_first = !base_first;
    }
    blocks
}

/// Runs both sides' warmups (the base's first), then, inside one capture
/// range named `capture_range`, `blocks`: each a side and how many of its
/// passes run in a row. A signal stops it after the call in progress;
/// each side then reports what completed. Returns both outcomes.
pub(crate) fn run_paired<'p>(
    mut base: Box<dyn SteppedRun + 'p>,
    mut candidate: Box<dyn SteppedRun + 'p>,
    capture_range: &str,
    blocks: &[(PairSide, u32)],
) -> (Result<RunOutcome, RunError>, Result<RunOutcome, RunError>) {
    // From here to the outcomes, a signal stops the passes rather than the
    // process.
    let _passes = interrupt::Hold::new();
    if let Err(error) = base.warmup() {
        return (Err(error), not_run("the base"));
    }
    if let Err(error) = candidate.warmup() {
        return (not_run("the candidate"), Err(error));
    }
    let capture_name = CString::new(capture_range).unwrap_or_else(|_| c"profile-target".into());
    let mut names = [
        IterationName::after(b"base iteration "),
        IterationName::after(b"candidate iteration "),
    ];
    let expected = base.expected_range_events() + candidate.expected_range_events();
    let memory_mode = super::Switch::set(
        base.attributes_memory() || candidate.attributes_memory(),
        crate::timing::recorder::set_memory,
    );
    let machine_start = Snapshot::opening();
    let capture = Capture::begin_expecting(expected);
    let capture_started = now_ns();
    let capture_range = PassRange::open(&capture_name);
    // Completed passes of each side.
    let mut done = [0u32; 2];
    let mut failure = None;
    let read_after = crate::driver::canary::between_blocks(blocks.len());
    let mut between = Vec::with_capacity(read_after.len());
    'blocks: for (index, &(side, passes)) in blocks.iter().enumerate() {
        if index > 0 && read_after.contains(&(index - 1)) {
            between.push(crate::driver::canary::read());
        }
        let (run, count, name): (&mut dyn SteppedRun, _, _) = match side {
            PairSide::Base => (base.as_mut(), &mut done[0], &mut names[0]),
            PairSide::Candidate => (candidate.as_mut(), &mut done[1], &mut names[1]),
        };
        for _ in 0..passes {
            match run.pass(name.format(*count)) {
                Ok(true) => *count += 1,
                Ok(false) => break 'blocks,
                Err(error) => {
                    failure = Some((side, error));
                    break 'blocks;
                }
            }
        }
    }
    drop(capture_range);
    let capture_ns = now_ns() - capture_started;
    let log = capture.end();
    drop(memory_mode);
    let machine = (machine_start, Snapshot::closing_after(between));
    let (base_failed, candidate_failed) = match failure {
        Some((PairSide::Base, error)) => (Some(error), None),
        Some((PairSide::Candidate, error)) => (None, Some(error)),
        None => (None, None),
    };
    let finish = |run: Box<dyn SteppedRun + 'p>, failed: Option<RunError>, name: &'static str| {
        match failed {
            Some(error) => Err(error),
            None => run.finish(&log, capture_ns, &machine).map(|mut outcome| {
                outcome.capture.pass_name = name;
                outcome
            }),
        }
    };
    (
        finish(base, base_failed, "base iteration"),
        finish(candidate, candidate_failed, "candidate iteration"),
    )
}

/// Where a side run in a process of its own ([`run_alone`]) has got: what
/// it tells whoever paces it, and is told the next step in answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Built on its plan, its inputs prepared; its warmup not yet run.
    Opened,
    /// Its warmup run; its capture not yet begun.
    Warmed,
    /// Its last block of passes ran whole.
    Ran,
    /// A signal cut its last block: no pass should follow.
    Stopped,
    /// A pass failed: no pass follows.
    Failed,
}

/// What a side run alone does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Run the warmup (after [`Step::Opened`]).
    Warmup,
    /// Run this many passes in a row, a block (after [`Step::Warmed`] or
    /// [`Step::Ran`]).
    Passes(u32),
    /// End the capture and make the outcome of what ran.
    End,
    /// The other side failed before the paired passes: this one does not
    /// run, and says why ([`RunError::not_run`]).
    Abort {
        other: &'static str,
        because: &'static str,
    },
}

/// One side of a paired run whose other side runs in another process
/// (`profile-cli ab --against`): its warmup, then inside one capture range
/// named `capture_range`, the blocks `pace` asks for, one at a time, its
/// passes named after `side`. `pace` is told each step and answers with
/// the next; the other process runs while this one waits for the answer.
pub(crate) fn run_alone<'p>(
    mut run: Box<dyn SteppedRun + 'p>,
    side: PairSide,
    capture_range: &str,
    pace: &mut dyn FnMut(Step) -> Next,
) -> Result<RunOutcome, RunError> {
    let _passes = interrupt::Hold::new();
    let abort = |other, because| Err(RunError::not_run(other, because, Phase::Run));
    match pace(Step::Opened) {
        Next::Abort { other, because } => return abort(other, because),
        Next::End => return abort("the other side", "ended the pair before it began"),
        Next::Warmup | Next::Passes(_) => {}
    }
    run.warmup()?;
    let mut next = pace(Step::Warmed);
    if let Next::Abort { other, because } = next {
        return abort(other, because);
    }
    let capture_name = CString::new(capture_range).unwrap_or_else(|_| c"profile-target".into());
    let (prefix, pass_name): (&[u8], _) = match side {
        PairSide::Base => (b"base iteration ", "base iteration"),
        PairSide::Candidate => (b"candidate iteration ", "candidate iteration"),
    };
    let mut name = IterationName::after(prefix);
    let memory_mode =
        super::Switch::set(run.attributes_memory(), crate::timing::recorder::set_memory);
    let machine_start = Snapshot::opening();
    let capture = Capture::begin_expecting(run.expected_range_events());
    let capture_started = now_ns();
    let capture_range = PassRange::open(&capture_name);
    let mut done = 0u32;
    let mut failure = None;
    while let Next::Passes(passes) = next {
        let mut step = Step::Ran;
        for _ in 0..passes {
            match run.pass(name.format(done)) {
                Ok(true) => done += 1,
                Ok(false) => {
                    step = Step::Stopped;
                    break;
                }
                Err(error) => {
                    failure = Some(error);
                    step = Step::Failed;
                    break;
                }
            }
        }
        next = pace(step);
        if step != Step::Ran {
            break;
        }
    }
    drop(capture_range);
    let capture_ns = now_ns() - capture_started;
    let log = capture.end();
    drop(memory_mode);
    let machine = (machine_start, Snapshot::closing());
    if let Some(error) = failure {
        return Err(error);
    }
    run.finish(&log, capture_ns, &machine).map(|mut outcome| {
        outcome.capture.pass_name = pass_name;
        outcome
    })
}

/// The result of a side that did not run because `other` failed before
/// the paired passes.
fn not_run(other: &'static str) -> Result<RunOutcome, RunError> {
    Err(RunError::not_run(
        other,
        "failed before the paired passes",
        Phase::Run,
    ))
}
