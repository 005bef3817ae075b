//! `sweep.yaml`: a sweep's grid, and for every point how it ended and
//! what it measured. Written when the sweep starts and again after every
//! point (through a temporary file and a rename), so that a sweep stopped
//! anywhere says which points completed, and `sweep --resume` reads it back.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_yaml::{Mapping, Value};

/// The layout of `sweep.yaml`.
pub const SWEEP_SCHEMA_VERSION: u32 = 1;

/// The file a sweep writes in its directory.
pub const SWEEP_FILE: &str = "sweep.yaml";

/// The whole of `sweep.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepDocument {
    /// [`SWEEP_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The sweep's directory name under the profile's `runs/`.
    pub sweep_id: String,
    pub profile_name: String,
    /// The target every point runs.
    pub target: String,
    /// The config the points start from (`None`: built-in defaults).
    pub config_path: Option<PathBuf>,
    /// The command line that started the sweep.
    pub command_line: String,
    /// UTC, RFC 3339.
    pub started_at: String,
    /// When the last point ended, once the sweep stopped.
    pub finished_at: Option<String>,
    pub status: SweepStatus,
    /// True when the value lists were taken side by side (`--zip`), false
    /// for their cartesian product.
    pub zip: bool,
    /// The confidence of every interval below (0.95).
    pub confidence: f64,
    /// The swept keys, in the order given, each with its values in order.
    pub grid: Vec<Axis>,
    /// Every point, in grid order (the last key varies fastest).
    pub points: Vec<PointResult>,
}

/// One swept key and its values, in the order given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    /// A dotted config key: `workload.batch_size`, `target.parameters.size`.
    pub key: String,
    pub values: Vec<Value>,
}

/// How the sweep stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepStatus {
    /// Points are running (or the process running them was killed).
    Running,
    /// Every point ran (some may have failed).
    Completed,
    /// Stopped by Ctrl-C or SIGTERM after a point: `--resume` runs the rest.
    Interrupted,
    /// Stopped at a failed point by `--fail-fast`.
    Stopped,
}

/// How a point stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointStatus {
    /// Not run yet.
    Pending,
    /// Started and not finished: the process was killed while it ran.
    Running,
    Completed,
    /// The run failed or was refused; `error` says why.
    Failed,
}

/// One point of the grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointResult {
    /// Its position in the grid, from 0.
    pub index: usize,
    /// Its directory name under the sweep's directory.
    pub point: String,
    /// Each swept key and its value here, in grid order.
    pub values: Mapping,
    pub status: PointStatus,
    /// The run's directory (absolute), once it ran.
    pub run_dir: Option<PathBuf>,
    /// Why it failed.
    pub error: Option<String>,
    /// Records per target call (`workload.batch_size`).
    pub batch_size: u32,
    /// Records run in one measured pass.
    pub records_per_pass: Option<u64>,
    /// The measured passes' median with its interval.
    pub pass: Option<Estimate>,
    /// The target calls' median with its interval.
    pub call: Option<Estimate>,
    /// The pass median over the records of a pass.
    pub time_per_record_ns: Option<f64>,
    /// Records per second at the pass median.
    pub records_per_second: Option<f64>,
    /// Every range (inclusive time), largest median first.
    pub ranges: Vec<RangeEstimate>,
    /// With `memory: on`: what a measured pass allocated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<PointMemory>,
}

/// What a point's measured passes allocated (medians over its passes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointMemory {
    pub allocations_per_pass: u64,
    pub allocated_bytes_per_pass: u64,
    pub peak_bytes_per_pass: u64,
    /// True when every pass counted as many allocations.
    pub exact: bool,
    /// By range name: its allocations per pass (median), most first.
    pub ranges: Vec<RangeAllocations>,
}

/// A range name's allocations per pass at one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RangeAllocations {
    pub name: String,
    /// The median over the point's passes, its children's included.
    pub allocations_per_pass: u64,
}

/// A median and its distribution-free confidence interval (order
/// statistics), in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub median_ns: u64,
    pub low_ns: u64,
    pub high_ns: u64,
    /// The samples the median is taken over.
    pub samples: u64,
}

/// One range name at one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RangeEstimate {
    pub name: String,
    /// The range's inclusive time per opening.
    #[serde(flatten)]
    pub inclusive: Estimate,
    /// How often it opened per measured pass.
    pub calls_per_pass: f64,
    /// Median × openings per pass / records per pass.
    pub time_per_record_ns: Option<f64>,
}

impl SweepDocument {
    /// Reads `sweep.yaml` from `dir`.
    pub fn read(dir: &Path) -> Result<SweepDocument, String> {
        let path = dir.join(SWEEP_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
        let document: SweepDocument = serde_yaml::from_str(&text)
            .map_err(|error| format!("{}: not a sweep file: {error}", path.display()))?;
        if document.schema_version != SWEEP_SCHEMA_VERSION {
            return Err(format!(
                "{}: schema_version {} (this build reads {SWEEP_SCHEMA_VERSION})",
                path.display(),
                document.schema_version
            ));
        }
        // Point names become directories when a sweep resumes: each one
        // path component, whoever wrote the file.
        for point in &document.points {
            crate::driver::config::check_run_id(&point.point)
                .map_err(|reason| format!("{}: points: point: {reason}", path.display()))?;
        }
        Ok(document)
    }

    /// Writes `sweep.yaml` into `dir` whole ([`files::write_atomically`]).
    ///
    /// [`files::write_atomically`]: crate::driver::files::write_atomically
    pub fn write(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let path = dir.join(SWEEP_FILE);
        let text = serde_yaml::to_string(self).map_err(std::io::Error::other)?;
        crate::driver::files::write_atomically(&path, text.as_bytes())?;
        Ok(path)
    }

    /// The points that ran to the end.
    pub fn completed(&self) -> impl Iterator<Item = &PointResult> {
        self.points
            .iter()
            .filter(|p| p.status == PointStatus::Completed)
    }

    /// True when some point runs more than one record per call.
    pub fn batched(&self) -> bool {
        self.points.iter().any(|p| p.batch_size > 1)
            || self
                .grid
                .iter()
                .any(|axis| matches!(axis.key.as_str(), "workload.batch_size" | "batch_size"))
    }
}
