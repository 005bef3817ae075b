//! The timings come back right: targets that busy-wait known durations
//! inside nested ranges, measured through the runner.
//!
//! Tolerances hold on a noisy two-core machine: a busy wait never ends
//! early, so lower bounds are tight; upper bounds leave room for
//! preemption, and medians are used where one slow call could mislead.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use profiling_core::data;
use profiling_core::driver::config::{ConfigFile, Overrides};
use profiling_core::driver::runner::{run_target, Records, RunOutcome, RunPlan};
use profiling_core::prelude::*;
use profiling_core::stats::DurationStats;
use profiling_core::timing::RangeTimings;

/// Ranges are recorded process-wide while a capture is open: one scenario
/// at a time, so no test's ranges land in another's capture.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn spin(duration: Duration) {
    let until = Instant::now() + duration;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

fn run<T: ProfileTarget>(yaml: &str, target: T) -> RunOutcome {
    let config = ConfigFile::parse(yaml, None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    let source = data::build(&config.data_source.name, &config.data_source.parameters).unwrap();
    let plan = RunPlan::new(config, Records::Eager(source.read_all().unwrap()));
    run_target(&plan, move || Ok(target)).unwrap()
}

fn range<'a>(outcome: &'a RunOutcome, name: &str) -> &'a RangeTimings {
    outcome
        .timings
        .ranges
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no range {name} in {:?}", outcome.timings.ranges))
}

const MICROS: u64 = 1_000;

/// The busy waits are the floor: every sample lasts at least its nominal time.
fn assert_at_least(stats: &DurationStats, nominal_us: u64, what: &str) {
    let nominal = nominal_us * MICROS * 98 / 100;
    assert!(
        stats.min_ns >= nominal,
        "{what}: min {} ns < {nominal} ns",
        stats.min_ns
    );
    assert!(
        stats.p50_ns >= nominal,
        "{what}: median {} ns < {nominal} ns",
        stats.p50_ns
    );
}

/// How far the recorder's median may fall below the target's own
/// stopwatch around the same code: the guard's NVTX calls and clock reads.
/// Medians keep a preemption in that gap from mattering.
const STOPWATCH_SLACK_NS: u64 = 50 * MICROS;

fn median(values: &mut [u64]) -> u64 {
    values.sort_unstable();
    values[(values.len() - 1) / 2]
}

/// The recorded median matches the target's stopwatch median: never above
/// it (the recorded window lies inside the stopwatch's), and at most the
/// slack below. Wall-clock noise moves both alike, so this holds on a busy
/// machine.
fn assert_matches_stopwatch(recorded: &DurationStats, stopwatch: &mut [u64], what: &str) {
    let measured = median(stopwatch);
    assert!(
        recorded.p50_ns <= measured,
        "{what}: recorded median {} ns > stopwatch {measured} ns",
        recorded.p50_ns
    );
    assert!(
        measured - recorded.p50_ns <= STOPWATCH_SLACK_NS,
        "{what}: recorded median {} ns, stopwatch {measured} ns",
        recorded.p50_ns
    );
}

/// `outer` (300 µs, then `inner` 500 µs, then 200 µs): 1 ms a call. Keeps
/// its own stopwatch readings of both ranges (outer, inner, outer - inner).
#[derive(Default)]
struct Nested {
    stopwatch: std::rc::Rc<std::cell::RefCell<Vec<(u64, u64)>>>,
}

impl ProfileTarget for Nested {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        let outer_started = Instant::now();
        let inner_ns;
        {
            let _outer = profiling_range("outer");
            spin(Duration::from_micros(300));
            let inner_started = Instant::now();
            {
                let _inner = profiling_range("inner");
                spin(Duration::from_micros(500));
            }
            inner_ns = inner_started.elapsed().as_nanos() as u64;
            spin(Duration::from_micros(200));
        }
        let outer_ns = outer_started.elapsed().as_nanos() as u64;
        self.stopwatch.borrow_mut().push((outer_ns, inner_ns));
        Ok(())
    }
}

const TWO_RECORDS: &str =
    "target: {name: t}\ndata_source: {name: dummy, record_count: 2, include_image: false}\n";

