//! `profile-cli compare`, `baselines`, `run --baseline` and `ab`, end to end and
//! in-process, on a busy-waiting target whose durations come from
//! `target.parameters`.
//!
//! The timed runs are in one test each, one after the other (a lock), so
//! that they do not share this machine's cores with each other. Where a
//! test asserts verdicts that depend on how steady the machine is (a 10 µs
//! range judged "no change"), the runs are real but their samples are the
//! ones the target was asked for ([`asked_samples`]): a busy machine moves
//! live timings, not what the comparison must conclude from given ones.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use profiling_core::prelude::*;

#[path = "common/browser.rs"]
mod browser;
mod common;

use common::cli;

/// Busy-waits in two ranges: `work` for `work_us` and `steady` for
/// `steady_us`, each varied by up to ±`jitter` by a fixed sequence (the
/// same in every run), as real code varies from call to call.
struct Spin {
    work: Duration,
    steady: Duration,
    jitter: f64,
    calls: u64,
    fail: bool,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SpinParameters {
    work_us: u64,
    #[serde(default = "steady_default")]
    steady_us: u64,
    #[serde(default = "jitter_default")]
    jitter: f64,
    #[serde(default)]
    fail: bool,
    /// The factory fails: the target cannot be built.
    #[serde(default)]
    fail_to_build: bool,
}

fn steady_default() -> u64 {
    10
}

fn jitter_default() -> f64 {
    0.04
}

fn spin_target() -> anyhow::Result<Spin> {
    let parameters: SpinParameters = profiling_core::target::parameters()?;
    if parameters.fail_to_build {
        anyhow::bail!("asked to fail when built");
    }
    Ok(Spin {
        work: Duration::from_micros(parameters.work_us),
        steady: Duration::from_micros(parameters.steady_us),
        jitter: parameters.jitter,
        calls: 0,
        fail: parameters.fail,
    })
}

fn spin_for(duration: Duration) {
    let started = Instant::now();
    while started.elapsed() < duration {
        std::hint::spin_loop();
    }
}

#[profile_target(name = "compare-spin", factory = spin_target)]
impl ProfileTarget for Spin {
    type Prepared = ();
    type Output = ();

    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }

    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        if self.fail {
            anyhow::bail!("asked to fail");
        }
        // -1 to 1 in 201 steps, in a fixed order.
        let step = ((self.calls * 7919) % 201) as f64 / 100.0 - 1.0;
        self.calls += 1;
        let scale = 1.0 + self.jitter * step;
        {
            let _range = profiling_range("work");
            spin_for(self.work.mul_f64(scale));
        }
        let _range = profiling_range("steady");
        spin_for(self.steady.mul_f64(scale));
        Ok(())
    }
}

/// One timed run at a time.
static TIMED: Mutex<()> = Mutex::new(());

/// A run of `compare-spin` with `work_us`, as `run_id`, under `out`;
/// returns its directory.
fn spin_run(out: &Path, run_id: &str, work_us: u64, extra: &[&str]) -> PathBuf {
    spin_run_with(out, run_id, &format!("work_us: {work_us}"), extra)
}

/// [`spin_run`] with the target's parameters spelled out.
fn spin_run_with(out: &Path, run_id: &str, parameters: &str, extra: &[&str]) -> PathBuf {
    let config = spin_config(out, run_id, parameters);
    let outcome = run_config(&config, out, run_id, extra);
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    out.join("compare-spin/runs").join(run_id)
}

/// A run of `compare-spin` with `work_us` (as [`spin_run`]), whose
/// samples are then replaced by what the target was asked to spend: 200
/// passes of `work` and `steady` in the target's fixed jitter sequence,
/// and 500 ns of the pass outside both, as a machine with no noise would
/// measure them. What of the live run's machine could explain a change
/// away goes with them: its canaries are not read, and its measuring
/// thread was never off the CPU, as on a machine with no noise.
fn asked_run(out: &Path, run_id: &str, work_us: u64) -> PathBuf {
    let dir = spin_run(out, run_id, work_us, &[]);
    std::fs::write(
        dir.join(profiling_core::driver::run_samples::SAMPLES_FILE),
        asked_samples(work_us, steady_default()).encode(),
    )
    .unwrap();
    let manifest = dir.join("manifest.yaml");
    let mut document: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    let machine = document["timings"]["machine"].as_mapping_mut().unwrap();
    machine.remove("canary");
    machine.insert("off_cpu".into(), 0.0.into());
    machine.insert("involuntary_switches".into(), 0.into());
    std::fs::write(&manifest, serde_yaml::to_string(&document).unwrap()).unwrap();
    dir
}

fn asked_samples(work_us: u64, steady_us: u64) -> profiling_core::driver::run_samples::RunSamples {
    use profiling_core::timing::SampleSet;
    let (mut passes, mut work, mut steady) = (
        SampleSet::with_capacity(200),
        SampleSet::with_capacity(200),
        SampleSet::with_capacity(200),
    );
    for call in 0..200u64 {
        let step = ((call * 7919) % 201) as f64 / 100.0 - 1.0;
        let scale = 1.0 + jitter_default() * step;
        let (w, s) = (
            (work_us as f64 * 1e3 * scale) as u64,
            (steady_us as f64 * 1e3 * scale) as u64,
        );
        work.push(w);
        steady.push(s);
        passes.push(w + s + 500);
    }
    let mut ranges = std::collections::BTreeMap::new();
    ranges.insert("work".to_owned(), (work.clone(), work));
    ranges.insert("steady".to_owned(), (steady.clone(), steady));
    profiling_core::driver::run_samples::RunSamples::from_sets(&passes, &passes, &ranges)
}

/// A config of `compare-spin` with `parameters`, as `out/NAME.yaml`: 200
/// passes of one record.
fn spin_config(out: &Path, name: &str, parameters: &str) -> PathBuf {
    let config = out.join(format!("{name}.yaml"));
    std::fs::write(
        &config,
        format!(
            "target: {{name: compare-spin, parameters: {{{parameters}}}}}\n\
             data_source: {{name: dummy, record_count: 1}}\nwarmup: 5\niterations: 200\n"
        ),
    )
    .unwrap();
    config
}

/// `profile-cli run --config CONFIG --output-dir OUT --run-id RUN_ID EXTRA...`
fn run_config(config: &Path, out: &Path, run_id: &str, extra: &[&str]) -> common::Outcome {
    let (config, out_dir) = (path(config), path(out));
    let mut args = vec![
        "run",
        "--config",
        &config,
        "--output-dir",
        &out_dir,
        "--run-id",
        run_id,
    ];
    args.extend_from_slice(extra);
    cli(&args)
}

fn path(dir: &Path) -> String {
    dir.display().to_string()
}

/// The `--json` comparison's rows by label: (verdict, ratio, interval).
fn rows(document: &serde_json::Value, index: usize) -> Vec<(String, String, f64, [f64; 2])> {
    document["comparisons"][index]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let label = match (row["kind"].as_str().unwrap(), row["name"].as_str()) {
                ("range", Some(name)) => name.to_owned(),
                ("range_self", Some(name)) => format!("{name} (self)"),
                (kind, _) => kind.to_owned(),
            };
            let interval = &row["interval"];
            (
                label,
                row["verdict"].as_str().unwrap().to_owned(),
                row["ratio"].as_f64().unwrap_or(f64::NAN),
                [
                    interval[0].as_f64().unwrap_or(f64::NAN),
                    interval[1].as_f64().unwrap_or(f64::NAN),
                ],
            )
        })
        .collect()
}

fn compare_json(args: &[&str]) -> (u8, serde_json::Value) {
    let mut all = vec!["compare", "--json"];
    all.extend_from_slice(args);
    let outcome = cli(&all);
    assert!(
        outcome.code == 0 || outcome.code == 3,
        "{}\n{}",
        outcome.stdout,
        outcome.stderr
    );
    (outcome.code, serde_json::from_str(&outcome.stdout).unwrap())
}

#[test]
fn the_same_duration_twice_is_no_change() {
    let _timed = TIMED.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().unwrap();
    let a = asked_run(out.path(), "a", 1_000);
    let b = asked_run(out.path(), "b", 1_000);
    let (code, document) = compare_json(&[&path(&a), &path(&b), "--noise-threshold", "0.05"]);
    assert_eq!(code, 0);
    let rows = rows(&document, 0);
    // The pass and the call first; the ranges moved a pass by next to
    // nothing, in either order.
    let labels: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(labels[..2], ["pass", "call"], "{rows:?}");
    let mut ranges = labels[2..].to_vec();
    ranges.sort_unstable();
    assert_eq!(ranges, ["steady", "work"], "{rows:?}");
    for (label, verdict, ratio, [low, high]) in &rows {
        assert_eq!(verdict, "no change", "{label}: {ratio} [{low}, {high}]");
    }
    assert_eq!(
        document["comparisons"][0]["differences"],
        serde_json::json!([])
    );
    assert_eq!(document["regressed"], false);
}

