//! The profiles of a build and where their runs go, for the commands that
//! read runs back (`compare`, `report`, `baselines`).

use std::path::{Path, PathBuf};

use crate::driver::config::Overrides;
use crate::driver::registry;

use super::absolute;
use super::plan::{beside_target, run_directory};

/// A profile of this build and where its runs go: what `compare`,
/// `report` and `baselines` need to find `PROFILE@RUN_ID`, written by the
/// profiling binary (`profiles`) for the command line that reads runs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct ProfileRuns {
    /// The profile name: from the config beside the target, else the target's name.
    pub profile: String,
    /// The target the profile runs.
    pub target: String,
    /// Its `runs/` directory, absolute.
    pub runs: PathBuf,
}

/// The profiles of this build: each registered target's profile name
/// (from the config beside its source, else the target's name) and its
/// `runs/` directory, by profile name.
pub fn profiles(workspace_root: &Path) -> Vec<ProfileRuns> {
    let mut found: Vec<ProfileRuns> = Vec::new();
    for entry in registry::targets() {
        let overrides = Overrides {
            target: Some(entry.name.to_owned()),
            ..Overrides::default()
        };
        let file = beside_target(entry, workspace_root, entry.name)
            .ok()
            .flatten();
        let config = match &file {
            Some(file) => file.resolve(&overrides).ok(),
            None => crate::driver::config::defaults_for(entry.name, &overrides).ok(),
        };
        let Some(config) = config else { continue };
        let config_path = file.as_ref().and_then(|f| f.path.clone());
        let runs = absolute(&run_directory(
            &config,
            config_path.as_deref(),
            workspace_root,
        ));
        if !found.iter().any(|p| p.profile == config.profile_name) {
            found.push(ProfileRuns {
                profile: config.profile_name,
                target: entry.name.to_owned(),
                runs,
            });
        }
    }
    found.sort();
    found
}
