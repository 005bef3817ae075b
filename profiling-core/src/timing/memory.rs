//! What a run with `memory: on` reports: statistics of the figures
//! [`crate::memory::attribution`] took per pass, per call and per range, as the
//! manifest holds them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::log::RangeLog;
use super::samples::SampleSet;
use crate::memory::attribution::{Figures, MemoryEvent};

/// Statistics of a count (allocations, bytes) over passes, calls or ranges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CountStats {
    pub min: u64,
    pub median: u64,
    pub mean: f64,
    pub max: u64,
    pub total: u64,
}

impl CountStats {
    /// Statistics of `samples`; `None` when there are none.
    pub fn of(samples: &SampleSet) -> Option<CountStats> {
        let stats = samples.stats()?;
        Some(CountStats {
            min: stats.min_ns,
            median: stats.p50_ns,
            mean: stats.total_ns as f64 / stats.count as f64,
            max: stats.max_ns,
            total: stats.total_ns,
        })
    }

    /// Statistics of a few exact values.
    pub fn of_values(values: &[u64]) -> Option<CountStats> {
        CountStats::of(&SampleSet::of_values(values))
    }

    /// True when every sample was the same.
    pub fn is_constant(&self) -> bool {
        self.min == self.max
    }
}

/// Statistics of each figure of [`Figures`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FigureStats {
    pub allocations: CountStats,
    pub allocated_bytes: CountStats,
    pub freed_bytes: CountStats,
    pub freed_elsewhere_bytes: CountStats,
    pub peak_bytes: CountStats,
}

/// The samples of each figure, one per pass or call.
#[derive(Debug, Clone)]
pub struct FigureSamples {
    pub allocations: SampleSet,
    pub allocated_bytes: SampleSet,
    pub freed_bytes: SampleSet,
    pub freed_elsewhere_bytes: SampleSet,
    pub peak_bytes: SampleSet,
}

impl FigureSamples {
    /// Room for `expected` samples, at most `kept` of them exact.
    pub fn expecting(expected: usize, kept: usize) -> FigureSamples {
        FigureSamples {
            allocations: SampleSet::expecting(expected, kept),
            allocated_bytes: SampleSet::expecting(expected, kept),
            freed_bytes: SampleSet::expecting(expected, kept),
            freed_elsewhere_bytes: SampleSet::expecting(expected, kept),
            peak_bytes: SampleSet::expecting(expected, kept),
        }
    }

    /// Maps the buffers' pages before the capture.
    pub fn prefault(&mut self) {
        for set in self.sets_mut() {
            set.prefault();
        }
    }

    fn sets_mut(&mut self) -> [&mut SampleSet; 5] {
        [
            &mut self.allocations,
            &mut self.allocated_bytes,
            &mut self.freed_bytes,
            &mut self.freed_elsewhere_bytes,
            &mut self.peak_bytes,
        ]
    }

    #[inline]
    pub fn push(&mut self, figures: &Figures) {
        self.allocations.push(figures.allocations);
        self.allocated_bytes.push(figures.allocated_bytes);
        self.freed_bytes.push(figures.freed_bytes);
        self.freed_elsewhere_bytes
            .push(figures.freed_elsewhere_bytes);
        self.peak_bytes.push(figures.peak_bytes);
    }

    pub fn count(&self) -> u64 {
        self.allocations.count()
    }

    /// Their statistics; `None` with no sample.
    pub fn stats(&self) -> Option<FigureStats> {
        Some(FigureStats {
            allocations: CountStats::of(&self.allocations)?,
            allocated_bytes: CountStats::of(&self.allocated_bytes)?,
            freed_bytes: CountStats::of(&self.freed_bytes)?,
            freed_elsewhere_bytes: CountStats::of(&self.freed_elsewhere_bytes)?,
            peak_bytes: CountStats::of(&self.peak_bytes)?,
        })
    }
}

/// The memory of a run with `memory: on`: what every pass and every call
/// allocated on every thread, and how the figures were taken. Each range's
/// own are beside its time (`ranges[].memory`, `range_tree[].memory`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryTimings {
    /// One sample per measured pass: everything allocated from its first
    /// call's start to its last call's end, on every thread.
    pub per_pass: Option<FigureStats>,
    /// One sample per target call.
    pub per_call: Option<FigureStats>,
    /// What attributing one allocation (and its free) costs on this
    /// machine, measured when the run began: included in the times of a
    /// run with `memory: on`.
    pub cost_per_allocation_ns: f64,
    /// What a range costs more with memory attributed.
    pub cost_per_range_ns: f64,
    /// Blocks allocated in the capture that found no room in the table of
    /// blocks: their frees were counted as memory allocated elsewhere.
    pub untracked_blocks: u64,
    /// Said when some figures are missing or approximate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The memory of every range with one name (or one path).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RangeMemory {
    /// Totals over every recorded range, its children included.
    pub allocations: u64,
    pub allocated_bytes: u64,
    pub freed_bytes: u64,
    pub freed_elsewhere_bytes: u64,
    /// Allocations made while it was the innermost recorded range, and
    /// their bytes.
    pub self_allocations: u64,
    pub self_allocated_bytes: u64,
    /// The highest peak of live bytes of any one of its ranges, relative
    /// to the range's start.
    pub peak_bytes: u64,
    /// Per range: what one of them allocates.
    pub per_range: RangeFigureStats,
    /// Per measured pass: the sums over its ranges (0 in a pass without
    /// one), and the highest peak among them.
    pub per_pass: RangeFigureStats,
}