#[test]
fn a_slower_run_is_slower_where_it_changed_and_the_reverse_is_faster() {
    let _timed = TIMED.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().unwrap();
    let base = asked_run(out.path(), "base", 1_000);
    let slow = asked_run(out.path(), "slow", 1_300);
    let (code, document) = compare_json(&[&path(&base), &path(&slow)]);
    assert_eq!(code, 0, "a regression exits 0 without --fail-on-regression");
    assert_eq!(document["regressed"], true);
    let found = rows(&document, 0);
    let row = |label: &str| found.iter().find(|r| r.0 == label).unwrap().clone();
    for label in ["pass", "work"] {
        let (_, verdict, ratio, [low, high]) = row(label);
        assert_eq!(verdict, "slower", "{label}: {ratio} [{low}, {high}]");
        assert!(
            low <= 1.3 && 1.3 <= high,
            "{label}: {ratio} [{low}, {high}]"
        );
    }
    let (_, verdict, ratio, interval) = row("steady");
    assert_eq!(verdict, "no change", "steady: {ratio} {interval:?}");
    // The work range moves the pass by about 30 %; it comes first.
    assert_eq!(found[2].0, "work");
    let share = document["comparisons"][0]["rows"][2]["pass_share"]
        .as_f64()
        .unwrap();
    assert!((share - 0.297).abs() < 0.03, "{share}");
    let difference = &document["comparisons"][0]["differences"][0];
    assert_eq!(difference["key"], "target.parameters.work_us");
    assert_eq!(
        (&difference["base"], &difference["candidate"]),
        (&"1000".into(), &"1300".into())
    );

    let reverse = compare_json(&[&path(&slow), &path(&base)]).1;
    let reversed = rows(&reverse, 0);
    let verdict_of = |label: &str| reversed.iter().find(|r| r.0 == label).unwrap().1.clone();
    assert_eq!(
        (verdict_of("pass"), verdict_of("work"), verdict_of("steady")),
        (
            "faster".to_owned(),
            "faster".to_owned(),
            "no change".to_owned()
        )
    );

    // The regression gate: 3 only for the slower candidate.
    let gate = |first: &Path, second: &Path| {
        cli(&[
            "compare",
            &path(first),
            &path(second),
            "--fail-on-regression",
        ])
        .code
    };
    assert_eq!(gate(&base, &slow), 3);
    assert_eq!(gate(&slow, &base), 0);

    // The table: the runs, what differs, aligned rows, the method.
    let table = cli(&["compare", &path(&base), &path(&slow), "--color", "never"]);
    assert_eq!(table.code, 0, "{}", table.stderr);
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "base:      compare-spin@base (completed, 200 passes)"
    );
    assert_eq!(
        lines[1],
        "candidate: compare-spin@slow (completed, 200 passes)"
    );
    assert_eq!(lines[2], "differs: target.parameters.work_us: 1000 → 1300");
    assert!(lines[3].starts_with("git: "), "{}", table.stdout);
    // What the machine did during each run's capture.
    assert!(
        lines[4].starts_with("machine: base load "),
        "{}",
        table.stdout
    );
    assert!(
        lines[5].starts_with("machine: candidate load "),
        "{}",
        table.stdout
    );
    assert!(lines[4].contains("off the CPU "), "{}", table.stdout);
    // Columns are aligned by characters (µs and Δ are one each).
    let verdict_column = lines[6].chars().count() - "verdict".len();
    let header: String = lines[6].chars().skip(verdict_column).collect();
    assert_eq!(header, "verdict", "{}", table.stdout);
    for line in &lines[7..11] {
        let verdict: String = line.chars().skip(verdict_column).collect();
        assert!(
            ["slower", "no change"].contains(&verdict.as_str()),
            "verdicts align under their header: {line:?}\n{}",
            table.stdout
        );
    }
    assert!(
        !table.stdout.contains('\x1b'),
        "no colour when asked for none"
    );
    let colored = cli(&["compare", &path(&base), &path(&slow), "--color", "always"]);
    assert!(
        colored.stdout.contains("\x1b[31mslower\x1b[0m"),
        "{}",
        colored.stdout
    );

    let markdown = cli(&["compare", &path(&base), &path(&slow), "--markdown"]);
    assert!(
        markdown
            .stdout
            .contains("|---|---:|---:|---:|---:|---:|---:|---|\n| pass |"),
        "{}",
        markdown.stdout
    );
    assert!(
        markdown.stdout.contains("| **slower** |"),
        "{}",
        markdown.stdout
    );
}

