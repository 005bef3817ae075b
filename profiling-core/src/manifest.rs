//! `manifest.yaml`: what ran, on what, how it ended and how long it took.
//!
//! Every field of the reference tool's manifest is here under its name,
//! with the status, timestamps, build, host and timings added. The run's
//! writer (`run_dir`) puts it in place through a temporary file and a
//! rename, so a reader never sees half of one.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;
use serde_yaml::Value;

use crate::config::{CudaPolicy, LastBatch, RecordLoading};
use crate::device::Device;
use crate::host::{BackendInfo, HostInfo};
use crate::runner::{CallCounts, OutputSummary, Pass, Phase, Timings, Validation};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Completed,
    Failed,
    /// Stopped by SIGINT or SIGTERM after a target call.
    Interrupted,
}

/// The version of the manifest's layout: 2 added `schema_version` and
/// `samples` (a manifest without `schema_version` is version 1).
pub const SCHEMA_VERSION: u32 = 2;

/// The manifest of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Manifest {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    pub profile_name: String,
    pub run_id: String,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ManifestError>,
    /// `SIGINT` or `SIGTERM` when a signal stopped the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<String>,
    pub target: ManifestTarget,
    pub data_source: ManifestDataSource,
    pub record_ids: Vec<String>,
    /// The batch of each record of `record_ids`, in its order (the
    /// record's index with `batch_size` 1).
    pub record_batches: Vec<u32>,
    pub workload: Workload,
    pub capture_range: String,
    pub cuda: CudaPolicy,
    pub device: Device,
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    /// Why `git_commit` is null: "not a git checkout", "a git repository
    /// with no commit yet" or "git was not found".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git_note: Option<String>,
    pub command_line: String,
    pub config_path: Option<PathBuf>,
    pub expected_trace_path: PathBuf,
    pub output_summaries: Vec<OutputSummary>,
    pub started_at: String,
    pub finished_at: String,
    pub profile_cli_version: String,
    pub build_profile: String,
    pub host: HostInfo,
    pub backend: BackendInfo,
    pub calls: CallCounts,
    pub completed_warmup: u32,
    pub completed_iterations: u32,
    pub validation: Validation,
    pub timings: Timings,
    /// `samples.bin` beside the manifest, when it was written: every
    /// duration the timings come from (see `run_samples`).
    pub samples: Option<SamplesSummary>,
    /// `trace.json` beside the manifest, when one was written.
    pub trace: Option<crate::trace::TraceSummary>,
    /// The sweep this run is a point of (`profile-cli sweep`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepPoint>,
}

/// One point of a sweep: which sweep, which point, and the values its
/// config was given.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepPoint {
    /// The sweep's id: its directory under the profile's `runs/`.
    pub id: String,
    /// The point's position in the grid, from 0.
    pub index: usize,
    /// The point's directory name under the sweep's.
    pub point: String,
    /// Each swept key (dotted, as given) and its value at this point.
    pub values: serde_yaml::Mapping,
}

/// The samples file of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SamplesSummary {
    pub path: PathBuf,
    /// The file's layout version.
    pub version: u32,
    /// Series in the file: pass, call, warmup pass, and two per range name.
    pub series: u64,
    pub bytes: u64,
    /// True when some series keep, past their first samples, only the
    /// histogram the run used.
    pub sketched: bool,
}

/// The target that ran and where it is defined.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ManifestTarget {
    pub name: String,
    pub import_path: Option<String>,
    pub profile_prepare: bool,
    pub parameters: serde_yaml::Mapping,
    pub type_name: String,
    pub source: String,
    pub module_path: String,
}

/// The data source and its own description of what it read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ManifestDataSource {
    pub name: String,
    pub description: BTreeMap<String, Value>,
}

/// How much work the run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    pub warmup: u32,
    pub iterations: u32,
    /// Records per target call.
    pub batch_size: u32,
    /// What a short last batch did.
    pub last_batch: LastBatch,
    pub record_loading: RecordLoading,
    pub seed: Option<u64>,
    pub validate_output: bool,
    /// `gpu_timing` as configured (`timings.gpu` is there when events
    /// were recorded).
    pub gpu_timing: crate::config::GpuTiming,
}

/// Where and why a run failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ManifestError {
    pub phase: Phase,
    /// The record; on a batch, its first record.
    pub record_id: Option<String>,
    /// The batch, with `batch_size` > 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<u32>,
    pub pass: Pass,
    pub message: String,
}

impl Manifest {
    /// The manifest as YAML text.
    pub fn to_yaml(&self) -> Result<String, serde_yaml::Error> {
        serde_yaml::to_string(self)
    }
}

impl Manifest {
    /// A completed run of `t` with nothing measured: for tests of what is
    /// written and how (this crate's and those of the crates reading runs).
    #[doc(hidden)]
    pub fn sample(run_id: &str) -> Manifest {
        Manifest {
            schema_version: SCHEMA_VERSION,
            profile_name: "t".to_owned(),
            run_id: run_id.to_owned(),
            status: Status::Completed,
            error: None,
            interrupted_by: None,
            target: ManifestTarget {
                name: "t".to_owned(),
                import_path: None,
                profile_prepare: false,
                parameters: serde_yaml::Mapping::new(),
                type_name: "T".to_owned(),
                source: "t.rs:1".to_owned(),
                module_path: "t".to_owned(),
            },
            data_source: ManifestDataSource {
                name: "dummy".to_owned(),
                description: BTreeMap::new(),
            },
            record_ids: Vec::new(),
            record_batches: Vec::new(),
            workload: Workload {
                warmup: 0,
                iterations: 1,
                batch_size: 1,
                last_batch: LastBatch::Keep,
                record_loading: RecordLoading::Eager,
                seed: None,
                validate_output: true,
                gpu_timing: crate::config::GpuTiming::Auto,
            },
            capture_range: "profile-target".to_owned(),
            cuda: CudaPolicy::default(),
            device: Device::Cpu,
            git_commit: None,
            git_dirty: None,
            git_note: None,
            command_line: String::new(),
            config_path: None,
            expected_trace_path: PathBuf::new(),
            output_summaries: Vec::new(),
            started_at: String::new(),
            finished_at: String::new(),
            profile_cli_version: String::new(),
            build_profile: String::new(),
            host: HostInfo::current(),
            backend: BackendInfo::current(),
            calls: CallCounts::default(),
            completed_warmup: 0,
            completed_iterations: 1,
            validation: Validation::Warmup,
            timings: Timings::default(),
            samples: None,
            trace: None,
            sweep: None,
        }
    }
}

/// The name of a signal the run can be stopped by.
pub fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGINT => "SIGINT".to_owned(),
        libc::SIGTERM => "SIGTERM".to_owned(),
        other => format!("signal {other}"),
    }
}
