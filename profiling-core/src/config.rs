//! The run configuration: YAML parsed with serde into typed structs, the
//! reference tool's other spellings folded in, CLI overrides applied, and
//! every rule checked before anything runs.
//!
//! Errors name the file and the key (with line and column when serde knows
//! them) and say which values are allowed.

pub use crate::yaml::{check_literal_path, describe_value, parse_size};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_yaml::{Mapping, Value};

use crate::device::Device;

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
    pub iterations: u32,
    /// Records per call of the target (`workload.batch_size`, at least 1):
    /// above 1, `prepare_batch` makes one input of each batch.
    pub batch_size: u32,
    /// What a short last batch does (`workload.last_batch`).
    pub last_batch: LastBatch,
    pub record_loading: RecordLoading,
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

/// `data_source:`: the source's name, its decoded-image cache, and its
/// parameters (every other key).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataSourceConfig {
    pub name: String,
    pub parameters: Mapping,
    pub cache: CacheConfig,
}

impl Default for DataSourceConfig {
    fn default() -> Self {
        DataSourceConfig {
            name: "dummy".to_owned(),
            parameters: Mapping::new(),
            cache: CacheConfig::default(),
        }
    }
}

/// `data_source.cache` and `data_source.cache_max_bytes`: whether the
/// `images` source keeps what it decodes ([`crate::data::cache`]), and how
/// much it may keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CacheConfig {
    pub enabled: bool,
    pub max_bytes: u64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            enabled: false,
            max_bytes: crate::data::cache::DEFAULT_MAX_BYTES,
        }
    }
}

/// When records are read: once before the passes, or afresh in each pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordLoading {
    #[default]
    Eager,
    Lazy,
}

impl fmt::Display for RecordLoading {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecordLoading::Eager => "eager",
            RecordLoading::Lazy => "lazy",
        })
    }
}

