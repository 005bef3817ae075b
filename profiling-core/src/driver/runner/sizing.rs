//! `measurement_time`: the measured passes sized by time, criterion's
//! rule: as many passes as fit in the time asked at the warmup passes'
//! pace (their median), decided between the warmup and the capture.

use serde::{Deserialize, Serialize};

/// The most measured passes a run sized by time holds: past it, a pass is
/// so short that more of them would tell nothing new, and their samples
/// and timeline would only take memory.
pub const MAX_SIZED_PASSES: u32 = 1_000_000;

/// The most range events the measured passes of a run sized by time may
/// record (each is held until the capture ends).
pub const MAX_SIZED_RANGE_EVENTS: u64 = 10_000_000;

/// How `measurement_time` sized a run's measured passes (the manifest's
/// `workload.measurement_time`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeasurementTime {
    /// The time asked for.
    pub asked_ns: u64,
    /// The median warmup pass: the pace the passes were sized at.
    pub warmup_pass_ns: u64,
    /// The measured passes it gave: the time asked over a pass's, rounded
    /// up, at least 1.
    pub passes: u32,
    /// Why there are fewer passes than the time asked for, when capped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capped: Option<String>,
}

impl MeasurementTime {
    /// The passes that fill `asked_ns` at `warmup_pass_ns` a pass, each
    /// opening `ranges_per_pass` ranges, within [`MAX_SIZED_PASSES`] and
    /// [`MAX_SIZED_RANGE_EVENTS`].
    ///
    /// ```
    /// use profiling_core::driver::runner::MeasurementTime;
    ///
    /// let sized = MeasurementTime::size(5_000_000_000, 1_200_000, 3);
    /// assert_eq!(sized.passes, 4_167);
    /// assert!(sized.capped.is_none());
    /// ```
    pub fn size(asked_ns: u64, warmup_pass_ns: u64, ranges_per_pass: u64) -> MeasurementTime {
        let pace = warmup_pass_ns.max(1);
        let wanted = asked_ns.div_ceil(pace).max(1);
        let by_ranges = MAX_SIZED_RANGE_EVENTS / ranges_per_pass.max(1);
        let most = u64::from(MAX_SIZED_PASSES).min(by_ranges).max(1);
        let passes = wanted.min(most);
        let capped = (passes < wanted).then(|| {
            let limit = if u64::from(MAX_SIZED_PASSES) <= by_ranges {
                format!("at most {MAX_SIZED_PASSES} passes a run sized by time")
            } else {
                format!("at most {MAX_SIZED_RANGE_EVENTS} range events, {ranges_per_pass} a pass")
            };
            format!("{passes} of the {wanted} passes the time asks for: {limit}")
        });
        MeasurementTime {
            asked_ns,
            warmup_pass_ns,
            passes: u32::try_from(passes).unwrap_or(MAX_SIZED_PASSES),
            capped,
        }
    }

    /// One line for the terminal and the run's notes.
    pub fn describe(&self) -> String {
        let mut line = format!(
            "{} measured passes: {} asked at {} a warmup pass (median)",
            self.passes,
            crate::units::format_ns(self.asked_ns),
            crate::units::format_ns(self.warmup_pass_ns),
        );
        if let Some(capped) = &self.capped {
            line.push_str(&format!("; capped, {capped}"));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_passes_fill_the_time_asked_rounded_up() {
        assert_eq!(MeasurementTime::size(10, 3, 1).passes, 4);
        assert_eq!(MeasurementTime::size(9, 3, 1).passes, 3);
        // A pass longer than the time asked still runs once.
        assert_eq!(MeasurementTime::size(1_000, 5_000, 1).passes, 1);
        // A pass the clock saw as nothing is taken as a nanosecond.
        let sized = MeasurementTime::size(5_000, 0, 0);
        assert_eq!(sized.passes, 5_000);
        assert!(sized.capped.is_none());
    }

    #[test]
    fn a_pass_too_short_for_the_time_is_capped_saying_by_what() {
        let sized = MeasurementTime::size(10_000_000_000, 100, 1);
        assert_eq!(sized.passes, MAX_SIZED_PASSES);
        let capped = sized.capped.unwrap();
        assert!(
            capped.starts_with("1000000 of the 100000000 passes"),
            "{capped}"
        );
        assert!(capped.contains("a run sized by time"), "{capped}");

        let sized = MeasurementTime::size(10_000_000_000, 100_000, 1_000);
        assert_eq!(sized.passes, 10_000);
        let capped = sized.capped.unwrap();
        assert!(
            capped.contains("10000000 range events, 1000 a pass"),
            "{capped}"
        );
    }
}
