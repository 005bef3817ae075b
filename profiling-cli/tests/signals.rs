//! Ctrl-C and SIGTERM end a run with a manifest that says so, and the
//! conventional exit code; a second Ctrl-C ends it at once.
//!
//! Each scenario signals a real process: the `profile-cli` binary itself on
//! a long run of a built-in target, or this test binary, whose `main` is the
//! program's (`run_main`, handlers and all) with targets whose calls sleep
//! and say on stdout when each call starts, so when a signal lands is known
//! however late the scheduler runs the child. Run without arguments, it
//! runs the scenarios; with the child variable set, it is the program.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::Duration;

use profiling_core::prelude::*;

/// Sleeps 300 ms in every call.
#[derive(Default)]
struct Sleeper;

#[profile_target(name = "signal-sleeper")]
impl ProfileTarget for Sleeper {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        println!("{CALL_STARTED}");
        let _range = profiling_range("sleep");
        std::thread::sleep(Duration::from_millis(300));
        Ok(())
    }
}

/// Sleeps 5 s in every call: a signal never lands near a call's end.
#[derive(Default)]
struct LongSleeper;

#[profile_target(name = "signal-long-sleeper")]
impl ProfileTarget for LongSleeper {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        println!("{CALL_STARTED}");
        std::thread::sleep(Duration::from_secs(5));
        Ok(())
    }
}

/// Says on stdout when each call ends, at once.
#[derive(Default)]
struct SaysDone;

#[profile_target(name = "signal-says-done")]
impl ProfileTarget for SaysDone {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        println!("{CALL_ENDED}");
        Ok(())
    }
}

/// What `signal-says-done` prints as each call ends.
const CALL_ENDED: &str = "signals: a call ended";

/// Takes 10 s to build (its factory sleeps): a signal lands while the run
/// sets up, outside the passes.
struct SlowToBuild;

fn build_slowly() -> anyhow::Result<SlowToBuild> {
    println!("{BUILDING}");
    std::thread::sleep(Duration::from_secs(10));
    Ok(SlowToBuild)
}

#[profile_target(name = "signal-slow-factory", factory = build_slowly)]
impl ProfileTarget for SlowToBuild {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        Ok(())
    }
}

/// What the slow factory prints as it starts.
const BUILDING: &str = "signals: building the target";

/// Set in the child: it is the program.
const CHILD: &str = "PROFILE_CLI_SIGNALS_CHILD";

/// What the sleepers print as each call starts (stdout is line-buffered).
const CALL_STARTED: &str = "signals: a call started";

fn main() -> ExitCode {
    if std::env::var_os(CHILD).is_some() {
        return profiling_cli::run_main();
    }
    ctrl_c_finishes_the_call_writes_the_manifest_and_exits_130();
    sigterm_exits_143_with_the_manifest();
    a_second_ctrl_c_exits_at_once();
    a_sigterm_after_ctrl_c_exits_at_once_with_143();
    the_real_binary_stops_a_run_on_ctrl_c_with_its_manifest();
    a_sweep_stops_after_its_current_point_on_ctrl_c_and_resumes();
    a_first_signal_outside_the_passes_ends_the_command_at_once();
    a_first_signal_while_a_run_sets_up_ends_it_with_nothing_written();
    an_interrupted_ab_keeps_the_earlier_pair_and_exits_130();
    two_ctrl_cs_on_a_new_ab_id_leave_nothing_under_it();
    ctrl_c_ends_a_load_with_what_it_measured_and_exits_130();
    sigterm_ends_a_load_waiting_for_a_send_far_ahead();
    sigterm_ends_a_load_in_a_long_warmup();
    ctrl_c_in_a_shell_loop_stops_the_loop();
    println!("signals: 14 checks passed");
    ExitCode::SUCCESS
}

