//! Writing a finished run: `manifest.yaml` first, then `samples.bin`, then
//! the larger `trace.json`, into a staging directory beside the run
//! directory that is renamed into place at the end.
//!
//! So a full disk or a quota costs the trace before the samples and the
//! samples before the manifest, and an
//! earlier run replaced with `--force` stays whole until the new one is in
//! place. A failure says which file could not be written and what was kept.
//! The manifest's own writer is here too: `write_manifest`,
//! with [`write_atomically`] under it.
//!
//! A run holds its run id while it runs ([`RunClaim`]: an exclusive lock on
//! `.<id>.claim` beside the run directory, which the kernel lets go when the
//! process ends however it ends), so that a second run with the same id is
//! refused at once, naming the first. Replacing an earlier run swaps the
//! two directories in one step where the file system can
//! (`renameat2(RENAME_EXCHANGE)`); where it cannot, or when a process is
//! killed between its steps, what is left over is restored or removed by
//! the next run that claims the id ([`recover`]), and named by the commands
//! that look for the run.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::driver::manifest::{Manifest, SamplesSummary};
use crate::driver::run_samples::{SAMPLES_FILE, SAMPLES_VERSION, SAMPLES_VERSION_WITHOUT_MEMORY};
use crate::driver::runner::CaptureRecord;
use crate::driver::trace::render_trace;

/// What could not be written, and what of the run was kept.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}; {}", .path.display(), match .earlier_kept {
    Some(dir) => format!("the earlier run in {} is kept as it was, not replaced by an incomplete one", dir.display()),
    None => kept_text(.kept),
})]
pub struct WriteFailure {
    /// The file or directory that could not be written.
    pub path: PathBuf,
    pub source: std::io::Error,
    /// The files of the run that are in place despite it.
    pub kept: Vec<PathBuf>,
    /// The run directory whose earlier run stays, when this one was to
    /// replace it (`--force`) and could not be written whole.
    pub earlier_kept: Option<PathBuf>,
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
    write_run_as(run_dir, run_dir, manifest, trace)
}

