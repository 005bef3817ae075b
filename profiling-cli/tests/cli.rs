//! `profile-cli` end to end, in-process, against targets defined here.

use std::path::{Path, PathBuf};

use profiling_core::prelude::*;
use serde_yaml::Value;

/// Doubles the dummy tensor and sums it.
#[derive(Default)]
struct Doubler;

#[profile_target(name = "cli-doubler")]
impl ProfileTarget for Doubler {
    type Prepared = Vec<f32>;
    type Output = Vec<f32>;

    fn prepare(&mut self, record: &DataRecord, _device: Device) -> anyhow::Result<Vec<f32>> {
        Ok(record.tensor("tensor")?.iter().copied().collect())
    }

    fn run(&mut self, values: &Vec<f32>) -> anyhow::Result<Vec<f32>> {
        let _range = profiling_range("double");
        Ok(values.iter().map(|v| v * 2.0).collect())
    }

    fn summarize(&self, output: &Vec<f32>) -> Summary {
        Summary::from([(
            "sum".to_owned(),
            Value::from(output.iter().sum::<f32>() as f64),
        )])
    }
}

/// One of two targets that share a name.
#[derive(Default)]
struct FirstTwin;

#[profile_target(name = "cli-twin")]
impl ProfileTarget for FirstTwin {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        Ok(())
    }
}

/// The other of two targets that share a name.
#[derive(Default)]
struct SecondTwin;

#[profile_target(name = "cli-twin")]
impl ProfileTarget for SecondTwin {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Sums each record's pixels.
#[derive(Default)]
struct PixelSum;

#[profile_target(name = "cli-pixel-sum")]
impl ProfileTarget for PixelSum {
    type Prepared = u64;
    type Output = u64;

    fn prepare(&mut self, record: &DataRecord, _device: Device) -> anyhow::Result<u64> {
        Ok(record.image()?.as_raw().iter().map(|&v| u64::from(v)).sum())
    }

    fn run(&mut self, sum: &u64) -> anyhow::Result<u64> {
        Ok(*sum)
    }

    fn summarize(&self, sum: &u64) -> Summary {
        Summary::from([("sum".to_owned(), Value::from(*sum))])
    }
}

/// Fails in its second run call.
#[derive(Default)]
struct Failing {
    calls: u32,
}

#[profile_target(name = "cli-failing")]
impl ProfileTarget for Failing {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        self.calls += 1;
        anyhow::ensure!(self.calls < 2, "exploded on call {}", self.calls);
        Ok(())
    }
}

/// Needs `target.parameters.scale`, read by its factory.
struct Scaled {
    scale: f64,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ScaleParameters {
    scale: f64,
}

fn scaled() -> anyhow::Result<Scaled> {
    let parameters: ScaleParameters = profiling_core::target::parameters()?;
    Ok(Scaled {
        scale: parameters.scale,
    })
}

#[profile_target(name = "cli-scaled", factory = scaled)]
impl ProfileTarget for Scaled {
    type Prepared = ();
    type Output = f64;
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<f64> {
        Ok(self.scale)
    }
}

/// Reads `target.parameters` in `prepare`, as a generated snippet does: a
/// variant by name.
#[derive(Default)]
struct Norms;

#[derive(Debug, Clone, Copy, serde::Deserialize)]
enum NormSetting {
    L1,
    LInf,
}

#[derive(serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
struct NormParameters {
    norm: NormSetting,
}

impl Default for NormParameters {
    fn default() -> Self {
        NormParameters {
            norm: NormSetting::L1,
        }
    }
}

#[profile_target(name = "cli-norms")]
impl ProfileTarget for Norms {
    type Prepared = NormSetting;
    type Output = bool;
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<NormSetting> {
        let settings: NormParameters = profiling_core::target::parameters()?;
        Ok(settings.norm)
    }
    fn run(&mut self, prepared: &NormSetting) -> anyhow::Result<bool> {
        Ok(matches!(prepared, NormSetting::LInf))
    }
}

/// Needs data of its own: runs on its config when `run` is given none.
#[derive(Default)]
struct OwnData;

#[profile_target(
    name = "cli-own-data",
    config = "tests/configs/own-data.yaml",
    setup = "scripts/setup-own-data"
)]
impl ProfileTarget for OwnData {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Its config's data is never there.
#[derive(Default)]
struct OwnMissing;

#[profile_target(
    name = "cli-own-missing",
    config = "tests/configs/own-missing.yaml",
    setup = "scripts/setup-own-data"
)]
impl ProfileTarget for OwnMissing {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        Ok(())
    }
}

