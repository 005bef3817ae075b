//! Memory per range with the counting allocator over the system's
//! allocator (`memory_per_range_tests`).

use profiling_core::memory::CountingAllocator;

mod memory_per_range_tests;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn main() {
    memory_per_range_tests::main("std::alloc::System");
}
