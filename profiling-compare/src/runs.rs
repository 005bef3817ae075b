//! Finding and reading the runs a comparison names: run directories,
//! manifests, `PROFILE@RUN_ID`, `PROFILE@latest`, and named baselines.
//!
//! A run is read from its `manifest.yaml` and the `samples.bin` beside it,
//! wherever the directory now is. A baseline is a copy of a run's manifest
//! and samples in `<profile>/baselines/<NAME>/`, beside the profile's
//! `runs/`, with a `baseline.yaml` saying where it came from: deleting or
//! replacing the run leaves the baseline whole.

use std::path::{Path, PathBuf};

use serde_yaml::Value;

use profiling_core::driver::config;
use profiling_core::driver::manifest::{Manifest, SCHEMA_VERSION};
use profiling_core::driver::run_samples::{RunSamples, SamplesError, SAMPLES_FILE};
use profiling_core::driver::session::ProfileRuns;

pub use profiling_core::driver::baselines::{
    baselines_dir_of_runs, check_baseline_exists, check_baseline_free, check_baseline_name,
    list_baselines, read_baseline_name, save_baseline, BaselineError, BaselineInfo,
};

/// A YAML value as an error names it: short, on one line.
fn describe(value: &Value) -> String {
    let text = serde_yaml::to_string(value).unwrap_or_default();
    let text = text.trim();
    if text.chars().count() > 40 {
        format!("`{}...`", text.chars().take(40).collect::<String>())
    } else {
        format!("`{text}`")
    }
}

/// Why a saved run cannot be read or compared. Each names the path or the
/// name involved. (A run that fails while it runs is the runtime's
/// [`RunError`](profiling_core::driver::runner::RunError).)
#[derive(Debug, thiserror::Error)]
pub enum ReadRunError {
    #[error("{0}: no such file or directory, and not PROFILE@RUN_ID or PROFILE@latest")]
    NoSuchPath(String),
    #[error("{}: not a run: it holds no manifest.yaml", .0.display())]
    NotARun(PathBuf),
    #[error("{}: a load (`profile-cli load` wrote its load.yaml), not a run: its figures are in load.yaml and its page is load.html beside it", .0.display())]
    ALoad(PathBuf),
    #[error("{}: not a run manifest: {reason}", .path.display())]
    NotAManifest { path: PathBuf, reason: String },
    #[error("{}: run `{run_id}` of `{profile}` was made before runs kept their samples (manifest schema version {schema}): re-run it to compare it", .manifest.display())]
    NoSamples {
        manifest: PathBuf,
        profile: String,
        run_id: String,
        schema: u64,
    },
    #[error("{}: {source}", .path.display())]
    Samples { path: PathBuf, source: SamplesError },
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("run `{run_id}` of `{profile}` failed, so its timings mean nothing: {reason} ({})", .manifest.display())]
    Failed {
        manifest: PathBuf,
        profile: String,
        run_id: String,
        reason: String,
    },
    #[error("no profile `{name}`: {}", known_text(.known))]
    UnknownProfile { name: String, known: Vec<String> },
    #[error("profile `{profile}` has no run `{run_id}` in {}{}", .runs.display(), leftovers_text(.run_id, .leftovers))]
    UnknownRun {
        profile: String,
        run_id: String,
        runs: PathBuf,
        /// What a write of that run stopped half way left beside it.
        leftovers: Vec<PathBuf>,
    },
    #[error("profile `{profile}` has no completed run in {} for @latest", .runs.display())]
    NoLatest { profile: String, runs: PathBuf },
    #[error(transparent)]
    Baseline(#[from] BaselineError),
}

fn known_text(known: &[String]) -> String {
    if known.is_empty() {
        "no target is registered in this build".to_owned()
    } else {
        format!("the profiles of this build are {}", known.join(", "))
    }
}

fn leftovers_text(run_id: &str, leftovers: &[PathBuf]) -> String {
    if leftovers.is_empty() {
        return String::new();
    }
    let names: Vec<String> = leftovers.iter().map(|p| p.display().to_string()).collect();
    format!(
        "; a write of it stopped half way and left {}: the next `profile-cli run` with --run-id {run_id} restores the earlier run from them (or removes what is incomplete)",
        names.join(", ")
    )
}

/// How a run ended, as its manifest says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Completed,
    Interrupted,
    Failed,
}

