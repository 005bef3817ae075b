//! `profile-cli history`: every run kept in a store (`profiling_history`),
//! each range's metric per commit, and the commits where one shifted.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use profiling_core::driver::session;
use profiling_history::changes::{self, Change, Detector};
use profiling_history::series::{by_commit, CommitPoint};
use profiling_history::{Location, Metric, Record, Series, SeriesQuery, Store};

use crate::exit::{EXIT_OK, EXIT_REGRESSION, EXIT_TARGET_FAILED, EXIT_USAGE};
use crate::summary::format_ns;

mod backfill;
mod diff;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HistoryArgs {
    #[command(subcommand)]
    command: Option<HistoryCommand>,
    #[command(flatten)]
    show: ShowArgs,
    /// `--profile` and `--features` (global): how `backfill` builds.
    #[arg(skip)]
    cargo_profile: Option<String>,
    #[arg(skip)]
    features: Vec<String>,
}

#[derive(Debug, Subcommand)]
enum HistoryCommand {
    /// Write run directories already on disk into the store.
    ///
    /// Each DIR is a run directory (or its manifest.yaml), or a directory holding run
    /// directories at any depth (a target's runs/, the workspace's inference_profiling/). A run
    /// the store holds already is left as it is: importing twice writes nothing new. Failed
    /// runs measured nothing and are skipped.
    ///
    /// Exit codes: 0 every run found was written or was there already; 1 some could not be read
    /// or written (each named); 2 the store cannot be opened.
    Import(ImportArgs),
    /// Write every run under the run directories that the store does not hold yet.
    ///
    /// A run whose store could not be written when it finished (a PostgreSQL server away, a full
    /// disk) keeps its directory and says so; this writes it, and every other run the store
    /// lacks, from the workspace's run directories (or --output-dir's). Runs the store holds are
    /// left as they are.
    ///
    /// Exit codes: as import.
    Sync(SyncArgs),
    /// Each range's figure at two commits side by side, and the changes found between them.
    ///
    /// For a pull request: BASE and HEAD are commits of HEAD's first-parent line (a merge
    /// base and the branch's tip); each target with runs at either (or only --target), per
    /// machine and config, gets a row per range path with its figure at both and the change,
    /// and the changes the detector found in between (as `history --changes`) are named.
    /// --markdown prints it to paste into the pull request.
    ///
    /// Exit codes: 0 shown; 2 a commit or target that is not there.
    Diff(diff::DiffArgs),
    /// Find the changes in series from a CSV file, in Apache Otava's format.
    ///
    /// A header, then one row per point in order: a time column, metric columns (numbers) and
    /// attribute columns (a commit, a branch; every column that is not all numbers). Each metric
    /// is searched as `history --changes` searches a range (E-Divisive means with a permutation
    /// test), so the detector can be run on results from elsewhere and compared with Otava's on
    /// the same file. Each change is given at the first row after it, with the medians either
    /// side.
    ///
    /// Exit codes: 0 read (changes or none); 2 the file cannot be read as series (its row and
    /// column named).
    Changes(CsvChangesArgs),
    /// Build and run TARGET at past commits, so that its history exists before its first stored
    /// run, and name the commit where each change began.
    ///
    /// --commits A..B is A and each commit of B's first-parent line after it, oldest first; with
    /// --every N, every Nth runs (the first and the last always). Each is built as `ab --against`
    /// builds its base (a worktree beside the repository, the build kept between commits, so
    /// each rebuilds what changed; --profile and --features as for a delegated build), and TARGET
    /// runs once with its config at that commit, into <runs>/backfill/TARGET/runs/<commit>/ and
    /// the store. A commit whose run is there already is not run again.
    ///
    /// Then the changes are searched as `history --changes` does (on this metric), and each that
    /// lies between two commits that ran, with commits between them that did not, is bisected:
    /// the commit halfway runs, and the change goes to the half its figure says, until the first
    /// commit of the new level is named. A commit that does not build or run is skipped, as
    /// `git bisect skip` does.
    ///
    /// Exit codes: 0 done (changes or none); 1 some commit could not be built, run or recorded
    /// (each named; the others ran); 2 bad usage, a range that is not one, or no store; 130
    /// interrupted (the runs recorded so far kept).
    Backfill(backfill::BackfillArgs),
}

/// Where the store is.
#[derive(Debug, Args)]
struct StoreArgs {
    /// The store: an SQLite file (a path, or sqlite:PATH) or a PostgreSQL database
    /// (postgres://USER@HOST/DATABASE; the password from the URL, $PGPASSWORD or ~/.pgpass). Else
    /// $PROFILING_STORE, else history.sqlite beside the run directories (the workspace's
    /// inference_profiling/, or --output-dir).
    #[arg(long, value_name = "LOCATION")]
    store: Option<String>,
    /// The store of runs made with --output-dir DIR instead of the workspace's.
    #[arg(long, value_name = "DIR")]
    output_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ImportArgs {
    /// Run directories, or directories holding them.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    #[command(flatten)]
    store: StoreArgs,
}

#[derive(Debug, Args)]
struct CsvChangesArgs {
    /// The CSV file.
    #[arg(long, value_name = "FILE", required = true)]
    csv: PathBuf,
    /// The column that orders the rows (shown with each change).
    #[arg(long, value_name = "NAME", default_value = "time")]
    time_column: String,
    /// Only this metric column (repeatable); by default every column of numbers.
    #[arg(long = "metric", value_name = "NAME")]
    metrics: Vec<String>,
    /// A split is a change when its permutation p-value is at most this.
    #[arg(long, value_name = "P", default_value_t = 0.01, value_parser = parse_probability)]
    significance: f64,
    /// Points each side of a change holds at least.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    min_size: u32,
    /// Print one JSON document instead.
    #[arg(long)]
    json: bool,
}

fn parse_probability(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p < 1.0 => Ok(p),
        _ => Err(format!(
            "`{text}`: a probability between 0 and 1, such as 0.01"
        )),
    }
}

