//! The Rust parser is this crate's alone: what a snippet links
//! (`profiling-core`, `inference-profiling`) reaches `syn` and `proc-macro2`
//! only through proc-macros, which run at compile time.

use std::path::Path;
use std::process::Command;

/// The crates `package` links at run time: its normal dependencies, proc-macros
/// (and what only they use) left out.
fn linked_crates(package: &str) -> Vec<String> {
    linked_crates_with(package, &[])
}

/// Not `--offline`: a package the cargo cache lacks is fetched, as a build
/// would.
fn linked_crates_with(package: &str, options: &[&str]) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let output = Command::new(cargo)
        .args([
            "tree",
            "--locked",
            "--prefix",
            "none",
            "-e",
            "normal,no-proc-macro",
        ])
        .args(["-p", package])
        .args(options)
        .arg("--manifest-path")
        .arg(&workspace)
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut crates: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect();
    crates.sort();
    crates.dedup();
    crates
}

fn parsers(crates: &[String]) -> Vec<&str> {
    crates
        .iter()
        .map(String::as_str)
        .filter(|name| ["syn", "proc-macro2", "quote"].contains(name))
        .collect()
}

#[test]
fn what_snippets_link_has_no_rust_parser() {
    for package in ["profiling-core", "inference-profiling"] {
        let crates = linked_crates(package);
        assert!(
            crates.iter().any(|c| c == "profiling-core"),
            "{package}: {crates:?}"
        );
        assert_eq!(parsers(&crates), Vec::<&str>::new(), "{package}");
    }
}

#[test]
fn the_extractor_links_the_parser() {
    let crates = linked_crates("profiling-extract");
    assert_eq!(parsers(&crates), ["proc-macro2", "quote", "syn"]);
}

/// A profiling crate of another workspace depends on the command line's
/// library alone: it does not link this workspace's examples or snippets.
#[test]
fn the_command_line_library_links_no_targets_of_this_workspace() {
    let library = linked_crates_with("profiling-cli", &["--no-default-features"]);
    assert!(library.iter().any(|c| c == "profiling-core"), "{library:?}");
    for linked in [
        "profiling-examples",
        "inference-profiling",
        "snippet-example-candidate",
    ] {
        assert!(
            !library.iter().any(|c| c == linked),
            "{linked}: {library:?}"
        );
    }
    let binary = linked_crates("profiling-cli");
    assert!(
        binary.iter().any(|c| c == "inference-profiling"),
        "{binary:?}"
    );
}
