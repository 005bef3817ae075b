//! `profile-cli load` end to end, in-process, against targets of fixed
//! service time defined here: busy work (a chain of dependent steps), not
//! a sleep, so that a worker that is busy is really busy. Every figure is
//! judged against the target's own service time, measured first, never
//! against a clock's expectation.

use std::path::Path;

use profiling_core::driver::canary::chain;
use profiling_core::prelude::*;
use serde_json::Value;

#[path = "common/mod.rs"]
mod common;

use common::cli;

/// A fixed amount of busy work a query, in the range `busy`.
#[derive(Default)]
struct Busy;

#[profile_target(name = "load-busy")]
impl ProfileTarget for Busy {
    type Prepared = ();
    type Output = u64;
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<u64> {
        let _range = profiling_range("busy");
        Ok(chain(200_000, 7))
    }
}

/// Twice `load-busy`'s work, for a search.
#[derive(Default)]
struct Quick;

#[profile_target(name = "load-quick")]
impl ProfileTarget for Quick {
    type Prepared = ();
    type Output = u64;
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<u64> {
        let _range = profiling_range("quick");
        Ok(chain(400_000, 7))
    }
}

/// Every query runs `step`; one in 25 also runs `stall`, two thousand
/// times longer (tens of milliseconds, longer than a busy machine keeps a
/// thread waiting): the slowest queries are the stalled ones.
#[derive(Default)]
struct Stalling {
    calls: u64,
}

#[profile_target(name = "load-stalling")]
impl ProfileTarget for Stalling {
    type Prepared = ();
    type Output = u64;
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<u64> {
        self.calls += 1;
        let step = {
            let _range = profiling_range("step");
            chain(10_000, self.calls)
        };
        if self.calls.is_multiple_of(25) {
            let _range = profiling_range("stall");
            return Ok(step ^ chain(20_000_000, step));
        }
        Ok(step)
    }
}

/// Fails its fifth query.
#[derive(Default)]
struct Failing {
    calls: u64,
}

#[profile_target(name = "load-failing")]
impl ProfileTarget for Failing {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn prepare_batch(&mut self, _records: &[DataRecord], _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        self.calls += 1;
        anyhow::ensure!(self.calls != 5, "no answer for call {}", self.calls);
        Ok(())
    }
}

