//! One command everywhere: ten commands (`list`, `run`, `compare`,
//! `baselines`, `report`, `cache`, `runs`, `sweep`, `ab` and `load`), run
//! inside another workspace that has its own profiling crate (`profile-cli
//! init` made it), build that workspace's `profile` binary and go through
//! it, so that they list and run that workspace's targets and find its runs
//! and image cache. How each goes is [`Delegation`], read from the parsed
//! command:
//!
//! - `list`, `cache` and `runs` are run by the binary, with the same arguments;
//! - `run`, `sweep`, `ab` and `load` are run by the binary, and what it
//!   hands back (`crate::handoff`: the comparison, the pages, the baseline
//!   saved) is done here; `ab --against` builds the base here first, and
//!   `ab --until-decided` runs the binary a stage at a time;
//! - `compare`, `baselines` and `report` ask the binary where its profiles'
//!   runs are, and read them here.
//!
//! Inside the workspace this binary was built from, with `--no-delegate`,
//! and for a command line that does not parse, nothing is delegated.
//! `build.rs` builds the binary, `binary.rs` runs it, `finish.rs` does what
//! this process does before and after it.

mod binary;
mod build;
mod finish;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use profiling_extract::workspace::{find_workspace, profiling_crate};

use crate::exit::{EXIT_CANNOT_TEST, EXIT_USAGE};
use crate::{Cli, Command};

/// How a command goes through the `profile` binary of a workspace that
/// has a profiling crate of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delegation {
    /// Run by this binary wherever it runs: the snippet commands, which
    /// work on the workspace's sources, `analyze`, and the hidden commands
    /// a binary is run with.
    NotDelegated,
    /// Run by the workspace's binary with the same arguments, in this
    /// process's place: `list`, `cache`, `runs`.
    AsIs,
    /// Run by the workspace's binary, what it hands back done here: `run`,
    /// `sweep`, `ab`, `load`.
    ThenFinished,
    /// `ab --until-decided`: each stage run by the workspace's binary, the
    /// stages judged here.
    InStages,
    /// The workspace's binary says where its profiles' runs are, and they
    /// are read here: `compare`, `baselines`, `report`.
    RunsReadHere,
}

impl Command {
    /// How this command goes through another workspace's `profile` binary.
    pub(crate) fn delegation(&self) -> Delegation {
        match self {
            Command::List { .. } | Command::Cache(_) | Command::Runs(_) => Delegation::AsIs,
            Command::Ab(ab) if ab.until_decided => Delegation::InStages,
            Command::Run(_) | Command::Sweep(_) | Command::Ab(_) | Command::Load(_) => {
                Delegation::ThenFinished
            }
            Command::Compare(_) | Command::Baselines(_) | Command::Report(_) => {
                Delegation::RunsReadHere
            }
            Command::New(_)
            | Command::Check(_)
            | Command::Remove(_)
            | Command::Init(_)
            | Command::Analyze(_)
            | Command::History(_)
            | Command::Profiles
            | Command::Completions { .. }
            | Command::Man { .. }
            | Command::Step { .. } => Delegation::NotDelegated,
        }
    }
}

/// A workspace's profiling crate that a command goes through, and how.
#[derive(Debug)]
pub(crate) struct Delegated {
    delegation: Delegation,
    /// The workspace's root.
    workspace: PathBuf,
    /// Its profiling crate's directory.
    krate: PathBuf,
    /// The profiling crate's package, whose `profile` binary runs.
    package: String,
    /// Cargo's profile the binary is built in (`--profile`).
    profile: crate::ab::CargoProfile,
    /// The package's features it is built with (`--features`).
    features: Vec<String>,
}

