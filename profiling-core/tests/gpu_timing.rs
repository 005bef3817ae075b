//! GPU time per range from device events, through the runner, on a fake
//! device whose stream advances only by the work targets queue on it
//! (`FakeEvents`): the pairing of events with ranges, the pool's sizing,
//! and the statistics, with exact expected values on any machine.

use std::sync::{Arc, Mutex};

use profiling_core::data;
use profiling_core::driver::config::{ConfigFile, Overrides};
use profiling_core::driver::runner::{run_target, Records, RunOutcome, RunPlan};
use profiling_core::prelude::*;
use profiling_core::timing::{EventBackend, FakeEvents, RangeTimings};

/// Ranges and events are recorded process-wide: one run at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn run_with<T: ProfileTarget>(
    yaml: &str,
    events: Option<Arc<FakeEvents>>,
    target: T,
) -> RunOutcome {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let config = ConfigFile::parse(yaml, None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    let source = data::build(&config.data_source.name, &config.data_source.parameters).unwrap();
    let mut plan = RunPlan::new(config, Records::Eager(source.read_all().unwrap()));
    plan.events = events.map(|e| e as Arc<dyn EventBackend>);
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

/// Queues known work inside nested ranges: `outer` holds 100 ns, then
/// `inner` (300 ns), then 50 ns; `double` holds twice `single`.
struct Nested {
    device: Arc<FakeEvents>,
}

impl ProfileTarget for Nested {
    type Prepared = ();
    type Output = ();

    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }

    fn run(&mut self, _input: &()) -> anyhow::Result<()> {
        {
            let _outer = profiling_range("outer");
            self.device.queue(100);
            {
                let _inner = profiling_range("inner");
                self.device.queue(300);
            }
            self.device.queue(50);
        }
        {
            let _single = profiling_range("single");
            self.device.queue(1_000);
        }
        {
            let _double = profiling_range("double");
            self.device.queue(2_000);
        }
        // Work outside every range counts for the call and the pass.
        self.device.queue(7);
        Ok(())
    }
}

const DUMMY: &str = "target: {name: t}\ndata_source: {name: dummy, record_count: 3}\n";

#[test]
fn nested_ranges_get_their_gpu_time_inclusive_and_exclusive() {
    let device = Arc::new(FakeEvents::new());
    let yaml = format!("{DUMMY}warmup: 2\niterations: 4\n");
    let outcome = run_with(&yaml, Some(Arc::clone(&device)), Nested { device });

    let outer = range(&outcome, "outer")
        .gpu
        .as_ref()
        .expect("outer has GPU time");
    assert_eq!(outer.count, 12, "3 records x 4 passes");
    assert_eq!((outer.inclusive.min_ns, outer.inclusive.max_ns), (450, 450));
    assert_eq!((outer.exclusive.min_ns, outer.exclusive.max_ns), (150, 150));
    let inner = range(&outcome, "inner").gpu.as_ref().unwrap();
    assert_eq!((inner.inclusive.p50_ns, inner.exclusive.p50_ns), (300, 300));
    let single = range(&outcome, "single").gpu.as_ref().unwrap();
    let double = range(&outcome, "double").gpu.as_ref().unwrap();
    assert_eq!(double.inclusive.p50_ns, 2 * single.inclusive.p50_ns);
    assert_eq!(single.inclusive.total_ns, 12 * 1_000);

    // By path too: `inner` is `outer/inner`.
    let path = |path: &str| {
        let found = outcome.timings.range_tree.iter().find(|p| p.path == path);
        found
            .and_then(|p| p.gpu.clone())
            .unwrap_or_else(|| panic!("no GPU time for {path}"))
    };
    assert_eq!(
        (
            path("outer").inclusive.p50_ns,
            path("outer").exclusive.p50_ns
        ),
        (450, 150)
    );
    assert_eq!(
        (
            path("outer/inner").count,
            path("outer/inner").inclusive.p50_ns
        ),
        (12, 300)
    );

    let gpu = outcome.timings.gpu.as_ref().expect("timings.gpu");
    let runs = gpu.runs.expect("per-call GPU time");
    assert_eq!((runs.count, runs.min_ns, runs.max_ns), (12, 3_457, 3_457));
    let passes = gpu.iterations.expect("per-pass GPU time");
    assert_eq!((passes.count, passes.p50_ns), (4, 3 * 3_457));
    assert_eq!(gpu.ranges_without_events, 0);
    assert_eq!(gpu.stream, "fake stream");
    // 4 ranges x 2 events x 12 calls, 4 boundaries per pass, the origin.
    assert_eq!(gpu.events_recorded, 4 * 2 * 12 + 4 * 4 + 1);
}

#[test]
fn host_times_stay_and_no_gpu_figures_without_a_backend() {
    let device = Arc::new(FakeEvents::new());
    let yaml = format!("{DUMMY}warmup: 1\niterations: 2\n");
    let outcome = run_with(
        &yaml,
        None,
        Nested {
            device: Arc::clone(&device),
        },
    );
    assert!(outcome.timings.gpu.is_none());
    assert!(outcome.timings.ranges.iter().all(|r| r.gpu.is_none()));
    assert_eq!(range(&outcome, "outer").count, 6);
    let (created, records, _, _) = device.counts();
    assert_eq!((created, records), (0, 0), "no event without GPU timing");
    // No GPU timing anywhere; the machine's `gpus` (NVML's state of the
    // devices, or why there is none) is not a timing.
    let manifest_like = serde_yaml::to_string(&outcome.timings).unwrap();
    let timing_keys: Vec<&str> = manifest_like
        .lines()
        .map(|line| line.trim_start().trim_start_matches("- "))
        .filter(|line| line.starts_with("gpu") && !line.starts_with("gpus:"))
        .collect();
    assert!(timing_keys.is_empty(), "{manifest_like}");
}

/// Opens a range on another thread inside each call.
struct OtherThread {
    device: Arc<FakeEvents>,
}

impl ProfileTarget for OtherThread {
    type Prepared = ();
    type Output = ();

    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }

    fn run(&mut self, _input: &()) -> anyhow::Result<()> {
        let _call = profiling_range("call");
        self.device.queue(10);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let _worker = profiling_range("worker");
                self.device.queue(700);
            });
        });
        self.device.queue(5);
        Ok(())
    }
}

