//! Nothing in the measured loop allocates: the threads and range names a
//! target uses are registered in warmup, so the measured passes of a target
//! with nested ranges on two threads allocate nothing, harness included.
//! Counted with the crate's counting allocator, installed here as the
//! binary's global allocator, with the tests run one after the other
//! (tests/sequential) so that nothing else allocates meanwhile.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread::JoinHandle;

use profiling_core::data;
use profiling_core::driver::config::{ConfigFile, Overrides};
use profiling_core::driver::runner::{run_target, Records, RunPlan};
use profiling_core::memory::{watch_allocations, AllocationWatch, Allocations, CountingAllocator};
use profiling_core::prelude::*;
use profiling_core::timing::recorder::is_recording;

mod sequential;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Opens nested ranges in `run`, and has a worker thread, started when the
/// target is built, open nested ranges of its own during every call.
/// Counts allocations from its first measured call to its last.
struct TwoThreads {
    start: Arc<Barrier>,
    done: Arc<Barrier>,
    stop: Arc<AtomicBool>,
    worker: Option<JoinHandle<()>>,
    measured_calls: u64,
    expected_calls: u64,
    watch: Option<AllocationWatch>,
    counted: Arc<Mutex<Option<Option<Allocations>>>>,
}

impl TwoThreads {
    fn new(expected_calls: u64, counted: Arc<Mutex<Option<Option<Allocations>>>>) -> Self {
        let start = Arc::new(Barrier::new(2));
        let done = Arc::new(Barrier::new(2));
        let stop = Arc::new(AtomicBool::new(false));
        let worker = {
            let (start, done, stop) = (start.clone(), done.clone(), stop.clone());
            std::thread::Builder::new()
                .name("worker".to_owned())
                .spawn(move || loop {
                    start.wait();
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    {
                        let _outer = profiling_range("worker outer");
                        let _inner = profiling_range("worker inner");
                        std::hint::black_box(17u64.pow(2));
                    }
                    done.wait();
                })
                .unwrap()
        };
        TwoThreads {
            start,
            done,
            stop,
            worker: Some(worker),
            measured_calls: 0,
            expected_calls,
            watch: None,
            counted,
        }
    }
}

impl Drop for TwoThreads {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.start.wait();
        if let Some(worker) = self.worker.take() {
            worker.join().unwrap();
        }
    }
}

impl ProfileTarget for TwoThreads {
    type Prepared = u64;
    type Output = u64;

    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<u64> {
        Ok(3)
    }

    fn prepare_batch(&mut self, records: &[DataRecord], _device: Device) -> anyhow::Result<u64> {
        Ok(records.len() as u64)
    }

    fn run(&mut self, prepared: &u64) -> anyhow::Result<u64> {
        if is_recording() && self.watch.is_none() && self.measured_calls == 0 {
            self.watch = Some(watch_allocations());
        }
        self.start.wait();
        let value = {
            let _outer = profiling_range("main outer");
            let _inner = profiling_range(c"main inner");
            std::hint::black_box(prepared * 2)
        };
        self.done.wait();
        if is_recording() {
            self.measured_calls += 1;
            if self.measured_calls == self.expected_calls {
                let counts = self.watch.take().and_then(AllocationWatch::finish);
                *self.counted.lock().unwrap() = Some(counts);
            }
        }
        Ok(value)
    }
}

fn plan(warmup: u32, iterations: u32, records: u32) -> RunPlan {
    batched_plan(warmup, iterations, records, 1)
}

/// [`plan`] in batches of `batch_size`.
fn batched_plan(warmup: u32, iterations: u32, records: u32, batch_size: u32) -> RunPlan {
    let config = ConfigFile::parse(
        &format!(
            "target: {{name: two-threads}}\ndata_source: {{name: dummy, record_count: {records}, tensor_shape: [4]}}\nwarmup: {warmup}\niterations: {iterations}\nbatch_size: {batch_size}\n"
        ),
        None,
    )
    .unwrap()
    .resolve(&Overrides::default())
    .unwrap();
    let source = data::build("dummy", &config.data_source.parameters).unwrap();
    RunPlan::new(config, Records::Eager(source.read_all().unwrap()))
}

