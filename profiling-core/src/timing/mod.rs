//! Host timings of a run: the clock, bounded sample sets, the ranges
//! recorded while the capture is open, and their aggregation.

pub mod aggregate;
pub mod clock;
#[cfg_attr(not(feature = "ort"), allow(dead_code))]
pub(crate) mod external;
pub mod gpu;
pub mod log;
pub mod memory;
pub mod recorder;
pub mod samples;
pub mod tree;

pub use aggregate::{attach_gpu, range_sets, timings_of, RangeTimings};
pub use clock::{now_ns, readings_to_ns, span_ns, ticks, TimerInfo};
pub use gpu::{EventBackend, FakeEvents, GpuCapture, GpuEvents, GpuTimings};
pub use log::RangeLog;
pub use recorder::{Capture, Registration};
pub use samples::SampleSet;
pub use tree::{RangePathTimings, RangeTree};
