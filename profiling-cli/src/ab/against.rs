//! The two builds of `ab --against REV`: the base is the workspace's
//! profiling binary built at REV, in a git worktree of its own; the
//! candidate is the binary built from the working tree (uncommitted
//! changes included), or at `--candidate-rev`.
//!
//! A revision's worktree is checked out beside the repository (a sibling
//! directory, so that a path dependency that leaves the repository, as an
//! `init` crate's on this tool does, resolves as it does in the
//! checkout) and removed when the pair is done, also after a signal. Its
//! build goes to `target/ab-against/<side>/target`, kept between pairs:
//! after the worktree is checked out, each file whose content is what the
//! last build of that side compiled gets back the modification time it
//! had then, so that cargo rebuilds only what changed between the two
//! revisions (a checkout would otherwise make every file of the
//! workspace new). Only one `--against` builds in a repository at a time.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use profiling_core::driver::interrupt;

/// What to build at a revision: the package and binary of the workspace's
/// profiling program, with these features.
pub(crate) struct BuildTarget {
    pub package: String,
    pub bin: String,
    pub features: Vec<String>,
    /// `--release`, else cargo's `dev` profile: the candidate's, so that
    /// both sides are built alike.
    pub release: bool,
}

impl BuildTarget {
    /// The profile's directory under a target directory.
    fn profile_dir(&self) -> &'static str {
        if self.release {
            "release"
        } else {
            "debug"
        }
    }
}

impl BuildTarget {
    /// This program: `profile-cli` of `profiling-cli`, with the backends
    /// it was built with.
    pub(crate) fn this_program() -> BuildTarget {
        let mut features = Vec::new();
        if cfg!(feature = "tch") {
            features.push("tch".to_owned());
        }
        if cfg!(feature = "ort") {
            features.push("ort".to_owned());
        }
        BuildTarget {
            package: "profiling-cli".to_owned(),
            bin: "profile-cli".to_owned(),
            features,
            release: !cfg!(debug_assertions),
        }
    }
}

/// What was built: worktrees removed and the lock let go when dropped.
pub(crate) struct Built {
    pub base: (PathBuf, String),
    pub candidate: Option<(PathBuf, String)>,
    _worktrees: Vec<Worktree>,
    _lock: Option<std::fs::File>,
    _hold: interrupt::Hold,
}

impl Built {
    /// The binaries of the pair: the candidate this program unless it
    /// was built at `--candidate-rev`.
    pub(crate) fn into_binaries(self) -> anyhow::Result<super::lockstep::Binaries> {
        let (candidate, candidate_label) = match &self.candidate {
            Some((binary, label)) => (binary.clone(), label.clone()),
            None => (std::env::current_exe()?, "the working tree".to_owned()),
        };
        Ok(super::lockstep::Binaries {
            base: self.base.0.clone(),
            base_label: self.base.1.clone(),
            candidate,
            candidate_label,
            held: Some(Box::new(self)),
        })
    }
}

/// A worktree checked out for a build, removed when dropped.
struct Worktree {
    repository: PathBuf,
    path: PathBuf,
}

