//! Host timings of a run: the clock, bounded sample sets, the ranges
//! recorded while the capture is open, and their aggregation.

pub(crate) mod aggregate;
pub mod clock;
#[cfg_attr(not(feature = "ort"), allow(dead_code))]
pub(crate) mod external;
pub mod gpu;
pub(crate) mod log;
pub mod memory;
pub mod recorder;
pub(crate) mod samples;
pub mod tree;

pub use aggregate::RangeTimings;
pub(crate) use aggregate::{attach_gpu, range_sets, timings_of};
pub use clock::TimerInfo;
pub(crate) use clock::{now_ns, readings_to_ns, span_ns, ticks};
pub use gpu::{EventBackend, FakeEvents, GpuTimings};
pub(crate) use gpu::{GpuCapture, GpuEvents};
pub(crate) use log::RangeLog;
pub use recorder::Capture;
pub(crate) use recorder::Registration;
pub use samples::SampleSet;
pub use tree::RangePathTimings;
pub(crate) use tree::RangeTree;
