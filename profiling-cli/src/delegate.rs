//! One command everywhere: the ten commands of `DELEGATED` (`list`,
//! `run`, `compare`, `baselines`, `report`, `cache`, `runs`, `sweep`, `ab`
//! and `load`), run inside another workspace that has its own profiling
//! crate (`profile-cli init` made it), build that workspace's `profile`
//! binary and go through it, so that they list and run that workspace's
//! targets and find its runs and image cache:
//!
//! - `list`, `cache` and `runs` are run by the binary, with the same arguments;
//! - `run`, `sweep`, `ab` and `load` are run by the binary, and what it
//!   leaves to do (the comparison, the pages, the baseline saved) is done
//!   here; `ab --against` builds the base here first, and `ab
//!   --until-decided` runs the binary a stage at a time;
//! - `compare`, `baselines` and `report` ask the binary where its profiles'
//!   runs are, and read them here.
//!
//! Inside the workspace this binary was built from, and with
//! `--no-delegate`, nothing is delegated.

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use profiling_extract::workspace::{cargo_for_snippets, find_workspace, profiling_crate};

/// The commands that need a workspace's own targets.
const DELEGATED: &[&str] = &[
    "list",
    "run",
    "compare",
    "baselines",
    "report",
    "cache",
    "runs",
    "sweep",
    "ab",
    "load",
];

/// What the arguments say about delegation.
struct Asked {
    command: Option<String>,
    workspace: Option<PathBuf>,
    no_delegate: bool,
}

fn read_arguments(args: &[OsString]) -> Asked {
    let mut asked = Asked {
        command: None,
        workspace: None,
        no_delegate: false,
    };
    let mut words = args.iter().skip(1);
    while let Some(word) = words.next() {
        let text = word.to_string_lossy();
        if text == "--no-delegate" {
            asked.no_delegate = true;
        } else if text == "--workspace" {
            asked.workspace = words.next().map(PathBuf::from);
        } else if let Some(dir) = text.strip_prefix("--workspace=") {
            asked.workspace = Some(PathBuf::from(dir));
        } else if text == "--" {
            break;
        } else if asked.command.is_none() && !text.starts_with('-') {
            asked.command = Some(text.into_owned());
        }
    }
    asked
}

/// The profiling crate of the workspace `args` point at, when the command
/// is one to delegate and that workspace is not `build_root`: its
/// directory and package.
fn delegate_to(args: &[OsString], build_root: &Path) -> Option<(PathBuf, PathBuf, String)> {
    let asked = read_arguments(args);
    if asked.no_delegate || !DELEGATED.contains(&asked.command.as_deref()?) {
        return None;
    }
    let start = match asked.workspace {
        Some(dir) => dir,
        None => std::env::current_dir().ok()?,
    };
    let workspace = find_workspace(&start)?;
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same(&workspace, build_root) {
        return None;
    }
    let Some((krate, package)) = profiling_crate(&workspace) else {
        // `list` and `run` here are this binary's: say whose targets they are.
        eprintln!(
            "note: {} has no profiling crate (`profile-cli init` makes one): these are the targets built into this binary, from {}",
            workspace.display(),
            build_root.display()
        );
        return None;
    };
    Some((workspace, krate, package))
}

