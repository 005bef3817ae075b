//! The `profile-cli` command line: parses arguments and prints, calling
//! `profiling_core` for everything else.
//!
//! [`main_with`] is the whole program with its streams passed in, so tests
//! run it in-process against the targets they link.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use std::io::IsTerminal;

use clap::{Args, Parser, Subcommand};
use profiling_core::config::{GpuTiming, Overrides, RecordLoading};
use profiling_core::device::Device;
use profiling_core::registry::{self, TargetEntry};
use profiling_core::session::{self, ConfigOrigin, RunRequest, SessionError};

/// Exit code: the run finished.
pub const EXIT_OK: u8 = 0;
/// Exit code: the target failed (or results could not be written).
pub const EXIT_TARGET_FAILED: u8 = 1;
/// Exit code: bad usage, config or data.
pub const EXIT_USAGE: u8 = 2;

#[cfg(feature = "full")]
mod analyze;
mod cache;
#[cfg(feature = "full")]
pub mod compare;
pub mod decide;
#[cfg(feature = "full")]
mod delegate;
mod outcome;
#[cfg(feature = "full")]
pub mod page;
pub mod report;
mod runs;
#[cfg(feature = "full")]
mod snippets;
pub mod sweep;

#[derive(Debug, Parser)]
#[command(
    name = "profile-cli",
    version,
    about = "Profile isolated snippets of inference code under NVTX ranges",
    long_about = "Profile isolated snippets of inference code.\n\n\
        A target registered with #[profile_target] runs on a config-driven data source: \
        warmup passes, then measured passes inside one NVTX capture range that Nsight Systems \
        can capture alone, then a manifest.yaml recording what ran and how long it took.\n\n\
        Exit codes: 0 done, 1 the target failed, 2 bad usage, config or data, 3 a regression \
        found by compare (or run --baseline) with --fail-on-regression."
)]
struct Cli {
    /// The cargo workspace `new`, `check` and `init` work in (default: the one the current
    /// directory is in, found as cargo finds it).
    #[arg(long, value_name = "DIR", global = true)]
    workspace: Option<PathBuf>,
    /// In a workspace with a profiling crate of its own, run `list` and `run` with this binary's
    /// targets instead of building and running that workspace's `profile` binary.
    #[arg(long, global = true)]
    no_delegate: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show every registered target: name, source location, description.
    List {
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Run a target: warmup passes, then measured passes inside the capture range.
    ///
    /// The config comes from --config FILE; failing that, from the config.yaml beside
    /// the target's source file when it names this target; failing that, from built-in
    /// defaults (dummy data source, cpu, warmup 1, iterations 1). Options given here
    /// win over the config.
    Run(RunArgs),
    /// Copy a production function into a new snippet: target.rs, config.yaml, README.md.
    ///
    /// Creates inference_profiling/snippets/<NAME with - as _>/ (or --directory): target.rs holds
    /// the function copied byte for byte from its file with an NVTX range added, `use`s of the
    /// items of its module it calls (so it runs the production helpers), and a #[profile_target]
    /// whose `run` calls the copy; config.yaml spells out every key; README.md records where the
    /// code came from and what is left to do. A line range selects the function holding it; when
    /// the lines are whole statements of one block, the range goes around just them.
    ///
    /// In inference_profiling/snippets/ the snippet is a crate of its own (a Cargo.toml beside
    /// target.rs). Then, unless --no-check, `check` builds it: linked in when it compiles, else left
    /// a draft (a DRAFT file says why) that nothing compiles, so every other target still builds;
    /// with --smoke, also runs the new target once.
    ///
    /// Exit codes: 0 created: linked in, or left a draft, or with a parity test that cannot run
    /// until an input is mapped (what is left to do is printed); 1 created, but the copy does not
    /// compute what production computes, or the smoke run failed, or the files could not be
    /// written; 2 bad usage or an unusable source, and nothing was written.
    #[cfg(feature = "full")]
    New(NewArgs),
    /// Build a snippet with the snippets crate: link it in when it compiles, else leave it a draft.
    ///
    /// NAME is the snippet's profile name (its directory is inference_profiling/snippets/<NAME
    /// with - as _>) or its directory. Builds inference-profiling with the snippet included. When
    /// that compiles, the snippet is linked in (a draft no longer: its DRAFT file is removed);
    /// when its files do not compile, the compiler's messages about them are printed and it
    /// becomes (or stays) a draft, which nothing compiles, so every other target still builds. A
    /// snippet dropped in with only a target.rs gets a Cargo.toml: a crate of its own.
    ///
    /// Once linked in, runs the snippet's parity test (the copy against the production function
    /// on the records of its config.yaml), when it has one: one line says how it went.
    ///
    /// Exit codes: 0 it builds and is linked in (its parity test passed; with --smoke, it ran); 1
    /// it does not build (a draft now), its parity test failed, or the build failed elsewhere; 2
    /// no such snippet.
    #[cfg(feature = "full")]
    Check(CheckArgs),
    /// Delete a snippet: its directory and its entry in the profiling crate's Cargo.toml.
    ///
    /// NAME is the snippet's profile name or directory. Refused while the snippet holds runs or
    /// baselines, unless --force. A snippet directory already deleted by hand leaves an entry
    /// cargo cannot build with: `remove NAME` (its directory name, - or _) removes that entry.
    ///
    /// Exit codes: 0 removed; 2 no such snippet, or runs or baselines kept it (nothing removed).
    #[cfg(feature = "full")]
    Remove(RemoveArgs),
    /// Compare runs: did the change make it faster, where, and is the difference real?
    ///
    /// For the pass, the call and every range (inclusive, and self time where ranges nest): the
    /// base and candidate medians, their ratio (candidate / base) with a 95 % bootstrap interval,
    /// a Mann-Whitney U p-value, and a verdict: faster, slower, no change (the whole interval is
    /// within 1 ± the noise threshold) or unclear. Ranges in one run only are listed as added or
    /// removed. Rows are ordered by how much of a pass their change moves. Above the table, one
    /// line per difference between the manifests that changes what a time means (data, workload,
    /// device, build, host...). Nothing is written.
    ///
    /// Exit codes: 0 compared (also with a regression, unless --fail-on-regression); 2 a run that
    /// cannot be compared (not a run, failed, made before samples were kept, the same run twice,
    /// different targets) or an unknown profile, run or baseline; 3 with --fail-on-regression, a
    /// row is slower beyond the noise threshold.
    #[cfg(feature = "full")]
    Compare(compare::CompareArgs),
    /// List the baselines saved with `run --save-baseline NAME`, of one profile or of all.
    #[cfg(feature = "full")]
    Baselines(compare::BaselinesArgs),
    /// Write the HTML page of a run, or of a comparison of runs, and print its path.
    ///
    /// One run: its page (what every run writes beside its manifest as report.html): the header,
    /// a flame graph of its ranges, the range table, the distributions of pass and call times and
    /// the pass timeline; a run made before samples were kept gets a page without the plots that
    /// need them. Two or more runs: the first is the base; the page holds the comparison table of
    /// `compare`, a chart of each row's ratio with its interval, the manifest differences and each
    /// run's flame graph side by side. The page is one file: nothing in it is fetched.
    ///
    /// A sweep's directory (or PROFILE@SWEEP_ID): its page, sweep.html, as `sweep` writes it.
    ///
    /// Exit codes: 0 written; 1 it could not be written; 2 a run that cannot be read or compared,
    /// or -o FILE that exists without --force.
    #[cfg(feature = "full")]
    Report(compare::ReportArgs),
    /// GPU time per NVTX range from the run's Nsight Systems report.
    ///
    /// PATH is a run directory (its trace.sqlite, else its trace.nsys-rep, exported once with
    /// `nsys export --type sqlite` when nsys is on PATH; else the command to run is printed), an
    /// .nsys-rep report or its .sqlite export. Inside the capture range, per range path: calls,
    /// host time (and the run's own manifest figure beside it), GPU busy time of the kernels,
    /// memcpys and memsets launched from the range's thread while it was open, their time per
    /// pass, the time from first launch to last completion, and the top kernels; per pass, how
    /// busy the GPU was and its longest idle gap. Writes analysis.yaml beside the run's manifest.
    ///
    /// Exit codes: 0 analyzed; 1 analysis.yaml could not be written; 2 no export (and no nsys to
    /// make one), not an Nsight export, no NVTX ranges, no capture range of that name, or a report
    /// of another run (its passes do not match the manifest; --force analyzes it anyway).
    #[cfg(feature = "full")]
    Analyze(analyze::AnalyzeArgs),
    /// Create the profiling crate of your own cargo workspace: inference_profiling/.
    ///
    /// Run anywhere inside the workspace (or give --workspace). Creates inference_profiling/ with
    /// its Cargo.toml (depending on profiling-core and profiling-cli from this project: by path to
    /// this checkout, or --core-path / --core-git), the build script that links snippets/* in, and a
    /// `profile` binary whose command line is this one; adds it to the workspace's members and
    /// changes nothing else. A package that is not a workspace gets a [workspace] table only with
    /// --make-workspace. A second `init` changes nothing.
    ///
    /// Exit codes: 0 created (or already there); 1 a file could not be written; 2 no workspace,
    /// an inference_profiling/ that is something else, or a package without --make-workspace
    /// (nothing written).
    #[cfg(feature = "full")]
    Init(InitArgs),
    /// The decoded-image cache that `run --cache` (or `data_source.cache: true`) fills.
    ///
    /// With the cache on, the images source keeps each image it decodes in
    /// .cache/images/ under the root of the run directories (the workspace's inference_profiling/,
    /// or the output directory), and later runs read it back instead of decoding the file again,
    /// for as long as the file keeps its path, size and modification time. It holds at most
    /// data_source.cache_max_bytes (default 2 GiB), the images used longest ago going first.
    Cache(cache::CacheArgs),
    /// Run directories: what runs that stopped while writing left beside them.
    Runs(runs::RunsArgs),
    /// Run a target once per point of a grid of config values: how each range scales.
    ///
    /// Each --set KEY=V1,V2,... names a config key (dotted: workload.batch_size,
    /// data_source.record_count, data_source.image_shape, target.parameters.NAME, device, ...) and
    /// its values, read as YAML and checked as the config would check them; the grid is the
    /// cartesian product of the lists (the last key varying fastest), or with --zip the lists side
    /// by side. Without --set, the config's `sweep:` mapping (KEY: [values], zip: true|false) is
    /// the grid. Every point is planned and checked before the first runs.
    ///
    /// Each point is an ordinary run, in one process (nothing is rebuilt between points), in
    /// runs/<SWEEP_ID>/<point>/ under the profile's runs directory, with its manifest (the point's
    /// values under `sweep:`), samples and page. sweep.yaml beside them holds the grid and, per
    /// point, its status and the pass, call and per-range medians with 95 % intervals, time per
    /// record and records per second; it is rewritten after every point. A table of the points
    /// is printed at the end, and sweep.html draws each range against the swept value.
    ///
    /// A failed point is recorded with its error and the sweep goes on (--fail-fast stops it).
    /// Ctrl-C stops the sweep once the current point is done (a second Ctrl-C at once), and
    /// `sweep NAME --resume SWEEP_ID` runs the points that have not completed.
    ///
    /// Exit codes: 0 every point completed; 1 some point failed, or a file could not be written;
    /// 2 bad usage, an unknown key, a value the key does not take, an empty list, --zip lists of
    /// different lengths, more than 1,000 points without --yes, or a point the run would refuse
    /// (nothing is written then); 130 or 143 stopped by a signal.
    Sweep(sweep::SweepArgs),
    /// The profiles of this build and their runs directories, as JSON: what `profile-cli
    /// compare`, `report` and `baselines` read a profiling binary's runs with.
    #[command(hide = true)]
    Profiles,
}

#[cfg(feature = "full")]
#[derive(Debug, Args)]
struct InitArgs {
    /// The checkout of this project whose profiling-core and profiling-cli it depends on.
    #[arg(long, value_name = "DIR", conflicts_with = "core_git")]
    core_path: Option<PathBuf>,
    /// Depend on profiling-core and profiling-cli from this git repository instead.
    #[arg(long, value_name = "URL")]
    core_git: Option<String>,
    /// Turn a package that is not a workspace into one, with the profiling crate as a member.
    #[arg(long)]
    make_workspace: bool,
}

#[cfg(feature = "full")]
#[derive(Debug, Args)]
struct CheckArgs {
    /// The snippet: its profile name, or its directory.
    name: String,
    /// Also run its target once (no warmup, one measured pass) on its config.yaml.
    #[arg(long)]
    smoke: bool,
}

#[cfg(feature = "full")]
#[derive(Debug, Args)]
struct RemoveArgs {
    /// The snippet: its profile name, or its directory.
    name: String,
    /// Remove it even though it holds runs or baselines: they go too.
    #[arg(long)]
    force: bool,
}

#[cfg(feature = "full")]
#[derive(Debug, Args)]
struct NewArgs {
    /// The profile name: the new target's name, and (with - as _) its directory's.
    name: String,
    /// What to copy: FILE.rs::FUNCTION, FILE.rs::TYPE::METHOD or FILE.rs:START-END.
    #[arg(long, value_name = "SOURCE")]
    from: String,
    /// The data source of the generated config: dummy or images.
    #[arg(long, value_name = "NAME", default_value = "dummy")]
    data_source: String,
    /// The device of the generated config: cpu, cuda (= cuda:0) or cuda:N.
    #[arg(long, value_name = "DEVICE", value_parser = parse_device, default_value = "cpu")]
    device: Device,
    /// The types (and const values) of a generic function's parameters: D=(),T=f32,N=4. The copy
    /// keeps its generics; `run` calls it with these (the build check checks them against the
    /// bounds).
    #[arg(long, value_name = "NAME=TYPE,...")]
    type_args: Option<String>,
    /// Create the snippet in DIR (which must not exist) instead of inference_profiling/snippets/.
    #[arg(long, value_name = "DIR")]
    directory: Option<PathBuf>,
    /// Do not build the snippet afterwards: it stays a draft until `profile-cli check NAME`.
    #[arg(long)]
    no_check: bool,
    /// Also run the new target once (no warmup, one measured pass) on its config.
    #[arg(long)]
    smoke: bool,
    /// When the function only prepares its arguments and calls another function of its file,
    /// copy that one instead: the profile then times a body, not one call.
    #[arg(long)]
    follow: bool,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The target to run (`profile-cli list` shows them); defaults to the config's target.name.
    name: Option<String>,
    /// The YAML config of the run.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The data source: dummy or images (its parameters come from the config).
    #[arg(long, value_name = "NAME")]
    data_source: Option<String>,
    /// The images in DIR are the records (the images source's `directory`, in place of the
    /// config's `directory` or `paths`); the source is images unless --data-source names another.
    #[arg(long, value_name = "DIR")]
    directory: Option<PathBuf>,
    /// cpu, cuda (= cuda:0) or cuda:N.
    #[arg(long, value_name = "DEVICE", value_parser = parse_device)]
    device: Option<Device>,
    /// Passes run before the capture range opens.
    #[arg(long, value_name = "N")]
    warmup: Option<u32>,
    /// Measured passes inside the capture range (at least 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    iterations: Option<u32>,
    /// Records per target call (workload.batch_size, at least 1): above 1, the records are grouped
    /// in order into batches, each prepared by the target's `prepare_batch` and run in one call.
    #[arg(long, value_name = "N")]
    batch_size: Option<u32>,
    /// The name of the NVTX range Nsight captures.
    #[arg(long, value_name = "NAME")]
    capture_range: Option<String>,
    /// eager (read records once) or lazy (read them in every pass; needs target.profile_prepare).
    #[arg(long, value_name = "MODE", value_parser = parse_record_loading)]
    record_loading: Option<RecordLoading>,
    /// Seeds every random generator the run uses.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// GPU time per range from CUDA events at range, call and pass boundaries: auto (on for cuda
    /// runs of a build with the tch feature), on (refused where it cannot be) or off.
    #[arg(long, value_name = "MODE", value_parser = parse_gpu_timing)]
    gpu_timing: Option<GpuTiming>,
    /// Read decoded images from the image cache where their files are unchanged, and store the
    /// ones decoded (images source; as `data_source.cache: true`). `profile-cli cache clean`
    /// empties it.
    #[arg(long, conflicts_with = "no_cache")]
    cache: bool,
    /// Decode every image, whatever the config's `data_source.cache` says.
    #[arg(long)]
    no_cache: bool,
    /// The run's directory name under runs/ (default: UTC time, YYYYMMDDTHHMMSSZ).
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
    /// Put the run in DIR/<profile_name>/runs/<run_id>/.
    #[arg(long, value_name = "DIR")]
    output_dir: Option<PathBuf>,
    /// Where the run goes when neither --output-dir nor the config says: set
    /// outside the workspace (the current directory).
    #[arg(skip)]
    default_output_dir: Option<PathBuf>,
    /// Print the nsys command that captures this run, and run nothing.
    #[arg(long)]
    print_nsys_command: bool,
    /// Replace an earlier run with the same --run-id, or the baseline --save-baseline names (by
    /// default both are refused).
    #[arg(long)]
    force: bool,
    /// Print one JSON document on stdout (manifest path, status, timings); human output goes to stderr.
    #[arg(long)]
    json: bool,
    /// Run under Nsight Systems (the command --print-nsys-command prints), then analyze its
    /// report: GPU time per range. Needs nsys on PATH; without it, exit 2 with the command.
    #[arg(long, conflicts_with = "print_nsys_command")]
    nsys: bool,
    /// Write no report.html beside the manifest (also `write_report: false` in the config).
    #[arg(long)]
    no_report: bool,
    /// Once the run completes, save it as the profile's baseline NAME (a copy beside runs/, in
    /// baselines/NAME/), for `--baseline NAME` and `compare --baseline NAME` later.
    #[arg(long, value_name = "NAME")]
    save_baseline: Option<String>,
    /// Once the run completes, compare it with the profile's baseline NAME and print the
    /// comparison (as `profile-cli compare` does).
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    #[command(flatten)]
    decide: decide::DecideArgs,
    /// Where a profiling binary leaves what is left to do after the run (the comparison with
    /// the baseline, the page, the baseline saved), for the `profile-cli` that ran it.
    #[arg(long, value_name = "FILE", hide = true)]
    outcome: Option<PathBuf>,
}

fn parse_device(text: &str) -> Result<Device, String> {
    text.parse()
        .map_err(|e: profiling_core::device::ParseDeviceError| e.to_string())
}

fn parse_record_loading(text: &str) -> Result<RecordLoading, String> {
    text.parse()
}

fn parse_gpu_timing(text: &str) -> Result<GpuTiming, String> {
    text.parse()
}

/// The whole `profile-cli` program as its `main` runs it: the signal
/// handlers, the panic hook, the workspace it was built from, and
/// [`main_with`] on the process's arguments and standard streams. A binary
/// that links targets of its own (a test's, say) gets the same program by
/// calling it from its `main`.
pub fn run_main() -> std::process::ExitCode {
    // The workspace this binary was built from: relative source files of
    // targets and the default run directories are found from it.
    let workspace_root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."));
    // `list` and `run` in a workspace with a profiling crate of its own run
    // that workspace's binary.
    #[cfg(feature = "full")]
    {
        let args: Vec<OsString> = std::env::args_os().collect();
        if let Some(code) = delegate::delegate(&args, workspace_root) {
            return std::process::ExitCode::from(code);
        }
    }
    run_main_for(workspace_root)
}

/// For a `run` command line: the target it names and the config it gives,
/// as `run` reads them; `None` for other commands or arguments `run`
/// refuses.
#[cfg(feature = "full")]
pub(crate) fn run_selection(args: &[OsString]) -> Option<(Option<String>, Option<PathBuf>)> {
    match Cli::try_parse_from(args).ok()?.command {
        Command::Run(run) => Some((run.name, run.config)),
        _ => None,
    }
}

/// [`run_main`] for a profiling binary of another workspace, built from
/// `workspace_root`: its `main` is
///
/// ```ignore
/// use inference_profiling as _; // links its snippets in
///
/// fn main() -> std::process::ExitCode {
///     let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
///     profiling_cli::run_main_for(crate_dir.parent().unwrap_or(crate_dir))
/// }
/// ```
pub fn run_main_for(workspace_root: &Path) -> std::process::ExitCode {
    // Ctrl-C and SIGTERM stop a run after its current call, with a manifest;
    // a second one ends the process at once.
    if let Err(error) = profiling_core::interrupt::install_handlers() {
        eprintln!(
            "warning: cannot handle Ctrl-C ({error}): an interrupted run will leave no manifest"
        );
    }
    profiling_core::panics::install_hook();
    let code = main_in(
        std::env::args_os().collect(),
        workspace_root,
        outside_the_workspace(workspace_root),
        &mut ClosedQuietly::new(std::io::stdout().lock()),
        &mut ClosedQuietly::new(std::io::stderr().lock()),
    );
    std::process::ExitCode::from(code)
}

/// After a workspace's profiling binary ran `run` or `sweep` with the
/// arguments `args`: what it left to do (the comparison, the pages, the
/// baseline saved, Nsight's capture and analysis), on this process's
/// streams; the exit code.
#[cfg(feature = "full")]
pub(crate) fn finish_delegated(args: &[OsString], outcome: outcome::Outcome) -> u8 {
    let mut out = ClosedQuietly::new(std::io::stdout().lock());
    let mut err = ClosedQuietly::new(std::io::stderr().lock());
    let command = match Cli::try_parse_from(args) {
        Ok(cli) => cli.command,
        Err(_) => return EXIT_USAGE,
    };
    let result = match (command, outcome) {
        (Command::Run(run_args), outcome::Outcome::Run(ran)) => {
            let json = run_args.json;
            after_run(
                ran,
                &run_args,
                &mut Streams {
                    out: &mut out,
                    err: &mut err,
                    json,
                },
            )
        }
        (Command::Run(_), outcome::Outcome::Nsys { lines, run_dir }) => {
            analyze::run_under_nsys(&lines, &run_dir, &mut out, &mut err)
        }
        (Command::Sweep(sweep_args), outcome::Outcome::Sweep(swept)) => sweep::after_sweep(
            swept,
            &mut Streams {
                out: &mut out,
                err: &mut err,
                json: sweep_args.json,
            },
        ),
        _ => Err(anyhow::anyhow!(
            "the profiling binary left an outcome of another command"
        )),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            let _ = writeln!(err, "error: {error:#}");
            EXIT_TARGET_FAILED
        }
    }
}

