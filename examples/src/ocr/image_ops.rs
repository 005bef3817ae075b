//! The image operations of the OCR pipeline, as OpenCV does them for the
//! production code: bilinear resizing with pixel centres aligned, a
//! perspective crop with bicubic sampling and replicated borders, a quarter
//! turn, and normalisation into the planes a model takes.

use image::RgbImage;

/// Where output coordinate `i` samples a source of `source` pixels, as
/// OpenCV's `INTER_LINEAR` computes it: the pixel centres aligned (in
/// single precision), clamped to the edge pixels, and the two weights in
/// 11-bit fixed point, each rounded on its own.
fn linear_taps(output: usize, source: usize) -> Vec<(usize, i32, i32)> {
    let scale = 1.0 / (output as f64 / source as f64);
    (0..output)
        .map(|i| {
            let position = ((i as f64 + 0.5) * scale - 0.5) as f32;
            let mut left = position.floor();
            let mut weight = position - left;
            if left < 0.0 {
                left = 0.0;
                weight = 0.0;
            }
            let mut left = left as usize;
            if left + 1 >= source {
                left = source - 1;
                weight = 0.0;
            }
            let fixed = |w: f32| (w * 2048.0).round_ties_even() as i32;
            (left, fixed(1.0 - weight), fixed(weight))
        })
        .collect()
}

/// `image` resized to `width` x `height` with bilinear interpolation, as
/// OpenCV's `cv2.resize` does it on 8-bit images: rows interpolated in
/// integers with 11-bit weights, then columns with its vector rounding
/// (the same value as OpenCV for all but a few pixels in a thousand, one
/// level apart).
pub fn resize_bilinear(image: &RgbImage, width: u32, height: u32) -> RgbImage {
    let (source_width, source_height) = (image.width() as usize, image.height() as usize);
    let columns = linear_taps(width as usize, source_width);
    let rows = linear_taps(height as usize, source_height);
    let source = image.as_raw();
    let stride = source_width * 3;
    let line_length = width as usize * 3;
    let mut out = vec![0u8; line_length * height as usize];
    // One source row pair at a time: each interpolated along x once.
    let mut upper = vec![0i32; line_length];
    let mut lower = vec![0i32; line_length];
    let interpolate_row = |row: usize, into: &mut [i32]| {
        let line = &source[row * stride..(row + 1) * stride];
        for (x, &(left, a0, a1)) in columns.iter().enumerate() {
            let right = (left + 1).min(source_width - 1);
            for c in 0..3 {
                into[x * 3 + c] =
                    i32::from(line[left * 3 + c]) * a0 + i32::from(line[right * 3 + c]) * a1;
            }
        }
    };
    let mut loaded = (usize::MAX, usize::MAX);
    for (y, &(top, b0, b1)) in rows.iter().enumerate() {
        let bottom = (top + 1).min(source_height - 1);
        if loaded != (top, bottom) {
            if loaded.1 == top {
                std::mem::swap(&mut upper, &mut lower);
            } else {
                interpolate_row(top, &mut upper);
            }
            interpolate_row(bottom, &mut lower);
            loaded = (top, bottom);
        }
        let line = &mut out[y * line_length..(y + 1) * line_length];
        for ((value, &s0), &s1) in line.iter_mut().zip(&upper).zip(&lower) {
            let v = (((b0 * (s0 >> 4)) >> 16) + ((b1 * (s1 >> 4)) >> 16) + 2) >> 2;
            *value = v.clamp(0, 255) as u8;
        }
    }
    RgbImage::from_raw(width, height, out).expect("the buffer has width * height pixels")
}

/// `image` as three planes, channel-first, each value `(v / 255 - 0.5) /
/// 0.5`, in BGR order (the production code reads images with OpenCV),
/// written into `planes` at column offset 0 of rows `row_width` wide (a
/// padded batch slot: the columns past the image stay as they are).
pub fn normalize_bgr_into(image: &RgbImage, planes: &mut [f32], row_width: usize) {
    let (width, height) = (image.width() as usize, image.height() as usize);
    let plane = row_width * height;
    debug_assert!(planes.len() >= 3 * plane && width <= row_width);
    for (y, line) in image.as_raw().chunks_exact(width * 3).enumerate() {
        for (x, pixel) in line.chunks_exact(3).enumerate() {
            let at = y * row_width + x;
            for (channel, &value) in pixel.iter().rev().enumerate() {
                planes[channel * plane + at] = f32::from(value) * (2.0 / 255.0) - 1.0;
            }
        }
    }
}