fn measured_passes_of_nested_ranges_on_two_threads_allocate_nothing() {
    nested_ranges_on_two_threads(false, 1);
}

/// The same in batches, a short last batch kept: one call per batch.
fn measured_passes_of_batches_allocate_nothing() {
    nested_ranges_on_two_threads(false, 2);
}

/// The same with device events at every range, call and pass boundary (on
/// a fake device whose events are made without allocating): the event pool,
/// its top-ups between passes and the runner's boundaries allocate nothing
/// either.
fn with_gpu_timing_the_measured_passes_allocate_nothing() {
    nested_ranges_on_two_threads(true, 1);
}

/// The same with every allocation attributed to its range (`memory: on`):
/// the table of blocks, the threads' stacks and the memory events exist
/// before the capture, so attributing allocates nothing either.
fn with_memory_attributed_the_measured_passes_allocate_nothing() {
    nested_ranges_on_two_threads_with(false, 1, true);
}

fn nested_ranges_on_two_threads(gpu: bool, batch_size: u32) {
    nested_ranges_on_two_threads_with(gpu, batch_size, false);
}

fn nested_ranges_on_two_threads_with(gpu: bool, batch_size: u32, memory: bool) {
    let counted = Arc::new(Mutex::new(None));
    let (iterations, records) = (50, 3u32);
    let expected = u64::from(iterations * records.div_ceil(batch_size));
    let mut plan = batched_plan(2, iterations, records, batch_size);
    plan.config.memory = if memory {
        profiling_core::driver::config::MemoryMode::On
    } else {
        profiling_core::driver::config::MemoryMode::Off
    };
    if gpu {
        let device = profiling_core::timing::FakeEvents::with_capacity(100_000);
        plan.events = Some(Arc::new(device));
    }
    let outcome = {
        let counted = counted.clone();
        run_target(&plan, move || Ok(TwoThreads::new(expected, counted))).unwrap()
    };
    let counts = counted
        .lock()
        .unwrap()
        .take()
        .expect("the last measured call ran");
    assert_eq!(
        counts,
        Some(Allocations {
            count: 0,
            net_bytes: 0
        })
    );
    // Both threads' ranges were recorded all the same, once per call.
    for name in ["main outer", "main inner", "worker outer", "worker inner"] {
        let range = outcome
            .timings
            .ranges
            .iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("{name} recorded"));
        assert_eq!(range.inclusive.count, expected, "{name}");
    }
    assert_eq!(outcome.capture.ranges.late_threads, 0);
    assert_eq!(outcome.capture.ranges.late_names, 0);
    assert_eq!(outcome.timings.sketch_note, None);
    match &outcome.timings.memory {
        // Nothing allocated anywhere: every figure is 0 in every call.
        Some(attributed) => {
            let call = attributed.per_call.expect("per call");
            assert_eq!((call.allocations.max, call.peak_bytes.max), (0, 0));
            let range = outcome.timings.ranges[0]
                .memory
                .as_ref()
                .expect("range memory");
            assert_eq!(range.allocations, 0);
        }
        None => assert!(!memory),
    }
    if gpu {
        let timings = outcome.timings.gpu.as_ref().expect("GPU timings");
        assert_eq!(timings.ranges_without_events, 0);
        assert_eq!(timings.runs.unwrap().count, expected);
        for range in &outcome.timings.ranges {
            assert_eq!(
                range.gpu.as_ref().map(|g| g.count),
                Some(expected),
                "{}",
                range.name
            );
        }
    } else {
        assert!(outcome.timings.gpu.is_none());
    }
}