/// Before a workspace's profiling binary runs `args`: a refusal of what
/// this process will do after it (options of the comparison out of range),
/// said as `run` says it; `None` when the binary may run.
#[cfg(feature = "full")]
pub(crate) fn refuse_before_delegating(args: &[OsString]) -> Option<u8> {
    let Ok(Cli {
        command: Command::Run(run_args),
        ..
    }) = Cli::try_parse_from(args)
    else {
        return None;
    };
    if run_args.baseline.is_none() && run_args.save_baseline.is_none() {
        return None;
    }
    let message = compare::check_options(&run_args.decide).err()?;
    let mut out = ClosedQuietly::new(std::io::stdout().lock());
    let mut err = ClosedQuietly::new(std::io::stderr().lock());
    let mut streams = Streams {
        out: &mut out,
        err: &mut err,
        json: run_args.json,
    };
    Some(streams.refuse(&message, EXIT_USAGE).unwrap_or(EXIT_USAGE))
}

/// `compare`, `report` and `baselines` for a workspace whose profiling
/// binary said where its profiles' runs are.
#[cfg(feature = "full")]
pub(crate) fn read_delegated(
    args: Vec<OsString>,
    workspace_root: &Path,
    profiles: &[session::ProfileRuns],
) -> u8 {
    let mut out = ClosedQuietly::new(std::io::stdout().lock());
    let mut err = ClosedQuietly::new(std::io::stderr().lock());
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(error) => {
            let _ = write!(err, "{}", error.render());
            return EXIT_USAGE;
        }
    };
    let result = match cli.command {
        Command::Compare(compare_args) => {
            compare::compare_command(compare_args, profiles, &mut out, &mut err)
        }
        Command::Baselines(baselines_args) => {
            compare::baselines_command(baselines_args, profiles, &mut out, &mut err)
        }
        Command::Report(report_args) => {
            compare::report_command(report_args, profiles, &mut out, &mut err)
        }
        _ => return main_in(args, workspace_root, None, &mut out, &mut err),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            let _ = writeln!(err, "error: {error:#}");
            EXIT_TARGET_FAILED
        }
    }
}

