//! Reading a config file: bounded in size and in nesting before the YAML
//! parser sees it, its syntax errors placed by line and column, and the
//! shapes the YAML may take before defaults and rules.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_yaml::{Mapping, Value};

use super::{ConfigError, ConfigFile, CudaPolicy, GpuTiming, LastBatch, MemoryMode, RecordReading};

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
pub(crate) const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// The variable that sets another bound on a config's size, in bytes.
pub(crate) const MAX_CONFIG_BYTES_VARIABLE: &str = "PROFILE_CLI_MAX_CONFIG_BYTES";

/// The bound on a config's size: [`MAX_CONFIG_BYTES`], or what
/// [`MAX_CONFIG_BYTES_VARIABLE`] says.
pub(crate) fn max_config_bytes() -> u64 {
    std::env::var(MAX_CONFIG_BYTES_VARIABLE)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(MAX_CONFIG_BYTES)
}

/// The deepest nesting of flow collections (`[`, `{`) a config may have;
/// YAML's own limit, which also counts block levels, is 128.
pub(crate) const MAX_FLOW_DEPTH: usize = 1000;

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
// The shapes the YAML may take, before defaults and rules.

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    pub(super) profile_name: Option<String>,
    pub(super) profile: Option<RawProfile>,
    pub(super) target: Option<RawTarget>,
    #[serde(alias = "data")]
    pub(super) data_source: Option<Mapping>,
    pub(super) device: Option<Value>,
    pub(super) warmup: Option<i64>,
    pub(super) iterations: Option<i64>,
    /// Sizes the measured passes by time instead of `iterations`.
    pub(super) measurement_time: Option<Value>,
    pub(super) batch_size: Option<i64>,
    pub(super) last_batch: Option<LastBatch>,
    pub(super) record_loading: Option<RecordReading>,
    pub(super) seed: Option<u64>,
    pub(super) shuffle: Option<bool>,
    pub(super) records: Option<Vec<Value>>,
    pub(super) validate_output: Option<bool>,
    pub(super) capture_range: Option<String>,
    pub(super) output_dir: Option<PathBuf>,
    pub(super) write_manifest: Option<bool>,
    pub(super) write_report: Option<bool>,
    pub(super) cuda: Option<CudaPolicy>,
    pub(super) gpu_timing: Option<GpuTiming>,
    pub(super) memory: Option<MemoryMode>,
    pub(super) workload: Option<RawWorkload>,
    /// `profile-cli sweep`'s grid; a run reads none of it.
    pub(super) sweep: Option<Value>,
    /// What `profile-cli ab` reads of this config when it is the base's;
    /// a run reads none of it.
    pub(super) ab: Option<RawAb>,
    /// What `profile-cli load` reads of this config; a run reads none of it.
    pub(super) load: Option<LoadConfig>,
    /// What `run --nsys` and `--print-nsys-command` add to the capture; a
    /// run reads none of it.
    pub(super) nsys: Option<RawNsys>,
}

/// The config's `nsys:` section.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNsys {
    /// Options of `nsys profile` added to the capture, one word each
    /// (checked by [`crate::driver::nsys::NsysArgs::parse`] where used).
    #[serde(default)]
    pub(super) args: Vec<String>,
}

/// The config's `load:` section: `profile-cli load`'s defaults, each
/// overridden by its option. Durations are text with a unit (`10s`,
/// `250ms`); a bare number is refused for want of one.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadConfig {
    pub scenario: Option<String>,
    pub qps: Option<f64>,
    pub arrival: Option<String>,
    pub concurrency: Option<u32>,
    pub workers: Option<u32>,
    pub warmup: Option<u64>,
    pub queries: Option<u64>,
    pub duration: Option<Value>,
    pub p99_bound: Option<Value>,
    pub find_peak: Option<bool>,
    /// LoadGen's minimums when no length is given (`--loadgen-minimums`).
    pub loadgen_minimums: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAb {
    /// The gates of `ab --accept`, agreed before measuring.
    pub(super) accept: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProfile {
    pub(super) name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTarget {
    pub(super) name: Option<String>,
    pub(super) import_path: Option<String>,
    #[serde(default)]
    pub(super) profile_prepare: bool,
    #[serde(default)]
    pub(super) parameters: Mapping,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkload {
    pub(super) device: Option<Value>,
    pub(super) warmup: Option<i64>,
    pub(super) iterations: Option<i64>,
    pub(super) measurement_time: Option<Value>,
    pub(super) batch_size: Option<i64>,
    pub(super) last_batch: Option<LastBatch>,
    pub(super) record_loading: Option<RecordReading>,
    pub(super) seed: Option<u64>,
    pub(super) shuffle: Option<bool>,
    pub(super) records: Option<Vec<Value>>,
    pub(super) validate_output: Option<bool>,
    pub(super) capture_range: Option<String>,
}
impl ConfigFile {
    /// Reads and parses `path`: a regular file (a FIFO or a device is
    /// refused before anything is read from it) of at most
    /// `max_config_bytes`.
    pub fn load(path: &Path) -> Result<ConfigFile, ConfigError> {
        ConfigFile::parse(&read_text(path)?, Some(path))
    }

    /// Parses YAML text; `path` only labels errors. A leading UTF-8 byte
    /// order mark is skipped; flow collections nested deeper than
    /// `MAX_FLOW_DEPTH` are refused before the YAML parser sees them
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
    /// file: the built-in defaults (`defaults_for`) with `target.name`.
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

    /// The config's `ab.accept`: the gates `profile-cli ab` judges a pair
    /// by when this is the base's config and `--accept` is not given.
    pub fn ab_accept(&self) -> Option<&str> {
        self.raw.ab.as_ref().and_then(|ab| ab.accept.as_deref())
    }

    /// The config's `load:` section, when it has one.
    pub fn load_section(&self) -> Option<&LoadConfig> {
        self.raw.load.as_ref()
    }

    /// The config's `nsys.args`: options of `nsys profile` for the
    /// capture.
    pub fn nsys_args(&self) -> &[String] {
        self.raw
            .nsys
            .as_ref()
            .map_or(&[][..], |nsys| nsys.args.as_slice())
    }

    /// The target this config names, if it names one.
    pub fn target_name(&self) -> Option<&str> {
        self.raw.target.as_ref().and_then(|t| t.name.as_deref())
    }
}

/// The text of the config file `path`, read as [`ConfigFile::load`] says.
pub(super) fn read_text(path: &Path) -> Result<String, ConfigError> {
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
