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
/// one argument may be (128 KiB: 10,000 blocks are about 155 KB) reaches
/// it in a file, removed after. The judging's bootstrap resamples a
/// thousand times: what is tested is the pairing, not the statistics.
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
            "5000",
            "--block-passes",
            "1",
            "--warmup",
            "0",
            "--resamples",
            "1000",
            "--no-report",
            "--json",
        ],
    );
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let paired: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("cpu-work/runs/long/paired.json")).unwrap(),
    )
    .unwrap();
    let blocks = &paired["blocks"];
    assert_eq!(blocks.as_array().unwrap().len(), 10_000);
    assert!(
        blocks.to_string().len() > 128 * 1024,
        "longer than an argument"
    );
    assert_eq!(
        paired["candidate"]["pass_ns"].as_array().unwrap().len(),
        5_000
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
    // Ended by the signal itself, after its cleanup, as a shell expects.
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGTERM),
        "{said}"
    );
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

/// `ab --against` in a workspace of one's own whose cargo is a fake:
/// `metadata` names the target directory (`CARGO_TARGET_DIR`, else the
/// workspace's `target`), the working tree's build names a binary, and
/// the base's build says it started (`fake.building` in its target
/// directory: its process id and the manifest it builds), then waits for
/// `go` to make its binary, recording any signal it gets
/// (`fake.signalled`). The binaries exit 3: what these tests look at is
/// over before the pair would run.
struct Against {
    dir: tempfile::TempDir,
    /// The workspace, a git repository of its own with one commit.
    ws: std::path::PathBuf,
    cargo: std::path::PathBuf,
    profile: std::path::PathBuf,
    go: std::path::PathBuf,
    commit: String,
    /// Started here; killed, with the fake builds they started, if a
    /// test ends before they do.
    running: Vec<std::process::Child>,
}

const FAKE_CARGO: &str = r#"#!/bin/sh
manifest=
previous=
for word in "$@"; do
  if [ "$previous" = --manifest-path ]; then manifest=$word; fi
  previous=$word
done
case "$1" in
metadata)
  root=$(dirname "$manifest")
  printf '{"packages":[],"workspace_members":[],"workspace_default_members":[],"resolve":null,"target_directory":"%s","version":1,"workspace_root":"%s","metadata":null}\n' "${CARGO_TARGET_DIR:-$root/target}" "$root"
  exit 0 ;;
build) ;;
*) echo "fake cargo: $*" >&2; exit 101 ;;
esac
case "$*" in
*--message-format=json*)
  printf '{"reason":"compiler-artifact","package_id":"path+file:///ws/inference_profiling#0.1.0","manifest_path":"/ws/inference_profiling/Cargo.toml","target":{"kind":["bin"],"crate_types":["bin"],"name":"profile","src_path":"/ws/inference_profiling/src/main.rs","edition":"2021","doc":true,"doctest":false,"test":true},"profile":{"opt_level":"3","debuginfo":0,"debug_assertions":false,"overflow_checks":false,"test":false},"features":[],"filenames":["%s"],"executable":"%s","fresh":true}\n' "$FAKE_PROFILE" "$FAKE_PROFILE"
  printf '{"reason":"build-finished","success":true}\n'
  exit 0 ;;
esac
out=$CARGO_TARGET_DIR
mkdir -p "$out"
trap 'echo TERM >> "$out/fake.signalled"; exit 143' TERM
trap 'echo INT >> "$out/fake.signalled"; exit 130' INT
echo "   Compiling profiling-snippets (fake)" >&2
printf '%s %s\n' "$$" "$manifest" > "$out/fake.building.tmp"
mv "$out/fake.building.tmp" "$out/fake.building"
while [ ! -e "$FAKE_GO" ]; do sleep 0.05; done
if [ -n "$FAKE_DIRTY" ]; then echo '# changed while built' >> "$manifest"; fi
mkdir -p "$out/release"
cp "$FAKE_PROFILE" "$out/release/profile"
exit 0
"#;

