//! How long `profile-cli list` takes, from exec to exit: what every
//! invocation pays before any work (loading, registering targets).
//!
//! `cargo bench -p profiling-cli --bench startup`

use std::process::{Command, Stdio};

fn main() {
    divan::main();
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

/// A one-pass run of `letterbox-preprocess` on one dummy record, from exec
/// to exit (the manifest and samples written; no page), then the same with
/// no `git` on `PATH`: the difference is what the repository's state
/// (`git_commit`, `git_dirty`) costs.
#[divan::bench(sample_count = 20, args = [true, false])]
fn one_pass_dummy_run(bencher: divan::Bencher, with_git: bool) {
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let out = tempfile::tempdir().unwrap();
    bencher.bench_local(|| {
        let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut command = Command::new(env!("CARGO_BIN_EXE_profile-cli"));
        command
            .args(["run", "letterbox-preprocess", "--no-report", "--run-id"])
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
