//! One invocation of `profile-cli run`, from arguments to manifest.
//!
//! [`plan()`] resolves the config, the target, the device and the run
//! directory and checks every rule without side effects (so
//! `--print-nsys-command` can stop there); [`execute()`] checks that the run
//! directory is free, seeds, reads the records, launches the target and
//! writes the manifest. Bad input is refused before any target code runs
//! and before anything is written.

mod command;
mod execute;
mod load;
pub mod pair;
mod plan;
mod profiles;

pub use command::explicit_command;
pub use execute::{execute, execute_pair, execute_stepped, execute_with_progress, RunEnd};
pub use load::{
    execute_load, read_load_manifest, LoadEnd, LoadManifest, LoadPage, LoadRequestRecord,
    LoadSection, LoadSpec, LoadStatus, LOAD_MANIFEST,
};
pub use plan::{check_batches, check_run_dir_free, plan, run_root};
pub use profiles::{profiles, ProfileRuns};

use std::path::{Path, PathBuf};

use serde_yaml::Value;

use crate::data::DataError;
use crate::device::Device;
use crate::driver::config::{Config, ConfigError, Overrides};
use crate::driver::registry::TargetEntry;
use crate::driver::runner::RunError;

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// The target named on the command line.
    pub target: Option<String>,
    /// `--config FILE`.
    pub config_path: Option<PathBuf>,
    pub overrides: Overrides,
    /// `--run-id`; a UTC timestamp when absent.
    pub run_id: Option<String>,
    /// `--force`: replace an earlier run with the same id.
    pub force: bool,
    /// The workspace the targets were built from: relative source files
    /// and the default run directory are taken from it.
    pub workspace_root: PathBuf,
    /// Where runs go when neither `--output-dir`, the config's `output_dir`
    /// nor `--config FILE` (runs beside it) says: the current directory of a
    /// command run outside the workspace, rather than a tree found from
    /// where the program was built (or beside a config found there).
    pub default_output_dir: Option<PathBuf>,
    /// The command line as typed, for the manifest.
    pub command_line: Vec<String>,
    /// The version of the program, for the manifest.
    pub program_version: String,
    /// Dotted config keys set to these values over the config (a sweep's
    /// point: [`ConfigFile::with_edits`](crate::driver::config::ConfigFile::with_edits)).
    pub config_edits: Vec<(String, Value)>,
    /// The sweep this run is a point of, for the manifest.
    pub sweep: Option<crate::driver::manifest::SweepPoint>,
    /// The paired run this run is a side of, for the manifest.
    pub pair: Option<crate::driver::manifest::PairInfo>,
}

/// Where the config of a run came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigOrigin {
    /// `--config FILE`.
    Explicit,
    /// The `config.yaml` beside the target's source file.
    BesideTarget,
    /// Built-in defaults: dummy source, cpu, one warmup and one measured pass.
    Defaults,
}

/// A run that passed every check and can start.
#[derive(Debug)]
pub struct Planned {
    pub config: Config,
    pub config_path: Option<PathBuf>,
    pub config_origin: ConfigOrigin,
    pub entry: &'static TargetEntry,
    pub run_id: String,
    pub run_dir: PathBuf,
    /// `--force`: an earlier run in `run_dir` is replaced.
    pub force: bool,
    /// The root of the run directories, which holds the caches
    /// ([`run_root`]).
    pub run_root: PathBuf,
    /// Where the run is claimed and written when that is not `run_dir`:
    /// a side of a paired run is written into the pair's staging
    /// directory, which moves into place whole with both sides. What the
    /// manifest records is still `run_dir`'s.
    pub staged_in: Option<PathBuf>,
    /// The sections of the config file that commands other than `run`
    /// read (`load:`, `sweep:`, `ab.accept`), and `run --nsys` reads
    /// (`nsys.args`), from the one reading of it.
    pub sections: ConfigSections,
}

/// What a config file holds for the commands beside `run`: read with the
/// rest of it by [`plan()`], so that no command reads the file again.
#[derive(Debug, Clone, Default)]
pub struct ConfigSections {
    /// `load:`, the defaults of `profile-cli load`.
    pub load: Option<crate::driver::config::LoadConfig>,
    /// `sweep:`, the axes of `profile-cli sweep` without `--set`.
    pub sweep: Option<Value>,
    /// `ab.accept`, the gates of `profile-cli ab` without `--accept`.
    pub ab_accept: Option<String>,
    /// `nsys.args`, the options `run --nsys` adds to the capture.
    pub nsys_args: Vec<String>,
}

impl Planned {
    /// Where the run is claimed, checked and written: `staged_in`, else
    /// `run_dir`.
    pub fn write_dir(&self) -> &Path {
        self.staged_in.as_deref().unwrap_or(&self.run_dir)
    }
}

/// Why a run did not happen or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Usage(String),
    #[error("unknown target `{name}`{}", near_hint(.near))]
    UnknownTarget { name: String, near: Vec<String> },
    #[error("target `{name}` is not in this build: it needs the `{feature}` feature; build with it: `scripts/profile --features {feature} run {name}` (or `cargo build --release -p profiling-cli --features {feature}`)")]
    NeedsFeature { name: String, feature: &'static str },
    #[error("target name `{name}` is registered more than once ({}): rename one of them", .places.join(", "))]
    AmbiguousTarget { name: String, places: Vec<String> },
    #[error("target.import_path `{import_path}` does not match target `{name}`, defined at {defined_at}{detail}")]
    ImportPathMismatch {
        import_path: String,
        name: String,
        defined_at: String,
        detail: String,
    },
    #[error("device `{device}`: {reason}")]
    DeviceUnavailable { device: Device, reason: String },
    #[error("run id `{run_id}` is already used: {} exists; choose another --run-id, or replace it with --force", .run_dir.display())]
    RunExists { run_id: String, run_dir: PathBuf },
    #[error("--run-id: {0}")]
    RunId(String),
    #[error(transparent)]
    RunClaimed(#[from] crate::driver::run_dir::ClaimError),
    #[error("cannot write the run to {}: {reason}", .run_dir.display())]
    OutputNotWritable { run_dir: PathBuf, reason: String },
    #[error("target `{name}` does not take batches (batch_size {batch_size}): implement `prepare_batch` in its `ProfileTarget` impl (`{type_name}`, {defined_at}) to run it with `workload.batch_size` > 1")]
    BatchesUnsupported {
        name: String,
        type_name: String,
        /// `file:line` of the impl block.
        defined_at: String,
        batch_size: u32,
    },
    #[error(transparent)]
    Data(#[from] DataError),
    #[error("the target failed: {0}")]
    Target(Box<RunError>),
}

fn near_hint(near: &[String]) -> String {
    if near.is_empty() {
        "; `profile-cli list` shows every target".to_owned()
    } else {
        format!(
            "; did you mean {}?",
            near.iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        )
    }
}

impl SessionError {
    /// 2 for bad usage, config or data; 1 when the target itself failed.
    pub fn exit_code(&self) -> u8 {
        match self {
            SessionError::Target(error) if !error.is_data_error() => 1,
            _ => 2,
        }
    }
}

/// `path` made absolute against the current directory (not resolving links).
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
