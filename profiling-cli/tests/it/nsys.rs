//! `run --nsys` and `--print-nsys-command` with a real Nsight Systems
//! (`scripts/setup-nsys` installs one; without it these tests skip, saying
//! so): the capture ends by itself, the report lands in the run directory,
//! the capture holds the measured passes and nothing else, and what Nsight
//! recorded agrees with the run's own manifest.
//!
//! Each run has a time limit only so that a hang fails the test instead of
//! blocking the suite; no assertion depends on how long anything took.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Skipped tests say this.
const SKIPPED: &str = "skipped: no nsys (scripts/setup-nsys installs Nsight Systems)";

/// Past this, nsys, the run and everything they started are killed and
/// the test fails: a capture that does not end is the defect under test.
const HANG_LIMIT: Duration = Duration::from_secs(300);

/// The nsys on PATH that answers `--version`, or None after printing why
/// the calling test skips.
fn nsys_or_skip() -> Option<String> {
    let version = Command::new("nsys")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned());
    if version.is_none() {
        println!("{SKIPPED}");
    }
    version
}

/// One capture at a time: two nsys sessions at once would each see the
/// other's load, which is not what these tests are about.
fn one_capture_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static NSYS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    NSYS.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `command` in a process group of its own; past [`HANG_LIMIT`] the
/// group is killed and the test fails, naming what hung.
fn finish(mut command: Command, what: &str) -> Output {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let child = command.spawn().unwrap();
    let group = child.id() as i32;
    let waiter = std::thread::spawn(move || child.wait_with_output().unwrap());
    let started = Instant::now();
    while !waiter.is_finished() {
        if started.elapsed() > HANG_LIMIT {
            // SAFETY: kill(2) on the process group this test started.
            unsafe {
                libc::kill(-group, libc::SIGKILL);
            }
            let output = waiter.join().unwrap();
            panic!(
                "{what} did not end within {HANG_LIMIT:?}: killed\n{}\n{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    waiter.join().unwrap()
}

fn profile_cli(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_profile-cli"));
    command.args(args);
    command
}

/// `runs/` of profile `profile` under the output directory `out`.
fn runs_of(out: &Path, profile: &str) -> PathBuf {
    out.join(profile).join("runs")
}

/// What `runs/` holds besides run directories: claims, partial runs,
/// nsys's report directories. A run that ended well leaves none.
fn leftovers(runs: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(runs)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('.'))
        .collect();
    names.sort();
    names
}

fn read_yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap()
}

/// Whether nsys failed before the run it was to start said a word: on a
/// loaded machine, this nsys now and then ends its session while setting
/// it up ("End of file", exit 1), before it launches anything. Not what
/// these tests are about: such a try is made once more. The run's first
/// line is `running `NAME``; a run that started and failed says so.
fn nsys_failed_before_the_run(output: &Output) -> bool {
    let stderr = String::from_utf8_lossy(&output.stderr);
    !output.status.success() && !stderr.starts_with("running `") && !stderr.contains("\nrunning `")
}

/// Runs `target` under `run --nsys --json` into `out` as run `run_id`;
/// returns the analysis document it printed.
fn run_under_nsys(target: &str, out: &Path, run_id: &str, passes: u32) -> Value {
    let passes = passes.to_string();
    let attempt = || {
        finish(
            profile_cli(&[
                "run",
                target,
                "--nsys",
                "--json",
                "--warmup",
                "2",
                "--iterations",
                &passes,
                "--output-dir",
                out.to_str().unwrap(),
                "--run-id",
                run_id,
            ]),
            &format!("run {target} --nsys"),
        )
    };
    let mut output = attempt();
    if nsys_failed_before_the_run(&output) {
        eprintln!(
            "nsys failed before the run started; once more. It said:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        output = attempt();
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        !stderr.contains("%        ]") && !stderr.contains("Exporting "),
        "nsys's progress bars are not passed through:\n{stderr}"
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is the analysis as JSON ({e}):\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

fn range<'a>(analysis: &'a Value, path: &str) -> &'a Value {
    analysis["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == path)
        .unwrap_or_else(|| panic!("range {path} in {analysis}"))
}

/// The capture ends by itself (`PROFILING_NSYS_RUNS` times in a row, 2
/// unless set: 20 checks the hang is gone), the report and its export
/// are in the run directory, nothing is left beside it, and the capture
/// holds the measured passes only: 20 passes, each range 20 times, none
/// of the two warmup passes.
#[test]
fn a_run_under_nsys_ends_by_itself_with_its_report_in_the_run_directory() {
    let Some(_) = nsys_or_skip() else { return };
    let _turn = one_capture_at_a_time();
    let out = tempfile::tempdir().unwrap();
    let repeats: usize = std::env::var("PROFILING_NSYS_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2);
    let runs = runs_of(out.path(), "spin-and-sleep");
    for attempt in 0..repeats {
        let run_id = format!("capture-{attempt}");
        let analysis = run_under_nsys("spin-and-sleep", out.path(), &run_id, 20);
        let run_dir = runs.join(&run_id);
        for file in [
            "manifest.yaml",
            "trace.nsys-rep",
            "trace.sqlite",
            "analysis.yaml",
            "report.html",
        ] {
            assert!(
                run_dir.join(file).is_file(),
                "{file} in {}",
                run_dir.display()
            );
        }
        assert_eq!(leftovers(&runs), Vec::<String>::new(), "attempt {attempt}");
        // nsys starts the run with umask 0: its files are not left writable by all.
        for path in [run_dir.clone(), run_dir.join("manifest.yaml")] {
            let mode = std::os::unix::fs::PermissionsExt::mode(
                &std::fs::metadata(&path).unwrap().permissions(),
            );
            assert_eq!(mode & 0o002, 0, "{} is {mode:o}", path.display());
        }
        let manifest = read_yaml(&run_dir.join("manifest.yaml"));
        assert_eq!(manifest["status"], "completed");
        assert_eq!(analysis["passes"].as_array().unwrap().len(), 20);
        for path in ["step", "step/spin", "step/sleep"] {
            assert_eq!(range(&analysis, path)["count"], 20, "{path}");
        }
        assert_eq!(analysis["ranges"].as_array().unwrap().len(), 3);
        assert_eq!(analysis["cuda_traced"], false);
        assert!(analysis["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("no CUDA trace")));
    }
}

/// Nsight's OS runtime trace says where a range waits: the sleep of
/// `step/sleep` is one nanosleep call per call of the range, most of its
/// time, and counts for `step` too; `step/spin` makes no OS call.
#[test]
fn the_time_a_range_waits_in_os_calls_is_what_nsight_recorded() {
    let Some(_) = nsys_or_skip() else { return };
    let _turn = one_capture_at_a_time();
    let out = tempfile::tempdir().unwrap();
    let analysis = run_under_nsys("spin-and-sleep", out.path(), "osrt", 20);
    assert_eq!(analysis["os_runtime_traced"], true);
    let sleep = range(&analysis, "step/sleep");
    let call = &sleep["os_calls"][0];
    assert!(
        call["name"].as_str().unwrap().contains("nanosleep"),
        "{sleep}"
    );
    assert_eq!(call["count"], 20);
    let waited = sleep["os_runtime_ns"].as_u64().unwrap();
    let host: u64 = sleep["host"]["total_ns"].as_u64().unwrap();
    // At least the 20 x 500 µs asked for, and inside the range.
    assert!(
        waited >= 20 * 500_000 && waited <= host,
        "{waited} of {host}"
    );
    assert_eq!(range(&analysis, "step")["os_runtime_ns"], waited);
    assert_eq!(range(&analysis, "step/spin")["os_runtime_ns"], 0);

    // The run's page, in a browser: the same, without GPU columns.
    let Some(browser) = crate::browser::Browser::or_skip() else {
        return;
    };
    let page = runs_of(out.path(), "spin-and-sleep").join("osrt/report.html");
    let rendered = browser.dump_dom(&page).dom;
    let dom = crate::browser::Dom::parse(&rendered);
    let table = dom.by_id("table", "gpu-ranges");
    let mut rows = dom.values_inside(table, "td", "data-os-calls");
    rows.sort();
    assert_eq!(rows, ["step", "step/sleep", "step/spin"]);
    let section = &rendered[rendered.find("id=\"nsight\"").unwrap()..];
    assert!(section.contains("nanosleep ×20 ("), "{section}");
    assert!(!section.contains("GPU busy"), "{section}");
}

/// The project's claim that its numbers are the ones Nsight shows: on a
/// target of twelve nested ranges, the export's NVTX tree is the
/// manifest's `range_tree` (every path, its depth, its count), and range
/// by range, instance by instance, Nsight measured what the run measured.
///
/// Instances are paired in the order they began: the run's from its
/// `trace.json` (whose medians are the manifest's, to the nanosecond),
/// Nsight's from the export's `NVTX_EVENTS` inside the capture range.
/// Nsight takes its timestamps in its NVTX callbacks, around the run's
/// own, so each of its instances holds the run's (never shorter), and the
/// median of the differences is Nsight's own cost at a range's two ends,
/// a few microseconds, under 20 µs. The median of the differences, not the difference of the
/// medians: on a loaded machine one instance delayed inside Nsight's
/// callback moves a median of 100 by a whole gap between two neighbours
/// in order, the same instance moves the median difference by nothing.
#[test]
fn nsight_agrees_with_the_manifest_on_every_range() {
    let Some(_) = nsys_or_skip() else { return };
    let _turn = one_capture_at_a_time();
    let out = tempfile::tempdir().unwrap();
    let analysis = run_under_nsys("detection-pipeline", out.path(), "agree", 100);
    let run = runs_of(out.path(), "detection-pipeline").join("agree");
    let manifest = read_yaml(&run.join("manifest.yaml"));
    let tree = manifest["timings"]["range_tree"].as_array().unwrap();
    // Every path with its depth and count, in order.
    let shape = |ranges: &[Value]| {
        let mut shape: Vec<(String, u64, u64)> = ranges
            .iter()
            .map(|r| {
                (
                    r["path"].as_str().unwrap().to_owned(),
                    r["depth"].as_u64().unwrap(),
                    r["count"].as_u64().unwrap(),
                )
            })
            .collect();
        shape.sort();
        shape
    };
    let ours = shape(tree);
    let nsight = shape(analysis["ranges"].as_array().unwrap());
    assert!(ours.len() >= 10, "a tree worth comparing: {ours:?}");
    assert_eq!(nsight, ours);

    let ours = our_instances(&run.join("trace.json"));
    let theirs = nsight_instances(&run.join("trace.sqlite"), "profile-target");
    // Per range, the median of Nsight's instance less the run's.
    let mut medians: Vec<(String, i64, i64, i64)> = Vec::new();
    for range in tree {
        let path = range["path"].as_str().unwrap();
        let name = path.rsplit('/').next().unwrap();
        let (ours, theirs) = (&ours[name], &theirs[name]);
        assert_eq!(
            ours.len() as u64,
            range["count"].as_u64().unwrap(),
            "{path}"
        );
        assert_eq!(theirs.len(), ours.len(), "{path}: instances Nsight saw");
        assert_eq!(
            lower_median(ours),
            range["inclusive"]["p50_ns"].as_u64().unwrap(),
            "{path}: the trace's instances are the manifest's"
        );
        // Nsight takes its timestamps around the run's, so each of its
        // instances holds the run's, but on a clock of its own: the run's
        // counter is scaled against CLOCK_MONOTONIC by two readings at
        // least 1 ms apart, to about ten parts in a million, so an instance
        // of a few milliseconds may read tens of nanoseconds shorter on
        // Nsight's. A part in a thousand,
        // and the nanosecond rounding of the trace's microseconds, allowed.
        for (&ours, &theirs) in ours.iter().zip(theirs) {
            let allowed = 1 + ours / 1_000;
            assert!(
                theirs + allowed >= ours,
                "{path}: an instance Nsight measured shorter than the run did: {theirs} ns against {ours} ns"
            );
        }
        let mut differences: Vec<i64> = ours
            .iter()
            .zip(theirs)
            .map(|(&ours, &theirs)| theirs as i64 - ours as i64)
            .collect();
        differences.sort_unstable();
        let median = differences[(differences.len() - 1) / 2];
        medians.push((
            path.to_owned(),
            median,
            differences[0],
            differences[differences.len() - 1],
        ));
    }
    // Nsight stamps an instance inside its own callbacks of the push and
    // the pop, so its instances carry the cost of those callbacks beside
    // the run's: under 1 µs for most ranges of this target on this
    // project's two-core machine, 6 to 9 µs for `preprocess/letterbox/resize`
    // with a build running beside it (2026-12-07). A clock read misplaced,
    // or a scale off by a part in a thousand on these instances of
    // milliseconds, is more than 20 µs.
    let least = medians.iter().map(|m| m.1).min().unwrap_or(0);
    for (path, median, shortest, longest) in &medians {
        assert!(
            *median <= 20_000,
            "{path}: Nsight's instances longer than the run's by a median of {median} ns \
             (from {shortest} to {longest} ns; the range that agrees best differs by {least} ns)"
        );
    }
}

/// The lower median, the manifest's p50.
fn lower_median(values: &[u64]) -> u64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted[(sorted.len() - 1) / 2]
}

/// Each range name's durations in a run's `trace.json`, in nanoseconds,
/// in the order the instances began.
fn our_instances(trace: &Path) -> BTreeMap<String, Vec<u64>> {
    let trace: Value = serde_json::from_slice(&std::fs::read(trace).unwrap()).unwrap();
    let mut events: Vec<&Value> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "range")
        .collect();
    events.sort_by(|a, b| {
        a["ts"]
            .as_f64()
            .unwrap()
            .total_cmp(&b["ts"].as_f64().unwrap())
    });
    let mut instances = BTreeMap::<String, Vec<u64>>::new();
    for event in events {
        let nanoseconds = (event["dur"].as_f64().unwrap() * 1e3).round() as u64;
        instances
            .entry(event["name"].as_str().unwrap().to_owned())
            .or_default()
            .push(nanoseconds);
    }
    instances
}

/// Each push/pop range name's durations in an Nsight export, inside the
/// one range named `capture`, in the order the instances began.
fn nsight_instances(export: &Path, capture: &str) -> BTreeMap<String, Vec<u64>> {
    let db = rusqlite::Connection::open(export).unwrap();
    let mut query = db
        .prepare(
            "SELECT e.start, e.end, coalesce(e.text, s.value) FROM NVTX_EVENTS e \
             LEFT JOIN StringIds s ON s.id = e.textId \
             WHERE e.eventType = 59 AND e.end IS NOT NULL ORDER BY e.start",
        )
        .unwrap();
    let ranges: Vec<(i64, i64, String)> = query
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let captures: Vec<_> = ranges.iter().filter(|r| r.2 == capture).collect();
    assert_eq!(
        captures.len(),
        1,
        "one {capture} range in {}",
        export.display()
    );
    let (from, to) = (captures[0].0, captures[0].1);
    let mut instances = BTreeMap::<String, Vec<u64>>::new();
    for (start, end, name) in ranges {
        if start >= from && end <= to && name != capture {
            instances
                .entry(name)
                .or_default()
                .push((end - start) as u64);
        }
    }
    instances
}

/// The command `--print-nsys-command` prints, run as printed by a shell,
/// leaves the same run directory `run --nsys` does.
#[test]
fn the_printed_command_run_by_hand_gives_the_same_run_directory() {
    let Some(_) = nsys_or_skip() else { return };
    let _turn = one_capture_at_a_time();
    let out = tempfile::tempdir().unwrap();
    let printed = finish(
        profile_cli(&[
            "run",
            "spin-and-sleep",
            "--print-nsys-command",
            "--iterations",
            "5",
            "--output-dir",
            out.path().to_str().unwrap(),
            "--run-id",
            "by-hand",
        ]),
        "--print-nsys-command",
    );
    assert_eq!(printed.status.code(), Some(0));
    let text = String::from_utf8(printed.stdout).unwrap();
    let shell = || {
        let mut shell = Command::new("sh");
        shell.arg("-c").arg(&text);
        finish(shell, "the printed nsys command")
    };
    let mut ran = shell();
    if nsys_failed_before_the_run(&ran) {
        eprintln!(
            "nsys failed before the run started; once more. It said:\n{}",
            String::from_utf8_lossy(&ran.stderr)
        );
        ran = shell();
    }
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let runs = runs_of(out.path(), "spin-and-sleep");
    let run_dir = runs.join("by-hand");
    for file in [
        "manifest.yaml",
        "trace.nsys-rep",
        "trace.sqlite",
        "analysis.yaml",
    ] {
        assert!(run_dir.join(file).is_file(), "{file}");
    }
    assert_eq!(leftovers(&runs), Vec::<String>::new());
    let analysis = read_yaml(&run_dir.join("analysis.yaml"));
    assert_eq!(analysis["passes"].as_array().unwrap().len(), 5);
}

/// When nsys fails half way (here one that starts the run, kills it once
/// it holds its run id, and says why), its message is passed on, the exit
/// is not 0, and nothing is left: no claim, no partial run, no report
/// directory, no run directory.
#[test]
fn a_failing_nsys_leaves_no_claim_and_no_partial_directory() {
    let bin = tempfile::tempdir().unwrap();
    let fake = bin.path().join("nsys");
    // The profiling command follows nsys's last option.
    crate::common::write_executable(
        &fake,
        "#!/bin/sh\n\
         while [ \"$#\" -gt 0 ] && [ \"$1\" != --trace-fork-before-exec=true ]; do shift; done\n\
         shift\n\
         \"$@\" >/dev/null 2>&1 &\n\
         run=$!\n\
         while ! ls -a \"$RUNS\" 2>/dev/null | grep -q '^\\.doomed\\.claim$'; do sleep 0.05; done\n\
         kill -9 \"$run\"\n\
         wait \"$run\"\n\
         echo 'fake nsys: the collection stopped: lost connection to the target' >&2\n\
         exit 1\n",
    );
    let out = tempfile::tempdir().unwrap();
    let runs = runs_of(out.path(), "spin-and-sleep");
    let mut command = profile_cli(&[
        "run",
        "spin-and-sleep",
        "--nsys",
        "--iterations",
        "1000000",
        "--output-dir",
        out.path().to_str().unwrap(),
        "--run-id",
        "doomed",
    ]);
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    command.env("PATH", path).env("RUNS", &runs);
    let output = finish(command, "run --nsys under a failing nsys");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("fake nsys: the collection stopped: lost connection to the target"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: the run under Nsight Systems failed")
            && stderr.contains("nothing of the run was kept"),
        "{stderr}"
    );
    assert_eq!(leftovers(&runs), Vec::<String>::new());
    assert!(!runs.join("doomed").exists());
}

/// Without nsys, `run --nsys` says how to get it and prints the command,
/// and exits 2 having run nothing.
#[test]
fn without_nsys_the_command_is_printed_and_nothing_runs() {
    let empty = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut command = profile_cli(&[
        "run",
        "spin-and-sleep",
        "--nsys",
        "--output-dir",
        out.path().to_str().unwrap(),
        "--run-id",
        "none",
    ]);
    command.env("PATH", empty.path());
    let output = finish(command, "run --nsys without nsys");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("scripts/setup-nsys"), "{stderr}");
    assert!(stderr.contains("nsys profile \\"), "{stderr}");
    assert!(!runs_of(out.path(), "spin-and-sleep").exists());
}

/// The words of a fake nsys that reads `nsys profile`'s options: `$out`
/// is the report's path without its extension, and "$@" the profiling
/// command after them.
const READ_OPTIONS: &str = "out=\n\
     while [ \"$#\" -gt 0 ]; do\n\
       case \"$1\" in\n\
         -o) out=\"$2\"; shift 2 ;;\n\
         --trace-fork-before-exec=true) shift; break ;;\n\
         *) shift ;;\n\
       esac\n\
     done\n";

/// `bin/nsys` in a new directory, a script of `body` after
/// [`READ_OPTIONS`]; the directory to put first on PATH.
fn fake_nsys(body: &str) -> tempfile::TempDir {
    fake_nsys_script(&format!("#!/bin/sh\n{READ_OPTIONS}{body}"))
}

/// `bin/nsys` in a new directory, the script `script`.
fn fake_nsys_script(script: &str) -> tempfile::TempDir {
    let bin = tempfile::tempdir().unwrap();
    crate::common::write_executable(&bin.path().join("nsys"), script);
    bin
}

/// PATH with `bin` first.
fn path_with(bin: &Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// `run spin-and-sleep --nsys` into `out` as run `run_id`, under the fake
/// nsys in `bin`.
fn run_nsys_command(bin: &Path, out: &Path, run_id: &str) -> Command {
    let mut command = profile_cli(&[
        "run",
        "spin-and-sleep",
        "--nsys",
        "--output-dir",
        out.to_str().unwrap(),
        "--run-id",
        run_id,
    ]);
    command.env("PATH", path_with(bin));
    command
}

/// Whether process `pid` still exists.
fn alive(pid: i32) -> bool {
    // SAFETY: kill(2) with signal 0 only checks.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// A process started with its stderr read as it comes; past [`HANG_LIMIT`],
/// or when the test fails first, its process group (and the process whose
/// pid is in the file `also` names) is killed and reading ends.
struct Watched {
    child: std::process::Child,
    stderr: std::io::BufReader<std::process::ChildStderr>,
    seen: String,
    done: std::sync::mpsc::Sender<()>,
}

impl Watched {
    fn start(mut command: Command, also: Option<PathBuf>) -> Watched {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = command.spawn().unwrap();
        let group = child.id() as i32;
        let (done, finished) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            // Past the limit, or a test that failed before the end.
            if finished.recv_timeout(HANG_LIMIT).is_err() {
                // SAFETY: kill(2) on the group this test started, and on
                // the fake nsys it names.
                unsafe { libc::kill(-group, libc::SIGKILL) };
                if let Some(pid) = also
                    .and_then(|file| std::fs::read_to_string(file).ok())
                    .and_then(|pid| pid.trim().parse::<i32>().ok())
                {
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
        });
        let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        Watched {
            child,
            stderr,
            seen: String::new(),
            done,
        }
    }

    /// Reads stderr until a line holds `text`; fails the test if it ends first.
    fn wait_for(&mut self, text: &str) {
        loop {
            let mut line = Vec::new();
            let read = std::io::BufRead::read_until(&mut self.stderr, b'\n', &mut line).unwrap();
            let line = String::from_utf8_lossy(&line);
            self.seen.push_str(&line);
            if line.contains(text) {
                return;
            }
            assert_ne!(read, 0, "stderr ended without `{text}`:\n{}", self.seen);
        }
    }

    /// The process's stderr, to read as it comes.
    fn stream(&mut self) -> &mut impl std::io::Read {
        &mut self.stderr
    }

    /// Reads stderr to its end and waits for the exit: the exit code, or
    /// for a process that died of a signal 128 + the signal (what a shell
    /// says), and what stderr said since the last look.
    fn finish(mut self) -> (Option<i32>, String) {
        use std::os::unix::process::ExitStatusExt;
        let mut rest = Vec::new();
        std::io::Read::read_to_end(&mut self.stderr, &mut rest).unwrap();
        self.seen.push_str(&String::from_utf8_lossy(&rest));
        let status = self.child.wait().unwrap();
        let _ = self.done.send(());
        (
            status.code().or(status.signal().map(|signal| 128 + signal)),
            self.seen,
        )
    }
}

/// A fake nsys that says it captures and waits; on SIGINT, as nsys does,
/// it stops the run (which leaves its manifest, saying it was interrupted),
/// says so and writes its report. It writes its pid to `$PIDFILE`.
const STOPS_ON_SIGINT: &str = "echo $$ > \"$PIDFILE\"\n\
     trap 'echo \"fake nsys: stopping the capture on SIGINT\" >&2; mkdir -p \"$RUN_DIR\" && echo \"status: interrupted\" > \"$RUN_DIR/manifest.yaml\"; echo report > \"$out.nsys-rep\"; exit 0' INT\n\
     echo 'fake nsys: capturing' >&2\n\
     while :; do sleep 0.05; done\n";

/// A signal to `run --nsys` while nsys captures, sent to `target` (the
/// process, or its group as Ctrl-C at a terminal does): nsys hears SIGINT,
/// its output is read to its end, its report is kept beside the run, and
/// the command says it was interrupted with the signal's exit code; nsys
/// is not left running.
fn interrupted_under_fake_nsys(signal: i32, to_group: bool) {
    let bin = fake_nsys(STOPS_ON_SIGINT);
    let out = tempfile::tempdir().unwrap();
    let runs = runs_of(out.path(), "spin-and-sleep");
    let pid_file = bin.path().join("nsys.pid");
    let mut command = run_nsys_command(bin.path(), out.path(), "cut");
    command
        .env("PIDFILE", &pid_file)
        .env("RUN_DIR", runs.join("cut"));
    let mut watched = Watched::start(command, Some(pid_file.clone()));
    watched.wait_for("fake nsys: capturing");
    let target = watched.child.id() as i32;
    // SAFETY: kill(2) on the process (or group) this test started.
    unsafe { libc::kill(if to_group { -target } else { target }, signal) };
    let (code, stderr) = watched.finish();
    let nsys: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let still_running = alive(nsys);
    if still_running {
        // SAFETY: kill(2) on the fake nsys this test started.
        unsafe { libc::kill(nsys, libc::SIGKILL) };
    }
    // Ended by the signal itself (a shell says 128 + it), after nsys.
    assert_eq!(code, Some(128 + signal), "{stderr}");
    assert!(!still_running, "nsys was left running:\n{stderr}");
    assert!(
        stderr.contains("fake nsys: stopping the capture on SIGINT"),
        "{stderr}"
    );
    let name = match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "SIGHUP",
    };
    assert!(
        stderr.contains(&format!("interrupted by {name}")),
        "{stderr}"
    );
    assert!(runs.join("cut/trace.nsys-rep").is_file(), "{stderr}");
    assert_eq!(leftovers(&runs), Vec::<String>::new(), "{stderr}");
}

/// Ctrl-C at a terminal reaches the whole process group: nsys is not
/// killed by a pipe nobody reads any more, it stops on the SIGINT this
/// process passes on, and its report is kept.
#[test]
fn ctrl_c_to_run_nsys_lets_nsys_finish_its_report_which_is_kept() {
    interrupted_under_fake_nsys(libc::SIGINT, true);
}

/// A SIGTERM to `profile-cli` alone reaches nsys as SIGINT: nsys is not
/// orphaned.
#[test]
fn a_sigterm_to_run_nsys_alone_reaches_nsys_as_sigint() {
    interrupted_under_fake_nsys(libc::SIGTERM, false);
}

/// A closed terminal (SIGHUP) does not leave nsys capturing into a pipe
/// nobody reads: it hears SIGINT, and its report is kept.
#[test]
fn a_sighup_to_run_nsys_reaches_nsys_as_sigint() {
    interrupted_under_fake_nsys(libc::SIGHUP, false);
}

/// nsys's output is passed on as it comes: a long stretch without a
/// newline is on stderr while nsys still runs (reading it whole first
/// made 80 MB without a newline take more than 300 s).
#[test]
fn nsys_output_without_a_newline_is_passed_on_as_it_comes() {
    let bin = fake_nsys(
        "head -c 1000000 /dev/zero | tr '\\0' x >&2\n\
         while [ ! -e \"$RELEASE\" ]; do sleep 0.05; done\n\
         exit 0\n",
    );
    let out = tempfile::tempdir().unwrap();
    let release = bin.path().join("release");
    let mut command = run_nsys_command(bin.path(), out.path(), "long");
    command.env("RELEASE", &release);
    let mut watched = Watched::start(command, None);
    // Read as lines: the million x's end their line only when nsys has
    // ended, and the fake ends only once the test saw them.
    let mut partial = Vec::new();
    let stderr = watched.stream();
    while partial.iter().filter(|&&b| b == b'x').count() < 1_000_000 {
        let mut chunk = [0u8; 65536];
        let read = std::io::Read::read(stderr, &mut chunk).unwrap();
        assert_ne!(
            read,
            0,
            "stderr ended:\n{}",
            String::from_utf8_lossy(&partial)
        );
        partial.extend_from_slice(&chunk[..read]);
    }
    std::fs::write(&release, "").unwrap();
    let (code, rest) = watched.finish();
    let stderr = format!("{}{rest}", String::from_utf8_lossy(&partial));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.lines().any(|line| line == "x".repeat(1_000_000)),
        "the million x's on a line of their own"
    );
    assert!(stderr.contains("nsys ended without writing"), "{stderr}");
}

/// `run --nsys` waits for nsys, not for the pipe to close: a process nsys
/// left behind that holds its output open does not keep the command.
#[test]
fn run_nsys_ends_when_nsys_does_while_a_process_it_started_holds_the_pipe() {
    // The helper also ends once the test's directory is gone: a release
    // written and removed with it between two of its looks would
    // otherwise leave it running after the test.
    let bin = fake_nsys(
        "(while [ ! -e \"$RELEASE\" ] && [ -d \"$(dirname \"$RELEASE\")\" ]; do sleep 0.05; done) &\n\
         echo 'fake nsys: done, a helper left running'\n\
         exit 0\n",
    );
    let out = tempfile::tempdir().unwrap();
    let release = bin.path().join("release");
    let mut command = run_nsys_command(bin.path(), out.path(), "held");
    command.env("RELEASE", &release);
    let output = finish(command, "run --nsys beside a process holding the pipe");
    std::fs::write(&release, "").unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("fake nsys: done, a helper left running"),
        "{stderr}"
    );
    assert!(stderr.contains("nsys ended without writing"), "{stderr}");
    assert_eq!(
        leftovers(&runs_of(out.path(), "spin-and-sleep")),
        Vec::<String>::new()
    );
}

/// An export of one pass holding `step`, as `nsys export` would write it.
fn write_export(path: &Path) {
    let db = rusqlite::Connection::open(path).unwrap();
    db.execute_batch(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT, globalTid INTEGER, textId INTEGER);",
    )
    .unwrap();
    let tid = (42i64 << 24) | 3;
    for (start, end, text) in [
        (0, 1_000, "profile-target"),
        (0, 1_000, "iteration 0"),
        (100, 600, "step"),
    ] {
        db.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?1, ?2, 59, ?3, ?4)",
            rusqlite::params![start, end, text, tid],
        )
        .unwrap();
    }
}

