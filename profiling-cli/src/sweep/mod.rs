//! `profile-cli sweep`: one ordinary run per point of a grid of config
//! values, and `sweep.yaml` with every point's medians.

pub mod document;
pub mod grid;

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use serde_yaml::Value;

use profiling_core::driver::config::check_run_id;
use profiling_core::driver::interrupt;
use profiling_core::driver::manifest::{Manifest, Status, SweepPoint};
use profiling_core::driver::provenance::UtcTime;
use profiling_core::driver::run_samples::{RunSamples, Series, SAMPLES_FILE};
use profiling_core::driver::session::{self, Planned, RunRequest};
use profiling_core::stats::median_interval;

use crate::exit::{EXIT_OK, EXIT_TARGET_FAILED, EXIT_USAGE};
use crate::streams::Streams;
use crate::summary::format_ns;
use document::{
    Estimate, PointMemory, PointResult, PointStatus, RangeAllocations, RangeEstimate,
    SweepDocument, SweepStatus, SWEEP_SCHEMA_VERSION,
};
use grid::Axis;

/// The confidence of the intervals `sweep.yaml` gives.
pub const CONFIDENCE: f64 = 0.95;

/// Ranges the terminal table shows beside the pass and the call.
const TABLE_RANGES: usize = 4;

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The target to sweep (`profile-cli list` shows them); defaults to the config's target.name.
    pub name: Option<String>,
    /// The YAML config every point starts from (its `sweep:` mapping is the grid when no --set
    /// is given).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A config key and its values: workload.batch_size=1,2,4, data_source.image_shape=[240,320,3],[480,640,3],
    /// target.parameters.NAME=..., device=cpu,cuda. Repeat for more keys: the grid is their
    /// cartesian product.
    #[arg(long = "set", value_name = "KEY=V1,V2,...")]
    pub set: Vec<String>,
    /// Take the lists side by side (point i gets the i-th value of every key) instead of their
    /// product; the lists need one length.
    #[arg(long)]
    pub zip: bool,
    /// Run the points of sweep SWEEP_ID that have not run yet (after Ctrl-C, or a killed process).
    #[arg(long, value_name = "SWEEP_ID", conflicts_with_all = ["set", "zip", "sweep_id"])]
    pub resume: Option<String>,
    /// The sweep's directory name under the profile's runs/ (default: UTC time, YYYYMMDDTHHMMSSZ).
    #[arg(long, value_name = "ID")]
    pub sweep_id: Option<String>,
    /// Stop at the first point that fails (by default it is recorded as failed and the sweep goes on).
    #[arg(long)]
    pub fail_fast: bool,
    /// Run a grid of more than 1,000 points.
    #[arg(long)]
    pub yes: bool,
    /// Put the sweep in DIR/<profile_name>/runs/<sweep_id>/.
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Where the sweep goes when neither --output-dir nor the config says: set
    /// outside the workspace (the current directory).
    #[arg(skip)]
    pub default_output_dir: Option<PathBuf>,
    /// Print sweep.yaml's content as one JSON document on stdout; human output goes to stderr.
    #[arg(long)]
    pub json: bool,
    /// Write no report.html per point and no sweep.html.
    #[arg(long)]
    pub no_report: bool,
    /// Where a profiling binary leaves what is left to do after the sweep (the pages), for the
    /// `profile-cli` that ran it.
    #[arg(long = "handoff", alias = "outcome", value_name = "FILE", hide = true)]
    pub outcome: Option<PathBuf>,
}

