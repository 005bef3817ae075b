//! `profile-cli ab BASE CANDIDATE`: two targets of one build measured in
//! one process on the same records, their passes alternated in blocks
//! (base and candidate, then candidate and base, ...) after both warmed
//! up, and compared pair of blocks by pair of blocks: what the machine did
//! meanwhile falls on both sides, so the verdict holds on a busy machine.
//!
//! It writes `runs/<AB_ID>/` under the base's profile: `base/` and
//! `candidate/` (each a run directory like `run` writes), `paired.json`
//! (every pass of both sides in the order they ran) and `report.html`
//! (the comparison page); it prints the comparison as `compare` does.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use profiling_core::driver::manifest::PairInfo;
use profiling_core::driver::run_dir;
use profiling_core::driver::run_samples::{PairedSamples, SidePasses, PAIRED_FILE, PAIRED_VERSION};
use profiling_core::driver::runner::{paired_blocks, PairSide};
use profiling_core::driver::session::{self, Planned, RunReport, RunRequest};

use crate::decide::DecideArgs;

#[cfg(feature = "full")]
mod against;
#[cfg(feature = "full")]
mod judge;
#[cfg(feature = "full")]
pub(crate) use judge::after_pair;
#[cfg(feature = "full")]
use judge::{
    agreed_gates, gate_results, gates_source, judge_samples, read_samples, refuse_unmeasured,
};
mod lockstep;
pub(crate) mod step;
#[cfg(feature = "full")]
mod until;
use crate::exit::{EXIT_OK, EXIT_TARGET_FAILED, EXIT_USAGE};
use crate::handoff::{self, Handoff, Paired};
#[cfg(feature = "full")]
pub(crate) use until::until_decided;

/// Passes a side when neither `--iterations` nor the config asks for at
/// least this many: fewer give too few block pairs for a verdict.
pub const MIN_PASSES: u32 = 40;

/// Block pairs a run is cut into unless `--block-passes` says.
const TARGET_PAIRS: u32 = 20;