/// A run that writes no manifest (`write_manifest: false`) under nsys:
/// Nsight's report is kept in a run directory made for it and analyzed
/// there, not left in the hidden report directory.
#[test]
fn a_run_without_a_manifest_keeps_nsights_report_in_its_run_directory() {
    let bin = fake_nsys_script(&format!(
        "#!/bin/sh\n\
         if [ \"$1\" = export ]; then\n\
           while [ \"$#\" -gt 0 ] && [ \"$1\" != --output ]; do shift; done\n\
           cp \"$EXPORT\" \"$2\"; exit 0\n\
         fi\n\
         {READ_OPTIONS}\
         \"$@\" || exit $?\n\
         echo report > \"$out.nsys-rep\"\n"
    ));
    let out = tempfile::tempdir().unwrap();
    let export = bin.path().join("fixture.sqlite");
    write_export(&export);
    let config = out.path().join("quiet.yaml");
    std::fs::write(
        &config,
        "target: {name: spin-and-sleep}\nwrite_manifest: false\nwarmup: 0\niterations: 1\n",
    )
    .unwrap();
    let mut command = profile_cli(&[
        "run",
        "--config",
        config.to_str().unwrap(),
        "--nsys",
        "--output-dir",
        out.path().to_str().unwrap(),
        "--run-id",
        "quiet",
    ]);
    command
        .env("PATH", path_with(bin.path()))
        .env("EXPORT", &export);
    let output = finish(command, "run --nsys without a manifest");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("no such file"), "{stderr}");
    assert!(stdout.contains("capture `profile-target`"), "{stdout}");
    let runs = runs_of(out.path(), "spin-and-sleep");
    assert!(runs.join("quiet/trace.nsys-rep").is_file(), "{stderr}");
    assert!(!runs.join("quiet/manifest.yaml").exists());
    assert_eq!(leftovers(&runs), Vec::<String>::new(), "{stderr}");
}

