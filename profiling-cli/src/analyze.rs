//! `profile-cli analyze`: what Nsight Systems recorded per NVTX range of a
//! run (GPU time, OS runtime calls, CPU samples), as a table, `--json`, and
//! `analysis.yaml` beside the run's manifest; and `run --nsys`, which runs
//! the capture and then this.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::Args;
use profiling_analyze::{Analysis, RangeAnalysis, Request};
use profiling_core::driver::manifest::Manifest;
use profiling_core::driver::nsys::{report_dir, REPORT_STEM};

use crate::exit::{EXIT_OK, EXIT_TARGET_FAILED, EXIT_USAGE};
use crate::summary::format_ns;

mod nsys;
mod progress;

pub use nsys::run_under_nsys;
use progress::without_progress;

/// The file beside the manifest.
pub const ANALYSIS_FILE: &str = "analysis.yaml";

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// A run directory (its trace.sqlite, else its trace.nsys-rep), an .nsys-rep report, or its
    /// .sqlite export.
    path: PathBuf,
    /// The capture range (default: the run manifest's capture_range, else profile-target).
    #[arg(long, value_name = "NAME")]
    capture_range: Option<String>,
    /// Kernels listed per range, by GPU time.
    #[arg(long, value_name = "N", default_value_t = 3)]
    kernels: usize,
    /// Print one JSON document instead of the table.
    #[arg(long)]
    json: bool,
    /// Analyze a report whose passes do not match the run's manifest.
    #[arg(long)]
    force: bool,
    /// The global `-q`: nothing on stderr but errors (the export's progress, the files
    /// written).
    #[arg(skip)]
    quiet: bool,
}

/// What `analyze` works on: the export, and the run it belongs to.
struct Located {
    export: PathBuf,
    /// The run directory, when the report sits in one (beside a manifest).
    run_dir: Option<PathBuf>,
}

/// The `nsys export` command that makes `export` from `report`.
fn export_command(report: &Path, export: &Path) -> Vec<String> {
    vec![
        "nsys".to_owned(),
        "export".to_owned(),
        "--type".to_owned(),
        "sqlite".to_owned(),
        "--output".to_owned(),
        // Absolute: a path that starts with `-` stays a path.
        std::path::absolute(export)
            .unwrap_or_else(|_| export.to_path_buf())
            .display()
            .to_string(),
        report
            .canonicalize()
            .unwrap_or_else(|_| report.to_path_buf())
            .display()
            .to_string(),
    ]
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// Moves the report nsys wrote beside the run directory `run_dir`
/// (`.<run id>.nsys/trace.nsys-rep`, where the nsys command puts it) into
/// it, and removes what else nsys left there; says so unless `quiet`.
/// Nothing happens when the run directory has its own report already or
/// there is none to move.
fn adopt_report(run_dir: &Path, quiet: bool, err: &mut dyn Write) -> Result<(), String> {
    let report = run_dir.join(format!("{REPORT_STEM}.nsys-rep"));
    let staged_dir = report_dir(run_dir);
    let staged = staged_dir.join(format!("{REPORT_STEM}.nsys-rep"));
    if report.exists() || !staged.is_file() {
        return Ok(());
    }
    std::fs::rename(&staged, &report).map_err(|error| {
        format!(
            "cannot move Nsight's report {} into the run directory: {error}",
            staged.display()
        )
    })?;
    let _ = std::fs::remove_dir_all(&staged_dir);
    if !quiet {
        let _ = writeln!(err, "nsys report: {}", report.display());
    }
    Ok(())
}

/// The export to read for `path`, made from the report with `nsys export`
/// when there is none yet and nsys is on PATH.
fn locate(path: &Path, quiet: bool, err: &mut dyn Write) -> Result<Located, String> {
    let (report, export, run_dir) = if path.is_dir() {
        let export = path.join("trace.sqlite");
        let run_dir = path
            .join("manifest.yaml")
            .is_file()
            .then(|| path.to_path_buf());
        if run_dir.is_some() {
            adopt_report(path, quiet, err)?;
        }
        if export.is_file() {
            return Ok(Located { export, run_dir });
        }
        let report = path.join("trace.nsys-rep");
        if !report.is_file() {
            return Err(format!(
                "{}: neither trace.sqlite nor trace.nsys-rep is there: capture the run with the command `profile-cli run ... --print-nsys-command` prints (or run --nsys)",
                path.display()
            ));
        }
        (report, export, run_dir)
    } else if path.is_file() {
        let run_dir = path
            .parent()
            .filter(|dir| dir.join("manifest.yaml").is_file())
            .map(Path::to_path_buf);
        if path
            .extension()
            .is_some_and(|e| e == "nsys-rep" || e == "qdrep")
        {
            let export = path.with_extension("sqlite");
            if export.is_file() {
                return Ok(Located { export, run_dir });
            }
            (path.to_path_buf(), export, run_dir)
        } else {
            return Ok(Located {
                export: path.to_path_buf(),
                run_dir,
            });
        }
    } else {
        return Err(format!("{}: no such file or directory", path.display()));
    };
    let command = export_command(&report, &export);
    let printed = profiling_core::driver::nsys::render_command(std::slice::from_ref(&command));
    if !on_path("nsys") {
        return Err(format!(
            "{} needs exporting to SQLite, and nsys is not on PATH (scripts/setup-nsys installs it): run this where Nsight Systems is, then analyze again:\n  {printed}",
            report.display()
        ));
    }
    // nsys draws a progress bar: its output is kept, and shown only when it fails.
    let output = Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start nsys: {e}"))?;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if !output.status.success() || !export.is_file() {
        let said = without_progress(&said);
        return Err(format!(
            "`{printed}` failed ({}): {} was not written{}{}",
            output.status,
            export.display(),
            if said.trim().is_empty() {
                ""
            } else {
                "; nsys said:\n"
            },
            said.trim_end()
        ));
    }
    if !quiet {
        let events = exported_events(&said).map_or_else(String::new, |n| format!(" ({n} events)"));
        let _ = writeln!(err, "exported: {}{events}", export.display());
    }
    Ok(Located { export, run_dir })
}

