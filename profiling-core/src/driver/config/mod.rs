//! The run configuration: YAML read into typed settings, the reference
//! tool's other spellings folded in, the command line's overrides applied
//! and every rule checked before anything runs; errors name file and key.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_yaml::{Mapping, Value};

use crate::device::Device;
use read::RawConfig;

mod edit;
mod locate;
mod names;
mod read;
mod resolve;

pub(crate) use crate::yaml::parse_size;
pub use crate::yaml::{check_literal_path, describe_value};
pub use edit::WORKLOAD_KEYS;
pub use locate::locate_key;
pub use names::{check_profile_name, check_run_id};
pub use read::LoadConfig;
pub(crate) use resolve::defaults_for;

/// The capture range Nsight Systems is pointed at by default.
pub const DEFAULT_CAPTURE_RANGE: &str = "profile-target";

/// A fully resolved run configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    pub profile_name: String,
    pub target: TargetConfig,
    pub data_source: DataSourceConfig,
    pub device: Device,
    pub warmup: u32,
    /// The measured passes; with `measurement_time`, 1 until the warmup
    /// sizes them.
    pub iterations: u32,
    /// `measurement_time` (`--measurement-time`): the measured passes are
    /// as many as fit in this time at the warmup passes' pace, in place of
    /// `iterations` (criterion's rule).
    pub measurement_time_ns: Option<u64>,
    /// Records per call of the target (`workload.batch_size`, at least 1):
    /// above 1, `prepare_batch` makes one input of each batch.
    pub batch_size: u32,
    /// What a short last batch does (`workload.last_batch`).
    pub last_batch: LastBatch,
    pub record_loading: RecordReading,
    pub seed: Option<u64>,
    /// `workload.shuffle` and `workload.records`: which of the source's
    /// records a pass reads, and in what order.
    pub selection: crate::data::Selection,
    pub validate_output: bool,
    pub capture_range: String,
    pub output_dir: Option<PathBuf>,
    pub write_manifest: bool,
    /// `report.html` beside the manifest (with `write_manifest`).
    pub write_report: bool,
    pub cuda: CudaPolicy,
    /// Device events at range, call and pass boundaries.
    pub gpu_timing: GpuTiming,
    /// Allocations, bytes and peak per pass, call and range.
    pub memory: MemoryMode,
}

/// `target:`: which registered target runs, and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetConfig {
    pub name: String,
    /// `<file.rs>[:<Ident>]`: when given, must match the registered target.
    pub import_path: Option<String>,
    /// Run `prepare` inside every pass instead of once before them.
    pub profile_prepare: bool,
    /// `target.parameters`: settings of the target itself (a model file, a
    /// threshold), read by the target with [`crate::target::parameters`].
    pub parameters: Mapping,
}

/// `data_source:`: the source's name and its parameters (every other key;
/// `cache` and `cache_max_bytes` among them, for a source that keeps a
/// cache).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataSourceConfig {
    pub name: String,
    pub parameters: Mapping,
}

impl Default for DataSourceConfig {
    fn default() -> Self {
        DataSourceConfig {
            name: "dummy".to_owned(),
            parameters: Mapping::new(),
        }
    }
}

impl DataSourceConfig {
    /// Whether the source is asked to keep its cache
    /// (`data_source.cache: true`, or `--cache`).
    pub fn cache_enabled(&self) -> bool {
        matches!(
            self.parameters.get(crate::data::CACHE_KEY),
            Some(serde_yaml::Value::Bool(true))
        )
    }
}

/// When records are read: once before the passes, or afresh in each pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordReading {
    #[default]
    Eager,
    Lazy,
}

impl fmt::Display for RecordReading {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecordReading::Eager => "eager",
            RecordReading::Lazy => "lazy",
        })
    }
}

impl std::str::FromStr for RecordReading {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "eager" => Ok(RecordReading::Eager),
            "lazy" => Ok(RecordReading::Lazy),
            other => Err(format!(
                "unknown record loading `{other}`: expected `eager` or `lazy`"
            )),
        }
    }
}

/// `workload.last_batch`: what becomes of the records left over when the
/// record count is not a multiple of the batch size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LastBatch {
    /// They make a short last batch.
    #[default]
    Keep,
    /// They are left out: every batch is whole.
    Drop,
}

