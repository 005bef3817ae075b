//! One invocation of `profile-cli run`, from arguments to manifest.
//!
//! [`plan`] resolves the config, the target, the device and the run
//! directory and checks every rule without side effects (so
//! `--print-nsys-command` can stop there); [`execute`] checks that the run
//! directory is free, seeds, reads the records, launches the target and
//! writes the manifest. Bad input is refused before any target code runs
//! and before anything is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_yaml::Value;

use crate::config::{
    self, Batches, Config, ConfigError, ConfigFile, LastBatch, Overrides, RecordLoading,
};
use crate::data::cache::{CacheSummary, ImageCache};
use crate::data::{self, DataError};
use crate::device::{self, Device};
use crate::host::{build_profile, git_state, BackendInfo, GitState, HostInfo, UtcTime};
use crate::manifest::{
    Manifest, ManifestDataSource, ManifestError, ManifestTarget, Status, Workload,
};
use crate::registry::{self, Lookup, TargetEntry};
use crate::run_dir::{write_run_as, RunClaim, TraceInput, WriteFailure};
use crate::runner::{
    CallCounts, Pass, Phase, Records, RunError, RunOutcome, RunPlan, Timings, Validation,
};
use crate::target::{BatchesUnsupported, ParameterError};

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// The target named on the command line.
    pub target: Option<String>,
    /// `--config FILE`.
    pub config_path: Option<PathBuf>,
    pub overrides: Overrides,
    /// `--run-id`; a UTC timestamp when absent.
    pub run_id: Option<String>,
    /// `--force`: replace an earlier run with the same id.
    pub force: bool,
    /// The workspace the targets were built from: relative source files
    /// and the default run directory are taken from it.
    pub workspace_root: PathBuf,
    /// Where runs go when neither `--output-dir`, the config's `output_dir`
    /// nor `--config FILE` (runs beside it) says: the current directory of a
    /// command run outside the workspace, rather than a tree found from
    /// where the program was built (or beside a config found there).
    pub default_output_dir: Option<PathBuf>,
    /// The command line as typed, for the manifest.
    pub command_line: Vec<String>,
    /// The version of the program, for the manifest.
    pub program_version: String,
    /// Dotted config keys set to these values over the config (a sweep's
    /// point: [`ConfigFile::with_edits`]).
    pub config_edits: Vec<(String, Value)>,
    /// The sweep this run is a point of, for the manifest.
    pub sweep: Option<crate::manifest::SweepPoint>,
    /// The paired run this run is a side of, for the manifest.
    pub pair: Option<crate::manifest::PairInfo>,
}

/// Where the config of a run came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigOrigin {
    /// `--config FILE`.
    Explicit,
    /// The `config.yaml` beside the target's source file.
    BesideTarget,
    /// Built-in defaults: dummy source, cpu, one warmup and one measured pass.
    Defaults,
}

/// A run that passed every check and can start.
#[derive(Debug)]
pub struct Planned {
    pub config: Config,
    pub config_path: Option<PathBuf>,
    pub config_origin: ConfigOrigin,
    pub entry: &'static TargetEntry,
    pub run_id: String,
    pub run_dir: PathBuf,
    /// `--force`: an earlier run in `run_dir` is replaced.
    pub force: bool,
    /// The root of the run directories, which holds the caches
    /// ([`run_root`]).
    pub run_root: PathBuf,
    /// Where the run is claimed and written when that is not `run_dir`:
    /// a side of a paired run is written into the pair's staging
    /// directory, which moves into place whole with both sides. What the
    /// manifest records is still `run_dir`'s.
    pub staged_in: Option<PathBuf>,
}

impl Planned {
    /// Where the run is claimed, checked and written: `staged_in`, else
    /// `run_dir`.
    pub fn write_dir(&self) -> &Path {
        self.staged_in.as_deref().unwrap_or(&self.run_dir)
    }
}

