//! Writing a finished run: `manifest.yaml` first, then `samples.bin`, then
//! the larger `trace.json`, into a staging directory beside the run
//! directory that is renamed into place at the end.
//!
//! So a full disk or a quota costs the trace before the samples and the
//! samples before the manifest, and an
//! earlier run replaced with `--force` stays whole until the new one is in
//! place. A failure says which file could not be written and what was kept.
//! The manifest's own writer is here too: [`write_manifest`],
//! with [`write_atomically`] under it.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::manifest::{Manifest, SamplesSummary};
use crate::run_samples::{SAMPLES_FILE, SAMPLES_VERSION};
use crate::runner::CaptureRecord;
use crate::trace::render_trace;

/// What could not be written, and what of the run was kept.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}; {}", .path.display(), kept_text(.kept))]
pub struct WriteFailure {
    /// The file or directory that could not be written.
    pub path: PathBuf,
    pub source: std::io::Error,
    /// The files of the run that are in place despite it.
    pub kept: Vec<PathBuf>,
}

fn kept_text(kept: &[PathBuf]) -> String {
    if kept.is_empty() {
        "nothing of this run was written: the summary above is all that remains of it".to_owned()
    } else {
        let files: Vec<String> = kept.iter().map(|p| p.display().to_string()).collect();
        format!("kept {}", files.join(", "))
    }
}

/// The trace to write beside the manifest.
pub struct TraceInput<'a> {
    pub capture: &'a CaptureRecord,
    pub capture_range: &'a str,
    pub title: &'a str,
}

