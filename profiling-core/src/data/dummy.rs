//! The `dummy` source: deterministic synthetic records, so a target can be
//! profiled before any real data is at hand.
//!
//! Record `i` (id `dummy-<i>`) holds an RGB image of `image_shape`
//! (`[H, W, 3]`) with a fixed gradient pattern, and three tensors:
//! `tensor` = `arange(n).reshape(tensor_shape) + i`, `scores` =
//! `linspace(0, 1, tensor_shape[0])`, and `boxes` = `arange(4 m)` shaped
//! `[m, 4]` with `m = tensor_shape[0]`.

use std::collections::BTreeMap;

use ndarray::{ArrayD, IxDyn};
use serde::Deserialize;
use serde_yaml::Value;

use super::{parse_parameters, DataError, DataRecord, DataSource};

/// The keys of [`DummyParameters`].
pub(crate) const PARAMETERS: &[&str] = &[
    "record_count",
    "limit",
    "image_shape",
    "include_image",
    "tensor_shape",
];

/// Parameters of the dummy source; see the module docs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct DummyParameters {
    record_count: Option<usize>,
    limit: Option<usize>,
    image_shape: Option<Vec<usize>>,
    include_image: Option<bool>,
    tensor_shape: Option<Vec<usize>>,
}

/// Synthetic records; see the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct DummySource {
    pub record_count: usize,
    /// `[H, W, C]`, C always 3.
    pub image_shape: [usize; 3],
    pub include_image: bool,
    pub tensor_shape: Vec<usize>,
}

impl Default for DummySource {
    fn default() -> Self {
        DummySource {
            record_count: 1,
            image_shape: [64, 64, 3],
            include_image: true,
            tensor_shape: vec![4, 4],
        }
    }
}

/// Largest element count accepted for one image or tensor (2^31): beyond
/// it the dummy data would not be a sensible fixture.
const MAX_ELEMENTS: usize = 1 << 31;

fn parameter_error(key: &str, message: impl Into<String>) -> DataError {
    DataError::Parameter {
        key: key.to_owned(),
        message: message.into(),
    }
}

impl DummySource {
    /// Builds the source from its config parameters.
    pub fn from_parameters(parameters: &serde_yaml::Mapping) -> Result<Self, DataError> {
        let params: DummyParameters = parse_parameters("dummy", parameters)?;
        let defaults = DummySource::default();
        let record_count = match (params.record_count, params.limit) {
            (Some(_), Some(_)) => {
                return Err(parameter_error(
                    "limit",
                    "`limit` is another name for `record_count`: give one of them",
                ))
            }
            (Some(count), None) => ("record_count", count),
            (None, Some(count)) => ("limit", count),
            (None, None) => ("record_count", defaults.record_count),
        };
        if record_count.1 == 0 {
            return Err(parameter_error(
                record_count.0,
                "must be >= 1: a run needs at least one record",
            ));
        }
        let image_shape = match params.image_shape {
            None => defaults.image_shape,
            Some(shape) => match *shape.as_slice() {
                [h, w, 3] if h > 0 && w > 0 && h.saturating_mul(w).saturating_mul(3) <= MAX_ELEMENTS => [h, w, 3],
                [_, _, 3] => {
                    return Err(parameter_error(
                        "image_shape",
                        format!("{shape:?}: height and width must be >= 1 and the image at most {MAX_ELEMENTS} values"),
                    ))
                }
                _ => {
                    return Err(parameter_error(
                        "image_shape",
                        format!("{shape:?}: expected [height, width, 3] (RGB)"),
                    ))
                }
            },
        };
        let tensor_shape = params.tensor_shape.unwrap_or(defaults.tensor_shape);
        let elements = tensor_shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d));
        if tensor_shape.is_empty()
            || tensor_shape.contains(&0)
            || elements.is_none_or(|n| n > MAX_ELEMENTS)
        {
            return Err(parameter_error(
                "tensor_shape",
                format!("{tensor_shape:?}: expected at least one dimension, each >= 1, at most {MAX_ELEMENTS} values in all"),
            ));
        }
        Ok(DummySource {
            record_count: record_count.1,
            image_shape,
            include_image: params.include_image.unwrap_or(defaults.include_image),
            tensor_shape,
        })
    }

    fn image(&self, index: usize) -> image::RgbImage {
        let [height, width, _] = self.image_shape;
        let shift = index.wrapping_mul(7);
        image::RgbImage::from_fn(width as u32, height as u32, |x, y| {
            let base = x as usize + 2 * y as usize + shift;
            image::Rgb([
                base as u8,
                base.wrapping_add(85) as u8,
                base.wrapping_add(170) as u8,
            ])
        })
    }

    fn tensors(&self, index: usize) -> BTreeMap<String, ArrayD<f32>> {
        let shape = IxDyn(&self.tensor_shape);
        let count: usize = self.tensor_shape.iter().product();
        let offset = index as f32;
        let tensor = ArrayD::from_shape_vec(shape, (0..count).map(|v| v as f32 + offset).collect())
            .expect("shape and element count agree by construction");
        let rows = self.tensor_shape[0];
        let scores =
            ArrayD::from_shape_vec(IxDyn(&[rows]), linspace(rows)).expect("one value per row");
        let boxes =
            ArrayD::from_shape_vec(IxDyn(&[rows, 4]), (0..rows * 4).map(|v| v as f32).collect())
                .expect("four values per row");
        BTreeMap::from([
            ("boxes".to_owned(), boxes),
            ("scores".to_owned(), scores),
            ("tensor".to_owned(), tensor),
        ])
    }
}

