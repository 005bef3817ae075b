//! Memory per range: with `memory: on`, every allocation, reallocation and
//! free that [`super::CountingAllocator`] sees while a capture records is
//! charged to the innermost recorded range open on its thread (and every
//! range around it), to the call in progress and to the pass.
//!
//! Each figure is exact: a block allocated while attribution is on is
//! entered in a fixed table with where it was allocated (its thread, the
//! range then open there, its pass and call), so that its free is told
//! apart as the range's own (live bytes fall) or memory allocated elsewhere
//! (counted apart, live bytes unchanged). The table, every thread's frame
//! stack and the event buffers are allocated before recording starts:
//! attributing allocates nothing.
//!
//! A reallocation counts as one allocation of its new size and a free of
//! its old block; the peak of live bytes counts the new size alone.

use std::alloc::GlobalAlloc;
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// What happened to the heap inside one range, call or pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Figures {
    /// Calls to `alloc`, `alloc_zeroed` and `realloc`.
    pub allocations: u64,
    /// Bytes those calls asked for.
    pub allocated_bytes: u64,
    /// Bytes freed of blocks allocated inside.
    pub freed_bytes: u64,
    /// Bytes freed of blocks allocated before it began or outside it.
    pub freed_elsewhere_bytes: u64,
    /// The most bytes allocated inside and not yet freed, at any moment.
    pub peak_bytes: u64,
}

/// One range's figures, recorded when it closes, beside its time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryEvent {
    /// The measured pass it closed in, counted from 0 in the capture.
    pub pass: u32,
    /// Everything inside it, its recorded children included.
    pub inclusive: Figures,
    /// Allocations made while it was the innermost recorded range.
    pub self_allocations: u64,
    pub self_allocated_bytes: u64,
    /// The pass's live bytes (on every thread, since it began) when the
    /// range opened and when it closed: the samples of `trace.json`'s
    /// live-bytes track.
    pub live_at_open: i64,
    pub live_at_close: i64,
}

// The per-thread stack of open ranges.

#[derive(Clone, Copy, Default)]
struct Frame {
    /// The thread's `opens` when it opened: a block tagged with as many or
    /// more (on this thread) was allocated inside it.
    start: u64,
    allocations: u64,
    allocated: u64,
    freed: u64,
    elsewhere: u64,
    live: u64,
    peak: u64,
    self_allocations: u64,
    self_allocated: u64,
    live_at_open: i64,
}

/// The open ranges of one thread, as attribution sees them. Owned by the
/// recorder's log of the thread (so it lives as long as the process) and
/// touched only by that thread.
pub(crate) struct ThreadMemory {
    thread: u64,
    opens: u64,
    depth: usize,
    frames: Box<[Frame]>,
}

