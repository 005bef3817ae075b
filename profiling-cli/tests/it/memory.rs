//! `--memory` through the built `profile-cli`, whose global allocator
//! attributes: the built-in targets' figures, exact comparisons that gate,
//! paired runs and sweeps.

use std::path::Path;
use std::process::{Command, Output};

use serde_yaml::Value;

fn profile_cli(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_profile-cli"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "exit {:?}\n{}\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn manifest(dir: &Path, profile: &str, run: &str) -> Value {
    let path = dir
        .join(profile)
        .join("runs")
        .join(run)
        .join("manifest.yaml");
    serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The memory of the range at `path` in a manifest's range tree.
fn path_memory<'a>(manifest: &'a Value, path: &str) -> &'a Value {
    manifest["timings"]["range_tree"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|r| r["path"].as_str() == Some(path))
        .unwrap_or_else(|| panic!("{path} in the tree"))
        .get("memory")
        .unwrap_or_else(|| panic!("{path} has memory figures"))
}

/// The letterbox allocates its padded canvas and its CHW tensor once per
/// call, each of the exact size of a 640x640 input: what a reader of the
/// code expects, to the byte.
#[test]
fn the_letterbox_allocates_its_canvas_and_tensor_once_per_call() {
    let out = tempfile::tempdir().unwrap();
    let output = profile_cli(
        out.path(),
        &[
            "run",
            "detection-pipeline",
            "--memory",
            "--iterations",
            "4",
            "--run-id",
            "memory",
            "--output-dir",
            ".",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("memory: per pass "), "{stdout}");
    assert!(
        stdout.contains("top ranges by bytes allocated per pass:"),
        "{stdout}"
    );
    let manifest = manifest(out.path(), "detection-pipeline", "memory");
    assert_eq!(manifest["workload"]["memory"].as_str(), Some("on"));
    let once = |path: &str, bytes: u64| {
        let per_range = &path_memory(&manifest, path)["per_range"];
        for (figure, value) in [("allocations", 1), ("allocated_bytes", bytes)] {
            let stats = &per_range[figure];
            assert_eq!(
                (stats["min"].as_u64(), stats["max"].as_u64()),
                (Some(value), Some(value)),
                "{path} {figure}: {stats:?}"
            );
        }
    };
    // 640 x 640 x 3 u8 and 3 x 640 x 640 f32.
    once("preprocess/letterbox/pad", 640 * 640 * 3);
    once("preprocess/letterbox/to_chw_tensor", 3 * 640 * 640 * 4);
    // The letterbox holds its children's: at least both buffers at once.
    let letterbox = path_memory(&manifest, "preprocess/letterbox");
    assert!(letterbox["peak_bytes"].as_u64().unwrap() >= 640 * 640 * 3 + 3 * 640 * 640 * 4);
    assert_eq!(letterbox["self_allocations"].as_u64(), Some(0));
    let memory = &manifest["timings"]["memory"];
    assert!(memory["per_pass"]["allocations"]["min"].as_u64().unwrap() >= 2);
    assert!(memory["cost_per_allocation_ns"].as_f64().unwrap() > 0.0);
    // The trace holds the live bytes as a counter track, and each range's
    // figures.
    let run = out.path().join("detection-pipeline/runs/memory");
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("trace.json")).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let live: Vec<u64> = events
        .iter()
        .filter(|e| e["ph"] == "C" && e["name"] == "live bytes")
        .map(|e| e["args"]["live bytes"].as_u64().unwrap())
        .collect();
    assert!(live.len() > 4, "{live:?}");
    assert!(live.iter().any(|&bytes| bytes >= 640 * 640 * 3), "{live:?}");
    let pad = events
        .iter()
        .find(|e| e["cat"] == "range" && e["name"] == "pad")
        .unwrap();
    assert_eq!(pad["args"]["allocated_bytes"].as_u64(), Some(640 * 640 * 3));
}

/// A config of `cpu-work` allocating `allocations` buffers a call.
fn cpu_work_config(dir: &Path, name: &str, allocations: u64) -> String {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            "profile_name: {name}\ntarget:\n  name: cpu-work\n  parameters: {{rounds: 2000, steady_rounds: 1000, allocations: {allocations}}}\nwarmup: 2\niterations: 12\nmemory: on\noutput_dir: .\n"
        ),
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}

