//! Production-like inference code of a YOLO-style object detector, and the
//! built-in reference targets that profile it.
//!
//! The modules are the stages of a detection pipeline, written as a real
//! one would be, with `#[nvtx_range]` on each stage so a profile shows them
//! as nested NVTX ranges:
//!
//! - [`preprocess`]: letterboxing an RGB image into a square CHW tensor;
//! - [`model`]: a deterministic stand-in for the detector head, so the
//!   pipeline runs without weights;
//! - [`postprocess`]: decoding raw anchor predictions, class-aware NMS and
//!   mapping boxes back to the original image;
//! - [`synthetic`]: realistic raw detector output, to profile postprocessing
//!   on its own.
//!
//! [`targets`] registers `letterbox-preprocess`, `detection-postprocess` and
//! `detection-pipeline` with `profile-cli`, [`work`] registers `cpu-work` (a
//! fixed amount of CPU work, to see what a machine resolves), `memory-work` (a fixed
//! amount of memory traffic, the same for code limited by memory) and `spin-and-sleep`
//! (known time on the CPU and known time waiting, for Nsight's view of both), and with the `tch` feature
//! `tensor_targets` registers `smoke-tensor`, `tiny-cnn` and `torchscript`; the snippets under
//! `inference_profiling/snippets/` copy functions of this crate the way a
//! production function is copied into a profiling snippet.
//!
//! ```
//! use profiling_examples::model::SyntheticDetector;
//! use profiling_examples::postprocess::{postprocess_detections, PostprocessParams};
//! use profiling_examples::preprocess::letterbox;
//!
//! let image = image::RgbImage::from_fn(64, 48, |x, y| image::Rgb([x as u8 * 4, y as u8 * 5, 128]));
//! let input = letterbox(&image, 640);
//! let raw = SyntheticDetector::new(80, 40, 0).forward(&input.tensor);
//! let detections = postprocess_detections(raw.view(), &input.info(), &PostprocessParams::default());
//! assert!(detections.iter().all(|d| d.bbox[2] <= 64.0 && d.bbox[3] <= 48.0));
//! ```

#![warn(missing_docs)]

pub mod model;
#[cfg(feature = "ort")]
pub mod ocr;
pub mod postprocess;
pub mod preprocess;
pub mod synthetic;
pub mod targets;
#[cfg(feature = "tch")]
pub mod tensor_targets;
pub mod work;

// Without the feature, `profile-cli run smoke-tensor` says how to get it.
#[cfg(not(feature = "tch"))]
profiling_core::targets_needing_feature!("tch": "smoke-tensor", "tiny-cnn", "torchscript", "matmul-repeat");
#[cfg(not(feature = "ort"))]
profiling_core::targets_needing_feature!("ort": "ocr-det", "ocr-rec");