#[test]
fn a_target_with_data_of_its_own_runs_on_its_config_and_says_what_installs_the_data() {
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("out");
    let out = out.to_str().unwrap();
    let ran = cli(&[
        "run",
        "cli-own-data",
        "--output-dir",
        out,
        "--run-id",
        "own",
    ]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.starts_with("note: `cli-own-data` needs data of its own: it runs on its config profiling-cli/tests/configs/own-data.yaml (scripts/setup-own-data installs it); --config FILE gives another\n"),
        "{}",
        ran.stdout
    );
    let manifest: Value = serde_yaml::from_str(
        &std::fs::read_to_string(Path::new(out).join("cli-own-data/runs/own/manifest.yaml"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        manifest["data_source"]["description"]["record_count"], 3,
        "{manifest:?}"
    );
    assert_eq!(manifest["workload"]["iterations"], 2, "{manifest:?}");
    assert!(
        manifest["config_path"]
            .as_str()
            .is_some_and(|p| p.ends_with("profiling-cli/tests/configs/own-data.yaml")),
        "{manifest:?}"
    );

    // A config given wins, and nothing is said.
    let given = scratch.path().join("given.yaml");
    std::fs::write(&given, "target: {name: cli-own-data}\n").unwrap();
    let ran = cli(&[
        "run",
        "--config",
        given.to_str().unwrap(),
        "--output-dir",
        out,
        "--run-id",
        "given",
    ]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        !ran.stdout.contains("needs data of its own"),
        "{}",
        ran.stdout
    );

    // Its data missing: the error, then what installs it.
    let missing = cli(&["run", "cli-own-missing", "--output-dir", out]);
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert_eq!(
        missing.stderr,
        "error: image directory target/no-such-images-of-own-missing does not exist\n\
         note: the data profiling-cli/tests/configs/own-missing.yaml reads is installed by scripts/setup-own-data\n"
    );
    assert!(!Path::new(out).join("cli-own-missing").exists());
}

/// Records of a known sum: record `i` holds `tensor` = `[i, i + 1, ...]`
/// of `width` values, and fails to read at `fail_at`.
struct Counting {
    parameters: CountingParameters,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CountingParameters {
    records: usize,
    #[serde(default = "four")]
    width: usize,
    #[serde(default)]
    fail_at: Option<usize>,
}

fn four() -> usize {
    4
}

#[data_source(name = "cli-counting")]
impl profiling_core::data::RecordSource for Counting {
    type Parameters = CountingParameters;

    fn open(parameters: CountingParameters) -> anyhow::Result<Self> {
        anyhow::ensure!(parameters.records > 0, "`records` must be at least 1");
        Ok(Counting { parameters })
    }

    fn len(&self) -> usize {
        self.parameters.records
    }

    fn read(&self, index: usize) -> anyhow::Result<DataRecord> {
        anyhow::ensure!(
            self.parameters.fail_at != Some(index),
            "the file is truncated"
        );
        let width = self.parameters.width;
        let values: Vec<f32> = (0..width).map(|v| (index + v) as f32).collect();
        Ok(DataRecord {
            id: format!("counted-{index}"),
            tensors: std::collections::BTreeMap::from([(
                "tensor".to_owned(),
                ndarray::ArrayD::from_shape_vec(vec![width], values)?,
            )]),
            ..DataRecord::default()
        })
    }

    fn describe(&self) -> std::collections::BTreeMap<String, Value> {
        std::collections::BTreeMap::from([(
            "records".to_owned(),
            Value::from(self.parameters.records as u64),
        )])
    }
}

mod common;

use common::{cli, Outcome};

fn line_of(needle: &str) -> u32 {
    let source = include_str!("cli.rs");
    let index = source
        .lines()
        .position(|l| l.starts_with(needle))
        .expect("needle in this file");
    index as u32 + 1
}

fn manifest_path(stdout: &str) -> PathBuf {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("manifest: "))
        .expect("the manifest path is printed");
    PathBuf::from(line)
}

fn read_manifest(path: &Path) -> Value {
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn list_shows_name_place_and_description() {
    let outcome = cli(&["list"]);
    assert_eq!(outcome.code, 0);
    let line = outcome
        .stdout
        .lines()
        .find(|l| l.starts_with("cli-doubler "))
        .expect("cli-doubler listed");
    let place = format!(
        "profiling-cli/tests/cli.rs:{}",
        line_of("impl ProfileTarget for Doubler")
    );
    let fields: Vec<&str> = line
        .split("  ")
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .collect();
    assert_eq!(
        fields,
        [
            "cli-doubler",
            place.as_str(),
            "Doubles the dummy tensor and sums it."
        ]
    );
}

#[test]
fn list_warns_about_shared_names_with_both_places() {
    let outcome = cli(&["list"]);
    assert_eq!(outcome.code, 0);
    assert_eq!(
        outcome
            .stdout
            .lines()
            .filter(|l| l.starts_with("cli-twin "))
            .count(),
        2
    );
    let first = format!(
        "profiling-cli/tests/cli.rs:{}",
        line_of("impl ProfileTarget for FirstTwin")
    );
    let second = format!(
        "profiling-cli/tests/cli.rs:{}",
        line_of("impl ProfileTarget for SecondTwin")
    );
    let warning = outcome
        .stderr
        .lines()
        .find(|l| l.contains("`cli-twin`"))
        .expect("a warning");
    assert!(
        warning.starts_with("warning: target name `cli-twin` is registered 2 times"),
        "{warning}"
    );
    assert!(
        warning.contains(&first) && warning.contains(&second),
        "{warning}"
    );
}

#[test]
fn list_sources_shows_each_source_its_place_and_parameters() {
    let outcome = cli(&["list", "--sources"]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let lines: Vec<&str> = outcome.stdout.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("cli-counting "))
        .expect("the test's source is listed");
    let place = format!(
        "profiling-cli/tests/cli.rs:{}",
        line_of("impl profiling_core::data::RecordSource for Counting")
    );
    assert!(lines[at].contains(&place), "{}", lines[at]);
    assert!(
        lines[at]
            .ends_with("Records of a known sum: record `i` holds `tensor` = `[i, i + 1, ...]`"),
        "{}",
        lines[at]
    );
    assert_eq!(
        lines[at + 1].trim_start(),
        "parameters: records, width, fail_at"
    );
    for name in ["coco", "dummy", "images", "tensors", "video"] {
        assert!(
            lines.iter().any(|l| l.starts_with(&format!("{name} "))),
            "{name}: {}",
            outcome.stdout
        );
    }
    let json = cli(&["list", "--sources", "--json"]);
    let sources: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let counting = sources
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "cli-counting")
        .unwrap();
    assert_eq!(
        counting["parameters"],
        serde_json::json!(["records", "width", "fail_at"])
    );
    assert_eq!(counting["type_name"], "Counting");
}

#[test]
fn a_source_of_ones_own_is_picked_by_name_and_given_its_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        "target: {name: cli-doubler}
data_source:
  name: cli-counting
  records: 3
  width: 5
warmup: 1
iterations: 2
",
    )
    .unwrap();
    let outcome = cli(&[
        "run",
        "--config",
        config.to_str().unwrap(),
        "--run-id",
        "own",
    ]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let manifest = read_manifest(&manifest_path(&outcome.stdout));
    assert_eq!(
        manifest["record_ids"],
        Value::from(vec!["counted-0", "counted-1", "counted-2"])
    );
    assert_eq!(manifest["data_source"]["name"], "cli-counting");
    assert_eq!(manifest["data_source"]["description"]["records"], 3);
    // Record 2 is [2, 3, 4, 5, 6], doubled: 40.
    assert_eq!(manifest["output_summaries"][2]["summary"]["sum"], 40.0);
}

#[test]
fn a_source_of_ones_own_refuses_bad_parameters_and_records_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, source: &str| -> String {
        let path = dir.path().join(name);
        std::fs::write(
            &path,
            format!("target: {{name: cli-doubler}}\ndata_source:\n  name: cli-counting\n{source}"),
        )
        .unwrap();
        path.display().to_string()
    };
    let typo = write("typo.yaml", "  records: 2\n  widht: 3\n");
    let wrong_type = write("type.yaml", "  records: two\n");
    let refused = write("zero.yaml", "  records: 0\n");
    let unreadable = write("unreadable.yaml", "  records: 3\n  fail_at: 1\n");
    for (config, expected) in [
        (&typo, format!("error: {typo}:5:10: data_source: unknown field `widht`, expected one of `records`, `width`, `fail_at`")),
        (&wrong_type, format!("error: {wrong_type}:4:12: data_source.records: invalid type: string \"two\", expected usize")),
        (&refused, "error: data_source (cli-counting): `records` must be at least 1".to_owned()),
        (&unreadable, "error: data_source (cli-counting): record 1: the file is truncated".to_owned()),
    ] {
        let outcome = cli(&["run", "--config", config, "--run-id", "bad"]);
        assert_eq!(outcome.code, 2, "{config}: {}", outcome.stderr);
        assert!(
            outcome.stderr.lines().any(|l| l == expected),
            "{config}: expected {expected:?} in\n{}",
            outcome.stderr
        );
        assert!(!dir.path().join("runs/bad").exists(), "{config}: nothing is written");
    }
}

#[test]
fn records_and_shuffle_pick_and_order_the_records_eager_and_lazy() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, selection: &str, lazy: bool| -> (Value, Vec<String>) {
        let config = dir.path().join(format!("{name}.yaml"));
        let loading = if lazy {
            "record_loading: lazy\ntarget: {name: cli-doubler, profile_prepare: true}\n"
        } else {
            "target: {name: cli-doubler}\n"
        };
        std::fs::write(
            &config,
            format!(
                "{loading}data_source: {{name: dummy, record_count: 8}}\n{selection}\nseed: 11\n"
            ),
        )
        .unwrap();
        let outcome = cli(&[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--run-id",
            name,
        ]);
        assert_eq!(outcome.code, 0, "{name}: {}", outcome.stderr);
        let manifest = read_manifest(&manifest_path(&outcome.stdout));
        let ids = manifest["record_ids"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|id| id.as_str().unwrap().to_owned())
            .collect();
        (manifest, ids)
    };
    for lazy in [false, true] {
        let which = if lazy { "lazy" } else { "eager" };
        let (manifest, ids) = run(
            &format!("picked-{which}"),
            "records: [dummy-5, dummy-2]",
            lazy,
        );
        assert_eq!(ids, ["dummy-5", "dummy-2"], "{which}");
        assert_eq!(
            manifest["workload"]["records"],
            Value::from(vec!["dummy-5", "dummy-2"])
        );
        // Record 5 is arange(16) + 5: (120 + 80) * 2.
        assert_eq!(manifest["output_summaries"][0]["summary"]["sum"], 400.0);

        let (manifest, shuffled) = run(&format!("shuffled-{which}"), "shuffle: true", lazy);
        assert_eq!(manifest["workload"]["shuffle"], true);
        let (_, again) = run(&format!("again-{which}"), "shuffle: true", lazy);
        assert_eq!(shuffled, again, "{which}: the same seed, the same order");
        let mut sorted = shuffled.clone();
        sorted.sort();
        let all: Vec<String> = (0..8).map(|i| format!("dummy-{i}")).collect();
        assert_eq!(sorted, all, "{which}: every record once");
        assert_ne!(shuffled, all, "{which}: shuffled");
    }
    let (_, eager) = run("order-eager", "shuffle: true", false);
    let (_, lazy) = run("order-lazy", "shuffle: true", true);
    assert_eq!(eager, lazy, "eager and lazy runs read the same order");

    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "target: {name: cli-doubler}\ndata_source: {name: dummy}\nworkload:\n  records: [dummy-0, dummy-9]\n",
    )
    .unwrap();
    let outcome = cli(&["run", "--config", bad.to_str().unwrap(), "--run-id", "bad"]);
    assert_eq!(outcome.code, 2, "{}", outcome.stderr);
    assert!(
        outcome.stderr.contains(&format!(
            "error: {}:4:12: workload.records: no record `dummy-9` in the `dummy` source",
            bad.display()
        )),
        "{}",
        outcome.stderr
    );
    assert!(!dir.path().join("runs/bad").exists());
}

