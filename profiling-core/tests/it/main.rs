//! The integration tests of profiling-core that share one process: what
//! parses, decodes and reads, and opens no capture. Tests that count every
//! allocation of the process, install a global allocator or open captures
//! have binaries of their own (the other files of `tests/`).

#[path = "../common/mod.rs"]
mod common;

mod clock;
mod coco;
mod config;
mod config_reference;
mod image_cache;
mod images;
mod recorded_tensors;
mod robustness_config;
mod robustness_images;
mod robustness_memory;
mod robustness_sources;
mod robustness_tensors;
mod video;