#[test]
fn nested_ranges_have_the_inclusive_and_exclusive_times_spent() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let target = Nested::default();
    let stopwatch = target.stopwatch.clone();
    stopwatch.borrow_mut().reserve(64);
    let outcome = run(&format!("{TWO_RECORDS}warmup: 1\niterations: 15"), target);
    let timings = &outcome.timings;
    // The warmup pass's two calls come first; the measured ones follow.
    let measured: Vec<(u64, u64)> = stopwatch.borrow()[2..].to_vec();
    assert_eq!(measured.len(), 30);

    let iterations = timings.iterations.as_ref().unwrap();
    assert_eq!(iterations.count, 15);
    assert_at_least(iterations, 2_000, "a pass of two calls");
    let runs = timings.runs.as_ref().unwrap();
    assert_eq!(runs.count, 30);
    assert_at_least(runs, 1_000, "a call");

    let names: Vec<&str> = timings.ranges.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["outer", "inner"], "largest inclusive total first");
    let outer = range(&outcome, "outer");
    let inner = range(&outcome, "inner");
    assert_eq!(
        (outer.count, inner.count),
        (30, 30),
        "measured passes only, no warmup"
    );
    assert_at_least(&outer.inclusive, 1_000, "outer inclusive");
    assert_at_least(&outer.exclusive, 500, "outer exclusive");
    assert_at_least(&inner.inclusive, 500, "inner inclusive");
    assert_at_least(&inner.exclusive, 500, "inner exclusive");

    let mut outer_watch: Vec<u64> = measured.iter().map(|(o, _)| *o).collect();
    let mut inner_watch: Vec<u64> = measured.iter().map(|(_, i)| *i).collect();
    assert_matches_stopwatch(&outer.inclusive, &mut outer_watch, "outer inclusive");
    assert_matches_stopwatch(&inner.inclusive, &mut inner_watch, "inner inclusive");
    let mut exclusive_watch: Vec<u64> = measured.iter().map(|(o, i)| o - i).collect();
    let exclusive_watch = median(&mut exclusive_watch);
    assert!(
        outer.exclusive.p50_ns.abs_diff(exclusive_watch) <= STOPWATCH_SLACK_NS,
        "outer exclusive: recorded median {} ns, stopwatch {exclusive_watch} ns",
        outer.exclusive.p50_ns
    );

    // Exclusive plus children is inclusive, range by range.
    assert_eq!(
        outer.exclusive.total_ns + inner.inclusive.total_ns,
        outer.inclusive.total_ns
    );
    assert_eq!(inner.inclusive.total_ns, inner.exclusive.total_ns);
    // Ranges lie within calls, calls within passes, passes within the capture.
    assert!(outer.inclusive.total_ns <= runs.total_ns);
    assert!(runs.total_ns <= iterations.total_ns);
    assert!(iterations.total_ns <= timings.capture_ns);
    assert!(timings.sketch_note.is_none());
    let timer = timings.timer.as_ref().unwrap();
    assert_timer_is_this_clock(timer);
}

/// The timer report against the clock measured here, independently: the
/// source is the clock `now_ns` reads; the cost of a reading within a
/// factor of four of what the bare clock costs back to back (`rdtsc` for
/// the time-stamp counter, `Instant::now()` otherwise: the report reads
/// through `now_ns`, a little more work), and a resolution no finer than
/// the clock's and no coarser than about a reading.
fn assert_timer_is_this_clock(timer: &profiling_core::timing::TimerInfo) {
    use profiling_core::timing::clock;
    assert_eq!(timer.source, clock::describe());
    let counter = clock::is_counter();
    if counter {
        assert!(timer.source.starts_with("time-stamp counter"), "{timer:?}");
    } else {
        assert!(
            timer
                .source
                .starts_with("std::time::Instant (clock_gettime CLOCK_MONOTONIC)"),
            "{timer:?}"
        );
    }
    // The least of a few batches: the cost without interruptions.
    let independent = (0..5)
        .map(|_| {
            const READS: u32 = 20_000;
            let started = std::time::Instant::now();
            for _ in 0..READS {
                if counter {
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: rdtsc has no preconditions on x86_64.
                    std::hint::black_box(unsafe { std::arch::x86_64::_rdtsc() });
                } else {
                    std::hint::black_box(std::time::Instant::now());
                }
            }
            started.elapsed().as_nanos() as f64 / f64::from(READS)
        })
        .fold(f64::INFINITY, f64::min);
    // Within a factor of the cost measured here: a wrong clock or a wrong
    // unit is off by far more, while a loaded machine (the calibration
    // sharing a core with another process) can inflate either by a few
    // times.
    assert!(
        timer.overhead_ns >= independent / 4.0 && timer.overhead_ns <= independent * 20.0,
        "{timer:?}: one bare reading costs {independent:.1} ns here"
    );
    if counter {
        // Nanoseconds from a counter of a GHz or more: a step of 1 ns or
        // more, at most about a reading.
        assert!(timer.resolution_ns >= 1, "{timer:?}");
        assert!(
            timer.resolution_ns as f64 <= timer.overhead_ns * 1.5 + 1.0,
            "{timer:?}: the smallest step is at most about one reading"
        );
        return;
    }
    let mut kernel = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_getres writes the timespec it is given.
    assert_eq!(
        unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut kernel) },
        0
    );
    let kernel_ns = kernel.tv_sec as u64 * 1_000_000_000 + kernel.tv_nsec as u64;
    assert!(timer.resolution_ns >= kernel_ns.max(1), "{timer:?}");
    // The smallest step between two back-to-back readings, measured here.
    let origin = std::time::Instant::now();
    let mut previous = origin.elapsed().as_nanos() as u64;
    let mut step = u64::MAX;
    for _ in 0..20_000 {
        let now = origin.elapsed().as_nanos() as u64;
        if now > previous {
            step = step.min(now - previous);
        }
        previous = now;
    }
    assert!(
        timer.resolution_ns * 4 >= step && timer.resolution_ns <= step * 4,
        "{timer:?}: the smallest step here is {step} ns"
    );
    assert!(
        timer.resolution_ns as f64 <= (timer.overhead_ns * 1.5).max(kernel_ns as f64) + 1.0,
        "{timer:?}: the smallest step is at most about one reading"
    );
}