/// The event count of `nsys export`'s progress line (`Exporting 1956
/// events: [==...]`), when it printed one.
fn exported_events(said: &str) -> Option<u64> {
    let rest = &said[said.find("Exporting ")? + "Exporting ".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn read_manifest(run_dir: Option<&Path>) -> Option<Manifest> {
    Manifest::read(&run_dir?.join("manifest.yaml")).ok()
}

/// `profile-cli analyze`.
pub fn analyze_command(
    args: AnalyzeArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let quiet = args.quiet || crate::streams::quiet();
    let located = match locate(&args.path, quiet || args.json, err) {
        Ok(located) => located,
        Err(message) => {
            writeln!(err, "error: {message}")?;
            return Ok(EXIT_USAGE);
        }
    };
    let manifest = read_manifest(located.run_dir.as_deref());
    let capture_range = args
        .capture_range
        .clone()
        .or_else(|| manifest.as_ref().map(|m| m.capture_range.clone()))
        .unwrap_or_else(|| "profile-target".to_owned());
    let request = Request {
        capture_range,
        kernels: args.kernels,
        time_limit: profiling_analyze::DEFAULT_TIME_LIMIT,
    };
    let analysis = match profiling_analyze::analyze(&located.export, &request) {
        Ok(analysis) => analysis,
        Err(error) => {
            writeln!(err, "error: {error}")?;
            return Ok(EXIT_USAGE);
        }
    };
    // A report of another run: its passes do not match the manifest's.
    if let Some(expected) = manifest.as_ref().map(|m| u64::from(m.completed_iterations)) {
        let found = analysis.passes.len() as u64;
        if found != expected && !args.force {
            writeln!(
                err,
                "error: {} holds {found} passes and the run's manifest {expected}: a report of another run or process? give --force to analyze it anyway",
                located.export.display()
            )?;
            return Ok(EXIT_USAGE);
        }
    }
    let document = document(&analysis, manifest.as_ref());
    // Keys in order, as the file and the JSON have always had them.
    let sorted = serde_json::to_value(&document)?;
    if let Some(run_dir) = &located.run_dir {
        let path = run_dir.join(ANALYSIS_FILE);
        let written = profiling_core::driver::files::write_atomically_with(&path, |file| {
            serde_yaml::to_writer(file, &sorted).map_err(std::io::Error::other)
        });
        if let Err(error) = written {
            writeln!(err, "error: cannot write {}: {error}", path.display())?;
            return Ok(EXIT_TARGET_FAILED);
        }
        if !args.json && !quiet {
            writeln!(out, "analysis: {}", path.display())?;
        }
        // The GPU time per range into the store the run went into.
        crate::recording::record_analysis(run_dir, err)?;
        // The run's page shows it.
        let page = run_dir.join(crate::report::REPORT_FILE);
        if page.is_file() {
            if let Ok((manifest, samples)) = crate::report::read_run(run_dir) {
                let html = crate::report::run_page(&crate::report::RunPage {
                    dir: run_dir,
                    manifest: &manifest,
                    samples: samples.as_ref(),
                    comparison: None,
                });
                if crate::report::write_page(&page, &html).is_ok() && !args.json && !quiet {
                    writeln!(out, "report: {}", page.display())?;
                }
            }
        }
    }
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&sorted)?)?;
    } else {
        write_table(&document, out)?;
    }
    Ok(EXIT_OK)
}

