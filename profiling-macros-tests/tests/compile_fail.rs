//! Every error the attributes give.
//!
//! Each file under `tests/ui` is a crate of its own; its `.stderr` holds the
//! expected messages. Regenerate them with `TRYBUILD=overwrite` and read the
//! diff before committing. The usages that must keep compiling,
//! `tests/ui/pass/*.rs`, are test programs of their own (`pass_*` in
//! Cargo.toml): with compile-fail cases alone, trybuild checks its crates
//! rather than building them and every dependency in full.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
