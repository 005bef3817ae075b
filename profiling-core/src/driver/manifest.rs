//! `manifest.yaml`: what ran, on what, how it ended and how long it took.
//!
//! Every field of the reference tool's manifest is here under its name,
//! with the status, timestamps, build, host and timings added. The run's
//! writer (`run_dir`) puts it in place through a temporary file and a
//! rename, so a reader never sees half of one.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_yaml::Value;

use crate::device::Device;
use crate::driver::config::{CudaPolicy, LastBatch, RecordReading};
pub use crate::driver::contention::MachineState;
use crate::driver::provenance::{BackendInfo, HostInfo};
use crate::driver::runner::{CallCounts, OutputSummary, Pass, Phase, Timings, Validation};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

fn first_schema() -> u32 {
    1
}

/// The manifest of one run: written by the run, read back through these
/// types by everything that reads runs (a field renamed here is renamed
/// for every reader, and the manifest this crate keeps as a fixture,
/// `tests/fixtures/manifest-v2.yaml`, must still read). Fields added to
/// version 2 after it was first written default when a manifest lacks
/// them; the identity of the run and what it ran do not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`SCHEMA_VERSION`] (1 when a manifest has none).
    #[serde(default = "first_schema")]
    pub schema_version: u32,
    pub profile_name: String,
    pub run_id: String,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ManifestError>,
    /// `SIGINT` or `SIGTERM` when a signal stopped the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<String>,
    pub target: ManifestTarget,
    pub data_source: ManifestDataSource,
    #[serde(default)]
    pub record_ids: Vec<String>,
    /// The batch of each record of `record_ids`, in its order (the
    /// record's index with `batch_size` 1).
    #[serde(default)]
    pub record_batches: Vec<u32>,
    pub workload: Workload,
    #[serde(default)]
    pub capture_range: String,
    pub cuda: CudaPolicy,
    pub device: Device,
    #[serde(default)]
    pub git_commit: Option<String>,
    #[serde(default)]
    pub git_dirty: Option<bool>,
    /// Why `git_commit` is null: "not a git checkout", "a git repository
    /// with no commit yet" or "git was not found".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_note: Option<String>,
    #[serde(default)]
    pub command_line: String,
    #[serde(default)]
    pub config_path: Option<PathBuf>,
    #[serde(default)]
    pub expected_trace_path: PathBuf,
    #[serde(default)]
    pub output_summaries: Vec<OutputSummary>,
    #[serde(default)]
    pub started_at: String,
    #[serde(default)]
    pub finished_at: String,
    #[serde(default)]
    pub profile_cli_version: String,
    #[serde(default)]
    pub build_profile: String,
    /// The allocator the run's binary allocated with: the counting
    /// allocator's inner one by type name (`std::alloc::System`,
    /// `mimalloc::MiMalloc`), or why it is not known (another global
    /// allocator); absent from manifests written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocator: Option<String>,
    pub host: HostInfo,
    pub backend: BackendInfo,
    #[serde(default)]
    pub calls: CallCounts,
    #[serde(default)]
    pub completed_warmup: u32,
    #[serde(default)]
    pub completed_iterations: u32,
    pub validation: Validation,
    #[serde(default)]
    pub timings: Timings,
    /// `samples.bin` beside the manifest, when it was written: every
    /// duration the timings come from (see `run_samples`).
    #[serde(default)]
    pub samples: Option<SamplesSummary>,
    /// `trace.json` beside the manifest, when one was written.
    #[serde(default)]
    pub trace: Option<crate::driver::trace::TraceSummary>,
    /// The sweep this run is a point of (`profile-cli sweep`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepPoint>,
    /// The paired run this run is a side of (`profile-cli ab`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair: Option<PairInfo>,
}

/// One side of a paired run: its passes alternated in blocks with the
/// other side's, in one capture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairInfo {
    /// The paired run's id: its directory under the base profile's `runs/`.
    pub id: String,
    /// `base` or `candidate`.
    pub side: String,
    /// The other side's target.
    pub other_target: String,
    /// The blocks of passes, in the order they ran: `base` or `candidate`
    /// and how many passes in a row.
    pub blocks: Vec<(String, u32)>,
}

/// One point of a sweep: which sweep, which point, and the values its
/// config was given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestDataSource {
    pub name: String,
    pub description: BTreeMap<String, Value>,
}

/// How much work the run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    pub warmup: u32,
    /// The measured passes: as configured, or as `measurement_time` sized
    /// them.
    pub iterations: u32,
    /// How `measurement_time` (`--measurement-time`) sized the measured
    /// passes; absent when `iterations` counted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measurement_time: Option<crate::driver::runner::MeasurementTime>,
    /// Records per target call.
    pub batch_size: u32,
    /// What a short last batch did.
    pub last_batch: LastBatch,
    pub record_loading: RecordReading,
    pub seed: Option<u64>,
    /// `shuffle` and `records`, when the config set them.
    #[serde(flatten)]
    pub selection: crate::data::Selection,
    pub validate_output: bool,
    /// `gpu_timing` as configured (`timings.gpu` is there when events
    /// were recorded).
    pub gpu_timing: crate::driver::config::GpuTiming,
    /// `memory` as configured (`timings.memory` is there when it is on);
    /// left out when off.
    #[serde(
        default,
        skip_serializing_if = "crate::driver::config::MemoryMode::is_off"
    )]
    pub memory: crate::driver::config::MemoryMode,
}

