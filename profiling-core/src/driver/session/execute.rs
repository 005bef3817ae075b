//! Executing a planned run: the run directory claimed, the records read,
//! the target launched, the manifest built and the run written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_yaml::Value;

use crate::data::{self, CacheStats, CacheSummary, DataError, SourceContext};
use crate::driver::config::{Config, RecordReading};
use crate::driver::manifest::{
    Manifest, ManifestDataSource, ManifestError, ManifestTarget, Status, Workload,
};
use crate::driver::provenance::{
    build_profile, git_state, BackendInfo, GitState, HostInfo, UtcTime,
};
use crate::driver::run_dir::{write_run_as, RunClaim, TraceInput, WriteFailure};
use crate::driver::runner::{
    CallCounts, Pass, Phase, Records, RunError, RunOutcome, RunPlan, Timings, Validation,
};
use crate::target::{BatchesUnsupported, ParameterError};

use super::plan::{
    batches_unsupported, check_run_dir_free, check_takes_batches, check_whole_batch,
    data_source_error, located, select_records,
};
use super::{Planned, RunRequest, SessionError};

/// The result of [`execute()`]: the manifest (written when the config asks
/// for it), and how the run ended.
#[derive(Debug)]
pub struct RunEnd {
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
pub fn execute(planned: &Planned, request: &RunRequest) -> Result<RunEnd, SessionError> {
    execute_with_progress(planned, request, None)
}

/// [`execute()`], telling `progress` how far the warmup and measured phases
/// are, between passes.
pub fn execute_with_progress(
    planned: &Planned,
    request: &RunRequest,
    progress: Option<Box<dyn Fn(crate::driver::runner::Progress)>>,
) -> Result<RunEnd, SessionError> {
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
/// measured something), its claim on the run directory let go: how it ended.
fn written(
    (planned, request): (&Planned, &RunRequest),
    description: BTreeMap<String, Value>,
    cache: Option<Arc<dyn CacheStats>>,
    (claim, recovered): (Option<RunClaim>, Vec<String>),
    ran: Ran,
) -> RunEnd {
    let mut manifest = manifest_of(planned, request, description, &ran);
    let (manifest_path, write_error) = write(planned, &mut manifest, &ran.result);
    drop(claim);
    RunEnd {
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
/// `blocks` inside one capture (`runner::run_paired`); each is
/// written as a run of its own. Neither records GPU time.
pub fn execute_pair(
    base: (&Planned, &RunRequest),
    candidate: (&Planned, &RunRequest),
    blocks: &[(crate::driver::runner::PairSide, u32)],
) -> Result<[RunEnd; 2], SessionError> {
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
                let (a, b) =
                    crate::driver::runner::run_paired(a, b, &base.0.config.capture_range, blocks);
                [a, b]
            }
            // A side that was built does not run when the other could
            // not be: its error says so, and names the other side.
            (a, b) => [(a, "the candidate"), (b, "the base")].map(|(side, other)| match side {
                Some(Err(error)) => Err(error),
                _ => Err(RunError::not_run(
                    other,
                    "could not be built",
                    Phase::Construct,
                )),
            }),
        }
    };
    let finished_at = UtcTime::now().rfc3339();
    // A side refused (bad parameters, records that cannot be read) stops
    // both before anything is written.
    let base_result = refusal_of(base.0, base_result)?;
    let candidate_result = refusal_of(candidate.0, candidate_result)?;
    let mut ends = Vec::with_capacity(2);
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
        ends.push(written(
            (planned, request),
            description,
            cache,
            (claim, recovered),
            ran,
        ));
    }
    let candidate = ends.pop().expect("two ends");
    let base = ends.pop().expect("two ends");
    Ok([base, candidate])
}

/// One side of a paired run whose other side runs in another process
/// (`profile-cli ab --against`): prepared, its records read, built, then
/// paced block by block by `pace` (`runner::run_alone`) and written as a
/// run of its own. No GPU time.
pub fn execute_stepped(
    planned: &Planned,
    request: &RunRequest,
    side: crate::driver::runner::PairSide,
    pace: &mut dyn FnMut(crate::driver::runner::Step) -> crate::driver::runner::Next,
) -> Result<RunEnd, SessionError> {
    check_takes_batches(planned)?;
    let (mut run_plan, description, cache) = prepare(planned, None)?;
    if let Records::Unread(source) = run_plan.records {
        run_plan.records = Records::Eager(source.read_all()?);
    }
    run_plan.events = None;
    let (claim, recovered) = claim_run_dir(planned)?;
    let started_at = UtcTime::now().rfc3339();
    let result = (planned.entry.open)(&run_plan).and_then(|run| {
        crate::driver::runner::run_alone(run, side, &planned.config.capture_range, pace)
    });
    let finished_at = UtcTime::now().rfc3339();
    let result = refusal_of(planned, result)?;
    let ran = Ran {
        result,
        started_at,
        finished_at,
    };
    Ok(written(
        (planned, request),
        description,
        cache,
        (claim, recovered),
        ran,
    ))
}