/// A run read back: its manifest as written and its samples.
#[derive(Debug, Clone)]
pub struct LoadedRun {
    /// The run's directory (a baseline's, for a baseline).
    pub dir: PathBuf,
    pub manifest_path: PathBuf,
    /// The whole manifest as written, for the differences between two runs.
    pub manifest: Value,
    /// The manifest read through its types: what readers take fields from.
    pub typed: Manifest,
    pub profile: String,
    pub run_id: String,
    pub status: RunStatus,
    pub completed_iterations: u64,
    pub iterations: u64,
    /// `NAME` when the run was read as a baseline.
    pub baseline: Option<String>,
    pub samples: RunSamples,
}

impl LoadedRun {
    /// `profile@run_id`, and `(baseline NAME)` for a baseline.
    pub fn label(&self) -> String {
        match &self.baseline {
            Some(name) => format!("{}@{} (baseline {name})", self.profile, self.run_id),
            None => format!("{}@{}", self.profile, self.run_id),
        }
    }
}

/// The run a command-line argument names: a run directory, a manifest, a
/// baseline directory, `PROFILE@RUN_ID` or `PROFILE@latest` (the newest
/// completed run of the profile), found by the run-directory rules of
/// `profile-cli run`: in `output_dir/PROFILE/runs/` when given, else from
/// the profiles' `runs/` directories (from the binary that runs the targets:
/// `profiling_core::driver::session::profiles`).
pub fn resolve(
    argument: &str,
    profiles: &[ProfileRuns],
    output_dir: Option<&Path>,
) -> Result<LoadedRun, ReadRunError> {
    load(&resolve_path(argument, profiles, output_dir)?)
}

/// The run directory (or manifest) `argument` names, as [`resolve`] finds
/// it, without reading the run.
pub fn resolve_path(
    argument: &str,
    profiles: &[ProfileRuns],
    output_dir: Option<&Path>,
) -> Result<PathBuf, ReadRunError> {
    let path = Path::new(argument);
    if path.exists() {
        return Ok(path.to_path_buf());
    }
    let Some((profile, run)) = argument.rsplit_once('@') else {
        return Err(ReadRunError::NoSuchPath(argument.to_owned()));
    };
    // Each a single path component: `PROFILE@../../elsewhere` names no run.
    if config::check_profile_name(profile).is_err()
        || (run != "latest" && config::check_run_id(run).is_err())
    {
        return Err(ReadRunError::NoSuchPath(argument.to_owned()));
    }
    let runs = match output_dir {
        Some(dir) => dir.join(profile).join("runs"),
        None => runs_dir(profile, profiles)?,
    };
    if run == "latest" {
        return latest(&runs).ok_or_else(|| ReadRunError::NoLatest {
            profile: profile.to_owned(),
            runs: runs.clone(),
        });
    }
    let dir = runs.join(run);
    // A sweep's directory (`sweep.yaml`) for the commands that read sweeps.
    if !dir.join("manifest.yaml").is_file() && !dir.join("sweep.yaml").is_file() {
        if dir.join("load.yaml").is_file() {
            return Err(ReadRunError::ALoad(dir));
        }
        return Err(ReadRunError::UnknownRun {
            profile: profile.to_owned(),
            run_id: run.to_owned(),
            leftovers: profiling_core::driver::run_dir::leftovers(&dir),
            runs,
        });
    }
    Ok(dir)
}