/// When `args` are for another workspace's profiling binary: builds it,
/// says which binary runs, and runs it with the same arguments; its exit
/// code. `None` when this binary should run the command itself.
///
/// Cargo's own output is shown when the build fails, or once it has been
/// busy (compiling, downloading, waiting for a lock) for more than
/// [`A_MOMENT`]; a build with nothing to do, or a quick one, prints
/// nothing of cargo's. Warnings are shown only for the snippet a `run`
/// runs; other crates' warnings are counted in one line when something
/// was compiled.
pub fn delegate(args: &[OsString], build_root: &Path) -> Option<u8> {
    let (workspace, krate, package) = delegate_to(args, build_root)?;
    // Options this process will use after the run, refused before building.
    if let Some(code) = crate::refuse_before_delegating(args) {
        return Some(code);
    }
    let manifest = workspace.join("Cargo.toml");
    // A snippet directory deleted by hand leaves an entry cargo refuses the
    // whole workspace for: said in one line each, with the command.
    let stale = profiling_extract::stale_entries(&krate);
    if !stale.is_empty() {
        for entry in &stale {
            eprintln!(
                "error: {} depends on `{}` at {}, which holds no snippet any more (its directory was deleted): `profile-cli remove {}` removes the entry",
                krate.join("Cargo.toml").strip_prefix(&workspace).unwrap_or(&krate).display(),
                entry.package,
                entry.path,
                entry.directory()
            );
        }
        return Some(crate::exit::EXIT_USAGE);
    }
    eprintln!(
        "profile-cli: {} has its own profiling crate ({}): building and running its `profile` binary (--no-delegate runs this one)",
        workspace.display(),
        krate.strip_prefix(&workspace).unwrap_or(&krate).display()
    );
    let terminal = std::io::stderr().is_terminal();
    let build = match cargo_for_snippets(&krate)
        .current_dir(&krate)
        .args(["build", "--release", "-p", &package, "--bin", "profile"])
        .arg(if terminal {
            "--message-format=json-diagnostic-rendered-ansi"
        } else {
            "--message-format=json"
        })
        .args(["--color", if terminal { "always" } else { "never" }])
        .arg("--manifest-path")
        .arg(&manifest)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(error) => {
            eprintln!("error: cannot run cargo to build {package}: {error}");
            return Some(1);
        }
    };
    let snippet = run_snippet_dir(args, &krate);
    let built = watch_build(build, snippet.as_deref(), &mut std::io::stderr().lock());
    let Some(executable) = built.executable.filter(|_| built.success) else {
        eprintln!(
            "error: `cargo build --release -p {package} --bin profile --manifest-path {}` failed (above)",
            manifest.display()
        );
        // The candidate of `ab --against` is the working tree: one that
        // does not build cannot be judged, which `git bisect run` is told
        // with 125 (skip this revision).
        if crate::ab::against_of(args).is_some() {
            eprintln!(
                "note: the working tree does not build: exit {} (`git bisect run` skips this revision)",
                crate::exit::EXIT_CANNOT_TEST
            );
            return Some(crate::exit::EXIT_CANNOT_TEST);
        }
        return Some(1);
    };
    if built.compiled && built.hidden_warnings > 0 {
        eprintln!(
            "profile-cli: {} from other crates of {} not shown (`cargo build --release -p {package} --manifest-path {}` shows them)",
            plural_warnings(built.hidden_warnings),
            workspace.display(),
            manifest.display()
        );
    }
    let forwarded: Vec<&OsStr> = args
        .iter()
        .skip(1)
        .map(OsString::as_os_str)
        .filter(|arg| *arg != "--no-delegate")
        .collect();
    // `ab --against REV`: the base is this workspace's binary built at REV,
    // here, in a worktree held until the pair is done; the workspace's
    // binary runs the pair with it.
    let mut forwarded: Vec<OsString> = forwarded.iter().map(|arg| (*arg).to_owned()).collect();
    let mut _built = None;
    if let Some((against, candidate_rev)) = crate::ab::against_of(args) {
        // A Ctrl-C or SIGTERM while the base builds or the pair runs ends
        // this process only once the worktree is removed.
        if let Err(error) = profiling_core::driver::interrupt::install_handlers() {
            eprintln!("warning: cannot handle Ctrl-C ({error}): a signal may leave the base's worktree behind");
        }
        let build = crate::ab::BuildTarget {
            package: package.clone(),
            bin: "profile".to_owned(),
            features: Vec::new(),
            release: true,
        };
        let mut err = std::io::stderr().lock();
        let built = match crate::ab::prepare_against(
            &against,
            candidate_rev.as_deref(),
            &workspace,
            &build,
            &mut err,
        ) {
            Ok(Ok(built)) => built,
            Ok(Err(code)) => return Some(code),
            Err(error) => {
                eprintln!("error: {error:#}");
                return Some(1);
            }
        };
        // A signal after the build, before the pair's process started,
        // reached no one who would end the pair: said here, and the
        // worktree goes with `built`.
        if let Some(signal) = profiling_core::driver::interrupt::received() {
            eprintln!(
                "interrupted by {} before the pair started: nothing was run, and the base's worktree is removed",
                profiling_core::driver::manifest::signal_name(signal)
            );
            return Some(profiling_core::driver::interrupt::exit_code(signal));
        }
        forwarded = crate::ab::forward_against(&forwarded, &built);
        _built = Some(built);
    }
    let forwarded: Vec<&OsStr> = forwarded.iter().map(OsString::as_os_str).collect();
    match read_arguments(args).command.as_deref() {
        // The binary runs; what reads the run back is this process's.
        Some("ab") if has_flag(args, "--until-decided") => {
            eprintln!(
                "profile-cli: running {} a stage at a time",
                executable.display()
            );
            Some(ab_in_stages(&executable, &forwarded, args))
        }
        Some("run" | "sweep" | "ab" | "load") => {
            eprintln!("profile-cli: running {}", executable.display());
            Some(run_then_finish(&executable, &forwarded, args))
        }
        // The binary says where its profiles' runs are; this process reads them.
        Some("compare" | "baselines" | "report") => Some(read_runs(&executable, args, &workspace)),
        _ => {
            eprintln!("profile-cli: running {}", executable.display());
            run(&executable, &forwarded)
        }
    }
}

