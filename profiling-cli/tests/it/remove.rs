//! Snippets come and go cleanly: `profile-cli remove` deletes a snippet
//! and its entry in the profiling crate's Cargo.toml (refusing one with
//! runs or baselines unless `--force`), and removes the entry a directory
//! deleted by hand left; until then, the commands that build the
//! workspace's profiling binary stop with one line naming the entry and
//! the command, before cargo refuses the whole workspace.

use std::path::Path;

use crate::common::profile_cli_in;

const PROFILING_CRATE: &str = "[package]\nname = \"profiling-snippets\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[[bin]]\nname = \"profile\"\npath = \"src/main.rs\"\n\n[dependencies]\nprofiling-cli = { path = \"../cli\" }\nsnippet-kept = { path = \"snippets/kept\" }\nsnippet-used = { path = \"snippets/used\" }\nsnippet-gone = { path = \"snippets/gone\" }\n\n[features]\ntch = [\"profiling-cli/tch\", \"snippet-used/tch\", \"snippet-gone/tch\"]\n";

fn snippet(root: &Path, dir: &str, with_run: bool) {
    let path = root.join("inference_profiling/snippets").join(dir);
    std::fs::create_dir_all(&path).unwrap();
    std::fs::write(
        path.join("Cargo.toml"),
        format!("[package]\nname = \"snippet-{dir}\"\nversion = \"0.1.0\"\n"),
    )
    .unwrap();
    std::fs::write(path.join("target.rs"), "").unwrap();
    if with_run {
        std::fs::create_dir_all(path.join("runs/first")).unwrap();
        std::fs::write(path.join("runs/first/manifest.yaml"), "run_id: first\n").unwrap();
    }
}

#[test]
fn remove_deletes_a_snippet_and_its_entry_and_mends_a_hand_deletion() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("Cargo.toml"),
        "[workspace]\nmembers = [\"inference_profiling\"]\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("inference_profiling/src")).unwrap();
    std::fs::write(root.join("inference_profiling/Cargo.toml"), PROFILING_CRATE).unwrap();
    snippet(root, "kept", false);
    snippet(root, "used", true);
    let manifest = || std::fs::read_to_string(root.join("inference_profiling/Cargo.toml")).unwrap();

    // The entry of a directory deleted by hand stops the build's commands
    // at once, one line each, naming the command.
    let listed = profile_cli_in(root, &["list"]);
    assert_eq!(listed.code, Some(2), "{listed}");
    assert!(
        listed.stderr.contains(
            "error: inference_profiling/Cargo.toml depends on `snippet-gone` at snippets/gone, which holds no snippet any more (its directory was deleted): `profile-cli remove gone` removes the entry\n"
        ),
        "{listed}"
    );

    // Runs keep a snippet, unless --force.
    let kept = profile_cli_in(root, &["remove", "used"]);
    assert_eq!(kept.code, Some(2), "{kept}");
    assert!(
        kept.stderr.contains(
            "error: inference_profiling/snippets/used holds 1 run(s) and 0 baseline(s): nothing removed; `--force` removes them with it"
        ),
        "{kept}"
    );
    assert!(root
        .join("inference_profiling/snippets/used/runs/first")
        .is_dir());
    assert_eq!(manifest(), PROFILING_CRATE);

    let forced = profile_cli_in(root, &["remove", "used", "--force"]);
    assert_eq!(forced.code, Some(0), "{forced}");
    assert!(!root.join("inference_profiling/snippets/used").exists());
    assert!(!manifest().contains("snippet-used"), "{}", manifest());

    let gone = profile_cli_in(root, &["remove", "gone"]);
    assert_eq!(gone.code, Some(0), "{gone}");
    assert!(
        gone.stdout.contains(
            "removed `snippet-gone` (snippets/gone) from inference_profiling/Cargo.toml: its directory was already gone"
        ),
        "{gone}"
    );
    assert_eq!(
        manifest(),
        "[package]\nname = \"profiling-snippets\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[[bin]]\nname = \"profile\"\npath = \"src/main.rs\"\n\n[dependencies]\nprofiling-cli = { path = \"../cli\" }\nsnippet-kept = { path = \"snippets/kept\" }\n\n[features]\ntch = [\"profiling-cli/tch\"]\n"
    );
    let removed = profile_cli_in(root, &["remove", "kept"]);
    assert_eq!(removed.code, Some(0), "{removed}");
    assert!(!root.join("inference_profiling/snippets/kept").exists());

    let missing = profile_cli_in(root, &["remove", "nothing-here"]);
    assert_eq!(missing.code, Some(2), "{missing}");
    assert!(
        missing
            .stderr
            .starts_with("error: no snippet `nothing-here`"),
        "{missing}"
    );
}

