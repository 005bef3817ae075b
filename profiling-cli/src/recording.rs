//! Writing a run into the history store once its directory is complete:
//! the one step every command that measures (`run`, `ab`, `sweep`,
//! `load`) takes after it, apart from `history`'s reading and pages so
//! that the commands reach the store without reaching the page engine.
//! A store that cannot take the run is a warning, never the run's
//! failure: the directory stays, and `history sync` or `history import`
//! writes it later.

use std::io::Write;
use std::path::{Path, PathBuf};

use profiling_history::{Location, Record, Store};

/// [`record_run`] into the store `text` names (as `$PROFILING_STORE` or
/// [`crate::handoff::Ran::store`] holds it).
pub(crate) fn record_text(
    text: &str,
    run_dir: &Path,
    kind: &'static str,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    match Location::parse(text, &here) {
        Ok(location) => record_run(&location, run_dir, kind, err),
        Err(error) => not_recorded(&error.to_string(), run_dir, err),
    }
}

/// After `analyze` wrote `analysis.yaml` into `run_dir`: what Nsight saw
/// of the run's GPU work, into the store the run went into
/// (`$PROFILING_STORE`, else the nearest `history.sqlite` above the run
/// directory), as [`Record::read_analysis`] reads it. Nothing when no
/// range launched GPU work or there is no store yet; a failure is a
/// warning.
pub(crate) fn record_analysis(run_dir: &Path, err: &mut dyn Write) -> std::io::Result<()> {
    let text = match std::env::var(crate::handoff::STORE_ENV) {
        Ok(text) => text,
        Err(_) => {
            let nearest = run_dir
                .ancestors()
                .skip(1)
                .map(|dir| dir.join(crate::handoff::STORE_FILE))
                .find(|file| file.is_file());
            match nearest {
                Some(file) => file.to_string_lossy().into_owned(),
                None => return Ok(()),
            }
        }
    };
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let location = match Location::parse(&text, &here) {
        Ok(Location::Off) => return Ok(()),
        Ok(location) => location,
        Err(error) => return analysis_not_recorded(&error.to_string(), run_dir, err),
    };
    let written = Record::read_analysis(run_dir)
        .map_err(|e| e.to_string())
        .and_then(|record| {
            let Some(record) = record else {
                return Ok(());
            };
            let mut store = Store::open_location_existing(&location)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| "the store is off".to_owned())?;
            store.record(&record).map(|_| ()).map_err(|e| e.to_string())
        });
    match written {
        Ok(()) => Ok(()),
        Err(message) => analysis_not_recorded(&message, run_dir, err),
    }
}

fn analysis_not_recorded(
    message: &str,
    run_dir: &Path,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(
        err,
        "warning: the analysis is not in the history store: {message}; {} is kept",
        run_dir.join("analysis.yaml").display()
    )
}

/// The warning of a run the store did not take.
fn not_recorded(message: &str, run_dir: &Path, err: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        err,
        "warning: the run is not in the history store: {message}; its directory is kept, and `profile-cli history import {}` writes it later",
        run_dir.display()
    )
}

/// Writes the run in `run_dir` into the store at `location`, after the
/// run directory is complete; a failure is a warning (the run directory
/// stays, and `history import` writes it later), never the run's.
fn record_run(
    location: &Location,
    run_dir: &Path,
    kind: &'static str,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    if *location == Location::Off {
        return Ok(());
    }
    // An SQLite store this write makes and cannot finish (a full disk) is
    // not left behind half made.
    let made = match location {
        Location::Sqlite(path) if !path.exists() => Some(path),
        _ => None,
    };
    let written = Store::open_location(location)
        .map_err(|e| e.to_string())
        .and_then(|store| store.ok_or_else(|| "the store is off".to_owned()))
        .and_then(|mut store| {
            let mut record = Record::read_any(run_dir).map_err(|e| e.to_string())?;
            record.kind = kind;
            store.record(&record).map(|_| ()).map_err(|e| e.to_string())
        });
    if let Err(message) = written {
        if let Some(path) = made {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let mut file = path.as_os_str().to_owned();
                file.push(suffix);
                let _ = std::fs::remove_file(PathBuf::from(file));
            }
        }
        not_recorded(&message, run_dir, err)?;
    }
    Ok(())
}

/// Writes a pair's verdict by its gates into the store `text` names,
/// after both sides went in (so that it names their stored runs); a
/// failure is a warning, never the pair's.
pub(crate) fn record_verdict(
    text: &str,
    pair_dir: &Path,
    (base, candidate): (
        &profiling_compare::runs::LoadedRun,
        &profiling_compare::runs::LoadedRun,
    ),
    results: &[profiling_compare::gates::GateResult],
    err: &mut dyn Write,
) -> std::io::Result<()> {
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let written = Location::parse(text, &here)
        .map_err(|e| e.to_string())
        .and_then(|location| Store::open_location(&location).map_err(|e| e.to_string()))
        .and_then(|store| {
            let Some(mut store) = store else {
                return Ok(());
            };
            let identity = |run| {
                Record::of(run, None)
                    .map(|r| r.identity())
                    .map_err(|e| e.to_string())
            };
            let verdict = profiling_history::Verdict {
                profile: base.profile.clone(),
                ab_id: pair_dir
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                base: identity(base)?,
                candidate: identity(candidate)?,
                base_commit: base.typed.git_commit.clone(),
                candidate_commit: candidate.typed.git_commit.clone(),
                verdict: profiling_compare::gates::verdict(results).to_string(),
                gates: serde_json::to_string(results).map_err(|e| e.to_string())?,
            };
            store
                .record_verdict(&verdict)
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
    if let Err(message) = written {
        writeln!(
            err,
            "warning: the verdict is not in the history store: {message}; the pair's directory {} keeps it",
            pair_dir.display()
        )?;
    }
    Ok(())
}
