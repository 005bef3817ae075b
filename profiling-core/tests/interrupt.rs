//! A signal stops the run after the call in progress and keeps what
//! completed. One test in this file: the signal flag is process-wide.

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

#[test]
fn a_signal_stops_after_the_current_call_and_keeps_completed_passes() {
    // Without GPU timing, then with device events (on a fake device whose
    // stream advances 100 ns per call): the cut pass is not a GPU sample
    // either, its completed call is.
    for gpu in [false, true] {
        let device = std::sync::Arc::new(profiling_core::driver::timing::FakeEvents::new());
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
    device: Option<std::sync::Arc<profiling_core::driver::timing::FakeEvents>>,
) -> profiling_core::driver::runner::RunOutcome {
    profiling_core::driver::interrupt::reset();
    let yaml = "target: {name: t}\ndata_source: {name: dummy, record_count: 2, include_image: false}\nwarmup: 1\niterations: 10\n";
    let config = ConfigFile::parse(yaml, None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    let source = data::build(&config.data_source.name, &config.data_source.parameters).unwrap();
    let mut plan = RunPlan::new(config, Records::Eager(source.read_all().unwrap()));
    plan.events =
        device.map(|d| d as std::sync::Arc<dyn profiling_core::driver::timing::EventBackend>);
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
    assert!(!profiling_core::driver::timing::recorder::is_recording());
}
