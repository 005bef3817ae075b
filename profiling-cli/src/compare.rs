//! `profile-cli compare`, and the comparison `run --baseline` prints: a table for people, `--json` for machines,
//! `--markdown` for a pull request.

use std::io::Write;
use std::path::Path;

use clap::Args;
use profiling_compare::memory::{CountVerdict, MemoryRow};
use profiling_compare::runs::{self, ReadRunError};
use profiling_compare::statistics::BootstrapOptions;
use profiling_compare::{self as compare, Comparison, Options, Row, RunInfo, Verdict};
use profiling_core::driver::provenance::NOT_A_CHECKOUT_NOTE;
use profiling_core::driver::session::ProfileRuns;

use crate::decide::DecideArgs;
use crate::exit::{EXIT_OK, EXIT_REGRESSION, EXIT_USAGE};
use crate::summary::format_ns;

impl DecideArgs {
    pub(crate) fn options(&self) -> Options {
        Options {
            noise: self.noise_threshold,
            significance: self.significance,
            bootstrap: BootstrapOptions {
                resamples: self.resamples,
                seed: self.bootstrap_seed,
                ..BootstrapOptions::default()
            },
            gate_share: self.gate_share,
        }
    }
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The base run, then one or more candidates (with --baseline, only candidates). Each is a run
    /// directory, its manifest.yaml, PROFILE@RUN_ID, or PROFILE@latest (the newest completed run).
    #[arg(value_name = "RUN", required = true)]
    runs: Vec<String>,
    /// Compare with the profile's baseline NAME (saved by `run --save-baseline NAME`) as the base.
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    /// Find PROFILE@RUN_ID and PROFILE@latest in DIR/PROFILE/runs/, as `run --output-dir DIR`
    /// writes them.
    #[arg(long, value_name = "DIR")]
    output_dir: Option<std::path::PathBuf>,
    /// Compare runs of different targets (refused by default: different code).
    #[arg(long)]
    allow_different_targets: bool,
    /// Print one JSON document: per comparison the differences and, per row, the medians, ratio,
    /// interval, p-value and verdict.
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// Print Markdown tables to paste into a pull request.
    #[arg(long)]
    markdown: bool,
    #[command(flatten)]
    decide: DecideArgs,
}

impl CompareArgs {
    /// Looks for runs in `dir` when `--output-dir` does not say.
    pub(crate) fn default_output_dir(&mut self, dir: std::path::PathBuf) {
        self.output_dir.get_or_insert(dir);
    }

    /// Colours the verdicts as the global `--color` says.
    pub(crate) fn color(&mut self, color: crate::decide::ColorChoice) {
        self.decide.color = color;
    }
}

/// `profile-cli compare`.
pub fn compare_command(
    args: CompareArgs,
    profiles: &[ProfileRuns],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let Some(options) = checked_options(&args.decide, err)? else {
        return Ok(EXIT_USAGE);
    };
    let output_dir = args.output_dir.as_deref();
    let mut loaded = match resolve_all(&args.runs, |a| runs::resolve(a, profiles, output_dir)) {
        Ok(loaded) => loaded,
        Err(error) => return usage_error(err, &error),
    };
    let (base, candidates) = match &args.baseline {
        Some(name) => {
            let first = &loaded[0];
            let dir = runs::baselines_dir_of(first);
            match runs::find_baseline(&dir, &first.profile, name) {
                Ok(base) => (base, loaded),
                Err(error) => return usage_error(err, &error),
            }
        }
        None if loaded.len() < 2 => {
            writeln!(
                err,
                "error: compare needs a base and at least one candidate (or --baseline NAME and a candidate)"
            )?;
            return Ok(EXIT_USAGE);
        }
        None => {
            let base = loaded.remove(0);
            (base, loaded)
        }
    };
    let mut comparisons = Vec::new();
    for candidate in &candidates {
        match compare::compare(&base, candidate, &options, args.allow_different_targets) {
            Ok(comparison) => comparisons.push(comparison),
            Err(error) => {
                writeln!(err, "error: {error}")?;
                return Ok(EXIT_USAGE);
            }
        }
    }
    let format = if args.json {
        Format::Json
    } else if args.markdown {
        Format::Markdown
    } else {
        Format::Table {
            colored: args.decide.colored(),
        }
    };
    write_comparisons(&comparisons, &options, format, out)?;
    Ok(regression_code(
        &comparisons,
        &options,
        args.decide.fail_on_regression,
    ))
}