#[test]
fn ranges_on_other_threads_pair_on_their_own_thread() {
    let device = Arc::new(FakeEvents::new());
    let yaml = format!("{DUMMY}warmup: 1\niterations: 2\n");
    let outcome = run_with(
        &yaml,
        Some(Arc::clone(&device)),
        OtherThread {
            device: Arc::clone(&device),
        },
    );
    let worker = range(&outcome, "worker")
        .gpu
        .as_ref()
        .expect("worker GPU time");
    assert_eq!(worker.count, 6);
    assert_eq!(
        (worker.inclusive.min_ns, worker.inclusive.max_ns),
        (700, 700)
    );
    // The worker's range is on another thread: it is not a child of
    // `call` on the host, so `call`'s exclusive GPU time keeps it.
    let call = range(&outcome, "call").gpu.as_ref().unwrap();
    assert_eq!((call.inclusive.p50_ns, call.exclusive.p50_ns), (715, 715));
    // Every worker thread was bound before it recorded.
    let (_, _, _, bound) = device.counts();
    assert!(
        bound >= 1 + 3 + 6,
        "main, warmup workers, measured workers: {bound}"
    );
}

/// Keeps a range open from one call to the next: opened in one pass, it
/// closes in the next.
struct KeepsGuard {
    device: Arc<FakeEvents>,
    open: Option<RangeGuard>,
}

impl ProfileTarget for KeepsGuard {
    type Prepared = ();
    type Output = ();

    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }

    fn run(&mut self, _input: &()) -> anyhow::Result<()> {
        self.open = None;
        self.device.queue(40);
        self.open = Some(profiling_range("kept"));
        let _each = profiling_range("each");
        self.device.queue(60);
        Ok(())
    }
}

