//! `run` with batches (`workload.batch_size`, `--batch-size`,
//! `workload.last_batch`), end to end and in-process, on `batch-spin`, a
//! busy-waiting target whose call time is proportional to its batch: the
//! time per call follows the batch size and the time per record does not,
//! `prepare_batch` runs once per batch, the manifest lists every record
//! with its batch and gives time per record, and bad batches are refused
//! before anything runs.
//!
//! The runs are one at a time (a lock), so that the timed ones do not
//! share this machine's cores with the others.

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use profiling_core::prelude::*;
use serde_yaml::Value;

mod common;

#[path = "common/batch_spin.rs"]
mod batch_spin;

use common::cli;

/// One record per call: its impl keeps the default `prepare_batch`.
#[derive(Default)]
struct Single;

#[profile_target(name = "batch-single")]
impl ProfileTarget for Single {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Writes a target's methods: what `#[profile_target]` cannot see into.
macro_rules! one_record_methods {
    () => {
        type Prepared = ();
        type Output = ();
        fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
            Ok(())
        }
        fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
            Ok(())
        }
    };
}

/// One record per call too, with methods a macro writes: taken to take
/// batches until the default `prepare_batch` refuses.
#[derive(Default)]
struct MacroWritten;

#[profile_target(name = "batch-macro-written")]
impl ProfileTarget for MacroWritten {
    one_record_methods!();
}

