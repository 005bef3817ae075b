//! A deterministic stand-in for a detector head, so the whole pipeline runs
//! without model weights.
//!
//! [`SyntheticDetector`] splits the input into a `grid` x `grid` raster of
//! cells, pools a few features per cell (mean colour, contrast, position),
//! mixes them with fixed pseudo-random weights and decodes the result the
//! way a YOLO head does: one anchor per cell, `cx, cy, w, h` in input pixels
//! followed by one sigmoid score per class. The arithmetic is cheap but real:
//! the output depends on every input value.

use ndarray::{Array1, Array2, Array3, Axis};
use profiling_core::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::postprocess::BOX_COLUMNS;

/// Features pooled per cell: mean red, green and blue, luminance contrast
/// (standard deviation), and the cell centre's x and y in `[0, 1]`.
pub const FEATURES: usize = 6;

/// Starting logit of every class score: with it a cell needs strong
/// features to score high, as with a trained head, where most anchors are
/// background.
const CLASS_BIAS: f32 = -4.0;

/// Index of the contrast feature: class scores grow with it (edges are
/// where objects are), with a weight drawn from `[0, CONTRAST_GAIN)`.
const CONTRAST: usize = 3;
const CONTRAST_GAIN: f32 = 8.0;

/// A fixed, seeded detector head; see the module docs.
///
/// ```
/// use ndarray::Array3;
/// use profiling_examples::model::SyntheticDetector;
///
/// let detector = SyntheticDetector::new(80, 20, 0);
/// let raw = detector.forward(&Array3::from_elem((3, 640, 640), 0.5));
/// assert_eq!(raw.shape(), &[400, 84]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticDetector {
    num_classes: usize,
    grid: usize,
    /// `[FEATURES, 4 + num_classes]`.
    weights: Array2<f32>,
    /// `[4 + num_classes]`.
    bias: Array1<f32>,
}

impl SyntheticDetector {
    /// A head with `num_classes` classes and one anchor per cell of a
    /// `grid` x `grid` raster; `seed` fixes its weights.
    ///
    /// # Panics
    ///
    /// When `num_classes` or `grid` is zero.
    pub fn new(num_classes: usize, grid: usize, seed: u64) -> SyntheticDetector {
        assert!(num_classes > 0, "a detector needs at least one class");
        assert!(grid > 0, "a detector needs at least one grid cell");
        let mut rng = StdRng::seed_from_u64(seed);
        let outputs = BOX_COLUMNS + num_classes;
        let weights = Array2::from_shape_fn((FEATURES, outputs), |(feature, output)| {
            if output >= BOX_COLUMNS && feature == CONTRAST {
                rng.gen_range(0.0..CONTRAST_GAIN)
            } else {
                rng.gen_range(-1.0..1.0)
            }
        });
        let bias = Array1::from_shape_fn(outputs, |output| {
            if output < BOX_COLUMNS {
                0.0
            } else {
                CLASS_BIAS + rng.gen_range(-0.5..0.5)
            }
        });
        SyntheticDetector {
            num_classes,
            grid,
            weights,
            bias,
        }
    }

    /// The number of classes scored per anchor.
    pub fn num_classes(&self) -> usize {
        self.num_classes
    }

    /// Cells per side of the anchor raster.
    pub fn grid(&self) -> usize {
        self.grid
    }

    /// Rows of the output: one anchor per cell.
    pub fn num_anchors(&self) -> usize {
        self.grid * self.grid
    }

    /// The raw output for a `[3, height, width]` input: `[grid * grid,
    /// 4 + num_classes]`, anchors in row-major cell order, boxes as
    /// `cx, cy, w, h` in input pixels, scores in `(0, 1)`.
    ///
    /// # Panics
    ///
    /// When the input does not have 3 channels or is smaller than the grid.
    #[nvtx_range]
    pub fn forward(&self, input: &Array3<f32>) -> Array2<f32> {
        let (channels, height, width) = input.dim();
        assert_eq!(channels, 3, "the detector takes a [3, height, width] input");
        assert!(
            height >= self.grid && width >= self.grid,
            "a {height}x{width} input is smaller than the {0}x{0} grid",
            self.grid
        );
        let features = pooled_features(input, self.grid);
        let logits = features.dot(&self.weights) + &self.bias;
        decode_head(logits, self.grid, (height as f32, width as f32))
    }
}

/// `[grid * grid, FEATURES]`: per cell, the mean of each channel, the
/// standard deviation of the luminance, and the cell centre.
fn pooled_features(input: &Array3<f32>, grid: usize) -> Array2<f32> {
    let (_, height, width) = input.dim();
    let input = input.as_standard_layout();
    let plane = height * width;
    let values = input.as_slice().expect("standard layout is contiguous");
    let (red, green, blue) = (
        &values[..plane],
        &values[plane..2 * plane],
        &values[2 * plane..],
    );
    // Which cell column each pixel column falls in, computed once per call
    // rather than once per pixel.
    let cell_of_column: Vec<usize> = (0..width).map(|x| x * grid / width).collect();
    // Per cell: sums of r, g, b, luminance, luminance squared, and the count.
    let mut sums = vec![[0.0f32; 6]; grid * grid];
    for y in 0..height {
        let row_cells = &mut sums[(y * grid / height) * grid..][..grid];
        let row = y * width..(y + 1) * width;
        for (((&r, &g), &b), &cell) in red[row.clone()]
            .iter()
            .zip(&green[row.clone()])
            .zip(&blue[row])
            .zip(&cell_of_column)
        {
            let luminance = 0.299 * r + 0.587 * g + 0.114 * b;
            let sum = &mut row_cells[cell];
            sum[0] += r;
            sum[1] += g;
            sum[2] += b;
            sum[3] += luminance;
            sum[4] += luminance * luminance;
            sum[5] += 1.0;
        }
    }
    let mut features = Array2::zeros((grid * grid, FEATURES));
    for (cell, (sum, mut feature)) in sums.iter().zip(features.axis_iter_mut(Axis(0))).enumerate() {
        let count = sum[5];
        let mean_luminance = sum[3] / count;
        let variance = (sum[4] / count - mean_luminance * mean_luminance).max(0.0);
        let (row, column) = (cell / grid, cell % grid);
        feature[0] = sum[0] / count;
        feature[1] = sum[1] / count;
        feature[2] = sum[2] / count;
        feature[3] = variance.sqrt();
        feature[4] = (column as f32 + 0.5) / grid as f32;
        feature[5] = (row as f32 + 0.5) / grid as f32;
    }
    features
}