/// A terminal stream whose reader may go away (`profile-cli run ... | head
/// -2`): from the first broken pipe on, what is printed goes nowhere and the
/// command goes on, so that a run still writes its files, page and
/// baseline, and exits as it would have; as cargo and ripgrep do.
pub struct ClosedQuietly<W> {
    inner: W,
    closed: bool,
}

impl<W: Write> ClosedQuietly<W> {
    pub fn new(inner: W) -> Self {
        ClosedQuietly {
            inner,
            closed: false,
        }
    }

    fn absorb<T>(&mut self, result: std::io::Result<T>, ok: T) -> std::io::Result<T> {
        match result {
            Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(ok)
            }
            other => other,
        }
    }
}

impl<W: Write> Write for ClosedQuietly<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        let result = self.inner.write(buf);
        self.absorb(result, buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let result = self.inner.flush();
        self.absorb(result, ())
    }
}

/// Runs `profile-cli` with `args` (the program name first), writing to
/// `out` and `err`; returns the exit code. Runs go where the config and
/// options say, else under `workspace_root`.
pub fn main_with(
    args: Vec<OsString>,
    workspace_root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    main_in(args, workspace_root, None, out, err)
}

/// [`main_with`], with runs going to `runs_default` (and looked for there)
/// when neither the config, `--output-dir` nor `--workspace` says: what
/// the program does when started outside `workspace_root`.
fn main_in(
    args: Vec<OsString>,
    workspace_root: &Path,
    runs_default: Option<PathBuf>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() {
                EXIT_USAGE
            } else {
                EXIT_OK
            };
            let text = error.render().to_string();
            let stream: &mut dyn Write = if error.use_stderr() { err } else { out };
            let _ = write!(stream, "{text}");
            return code;
        }
    };
    // The workspace the user works in, for the commands that write to it.
    // The commands that write to the workspace the user works in find it
    // first; without one they stop here.
    #[cfg(feature = "full")]
    let user = match &cli.command {
        Command::New(_) | Command::Check(_) | Command::Init(_) | Command::Remove(_) => {
            match user_workspace(cli.workspace.as_deref()) {
                Ok(user) => Some(user),
                Err(message) => {
                    let _ = writeln!(err, "error: {message}");
                    return EXIT_USAGE;
                }
            }
        }
        _ => None,
    };
    #[cfg(feature = "full")]
    let user = user.as_deref().unwrap_or(workspace_root);
    let mut command = cli.command;
    if let (None, Some(here)) = (&cli.workspace, runs_default) {
        runs_here(&mut command, here);
    }
    let result = match command {
        Command::List { json } => list(json, workspace_root, out, err),
        Command::Run(run_args) => run(run_args, &args, workspace_root, out, err),
        #[cfg(feature = "full")]
        Command::Compare(compare_args) => {
            let profiles = session::profiles(workspace_root);
            compare::compare_command(compare_args, &profiles, out, err)
        }
        #[cfg(feature = "full")]
        Command::Baselines(baselines_args) => {
            let profiles = session::profiles(workspace_root);
            compare::baselines_command(baselines_args, &profiles, out, err)
        }
        #[cfg(feature = "full")]
        Command::Report(report_args) => {
            let profiles = session::profiles(workspace_root);
            compare::report_command(report_args, &profiles, out, err)
        }
        #[cfg(feature = "full")]
        Command::Analyze(analyze_args) => analyze::analyze_command(analyze_args, out, err),
        Command::Profiles => outcome::write_profiles(workspace_root, out),
        Command::Cache(cache_args) => cache::cache_command(cache_args, workspace_root, out, err),
        Command::Runs(runs_args) => runs::runs_command(runs_args, workspace_root, out),
        Command::Sweep(sweep_args) => {
            sweep::sweep_command(sweep_args, &args, workspace_root, out, err)
        }
        #[cfg(feature = "full")]
        Command::New(new_args) => snippets::new(new_args, user, out, err),
        #[cfg(feature = "full")]
        Command::Check(check_args) => snippets::check(check_args, user, out, err),
        #[cfg(feature = "full")]
        Command::Remove(remove_args) => snippets::remove(remove_args, user, out, err),
        #[cfg(feature = "full")]
        Command::Init(init_args) => snippets::init(init_args, user, workspace_root, out, err),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            let _ = writeln!(err, "error: {error:#}");
            EXIT_TARGET_FAILED
        }
    }
}

