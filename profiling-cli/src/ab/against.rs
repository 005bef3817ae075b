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
//! workspace new).
//!
//! One `--against` at a time builds in a repository (a lock in its git
//! directory: the worktrees are the repository's) and with a target
//! directory (a lock in `target/ab-against/`: the builds are the target
//! directory's), each lock held until the pair is done: two pairs whose
//! `CARGO_TARGET_DIR`s differ never check out over each other's build,
//! nor do two repositories that share one target directory build over
//! each other. The target directory's lock is taken first, the
//! repository's second, always in that order. A side's worktree is checked before
//! and after its build (its HEAD the revision's commit, no tracked file
//! changed), and the commit a binary was built from is recorded beside it
//! (`<binary>.built-from`) and read back before the binary is used.
//!
//! Every wait here wakes on Ctrl-C or SIGTERM: the lock's (polled), and
//! each child's (cargo, `cp`), which is started in a process group of its
//! own and passed the signal, so that a build stops at once and says so.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use profiling_core::driver::files::write_atomically;
use profiling_core::driver::interrupt;
use profiling_core::driver::manifest::signal_name;

/// How often a wait looks whether a signal asked this process to stop.
const POLL: Duration = Duration::from_millis(25);

/// What to build at a revision: the package and binary of the workspace's
/// profiling program, with these features, in this cargo profile.
pub(crate) struct BuildTarget {
    pub package: String,
    pub bin: String,
    pub features: Vec<String>,
    /// The candidate's cargo profile, so that both sides are built alike.
    pub profile: CargoProfile,
}

/// A cargo profile a binary is built in: `release`, `dev`, or one of the
/// workspace's own (`[profile.NAME]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CargoProfile(String);

impl CargoProfile {
    pub(crate) fn release() -> CargoProfile {
        CargoProfile("release".to_owned())
    }

    /// `name` as cargo's `--profile` takes it (`None`: release).
    pub(crate) fn named(name: Option<&str>) -> CargoProfile {
        CargoProfile(name.unwrap_or("release").to_owned())
    }

    pub(crate) fn is_dev(&self) -> bool {
        matches!(self.0.as_str(), "dev" | "test")
    }

    /// The profile's directory under a target directory, as cargo names it.
    pub(crate) fn dir(&self) -> &str {
        match self.0.as_str() {
            "dev" | "test" => "debug",
            "bench" => "release",
            name => name,
        }
    }

    /// Cargo's arguments that select it.
    pub(crate) fn args(&self) -> Vec<String> {
        match self.0.as_str() {
            "release" => vec!["--release".to_owned()],
            "dev" => Vec::new(),
            name => vec!["--profile".to_owned(), name.to_owned()],
        }
    }

    /// Those arguments as they are typed, each after a space.
    pub(crate) fn shown(&self) -> String {
        self.args().iter().map(|a| format!(" {a}")).collect()
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
            profile: if cfg!(debug_assertions) {
                CargoProfile::named(Some("dev"))
            } else {
                CargoProfile::release()
            },
        }
    }
}

