//! `trace.json`: the capture's ranges in the Trace Event Format, which
//! Perfetto and `chrome://tracing` open.
//!
//! One complete (`"ph": "X"`) event per range, on its thread, nested by
//! time; the capture range and each measured pass (`iteration <i>`) on the
//! capturing thread, the passes labelled with their index. On runs with
//! GPU timing, a GPU track per host thread holds the GPU time of its ranges
//! (`"cat": "gpu"`), on the device's timeline. Bounded: past
//! [`MAX_EVENTS`] events the trace is cut, and says so.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::driver::runner::CaptureRecord;

/// The most events one trace holds (about 100 bytes each).
pub const MAX_EVENTS: usize = 200_000;

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceSummary {
    pub path: std::path::PathBuf,
    /// Range and pass events written (metadata events aside).
    pub events: u64,
    /// True when ranges or passes were left out to bound the size.
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Thread ids of the GPU tracks: this plus the host thread's id, after
/// every host thread in the viewer.
pub const GPU_TRACK_BASE: u64 = 1 << 32;

fn micros(ns: u64, origin: u64) -> f64 {
    ns.saturating_sub(origin) as f64 / 1_000.0
}

/// The counter track of a run with `memory: on`.
pub const LIVE_BYTES: &str = "live bytes";

/// With `memory: on`: the pass's live bytes (allocated on every thread
/// since the pass began, less what was freed of them) at each pass's start
/// and at every range boundary, in time order.
pub fn live_bytes(capture: &CaptureRecord) -> Vec<(u64, i64)> {
    let log = &capture.ranges;
    if log.threads.iter().all(|t| t.memory.is_empty()) {
        return Vec::new();
    }
    let mut points: Vec<(u64, i64)> = capture
        .passes
        .iter()
        .map(|&(start, _)| (start, 0))
        .collect();
    for thread in &log.threads {
        for (event, memory) in thread.events.iter().zip(&thread.memory) {
            points.push((event.start_ns, memory.live_at_open.max(0)));
            points.push((
                event.start_ns + event.inclusive_ns,
                memory.live_at_close.max(0),
            ));
        }
    }
    points.sort_by_key(|&(ns, _)| ns);
    points
}

/// The trace of a capture as a JSON document (`title` names the process).
pub fn trace_document(
    capture: &CaptureRecord,
    capture_name: &str,
    title: &str,
) -> (serde_json::Value, u64, bool) {
    let log = &capture.ranges;
    let origin = log.start_ns;
    let pid = std::process::id();
    let main = log.capture_thread;
    let mut events = vec![
        json!({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": title}}),
        json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": main, "args": {"name": "runner"}}),
    ];
    for thread in &log.threads {
        if thread.thread != main {
            events.push(json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": thread.thread, "args": {"name": thread.thread_name}}));
        }
    }
    let mut written: u64 = 0;
    let mut truncated = false;
    let mut push = |event: serde_json::Value, events: &mut Vec<serde_json::Value>| {
        if (written as usize) < MAX_EVENTS {
            events.push(event);
            written += 1;
        } else {
            truncated = true;
        }
    };
    push(
        json!({"name": capture_name, "cat": "capture", "ph": "X", "pid": pid, "tid": main,
               "ts": micros(log.start_ns, origin), "dur": micros(log.end_ns, log.start_ns)}),
        &mut events,
    );
    for (index, (start, end)) in capture.passes.iter().enumerate() {
        push(
            json!({"name": format!("{} {index}", capture.pass_name), "cat": "pass", "ph": "X", "pid": pid, "tid": main,
                   "ts": micros(*start, origin), "dur": micros(*end, *start), "args": {"pass": index}}),
            &mut events,
        );
    }
    let passes_missing = capture.pass_count as usize > capture.passes.len();
    for thread in &log.threads {
        for (index, event) in thread.events.iter().enumerate() {
            let mut args = json!({"exclusive_us": event.exclusive_ns as f64 / 1_000.0});
            if let Some(memory) = thread.memory.get(index) {
                let figures = &memory.inclusive;
                args["allocations"] = json!(figures.allocations);
                args["allocated_bytes"] = json!(figures.allocated_bytes);
                args["freed_bytes"] = json!(figures.freed_bytes);
                args["freed_elsewhere_bytes"] = json!(figures.freed_elsewhere_bytes);
                args["peak_bytes"] = json!(figures.peak_bytes);
                args["self_allocations"] = json!(memory.self_allocations);
            }
            push(
                json!({"name": thread.names[event.name as usize], "cat": "range", "ph": "X", "pid": pid, "tid": thread.thread,
                       "ts": micros(event.start_ns, origin), "dur": event.inclusive_ns as f64 / 1_000.0,
                       "args": args}),
                &mut events,
            );
        }
    }
    for (ns, live) in live_bytes(capture) {
        push(
            json!({"name": LIVE_BYTES, "cat": "memory", "ph": "C", "pid": pid,
                   "ts": micros(ns, origin), "args": {LIVE_BYTES: live}}),
            &mut events,
        );
    }
    // The GPU track: per host thread that recorded device events, the GPU
    // time of its ranges on the device's timeline, which starts at the
    // capture's first event (recorded when the capture opened, on an idle
    // stream after the synchronize before the capture).
    if let Some(gpu) = &capture.gpu {
        let runner_track = GPU_TRACK_BASE + u64::from(main);
        let mut named = std::collections::BTreeSet::new();
        let mut name_track = |tid: u64, label: &str, events: &mut Vec<serde_json::Value>| {
            if named.insert(tid) {
                events.push(json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                                   "args": {"name": format!("GPU {} (ranges of {label})", gpu.device)}}));
                events.push(
                    json!({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                                   "args": {"sort_index": tid}}),
                );
            }
        };
        // The measured passes, on the runner's track.
        for &(index, offset, duration) in &gpu.pass_spans {
            name_track(runner_track, "runner", &mut events);
            push(
                json!({"name": format!("{} {index}", capture.pass_name), "cat": "gpu pass", "ph": "X", "pid": pid, "tid": runner_track,
                       "ts": offset as f64 / 1_000.0, "dur": duration as f64 / 1_000.0, "args": {"pass": index}}),
                &mut events,
            );
        }
        for (thread, spans) in log.threads.iter().zip(&gpu.spans) {
            let tid = GPU_TRACK_BASE + u64::from(thread.thread);
            for span in spans {
                let label = if thread.thread == main {
                    "runner"
                } else {
                    thread.thread_name.as_str()
                };
                name_track(tid, label, &mut events);
                let event = &thread.events[span.event];
                push(
                    json!({"name": thread.names[event.name as usize], "cat": "gpu", "ph": "X", "pid": pid, "tid": tid,
                           "ts": span.offset_ns as f64 / 1_000.0, "dur": span.duration_ns as f64 / 1_000.0,
                           "args": {"host_us": event.inclusive_ns as f64 / 1_000.0}}),
                    &mut events,
                );
            }
        }
    }
    let overflowed: u64 = log.threads.iter().map(|t| t.overflowed()).sum();
    let truncated = truncated || passes_missing || overflowed > 0;
    let document = json!({
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {"capture_range": capture_name, "truncated": truncated},
    });
    (document, written, truncated)
}

/// The trace of `capture` as the bytes of `trace.json`, and what the
/// manifest says of it once it is written to `path`.
pub(crate) fn render_trace(
    path: &Path,
    capture: &CaptureRecord,
    capture_name: &str,
    title: &str,
) -> std::io::Result<(Vec<u8>, TraceSummary)> {
    let (document, events, truncated) = trace_document(capture, capture_name, title);
    let mut bytes = Vec::new();
    serde_json::to_writer(&mut bytes, &document).map_err(std::io::Error::other)?;
    bytes.flush()?;
    let note = truncated.then(|| {
        format!(
            "the trace holds the first {} passes and up to {} events per thread ({MAX_EVENTS} in all); the manifest's timings count every range",
            crate::driver::runner::PASSES_KEPT,
            crate::timing::recorder::EVENTS_PER_THREAD
        )
    });
    let summary = TraceSummary {
        path: path.to_path_buf(),
        events,
        truncated,
        note,
    };
    Ok((bytes, summary))
}

/// The live-bytes track of measured pass `pass` in a `trace.json`
/// document: (µs from the pass's start, bytes), in time order; empty when
/// the run attributed no memory.
pub fn live_bytes_of_pass(document: &serde_json::Value, pass: u64) -> Vec<(f64, u64)> {
    let Some(events) = document
        .get("traceEvents")
        .and_then(serde_json::Value::as_array)
    else {
        return Vec::new();
    };
    let number =
        |event: &serde_json::Value, key: &str| event.get(key).and_then(serde_json::Value::as_f64);
    let bounds = events.iter().find_map(|event| {
        let is_pass = event.get("cat").and_then(serde_json::Value::as_str) == Some("pass")
            && event
                .pointer("/args/pass")
                .and_then(serde_json::Value::as_u64)
                == Some(pass);
        is_pass.then(|| Some((number(event, "ts")?, number(event, "dur")?)))?
    });
    let Some((start, duration)) = bounds else {
        return Vec::new();
    };
    let mut points: Vec<(f64, u64)> = events
        .iter()
        .filter(|event| event.get("ph").and_then(serde_json::Value::as_str) == Some("C"))
        .filter(|event| event.get("name").and_then(serde_json::Value::as_str) == Some(LIVE_BYTES))
        .filter_map(|event| {
            let ts = number(event, "ts")?;
            let bytes = event.pointer(&format!("/args/{LIVE_BYTES}"))?.as_u64()?;
            (start..=start + duration)
                .contains(&ts)
                .then_some((ts - start, bytes))
        })
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// The range tree of a `trace.json` document: each thread's range events
/// nested by their times, the pass events as the passes. For runs whose
/// manifest has no `timings.range_tree` (made before ranges were kept by
/// path). `None` when the document holds no range.
pub fn range_tree_of(document: &serde_json::Value) -> Option<crate::timing::RangeTree> {
    use crate::timing::log::{RangeEvent, RangeLog, ThreadRanges};
    let events = document.get("traceEvents")?.as_array()?;
    let ns = |event: &serde_json::Value, key: &str| -> Option<u64> {
        let micros = event.get(key)?.as_f64()?;
        Some((micros * 1_000.0).round().max(0.0) as u64)
    };
    let mut passes: Vec<(u64, u64)> = Vec::new();
    // By thread: (name, start, inclusive, exclusive).
    let mut threads: std::collections::BTreeMap<u64, Vec<(String, u64, u64, u64)>> =
        Default::default();
    for event in events {
        let category = event.get("cat").and_then(serde_json::Value::as_str);
        let (Some(start), Some(duration)) = (ns(event, "ts"), ns(event, "dur")) else {
            continue;
        };
        match category {
            Some("pass") => passes.push((start, start + duration)),
            Some("range") => {
                let name = event.get("name").and_then(serde_json::Value::as_str)?;
                let tid = event
                    .get("tid")
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0);
                let exclusive = event
                    .get("args")
                    .and_then(|args| ns(args, "exclusive_us"))
                    .unwrap_or(duration);
                threads
                    .entry(tid)
                    .or_default()
                    .push((name.to_owned(), start, duration, exclusive));
            }
            _ => {}
        }
    }
    if threads.is_empty() {
        return None;
    }
    passes.sort_unstable();
    let mut log = RangeLog::default();
    for (tid, mut ranges) in threads {
        // Outer ranges first: by start, then the longer one.
        ranges.sort_by(|a, b| a.1.cmp(&b.1).then(b.2.cmp(&a.2)));
        let mut names: Vec<String> = Vec::new();
        let mut ends: Vec<u64> = Vec::new();
        let mut recorded = Vec::with_capacity(ranges.len());
        for (name, start, inclusive, exclusive) in ranges {
            while ends.last().is_some_and(|&end| end <= start) {
                ends.pop();
            }
            let index = match names.iter().position(|n| *n == name) {
                Some(index) => index,
                None => {
                    names.push(name);
                    names.len() - 1
                }
            };
            recorded.push(RangeEvent {
                name: index as u32,
                depth: ends.len().min(usize::from(u16::MAX)) as u16,
                start_ns: start,
                inclusive_ns: inclusive,
                exclusive_ns: exclusive,
                gpu_start: crate::timing::log::NO_EVENT,
                gpu_end: crate::timing::log::NO_EVENT,
            });
            ends.push(start + inclusive);
        }
        log.threads.push(ThreadRanges {
            thread: tid as u32,
            thread_name: String::new(),
            names,
            events: recorded,
            overflow: Vec::new(),
            memory: Vec::new(),
        });
    }
    Some(crate::timing::RangeTree::build(&log, &passes))
}

#[cfg(test)]
mod tree_tests {
    #[test]
    fn a_trace_gives_back_the_tree_of_its_ranges() {
        let document = serde_json::json!({"traceEvents": [
            {"cat": "pass", "name": "iteration 0", "ph": "X", "ts": 0.0, "dur": 100.0, "tid": 1},
            {"cat": "range", "name": "resize", "ph": "X", "ts": 1.0, "dur": 30.0, "tid": 1, "args": {"exclusive_us": 30.0}},
            {"cat": "range", "name": "preprocess", "ph": "X", "ts": 1.0, "dur": 50.0, "tid": 1, "args": {"exclusive_us": 20.0}},
            {"cat": "range", "name": "resize", "ph": "X", "ts": 60.0, "dur": 10.0, "tid": 1, "args": {"exclusive_us": 10.0}},
        ]});
        let tree = super::range_tree_of(&document).unwrap();
        let paths: Vec<(&str, u64)> = tree
            .paths
            .iter()
            .map(|p| (p.path.as_str(), p.inclusive.total_ns))
            .collect();
        assert_eq!(
            paths,
            [
                ("preprocess", 50_000),
                ("preprocess/resize", 30_000),
                ("resize", 10_000)
            ]
        );
        assert_eq!(tree.paths[0].inclusive_per_pass.map(|s| s.count), Some(1));
        assert!(super::range_tree_of(&serde_json::json!({"traceEvents": []})).is_none());
    }
}
