//! What a capture recorded, as the recorder hands it over: the ranges of
//! each thread, their names and what did not fit the event buffers. The
//! recorder writes it; GPU timing, the aggregates and the trace read it.

use super::SampleSet;

/// The event index of a boundary that recorded none.
pub(crate) const NO_EVENT: u32 = u32::MAX;

/// One closed range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeEvent {
    /// Index into the thread's name table.
    pub name: u32,
    /// 0 for a range opened outside any other recorded range.
    pub depth: u16,
    pub start_ns: u64,
    pub inclusive_ns: u64,
    /// Inclusive time minus the time of the recorded ranges inside it.
    pub exclusive_ns: u64,
    /// The device events at its start and end ([`super::gpu`]), or
    /// [`NO_EVENT`].
    pub gpu_start: u32,
    pub gpu_end: u32,
}

/// Aggregates of one name's ranges that did not fit the event buffer.
#[derive(Debug, Clone)]
pub struct Overflow {
    pub inclusive: SampleSet,
    pub exclusive: SampleSet,
}

/// The ranges one thread recorded during a capture.
#[derive(Debug, Clone)]
pub struct ThreadRanges {
    /// A small number unique in the process, in order of first range.
    pub thread: u32,
    pub thread_name: String,
    /// The names events refer to by index.
    pub names: Vec<String>,
    /// Ranges in the order they closed, up to [`EVENTS_PER_THREAD`](super::recorder::EVENTS_PER_THREAD).
    pub events: Vec<RangeEvent>,
    /// By name index: what did not fit `events`.
    pub overflow: Vec<Option<Overflow>>,
    /// With `memory: on`: each event's allocations, at the event's index;
    /// empty otherwise.
    pub memory: Vec<crate::memory::attribution::MemoryEvent>,
}

impl ThreadRanges {
    /// Ranges recorded only as aggregates.
    pub fn overflowed(&self) -> u64 {
        self.overflow
            .iter()
            .flatten()
            .map(|o| o.inclusive.count())
            .sum()
    }
}

/// Everything recorded between [`Capture::begin`](super::Capture::begin)
/// and [`Capture::end`](super::Capture::end).
#[derive(Debug, Clone, Default)]
pub struct RangeLog {
    pub start_ns: u64,
    pub end_ns: u64,
    /// The thread that opened the capture.
    pub capture_thread: u32,
    pub threads: Vec<ThreadRanges>,
    /// Threads whose first range came inside the capture: each allocated
    /// its log and took a lock inside a measured pass.
    pub late_threads: u32,
    /// Names first seen inside the capture (per thread): each allocated.
    pub late_names: u32,
}

impl RangeLog {
    /// The ranges that started inside one of `passes` (start and end, ns,
    /// in order): what one side of a paired capture recorded. Ranges past
    /// a thread's event buffer are kept only as aggregates by name, with
    /// no start, so they cannot be told apart: they are left out.
    pub fn within(&self, passes: &[(u64, u64)]) -> RangeLog {
        let inside = |start: u64| {
            let after = passes.partition_point(|&(begin, _)| begin <= start);
            after
                .checked_sub(1)
                .is_some_and(|index| start <= passes[index].1)
        };
        RangeLog {
            threads: self
                .threads
                .iter()
                .map(|thread| ThreadRanges {
                    events: thread
                        .events
                        .iter()
                        .filter(|event| inside(event.start_ns))
                        .copied()
                        .collect(),
                    memory: thread
                        .events
                        .iter()
                        .zip(&thread.memory)
                        .filter(|(event, _)| inside(event.start_ns))
                        .map(|(_, memory)| *memory)
                        .collect(),
                    overflow: vec![None; thread.overflow.len()],
                    ..thread.clone()
                })
                .collect(),
            ..self.clone()
        }
    }
}