/// `n` evenly spaced values from 0 to 1 inclusive (`[0]` when `n == 1`).
fn linspace(n: usize) -> Vec<f32> {
    if n == 1 {
        return vec![0.0];
    }
    (0..n).map(|i| i as f32 / (n - 1) as f32).collect()
}

fn shape_value(shape: &[usize]) -> Value {
    Value::Sequence(shape.iter().map(|&d| Value::from(d as u64)).collect())
}

impl DataSource for DummySource {
    fn name(&self) -> &str {
        "dummy"
    }

    fn describe(&self) -> BTreeMap<String, Value> {
        BTreeMap::from([
            (
                "record_count".to_owned(),
                Value::from(self.record_count as u64),
            ),
            ("image_shape".to_owned(), shape_value(&self.image_shape)),
            ("include_image".to_owned(), Value::Bool(self.include_image)),
            ("tensor_shape".to_owned(), shape_value(&self.tensor_shape)),
        ])
    }

    fn len(&self) -> usize {
        self.record_count
    }

    fn estimated_bytes(&self) -> Result<u64, DataError> {
        let [height, width, channels] = self.image_shape.map(|d| d as u64);
        let image = if self.include_image {
            height.saturating_mul(width).saturating_mul(channels)
        } else {
            0
        };
        // `tensor`, then `scores` (one per row) and `boxes` (four per row).
        let elements = self
            .tensor_shape
            .iter()
            .fold(1u64, |acc, &d| acc.saturating_mul(d as u64));
        let rows = self.tensor_shape.first().map_or(0, |&d| d as u64);
        let values = elements.saturating_add(rows.saturating_mul(5));
        let tensors = values.saturating_mul(std::mem::size_of::<f32>() as u64);
        Ok((self.record_count as u64).saturating_mul(image.saturating_add(tensors)))
    }

