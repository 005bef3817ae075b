//! With the `tch` feature, keeps libtorch's CUDA library linked into
//! `profile-cli` when the libtorch built against has one.
//!
//! Nothing calls into `libtorch_cuda` by name: its kernels register
//! themselves when it loads. The linker drops such a library as unused
//! (`--as-needed`), and libtorch then sees no CUDA device even on a GPU
//! machine; linking it without `as-needed` keeps it. A CPU-only libtorch
//! has no such library, and a machine without a GPU loads it harmlessly.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    if std::env::var_os("CARGO_FEATURE_TCH").is_none() {
        return;
    }
    let Some(libtorch) = std::env::var_os("LIBTORCH").map(PathBuf::from) else {
        return;
    };
    let lib = libtorch.join("lib");
    let cuda = lib.join("libtorch_cuda.so");
    println!("cargo:rerun-if-changed={}", cuda.display());
    if cuda.exists() {
        println!("cargo:rustc-link-search=native={}", lib.display());
        for arg in ["-Wl,--no-as-needed", "-ltorch_cuda", "-Wl,--as-needed"] {
            println!("cargo:rustc-link-arg-bins={arg}");
        }
    }
}
