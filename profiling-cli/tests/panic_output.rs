//! What a panic in a target prints, seen as the user sees it: the whole
//! stderr of a real process. This test binary is `profile-cli` (its `main`
//! runs the program's `run_main`, panic hook and all) with one more target,
//! which panics; run without arguments it runs itself as that program and
//! checks what it printed.

use std::process::{Command, ExitCode, Output};

use profiling_core::prelude::*;

/// Panics in its run.
#[derive(Default)]
struct Panicking;

#[profile_target(name = "panicking")]
impl ProfileTarget for Panicking {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, _prepared: &()) -> anyhow::Result<()> {
        panic!("kaboom");
    }
}

/// Set in the child: it is the program.
const CHILD: &str = "PANIC_OUTPUT_TEST_CHILD";

fn main() -> ExitCode {
    if std::env::var_os(CHILD).is_some() {
        return profiling_cli::run_main();
    }
    one_error_line_without_a_backtrace();
    a_backtrace_with_rust_backtrace();
    println!("panic_output: 2 checks passed");
    ExitCode::SUCCESS
}

fn run(backtrace: Option<&str>) -> (Output, tempfile::TempDir) {
    let out = tempfile::tempdir().unwrap();
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["run", "panicking", "--run-id", "p1", "--output-dir"])
        .arg(out.path())
        .env(CHILD, "1")
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE");
    if let Some(value) = backtrace {
        command.env("RUST_BACKTRACE", value);
    }
    (command.output().unwrap(), out)
}

/// The line of the `panic!` above.
fn panic_line() -> usize {
    include_str!("panic_output.rs")
        .lines()
        .position(|l| l.trim() == "panic!(\"kaboom\");")
        .unwrap()
        + 1
}

fn error_line() -> String {
    format!(
        "error: the target failed: run failed on record `dummy-0` (warmup pass 0): panicked at profiling-cli/tests/panic_output.rs:{}:9: kaboom",
        panic_line()
    )
}

fn one_error_line_without_a_backtrace() {
    let (output, out) = run(None);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    let mut expected = Vec::new();
    if cfg!(debug_assertions) {
        expected.push(
            "warning: this is a debug build: its timings say little about optimized code (build with --release)"
                .to_owned(),
        );
    }
    expected.push(error_line());
    assert_eq!(stderr.lines().collect::<Vec<_>>(), expected, "{stderr}");
    let manifest = std::fs::read_to_string(out.path().join("panicking/runs/p1/manifest.yaml"))
        .expect("a failed run keeps its manifest");
    assert!(manifest.contains("status: failed"), "{manifest}");
}

fn a_backtrace_with_rust_backtrace() {
    let (output, _out) = run(Some("1"));
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "panicked at profiling-cli/tests/panic_output.rs:{}:9:\nkaboom\n",
            panic_line()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("stack backtrace:"), "{stderr}");
    assert_eq!(
        stderr.lines().last(),
        Some(error_line().as_str()),
        "{stderr}"
    );
}