#[derive(Debug, Args)]
struct SyncArgs {
    #[command(flatten)]
    store: StoreArgs,
}

#[derive(Debug, Args)]
struct ShowArgs {
    /// The target (profile name) whose history to show; without one, the profiles the store
    /// holds.
    target: Option<String>,
    /// The figure to follow: p50, p90, p95, p99, mean, min, max, alloc-bytes, peak (the last two need
    /// runs with memory: on).
    #[arg(long, default_value = "p50", value_parser = parse_metric)]
    metric: Metric,
    /// Only this range path (`preprocess/resize`; `pass` for the measured pass); repeatable.
    #[arg(long = "range", value_name = "PATH")]
    ranges: Vec<String>,
    /// Only runs of this machine (its fingerprint, or the first digits of it).
    #[arg(long, value_name = "FINGERPRINT")]
    machine: Option<String>,
    /// Only runs of this config (its hash, or the first digits of it).
    #[arg(long, value_name = "HASH")]
    config: Option<String>,
    /// List the changes found in every series instead of the table: the commit where each
    /// lasting shift began, its size with an interval, the innermost range it moved.
    #[arg(long)]
    changes: bool,
    /// With --changes: exit 3 when a change makes a range slower (or larger) by at least this
    /// much, as `5%` or `+5%`.
    #[arg(long, value_name = "PERCENT", requires = "changes", value_parser = parse_percent)]
    fail_on: Option<f64>,
    /// With --fail-on: only changes that began after this commit count.
    #[arg(long, value_name = "COMMIT", requires = "fail_on")]
    since: Option<String>,
    /// List the verdicts of the target's pairs judged by gates (`ab --accept`) instead, oldest
    /// first: each pair's id, its verdict, the commits of its sides and each gate's outcome.
    #[arg(long, conflicts_with_all = ["changes", "export", "page"])]
    verdicts: bool,
    /// Keep runs of a dirty tree, placed at the commit they were made on.
    #[arg(long)]
    dirty: bool,
    /// The table shows this many commits, the newest (--json has them all).
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    last: u32,
    /// Print one JSON document instead.
    #[arg(long)]
    json: bool,
    /// Also write the history as a page: one chart per range (its value per commit, the
    /// intervals, the changes found, each point a link to its run's page), into FILE, or
    /// history.html beside the target's runs when no FILE is given.
    #[arg(long, value_name = "FILE", num_args = 0..=1, conflicts_with_all = ["changes", "export"])]
    page: Option<Option<PathBuf>>,
    /// Print every stored figure of the target's runs instead, one row per run and range path:
    /// `csv` (a header, then RFC 4180 rows; pandas.read_csv reads it as it is), `json` (an
    /// array of objects with the same fields) or `parquet` (Apache Parquet, a typed column per
    /// field: pandas.read_parquet and polars read it; redirect it to a file); or `bmf`, the
    /// newest completed run in Bencher Metric Format (for `bencher run --file`), a benchmark
    /// per range with its median as latency. --machine and --config filter it.
    #[arg(long, value_name = "FORMAT", value_parser = ["csv", "json", "parquet", "bmf"], conflicts_with_all = ["changes", "json"])]
    export: Option<String>,
    /// With --export csv, json or parquet: the raw samples instead of the figures, one row per
    /// measured pass and per call of each range (inclusive and exclusive of the ranges inside
    /// it), in the order measured.
    #[arg(long, requires = "export")]
    samples: bool,
    #[command(flatten)]
    store: StoreArgs,
}

fn parse_metric(text: &str) -> Result<Metric, String> {
    text.parse()
}

/// `5%`, `+5%` or `5`: a fraction (0.05).
fn parse_percent(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_start_matches('+').trim_end_matches('%');
    match number.parse::<f64>() {
        Ok(value) if value.is_finite() && value > 0.0 => Ok(value / 100.0),
        _ => Err(format!(
            "`{text}`: a positive percentage, such as 5% or +5%"
        )),
    }
}

impl HistoryArgs {
    /// How `backfill` builds the workspace's binary: cargo's profile and
    /// the package's features (the global `--profile` and `--features`).
    pub(crate) fn build_with(&mut self, cargo_profile: Option<String>, features: Vec<String>) {
        self.cargo_profile = cargo_profile;
        self.features = features;
    }

    /// Reads the store under `dir` when `--output-dir` does not say.
    pub(crate) fn default_output_dir(&mut self, dir: PathBuf) {
        let store = match &mut self.command {
            Some(HistoryCommand::Import(import)) => &mut import.store,
            Some(HistoryCommand::Sync(sync)) => &mut sync.store,
            Some(HistoryCommand::Changes(_)) => return,
            Some(HistoryCommand::Diff(diff)) => &mut diff.store,
            Some(HistoryCommand::Backfill(backfill)) => backfill.store_args(),
            None => &mut self.show.store,
        };
        store.output_dir.get_or_insert(dir);
    }
}

impl StoreArgs {
    fn location(&self, workspace_root: &Path) -> Result<Location, String> {
        let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        location(
            self.store.as_deref(),
            self.output_dir.as_deref(),
            workspace_root,
            &here,
        )
        .map_err(|e| e.to_string())
    }
}

/// The store: `given`, else where a run under `output_dir` or the
/// workspace goes (`$PROFILING_STORE`, else beside the run directories:
/// [`crate::handoff::store_of`]). A relative path is taken from `here`.
pub(crate) fn location(
    given: Option<&str>,
    output_dir: Option<&Path>,
    workspace_root: &Path,
    here: &Path,
) -> Result<Location, profiling_history::StoreError> {
    let text = given.map_or_else(
        || crate::handoff::store_of(output_dir, workspace_root),
        str::to_owned,
    );
    Location::parse(&text, here)
}