/// The perspective transform taking `from` (four points) to `to`, as the
/// 3x3 matrix OpenCV's `getPerspectiveTransform` solves for.
pub fn perspective_transform(from: [[f64; 2]; 4], to: [[f64; 2]; 4]) -> [[f64; 3]; 3] {
    // Eight equations in the eight unknowns (m22 = 1), Gaussian elimination.
    let mut a = [[0f64; 9]; 8];
    for i in 0..4 {
        let ([x, y], [u, v]) = (from[i], to[i]);
        a[i] = [x, y, 1.0, 0.0, 0.0, 0.0, -x * u, -y * u, u];
        a[i + 4] = [0.0, 0.0, 0.0, x, y, 1.0, -x * v, -y * v, v];
    }
    for column in 0..8 {
        let pivot = (column..8)
            .max_by(|&p, &q| a[p][column].abs().total_cmp(&a[q][column].abs()))
            .expect("rows remain");
        a.swap(column, pivot);
        let lead = a[column][column];
        if lead.abs() < 1e-12 {
            continue;
        }
        for value in &mut a[column][column..] {
            *value /= lead;
        }
        let pivot_row = a[column];
        for (row, equation) in a.iter_mut().enumerate() {
            let factor = equation[column];
            if row != column && factor != 0.0 {
                for (value, pivot_value) in equation[column..].iter_mut().zip(&pivot_row[column..])
                {
                    *value -= factor * pivot_value;
                }
            }
        }
    }
    let m: Vec<f64> = (0..8).map(|i| a[i][8]).collect();
    [[m[0], m[1], m[2]], [m[3], m[4], m[5]], [m[6], m[7], 1.0]]
}

/// OpenCV's bicubic kernel (a = -0.75) at the four taps around a
/// fraction, in single precision as OpenCV computes it.
fn cubic_weights(x: f32) -> [f32; 4] {
    const A: f32 = -0.75;
    let w0 = ((A * (x + 1.0) - 5.0 * A) * (x + 1.0) + 8.0 * A) * (x + 1.0) - 4.0 * A;
    let w1 = ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let w2 = ((A + 2.0) * (1.0 - x) - (A + 3.0)) * (1.0 - x) * (1.0 - x) + 1.0;
    [w0, w1, w2, 1.0 - w0 - w1 - w2]
}

/// Sub-pixel positions per pixel: OpenCV samples at 1/32 of a pixel.
const TAB_SIZE: usize = 32;

/// OpenCV's table of 4x4 bicubic weights for every pair of 1/32 fractions
/// (y, x), in 15-bit fixed point, each set adjusted to sum to exactly 1
/// (its `initInterTab2D`).
fn cubic_table() -> &'static [[i32; 16]] {
    static TABLE: std::sync::OnceLock<Vec<[i32; 16]>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let one = 1i32 << 15;
        let taps: Vec<[f32; 4]> = (0..TAB_SIZE)
            .map(|i| cubic_weights(i as f32 / TAB_SIZE as f32))
            .collect();
        let mut table = Vec::with_capacity(TAB_SIZE * TAB_SIZE);
        for wy in &taps {
            for wx in &taps {
                let mut weights = [0i32; 16];
                let mut sum = 0;
                for (k1, vy) in wy.iter().enumerate() {
                    for (k2, vx) in wx.iter().enumerate() {
                        let w = (vy * vx * one as f32).round_ties_even() as i32;
                        weights[k1 * 4 + k2] = w;
                        sum += w;
                    }
                }
                if sum != one {
                    // The smallest (or largest) of the four centre weights takes the difference.
                    let diff = sum - one;
                    let (mut low, mut high) = (5, 5);
                    for k1 in 1..3 {
                        for k2 in 1..3 {
                            let k = k1 * 4 + k2;
                            if weights[k] < weights[low] {
                                low = k;
                            } else if weights[k] > weights[high] {
                                high = k;
                            }
                        }
                    }
                    if diff < 0 {
                        weights[high] -= diff;
                    } else {
                        weights[low] -= diff;
                    }
                }
                table.push(weights);
            }
        }
        table
    })
}

