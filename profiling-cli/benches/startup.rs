//! What an invocation of `profile-cli` costs before and around any work of
//! a target's own, from exec to exit.
//!
//! `cargo bench -p profiling-cli --bench startup`
//!
//! This bench's binary is also a `profile-cli` (run with
//! `PROFILE_CLI_STARTUP_CHILD` set): the same program, with one target of
//! its own, `startup-empty`, whose `prepare` and `run` do nothing. A
//! one-pass run of it is the tool's own start-up: loading, the config, the
//! clock's calibration, the repository's state, the run directory,
//! manifest, samples and trace.

use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use profiling_core::prelude::*;

/// Set in the child: it is the program.
const CHILD: &str = "PROFILE_CLI_STARTUP_CHILD";

/// Nothing to prepare, nothing to run.
#[derive(Debug, Default)]
struct Empty;

#[profile_target(name = "startup-empty")]
impl ProfileTarget for Empty {
    type Prepared = ();
    type Output = ();

    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }

    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        Ok(())
    }
}

fn main() -> ExitCode {
    if std::env::var_os(CHILD).is_some() {
        return profiling_cli::run_main();
    }
    divan::main();
    ExitCode::SUCCESS
}

#[divan::bench(sample_count = 30)]
fn profile_cli_list() {
    let status = Command::new(env!("CARGO_BIN_EXE_profile-cli"))
        .arg("list")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}

/// Which program a one-pass run starts, and on which target.
#[derive(Debug, Clone, Copy)]
enum OnePass {
    /// This binary on `startup-empty`: the tool alone.
    Empty,
    /// `profile-cli` on `letterbox-preprocess`: a first call that writes a
    /// 640x640 tensor for the first time, and its config's warmup pass.
    Letterbox,
}

/// A one-pass run on one dummy record, from exec to exit (the manifest,
/// samples and trace written; no page), with `git` on `PATH` and without:
/// the difference is what the repository's state (`git_commit`,
/// `git_dirty`) costs.
#[divan::bench(sample_count = 30, args = [(OnePass::Empty, true), (OnePass::Empty, false), (OnePass::Letterbox, true), (OnePass::Letterbox, false)])]
fn one_pass_dummy_run(bencher: divan::Bencher, (target, with_git): (OnePass, bool)) {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let out = tempfile::tempdir().unwrap();
    bencher.bench_local(|| {
        let run = RUNS.fetch_add(1, Ordering::Relaxed);
        let mut command = match target {
            OnePass::Empty => {
                let mut command = Command::new(std::env::current_exe().unwrap());
                command.env(CHILD, "1").args([
                    "run",
                    "startup-empty",
                    "--iterations",
                    "1",
                    "--warmup",
                    "0",
                ]);
                command
            }
            OnePass::Letterbox => {
                let mut command = Command::new(env!("CARGO_BIN_EXE_profile-cli"));
                command.args(["run", "letterbox-preprocess"]);
                command
            }
        };
        command
            .args(["--no-report", "--run-id"])
            .arg(format!("r{run}"))
            .arg("--output-dir")
            .arg(out.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if !with_git {
            command.env("PATH", "/nonexistent");
        }
        assert!(command.status().unwrap().success());
    });
}