/// Ctrl-C in a shell loop around the command stops the loop, as it would
/// around `make` or `cargo`: the terminal sends SIGINT to the foreground
/// process group; the command finishes its call, writes its interrupted
/// manifest, then dies of the signal, and bash, which waited for it, ends
/// too instead of starting the next turn.
fn ctrl_c_in_a_shell_loop_stops_the_loop() {
    use std::os::unix::process::CommandExt;
    let output = tempfile::tempdir().unwrap();
    let script = r#"for turn in 1 2 3; do "$0" run signal-sleeper --warmup 0 --iterations 50 --run-id "sig-$turn" --output-dir "$1"; echo "after $turn"; done"#;
    let mut shell = Command::new("bash");
    shell
        .args(["-c", script])
        .arg(std::env::current_exe().unwrap())
        .arg(output.path())
        .env(CHILD, "1")
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // A terminal's foreground job takes SIGINT as the default says. A
    // shell that starts with it ignored (as everything a non-interactive
    // shell runs with `&` does) can never take it back, and would run the
    // loop on whatever the command does.
    // SAFETY: signal(2) between fork and exec, nothing else.
    unsafe {
        shell.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut shell = shell.spawn().unwrap();
    let mut lines = BufReader::new(shell.stdout.take().unwrap()).lines();
    let running = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|line| line.contains("running `signal-sleeper`"));
    assert!(running, "the first turn started its run");
    wait_for_calls(&mut lines, 2);
    // SAFETY: kill(2) on the process group this test started, as a
    // terminal's Ctrl-C reaches its foreground job.
    let sent = unsafe { libc::kill(-(shell.id() as libc::pid_t), libc::SIGINT) };
    assert_eq!(sent, 0);
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = shell.wait().unwrap();
    assert!(
        !rest.iter().any(|line| line.starts_with("after")),
        "the loop went on: {rest:?}"
    );
    assert_eq!(status.signal(), Some(libc::SIGINT), "{rest:?}");
    let first = output
        .path()
        .join("signal-sleeper/runs/sig-1/manifest.yaml");
    let manifest: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(first).unwrap()).unwrap();
    assert_eq!(manifest["status"], "interrupted");
    assert!(!output.path().join("signal-sleeper/runs/sig-2").exists());
}

/// Starts the child and waits until its second call has started: its first
/// measured pass is complete.
fn start(output: &Path) -> Child {
    let (child, mut lines) = start_target(output, "signal-sleeper");
    wait_for_calls(&mut lines, 2);
    drain(lines);
    child
}

type Lines = std::io::Lines<BufReader<std::process::ChildStdout>>;

fn start_target(output: &Path, target: &str) -> (Child, Lines) {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.env(CHILD, "1");
    start_command(command, output, target, "50")
}

/// Runs `command` as `profile-cli run TARGET` with `iterations` measured
/// passes into `output`, and waits until it says it runs the target; its
/// stdout from there.
fn start_command(
    mut command: Command,
    output: &Path,
    target: &str,
    iterations: &str,
) -> (Child, Lines) {
    let mut child = command
        .args(["run", target, "--warmup", "0", "--iterations", iterations])
        .args(["--run-id", "sig", "--output-dir"])
        .arg(output)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let running = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|line| line.contains(&format!("running `{target}`")));
    assert!(running, "the child started the run");
    (child, lines)
}

/// Reads the child's stdout until `calls` more calls have started.
fn wait_for_calls(lines: &mut Lines, calls: usize) {
    for _ in 0..calls {
        let started = lines
            .by_ref()
            .map_while(Result::ok)
            .any(|line| line == CALL_STARTED);
        assert!(started, "the child started a call");
    }
}

/// Keeps draining the child's stdout so that it never blocks on a full pipe.
fn drain(lines: Lines) {
    std::thread::spawn(move || lines.for_each(drop));
}

