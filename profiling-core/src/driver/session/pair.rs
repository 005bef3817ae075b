//! A paired run (`profile-cli ab`): two targets planned once each, the
//! candidate given the base's records and workload, their passes
//! alternated in blocks, and the pair written whole or not at all:
//! `base/` and `candidate/` (each a run directory) and `paired.json`
//! (every pass of both sides in the order they ran).
//!
//! [`plan_pair`] checks everything without side effects; [`claim_pair`]
//! holds the pair's id and makes its staging directory; the sides run
//! into it (in this process, [`in_process`], or in two processes paced in
//! lock-step by the caller); [`ClaimedPair::finish`] writes `paired.json`
//! and moves the pair into place.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{execute_pair, plan, Planned, RunEnd, RunRequest, SessionError};
use crate::driver::canary::Canary;
use crate::driver::config::RecordReading;
use crate::driver::manifest::PairInfo;
use crate::driver::run_dir;
use crate::driver::run_samples::{PairedSamples, SidePasses, PAIRED_FILE, PAIRED_VERSION};
use crate::driver::runner::{paired_blocks, PairSide};

/// Passes a side when neither the request nor the config asks for at
/// least this many: fewer give too few block pairs for a verdict.
pub const MIN_PASSES: u32 = 40;

/// Block pairs a run is cut into unless the request sizes its blocks.
pub const TARGET_PAIRS: u32 = 20;

/// What a paired run asks for: each side's run request (the pair's id as
/// their run id), and how the passes are cut.
#[derive(Debug, Clone)]
pub struct PairRequest {
    pub base: RunRequest,
    pub candidate: RunRequest,
    /// Passes of one side in a row; `None`: the passes cut into
    /// [`TARGET_PAIRS`] block pairs.
    pub block_passes: Option<u32>,
}

/// A pair that passed every check and can start: both sides planned
/// (their run directories inside the pair's), the order of the blocks,
/// and what the planning has to say.
#[derive(Debug)]
pub struct PlannedPair {
    pub base: Planned,
    pub candidate: Planned,
    /// The requests, each with the side's [`PairInfo`] for its manifest.
    pub base_request: RunRequest,
    pub candidate_request: RunRequest,
    /// The pair's directory: `base/`, `candidate/` and `paired.json`.
    pub dir: PathBuf,
    /// The pair's id (the base's run id).
    pub id: String,
    /// Measured passes of each side.
    pub iterations: u32,
    /// Passes of a side in a row.
    pub block_passes: u32,
    /// Each block in order: its side and its passes.
    pub blocks: Vec<(PairSide, u32)>,
    /// What the planning changed that the user did not ask for (the
    /// passes raised to [`MIN_PASSES`]), one line each.
    pub notes: Vec<String>,
}

