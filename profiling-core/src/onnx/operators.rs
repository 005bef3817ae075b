//! Each operator of a model run as a range: ONNX Runtime's profiler times
//! every kernel of every run; once a capture ends, the kernels of the runs
//! made inside it become child ranges of the range each run opened, named
//! by operator type, in the capture's log (so the manifest, the summary,
//! the page and `trace.json` show them as they show any range).
//!
//! The profiler writes its file only when profiling ends, which is for good
//! in a session: the first capture that holds runs of the model ends it
//! and gets the operator ranges; later captures of the same session hold
//! the model's range alone.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use ort::session::Session;

use crate::memory::attribution::MemoryEvent;
use crate::timing::external::CaptureHook;
use crate::timing::log::{RangeEvent, RangeLog, NO_EVENT};

/// The directory and file prefix the runtime's profiler writes to (a
/// directory of its own, removed once read).
#[derive(Debug)]
pub struct OperatorProfile {
    directory: PathBuf,
}

impl OperatorProfile {
    pub(super) fn new() -> anyhow::Result<OperatorProfile> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let directory = std::env::temp_dir().join(format!(
            "profile-cli-onnx-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&directory).with_context(|| {
            format!(
                "creating {} for ONNX Runtime's profile",
                directory.display()
            )
        })?;
        Ok(OperatorProfile { directory })
    }

    pub(super) fn prefix(&self) -> PathBuf {
        self.directory.join("operators")
    }
}

impl Drop for OperatorProfile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.directory);
    }
}

/// One run made while a capture recorded.
#[derive(Debug, Clone, Copy)]
pub(super) struct Call {
    /// Its index among all the session's runs (warmup included).
    run: u64,
    thread: Option<u32>,
    start_ns: u64,
    end_ns: u64,
}

/// A model's profiler, asked for its operators when a capture ends.
pub(super) struct Attached {
    session: Arc<Mutex<Session>>,
    profile: OperatorProfile,
    runs: AtomicU64,
    calls: Mutex<Vec<Call>>,
    /// Set once profiling has ended (the session profiles no more).
    ended: std::sync::atomic::AtomicBool,
}

/// Starts handing `session`'s operators to the captures.
pub(super) fn attach(profile: OperatorProfile, session: Arc<Mutex<Session>>) -> Arc<Attached> {
    let attached = Arc::new(Attached {
        session,
        profile,
        runs: AtomicU64::new(0),
        calls: Mutex::new(Vec::with_capacity(4096)),
        ended: std::sync::atomic::AtomicBool::new(false),
    });
    let hook: Arc<dyn CaptureHook> = attached.clone();
    crate::timing::external::register(Arc::downgrade(&hook));
    attached
}

/// A run in progress: its index and its start.
#[derive(Debug, Clone, Copy)]
pub(super) struct Started {
    run: u64,
    start_ns: u64,
}

impl Attached {
    #[inline]
    pub(super) fn call_begins(&self) -> Started {
        Started {
            run: self.runs.fetch_add(1, Ordering::Relaxed),
            start_ns: crate::timing::now_ns(),
        }
    }

    #[inline]
    pub(super) fn call_ends(&self, started: Started) {
        let end_ns = crate::timing::now_ns();
        if !crate::timing::recorder::is_recording() || self.ended.load(Ordering::Relaxed) {
            return;
        }
        let call = Call {
            run: started.run,
            thread: crate::timing::recorder::current_thread(),
            start_ns: started.start_ns,
            end_ns,
        };
        crate::memory::attribution::unattributed(|| {
            self.calls
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(call);
        });
    }

