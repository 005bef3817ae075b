//! The built-in reference targets: the stages of the detection pipeline,
//! alone and chained, ready to profile on the dummy source.
//!
//! | target | run |
//! | --- | --- |
//! | `letterbox-preprocess` | [`letterbox`] of the record's image to 640 |
//! | `detection-postprocess` | [`postprocess_detections`] on a synthetic 8400 x 84 raw output per record; takes batches |
//! | `detection-pipeline` | letterbox, [`SyntheticDetector::forward`], postprocess |

use anyhow::{bail, ensure};
use image::RgbImage;
use profiling_core::prelude::*;
use serde_yaml::Value;

use crate::model::SyntheticDetector;
use crate::postprocess::{postprocess_detections, Detection, PostprocessParams};
use crate::preprocess::{letterbox, Letterboxed};
use crate::synthetic::{predictions_for_batch, SyntheticBatch, INPUT_SIZE, NUM_CLASSES};

/// Cells per side of the detector in `detection-pipeline`: 1600 anchors.
pub const PIPELINE_GRID: usize = 40;

/// The seed of the detector's weights in `detection-pipeline`: fixed, like a
/// checkpoint, whatever the run's seed.
pub const PIPELINE_WEIGHTS_SEED: u64 = 0;

/// Letterboxes the record's image into the 640x640 input of a detector.
#[derive(Debug, Default)]
pub struct LetterboxPreprocess;

#[profile_target(name = "letterbox-preprocess")]
impl ProfileTarget for LetterboxPreprocess {
    type Prepared = RgbImage;
    type Output = Letterboxed;

    fn prepare(&mut self, record: &DataRecord, _device: Device) -> anyhow::Result<RgbImage> {
        image_of(record)
    }

    fn run(&mut self, image: &RgbImage) -> anyhow::Result<Letterboxed> {
        Ok(letterbox(image, INPUT_SIZE))
    }

    fn validate(&self, output: &Letterboxed) -> anyhow::Result<()> {
        let size = INPUT_SIZE as usize;
        ensure!(
            output.tensor.shape() == [3, size, size],
            "letterboxed tensor has shape {:?}, expected [3, {size}, {size}]",
            output.tensor.shape()
        );
        if let Some(value) = output.tensor.iter().find(|v| !(0.0..=1.0).contains(*v)) {
            bail!("letterboxed tensor holds {value}, outside [0, 1]");
        }
        Ok(())
    }

    fn summarize(&self, output: &Letterboxed) -> Summary {
        let tensor = &output.tensor;
        Summary::from([
            (
                "shape".to_owned(),
                sequence(tensor.shape().iter().map(|&d| Value::from(d as u64))),
            ),
            ("scale".to_owned(), float(output.scale)),
            (
                "pad".to_owned(),
                sequence([float(output.pad.0), float(output.pad.1)]),
            ),
            ("mean".to_owned(), float(tensor.mean().unwrap_or(0.0))),
        ])
    }
}

/// Decodes, suppresses and rescales a synthetic 8400x84 YOLO output.
///
/// Takes batches: with `workload.batch_size` N, the head's output for N
/// records as one `[N, 8400, 84]` array, postprocessed image by image as a
/// batched detector's output is.
#[derive(Debug, Default)]
pub struct DetectionPostprocess {
    /// Thresholds and cap of the postprocessing.
    pub params: PostprocessParams,
}

#[profile_target(name = "detection-postprocess")]
impl ProfileTarget for DetectionPostprocess {
    type Prepared = SyntheticBatch;
    type Output = Vec<DetectionOutput>;

    fn prepare(&mut self, record: &DataRecord, _device: Device) -> anyhow::Result<SyntheticBatch> {
        predictions_for_batch(std::slice::from_ref(record))
    }

    fn prepare_batch(
        &mut self,
        records: &[DataRecord],
        _device: Device,
    ) -> anyhow::Result<SyntheticBatch> {
        predictions_for_batch(records)
    }

    fn run(&mut self, batch: &SyntheticBatch) -> anyhow::Result<Vec<DetectionOutput>> {
        Ok(batch
            .raw
            .outer_iter()
            .zip(&batch.letterboxes)
            .map(|(raw, letterbox)| DetectionOutput {
                detections: postprocess_detections(raw, letterbox, &self.params),
                image_size: letterbox.original,
            })
            .collect())
    }

    fn validate(&self, outputs: &Vec<DetectionOutput>) -> anyhow::Result<()> {
        for (image, output) in outputs.iter().enumerate() {
            output
                .check(self.params.max_detections)
                .map_err(|error| error.context(format!("image {image} of the batch")))?;
        }
        Ok(())
    }

