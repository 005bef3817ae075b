//! A sweep: one ordinary run per point of a grid of config values, and
//! `sweep.yaml` with every point's medians, written after every point so
//! that a sweep stopped anywhere says which points completed and
//! `--resume` runs the rest.
//!
//! [`plan_sweep`] reads the grid (`--set`, the config's `sweep:` mapping,
//! or a sweep to resume) and plans every point before any runs;
//! [`run_points`] runs those not run yet, in grid order; [`finish`] says
//! how the sweep ended and writes `sweep.yaml` a last time.

pub mod document;
pub mod grid;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_yaml::Value;

use crate::driver::config::check_run_id;
use crate::driver::interrupt;
use crate::driver::manifest::{Manifest, Status, SweepPoint};
use crate::driver::provenance::UtcTime;
use crate::driver::run_samples::{RunSamples, Series, SAMPLES_FILE};
use crate::driver::session::{self, Planned, RunRequest};
use crate::stats::median_interval;
use document::{
    Estimate, PointMemory, PointResult, PointStatus, RangeAllocations, RangeEstimate,
    SweepDocument, SweepStatus, SWEEP_SCHEMA_VERSION,
};
use grid::Axis;

/// The confidence of the intervals `sweep.yaml` gives.
pub const CONFIDENCE: f64 = 0.95;

/// What a sweep asks for: the run every point starts from, and its grid.
#[derive(Debug, Clone, Default)]
pub struct SweepRequest {
    /// The run every point starts from (its target, config and output
    /// directory); each point adds its config edits and its run id.
    pub base: RunRequest,
    /// `--set KEY=V1,V2,...`, each an axis; none: the config's `sweep:`.
    pub set: Vec<String>,
    /// The axes side by side instead of their product.
    pub zip: bool,
    /// The id of a sweep to run what is left of.
    pub resume: Option<String>,
    /// The new sweep's id (default: the UTC time).
    pub sweep_id: Option<String>,
    /// A grid of more than [`grid::MAX_POINTS_WITHOUT_YES`] points is run.
    pub yes: bool,
}

/// A sweep whose every point is planned: its document (written when the
/// points start), its directory, and each point's request and plan.
#[derive(Debug)]
pub struct PlannedSweep {
    pub document: SweepDocument,
    pub dir: PathBuf,
    pub points: Vec<(RunRequest, Planned)>,
}

/// Plans the sweep `request` asks for: its grid read and checked against
/// the base config, and every point planned (with the checks a run makes
/// before it starts) before any runs; `Err` says why not, naming the
/// option, key or point. Nothing is written.
pub fn plan_sweep(request: &SweepRequest) -> Result<PlannedSweep, String> {
    let base = session::plan(&request.base).map_err(|error| error.to_string())?;
    let runs_dir = base
        .run_dir
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    // The grid: from sweep.yaml on --resume, else --set, else the config.
    let (document, dir) = match &request.resume {
        Some(id) => resumed(id, &base, &runs_dir)?,
        None => started(request, &base, &runs_dir)?,
    };
    let mut points = Vec::with_capacity(document.points.len());
    for point in &document.points {
        let edits = edits_of(&document.grid, point);
        let point_request = point_request(&request.base, &edits, &document, point);
        let planned = plan_point(&point_request, &dir, point).map_err(|message| {
            format!(
                "point {} ({}): {message}",
                point.index,
                describe_point(point)
            )
        })?;
        points.push((point_request, planned));
    }
    Ok(PlannedSweep {
        document,
        dir,
        points,
    })
}

/// How the points ended: the signal that stopped the sweep after a
/// point, whether a failed point stopped it (`fail_fast`), and which
/// points this process ran whose config wants a page.
#[derive(Debug)]
pub struct PointsRan {
    pub signal: Option<i32>,
    pub stopped_at_failure: bool,
    pub wants_page: Vec<bool>,
}

