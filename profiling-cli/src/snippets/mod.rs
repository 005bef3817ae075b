//! The snippet commands, one module each: `new` copies a production
//! function into a snippet, `check` builds a snippet and links it in or
//! leaves it a draft, `remove` deletes one, `init` creates the profiling
//! crate of a workspace of one's own. Here: what `new` and `check` share
//! (finding a snippet, checking it and saying what came of it).

pub(crate) mod check;
pub(crate) mod init;
pub(crate) mod new;
pub(crate) mod remove;
pub(crate) mod variant;

use std::io::Write;
use std::path::{Path, PathBuf};

use profiling_extract::{
    self as snippet, Diagnostic, ParityOutcome, SnippetCheck, SnippetState, SnippetsCrate,
};

use crate::exit::{EXIT_OK, EXIT_TARGET_FAILED};

/// The snippet directory `name` means: a directory holding a `target.rs`,
/// else `inference_profiling/snippets/<name with - as _>`, else the
/// directory of the draft or registered target of that name.
fn snippet_directory(name: &str, root: &Path) -> Option<PathBuf> {
    let has_target = |dir: &Path| dir.join("target.rs").is_file();
    let given = PathBuf::from(name);
    if has_target(&given) {
        return std::path::absolute(given).ok();
    }
    let snippets = root.join("inference_profiling").join("snippets");
    let by_name = snippets.join(name.replace('-', "_"));
    if has_target(&by_name) {
        return Some(by_name);
    }
    if let Some(draft) = profiling_core::driver::registry::drafts()
        .into_iter()
        .find(|d| d.target == name)
    {
        return Some(root.join(draft.path()));
    }
    let entry = profiling_core::driver::registry::targets()
        .into_iter()
        .find(|entry| entry.name == name)?;
    let file = entry.source_path(root);
    let dir = file.parent()?;
    (dir.parent()? == snippets && has_target(dir)).then(|| dir.to_path_buf())
}

/// The profile a snippet directory holds: its config's `target.name`, else
/// the directory name with `_` as `-`.
fn profile_name(directory: &Path) -> String {
    profiling_core::driver::config::ConfigFile::load(&directory.join("config.yaml"))
        .ok()
        .and_then(|config| config.target_name().map(str::to_owned))
        .unwrap_or_else(|| {
            directory
                .file_name()
                .map(|name| name.to_string_lossy().replace('_', "-"))
                .unwrap_or_default()
        })
}

/// Which command checks a snippet: they differ in what fails them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Command {
    /// `new` wrote the snippet: a draft, or a parity test that cannot run
    /// until the user maps its inputs, is what is left to do, not a failure
    /// (exit 0); only a copy that computes something else than production
    /// fails it.
    New,
    /// `check`: a draft, or a parity test that fails or cannot run, is its
    /// failure (exit 1).
    Check,
}

/// Runs [`snippet::check_snippet`] and says what came of it.
fn check_and_report(
    krate: &SnippetsCrate,
    directory: &Path,
    shown: &str,
    profile: &str,
    command: Command,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let left_to_do = |code: u8| match command {
        Command::New => EXIT_OK,
        Command::Check => code,
    };
    let level = match command {
        Command::New => "note",
        Command::Check => "error",
    };
    writeln!(out, "building: {}", snippet::check_command(krate))?;
    let check = match snippet::check_snippet(krate, directory, profile) {
        Ok(check) => check,
        Err(error) => {
            writeln!(err, "error: {error}")?;
            return Ok(EXIT_TARGET_FAILED);
        }
    };
    let SnippetCheck {
        build,
        made_crate,
        was_draft,
        state,
    } = &check;
    if *made_crate {
        writeln!(
            out,
            "  {shown}/Cargo.toml written: the snippet is a crate of its own now, rebuilt alone when it changes"
        )?;
    }
    let errors = build
        .in_snippet
        .iter()
        .filter(|d| d.level == "error")
        .count();
    let warnings = build.in_snippet.len() - errors;
    for diagnostic in &build.in_snippet {
        write!(err, "{}", diagnostic.rendered)?;
    }
    print_elsewhere(&build.elsewhere, err)?;
    match state {
        SnippetState::Included => {
            let warned = if warnings == 0 {
                String::new()
            } else {
                format!(", with {warnings} warning(s) in its files (above)")
            };
            let promoted = if was_draft.is_some() {
                "; no longer a draft"
            } else {
                ""
            };
            writeln!(
                out,
                "  {} builds with {shown}{warned}: linked in{promoted}",
                krate.package
            )?;
            parity(directory, shown, command, out, err)
        }
        SnippetState::Draft(file) => {
            let file = file.file_name().unwrap_or_default().to_string_lossy();
            writeln!(
                err,
                "{level}: {shown} does not build ({errors} error(s) in its files, above): it is a draft, left out of {} so that every other target still builds ({shown}/{file} says why); fix {shown}/target.rs, then: {} check {profile}",
                krate.package,
                tool(Some(krate)),
            )?;
            Ok(left_to_do(EXIT_TARGET_FAILED))
        }
        SnippetState::Unchanged => {
            if build.elsewhere.is_empty() {
                write!(err, "{}", build.cargo_stderr)?;
                writeln!(err, "error: `{}` failed (above)", build.command)?;
            } else {
                writeln!(
                    err,
                    "{level}: {} does not build, for reasons outside {shown} (above): {shown} is left as it was",
                    krate.package
                )?;
            }
            Ok(left_to_do(EXIT_TARGET_FAILED))
        }
    }
}

