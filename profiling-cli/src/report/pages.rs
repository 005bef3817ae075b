//! Where every page is written: each whole (a temporary file, then a
//! rename), beside what it shows. The commands that leave pages (`run`,
//! `sweep`, `load`, `ab`, `analyze`, `report`) write them through here.

use std::path::{Path, PathBuf};

use profiling_core::driver::session::LoadManifest;

use super::{
    load_page, read_run, run_page, write_sweep_page, RunPage, LOAD_PAGE_FILE, REPORT_FILE,
};
use profiling_core::driver::sweep::document::SweepDocument;

/// Writes `page` into `path` through a temporary file and a rename.
pub fn write_page(path: &Path, page: &str) -> std::io::Result<PathBuf> {
    profiling_core::driver::run_dir::write_atomically(path, page.as_bytes())?;
    Ok(path.to_path_buf())
}

/// Writes `report.html` into `run_dir` from what the run wrote there, with
/// the comparison with its baseline when there is one.
pub fn write_run_page(
    run_dir: &Path,
    compared: Option<&(profiling_compare::Comparison, profiling_compare::Options)>,
) -> Result<PathBuf, String> {
    let (manifest, samples) = read_run(run_dir).map_err(|e| e.to_string())?;
    let html = run_page(&RunPage {
        dir: run_dir,
        manifest: &manifest,
        samples: samples.as_ref(),
        comparison: compared.map(|(comparison, options)| (comparison, options)),
    });
    let path = run_dir.join(REPORT_FILE);
    write_page(&path, &html).map_err(|e| format!("{}: {e}", path.display()))
}

/// The pages of a sweep that ran: `report.html` of each of `point_dirs`,
/// then `sweep.html` from the `sweep.yaml` in `sweep_dir`. The points whose
/// page was not written, each with why, and the sweep page's path or why it
/// was not written.
pub fn write_sweep_pages(
    point_dirs: &[PathBuf],
    sweep_dir: &Path,
) -> (Vec<(PathBuf, String)>, Result<PathBuf, String>) {
    let failed = point_dirs
        .iter()
        .filter_map(|dir| Some((dir.clone(), write_run_page(dir, None).err()?)))
        .collect();
    let page = SweepDocument::read(sweep_dir).and_then(|document| {
        write_sweep_page(sweep_dir, &document).map_err(|error| error.to_string())
    });
    (failed, page)
}

/// Writes `load.html` into `dir`, the load's directory, from its record
/// and its tables as the terminal shows them.
pub fn write_load_page(
    dir: &Path,
    manifest: &LoadManifest,
    tables: &str,
) -> Result<PathBuf, String> {
    let path = dir.join(LOAD_PAGE_FILE);
    write_page(&path, &load_page(manifest, tables)).map_err(|e| format!("{}: {e}", path.display()))
}