thread_local! {
    /// This thread's [`ThreadMemory`], once it recorded a range.
    static THREAD: Cell<*mut ThreadMemory> = const { Cell::new(std::ptr::null_mut()) };
    /// True while the recorder itself allocates on this thread: its own
    /// bookkeeping is not the target's memory.
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

impl ThreadMemory {
    /// The stack of recorder thread `thread`, which records ranges nested
    /// at most `depth` deep (it enters no deeper).
    pub(crate) fn new(thread: u32, depth: usize) -> ThreadMemory {
        ThreadMemory {
            thread: u64::from(thread) & THREAD_MASK,
            opens: 0,
            depth: 0,
            frames: vec![Frame::default(); depth].into_boxed_slice(),
        }
    }

    /// Makes `memory` this thread's stack.
    ///
    /// # Safety
    ///
    /// `memory` must outlive the thread and be touched only by it.
    pub(crate) unsafe fn install(memory: *mut ThreadMemory) {
        THREAD.with(|cell| cell.set(memory));
    }

    /// A range opened on this thread.
    pub(crate) fn enter(&mut self) {
        self.opens += 1;
        self.frames[self.depth] = Frame {
            start: self.opens,
            live_at_open: PASS.live.load(Ordering::Relaxed),
            ..Frame::default()
        };
        self.depth += 1;
    }

    /// The innermost range closed: its figures.
    pub(crate) fn leave(&mut self, pass: u32) -> MemoryEvent {
        if self.depth == 0 {
            return MemoryEvent::default();
        }
        self.depth -= 1;
        let frame = self.frames[self.depth];
        MemoryEvent {
            pass,
            inclusive: Figures {
                allocations: frame.allocations,
                allocated_bytes: frame.allocated,
                freed_bytes: frame.freed,
                freed_elsewhere_bytes: frame.elsewhere,
                peak_bytes: frame.peak,
            },
            self_allocations: frame.self_allocations,
            self_allocated_bytes: frame.self_allocated,
            live_at_open: frame.live_at_open,
            live_at_close: PASS.live.load(Ordering::Relaxed),
        }
    }

    /// The tag of a block allocated now.
    fn tag(&self) -> u64 {
        self.thread << OPENS_BITS | (self.opens & OPENS_MASK)
    }

    fn allocated(&mut self, bytes: u64) {
        if self.depth == 0 {
            return;
        }
        for frame in &mut self.frames[..self.depth] {
            frame.allocations += 1;
            frame.allocated += bytes;
            frame.live += bytes;
            frame.peak = frame.peak.max(frame.live);
        }
        let top = &mut self.frames[self.depth - 1];
        top.self_allocations += 1;
        top.self_allocated += bytes;
    }

    fn freed(&mut self, bytes: u64, tag: Option<u64>) {
        // Own for the frames that were open when the block was allocated
        // on this thread: an outer part of the stack.
        let opened_at = tag
            .filter(|tag| tag >> OPENS_BITS == self.thread)
            .map(|tag| tag & OPENS_MASK);
        for frame in &mut self.frames[..self.depth] {
            if opened_at.is_some_and(|opens| opens >= frame.start) {
                frame.freed += bytes;
                frame.live -= bytes.min(frame.live);
            } else {
                frame.elsewhere += bytes;
            }
        }
    }
}

const OPENS_BITS: u32 = 40;
const OPENS_MASK: u64 = (1 << OPENS_BITS) - 1;
const THREAD_MASK: u64 = (1 << (64 - OPENS_BITS)) - 1;

/// Runs `f` with this thread's allocations left out of attribution: the
/// recorder's own bookkeeping.
pub(crate) fn unattributed<R>(f: impl FnOnce() -> R) -> R {
    let before = BUSY.with(|busy| busy.replace(true));
    let result = f();
    BUSY.with(|busy| busy.set(before));
    result
}

// The call and the pass, over every thread.

struct Window {
    generation: AtomicU32,
    allocations: AtomicU64,
    allocated: AtomicU64,
    freed: AtomicU64,
    elsewhere: AtomicU64,
    live: AtomicI64,
    peak: AtomicI64,
}

impl Window {
    const fn new() -> Window {
        Window {
            generation: AtomicU32::new(0),
            allocations: AtomicU64::new(0),
            allocated: AtomicU64::new(0),
            freed: AtomicU64::new(0),
            elsewhere: AtomicU64::new(0),
            live: AtomicI64::new(0),
            peak: AtomicI64::new(0),
        }
    }

    fn begin(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.allocations.store(0, Ordering::SeqCst);
        self.allocated.store(0, Ordering::SeqCst);
        self.freed.store(0, Ordering::SeqCst);
        self.elsewhere.store(0, Ordering::SeqCst);
        self.live.store(0, Ordering::SeqCst);
        self.peak.store(0, Ordering::SeqCst);
    }

    fn end(&self) -> Figures {
        // A later block is not this window's.
        let figures = Figures {
            allocations: self.allocations.load(Ordering::SeqCst),
            allocated_bytes: self.allocated.load(Ordering::SeqCst),
            freed_bytes: self.freed.load(Ordering::SeqCst),
            freed_elsewhere_bytes: self.elsewhere.load(Ordering::SeqCst),
            peak_bytes: self.peak.load(Ordering::SeqCst).max(0) as u64,
        };
        self.generation.fetch_add(1, Ordering::SeqCst);
        figures
    }

    #[inline]
    fn allocated(&self, bytes: u64) {
        self.allocations.fetch_add(1, Ordering::Relaxed);
        self.allocated.fetch_add(bytes, Ordering::Relaxed);
        let live = self.live.fetch_add(bytes as i64, Ordering::Relaxed) + bytes as i64;
        self.peak.fetch_max(live, Ordering::Relaxed);
    }

    #[inline]
    fn freed(&self, bytes: u64, own: bool) {
        if own {
            self.freed.fetch_add(bytes, Ordering::Relaxed);
            self.live.fetch_sub(bytes as i64, Ordering::Relaxed);
        } else {
            self.elsewhere.fetch_add(bytes, Ordering::Relaxed);
        }
    }
}

static PASS: Window = Window::new();
static CALL: Window = Window::new();
/// The measured pass in progress, from 0 in the capture.
static PASS_INDEX: AtomicU32 = AtomicU32::new(0);
/// Blocks that found no room in the table: their frees count as elsewhere.
static UNTRACKED: AtomicU64 = AtomicU64::new(0);

// Where each block was allocated.

/// Slots in the table of blocks allocated while attribution is on: the
/// most blocks allocated in a capture and alive at once that can be told
/// apart (24 MiB, mapped only as touched).
const TABLE_SLOTS: usize = 1 << 20;
/// Slots looked at before a block is given up as untracked.
const PROBES: usize = 64;
const EMPTY: u64 = 0;
const TOMBSTONE: u64 = 1;

struct Slot {
    key: AtomicU64,
    /// The thread and its range ([`ThreadMemory::tag`]), 0 when none.
    thread: AtomicU64,
    /// The pass's generation above, the call's below.
    windows: AtomicU64,
}

static TABLE: AtomicPtr<Slot> = AtomicPtr::new(std::ptr::null_mut());

fn table() -> Option<&'static [Slot]> {
    let slots = TABLE.load(Ordering::Acquire);
    // SAFETY: set once to an allocation of TABLE_SLOTS zeroed slots that is
    // never freed; atomics zeroed are valid.
    (!slots.is_null()).then(|| unsafe { std::slice::from_raw_parts(slots, TABLE_SLOTS) })
}

