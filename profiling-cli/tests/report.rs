//! `report.html` and `profile-cli report`, in-process, on a target whose
//! ranges nest one name under two parents.

use std::path::{Path, PathBuf};

use profiling_core::prelude::*;

mod common;

use common::cli;

/// `prepare { scale }` and `postprocess { scale }`, `scale` timed twice
/// as long under `postprocess`.
#[derive(Default)]
struct Nested;

fn busy(micros: u64) {
    let started = std::time::Instant::now();
    while started.elapsed() < std::time::Duration::from_micros(micros) {
        std::hint::spin_loop();
    }
}

#[profile_target(name = "report-nested")]
impl ProfileTarget for Nested {
    type Prepared = ();
    type Output = ();

    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }

    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        {
            let _outer = profiling_range("prepare");
            let _inner = profiling_range("scale");
            busy(100);
        }
        // Twenty times `prepare`'s: a preempted `prepare` on a busy machine
        // does not outweigh it, so the tree's order is fixed.
        let _outer = profiling_range("postprocess");
        let _inner = profiling_range("scale");
        busy(2_000);
        Ok(())
    }
}

/// One run at a time: ranges are recorded process-wide, so a run's capture
/// would count the ranges of another test's run going on meanwhile.
static RUNS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run(out: &Path, run_id: &str, extra: &[&str]) -> common::Outcome {
    let _alone = RUNS.lock().unwrap_or_else(|e| e.into_inner());
    let out_dir = out.display().to_string();
    let mut args = vec![
        "run",
        "report-nested",
        "--warmup",
        "2",
        "--iterations",
        "8",
        "--output-dir",
        &out_dir,
        "--run-id",
        run_id,
    ];
    args.extend_from_slice(extra);
    cli(&args)
}

fn run_dir(out: &Path, run_id: &str) -> PathBuf {
    out.join("report-nested/runs").join(run_id)
}

