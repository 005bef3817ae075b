//! `ab` with its sides in two processes, paced in lock-step (what `ab
//! --against REV` runs once it has built the base): here the built
//! `profile-cli` on both sides (`--base-binary`), the candidate's target
//! asked to do twice the work.

use std::path::Path;
use std::process::Command;

/// A config of `cpu-work` doing `rounds` steps in `work` a call.
fn config(dir: &Path, name: &str, rounds: u64) -> String {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            "target: {{name: cpu-work, parameters: {{rounds: {rounds}, steady_rounds: 20000}}}}\n\
             data_source: {{name: dummy, record_count: 2}}\nwarmup: 1\niterations: 40\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

fn ab(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_profile-cli"))
        .args(["ab", "cpu-work", "cpu-work"])
        .args(["--base-binary", env!("CARGO_BIN_EXE_profile-cli")])
        .args(["--output-dir", &dir.display().to_string()])
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn two_processes_in_lock_step_find_the_side_that_does_twice_the_work() {
    let out = tempfile::tempdir().unwrap();
    let base = config(out.path(), "base", 100_000);
    let slow = config(out.path(), "slow", 200_000);
    let (code, stdout, stderr) = ab(
        out.path(),
        &[
            "--config",
            &base,
            "--candidate-config",
            &slow,
            "--ab-id",
            "pair",
            "--block-passes",
            "2",
            "--json",
            "--no-report",
        ],
    );
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!(
            "ab: the base is {}, the candidate the working tree: each a process of its own, in lock-step",
            env!("CARGO_BIN_EXE_profile-cli")
        )),
        "{stderr}"
    );
    let document: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let comparison = &document["comparisons"][0];
    assert_eq!(comparison["pairing"]["pairs"], 20, "{comparison}");
    let work = comparison["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == "work")
        .unwrap_or_else(|| panic!("{comparison}"));
    assert_eq!(work["verdict"], "slower", "{work}");
    let ratio = work["ratio"].as_f64().unwrap();
    assert!((1.6..2.5).contains(&ratio), "{work}");

    // Each side a run of its own, written whole; the passes of both in
    // paired.json in the blocks' order.
    let pair = out.path().join("cpu-work/runs/pair");
    let paired: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(pair.join("paired.json")).unwrap()).unwrap();
    assert_eq!(paired["base"]["pass_ns"].as_array().unwrap().len(), 40);
    assert_eq!(paired["candidate"]["pass_ns"].as_array().unwrap().len(), 40);
    assert_eq!(paired["blocks"].as_array().unwrap().len(), 40);
    // The canary, read by the pair's process between block pairs.
    assert_eq!(paired["canary"].as_array().unwrap().len(), 8, "{paired}");
    for (side, rounds) in [("base", 100_000), ("candidate", 200_000)] {
        let manifest: serde_yaml::Value = serde_yaml::from_str(
            &std::fs::read_to_string(pair.join(side).join("manifest.yaml")).unwrap(),
        )
        .unwrap();
        assert_eq!(manifest["status"], "completed");
        assert_eq!(manifest["pair"]["side"], side);
        assert_eq!(manifest["workload"]["iterations"], 40);
        assert_eq!(manifest["target"]["parameters"]["rounds"], rounds, "{side}");
    }
}

/// Blocks of one pass over many passes: a side's description longer than
/// one argument may be (128 KiB) reaches it in a file, removed after.
#[test]
fn a_schedule_of_tens_of_thousands_of_blocks_reaches_both_sides() {
    let out = tempfile::tempdir().unwrap();
    let base = config(out.path(), "base", 10);
    let (code, stdout, stderr) = ab(
        out.path(),
        &[
            "--config",
            &base,
            "--ab-id",
            "long",
            "--iterations",
            "12000",
            "--block-passes",
            "1",
            "--warmup",
            "0",
            "--no-report",
            "--json",
        ],
    );
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let paired: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("cpu-work/runs/long/paired.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(paired["blocks"].as_array().unwrap().len(), 24_000);
    assert_eq!(
        paired["candidate"]["pass_ns"].as_array().unwrap().len(),
        12_000
    );
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("profile-cli-step-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A side whose config its target refuses: said with the side's name,
/// exit 2, and nothing of the pair left.
#[test]
fn a_refused_side_of_two_processes_says_which_and_why() {
    let out = tempfile::tempdir().unwrap();
    let base = config(out.path(), "base", 1_000);
    let refused = config(out.path(), "refused", 0);
    let (code, stdout, stderr) = ab(
        out.path(),
        &[
            "--config",
            &base,
            "--candidate-config",
            &refused,
            "--ab-id",
            "refused",
        ],
    );
    assert_eq!(code, Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("error: the candidate (the working tree): ")
            && stderr.contains("rounds")
            && stderr.contains("must be >= 1, got 0"),
        "{stderr}"
    );
    assert!(!out.path().join("cpu-work/runs/refused").exists());
    let leftovers: Vec<_> = std::fs::read_dir(out.path().join("cpu-work/runs"))
        .map(|dir| dir.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A SIGTERM sent to the pair's process alone (as a job runner or `kill`
/// sends it, not to the terminal's group): no further block starts, both
/// sides are ended, exit 143, and nothing of the pair is kept.
#[test]
fn a_sigterm_to_the_pair_alone_starts_no_further_block() {
    use std::io::{BufRead, BufReader, Read};
    let out = tempfile::tempdir().unwrap();
    // Passes of milliseconds, thousands of them: the pair is far from
    // its end when the signal comes, however the machine schedules.
    let base = config(out.path(), "base", 1_000_000);
    let mut child = Command::new(env!("CARGO_BIN_EXE_profile-cli"))
        .args(["ab", "cpu-work", "cpu-work"])
        .args(["--base-binary", env!("CARGO_BIN_EXE_profile-cli")])
        .args(["--output-dir", &out.path().display().to_string()])
        .args(["--config", &base, "--ab-id", "cut", "--no-report"])
        .args(["--iterations", "5000", "--block-passes", "1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    // Sent once the pair's process says that both sides are started.
    loop {
        let mut line = String::new();
        assert_ne!(stderr.read_line(&mut line).unwrap(), 0, "{said}");
        said.push_str(&line);
        if line.starts_with("ab: the base is") {
            break;
        }
    }
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    stderr.read_to_string(&mut said).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "{said}");
    let line = said
        .lines()
        .find(|line| line.starts_with("interrupted by SIGTERM"))
        .unwrap_or_else(|| panic!("{said}"));
    assert!(line.ends_with(": the pair is not kept"), "{said}");
    if let Some(counts) = line
        .strip_prefix("interrupted by SIGTERM after ")
        .and_then(|rest| rest.strip_suffix(" blocks: the pair is not kept"))
    {
        let (run, of) = counts.split_once(" of ").unwrap();
        let (run, of): (u32, u32) = (run.parse().unwrap(), of.parse().unwrap());
        assert!(run < of, "{said}");
    } else {
        assert_eq!(
            line,
            "interrupted by SIGTERM before the paired passes: the pair is not kept"
        );
    }
    let runs = out.path().join("cpu-work/runs");
    let left: Vec<_> = std::fs::read_dir(&runs)
        .map(|entries| entries.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}\n{said}");
}
