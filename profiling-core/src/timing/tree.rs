//! Ranges by their path: the same name under two parents is two entries.
//!
//! A range's path is the names of the recorded ranges it is nested in on
//! its thread, outermost first, then its own, joined by `/`
//! (`preprocess/letterbox/resize`); the pass and capture ranges are not
//! part of it. Paths are rebuilt after the capture from the events each
//! thread kept (their start and depth), so they cost the measured loop
//! nothing; ranges past a thread's event buffer are counted only by name
//! (`timings.ranges`), and [`RangeTree::note`] says so.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::log::RangeLog;
use super::samples::SampleSet;
use crate::stats::DurationStats;
use crate::timing::memory::RangeMemoryBuilder;

/// The timings of every range with one path, over all threads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RangePathTimings {
    /// Names from the outermost recorded range down, joined by `/`.
    pub path: String,
    pub name: String,
    /// 0 for a range with no recorded range around it.
    pub depth: u32,
    /// Ranges closed with this path.
    pub count: u64,
    /// Per range, opening to closing.
    pub inclusive: DurationStats,
    /// Per range, without the recorded ranges inside it.
    pub exclusive: DurationStats,
    /// Per measured pass: the inclusive time of all its ranges with this
    /// path (0 in a pass without one).
    pub inclusive_per_pass: Option<DurationStats>,
    /// Per measured pass: their self time.
    pub exclusive_per_pass: Option<DurationStats>,
    /// The device's time for the same ranges, on runs with GPU timing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<super::aggregate::GpuRangeTimings>,
    /// What the same ranges allocated, on runs with `memory: on`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<crate::timing::memory::RangeMemory>,
}

/// Every path of a capture, as a tree in depth-first order: each range
/// after its parent, siblings by inclusive total, largest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RangeTree {
    pub paths: Vec<RangePathTimings>,
    /// Said when some ranges are not in the tree (past a thread's event
    /// buffer) or some passes have no per-pass figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

struct Node {
    parent: Option<usize>,
    name: String,
    depth: u32,
    inclusive: Vec<u64>,
    exclusive: Vec<u64>,
    /// Per pass (by index into the passes), when the pass is known.
    inclusive_per_pass: Vec<u64>,
    exclusive_per_pass: Vec<u64>,
    /// GPU inclusive and exclusive times of the ranges that have them.
    gpu_inclusive: Vec<u64>,
    gpu_exclusive: Vec<u64>,
    /// The memory figures of the ranges that have them.
    memory: Option<RangeMemoryBuilder>,
}

impl RangeTree {
    /// The tree of `log`'s kept events; `passes` are the start and end of
    /// the measured passes whose per-pass figures are wanted.
    pub fn build(log: &RangeLog, passes: &[(u64, u64)]) -> RangeTree {
        RangeTree::build_with_gpu(log, passes, None)
    }