/// YOLOv5-style decoding of the head's logits, in place: the centre moves
/// within its cell, the size spans up to eight cells, scores are sigmoids.
fn decode_head(mut logits: Array2<f32>, grid: usize, (height, width): (f32, f32)) -> Array2<f32> {
    let (cell_height, cell_width) = (height / grid as f32, width / grid as f32);
    for (cell, mut row) in logits.axis_iter_mut(Axis(0)).enumerate() {
        let (cell_row, cell_column) = ((cell / grid) as f32, (cell % grid) as f32);
        let [tx, ty, tw, th] = [row[0], row[1], row[2], row[3]];
        row[0] = (cell_column + sigmoid(tx)) * cell_width;
        row[1] = (cell_row + sigmoid(ty)) * cell_height;
        row[2] = 2.0 * cell_width * (2.0 * sigmoid(tw)).powi(2);
        row[3] = 2.0 * cell_height * (2.0 * sigmoid(th)).powi(2);
        for score in row.iter_mut().skip(BOX_COLUMNS) {
            *score = sigmoid(*score);
        }
    }
    logits
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gradient(height: usize, width: usize) -> Array3<f32> {
        Array3::from_shape_fn((3, height, width), |(c, y, x)| {
            ((x + 2 * y + 50 * c) % 97) as f32 / 96.0
        })
    }

    #[test]
    fn output_has_one_row_per_cell_and_a_score_per_class() {
        let raw = SyntheticDetector::new(7, 5, 1).forward(&gradient(40, 60));
        assert_eq!(raw.shape(), &[25, 11]);
    }

    #[test]
    fn same_input_and_seed_give_the_same_output() {
        let input = gradient(64, 64);
        let a = SyntheticDetector::new(80, 8, 42).forward(&input);
        let b = SyntheticDetector::new(80, 8, 42).forward(&input);
        assert_eq!(a, b);
    }

    #[test]
    fn the_seed_changes_the_weights() {
        let input = gradient(64, 64);
        let a = SyntheticDetector::new(80, 8, 1).forward(&input);
        let b = SyntheticDetector::new(80, 8, 2).forward(&input);
        assert_ne!(a, b);
    }

    #[test]
    fn the_input_changes_the_output() {
        let detector = SyntheticDetector::new(80, 8, 0);
        let a = detector.forward(&gradient(64, 64));
        let b = detector.forward(&Array3::from_elem((3, 64, 64), 0.5));
        assert_ne!(a, b);
    }

    #[test]
    fn centres_lie_in_their_cells_and_scores_are_probabilities() {
        let raw = SyntheticDetector::new(3, 4, 9).forward(&gradient(32, 48));
        for (cell, row) in raw.rows().into_iter().enumerate() {
            let (cell_row, cell_column) = ((cell / 4) as f32, (cell % 4) as f32);
            assert!(
                (cell_column * 12.0..=(cell_column + 1.0) * 12.0).contains(&row[0]),
                "cell {cell}: cx {}",
                row[0]
            );
            assert!(
                (cell_row * 8.0..=(cell_row + 1.0) * 8.0).contains(&row[1]),
                "cell {cell}: cy {}",
                row[1]
            );
            assert!(row[2] > 0.0 && row[3] > 0.0);
            assert!(row
                .iter()
                .skip(BOX_COLUMNS)
                .all(|s| (0.0..=1.0).contains(s)));
        }
    }

    #[test]
    fn pooled_features_are_cell_means_and_contrast() {
        // Left half black, right half white: two cells per side.
        let input = Array3::from_shape_fn((3, 4, 4), |(_, _, x)| if x < 2 { 0.0 } else { 1.0 });
        let features = pooled_features(&input, 2);
        assert_eq!(
            features.row(0).to_vec(),
            vec![0.0, 0.0, 0.0, 0.0, 0.25, 0.25]
        );
        let right = features.row(1);
        assert_eq!(&right.to_vec()[..3], &[1.0, 1.0, 1.0]);
        assert!(
            right[3].abs() < 1e-3,
            "uniform cell has no contrast: {}",
            right[3]
        );
        assert_eq!((right[4], right[5]), (0.75, 0.25));
        // A cell spanning the edge has contrast 0.5 (std of equal 0s and 1s).
        let features = pooled_features(&input, 1);
        assert!(
            (features[[0, 3]] - 0.5).abs() < 1e-3,
            "{}",
            features[[0, 3]]
        );
    }

    #[test]
    #[should_panic(expected = "[3, height, width]")]
    fn forward_refuses_a_non_rgb_input() {
        SyntheticDetector::new(2, 2, 0).forward(&Array3::zeros((1, 8, 8)));
    }
}