/// Reads the run at `path`: a run (or baseline) directory or a manifest.
pub fn load(path: &Path) -> Result<LoadedRun, ReadRunError> {
    let (dir, manifest_path) = if path.is_dir() {
        let manifest = path.join("manifest.yaml");
        if !manifest.is_file() {
            if path.join("load.yaml").is_file() {
                return Err(ReadRunError::ALoad(path.to_path_buf()));
            }
            return Err(ReadRunError::NotARun(path.to_path_buf()));
        }
        (path.to_path_buf(), manifest)
    } else {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        (dir, path.to_path_buf())
    };
    let manifest = read_manifest(&manifest_path)?;
    let not_manifest = |reason: String| ReadRunError::NotAManifest {
        path: manifest_path.clone(),
        reason,
    };
    let text_of = |key: &str| manifest.get(key).and_then(Value::as_str).map(str::to_owned);
    let (Some(profile), Some(run_id), Some(status)) = (
        text_of("profile_name"),
        text_of("run_id"),
        text_of("status"),
    ) else {
        return Err(not_manifest(
            "profile_name, run_id or status is missing".to_owned(),
        ));
    };
    // Names the tool builds paths from (a comparison page's file name, a
    // baseline's directory): a run directory is data someone may have sent.
    config::check_profile_name(&profile)
        .map_err(|reason| not_manifest(format!("profile_name: {reason}")))?;
    config::check_run_id(&run_id).map_err(|reason| not_manifest(format!("run_id: {reason}")))?;
    let schema = match manifest.get("schema_version") {
        None => 1,
        Some(value) => match value.as_u64() {
            Some(version) if (1..=u64::from(SCHEMA_VERSION)).contains(&version) => version,
            _ => {
                return Err(not_manifest(format!(
                    "schema_version: {}: this build reads versions 1 to {SCHEMA_VERSION} (a newer profile-cli wrote it?)",
                    describe(value)
                )))
            }
        },
    };
    for key in ["completed_iterations", "completed_warmup"] {
        if let Some(value) = manifest.get(key) {
            if value.as_u64().is_none() {
                return Err(not_manifest(format!(
                    "{key}: expected a count, got {}",
                    describe(value)
                )));
            }
        }
    }
    let status = match status.as_str() {
        "completed" => RunStatus::Completed,
        "interrupted" => RunStatus::Interrupted,
        "failed" => RunStatus::Failed,
        other => return Err(not_manifest(format!("status: unknown value `{other}`"))),
    };
    if status == RunStatus::Failed {
        let reason = manifest
            .get("error")
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("no reason recorded")
            .to_owned();
        return Err(ReadRunError::Failed {
            manifest: manifest_path,
            profile,
            run_id,
            reason,
        });
    }
    if manifest.get("samples").is_none_or(Value::is_null) {
        return Err(ReadRunError::NoSamples {
            manifest: manifest_path,
            profile,
            run_id,
            schema,
        });
    }
    // Beside the manifest, wherever the run is now.
    let samples_path = dir.join(SAMPLES_FILE);
    let bytes = std::fs::read(&samples_path).map_err(|source| ReadRunError::Io {
        path: samples_path.clone(),
        source,
    })?;
    let samples = RunSamples::decode(&bytes).map_err(|source| ReadRunError::Samples {
        path: samples_path,
        source,
    })?;
    let typed = Manifest::from_value(manifest.clone()).map_err(not_manifest)?;
    let baseline = read_baseline_name(&dir);
    Ok(LoadedRun {
        dir,
        manifest_path,
        completed_iterations: u64::from(typed.completed_iterations),
        iterations: u64::from(typed.workload.iterations),
        typed,
        manifest,
        profile,
        run_id,
        status,
        baseline,
        samples,
    })
}