    /// [`RangeTree::build`], with each path's GPU time from `gpu` (the
    /// device events of the same capture).
    pub fn build_with_gpu(
        log: &RangeLog,
        passes: &[(u64, u64)],
        gpu: Option<&super::gpu::GpuCapture>,
    ) -> RangeTree {
        let mut nodes: Vec<Node> = Vec::new();
        let mut index: HashMap<(Option<usize>, &str), usize> = HashMap::new();
        let mut outside_passes = 0u64;
        let mut orphans = 0u64;
        for (thread_index, thread) in log.threads.iter().enumerate() {
            // The GPU times of this thread's events, by event index.
            let mut gpu_of: Vec<Option<(u64, u64)>> = Vec::new();
            if let Some(spans) = gpu.and_then(|g| g.spans.get(thread_index)) {
                gpu_of.resize(thread.events.len(), None);
                for span in spans {
                    if let Some(slot) = gpu_of.get_mut(span.event) {
                        *slot = Some((span.duration_ns, span.exclusive_ns));
                    }
                }
            }
            let mut order: Vec<usize> = (0..thread.events.len()).collect();
            // Opening order: a parent opens before (or with) its children.
            order.sort_by_key(|&i| (thread.events[i].start_ns, thread.events[i].depth));
            // The open ranges around the event: node and end.
            let mut stack: Vec<(usize, u64)> = Vec::new();
            for i in order {
                let event = &thread.events[i];
                let depth = usize::from(event.depth);
                stack.truncate(depth);
                while stack.last().is_some_and(|&(_, end)| end < event.start_ns) {
                    stack.pop();
                }
                if stack.len() != depth {
                    // Its parent closed past the event buffer: no path.
                    orphans += 1;
                    continue;
                }
                let parent = stack.last().map(|&(node, _)| node);
                let name = thread.names[event.name as usize].as_str();
                let node = *index.entry((parent, name)).or_insert_with(|| {
                    nodes.push(Node {
                        parent,
                        name: name.to_owned(),
                        depth: stack.len() as u32,
                        inclusive: Vec::new(),
                        exclusive: Vec::new(),
                        inclusive_per_pass: vec![0; passes.len()],
                        exclusive_per_pass: vec![0; passes.len()],
                        gpu_inclusive: Vec::new(),
                        gpu_exclusive: Vec::new(),
                        memory: None,
                    });
                    nodes.len() - 1
                });
                stack.push((node, event.start_ns + event.inclusive_ns));
                let entry = &mut nodes[node];
                entry.inclusive.push(event.inclusive_ns);
                entry.exclusive.push(event.exclusive_ns);
                if let Some(&Some((inclusive, exclusive))) = gpu_of.get(i) {
                    entry.gpu_inclusive.push(inclusive);
                    entry.gpu_exclusive.push(exclusive);
                }
                if let Some(memory) = thread.memory.get(i) {
                    entry
                        .memory
                        .get_or_insert_with(|| RangeMemoryBuilder::new(passes.len()))
                        .add(memory);
                }
                match pass_of(passes, event.start_ns) {
                    Some(pass) => {
                        entry.inclusive_per_pass[pass] += event.inclusive_ns;
                        entry.exclusive_per_pass[pass] += event.exclusive_ns;
                    }
                    None => outside_passes += 1,
                }
            }
        }
        let mut notes = Vec::new();
        let overflowed = log.threads.iter().map(|t| t.overflowed()).sum::<u64>() + orphans;
        if overflowed > 0 {
            notes.push(format!(
                "{overflowed} ranges past (or inside a range past) the first {} of their thread are counted by name only (timings.ranges), not by path",
                super::recorder::EVENTS_PER_THREAD
            ));
        }
        if outside_passes > 0 && !passes.is_empty() {
            notes.push(format!(
                "{outside_passes} ranges fell outside the passes whose bounds were kept: they count in the per-range figures, not the per-pass ones"
            ));
        }
        RangeTree {
            paths: ordered(&nodes)
                .into_iter()
                .map(|i| timings_of(&nodes, i, !passes.is_empty()))
                .collect(),
            note: (!notes.is_empty()).then(|| notes.join("; ")),
        }
    }
}

/// The pass whose bounds hold `start`, by binary search.
fn pass_of(passes: &[(u64, u64)], start: u64) -> Option<usize> {
    let after = passes.partition_point(|&(begin, _)| begin <= start);
    let index = after.checked_sub(1)?;
    (start <= passes[index].1).then_some(index)
}

/// Depth-first order, siblings by inclusive total, largest first, then by
/// name.
fn ordered(nodes: &[Node]) -> Vec<usize> {
    let parents: Vec<Option<usize>> = nodes.iter().map(|n| n.parent).collect();
    depth_first(
        &parents,
        |i| nodes[i].inclusive.iter().map(|&v| u128::from(v)).sum(),
        |i| &nodes[i].name,
    )
}