impl Worktree {
    /// `commit` checked out at `path` (what an earlier pair left there
    /// removed first).
    fn add(repository: &Path, path: &Path, commit: &str) -> Result<Worktree, String> {
        remove_worktree(repository, path);
        let output = git(
            repository,
            [
                "worktree".into(),
                "add".into(),
                "--detach".into(),
                "--quiet".into(),
                path.as_os_str().to_owned(),
                commit.into(),
            ],
        )?;
        if !output.status.success() {
            return Err(format!(
                "cannot check out {} at {}: {}",
                short(commit),
                path.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(Worktree {
            repository: repository.to_path_buf(),
            path: path.to_path_buf(),
        })
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        remove_worktree(&self.repository, &self.path);
    }
}

fn remove_worktree(repository: &Path, path: &Path) {
    if path.exists() {
        let _ = git(
            repository,
            [
                "worktree".into(),
                "remove".into(),
                "--force".into(),
                path.as_os_str().to_owned(),
            ],
        );
        let _ = std::fs::remove_dir_all(path);
    }
    let _ = git(repository, ["worktree".into(), "prune".into()]);
}

fn git<I: IntoIterator<Item = OsString>>(
    dir: &Path,
    args: I,
) -> Result<std::process::Output, String> {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("cannot run git: {error}"))
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// Builds the base at `against` (and the candidate at `candidate_rev`)
/// for the workspace `workspace`; `Err` with the exit code after saying
/// why not: 2 for a revision that is not one or does not build.
pub(crate) fn prepare(
    against: &str,
    candidate_rev: Option<&str>,
    workspace: &Path,
    build: &BuildTarget,
    err: &mut dyn Write,
) -> anyhow::Result<Result<Built, u8>> {
    // From here, a first signal does not end the process before the
    // worktrees are removed: a build it stops fails, and that is said.
    let hold = interrupt::Hold::new();
    let workspace = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    let top = match git(&workspace, ["rev-parse".into(), "--show-toplevel".into()]) {
        Ok(output) if output.status.success() => {
            PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
        }
        _ => {
            writeln!(
                err,
                "error: --against: {} is not in a git checkout (a revision is a git commit)",
                workspace.display()
            )?;
            return Ok(Err(crate::EXIT_USAGE));
        }
    };
    let top = top.canonicalize().unwrap_or(top);
    let inside = workspace.strip_prefix(&top).unwrap_or(Path::new(""));
    let mut revisions = vec![("base", "--against", against)];
    if let Some(rev) = candidate_rev {
        revisions.push(("candidate", "--candidate-rev", rev));
    }
    let mut commits = Vec::new();
    for &(_, option, rev) in &revisions {
        match git(
            &top,
            [
                "rev-parse".into(),
                "--verify".into(),
                "--quiet".into(),
                "--end-of-options".into(),
                format!("{rev}^{{commit}}").into(),
            ],
        ) {
            Ok(output) if output.status.success() => {
                commits.push(String::from_utf8_lossy(&output.stdout).trim().to_owned());
            }
            Ok(_) => {
                writeln!(
                    err,
                    "error: {option} {rev}: no such revision in {} (a commit, branch or tag that `git rev-parse` knows)",
                    top.display()
                )?;
                return Ok(Err(crate::EXIT_USAGE));
            }
            Err(message) => {
                writeln!(err, "error: {option} {rev}: {message}")?;
                return Ok(Err(crate::EXIT_USAGE));
            }
        }
    }
    let target = match target_directory(&workspace) {
        Ok(target) => target,
        Err(message) => {
            writeln!(err, "error: --against: {message}")?;
            return Ok(Err(crate::EXIT_USAGE));
        }
    };
    let builds = target.join("ab-against");
    std::fs::create_dir_all(&builds)
        .map_err(|error| anyhow::anyhow!("{}: {error}", builds.display()))?;
    let lock = lock(&builds.join("lock"), err)?;
    let name = top.file_name().map_or_else(
        || "repository".to_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    let parent = top.parent().unwrap_or(&top).to_path_buf();
    if !build.release {
        writeln!(
            err,
            "note: this program is a debug build: the base is built as one too, so that the two sides are built alike (a release build, as `cargo build --release` makes, times what ships)"
        )?;
    }
    let mut worktrees = Vec::new();
    let mut binaries = Vec::new();
    for ((side, _, rev), commit) in revisions.into_iter().zip(&commits) {
        let tree = parent.join(format!(".{name}.ab-{side}"));
        let worktree = match Worktree::add(&top, &tree, commit) {
            Ok(worktree) => worktree,
            Err(message) => {
                writeln!(err, "error: --against: {message}")?;
                return Ok(Err(crate::EXIT_TARGET_FAILED));
            }
        };
        let side_dir = builds.join(side);
        // Only a release build is copied: a debug target directory holds
        // every test's build too, gigabytes, and a dev build is quick.
        if build.release {
            seed(
                &target.join("release"),
                &side_dir.join("target/release"),
                side,
                err,
            )?;
        }
        let record = side_dir.join("sources.tsv");
        let entries = tree_entries(&tree).unwrap_or_default();
        restore_times(&tree, &entries, &record);
        // Rewritten once this build succeeds: until then, the target
        // directory may hold what a build of other files made.
        let _ = std::fs::remove_file(&record);
        // A commit named by its id is named once.
        let label = if commit.starts_with(&rev.to_ascii_lowercase()) {
            short(commit).to_owned()
        } else {
            format!("{rev} ({})", short(commit))
        };
        writeln!(
            err,
            "ab: building the {side} at {label} in {} (cargo's output in {})",
            tree.display(),
            side_dir.join("target").display()
        )?;
        let started = Instant::now();
        let manifest = tree.join(inside).join("Cargo.toml");
        let krate = tree
            .join(inside)
            .join(profiling_extract::workspace::PROFILING_DIR);
        let mut command = profiling_extract::workspace::cargo_for_snippets(&krate);
        command
            .arg("build")
            .args(build.release.then_some("--release"))
            .args(["-p", &build.package, "--bin", &build.bin])
            .arg("--manifest-path")
            .arg(&manifest)
            .env("CARGO_TARGET_DIR", side_dir.join("target"));
        if !build.features.is_empty() {
            command.args(["--features", &build.features.join(",")]);
        }
        let built = run_build(command, err)?;
        if let Some(signal) = interrupt::received() {
            interrupt::acknowledge();
            writeln!(
                err,
                "interrupted by {} while building the {side}: nothing was run, and its worktree is removed",
                profiling_core::driver::manifest::signal_name(signal)
            )?;
            return Ok(Err(interrupt::exit_code(signal)));
        }
        if let Err(first_error) = built {
            writeln!(
                err,
                "error: the {side} at {label} does not build (`cargo build{} -p {} --bin {}`): {first_error}",
                if build.release { " --release" } else { "" },
                build.package,
                build.bin
            )?;
            return Ok(Err(crate::EXIT_USAGE));
        }
        write_times(&tree, &entries, &record);
        writeln!(
            err,
            "ab: built the {side} at {label} in {:.1} s",
            started.elapsed().as_secs_f64()
        )?;
        binaries.push((
            side_dir
                .join("target")
                .join(build.profile_dir())
                .join(&build.bin),
            label,
        ));
        worktrees.push(worktree);
    }
    let mut binaries = binaries.into_iter();
    Ok(Ok(Built {
        base: binaries.next().expect("the base is built"),
        candidate: binaries.next(),
        _worktrees: worktrees,
        _lock: lock,
        _hold: hold,
    }))
}

/// The first build of a side starts from what the workspace's own
/// release build compiled (`from`, when there is one): its dependencies,
/// compiled with the same profile, are then not compiled again. Copied
/// with their modification times, so that cargo finds the outputs of
/// unchanged dependencies up to date, and older than the worktree's
/// checked-out files, whose crates it rebuilds. A copy that fails leaves
/// a cold build, which is slower, not wrong.
fn seed(from: &Path, to: &Path, side: &str, err: &mut dyn Write) -> std::io::Result<()> {
    if to.exists() || !from.join(".fingerprint").is_dir() {
        return Ok(());
    }
    writeln!(
        err,
        "ab: the {side}'s first build starts from the dependencies built in {}",
        from.display()
    )?;
    let partial = to.with_extension("seeding");
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&partial)?;
    let copied = [".fingerprint", "build", "deps"]
        .into_iter()
        .filter(|dir| from.join(dir).is_dir())
        .all(|dir| {
            Command::new("cp")
                .arg("-a")
                .arg(from.join(dir))
                .arg(partial.join(dir))
                .stdin(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        });
    if copied {
        std::fs::rename(&partial, to)?;
    } else {
        let _ = std::fs::remove_dir_all(&partial);
        writeln!(
            err,
            "ab: could not copy {} (the {side} is built from the start)",
            from.display()
        )?;
    }
    Ok(())
}

/// Where cargo builds the workspace: its target directory.
fn target_directory(workspace: &Path) -> Result<PathBuf, String> {
    let output = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(workspace.join("Cargo.toml"))
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|error| format!("cannot run cargo: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "`cargo metadata` in {}: {}",
            workspace.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|error| format!("`cargo metadata`: {error}"))?;
    metadata["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| "`cargo metadata` names no target directory".to_owned())
}

/// Holds `path` locked (another `--against` in this repository waits).
fn lock(path: &Path, err: &mut dyn Write) -> anyhow::Result<Option<std::fs::File>> {
    use std::os::fd::AsRawFd;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|error| anyhow::anyhow!("{}: {error}", path.display()))?;
    // SAFETY: flock(2) on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        writeln!(
            err,
            "ab: another `ab --against` builds in this repository ({} is locked): waiting for it",
            path.display()
        )?;
        // SAFETY: as above.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            anyhow::bail!("{}: {}", path.display(), std::io::Error::last_os_error());
        }
    }
    Ok(Some(file))
}

/// Runs a build, its output shown as it comes; the compiler's first error
/// when it fails.
fn run_build(mut command: Command, err: &mut dyn Write) -> anyhow::Result<Result<(), String>> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| anyhow::anyhow!("cannot run cargo: {error}"))?;
    let mut said = Vec::new();
    for line in BufReader::new(child.stderr.take().expect("piped")).lines() {
        let Ok(line) = line else { break };
        writeln!(err, "{line}")?;
        said.push(line);
    }
    let status = child.wait()?;
    if status.success() {
        return Ok(Ok(()));
    }
    Ok(Err(first_error(&said)))
}