#[derive(Debug, Clone, Args)]
pub struct AbArgs {
    /// The base target: a registered target's name.
    pub base: String,
    /// The candidate target: another target of this build (a variant of the base, or the
    /// production function it copies). With --against, the same target unless given.
    #[arg(required_unless_present_any = ["against", "base_binary"])]
    pub candidate: Option<String>,
    /// Measure the target as built at the git revision REV (a commit, branch or tag) against the
    /// working tree, uncommitted changes included: the workspace's profiling binary is built at
    /// REV in a git worktree of its own (target/ab-against/), then both binaries run in lock-step,
    /// each in a process of its own, their blocks alternated as in one process.
    #[arg(long, value_name = "REV")]
    pub against: Option<String>,
    /// With --against: the candidate is the binary built at this revision, not the working tree.
    #[arg(long, value_name = "REV", requires = "against")]
    pub candidate_rev: Option<String>,
    /// The base's binary as given, instead of building it at --against's revision (a profiling
    /// binary that runs `step`): what `profile-cli` passes to a workspace's binary.
    #[arg(long, value_name = "FILE", hide = true, conflicts_with = "against")]
    pub base_binary: Option<PathBuf>,
    /// With --base-binary: the candidate's binary (default: this one).
    #[arg(long, value_name = "FILE", hide = true, requires = "base_binary")]
    pub candidate_binary: Option<PathBuf>,
    /// With --base-binary: what the base is called where it is said.
    #[arg(long, value_name = "TEXT", hide = true, requires = "base_binary")]
    pub base_label: Option<String>,
    /// With --base-binary: what the candidate is called where it is said.
    #[arg(long, value_name = "TEXT", hide = true, requires = "base_binary")]
    pub candidate_label: Option<String>,
    /// The base's config (default: as `run BASE` finds it). The candidate's target section comes
    /// from its own config; its data source and workload are the base's, so both run the same
    /// records the same way.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The candidate's config (default: as `run CANDIDATE` finds it; the base's config when both
    /// sides are the same target).
    #[arg(long, value_name = "FILE")]
    pub candidate_config: Option<PathBuf>,
    /// Measured passes of each side (default: the config's, at least 40).
    #[arg(long, value_name = "N")]
    pub iterations: Option<u32>,
    /// Warmup passes of each side, before any measured pass of either.
    #[arg(long, value_name = "N")]
    pub warmup: Option<u32>,
    /// Passes of one side in a row: a block (default: the passes cut into 20 block pairs).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub block_passes: Option<u32>,
    /// Allocations, bytes and peak per pass and range on both sides, compared exactly where every
    /// pass agrees (`--memory` alone is `on`).
    #[arg(long, value_name = "MODE", num_args = 0..=1, default_missing_value = "on", value_parser = crate::run::parse_memory)]
    pub memory: Option<profiling_core::driver::config::MemoryMode>,
    /// Seed of the data source, the targets' random numbers and of which side runs first.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// The paired run's directory name under the base profile's runs/ (default: a UTC timestamp
    /// with `ab-` in front).
    #[arg(long, value_name = "ID")]
    pub ab_id: Option<String>,
    /// Write under DIR/PROFILE/runs/ instead of beside the config.
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Replace an earlier paired run with the same id.
    #[arg(long)]
    pub force: bool,
    /// Print one JSON document (as `compare --json`), the pairing under `pairing`.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print Markdown tables to paste into a pull request.
    #[arg(long)]
    pub markdown: bool,
    /// Do not write the comparison page.
    #[arg(long)]
    pub no_report: bool,
    /// Gates agreed before measuring, comma-separated: METRIC[RANGE] OP THRESHOLD, like
    /// 'p50<=-3%, mean<=-3%, p99<=+2%, peak<=+2%'. Metrics: mean, p50, p90, p95, p99, max of the
    /// pass (or of a range: `p99[decode]`), allocations, bytes and peak per pass (with --memory),
    /// and parity. Thresholds: a change in % or with a unit (ns, us, ms, s; B, KiB, MiB, GiB).
    /// The verdict: accept (exit 0), reject (a gate failed: exit 3) or inconclusive (exit 4). A
    /// gate no pair could decide is refused (exit 2): a memory metric without --memory before
    /// anything runs, a range the targets do not have once the first pair (or stage) has run.
    #[arg(long, value_name = "GATES")]
    pub accept: Option<String>,
    /// Repeat the whole pairing K times (ids AB_ID-1 ... AB_ID-K), each pair judged on its own; with
    /// gates, the verdict is accept or reject only when every repetition says so, else inconclusive.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: u32,
    /// Keep pairing in stages (ids AB_ID-1, AB_ID-2, ...; the first of --iterations passes, the
    /// others sized to fill the budget) until the verdict is clear: with gates, accept or reject;
    /// without, the pass faster, slower or no change. The stages are pooled and looked at after
    /// each from the second, no more than K times (K fixed after the first stage from its time and
    /// the budget, at most 8), each look at confidence 1 - (1 - C) / K and significance S / K, so
    /// that looking often does not raise the error rate; a look resamples whole stages as well as
    /// the blocks within them (each stage builds both targets anew), so the stages must agree. A
    /// verdict still unclear when the budget is spent exits 4.
    #[arg(long, conflicts_with = "repetitions")]
    pub until_decided: bool,
    /// With --until-decided: the time the stages may take, with a unit (default 60s): 90s, 5m,
    /// 500ms. A stage is not started once it is spent.
    #[arg(long, value_name = "DURATION", requires = "until_decided", value_parser = parse_budget)]
    pub budget: Option<std::time::Duration>,
    /// One stage of --until-decided: the pair's id is AB_ID-K (for the profile-cli that runs
    /// this binary and judges the stages).
    #[arg(long, value_name = "K", hide = true, value_parser = clap::value_parser!(u32).range(1..))]
    pub stage: Option<u32>,
    #[command(flatten)]
    pub decide: DecideArgs,
    /// Write what is left to do after the paired run into FILE (for the
    /// `profile-cli` that ran this binary), instead of doing it.
    #[arg(long = "handoff", alias = "outcome", value_name = "FILE", hide = true)]
    pub outcome: Option<PathBuf>,
    /// Where runs go when neither --output-dir nor the config says (the
    /// current directory outside the workspace).
    #[arg(skip)]
    pub default_output_dir: Option<PathBuf>,
}