#[test]
fn list_json_parses() {
    let outcome = cli(&["list", "--json"]);
    assert_eq!(outcome.code, 0);
    let items: Vec<serde_json::Value> = serde_json::from_str(&outcome.stdout).unwrap();
    let doubler = items.iter().find(|i| i["name"] == "cli-doubler").unwrap();
    assert_eq!(doubler["file"], "profiling-cli/tests/cli.rs");
    assert_eq!(doubler["line"], line_of("impl ProfileTarget for Doubler"));
    assert_eq!(doubler["type_name"], "Doubler");
    assert_eq!(
        doubler["description"],
        "Doubles the dummy tensor and sums it."
    );
    assert_eq!(doubler["duplicate"], false);
    assert_eq!(
        items
            .iter()
            .filter(|i| i["name"] == "cli-twin" && i["duplicate"] == true)
            .count(),
        2
    );
}

#[test]
fn run_writes_a_manifest_on_built_in_defaults() {
    let out = tempfile::tempdir().unwrap();
    let outcome = cli(&[
        "run",
        "cli-doubler",
        "--output-dir",
        out.path().to_str().unwrap(),
        "--run-id",
        "r1",
    ]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let path = manifest_path(&outcome.stdout);
    assert_eq!(path, out.path().join("cli-doubler/runs/r1/manifest.yaml"));
    let manifest = read_manifest(&path);
    assert_eq!(manifest["profile_name"], "cli-doubler");
    assert_eq!(manifest["run_id"], "r1");
    assert_eq!(manifest["status"], "completed");
    assert_eq!(manifest["target"]["name"], "cli-doubler");
    assert_eq!(manifest["target"]["profile_prepare"], false);
    assert_eq!(manifest["target"]["type_name"], "Doubler");
    assert_eq!(manifest["data_source"]["name"], "dummy");
    assert_eq!(manifest["data_source"]["description"]["record_count"], 1);
    assert_eq!(manifest["record_ids"], Value::from(vec!["dummy-0"]));
    assert_eq!(manifest["workload"]["warmup"], 1);
    assert_eq!(manifest["workload"]["iterations"], 1);
    assert_eq!(manifest["workload"]["record_loading"], "eager");
    assert_eq!(manifest["workload"]["seed"], Value::Null);
    assert_eq!(manifest["workload"]["validate_output"], true);
    assert_eq!(manifest["capture_range"], "profile-target");
    assert_eq!(manifest["device"], "cpu");
    assert_eq!(manifest["cuda"]["synchronize_each_iteration"], false);
    assert_eq!(
        manifest["expected_trace_path"],
        out.path()
            .join("cli-doubler/runs/r1/trace.nsys-rep")
            .to_str()
            .unwrap()
    );
    // arange(16) * 2 summed: 2 * 120.
    assert_eq!(manifest["output_summaries"][0]["record_id"], "dummy-0");
    assert_eq!(manifest["output_summaries"][0]["summary"]["sum"], 240.0);
    assert_eq!(manifest["calls"]["prepare"], 1);
    assert_eq!(manifest["calls"]["run"], 2);
    assert_eq!(manifest["calls"]["validate"], 1);
    assert_eq!(manifest["timings"]["iterations"]["count"], 1);
    assert!(manifest["command_line"]
        .as_str()
        .unwrap()
        .starts_with("profile-cli run cli-doubler"));
    // The repository the test was built in, asked with git directly.
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(common::workspace_root())
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8(o.stdout).unwrap())
    };
    match git(&["rev-parse", "HEAD"]) {
        Some(head) => {
            assert_eq!(manifest["git_commit"], head.trim());
            let dirty = !git(&["status", "--porcelain", "--untracked-files=no"])
                .unwrap()
                .trim()
                .is_empty();
            assert_eq!(manifest["git_dirty"], dirty);
        }
        None => {
            assert_eq!(manifest["git_commit"], Value::Null);
            assert_eq!(manifest["git_dirty"], Value::Null);
        }
    }
    let started = manifest["started_at"].as_str().unwrap();
    let finished = manifest["finished_at"].as_str().unwrap();
    // RFC 3339 in UTC, to the second: text order is time order.
    for stamp in [started, finished] {
        assert_eq!(stamp.len(), "2026-11-30T04:03:24Z".len(), "{stamp}");
        assert!(
            stamp.ends_with('Z') && stamp.as_bytes()[10] == b'T',
            "{stamp}"
        );
    }
    assert!(started <= finished, "{started} > {finished}");
    assert_eq!(manifest["profile_cli_version"], env!("CARGO_PKG_VERSION"));
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    assert_eq!(manifest["build_profile"], profile);
    assert_eq!(
        manifest["host"]["cores"].as_u64().unwrap(),
        std::thread::available_parallelism().unwrap().get() as u64
    );
    assert!(
        !std::fs::read_dir(path.parent().unwrap()).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp"))
    );
}

#[test]
fn run_with_a_config_file_uses_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        "profile_name: doubled\ntarget: {name: cli-doubler}\ndata_source: {name: dummy, record_count: 2}\nwarmup: 2\niterations: 3\nseed: 4\n",
    )
    .unwrap();
    let outcome = cli(&[
        "run",
        "--config",
        config.to_str().unwrap(),
        "--run-id",
        "c1",
    ]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let path = manifest_path(&outcome.stdout);
    assert_eq!(path, dir.path().join("runs/c1/manifest.yaml"));
    let manifest = read_manifest(&path);
    assert_eq!(manifest["profile_name"], "doubled");
    assert_eq!(
        manifest["record_ids"],
        Value::from(vec!["dummy-0", "dummy-1"])
    );
    assert_eq!(manifest["workload"]["seed"], 4);
    assert_eq!(manifest["calls"]["run"], 10);
    // Record 1 is arange(16) + 1: (120 + 16) * 2.
    assert_eq!(manifest["output_summaries"][1]["summary"]["sum"], 272.0);
    assert_eq!(manifest["config_path"], config.to_str().unwrap());
}

#[test]
fn command_line_options_win_over_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        "target: {name: cli-doubler}\nwarmup: 5\niterations: 5\n",
    )
    .unwrap();
    let outcome = cli(&[
        "run",
        "--config",
        config.to_str().unwrap(),
        "--warmup",
        "0",
        "--iterations",
        "2",
        "--seed",
        "9",
        "--capture-range",
        "cap",
        "--run-id",
        "o1",
    ]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let manifest = read_manifest(&manifest_path(&outcome.stdout));
    assert_eq!(manifest["workload"]["warmup"], 0);
    assert_eq!(manifest["workload"]["iterations"], 2);
    assert_eq!(manifest["workload"]["seed"], 9);
    assert_eq!(manifest["capture_range"], "cap");
    assert_eq!(manifest["validation"], "after_capture");
}

