//! What memory attribution (`memory: on`) costs, side by side with off:
//! an allocation and its free, and a recorded range. The counting
//! allocator is this bench's global allocator, as it is `profile-cli`'s.
//!
//! `cargo bench -p profiling-core --bench memory`

use std::hint::black_box;

use profiling_core::memory::CountingAllocator;
use profiling_core::nvtx::profiling_range;
use profiling_core::timing::recorder::{set_memory, EVENTS_PER_THREAD};
use profiling_core::timing::Capture;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn main() {
    drop(profiling_range(c"initialize"));
    divan::main();
}

/// A 64-byte block allocated and freed, nothing attributed: what every
/// allocation of a run with `memory: off` costs.
#[divan::bench]
fn allocation_memory_off() {
    drop(black_box(Vec::<u8>::with_capacity(black_box(64))));
}

/// The same inside three nested recorded ranges with `memory: on`: the
/// block entered in the table of blocks and charged to the call, the pass
/// and each open range, then its free.
#[divan::bench(sample_count = 100, sample_size = 2000)]
fn allocation_memory_on(bencher: divan::Bencher) {
    set_memory(true);
    let capture = Capture::begin_expecting(EVENTS_PER_THREAD);
    {
        let _outer = profiling_range("outer");
        let _middle = profiling_range("middle");
        let _inner = profiling_range("inner");
        bencher.bench_local(|| drop(black_box(Vec::<u8>::with_capacity(black_box(64)))));
    }
    drop(capture.end());
    set_memory(false);
}

/// A recorded range, memory off: the runner's captures as they are.
#[divan::bench(sample_count = 100, sample_size = 2000)]
fn range_recording_memory_off(bencher: divan::Bencher) {
    let capture = Capture::begin_expecting(EVENTS_PER_THREAD);
    bencher.bench_local(|| {
        let _range = profiling_range("decode_boxes");
    });
    drop(capture.end());
}

/// A recorded range with `memory: on`: its frame on the thread's memory
/// stack, the pass's live bytes read when it opens and closes, and its
/// figures stored beside its time.
#[divan::bench(sample_count = 100, sample_size = 2000)]
fn range_recording_memory_on(bencher: divan::Bencher) {
    set_memory(true);
    let capture = Capture::begin_expecting(EVENTS_PER_THREAD);
    bencher.bench_local(|| {
        let _range = profiling_range("decode_boxes");
    });
    drop(capture.end());
    set_memory(false);
}
