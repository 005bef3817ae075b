//! The generated profiling snippets, linked in.
//!
//! Each directory under `inference_profiling/snippets/` is one snippet: a
//! `target.rs` holding a copy of some production code with NVTX ranges in
//! it and a `#[profile_target]` that registers it, next to the
//! `config.yaml` that profiles it and a `README.md` saying where the code
//! came from.
//!
//! A snippet `profile-cli new` makes is a crate of its own: its directory
//! holds a `Cargo.toml` (package `snippet-<directory>`, library root
//! `target.rs`), this crate depends on it, and the build script re-exports
//! it as a module named after its directory, which links its targets in.
//! Editing one snippet rebuilds that crate alone, however many there are.
//! Its dependencies and features are this crate's.
//!
//! A directory dropped in by hand with only a `target.rs` (and maybe a
//! `config.yaml`) needs no step either: it is compiled into this crate as a
//! module named after its directory (characters outside `[A-Za-z0-9_]`
//! become `_`), so `profile-cli list` shows its targets on the next build.
//! An error in it stops this crate from building, which the build says;
//! `profile-cli check <name>` gives it a crate of its own.
//!
//! A snippet whose directory holds a `DRAFT` file is a draft: not compiled,
//! so it breaks no other build, and listed in [`DRAFTS`] (and registered
//! for `profile-cli list`) with the file's text. `profile-cli new` leaves a snippet a draft when it does not build;
//! `profile-cli check <name>` builds it and, when it compiles, removes the
//! file and adds the dependency.
//!
//! A snippet's `target.rs` may use `profiling_core`, `profiling_examples`
//! (the production code it copies), `image`, `ndarray`, `anyhow` and
//! `serde_yaml`, and its unit tests run with `cargo test -p
//! snippet-<directory>` (or `-p inference-profiling` for a module snippet).
//!
//! Runs of a snippet go to `snippets/<dir>/runs/<run-id>/`, which git
//! ignores.

pub use profiling_core::driver::registry::Draft;

include!(concat!(env!("OUT_DIR"), "/snippets.rs"));