/// `profile-cli sweep`.
pub fn sweep_command(
    args: SweepArgs,
    argv: &[OsString],
    root: &Path,
    pages: Option<SweepPages>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let mut streams = Streams {
        out,
        err,
        json: args.json,
    };
    let command_line: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let base_request = RunRequest {
        target: args.name.clone(),
        config_path: args.config.clone(),
        overrides: profiling_core::driver::config::Overrides {
            output_dir: args.output_dir.clone(),
            ..Default::default()
        },
        workspace_root: root.to_path_buf(),
        default_output_dir: args.default_output_dir.clone(),
        command_line: command_line.clone(),
        program_version: env!("CARGO_PKG_VERSION").to_owned(),
        ..RunRequest::default()
    };
    let base = match session::plan(&base_request) {
        Ok(planned) => planned,
        Err(error) => return streams.refuse(&error.to_string(), EXIT_USAGE),
    };
    let runs_dir = base
        .run_dir
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);

    // The grid: from sweep.yaml on --resume, else --set, else the config.
    let begun = match &args.resume {
        Some(id) => resumed(id, &base, &runs_dir),
        None => started(&args, &base, &runs_dir, &command_line),
    };
    let (document, sweep_dir) = match begun {
        Ok(begun) => begun,
        Err(message) => return streams.refuse(&message, EXIT_USAGE),
    };
    let axes = document.grid.clone();

    // Every point is planned (and checked) before any runs.
    let mut planned_points = Vec::with_capacity(document.points.len());
    for point in &document.points {
        let edits = edits_of(&axes, point);
        let request = point_request(&base_request, &edits, &document, point);
        match plan_point(&request, &sweep_dir, point) {
            Ok(planned) => planned_points.push((request, planned)),
            Err(message) => {
                return streams.refuse(
                    &format!(
                        "point {} ({}): {message}",
                        point.index,
                        describe_point(point)
                    ),
                    EXIT_USAGE,
                )
            }
        }
    }

    let mut document = document;
    if let Err(error) =
        std::fs::create_dir_all(&sweep_dir).and_then(|()| document.write(&sweep_dir))
    {
        writeln!(
            streams.err,
            "error: cannot write the sweep to {}: {error}",
            sweep_dir.display()
        )?;
        return Ok(EXIT_TARGET_FAILED);
    }
    let to_run = document
        .points
        .iter()
        .filter(|p| matches!(p.status, PointStatus::Pending | PointStatus::Running))
        .count();
    writeln!(
        streams.human(),
        "sweeping `{}` over {} ({} points{}): {}",
        document.target,
        document
            .grid
            .iter()
            .map(|a| format!(
                "{} = {}",
                a.key,
                a.values
                    .iter()
                    .map(grid::show)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .collect::<Vec<_>>()
            .join(if document.zip { " alongside " } else { " × " }),
        document.points.len(),
        if to_run == document.points.len() {
            String::new()
        } else {
            format!(", {to_run} left to run")
        },
        sweep_dir.display()
    )?;
    writeln!(
        streams.human(),
        "Ctrl-C stops the sweep after the current point (twice: at once); `--resume {}` runs the rest",
        document.sweep_id
    )?;

    crate::streams::warn_of_a_debug_build(streams.err)?;
    interrupt::defer(true);
    // A first signal stops the sweep after its point, not the process.
    let points_hold = interrupt::Hold::new();
    // Which points this process ran whose config wants a page.
    let mut point_pages = vec![false; document.points.len()];
    let result = run_points(
        &args,
        &mut document,
        planned_points,
        &sweep_dir,
        &mut streams,
        &mut point_pages,
    );
    interrupt::defer(false);
    let signal = result?;
    if signal.is_some() {
        interrupt::acknowledge();
    }
    drop(points_hold);

    finish(
        &args,
        document,
        sweep_dir,
        signal,
        &point_pages,
        pages,
        &mut streams,
    )
}

/// After the points: the sweep's status and table, what stopped it, and
/// what follows (the pages, the `--json` document).
fn finish(
    args: &SweepArgs,
    mut document: SweepDocument,
    sweep_dir: PathBuf,
    signal: Option<i32>,
    point_pages: &[bool],
    pages: Option<SweepPages>,
    streams: &mut Streams<'_>,
) -> anyhow::Result<u8> {
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
    let mut code = EXIT_OK;
    if let Err(error) = document.write(&sweep_dir) {
        writeln!(streams.err, "error: sweep.yaml not written: {error}")?;
        code = EXIT_TARGET_FAILED;
    }
    let written = code == EXIT_OK;
    writeln!(streams.human())?;
    write_table(&document, streams.human())?;
    writeln!(
        streams.human(),
        "sweep: {}",
        sweep_dir.join(document::SWEEP_FILE).display()
    )?;
    let failed = document
        .points
        .iter()
        .filter(|p| p.status == PointStatus::Failed)
        .count();
    match signal {
        Some(signal) => {
            let left = document
                .points
                .iter()
                .filter(|p| p.status == PointStatus::Pending)
                .count();
            writeln!(
                streams.err,
                "interrupted by {} after a point: {left} points left; `profile-cli sweep {} --resume {}` runs them",
                profiling_core::driver::manifest::signal_name(signal),
                document.target,
                document.sweep_id
            )?;
            code = interrupt::exit_code(signal);
        }
        None if failed > 0 => {
            writeln!(
                streams.err,
                "{failed} of {} points failed (their errors are in the table above and in sweep.yaml)",
                document.points.len()
            )?;
            if code == EXIT_OK {
                code = EXIT_TARGET_FAILED;
            }
        }
        None => {}
    }
    let json = match streams.json {
        true => {
            let mut json = serde_json::to_value(&document)?;
            json["sweep_path"] = serde_json::json!(sweep_dir.join(document::SWEEP_FILE));
            Some(json)
        }
        false => None,
    };
    let swept = crate::handoff::Swept {
        code,
        written,
        pages: !args.no_report,
        point_pages: document
            .points
            .iter()
            .zip(point_pages)
            .filter(|(point, wanted)| **wanted && point.status == PointStatus::Completed)
            .filter_map(|(point, _)| point.run_dir.clone())
            .collect(),
        sweep_dir,
        document: json,
    };
    if let Some(file) = &args.outcome {
        crate::handoff::write(file, &crate::handoff::Handoff::Sweep(swept))?;
        return Ok(code);
    }
    after_sweep(swept, pages, streams)
}

/// What writes a sweep's pages, handed to the command by the program's
/// root: `report::write_sweep_pages` where the build draws pages, none in a
/// profiling binary's (the `profile-cli` that ran it writes them). The
/// pages draw `sweep.yaml`, so `report` reads this module's document and
/// this module never calls `report`. Given the run directories of the
/// points whose page is wanted and the sweep's directory, it returns the
/// points whose page was not written, each with why, and `sweep.html`'s
/// path or why it was not written.
pub type SweepPages = fn(&[PathBuf], &Path) -> (Vec<(PathBuf, String)>, Result<PathBuf, String>);

/// The pages of a sweep that ran (each completed point's, then the
/// sweep's), when `pages` draws them, and its `--json` document.
pub(crate) fn after_sweep(
    swept: crate::handoff::Swept,
    pages: Option<SweepPages>,
    streams: &mut Streams<'_>,
) -> anyhow::Result<u8> {
    let mut code = swept.code;
    let mut page = None;
    if let (true, Some(write_pages)) = (swept.pages, pages) {
        let (failed, sweep_page) = write_pages(&swept.point_pages, &swept.sweep_dir);
        for (run_dir, message) in failed {
            writeln!(
                streams.err,
                "error: {}: report.html not written: {message}",
                run_dir.display()
            )?;
            if code == EXIT_OK {
                code = EXIT_TARGET_FAILED;
            }
        }
        match sweep_page {
            Ok(path) => page = Some(path),
            Err(error) if swept.written => {
                writeln!(streams.err, "error: sweep.html not written: {error}")?;
                code = EXIT_TARGET_FAILED;
            }
            Err(_) => {}
        }
    }
    if let Some(page) = &page {
        writeln!(streams.human(), "report: {}", page.display())?;
    }
    if let Some(mut json) = swept.document {
        json["report_path"] = serde_json::json!(page);
        writeln!(streams.out, "{json}")?;
    }
    Ok(code)
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
    args: &SweepArgs,
    base: &Planned,
    runs_dir: &Path,
    command_line: &[String],
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
    let document = new_document(&id, base, &axes, zip, command_line);
    Ok((document, dir))
}

/// The axes of a new sweep: `--set`, else the config's `sweep:` mapping,
/// each key and value checked against the base config.
fn grid_of(args: &SweepArgs, base: &Planned) -> Result<(Vec<Axis>, bool), String> {
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
                        profiling_core::driver::config::describe_value(like)
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

fn describe_point(point: &PointResult) -> String {
    point
        .values
        .iter()
        .map(|(k, v)| format!("{}={}", grid::show(k), grid::show(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

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
    profiling_core::data::build(
        &planned.config.data_source.name,
        &planned.config.data_source.parameters,
    )
    .map_err(|error| format!("data_source: {error}"))?;
    Ok(planned)
}

/// Runs the points that have not run, in grid order; returns the signal
/// that stopped the sweep, if one did.
fn run_points(
    args: &SweepArgs,
    document: &mut SweepDocument,
    planned_points: Vec<(RunRequest, Planned)>,
    sweep_dir: &Path,
    streams: &mut Streams<'_>,
    point_pages: &mut [bool],
) -> anyhow::Result<Option<i32>> {
    let total = document.points.len();
    let batched = document.batched();
    for (index, (request, planned)) in planned_points.into_iter().enumerate() {
        if !matches!(
            document.points[index].status,
            PointStatus::Pending | PointStatus::Running
        ) {
            continue;
        }
        if let Some(signal) = interrupt::received() {
            return Ok(Some(signal));
        }
        document.points[index].status = PointStatus::Running;
        document.points[index].run_dir = Some(planned.run_dir.clone());
        document.write(sweep_dir)?;
        let started = Instant::now();
        point_pages[index] = planned.config.write_report;
        let outcome = run_point(&planned, &request);
        let point = &mut document.points[index];
        match outcome {
            Ok(()) => match summarize(&planned.run_dir, point) {
                Ok(()) => point.status = PointStatus::Completed,
                Err(message) => {
                    point.status = PointStatus::Failed;
                    point.error = Some(message);
                }
            },
            Err(message) => {
                point.status = PointStatus::Failed;
                point.error = Some(message);
            }
        }
        let point = &document.points[index];
        let seconds = started.elapsed().as_secs_f64();
        let line = match (&point.status, &point.pass, &point.error) {
            (PointStatus::Completed, Some(pass), _) => format!(
                "completed in {seconds:.1} s: pass {}{}",
                format_ns(pass.median_ns),
                point
                    .time_per_record_ns
                    .filter(|_| batched)
                    .map(|ns| format!(", {} per record", format_ns(ns.round() as u64)))
                    .unwrap_or_default()
            ),
            (_, _, Some(error)) => format!("failed: {error}"),
            _ => "done".to_owned(),
        };
        writeln!(
            streams.human(),
            "[{}/{total}] {}: {line}",
            index + 1,
            describe_point(point)
        )?;
        document.write(sweep_dir)?;
        if point.status == PointStatus::Failed && args.fail_fast {
            writeln!(streams.err, "stopping at the failed point (--fail-fast)")?;
            return Ok(None);
        }
    }
    Ok(interrupt::received())
}

/// Runs one point as `profile-cli run` would, without the terminal
/// summary; `Err` says why it failed.
fn run_point(planned: &Planned, request: &RunRequest) -> Result<(), String> {
    let report = session::execute(planned, request).map_err(|e| e.to_string())?;
    if let Some(failure) = &report.write_error {
        return Err(failure.to_string());
    }
    if let Err(error) = &report.outcome {
        return Err(error.to_string());
    }
    if report.manifest.status != Status::Completed {
        return Err(format!("the run ended {:?}", report.manifest.status).to_lowercase());
    }
    Ok(())
}

/// A point's run read back: its manifest and samples.
struct PointRun {
    manifest: Manifest,
    samples: RunSamples,
}

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
fn point_memory(memory: &profiling_core::driver::run_samples::MemorySeries) -> Option<PointMemory> {
    let median = |series: &Series| {
        let sorted = series.sorted_values();
        profiling_core::stats::lower_median(&sorted)
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

/// A median and its interval, as the table shows it.
fn show_estimate(estimate: &Estimate) -> String {
    format!(
        "{} [{}, {}]",
        format_ns(estimate.median_ns),
        format_ns(estimate.low_ns),
        format_ns(estimate.high_ns)
    )
}

/// The terminal table: one row per point; the swept values, the pass, the
/// call, time per record where batching is in play, and the largest
/// ranges (medians with their intervals).
pub fn write_table(document: &SweepDocument, out: &mut dyn Write) -> std::io::Result<()> {
    let batched = document.batched();
    let mut largest: Vec<(String, u64)> = Vec::new();
    for point in document.completed() {
        for range in &point.ranges {
            match largest.iter_mut().find(|(name, _)| *name == range.name) {
                Some((_, max)) => *max = (*max).max(range.inclusive.median_ns),
                None => largest.push((range.name.clone(), range.inclusive.median_ns)),
            }
        }
    }
    largest.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    largest.truncate(TABLE_RANGES);

    let mut header: Vec<String> = document.grid.iter().map(|a| a.key.clone()).collect();
    header.push("status".to_owned());
    header.push("pass p50 [95% CI]".to_owned());
    header.push("call p50 [95% CI]".to_owned());
    if batched {
        header.push("per record".to_owned());
        header.push("records/s".to_owned());
    }
    let memory = document.points.iter().any(|p| p.memory.is_some());
    if memory {
        header.push("allocations/pass".to_owned());
        header.push("bytes/pass".to_owned());
    }
    header.extend(largest.iter().map(|(name, _)| name.clone()));
    let mut rows = vec![header];
    for point in &document.points {
        let mut row: Vec<String> = document
            .grid
            .iter()
            .map(|axis| {
                point
                    .values
                    .get(axis.key.as_str())
                    .map(grid::show)
                    .unwrap_or_default()
            })
            .collect();
        row.push(
            match point.status {
                PointStatus::Pending => "pending",
                PointStatus::Running => "killed",
                PointStatus::Completed => "completed",
                PointStatus::Failed => "failed",
            }
            .to_owned(),
        );
        row.push(point.pass.as_ref().map(show_estimate).unwrap_or_default());
        row.push(point.call.as_ref().map(show_estimate).unwrap_or_default());
        if batched {
            row.push(
                point
                    .time_per_record_ns
                    .map(|ns| format_ns(ns.round() as u64))
                    .unwrap_or_default(),
            );
            row.push(
                point
                    .records_per_second
                    .map(|r| format!("{r:.0}"))
                    .unwrap_or_default(),
            );
        }
        if memory {
            let figures = point.memory.as_ref();
            row.push(figures.map_or_else(String::new, |m| {
                let exact = if m.exact { "" } else { " (varies)" };
                format!("{}{exact}", m.allocations_per_pass)
            }));
            row.push(figures.map_or_else(String::new, |m| {
                profiling_core::memory::human_bytes(m.allocated_bytes_per_pass)
            }));
        }
        for (name, _) in &largest {
            row.push(
                point
                    .ranges
                    .iter()
                    .find(|r| &r.name == name)
                    .map(|r| show_estimate(&r.inclusive))
                    .unwrap_or_default(),
            );
        }
        rows.push(row);
    }
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        writeln!(out, "{}", line.join("  ").trim_end())?;
    }
    for point in document.points.iter().filter(|p| p.error.is_some()) {
        writeln!(
            out,
            "point {} ({}) failed: {}",
            point.index,
            describe_point(point),
            point.error.as_deref().unwrap_or_default()
        )?;
    }
    Ok(())
}