/// The first `error` of cargo's output and the lines under it, up to the
/// next blank line; the last lines when there is none.
fn first_error(lines: &[String]) -> String {
    match lines.iter().position(|line| line.starts_with("error")) {
        Some(start) => lines[start..]
            .iter()
            .take_while(|line| !line.trim().is_empty())
            .cloned()
            .collect::<Vec<_>>()
            .join("\n"),
        None => lines[lines.len().saturating_sub(10)..].join("\n"),
    }
}

/// A file or directory of a worktree's commit: git's object id, and its
/// path.
type Entry = (String, String);

/// The files and directories of the commit checked out in `tree`
/// (symbolic links and submodules left out).
fn tree_entries(tree: &Path) -> Option<Vec<Entry>> {
    let output = git(
        tree,
        ["ls-tree", "-r", "-t", "-z", "--full-tree", "HEAD"].map(OsString::from),
    )
    .ok()?;
    if !output.status.success() {
        return None;
    }
    Some(
        output
            .stdout
            .split(|&byte| byte == 0)
            .filter_map(|entry| {
                let entry = std::str::from_utf8(entry).ok()?;
                let (meta, path) = entry.split_once('\t')?;
                let mut words = meta.split(' ');
                let (mode, kind, id) = (words.next()?, words.next()?, words.next()?);
                (mode != "120000" && kind != "commit").then(|| (id.to_owned(), path.to_owned()))
            })
            .collect(),
    )
}

