//! The integration tests of profiling-core that share one process: what
//! parses and reads, and opens no capture (the sources that read files are
//! tested in profiling-sources). Tests that count every
//! allocation of the process, install a global allocator or open captures
//! have binaries of their own (the other files of `tests/`).

// Configs name the sources that read files.
use profiling_sources as _;

#[path = "../common/mod.rs"]
mod common;

mod clock;
mod config;
mod config_reference;
mod robustness_config;
mod robustness_memory;
