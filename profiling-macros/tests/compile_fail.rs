//! Every error the attributes give, and usages that must keep compiling.
//!
//! Each file under `tests/ui` is a crate of its own; its `.stderr` holds the
//! expected messages. Regenerate them with `TRYBUILD=overwrite` and read the
//! diff before committing.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
