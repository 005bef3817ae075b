//! `profile-cli sweep`, in-process, on a busy-waiting target whose range
//! time comes from `target.parameters`: the grid's medians in proportion,
//! in sweep.yaml, in `--json` and in the table; a stop after a point and
//! `--resume`; every bad input refused before anything is written.
//!
//! One test at a time (a lock): the timed sweeps must not share the cores,
//! and the stop test raises the process's interrupt flag.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use profiling_core::prelude::*;

#[path = "common/batch_spin.rs"]
mod batch_spin;
mod common;

use common::cli;

/// Busy-waits `work_us` in the range `work`, and 20 µs in `fixed`. With
/// `log`, appends `work_us` to that file when built (once per point); with
/// `stop_at: work_us`, raises the interrupt flag in its calls, as Ctrl-C
/// would; with `fail_on: work_us`, fails.
struct Spin {
    work: Duration,
    stop: bool,
    fail: bool,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SpinParameters {
    work_us: u64,
    #[serde(default)]
    log: Option<PathBuf>,
    #[serde(default)]
    stop_at: Option<u64>,
    #[serde(default)]
    fail_on: Option<u64>,
}

fn spin_target() -> anyhow::Result<Spin> {
    let parameters: SpinParameters = profiling_core::target::parameters()?;
    if let Some(log) = &parameters.log {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?;
        writeln!(file, "{}", parameters.work_us)?;
    }
    Ok(Spin {
        work: Duration::from_micros(parameters.work_us),
        stop: parameters.stop_at == Some(parameters.work_us),
        fail: parameters.fail_on == Some(parameters.work_us),
    })
}

fn spin_for(duration: Duration) {
    let started = Instant::now();
    while started.elapsed() < duration {
        std::hint::spin_loop();
    }
}

#[profile_target(name = "sweep-spin", factory = spin_target)]
impl ProfileTarget for Spin {
    type Prepared = ();
    type Output = ();

    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }

    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        if self.stop {
            profiling_core::driver::interrupt::simulate(2);
        }
        if self.fail {
            anyhow::bail!("asked to fail at {} µs", self.work.as_micros());
        }
        {
            let _range = profiling_range("work");
            spin_for(self.work);
        }
        let _range = profiling_range("fixed");
        spin_for(Duration::from_micros(20));
        Ok(())
    }
}