/// Runs the profiling binary with `--outcome FILE`, waits for it (a
/// Ctrl-C reaches it from the terminal; a SIGTERM sent here is passed on),
/// then does what it left to do.
fn run_then_finish(executable: &Path, forwarded: &[&OsStr], args: &[OsString]) -> u8 {
    match run_for_outcome(executable, forwarded) {
        (_, Ok(Some(outcome))) => crate::finish_delegated(args, outcome),
        (code, Ok(None)) => code,
        (_, Err(error)) => {
            eprintln!("error: what the profiling binary left: {error}");
            1
        }
    }
}

/// `ab --until-decided` through the workspace's binary: each stage is a
/// run of it (`--stage K`, the passes the schedule gives), judged here.
fn ab_in_stages(executable: &Path, forwarded: &[&OsStr], args: &[OsString]) -> u8 {
    let Some(crate::Command::Ab(ab)) = crate::parse_command(args) else {
        return crate::exit::EXIT_USAGE;
    };
    let words = without_options(
        forwarded,
        &["--budget", "--iterations", "--ab-id", "--block-passes"],
        &["--until-decided"],
    );
    let mut id = ab.ab_id.clone();
    let mut out = crate::streams::ClosedQuietly::new(std::io::stdout().lock());
    let mut err = crate::streams::ClosedQuietly::new(std::io::stderr().lock());
    let result = crate::ab::until_decided(
        &ab,
        &mut |stage, size, _err| {
            let mut stage_words = words.clone();
            stage_words.extend(["--stage".into(), stage.to_string().into()]);
            if let Some(id) = &id {
                stage_words.extend(["--ab-id".into(), id.into()]);
            }
            let passes = size.map(|size| size.passes).or(ab.iterations);
            let block_passes = size.and_then(|size| size.block_passes).or(ab.block_passes);
            for (option, value) in [("--iterations", passes), ("--block-passes", block_passes)] {
                if let Some(value) = value {
                    stage_words.extend([option.into(), value.to_string().into()]);
                }
            }
            let stage_words: Vec<&OsStr> = stage_words.iter().map(OsString::as_os_str).collect();
            match run_for_outcome(executable, &stage_words) {
                (_, Ok(Some(crate::outcome::Outcome::Paired(mut pairs)))) if pairs.len() == 1 => {
                    let paired = pairs.remove(0);
                    // The default id the first stage took: AB_ID-1.
                    if id.is_none() {
                        id = paired
                            .dir
                            .file_name()
                            .and_then(|name| name.to_str()?.strip_suffix("-1").map(str::to_owned));
                    }
                    Ok(Ok(paired))
                }
                (code, Ok(_)) => Ok(Err(code.max(1))),
                (_, Err(error)) => {
                    eprintln!("error: what the profiling binary left: {error}");
                    Ok(Err(1))
                }
            }
        },
        &mut out,
        &mut err,
    );
    crate::exit_code(result, &mut err)
}

