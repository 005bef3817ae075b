//! Data records and the sources that produce them.
//!
//! A source is named in the config (`data_source.name`) with its parameters
//! beside the name; [`build`] turns that into a [`DataSource`]. Eager runs
//! read every record once before any pass; lazy runs read them afresh in
//! each pass. [`check_fits_in_memory`] refuses an eager run whose decoded
//! records would not fit in memory, before any of them is read.

pub mod dummy;
pub mod images;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_yaml::Value;

/// One input of a target: an image, tensors, or both, with where it came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DataRecord {
    /// Unique within a pass: `dummy-<i>`, or an image's file stem.
    pub id: String,
    /// The decoded RGB image, when the source has one and decodes it.
    pub image: Option<image::RgbImage>,
    /// The file the record was read from.
    pub path: Option<PathBuf>,
    /// Named float tensors; the dummy source gives `tensor`, `scores`, `boxes`.
    pub tensors: BTreeMap<String, ndarray::ArrayD<f32>>,
    /// Facts about the record (sizes, indices).
    pub metadata: BTreeMap<String, Value>,
    /// Where the record came from: the source's name and its position.
    pub source: BTreeMap<String, Value>,
}

impl DataRecord {
    /// The decoded image, or an error that names the record.
    pub fn image(&self) -> anyhow::Result<&image::RgbImage> {
        self.image.as_ref().ok_or_else(|| {
            anyhow::anyhow!(
                "record `{}` has no decoded image (dummy: set `include_image: true`; images: set `decode: true`)",
                self.id
            )
        })
    }

    /// The tensor called `name`, or an error that names the record and the
    /// tensors it has.
    pub fn tensor(&self, name: &str) -> anyhow::Result<&ndarray::ArrayD<f32>> {
        self.tensors.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.tensors.keys().map(String::as_str).collect();
            anyhow::anyhow!(
                "record `{}` has no tensor `{name}` (it has: {})",
                self.id,
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )
        })
    }

    /// Approximate bytes held in memory by the record's decoded data.
    pub fn decoded_bytes(&self) -> usize {
        let image = self.image.as_ref().map_or(0, |img| img.as_raw().len());
        let tensors: usize = self
            .tensors
            .values()
            .map(|t| t.len() * std::mem::size_of::<f32>())
            .sum();
        image + tensors
    }
}

/// A failure to build a source or read a record: always names the
/// parameter, directory or file involved.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("unknown data source `{name}`: expected one of {}", KNOWN_SOURCES.join(", "))]
    UnknownSource { name: String },
    #[error("data_source.{key}: {message}")]
    Parameter { key: String, message: String },
    #[error("data_source ({source_name}): {message}")]
    Parameters {
        source_name: String,
        message: String,
    },
    #[error("image directory {} does not exist", .0.display())]
    MissingDirectory(PathBuf),
    #[error("image directory {} holds no images (looked for {})", .0.display(), images::EXTENSIONS.join(", "))]
    EmptyDirectory(PathBuf),
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot decode image {}: {message}", path.display())]
    Decode { path: PathBuf, message: String },
    #[error("the data source produced no records")]
    NoRecords,
    #[error("record {index} asked of a source of {len} records")]
    OutOfRange { index: usize, len: usize },
    #[error(
        "eager loading would hold about {} of records, more than {EAGER_MEMORY_PERCENT}% of the {} of memory available: use `record_loading: lazy` with `target.profile_prepare: true`, or fewer records (limit/repeat/record_count)",
        human_bytes(*.needed),
        human_bytes(*.available)
    )]
    TooLargeForMemory { needed: u64, available: u64 },
}

/// The names `data_source.name` accepts.
pub const KNOWN_SOURCES: &[&str] = &["dummy", "images"];

/// A producer of records.
pub trait DataSource: Send + Sync {
    /// The source's name (`dummy`, `images`).
    fn name(&self) -> &str;
    /// The source's own summary of what it reads, for the manifest.
    fn describe(&self) -> BTreeMap<String, Value>;
    /// How many records one pass reads.
    fn len(&self) -> usize;
    /// True when a pass reads nothing.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes of decoded data (images, tensors) that one pass's records hold
    /// when all of them are in memory at once, as eager loading keeps them.
    /// Found without decoding anything: from the parameters, or from image
    /// headers.
    fn estimated_bytes(&self) -> Result<u64, DataError>;
    /// Reads record `index` (`0..len()`).
    fn read(&self, index: usize) -> Result<DataRecord, DataError>;
    /// Reads every record, in order: in parallel where the source can.
    fn read_all(&self) -> Result<Vec<DataRecord>, DataError> {
        (0..self.len()).map(|i| self.read(i)).collect()
    }
}