/// The current directory, when it is not inside `workspace_root`: there,
/// runs go to the current directory rather than to a tree found from where
/// the program was built.
fn outside_the_workspace(workspace_root: &Path) -> Option<PathBuf> {
    let here = std::env::current_dir().ok()?;
    let inside = match (here.canonicalize(), workspace_root.canonicalize()) {
        (Ok(here), Ok(root)) => here.starts_with(root),
        _ => false,
    };
    (!inside).then_some(here)
}

/// Makes `here` where the commands that write or read runs put and look for
/// them when nothing else says: `run` and `sweep` below their config's
/// `output_dir`; the others as if given `--output-dir`.
fn runs_here(command: &mut Command, here: PathBuf) {
    match command {
        Command::Run(args) => args.default_output_dir = Some(here),
        Command::Sweep(args) => args.default_output_dir = Some(here),
        #[cfg(feature = "full")]
        Command::Compare(args) => args.default_output_dir(here),
        #[cfg(feature = "full")]
        Command::Baselines(args) => args.default_output_dir(here),
        #[cfg(feature = "full")]
        Command::Report(args) => args.default_output_dir(here),
        Command::Cache(args) => args.default_output_dir(here),
        Command::Runs(args) => args.default_output_dir(here),
        _ => {}
    }
}

