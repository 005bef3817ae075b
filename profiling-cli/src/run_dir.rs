//! Where a run's directory goes, as `run` and `load` are told: one set of
//! options flattened into both commands' arguments, so that they parse,
//! mean and `--help` the same. `sweep` and `ab` name a directory of their
//! own (`--sweep-id`, `--ab-id`) and say so in their own words.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub(crate) struct RunDirArgs {
    /// The run's directory name under runs/ (default: UTC time, YYYYMMDDTHHMMSSZ).
    #[arg(long, value_name = "ID")]
    pub(crate) run_id: Option<String>,
    /// Put the run in DIR/<profile_name>/runs/<run_id>/.
    #[arg(long, value_name = "DIR")]
    pub(crate) output_dir: Option<PathBuf>,
    /// Where the run goes when neither --output-dir nor the config says: set
    /// outside the workspace (the current directory).
    #[arg(skip)]
    pub(crate) default_output_dir: Option<PathBuf>,
}
