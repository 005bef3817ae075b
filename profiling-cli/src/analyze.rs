//! `profile-cli analyze`: GPU time per NVTX range from a run's Nsight
//! Systems report, as a table, `--json`, and `analysis.yaml` beside the
//! run's manifest.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use profiling_analyze::{Analysis, Request};
use profiling_core::manifest::Manifest;

use crate::summary::format_ns;
use crate::{EXIT_OK, EXIT_TARGET_FAILED, EXIT_USAGE};

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
        export.display().to_string(),
        report.display().to_string(),
    ]
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// The export to read for `path`, made from the report with `nsys export`
/// when there is none yet and nsys is on PATH.
fn locate(path: &Path, err: &mut dyn Write) -> Result<Located, String> {
    let (report, export, run_dir) = if path.is_dir() {
        let export = path.join("trace.sqlite");
        let run_dir = path
            .join("manifest.yaml")
            .is_file()
            .then(|| path.to_path_buf());
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
            "{} needs exporting to SQLite, and nsys is not on PATH: run this where Nsight Systems is, then analyze again:\n  {printed}",
            report.display()
        ));
    }
    let _ = writeln!(err, "exporting: {printed}");
    let status = Command::new(&command[0])
        .args(&command[1..])
        .status()
        .map_err(|e| format!("cannot start nsys: {e}"))?;
    if !status.success() || !export.is_file() {
        return Err(format!(
            "`{printed}` failed ({status}): {} was not written",
            export.display()
        ));
    }
    Ok(Located { export, run_dir })
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
    let located = match locate(&args.path, err) {
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
        let text = serde_yaml::to_string(&sorted)?;
        if let Err(error) =
            profiling_core::driver::run_dir::write_atomically(&path, text.as_bytes())
        {
            writeln!(err, "error: cannot write {}: {error}", path.display())?;
            return Ok(EXIT_TARGET_FAILED);
        }
        if !args.json {
            writeln!(out, "analysis: {}", path.display())?;
        }
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
                if crate::report::write_page(&page, &html).is_ok() && !args.json {
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
    for range in &mut document.ranges {
        range.manifest_host_p50_ns = manifest.and_then(|m| {
            let tree = &m.timings.range_tree;
            Some(tree.iter().find(|r| r.path == range.path)?.inclusive.p50_ns)
        });
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

fn write_table(analysis: &Analysis, out: &mut dyn Write) -> std::io::Result<()> {
    let passes = analysis.passes.len().max(1) as u64;
    writeln!(
        out,
        "capture `{}` of process {}: {}, {} passes; GPU busy {:.1} % of a pass on average, longest idle {}",
        printable(&analysis.capture_range),
        analysis.process_id,
        format_ns(analysis.capture_ns),
        analysis.passes.len(),
        analysis.mean_gpu_busy_fraction * 100.0,
        format_ns(analysis.largest_gpu_idle_ns)
    )?;
    let header = [
        "range path",
        "calls",
        "host p50",
        "manifest p50",
        "GPU busy p50",
        "GPU per pass",
        "launch→done p50",
        "top kernel",
    ];
    let rows: Vec<[String; 8]> = analysis
        .ranges
        .iter()
        .map(|range| {
            [
                format!(
                    "{}{}",
                    "  ".repeat(range.depth as usize),
                    printable(&range.path)
                ),
                range.count.to_string(),
                format_ns(range.host.p50_ns),
                range.manifest_host_p50_ns.map_or("-".to_owned(), format_ns),
                range
                    .gpu_busy
                    .map_or("-".to_owned(), |s| format_ns(s.p50_ns)),
                format_ns(range.gpu_sum_ns / passes),
                range
                    .launch_to_completion
                    .map_or("-".to_owned(), |s| format_ns(s.p50_ns)),
                range.kernels.first().map_or("-".to_owned(), |k| {
                    format!("{} ×{}", printable(&k.name), k.count)
                }),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..8)
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([header[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: [&str; 8]| {
        let mut text = format!("{:<w$}", cells[0], w = widths[0]);
        for (column, cell) in cells.iter().enumerate().take(7).skip(1) {
            text.push_str(&format!("  {cell:>w$}", w = widths[column]));
        }
        text.push_str("  ");
        text.push_str(cells[7]);
        text
    };
    writeln!(out, "{}", line(header))?;
    for row in &rows {
        writeln!(
            out,
            "{}",
            line([&row[0], &row[1], &row[2], &row[3], &row[4], &row[5], &row[6], &row[7]])
        )?;
    }
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

/// `run --nsys`: the run under Nsight Systems (`lines`, the command
/// `--print-nsys-command` prints), then the analysis of its report.
pub fn run_under_nsys(
    lines: &[Vec<String>],
    run_dir: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let printed = profiling_core::driver::nsys::render_command(lines);
    if !on_path("nsys") {
        writeln!(
            err,
            "error: --nsys needs Nsight Systems, and nsys is not on PATH: run this where it is, then `profile-cli analyze {}`:\n{printed}",
            run_dir.display()
        )?;
        return Ok(EXIT_USAGE);
    }
    let words: Vec<&String> = lines.iter().flatten().collect();
    writeln!(err, "running under Nsight Systems:\n{printed}")?;
    out.flush()?;
    let status = Command::new(words[0])
        .args(&words[1..])
        .status()
        .map_err(|e| anyhow::anyhow!("cannot start nsys: {e}"))?;
    if !status.success() {
        writeln!(err, "error: the run under nsys failed ({status})")?;
        return Ok(status
            .code()
            .and_then(|c| u8::try_from(c).ok())
            .filter(|&c| c != 0)
            .unwrap_or(EXIT_TARGET_FAILED));
    }
    let args = AnalyzeArgs {
        path: run_dir.to_path_buf(),
        capture_range: None,
        kernels: 3,
        json: false,
        force: false,
    };
    analyze_command(args, out, err)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel named with an escape sequence (a crafted export) cannot
    /// recolour or clear the terminal: control characters are written as
    /// escapes, the rest as it is.
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