/// Statistics of a range's allocations, bytes and peak.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RangeFigureStats {
    pub allocations: CountStats,
    pub allocated_bytes: CountStats,
    pub self_allocations: CountStats,
    pub peak_bytes: CountStats,
}

/// One key's figures while they are gathered.
#[derive(Default)]
pub(crate) struct RangeMemoryBuilder {
    totals: Figures,
    self_allocations: u64,
    self_allocated_bytes: u64,
    per_range: [Vec<u64>; 4],
    /// Per pass: allocations, bytes, self allocations, peak.
    per_pass: Vec<[u64; 4]>,
}

impl RangeMemoryBuilder {
    pub(crate) fn new(passes: usize) -> RangeMemoryBuilder {
        RangeMemoryBuilder {
            per_pass: vec![[0; 4]; passes],
            ..RangeMemoryBuilder::default()
        }
    }

    pub(crate) fn add(&mut self, event: &MemoryEvent) {
        let figures = &event.inclusive;
        self.totals.allocations += figures.allocations;
        self.totals.allocated_bytes += figures.allocated_bytes;
        self.totals.freed_bytes += figures.freed_bytes;
        self.totals.freed_elsewhere_bytes += figures.freed_elsewhere_bytes;
        self.totals.peak_bytes = self.totals.peak_bytes.max(figures.peak_bytes);
        self.self_allocations += event.self_allocations;
        self.self_allocated_bytes += event.self_allocated_bytes;
        let values = [
            figures.allocations,
            figures.allocated_bytes,
            event.self_allocations,
            figures.peak_bytes,
        ];
        for (samples, value) in self.per_range.iter_mut().zip(values) {
            samples.push(value);
        }
        if let Some(pass) = self.per_pass.get_mut(event.pass as usize) {
            pass[0] += values[0];
            pass[1] += values[1];
            pass[2] += values[2];
            pass[3] = pass[3].max(values[3]);
        }
    }

    /// The per-pass sums: allocations and bytes of each pass.
    pub(crate) fn pass_sums(&self) -> (Vec<u64>, Vec<u64>) {
        (
            self.per_pass.iter().map(|p| p[0]).collect(),
            self.per_pass.iter().map(|p| p[1]).collect(),
        )
    }

    pub(crate) fn build(&self) -> Option<RangeMemory> {
        let stats_of = |columns: &[Vec<u64>; 4]| -> Option<RangeFigureStats> {
            Some(RangeFigureStats {
                allocations: CountStats::of_values(&columns[0])?,
                allocated_bytes: CountStats::of_values(&columns[1])?,
                self_allocations: CountStats::of_values(&columns[2])?,
                peak_bytes: CountStats::of_values(&columns[3])?,
            })
        };
        let per_pass_columns: [Vec<u64>; 4] =
            std::array::from_fn(|i| self.per_pass.iter().map(|p| p[i]).collect());
        Some(RangeMemory {
            allocations: self.totals.allocations,
            allocated_bytes: self.totals.allocated_bytes,
            freed_bytes: self.totals.freed_bytes,
            freed_elsewhere_bytes: self.totals.freed_elsewhere_bytes,
            self_allocations: self.self_allocations,
            self_allocated_bytes: self.self_allocated_bytes,
            peak_bytes: self.totals.peak_bytes,
            per_range: stats_of(&self.per_range)?,
            per_pass: stats_of(&per_pass_columns).unwrap_or_default(),
        })
    }
}

/// Every range name's memory in `log` over `passes` measured passes;
/// empty when the capture attributed none.
pub fn range_memory(log: &RangeLog, passes: usize) -> BTreeMap<String, NamedRangeMemory> {
    let mut by_name: BTreeMap<String, RangeMemoryBuilder> = BTreeMap::new();
    for thread in &log.threads {
        for (event, memory) in thread.events.iter().zip(&thread.memory) {
            let name = &thread.names[event.name as usize];
            by_name
                .entry(name.clone())
                .or_insert_with(|| RangeMemoryBuilder::new(passes))
                .add(memory);
        }
    }
    by_name
        .into_iter()
        .filter_map(|(name, builder)| {
            let memory = builder.build()?;
            let (allocations, bytes) = builder.pass_sums();
            Some((
                name,
                NamedRangeMemory {
                    memory,
                    allocations_per_pass: allocations,
                    allocated_bytes_per_pass: bytes,
                },
            ))
        })
        .collect()
}

/// A name's memory, and its per-pass sums for `samples.bin`.
#[derive(Debug, Clone)]
pub struct NamedRangeMemory {
    pub memory: RangeMemory,
    pub allocations_per_pass: Vec<u64>,
    pub allocated_bytes_per_pass: Vec<u64>,
}