/// One sweep at a time.
static ONE: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A config of `sweep-spin` with `parameters`, as `out/sweep.yaml`.
fn config(out: &Path, parameters: &str, passes: u32) -> String {
    let path = out.join("spin.yaml");
    std::fs::write(
        &path,
        format!(
            "target: {{name: sweep-spin, parameters: {{{parameters}}}}}\n\
             data_source: {{name: dummy, record_count: 2}}\nwarmup: 2\niterations: {passes}\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

fn sweep(out: &Path, config: &str, extra: &[&str]) -> common::Outcome {
    let out_dir = out.display().to_string();
    let mut args = vec!["sweep", "--config", config, "--output-dir", &out_dir];
    args.extend_from_slice(extra);
    cli(&args)
}

fn sweep_dir(out: &Path, id: &str) -> PathBuf {
    out.join("sweep-spin/runs").join(id)
}

fn read_yaml(path: &Path) -> serde_yaml::Value {
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The median of range `name` at each point.
fn range_medians(document: &serde_json::Value, name: &str) -> Vec<f64> {
    document["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|point| {
            point["ranges"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["name"] == name)
                .unwrap_or_else(|| panic!("no range {name} in {point}"))["median_ns"]
                .as_f64()
                .unwrap()
        })
        .collect()
}

fn assert_in_proportion(medians: &[f64], factors: &[f64], what: &str) {
    for (median, factor) in medians.iter().zip(factors) {
        let ratio = median / medians[0] / factor;
        assert!(
            (ratio - 1.0).abs() <= 0.05,
            "{what}: {medians:?} not in proportion {factors:?} (off by {:.1} %)",
            (ratio - 1.0) * 100.0
        );
    }
}

#[test]
fn range_medians_follow_the_swept_parameter() {
    let _one = lock();
    let out = tempfile::tempdir().unwrap();
    let config = config(out.path(), "work_us: 100", 30);
    let outcome = sweep(
        out.path(),
        &config,
        &[
            "--set",
            "target.parameters.work_us=400,800,1600",
            "--sweep-id",
            "s",
            "--json",
        ],
    );
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    let json: serde_json::Value = serde_json::from_str(outcome.stdout.trim()).unwrap();
    assert_eq!(json["status"], "completed");
    assert_in_proportion(&range_medians(&json, "work"), &[1.0, 2.0, 4.0], "--json");
    // Each point went into the history store beside the runs, a config
    // of its own.
    let store = rusqlite::Connection::open(out.path().join("history.sqlite")).unwrap();
    let kinds: Vec<(String, i64)> = store
        .prepare("SELECT kind, COUNT(DISTINCT config) FROM runs GROUP BY kind")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(kinds, [("sweep-point".to_owned(), 3)]);

    // sweep.yaml says the same, with intervals around the medians.
    let dir = sweep_dir(out.path(), "s");
    let yaml = read_yaml(&dir.join("sweep.yaml"));
    let yaml: serde_json::Value = serde_json::to_value(&yaml).unwrap();
    // Fractions to twelve significant digits: one text parser may read the
    // last bit of a double differently from the other.
    assert_eq!(
        fractions_rounded(&yaml["points"]),
        fractions_rounded(&json["points"])
    );
    assert_eq!(yaml["grid"][0]["key"], "target.parameters.work_us");
    for point in yaml["points"].as_array().unwrap() {
        assert_eq!(point["status"], "completed");
        let pass = &point["pass"];
        assert!(pass["low_ns"].as_u64() <= pass["median_ns"].as_u64());
        assert!(pass["median_ns"].as_u64() <= pass["high_ns"].as_u64());
        assert_eq!(pass["samples"], 30);
        assert_eq!(point["records_per_pass"], 2);
        // Time per record is the pass median over the pass's two records;
        // each range opened twice a pass, once per record.
        let per_record = point["time_per_record_ns"].as_f64().unwrap();
        assert_eq!(per_record, pass["median_ns"].as_f64().unwrap() / 2.0);
        let work = &point["ranges"][0];
        assert_eq!(work["name"], "work");
        assert_eq!(work["calls_per_pass"], 2.0);
        assert_eq!(
            work["time_per_record_ns"],
            work["median_ns"].as_f64().unwrap()
        );
    }

    // Each point is an ordinary run, its values in its manifest.
    let names: Vec<&str> = yaml["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["point"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["00-work_us-400", "01-work_us-800", "02-work_us-1600"]
    );
    let manifest = read_yaml(&dir.join(names[1]).join("manifest.yaml"));
    assert_eq!(manifest["status"], "completed");
    assert_eq!(manifest["target"]["parameters"]["work_us"], 800);
    assert_eq!(manifest["sweep"]["id"], "s");
    assert_eq!(manifest["sweep"]["index"], 1);
    assert_eq!(
        manifest["sweep"]["values"]["target.parameters.work_us"],
        800
    );
    assert!(dir.join(names[1]).join("samples.bin").is_file());

    // The table (on stderr with --json): a row per point, in proportion.
    let rows: Vec<&str> = outcome
        .stderr
        .lines()
        .skip_while(|l| !l.starts_with("target.parameters.work_us"))
        .take(4)
        .collect();
    assert_eq!(rows.len(), 4, "{}", outcome.stderr);
    assert!(
        rows[0].contains("work") && rows[0].contains("pass p50"),
        "{}",
        rows[0]
    );
    let table: Vec<f64> = rows[1..]
        .iter()
        .map(|row| {
            let cells: Vec<&str> = row
                .split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect();
            assert_eq!(cells[1], "completed", "{row}");
            // The `work` column: the first range, after pass and call.
            milliseconds(cells[4])
        })
        .collect();
    assert_in_proportion(&table, &[1.0, 2.0, 4.0], "table");
}

/// `400.12 µs [...]` or `1.60 ms [...]` in ms.
fn milliseconds(cell: &str) -> f64 {
    let mut words = cell.split_whitespace();
    let value: f64 = words.next().unwrap().parse().unwrap();
    match words.next().unwrap() {
        "µs" => value / 1e3,
        "ms" => value,
        "s" => value * 1e3,
        unit => panic!("unit {unit} in {cell}"),
    }
}

#[test]
fn a_stop_after_a_point_then_resume_runs_each_point_once() {
    let _one = lock();
    let out = tempfile::tempdir().unwrap();
    let log = out.path().join("built.log");
    let config = config(
        out.path(),
        &format!("work_us: 50, stop_at: 100, log: '{}'", log.display()),
        5,
    );
    let values = "target.parameters.work_us=50,100,150,200";
    let outcome = sweep(out.path(), &config, &["--set", values, "--sweep-id", "r"]);
    profiling_core::driver::interrupt::reset();
    // SIGINT: the point running finished, the sweep stopped after it.
    assert_eq!(outcome.code, 130, "{}\n{}", outcome.stdout, outcome.stderr);
    assert!(outcome.stderr.contains("--resume r"), "{}", outcome.stderr);
    let dir = sweep_dir(out.path(), "r");
    let statuses = |dir: &Path| -> Vec<String> {
        read_yaml(&dir.join("sweep.yaml"))["points"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|p| p["status"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        statuses(&dir),
        ["completed", "completed", "pending", "pending"]
    );
    assert_eq!(read_yaml(&dir.join("sweep.yaml"))["status"], "interrupted");
    // The stopped point is whole: every pass measured.
    let second = read_yaml(&dir.join("01-work_us-100/manifest.yaml"));
    assert_eq!(second["status"], "completed");
    assert_eq!(second["completed_iterations"], 5);
    let first_started = read_yaml(&dir.join("00-work_us-50/manifest.yaml"))["started_at"].clone();

    let resumed = sweep(out.path(), &config, &["--resume", "r"]);
    assert_eq!(resumed.code, 0, "{}\n{}", resumed.stdout, resumed.stderr);
    assert!(
        resumed.stdout.contains("2 left to run"),
        "{}",
        resumed.stdout
    );
    assert_eq!(statuses(&dir), ["completed"; 4]);
    assert_eq!(read_yaml(&dir.join("sweep.yaml"))["status"], "completed");
    // Each point's target was built once: none ran twice.
    let built = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        built.lines().collect::<Vec<_>>(),
        ["50", "100", "150", "200"]
    );
    assert_eq!(
        read_yaml(&dir.join("00-work_us-50/manifest.yaml"))["started_at"],
        first_started
    );
    // Resumed from another config: refused, nothing run.
    let other = out.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let other_config = self::config(&other, "work_us: 50", 5);
    std::fs::rename(&other_config, out.path().join("other.yaml")).unwrap();
    let other_config = out.path().join("other.yaml").display().to_string();
    let refused = sweep(out.path(), &other_config, &["--resume", "r"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("resume it with the same config"),
        "{}",
        refused.stderr
    );
    // A completed sweep has nothing left.
    let again = sweep(out.path(), &config, &["--resume", "r"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), built);
}

/// Refused with exit 2, the message containing `expected`, and nothing
/// written under `out`.
fn refused(out: &Path, config: &str, args: &[&str], expected: &str) {
    let before = listing(out);
    let outcome = sweep(out, config, args);
    assert_eq!(
        outcome.code, 2,
        "{args:?}: {}\n{}",
        outcome.stdout, outcome.stderr
    );
    assert!(
        outcome.stderr.contains(expected),
        "{args:?}: expected `{expected}` in:\n{}",
        outcome.stderr
    );
    assert_eq!(listing(out), before, "{args:?} wrote something");
}

fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = walk(dir);
    all.sort();
    all
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let _one = lock();
    let out = tempfile::tempdir().unwrap();
    let config = config(out.path(), "work_us: 100", 1);
    let out = out.path();
    refused(
        out,
        &config,
        &["--set", "workload.batchsize=1,2"],
        "--set workload.batchsize: unknown key `workload.batchsize`; did you mean `workload.batch_size`?",
    );
    refused(
        out,
        &config,
        &["--set", "data_source.record_cont=1,2"],
        "did you mean `data_source.record_count`?",
    );
    refused(
        out,
        &config,
        &["--set", "target.parameters.work_us=100,fast"],
        "--set target.parameters.work_us: value `fast` is not of the type of the config's `100`",
    );
    refused(out, &config, &["--set", "warmup=1,-1"], "warmup=-1");
    refused(out, &config, &["--set", "device=cpu,gpu"], "device=gpu");
    refused(
        out,
        &config,
        &["--set", "data_source.image_shape=[8,8,3],[8,8]"],
        "image_shape",
    );
    refused(
        out,
        &config,
        &["--set", "warmup="],
        "--set warmup: the list of values is empty",
    );
    refused(
        out,
        &config,
        &["--set", "warmup=1,2", "--set", "iterations=1,2,3", "--zip"],
        "`warmup` has 2 values, `iterations` has 3",
    );
    let many: Vec<String> = (0..32).map(|i| i.to_string()).collect();
    let (seeds, warmups) = (
        format!("seed={}", many.join(",")),
        format!(
            "iterations={}",
            (1..=32)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
    );
    refused(
        out,
        &config,
        &["--set", &seeds, "--set", &warmups],
        "the grid has 1024 points, more than 1000: give --yes",
    );
    refused(out, &config, &[], "nothing to sweep");
    refused(
        out,
        &config,
        &["--set", "output_dir=a,b"],
        "`output_dir` cannot be swept",
    );
    refused(
        out,
        &config,
        &["--resume", "nope"],
        "--resume nope: no sweep at",
    );
}

#[test]
fn a_failed_point_is_recorded_and_the_sweep_goes_on() {
    let _one = lock();
    let out = tempfile::tempdir().unwrap();
    let config = config(out.path(), "work_us: 10, fail_on: 20", 2);
    let values = "target.parameters.work_us=10,20,30";
    let outcome = sweep(out.path(), &config, &["--set", values, "--sweep-id", "f"]);
    assert_eq!(outcome.code, 1, "{}\n{}", outcome.stdout, outcome.stderr);
    let document = read_yaml(&sweep_dir(out.path(), "f").join("sweep.yaml"));
    let points = document["points"].as_sequence().unwrap();
    let statuses: Vec<&str> = points
        .iter()
        .map(|p| p["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["completed", "failed", "completed"]);
    let error = points[1]["error"].as_str().unwrap();
    assert!(error.contains("asked to fail at 20 µs"), "{error}");
    assert!(
        outcome
            .stdout
            .contains("[2/3] target.parameters.work_us=20: failed:"),
        "{}",
        outcome.stdout
    );
    assert!(
        outcome.stderr.contains("1 of 3 points failed"),
        "{}",
        outcome.stderr
    );

    // --fail-fast stops there: the last point is left pending.
    let outcome = sweep(
        out.path(),
        &config,
        &["--set", values, "--sweep-id", "g", "--fail-fast"],
    );
    assert_eq!(outcome.code, 1, "{}\n{}", outcome.stdout, outcome.stderr);
    let document = read_yaml(&sweep_dir(out.path(), "g").join("sweep.yaml"));
    let statuses: Vec<&str> = document["points"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| p["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["completed", "failed", "pending"]);
    assert_eq!(document["status"], "stopped");
}

#[test]
fn the_configs_sweep_mapping_is_the_grid() {
    let _one = lock();
    let out = tempfile::tempdir().unwrap();
    let path = out.path().join("mapped.yaml");
    std::fs::write(
        &path,
        "target: {name: sweep-spin, parameters: {work_us: 10}}\n\
         data_source: {name: dummy, record_count: 1}\nwarmup: 0\niterations: 2\n\
         sweep:\n  target.parameters.work_us: [10, 20]\n  data_source.record_count: [1, 3]\n  zip: true\n",
    )
    .unwrap();
    let config = path.display().to_string();
    let outcome = sweep(out.path(), &config, &["--sweep-id", "m", "--json"]);
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    let json: serde_json::Value = serde_json::from_str(outcome.stdout.trim()).unwrap();
    assert_eq!(json["zip"], true);
    let records: Vec<u64> = json["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["records_per_pass"].as_u64().unwrap())
        .collect();
    assert_eq!(records, [1, 3]);
    // `report` of the sweep (by PROFILE@SWEEP_ID) writes its page again.
    let copy = out.path().join("copy.html");
    let out_dir = out.path().display().to_string();
    let report = cli(&[
        "report",
        "sweep-spin@m",
        "--output-dir",
        &out_dir,
        "-o",
        &copy.display().to_string(),
    ]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    let written = std::fs::read_to_string(sweep_dir(out.path(), "m").join("sweep.html")).unwrap();
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), written);
    assert!(written.contains("sweep-spin") && written.contains("target.parameters.work_us"));
    // A plain run of the same config ignores `sweep:`.
    let run = cli(&[
        "run",
        "--config",
        &config,
        "--output-dir",
        &out.path().display().to_string(),
        "--run-id",
        "plain",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn a_batch_size_sweep_scales_the_call_and_keeps_time_per_record() {
    let _one = lock();
    let out = tempfile::tempdir().unwrap();
    let path = out.path().join("batched.yaml");
    std::fs::write(
        &path,
        "target: {name: batch-spin, parameters: {per_record_us: 200}}\n\
         data_source: {name: dummy, record_count: 8, include_image: false}\nwarmup: 1\niterations: 20\n",
    )
    .unwrap();
    let config = path.display().to_string();
    let outcome = sweep(
        out.path(),
        &config,
        &[
            "--set",
            "workload.batch_size=1,2,4",
            "--sweep-id",
            "b",
            "--json",
        ],
    );
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    let json: serde_json::Value = serde_json::from_str(outcome.stdout.trim()).unwrap();
    let points = json["points"].as_array().unwrap();
    let batch: Vec<u64> = points
        .iter()
        .map(|p| p["batch_size"].as_u64().unwrap())
        .collect();
    assert_eq!(batch, [1, 2, 4]);
    let calls: Vec<f64> = points
        .iter()
        .map(|p| p["call"]["median_ns"].as_f64().unwrap())
        .collect();
    assert_in_proportion(&calls, &[1.0, 2.0, 4.0], "call medians");
    let per_record: Vec<f64> = points
        .iter()
        .map(|p| p["time_per_record_ns"].as_f64().unwrap())
        .collect();
    assert_in_proportion(&per_record, &[1.0, 1.0, 1.0], "time per record");
    for point in points {
        assert_eq!(point["records_per_pass"], 8);
        let rate = point["records_per_second"].as_f64().unwrap();
        let per = point["time_per_record_ns"].as_f64().unwrap();
        assert!((rate * per / 1e9 - 1.0).abs() < 1e-9, "{point}");
    }
    // prepare_batch once per batch, before the passes, as each point's
    // manifest counts it.
    let dir = out.path().join("batch-spin/runs/b");
    for (point, batch) in points.iter().zip([1u64, 2, 4]) {
        let manifest = read_yaml(
            &dir.join(point["point"].as_str().unwrap())
                .join("manifest.yaml"),
        );
        let (prepare, prepare_batch) = (
            manifest["calls"]["prepare"].as_u64().unwrap(),
            manifest["calls"]["prepare_batch"].as_u64().unwrap(),
        );
        if batch == 1 {
            assert_eq!((prepare, prepare_batch), (8, 0));
        } else {
            assert_eq!((prepare, prepare_batch), (0, 8 / batch));
        }
        assert_eq!(manifest["workload"]["batch_size"], batch);
    }
    // The table shows time per record where the batch size is swept.
    assert!(outcome.stderr.contains("per record"), "{}", outcome.stderr);
    assert!(outcome.stderr.contains("records/s"), "{}", outcome.stderr);
}

#[test]
fn batch_sizes_a_target_cannot_take_are_refused_before_anything_runs() {
    let _one = lock();
    let out = tempfile::tempdir().unwrap();
    let config = config(out.path(), "work_us: 10", 1);
    refused(
        out.path(),
        &config,
        &["--set", "workload.batch_size=1,2"],
        "target `sweep-spin` does not take batches (batch_size 2): implement `prepare_batch`",
    );
    refused(
        out.path(),
        &config,
        &["--set", "workload.batch_size=0,1"],
        "workload.batch_size: must be >= 1, got 0",
    );
}

/// `value` with every number that is not an integer written to twelve
/// significant digits.
fn fractions_rounded(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Number(n) if !(n.is_i64() || n.is_u64()) => {
            Value::String(format!("{:.11e}", n.as_f64().unwrap_or(f64::NAN)))
        }
        Value::Array(items) => Value::Array(items.iter().map(fractions_rounded).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), fractions_rounded(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}