    /// Ends the session's profiling and reads its file.
    fn read_profile(&self) -> anyhow::Result<Vec<ProfileEvent>> {
        let file = {
            let mut session = self.session.lock().unwrap_or_else(|e| e.into_inner());
            session
                .end_profiling()
                .map_err(|e| anyhow::anyhow!("ending ONNX Runtime's profiling: {e}"))?
        };
        let path = Path::new(&file);
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.profile.directory.join(path)
        };
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading ONNX Runtime's profile {}", path.display()))?;
        let _ = std::fs::remove_file(&path);
        parse_profile(&text).with_context(|| format!("ONNX Runtime's profile {}", path.display()))
    }
}

impl CaptureHook for Attached {
    fn capture_ended(&self, log: &mut RangeLog) {
        let calls = std::mem::take(&mut *self.calls.lock().unwrap_or_else(|e| e.into_inner()));
        if calls.is_empty() || self.ended.swap(true, Ordering::SeqCst) {
            return;
        }
        match self.read_profile() {
            Ok(events) => add_operator_ranges(log, &calls, &events),
            Err(error) => eprintln!("warning: no operator ranges: {error:#}"),
        }
    }
}

/// What the runtime's profile says: a run of the model, or one kernel.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum ProfileEvent {
    Run { ts_us: u64, dur_us: u64 },
    Kernel { ts_us: u64, dur_us: u64, op: String },
}

/// The runs and kernels of a profile (a JSON array of trace events: a
/// `model_run` event of category `Session` per run, a `<node>_kernel_time`
/// event of category `Node` per kernel, with `args.op_name`).
pub(super) fn parse_profile(text: &str) -> anyhow::Result<Vec<ProfileEvent>> {
    let value: serde_json::Value = serde_json::from_str(text).context("not JSON")?;
    let items = value.as_array().context("not an array of trace events")?;
    let mut events = Vec::new();
    for item in items {
        let field = |key: &str| item.get(key).and_then(serde_json::Value::as_u64);
        let (Some(ts_us), Some(dur_us)) = (field("ts"), field("dur")) else {
            continue;
        };
        let name = item
            .get("name")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        match item.get("cat").and_then(serde_json::Value::as_str) {
            Some("Session") if name == "model_run" => {
                events.push(ProfileEvent::Run { ts_us, dur_us })
            }
            Some("Node") if name.ends_with("_kernel_time") => {
                let op = item
                    .get("args")
                    .and_then(|a| a.get("op_name"))
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("operator")
                    .to_owned();
                events.push(ProfileEvent::Kernel { ts_us, dur_us, op });
            }
            _ => {}
        }
    }
    Ok(events)
}

