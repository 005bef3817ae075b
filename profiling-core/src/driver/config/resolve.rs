//! A config file and the command line's overrides resolved into a
//! [`Config`]: each setting from its option, else its key, else its
//! default, and every rule checked.

use std::path::{Path, PathBuf};

use serde_yaml::{Mapping, Value};

use super::names::{check_capture_range, check_profile_name};
use super::read::RawConfig;
use super::{
    check_literal_path, describe_value, parse_size, Config, ConfigError, ConfigFile,
    DataSourceConfig, GpuTiming, Overrides, RecordReading, TargetConfig, DEFAULT_CAPTURE_RANGE,
};
use crate::device::Device;

impl ConfigFile {
    /// Applies the defaults, the overrides and every rule.
    pub fn resolve(&self, overrides: &Overrides) -> Result<Config, ConfigError> {
        resolve(&self.raw, self.path.as_deref(), overrides)
    }
}

/// The config `profile-cli run NAME` uses when no file applies: the dummy
/// source on the CPU, one warmup pass, one measured pass.
pub(crate) fn defaults_for(target: &str, overrides: &Overrides) -> Result<Config, ConfigError> {
    ConfigFile::for_target(target).resolve(overrides)
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
    let measurement_time_ns = resolving.measurement_time(warmup)?;
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
        measurement_time_ns,
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
            data_source
                .parameters
                .insert(Value::from(crate::data::CACHE_KEY), Value::Bool(enabled));
        }
        if !crate::data::takes_cache(&data_source.name) {
            if data_source.cache_enabled() {
                let message = crate::data::cache_refusal(&data_source.name);
                return Err(match overrides.cache {
                    Some(_) => Self::invalid_option("--cache", message),
                    None => self.invalid("data_source.cache", message),
                });
            }
            // Nothing to keep: a source that keeps no cache is not asked
            // for its bound either.
            for key in CACHE_KEYS {
                data_source.parameters.remove(key);
            }
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

    /// `--measurement-time`, else `measurement_time` (or
    /// `workload.measurement_time`): a duration with its unit, above zero,
    /// with a warmup pass to size the passes from. `--iterations` wins over
    /// the key, and the config may not give both it and `iterations`.
    fn measurement_time(&self, warmup: u32) -> Result<Option<u64>, ConfigError> {
        const NEEDS_WARMUP: &str =
            "sizes the measured passes from the warmup passes' time: needs a warmup of at least 1";
        if self.overrides.iterations.is_some() {
            return Ok(None);
        }
        // A parsed duration is never zero (`units::parse_duration`).
        if let Some(nanos) = self.overrides.measurement_time_ns {
            if warmup == 0 {
                return Err(Self::invalid_option(
                    "--measurement-time",
                    NEEDS_WARMUP.to_owned(),
                ));
            }
            return Ok(Some(nanos));
        }
        let workload = self.raw.workload.as_ref();
        let (key, value) = match (
            &self.raw.measurement_time,
            workload.and_then(|w| w.measurement_time.as_ref()),
        ) {
            (Some(value), _) => ("measurement_time", value),
            (None, Some(value)) => ("workload.measurement_time", value),
            (None, None) => return Ok(None),
        };
        if self.raw.iterations.is_some() || workload.is_some_and(|w| w.iterations.is_some()) {
            return Err(self.invalid(
                key,
                "given with `iterations`: keep one (iterations counts the measured passes, \
                 measurement_time sizes them by time)"
                    .to_owned(),
            ));
        }
        let nanos = match value {
            Value::String(text) => crate::units::parse_duration(text)
                .map(crate::units::nanos)
                .map_err(|message| self.invalid(key, message))?,
            other => {
                return Err(self.invalid(
                    key,
                    format!(
                        "expected a duration with its unit (`5s`, `500ms`), got {}",
                        describe_value(other)
                    ),
                ))
            }
        };
        if warmup == 0 {
            return Err(self.invalid(key, NEEDS_WARMUP.to_owned()));
        }
        Ok(Some(nanos))
    }

    fn record_loading(&self, profile_prepare: bool) -> Result<RecordReading, ConfigError> {
        let (raw, overrides) = (self.raw, self.overrides);
        let workload = raw.workload.as_ref();
        let record_loading = overrides
            .record_loading
            .or(raw.record_loading)
            .or(workload.and_then(|w| w.record_loading))
            .unwrap_or_default();
        if record_loading == RecordReading::Lazy && !profile_prepare {
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
        check_cache_keys(&parameters)?;
        config.parameters = parameters;
    }
    if let Some(name) = override_name {
        if name != config.name {
            // Parameters belong to the source they were written for.
            config.parameters = Mapping::new();
        }
        config.name = name.to_owned();
    }
    if let Err(error) = crate::data::find_source(&config.name) {
        return Err(("data_source.name".to_owned(), error.to_string()));
    }
    Ok(config)
}

/// `--directory DIR`: the source that reads it
/// ([`crate::data::directory_source`]) reads DIR. Without
/// `--data-source`, a config's other source gives way to it (with none of
/// its parameters, which were that source's); `--data-source` naming
/// another source is refused.
fn apply_directory(
    data_source: &mut DataSourceConfig,
    raw: Option<&Mapping>,
    overrides: &Overrides,
    directory: &Path,
) -> Result<(), String> {
    let reader = crate::data::directory_source();
    if data_source.name != reader {
        if let Some(named) = &overrides.data_source {
            return Err(format!(
                "only the {reader} source reads a directory, and --data-source is `{named}`: use --data-source {reader}"
            ));
        }
        *data_source = resolve_data_source(raw, Some(reader))
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

/// The keys of a source's cache: whether to keep it, and its bound.
const CACHE_KEYS: [&str; 2] = [crate::data::CACHE_KEY, "cache_max_bytes"];

/// Checks `cache` and `cache_max_bytes` among a source's parameters, before
/// the source is built: a run is refused on them as on the run's own keys.
fn check_cache_keys(parameters: &Mapping) -> Result<(), (String, String)> {
    match parameters.get(CACHE_KEYS[0]) {
        None | Some(Value::Bool(_)) => {}
        Some(other) => {
            return Err((
                "data_source.cache".to_owned(),
                format!("expected `true` or `false`, got {}", describe_value(other)),
            ))
        }
    }
    if let Some(value) = parameters.get(CACHE_KEYS[1]) {
        parse_size(value).map_err(|message| ("data_source.cache_max_bytes".to_owned(), message))?;
    }
    Ok(())
}