#[test]
fn a_run_writes_its_page_with_every_range_path_and_says_where() {
    let out = tempfile::tempdir().unwrap();
    let outcome = run(out.path(), "a", &[]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let page_path = run_dir(out.path(), "a").join("report.html");
    assert!(
        outcome
            .stdout
            .ends_with(&format!("report: {}\n", page_path.display())),
        "{}",
        outcome.stdout
    );
    let manifest: serde_yaml::Value = serde_yaml::from_str(
        &std::fs::read_to_string(run_dir(out.path(), "a").join("manifest.yaml")).unwrap(),
    )
    .unwrap();
    let paths: Vec<(&str, u64)> = manifest["timings"]["range_tree"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| (p["path"].as_str().unwrap(), p["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        paths,
        [
            ("postprocess", 8),
            ("postprocess/scale", 8),
            ("prepare", 8),
            ("prepare/scale", 8)
        ]
    );
    // Per name, `scale` stays one entry of 16.
    let scale = manifest["timings"]["ranges"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "scale")
        .unwrap();
    assert_eq!(scale["count"], 16);
    let under_post = &manifest["timings"]["range_tree"][1];
    assert!(under_post["inclusive"]["p50_ns"].as_u64().unwrap() >= 2_000_000);
    assert_eq!(under_post["inclusive_per_pass"]["count"], 8);

    let html = std::fs::read_to_string(&page_path).unwrap();
    for path in [
        "postprocess",
        "postprocess/scale",
        "prepare",
        "prepare/scale",
    ] {
        assert!(
            html.contains(&format!("<tr data-path=\"{path}\">")),
            "{path}"
        );
    }
    // The flame graph has each `scale` under its own parent.
    assert_eq!(html.matches("<svg class=\"flamegraph\"").count(), 1);
    assert_eq!(html.matches("<title>scale (").count(), 2, "{html}");
    assert!(html.contains("Pass time by pass: 2 warmup, 8 measured"));
}

#[test]
fn no_report_when_asked_for_none_and_json_names_it_otherwise() {
    let out = tempfile::tempdir().unwrap();
    assert_eq!(run(out.path(), "quiet", &["--no-report"]).code, 0);
    assert!(!run_dir(out.path(), "quiet").join("report.html").exists());
    assert!(run_dir(out.path(), "quiet").join("manifest.yaml").exists());

    let config = out.path().join("config.yaml");
    std::fs::write(
        &config,
        "target: {name: report-nested}\nwrite_report: false\n",
    )
    .unwrap();
    let out_dir = out.path().display().to_string();
    let alone = RUNS.lock().unwrap_or_else(|e| e.into_inner());
    let configured = cli(&[
        "run",
        "--config",
        config.to_str().unwrap(),
        "--output-dir",
        &out_dir,
        "--run-id",
        "configured",
    ]);
    drop(alone);
    assert_eq!(configured.code, 0, "{}", configured.stderr);
    assert!(
        !configured.stdout.contains("report:"),
        "{}",
        configured.stdout
    );
    assert!(!run_dir(out.path(), "configured")
        .join("report.html")
        .exists());

    let json = run(out.path(), "json", &["--json"]);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        document["report_path"].as_str().map(PathBuf::from),
        Some(run_dir(out.path(), "json").join("report.html"))
    );
}

#[test]
fn report_writes_a_run_page_and_a_comparison_page_and_overwrites_nothing_else() {
    let out = tempfile::tempdir().unwrap();
    assert_eq!(run(out.path(), "a", &["--no-report"]).code, 0);
    assert_eq!(run(out.path(), "b", &["--no-report"]).code, 0);
    let (a, b) = (run_dir(out.path(), "a"), run_dir(out.path(), "b"));

    let one = cli(&["report", a.to_str().unwrap()]);
    assert_eq!(one.code, 0, "{}", one.stderr);
    assert_eq!(
        one.stdout,
        format!("report: {}\n", a.join("report.html").display())
    );
    assert!(a.join("report.html").is_file());

    let both = cli(&[
        "report",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--resamples",
        "1000",
    ]);
    assert_eq!(both.code, 0, "{}", both.stderr);
    let default = b.join("report-vs-a.html");
    assert_eq!(both.stdout, format!("report: {}\n", default.display()));
    let html = std::fs::read_to_string(&default).unwrap();
    assert!(html.contains("<table id=\"comparison\""));
    // The comparison's rows are by name, as `compare` prints them.
    assert!(html.contains("<tr data-row=\"scale\">"), "{html}");
    assert!(html.contains("id=\"ratios\""));
    assert_eq!(html.matches("<svg class=\"flamegraph\"").count(), 2);

    // -o FILE: written there; an existing file only with --force.
    let file = out.path().join("mine.html");
    std::fs::write(&file, "my notes").unwrap();
    let refused = cli(&["report", a.to_str().unwrap(), "-o", file.to_str().unwrap()]);
    assert_eq!(refused.code, 2);
    assert_eq!(
        refused.stderr,
        format!(
            "error: {} exists: give --force to replace it, or another -o FILE\n",
            file.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "my notes");
    let forced = cli(&[
        "report",
        a.to_str().unwrap(),
        "-o",
        file.to_str().unwrap(),
        "--force",
    ]);
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .starts_with("<!DOCTYPE html>"));

    // A run made before samples were kept: a page, without the plots.
    std::fs::remove_file(a.join("samples.bin")).unwrap();
    let old = cli(&["report", a.to_str().unwrap()]);
    assert_eq!(old.code, 0, "{}", old.stderr);
    assert!(old.stderr.contains("has no samples.bin"), "{}", old.stderr);
    let html = std::fs::read_to_string(a.join("report.html")).unwrap();
    assert!(!html.contains("id=\"pass-histogram\""));

    let missing = cli(&["report", out.path().join("nope").to_str().unwrap()]);
    assert_eq!(missing.code, 2);
}