    /// One record's summary as [`DetectionOutput::summary`] gives it; a
    /// batch's has each key once, its value the list of the images' values.
    fn summarize(&self, outputs: &Vec<DetectionOutput>) -> Summary {
        match outputs.as_slice() {
            [single] => single.summary(),
            batch => {
                let mut summary = Summary::new();
                for output in batch {
                    for (key, value) in output.summary() {
                        let slot = summary
                            .entry(key)
                            .or_insert_with(|| Value::Sequence(Vec::new()));
                        if let Value::Sequence(values) = slot {
                            values.push(value);
                        }
                    }
                }
                summary
            }
        }
    }
}

/// Runs the whole detector: letterbox, synthetic head, postprocess.
#[derive(Debug)]
pub struct DetectionPipeline {
    /// The stand-in for the model.
    pub detector: SyntheticDetector,
    /// Thresholds and cap of the postprocessing.
    pub params: PostprocessParams,
}

impl Default for DetectionPipeline {
    fn default() -> Self {
        DetectionPipeline {
            detector: SyntheticDetector::new(NUM_CLASSES, PIPELINE_GRID, PIPELINE_WEIGHTS_SEED),
            params: PostprocessParams::default(),
        }
    }
}

#[profile_target(name = "detection-pipeline")]
impl ProfileTarget for DetectionPipeline {
    type Prepared = RgbImage;
    type Output = DetectionOutput;

    fn prepare(&mut self, record: &DataRecord, _device: Device) -> anyhow::Result<RgbImage> {
        image_of(record)
    }

    fn run(&mut self, image: &RgbImage) -> anyhow::Result<DetectionOutput> {
        let letterboxed = {
            let _range = profiling_range("preprocess");
            letterbox(image, INPUT_SIZE)
        };
        let raw = {
            let _range = profiling_range("model");
            self.detector.forward(&letterboxed.tensor)
        };
        let detections = {
            let _range = profiling_range("postprocess");
            postprocess_detections(raw.view(), &letterboxed.info(), &self.params)
        };
        Ok(DetectionOutput {
            detections,
            image_size: letterboxed.original,
        })
    }

    fn validate(&self, output: &DetectionOutput) -> anyhow::Result<()> {
        output.check(self.params.max_detections)
    }

    fn summarize(&self, output: &DetectionOutput) -> Summary {
        output.summary()
    }
}

/// The detections found on one record, with the size of its image.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectionOutput {
    /// Best first, boxes in original image pixels.
    pub detections: Vec<Detection>,
    /// Width and height of the record's image.
    pub image_size: (u32, u32),
}

impl DetectionOutput {
    /// Checks what postprocessing promises: at most `max_detections`, every
    /// box well-formed and inside the image, scores finite and sorted best
    /// first.
    pub fn check(&self, max_detections: usize) -> anyhow::Result<()> {
        ensure!(
            self.detections.len() <= max_detections,
            "{} detections, more than max_detections = {max_detections}",
            self.detections.len()
        );
        let (width, height) = (self.image_size.0 as f32, self.image_size.1 as f32);
        for (i, detection) in self.detections.iter().enumerate() {
            let [x1, y1, x2, y2] = detection.bbox;
            ensure!(
                0.0 <= x1 && x1 <= x2 && x2 <= width && 0.0 <= y1 && y1 <= y2 && y2 <= height,
                "detection {i} has box {:?}, not inside the {}x{} image",
                detection.bbox,
                self.image_size.0,
                self.image_size.1
            );
            ensure!(
                detection.score.is_finite(),
                "detection {i} has score {}",
                detection.score
            );
        }
        if let Some(i) = self
            .detections
            .windows(2)
            .position(|pair| pair[0].score < pair[1].score)
        {
            bail!(
                "detections are not sorted by score: {} at {i} is below {} at {}",
                self.detections[i].score,
                self.detections[i + 1].score,
                i + 1
            );
        }
        Ok(())
    }

    /// `detections` (how many), `top_score` (null when none) and `classes`
    /// (the distinct class ids, ascending).
    pub fn summary(&self) -> Summary {
        let mut classes: Vec<usize> = self.detections.iter().map(|d| d.class_id).collect();
        classes.sort_unstable();
        classes.dedup();
        Summary::from([
            (
                "detections".to_owned(),
                Value::from(self.detections.len() as u64),
            ),
            (
                "top_score".to_owned(),
                self.detections
                    .first()
                    .map_or(Value::Null, |d| float(d.score)),
            ),
            (
                "classes".to_owned(),
                sequence(classes.into_iter().map(|c| Value::from(c as u64))),
            ),
        ])
    }
}

