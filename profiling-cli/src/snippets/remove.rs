//! `profile-cli remove`: deletes a snippet, its directory and its entry in
//! the profiling crate's Cargo.toml.

use std::io::Write;
use std::path::Path;

use clap::Args;
use profiling_extract::{self as snippet, SnippetsCrate};

use super::snippet_directory;
use crate::{EXIT_OK, EXIT_USAGE};

#[derive(Debug, Args)]
pub(crate) struct RemoveArgs {
    /// The snippet: its profile name, or its directory.
    pub(crate) name: String,
    /// Remove it even though it holds runs or baselines: they go too.
    #[arg(long)]
    pub(crate) force: bool,
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
