//! `profile-cli load`: a planned target driven under load, once or step
//! by step in a search for the peak rate, and written as a load run: the
//! run directory's `load.yaml` (the provenance a manifest records and a
//! `load` section with every step).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};
use serde_yaml::Value;

use super::execute::{claim_run_dir, prepare, quoted};
use super::{Planned, RunRequest, SessionError};
use crate::device::Device;
use crate::driver::load::drive::{LoadError, LoadPlan, Scenario};
use crate::driver::load::peak::{find_peak, PeakRecord};
pub use crate::driver::load::spec::{LoadRequestRecord, LoadSpec};
use crate::driver::load::summary::{summarize, LoadStep};
use crate::driver::provenance::{build_profile, git_state, GitState, HostInfo, UtcTime};
use crate::driver::runner::Records;

/// The file a load run writes in its run directory.
pub const LOAD_MANIFEST: &str = "load.yaml";

/// How a load run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadStatus {
    Completed,
    Interrupted,
    Failed,
}

/// The `load` section: every step measured, and the search's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadSection {
    pub request: LoadRequestRecord,
    /// The single-stream measurement a search starts from, when it did.
    #[serde(default)]
    pub calibration: Option<LoadStep>,
    pub steps: Vec<LoadStep>,
    #[serde(default)]
    pub peak: Option<PeakRecord>,
}

impl LoadSection {
    /// The step the tables and the page detail: the peak's after a
    /// search, else the only one.
    pub fn detailed_step(&self) -> Option<&LoadStep> {
        match &self.peak {
            Some(peak) => self
                .steps
                .iter()
                .find(|s| s.offered_qps.is_some() && s.offered_qps == peak.peak_qps),
            None => self.steps.first(),
        }
    }
}

/// A load run's record: the provenance a run's manifest holds, and the
/// `load` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadManifest {
    pub schema_version: u32,
    pub profile_name: String,
    pub run_id: String,
    pub status: LoadStatus,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub interrupted_by: Option<String>,
    pub target: String,
    pub target_parameters: serde_yaml::Mapping,
    pub target_source: String,
    pub data_source: String,
    pub data_description: BTreeMap<String, Value>,
    pub record_ids: Vec<String>,
    pub device: Device,
    pub capture_range: String,
    #[serde(default)]
    pub git_commit: Option<String>,
    #[serde(default)]
    pub git_dirty: Option<bool>,
    pub command_line: String,
    #[serde(default)]
    pub config_path: Option<PathBuf>,
    pub started_at: String,
    pub finished_at: String,
    pub profile_cli_version: String,
    pub build_profile: String,
    pub host: HostInfo,
    /// The backends of the build that ran it, as a run's manifest
    /// records them; absent from records written before it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<crate::driver::provenance::BackendInfo>,
    pub load: LoadSection,
}

/// What [`execute_load`] did: the record (written when the config asks),
/// where it is, and how the load ended.
#[derive(Debug)]
pub struct LoadEnd {
    pub manifest: LoadManifest,
    pub manifest_path: Option<PathBuf>,
    pub write_error: Option<String>,
    /// The page written beside the record, when one was asked for.
    pub page_path: Option<PathBuf>,
    /// Why the page asked for could not be written (the record was).
    pub page_error: Option<String>,
    /// The load's own failure (a worker that could not be built, a query
    /// that failed); what was measured before it is in the record.
    pub outcome: Result<(), LoadError>,
}

/// A page written beside a load's record: its file name and what renders
/// it from the record.
pub type LoadPage<'a> = (&'a str, &'a dyn Fn(&LoadManifest) -> String);

