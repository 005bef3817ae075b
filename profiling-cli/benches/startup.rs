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