impl std::str::FromStr for RecordLoading {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "eager" => Ok(RecordLoading::Eager),
            "lazy" => Ok(RecordLoading::Lazy),
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
        let backend = cfg!(feature = "tch");
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

/// Opens `path` for reading without waiting for a writer, should it have
/// become a FIFO since it was looked at.
fn open_without_waiting(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    options.open(path)
}

/// The largest config file read, unless [`MAX_CONFIG_BYTES_VARIABLE`] says.
pub const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// The variable that sets another bound on a config's size, in bytes.
pub const MAX_CONFIG_BYTES_VARIABLE: &str = "PROFILE_CLI_MAX_CONFIG_BYTES";

/// The bound on a config's size: [`MAX_CONFIG_BYTES`], or what
/// [`MAX_CONFIG_BYTES_VARIABLE`] says.
pub fn max_config_bytes() -> u64 {
    std::env::var(MAX_CONFIG_BYTES_VARIABLE)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(MAX_CONFIG_BYTES)
}

/// The deepest nesting of flow collections (`[`, `{`) a config may have;
/// YAML's own limit, which also counts block levels, is 128.
pub const MAX_FLOW_DEPTH: usize = 1000;

/// Where (line and column, from 1) the flow collections of `text` first
/// nest deeper than [`MAX_FLOW_DEPTH`], in one pass: brackets inside
/// quotes and comments do not count.
fn too_deep(text: &str) -> Option<(usize, usize)> {
    let (mut line, mut column) = (1, 0);
    let mut depth = 0usize;
    let (mut single, mut double, mut comment, mut escaped) = (false, false, false, false);
    let mut previous = '\n';
    for c in text.chars() {
        column += 1;
        if c == '\n' {
            (line, column, comment) = (line + 1, 0, false);
        } else if comment {
        } else if double {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => double = false,
                _ => {}
            }
        } else if single {
            single = c != '\'';
        } else {
            match c {
                '#' if previous.is_whitespace() => comment = true,
                '"' => double = true,
                '\'' => single = true,
                '[' | '{' => {
                    depth += 1;
                    if depth > MAX_FLOW_DEPTH {
                        return Some((line, column));
                    }
                }
                ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        previous = c;
    }
    None
}

/// Settings given on the command line; each wins over the config.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    pub target: Option<String>,
    pub data_source: Option<String>,
    pub device: Option<Device>,
    pub warmup: Option<u32>,
    pub iterations: Option<u32>,
    /// `--batch-size`.
    pub batch_size: Option<u32>,
    pub capture_range: Option<String>,
    pub record_loading: Option<RecordLoading>,
    pub seed: Option<u64>,
    pub output_dir: Option<PathBuf>,
    pub gpu_timing: Option<GpuTiming>,
    /// `--memory`.
    pub memory: Option<MemoryMode>,
    /// `--cache` (true) or `--no-cache` (false).
    pub cache: Option<bool>,
    /// `--directory`: the `images` source's directory (the source is
    /// `images` when no other is named; its `paths` are dropped).
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

// The shapes the YAML may take, before defaults and rules.

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    profile_name: Option<String>,
    profile: Option<RawProfile>,
    target: Option<RawTarget>,
    #[serde(alias = "data")]
    data_source: Option<Mapping>,
    device: Option<Value>,
    warmup: Option<i64>,
    iterations: Option<i64>,
    batch_size: Option<i64>,
    last_batch: Option<LastBatch>,
    record_loading: Option<RecordLoading>,
    seed: Option<u64>,
    shuffle: Option<bool>,
    records: Option<Vec<Value>>,
    validate_output: Option<bool>,
    capture_range: Option<String>,
    output_dir: Option<PathBuf>,
    write_manifest: Option<bool>,
    write_report: Option<bool>,
    cuda: Option<CudaPolicy>,
    gpu_timing: Option<GpuTiming>,
    memory: Option<MemoryMode>,
    workload: Option<RawWorkload>,
    /// `profile-cli sweep`'s grid; a run reads none of it.
    sweep: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTarget {
    name: Option<String>,
    import_path: Option<String>,
    #[serde(default)]
    profile_prepare: bool,
    #[serde(default)]
    parameters: Mapping,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    device: Option<Value>,
    warmup: Option<i64>,
    iterations: Option<i64>,
    batch_size: Option<i64>,
    last_batch: Option<LastBatch>,
    record_loading: Option<RecordLoading>,
    seed: Option<u64>,
    shuffle: Option<bool>,
    records: Option<Vec<Value>>,
    validate_output: Option<bool>,
    capture_range: Option<String>,
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

impl ConfigFile {
    /// Reads and parses `path`: a regular file (a FIFO or a device is
    /// refused before anything is read from it) of at most
    /// [`max_config_bytes`].
    pub fn load(path: &Path) -> Result<ConfigFile, ConfigError> {
        ConfigFile::parse(&read_text(path)?, Some(path))
    }

    /// Parses YAML text; `path` only labels errors. A leading UTF-8 byte
    /// order mark is skipped; flow collections nested deeper than
    /// [`MAX_FLOW_DEPTH`] are refused before the YAML parser sees them
    /// (it would take time quadratic in the depth to refuse them itself).
    pub fn parse(text: &str, path: Option<&Path>) -> Result<ConfigFile, ConfigError> {
        let file = path.map(Path::to_path_buf);
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        if let Some((line, column)) = too_deep(text) {
            return Err(ConfigError::Syntax {
                file,
                line,
                column,
                message: format!(
                    "nested deeper than {MAX_FLOW_DEPTH} levels of `[` and `{{`: no config needs that"
                ),
            });
        }
        let (raw, value): (RawConfig, Value) = if text.trim().is_empty() {
            (RawConfig::default(), Value::Mapping(Mapping::new()))
        } else {
            // Typed from the text, so that its errors carry line and column;
            // kept as a value too, for the edits of a sweep's points.
            (
                serde_yaml::from_str(text).map_err(|error| syntax_error(&error, file.clone()))?,
                serde_yaml::from_str(text).map_err(|error| syntax_error(&error, file.clone()))?,
            )
        };
        Ok(ConfigFile {
            path: file,
            raw,
            value,
        })
    }

    /// The config of `profile-cli run NAME` when no file applies, as a
    /// file: the built-in defaults ([`defaults_for`]) with `target.name`.
    pub fn for_target(name: &str) -> ConfigFile {
        let mut target = Mapping::new();
        target.insert("name".into(), name.into());
        let mut value = Mapping::new();
        value.insert("target".into(), Value::Mapping(target));
        ConfigFile {
            path: None,
            raw: RawConfig {
                target: Some(RawTarget {
                    name: Some(name.to_owned()),
                    import_path: None,
                    profile_prepare: false,
                    parameters: Mapping::new(),
                }),
                ..RawConfig::default()
            },
            value: Value::Mapping(value),
        }
    }

    /// The config's `sweep:` mapping, when it has one.
    pub fn sweep(&self) -> Option<&Value> {
        self.raw.sweep.as_ref()
    }

    /// This config with each dotted key of `edits` set to its value
    /// (mappings created on the way) and no `sweep:`: one point of a sweep.
    ///
    /// A key the config can spell two ways is set as given, and its other
    /// spelling removed (`workload.K` drops a top-level `K`, which would
    /// win, and `K` drops `workload.K`); `data_source.*` edits `data:` when
    /// the file uses that name. A config the edits make unusable is an error naming the file
    /// and the edited keys.
    ///
    /// ```
    /// use profiling_core::driver::config::{ConfigFile, Overrides};
    ///
    /// let file = ConfigFile::parse("target: {name: t}\nworkload: {warmup: 3}\n", None).unwrap();
    /// let edited = file
    ///     .with_edits(&[("workload.warmup".to_owned(), serde_yaml::Value::from(7))])
    ///     .unwrap();
    /// assert_eq!(edited.resolve(&Overrides::default()).unwrap().warmup, 7);
    /// ```
    pub fn with_edits(&self, edits: &[(String, Value)]) -> Result<ConfigFile, ConfigError> {
        let mut value = match &self.value {
            Value::Mapping(mapping) => Value::Mapping(mapping.clone()),
            _ => Value::Mapping(Mapping::new()),
        };
        let root = value.as_mapping_mut().expect("a mapping");
        root.remove("sweep");
        let edits_source = edits.iter().any(|(key, _)| key.starts_with("data_source."));
        if edits_source && !root.contains_key("data_source") && !root.contains_key("data") {
            // The source a config without `data_source:` runs on.
            let mut source = Mapping::new();
            source.insert("name".into(), DataSourceConfig::default().name.into());
            root.insert("data_source".into(), Value::Mapping(source));
        }
        for (key, new) in edits {
            set_path(root, key, new.clone());
        }
        let raw: RawConfig =
            serde_yaml::from_value(value.clone()).map_err(|error| ConfigError::Invalid {
                file: self.path.clone(),
                key: edits
                    .iter()
                    .map(|(key, _)| key.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                message: format!("with these values the config is not usable: {error}"),
            })?;
        Ok(ConfigFile {
            path: self.path.clone(),
            raw,
            value,
        })
    }

    /// The target this config names, if it names one.
    pub fn target_name(&self) -> Option<&str> {
        self.raw.target.as_ref().and_then(|t| t.name.as_deref())
    }

    /// Applies the defaults, the overrides and every rule.
    pub fn resolve(&self, overrides: &Overrides) -> Result<Config, ConfigError> {
        resolve(&self.raw, self.path.as_deref(), overrides)
    }
}

/// The text of the config file `path`, read as [`ConfigFile::load`] says.
fn read_text(path: &Path) -> Result<String, ConfigError> {
    let read_error = |source: std::io::Error| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    };
    let not_regular = || {
        read_error(std::io::Error::other(
            "not a regular file (a directory, a FIFO or a device): give the config's own file",
        ))
    };
    // Looked at before it is opened: opening a FIFO waits for a writer.
    if !std::fs::metadata(path).map_err(read_error)?.is_file() {
        return Err(not_regular());
    }
    let file = open_without_waiting(path).map_err(read_error)?;
    let metadata = file.metadata().map_err(read_error)?;
    if !metadata.is_file() {
        return Err(not_regular());
    }
    let limit = max_config_bytes();
    let too_large = |size: u64| {
        read_error(std::io::Error::other(format!(
            "{} bytes, more than a config holds ({limit} at most; {MAX_CONFIG_BYTES_VARIABLE} sets another bound)",
            size
        )))
    };
    if metadata.len() > limit {
        return Err(too_large(metadata.len()));
    }
    // Bounded as it is read too: the file may grow meanwhile.
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    std::io::Read::read_to_end(&mut std::io::Read::take(file, limit + 1), &mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes)
        .map_err(|e| read_error(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

/// Where (line and column, from 1) the value of the dotted `key` (`a.b`
/// for `b` under `a`; a number for an entry of a list) starts in the
/// config file `path`, for errors found after the config was parsed;
/// `None` when the file cannot be read again or has no such key.
pub fn locate_key(path: &Path, key: &str) -> Option<(usize, usize)> {
    let text = read_text(path).ok()?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let segments: Vec<&str> = key.split('.').collect();
    let error = serde::de::DeserializeSeed::deserialize(
        KeyFinder(&segments),
        serde_yaml::Deserializer::from_str(text),
    )
    .err()?;
    if !error.to_string().contains(KeyFinder::FOUND) {
        return None;
    }
    error.location().map(|at| (at.line(), at.column()))
}

/// Walks a YAML document down the segments of a key and fails on the
/// value at its end: serde_yaml's error then carries that value's position.
struct KeyFinder<'a>(&'a [&'a str]);

impl KeyFinder<'_> {
    const FOUND: &'static str = "found the key";
}

impl<'de> serde::de::DeserializeSeed<'de> for KeyFinder<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        match self.0 {
            [] => deserializer.deserialize_any(Found),
            _ => deserializer.deserialize_any(self),
        }
    }
}

/// Refuses any value, so that serde_yaml's error names where it is.
struct Found;

impl serde::de::Visitor<'_> for Found {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str(KeyFinder::FOUND)
    }
}

impl<'de> serde::de::Visitor<'de> for KeyFinder<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a mapping or a list")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Value>()? {
            let matches = match &key {
                Value::String(key) => key == self.0[0],
                Value::Number(number) => number.to_string() == self.0[0],
                Value::Bool(flag) => flag.to_string() == self.0[0],
                _ => false,
            };
            if matches {
                return map.next_value_seed(KeyFinder(&self.0[1..]));
            }
            map.next_value::<serde::de::IgnoredAny>()?;
        }
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let wanted: Option<usize> = self.0[0].parse().ok();
        let mut index = 0;
        loop {
            if Some(index) == wanted {
                return seq.next_element_seed(KeyFinder(&self.0[1..])).map(|_| ());
            }
            if seq.next_element::<serde::de::IgnoredAny>()?.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// The keys a run reads both at the top level and under `workload:`; the
/// top-level spelling wins.
pub const WORKLOAD_KEYS: &[&str] = &[
    "device",
    "warmup",
    "iterations",
    "record_loading",
    "seed",
    "validate_output",
    "capture_range",
    "batch_size",
    "last_batch",
    "shuffle",
    "records",
];

/// Sets `key` (dotted) in `root` as [`ConfigFile::with_edits`] says.
fn set_path(root: &mut Mapping, key: &str, new: Value) {
    let mut segments: Vec<&str> = key.split('.').collect();
    // The key as the user spelled it stays (errors name it); the other
    // spelling, which could win over it, goes.
    if segments.len() == 2 && segments[0] == "workload" && WORKLOAD_KEYS.contains(&segments[1]) {
        root.remove(segments[1]);
    }
    if segments.len() == 1 && WORKLOAD_KEYS.contains(&segments[0]) {
        if let Some(Value::Mapping(workload)) = root.get_mut("workload") {
            workload.remove(segments[0]);
        }
    }
    if segments[0] == "data_source"
        && !root.contains_key("data_source")
        && root.contains_key("data")
    {
        segments[0] = "data";
    }
    let (last, parents) = segments.split_last().expect("a key has a segment");
    let mut mapping = root;
    for segment in parents {
        let entry = mapping
            .entry(Value::from(*segment))
            .or_insert_with(|| Value::Mapping(Mapping::new()));
        if !entry.is_mapping() {
            *entry = Value::Mapping(Mapping::new());
        }
        mapping = entry.as_mapping_mut().expect("made a mapping above");
    }
    mapping.insert(Value::from(*last), new);
}

/// The config `profile-cli run NAME` uses when no file applies: the dummy
/// source on the CPU, one warmup pass, one measured pass.
pub fn defaults_for(target: &str, overrides: &Overrides) -> Result<Config, ConfigError> {
    ConfigFile::for_target(target).resolve(overrides)
}

fn syntax_error(error: &serde_yaml::Error, file: Option<PathBuf>) -> ConfigError {
    let text = error.to_string();
    let (line, column) = error.location().map_or((1, 1), |l| (l.line(), l.column()));
    // serde_yaml appends the position; it is already in the prefix.
    let message = match text.rfind(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    };
    // A number past 64 bits: YAML reads it, no value of the config holds it.
    let message = match message.split_once("invalid type: integer `") {
        Some((key, rest)) if rest.contains("` as u128") || rest.contains("` as i128") => {
            let number = &rest[..rest.find('`').unwrap_or(rest.len())];
            format!(
                "{key}{number} is too large a number for a config (numbers here fit in 64 bits): quote it ('{number}') to give it as text"
            )
        }
        _ => message,
    };
    ConfigError::Syntax {
        file,
        line,
        column,
        message,
    }
}

fn resolve(
    raw: &RawConfig,
    file: Option<&Path>,
    overrides: &Overrides,
) -> Result<Config, ConfigError> {
    let resolving = Resolving {
        raw,
        file,
        overrides,
    };
    let target = raw.target.as_ref();
    let target_name = resolving.target_name()?;
    let profile_name = resolving.profile_name(&target_name)?;
    let import_path = resolving.import_path()?;
    let profile_prepare = target.is_some_and(|t| t.profile_prepare);
    let data_source = resolving.data_source()?;
    let device = resolving.device()?;
    let workload = raw.workload.as_ref();
    let warmup = resolving.count(Count {
        given: overrides.warmup,
        option: "--warmup",
        top: raw.warmup,
        nested: workload.and_then(|w| w.warmup),
        key: "warmup",
        least: 0,
        why: "",
    })?;
    let iterations = resolving.count(Count {
        given: overrides.iterations,
        option: "--iterations",
        top: raw.iterations,
        nested: workload.and_then(|w| w.iterations),
        key: "iterations",
        least: 1,
        why: "",
    })?;
    let batch_size = resolving.count(Count {
        given: overrides.batch_size,
        option: "--batch-size",
        top: raw.batch_size,
        nested: workload.and_then(|w| w.batch_size),
        key: "batch_size",
        least: 1,
        why: ": a batch holds at least one record",
    })?;
    let last_batch = raw
        .last_batch
        .or(workload.and_then(|w| w.last_batch))
        .unwrap_or_default();
    let record_loading = resolving.record_loading(profile_prepare)?;
    let seed = overrides
        .seed
        .or(raw.seed)
        .or(workload.and_then(|w| w.seed));
    let validate_output = raw
        .validate_output
        .or(workload.and_then(|w| w.validate_output))
        .unwrap_or(true);
    let selection = crate::data::Selection {
        shuffle: raw
            .shuffle
            .or(workload.and_then(|w| w.shuffle))
            .unwrap_or(false),
        records: resolving.records()?,
    };
    let capture_range = resolving.capture_range()?;
    let output_dir = resolving.output_dir()?;
    let gpu_timing = resolving.gpu_timing(device)?;

    Ok(Config {
        profile_name,
        target: TargetConfig {
            name: target_name,
            import_path,
            profile_prepare,
            parameters: target.map(|t| t.parameters.clone()).unwrap_or_default(),
        },
        data_source,
        device,
        warmup,
        iterations,
        batch_size,
        last_batch,
        record_loading,
        seed,
        selection,
        validate_output,
        capture_range,
        output_dir,
        write_manifest: raw.write_manifest.unwrap_or(true),
        write_report: raw.write_report.unwrap_or(true),
        cuda: raw.cuda.unwrap_or_default(),
        gpu_timing,
        memory: overrides.memory.or(raw.memory).unwrap_or_default(),
    })
}

/// A config file's keys and the command line's options, being resolved:
/// each setting from its option, else its key, else its default, and an
/// error that names the option or the key (with the file) it came from.
struct Resolving<'a> {
    raw: &'a RawConfig,
    file: Option<&'a Path>,
    overrides: &'a Overrides,
}

/// A count of the workload: `warmup`, `iterations`, `batch_size`.
struct Count<'a> {
    /// What the command line gave.
    given: Option<u32>,
    option: &'a str,
    /// The top-level key's value, and the one under `workload:`.
    top: Option<i64>,
    nested: Option<i64>,
    key: &'a str,
    /// The smallest value it takes.
    least: i64,
    /// Said after a value below `least`.
    why: &'a str,
}