/// Runs the snippet's parity test; its result is one line.
fn parity(
    directory: &Path,
    shown: &str,
    command: Command,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let run = match snippet::parity_run(directory) {
        Ok(run) => run,
        Err(error) => {
            writeln!(err, "error: parity: {error}")?;
            return Ok(EXIT_TARGET_FAILED);
        }
    };
    match run.outcome {
        ParityOutcome::Passed(line) => {
            writeln!(out, "  {line}")?;
            Ok(EXIT_OK)
        }
        ParityOutcome::Missing => {
            writeln!(
                out,
                "  parity: no parity test in {shown}/target.rs ({shown}/README.md says why)"
            )?;
            Ok(EXIT_OK)
        }
        ParityOutcome::Failed(message) => {
            let message = message.strip_prefix("parity: ").unwrap_or(&message);
            // `prepare` says so when inputs are still to map: the test
            // cannot compare anything yet.
            let cannot_run_yet = message.contains("does not map these parameters")
                || message.contains("does not build the `self`");
            if cannot_run_yet && command == Command::New {
                writeln!(
                    out,
                    "  parity: cannot run yet: {message}\n  (it builds and stays linked in; map them, then `{}` runs the test)",
                    run.command
                )?;
                return Ok(EXIT_OK);
            }
            writeln!(
                err,
                "error: parity: {message}\n(it builds and stays linked in; `{}` reruns the test)",
                run.command
            )?;
            Ok(EXIT_TARGET_FAILED)
        }
        ParityOutcome::NotRun(cargo) => {
            writeln!(err, "{cargo}")?;
            let (level, code) = match command {
                Command::New => ("note", EXIT_OK),
                Command::Check => ("error", EXIT_TARGET_FAILED),
            };
            writeln!(
                err,
                "{level}: parity: the test did not run: `{}` failed (above)",
                run.command
            )?;
            Ok(code)
        }
    }
}

fn print_elsewhere(elsewhere: &[Diagnostic], err: &mut dyn Write) -> anyhow::Result<()> {
    if !elsewhere.is_empty() {
        writeln!(
            err,
            "{} error(s) outside the snippet, so the crate did not build for another reason:",
            elsewhere.len()
        )?;
        for diagnostic in elsewhere {
            write!(err, "{}", diagnostic.rendered)?;
        }
    }
    Ok(())
}

/// Runs the snippet's target once, through the tool rebuilt with it.
fn smoke_check(
    krate: &SnippetsCrate,
    directory: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let release = profiling_core::driver::provenance::build_profile() == "release";
    let config = directory.join("config.yaml");
    writeln!(
        out,
        "smoke run: {}",
        snippet::smoke_command(krate, &config, release)
    )?;
    let run = match snippet::smoke_run(krate, &config, release) {
        Ok(run) => run,
        Err(error) => {
            writeln!(err, "error: {error}")?;
            return Ok(EXIT_TARGET_FAILED);
        }
    };
    for line in run.stdout.lines() {
        writeln!(out, "  {line}")?;
    }
    write!(err, "{}", run.stderr)?;
    if run.success {
        Ok(EXIT_OK)
    } else {
        writeln!(
            err,
            "error: the smoke run of the new target failed (above): see what is left to resolve in {}/README.md",
            directory.display()
        )?;
        Ok(EXIT_TARGET_FAILED)
    }
}

/// The command a user types next where the snippets crate lives (see
/// [`profiling_extract::runner_command`]); `scripts/profile` outside one.
fn tool(krate: Option<&SnippetsCrate>) -> &'static str {
    krate.map_or("scripts/profile", |krate| {
        profiling_extract::runner_command(&krate.workspace_root())
    })
}
