//! Opening and closing a range with a literal name never allocates.
//!
//! Allocations are counted on the test's own thread: what the test harness
//! (or anything else in the process) allocates meanwhile on other threads
//! is not a range's cost, and a busy machine changes when that happens.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use profiling_core::nvtx_range;
use profiling_core::prelude::*;

struct Counting;

thread_local! {
    // Constant-initialized, without a destructor: reading it never allocates.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator, counting calls per thread.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[nvtx_range]
fn decode_boxes(x: u32) -> u32 {
    x + 1
}

#[nvtx_range("renamed stage")]
fn renamed(x: u32) -> u32 {
    x * 2
}

fn allocations_during(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn literal_ranges_do_not_allocate() {
    // The first NVTX call initializes the loader; that is not a range's cost.
    drop(profiling_range(c"initialize"));
    let long_name = "n".repeat(255);
    let counted = allocations_during(|| {
        for _ in 0..1000 {
            let _a = profiling_range(c"c string");
            let _b = profiling_range("str literal");
            let _c = profiling_range(long_name.as_str());
            let _d = profiling_range_if_cuda("cuda only", Device::Cpu);
            let _e = profiling_range_if_cuda("cuda only", Device::Cuda(0));
            assert_eq!(decode_boxes(1), 2);
            assert_eq!(renamed(2), 4);
        }
    });
    assert_eq!(counted, 0);
    // A name too long for the stack buffer is the one case that allocates.
    let longer = "n".repeat(256);
    assert_eq!(
        allocations_during(|| drop(profiling_range(longer.as_str()))),
        1
    );
}
