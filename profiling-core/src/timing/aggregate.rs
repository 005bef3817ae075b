//! From recorded ranges to per-name statistics.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::log::RangeLog;
use super::samples::SampleSet;
use crate::stats::DurationStats;

/// The timings of every range with one name, over all threads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RangeTimings {
    pub name: String,
    pub count: u64,
    /// From opening to closing the range.
    pub inclusive: DurationStats,
    /// Inclusive time minus the time spent in recorded ranges inside it.
    pub exclusive: DurationStats,
    /// The device's time for the same ranges, on runs with GPU timing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuRangeTimings>,
    /// What the same ranges allocated, on runs with `memory: on`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<crate::timing::memory::RangeMemory>,
}

/// The GPU time of one range name: from its start event to its end event
/// on the device's stream ([`super::gpu`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
pub(crate) fn attach_gpu(
    timings: &mut [RangeTimings],
    gpu: &BTreeMap<String, (SampleSet, SampleSet)>,
) {
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

/// The inclusive and exclusive samples of every range name, over all
/// threads: each kept event one by one, the rest as the recorder's
/// histograms.
pub(crate) fn range_sets(log: &RangeLog) -> BTreeMap<String, (SampleSet, SampleSet)> {
    // Each thread's name indices mapped to one position per name, counted
    // first, so that every kept event stays a sample (exact capacity) and
    // each event costs an index, not a map lookup or a name copy.
    let mut position: BTreeMap<&str, usize> = BTreeMap::new();
    let mut counts: Vec<usize> = Vec::new();
    let positions: Vec<Vec<usize>> = log
        .threads
        .iter()
        .map(|thread| {
            let of_name: Vec<usize> = thread
                .names
                .iter()
                .map(|name| {
                    let next = position.len();
                    let at = *position.entry(name.as_str()).or_insert(next);
                    if at == counts.len() {
                        counts.push(0);
                    }
                    at
                })
                .collect();
            for event in &thread.events {
                counts[of_name[event.name as usize]] += 1;
            }
            of_name
        })
        .collect();
    let mut accumulated: Vec<Option<(SampleSet, SampleSet)>> =
        (0..counts.len()).map(|_| None).collect();
    fn set_at<'a>(
        accumulated: &'a mut [Option<(SampleSet, SampleSet)>],
        counts: &[usize],
        at: usize,
    ) -> &'a mut (SampleSet, SampleSet) {
        accumulated[at].get_or_insert_with(|| {
            (
                SampleSet::with_capacity(counts[at]),
                SampleSet::with_capacity(counts[at]),
            )
        })
    }
    for (thread, of_name) in log.threads.iter().zip(&positions) {
        for event in &thread.events {
            let (inclusive, exclusive) =
                set_at(&mut accumulated, &counts, of_name[event.name as usize]);
            inclusive.push(event.inclusive_ns);
            exclusive.push(event.exclusive_ns);
        }
        for (index, overflow) in thread.overflow.iter().enumerate() {
            if let Some(overflow) = overflow {
                let (inclusive, exclusive) = set_at(&mut accumulated, &counts, of_name[index]);
                inclusive.absorb(&overflow.inclusive);
                exclusive.absorb(&overflow.exclusive);
            }
        }
    }
    position
        .into_iter()
        .filter_map(|(name, at)| Some((name.to_owned(), accumulated[at].take()?)))
        .collect()
}

/// Per-name timings of the sets [`range_sets`] made, largest inclusive
/// total first; the flag is true when some quantiles come from histograms
/// (more ranges than the event buffers hold).
pub(crate) fn timings_of(
    sets: &BTreeMap<String, (SampleSet, SampleSet)>,
) -> (Vec<RangeTimings>, bool) {
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
                memory: None,
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
