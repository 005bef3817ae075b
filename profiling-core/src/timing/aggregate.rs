//! From recorded ranges to per-name statistics.

use std::collections::BTreeMap;

use serde::Serialize;

use super::recorder::RangeLog;
use super::samples::SampleSet;
use crate::stats::DurationStats;

/// The timings of every range with one name, over all threads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RangeTimings {
    pub name: String,
    pub count: u64,
    /// From opening to closing the range.
    pub inclusive: DurationStats,
    /// Inclusive time minus the time spent in recorded ranges inside it.
    pub exclusive: DurationStats,
    /// The device's time for the same ranges, on runs with GPU timing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuRangeTimings>,
}

/// The GPU time of one range name: from its start event to its end event
/// on the device's stream ([`super::gpu`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuRangeTimings {
    /// Ranges that got both events (fewer than the host's `count` when the
    /// pool ran out or a guard was kept across passes).
    pub count: u64,
    pub inclusive: DurationStats,
    /// Inclusive GPU time minus that of the recorded ranges inside it.
    pub exclusive: DurationStats,
}

/// Adds each name's GPU statistics from `gpu` (its inclusive and exclusive
/// samples) to the host timings of that name.
pub fn attach_gpu(timings: &mut [RangeTimings], gpu: &BTreeMap<String, (SampleSet, SampleSet)>) {
    for timing in timings {
        timing.gpu = gpu.get(&timing.name).and_then(|(inclusive, exclusive)| {
            Some(GpuRangeTimings {
                count: inclusive.count(),
                inclusive: inclusive.stats()?,
                exclusive: exclusive.stats()?,
            })
        });
    }
}

/// Per-name timings, largest inclusive total first; the flag is true when
/// some quantiles come from histograms (more ranges than the event buffers
/// hold).
pub fn range_timings(log: &RangeLog) -> (Vec<RangeTimings>, bool) {
    timings_of(&range_sets(log))
}

/// The inclusive and exclusive samples of every range name, over all
/// threads: each kept event one by one, the rest as the recorder's
/// histograms.
pub fn range_sets(log: &RangeLog) -> BTreeMap<String, (SampleSet, SampleSet)> {
    // Exact capacity per name, so every kept event stays a sample.
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for thread in &log.threads {
        for event in &thread.events {
            *counts
                .entry(thread.names[event.name as usize].as_str())
                .or_default() += 1;
        }
    }
    let mut sets: BTreeMap<String, (SampleSet, SampleSet)> = BTreeMap::new();
    let set_for = |name: &str| -> (SampleSet, SampleSet) {
        let capacity = counts.get(name).copied().unwrap_or(0);
        (
            SampleSet::with_capacity(capacity),
            SampleSet::with_capacity(capacity),
        )
    };
    for thread in &log.threads {
        for event in &thread.events {
            let name = &thread.names[event.name as usize];
            let (inclusive, exclusive) = sets.entry(name.clone()).or_insert_with(|| set_for(name));
            inclusive.push(event.inclusive_ns);
            exclusive.push(event.exclusive_ns);
        }
        for (index, overflow) in thread.overflow.iter().enumerate() {
            if let Some(overflow) = overflow {
                let name = &thread.names[index];
                let (inclusive, exclusive) =
                    sets.entry(name.clone()).or_insert_with(|| set_for(name));
                inclusive.absorb(&overflow.inclusive);
                exclusive.absorb(&overflow.exclusive);
            }
        }
    }
    sets
}

/// [`range_timings`] of the sets [`range_sets`] made.
pub fn timings_of(sets: &BTreeMap<String, (SampleSet, SampleSet)>) -> (Vec<RangeTimings>, bool) {
    let mut sketched = false;
    let mut timings: Vec<RangeTimings> = sets
        .iter()
        .filter_map(|(name, (inclusive, exclusive))| {
            sketched |= inclusive.is_sketched();
            Some(RangeTimings {
                name: name.clone(),
                count: inclusive.count(),
                inclusive: inclusive.stats()?,
                exclusive: exclusive.stats()?,
                gpu: None,
            })
        })
        .collect();
    timings.sort_by(|a, b| {
        b.inclusive
            .total_ns
            .cmp(&a.inclusive.total_ns)
            .then_with(|| a.name.cmp(&b.name))
    });
    (timings, sketched)
}
