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

/// Runs `profile-cli <args>` against the targets linked into the test.
pub fn cli(args: &[&str]) -> Outcome {
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

/// Removes a directory when dropped, however the test ends.
pub struct RemoveOnDrop(pub PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