/// `profile-cli history ...`.
pub fn history_command(
    args: HistoryArgs,
    workspace_root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    match args.command {
        Some(HistoryCommand::Import(import)) => import_command(import, workspace_root, out, err),
        Some(HistoryCommand::Sync(sync)) => {
            let root = session::run_root(sync.store.output_dir.as_deref(), workspace_root);
            if !root.is_dir() {
                writeln!(
                    err,
                    "error: {}: no run directories here yet",
                    root.display()
                )?;
                return Ok(EXIT_USAGE);
            }
            let import = ImportArgs {
                dirs: vec![root],
                store: sync.store,
            };
            import_command(import, workspace_root, out, err)
        }
        Some(HistoryCommand::Changes(args)) => csv_changes(&args, out, err),
        Some(HistoryCommand::Diff(args)) => diff::diff(args, workspace_root, out, err),
        Some(HistoryCommand::Backfill(backfill)) => backfill::backfill(
            backfill,
            workspace_root,
            args.cargo_profile.as_deref(),
            args.features,
            out,
            err,
        ),
        None => show(args.show, workspace_root, out, err),
    }
}

/// The store `store` names, opened to write (made when it is not there);
/// `Err` with the exit code once what is wrong is said: a location that
/// is not one, a store that cannot be opened, or one that is off (what
/// was to go into it is `purpose`).
fn store_to_write(
    store: &StoreArgs,
    workspace_root: &Path,
    purpose: &str,
    err: &mut dyn Write,
) -> std::io::Result<Result<Store, u8>> {
    let location = match store.location(workspace_root) {
        Ok(location) => location,
        Err(message) => {
            writeln!(err, "error: {message}")?;
            return Ok(Err(EXIT_USAGE));
        }
    };
    match Store::open_location(&location) {
        Ok(Some(store)) => Ok(Ok(store)),
        Ok(None) => {
            writeln!(
                err,
                "error: the history store is off ({}=off): {purpose}",
                profiling_history::store::ENV
            )?;
            Ok(Err(EXIT_USAGE))
        }
        Err(error) => {
            writeln!(err, "error: {error}")?;
            Ok(Err(EXIT_USAGE))
        }
    }
}

/// `columns`, then each of `rows`, as CSV (RFC 4180).
fn write_csv<const N: usize>(
    columns: &[&str; N],
    rows: impl Iterator<Item = [String; N]>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(out, "{}", columns.join(","))?;
    for fields in rows {
        let fields: Vec<String> = fields
            .iter()
            .map(|f| profiling_history::store::csv_field(f))
            .collect();
        writeln!(out, "{}", fields.join(","))?;
    }
    Ok(())
}

/// `history TARGET --verdicts`.
fn write_verdicts(
    store: &mut Store,
    target: &str,
    json: bool,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let verdicts = store.verdicts(target)?;
    if json {
        let list: Vec<serde_json::Value> = verdicts
            .iter()
            .map(|v| {
                let mut value = serde_json::to_value(v).unwrap_or_default();
                value["gates"] = serde_json::from_str(&v.gates).unwrap_or(serde_json::Value::Null);
                value
            })
            .collect();
        writeln!(
            out,
            "{}",
            serde_json::json!({ "store": store.name(), "profile": target, "verdicts": list })
        )?;
        return Ok(EXIT_OK);
    }
    if verdicts.is_empty() {
        writeln!(
            out,
            "{}: no verdicts of `{target}` (pairs judged by `ab --accept`)",
            store.name()
        )?;
        return Ok(EXIT_OK);
    }
    writeln!(out, "{target}: {} verdicts, oldest first", verdicts.len())?;
    for verdict in &verdicts {
        let gates: Vec<String> = serde_json::from_str::<Vec<serde_json::Value>>(&verdict.gates)
            .unwrap_or_default()
            .iter()
            .map(|g| {
                format!(
                    "{} {}",
                    g["gate"]["text"].as_str().unwrap_or("?"),
                    g["outcome"].as_str().unwrap_or("?")
                )
            })
            .collect();
        writeln!(
            out,
            "  {}  {}  {} -> {}  ({})",
            verdict.ab_id,
            verdict.verdict,
            short(verdict.base_commit.as_deref()),
            short(verdict.candidate_commit.as_deref()),
            gates.join(", ")
        )?;
    }
    Ok(EXIT_OK)
}

/// The store `args` name, to read; `Err` with the exit code once said
/// why it cannot be (off, not there, not a store).
fn open_existing(
    args: &StoreArgs,
    workspace_root: &Path,
    err: &mut dyn Write,
) -> std::io::Result<Result<Store, u8>> {
    let location = match args.location(workspace_root) {
        Ok(location) => location,
        Err(message) => {
            writeln!(err, "error: {message}")?;
            return Ok(Err(EXIT_USAGE));
        }
    };
    match Store::open_location_existing(&location) {
        Ok(Some(store)) => Ok(Ok(store)),
        Ok(None) => {
            writeln!(
                err,
                "error: the history store is off ({}=off)",
                profiling_history::store::ENV
            )?;
            Ok(Err(EXIT_USAGE))
        }
        Err(error) => {
            writeln!(err, "error: {error}")?;
            Ok(Err(EXIT_USAGE))
        }
    }
}