#[test]
fn a_shared_name_cannot_be_run() {
    let out = tempfile::tempdir().unwrap();
    let outcome = cli(&[
        "run",
        "cli-twin",
        "--output-dir",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(outcome.code, 2);
    let first = format!(
        "profiling-cli/tests/cli.rs:{}",
        line_of("impl ProfileTarget for FirstTwin")
    );
    let second = format!(
        "profiling-cli/tests/cli.rs:{}",
        line_of("impl ProfileTarget for SecondTwin")
    );
    assert!(
        outcome
            .stderr
            .starts_with("error: target name `cli-twin` is registered more than once"),
        "{}",
        outcome.stderr
    );
    assert!(
        outcome.stderr.contains(&first) && outcome.stderr.contains(&second),
        "{}",
        outcome.stderr
    );
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}

#[test]
fn an_unknown_name_lists_near_matches() {
    let outcome = cli(&["run", "cli-doubelr"]);
    assert_eq!(outcome.code, 2);
    assert_eq!(
        outcome.stderr,
        "error: unknown target `cli-doubelr`; did you mean `cli-doubler`?\n"
    );
}

#[test]
fn a_failing_target_gets_a_failed_manifest_and_exit_1() {
    let out = tempfile::tempdir().unwrap();
    let outcome = cli(&[
        "run",
        "cli-failing",
        "--output-dir",
        out.path().to_str().unwrap(),
        "--run-id",
        "f1",
        "--warmup",
        "0",
        "--iterations",
        "3",
    ]);
    assert_eq!(outcome.code, 1);
    assert!(
        outcome.stderr.contains("error: the target failed: run failed on record `dummy-0` (measured pass 1): exploded on call 2"),
        "{}",
        outcome.stderr
    );
    let manifest = read_manifest(&out.path().join("cli-failing/runs/f1/manifest.yaml"));
    assert_eq!(manifest["status"], "failed");
    assert_eq!(manifest["error"]["phase"], "run");
    assert_eq!(manifest["error"]["record_id"], "dummy-0");
    assert_eq!(manifest["error"]["pass"]["kind"], "measured");
    assert_eq!(manifest["error"]["pass"]["index"], 1);
    assert_eq!(manifest["error"]["message"], "exploded on call 2");
    assert_eq!(manifest["completed_iterations"], 1);
}

/// This test binary keeps the system allocator: `--memory` is refused
/// before anything is written, saying why, rather than a run without
/// figures or with wrong ones.
#[test]
fn memory_without_the_counting_allocator_is_refused() {
    let out = tempfile::tempdir().unwrap();
    let outcome = cli(&[
        "run",
        "cli-doubler",
        "--memory",
        "--output-dir",
        out.path().to_str().unwrap(),
        "--run-id",
        "m",
    ]);
    assert_eq!(outcome.code, 2, "{}", outcome.stderr);
    assert!(
        outcome.stderr.contains(
            "memory: on: memory attribution is unavailable in this binary: its global allocator is not profiling_core::memory::CountingAllocator"
        ),
        "{}",
        outcome.stderr
    );
    assert!(!out.path().join("cli-doubler/runs/m").exists());
    // Off, the same run goes ahead.
    let off = cli(&[
        "run",
        "cli-doubler",
        "--memory",
        "off",
        "--output-dir",
        out.path().to_str().unwrap(),
        "--run-id",
        "m",
    ]);
    assert_eq!(off.code, 0, "{}", off.stderr);
}

#[test]
fn a_used_run_id_is_refused_and_the_earlier_run_kept() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    assert_eq!(
        cli(&[
            "run",
            "cli-doubler",
            "--output-dir",
            dir,
            "--run-id",
            "same"
        ])
        .code,
        0
    );
    let manifest = out.path().join("cli-doubler/runs/same/manifest.yaml");
    let before = std::fs::read_to_string(&manifest).unwrap();
    let outcome = cli(&[
        "run",
        "cli-doubler",
        "--output-dir",
        dir,
        "--run-id",
        "same",
    ]);
    assert_eq!(outcome.code, 2);
    assert!(
        outcome
            .stderr
            .starts_with("error: run id `same` is already used:"),
        "{}",
        outcome.stderr
    );
    assert_eq!(std::fs::read_to_string(&manifest).unwrap(), before);
}

#[test]
fn print_nsys_command_spells_out_every_setting_and_writes_nothing() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let outcome = cli(&[
        "run",
        "cli-doubler",
        "--output-dir",
        dir,
        "--run-id",
        "n1",
        "--seed",
        "3",
        "--print-nsys-command",
    ]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let lines: Vec<&str> = outcome.stdout.lines().collect();
    assert_eq!(
        lines[0],
        format!("mkdir -p {dir}/cli-doubler/runs/.n1.nsys && nsys profile \\")
    );
    assert_eq!(
        lines[1],
        format!("  -o {dir}/cli-doubler/runs/.n1.nsys/trace \\")
    );
    assert!(lines.contains(&"  '--nvtx-capture=profile-target@*' \\"));
    assert!(lines.contains(&"  -e NSYS_NVTX_PROFILER_REGISTER_ONLY=0 \\"));
    let program = std::env::current_exe().unwrap();
    let tail: Vec<&str> = lines[11..].to_vec();
    assert_eq!(
        tail,
        [
            format!("  {} run cli-doubler \\", program.display()).as_str(),
            "  --data-source dummy \\",
            "  --device cpu \\",
            "  --warmup 1 \\",
            "  --iterations 1 \\",
            "  --capture-range profile-target \\",
            "  --record-loading eager \\",
            "  --seed 3 \\",
            format!("  --output-dir {dir} \\").as_str(),
            "  --run-id n1 \\",
            format!(
                "  && {} analyze {dir}/cli-doubler/runs/n1",
                program.display()
            )
            .as_str(),
        ]
    );
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}

/// `--nsys-arg` and the config's `nsys.args` add options to the capture,
/// merged with its own where nsys takes an option once; those that would
/// break it are refused, naming the option or the key, and nothing is
/// written.
#[test]
fn nsys_options_of_ones_own_join_the_printed_command_or_are_refused_saying_why() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let config = out.path().join("nsys.yaml");
    std::fs::write(
        &config,
        format!(
            "target: {{name: cli-doubler}}\noutput_dir: {dir}\nnsys:\n  args: [\"--trace=cublas\", \"--cuda-graph-trace=node\"]\n"
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let printed = cli(&[
        "run",
        "--config",
        config,
        "--run-id",
        "n1",
        "--print-nsys-command",
        "--nsys-arg=--trace=cudnn",
        "--nsys-arg",
        "-e",
        "--nsys-arg",
        "CUDA_LAUNCH_BLOCKING=1",
        "--nsys-arg=--gpu-metrics-devices",
        "--nsys-arg=all",
    ]);
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    let lines: Vec<&str> = printed.stdout.lines().collect();
    assert_eq!(lines[3], "  --trace=nvtx,osrt,cublas,cudnn \\");
    assert_eq!(
        lines[9],
        "  -e NSYS_NVTX_PROFILER_REGISTER_ONLY=0,CUDA_LAUNCH_BLOCKING=1 \\"
    );
    assert_eq!(lines[10], "  --trace-fork-before-exec=true \\");
    assert_eq!(lines[11], "  --cuda-graph-trace=node \\");
    assert_eq!(lines[12], "  --gpu-metrics-devices all \\");
    assert!(lines[13].ends_with(" run cli-doubler \\"), "{}", lines[13]);

    // From the command line: the option named, and why.
    let refused = cli(&[
        "run",
        "--config",
        config,
        "--print-nsys-command",
        "--nsys-arg=--duration=5",
    ]);
    assert_eq!(refused.code, 2);
    assert_eq!(
        refused.stderr,
        "error: --nsys-arg `--duration=5`: set by the capture itself: the capture ends when the capture range closes; a duration could end it inside a pass\n"
    );
    // From the config: the file, the key and the word's place.
    std::fs::write(
        out.path().join("bad.yaml"),
        "target: {name: cli-doubler}\nnsys: {args: [\"--stats=true\", \"-o\", \"/tmp/elsewhere\"]}\n",
    )
    .unwrap();
    let bad = out.path().join("bad.yaml");
    let refused = cli(&[
        "run",
        "--config",
        bad.to_str().unwrap(),
        "--output-dir",
        dir,
        "--nsys",
    ]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.starts_with(&format!(
            "error: {}: nsys.args[1]: `-o`: set by the capture itself: the report goes where `analyze`",
            bad.display()
        )),
        "{}",
        refused.stderr
    );
    // Without a capture to add them to.
    let alone = cli(&["run", "--config", config, "--nsys-arg=--stats=true"]);
    assert_eq!(alone.code, 2);
    assert!(
        alone
            .stderr
            .contains("give it with --nsys or --print-nsys-command"),
        "{}",
        alone.stderr
    );
    // A key of the section it does not have.
    std::fs::write(
        out.path().join("typo.yaml"),
        "target: {name: cli-doubler}\nnsys: {arg: []}\n",
    )
    .unwrap();
    let typo = cli(&[
        "run",
        "--config",
        out.path().join("typo.yaml").to_str().unwrap(),
        "--print-nsys-command",
    ]);
    assert_eq!(typo.code, 2);
    assert!(typo.stderr.contains("arg"), "{}", typo.stderr);
    // Nothing was written: only the configs are there.
    let mut names: Vec<String> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["bad.yaml", "nsys.yaml", "typo.yaml"]);
}

/// Every bad input: exit 2, one `error:` line naming what was wrong, and no
/// run directory.
#[test]
fn bad_input_is_refused_before_anything_is_written() {
    let scratch = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| -> String {
        let path = scratch.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let images = scratch.path().join("images");
    std::fs::create_dir(&images).unwrap();
    let empty = scratch.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(images.join("broken.png"), b"not a png").unwrap();

    let lazy = write(
        "lazy.yaml",
        "target: {name: cli-doubler}\nrecord_loading: lazy\n",
    );
    let zero = write("zero.yaml", "target: {name: cli-doubler}\niterations: 0\n");
    let negative = write("negative.yaml", "target: {name: cli-doubler}\nwarmup: -2\n");
    let unknown_key = write("unknown.yaml", "target: {name: cli-doubler}\nwarmpu: 1\n");
    let broken = write("broken.yaml", "target: {name: cli-doubler\n");
    let missing_dir = write(
        "missing.yaml",
        "target: {name: cli-doubler}\ndata_source: {name: images, directory: /no/such/dir}\n",
    );
    let empty_dir = write(
        "empty.yaml",
        &format!(
            "target: {{name: cli-doubler}}\ndata_source: {{name: images, directory: {}}}\n",
            empty.display()
        ),
    );
    let tilde = write(
        "tilde.yaml",
        "target: {name: cli-doubler}\ndata_source: {name: images, directory: ~/pictures}\n",
    );
    let undecodable = write(
        "undecodable.yaml",
        &format!(
            "target: {{name: cli-doubler}}\ndata_source: {{name: images, directory: {}}}\n",
            images.display()
        ),
    );
    let huge = write(
        "huge.yaml",
        "target: {name: cli-doubler}\ndata_source: {name: dummy, record_count: 100000, image_shape: [1000, 1000, 3]}\n",
    );
    let import = write(
        "import.yaml",
        "target: {name: cli-doubler, import_path: profiling-cli/src/lib.rs}\n",
    );
    let colour = write(
        "colour.yaml",
        "target: {name: cli-doubler}\ndata_source: {name: dummy, colour: red}\n",
    );
    let count = write(
        "count.yaml",
        "target: {name: cli-doubler}\ndata_source: {name: dummy, record_count: many}\n",
    );
    let gpu_on = write(
        "gpu_on.yaml",
        "target: {name: cli-doubler}\ngpu_timing: on\n",
    );
    let gpu_maybe = write(
        "gpu_maybe.yaml",
        "target: {name: cli-doubler}\ngpu_timing: maybe\n",
    );
    let cache_maybe = write(
        "cache_maybe.yaml",
        &format!(
            "target: {{name: cli-doubler}}\ndata_source: {{name: images, directory: {}, cache: maybe}}\n",
            images.display()
        ),
    );
    let cache_negative = write(
        "cache_negative.yaml",
        &format!(
            "target: {{name: cli-doubler}}\ndata_source: {{name: images, directory: {}, cache: true, cache_max_bytes: -1}}\n",
            images.display()
        ),
    );
    let no_scale = write("no_scale.yaml", "target: {name: cli-scaled}\n");
    let bad_scale = write(
        "bad_scale.yaml",
        "target: {name: cli-scaled, parameters: {scale: big}}\n",
    );
    let typo_scale = write(
        "typo_scale.yaml",
        "target:\n  name: cli-scaled\n  parameters:\n    scale: 2\n    sclae: 3\n",
    );
    let norm_typo = write(
        "norm_typo.yaml",
        "target:\n  name: cli-norms\n  parameters:\n    norm: Linf\n",
    );
    let unread = write(
        "unread.yaml",
        "target:\n  name: cli-doubler\n  parameters: {threshold: 0.5}\n",
    );

    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["--config", &lazy], format!("error: {lazy}: record_loading: `lazy` needs `target.profile_prepare: true`")),
        (vec!["--config", &zero], format!("error: {zero}: iterations: must be >= 1, got 0")),
        (vec!["--config", &negative], format!("error: {negative}: warmup: must be >= 0, got -2")),
        (vec!["--config", &unknown_key], format!("error: {unknown_key}:2:1: unknown field `warmpu`")),
        (vec!["--config", &broken], format!("error: {broken}:2:1: ")),
        (vec!["--config", &missing_dir], "error: image directory /no/such/dir does not exist".to_owned()),
        (vec!["--config", &empty_dir], format!("error: image directory {} holds no images", empty.display())),
        (vec!["--config", &tilde], format!("error: {tilde}:2:40: data_source.directory: `~/pictures` starts with `~`")),
        (vec!["--config", &colour], format!("error: {colour}:2:36: data_source: unknown field `colour`, expected one of")),
        (vec!["--config", &count], format!("error: {count}:2:42: data_source.record_count: invalid type: string \"many\"")),
        (vec!["--config", &no_scale], format!("error: {no_scale}: target.parameters: missing field `scale`")),
        (vec!["--config", &bad_scale], format!("error: {bad_scale}:1:48: target.parameters.scale: invalid type: string \"big\"")),
        (vec!["--config", &typo_scale], format!("error: {typo_scale}:5:12: target.parameters: unknown field `sclae`, expected `scale`")),
        // Read by `prepare`: refused at its place too, with the variants.
        (vec!["--config", &norm_typo], format!("error: {norm_typo}:4:11: target.parameters.norm: unknown variant `Linf`, expected `L1` or `LInf`")),
        (vec!["--config", &unread], format!("error: {unread}:3:27: target.parameters.threshold: unknown parameter: target `cli-doubler` reads no `target.parameters`")),
        (vec!["--config", &gpu_on], format!("error: {gpu_on}: gpu_timing: `on` needs a CUDA device, and the device is `cpu`")),
        (vec!["--config", &gpu_maybe], format!("error: {gpu_maybe}:2:13: gpu_timing: unknown variant `maybe`, expected one of `auto`, `on`, `off`")),
        (vec!["cli-doubler", "--gpu-timing", "on"], "error: command line: --gpu-timing: `on` needs a CUDA device, and the device is `cpu`".to_owned()),
        (vec!["cli-doubler", "--gpu-timing", "sometimes"], "error: invalid value 'sometimes' for '--gpu-timing <MODE>': unknown GPU timing `sometimes`: expected `auto`, `on` or `off`".to_owned()),
        (vec!["--config", &cache_maybe], format!("error: {cache_maybe}: data_source.cache: expected `true` or `false`, got the string `maybe`")),
        (vec!["--config", &cache_negative], format!("error: {cache_negative}: data_source.cache_max_bytes: expected a size: a whole number of bytes, or a number with a unit (`2 GiB`, `500 MB`), got the number `-1`")),
        (vec!["cli-doubler", "--cache"], "error: command line: --cache: only the `images` source reads files whose decoded images can be cached; `dummy` makes its records".to_owned()),
        (vec!["cli-doubler", "--cache", "--no-cache"], "error: the argument '--cache' cannot be used with '--no-cache'".to_owned()),
        (vec!["cli-doubler", "--capture-range", "a@b"], "error: command line: --capture-range: `a@b` contains `@`".to_owned()),
        (vec!["--config", &undecodable], format!("error: cannot decode image {}", images.join("broken.png").display())),
        (vec!["--config", &huge], "error: eager loading would hold about 280.2 GiB of records, more than 80% of the ".to_owned()),
        (vec!["--config", &import], "error: target.import_path `profiling-cli/src/lib.rs` does not match target `cli-doubler`, defined at profiling-cli/tests/cli.rs:".to_owned()),
        (vec!["cli-doubler", "--data-source", "webcam"], "error: command line: --data-source: unknown data source `webcam`: the registered ones are cli-counting, coco, dummy, images, tensors, video".to_owned()),
        (vec!["cli-doubler", "--device", "gpu"], "error: invalid value 'gpu' for '--device <DEVICE>': unknown device `gpu`".to_owned()),
        (vec!["cli-doubler", "--device", "cuda"], format!("error: device `cuda:0`: {}", if cfg!(feature = "tch") {
                "libtorch sees no CUDA device on this machine"
            } else if cfg!(feature = "ort") {
                "the ONNX Runtime at "
            } else {
                "this build has no CUDA backend"
            })),
        (vec!["cli-doubler", "--iterations", "0"], "error: invalid value '0' for '--iterations <N>'".to_owned()),
        (vec!["cli-doubler", "--warmup", "-1"], "error: unexpected argument '-1' found".to_owned()),
        (vec!["cli-doubler", "--run-id", "../escape"], "error: --run-id: `../escape` is not a valid run id".to_owned()),
        (vec!["cli-doubler", "--run-id", "a/b"], "error: --run-id: `a/b` is not a valid run id".to_owned()),
        (vec!["cli-doubler", "--record-loading", "sometimes"], "error: invalid value 'sometimes' for '--record-loading <MODE>'".to_owned()),
        (vec!["no-such-target"], "error: unknown target `no-such-target`".to_owned()),
        (vec![], "error: name a target to run, or give --config FILE".to_owned()),
    ];
    let out = scratch.path().join("out");
    for (args, expected) in cases {
        let mut argv = vec!["run"];
        argv.extend(args.iter().copied());
        argv.extend(["--output-dir", out.to_str().unwrap()]);
        let outcome = cli(&argv);
        assert_eq!(outcome.code, 2, "{args:?}: {}", outcome.stderr);
        assert!(
            outcome.stderr.starts_with(&expected),
            "{args:?}:\n  got:      {}\n  expected: {expected}",
            outcome.stderr
        );
        assert!(!out.exists(), "{args:?} created {}", out.display());
        // Config rules and data are checked before the run starts, and nothing is
        // written beside a config either.
        assert!(
            !scratch.path().join("runs").exists(),
            "{args:?} created a run directory"
        );
    }

    // The value came from the command line, not from the config beside it.
    let config = write("plain.yaml", "target: {name: cli-doubler}\n");
    let outcome = cli(&["run", "--config", &config, "--output-dir", "~/x"]);
    assert_eq!(outcome.code, 2);
    assert_eq!(
        outcome.stderr,
        "error: command line: --output-dir: `~/x` starts with `~`, which is not expanded: write the absolute path instead\n"
    );
    assert!(!scratch.path().join("runs").exists());
}

