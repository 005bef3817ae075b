//! Ctrl-C and SIGTERM end a run with a manifest that says so, and the
//! conventional exit code; a second Ctrl-C ends it at once.
//!
//! Each scenario runs `profile-cli` in a child process (this test binary,
//! re-run), on a target whose calls sleep, so when a signal lands is known.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
        std::thread::sleep(Duration::from_secs(5));
        Ok(())
    }
}

const CHILD: &str = "PROFILE_CLI_SIGNALS_CHILD_OUTPUT";
const CHILD_TARGET: &str = "PROFILE_CLI_SIGNALS_CHILD_TARGET";

/// In the child: the program, as `profile-cli` runs it.
#[test]
fn child_process() {
    let Some(output) = std::env::var_os(CHILD) else {
        return;
    };
    profiling_core::interrupt::install_handlers().unwrap();
    let target = std::env::var(CHILD_TARGET).unwrap();
    let args = [
        "profile-cli",
        "run",
        &target,
        "--warmup",
        "0",
        "--iterations",
        "50",
        "--run-id",
        "sig",
        "--output-dir",
    ];
    let mut argv: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
    argv.push(output);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut stdout = std::io::stdout();
    let mut stderr = std::io::stderr();
    let code = profiling_cli::main_with(argv, root, &mut stdout, &mut stderr);
    std::process::exit(i32::from(code));
}

/// Starts the child and waits until it is running the target.
fn start(output: &Path) -> Child {
    start_target(output, "signal-sleeper", Duration::from_millis(800))
}

fn start_target(output: &Path, target: &str, settle: Duration) -> Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_process",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, output)
        .env(CHILD_TARGET, target)
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
    // Keep draining so the child never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    // Into the measured passes.
    std::thread::sleep(settle);
    child
}

fn signal(child: &Child, signal: i32) {
    // SAFETY: sends a signal to our own child process.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
}

fn manifest(output: &Path) -> serde_yaml::Value {
    let path = output.join("signal-sleeper/runs/sig/manifest.yaml");
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn ctrl_c_finishes_the_call_writes_the_manifest_and_exits_130() {
    let output = tempfile::tempdir().unwrap();
    let mut child = start(output.path());
    signal(&child, libc::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
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
}

#[test]
fn sigterm_exits_143_with_the_manifest() {
    let output = tempfile::tempdir().unwrap();
    let mut child = start(output.path());
    signal(&child, libc::SIGTERM);
    assert_eq!(child.wait().unwrap().code(), Some(143));
    assert_eq!(manifest(output.path())["interrupted_by"], "SIGTERM");
}

#[test]
fn a_second_ctrl_c_exits_at_once() {
    let output = tempfile::tempdir().unwrap();
    let mut child = start_target(
        output.path(),
        "signal-long-sleeper",
        Duration::from_millis(300),
    );
    signal(&child, libc::SIGINT);
    // Two identical signals pending at once are delivered as one: let the
    // first land before sending the second.
    std::thread::sleep(Duration::from_millis(100));
    signal(&child, libc::SIGINT);
    let sent = Instant::now();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    // Without waiting for the 5 s call in progress, nor writing anything.
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "{:?}",
        sent.elapsed()
    );
    assert!(!output.path().join("signal-long-sleeper/runs/sig").exists());
}