/// Adds, for each call, the kernels of its run as children of the
/// innermost recorded range around the call on its thread: placed where
/// they ran inside the run, the run centred in the call (the call's time
/// past the run's is the runtime's own, before and after), cut to the
/// call. The parent's self time loses what its new children took.
pub(super) fn add_operator_ranges(log: &mut RangeLog, calls: &[Call], events: &[ProfileEvent]) {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    let mut kernels: Vec<(u64, u64, &str)> = Vec::new();
    for event in events {
        match event {
            ProfileEvent::Run { ts_us, dur_us } => runs.push((*ts_us, *dur_us)),
            ProfileEvent::Kernel { ts_us, dur_us, op } => kernels.push((*ts_us, *dur_us, op)),
        }
    }
    runs.sort_unstable();
    kernels.sort_by_key(|k| k.0);
    for thread in &mut log.threads {
        // (index of the parent event, children) for this thread's calls.
        let mut added: Vec<(usize, Vec<RangeEvent>)> = Vec::new();
        for call in calls.iter().filter(|c| c.thread == Some(thread.thread)) {
            let Some(&(run_ts, run_dur)) = usize::try_from(call.run).ok().and_then(|i| runs.get(i))
            else {
                continue;
            };
            let Some(parent) = enclosing(&thread.events, call.start_ns, call.end_ns) else {
                continue;
            };
            let window = call.end_ns - call.start_ns;
            let lead = window.saturating_sub(run_dur * 1000) / 2;
            let first = kernels.partition_point(|k| k.0 < run_ts);
            let depth = thread.events[parent].depth + 1;
            let mut children = Vec::new();
            for &(ts, dur, op) in kernels[first..]
                .iter()
                .take_while(|k| k.0 <= run_ts + run_dur)
            {
                let start_ns = (call.start_ns + lead + (ts - run_ts) * 1000).min(call.end_ns);
                let inclusive_ns = (dur * 1000).min(call.end_ns - start_ns);
                let name = name_index(&mut thread.names, op);
                children.push(RangeEvent {
                    name,
                    depth,
                    start_ns,
                    inclusive_ns,
                    exclusive_ns: inclusive_ns,
                    gpu_start: NO_EVENT,
                    gpu_end: NO_EVENT,
                });
            }
            if !children.is_empty() {
                added.push((parent, children));
            }
        }
        if added.is_empty() {
            continue;
        }
        added.sort_by_key(|(parent, _)| *parent);
        let has_memory = !thread.memory.is_empty();
        let mut events = Vec::with_capacity(
            thread.events.len() + added.iter().map(|a| a.1.len()).sum::<usize>(),
        );
        let mut memory = Vec::with_capacity(if has_memory { events.capacity() } else { 0 });
        let mut next = added.into_iter().peekable();
        for (index, event) in thread.events.iter().enumerate() {
            let mut event = *event;
            while let Some((_, children)) = next.next_if(|(parent, _)| *parent == index) {
                let taken: u64 = children.iter().map(|c| c.inclusive_ns).sum();
                event.exclusive_ns = event.exclusive_ns.saturating_sub(taken);
                if has_memory {
                    let parent_memory = thread.memory[index];
                    memory.extend(children.iter().map(|_| MemoryEvent {
                        pass: parent_memory.pass,
                        live_at_open: parent_memory.live_at_open,
                        live_at_close: parent_memory.live_at_open,
                        ..MemoryEvent::default()
                    }));
                }
                events.extend(children);
            }
            events.push(event);
            if has_memory {
                memory.push(thread.memory[index]);
            }
        }
        thread.events = events;
        if has_memory {
            thread.memory = memory;
        }
    }
}

/// The innermost event that spans `[start, end]`.
fn enclosing(events: &[RangeEvent], start: u64, end: u64) -> Option<usize> {
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.start_ns <= start && e.start_ns + e.inclusive_ns >= end)
        .max_by_key(|(_, e)| e.depth)
        .map(|(index, _)| index)
}

