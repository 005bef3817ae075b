//! `profile-cli analyze` on a run of a target defined here, with an export
//! written beside it from the documented schema.

use std::path::Path;

use profiling_core::prelude::*;
use rusqlite::{params, Connection};

mod common;

use common::cli;

#[derive(Default)]
struct Ranged;

#[profile_target(name = "analyze-ranged")]
impl ProfileTarget for Ranged {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        let _range = profiling_range("preprocess");
        std::hint::black_box((0..1_000u64).sum::<u64>());
        Ok(())
    }
}

const TID: i64 = (42 << 24) | 3;

/// Two passes, each with `preprocess` launching one `gemm`: 200 ns of GPU
/// work in the first, 100 ns in the second.
fn write_export(path: &Path, passes: i64) {
    let db = Connection::open(path).unwrap();
    db.execute_batch(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT, globalTid INTEGER, textId INTEGER);
         CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER);
         CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL);
         INSERT INTO StringIds VALUES (1, 'gemm');",
    )
    .unwrap();
    let range = |start: i64, end: i64, text: &str| {
        db.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?1, ?2, 59, ?3, ?4)",
            params![start, end, text, TID],
        )
        .unwrap();
    };
    range(0, passes * 1_000, "profile-target");
    for pass in 0..passes {
        let b = pass * 1_000;
        range(b, b + 1_000, &format!("iteration {pass}"));
        range(b + 100, b + 600, "preprocess");
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?1, ?2, ?3, ?4)",
            params![b + 200, b + 210, TID, pass],
        )
        .unwrap();
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?1, ?2, ?3, ?4, 1, 1)",
            params![b + 300, b + 500 - 100 * pass.min(1), pass, 42i64 << 24],
        )
        .unwrap();
    }
}

#[test]
fn a_run_directory_gets_its_analysis_beside_the_manifest_and_on_its_page() {
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().display().to_string();
    let ran = cli(&[
        "run",
        "analyze-ranged",
        "--iterations",
        "2",
        "--output-dir",
        &out_dir,
        "--run-id",
        "r",
    ]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let run_dir = out.path().join("analyze-ranged/runs/r");
    write_export(&run_dir.join("trace.sqlite"), 2);

    let outcome = cli(&["analyze", run_dir.to_str().unwrap()]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let lines: Vec<&str> = outcome.stdout.lines().collect();
    assert_eq!(
        lines[0],
        format!("analysis: {}", run_dir.join("analysis.yaml").display())
    );
    assert_eq!(
        lines[1],
        format!("report: {}", run_dir.join("report.html").display())
    );
    assert_eq!(
        lines[2],
        "capture `profile-target` of process 42: 2.00 µs, 2 passes; GPU busy 15.0 % of a pass on average, longest idle 600 ns"
    );
    assert!(
        lines[3].starts_with("range path  calls  host p50  manifest p50  GPU busy p50"),
        "{}",
        outcome.stdout
    );
    let row: Vec<&str> = lines[4]
        .split("  ")
        .filter(|c| !c.is_empty())
        .map(str::trim)
        .collect();
    assert_eq!(row[..3], ["preprocess", "2", "500 ns"], "{}", lines[4]);
    assert_eq!(
        row[4..],
        ["100 ns", "150 ns", "200 ns", "gemm ×2"],
        "{}",
        lines[4]
    );

    let analysis: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(run_dir.join("analysis.yaml")).unwrap())
            .unwrap();
    assert_eq!(analysis["ranges"][0]["path"], "preprocess");
    assert_eq!(analysis["ranges"][0]["gpu_sum_ns"], 300);
    assert!(
        analysis["ranges"][0]["manifest_host_p50_ns"]
            .as_u64()
            .unwrap()
            > 0
    );
    let page = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(
        page.contains("<tr data-gpu-path=\"preprocess\">"),
        "the page shows it"
    );

    let json = cli(&["analyze", run_dir.to_str().unwrap(), "--json"]);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(document["passes"].as_array().unwrap().len(), 2);
    assert_eq!(document["ranges"][0]["kernels"][0]["name"], "gemm");

    // What Nsight saw of the GPU went into the store the run went into,
    // beside the run's own record: its range's GPU busy time, once
    // however often it is analyzed.
    let store = rusqlite::Connection::open(out.path().join("history.sqlite")).unwrap();
    let stored: Vec<(String, String, String, String, i64, i64, i64)> = store
        .prepare(
            "SELECT u.kind, u.run_id, r.part, r.path, r.count, r.p50_ns, r.max_ns
             FROM runs u JOIN ranges r ON r.run = u.id WHERE u.kind = 'analyze'",
        )
        .unwrap()
        .query_map([], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
                row.get(5)?,
                row.get(6)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        stored,
        [(
            "analyze".to_owned(),
            "r".to_owned(),
            "gpu".to_owned(),
            "preprocess".to_owned(),
            2,
            100,
            200
        )]
    );
    let kinds: Vec<String> = store
        .prepare("SELECT kind FROM runs ORDER BY kind")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(kinds, ["analyze", "run"]);
}

#[test]
fn another_runs_report_or_a_report_without_nsys_is_refused_and_nothing_written() {
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().display().to_string();
    let ran = cli(&[
        "run",
        "analyze-ranged",
        "--iterations",
        "3",
        "--output-dir",
        &out_dir,
        "--run-id",
        "r",
        "--no-report",
    ]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let run_dir = out.path().join("analyze-ranged/runs/r");
    write_export(&run_dir.join("trace.sqlite"), 2);
    let refused = cli(&["analyze", run_dir.to_str().unwrap()]);
    assert_eq!(refused.code, 2);
    assert!(
        refused.stderr.ends_with("holds 2 passes and the run's manifest 3: a report of another run or process? give --force to analyze it anyway\n"),
        "{}",
        refused.stderr
    );
    assert!(!run_dir.join("analysis.yaml").exists());
    let forced = cli(&["analyze", run_dir.to_str().unwrap(), "--force"]);
    assert_eq!(forced.code, 0, "{}", forced.stderr);

    // A report not exported yet: without nsys, the command to run; with
    // it, nsys's refusal of a file that is not a report.
    let report = out.path().join("capture.nsys-rep");
    std::fs::write(&report, "binary report").unwrap();
    let export = format!(
        "nsys export --type sqlite --output {} {}",
        out.path().join("capture.sqlite").display(),
        report.display()
    );
    let unexported = cli(&["analyze", report.to_str().unwrap()]);
    assert_eq!(unexported.code, 2);
    if std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|dir| dir.join("nsys").is_file())
    {
        assert!(
            unexported
                .stderr
                .starts_with(&format!("error: `{export}` failed (exit status: ")),
            "{}",
            unexported.stderr
        );
    } else {
        assert!(
            unexported.stderr.contains(&format!(
                "needs exporting to SQLite, and nsys is not on PATH (scripts/setup-nsys installs it): run this where Nsight Systems is, then analyze again:\n  {export}"
            )),
            "{}",
            unexported.stderr
        );
    }
    assert!(!out.path().join("capture.sqlite").exists());
    let missing = cli(&["analyze", out.path().join("nothing").to_str().unwrap()]);
    assert_eq!(missing.code, 2);
}