#[inline]
fn home(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - TABLE_SLOTS.trailing_zeros())) as usize
}

fn insert(key: u64, thread: u64, windows: u64) -> bool {
    let Some(slots) = table() else { return false };
    let start = home(key);
    for probe in 0..PROBES {
        let slot = &slots[(start + probe) & (TABLE_SLOTS - 1)];
        let current = slot.key.load(Ordering::Relaxed);
        if (current == EMPTY || current == TOMBSTONE)
            && slot
                .key
                .compare_exchange(current, key, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            slot.thread.store(thread, Ordering::Relaxed);
            slot.windows.store(windows, Ordering::Release);
            return true;
        }
    }
    false
}

/// Where the block at `key` was allocated, removing it; `None` when it was
/// allocated before attribution began (or found no room).
fn remove(key: u64) -> Option<(u64, u64)> {
    let slots = table()?;
    let start = home(key);
    for probe in 0..PROBES {
        let slot = &slots[(start + probe) & (TABLE_SLOTS - 1)];
        match slot.key.load(Ordering::Acquire) {
            EMPTY => return None,
            found if found == key => {
                let windows = slot.windows.load(Ordering::Acquire);
                let thread = slot.thread.load(Ordering::Relaxed);
                slot.key.store(TOMBSTONE, Ordering::Release);
                return Some((thread, windows));
            }
            _ => {}
        }
    }
    None
}

/// Allocates the table on first use and empties it: blocks of an earlier
/// capture are elsewhere now. Before recording starts.
fn clear_table() {
    let mut slots = TABLE.load(Ordering::Acquire);
    let bytes = TABLE_SLOTS * std::mem::size_of::<Slot>();
    if slots.is_null() {
        let layout = std::alloc::Layout::array::<Slot>(TABLE_SLOTS).expect("a fixed size");
        // SAFETY: a non-zero layout; the system allocator, not the global
        // one, so the table is never anyone's memory.
        slots = unsafe { std::alloc::System.alloc_zeroed(layout) }.cast::<Slot>();
        if slots.is_null() {
            return;
        }
        TABLE.store(slots, Ordering::Release);
    } else {
        // SAFETY: the table's own bytes; no allocation is tracked while
        // attribution is off.
        unsafe { std::ptr::write_bytes(slots.cast::<u8>(), 0, bytes) };
    }
    // Its pages mapped now, not as faults inside the passes.
    // SAFETY: the table's own bytes.
    super::prefault_slice(unsafe { std::slice::from_raw_parts_mut(slots.cast::<u8>(), bytes) });
}

// The runner's side.

