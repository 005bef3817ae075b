//! `profile-cli new`: copies a production function into a new snippet
//! (target.rs, config.yaml, README.md), then checks it.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use profiling_core::device::Device;
use profiling_extract::{self as snippet, Instrumentation, NewSnippet, SourceSpec, TypeArgs};

use super::{check_and_report, smoke_check, tool, Command};
use crate::exit::{EXIT_OK, EXIT_TARGET_FAILED};
use crate::run;

#[derive(Debug, Args)]
pub(crate) struct NewArgs {
    /// The profile name: the new target's name, and (with - as _) its directory's.
    pub(crate) name: String,
    /// What to copy: FILE.rs::FUNCTION, FILE.rs::TYPE::METHOD or FILE.rs:START-END.
    #[arg(long, value_name = "SOURCE", required_unless_present = "variant_of")]
    pub(crate) from: Option<String>,
    /// Make a variant of the snippet BASE instead: a copy of it beside it (target.rs, config.yaml,
    /// Cargo.toml) under the target name NAME, to edit and measure against BASE with `profile-cli
    /// ab BASE NAME`.
    #[arg(long, value_name = "BASE", conflicts_with_all = ["from", "type_args", "follow", "directory"])]
    pub(crate) variant_of: Option<String>,
    /// The data source of the generated config: a registered name (`list --sources`), or `custom`
    /// for a source of the snippet's own, written at the end of its target.rs.
    #[arg(long, value_name = "NAME", default_value = "dummy")]
    pub(crate) data_source: String,
    /// The device of the generated config: cpu, cuda (= cuda:0) or cuda:N.
    #[arg(long, value_name = "DEVICE", value_parser = run::parse_device, default_value = "cpu")]
    pub(crate) device: Device,
    /// The types (and const values) of a generic function's parameters: D=(),T=f32,N=4. The copy
    /// keeps its generics; `run` calls it with these (the build check checks them against the
    /// bounds).
    #[arg(long, value_name = "NAME=TYPE,...")]
    pub(crate) type_args: Option<String>,
    /// Create the snippet in DIR (which must not exist) instead of inference_profiling/snippets/.
    #[arg(long, value_name = "DIR")]
    pub(crate) directory: Option<PathBuf>,
    /// Do not build the snippet afterwards: it stays a draft until `profile-cli check NAME`.
    #[arg(long)]
    pub(crate) no_check: bool,
    /// Also run the new target once (no warmup, one measured pass) on its config.
    #[arg(long)]
    pub(crate) smoke: bool,
    /// When the function only prepares its arguments and calls another function of its file,
    /// copy that one instead: the profile then times a body, not one call.
    #[arg(long)]
    pub(crate) follow: bool,
}

/// `profile-cli new`: a variant of a snippet, or a new snippet copied from
/// `--from`, then (unless `--no-check`) built and linked in, and what to
/// do next.
pub(crate) fn new(
    args: NewArgs,
    root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    if let Some(base) = &args.variant_of {
        return super::variant::new_variant(&args.name, base, root, args.no_check, out, err);
    }
    let (no_check, smoke) = (args.no_check, args.smoke);
    let request = match request_of(args, root, err)? {
        Ok(request) => request,
        Err(code) => return Ok(code),
    };
    let mut created = match snippet::create(&request) {
        Ok(created) => created,
        Err(error) => {
            writeln!(err, "error: {error}")?;
            return Ok(error.exit_code());
        }
    };
    if !no_check {
        match prune_kept_imports(&request, created) {
            Ok(pruned) => created = pruned,
            Err(error) => {
                writeln!(err, "error: {error}")?;
                return Ok(EXIT_TARGET_FAILED);
            }
        }
    }
    tell_what_was_written(&created, out, err)?;
    let code = check_created(&created, no_check, smoke, out, err)?;
    tell_what_is_next(&created.extracted, code, no_check, out)?;
    Ok(code)
}

/// What `args` ask `new` to create in the workspace at `root`, or the exit
/// code once what is wrong with `--from` or `--type-args` was said on
/// stderr.
fn request_of(
    args: NewArgs,
    root: &Path,
    err: &mut dyn Write,
) -> anyhow::Result<Result<NewSnippet, u8>> {
    let from = match args
        .from
        .as_deref()
        .unwrap_or_default()
        .parse::<SourceSpec>()
    {
        Ok(from) => from,
        Err(error) => {
            writeln!(err, "error: {error}")?;
            return Ok(Err(error.exit_code()));
        }
    };
    let type_args = match args.type_args.as_deref().map(str::parse::<TypeArgs>) {
        None => TypeArgs::default(),
        Some(Ok(type_args)) => type_args,
        Some(Err(error)) => {
            writeln!(err, "error: {error}")?;
            return Ok(Err(error.exit_code()));
        }
    };
    Ok(Ok(NewSnippet {
        name: args.name,
        from,
        data_source: args.data_source,
        device: args.device,
        directory: args.directory,
        workspace_root: root.to_path_buf(),
        type_args,
        follow: args.follow,
    }))
}