/// Waits until no `signal` sent to the child is pending: a thread of the
/// child has taken it, and its handler runs. Two identical signals pending
/// at once are delivered as one, so a second one waits for this.
fn wait_until_delivered(child: &Child, signal: i32) {
    let bit = 1u64 << (signal - 1);
    let status = format!("/proc/{}/status", child.id());
    loop {
        let Ok(text) = std::fs::read_to_string(&status) else {
            return; // the child is gone: nothing is pending
        };
        let pending = text
            .lines()
            .filter(|l| l.starts_with("ShdPnd:") || l.starts_with("SigPnd:"))
            .filter_map(|l| u64::from_str_radix(l.split_whitespace().nth(1)?, 16).ok())
            .any(|mask| mask & bit != 0);
        if !pending {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn signal(child: &Child, signal: i32) {
    // SAFETY: sends a signal to our own child process.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
}

fn manifest(output: &Path) -> serde_yaml::Value {
    manifest_of(output, "signal-sleeper")
}

fn manifest_of(output: &Path, target: &str) -> serde_yaml::Value {
    let path = output.join(target).join("runs/sig/manifest.yaml");
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn ctrl_c_finishes_the_call_writes_the_manifest_and_exits_130() {
    let output = tempfile::tempdir().unwrap();
    let mut child = start(output.path());
    signal(&child, libc::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGINT));
    let manifest = manifest(output.path());
    assert_eq!(manifest["status"], "interrupted");
    assert_eq!(manifest["interrupted_by"], "SIGINT");
    let completed = manifest["completed_iterations"].as_u64().unwrap();
    assert!((1..50).contains(&completed), "{completed}");
    assert_eq!(
        manifest["timings"]["iterations"]["count"].as_u64(),
        Some(completed)
    );
    // The call in progress finished: every call started is a sample.
    assert_eq!(
        manifest["timings"]["runs"]["count"],
        manifest["calls"]["run"]
    );
    assert_eq!(
        manifest["timings"]["ranges"][0]["count"],
        manifest["calls"]["run"]
    );
    // Its samples are kept for comparisons: the completed passes, every call.
    let run =
        profiling_compare::runs::load(&output.path().join("signal-sleeper/runs/sig")).unwrap();
    assert_eq!(run.status, profiling_compare::runs::RunStatus::Interrupted);
    assert_eq!(run.samples.passes.count, completed);
    assert_eq!(
        Some(run.samples.calls.count),
        manifest["calls"]["run"].as_u64()
    );
}

fn sigterm_exits_143_with_the_manifest() {
    let output = tempfile::tempdir().unwrap();
    let mut child = start(output.path());
    signal(&child, libc::SIGTERM);
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGTERM));
    assert_eq!(manifest(output.path())["interrupted_by"], "SIGTERM");
}

fn a_second_ctrl_c_exits_at_once() {
    a_second_signal_exits_at_once(libc::SIGINT, 130);
}

/// The second signal's own number makes the exit code.
fn a_sigterm_after_ctrl_c_exits_at_once_with_143() {
    a_second_signal_exits_at_once(libc::SIGTERM, 143);
}

/// Ctrl-C, then `second`: the process dies of `second` at once (a shell
/// says `code`).
fn a_second_signal_exits_at_once(second: i32, code: i32) {
    let output = tempfile::tempdir().unwrap();
    let (mut child, mut lines) = start_target(output.path(), "signal-long-sleeper");
    // Inside the 5 s call.
    wait_for_calls(&mut lines, 1);
    drain(lines);
    signal(&child, libc::SIGINT);
    wait_until_delivered(&child, libc::SIGINT);
    signal(&child, second);
    let status = child.wait().unwrap();
    assert_eq!((status.signal(), 128 + second), (Some(second), code));
    // Without waiting for the 5 s call in progress: a run that waited for it
    // would have written its interrupted manifest.
    assert!(!output.path().join("signal-long-sleeper/runs/sig").exists());
}

/// The real binary, signalled wherever it is: in its passes, it finishes
/// the call and writes an interrupted manifest; before them (this binary
/// says nothing between passes to wait for), it ends at once and writes
/// nothing. Either way exit 130, and never a partial run directory.
fn the_real_binary_stops_a_run_on_ctrl_c_with_its_manifest() {
    let output = tempfile::tempdir().unwrap();
    let command = Command::new(env!("CARGO_BIN_EXE_profile-cli"));
    // A hundred thousand passes of a millisecond or more: far from done
    // when the signal lands.
    let (mut child, lines) =
        start_command(command, output.path(), "detection-postprocess", "100000");
    drain(lines);
    std::thread::sleep(Duration::from_millis(800));
    signal(&child, libc::SIGINT);
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGINT));
    let runs = output.path().join("detection-postprocess/runs");
    if !runs.join("sig").exists() {
        // Stopped before the passes: nothing of the run but its lock file.
        let left: Vec<String> = std::fs::read_dir(&runs)
            .map(|entries| {
                entries
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        assert!(left.iter().all(|f| f == ".sig.claim"), "{left:?}");
        return;
    }
    let manifest = manifest_of(output.path(), "detection-postprocess");
    assert_eq!(manifest["status"], "interrupted");
    assert_eq!(manifest["interrupted_by"], "SIGINT");
    let completed = manifest["completed_iterations"].as_u64().unwrap();
    assert!(completed < 100_000, "{completed}");
    let counted = manifest["timings"]["iterations"]["count"].as_u64();
    assert_eq!(counted, (completed > 0).then_some(completed));
}

/// The statuses of a sweep's points, from its sweep.yaml.
fn sweep_statuses(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("sweep.yaml")).unwrap();
    let document: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    document["points"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| p["status"].as_str().unwrap().to_owned())
        .collect()
}

