//! `profile-cli`: lists and runs the profile targets linked into it.

use std::path::Path;
use std::process::ExitCode;

// Linking these crates is what registers their targets.
use inference_profiling as _;
use profiling_examples as _;

// Counts what a target's `prepare` keeps, so that eager runs that would not
// fit in memory are refused; one relaxed load per allocation otherwise.
#[global_allocator]
static ALLOCATOR: profiling_core::memory::CountingAllocator =
    profiling_core::memory::CountingAllocator;

fn main() -> ExitCode {
    // Ctrl-C and SIGTERM stop a run after its current call, with a manifest;
    // a second one ends the process at once.
    if let Err(error) = profiling_core::interrupt::install_handlers() {
        eprintln!(
            "warning: cannot handle Ctrl-C ({error}): an interrupted run will leave no manifest"
        );
    }
    profiling_core::panics::install_hook();
    // The workspace this binary was built from: relative source files of
    // targets and the default run directories are found from it.
    let workspace_root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."));
    let code = profiling_cli::main_with(
        std::env::args_os().collect(),
        workspace_root,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    ExitCode::from(code)
}