/// What was built: worktrees removed and the lock let go when dropped.
pub(crate) struct Built {
    pub base: (PathBuf, String),
    pub candidate: Option<(PathBuf, String)>,
    _worktrees: Vec<Worktree>,
    _locks: Vec<std::fs::File>,
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
    let mut revisions = vec![("base", "--against", against)];
    if let Some(rev) = candidate_rev {
        revisions.push(("candidate", "--candidate-rev", rev));
    }
    let (top, commits) = match resolve(&workspace, &revisions, err)? {
        Ok(resolved) => resolved,
        Err(code) => return Ok(Err(code)),
    };
    let target = match target_directory(&workspace) {
        Ok(target) => target,
        Err(_) if interrupt::received().is_some() => {
            let signal = interrupt::received().unwrap_or(0);
            return Ok(Err(interrupted(signal, "base", err)?));
        }
        Err(message) => {
            writeln!(err, "error: --against: {message}")?;
            return Ok(Err(crate::exit::EXIT_USAGE));
        }
    };
    let builds = target.join("ab-against");
    std::fs::create_dir_all(&builds)
        .map_err(|error| anyhow::anyhow!("{}: {error}", builds.display()))?;
    let locks = match take_locks(&top, &builds, err)? {
        Ok(locks) => locks,
        Err(code) => return Ok(Err(code)),
    };
    if build.profile.is_dev() {
        crate::streams::note(
            err,
            format_args!("both sides are debug builds (cargo's `dev` profile), built alike; a release build, as `cargo build --release` makes, times what ships"),
        )?;
    }
    let place = Place {
        inside: workspace
            .strip_prefix(&top)
            .unwrap_or(Path::new(""))
            .to_path_buf(),
        top,
        target,
        builds,
    };
    let mut worktrees = Vec::new();
    let mut binaries = Vec::new();
    for ((side, _, rev), commit) in revisions.into_iter().zip(&commits) {
        match build_side(&place, (side, rev, commit), build, err)? {
            Ok((worktree, binary, label)) => {
                binaries.push((binary, label, commit.clone()));
                worktrees.push(worktree);
            }
            Err(code) => return Ok(Err(code)),
        }
    }
    // Each binary is the one its revision's build made, read back from
    // its record before it is used.
    for (binary, _, commit) in &binaries {
        if let Err(message) = check_built_from(binary, commit) {
            writeln!(err, "error: --against: {message}: not used")?;
            return Ok(Err(crate::exit::EXIT_TARGET_FAILED));
        }
    }
    let mut binaries = binaries
        .into_iter()
        .map(|(binary, label, _)| (binary, label));
    Ok(Ok(Built {
        base: binaries.next().expect("the base is built"),
        candidate: binaries.next(),
        _worktrees: worktrees,
        _locks: locks,
        _hold: hold,
    }))
}

/// Where the sides are built: the repository's top, the workspace inside
/// it, the workspace's target directory and `ab-against/` in it.
struct Place {
    top: PathBuf,
    inside: PathBuf,
    target: PathBuf,
    builds: PathBuf,
}

/// The top of the git checkout `workspace` is in, and the commit of each
/// revision (`(side, option, rev)`); `Err` with the exit code, said, when
/// there is no checkout or a revision is not one.
fn resolve(
    workspace: &Path,
    revisions: &[(&str, &str, &str)],
    err: &mut dyn Write,
) -> std::io::Result<Result<(PathBuf, Vec<String>), u8>> {
    let top = match git(workspace, ["rev-parse".into(), "--show-toplevel".into()]) {
        Ok(output) if output.status.success() => {
            PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
        }
        _ => {
            writeln!(
                err,
                "error: --against: {} is not in a git checkout (a revision is a git commit)",
                workspace.display()
            )?;
            return Ok(Err(crate::exit::EXIT_USAGE));
        }
    };
    let top = top.canonicalize().unwrap_or(top);
    let mut commits = Vec::new();
    for &(_, option, rev) in revisions {
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
                return Ok(Err(crate::exit::EXIT_USAGE));
            }
            Err(message) => {
                writeln!(err, "error: {option} {rev}: {message}")?;
                return Ok(Err(crate::exit::EXIT_USAGE));
            }
        }
    }
    Ok(Ok((top, commits)))
}

