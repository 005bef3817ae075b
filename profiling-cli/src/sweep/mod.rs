//! `profile-cli sweep`: one ordinary run per point of a grid of config
//! values, and `sweep.yaml` with every point's medians. The runtime plans
//! and runs the points ([`profiling_core::driver::sweep`]); this command
//! reads its arguments, says each point as it ends, and prints the table.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use profiling_core::driver::interrupt;
use profiling_core::driver::session::RunRequest;
use profiling_core::driver::sweep::{self, describe_point, PlannedSweep, SweepRequest};

use crate::exit::{EXIT_OK, EXIT_TARGET_FAILED, EXIT_USAGE};
use crate::streams::Streams;
use crate::summary::format_ns;

use document::{Estimate, PointStatus, SweepDocument};
pub use profiling_core::driver::sweep::{document, grid, CONFIDENCE};

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
    pub handoff: Option<PathBuf>,
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
    let mut planned = match sweep::plan_sweep(&request_of(&args, argv, root)) {
        Ok(planned) => planned,
        Err(message) => return streams.refuse(&message, EXIT_USAGE),
    };
    let dir = planned.dir.clone();
    if let Err(error) = std::fs::create_dir_all(&dir).and_then(|()| planned.document.write(&dir)) {
        writeln!(
            streams.err,
            "error: cannot write the sweep to {}: {error}",
            dir.display()
        )?;
        return Ok(EXIT_TARGET_FAILED);
    }
    announce(&planned, &mut streams)?;
    crate::streams::warn_of_a_debug_build(streams.err)?;
    let human = streams.human();
    let ran = sweep::run_points(
        &mut planned,
        args.fail_fast,
        &mut |document, index, seconds| say_point(document, index, seconds, human),
    )?;
    if ran.stopped_at_failure {
        writeln!(streams.err, "stopping at the failed point (--fail-fast)")?;
    }
    // The history store the points go into, as a run's would.
    let store = planned
        .points
        .first()
        .map(|(_, point)| crate::handoff::store_of(point.config.output_dir.as_deref(), root));
    let PlannedSweep { document, .. } = planned;
    finish(&args, document, (dir, store), ran, pages, &mut streams)
}

/// The request `args` make.
fn request_of(args: &SweepArgs, argv: &[OsString], root: &Path) -> SweepRequest {
    SweepRequest {
        base: RunRequest {
            target: args.name.clone(),
            config_path: args.config.clone(),
            overrides: profiling_core::driver::config::Overrides {
                output_dir: args.output_dir.clone(),
                ..Default::default()
            },
            workspace_root: root.to_path_buf(),
            default_output_dir: args.default_output_dir.clone(),
            command_line: argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            program_version: env!("CARGO_PKG_VERSION").to_owned(),
            ..RunRequest::default()
        },
        set: args.set.clone(),
        zip: args.zip,
        resume: args.resume.clone(),
        sweep_id: args.sweep_id.clone(),
        yes: args.yes,
    }
}

/// What the sweep runs, where, and how to stop and resume it.
fn announce(planned: &PlannedSweep, streams: &mut Streams<'_>) -> std::io::Result<()> {
    let document = &planned.document;
    let to_run = document
        .points
        .iter()
        .filter(|p| matches!(p.status, PointStatus::Pending | PointStatus::Running))
        .count();
    let axes = document
        .grid
        .iter()
        .map(|a| {
            let values: Vec<String> = a.values.iter().map(grid::show).collect();
            format!("{} = {}", a.key, values.join(", "))
        })
        .collect::<Vec<_>>()
        .join(if document.zip { " alongside " } else { " × " });
    let left = if to_run == document.points.len() {
        String::new()
    } else {
        format!(", {to_run} left to run")
    };
    writeln!(
        streams.human(),
        "sweeping `{}` over {axes} ({} points{left}): {}",
        document.target,
        document.points.len(),
        planned.dir.display()
    )?;
    writeln!(
        streams.human(),
        "Ctrl-C stops the sweep after the current point (twice: at once); `--resume {}` runs the rest",
        document.sweep_id
    )
}