/// The options `decide` gives, or `None` after saying which is out of range.
pub(crate) fn checked_options(
    decide: &DecideArgs,
    err: &mut dyn Write,
) -> std::io::Result<Option<Options>> {
    let options = decide.options();
    match options.check() {
        Ok(()) => Ok(Some(options)),
        Err(message) => {
            writeln!(err, "error: {message}")?;
            Ok(None)
        }
    }
}

/// Each argument resolved by `resolve`, or the first that cannot be.
pub(crate) fn resolve_all<T>(
    arguments: &[String],
    resolve: impl Fn(&str) -> Result<T, ReadRunError>,
) -> Result<Vec<T>, ReadRunError> {
    arguments.iter().map(|a| resolve(a)).collect()
}

pub(crate) fn usage_error(err: &mut dyn Write, error: &ReadRunError) -> anyhow::Result<u8> {
    writeln!(err, "error: {error}")?;
    Ok(EXIT_USAGE)
}

/// 3 when asked to fail on a regression and one was found, else 0.
pub fn regression_code(
    comparisons: &[Comparison],
    options: &Options,
    fail_on_regression: bool,
) -> u8 {
    if fail_on_regression && comparisons.iter().any(|c| c.regressed(options)) {
        EXIT_REGRESSION
    } else {
        EXIT_OK
    }
}

/// How comparisons are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table { colored: bool },
    Json,
    Markdown,
}

/// Prints `comparisons` in `format`.
pub fn write_comparisons(
    comparisons: &[Comparison],
    options: &Options,
    format: Format,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    match format {
        Format::Json => writeln!(out, "{}", json_document(comparisons, options)),
        Format::Markdown => {
            for comparison in comparisons {
                write_markdown(comparison, options, out)?;
            }
            Ok(())
        }
        Format::Table { colored } => {
            for (index, comparison) in comparisons.iter().enumerate() {
                if index > 0 {
                    writeln!(out)?;
                }
                write_table(comparison, options, colored, out)?;
            }
            Ok(())
        }
    }
}

/// The `--json` document.
pub fn json_document(comparisons: &[Comparison], options: &Options) -> serde_json::Value {
    serde_json::to_value(compare::ComparisonDocument::new(comparisons, options))
        .unwrap_or(serde_json::Value::Null)
}

fn confidence_label(options: &Options) -> String {
    format!(
        "{} % interval",
        (options.bootstrap.confidence * 100.0).round()
    )
}

