//! The libtorch targets, run through the runner on the dummy source.
#![cfg(feature = "tch")]

use std::path::{Path, PathBuf};
use std::process::Command;

use profiling_core::data;
use profiling_core::driver::config::{ConfigFile, Overrides};
use profiling_core::driver::runner::{run_target, Phase, Records, RunOutcome, RunPlan};
use profiling_core::prelude::*;
use profiling_examples::tensor_targets::{load_torchscript, SmokeTensor, TinyCnn, TorchScript};
use serde_yaml::Value;

fn plan(yaml: &str) -> RunPlan {
    let config = ConfigFile::parse(yaml, None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    let source = data::build(&config.data_source.name, &config.data_source.parameters).unwrap();
    RunPlan::new(config, Records::Eager(source.read_all().unwrap()))
}

fn summary_values(outcome: &RunOutcome, key: &str) -> Vec<Value> {
    outcome
        .output_summaries
        .iter()
        .map(|s| s.summary[key].clone())
        .collect()
}

#[test]
fn smoke_tensor_gives_the_reference_sums() {
    let plan = plan("target: {name: smoke-tensor}\ndata_source: {name: dummy, record_count: 2}\nwarmup: 1\niterations: 2");
    let outcome = run_target(&plan, || Ok(SmokeTensor)).unwrap();
    assert_eq!(
        summary_values(&outcome, "sum"),
        [Value::from(240.0), Value::from(272.0)]
    );
    assert_eq!(
        summary_values(&outcome, "dtype"),
        [Value::from("float32"), Value::from("float32")]
    );
    assert_eq!(
        outcome.output_summaries[0].summary["shape"],
        Value::Sequence(vec![Value::from(4)])
    );
}

#[test]
fn smoke_tensor_uses_ones_without_a_tensor() {
    let mut target = SmokeTensor;
    let prepared = target.prepare(&DataRecord::default(), Device::Cpu).unwrap();
    assert_eq!(prepared.size(), [4, 4]);
    let output = target.run(&prepared).unwrap();
    assert_eq!(Vec::<f32>::try_from(&output).unwrap(), [8.0, 8.0, 8.0, 8.0]);
}

#[test]
fn smoke_tensor_refuses_a_scalar() {
    let error = SmokeTensor
        .validate(&tch::Tensor::from(3.0f32))
        .unwrap_err();
    assert_eq!(error.to_string(), "smoke-tensor produced a scalar");
}

fn tiny_cnn_checksum(seed: u64) -> f64 {
    profiling_core::random::seed_run(Some(seed));
    let plan = plan("target: {name: tiny-cnn}\ndata_source: {name: dummy, record_count: 1}\nwarmup: 1\niterations: 1");
    let outcome = run_target(&plan, || Ok(TinyCnn::default())).unwrap();
    let summary = &outcome.output_summaries[0].summary;
    assert_eq!(
        summary["shape"],
        Value::Sequence(vec![Value::from(1), Value::from(10)])
    );
    summary["checksum"].as_f64().unwrap()
}

/// `tiny-cnn` on three dummy records with the weights of `seed`, in
/// batches of `batch_size`.
fn tiny_cnn_outcome(seed: u64, batch_size: u32) -> RunOutcome {
    profiling_core::random::seed_run(Some(seed));
    let plan = plan(&format!("target: {{name: tiny-cnn}}\ndata_source: {{name: dummy, record_count: 3}}\nwarmup: 1\niterations: 1\nbatch_size: {batch_size}"));
    run_target(&plan, || Ok(TinyCnn::default())).unwrap()
}

// One test: libtorch's generator is process-wide.
#[test]
fn tiny_cnn_checksum_follows_the_seed() {
    let first = tiny_cnn_checksum(7);
    assert_eq!(tiny_cnn_checksum(7), first);
    assert_ne!(tiny_cnn_checksum(8), first);

    // A batch of three is one [3, 3, 64, 64] input: the logits of each
    // image as one by one.
    let one_by_one = tiny_cnn_outcome(7, 1);
    let batched = tiny_cnn_outcome(7, 3);
    assert_eq!((batched.calls.prepare_batch, batched.calls.prepare), (1, 0));
    assert_eq!(batched.output_summaries.len(), 1);
    let summary = &batched.output_summaries[0].summary;
    assert_eq!(
        summary["shape"],
        Value::Sequence(vec![Value::from(3), Value::from(10)])
    );
    assert_eq!(
        summary["top_class"],
        Value::Sequence(summary_values(&one_by_one, "top_class"))
    );
    let separate: f64 = summary_values(&one_by_one, "checksum")
        .iter()
        .map(|v| v.as_f64().unwrap())
        .sum();
    let together = summary["checksum"].as_f64().unwrap();
    assert!(
        (together - separate).abs() < 1e-4 * separate.abs().max(1.0),
        "{together} against {separate}"
    );
    profiling_core::random::seed_run(None);
}

fn python() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python")
}

