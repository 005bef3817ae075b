//! Batches: the runner's order of calls with `workload.batch_size` > 1 in
//! each loading mode, a short last batch kept or dropped, the records each
//! output came from, and the default `prepare_batch`'s refusal.

use std::cell::RefCell;
use std::rc::Rc;

use profiling_core::data;
use profiling_core::driver::config::{ConfigFile, Overrides, RecordReading};
use profiling_core::driver::runner::{
    run_target, Pass, Phase, Records, RunError, RunOutcome, RunPlan,
};
use profiling_core::prelude::*;
use profiling_core::target::BatchesUnsupported;

/// Logs every call as `<method> <records>`; its input and output are the
/// ids of the records it was given, joined by `+`.
#[derive(Default, Clone)]
struct Logging {
    log: Rc<RefCell<Vec<String>>>,
    fail_run_on: Option<String>,
}

impl ProfileTarget for Logging {
    type Prepared = String;
    type Output = String;

    fn prepare(&mut self, record: &DataRecord, _device: Device) -> anyhow::Result<String> {
        self.log.borrow_mut().push(format!("prepare {}", record.id));
        Ok(record.id.clone())
    }

    fn prepare_batch(&mut self, records: &[DataRecord], _device: Device) -> anyhow::Result<String> {
        let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
        let batch = ids.join("+");
        self.log.borrow_mut().push(format!("prepare_batch {batch}"));
        Ok(batch)
    }

    fn run(&mut self, batch: &String) -> anyhow::Result<String> {
        if self.fail_run_on.as_ref() == Some(batch) {
            anyhow::bail!("run exploded");
        }
        self.log.borrow_mut().push(format!("run {batch}"));
        Ok(batch.clone())
    }

    fn summarize(&self, output: &String) -> Summary {
        Summary::from([("ran".to_owned(), serde_yaml::Value::from(output.as_str()))])
    }
}

/// One record per call, the default `prepare_batch` kept.
struct OneByOne;

impl ProfileTarget for OneByOne {
    type Prepared = ();
    type Output = ();

    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }

    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        Ok(())
    }
}

