//! The runner's order of calls, in each loading mode, and how it reports
//! failures.

use std::cell::RefCell;
use std::rc::Rc;

use profiling_core::data;
use profiling_core::driver::config::{ConfigFile, Overrides};
use profiling_core::driver::runner::{
    run_target, CallCounts, Pass, Phase, Progress, Records, RunPlan, Validation,
};
use profiling_core::prelude::*;

/// Logs every call as `<method> <record or output>`.
#[derive(Default, Clone)]
struct Logging {
    log: Rc<RefCell<Vec<String>>>,
    fail_validate_on: Option<String>,
    fail_run_on_call: Option<usize>,
    runs: usize,
}

impl ProfileTarget for Logging {
    type Prepared = String;
    type Output = String;

    fn prepare(&mut self, record: &DataRecord, _device: Device) -> anyhow::Result<String> {
        self.log.borrow_mut().push(format!("prepare {}", record.id));
        Ok(record.id.clone())
    }

    fn run(&mut self, prepared: &String) -> anyhow::Result<String> {
        self.runs += 1;
        if self.fail_run_on_call == Some(self.runs) {
            anyhow::bail!("run exploded");
        }
        self.log.borrow_mut().push(format!("run {prepared}"));
        Ok(format!("out-{prepared}"))
    }

    fn validate(&self, output: &String) -> anyhow::Result<()> {
        self.log.borrow_mut().push(format!("validate {output}"));
        if self.fail_validate_on.as_deref() == Some(output.as_str()) {
            anyhow::bail!("bad output {output}");
        }
        Ok(())
    }

    fn summarize(&self, output: &String) -> Summary {
        self.log.borrow_mut().push(format!("summarize {output}"));
        Summary::from([(
            "output".to_owned(),
            serde_yaml::Value::from(output.as_str()),
        )])
    }
}

