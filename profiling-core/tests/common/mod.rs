//! What the property tests share: how many cases to run, and what every
//! error must look like.

use std::fmt::Display;

use proptest::test_runner::Config as ProptestConfig;

/// `cases` cases, or `PROPTEST_CASES` when set (for a longer run); a
/// failure is reported with its input, not saved.
pub fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// An error reads well: something to say, said on its first line.
pub fn assert_reads_well(error: &dyn Display) {
    let text = error.to_string();
    let first = text.lines().next().unwrap_or_default();
    assert!(
        !first.trim().is_empty(),
        "an error whose first line is empty: {text:?}"
    );
    assert!(
        !text.starts_with(char::is_whitespace),
        "an error starting with white space: {text:?}"
    );
}

/// Runs `check` on `bytes` cut short at any length and with up to three of
/// its bytes changed, `cases` times (or `PROPTEST_CASES`): a valid file
/// damaged the ways a disk, a copy or a writer that stopped early damage
/// one.
#[allow(dead_code)] // Not every test binary that shares this module damages files.
pub fn each_damaged(bytes: &[u8], cases: u32, check: impl Fn(&[u8])) {
    use proptest::prelude::*;
    let len = bytes.len();
    let mut runner = proptest::test_runner::TestRunner::new(config(cases));
    runner
        .run(
            &(
                0..=len,
                proptest::collection::vec((0..len, any::<u8>()), 0..4),
            ),
            |(cut, changes)| {
                let mut changed = bytes.to_vec();
                for (at, byte) in changes {
                    changed[at] = byte;
                }
                changed.truncate(cut);
                check(&changed);
                Ok(())
            },
        )
        .unwrap();
}
