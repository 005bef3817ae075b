//! Letterboxing: the preprocessing of a YOLO-style detector.
//!
//! An RGB image is resized to fit a square input while keeping its aspect
//! ratio, centred on a grey canvas, and turned into a CHW `f32` tensor in
//! `[0, 1]`. [`LetterboxInfo`] records the resize and the padding so that
//! boxes found on the square input can be mapped back to the original image.

use image::imageops::{self, FilterType};
use image::{Rgb, RgbImage};
use ndarray::Array3;
use profiling_core::prelude::*;

/// The grey the letterbox canvas is filled with (the value YOLO models are
/// trained with).
pub const PAD_VALUE: u8 = 114;

/// How an image was fitted into a square input: enough to map coordinates
/// on the input back to the original image.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LetterboxInfo {
    /// Input pixels per original pixel.
    pub scale: f32,
    /// Padding added on the left and at the top, in input pixels.
    pub pad: (f32, f32),
    /// Width and height of the original image.
    pub original: (u32, u32),
}

impl LetterboxInfo {
    /// How [`letterbox`] fits an image of `original` (width, height) into a
    /// `size` x `size` square.
    ///
    /// ```
    /// use profiling_examples::preprocess::LetterboxInfo;
    ///
    /// let info = LetterboxInfo::fit((1280, 720), 640);
    /// assert_eq!(info.scale, 0.5);
    /// assert_eq!(info.pad, (0.0, 140.0));
    /// ```
    ///
    /// # Panics
    ///
    /// When `size` or a side of `original` is zero.
    pub fn fit(original: (u32, u32), size: u32) -> LetterboxInfo {
        fit(original, size).0
    }
}

/// The scale, the padding and the size of the resized image, computed once
/// so that [`letterbox`] and [`LetterboxInfo::fit`] always agree.
fn fit(original: (u32, u32), size: u32) -> (LetterboxInfo, (u32, u32)) {
    let (width, height) = original;
    assert!(size > 0, "letterbox size must be at least 1 pixel");
    assert!(
        width > 0 && height > 0,
        "cannot letterbox an empty image ({width}x{height})"
    );
    let scale = (size as f32 / width as f32).min(size as f32 / height as f32);
    // Rounding can overshoot by one pixel on the long side; clamp so the
    // resized image always fits the canvas.
    let resized_width = ((width as f32 * scale).round() as u32).clamp(1, size);
    let resized_height = ((height as f32 * scale).round() as u32).clamp(1, size);
    let left = (size - resized_width) / 2;
    let top = (size - resized_height) / 2;
    let info = LetterboxInfo {
        scale,
        pad: (left as f32, top as f32),
        original,
    };
    (info, (resized_width, resized_height))
}

/// A letterboxed image: the model input and how it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct Letterboxed {
    /// `[3, size, size]`, channels R, G, B, values in `[0, 1]`.
    pub tensor: Array3<f32>,
    /// Input pixels per original pixel.
    pub scale: f32,
    /// Padding added on the left and at the top, in input pixels.
    pub pad: (f32, f32),
    /// Width and height of the original image.
    pub original: (u32, u32),
}

impl Letterboxed {
    /// What postprocessing needs to map boxes back to the original image.
    pub fn info(&self) -> LetterboxInfo {
        LetterboxInfo {
            scale: self.scale,
            pad: self.pad,
            original: self.original,
        }
    }
}

