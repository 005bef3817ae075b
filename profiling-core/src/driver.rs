//! What a program that lists and runs targets uses: the `profile` binary
//! of a workspace, and `profile-cli`. A target or a data source needs none
//! of it: the [`prelude`](crate::prelude) and the modules at the crate's
//! root are theirs. Each module here names the items of the runtime that a
//! driver calls; the rest of the runtime is private to it.

/// Baselines: runs saved under a name, to compare later runs with.
pub mod baselines {
    pub use crate::baselines::{
        baselines_dir_of_runs, check_baseline_exists, check_baseline_free, check_baseline_name,
        list_baselines, read_baseline_name, save_baseline, BaselineError, BaselineInfo,
    };
}
/// The config file of a profile and the overrides of a command line.
pub mod config {
    pub use crate::config::{
        check_literal_path, check_profile_name, check_run_id, describe_value, locate_key, Batches,
        CacheConfig, Config, ConfigError, ConfigFile, CudaPolicy, GpuTiming, LastBatch, MemoryMode,
        Overrides, RecordLoading, DEFAULT_CAPTURE_RANGE, WORKLOAD_KEYS,
    };
}
/// The machine, the build and the checkout a run is made on.
pub mod host {
    pub use crate::host::{
        build_profile, git_output, git_state, GitState, UtcTime, NOT_A_CHECKOUT_NOTE,
    };
}
/// Ctrl-C and SIGTERM during a run: the run stops between passes and still writes its manifest.
pub mod interrupt {
    pub use crate::interrupt::{
        acknowledge, defer, exit_code, install_handlers, received, reset, simulate, Hold,
    };
}
/// The Nsight Systems command line that captures a run.
pub mod nsys {
    pub use crate::nsys::{
        nsys_command, render_command, report_dir, shell_quote, NsysCapture, NsysCommand,
        REPORT_DIR_SUFFIX, REPORT_STEM,
    };
}
/// What a panic in a target prints.
pub mod panics {
    pub use crate::panics::install_hook;
}
/// The registered targets, and the drafts and targets of other builds.
pub mod registry {
    pub use crate::registry::{
        drafts, lookup, targets, unavailable, Draft, Lookup, TargetEntry, UnavailableTarget,
    };
    pub use crate::suggest::near_matches;
}
/// The run directory: writing its files, and what a stopped write left.
pub mod run_dir {
    pub use crate::run_dir::{
        clean_leftovers, leftovers, move_into_place, recover, staging_dir, write_atomically,
        write_run, ClaimError, Cleaned, RunClaim, TraceInput,
    };
}
/// Running a target: warmup, the measured passes inside the capture range, the outcome.
pub mod runner {
    pub use crate::runner::{
        host_timing_note, paired_blocks, run_target, CallCounts, CaptureRecord, PairSide, Pass,
        PerRecord, Phase, Progress, Records, RunError, RunOutcome, RunPlan, Throughput, Timings,
        Validation, PASSES_KEPT, SAMPLES_KEPT,
    };
}
/// A run from a command line: plan it from the config, execute it, write its directory.
pub mod session {
    pub use crate::session::{
        absolute, check_batches, check_run_dir_free, execute, execute_pair, execute_with_progress,
        explicit_command, plan, profiles, run_root, ConfigOrigin, Planned, ProfileRuns, RunReport,
        RunRequest, SessionError,
    };
}
/// Statistics of durations.
pub mod stats {
    pub use crate::stats::{lower_median, median_interval, DurationStats};
}
/// The clock, the capture of ranges and the GPU time per range.
pub mod timing {
    pub use crate::timing::{
        clock, gpu, memory, recorder, tree, Capture, EventBackend, FakeEvents, GpuTimings,
        RangePathTimings, RangeTimings, SampleSet, TimerInfo,
    };
}
/// `trace.json`, and the range tree read back from one.
pub mod trace {
    pub use crate::trace::{
        live_bytes, live_bytes_of_pass, range_tree_of, trace_document, GPU_TRACK_BASE, LIVE_BYTES,
        MAX_EVENTS,
    };
}
/// Reading sizes and values in the config.
pub mod yaml {
    pub use crate::yaml::parse_size;
}