/// Opens `worker` (400 µs) on two threads of its own in every call.
struct Threads;

impl ProfileTarget for Threads {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        let _call = profiling_range("fan out");
        std::thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    let _range = profiling_range("worker");
                    spin(Duration::from_micros(400));
                });
            }
        });
        Ok(())
    }
}

#[test]
fn ranges_on_other_threads_are_counted_apart() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let outcome = run("target: {name: t}\ndata_source: {name: dummy, include_image: false}\nwarmup: 1\niterations: 10", Threads);
    let worker = range(&outcome, "worker");
    let fan_out = range(&outcome, "fan out");
    assert_eq!((worker.count, fan_out.count), (20, 10));
    assert_at_least(&worker.inclusive, 400, "worker");
    // Ranges on other threads are not children of the caller's range.
    assert_eq!(fan_out.exclusive.total_ns, fan_out.inclusive.total_ns);
    assert!(fan_out.inclusive.p50_ns >= 400 * MICROS);
    let threads: Vec<u32> = outcome
        .capture
        .ranges
        .threads
        .iter()
        .map(|t| t.thread)
        .collect();
    assert!(
        threads.len() >= 3,
        "the runner's thread and the workers: {threads:?}"
    );
}

#[test]
fn the_trace_holds_every_range_and_pass_of_the_manifest() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let outcome = run(
        &format!("{TWO_RECORDS}warmup: 0\niterations: 6"),
        Nested::default(),
    );
    let (document, written, truncated) =
        profiling_core::driver::trace::trace_document(&outcome.capture, "profile-target", "test");
    assert!(!truncated);
    let events = document["traceEvents"].as_array().unwrap();
    let complete: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(complete.len() as u64, written);
    let count = |cat: &str, name: &str| {
        complete
            .iter()
            .filter(|e| e["cat"] == cat && e["name"] == name)
            .count() as u64
    };
    assert_eq!(count("capture", "profile-target"), 1);
    for range in &outcome.timings.ranges {
        assert_eq!(count("range", &range.name), range.count, "{}", range.name);
    }
    let passes: Vec<&&serde_json::Value> = complete.iter().filter(|e| e["cat"] == "pass").collect();
    assert_eq!(
        passes.len() as u64,
        outcome.timings.iterations.as_ref().unwrap().count
    );
    for (index, pass) in passes.iter().enumerate() {
        assert_eq!(pass["name"], format!("iteration {index}"));
        assert_eq!(pass["args"]["pass"], index);
    }
    // Nesting by time: every inner range lies within an outer one on its thread.
    let span = |e: &serde_json::Value| {
        (
            e["ts"].as_f64().unwrap(),
            e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap(),
        )
    };
    let outers: Vec<(f64, f64)> = complete
        .iter()
        .filter(|e| e["name"] == "outer")
        .map(|e| span(e))
        .collect();
    for inner in complete.iter().filter(|e| e["name"] == "inner") {
        let (start, end) = span(inner);
        assert!(
            outers.iter().any(|(s, e)| *s <= start && end <= *e + 0.001),
            "inner at {start} is inside no outer"
        );
    }
}

