//! GPU time per range without Nsight: device events at range boundaries.
//!
//! While a capture records with GPU timing on, every recorded range, every
//! measured pass and every call of the target also records an event on
//! the device's stream when it opens and when it closes. The device stamps
//! an event when the stream reaches it, so the time between two events is
//! the time the stream took from the one to the other: the GPU time of
//! what was queued between them, idle gaps included (what
//! `torch.cuda.Event(enable_timing=True)` pairs measure).
//!
//! # What the events are recorded on
//!
//! The CUDA backend (`CudaEvents` in `backend/tch.rs`, `tch` feature)
//! records on the legacy default stream (the NULL stream) of the run's
//! device, in its primary context: the stream libtorch queues on unless
//! code sets another (tch has no stream API, so tch code always queues
//! there). Work on blocking streams is ordered with the legacy default
//! stream, so a range's events also wait for it; work on non-blocking
//! streams (PyTorch's stream pool, NCCL, a TorchScript model that opens its
//! own streams) runs beside the events and is not covered. Events of ranges
//! on other host threads go on the same stream: their elapsed time spans
//! whatever any thread queued there in between.
//!
//! # Cost and allocation
//!
//! Events come from a pool created before the capture opens, sized from
//! the ranges the last warmup pass opened, and topped up between measured
//! passes from what the previous pass used (never inside one). Recording is
//! one atomic increment and one driver call per boundary. A range that
//! finds the pool empty gets no event and is counted
//! ([`GpuTimings::ranges_without_events`]); nothing is created inside a
//! pass. Elapsed times are read after the capture closes, once the last
//! event completed, so measured passes never wait on the device because of
//! this. What one record costs the host is measured before the capture
//! ([`GpuTimings::event_record_ns`]): host times of ranges include the
//! events of the ranges inside them (a range's own events are recorded
//! outside its host clock reads).
//!
//! # Pairing
//!
//! A range's events are paired by its guard: the start event's index
//! rides in the recorder's frame for that range on the opening thread's
//! stack, and the close pops that frame and records the end event. Ranges
//! are LIFO per thread, so nesting pairs by construction, and each thread
//! pairs only its own ranges. The frame also carries the number of the
//! pass it was opened in (`pass_number`): a guard kept across passes (in
//! the target, or a thread-local) closes without an end event and is
//! counted among the ranges without events, so no pair spans two passes.
//! A range still open when the capture ends records nothing: its frame
//! goes with the capture. The runner's pass and call events are recorded
//! by the runner itself, around each call, on the capturing thread.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use super::log::{RangeLog, NO_EVENT};
use super::samples::SampleSet;
use crate::stats::DurationStats;

/// The events one capture can hold (8 MiB of handles, allocated on the
/// first run with GPU timing and kept for the process).
pub const MAX_EVENTS: usize = 1 << 20;

/// Events created up front when no warmup pass says how many a pass needs.
const DEFAULT_RESERVE: usize = 1024;

/// How many records the start-up measurement of one record's cost takes.
const COST_SAMPLES: usize = 301;

/// Device events, as the recorder uses them: created ahead, recorded on
/// the stream the work is queued on, read after the capture.
///
/// A backend that times on the GPU implements it (`CudaEvents` in
/// `backend/tch.rs`, the `tch` feature, through
/// [`Backend::gpu_events`](crate::backend::Backend::gpu_events));
/// [`FakeEvents`] stamps events from a stream clock that tests advance.
pub trait EventBackend: Send + Sync {
    /// What the events are recorded on, for the manifest.
    fn stream(&self) -> String;
    /// Makes the calling thread able to record (a CUDA context current).
    /// Called once per thread and run, outside measured passes when the
    /// thread opened a range in warmup.
    fn bind_thread(&self) -> anyhow::Result<()>;
    /// A new event.
    fn create(&self) -> anyhow::Result<u64>;
    /// Records `event` on the stream now: the hot path.
    fn record(&self, event: u64) -> bool;
    /// Waits until `event` completed on the device.
    fn synchronize(&self, event: u64) -> anyhow::Result<()>;
    /// Nanoseconds from `start` to `end`, both completed.
    fn elapsed_ns(&self, start: u64, end: u64) -> anyhow::Result<f64>;
    /// Frees `event`.
    fn destroy(&self, event: u64);
}

