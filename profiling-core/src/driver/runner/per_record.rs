//! Time per record and records per second: the pass, the call and every
//! range, divided by the records they covered, so that runs of different
//! batch sizes compare record for record.

use serde::{Deserialize, Serialize};

use crate::driver::config::Batches;
use crate::stats::DurationStats;
use crate::timing::RangeTimings;

/// `timings.per_record` of a manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerRecord {
    /// `workload.batch_size`.
    pub batch_size: u32,
    /// Records run in one measured pass (a dropped last batch left out).
    pub records_per_pass: u64,
    /// Target calls in one measured pass.
    pub batches_per_pass: u64,
    /// From the median pass: `p50 / records_per_pass`. Absent without a
    /// measured pass.
    pub pass: Option<Throughput>,
    /// From the median call: `p50 / (records_per_pass / batches_per_pass)`.
    pub call: Option<Throughput>,
    /// One per entry of `timings.ranges`, in its order: the median
    /// inclusive time times the range's calls per pass, over
    /// `records_per_pass`.
    pub ranges: Vec<RangeThroughput>,
}

/// A time per record and its inverse.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    pub time_per_record_ns: f64,
    pub records_per_second: f64,
}

impl Throughput {
    /// `ns` spent on `records` records.
    pub fn of(ns: f64, records: f64) -> Throughput {
        let time_per_record_ns = if records > 0.0 { ns / records } else { 0.0 };
        Throughput {
            time_per_record_ns,
            records_per_second: if time_per_record_ns > 0.0 {
                1e9 / time_per_record_ns
            } else {
                f64::INFINITY
            },
        }
    }
}

/// [`Throughput`] of one range name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RangeThroughput {
    pub name: String,
    pub time_per_record_ns: f64,
    pub records_per_second: f64,
}

impl PerRecord {
    /// The figures of a run's host timings: `passes` and `calls` one
    /// sample per measured pass and per call, `ranges` as the manifest has
    /// them, over `batches` of `batch_size`.
    pub fn of(
        batch_size: u32,
        batches: Batches,
        passes: Option<&DurationStats>,
        calls: Option<&DurationStats>,
        ranges: &[RangeTimings],
    ) -> PerRecord {
        let records = batches.records as f64;
        let per_call = if batches.batches > 0 {
            records / batches.batches as f64
        } else {
            0.0
        };
        let completed = passes.map_or(0, |p| p.count);
        PerRecord {
            batch_size,
            records_per_pass: batches.records as u64,
            batches_per_pass: batches.batches as u64,
            pass: passes.map(|p| Throughput::of(p.p50_ns as f64, records)),
            call: calls.map(|c| Throughput::of(c.p50_ns as f64, per_call)),
            ranges: ranges
                .iter()
                .map(|range| {
                    // Calls per pass; a range of an interrupted pass counts
                    // towards the passes that completed.
                    let per_pass = range.count as f64 / completed.max(1) as f64;
                    let Throughput {
                        time_per_record_ns,
                        records_per_second,
                    } = Throughput::of(range.inclusive.p50_ns as f64 * per_pass, records);
                    RangeThroughput {
                        name: range.name.clone(),
                        time_per_record_ns,
                        records_per_second,
                    }
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::config::LastBatch;

    fn stats(count: u64, p50_ns: u64) -> DurationStats {
        DurationStats {
            count,
            min_ns: p50_ns,
            p50_ns,
            mean_ns: p50_ns,
            p90_ns: p50_ns,
            p95_ns: Some(p50_ns),
            p99_ns: p50_ns,
            max_ns: p50_ns,
            stddev_ns: 0,
            total_ns: p50_ns * count,
        }
    }

    #[test]
    fn pass_call_and_range_divide_by_the_records_they_cover() {
        // 10 records in batches of 4: 3 calls per pass, 3.33 records per call.
        let batches = Batches::new(10, 4, LastBatch::Keep);
        let range = RangeTimings {
            name: "decode".to_owned(),
            count: 6,
            inclusive: stats(6, 800),
            exclusive: stats(6, 800),
            gpu: None,
            memory: None,
        };
        let figures = PerRecord::of(
            4,
            batches,
            Some(&stats(2, 5_000)),
            Some(&stats(6, 1_500)),
            &[range],
        );
        assert_eq!(
            (
                figures.batch_size,
                figures.records_per_pass,
                figures.batches_per_pass
            ),
            (4, 10, 3)
        );
        let pass = figures.pass.unwrap();
        assert_eq!(pass.time_per_record_ns, 500.0);
        assert_eq!(pass.records_per_second, 2e6);
        assert_eq!(figures.call.unwrap().time_per_record_ns, 450.0);
        // 800 ns, three times a pass, over 10 records.
        assert_eq!(figures.ranges[0].name, "decode");
        assert_eq!(figures.ranges[0].time_per_record_ns, 240.0);
    }

    #[test]
    fn without_a_measured_pass_there_is_no_pass_or_call_figure() {
        let figures = PerRecord::of(1, Batches::new(2, 1, LastBatch::Keep), None, None, &[]);
        assert_eq!(figures.pass, None);
        assert_eq!(figures.call, None);
        assert_eq!(figures.records_per_pass, 2);
    }
}
