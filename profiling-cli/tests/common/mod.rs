//! Running `profile-cli` in-process, for the CLI's integration tests.

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
