//! Postprocessing of a YOLO-style detector: raw anchor predictions to final
//! boxes on the original image.
//!
//! The raw output has one row per anchor: `cx, cy, w, h` in letterboxed
//! input pixels, then one score per class. [`postprocess_detections`] keeps
//! the confident anchors, suppresses overlapping boxes of the same class and
//! maps the survivors back through the letterbox.

use ndarray::ArrayView2;
use profiling_core::prelude::*;

use crate::preprocess::LetterboxInfo;

/// Number of leading box columns in a raw prediction row.
pub const BOX_COLUMNS: usize = 4;

/// At most this many candidates enter NMS: a degenerate model output (every
/// anchor confident) must not make suppression quadratic in the anchors.
pub const MAX_NMS_CANDIDATES: usize = 30_000;

/// One detected object.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Detection {
    /// `x1, y1, x2, y2`: in letterboxed pixels until [`scale_boxes`], then
    /// in original image pixels.
    pub bbox: [f32; 4],
    /// The score of the best class.
    pub score: f32,
    /// The index of the best class.
    pub class_id: usize,
}

/// The knobs of [`postprocess_detections`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PostprocessParams {
    /// Anchors whose best score is below this are dropped.
    pub conf_threshold: f32,
    /// Boxes of one class overlapping a better one by more than this IoU are
    /// suppressed.
    pub iou_threshold: f32,
    /// At most this many detections are returned.
    pub max_detections: usize,
}

impl Default for PostprocessParams {
    /// The usual YOLO settings: 0.25 confidence, 0.45 IoU, 300 detections.
    fn default() -> Self {
        PostprocessParams {
            conf_threshold: 0.25,
            iou_threshold: 0.45,
            max_detections: 300,
        }
    }
}

/// Turns raw anchor predictions into final detections on the original image:
/// decode, class-aware NMS, then rescaling through the letterbox.
///
/// Returns the detections sorted by score, best first.
///
/// ```
/// use ndarray::array;
/// use profiling_examples::postprocess::{postprocess_detections, PostprocessParams};
/// use profiling_examples::preprocess::LetterboxInfo;
///
/// // Two anchors, two classes: the first is a confident class-1 box.
/// let raw = array![[32.0, 32.0, 16.0, 16.0, 0.1, 0.9], [8.0, 8.0, 4.0, 4.0, 0.2, 0.1]];
/// let letterbox = LetterboxInfo::fit((128, 128), 64);
/// let detections = postprocess_detections(raw.view(), &letterbox, &PostprocessParams::default());
/// assert_eq!(detections.len(), 1);
/// assert_eq!(detections[0].class_id, 1);
/// assert_eq!(detections[0].bbox, [48.0, 48.0, 80.0, 80.0]);
/// ```
#[nvtx_range]
pub fn postprocess_detections(
    raw: ArrayView2<f32>,
    letterbox: &LetterboxInfo,
    params: &PostprocessParams,
) -> Vec<Detection> {
    // Best class per anchor, kept when it clears the confidence threshold.
    let mut detections = decode_predictions(raw, params.conf_threshold);
    // Nothing is confident enough: skip suppression and rescaling.
    if detections.is_empty() {
        return detections;
    }
    // Bound the work NMS can be handed, keeping the best-scored candidates.
    keep_top_candidates(&mut detections, MAX_NMS_CANDIDATES);
    // Per class, drop boxes that overlap a better one; at most max_detections stay.
    let mut detections =
        non_max_suppression(detections, params.iou_threshold, params.max_detections);
    // From letterboxed input pixels back to the original image, clipped to it.
    scale_boxes(&mut detections, letterbox);
    detections
}