/// Panics in its run.
#[derive(Default)]
struct Panicking;

#[profile_target(name = "cli-panicking")]
impl ProfileTarget for Panicking {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        let values: Vec<u32> = Vec::new();
        let _range = profiling_range("doomed");
        assert_eq!(values.len(), 1, "kaboom");
        Ok(())
    }
}

static CONSTRUCTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Notes that it was built.
struct Watched;

impl Default for Watched {
    fn default() -> Self {
        CONSTRUCTED.store(true, std::sync::atomic::Ordering::SeqCst);
        Watched
    }
}

#[profile_target(name = "cli-watched")]
impl ProfileTarget for Watched {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        Ok(())
    }
}

#[test]
fn a_panic_is_an_error_naming_the_call_and_a_failed_manifest() {
    let out = tempfile::tempdir().unwrap();
    let outcome = cli(&[
        "run",
        "cli-panicking",
        "--output-dir",
        out.path().to_str().unwrap(),
        "--run-id",
        "p1",
    ]);
    assert_eq!(outcome.code, 1);
    let errors: Vec<&str> = outcome
        .stderr
        .lines()
        .filter(|l| !l.starts_with("warning:"))
        .collect();
    let line = line_of("        assert_eq!(values.len(), 1, \"kaboom\");");
    assert_eq!(errors.len(), 1, "{}", outcome.stderr);
    assert!(
        errors[0].starts_with(&format!(
            "error: the target failed: run failed on record `dummy-0` (warmup pass 0): panicked at profiling-cli/tests/cli.rs:{line}:9: assertion `left == right` failed: kaboom; left: 0; right: 1"
        )),
        "{}",
        errors[0]
    );
    let manifest = read_manifest(&out.path().join("cli-panicking/runs/p1/manifest.yaml"));
    assert_eq!(manifest["status"], "failed");
    assert_eq!(manifest["error"]["phase"], "run");
    assert_eq!(manifest["error"]["pass"]["kind"], "warmup");
    assert!(manifest["error"]["message"]
        .as_str()
        .unwrap()
        .contains("kaboom"));
}

