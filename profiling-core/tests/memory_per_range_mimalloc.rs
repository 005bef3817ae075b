//! Memory per range with the counting allocator wrapping mimalloc, as
//! `profile-cli new` wraps a production binary's global allocator: the
//! same charges to the byte (`memory_per_range_tests`), the blocks served
//! by mimalloc.

use std::alloc::GlobalAlloc;

use profiling_core::memory::CountingAllocator;

mod memory_per_range_tests;

#[global_allocator]
static ALLOCATOR: CountingAllocator<mimalloc::MiMalloc> =
    CountingAllocator::new(mimalloc::MiMalloc);

fn main() {
    // mimalloc serves the blocks: one allocated through the global
    // allocator is in its heap, one from the system's is not.
    let ours = Box::new([0u8; 100]);
    // SAFETY: a layout of non-zero size.
    let systems = unsafe { std::alloc::System.alloc(std::alloc::Layout::new::<[u8; 100]>()) };
    // SAFETY: mi_is_in_heap_region only compares the address with
    // mimalloc's regions.
    unsafe {
        assert!(libmimalloc_sys::mi_is_in_heap_region(ours.as_ptr().cast()));
        assert!(!libmimalloc_sys::mi_is_in_heap_region(systems.cast()));
        std::alloc::System.dealloc(systems, std::alloc::Layout::new::<[u8; 100]>());
    }
    drop(ours);
    memory_per_range_tests::main("mimalloc::MiMalloc");
}