/// Keeps, for each anchor row of `raw`, its best class when that score is at
/// least `conf_threshold`, as an `x1, y1, x2, y2` box in input pixels.
///
/// Detections come out in anchor order. Ties between classes go to the lower
/// class index; NaN scores never pass.
///
/// # Panics
///
/// When `raw` has fewer than `BOX_COLUMNS + 1` columns (no class scores).
#[nvtx_range]
pub fn decode_predictions(raw: ArrayView2<f32>, conf_threshold: f32) -> Vec<Detection> {
    assert!(
        raw.ncols() > BOX_COLUMNS,
        "raw predictions need {BOX_COLUMNS} box columns and at least one class score, got {} columns",
        raw.ncols()
    );
    let mut detections = Vec::new();
    for row in raw.rows() {
        let (class_id, score) = row.iter().skip(BOX_COLUMNS).copied().enumerate().fold(
            (0, f32::NEG_INFINITY),
            |best, (class, score)| {
                if score > best.1 {
                    (class, score)
                } else {
                    best
                }
            },
        );
        // The fold never picks a NaN: a row of NaN scores stays at -inf and is dropped.
        if score < conf_threshold {
            continue;
        }
        let (cx, cy, half_w, half_h) = (row[0], row[1], row[2] / 2.0, row[3] / 2.0);
        detections.push(Detection {
            bbox: [cx - half_w, cy - half_h, cx + half_w, cy + half_h],
            score,
            class_id,
        });
    }
    detections
}

/// When there are more than `limit` detections, keeps the `limit` best
/// (ties keep their order), sorted by score; fewer are left as they are.
pub fn keep_top_candidates(detections: &mut Vec<Detection>, limit: usize) {
    if detections.len() > limit {
        sort_by_score(detections);
        detections.truncate(limit);
    }
}

/// Stable sort by descending score.
fn sort_by_score(detections: &mut [Detection]) {
    detections.sort_by(|a, b| b.score.total_cmp(&a.score));
}

/// Class-aware greedy non-maximum suppression.
///
/// Visits the detections by descending score (ties in input order) and keeps
/// one unless a kept detection of the same class overlaps it with an IoU
/// above `iou_threshold`. Stops once `max_detections` are kept. The result is
/// sorted by score, best first.
#[nvtx_range]
pub fn non_max_suppression(
    mut detections: Vec<Detection>,
    iou_threshold: f32,
    max_detections: usize,
) -> Vec<Detection> {
    sort_by_score(&mut detections);
    let mut kept: Vec<Detection> = Vec::with_capacity(max_detections.min(detections.len()));
    for candidate in detections {
        if kept.len() == max_detections {
            break;
        }
        let suppressed = kept.iter().any(|k| {
            k.class_id == candidate.class_id && iou(&k.bbox, &candidate.bbox) > iou_threshold
        });
        if !suppressed {
            kept.push(candidate);
        }
    }
    kept
}

/// Intersection over union of two `x1, y1, x2, y2` boxes; 0 when the union
/// is empty.
///
/// ```
/// use profiling_examples::postprocess::iou;
/// assert_eq!(iou(&[0.0, 0.0, 2.0, 2.0], &[1.0, 0.0, 3.0, 2.0]), 1.0 / 3.0);
/// ```
pub fn iou(a: &[f32; 4], b: &[f32; 4]) -> f32 {
    let area = |r: &[f32; 4]| (r[2] - r[0]).max(0.0) * (r[3] - r[1]).max(0.0);
    let width = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let height = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let intersection = width * height;
    let union = area(a) + area(b) - intersection;
    if union > 0.0 {
        intersection / union
    } else {
        0.0
    }
}

