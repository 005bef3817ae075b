//! `profile-cli`: lists and runs the profile targets linked into it.

// Linking these crates is what registers their targets.
use inference_profiling as _;
use profiling_examples as _;

// Counts what a target's `prepare` keeps, so that eager runs that would not
// fit in memory are refused; one relaxed load per allocation otherwise.
#[global_allocator]
static ALLOCATOR: profiling_core::memory::CountingAllocator =
    profiling_core::memory::CountingAllocator;

fn main() -> std::process::ExitCode {
    profiling_cli::run_main()
}