/// One build at a time with this target directory (`builds`), and one
/// in this repository (a lock in its git directory), taken in that order;
/// `Err` with the exit code, said, when a signal came while waiting.
fn take_locks(
    top: &Path,
    builds: &Path,
    err: &mut dyn Write,
) -> anyhow::Result<Result<Vec<std::fs::File>, u8>> {
    let repository_lock = match git(
        top,
        [
            "rev-parse".into(),
            "--path-format=absolute".into(),
            "--git-common-dir".into(),
        ],
    ) {
        Ok(output) if output.status.success() => {
            PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
                .join("profile-cli-ab-against.lock")
        }
        Ok(output) => {
            writeln!(
                err,
                "error: --against: `git rev-parse --git-common-dir` in {}: {}",
                top.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            )?;
            return Ok(Err(crate::exit::EXIT_TARGET_FAILED));
        }
        Err(message) => {
            writeln!(err, "error: --against: {message}")?;
            return Ok(Err(crate::exit::EXIT_TARGET_FAILED));
        }
    };
    let mut locks = Vec::new();
    for (path, whose) in [
        (builds.join("lock"), "with this target directory"),
        (repository_lock, "in this repository"),
    ] {
        match lock(&path, whose, err)? {
            Ok(lock) => locks.push(lock),
            Err(signal) => {
                interrupt::acknowledge();
                writeln!(
                    err,
                    "interrupted by {} while waiting for another `ab --against` to finish: nothing was built or run",
                    signal_name(signal)
                )?;
                return Ok(Err(interrupt::exit_code(signal)));
            }
        }
    }
    Ok(Ok(locks))
}

/// Builds one side (`side` at `rev`, which is `commit`) in a worktree of
/// its own beside the repository, into `ab-against/<side>/target`, the
/// worktree checked before and after and the commit recorded beside the
/// binary: the worktree, the binary and how the side is named. `Err` with
/// the exit code, said, when it cannot be.
fn build_side(
    place: &Place,
    (side, rev, commit): (&str, &str, &str),
    build: &BuildTarget,
    err: &mut dyn Write,
) -> anyhow::Result<Result<(Worktree, PathBuf, String), u8>> {
    if let Some(signal) = interrupt::received() {
        return Ok(Err(interrupted(signal, side, err)?));
    }
    let (worktree, tree) = match add_worktree(place, side, commit, err)? {
        Ok(added) => added,
        Err(code) => return Ok(Err(code)),
    };
    let side_dir = place.builds.join(side);
    // Only an optimized build is copied: a debug target directory holds
    // every test's build too, gigabytes, and a dev build is quick.
    if !build.profile.is_dev() {
        let dir = build.profile.dir();
        let from = place.target.join(dir);
        if let Err(signal) = seed(&from, &side_dir.join("target").join(dir), side, err)? {
            return Ok(Err(interrupted(signal, side, err)?));
        }
    }
    let binary = side_dir
        .join("target")
        .join(build.profile.dir())
        .join(&build.bin);
    let built_from = built_from_record(&binary);
    // Written again only once this build is checked: until then, the
    // binary there may be another revision's.
    let _ = std::fs::remove_file(&built_from);
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
    let built = run_build(build.command(&tree.join(&place.inside), &side_dir), err)?;
    if let Some(signal) = interrupt::received() {
        return Ok(Err(interrupted(signal, side, err)?));
    }
    // What was built is the revision only if nothing changed the
    // worktree meanwhile: else neither a verdict nor a binary.
    if let Err(message) = check_checkout(&tree, commit) {
        writeln!(
            err,
            "error: --against: the {side}'s worktree {} changed while it was built ({message}): what was built is not {label}, and is not used",
            tree.display()
        )?;
        // Neither good nor bad: `git bisect run` skips the revision
        // rather than take this for a verdict.
        return Ok(Err(crate::exit::EXIT_CANNOT_TEST));
    }
    if let Err(first_error) = built {
        writeln!(
            err,
            "error: the {side} at {label} does not build (`cargo build{} -p {} --bin {}`): {first_error}",
            build.profile.shown(),
            build.package,
            build.bin
        )?;
        return Ok(Err(crate::exit::EXIT_USAGE));
    }
    write_times(&tree, &entries, &record);
    if let Err(error) = write_atomically(&built_from, format!("{commit}\n").as_bytes()) {
        writeln!(
            err,
            "error: --against: cannot record what the {side} was built from in {}: {error}",
            built_from.display()
        )?;
        return Ok(Err(crate::exit::EXIT_TARGET_FAILED));
    }
    writeln!(
        err,
        "ab: built the {side} at {label} in {:.1} s",
        started.elapsed().as_secs_f64()
    )?;
    Ok(Ok((worktree, binary, label)))
}