impl fmt::Display for LastBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LastBatch::Keep => "keep",
            LastBatch::Drop => "drop",
        })
    }
}

impl std::str::FromStr for LastBatch {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "keep" => Ok(LastBatch::Keep),
            "drop" => Ok(LastBatch::Drop),
            other => Err(format!(
                "unknown last batch `{other}`: expected `keep` or `drop`"
            )),
        }
    }
}

/// How the records of a pass are grouped into batches: `batch_size` of
/// them in order, and a short last batch kept or dropped.
///
/// ```
/// use profiling_core::driver::config::{Batches, LastBatch};
///
/// let kept = Batches::new(10, 4, LastBatch::Keep);
/// assert_eq!((kept.records, kept.batches), (10, 3));
/// assert_eq!(kept.range(2), 8..10);
/// let dropped = Batches::new(10, 4, LastBatch::Drop);
/// assert_eq!((dropped.records, dropped.batches), (8, 2));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batches {
    /// Records per batch (the last may hold fewer).
    pub size: usize,
    /// Records run in a pass: the source's, less a dropped last batch.
    pub records: usize,
    /// Batches in a pass: target calls.
    pub batches: usize,
}

impl Batches {
    /// The batches of `records` records in batches of `size` (at least 1).
    pub fn new(records: usize, size: u32, last: LastBatch) -> Batches {
        let size = (size as usize).max(1);
        let batches = match last {
            LastBatch::Keep => records.div_ceil(size),
            LastBatch::Drop => records / size,
        };
        Batches {
            size,
            records: records.min(batches * size),
            batches,
        }
    }

    /// The records of batch `index`, as indices into the source's.
    pub fn range(&self, index: usize) -> std::ops::Range<usize> {
        let start = index * self.size;
        start..(start + self.size).min(self.records)
    }
}

/// `memory:`: whether the allocations made in the measured passes are
/// attributed to their passes, calls and ranges
/// ([`crate::memory::attribution`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryMode {
    /// Nothing is attributed: the allocator costs what it always does.
    #[default]
    Off,
    On,
}

impl MemoryMode {
    pub fn is_on(self) -> bool {
        self == MemoryMode::On
    }

    pub fn is_off(&self) -> bool {
        *self == MemoryMode::Off
    }
}

impl fmt::Display for MemoryMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MemoryMode::Off => "off",
            MemoryMode::On => "on",
        })
    }
}

impl std::str::FromStr for MemoryMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "on" => Ok(MemoryMode::On),
            "off" => Ok(MemoryMode::Off),
            other => Err(format!(
                "unknown memory mode `{other}`: expected `on` or `off`"
            )),
        }
    }
}

impl<'de> Deserialize<'de> for MemoryMode {
    /// `on` or `off`, or YAML's `true` and `false`. Read by a visitor of
    /// its own, not an untagged enum: so the YAML reader's errors keep the
    /// key and the line and column of the value.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Mode;
        impl serde::de::Visitor<'_> for Mode {
            type Value = MemoryMode;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`on` or `off` (or true or false)")
            }
            fn visit_bool<E: serde::de::Error>(self, on: bool) -> Result<MemoryMode, E> {
                Ok(if on { MemoryMode::On } else { MemoryMode::Off })
            }
            fn visit_str<E: serde::de::Error>(self, word: &str) -> Result<MemoryMode, E> {
                word.parse().map_err(E::custom)
            }
        }
        deserializer.deserialize_any(Mode)
    }
}

/// `gpu_timing:`: whether ranges, calls and passes of a `cuda` run also
/// record device events for their GPU time ([`crate::timing::gpu`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuTiming {
    /// On for `cuda` runs of a build with the `tch` feature, else off
    /// without a word.
    #[default]
    Auto,
    /// On, or the run is refused when it cannot be.
    On,
    Off,
}

impl fmt::Display for GpuTiming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GpuTiming::Auto => "auto",
            GpuTiming::On => "on",
            GpuTiming::Off => "off",
        })
    }
}