/// A copy of the record's decoded image, refusing an empty one (it cannot
/// be letterboxed).
fn image_of(record: &DataRecord) -> anyhow::Result<RgbImage> {
    let image = record.image()?;
    ensure!(
        image.width() > 0 && image.height() > 0,
        "record `{}` has an empty {}x{} image",
        record.id,
        image.width(),
        image.height()
    );
    Ok(image.clone())
}

/// An `f32` as YAML, written with its shortest round-tripping digits
/// (`0.1`, not `0.10000000149011612`).
fn float(value: f32) -> Value {
    Value::from(value.to_string().parse::<f64>().unwrap_or(f64::from(value)))
}

fn sequence(values: impl IntoIterator<Item = Value>) -> Value {
    Value::Sequence(values.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use profiling_core::data::dummy::DummySource;
    use profiling_core::data::{self, RecordSource};

    fn dummy_record() -> DataRecord {
        DummySource::default().read(0).unwrap()
    }

    fn imageless_record() -> DataRecord {
        DummySource {
            include_image: false,
            ..DummySource::default()
        }
        .read(0)
        .unwrap()
    }

    fn detection(bbox: [f32; 4], score: f32, class_id: usize) -> Detection {
        Detection {
            bbox,
            score,
            class_id,
        }
    }

    #[test]
    fn letterbox_preprocess_fills_a_640_square_from_the_dummy_image() {
        let mut target = LetterboxPreprocess;
        let image = target.prepare(&dummy_record(), Device::Cpu).unwrap();
        assert_eq!(image.dimensions(), (64, 64));
        let output = target.run(&image).unwrap();
        target.validate(&output).unwrap();
        let summary = target.summarize(&output);
        assert_eq!(
            summary["shape"],
            sequence([3u64, 640, 640].map(Value::from))
        );
        assert_eq!(summary["scale"], Value::from(10.0));
        assert_eq!(
            summary["pad"],
            sequence([Value::from(0.0), Value::from(0.0)])
        );
        let mean = summary["mean"].as_f64().unwrap();
        assert!(mean > 0.0 && mean < 1.0, "mean {mean}");
    }

    #[test]
    fn letterbox_preprocess_needs_an_image() {
        let error = LetterboxPreprocess
            .prepare(&imageless_record(), Device::Cpu)
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("record `dummy-0` has no decoded image"),
            "{error}"
        );
    }

    #[test]
    fn letterbox_preprocess_refuses_a_wrong_shape_or_range() {
        let mut output = letterbox(&RgbImage::new(8, 8), 32);
        let error = LetterboxPreprocess
            .validate(&output)
            .unwrap_err()
            .to_string();
        assert!(error.contains("[3, 32, 32]"), "{error}");
        output = letterbox(&RgbImage::new(8, 8), INPUT_SIZE);
        output.tensor[[1, 2, 3]] = 1.5;
        let error = LetterboxPreprocess
            .validate(&output)
            .unwrap_err()
            .to_string();
        assert!(error.contains("1.5"), "{error}");
    }

    #[test]
    fn detection_postprocess_finds_the_synthetic_objects() {
        profiling_core::random::seed_run(Some(0));
        let mut target = DetectionPostprocess::default();
        let prepared = target.prepare(&dummy_record(), Device::Cpu).unwrap();
        assert_eq!(prepared.raw.shape(), &[1, 8400, 84]);
        let output = target.run(&prepared).unwrap();
        target.validate(&output).unwrap();
        assert_eq!(output.len(), 1);
        assert_eq!(output[0].image_size, (64, 64));
        let summary = target.summarize(&output);
        let count = summary["detections"].as_u64().unwrap();
        assert!((4..=20).contains(&count), "{count} detections");
        let top = summary["top_score"].as_f64().unwrap();
        assert!((0.5..0.95).contains(&top), "top score {top}");
        assert!(!summary["classes"].as_sequence().unwrap().is_empty());
    }

    #[test]
    fn detection_postprocess_works_without_an_image() {
        let mut target = DetectionPostprocess::default();
        let prepared = target.prepare(&imageless_record(), Device::Cpu).unwrap();
        let output = target.run(&prepared).unwrap();
        target.validate(&output).unwrap();
        assert_eq!(output[0].image_size, (INPUT_SIZE, INPUT_SIZE));
    }

    #[test]
    fn detection_postprocess_finds_in_a_batch_what_it_finds_record_by_record() {
        profiling_core::random::seed_run(Some(0));
        let dummy = DummySource {
            record_count: 3,
            ..DummySource::default()
        };
        let records = data::named("dummy", dummy).read_all().unwrap();
        let mut target = DetectionPostprocess::default();
        let batch = target.prepare_batch(&records, Device::Cpu).unwrap();
        assert_eq!(batch.raw.shape(), &[3, 8400, 84]);
        let outputs = target.run(&batch).unwrap();
        target.validate(&outputs).unwrap();
        let one_by_one: Vec<DetectionOutput> = records
            .iter()
            .map(|record| {
                let prepared = target.prepare(record, Device::Cpu).unwrap();
                target.run(&prepared).unwrap().remove(0)
            })
            .collect();
        assert_eq!(outputs, one_by_one);
        let summary = target.summarize(&outputs);
        let counts: Vec<u64> = summary["detections"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(
            counts,
            one_by_one
                .iter()
                .map(|o| o.detections.len() as u64)
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn detection_pipeline_runs_on_the_dummy_record() {
        let mut target = DetectionPipeline::default();
        let image = target.prepare(&dummy_record(), Device::Cpu).unwrap();
        let output = target.run(&image).unwrap();
        target.validate(&output).unwrap();
        assert_eq!(output.image_size, (64, 64));
        assert_eq!(
            output,
            target.run(&image).unwrap(),
            "the pipeline is deterministic"
        );
        // The dummy gradient wraps around in green and blue: the edges are
        // where the synthetic head finds objects.
        assert!(!output.detections.is_empty());
        let summary = target.summarize(&output);
        assert_eq!(
            summary["detections"].as_u64().unwrap(),
            output.detections.len() as u64
        );
    }

    #[test]
    fn detection_pipeline_finds_nothing_on_a_uniform_image() {
        let mut target = DetectionPipeline::default();
        let grey = RgbImage::from_pixel(64, 48, image::Rgb([114; 3]));
        let output = target.run(&grey).unwrap();
        assert_eq!(output.detections, Vec::new());
        assert_eq!(output.image_size, (64, 48));
    }

    #[test]
    fn detection_pipeline_needs_an_image() {
        let error = DetectionPipeline::default()
            .prepare(&imageless_record(), Device::Cpu)
            .unwrap_err();
        assert!(error.to_string().contains("dummy-0"), "{error}");
    }

    #[test]
    fn check_refuses_boxes_outside_the_image() {
        let output = DetectionOutput {
            detections: vec![detection([0.0, 0.0, 65.0, 10.0], 0.9, 0)],
            image_size: (64, 64),
        };
        let error = output.check(300).unwrap_err().to_string();
        assert!(error.contains("not inside the 64x64 image"), "{error}");
    }

    #[test]
    fn check_refuses_unsorted_scores() {
        let output = DetectionOutput {
            detections: vec![detection([0.0; 4], 0.5, 0), detection([0.0; 4], 0.6, 0)],
            image_size: (64, 64),
        };
        let error = output.check(300).unwrap_err().to_string();
        assert!(error.contains("not sorted by score"), "{error}");
    }

    #[test]
    fn check_refuses_more_than_max_detections() {
        let output = DetectionOutput {
            detections: vec![detection([0.0; 4], 0.5, 0); 3],
            image_size: (64, 64),
        };
        assert!(output.check(2).is_err());
        assert!(output.check(3).is_ok());
    }

    #[test]
    fn summary_counts_detections_and_distinct_classes() {
        let output = DetectionOutput {
            detections: vec![
                detection([0.0; 4], 0.75, 7),
                detection([0.0; 4], 0.5, 2),
                detection([0.0; 4], 0.25, 7),
            ],
            image_size: (64, 64),
        };
        let summary = output.summary();
        assert_eq!(summary["detections"], Value::from(3u64));
        assert_eq!(summary["top_score"], Value::from(0.75));
        assert_eq!(
            summary["classes"],
            sequence([Value::from(2u64), Value::from(7u64)])
        );
        let empty = DetectionOutput {
            detections: Vec::new(),
            image_size: (64, 64),
        };
        assert_eq!(empty.summary()["top_score"], Value::Null);
    }

    #[test]
    fn floats_are_written_with_their_shortest_digits() {
        assert_eq!(float(0.1), Value::from(0.1f64));
    }
}