impl Against {
    fn new() -> Against {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("inference_profiling/src")).unwrap();
        std::fs::write(
            ws.join("Cargo.toml"),
            "[workspace]\nmembers = [\"inference_profiling\"]\nresolver = \"2\"\n",
        )
        .unwrap();
        std::fs::write(
            ws.join("inference_profiling/Cargo.toml"),
            "[package]\nname = \"profiling-snippets\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[[bin]]\nname = \"profile\"\npath = \"src/main.rs\"\n\n[dependencies]\nprofiling-cli = { path = \"../cli\" }\n",
        )
        .unwrap();
        std::fs::write(ws.join("inference_profiling/src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(ws.join(".gitignore"), "/target/\n").unwrap();
        let git = |args: &[&str]| {
            let output = Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .args(args)
                .current_dir(&ws)
                .output()
                .unwrap();
            assert!(output.status.success(), "git {args:?}: {output:?}");
            String::from_utf8(output.stdout).unwrap().trim().to_owned()
        };
        git(&["init", "-q"]);
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", "first"]);
        let commit = git(&["rev-parse", "HEAD"]);
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let cargo = bin.join("cargo");
        crate::common::write_executable(&cargo, FAKE_CARGO);
        let profile = bin.join("profile");
        crate::common::write_executable(&profile, "#!/bin/sh\nexit 3\n");
        let go = dir.path().join("go");
        Against {
            dir,
            ws,
            cargo,
            profile,
            go,
            commit,
            running: Vec::new(),
        }
    }

    /// `profile-cli ab dbl --against HEAD` in the workspace, with
    /// `CARGO_TARGET_DIR` as given (unset: the workspace's `target`):
    /// its index among `running`, and its stderr as it comes.
    fn start(
        &mut self,
        target: Option<&Path>,
        dirty: bool,
    ) -> (usize, std::sync::mpsc::Receiver<String>) {
        use std::io::BufRead;
        let mut command = Command::new(env!("CARGO_BIN_EXE_profile-cli"));
        command
            .args(["ab", "dbl", "--against", "HEAD"])
            .current_dir(&self.ws)
            .env("CARGO", &self.cargo)
            .env("FAKE_PROFILE", &self.profile)
            .env("FAKE_GO", &self.go)
            .env_remove("CARGO_TARGET_DIR")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        if let Some(target) = target {
            command.env("CARGO_TARGET_DIR", target);
        }
        if dirty {
            command.env("FAKE_DIRTY", "1");
        }
        let mut child = command.spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (lines, said) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        self.running.push(child);
        (self.running.len() - 1, said)
    }

    /// The target directory of the base's build with `target`.
    fn base_build(&self, target: &Path) -> std::path::PathBuf {
        target.join("ab-against/base/target")
    }

    fn signal(&self, index: usize, signal: i32) {
        let pid = i32::try_from(self.running[index].id()).unwrap();
        // SAFETY: kill(2) on a child not yet waited for.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    }

    /// Waits for `running[index]` to end: its exit code.
    /// The command's exit status as a shell says it: its code, or 128 +
    /// the signal it died of.
    fn wait(&mut self, index: usize) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        let child = &mut self.running[index];
        until("the command to end", || child.try_wait().unwrap().is_some());
        let status = child.wait().unwrap();
        status.code().or(status.signal().map(|signal| 128 + signal))
    }
}

impl Drop for Against {
    fn drop(&mut self) {
        for child in &mut self.running {
            let _ = child.kill();
            let _ = child.wait();
        }
        // The fake builds a test that failed left waiting.
        let mut pending = vec![self.dir.path().to_path_buf()];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    pending.push(path);
                } else if path.file_name().is_some_and(|n| n == "fake.building") {
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    if let Some(Ok(pid)) = text.split(' ').next().map(str::parse::<i32>) {
                        // SAFETY: kill(2); the fake build's process id.
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                    }
                }
            }
        }
    }
}

