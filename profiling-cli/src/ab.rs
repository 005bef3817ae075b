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
use profiling_core::driver::runner::PairSide;
use profiling_core::driver::session::{self, pair, RunRequest};

use crate::decide::DecideArgs;

#[cfg(feature = "full")]
mod against;
#[cfg(feature = "full")]
mod judge;
#[cfg(feature = "full")]
mod junit;
#[cfg(feature = "full")]
pub(crate) use judge::after_pair;
#[cfg(feature = "full")]
use judge::{gate_results, gates_of, gates_source, judge_samples, read_samples, refuse_unmeasured};
mod lockstep;
pub(crate) mod step;
#[cfg(feature = "full")]
mod until;
use crate::exit::{EXIT_OK, EXIT_USAGE};
use crate::handoff::{self, Handoff, Paired};
#[cfg(feature = "full")]
pub(crate) use until::until_decided;

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
    /// Also write the gates' results as JUnit XML into FILE, for a CI's test report: a test
    /// suite per pair (per repetition), a test case per gate, a failure for a gate that failed
    /// and an error for one that could not be decided.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Gates agreed before measuring, comma-separated: METRIC[RANGE] OP THRESHOLD, like
    /// 'p50<=-3%, mean<=-3%, p99<=+2%, peak<=+2%'. Metrics: mean, p50, p90, p95, p99, max of the
    /// pass (or of a range: `p99[decode]`), allocations, bytes and peak per pass (with --memory),
    /// and parity. Thresholds: a change in % or with a unit (ns, us, ms, s, m, h; B, KiB, MiB, GiB, TiB, or KB, MB, GB, TB).
    /// The verdict: accept (exit 0), reject (a gate failed: exit 3) or inconclusive (exit 4). A
    /// gate no pair could decide is refused (exit 2): a memory metric without --memory before
    /// anything runs, a range the targets do not have once the first pair (or stage) has run.
    #[arg(long, value_name = "GATES")]
    pub accept: Option<String>,
    /// For `git bisect run`: exit 0 when the gates accept ("good"), 1 when they reject ("bad"),
    /// and 125 ("skip") when the verdict is inconclusive or a side does not build or run, so that
    /// a noisy pair or a broken commit is never named the first bad one.
    #[arg(long, requires = "accept")]
    pub bisect: bool,
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
    pub handoff: Option<PathBuf>,
    /// Where runs go when neither --output-dir nor the config says (the
    /// current directory outside the workspace).
    #[arg(skip)]
    pub default_output_dir: Option<PathBuf>,
}