/// The workspace `--workspace DIR`, else the current directory, is in.
#[cfg(feature = "full")]
fn user_workspace(given: Option<&Path>) -> Result<PathBuf, String> {
    let start = match given {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir().map_err(|e| format!("the current directory: {e}"))?,
    };
    profiling_extract::workspace::find_workspace(&start).ok_or_else(|| {
        format!(
            "no cargo workspace at {}: neither it nor a directory above it holds a Cargo.toml; run inside your workspace or give --workspace DIR",
            start.display()
        )
    })
}

fn list(json: bool, root: &Path, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<u8> {
    let entries = registry::targets();
    let duplicated =
        |entry: &TargetEntry| entries.iter().filter(|e| e.name == entry.name).count() > 1;
    if json {
        let items: Vec<serde_json::Value> = entries
            .iter()
            .map(|e| {
                serde_json::json!({
                    "name": e.name,
                    "file": e.display_file(root),
                    "line": e.line,
                    "type_name": e.type_name,
                    "module_path": e.module_path,
                    "constructor": e.constructor,
                    "description": e.doc,
                    "duplicate": duplicated(e),
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&items)?)?;
    } else if entries.is_empty() {
        writeln!(
            err,
            "no targets are registered: add #[profile_target] to an impl of ProfileTarget"
        )?;
    } else {
        let name_width = entries.iter().map(|e| e.name.len()).max().unwrap_or(0);
        let places: Vec<String> = entries
            .iter()
            .map(|e| format!("{}:{}", e.display_file(root), e.line))
            .collect();
        let place_width = places.iter().map(String::len).max().unwrap_or(0);
        for (entry, place) in entries.iter().zip(&places) {
            let line = format!(
                "{:name_width$}  {:place_width$}  {}",
                entry.name, place, entry.doc
            );
            writeln!(out, "{}", line.trim_end())?;
        }
    }
    if !json {
        list_drafts(&registry::drafts(), out)?;
    }
    let missing = registry::unavailable();
    if !json && !missing.is_empty() {
        let mut features: Vec<&str> = missing.iter().map(|u| u.feature).collect();
        features.dedup();
        for feature in features {
            let names: Vec<&str> = missing
                .iter()
                .filter(|u| u.feature == feature)
                .map(|u| u.name)
                .collect();
            writeln!(
                out,
                "not in this build, need the `{feature}` feature (scripts/profile --features {feature} list): {}",
                names.join(", ")
            )?;
        }
    }
    let mut warned = Vec::new();
    for entry in &entries {
        if duplicated(entry) && !warned.contains(&entry.name) {
            warned.push(entry.name);
            let places: Vec<String> = entries
                .iter()
                .filter(|e| e.name == entry.name)
                .map(|e| format!("{}:{}", e.display_file(root), e.line))
                .collect();
            writeln!(
                err,
                "warning: target name `{}` is registered {} times ({}): `profile-cli run {}` refuses it until one is renamed",
                entry.name,
                places.len(),
                places.join(", "),
                entry.name
            )?;
        }
    }
    Ok(EXIT_OK)
}

/// The drafts section of `list`: each draft's name, directory and reason.
fn list_drafts(drafts: &[&registry::Draft], out: &mut dyn Write) -> anyhow::Result<()> {
    if drafts.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "drafts, not compiled (`profile-cli check NAME` builds one and links it in):"
    )?;
    let name_width = drafts.iter().map(|d| d.target.len()).max().unwrap_or(0);
    let places: Vec<String> = drafts.iter().map(|d| format!("{}/", d.path())).collect();
    let place_width = places.iter().map(String::len).max().unwrap_or(0);
    for (draft, place) in drafts.iter().zip(&places) {
        writeln!(
            out,
            "  {:name_width$}  {place:place_width$}  {}",
            draft.target,
            draft.summary()
        )?;
    }
    Ok(())
}

/// Writes `report.html` into `run_dir` from what the run wrote there, with
/// the comparison with its baseline when there is one.
#[cfg(feature = "full")]
fn write_run_page(
    run_dir: &Path,
    compared: Option<&(
        profiling_compare::Comparison,
        profiling_compare::Options,
    )>,
) -> Result<PathBuf, String> {
    let (manifest, samples) = page::read_run(run_dir).map_err(|e| e.to_string())?;
    let html = page::run_page(&page::RunPage {
        dir: run_dir,
        manifest: &manifest,
        samples: samples.as_ref(),
        comparison: compared.map(|(comparison, options)| (comparison, options)),
    });
    let path = run_dir.join(page::REPORT_FILE);
    page::write_page(&path, &html).map_err(|e| format!("{}: {e}", path.display()))
}

/// Why `run` refuses `name`, when it is a draft's target.
fn draft_refusal(name: &str) -> Option<String> {
    let draft = registry::drafts().into_iter().find(|d| d.target == name)?;
    Some(format!(
        "`{name}` is a draft, not compiled ({path}/DRAFT): {}; fix {path}/target.rs, then: scripts/profile check {name}",
        draft.summary(),
        path = draft.path()
    ))
}

/// Where `run` writes: human text on stdout, or on stderr with `--json`,
/// which keeps stdout for the one JSON document.
pub(crate) struct Streams<'a> {
    pub(crate) out: &'a mut dyn Write,
    pub(crate) err: &'a mut dyn Write,
    pub(crate) json: bool,
}

impl Streams<'_> {
    pub(crate) fn human(&mut self) -> &mut dyn Write {
        if self.json {
            &mut *self.err
        } else {
            &mut *self.out
        }
    }

    /// A refusal or failure: one `error:` line on stderr, and with `--json`
    /// the document saying so.
    fn fail(&mut self, error: &SessionError) -> anyhow::Result<u8> {
        self.refuse(&error.to_string(), error.exit_code())
    }

    pub(crate) fn refuse(&mut self, message: &str, code: u8) -> anyhow::Result<u8> {
        writeln!(self.err, "error: {message}")?;
        if self.json {
            let document = serde_json::json!({
                "manifest_path": null,
                "status": "refused",
                "error": message,
            });
            writeln!(self.out, "{document}")?;
        }
        Ok(code)
    }
}

