//! `profile-cli` built with the `ort` feature: the OCR targets end to end on
//! the images `scripts/setup-onnxruntime` renders, ONNX Runtime found with
//! no variable set by hand, each operator of the model as a range, and a
//! CUDA run refused by the CPU-only runtime.
#![cfg(feature = "ort")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_yaml::Value;

use crate::common::workspace_root;

fn profile_cli(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_profile-cli"))
        .args(args)
        .current_dir(dir)
        .env_remove("ORT_DYLIB_PATH")
        .env_remove("LD_LIBRARY_PATH")
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

/// The default images, or `None` (said) when the set-up has not run.
fn images() -> Option<PathBuf> {
    let images = workspace_root().join(".venv/ocr/images");
    if images.is_dir() {
        Some(images)
    } else {
        eprintln!("skipped: no .venv/ocr/images: scripts/setup-onnxruntime renders them");
        None
    }
}

fn config(dir: &Path, target: &str, images: &Path, extra: &str) -> PathBuf {
    let path = dir.join(format!("{target}.yaml"));
    std::fs::write(
        &path,
        format!(
            "target:\n  name: {target}\n  parameters: {{threads: 1{extra}}}\ndata_source: {{name: images, directory: {}, limit: 2}}\nwarmup: 1\niterations: 2\n",
            images.display()
        ),
    )
    .unwrap();
    path
}

fn tree_entry<'a>(manifest: &'a Value, path: &str) -> Option<&'a Value> {
    manifest["timings"]["range_tree"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|r| r["path"].as_str() == Some(path))
}

