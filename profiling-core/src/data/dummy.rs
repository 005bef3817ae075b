//! The `dummy` source: deterministic synthetic records, so a target can be
//! profiled before any real data is at hand.
//!
//! Record `i` (id `dummy-<i>`) holds an RGB image of `image_shape`
//! (`[H, W, 3]`) with a fixed gradient pattern, and three tensors:
//! `tensor` = `arange(n).reshape(tensor_shape) + i`, `scores` =
//! `linspace(0, 1, tensor_shape[0])`, and `boxes` = `arange(4 m)` shaped
//! `[m, 4]` with `m = tensor_shape[0]`.
//!
//! With `detections:`, `boxes`, `scores` and `classes` are instead what a
//! detector emits before NMS ([`Detections`]): `count` boxes around
//! `objects` places of a `canvas`, overlapping the way a detector's
//! proposals for one object do, in the `format` asked for; scores in
//! [0, 1], a share `above` of them over `threshold`; class ids below
//! `classes`. Seeded by the record index: the same record, the same boxes.

use std::collections::BTreeMap;

use ndarray::{ArrayD, IxDyn};
use serde::Deserialize;
use serde_yaml::Value;

use super::{parse_parameters, DataError, DataRecord, RecordSource};

/// Parameters of the dummy source as the config writes them; see the
/// module docs for what each means and [`DummySource::default`] for the
/// defaults.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct DummyParameters {
    pub record_count: Option<usize>,
    /// Another name for `record_count`.
    pub limit: Option<usize>,
    pub image_shape: Option<Vec<usize>>,
    pub include_image: Option<bool>,
    pub tensor_shape: Option<Vec<usize>>,
    pub detections: Option<DetectionParameters>,
}

/// `detections:` as the config writes it; see [`Detections`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct DetectionParameters {
    pub count: Option<usize>,
    pub format: Option<String>,
    pub objects: Option<usize>,
    pub classes: Option<usize>,
    pub above: Option<f64>,
    pub threshold: Option<f64>,
    pub canvas: Option<[f64; 2]>,
}

/// How boxes are written: corners, corner and size, or centre and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoxFormat {
    /// `[x1, y1, x2, y2]`.
    Xyxy,
    /// `[x1, y1, w, h]`.
    Xywh,
    /// `[cx, cy, w, h]`.
    Cxcywh,
}

impl BoxFormat {
    fn name(self) -> &'static str {
        match self {
            BoxFormat::Xyxy => "xyxy",
            BoxFormat::Xywh => "xywh",
            BoxFormat::Cxcywh => "cxcywh",
        }
    }
}

/// Boxes, scores and classes like a detector's raw output; see the module
/// docs.
#[derive(Debug, Clone, PartialEq)]
pub struct Detections {
    /// Boxes per record.
    pub count: usize,
    pub format: BoxFormat,
    /// Places the boxes gather around (the objects a detector sees).
    pub objects: usize,
    /// Class ids are below this.
    pub classes: usize,
    /// The share of scores above `threshold`.
    pub above: f64,
    pub threshold: f64,
    /// `[width, height]` of the image the boxes lie in.
    pub canvas: [f64; 2],
}

impl Default for Detections {
    fn default() -> Self {
        Detections {
            count: 1000,
            format: BoxFormat::Xyxy,
            objects: 20,
            classes: 80,
            above: 0.2,
            threshold: 0.5,
            canvas: [640.0, 640.0],
        }
    }
}

