//! Host timings of a run: the clock, bounded sample sets, the ranges
//! recorded while the capture is open, and their aggregation.

pub mod aggregate;
pub mod clock;
pub mod recorder;
pub mod samples;
pub mod tree;

pub use aggregate::{range_sets, range_timings, timings_of, RangeTimings};
pub use clock::{now_ns, TimerInfo};
pub use recorder::{Capture, RangeLog, Registration};
pub use samples::SampleSet;
pub use tree::{RangePathTimings, RangeTree};