    fn read(&self, index: usize) -> Result<DataRecord, DataError> {
        if index >= self.record_count {
            return Err(DataError::OutOfRange {
                index,
                len: self.record_count,
            });
        }
        let image = self.include_image.then(|| self.image(index));
        let mut metadata = BTreeMap::from([
            ("index".to_owned(), Value::from(index as u64)),
            ("tensor_shape".to_owned(), shape_value(&self.tensor_shape)),
        ]);
        if self.include_image {
            metadata.insert("image_shape".to_owned(), shape_value(&self.image_shape));
        }
        Ok(DataRecord {
            id: format!("dummy-{index}"),
            image,
            path: None,
            tensors: self.tensors(index),
            metadata,
            source: BTreeMap::from([
                ("name".to_owned(), Value::from("dummy")),
                ("index".to_owned(), Value::from(index as u64)),
            ]),
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_parameter_names_are_the_fields() {
        let error = serde_yaml::from_str::<super::DummyParameters>("unknown: 1").unwrap_err();
        assert_eq!(
            crate::data::expected_fields(&error.to_string()),
            super::PARAMETERS
        );
    }

    use super::*;

    fn source(yaml: &str) -> Result<DummySource, DataError> {
        let mapping: serde_yaml::Mapping = serde_yaml::from_str(yaml).unwrap();
        DummySource::from_parameters(&mapping)
    }

    #[test]
    fn defaults_match_the_reference() {
        let dummy = source("{}").unwrap();
        assert_eq!(dummy, DummySource::default());
        let record = dummy.read(0).unwrap();
        assert_eq!(record.id, "dummy-0");
        let image = record.image.unwrap();
        assert_eq!((image.height(), image.width()), (64, 64));
        assert_eq!(record.tensors["tensor"].shape(), &[4, 4]);
    }

    #[test]
    fn tensor_is_arange_plus_index() {
        let dummy = source("{record_count: 3, tensor_shape: [2, 3]}").unwrap();
        let record = dummy.read(2).unwrap();
        let values: Vec<f32> = record.tensors["tensor"].iter().copied().collect();
        assert_eq!(values, vec![2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
        assert_eq!(record.tensors["tensor"].shape(), &[2, 3]);
        assert_eq!(
            record.tensors["scores"].iter().copied().collect::<Vec<_>>(),
            vec![0.0, 1.0]
        );
        assert_eq!(record.tensors["boxes"].shape(), &[2, 4]);
        assert_eq!(
            record.tensors["boxes"].iter().copied().collect::<Vec<_>>(),
            (0..8).map(|v| v as f32).collect::<Vec<_>>()
        );
    }

    #[test]
    fn scores_span_zero_to_one() {
        let dummy = source("{tensor_shape: [5, 2]}").unwrap();
        let scores: Vec<f32> = dummy.read(0).unwrap().tensors["scores"]
            .iter()
            .copied()
            .collect();
        assert_eq!(scores, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    }

    #[test]
    fn image_shape_is_height_width_channels() {
        let dummy = source("{image_shape: [48, 80, 3]}").unwrap();
        let image = dummy.read(0).unwrap().image.unwrap();
        assert_eq!((image.height(), image.width()), (48, 80));
    }

    #[test]
    fn records_are_deterministic_and_distinct() {
        let dummy = source("{record_count: 2}").unwrap();
        assert_eq!(dummy.read(1).unwrap(), dummy.read(1).unwrap());
        assert_ne!(dummy.read(0).unwrap().image, dummy.read(1).unwrap().image);
    }

    #[test]
    fn limit_is_record_count() {
        assert_eq!(source("{limit: 5}").unwrap().len(), 5);
        let error = source("{limit: 5, record_count: 2}")
            .unwrap_err()
            .to_string();
        assert!(error.contains("data_source.limit"), "{error}");
    }

    #[test]
    fn include_image_false_drops_the_image() {
        let record = source("{include_image: false}").unwrap().read(0).unwrap();
        assert!(record.image.is_none());
        assert!(record.image().unwrap_err().to_string().contains("dummy-0"));
    }

    #[test]
    fn bad_parameters_name_their_key() {
        let cases = [
            ("{image_shape: [64, 64]}", "data_source.image_shape"),
            ("{image_shape: [64, 64, 4]}", "data_source.image_shape"),
            ("{image_shape: [0, 64, 3]}", "data_source.image_shape"),
            ("{tensor_shape: []}", "data_source.tensor_shape"),
            ("{tensor_shape: [4, 0]}", "data_source.tensor_shape"),
            ("{record_count: 0}", "data_source.record_count"),
        ];
        for (yaml, key) in cases {
            let error = source(yaml).unwrap_err().to_string();
            assert!(error.starts_with(key), "{yaml}: {error}");
        }
        let error = source("{colour: red}").unwrap_err().to_string();
        assert!(error.contains("unknown field `colour`"), "{error}");
        let error = source("{record_count: -1}").unwrap_err().to_string();
        assert!(error.contains("record_count"), "{error}");
    }
}
