//! The `profile-cli` command line: parses arguments and prints, calling
//! `profiling_core` for everything else.
//!
//! [`main_with`] is the whole program with its streams passed in, so tests
//! run it in-process against the targets they link.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};
// Linking the sources that read files registers them (`images`, `tensors`,
// `video`, `coco`): a profiling crate whose snippets read no files builds
// without them.
#[cfg(feature = "full")]
use profiling_core::driver::session;
#[cfg(feature = "sources")]
use profiling_sources as _;

mod exit;
mod streams;
pub use exit::{
    EXIT_CANNOT_TEST, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REGRESSION, EXIT_TARGET_FAILED, EXIT_USAGE,
};
pub use streams::ClosedQuietly;

mod ab;
#[cfg(feature = "full")]
mod analyze;
#[cfg(feature = "full")]
mod baselines;
mod cache;
#[cfg(feature = "full")]
pub mod compare;
pub mod decide;
#[cfg(feature = "full")]
mod delegate;
#[cfg(feature = "full")]
mod experiment;
mod handoff;
#[cfg(feature = "full")]
mod history;
mod list;
mod load;
#[cfg(feature = "full")]
mod recording;
#[cfg(feature = "full")]
pub mod report;
mod run;
mod run_dir;
mod runs;
#[cfg(feature = "full")]
mod snippets;
pub mod summary;
pub mod sweep;
mod units;

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
    /// Cargo's profile for building a workspace's own `profile` binary (and `ab --against`'s
    /// base): `release` (the default), `dev`, or one of the workspace's `[profile.NAME]`, as
    /// cargo's --profile takes it.
    #[arg(
        long = "profile",
        visible_alias = "cargo-profile",
        value_name = "PROFILE-NAME",
        global = true
    )]
    cargo_profile: Option<String>,
    /// Features of a workspace's own profiling crate to build its `profile` binary with
    /// (and `ab --against`'s base), as cargo's --features takes them: comma- or
    /// space-separated, repeatable.
    #[arg(long, short = 'F', value_name = "FEATURES", global = true)]
    features: Vec<String>,
    /// Say less: no progress bars, no `note:` advice and no cargo progress while a workspace's
    /// binary builds (results, warnings and errors stay).
    #[arg(long, short = 'q', global = true, conflicts_with = "verbose")]
    quiet: bool,
    /// Say more: the cargo command and the binary a command runs in a workspace of one's own,
    /// and cargo's whole output.
    #[arg(long, short = 'v', global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Colour: `auto` (on a terminal, unless NO_COLOR is set), `always` or `never`; the verdicts
    /// of compare, run --baseline and ab, and this help.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = decide::ColorChoice::Auto, global = true)]
    color: decide::ColorChoice,
    #[command(subcommand)]
    command: Command,
}

impl Cli {
    /// The command line `args` (the program first) parsed, clap's help and
    /// errors coloured as its `--color` says; once parsed, the global
    /// `-q`, `-v` and `--color` in effect for the process.
    fn parse_args(args: &[OsString]) -> Result<Cli, clap::Error> {
        use clap::{CommandFactory, FromArgMatches};
        let color = color_asked(args);
        let matches = Cli::command()
            .styles(clap::builder::styling::Styles::styled())
            .color(color.for_clap())
            .try_get_matches_from(args)?;
        let cli = Cli::from_arg_matches(&matches)?;
        streams::say(cli.quiet, cli.verbose);
        Ok(cli)
    }
}

/// The `--color` of `args`, read before they are parsed: clap renders
/// `--help` and its refusals with it.
fn color_asked(args: &[OsString]) -> decide::ColorChoice {
    args.iter()
        .zip(args.iter().skip(1).map(Some).chain([None]))
        .filter_map(|(arg, next)| {
            let arg = arg.to_str()?;
            match arg.strip_prefix("--color") {
                Some("") => next.and_then(|n| n.to_str()),
                Some(value) => value.strip_prefix('='),
                None => None,
            }
        })
        .filter_map(|word| <decide::ColorChoice as clap::ValueEnum>::from_str(word, false).ok())
        .last()
        .unwrap_or(decide::ColorChoice::Auto)
}

