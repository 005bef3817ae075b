//! Range recording while a capture is open.
//!
//! Every thread that opens a range while recording gets a log, registered
//! once and allocated then: a name table, a fixed-capacity event buffer and,
//! past that capacity, per-name aggregates. Opening and closing a range only
//! touches the calling thread's own log and stack: no allocation (after a
//! thread's first range or a name's first use), no lock, no formatting.
//!
//! The runner turns on [`Registration`] for its warmup passes: ranges are
//! not recorded then, but the threads that open them get their logs and
//! their names enter the tables, so that the measured passes allocate
//! nothing. A thread or name first seen inside the capture is still
//! recorded, at the cost of that allocation (and, for a thread, a lock)
//! inside a measured pass; `RangeLog` counts them so the manifest can say.
//!
//! The capturing thread collects the logs after recording stops. A writer
//! raises its log's `writing` flag before it checks that recording is still
//! on, and the collector waits for the flag to fall after switching
//! recording off, so a log is never read while it is written. The flag
//! and the check need a full barrier between them. Where Linux offers
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, the barrier is the
//! collector's: a range closing raises the flag with a plain store and a
//! compiler fence, and the collector makes every thread of the process
//! pass a full barrier (the kernel's) before it reads the flags, once per
//! capture. Elsewhere each writer's store and load are sequentially
//! consistent.

