//! Text detection and recognition with the PP-OCRv4 models, the way the
//! production pipeline of the `rapidocr-onnxruntime` package runs them, as
//! two built-in targets on ONNX Runtime (the `ort` feature):
//!
//! - `ocr-det`: resize to a multiple of 32 (the shorter side to 736),
//!   normalize, the detection model, DB post-processing ([`db`]);
//! - `ocr-rec`: crop each detected box, resize to the recognizer's height
//!   in batches of six, the recognition model, CTC decoding ([`ctc`]).
//!
//! `scripts/setup-onnxruntime` puts the runtime, the models (taken from
//! the package's wheel) and a set of images with rendered text under
//! `.venv/`; `examples/ocr/ocr-det.yaml` and `ocr-rec.yaml` run the targets
//! on those images.

pub mod ctc;
pub mod db;
pub mod image_ops;

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use image::RgbImage;
use profiling_core::onnx::{tensors::tensor, OnnxModel};
use profiling_core::prelude::*;
use profiling_core::target::ParameterError;
use serde_yaml::Value;

use ctc::Characters;
use db::{DbParams, Quad};

/// The detection model's file in the models directory.
pub const DET_MODEL: &str = "ch_PP-OCRv4_det_infer.onnx";
/// The recognition model's file.
pub const REC_MODEL: &str = "ch_PP-OCRv4_rec_infer.onnx";

/// Where `scripts/setup-onnxruntime` puts the models and images, below a
/// workspace root.
const OCR_DIRECTORY: &str = ".venv/ocr";

/// The `.venv/ocr` directory: the one of the workspace this crate was
/// built in, else the first above the current directory that exists.
pub fn ocr_directory() -> Option<PathBuf> {
    let built = option_env!("PROFILING_OCR_DIR").map(PathBuf::from);
    let above = std::env::current_dir().ok().into_iter().flat_map(|cwd| {
        cwd.ancestors()
            .map(|a| a.join(OCR_DIRECTORY))
            .collect::<Vec<_>>()
    });
    built.into_iter().chain(above).find(|d| d.is_dir())
}

/// `file` in the models directory, or an error saying how to get it.
pub fn default_model(file: &str) -> anyhow::Result<PathBuf> {
    ocr_directory()
        .map(|d| d.join("models").join(file))
        .filter(|p| p.is_file())
        .ok_or_else(|| anyhow!("no {file} in .venv/ocr/models: run scripts/setup-onnxruntime, which extracts the PP-OCRv4 models there, or set the target's model parameter"))
}

/// Opens a model for a target: the parameter's file, else the default.
fn open_model(
    parameter: &str,
    path: Option<&Path>,
    default_file: &str,
    threads: usize,
    operator_ranges: bool,
    device: Device,
) -> anyhow::Result<OnnxModel> {
    let path = match path {
        Some(path) => {
            profiling_core::driver::config::check_literal_path(&path.to_string_lossy())
                .map_err(|message| ParameterError::new(parameter, message))?;
            path.to_path_buf()
        }
        None => default_model(default_file)
            .map_err(|e| ParameterError::new(parameter, e.to_string()))?,
    };
    OnnxModel::builder(path)
        .device(device)
        .intra_threads(threads)
        .inter_threads(usize::from(threads > 0))
        // The production sessions turn the CPU arena off.
        .cpu_arena(false)
        .operator_ranges(operator_ranges)
        .open()
}

// Detection.

/// The detection model's input: the image resized and normalized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DetInputSize {
    /// Columns, a multiple of 32.
    pub width: u32,
    /// Rows, a multiple of 32.
    pub height: u32,
}

