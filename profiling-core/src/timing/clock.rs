//! The clock every timing reads: the host's monotonic clock, as
//! nanoseconds since a process-wide origin.

use std::sync::OnceLock;
use std::time::Instant;

use serde::Serialize;

static ORIGIN: OnceLock<Instant> = OnceLock::new();

/// Nanoseconds since the process's timing origin (its first clock read).
#[inline]
pub fn now_ns() -> u64 {
    let origin = *ORIGIN.get_or_init(Instant::now);
    u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// What the clock is and what reading it costs, measured at start-up and
/// reported as is: timings are never corrected by it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimerInfo {
    pub source: String,
    /// The smallest step between two readings seen.
    pub resolution_ns: u64,
    /// The mean cost of one reading.
    pub overhead_ns: f64,
}

impl TimerInfo {
    /// Measures the clock: a few thousand back-to-back readings.
    pub fn measure() -> TimerInfo {
        const READS: u32 = 2_000;
        let mut resolution = u64::MAX;
        let mut previous = now_ns();
        let started = now_ns();
        for _ in 0..READS {
            let now = now_ns();
            if now > previous {
                resolution = resolution.min(now - previous);
            }
            previous = now;
        }
        let overhead = (previous - started) as f64 / f64::from(READS);
        TimerInfo {
            source: "std::time::Instant (clock_gettime CLOCK_MONOTONIC)".to_owned(),
            resolution_ns: if resolution == u64::MAX {
                0
            } else {
                resolution
            },
            overhead_ns: (overhead * 10.0).round() / 10.0,
        }
    }
}