#[test]
fn baselines_are_saved_listed_compared_with_and_never_replaced_without_force() {
    let _timed = TIMED.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().unwrap();
    let first = spin_run(out.path(), "first", 1_000, &["--save-baseline", "main"]);
    let saved = out.path().join("compare-spin/baselines/main");
    assert!(saved.join("samples.bin").is_file() && saved.join("manifest.yaml").is_file());

    // A second save under the same name is refused before anything runs.
    let config = out.path().join("first.yaml");
    let out_dir = path(out.path());
    let refused = run_config(&config, out.path(), "second", &["--save-baseline", "main"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert_eq!(
        refused.stderr,
        format!(
            "error: baseline `main` of `compare-spin` exists ({}): give --force to replace it\n",
            saved.display()
        )
    );
    assert!(
        !out.path().join("compare-spin/runs/second").exists(),
        "nothing ran"
    );

    // Compared with after a run: the table follows the run's summary.
    // Three times the work: a change no drift of the machine's speed
    // between the live runs (their canaries) explains away.
    let slow_config = spin_config(out.path(), "slow", "work_us: 3000");
    let run = |run_id: &str, extra: &[&str]| run_config(&slow_config, out.path(), run_id, extra);
    let compared = run("slow", &["--baseline", "main", "--color", "never"]);
    assert_eq!(compared.code, 0, "{}", compared.stderr);
    assert!(
        compared
            .stdout
            .contains("compared with baseline `main`:\nbase:      compare-spin@first (baseline main) (completed, 200 passes)\ncandidate: compare-spin@slow (completed, 200 passes)\n"),
        "{}",
        compared.stdout
    );
    let gated = run("slow2", &["--baseline", "main", "--fail-on-regression"]);
    assert_eq!(gated.code, 3, "{}", gated.stdout);
    let json = run("slow3", &["--baseline", "main", "--json"]);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(document["status"], "completed");
    assert_eq!(document["comparison"]["regressed"], true);

    // `compare --baseline` for an existing run, and the list.
    let slow = out.path().join("compare-spin/runs/slow");
    let (code, document) = compare_json(&["--baseline", "main", &path(&slow)]);
    assert_eq!(code, 0);
    assert_eq!(document["comparisons"][0]["base"]["baseline"], "main");
    let listed = cli(&["baselines", "--output-dir", &out_dir]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(
        listed.stdout.starts_with("compare-spin  main  first  "),
        "{}",
        listed.stdout
    );
    assert!(listed
        .stdout
        .trim_end()
        .ends_with(&saved.display().to_string()));

    // Replaced with --force; the run it came from can go.
    std::fs::remove_dir_all(&first).unwrap();
    let forced = run("slow4", &["--save-baseline", "main", "--force"]);
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    let (_, document) = compare_json(&["--baseline", "main", &path(&slow)]);
    assert_eq!(document["comparisons"][0]["base"]["run_id"], "slow4");

    // An unknown baseline stops a run before it starts.
    let unknown_run = run("slow5", &["--baseline", "nope"]);
    assert_eq!(unknown_run.code, 2, "{}", unknown_run.stderr);
    assert!(
        unknown_run.stderr.contains("has no baseline `nope`"),
        "{}",
        unknown_run.stderr
    );
    assert!(
        !out.path().join("compare-spin/runs/slow5").exists(),
        "nothing ran"
    );

    let unknown = cli(&["compare", "--baseline", "nope", &path(&slow)]);
    assert_eq!(unknown.code, 2);
    assert_eq!(
        unknown.stderr,
        format!(
            "error: profile `compare-spin` has no baseline `nope` in {} (it has main)\n",
            out.path().join("compare-spin/baselines").display()
        )
    );
}

#[test]
fn runs_are_named_by_profile_and_run_id_or_latest() {
    let _timed = TIMED.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().unwrap();
    let out_dir = path(out.path());
    let empty = cli(&[
        "compare",
        "--output-dir",
        &out_dir,
        "compare-spin@latest",
        "compare-spin@x",
    ]);
    assert_eq!(empty.code, 2);
    assert_eq!(
        empty.stderr,
        format!(
            "error: profile `compare-spin` has no completed run in {} for @latest\n",
            out.path().join("compare-spin/runs").display()
        )
    );
    spin_run(out.path(), "older", 1_000, &[]);
    spin_run(out.path(), "newer", 1_000, &[]);
    let (_, document) = compare_json(&[
        "--output-dir",
        &out_dir,
        "compare-spin@older",
        "compare-spin@latest",
    ]);
    assert_eq!(document["comparisons"][0]["base"]["run_id"], "older");
    assert_eq!(document["comparisons"][0]["candidate"]["run_id"], "newer");
    let missing = cli(&[
        "compare",
        "--output-dir",
        &out_dir,
        "compare-spin@older",
        "compare-spin@nope",
    ]);
    assert_eq!(missing.code, 2);
    assert!(
        missing
            .stderr
            .contains("profile `compare-spin` has no run `nope` in "),
        "{}",
        missing.stderr
    );
    let same = cli(&[
        "compare",
        "--output-dir",
        &out_dir,
        "compare-spin@newer",
        "compare-spin@latest",
    ]);
    assert_eq!(same.code, 2);
    assert_eq!(
        same.stderr,
        "error: compare-spin@newer and compare-spin@newer are the same run\n"
    );
}

#[test]
fn what_cannot_be_compared_is_refused_with_exit_2_and_nothing_written() {
    let _timed = TIMED.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().unwrap();
    let good = spin_run(out.path(), "good", 200, &[]);
    // Each refusal exits 2, prints nothing on stdout and writes nothing.
    let refuse = |args: &[&str]| {
        let mut all = vec!["compare"];
        all.extend_from_slice(args);
        let before = walk(out.path());
        let outcome = cli(&all);
        assert_eq!(outcome.code, 2, "{args:?}: {}", outcome.stderr);
        assert_eq!(outcome.stdout, "");
        assert_eq!(walk(out.path()), before, "{args:?} wrote something");
        outcome.stderr
    };

    let not_a_run = out.path().join("empty");
    std::fs::create_dir(&not_a_run).unwrap();
    assert_eq!(
        refuse(&[&path(&not_a_run), &path(&good)]),
        format!(
            "error: {}: not a run: it holds no manifest.yaml\n",
            not_a_run.display()
        )
    );

    // A run made before samples were kept: its manifest has neither
    // schema_version nor samples.
    let old = out.path().join("old");
    std::fs::create_dir(&old).unwrap();
    let manifest = std::fs::read_to_string(good.join("manifest.yaml")).unwrap();
    let older: String = manifest
        .lines()
        .filter(|l| !l.starts_with("schema_version:"))
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        .split("\nsamples:\n")
        .next()
        .unwrap()
        .to_owned();
    std::fs::write(old.join("manifest.yaml"), older).unwrap();
    assert!(
        refuse(&[&path(&good), &path(&old)]).ends_with(
            "run `good` of `compare-spin` was made before runs kept their samples (manifest schema version 1): re-run it to compare it\n"
        )
    );

    // Samples cut short, and of another version.
    let cut = out.path().join("cut");
    copy_run(&good, &cut);
    let bytes = std::fs::read(cut.join("samples.bin")).unwrap();
    std::fs::write(cut.join("samples.bin"), &bytes[..bytes.len() / 2]).unwrap();
    let message = refuse(&[&path(&good), &path(&cut)]);
    assert!(
        message.starts_with(&format!(
            "error: {}: cut short: it ends at byte {}",
            cut.join("samples.bin").display(),
            bytes.len() / 2
        )),
        "{message}"
    );
    let other = out.path().join("other");
    copy_run(&good, &other);
    let mut bytes = std::fs::read(other.join("samples.bin")).unwrap();
    bytes[8] = 9;
    std::fs::write(other.join("samples.bin"), &bytes).unwrap();
    assert!(refuse(&[&path(&good), &path(&other)]).contains(
        "samples.bin: samples file version 9, but this profile-cli reads versions 1 to 3"
    ));

    // The same run twice, by two names.
    assert_eq!(
        refuse(&[&path(&good), &path(&good.join("manifest.yaml"))]),
        "error: compare-spin@good and compare-spin@good are the same run\n"
    );

    // A failed run, with its reason.
    let failing = spin_config(out.path(), "failing", "work_us: 10, fail: true");
    let failed = run_config(&failing, out.path(), "failed", &[]);
    assert_eq!(failed.code, 1);
    let failed_dir = out.path().join("compare-spin/runs/failed");
    assert!(refuse(&[&path(&good), &path(&failed_dir)]).starts_with(
        "error: run `failed` of `compare-spin` failed, so its timings mean nothing: asked to fail"
    ));

    // Different targets, unless allowed.
    let doubled = out.path().join("doubled");
    copy_run(&good, &doubled);
    let text = std::fs::read_to_string(doubled.join("manifest.yaml")).unwrap();
    std::fs::write(
        doubled.join("manifest.yaml"),
        text.replacen("  name: compare-spin\n", "  name: other-target\n", 1),
    )
    .unwrap();
    assert!(refuse(&[&path(&good), &path(&doubled)]).contains("give --allow-different-targets"));
    let allowed = cli(&[
        "compare",
        &path(&good),
        &path(&doubled),
        "--allow-different-targets",
        "--resamples",
        "1000",
    ]);
    assert_eq!(allowed.code, 0, "{}", allowed.stderr);
    assert!(
        allowed
            .stdout
            .contains("differs: target.name: compare-spin → other-target"),
        "{}",
        allowed.stdout
    );

    assert_eq!(
        refuse(&[&path(&good)]),
        "error: compare needs a base and at least one candidate (or --baseline NAME and a candidate)\n"
    );
    assert!(
        refuse(&[&path(&good), &path(&doubled), "--noise-threshold", "2"])
            .starts_with("error: --noise-threshold 2: ")
    );
    assert_eq!(
        refuse(&[&path(&good), &path(&doubled), "--allow-different-targets", "--resamples", "4294967295"]),
        "error: --resamples 4294967295: at most 100000000 (each row keeps one ratio of 8 bytes a resample; 100000 is the usual count)\n"
    );
    assert!(refuse(&["nope@latest", &path(&good)])
        .starts_with("error: no profile `nope`: the profiles of this build are "));
}

/// `profile-cli ab --json` of `compare-spin` with `base` and `candidate`
/// parameters, 60 passes a side in blocks of 3, as AB_ID under `out`.
fn ab_json(
    out: &Path,
    ab_id: &str,
    base: &str,
    candidate: &str,
    extra: &[&str],
) -> (u8, serde_json::Value) {
    let base_config = spin_config(out, &format!("{ab_id}-base"), base);
    let candidate_config = spin_config(out, &format!("{ab_id}-candidate"), candidate);
    let (base_config, candidate_config, out_dir) =
        (path(&base_config), path(&candidate_config), path(out));
    let mut args = vec![
        "ab",
        "compare-spin",
        "compare-spin",
        "--config",
        &base_config,
        "--candidate-config",
        &candidate_config,
        "--output-dir",
        &out_dir,
        "--ab-id",
        ab_id,
        "--iterations",
        "60",
        "--warmup",
        "2",
        "--block-passes",
        "3",
        "--json",
    ];
    args.extend_from_slice(extra);
    let outcome = cli(&args);
    assert!(
        [0, 3, 4].contains(&outcome.code),
        "{}\n{}",
        outcome.stdout,
        outcome.stderr
    );
    (outcome.code, serde_json::from_str(&outcome.stdout).unwrap())
}

#[test]
fn ab_alternates_the_sides_in_one_capture_and_finds_the_slower_one() {
    let _timed = TIMED.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().unwrap();
    let (code, document) = ab_json(
        out.path(),
        "twice",
        "work_us: 300",
        "work_us: 600",
        &["--fail-on-regression"],
    );
    assert_eq!(code, 3, "a slower candidate fails the gate: {document}");
    // Both sides went into the history store beside the runs.
    let store = rusqlite::Connection::open(out.path().join("history.sqlite")).unwrap();
    let sides: Vec<(String, String)> = store
        .prepare("SELECT kind, run_dir FROM runs ORDER BY kind")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let kinds: Vec<&str> = sides.iter().map(|(kind, _)| kind.as_str()).collect();
    assert_eq!(kinds, ["ab-base", "ab-candidate"]);
    assert!(sides[1].1.ends_with("twice/candidate"), "{sides:?}");
    let comparison = &document["comparisons"][0];
    assert_eq!(comparison["pairing"]["pairs"], 20, "{comparison}");
    assert_eq!(comparison["pairing"]["passes_per_block"], 3);
    assert_eq!(comparison["base"]["label"], "compare-spin@twice/base");
    assert_eq!(
        comparison["candidate"]["label"],
        "compare-spin@twice/candidate"
    );
    // The sides differ in their parameters, not in their code: said.
    assert_eq!(
        comparison["differences"],
        serde_json::json!([{"key": "target.parameters.work_us", "base": "300", "candidate": "600"}]),
        "{comparison}"
    );
    let rows = rows(&document, 0);
    let row = |label: &str| rows.iter().find(|r| r.0 == label).unwrap().clone();
    let (_, verdict, ratio, [low, high]) = row("work");
    assert_eq!(verdict, "slower");
    // Twice the work: the paired ratio is near 2 and its interval holds it.
    assert!((1.8..2.2).contains(&ratio), "{ratio}");
    assert!(low <= ratio && ratio <= high);
    assert_eq!(row("pass").1, "slower");
    // The tails of the pass, paired: each side's p95 and p99 over its
    // passes, each with its interval. The candidate's p95 is well above
    // the base's; the p99 of 60 passes is their slowest, which one pass
    // the machine stalled sets on either side, so only its interval is
    // asserted.
    for name in ["p95", "p99"] {
        let tail = &document["tails"][name];
        let change = tail["change"].as_f64().unwrap();
        let [low, high] = [0, 1].map(|i| tail["interval"][i].as_f64().unwrap());
        assert!(low <= change && change <= high, "{tail}");
        if name == "p95" {
            assert!(change > 0.3, "{tail}");
        }
        assert_eq!(tail["pairs"], 20, "{tail}");
    }
    // `steady` did not change: not a difference either way.
    assert!(
        ["no change", "unclear"].contains(&row("steady").1.as_str()),
        "{rows:?}"
    );

    let dir = out.path().join("compare-spin/runs/twice");
    for file in [
        "base/manifest.yaml",
        "candidate/manifest.yaml",
        "paired.json",
        "report.html",
    ] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    // Each side's manifest says which it is and how the blocks ran:
    // alternating, 20 blocks of 3 passes each.
    let manifest: serde_yaml::Value = serde_yaml::from_str(
        &std::fs::read_to_string(dir.join("candidate/manifest.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["pair"]["side"], "candidate");
    assert_eq!(manifest["completed_iterations"], 60);
    // Its ranges are its own passes' only: one `work` a pass.
    let work = manifest["timings"]["ranges"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "work")
        .unwrap();
    assert_eq!(work["count"], 60, "{work:?}");
    let blocks = manifest["pair"]["blocks"].as_sequence().unwrap();
    assert_eq!(blocks.len(), 40);
    let sides: Vec<&str> = blocks.iter().map(|b| b[0].as_str().unwrap()).collect();
    assert!(sides.chunks(2).all(|pair| pair[0] != pair[1]), "{sides:?}");
    // ABBA: the side that runs first changes from one pair to the next.
    assert!(
        sides
            .chunks(2)
            .zip(sides.chunks(2).skip(1))
            .all(|(a, b)| a[0] != b[0]),
        "{sides:?}"
    );
    // The pass ranges of the trace say their side; the candidate's work
    // ranges fall in its own passes only.
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("candidate/trace.json")).unwrap())
            .unwrap();
    let names: Vec<&str> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "pass")
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(names.len(), 60, "{names:?}");
    assert!(
        names.iter().all(|n| n.starts_with("candidate iteration ")),
        "{names:?}"
    );
    let paired: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("paired.json")).unwrap()).unwrap();
    for side in ["base", "candidate"] {
        assert_eq!(paired[side]["pass_ns"].as_array().unwrap().len(), 60);
        assert_eq!(paired[side]["ranges"]["work"].as_array().unwrap().len(), 60);
    }
    // The machine-speed canary between block pairs: 8 readings, the same
    // in paired.json and in each side's manifest.
    let between = paired["canary"].as_array().unwrap();
    assert_eq!(between.len(), 8, "{paired}");
    assert!(between.iter().all(|c| c["memory_ns"].as_u64().unwrap() > 0));
    let manifest: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(dir.join("base/manifest.yaml")).unwrap())
            .unwrap();
    let recorded = &manifest["timings"]["machine"]["canary"]["between"];
    assert_eq!(
        recorded.as_sequence().map(Vec::len),
        Some(8),
        "{recorded:?}"
    );
    assert_eq!(
        recorded[0]["memory_ns"].as_u64(),
        between[0]["memory_ns"].as_u64()
    );
    let work = |side: &str| -> f64 {
        let values = paired[side]["ranges"]["work"].as_array().unwrap();
        values.iter().map(|v| v.as_f64().unwrap()).sum::<f64>() / 60.0
    };
    // At least the time each side was asked to spin, per pass.
    assert!(work("base") >= 300e3 * 0.96 && work("candidate") >= 600e3 * 0.96);
}