#[cfg(feature = "full")]
pub(crate) use against::{prepare as prepare_against, BuildTarget, Built};

pub use profiling_core::driver::run_samples::MAX_LOOKS;

/// `--budget`: a number and a unit (ms, s, m, h).
fn parse_budget(text: &str) -> Result<std::time::Duration, String> {
    crate::units::parse_duration(text)
}

/// `--against REV` and `--candidate-rev REV` of an `ab` command.
#[cfg(feature = "full")]
pub(crate) fn against_of(command: &crate::Command) -> Option<(String, Option<String>)> {
    match command {
        crate::Command::Ab(ab) => Some((ab.against.clone()?, ab.candidate_rev.clone())),
        _ => None,
    }
}

/// An `ab` command line for the workspace's binary: `--against` and
/// `--candidate-rev` replaced by the binaries `built` made.
#[cfg(feature = "full")]
pub(crate) fn forward_against(args: &[OsString], built: &against::Built) -> Vec<OsString> {
    let mut forwarded = Vec::with_capacity(args.len() + 8);
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let text = word.to_string_lossy();
        if text == "--against" || text == "--candidate-rev" {
            words.next();
        } else if !(text.starts_with("--against=") || text.starts_with("--candidate-rev=")) {
            forwarded.push(word.clone());
        }
    }
    forwarded.push("--base-binary".into());
    forwarded.push(built.base.0.clone().into());
    forwarded.push("--base-label".into());
    forwarded.push(built.base.1.clone().into());
    if let Some((binary, label)) = &built.candidate {
        forwarded.push("--candidate-binary".into());
        forwarded.push(binary.clone().into());
        forwarded.push("--candidate-label".into());
        forwarded.push(label.clone().into());
    }
    forwarded
}

impl AbArgs {
    /// The candidate's target: the one named, else (with --against) the
    /// base's.
    pub(crate) fn candidate_target(&self) -> &str {
        self.candidate.as_deref().unwrap_or(&self.base)
    }
}