fn plan(yaml: &str) -> RunPlan {
    let config = ConfigFile::parse(yaml, None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    let source = data::build(&config.data_source.name, &config.data_source.parameters).unwrap();
    let records = match config.record_loading {
        RecordReading::Eager => Records::Eager(source.read_all().unwrap()),
        RecordReading::Lazy => Records::Lazy(source),
    };
    RunPlan::new(config, records)
}

fn run_logged(yaml: &str, target: Logging) -> (Result<RunOutcome, RunError>, Vec<String>) {
    let log = target.log.clone();
    let result = run_target(&plan(yaml), move || Ok(target));
    let lines = log.borrow().clone();
    (result, lines)
}

/// Five records in batches of two: two whole batches and one of one.
/// `extra` may give `profile_prepare` (as `PREPARE`) and more keys.
fn five_in_twos(extra: &str) -> String {
    let (profile_prepare, extra) = match extra.strip_prefix(PREPARE) {
        Some(rest) => (true, rest),
        None => (false, extra),
    };
    format!(
        "target: {{name: t, profile_prepare: {profile_prepare}}}\ndata_source: {{name: dummy, record_count: 5, include_image: false}}\nwarmup: 1\niterations: 2\nbatch_size: 2\n{extra}"
    )
}

const PREPARE: &str = "profile_prepare\n";

#[test]
fn eager_prepares_each_batch_once_before_the_passes() {
    let (result, log) = run_logged(&five_in_twos(""), Logging::default());
    let outcome = result.unwrap();
    assert_eq!(
        log[..6],
        [
            "prepare_batch dummy-0+dummy-1",
            "prepare_batch dummy-2+dummy-3",
            "prepare_batch dummy-4",
            "run dummy-0+dummy-1",
            "run dummy-2+dummy-3",
            "run dummy-4",
        ]
    );
    let calls = outcome.calls;
    assert_eq!((calls.prepare, calls.prepare_batch), (0, 3));
    // One call per batch in each of the warmup and two measured passes.
    assert_eq!(calls.run, 9);
    assert_eq!(outcome.timings.runs.unwrap().count, 6);
    assert_eq!(outcome.timings.iterations.unwrap().count, 2);
}

#[test]
fn profile_prepare_prepares_each_batch_in_every_pass() {
    let (result, log) = run_logged(&five_in_twos("profile_prepare\n"), Logging::default());
    let outcome = result.unwrap();
    assert_eq!((outcome.calls.prepare_batch, outcome.calls.run), (9, 9));
    assert_eq!(
        log[..4],
        [
            "prepare_batch dummy-0+dummy-1",
            "run dummy-0+dummy-1",
            "prepare_batch dummy-2+dummy-3",
            "run dummy-2+dummy-3",
        ]
    );
}

#[test]
fn lazy_loading_reads_each_batch_in_every_pass() {
    let (result, log) = run_logged(
        &five_in_twos("profile_prepare\nrecord_loading: lazy"),
        Logging::default(),
    );
    let outcome = result.unwrap();
    assert_eq!((outcome.calls.prepare_batch, outcome.calls.run), (9, 9));
    assert_eq!(log[4..6], ["prepare_batch dummy-4", "run dummy-4"]);
    assert_eq!(
        outcome.record_ids,
        ["dummy-0", "dummy-1", "dummy-2", "dummy-3", "dummy-4"]
    );
    assert_eq!(outcome.record_batches, [0, 0, 1, 1, 2]);
}

#[test]
fn a_short_last_batch_is_kept_by_default() {
    let (result, _) = run_logged(&five_in_twos(""), Logging::default());
    let outcome = result.unwrap();
    assert_eq!(
        outcome.record_ids,
        ["dummy-0", "dummy-1", "dummy-2", "dummy-3", "dummy-4"]
    );
    assert_eq!(outcome.record_batches, [0, 0, 1, 1, 2]);
    let summaries = &outcome.output_summaries;
    assert_eq!(summaries.len(), 3);
    assert_eq!(
        (summaries[1].batch, summaries[1].record_id.as_str()),
        (1, "dummy-2")
    );
    assert_eq!(summaries[1].record_ids, ["dummy-2", "dummy-3"]);
    assert_eq!(summaries[1].summary["ran"], "dummy-2+dummy-3");
    assert_eq!(summaries[2].record_ids, ["dummy-4"]);
    let per_record = outcome.timings.per_record.unwrap();
    assert_eq!(
        (
            per_record.batch_size,
            per_record.records_per_pass,
            per_record.batches_per_pass
        ),
        (2, 5, 3)
    );
}

#[test]
fn a_short_last_batch_is_left_out_with_drop() {
    for loading in [
        "",
        "profile_prepare\n",
        "profile_prepare\nrecord_loading: lazy\n",
    ] {
        let (result, log) = run_logged(
            &five_in_twos(&format!("{loading}last_batch: drop\n")),
            Logging::default(),
        );
        let outcome = result.unwrap();
        assert!(
            !log.iter().any(|l| l.contains("dummy-4")),
            "{loading}: {log:?}"
        );
        assert_eq!(
            outcome.record_ids,
            ["dummy-0", "dummy-1", "dummy-2", "dummy-3"],
            "{loading}"
        );
        assert_eq!(outcome.record_batches, [0, 0, 1, 1]);
        assert_eq!(outcome.output_summaries.len(), 2);
        assert_eq!(outcome.timings.runs.unwrap().count, 4, "{loading}");
        let per_record = outcome.timings.per_record.unwrap();
        assert_eq!(
            (per_record.records_per_pass, per_record.batches_per_pass),
            (4, 2)
        );
    }
}

#[test]
fn batch_size_one_prepares_record_by_record_with_each_its_own_batch() {
    let (result, log) = run_logged(
        "target: {name: t}\ndata_source: {name: dummy, record_count: 2, include_image: false}\nbatch_size: 1",
        Logging::default(),
    );
    let outcome = result.unwrap();
    assert_eq!(log[..2], ["prepare dummy-0", "prepare dummy-1"]);
    assert_eq!((outcome.calls.prepare, outcome.calls.prepare_batch), (2, 0));
    assert_eq!(outcome.record_batches, [0, 1]);
    assert_eq!(outcome.output_summaries[1].batch, 1);
    assert!(outcome.output_summaries[1].record_ids.is_empty());
    assert_eq!(outcome.timings.per_record.unwrap().batch_size, 1);
}

#[test]
fn a_failed_batch_names_the_batch_and_its_first_record() {
    let target = Logging {
        fail_run_on: Some("dummy-2+dummy-3".to_owned()),
        ..Logging::default()
    };
    let (result, _) = run_logged(&five_in_twos(""), target);
    let error = result.unwrap_err();
    assert_eq!(
        (error.phase, error.pass, error.batch),
        (Phase::Run, Pass::Warmup(0), Some(1))
    );
    assert_eq!(error.record_id.as_deref(), Some("dummy-2"));
    assert_eq!(
        error.to_string(),
        "run failed on batch 1 (from record `dummy-2`) (warmup pass 0): run exploded"
    );
}

#[test]
fn the_default_prepare_batch_refuses_naming_the_method() {
    let error = run_target(&plan(&five_in_twos("")), || Ok(OneByOne)).unwrap_err();
    assert_eq!((error.phase, error.pass), (Phase::Prepare, Pass::Setup));
    let refusal = error
        .source
        .downcast_ref::<BatchesUnsupported>()
        .expect("the default's error");
    assert!(refusal.type_name.ends_with("OneByOne"), "{refusal:?}");
    assert!(
        error.source.to_string().ends_with(
            "OneByOne` does not take batches: implement `prepare_batch` in its `ProfileTarget` impl to run it with `workload.batch_size` > 1"
        ),
        "{}",
        error.source
    );
}