/// Says so on `err` when this is a debug build, whose timings mislead.
pub(crate) fn warn_of_a_debug_build(err: &mut dyn Write) -> std::io::Result<()> {
    if profiling_core::host::build_profile() == "debug" {
        writeln!(
            err,
            "warning: this is a debug build: its timings say little about optimized code (build with --release)"
        )?;
    }
    Ok(())
}

fn run(
    args: RunArgs,
    argv: &[OsString],
    root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let mut streams = Streams {
        out,
        err,
        json: args.json,
    };
    let request = RunRequest {
        target: args.name.clone(),
        config_path: args.config.clone(),
        overrides: Overrides {
            target: None,
            data_source: args.data_source.clone(),
            device: args.device,
            warmup: args.warmup,
            iterations: args.iterations,
            batch_size: args.batch_size,
            capture_range: args.capture_range.clone(),
            record_loading: args.record_loading,
            seed: args.seed,
            output_dir: args.output_dir.clone(),
            gpu_timing: args.gpu_timing,
            cache: match (args.cache, args.no_cache) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            directory: args.directory.clone(),
        },
        run_id: args.run_id.clone(),
        force: args.force,
        workspace_root: root.to_path_buf(),
        default_output_dir: args.default_output_dir.clone(),
        command_line: argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        program_version: env!("CARGO_PKG_VERSION").to_owned(),
        config_edits: Vec::new(),
        sweep: None,
    };
    let planned = match session::plan(&request) {
        Ok(planned) => planned,
        Err(SessionError::UnknownTarget { name, .. }) if draft_refusal(&name).is_some() => {
            let message = draft_refusal(&name).unwrap_or_default();
            return streams.refuse(&message, EXIT_USAGE);
        }
        Err(error) => return streams.fail(&error),
    };

    if args.print_nsys_command {
        let program = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("profile-cli"));
        let run_dir = session::absolute(&planned.run_dir);
        let command = session::explicit_command(&planned, &program);
        let lines =
            profiling_core::nsys::nsys_lines(&run_dir, &planned.config.capture_range, &command);
        writeln!(
            streams.out,
            "{}",
            profiling_core::nsys::render_command(&lines)
        )?;
        if let Err(error) = session::check_run_dir_free(&planned) {
            writeln!(
                streams.err,
                "warning: {error}; the command above fails until then"
            )?;
        }
        return Ok(EXIT_OK);
    }

    if args.nsys {
        if let Err(error) = session::check_run_dir_free(&planned) {
            return streams.fail(&error);
        }
        let program = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("profile-cli"));
        let run_dir = session::absolute(&planned.run_dir);
        let command = session::explicit_command(&planned, &program);
        let lines =
            profiling_core::nsys::nsys_lines(&run_dir, &planned.config.capture_range, &command);
        // Nsight's capture and its analysis are `profile-cli`'s: a profiling
        // binary says what to run under nsys.
        if let Some(file) = &args.outcome {
            outcome::write(file, &outcome::Outcome::Nsys { lines, run_dir })?;
            return Ok(EXIT_OK);
        }
        #[cfg(feature = "full")]
        return analyze::run_under_nsys(&lines, &run_dir, streams.out, streams.err);
        #[cfg(not(feature = "full"))]
        return streams.refuse(
            "run --nsys analyzes Nsight's report, which this profiling binary does not: run it through `profile-cli run ... --nsys`",
            EXIT_USAGE,
        );
    }

    // A baseline to compare with or to save is checked before anything runs.
    if args.baseline.is_some() || args.save_baseline.is_some() {
        if let Err(message) = check_baselines(&args, &planned) {
            return streams.refuse(&message, EXIT_USAGE);
        }
    }

    // Panics in target code become one error line; see profiling_core::panics.
    profiling_core::panics::install_hook();
    let config = &planned.config;
    let origin = match planned.config_origin {
        ConfigOrigin::Explicit | ConfigOrigin::BesideTarget => planned
            .config_path
            .as_ref()
            .map_or_else(String::new, |p| format!("config {}", p.display())),
        ConfigOrigin::Defaults => "built-in defaults".to_owned(),
    };
    writeln!(
        streams.human(),
        "running `{}` ({}) on {} with {}: device {}, warmup {}, iterations {}{}, {} loading",
        config.target.name,
        planned.entry.display_file(root),
        config.data_source.name,
        origin,
        config.device,
        config.warmup,
        config.iterations,
        match config.batch_size {
            1 => String::new(),
            size => format!(", batches of {size} (last batch: {})", config.last_batch),
        },
        config.record_loading,
    )?;

    let progress = std::io::stderr().is_terminal().then(report::progress_bar);
    let report = match session::execute_with_progress(&planned, &request, progress) {
        Ok(report) => report,
        Err(error) => return streams.fail(&error),
    };
    let manifest = &report.manifest;
    for note in &report.recovered {
        writeln!(streams.err, "note: {note}")?;
    }
    warn_of_a_debug_build(streams.err)?;
    report::write_summary(manifest, streams.human())?;
    if let Some(summary) = &report.image_cache {
        writeln!(streams.human(), "{}", cache::summary_line(summary))?;
        if let Some(warning) = cache::failure_line(summary) {
            writeln!(streams.err, "{warning}")?;
        }
    }
    let (mut code, mut error) = match &report.outcome {
        Ok(outcome) => match outcome.interrupted {
            Some(signal) => {
                writeln!(
                    streams.err,
                    "interrupted by {} after {} of {} measured passes: the manifest keeps what completed",
                    profiling_core::manifest::signal_name(signal),
                    outcome.completed_iterations,
                    config.iterations
                )?;
                (profiling_core::interrupt::exit_code(signal), None)
            }
            None => (EXIT_OK, None),
        },
        Err(error) => {
            writeln!(streams.err, "error: {error}")?;
            (error.exit_code(), Some(error.to_string()))
        }
    };
    let manifest_path = report.manifest_path.as_deref().map(session::absolute);
    match (&manifest_path, &report.write_error) {
        (Some(path), _) => writeln!(streams.human(), "manifest: {}", path.display())?,
        (None, Some(_)) => writeln!(streams.human(), "manifest: not written (below)")?,
        (None, None) => writeln!(
            streams.human(),
            "manifest: not written (write_manifest: false)"
        )?,
    }
    if let Some(failure) = &report.write_error {
        writeln!(streams.err, "error: {failure}")?;
        if code == EXIT_OK {
            code = EXIT_TARGET_FAILED;
        }
        error.get_or_insert_with(|| failure.to_string());
    }
    let mut document = streams
        .json
        .then(|| report::json_document(manifest, manifest_path.as_deref(), error.as_deref()));
    if let (Some(document), Some(summary)) = (&mut document, &report.image_cache) {
        document["image_cache"] = cache::json(summary);
    }
    let ran = outcome::Ran {
        code,
        run_dir: planned.run_dir.clone(),
        manifest_written: report.manifest_path.is_some(),
        measured: manifest.status != profiling_core::manifest::Status::Failed,
        completed: manifest.status == profiling_core::manifest::Status::Completed,
        // Not after a write that failed: what did not fit is said above.
        page: config.write_report
            && !args.no_report
            && report.manifest_path.is_some()
            && report.write_error.is_none(),
        document,
    };
    if let Some(file) = &args.outcome {
        outcome::write(file, &outcome::Outcome::Run(ran))?;
        return Ok(code);
    }
    after_run(ran, &args, &mut streams)
}

