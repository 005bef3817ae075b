//! The contract and the machinery of snippet profiling.
//!
//! A *target* ([`ProfileTarget`]) prepares data records and runs the code
//! under study on them; `#[profile_target]` registers it at link time, and
//! the runner ([`driver::runner`]) profiles it on a config-driven [`data`] source: warmup
//! passes, then measured passes inside one NVTX capture range, then a
//! [`manifest`](driver::manifest) of what ran.
//!
//! ```
//! use profiling_core::prelude::*;
//!
//! /// Sums the dummy tensor of each record.
//! #[derive(Default)]
//! struct SumTensor;
//!
//! #[profile_target(name = "sum-tensor")]
//! impl ProfileTarget for SumTensor {
//!     type Prepared = Vec<f32>;
//!     type Output = f32;
//!
//!     fn prepare(&mut self, record: &DataRecord, _device: Device) -> anyhow::Result<Vec<f32>> {
//!         let tensor = record.tensor("tensor")?;
//!         Ok(tensor.iter().copied().collect())
//!     }
//!
//!     fn run(&mut self, values: &Vec<f32>) -> anyhow::Result<f32> {
//!         let _range = profiling_range("sum");
//!         Ok(values.iter().sum())
//!     }
//! }
//! # fn main() {
//! # assert!(profiling_core::driver::registry::targets().iter().any(|t| t.name == "sum-tensor"));
//! # }
//! ```

// Every `pub` item is reachable from the crate's root: the module tree
// below is the whole API.
#![warn(unreachable_pub)]

// What a target or a data source author uses, beside the prelude.
pub mod backend;
pub mod data;
pub mod device;
pub mod memory;
pub mod nvtx;
#[cfg(feature = "ort")]
pub mod onnx;
pub mod parity;
pub mod random;
pub mod target;
#[cfg(feature = "tch")]
pub mod tensor;

// Under both: the clock and the captured ranges, statistics of durations,
// values read out of YAML, the names near a misspelt one.
pub mod stats;
pub mod suggest;
pub mod timing;
pub mod units;
pub mod yaml;

// What lists, plans, runs and writes runs.
pub mod driver;

pub use profiling_macros::{data_source, nvtx_range, profile_target};

/// Everything a target needs: `use profiling_core::prelude::*;`.
pub mod prelude {
    pub use crate::data::DataRecord;
    pub use crate::device::Device;
    pub use crate::nvtx::{profiling_range, profiling_range_if_cuda, RangeGuard};
    pub use crate::target::{ProfileTarget, Summary};
    pub use profiling_macros::{data_source, nvtx_range, profile_target};
}

pub use prelude::*;

// The attributes' documentation (profiling-macros/docs/) is tested here:
// its examples use the runtime, and a proc-macro crate's documentation
// tests would build the runtime a second time, for the host.
#[cfg(doctest)]
#[doc = include_str!("../../profiling-macros/docs/nvtx_range.md")]
pub struct NvtxRangeDocumentation;

#[cfg(doctest)]
#[doc = include_str!("../../profiling-macros/docs/profile_target.md")]
pub struct ProfileTargetDocumentation;

#[cfg(doctest)]
#[doc = include_str!("../../profiling-macros/docs/data_source.md")]
pub struct DataSourceDocumentation;

/// Declares targets that exist only in builds with a cargo feature, so that
/// a build without it names the feature instead of "unknown target":
///
/// ```
/// profiling_core::targets_needing_feature!("tch": "smoke-tensor", "tiny-cnn");
/// ```
///
/// Put it under `#[cfg(not(feature = "..."))]` in the crate that defines
/// the targets.
#[macro_export]
macro_rules! targets_needing_feature {
    ($feature:literal : $($name:literal),+ $(,)?) => {
        $(
            $crate::__private::inventory::submit! {
                $crate::__private::UnavailableTarget { name: $name, feature: $feature }
            }
        )+
    };
}

/// Items the macros expand to. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::data::{build_source, SourceEntry};
    pub use crate::driver::load::drive::{LoadError, LoadPlan, LoadRun};
    pub use crate::driver::load::target::load_target;
    pub use crate::driver::registry::{FactoryOutput, TargetEntry, UnavailableTarget};
    pub use crate::driver::runner::{
        open_target, run_target, RunError, RunOutcome, RunPlan, SteppedRun,
    };
    pub use anyhow;
    pub use inventory;
    pub use std::boxed::Box;
}