/// Ctrl-C in a sweep lets the point running finish, whole, then stops
/// (130); `--resume` runs the rest, and no point runs twice.
fn a_sweep_stops_after_its_current_point_on_ctrl_c_and_resumes() {
    let output = tempfile::tempdir().unwrap();
    let sweep = |extra: &[&str]| {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .env(CHILD, "1")
            .args(["sweep", "signal-sleeper", "--output-dir"])
            .arg(output.path())
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        command
    };
    let mut child = sweep(&[
        "--set",
        "iterations=2,3,4,5",
        "--set",
        "warmup=0",
        "--sweep-id",
        "sw",
    ])
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first_done = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|line| line.starts_with("[1/4]"));
    assert!(first_done, "the first point ended");
    // Into the second point's first call (300 ms each).
    wait_for_calls(&mut lines, 1);
    drain(lines);
    signal(&child, libc::SIGINT);
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGINT));
    let dir = output.path().join("signal-sleeper/runs/sw");
    assert_eq!(
        sweep_statuses(&dir),
        ["completed", "completed", "pending", "pending"]
    );
    // The point that ran when Ctrl-C came is whole.
    let second = dir.join("01-iterations-3-warmup-0/manifest.yaml");
    let second: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&second).unwrap()).unwrap();
    assert_eq!(second["status"], "completed");
    assert_eq!(second["completed_iterations"], 3);
    let started_at = second["started_at"].clone();

    let resumed = sweep(&["--resume", "sw"]).output().unwrap();
    assert_eq!(resumed.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&resumed.stdout).contains("2 left to run"));
    assert_eq!(sweep_statuses(&dir), ["completed"; 4]);
    let second = dir.join("01-iterations-3-warmup-0/manifest.yaml");
    let second: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&second).unwrap()).unwrap();
    assert_eq!(
        second["started_at"], started_at,
        "the second point ran again"
    );
}

