//! `profile-cli check`: builds a snippet with the snippets crate; links it
//! in when it compiles, else leaves it a draft.

use std::io::Write;
use std::path::Path;

use clap::Args;
use profiling_extract::SnippetsCrate;

use super::{check_and_report, profile_name, smoke_check, snippet_directory, Command};
use crate::exit::{EXIT_OK, EXIT_USAGE};

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The snippet: its profile name, or its directory.
    pub(crate) name: String,
    /// Also run its target once (no warmup, one measured pass) on its config.yaml.
    #[arg(long)]
    pub(crate) smoke: bool,
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