/// Starts attributing (the capture begins): the table is emptied and
/// every figure starts from zero.
pub fn begin() {
    clear_table();
    UNTRACKED.store(0, Ordering::SeqCst);
    PASS_INDEX.store(0, Ordering::SeqCst);
    super::set_attribution(true);
}

/// Stops attributing (the capture ended).
pub fn end() {
    super::set_attribution(false);
}

/// Measured pass `index` begins.
#[inline]
pub fn pass_begins(index: u32) {
    PASS_INDEX.store(index, Ordering::SeqCst);
    PASS.begin();
}

/// The pass in progress ended: what it allocated, on every thread.
#[inline]
pub fn pass_ends() -> Figures {
    PASS.end()
}

/// A call of the target begins.
#[inline]
pub fn call_begins() {
    CALL.begin();
}

/// The call in progress ended: what it allocated, on every thread.
#[inline]
pub fn call_ends() -> Figures {
    CALL.end()
}

/// The measured pass in progress.
pub(crate) fn pass_index() -> u32 {
    PASS_INDEX.load(Ordering::Relaxed)
}

/// Blocks allocated while attributing that the table had no room for:
/// their frees were counted as memory allocated elsewhere.
pub fn untracked_blocks() -> u64 {
    UNTRACKED.load(Ordering::SeqCst)
}

/// What attributing costs on this machine, measured before a capture
/// ([`crate::timing::recorder::measure_memory_cost`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cost {
    /// Added to one allocation and its free.
    pub per_allocation_ns: f64,
    /// Added to one recorded range.
    pub per_range_ns: f64,
}

// The allocator's side.

fn windows_now() -> u64 {
    u64::from(PASS.generation.load(Ordering::Relaxed)) << 32
        | u64::from(CALL.generation.load(Ordering::Relaxed))
}

/// The calling thread's stack, unless the recorder is allocating.
fn thread_memory() -> Option<&'static mut ThreadMemory> {
    if BUSY.with(Cell::get) {
        return None;
    }
    let memory = THREAD.with(Cell::get);
    // SAFETY: installed by the recorder for this thread, alive for the
    // process and touched by no other thread; the allocator runs no range
    // code, so no other reference to it is live now.
    unsafe { memory.as_mut() }
}

// The allocator calls these only while attribution is on, as its one
// load of the hooks says.

/// A block of `bytes` at `ptr` was allocated, or is the new block of a
/// reallocation.
#[cold]
pub(super) fn on_alloc(ptr: *mut u8, bytes: u64) {
    if BUSY.with(Cell::get) {
        return;
    }
    let memory = thread_memory();
    let thread = memory.as_ref().map_or(0, |m| m.tag());
    if !insert(ptr as u64, thread, windows_now()) {
        UNTRACKED.fetch_add(1, Ordering::Relaxed);
    }
    PASS.allocated(bytes);
    CALL.allocated(bytes);
    if let Some(memory) = memory {
        memory.allocated(bytes);
    }
}

/// The block of `bytes` at `ptr` is about to be freed.
#[cold]
pub(super) fn on_free(ptr: *mut u8, bytes: u64) {
    if BUSY.with(Cell::get) {
        return;
    }
    account_free(bytes, remove(ptr as u64));
}

fn account_free(bytes: u64, found: Option<(u64, u64)>) {
    let windows = found.map(|(_, windows)| windows);
    PASS.freed(
        bytes,
        windows.is_some_and(|w| (w >> 32) as u32 == PASS.generation.load(Ordering::Relaxed)),
    );
    CALL.freed(
        bytes,
        windows.is_some_and(|w| w as u32 == CALL.generation.load(Ordering::Relaxed)),
    );
    if let Some(memory) = thread_memory() {
        memory.freed(bytes, found.map(|(thread, _)| thread).filter(|&t| t != 0));
    }
}

/// Where the block at `ptr`, about to be reallocated, was allocated: taken
/// out of the table before the system may hand its address to another
/// thread. `None` when the recorder is the one reallocating.
#[cold]
pub(super) fn before_realloc(ptr: *mut u8) -> Option<Option<(u64, u64)>> {
    if BUSY.with(Cell::get) {
        return None;
    }
    Some(remove(ptr as u64))
}