/// Runs the points of `sweep` that have not run, in grid order, writing
/// `sweep.yaml` before and after each, and calling `on_point` with the
/// document, the point's index and the seconds it took once it ended. A
/// first signal stops the sweep after the point in progress (a second one
/// ends the process); with `fail_fast`, a failed point stops it.
pub fn run_points(
    sweep: &mut PlannedSweep,
    fail_fast: bool,
    on_point: &mut dyn FnMut(&SweepDocument, usize, f64) -> std::io::Result<()>,
) -> std::io::Result<PointsRan> {
    interrupt::defer(true);
    // A first signal stops the sweep after its point, not the process.
    let hold = interrupt::Hold::new();
    let result = run_each_point(sweep, fail_fast, on_point);
    interrupt::defer(false);
    if matches!(
        result,
        Ok(PointsRan {
            signal: Some(_),
            ..
        })
    ) {
        interrupt::acknowledge();
    }
    drop(hold);
    result
}

/// [`run_points`] with the signals held off.
fn run_each_point(
    sweep: &mut PlannedSweep,
    fail_fast: bool,
    on_point: &mut dyn FnMut(&SweepDocument, usize, f64) -> std::io::Result<()>,
) -> std::io::Result<PointsRan> {
    let PlannedSweep {
        document,
        dir,
        points,
    } = sweep;
    let mut ran = PointsRan {
        signal: None,
        stopped_at_failure: false,
        wants_page: vec![false; document.points.len()],
    };
    for (index, (request, planned)) in points.iter().enumerate() {
        if !matches!(
            document.points[index].status,
            PointStatus::Pending | PointStatus::Running
        ) {
            continue;
        }
        if let Some(signal) = interrupt::received() {
            ran.signal = Some(signal);
            return Ok(ran);
        }
        document.points[index].status = PointStatus::Running;
        document.points[index].run_dir = Some(planned.run_dir.clone());
        document.write(dir)?;
        let started = Instant::now();
        ran.wants_page[index] = planned.config.write_report;
        let outcome = run_point(planned, request)
            .and_then(|()| summarize(&planned.run_dir, &mut document.points[index]));
        let point = &mut document.points[index];
        match outcome {
            Ok(()) => point.status = PointStatus::Completed,
            Err(message) => {
                point.status = PointStatus::Failed;
                point.error = Some(message);
            }
        }
        on_point(document, index, started.elapsed().as_secs_f64())?;
        document.write(dir)?;
        if document.points[index].status == PointStatus::Failed && fail_fast {
            ran.stopped_at_failure = true;
            return Ok(ran);
        }
    }
    ran.signal = interrupt::received();
    Ok(ran)
}

/// After the points: the sweep's status (interrupted by `signal`,
/// stopped with points left, or completed), and `sweep.yaml` written a
/// last time.
pub fn finish(
    document: &mut SweepDocument,
    dir: &Path,
    signal: Option<i32>,
) -> std::io::Result<()> {
    document.finished_at = Some(UtcTime::now().rfc3339());
    document.status = match signal {
        Some(_) => SweepStatus::Interrupted,
        None if document
            .points
            .iter()
            .any(|p| p.status != PointStatus::Completed && p.status != PointStatus::Failed) =>
        {
            SweepStatus::Stopped
        }
        None => SweepStatus::Completed,
    };
    document.write(dir).map(drop)
}