/// `profile-cli ab`.
pub(crate) fn ab_command(
    args: AbArgs,
    workspace_root: &Path,
    command_line: &[OsString],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    #[cfg(feature = "full")]
    if let Err(message) = crate::compare::check_options(&args.decide) {
        writeln!(err, "error: {message}")?;
        return Ok(EXIT_USAGE);
    }
    if let Some(id) = &args.ab_id {
        if let Err(message) = profiling_core::driver::config::check_run_id(id) {
            writeln!(
                err,
                "error: --ab-id: {}",
                message.replace("run id", "ab id")
            )?;
            return Ok(EXIT_USAGE);
        }
    }
    #[cfg(not(feature = "full"))]
    if args.until_decided {
        writeln!(
            err,
            "error: --until-decided: this binary does not judge pairs; run it through `profile-cli ab ... --until-decided`, which judges each stage"
        )?;
        return Ok(EXIT_USAGE);
    }
    // Stages are AB_ID-1, AB_ID-2, ...: a default id is one none of whose
    // stages is taken.
    let staged = args.until_decided || args.stage.is_some();
    let id = match &args.ab_id {
        Some(id) => id.clone(),
        None => default_ab_id(
            &args,
            workspace_root,
            if staged {
                MAX_LOOKS + 1
            } else {
                args.repetitions
            },
        ),
    };
    // The two binaries, when the sides are two builds: built (and held)
    // until the pairs are done; their worktree removed after.
    let binaries = match (&args.against, &args.base_binary) {
        #[cfg(feature = "full")]
        (Some(rev), _) => match against::prepare(
            rev,
            args.candidate_rev.as_deref(),
            workspace_root,
            &against::BuildTarget::this_program(),
            err,
        )? {
            Ok(built) => Some(built.into_binaries()?),
            Err(code) => return Ok(code),
        },
        #[cfg(not(feature = "full"))]
        (Some(_), _) => {
            writeln!(
                err,
                "error: --against: this binary does not build revisions; run it through `profile-cli ab ... --against REV`, which builds both"
            )?;
            return Ok(EXIT_USAGE);
        }
        (None, Some(binary)) => Some(lockstep::Binaries::given(
            binary.clone(),
            args.candidate_binary.clone(),
            (args.base_label.clone(), args.candidate_label.clone()),
        )?),
        (None, None) => None,
    };
    #[cfg(feature = "full")]
    if args.until_decided {
        return until::until_decided(
            &args,
            &mut |stage, size, err| {
                let mut stage_args = args.clone();
                if let Some(size) = size {
                    stage_args.iterations = Some(size.passes);
                    stage_args.block_passes = size.block_passes.or(args.block_passes);
                }
                run_pair(
                    &stage_args,
                    &format!("{id}-{stage}"),
                    workspace_root,
                    command_line,
                    binaries.as_ref(),
                    err,
                )
            },
            out,
            err,
        );
    }
    let ids: Vec<String> = match args.stage {
        Some(stage) => vec![format!("{id}-{stage}")],
        None if args.repetitions == 1 => vec![id.clone()],
        None => (1..=args.repetitions)
            .map(|k| format!("{id}-{k}"))
            .collect(),
    };
    let mut pairs = Vec::new();
    for (k, pair_id) in (1..).zip(&ids) {
        if ids.len() > 1 {
            writeln!(err, "ab: repetition {k} of {}", ids.len())?;
        }
        match run_pair(
            &args,
            pair_id,
            workspace_root,
            command_line,
            binaries.as_ref(),
            err,
        )? {
            Ok(paired) => pairs.push(paired),
            Err(code) => {
                if !pairs.is_empty() {
                    writeln!(
                        err,
                        "note: the {} repetition(s) before it are kept: {}",
                        pairs.len(),
                        pairs
                            .iter()
                            .map(|p: &Paired| p.dir.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )?;
                }
                return Ok(code);
            }
        }
    }
    drop(binaries);
    if let Some(file) = &args.outcome {
        handoff::write(file, &Handoff::Paired(pairs))?;
        return Ok(EXIT_OK);
    }
    after_pair(pairs, &args, out, err)
}

/// `ab-` and the UTC time; when a pair in the base profile's runs has it
/// already (two pairs started in one second), `-2`, `-3`, ... after the
/// time, as runs are named. With repetitions, no `ID-K` may be taken
/// either.
fn default_ab_id(args: &AbArgs, workspace_root: &Path, repetitions: u32) -> String {
    let stamp = format!(
        "ab-{}",
        profiling_core::driver::provenance::UtcTime::now().compact()
    );
    let request = RunRequest {
        target: Some(args.base.clone()),
        config_path: args.config.clone(),
        overrides: profiling_core::driver::config::Overrides {
            output_dir: args.output_dir.clone(),
            ..Default::default()
        },
        run_id: Some(stamp.clone()),
        workspace_root: workspace_root.to_path_buf(),
        default_output_dir: args.default_output_dir.clone(),
        ..Default::default()
    };
    // A base that cannot be planned is refused with its reason later.
    let Some(runs) = session::plan(&request)
        .ok()
        .and_then(|planned| planned.run_dir.parent().map(Path::to_path_buf))
    else {
        return stamp;
    };
    free_ab_id(&runs, &stamp, repetitions)
}

/// `stamp`, or `stamp-2`, `stamp-3`, ...: the first that no pair in
/// `runs` has (written, or claimed while it runs), nor any of its
/// repetitions' ids (`ID-1` ... `ID-K`) when there are several.
fn free_ab_id(runs: &Path, stamp: &str, repetitions: u32) -> String {
    let taken = |id: &str| runs.join(id).exists() || runs.join(format!(".{id}.claim")).exists();
    let free = |id: &str| match repetitions {
        1 => !taken(id),
        k => (1..=k).all(|n| !taken(&format!("{id}-{n}"))),
    };
    std::iter::once(stamp.to_owned())
        .chain((2..10_000).map(|n| format!("{stamp}-{n}")))
        .find(|id| free(id))
        .unwrap_or_else(|| stamp.to_owned())
}

/// After the paired run, in a binary that does not read runs back: where
/// its files are.
#[cfg(not(feature = "full"))]
pub(crate) fn after_pair(
    pairs: Vec<Paired>,
    _args: &AbArgs,
    _out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    for paired in pairs {
        writeln!(
            err,
            "ab: {} (`profile-cli ab` with the same arguments prints the comparison and writes its page)",
            paired.dir.join(PAIRED_FILE).display()
        )?;
    }
    Ok(EXIT_OK)
}

/// Plans both sides, runs them paired, and writes `paired.json`; `Err`
/// with the exit code after saying why on a refusal or a failure.
fn run_pair(
    args: &AbArgs,
    ab_id: &str,
    workspace_root: &Path,
    command_line: &[OsString],
    across: Option<&lockstep::Binaries>,
    err: &mut dyn Write,
) -> anyhow::Result<Result<Paired, u8>> {
    let request = |target: &str, config: Option<&PathBuf>| RunRequest {
        target: Some(target.to_owned()),
        config_path: config.cloned(),
        overrides: profiling_core::driver::config::Overrides {
            iterations: args.iterations,
            warmup: args.warmup,
            seed: args.seed,
            output_dir: args.output_dir.clone(),
            memory: args.memory,
            ..Default::default()
        },
        run_id: Some(ab_id.to_owned()),
        force: args.force,
        workspace_root: workspace_root.to_path_buf(),
        default_output_dir: args.default_output_dir.clone(),
        command_line: command_line
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        program_version: env!("CARGO_PKG_VERSION").to_owned(),
        ..Default::default()
    };
    let mut base_request = request(&args.base, args.config.as_ref());
    // The same target on both sides: the candidate is the base's target
    // section unless a config of its own is given.
    let candidate_config =
        args.candidate_config
            .as_ref()
            .or(if args.candidate_target() == args.base {
                args.config.as_ref()
            } else {
                None
            });
    let mut candidate_request = request(args.candidate_target(), candidate_config);
    let planned = session::plan(&base_request)
        .and_then(|base| session::plan(&candidate_request).map(|candidate| (base, candidate)));
    let (mut base, mut candidate) = match planned {
        Ok(planned) => planned,
        Err(error) => {
            writeln!(err, "error: {error}")?;
            return Ok(Err(error.exit_code()));
        }
    };
    if args.iterations.is_none() && base.config.iterations < MIN_PASSES {
        writeln!(
            err,
            "note: {MIN_PASSES} measured passes a side (the config's {} give too few block pairs); --iterations N sets it",
            base.config.iterations
        )?;
        base.config.iterations = MIN_PASSES;
    }
    // The gates, read before anything runs: `--accept`, else the base
    // config's `ab.accept`.
    #[cfg(feature = "full")]
    let gates = match agreed_gates(args.accept.as_deref(), base.config_path.as_deref()) {
        Ok(gates) => gates,
        Err(message) => {
            writeln!(err, "error: {message}")?;
            return Ok(Err(EXIT_USAGE));
        }
    };
    // A gate on memory that this pair does not record could never decide.
    #[cfg(feature = "full")]
    if let Some(gates) = &gates {
        if let Err(error) =
            profiling_compare::gates::check_recorded(gates, base.config.memory.is_on())
        {
            writeln!(
                err,
                "error: {}: {error}",
                gates_source(args.accept.as_deref(), base.config_path.as_deref())
            )?;
            return Ok(Err(EXIT_USAGE));
        }
    }
    share_workload(&base, &mut candidate);
    if base.config.record_loading == profiling_core::driver::config::RecordLoading::Lazy {
        writeln!(
            err,
            "error: {}record_loading: lazy: a paired run reads its records before its passes, so that both sides run the same ones; use eager",
            base.config_path
                .as_ref()
                .map_or(String::new(), |path| format!("{}: ", path.display()))
        )?;
        return Ok(Err(EXIT_USAGE));
    }
    let dir = base.run_dir.clone();
    let ab_id = base.run_id.clone();
    // Looked at before the claim, and again holding it: a pair may have
    // landed between the two.
    let taken = |err: &mut dyn Write| -> std::io::Result<bool> {
        if dir.exists() && !args.force {
            writeln!(
                err,
                "error: {} exists: give --force to replace it, or another --ab-id",
                dir.display()
            )?;
            return Ok(true);
        }
        Ok(false)
    };
    if taken(err)? {
        return Ok(Err(EXIT_USAGE));
    }
    // The pair's id is held while it runs; it is written beside its
    // directory and moves into place whole, both sides and paired.json,
    // or not at all: an earlier pair stays as it was until then.
    let claim = match run_dir::RunClaim::take(&dir) {
        Ok(claim) => claim,
        Err(run_dir::ClaimError::Busy { pid, claim, .. }) => {
            writeln!(
                err,
                "error: ab id `{ab_id}` is in use: process {pid} is running it now ({} is locked); choose another --ab-id, or wait for it",
                claim.display()
            )?;
            return Ok(Err(EXIT_USAGE));
        }
        Err(error) => {
            writeln!(err, "error: {error}")?;
            return Ok(Err(EXIT_TARGET_FAILED));
        }
    };
    for line in run_dir::recover(&dir, &claim) {
        writeln!(err, "note: {line}")?;
    }
    if taken(err)? {
        return Ok(Err(EXIT_USAGE));
    }
    let staging = run_dir::staging_dir(&dir);
    let _ = std::fs::remove_dir_all(&staging);
    if let Err(error) = std::fs::create_dir(&staging) {
        writeln!(
            err,
            "error: cannot write the pair to {}: {error}",
            staging.display()
        )?;
        return Ok(Err(EXIT_TARGET_FAILED));
    }
    let staged = Staged(staging.clone());
    base.staged_in = Some(staging.join("base"));
    candidate.staged_in = Some(staging.join("candidate"));
    base.run_dir = dir.join("base");
    candidate.run_dir = dir.join("candidate");
    let iterations = base.config.iterations;
    let size = args
        .block_passes
        .unwrap_or_else(|| (iterations / TARGET_PAIRS).max(1));
    let blocks = paired_blocks(iterations, size, base.config.seed.unwrap_or(0));
    let words: Vec<(String, u32)> = blocks
        .iter()
        .map(|&(side, passes)| (side.word().to_owned(), passes))
        .collect();
    let pair = |side: PairSide, other: &Planned| PairInfo {
        id: ab_id.clone(),
        side: side.word().to_owned(),
        other_target: other.entry.name.to_owned(),
        blocks: words.clone(),
    };
    base_request.pair = Some(pair(PairSide::Base, &candidate));
    candidate_request.pair = Some(pair(PairSide::Candidate, &base));
    writeln!(
        err,
        "ab: {} against {}, {iterations} passes each in blocks of {size}, alternated",
        base.entry.name, candidate.entry.name
    )?;
    // From here a first signal lets the pair's process end the sides and
    // say so, whenever it comes.
    let _held = across.map(|_| profiling_core::driver::interrupt::Hold::new());
    if let Some(binaries) = across {
        writeln!(
            err,
            "ab: the base is {}, the candidate {}: each a process of its own, in lock-step",
            binaries.base_named(),
            binaries.candidate_named()
        )?;
    }
    let (ends, between) = match across {
        None => match session::execute_pair(
            (&base, &base_request),
            (&candidate, &candidate_request),
            &blocks,
        ) {
            Ok(reports) => {
                // The canary between block pairs, read by the run of both.
                let between = reports[0]
                    .outcome
                    .as_ref()
                    .ok()
                    .and_then(|outcome| outcome.timings.machine.as_ref())
                    .and_then(|machine| machine.canary.as_ref())
                    .map(|canary| canary.between.clone())
                    .unwrap_or_default();
                (reports.map(|report| SideEnd::of(&report)), between)
            }
            Err(error) => {
                // Refused before anything was written: nothing is left.
                drop(staged);
                writeln!(err, "error: {error}")?;
                return Ok(Err(error.exit_code()));
            }
        },
        Some(binaries) => {
            let specs = [
                (&base, &base_request, PairSide::Base),
                (&candidate, &candidate_request, PairSide::Candidate),
            ]
            .map(|(planned, request, side)| lockstep::spec(planned, request, side, &base));
            match lockstep::run(binaries, specs, &blocks, err)? {
                Ok(ran) => (ran.ends, ran.between),
                Err(code) => {
                    drop(staged);
                    return Ok(Err(code));
                }
            }
        }
    };
    let earlier = if dir.exists() {
        format!("; the earlier pair in {} is as it was", dir.display())
    } else {
        String::new()
    };
    if let Some((signal, completed)) = ends.iter().find_map(|end| end.interrupted) {
        writeln!(
            err,
            "interrupted by {} after {completed} of {iterations} measured passes a side: the pair is not kept (a pair is kept whole or not at all){earlier}",
            profiling_core::driver::manifest::signal_name(signal),
        )?;
        return Ok(Err(profiling_core::driver::interrupt::exit_code(signal)));
    }
    for (word, end) in ["base", "candidate"].into_iter().zip(&ends) {
        if let Some(failure) = &end.write_error {
            writeln!(
                err,
                "error: the {word} could not be written whole: {failure}; the pair is not kept{earlier}"
            )?;
            return Ok(Err(EXIT_TARGET_FAILED));
        }
    }
    let [base_passes, candidate_passes] = ends.map(|end| end.passes);
    let (base_passes, candidate_passes) = match (base_passes, candidate_passes) {
        (Ok(base), Ok(candidate)) => (base, candidate),
        (base, candidate) => {
            say_side_failures([("base", base), ("candidate", candidate)], err)?;
            return Ok(Err(EXIT_TARGET_FAILED));
        }
    };
    let samples = PairedSamples {
        processes: if across.is_some() { 2 } else { 1 },
        format_version: PAIRED_VERSION,
        blocks: words,
        base: base_passes,
        candidate: candidate_passes,
        stages: Vec::new(),
        canary: between,
    };
    let text = serde_json::to_string(&samples)?;
    let landed = {
        // Whole before a signal ends the process.
        let _writing = profiling_core::driver::interrupt::Hold::new();
        run_dir::write_atomically(&staging.join(PAIRED_FILE), text.as_bytes())
            .and_then(|()| run_dir::move_into_place(&staging, &dir))
    };
    if let Err(error) = landed {
        writeln!(
            err,
            "error: cannot put the pair in place at {}: {error}; the pair is not kept{earlier}",
            dir.display()
        )?;
        return Ok(Err(EXIT_TARGET_FAILED));
    }
    std::mem::forget(staged);
    drop(claim);
    // The ranges are known now: a gate on one the targets lack is refused
    // before another repetition or stage runs.
    #[cfg(feature = "full")]
    if let Some(gates) = &gates {
        if let Err(code) = refuse_unmeasured(
            gates,
            &samples,
            (args.accept.as_deref(), base.config_path.as_deref()),
            &dir,
            err,
        )? {
            return Ok(Err(code));
        }
    }
    Ok(Ok(Paired {
        base_dir: base.run_dir.clone(),
        candidate_dir: candidate.run_dir.clone(),
        dir,
        config: base.config_path.clone(),
    }))
}

/// A pair's staging directory, removed with what it holds unless it
/// moved into place.
struct Staged(PathBuf);

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Gives the candidate the base's records and workload: what differs
/// between the two sides is their target, nothing else.
fn share_workload(base: &Planned, candidate: &mut Planned) {
    let (from, to) = (&base.config, &mut candidate.config);
    to.data_source = from.data_source.clone();
    to.device = from.device;
    to.warmup = from.warmup;
    to.iterations = from.iterations;
    to.batch_size = from.batch_size;
    to.last_batch = from.last_batch;
    to.record_loading = from.record_loading;
    to.seed = from.seed;
    to.capture_range = from.capture_range.clone();
    to.cuda = from.cuda;
    to.gpu_timing = from.gpu_timing;
    to.memory = from.memory;
}

/// Why the sides of a pair failed: first each side's own error, then each
/// side that did not run because of the other's, as a note.
fn say_side_failures(
    sides: [(&str, Result<SidePasses, SideFailure>); 2],
    err: &mut dyn Write,
) -> std::io::Result<()> {
    let failures: Vec<(&str, SideFailure)> = sides
        .into_iter()
        .filter_map(|(word, side)| side.err().map(|failure| (word, failure)))
        .collect();
    for (word, failure) in &failures {
        if !failure.not_run {
            writeln!(err, "error: the {word} failed: {}", failure.message)?;
        }
    }
    for (word, failure) in &failures {
        if failure.not_run {
            writeln!(err, "note: the {word} did {}", failure.message)?;
        }
    }
    Ok(())
}

/// Why a side of a pair has no passes: its error, and whether it is only
/// that the other side failed first.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct SideFailure {
    message: String,
    not_run: bool,
}

