//! `profile-cli report`: the page of a run, of a comparison of runs, or of
//! a sweep, written beside what it shows (or to `-o FILE`), its path
//! printed.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use profiling_compare as compare;
use profiling_compare::runs::{self, LoadedRun};
use profiling_core::driver::session::ProfileRuns;

use crate::compare::{checked_options, resolve_all, usage_error};
use crate::decide::DecideArgs;
use crate::exit::{EXIT_OK, EXIT_USAGE};

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// One run, for its page; or a base and candidates, for a comparison page. Each is a run
    /// directory, its manifest.yaml, PROFILE@RUN_ID, or PROFILE@latest.
    #[arg(value_name = "RUN", required = true)]
    runs: Vec<String>,
    /// Write the page to FILE (default: report.html in the run's directory; for a comparison,
    /// report-vs-<base run id>.html in the first candidate's).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Replace FILE given with -o when it exists (by default it is refused).
    #[arg(long)]
    force: bool,
    /// Open the page with the desktop's opener (xdg-open, open) when there is one.
    #[arg(long)]
    open: bool,
    /// Find PROFILE@RUN_ID and PROFILE@latest in DIR/PROFILE/runs/.
    #[arg(long, value_name = "DIR")]
    output_dir: Option<PathBuf>,
    /// Compare runs of different targets.
    #[arg(long)]
    allow_different_targets: bool,
    #[command(flatten)]
    decide: DecideArgs,
}

impl ReportArgs {
    /// Looks for runs in `dir` when `--output-dir` does not say.
    pub(crate) fn default_output_dir(&mut self, dir: PathBuf) {
        self.output_dir.get_or_insert(dir);
    }

    /// Colours the verdicts as the global `--color` says.
    pub(crate) fn color(&mut self, color: crate::decide::ColorChoice) {
        self.decide.color = color;
    }
}

/// A page, and the path it goes to unless `-o` names another.
struct Page {
    html: String,
    default_path: PathBuf,
}

/// A page, or the exit code once what kept it from being made was said
/// on stderr.
type Built = anyhow::Result<Result<Page, u8>>;

/// `profile-cli report`.
pub fn report_command(
    args: ReportArgs,
    profiles: &[ProfileRuns],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let Some(options) = checked_options(&args.decide, err)? else {
        return Ok(EXIT_USAGE);
    };
    let output_dir = args.output_dir.as_deref();
    let paths = match resolve_all(&args.runs, |a| runs::resolve_path(a, profiles, output_dir)) {
        Ok(paths) => paths,
        Err(error) => return usage_error(err, &error),
    };
    let sweep_dir = (paths.len() == 1).then(|| dir_of(&paths[0])).filter(|dir| {
        dir.join(profiling_core::driver::sweep::document::SWEEP_FILE)
            .is_file()
            && !dir.join("manifest.yaml").is_file()
    });
    let built = if let Some(dir) = sweep_dir {
        sweep_page(&dir, err)?
    } else if paths.len() == 1 {
        run_page(&dir_of(&paths[0]), err)?
    } else {
        comparison_page(&paths, &options, args.allow_different_targets, err)?
    };
    let page = match built {
        Ok(page) => page,
        Err(code) => return Ok(code),
    };
    let Some(path) = output_path(args.output, args.force, page.default_path, err)? else {
        return Ok(EXIT_USAGE);
    };
    if let Err(error) = super::write_page(&path, &page.html) {
        writeln!(err, "error: cannot write {}: {error}", path.display())?;
        return Ok(crate::exit::EXIT_TARGET_FAILED);
    }
    let path = profiling_core::driver::session::absolute(&path);
    writeln!(out, "report: {}", path.display())?;
    if args.open {
        open_page(&path, err)?;
    }
    Ok(EXIT_OK)
}

/// The directory `path` names, or the one its file is in.
fn dir_of(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.to_path_buf()
    } else {
        path.parent().unwrap_or(Path::new(".")).to_path_buf()
    }
}

/// The page of the sweep in `dir`.
fn sweep_page(dir: &Path, err: &mut dyn Write) -> Built {
    let document = match profiling_core::driver::sweep::document::SweepDocument::read(dir) {
        Ok(document) => document,
        Err(message) => {
            writeln!(err, "error: {message}")?;
            return Ok(Err(EXIT_USAGE));
        }
    };
    Ok(Ok(Page {
        html: super::sweep_page(&document),
        default_path: dir.join(super::SWEEP_PAGE_FILE),
    }))
}

/// The page of the run in `dir`, without the plots that need its samples
/// when it has none (and a note saying so).
fn run_page(dir: &Path, err: &mut dyn Write) -> Built {
    let (manifest, samples) = match super::read_run(dir) {
        Ok(read) => read,
        Err(error) => return usage_error(err, &error).map(Err),
    };
    if samples.is_none() {
        writeln!(
            err,
            "note: {} has no samples.bin: the page leaves out the plots that need them",
            dir.display()
        )?;
    }
    let html = super::run_page(&super::RunPage {
        dir,
        manifest: &manifest,
        samples: samples.as_ref(),
        comparison: None,
    });
    Ok(Ok(Page {
        html,
        default_path: dir.join(super::REPORT_FILE),
    }))
}

/// The page comparing each candidate of `paths` (all but the first) with
/// the base (the first), for the first candidate's directory.
fn comparison_page(
    paths: &[PathBuf],
    options: &compare::Options,
    allow_different_targets: bool,
    err: &mut dyn Write,
) -> Built {
    let mut loaded = Vec::new();
    for path in paths {
        match runs::load(path) {
            Ok(run) => loaded.push(run),
            Err(error) => return usage_error(err, &error).map(Err),
        }
    }
    let mut comparisons = Vec::new();
    for candidate in &loaded[1..] {
        match compare::compare(&loaded[0], candidate, options, allow_different_targets) {
            Ok(comparison) => comparisons.push(comparison),
            Err(error) => {
                writeln!(err, "error: {error}")?;
                return Ok(Err(EXIT_USAGE));
            }
        }
    }
    let runs: Vec<&LoadedRun> = loaded.iter().collect();
    let html = super::comparison_page(&runs, &comparisons, options);
    let default_path = loaded[1]
        .dir
        .join(format!("report-vs-{}.html", loaded[0].run_id));
    Ok(Ok(Page { html, default_path }))
}

/// Where the page goes: `output` where given, which is refused (None, said
/// on stderr) when it exists and `force` is not; else `default_path`.
fn output_path(
    output: Option<PathBuf>,
    force: bool,
    default_path: PathBuf,
    err: &mut dyn Write,
) -> std::io::Result<Option<PathBuf>> {
    match output {
        Some(path) => {
            if path.exists() && !force {
                writeln!(
                    err,
                    "error: {} exists: give --force to replace it, or another -o FILE",
                    path.display()
                )?;
                return Ok(None);
            }
            Ok(Some(path))
        }
        None => Ok(Some(default_path)),
    }
}

/// Opens `path` with the desktop's opener, or says there is none.
fn open_page(path: &Path, err: &mut dyn Write) -> std::io::Result<()> {
    let openers: &[&str] = if cfg!(target_os = "macos") {
        &["open"]
    } else {
        &["xdg-open", "gio"]
    };
    for opener in openers {
        let mut command = std::process::Command::new(opener);
        if *opener == "gio" {
            command.arg("open");
        }
        let spawned = command
            // Absolute: a page named `-x.html` is not an option.
            .arg(std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if spawned.is_ok() {
            return Ok(());
        }
    }
    writeln!(
        err,
        "note: no desktop opener here (xdg-open): open {} in a browser",
        path.display()
    )
}