/// Waits until the child has installed its handlers for SIGINT and SIGTERM
/// (its caught-signal mask says so), however late it gets there.
fn wait_for_handlers(child: &Child) {
    let wanted = (1u64 << (libc::SIGINT - 1)) | (1u64 << (libc::SIGTERM - 1));
    let status = format!("/proc/{}/status", child.id());
    loop {
        let caught = std::fs::read_to_string(&status)
            .ok()
            .and_then(|text| {
                let line = text.lines().find(|l| l.starts_with("SigCgt:"))?.to_owned();
                u64::from_str_radix(line.split_whitespace().nth(1)?, 16).ok()
            })
            .unwrap_or(0);
        if caught & wanted == wanted {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Outside the measured passes (here a comparison of fifty million
/// bootstrap resamples a row: seconds of work), the first SIGINT or SIGTERM
/// ends the command at once with its code, printing nothing more. Each run
/// has enough passes for a verdict: with fewer, no interval is resampled,
/// the comparison takes milliseconds and may well end before the signal.
fn a_first_signal_outside_the_passes_ends_the_command_at_once() {
    let output = tempfile::tempdir().unwrap();
    let passes = profiling_compare::MIN_SAMPLES.to_string();
    for id in ["a", "b"] {
        let made = Command::new(std::env::current_exe().unwrap())
            .env(CHILD, "1")
            .args(["run", "signal-sleeper", "--warmup", "0", "--iterations"])
            .arg(&passes)
            .args(["--run-id", id, "--output-dir"])
            .arg(output.path())
            .output()
            .unwrap();
        assert!(
            made.status.success(),
            "{}",
            String::from_utf8_lossy(&made.stderr)
        );
    }
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let child = Command::new(std::env::current_exe().unwrap())
            .env(CHILD, "1")
            .args(["compare", "signal-sleeper@a", "signal-sleeper@b"])
            .args(["--resamples", "50000000", "--output-dir"])
            .arg(output.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_handlers(&child);
        self::signal(&child, signal);
        let finished = child.wait_with_output().unwrap();
        assert_eq!(
            (finished.status.signal(), 128 + signal),
            (Some(signal), code)
        );
        assert!(
            finished.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&finished.stdout)
        );
    }
}

/// While a run sets up (its target being built, before any pass), the
/// first SIGINT or SIGTERM ends it at once with its code: no run directory,
/// no manifest, no partial file.
fn a_first_signal_while_a_run_sets_up_ends_it_with_nothing_written() {
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let output = tempfile::tempdir().unwrap();
        let mut command = Command::new(std::env::current_exe().unwrap());
        command.env(CHILD, "1");
        let (mut child, mut lines) =
            start_command(command, output.path(), "signal-slow-factory", "2");
        let building = lines
            .by_ref()
            .map_while(Result::ok)
            .any(|line| line.contains(BUILDING));
        assert!(building, "the child started building its target");
        wait_for_handlers(&child);
        self::signal(&child, signal);
        drain(lines);
        let status = child.wait().unwrap();
        assert_eq!((status.signal(), 128 + signal), (Some(signal), code));
        let runs = output.path().join("signal-slow-factory/runs");
        assert!(!runs.join("sig").exists(), "no run directory");
        let left: Vec<String> = std::fs::read_dir(&runs)
            .map(|entries| {
                entries
                    .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                    .filter(|name| !name.ends_with(".claim"))
                    .collect()
            })
            .unwrap_or_default();
        assert!(left.is_empty(), "left in runs/: {left:?}");
    }
}

/// `ab signal-sleeper signal-sleeper` into `output` with `id`, `passes`
/// measured passes a side, and `extra` arguments.
fn ab_command(output: &Path, id: &str, passes: &str, extra: &[&str]) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .env(CHILD, "1")
        .args(["ab", "signal-sleeper", "signal-sleeper", "--warmup", "0"])
        .args(["--iterations", passes, "--block-passes", "1", "--no-report"])
        .args(["--ab-id", id])
        .args(extra)
        .arg("--output-dir")
        .arg(output);
    command
}

/// Starts an `ab` and waits until `calls` of its calls have started.
fn start_ab(mut command: Command, calls: usize) -> Child {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    wait_for_calls(&mut lines, calls);
    drain(lines);
    child
}

/// `runs clean --output-dir OUTPUT`, run to its end.
fn runs_clean(output: &Path) -> std::process::Output {
    Command::new(std::env::current_exe().unwrap())
        .env(CHILD, "1")
        .args(["runs", "clean", "--output-dir"])
        .arg(output)
        .output()
        .unwrap()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// An `ab --force` over a complete pair, stopped by one Ctrl-C or by two,
/// exits 130 and leaves the complete pair as it was: a pair lands whole
/// or not at all. What two Ctrl-Cs leave beside it, `runs clean` removes.
fn an_interrupted_ab_keeps_the_earlier_pair_and_exits_130() {
    let output = tempfile::tempdir().unwrap();
    let runs = output.path().join("signal-sleeper/runs");
    let made = ab_command(output.path(), "keep", "2", &[])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let pair = runs.join("keep");
    let paired = std::fs::read(pair.join("paired.json")).unwrap();
    assert_eq!(names(&pair), ["base", "candidate", "paired.json"]);
    assert_eq!(names(&runs), ["keep"]);

    for twice in [false, true] {
        let mut child = start_ab(ab_command(output.path(), "keep", "50", &["--force"]), 2);
        signal(&child, libc::SIGINT);
        if twice {
            wait_until_delivered(&child, libc::SIGINT);
            signal(&child, libc::SIGINT);
        }
        assert_eq!(
            child.wait().unwrap().signal(),
            Some(libc::SIGINT),
            "twice: {twice}"
        );
        assert_eq!(
            std::fs::read(pair.join("paired.json")).unwrap(),
            paired,
            "the earlier pair is as it was (twice: {twice})"
        );
        assert_eq!(names(&pair), ["base", "candidate", "paired.json"]);
        let base: serde_yaml::Value = serde_yaml::from_str(
            &std::fs::read_to_string(pair.join("base/manifest.yaml")).unwrap(),
        )
        .unwrap();
        assert_eq!(base["status"], "completed");
        assert_eq!(base["completed_iterations"], 2);
        if !twice {
            assert_eq!(
                names(&runs),
                ["keep"],
                "one Ctrl-C leaves nothing beside it"
            );
        }
    }
    let cleaned = runs_clean(output.path());
    assert!(cleaned.status.success());
    assert_eq!(names(&runs), ["keep"]);
    assert_eq!(std::fs::read(pair.join("paired.json")).unwrap(), paired);
}

/// Two Ctrl-Cs on an `ab` with a new id: nothing appears under the id,
/// and what is left beside it is `runs clean`'s to remove; the id is free
/// for the next `ab`, without --force.
fn two_ctrl_cs_on_a_new_ab_id_leave_nothing_under_it() {
    let output = tempfile::tempdir().unwrap();
    let runs = output.path().join("signal-sleeper/runs");
    let mut child = start_ab(ab_command(output.path(), "fresh", "50", &[]), 3);
    signal(&child, libc::SIGINT);
    wait_until_delivered(&child, libc::SIGINT);
    signal(&child, libc::SIGINT);
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGINT));
    assert!(!runs.join("fresh").exists(), "{:?}", names(&runs));
    let left = names(&runs);
    assert!(
        left.iter().all(|name| name.starts_with(".fresh.")),
        "{left:?}"
    );
    let cleaned = runs_clean(output.path());
    assert!(cleaned.status.success());
    let said = String::from_utf8_lossy(&cleaned.stdout);
    assert_eq!(names(&runs).len(), 0, "{said}: runs clean removed {left:?}");
    let again = ab_command(output.path(), "fresh", "2", &[])
        .output()
        .unwrap();
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(
        names(&runs.join("fresh")),
        ["base", "candidate", "paired.json"]
    );
}