/// The removed snippet's package leaves the workspace's Cargo.lock with
/// it, resolved again offline; the other snippets stay in it.
#[test]
fn remove_drops_the_snippets_package_from_cargo_lock() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("Cargo.toml"),
        "[workspace]\nmembers = [\"inference_profiling\"]\nresolver = \"2\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("inference_profiling/src")).unwrap();
    std::fs::write(root.join("inference_profiling/src/lib.rs"), "").unwrap();
    std::fs::write(
        root.join("inference_profiling/Cargo.toml"),
        "[package]\nname = \"profiling-snippets\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nsnippet-kept = { path = \"snippets/kept\" }\nsnippet-used = { path = \"snippets/used\" }\n",
    )
    .unwrap();
    for name in ["kept", "used"] {
        let path = root.join("inference_profiling/snippets").join(name);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(
            path.join("Cargo.toml"),
            format!("[package]\nname = \"snippet-{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\npath = \"target.rs\"\n"),
        )
        .unwrap();
        std::fs::write(path.join("target.rs"), "").unwrap();
    }
    let locked = std::process::Command::new(env!("CARGO"))
        .args(["generate-lockfile", "--offline"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        locked.status.success(),
        "{}",
        String::from_utf8_lossy(&locked.stderr)
    );
    let lock = || std::fs::read_to_string(root.join("Cargo.lock")).unwrap();
    assert!(lock().contains("name = \"snippet-used\"\n"), "{}", lock());

    let removed = profile_cli_in(root, &["remove", "used"]);
    assert_eq!(removed.code, Some(0), "{removed}");
    assert!(
        removed
            .stdout
            .ends_with("removed `snippet-used` from Cargo.lock\n"),
        "{removed}"
    );
    assert!(!lock().contains("snippet-used"), "{}", lock());
    assert!(lock().contains("name = \"snippet-kept\"\n"), "{}", lock());
}

/// A run in progress holds its id's claim (`.<id>.claim`, locked by its
/// process): `--force` removes the runs a snippet has, never one that is
/// being written. It refuses, naming the run and its process, and leaves
/// everything as it was; once the run has ended, it removes the snippet.
#[test]
fn remove_force_refuses_while_a_run_of_the_snippet_is_live() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("Cargo.toml"),
        "[workspace]\nmembers = [\"inference_profiling\"]\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("inference_profiling/src")).unwrap();
    std::fs::write(root.join("inference_profiling/Cargo.toml"), PROFILING_CRATE).unwrap();
    snippet(root, "kept", false);
    snippet(root, "used", true);
    snippet(root, "gone", false);
    // A pair's side runs a level deeper than a run: found there too.
    let runs = root.join("inference_profiling/snippets/used/runs/ab-1");
    std::fs::create_dir_all(&runs).unwrap();
    let claim_path = runs.join(".base.claim");
    // The live run: this test's process holds the claim's lock, as a run
    // does, with its process id in the file.
    std::fs::write(&claim_path, std::process::id().to_string()).unwrap();
    let claim = std::fs::File::open(&claim_path).unwrap();
    // SAFETY: flock(2) on a descriptor `claim` keeps open.
    let locked = unsafe {
        libc::flock(
            std::os::fd::AsRawFd::as_raw_fd(&claim),
            libc::LOCK_EX | libc::LOCK_NB,
        )
    };
    assert_eq!(locked, 0, "{}", std::io::Error::last_os_error());

    let refused = profile_cli_in(root, &["remove", "used", "--force"]);
    assert_eq!(refused.code, Some(2), "{refused}");
    assert_eq!(
        refused.stderr,
        format!(
            "error: inference_profiling/snippets/used is in use: run `base` (runs/ab-1/base) is running now in process {} ({} is locked): nothing removed; wait for it to end, or stop it\n",
            std::process::id(),
            claim_path.display()
        ),
        "{refused}"
    );
    assert!(root
        .join("inference_profiling/snippets/used/runs/first")
        .is_dir());
    assert!(claim_path.is_file());
    assert_eq!(
        std::fs::read_to_string(root.join("inference_profiling/Cargo.toml")).unwrap(),
        PROFILING_CRATE
    );

    // The run ended (its process let go of the lock, as a process that
    // died does): removed.
    drop(claim);
    let forced = profile_cli_in(root, &["remove", "used", "--force"]);
    assert_eq!(forced.code, Some(0), "{forced}");
    assert!(!root.join("inference_profiling/snippets/used").exists());
}
