//! The tests of `profiling-macros` that use the runtime, which a
//! proc-macro crate cannot take as a dev-dependency without building it a
//! second time for the host: `tests/expand.rs` (what the attributes
//! expand to, observed from the outside), `tests/compile_fail.rs` (every
//! error they give, with trybuild) and `tests/ui/pass/` (usages that must
//! compile without a warning). Nothing here is a library.