/// The size the detector takes an image at: the shorter side scaled to
/// `limit_side_len` when below it, each side then rounded to a multiple of
/// 32 (the production code's `limit_type: min`).
pub fn det_input_size(width: u32, height: u32, limit_side_len: u32) -> DetInputSize {
    let (w, h) = (f64::from(width), f64::from(height));
    let ratio = if w.min(h) < f64::from(limit_side_len) {
        f64::from(limit_side_len) / w.min(h)
    } else {
        1.0
    };
    // Python's int() then round() (to even) of the side over 32.
    let side = |s: f64| {
        let scaled = (s * ratio).trunc() / 32.0;
        let rounded = scaled.round();
        let even = if (scaled - scaled.trunc()) == 0.5 && rounded % 2.0 != 0.0 {
            rounded - 1.0
        } else {
            rounded
        };
        (even * 32.0) as u32
    };
    DetInputSize {
        width: side(w),
        height: side(h),
    }
}

/// A model's first output copied out, with its shape, which must have as
/// many dimensions as `layout` (`[N, T, C]`) names.
fn first_output(
    outputs: &ort::session::SessionOutputs<'_>,
    model: &str,
    layout: &str,
) -> anyhow::Result<(Vec<f32>, Vec<usize>)> {
    let (shape, values) = outputs[0]
        .try_extract_tensor::<f32>()
        .map_err(|e| anyhow!("the {model} model's output: {e}"))?;
    let dimensions = layout.split(',').count();
    anyhow::ensure!(
        shape.len() == dimensions,
        "the {model} model gave a {}-dimensional output, not {layout}",
        shape.len()
    );
    Ok((values.to_vec(), shape.iter().map(|&d| d as usize).collect()))
}

/// The detector: the model and its post-processing settings.
pub struct Detector {
    /// The detection model's session.
    pub model: OnnxModel,
    /// The shorter side an image is scaled up to.
    pub limit_side_len: u32,
    /// The post-processing settings.
    pub db: DbParams,
}

impl Detector {
    /// Text boxes of `image`, in reading order, with a range per step.
    pub fn detect(&mut self, image: &RgbImage) -> anyhow::Result<Vec<Quad>> {
        let size = det_input_size(image.width(), image.height(), self.limit_side_len);
        anyhow::ensure!(
            size.width > 0 && size.height > 0,
            "an image of {}x{} is too small to detect text in",
            image.width(),
            image.height()
        );
        let resized = {
            let _range = profiling_range("resize");
            image_ops::resize_bilinear(image, size.width, size.height)
        };
        let input = {
            let _range = profiling_range("normalize");
            let (w, h) = (size.width as usize, size.height as usize);
            let mut planes = vec![0f32; 3 * w * h];
            image_ops::normalize_bgr_into(&resized, &mut planes, w);
            tensor([1, 3, h, w], planes)?
        };
        let (map, shape) = self.model.run(ort::inputs![input], |outputs| {
            first_output(outputs, "detection", "[1, 1, H, W]")
        })?;
        let (width, height) = (shape[3], shape[2]);
        let _range = profiling_range("postprocess");
        Ok(db::boxes_from_map(
            &map,
            width,
            height,
            image.width(),
            image.height(),
            &self.db,
        ))
    }
}

/// `target.parameters` of `ocr-det`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetParameters {
    /// The detection model (default `.venv/ocr/models/ch_PP-OCRv4_det_infer.onnx`).
    #[serde(default)]
    pub model: Option<PathBuf>,
    /// ONNX Runtime's threads inside an operator; 0: one per core.
    #[serde(default)]
    pub threads: usize,
    /// Each operator of the model as a range under `model` (ONNX Runtime's profiler on).
    #[serde(default)]
    pub operator_ranges: bool,
    /// The shorter side the image is scaled up to (default 736).
    #[serde(default = "default_limit_side_len")]
    pub limit_side_len: u32,
    /// DB post-processing settings.
    #[serde(default)]
    pub db: DbParams,
}

fn default_limit_side_len() -> u32 {
    736
}

/// `ocr-det`: text detection with the PP-OCRv4 detector.
pub struct OcrDet {
    parameters: DetParameters,
    detector: Option<Detector>,
}

