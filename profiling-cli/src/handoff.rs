//! What a profiling binary hands back to the `profile-cli` that ran it.
//!
//! A workspace's `profile` binary links what lists and runs targets, not
//! what reads runs back: after `run` (and `sweep`, `ab`, `load`), the
//! comparison with a baseline, the pages and Nsight's analysis are done by
//! the installed `profile-cli` on the files the run wrote. The binary, given
//! the hidden `--handoff FILE` (`--outcome FILE`, its first name, still
//! works), writes there what is left to do; `profile-cli` reads it once the
//! binary has exited (`delegate/`). `profiles` tells `compare`, `report` and
//! `baselines` where the binary's profiles keep their runs.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::exit::EXIT_OK;

/// A run that got as far as running: what comes after it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Ran {
    /// The exit code so far.
    pub code: u8,
    pub run_dir: PathBuf,
    /// Whether `manifest.yaml` was written.
    pub manifest_written: bool,
    /// Whether the run measured something (it did not fail).
    pub measured: bool,
    /// Whether every pass ran.
    pub completed: bool,
    /// Whether `report.html` is wanted (the config's `write_report`, not
    /// `--no-report`, and the run's files written whole).
    pub page: bool,
    /// The `--json` document so far, with `--json`.
    pub document: Option<serde_json::Value>,
    /// The history store the run goes into once it is in place: what
    /// `$PROFILING_STORE` says, else the SQLite file beside the run
    /// directories (see `profile-cli history`).
    #[serde(default)]
    pub store: Option<String>,
}

/// The environment variable that names the history store (`off`: none).
pub(crate) const STORE_ENV: &str = "PROFILING_STORE";
/// The history store's file beside the run directories.
pub(crate) const STORE_FILE: &str = "history.sqlite";

/// The store a run under `output_dir` (else the workspace's run
/// directories) goes into, as [`Ran::store`] holds it:
/// `$PROFILING_STORE`, else the workspace's own setting (`store` under
/// `[workspace.metadata.profiling]` of its `Cargo.toml`: a path, taken
/// from the workspace's root, `sqlite:PATH`, `postgres://...` or `off`),
/// else the SQLite file beside the run directories.
pub(crate) fn store_of(output_dir: Option<&Path>, workspace_root: &Path) -> String {
    if let Ok(store) = std::env::var(STORE_ENV) {
        return store;
    }
    if let Some(store) = workspace_store(workspace_root) {
        return store;
    }
    let run_root = profiling_core::driver::session::run_root(output_dir, workspace_root);
    profiling_core::driver::session::absolute(&run_root.join(STORE_FILE))
        .to_string_lossy()
        .into_owned()
}

/// `[workspace.metadata.profiling] store` of the workspace's `Cargo.toml`
/// (or `[package.metadata.profiling]` of a single package), a relative
/// path made absolute from the workspace's root; none when it is not
/// there or not text.
fn workspace_store(workspace_root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(workspace_root.join("Cargo.toml")).ok()?;
    let document: toml_edit::DocumentMut = text.parse().ok()?;
    let store = ["workspace", "package"].iter().find_map(|table| {
        document
            .get(table)?
            .get("metadata")?
            .get("profiling")?
            .get("store")?
            .as_str()
            .map(str::to_owned)
    })?;
    let plain_path = !store.contains("://")
        && !store.starts_with("sqlite:")
        && !matches!(store.trim(), "off" | "none");
    if plain_path && Path::new(&store).is_relative() {
        let absolute = profiling_core::driver::session::absolute(&workspace_root.join(&store));
        return Some(absolute.to_string_lossy().into_owned());
    }
    Some(store)
}

/// A sweep that ran its points: what comes after it (the pages, the
/// `--json` document), done by the process that read the arguments or by
/// the `profile-cli` that ran a profiling binary.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Swept {
    /// The exit code so far.
    pub code: u8,
    pub sweep_dir: PathBuf,
    /// Whether `sweep.yaml` was written (the sweep page is drawn from it).
    pub written: bool,
    /// Whether pages are wanted (not `--no-report`).
    pub pages: bool,
    /// The run directories of the completed points whose config wants a page.
    pub point_pages: Vec<PathBuf>,
    /// The run directories of every completed point, for the history store.
    #[serde(default)]
    pub completed: Vec<PathBuf>,
    /// The history store they go into (see [`Ran::store`]).
    #[serde(default)]
    pub store: Option<String>,
    /// The `--json` document so far, with `--json`.
    pub document: Option<serde_json::Value>,
}