impl Detections {
    fn from_parameters(params: DetectionParameters) -> Result<Detections, DataError> {
        let defaults = Detections::default();
        let key = |name: &str| format!("detections.{name}");
        let format = match params.format.as_deref() {
            None => defaults.format,
            Some("xyxy") => BoxFormat::Xyxy,
            Some("xywh") => BoxFormat::Xywh,
            Some("cxcywh") => BoxFormat::Cxcywh,
            Some(other) => {
                return Err(parameter_error(
                    &key("format"),
                    format!("`{other}`: expected xyxy, xywh or cxcywh"),
                ))
            }
        };
        let count = params.count.unwrap_or(defaults.count);
        if count == 0 || count.saturating_mul(6) > MAX_ELEMENTS {
            return Err(parameter_error(
                &key("count"),
                format!(
                    "{count}: expected at least 1 box, and at most {}",
                    MAX_ELEMENTS / 6
                ),
            ));
        }
        let objects = params.objects.unwrap_or(defaults.objects);
        if objects == 0 {
            return Err(parameter_error(&key("objects"), "must be >= 1"));
        }
        let classes = params.classes.unwrap_or(defaults.classes);
        if classes == 0 {
            return Err(parameter_error(&key("classes"), "must be >= 1"));
        }
        let share = |name: &str, value: Option<f64>, default: f64| match value {
            None => Ok(default),
            Some(v) if (0.0..=1.0).contains(&v) => Ok(v),
            Some(v) => Err(parameter_error(
                &key(name),
                format!("{v}: expected a number in [0, 1]"),
            )),
        };
        let above = share("above", params.above, defaults.above)?;
        let threshold = share("threshold", params.threshold, defaults.threshold)?;
        let canvas = params.canvas.unwrap_or(defaults.canvas);
        if canvas.iter().any(|side| !side.is_finite() || *side < 1.0) {
            return Err(parameter_error(
                &key("canvas"),
                format!("{canvas:?}: expected [width, height], each >= 1"),
            ));
        }
        Ok(Detections {
            count,
            format,
            objects,
            classes,
            above,
            threshold,
            canvas,
        })
    }

    /// Record `index`'s boxes (`count * 4` values, in `format`), scores
    /// and class ids.
    pub fn generate(&self, index: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x6465_7465_6374 ^ index as u64);
        let [width, height] = self.canvas;
        // Each object: a centre and a size, a fraction of the canvas.
        let objects: Vec<[f64; 4]> = (0..self.objects)
            .map(|_| {
                let w = width * rng.gen_range(0.05..0.4);
                let h = height * rng.gen_range(0.05..0.4);
                let cx = rng.gen_range(w / 2.0..=(width - w / 2.0).max(w / 2.0));
                let cy = rng.gen_range(h / 2.0..=(height - h / 2.0).max(h / 2.0));
                [cx, cy, w, h]
            })
            .collect();
        let mut boxes = Vec::with_capacity(self.count * 4);
        let mut scores = Vec::with_capacity(self.count);
        let mut classes = Vec::with_capacity(self.count);
        let object_class: Vec<usize> = (0..self.objects)
            .map(|_| rng.gen_range(0..self.classes))
            .collect();
        for i in 0..self.count {
            let object = i % self.objects;
            let [cx, cy, w, h] = objects[object];
            // Proposals for one object: shifted and scaled by a little, so
            // that they overlap it (and each other) as a detector's do.
            let w = (w * rng.gen_range(0.8..1.25)).max(1.0);
            let h = (h * rng.gen_range(0.8..1.25)).max(1.0);
            let cx = (cx + w * rng.gen_range(-0.15..0.15)).clamp(0.0, width);
            let cy = (cy + h * rng.gen_range(-0.15..0.15)).clamp(0.0, height);
            let (x1, y1) = ((cx - w / 2.0).max(0.0), (cy - h / 2.0).max(0.0));
            let (x2, y2) = ((cx + w / 2.0).min(width), (cy + h / 2.0).min(height));
            let written = match self.format {
                BoxFormat::Xyxy => [x1, y1, x2, y2],
                BoxFormat::Xywh => [x1, y1, x2 - x1, y2 - y1],
                BoxFormat::Cxcywh => [(x1 + x2) / 2.0, (y1 + y2) / 2.0, x2 - x1, y2 - y1],
            };
            boxes.extend(written.map(|v| v as f32));
            let score = if rng.gen_bool(self.above) {
                rng.gen_range(self.threshold..=1.0)
            } else {
                rng.gen_range(0.0..self.threshold.max(f64::MIN_POSITIVE))
            };
            scores.push(score as f32);
            classes.push(object_class[object] as f32);
        }
        (boxes, scores, classes)
    }
}