/// Drives `planned`'s target as `spec` asks: the source read whole once,
/// then one load (or, with `find_peak`, a single-stream calibration and a
/// load per step of the search), each with one target a worker built on
/// its own thread; `on_step` hears of each step as it ends. `stop` (a
/// signal) ends the step in progress and the search, keeping what was
/// measured. The record, and `page` when given, are written into a new
/// directory that then takes the run directory's place whole: an earlier
/// record replaced with `--force`, of whatever kind, leaves nothing behind,
/// and stays whole until the new one is in place.
pub fn execute_load(
    planned: &Planned,
    request: &RunRequest,
    spec: &LoadSpec,
    stop: &AtomicBool,
    on_step: &mut dyn FnMut(&LoadStep),
    page: Option<LoadPage<'_>>,
) -> Result<LoadEnd, SessionError> {
    let (mut run_plan, description, _cache) = prepare(planned, None)?;
    if let Records::Unread(source) = run_plan.records {
        run_plan.records = Records::Eager(source.read_all()?);
    }
    run_plan.events = None;
    let record_ids = match &run_plan.records {
        Records::Eager(records) => records.iter().map(|r| r.id.clone()).collect(),
        _ => Vec::new(),
    };
    let (claim, _recovered) = claim_run_dir(planned)?;
    let started_at = UtcTime::now().rfc3339();
    let measure = |plan: &LoadPlan| -> Result<LoadStep, LoadError> {
        let run = (planned.entry.load)(&run_plan, plan, stop)?;
        Ok(summarize(&run, plan.scenario, plan.workers, spec.bound_ns))
    };
    let mut steps = Vec::new();
    let mut calibration = None;
    let mut peak = None;
    let outcome = (|| -> Result<(), LoadError> {
        let Some(search) = spec.find_peak else {
            let step = measure(&spec.plan)?;
            on_step(&step);
            steps.push(step);
            return Ok(());
        };
        let bound_ns = spec.bound_ns.ok_or_else(|| {
            LoadError::Setup("--find-peak searches for the rate that holds --p99-bound".to_owned())
        })?;
        let arrival = match spec.plan.scenario {
            Scenario::Server { arrival, .. } => arrival,
            _ => crate::driver::load::arrivals::Arrival::Poisson,
        };
        let mut search = search;
        if search.start_qps <= 0.0 {
            // A single stream's median service time says what one worker
            // serves; the search starts at half what the workers could.
            let single = LoadPlan {
                scenario: Scenario::SingleStream,
                workers: 1,
                queries: spec.plan.queries.clamp(1, 200),
                min_duration_ns: 0,
                ..spec.plan.clone()
            };
            let step = measure(&single)?;
            on_step(&step);
            let service = step
                .service
                .as_ref()
                .and_then(|s| s.get("p50"))
                .map_or(1_000_000, |p| p.value_ns.max(1));
            search.start_qps = 0.5 * f64::from(spec.plan.workers) * 1e9 / service as f64;
            calibration = Some(step);
            if stop.load(std::sync::atomic::Ordering::SeqCst) {
                return Ok(());
            }
        }
        let min_duration_s = spec.plan.min_duration_ns as f64 / 1e9;
        let (record, measured) = find_peak(&search, bound_ns, |qps| {
            let plan = LoadPlan {
                scenario: Scenario::Server { qps, arrival },
                // At most what a step records: a fast target's high
                // rates over a long minimum duration would ask for more.
                queries: spec
                    .plan
                    .queries
                    .max((qps * min_duration_s).ceil() as usize)
                    .min(crate::driver::load::drive::MAX_QUERIES),
                ..spec.plan.clone()
            };
            let step = measure(&plan)?;
            on_step(&step);
            Ok::<_, LoadError>(if step.stopped {
                steps.push(step);
                None
            } else {
                Some(step)
            })
        })?;
        steps.extend(measured);
        steps.sort_by(|a, b| {
            a.offered_qps
                .unwrap_or(0.0)
                .total_cmp(&b.offered_qps.unwrap_or(0.0))
        });
        peak = Some(record);
        Ok(())
    })();
    let finished_at = UtcTime::now().rfc3339();
    let interrupted = steps.iter().any(|s| s.stopped)
        || calibration.as_ref().is_some_and(|s: &LoadStep| s.stopped);
    let status = match (&outcome, interrupted) {
        (Err(_), _) => LoadStatus::Failed,
        (Ok(()), true) => LoadStatus::Interrupted,
        (Ok(()), false) => LoadStatus::Completed,
    };
    let config = &planned.config;
    let git = match git_state(&request.workspace_root) {
        GitState::NotACheckout => git_state(Path::new(".")),
        state => state,
    };
    let manifest = LoadManifest {
        schema_version: 1,
        profile_name: config.profile_name.clone(),
        run_id: planned.run_id.clone(),
        status,
        error: outcome.as_ref().err().map(|e| e.to_string()),
        interrupted_by: interrupted.then(|| {
            crate::driver::interrupt::received()
                .map_or_else(|| "a stop".to_owned(), crate::driver::manifest::signal_name)
        }),
        target: planned.entry.name.to_owned(),
        target_parameters: config.target.parameters.clone(),
        target_source: format!(
            "{}:{}",
            planned.entry.display_file(&request.workspace_root),
            planned.entry.line
        ),
        data_source: config.data_source.name.clone(),
        data_description: description,
        record_ids,
        device: config.device,
        capture_range: config.capture_range.clone(),
        git_commit: git.commit().map(str::to_owned),
        git_dirty: git.dirty(),
        command_line: quoted(&request.command_line),
        config_path: planned.config_path.clone(),
        started_at,
        finished_at,
        profile_cli_version: request.program_version.clone(),
        build_profile: build_profile().to_owned(),
        host: HostInfo::current(),
        backend: Some(crate::driver::provenance::BackendInfo::current()),
        load: LoadSection {
            request: spec.request.clone(),
            calibration,
            steps,
            peak,
        },
    };
    let written = if config.write_manifest {
        write_record(planned.write_dir(), &manifest, page)
    } else {
        Written::default()
    };
    drop(claim);
    Ok(LoadEnd {
        manifest,
        manifest_path: written.record,
        write_error: written.error,
        page_path: written.page,
        page_error: written.page_error,
        outcome,
    })
}