impl std::str::FromStr for GpuTiming {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(GpuTiming::Auto),
            "on" => Ok(GpuTiming::On),
            "off" => Ok(GpuTiming::Off),
            other => Err(format!(
                "unknown GPU timing `{other}`: expected `auto`, `on` or `off`"
            )),
        }
    }
}

impl GpuTiming {
    /// Whether a run on `device` records device events: `on` and `auto`
    /// on a CUDA device of a build with a CUDA backend. `on` where that
    /// cannot be is refused, saying why.
    pub fn resolve(self, device: Device) -> Result<bool, String> {
        let backend = crate::backend::has_gpu_events();
        match (self, device.is_cuda(), backend) {
            (GpuTiming::Off, _, _) => Ok(false),
            (GpuTiming::Auto, cuda, backend) => Ok(cuda && backend),
            (GpuTiming::On, true, true) => Ok(true),
            (GpuTiming::On, false, _) => Err(format!(
                "`on` needs a CUDA device, and the device is `{device}`: use `--device cuda`, or `auto` (the default) to time on the GPU only when there is one"
            )),
            (GpuTiming::On, true, false) => Err("`on` needs the CUDA backend: this build has none (build with `--features tch`; scripts/setup-libtorch installs libtorch)".to_owned()),
        }
    }
}

/// `cuda:`: where the runner synchronizes the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CudaPolicy {
    pub synchronize_before_warmup: bool,
    pub synchronize_after_warmup: bool,
    pub synchronize_before_capture: bool,
    pub synchronize_after_capture: bool,
    pub synchronize_each_iteration: bool,
}

impl Default for CudaPolicy {
    fn default() -> Self {
        CudaPolicy {
            synchronize_before_warmup: true,
            synchronize_after_warmup: true,
            synchronize_before_capture: true,
            synchronize_after_capture: true,
            synchronize_each_iteration: false,
        }
    }
}
/// Settings given on the command line; each wins over the config.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    pub target: Option<String>,
    pub data_source: Option<String>,
    pub device: Option<Device>,
    pub warmup: Option<u32>,
    pub iterations: Option<u32>,
    /// `--measurement-time`, in nanoseconds.
    pub measurement_time_ns: Option<u64>,
    /// `--batch-size`.
    pub batch_size: Option<u32>,
    pub capture_range: Option<String>,
    pub record_loading: Option<RecordReading>,
    pub seed: Option<u64>,
    pub output_dir: Option<PathBuf>,
    pub gpu_timing: Option<GpuTiming>,
    /// `--memory`.
    pub memory: Option<MemoryMode>,
    /// `--cache` (true) or `--no-cache` (false).
    pub cache: Option<bool>,
    /// `--directory`: the directory of the source that reads one
    /// (`data::directory_source`), which is the source when no other is
    /// named; its `paths` are dropped.
    pub directory: Option<PathBuf>,
}

/// A config that cannot be used. Always names the file (when there is one)
/// and the key or position involved.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}{message}", location_prefix(.file.as_deref(), *.line, *.column))]
    Syntax {
        file: Option<PathBuf>,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}{key}: {message}", file_prefix(.file.as_deref()))]
    Invalid {
        file: Option<PathBuf>,
        key: String,
        message: String,
    },
    /// A value given on the command line, named by its option.
    #[error("command line: {option}: {message}")]
    CommandLine { option: String, message: String },
}

fn file_prefix(file: Option<&Path>) -> String {
    file.map(|f| format!("{}: ", f.display()))
        .unwrap_or_default()
}

fn location_prefix(file: Option<&Path>, line: usize, column: usize) -> String {
    let name = file.map_or_else(|| "config".to_owned(), |f| f.display().to_string());
    format!("{name}:{line}:{column}: ")
}

impl ConfigError {
    /// The key the error is about, when it is about one key.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::Invalid { key, .. } => Some(key),
            ConfigError::CommandLine { option, .. } => Some(option),
            _ => None,
        }
    }
}
/// A parsed config file that overrides have not yet been applied to.
#[derive(Debug)]
pub struct ConfigFile {
    /// Where it was read from (`None` for text parsed directly).
    pub path: Option<PathBuf>,
    raw: RawConfig,
    /// The YAML as written, for [`ConfigFile::with_edits`].
    value: Value,
}