/// A load that ran: what comes after it (its page, the `--json`
/// document), done by the process that read the arguments or by the
/// `profile-cli` that ran a profiling binary.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Loaded {
    /// The exit code so far.
    pub code: u8,
    /// `load.yaml`, when it was written.
    pub record: Option<PathBuf>,
    /// Whether `load.html` is wanted and still to be drawn from the record
    /// (the process that ran the load draws no pages).
    pub page_to_draw: bool,
    /// `load.html`, once written.
    pub page_path: Option<PathBuf>,
    /// Why the page wanted was not written.
    pub page_error: Option<String>,
    /// The `--json` document so far, with `--json`.
    pub document: Option<serde_json::Value>,
    /// The history store the load goes into once its record is written
    /// (see [`Ran::store`]).
    #[serde(default)]
    pub store: Option<String>,
}

/// What is left to do after a profiling binary exits.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Handoff {
    /// After `run`.
    Run(Ran),
    /// `run --nsys`: the command that runs the profiling binary under
    /// Nsight and moves the report into the run's directory.
    Nsys {
        command: profiling_core::driver::nsys::NsysCommand,
    },
    /// After `sweep`.
    Sweep(Swept),
    /// After `load`.
    Load(Loaded),
    /// After `ab`: each repetition's pair.
    Paired(Vec<Paired>),
}

/// A paired run that ran both sides: where its files are, for the
/// comparison and its page.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Paired {
    /// `runs/<AB_ID>/`, which holds `paired.json`.
    pub dir: PathBuf,
    pub base_dir: PathBuf,
    pub candidate_dir: PathBuf,
    /// The base's config file, whose `ab.accept` applies without `--accept`.
    #[serde(default)]
    pub config: Option<PathBuf>,
    /// That config's `ab.accept`, as read with the rest of it when the
    /// pair was planned.
    #[serde(default)]
    pub accept: Option<String>,
    /// The history store both sides go into (see [`Ran::store`]).
    #[serde(default)]
    pub store: Option<String>,
}

/// Writes `handoff` to `file`.
pub(crate) fn write(file: &Path, handoff: &Handoff) -> anyhow::Result<()> {
    let text = serde_json::to_string(handoff)?;
    profiling_core::driver::files::write_atomically(file, text.as_bytes())
        .map_err(|error| anyhow::anyhow!("{}: {error}", file.display()))
}

/// The handoff in `file`, `None` when the binary left none (it stopped
/// before running, and said why).
#[cfg(feature = "full")]
pub(crate) fn read(file: &Path) -> anyhow::Result<Option<Handoff>> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) if text.is_empty() => return Ok(None),
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => anyhow::bail!("{}: {error}", file.display()),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|error| anyhow::anyhow!("{}: {error}", file.display()))
}

/// `profiles`: the profiles of this build, as JSON.
pub(crate) fn write_profiles(root: &Path, out: &mut dyn Write) -> anyhow::Result<u8> {
    let profiles = profiling_core::driver::session::profiles(root);
    writeln!(out, "{}", serde_json::to_string(&profiles)?)?;
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace(manifest: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), manifest).unwrap();
        dir
    }

    #[test]
    fn the_workspace_names_its_store_in_its_cargo_metadata() {
        let url = workspace(
            "[workspace]\nmembers = []\n\n[workspace.metadata.profiling]\nstore = \"postgres://ci@perf-db/history\"\n",
        );
        assert_eq!(
            workspace_store(url.path()).as_deref(),
            Some("postgres://ci@perf-db/history")
        );
        // A relative path is the workspace's, wherever the command runs.
        let relative = workspace(
            "[package]\nname = \"x\"\n[package.metadata.profiling]\nstore = \"perf/h.sqlite\"\n",
        );
        assert_eq!(
            workspace_store(relative.path()),
            Some(
                relative
                    .path()
                    .join("perf/h.sqlite")
                    .to_string_lossy()
                    .into_owned()
            )
        );
        let off = workspace("[workspace.metadata.profiling]\nstore = \"off\"\n");
        assert_eq!(workspace_store(off.path()).as_deref(), Some("off"));
        // Not set, not text, no manifest: the default.
        for manifest in [
            "[workspace]\n",
            "[workspace.metadata.profiling]\nstore = 3\n",
            "not toml [",
        ] {
            assert_eq!(
                workspace_store(workspace(manifest).path()),
                None,
                "{manifest}"
            );
        }
        assert_eq!(workspace_store(Path::new("/nonexistent")), None);
    }
}