/// What [`write_record`] wrote, and what it could not.
#[derive(Default)]
struct Written {
    record: Option<PathBuf>,
    error: Option<String>,
    page: Option<PathBuf>,
    page_error: Option<String>,
}

/// Writes `load.yaml` (and the page) into a staging directory beside
/// `dir`, then puts it in `dir`'s place whole. A record that cannot be
/// written leaves `dir` as it was (an earlier one kept, none made) and no
/// staging behind; a page that cannot be written costs the page alone.
fn write_record(dir: &Path, manifest: &LoadManifest, page: Option<LoadPage<'_>>) -> Written {
    use crate::driver::{files, run_dir};
    let path = dir.join(LOAD_MANIFEST);
    let earlier = if dir.exists() {
        format!("; the earlier record in {} is kept", dir.display())
    } else {
        String::new()
    };
    let failed = |what: &Path, error: &dyn std::fmt::Display| Written {
        error: Some(format!("{}: {error}{earlier}", what.display())),
        ..Written::default()
    };
    let text = match serde_yaml::to_string(manifest) {
        Ok(text) => text,
        Err(error) => return failed(&path, &error),
    };
    let parent = match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if let Err(error) = std::fs::create_dir_all(parent) {
        return failed(parent, &error);
    }
    let staging = run_dir::staging_dir(dir);
    let _ = std::fs::remove_dir_all(&staging);
    if let Err(error) = std::fs::create_dir(&staging) {
        return failed(&path, &error);
    }
    if let Err(error) = files::write_atomically(&staging.join(LOAD_MANIFEST), text.as_bytes()) {
        let _ = std::fs::remove_dir_all(&staging);
        return failed(&path, &error);
    }
    let mut written = Written::default();
    if let Some((name, render)) = page {
        if let Err(error) =
            files::write_atomically(&staging.join(name), render(manifest).as_bytes())
        {
            written.page_error = Some(format!("{}: {error}", dir.join(name).display()));
        } else {
            written.page = Some(dir.join(name));
        }
    }
    if let Err(error) = run_dir::move_into_place(&staging, dir) {
        let _ = std::fs::remove_dir_all(&staging);
        return failed(dir, &error);
    }
    written.record = Some(path);
    written
}

/// Reads a load run's record.
pub fn read_load_manifest(path: &Path) -> Result<LoadManifest, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}
