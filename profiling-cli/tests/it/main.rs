//! The integration tests of profiling-cli that run it (or cargo, or a
//! browser) as a process and link no targets of their own, in one binary.
//! Tests that link targets and run the command line in-process, and those
//! that are their own program (`harness = false`), have binaries of their
//! own (the other files of `tests/`), and `tch_cli` holds what only a
//! build with the `tch` feature runs.

#[path = "../common/browser.rs"]
mod browser;
#[path = "../common/mod.rs"]
mod common;

mod ab_binaries;
mod binary;
mod full_disk;
mod gpu_state;
mod history_postgres;
mod hostile;
mod init;
mod layout;
mod load_browser;
mod memory;
mod nsys;
mod ocr;
mod own_workspace;
mod real_crates;
mod remove;
mod report_browser;
mod setup_script;
// The sweep page's writer is part of the whole command line alone.
#[cfg(feature = "full")]
mod sweep_browser;
