//! `profile-cli baselines`: the baselines saved with `run --save-baseline
//! NAME`, of one profile or of all, as a table or a JSON array; and what
//! `run --baseline` and `run --save-baseline` check before a run starts.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use profiling_compare::runs::{self, LoadedRun, ReadRunError};
use profiling_core::driver::session::ProfileRuns;
use serde::Serialize;

use crate::compare::usage_error;
use crate::exit::EXIT_OK;
use crate::summary::format_ns;

#[derive(Debug, Args)]
pub struct BaselinesArgs {
    /// The profile (or target) whose baselines to list (default: every profile of this build).
    profile: Option<String>,
    /// List the baselines under DIR/PROFILE/, as `run --output-dir DIR` saves them.
    #[arg(long, value_name = "DIR")]
    output_dir: Option<PathBuf>,
    /// Print a JSON array.
    #[arg(long)]
    json: bool,
}

impl BaselinesArgs {
    /// Looks for baselines in `dir` when `--output-dir` does not say.
    pub(crate) fn default_output_dir(&mut self, dir: PathBuf) {
        self.output_dir.get_or_insert(dir);
    }
}

/// One saved baseline, as the table and the JSON array show it.
#[derive(Debug, Serialize)]
struct ListedBaseline {
    profile: String,
    name: String,
    run_id: String,
    saved_at: String,
    /// The run directory it was saved from.
    from: PathBuf,
    path: PathBuf,
    /// Its pass median, when its samples read back.
    pass_median_ns: Option<u64>,
}

/// What `baselines` found: the baselines of the profiles asked about.
#[derive(Debug)]
struct Listing {
    /// The profile asked about (None: every profile).
    profile: Option<String>,
    baselines: Vec<ListedBaseline>,
}

impl Listing {
    /// The baselines of `selected`, in profile order, each profile's by name.
    fn of(profile: Option<String>, selected: &[&ProfileRuns]) -> Listing {
        let mut baselines = Vec::new();
        for ProfileRuns {
            profile,
            runs: runs_dir,
            ..
        } in selected
        {
            let dir = runs::baselines_dir_of_runs(runs_dir);
            for info in runs::list_baselines(&dir) {
                let path = dir.join(&info.name);
                let pass_median_ns = runs::load(&path).ok().and_then(|run| pass_median(&run));
                baselines.push(ListedBaseline {
                    profile: profile.clone(),
                    name: info.name,
                    run_id: info.run_id,
                    saved_at: info.saved_at,
                    from: info.from,
                    path,
                    pass_median_ns,
                });
            }
        }
        Listing { profile, baselines }
    }

    /// The JSON array (an object per baseline, its keys in order).
    fn json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(&serde_json::to_value(&self.baselines)?)
    }

    /// The table, or on `err` how to save one when there is none.
    fn table(&self, out: &mut dyn Write, err: &mut dyn Write) -> std::io::Result<()> {
        if self.baselines.is_empty() {
            let whose = self.profile.as_ref().map_or_else(
                || "no profile of this build".to_owned(),
                |p| format!("profile `{p}`"),
            );
            return writeln!(
                err,
                "{whose} has baselines: `profile-cli run NAME --save-baseline BASELINE` saves one"
            );
        }
        let rows: Vec<[String; 5]> = self
            .baselines
            .iter()
            .map(|b| {
                [
                    format!("{}  {}", b.profile, b.name),
                    b.run_id.clone(),
                    b.saved_at.clone(),
                    b.pass_median_ns
                        .map_or("-".to_owned(), |m| format!("pass median {}", format_ns(m))),
                    b.path.display().to_string(),
                ]
            })
            .collect();
        let widths: Vec<usize> = (0..4)
            .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        for row in &rows {
            writeln!(
                out,
                "{:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}  {}",
                row[0],
                row[1],
                row[2],
                row[3],
                row[4],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2],
                w3 = widths[3]
            )?;
        }
        Ok(())
    }
}

/// `profile-cli baselines`.
pub fn baselines_command(
    args: BaselinesArgs,
    profiles: &[ProfileRuns],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let profiles = match &args.output_dir {
        Some(dir) => profiles_under(dir),
        None => profiles.to_vec(),
    };
    let selected: Vec<&ProfileRuns> = match &args.profile {
        Some(name) => {
            let found = profiles
                .iter()
                .find(|p| p.profile == *name)
                .or_else(|| profiles.iter().find(|p| p.target == *name));
            match found {
                Some(found) => vec![found],
                None => {
                    let error = ReadRunError::UnknownProfile {
                        name: name.clone(),
                        known: profiles.iter().map(|p| p.profile.clone()).collect(),
                    };
                    return usage_error(err, &error);
                }
            }
        }
        None => profiles.iter().collect(),
    };
    let listing = Listing::of(args.profile, &selected);
    if args.json {
        writeln!(out, "{}", listing.json()?)?;
    } else {
        listing.table(out, err)?;
    }
    Ok(EXIT_OK)
}

/// The profiles under an output directory: each `DIR/PROFILE/` with runs
/// or baselines.
fn profiles_under(dir: &Path) -> Vec<ProfileRuns> {
    let mut found: Vec<ProfileRuns> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            ProfileRuns {
                profile: name.clone(),
                target: name,
                runs: entry.path().join("runs"),
            }
        })
        .collect();
    found.sort();
    found
}

fn pass_median(run: &LoadedRun) -> Option<u64> {
    profiling_compare::statistics::lower_median(&run.samples.passes.sorted_values())
}

/// What `run --baseline NAME` and `run --save-baseline NAME` check before
/// the run starts, so that nothing runs for a request that is refused.
pub fn check_run_baselines(
    runs_dir: &Path,
    profile: &str,
    baseline: Option<&str>,
    save: Option<&str>,
    force: bool,
) -> Result<(), ReadRunError> {
    let dir = runs::baselines_dir_of_runs(runs_dir);
    if let Some(name) = baseline {
        // Read now: a baseline that is missing or unreadable stops the run
        // before it starts.
        runs::find_baseline(&dir, profile, name)?;
    }
    if let Some(name) = save {
        runs::check_baseline_free(&dir, profile, name, force)?;
    }
    Ok(())
}