/// Reads `ocr-det`'s parameters; the model opens in `prepare`, on the run's device.
pub fn make_ocr_det() -> anyhow::Result<OcrDet> {
    Ok(OcrDet {
        parameters: profiling_core::target::parameters()?,
        detector: None,
    })
}

impl OcrDet {
    fn detector(&mut self, device: Device) -> anyhow::Result<&mut Detector> {
        if self
            .detector
            .as_ref()
            .is_none_or(|d| d.model.device() != device)
        {
            let p = &self.parameters;
            let model = open_model(
                "model",
                p.model.as_deref(),
                DET_MODEL,
                p.threads,
                p.operator_ranges,
                device,
            )?;
            self.detector = Some(Detector {
                model,
                limit_side_len: p.limit_side_len,
                db: p.db,
            });
        }
        Ok(self.detector.as_mut().expect("opened above"))
    }
}

/// The boxes of each image as the summary shows them.
fn quads_value(quads: &[Quad]) -> Value {
    Value::Sequence(
        quads
            .iter()
            .map(|q| {
                Value::Sequence(
                    q.iter()
                        .flatten()
                        .map(|&v| Value::from(f64::from(v)))
                        .collect(),
                )
            })
            .collect(),
    )
}

#[profile_target(
    name = "ocr-det",
    factory = make_ocr_det,
    config = "ocr/ocr-det.yaml",
    setup = "scripts/setup-onnxruntime"
)]
impl ProfileTarget for OcrDet {
    type Prepared = RgbImage;
    type Output = Vec<Quad>;

    fn prepare(&mut self, record: &DataRecord, device: Device) -> anyhow::Result<RgbImage> {
        self.detector(device)?;
        Ok(record.image()?.clone())
    }

    fn run(&mut self, image: &RgbImage) -> anyhow::Result<Vec<Quad>> {
        let detector = self
            .detector
            .as_mut()
            .context("prepare opens the model first")?;
        detector.detect(image)
    }

    fn validate(&self, boxes: &Vec<Quad>) -> anyhow::Result<()> {
        for quad in boxes {
            anyhow::ensure!(
                quad.iter().flatten().all(|v| v.is_finite() && *v >= 0.0),
                "a box with a corner outside the image: {quad:?}"
            );
        }
        Ok(())
    }

    fn summarize(&self, boxes: &Vec<Quad>) -> Summary {
        Summary::from([
            ("boxes".to_owned(), Value::from(boxes.len() as u64)),
            ("quads".to_owned(), quads_value(boxes)),
        ])
    }
}

// Recognition.

/// The recognizer: the model, its classes, the batch size.
pub struct Recognizer {
    /// The recognition model's session.
    pub model: OnnxModel,
    /// Its classes.
    pub characters: Characters,
    /// Crops per model run.
    pub batch: usize,
}

/// The recognizer's input height and its narrowest width.
const REC_HEIGHT: u32 = 48;
const REC_WIDTH: u32 = 320;

impl Recognizer {
    /// Opens the recognizer, its classes from the model's `character`
    /// metadata.
    pub fn new(model: OnnxModel, batch: usize) -> anyhow::Result<Recognizer> {
        let list = model.metadata("character")?.with_context(|| {
            format!(
                "the recognition model {} has no `character` metadata",
                model.path().display()
            )
        })?;
        Ok(Recognizer {
            characters: Characters::from_list(&list),
            model,
            batch: batch.max(1),
        })
    }

