//! A test harness for binaries that count every allocation of the process:
//! the tests run one after the other, each on a fresh thread as libtest
//! runs them (the recorder keeps per-thread state), while the main thread
//! only waits; nothing else runs meanwhile (libtest's main thread allocates
//! when it reports a test, which a counting window open on another thread
//! would see).
//!
//! `cargo test -p profiling-core --test NAME [FILTER]` runs the tests whose
//! name contains FILTER; a failure panics with the test's name.

use std::io::Write;

/// Runs `tests` in order (those whose name contains the first argument
/// that is not an option, when given) and says how it went, as libtest
/// does.
pub fn run(tests: &[(&str, fn())]) {
    let filter = std::env::args()
        .skip(1)
        .find(|argument| !argument.starts_with('-'));
    let chosen: Vec<&(&str, fn())> = tests
        .iter()
        .filter(|(name, _)| filter.as_deref().is_none_or(|f| name.contains(f)))
        .collect();
    println!("\nrunning {} tests", chosen.len());
    for (name, test) in &chosen {
        print!("test {name} ... ");
        let _ = std::io::stdout().flush();
        let test = *test;
        if std::thread::spawn(test).join().is_err() {
            println!("FAILED");
            std::process::exit(101);
        }
        println!("ok");
    }
    println!(
        "\ntest result: ok. {} passed; 0 failed; {} filtered out\n",
        chosen.len(),
        tests.len() - chosen.len()
    );
}