/// `runs clean` puts right the report directories of runs under nsys that
/// stopped: a report whose run is whole goes into it, one without a run is
/// removed, and one a live `run --nsys` holds is left alone.
#[test]
fn runs_clean_keeps_or_removes_the_report_directories_runs_under_nsys_left() {
    let out = tempfile::tempdir().unwrap();
    let runs = runs_of(out.path(), "spin-and-sleep");
    for id in ["whole", "gone", "live"] {
        std::fs::create_dir_all(runs.join(format!(".{id}.nsys"))).unwrap();
        std::fs::write(runs.join(format!(".{id}.nsys/trace.nsys-rep")), id).unwrap();
    }
    std::fs::create_dir_all(runs.join("whole")).unwrap();
    std::fs::write(runs.join("whole/manifest.yaml"), "status: interrupted\n").unwrap();
    let held = profiling_core::driver::nsys::ReportDirLock::try_take(&runs.join(".live.nsys"))
        .unwrap()
        .unwrap();
    let output = finish(
        profile_cli(&[
            "runs",
            "clean",
            "--output-dir",
            out.path().to_str().unwrap(),
        ]),
        "runs clean",
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(runs.join("whole/trace.nsys-rep")).unwrap(),
        "whole",
        "{stdout}"
    );
    assert_eq!(leftovers(&runs), [".live.nsys"], "{stdout}");
    assert!(stdout.contains("left alone"), "{stdout}");
    drop(held);
}