/// The analysis with, per range, the host median the run's own manifest
/// has for the same path.
fn document(analysis: &Analysis, manifest: Option<&Manifest>) -> Analysis {
    let mut document = analysis.clone();
    // By path, looked up once per range: not a scan of the tree per range.
    let medians: std::collections::HashMap<&str, u64> = manifest
        .map(|m| {
            m.timings
                .range_tree
                .iter()
                .map(|r| (r.path.as_str(), r.inclusive.p50_ns))
                .collect()
        })
        .unwrap_or_default();
    for range in &mut document.ranges {
        range.manifest_host_p50_ns = medians.get(range.path.as_str()).copied();
    }
    document
}

/// `text` from an export (a range's or a kernel's name) as a terminal may
/// show it: control characters (an escape sequence that would recolour or
/// clear the terminal, a carriage return that would overwrite the line)
/// written as Rust escapes.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A column of the table: what one range shows under it, given the number
/// of passes.
type Cell = fn(&RangeAnalysis, u64) -> String;

/// The analysis as a terminal shows it: the capture's line, one row per
/// range, the ranges' details, then the notes.
fn write_table(analysis: &Analysis, out: &mut dyn Write) -> std::io::Result<()> {
    let passes = analysis.passes.len().max(1) as u64;
    write_capture_line(analysis, out)?;
    let columns = columns(analysis);
    let header: Vec<&str> = std::iter::once("range path")
        .chain(columns.iter().map(|(name, _)| *name))
        .collect();
    let rows: Vec<Vec<String>> = analysis
        .ranges
        .iter()
        .map(|range| {
            std::iter::once(format!(
                "{}{}",
                "  ".repeat(range.depth as usize),
                printable(&range.path)
            ))
            .chain(columns.iter().map(|(_, cell)| cell(range, passes)))
            .collect()
        })
        .collect();
    write_aligned(&header, &rows, out)?;
    write_range_details(analysis, passes, out)?;
    if analysis.gpu_activities_outside_ranges > 0 {
        writeln!(
            out,
            "note: {} of {} GPU activities were launched outside every range of the capture",
            analysis.gpu_activities_outside_ranges, analysis.gpu_activities
        )?;
    }
    for note in &analysis.notes {
        writeln!(out, "note: {}", printable(note))?;
    }
    Ok(())
}

/// The table's first line: the capture range, its process, the Nsight
/// Systems version, the capture's length and passes, and the GPU's
/// occupancy where CUDA was traced.
fn write_capture_line(analysis: &Analysis, out: &mut dyn Write) -> std::io::Result<()> {
    let version = analysis
        .nsys_version
        .as_deref()
        .map_or_else(String::new, |v| format!(" (Nsight Systems {v})"));
    let gpu = if analysis.cuda_traced {
        format!(
            "; GPU busy {:.1} % of a pass on average, longest idle {}",
            analysis.mean_gpu_busy_fraction * 100.0,
            format_ns(analysis.largest_gpu_idle_ns)
        )
    } else {
        String::new()
    };
    writeln!(
        out,
        "capture `{}` of process {}{version}: {}, {} passes{gpu}",
        printable(&analysis.capture_range),
        analysis.process_id,
        format_ns(analysis.capture_ns),
        analysis.passes.len(),
    )
}

