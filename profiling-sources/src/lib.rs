//! The data sources that read files: `images` (with its decoded-image
//! cache), `tensors` (`.npy`, `.npz`, `.safetensors`), `video` (frames by
//! FFmpeg) and `coco` (a COCO dataset). Each registers at link time, as a
//! source of one's own does; the contract they implement (`DataRecord`,
//! `DataSource`, `RecordSource`, the registry, `select`, `dummy`) is
//! `profiling_core::data`.
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
pub mod images;
mod tensor_files;
pub mod tensors;
pub mod video;