fn path(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// `load ARGS --json` into a fresh output directory: the document, and
/// the human output.
fn load(out: &Path, args: &[&str]) -> (u8, Value, String) {
    let mut argv = vec!["load"];
    argv.extend(args);
    let out_dir = path(out);
    argv.extend(["--output-dir", &out_dir, "--json", "--no-report"]);
    let ran = cli(&argv);
    let document = serde_json::from_str(ran.stdout.trim())
        .unwrap_or_else(|error| panic!("{argv:?}: {error}\n{}\n{}", ran.stdout, ran.stderr));
    (ran.code, document, ran.stderr)
}

fn percentile(step: &Value, distribution: &str, name: &str) -> f64 {
    step[distribution]["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap()["value_ns"]
        .as_f64()
        .unwrap()
}

/// `load` with `args` (after `load-busy`, unless they name a config) into
/// `out_dir` exits 2 saying `expected`.
fn assert_refused(out_dir: &str, args: &[&str], expected: &str) {
    let mut argv = vec!["load"];
    if args.first() != Some(&"--config") {
        argv.push("load-busy");
    }
    argv.extend(["--output-dir", out_dir]);
    argv.extend(args);
    let refused = cli(&argv);
    assert_eq!(refused.code, 2, "{args:?}: {}", refused.stderr);
    assert!(
        refused.stderr.contains(expected),
        "{args:?}: {}",
        refused.stderr
    );
}

/// The target's own time a query, single-stream.
fn service_ns(out: &Path, target: &str) -> f64 {
    let (code, document, stderr) = load(out, &[target, "--queries", "200", "--warmup", "20"]);
    assert_eq!(code, 0, "{stderr}");
    percentile(&document["load"]["steps"][0], "service", "p50")
}

/// Item by item what a load of fixed service time must show: at a third
/// of what one worker serves, the median latency is the service time; at
/// twice it, the run says the worker fell behind, and a longer run's p99
/// is longer (the queue grows with the run, so no flat p99 is reported).
#[test]
fn a_fixed_service_time_reads_true_below_capacity_and_falls_behind_above() {
    let out = tempfile::tempdir().unwrap();
    let service = service_ns(out.path(), "load-busy");
    let capacity = 1e9 / service;

    let third = format!("{:.3}", capacity / 3.0);
    let (code, document, stderr) = load(
        out.path(),
        &[
            "load-busy",
            "--qps",
            &third,
            "--queries",
            "400",
            "--p99-bound",
            "10s",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let step = &document["load"]["steps"][0];
    let p50 = percentile(step, "latency", "p50");
    assert!(
        (p50 - service).abs() <= 0.25 * service,
        "p50 {p50} ns against a service time of {service} ns"
    );
    assert_eq!(step["backlog"]["fell_behind"], false, "{step}");
    assert_eq!(step["bound"]["held"], true);

    let twice = format!("{:.3}", capacity * 2.0);
    let mut p99s = Vec::new();
    for queries in ["400", "800"] {
        let (code, document, stderr) = load(
            out.path(),
            &["load-busy", "--qps", &twice, "--queries", queries],
        );
        assert_eq!(code, 0, "{stderr}");
        let step = &document["load"]["steps"][0];
        assert_eq!(step["backlog"]["fell_behind"], true, "{step}");
        assert!(
            step["backlog"]["statement"]
                .as_str()
                .unwrap()
                .starts_with("the workers fell behind"),
            "{step}"
        );
        // Served at what one worker can, not at what was offered.
        let served = step["served_qps"].as_f64().unwrap();
        assert!(
            served < 0.75 * capacity * 2.0,
            "served {served} of {}",
            capacity * 2.0
        );
        // The p99 is the run's length, not the target's: a query near the
        // end waited for most of what was sent before it.
        let p99 = percentile(step, "latency", "p99");
        let duration = step["duration_ns"].as_f64().unwrap();
        assert!(p99 > 0.25 * duration, "p99 {p99} of a run of {duration} ns");
        p99s.push(p99);
        // And the timeline shows it: windows of 20 queries on average
        // (20, then 40), the last with a longer queue and a slower median
        // than the first.
        let windows = step["timeline"].as_array().unwrap();
        let count: usize = queries.parse().unwrap();
        assert_eq!(windows.len(), count / 20, "{step}");
        let (first, last) = (&windows[0], &windows[windows.len() - 1]);
        let sent: u64 = windows.iter().map(|w| w["sent"].as_u64().unwrap()).sum();
        assert_eq!(sent, count as u64);
        assert!(
            last["waiting_at_end"].as_u64() > first["waiting_at_end"].as_u64()
                && last["latency_p50_ns"].as_u64() > first["latency_p50_ns"].as_u64(),
            "{first} then {last}"
        );
    }
    // Twice the queries, a longer queue.
    assert!(p99s[1] > p99s[0], "p99 {p99s:?}");
}

/// Each query is timed from its intended send: in a closed loop of four
/// outstanding on one worker, three wait while one is served, and the
/// wait is in the latency.
#[test]
fn waiting_for_a_worker_is_in_the_latency_and_its_own_column() {
    let out = tempfile::tempdir().unwrap();
    let (code, document, stderr) = load(
        out.path(),
        &[
            "load-busy",
            "--scenario",
            "concurrency",
            "--concurrency",
            "4",
            "--queries",
            "40",
            "--warmup",
            "1",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let step = &document["load"]["steps"][0];
    let service = percentile(step, "service", "p50");
    let queueing = percentile(step, "queueing", "p50");
    let latency = percentile(step, "latency", "p50");
    // Three queries ahead of each: about three service times of waiting.
    assert!(
        queueing > 2.0 * service && latency > 3.0 * service,
        "service {service}, queueing {queueing}, latency {latency}"
    );
}

/// A load goes into the history store with its runs: its query latency,
/// queueing and service and each range under load, per commit, as
/// `history` shows them; importing it again writes nothing.
#[test]
fn a_load_goes_into_the_history_store_with_its_percentiles() {
    let out = tempfile::tempdir().unwrap();
    let (code, document, stderr) = load(
        out.path(),
        &[
            "load-stalling",
            "--qps",
            "400",
            "--queries",
            "60",
            "--run-id",
            "l1",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("history store"), "{stderr}");
    let step = &document["load"]["steps"][0];
    let out_dir = path(out.path());
    for metric in ["p50", "p99"] {
        let shown = cli(&[
            "history",
            "load-stalling",
            "--output-dir",
            &out_dir,
            "--dirty",
            "--json",
            "--metric",
            metric,
        ]);
        assert_eq!(shown.code, 0, "{}", shown.stderr);
        let history: Value = serde_json::from_str(&shown.stdout).unwrap();
        let series = history["groups"][0]["series"].as_array().unwrap();
        let paths: Vec<&str> = series.iter().map(|s| s["path"].as_str().unwrap()).collect();
        assert_eq!(
            &paths[..3],
            ["query latency", "query queueing", "query service"],
            "{history}"
        );
        assert!(paths.contains(&"stall"), "{paths:?}");
        let latency = series[0]["commits"][0]["value"].as_f64().unwrap();
        assert_eq!(latency, percentile(step, "latency", metric), "{metric}");
    }
    let imported = cli(&["history", "import", &out_dir, "--output-dir", &out_dir]);
    assert_eq!(imported.code, 0, "{}", imported.stderr);
    assert!(
        imported
            .stdout
            .ends_with(": 0 runs written, 1 there already\n"),
        "{}",
        imported.stdout
    );
}

/// The slowest queries are the ones that stalled: the tail's owner is
/// the range `stall`, and every range has its distribution over the run.
#[test]
fn the_range_the_slowest_queries_spent_their_time_in_owns_the_p99() {
    let out = tempfile::tempdir().unwrap();
    let (code, document, stderr) = load(
        out.path(),
        &["load-stalling", "--queries", "500", "--run-id", "tail"],
    );
    assert_eq!(code, 0, "{stderr}");
    let step = &document["load"]["steps"][0];
    assert_eq!(step["tail"]["owner"], "stall", "{}", step["tail"]);
    let ranges: Vec<(&str, u64)> = step["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(ranges, [("stall", 20), ("step", 500)]);
    // Recorded on the worker's own thread, named for it.
    assert_eq!(step["threads"]["workers"], 1);
    assert_eq!(step["threads"]["ranged_elsewhere"], serde_json::json!([]));
    let record = document["manifest_path"].as_str().unwrap();
    let written: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(record).unwrap()).unwrap();
    assert_eq!(written["load"]["steps"][0]["tail"]["owner"], "stall");
    assert_eq!(written["status"], "completed");
    // `compare` and `report` read runs: a load is named for what it is.
    let refused = cli(&[
        "compare",
        "load-stalling@tail",
        "load-stalling@tail",
        "--output-dir",
        &path(out.path()),
    ]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("a load (`profile-cli load` wrote its load.yaml), not a run"),
        "{}",
        refused.stderr
    );
}

/// `--find-peak` brackets the rate and bisects it: the peak held the
/// bound, a rate within 5 % above it did not, and the curve holds every
/// step.
#[test]
fn the_peak_holds_the_bound_and_the_next_rate_up_does_not() {
    let out = tempfile::tempdir().unwrap();
    let service = service_ns(out.path(), "load-quick");
    let bound_ns = 5.0 * service;
    let bound = format!("{:.0}us", bound_ns / 1e3);
    let (code, document, stderr) = load(
        out.path(),
        &[
            "load-quick",
            "--find-peak",
            "--p99-bound",
            &bound,
            "--queries",
            "400",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let load = &document["load"];
    let peak = &load["peak"];
    let curve = peak["curve"].as_array().unwrap();
    assert_eq!(curve.len(), load["steps"].as_array().unwrap().len());
    // Each step held exactly when its p99 was within the bound and the
    // worker kept up.
    let bound_ns = peak["bound_ns"].as_f64().unwrap();
    for point in curve {
        let within = point["p99_ns"].as_f64().unwrap() <= bound_ns && point["fell_behind"] == false;
        assert_eq!(point["held"], within, "{point}");
    }
    // A machine busy enough to keep a thread waiting longer than the bound
    // at every rate leaves no peak, and the search says so honestly.
    let Some(best) = peak["peak_qps"].as_f64() else {
        assert!(curve.iter().all(|p| p["held"] == false), "{peak}");
        return;
    };
    assert!(curve
        .iter()
        .any(|p| p["offered_qps"].as_f64() == Some(best) && p["held"] == true));
    match peak["first_missed_qps"].as_f64() {
        Some(missed) => {
            assert!(missed > best, "{peak}");
            assert!(
                missed / best <= 1.05 || peak["unfinished"].is_string(),
                "{peak}"
            );
        }
        None => assert!(peak["unfinished"].is_string(), "{peak}"),
    }
    // One worker cannot hold more than it serves.
    assert!(
        best < 1e9 / service,
        "peak {best} above capacity {}",
        1e9 / service
    );
    assert!(load["calibration"]["scenario"] == "single-stream");
}

/// Bad input is refused before anything runs, naming the option or the
/// config key (with its line and column) and what would do.
#[test]
fn bad_load_requests_are_refused_with_what_to_do() {
    let out = tempfile::tempdir().unwrap();
    let out_dir = path(out.path());
    for (args, expected) in [
        (
            vec!["--qps", "0"],
            "'--qps <Q>': the offered rate must be above 0 queries a second (got 0)",
        ),
        (vec!["--workers", "0", "--scenario", "offline", "--queries", "9"], "--workers: a load needs at least one worker (got 0)"),
        (
            vec!["--qps", "100", "--duration", "10s", "--p99-bound", "10"],
            "--p99-bound: `10` needs a unit: 10s, 10ms or 10us",
        ),
        (
            vec!["--qps", "100", "--duration", "2s", "--p99-bound", "10ms"],
            "this load sends 200 queries; a p99 with its 95 % interval needs 368 (p99.9 needs 3688)",
        ),
        (
            vec!["--find-peak"],
            "--find-peak searches for the highest rate whose p99 holds a bound",
        ),
        (
            vec!["--workers", "2"],
            "single-stream has one query outstanding: it runs on one worker, not 2",
        ),
        (
            vec!["--queries", "0"],
            "--queries: a load measures at least one query (got 0)",
        ),
        (
            vec!["--arrival", "gamma", "--qps", "5"],
            "--arrival: a gamma arrival needs its shape: gamma:0.5",
        ),
    ] {
        assert_refused(&out_dir, &args, expected);
    }
    // A config's key is named with its place in the file.
    let config = out.path().join("load.yaml");
    std::fs::write(
        &config,
        "target:\n  name: load-busy\nload:\n  scenario: server\n  qps: 50\n  duration: 30\n",
    )
    .unwrap();
    assert_refused(
        &out_dir,
        &["--config", &path(&config)],
        &format!(
            "{}:6:13: load.duration: `30` needs a unit",
            config.display()
        ),
    );
    assert!(!out.path().join("load-busy").exists(), "nothing written");
}

/// A config's `load:` section sets the load, and the record says where
/// the minimums came from.
#[test]
fn a_configs_load_section_is_the_default_the_options_override() {
    let out = tempfile::tempdir().unwrap();
    let config = out.path().join("busy.yaml");
    std::fs::write(
        &config,
        "target:\n  name: load-quick\nseed: 3\nload:\n  scenario: concurrency\n  concurrency: 2\n  queries: 50\n  warmup: 3\n",
    )
    .unwrap();
    let (code, document, stderr) = load(out.path(), &["--config", &path(&config)]);
    assert_eq!(code, 0, "{stderr}");
    let request = &document["load"]["request"];
    assert_eq!(request["scenario"], "concurrency");
    assert_eq!(request["concurrency"], 2);
    assert_eq!(request["warmup"], 3);
    assert_eq!(request["seed"], 3);
    assert_eq!(request["minimums_from"], "the config");
    assert!(document["load"]["steps"][0]["queries"].as_u64().unwrap() >= 50);
    let (code, document, stderr) = load(
        out.path(),
        &["--config", &path(&config), "--concurrency", "3"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(document["load"]["request"]["concurrency"], 3);
}

/// A query that fails names its worker and its query, exits 1, and the
/// record says the load failed and why.
#[test]
fn a_failing_query_is_named_and_the_record_says_the_load_failed() {
    let out = tempfile::tempdir().unwrap();
    let (code, document, stderr) = load(
        out.path(),
        &["load-failing", "--queries", "20", "--warmup", "1"],
    );
    assert_eq!(code, 1, "{stderr}");
    // The warmup's call was the first: the fifth call is query 3.
    assert!(
        stderr.contains("error: query 3 failed on worker 0: no answer for call 5"),
        "{stderr}"
    );
    assert_eq!(document["status"], "failed");
    let record = document["manifest_path"].as_str().unwrap();
    let written: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(record).unwrap()).unwrap();
    assert_eq!(written["status"], "failed");
    assert_eq!(
        written["error"],
        "query 3 failed on worker 0: no answer for call 5"
    );
    // Batches are refused before anything runs (the target takes them in
    // a run).
    let runs = out.path().join("load-failing/runs");
    let count = || std::fs::read_dir(&runs).unwrap().count();
    let before = count();
    let config = out.path().join("batched.yaml");
    std::fs::write(&config, "target:\n  name: load-failing\nbatch_size: 2\n").unwrap();
    let refused = cli(&[
        "load",
        "--config",
        &path(&config),
        "--output-dir",
        &path(out.path()),
    ]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("a load sends one record a query: workload.batch_size must be 1, not 2"),
        "{}",
        refused.stderr
    );
    assert_eq!(count(), before, "nothing written");
}

/// Values no load can honour are refused with their numbers before
/// anything runs: never wrapped into a schedule sent at once, truncated
/// into another bound, or allocated until the process aborts.
#[test]
fn rates_durations_and_counts_past_what_a_load_holds_are_refused() {
    let out = tempfile::tempdir().unwrap();
    let out_dir = path(out.path());
    for (args, expected) in [
        // Intended sends past the clock: once every query at once, p99 0.
        (
            vec!["--qps", "1e-12"],
            "368 queries at 0.000000000001 a second take 368000000000000 s",
        ),
        (
            vec!["--qps", "1e-12", "--loadgen-minimums"],
            "270336 queries at 0.000000000001 a second take 2703",
        ),
        // Once 0.447 ms.
        (
            vec!["--qps", "100", "--duration", "10s", "--p99-bound", "18446744073.71s"],
            "--p99-bound: `18446744073.71s` is too long: a duration is at most 168 h (a week)",
        ),
        // Once a panic, exit 101.
        (
            vec!["--qps", "100", "--duration", "100000000000000000000s"],
            "--duration: `100000000000000000000s` is too long",
        ),
        // Once 80 TB asked for and an abort.
        (
            vec!["--qps", "1e12", "--duration", "10s"],
            "1000000000000 queries a second is more than one a nanosecond",
        ),
        (
            vec!["--qps", "1e6", "--duration", "100s"],
            "this load sends 100000000 queries (at 1000000 a second): more than a step records, at most 10000000",
        ),
        (
            vec!["--queries", "18446744073709551615"],
            "this load sends 18446744073709551615 queries: more than a step records",
        ),
        (
            vec!["--workers", "4294967296"],
            "`4294967296` is too large a count (at most 4294967295)",
        ),
    ] {
        assert_refused(&out_dir, &args, expected);
    }
    // The same rate from a config names its key and place.
    let config = out.path().join("slow.yaml");
    std::fs::write(
        &config,
        "target:\n  name: load-busy\nload:\n  qps: 1.0e-12\n  queries: 10\n",
    )
    .unwrap();
    assert_refused(
        &out_dir,
        &["--config", &path(&config)],
        "slow.yaml:4:8: load.qps: 10 queries at 0.000000000001 a second take",
    );
    assert!(!out.path().join("load-busy").exists(), "nothing written");
}

/// Bursty arrivals over few queries offer a rate far from the one asked:
/// the rate printed and recorded as offered is the schedule's own.
#[test]
fn the_rate_offered_is_the_one_the_schedule_sent() {
    let out = tempfile::tempdir().unwrap();
    let (code, document, stderr) = load(
        out.path(),
        &[
            "load-quick",
            "--qps",
            "500",
            "--arrival",
            "gamma:1e-3",
            "--queries",
            "400",
            "--warmup",
            "1",
            "--seed",
            "4",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let step = &document["load"]["steps"][0];
    assert_eq!(step["offered_qps"], 500.0);
    let scheduled = step["scheduled_qps"].as_f64().unwrap();
    assert!((scheduled / 500.0 - 1.0).abs() > 0.2, "{scheduled}");
    let line = format!("{scheduled:.1} q/s offered (500.0 asked)");
    assert!(stderr.contains(&line), "{line}\n{stderr}");
}

/// `--force` replaces the run directory whole, whatever it held: nothing
/// of an earlier run or page stays beside the new record.
#[test]
fn force_replaces_an_earlier_record_of_any_kind_whole() {
    let out = tempfile::tempdir().unwrap();
    let out_dir = path(out.path());
    let dir = out.path().join("load-busy/runs/same");
    let ran = cli(&[
        "run",
        "load-busy",
        "--run-id",
        "same",
        "--output-dir",
        &out_dir,
    ]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(dir.join("manifest.yaml").exists() && dir.join("samples.bin").exists());
    let files = |dir: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let load_args = ["load", "load-busy", "--queries", "5", "--warmup", "0"];
    let loaded = cli(&[
        &load_args[..],
        &["--run-id", "same", "--output-dir", &out_dir, "--force"],
    ]
    .concat());
    assert_eq!(loaded.code, 0, "{}", loaded.stderr);
    assert_eq!(files(&dir), ["load.html", "load.yaml"]);
    let again = cli(&[
        &load_args[..],
        &[
            "--run-id",
            "same",
            "--output-dir",
            &out_dir,
            "--force",
            "--no-report",
        ],
    ]
    .concat());
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(files(&dir), ["load.yaml"]);
    // Nothing stays beside the run directory either.
    assert_eq!(files(dir.parent().unwrap()), ["same"]);
    // And `report` no longer finds an earlier run's manifest there.
    let report = cli(&["report", &path(&dir)]);
    assert_ne!(report.code, 0, "{}", report.stdout);
}