/// Builds the source named `name` from its parameters (every key of the
/// `data_source` mapping but `name`).
pub fn build(
    name: &str,
    parameters: &serde_yaml::Mapping,
) -> Result<Box<dyn DataSource>, DataError> {
    match name {
        "dummy" => Ok(Box::new(dummy::DummySource::from_parameters(parameters)?)),
        "images" => Ok(Box::new(images::ImageSource::from_parameters(parameters)?)),
        other => Err(DataError::UnknownSource {
            name: other.to_owned(),
        }),
    }
}

/// The share of the available memory, in percent, that eager loading may
/// fill: the rest is left to the target, its outputs and everything else on
/// the machine.
pub const EAGER_MEMORY_PERCENT: u64 = 80;

/// Bytes a record holds beyond its decoded data (its id, path and the maps
/// of tensors, metadata and source), rounded up to about twice the most
/// either source's records hold: it keeps millions of undecoded records
/// from passing the check.
pub const RECORD_OVERHEAD_BYTES: u64 = 8192;

/// The bytes eager loading of `source` would hold: its
/// [`DataSource::estimated_bytes`] and [`RECORD_OVERHEAD_BYTES`] per record.
pub fn eager_bytes(source: &dyn DataSource) -> Result<u64, DataError> {
    let overhead = (source.len() as u64).saturating_mul(RECORD_OVERHEAD_BYTES);
    Ok(source.estimated_bytes()?.saturating_add(overhead))
}

/// Refuses eager loading of `source` when its [`eager_bytes`] exceed
/// [`EAGER_MEMORY_PERCENT`] of `available` bytes; otherwise returns them.
///
/// ```
/// use profiling_core::data::{self, DataError};
///
/// let parameters = serde_yaml::from_str("{record_count: 1000, image_shape: [1080, 1920, 3]}").unwrap();
/// let source = data::build("dummy", &parameters).unwrap();
/// let error = data::check_fits(&*source, 1 << 30).unwrap_err();
/// assert!(matches!(error, DataError::TooLargeForMemory { .. }));
/// assert!(error.to_string().contains("record_loading: lazy"));
/// ```
pub fn check_fits(source: &dyn DataSource, available: u64) -> Result<u64, DataError> {
    let needed = eager_bytes(source)?;
    let allowed = u128::from(available) * u128::from(EAGER_MEMORY_PERCENT) / 100;
    if u128::from(needed) > allowed {
        return Err(DataError::TooLargeForMemory { needed, available });
    }
    Ok(needed)
}

/// [`check_fits`] against the memory available now ([`available_memory`]);
/// when that cannot be read, returns the estimate unchecked. Call it before
/// loading a source eagerly (`read_all`); lazy loading holds one record at
/// a time and needs no check.
pub fn check_fits_in_memory(source: &dyn DataSource) -> Result<u64, DataError> {
    match available_memory() {
        Some(available) => check_fits(source, available),
        None => eager_bytes(source),
    }
}

/// The memory available to new allocations without swapping, in bytes:
/// `MemAvailable` of `/proc/meminfo`. `None` where that cannot be read.
pub fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_available(&meminfo)
}

/// `MemAvailable:   24318564 kB` in bytes.
fn parse_mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemAvailable:"))?;
    let mut words = line.split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => value.checked_mul(1024),
        None => Some(value),
        Some(_) => None,
    }
}

/// `bytes` in binary units with one decimal: `512 B`, `1.5 KiB`, `12.0 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// Deserializes a source's parameters into its typed struct, with an error
/// that names the parameter.
pub(crate) fn parse_parameters<T: serde::de::DeserializeOwned>(
    source_name: &str,
    parameters: &serde_yaml::Mapping,
) -> Result<T, DataError> {
    crate::config::deserialize_mapping(parameters).map_err(|(key, message)| match key {
        Some(key) => DataError::Parameter { key, message },
        None => DataError::Parameters {
            source_name: source_name.to_owned(),
            message,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_available_is_read_in_bytes() {
        let meminfo =
            "MemTotal:       32795840 kB\nMemFree:         1000 kB\nMemAvailable:   24318564 kB\n";
        assert_eq!(parse_mem_available(meminfo), Some(24_318_564 * 1024));
    }

    #[test]
    fn a_meminfo_without_mem_available_gives_none() {
        assert_eq!(parse_mem_available("MemTotal: 1000 kB\n"), None);
        assert_eq!(parse_mem_available("MemAvailable: lots kB\n"), None);
        assert_eq!(parse_mem_available("MemAvailable: 12 MB\n"), None);
        assert_eq!(parse_mem_available(""), None);
    }

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(12 << 30), "12.0 GiB");
        assert_eq!(human_bytes(u64::MAX), "16.0 EiB");
    }
}