/// Synthetic records; see the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct DummySource {
    pub record_count: usize,
    /// `[H, W, C]`, C always 3.
    pub image_shape: [usize; 3],
    pub include_image: bool,
    pub tensor_shape: Vec<usize>,
    /// With it, `boxes`, `scores` and `classes` are a detector's output.
    pub detections: Option<Detections>,
}

impl Default for DummySource {
    fn default() -> Self {
        DummySource {
            record_count: 1,
            image_shape: [64, 64, 3],
            include_image: true,
            tensor_shape: vec![4, 4],
            detections: None,
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
        Self::from_parsed(parse_parameters("dummy", parameters)?)
    }

    /// [`from_parameters`](Self::from_parameters) once they are parsed.
    pub fn from_parsed(params: DummyParameters) -> Result<Self, DataError> {
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
        let detections = params
            .detections
            .map(Detections::from_parameters)
            .transpose()?;
        Ok(DummySource {
            record_count: record_count.1,
            image_shape,
            include_image: params.include_image.unwrap_or(defaults.include_image),
            tensor_shape,
            detections,
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
        if let Some(detections) = &self.detections {
            let (boxes, scores, classes) = detections.generate(index);
            let n = detections.count;
            return BTreeMap::from([
                (
                    "boxes".to_owned(),
                    ArrayD::from_shape_vec(IxDyn(&[n, 4]), boxes).expect("four values per box"),
                ),
                (
                    "scores".to_owned(),
                    ArrayD::from_shape_vec(IxDyn(&[n]), scores).expect("one score per box"),
                ),
                (
                    "classes".to_owned(),
                    ArrayD::from_shape_vec(IxDyn(&[n]), classes).expect("one class per box"),
                ),
                ("tensor".to_owned(), tensor),
            ]);
        }
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

/// Registered as `dummy`.
#[profiling_macros::data_source(
    name = "dummy",
    description = "Deterministic synthetic records: an image and tensors, or a detector's boxes before NMS.",
    crate = crate
)]
impl RecordSource for DummySource {
    type Parameters = DummyParameters;

    const IMAGE_PARAMETER: Option<&'static str> = Some("include_image: true");

    fn open(parameters: DummyParameters) -> anyhow::Result<Self> {
        Ok(DummySource::from_parsed(parameters)?)
    }

    fn record_id(&self, index: usize) -> Option<String> {
        (index < self.record_count).then(|| format!("dummy-{index}"))
    }

    fn describe(&self) -> BTreeMap<String, Value> {
        let mut described = BTreeMap::from([
            (
                "record_count".to_owned(),
                Value::from(self.record_count as u64),
            ),
            ("image_shape".to_owned(), shape_value(&self.image_shape)),
            ("include_image".to_owned(), Value::Bool(self.include_image)),
            ("tensor_shape".to_owned(), shape_value(&self.tensor_shape)),
        ]);
        if let Some(d) = &self.detections {
            let mut detections = serde_yaml::Mapping::new();
            detections.insert("count".into(), Value::from(d.count as u64));
            detections.insert("format".into(), Value::from(d.format.name()));
            detections.insert("objects".into(), Value::from(d.objects as u64));
            detections.insert("classes".into(), Value::from(d.classes as u64));
            detections.insert("above".into(), Value::from(d.above));
            detections.insert("threshold".into(), Value::from(d.threshold));
            detections.insert(
                "canvas".into(),
                Value::Sequence(d.canvas.iter().map(|&v| Value::from(v)).collect()),
            );
            described.insert("detections".to_owned(), Value::Mapping(detections));
        }
        described
    }

    fn len(&self) -> usize {
        self.record_count
    }

    fn estimated_bytes(&self) -> anyhow::Result<Option<u64>> {
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
        let rows = match &self.detections {
            // `boxes` (four per box), `scores` and `classes`.
            Some(d) => (d.count as u64).saturating_mul(6) / 5,
            None => self.tensor_shape.first().map_or(0, |&d| d as u64),
        };
        let values = elements.saturating_add(rows.saturating_mul(5));
        let tensors = values.saturating_mul(std::mem::size_of::<f32>() as u64);
        Ok(Some(
            (self.record_count as u64).saturating_mul(image.saturating_add(tensors)),
        ))
    }

    fn read(&self, index: usize) -> anyhow::Result<DataRecord> {
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
            typed_tensors: BTreeMap::new(),
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

    fn iou(a: &[f32], b: &[f32]) -> f32 {
        let w = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
        let h = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
        let inter = w * h;
        let area = |r: &[f32]| (r[2] - r[0]) * (r[3] - r[1]);
        inter / (area(a) + area(b) - inter)
    }

    /// Detector-like records: the boxes lie in the canvas and overlap per
    /// object the way proposals do (NMS has work to do), the share of
    /// scores above the threshold is about the one asked for, classes are
    /// below `classes`, and a record is the same every time it is read.
    #[test]
    fn detections_overlap_like_a_detectors_output_and_are_seeded() {
        let dummy = source(
            "{record_count: 2, detections: {count: 400, objects: 10, classes: 3, above: 0.3, threshold: 0.6, canvas: [320, 240]}}",
        )
        .unwrap();
        let record = dummy.read(0).unwrap();
        let boxes: Vec<f32> = record.tensors["boxes"].iter().copied().collect();
        let scores: Vec<f32> = record.tensors["scores"].iter().copied().collect();
        let classes: Vec<f32> = record.tensors["classes"].iter().copied().collect();
        assert_eq!(record.tensors["boxes"].shape(), &[400, 4]);
        assert_eq!((scores.len(), classes.len()), (400, 400));
        for b in boxes.chunks(4) {
            assert!(
                b[0] >= 0.0 && b[1] >= 0.0 && b[2] <= 320.0 && b[3] <= 240.0,
                "{b:?}"
            );
            assert!(b[2] > b[0] && b[3] > b[1], "{b:?}");
        }
        // Boxes of one object (every 10th) overlap heavily; most would be
        // suppressed by an NMS at IoU 0.5.
        let first: Vec<&[f32]> = boxes.chunks(4).step_by(10).collect();
        let overlapping = first
            .iter()
            .skip(1)
            .filter(|b| iou(first[0], b) > 0.5)
            .count();
        assert!(
            overlapping >= first.len() / 2,
            "{overlapping} of {}",
            first.len()
        );
        let above = scores.iter().filter(|s| **s >= 0.6).count() as f64 / 400.0;
        assert!((0.2..0.4).contains(&above), "{above}");
        assert!(scores.iter().all(|s| (0.0..=1.0).contains(s)));
        assert!(classes
            .iter()
            .all(|c| *c >= 0.0 && *c < 3.0 && c.fract() == 0.0));
        assert_eq!(dummy.read(0).unwrap().tensors, record.tensors);
        assert_ne!(
            dummy.read(1).unwrap().tensors["boxes"],
            record.tensors["boxes"]
        );
        assert_eq!(
            dummy.describe()["detections"]["format"],
            serde_yaml::Value::from("xyxy")
        );
    }

    #[test]
    fn detection_formats_describe_the_same_boxes() {
        let read = |format: &str| -> Vec<f32> {
            source(&format!("{{detections: {{count: 20, format: {format}}}}}"))
                .unwrap()
                .read(0)
                .unwrap()
                .tensors["boxes"]
                .iter()
                .copied()
                .collect()
        };
        let (xyxy, xywh, cxcywh) = (read("xyxy"), read("xywh"), read("cxcywh"));
        for ((a, b), c) in xyxy.chunks(4).zip(xywh.chunks(4)).zip(cxcywh.chunks(4)) {
            let close = |x: f32, y: f32| (x - y).abs() < 1e-3;
            assert!(close(a[0], b[0]) && close(a[2] - a[0], b[2]), "{a:?} {b:?}");
            assert!(
                close((a[0] + a[2]) / 2.0, c[0]) && close(a[3] - a[1], c[3]),
                "{a:?} {c:?}"
            );
        }
        let error = source("{detections: {format: ltrb}}")
            .unwrap_err()
            .to_string();
        assert!(error.contains("detections.format"), "{error}");
        assert!(
            error.contains("`ltrb`: expected xyxy, xywh or cxcywh"),
            "{error}"
        );
        let error = source("{detections: {above: 2}}").unwrap_err().to_string();
        assert!(error.contains("detections.above"), "{error}");
    }
}
