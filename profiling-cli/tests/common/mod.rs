//! Running `profile-cli` in-process, and what the tests that run it (or
//! cargo) as a process share. Each test binary uses part of it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The workspace these tests were built in.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// What one invocation printed and returned.
pub struct Outcome {
    pub code: u8,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `profile-cli <args>` against the targets linked into the test,
/// one at a time: a run records the ranges of every thread of the process
/// while it captures, so two runs at once would each count the other's.
pub fn cli(args: &[&str]) -> Outcome {
    static ONE_RUN_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_RUN_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut argv = vec!["profile-cli".into()];
    argv.extend(args.iter().map(Into::into));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = profiling_cli::main_with(argv, &workspace_root(), &mut out, &mut err);
    Outcome {
        code,
        stdout: String::from_utf8(out).unwrap(),
        stderr: String::from_utf8(err).unwrap(),
    }
}

/// What a process printed and how it exited.
pub struct Finished {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Display for Finished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit {:?}\n{}\n{}", self.code, self.stdout, self.stderr)
    }
}

/// What a test sets for the cargo it runs, itself or through
/// `profile-cli`: builds go to `target/snippet-check/`, which the tests
/// that run cargo share, without debug information, and the release
/// profile unoptimized. These tests check what a build makes and how the
/// tool drives it, not how fast the built code runs; optimizing every
/// dependency a second time would be most of their time. The `test`
/// profile is set as `dev` is (`scripts/test` gives this process's own
/// builds line tables in both): a parity test's dependencies are then the
/// ones a `dev` build compiled, as they are for a user, not a build of
/// their own. No rustflags: cargo reads a `.cargo/config.toml` in every
/// directory above the one it runs in, so a workspace under `target/`
/// took this repository's (the rpath to libtorch) and the copy of this
/// workspace took it twice over, its own and the one above: each set of
/// flags made every dependency a build of its own.
pub fn nested_cargo(command: &mut std::process::Command) -> &mut std::process::Command {
    command
        .env("CARGO_ENCODED_RUSTFLAGS", "")
        .env(
            "CARGO_TARGET_DIR",
            workspace_root().join("target/snippet-check"),
        )
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .env("CARGO_PROFILE_TEST_DEBUG", "0")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "0")
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "256")
}

/// `profile-cli ARGS` as a process run in `dir`, as a user would from a
/// shell there, its cargo as [`nested_cargo`] sets it.
pub fn profile_cli_in(dir: &Path, args: &[&str]) -> Finished {
    let output = nested_cargo(
        std::process::Command::new(env!("CARGO_BIN_EXE_profile-cli"))
            .args(args)
            .current_dir(dir),
    )
    .output()
    .unwrap();
    Finished {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Held by each test that builds a workspace of its own in
/// `target/snippet-check/` for as long as it runs. Cargo tells packages
/// apart there by their path below their workspace, so two workspaces'
/// `inference_profiling` share one build: built by turns, each would find
/// the other's in place of its own and rebuild what it had just built.
pub fn snippet_check_build() -> std::sync::MutexGuard<'static, ()> {
    static BUILD: std::sync::Mutex<()> = std::sync::Mutex::new(());
    BUILD
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes a directory when dropped, however the test ends.
pub struct RemoveOnDrop(pub PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes a script and makes it executable from a child process, so that
/// no process another test forks meanwhile inherits a descriptor open for
/// writing on it (which makes running the script fail with "Text file
/// busy").
pub fn write_executable(path: &Path, text: &str) {
    use std::io::Write;
    let mut writer = std::process::Command::new("sh")
        .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
        .arg(path)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    writer
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    assert!(
        writer.wait().unwrap().success(),
        "cannot write {}",
        path.display()
    );
}