/// Why a paired run did not happen, or was not kept.
#[derive(Debug, thiserror::Error)]
pub enum PairError {
    /// A side could not be planned, or was refused before it ran.
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("{}record_loading: lazy: a paired run reads its records before its passes, so that both sides run the same ones; use eager", .config.as_ref().map_or(String::new(), |path| format!("{}: ", path.display())))]
    LazyRecords { config: Option<PathBuf> },
    #[error("{} exists: give --force to replace it, or another --ab-id", .dir.display())]
    Exists { dir: PathBuf },
    #[error("ab id `{id}` is in use: process {pid} is running it now ({} is locked); choose another --ab-id, or wait for it", .claim.display())]
    Busy {
        id: String,
        pid: String,
        claim: PathBuf,
    },
    #[error("{0}")]
    Claim(run_dir::ClaimError),
    #[error("cannot write the pair to {}: {source}", .staging.display())]
    Staging {
        staging: PathBuf,
        source: std::io::Error,
    },
    /// A signal cut the sides: nothing is kept.
    #[error("interrupted by {} after {completed} of {iterations} measured passes a side: the pair is not kept (a pair is kept whole or not at all){earlier}", crate::driver::manifest::signal_name(*.signal))]
    Interrupted {
        signal: i32,
        completed: u32,
        iterations: u32,
        earlier: String,
    },
    #[error("the {side} could not be written whole: {failure}; the pair is not kept{earlier}")]
    SideNotWritten {
        side: &'static str,
        failure: String,
        earlier: String,
    },
    /// A side failed, or did not run because the other failed.
    #[error("{}", side_failures(.0))]
    SidesFailed(Vec<(&'static str, SideFailure)>),
    #[error("cannot put the pair in place at {}: {source}; the pair is not kept{earlier}", .dir.display())]
    NotInPlace {
        dir: PathBuf,
        source: std::io::Error,
        earlier: String,
    },
    /// The sides' runner stopped the pair and said why itself.
    #[error("the pair stopped (exit {0})")]
    Said(u8),
}

impl PairError {
    /// The exit code: a usage error's 2, a failure's 1, a signal's
    /// 128 + its number, or the code of a runner that said why.
    pub fn exit_code(&self) -> u8 {
        match self {
            PairError::Session(error) => error.exit_code(),
            PairError::LazyRecords { .. } | PairError::Exists { .. } | PairError::Busy { .. } => 2,
            PairError::Interrupted { signal, .. } => crate::driver::interrupt::exit_code(*signal),
            PairError::Said(code) => *code,
            PairError::Claim(_)
            | PairError::Staging { .. }
            | PairError::SideNotWritten { .. }
            | PairError::SidesFailed(_)
            | PairError::NotInPlace { .. } => 1,
        }
    }

    /// The lines that say it, each with its prefix (`error: `, `note: `,
    /// or none for an interruption); none for a runner that said why.
    pub fn lines(&self) -> Vec<String> {
        match self {
            PairError::Said(_) => Vec::new(),
            PairError::Interrupted { .. } => vec![self.to_string()],
            PairError::SidesFailed(failures) => {
                let errors = failures.iter().filter(|(_, failure)| !failure.not_run).map(
                    |(side, failure)| format!("error: the {side} failed: {}", failure.message),
                );
                let notes = failures
                    .iter()
                    .filter(|(_, failure)| failure.not_run)
                    .map(|(side, failure)| format!("note: the {side} did {}", failure.message));
                errors.chain(notes).collect()
            }
            other => vec![format!("error: {other}")],
        }
    }
}

/// [`PairError::SidesFailed`] in one line.
fn side_failures(failures: &[(&'static str, SideFailure)]) -> String {
    failures
        .iter()
        .map(|(side, failure)| format!("the {side}: {}", failure.message))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Why a side of a pair has no passes: its error, and whether it is only
/// that the other side failed first.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SideFailure {
    pub message: String,
    pub not_run: bool,
}

/// How one side of a pair ended, as the pair needs it: its passes (or
/// why it has none), the signal that cut it with the passes it completed,
/// and what of its run could not be written. A side run in a process of
/// its own sends it to the pair's process.
#[derive(Debug, Serialize, Deserialize)]
pub struct SideEnd {
    pub passes: Result<SidePasses, SideFailure>,
    pub interrupted: Option<(i32, u32)>,
    pub write_error: Option<String>,
}

impl SideEnd {
    /// How the side that `report` tells of ended.
    pub fn of(ended: &RunEnd) -> SideEnd {
        SideEnd {
            passes: side_passes(ended),
            interrupted: ended
                .outcome
                .as_ref()
                .ok()
                .and_then(|outcome| Some((outcome.interrupted?, outcome.completed_iterations))),
            write_error: ended.write_error.as_ref().map(ToString::to_string),
        }
    }
}

/// What running both sides gave: how each ended, and the machine-speed
/// canary read between block pairs.
#[derive(Debug)]
pub struct SidesRan {
    pub ends: [SideEnd; 2],
    pub between: Vec<Canary>,
}

/// A pair written whole and in place.
#[derive(Debug)]
pub struct PairEnd {
    pub dir: PathBuf,
    pub base_dir: PathBuf,
    pub candidate_dir: PathBuf,
    /// The base's config file, when it has one.
    pub config: Option<PathBuf>,
    /// What `paired.json` holds.
    pub samples: PairedSamples,
}

/// Plans both sides of `request`: the candidate given the base's records
/// and workload, the passes raised to [`MIN_PASSES`] when neither the
/// request nor the config asks for as many, the blocks ordered from the
/// seed. Nothing is written.
pub fn plan_pair(request: PairRequest) -> Result<PlannedPair, PairError> {
    let PairRequest {
        base: mut base_request,
        candidate: mut candidate_request,
        block_passes,
    } = request;
    let mut base = plan(&base_request)?;
    let mut candidate = plan(&candidate_request)?;
    let mut notes = Vec::new();
    // Both sides run the same passes in lock-step blocks, counted before
    // either runs: a config's `measurement_time` cannot size them.
    if let Some(nanos) = base.config.measurement_time_ns.take() {
        notes.push(format!(
            "the config's measurement_time ({}) does not apply to paired passes: they are counted (--iterations N)",
            crate::units::format_ns(nanos)
        ));
    }
    if base_request.overrides.iterations.is_none() && base.config.iterations < MIN_PASSES {
        notes.push(format!(
            "{MIN_PASSES} measured passes a side (the config's {} give too few block pairs); --iterations N sets it",
            base.config.iterations
        ));
        base.config.iterations = MIN_PASSES;
    }
    share_workload(&base, &mut candidate);
    if base.config.record_loading == RecordReading::Lazy {
        return Err(PairError::LazyRecords {
            config: base.config_path.clone(),
        });
    }
    let dir = base.run_dir.clone();
    let staging = run_dir::staging_dir(&dir);
    base.staged_in = Some(staging.join("base"));
    candidate.staged_in = Some(staging.join("candidate"));
    base.run_dir = dir.join("base");
    candidate.run_dir = dir.join("candidate");
    let iterations = base.config.iterations;
    let size = block_passes.unwrap_or_else(|| (iterations / TARGET_PAIRS).max(1));
    let blocks = paired_blocks(iterations, size, base.config.seed.unwrap_or(0));
    let id = base.run_id.clone();
    let info = |side: PairSide, other: &Planned| PairInfo {
        id: id.clone(),
        side: side.word().to_owned(),
        other_target: other.entry.name.to_owned(),
        blocks: block_words(&blocks),
    };
    base_request.pair = Some(info(PairSide::Base, &candidate));
    candidate_request.pair = Some(info(PairSide::Candidate, &base));
    Ok(PlannedPair {
        base,
        candidate,
        base_request,
        candidate_request,
        dir,
        id,
        iterations,
        block_passes: size,
        blocks,
        notes,
    })
}

/// The blocks as `paired.json` and the manifests write them.
fn block_words(blocks: &[(PairSide, u32)]) -> Vec<(String, u32)> {
    blocks
        .iter()
        .map(|&(side, passes)| (side.word().to_owned(), passes))
        .collect()
}

/// Runs both sides of `planned` in this process, their targets built
/// side by side and their blocks alternated.
pub fn in_process(planned: &PlannedPair) -> Result<SidesRan, PairError> {
    let ends = execute_pair(
        (&planned.base, &planned.base_request),
        (&planned.candidate, &planned.candidate_request),
        &planned.blocks,
    )?;
    // The canary between block pairs, read by the run of both.
    let between = ends[0]
        .outcome
        .as_ref()
        .ok()
        .and_then(|outcome| outcome.timings.machine.as_ref())
        .and_then(|machine| machine.canary.as_ref())
        .map(|canary| canary.between.clone())
        .unwrap_or_default();
    Ok(SidesRan {
        ends: ends.map(|ended| SideEnd::of(&ended)),
        between,
    })
}

/// A pair whose id is held, with its staging directory made: the sides
/// run (and write) into it, and [`ClaimedPair::finish`] moves it into
/// place whole. Dropped before that, it leaves nothing: the staging
/// directory is removed and the id released, and an earlier pair with the
/// id stays as it was.
pub struct ClaimedPair {
    claim: run_dir::RunClaim,
    staged: Staged,
    /// What an earlier process left behind and was recovered, one line
    /// each, to be said.
    pub recovered: Vec<String>,
}

/// Claims the id of the pair `planned` and makes its staging directory:
/// refused when the pair's directory is there (and not to be replaced) or
/// another process holds the id.
pub fn claim_pair(planned: &PlannedPair) -> Result<ClaimedPair, PairError> {
    let dir = &planned.dir;
    // Looked at before the claim, and again holding it: a pair may have
    // landed between the two.
    refuse_taken(planned)?;
    let claim = match run_dir::RunClaim::take(dir) {
        Ok(claim) => claim,
        Err(run_dir::ClaimError::Busy { pid, claim, .. }) => {
            return Err(PairError::Busy {
                id: planned.id.clone(),
                pid,
                claim,
            })
        }
        Err(error) => return Err(PairError::Claim(error)),
    };
    let recovered = run_dir::recover(dir, &claim);
    refuse_taken(planned)?;
    let staging = run_dir::staging_dir(dir);
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir(&staging).map_err(|source| PairError::Staging {
        staging: staging.clone(),
        source,
    })?;
    Ok(ClaimedPair {
        claim,
        staged: Staged(Some(staging)),
        recovered,
    })
}

impl ClaimedPair {
    /// After both sides of `planned` ran (`ran`, in `processes`
    /// processes): writes `paired.json` and moves the pair into place
    /// whole; refused, leaving nothing, when a signal cut the sides, a
    /// side could not be written or a side failed.
    pub fn finish(
        self,
        planned: &PlannedPair,
        ran: SidesRan,
        processes: u32,
    ) -> Result<PairEnd, PairError> {
        let dir = &planned.dir;
        let samples = samples_of(planned, ran, processes)?;
        let not_in_place = |source| PairError::NotInPlace {
            dir: dir.clone(),
            source,
            earlier: earlier_pair(dir),
        };
        let text = serde_json::to_string(&samples)
            .map_err(|error| not_in_place(std::io::Error::other(error)))?;
        let staging = self.staged.path();
        let landed = {
            // Whole before a signal ends the process.
            let _writing = crate::driver::interrupt::Hold::new();
            run_dir::write_atomically(&staging.join(PAIRED_FILE), text.as_bytes())
                .and_then(|()| run_dir::move_into_place(staging, dir))
        };
        landed.map_err(not_in_place)?;
        let ClaimedPair { claim, staged, .. } = self;
        staged.keep();
        drop(claim);
        Ok(PairEnd {
            dir: dir.clone(),
            base_dir: planned.base.run_dir.clone(),
            candidate_dir: planned.candidate.run_dir.clone(),
            config: planned.base.config_path.clone(),
            samples,
        })
    }
}

/// [`PairError::Exists`] when the pair's directory is there and the
/// request does not replace it.
fn refuse_taken(planned: &PlannedPair) -> Result<(), PairError> {
    if planned.dir.exists() && !planned.base.force {
        return Err(PairError::Exists {
            dir: planned.dir.clone(),
        });
    }
    Ok(())
}

/// What the end of a pair not kept says of an earlier one in its place.
fn earlier_pair(dir: &Path) -> String {
    if dir.exists() {
        format!("; the earlier pair in {} is as it was", dir.display())
    } else {
        String::new()
    }
}

/// `paired.json`'s contents from how the sides ended; why not, when a
/// signal cut them, a side could not be written or failed.
fn samples_of(
    planned: &PlannedPair,
    ran: SidesRan,
    processes: u32,
) -> Result<PairedSamples, PairError> {
    let earlier = earlier_pair(&planned.dir);
    if let Some((signal, completed)) = ran.ends.iter().find_map(|end| end.interrupted) {
        return Err(PairError::Interrupted {
            signal,
            completed,
            iterations: planned.iterations,
            earlier,
        });
    }
    for (side, end) in ["base", "candidate"].into_iter().zip(&ran.ends) {
        if let Some(failure) = &end.write_error {
            return Err(PairError::SideNotWritten {
                side,
                failure: failure.clone(),
                earlier,
            });
        }
    }
    let [base, candidate] = ran.ends.map(|end| end.passes);
    let (base, candidate) = match (base, candidate) {
        (Ok(base), Ok(candidate)) => (base, candidate),
        (base, candidate) => {
            return Err(PairError::SidesFailed(
                [("base", base), ("candidate", candidate)]
                    .into_iter()
                    .filter_map(|(side, passes)| passes.err().map(|failure| (side, failure)))
                    .collect(),
            ))
        }
    };
    Ok(PairedSamples {
        processes,
        format_version: PAIRED_VERSION,
        blocks: block_words(&planned.blocks),
        base,
        candidate,
        stages: Vec::new(),
        canary: ran.between,
    })
}

/// A pair's staging directory, removed with what it holds unless it
/// moved into place ([`Staged::keep`]).
struct Staged(Option<PathBuf>);

impl Staged {
    fn path(&self) -> &Path {
        self.0.as_deref().unwrap_or(Path::new(""))
    }

    /// The directory moved into place: nothing is left to remove.
    fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            let _ = std::fs::remove_dir_all(path);
        }
    }
}

/// Gives the candidate the base's records and workload: what differs
/// between the two sides is their target, nothing else.
pub fn share_workload(base: &Planned, candidate: &mut Planned) {
    let (from, to) = (&base.config, &mut candidate.config);
    to.data_source = from.data_source.clone();
    to.device = from.device;
    to.warmup = from.warmup;
    to.iterations = from.iterations;
    to.measurement_time_ns = from.measurement_time_ns;
    to.batch_size = from.batch_size;
    to.last_batch = from.last_batch;
    to.record_loading = from.record_loading;
    to.seed = from.seed;
    to.capture_range = from.capture_range.clone();
    to.cuda = from.cuda;
    to.gpu_timing = from.gpu_timing;
    to.memory = from.memory;
}

/// A side's passes in the order they ran, from what it measured; why
/// not, when it failed.
fn side_passes(ended: &RunEnd) -> Result<SidePasses, SideFailure> {
    let outcome = ended.outcome.as_ref().map_err(|error| {
        let not_run = match error {
            SessionError::Target(error) => error.as_not_run().map(ToString::to_string),
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
