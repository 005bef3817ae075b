//! A target that panics or fails stops the run at that call, and the error
//! says which call, on which record, in which pass.

use profiling_core::data;
use profiling_core::driver::config::{ConfigFile, Overrides};
use profiling_core::driver::runner::{run_target, Pass, Phase, Records, RunError, RunPlan};
use profiling_core::prelude::*;

/// Panics (or fails) in the method and call named.
#[derive(Default)]
struct Faulty {
    panic_in: Option<(&'static str, u32)>,
    fail_in: Option<(&'static str, u32)>,
    calls: std::cell::Cell<u32>,
}

impl Faulty {
    fn step(&self, method: &'static str) -> anyhow::Result<()> {
        let call = self.calls.get() + 1;
        self.calls.set(call);
        if self.panic_in == Some((method, call)) {
            let _range = profiling_range("about to panic");
            panic!("boom in {method}");
        }
        if self.fail_in == Some((method, call)) {
            anyhow::bail!("{method} refused");
        }
        Ok(())
    }
}

impl ProfileTarget for Faulty {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        self.step("prepare")
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        self.step("run")
    }
    fn validate(&self, _output: &()) -> anyhow::Result<()> {
        self.step("validate")
    }
    fn summarize(&self, _output: &()) -> Summary {
        self.step("summarize").unwrap();
        Summary::new()
    }
}

fn fail(yaml: &str, target: Faulty) -> RunError {
    profiling_core::driver::panics::install_hook();
    let config = ConfigFile::parse(yaml, None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    let source = data::build(&config.data_source.name, &config.data_source.parameters).unwrap();
    let plan = RunPlan::new(config, Records::Eager(source.read_all().unwrap()));
    run_target(&plan, move || Ok(target)).unwrap_err()
}

const RUN: &str = "target: {name: t}\ndata_source: {name: dummy, record_count: 2, include_image: false}\nwarmup: 1\niterations: 3\n";

fn panic_line() -> u32 {
    include_str!("failures.rs")
        .lines()
        .position(|l| l.contains("panic!(\"boom in"))
        .unwrap() as u32
        + 1
}

#[test]
fn a_panic_in_prepare_names_the_record_before_the_passes() {
    // Calls: prepare dummy-0 (1), prepare dummy-1 (2).
    let error = fail(
        RUN,
        Faulty {
            panic_in: Some(("prepare", 2)),
            ..Faulty::default()
        },
    );
    assert_eq!(
        (error.phase, error.pass, error.record_id.as_deref()),
        (Phase::Prepare, Pass::Setup, Some("dummy-1"))
    );
    let expected = format!(
        "panicked at profiling-core/tests/failures.rs:{}:13: boom in prepare",
        panic_line()
    );
    assert_eq!(error.source.to_string(), expected);
    assert_eq!(
        error.to_string(),
        format!("prepare failed on record `dummy-1` (before the passes): {expected}")
    );
}

#[test]
fn a_panic_in_a_measured_pass_names_the_pass() {
    // Calls: 2 prepares, warmup run/validate x2 (3-6), measured runs from 7: pass 1 starts at 9.
    let error = fail(
        RUN,
        Faulty {
            panic_in: Some(("run", 10)),
            ..Faulty::default()
        },
    );
    assert_eq!(
        (error.phase, error.pass, error.record_id.as_deref()),
        (Phase::Run, Pass::Measured(1), Some("dummy-1"))
    );
    assert_eq!(error.completed_iterations, 1);
    assert!(
        error.source.to_string().ends_with("boom in run"),
        "{}",
        error.source
    );
}

#[test]
fn a_panic_in_validate_names_the_warmup_pass() {
    let error = fail(
        RUN,
        Faulty {
            panic_in: Some(("validate", 4)),
            ..Faulty::default()
        },
    );
    assert_eq!(
        (error.phase, error.pass, error.record_id.as_deref()),
        (Phase::Validate, Pass::Warmup(0), Some("dummy-0"))
    );
}

#[test]
fn a_panic_in_summarize_is_caught_too() {
    // 2 prepares, 4 warmup calls, 6 measured runs: summaries start at 13.
    let error = fail(
        RUN,
        Faulty {
            panic_in: Some(("summarize", 14)),
            ..Faulty::default()
        },
    );
    assert_eq!(
        (error.phase, error.pass, error.record_id.as_deref()),
        (Phase::Summarize, Pass::AfterCapture, Some("dummy-1"))
    );
}

#[test]
fn an_error_ends_the_run_the_same_way() {
    let error = fail(
        RUN,
        Faulty {
            fail_in: Some(("run", 7)),
            ..Faulty::default()
        },
    );
    assert_eq!(
        (error.phase, error.pass, error.record_id.as_deref()),
        (Phase::Run, Pass::Measured(0), Some("dummy-0"))
    );
    assert_eq!(
        error.to_string(),
        "run failed on record `dummy-0` (measured pass 0): run refused"
    );
}

#[test]
fn a_panicking_factory_fails_construction() {
    profiling_core::driver::panics::install_hook();
    let config = ConfigFile::parse(RUN, None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    let plan = RunPlan::new(config, Records::Eager(Vec::new()));
    let error = run_target::<Faulty, _>(&plan, || panic!("no weights")).unwrap_err();
    assert_eq!((error.phase, error.pass), (Phase::Construct, Pass::Setup));
    assert!(error.source.to_string().ends_with("no weights"));
}