/// The handles, shared by every thread that records while a capture is
/// open: `created` of them exist, `next` is the first one not recorded.
struct Pool {
    handles: Box<[AtomicU64]>,
    created: AtomicUsize,
    next: AtomicUsize,
    missed: AtomicU64,
    failed: AtomicU64,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool {
        handles: (0..MAX_EVENTS).map(|_| AtomicU64::new(0)).collect(),
        created: AtomicUsize::new(0),
        next: AtomicUsize::new(0),
        missed: AtomicU64::new(0),
        failed: AtomicU64::new(0),
    })
}

/// The backend of the current session, and which session it is: threads
/// keep a copy of both and refresh it when the generation moved.
static BACKEND: Mutex<Option<Arc<dyn EventBackend>>> = Mutex::new(None);
static GENERATION: AtomicU32 = AtomicU32::new(0);
/// The measured pass in progress, counted from 1 by [`GpuEvents::pass_begins`].
static PASS: AtomicU32 = AtomicU32::new(0);

struct Bound {
    generation: u32,
    backend: Option<Arc<dyn EventBackend>>,
}

thread_local! {
    static BOUND: RefCell<Bound> = const {
        RefCell::new(Bound { generation: 0, backend: None })
    };
}

/// Gives the calling thread the current backend, bound: from the range
/// recorder in warmup, or inside a pass for a thread first seen there (a
/// lock, counted with the recorder's late threads).
fn bind_current(bound: &mut Bound) {
    let generation = GENERATION.load(Ordering::Acquire);
    let backend = BACKEND.lock().unwrap_or_else(|e| e.into_inner()).clone();
    bound.generation = generation;
    bound.backend = backend.filter(|backend| backend.bind_thread().is_ok());
}

/// Binds the calling thread to the session's backend ahead of the
/// capture: the range recorder calls it for threads seen in warmup.
pub(crate) fn register_thread() {
    let _ = BOUND.try_with(|bound| {
        if let Ok(mut bound) = bound.try_borrow_mut() {
            if bound.generation != GENERATION.load(Ordering::Acquire) {
                bind_current(&mut bound);
            }
        }
    });
}

/// The number of the measured pass in progress: a range's end event is
/// recorded only in the pass its start event was.
#[inline]
pub(crate) fn pass_number() -> u32 {
    PASS.load(Ordering::Relaxed)
}

/// Records the next event of the pool on this thread's stream; its index,
/// or [`NO_EVENT`] when the pool is spent or the record failed.
#[inline]
pub(crate) fn record() -> u32 {
    let pool = pool();
    let index = pool.next.fetch_add(1, Ordering::Relaxed);
    if index >= pool.created.load(Ordering::Acquire) {
        pool.missed.fetch_add(1, Ordering::Relaxed);
        return NO_EVENT;
    }
    let handle = pool.handles[index].load(Ordering::Relaxed);
    let recorded = BOUND
        .try_with(|bound| {
            let Ok(mut bound) = bound.try_borrow_mut() else {
                return false;
            };
            if bound.generation != GENERATION.load(Ordering::Acquire) {
                bind_current(&mut bound);
            }
            bound
                .backend
                .as_ref()
                .is_some_and(|backend| backend.record(handle))
        })
        .unwrap_or(false);
    if recorded {
        index as u32
    } else {
        pool.failed.fetch_add(1, Ordering::Relaxed);
        NO_EVENT
    }
}

/// The GPU figures of a run, beside the host ones (`timings.gpu` in the
/// manifest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuTimings {
    /// What the events were recorded on.
    pub stream: String,
    /// One sample per measured pass: from the event before its first call
    /// to the event after its last.
    pub iterations: Option<DurationStats>,
    /// One sample per call of the target in a measured pass.
    pub runs: Option<DurationStats>,
    /// The median host cost of recording one event, measured before the
    /// capture (a few hundred records): what each range boundary adds to
    /// the host times of the ranges around it.
    pub event_record_ns: f64,
    /// Events recorded in the capture.
    pub events_recorded: u64,
    /// Ranges that got no pair of events: the pool ran out inside a pass
    /// (it grows only between passes), or the driver refused a record.
    pub ranges_without_events: u64,
    /// What these figures mean, and what they leave out.
    pub note: String,
}

