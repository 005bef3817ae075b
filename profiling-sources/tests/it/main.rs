//! The integration tests of profiling-sources, in one process: what each
//! source reads, decodes and refuses, and the image cache.

#[path = "../../../profiling-core/tests/common/mod.rs"]
mod common;

mod coco;
mod image_cache;
mod images;
mod recorded_tensors;
mod robustness_images;
mod robustness_sources;
mod robustness_tensors;
mod video;
