//! `profile-cli init`: the profiling crate of a workspace of one's own.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use crate::exit::EXIT_OK;

#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// The checkout of this project whose profiling-core and profiling-cli it depends on.
    #[arg(long, value_name = "DIR", conflicts_with = "core_git")]
    pub(crate) core_path: Option<PathBuf>,
    /// Depend on profiling-core and profiling-cli from this git repository instead.
    #[arg(long, value_name = "URL")]
    pub(crate) core_git: Option<String>,
    /// Turn a package that is not a workspace into one, with the profiling crate as a member.
    #[arg(long)]
    pub(crate) make_workspace: bool,
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