/// The line of a point that ended: how, in how long, and its pass.
fn say_point(
    document: &SweepDocument,
    index: usize,
    seconds: f64,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let point = &document.points[index];
    let line = match (&point.status, &point.pass, &point.error) {
        (PointStatus::Completed, Some(pass), _) => format!(
            "completed in {seconds:.1} s: pass {}{}",
            format_ns(pass.median_ns),
            point
                .time_per_record_ns
                .filter(|_| document.batched())
                .map(|ns| format!(", {} per record", format_ns(ns.round() as u64)))
                .unwrap_or_default()
        ),
        (_, _, Some(error)) => format!("failed: {error}"),
        _ => "done".to_owned(),
    };
    writeln!(
        out,
        "[{}/{}] {}: {line}",
        index + 1,
        document.points.len(),
        describe_point(point)
    )
}

/// After the points: the sweep's status and table, what stopped it, and
/// what follows (the pages, the `--json` document).
fn finish(
    args: &SweepArgs,
    mut document: SweepDocument,
    (sweep_dir, store): (PathBuf, Option<String>),
    ran: sweep::PointsRan,
    pages: Option<SweepPages>,
    streams: &mut Streams<'_>,
) -> anyhow::Result<u8> {
    let signal = ran.signal;
    let mut code = EXIT_OK;
    if let Err(error) = sweep::finish(&mut document, &sweep_dir, signal) {
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
            .zip(&ran.wants_page)
            .filter(|(point, wanted)| **wanted && point.status == PointStatus::Completed)
            .filter_map(|(point, _)| point.run_dir.clone())
            .collect(),
        completed: document
            .points
            .iter()
            .filter(|point| point.status == PointStatus::Completed)
            .filter_map(|point| point.run_dir.clone())
            .collect(),
        store,
        sweep_dir,
        document: json,
    };
    if let Some(file) = &args.handoff {
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
    // Each completed point into the history store.
    #[cfg(feature = "full")]
    if let Some(store) = &swept.store {
        for dir in &swept.completed {
            crate::recording::record_text(store, dir, "sweep-point", streams.err)?;
        }
    }
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
    let columns = Columns {
        batched: document.batched(),
        memory: document.points.iter().any(|p| p.memory.is_some()),
        ranges: largest_ranges(document),
    };
    let mut header: Vec<String> = document.grid.iter().map(|a| a.key.clone()).collect();
    header.push("status".to_owned());
    header.push("pass p50 [95% CI]".to_owned());
    header.push("call p50 [95% CI]".to_owned());
    if columns.batched {
        header.push("per record".to_owned());
        header.push("records/s".to_owned());
    }
    if columns.memory {
        header.push("allocations/pass".to_owned());
        header.push("bytes/pass".to_owned());
    }
    header.extend(columns.ranges.iter().cloned());
    let mut rows = vec![header];
    rows.extend(
        document
            .points
            .iter()
            .map(|point| columns.row(document, point)),
    );
    let widths: Vec<usize> = (0..rows[0].len())
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

/// The largest ranges of the completed points, by their largest median,
/// at most [`TABLE_RANGES`].
fn largest_ranges(document: &SweepDocument) -> Vec<String> {
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
    largest.into_iter().map(|(name, _)| name).collect()
}

/// Which columns the table has beside the swept values and the pass and
/// call.
struct Columns {
    batched: bool,
    memory: bool,
    ranges: Vec<String>,
}

impl Columns {
    /// A point's row.
    fn row(&self, document: &SweepDocument, point: &document::PointResult) -> Vec<String> {
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
        if self.batched {
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
        if self.memory {
            let figures = point.memory.as_ref();
            row.push(figures.map_or_else(String::new, |m| {
                let exact = if m.exact { "" } else { " (varies)" };
                format!("{}{exact}", m.allocations_per_pass)
            }));
            row.push(figures.map_or_else(String::new, |m| {
                profiling_core::memory::human_bytes(m.allocated_bytes_per_pass)
            }));
        }
        for name in &self.ranges {
            row.push(
                point
                    .ranges
                    .iter()
                    .find(|r| &r.name == name)
                    .map(|r| show_estimate(&r.inclusive))
                    .unwrap_or_default(),
            );
        }
        row
    }
}
