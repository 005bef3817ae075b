//! Every snippet directory compiled into the crate registers a target from
//! its own `target.rs`.

use std::path::{Path, PathBuf};

use inference_profiling::SNIPPETS;
use profiling_core::driver::registry::{targets, TargetEntry};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate lies inside the workspace")
        .to_path_buf()
}

fn snippets_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("snippets")
}

/// The entry's source file, absolute and with symlinks resolved, so that a
/// relative `file!()` and an absolute `#[path]` compare equal.
fn source_file(entry: &TargetEntry) -> PathBuf {
    let path = entry.source_path(&workspace_root());
    path.canonicalize().unwrap_or(path)
}

fn canonical(path: PathBuf) -> PathBuf {
    path.canonicalize().unwrap_or(path)
}

#[test]
fn every_snippet_directory_registers_a_target() {
    assert!(!SNIPPETS.is_empty(), "no snippet directory was compiled in");
    let registered = targets();
    for directory in SNIPPETS {
        let root = canonical(snippets_dir().join(directory));
        assert!(
            registered
                .iter()
                .any(|entry| source_file(entry).starts_with(&root)),
            "snippets/{directory} registers no target; registered: {:?}",
            registered
                .iter()
                .map(|e| (e.name, e.file))
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn example_candidate_is_registered_from_its_target_rs() {
    let registered = targets();
    let entry = registered
        .iter()
        .find(|entry| entry.name == "example-candidate")
        .unwrap_or_else(|| {
            panic!(
                "`example-candidate` is not registered; registered: {:?}",
                registered.iter().map(|e| e.name).collect::<Vec<_>>()
            )
        });
    let expected = canonical(
        workspace_root().join("inference_profiling/snippets/example_candidate/target.rs"),
    );
    assert_eq!(source_file(entry), expected);
    assert_eq!(
        entry.doc,
        "Profiles a copy of `postprocess_detections` (examples/src/postprocess.rs:74-94)."
    );
}

#[test]
fn snippets_lists_the_example_candidate_directory() {
    assert!(SNIPPETS.contains(&"example_candidate"), "{SNIPPETS:?}");
}