/// A manifest as written, read from `path`.
pub fn read_manifest(path: &Path) -> Result<Value, ReadRunError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReadRunError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_yaml::from_str(&text).map_err(|e| ReadRunError::NotAManifest {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// The `runs/` directory of the profile (or target) `name`.
pub fn runs_dir(name: &str, profiles: &[ProfileRuns]) -> Result<PathBuf, ReadRunError> {
    profiles
        .iter()
        .find(|p| p.profile == name)
        .or_else(|| profiles.iter().find(|p| p.target == name))
        .map(|p| p.runs.clone())
        .ok_or_else(|| ReadRunError::UnknownProfile {
            name: name.to_owned(),
            known: profiles.iter().map(|p| p.profile.clone()).collect(),
        })
}

/// The newest completed run under `runs`, by the time it finished (and
/// within a second, by when its manifest was written).
pub fn latest(runs: &Path) -> Option<PathBuf> {
    let mut newest: Option<(String, Option<std::time::SystemTime>, PathBuf)> = None;
    for entry in std::fs::read_dir(runs).ok()?.flatten() {
        let dir = entry.path();
        let Ok(text) = std::fs::read_to_string(dir.join("manifest.yaml")) else {
            continue;
        };
        let Ok(manifest) = Manifest::from_yaml(&text) else {
            continue;
        };
        if manifest.status != profiling_core::driver::manifest::Status::Completed {
            continue;
        }
        let finished = manifest.finished_at;
        // Within a second, the manifest written last.
        let written = std::fs::metadata(dir.join("manifest.yaml"))
            .and_then(|m| m.modified())
            .ok();
        let key = (finished, written, dir);
        if newest.as_ref().is_none_or(|best| key > *best) {
            newest = Some(key);
        }
    }
    newest.map(|(_, _, dir)| dir)
}

/// The baselines directory of the profile `run` belongs to: beside the
/// `runs/` directory it is in (a baseline's own, for a baseline).
pub fn baselines_dir_of(run: &LoadedRun) -> PathBuf {
    if run.baseline.is_some() {
        if let Some(parent) = run.dir.parent() {
            return parent.to_path_buf();
        }
    }
    baselines_dir_of_runs(run.dir.parent().unwrap_or(Path::new(".")))
}

/// Baseline `name` of the profile whose baselines are in `dir`.
pub fn find_baseline(dir: &Path, profile: &str, name: &str) -> Result<LoadedRun, ReadRunError> {
    let baseline = dir.join(name);
    if !baseline.join("baseline.yaml").is_file() {
        return Err(BaselineError::UnknownBaseline {
            profile: profile.to_owned(),
            name: name.to_owned(),
            dir: dir.to_path_buf(),
            known: list_baselines(dir).into_iter().map(|b| b.name).collect(),
        }
        .into());
    }
    load(&baseline)
}

#[cfg(test)]
mod tests {
    use super::*;
    use profiling_core::driver::manifest::{Manifest, Status};
    use profiling_core::driver::run_dir::{write_run, TraceInput};
    use profiling_core::driver::runner::CaptureRecord;
    use profiling_core::timing::SampleSet;

    /// Writes run `run_id` under `runs/` as `profile-cli run` does.
    fn write(runs: &Path, run_id: &str, status: Status, finished_at: &str) -> PathBuf {
        let mut passes = SampleSet::with_capacity(8);
        for value in [100, 200, 300] {
            passes.push(value);
        }
        let capture = CaptureRecord {
            samples: RunSamples::from_sets(&passes, &passes, &Default::default()),
            ..CaptureRecord::default()
        };
        let mut manifest = Manifest::sample(run_id);
        manifest.status = status;
        manifest.finished_at = finished_at.to_owned();
        let trace = TraceInput {
            capture: &capture,
            capture_range: "profile-target",
            title: "t",
        };
        let dir = runs.join(run_id);
        write_run(&dir, &mut manifest, Some(trace)).unwrap();
        dir
    }

    #[test]
    fn a_run_is_read_from_its_directory_or_its_manifest() {
        let out = tempfile::tempdir().unwrap();
        let dir = write(out.path(), "r1", Status::Completed, "2026-11-30T10:00:00Z");
        for path in [dir.clone(), dir.join("manifest.yaml")] {
            let run = load(&path).unwrap();
            assert_eq!((run.profile.as_str(), run.run_id.as_str()), ("t", "r1"));
            assert_eq!(run.samples.passes.kept, [100, 200, 300]);
            assert_eq!(
                (run.status, run.completed_iterations),
                (RunStatus::Completed, 1)
            );
        }
        // Moved elsewhere, it still reads its own samples.
        let moved = out.path().join("moved");
        std::fs::rename(&dir, &moved).unwrap();
        assert_eq!(load(&moved).unwrap().dir, moved);
    }

    /// A manifest is data someone may have sent: the names paths are built
    /// from must each be one plain component, the schema one this build
    /// reads, the counts counts. Each refusal names the file and the key.
    #[test]
    fn a_crafted_manifest_is_refused_naming_the_key() {
        let out = tempfile::tempdir().unwrap();
        let dir = write(out.path(), "r1", Status::Completed, "2026-11-30T10:00:00Z");
        let path = dir.join("manifest.yaml");
        let good = std::fs::read_to_string(&path).unwrap();
        let escape = format!("x/{}tmp/owned", "../".repeat(40));
        for (from, to, reason) in [
            (
                "run_id: r1\n",
                format!("run_id: '{escape}'\n"),
                format!("run_id: `{escape}` is not a valid run id"),
            ),
            (
                "profile_name: t\n",
                "profile_name: ../../etc\n".to_owned(),
                "profile_name: `../../etc` is not a valid profile name".to_owned(),
            ),
            (
                "schema_version: 2\n",
                "schema_version: 99\n".to_owned(),
                "schema_version: `99`: this build reads versions 1 to 2".to_owned(),
            ),
            (
                "completed_iterations: 1\n",
                "completed_iterations: -5\n".to_owned(),
                "completed_iterations: expected a count, got `-5`".to_owned(),
            ),
        ] {
            assert!(good.contains(from), "{from}");
            std::fs::write(&path, good.replace(from, &to)).unwrap();
            let message = load(&dir).unwrap_err().to_string();
            assert!(
                message.starts_with(&format!("{}: not a run manifest: {reason}", path.display())),
                "{message}"
            );
        }
    }

    /// `PROFILE@RUN_ID` names a run by two plain names, never a path.
    #[test]
    fn profile_at_run_id_never_climbs_out_of_the_runs_directory() {
        let out = tempfile::tempdir().unwrap();
        let runs = out.path().join("t/runs");
        write(&runs, "r1", Status::Completed, "2026-11-30T10:00:00Z");
        let outside = out.path().join("elsewhere");
        write(&outside, "r9", Status::Completed, "2026-11-30T10:00:00Z");
        let found = |argument: &str| resolve_path(argument, &[], Some(out.path()));
        assert_eq!(found("t@r1").unwrap(), runs.join("r1"));
        for argument in ["t@../../elsewhere/r9", "t@..", "../t@r1", "t@a/b", "t@"] {
            assert_eq!(
                found(argument).unwrap_err().to_string(),
                format!("{argument}: no such file or directory, and not PROFILE@RUN_ID or PROFILE@latest"),
            );
        }
    }

    #[test]
    fn what_is_not_a_comparable_run_says_why() {
        let out = tempfile::tempdir().unwrap();
        let message = |path: &Path| load(path).unwrap_err().to_string();
        assert_eq!(
            message(out.path()),
            format!(
                "{}: not a run: it holds no manifest.yaml",
                out.path().display()
            )
        );
        let failed = write(out.path(), "f", Status::Failed, "");
        assert!(
            message(&failed).starts_with(
                "run `f` of `t` failed, so its timings mean nothing: no reason recorded"
            ),
            "{}",
            message(&failed)
        );
        let old = write(out.path(), "old", Status::Completed, "");
        let text = std::fs::read_to_string(old.join("manifest.yaml")).unwrap();
        let before: String = text
            .lines()
            .filter(|l| !l.starts_with("schema_version"))
            .take_while(|l| !l.starts_with("samples:"))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(old.join("manifest.yaml"), before).unwrap();
        assert_eq!(
            message(&old),
            format!(
                "{}: run `old` of `t` was made before runs kept their samples (manifest schema version 1): re-run it to compare it",
                old.join("manifest.yaml").display()
            )
        );
        let cut = write(out.path(), "cut", Status::Completed, "");
        let bytes = std::fs::read(cut.join("samples.bin")).unwrap();
        std::fs::write(cut.join("samples.bin"), &bytes[..bytes.len() - 6]).unwrap();
        assert!(
            message(&cut).starts_with(&format!("{}: cut short", cut.join("samples.bin").display())),
            "{}",
            message(&cut)
        );
        std::fs::write(out.path().join("notes.txt"), "- a list\n").unwrap();
        assert!(message(&out.path().join("notes.txt")).contains("not a run manifest"));
        assert_eq!(
            resolve("no/such/run", &[], None).unwrap_err().to_string(),
            "no/such/run: no such file or directory, and not PROFILE@RUN_ID or PROFILE@latest"
        );
    }

    #[test]
    fn latest_is_the_newest_completed_run() {
        let out = tempfile::tempdir().unwrap();
        assert_eq!(latest(out.path()), None);
        write(out.path(), "a", Status::Completed, "2026-11-30T10:00:00Z");
        let b = write(out.path(), "b", Status::Completed, "2026-11-30T11:00:00Z");
        write(out.path(), "c", Status::Interrupted, "2026-11-30T12:00:00Z");
        write(out.path(), "d", Status::Failed, "2026-11-30T13:00:00Z");
        std::fs::create_dir(out.path().join("empty")).unwrap();
        assert_eq!(latest(out.path()), Some(b));
    }

    #[test]
    fn a_baseline_is_a_copy_replaced_only_with_force() {
        let out = tempfile::tempdir().unwrap();
        let runs = out.path().join("p/runs");
        let first = write(&runs, "r1", Status::Completed, "");
        let second = write(&runs, "r2", Status::Completed, "");
        let saved = save_baseline(&first, "main", false).unwrap();
        assert_eq!(saved, out.path().join("p/baselines/main"));
        let refused = save_baseline(&second, "main", false).unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!(
                "baseline `main` of `t` exists ({}): give --force to replace it",
                saved.display()
            )
        );
        std::fs::remove_dir_all(&first).unwrap();
        let dir = baselines_dir_of_runs(&runs);
        let baseline = find_baseline(&dir, "t", "main").unwrap();
        assert_eq!(
            (baseline.run_id.as_str(), baseline.baseline.as_deref()),
            ("r1", Some("main")),
            "the baseline outlives its run"
        );
        assert_eq!(baselines_dir_of(&baseline), dir);
        save_baseline(&second, "main", true).unwrap();
        assert_eq!(find_baseline(&dir, "t", "main").unwrap().run_id, "r2");
        let names: Vec<String> = list_baselines(&dir).into_iter().map(|b| b.name).collect();
        assert_eq!(names, ["main"]);
        let staging: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(staging.len(), 1, "nothing left beside the baseline");
        assert_eq!(
            find_baseline(&dir, "t", "nope").unwrap_err().to_string(),
            format!(
                "profile `t` has no baseline `nope` in {} (it has main)",
                dir.display()
            )
        );
        assert!(save_baseline(&second, "../x", false)
            .unwrap_err()
            .to_string()
            .starts_with("baseline name `../x`"));
    }
}