/// The sweep `--resume ID` continues: its document, checked against the
/// base the arguments give, and its directory.
fn resumed(id: &str, base: &Planned, runs_dir: &Path) -> Result<(SweepDocument, PathBuf), String> {
    if let Err(message) = check_run_id(id) {
        return Err(format!("--resume: {message}"));
    }
    let dir = runs_dir.join(id);
    if !dir.is_dir() {
        return Err(format!(
            "--resume {id}: no sweep at {} (a sweep's id is its directory under the profile's runs/)",
            dir.display()
        ));
    }
    let document = match SweepDocument::read(&dir) {
        Ok(document) => document,
        Err(message) => return Err(format!("--resume {id}: {message}")),
    };
    let base_config = base.config_path.as_deref().map(session::absolute);
    if document.config_path != base_config {
        let given = |path: &Option<PathBuf>| {
            path.as_ref().map_or_else(
                || "the built-in defaults".to_owned(),
                |p| format!("config {}", p.display()),
            )
        };
        return Err(format!(
            "--resume {id}: the sweep started from {}, not {}: resume it with the same config",
            given(&document.config_path),
            given(&base_config)
        ));
    }
    if document.target != base.config.target.name {
        return Err(format!(
            "--resume {id}: the sweep ran target `{}`, not `{}`",
            document.target, base.config.target.name
        ));
    }
    Ok((document, dir))
}

/// A new sweep's document, from `--set` or the config's grid, and its
/// directory, not yet written.
fn started(
    args: &SweepRequest,
    base: &Planned,
    runs_dir: &Path,
) -> Result<(SweepDocument, PathBuf), String> {
    let (axes, zip) = grid_of(args, base)?;
    let count = grid::point_count(&axes, zip);
    if count > grid::MAX_POINTS_WITHOUT_YES && !args.yes {
        return Err(format!(
            "the grid has {count} points, more than {}: give --yes to run them all",
            grid::MAX_POINTS_WITHOUT_YES
        ));
    }
    let id = args
        .sweep_id
        .clone()
        .unwrap_or_else(|| UtcTime::now().compact());
    if let Err(message) = check_run_id(&id) {
        return Err(format!("--sweep-id: {message}"));
    }
    let dir = runs_dir.join(&id);
    if dir.exists() {
        return Err(format!(
            "sweep id `{id}` is already used: {} exists; choose another --sweep-id, or run what is left of it with --resume {id}",
            dir.display()
        ));
    }
    let document = new_document(&id, base, &axes, zip, &args.base.command_line);
    Ok((document, dir))
}

/// The axes of a new sweep: `--set`, else the config's `sweep:` mapping,
/// each key and value checked against the base config.
fn grid_of(args: &SweepRequest, base: &Planned) -> Result<(Vec<Axis>, bool), String> {
    let (axes, zip) = if args.set.is_empty() {
        match &base.sections.sweep {
            Some(sweep) => {
                let (axes, zip) = grid::from_config(sweep).map_err(|message| match &base.config_path {
                    Some(path) => format!("{}: {message}", path.display()),
                    None => message,
                })?;
                (axes, zip || args.zip)
            }
            None => {
                return Err("nothing to sweep: give --set KEY=V1,V2,... (for example --set workload.batch_size=1,2,4), or a `sweep:` mapping in the config".to_owned())
            }
        }
    } else {
        let axes = args
            .set
            .iter()
            .map(|text| grid::parse_set(text))
            .collect::<Result<Vec<_>, _>>()?;
        (axes, args.zip)
    };
    grid::check_axes(&axes, zip)?;
    for axis in &axes {
        grid::check_key(&axis.key, &base.config.data_source.name)
            .map_err(|message| format!("--set {}: {message}", axis.key))?;
        let like = config_value(base, &axis.key);
        for value in &axis.values {
            if let (Some(like), true) = (&like, axis.key.starts_with("target.parameters.")) {
                if !grid::same_kind(value, like) {
                    return Err(format!(
                        "--set {}: value `{}` is not of the type of the config's `{}` ({})",
                        axis.key,
                        grid::show(value),
                        grid::show(like),
                        crate::driver::config::describe_value(like)
                    ));
                }
            }
        }
    }
    Ok((axes, zip))
}

/// The value the base config gives `key`, when it gives one.
fn config_value(base: &Planned, key: &str) -> Option<Value> {
    let parameter = key.strip_prefix("target.parameters.")?;
    let mut value = Value::Mapping(base.config.target.parameters.clone());
    for segment in parameter.split('.') {
        value = value.get(segment)?.clone();
    }
    Some(value)
}