fn plan(yaml: &str) -> RunPlan {
    let config = ConfigFile::parse(yaml, None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    let source = data::build(&config.data_source.name, &config.data_source.parameters).unwrap();
    let records = match config.record_loading {
        profiling_core::driver::config::RecordReading::Eager => {
            Records::Eager(source.read_all().unwrap())
        }
        profiling_core::driver::config::RecordReading::Lazy => Records::Lazy(source),
    };
    RunPlan::new(config, records)
}

fn run_logged(
    yaml: &str,
    target: Logging,
) -> (
    Result<profiling_core::driver::runner::RunOutcome, profiling_core::driver::runner::RunError>,
    Vec<String>,
) {
    let log = target.log.clone();
    let result = run_target(&plan(yaml), move || Ok(target));
    let lines = log.borrow().clone();
    (result, lines)
}

const TWO_RECORDS: &str = "data_source: {name: dummy, record_count: 2, include_image: false}";

#[test]
fn eager_prepares_once_before_the_passes() {
    let (result, log) = run_logged(
        &format!("target: {{name: t}}\n{TWO_RECORDS}\nwarmup: 2\niterations: 3"),
        Logging::default(),
    );
    let outcome = result.unwrap();
    assert_eq!(
        outcome.calls,
        CallCounts {
            prepare: 2,
            prepare_batch: 0,
            run: 10,
            validate: 4,
            summarize: 2
        }
    );
    assert_eq!(
        log[..8],
        [
            "prepare dummy-0",
            "prepare dummy-1",
            "run dummy-0",
            "validate out-dummy-0",
            "run dummy-1",
            "validate out-dummy-1",
            "run dummy-0",
            "validate out-dummy-0",
        ]
    );
    assert_eq!(log.iter().filter(|l| l.starts_with("prepare")).count(), 2);
    assert_eq!(
        log[log.len() - 2..],
        ["summarize out-dummy-0", "summarize out-dummy-1"]
    );
    assert_eq!(outcome.record_ids, ["dummy-0", "dummy-1"]);
    assert_eq!(outcome.validation, Validation::Warmup);
    assert_eq!(
        (outcome.completed_warmup, outcome.completed_iterations),
        (2, 3)
    );
    assert_eq!(outcome.timings.iterations.unwrap().count, 3);
    assert_eq!(outcome.output_summaries[1].record_id, "dummy-1");
    assert_eq!(outcome.output_summaries[1].summary["output"], "out-dummy-1");
}

#[test]
fn progress_is_told_after_each_pass_of_each_phase() {
    let target = Logging::default();
    let log = target.log.clone();
    let mut plan = plan(&format!(
        "target: {{name: t}}\n{TWO_RECORDS}\nwarmup: 2\niterations: 3"
    ));
    let told = log.clone();
    plan.progress = Some(Box::new(move |p: Progress| {
        let phase = if p.measured { "measured" } else { "warmup" };
        told.borrow_mut()
            .push(format!("progress {phase} {}/{}", p.done, p.total));
    }));
    run_target(&plan, move || Ok(target)).unwrap();
    let progress: Vec<String> = log
        .borrow()
        .iter()
        .filter(|l| l.starts_with("progress") || l.starts_with("run dummy-1"))
        .cloned()
        .collect();
    assert_eq!(
        progress,
        [
            "run dummy-1",
            "progress warmup 1/2",
            "run dummy-1",
            "progress warmup 2/2",
            "run dummy-1",
            "progress measured 1/3",
            "run dummy-1",
            "progress measured 2/3",
            "run dummy-1",
            "progress measured 3/3",
        ],
        "each report follows the pass it counts"
    );
}

#[test]
fn profile_prepare_prepares_inside_every_pass() {
    let (result, log) = run_logged(
        &format!(
            "target: {{name: t, profile_prepare: true}}\n{TWO_RECORDS}\nwarmup: 1\niterations: 2"
        ),
        Logging::default(),
    );
    let outcome = result.unwrap();
    assert_eq!(
        outcome.calls,
        CallCounts {
            prepare: 6,
            prepare_batch: 0,
            run: 6,
            validate: 2,
            summarize: 2
        }
    );
    assert_eq!(
        log[..3],
        ["prepare dummy-0", "run dummy-0", "validate out-dummy-0"]
    );
    assert_eq!(outcome.record_ids, ["dummy-0", "dummy-1"]);
    assert_eq!(outcome.output_summaries[1].record_id, "dummy-1");
}

/// Sleeps a known time in `prepare` and in `run`.
struct Sleeping;

const READ_SLEEP: std::time::Duration = std::time::Duration::from_millis(4);

/// A source that counts its reads, each of which sleeps `sleep` first.
struct WatchedSource {
    inner: Box<dyn data::DataSource>,
    sleep: std::time::Duration,
    reads: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl WatchedSource {
    /// `records` dummy records without images.
    fn dummy(records: usize, sleep: std::time::Duration) -> Self {
        let parameters = format!("{{record_count: {records}, include_image: false}}");
        WatchedSource {
            inner: data::build("dummy", &serde_yaml::from_str(&parameters).unwrap()).unwrap(),
            sleep,
            reads: Default::default(),
        }
    }
}

impl data::RecordSource for WatchedSource {
    type Parameters = ();
    fn open(_: ()) -> anyhow::Result<Self> {
        anyhow::bail!("opened by the test, not by a config")
    }
    fn describe(&self) -> std::collections::BTreeMap<String, serde_yaml::Value> {
        self.inner.describe()
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn estimated_bytes(&self) -> anyhow::Result<Option<u64>> {
        Ok(Some(self.inner.estimated_bytes()?))
    }
    fn read(&self, index: usize) -> anyhow::Result<DataRecord> {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::thread::sleep(self.sleep);
        Ok(self.inner.read(index)?)
    }
}

const PREPARE_SLEEP: std::time::Duration = std::time::Duration::from_millis(3);
const RUN_SLEEP: std::time::Duration = std::time::Duration::from_millis(2);

impl ProfileTarget for Sleeping {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        std::thread::sleep(PREPARE_SLEEP);
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        std::thread::sleep(RUN_SLEEP);
        Ok(())
    }
}

/// Each phase's time is at least what its calls slept, and at most the
/// whole run: for records given read and for a source the runner reads.
#[test]
fn phase_times_hold_what_their_calls_slept() {
    for unread in [false, true] {
        let mut plan = plan(&format!(
            "target: {{name: t}}\n{TWO_RECORDS}\nwarmup: 2\niterations: 3"
        ));
        if unread {
            plan.records =
                Records::Unread(data::named("dummy", WatchedSource::dummy(2, READ_SLEEP)));
        }
        assert_eq!(plan.records.len(), 2);
        assert!(!plan.records.is_empty());
        let started = std::time::Instant::now();
        let outcome = run_target(&plan, || Ok(Sleeping)).unwrap();
        let wall = started.elapsed().as_nanos() as u64;
        let timings = &outcome.timings;
        let at_least = |sleep: std::time::Duration, calls: u64| sleep.as_nanos() as u64 * calls;
        // Each record read once: the first alone (to measure what its
        // prepare keeps), the other after it.
        let reads = if unread { 2 } else { 0 };
        let phases = [
            ("load", timings.read_ns, at_least(READ_SLEEP, reads)),
            ("prepare", timings.prepare_ns, at_least(PREPARE_SLEEP, 2)),
            ("warmup", timings.warmup_ns, at_least(RUN_SLEEP, 4)),
            ("capture", timings.capture_ns, at_least(RUN_SLEEP, 6)),
        ];
        for (phase, ns, slept) in phases {
            assert!(
                (slept..=wall).contains(&ns),
                "unread {unread}: {phase} took {ns} ns, slept {slept}, the run {wall}"
            );
        }
        if !unread {
            assert_eq!(timings.read_ns, 0, "records given read take no loading");
        }
        // Loading leaves out the first record's prepare, which it brackets:
        // no phase counts another's time.
        assert!(
            timings.read_ns + timings.prepare_ns + timings.warmup_ns + timings.capture_ns <= wall
        );
        assert_eq!(outcome.completed_warmup, 2);
        assert_eq!(outcome.completed_iterations, 3);
        assert_eq!(outcome.calls.prepare, 2);
    }
    assert!(Records::Eager(Vec::new()).is_empty());
}

#[test]
fn lazy_reads_and_prepares_inside_every_pass() {
    let (result, log) = run_logged(
        &format!("target: {{name: t, profile_prepare: true}}\n{TWO_RECORDS}\nrecord_loading: lazy\nwarmup: 2\niterations: 2"),
        Logging::default(),
    );
    let outcome = result.unwrap();
    assert_eq!(
        outcome.calls,
        CallCounts {
            prepare: 8,
            prepare_batch: 0,
            run: 8,
            validate: 4,
            summarize: 2
        }
    );
    assert_eq!(outcome.record_ids, ["dummy-0", "dummy-1"]);
    assert_eq!(log.iter().filter(|l| *l == "prepare dummy-1").count(), 4);

    // Every pass reads every record from the source, in order.
    let reads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut plan = plan(&format!(
        "target: {{name: t, profile_prepare: true}}\n{TWO_RECORDS}\nrecord_loading: lazy\nwarmup: 2\niterations: 2"
    ));
    let Records::Lazy(source) = std::mem::replace(&mut plan.records, Records::Eager(Vec::new()))
    else {
        panic!("a lazy plan");
    };
    let logged = reads.clone();
    plan.records = Records::Lazy(data::named(
        "dummy",
        HookedReads {
            inner: source,
            before_read: move |index| {
                logged.lock().unwrap().push(index);
                Ok(())
            },
        },
    ));
    run_target(&plan, || Ok(Logging::default())).unwrap();
    assert_eq!(*reads.lock().unwrap(), [0, 1, 0, 1, 0, 1, 0, 1]);
}

/// Another source, with `before_read` called on every read first: to log
/// reads or make one fail.
struct HookedReads<F> {
    inner: Box<dyn data::DataSource>,
    before_read: F,
}

impl<F> data::RecordSource for HookedReads<F>
where
    F: Fn(usize) -> Result<(), data::DataError> + Send + Sync + 'static,
{
    type Parameters = ();
    fn open(_: ()) -> anyhow::Result<Self> {
        anyhow::bail!("opened by the test, not by a config")
    }
    fn describe(&self) -> std::collections::BTreeMap<String, serde_yaml::Value> {
        self.inner.describe()
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn estimated_bytes(&self) -> anyhow::Result<Option<u64>> {
        Ok(Some(self.inner.estimated_bytes()?))
    }
    fn read(&self, index: usize) -> anyhow::Result<DataRecord> {
        (self.before_read)(index)?;
        Ok(self.inner.read(index)?)
    }
}

#[test]
fn measured_passes_never_validate() {
    let (result, _) = run_logged(
        &format!("target: {{name: t}}\n{TWO_RECORDS}\nwarmup: 1\niterations: 5"),
        Logging::default(),
    );
    // Two validations: the warmup pass only, none for the five measured passes.
    assert_eq!(result.unwrap().calls.validate, 2);
}

#[test]
fn without_warmup_the_last_pass_is_validated_after_the_capture() {
    let (result, log) = run_logged(
        &format!("target: {{name: t}}\n{TWO_RECORDS}\nwarmup: 0\niterations: 3"),
        Logging::default(),
    );
    let outcome = result.unwrap();
    assert_eq!(outcome.validation, Validation::AfterCapture);
    assert_eq!(outcome.calls.validate, 2);
    let first_validate = log.iter().position(|l| l.starts_with("validate")).unwrap();
    assert_eq!(log.iter().filter(|l| l.starts_with("run")).count(), 6);
    assert!(
        log[..first_validate]
            .iter()
            .filter(|l| l.starts_with("run"))
            .count()
            == 6,
        "{log:?}"
    );
}

#[test]
fn validate_output_false_validates_nothing() {
    let (result, _) = run_logged(
        &format!("target: {{name: t}}\n{TWO_RECORDS}\nwarmup: 2\nvalidate_output: false"),
        Logging::default(),
    );
    let outcome = result.unwrap();
    assert_eq!(outcome.calls.validate, 0);
    assert_eq!(outcome.validation, Validation::Disabled);
}

#[test]
fn a_failed_validation_names_record_and_pass() {
    let target = Logging {
        fail_validate_on: Some("out-dummy-1".into()),
        ..Logging::default()
    };
    let (result, _) = run_logged(
        &format!("target: {{name: t}}\n{TWO_RECORDS}\nwarmup: 1"),
        target,
    );
    let error = result.unwrap_err();
    assert_eq!(error.phase, Phase::Validate);
    assert_eq!(error.record_id.as_deref(), Some("dummy-1"));
    assert_eq!(error.pass, Pass::Warmup(0));
    assert_eq!(
        error.to_string(),
        "validate failed on record `dummy-1` (warmup pass 0): bad output out-dummy-1"
    );
}

#[test]
fn a_failed_run_in_a_measured_pass_says_how_far_it_got() {
    // Warmup: calls 1-2; measured pass 0: calls 3-4; pass 1 fails at call 6.
    let target = Logging {
        fail_run_on_call: Some(6),
        ..Logging::default()
    };
    let (result, _) = run_logged(
        &format!("target: {{name: t}}\n{TWO_RECORDS}\nwarmup: 1\niterations: 3"),
        target,
    );
    let error = result.unwrap_err();
    assert_eq!((error.phase, error.pass), (Phase::Run, Pass::Measured(1)));
    assert_eq!(error.record_id.as_deref(), Some("dummy-1"));
    assert_eq!(error.completed_iterations, 1);
    assert_eq!(error.calls.run, 6, "the failing call counts as a call");
}

#[test]
fn a_failing_factory_stops_before_any_call() {
    let plan = plan("target: {name: t}");
    let error = run_target::<Logging, _>(&plan, || anyhow::bail!("no weights")).unwrap_err();
    assert_eq!((error.phase, error.pass), (Phase::Construct, Pass::Setup));
    assert_eq!(error.calls, CallCounts::default());
}

#[test]
fn a_seed_makes_the_run_rng_repeat() {
    use rand::Rng;
    profiling_core::random::seed_run(Some(5));
    let first: Vec<u32> = (0..4)
        .map(|_| profiling_core::random::rng("s").gen())
        .collect();
    let again: Vec<u32> = (0..4)
        .map(|_| profiling_core::random::rng("s").gen())
        .collect();
    assert_eq!(first, again);
    profiling_core::random::seed_run(Some(6));
    let other: u32 = profiling_core::random::rng("s").gen();
    assert_ne!(first[0], other);
    profiling_core::random::seed_run(None);
    assert_eq!(profiling_core::random::run_seed(), None);
}

thread_local! {
    static EVENTS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn event(text: String) {
    EVENTS.with(|events| events.borrow_mut().push(text));
}

/// Logs its calls beside the synchronizations, into one thread-local list.
#[derive(Default)]
struct SyncProbe;

impl ProfileTarget for SyncProbe {
    type Prepared = String;
    type Output = ();
    fn prepare(&mut self, record: &DataRecord, _device: Device) -> anyhow::Result<String> {
        event(format!("prepare {}", record.id));
        Ok(record.id.clone())
    }
    fn run(&mut self, id: &String) -> anyhow::Result<()> {
        event(format!("run {id}"));
        Ok(())
    }
    fn validate(&self, _output: &()) -> anyhow::Result<()> {
        event("validate".to_owned());
        Ok(())
    }
}

fn record_sync(device: Device) {
    event(format!("sync {device}"));
}

fn sync_events(yaml: &str) -> Vec<String> {
    EVENTS.with(|events| events.borrow_mut().clear());
    let mut plan = plan(yaml);
    plan.synchronize = record_sync;
    run_target(&plan, || Ok(SyncProbe)).unwrap();
    EVENTS.with(|events| events.borrow().clone())
}

const CUDA_RUN: &str = "target: {name: t}
data_source: {name: dummy, record_count: 2, include_image: false}
device: 'cuda:1'
warmup: 1
iterations: 2
";

#[test]
fn cuda_synchronizes_around_warmup_and_capture() {
    assert_eq!(
        sync_events(CUDA_RUN),
        [
            "prepare dummy-0",
            "prepare dummy-1",
            "sync cuda:1", // before warmup
            "run dummy-0",
            "validate",
            "run dummy-1",
            "validate",
            "sync cuda:1", // after warmup
            "sync cuda:1", // before capture
            "run dummy-0",
            "run dummy-1",
            "run dummy-0",
            "run dummy-1",
            "sync cuda:1", // after capture
        ]
    );
}

#[test]
fn synchronize_each_iteration_follows_every_call() {
    let events = sync_events(&format!(
        "{CUDA_RUN}cuda: {{synchronize_before_warmup: false, synchronize_after_warmup: false, synchronize_before_capture: false, synchronize_after_capture: false, synchronize_each_iteration: true}}"
    ));
    // In warmup, the call is synchronized before its output is validated
    // (and the warmup pass's time covers the call and its synchronize).
    assert_eq!(
        events[2..],
        [
            "run dummy-0",
            "sync cuda:1",
            "validate",
            "run dummy-1",
            "sync cuda:1",
            "validate",
            "run dummy-0",
            "sync cuda:1",
            "run dummy-1",
            "sync cuda:1",
            "run dummy-0",
            "sync cuda:1",
            "run dummy-1",
            "sync cuda:1",
        ]
    );
}

#[test]
fn each_switch_removes_its_synchronization() {
    let events = sync_events(&format!(
        "{CUDA_RUN}cuda: {{synchronize_before_warmup: false, synchronize_after_capture: false}}"
    ));
    assert_eq!(events.iter().filter(|e| e.starts_with("sync")).count(), 2);
    assert_eq!(events[2], "run dummy-0");
    assert_eq!(events.last().unwrap(), "run dummy-1");
}

#[test]
fn the_cpu_never_synchronizes() {
    let events = sync_events(&CUDA_RUN.replace("'cuda:1'", "cpu").to_string());
    assert!(events.iter().all(|e| !e.starts_with("sync")), "{events:?}");
}

#[test]
fn host_timing_notes_say_what_the_clock_covers() {
    use profiling_core::driver::config::CudaPolicy;
    use profiling_core::driver::runner::host_timing_note;
    let launches = host_timing_note(Device::Cuda(0), &CudaPolicy::default());
    assert!(
        launches.starts_with("host timings measure kernel launches, not their completion"),
        "{launches}"
    );
    let synced = CudaPolicy {
        synchronize_each_iteration: true,
        ..CudaPolicy::default()
    };
    assert!(host_timing_note(Device::Cuda(0), &synced).contains("covers the GPU work too"));
    assert!(host_timing_note(Device::Cpu, &CudaPolicy::default()).contains("on the CPU"));
}

#[test]
fn targets_read_their_parameters_during_construction() {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Settings {
        module: String,
        scale: f32,
    }
    let plan = plan("target: {name: t, parameters: {module: model.pt, scale: 0.5}}");
    let mut seen = None;
    let result = run_target(&plan, || {
        let settings: Settings = profiling_core::target::parameters()?;
        seen = Some((settings.module, settings.scale));
        Ok(Logging::default())
    });
    assert!(result.is_ok());
    assert_eq!(seen, Some(("model.pt".to_owned(), 0.5)));

    let plan = plan_with_bad_parameters();
    let error = run_target(&plan, || {
        let _: Settings = profiling_core::target::parameters()?;
        Ok(Logging::default())
    })
    .unwrap_err();
    assert_eq!(error.phase, Phase::Construct);
    assert_eq!(
        error.source.to_string(),
        "target.parameters.scale: invalid type: string \"big\", expected f32"
    );
}

/// A key the target's parameter type has no field for (a typo) is refused
/// as bad configuration naming it, also where the type does not deny
/// unknown fields itself; nested keys are named by their path.
#[test]
fn a_parameter_the_target_does_not_read_is_refused_naming_it() {
    #[derive(serde::Deserialize)]
    struct Settings {
        #[serde(default)]
        scale: f32,
        #[serde(default)]
        nms: Nms,
    }
    #[derive(serde::Deserialize, Default)]
    struct Nms {
        #[serde(default)]
        iou: f32,
    }
    for (parameters, key) in [
        ("{scael: 0.5}", "scael"),
        ("{scale: 0.5, nms: {iuo: 0.4}}", "nms.iuo"),
    ] {
        let plan = plan(&format!("target: {{name: t, parameters: {parameters}}}"));
        let error = run_target(&plan, || {
            let _: Settings = profiling_core::target::parameters()?;
            Ok(Logging::default())
        })
        .unwrap_err();
        assert_eq!(error.phase, Phase::Construct);
        let message = error.source.to_string();
        assert!(
            message.starts_with(&format!(
                "target.parameters.{key}: unknown parameter: the target's parameters ("
            )),
            "{message}"
        );
        assert!(
            message.ends_with("Settings) have no such field"),
            "{message}"
        );
    }
    let plan = plan("target: {name: t, parameters: {scale: 0.5, nms: {iou: 0.4}}}");
    assert!(run_target(&plan, || {
        let settings: Settings = profiling_core::target::parameters()?;
        assert_eq!((settings.scale, settings.nms.iou), (0.5, 0.4));
        Ok(Logging::default())
    })
    .is_ok());
}

/// Parameters given to a target that never asks for them configure
/// nothing: the run is refused naming the first, once it has shown that no
/// method reads them. Read in a method rather than the factory, they count.
#[test]
fn parameters_a_target_never_reads_are_refused_naming_the_first() {
    let plan = plan("target: {name: t, parameters: {threshold: 0.5, size: 3}}");
    let error = run_target(&plan, || Ok(Logging::default())).unwrap_err();
    assert_eq!(error.phase, Phase::Construct);
    assert_eq!(
        error.source.to_string(),
        "target.parameters.threshold: unknown parameter: target `t` reads no `target.parameters` (it never calls `profiling_core::target::parameters`)"
    );
    assert!(error
        .source
        .downcast_ref::<profiling_core::target::ParameterError>()
        .is_some());

    struct ReadsInPrepare(Logging);
    impl ProfileTarget for ReadsInPrepare {
        type Prepared = String;
        type Output = String;
        fn prepare(&mut self, record: &DataRecord, device: Device) -> anyhow::Result<String> {
            #[derive(serde::Deserialize)]
            #[allow(dead_code)]
            struct Settings {
                threshold: f32,
                size: u32,
            }
            let _: Settings = profiling_core::target::parameters()?;
            self.0.prepare(record, device)
        }
        fn run(&mut self, prepared: &String) -> anyhow::Result<String> {
            self.0.run(prepared)
        }
    }
    assert!(run_target(&plan, || Ok(ReadsInPrepare(Logging::default()))).is_ok());
    // Without parameters, nothing has to read them.
    assert!(run_target(&self::plan("target: {name: t}"), || Ok(Logging::default())).is_ok());
}

fn plan_with_bad_parameters() -> RunPlan {
    plan("target: {name: t, parameters: {module: m.pt, scale: big}}")
}

/// Opens its ranges only on CUDA devices: one through the attribute, one
/// through the function.
struct CudaOnly {
    device: Device,
}

impl CudaOnly {
    #[nvtx_range("launch kernels", if_cuda = self.device)]
    fn launch(&self) -> u32 {
        7
    }
}

impl ProfileTarget for CudaOnly {
    type Prepared = ();
    type Output = u32;
    fn prepare(&mut self, _record: &DataRecord, device: Device) -> anyhow::Result<()> {
        self.device = device;
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<u32> {
        let _upload = profiling_range_if_cuda("upload", self.device);
        let _always = profiling_range("always");
        Ok(self.launch())
    }
}

fn recorded_ranges(device: &str) -> Vec<(String, u64)> {
    let mut plan = plan(&format!(
        "target: {{name: t}}\ndata_source: {{name: dummy, record_count: 2}}\ndevice: '{device}'\nwarmup: 1\niterations: 3\n"
    ));
    plan.synchronize = |_| {};
    let outcome = run_target(&plan, || {
        Ok(CudaOnly {
            device: Device::Cpu,
        })
    })
    .unwrap();
    let mut ranges: Vec<(String, u64)> = outcome
        .timings
        .ranges
        .iter()
        .map(|r| (r.name.clone(), r.count))
        .collect();
    ranges.sort();
    ranges
}

#[test]
fn if_cuda_ranges_open_on_a_cuda_device_and_are_recorded() {
    assert!(profiling_range_if_cuda("x", Device::Cuda(0)).is_some());
    assert!(profiling_range_if_cuda("x", Device::Cpu).is_none());
    assert_eq!(
        recorded_ranges("cuda:1"),
        [
            ("always".to_owned(), 6),
            ("launch kernels".to_owned(), 6),
            ("upload".to_owned(), 6)
        ]
    );
    assert_eq!(recorded_ranges("cpu"), [("always".to_owned(), 6)]);
}

#[test]
fn a_record_that_cannot_be_read_mid_run_is_a_data_error() {
    let mut plan = plan(&format!(
        "target: {{name: t, profile_prepare: true}}\n{TWO_RECORDS}\nrecord_loading: lazy\nwarmup: 1\niterations: 2"
    ));
    let Records::Lazy(source) = std::mem::replace(&mut plan.records, Records::Eager(Vec::new()))
    else {
        panic!("a lazy plan");
    };
    // The second record cannot be read from the third read on.
    let reads = std::sync::atomic::AtomicUsize::new(0);
    plan.records = Records::Lazy(data::named(
        "dummy",
        HookedReads {
            inner: source,
            before_read: move |index| {
                let count = reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if index == 1 && count >= 2 {
                    return Err(data::DataError::Io {
                        path: "/data/b.png".into(),
                        source: std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
                    });
                }
                Ok(())
            },
        },
    ));
    let error = run_target(&plan, || Ok(Logging::default())).unwrap_err();
    assert_eq!(error.phase, Phase::Load);
    assert_eq!(error.pass, Pass::Measured(0));
    assert!(error.is_data_error());
    assert_eq!(error.source.to_string(), "cannot read /data/b.png: gone");

    let (result, _) = run_logged(
        &format!("target: {{name: t}}\n{TWO_RECORDS}\nwarmup: 1\niterations: 2"),
        Logging {
            fail_run_on_call: Some(1),
            ..Logging::default()
        },
    );
    assert!(
        !result.unwrap_err().is_data_error(),
        "the target failed, not the data"
    );
}

/// Eager loading reads each record once: the first one, read alone to
/// measure what its prepare keeps, is not read again with the others.
#[test]
fn eager_loading_reads_each_record_once() {
    let mut plan = plan("target: {name: t}\ndata_source: {name: dummy, record_count: 5, include_image: false}\nwarmup: 1\niterations: 2");
    let source = WatchedSource::dummy(5, std::time::Duration::ZERO);
    let reads = source.reads.clone();
    plan.records = Records::Unread(data::named("dummy", source));
    let outcome = run_target(&plan, || Ok(Sleeping)).unwrap();
    assert_eq!(outcome.record_ids.len(), 5);
    assert_eq!(reads.load(std::sync::atomic::Ordering::SeqCst), 5);
}

/// Opens `name` around every call, and tells `tell` of each. With
/// `in_capture`, its first measured call (the one after `warmup` calls)
/// tells `started`, then waits up to `patience` to hear that the other run
/// built its target and warmed up.
struct Stepping {
    name: &'static str,
    calls: u32,
    tell: Option<std::sync::mpsc::Sender<()>>,
    in_capture: Option<InCapture>,
}

struct InCapture {
    warmup: u32,
    started: std::sync::mpsc::Sender<()>,
    other: std::sync::mpsc::Receiver<()>,
    patience: std::time::Duration,
    heard: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl ProfileTarget for Stepping {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        let _step = profiling_range(self.name);
        self.calls += 1;
        if let Some(tell) = &self.tell {
            let _ = tell.send(());
        }
        if let Some(wait) = self
            .in_capture
            .as_ref()
            .filter(|w| self.calls == w.warmup + 1)
        {
            wait.started.send(()).unwrap();
            // Built, then its two warmup calls.
            let until = std::time::Instant::now() + wait.patience;
            let heard = (0..3).all(|_| {
                let left = until.saturating_duration_since(std::time::Instant::now());
                wait.other.recv_timeout(left).is_ok()
            });
            wait.heard.store(heard, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(())
    }
}

fn ranges_of(outcome: &profiling_core::driver::runner::RunOutcome) -> Vec<(String, u64)> {
    outcome
        .timings
        .ranges
        .iter()
        .map(|r| (r.name.clone(), r.count))
        .collect()
}

/// The recorder is the process's: a second run started while the first
/// captures waits for it, rather than building its target, warming up and
/// putting its ranges in the first one's capture.
#[test]
fn a_second_run_in_the_process_waits_and_neither_counts_the_others_ranges() {
    use std::sync::{atomic::AtomicBool, atomic::Ordering, mpsc, Arc};
    let yaml = "target: {name: t}\ndata_source: {name: dummy, record_count: 1}\nwarmup: 2\niterations: 3\n";
    let (started, first_is_capturing) = mpsc::channel();
    let (tell, other) = mpsc::channel();
    let heard = Arc::new(AtomicBool::new(false));
    let in_capture = InCapture {
        warmup: 2,
        started,
        other,
        // Long enough for the second run to build its target and warm up
        // where nothing keeps it out; only the passing test waits it out.
        patience: std::time::Duration::from_millis(500),
        heard: Arc::clone(&heard),
    };
    let first = std::thread::spawn(move || {
        let outcome = run_target(&plan(yaml), || {
            Ok(Stepping {
                name: "first",
                calls: 0,
                tell: None,
                in_capture: Some(in_capture),
            })
        });
        ranges_of(&outcome.unwrap())
    });
    first_is_capturing.recv().unwrap();
    let second = run_target(&plan(yaml), || {
        // Heard by the first only while it still captures.
        let _ = tell.send(());
        Ok(Stepping {
            name: "second",
            calls: 0,
            tell: Some(tell.clone()),
            in_capture: None,
        })
    })
    .unwrap();
    assert_eq!(first.join().unwrap(), [("first".to_owned(), 3)]);
    assert_eq!(ranges_of(&second), [("second".to_owned(), 3)]);
    assert!(
        !heard.load(Ordering::SeqCst),
        "the second run built its target and warmed up while the first captured"
    );
}
