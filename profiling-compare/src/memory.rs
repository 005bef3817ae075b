//! Comparing what two runs with `memory: on` allocated per pass.
//!
//! Allocation counts of deterministic code are the same in every pass, so
//! where each side's passes all agree the change is exact: `3 → 4
//! allocations per pass` is a fact, with no interval and no test. Where a
//! side's passes differ (a thread pool, a cache that fills), a change is
//! `more` or `fewer` only when every pass of one side lies beyond every
//! pass of the other; otherwise it `varies`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use profiling_core::driver::run_samples::{MemorySeries, SidePasses};

/// What a memory row counts, per pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    Allocations,
    AllocatedBytes,
    PeakBytes,
}

impl Measure {
    /// `allocations`, `bytes` or `peak`.
    pub fn word(self) -> &'static str {
        match self {
            Measure::Allocations => "allocations",
            Measure::AllocatedBytes => "bytes",
            Measure::PeakBytes => "peak",
        }
    }

    /// `value` in the measure's unit: a count, or bytes in binary units.
    pub fn format(self, value: u64) -> String {
        match self {
            Measure::Allocations => value.to_string(),
            _ => profiling_core::memory::human_bytes(value),
        }
    }
}

/// One side's passes of a measure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CountSide {
    pub median: u64,
    pub min: u64,
    pub max: u64,
    pub passes: u64,
}

impl CountSide {
    fn of(values: &[u64]) -> Option<CountSide> {
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        Some(CountSide {
            median: crate::statistics::lower_median(&sorted)?,
            min: *sorted.first()?,
            max: *sorted.last()?,
            passes: sorted.len() as u64,
        })
    }

    /// True when every pass counted the same.
    pub fn is_constant(&self) -> bool {
        self.min == self.max
    }
}

/// How a count changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CountVerdict {
    /// The candidate counts more: in every pass, than in every base pass.
    More,
    Fewer,
    /// The same count in every pass of both.
    Same,
    /// The passes of the two sides overlap and differ: no verdict.
    Varies,
    /// Only the candidate has this range.
    Added,
    /// Only the base has this range.
    Removed,
}

impl CountVerdict {
    pub fn word(self) -> &'static str {
        match self {
            CountVerdict::More => "more",
            CountVerdict::Fewer => "fewer",
            CountVerdict::Same => "same",
            CountVerdict::Varies => "varies",
            CountVerdict::Added => "added",
            CountVerdict::Removed => "removed",
        }
    }
}

/// One compared count: the pass's, or a range name's, per pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryRow {
    /// `pass`, or a range name.
    pub subject: String,
    pub measure: Measure,
    pub base: Option<CountSide>,
    pub candidate: Option<CountSide>,
    /// The candidate's median less the base's.
    pub change: i64,
    /// True when both sides counted the same in every pass: the change is
    /// exact.
    pub exact: bool,
    pub verdict: CountVerdict,
}

impl MemoryRow {
    /// `3 → 4 (+1)`, `1.0 KiB → 1.5 KiB (+512 B)`, or with passes that
    /// differ, their medians and extremes.
    pub fn change_text(&self) -> String {
        let side = |side: Option<&CountSide>| match side {
            None => "-".to_owned(),
            Some(s) if s.is_constant() => self.measure.format(s.median),
            Some(s) => format!(
                "{} ({}..{})",
                self.measure.format(s.median),
                self.measure.format(s.min),
                self.measure.format(s.max)
            ),
        };
        let sign = if self.change < 0 { "-" } else { "+" };
        format!(
            "{} → {} ({sign}{})",
            side(self.base.as_ref()),
            side(self.candidate.as_ref()),
            self.measure.format(self.change.unsigned_abs())
        )
    }

    /// True when it fails `--fail-on-regression`: more allocations per
    /// pass than the base.
    pub fn regressed(&self) -> bool {
        self.subject == "pass"
            && self.measure == Measure::Allocations
            && self.verdict == CountVerdict::More
    }
}

/// What one side allocated in each of its passes, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PassMemory {
    pub allocations: Vec<u64>,
    pub allocated_bytes: Vec<u64>,
    pub peak_bytes: Vec<u64>,
    /// By range name: its allocations and bytes in each pass.
    pub ranges: BTreeMap<String, (Vec<u64>, Vec<u64>)>,
}