    /// The text and confidence of each box of `image`, in the boxes' order.
    pub fn recognize(
        &mut self,
        image: &RgbImage,
        boxes: &[Quad],
    ) -> anyhow::Result<Vec<(String, f32)>> {
        let crops: Vec<RgbImage> = {
            let _range = profiling_range("crop");
            boxes.iter().map(|quad| crop(image, quad)).collect()
        };
        // Narrowest first, in batches: similar widths pad little.
        let ratios: Vec<f64> = crops
            .iter()
            .map(|c| f64::from(c.width()) / f64::from(c.height()))
            .collect();
        let mut order: Vec<usize> = (0..crops.len()).collect();
        order.sort_by(|&a, &b| ratios[a].total_cmp(&ratios[b]));
        let mut results = vec![(String::new(), 0.0); crops.len()];
        for chunk in order.chunks(self.batch) {
            let input = {
                let _range = profiling_range("resize");
                rec_batch(&crops, chunk, &ratios)?
            };
            let (scores, shape) = self.model.run(ort::inputs![input], |outputs| {
                first_output(outputs, "recognition", "[N, T, C]")
            })?;
            let (steps, classes) = (shape[1], shape[2]);
            let _range = profiling_range("decode");
            anyhow::ensure!(
                classes == self.characters.len(),
                "the recognition model scores {classes} classes, its character list has {}",
                self.characters.len()
            );
            for (slot, &index) in chunk.iter().enumerate() {
                let per_crop = steps * classes;
                results[index] = ctc::decode(
                    &scores[slot * per_crop..(slot + 1) * per_crop],
                    steps,
                    &self.characters,
                );
            }
        }
        Ok(results)
    }
}

/// The box of `image` cut out upright: as wide as its longer horizontal
/// side, as high as its longer vertical one, turned a quarter when it is
/// one and a half times higher than wide.
pub fn crop(image: &RgbImage, quad: &Quad) -> RgbImage {
    let length = |a: [f32; 2], b: [f32; 2]| f64::from(a[0] - b[0]).hypot(f64::from(a[1] - b[1]));
    let width = length(quad[0], quad[1]).max(length(quad[2], quad[3])) as u32;
    let height = length(quad[0], quad[3]).max(length(quad[1], quad[2])) as u32;
    let cropped = image_ops::warp_crop(image, *quad, width.max(1), height.max(1));
    if f64::from(cropped.height()) / f64::from(cropped.width()) >= 1.5 {
        image_ops::rotate_counter_clockwise(&cropped)
    } else {
        cropped
    }
}

/// The batch of `chunk`'s crops: each resized to the recognizer's height
/// keeping its ratio, normalized and padded with zeros to the widest
/// ratio of the batch (at least 320 / 48).
fn rec_batch(
    crops: &[RgbImage],
    chunk: &[usize],
    ratios: &[f64],
) -> anyhow::Result<ort::value::Tensor<f32>> {
    let height = REC_HEIGHT as usize;
    let max_ratio = chunk
        .iter()
        .map(|&i| ratios[i])
        .fold(f64::from(REC_WIDTH) / f64::from(REC_HEIGHT), f64::max);
    let width = (f64::from(REC_HEIGHT) * max_ratio) as usize;
    let slot = 3 * height * width;
    let mut values = vec![0f32; chunk.len() * slot];
    for (n, &index) in chunk.iter().enumerate() {
        let crop = &crops[index];
        let wanted = (f64::from(REC_HEIGHT) * ratios[index]).ceil() as usize;
        let resized_width = wanted.min(width).max(1) as u32;
        let resized = image_ops::resize_bilinear(crop, resized_width, REC_HEIGHT);
        image_ops::normalize_bgr_into(&resized, &mut values[n * slot..(n + 1) * slot], width);
    }
    tensor([chunk.len(), 3, height, width], values)
}

/// `target.parameters` of `ocr-rec`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecParameters {
    /// The recognition model (default `.venv/ocr/models/ch_PP-OCRv4_rec_infer.onnx`).
    #[serde(default)]
    pub model: Option<PathBuf>,
    /// The detection model that finds the boxes in `prepare` (default the PP-OCRv4 one).
    #[serde(default)]
    pub det_model: Option<PathBuf>,
    /// ONNX Runtime's threads inside an operator; 0: one per core.
    #[serde(default)]
    pub threads: usize,
    /// Each operator of the model as a range under `model`.
    #[serde(default)]
    pub operator_ranges: bool,
    /// Crops per model run (default 6).
    #[serde(default = "default_rec_batch")]
    pub batch: usize,
}