/// The columns after the range path: what every capture has, then the
/// GPU's where CUDA was traced, then the OS runtime's where it was, and
/// last the top kernel (or, without CUDA, the top OS call).
fn columns(analysis: &Analysis) -> Vec<(&'static str, Cell)> {
    let mut columns: Vec<(&str, Cell)> = vec![
        ("calls", |r, _| r.count.to_string()),
        ("host p50", |r, _| format_ns(r.host.p50_ns)),
        ("manifest p50", |r, _| {
            r.manifest_host_p50_ns.map_or("-".to_owned(), format_ns)
        }),
    ];
    if analysis.cuda_traced {
        columns.extend([
            (
                "GPU busy p50",
                (|r: &RangeAnalysis, _| r.gpu_busy.map_or("-".to_owned(), |s| format_ns(s.p50_ns)))
                    as Cell,
            ),
            ("GPU per pass", |r, passes| format_ns(r.gpu_sum_ns / passes)),
            ("launch→done p50", |r, _| {
                r.launch_to_completion
                    .map_or("-".to_owned(), |s| format_ns(s.p50_ns))
            }),
        ]);
    }
    if analysis.os_runtime_traced {
        columns.push(("OS calls per pass", |r, passes| {
            format_ns(r.os_runtime_ns / passes)
        }));
    }
    columns.push(if analysis.cuda_traced {
        ("top kernel", |r, _| {
            r.kernels.first().map_or("-".to_owned(), |k| {
                format!("{} ×{}", printable(&k.name), k.count)
            })
        })
    } else {
        ("top OS call", |r, _| {
            r.os_calls.first().map_or("-".to_owned(), |c| {
                format!("{} ×{}", printable(&c.name), c.count)
            })
        })
    });
    columns
}

/// `header` and `rows` as aligned lines: the first column to the left,
/// the middle ones to the right, the last as it is (a name of any length).
fn write_aligned(
    header: &[&str],
    rows: &[Vec<String>],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([header[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[&str]| {
        let mut text = format!("{:<w$}", cells[0], w = widths[0]);
        for (column, cell) in cells.iter().enumerate().take(cells.len() - 1).skip(1) {
            text.push_str(&format!("  {cell:>w$}", w = widths[column]));
        }
        text.push_str("  ");
        text.push_str(cells[cells.len() - 1]);
        text
    };
    writeln!(out, "{}", line(header))?;
    for row in rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        writeln!(out, "{}", line(&cells))?;
    }
    Ok(())
}

/// One line per range for what the table has no room for: its kernels
/// where it has more than one, its OS calls, and its sampled functions.
fn write_range_details(
    analysis: &Analysis,
    passes: u64,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    for range in analysis.ranges.iter().filter(|r| r.kernels.len() > 1) {
        let kernels: Vec<String> = range
            .kernels
            .iter()
            .map(|k| {
                format!(
                    "{} ×{} ({} total, median {})",
                    printable(&k.name),
                    k.count,
                    format_ns(k.total_ns),
                    format_ns(k.median_ns)
                )
            })
            .collect();
        writeln!(
            out,
            "kernels of {}: {}",
            printable(&range.path),
            kernels.join("; ")
        )?;
    }
    for range in analysis.ranges.iter().filter(|r| !r.os_calls.is_empty()) {
        let calls: Vec<String> = range
            .os_calls
            .iter()
            .map(|c| {
                format!(
                    "{} ×{} ({} per pass)",
                    printable(&c.name),
                    c.count,
                    format_ns(c.total_ns / passes)
                )
            })
            .collect();
        writeln!(
            out,
            "OS calls in {}: {}",
            printable(&range.path),
            calls.join("; ")
        )?;
    }
    for range in analysis.ranges.iter().filter(|r| r.samples > 0) {
        let functions: Vec<String> = range
            .sampled_functions
            .iter()
            .map(|f| {
                format!(
                    "{} {:.0} %",
                    printable(&f.name),
                    f.samples as f64 * 100.0 / range.samples as f64
                )
            })
            .collect();
        writeln!(
            out,
            "sampled in {} ({} samples): {}",
            printable(&range.path),
            range.samples,
            functions.join("; ")
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel named with an escape sequence (a crafted export) cannot
    /// recolour or clear the terminal: control characters are written as
    /// escapes, the rest as it is.
    #[test]
    fn the_event_count_is_read_off_the_export_progress_line() {
        let export = "Exporting 1956 events: [1%        ]\rExporting 1956 events: [===100%]\n";
        assert_eq!(exported_events(export), Some(1956));
        assert_eq!(exported_events("nothing said"), None);
    }

    #[test]
    fn names_from_an_export_are_printed_without_their_control_characters() {
        assert_eq!(
            printable("gemm\u{1b}[2J\u{1b}]0;owned\u{7}\rcut"),
            "gemm\\u{1b}[2J\\u{1b}]0;owned\\u{7}\\rcut"
        );
        assert_eq!(
            printable("ampere_sgemm_128x64 ×2 µs"),
            "ampere_sgemm_128x64 ×2 µs"
        );
    }
}