/// `ab --accept`: the gates decide, each with its interval: twice the
/// work fails a gate asking for 3 % less (exit 3), half the work holds it
/// (exit 0), and a gate on what the run did not measure leaves it
/// inconclusive (exit 4). A gate that cannot be read is refused before
/// anything runs.
#[test]
fn ab_accept_decides_by_the_gates_agreed_before_measuring() {
    let _timed = TIMED.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().unwrap();
    let gates = |document: &serde_json::Value| -> (String, Vec<(String, String)>) {
        let gates = &document["gates"];
        let results = gates["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["gate"]["text"].as_str().unwrap().to_owned(),
                    r["outcome"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        (gates["verdict"].as_str().unwrap().to_owned(), results)
    };

    let junit = out.path().join("reports/gates.xml");
    let junit_text = path(&junit);
    let (code, document) = ab_json(
        out.path(),
        "slower",
        "work_us: 300",
        "work_us: 600",
        &["--accept", "p50<=-3%, mean<=-3%", "--junit", &junit_text],
    );
    assert_eq!(code, 3, "{document}");
    // For the CI's test report: a suite for the pair, a failed case per
    // gate, each saying what the gate saw.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"profile-cli ab\">\n  <testsuite name=\"compare-spin slower\" tests=\"2\" failures=\"2\" errors=\"0\" skipped=\"0\">\n"),
        "{xml}"
    );
    assert_eq!(
        xml.matches("<failure type=\"gate\" message=\"gate p50&lt;=-3% failed\">base ")
            .count(),
        1,
        "{xml}"
    );
    assert_eq!(
        xml.matches("<testcase classname=\"compare-spin slower\" name=\"mean&lt;=-3%\">")
            .count(),
        1,
        "{xml}"
    );
    assert!(xml.ends_with("  </testsuite>\n</testsuites>\n"), "{xml}");
    assert_eq!(
        gates(&document),
        (
            "reject".to_owned(),
            vec![
                ("p50<=-3%".to_owned(), "fails".to_owned()),
                ("mean<=-3%".to_owned(), "fails".to_owned())
            ]
        )
    );
    // The change is about +100 %, its interval around it.
    let result = &document["gates"]["results"][0];
    let change = result["change"].as_f64().unwrap();
    let [low, high] = [0, 1].map(|i| result["interval"][i].as_f64().unwrap());
    assert!(
        (0.8..1.2).contains(&change) && low <= change && change <= high,
        "{result}"
    );

    // The experiment's record beside the pair: the hypothesis, the
    // protocol, each gate's result, the verdict and every row.
    let record =
        std::fs::read_to_string(out.path().join("compare-spin/runs/slower/experiment.md")).unwrap();
    for part in [
        "# Experiment: `compare-spin` against `compare-spin`\n\n**Verdict: reject**\n",
        "## Hypothesis\n",
        "- `p50<=-3%`\n- `mean<=-3%`\n",
        "| blocks | 20 block pairs of 3 passes a side, alternated in one process",
        "| `p50<=-3%` | ",
        " | **fails** |\n",
        "Verdict: reject (failed: p50<=-3%, mean<=-3%)",
        "## Every row\n",
    ] {
        assert!(record.contains(part), "{part:?} in:\n{record}");
    }

    // Half the work holds gates on the median and the p90. (No mean gate
    // here: on a machine busy enough to stall a pass for milliseconds,
    // 60 passes' mean can straddle -3 % and leave the verdict
    // inconclusive; the mean gate is the slower pair's above.)
    let (code, document) = ab_json(
        out.path(),
        "faster",
        "work_us: 600",
        "work_us: 300",
        &["--accept", "p50<=-3%, p90<=+2%"],
    );
    assert_eq!(code, 0, "{document}");
    assert_eq!(gates(&document).0, "accept", "{document}");

    // Repeated: each pair of its own, judged alone and then together.
    let (code, document) = ab_json(
        out.path(),
        "repeated",
        "work_us: 600",
        "work_us: 300",
        &[
            "--accept",
            "p50<=-3%",
            "--repetitions",
            "2",
            "--junit",
            &junit_text,
        ],
    );
    assert_eq!(code, 0, "{document}");
    assert_eq!(document["verdict"], "accept", "{document}");
    // Each verdict is in the history store with the pair's sides.
    let out_dir = path(out.path());
    let listed = cli(&[
        "history",
        "compare-spin",
        "--verdicts",
        "--output-dir",
        &out_dir,
    ]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let lines: Vec<&str> = listed.stdout.lines().collect();
    assert_eq!(
        lines[0], "compare-spin: 4 verdicts, oldest first",
        "{}",
        listed.stdout
    );
    let words: Vec<(&str, &str)> = lines[1..]
        .iter()
        .map(|l| {
            let mut w = l.split_whitespace();
            (w.next().unwrap(), w.next().unwrap())
        })
        .collect();
    assert_eq!(
        words,
        [
            ("slower", "reject"),
            ("faster", "accept"),
            ("repeated-1", "accept"),
            ("repeated-2", "accept")
        ]
    );
    assert!(
        lines[1].ends_with("(p50<=-3% fails, mean<=-3% fails)"),
        "{}",
        lines[1]
    );
    let listed = cli(&[
        "history",
        "compare-spin",
        "--verdicts",
        "--json",
        "--output-dir",
        &out_dir,
    ]);
    let stored: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    let first = &stored["verdicts"][0];
    assert_eq!(first["gates"][0]["outcome"], "fails", "{stored}");
    assert!(
        first["base"]
            .as_str()
            .unwrap()
            .starts_with("compare-spin/slower/slower/base@"),
        "{stored}"
    );
    // A suite per repetition, every gate held; the earlier file replaced.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<testsuite ").count(), 2, "{xml}");
    assert!(
        xml.contains(
            "<testsuite name=\"compare-spin repeated-2\" tests=\"1\" failures=\"0\" errors=\"0\""
        ),
        "{xml}"
    );
    assert!(
        !xml.contains("<failure") && xml.contains(": holds</system-out>"),
        "{xml}"
    );
    let repetitions = document["repetitions"].as_array().unwrap();
    assert_eq!(repetitions.len(), 2);
    for (k, repetition) in repetitions.iter().enumerate() {
        assert_eq!(gates(repetition).0, "accept");
        let label = format!("compare-spin@repeated-{}/base", k + 1);
        assert_eq!(
            repetition["comparisons"][0]["base"]["label"],
            label.as_str()
        );
        let record = std::fs::read_to_string(out.path().join(format!(
            "compare-spin/runs/repeated-{}/experiment.md",
            k + 1
        )))
        .unwrap();
        assert!(
            record.contains(&format!("| repetitions | this is {} of 2,", k + 1)),
            "{record}"
        );
    }

    // A gate on what the pair does not record (memory, without
    // --memory) could never decide: refused before a pass runs.
    let config = path(&spin_config(out.path(), "unmeasured", "work_us: 10"));
    let unmeasured = cli(&[
        "ab",
        "compare-spin",
        "compare-spin",
        "--config",
        &config,
        "--output-dir",
        &path(out.path()),
        "--ab-id",
        "unmeasured",
        "--accept",
        "p50<=-3%, peak<=+2%",
    ]);
    assert_eq!(unmeasured.code, 2, "{}", unmeasured.stderr);
    assert_eq!(
        unmeasured.stderr,
        "error: --accept: gate 2 `peak<=+2%`: `peak` is recorded only with memory on (--memory, or `memory: on` in the config): no pair without it can decide this gate\n"
    );
    assert!(!out.path().join("compare-spin/runs/unmeasured").exists());

    // Refused before a pass runs: exit 2, the gate named, nothing written.
    let config = path(&spin_config(out.path(), "refused", "work_us: 10"));
    let refused = cli(&[
        "ab",
        "compare-spin",
        "compare-spin",
        "--config",
        &config,
        "--output-dir",
        &path(out.path()),
        "--ab-id",
        "refused",
        "--accept",
        "p50<=-3%, p42<=1%",
    ]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .starts_with("error: --accept: gate 2 `p42<=1%`: unknown metric `p42`\n"),
        "{}",
        refused.stderr
    );
    assert!(!out.path().join("compare-spin/runs/refused").exists());

    // The gates in the base's config, `ab.accept`, when --accept is not
    // given; one that cannot be read is refused with its line and column.
    let with_gates = |name: &str, gates: &str| {
        let config = spin_config(out.path(), name, "work_us: 600");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(&format!("ab:\n  accept: \"{gates}\"\n"));
        std::fs::write(&config, text).unwrap();
        config
    };
    // A median gate: a mean's interval on 60 passes can straddle -3 % on
    // a machine busy enough to stall passes for milliseconds.
    let base = with_gates("agreed", "p50<=-3%");
    let candidate = spin_config(out.path(), "agreed-candidate", "work_us: 300");
    let (base, candidate, out_dir) = (path(&base), path(&candidate), path(out.path()));
    let pair = |id: &str, config: &str| {
        cli(&[
            "ab",
            "compare-spin",
            "compare-spin",
            "--config",
            config,
            "--candidate-config",
            &candidate,
            "--output-dir",
            &out_dir,
            "--ab-id",
            id,
            "--iterations",
            "60",
            "--block-passes",
            "3",
            "--json",
        ])
    };
    let agreed = pair("agreed", &base);
    assert_eq!(agreed.code, 0, "{}", agreed.stderr);
    let document: serde_json::Value = serde_json::from_str(&agreed.stdout).unwrap();
    assert_eq!(
        gates(&document),
        (
            "accept".to_owned(),
            vec![("p50<=-3%".to_owned(), "holds".to_owned())]
        )
    );
    // `--markdown` prints the experiment's record, for a pull request.
    let markdown = cli(&[
        "ab",
        "compare-spin",
        "compare-spin",
        "--config",
        &base,
        "--candidate-config",
        &candidate,
        "--output-dir",
        &out_dir,
        "--ab-id",
        "agreed-markdown",
        "--iterations",
        "60",
        "--block-passes",
        "3",
        "--markdown",
    ]);
    assert_eq!(markdown.code, 0, "{}", markdown.stderr);
    assert!(
        markdown.stdout.starts_with(
            "# Experiment: `compare-spin` against `compare-spin`\n\n**Verdict: accept**\n"
        ),
        "{}",
        markdown.stdout
    );
    assert_eq!(
        markdown.stdout,
        std::fs::read_to_string(
            out.path()
                .join("compare-spin/runs/agreed-markdown/experiment.md")
        )
        .unwrap()
    );
    let bad = with_gates("bad-gates", "mean<=-3%, p42<=1%");
    let refused = pair("bad-gates", &path(&bad));
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert_eq!(
        refused.stderr.lines().next().unwrap(),
        format!(
            "error: {}:6:11: ab.accept: gate 2 `p42<=1%`: unknown metric `p42`",
            bad.display()
        )
    );
    assert!(!out.path().join("compare-spin/runs/bad-gates").exists());
}

/// A gate on a range the targets do not have can never decide. The
/// ranges are what a target's code opens while it runs, so they are known
/// once a pair has run: the first pair (of a single run, of
/// `--repetitions`, or stage 1 of `--until-decided`) is the last to run,
/// kept, and the gate refused naming the ranges there are; no further
/// repetition or stage spends the budget on it.
#[test]
fn ab_gates_on_ranges_the_targets_lack_are_refused_after_the_first_pair() {
    let _timed = TIMED.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().unwrap();
    let config = path(&spin_config(out.path(), "ranges", "work_us: 100"));
    let out_dir = path(out.path());
    let refused = |id: &str, extra: &[&str]| {
        let mut args = vec![
            "ab",
            "compare-spin",
            "compare-spin",
            "--config",
            &config,
            "--output-dir",
            &out_dir,
            "--ab-id",
            id,
            "--iterations",
            "40",
            "--block-passes",
            "2",
            "--accept",
            "p50<=+5%, p99[nonexistent]<=+2%",
        ];
        args.extend_from_slice(extra);
        let outcome = cli(&args);
        assert_eq!(outcome.code, 2, "{}\n{}", outcome.stdout, outcome.stderr);
        assert!(outcome.stdout.is_empty(), "{}", outcome.stdout);
        let said = "error: --accept: gate 2 `p99[nonexistent]<=+2%`: the pair has no range `nonexistent`: no pair of these targets can decide this gate (the ranges there are: steady, work)";
        assert!(
            outcome.stderr.lines().any(|line| line.starts_with(said)),
            "{}",
            outcome.stderr
        );
        outcome
    };
    let runs = out.path().join("compare-spin/runs");

    let single = refused("single", &[]);
    assert!(
        single.stderr.contains(&format!(
            "(the pair is kept in {})",
            runs.join("single").display()
        )),
        "{}",
        single.stderr
    );
    assert!(runs.join("single/paired.json").is_file());

    refused("repeated", &["--repetitions", "3"]);
    assert!(runs.join("repeated-1/paired.json").is_file());
    assert!(!runs.join("repeated-2").exists());

    let staged = refused("staged", &["--until-decided", "--budget", "20s"]);
    assert!(runs.join("staged-1/paired.json").is_file());
    assert!(!runs.join("staged-2").exists(), "{}", staged.stderr);
}

/// `ab --until-decided`: stages pooled until a look decides. Twice the
/// work is rejected at the first look; a gate no pair can decide (parity,
/// which a pair of one build does not check) runs stages until the looks
/// or the budget run out, every stage's passes pooled, and exits 4.
#[test]
fn ab_until_decided_pools_stages_until_a_look_decides() {
    let _timed = TIMED.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().unwrap();
    let (code, document) = ab_json(
        out.path(),
        "decided",
        "work_us: 300",
        "work_us: 600",
        &["--accept", "p50<=-3%", "--until-decided", "--budget", "60s"],
    );
    assert_eq!(code, 3, "{document}");
    assert_eq!(document["gates"]["verdict"], "reject", "{document}");
    let until = &document["until_decided"];
    assert_eq!(until["decided"], true, "{until}");
    // The first look is after the second stage: one stage alone is never
    // judged.
    assert_eq!(until["stages"].as_array().unwrap().len(), 2, "{until}");
    let looks = until["looks"].as_f64().unwrap();
    assert!((1.0..=8.0).contains(&looks), "{until}");
    // The look's level: a K-th of the error rate.
    let confidence = until["confidence"].as_f64().unwrap();
    assert!((confidence - (1.0 - 0.05 / looks)).abs() < 1e-9, "{until}");
    let record =
        std::fs::read_to_string(out.path().join("compare-spin/runs/decided-2/experiment.md"))
            .unwrap();
    assert!(
        record.contains(
            "| until decided | 2 stages pooled (decided-1, decided-2), looked at after each from the second (stages resampled as well as the block pairs within them"
        ),
        "{record}"
    );
    assert!(record.contains("the last look decided |"), "{record}");

    // A budget that holds no second stage gives no verdict, however clear
    // the first stage is.
    let (code, document) = ab_json(
        out.path(),
        "alone",
        "work_us: 300",
        "work_us: 600",
        &["--accept", "p50<=-3%", "--until-decided", "--budget", "1ms"],
    );
    assert_eq!(code, 4, "{document}");
    let until = &document["until_decided"];
    assert_eq!(until["decided"], false, "{until}");
    assert_eq!(until["looks"], 0, "{until}");
    assert_eq!(until["stages"].as_array().unwrap().len(), 1, "{until}");

    let (code, document) = ab_json(
        out.path(),
        "undecided",
        "work_us: 300",
        "work_us: 300",
        // Fewer resamples: the pooled stages hold a thousand block pairs,
        // and this is a debug build.
        &[
            "--accept",
            "parity",
            "--until-decided",
            "--budget",
            "3s",
            "--resamples",
            "500",
        ],
    );
    assert_eq!(code, 4, "{document}");
    let until = &document["until_decided"];
    assert_eq!(until["decided"], false, "{until}");
    let stages = until["stages"].as_array().unwrap();
    assert!(stages.len() >= 2, "{until}");
    // Every stage's passes, pooled: 60 in the first, as many in each
    // later one as the schedule gave.
    let passes: u64 = (1..=stages.len())
        .map(|k| {
            let paired: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(
                    out.path()
                        .join(format!("compare-spin/runs/undecided-{k}/paired.json")),
                )
                .unwrap(),
            )
            .unwrap();
            paired["base"]["pass_ns"].as_array().unwrap().len() as u64
        })
        .collect::<Vec<_>>()
        .iter()
        .sum();
    let pass = &document["comparisons"][0]["rows"][0];
    assert_eq!(pass["kind"], "pass");
    assert_eq!(pass["base"]["samples"], passes, "{pass}");
    assert!(passes > 120, "{passes}");

    // Without a budget's unit, or without --until-decided: refused.
    let config = path(&spin_config(out.path(), "unit", "work_us: 10"));
    for (extra, said) in [
        (
            &["--until-decided", "--budget", "60"][..],
            "`60` needs a unit",
        ),
        (&["--budget", "60s"][..], "--until-decided"),
        // Refused, not a panic (exit 101) converting it.
        (
            &["--until-decided", "--budget", "100000000000000000000s"][..],
            "`100000000000000000000s` is too long",
        ),
    ] {
        let mut args = vec!["ab", "compare-spin", "compare-spin", "--config", &config];
        args.extend_from_slice(extra);
        let refused = cli(&args);
        assert_eq!(refused.code, 2, "{}", refused.stderr);
        assert!(refused.stderr.contains(said), "{}", refused.stderr);
    }
}

#[test]
fn ab_refuses_an_unknown_target_and_a_taken_id_with_exit_2() {
    let out = tempfile::tempdir().unwrap();
    let out_dir = path(out.path());
    let unknown = cli(&[
        "ab",
        "compare-spin",
        "no-such-target",
        "--output-dir",
        &out_dir,
    ]);
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("no-such-target"),
        "{}",
        unknown.stderr
    );
    let taken = out.path().join("compare-spin/runs/taken");
    std::fs::create_dir_all(&taken).unwrap();
    std::fs::write(taken.join("keep.txt"), "mine").unwrap();
    let config = path(&spin_config(out.path(), "taken-base", "work_us: 10"));
    let refused = cli(&[
        "ab",
        "compare-spin",
        "compare-spin",
        "--config",
        &config,
        "--candidate-config",
        &config,
        "--output-dir",
        &out_dir,
        "--ab-id",
        "taken",
    ]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("give --force"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        std::fs::read_to_string(taken.join("keep.txt")).unwrap(),
        "mine"
    );

    // A candidate whose parameters its target refuses stops both sides
    // before anything is written; so does lazy loading.
    let bad = path(&spin_config(out.path(), "bad", "work_us: 10, typo: 1"));
    let refused = cli(&[
        "ab",
        "compare-spin",
        "compare-spin",
        "--config",
        &config,
        "--candidate-config",
        &bad,
        "--output-dir",
        &out_dir,
        "--ab-id",
        "bad",
    ]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("bad.yaml:"), "{}", refused.stderr);
    assert!(refused.stderr.contains("typo"), "{}", refused.stderr);
    assert!(!out.path().join("compare-spin/runs/bad").exists());
    let lazy = out.path().join("lazy.yaml");
    std::fs::write(
        &lazy,
        "target: {name: compare-spin, profile_prepare: true, parameters: {work_us: 10}}\n\
         data_source: {name: dummy, record_count: 1}\nrecord_loading: lazy\niterations: 40\n",
    )
    .unwrap();
    let lazy = path(&lazy);
    let refused = cli(&[
        "ab",
        "compare-spin",
        "compare-spin",
        "--config",
        &lazy,
        "--output-dir",
        &out_dir,
        "--ab-id",
        "lazy",
    ]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("record_loading: lazy"),
        "{}",
        refused.stderr
    );
    assert!(!out.path().join("compare-spin/runs/lazy").exists());

    // A side whose target cannot be built: its own error is said, not
    // the other side's "not run".
    let unbuildable = path(&spin_config(
        out.path(),
        "unbuildable",
        "work_us: 10, fail_to_build: true",
    ));
    let failed = cli(&[
        "ab",
        "compare-spin",
        "compare-spin",
        "--config",
        &config,
        "--candidate-config",
        &unbuildable,
        "--output-dir",
        &out_dir,
        "--ab-id",
        "unbuildable",
    ]);
    assert_eq!(failed.code, 1, "{}", failed.stderr);
    assert!(
        failed.stderr.contains(
            "error: the candidate failed: the target failed: construct failed (before the passes): asked to fail when built"
        ) && failed
            .stderr
            .contains("note: the base did not run: the candidate could not be built"),
        "{}",
        failed.stderr
    );
    assert!(
        !failed.stderr.contains("error: the base"),
        "{}",
        failed.stderr
    );

    // A pair started without an id in the second of an earlier pair
    // gets `-2`: pairs are there for every second of the next two minutes.
    let runs = out.path().join("compare-spin/runs");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    for second in now..now + 120 {
        let earlier = runs.join(format!(
            "ab-{}",
            profiling_core::driver::provenance::UtcTime::from_unix(second)
                .unwrap()
                .compact()
        ));
        std::fs::create_dir_all(&earlier).unwrap();
        std::fs::write(earlier.join("keep.txt"), "earlier").unwrap();
    }
    let second = cli(&[
        "ab",
        "compare-spin",
        "compare-spin",
        "--config",
        &config,
        "--output-dir",
        &out_dir,
        "--iterations",
        "40",
        "--warmup",
        "1",
        "--no-report",
    ]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    let id = second
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("base:      compare-spin@"))
        .unwrap_or_else(|| panic!("{}", second.stdout))
        .split([' ', '/'])
        .next()
        .unwrap();
    assert!(
        id.starts_with("ab-") && id.ends_with("-2"),
        "{id}: {}",
        second.stdout
    );
    let earlier = runs.join(id.strip_suffix("-2").unwrap());
    assert_eq!(
        std::fs::read_to_string(earlier.join("keep.txt")).unwrap(),
        "earlier"
    );
}

fn copy_run(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for file in ["manifest.yaml", "samples.bin"] {
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }
}

/// Every file and directory under `dir`, sorted.
fn walk(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        found.push(path.display().to_string());
        if path.is_dir() {
            found.extend(walk(&path));
        }
    }
    found.sort();
    found
}