impl Resolving<'_> {
    /// `records` (or `workload.records`): record ids, numbers taken as ids
    /// (a COCO image id, a file named by a number).
    fn records(&self) -> Result<Option<Vec<String>>, ConfigError> {
        let (key, entries) = match (
            &self.raw.records,
            self.raw.workload.as_ref().and_then(|w| w.records.as_ref()),
        ) {
            (Some(entries), _) => ("records", entries),
            (None, Some(entries)) => ("workload.records", entries),
            (None, None) => return Ok(None),
        };
        entries
            .iter()
            .enumerate()
            .map(|(position, entry)| match entry {
                Value::String(id) => Ok(id.clone()),
                Value::Number(number) => Ok(number.to_string()),
                other => Err(self.invalid(
                    key,
                    format!(
                        "entry {}: expected a record id, got {}",
                        position + 1,
                        describe_value(other)
                    ),
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    fn invalid(&self, key: &str, message: String) -> ConfigError {
        ConfigError::Invalid {
            file: self.file.map(Path::to_path_buf),
            key: key.to_owned(),
            message,
        }
    }

    fn invalid_option(option: &str, message: String) -> ConfigError {
        ConfigError::CommandLine {
            option: option.to_owned(),
            message,
        }
    }

    fn target_name(&self) -> Result<String, ConfigError> {
        let given = self.raw.target.as_ref().and_then(|t| t.name.as_ref());
        let name = match (&self.overrides.target, given) {
            (Some(name), _) | (None, Some(name)) => name.clone(),
            (None, None) => {
                return Err(
                    self.invalid("target.name", "missing: name the target to run".to_owned())
                )
            }
        };
        if name.trim().is_empty() {
            return Err(self.invalid("target.name", "must not be empty".to_owned()));
        }
        Ok(name)
    }

    /// `profile_name` or `profile.name` (not both), else the target's name.
    fn profile_name(&self, target_name: &str) -> Result<String, ConfigError> {
        let raw = self.raw;
        let given = match (
            &raw.profile_name,
            raw.profile.as_ref().and_then(|p| p.name.as_ref()),
        ) {
            (Some(_), Some(_)) => {
                return Err(self.invalid(
                    "profile_name",
                    "given twice (as `profile_name` and `profile.name`): keep one".to_owned(),
                ))
            }
            (Some(name), None) => Some(("profile_name", name.clone())),
            (None, Some(name)) => Some(("profile.name", name.clone())),
            (None, None) => None,
        };
        match given {
            Some((key, name)) => {
                check_profile_name(&name).map_err(|message| self.invalid(key, message))?;
                Ok(name)
            }
            None => Ok(target_name.to_owned()),
        }
    }

    fn import_path(&self) -> Result<Option<String>, ConfigError> {
        let import_path = self.raw.target.as_ref().and_then(|t| t.import_path.clone());
        if let Some(path) = &import_path {
            check_literal_path(path)
                .map_err(|message| self.invalid("target.import_path", message))?;
            if path.trim().is_empty() {
                return Err(self.invalid("target.import_path", "must not be empty".to_owned()));
            }
        }
        Ok(import_path)
    }

    /// The data source, with `--data-source`, `--directory` and `--cache`.
    fn data_source(&self) -> Result<DataSourceConfig, ConfigError> {
        let (raw, overrides) = (self.raw, self.overrides);
        let mut data_source =
            resolve_data_source(raw.data_source.as_ref(), overrides.data_source.as_deref())
                .map_err(|(key, message)| match &overrides.data_source {
                    Some(_) if key == "data_source.name" => {
                        Self::invalid_option("--data-source", message)
                    }
                    _ => self.invalid(&key, message),
                })?;
        if let Some(directory) = &overrides.directory {
            apply_directory(
                &mut data_source,
                raw.data_source.as_ref(),
                overrides,
                directory,
            )
            .map_err(|message| Self::invalid_option("--directory", message))?;
        }
        if let Some(enabled) = overrides.cache {
            data_source.cache.enabled = enabled;
        }
        if data_source.cache.enabled && data_source.name != "images" {
            let message = crate::data::cache_refusal(&data_source.name);
            return Err(match overrides.cache {
                Some(_) => Self::invalid_option("--cache", message),
                None => self.invalid("data_source.cache", message),
            });
        }
        Ok(data_source)
    }

    /// `--device`, else `device` (or `workload.device`), else the CPU.
    fn device(&self) -> Result<Device, ConfigError> {
        if let Some(device) = self.overrides.device {
            return Ok(device);
        }
        let workload = self.raw.workload.as_ref();
        let (value, key) = match (&self.raw.device, workload.and_then(|w| w.device.as_ref())) {
            (Some(value), _) => (Some(value), "device"),
            (None, Some(value)) => (Some(value), "workload.device"),
            (None, None) => (None, "device"),
        };
        match value {
            None => Ok(Device::Cpu),
            Some(Value::String(text)) => text
                .parse()
                .map_err(|e: crate::device::ParseDeviceError| self.invalid(key, e.to_string())),
            Some(other) => Err(self.invalid(
                key,
                format!(
                    "expected `cpu`, `cuda` or `cuda:N`, got {}",
                    describe_value(other)
                ),
            )),
        }
    }

    /// A count: its option, else its key (top-level, then under
    /// `workload:`), else 1.
    fn count(&self, count: Count<'_>) -> Result<u32, ConfigError> {
        let Count {
            given,
            option,
            top,
            nested,
            key,
            least,
            why,
        } = count;
        match given {
            Some(0) if least > 0 => {
                return Err(Self::invalid_option(
                    option,
                    format!("must be >= {least}, got 0{why}"),
                ))
            }
            Some(value) => return Ok(value),
            None => {}
        }
        let (value, key) = match (top, nested) {
            (Some(value), _) => (value, key.to_owned()),
            (None, Some(value)) => (value, format!("workload.{key}")),
            (None, None) => return Ok(1),
        };
        if value < least {
            return Err(self.invalid(&key, format!("must be >= {least}, got {value}{why}")));
        }
        u32::try_from(value)
            .map_err(|_| self.invalid(&key, format!("must be at most {}, got {value}", u32::MAX)))
    }

    fn record_loading(&self, profile_prepare: bool) -> Result<RecordLoading, ConfigError> {
        let (raw, overrides) = (self.raw, self.overrides);
        let workload = raw.workload.as_ref();
        let record_loading = overrides
            .record_loading
            .or(raw.record_loading)
            .or(workload.and_then(|w| w.record_loading))
            .unwrap_or_default();
        if record_loading == RecordLoading::Lazy && !profile_prepare {
            let message = "`lazy` needs `target.profile_prepare: true`: lazy loading keeps no records to prepare ahead of the passes"
                .to_owned();
            return Err(if overrides.record_loading.is_some() {
                Self::invalid_option("--record-loading", message)
            } else if raw.record_loading.is_some() {
                self.invalid("record_loading", message)
            } else {
                self.invalid("workload.record_loading", message)
            });
        }
        Ok(record_loading)
    }

    fn capture_range(&self) -> Result<String, ConfigError> {
        let workload = self.raw.workload.as_ref();
        let (capture_range, capture_key) = match (
            &self.overrides.capture_range,
            &self.raw.capture_range,
            workload.and_then(|w| w.capture_range.as_ref()),
        ) {
            (Some(name), _, _) => (name.clone(), None),
            (None, Some(name), _) => (name.clone(), Some("capture_range")),
            (None, None, Some(name)) => (name.clone(), Some("workload.capture_range")),
            (None, None, None) => (DEFAULT_CAPTURE_RANGE.to_owned(), Some("capture_range")),
        };
        check_capture_range(&capture_range).map_err(|message| match capture_key {
            Some(key) => self.invalid(key, message),
            None => Self::invalid_option("--capture-range", message),
        })?;
        Ok(capture_range)
    }

    fn output_dir(&self) -> Result<Option<PathBuf>, ConfigError> {
        let (dir, from_option) = match (&self.overrides.output_dir, &self.raw.output_dir) {
            (Some(dir), _) => (dir.clone(), true),
            (None, Some(dir)) => (dir.clone(), false),
            (None, None) => return Ok(None),
        };
        let error = |message: String| match from_option {
            true => Self::invalid_option("--output-dir", message),
            false => self.invalid("output_dir", message),
        };
        check_literal_path(&dir.to_string_lossy()).map_err(error)?;
        if dir.as_os_str().is_empty() {
            return Err(error("must not be empty".to_owned()));
        }
        Ok(Some(dir))
    }

    fn gpu_timing(&self, device: Device) -> Result<GpuTiming, ConfigError> {
        let given = self.overrides.gpu_timing;
        let gpu_timing = given.or(self.raw.gpu_timing).unwrap_or_default();
        gpu_timing.resolve(device).map_err(|message| {
            if given.is_some() {
                Self::invalid_option("--gpu-timing", message)
            } else {
                self.invalid("gpu_timing", message)
            }
        })?;
        Ok(gpu_timing)
    }
}

/// Folds `source` into `name` and `parameters` into the other keys.
fn resolve_data_source(
    raw: Option<&Mapping>,
    override_name: Option<&str>,
) -> Result<DataSourceConfig, (String, String)> {
    let mut config = DataSourceConfig::default();
    if let Some(mapping) = raw {
        let mut parameters = Mapping::new();
        let mut name: Option<(String, &str)> = None;
        for (key, value) in mapping {
            let Some(key_text) = key.as_str() else {
                return Err((
                    "data_source".to_owned(),
                    format!("keys must be strings, got {}", describe_value(key)),
                ));
            };
            match key_text {
                "name" | "source" => {
                    if let Some((_, earlier)) = &name {
                        return Err((
                            format!("data_source.{key_text}"),
                            format!("the source is already named by `{earlier}`: keep one"),
                        ));
                    }
                    let Value::String(text) = value else {
                        return Err((
                            format!("data_source.{key_text}"),
                            format!("expected a source name, got {}", describe_value(value)),
                        ));
                    };
                    name = Some((
                        text.clone(),
                        if key_text == "name" { "name" } else { "source" },
                    ));
                }
                "parameters" => {
                    let Value::Mapping(nested) = value else {
                        return Err((
                            "data_source.parameters".to_owned(),
                            format!("expected a mapping, got {}", describe_value(value)),
                        ));
                    };
                    for (nested_key, nested_value) in nested {
                        if parameters
                            .insert(nested_key.clone(), nested_value.clone())
                            .is_some()
                        {
                            return Err((
                                format!(
                                    "data_source.parameters.{}",
                                    nested_key.as_str().unwrap_or("?")
                                ),
                                "also given beside `parameters`: keep one".to_owned(),
                            ));
                        }
                    }
                }
                _ => {
                    if parameters.insert(key.clone(), value.clone()).is_some() {
                        return Err((
                            format!("data_source.{key_text}"),
                            "also given inside `parameters`: keep one".to_owned(),
                        ));
                    }
                }
            }
        }
        match name {
            Some((text, key)) if text.trim().is_empty() => {
                return Err((format!("data_source.{key}"), "must not be empty".to_owned()))
            }
            Some((text, _)) => config.name = text,
            None if override_name.is_none() => {
                return Err((
                    "data_source.name".to_owned(),
                    format!("missing: one of {}", crate::data::source_names().join(", ")),
                ))
            }
            None => {}
        }
        config.cache = take_cache_keys(&mut parameters)?;
        config.parameters = parameters;
    }
    if let Some(name) = override_name {
        if name != config.name {
            // Parameters belong to the source they were written for.
            config.parameters = Mapping::new();
            config.cache = CacheConfig::default();
        }
        config.name = name.to_owned();
    }
    if let Err(error) = crate::data::find_source(&config.name) {
        return Err(("data_source.name".to_owned(), error.to_string()));
    }
    Ok(config)
}

/// `--directory DIR`: the `images` source reads DIR. Without
/// `--data-source`, a config's other source gives way to `images` (with
/// none of its parameters, which were that source's); `--data-source`
/// naming another source is refused.
fn apply_directory(
    data_source: &mut DataSourceConfig,
    raw: Option<&Mapping>,
    overrides: &Overrides,
    directory: &Path,
) -> Result<(), String> {
    if data_source.name != "images" {
        if let Some(named) = &overrides.data_source {
            return Err(format!(
                "only the images source reads a directory, and --data-source is `{named}`: use --data-source images"
            ));
        }
        *data_source = resolve_data_source(raw, Some("images"))
            .map_err(|(key, message)| format!("{key}: {message}"))?;
    }
    check_literal_path(&directory.to_string_lossy())?;
    data_source.parameters.remove("paths");
    data_source.parameters.insert(
        Value::from("directory"),
        Value::from(directory.to_string_lossy().into_owned()),
    );
    Ok(())
}

/// Takes `cache` and `cache_max_bytes` out of a source's parameters: they
/// are the run's, not the source's.
fn take_cache_keys(parameters: &mut Mapping) -> Result<CacheConfig, (String, String)> {
    let mut cache = CacheConfig::default();
    if let Some(value) = parameters.remove("cache") {
        cache.enabled = match value {
            Value::Bool(enabled) => enabled,
            other => {
                return Err((
                    "data_source.cache".to_owned(),
                    format!("expected `true` or `false`, got {}", describe_value(&other)),
                ))
            }
        };
    }
    if let Some(value) = parameters.remove("cache_max_bytes") {
        cache.max_bytes = parse_size(&value)
            .map_err(|message| ("data_source.cache_max_bytes".to_owned(), message))?;
    }
    Ok(cache)
}

/// A profile name becomes a directory name: `[A-Za-z0-9._-]+`, starting with
/// a letter or digit, at most 100 characters.
pub fn check_profile_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("must not be empty".to_owned());
    }
    let valid =
        name.len() <= 100 && name.as_bytes()[0].is_ascii_alphanumeric() && is_plain_name(name);
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a valid profile name: use letters, digits, `-`, `_` and `.`, starting with a letter or digit (at most 100 characters)"
        ))
    }
}