/// Maps boxes from letterboxed input pixels to original image pixels
/// (undoing the padding, then the scale) and clips them to the image.
#[nvtx_range]
pub fn scale_boxes(detections: &mut [Detection], letterbox: &LetterboxInfo) {
    let (pad_x, pad_y) = letterbox.pad;
    let (width, height) = (letterbox.original.0 as f32, letterbox.original.1 as f32);
    for detection in detections {
        let [x1, y1, x2, y2] = detection.bbox;
        detection.bbox = [
            ((x1 - pad_x) / letterbox.scale).clamp(0.0, width),
            ((y1 - pad_y) / letterbox.scale).clamp(0.0, height),
            ((x2 - pad_x) / letterbox.scale).clamp(0.0, width),
            ((y2 - pad_y) / letterbox.scale).clamp(0.0, height),
        ];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array2};

    fn detection(bbox: [f32; 4], score: f32, class_id: usize) -> Detection {
        Detection {
            bbox,
            score,
            class_id,
        }
    }

    #[test]
    fn decode_keeps_best_class_above_threshold() {
        let raw = array![
            [10.0, 20.0, 4.0, 6.0, 0.1, 0.7, 0.3],
            [50.0, 50.0, 10.0, 10.0, 0.2, 0.1, 0.24],
            [30.0, 30.0, 2.0, 2.0, 0.25, 0.0, 0.0],
        ];
        let detections = decode_predictions(raw.view(), 0.25);
        assert_eq!(
            detections,
            vec![
                detection([8.0, 17.0, 12.0, 23.0], 0.7, 1),
                detection([29.0, 29.0, 31.0, 31.0], 0.25, 0),
            ]
        );
    }

    #[test]
    fn decode_breaks_class_ties_towards_the_lower_index_and_skips_nan() {
        let raw = array![
            [0.0, 0.0, 2.0, 2.0, 0.5, 0.5],
            [0.0, 0.0, 2.0, 2.0, f32::NAN, f32::NAN]
        ];
        let detections = decode_predictions(raw.view(), 0.1);
        assert_eq!(detections.len(), 1);
        assert_eq!(detections[0].class_id, 0);
    }

    #[test]
    #[should_panic(expected = "at least one class score")]
    fn decode_refuses_rows_without_scores() {
        decode_predictions(Array2::<f32>::zeros((3, 4)).view(), 0.5);
    }

    #[test]
    fn iou_of_identical_disjoint_and_degenerate_boxes() {
        let a = [0.0, 0.0, 10.0, 10.0];
        assert_eq!(iou(&a, &a), 1.0);
        assert_eq!(iou(&a, &[20.0, 20.0, 30.0, 30.0]), 0.0);
        assert_eq!(iou(&a, &[0.0, 0.0, 5.0, 10.0]), 0.5);
        assert_eq!(iou(&[1.0, 1.0, 1.0, 1.0], &[1.0, 1.0, 1.0, 1.0]), 0.0);
    }

    #[test]
    fn nms_suppresses_overlaps_within_a_class_only() {
        let detections = vec![
            detection([0.0, 0.0, 10.0, 10.0], 0.8, 0),
            detection([1.0, 0.0, 11.0, 10.0], 0.9, 0),
            detection([1.0, 0.0, 11.0, 10.0], 0.7, 1),
            detection([50.0, 50.0, 60.0, 60.0], 0.6, 0),
        ];
        let kept = non_max_suppression(detections, 0.45, 300);
        assert_eq!(
            kept,
            vec![
                detection([1.0, 0.0, 11.0, 10.0], 0.9, 0),
                detection([1.0, 0.0, 11.0, 10.0], 0.7, 1),
                detection([50.0, 50.0, 60.0, 60.0], 0.6, 0),
            ]
        );
    }

    #[test]
    fn nms_keeps_input_order_among_equal_scores() {
        let detections = vec![
            detection([0.0, 0.0, 1.0, 1.0], 0.5, 0),
            detection([5.0, 5.0, 6.0, 6.0], 0.5, 0),
            detection([9.0, 9.0, 10.0, 10.0], 0.5, 0),
        ];
        let kept = non_max_suppression(detections.clone(), 0.45, 300);
        assert_eq!(kept, detections);
    }

    #[test]
    fn nms_stops_at_max_detections() {
        let detections: Vec<_> = (0..10)
            .map(|i| {
                detection(
                    [i as f32 * 20.0, 0.0, i as f32 * 20.0 + 10.0, 10.0],
                    i as f32 / 10.0,
                    0,
                )
            })
            .collect();
        let kept = non_max_suppression(detections, 0.45, 3);
        let scores: Vec<f32> = kept.iter().map(|d| d.score).collect();
        assert_eq!(scores, vec![0.9, 0.8, 0.7]);
    }

    #[test]
    fn nms_threshold_is_exclusive() {
        // IoU exactly 0.5: kept at threshold 0.5, suppressed at 0.49.
        let detections = vec![
            detection([0.0, 0.0, 10.0, 10.0], 0.9, 0),
            detection([0.0, 0.0, 5.0, 10.0], 0.8, 0),
        ];
        assert_eq!(non_max_suppression(detections.clone(), 0.5, 300).len(), 2);
        assert_eq!(non_max_suppression(detections, 0.49, 300).len(), 1);
    }

    #[test]
    fn keep_top_candidates_leaves_few_enough_untouched() {
        let mut detections = vec![detection([0.0; 4], 0.3, 0), detection([0.0; 4], 0.9, 1)];
        keep_top_candidates(&mut detections, 2);
        let classes: Vec<usize> = detections.iter().map(|d| d.class_id).collect();
        assert_eq!(classes, vec![0, 1]);
    }

    #[test]
    fn keep_top_candidates_keeps_the_best_when_too_many() {
        let mut detections = vec![
            detection([0.0; 4], 0.3, 0),
            detection([0.0; 4], 0.9, 1),
            detection([0.0; 4], 0.5, 2),
        ];
        keep_top_candidates(&mut detections, 2);
        let classes: Vec<usize> = detections.iter().map(|d| d.class_id).collect();
        assert_eq!(classes, vec![1, 2]);
    }

    #[test]
    fn scale_boxes_undoes_padding_and_scale_and_clips() {
        // 200x100 into 100: scale 0.5, 25 px of padding on top.
        let letterbox = LetterboxInfo::fit((200, 100), 100);
        let mut detections = vec![
            detection([10.0, 35.0, 20.0, 45.0], 0.9, 0),
            detection([-5.0, 20.0, 105.0, 80.0], 0.8, 0),
        ];
        scale_boxes(&mut detections, &letterbox);
        assert_eq!(detections[0].bbox, [20.0, 20.0, 40.0, 40.0]);
        assert_eq!(detections[1].bbox, [0.0, 0.0, 200.0, 100.0]);
    }

    #[test]
    fn postprocess_returns_nothing_when_nothing_is_confident() {
        let raw = array![[10.0, 10.0, 4.0, 4.0, 0.1, 0.2]];
        let letterbox = LetterboxInfo::fit((64, 64), 64);
        assert!(
            postprocess_detections(raw.view(), &letterbox, &PostprocessParams::default())
                .is_empty()
        );
    }

    #[test]
    fn postprocess_chains_decode_nms_and_scaling() {
        // Input 100x100 letterboxed from 200x100: scale 0.5, pad top 25.
        let raw = array![
            [50.0, 50.0, 20.0, 20.0, 0.9, 0.0],
            [51.0, 50.0, 20.0, 20.0, 0.8, 0.0],
            [51.0, 50.0, 20.0, 20.0, 0.0, 0.7],
            [10.0, 30.0, 4.0, 4.0, 0.3, 0.0],
            [80.0, 60.0, 8.0, 8.0, 0.2, 0.1],
        ];
        let letterbox = LetterboxInfo::fit((200, 100), 100);
        let detections =
            postprocess_detections(raw.view(), &letterbox, &PostprocessParams::default());
        assert_eq!(
            detections,
            vec![
                detection([80.0, 30.0, 120.0, 70.0], 0.9, 0),
                detection([82.0, 30.0, 122.0, 70.0], 0.7, 1),
                detection([16.0, 6.0, 24.0, 14.0], 0.3, 0),
            ]
        );
    }

    #[test]
    fn postprocess_truncates_to_max_detections() {
        let raw = Array2::from_shape_fn((20, 5), |(anchor, column)| match column {
            0 => anchor as f32 * 10.0 + 5.0,
            1 => 5.0,
            2 | 3 => 4.0,
            _ => 0.5 + anchor as f32 / 100.0,
        });
        let letterbox = LetterboxInfo::fit((200, 200), 200);
        let params = PostprocessParams {
            max_detections: 4,
            ..PostprocessParams::default()
        };
        let detections = postprocess_detections(raw.view(), &letterbox, &params);
        let scores: Vec<f32> = detections.iter().map(|d| d.score).collect();
        assert_eq!(
            scores,
            vec![
                0.5 + 19.0 / 100.0,
                0.5 + 18.0 / 100.0,
                0.5 + 17.0 / 100.0,
                0.5 + 16.0 / 100.0
            ]
        );
    }

    #[test]
    fn default_params_are_the_yolo_settings() {
        assert_eq!(
            PostprocessParams::default(),
            PostprocessParams {
                conf_threshold: 0.25,
                iou_threshold: 0.45,
                max_detections: 300,
            }
        );
    }
}