/// Opens one short range per call.
struct Tick;

impl ProfileTarget for Tick {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        let _range = profiling_range("tick");
        Ok(())
    }
}

#[test]
fn long_runs_keep_exact_counts_past_the_kept_samples() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let iterations = profiling_core::driver::runner::SAMPLES_KEPT as u64 + 50_000;
    let outcome = run(
        &format!("target: {{name: t}}\ndata_source: {{name: dummy, include_image: false}}\nwarmup: 0\niterations: {iterations}"),
        Tick,
    );
    let timings = &outcome.timings;
    assert_eq!(timings.iterations.as_ref().unwrap().count, iterations);
    assert_eq!(timings.runs.as_ref().unwrap().count, iterations);
    let tick = range(&outcome, "tick");
    assert_eq!(tick.count, iterations);
    let note = timings.sketch_note.as_deref().unwrap();
    assert!(
        note.starts_with("the quantiles of iterations, runs, ranges come from a histogram"),
        "{note}"
    );
    let kept: usize = outcome
        .capture
        .ranges
        .threads
        .iter()
        .map(|t| t.events.len())
        .sum();
    assert_eq!(kept, profiling_core::timing::recorder::EVENTS_PER_THREAD);
    let overflowed: u64 = outcome
        .capture
        .ranges
        .threads
        .iter()
        .map(|t| t.overflowed())
        .sum();
    assert_eq!(overflowed, iterations - kept as u64);
    assert_eq!(
        outcome.capture.passes.len(),
        profiling_core::driver::runner::PASSES_KEPT
    );
    let stats = timings.iterations.as_ref().unwrap();
    assert!(
        stats.min_ns <= stats.p50_ns
            && stats.p50_ns <= stats.p99_ns
            && stats.p99_ns <= stats.max_ns
    );
}

/// A name buffer reused in place for another name (same address, same
/// length) is recorded under the new name: the recorder's name cache keys
/// on the address but checks the text.
#[test]
fn a_name_buffer_reused_in_place_records_the_new_name() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut name = String::from("alpha");
    let capture = profiling_core::timing::Capture::begin();
    drop(profiling_range(name.as_str()));
    let address = name.as_ptr();
    name.replace_range(.., "gamma");
    assert_eq!(name.as_ptr(), address, "the same buffer");
    drop(profiling_range(name.as_str()));
    drop(profiling_range(name.as_str()));
    let log = capture.end();
    let thread = log
        .threads
        .iter()
        .find(|t| t.events.len() == 3)
        .expect("this thread's three ranges");
    let recorded: Vec<&str> = thread
        .events
        .iter()
        .map(|e| thread.names[e.name as usize].as_str())
        .collect();
    assert_eq!(recorded, ["alpha", "gamma", "gamma"]);
}

/// A capture dropped without being ended (a panic unwinding through the
/// measured loop) stops recording all the same.
#[test]
fn a_capture_dropped_unended_stops_recording() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let capture = profiling_core::timing::Capture::begin();
    assert!(profiling_core::timing::recorder::is_recording());
    drop(capture);
    assert!(!profiling_core::timing::recorder::is_recording());
    // And the next capture can begin.
    drop(profiling_core::timing::Capture::begin().end());
}

/// Spins for its duration: all of it on the CPU.
struct Spinning(Duration);

impl ProfileTarget for Spinning {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        spin(self.0);
        Ok(())
    }
}