/// Why a run did not happen or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Usage(String),
    #[error("unknown target `{name}`{}", near_hint(.near))]
    UnknownTarget { name: String, near: Vec<String> },
    #[error("target `{name}` is not in this build: it needs the `{feature}` feature; build with it: `scripts/profile --features {feature} run {name}` (or `cargo build --release -p profiling-cli --features {feature}`)")]
    NeedsFeature { name: String, feature: &'static str },
    #[error("target name `{name}` is registered more than once ({}): rename one of them", .places.join(", "))]
    AmbiguousTarget { name: String, places: Vec<String> },
    #[error("target.import_path `{import_path}` does not match target `{name}`, defined at {defined_at}{detail}")]
    ImportPathMismatch {
        import_path: String,
        name: String,
        defined_at: String,
        detail: String,
    },
    #[error("device `{device}`: {reason}")]
    DeviceUnavailable { device: Device, reason: String },
    #[error("run id `{run_id}` is already used: {} exists; choose another --run-id, or replace it with --force", .run_dir.display())]
    RunExists { run_id: String, run_dir: PathBuf },
    #[error("--run-id: {0}")]
    RunId(String),
    #[error(transparent)]
    RunClaimed(#[from] crate::run_dir::ClaimError),
    #[error("cannot write the run to {}: {reason}", .run_dir.display())]
    OutputNotWritable { run_dir: PathBuf, reason: String },
    #[error("target `{name}` does not take batches (batch_size {batch_size}): implement `prepare_batch` in its `ProfileTarget` impl (`{type_name}`, {defined_at}) to run it with `workload.batch_size` > 1")]
    BatchesUnsupported {
        name: String,
        type_name: String,
        /// `file:line` of the impl block.
        defined_at: String,
        batch_size: u32,
    },
    #[error(transparent)]
    Data(#[from] DataError),
    #[error("the target failed: {0}")]
    Target(Box<RunError>),
}

fn near_hint(near: &[String]) -> String {
    if near.is_empty() {
        "; `profile-cli list` shows every target".to_owned()
    } else {
        format!(
            "; did you mean {}?",
            near.iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        )
    }
}

impl SessionError {
    /// 2 for bad usage, config or data; 1 when the target itself failed.
    pub fn exit_code(&self) -> u8 {
        match self {
            SessionError::Target(error) if !error.is_data_error() => 1,
            _ => 2,
        }
    }
}

/// Resolves and checks everything about a run without running or writing
/// anything.
pub fn plan(request: &RunRequest) -> Result<Planned, SessionError> {
    let explicit = match &request.config_path {
        Some(path) => Some(ConfigFile::load(path)?),
        None => None,
    };
    let name = match (&request.target, explicit.as_ref().and_then(ConfigFile::target_name)) {
        (Some(name), _) => name.clone(),
        (None, Some(name)) => name.to_owned(),
        (None, None) => {
            return Err(match &request.config_path {
                Some(path) => SessionError::Usage(format!(
                    "{}: target.name: missing, and no target was named on the command line",
                    path.display()
                )),
                None => SessionError::Usage("name a target to run, or give --config FILE (`profile-cli list` shows the targets)".to_owned()),
            })
        }
    };
    let entry = find_target(&name)?;

    let (file, origin) = match explicit {
        Some(file) => (Some(file), ConfigOrigin::Explicit),
        None => match beside_target(entry, &request.workspace_root, &name)? {
            Some(file) => (Some(file), ConfigOrigin::BesideTarget),
            None => (None, ConfigOrigin::Defaults),
        },
    };
    let file = match (file, request.config_edits.is_empty()) {
        (file, true) => file,
        (Some(file), false) => Some(file.with_edits(&request.config_edits)?),
        (None, false) => Some(ConfigFile::for_target(&name).with_edits(&request.config_edits)?),
    };
    let mut overrides = request.overrides.clone();
    overrides.target = Some(name.clone());
    let mut config = match &file {
        Some(file) => file.resolve(&overrides)?,
        None => config::defaults_for(&name, &overrides)?,
    };
    // A config the user named keeps its runs beside it; one found beside
    // the target, or none, takes the default.
    if config.output_dir.is_none() && origin != ConfigOrigin::Explicit {
        config.output_dir = request.default_output_dir.clone();
    }
    let config_path = file.and_then(|f| f.path);

    if let Some(import_path) = &config.target.import_path {
        check_import_path(
            import_path,
            entry,
            &request.workspace_root,
            config_path.as_deref(),
        )?;
    }
    device::check_available(config.device).map_err(|reason| SessionError::DeviceUnavailable {
        device: config.device,
        reason,
    })?;
    crate::runner::check_memory_attribution(&config)
        .map_err(|error| SessionError::Usage(format!("{error:#}")))?;
    // Absolute, so that every path the run prints or records is.
    let runs = absolute(&run_directory(
        &config,
        config_path.as_deref(),
        &request.workspace_root,
    ));
    let run_id = match &request.run_id {
        Some(run_id) => {
            config::check_run_id(run_id).map_err(SessionError::RunId)?;
            run_id.clone()
        }
        None => default_run_id(&runs, &UtcTime::now().compact()),
    };
    let run_dir = runs.join(&run_id);
    let run_root = absolute(&run_root(
        config.output_dir.as_deref(),
        &request.workspace_root,
    ));
    let planned = Planned {
        config,
        config_path,
        config_origin: origin,
        entry,
        run_id,
        run_dir,
        force: request.force,
        run_root,
        staged_in: None,
    };
    check_batches(&planned)?;
    Ok(planned)
}

/// Refuses, before anything is built, run or written, batches the run
/// cannot have: `workload.batch_size` > 1 for a target that does not take
/// batches (its impl block keeps the default `prepare_batch`, as
/// `#[profile_target]` records in [`TargetEntry::takes_batches`]), and
/// `workload.last_batch: drop` on fewer records than one batch (the data
/// source is built, not read, to count them). A batch size of 1 is always
/// fine. [`plan`] calls it, so a sweep's points are checked when each is
/// planned; [`execute`] checks the target again (a `Planned` may be made
/// by hand) and the records on the source it builds to run.
pub fn check_batches(planned: &Planned) -> Result<(), SessionError> {
    check_takes_batches(planned)?;
    let config = &planned.config;
    if config.batch_size > 1 && config.last_batch == LastBatch::Drop {
        let source = data::build(&config.data_source.name, &config.data_source.parameters)
            .and_then(|source| select_records(source, config))
            .map_err(|error| data_source_error(planned, error))?;
        check_whole_batch(planned, source.len())?;
    }
    Ok(())
}

/// `workload.batch_size` > 1 needs a target that takes batches.
fn check_takes_batches(planned: &Planned) -> Result<(), SessionError> {
    if planned.config.batch_size > 1 && !planned.entry.takes_batches {
        return Err(batches_unsupported(planned));
    }
    Ok(())
}

/// `last_batch: drop` needs one whole batch of the source's `records`.
fn check_whole_batch(planned: &Planned, records: usize) -> Result<(), SessionError> {
    let config = &planned.config;
    if Batches::new(records, config.batch_size, config.last_batch).batches > 0 {
        return Ok(());
    }
    Err(ConfigError::Invalid {
        file: planned.config_path.clone(),
        key: "workload.last_batch".to_owned(),
        message: format!(
            "`drop` leaves no batch: the data source has {records} record(s), fewer than workload.batch_size {}; use `keep`, a batch_size of at most {records}, or more records",
            config.batch_size
        ),
    }
    .into())
}

fn batches_unsupported(planned: &Planned) -> SessionError {
    let entry = planned.entry;
    SessionError::BatchesUnsupported {
        name: entry.name.to_owned(),
        type_name: entry.type_name.to_owned(),
        defined_at: format!("{}:{}", entry.file, entry.line),
        batch_size: planned.config.batch_size,
    }
}

/// The UTC time stamp `stamp` as a run id, or, when a run in `runs` has it
/// already (two runs started in one second), `stamp-2`, `stamp-3`, ...
fn default_run_id(runs: &Path, stamp: &str) -> String {
    let taken = |id: &str| runs.join(id).exists() || runs.join(format!(".{id}.claim")).exists();
    if !taken(stamp) {
        return stamp.to_owned();
    }
    (2..)
        .map(|n| format!("{stamp}-{n}"))
        .find(|id| !taken(id))
        .unwrap_or_else(|| stamp.to_owned())
}

/// Refuses a run whose directory holds an earlier run, unless `--force`
/// replaces it. Not part of [`plan`]: `--print-nsys-command` prints a
/// command for later and looks at no directory.
pub fn check_run_dir_free(planned: &Planned) -> Result<(), SessionError> {
    if planned.write_dir().exists() && !planned.force {
        return Err(SessionError::RunExists {
            run_id: planned.run_id.clone(),
            run_dir: planned.write_dir().to_path_buf(),
        });
    }
    Ok(())
}

fn find_target(name: &str) -> Result<&'static TargetEntry, SessionError> {
    match registry::lookup(name) {
        Lookup::Found(entry) => Ok(entry),
        Lookup::Ambiguous(entries) => Err(SessionError::AmbiguousTarget {
            name: name.to_owned(),
            places: entries
                .iter()
                .map(|e| format!("{}:{}", e.file, e.line))
                .collect(),
        }),
        Lookup::Missing { near } => match registry::unavailable().iter().find(|u| u.name == name) {
            Some(unavailable) => Err(SessionError::NeedsFeature {
                name: name.to_owned(),
                feature: unavailable.feature,
            }),
            None => Err(SessionError::UnknownTarget {
                name: name.to_owned(),
                near: near.into_iter().map(str::to_owned).collect(),
            }),
        },
    }
}

/// The `config.yaml` beside the target's source file, when it names this
/// target.
pub(crate) fn beside_target(
    entry: &TargetEntry,
    root: &Path,
    name: &str,
) -> Result<Option<ConfigFile>, SessionError> {
    let source = entry.source_path(root);
    let Some(candidate) = source.parent().map(|dir| dir.join("config.yaml")) else {
        return Ok(None);
    };
    if !candidate.is_file() {
        return Ok(None);
    }
    let file = ConfigFile::load(&candidate)?;
    Ok((file.target_name() == Some(name)).then_some(file))
}

/// `DIR/<profile_name>/runs` with an output directory, else the config
/// file's `runs/`, else the snippets directory of the workspace.
pub fn run_directory(
    config: &Config,
    config_path: Option<&Path>,
    workspace_root: &Path,
) -> PathBuf {
    if let Some(dir) = &config.output_dir {
        return dir.join(&config.profile_name).join("runs");
    }
    if let Some(path) = config_path {
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        return parent.join("runs");
    }
    let base = if workspace_root.is_dir() {
        workspace_root.to_path_buf()
    } else {
        PathBuf::from(".")
    };
    base.join("inference_profiling")
        .join("snippets")
        .join(&config.profile_name)
        .join("runs")
}

/// The root of the run directories, where the caches that runs share live
/// (`.cache/` in it): the output directory when there is one (`output_dir`
/// or `--output-dir`), else the workspace's `inference_profiling/`, which
/// holds the snippets and their runs.
pub fn run_root(output_dir: Option<&Path>, workspace_root: &Path) -> PathBuf {
    if let Some(dir) = output_dir {
        return dir.to_path_buf();
    }
    let base = if workspace_root.is_dir() {
        workspace_root
    } else {
        Path::new(".")
    };
    base.join("inference_profiling")
}

/// `target.import_path` is `<file.rs>[:<Ident>]`: the file must be the
/// target's source file, the ident its type or factory.
fn check_import_path(
    import_path: &str,
    entry: &TargetEntry,
    root: &Path,
    config_path: Option<&Path>,
) -> Result<(), SessionError> {
    let (file, ident) = match import_path.rsplit_once(':') {
        Some((file, ident)) if is_identifier(ident) => (file, Some(ident)),
        _ => (import_path, None),
    };
    let defined_at = format!("{}:{}", entry.display_file(root), entry.line);
    let mismatch = |detail: String| SessionError::ImportPathMismatch {
        import_path: import_path.to_owned(),
        name: entry.name.to_owned(),
        defined_at: defined_at.clone(),
        detail,
    };
    let wanted = Path::new(file);
    let source = entry.source_path(root);
    let candidates: Vec<PathBuf> = if wanted.is_absolute() {
        vec![wanted.to_path_buf()]
    } else {
        let mut list = vec![root.join(wanted), wanted.to_path_buf()];
        if let Some(dir) = config_path.and_then(Path::parent) {
            list.push(dir.join(wanted));
        }
        list
    };
    let same_file = |candidate: &PathBuf| match (candidate.canonicalize(), source.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !candidates.iter().any(same_file) {
        let exists = candidates.iter().any(|c| c.is_file());
        return Err(mismatch(if exists {
            String::new()
        } else {
            format!(" ({file} does not exist)")
        }));
    }
    if let Some(ident) = ident {
        let type_ident = last_segment(entry.type_name);
        let factory_ident = last_segment(entry.constructor);
        if ident != type_ident && ident != factory_ident {
            return Err(mismatch(format!(
                " (`{ident}` is neither its type `{type_ident}` nor its factory `{factory_ident}`)"
            )));
        }
    }
    Ok(())
}

fn last_segment(path: &str) -> &str {
    let without_generics = path.split('<').next().unwrap_or(path);
    without_generics
        .rsplit("::")
        .next()
        .unwrap_or(without_generics)
        .trim()
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// The result of [`execute`]: the manifest (written when the config asks
/// for it), and how the run ended.
#[derive(Debug)]
pub struct RunReport {
    pub manifest: Manifest,
    /// Where the manifest is, when it was written (also when the trace
    /// beside it could not be).
    pub manifest_path: Option<PathBuf>,
    /// What of the run could not be written, and what was kept.
    pub write_error: Option<WriteFailure>,
    pub outcome: Result<RunOutcome, SessionError>,
    /// What the decoded-image cache did, when the run used one.
    pub image_cache: Option<CacheSummary>,
    /// What was put right before the run: leftovers of an earlier write of
    /// its run directory that stopped half way, restored or removed.
    pub recovered: Vec<String>,
}

/// Runs a planned run: seeds, reads the records, launches the target and
/// writes the manifest. Errors before the target starts (data that cannot
/// be read) return `Err` and leave nothing behind; a target that fails
/// still gets a manifest, with `status: failed`.
pub fn execute(planned: &Planned, request: &RunRequest) -> Result<RunReport, SessionError> {
    execute_with_progress(planned, request, None)
}

/// [`execute`], telling `progress` how far the warmup and measured phases
/// are, between passes.
pub fn execute_with_progress(
    planned: &Planned,
    request: &RunRequest,
    progress: Option<Box<dyn Fn(crate::runner::Progress)>>,
) -> Result<RunReport, SessionError> {
    check_takes_batches(planned)?;
    let (run_plan, description, cache) = prepare(planned, progress)?;
    // Held until the run is written: a second run with this id is refused.
    let (claim, recovered) = claim_run_dir(planned)?;
    let ran = launch(planned, &run_plan)?;
    Ok(written(
        (planned, request),
        description,
        cache,
        (claim, recovered),
        ran,
    ))
}

/// A launched run written (its manifest, and its trace and samples when it
/// measured something), its claim on the run directory let go: the report.
fn written(
    (planned, request): (&Planned, &RunRequest),
    description: BTreeMap<String, Value>,
    cache: Option<Arc<ImageCache>>,
    (claim, recovered): (Option<RunClaim>, Vec<String>),
    ran: Ran,
) -> RunReport {
    let mut manifest = manifest_of(planned, request, description, &ran);
    let (manifest_path, write_error) = write(planned, &mut manifest, &ran.result);
    drop(claim);
    RunReport {
        recovered,
        manifest,
        manifest_path,
        write_error,
        outcome: ran
            .result
            .map_err(|error| SessionError::Target(Box::new(error))),
        image_cache: cache.map(|cache| cache.summary()),
    }
}

/// Two planned runs measured together (`profile-cli ab`): both prepared
/// and their records read, both warmed up, then their measured passes in
/// `blocks` inside one capture ([`crate::runner::run_paired`]); each is
/// written as a run of its own. Neither records GPU time.
pub fn execute_pair(
    base: (&Planned, &RunRequest),
    candidate: (&Planned, &RunRequest),
    blocks: &[(crate::runner::PairSide, u32)],
) -> Result<[RunReport; 2], SessionError> {
    let sides = [base, candidate];
    let mut prepared = Vec::with_capacity(2);
    for (planned, _) in sides {
        check_takes_batches(planned)?;
        let (mut run_plan, description, cache) = prepare(planned, None)?;
        // Read before the passes, both sides' alike.
        if let Records::Unread(source) = run_plan.records {
            run_plan.records = Records::Eager(source.read_all()?);
        }
        run_plan.events = None;
        prepared.push((run_plan, description, cache));
    }
    let mut claims = Vec::with_capacity(2);
    for (planned, _) in sides {
        claims.push(claim_run_dir(planned)?);
    }
    let started_at = UtcTime::now().rfc3339();
    // The targets borrow their plans while they run; the outcomes do not.
    let [base_result, candidate_result] = {
        let mut opened = sides
            .iter()
            .zip(&prepared)
            .map(|((planned, _), (run_plan, _, _))| (planned.entry.open)(run_plan));
        match (opened.next(), opened.next()) {
            (Some(Ok(a)), Some(Ok(b))) => {
                let (a, b) = crate::runner::run_paired(a, b, &base.0.config.capture_range, blocks);
                [a, b]
            }
            (a, b) => [a, b].map(|side| match side {
                Some(Err(error)) => Err(error),
                _ => unreachable_outcome(),
            }),
        }
    };
    let finished_at = UtcTime::now().rfc3339();
    // A side refused (bad parameters, records that cannot be read) stops
    // both before anything is written.
    let base_result = refusal_of(base.0, base_result)?;
    let candidate_result = refusal_of(candidate.0, candidate_result)?;
    let mut reports = Vec::with_capacity(2);
    for (((planned, request), result), ((_, description, cache), (claim, recovered))) in sides
        .into_iter()
        .zip([base_result, candidate_result])
        .zip(prepared.into_iter().zip(claims))
    {
        let ran = Ran {
            result,
            started_at: started_at.clone(),
            finished_at: finished_at.clone(),
        };
        reports.push(written(
            (planned, request),
            description,
            cache,
            (claim, recovered),
            ran,
        ));
    }
    let candidate = reports.pop().expect("two reports");
    let base = reports.pop().expect("two reports");
    Ok([base, candidate])
}

/// The result of a side whose other side could not be built: it did not
/// run either.
fn unreachable_outcome() -> Result<RunOutcome, RunError> {
    Err(RunError {
        phase: Phase::Construct,
        record_id: None,
        batch: None,
        pass: Pass::Setup,
        source: anyhow::anyhow!("not run: the other side of the pair could not be built"),
        calls: Default::default(),
        completed_iterations: 0,
    })
}

/// Claims the run id (when the run writes a directory) and puts right what
/// an interrupted write of it left; then checks again, holding the claim,
/// that the directory is free (or `--force`).
fn claim_run_dir(planned: &Planned) -> Result<(Option<RunClaim>, Vec<String>), SessionError> {
    if !planned.config.write_manifest {
        return Ok((None, Vec::new()));
    }
    let claim = RunClaim::take(planned.write_dir())?;
    let recovered = crate::run_dir::recover(planned.write_dir(), &claim);
    // Again: a run may have finished between the first look and the claim.
    check_run_dir_free(planned)?;
    Ok((Some(claim), recovered))
}

/// Everything before the target starts: the run directory checked, the
/// seed set, the source built (with its image cache when the config asks
/// for one) and, for eager loading, checked to fit in memory. Returns the
/// runner's plan, the source's description and the cache.
#[allow(clippy::type_complexity)]
fn prepare(
    planned: &Planned,
    progress: Option<Box<dyn Fn(crate::runner::Progress)>>,
) -> Result<(RunPlan, BTreeMap<String, Value>, Option<Arc<ImageCache>>), SessionError> {
    let config = &planned.config;
    check_run_dir_free(planned)?;
    if config.write_manifest {
        check_writable(planned.write_dir())?;
    }
    crate::random::seed_run(config.seed);
    let cache = config.data_source.cache.enabled.then(|| {
        Arc::new(ImageCache::under(
            &planned.run_root,
            config.data_source.cache.max_bytes,
        ))
    });
    let source = data::build_with_cache(
        &config.data_source.name,
        &config.data_source.parameters,
        cache.clone(),
    )
    .and_then(|source| select_records(source, config))
    .map_err(|error| data_source_error(planned, error))?;
    let description = source.describe();
    // Read before the records take their share of it.
    let memory = match config.record_loading {
        RecordLoading::Eager => data::memory_budget(),
        RecordLoading::Lazy => None,
    };
    if source.is_empty() {
        return Err(DataError::NoRecords.into());
    }
    if let (RecordLoading::Eager, Some(reason)) =
        (config.record_loading, source.needs_lazy_loading())
    {
        let message = format!("eager, but the {} source {reason}", source.name());
        return Err(located(planned, "record_loading".to_owned(), message).into());
    }
    check_whole_batch(planned, source.len())?;
    let records = match config.record_loading {
        RecordLoading::Eager => {
            // Refused before decoding anything when it would not fit; the
            // runner reads the records, after checking again with the
            // first record's prepared input measured.
            if let Some(available) = &memory {
                data::check_within(data::eager_bytes(&*source)?, None, available)?;
            }
            Records::Unread(source)
        }
        RecordLoading::Lazy => Records::Lazy(source),
    };
    let mut run_plan = RunPlan::new(config.clone(), records);
    run_plan.events = gpu_events(config)?;
    run_plan.progress = progress;
    run_plan.memory = memory;
    Ok((run_plan, description, cache))
}

/// The device events of a run with GPU timing on: the CUDA backend of its
/// device (`tch` feature); none otherwise.
fn gpu_events(
    config: &Config,
) -> Result<Option<std::sync::Arc<dyn crate::timing::EventBackend>>, SessionError> {
    let on = config
        .gpu_timing
        .resolve(config.device)
        .map_err(|reason| SessionError::Usage(format!("gpu_timing: {reason}")))?;
    match (on, config.device) {
        #[cfg(feature = "tch")]
        (true, Device::Cuda(index)) => match crate::timing::gpu::CudaEvents::new(index) {
            Ok(events) => Ok(Some(std::sync::Arc::new(events))),
            // `auto` times on the GPU when it can, and says nothing when
            // it cannot; `on` refuses.
            Err(_) if config.gpu_timing == crate::config::GpuTiming::Auto => Ok(None),
            Err(error) => Err(SessionError::DeviceUnavailable {
                device: config.device,
                reason: format!("gpu_timing: on: {error:#}"),
            }),
        },
        _ => Ok(None),
    }
}

/// A launched run: what the target did, and when.
struct Ran {
    result: Result<RunOutcome, RunError>,
    started_at: String,
    finished_at: String,
}

/// Launches the target on `run_plan`; a failure that is a refusal of the
/// run ([`refusal_of`]) is an `Err`.
fn launch(planned: &Planned, run_plan: &RunPlan) -> Result<Ran, SessionError> {
    let started_at = UtcTime::now().rfc3339();
    let result = refusal_of(planned, (planned.entry.launch)(run_plan))?;
    let finished_at = UtcTime::now().rfc3339();
    Ok(Ran {
        result,
        started_at,
        finished_at,
    })
}

/// The manifest of a launched run, finished or failed (its `trace` is set
/// when the trace is written).
fn manifest_of(
    planned: &Planned,
    request: &RunRequest,
    description: BTreeMap<String, Value>,
    ran: &Ran,
) -> Manifest {
    let config = &planned.config;
    let git = match git_state(&request.workspace_root) {
        GitState::NotACheckout => git_state(Path::new(".")),
        state => state,
    };
    let (status, error, outcome_view) = status_of(&ran.result, config);
    Manifest {
        schema_version: crate::manifest::SCHEMA_VERSION,
        profile_name: config.profile_name.clone(),
        run_id: planned.run_id.clone(),
        status,
        error,
        interrupted_by: ran
            .result
            .as_ref()
            .ok()
            .and_then(|o| o.interrupted)
            .map(crate::manifest::signal_name),
        target: manifest_target(planned, request),
        data_source: ManifestDataSource {
            name: config.data_source.name.clone(),
            description,
        },
        record_ids: outcome_view.record_ids,
        record_batches: outcome_view.record_batches,
        workload: Workload {
            warmup: config.warmup,
            iterations: config.iterations,
            batch_size: config.batch_size,
            last_batch: config.last_batch,
            record_loading: config.record_loading,
            seed: config.seed,
            selection: config.selection.clone(),
            validate_output: config.validate_output,
            gpu_timing: config.gpu_timing,
            memory: config.memory,
        },
        capture_range: config.capture_range.clone(),
        cuda: config.cuda,
        device: config.device,
        git_commit: git.commit().map(str::to_owned),
        git_dirty: git.dirty(),
        git_note: git.note().map(str::to_owned),
        command_line: quoted(&request.command_line),
        config_path: planned.config_path.clone(),
        expected_trace_path: planned.run_dir.join("trace.nsys-rep"),
        output_summaries: outcome_view.output_summaries,
        started_at: ran.started_at.clone(),
        finished_at: ran.finished_at.clone(),
        profile_cli_version: request.program_version.clone(),
        build_profile: build_profile().to_owned(),
        host: HostInfo::current(),
        backend: BackendInfo::current(),
        calls: outcome_view.calls,
        completed_warmup: outcome_view.completed_warmup,
        completed_iterations: outcome_view.completed_iterations,
        validation: outcome_view.validation,
        timings: outcome_view.timings,
        samples: None,
        trace: None,
        sweep: request.sweep.clone(),
        pair: request.pair.clone(),
    }
}

/// How the run ended, why when it failed, and what it did.
fn status_of(
    result: &Result<RunOutcome, RunError>,
    config: &Config,
) -> (Status, Option<ManifestError>, OutcomeView) {
    match result {
        Ok(outcome) if outcome.interrupted.is_some() => {
            (Status::Interrupted, None, OutcomeView::from(outcome))
        }
        Ok(outcome) => (Status::Completed, None, OutcomeView::from(outcome)),
        Err(error) => (
            Status::Failed,
            Some(ManifestError {
                phase: error.phase,
                record_id: error.record_id.clone(),
                batch: error.batch,
                pass: error.pass,
                message: format!("{:#}", error.source),
            }),
            OutcomeView::failed(error.calls, error.completed_iterations, config),
        ),
    }
}

/// The target as the config names it and as the build defines it.
fn manifest_target(planned: &Planned, request: &RunRequest) -> ManifestTarget {
    let (config, entry) = (&planned.config, planned.entry);
    ManifestTarget {
        name: config.target.name.clone(),
        import_path: config.target.import_path.clone(),
        profile_prepare: config.target.profile_prepare,
        parameters: config.target.parameters.clone(),
        type_name: entry.type_name.to_owned(),
        source: format!(
            "{}:{}",
            entry.display_file(&request.workspace_root),
            entry.line
        ),
        module_path: entry.module_path.to_owned(),
    }
}

/// A command line as a shell would take it back.
fn quoted(words: &[String]) -> String {
    words
        .iter()
        .map(|w| crate::nsys::shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Writes the run directory when the config asks for it: the manifest, and
/// the trace of a run that finished. Returns where the manifest is (also
/// when the trace could not be written) and what could not be written.
fn write(
    planned: &Planned,
    manifest: &mut Manifest,
    result: &Result<RunOutcome, RunError>,
) -> (Option<PathBuf>, Option<WriteFailure>) {
    let config = &planned.config;
    if !config.write_manifest {
        return (None, None);
    }
    // The run directory is written whole before a signal ends the process.
    let _writing = crate::interrupt::Hold::new();
    let title = format!("profile-cli {} ({})", config.profile_name, planned.run_id);
    let trace = result.as_ref().ok().map(|outcome| TraceInput {
        capture: &outcome.capture,
        capture_range: &config.capture_range,
        title: &title,
    });
    match write_run_as(planned.write_dir(), &planned.run_dir, manifest, trace) {
        Ok(path) => (Some(path), None),
        Err(failure) => {
            let kept = failure
                .kept
                .iter()
                .find(|p| p.ends_with("manifest.yaml"))
                .cloned();
            (kept, Some(failure))
        }
    }
}

/// The records of `source` the workload's `records` and `shuffle` pick,
/// shuffled by the run's seed (0 without one).
fn select_records(
    source: Box<dyn data::DataSource>,
    config: &Config,
) -> Result<Box<dyn data::DataSource>, DataError> {
    data::select(source, &config.selection, config.seed.unwrap_or(0))
}

/// A data source's parameters are part of the config: their errors name
/// the file and the key.
fn data_source_error(planned: &Planned, error: DataError) -> SessionError {
    let (key, message) = match error {
        DataError::Parameter { key, message } => (format!("data_source.{key}"), message),
        DataError::Parameters { message, .. } => ("data_source".to_owned(), message),
        // `records` or `shuffle`, at the top or under `workload:`.
        DataError::Workload { key, message } => {
            let nested = format!("workload.{key}");
            let under_workload = planned.config_path.as_deref().is_some_and(|path| {
                crate::config::locate_key(path, &key).is_none()
                    && crate::config::locate_key(path, &nested).is_some()
            });
            (if under_workload { nested } else { key }, message)
        }
        other => return other.into(),
    };
    located(planned, key, message).into()
}

/// An error about `key` of the config, found after it was parsed: at the
/// key's line and column in the file where it can be found there (for
/// serde's refusal of an unknown field, which names the mapping, the
/// field's), else naming the key.
fn located(planned: &Planned, key: String, message: String) -> ConfigError {
    let field = message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split_once('`'))
        .map(|(field, _)| format!("{key}.{field}"));
    let position = planned.config_path.as_deref().and_then(|path| {
        field
            .as_deref()
            .and_then(|field| crate::config::locate_key(path, field))
            .or_else(|| crate::config::locate_key(path, &key))
    });
    match position {
        Some((line, column)) => ConfigError::Syntax {
            file: planned.config_path.clone(),
            line,
            column,
            message: format!("{key}: {message}"),
        },
        None => ConfigError::Invalid {
            file: planned.config_path.clone(),
            key,
            message,
        },
    }
}

/// A failure of the target that is a refusal of the run, so that nothing
/// is written and the exit is 2: `target.parameters` the target cannot use
/// (bad configuration), eager records that cannot be read, or eager inputs
/// that would not fit in memory.
fn refusal_of(
    planned: &Planned,
    result: Result<RunOutcome, RunError>,
) -> Result<Result<RunOutcome, RunError>, SessionError> {
    let error = match result {
        Err(error) => error,
        ok => return Ok(ok),
    };
    // The default `prepare_batch` of a target whose impl block a macro
    // wrote: refused as [`check_batches`] refuses it.
    if error.source.is::<BatchesUnsupported>() {
        return Err(batches_unsupported(planned));
    }
    // `target.parameters` read by the factory, or by `prepare` (the
    // settings of a generated snippet): a config error, at its place.
    if matches!(error.phase, Phase::Construct | Phase::Prepare) {
        if let Some(parameter) = error.source.downcast_ref::<ParameterError>() {
            let key = match &parameter.key {
                Some(key) => format!("target.parameters.{key}"),
                None => "target.parameters".to_owned(),
            };
            // Found after the config was parsed: its position is looked up
            // in the file, as the parser gives the other keys'.
            return Err(located(planned, key, parameter.message.clone()).into());
        }
    }
    // Records that cannot be read before the passes, and inputs too large:
    // refused as bad data, like a source that cannot be built.
    let refused = match error.phase {
        Phase::Load => error.pass == Pass::Setup,
        Phase::Prepare => matches!(
            error.source.downcast_ref::<DataError>(),
            Some(DataError::TooLargeForMemory { .. })
        ),
        _ => false,
    };
    if refused && error.source.is::<DataError>() {
        let data_error = error.source.downcast::<DataError>().expect("checked above");
        return Err(SessionError::Data(data_error));
    }
    Ok(Err(error))
}

/// Finds out, before any target code runs, whether the run directory can be
/// made: its nearest existing ancestor must be a directory that takes new
/// entries (tried with a probe file, removed at once).
fn check_writable(run_dir: &Path) -> Result<(), SessionError> {
    let not_writable = |reason: String| SessionError::OutputNotWritable {
        run_dir: run_dir.to_path_buf(),
        reason,
    };
    let mut ancestor = run_dir;
    while !ancestor.exists() {
        match ancestor.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => ancestor = parent,
            _ => {
                ancestor = Path::new(".");
                break;
            }
        }
    }
    if !ancestor.is_dir() {
        return Err(not_writable(format!(
            "{} is not a directory",
            ancestor.display()
        )));
    }
    let probe = ancestor.join(format!(".profile-cli-write-check-{}", std::process::id()));
    // Removed before a signal ends the process.
    let _probing = crate::interrupt::Hold::new();
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(error) => Err(not_writable(format!(
            "cannot create files in {}: {error}",
            ancestor.display()
        ))),
    }
}

/// The parts of an outcome the manifest records, for finished and failed
/// runs alike.
struct OutcomeView {
    record_ids: Vec<String>,
    record_batches: Vec<u32>,
    output_summaries: Vec<crate::runner::OutputSummary>,
    calls: CallCounts,
    completed_warmup: u32,
    completed_iterations: u32,
    validation: Validation,
    timings: Timings,
}

impl OutcomeView {
    fn from(outcome: &RunOutcome) -> Self {
        OutcomeView {
            record_ids: outcome.record_ids.clone(),
            record_batches: outcome.record_batches.clone(),
            output_summaries: outcome.output_summaries.clone(),
            calls: outcome.calls,
            completed_warmup: outcome.completed_warmup,
            completed_iterations: outcome.completed_iterations,
            validation: outcome.validation,
            timings: outcome.timings.clone(),
        }
    }

    fn failed(calls: CallCounts, completed_iterations: u32, config: &Config) -> Self {
        OutcomeView {
            record_ids: Vec::new(),
            record_batches: Vec::new(),
            output_summaries: Vec::new(),
            calls,
            completed_warmup: 0,
            completed_iterations,
            validation: Validation::Disabled,
            timings: Timings {
                host_timing_note: crate::runner::host_timing_note(config.device, &config.cuda),
                ..Timings::default()
            },
        }
    }
}

/// The profiling command that repeats `planned` with every setting spelled
/// out, as lines of words (program and target first, then one option per
/// line).
pub fn explicit_command(planned: &Planned, program: &Path) -> Vec<Vec<String>> {
    let config = &planned.config;
    let mut lines = vec![vec![
        program.to_string_lossy().into_owned(),
        "run".to_owned(),
        config.target.name.clone(),
    ]];
    // A value that starts with `-` (a capture range or run id can) is
    // joined to its option, so that it can never be read as one.
    let mut option = |name: &str, value: String| {
        lines.push(if value.starts_with('-') {
            vec![format!("{name}={value}")]
        } else {
            vec![name.to_owned(), value]
        })
    };
    if let Some(path) = &planned.config_path {
        option("--config", absolute(path).to_string_lossy().into_owned());
    }
    option("--data-source", config.data_source.name.clone());
    if config.data_source.name == "images" {
        if let Some(dir) = config
            .data_source
            .parameters
            .get("directory")
            .and_then(Value::as_str)
        {
            option(
                "--directory",
                absolute(Path::new(dir)).to_string_lossy().into_owned(),
            );
        }
    }
    option("--device", config.device.to_string());
    option("--warmup", config.warmup.to_string());
    option("--iterations", config.iterations.to_string());
    if config.batch_size != 1 {
        option("--batch-size", config.batch_size.to_string());
    }
    option("--capture-range", config.capture_range.clone());
    option("--record-loading", config.record_loading.to_string());
    if config.gpu_timing != crate::config::GpuTiming::Auto {
        option("--gpu-timing", config.gpu_timing.to_string());
    }
    if config.memory.is_on() {
        option("--memory", config.memory.to_string());
    }
    if let Some(seed) = config.seed {
        option("--seed", seed.to_string());
    }
    if let Some(dir) = &config.output_dir {
        option("--output-dir", absolute(dir).to_string_lossy().into_owned());
    }
    option("--run-id", planned.run_id.clone());
    if config.data_source.cache.enabled {
        lines.push(vec!["--cache".to_owned()]);
    } else if config.data_source.name == "images" && planned.config_path.is_some() {
        // The config may ask for the cache that `--no-cache` turned off.
        lines.push(vec!["--no-cache".to_owned()]);
    }
    if planned.force {
        lines.push(vec!["--force".to_owned()]);
    }
    lines
}

/// A profile of this build and where its runs go: what `compare`,
/// `report` and `baselines` need to find `PROFILE@RUN_ID`, written by the
/// profiling binary (`profiles`) for the command line that reads runs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct ProfileRuns {
    /// The profile name: from the config beside the target, else the target's name.
    pub profile: String,
    /// The target the profile runs.
    pub target: String,
    /// Its `runs/` directory, absolute.
    pub runs: PathBuf,
}

/// The profiles of this build: each registered target's profile name
/// (from the config beside its source, else the target's name) and its
/// `runs/` directory, by profile name.
pub fn profiles(workspace_root: &Path) -> Vec<ProfileRuns> {
    let mut found: Vec<ProfileRuns> = Vec::new();
    for entry in registry::targets() {
        let overrides = Overrides {
            target: Some(entry.name.to_owned()),
            ..Overrides::default()
        };
        let file = beside_target(entry, workspace_root, entry.name)
            .ok()
            .flatten();
        let config = match &file {
            Some(file) => file.resolve(&overrides).ok(),
            None => crate::config::defaults_for(entry.name, &overrides).ok(),
        };
        let Some(config) = config else { continue };
        let config_path = file.as_ref().and_then(|f| f.path.clone());
        let runs = absolute(&run_directory(
            &config,
            config_path.as_deref(),
            workspace_root,
        ));
        if !found.iter().any(|p| p.profile == config.profile_name) {
            found.push(ProfileRuns {
                profile: config.profile_name,
                target: entry.name.to_owned(),
                runs,
            });
        }
    }
    found.sort();
    found
}

/// `path` made absolute against the current directory (not resolving links).
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two runs started in the same second without `--run-id`: the second
    /// gets the stamp with `-2`, then `-3`, whether the first is written
    /// already or only claimed.
    #[test]
    fn a_default_run_id_taken_in_the_same_second_gets_a_suffix() {
        let runs = tempfile::tempdir().unwrap();
        let stamp = "20261201T120000Z";
        assert_eq!(default_run_id(runs.path(), stamp), stamp);
        std::fs::create_dir(runs.path().join(stamp)).unwrap();
        assert_eq!(default_run_id(runs.path(), stamp), format!("{stamp}-2"));
        std::fs::write(runs.path().join(format!(".{stamp}-2.claim")), "1").unwrap();
        assert_eq!(default_run_id(runs.path(), stamp), format!("{stamp}-3"));
    }
}