/// `words` without the options `valued` (with their value, as `--x V` or
/// `--x=V`) and the flags `flags`.
fn without_options(words: &[&OsStr], valued: &[&str], flags: &[&str]) -> Vec<OsString> {
    let mut kept = Vec::with_capacity(words.len());
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let text = word.to_string_lossy();
        if valued.contains(&text.as_ref()) {
            words.next();
        } else if !(flags.contains(&text.as_ref())
            || valued.iter().any(|option| {
                text.strip_prefix(option)
                    .is_some_and(|rest| rest.starts_with('='))
            }))
        {
            kept.push((*word).to_owned());
        }
    }
    kept
}

/// Runs the profiling binary with `--outcome FILE` and waits for it: its
/// exit code, and the outcome it left (`None` when it stopped before
/// writing one).
fn run_for_outcome(
    executable: &Path,
    forwarded: &[&OsStr],
) -> (u8, anyhow::Result<Option<crate::outcome::Outcome>>) {
    let outcome_file =
        std::env::temp_dir().join(format!("profile-cli-outcome-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&outcome_file);
    // Registered before the child starts: from here on, neither signal
    // ends this process before the child has written what it ran. A
    // Ctrl-C reaches the child from the terminal by itself (the flag only
    // absorbs it here); each SIGTERM is passed on, so that a second one
    // ends the child at once as it would a run started directly.
    let absorbed_interrupt = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let terminated = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let handlers = [
        signal_hook::flag::register(signal_hook::consts::SIGINT, absorbed_interrupt),
        signal_hook::flag::register(signal_hook::consts::SIGTERM, terminated.clone()),
    ];
    let mut child = match Command::new(executable)
        .args(forwarded)
        .arg("--outcome")
        .arg(&outcome_file)
        .spawn()
    {
        Ok(child) => child,
        Err(error) => {
            eprintln!("error: cannot run {}: {error}", executable.display());
            return (1, Ok(None));
        }
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => break child.wait().ok(),
        }
        if terminated.swap(false, std::sync::atomic::Ordering::Relaxed) {
            // SAFETY: kill(2) on the pid of a child not yet waited for.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let code = status.map_or(1, |status| match status.code() {
        Some(code) => code as u8,
        None => {
            use std::os::unix::process::ExitStatusExt;
            status.signal().map_or(1, |signal| (128 + signal) as u8)
        }
    });
    let outcome = crate::outcome::read(&outcome_file);
    let _ = std::fs::remove_file(&outcome_file);
    for id in handlers.into_iter().flatten() {
        signal_hook::low_level::unregister(id);
    }
    (code, outcome)
}

/// `compare`, `report` and `baselines`: where the binary's profiles keep
/// their runs, asked of it, then read here.
fn read_runs(executable: &Path, args: &[OsString], workspace: &Path) -> u8 {
    let output = match Command::new(executable)
        .arg("profiles")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
    {
        Ok(output) => output,
        Err(error) => {
            eprintln!("error: cannot run {}: {error}", executable.display());
            return 1;
        }
    };
    let profiles: Vec<profiling_core::driver::session::ProfileRuns> =
        match serde_json::from_slice(&output.stdout) {
            Ok(profiles) if output.status.success() => profiles,
            _ => {
                eprintln!(
                    "error: `{} profiles` did not list the profiles of {}",
                    executable.display(),
                    workspace.display()
                );
                return 1;
            }
        };
    crate::read_delegated(args.to_vec(), workspace, &profiles)
}

fn plural_warnings(count: usize) -> String {
    if count == 1 {
        "1 warning".to_owned()
    } else {
        format!("{count} warnings")
    }
}

/// How long cargo may be busy before its output is shown: past this, the
/// user is waiting and should see on what.
const A_MOMENT: Duration = Duration::from_secs(2);

/// The snippet directory of the target a `run` runs: its config's
/// directory, else `snippets/<name, - as _>/` of the profiling crate.
fn run_snippet_dir(args: &[OsString], krate: &Path) -> Option<PathBuf> {
    let (name, config) = crate::run_selection(args)?;
    let dir = match (config, name) {
        (Some(config), _) => std::path::absolute(config).ok()?.parent()?.to_path_buf(),
        (None, Some(name)) => krate.join("snippets").join(name.replace('-', "_")),
        (None, None) => return None,
    };
    dir.canonicalize().ok()
}

/// What cargo said while building, one item at a time in the order it
/// came.
enum Said {
    /// A line of cargo's stderr (its status lines and its own warnings).
    Line(String),
    /// A JSON message of its stdout.
    Message(serde_json::Value),
}

/// What [`watch_build`] saw.
struct Built {
    executable: Option<PathBuf>,
    success: bool,
    /// Whether anything was compiled (not only found fresh).
    compiled: bool,
    /// Warnings of other crates than the snippet, not shown.
    hidden_warnings: usize,
}

/// Follows a cargo build started with a JSON message format, printing on
/// `err` what [`delegate`] documents.
fn watch_build(mut child: Child, snippet: Option<&Path>, err: &mut dyn Write) -> Built {
    let (sender, said) = mpsc::channel();
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        let sender = sender.clone();
        readers.push(std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(message) = serde_json::from_str(&line) {
                    let _ = sender.send(Said::Message(message));
                }
            }
        }));
    }
    if let Some(stderr) = child.stderr.take() {
        let sender = sender.clone();
        readers.push(std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = sender.send(Said::Line(line));
            }
        }));
    }
    drop(sender);

    let mut built = Built {
        executable: None,
        success: false,
        compiled: false,
        hidden_warnings: 0,
    };
    // Until cargo's output is shown: its lines (for a failure) and the
    // diagnostics to show, marked `true`, in the order they came.
    let mut held: Vec<(bool, String)> = Vec::new();
    let mut busy_since: Option<Instant> = None;
    let mut showing = false;
    loop {
        let item = match said.recv_timeout(Duration::from_millis(100)) {
            Ok(item) => Some(item),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        match item {
            Some(Said::Line(line)) => {
                if is_busy_line(&line) {
                    busy_since.get_or_insert_with(Instant::now);
                }
                if showing {
                    let _ = writeln!(err, "{line}");
                } else {
                    held.push((false, line));
                }
            }
            Some(Said::Message(message)) => match message["reason"].as_str() {
                Some("compiler-artifact") => {
                    if message["fresh"] == false {
                        built.compiled = true;
                        busy_since.get_or_insert_with(Instant::now);
                    }
                    if message["target"]["name"] == "profile" {
                        built.executable = message["executable"].as_str().map(PathBuf::from);
                    }
                }
                Some("compiler-message") => {
                    let diagnostic = &message["message"];
                    let rendered = diagnostic["rendered"].as_str().unwrap_or_default();
                    let level = diagnostic["level"].as_str().unwrap_or_default();
                    let of_snippet = snippet.is_some_and(|dir| {
                        message["manifest_path"]
                            .as_str()
                            .and_then(|m| Path::new(m).parent()?.canonicalize().ok())
                            .is_some_and(|m| m == dir)
                    });
                    if level.starts_with("error") || of_snippet {
                        if showing {
                            let _ = write!(err, "{rendered}");
                        } else {
                            held.push((true, rendered.trim_end().to_owned()));
                        }
                    } else if level == "warning" {
                        built.hidden_warnings += 1;
                    }
                }
                Some("build-finished") => built.success = message["success"] == true,
                _ => {}
            },
            None => {}
        }
        if !showing && busy_since.is_some_and(|since| since.elapsed() >= A_MOMENT) {
            showing = true;
            for (_, text) in held.drain(..) {
                let _ = writeln!(err, "{text}");
            }
        }
    }
    for reader in readers {
        let _ = reader.join();
    }
    let exited = child.wait().is_ok_and(|status| status.success());
    built.success &= exited;
    // A build that succeeded without showing cargo's output shows only
    // the diagnostics kept; a failed one, everything.
    for (diagnostic, text) in &held {
        if *diagnostic || !built.success {
            let _ = writeln!(err, "{text}");
        }
    }
    built
}

