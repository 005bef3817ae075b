//! Data records and the sources that produce them.
//!
//! A source is named in the config (`data_source.name`) with its parameters
//! beside the name; [`build`] turns that into a [`DataSource`]. Eager runs
//! read every record once before any pass; lazy runs read them afresh in
//! each pass.

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