/// How often two runs at the same duration come out with some row
/// `slower` on this machine: `cargo test -p profiling-cli --test compare
/// -- --ignored --nocapture noise_floor` (`REPEATS=N`, and `JITTER=F` for
/// the target's variation from call to call, 0.04 by default).
#[test]
#[ignore = "a measurement of this machine's noise, not a check"]
fn noise_floor() {
    let _timed = TIMED.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().unwrap();
    let repeats: usize = std::env::var("REPEATS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    let jitter = std::env::var("JITTER").unwrap_or_else(|_| "0.04".to_owned());
    let parameters = format!("work_us: 1000, jitter: {jitter}");
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for repeat in 0..repeats {
        let a = spin_run_with(out.path(), &format!("a{repeat}"), &parameters, &[]);
        let b = spin_run_with(out.path(), &format!("b{repeat}"), &parameters, &[]);
        for noise in ["0.02", "0.05"] {
            let (_, document) = compare_json(&[&path(&a), &path(&b), "--noise-threshold", noise]);
            let found = rows(&document, 0);
            let worst = if found.iter().any(|r| r.1 == "slower") {
                "slower"
            } else if found.iter().any(|r| r.1 == "faster") {
                "faster"
            } else if found.iter().all(|r| r.1 == "no change") {
                "all no change"
            } else {
                "unclear"
            };
            *counts.entry(format!("noise {noise}: {worst}")).or_default() += 1;
        }
    }
    println!("{repeats} pairs of runs at the same duration, jitter {jitter}: {counts:#?}");
}

/// Every run that measured something goes into the history store beside
/// the run directories once its directory is complete; `history` reads it
/// back per commit, `history import` writes runs already on disk once, and
/// a store that cannot be written costs a warning, never the run.
#[test]
fn runs_go_into_the_history_store_and_history_reads_them_back() {
    let out = tempfile::tempdir().unwrap();
    let dir = path(out.path());
    let first = spin_run(out.path(), "h1", 100, &[]);
    spin_run(out.path(), "h2", 100, &[]);
    let store = out.path().join("history.sqlite");
    assert!(store.is_file(), "no store beside {}", first.display());

    // The runs of this checkout, dirty or not: --dirty keeps them.
    let history = |extra: &[&str]| {
        let mut args = vec![
            "history",
            "compare-spin",
            "--output-dir",
            dir.as_str(),
            "--dirty",
        ];
        args.extend(extra);
        cli(&args)
    };
    let shown = history(&["--json"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let document: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(document["metric"], "p50");
    let groups = document["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "one machine, one config: {document}");
    let series = groups[0]["series"].as_array().unwrap();
    let paths: Vec<&str> = series.iter().map(|s| s["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["pass", "steady", "work"]);
    // Both runs, at the one commit they were made on.
    let commits = series[2]["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 1, "{document}");
    let runs: Vec<&str> = commits[0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(runs, ["h1", "h2"]);
    let work = commits[0]["value"].as_u64().unwrap();
    assert!((96_000..1_000_000).contains(&work), "work p50 {work} ns");
    assert!(
        groups[0]["machine"]["cores"].as_u64().unwrap() >= 1,
        "{document}"
    );
    // The kernel the runs ran on is part of the machine.
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(groups[0]["machine"]["kernel"], kernel.trim(), "{document}");

    let table = history(&[]);
    assert_eq!(table.code, 0, "{}", table.stderr);
    assert!(
        table
            .stdout
            .starts_with("compare-spin: p50 per commit; machine "),
        "{}",
        table.stdout
    );
    // A row per range under the commits' and their runs' counts.
    let first_words: Vec<Vec<&str>> = table
        .stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().take(2).collect())
        .collect();
    assert_eq!(first_words[0][0], "commit");
    assert_eq!(first_words[1], ["runs", "2"]);
    let rows: Vec<&str> = first_words[2..].iter().map(|w| w[0]).collect();
    assert_eq!(rows, ["pass", "steady", "work"], "{}", table.stdout);

    // Every figure, flat, as pandas reads CSV: a header and a row per run
    // and range path.
    let exported = history(&["--export", "csv"]);
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    let lines: Vec<&str> = exported.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "profile,kind,run_id,status,started_at,commit,dirty,machine,config,part,path,name,depth,count,p50_ns,p90_ns,p95_ns,p99_ns,mean_ns,min_ns,max_ns,low_ns,high_ns,alloc_bytes,peak_bytes"
    );
    assert_eq!(lines.len(), 1 + 2 * 3, "{}", exported.stdout);
    let fields: Vec<&str> = lines[2].split(',').collect();
    assert_eq!(fields.len(), 25);
    assert_eq!(&fields[..4], ["compare-spin", "run", "h1", "completed"]);
    assert_eq!((fields[9], fields[10]), ("range", "steady"));
    assert!(fields[14].parse::<u64>().unwrap() > 0);
    let json = history(&["--export", "json"]);
    let rows: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 6);
    assert_eq!(rows[5]["path"], "work");
    assert_eq!(rows[5]["run_id"], "h2");
    let p = |key: &str| rows[5][key].as_u64().unwrap();
    assert!(
        p("p90_ns") <= p("p95_ns") && p("p95_ns") <= p("p99_ns"),
        "{}",
        rows[5]
    );
    the_guides_pandas_example_reads_the_export(&exported.stdout, rows.as_array().unwrap());
    // Every kept sample: a row per measured pass and per call of each
    // range, inclusive and exclusive, as many as the figures counted.
    let samples = history(&["--export", "json", "--samples"]);
    assert_eq!(samples.code, 0, "{}", samples.stderr);
    let samples: serde_json::Value = serde_json::from_str(&samples.stdout).unwrap();
    let samples = samples.as_array().unwrap();
    for row in rows.as_array().unwrap() {
        let (part, path, run) = (&row["part"], &row["path"], &row["run_id"]);
        for measure in if part == "pass" {
            &[""][..]
        } else {
            &["inclusive", "exclusive"][..]
        } {
            let of_it: Vec<u64> = samples
                .iter()
                .filter(|s| s["run_id"] == *run && s["name"] == *path && s["measure"] == *measure)
                .map(|s| s["ns"].as_u64().unwrap())
                .collect();
            assert_eq!(of_it.len() as u64, row["count"].as_u64().unwrap(), "{row}");
            if *measure != "exclusive" {
                assert_eq!(of_it.iter().min().copied(), row["min_ns"].as_u64(), "{row}");
                assert_eq!(of_it.iter().max().copied(), row["max_ns"].as_u64(), "{row}");
            }
        }
    }
    let samples_csv = history(&["--export", "csv", "--samples"]);
    assert_eq!(
        samples_csv.stdout.lines().next(),
        Some("profile,run_id,started_at,commit,machine,config,part,name,measure,index,ns")
    );
    assert_eq!(samples_csv.stdout.lines().count(), 1 + samples.len());
    let refused = history(&["--export", "bmf", "--samples"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    // Both as Parquet: pandas (with pyarrow) reads them, typed, with what
    // the CSV holds.
    let parquet = |extra: &[&str]| {
        let mut argv: Vec<std::ffi::OsString> = [
            "profile-cli",
            "history",
            "compare-spin",
            "--output-dir",
            dir.as_str(),
            "--dirty",
            "--export",
            "parquet",
        ]
        .iter()
        .map(Into::into)
        .collect();
        argv.extend(extra.iter().map(Into::into));
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = profiling_cli::main_with(argv, &common::workspace_root(), &mut out, &mut err);
        assert_eq!(code, 0, "{}", String::from_utf8_lossy(&err));
        assert_eq!(
            (&out[..4], &out[out.len() - 4..]),
            (&b"PAR1"[..], &b"PAR1"[..])
        );
        out
    };
    pandas_reads_the_parquet_as_the_csv(&[
        (parquet(&[]), exported.stdout.clone()),
        (parquet(&["--samples"]), samples_csv.stdout.clone()),
    ]);
    // For `bencher run`: the newest run, a benchmark per range, its
    // median as latency with the median's interval.
    let bmf = history(&["--export", "bmf"]);
    assert_eq!(bmf.code, 0, "{}", bmf.stderr);
    let bmf: serde_json::Value = serde_json::from_str(&bmf.stdout).unwrap();
    let names: Vec<&String> = bmf.as_object().unwrap().keys().collect();
    assert_eq!(
        names,
        [
            "compare-spin/pass",
            "compare-spin/steady",
            "compare-spin/work"
        ]
    );
    let work = &bmf["compare-spin/work"]["latency"];
    assert_eq!(work["value"].as_f64(), rows[5]["p50_ns"].as_f64());
    assert_eq!(work["lower_value"].as_f64(), rows[5]["low_ns"].as_f64());
    assert_eq!(work["upper_value"].as_f64(), rows[5]["high_ns"].as_f64());

    // Two runs are no history to find a change in.
    let changes = history(&["--changes"]);
    assert_eq!(changes.code, 0, "{}", changes.stderr);
    assert!(
        changes
            .stdout
            .starts_with("compare-spin: no change in 3 series"),
        "{}",
        changes.stdout
    );

    // Importing what the store holds writes nothing new.
    let imported = cli(&[
        "history",
        "import",
        dir.as_str(),
        "--output-dir",
        dir.as_str(),
    ]);
    assert_eq!(imported.code, 0, "{}", imported.stderr);
    assert_eq!(
        imported.stdout,
        format!("{}: 0 runs written, 2 there already\n", store.display())
    );
    // Into a store of its own, both are written.
    let elsewhere = out.path().join("elsewhere.sqlite");
    let (first_dir, elsewhere_path) = (path(&first), path(&elsewhere));
    let copied = cli(&[
        "history",
        "import",
        first_dir.as_str(),
        "--store",
        elsewhere_path.as_str(),
    ]);
    assert_eq!(
        copied.stdout,
        format!("{}: 1 run written, 0 there already\n", elsewhere.display())
    );

    // What is not there is named.
    let unknown = cli(&["history", "no-such-target", "--output-dir", dir.as_str()]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown
            .stderr
            .contains("no completed runs of `no-such-target`"),
        "{}",
        unknown.stderr
    );
    let no_range = history(&["--range", "nope"]);
    assert_eq!(no_range.code, 2);
    assert_eq!(
        no_range.stderr,
        "error: no range `nope` in the runs of that target: it has pass, steady, work\n"
    );

    // A store that cannot be opened: the run stands, and says so.
    let blocked = tempfile::tempdir().unwrap();
    std::fs::create_dir(blocked.path().join("history.sqlite")).unwrap();
    let config = spin_config(blocked.path(), "b1", "work_us: 10");
    let ran = run_config(&config, blocked.path(), "b1", &[]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("warning: the run is not in the history store: ")
            && ran.stderr.contains("`profile-cli history import "),
        "{}",
        ran.stderr
    );
    assert!(blocked
        .path()
        .join("compare-spin/runs/b1/manifest.yaml")
        .is_file());
}

/// The commits of this repository's first-parent line, newest `n`, oldest
/// first.
fn last_commits(n: usize) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let output = std::process::Command::new("git")
        .args(["rev-list", "--first-parent", "-n", &n.to_string(), "HEAD"])
        .current_dir(root)
        .output()
        .unwrap();
    let mut commits: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    commits.reverse();
    commits
}

/// How long `history-spin`'s range takes: what a change of its code
/// would change, outside its config.
static HISTORY_WORK_US: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(100);

/// Busy-waits in one range, `work`, for [`HISTORY_WORK_US`].
#[derive(Default)]
struct HistorySpin;

#[profile_target(name = "history-spin")]
impl ProfileTarget for HistorySpin {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        let _work = profiling_range("work");
        let us = HISTORY_WORK_US.load(std::sync::atomic::Ordering::Relaxed);
        spin_for(Duration::from_micros(us));
        Ok(())
    }
}

/// Runs made at twelve commits, the later six with the `work` range 30 %
/// slower (the same config: as a change of the code would make it): `history --changes` names the commit where it began and the
/// range, folds the pass into it, and `--fail-on` exits 3 on it (not for a
/// larger threshold, nor when it began before `--since`).
#[test]
fn history_finds_the_commit_where_a_range_got_slower() {
    let commits = last_commits(12);
    if commits.len() < 12 {
        eprintln!(
            "skipped: this checkout has {} commits, the test needs 12",
            commits.len()
        );
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let _timed = TIMED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir_text = path(out.path());
    for (k, commit) in commits.iter().enumerate() {
        let work_us = if k < 6 { 100 } else { 130 };
        HISTORY_WORK_US.store(work_us, std::sync::atomic::Ordering::Relaxed);
        let run_id = format!("c{k:02}");
        let ran = cli(&[
            "run",
            "history-spin",
            "--output-dir",
            dir_text.as_str(),
            "--run-id",
            run_id.as_str(),
            "--warmup",
            "2",
            "--iterations",
            "40",
        ]);
        assert_eq!(ran.code, 0, "{}", ran.stderr);
        let dir = out.path().join("history-spin/runs").join(&run_id);
        // Made here, on this checkout: recorded as made at `commit`.
        let manifest_path = dir.join("manifest.yaml");
        let mut manifest: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
        manifest["git_commit"] = serde_yaml::Value::from(commit.as_str());
        manifest["git_dirty"] = serde_yaml::Value::from(false);
        std::fs::write(&manifest_path, serde_yaml::to_string(&manifest).unwrap()).unwrap();
    }
    drop(_timed);
    let store = out.path().join("edited.sqlite");
    let (runs, store_text) = (path(&out.path().join("history-spin/runs")), path(&store));
    let imported = cli(&[
        "history",
        "import",
        runs.as_str(),
        "--store",
        store_text.as_str(),
    ]);
    assert_eq!(
        imported.stdout,
        format!("{}: 12 runs written, 0 there already\n", store.display()),
        "{}",
        imported.stderr
    );
    let changes = |extra: &[&str]| {
        let mut args = vec![
            "history",
            "history-spin",
            "--store",
            store_text.as_str(),
            "--changes",
        ];
        args.extend(extra);
        cli(&args)
    };
    let found = changes(&["--json"]);
    assert_eq!(found.code, 0, "{}", found.stderr);
    let document: serde_json::Value = serde_json::from_str(&found.stdout).unwrap();
    let work = document["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == "work")
        .unwrap_or_else(|| panic!("no change of work: {document}"));
    assert_eq!(work["commit"], commits[6].as_str(), "{document}");
    assert_eq!(work["index"], 6);
    assert_eq!(work["also"], serde_json::json!(["pass"]), "{document}");
    let ratio = work["ratio"].as_f64().unwrap();
    assert!((1.2..1.4).contains(&ratio), "{ratio}");
    assert!(work["low"].as_f64().unwrap() > 1.0);
    // No change of its own for the pass: the work's explains it.
    assert!(
        !document["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["path"] == "pass"),
        "{document}"
    );

    let text = changes(&[]);
    let line = text
        .stdout
        .lines()
        .find(|l| l.contains("  work  "))
        .unwrap_or_else(|| panic!("{}", text.stdout));
    assert!(line.trim_start().starts_with(&commits[6][..10]), "{line}");
    assert!(line.ends_with("; moved with it: pass"), "{line}");

    assert_eq!(changes(&["--fail-on", "+20%"]).code, 3);
    assert_eq!(changes(&["--fail-on", "50%"]).code, 0);
    let since = &commits[8][..12];
    assert_eq!(changes(&["--fail-on", "20%", "--since", since]).code, 0);
    let unknown = changes(&["--fail-on", "20%", "--since", "0000000"]);
    assert_eq!(unknown.code, 2);
    assert_eq!(
        unknown.stderr,
        "error: --since 0000000: not a commit of HEAD's first-parent line\n"
    );

    // The pull request's summary: the figures at two commits, the change
    // found between them, the ranges it moved in bold.
    let diff = |base: &str, head: &str, extra: &[&str]| {
        let mut args = vec![
            "history",
            "diff",
            base,
            head,
            "--store",
            store_text.as_str(),
        ];
        args.extend(extra);
        cli(&args)
    };
    let summary = diff(&commits[4], &commits[8], &["--markdown"]);
    assert_eq!(summary.code, 0, "{}", summary.stderr);
    let text = &summary.stdout;
    assert!(
        text.starts_with(&format!(
            "### Performance: `{}` → `{}` (p50)\n\n**history-spin** · machine `",
            &commits[4][..10],
            &commits[8][..10]
        )),
        "{text}"
    );
    let work_row = text
        .lines()
        .find(|l| l.starts_with("| `work` |"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        work_row.ends_with(" **+30.0 %** |") || work_row.contains(" | **+"),
        "{work_row}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("| `pass` |") && l.contains("**+")),
        "{text}"
    );
    assert!(
        text.contains("- work +")
            && text.contains(&format!("from {} (moved with it: pass)", &commits[6][..10])),
        "{text}"
    );
    let before = diff(&commits[0], &commits[3], &["--json"]);
    let document: serde_json::Value = serde_json::from_str(&before.stdout).unwrap();
    assert_eq!(
        document["sections"][0]["changes"],
        serde_json::json!([]),
        "{document}"
    );
    assert_eq!(document["sections"][0]["rows"].as_array().unwrap().len(), 2);
    let unknown = diff("no-such-commit", "HEAD", &[]);
    assert_eq!(unknown.code, 2);
    assert_eq!(
        unknown.stderr,
        "error: `no-such-commit` is not a commit of this repository\n"
    );

    // The page: beside the target's runs, a chart per range with a point
    // per commit linking to its run's page and the change marked.
    let paged = cli(&[
        "history",
        "history-spin",
        "--store",
        store_text.as_str(),
        "--output-dir",
        dir_text.as_str(),
        "--page",
    ]);
    assert_eq!(paged.code, 0, "{}", paged.stderr);
    let page = out.path().join("history-spin/history.html");
    assert_eq!(paged.stderr, format!("page: {}\n", page.display()));
    history_page_shows_the_change(&page, &commits);
}

/// What [`history_finds_the_commit_where_a_range_got_slower`]'s page
/// shows, read back from a headless Chromium's DOM.
fn history_page_shows_the_change(page: &Path, commits: &[String]) {
    let Some(browser) = browser::Browser::or_skip() else {
        return;
    };
    let rendered = browser.dump_dom(page);
    browser::assert_console_is_silent(page, &rendered.stderr);
    let dom = browser::Dom::parse(&rendered.dom);
    let figures: Vec<&str> = dom
        .tagged("figure")
        .filter_map(|f| dom.elements[f].attribute("data-path"))
        .collect();
    assert_eq!(figures, ["pass", "work"]);
    let work = dom
        .with_attribute("figure", "data-path", "work")
        .next()
        .unwrap();
    let points = dom.values_inside(work, "circle", "data-commit");
    assert_eq!(points, commits, "a point per commit, oldest first");
    // Each point links to its run's page, which is there.
    let links = dom.values_inside(work, "a", "href");
    assert_eq!(links.len(), 12);
    for (k, href) in links.iter().enumerate() {
        assert_eq!(href, &format!("runs/c{k:02}/report.html"));
        assert!(page.parent().unwrap().join(href).is_file(), "{href}");
    }
    let changes = dom.values_inside(work, "line", "data-commit");
    assert_eq!(changes, [commits[6].clone()], "the change, where it began");
    // The pass moved with the work: its change is the work's, not marked.
    let pass = dom
        .with_attribute("figure", "data-path", "pass")
        .next()
        .unwrap();
    assert!(dom.values_inside(pass, "line", "data-commit").is_empty());
    let table = dom.by_id("table", "changes");
    assert_eq!(dom.values_inside(table, "tr", "data-path"), ["work"]);
}

/// The pandas example of `docs/guide/history.md` (the Python block after
/// "pandas reads it as it is"), run on `csv` as the guide says, prints the
/// median of each range per commit that `rows` (the same export as JSON)
/// give. Skipped, saying so, without the pandas `scripts/setup-pandas`
/// installs.
fn the_guides_pandas_example_reads_the_export(csv: &str, rows: &[serde_json::Value]) {
    let python = common::workspace_root().join("target/pandas-venv/bin/python");
    if !python.is_file() {
        println!("skipped: no pandas (scripts/setup-pandas installs it)");
        return;
    }
    let guide =
        std::fs::read_to_string(common::workspace_root().join("docs/guide/history.md")).unwrap();
    let after = &guide[guide.find("pandas reads it as it is:").unwrap()..];
    let block = after
        .split("```python\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    assert_eq!(block.lines().count(), 3, "a three-line example:\n{block}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("history.csv"), csv).unwrap();
    let output = std::process::Command::new(&python)
        .args(["-c", block])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for path in ["steady", "work"] {
        let mut values: Vec<f64> = rows
            .iter()
            .filter(|r| r["path"] == path)
            .map(|r| r["p50_ns"].as_f64().unwrap())
            .collect();
        values.sort_by(f64::total_cmp);
        let median = (values[0] + values[values.len() - 1]) / 2.0;
        let line = printed
            .lines()
            .find(|l| l.split_whitespace().any(|w| w == path))
            .unwrap_or_else(|| panic!("no {path} in:\n{printed}"));
        let shown: f64 = line.split_whitespace().last().unwrap().parse().unwrap();
        assert_eq!(shown, median, "{path} in:\n{printed}");
    }
}

/// Each Parquet export, read by pandas with pyarrow, holds the rows and
/// values of the CSV export beside it, with integer columns as integers,
/// `dirty` as booleans and nulls where the CSV has nothing. Skipped,
/// saying so, without the pandas and pyarrow `scripts/setup-pandas`
/// installs.
fn pandas_reads_the_parquet_as_the_csv(exports: &[(Vec<u8>, String)]) {
    let python = common::workspace_root().join("target/pandas-venv/bin/python");
    let has_pyarrow = python.is_file()
        && std::process::Command::new(&python)
            .args(["-c", "import pyarrow"])
            .status()
            .is_ok_and(|s| s.success());
    if !has_pyarrow {
        println!("skipped: no pandas with pyarrow (scripts/setup-pandas installs them)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (k, (parquet, csv)) in exports.iter().enumerate() {
        std::fs::write(dir.path().join(format!("{k}.parquet")), parquet).unwrap();
        std::fs::write(dir.path().join(format!("{k}.csv")), csv).unwrap();
    }
    let script = format!(
        r#"
import numpy as np
import pandas as pd
def text(v):
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v)).lower()
    if isinstance(v, (float, np.floating)):
        return "" if np.isnan(v) else str(int(v))
    return str(v)
for k in range({count}):
    typed = pd.read_parquet(f"{{k}}.parquet")
    plain = pd.read_csv(f"{{k}}.csv", keep_default_na=False, dtype=str)
    assert list(typed.columns) == list(plain.columns), (list(typed.columns), list(plain.columns))
    assert len(typed) == len(plain), (len(typed), len(plain))
    for column in typed.columns:
        shown = [text(v) for v in typed[column]]
        assert shown == list(plain[column]), (column, shown[:5], list(plain[column])[:5])
    assert str(typed["ns" if "ns" in typed.columns else "p50_ns"].dtype) == "int64"
print("read", {count})
"#,
        count = exports.len()
    );
    let output = std::process::Command::new(&python)
        .args(["-c", &script])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `history changes --csv`: series from elsewhere in Apache Otava's CSV
/// format, each change at its row with its attributes, and a file it
/// cannot read refused naming the row and column.
#[test]
fn history_changes_reads_otavas_csv_and_names_the_row_where_a_metric_shifted() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("results.csv");
    let mut text = String::from("time,commit,branch,throughput,p99 latency\n");
    for k in 0..60u32 {
        // A 6 % slower p99 from row 41 on, in a fixed ripple of ±1 %; a
        // throughput without a change.
        let ripple = [0.0, 0.8, -0.6, 0.3, -0.9, 0.5, -0.2][k as usize % 7];
        let latency = if k >= 41 { 106.0 } else { 100.0 } + ripple;
        text.push_str(&format!(
            "2026-11-{:02}T10:00,c{k},main,{},{latency}\n",
            k % 30 + 1,
            500.0 - ripple
        ));
    }
    std::fs::write(&file, text).unwrap();
    let csv = path(&file);
    let shown = cli(&["history", "changes", "--csv", &csv]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let lines: Vec<&str> = shown.stdout.lines().collect();
    assert_eq!(
        lines[0],
        format!("{csv}: 1 change in 2 metrics of 60 rows (E-Divisive means, p <= 0.01, 3 or more rows a side)")
    );
    assert!(
        lines[1].starts_with("  p99 latency: row 41 (2026-11-12T10:00, commit c41, branch main): "),
        "{}",
        shown.stdout
    );
    assert!(lines[1].contains("(+6.0 %, p = 0.005)"), "{}", shown.stdout);
    let json = cli(&[
        "history",
        "changes",
        "--csv",
        &csv,
        "--json",
        "--metric",
        "throughput",
    ]);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(document["metrics"], serde_json::json!(["throughput"]));
    assert_eq!(document["changes"], serde_json::json!([]));

    std::fs::write(&file, "time,commit,x\n1,c1,2\n2,c2,fast\n").unwrap();
    let refused = cli(&["history", "changes", "--csv", &csv, "--metric", "x"]);
    assert_eq!(refused.code, 2);
    assert_eq!(
        refused.stderr,
        format!("error: {csv}: row 3, column `x`: `fast` is not a number\n")
    );
}