/// Writes `manifest`, and for a run that measured something (`trace`
/// given) its samples and trace, as the run directory `run_dir`, replacing
/// an earlier one there (the caller checked `--force`). Sets
/// `manifest.samples` and `manifest.trace` to what was written. Returns the
/// manifest's path, or what failed with what was kept.
pub fn write_run(
    run_dir: &Path,
    manifest: &mut Manifest,
    trace: Option<TraceInput<'_>>,
) -> Result<PathBuf, WriteFailure> {
    let failure = |path: &Path, source: std::io::Error, kept: Vec<PathBuf>| WriteFailure {
        path: path.to_path_buf(),
        source,
        kept,
    };
    let parent = run_dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = run_dir
        .file_name()
        .map_or_else(|| "run".into(), |n| n.to_string_lossy());
    std::fs::create_dir_all(parent).map_err(|e| failure(parent, e, Vec::new()))?;
    let staging = parent.join(format!(".{name}.partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir(&staging).map_err(|e| failure(run_dir, e, Vec::new()))?;

    let manifest_path = run_dir.join("manifest.yaml");
    let samples_path = run_dir.join(SAMPLES_FILE);
    let trace_path = run_dir.join("trace.json");
    let samples = trace.as_ref().map(|trace| {
        let samples = &trace.capture.samples;
        let bytes = samples.encode();
        manifest.samples = Some(SamplesSummary {
            path: samples_path.clone(),
            version: SAMPLES_VERSION,
            series: samples.series_count() as u64,
            bytes: bytes.len() as u64,
            sketched: samples.is_sketched(),
        });
        bytes
    });
    let rendered = match &trace {
        Some(trace) => {
            match render_trace(&trace_path, trace.capture, trace.capture_range, trace.title) {
                Ok((bytes, summary)) => {
                    manifest.trace = Some(summary);
                    Some(bytes)
                }
                Err(error) => {
                    let _ = std::fs::remove_dir_all(&staging);
                    return Err(failure(&trace_path, error, Vec::new()));
                }
            }
        }
        None => None,
    };

    // The manifest first: small, and what a run is read from; then the
    // samples, smaller than the trace and what a comparison reads.
    if let Err(error) = write_manifest(manifest, &staging) {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(failure(&manifest_path, error, Vec::new()));
    }
    let mut kept = vec![manifest_path.clone()];
    let mut late_failure = None;
    if let Some(bytes) = samples {
        let staged = staging.join(SAMPLES_FILE);
        match std::fs::write(&staged, &bytes) {
            Ok(()) => kept.push(samples_path.clone()),
            Err(error) => {
                let _ = std::fs::remove_file(&staged);
                // The trace is larger: it would not fit either.
                manifest.samples = None;
                manifest.trace = None;
                let _ = write_manifest(manifest, &staging);
                late_failure = Some((samples_path.clone(), error));
            }
        }
    }
    if let (Some(bytes), None) = (rendered, &late_failure) {
        let staged = staging.join("trace.json");
        if let Err(error) = std::fs::write(&staged, &bytes) {
            let _ = std::fs::remove_file(&staged);
            // Say so in the manifest when there is room for that; else it
            // keeps naming a trace that is not there, and the error says so.
            manifest.trace = None;
            let _ = write_manifest(manifest, &staging);
            late_failure = Some((trace_path.clone(), error));
        }
    }

    if let Err(error) = move_into_place(&staging, run_dir) {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(failure(run_dir, error, Vec::new()));
    }
    match late_failure {
        Some((path, error)) => Err(failure(&path, error, kept)),
        None => Ok(manifest_path),
    }
}

/// Renames `staging` to `run_dir`; an existing `run_dir` is moved aside
/// first and removed only once the new one is in place.
pub(crate) fn move_into_place(staging: &Path, run_dir: &Path) -> std::io::Result<()> {
    if !run_dir.exists() {
        return std::fs::rename(staging, run_dir);
    }
    let aside = staging.with_file_name(format!(
        ".{}.replaced-{}",
        run_dir
            .file_name()
            .map_or_else(|| "run".into(), |n| n.to_string_lossy()),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&aside);
    std::fs::rename(run_dir, &aside)?;
    if let Err(error) = std::fs::rename(staging, run_dir) {
        // Put the earlier run back: nothing the user had is lost.
        let _ = std::fs::rename(&aside, run_dir);
        return Err(error);
    }
    let _ = std::fs::remove_dir_all(&aside);
    Ok(())
}

/// Writes `manifest.yaml` into `run_dir` through a temporary file and a
/// rename; returns its path.
pub fn write_manifest(manifest: &Manifest, run_dir: &Path) -> std::io::Result<PathBuf> {
    let text = manifest
        .to_yaml()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let path = run_dir.join("manifest.yaml");
    write_atomically(&path, text.as_bytes())?;
    Ok(path)
}

/// Writes `bytes` to `path` so that `path` holds either its old content or
/// all of the new, never a part.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let directory = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy());
    let temporary = directory.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_run_lands_in_place_with_its_manifest_and_nothing_else() {
        let out = tempfile::tempdir().unwrap();
        let run_dir = out.path().join("t/runs/r1");
        let mut manifest = Manifest::sample("r1");
        let path = write_run(&run_dir, &mut manifest, None).unwrap();
        assert_eq!(path, run_dir.join("manifest.yaml"));
        assert_eq!(files(&run_dir), ["manifest.yaml"]);
        assert_eq!(files(&out.path().join("t/runs")), ["r1"], "no staging left");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("run_id: r1\n"), "{text}");
    }

    #[test]
    fn a_measured_run_keeps_its_samples_beside_the_manifest_which_names_them() {
        let out = tempfile::tempdir().unwrap();
        let run_dir = out.path().join("r1");
        let mut passes = crate::timing::SampleSet::with_capacity(4);
        for value in [3_000, 1_000, 2_000] {
            passes.push(value);
        }
        let capture = CaptureRecord {
            samples: crate::run_samples::RunSamples::from_sets(
                &passes,
                &passes,
                &Default::default(),
            ),
            ..CaptureRecord::default()
        };
        let trace = TraceInput {
            capture: &capture,
            capture_range: "profile-target",
            title: "t",
        };
        let mut manifest = Manifest::sample("r1");
        write_run(&run_dir, &mut manifest, Some(trace)).unwrap();
        assert_eq!(
            files(&run_dir),
            ["manifest.yaml", "samples.bin", "trace.json"]
        );
        let bytes = std::fs::read(run_dir.join("samples.bin")).unwrap();
        let read = crate::run_samples::RunSamples::decode(&bytes).unwrap();
        assert_eq!(read.passes.kept, [3_000, 1_000, 2_000]);
        let summary = manifest.samples.as_ref().unwrap();
        assert_eq!(
            (
                summary.path.clone(),
                summary.version,
                summary.series,
                summary.bytes
            ),
            (run_dir.join("samples.bin"), 2, 3, bytes.len() as u64)
        );
        let text = std::fs::read_to_string(run_dir.join("manifest.yaml")).unwrap();
        assert!(text.starts_with("schema_version: 2\n"), "{text}");
        assert!(text.contains("samples:\n  path: "), "{text}");
    }

    #[test]
    fn a_run_replaces_an_earlier_one_only_once_it_is_written() {
        let out = tempfile::tempdir().unwrap();
        let run_dir = out.path().join("r1");
        std::fs::create_dir_all(&run_dir).unwrap();
        std::fs::write(run_dir.join("old.txt"), "earlier run").unwrap();
        let mut manifest = Manifest::sample("r1");
        write_run(&run_dir, &mut manifest, None).unwrap();
        assert_eq!(files(&run_dir), ["manifest.yaml"]);
        assert_eq!(
            files(out.path()),
            ["r1"],
            "the earlier run moved aside is gone"
        );
    }

    #[test]
    fn the_directories_above_a_run_are_made_and_staging_happens_there() {
        let out = tempfile::tempdir().unwrap();
        let nested = out.path().join("runs/r2");
        let mut manifest = Manifest::sample("r2");
        write_run(&nested, &mut manifest, None).unwrap();
        assert!(nested.join("manifest.yaml").is_file());
        assert_eq!(files(&out.path().join("runs")), ["r2"]);
        let moved = move_into_place(&out.path().join("missing"), &out.path().join("r3"));
        assert!(moved.is_err(), "nothing to move is an error");
    }

    #[test]
    fn what_was_kept_is_said() {
        assert_eq!(
            kept_text(&[]),
            "nothing of this run was written: the summary above is all that remains of it"
        );
        assert_eq!(
            kept_text(&[PathBuf::from("/r/manifest.yaml")]),
            "kept /r/manifest.yaml"
        );
        let failure = WriteFailure {
            path: PathBuf::from("/r/trace.json"),
            source: std::io::Error::other("disk full"),
            kept: vec![PathBuf::from("/r/manifest.yaml")],
        };
        assert_eq!(
            failure.to_string(),
            "cannot write /r/trace.json: disk full; kept /r/manifest.yaml"
        );
    }
}
