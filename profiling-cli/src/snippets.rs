//! The snippet commands: `new` copies a production function into a
//! snippet, `check` builds a snippet and links it in or leaves it a draft.

use std::io::Write;
use std::path::{Path, PathBuf};

use profiling_extract::{
    self as snippet, Diagnostic, Instrumentation, NewSnippet, ParityOutcome, SnippetCheck,
    SnippetState, SnippetsCrate, SourceSpec, TypeArgs,
};

use crate::{CheckArgs, InitArgs, NewArgs, RemoveArgs, EXIT_OK, EXIT_TARGET_FAILED, EXIT_USAGE};

pub(crate) fn new(
    args: NewArgs,
    root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let from = match args.from.parse::<SourceSpec>() {
        Ok(from) => from,
        Err(error) => {
            writeln!(err, "error: {error}")?;
            return Ok(error.exit_code());
        }
    };
    let type_args = match args.type_args.as_deref().map(str::parse::<TypeArgs>) {
        None => TypeArgs::default(),
        Some(Ok(type_args)) => type_args,
        Some(Err(error)) => {
            writeln!(err, "error: {error}")?;
            return Ok(error.exit_code());
        }
    };
    let request = NewSnippet {
        name: args.name,
        from,
        data_source: args.data_source,
        device: args.device,
        directory: args.directory,
        workspace_root: root.to_path_buf(),
        type_args,
        follow: args.follow,
    };
    let mut created = match snippet::create(&request) {
        Ok(created) => created,
        Err(error) => {
            writeln!(err, "error: {error}")?;
            return Ok(error.exit_code());
        }
    };
    if !args.no_check {
        match prune_kept_imports(&request, created) {
            Ok(pruned) => created = pruned,
            Err(error) => {
                writeln!(err, "error: {error}")?;
                return Ok(EXIT_TARGET_FAILED);
            }
        }
    }
    let report = &created.report;
    let shown = &report.directory_display;
    tell_what_was_written(&created, out, err)?;

    let mut code = EXIT_OK;
    match (&report.snippets_crate, args.no_check) {
        (None, _) => writeln!(
            err,
            "note: {shown} is not in the snippets/ directory of a crate, so nothing compiles it: it was not built, and `list` and `run` do not know it until it is moved there"
        )?,
        (Some(_), true) => writeln!(
            out,
            "  a draft, not compiled, until `profile-cli check {}` builds it and links it in",
            report.target_name
        )?,
        (Some(krate), false) => {
            code = check_and_report(
                krate,
                &created.directory,
                shown,
                &report.target_name,
                Command::New,
                out,
                err,
            )?;
            if args.smoke && code == EXIT_OK {
                code = smoke_check(krate, &created.directory, out, err)?;
            }
        }
    }
    match &report.move_to {
        Some(place) => writeln!(
            out,
            "next: mv {shown} {place}, edit {place}/target.rs, then: {} run --config {} --run-id smoke",
            tool(report.snippets_crate.as_ref()),
            report.config_display
        )?,
        None if code != EXIT_OK || args.no_check => writeln!(
            out,
            "next: edit {shown}/target.rs, then: {} check {}",
            tool(report.snippets_crate.as_ref()),
            report.target_name
        )?,
        None => writeln!(
            out,
            "next: edit {shown}/target.rs, then: {} run --config {} --run-id smoke",
            tool(report.snippets_crate.as_ref()),
            report.config_display
        )?,
    }
    Ok(code)
}

/// Imports kept in case they are traits the copy calls methods of: a
/// first build says which are not, and the snippet is written again
/// without them (the build after then has no warnings of theirs).
fn prune_kept_imports(
    request: &NewSnippet,
    created: snippet::Generated,
) -> anyhow::Result<snippet::Generated> {
    let (Some(krate), false) = (
        &created.report.snippets_crate,
        created.report.kept_for_traits.is_empty(),
    ) else {
        return Ok(created);
    };
    let Ok(first) = snippet::check_snippet(krate, &created.directory, &request.name) else {
        return Ok(created);
    };
    // Back to as `create` left it: a draft not linked in, which the check
    // after builds and says what came of.
    if let Some((_, draft)) = created
        .files
        .iter()
        .find(|(n, _)| *n == snippet::DRAFT_FILE)
    {
        std::fs::write(created.directory.join(snippet::DRAFT_FILE), draft)?;
    }
    snippet::set_included(krate, &created.directory, false)?;
    let unused = snippet::unused_kept_imports(&created, &first.build.in_snippet);
    if unused.is_empty() {
        return Ok(created);
    }
    Ok(snippet::rewrite_without_imports(
        request, &created, &unused,
    )?)
}