/// The index of `name` in a thread's name table, added when new.
fn name_index(names: &mut Vec<String>, name: &str) -> u32 {
    let index = names.iter().position(|n| n == name).unwrap_or_else(|| {
        names.push(name.to_owned());
        names.len() - 1
    });
    u32::try_from(index).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::log::ThreadRanges;

    fn event(name: u32, depth: u16, start_ns: u64, inclusive_ns: u64) -> RangeEvent {
        RangeEvent {
            name,
            depth,
            start_ns,
            inclusive_ns,
            exclusive_ns: inclusive_ns,
            gpu_start: NO_EVENT,
            gpu_end: NO_EVENT,
        }
    }

    const PROFILE: &str = r#"[
        {"cat":"Session","pid":1,"tid":1,"dur":900,"ts":10,"ph":"X","name":"model_loading_uri","args":{}},
        {"cat":"Session","pid":1,"tid":1,"dur":100,"ts":2000,"ph":"X","name":"model_run","args":{}},
        {"cat":"Node","pid":1,"tid":1,"dur":0,"ts":2009,"ph":"X","name":"conv1_fence_before","args":{"op_name":"Conv"}},
        {"cat":"Node","pid":1,"tid":1,"dur":40,"ts":2010,"ph":"X","name":"conv1_kernel_time","args":{"op_name":"Conv","provider":"CPUExecutionProvider"}},
        {"cat":"Node","pid":1,"tid":1,"dur":30,"ts":2060,"ph":"X","name":"relu1_kernel_time","args":{"op_name":"Relu"}},
        {"cat":"Session","pid":1,"tid":1,"dur":50,"ts":3000,"ph":"X","name":"model_run","args":{}},
        {"cat":"Node","pid":1,"tid":1,"dur":20,"ts":3005,"ph":"X","name":"conv1_kernel_time","args":{"op_name":"Conv"}}
    ]"#;

    #[test]
    fn the_profile_gives_runs_and_kernels_only() {
        let events = parse_profile(PROFILE).unwrap();
        assert_eq!(
            events,
            [
                ProfileEvent::Run {
                    ts_us: 2000,
                    dur_us: 100
                },
                ProfileEvent::Kernel {
                    ts_us: 2010,
                    dur_us: 40,
                    op: "Conv".into()
                },
                ProfileEvent::Kernel {
                    ts_us: 2060,
                    dur_us: 30,
                    op: "Relu".into()
                },
                ProfileEvent::Run {
                    ts_us: 3000,
                    dur_us: 50
                },
                ProfileEvent::Kernel {
                    ts_us: 3005,
                    dur_us: 20,
                    op: "Conv".into()
                },
            ]
        );
        assert!(parse_profile("{}").is_err());
    }

    #[test]
    fn kernels_become_children_of_the_range_around_their_run() {
        // Thread 3: `step` (depth 0) holds `model` (depth 1), whose call
        // took 120 us from 1_000_000 ns; the run it made is the second of
        // the session (run 1), which took 50 us with one 20 us Conv 5 us in.
        let mut log = RangeLog {
            threads: vec![ThreadRanges {
                thread: 3,
                thread_name: "main".into(),
                names: vec!["step".into(), "model".into()],
                events: vec![event(1, 1, 999_000, 122_000), event(0, 0, 990_000, 200_000)],
                overflow: vec![None, None],
                memory: Vec::new(),
            }],
            ..RangeLog::default()
        };
        let calls = [Call {
            run: 1,
            thread: Some(3),
            start_ns: 1_000_000,
            end_ns: 1_120_000,
        }];
        add_operator_ranges(&mut log, &calls, &parse_profile(PROFILE).unwrap());
        let thread = &log.threads[0];
        assert_eq!(thread.names, ["step", "model", "Conv"]);
        // The run centred in the call: (120 - 50) / 2 = 35 us in, the
        // kernel 5 us after the run's start.
        assert_eq!(
            thread.events,
            [
                event(2, 2, 1_040_000, 20_000),
                RangeEvent {
                    exclusive_ns: 102_000,
                    ..event(1, 1, 999_000, 122_000)
                },
                event(0, 0, 990_000, 200_000),
            ]
        );
    }

    #[test]
    fn calls_of_other_threads_or_without_a_run_add_nothing() {
        let original = RangeLog {
            threads: vec![ThreadRanges {
                thread: 3,
                thread_name: "main".into(),
                names: vec!["model".into()],
                events: vec![event(0, 0, 999_000, 122_000)],
                overflow: vec![None],
                memory: Vec::new(),
            }],
            ..RangeLog::default()
        };
        let profile = parse_profile(PROFILE).unwrap();
        for call in [
            Call {
                run: 0,
                thread: Some(4),
                start_ns: 1_000_000,
                end_ns: 1_100_000,
            },
            Call {
                run: 7,
                thread: Some(3),
                start_ns: 1_000_000,
                end_ns: 1_100_000,
            },
            Call {
                run: 0,
                thread: Some(3),
                start_ns: 2_000_000,
                end_ns: 2_100_000,
            },
        ] {
            let mut log = original.clone();
            add_operator_ranges(&mut log, &[call], &profile);
            assert_eq!(
                log.threads[0].events, original.threads[0].events,
                "{call:?}"
            );
        }
    }
}