/// `v` rounded to the nearest integer, halves to even (`lrint`): by adding
/// and taking away 1.5 * 2^52, where a double has no fraction left, so the
/// processor's own rounding does it; `round_ties_even` is a library call
/// on processors without SSE 4.1's `roundsd`, which the default target
/// does not assume. Positions past 2^51 (no image has them) saturate.
#[inline(always)]
fn round_even(v: f64) -> i64 {
    const SHIFT: f64 = 6_755_399_441_055_744.0;
    if v.abs() < 2_251_799_813_685_248.0 {
        ((v + SHIFT) - SHIFT) as i64
    } else {
        v as i64
    }
}

/// The `width` x `height` image whose corners are the quadrilateral `box_`
/// of `image` (top-left, top-right, bottom-right, bottom-left): OpenCV's
/// `warpPerspective` with `INTER_CUBIC` and `BORDER_REPLICATE`, in its
/// fixed point (positions to 1/32 of a pixel, 15-bit weights).
pub fn warp_crop(image: &RgbImage, box_: [[f32; 2]; 4], width: u32, height: u32) -> RgbImage {
    let (w, h) = (f64::from(width), f64::from(height));
    let corners = box_.map(|[x, y]| [f64::from(x), f64::from(y)]);
    // From the crop's pixels back to the image's.
    let m = perspective_transform([[0.0, 0.0], [w, 0.0], [w, h], [0.0, h]], corners);
    let table = cubic_table();
    let (source_width, source_height) = (image.width() as i64, image.height() as i64);
    let source = image.as_raw();
    let stride = source_width as usize * 3;
    let mut out = vec![0u8; width as usize * height as usize * 3];
    let tab = TAB_SIZE as f64;
    for y in 0..height as usize {
        let fy = y as f64;
        // Each row's terms once, then one product per pixel, as OpenCV's.
        let (row_x, row_y, row_w) = (
            m[0][1] * fy + m[0][2],
            m[1][1] * fy + m[1][2],
            m[2][1] * fy + m[2][2],
        );
        for x in 0..width as usize {
            let fx = x as f64;
            let d = row_w + m[2][0] * fx;
            let d = if d != 0.0 { tab / d } else { 0.0 };
            let sx = round_even((row_x + m[0][0] * fx) * d);
            let sy = round_even((row_y + m[1][0] * fx) * d);
            let weights = &table[((sy & 31) * 32 + (sx & 31)) as usize];
            let (x0, y0) = ((sx >> 5) - 1, (sy >> 5) - 1);
            let mut sums = [0i32; 3];
            if x0 >= 0 && y0 >= 0 && x0 + 3 < source_width && y0 + 3 < source_height {
                let base = y0 as usize * stride + x0 as usize * 3;
                for (k1, row_weights) in weights.chunks_exact(4).enumerate() {
                    let start = base + k1 * stride;
                    let row: &[u8; 12] = source[start..start + 12].try_into().expect("four pixels");
                    for (k2, &weight) in row_weights.iter().enumerate() {
                        sums[0] += weight * i32::from(row[k2 * 3]);
                        sums[1] += weight * i32::from(row[k2 * 3 + 1]);
                        sums[2] += weight * i32::from(row[k2 * 3 + 2]);
                    }
                }
            } else {
                for k1 in 0..4 {
                    let row = (y0 + k1 as i64).clamp(0, source_height - 1) as usize;
                    for k2 in 0..4 {
                        let column = (x0 + k2 as i64).clamp(0, source_width - 1) as usize;
                        let at = row * stride + column * 3;
                        let weight = weights[k1 * 4 + k2];
                        for (c, sum) in sums.iter_mut().enumerate() {
                            *sum += weight * i32::from(source[at + c]);
                        }
                    }
                }
            }
            let at = (y * width as usize + x) * 3;
            for c in 0..3 {
                out[at + c] = ((sums[c] + (1 << 14)) >> 15).clamp(0, 255) as u8;
            }
        }
    }
    RgbImage::from_raw(width, height, out).expect("the buffer has width * height pixels")
}

