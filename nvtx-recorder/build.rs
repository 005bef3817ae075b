//! Compiles `src/injection.rs` into the cdylib that the NVTX loader `dlopen`s.
//!
//! A crate has one library target, and this crate's is the rlib that tests link,
//! so the injection library is built here with the same `rustc` Cargo uses.

use std::env;
use std::path::PathBuf;
use std::process::{exit, Command};

fn main() {
    println!("cargo:rerun-if-changed=src/injection.rs");

    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out_dir =
        PathBuf::from(env::var_os("OUT_DIR").expect("Cargo sets OUT_DIR for build scripts"));
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("Cargo sets CARGO_MANIFEST_DIR"));
    let source = manifest_dir.join("src/injection.rs");
    let library = out_dir.join("libnvtx_recorder_injection.so");

    let mut command = Command::new(&rustc);
    command
        .args([
            "--crate-type",
            "cdylib",
            "--crate-name",
            "nvtx_recorder_injection",
        ])
        .args(["--edition", "2021", "-C", "opt-level=2"])
        .arg(&source)
        .arg("-o")
        .arg(&library);
    if let Some(target) = env::var_os("TARGET") {
        command.arg("--target").arg(target);
    }

    match command.status() {
        Ok(status) if status.success() => {}
        Ok(status) => {
            eprintln!(
                "error: building the NVTX injection library failed ({status}): {command:?}\n\
                 rustc's messages for {} are above",
                source.display()
            );
            exit(1);
        }
        Err(error) => {
            eprintln!(
                "error: cannot run rustc ({}) to build the NVTX injection library: {error}",
                PathBuf::from(rustc).display()
            );
            exit(1);
        }
    }

    println!(
        "cargo:rustc-env=NVTX_RECORDER_INJECTION={}",
        library.display()
    );
}