/// `history changes --csv FILE`.
fn csv_changes(
    args: &CsvChangesArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let table =
        match profiling_history::table::Table::read(&args.csv, &args.time_column, &args.metrics) {
            Ok(table) => table,
            Err(error) => {
                writeln!(err, "error: {error}")?;
                return Ok(EXIT_USAGE);
            }
        };
    let detector = Detector {
        min_size: args.min_size as usize,
        significance: args.significance,
        ..Detector::default()
    };
    let changes = table.changes(&detector);
    if args.json {
        let document = serde_json::json!({
            "file": args.csv,
            "rows": table.time.len(),
            "metrics": table.metrics.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            "detector": {
                "method": "e-divisive means",
                "min_size": detector.min_size,
                "permutations": detector.permutations,
                "significance": detector.significance,
            },
            "changes": changes.iter().map(|c| serde_json::json!({
                "metric": c.metric,
                "row": c.row,
                "time": c.time,
                "attributes": c.attributes.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str()))).collect::<serde_json::Map<_, _>>(),
                "before": c.before,
                "after": c.after,
                "ratio": c.ratio,
                "p_value": c.p_value,
            })).collect::<Vec<_>>(),
        });
        writeln!(out, "{document}")?;
        return Ok(EXIT_OK);
    }
    writeln!(
        out,
        "{}: {} {} in {} {} of {} rows (E-Divisive means, p <= {}, {} or more rows a side)",
        args.csv.display(),
        changes.len(),
        if changes.len() == 1 {
            "change"
        } else {
            "changes"
        },
        table.metrics.len(),
        if table.metrics.len() == 1 {
            "metric"
        } else {
            "metrics"
        },
        table.time.len(),
        detector.significance,
        detector.min_size,
    )?;
    for change in &changes {
        let attributes: Vec<String> = change
            .attributes
            .iter()
            .map(|(name, value)| format!("{name} {value}"))
            .collect();
        writeln!(
            out,
            "  {}: row {} ({}{}{}): {} -> {} ({:+.1} %, p = {:.3})",
            change.metric,
            change.row,
            change.time,
            if attributes.is_empty() { "" } else { ", " },
            attributes.join(", "),
            change.before,
            change.after,
            (change.ratio - 1.0) * 100.0,
            change.p_value,
        )?;
    }
    Ok(EXIT_OK)
}

fn import_command(
    args: ImportArgs,
    workspace_root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let mut store =
        match store_to_write(&args.store, workspace_root, "nothing to import into", err)? {
            Ok(store) => store,
            Err(code) => return Ok(code),
        };
    let mut runs = Vec::new();
    for dir in &args.dirs {
        if !dir.exists() {
            writeln!(err, "error: {}: no such file or directory", dir.display())?;
            return Ok(EXIT_USAGE);
        }
        find_runs(dir, &mut runs);
    }
    runs.sort();
    runs.dedup();
    let (mut written, mut there, mut skipped, mut failed) = (0, 0, 0, 0);
    for run in &runs {
        match Record::read_any(run) {
            Ok(record) => match store.record(&record) {
                Ok(recorded) if recorded.inserted => written += 1,
                Ok(_) => there += 1,
                Err(error) => {
                    writeln!(err, "error: {}: {error}", run.display())?;
                    failed += 1;
                }
            },
            Err(
                profiling_history::record::RecordError::Read(
                    profiling_compare::runs::ReadRunError::Failed { .. },
                )
                | profiling_history::record::RecordError::FailedLoad { .. },
            ) => skipped += 1,
            Err(error) => {
                writeln!(err, "error: {}: {error}", run.display())?;
                failed += 1;
            }
        }
    }
    writeln!(
        out,
        "{}: {written} {} written, {there} there already{}{}",
        store.name(),
        if written == 1 { "run" } else { "runs" },
        if skipped > 0 {
            format!(", {skipped} failed (nothing measured) skipped")
        } else {
            String::new()
        },
        if failed > 0 {
            format!(", {failed} not readable or not written (above)")
        } else {
            String::new()
        }
    )?;
    Ok(if failed > 0 {
        EXIT_TARGET_FAILED
    } else {
        EXIT_OK
    })
}