/// Resizes `image` to fit a `size` x `size` square keeping its aspect
/// ratio, pads it with [`PAD_VALUE`] grey, and normalises it to a CHW
/// tensor in `[0, 1]`.
///
/// ```
/// use profiling_examples::preprocess::letterbox;
///
/// let image = image::RgbImage::new(64, 32);
/// let letterboxed = letterbox(&image, 128);
/// assert_eq!(letterboxed.tensor.shape(), &[3, 128, 128]);
/// assert_eq!(letterboxed.scale, 2.0);
/// assert_eq!(letterboxed.pad, (0.0, 32.0));
/// ```
///
/// # Panics
///
/// When `size` is zero or the image is empty.
#[nvtx_range]
pub fn letterbox(image: &RgbImage, size: u32) -> Letterboxed {
    let (info, (resized_width, resized_height)) = fit(image.dimensions(), size);
    let resized = resize(image, resized_width, resized_height);
    let canvas = pad(&resized, size, (info.pad.0 as u32, info.pad.1 as u32));
    Letterboxed {
        tensor: to_chw_tensor(&canvas),
        scale: info.scale,
        pad: info.pad,
        original: info.original,
    }
}

/// Resizes `image` to `width` x `height` with a triangle (bilinear) filter.
#[nvtx_range]
pub fn resize(image: &RgbImage, width: u32, height: u32) -> RgbImage {
    imageops::resize(image, width, height, FilterType::Triangle)
}

/// Places `image` on a `size` x `size` canvas of [`PAD_VALUE`] grey with its
/// top-left corner at `offset` (left, top).
///
/// # Panics
///
/// When the image does not fit the canvas at that offset.
#[nvtx_range]
pub fn pad(image: &RgbImage, size: u32, offset: (u32, u32)) -> RgbImage {
    let (width, height) = image.dimensions();
    let (left, top) = offset;
    assert!(
        left + width <= size && top + height <= size,
        "a {width}x{height} image at ({left}, {top}) does not fit a {size}x{size} canvas"
    );
    let mut canvas = RgbImage::from_pixel(size, size, Rgb([PAD_VALUE; 3]));
    // Whole rows at a time: the image and the canvas are both packed RGB.
    let row_bytes = width as usize * 3;
    let canvas_row_bytes = size as usize * 3;
    let source = image.as_raw();
    let target: &mut [u8] = &mut canvas;
    for y in 0..height as usize {
        let start = (top as usize + y) * canvas_row_bytes + left as usize * 3;
        target[start..start + row_bytes]
            .copy_from_slice(&source[y * row_bytes..(y + 1) * row_bytes]);
    }
    canvas
}

/// Turns an RGB image (HWC, `u8`) into a `[3, height, width]` tensor with
/// values divided by 255.
#[nvtx_range]
pub fn to_chw_tensor(image: &RgbImage) -> Array3<f32> {
    let (width, height) = image.dimensions();
    let plane = width as usize * height as usize;
    let mut values = vec![0.0f32; 3 * plane];
    let (red, rest) = values.split_at_mut(plane);
    let (green, blue) = rest.split_at_mut(plane);
    for (i, pixel) in image.as_raw().chunks_exact(3).enumerate() {
        red[i] = f32::from(pixel[0]) / 255.0;
        green[i] = f32::from(pixel[1]) / 255.0;
        blue[i] = f32::from(pixel[2]) / 255.0;
    }
    Array3::from_shape_vec((3, height as usize, width as usize), values)
        .expect("three planes of height x width values")
}

#[cfg(test)]
mod tests {
    use super::*;

    const GREY: f32 = PAD_VALUE as f32 / 255.0;

    fn solid(width: u32, height: u32, rgb: [u8; 3]) -> RgbImage {
        RgbImage::from_pixel(width, height, Rgb(rgb))
    }

    #[test]
    fn wide_image_is_padded_top_and_bottom() {
        let info = LetterboxInfo::fit((200, 100), 100);
        assert_eq!(info.scale, 0.5);
        assert_eq!(info.pad, (0.0, 25.0));
        assert_eq!(info.original, (200, 100));
    }

    #[test]
    fn tall_image_is_padded_left_and_right() {
        let info = LetterboxInfo::fit((30, 60), 120);
        assert_eq!(info.scale, 2.0);
        assert_eq!(info.pad, (30.0, 0.0));
    }