impl PassMemory {
    /// From a run's `samples.bin` memory series (every pass it kept one
    /// by one).
    pub fn of_series(memory: &MemorySeries) -> PassMemory {
        PassMemory {
            allocations: memory.allocations.sorted_values(),
            allocated_bytes: memory.allocated_bytes.sorted_values(),
            peak_bytes: memory.peak_bytes.sorted_values(),
            ranges: memory
                .ranges
                .iter()
                .map(|range| {
                    (
                        range.name.clone(),
                        (
                            range.allocations.sorted_values(),
                            range.allocated_bytes.sorted_values(),
                        ),
                    )
                })
                .collect(),
        }
    }

    /// From a paired run's side; `None` when it attributed no memory.
    pub fn of_side(side: &SidePasses) -> Option<PassMemory> {
        if side.allocations.is_empty() {
            return None;
        }
        Some(PassMemory {
            allocations: side.allocations.clone(),
            allocated_bytes: side.allocated_bytes.clone(),
            peak_bytes: side.peak_bytes.clone(),
            ranges: side
                .range_allocations
                .iter()
                .map(|(name, counts)| (name.clone(), (counts.clone(), Vec::new())))
                .collect(),
        })
    }
}

/// Said when only one of two runs attributed memory: no memory rows then.
pub fn one_side_only(
    base: &str,
    base_has: bool,
    candidate: &str,
    candidate_has: bool,
) -> Option<String> {
    let (with, without) = match (base_has, candidate_has) {
        (true, false) => (base, candidate),
        (false, true) => (candidate, base),
        _ => return None,
    };
    Some(format!(
        "only {with} attributed memory (memory: on): its allocations are not compared; run {without} with --memory too"
    ))
}

/// The rows of two sides' memory: the pass's allocations, bytes and peak,
/// then each range name's allocations and bytes, largest change first.
/// Empty unless both sides attributed memory.
pub fn memory_rows(base: Option<&PassMemory>, candidate: Option<&PassMemory>) -> Vec<MemoryRow> {
    let (Some(base), Some(candidate)) = (base, candidate) else {
        return Vec::new();
    };
    let mut rows = vec![
        row(
            "pass",
            Measure::Allocations,
            Some(&base.allocations),
            Some(&candidate.allocations),
        ),
        row(
            "pass",
            Measure::AllocatedBytes,
            Some(&base.allocated_bytes),
            Some(&candidate.allocated_bytes),
        ),
        row(
            "pass",
            Measure::PeakBytes,
            Some(&base.peak_bytes),
            Some(&candidate.peak_bytes),
        ),
    ];
    let names: std::collections::BTreeSet<&String> =
        base.ranges.keys().chain(candidate.ranges.keys()).collect();
    let mut ranges = Vec::new();
    for name in names {
        let (b, c) = (base.ranges.get(name), candidate.ranges.get(name));
        ranges.push(row(
            name,
            Measure::Allocations,
            b.map(|r| &r.0),
            c.map(|r| &r.0),
        ));
        fn bytes(side: Option<&(Vec<u64>, Vec<u64>)>) -> Option<&Vec<u64>> {
            side.map(|r| &r.1).filter(|bytes| !bytes.is_empty())
        }
        if bytes(b).is_some() || bytes(c).is_some() {
            ranges.push(row(name, Measure::AllocatedBytes, bytes(b), bytes(c)));
        }
    }
    // Changes first, the largest relative change first; then by name.
    ranges.sort_by(|a, b| {
        let weight = |row: &MemoryRow| {
            let base = row.base.map_or(0, |s| s.median).max(1) as f64;
            (
                row.change.unsigned_abs() as f64 / base,
                row.verdict != CountVerdict::Same,
            )
        };
        let (wa, wb) = (weight(a), weight(b));
        wb.1.cmp(&wa.1)
            .then(wb.0.total_cmp(&wa.0))
            .then_with(|| a.subject.cmp(&b.subject))
            .then_with(|| (a.measure as u8).cmp(&(b.measure as u8)))
    });
    rows.extend(ranges);
    rows
}