/// A new sweep's document: every point pending.
fn new_document(
    id: &str,
    base: &Planned,
    axes: &[Axis],
    zip: bool,
    command_line: &[String],
) -> SweepDocument {
    let grid_points = grid::points(axes, zip);
    let count = grid_points.len();
    SweepDocument {
        schema_version: SWEEP_SCHEMA_VERSION,
        sweep_id: id.to_owned(),
        profile_name: base.config.profile_name.clone(),
        target: base.config.target.name.clone(),
        config_path: base.config_path.as_deref().map(session::absolute),
        command_line: command_line.join(" "),
        started_at: UtcTime::now().rfc3339(),
        finished_at: None,
        status: SweepStatus::Running,
        zip,
        confidence: CONFIDENCE,
        grid: axes.to_vec(),
        points: grid_points
            .iter()
            .enumerate()
            .map(|(index, point)| PointResult {
                index,
                point: grid::point_name(index, count, axes, point),
                values: grid::values_of(axes, point),
                status: PointStatus::Pending,
                run_dir: None,
                error: None,
                batch_size: 1,
                records_per_pass: None,
                pass: None,
                call: None,
                time_per_record_ns: None,
                records_per_second: None,
                ranges: Vec::new(),
                memory: None,
            })
            .collect(),
    }
}

/// The config edits of a point: each axis's key and the point's value.
fn edits_of(axes: &[Axis], point: &PointResult) -> Vec<(String, Value)> {
    axes.iter()
        .filter_map(|axis| {
            point
                .values
                .get(axis.key.as_str())
                .map(|value| (axis.key.clone(), value.clone()))
        })
        .collect()
}