/// Every run directory at or below `path` (a directory holding a
/// manifest.yaml, or the manifest itself), symbolic links not followed.
fn find_runs(path: &Path, runs: &mut Vec<PathBuf>) {
    let load = profiling_core::driver::session::LOAD_MANIFEST;
    if path.is_file() {
        if path
            .file_name()
            .is_some_and(|n| n == "manifest.yaml" || n == load)
        {
            runs.push(path.parent().unwrap_or(Path::new(".")).to_path_buf());
        }
        return;
    }
    if path.join("manifest.yaml").is_file() || path.join(load).is_file() {
        runs.push(path.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    let mut children: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    children.sort();
    for child in children {
        find_runs(&child, runs);
    }
}

/// The commits of HEAD's first-parent line in `dir`'s repository, oldest
/// first; none outside git.
fn first_parent_line(dir: &Path) -> Vec<String> {
    profiling_core::driver::provenance::git_output(
        dir,
        ["rev-list", "--first-parent", "--reverse", "HEAD"],
    )
    .map(|text| text.lines().map(str::to_owned).collect())
    .unwrap_or_default()
}

/// The series' groups: per machine and config, the series of each range
/// path, the pass first.
struct Group<'a> {
    machine: &'a str,
    config: &'a str,
    series: Vec<(&'a Series, Vec<CommitPoint>)>,
    dirty: usize,
    off_line: usize,
}

fn show(
    args: ShowArgs,
    workspace_root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let mut store = match open_existing(&args.store, workspace_root, err)? {
        Ok(store) => store,
        Err(code) => return Ok(code),
    };
    let Some(target) = &args.target else {
        let profiles = store.profiles()?;
        if args.json {
            writeln!(
                out,
                "{}",
                serde_json::json!({ "store": store.name(), "profiles": profiles })
            )?;
        } else if profiles.is_empty() {
            writeln!(out, "{}: no runs yet", store.name())?;
        } else {
            writeln!(out, "{}: runs of {}", store.name(), profiles.join(", "))?;
        }
        return Ok(EXIT_OK);
    };
    if let Some(format) = &args.export {
        return export(&mut store, target, &args, format, out, err);
    }
    if args.verdicts {
        return write_verdicts(&mut store, target, args.json, out);
    }
    let all = store.series(&SeriesQuery {
        profile: target.clone(),
        metric: args.metric,
        machine: None,
        config: None,
    })?;
    if all.is_empty() {
        let known = store.profiles()?;
        writeln!(
            err,
            "error: {}: no completed runs of `{target}` with {}{}",
            store.name(),
            args.metric.name(),
            if known.is_empty() {
                String::new()
            } else {
                format!(" (it holds runs of {})", known.join(", "))
            }
        )?;
        return Ok(EXIT_USAGE);
    }
    let chosen = match choose(&all, &args) {
        Ok(chosen) => chosen,
        Err(message) => {
            writeln!(err, "error: {message}")?;
            return Ok(EXIT_USAGE);
        }
    };
    let commits = first_parent_line(workspace_root);
    let groups = group(&chosen, &commits, args.dirty);
    if args.changes {
        return write_changes(&args, &mut store, &groups, &commits, out, err);
    }
    if let Some(page) = &args.page {
        let target_dir =
            session::run_root(args.store.output_dir.as_deref(), workspace_root).join(target);
        let path = page
            .clone()
            .unwrap_or_else(|| target_dir.join(crate::report::HISTORY_PAGE_FILE));
        match write_history_page(&path, target, args.metric, &mut store, &groups) {
            Ok(()) => writeln!(err, "page: {}", path.display())?,
            Err(message) => {
                writeln!(err, "error: {message}")?;
                return Ok(EXIT_USAGE);
            }
        }
    }
    if args.json {
        let document = serde_json::json!({
            "store": store.name(),
            "profile": target,
            "metric": args.metric,
            "groups": groups.iter().map(|g| group_json(&mut store, g)).collect::<Vec<_>>(),
        });
        writeln!(out, "{document}")?;
        return Ok(EXIT_OK);
    }
    for (k, group) in groups.iter().enumerate() {
        if k > 0 {
            writeln!(out)?;
        }
        write_table(
            target,
            args.metric,
            &mut store,
            group,
            args.last as usize,
            out,
        )?;
    }
    Ok(EXIT_OK)
}

/// The newest completed run of `rows` in Bencher Metric Format, for
/// `bencher run --file`: a benchmark per range path (`TARGET/PATH`, the
/// pass as `TARGET/pass`), its `latency` the median in nanoseconds with
/// the median's interval as its bounds; with memory, `alloc-bytes` and
/// `peak-bytes` too. An empty object when no run completed.
fn bmf(rows: &[profiling_history::FlatRow]) -> serde_json::Value {
    let newest = rows
        .iter()
        .filter(|r| r.status == "completed")
        .map(|r| (&r.started_at, &r.run_id, &r.machine, &r.config))
        .max();
    let mut document = serde_json::Map::new();
    let Some(newest) = newest else {
        return serde_json::Value::Object(document);
    };
    for row in rows
        .iter()
        .filter(|r| (&r.started_at, &r.run_id, &r.machine, &r.config) == newest)
    {
        let mut measures = serde_json::Map::new();
        let mut latency = serde_json::json!({ "value": row.p50_ns as f64 });
        if let (Some(low), Some(high)) = (row.low_ns, row.high_ns) {
            latency["lower_value"] = serde_json::json!(low as f64);
            latency["upper_value"] = serde_json::json!(high as f64);
        }
        measures.insert("latency".to_owned(), latency);
        for (name, value) in [
            ("alloc-bytes", row.alloc_bytes),
            ("peak-bytes", row.peak_bytes),
        ] {
            if let Some(value) = value {
                measures.insert(
                    name.to_owned(),
                    serde_json::json!({ "value": value as f64 }),
                );
            }
        }
        document.insert(
            format!("{}/{}", row.profile, row.path),
            serde_json::Value::Object(measures),
        );
    }
    serde_json::Value::Object(document)
}

/// `history TARGET --export FORMAT`: every stored figure, flat, or with
/// `--samples` every kept sample.
fn export(
    store: &mut Store,
    target: &str,
    args: &ShowArgs,
    format: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let mut rows = store.rows(target, None, None)?;
    // A fingerprint or hash, or the first digits of one.
    for (given, of, what) in [
        (
            &args.machine,
            (|r: &profiling_history::FlatRow| r.machine.clone()) as fn(&_) -> String,
            "machine",
        ),
        (
            &args.config,
            |r: &profiling_history::FlatRow| r.config.clone(),
            "config",
        ),
    ] {
        let Some(given) = given else { continue };
        let mut matching: Vec<String> = rows
            .iter()
            .map(of)
            .filter(|v| v.starts_with(given.as_str()))
            .collect();
        matching.sort_unstable();
        matching.dedup();
        if matching.len() > 1 {
            writeln!(
                err,
                "error: {what} `{given}` is the start of {}: give more of it",
                matching.join(", ")
            )?;
            return Ok(EXIT_USAGE);
        }
        rows.retain(|r| matching.contains(&of(r)));
    }
    if rows.is_empty() {
        writeln!(
            err,
            "error: {}: no runs of `{target}`{}",
            store.name(),
            if args.machine.is_some() || args.config.is_some() {
                " on that machine and config"
            } else {
                ""
            }
        )?;
        return Ok(EXIT_USAGE);
    }
    if args.samples {
        return export_samples(store, target, &rows, format, out, err);
    }
    if format == "json" {
        writeln!(out, "{}", serde_json::to_string(&rows)?)?;
        return Ok(EXIT_OK);
    }
    if format == "bmf" {
        writeln!(out, "{}", bmf(&rows))?;
        return Ok(EXIT_OK);
    }
    if format == "parquet" {
        out.write_all(&profiling_history::FlatRow::parquet(&rows))?;
        return Ok(EXIT_OK);
    }
    write_csv(
        &profiling_history::FlatRow::COLUMNS,
        rows.iter().map(profiling_history::FlatRow::fields),
        out,
    )?;
    Ok(EXIT_OK)
}

/// `--export FORMAT --samples`: every kept sample of the runs `rows` holds
/// (the target's, on the machines and configs chosen).
fn export_samples(
    store: &mut Store,
    target: &str,
    rows: &[profiling_history::FlatRow],
    format: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    if format == "bmf" {
        writeln!(
            err,
            "error: --samples: Bencher Metric Format holds figures, not samples: give --export csv, json or parquet"
        )?;
        return Ok(EXIT_USAGE);
    }
    let chosen: std::collections::HashSet<(&str, &str)> = rows
        .iter()
        .map(|r| (r.machine.as_str(), r.config.as_str()))
        .collect();
    let (mut samples, sketched) = store.sample_rows(target, None, None)?;
    samples.retain(|s| chosen.contains(&(s.machine.as_str(), s.config.as_str())));
    if sketched > 0 {
        writeln!(
            err,
            "note: {sketched} samples past the ones the runs kept are known only by their histogram bucket, and have no row"
        )?;
    }
    match format {
        "json" => writeln!(out, "{}", serde_json::to_string(&samples)?)?,
        "parquet" => out.write_all(&profiling_history::SampleRow::parquet(&samples))?,
        _ => write_csv(
            &profiling_history::SampleRow::COLUMNS,
            samples.iter().map(profiling_history::SampleRow::fields),
            out,
        )?,
    }
    Ok(EXIT_OK)
}

/// The series `args` asks for: `--range`, `--machine` and `--config`
/// applied, prefixes of fingerprints and hashes accepted when they name
/// one.
fn choose<'a>(all: &'a [Series], args: &ShowArgs) -> Result<Vec<&'a Series>, String> {
    choose_by(all, &args.machine, &args.config, &args.ranges)
}

