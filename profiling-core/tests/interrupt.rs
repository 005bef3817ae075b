//! A signal stops the run after the call in progress and keeps what
//! completed. The signal flag is process-wide: the tests take turns.

use profiling_core::data;
use profiling_core::driver::config::{ConfigFile, Overrides};
use profiling_core::driver::runner::{run_target, Records, RunPlan, Validation};
use profiling_core::prelude::*;

/// Raises SIGINT (as the handler would record it) in its fifth run call.
#[derive(Default)]
struct StopsItself {
    runs: u32,
}

impl ProfileTarget for StopsItself {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        self.runs += 1;
        let _range = profiling_range("work");
        if self.runs == 5 {
            profiling_core::driver::interrupt::simulate(libc::SIGINT);
        }
        Ok(())
    }
}

/// Held by each test while it runs: the signal flag is the process's.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn a_signal_stops_after_the_current_call_and_keeps_completed_passes() {
    let _turn = turn();
    // Without GPU timing, then with device events (on a fake device whose
    // stream advances 100 ns per call): the cut pass is not a GPU sample
    // either, its completed call is.
    for gpu in [false, true] {
        let device = std::sync::Arc::new(profiling_core::timing::FakeEvents::new());
        let outcome = interrupted_run(gpu.then(|| device.clone()));
        check(&outcome);
        let gpu_timings = outcome.timings.gpu.as_ref();
        assert_eq!(gpu_timings.is_some(), gpu);
        if let Some(timings) = gpu_timings {
            assert_eq!(
                timings.iterations.unwrap().count,
                1,
                "only the completed pass"
            );
            assert_eq!(timings.runs.unwrap().count, 3, "every completed call");
            assert_eq!(outcome.timings.ranges[0].gpu.as_ref().unwrap().count, 3);
        }
    }
}

fn interrupted_run(
    device: Option<std::sync::Arc<profiling_core::timing::FakeEvents>>,
) -> profiling_core::driver::runner::RunOutcome {
    profiling_core::driver::interrupt::reset();
    let yaml = "target: {name: t}\ndata_source: {name: dummy, record_count: 2, include_image: false}\nwarmup: 1\niterations: 10\n";
    let config = ConfigFile::parse(yaml, None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    let source = data::build(&config.data_source.name, &config.data_source.parameters).unwrap();
    let mut plan = RunPlan::new(config, Records::Eager(source.read_all().unwrap()));
    plan.events = device.map(|d| d as std::sync::Arc<dyn profiling_core::timing::EventBackend>);
    let outcome = run_target(&plan, || Ok(StopsItself::default())).unwrap();
    profiling_core::driver::interrupt::reset();
    outcome
}

fn check(outcome: &profiling_core::driver::runner::RunOutcome) {
    // Warmup: calls 1-2; pass 0: calls 3-4; pass 1 stops after call 5.
    assert_eq!(outcome.interrupted, Some(libc::SIGINT));
    assert_eq!(
        (outcome.completed_warmup, outcome.completed_iterations),
        (1, 1)
    );
    assert_eq!(outcome.calls.run, 5);
    let timings = &outcome.timings;
    assert_eq!(
        timings.iterations.as_ref().unwrap().count,
        1,
        "only the completed pass"
    );
    assert_eq!(
        timings.runs.as_ref().unwrap().count,
        3,
        "every completed call"
    );
    assert_eq!(timings.ranges[0].count, 3);
    assert!(outcome.output_summaries.is_empty());
    assert_eq!(outcome.validation, Validation::Warmup);
    assert!(!profiling_core::timing::recorder::is_recording());
}

/// Lazy loading sets aside room for the records it reads, not for the
/// source's length: a source of a trillion records runs (here until a
/// signal in its fifth call) in the memory of the five it read, where
/// slots for every record would take 24 TB and abort the process.
#[test]
fn lazy_loading_holds_the_records_it_read_not_the_sources_length() {
    let _turn = turn();
    profiling_core::driver::interrupt::reset();
    let yaml = "target: {name: t, profile_prepare: true}\ndata_source: {name: dummy, record_count: 1000000000000, include_image: false}\nrecord_loading: lazy\nwarmup: 0\niterations: 2\n";
    let config = ConfigFile::parse(yaml, None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    let source = data::build(&config.data_source.name, &config.data_source.parameters).unwrap();
    assert_eq!(source.len(), 1_000_000_000_000);
    let plan = RunPlan::new(config, Records::Lazy(source));
    let outcome = run_target(&plan, || Ok(StopsItself::default())).unwrap();
    profiling_core::driver::interrupt::reset();
    assert_eq!(outcome.interrupted, Some(libc::SIGINT));
    assert_eq!(outcome.calls.run, 5);
    assert_eq!(outcome.completed_iterations, 0);
    assert_eq!(
        outcome.record_ids,
        ["dummy-0", "dummy-1", "dummy-2", "dummy-3", "dummy-4"]
    );
}