/// The nodes of a forest given by each one's parent, depth-first: each
/// after its parent, siblings by `weight`, largest first, then by `name`.
pub fn depth_first<'a>(
    parents: &[Option<usize>],
    weight: impl Fn(usize) -> u128,
    name: impl Fn(usize) -> &'a str,
) -> Vec<usize> {
    let mut children: HashMap<Option<usize>, Vec<usize>> = HashMap::new();
    for (i, &parent) in parents.iter().enumerate() {
        children.entry(parent).or_default().push(i);
    }
    for list in children.values_mut() {
        list.sort_by(|&a, &b| weight(b).cmp(&weight(a)).then_with(|| name(a).cmp(name(b))));
    }
    let mut order = Vec::with_capacity(parents.len());
    let mut pending: Vec<usize> = children.get(&None).cloned().unwrap_or_default();
    pending.reverse();
    while let Some(node) = pending.pop() {
        order.push(node);
        if let Some(list) = children.get(&Some(node)) {
            pending.extend(list.iter().rev());
        }
    }
    order
}

/// The names from the root of `node`'s tree down to it, joined by `/`.
pub fn joined_path<'a>(
    parents: &[Option<usize>],
    name: impl Fn(usize) -> &'a str,
    mut node: usize,
) -> String {
    let mut names = vec![name(node)];
    while let Some(parent) = parents[node] {
        names.push(name(parent));
        node = parent;
    }
    names.reverse();
    names.join("/")
}

fn path_of(nodes: &[Node], node: usize) -> String {
    let parents: Vec<Option<usize>> = nodes.iter().map(|n| n.parent).collect();
    joined_path(&parents, |i| &nodes[i].name, node)
}

fn stats_of(values: &[u64]) -> Option<DurationStats> {
    SampleSet::of_values(values).stats()
}

fn timings_of(nodes: &[Node], i: usize, per_pass: bool) -> RangePathTimings {
    let node = &nodes[i];
    RangePathTimings {
        path: path_of(nodes, i),
        name: node.name.clone(),
        depth: node.depth,
        count: node.inclusive.len() as u64,
        inclusive: stats_of(&node.inclusive).unwrap_or_else(empty),
        exclusive: stats_of(&node.exclusive).unwrap_or_else(empty),
        inclusive_per_pass: per_pass
            .then(|| stats_of(&node.inclusive_per_pass))
            .flatten(),
        exclusive_per_pass: per_pass
            .then(|| stats_of(&node.exclusive_per_pass))
            .flatten(),
        gpu: stats_of(&node.gpu_inclusive).and_then(|inclusive| {
            Some(super::aggregate::GpuRangeTimings {
                count: node.gpu_inclusive.len() as u64,
                inclusive,
                exclusive: stats_of(&node.gpu_exclusive)?,
            })
        }),
        memory: node.memory.as_ref().and_then(RangeMemoryBuilder::build),
    }
}