#[test]
fn json_prints_exactly_one_document_on_stdout() {
    let out = tempfile::tempdir().unwrap();
    let outcome = cli(&[
        "run",
        "cli-doubler",
        "--json",
        "--output-dir",
        out.path().to_str().unwrap(),
        "--run-id",
        "j1",
        "--iterations",
        "3",
    ]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let document: serde_json::Value =
        serde_json::from_str(&outcome.stdout).expect("stdout is one JSON document");
    assert_eq!(document["status"], "completed");
    assert_eq!(
        document["manifest_path"],
        out.path()
            .join("cli-doubler/runs/j1/manifest.yaml")
            .to_str()
            .unwrap()
    );
    assert_eq!(document["timings"]["iterations"]["count"], 3);
    assert_eq!(document["timings"]["runs"]["count"], 3);
    assert_eq!(document["timings"]["ranges"][0]["name"], "double");
    assert_eq!(document["timings"]["ranges"][0]["count"], 3);
    assert_eq!(
        document["trace"]["events"], 7,
        "the capture, three passes, three ranges"
    );
    assert!(outcome.stderr.contains("running `cli-doubler`"));
    assert!(outcome.stderr.contains("top ranges by inclusive time:"));

    let refused = cli(&["run", "no-such-target", "--json"]);
    assert_eq!(refused.code, 2);
    let document: serde_json::Value = serde_json::from_str(&refused.stdout).unwrap();
    assert_eq!(document["status"], "refused");
    assert!(document["error"]
        .as_str()
        .unwrap()
        .starts_with("unknown target `no-such-target`"));
}

#[test]
fn the_summary_shows_passes_calls_and_top_ranges() {
    let out = tempfile::tempdir().unwrap();
    let outcome = cli(&[
        "run",
        "cli-doubler",
        "--output-dir",
        out.path().to_str().unwrap(),
        "--run-id",
        "s1",
        "--iterations",
        "4",
    ]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let stdout = &outcome.stdout;
    assert!(
        stdout.contains("passes: 4 measured passes of 1 record, median "),
        "{stdout}"
    );
    assert!(
        stdout.contains("calls:  4 target calls, median "),
        "{stdout}"
    );
    let inclusive = stdout
        .lines()
        .skip_while(|l| *l != "top ranges by inclusive time:")
        .nth(1)
        .unwrap();
    assert!(inclusive.trim_start().starts_with("double "), "{inclusive}");
    // The time per pass is the mean, the other the median of a call: each
    // says which it is, with the manifest's figures.
    let manifest = read_manifest(&out.path().join("cli-doubler/runs/s1/manifest.yaml"));
    let double = manifest["timings"]["range_tree"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|r| r["path"] == "double")
        .expect("the range `double` in the manifest");
    let total = double["inclusive"]["total_ns"].as_u64().unwrap();
    let median = double["inclusive"]["p50_ns"].as_u64().unwrap();
    assert!(
        inclusive.contains(&format!(
            "mean {:>9} per pass  ",
            profiling_cli::summary::format_ns(total / 4)
        )),
        "{inclusive}"
    );
    assert!(
        inclusive.contains(&format!(
            " of a pass  4 calls, median {} per call",
            profiling_cli::summary::format_ns(median)
        )),
        "{inclusive}"
    );
    assert!(stdout.contains("top ranges by self time:"));
    // The clock this machine gets (the time-stamp counter, or Instant).
    assert!(
        stdout.contains(&format!(
            "timer:  {}, resolution ",
            profiling_core::timing::clock::describe()
        )),
        "{stdout}"
    );
    assert!(stdout.contains(&format!(
        "trace:  {}",
        out.path().join("cli-doubler/runs/s1/trace.json").display()
    )));
    let trace: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("cli-doubler/runs/s1/trace.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "double")
            .count(),
        4
    );
}

#[test]
fn force_replaces_an_earlier_run() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    assert_eq!(
        cli(&[
            "run",
            "cli-doubler",
            "--output-dir",
            dir,
            "--run-id",
            "again"
        ])
        .code,
        0
    );
    let stale = out.path().join("cli-doubler/runs/again/stale.txt");
    std::fs::write(&stale, "from the earlier run").unwrap();
    let outcome = cli(&[
        "run",
        "cli-doubler",
        "--output-dir",
        dir,
        "--run-id",
        "again",
        "--force",
        "--iterations",
        "2",
    ]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(!stale.exists(), "the earlier run is replaced, not merged");
    let manifest = read_manifest(&out.path().join("cli-doubler/runs/again/manifest.yaml"));
    assert_eq!(manifest["workload"]["iterations"], 2);
}

#[test]
fn an_unwritable_output_directory_is_refused_before_target_code_runs() {
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let under_file = file.join("runs");
    for (dir, reason) in [
        (
            under_file.to_str().unwrap().to_owned(),
            format!("{} is not a directory", file.display()),
        ),
        (
            "/proc/profile-cli-runs".to_owned(),
            "cannot create files in /proc".to_owned(),
        ),
    ] {
        let outcome = cli(&["run", "cli-watched", "--output-dir", &dir, "--run-id", "w"]);
        assert_eq!(outcome.code, 2, "{}", outcome.stderr);
        let expected = format!("error: cannot write the run to {dir}/cli-watched/runs/w: {reason}");
        assert!(
            outcome.stderr.starts_with(&expected),
            "{}\nexpected: {expected}",
            outcome.stderr
        );
    }
    assert!(
        !CONSTRUCTED.load(std::sync::atomic::Ordering::SeqCst),
        "no target code ran"
    );
}

/// A run with `--cache` decodes and stores; the next reads every image from
/// the cache and gives the same records and outputs; `cache clean` empties
/// it and says what that freed.
#[test]
fn a_second_cached_run_reads_every_image_from_the_cache_with_the_same_results() {
    let scratch = tempfile::tempdir().unwrap();
    let images = scratch.path().join("images");
    std::fs::create_dir(&images).unwrap();
    for (index, name) in ["a.jpg", "b.png", "c.jpg"].iter().enumerate() {
        image::RgbImage::from_fn(30 + index as u32, 20, |x, y| {
            image::Rgb([(x * 8) as u8, (y * 12) as u8, index as u8 * 60])
        })
        .save(images.join(name))
        .unwrap();
    }
    let config = scratch.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "target: {{name: cli-pixel-sum}}\ndata_source: {{name: images, directory: {}}}\n",
            images.display()
        ),
    )
    .unwrap();
    let out = scratch.path().join("out");
    let cache_dir = out.join(".cache/images");
    let run = |run_id: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--config",
            config.to_str().unwrap(),
            "--output-dir",
            out.to_str().unwrap(),
            "--run-id",
            run_id,
        ];
        args.extend(extra);
        let outcome = cli(&args);
        assert_eq!(outcome.code, 0, "{}", outcome.stderr);
        outcome
    };
    let manifest = |run_id: &str| -> Value {
        let path = out.join(format!("cli-pixel-sum/runs/{run_id}/manifest.yaml"));
        serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };

    let uncached = run("uncached", &[]);
    assert!(
        !uncached.stdout.contains("image cache"),
        "{}",
        uncached.stdout
    );
    assert!(!out.join(".cache").exists());
    let cold = run("cold", &["--cache"]);
    let line = |outcome: &Outcome| {
        outcome
            .stdout
            .lines()
            .find(|l| l.starts_with("image cache: "))
            .unwrap_or_default()
            .to_owned()
    };
    let stored: u64 = std::fs::read_dir(&cache_dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert_eq!(
        line(&cold),
        format!(
            // Each image read once: the first record, read alone first
            // (to measure what `prepare` keeps), is not read again.
            "image cache: 0 hits, 3 misses, 3 decoded and stored ({}): {}",
            profiling_core::data::human_bytes(stored),
            cache_dir.display()
        )
    );
    let warm = run("warm", &["--cache", "--json"]);
    let document: serde_json::Value = serde_json::from_str(&warm.stdout).unwrap();
    assert_eq!(document["image_cache"]["hits"], 3);
    assert_eq!(document["image_cache"]["misses"], 0);
    assert_eq!(document["image_cache"]["stored"], 0);
    assert_eq!(
        warm.stderr
            .lines()
            .find(|l| l.starts_with("image cache: "))
            .unwrap(),
        format!("image cache: 3 hits, 0 misses: {}", cache_dir.display())
    );
    for key in ["record_ids", "output_summaries", "data_source"] {
        assert_eq!(manifest("warm")[key], manifest("uncached")[key], "{key}");
        assert_eq!(manifest("cold")[key], manifest("uncached")[key], "{key}");
    }

    let cleaned = cli(&["cache", "clean", "--output-dir", out.to_str().unwrap()]);
    assert_eq!(cleaned.code, 0, "{}", cleaned.stderr);
    assert_eq!(
        cleaned.stdout,
        format!(
            "freed {} (3 files) from the image cache: {}\n",
            profiling_core::data::human_bytes(stored),
            cache_dir.display()
        )
    );
    assert_eq!(std::fs::read_dir(&cache_dir).unwrap().count(), 0);
    let again = cli(&["cache", "clean", "--output-dir", out.to_str().unwrap()]);
    assert_eq!(
        again.stdout,
        format!("the image cache is empty: {}\n", cache_dir.display())
    );
    let after = run("after-clean", &["--cache"]);
    assert!(line(&after).starts_with("image cache: 0 hits, 3 misses, 3 decoded"));
}