/// Waits until `done` says so, looking again and again: the guard only
/// keeps a test that would wait forever from hanging.
fn until(what: &str, mut done: impl FnMut() -> bool) {
    let guard = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !done() {
        assert!(std::time::Instant::now() < guard, "waited 120 s for {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The lines said so far.
fn said(lines: &std::sync::mpsc::Receiver<String>, text: &mut String) {
    while let Ok(line) = lines.try_recv() {
        text.push_str(&line);
        text.push('\n');
    }
}

/// The lines said until the stream closed (the process has ended).
fn said_to_the_end(lines: &std::sync::mpsc::Receiver<String>, text: &mut String) {
    for line in lines.iter() {
        text.push_str(&line);
        text.push('\n');
    }
}

/// SIGTERM to `ab --against` while the base builds: cargo gets it (its
/// process group), the build is not waited for to its end, and the
/// command ends with 143, saying so, its worktree removed and its lock
/// let go.
#[test]
fn a_sigterm_during_the_base_build_stops_cargo_and_ends_at_once() {
    let mut fake = Against::new();
    let target = fake.ws.join("target");
    let (pair, lines) = fake.start(None, false);
    let build = fake.base_build(&target);
    until("the base's build", || build.join("fake.building").exists());
    fake.signal(pair, libc::SIGTERM);
    let code = fake.wait(pair);
    let mut text = String::new();
    said_to_the_end(&lines, &mut text);
    assert_eq!(code, Some(143), "{text}");
    assert!(
        text.contains(
            "interrupted by SIGTERM while building the base: nothing was run, and its worktree is removed\n"
        ),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(build.join("fake.signalled")).unwrap(),
        "TERM\n",
        "{text}"
    );
    assert!(!fake.dir.path().join(".ws.ab-base").exists(), "{text}");
    assert!(!text.contains("does not build"), "{text}");
    // The lock is free: the next pair would not wait.
    let lock = std::fs::File::open(target.join("ab-against/lock")).unwrap();
    // SAFETY: flock(2) on a descriptor `lock` keeps open.
    let taken = unsafe {
        libc::flock(
            std::os::fd::AsRawFd::as_raw_fd(&lock),
            libc::LOCK_EX | libc::LOCK_NB,
        )
    };
    assert_eq!(taken, 0, "{text}");
}

/// A second `ab --against` waiting for the first's lock wakes on its
/// first Ctrl-C: exit 130, saying so, nothing built.
#[test]
fn a_pair_waiting_for_the_lock_ends_at_its_first_ctrl_c() {
    let mut fake = Against::new();
    let target = fake.ws.join("target");
    std::fs::create_dir_all(target.join("ab-against")).unwrap();
    // The other pair: this test holds the lock.
    let lock = std::fs::File::create(target.join("ab-against/lock")).unwrap();
    // SAFETY: flock(2) on a descriptor `lock` keeps open.
    let taken = unsafe {
        libc::flock(
            std::os::fd::AsRawFd::as_raw_fd(&lock),
            libc::LOCK_EX | libc::LOCK_NB,
        )
    };
    assert_eq!(taken, 0);
    let (pair, lines) = fake.start(None, false);
    let mut text = String::new();
    until("the pair to say that it waits", || {
        said(&lines, &mut text);
        text.contains("is locked): waiting for it\n")
    });
    fake.signal(pair, libc::SIGINT);
    let code = fake.wait(pair);
    said_to_the_end(&lines, &mut text);
    assert_eq!(code, Some(130), "{text}");
    assert!(
        text.contains(
            "interrupted by SIGINT while waiting for another `ab --against` to finish: nothing was built or run\n"
        ),
        "{text}"
    );
    assert!(!fake.base_build(&target).join("fake.building").exists());
    assert!(!fake.dir.path().join(".ws.ab-base").exists(), "{text}");
    drop(lock);
}

/// Two `ab --against` in one repository whose `CARGO_TARGET_DIR`s differ:
/// the second waits for the first (their worktree is the repository's)
/// rather than checking it out again under the first's build; each base
/// is built from its commit, which is recorded beside its binary.
#[test]
fn two_pairs_with_different_target_directories_do_not_build_in_one_worktree() {
    let mut fake = Against::new();
    let (one, two) = (
        fake.dir.path().join("target-one"),
        fake.dir.path().join("target-two"),
    );
    let (first, first_lines) = fake.start(Some(&one), false);
    until("the first base's build", || {
        fake.base_build(&one).join("fake.building").exists()
    });
    let (second, second_lines) = fake.start(Some(&two), false);
    let mut second_text = String::new();
    let second_build = fake.base_build(&two).join("fake.building");
    until("the second pair to wait, or to build", || {
        said(&second_lines, &mut second_text);
        second_text.contains("is locked): waiting for it\n") || second_build.exists()
    });
    assert!(
        !second_build.exists(),
        "the second pair builds while the first does:\n{second_text}"
    );
    assert!(
        second_text.contains("ab: another `ab --against` builds in this repository ("),
        "{second_text}"
    );
    // The first's worktree is still its commit, untouched.
    let tree = fake.dir.path().join(".ws.ab-base");
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(&tree)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&head.stdout).trim(),
        fake.commit,
        "{second_text}"
    );

    std::fs::write(&fake.go, "").unwrap();
    fake.wait(first);
    fake.wait(second);
    let mut first_text = String::new();
    said_to_the_end(&first_lines, &mut first_text);
    said_to_the_end(&second_lines, &mut second_text);
    for (text, target) in [(&first_text, &one), (&second_text, &two)] {
        assert!(text.contains("ab: built the base at HEAD ("), "{text}");
        assert!(!text.contains("does not build"), "{text}");
        assert_eq!(
            std::fs::read_to_string(fake.base_build(target).join("release/profile.built-from"))
                .unwrap(),
            format!("{}\n", fake.commit),
            "{text}"
        );
    }
}

/// A tracked file of the base's worktree that changes while it builds:
/// what was built is not the revision, and is neither used nor taken for
/// a revision that does not build (exit 1, not 2).
#[test]
fn a_base_whose_worktree_changed_while_it_built_is_not_used() {
    let mut fake = Against::new();
    std::fs::write(&fake.go, "").unwrap();
    let (pair, lines) = fake.start(None, true);
    let code = fake.wait(pair);
    let mut text = String::new();
    said_to_the_end(&lines, &mut text);
    assert_eq!(code, Some(125), "{text}");
    assert!(
        text.contains(
            "changed while it was built (changed: Cargo.toml): what was built is not HEAD ("
        ),
        "{text}"
    );
    assert!(!text.contains("ab: built the base"), "{text}");
    assert!(!fake
        .base_build(&fake.ws.join("target"))
        .join("release/profile.built-from")
        .exists());
}