/// `--features` as cargo reads it: names separated by commas or spaces,
/// the option repeatable.
pub(crate) fn feature_list(given: &[String]) -> Vec<String> {
    given
        .iter()
        .flat_map(|words| words.split([',', ' ']))
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Where `cli`'s command goes: the profiling crate of the workspace it
/// points at (`--workspace`, else the current directory's), when the
/// command is one to delegate, `--no-delegate` is not given and that
/// workspace is not `build_root`; `None` when this binary runs it.
pub(crate) fn delegated(cli: &Cli, build_root: &Path) -> Option<Delegated> {
    let delegation = cli.command.delegation();
    if cli.no_delegate || delegation == Delegation::NotDelegated {
        return None;
    }
    let start = match &cli.workspace {
        Some(dir) => dir.clone(),
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
        let _ = crate::streams::note(
            &mut std::io::stderr(),
            format_args!(
                "{} has no profiling crate (`profile-cli init` makes one): these are the targets built into this binary, from {}",
                workspace.display(),
                build_root.display()
            ),
        );
        return None;
    };
    Some(Delegated {
        delegation,
        workspace,
        krate,
        package,
        profile: crate::ab::CargoProfile::named(cli.cargo_profile.as_deref()),
        features: feature_list(&cli.features),
    })
}

/// Runs `cli`'s command through the workspace's binary `to` names: builds
/// it (see [`build::build`] for what is shown of cargo), says which binary
/// runs, and runs it with `args` (the command line, forwarded as it was
/// given); the exit code.
pub(crate) fn delegate(cli: Cli, to: Delegated, args: &[OsString]) -> u8 {
    // Options this process will use after the run, refused before building.
    if let Some(code) = finish::refuse_before_delegating(&cli.command) {
        return code;
    }
    if let Some(code) = refuse_stale_entries(&to) {
        return code;
    }
    eprintln!(
        "profile-cli: {} has its own profiling crate ({}): building and running its `profile` binary (--no-delegate runs this one)",
        to.workspace.display(),
        to.krate.strip_prefix(&to.workspace).unwrap_or(&to.krate).display()
    );
    let snippet = build::run_snippet_dir(&cli.command, &to.krate);
    let executable = match build::build(&to, snippet.as_deref()) {
        Ok(executable) => executable,
        Err(build::NotBuilt::NoCargo) => return 1,
        Err(build::NotBuilt::Failed) => return not_built(&cli.command),
    };
    let mut forwarded: Vec<OsString> = args.iter().skip(1).cloned().collect();
    // `ab --against REV`: the base is this workspace's binary built at REV,
    // here, in a worktree held until the pair is done; the workspace's
    // binary runs the pair with it.
    let mut _base = None;
    if let Some((against, candidate_rev)) = crate::ab::against_of(&cli.command) {
        match build_base(&against, candidate_rev.as_deref(), &to) {
            Ok(built) => {
                forwarded = crate::ab::forward_against(&forwarded, &built);
                _base = Some(built);
            }
            Err(code) => return code,
        }
    }
    let forwarded: Vec<&OsStr> = forwarded.iter().map(OsString::as_os_str).collect();
    let executable = executable.as_path();
    match to.delegation {
        // The binary runs; what reads the run back is this process's.
        Delegation::InStages => {
            eprintln!(
                "profile-cli: running {} a stage at a time",
                executable.display()
            );
            binary::ab_in_stages(executable, &forwarded, &cli.command)
        }
        Delegation::ThenFinished => {
            eprintln!("profile-cli: running {}", executable.display());
            binary::run_then_finish(executable, &forwarded, &cli.command)
        }
        // The binary says where its profiles' runs are; this process reads them.
        Delegation::RunsReadHere => binary::read_runs(executable, cli, args, &to.workspace),
        Delegation::AsIs | Delegation::NotDelegated => {
            eprintln!("profile-cli: running {}", executable.display());
            binary::exec(executable, &forwarded)
        }
    }
}

/// A snippet directory deleted by hand leaves an entry cargo refuses the
/// whole workspace for: each said in one line, with the command that
/// removes it, and [`EXIT_USAGE`]; `None` when there is none.
fn refuse_stale_entries(to: &Delegated) -> Option<u8> {
    let stale = profiling_extract::stale_entries(&to.krate);
    if stale.is_empty() {
        return None;
    }
    let manifest = to.krate.join("Cargo.toml");
    for entry in &stale {
        eprintln!(
            "error: {} depends on `{}` at {}, which holds no snippet any more (its directory was deleted): `profile-cli remove {}` removes the entry",
            manifest.strip_prefix(&to.workspace).unwrap_or(&to.krate).display(),
            entry.package,
            entry.path,
            entry.directory()
        );
    }
    Some(EXIT_USAGE)
}

/// The exit code when the workspace's binary does not build: 1, or
/// [`EXIT_CANNOT_TEST`] for the candidate of `ab --against`, the working
/// tree, which cannot be judged (`git bisect run` skips the revision).
fn not_built(command: &Command) -> u8 {
    if crate::ab::against_of(command).is_none() {
        return 1;
    }
    eprintln!(
        "note: the working tree does not build: exit {EXIT_CANNOT_TEST} (`git bisect run` skips this revision)"
    );
    EXIT_CANNOT_TEST
}

/// `ab --against REV`: the workspace's binary built at `against` (and at
/// `candidate_rev`, when given) in a worktree that the value returned
/// holds; the exit code when it could not be built or a signal came.
fn build_base(
    against: &str,
    candidate_rev: Option<&str>,
    to: &Delegated,
) -> Result<crate::ab::Built, u8> {
    // A Ctrl-C or SIGTERM while the base builds or the pair runs ends
    // this process only once the worktree is removed.
    if let Err(error) = profiling_core::driver::interrupt::install_handlers() {
        eprintln!("warning: cannot handle Ctrl-C ({error}): a signal may leave the base's worktree behind");
    }
    let build = crate::ab::BuildTarget {
        package: to.package.clone(),
        bin: "profile".to_owned(),
        features: to.features.clone(),
        profile: to.profile.clone(),
    };
    let mut err = std::io::stderr().lock();
    let built =
        match crate::ab::prepare_against(against, candidate_rev, &to.workspace, &build, &mut err) {
            Ok(Ok(built)) => built,
            Ok(Err(code)) => return Err(code),
            Err(error) => {
                eprintln!("error: {error:#}");
                return Err(1);
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
        return Err(profiling_core::driver::interrupt::exit_code(signal));
    }
    Ok(built)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn cli(words: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("profile-cli").chain(words.iter().copied()))
            .expect("the command line parses")
    }

    #[test]
    fn each_command_goes_through_the_workspace_s_binary_as_its_delegation_says() {
        for (words, delegation) in [
            (&["list"][..], Delegation::AsIs),
            (&["cache", "clean"], Delegation::AsIs),
            (&["runs", "clean"], Delegation::AsIs),
            (&["run", "x"], Delegation::ThenFinished),
            (
                &["sweep", "x", "--set", "device=cpu"],
                Delegation::ThenFinished,
            ),
            (&["ab", "x", "y"], Delegation::ThenFinished),
            (&["ab", "x", "y", "--until-decided"], Delegation::InStages),
            (&["load", "x"], Delegation::ThenFinished),
            (&["compare", "a", "b"], Delegation::RunsReadHere),
            (&["baselines"], Delegation::RunsReadHere),
            (&["report", "a"], Delegation::RunsReadHere),
            (&["new", "x", "--from", "f.rs"], Delegation::NotDelegated),
            (&["init"], Delegation::NotDelegated),
            (&["profiles"], Delegation::NotDelegated),
        ] {
            assert_eq!(cli(words).command.delegation(), delegation, "{words:?}");
        }
    }

    #[test]
    fn the_workspace_and_the_switch_are_read_wherever_they_stand() {
        let parsed = cli(&["--workspace", "/w", "run", "x", "--no-delegate"]);
        assert_eq!(parsed.workspace, Some(PathBuf::from("/w")));
        assert!(parsed.no_delegate);
        let parsed = cli(&["list", "--workspace=/v"]);
        assert_eq!(parsed.workspace, Some(PathBuf::from("/v")));
        assert!(!parsed.no_delegate);
    }

    #[test]
    fn the_build_s_profile_and_features_are_read_as_cargo_reads_them() {
        let parsed = cli(&[
            "run",
            "x",
            "--profile",
            "dev",
            "-F",
            "a,b",
            "--features",
            "c d",
        ]);
        assert_eq!(parsed.cargo_profile.as_deref(), Some("dev"));
        assert_eq!(feature_list(&parsed.features), ["a", "b", "c", "d"]);
        let parsed = cli(&["--cargo-profile", "profiling", "list"]);
        let profile = crate::ab::CargoProfile::named(parsed.cargo_profile.as_deref());
        assert_eq!(profile.dir(), "profiling");
        assert_eq!(profile.args(), ["--profile", "profiling"]);
        let release = crate::ab::CargoProfile::named(None);
        assert_eq!(
            (release.dir(), release.args()),
            ("release", vec!["--release".to_owned()])
        );
        let dev = crate::ab::CargoProfile::named(Some("dev"));
        assert_eq!(
            (dev.dir(), dev.args(), dev.is_dev()),
            ("debug", Vec::new(), true)
        );
        assert_eq!(
            crate::ab::CargoProfile::named(Some("bench")).dir(),
            "release"
        );
    }

    #[test]
    fn nothing_is_delegated_in_this_workspace_or_for_other_commands() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let here = root.to_str().unwrap();
        assert!(delegated(&cli(&["--workspace", here, "list"]), root).is_none());
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().to_str().unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "[workspace]\nmembers = []\n").unwrap();
        // Another workspace, but without a profiling crate.
        assert!(delegated(&cli(&["--workspace", other, "list"]), root).is_none());
        let krate = dir.path().join("inference_profiling");
        std::fs::create_dir_all(&krate).unwrap();
        std::fs::write(
            krate.join("Cargo.toml"),
            "[package]\nname = \"profiling-snippets\"\n\n[[bin]]\nname = \"profile\"\n\n[dependencies]\nprofiling-cli = { path = \"x\" }\n",
        )
        .unwrap();
        let to = delegated(&cli(&["--workspace", other, "list"]), root).unwrap();
        assert_eq!(to.workspace, std::path::absolute(dir.path()).unwrap());
        assert_eq!(to.package, "profiling-snippets");
        for words in [
            &["run", "x"][..],
            &["compare", "a", "b"],
            &["baselines"],
            &["report", "a"],
            &["cache", "clean"],
        ] {
            let words: Vec<&str> = ["--workspace", other]
                .iter()
                .chain(words)
                .copied()
                .collect();
            assert!(
                delegated(&cli(&words), root).is_some(),
                "{words:?} needs that workspace's targets"
            );
        }
        let new = ["--workspace", other, "new", "x", "--from", "f.rs"];
        assert!(delegated(&cli(&new), root).is_none());
        assert!(delegated(
            &cli(&["--workspace", other, "--no-delegate", "run", "x"]),
            root
        )
        .is_none());
    }
}
