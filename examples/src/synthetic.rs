//! Synthetic raw detector output, to profile postprocessing without a model.
//!
//! The output looks like a YOLO head's at 640x640: 8400 anchors, 80 classes,
//! almost every score low, and a few dozen anchors clustered on a handful of
//! objects with high scores, so decoding keeps a few dozen candidates and NMS
//! has real overlaps to resolve.

use anyhow::ensure;
use ndarray::{Array2, Array3, Axis};
use profiling_core::data::DataRecord;
use rand::seq::index;
use rand::Rng;

use crate::postprocess::BOX_COLUMNS;
use crate::preprocess::LetterboxInfo;

/// Side of the square detector input.
pub const INPUT_SIZE: u32 = 640;

/// Anchors of a YOLO head at 640: strides 8, 16 and 32 give 80², 40² and 20².
pub const NUM_ANCHORS: usize = 8400;

/// Classes of a COCO-trained detector.
pub const NUM_CLASSES: usize = 80;

/// Background scores stay below this, under the default confidence threshold.
const BACKGROUND_SCORE: f32 = 0.2;

/// A raw detector output and the letterbox it refers to.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticPredictions {
    /// `[NUM_ANCHORS, 4 + NUM_CLASSES]`, boxes as `cx, cy, w, h` in input pixels.
    pub raw: Array2<f32>,
    /// How the record's image would be letterboxed to [`INPUT_SIZE`].
    pub letterbox: LetterboxInfo,
}

/// A detector head's output for a batch of records, as a batched model
/// gives it: one `[N, NUM_ANCHORS, 4 + NUM_CLASSES]` array, and the
/// letterbox of each record.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticBatch {
    /// Record `i`'s raw output is `raw[i]`.
    pub raw: Array3<f32>,
    /// Record `i`'s letterbox.
    pub letterboxes: Vec<LetterboxInfo>,
}

/// The raw outputs of [`predictions_for_record`] for each of `records`,
/// stacked along a new first axis: the same values, record for record, in
/// one batch.
///
/// ```
/// use profiling_core::data::{self, dummy::DummySource};
/// use profiling_examples::synthetic::{predictions_for_batch, predictions_for_record};
///
/// profiling_core::random::seed_run(Some(0));
/// let dummy = DummySource { record_count: 3, ..DummySource::default() };
/// let records = data::named("dummy", dummy).read_all().unwrap();
/// let batch = predictions_for_batch(&records).unwrap();
/// assert_eq!(batch.raw.shape(), &[3, 8400, 84]);
/// assert_eq!(batch.raw.index_axis(ndarray::Axis(0), 2), predictions_for_record(&records[2]).unwrap().raw);
/// ```
pub fn predictions_for_batch(records: &[DataRecord]) -> anyhow::Result<SyntheticBatch> {
    let mut raw = Array3::zeros((records.len(), NUM_ANCHORS, BOX_COLUMNS + NUM_CLASSES));
    let mut letterboxes = Vec::with_capacity(records.len());
    for (record, mut slot) in records.iter().zip(raw.axis_iter_mut(Axis(0))) {
        let predictions = predictions_for_record(record)?;
        slot.assign(&predictions.raw);
        letterboxes.push(predictions.letterbox);
    }
    Ok(SyntheticBatch { raw, letterboxes })
}

/// The random stream a record's predictions are drawn from: the run's seed
/// and the record id fix them.
pub fn stream_name(record_id: &str) -> String {
    format!("detection-postprocess/{record_id}")
}