/// A status line of cargo's that says it is busy: while it lasts past
/// [`A_MOMENT`], cargo's output is shown.
fn is_busy_line(line: &str) -> bool {
    let word = line.trim_start().split(' ').next().unwrap_or_default();
    [
        "Compiling",
        "Downloading",
        "Downloaded",
        "Updating",
        "Blocking",
        "Locking",
        "Adding",
        "Building",
    ]
    .contains(&word)
}

#[cfg(unix)]
fn run(executable: &Path, args: &[&OsStr]) -> Option<u8> {
    use std::os::unix::process::CommandExt;
    // The binary takes this process's place: its signals, its exit code.
    let error = Command::new(executable).args(args).exec();
    eprintln!("error: cannot run {}: {error}", executable.display());
    Some(1)
}

#[cfg(not(unix))]
fn run(executable: &Path, args: &[&OsStr]) -> Option<u8> {
    match Command::new(executable).args(args).status() {
        Ok(status) => Some(status.code().map_or(1, |code| code as u8)),
        Err(error) => {
            eprintln!("error: cannot run {}: {error}", executable.display());
            Some(1)
        }
    }
}

/// Whether `flag` is among `args` (before a `--`).
fn has_flag(args: &[OsString], flag: &str) -> bool {
    args.iter()
        .take_while(|arg| *arg != "--")
        .any(|arg| arg == flag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<OsString> {
        std::iter::once("profile-cli")
            .chain(words.iter().copied())
            .map(OsString::from)
            .collect()
    }

    #[test]
    fn the_command_workspace_and_switch_are_read_from_the_arguments() {
        let asked = read_arguments(&args(&["--workspace", "/w", "run", "x", "--no-delegate"]));
        assert_eq!(asked.command.as_deref(), Some("run"));
        assert_eq!(asked.workspace, Some(PathBuf::from("/w")));
        assert!(asked.no_delegate);
        let asked = read_arguments(&args(&["list", "--workspace=/v"]));
        assert_eq!(asked.command.as_deref(), Some("list"));
        assert_eq!(asked.workspace, Some(PathBuf::from("/v")));
        assert!(!asked.no_delegate);
    }

    #[test]
    fn nothing_is_delegated_in_this_workspace_or_for_other_commands() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let here = root.to_str().unwrap();
        assert!(delegate_to(&args(&["--workspace", here, "list"]), root).is_none());
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().to_str().unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "[workspace]\nmembers = []\n").unwrap();
        // Another workspace, but without a profiling crate.
        assert!(delegate_to(&args(&["--workspace", other, "list"]), root).is_none());
        let krate = dir.path().join("inference_profiling");
        std::fs::create_dir_all(&krate).unwrap();
        std::fs::write(
            krate.join("Cargo.toml"),
            "[package]\nname = \"profiling-snippets\"\n\n[[bin]]\nname = \"profile\"\n\n[dependencies]\nprofiling-cli = { path = \"x\" }\n",
        )
        .unwrap();
        let (workspace, _, package) =
            delegate_to(&args(&["--workspace", other, "list"]), root).unwrap();
        assert_eq!(workspace, std::path::absolute(dir.path()).unwrap());
        assert_eq!(package, "profiling-snippets");
        for command in ["run", "compare", "baselines", "report", "cache"] {
            assert!(
                delegate_to(&args(&["--workspace", other, command]), root).is_some(),
                "{command} needs that workspace's targets"
            );
        }
        assert!(delegate_to(&args(&["--workspace", other, "new", "x"]), root).is_none());
        assert!(
            delegate_to(&args(&["--workspace", other, "--no-delegate", "run"]), root).is_none()
        );
    }
}