fn row(
    subject: &str,
    measure: Measure,
    base: Option<&Vec<u64>>,
    candidate: Option<&Vec<u64>>,
) -> MemoryRow {
    let base = base.and_then(|values| CountSide::of(values));
    let candidate = candidate.and_then(|values| CountSide::of(values));
    let exact = match (&base, &candidate) {
        (Some(b), Some(c)) => b.is_constant() && c.is_constant(),
        _ => false,
    };
    let verdict = match (&base, &candidate) {
        (None, _) => CountVerdict::Added,
        (_, None) => CountVerdict::Removed,
        (Some(b), Some(c)) if c.min > b.max => CountVerdict::More,
        (Some(b), Some(c)) if c.max < b.min => CountVerdict::Fewer,
        (Some(b), Some(c)) if exact && b.median == c.median => CountVerdict::Same,
        _ => CountVerdict::Varies,
    };
    let median = |side: &Option<CountSide>| side.map_or(0, |s| s.median) as i64;
    MemoryRow {
        subject: subject.to_owned(),
        measure,
        change: median(&candidate) - median(&base),
        exact,
        verdict,
        base,
        candidate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(allocations: &[u64], ranges: &[(&str, &[u64])]) -> PassMemory {
        PassMemory {
            allocations: allocations.to_vec(),
            allocated_bytes: allocations.iter().map(|a| a * 64).collect(),
            peak_bytes: vec![4096; allocations.len()],
            ranges: ranges
                .iter()
                .map(|(name, counts)| {
                    (
                        name.to_string(),
                        (counts.to_vec(), counts.iter().map(|c| c * 64).collect()),
                    )
                })
                .collect(),
        }
    }

    fn find<'a>(rows: &'a [MemoryRow], subject: &str, measure: Measure) -> &'a MemoryRow {
        rows.iter()
            .find(|r| r.subject == subject && r.measure == measure)
            .unwrap_or_else(|| panic!("{subject} {measure:?}"))
    }

    #[test]
    fn one_more_allocation_in_every_pass_is_an_exact_change() {
        let base = memory(&[3; 10], &[("decode", &[1; 10])]);
        let candidate = memory(&[4; 10], &[("decode", &[2; 10])]);
        let rows = memory_rows(Some(&base), Some(&candidate));
        let pass = find(&rows, "pass", Measure::Allocations);
        assert_eq!(
            (pass.change, pass.exact, pass.verdict),
            (1, true, CountVerdict::More)
        );
        assert_eq!(pass.change_text(), "3 → 4 (+1)");
        assert!(pass.regressed());
        let bytes = find(&rows, "pass", Measure::AllocatedBytes);
        assert_eq!(bytes.change_text(), "192 B → 256 B (+64 B)");
        assert!(!bytes.regressed(), "bytes alone do not gate");
        let peak = find(&rows, "pass", Measure::PeakBytes);
        assert_eq!(peak.verdict, CountVerdict::Same);
        let decode = find(&rows, "decode", Measure::Allocations);
        assert_eq!((decode.change, decode.verdict), (1, CountVerdict::More));
        assert!(!decode.regressed(), "the pass's row gates");
        // The range that changed comes first among the ranges.
        assert_eq!(rows[3].subject, "decode");
    }

    #[test]
    fn passes_that_differ_give_a_verdict_only_beyond_each_other() {
        let overlapping = memory_rows(
            Some(&memory(&[3, 4, 3, 5], &[])),
            Some(&memory(&[4, 4, 5, 4], &[])),
        );
        let pass = find(&overlapping, "pass", Measure::Allocations);
        assert_eq!((pass.exact, pass.verdict), (false, CountVerdict::Varies));
        assert!(!pass.regressed());
        assert_eq!(pass.change_text(), "3 (3..5) → 4 (4..5) (+1)");
        let apart = memory_rows(
            Some(&memory(&[3, 4, 3], &[])),
            Some(&memory(&[6, 5, 7], &[])),
        );
        assert_eq!(
            find(&apart, "pass", Measure::Allocations).verdict,
            CountVerdict::More
        );
        let fewer = memory_rows(Some(&memory(&[9, 9], &[])), Some(&memory(&[2, 2], &[])));
        let pass = find(&fewer, "pass", Measure::Allocations);
        assert_eq!((pass.change, pass.verdict), (-7, CountVerdict::Fewer));
        assert_eq!(pass.change_text(), "9 → 2 (-7)");
    }

    #[test]
    fn one_side_varying_is_never_exact_nor_the_same() {
        let rows = memory_rows(
            Some(&memory(&[3, 3, 3], &[])),
            Some(&memory(&[4, 5, 4], &[])),
        );
        let pass = find(&rows, "pass", Measure::Allocations);
        assert_eq!((pass.exact, pass.verdict), (false, CountVerdict::More));
        // Equal medians of passes that differ: no verdict, not `same`.
        let rows = memory_rows(
            Some(&memory(&[3, 3, 4], &[])),
            Some(&memory(&[3, 4, 3], &[])),
        );
        let pass = find(&rows, "pass", Measure::Allocations);
        assert_eq!((pass.change, pass.verdict), (0, CountVerdict::Varies));
        // No change reads as +0.
        let peak = find(&rows, "pass", Measure::PeakBytes);
        assert_eq!(peak.change_text(), "4.0 KiB → 4.0 KiB (+0 B)");
    }

    #[test]
    fn ranges_are_ordered_by_their_relative_change_then_unchanged() {
        let rows = memory_rows(
            Some(&memory(
                &[9; 4],
                &[
                    ("steady", &[5; 4]),
                    ("grows", &[1; 4]),
                    ("shrinks", &[4; 4]),
                ],
            )),
            Some(&memory(
                &[9; 4],
                &[
                    ("steady", &[5; 4]),
                    ("grows", &[3; 4]),
                    ("shrinks", &[3; 4]),
                ],
            )),
        );
        let ranges: Vec<(&str, Measure)> = rows[3..]
            .iter()
            .map(|r| (r.subject.as_str(), r.measure))
            .collect();
        assert_eq!(
            ranges,
            [
                ("grows", Measure::Allocations),
                ("grows", Measure::AllocatedBytes),
                ("shrinks", Measure::Allocations),
                ("shrinks", Measure::AllocatedBytes),
                ("steady", Measure::Allocations),
                ("steady", Measure::AllocatedBytes),
            ]
        );
    }

    #[test]
    fn a_runs_series_and_a_paired_side_give_the_same_passes() {
        let series = |values: &[u64]| {
            let mut set = profiling_core::timing::SampleSet::with_capacity(values.len());
            for &value in values {
                set.push(value);
            }
            profiling_core::driver::run_samples::Series::from_set(&set)
        };
        let run = MemorySeries {
            allocations: series(&[3, 4]),
            allocated_bytes: series(&[30, 40]),
            peak_bytes: series(&[8, 8]),
            ranges: vec![profiling_core::driver::run_samples::RangeMemorySeries {
                name: "decode".to_owned(),
                allocations: series(&[1, 2]),
                allocated_bytes: series(&[10, 20]),
            }],
        };
        let from_run = PassMemory::of_series(&run);
        assert_eq!(from_run.allocations, [3, 4]);
        assert_eq!(from_run.peak_bytes, [8, 8]);
        assert_eq!(from_run.ranges["decode"], (vec![1, 2], vec![10, 20]));
        let side = SidePasses::default().with_memory(Some(&run));
        let from_side = PassMemory::of_side(&side).expect("the side attributed memory");
        assert_eq!(from_side.allocated_bytes, [30, 40]);
        // A paired side keeps each range's allocations, not their bytes: no
        // bytes row for ranges then.
        assert_eq!(from_side.ranges["decode"], (vec![1, 2], Vec::new()));
        let rows = memory_rows(Some(&from_side), Some(&from_side));
        assert!(rows
            .iter()
            .all(|r| r.subject == "pass" || r.measure == Measure::Allocations));
        assert_eq!(PassMemory::of_side(&SidePasses::default()), None);
    }

    #[test]
    fn only_one_side_with_memory_is_said_naming_both() {
        assert_eq!(
            one_side_only("a", true, "b", false).as_deref(),
            Some("only a attributed memory (memory: on): its allocations are not compared; run b with --memory too")
        );
        assert!(one_side_only("a", false, "b", true)
            .unwrap()
            .starts_with("only b attributed"));
        assert_eq!(one_side_only("a", true, "b", true), None);
        assert_eq!(one_side_only("a", false, "b", false), None);
    }

    #[test]
    fn words_are_the_json_spellings() {
        for verdict in [
            CountVerdict::More,
            CountVerdict::Fewer,
            CountVerdict::Same,
            CountVerdict::Varies,
            CountVerdict::Added,
            CountVerdict::Removed,
        ] {
            assert_eq!(
                serde_yaml::to_value(verdict).unwrap(),
                serde_yaml::Value::from(verdict.word())
            );
        }
        let words: Vec<&str> = [
            Measure::Allocations,
            Measure::AllocatedBytes,
            Measure::PeakBytes,
        ]
        .iter()
        .map(|m| m.word())
        .collect();
        assert_eq!(words, ["allocations", "bytes", "peak"]);
    }

    #[test]
    fn a_range_of_one_side_is_added_or_removed_and_one_side_alone_gives_no_rows() {
        let rows = memory_rows(
            Some(&memory(&[1; 4], &[("old", &[1; 4])])),
            Some(&memory(&[1; 4], &[("new", &[1; 4])])),
        );
        assert_eq!(
            find(&rows, "old", Measure::Allocations).verdict,
            CountVerdict::Removed
        );
        assert_eq!(
            find(&rows, "new", Measure::Allocations).verdict,
            CountVerdict::Added
        );
        // Its bytes too, though only one side has them.
        assert_eq!(
            find(&rows, "new", Measure::AllocatedBytes).verdict,
            CountVerdict::Added
        );
        assert!(memory_rows(Some(&memory(&[1], &[])), None).is_empty());
    }
}