/// The worktree of `side` beside the repository, `commit` checked out
/// and checked; `Err` with the exit code, said, when it cannot be.
fn add_worktree(
    place: &Place,
    side: &str,
    commit: &str,
    err: &mut dyn Write,
) -> std::io::Result<Result<(Worktree, PathBuf), u8>> {
    let name = place.top.file_name().map_or_else(
        || "repository".to_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    let beside = place.top.parent().unwrap_or(&place.top);
    let tree = beside.join(format!(".{name}.ab-{side}"));
    let worktree = match Worktree::add(&place.top, &tree, commit) {
        Ok(worktree) => worktree,
        Err(message) => {
            writeln!(err, "error: --against: {message}")?;
            return Ok(Err(crate::exit::EXIT_TARGET_FAILED));
        }
    };
    if let Err(message) = check_checkout(&tree, commit) {
        writeln!(
            err,
            "error: --against: the {side}'s worktree {} is not {} as checked out: {message}",
            tree.display(),
            short(commit)
        )?;
        return Ok(Err(crate::exit::EXIT_TARGET_FAILED));
    }
    Ok(Ok((worktree, tree)))
}

impl BuildTarget {
    /// The cargo command that builds this binary from the workspace
    /// `workspace` (a side's worktree) into `side_dir/target`.
    fn command(&self, workspace: &Path, side_dir: &Path) -> Command {
        let manifest = workspace.join("Cargo.toml");
        let krate = workspace.join(profiling_extract::workspace::PROFILING_DIR);
        let mut command = profiling_extract::workspace::cargo_for_snippets(&krate);
        command
            .arg("build")
            .args(self.profile.args())
            .args(["-p", &self.package, "--bin", &self.bin])
            .arg("--manifest-path")
            .arg(&manifest)
            .env("CARGO_TARGET_DIR", side_dir.join("target"));
        if !self.features.is_empty() {
            command.args(["--features", &self.features.join(",")]);
        }
        command
    }
}

/// The first build of a side starts from what the workspace's own
/// release build compiled (`from`, when there is one): its dependencies,
/// compiled with the same profile, are then not compiled again. Copied
/// with their modification times, so that cargo finds the outputs of
/// unchanged dependencies up to date, and older than the worktree's
/// checked-out files, whose crates it rebuilds. A copy that fails leaves
/// a cold build, which is slower, not wrong.
///
/// `Err` with the signal that stopped the copy (the copy removed).
fn seed(
    from: &Path,
    to: &Path,
    side: &str,
    err: &mut dyn Write,
) -> std::io::Result<Result<(), i32>> {
    if to.exists() || !from.join(".fingerprint").is_dir() {
        return Ok(Ok(()));
    }
    writeln!(
        err,
        "ab: the {side}'s first build starts from the dependencies built in {}",
        from.display()
    )?;
    let partial = to.with_extension("seeding");
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&partial)?;
    let mut copied = true;
    for dir in [".fingerprint", "build", "deps"] {
        if !from.join(dir).is_dir() {
            continue;
        }
        let mut copy = Command::new("cp");
        copy.arg("-a")
            .arg(from.join(dir))
            .arg(partial.join(dir))
            .stdin(Stdio::null())
            .process_group(0);
        let status = match copy.spawn() {
            Ok(mut child) => wait_for(&mut child)?,
            Err(_) => Ok(None),
        };
        match status {
            Ok(status) if status.is_some_and(|s| s.success()) => {}
            Ok(_) => {
                copied = false;
                break;
            }
            Err(signal) => {
                let _ = std::fs::remove_dir_all(&partial);
                return Ok(Err(signal));
            }
        }
    }
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
    Ok(Ok(()))
}