/// What `run --baseline NAME` and `run --save-baseline NAME` check before
/// the run starts, so that nothing runs for a request that is refused.
fn check_baselines(args: &RunArgs, planned: &session::Planned) -> Result<(), String> {
    let runs_dir = planned.run_dir.parent().unwrap_or(Path::new("."));
    let profile = &planned.config.profile_name;
    #[cfg(feature = "full")]
    if args.outcome.is_none() {
        compare::check_options(&args.decide)?;
        return compare::check_run_baselines(
            runs_dir,
            profile,
            args.baseline.as_deref(),
            args.save_baseline.as_deref(),
            args.force,
        )
        .map_err(|error| error.to_string());
    }
    #[cfg(not(feature = "full"))]
    if args.outcome.is_none() && args.baseline.is_some() {
        return Err("comparing with a baseline is profile-cli's, not this profiling binary's: run it through `profile-cli run ... --baseline NAME`".to_owned());
    }
    // The `profile-cli` that reads the outcome compares; here, the files.
    let dir = profiling_core::baselines::baselines_dir_of_runs(runs_dir);
    if let Some(name) = &args.baseline {
        profiling_core::baselines::check_baseline_exists(&dir, profile, name)
            .map_err(|error| error.to_string())?;
    }
    if let Some(name) = &args.save_baseline {
        profiling_core::baselines::check_baseline_free(&dir, profile, name, args.force)
            .map_err(|error| error.to_string())?;
    }
    Ok(())
}

