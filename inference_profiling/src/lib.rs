//! The generated profiling snippets, compiled in.
//!
//! Each directory under `inference_profiling/snippets/` is one snippet: a
//! `target.rs` holding a copy of some production code with NVTX ranges in
//! it and a `#[profile_target]` that registers it, next to the
//! `config.yaml` that profiles it and a `README.md` saying where the code
//! came from. Dropping such a directory into `snippets/` is all it takes:
//! the build script finds every `snippets/*/target.rs` and compiles it in as
//! a module named after its directory (characters outside `[A-Za-z0-9_]`
//! become `_`), so `profile-cli list` shows its targets on the next build.
//! A directory without a `target.rs` is skipped.
//!
//! A snippet's `target.rs` is an ordinary module of this crate: it may use
//! `profiling_core`, `profiling_examples` (the production code it copies),
//! `image`, `ndarray`, `anyhow` and `serde_yaml`, and its unit tests run
//! with `cargo test -p inference-profiling`.
//!
//! Runs of a snippet go to `snippets/<dir>/runs/<run-id>/`, which git
//! ignores.

include!(concat!(env!("OUT_DIR"), "/snippets.rs"));