/// The reallocation of a block [`before_realloc`] took out: a free of the
/// old block and one allocation of the new size, or, when it failed, the
/// old block back in the table.
#[cold]
pub(super) fn after_realloc(
    taken: Option<(u64, u64)>,
    old: *mut u8,
    old_bytes: u64,
    new: *mut u8,
    new_bytes: u64,
) {
    if new.is_null() {
        if let Some((thread, windows)) = taken {
            insert(old as u64, thread, windows);
        }
        return;
    }
    account_free(old_bytes, taken);
    on_alloc(new, new_bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frees_are_own_for_the_ranges_open_when_the_block_was_allocated() {
        let mut memory = ThreadMemory::new(3, 8);
        memory.enter(); // outer
        memory.allocated(100);
        let outer_block = memory.tag();
        memory.enter(); // inner
        memory.allocated(40);
        let inner_block = memory.tag();
        memory.freed(100, Some(outer_block));
        memory.freed(40, Some(inner_block));
        memory.freed(7, None);
        // Another thread's block is elsewhere for every range.
        memory.freed(5, Some(4 << OPENS_BITS | 1));
        let inner = memory.leave(2);
        assert_eq!(
            inner.inclusive,
            Figures {
                allocations: 1,
                allocated_bytes: 40,
                freed_bytes: 40,
                freed_elsewhere_bytes: 112,
                peak_bytes: 40,
            }
        );
        assert_eq!(inner.pass, 2);
        let outer = memory.leave(2);
        assert_eq!(
            outer.inclusive,
            Figures {
                allocations: 2,
                allocated_bytes: 140,
                freed_bytes: 140,
                freed_elsewhere_bytes: 12,
                peak_bytes: 140,
            }
        );
        assert_eq!(
            (outer.self_allocations, outer.self_allocated_bytes),
            (1, 100)
        );
    }

    #[test]
    fn a_sibling_closed_before_a_range_opened_is_elsewhere_for_it() {
        let mut memory = ThreadMemory::new(1, 8);
        memory.enter(); // parent
        memory.enter(); // first child
        memory.allocated(8);
        let block = memory.tag();
        memory.leave(0);
        memory.enter(); // second child
        memory.freed(8, Some(block));
        let second = memory.leave(0);
        assert_eq!(second.inclusive.freed_elsewhere_bytes, 8);
        assert_eq!(second.inclusive.freed_bytes, 0);
        let parent = memory.leave(0);
        assert_eq!(parent.inclusive.freed_bytes, 8);
        assert_eq!(
            parent.inclusive.allocated_bytes - parent.inclusive.freed_bytes,
            0
        );
    }

    /// The table is the process's: its tests take turns.
    static TABLE_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn the_table_finds_what_it_holds_and_forgets_what_was_removed() {
        let _turn = TABLE_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        clear_table();
        assert!(insert(0x1000, 7, 9));
        assert!(insert(0x2000, 8, 10));
        assert_eq!(remove(0x1000), Some((7, 9)));
        assert_eq!(remove(0x1000), None);
        assert_eq!(remove(0x3000), None);
        // A tombstone is reused, and lookups pass over it.
        assert!(insert(0x1000, 1, 2));
        assert_eq!(remove(0x2000), Some((8, 10)));
        assert_eq!(remove(0x1000), Some((1, 2)));
    }

    /// Blocks whose addresses share a home slot take the slots after it,
    /// in the order inserted; removing one leaves the others found, past
    /// its tombstone, and a new one takes the tombstone, not an occupied slot.
    #[test]
    fn blocks_with_one_home_slot_are_all_found() {
        let _turn = TABLE_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        clear_table();
        let first = 0x7f00_0000_1000u64;
        let same: Vec<u64> = (1..)
            .map(|i| first + i * 16)
            .filter(|&key| home(key) == home(first))
            .take(3)
            .collect();
        let keys = [first, same[0], same[1]];
        for (index, &key) in keys.iter().enumerate() {
            assert!(insert(key, index as u64 + 1, 0));
        }
        assert_eq!(remove(keys[1]), Some((2, 0)));
        assert!(insert(same[2], 4, 0));
        assert_eq!(remove(keys[2]), Some((3, 0)));
        assert_eq!(remove(keys[0]), Some((1, 0)));
        assert_eq!(remove(same[2]), Some((4, 0)));
        assert_eq!(remove(keys[1]), None);
    }
}
