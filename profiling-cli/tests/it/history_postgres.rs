//! The history store in a real PostgreSQL (a throwaway cluster: initdb in
//! a temporary directory, a Unix socket, no TCP port), through the binary
//! as a team's CI would use it: `PROFILING_STORE=postgres://...`. A run
//! writes into it; a run while the server is away finishes, keeps its
//! directory, warns without the password, and `history sync` writes it
//! once the server is back; `history` reads both back.

use std::path::Path;
use std::process::{Command, Output};

#[path = "../../../profiling-history/tests/cluster/mod.rs"]
mod cluster;

fn profile_cli(store: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_profile-cli"))
        .args(args)
        .env("PROFILING_STORE", store)
        .output()
        .unwrap()
}

fn run(store: &str, out: &Path, run_id: &str) -> Output {
    profile_cli(
        store,
        &[
            "run",
            "detection-postprocess",
            "--iterations",
            "3",
            "--warmup",
            "1",
            "--output-dir",
            out.to_str().unwrap(),
            "--run-id",
            run_id,
        ],
    )
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn runs_go_into_postgres_and_one_made_while_it_was_away_is_synced_later() {
    let Some(cluster) = cluster::Cluster::start() else {
        return;
    };
    // Trust authentication: the password is never checked, only kept out
    // of every message.
    let store = format!(
        "postgres://profiling:sekrit@/postgres?host={}",
        cluster.socket_dir().display()
    );
    let out = tempfile::tempdir().unwrap();
    let first = run(&store, out.path(), "p1");
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    assert!(
        !text(&first.stderr).contains("history store"),
        "{}",
        text(&first.stderr)
    );
    // Nothing beside the run directories: the store is the server.
    assert!(!out.path().join("history.sqlite").exists());

    cluster.stop();
    let away = run(&store, out.path(), "p2");
    let stderr = text(&away.stderr);
    assert_eq!(away.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("warning: the run is not in the history store: postgres://profiling:***@/postgres?host="),
        "{stderr}"
    );
    assert!(!stderr.contains("sekrit"), "{stderr}");
    let kept = out
        .path()
        .join("detection-postprocess/runs/p2/manifest.yaml");
    assert!(kept.is_file(), "the run directory is kept");

    cluster.pg_ctl_start();
    let dir = out.path().to_str().unwrap();
    let synced = profile_cli(&store, &["history", "sync", "--output-dir", dir]);
    assert_eq!(synced.status.code(), Some(0), "{}", text(&synced.stderr));
    assert_eq!(
        text(&synced.stdout),
        format!(
            "postgres://profiling:***@/postgres?host={}: 1 run written, 1 there already\n",
            cluster.socket_dir().display()
        )
    );
    let again = profile_cli(&store, &["history", "sync", "--output-dir", dir]);
    assert!(text(&again.stdout).ends_with(": 0 runs written, 2 there already\n"));

    let shown = profile_cli(
        &store,
        &[
            "history",
            "detection-postprocess",
            "--dirty",
            "--json",
            "--output-dir",
            dir,
        ],
    );
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    let document: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert!(!text(&shown.stdout).contains("sekrit"));
    let runs: Vec<&str> = document["groups"][0]["series"][0]["commits"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["runs"].as_array().unwrap())
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(runs, ["p1", "p2"], "{document}");
}