/// Writes the tiny TorchScript module with `.venv`'s torch.
fn tiny_module(dir: &Path) -> PathBuf {
    let module = dir.join("tiny_module.pt");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("torchscript/make_tiny_module.py");
    let output = Command::new(python())
        .arg("-W")
        .arg("ignore")
        .arg(&script)
        .arg(&module)
        .output()
        .expect("scripts/setup-libtorch installs .venv's python");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    module
}

#[test]
fn torchscript_runs_the_module_named_in_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let module = tiny_module(dir.path());
    let plan = plan(&format!(
        "target: {{name: torchscript, parameters: {{module: {}, input_size: 32}}}}\ndata_source: {{name: dummy, record_count: 2}}",
        module.display()
    ));
    let outcome = run_target::<TorchScript, _>(&plan, load_torchscript).unwrap();
    let shapes = summary_values(&outcome, "shape");
    assert_eq!(
        shapes[0],
        Value::Sequence(vec![Value::from(1), Value::from(4)])
    );
    let checksums = summary_values(&outcome, "checksum");
    assert_ne!(
        checksums[0], checksums[1],
        "two different images give two outputs"
    );
}

#[test]
fn torchscript_takes_a_batch_as_one_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let module = tiny_module(dir.path());
    let run = |batch_size: u32| {
        let plan = plan(&format!(
            "target: {{name: torchscript, parameters: {{module: {}, input_size: 32}}}}\ndata_source: {{name: dummy, record_count: 3}}\nbatch_size: {batch_size}",
            module.display()
        ));
        run_target::<TorchScript, _>(&plan, load_torchscript).unwrap()
    };
    let (one_by_one, batched) = (run(1), run(2));
    // Batches of two: [dummy-0, dummy-1], then [dummy-2] alone.
    assert_eq!(batched.calls.prepare_batch, 2);
    assert_eq!(
        summary_values(&batched, "shape"),
        [
            Value::Sequence(vec![Value::from(2), Value::from(4)]),
            Value::Sequence(vec![Value::from(1), Value::from(4)])
        ]
    );
    let checksums = |outcome: &RunOutcome| -> Vec<f64> {
        summary_values(outcome, "checksum")
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let (separate, together) = (checksums(&one_by_one), checksums(&batched));
    assert!(
        (together[0] - (separate[0] + separate[1])).abs() < 1e-4,
        "{together:?} against {separate:?}"
    );
    assert!((together[1] - separate[2]).abs() < 1e-4);
}

#[test]
fn torchscript_names_a_missing_module() {
    let plan = plan("target: {name: torchscript, parameters: {module: /no/such/model.pt}}");
    let error = run_target::<TorchScript, _>(&plan, load_torchscript).unwrap_err();
    assert_eq!(error.phase, Phase::Construct);
    assert!(
        error.source.to_string().starts_with(
            "target.parameters.module: cannot load TorchScript module /no/such/model.pt"
        ),
        "{}",
        error.source
    );
    let plan = self::plan("target: {name: torchscript}");
    let error = run_target::<TorchScript, _>(&plan, load_torchscript).unwrap_err();
    assert_eq!(
        error.source.to_string(),
        "target.parameters: missing field `module`"
    );
}