/// A range's GPU time, placed on the capture's device timeline, for the
/// trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuSpan {
    /// Index of the range in its thread's `events`.
    pub event: usize,
    /// From the capture's first event to the range's start event.
    pub offset_ns: u64,
    pub duration_ns: u64,
    /// Without the GPU time of the recorded ranges inside it.
    pub exclusive_ns: u64,
}

/// What the events of one capture came to.
#[derive(Debug, Clone)]
pub struct GpuCapture {
    /// Per thread of the `RangeLog`, in its order: the GPU span of each
    /// range event that got a pair.
    pub spans: Vec<Vec<GpuSpan>>,
    /// Each measured pass on the device's timeline: its index, the offset
    /// of its first event from the capture's first and its GPU time.
    pub pass_spans: Vec<(u32, u64, u64)>,
    /// Per pass and per call, the GPU time.
    pub passes: SampleSet,
    pub calls: SampleSet,
    /// Per range name: GPU inclusive and exclusive samples.
    pub ranges: std::collections::BTreeMap<String, (SampleSet, SampleSet)>,
    pub stream: String,
    pub event_record_ns: f64,
    pub events_recorded: u64,
    pub ranges_without_events: u64,
    /// The device name for the trace's track (`cuda:0`).
    pub device: String,
}

impl GpuTimings {
    /// What the manifest says when the events could not be read after the
    /// capture: the host timings stand without GPU figures.
    pub fn unreadable(error: &anyhow::Error) -> GpuTimings {
        GpuTimings {
            stream: String::new(),
            iterations: None,
            runs: None,
            event_record_ns: 0.0,
            events_recorded: 0,
            ranges_without_events: 0,
            note: format!("the device events could not be read after the capture: {error:#}"),
        }
    }
}

impl GpuCapture {
    /// The manifest's `timings.gpu`.
    pub fn timings(&self) -> GpuTimings {
        GpuTimings {
            stream: self.stream.clone(),
            iterations: self.passes.stats(),
            runs: self.calls.stats(),
            event_record_ns: self.event_record_ns,
            events_recorded: self.events_recorded,
            ranges_without_events: self.ranges_without_events,
            note: GPU_NOTE.to_owned(),
        }
    }
}

const GPU_NOTE: &str = "GPU time from device events recorded at every range, call and pass boundary on the stream named above: \
    the time the stream took between them, idle gaps included; work on other non-blocking streams is not covered; \
    host times include the event records of the ranges nested inside them (event_record_ns each)";

/// GPU timing for one run: installs its backend for the recorder, keeps
/// the pool ahead of the passes, marks the runner's boundaries and reads
/// every elapsed time at the end.
pub struct GpuEvents {
    backend: Arc<dyn EventBackend>,
    device: String,
    event_record_ns: f64,
    /// Pool index of the event at each pass and call boundary: per pass,
    /// one before each call and one after the last.
    boundaries: Vec<u32>,
    /// Boundaries of each pass: where its first is in `boundaries`.
    pass_starts: Vec<u32>,
    pass_began_at: usize,
    capture_first: u32,
    /// The last pass was cut by a signal: its calls count, it does not.
    last_pass_cut: bool,
}

impl std::fmt::Debug for GpuEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuEvents")
            .field("stream", &self.backend.stream())
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

/// One GPU session at a time in the process (runs already take turns on
/// the capture).
static SESSION: Mutex<()> = Mutex::new(());