/// How one side of a pair ended, as the pair needs it: its passes (or
/// why it has none), the signal that cut it with the passes it completed,
/// and what of its run could not be written. A side run in a process of
/// its own (`--against`) sends it to the pair's process.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct SideEnd {
    passes: Result<SidePasses, SideFailure>,
    interrupted: Option<(i32, u32)>,
    write_error: Option<String>,
}

impl SideEnd {
    fn of(report: &RunReport) -> SideEnd {
        SideEnd {
            passes: side_passes(report),
            interrupted: report
                .outcome
                .as_ref()
                .ok()
                .and_then(|outcome| Some((outcome.interrupted?, outcome.completed_iterations))),
            write_error: report.write_error.as_ref().map(ToString::to_string),
        }
    }
}

/// A side's passes in the order they ran, from what it measured; why
/// not, when it failed.
fn side_passes(report: &RunReport) -> Result<SidePasses, SideFailure> {
    let outcome = report.outcome.as_ref().map_err(|error| {
        let not_run = match error {
            session::SessionError::Target(error) => error.as_not_run().map(ToString::to_string),
            _ => None,
        };
        match not_run {
            Some(message) => SideFailure {
                message,
                not_run: true,
            },
            None => SideFailure {
                message: error.to_string(),
                not_run: false,
            },
        }
    })?;
    let capture = &outcome.capture;
    let inputs = outcome
        .record_batches
        .last()
        .map_or(outcome.record_ids.len(), |&last| last as usize + 1);
    Ok(SidePasses::of(
        &capture.samples.passes.kept,
        &capture.samples.calls.kept,
        inputs,
        &capture.passes,
        &capture.ranges,
    )
    .with_memory(capture.samples.memory.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::free_ab_id;

    /// Two pairs started in one second: the second gets `-2`, then `-3`,
    /// whether the earlier is written or only claimed; with repetitions,
    /// an id one of whose repetitions is taken is passed over.
    #[test]
    fn a_pair_started_in_the_same_second_gets_the_next_id() {
        let runs = tempfile::tempdir().unwrap();
        let stamp = "ab-20261204T230000Z";
        assert_eq!(free_ab_id(runs.path(), stamp, 1), stamp);
        std::fs::create_dir(runs.path().join(stamp)).unwrap();
        assert_eq!(free_ab_id(runs.path(), stamp, 1), format!("{stamp}-2"));
        std::fs::write(runs.path().join(format!(".{stamp}-2.claim")), "1").unwrap();
        assert_eq!(free_ab_id(runs.path(), stamp, 1), format!("{stamp}-3"));
        // With repetitions, the ids are ID-1 ... ID-K: an id is free when
        // every one of them is.
        let runs = tempfile::tempdir().unwrap();
        assert_eq!(free_ab_id(runs.path(), stamp, 3), stamp);
        std::fs::create_dir(runs.path().join(stamp)).unwrap();
        assert_eq!(free_ab_id(runs.path(), stamp, 3), stamp);
        std::fs::create_dir(runs.path().join(format!("{stamp}-1"))).unwrap();
        assert_eq!(free_ab_id(runs.path(), stamp, 3), format!("{stamp}-2"));
        std::fs::create_dir(runs.path().join(format!("{stamp}-2-3"))).unwrap();
        std::fs::write(runs.path().join(format!(".{stamp}-3-2.claim")), "1").unwrap();
        assert_eq!(free_ab_id(runs.path(), stamp, 3), format!("{stamp}-4"));
        assert_eq!(free_ab_id(runs.path(), stamp, 1), format!("{stamp}-2"));
    }
}
