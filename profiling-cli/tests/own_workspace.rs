//! Use in one's own workspace, end to end, as the installed `profile-cli`
//! does it: `init`, `new` on the workspace's own crate (a plain function
//! and a generic one), then `list` and `run`, which build and run the
//! workspace's own profiling binary.
//!
//! The workspace lives under `target/own-workspace/` (removed after) and
//! builds in `target/snippet-check/`, which the other cargo-running test
//! shares, so later runs rebuild little.

use std::path::Path;
use std::process::Command;

mod common;

use common::{workspace_root, Finished, RemoveOnDrop};

const APP_LIB: &str = "/// Doubles every value.\npub fn double(values: &[f32]) -> Vec<f32> {\n    values.iter().map(|v| v * 2.0).collect()\n}\n\n/// The first `N` values.\npub fn head<S: Copy, const N: usize>(values: &[S]) -> [S; N] {\n    std::array::from_fn(|i| values[i])\n}\n";

/// `profile-cli ARGS`, run in `dir` as a user would from a shell there.
fn profile_cli(dir: &Path, args: &[&str]) -> Finished {
    let output = Command::new(env!("CARGO_BIN_EXE_profile-cli"))
        .args(args)
        .current_dir(dir)
        .env(
            "CARGO_TARGET_DIR",
            workspace_root().join("target/snippet-check"),
        )
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "0")
        .output()
        .unwrap();
    Finished {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn init_new_list_and_run_in_a_workspace_of_ones_own() {
    let place = RemoveOnDrop(workspace_root().join("target/own-workspace"));
    let _ = std::fs::remove_dir_all(&place.0);
    let ws = place.0.join("ws");
    std::fs::create_dir_all(ws.join("app/src")).unwrap();
    std::fs::write(
        ws.join("Cargo.toml"),
        "[workspace]\nresolver = \"2\"\nmembers = [\"app\"]\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("app/Cargo.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(ws.join("app/src/lib.rs"), APP_LIB).unwrap();

    // Before init: the installed binary's own targets, and it says so.
    let before = profile_cli(&ws, &["list"]);
    assert_eq!(before.code, Some(0), "{before}");
    assert!(
        before.stderr.starts_with(&format!(
            "note: {} has no profiling crate (`profile-cli init` makes one): these are the targets built into this binary",
            ws.display()
        )),
        "{before}"
    );
    assert!(before.stdout.contains("example-candidate "), "{before}");

    let init = profile_cli(&ws.join("app"), &["init"]);
    assert_eq!(init.code, Some(0), "{init}");

    let double = profile_cli(&ws, &["new", "dbl", "--from", "app/src/lib.rs::double"]);
    assert_eq!(double.code, Some(0), "{double}");
    assert!(
        double
            .stdout
            .contains("  added `app = { path = \"../app\" }` to inference_profiling/Cargo.toml"),
        "{double}"
    );
    assert!(
        double
            .stdout
            .contains("  parity: the copy computes what production computes on 1 record(s)"),
        "{double}"
    );
    let head = profile_cli(
        &ws,
        &[
            "new",
            "head4",
            "--from",
            "app/src/lib.rs::head",
            "--type-args",
            "S=f32,N=4",
        ],
    );
    assert_eq!(head.code, Some(0), "{head}");
    let readme =
        std::fs::read_to_string(ws.join("inference_profiling/snippets/head4/README.md")).unwrap();
    assert!(
        readme.contains("| source file | `app/src/lib.rs` |"),
        "{readme}"
    );
    assert!(
        readme.contains(
            "| made by | `profile-cli new head4 --from app/src/lib.rs::head --type-args S=f32,N=4` |"
        ),
        "provenance relative to the workspace: {readme}"
    );
    assert!(!readme.contains(&ws.display().to_string()), "{readme}");

    // The installed binary builds and runs the workspace's own.
    let listed = profile_cli(&ws, &["list"]);
    assert_eq!(listed.code, Some(0), "{listed}");
    assert!(
        listed.stderr.contains("has its own profiling crate (inference_profiling): building and running its `profile` binary"),
        "{listed}"
    );
    assert!(listed.stderr.contains("profile-cli: running "), "{listed}");
    let names: Vec<&str> = listed
        .stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, ["dbl", "head4"], "{listed}");
    assert!(
        listed
            .stdout
            .contains("inference_profiling/snippets/dbl/target.rs:"),
        "{listed}"
    );

    let elsewhere = tempfile::tempdir().unwrap();
    let ran = profile_cli(
        elsewhere.path(),
        &[
            "--workspace",
            ws.to_str().unwrap(),
            "run",
            "head4",
            "--run-id",
            "first",
        ],
    );
    assert_eq!(ran.code, Some(0), "{ran}");
    assert!(ws
        .join("inference_profiling/snippets/head4/runs/first/manifest.yaml")
        .is_file());

    // --no-delegate: this binary's own targets.
    let own = profile_cli(&ws, &["--no-delegate", "list"]);
    assert_eq!(own.code, Some(0), "{own}");
    assert!(own.stdout.contains("example-candidate "), "{own}");
    assert!(!own.stderr.contains("profile-cli: running"), "{own}");
}