impl GpuEvents {
    /// Installs `backend` for the ranges recorded from now on (`device`
    /// names the track), binds this thread and measures what one record
    /// costs.
    pub fn start(backend: Arc<dyn EventBackend>, device: &str) -> anyhow::Result<GpuEvents> {
        let _one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
        let pool = pool();
        {
            let mut current = BACKEND.lock().unwrap_or_else(|e| e.into_inner());
            let same = current
                .as_ref()
                .is_some_and(|old| Arc::ptr_eq(old, &backend));
            if !same {
                // Events belong to the backend that made them.
                if let Some(old) = current.take() {
                    for slot in &pool.handles[..pool.created.load(Ordering::Acquire)] {
                        old.destroy(slot.load(Ordering::Relaxed));
                    }
                }
                pool.created.store(0, Ordering::Release);
                *current = Some(Arc::clone(&backend));
            }
        }
        GENERATION.fetch_add(1, Ordering::AcqRel);
        backend.bind_thread()?;
        let _ = BOUND.try_with(|bound| {
            if let Ok(mut bound) = bound.try_borrow_mut() {
                bind_current(&mut bound);
            }
        });
        let event_record_ns = measure_record(backend.as_ref())?;
        Ok(GpuEvents {
            backend,
            device: device.to_owned(),
            event_record_ns,
            boundaries: Vec::new(),
            pass_starts: Vec::new(),
            pass_began_at: 0,
            capture_first: NO_EVENT,
            last_pass_cut: false,
        })
    }

    /// Makes the pool hold at least `free` unrecorded events (up to
    /// [`MAX_EVENTS`]): between passes only.
    pub fn reserve(&self, free: usize) -> anyhow::Result<()> {
        let pool = pool();
        let next = pool.next.load(Ordering::Acquire).min(MAX_EVENTS);
        let want = next.saturating_add(free).min(MAX_EVENTS);
        let mut created = pool.created.load(Ordering::Acquire);
        while created < want {
            let handle = self.backend.create()?;
            pool.handles[created].store(handle, Ordering::Relaxed);
            created += 1;
            pool.created.store(created, Ordering::Release);
        }
        Ok(())
    }

    /// Sizes the pool before the capture: room for `passes` passes of
    /// `per_pass` events each (the last warmup pass's ranges, twice, and
    /// the runner's boundaries), with headroom; a default without warmup.
    pub fn prepare_capture(
        &mut self,
        per_pass: Option<usize>,
        passes: u32,
        calls_per_pass: usize,
    ) -> anyhow::Result<()> {
        let pool = pool();
        pool.next.store(0, Ordering::Release);
        pool.missed.store(0, Ordering::Relaxed);
        pool.failed.store(0, Ordering::Relaxed);
        let per_pass = per_pass.unwrap_or(DEFAULT_RESERVE);
        // The first pass and the one after it: later passes top up as
        // they go.
        self.reserve(per_pass.saturating_mul(2).saturating_add(1).min(MAX_EVENTS))?;
        let boundaries = (passes as usize)
            .saturating_mul(calls_per_pass + 1)
            .min(MAX_EVENTS);
        self.boundaries = Vec::with_capacity(boundaries);
        self.pass_starts = Vec::with_capacity((passes as usize).min(MAX_EVENTS));
        Ok(())
    }

    /// The capture opened: its first event is the origin of the device
    /// timeline.
    #[inline]
    pub fn capture_begins(&mut self) {
        self.capture_first = record();
    }

    /// A pass starts: remembers where its events begin.
    #[inline]
    pub fn pass_begins(&mut self) {
        PASS.fetch_add(1, Ordering::Relaxed);
        self.pass_began_at = pool().next.load(Ordering::Relaxed);
        if self.pass_starts.len() < self.pass_starts.capacity() {
            self.pass_starts.push(self.boundaries.len() as u32);
        }
    }

    /// A call boundary of the pass in progress (before each call and after
    /// the last).
    #[inline]
    pub fn boundary(&mut self) {
        if self.boundaries.len() < self.boundaries.capacity() {
            self.boundaries.push(record());
        }
    }

    /// A pass ended, outside its timed window: tops the pool up to what it
    /// used, twice over. When the device refuses more events, later ranges
    /// go without (and are counted).
    pub fn pass_ends(&mut self) {
        let used = pool()
            .next
            .load(Ordering::Relaxed)
            .saturating_sub(self.pass_began_at);
        let _ = self.reserve(used.saturating_mul(2).saturating_add(1));
    }

    /// The pass in progress was cut after a call (a signal): its calls
    /// are samples, the pass is not, as on the host.
    pub fn pass_cut(&mut self) {
        self.last_pass_cut = true;
    }