#[test]
fn a_range_kept_across_passes_gets_no_gpu_pair() {
    let device = Arc::new(FakeEvents::new());
    // One record: every `kept` range opens in one pass and closes in the next.
    let yaml = "target: {name: t}\ndata_source: {name: dummy, record_count: 1}\nwarmup: 1\niterations: 3\n";
    let outcome = run_with(
        yaml,
        Some(Arc::clone(&device)),
        KeepsGuard { device, open: None },
    );
    let kept = range(&outcome, "kept");
    assert!(kept.count >= 2, "the host still times it: {}", kept.count);
    assert!(
        kept.gpu.is_none(),
        "no GPU pair spans two passes: {:?}",
        kept.gpu
    );
    let each = range(&outcome, "each").gpu.as_ref().unwrap();
    assert_eq!((each.count, each.inclusive.p50_ns), (3, 60));
    let gpu = outcome.timings.gpu.as_ref().unwrap();
    assert_eq!(gpu.ranges_without_events, kept.count);
}

/// Opens `per_call` ranges, each around 1 ns of work.
struct Many {
    device: Arc<FakeEvents>,
    per_call: usize,
}

impl ProfileTarget for Many {
    type Prepared = ();
    type Output = ();

    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }

    fn run(&mut self, _input: &()) -> anyhow::Result<()> {
        for _ in 0..self.per_call {
            let _r = profiling_range("r");
            self.device.queue(1);
        }
        Ok(())
    }
}

#[test]
fn the_pool_is_sized_from_the_last_warmup_pass_and_nothing_is_missed() {
    let device = Arc::new(FakeEvents::new());
    let yaml = "target: {name: t}\ndata_source: {name: dummy, record_count: 2}\nwarmup: 2\niterations: 5\n";
    let outcome = run_with(
        yaml,
        Some(Arc::clone(&device)),
        Many {
            device: Arc::clone(&device),
            per_call: 300,
        },
    );
    let gpu = outcome.timings.gpu.as_ref().unwrap();
    assert_eq!(gpu.ranges_without_events, 0);
    let per_pass = 2 * 300 * 2 + 3;
    assert_eq!(gpu.events_recorded, 5 * per_pass + 1);
    let (created, ..) = device.counts();
    // The pool starts two warmup passes ahead and each top-up keeps it two
    // passes (and one event) ahead of what was used, never more: the one
    // event that measured the record cost, the origin and five passes
    // used, two passes and one left.
    assert_eq!(created, 1 + (1 + 5 * per_pass) + (2 * per_pass + 1));
    let r = range(&outcome, "r").gpu.as_ref().unwrap();
    assert_eq!((r.count, r.inclusive.max_ns), (5 * 2 * 300, 1));
}

#[test]
fn without_warmup_a_pass_larger_than_the_default_pool_misses_then_the_pool_grows() {
    let device = Arc::new(FakeEvents::new());
    // No warmup to size from: the default pool (2049 events) is short of
    // the first pass (2 x 1500 + 2); later passes find it grown.
    let yaml = "target: {name: t}\ndata_source: {name: dummy, record_count: 1}\nwarmup: 0\niterations: 3\n";
    let outcome = run_with(
        yaml,
        Some(Arc::clone(&device)),
        Many {
            device: Arc::clone(&device),
            per_call: 1500,
        },
    );
    let gpu = outcome.timings.gpu.as_ref().unwrap();
    let missed = gpu.ranges_without_events;
    assert!(
        missed > 0 && missed < 1500,
        "only the first pass misses: {missed}"
    );
    let r = range(&outcome, "r");
    assert_eq!(r.count, 4500);
    assert_eq!(r.gpu.as_ref().unwrap().count, 4500 - missed);
    // The first pass's closing boundary found the pool spent too; the
    // later passes are timed whole.
    assert_eq!(gpu.runs.unwrap().count, 2);
    assert_eq!(gpu.iterations.unwrap().count, 2);
    assert_eq!(r.gpu.as_ref().unwrap().inclusive.max_ns, 1);
}

#[test]
fn a_refusing_driver_costs_the_gpu_figures_of_some_ranges_not_the_run() {
    let device = Arc::new(FakeEvents::new());
    let yaml = format!("{DUMMY}warmup: 1\niterations: 2\n");
    struct FailsLater {
        inner: Nested,
        calls: u32,
    }
    impl ProfileTarget for FailsLater {
        type Prepared = ();
        type Output = ();
        fn prepare(&mut self, _r: &DataRecord, _d: Device) -> anyhow::Result<()> {
            Ok(())
        }
        fn run(&mut self, input: &()) -> anyhow::Result<()> {
            self.calls += 1;
            // Warmup (3 calls) and one measured call record; then the
            // driver refuses every record.
            if self.calls == 4 {
                self.inner.device.fail_after(0);
            }
            self.inner.run(input)
        }
    }
    let outcome = run_with(
        &yaml,
        Some(Arc::clone(&device)),
        FailsLater {
            inner: Nested { device },
            calls: 0,
        },
    );
    assert_eq!(outcome.completed_iterations, 2);
    assert_eq!(range(&outcome, "outer").count, 6, "host timings are whole");
    let gpu = outcome.timings.gpu.as_ref().unwrap();
    assert_eq!(gpu.ranges_without_events, 6 * 4, "no range had both events");
}