    #[test]
    fn odd_padding_puts_the_extra_pixel_after_the_image() {
        // 10x7 into 10: resized 10x7, 3 rows of padding, 1 on top.
        let letterboxed = letterbox(&solid(10, 7, [255, 0, 0]), 10);
        assert_eq!(letterboxed.pad, (0.0, 1.0));
        let red = letterboxed
            .tensor
            .index_axis(ndarray::Axis(0), 0)
            .to_owned();
        assert_eq!(red[[0, 5]], GREY);
        assert_eq!(red[[1, 5]], 1.0);
        assert_eq!(red[[7, 5]], 1.0);
        assert_eq!(red[[8, 5]], GREY);
        assert_eq!(red[[9, 5]], GREY);
    }

    #[test]
    fn square_image_fills_the_canvas() {
        let letterboxed = letterbox(&solid(64, 64, [0, 128, 255]), 64);
        assert_eq!(letterboxed.scale, 1.0);
        assert_eq!(letterboxed.pad, (0.0, 0.0));
        let expected = [0.0, 128.0 / 255.0, 1.0];
        for (channel, value) in expected.into_iter().enumerate() {
            let plane = letterboxed.tensor.index_axis(ndarray::Axis(0), channel);
            assert!(plane.iter().all(|&v| v == value), "channel {channel}");
        }
    }

    #[test]
    fn tensor_is_chw_in_unit_range() {
        let image = RgbImage::from_fn(48, 32, |x, y| Rgb([x as u8 * 5, y as u8 * 7, 200]));
        let letterboxed = letterbox(&image, 96);
        assert_eq!(letterboxed.tensor.shape(), &[3, 96, 96]);
        assert!(letterboxed.tensor.iter().all(|v| (0.0..=1.0).contains(v)));
        // Rows above and below the resized image are pad grey in every channel.
        assert_eq!(letterboxed.pad, (0.0, 16.0));
        for channel in 0..3 {
            assert_eq!(letterboxed.tensor[[channel, 0, 40]], GREY);
            assert_eq!(letterboxed.tensor[[channel, 95, 40]], GREY);
        }
        assert_eq!(letterboxed.tensor[[2, 50, 40]], 200.0 / 255.0);
    }

    #[test]
    fn info_matches_the_letterbox() {
        let letterboxed = letterbox(&solid(50, 20, [1, 2, 3]), 64);
        assert_eq!(letterboxed.info(), LetterboxInfo::fit((50, 20), 64));
        assert_eq!(letterboxed.original, (50, 20));
    }

    #[test]
    fn to_chw_tensor_splits_channels() {
        let image = RgbImage::from_fn(2, 1, |x, _| {
            if x == 0 {
                Rgb([255, 0, 51])
            } else {
                Rgb([0, 255, 102])
            }
        });
        let tensor = to_chw_tensor(&image);
        assert_eq!(tensor.shape(), &[3, 1, 2]);
        assert_eq!(
            tensor.iter().copied().collect::<Vec<_>>(),
            vec![1.0, 0.0, 0.0, 1.0, 0.2, 0.4]
        );
    }

    #[test]
    fn pad_places_the_image_at_the_offset() {
        let canvas = pad(&solid(2, 1, [9, 9, 9]), 4, (1, 2));
        assert_eq!(canvas.get_pixel(1, 2), &Rgb([9, 9, 9]));
        assert_eq!(canvas.get_pixel(2, 2), &Rgb([9, 9, 9]));
        assert_eq!(canvas.get_pixel(3, 2), &Rgb([PAD_VALUE; 3]));
        assert_eq!(canvas.get_pixel(1, 1), &Rgb([PAD_VALUE; 3]));
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn pad_refuses_an_image_that_overflows() {
        pad(&solid(3, 3, [0, 0, 0]), 4, (2, 0));
    }

    #[test]
    #[should_panic(expected = "empty image")]
    fn letterbox_refuses_an_empty_image() {
        letterbox(&RgbImage::new(0, 10), 64);
    }
}