fn empty() -> DurationStats {
    DurationStats::from_samples(&mut [0]).expect("one sample")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::log::{RangeEvent, ThreadRanges};

    /// A thread's events from (name, depth, start, inclusive, exclusive),
    /// in the order they close.
    fn thread(names: &[&str], events: &[(u32, u16, u64, u64, u64)]) -> ThreadRanges {
        ThreadRanges {
            thread: 1,
            thread_name: "main".to_owned(),
            names: names.iter().map(|n| n.to_string()).collect(),
            events: events
                .iter()
                .map(
                    |&(name, depth, start_ns, inclusive_ns, exclusive_ns)| RangeEvent {
                        name,
                        depth,
                        start_ns,
                        inclusive_ns,
                        exclusive_ns,
                        gpu_start: crate::timing::log::NO_EVENT,
                        gpu_end: crate::timing::log::NO_EVENT,
                    },
                )
                .collect(),
            overflow: Vec::new(),
            memory: Vec::new(),
        }
    }

    /// Two passes of: preprocess { resize, pad }, postprocess { resize }.
    fn log() -> RangeLog {
        let names = ["preprocess", "resize", "pad", "postprocess"];
        let mut events = Vec::new();
        for pass in 0..2u64 {
            let t = pass * 1_000;
            events.extend([
                (1, 1, t + 10, 30, 30),  // preprocess/resize
                (2, 1, t + 40, 20, 20),  // preprocess/pad
                (0, 0, t, 100, 50),      // preprocess
                (1, 1, t + 110, 5, 5),   // postprocess/resize
                (3, 0, t + 100, 40, 35), // postprocess
            ]);
        }
        RangeLog {
            threads: vec![thread(&names, &events)],
            ..RangeLog::default()
        }
    }

    #[test]
    fn the_same_name_under_two_parents_is_two_paths_in_tree_order() {
        let tree = RangeTree::build(&log(), &[(0, 999), (1_000, 1_999)]);
        let rows: Vec<(&str, u32, u64, u64, u64)> = tree
            .paths
            .iter()
            .map(|p| {
                (
                    p.path.as_str(),
                    p.depth,
                    p.count,
                    p.inclusive.p50_ns,
                    p.exclusive.total_ns,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("preprocess", 0, 2, 100, 100),
                ("preprocess/resize", 1, 2, 30, 60),
                ("preprocess/pad", 1, 2, 20, 40),
                ("postprocess", 0, 2, 40, 70),
                ("postprocess/resize", 1, 2, 5, 10),
            ]
        );
        let resize = &tree.paths[1];
        assert_eq!(resize.inclusive_per_pass.unwrap().p50_ns, 30);
        assert_eq!(tree.note, None);
    }

    #[test]
    fn per_pass_figures_sum_a_pass_and_count_passes_without_the_range() {
        // Two ranges in the first pass, none in the second.
        let events = [(0, 0, 10, 7, 7), (0, 0, 20, 5, 5)];
        let log = RangeLog {
            threads: vec![thread(&["step"], &events)],
            ..RangeLog::default()
        };
        let tree = RangeTree::build(&log, &[(0, 99), (100, 199)]);
        let per_pass = tree.paths[0].inclusive_per_pass.unwrap();
        assert_eq!(
            (per_pass.count, per_pass.min_ns, per_pass.max_ns),
            (2, 0, 12)
        );
        // Outside every kept pass: counted, and said.
        let tree = RangeTree::build(&log, &[(15, 99)]);
        assert_eq!(tree.paths[0].count, 2);
        assert!(tree
            .note
            .unwrap()
            .starts_with("1 ranges fell outside the passes"));
        assert_eq!(pass_of(&[(0, 9), (20, 29)], 15), None);
        assert_eq!(pass_of(&[(0, 9), (20, 29)], 20), Some(1));
    }

    #[test]
    fn paths_come_depth_first_with_their_self_time_and_no_per_pass_figures_without_passes() {
        let tree = RangeTree::build(&log(), &[]);
        let paths: Vec<(&str, u64)> = tree
            .paths
            .iter()
            .map(|p| (p.path.as_str(), p.exclusive.total_ns))
            .collect();
        assert_eq!(
            paths,
            [
                ("preprocess", 100),
                ("preprocess/resize", 60),
                ("preprocess/pad", 40),
                ("postprocess", 70),
                ("postprocess/resize", 10),
            ]
        );
        assert_eq!(
            tree.paths[0].inclusive_per_pass, None,
            "no passes, no per-pass figures"
        );
    }

    #[test]
    fn a_range_whose_parent_was_not_kept_has_no_path() {
        // `child` at depth 1 in the second pass; its parent closed after
        // the buffer was full.
        let events = [(0, 0, 0, 100, 100), (1, 1, 1_010, 5, 5)];
        let log = RangeLog {
            threads: vec![thread(&["parent", "child"], &events)],
            ..RangeLog::default()
        };
        let tree = RangeTree::build(&log, &[]);
        let paths: Vec<&str> = tree.paths.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["parent"]);
        assert!(tree.note.unwrap().starts_with("1 ranges past"));
    }

    #[test]
    fn threads_merge_by_path() {
        let mut log = log();
        let mut second = thread(&["postprocess"], &[(0, 0, 5_000, 9, 9)]);
        second.thread = 2;
        log.threads.push(second);
        let tree = RangeTree::build(&log, &[]);
        let post = tree.paths.iter().find(|p| p.path == "postprocess").unwrap();
        assert_eq!(post.count, 3);
    }
}