/// The series of `all` on the machine and config whose fingerprints start
/// with `machine` and `config` (each must name one), of `ranges` (all
/// when empty).
fn choose_by<'a>(
    all: &'a [Series],
    machine: &Option<String>,
    config: &Option<String>,
    ranges: &[String],
) -> Result<Vec<&'a Series>, String> {
    let pick = |given: &Option<String>, of: fn(&Series) -> &str, what: &str| {
        let Some(given) = given else {
            return Ok(None);
        };
        let mut found: Vec<&str> = all
            .iter()
            .map(of)
            .filter(|v| v.starts_with(given.as_str()))
            .collect();
        found.sort_unstable();
        found.dedup();
        match found.as_slice() {
            [one] => Ok(Some(one.to_string())),
            [] => Err(format!("no runs of that target on {what} `{given}`")),
            many => Err(format!(
                "{what} `{given}` is the start of {}: give more of it",
                many.join(", ")
            )),
        }
    };
    let machine = pick(machine, |s| &s.machine, "machine")?;
    let config = pick(config, |s| &s.config, "config")?;
    for range in ranges {
        if !all.iter().any(|s| &s.path == range) {
            let mut paths: Vec<&str> = all.iter().map(|s| s.path.as_str()).collect();
            paths.sort_unstable();
            paths.dedup();
            return Err(format!(
                "no range `{range}` in the runs of that target: it has {}",
                paths.join(", ")
            ));
        }
    }
    Ok(all
        .iter()
        .filter(|s| machine.as_ref().is_none_or(|m| &s.machine == m))
        .filter(|s| config.as_ref().is_none_or(|c| &s.config == c))
        .filter(|s| ranges.is_empty() || ranges.contains(&s.path))
        .collect())
}

fn group<'a>(series: &[&'a Series], commits: &[String], dirty: bool) -> Vec<Group<'a>> {
    let mut groups: Vec<Group<'a>> = Vec::new();
    for &s in series {
        let along = s.along(commits, dirty);
        let points = by_commit(&along.points);
        match groups
            .iter_mut()
            .find(|g| g.machine == s.machine && g.config == s.config)
        {
            Some(g) => {
                g.dirty = g.dirty.max(along.dirty);
                g.off_line = g.off_line.max(along.off_line);
                g.series.push((s, points));
            }
            None => groups.push(Group {
                machine: &s.machine,
                config: &s.config,
                series: vec![(s, points)],
                dirty: along.dirty,
                off_line: along.off_line,
            }),
        }
    }
    groups
}