#[test]
fn the_machine_is_on_record_with_the_threads_cpu_time_per_pass() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let one_record =
        "target: {name: t}\ndata_source: {name: dummy, record_count: 1, include_image: false}\n";
    // Passes of 200 µs: the CPU time of every one is read.
    let long = run(
        &format!("{one_record}warmup: 1\niterations: 20\n"),
        Spinning(Duration::from_micros(200)),
    );
    let machine = long.timings.machine.as_ref().unwrap();
    let cpu = machine.pass_cpu.as_ref().unwrap();
    assert_eq!(cpu.count, 20);
    // Spinning is CPU time: about the pass (its readings sit just outside
    // the pass's window, so a few microseconds more), and on a busy
    // machine some less.
    let pass = long.timings.iterations.unwrap().p50_ns;
    assert!(cpu.p50_ns <= pass + 50 * MICROS, "{cpu:?} against {pass}");
    assert!(cpu.max_ns >= 200 * MICROS, "{cpu:?}");
    let off = machine.off_cpu.unwrap();
    assert!((0.0..1.0).contains(&off), "{off}");
    assert!(machine.load_average_start.is_some() && machine.others_busy.is_some());
    // Empty passes: the readings (two system calls) would cost more than
    // the pass; only every k-th pass reads, the first always.
    let short = run(
        &format!("{one_record}warmup: 1\niterations: 2000\n"),
        Spinning(Duration::ZERO),
    );
    let count = short.timings.machine.unwrap().pass_cpu.unwrap().count;
    assert!(
        (1..200).contains(&count),
        "{count} of 2000 passes read their CPU time"
    );
}

/// Waits its time, off the CPU.
struct Sleeping(Duration);

impl ProfileTarget for Sleeping {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        std::thread::sleep(self.0);
        Ok(())
    }
}

/// The machine-speed canary (about 120 ms for its two readings) is read
/// around the capture of a run its warmup says will last 2 s or more, and
/// not around a short one, whose manifest says why.
#[test]
fn the_canary_is_read_around_long_runs_only_and_a_short_one_says_why() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let one_record =
        "target: {name: t}\ndata_source: {name: dummy, record_count: 1, include_image: false}\n";
    let short = run(
        &format!("{one_record}warmup: 1\niterations: 3\n"),
        Spinning(Duration::from_micros(100)),
    );
    let machine = short.timings.machine.unwrap();
    assert_eq!(machine.canary, None);
    let note = machine.canary_note.unwrap();
    assert!(
        note.starts_with("not read: the warmup and capture were expected to take 0 ms"),
        "{note}"
    );
    // No warmup: nothing to tell the capture's length by.
    let blind = run(
        &format!("{one_record}warmup: 0\niterations: 1\n"),
        Spinning(Duration::ZERO),
    );
    let note = blind.timings.machine.unwrap().canary_note.unwrap();
    assert!(note.contains("without a warmup pass"), "{note}");
    // Sleeping never ends early: two warmup passes of 700 ms, one
    // measured pass to come, at least 2.1 s.
    let long = run(
        &format!("{one_record}warmup: 2\niterations: 1\n"),
        Sleeping(Duration::from_millis(700)),
    );
    let machine = long.timings.machine.unwrap();
    assert_eq!(machine.canary_note, None);
    let canary = machine.canary.unwrap();
    assert!(
        canary.before.memory_ns > 0 && canary.after.compute_ns > 0,
        "{canary:?}"
    );
    assert!(canary.between.is_empty());
}

/// `measurement_time` sizes the measured passes at the warmup's pace:
/// the time asked over the median warmup pass, rounded up, and the run
/// holds exactly those passes.
#[test]
fn measurement_time_sizes_the_passes_at_the_warmups_pace() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Sleeping never ends early: a pass of one record is at least 4 ms,
    // so 40 ms holds at most 10 of them.
    let outcome = run(
        "target: {name: t}\ndata_source: {name: dummy, record_count: 1, include_image: false}\nwarmup: 3\nmeasurement_time: 40ms\n",
        Sleeping(Duration::from_millis(4)),
    );
    let sized = outcome.measurement_time.expect("sized by time");
    assert_eq!(sized.asked_ns, 40_000_000);
    assert!(sized.warmup_pass_ns >= 4_000_000, "{sized:?}");
    assert_eq!(
        u64::from(sized.passes),
        sized.asked_ns.div_ceil(sized.warmup_pass_ns),
        "{sized:?}"
    );
    assert!((1..=10).contains(&sized.passes), "{sized:?}");
    assert_eq!(sized.capped, None);
    assert_eq!(outcome.completed_iterations, sized.passes);
    assert_eq!(
        outcome.timings.iterations.map(|passes| passes.count),
        Some(u64::from(sized.passes))
    );
    // Counted passes are not sized.
    let counted = run(
        "target: {name: t}\ndata_source: {name: dummy, record_count: 1, include_image: false}\nwarmup: 1\niterations: 2\n",
        Sleeping(Duration::from_millis(1)),
    );
    assert_eq!(counted.measurement_time, None);
    assert_eq!(counted.completed_iterations, 2);
}