/// A point's values as `key=value, ...`.
pub fn describe_point(point: &PointResult) -> String {
    point
        .values
        .iter()
        .map(|(k, v)| format!("{}={}", grid::show(k), grid::show(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The run request of `point`: the base's, with the point's config edits,
/// its run id and the sweep it belongs to.
fn point_request(
    base: &RunRequest,
    edits: &[(String, Value)],
    document: &SweepDocument,
    point: &PointResult,
) -> RunRequest {
    RunRequest {
        config_edits: edits.to_vec(),
        run_id: Some(point.point.clone()),
        sweep: Some(SweepPoint {
            id: document.sweep_id.clone(),
            index: point.index,
            point: point.point.clone(),
            values: point.values.clone(),
        }),
        ..base.clone()
    }
}

/// Plans a point into its directory under the sweep's, with the checks
/// that a run makes before it starts, and builds its data source to check
/// its parameters (without reading records).
fn plan_point(
    request: &RunRequest,
    sweep_dir: &Path,
    point: &PointResult,
) -> Result<Planned, String> {
    let mut planned = session::plan(request).map_err(|error| error.to_string())?;
    planned.run_dir = session::absolute(&sweep_dir.join(&point.point));
    // A point that started and was killed is run again from the start.
    planned.force = point.status == PointStatus::Running;
    crate::data::build(
        &planned.config.data_source.name,
        &planned.config.data_source.parameters,
    )
    .map_err(|error| format!("data_source: {error}"))?;
    Ok(planned)
}

/// Runs one point as `profile-cli run` would, without the terminal
/// summary; `Err` says why it failed.
fn run_point(planned: &Planned, request: &RunRequest) -> Result<(), String> {
    let ended = session::execute(planned, request).map_err(|e| e.to_string())?;
    if let Some(failure) = &ended.write_error {
        return Err(failure.to_string());
    }
    if let Err(error) = &ended.outcome {
        return Err(error.to_string());
    }
    if ended.manifest.status != Status::Completed {
        return Err(format!("the run ended {:?}", ended.manifest.status).to_lowercase());
    }
    Ok(())
}

/// A point's run read back: its manifest and samples.
struct PointRun {
    manifest: Manifest,
    samples: RunSamples,
}

/// Reads a point's run back.
fn read_point(run_dir: &Path) -> Result<PointRun, String> {
    let manifest =
        Manifest::read(&run_dir.join("manifest.yaml")).map_err(|error| error.to_string())?;
    let samples_path = run_dir.join(SAMPLES_FILE);
    let bytes =
        std::fs::read(&samples_path).map_err(|e| format!("{}: {e}", samples_path.display()))?;
    let samples =
        RunSamples::decode(&bytes).map_err(|e| format!("{}: {e}", samples_path.display()))?;
    Ok(PointRun { manifest, samples })
}

/// Fills a completed point's figures from its run directory.
fn summarize(run_dir: &Path, point: &mut PointResult) -> Result<(), String> {
    let run = read_point(run_dir)?;
    let manifest = &run.manifest;
    let batch_size = manifest.workload.batch_size;
    let passes = u64::from(manifest.completed_iterations).max(1);
    let records_per_pass = manifest
        .timings
        .per_record
        .as_ref()
        .map(|p| p.records_per_pass)
        .or(Some(manifest.record_ids.len() as u64))
        .filter(|&n| n > 0);
    point.batch_size = batch_size;
    point.records_per_pass = records_per_pass;
    point.pass = estimate(&run.samples.passes);
    point.call = estimate(&run.samples.calls);
    point.time_per_record_ns = match (&point.pass, records_per_pass) {
        (Some(pass), Some(records)) => Some(pass.median_ns as f64 / records as f64),
        _ => None,
    };
    point.records_per_second = point
        .time_per_record_ns
        .filter(|&ns| ns > 0.0)
        .map(|ns| 1e9 / ns);
    let mut ranges: Vec<RangeEstimate> = run
        .samples
        .ranges
        .iter()
        .filter_map(|range| {
            let inclusive = estimate(&range.inclusive)?;
            let calls_per_pass = range.inclusive.count as f64 / passes as f64;
            Some(RangeEstimate {
                name: range.name.clone(),
                inclusive,
                calls_per_pass,
                time_per_record_ns: records_per_pass
                    .map(|records| inclusive.median_ns as f64 * calls_per_pass / records as f64),
            })
        })
        .collect();
    ranges.sort_by(|a, b| {
        b.inclusive
            .median_ns
            .cmp(&a.inclusive.median_ns)
            .then_with(|| a.name.cmp(&b.name))
    });
    point.ranges = ranges;
    point.memory = run.samples.memory.as_ref().and_then(point_memory);
    point.error = None;
    Ok(())
}

/// The medians of a run's memory series.
fn point_memory(memory: &crate::driver::run_samples::MemorySeries) -> Option<PointMemory> {
    let median = |series: &Series| {
        let sorted = series.sorted_values();
        crate::stats::lower_median(&sorted)
    };
    let mut ranges: Vec<RangeAllocations> = memory
        .ranges
        .iter()
        .filter_map(|range| {
            Some(RangeAllocations {
                name: range.name.clone(),
                allocations_per_pass: median(&range.allocations)?,
            })
        })
        .collect();
    ranges.sort_by(|a, b| {
        b.allocations_per_pass
            .cmp(&a.allocations_per_pass)
            .then_with(|| a.name.cmp(&b.name))
    });
    Some(PointMemory {
        allocations_per_pass: median(&memory.allocations)?,
        allocated_bytes_per_pass: median(&memory.allocated_bytes)?,
        peak_bytes_per_pass: median(&memory.peak_bytes)?,
        exact: memory.allocations.min == memory.allocations.max,
        ranges,
    })
}

/// A series' median and its interval at [`CONFIDENCE`].
fn estimate(series: &Series) -> Option<Estimate> {
    let sorted = series.sorted_values();
    let (median_ns, low_ns, high_ns) = median_interval(&sorted, CONFIDENCE)?;
    Some(Estimate {
        median_ns,
        low_ns,
        high_ns,
        samples: series.count,
    })
}