/// What follows a run that measured something: the comparison with the
/// baseline, the page, the baseline saved and the `--json` document, as
/// the run's own process or the `profile-cli` that ran a profiling binary
/// does them.
#[cfg(feature = "full")]
pub(crate) fn after_run(
    ran: outcome::Ran,
    args: &RunArgs,
    streams: &mut Streams<'_>,
) -> anyhow::Result<u8> {
    let mut code = ran.code;
    // The baseline, compared with and saved, once the run is in place.
    let mut compared = None;
    if let (Some(name), true, true) = (&args.baseline, ran.manifest_written, ran.measured) {
        match compare::compare_with_baseline(&ran.run_dir, name, &args.decide) {
            Ok((found, options)) => {
                writeln!(streams.human(), "\ncompared with baseline `{name}`:")?;
                // Colour only for a table on the terminal's stdout.
                let format = if streams.json {
                    compare::Format::Table { colored: false }
                } else {
                    compare::table_format(&args.decide)
                };
                compare::write_comparisons(
                    std::slice::from_ref(&found),
                    &options,
                    format,
                    streams.human(),
                )?;
                if code == EXIT_OK {
                    code = compare::regression_code(
                        std::slice::from_ref(&found),
                        args.decide.fail_on_regression,
                    );
                }
                compared = Some((found, options));
            }
            Err(message) => {
                writeln!(
                    streams.err,
                    "error: not compared with baseline `{name}`: {message}"
                )?;
                if code == EXIT_OK {
                    code = EXIT_USAGE;
                }
            }
        }
    }
    // The page, beside the manifest of a run that measured something.
    let mut page_path = None;
    if ran.page && ran.measured {
        match write_run_page(&ran.run_dir, compared.as_ref()) {
            Ok(path) => {
                writeln!(streams.human(), "report: {}", path.display())?;
                page_path = Some(path);
            }
            Err(message) => {
                writeln!(streams.err, "error: report.html not written: {message}")?;
                if code == EXIT_OK {
                    code = EXIT_TARGET_FAILED;
                }
            }
        }
    }
    let saved = save_baseline(&ran, args, streams, &mut code)?;
    if let Some(mut document) = ran.document {
        if let Some((found, options)) = &compared {
            document["comparison"] = compare::json_document(std::slice::from_ref(found), options);
        }
        if let Some(saved) = saved {
            document["baseline_saved"] = serde_json::json!(saved);
        }
        document["report_path"] = serde_json::json!(page_path);
        writeln!(streams.out, "{document}")?;
    }
    Ok(code)
}

/// A profiling binary run by itself: no comparison and no page (those are
/// `profile-cli`'s, on the files the run wrote), the baseline saved.
#[cfg(not(feature = "full"))]
pub(crate) fn after_run(
    ran: outcome::Ran,
    args: &RunArgs,
    streams: &mut Streams<'_>,
) -> anyhow::Result<u8> {
    let mut code = ran.code;
    if ran.page && ran.measured {
        writeln!(
            streams.human(),
            "report: `profile-cli report {}` writes the page",
            ran.run_dir.display()
        )?;
    }
    let saved = save_baseline(&ran, args, streams, &mut code)?;
    if let Some(mut document) = ran.document {
        if let Some(saved) = saved {
            document["baseline_saved"] = serde_json::json!(saved);
        }
        document["report_path"] = serde_json::Value::Null;
        writeln!(streams.out, "{document}")?;
    }
    Ok(code)
}

/// `--save-baseline NAME` once the run completed: where it was saved.
fn save_baseline(
    ran: &outcome::Ran,
    args: &RunArgs,
    streams: &mut Streams<'_>,
    code: &mut u8,
) -> anyhow::Result<Option<PathBuf>> {
    let (Some(name), true) = (&args.save_baseline, ran.manifest_written) else {
        return Ok(None);
    };
    if !ran.completed {
        writeln!(
            streams.err,
            "baseline `{name}` not saved: the run did not complete"
        )?;
        return Ok(None);
    }
    match profiling_core::baselines::save_baseline(&ran.run_dir, name, args.force) {
        Ok(dir) => {
            writeln!(
                streams.human(),
                "baseline `{name}` saved: {}",
                dir.display()
            )?;
            Ok(Some(dir))
        }
        Err(error) => {
            writeln!(streams.err, "error: baseline `{name}` not saved: {error}")?;
            if *code == EXIT_OK {
                *code = EXIT_TARGET_FAILED;
            }
            Ok(None)
        }
    }
}

/// `docs/reference/cli.md` is every command's long help (`--help`) at 100
/// columns without colour, rendered from the definitions above; the test
/// fails when the file says otherwise, and `UPDATE_CLI_REFERENCE=1` makes it
/// write the file instead.
#[cfg(all(test, feature = "full"))]
mod cli_reference {
    use clap::CommandFactory;

    const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/reference/cli.md");
    const REGENERATE: &str =
        "UPDATE_CLI_REFERENCE=1 cargo test -p profiling-cli --lib cli_reference";

    fn render() -> String {
        let mut root = super::Cli::command()
            .term_width(100)
            .max_term_width(100)
            .color(clap::ColorChoice::Never);
        root.build();
        let mut out = format!(
            "# Command-line reference\n\n\
             Every command's `--help`, generated from the definitions of `profile-cli`'s\n\
             arguments; do not edit it by hand. After a change to an option or its help,\n\
             regenerate it with:\n\n```sh\n{REGENERATE}\n```\n"
        );
        add_sections(&mut out, &mut root);
        out
    }

    /// A section for `command`, then one for each visible subcommand.
    fn add_sections(out: &mut String, command: &mut clap::Command) {
        let name = command
            .get_bin_name()
            .unwrap_or(command.get_name())
            .to_owned();
        let help = command.render_long_help().to_string();
        let help: Vec<&str> = help.trim_end().lines().map(str::trim_end).collect();
        out.push_str(&format!(
            "\n## `{name}`\n\n```text\n{}\n```\n",
            help.join("\n")
        ));
        for subcommand in command.get_subcommands_mut() {
            if !subcommand.is_hide_set() && subcommand.get_name() != "help" {
                add_sections(out, subcommand);
            }
        }
    }

    #[test]
    fn the_reference_is_the_help_of_every_command() {
        let generated = render();
        if std::env::var_os("UPDATE_CLI_REFERENCE").is_some() {
            std::fs::write(PATH, &generated).expect("docs/reference/cli.md is writable");
            return;
        }
        let written = std::fs::read_to_string(PATH).unwrap_or_default();
        if written != generated {
            let (line, (was, is)) = written
                .lines()
                .chain(std::iter::repeat("<end of file>"))
                .zip(generated.lines().chain(std::iter::repeat("<end of help>")))
                .enumerate()
                .find(|(_, (was, is))| was != is)
                .expect("two different texts differ on a line");
            panic!(
                "docs/reference/cli.md is not the --help of the commands as defined: line {} \
                 reads\n  {was}\nwhere the help now has\n  {is}\nregenerate it with: {REGENERATE}",
                line + 1
            );
        }
    }
}
