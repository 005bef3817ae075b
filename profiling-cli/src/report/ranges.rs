//! The range tree of a run as its page shows it: one row per range path,
//! for the range table and the flame graph.

use std::path::Path;

use profiling_core::driver::manifest::Manifest;
use profiling_core::driver::runner::Timings;
use profiling_core::stats::DurationStats;
use profiling_core::timing::memory::RangeMemory;
use profiling_core::timing::RangePathTimings;

/// One row of the range table and one frame of the flame graph.
pub(super) struct RangeRow {
    pub path: String,
    pub name: String,
    pub depth: usize,
    pub count: u64,
    pub inclusive_p50: u64,
    pub exclusive_total: u64,
    pub inclusive_total: u64,
    /// Per pass: inclusive and self time.
    pub inclusive_per_pass: Option<PerPass>,
    pub exclusive_per_pass: Option<PerPass>,
    /// GPU medians per call (inclusive, self), on runs with GPU timing.
    pub gpu_p50: Option<(u64, u64)>,
    /// Allocations and bytes per pass, all and its own, and the peak, on
    /// runs with `memory: on`.
    pub memory: Option<RowMemory>,
}

/// A range's time per pass: median, p90, p95 (absent from older
/// manifests) and mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct PerPass {
    pub p50: u64,
    pub p90: u64,
    pub p95: Option<u64>,
    pub mean: u64,
}

/// A range path's memory as the page shows it, per pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct RowMemory {
    pub allocations: f64,
    pub bytes: f64,
    pub self_allocations: f64,
    pub self_bytes: f64,
    pub peak: u64,
}

impl RowMemory {
    fn of(memory: &RangeMemory, passes: u64) -> RowMemory {
        let per_pass = |total: u64| total as f64 / passes.max(1) as f64;
        RowMemory {
            allocations: per_pass(memory.allocations),
            bytes: per_pass(memory.allocated_bytes),
            self_allocations: per_pass(memory.self_allocations),
            self_bytes: per_pass(memory.self_allocated_bytes),
            peak: memory.peak_bytes,
        }
    }
}

/// The rows in depth-first order (each range after the one it ran in),
/// with what the page says about where they came from.
pub(super) struct RangeRows {
    pub rows: Vec<RangeRow>,
    pub note: Option<String>,
    pub passes: u64,
    pub pass_mean: u64,
}

impl RangeRows {
    /// From `timings.range_tree`; a manifest without one (made before
    /// range paths) gets its tree from the `trace.json` in `dir`, and
    /// without that its ranges by name, each at the top.
    pub fn of(m: &Manifest, dir: Option<&Path>) -> RangeRows {
        let timings = &m.timings;
        if timings.range_tree.is_empty() && !timings.ranges.is_empty() {
            let trace = dir
                .and_then(|dir| std::fs::read(dir.join("trace.json")).ok())
                .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok());
            if let Some(tree) = trace
                .as_ref()
                .and_then(profiling_core::driver::trace::range_tree_of)
            {
                let mut rows = RangeRows::of_paths(timings, &tree.paths, None);
                rows.note = Some("This run was made before ranges were kept by path: the tree comes from its trace.json (the passes and events the trace holds).".to_owned());
                return rows;
            }
            return RangeRows::by_name(timings);
        }
        RangeRows::of_paths(
            timings,
            &timings.range_tree,
            timings.range_tree_note.clone(),
        )
    }

    fn of_paths(timings: &Timings, paths: &[RangePathTimings], note: Option<String>) -> RangeRows {
        let passes = timings.iterations.map_or(0, |p| p.count);
        let per_pass = |stats: &Option<DurationStats>| {
            stats.as_ref().map(|s| PerPass {
                p50: s.p50_ns,
                p90: s.p90_ns,
                p95: s.p95_ns,
                mean: s.mean_ns,
            })
        };
        let rows = paths
            .iter()
            .map(|entry| RangeRow {
                path: entry.path.clone(),
                name: entry.name.clone(),
                depth: entry.depth as usize,
                count: entry.count,
                inclusive_p50: entry.inclusive.p50_ns,
                exclusive_total: entry.exclusive.total_ns,
                inclusive_total: entry.inclusive.total_ns,
                inclusive_per_pass: per_pass(&entry.inclusive_per_pass),
                exclusive_per_pass: per_pass(&entry.exclusive_per_pass),
                gpu_p50: entry
                    .gpu
                    .as_ref()
                    .map(|g| (g.inclusive.p50_ns, g.exclusive.p50_ns)),
                memory: entry.memory.as_ref().map(|m| RowMemory::of(m, passes)),
            })
            .collect();
        RangeRows {
            rows,
            note,
            passes: timings.iterations.map_or(0, |p| p.count),
            pass_mean: timings.iterations.map_or(0, |p| p.mean_ns),
        }
    }

    fn by_name(timings: &Timings) -> RangeRows {
        let rows = timings
            .ranges
            .iter()
            .map(|entry| RangeRow {
                path: entry.name.clone(),
                name: entry.name.clone(),
                depth: 0,
                count: entry.count,
                inclusive_p50: entry.inclusive.p50_ns,
                exclusive_total: entry.exclusive.total_ns,
                inclusive_total: entry.inclusive.total_ns,
                inclusive_per_pass: None,
                exclusive_per_pass: None,
                gpu_p50: entry
                    .gpu
                    .as_ref()
                    .map(|g| (g.inclusive.p50_ns, g.exclusive.p50_ns)),
                memory: entry
                    .memory
                    .as_ref()
                    .map(|m| RowMemory::of(m, timings.iterations.map_or(0, |p| p.count))),
            })
            .collect();
        RangeRows {
            rows,
            note: Some("This run was made before ranges were recorded by path: they are listed by name, without their nesting; re-run it for the tree.".to_owned()),
            passes: timings.iterations.map_or(0, |p| p.count),
            pass_mean: timings.iterations.map_or(0, |p| p.mean_ns),
        }
    }
}