/// Letters, digits, `-`, `_` and `.` only: safe as one path component.
fn is_plain_name(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// Run ids become directory names: `[A-Za-z0-9._-]+`, not starting with
/// `.` (the runs' locks and leftovers do).
pub fn check_run_id(run_id: &str) -> Result<(), String> {
    if run_id.starts_with('.') && run_id != "." && run_id != ".." && is_plain_name(run_id) {
        // `.<id>.claim`, `.<id>.partial-<pid>` and `.<id>.replaced-<pid>`
        // beside a run directory are the project's own: an id that starts
        // with `.` could take one of their names.
        return Err(format!(
            "`{run_id}` is not a valid run id: it must not start with `.` (names that start with `.` beside the runs are their locks and leftovers)"
        ));
    }
    let valid = !run_id.is_empty()
        && run_id != "."
        && run_id != ".."
        && run_id.len() <= 200
        && is_plain_name(run_id);
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`{run_id}` is not a valid run id: use letters, digits, `-`, `_` and `.` (not first, no path separators)"
        ))
    }
}

fn check_capture_range(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("must not be empty".to_owned());
    }
    if name.contains('@') {
        return Err(format!(
            "`{name}` contains `@`, which Nsight's --nvtx-capture reads as the start of a domain name"
        ));
    }
    if name.contains('\0') {
        return Err("must not contain a NUL character".to_owned());
    }
    Ok(())
}