fn threads_and_names_first_seen_in_the_capture_are_counted_and_said() {
    let counted = Arc::new(Mutex::new(None));
    // No warmup: nothing is registered before the capture.
    let plan = plan(0, 5, 1);
    let outcome = {
        let counted = counted.clone();
        run_target(&plan, move || Ok(TwoThreads::new(5, counted))).unwrap()
    };
    let log = &outcome.capture.ranges;
    assert_eq!(log.late_threads, 1, "the worker");
    assert_eq!(log.late_names, 4, "two names on each thread");
    let counts = counted.lock().unwrap().take().unwrap().unwrap();
    assert!(counts.count >= 5, "{counts:?}: the registrations allocated");
    assert_eq!(
        outcome.timings.sketch_note.as_deref(),
        Some(
            "1 thread(s) and 4 range name(s) were first seen inside the capture, not in warmup: each cost an allocation \
             (a thread also a lock) inside a measured pass; with warmup passes that open the same ranges on the same \
             threads, the measured passes allocate nothing"
        )
    );
    let worker = outcome
        .timings
        .ranges
        .iter()
        .find(|r| r.name == "worker inner")
        .unwrap();
    assert_eq!(worker.inclusive.count, 5, "still recorded");
}

/// Opens a range only while the capture records: its name is first seen
/// there, on a thread registered in warmup.
struct LateName;

impl ProfileTarget for LateName {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        let _always = profiling_range("always");
        if is_recording() {
            let _late = profiling_range("only measured");
        }
        Ok(())
    }
}

fn a_name_first_seen_in_the_capture_alone_is_said() {
    let outcome = run_target(&plan(1, 3, 1), || Ok(LateName)).unwrap();
    assert_eq!(outcome.capture.ranges.late_threads, 0);
    assert_eq!(outcome.capture.ranges.late_names, 1);
    assert!(outcome
        .timings
        .sketch_note
        .as_deref()
        .unwrap()
        .starts_with("0 thread(s) and 1 range name(s) were first seen inside the capture"));
}

/// Registration ends with the warmup: after a run, a range with a name no
/// run has seen costs no allocation.
fn after_a_run_new_range_names_allocate_nothing() {
    run_target(&plan(1, 1, 1), || Ok(LateName)).unwrap();
    let watch = watch_allocations();
    drop(profiling_range("a name no run has seen"));
    drop(profiling_range(c"another one"));
    assert_eq!(
        watch.finish(),
        Some(Allocations {
            count: 0,
            net_bytes: 0
        })
    );
}

/// Outside a run, a range on a thread that never opened one costs no
/// allocation: the recorder gives a thread its log only in a run.
fn outside_a_run_a_new_thread_opens_ranges_without_allocating() {
    drop(profiling_range(
        "the first NVTX call initializes the library",
    ));
    let counts = std::thread::spawn(|| {
        let watch = watch_allocations();
        drop(profiling_range("on a fresh thread"));
        watch.finish()
    })
    .join()
    .unwrap();
    assert_eq!(
        counts,
        Some(Allocations {
            count: 0,
            net_bytes: 0
        })
    );
}

fn main() {
    sequential::run(&[
        (
            "measured_passes_of_nested_ranges_on_two_threads_allocate_nothing",
            measured_passes_of_nested_ranges_on_two_threads_allocate_nothing,
        ),
        (
            "measured_passes_of_batches_allocate_nothing",
            measured_passes_of_batches_allocate_nothing,
        ),
        (
            "with_gpu_timing_the_measured_passes_allocate_nothing",
            with_gpu_timing_the_measured_passes_allocate_nothing,
        ),
        (
            "with_memory_attributed_the_measured_passes_allocate_nothing",
            with_memory_attributed_the_measured_passes_allocate_nothing,
        ),
        (
            "threads_and_names_first_seen_in_the_capture_are_counted_and_said",
            threads_and_names_first_seen_in_the_capture_are_counted_and_said,
        ),
        (
            "a_name_first_seen_in_the_capture_alone_is_said",
            a_name_first_seen_in_the_capture_alone_is_said,
        ),
        (
            "after_a_run_new_range_names_allocate_nothing",
            after_a_run_new_range_names_allocate_nothing,
        ),
        (
            "outside_a_run_a_new_thread_opens_ranges_without_allocating",
            outside_a_run_a_new_thread_opens_ranges_without_allocating,
        ),
    ]);
}
