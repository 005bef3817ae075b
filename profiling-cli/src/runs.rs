//! `profile-cli runs clean`: what runs that stopped while writing left
//! beside their run directories, put right (`profiling_core::driver::run_dir`).

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use profiling_core::driver::run_dir::clean_leftovers;
use profiling_core::driver::session::profiles;

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(subcommand)]
    command: RunsCommand,
}

#[derive(Debug, Subcommand)]
enum RunsCommand {
    /// Restore or remove what runs that stopped while writing left beside their run directories.
    ///
    /// A run killed while replacing an earlier one (`--force`) can leave that earlier run moved
    /// aside as `.<run_id>.replaced-<pid>`, and any run killed while writing leaves
    /// `.<run_id>.partial-<pid>` and its lock file `.<run_id>.claim`; a run under Nsight Systems
    /// (`run --nsys`) that stopped leaves its report in `.<run_id>.nsys/`. For every run id with
    /// such files, in every profile's runs/ directory: an earlier run with no run in its place is
    /// restored, Nsight's report goes into its run when the run is whole and has none, the rest
    /// is removed. A run id a live run holds is left alone, and said. The next
    /// run with the same id does the same for its own id. A runs/ directory that is a symbolic
    /// link is not followed.
    ///
    /// Exit codes: 0 everything found was put right (or there was nothing); 1 something could
    /// not be (each said on stderr).
    Clean(CleanArgs),
}

#[derive(Debug, Args)]
struct CleanArgs {
    /// Clean the runs made with --output-dir DIR (DIR/<profile>/runs/) instead of the profiles'.
    #[arg(long, value_name = "DIR")]
    output_dir: Option<PathBuf>,
}

impl RunsArgs {
    /// Cleans the runs under `dir` when `--output-dir` does not say.
    pub(crate) fn default_output_dir(&mut self, dir: PathBuf) {
        match &mut self.command {
            RunsCommand::Clean(clean) => {
                clean.output_dir.get_or_insert(dir);
            }
        }
    }
}

pub fn runs_command(
    args: RunsArgs,
    workspace_root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let RunsCommand::Clean(clean) = args.command;
    let mut dirs: Vec<PathBuf> = match &clean.output_dir {
        Some(dir) => std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|entry| entry.path().join("runs"))
            .filter(|runs| runs.is_dir())
            .collect(),
        None => profiles(workspace_root)
            .into_iter()
            .map(|profile| profile.runs)
            .collect(),
    };
    dirs.sort();
    dirs.dedup();
    let mut any = false;
    let mut failed = Vec::new();
    for dir in dirs {
        let cleaned = clean_leftovers(&dir);
        for line in cleaned.done {
            writeln!(out, "{line}")?;
            any = true;
        }
        failed.extend(cleaned.failed);
    }
    if !any && failed.is_empty() {
        writeln!(
            out,
            "nothing to clean: no run stopped half way through writing"
        )?;
    }
    if failed.is_empty() {
        return Ok(crate::exit::EXIT_OK);
    }
    for line in &failed {
        writeln!(err, "error: {line}")?;
    }
    Ok(crate::exit::EXIT_TARGET_FAILED)
}