/// Where cargo builds the workspace: its target directory.
fn target_directory(workspace: &Path) -> Result<PathBuf, String> {
    let command = cargo_metadata::MetadataCommand::new()
        .cargo_path(profiling_extract::cargo_program())
        .manifest_path(workspace.join("Cargo.toml"))
        .no_deps()
        .cargo_command();
    // Cargo may wait for its package cache's lock: a signal ends the wait.
    let output = match output_of(command).map_err(|error| format!("cannot run cargo: {error}"))? {
        Ok(output) => output,
        Err(signal) => {
            return Err(format!(
                "`cargo metadata` stopped by {}",
                signal_name(signal)
            ))
        }
    };
    if !output.status.success() {
        return Err(format!(
            "`cargo metadata` in {}: {}",
            workspace.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let metadata = std::str::from_utf8(&output.stdout)
        .map_err(|error| error.to_string())
        .and_then(|text| {
            cargo_metadata::MetadataCommand::parse(text).map_err(|error| error.to_string())
        })
        .map_err(|error| format!("`cargo metadata`: {error}"))?;
    Ok(metadata.target_directory.into_std_path_buf())
}

/// Holds `path` locked (another `--against` that takes it waits; `whose`
/// says where it builds); `Err` with the signal that ended the wait. The
/// lock is tried again and again rather than waited for, so that a
/// signal is acted on at once.
fn lock(
    path: &Path,
    whose: &str,
    err: &mut dyn Write,
) -> anyhow::Result<Result<std::fs::File, i32>> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|error| anyhow::anyhow!("{}: {error}", path.display()))?;
    let taken = |file: &std::fs::File| -> anyhow::Result<bool> {
        use std::os::fd::AsRawFd;
        // SAFETY: flock(2) on a descriptor `file` keeps open.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let error = std::io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EWOULDBLOCK) | Some(libc::EINTR) => Ok(false),
            _ => anyhow::bail!("{}: {error}", path.display()),
        }
    };
    if !taken(&file)? {
        writeln!(
            err,
            "ab: another `ab --against` builds {whose} ({} is locked): waiting for it",
            path.display()
        )?;
        while !taken(&file)? {
            if let Some(signal) = interrupt::received() {
                return Ok(Err(signal));
            }
            std::thread::sleep(POLL);
        }
    }
    Ok(Ok(file))
}

/// Says that `signal` stopped the build of `side` before anything ran;
/// the exit code it asks for.
fn interrupted(signal: i32, side: &str, err: &mut dyn Write) -> std::io::Result<u8> {
    interrupt::acknowledge();
    writeln!(
        err,
        "interrupted by {} while building the {side}: nothing was run, and its worktree is removed",
        signal_name(signal)
    )?;
    Ok(interrupt::exit_code(signal))
}

/// Waits for `child`, started in a process group of its own: `Err` with
/// the signal this process received meanwhile, passed on to the child's
/// whole group (cargo and the compilers it runs), once the child ended.
fn wait_for(child: &mut Child) -> std::io::Result<Result<Option<ExitStatus>, i32>> {
    loop {
        if let Some(signal) = interrupt::received() {
            stop_group(child, signal);
            let _ = child.wait();
            return Ok(Err(signal));
        }
        if let Some(status) = child.try_wait()? {
            return Ok(Ok(Some(status)));
        }
        std::thread::sleep(POLL);
    }
}

/// Passes `signal` to the process group `child` leads.
fn stop_group(child: &Child, signal: i32) {
    if let Ok(group) = i32::try_from(child.id()) {
        // SAFETY: kill(2) on the group of a child not yet waited for, so
        // that its id is not another process's.
        unsafe { libc::kill(-group, signal) };
    }
}

/// `command`'s output, as `Command::output` gives it, or the signal that
/// stopped it (see [`wait_for`]).
fn output_of(mut command: Command) -> std::io::Result<Result<std::process::Output, i32>> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = read(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = read(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let status = match wait_for(&mut child)? {
        Ok(status) => status.expect("waited for"),
        Err(signal) => return Ok(Err(signal)),
    };
    Ok(Ok(std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }))
}

