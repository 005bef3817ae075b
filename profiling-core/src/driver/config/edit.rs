//! A sweep's points: a config file with dotted keys set, each key's other
//! spelling removed.

use serde_yaml::{Mapping, Value};

use super::read::RawConfig;
use super::{ConfigError, ConfigFile, DataSourceConfig};

/// The keys a run reads both at the top level and under `workload:`; the
/// top-level spelling wins.
pub const WORKLOAD_KEYS: &[&str] = &[
    "device",
    "warmup",
    "iterations",
    "measurement_time",
    "record_loading",
    "seed",
    "validate_output",
    "capture_range",
    "batch_size",
    "last_batch",
    "shuffle",
    "records",
];
impl ConfigFile {
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
}

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