/// Every step of the detector is a range, and with `operator_ranges` the
/// model's operators are ranges under `model`: in the manifest's tree, in
/// the ranges by name, the summary and `trace.json`, and the model's self
/// time is what its operators leave.
#[test]
fn ocr_det_ranges_each_step_and_each_operator_of_the_model() {
    let Some(images) = images() else { return };
    let out = tempfile::tempdir().unwrap();
    let config = config(out.path(), "ocr-det", &images, ", operator_ranges: true");
    let output = profile_cli(
        out.path(),
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--run-id",
            "ops",
            "--output-dir",
            ".",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let run = out.path().join("ocr-det/runs/ops");
    let manifest: Value =
        serde_yaml::from_str(&std::fs::read_to_string(run.join("manifest.yaml")).unwrap()).unwrap();
    for path in [
        "resize",
        "normalize",
        "model",
        "postprocess",
        "postprocess/binarize",
        "postprocess/contours",
        "postprocess/boxes",
        "postprocess/order",
    ] {
        let entry =
            tree_entry(&manifest, path).unwrap_or_else(|| panic!("{path}: {}", text(&output)));
        // Two images a pass, two passes.
        assert_eq!(entry["count"].as_u64(), Some(4), "{path}");
    }
    let operators: Vec<&Value> = manifest["timings"]["range_tree"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter(|r| r["path"].as_str().is_some_and(|p| p.starts_with("model/")))
        .collect();
    let names: Vec<&str> = operators
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"Conv"), "{names:?}");
    assert!(operators.len() >= 5, "{names:?}");
    let model = tree_entry(&manifest, "model").unwrap();
    let total = |entry: &Value, key: &str| entry[key]["total_ns"].as_u64().unwrap();
    let operators_total: u64 = operators.iter().map(|r| total(r, "inclusive")).sum();
    // The operators fill most of the model's time, and its self time is the rest.
    assert!(operators_total <= total(model, "inclusive"));
    assert!(
        operators_total * 2 > total(model, "inclusive"),
        "{operators_total} of {}",
        total(model, "inclusive")
    );
    assert_eq!(
        total(model, "exclusive"),
        total(model, "inclusive") - operators_total
    );
    // Every Conv kernel of four runs: a multiple of four calls.
    let conv = tree_entry(&manifest, "model/Conv").unwrap();
    assert_eq!(conv["count"].as_u64().unwrap() % 4, 0, "{conv:?}");
    assert_eq!(conv["depth"].as_u64(), Some(1));
    // By name too, and in the trace.
    assert!(manifest["timings"]["ranges"]
        .as_sequence()
        .unwrap()
        .iter()
        .any(|r| r["name"].as_str() == Some("Conv")));
    let trace = std::fs::read_to_string(run.join("trace.json")).unwrap();
    assert!(trace.contains("\"Conv\""), "no Conv in the trace");
    // The runtime the run loaded, found without a variable.
    let backend = manifest["backend"]["onnxruntime"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(backend.starts_with("1.32.0 ("), "{backend}");
    // Boxes found in each image.
    let summaries = manifest["output_summaries"].as_sequence().unwrap();
    assert!(
        summaries
            .iter()
            .all(|s| s["summary"]["boxes"].as_u64().unwrap_or(0) >= 3),
        "{summaries:?}"
    );
}

/// Recognition reads the lines the images were drawn with.
#[test]
fn ocr_rec_reads_the_rendered_lines() {
    let Some(images) = images() else { return };
    let out = tempfile::tempdir().unwrap();
    let config = config(out.path(), "ocr-rec", &images, "");
    let output = profile_cli(
        out.path(),
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--run-id",
            "rec",
            "--output-dir",
            ".",
            "--no-report",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let manifest: Value = serde_yaml::from_str(
        &std::fs::read_to_string(out.path().join("ocr-rec/runs/rec/manifest.yaml")).unwrap(),
    )
    .unwrap();
    for path in ["crop", "resize", "model", "decode"] {
        assert!(
            tree_entry(&manifest, path).is_some(),
            "{path}: {}",
            text(&output)
        );
    }
    let labels: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(images.parent().unwrap().join("labels.json")).unwrap(),
    )
    .unwrap();
    let squeeze = |s: &str| s.replace(' ', "");
    let drawn: Vec<String> = labels["images"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|image| image["lines"].as_array().unwrap().iter())
        .map(|line| squeeze(line["text"].as_str().unwrap()))
        .collect();
    let read: Vec<String> = manifest["output_summaries"]
        .as_sequence()
        .unwrap()
        .iter()
        .flat_map(|s| s["summary"]["texts"].as_sequence().unwrap().iter())
        .map(|t| squeeze(t.as_str().unwrap()))
        .collect();
    assert!(read.len() >= 6, "{read:?}");
    // The recognizer drops some spaces; the characters are the drawn ones.
    let found = read.iter().filter(|t| drawn.contains(t)).count();
    assert!(
        found * 10 >= read.len() * 8,
        "{found} of {read:?} among {drawn:?}"
    );
}

/// The `onnxruntime` wheel has no CUDA execution provider: a CUDA run is
/// refused before anything runs, saying why, not run on the CPU.
/// Named without a config, recognition runs on its example config (the
/// rendered images), says so, and reads text: not the built-in defaults'
/// one random record, on which it reads nothing.
#[test]
fn ocr_rec_without_a_config_runs_on_its_example_config() {
    if images().is_none() {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let output = profile_cli(
        &workspace_root(),
        &[
            "run",
            "ocr-rec",
            "--warmup",
            "0",
            "--iterations",
            "1",
            "--run-id",
            "own",
            "--output-dir",
            out.path().to_str().unwrap(),
            "--no-report",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).starts_with(
            "note: `ocr-rec` needs data of its own: it runs on its config examples/ocr/ocr-rec.yaml (scripts/setup-onnxruntime installs it); --config FILE gives another\n"
        ),
        "{}",
        text(&output)
    );
    let manifest: Value = serde_yaml::from_str(
        &std::fs::read_to_string(out.path().join("ocr-rec/runs/own/manifest.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["data_source"]["name"], "images", "{manifest:?}");
    let texts: usize = manifest["output_summaries"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|s| s["summary"]["texts"].as_sequence().map_or(0, Vec::len))
        .sum();
    assert!(texts >= 6, "{}", text(&output));
}

#[test]
fn ocr_det_on_cuda_is_refused_by_a_cpu_only_runtime() {
    let Some(images) = images() else { return };
    let out = tempfile::tempdir().unwrap();
    let config = config(out.path(), "ocr-det", &images, "");
    let output = profile_cli(
        out.path(),
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--device",
            "cuda",
            "--output-dir",
            ".",
        ],
    );
    assert_ne!(output.status.code(), Some(0), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("has no CUDA execution provider"),
        "{}",
        text(&output)
    );
    assert!(
        !out.path().join("ocr-det/runs").exists()
            || std::fs::read_dir(out.path().join("ocr-det/runs"))
                .unwrap()
                .count()
                == 0
    );
}