/// Where and why a run failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestError {
    pub phase: Phase,
    /// The record; on a batch, its first record.
    pub record_id: Option<String>,
    /// The batch, with `batch_size` > 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<u32>,
    pub pass: Pass,
    pub message: String,
}

/// Why a manifest could not be read as this build reads one.
#[derive(Debug, thiserror::Error)]
pub enum ManifestReadError {
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a run manifest: {reason}", .path.display())]
    Invalid { path: PathBuf, reason: String },
}

impl Manifest {
    /// The manifest as YAML text.
    pub fn to_yaml(&self) -> Result<String, serde_yaml::Error> {
        serde_yaml::to_string(self)
    }

    /// A manifest from its YAML text: one of [`SCHEMA_VERSION`] (or an
    /// earlier layout this build reads); the error says which key is wrong.
    pub fn from_yaml(text: &str) -> Result<Manifest, String> {
        let value: Value = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
        Manifest::from_value(value)
    }

    /// [`Manifest::from_yaml`] of a manifest already parsed as YAML.
    pub fn from_value(value: Value) -> Result<Manifest, String> {
        match value.get("schema_version").map(Value::as_u64) {
            Some(Some(version)) if (1..=u64::from(SCHEMA_VERSION)).contains(&version) => {}
            None => {}
            Some(_) => {
                return Err(format!(
                    "schema_version: this build reads versions 1 to {SCHEMA_VERSION} (a newer profile-cli wrote it?)"
                ))
            }
        }
        serde_yaml::from_value(value).map_err(|e| e.to_string())
    }

    /// The manifest in the file at `path`.
    pub fn read(path: &std::path::Path) -> Result<Manifest, ManifestReadError> {
        let text = std::fs::read_to_string(path).map_err(|source| ManifestReadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Manifest::from_yaml(&text).map_err(|reason| ManifestReadError::Invalid {
            path: path.to_path_buf(),
            reason,
        })
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
                measurement_time: None,
                batch_size: 1,
                last_batch: LastBatch::Keep,
                record_loading: RecordReading::Eager,
                seed: None,
                selection: Default::default(),
                validate_output: true,
                gpu_timing: crate::driver::config::GpuTiming::Auto,
                memory: crate::driver::config::MemoryMode::Off,
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
            allocator: None,
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
            pair: None,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A manifest `profile-cli run` wrote (the example detection
    /// pipeline, 1 warmup and 3 measured passes), kept as it was written.
    const FIXTURE: &str = include_str!("../../tests/fixtures/manifest-v2.yaml");

    #[test]
    fn a_manifest_written_by_a_run_reads_through_its_types() {
        let manifest = Manifest::from_yaml(FIXTURE).unwrap();
        assert_eq!(manifest.schema_version, 2);
        assert_eq!(manifest.profile_name, "detection-pipeline");
        assert_eq!(manifest.run_id, "fixture");
        assert_eq!(manifest.status, Status::Completed);
        assert_eq!(manifest.device, Device::Cpu);
        assert_eq!(
            (manifest.workload.warmup, manifest.workload.iterations),
            (1, 3)
        );
        assert_eq!(manifest.completed_iterations, 3);
        assert_eq!(manifest.timings.iterations.map(|s| s.count), Some(3));
        let names: Vec<&str> = manifest
            .timings
            .range_tree
            .iter()
            .map(|p| p.path.as_str())
            .collect();
        assert!(names.contains(&"preprocess/letterbox/resize"), "{names:?}");
        assert!(manifest
            .samples
            .as_ref()
            .is_some_and(|s| s.path.ends_with("fixture/samples.bin")));
        // Every field is read: written again, it is the same document.
        let again: Value = serde_yaml::from_str(&manifest.to_yaml().unwrap()).unwrap();
        let original: Value = serde_yaml::from_str(FIXTURE).unwrap();
        assert_eq!(again, original);
    }

    #[test]
    fn fields_added_to_version_2_later_default_when_missing() {
        let mut value: Value = serde_yaml::from_str(FIXTURE).unwrap();
        let top = value.as_mapping_mut().unwrap();
        for key in ["record_batches", "git_note", "sweep"] {
            top.remove(key);
        }
        let timings = value["timings"].as_mapping_mut().unwrap();
        for key in ["per_record", "load_ns", "range_tree"] {
            timings.remove(key);
        }
        let manifest = Manifest::from_value(value).unwrap();
        assert!(manifest.record_batches.is_empty());
        assert_eq!(manifest.timings.per_record, None);
        assert_eq!(manifest.timings.read_ns, 0);
        assert!(manifest.timings.range_tree.is_empty());
    }

    #[test]
    fn a_manifest_of_a_newer_layout_or_without_its_identity_is_refused() {
        let newer = FIXTURE.replacen("schema_version: 2", "schema_version: 3", 1);
        let error = Manifest::from_yaml(&newer).unwrap_err();
        assert!(
            error.starts_with("schema_version: this build reads versions 1 to 2"),
            "{error}"
        );
        let nameless = FIXTURE.replacen("profile_name: detection-pipeline\n", "", 1);
        let error = Manifest::from_yaml(&nameless).unwrap_err();
        assert!(error.contains("profile_name"), "{error}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.yaml");
        std::fs::write(&path, "status: [").unwrap();
        let error = Manifest::read(&path).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!("{}: not a run manifest: ", path.display())),
            "{error}"
        );
    }
}
