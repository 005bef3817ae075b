//! With the `tch` feature: where `profile-cli` finds libtorch at run time,
//! and libtorch's CUDA library kept linked.
//!
//! The rpath names the libtorch directory that torch-sys built against
//! (`DEP_TCH_LIBTORCH_LIB`, absolute), so the binary starts with no
//! `LD_LIBRARY_PATH` wherever cargo put it: the repository's `target/`, any
//! `CARGO_TARGET_DIR`, or `cargo install`'s bin directory. The relative
//! entries of `.cargo/config.toml` come after it and keep binaries under the
//! repository's own `target/` working when the whole repository moves.
//!
//! Nothing calls into `libtorch_cuda` by name: its kernels register
//! themselves when it loads. The linker drops such a library as unused
//! (`--as-needed`), and libtorch then sees no CUDA device even on a GPU
//! machine; linking it without `as-needed` keeps it. A CPU-only libtorch
//! has no such library, and a machine without a GPU loads it harmlessly.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    if std::env::var_os("CARGO_FEATURE_TCH").is_none() {
        return;
    }
    let Some(lib) = std::env::var_os("DEP_TCH_LIBTORCH_LIB").map(PathBuf::from) else {
        return;
    };
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    let cuda = lib.join("libtorch_cuda.so");
    println!("cargo:rerun-if-changed={}", cuda.display());
    if cuda.exists() {
        println!("cargo:rustc-link-search=native={}", lib.display());
        for arg in ["-Wl,--no-as-needed", "-ltorch_cuda", "-Wl,--as-needed"] {
            println!("cargo:rustc-link-arg-bins={arg}");
        }
    }
}