#[test]
fn the_trace_has_a_gpu_track_beside_the_host_threads() {
    let device = Arc::new(FakeEvents::new());
    let yaml = format!("{DUMMY}warmup: 1\niterations: 2\n");
    let outcome = run_with(&yaml, Some(Arc::clone(&device)), Nested { device });
    let (document, _, truncated) =
        profiling_core::driver::trace::trace_document(&outcome.capture, "profile-target", "t");
    assert!(!truncated);
    let events = document["traceEvents"].as_array().unwrap();
    let gpu: Vec<&serde_json::Value> = events.iter().filter(|e| e["cat"] == "gpu").collect();
    assert_eq!(gpu.len(), 4 * 6, "every range of 6 calls");
    let tid = gpu[0]["tid"].as_u64().unwrap();
    assert!(tid >= profiling_core::driver::trace::GPU_TRACK_BASE);
    assert!(gpu.iter().all(|e| e["tid"].as_u64() == Some(tid)));
    let track = events
        .iter()
        .find(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["tid"].as_u64() == Some(tid))
        .expect("the GPU track is named");
    assert_eq!(track["args"]["name"], "GPU cpu (ranges of runner)");
    // On the device's timeline: the first call's `outer` starts where the
    // stream was when the capture opened, then 3457 ns per call.
    let outer: Vec<(f64, f64)> = gpu
        .iter()
        .filter(|e| e["name"] == "outer")
        .map(|e| (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap()))
        .collect();
    assert_eq!(outer.len(), 6);
    for (call, (ts, dur)) in outer.iter().enumerate() {
        assert!(
            (ts - call as f64 * 3.457).abs() < 1e-9,
            "call {call}: ts {ts}"
        );
        assert!((dur - 0.45).abs() < 1e-9, "dur {dur}");
    }
    // The measured passes too, on the same track: 3 calls of 3457 ns each.
    let passes: Vec<(f64, f64)> = events
        .iter()
        .filter(|e| e["cat"] == "gpu pass")
        .map(|e| {
            assert_eq!(e["tid"].as_u64(), Some(tid));
            (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap())
        })
        .collect();
    assert_eq!(passes.len(), 2);
    for (pass, (ts, dur)) in passes.iter().enumerate() {
        assert!(
            (ts - pass as f64 * 10.371).abs() < 1e-9,
            "pass {pass}: ts {ts}"
        );
        assert!((dur - 10.371).abs() < 1e-9, "dur {dur}");
    }
    // The host's range tree is read from the host ranges only.
    let tree = profiling_core::driver::trace::range_tree_of(&document).unwrap();
    let outer_path = tree.paths.iter().find(|p| p.path == "outer").unwrap();
    assert_eq!(outer_path.count, 6);
}

/// The CUDA backend loads the driver at run time: on a machine without
/// one it says so instead of failing to start (a GPU machine gets events).
#[cfg(feature = "tch")]
#[test]
fn the_cuda_backend_says_when_there_is_no_driver() {
    match profiling_core::backend::CudaEvents::new(0) {
        Ok(events) => {
            assert!(events
                .stream()
                .starts_with("legacy default stream of cuda:0"));
            let event = events.create().unwrap();
            assert!(events.record(event));
            events.synchronize(event).unwrap();
            assert_eq!(events.elapsed_ns(event, event).unwrap(), 0.0);
            events.destroy(event);
        }
        Err(error) => {
            let message = format!("{error:#}");
            assert!(
                message.contains("libcuda.so")
                    || message.contains("cuInit")
                    || message.contains("no CUDA device"),
                "{message}"
            );
        }
    }
}