#[cfg(feature = "full")]
pub(crate) use against::{prepare as prepare_against, BuildTarget, Built, CargoProfile};

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
    if let Some(code) = refuse_options(&args, err)? {
        return Ok(code);
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
    let binaries = match binaries_of(&args, workspace_root, err)? {
        Ok(binaries) => binaries,
        Err(code) => return Ok(code),
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
                let stage_id = format!("{id}-{stage}");
                let across = binaries.as_ref();
                run_pair(
                    &stage_args,
                    &stage_id,
                    workspace_root,
                    command_line,
                    across,
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
        let across = binaries.as_ref();
        match run_pair(&args, pair_id, workspace_root, command_line, across, err)? {
            Ok(paired) => pairs.push(paired),
            Err(code) => {
                if !pairs.is_empty() {
                    let kept: Vec<String> = pairs
                        .iter()
                        .map(|p: &Paired| p.dir.display().to_string())
                        .collect();
                    writeln!(
                        err,
                        "note: the {} repetition(s) before it are kept: {}",
                        pairs.len(),
                        kept.join(", ")
                    )?;
                }
                return Ok(code);
            }
        }
    }
    drop(binaries);
    if let Some(file) = &args.handoff {
        handoff::write(file, &Handoff::Paired(pairs))?;
        return Ok(EXIT_OK);
    }
    after_pair(pairs, &args, out, err)
}

/// Options refused before anything is planned, said; their exit code.
fn refuse_options(args: &AbArgs, err: &mut dyn Write) -> std::io::Result<Option<u8>> {
    #[cfg(feature = "full")]
    if let Err(message) = crate::compare::check_options(&args.decide) {
        writeln!(err, "error: {message}")?;
        return Ok(Some(EXIT_USAGE));
    }
    if let Some(id) = &args.ab_id {
        if let Err(message) = profiling_core::driver::config::check_run_id(id) {
            writeln!(
                err,
                "error: --ab-id: {}",
                message.replace("run id", "ab id")
            )?;
            return Ok(Some(EXIT_USAGE));
        }
    }
    #[cfg(not(feature = "full"))]
    if args.until_decided {
        writeln!(
            err,
            "error: --until-decided: this binary does not judge pairs; run it through `profile-cli ab ... --until-decided`, which judges each stage"
        )?;
        return Ok(Some(EXIT_USAGE));
    }
    Ok(None)
}

/// The sides' binaries when they are two builds: built at `--against`'s
/// revisions (and held until dropped), or given; `None` for two targets
/// of this build. `Err` with the exit code after saying why.
fn binaries_of(
    args: &AbArgs,
    workspace_root: &Path,
    err: &mut dyn Write,
) -> anyhow::Result<Result<Option<lockstep::Binaries>, u8>> {
    #[cfg(not(feature = "full"))]
    let _ = workspace_root;
    Ok(match (&args.against, &args.base_binary) {
        #[cfg(feature = "full")]
        (Some(rev), _) => match against::prepare(
            rev,
            args.candidate_rev.as_deref(),
            workspace_root,
            &against::BuildTarget::this_program(),
            err,
        )? {
            Ok(built) => Ok(Some(built.into_binaries()?)),
            Err(code) => Err(code),
        },
        #[cfg(not(feature = "full"))]
        (Some(_), _) => {
            writeln!(
                err,
                "error: --against: this binary does not build revisions; run it through `profile-cli ab ... --against REV`, which builds both"
            )?;
            Err(EXIT_USAGE)
        }
        (None, Some(binary)) => Ok(Some(lockstep::Binaries::given(
            binary.clone(),
            args.candidate_binary.clone(),
            (args.base_label.clone(), args.candidate_label.clone()),
        )?)),
        (None, None) => Ok(None),
    })
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
            paired.dir.join(profiling_core::driver::run_samples::PAIRED_FILE).display()
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
    let request = pair_request(args, ab_id, workspace_root, command_line);
    let planned = match pair::plan_pair(request) {
        Ok(planned) => planned,
        Err(error) => return say_pair_error(&error, err),
    };
    for line in &planned.notes {
        writeln!(err, "note: {line}")?;
    }
    // The gates, read before anything runs: `--accept`, else the base
    // config's `ab.accept`.
    #[cfg(feature = "full")]
    let gates = match gates_before_pairing(args, &planned, err)? {
        Ok(gates) => gates,
        Err(code) => return Ok(Err(code)),
    };
    let claimed = match pair::claim_pair(&planned) {
        Ok(claimed) => claimed,
        Err(error) => return say_pair_error(&error, err),
    };
    for line in &claimed.recovered {
        writeln!(err, "note: {line}")?;
    }
    writeln!(
        err,
        "ab: {} against {}, {} passes each in blocks of {}, alternated",
        planned.base.entry.name,
        planned.candidate.entry.name,
        planned.iterations,
        planned.block_passes
    )?;
    // From here a first signal lets the pair's process end the sides and
    // say so, whenever it comes.
    let _held = across.map(|_| profiling_core::driver::interrupt::Hold::new());
    let ran = match across {
        None => pair::in_process(&planned),
        Some(binaries) => run_across(&planned, binaries, err)?,
    };
    let processes = if across.is_some() { 2 } else { 1 };
    let kept = match ran.and_then(|ran| claimed.finish(&planned, ran, processes)) {
        Ok(kept) => kept,
        Err(error) => return say_pair_error(&error, err),
    };
    // The ranges are known now: a gate on one the targets lack is refused
    // before another repetition or stage runs.
    #[cfg(feature = "full")]
    if let Some(gates) = &gates {
        let source = (args.accept.as_deref(), planned.base.config_path.as_deref());
        if let Err(code) = refuse_unmeasured(gates, &kept.samples, source, &kept.dir, err)? {
            return Ok(Err(code));
        }
    }
    Ok(Ok(Paired {
        base_dir: kept.base_dir,
        candidate_dir: kept.candidate_dir,
        dir: kept.dir,
        config: kept.config,
        accept: planned.base.sections.ab_accept.clone(),
        store: Some(crate::handoff::store_of(
            planned.base.config.output_dir.as_deref(),
            workspace_root,
        )),
    }))
}

/// The pair `args` ask for, with the id `ab_id`: each side's run request.
fn pair_request(
    args: &AbArgs,
    ab_id: &str,
    workspace_root: &Path,
    command_line: &[OsString],
) -> pair::PairRequest {
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
    // The same target on both sides: the candidate is the base's target
    // section unless a config of its own is given.
    let same_target = args.candidate_target() == args.base;
    let candidate_config = args
        .candidate_config
        .as_ref()
        .or(args.config.as_ref().filter(|_| same_target));
    pair::PairRequest {
        base: request(&args.base, args.config.as_ref()),
        candidate: request(args.candidate_target(), candidate_config),
        block_passes: args.block_passes,
    }
}

/// The gates agreed, before the pair runs: `--accept`, else the base
/// config's `ab.accept`; refused (`Err` with the exit code, said) when
/// one does not parse, or names memory that this pair does not record.
#[cfg(feature = "full")]
fn gates_before_pairing(
    args: &AbArgs,
    planned: &pair::PlannedPair,
    err: &mut dyn Write,
) -> std::io::Result<Result<Option<Vec<profiling_compare::gates::Gate>>, u8>> {
    let config = planned.base.config_path.as_deref();
    let accept = args.accept.as_deref();
    let gates = match gates_of(accept, config, planned.base.sections.ab_accept.as_deref()) {
        Ok(gates) => gates,
        Err(message) => {
            writeln!(err, "error: {message}")?;
            return Ok(Err(EXIT_USAGE));
        }
    };
    // A gate on memory that this pair does not record could never decide.
    if let Some(gates) = &gates {
        let memory = planned.base.config.memory.is_on();
        if let Err(error) = profiling_compare::gates::check_recorded(gates, memory) {
            writeln!(err, "error: {}: {error}", gates_source(accept, config))?;
            return Ok(Err(EXIT_USAGE));
        }
    }
    Ok(Ok(gates))
}

/// Both sides of `planned`, each run by its own binary in a process of
/// its own, paced in lock-step.
fn run_across(
    planned: &pair::PlannedPair,
    binaries: &lockstep::Binaries,
    err: &mut dyn Write,
) -> anyhow::Result<Result<pair::SidesRan, pair::PairError>> {
    writeln!(
        err,
        "ab: the base is {}, the candidate {}: each a process of its own, in lock-step",
        binaries.base_named(),
        binaries.candidate_named()
    )?;
    let specs = [
        (&planned.base, &planned.base_request, PairSide::Base),
        (
            &planned.candidate,
            &planned.candidate_request,
            PairSide::Candidate,
        ),
    ]
    .map(|(side, request, word)| lockstep::spec(side, request, word, &planned.base));
    Ok(
        match lockstep::run(binaries, specs, &planned.blocks, err)? {
            Ok(ran) => Ok(ran),
            Err(code) => Err(pair::PairError::Said(code)),
        },
    )
}

/// Says why a pair did not run or was not kept; its exit code.
fn say_pair_error(
    error: &pair::PairError,
    err: &mut dyn Write,
) -> anyhow::Result<Result<Paired, u8>> {
    for line in error.lines() {
        writeln!(err, "{line}")?;
    }
    Ok(Err(error.exit_code()))
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