/// `run --directory DIR` reads the images in DIR without a config naming
/// it, and the printed Nsight command carries it, so that it reads the
/// same images.
#[test]
fn the_directory_option_gives_the_images_source_its_directory() {
    let scratch = tempfile::tempdir().unwrap();
    let images = scratch.path().join("frames");
    std::fs::create_dir(&images).unwrap();
    for name in ["b.png", "a.png"] {
        image::RgbImage::from_pixel(8, 6, image::Rgb([10, 20, 30]))
            .save(images.join(name))
            .unwrap();
    }
    let out = scratch.path().join("out");
    let args = [
        "run",
        "cli-pixel-sum",
        "--directory",
        images.to_str().unwrap(),
        "--output-dir",
        out.to_str().unwrap(),
        "--run-id",
        "dir",
    ];
    let outcome = cli(&args);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(
        outcome.stdout.contains("on images with built-in defaults"),
        "{}",
        outcome.stdout
    );
    let manifest = read_manifest(&out.join("cli-pixel-sum/runs/dir/manifest.yaml"));
    assert_eq!(
        manifest["record_ids"],
        serde_yaml::from_str::<Value>("[a, b]").unwrap()
    );
    assert_eq!(manifest["data_source"]["name"], "images");

    let printed = cli(&[&args[..], &["--force", "--print-nsys-command"]].concat());
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    assert!(
        printed
            .stdout
            .contains(&format!("--directory {} \\", images.display())),
        "{}",
        printed.stdout
    );
}