/// The raw output a 640 YOLO head could give on `record`, drawn from
/// [`profiling_core::random::rng`] on the stream [`stream_name`]: the same
/// record and seed always give the same output.
///
/// The letterbox is that of the record's image; a record without an image
/// is taken to be exactly [`INPUT_SIZE`] square.
pub fn predictions_for_record(record: &DataRecord) -> anyhow::Result<SyntheticPredictions> {
    let original = record
        .image
        .as_ref()
        .map_or((INPUT_SIZE, INPUT_SIZE), |image| image.dimensions());
    ensure!(
        original.0 > 0 && original.1 > 0,
        "record `{}` has an empty {}x{} image",
        record.id,
        original.0,
        original.1
    );
    let letterbox = LetterboxInfo::fit(original, INPUT_SIZE);
    let mut rng = profiling_core::random::rng(&stream_name(&record.id));
    let raw = raw_predictions(&mut rng, &letterbox, NUM_ANCHORS, NUM_CLASSES);
    Ok(SyntheticPredictions { raw, letterbox })
}

/// A `[num_anchors, 4 + num_classes]` raw output on the letterboxed input
/// described by `letterbox`.
///
/// Every anchor gets a small random box and scores below 0.2; then 8 to 16
/// objects (a class, a box inside the image area of the input) each claim 3
/// to 6 random anchors, which get a jittered copy of the object's box, a
/// score in `[0.5, 0.95)` for its class and a weaker score for a second one.
///
/// ```
/// use profiling_examples::preprocess::LetterboxInfo;
/// use profiling_examples::synthetic::raw_predictions;
/// use rand::SeedableRng;
///
/// let mut rng = rand::rngs::StdRng::seed_from_u64(0);
/// let raw = raw_predictions(&mut rng, &LetterboxInfo::fit((64, 64), 640), 8400, 80);
/// assert_eq!(raw.shape(), &[8400, 84]);
/// ```
///
/// # Panics
///
/// When `num_anchors` or `num_classes` is zero.
pub fn raw_predictions(
    rng: &mut impl Rng,
    letterbox: &LetterboxInfo,
    num_anchors: usize,
    num_classes: usize,
) -> Array2<f32> {
    assert!(
        num_anchors > 0 && num_classes > 0,
        "need at least one anchor and one class"
    );
    let size = {
        let (width, height) = letterbox.original;
        (
            width as f32 * letterbox.scale,
            height as f32 * letterbox.scale,
        )
    };
    let mut raw = Array2::zeros((num_anchors, BOX_COLUMNS + num_classes));
    for mut row in raw.rows_mut() {
        row[0] = letterbox.pad.0 + rng.gen_range(0.0..size.0);
        row[1] = letterbox.pad.1 + rng.gen_range(0.0..size.1);
        row[2] = rng.gen_range(4.0..48.0);
        row[3] = rng.gen_range(4.0..48.0);
        for score in row.iter_mut().skip(BOX_COLUMNS) {
            // Skewed towards zero, as background scores are.
            *score = BACKGROUND_SCORE * rng.gen::<f32>().powi(4);
        }
    }

    let objects: Vec<(usize, [f32; 4])> = (0..rng.gen_range(8..=16))
        .map(|_| {
            let (width, height) = (
                rng.gen_range(0.05..0.4) * size.0,
                rng.gen_range(0.05..0.4) * size.1,
            );
            let cx = letterbox.pad.0 + width / 2.0 + rng.gen::<f32>() * (size.0 - width);
            let cy = letterbox.pad.1 + height / 2.0 + rng.gen::<f32>() * (size.1 - height);
            (rng.gen_range(0..num_classes), [cx, cy, width, height])
        })
        .collect();
    let claims: Vec<usize> = objects.iter().map(|_| rng.gen_range(3..=6)).collect();
    let total = claims.iter().sum::<usize>().min(num_anchors);
    let mut anchors = index::sample(rng, num_anchors, total).into_iter();
    for ((class_id, [cx, cy, width, height]), claim) in objects.into_iter().zip(claims) {
        for anchor in anchors.by_ref().take(claim) {
            let mut row = raw.row_mut(anchor);
            row[0] = cx + width * rng.gen_range(-0.05..0.05);
            row[1] = cy + height * rng.gen_range(-0.05..0.05);
            row[2] = width * rng.gen_range(0.9..1.1);
            row[3] = height * rng.gen_range(0.9..1.1);
            let score = rng.gen_range(0.5..0.95);
            row[BOX_COLUMNS + class_id] = score;
            let runner_up = (class_id + rng.gen_range(1..num_classes.max(2))) % num_classes;
            if runner_up != class_id {
                row[BOX_COLUMNS + runner_up] = score * rng.gen_range(0.2..0.6);
            }
        }
    }
    raw
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::postprocess::{decode_predictions, postprocess_detections, PostprocessParams};
    use profiling_core::data::dummy::DummySource;
    use profiling_core::data::RecordSource;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    fn raw(seed: u64) -> Array2<f32> {
        let mut rng = StdRng::seed_from_u64(seed);
        raw_predictions(
            &mut rng,
            &LetterboxInfo::fit((64, 48), INPUT_SIZE),
            NUM_ANCHORS,
            NUM_CLASSES,
        )
    }

    #[test]
    fn same_generator_gives_the_same_output() {
        assert_eq!(raw(3), raw(3));
        assert_ne!(raw(3), raw(4));
    }

    #[test]
    fn a_few_dozen_anchors_clear_the_default_threshold() {
        for seed in 0..5 {
            let confident = decode_predictions(raw(seed).view(), 0.25).len();
            assert!(
                (24..=96).contains(&confident),
                "seed {seed}: {confident} confident anchors"
            );
        }
    }

    #[test]
    fn background_scores_stay_low() {
        let raw = raw(0);
        let scores = raw.slice(ndarray::s![.., BOX_COLUMNS..]);
        let low = scores.iter().filter(|&&s| s < 0.05).count();
        assert!(
            3 * low > 2 * scores.len(),
            "{low} of {} scores below 0.05",
            scores.len()
        );
        // Only the claimed anchors (at most 16 x 6, two scores each) clear 0.25.
        let high = scores.iter().filter(|&&s| s >= 0.25).count();
        assert!((8..=192).contains(&high), "{high} scores at or above 0.25");
    }

    #[test]
    fn objects_lie_in_the_image_area_of_the_input() {
        // 64x48 into 640: scale 10, 80 px of padding above and below.
        let letterbox = LetterboxInfo::fit((64, 48), INPUT_SIZE);
        for detection in decode_predictions(raw(1).view(), 0.5) {
            let [x1, y1, x2, y2] = detection.bbox;
            let (cx, cy) = ((x1 + x2) / 2.0, (y1 + y2) / 2.0);
            assert!((0.0..=640.0).contains(&cx), "{detection:?}");
            assert!(
                (letterbox.pad.1..=640.0 - letterbox.pad.1).contains(&cy),
                "{detection:?}"
            );
        }
    }

    #[test]
    fn nms_resolves_the_clusters_to_fewer_detections() {
        let raw = raw(2);
        let letterbox = LetterboxInfo::fit((64, 48), INPUT_SIZE);
        let candidates = decode_predictions(raw.view(), 0.25).len();
        let detections =
            postprocess_detections(raw.view(), &letterbox, &PostprocessParams::default()).len();
        assert!(
            detections >= 8 && detections < candidates,
            "{detections} of {candidates}"
        );
    }

    #[test]
    fn record_predictions_use_the_record_image_size() {
        let record = DummySource::default().read(0).unwrap();
        let predictions = predictions_for_record(&record).unwrap();
        assert_eq!(
            predictions.raw.shape(),
            &[NUM_ANCHORS, BOX_COLUMNS + NUM_CLASSES]
        );
        assert_eq!(
            predictions.letterbox,
            LetterboxInfo::fit((64, 64), INPUT_SIZE)
        );
    }

    #[test]
    fn a_record_without_an_image_is_input_sized() {
        let record = DataRecord {
            id: "no-image".to_owned(),
            ..DataRecord::default()
        };
        let predictions = predictions_for_record(&record).unwrap();
        assert_eq!(predictions.letterbox.scale, 1.0);
        assert_eq!(predictions.letterbox.pad, (0.0, 0.0));
    }

    #[test]
    fn stream_is_named_after_the_record() {
        assert_eq!(stream_name("dummy-3"), "detection-postprocess/dummy-3");
    }
}