/// Claims the run id (when the run writes a directory) and puts right what
/// an interrupted write of it left; then checks again, holding the claim,
/// that the directory is free (or `--force`).
pub(super) fn claim_run_dir(
    planned: &Planned,
) -> Result<(Option<RunClaim>, Vec<String>), SessionError> {
    if !planned.config.write_manifest {
        return Ok((None, Vec::new()));
    }
    let claim = RunClaim::take(planned.write_dir())?;
    let recovered = crate::driver::run_dir::recover(planned.write_dir(), &claim);
    // Again: a run may have finished between the first look and the claim.
    check_run_dir_free(planned)?;
    Ok((Some(claim), recovered))
}

/// Everything before the target starts: the run directory checked, the
/// seed set, the source built (with its cache when the config asks
/// for one) and, for eager loading, checked to fit in memory. Returns the
/// runner's plan, the source's description and the cache.
#[allow(clippy::type_complexity)]
pub(super) fn prepare(
    planned: &Planned,
    progress: Option<Box<dyn Fn(crate::driver::runner::Progress)>>,
) -> Result<
    (
        RunPlan,
        BTreeMap<String, Value>,
        Option<Arc<dyn CacheStats>>,
    ),
    SessionError,
> {
    let config = &planned.config;
    check_run_dir_free(planned)?;
    if config.write_manifest {
        check_writable(planned.write_dir())?;
    }
    crate::random::seed_run(config.seed);
    let context = SourceContext {
        cache_root: Some(planned.run_root.clone()),
    };
    let source = data::build_in(
        &config.data_source.name,
        &config.data_source.parameters,
        &context,
    )
    .and_then(|source| select_records(source, config))
    .map_err(|error| data_source_error(planned, error))?;
    let cache = source.cache();
    let description = source.describe();
    // Read before the records take their share of it.
    let memory = match config.record_loading {
        RecordReading::Eager => data::memory_budget(),
        RecordReading::Lazy => None,
    };
    if source.is_empty() {
        return Err(DataError::NoRecords.into());
    }
    if let (RecordReading::Eager, Some(reason)) =
        (config.record_loading, source.needs_lazy_loading())
    {
        let message = format!("eager, but the {} source {reason}", source.name());
        return Err(located(planned, "record_loading".to_owned(), message).into());
    }
    check_whole_batch(planned, source.len())?;
    let records = match config.record_loading {
        RecordReading::Eager => {
            // Refused before decoding anything when it would not fit; the
            // runner reads the records, after checking again with the
            // first record's prepared input measured.
            if let Some(available) = &memory {
                data::check_within(data::eager_bytes(&*source)?, None, available)?;
            }
            Records::Unread(source)
        }
        RecordReading::Lazy => Records::Lazy(source),
    };
    let mut run_plan = RunPlan::new(config.clone(), records);
    run_plan.events = gpu_events(config)?;
    run_plan.progress = progress;
    run_plan.memory = memory;
    Ok((run_plan, description, cache))
}

/// The device events of a run with GPU timing on: those of its device's
/// backend ([`crate::backend::gpu_events`]); none otherwise.
fn gpu_events(
    config: &Config,
) -> Result<Option<std::sync::Arc<dyn crate::timing::EventBackend>>, SessionError> {
    let on = config
        .gpu_timing
        .resolve(config.device)
        .map_err(|reason| SessionError::Usage(format!("gpu_timing: {reason}")))?;
    let (true, crate::device::Device::Cuda(index)) = (on, config.device) else {
        return Ok(None);
    };
    match crate::backend::gpu_events(index) {
        None => Ok(None),
        Some(Ok(events)) => Ok(Some(events)),
        // `auto` times on the GPU when it can, and says nothing when it
        // cannot; `on` refuses.
        Some(Err(_)) if config.gpu_timing == crate::driver::config::GpuTiming::Auto => Ok(None),
        Some(Err(error)) => Err(SessionError::DeviceUnavailable {
            device: config.device,
            reason: format!("gpu_timing: on: {error:#}"),
        }),
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
    let sized = ran
        .result
        .as_ref()
        .ok()
        .and_then(|outcome| outcome.measurement_time.clone());
    Manifest {
        schema_version: crate::driver::manifest::SCHEMA_VERSION,
        profile_name: config.profile_name.clone(),
        run_id: planned.run_id.clone(),
        status,
        error,
        interrupted_by: ran
            .result
            .as_ref()
            .ok()
            .and_then(|o| o.interrupted)
            .map(crate::driver::manifest::signal_name),
        target: manifest_target(planned, request),
        data_source: ManifestDataSource {
            name: config.data_source.name.clone(),
            description,
        },
        record_ids: outcome_view.record_ids,
        record_batches: outcome_view.record_batches,
        workload: Workload {
            warmup: config.warmup,
            iterations: sized
                .as_ref()
                .map_or(config.iterations, |sized| sized.passes),
            measurement_time: sized,
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
        allocator: Some(crate::memory::allocator_description()),
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
pub(super) fn quoted(words: &[String]) -> String {
    words
        .iter()
        .map(|w| crate::driver::nsys::shell_quote(w))
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
    let _writing = crate::driver::interrupt::Hold::new();
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
    let _probing = crate::driver::interrupt::Hold::new();
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
    output_summaries: Vec<crate::driver::runner::OutputSummary>,
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
                host_timing_note: crate::driver::runner::host_timing_note(
                    config.device,
                    &config.cuda,
                ),
                ..Timings::default()
            },
        }
    }
}
