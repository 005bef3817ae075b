//! The data sources that read files: `images` (with its decoded-image
//! cache), `tensors` (`.npy`, `.npz`, `.safetensors`), `video` (frames by
//! FFmpeg) and `coco` (a COCO dataset). Each implements
//! `profiling_core::data::RecordSource` and registers at link time, as a
//! source of one's own does; `images` and `tensors` take their file lists
//! (`directory`, `pattern`, `paths`) from one module, `files`.
//!
//! A binary that runs configs naming these sources links this crate:
//!
//! ```
//! use profiling_sources as _;
//!
//! assert!(profiling_core::data::source_names().contains(&"images"));
//! ```
//!
//! A snippet that reads no files leaves it out, and builds without the
//! image decoders and the readers of tensor files.

pub mod cache;
pub mod coco;
mod files;
pub mod images;
mod tensor_files;
pub mod tensors;
pub mod video;