/// Writes the page of `groups` (with the changes found in them) to `path`.
fn write_history_page(
    path: &Path,
    target: &str,
    metric: Metric,
    store: &mut Store,
    groups: &[Group<'_>],
) -> Result<(), String> {
    let (found, _) = detect(groups, &Detector::default());
    let page_dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let page_dir = std::fs::canonicalize(&page_dir).unwrap_or(page_dir);
    let machines: Vec<String> = groups
        .iter()
        .map(|g| describe_machine(store, g.machine))
        .collect();
    let view = crate::report::HistoryView {
        target,
        metric,
        store: store.name(),
        changes: &found,
        page_dir: &page_dir,
        groups: groups
            .iter()
            .zip(machines)
            .map(|(g, machine_text)| crate::report::HistoryGroup {
                machine: g.machine,
                machine_text,
                config: g.config,
                series: &g.series,
            })
            .collect(),
    };
    let html = crate::report::history_page(&view);
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    crate::report::write_page(path, &html)
        .map(|_| ())
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn value_text(metric: Metric, value: u64) -> String {
    if metric.is_bytes() {
        profiling_core::data::human_bytes(value)
    } else {
        format_ns(value)
    }
}

fn short(commit: Option<&str>) -> String {
    commit.map_or_else(
        || "(no commit)".to_owned(),
        |c| c.chars().take(10).collect(),
    )
}

fn describe_machine(store: &mut Store, fingerprint: &str) -> String {
    match store.machine(fingerprint) {
        Ok(Some(m)) => {
            let mut parts = vec![format!("{}, {} cores", m.cpu_model, m.cores)];
            if !m.governor.is_empty() {
                parts.push(format!("governor {}", m.governor));
            }
            if !m.kernel.is_empty() {
                parts.push(format!("kernel {}", m.kernel));
            }
            parts.push(m.backend.clone());
            if !m.gpus.is_empty() {
                parts.push(m.gpus.clone());
            }
            if !m.gpu_driver.is_empty() {
                parts.push(format!("driver {}", m.gpu_driver));
            }
            format!("{fingerprint} ({})", parts.join(", "))
        }
        _ => fingerprint.to_owned(),
    }
}

/// One group as a table: a row per range path (the pass first, each
/// range under the one it runs in), a column per commit, the last `last`
/// of them, oldest first.
fn write_table(
    target: &str,
    metric: Metric,
    store: &mut Store,
    group: &Group<'_>,
    last: usize,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    // The columns: the commits of the first series (the pass's, which
    // every run has), in its order, then commits only the others have;
    // outside git, each run of the first series.
    let mut columns: Vec<(Option<String>, String, usize)> = group.series[0]
        .1
        .iter()
        .map(|p| (p.commit.clone(), column_label(p), p.runs.len()))
        .collect();
    for (_, points) in &group.series[1..] {
        for point in points {
            if point.commit.is_some() && !columns.iter().any(|(c, _, _)| c == &point.commit) {
                columns.push((point.commit.clone(), column_label(point), point.runs.len()));
            }
        }
    }
    let shown = columns.len().saturating_sub(last);
    writeln!(
        out,
        "{target}: {} per commit{}; machine {}, config {}",
        metric.name(),
        if shown > 0 {
            format!(
                ", the last {last} of {} (--last N shows more)",
                columns.len()
            )
        } else {
            String::new()
        },
        describe_machine(store, group.machine),
        group.config
    )?;
    let columns = &columns[shown..];
    let mut table: Vec<Vec<String>> = Vec::new();
    let mut header = vec!["commit".to_owned()];
    header.extend(columns.iter().map(|(_, label, _)| label.clone()));
    table.push(header);
    let mut runs = vec!["runs".to_owned()];
    runs.extend(columns.iter().map(|(_, _, n)| n.to_string()));
    table.push(runs);
    for (series, points) in &group.series {
        let indent = if series.part == "pass" {
            0
        } else {
            series.depth as usize + 1
        };
        let mut line = vec![format!("{}{}", "  ".repeat(indent), series.name)];
        for (k, (commit, _, _)) in columns.iter().enumerate() {
            let cell = if commit.is_some() {
                points.iter().find(|p| &p.commit == commit)
            } else {
                points.get(shown + k)
            };
            line.push(cell.map_or_else(|| "-".to_owned(), |p| value_text(metric, p.value)));
        }
        table.push(line);
    }
    let widths: Vec<usize> = (0..table[0].len())
        .map(|c| {
            table
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &table {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, &width))| {
                if c == 0 {
                    format!("{cell:<width$}")
                } else {
                    format!("{cell:>width$}")
                }
            })
            .collect();
        writeln!(out, "  {}", cells.join("  ").trim_end())?;
    }
    write_left_out(group, out)
}

/// A column's heading: the commit's first ten digits, or outside git the
/// run's id.
fn column_label(point: &CommitPoint) -> String {
    match &point.commit {
        Some(commit) => commit.chars().take(10).collect(),
        None => point
            .runs
            .first()
            .map_or_else(String::new, |run| run.run_id.clone()),
    }
}

fn write_left_out(group: &Group<'_>, out: &mut dyn Write) -> std::io::Result<()> {
    let mut left = Vec::new();
    if group.dirty > 0 {
        left.push(format!(
            "{} of a dirty tree (--dirty keeps them)",
            runs_word(group.dirty)
        ));
    }
    if group.off_line > 0 {
        left.push(format!(
            "{} of commits off HEAD's first-parent line",
            runs_word(group.off_line)
        ));
    }
    if !left.is_empty() {
        writeln!(out, "  left out: {}", left.join("; "))?;
    }
    Ok(())
}

fn runs_word(n: usize) -> String {
    format!("{n} {}", if n == 1 { "run" } else { "runs" })
}

fn group_json(store: &mut Store, group: &Group<'_>) -> serde_json::Value {
    serde_json::json!({
        "machine": store.machine(group.machine).ok().flatten(),
        "machine_fingerprint": group.machine,
        "config": group.config,
        "left_out": {"dirty": group.dirty, "off_line": group.off_line},
        "series": group.series.iter().map(|(s, points)| serde_json::json!({
            "part": s.part,
            "path": s.path,
            "name": s.name,
            "depth": s.depth,
            "commits": points,
        })).collect::<Vec<_>>(),
    })
}

fn percent(ratio: f64) -> String {
    if ratio.is_finite() {
        format!("{:+.1} %", (ratio - 1.0) * 100.0)
    } else {
        "unbounded".to_owned()
    }
}

/// The changes of every series of `groups`, and how many series there
/// were.
fn detect(groups: &[Group<'_>], detector: &Detector) -> (Vec<Change>, usize) {
    let mut found: Vec<Change> = Vec::new();
    let mut series_count = 0;
    for group in groups {
        let prepared: Vec<_> = group
            .series
            .iter()
            .map(|(s, points)| ((*s).clone(), points.clone()))
            .collect();
        series_count += prepared.len();
        found.extend(changes::find(&prepared, detector));
    }
    (found, series_count)
}

/// The changes `--fail-on` fails on: regressions at least that large,
/// after `--since` when given; `Err` with the message when `--since` is
/// not a commit of the line.
fn failing<'c>(
    args: &ShowArgs,
    found: &'c [Change],
    commits: &[String],
) -> Result<Vec<&'c Change>, String> {
    let Some(threshold) = args.fail_on else {
        return Ok(Vec::new());
    };
    let since = match &args.since {
        None => None,
        Some(given) => Some(
            commits
                .iter()
                .position(|c| c.starts_with(given.as_str()))
                .ok_or_else(|| {
                    format!("--since {given}: not a commit of HEAD's first-parent line")
                })?,
        ),
    };
    let after_since = |change: &Change| match (since, &change.commit) {
        (None, _) => true,
        (Some(at), Some(commit)) => commits
            .iter()
            .position(|c| c == commit)
            .is_some_and(|i| i > at),
        (Some(_), None) => false,
    };
    Ok(found
        .iter()
        .filter(|c| c.is_regression() && c.ratio - 1.0 >= threshold && after_since(c))
        .collect())
}