/// Ctrl-C during `load` ends it after the queries in progress: the record
/// is written with what completed, marked interrupted, and the exit code
/// is 130.
fn ctrl_c_ends_a_load_with_what_it_measured_and_exits_130() {
    let output = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, "1")
        .args([
            "load",
            "signal-sleeper",
            "--duration",
            "10m",
            "--warmup",
            "0",
        ])
        .args(["--run-id", "sig", "--no-report", "--output-dir"])
        .arg(output.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    wait_for_calls(&mut lines, 3);
    drain(lines);
    signal(&child, libc::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGINT));
    let path = output.path().join("signal-sleeper/runs/sig/load.yaml");
    let record: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(record["status"], "interrupted");
    assert_eq!(record["interrupted_by"], "SIGINT");
    let step = &record["load"]["steps"][0];
    assert_eq!(step["stopped"], true);
    // The two calls that completed before the signal, and the one it
    // landed in, finished.
    assert!(step["queries"].as_u64().unwrap() >= 2, "{step:?}");
}

/// Starts `load TARGET EXTRA` as a child into `output` (run id `sig`),
/// and waits until it has printed `line` `times` times.
fn start_load(output: &Path, target: &str, extra: &[&str], line: &str, times: usize) -> Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, "1")
        .args(["load", target])
        .args(extra)
        .args(["--run-id", "sig", "--no-report", "--output-dir"])
        .arg(output)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for _ in 0..times {
        let said = lines.by_ref().map_while(Result::ok).any(|l| l == line);
        assert!(said, "the child said `{line}`");
    }
    drain(lines);
    child
}