fn default_rec_batch() -> usize {
    6
}

/// `ocr-rec`: text recognition of the boxes the detector finds (found in
/// `prepare`, outside the measured passes).
pub struct OcrRec {
    parameters: RecParameters,
    detector: Option<Detector>,
    recognizer: Option<Recognizer>,
}

/// Reads `ocr-rec`'s parameters; the models open in `prepare`.
pub fn make_ocr_rec() -> anyhow::Result<OcrRec> {
    let parameters: RecParameters = profiling_core::target::parameters()?;
    if parameters.batch == 0 {
        return Err(ParameterError::new("batch", "must be >= 1, got 0").into());
    }
    Ok(OcrRec {
        parameters,
        detector: None,
        recognizer: None,
    })
}

/// An image and the boxes found in it.
#[derive(Debug, Clone)]
pub struct TextImage {
    /// The image.
    pub image: RgbImage,
    /// Its text boxes, in reading order.
    pub boxes: Vec<Quad>,
}

#[profile_target(
    name = "ocr-rec",
    factory = make_ocr_rec,
    config = "ocr/ocr-rec.yaml",
    setup = "scripts/setup-onnxruntime"
)]
impl ProfileTarget for OcrRec {
    type Prepared = TextImage;
    type Output = Vec<(String, f32)>;

    fn prepare(&mut self, record: &DataRecord, device: Device) -> anyhow::Result<TextImage> {
        let p = self.parameters.clone();
        if self
            .recognizer
            .as_ref()
            .is_none_or(|r| r.model.device() != device)
        {
            let model = open_model(
                "model",
                p.model.as_deref(),
                REC_MODEL,
                p.threads,
                p.operator_ranges,
                device,
            )?;
            self.recognizer = Some(Recognizer::new(model, p.batch)?);
            let det = open_model(
                "det_model",
                p.det_model.as_deref(),
                DET_MODEL,
                p.threads,
                false,
                device,
            )?;
            self.detector = Some(Detector {
                model: det,
                limit_side_len: default_limit_side_len(),
                db: DbParams::default(),
            });
        }
        let image = record.image()?.clone();
        let detector = self.detector.as_mut().expect("opened above");
        let boxes = detector
            .detect(&image)
            .with_context(|| format!("detecting text in {}", record.id))?;
        Ok(TextImage { image, boxes })
    }

    fn run(&mut self, input: &TextImage) -> anyhow::Result<Vec<(String, f32)>> {
        let recognizer = self
            .recognizer
            .as_mut()
            .context("prepare opens the model first")?;
        recognizer.recognize(&input.image, &input.boxes)
    }

    fn summarize(&self, texts: &Vec<(String, f32)>) -> Summary {
        let mean = if texts.is_empty() {
            0.0
        } else {
            texts.iter().map(|t| f64::from(t.1)).sum::<f64>() / texts.len() as f64
        };
        Summary::from([
            (
                "texts".to_owned(),
                Value::Sequence(texts.iter().map(|t| Value::from(t.0.clone())).collect()),
            ),
            ("mean_confidence".to_owned(), Value::from(mean)),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_detector_input_is_the_shorter_side_at_736_in_multiples_of_32() {
        // 640 x 480: ratio 736 / 480, 981.33 -> 981 -> 30.66 -> 31 -> 992.
        assert_eq!(
            det_input_size(640, 480, 736),
            DetInputSize {
                width: 992,
                height: 736
            }
        );
        // Large images keep their size, rounded: 1000 / 32 = 31.25 -> 992.
        assert_eq!(
            det_input_size(1000, 800, 736),
            DetInputSize {
                width: 992,
                height: 800
            }
        );
        // Python rounds 16 / 32 = 0.5 to even (0), and 48 / 32 = 1.5 to 2.
        assert_eq!(
            det_input_size(16, 48, 10),
            DetInputSize {
                width: 0,
                height: 64
            }
        );
    }
}