fn git_text(run: &RunInfo) -> String {
    match (run.git_commit.as_deref(), run.git_dirty) {
        (Some(commit), Some(true)) => format!("{} (dirty)", short(commit)),
        (Some(commit), _) => short(commit).to_owned(),
        (None, _) => run
            .git_note
            .clone()
            .unwrap_or_else(|| NOT_A_CHECKOUT_NOTE.to_owned()),
    }
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// What the lines above a table say: the two runs, what differs between
/// them, the git state of each, and the warnings.
fn header_lines(comparison: &Comparison) -> Vec<String> {
    let (base, candidate) = (&comparison.base, &comparison.candidate);
    let mut lines = vec![
        format!(
            "base:      {} ({}, {} passes)",
            base.label, base.status, base.completed_passes
        ),
        format!(
            "candidate: {} ({}, {} passes)",
            candidate.label, candidate.status, candidate.completed_passes
        ),
    ];
    for difference in &comparison.differences {
        lines.push(format!(
            "differs: {}: {} → {}",
            difference.key, difference.base, difference.candidate
        ));
    }
    lines.push(format!("git: {} → {}", git_text(base), git_text(candidate)));
    if base.machine.is_some() || candidate.machine.is_some() {
        let state = |run: &RunInfo| {
            run.machine
                .as_ref()
                .map_or("not recorded".to_owned(), |m| m.summary())
        };
        lines.push(format!("machine: base {}", state(base)));
        lines.push(format!("machine: candidate {}", state(candidate)));
    }
    for warning in &comparison.warnings {
        lines.push(format!("warning: {warning}"));
    }
    lines
}

/// The cells of a row: subject, base, candidate, ratio, interval, p, pass
/// change, verdict.
fn cells(row: &Row) -> [String; 8] {
    let median =
        |side: Option<&compare::Side>| side.map_or("-".to_owned(), |s| format_ns(s.median_ns));
    [
        row.subject.label(),
        median(row.base.as_ref()),
        median(row.candidate.as_ref()),
        row.ratio.map_or("-".to_owned(), |r| format!("{r:.3}")),
        row.interval.map_or("-".to_owned(), |[low, high]| {
            format!("[{low:.3}, {high:.3}]")
        }),
        row.p_value.map_or("-".to_owned(), p_text),
        row.pass_share.map_or("-".to_owned(), share_text),
        row.verdict.word().to_owned(),
    ]
}

/// A share of a pass, with more digits for small ones.
fn share_text(share: f64) -> String {
    let percent = share * 100.0;
    if percent.abs() >= 0.1 || percent == 0.0 {
        format!("{percent:+.1} %")
    } else {
        format!("{percent:+.2} %")
    }
}

fn p_text(p: f64) -> String {
    if p < 0.001 {
        "<0.001".to_owned()
    } else {
        format!("{p:.3}")
    }
}

fn paint(verdict: Verdict, text: &str) -> String {
    let code = match verdict {
        Verdict::Faster => "32",
        Verdict::Slower => "31",
        Verdict::Unclear => "33",
        Verdict::NoChange => "2",
        Verdict::Added | Verdict::Removed => "36",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

fn write_table(
    comparison: &Comparison,
    options: &Options,
    colored: bool,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    for line in header_lines(comparison) {
        writeln!(out, "{line}")?;
    }
    let header = [
        "".to_owned(),
        "base".to_owned(),
        "candidate".to_owned(),
        "ratio".to_owned(),
        confidence_label(options),
        "p".to_owned(),
        "pass Δ".to_owned(),
        "verdict".to_owned(),
    ];
    let rows: Vec<[String; 8]> = comparison.rows.iter().map(cells).collect();
    let width = |column: usize| {
        std::iter::once(&header)
            .chain(&rows)
            .map(|cells| cells[column].chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..8).map(width).collect();
    let line = |cells: &[String; 8], verdict: Option<Verdict>| {
        let mut text = format!("{:<w$}", cells[0], w = widths[0]);
        for column in 1..7 {
            let pad = widths[column] - cells[column].chars().count();
            text.push_str("  ");
            text.push_str(&" ".repeat(pad));
            text.push_str(&cells[column]);
        }
        text.push_str("  ");
        match verdict {
            Some(verdict) if colored => text.push_str(&paint(verdict, &cells[7])),
            _ => text.push_str(&cells[7]),
        }
        text
    };
    writeln!(out, "{}", line(&header, None).trim_end())?;
    for (row, cells) in comparison.rows.iter().zip(&rows) {
        writeln!(out, "{}", line(cells, Some(row.verdict)))?;
    }
    for row in &comparison.rows {
        if let Some(note) = &row.note {
            writeln!(out, "note: {}: {note}", row.subject.label())?;
        }
    }
    writeln!(out, "{}", comparison.method(options))?;
    write_memory_table(comparison, colored, out)
}

/// The memory rows, one line each: what they count per pass, the change,
/// exact or not, and the verdict.
fn write_memory_table(
    comparison: &Comparison,
    colored: bool,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if comparison.memory.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nmemory per pass")?;
    let rows: Vec<[String; 4]> = comparison.memory.iter().map(memory_cells).collect();
    let widths: Vec<usize> = (0..3)
        .map(|column| {
            rows.iter()
                .map(|r| r[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (row, cells) in comparison.memory.iter().zip(&rows) {
        let verdict = match row.verdict {
            CountVerdict::More if colored => format!("\x1b[31m{}\x1b[0m", cells[3]),
            CountVerdict::Fewer if colored => format!("\x1b[32m{}\x1b[0m", cells[3]),
            _ => cells[3].clone(),
        };
        writeln!(
            out,
            "{:<w0$}  {:<w1$}  {:>w2$}  {verdict}",
            cells[0],
            cells[1],
            cells[2],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        )?;
    }
    writeln!(
        out,
        "exact where every pass of both runs counted the same; otherwise more or fewer only when every pass of one lies beyond every pass of the other"
    )
}

/// Subject, measure, change and verdict (with `exact` where it is).
fn memory_cells(row: &MemoryRow) -> [String; 4] {
    let verdict = if row.exact && row.verdict != CountVerdict::Same {
        format!("{} (exact)", row.verdict.word())
    } else {
        row.verdict.word().to_owned()
    };
    [
        row.subject.clone(),
        row.measure.word().to_owned(),
        row.change_text(),
        verdict,
    ]
}

fn markdown_escape(text: &str) -> String {
    text.replace('|', "\\|")
}

fn write_markdown(
    comparison: &Comparison,
    options: &Options,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(
        out,
        "**{}** → **{}**\n",
        markdown_escape(&comparison.base.label),
        markdown_escape(&comparison.candidate.label)
    )?;
    for line in header_lines(comparison).iter().skip(2) {
        writeln!(out, "- {}", markdown_escape(line))?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "| | base | candidate | ratio | {} | p | pass Δ | verdict |",
        confidence_label(options)
    )?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---|")?;
    for row in &comparison.rows {
        let cells = cells(row);
        let verdict = match row.verdict {
            Verdict::Faster | Verdict::Slower => format!("**{}**", cells[7]),
            _ => cells[7].clone(),
        };
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            markdown_escape(&cells[0]),
            cells[1],
            cells[2],
            cells[3],
            cells[4],
            cells[5],
            cells[6],
            verdict
        )?;
    }
    if !comparison.memory.is_empty() {
        writeln!(out, "\n| memory per pass | | change | verdict |")?;
        writeln!(out, "|---|---|---:|---|")?;
        for row in &comparison.memory {
            let cells = memory_cells(row);
            writeln!(
                out,
                "| {} | {} | {} | {} |",
                markdown_escape(&cells[0]),
                cells[1],
                cells[2],
                cells[3]
            )?;
        }
    }
    writeln!(out)
}

/// After `run --baseline NAME`: the new run compared with the baseline,
/// printed (as a table, or into the `--json` document by the caller).
pub fn compare_with_baseline(
    run_dir: &Path,
    name: &str,
    decide: &DecideArgs,
) -> Result<(Comparison, Options), String> {
    let options = decide.options();
    let candidate = runs::load(run_dir).map_err(|e| e.to_string())?;
    let dir = runs::baselines_dir_of(&candidate);
    let base = runs::find_baseline(&dir, &candidate.profile, name).map_err(|e| e.to_string())?;
    let comparison =
        compare::compare(&base, &candidate, &options, false).map_err(|e| e.to_string())?;
    Ok((comparison, options))
}

/// Whether `decide` colours a table on stdout.
pub fn table_format(decide: &DecideArgs) -> Format {
    Format::Table {
        colored: decide.colored(),
    }
}

/// The options' ranges, checked before a run.
pub fn check_options(decide: &DecideArgs) -> Result<(), String> {
    decide.options().check()
}