/// `history TARGET --changes`: every change found, newest first, and with
/// `--fail-on`, exit 3 on a regression at least that large.
fn write_changes(
    args: &ShowArgs,
    store: &mut Store,
    groups: &[Group<'_>],
    commits: &[String],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let detector = Detector::default();
    let (found, series_count) = detect(groups, &detector);
    let failing = match failing(args, &found, commits) {
        Ok(failing) => failing,
        Err(message) => {
            writeln!(err, "error: {message}")?;
            return Ok(EXIT_USAGE);
        }
    };
    let code = if failing.is_empty() {
        EXIT_OK
    } else {
        EXIT_REGRESSION
    };
    if args.json {
        let document = serde_json::json!({
            "store": store.name(),
            "profile": args.target,
            "metric": args.metric,
            "detector": {
                "method": "e-divisive means",
                "min_size": detector.min_size,
                "permutations": detector.permutations,
                "significance": detector.significance,
            },
            "series": series_count,
            "changes": found,
            "failing": failing.len(),
        });
        writeln!(out, "{document}")?;
        return Ok(code);
    }
    let target = args.target.as_deref().unwrap_or_default();
    let method = format!(
        "{}; E-Divisive means, p <= {}",
        args.metric.name(),
        detector.significance
    );
    if found.is_empty() {
        writeln!(
            out,
            "{target}: no change in {series_count} series ({method})"
        )?;
        return Ok(code);
    }
    let noun = if found.len() == 1 {
        "change"
    } else {
        "changes"
    };
    writeln!(
        out,
        "{target}: {} {noun} in {series_count} series ({method}), newest first:",
        found.len()
    )?;
    for change in &found {
        write_change(args.metric, change, out)?;
    }
    if let Some(threshold) = args.fail_on {
        let at_least = percent(1.0 + threshold);
        match failing.len() {
            0 => writeln!(out, "no regression of {at_least} or more")?,
            1 => writeln!(out, "1 regression of {at_least} or more")?,
            n => writeln!(out, "{n} regressions of {at_least} or more")?,
        }
    }
    Ok(code)
}

/// One change as a line of `--changes`.
fn write_change(metric: Metric, change: &Change, out: &mut dyn Write) -> std::io::Result<()> {
    let also = if change.also.is_empty() {
        String::new()
    } else {
        format!("; moved with it: {}", change.also.join(", "))
    };
    writeln!(
        out,
        "  {}  {}  {} [{}, {}]  {} -> {}  p = {:.3}  (commit {} of {}, machine {}, config {}){also}",
        short(change.commit.as_deref()),
        change.label(),
        percent(change.ratio),
        percent(change.low),
        percent(change.high),
        value_text(metric, change.before),
        value_text(metric, change.after),
        change.p_value,
        change.index + 1,
        change.commits,
        change.machine,
        change.config,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handoff_names_the_store_as_the_store_does() {
        assert_eq!(crate::handoff::STORE_ENV, profiling_history::store::ENV);
        assert_eq!(
            crate::handoff::STORE_FILE,
            profiling_history::store::DEFAULT_FILE
        );
    }

    #[test]
    fn a_threshold_is_a_positive_percentage() {
        assert_eq!(parse_percent("+5%"), Ok(0.05));
        assert_eq!(parse_percent("5%"), Ok(0.05));
        assert_eq!(parse_percent("12.5"), Ok(0.125));
        for bad in ["-3%", "0%", "five", "", "inf"] {
            assert!(parse_percent(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_location_is_a_path_sqlite_or_off_and_urls_keep_their_secrets() {
        let base = Path::new("/work");
        assert_eq!(
            Location::parse("runs/h.sqlite", base).unwrap(),
            Location::Sqlite(PathBuf::from("/work/runs/h.sqlite"))
        );
        assert_eq!(
            Location::parse("sqlite:///tmp/h.sqlite", base).unwrap(),
            Location::Sqlite(PathBuf::from("/tmp/h.sqlite"))
        );
        assert_eq!(Location::parse("off", base).unwrap(), Location::Off);
        let postgres = Location::parse("postgres://ci:hunter2@db.example/perf", base).unwrap();
        assert_eq!(
            postgres,
            Location::Postgres("postgres://ci:hunter2@db.example/perf".to_owned())
        );
        for shown in [postgres.to_string(), format!("{postgres:?}")] {
            assert!(
                shown.contains("postgres://ci:***@db.example/perf"),
                "{shown}"
            );
            assert!(!shown.contains("hunter2"), "{shown}");
        }
        let refused = Location::parse("mysql://ci:hunter2@db.example/perf", base)
            .unwrap_err()
            .to_string();
        assert!(!refused.contains("hunter2"), "{refused}");
        assert!(
            refused.starts_with("history store `mysql://ci:***@db.example/perf`: "),
            "{refused}"
        );
    }
}