/// `runs clean` restores an earlier run a stopped `--force` had moved
/// aside and removes a partial one, in every profile of the output
/// directory; with nothing to do, it says so.
#[test]
fn runs_clean_puts_right_what_stopped_writes_left() {
    let out = tempfile::tempdir().unwrap();
    let runs = out.path().join("cli-doubler/runs");
    std::fs::create_dir_all(runs.join(".k3.replaced-4194304")).unwrap();
    std::fs::write(runs.join(".k3.replaced-4194304/manifest.yaml"), "earlier").unwrap();
    std::fs::create_dir_all(runs.join(".k3.partial-4194304")).unwrap();
    let dir = out.path().to_str().unwrap();
    let cleaned = cli(&["runs", "clean", "--output-dir", dir]);
    assert_eq!(cleaned.code, 0, "{}", cleaned.stderr);
    assert_eq!(
        cleaned.stdout,
        format!(
            "removed {}, left by a run that stopped while writing\nrestored the earlier run {} from {} (a replacement stopped half way)\n",
            runs.join(".k3.partial-4194304").display(),
            runs.join("k3").display(),
            runs.join(".k3.replaced-4194304").display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(runs.join("k3/manifest.yaml")).unwrap(),
        "earlier"
    );
    let again = cli(&["runs", "clean", "--output-dir", dir]);
    assert_eq!(
        again.stdout,
        "nothing to clean: no run stopped half way through writing\n"
    );
}

/// A lossless video of 6 frames of 32x24 whose frame N is N x 10 in every
/// channel, or `None` (the test says why) without FFmpeg.
fn counted_video(dir: &Path) -> Option<PathBuf> {
    let path = dir.join("counted.mkv");
    let made = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-y", "-f", "lavfi", "-i"])
        .arg("color=black:s=32x24:r=10:d=0.6,format=gbrp,geq=r='N*10':g='N*10':b='N*10'")
        .args(["-c:v", "ffv1", "-pix_fmt", "gbrp"])
        .arg(&path)
        .status()
        .is_ok_and(|status| status.success());
    if !made {
        eprintln!("skipped: ffmpeg is not installed (scripts/setup-ffmpeg installs it)");
        return None;
    }
    Some(path)
}

#[test]
fn a_video_in_pipeline_mode_is_decoded_inside_each_pass_under_its_own_range() {
    let dir = tempfile::tempdir().unwrap();
    let Some(video) = counted_video(dir.path()) else {
        return;
    };
    let write = |name: &str, loading: &str| {
        let path = dir.path().join(name);
        std::fs::write(
            &path,
            format!(
                "target: {{name: cli-pixel-sum, profile_prepare: true}}\n\
                 data_source: {{name: video, path: {}, start: 1, stride: 2, mode: pipeline}}\n\
                 record_loading: {loading}\nwarmup: 1\niterations: 2\n",
                video.display()
            ),
        )
        .unwrap();
        path.display().to_string()
    };
    let lazy = write("lazy.yaml", "lazy");
    let outcome = cli(&["run", "--config", &lazy, "--run-id", "piped"]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let manifest = read_manifest(&manifest_path(&outcome.stdout));
    let ids: Vec<&str> = manifest["record_ids"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap())
        .collect();
    assert_eq!(ids, ["frame-1", "frame-3", "frame-5"]);
    // Frame 5 is 50 in each of 32 x 24 x 3 bytes.
    let sums: Vec<u64> = manifest["output_summaries"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|s| s["summary"]["sum"].as_u64().unwrap())
        .collect();
    assert!(sums.contains(&(50 * 32 * 24 * 3)), "{sums:?}");
    let count = |path: &str| {
        manifest["timings"]["range_tree"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|r| r["path"] == path)
            .unwrap_or_else(|| panic!("no range {path}"))["count"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(
        count("video_decode"),
        6,
        "three frames in each of two passes"
    );
    assert_eq!(
        count("video_decode/video_open"),
        2,
        "the decoder starts once a pass"
    );
    assert_eq!(manifest["data_source"]["description"]["mode"], "pipeline");
    // What video_decode is, said beside it.
    let decoded_by = manifest["data_source"]["description"]["decoded_by"]
        .as_str()
        .unwrap();
    assert!(
        decoded_by.contains("in a process of its own")
            && decoded_by.contains("not decoding it in this process"),
        "{decoded_by}"
    );

    let eager = write("eager.yaml", "eager");
    let outcome = cli(&["run", "--config", &eager, "--run-id", "refused"]);
    assert_eq!(outcome.code, 2, "{}", outcome.stderr);
    assert!(
        outcome.stderr.contains(&format!(
            "error: {eager}:3:17: record_loading: eager, but the video source decodes the frames inside each pass (`mode: pipeline`): set `record_loading: lazy`"
        )),
        "{}",
        outcome.stderr
    );
}

/// `--measurement-time` sizes the passes by time and says how, on the
/// terminal, in the manifest and in the nsys command that repeats the run;
/// it and `--iterations` are one or the other.
#[test]
fn measurement_time_sizes_the_passes_and_says_how() {
    let out = tempfile::tempdir().unwrap();
    let outcome = cli(&[
        "run",
        "cli-doubler",
        "--warmup",
        "2",
        "--measurement-time",
        "20ms",
        "--output-dir",
        out.path().to_str().unwrap(),
        "--run-id",
        "timed",
        "--no-report",
    ]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let manifest = read_manifest(&manifest_path(&outcome.stdout));
    let sized = &manifest["workload"]["measurement_time"];
    assert_eq!(sized["asked_ns"], 20_000_000);
    let passes = sized["passes"].as_u64().unwrap();
    let pace = sized["warmup_pass_ns"].as_u64().unwrap();
    assert_eq!(passes, 20_000_000u64.div_ceil(pace.max(1)).min(1_000_000));
    assert_eq!(manifest["workload"]["iterations"], passes);
    assert_eq!(manifest["completed_iterations"], passes);
    assert!(
        outcome
            .stdout
            .contains("iterations sized by time (20.00 ms)"),
        "{}",
        outcome.stdout
    );
    assert!(
        outcome
            .stdout
            .contains(&format!("{passes} measured passes: 20.00 ms asked at ")),
        "{}",
        outcome.stdout
    );

    let printed = cli(&[
        "run",
        "cli-doubler",
        "--measurement-time",
        "1.5s",
        "--print-nsys-command",
    ]);
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    assert!(
        printed.stdout.contains("--measurement-time 1500000000ns"),
        "{}",
        printed.stdout
    );
    assert!(
        !printed.stdout.contains("--iterations"),
        "{}",
        printed.stdout
    );

    let both = cli(&[
        "run",
        "cli-doubler",
        "--iterations",
        "3",
        "--measurement-time",
        "1s",
    ]);
    assert_eq!(both.code, 2);
    assert!(
        both.stderr
            .contains("'--iterations <N>' cannot be used with '--measurement-time <DURATION>'"),
        "{}",
        both.stderr
    );
    let bare = cli(&["run", "cli-doubler", "--measurement-time", "5"]);
    assert_eq!(bare.code, 2);
    assert!(bare.stderr.contains("`5` needs a unit"), "{}", bare.stderr);
}
