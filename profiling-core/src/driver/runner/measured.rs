//! The measured passes inside the capture range: the switches ranges read
//! (device events, memory attribution), the loop between two clock reads,
//! and what each pass left.

use std::ffi::CStr;

use super::inputs::Inputs;
use super::iteration_name::IterationName;
use super::outcome::{Failure, Pass, RunError, Tally, Timings};
use super::{
    host_timing_note, report, sketch_note, synchronize_at, synchronizes_each_call, RunPlan,
    CPU_READINGS_NS, PASSES_KEPT, SAMPLES_KEPT,
};
use crate::driver::interrupt;
use crate::driver::run_samples::{MemorySeries, RangeMemorySeries, RunSamples, Series};
use crate::memory::attribution::{self, Figures};
use crate::nvtx::PassRange;
use crate::target::ProfileTarget;
use crate::timing::memory::{FigureSamples, MemoryTimings};
use crate::timing::{
    now_ns, range_sets, readings_to_ns, span_ns, ticks, timings_of, Capture, GpuCapture, GpuEvents,
    RangeLog, SampleSet, TimerInfo,
};

/// A recorder switch that ranges read (device events, memory
/// attribution), on while it lives when it was set on.
pub(super) struct Switch(Option<fn(bool)>);

impl Switch {
    pub(super) fn set(on: bool, switch: fn(bool)) -> Switch {
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
pub(super) struct Measured<O> {
    /// The measured passes to run.
    pub(super) iterations: u32,
    pub(super) outputs: Vec<Option<O>>,
    pub(super) pass_samples: SampleSet,
    pub(super) call_samples: SampleSet,
    /// The call durations of the pass in progress, one slot per input:
    /// added to `call_samples` between passes, so that a pass's own time
    /// holds no sample bookkeeping (nor, past the kept samples, any
    /// histogram record).
    pub(super) pass_calls: Vec<u64>,
    /// Start and end of the first [`PASSES_KEPT`] passes.
    pub(super) passes: Vec<(u64, u64)>,
    pub(super) ranges: RangeLog,
    /// From opening to closing the capture range.
    pub(super) capture_ns: u64,
    /// The ranges the measured passes should record (as many per pass as
    /// the last warmup pass opened): their buffer pages are touched before
    /// the capture.
    pub(super) expected_range_events: usize,
    /// Wall and CPU time of the measuring thread in the passes whose CPU
    /// time was read (between passes; every `cpu_stride`-th), up to
    /// [`PASSES_KEPT`].
    pub(super) pass_cpu: Vec<(u64, u64)>,
    /// Every how many passes the CPU time is read: 1, unless the passes
    /// are so short that two readings a pass would cost more than 1 % of
    /// the capture ([`CPU_READINGS_NS`]).
    pub(super) cpu_stride: u32,
    /// The last booked pass's wall time.
    pub(super) last_pass_ns: u64,
    /// The machine just before the capture opened and just after it closed.
    pub(super) machine: Option<(
        crate::driver::contention::Snapshot,
        crate::driver::contention::Snapshot,
    )>,
    /// With `memory: on`: what each pass and call allocated.
    pub(super) memory: Option<MeasuredMemory>,
    /// Whether the machine-speed canary is read around the capture, or
    /// why not ([`crate::driver::canary::worth_reading`]).
    pub(super) canary: Result<(), String>,
}

/// The memory figures of the measured passes ([`crate::memory::attribution`]),
/// with room for every sample before the capture opens.
pub(super) struct MeasuredMemory {
    pub(super) passes: FigureSamples,
    pub(super) calls: FigureSamples,
    /// The calls of the pass in progress: added to `calls` between passes.
    pub(super) pass_calls: Vec<Figures>,
    /// The pass in progress, once it ended.
    pub(super) pass: Figures,
    /// What attribution costs, measured before the capture.
    pub(super) cost: crate::memory::attribution::Cost,
}

impl MeasuredMemory {
    /// Room for `iterations` passes over `count` inputs, `room` of them
    /// set aside now ([`Inputs::room`]).
    pub(super) fn expecting(iterations: usize, count: usize, room: usize) -> MeasuredMemory {
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
    pub(super) fn timings(&self) -> MemoryTimings {
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
    pub(super) fn book_pass(
        &mut self,
        started: u64,
        ended: u64,
        tally: &mut Tally,
        iteration: u32,
    ) -> bool {
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
    pub(super) fn reads_cpu(&self, iteration: u32) -> bool {
        iteration.is_multiple_of(self.cpu_stride) && self.pass_cpu.len() < self.pass_cpu.capacity()
    }

    /// The measuring thread's CPU time in the pass just booked, from its
    /// reading `before` the pass; after the first, the stride of the
    /// readings from how long that pass took.
    #[inline(always)]
    pub(super) fn book_cpu(&mut self, before: u64) {
        let cpu = crate::driver::contention::thread_cpu_ns().saturating_sub(before);
        self.pass_cpu.push((self.last_pass_ns, cpu));
        if self.pass_cpu.len() == 1 {
            let stride = CPU_READINGS_NS * 100 / self.last_pass_ns.max(1);
            self.cpu_stride = stride.clamp(1, u64::from(u32::MAX)) as u32;
        }
    }

    /// Room for `iterations` passes over `count` inputs, `room` of them
    /// set aside now ([`Inputs::room`]).
    pub(super) fn expecting(passes: u32, count: usize, room: usize) -> Self {
        let iterations = passes as usize;
        Measured {
            iterations: passes,
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
            canary: Ok(()),
        }
    }

    /// The run's host timings, from the capture and the warmup's time, and
    /// the samples they come from.
    pub(super) fn timings(
        &mut self,
        plan: &RunPlan,
        timer: TimerInfo,
        warmup_ns: u64,
        gpu: Option<&GpuCapture>,
    ) -> (Timings, RunSamples) {
        let machine = self
            .machine
            .as_ref()
            .map(|(start, end)| crate::driver::contention::state(start, end, &self.pass_cpu));
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
            read_ns: 0,
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
pub(super) fn capture<T: ProfileTarget, I: Inputs<T>>(
    target: &mut T,
    inputs: &mut I,
    plan: &RunPlan,
    tally: &mut Tally,
    capture_name: &CStr,
    mut measured: Measured<T::Output>,
    mut gpu: Option<&mut GpuEvents>,
) -> Result<Measured<T::Output>, RunError> {
    let config = &plan.config;
    let iterations = measured.iterations;
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
    let machine_start = crate::driver::contention::Snapshot::opening_if(std::mem::replace(
        &mut measured.canary,
        Ok(()),
    ));
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
            crate::driver::contention::thread_cpu_ns()
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
    let machine_end = crate::driver::contention::Snapshot::closing_as(&machine_start);
    measured.machine = Some((machine_start, machine_end));
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
pub(super) fn abandon(capture_range: PassRange, capture: Capture) {
    drop(capture_range);
    drop(capture.end());
}

/// The calls of one measured pass, inside its range: two clock reads per
/// call, none of the pass's own, each call's span stored in `measured`
/// and its output in its slot. Returns the readings at the first call's
/// start and the last call's end; a signal stops the pass after the call
/// in progress (the tally says so).
#[inline(always)]
pub(super) fn pass_calls<T: ProfileTarget, I: Inputs<T>>(
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
pub(super) fn pass_calls_of<T: ProfileTarget, I: Inputs<T>, const MEMORY: bool>(
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