/// What `new` wrote and copied, what it added, and what is left to do.
fn tell_what_was_written(
    created: &snippet::Generated,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<()> {
    let report = &created.report;
    let shown = &report.directory_display;
    let files: Vec<&str> = created.files.iter().map(|(name, _)| *name).collect();
    writeln!(out, "created {shown}/: {}", files.join(", "))?;
    let range = match &report.instrumentation {
        Instrumentation::KeptAttribute => "its #[nvtx_range] kept".to_owned(),
        Instrumentation::AddedAttribute => "#[nvtx_range] added".to_owned(),
        Instrumentation::Statements { name, first, last } => {
            format!("a range `{name}` around lines {first}-{last}")
        }
    };
    writeln!(
        out,
        "  copied `{}` ({}:{}-{}), {range}",
        report.item, report.source, report.lines.0, report.lines.1
    )?;
    if let (Some(added), Some(krate)) = (&report.added_dependency, &report.snippets_crate) {
        writeln!(
            out,
            "  added `{added}` to {}/Cargo.toml: {} did not depend on the crate it copies from",
            krate
                .dir
                .strip_prefix(krate.workspace_root())
                .unwrap_or(&krate.dir)
                .display(),
            krate.package
        )?;
    }
    for dependency in &report.snippet_dependencies {
        writeln!(
            out,
            "  added `{dependency}` to {}/Cargo.toml: {}",
            report.directory_display, dependency.reason
        )?;
    }
    for (parameter, source) in &report.mapped {
        writeln!(out, "  prepare: `{parameter}` is {source}")?;
    }
    for warning in &report.warnings {
        writeln!(err, "warning: {warning}")?;
    }
    if let Some(note) = &report.range_note {
        writeln!(err, "note: {note}")?;
    }
    if !report.kept_for_traits.is_empty() {
        writeln!(
            err,
            "note: kept imports of the source module the copy does not name, as they may be traits whose methods it calls (remove those the compiler says are unused): {}",
            report.kept_for_traits.join(", ")
        )?;
    }
    if !report.left_out.is_empty() {
        writeln!(
            err,
            "note: left out imports of the source module the copy does not name; add back any of these that is a trait whose methods it calls: {}",
            report.left_out.join(", ")
        )?;
    }
    let mut todo: Vec<String> = report
        .unresolved
        .iter()
        .map(|u| format!("`{}`: {}", u.name, u.reason))
        .collect();
    todo.extend(
        report
            .unmapped
            .iter()
            .map(|p| format!("map `{p}` in prepare: the types do not say where it comes from")),
    );
    if report.needs_factory {
        todo.push("write build_target: it makes the `self` of the copied method".to_owned());
    }
    if !todo.is_empty() {
        writeln!(out, "to resolve (README.md lists them too):")?;
        for item in &todo {
            writeln!(out, "  - {item}")?;
        }
    }

    Ok(())
}

/// `profile-cli remove NAME`: the snippet's entry in the snippets crate
/// goes first (so that a failure after leaves a workspace that builds),
/// then its directory.
pub(crate) fn remove(
    args: RemoveArgs,
    root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let snippets = root.join("inference_profiling").join("snippets");
    let directory = snippet_directory(&args.name, root).or_else(|| {
        let by_name = snippets.join(args.name.replace('-', "_"));
        by_name.is_dir().then_some(by_name)
    });
    let krate_dir = root.join("inference_profiling");
    let krate = SnippetsCrate::at(&krate_dir);
    let Some(directory) = directory else {
        // Deleted by hand: only its entry is left.
        let wanted = args.name.replace('-', "_");
        let stale = snippet::stale_entries(&krate_dir)
            .into_iter()
            .find(|entry| entry.directory() == wanted);
        return match (stale, &krate) {
            (Some(entry), Some(krate)) => {
                snippet::remove_entry(krate, entry.directory())?;
                writeln!(
                    out,
                    "removed `{}` ({}) from inference_profiling/Cargo.toml: its directory was already gone",
                    entry.package, entry.path
                )?;
                Ok(EXIT_OK)
            }
            _ => {
                writeln!(
                    err,
                    "error: no snippet `{}`: neither a directory with a target.rs nor a name under {}",
                    args.name,
                    snippets.display()
                )?;
                Ok(EXIT_USAGE)
            }
        };
    };
    let shown = directory
        .strip_prefix(root)
        .unwrap_or(&directory)
        .display()
        .to_string();
    let count = |name: &str| {
        std::fs::read_dir(directory.join(name))
            .map(|entries| entries.filter_map(Result::ok).count())
            .unwrap_or(0)
    };
    let (runs, baselines) = (count("runs"), count("baselines"));
    if (runs > 0 || baselines > 0) && !args.force {
        writeln!(
            err,
            "error: {shown} holds {runs} run(s) and {baselines} baseline(s): nothing removed; `--force` removes them with it"
        )?;
        return Ok(EXIT_USAGE);
    }
    if let Some(krate) = &krate {
        if let Some(name) = directory.file_name().and_then(|n| n.to_str()) {
            if snippet::remove_entry(krate, name)? {
                writeln!(
                    out,
                    "removed its entry from {}",
                    krate
                        .dir
                        .join("Cargo.toml")
                        .strip_prefix(root)
                        .unwrap_or(&krate.dir)
                        .display()
                )?;
            }
        }
    }
    std::fs::remove_dir_all(&directory)
        .map_err(|error| anyhow::anyhow!("cannot remove {shown}: {error}"))?;
    writeln!(out, "removed {shown}/")?;
    Ok(EXIT_OK)
}

/// `profile-cli check NAME`.
pub(crate) fn check(
    args: CheckArgs,
    root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let Some(directory) = snippet_directory(&args.name, root) else {
        writeln!(
            err,
            "error: no snippet `{}`: neither a directory with a target.rs nor a name under {}",
            args.name,
            root.join("inference_profiling/snippets").display()
        )?;
        return Ok(EXIT_USAGE);
    };
    let Some(krate) = SnippetsCrate::of_directory(&directory) else {
        writeln!(
            err,
            "error: {} is not in the snippets/ directory of a crate, so nothing compiles it: move it there first",
            directory.display()
        )?;
        return Ok(EXIT_USAGE);
    };
    let profile = profile_name(&directory);
    let shown = directory
        .strip_prefix(root)
        .unwrap_or(&directory)
        .display()
        .to_string();
    let mut code = check_and_report(
        &krate,
        &directory,
        &shown,
        &profile,
        Command::Check,
        out,
        err,
    )?;
    if code == EXIT_OK && args.smoke {
        code = smoke_check(&krate, &directory, out, err)?;
    }
    Ok(code)
}

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
    let release = profiling_core::driver::host::build_profile() == "release";
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

/// `profile-cli init`: the profiling crate of the workspace the user is in
/// (`found`); `build_root` is the checkout this binary was built from.
pub(crate) fn init(
    args: InitArgs,
    found: &Path,
    build_root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    use profiling_extract::workspace::{self, CoreSource, InitOutcome, InitRequest};
    let found = found.to_path_buf();
    let core = match (args.core_git, args.core_path) {
        (Some(url), _) => CoreSource::Git(url),
        (None, Some(path)) => CoreSource::Path(path),
        // This checkout: the workspace `profile-cli` was built from.
        (None, None) => CoreSource::Path(build_root.to_path_buf()),
    };
    let request = InitRequest {
        workspace: found.clone(),
        core,
        make_workspace: args.make_workspace,
    };
    match workspace::init(&request) {
        Ok(InitOutcome::AlreadyThere) => {
            writeln!(
                out,
                "{} already has its profiling crate ({}/): nothing to do",
                found.display(),
                workspace::PROFILING_DIR
            )?;
            Ok(EXIT_OK)
        }
        Ok(InitOutcome::Created {
            files,
            manifest_change,
        }) => {
            writeln!(out, "created in {}: {}", found.display(), files.join(", "))?;
            writeln!(out, "  Cargo.toml: {manifest_change}")?;
            writeln!(out, "next, from {}:", found.display())?;
            writeln!(
                out,
                "  profile-cli new my-step --from path/to/your_crate/src/file.rs::function"
            )?;
            writeln!(
                out,
                "  cargo run --release -p {} --bin profile -- list",
                workspace::PROFILING_PACKAGE
            )?;
            Ok(EXIT_OK)
        }
        Err(error) => {
            writeln!(err, "error: {error}")?;
            Ok(error.exit_code())
        }
    }
}

/// The command a user types next where the snippets crate lives (see
/// [`profiling_extract::runner_command`]); `scripts/profile` outside one.
fn tool(krate: Option<&SnippetsCrate>) -> &'static str {
    krate.map_or("scripts/profile", |krate| {
        profiling_extract::runner_command(&krate.workspace_root())
    })
}