/// Builds the snippet `created` and links it in (then runs it once when
/// `smoke`), or says it is a draft (`no_check`) or outside every snippets
/// crate; the exit code of what was done.
fn check_created(
    created: &snippet::Generated,
    no_check: bool,
    smoke: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let extracted = &created.extracted;
    let shown = &extracted.directory_display;
    let mut code = EXIT_OK;
    match (&extracted.snippets_crate, no_check) {
        (None, _) => writeln!(
            err,
            "note: {shown} is not in the snippets/ directory of a crate, so nothing compiles it: it was not built, and `list` and `run` do not know it until it is moved there"
        )?,
        (Some(_), true) => writeln!(
            out,
            "  a draft, not compiled, until `profile-cli check {}` builds it and links it in",
            extracted.target_name
        )?,
        (Some(krate), false) => {
            code = check_and_report(
                krate,
                &created.directory,
                shown,
                &extracted.target_name,
                Command::New,
                out,
                err,
            )?;
            if smoke && code == EXIT_OK {
                code = smoke_check(krate, &created.directory, out, err)?;
            }
        }
    }
    Ok(code)
}

/// The `next:` line: where to move the snippet, or what to edit and the
/// command to run after (`check` while it is not built, `run` once it is).
fn tell_what_is_next(
    extracted: &snippet::Extracted,
    code: u8,
    no_check: bool,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let shown = &extracted.directory_display;
    match &extracted.move_to {
        Some(place) => writeln!(
            out,
            "next: mv {shown} {place}, edit {place}/target.rs, then: {} run --config {} --run-id smoke",
            tool(extracted.snippets_crate.as_ref()),
            extracted.config_display
        ),
        None if code != EXIT_OK || no_check => writeln!(
            out,
            "next: edit {shown}/target.rs, then: {} check {}",
            tool(extracted.snippets_crate.as_ref()),
            extracted.target_name
        ),
        None => writeln!(
            out,
            "next: edit {shown}/target.rs, then: {} run --config {} --run-id smoke",
            tool(extracted.snippets_crate.as_ref()),
            extracted.config_display
        ),
    }
}

/// Imports kept in case they are traits the copy calls methods of: a
/// first build says which are not, and the snippet is written again
/// without them (the build after then has no warnings of theirs).
fn prune_kept_imports(
    request: &NewSnippet,
    created: snippet::Generated,
) -> anyhow::Result<snippet::Generated> {
    let (Some(krate), false) = (
        &created.extracted.snippets_crate,
        created.extracted.kept_for_traits.is_empty(),
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
        profiling_core::driver::files::write_atomically(
            &created.directory.join(snippet::DRAFT_FILE),
            draft.as_bytes(),
        )?;
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
    let extracted = &created.extracted;
    let shown = &extracted.directory_display;
    let files: Vec<&str> = created.files.iter().map(|(name, _)| *name).collect();
    writeln!(out, "created {shown}/: {}", files.join(", "))?;
    let range = match &extracted.instrumentation {
        Instrumentation::KeptAttribute => "its #[nvtx_range] kept".to_owned(),
        Instrumentation::AddedAttribute => "#[nvtx_range] added".to_owned(),
        Instrumentation::Statements { name, first, last } => {
            format!("a range `{name}` around lines {first}-{last}")
        }
    };
    writeln!(
        out,
        "  copied `{}` ({}:{}-{}), {range}",
        extracted.item, extracted.source, extracted.lines.0, extracted.lines.1
    )?;
    if let (Some(added), Some(krate)) = (&extracted.added_dependency, &extracted.snippets_crate) {
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
    for dependency in &extracted.snippet_dependencies {
        writeln!(
            out,
            "  added `{dependency}` to {}/Cargo.toml: {}",
            extracted.directory_display, dependency.reason
        )?;
    }
    for (parameter, source) in &extracted.mapped {
        writeln!(out, "  prepare: `{parameter}` is {source}")?;
    }
    if let Some(note) = &extracted.allocator_note {
        writeln!(out, "  allocator: {note}")?;
    }
    for warning in &extracted.warnings {
        writeln!(err, "warning: {warning}")?;
    }
    if let Some(note) = &extracted.range_note {
        writeln!(err, "note: {note}")?;
    }
    if !extracted.kept_for_traits.is_empty() {
        writeln!(
            err,
            "note: kept imports of the source module the copy does not name, as they may be traits whose methods it calls (remove those the compiler says are unused): {}",
            extracted.kept_for_traits.join(", ")
        )?;
    }
    if !extracted.left_out.is_empty() {
        writeln!(
            err,
            "note: left out imports of the source module the copy does not name; add back any of these that is a trait whose methods it calls: {}",
            extracted.left_out.join(", ")
        )?;
    }
    let mut todo: Vec<String> = extracted
        .unresolved
        .iter()
        .map(|u| format!("`{}`: {}", u.name, u.reason))
        .collect();
    todo.extend(
        extracted
            .unmapped
            .iter()
            .map(|p| format!("map `{p}` in prepare: the types do not say where it comes from")),
    );
    if extracted.needs_factory {
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