/// [`write_run`] into `write_dir`, with the paths the manifest records
/// (and this returns) under `named`: where `write_dir` will be once what
/// holds it moves into place (a side of a paired run, written into the
/// pair's staging directory).
pub(crate) fn write_run_as(
    write_dir: &Path,
    named: &Path,
    manifest: &mut Manifest,
    trace: Option<TraceInput<'_>>,
) -> Result<PathBuf, WriteFailure> {
    let run_dir = write_dir;
    let failure = |path: &Path, source: std::io::Error, kept: Vec<PathBuf>| WriteFailure {
        path: path.to_path_buf(),
        source,
        kept,
        earlier_kept: None,
    };
    let parent = run_dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| failure(parent, e, Vec::new()))?;
    let staging = staging_dir(run_dir);
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir(&staging).map_err(|e| failure(run_dir, e, Vec::new()))?;

    let manifest_path = named.join("manifest.yaml");
    let samples_path = named.join(SAMPLES_FILE);
    let trace_path = named.join("trace.json");
    let samples = trace.as_ref().map(|trace| {
        let samples = &trace.capture.samples;
        let bytes = samples.encode();
        manifest.samples = Some(SamplesSummary {
            path: samples_path.clone(),
            version: if samples.memory.is_some() {
                SAMPLES_VERSION
            } else {
                SAMPLES_VERSION_WITHOUT_MEMORY
            },
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
        match crate::driver::files::write_atomically(&staged, &bytes) {
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
        if let Err(error) = crate::driver::files::write_atomically(&staged, &bytes) {
            let _ = std::fs::remove_file(&staged);
            // Say so in the manifest when there is room for that; else it
            // keeps naming a trace that is not there, and the error says so.
            manifest.trace = None;
            let _ = write_manifest(manifest, &staging);
            late_failure = Some((trace_path.clone(), error));
        }
    }

    // An earlier run (`--force`) is replaced only by a whole one.
    if let Some((path, error)) = &late_failure {
        if run_dir.exists() {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(WriteFailure {
                path: path.clone(),
                source: std::io::Error::new(error.kind(), error.to_string()),
                kept: Vec::new(),
                earlier_kept: Some(run_dir.to_path_buf()),
            });
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

/// Where a run `run_dir` is written before it moves into place whole:
/// `.<id>.partial-<pid>` beside it, which [`recover`] removes when the
/// process that wrote it stopped half way.
pub fn staging_dir(run_dir: &Path) -> PathBuf {
    let (parent, name) = split(run_dir);
    parent.join(format!(".{name}{PARTIAL}{}", std::process::id()))
}

/// Renames `staging` to `run_dir`. An existing `run_dir` is swapped with
/// `staging` in one step where the file system can, then removed; where it
/// cannot, it is moved aside first and removed only once the new one is in
/// place (a process killed between the two leaves it for [`recover`]).
pub fn move_into_place(staging: &Path, run_dir: &Path) -> std::io::Result<()> {
    move_staging(staging, run_dir)?;
    // The rename made durable; what it moved is in place whatever this says.
    let parent = match run_dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let _ = crate::driver::files::sync_directory(parent);
    Ok(())
}

fn move_staging(staging: &Path, run_dir: &Path) -> std::io::Result<()> {
    if !run_dir.exists() {
        return std::fs::rename(staging, run_dir);
    }
    if exchange(staging, run_dir).is_ok() {
        // `staging` holds the earlier run now.
        let _ = std::fs::remove_dir_all(staging);
        return Ok(());
    }
    let aside = staging.with_file_name(format!(
        ".{}{REPLACED}{}",
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

/// Swaps two paths atomically (Linux's `renameat2` with `RENAME_EXCHANGE`).
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |path: &Path| {
        std::ffi::CString::new(path.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    };
    let (a, b) = (c(a)?, c(b)?);
    // SAFETY: both are NUL-terminated paths that live across the call.
    let done = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if done == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// What names the leftovers beside a run directory `<id>`: `.<id>` then
/// one of these, then the process id.
const PARTIAL: &str = ".partial-";
const REPLACED: &str = ".replaced-";

/// A run id held by this process while its run lasts: an exclusive lock
/// on `.<id>.claim` beside the run directory, which holds the process id.
/// The lock goes with the process however it ends; the file goes when the
/// claim is dropped.
#[derive(Debug)]
pub struct RunClaim {
    path: PathBuf,
    _file: std::fs::File,
    /// The directories the claim made, innermost first: removed with it
    /// when still empty (a run that stopped before writing leaves nothing).
    made: Vec<PathBuf>,
}

/// Why a run id could not be claimed.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error("run id `{run_id}` is in use: process {pid} is running it now ({} is locked); choose another --run-id, or wait for it", .claim.display())]
    Busy {
        run_id: String,
        pid: String,
        claim: PathBuf,
    },
    #[error("cannot claim run id `{run_id}` ({}): {source}", .claim.display())]
    Io {
        run_id: String,
        claim: PathBuf,
        source: std::io::Error,
    },
}

impl RunClaim {
    /// Claims the run id of `run_dir` (making the directories above it),
    /// or says which process holds it.
    pub fn take(run_dir: &Path) -> Result<RunClaim, ClaimError> {
        let (parent, name) = split(run_dir);
        let claim = parent.join(format!(".{name}.claim"));
        let io = |source: std::io::Error| ClaimError::Io {
            run_id: name.clone(),
            claim: claim.clone(),
            source,
        };
        let made: Vec<PathBuf> = parent
            .ancestors()
            .take_while(|dir| !dir.as_os_str().is_empty() && !dir.exists())
            .map(Path::to_path_buf)
            .collect();
        std::fs::create_dir_all(&parent).map_err(io)?;
        loop {
            let mut file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&claim)
                .map_err(io)?;
            if !try_lock(&file).map_err(io)? {
                let mut pid = String::new();
                let _ = std::io::Read::read_to_string(&mut file, &mut pid);
                return Err(ClaimError::Busy {
                    run_id: name.clone(),
                    pid: pid.trim().to_owned(),
                    claim: claim.clone(),
                });
            }
            // The holder before may have removed the file between this
            // open and the lock: the lock is worth something only on the
            // file the path names now.
            if !same_file(&file, &claim) {
                continue;
            }
            file.set_len(0).map_err(io)?;
            file.write_all(std::process::id().to_string().as_bytes())
                .map_err(io)?;
            return Ok(RunClaim {
                path: claim,
                _file: file,
                made,
            });
        }
    }
}

impl Drop for RunClaim {
    fn drop(&mut self) {
        // Removed while still locked, so that no other process locks a
        // file about to go.
        let _ = std::fs::remove_file(&self.path);
        for dir in &self.made {
            if std::fs::remove_dir(dir).is_err() {
                break;
            }
        }
    }
}

/// Takes `file`'s exclusive lock without waiting: false when another
/// process holds it.
fn try_lock(file: &std::fs::File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor is open for the call.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let error = std::io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(error)
    }
}

fn same_file(file: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

/// The directory above `run_dir` and `run_dir`'s name.
fn split(run_dir: &Path) -> (PathBuf, String) {
    let parent = run_dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let name = run_dir
        .file_name()
        .map_or_else(|| "run".into(), |n| n.to_string_lossy().into_owned());
    (parent, name)
}

/// What other processes left beside `run_dir` when they stopped while
/// writing it: `.<id>.partial-<pid>` (a run not yet whole) and
/// `.<id>.replaced-<pid>` (an earlier run moved aside by `--force`).
pub fn leftovers(run_dir: &Path) -> Vec<PathBuf> {
    let (parent, name) = split(run_dir);
    let own = std::process::id().to_string();
    let mut found: Vec<PathBuf> = std::fs::read_dir(&parent)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|entry| {
            let file = entry.file_name();
            let file = file.to_string_lossy();
            let Some(rest) = file
                .strip_prefix('.')
                .and_then(|f| f.strip_prefix(name.as_str()))
            else {
                return false;
            };
            let pid = rest
                .strip_prefix(PARTIAL)
                .or_else(|| rest.strip_prefix(REPLACED));
            pid.is_some_and(|pid| {
                !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) && pid != own
            })
        })
        .map(|entry| entry.path())
        .collect();
    found.sort();
    found
}

/// Puts right what an interrupted write of `run_dir` left, while this
/// process holds its claim (so that no other writes it): an earlier run
/// moved aside goes back when no run took its place, and is removed when
/// one did; a partial run is removed. Says what it did, one line each.
pub fn recover(run_dir: &Path, claim: &RunClaim) -> Vec<String> {
    recover_all(run_dir, claim).done
}

/// What putting leftovers right did, and what it could not do.
#[derive(Debug, Default, PartialEq)]
pub struct Cleaned {
    /// One line for each leftover restored or removed.
    pub done: Vec<String>,
    /// One line for each leftover or id that could not be put right.
    pub failed: Vec<String>,
}

fn recover_all(run_dir: &Path, _claim: &RunClaim) -> Cleaned {
    let mut cleaned = Cleaned::default();
    for leftover in leftovers(run_dir) {
        let name = leftover
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.contains(REPLACED) && !run_dir.exists() {
            match std::fs::rename(&leftover, run_dir) {
                Ok(()) => cleaned.done.push(format!(
                    "restored the earlier run {} from {} (a replacement stopped half way)",
                    run_dir.display(),
                    leftover.display()
                )),
                Err(error) => cleaned.failed.push(format!(
                    "cannot restore the earlier run {} from {}: {error}",
                    run_dir.display(),
                    leftover.display()
                )),
            }
        } else {
            match remove_leftover(&leftover) {
                Ok(()) => cleaned.done.push(format!(
                    "removed {}, left by a run that stopped while writing",
                    leftover.display()
                )),
                Err(error) => cleaned
                    .failed
                    .push(format!("cannot remove {}: {error}", leftover.display())),
            }
        }
    }
    cleaned
}

/// The report directory a run under Nsight Systems left beside `run_dir`
/// (`.<id>.nsys/`), while this process holds the id: its report goes into
/// the run when the run is whole and has none, and the directory goes.
/// One a live `run --nsys` holds is left alone, and said.
fn report_dir_put_right(run_dir: &Path, _claim: &RunClaim) -> Cleaned {
    use crate::driver::nsys::{report_dir, ReportDirLock, REPORT_STEM};
    let mut cleaned = Cleaned::default();
    let dir = report_dir(run_dir);
    let Ok(metadata) = std::fs::symlink_metadata(&dir) else {
        return cleaned;
    };
    let _lock = if metadata.is_dir() {
        match ReportDirLock::try_take(&dir) {
            Ok(Some(lock)) => Some(lock),
            Ok(None) => {
                cleaned.done.push(format!(
                    "left alone: {} is held by a run under Nsight Systems now",
                    dir.display()
                ));
                return cleaned;
            }
            Err(error) => {
                cleaned
                    .failed
                    .push(format!("cannot clean {}: {error}", dir.display()));
                return cleaned;
            }
        }
    } else {
        None
    };
    let name = format!("{REPORT_STEM}.nsys-rep");
    let report = dir.join(&name);
    let kept = run_dir.join(&name);
    if metadata.is_dir()
        && report.is_file()
        && run_dir.join("manifest.yaml").is_file()
        && !kept.exists()
    {
        match std::fs::rename(&report, &kept) {
            Ok(()) => cleaned.done.push(format!(
                "moved Nsight's report {} into its run, {} (its run under nsys stopped before the analysis)",
                report.display(),
                kept.display()
            )),
            Err(error) => {
                cleaned.failed.push(format!(
                    "cannot move Nsight's report {} into {}: {error}",
                    report.display(),
                    run_dir.display()
                ));
                return cleaned;
            }
        }
    }
    match remove_leftover(&dir) {
        Ok(()) => cleaned.done.push(format!(
            "removed {}, Nsight's report directory of a run under nsys that stopped",
            dir.display()
        )),
        Err(error) => cleaned
            .failed
            .push(format!("cannot remove {}: {error}", dir.display())),
    }
    cleaned
}

/// Removes a leftover directory; a symbolic link in its place is removed
/// itself, never followed.
fn remove_leftover(path: &Path) -> std::io::Result<()> {
    if std::fs::symlink_metadata(path)?.file_type().is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    }
}

/// Writes `manifest.yaml` into `run_dir` through a temporary file and a
/// rename; returns its path.
pub(crate) fn write_manifest(manifest: &Manifest, run_dir: &Path) -> std::io::Result<PathBuf> {
    let text = manifest
        .to_yaml()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let path = run_dir.join("manifest.yaml");
    write_atomically(&path, text.as_bytes())?;
    Ok(path)
}

pub use crate::driver::files::write_atomically;

/// Puts right what stopped writes left in `runs` (a profile's `runs/`):
/// for every run id with leftovers or a lock file beside it, claims the id
/// (skipping, and saying so, one a live process holds), restores or
/// removes them ([`recover`]) and lets go of the claim, which removes its
/// file. Says what it did, and what it could not do, one line each. A
/// `runs` that is a symbolic link is not followed: what it points to may
/// be outside the directory asked to be cleaned.
pub fn clean_leftovers(runs: &Path) -> Cleaned {
    let mut cleaned = Cleaned::default();
    if let Ok(link) = std::fs::read_link(runs) {
        cleaned.done.push(format!(
            "left alone: {} is a symbolic link (to {}), not followed; clean there with --output-dir",
            runs.display(),
            link.display()
        ));
        return cleaned;
    }
    let mut ids: Vec<String> = std::fs::read_dir(runs)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let rest = name.strip_prefix('.')?;
            let id = match rest.strip_suffix(".claim") {
                Some(id) => id,
                None => match crate::driver::nsys::report_dir_id(&name) {
                    Some(id) => id,
                    None => {
                        let at = rest.rfind(PARTIAL).or_else(|| rest.rfind(REPLACED))?;
                        &rest[..at]
                    }
                },
            };
            crate::driver::config::check_run_id(id).ok()?;
            Some(id.to_owned())
        })
        .collect();
    ids.sort();
    ids.dedup();
    for id in ids {
        let run_dir = runs.join(&id);
        match RunClaim::take(&run_dir) {
            Ok(claim) => {
                let done = recover_all(&run_dir, &claim);
                cleaned.done.extend(done.done);
                cleaned.failed.extend(done.failed);
                let done = report_dir_put_right(&run_dir, &claim);
                cleaned.done.extend(done.done);
                cleaned.failed.extend(done.failed);
            }
            Err(error @ ClaimError::Busy { .. }) => {
                cleaned.done.push(format!("left alone: {error}"));
            }
            Err(error) => cleaned.failed.push(format!("cannot clean: {error}")),
        }
    }
    cleaned
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
            samples: crate::driver::run_samples::RunSamples::from_sets(
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
        let read = crate::driver::run_samples::RunSamples::decode(&bytes).unwrap();
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

    /// A run id is held by one claim at a time (two opens of the lock file
    /// conflict even in one process); the claim goes with its holder, and
    /// the directories it made go with it when nothing was written there.
    #[test]
    fn a_run_id_is_claimed_by_one_run_at_a_time() {
        let out = tempfile::tempdir().unwrap();
        let run_dir = out.path().join("p/runs/r1");
        let claim = RunClaim::take(&run_dir).unwrap();
        let file = out.path().join("p/runs/.r1.claim");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            std::process::id().to_string()
        );
        match RunClaim::take(&run_dir).unwrap_err() {
            ClaimError::Busy { run_id, pid, claim } => {
                assert_eq!(run_id, "r1");
                assert_eq!(pid, std::process::id().to_string());
                assert_eq!(claim, file);
            }
            other => panic!("{other}"),
        }
        // Another id beside it is free.
        let other = RunClaim::take(&out.path().join("p/runs/r2")).unwrap();
        drop(other);
        drop(claim);
        assert!(!file.exists());
        assert!(!out.path().join("p").exists(), "nothing left behind");
        let again = RunClaim::take(&run_dir).unwrap();
        drop(again);
    }

    /// What a `--force` killed between its two renames left: the earlier
    /// run moved aside, and the new one not yet in place. The next claim
    /// of the id restores the earlier run and removes the partial one.
    #[test]
    fn an_interrupted_replacement_is_put_right_by_the_next_claim() {
        let out = tempfile::tempdir().unwrap();
        let runs = out.path().join("runs");
        let run_dir = runs.join("k3");
        let aside = runs.join(".k3.replaced-4194304");
        let partial = runs.join(".k3.partial-4194304");
        for (dir, text) in [(&aside, "earlier"), (&partial, "half")] {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("manifest.yaml"), text).unwrap();
        }
        // Another run's leftovers are not this one's.
        std::fs::create_dir_all(runs.join(".k30.partial-17")).unwrap();
        assert_eq!(leftovers(&run_dir), [partial.clone(), aside.clone()]);
        let claim = RunClaim::take(&run_dir).unwrap();
        let done = recover(&run_dir, &claim);
        assert_eq!(
            done,
            [
                format!(
                    "removed {}, left by a run that stopped while writing",
                    partial.display()
                ),
                format!(
                    "restored the earlier run {} from {} (a replacement stopped half way)",
                    run_dir.display(),
                    aside.display()
                ),
            ]
        );
        assert_eq!(
            std::fs::read_to_string(run_dir.join("manifest.yaml")).unwrap(),
            "earlier"
        );
        assert!(leftovers(&run_dir).is_empty());
        assert!(runs.join(".k30.partial-17").exists());

        // Moved aside, and the new run already in place: the aside goes.
        std::fs::create_dir_all(&aside).unwrap();
        assert_eq!(recover(&run_dir, &claim).len(), 1);
        assert!(!aside.exists());
        assert_eq!(
            std::fs::read_to_string(run_dir.join("manifest.yaml")).unwrap(),
            "earlier"
        );
    }

    /// `clean_leftovers` puts right every id's leftovers in a runs
    /// directory and leaves alone an id a run holds.
    #[test]
    fn clean_leftovers_restores_removes_and_leaves_live_runs_alone() {
        let out = tempfile::tempdir().unwrap();
        let runs = out.path();
        std::fs::create_dir_all(runs.join(".a.replaced-4194304")).unwrap();
        std::fs::create_dir_all(runs.join(".b.partial-4194304")).unwrap();
        std::fs::create_dir_all(runs.join("b")).unwrap();
        std::fs::write(runs.join(".c.claim"), "4194304").unwrap();
        let held = RunClaim::take(&runs.join("d")).unwrap();
        std::fs::create_dir_all(runs.join(".d.partial-4194304")).unwrap();
        let cleaned = clean_leftovers(runs);
        assert!(cleaned.failed.is_empty(), "{cleaned:?}");
        let done = cleaned.done;
        assert_eq!(done.len(), 3, "{done:?}");
        assert!(done[0].starts_with("restored the earlier run"), "{done:?}");
        assert!(done[1].starts_with("removed "), "{done:?}");
        assert!(
            done[2].starts_with("left alone: run id `d` is in use"),
            "{done:?}"
        );
        assert_eq!(files(runs), [".d.claim", ".d.partial-4194304", "a", "b"]);
        drop(held);
    }

    /// Replacing swaps the two directories: the earlier run is whole until
    /// the new one is, and nothing is left beside them.
    #[test]
    fn a_replacement_swaps_the_directories_and_leaves_nothing() {
        let out = tempfile::tempdir().unwrap();
        let run_dir = out.path().join("r1");
        let staging = out.path().join(".r1.partial-1");
        for (dir, text) in [(&run_dir, "earlier"), (&staging, "new")] {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("manifest.yaml"), text).unwrap();
        }
        move_into_place(&staging, &run_dir).unwrap();
        assert_eq!(
            std::fs::read_to_string(run_dir.join("manifest.yaml")).unwrap(),
            "new"
        );
        assert_eq!(files(out.path()), ["r1"]);
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
            earlier_kept: None,
        };
        assert_eq!(
            failure.to_string(),
            "cannot write /r/trace.json: disk full; kept /r/manifest.yaml"
        );
    }
}