impl Command {
    /// `ab --bisect` in the process the user started (not the stage or
    /// the side a workspace's binary runs for it): its exit code is
    /// [`exit::for_bisect`]'s.
    fn exits_for_bisect(&self) -> bool {
        matches!(self, Command::Ab(ab) if ab.bisect && ab.handoff.is_none() && ab.stage.is_none())
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Show every registered target: name, source location, description.
    List {
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
        /// Show the registered data sources instead: name, source location, description and the
        /// parameters each takes.
        #[arg(long)]
        sources: bool,
    },
    /// Run a target: warmup passes, then measured passes inside the capture range.
    ///
    /// The config comes from --config FILE; failing that, from the config.yaml beside
    /// the target's source file when it names this target; failing that, from built-in
    /// defaults (dummy data source, cpu, warmup 1, iterations 1). Options given here
    /// win over the config.
    Run(run::RunArgs),
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
    New(snippets::new::NewArgs),
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
    Check(snippets::check::CheckArgs),
    /// Delete a snippet: its directory and its entry in the profiling crate's Cargo.toml.
    ///
    /// NAME is the snippet's profile name or directory. Refused while the snippet holds runs or
    /// baselines, unless --force. A snippet directory already deleted by hand leaves an entry
    /// cargo cannot build with: `remove NAME` (its directory name, - or _) removes that entry.
    ///
    /// Exit codes: 0 removed; 2 no such snippet, or runs or baselines kept it (nothing removed).
    #[cfg(feature = "full")]
    Remove(snippets::remove::RemoveArgs),
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
    Baselines(baselines::BaselinesArgs),
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
    Report(report::ReportArgs),
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
    Init(snippets::init::InitArgs),
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
    /// Every run kept in a store, each range's metric per commit, and the commits where one shifted.
    ///
    /// Each run that measured something is also written into the history store once its
    /// directory is complete: history.sqlite beside the run directories (the workspace's
    /// inference_profiling/, or the output directory), or the SQLite file $PROFILING_STORE names
    /// (`off` writes none). `history TARGET` shows each range's metric (--metric, p50 by default)
    /// per commit of HEAD's first-parent line, one table per machine and config: a series never
    /// mixes them. `--changes` lists the commits where a range shifted for good (E-Divisive means
    /// with a permutation test), attributed to the innermost range that moved.
    ///
    /// Exit codes: 0 shown; 2 no store, no such target, range, machine or config; 3 with
    /// --changes --fail-on, a change made a range slower by at least that much.
    #[cfg(feature = "full")]
    History(history::HistoryArgs),
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
    /// Paired A/B: two targets measured in one process, their passes alternated, and compared.
    ///
    /// Runs BASE and CANDIDATE (two targets of this build: a snippet and a variant of it, or a
    /// snippet and the production function it copies) on the same records with the same
    /// workload: both warm up, then their measured passes alternate in blocks inside one capture
    /// range (base then candidate, then candidate then base, ...), each pass in an NVTX range
    /// named for its side (`base iteration 3`). Whatever the machine does meanwhile falls on both
    /// sides, so the comparison holds on a busy machine: for the pass, the call and every range
    /// the ratio is the geometric mean of the block pairs' ratios, its interval a bootstrap over
    /// the pairs, its p-value a signed-rank test.
    ///
    /// Writes runs/<AB_ID>/ under the base's profile: base/ and candidate/ (run directories as
    /// `run` writes them), paired.json (every pass in order) and report.html (the comparison
    /// page); prints the comparison as `compare` does (--json, --markdown).
    ///
    /// Exit codes: 0 compared (--accept: accepted); 1 a side failed; 2 bad usage, config or
    /// data, or a base revision that does not build; 3 a regression with --fail-on-regression, or
    /// --accept rejected; 4 --accept inconclusive; 125 with --against in a workspace of one's own,
    /// the working tree does not build (so that `git bisect run` skips the revision).
    Ab(ab::AbArgs),
    /// Drive a target as a service is driven and measure its latency under load.
    ///
    /// Scenarios (MLPerf LoadGen's, and a concurrency mode): single-stream sends the next query
    /// when the last answers; server sends queries at --qps on a schedule fixed in advance from
    /// the seed (poisson, constant or gamma:SHAPE arrivals), whether or not the workers keep up;
    /// concurrency keeps N queries outstanding; offline sends them all at once. --workers W
    /// threads each build their own target instance and prepare their own inputs from the
    /// records, read once. Each query runs the target on one record, the records taken in turn.
    ///
    /// Every query is timed from when it was meant to be sent, so the time it waited for a
    /// worker counts (its own column); p50, p90, p95, p99, p99.9 and max each come with a 95 %
    /// distribution-free interval. With --p99-bound, whether it held; when the offered rate is
    /// more than the workers serve, the run says they fell behind and how the queue grew. The
    /// target's ranges are recorded on every worker: each range's distribution under load, and
    /// the range (or the queueing) that the slowest 1 % spent their extra time on. --find-peak
    /// searches the highest rate that holds the bound and prints the curve, and which ranges
    /// grew from the lowest rate to the peak.
    ///
    /// Writes runs/<RUN_ID>/load.yaml (the provenance a manifest holds and a `load` section with
    /// every step) and load.html (the curve, each range's p99 against load, the queueing share).
    /// Each query is an NVTX range `query` on its worker's thread (named `load worker N`), inside
    /// the capture range, so Nsight Systems shows the concurrency.
    ///
    /// Exit codes: 0 measured; 1 a worker could not be built, a query failed, or the record
    /// could not be written; 2 bad usage or config (a rate of 0, no workers, a bound without a
    /// unit, too few queries for the p99 asked); 130 or 143 stopped by a signal (what was
    /// measured is written, marked interrupted).
    Load(load::LoadArgs),
    /// Print a shell's completion script (bash, zsh, fish, powershell, elvish).
    ///
    /// The script completes every command, option and fixed value of this build's command line.
    /// bash: save it as ~/.local/share/bash-completion/completions/profile-cli (or source it from
    /// ~/.bashrc); zsh: as _profile-cli in a directory of $fpath; fish: as
    /// ~/.config/fish/completions/profile-cli.fish; PowerShell: dot-source it from $PROFILE.
    Completions {
        /// bash, zsh, fish, powershell or elvish.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page of profile-cli (roff), or with --output DIR write one per command.
    ///
    /// `profile-cli man | man -l -` reads it now; `profile-cli man --output DIR` writes
    /// profile-cli.1 and a profile-cli-COMMAND.1 for each command into DIR (a directory of
    /// $MANPATH's man1/, such as ~/.local/share/man/man1), then `man profile-cli-run`.
    Man {
        /// Write profile-cli.1 and one page per command into DIR instead of printing the first.
        #[arg(long, value_name = "DIR")]
        output: Option<PathBuf>,
    },
    /// The profiles of this build and their runs directories, as JSON: what `profile-cli
    /// compare`, `report` and `baselines` read a profiling binary's runs with.
    #[command(hide = true)]
    Profiles,
    /// One side of a pair of two builds (`ab --against`), paced by the pair's process over
    /// standard input and output.
    #[command(hide = true)]
    Step {
        /// What the side runs and where it writes it, as JSON, or `@FILE` for JSON in FILE.
        #[arg(long)]
        spec: String,
    },
}

/// The whole `profile-cli` program as its `main` runs it: the command line
/// parsed once; in another workspace with a profiling crate of its own,
/// the command run through that workspace's binary (`delegate`); else the
/// signal handlers, the panic hook, the workspace it was built from, and
/// [`main_with`] on the process's standard streams. A binary that links
/// targets of its own (a test's, say) gets the same program by calling it
/// from its `main`.
pub fn run_main() -> std::process::ExitCode {
    // The workspace this binary was built from: relative source files of
    // targets and the default run directories are found from it.
    let workspace_root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."));
    let args: Vec<OsString> = std::env::args_os().collect();
    let parsed = Cli::parse_args(&args);
    // `list`, `run` and the others in a workspace with a profiling crate of
    // its own run that workspace's binary.
    #[cfg(feature = "full")]
    let parsed = match parsed {
        Ok(cli) => match delegate::delegated(&cli, workspace_root) {
            Some(to) => {
                let for_bisect = cli.command.exits_for_bisect();
                let code = delegate::delegate(cli, to, &args);
                return ended(if for_bisect {
                    exit::for_bisect(code)
                } else {
                    code
                });
            }
            None => Ok(cli),
        },
        Err(error) => Err(error),
    };
    run_parsed(parsed, &args, workspace_root)
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
    let args: Vec<OsString> = std::env::args_os().collect();
    run_parsed(Cli::parse_args(&args), &args, workspace_root)
}

/// The program on the command line `args` as parsed, in this process: the
/// signal handlers, the panic hook, and the command on the standard
/// streams.
fn run_parsed(
    parsed: Result<Cli, clap::Error>,
    args: &[OsString],
    workspace_root: &Path,
) -> std::process::ExitCode {
    // The clock's origin first: its scale's window runs while the command
    // starts up, not when a run first needs nanoseconds.
    profiling_core::timing::clock::start();
    // Ctrl-C and SIGTERM stop a run after its current call, with a manifest;
    // a second one ends the process at once.
    if let Err(error) = profiling_core::driver::interrupt::install_handlers() {
        eprintln!(
            "warning: cannot handle Ctrl-C ({error}): an interrupted run will leave no manifest"
        );
    }
    profiling_core::driver::panics::install_hook();
    // The standard streams are locked a write at a time, not for the
    // whole command: the targets of a load run on threads of their own,
    // and one that prints would wait for the lock forever.
    let mut out = ClosedQuietly::new(std::io::stdout());
    let mut err = ClosedQuietly::new(std::io::stderr());
    let code = match parsed {
        Ok(cli) => main_in(
            cli,
            args,
            workspace_root,
            outside_the_workspace(workspace_root),
            &mut out,
            &mut err,
        ),
        Err(error) => said_by_clap(error, color_asked(args), &mut out, &mut err),
    };
    ended(code)
}

/// The process's end with `code`: by the signal itself when `code` is a
/// signal's (130, 143), after the command cleaned up and said what it
/// says, as bash, make and cargo end, so that a shell loop around the
/// command stops with it.
fn ended(code: u8) -> std::process::ExitCode {
    if let Some(signal) = profiling_core::driver::interrupt::signal_of_exit_code(code) {
        profiling_core::driver::interrupt::die_by(signal);
    }
    std::process::ExitCode::from(code)
}

/// What writes a sweep's pages: `report/`, where the build has it.
#[cfg(feature = "full")]
const SWEEP_PAGES: Option<sweep::SweepPages> = Some(report::write_sweep_pages);
#[cfg(not(feature = "full"))]
const SWEEP_PAGES: Option<sweep::SweepPages> = None;

/// Runs `profile-cli` with `args` (the program name first), writing to
/// `out` and `err`; returns the exit code. Runs go where the config and
/// options say, else under `workspace_root`.
pub fn main_with(
    args: Vec<OsString>,
    workspace_root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    match Cli::parse_args(&args) {
        Ok(cli) => main_in(cli, &args, workspace_root, None, out, err),
        Err(error) => said_by_clap(error, color_asked(&args), out, err),
    }
}

/// A command line clap refused, or `--help` and `--version`: what clap
/// says, on `err` for an error (exit 2) and on `out` for the help or the
/// version (exit 0).
fn said_by_clap(
    error: clap::Error,
    color: decide::ColorChoice,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let code = if error.use_stderr() {
        EXIT_USAGE
    } else {
        EXIT_OK
    };
    let colored = color.colors(if error.use_stderr() {
        std::io::IsTerminal::is_terminal(&std::io::stderr())
    } else {
        std::io::IsTerminal::is_terminal(&std::io::stdout())
    });
    let text = if colored {
        error.render().ansi().to_string()
    } else {
        error.render().to_string()
    };
    let stream: &mut dyn Write = if error.use_stderr() { err } else { out };
    let _ = write!(stream, "{text}");
    code
}

/// [`main_with`] on the parsed command line `cli` (`args` as given), with
/// runs going to `runs_default` (and looked for there) when neither the
/// config, `--output-dir` nor `--workspace` says: what the program does
/// when started outside `workspace_root`.
fn main_in(
    cli: Cli,
    args: &[OsString],
    workspace_root: &Path,
    runs_default: Option<PathBuf>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let for_bisect = cli.command.exits_for_bisect();
    let code = main_on(cli, args, workspace_root, runs_default, out, err);
    if for_bisect {
        exit::for_bisect(code)
    } else {
        code
    }
}

/// [`main_in`], its exit code as the command gives it.
fn main_on(
    cli: Cli,
    args: &[OsString],
    workspace_root: &Path,
    runs_default: Option<PathBuf>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
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
    // `history` reads the store of the workspace it is run in, where that
    // workspace's runs went; outside one, this one's.
    #[cfg(feature = "full")]
    let history_workspace = match &cli.command {
        Command::History(_) => user_workspace(cli.workspace.as_deref()).ok(),
        _ => None,
    };
    #[cfg(feature = "full")]
    let history_root = history_workspace.as_deref().unwrap_or(workspace_root);
    #[cfg(feature = "full")]
    let user = user.as_deref().unwrap_or(workspace_root);
    let mut command = cli.command;
    // $PROFILING_RUNS_DIR, where set, before the directory the program
    // would take by itself (as CRITERION_HOME is criterion's).
    // The global --color, for the commands that colour their verdicts.
    match &mut command {
        Command::Run(args) => args.decide.color = cli.color,
        Command::Ab(args) => args.decide.color = cli.color,
        #[cfg(feature = "full")]
        Command::Compare(args) => args.color(cli.color),
        #[cfg(feature = "full")]
        Command::Report(args) => args.color(cli.color),
        _ => {}
    }
    let from_env = runs_dir_from_env();
    let told = from_env.is_some();
    if let (None, Some(here)) = (&cli.workspace, from_env.or(runs_default)) {
        // In a workspace of one's own, `history` reads where its runs went:
        // there unless the variable says.
        #[cfg(feature = "full")]
        let reads_its_workspace = history_workspace.is_some() && !told;
        #[cfg(not(feature = "full"))]
        let reads_its_workspace = {
            let _ = told;
            false
        };
        if !reads_its_workspace {
            runs_here(&mut command, here);
        }
    }
    #[cfg(feature = "full")]
    if let Command::History(history_args) = &mut command {
        history_args.build_with(
            cli.cargo_profile.clone(),
            delegate::feature_list(&cli.features),
        );
    }
    let result = match command {
        Command::List { json, sources } => {
            if sources {
                list::list_sources(json, workspace_root, out)
            } else {
                list::list(json, workspace_root, out, err)
            }
        }
        Command::Run(run_args) => run::run(run_args, args, workspace_root, out, err),
        #[cfg(feature = "full")]
        Command::Compare(compare_args) => {
            let profiles = session::profiles(workspace_root);
            compare::compare_command(compare_args, &profiles, out, err)
        }
        #[cfg(feature = "full")]
        Command::Baselines(baselines_args) => {
            let profiles = session::profiles(workspace_root);
            baselines::baselines_command(baselines_args, &profiles, out, err)
        }
        #[cfg(feature = "full")]
        Command::Report(report_args) => {
            let profiles = session::profiles(workspace_root);
            report::report_command(report_args, &profiles, out, err)
        }
        #[cfg(feature = "full")]
        Command::Analyze(analyze_args) => analyze::analyze_command(analyze_args, out, err),
        Command::Profiles => handoff::write_profiles(workspace_root, out),
        Command::Completions { shell } => completions(shell, out),
        Command::Man { output } => man_pages(output.as_deref(), out, err),
        Command::Cache(cache_args) => cache::cache_command(cache_args, workspace_root, out, err),
        Command::Runs(runs_args) => runs::runs_command(runs_args, workspace_root, out, err),
        #[cfg(feature = "full")]
        Command::History(history_args) => {
            history::history_command(history_args, history_root, out, err)
        }
        Command::Sweep(sweep_args) => {
            sweep::sweep_command(sweep_args, args, workspace_root, SWEEP_PAGES, out, err)
        }
        Command::Ab(ab_args) => ab::ab_command(ab_args, workspace_root, args, out, err),
        Command::Load(load_args) => load::load_command(load_args, args, workspace_root, out, err),
        Command::Step { spec } => Ok(ab::step::step_command(&spec, workspace_root)),
        #[cfg(feature = "full")]
        Command::New(new_args) => snippets::new::new(new_args, user, out, err),
        #[cfg(feature = "full")]
        Command::Check(check_args) => snippets::check::check(check_args, user, out, err),
        #[cfg(feature = "full")]
        Command::Remove(remove_args) => snippets::remove::remove(remove_args, user, out, err),
        #[cfg(feature = "full")]
        Command::Init(init_args) => snippets::init::init(init_args, user, workspace_root, out, err),
    };
    exit_code(result, err)
}

/// A command's exit code: its own, or after an error it could not say
/// itself (a stream that failed, a file it could not write), that error in
/// one line and [`EXIT_TARGET_FAILED`].
fn exit_code(result: anyhow::Result<u8>, err: &mut dyn Write) -> u8 {
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

/// `completions SHELL`: the shell's completion script for this command
/// line, clap's own.
fn completions(shell: clap_complete::Shell, out: &mut dyn Write) -> anyhow::Result<u8> {
    use clap::CommandFactory;
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "profile-cli", &mut script);
    out.write_all(&script)?;
    Ok(EXIT_OK)
}

/// `man`: the man page of `profile-cli` on `out`; with `output`, it and a
/// page per visible command (`profile-cli-run.1`, ...) written there.
fn man_pages(
    output: Option<&Path>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    use clap::CommandFactory;
    let mut root = Cli::command();
    root.build();
    let render = |command: &clap::Command, title: &str| -> std::io::Result<Vec<u8>> {
        let mut page = Vec::new();
        clap_mangen::Man::new(command.clone())
            .title(title)
            .render(&mut page)?;
        Ok(page)
    };
    let Some(dir) = output else {
        out.write_all(&render(&root, "profile-cli")?)?;
        return Ok(EXIT_OK);
    };
    if let Err(error) = std::fs::create_dir_all(dir) {
        writeln!(err, "error: cannot make {}: {error}", dir.display())?;
        return Ok(EXIT_TARGET_FAILED);
    }
    let mut pages = vec![("profile-cli".to_owned(), render(&root, "profile-cli")?)];
    for command in root.get_subcommands() {
        if command.is_hide_set() || command.get_name() == "help" {
            continue;
        }
        let name = format!("profile-cli-{}", command.get_name());
        let command = command.clone().display_name(name.clone());
        pages.push((name.clone(), render(&command, &name)?));
    }
    for (name, page) in &pages {
        let path = dir.join(format!("{name}.1"));
        if let Err(error) = profiling_core::driver::files::write_atomically(&path, page) {
            writeln!(err, "error: cannot write {}: {error}", path.display())?;
            return Ok(EXIT_TARGET_FAILED);
        }
    }
    writeln!(
        out,
        "wrote {} man pages into {} (profile-cli.1 and one per command)",
        pages.len(),
        dir.display()
    )?;
    Ok(EXIT_OK)
}

/// The variable that says where runs go (and are looked for) when neither
/// an option nor the config says: `DIR/<profile>/runs/<run id>/`, with the
/// history store in DIR.
pub const RUNS_DIR_ENV: &str = "PROFILING_RUNS_DIR";

/// `$PROFILING_RUNS_DIR` as a directory, when set and not empty; a
/// relative one from the current directory.
fn runs_dir_from_env() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os(RUNS_DIR_ENV).filter(|d| !d.is_empty())?);
    Some(std::path::absolute(&dir).unwrap_or(dir))
}

/// Makes `here` where the commands that write or read runs put and look for
/// them when nothing else says: `run` and `sweep` below their config's
/// `output_dir`; the others as if given `--output-dir`.
fn runs_here(command: &mut Command, here: PathBuf) {
    match command {
        Command::Run(args) => args.run_dir.default_output_dir = Some(here),
        Command::Sweep(args) => args.default_output_dir = Some(here),
        Command::Ab(args) => args.default_output_dir = Some(here),
        Command::Load(args) => args.run_dir.default_output_dir = Some(here),
        #[cfg(feature = "full")]
        Command::Compare(args) => args.default_output_dir(here),
        #[cfg(feature = "full")]
        Command::Baselines(args) => args.default_output_dir(here),
        #[cfg(feature = "full")]
        Command::Report(args) => args.default_output_dir(here),
        Command::Cache(args) => args.default_output_dir(here),
        Command::Runs(args) => args.default_output_dir(here),
        #[cfg(feature = "full")]
        Command::History(args) => args.default_output_dir(here),
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