/// The load's record, and the files left beside its directory.
fn load_record(output: &Path, target: &str) -> (serde_yaml::Value, Vec<String>) {
    let runs = output.join(target).join("runs");
    let record =
        serde_yaml::from_str(&std::fs::read_to_string(runs.join("sig/load.yaml")).unwrap())
            .unwrap();
    let mut left: Vec<String> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    (record, left)
}

/// A query a thousand seconds away: the first SIGTERM ends the wait for
/// it, and the load is recorded as interrupted with the query it served
/// (once, the wait ignored every signal but a second one, which left no
/// record and its claim).
fn sigterm_ends_a_load_waiting_for_a_send_far_ahead() {
    let output = tempfile::tempdir().unwrap();
    let args = [
        "--qps",
        "0.001",
        "--arrival",
        "constant",
        "--queries",
        "3",
        "--warmup",
        "0",
    ];
    // The first query, sent at once, has ended: the next is 1,000 s away.
    let mut child = start_load(output.path(), "signal-says-done", &args, CALL_ENDED, 1);
    signal(&child, libc::SIGTERM);
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGTERM));
    let (record, left) = load_record(output.path(), "signal-says-done");
    assert_eq!(record["status"], "interrupted");
    assert_eq!(record["interrupted_by"], "SIGTERM");
    let step = &record["load"]["steps"][0];
    assert_eq!(step["stopped"], true);
    assert_eq!(step["queries"], 1, "{step:?}");
    assert_eq!(left, ["sig"], "no claim or staging left");
}

/// A warmup of a billion queries: the first SIGTERM ends it, and the
/// record says the load was interrupted before it measured anything.
fn sigterm_ends_a_load_in_a_long_warmup() {
    let output = tempfile::tempdir().unwrap();
    let args = ["--queries", "5", "--warmup", "1000000000"];
    let mut child = start_load(output.path(), "signal-sleeper", &args, CALL_STARTED, 2);
    signal(&child, libc::SIGTERM);
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGTERM));
    let (record, left) = load_record(output.path(), "signal-sleeper");
    assert_eq!(record["status"], "interrupted");
    let step = &record["load"]["steps"][0];
    assert_eq!(step["stopped"], true);
    assert_eq!(step["queries"], 0, "{step:?}");
    assert_eq!(left, ["sig"], "no claim or staging left");
}
