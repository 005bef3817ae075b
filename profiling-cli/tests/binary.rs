//! The built `profile-cli`: the targets it links and its main job.

use std::path::Path;
use std::process::Command;

fn profile_cli(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_profile-cli"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn list_shows_the_built_in_targets_and_the_snippets() {
    let output = profile_cli(&["list"]);
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    let snippet = include_str!("../../inference_profiling/snippets/example_candidate/target.rs");
    let line = snippet
        .lines()
        .position(|l| l.starts_with("impl ProfileTarget for ExampleCandidate"))
        .unwrap()
        + 1;
    let place = format!("inference_profiling/snippets/example_candidate/target.rs:{line}");
    let row = stdout
        .lines()
        .find(|l| l.starts_with("example-candidate "))
        .expect("the snippet is listed");
    assert!(row.contains(&place), "{row}");
    for name in [
        "detection-pipeline",
        "detection-postprocess",
        "letterbox-preprocess",
    ] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} listed"));
        assert!(row.contains("examples/src/targets.rs:"), "{row}");
    }
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_main_job_runs_on_the_embedded_default() {
    let out = tempfile::tempdir().unwrap();
    let output = profile_cli(&[
        "run",
        "detection-pipeline",
        "--run-id",
        "main",
        "--output-dir",
        out.path().to_str().unwrap(),
    ]);
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("on dummy with built-in defaults: device cpu, warmup 1, iterations 1"),
        "{stdout}"
    );
    let manifest_path = out
        .path()
        .join("detection-pipeline/runs/main/manifest.yaml");
    assert!(
        stdout.contains(&format!("manifest: {}", manifest_path.display())),
        "{stdout}"
    );
    let manifest: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    assert_eq!(manifest["status"], "completed");
    assert_eq!(
        manifest["target"]["source"]
            .as_str()
            .map(|s| s.starts_with("examples/src/targets.rs:")),
        Some(true)
    );
    assert_eq!(manifest["record_ids"][0], "dummy-0");
    assert!(Path::new(manifest["expected_trace_path"].as_str().unwrap())
        .ends_with("detection-pipeline/runs/main/trace.nsys-rep"));
}

#[test]
fn help_reads_as_the_manual() {
    let output = profile_cli(&["run", "--help"]);
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    for option in [
        "--config",
        "--data-source",
        "--device",
        "--warmup",
        "--iterations",
        "--capture-range",
        "--record-loading",
        "--seed",
        "--run-id",
        "--output-dir",
        "--print-nsys-command",
    ] {
        assert!(help.contains(option), "{option} missing from run --help");
    }
    assert_eq!(profile_cli(&["frobnicate"]).status.code(), Some(2));
}