/// Gives each entry whose content is what the last build compiled (the
/// same object id at the same path in `record`) the modification time it
/// had then; every other file keeps the checkout's (now).
fn restore_times(tree: &Path, entries: &[Entry], record: &Path) {
    let Ok(text) = std::fs::read_to_string(record) else {
        return;
    };
    let recorded: std::collections::HashMap<(&str, &str), u64> = text
        .lines()
        .filter_map(|line| {
            let mut fields = line.splitn(3, '\t');
            let (id, nanos, path) = (fields.next()?, fields.next()?, fields.next()?);
            Some(((path, id), nanos.parse().ok()?))
        })
        .collect();
    for (id, path) in entries {
        if let Some(&nanos) = recorded.get(&(path.as_str(), id.as_str())) {
            let time = SystemTime::UNIX_EPOCH + Duration::from_nanos(nanos);
            if let Ok(file) = std::fs::File::open(tree.join(path)) {
                let _ = file.set_times(
                    std::fs::FileTimes::new()
                        .set_modified(time)
                        .set_accessed(time),
                );
            }
        }
    }
}

/// Records each entry's object id and modification time, for the next
/// build of this side.
fn write_times(tree: &Path, entries: &[Entry], record: &Path) {
    let mut text = String::new();
    for (id, path) in entries {
        let Ok(modified) = std::fs::symlink_metadata(tree.join(path)).and_then(|m| m.modified())
        else {
            continue;
        };
        let Ok(nanos) = modified.duration_since(SystemTime::UNIX_EPOCH) else {
            continue;
        };
        text.push_str(&format!("{id}\t{}\t{path}\n", nanos.as_nanos()));
    }
    if let Some(dir) = record.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = profiling_core::driver::run_dir::write_atomically(record, text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::first_error;

    #[test]
    fn the_first_error_is_the_compiler_s_first_message() {
        let said: Vec<String> = [
            "   Compiling app v0.1.0",
            "warning: unused variable: `x`",
            "",
            "error[E0425]: cannot find value `y` in this scope",
            " --> src/lib.rs:3:5",
            "  |",
            "",
            "error: could not compile `app`",
        ]
        .map(str::to_owned)
        .to_vec();
        assert_eq!(
            first_error(&said),
            "error[E0425]: cannot find value `y` in this scope\n --> src/lib.rs:3:5\n  |"
        );
    }
}