/// Runs a build, its output shown as it comes; the compiler's first error
/// when it fails. A signal received meanwhile is passed on to cargo's
/// process group, and the build is waited for no longer than it takes
/// cargo to end (the caller sees the signal).
fn run_build(mut command: Command, err: &mut dyn Write) -> anyhow::Result<Result<(), String>> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|error| anyhow::anyhow!("cannot run cargo: {error}"))?;
    let (lines, said_lines) = mpsc::channel();
    let stderr = child.stderr.take().expect("piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut said = Vec::new();
    loop {
        if let Some(signal) = interrupt::received() {
            stop_group(&child, signal);
            let _ = child.wait();
            return Ok(Err(format!("stopped by {}", signal_name(signal))));
        }
        match said_lines.recv_timeout(POLL) {
            Ok(line) => {
                // The build goes on whether or not its output can be shown.
                let _ = writeln!(err, "{line}");
                said.push(line);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let status = match wait_for(&mut child)? {
        Ok(status) => status.expect("waited for"),
        Err(signal) => return Ok(Err(format!("stopped by {}", signal_name(signal)))),
    };
    if status.success() {
        return Ok(Ok(()));
    }
    Ok(Err(first_error(&said)))
}

/// Where the commit a binary was built from is recorded: beside it.
fn built_from_record(binary: &Path) -> PathBuf {
    let name = binary
        .file_name()
        .map_or_else(|| "binary".into(), |n| n.to_string_lossy());
    binary.with_file_name(format!("{name}.built-from"))
}

/// Whether `binary` is there and its record says it was built from
/// `commit`; why not.
fn check_built_from(binary: &Path, commit: &str) -> Result<(), String> {
    if !binary.is_file() {
        return Err(format!("the build made no {}", binary.display()));
    }
    let record = built_from_record(binary);
    match std::fs::read_to_string(&record) {
        Ok(text) if text.trim() == commit => Ok(()),
        Ok(text) => Err(format!(
            "{} was built from {}, not {} ({})",
            binary.display(),
            short(text.trim()),
            short(commit),
            record.display()
        )),
        Err(error) => Err(format!("{}: {error}", record.display())),
    }
}

/// Whether the worktree `tree` is `commit` as checked out: its HEAD that
/// commit, and no tracked file changed (a `Cargo.lock` that cargo brought
/// up to date aside: the build resolved what the revision's manifests
/// say). Why not, naming what differs.
fn check_checkout(tree: &Path, commit: &str) -> Result<(), String> {
    let head = git(tree, ["rev-parse".into(), "--verify".into(), "HEAD".into()])?;
    if !head.status.success() {
        return Err(format!(
            "`git rev-parse HEAD`: {}",
            String::from_utf8_lossy(&head.stderr).trim()
        ));
    }
    let head = String::from_utf8_lossy(&head.stdout).trim().to_owned();
    if head != commit {
        return Err(format!(
            "its HEAD is {}, not {}",
            short(&head),
            short(commit)
        ));
    }
    let status = git(
        tree,
        ["status", "--porcelain=v1", "-z", "--untracked-files=no"].map(OsString::from),
    )?;
    if !status.status.success() {
        return Err(format!(
            "`git status`: {}",
            String::from_utf8_lossy(&status.stderr).trim()
        ));
    }
    let changed: Vec<String> = status
        .stdout
        .split(|&byte| byte == 0)
        .filter_map(|entry| std::str::from_utf8(entry).ok())
        .filter_map(|entry| entry.get(3..))
        .filter(|path| {
            !path.is_empty() && Path::new(path).file_name() != Some("Cargo.lock".as_ref())
        })
        .map(str::to_owned)
        .collect();
    if !changed.is_empty() {
        return Err(format!("changed: {}", changed.join(", ")));
    }
    Ok(())
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
    let _ = write_atomically(record, text.as_bytes());
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