    /// Once the capture ended: waits for the last event, then reads the
    /// GPU time of every pass, call and range of `log`.
    pub fn finish(self, log: &RangeLog) -> anyhow::Result<GpuCapture> {
        let pool = pool();
        let recorded = (pool.next.load(Ordering::Acquire) as u64)
            .saturating_sub(pool.missed.load(Ordering::Relaxed))
            .saturating_sub(pool.failed.load(Ordering::Relaxed));
        let handle = |index: u32| pool.handles[index as usize].load(Ordering::Relaxed);
        // The runner's last boundary is the capture's last event on its
        // thread; the stream runs events in the order they were recorded.
        if let Some(&last) = self.boundaries.iter().rev().find(|&&e| e != NO_EVENT) {
            self.backend.synchronize(handle(last))?;
        }
        // A pair the device cannot time (an event recorded after the last
        // boundary, by a thread still running) goes without, counted.
        let unreadable = std::cell::Cell::new(0u64);
        let elapsed = |start: u32, end: u32| -> Option<u64> {
            if start == NO_EVENT || end == NO_EVENT {
                return None;
            }
            match self.backend.elapsed_ns(handle(start), handle(end)) {
                Ok(ns) => Some(ns.max(0.0).round() as u64),
                Err(_) => {
                    unreadable.set(unreadable.get() + 1);
                    None
                }
            }
        };

        let mut passes = SampleSet::with_capacity(self.pass_starts.len());
        let mut calls = SampleSet::with_capacity(self.boundaries.len());
        let mut pass_spans = Vec::with_capacity(self.pass_starts.len());
        for (pass, &first) in self.pass_starts.iter().enumerate() {
            let end = self
                .pass_starts
                .get(pass + 1)
                .map_or(self.boundaries.len(), |&next| next as usize);
            let marks = &self.boundaries[first as usize..end];
            if marks.len() < 2 {
                continue; // a pass cut by a signal before its first call ended
            }
            let cut = self.last_pass_cut && pass + 1 == self.pass_starts.len();
            if let (false, Some(ns)) = (cut, elapsed(marks[0], marks[marks.len() - 1])) {
                passes.push(ns);
                if let Some(offset) = elapsed(self.capture_first, marks[0]) {
                    pass_spans.push((pass as u32, offset, ns));
                }
            }
            for pair in marks.windows(2) {
                if let Some(ns) = elapsed(pair[0], pair[1]) {
                    calls.push(ns);
                }
            }
        }

        let mut samples = std::collections::BTreeMap::<&str, (Vec<u64>, Vec<u64>)>::new();
        let mut spans = Vec::with_capacity(log.threads.len());
        let mut without = 0u64;
        for thread in &log.threads {
            let mut thread_spans = Vec::new();
            // Ranges close children first: the GPU time of the closed
            // children of each open depth, for exclusive times.
            let mut children = vec![0u64; 1];
            for (index, event) in thread.events.iter().enumerate() {
                let depth = event.depth as usize;
                if children.len() < depth + 2 {
                    children.resize(depth + 2, 0);
                }
                let inside = std::mem::take(&mut children[depth + 1]);
                let Some(inclusive) = elapsed(event.gpu_start, event.gpu_end) else {
                    without += 1;
                    continue;
                };
                children[depth] += inclusive;
                let exclusive = inclusive.saturating_sub(inside);
                let name = thread.names[event.name as usize].as_str();
                let (inc, exc) = samples.entry(name).or_default();
                inc.push(inclusive);
                exc.push(exclusive);
                if let Some(offset) = elapsed(self.capture_first, event.gpu_start) {
                    thread_spans.push(GpuSpan {
                        event: index,
                        offset_ns: offset,
                        duration_ns: inclusive,
                        exclusive_ns: exclusive,
                    });
                }
            }
            without += thread.overflowed();
            spans.push(thread_spans);
        }
        let set_of = |values: Vec<u64>| {
            let mut set = SampleSet::with_capacity(values.len());
            values.into_iter().for_each(|value| set.push(value));
            set
        };
        let ranges = samples
            .into_iter()
            .map(|(name, (inc, exc))| (name.to_owned(), (set_of(inc), set_of(exc))))
            .collect();
        Ok(GpuCapture {
            spans,
            pass_spans,
            passes,
            calls,
            ranges,
            stream: self.backend.stream(),
            event_record_ns: self.event_record_ns,
            events_recorded: recorded,
            ranges_without_events: without,
            device: self.device.clone(),
        })
    }
}

