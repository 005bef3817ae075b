//! Named baselines: a copy of a run's manifest and samples in
//! `<profile>/baselines/<NAME>/`, beside the profile's `runs/`, with a
//! `baseline.yaml` saying where it came from, so that deleting or replacing
//! the run leaves the baseline whole. `run --save-baseline NAME` saves one;
//! comparisons read them back.

use std::path::{Path, PathBuf};

/// Why a baseline cannot be saved or found. Each names the path or the
/// name involved.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error("profile `{profile}` has no baseline `{name}` in {}{}", .dir.display(), known_baselines(.known))]
    UnknownBaseline {
        profile: String,
        name: String,
        dir: PathBuf,
        known: Vec<String>,
    },
    #[error("baseline `{name}` of `{profile}` exists ({}): give --force to replace it", .dir.display())]
    BaselineExists {
        profile: String,
        name: String,
        dir: PathBuf,
    },
    #[error("baseline name `{name}`: {reason}")]
    BaselineName { name: String, reason: String },
    #[error("{}: not a run manifest: {reason}", .path.display())]
    NotAManifest { path: PathBuf, reason: String },
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn known_baselines(known: &[String]) -> String {
    if known.is_empty() {
        " (it has none: `profile-cli run NAME --save-baseline BASELINE` saves one)".to_owned()
    } else {
        format!(" (it has {})", known.join(", "))
    }
}

/// The profile and run id a run's manifest names.
struct Identity {
    profile: String,
    run_id: String,
}

fn read_identity(run_dir: &Path) -> Result<Identity, BaselineError> {
    let path = run_dir.join("manifest.yaml");
    let text = std::fs::read_to_string(&path).map_err(|source| BaselineError::Io {
        path: path.clone(),
        source,
    })?;
    let manifest: serde_yaml::Value =
        serde_yaml::from_str(&text).map_err(|e| BaselineError::NotAManifest {
            path: path.clone(),
            reason: e.to_string(),
        })?;
    let text_of = |key: &str| {
        manifest
            .get(key)
            .and_then(serde_yaml::Value::as_str)
            .map(str::to_owned)
    };
    match (text_of("profile_name"), text_of("run_id")) {
        (Some(profile), Some(run_id)) => Ok(Identity { profile, run_id }),
        _ => Err(BaselineError::NotAManifest {
            path,
            reason: "profile_name or run_id is missing".to_owned(),
        }),
    }
}

/// Checks that baseline `name` of `profile` is in `dir`, before a run that
/// compares with it starts; the comparison reads it whole afterwards.
pub fn check_baseline_exists(dir: &Path, profile: &str, name: &str) -> Result<(), BaselineError> {
    check_baseline_name(name)?;
    if dir.join(name).join("baseline.yaml").is_file() {
        return Ok(());
    }
    Err(BaselineError::UnknownBaseline {
        profile: profile.to_owned(),
        name: name.to_owned(),
        dir: dir.to_path_buf(),
        known: list_baselines(dir).into_iter().map(|b| b.name).collect(),
    })
}

/// `baselines/` beside the `runs/` directory a run was written to.
pub fn baselines_dir_of_runs(runs: &Path) -> PathBuf {
    runs.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join("baselines")
}

/// What `baseline.yaml` records.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BaselineInfo {
    pub name: String,
    pub profile: String,
    pub run_id: String,
    pub saved_at: String,
    /// The run directory the baseline was copied from.
    pub from: PathBuf,
}

pub fn read_baseline_name(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("baseline.yaml")).ok()?;
    let info: BaselineInfo = serde_yaml::from_str(&text).ok()?;
    Some(info.name)
}

/// Checks that `name` can name a baseline (a directory name).
pub fn check_baseline_name(name: &str) -> Result<(), BaselineError> {
    crate::driver::config::check_run_id(name).map_err(|reason| BaselineError::BaselineName {
        name: name.to_owned(),
        reason,
    })
}

/// Refuses to save baseline `name` in `dir` over an existing one without
/// `force`; checked before a run starts, so that nothing is run for a
/// baseline that would be refused.
pub fn check_baseline_free(
    dir: &Path,
    profile: &str,
    name: &str,
    force: bool,
) -> Result<(), BaselineError> {
    check_baseline_name(name)?;
    let target = dir.join(name);
    if target.exists() && !force {
        return Err(BaselineError::BaselineExists {
            profile: profile.to_owned(),
            name: name.to_owned(),
            dir: target,
        });
    }
    Ok(())
}

/// Saves the run in `run_dir` as baseline `name` of its profile: a copy of
/// its manifest and samples in `baselines/NAME/` beside its `runs/`, put in
/// place through a staging directory and a rename. An existing baseline of
/// that name is replaced only with `force`. Returns the baseline's
/// directory.
pub fn save_baseline(run_dir: &Path, name: &str, force: bool) -> Result<PathBuf, BaselineError> {
    let run = read_identity(run_dir)?;
    let dir = baselines_dir_of_runs(run_dir.parent().unwrap_or(Path::new(".")));
    check_baseline_free(&dir, &run.profile, name, force)?;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BaselineError::Io { path, source }
    };
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    // Whole, or not there at all, before a signal ends the process.
    let _writing = crate::driver::interrupt::Hold::new();
    let staging = dir.join(format!(".{name}.partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let result = (|| {
        std::fs::create_dir(&staging).map_err(io(&staging))?;
        for file in ["manifest.yaml", crate::driver::run_samples::SAMPLES_FILE] {
            std::fs::copy(run_dir.join(file), staging.join(file))
                .map_err(io(&run_dir.join(file)))?;
        }
        let info = BaselineInfo {
            name: name.to_owned(),
            profile: run.profile.clone(),
            run_id: run.run_id.clone(),
            saved_at: crate::driver::provenance::UtcTime::now().rfc3339(),
            from: crate::driver::session::absolute(run_dir),
        };
        let text = serde_yaml::to_string(&info).map_err(|e| BaselineError::Io {
            path: staging.join("baseline.yaml"),
            source: std::io::Error::other(e),
        })?;
        crate::driver::run_dir::write_atomically(&staging.join("baseline.yaml"), text.as_bytes())
            .map_err(io(&staging.join("baseline.yaml")))?;
        let target = dir.join(name);
        // An earlier baseline (`force` was checked) is replaced only once
        // the new one is whole.
        crate::driver::run_dir::move_into_place(&staging, &target).map_err(io(&target))?;
        Ok(target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}

/// The baselines in `dir`, by name; directories without a readable
/// `baseline.yaml` are not baselines.
pub fn list_baselines(dir: &Path) -> Vec<BaselineInfo> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<BaselineInfo> = entries
        .flatten()
        .filter_map(|entry| {
            let text = std::fs::read_to_string(entry.path().join("baseline.yaml")).ok()?;
            serde_yaml::from_str(&text).ok()
        })
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}