/// One more allocation per pass is an exact change, and fails
/// `--fail-on-regression` whatever the times say; one fewer does not.
#[test]
fn compare_reports_one_more_allocation_exactly_and_gates_on_it() {
    let dir = tempfile::tempdir().unwrap();
    for (name, allocations) in [("three", 3), ("four", 4)] {
        let config = cpu_work_config(dir.path(), name, allocations);
        let output = profile_cli(dir.path(), &["run", "--config", &config, "--run-id", "r"]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    }
    let base = "three/runs/r";
    let candidate = "four/runs/r";
    let output = profile_cli(
        dir.path(),
        &[
            "compare",
            base,
            candidate,
            "--fail-on-regression",
            "--allow-different-targets",
        ],
    );
    assert_eq!(output.status.code(), Some(3), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("pass") && l.contains("allocations"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        line.contains("3 → 4 (+1)") && line.ends_with("more (exact)"),
        "{line}"
    );
    let work = stdout
        .lines()
        .find(|l| l.starts_with("work ") && l.contains("allocations"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(work.contains("3 → 4 (+1)"), "{work}");

    let json = profile_cli(dir.path(), &["compare", base, candidate, "--json"]);
    let document: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let rows = document["comparisons"][0]["memory"].as_array().unwrap();
    let pass = rows
        .iter()
        .find(|r| r["subject"] == "pass" && r["measure"] == "allocated_bytes")
        .unwrap();
    assert_eq!(pass["change"].as_i64(), Some(1024));
    assert_eq!(pass["exact"].as_bool(), Some(true));

    // The comparison page has the same rows.
    let page = dir.path().join("comparison.html");
    let report = profile_cli(
        dir.path(),
        &["report", base, candidate, "-o", page.to_str().unwrap()],
    );
    assert_eq!(report.status.code(), Some(0), "{}", text(&report));
    let html = std::fs::read_to_string(&page).unwrap();
    let row = &html[html
        .find("data-memory-row=\"pass allocations\"")
        .unwrap_or_else(|| panic!("no memory row on the page"))..];
    let row = &row[..row.find("</tr>").unwrap()];
    assert!(
        row.contains("3 → 4 (+1)") && row.contains("more (exact)"),
        "{row}"
    );

    // The other way round: fewer allocations never gate.
    let fewer = profile_cli(dir.path(), &["compare", candidate, base, "--json"]);
    let document: serde_json::Value = serde_json::from_slice(&fewer.stdout).unwrap();
    let pass = document["comparisons"][0]["memory"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["subject"] == "pass" && r["measure"] == "allocations")
        .cloned()
        .unwrap();
    assert_eq!(pass["verdict"], "fewer");
}

/// A paired run with `--memory` compares the sides' allocations too.
#[test]
fn ab_compares_allocations_per_pass() {
    let dir = tempfile::tempdir().unwrap();
    let base = cpu_work_config(dir.path(), "base", 0);
    let candidate = cpu_work_config(dir.path(), "candidate", 2);
    let output = profile_cli(
        dir.path(),
        &[
            "ab",
            "cpu-work",
            "cpu-work",
            "--config",
            &base,
            "--candidate-config",
            &candidate,
            "--memory",
            "--iterations",
            "8",
            "--block-passes",
            "2",
            "--no-report",
            "--json",
        ],
    );
    assert!(matches!(output.status.code(), Some(0)), "{}", text(&output));
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let rows = document["comparisons"][0]["memory"].as_array().unwrap();
    let pass = rows
        .iter()
        .find(|r| r["subject"] == "pass" && r["measure"] == "allocations")
        .unwrap_or_else(|| panic!("{rows:?}"));
    assert_eq!(pass["base"]["median"].as_u64(), Some(0));
    assert_eq!(pass["candidate"]["median"].as_u64(), Some(2));
    assert_eq!(pass["verdict"], "more");
    assert_eq!(pass["exact"].as_bool(), Some(true));
}

/// With `memory: on`, each point of a sweep records what its passes
/// allocated.
#[test]
fn a_sweep_with_memory_records_each_points_allocations() {
    let dir = tempfile::tempdir().unwrap();
    let config = cpu_work_config(dir.path(), "swept", 0);
    let output = profile_cli(
        dir.path(),
        &[
            "sweep",
            "--config",
            &config,
            "--set",
            "target.parameters.allocations=1,5",
            "--sweep-id",
            "s",
            "--no-report",
            "--yes",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let sweep: Value = serde_yaml::from_str(
        &std::fs::read_to_string(dir.path().join("swept/runs/s/sweep.yaml")).unwrap(),
    )
    .unwrap();
    let allocations: Vec<Option<u64>> = sweep["points"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| p["memory"]["allocations_per_pass"].as_u64())
        .collect();
    assert_eq!(allocations, [Some(1), Some(5)]);
}
