//! `profile-cli init` in a workspace of one's own: the profiling crate is
//! created and made a member, and nothing else changes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::{cli, workspace_root};

const ROOT_MANIFEST: &str = "# my workspace\n[workspace]\nresolver = \"2\"\nmembers = [\"app\"]  # the product\n\n[workspace.dependencies]\nanyhow = \"1\"\n";
const APP_MANIFEST: &str = "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
const APP_LIB: &str = "pub fn double(x: f32) -> f32 {\n    x * 2.0\n}\n";

/// A workspace with one production crate, `app`.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("Cargo.toml", ROOT_MANIFEST);
    write("app/Cargo.toml", APP_MANIFEST);
    write("app/src/lib.rs", APP_LIB);
    dir
}

/// Every file under `dir`, by path, with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, files: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, files);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                files.insert(path.strip_prefix(root).unwrap().to_path_buf(), bytes);
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(dir, dir, &mut files);
    files
}

fn init(workspace: &Path, extra: &[&str]) -> crate::common::Outcome {
    let mut args = vec!["init", "--workspace", workspace.to_str().unwrap()];
    args.extend(extra);
    cli(&args)
}

#[test]
fn init_creates_the_profiling_crate_and_changes_nothing_else() {
    let dir = workspace();
    let nested = dir.path().join("app/src");
    let before = snapshot(dir.path());
    let outcome = init(&nested, &[]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let root = dir.path().canonicalize().unwrap();
    assert_eq!(
        outcome.stdout.lines().next().unwrap(),
        format!(
            "created in {}: inference_profiling/Cargo.toml, inference_profiling/build.rs, inference_profiling/src/lib.rs, inference_profiling/src/main.rs, inference_profiling/.gitignore, inference_profiling/snippets/.gitkeep",
            std::path::absolute(dir.path()).unwrap().display()
        )
    );
    assert!(outcome
        .stdout
        .contains("  Cargo.toml: added \"inference_profiling\" to workspace.members\n"));

    let after = snapshot(dir.path());
    for (path, bytes) in &before {
        if path != Path::new("Cargo.toml") {
            assert_eq!(after.get(path), Some(bytes), "{} changed", path.display());
        }
    }
    assert_eq!(
        String::from_utf8(after[Path::new("Cargo.toml")].clone()).unwrap(),
        ROOT_MANIFEST.replace(
            "members = [\"app\"]  # the product",
            "members = [\"app\", \"inference_profiling\"]  # the product"
        ),
        "one member added, the comments kept"
    );
    let manifest = std::fs::read_to_string(root.join("inference_profiling/Cargo.toml")).unwrap();
    let core_path = manifest
        .lines()
        .find_map(|l| l.strip_prefix("profiling-core = { path = \""))
        .and_then(|rest| rest.strip_suffix("\" }"))
        .unwrap_or_else(|| panic!("{manifest}"));
    assert!(
        !Path::new(core_path).is_absolute(),
        "a relative path: {core_path}"
    );
    assert_eq!(
        root.join("inference_profiling")
            .join(core_path)
            .canonicalize()
            .unwrap(),
        workspace_root()
            .join("profiling-core")
            .canonicalize()
            .unwrap()
    );
    assert!(
        manifest.contains("default-features = false }"),
        "{manifest}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("inference_profiling/build.rs")).unwrap(),
        std::fs::read_to_string(workspace_root().join("inference_profiling/build.rs")).unwrap()
    );

    // git ignores everything a run, a baseline and the image cache write
    // there, and nothing else.
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .output()
            .unwrap()
    };
    assert!(git(&["init", "-q"]).status.success());
    let ignored = |path: &str| {
        git(&["check-ignore", "-q", "--no-index", path])
            .status
            .success()
    };
    for written in [
        "inference_profiling/snippets/dbl/runs/smoke/manifest.yaml",
        "inference_profiling/snippets/dbl/runs/sweep1/00-batch_size-1/report.html",
        "inference_profiling/snippets/dbl/baselines/main/manifest.yaml",
        "inference_profiling/.cache/images/0123abcd.pixels",
    ] {
        assert!(ignored(written), "{written} is not ignored");
    }
    for kept in [
        "inference_profiling/snippets/dbl/target.rs",
        "inference_profiling/snippets/dbl/config.yaml",
        "inference_profiling/src/main.rs",
        "app/src/lib.rs",
    ] {
        assert!(!ignored(kept), "{kept} is ignored");
    }
    std::fs::remove_dir_all(root.join(".git")).unwrap();

    // A second `init` changes nothing.
    let snapshot_after = snapshot(dir.path());
    let again = init(dir.path(), &[]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again
            .stdout
            .ends_with("already has its profiling crate (inference_profiling/): nothing to do\n"),
        "{}",
        again.stdout
    );
    assert_eq!(snapshot(dir.path()), snapshot_after);
}

#[test]
fn init_refuses_what_it_would_overwrite_or_change_unasked() {
    // An inference_profiling/ of the user's own.
    let dir = workspace();
    std::fs::create_dir_all(dir.path().join("inference_profiling")).unwrap();
    std::fs::write(dir.path().join("inference_profiling/notes.txt"), "mine\n").unwrap();
    let before = snapshot(dir.path());
    let outcome = init(dir.path(), &[]);
    assert_eq!(outcome.code, 2);
    assert!(
        outcome.stderr.starts_with("error: ")
            && outcome
                .stderr
                .contains("inference_profiling exists and is not a profiling crate `init` made: nothing was written"),
        "{}",
        outcome.stderr
    );
    assert_eq!(snapshot(dir.path()), before);

    // A package that is not a workspace: only with --make-workspace.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Cargo.toml"), APP_MANIFEST).unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), APP_LIB).unwrap();
    let before = snapshot(dir.path());
    let outcome = init(dir.path(), &[]);
    assert_eq!(outcome.code, 2);
    assert!(
        outcome.stderr.contains("is a package, not a workspace: `profile-cli init --make-workspace` adds a [workspace] table"),
        "{}",
        outcome.stderr
    );
    assert_eq!(snapshot(dir.path()), before);
    let outcome = init(dir.path(), &["--make-workspace"]);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("Cargo.toml")).unwrap(),
        format!("{APP_MANIFEST}\n[workspace]\nmembers = [\".\", \"inference_profiling\"]\n")
    );

    // No workspace at all.
    let nowhere = tempfile::tempdir().unwrap();
    let outcome = init(nowhere.path(), &[]);
    assert_eq!(outcome.code, 2);
    assert!(
        outcome.stderr.starts_with(&format!(
            "error: no cargo workspace at {}: neither it nor a directory above it holds a Cargo.toml",
            nowhere.path().display()
        )),
        "{}",
        outcome.stderr
    );
    assert_eq!(std::fs::read_dir(nowhere.path()).unwrap().count(), 0);
}

#[test]
fn init_can_take_the_crates_from_git() {
    let dir = workspace();
    let outcome = init(
        dir.path(),
        &[
            "--core-git",
            "https://example.invalid/snippet-profiling.git",
        ],
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let manifest =
        std::fs::read_to_string(dir.path().join("inference_profiling/Cargo.toml")).unwrap();
    assert!(manifest.contains(
        "profiling-core = { git = \"https://example.invalid/snippet-profiling.git\" }\n"
    ));
    assert!(manifest.contains(
        "profiling-cli = { git = \"https://example.invalid/snippet-profiling.git\", default-features = false }\n"
    ));
}