use super::log::{Overflow, RangeEvent, RangeLog, ThreadRanges, NO_EVENT};
use crate::memory::attribution::{Cost, MemoryEvent, ThreadMemory};
use std::cell::{RefCell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::clock::{now_ns, span_ns, ticks, Scale};
use super::samples::SampleSet;

/// True while a capture records ranges.
pub(crate) static RECORDING: AtomicBool = AtomicBool::new(false);

/// True while warmup passes register threads and names without recording.
static REGISTERING: AtomicBool = AtomicBool::new(false);

/// What a range opened now does, in one load for the path every range
/// takes: [`MODE_OFF`] (nothing), [`MODE_REGISTERING`] or
/// [`MODE_RECORDING`]. The flags above stay the truth for the slow paths.
static MODE: AtomicU8 = AtomicU8::new(MODE_OFF);
const MODE_OFF: u8 = 0;
const MODE_REGISTERING: u8 = 1;
const MODE_RECORDING: u8 = 2;
/// Recording, and each range also records device events ([`super::gpu`]).
const MODE_RECORDING_GPU: u8 = 3;
/// Added to a recording mode when each range also attributes memory
/// ([`crate::memory::attribution`]).
const MODE_MEMORY: u8 = 4;
const MODE_RECORDING_MEMORY: u8 = MODE_RECORDING | MODE_MEMORY;
const MODE_RECORDING_GPU_MEMORY: u8 = MODE_RECORDING_GPU | MODE_MEMORY;

/// True while the runner's GPU timing is on: ranges record device events
/// when recording, and bind their threads when registering.
static GPU: AtomicBool = AtomicBool::new(false);

/// True while the runner attributes memory: the next captures record each
/// range's allocations beside its time.
static MEMORY: AtomicBool = AtomicBool::new(false);

/// Ranges opened while registering (warmup passes): how the GPU event
/// pool is sized.
static REGISTERED_OPENS: AtomicU64 = AtomicU64::new(0);

/// Sets [`MODE`] from the flags, after one of them changed.
fn update_mode() {
    let mode = if RECORDING.load(Ordering::SeqCst) {
        let recording = if GPU.load(Ordering::SeqCst) {
            MODE_RECORDING_GPU
        } else {
            MODE_RECORDING
        };
        if MEMORY.load(Ordering::SeqCst) {
            recording | MODE_MEMORY
        } else {
            recording
        }
    } else if REGISTERING.load(Ordering::SeqCst) {
        MODE_REGISTERING
    } else {
        MODE_OFF
    };
    MODE.store(mode, Ordering::SeqCst);
}

/// True once `membarrier` is registered for the process: a closing range
/// then orders its flag and check with a compiler fence only (see the
/// module docs).
static ASYMMETRIC: AtomicBool = AtomicBool::new(false);

/// Registers the process for `membarrier(PRIVATE_EXPEDITED)`, once; true
/// when the collector can use it.
fn asymmetric_barrier_available() -> bool {
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REGISTERED.get_or_init(|| {
        let registered = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
        ASYMMETRIC.store(registered, Ordering::SeqCst);
        registered
    })
}

const MEMBARRIER_CMD_PRIVATE_EXPEDITED: i32 = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: i32 = 1 << 4;

/// `membarrier(command, 0)`; true when the kernel did it.
#[cfg(target_os = "linux")]
fn membarrier(command: i32) -> bool {
    // SAFETY: membarrier takes two integers and touches no memory of ours.
    unsafe { libc::syscall(libc::SYS_membarrier, command, 0) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn membarrier(_command: i32) -> bool {
    false
}

/// The collector's side of the barrier: after switching recording off and
/// before reading any `writing` flag, every thread has passed a full
/// barrier, so a writer either shows its raised flag or sees recording off.
fn heavy_barrier() {
    if ASYMMETRIC.load(Ordering::SeqCst) && !membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) {
        // Registered but refused now (it should not be): fall back for
        // good, and wait for writers that used the light side to finish.
        ASYMMETRIC.store(false, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Threads and names first seen while recording, since the capture began.
static LATE_THREADS: AtomicU32 = AtomicU32::new(0);
static LATE_NAMES: AtomicU32 = AtomicU32::new(0);

/// Range events kept per thread and capture (40 bytes each: 10 MiB); past
/// them, each name keeps exact counts and totals and a histogram.
pub const EVENTS_PER_THREAD: usize = 1 << 18;

/// Ranges nested deeper than this on one thread are not recorded (NVTX
/// still sees them).
const MAX_DEPTH: usize = 256;

/// Direct-mapped cache of name pointers to ids, per thread.
const NAME_CACHE: usize = 64;

static LOGS: Mutex<Vec<Arc<ThreadLog>>> = Mutex::new(Vec::new());
static NEXT_THREAD: AtomicU32 = AtomicU32::new(1);
/// One capture at a time: a second run in the process waits for the first.
static CAPTURE: Mutex<()> = Mutex::new(());

struct ThreadLog {
    thread: u32,
    thread_name: String,
    writing: AtomicBool,
    // Separate cells: the owner reads `names` on every range while the
    // collector may read it too; only writes are fenced by `writing`.
    names: UnsafeCell<Vec<Box<str>>>,
    events: UnsafeCell<Vec<RangeEvent>>,
    overflow: UnsafeCell<Vec<Option<Box<Overflow>>>>,
    /// With memory attributed: one per event, at the same index.
    memory_events: UnsafeCell<Vec<MemoryEvent>>,
    /// The thread's open ranges as attribution sees them: the owner's
    /// alone, never read by the collector.
    memory: UnsafeCell<ThreadMemory>,
}

// SAFETY: the owner thread writes the cells only with `writing` raised and
// recording on; other threads read them only with recording off and
// `writing` down (see the module docs); `names` is only appended to.
unsafe impl Sync for ThreadLog {}
unsafe impl Send for ThreadLog {}

impl ThreadLog {
    fn wait_idle(&self) {
        while self.writing.load(Ordering::SeqCst) {
            std::hint::spin_loop();
        }
    }
}

#[derive(Clone, Copy)]
struct Frame {
    name: u32,
    /// Clock readings ([`ticks`]): turned into nanoseconds when the
    /// capture ends.
    start: u64,
    child: u64,
    /// The device event at its start, and the pass it was opened in.
    gpu_start: u32,
    gpu_pass: u32,
    /// True when it entered the thread's memory stack.
    memory: bool,
}

struct Local {
    log: Option<Arc<ThreadLog>>,
    stack: Vec<Frame>,
    cache: [CachedName; NAME_CACHE],
}

/// A name's address and length, its id plus one (0: empty), and the
/// [`fingerprint`] of its bytes, which are the bytes themselves up to 16.
#[derive(Clone, Copy)]
struct CachedName {
    ptr: usize,
    len: usize,
    id: u32,
    fingerprint: (u64, u64),
}

const NO_NAME: CachedName = CachedName {
    ptr: 0,
    len: 0,
    id: 0,
    fingerprint: (0, 0),
};

/// Names at most this long are told apart by their [`fingerprint`] alone.
const FINGERPRINTED: usize = 16;

/// The first and last eight bytes of `name` (overlapping when shorter than
/// 16; for a name under eight bytes, its bytes): with the length, the
/// whole name when it is at most [`FINGERPRINTED`] bytes long.
#[inline(always)]
fn fingerprint(name: &[u8]) -> (u64, u64) {
    let len = name.len();
    let load = |at: usize, width: usize| -> u64 {
        let mut bytes = [0u8; 8];
        bytes[..width].copy_from_slice(&name[at..at + width]);
        u64::from_le_bytes(bytes)
    };
    if len >= 8 {
        (load(0, 8), load(len - 8, 8))
    } else if len >= 4 {
        (load(0, 4), load(len - 4, 4))
    } else {
        (load(0, len), 0)
    }
}

thread_local! {
    static LOCAL: RefCell<Local> = const {
        RefCell::new(Local {
            log: None,
            stack: Vec::new(),
            cache: [NO_NAME; NAME_CACHE],
        })
    };
}

fn register() -> Arc<ThreadLog> {
    crate::memory::attribution::unattributed(register_attributed)
}

fn register_attributed() -> Arc<ThreadLog> {
    let thread = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
    let current = std::thread::current();
    let log = Arc::new(ThreadLog {
        thread,
        thread_name: current
            .name()
            .map_or_else(|| format!("thread {thread}"), str::to_owned),
        writing: AtomicBool::new(false),
        names: UnsafeCell::new(Vec::new()),
        events: UnsafeCell::new(Vec::with_capacity(EVENTS_PER_THREAD)),
        overflow: UnsafeCell::new(Vec::new()),
        memory_events: UnsafeCell::new(if MEMORY.load(Ordering::SeqCst) {
            Vec::with_capacity(EVENTS_PER_THREAD)
        } else {
            Vec::new()
        }),
        memory: UnsafeCell::new(ThreadMemory::new(thread, MAX_DEPTH)),
    });
    // SAFETY: the log lives as long as the process (LOGS keeps it) and
    // only this thread touches its memory stack.
    unsafe { ThreadMemory::install(log.memory.get()) };
    LOGS.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Arc::clone(&log));
    log
}

impl Local {
    fn log(&mut self) -> &Arc<ThreadLog> {
        if self.log.is_none() {
            if RECORDING.load(Ordering::Relaxed) {
                LATE_THREADS.fetch_add(1, Ordering::Relaxed);
            }
            self.stack.reserve_exact(MAX_DEPTH);
            self.log = Some(register());
        }
        self.log.as_ref().expect("registered just above")
    }

    /// The id of `name` in this thread's table, adding it when new; `None`
    /// when neither recording nor registering (then nothing is written).
    #[inline(always)]
    fn intern(&mut self, name: &[u8]) -> Option<u32> {
        let key = (name.as_ptr() as usize, name.len());
        let slot = (key.0 >> 3 ^ key.1) % NAME_CACHE;
        // The same address, length and bytes: the same name. The bytes
        // are compared through the fingerprint, and past 16 bytes with the
        // name in the table too (the memory at an address can change).
        let cached = self.cache[slot];
        if cached.ptr == key.0
            && cached.len == key.1
            && cached.id > 0
            && cached.fingerprint == fingerprint(name)
            && (name.len() <= FINGERPRINTED || self.is_named(cached.id - 1, name))
        {
            return Some(cached.id - 1);
        }
        self.intern_uncached(name, key, slot)
    }

    /// True when name `id` of this thread's table is `name`.
    fn is_named(&mut self, id: u32, name: &[u8]) -> bool {
        let log: &ThreadLog = self.log();
        // SAFETY: only this thread appends to `names`; a shared read.
        let names = unsafe { &*log.names.get() };
        names[id as usize].as_bytes() == name
    }

    #[inline(never)]
    fn intern_uncached(&mut self, name: &[u8], key: (usize, usize), slot: usize) -> Option<u32> {
        // SAFETY: the log is owned by `self.log`, which this call does not
        // change: the reference stays valid, without an `Arc` count per range.
        let log: &ThreadLog = unsafe { &*Arc::as_ptr(self.log()) };
        // A name not seen at this address: look it up, or add it.
        log.writing.store(true, Ordering::SeqCst);
        let recording = RECORDING.load(Ordering::SeqCst);
        if !recording && !REGISTERING.load(Ordering::SeqCst) {
            log.writing.store(false, Ordering::Release);
            return None;
        }
        // SAFETY: `writing` is raised and recording or registration is on:
        // no one else reads.
        let names = unsafe { &mut *log.names.get() };
        let id = match names.iter().position(|known| known.as_bytes() == name) {
            Some(id) => id,
            None => {
                if recording {
                    LATE_NAMES.fetch_add(1, Ordering::Relaxed);
                }
                crate::memory::attribution::unattributed(|| {
                    names.push(String::from_utf8_lossy(name).into())
                });
                names.len() - 1
            }
        };
        log.writing.store(false, Ordering::Release);
        self.cache[slot] = CachedName {
            ptr: key.0,
            len: key.1,
            id: id as u32 + 1,
            fingerprint: fingerprint(name),
        };
        Some(id as u32)
    }
}

/// The number this thread's ranges are logged under ([`ThreadRanges::thread`]),
/// once it has opened one while recording or registering.
#[cfg_attr(not(feature = "ort"), allow(dead_code))]
pub(crate) fn current_thread() -> Option<u32> {
    LOCAL.with(|local| local.borrow().log.as_ref().map(|log| log.thread))
}

/// Starts recording a range named `name` on this thread; false when it is
/// not recorded (recording off, or nested too deep).
#[inline]
pub(crate) fn open(name: &[u8]) -> bool {
    // Off, the path of every range outside a run: one load and a compare.
    let mode = MODE.load(Ordering::Relaxed);
    if mode == MODE_OFF {
        return false;
    }
    open_active(name, mode)
}

/// [`open`] while registering or recording, out of line: one call, each
/// recording mode's path specialized.
#[inline(never)]
fn open_active(name: &[u8], mode: u8) -> bool {
    match mode {
        MODE_RECORDING => open_recording(name, false, false),
        MODE_RECORDING_GPU => open_recording(name, true, false),
        MODE_RECORDING_MEMORY => open_recording(name, false, true),
        MODE_RECORDING_GPU_MEMORY => open_recording(name, true, true),
        _ => {
            register_name(name);
            false
        }
    }
}

/// Gives this thread its log and `name` its id, recording nothing.
#[cold]
#[inline(never)]
fn register_name(name: &[u8]) {
    REGISTERED_OPENS.fetch_add(1, Ordering::Relaxed);
    if GPU.load(Ordering::Relaxed) {
        super::gpu::register_thread();
    }
    LOCAL.with(|local| {
        if let Ok(mut local) = local.try_borrow_mut() {
            local.intern(name);
        }
    });
}

/// While it lives, the ranges threads open register their threads and
/// names with the recorder without being recorded: the runner holds one
/// over its warmup passes, so that the capture allocates nothing for them.
pub struct Registration {
    _private: (),
}

impl Registration {
    /// Starts registering.
    pub fn begin() -> Registration {
        REGISTERING.store(true, Ordering::SeqCst);
        update_mode();
        Registration { _private: () }
    }
}

/// Ranges opened while registering, since the process started: the
/// runner sizes the GPU event pool from the last warmup pass's count.
pub fn registered_opens() -> u64 {
    REGISTERED_OPENS.load(Ordering::Relaxed)
}

/// Turns device events at range boundaries on or off, for the ranges
/// recorded or registered from now on (between captures only).
pub(crate) fn set_gpu(on: bool) {
    GPU.store(on, Ordering::SeqCst);
    update_mode();
}

/// Turns memory attribution on or off for the captures that begin from
/// now on (between captures only).
pub fn set_memory(on: bool) {
    MEMORY.store(on, Ordering::SeqCst);
    update_mode();
}

impl Drop for Registration {
    fn drop(&mut self) {
        REGISTERING.store(false, Ordering::SeqCst);
        update_mode();
    }
}

#[inline(always)]
fn open_recording(name: &[u8], gpu: bool, memory: bool) -> bool {
    LOCAL.with(|local| {
        let Ok(mut local) = local.try_borrow_mut() else {
            return false;
        };
        if local.stack.len() >= MAX_DEPTH {
            return false;
        }
        let Some(id) = local.intern(name) else {
            return false;
        };
        // The device event before the host clock: the range's host time
        // does not include its own events.
        let (gpu_start, gpu_pass) = if gpu {
            (super::gpu::record(), super::gpu::pass_number())
        } else {
            (NO_EVENT, 0)
        };
        if memory {
            if let Some(log) = local.log.as_ref() {
                // SAFETY: only this thread touches its memory stack.
                unsafe { (*log.memory.get()).enter() };
            }
        }
        local.stack.push(Frame {
            name: id,
            start: ticks(),
            child: 0,
            gpu_start,
            gpu_pass,
            memory,
        });
        true
    })
}

/// Ends the innermost range [`open`] started on this thread.
#[inline(never)]
pub(crate) fn close() {
    let end = ticks();
    LOCAL.with(|local| {
        let Ok(mut local) = local.try_borrow_mut() else {
            return;
        };
        let Some(frame) = local.stack.pop() else {
            return;
        };
        // Paired only within the pass it opened in (see `gpu`).
        let gpu_end = if frame.gpu_start != NO_EVENT
            && frame.gpu_pass == super::gpu::pass_number()
            && MODE.load(Ordering::Relaxed) == MODE_RECORDING_GPU
        {
            super::gpu::record()
        } else {
            NO_EVENT
        };
        let inclusive = end.saturating_sub(frame.start);
        let exclusive = inclusive.saturating_sub(frame.child);
        if let Some(parent) = local.stack.last_mut() {
            parent.child += inclusive;
        }
        let depth = local.stack.len() as u16;
        let Some(log) = local.log.as_ref() else {
            return;
        };
        let memory = if frame.memory {
            // SAFETY: only this thread touches its memory stack.
            Some(unsafe { (*log.memory.get()).leave(crate::memory::attribution::pass_index()) })
        } else {
            None
        };
        let recording = if ASYMMETRIC.load(Ordering::Relaxed) {
            // The collector's membarrier is the other half (module docs).
            log.writing.store(true, Ordering::Relaxed);
            std::sync::atomic::compiler_fence(Ordering::SeqCst);
            RECORDING.load(Ordering::Relaxed)
        } else {
            log.writing.store(true, Ordering::SeqCst);
            RECORDING.load(Ordering::SeqCst)
        };
        if recording {
            // SAFETY: `writing` is raised and recording is on: no one else reads.
            let events = unsafe { &mut *log.events.get() };
            if events.len() < events.capacity() {
                // In clock readings until the capture ends.
                events.push(RangeEvent {
                    name: frame.name,
                    depth,
                    start_ns: frame.start,
                    inclusive_ns: inclusive,
                    exclusive_ns: exclusive,
                    gpu_start: frame.gpu_start,
                    gpu_end,
                });
                // SAFETY: as above.
                let memory_events = unsafe { &mut *log.memory_events.get() };
                if memory_events.capacity() > 0 {
                    // One per event while memory is attributed, so that
                    // the two stay index for index.
                    memory_events.push(memory.unwrap_or_default());
                }
            } else {
                // SAFETY: as above.
                let overflow = unsafe { &mut *log.overflow.get() };
                record_past_the_buffer(overflow, frame.name, inclusive, exclusive);
            }
        }
        log.writing.store(false, Ordering::Release);
    });
}

/// A range closed once its thread's event buffer is full: into its name's
/// aggregates and histograms. Out of line, so that the path every range
/// takes while the buffer has room stays short.
#[cold]
#[inline(never)]
fn record_past_the_buffer(
    overflow: &mut Vec<Option<Box<Overflow>>>,
    name: u32,
    inclusive: u64,
    exclusive: u64,
) {
    let (inclusive_ns, exclusive_ns) = (span_ns(inclusive), span_ns(exclusive));
    let index = name as usize;
    if overflow.len() <= index {
        overflow.resize_with(index + 1, || None);
    }
    let aggregates = overflow[index].get_or_insert_with(|| {
        Box::new(Overflow {
            inclusive: SampleSet::with_capacity(0),
            exclusive: SampleSet::with_capacity(0),
        })
    });
    aggregates.inclusive.push(inclusive_ns);
    aggregates.exclusive.push(exclusive_ns);
}

/// An open capture: ranges are recorded until [`Capture::end`].
pub struct Capture {
    _exclusive: MutexGuard<'static, ()>,
    start_ns: u64,
    thread: u32,
}

impl Capture {
    /// Clears every log and starts recording. Everything the calling
    /// thread needs to record is allocated here, before the first range.
    pub fn begin() -> Capture {
        Capture::begin_expecting(0)
    }

    /// [`Capture::begin`], with the memory of the first `events` events of
    /// every registered thread's buffer touched before recording starts
    /// (up to [`EVENTS_PER_THREAD`]): the buffers are allocated ahead but
    /// their pages are the kernel's until first written, and a page fault
    /// inside a measured pass (a microsecond or more every hundred events)
    /// would be time the target did not spend.
    pub fn begin_expecting(events: usize) -> Capture {
        let exclusive = CAPTURE.lock().unwrap_or_else(|e| e.into_inner());
        let memory = MEMORY.load(Ordering::SeqCst);
        asymmetric_barrier_available();
        let thread = LOCAL.with(|local| local.borrow_mut().log().thread);
        // A capture dropped unended left recording off without waiting.
        heavy_barrier();
        for log in LOGS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            log.wait_idle();
            // SAFETY: recording is off and the log idle: only this thread
            // touches the events and aggregates until recording starts.
            unsafe {
                let buffer = &mut *log.events.get();
                buffer.clear();
                (*log.overflow.get()).clear();
                let memory_events = &mut *log.memory_events.get();
                memory_events.clear();
                if memory {
                    if memory_events.capacity() == 0 {
                        memory_events.reserve_exact(EVENTS_PER_THREAD);
                    }
                    let touched = events.min(memory_events.capacity());
                    let spare = &mut memory_events.spare_capacity_mut()[..touched];
                    std::ptr::write_bytes(spare.as_mut_ptr(), 0, spare.len());
                } else {
                    // Off for this capture: no memory event is pushed.
                    *memory_events = Vec::new();
                }
                let touched = events.min(buffer.capacity());
                let spare = &mut buffer.spare_capacity_mut()[..touched];
                // One write per page is enough; zeroing is as cheap.
                std::ptr::write_bytes(spare.as_mut_ptr(), 0, spare.len());
            }
        }
        LATE_THREADS.store(0, Ordering::SeqCst);
        LATE_NAMES.store(0, Ordering::SeqCst);
        if memory {
            crate::memory::attribution::begin();
        }
        let start_ns = now_ns();
        RECORDING.store(true, Ordering::SeqCst);
        update_mode();
        Capture {
            _exclusive: exclusive,
            start_ns,
            thread,
        }
    }

    /// Stops recording and collects what every thread recorded.
    pub fn end(self) -> RangeLog {
        RECORDING.store(false, Ordering::SeqCst);
        update_mode();
        crate::memory::attribution::end();
        heavy_barrier();
        let end_ns = now_ns();
        // Events hold clock readings while recorded: nanoseconds now.
        let scale = Scale::get();
        let logs: Vec<Arc<ThreadLog>> = LOGS.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut threads = Vec::new();
        for log in logs {
            log.wait_idle();
            // SAFETY: recording is off and the log idle: its owner will not
            // write it until the next capture, which waits for this one.
            let (names, events, overflow, memory) = unsafe {
                (
                    &*log.names.get(),
                    &*log.events.get(),
                    &*log.overflow.get(),
                    &*log.memory_events.get(),
                )
            };
            if events.is_empty() && overflow.is_empty() {
                continue;
            }
            threads.push(ThreadRanges {
                thread: log.thread,
                thread_name: log.thread_name.clone(),
                names: names.iter().map(|n| n.to_string()).collect(),
                events: events_in_ns(events, scale),
                overflow: overflow.iter().map(|o| o.as_deref().cloned()).collect(),
                memory: memory.clone(),
            });
        }
        threads.sort_by_key(|t| t.thread);
        let mut log = RangeLog {
            start_ns: self.start_ns,
            end_ns,
            capture_thread: self.thread,
            threads,
            late_threads: LATE_THREADS.load(Ordering::SeqCst),
            late_names: LATE_NAMES.load(Ordering::SeqCst),
        };
        super::external::capture_ended(&mut log);
        log
    }
}

/// A thread's events, recorded in clock readings, in nanoseconds. A
/// range's exclusive time is its inclusive time less the nanoseconds of
/// its recorded children, so that exclusive plus children is inclusive to
/// the nanosecond (children not recorded, opened before the capture, are
/// taken from the readings). Events come in the order they closed: each
/// range's children just before it, one level deeper.
fn events_in_ns(events: &[RangeEvent], scale: Scale) -> Vec<RangeEvent> {
    // Per depth: the nanoseconds and readings of the ranges closed there
    // since the last range one level up closed.
    let mut children = vec![(0u64, 0u64); MAX_DEPTH + 2];
    events
        .iter()
        .map(|event| {
            let depth = usize::from(event.depth);
            let inclusive_ns = scale.span(event.inclusive_ns);
            let (recorded_ns, recorded) = std::mem::take(&mut children[depth + 1]);
            let child = event.inclusive_ns - event.exclusive_ns;
            let child_ns = recorded_ns + scale.span(child.saturating_sub(recorded));
            let level = &mut children[depth];
            level.0 += inclusive_ns;
            level.1 += event.inclusive_ns;
            RangeEvent {
                start_ns: scale.reading(event.start_ns),
                inclusive_ns,
                exclusive_ns: inclusive_ns.saturating_sub(child_ns),
                ..*event
            }
        })
        .collect()
}

impl Drop for Capture {
    /// A capture left without [`Capture::end`] (a panic unwinding through
    /// the measured loop) still stops recording.
    fn drop(&mut self) {
        RECORDING.store(false, Ordering::SeqCst);
        update_mode();
        crate::memory::attribution::end();
    }
}

/// What memory attribution costs on this machine: allocations and ranges
/// timed with it off and on (the fastest of a few rounds of each); zero
/// where [`crate::memory::CountingAllocator`] is not the global allocator.
/// Takes a few milliseconds and captures of its own: before a run's
/// capture, never inside it.
pub fn measure_memory_cost() -> Cost {
    if !crate::memory::counting_installed() {
        return Cost::default();
    }
    const ALLOCATIONS: u64 = 20_000;
    const RANGES: u64 = 20_000;
    const ROUNDS: usize = 5;
    let fastest = |work: &dyn Fn()| {
        (0..ROUNDS)
            .map(|_| {
                let started = now_ns();
                work();
                now_ns() - started
            })
            .min()
            .unwrap_or(0)
    };
    let allocate = || {
        for size in 0..ALLOCATIONS {
            drop(std::hint::black_box(Vec::<u8>::with_capacity(
                64 + (size & 63) as usize,
            )));
        }
    };
    let ranges = || {
        for _ in 0..RANGES {
            if open(b"memory attribution cost") {
                close();
            }
        }
    };
    let allocations_off = fastest(&allocate);
    // Every event buffer's pages touched ahead, as the runner's capture
    // has them: page faults are not attribution's cost.
    let events = (RANGES as usize) * (ROUNDS + 1);
    let capture = Capture::begin_expecting(events);
    let ranges_off = fastest(&ranges);
    drop(capture.end());
    // One capture with memory on: the table of blocks emptied once.
    set_memory(true);
    let capture = Capture::begin_expecting(events);
    let ranges_on = fastest(&ranges);
    // Inside a range, as a target's allocations mostly are.
    let opened = open(b"memory attribution cost");
    let allocations_on = fastest(&allocate);
    if opened {
        close();
    }
    drop(capture.end());
    set_memory(false);
    let per = |off: u64, on: u64, count: u64| on.saturating_sub(off) as f64 / count as f64;
    Cost {
        per_allocation_ns: per(allocations_off, allocations_on, ALLOCATIONS),
        per_range_ns: per(ranges_off, ranges_on, RANGES),
    }
}

/// True while a capture records ranges.
pub fn is_recording() -> bool {
    RECORDING.load(Ordering::SeqCst)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the process registered for `membarrier`, the collector's side
    /// of the barrier works; elsewhere every writer uses the full barrier.
    #[test]
    fn the_collectors_barrier_works_where_it_is_registered() {
        let registered = asymmetric_barrier_available();
        assert_eq!(ASYMMETRIC.load(Ordering::SeqCst), registered);
        if registered {
            assert!(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED));
        }
        if cfg!(target_os = "linux") {
            // Linux 4.14 and later offer it; this machine's kernel does.
            let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
            let mut parts = release
                .trim()
                .split('.')
                .map(|p| p.parse::<u32>().unwrap_or(0));
            let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
            if (major, minor) >= (4, 14) {
                assert!(registered, "membarrier refused on Linux {}", release.trim());
            }
        }
    }

    /// Captures begin and end while other threads open and close ranges
    /// without pause: every collected event is whole (its name known, its
    /// self time within its time), whichever side of the barrier it fell,
    /// and every writer's ranges are in every capture. Each capture stays
    /// open until every writer has closed a pair of ranges it opened after
    /// recording began, however late the scheduler runs it: no deadline.
    #[test]
    fn captures_collect_whole_events_while_other_threads_keep_writing() {
        const WRITERS: usize = 2;
        let stop = Arc::new(AtomicBool::new(false));
        // Per writer: the pairs of ranges it has closed.
        let closed: Arc<Vec<AtomicU64>> =
            Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
        let writers: Vec<_> = (0..WRITERS)
            .map(|writer| {
                let (stop, closed) = (stop.clone(), closed.clone());
                std::thread::Builder::new()
                    .name(format!("stress writer {writer}"))
                    .spawn(move || {
                        while !stop.load(Ordering::Relaxed) {
                            {
                                let _outer = crate::nvtx::profiling_range("stress outer");
                                let _inner = crate::nvtx::profiling_range("stress inner");
                                std::hint::black_box(0);
                            }
                            closed[writer].fetch_add(1, Ordering::SeqCst);
                        }
                    })
                    .unwrap()
            })
            .collect();
        for _ in 0..50 {
            let capture = Capture::begin();
            // A pair closed after a count read now was opened after
            // recording began: the second one from now, at the latest.
            for count in closed.iter() {
                let since = count.load(Ordering::SeqCst);
                while count.load(Ordering::SeqCst) < since + 2 {
                    std::thread::yield_now();
                }
            }
            let log = capture.end();
            for thread in &log.threads {
                for event in &thread.events {
                    assert!((event.name as usize) < thread.names.len());
                    assert!(event.exclusive_ns <= event.inclusive_ns);
                    assert!(event.depth <= 1);
                }
            }
            for writer in 0..WRITERS {
                let name = format!("stress writer {writer}");
                let thread = log
                    .threads
                    .iter()
                    .find(|t| t.thread_name == name)
                    .unwrap_or_else(|| panic!("{name}'s ranges were recorded"));
                let names: Vec<&str> = thread
                    .events
                    .iter()
                    .map(|e| thread.names[e.name as usize].as_str())
                    .collect();
                assert!(
                    names.contains(&"stress outer") && names.contains(&"stress inner"),
                    "{name}: {names:?}"
                );
            }
        }
        stop.store(true, Ordering::Relaxed);
        for writer in writers {
            writer.join().unwrap();
        }
    }

    /// A name rewritten in place (the same address and length, other
    /// bytes) is another name, whichever bytes changed: the first, the
    /// last, or past 16 bytes, one in the middle.
    #[test]
    fn a_name_rewritten_at_the_same_address_is_another_name() {
        for len in [1usize, 3, 4, 7, 8, 9, 15, 16, 17, 40] {
            let mut buffer = vec![b'a'; len];
            let mut expected = Vec::new();
            let capture = Capture::begin();
            let edits: [(usize, u8); 4] =
                [(len - 1, b'a'), (len - 1, b'b'), (0, b'c'), (len / 2, b'd')];
            for (at, byte) in edits {
                buffer[at] = byte;
                let name = std::str::from_utf8(&buffer).unwrap();
                for _ in 0..2 {
                    drop(crate::nvtx::profiling_range(name));
                    expected.push(name.to_owned());
                }
            }
            let log = capture.end();
            let thread = log
                .threads
                .iter()
                .find(|t| t.thread == log.capture_thread)
                .expect("this thread recorded");
            let seen: Vec<&str> = thread
                .events
                .iter()
                .map(|e| thread.names[e.name as usize].as_str())
                .collect();
            assert_eq!(seen, expected, "names of {len} bytes");
        }
    }

    /// In nanoseconds, a range's exclusive time plus its recorded
    /// children's inclusive times is its inclusive time exactly, however
    /// the readings round; a child not recorded still counts.
    #[test]
    fn exclusive_plus_children_is_inclusive_to_the_nanosecond() {
        let event = |depth: u16, inclusive: u64, exclusive: u64| RangeEvent {
            name: 0,
            depth,
            start_ns: 0,
            inclusive_ns: inclusive,
            exclusive_ns: exclusive,
            gpu_start: NO_EVENT,
            gpu_end: NO_EVENT,
        };
        let children: Vec<u64> = (0..50).map(|i| 1_000 + i * 37).collect();
        let unrecorded = 777;
        let inclusive = 1_000_003 + children.iter().sum::<u64>() + unrecorded;
        let mut events: Vec<RangeEvent> = children.iter().map(|&c| event(1, c, c)).collect();
        events.push(event(
            0,
            inclusive,
            inclusive - children.iter().sum::<u64>() - unrecorded,
        ));
        // A second parent: its children are its own.
        events.push(event(1, 5_000, 5_000));
        events.push(event(0, 9_000, 4_000));
        let converted = events_in_ns(&events, Scale::get());
        let parent = converted[50];
        let children_ns: u64 = converted[..50].iter().map(|e| e.inclusive_ns).sum();
        assert_eq!(
            parent.exclusive_ns + children_ns + span_ns(unrecorded),
            parent.inclusive_ns
        );
        // Within a nanosecond of rounding per child of its own readings.
        assert!(parent.exclusive_ns.abs_diff(span_ns(1_000_003)) <= 52);
        let (child, second) = (converted[51], converted[52]);
        assert_eq!(
            second.exclusive_ns + child.inclusive_ns,
            second.inclusive_ns
        );
        for e in &converted[..50] {
            assert_eq!(e.exclusive_ns, e.inclusive_ns);
        }
    }
}