/// The median host cost of one record, over [`COST_SAMPLES`] records of
/// one event made for it (then freed).
fn measure_record(backend: &dyn EventBackend) -> anyhow::Result<f64> {
    let event = backend.create()?;
    let mut costs = Vec::with_capacity(COST_SAMPLES);
    for _ in 0..COST_SAMPLES {
        let started = super::clock::now_ns();
        backend.record(event);
        costs.push(super::clock::now_ns() - started);
    }
    backend.synchronize(event)?;
    backend.destroy(event);
    costs.sort_unstable();
    Ok(costs[costs.len() / 2] as f64)
}

/// A stand-in device for tests and examples: one stream whose clock moves
/// only when work is queued ([`FakeEvents::queue`]); an event is stamped
/// with the stream's time when recorded, as if the device ran the queued
/// work at once. Deterministic, and on any machine.
#[derive(Debug, Default)]
pub struct FakeEvents {
    state: Mutex<FakeState>,
}

#[derive(Debug, Default)]
struct FakeState {
    stream_ns: u64,
    stamps: Vec<Option<u64>>,
    created: u64,
    records: u64,
    destroyed: u64,
    bound_threads: u64,
    /// Records after this many fail (a refusing driver).
    fail_after: Option<u64>,
}

impl FakeEvents {
    /// A fake device whose stream is at 0.
    pub fn new() -> FakeEvents {
        FakeEvents::default()
    }

    /// A fake device with room for `events` events made without
    /// allocating (for tests that count allocations).
    pub fn with_capacity(events: usize) -> FakeEvents {
        let fake = FakeEvents::default();
        fake.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .stamps
            .reserve(events);
        fake
    }

    /// Queues `ns` of work on the stream.
    pub fn queue(&self, ns: u64) {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .stream_ns += ns;
    }

    /// Events created, records made, events destroyed, threads bound.
    pub fn counts(&self) -> (u64, u64, u64, u64) {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        (
            state.created,
            state.records,
            state.destroyed,
            state.bound_threads,
        )
    }

    /// Makes every record after the next `records` fail.
    pub fn fail_after(&self, records: u64) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.fail_after = Some(state.records + records);
    }
}

impl EventBackend for FakeEvents {
    fn stream(&self) -> String {
        "fake stream".to_owned()
    }

    fn bind_thread(&self) -> anyhow::Result<()> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .bound_threads += 1;
        Ok(())
    }

    fn create(&self) -> anyhow::Result<u64> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.stamps.push(None);
        state.created += 1;
        Ok(state.stamps.len() as u64 - 1)
    }

    fn record(&self, event: u64) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.fail_after.is_some_and(|after| state.records >= after) {
            return false;
        }
        state.records += 1;
        let now = state.stream_ns;
        match state.stamps.get_mut(event as usize) {
            Some(stamp) => {
                *stamp = Some(now);
                true
            }
            None => false,
        }
    }

    fn synchronize(&self, event: u64) -> anyhow::Result<()> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match state.stamps.get(event as usize) {
            Some(Some(_)) => Ok(()),
            _ => anyhow::bail!("event {event} was never recorded"),
        }
    }

    fn elapsed_ns(&self, start: u64, end: u64) -> anyhow::Result<f64> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let stamp = |event: u64| -> anyhow::Result<u64> {
            state
                .stamps
                .get(event as usize)
                .copied()
                .flatten()
                .ok_or_else(|| anyhow::anyhow!("event {event} was never recorded"))
        };
        Ok(stamp(end)? as f64 - stamp(start)? as f64)
    }

    fn destroy(&self, event: u64) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(stamp) = state.stamps.get_mut(event as usize) {
            *stamp = None;
        }
        state.destroyed += 1;
    }
}