/// One run at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Writes `out/NAME.yaml`: `batch-spin` (unless `extra` names the target)
/// on `records` dummy records (no image), then `extra` lines.
fn config(out: &Path, name: &str, records: u32, extra: &str) -> String {
    let path = out.join(format!("{name}.yaml"));
    let target = match extra.contains("target:") {
        true => "",
        false => "target: {name: batch-spin}\n",
    };
    std::fs::write(
        &path,
        format!(
            "{target}data_source: {{name: dummy, record_count: {records}, include_image: false}}\n{extra}"
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_owned()
}

/// `run --config CONFIG --output-dir OUT/runs --run-id RUN_ID EXTRA...`;
/// the run's manifest.
fn run(out: &Path, config: &str, run_id: &str, extra: &[&str]) -> Value {
    let runs = out.join("runs");
    let runs = runs.to_str().unwrap();
    let mut args = vec![
        "run",
        "--config",
        config,
        "--output-dir",
        runs,
        "--run-id",
        run_id,
    ];
    args.extend_from_slice(extra);
    let outcome = cli(&args);
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    let manifest = out
        .join("runs/batch-spin/runs")
        .join(run_id)
        .join("manifest.yaml");
    serde_yaml::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap()
}

fn u64_at(value: &Value) -> u64 {
    value
        .as_u64()
        .unwrap_or_else(|| panic!("not a count: {value:?}"))
}

fn f64_at(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {value:?}"))
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_sequence()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

fn counts(value: &Value) -> Vec<u64> {
    value.as_sequence().unwrap().iter().map(u64_at).collect()
}

/// Within `tolerance` of `expected`, relatively.
fn assert_close(what: &str, actual: f64, expected: f64, tolerance: f64) {
    let error = (actual / expected - 1.0).abs();
    assert!(
        error <= tolerance,
        "{what}: {actual:.0} against {expected:.0}, off by {:.1} % (at most {:.1} %)",
        error * 100.0,
        tolerance * 100.0
    );
}

#[test]
fn the_call_grows_with_the_batch_and_the_time_per_record_does_not() {
    let _serial = serial();
    let out = tempfile::tempdir().unwrap();
    // 8 records of 200 µs each: one call of 1.6 ms at batch size 8.
    let config = config(
        out.path(),
        "spin",
        8,
        "target: {name: batch-spin, parameters: {per_record_us: 200}}\nwarmup: 3\niterations: 40\n",
    );
    let sizes = [1u64, 2, 4];
    let manifests: Vec<Value> = sizes
        .iter()
        .map(|size| {
            let size = size.to_string();
            run(
                out.path(),
                &config,
                &format!("b{size}"),
                &["--batch-size", &size],
            )
        })
        .collect();
    let call_median = |m: &Value| f64_at(&m["timings"]["runs"]["p50_ns"]);
    let per_record = |m: &Value| f64_at(&m["timings"]["per_record"]["call"]["time_per_record_ns"]);
    let base_call = call_median(&manifests[0]);
    let base_record = per_record(&manifests[0]);
    // 200 µs a record, and the runner's own few hundred nanoseconds.
    assert_close("the call at batch size 1", base_call, 200_000.0, 0.05);
    for (size, manifest) in sizes.iter().zip(&manifests) {
        let size_f = *size as f64;
        assert_close(
            &format!("the median call at batch size {size}"),
            call_median(manifest),
            base_call * size_f,
            0.05,
        );
        assert_close(
            &format!("the time per record at batch size {size}"),
            per_record(manifest),
            base_record,
            0.05,
        );
        assert_close(
            &format!("the pass's time per record at batch size {size}"),
            f64_at(&manifest["timings"]["per_record"]["pass"]["time_per_record_ns"]),
            f64_at(&manifests[0]["timings"]["per_record"]["pass"]["time_per_record_ns"]),
            0.05,
        );
        // `prepare_batch` once per batch (before the passes), as the
        // runner and the target itself count it; `prepare` at size 1.
        let batches = 8 / size;
        let calls = &manifest["calls"];
        let summary = &manifest["output_summaries"][0]["summary"];
        if *size == 1 {
            assert_eq!(
                (u64_at(&calls["prepare"]), u64_at(&calls["prepare_batch"])),
                (8, 0)
            );
            assert_eq!(
                (
                    u64_at(&summary["prepare_calls"]),
                    u64_at(&summary["prepare_batch_calls"])
                ),
                (8, 0)
            );
        } else {
            assert_eq!(
                (u64_at(&calls["prepare"]), u64_at(&calls["prepare_batch"])),
                (0, batches)
            );
            assert_eq!(
                (
                    u64_at(&summary["prepare_calls"]),
                    u64_at(&summary["prepare_batch_calls"])
                ),
                (0, batches)
            );
        }
        assert_eq!(u64_at(&calls["run"]), 43 * batches, "batch size {size}");
        assert_eq!(u64_at(&manifest["timings"]["runs"]["count"]), 40 * batches);
        assert_eq!(u64_at(&summary["records"]), *size);
        assert_eq!(u64_at(&manifest["workload"]["batch_size"]), *size);
    }
}

#[test]
fn with_profile_prepare_each_batch_is_prepared_in_every_pass() {
    let _serial = serial();
    let out = tempfile::tempdir().unwrap();
    let config = config(
        out.path(),
        "prepared",
        6,
        "target: {name: batch-spin, profile_prepare: true, parameters: {per_record_us: 1}}\nwarmup: 2\niterations: 3\nbatch_size: 3\n",
    );
    let manifest = run(out.path(), &config, "pp", &[]);
    // Two batches in each of five passes.
    assert_eq!(u64_at(&manifest["calls"]["prepare_batch"]), 10);
    assert_eq!(
        u64_at(&manifest["output_summaries"][1]["summary"]["prepare_batch_calls"]),
        10
    );
}

#[test]
fn a_short_last_batch_is_kept_or_dropped() {
    let _serial = serial();
    let out = tempfile::tempdir().unwrap();
    let ids = |n: usize| -> Vec<String> { (0..n).map(|i| format!("dummy-{i}")).collect() };

    let keep = config(
        out.path(),
        "keep",
        10,
        "target: {name: batch-spin, parameters: {per_record_us: 1}}\nworkload: {batch_size: 4}\n",
    );
    let manifest = run(out.path(), &keep, "keep", &[]);
    assert_eq!(manifest["workload"]["last_batch"], "keep");
    assert_eq!(strings(&manifest["record_ids"]), ids(10));
    assert_eq!(
        counts(&manifest["record_batches"]),
        [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    );
    let summaries = manifest["output_summaries"].as_sequence().unwrap();
    assert_eq!(summaries.len(), 3);
    assert_eq!(u64_at(&summaries[2]["batch"]), 2);
    assert_eq!(summaries[2]["record_id"], "dummy-8");
    assert_eq!(strings(&summaries[2]["record_ids"]), ["dummy-8", "dummy-9"]);
    assert_eq!(u64_at(&summaries[2]["summary"]["records"]), 2);
    let per_record = &manifest["timings"]["per_record"];
    assert_eq!(
        (
            u64_at(&per_record["records_per_pass"]),
            u64_at(&per_record["batches_per_pass"])
        ),
        (10, 3)
    );

    let drop = config(out.path(), "drop", 10, "target: {name: batch-spin, parameters: {per_record_us: 1}}\nworkload: {batch_size: 4, last_batch: drop}\n");
    let manifest = run(out.path(), &drop, "drop", &[]);
    assert_eq!(manifest["workload"]["last_batch"], "drop");
    assert_eq!(strings(&manifest["record_ids"]), ids(8));
    assert_eq!(
        counts(&manifest["record_batches"]),
        [0, 0, 0, 0, 1, 1, 1, 1]
    );
    assert_eq!(manifest["output_summaries"].as_sequence().unwrap().len(), 2);
    assert_eq!(u64_at(&manifest["calls"]["prepare_batch"]), 2);
    let per_record = &manifest["timings"]["per_record"];
    assert_eq!(
        (
            u64_at(&per_record["records_per_pass"]),
            u64_at(&per_record["batches_per_pass"])
        ),
        (8, 2)
    );
}

#[test]
fn the_manifest_gives_time_per_record_from_the_medians() {
    let _serial = serial();
    let out = tempfile::tempdir().unwrap();
    let config = config(out.path(), "figures", 10, "target: {name: batch-spin, parameters: {per_record_us: 20}}\nwarmup: 1\niterations: 5\nbatch_size: 4\n");
    let manifest = run(out.path(), &config, "figures", &[]);
    let timings = &manifest["timings"];
    let per_record = &timings["per_record"];
    assert_eq!(u64_at(&per_record["batch_size"]), 4);
    let pass = f64_at(&timings["iterations"]["p50_ns"]) / 10.0;
    assert_eq!(f64_at(&per_record["pass"]["time_per_record_ns"]), pass);
    assert_eq!(
        f64_at(&per_record["pass"]["records_per_second"]),
        1e9 / pass
    );
    // 10 records in 3 calls.
    let call = f64_at(&timings["runs"]["p50_ns"]) / (10.0 / 3.0);
    assert_eq!(f64_at(&per_record["call"]["time_per_record_ns"]), call);
    assert_eq!(
        f64_at(&per_record["call"]["records_per_second"]),
        1e9 / call
    );
    let ranges = timings["ranges"].as_sequence().unwrap();
    let figures = per_record["ranges"].as_sequence().unwrap();
    assert_eq!(figures.len(), ranges.len());
    for (range, figure) in ranges.iter().zip(figures) {
        assert_eq!(figure["name"], range["name"]);
        let per_pass = f64_at(&range["count"]) / 5.0;
        let expected = f64_at(&range["inclusive"]["p50_ns"]) * per_pass / 10.0;
        assert_eq!(
            f64_at(&figure["time_per_record_ns"]),
            expected,
            "{:?}",
            range["name"]
        );
        assert_eq!(f64_at(&figure["records_per_second"]), 1e9 / expected);
    }
    // `work`: three calls a pass, 20 µs per record.
    let work = figures.iter().find(|f| f["name"] == "work").unwrap();
    assert_close(
        "work per record",
        f64_at(&work["time_per_record_ns"]),
        20_000.0,
        0.25,
    );

    // With batch size 1 too: a call per record.
    let manifest = run(out.path(), &config, "single", &["--batch-size", "1"]);
    let per_record = &manifest["timings"]["per_record"];
    assert_eq!(
        (
            u64_at(&per_record["batch_size"]),
            u64_at(&per_record["records_per_pass"]),
            u64_at(&per_record["batches_per_pass"])
        ),
        (1, 10, 10)
    );
    assert_eq!(
        f64_at(&per_record["call"]["time_per_record_ns"]),
        f64_at(&manifest["timings"]["runs"]["p50_ns"])
    );
}

#[test]
fn the_summary_gives_time_per_record_with_batches() {
    let _serial = serial();
    let out = tempfile::tempdir().unwrap();
    let config = config(
        out.path(),
        "summary",
        6,
        "target: {name: batch-spin, parameters: {per_record_us: 50}}\n",
    );
    let runs = out.path().join("runs");
    let runs = runs.to_str().unwrap();
    let batched = cli(&[
        "run",
        "--config",
        &config,
        "--output-dir",
        runs,
        "--run-id",
        "b",
        "--batch-size",
        "3",
    ]);
    assert_eq!(batched.code, 0, "{}", batched.stderr);
    let line = |stdout: &str, prefix: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(prefix))
            .map(str::to_owned)
    };
    let passes = line(&batched.stdout, "passes: ").unwrap();
    assert!(
        passes.starts_with("passes: 1 measured pass of 6 records in 2 batches of 3, median "),
        "{passes}"
    );
    let calls = line(&batched.stdout, "calls:  ").unwrap();
    assert!(
        calls.starts_with("calls:  2 target calls (one per batch), median "),
        "{calls}"
    );
    let records = line(&batched.stdout, "records: ").unwrap();
    assert!(
        records.contains(" per record (")
            && records.contains(" records/s) from the median pass, ")
            && records.ends_with(" records/s) from the median call"),
        "{records}"
    );
    let work = line(&batched.stdout, "  work").unwrap();
    assert!(work.contains(" per record"), "{work}");
    assert!(
        batched.stdout.starts_with("running `batch-spin`"),
        "{}",
        batched.stdout
    );
    assert!(batched
        .stdout
        .lines()
        .next()
        .unwrap()
        .contains(", batches of 3 (last batch: keep), "));

    let single = cli(&[
        "run",
        "--config",
        &config,
        "--output-dir",
        runs,
        "--run-id",
        "s",
    ]);
    assert_eq!(single.code, 0, "{}", single.stderr);
    assert_eq!(line(&single.stdout, "records: "), None);
    assert!(!single.stdout.contains("per record"), "{}", single.stdout);
}

/// Exit 2, one `error:` line on stderr, and nothing under `out`.
fn assert_refused(args: &[&str], out: &Path, message: &str) {
    let outcome = cli(args);
    assert_eq!(outcome.code, 2, "{}\n{}", outcome.stdout, outcome.stderr);
    assert_eq!(outcome.stderr, format!("error: {message}\n"));
    assert!(!out.exists(), "{} was written", out.display());
}

#[test]
fn a_batch_size_of_zero_is_refused_naming_the_key_or_the_option() {
    let _serial = serial();
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("runs");
    let config = config(scratch.path(), "zero", 4, "workload: {batch_size: 0}\n");
    assert_refused(
        &[
            "run",
            "--config",
            &config,
            "--output-dir",
            out.to_str().unwrap(),
        ],
        &out,
        &format!(
            "{config}: workload.batch_size: must be >= 1, got 0: a batch holds at least one record"
        ),
    );
    assert_refused(
        &[
            "run",
            "batch-spin",
            "--batch-size",
            "0",
            "--output-dir",
            out.to_str().unwrap(),
        ],
        &out,
        "command line: --batch-size: must be >= 1, got 0: a batch holds at least one record",
    );
}

#[test]
fn dropping_the_last_batch_of_too_few_records_is_refused() {
    let _serial = serial();
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("runs");
    let config = config(
        scratch.path(),
        "few",
        3,
        "workload: {batch_size: 4, last_batch: drop}\n",
    );
    assert_refused(
        &["run", "--config", &config, "--output-dir", out.to_str().unwrap()],
        &out,
        &format!("{config}: workload.last_batch: `drop` leaves no batch: the data source has 3 record(s), fewer than workload.batch_size 4; use `keep`, a batch_size of at most 3, or more records"),
    );
}

#[test]
fn batches_for_a_target_without_prepare_batch_are_refused_before_anything_runs() {
    let _serial = serial();
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("runs");
    let line = line_of("impl ProfileTarget for Single {");
    let message = format!(
        "target `batch-single` does not take batches (batch_size 2): implement `prepare_batch` in its `ProfileTarget` impl (`Single`, profiling-cli/tests/batches.rs:{line}) to run it with `workload.batch_size` > 1"
    );
    let out_dir = out.to_str().unwrap();
    assert_refused(
        &[
            "run",
            "batch-single",
            "--batch-size",
            "2",
            "--output-dir",
            out_dir,
        ],
        &out,
        &message,
    );
    let config = scratch.path().join("single.yaml");
    std::fs::write(
        &config,
        "target: {name: batch-single}\nworkload: {batch_size: 2}\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();
    assert_refused(
        &["run", "--config", config, "--output-dir", out_dir],
        &out,
        &message,
    );
    // Nor is a command printed for it.
    assert_refused(
        &[
            "run",
            "--config",
            config,
            "--output-dir",
            out_dir,
            "--print-nsys-command",
        ],
        &out,
        &message,
    );
    let json = cli(&["run", "--config", config, "--output-dir", out_dir, "--json"]);
    assert_eq!(json.code, 2);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(document["status"], "refused");
    assert_eq!(document["error"], message.as_str());
    assert!(!out.exists());
    // With batch size 1 it runs.
    let outcome = cli(&["run", "batch-single", "--output-dir", out_dir]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
}

#[test]
fn a_target_whose_methods_a_macro_writes_is_refused_when_the_default_refuses() {
    let _serial = serial();
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("runs");
    let line = line_of("impl ProfileTarget for MacroWritten {");
    // Before the passes, in a warmup pass, and read lazily in one.
    for (profile_prepare, loading) in [(false, "eager"), (true, "eager"), (true, "lazy")] {
        let config = scratch.path().join("macro.yaml");
        std::fs::write(
            &config,
            format!("target: {{name: batch-macro-written, profile_prepare: {profile_prepare}}}\nworkload: {{batch_size: 2, record_loading: {loading}}}\ndata_source: {{name: dummy, record_count: 4}}\n"),
        )
        .unwrap();
        let args = [
            "run",
            "--config",
            config.to_str().unwrap(),
            "--output-dir",
            out.to_str().unwrap(),
        ];
        assert_refused(
            &args,
            &out,
            &format!("target `batch-macro-written` does not take batches (batch_size 2): implement `prepare_batch` in its `ProfileTarget` impl (`MacroWritten`, profiling-cli/tests/batches.rs:{line}) to run it with `workload.batch_size` > 1"),
        );
    }
}

/// The line of `text` in this file, 1-based.
fn line_of(text: &str) -> usize {
    include_str!("batches.rs")
        .lines()
        .position(|line| line.starts_with(text))
        .unwrap_or_else(|| panic!("no line `{text}`"))
        + 1
}

/// The built binary, with the examples linked in: `detection-postprocess`
/// in batches of four.
#[test]
fn detection_postprocess_runs_in_batches() {
    let _serial = serial();
    let scratch = tempfile::tempdir().unwrap();
    let config = scratch.path().join("postprocess.yaml");
    std::fs::write(
        &config,
        "target: {name: detection-postprocess}\ndata_source: {name: dummy, record_count: 6}\nwarmup: 1\niterations: 2\nseed: 0\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_profile-cli"))
        .args(["run", "--config", config.to_str().unwrap(), "--output-dir"])
        .arg(scratch.path().join("runs"))
        .args(["--run-id", "b4", "--batch-size", "4", "--no-report"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let manifest: Value = serde_yaml::from_str(
        &std::fs::read_to_string(
            scratch
                .path()
                .join("runs/detection-postprocess/runs/b4/manifest.yaml"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(u64_at(&manifest["calls"]["prepare_batch"]), 2);
    assert_eq!(counts(&manifest["record_batches"]), [0, 0, 0, 0, 1, 1]);
    let summaries = manifest["output_summaries"].as_sequence().unwrap();
    // One list entry per image of the batch.
    let images = |summary: &Value| {
        summary["summary"]["detections"]
            .as_sequence()
            .unwrap()
            .len()
    };
    assert_eq!((images(&summaries[0]), images(&summaries[1])), (4, 2));
    // The range of each image's postprocessing: four and two a call.
    let ranges = manifest["timings"]["ranges"].as_sequence().unwrap();
    let postprocess = ranges
        .iter()
        .find(|r| r["name"] == "postprocess_detections")
        .unwrap();
    assert_eq!(u64_at(&postprocess["count"]), 12);
}