/// `image` turned a quarter counter-clockwise (NumPy's `rot90`).
pub fn rotate_counter_clockwise(image: &RgbImage) -> RgbImage {
    let (width, height) = image.dimensions();
    RgbImage::from_fn(height, width, |x, y| *image.get_pixel(width - 1 - y, x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resizing_to_the_same_size_keeps_every_pixel() {
        let image = RgbImage::from_fn(7, 5, |x, y| image::Rgb([x as u8 * 30, y as u8 * 40, 9]));
        assert_eq!(resize_bilinear(&image, 7, 5), image);
    }

    #[test]
    fn doubling_interpolates_between_pixel_centres() {
        // Two pixels 0 and 100 wide: OpenCV gives 0, 25, 75, 100.
        let image = RgbImage::from_fn(2, 1, |x, _| image::Rgb([x as u8 * 100; 3]));
        let wide = resize_bilinear(&image, 4, 1);
        let values: Vec<u8> = wide.pixels().map(|p| p[0]).collect();
        assert_eq!(values, [0, 25, 75, 100]);
    }

    #[test]
    fn normalising_writes_bgr_planes_in_minus_one_to_one() {
        let image = RgbImage::from_fn(2, 1, |x, _| {
            image::Rgb([255, 0, if x == 0 { 51 } else { 204 }])
        });
        let mut planes = vec![9.0; 3 * 3];
        normalize_bgr_into(&image, &mut planes, 3);
        // Blue first: 51 -> -0.6, 204 -> 0.6; the padded column untouched.
        let close = |a: f32, b: f32| (a - b).abs() < 1e-6;
        assert!(close(planes[0], -0.6) && close(planes[1], 0.6) && planes[2] == 9.0);
        assert!(close(planes[3], -1.0) && close(planes[6], 1.0));
    }

    #[test]
    fn an_axis_aligned_crop_is_the_pixels_it_covers() {
        let image = RgbImage::from_fn(20, 10, |x, y| image::Rgb([x as u8 * 10, y as u8 * 20, 7]));
        let crop = warp_crop(
            &image,
            [[4.0, 2.0], [12.0, 2.0], [12.0, 7.0], [4.0, 7.0]],
            8,
            5,
        );
        assert_eq!(crop.dimensions(), (8, 5));
        for (x, y, pixel) in crop.enumerate_pixels() {
            assert_eq!(pixel, image.get_pixel(x + 4, y + 2), "({x}, {y})");
        }
    }

    #[test]
    fn rounding_a_position_takes_halves_to_even() {
        for v in [
            0.5, 1.5, 2.5, -0.5, -1.5, 2.4999, 2.5001, 123456.5, -7.25, 0.0,
        ] {
            assert_eq!(round_even(v), v.round_ties_even() as i64, "{v}");
        }
    }

    #[test]
    fn every_set_of_cubic_weights_sums_to_one_in_fixed_point() {
        let table = cubic_table();
        assert_eq!(table.len(), 32 * 32);
        assert!(table.iter().all(|w| w.iter().sum::<i32>() == 1 << 15));
        // At a whole pixel the sample is the pixel.
        assert_eq!(table[0][5], 1 << 15);
    }

    #[test]
    fn the_transform_maps_each_corner() {
        let from = [[1.0, 2.0], [30.0, 4.0], [28.0, 20.0], [0.0, 18.0]];
        let to = [[0.0, 0.0], [29.0, 0.0], [29.0, 16.0], [0.0, 16.0]];
        let m = perspective_transform(from, to);
        for (p, q) in from.iter().zip(&to) {
            let d = m[2][0] * p[0] + m[2][1] * p[1] + m[2][2];
            let u = (m[0][0] * p[0] + m[0][1] * p[1] + m[0][2]) / d;
            let v = (m[1][0] * p[0] + m[1][1] * p[1] + m[1][2]) / d;
            assert!((u - q[0]).abs() < 1e-9 && (v - q[1]).abs() < 1e-9, "{p:?}");
        }
    }

    #[test]
    fn a_quarter_turn_moves_the_top_right_to_the_top_left() {
        let image = RgbImage::from_fn(3, 2, |x, y| image::Rgb([(y * 3 + x) as u8; 3]));
        let turned = rotate_counter_clockwise(&image);
        assert_eq!(turned.dimensions(), (2, 3));
        let rows: Vec<Vec<u8>> = (0..3)
            .map(|y| (0..2).map(|x| turned.get_pixel(x, y)[0]).collect())
            .collect();
        assert_eq!(rows, [vec![2, 5], vec![1, 4], vec![0, 3]]);
    }
}
