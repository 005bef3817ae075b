//! Planning a run: the config resolved, the target found, the device and
//! the run directory checked, every rule checked without side effects.

use std::path::{Path, PathBuf};

use crate::backend;
use crate::data::{self, DataError};
use crate::driver::config::{self, Batches, Config, ConfigError, ConfigFile, LastBatch};
use crate::driver::provenance::UtcTime;
use crate::driver::registry::{self, Lookup, TargetEntry};

use super::{absolute, ConfigOrigin, ConfigSections, Planned, RunRequest, SessionError};

/// Resolves and checks everything about a run without running or writing
/// anything.
pub fn plan(request: &RunRequest) -> Result<Planned, SessionError> {
    let explicit = match &request.config_path {
        Some(path) => Some(ConfigFile::load(path)?),
        None => None,
    };
    let name = match (&request.target, explicit.as_ref().and_then(ConfigFile::target_name)) {
        (Some(name), _) => name.clone(),
        (None, Some(name)) => name.to_owned(),
        (None, None) => {
            return Err(match &request.config_path {
                Some(path) => SessionError::Usage(format!(
                    "{}: target.name: missing, and no target was named on the command line",
                    path.display()
                )),
                None => SessionError::Usage("name a target to run, or give --config FILE (`profile-cli list` shows the targets)".to_owned()),
            })
        }
    };
    let entry = find_target(&name)?;

    let (file, origin) = match explicit {
        Some(file) => (Some(file), ConfigOrigin::Explicit),
        None => match beside_target(entry, &request.workspace_root, &name)? {
            Some(file) => (Some(file), ConfigOrigin::BesideTarget),
            None => (None, ConfigOrigin::Defaults),
        },
    };
    let file = match (file, request.config_edits.is_empty()) {
        (file, true) => file,
        (Some(file), false) => Some(file.with_edits(&request.config_edits)?),
        (None, false) => Some(ConfigFile::for_target(&name).with_edits(&request.config_edits)?),
    };
    let mut overrides = request.overrides.clone();
    overrides.target = Some(name.clone());
    let mut config = match &file {
        Some(file) => file.resolve(&overrides)?,
        None => config::defaults_for(&name, &overrides)?,
    };
    // A config the user named keeps its runs beside it; one found beside
    // the target, or none, takes the default.
    if config.output_dir.is_none() && origin != ConfigOrigin::Explicit {
        config.output_dir = request.default_output_dir.clone();
    }
    let sections = file
        .as_ref()
        .map_or_else(ConfigSections::default, |file| ConfigSections {
            load: file.load_section().cloned(),
            sweep: file.sweep().cloned(),
            ab_accept: file.ab_accept().map(str::to_owned),
            nsys_args: file.nsys_args().to_vec(),
        });
    let config_path = file.and_then(|f| f.path);

    if let Some(import_path) = &config.target.import_path {
        check_import_path(
            import_path,
            entry,
            &request.workspace_root,
            config_path.as_deref(),
        )?;
    }
    backend::check_device(config.device).map_err(|reason| SessionError::DeviceUnavailable {
        device: config.device,
        reason,
    })?;
    crate::driver::runner::check_memory_attribution(&config)
        .map_err(|error| SessionError::Usage(format!("{error:#}")))?;
    // Absolute, so that every path the run prints or records is.
    let runs = absolute(&run_directory(
        &config,
        config_path.as_deref(),
        &request.workspace_root,
    ));
    let run_id = match &request.run_id {
        Some(run_id) => {
            config::check_run_id(run_id).map_err(SessionError::RunId)?;
            run_id.clone()
        }
        None => default_run_id(&runs, &UtcTime::now().compact()),
    };
    let run_dir = runs.join(&run_id);
    let run_root = absolute(&run_root(
        config.output_dir.as_deref(),
        &request.workspace_root,
    ));
    let planned = Planned {
        config,
        config_path,
        config_origin: origin,
        entry,
        run_id,
        run_dir,
        force: request.force,
        run_root,
        staged_in: None,
        sections,
    };
    check_batches(&planned)?;
    Ok(planned)
}

/// Refuses, before anything is built, run or written, batches the run
/// cannot have: `workload.batch_size` > 1 for a target that does not take
/// batches (its impl block keeps the default `prepare_batch`, as
/// `#[profile_target]` records in [`TargetEntry::takes_batches`]), and
/// `workload.last_batch: drop` on fewer records than one batch (the data
/// source is built, not read, to count them). A batch size of 1 is always
/// fine. [`plan()`] calls it, so a sweep's points are checked when each is
/// planned; [`execute()`](super::execute()) checks the target again (a `Planned` may be made
/// by hand) and the records on the source it builds to run.
pub fn check_batches(planned: &Planned) -> Result<(), SessionError> {
    check_takes_batches(planned)?;
    let config = &planned.config;
    if config.batch_size > 1 && config.last_batch == LastBatch::Drop {
        let source = data::build(&config.data_source.name, &config.data_source.parameters)
            .and_then(|source| select_records(source, config))
            .map_err(|error| data_source_error(planned, error))?;
        check_whole_batch(planned, source.len())?;
    }
    Ok(())
}

/// `workload.batch_size` > 1 needs a target that takes batches.
pub(super) fn check_takes_batches(planned: &Planned) -> Result<(), SessionError> {
    if planned.config.batch_size > 1 && !planned.entry.takes_batches {
        return Err(batches_unsupported(planned));
    }
    Ok(())
}

/// `last_batch: drop` needs one whole batch of the source's `records`.
pub(super) fn check_whole_batch(planned: &Planned, records: usize) -> Result<(), SessionError> {
    let config = &planned.config;
    if Batches::new(records, config.batch_size, config.last_batch).batches > 0 {
        return Ok(());
    }
    Err(ConfigError::Invalid {
        file: planned.config_path.clone(),
        key: "workload.last_batch".to_owned(),
        message: format!(
            "`drop` leaves no batch: the data source has {records} record(s), fewer than workload.batch_size {}; use `keep`, a batch_size of at most {records}, or more records",
            config.batch_size
        ),
    }
    .into())
}

pub(super) fn batches_unsupported(planned: &Planned) -> SessionError {
    let entry = planned.entry;
    SessionError::BatchesUnsupported {
        name: entry.name.to_owned(),
        type_name: entry.type_name.to_owned(),
        defined_at: format!("{}:{}", entry.file, entry.line),
        batch_size: planned.config.batch_size,
    }
}

/// The UTC time stamp `stamp` as a run id, or, when a run in `runs` has it
/// already (two runs started in one second), `stamp-2`, `stamp-3`, ...
fn default_run_id(runs: &Path, stamp: &str) -> String {
    let taken = |id: &str| runs.join(id).exists() || runs.join(format!(".{id}.claim")).exists();
    if !taken(stamp) {
        return stamp.to_owned();
    }
    (2..)
        .map(|n| format!("{stamp}-{n}"))
        .find(|id| !taken(id))
        .unwrap_or_else(|| stamp.to_owned())
}

/// Refuses a run whose directory holds an earlier run, unless `--force`
/// replaces it. Not part of [`plan()`]: `--print-nsys-command` prints a
/// command for later and looks at no directory.
pub fn check_run_dir_free(planned: &Planned) -> Result<(), SessionError> {
    if planned.write_dir().exists() && !planned.force {
        return Err(SessionError::RunExists {
            run_id: planned.run_id.clone(),
            run_dir: planned.write_dir().to_path_buf(),
        });
    }
    Ok(())
}

fn find_target(name: &str) -> Result<&'static TargetEntry, SessionError> {
    match registry::lookup(name) {
        Lookup::Found(entry) => Ok(entry),
        Lookup::Ambiguous(entries) => Err(SessionError::AmbiguousTarget {
            name: name.to_owned(),
            places: entries
                .iter()
                .map(|e| format!("{}:{}", e.file, e.line))
                .collect(),
        }),
        Lookup::Missing { near } => match registry::unavailable().iter().find(|u| u.name == name) {
            Some(unavailable) => Err(SessionError::NeedsFeature {
                name: name.to_owned(),
                feature: unavailable.feature,
            }),
            None => Err(SessionError::UnknownTarget {
                name: name.to_owned(),
                near: near.into_iter().map(str::to_owned).collect(),
            }),
        },
    }
}

/// The `config.yaml` beside the target's source file, when it names this
/// target.
pub(crate) fn beside_target(
    entry: &TargetEntry,
    root: &Path,
    name: &str,
) -> Result<Option<ConfigFile>, SessionError> {
    let source = entry.source_path(root);
    let Some(candidate) = source.parent().map(|dir| dir.join("config.yaml")) else {
        return Ok(None);
    };
    if !candidate.is_file() {
        return Ok(None);
    }
    let file = ConfigFile::load(&candidate)?;
    Ok((file.target_name() == Some(name)).then_some(file))
}

/// `DIR/<profile_name>/runs` with an output directory, else the config
/// file's `runs/`, else the snippets directory of the workspace.
pub(crate) fn run_directory(
    config: &Config,
    config_path: Option<&Path>,
    workspace_root: &Path,
) -> PathBuf {
    if let Some(dir) = &config.output_dir {
        return dir.join(&config.profile_name).join("runs");
    }
    if let Some(path) = config_path {
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        return parent.join("runs");
    }
    let base = if workspace_root.is_dir() {
        workspace_root.to_path_buf()
    } else {
        PathBuf::from(".")
    };
    base.join("inference_profiling")
        .join("snippets")
        .join(&config.profile_name)
        .join("runs")
}

/// The root of the run directories, where the caches that runs share live
/// (`.cache/` in it): the output directory when there is one (`output_dir`
/// or `--output-dir`), else the workspace's `inference_profiling/`, which
/// holds the snippets and their runs.
pub fn run_root(output_dir: Option<&Path>, workspace_root: &Path) -> PathBuf {
    if let Some(dir) = output_dir {
        return dir.to_path_buf();
    }
    let base = if workspace_root.is_dir() {
        workspace_root
    } else {
        Path::new(".")
    };
    base.join("inference_profiling")
}

/// `target.import_path` is `<file.rs>[:<Ident>]`: the file must be the
/// target's source file, the ident its type or factory.
fn check_import_path(
    import_path: &str,
    entry: &TargetEntry,
    root: &Path,
    config_path: Option<&Path>,
) -> Result<(), SessionError> {
    let (file, ident) = match import_path.rsplit_once(':') {
        Some((file, ident)) if is_identifier(ident) => (file, Some(ident)),
        _ => (import_path, None),
    };
    let defined_at = format!("{}:{}", entry.display_file(root), entry.line);
    let mismatch = |detail: String| SessionError::ImportPathMismatch {
        import_path: import_path.to_owned(),
        name: entry.name.to_owned(),
        defined_at: defined_at.clone(),
        detail,
    };
    let wanted = Path::new(file);
    let source = entry.source_path(root);
    let candidates: Vec<PathBuf> = if wanted.is_absolute() {
        vec![wanted.to_path_buf()]
    } else {
        let mut list = vec![root.join(wanted), wanted.to_path_buf()];
        if let Some(dir) = config_path.and_then(Path::parent) {
            list.push(dir.join(wanted));
        }
        list
    };
    let same_file = |candidate: &PathBuf| match (candidate.canonicalize(), source.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !candidates.iter().any(same_file) {
        let exists = candidates.iter().any(|c| c.is_file());
        return Err(mismatch(if exists {
            String::new()
        } else {
            format!(" ({file} does not exist)")
        }));
    }
    if let Some(ident) = ident {
        let type_ident = last_segment(entry.type_name);
        let factory_ident = last_segment(entry.constructor);
        if ident != type_ident && ident != factory_ident {
            return Err(mismatch(format!(
                " (`{ident}` is neither its type `{type_ident}` nor its factory `{factory_ident}`)"
            )));
        }
    }
    Ok(())
}

fn last_segment(path: &str) -> &str {
    let without_generics = path.split('<').next().unwrap_or(path);
    without_generics
        .rsplit("::")
        .next()
        .unwrap_or(without_generics)
        .trim()
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// The records of `source` the workload's `records` and `shuffle` pick,
/// shuffled by the run's seed (0 without one).
pub(super) fn select_records(
    source: Box<dyn data::DataSource>,
    config: &Config,
) -> Result<Box<dyn data::DataSource>, DataError> {
    data::select(source, &config.selection, config.seed.unwrap_or(0))
}

/// A data source's parameters are part of the config: their errors name
/// the file and the key.
pub(super) fn data_source_error(planned: &Planned, error: DataError) -> SessionError {
    let (key, message) = match error {
        DataError::Parameter { key, message } => (format!("data_source.{key}"), message),
        DataError::Parameters { message, .. } => ("data_source".to_owned(), message),
        // `records` or `shuffle`, at the top or under `workload:`.
        DataError::Workload { key, message } => {
            let nested = format!("workload.{key}");
            let under_workload = planned.config_path.as_deref().is_some_and(|path| {
                crate::driver::config::locate_key(path, &key).is_none()
                    && crate::driver::config::locate_key(path, &nested).is_some()
            });
            (if under_workload { nested } else { key }, message)
        }
        other => return other.into(),
    };
    located(planned, key, message).into()
}

/// An error about `key` of the config, found after it was parsed: at the
/// key's line and column in the file where it can be found there (for
/// serde's refusal of an unknown field, which names the mapping, the
/// field's), else naming the key.
pub(super) fn located(planned: &Planned, key: String, message: String) -> ConfigError {
    let field = message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split_once('`'))
        .map(|(field, _)| format!("{key}.{field}"));
    let position = planned.config_path.as_deref().and_then(|path| {
        field
            .as_deref()
            .and_then(|field| crate::driver::config::locate_key(path, field))
            .or_else(|| crate::driver::config::locate_key(path, &key))
    });
    match position {
        Some((line, column)) => ConfigError::Syntax {
            file: planned.config_path.clone(),
            line,
            column,
            message: format!("{key}: {message}"),
        },
        None => ConfigError::Invalid {
            file: planned.config_path.clone(),
            key,
            message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two runs started in the same second without `--run-id`: the second
    /// gets the stamp with `-2`, then `-3`, whether the first is written
    /// already or only claimed.
    #[test]
    fn a_default_run_id_taken_in_the_same_second_gets_a_suffix() {
        let runs = tempfile::tempdir().unwrap();
        let stamp = "20261201T120000Z";
        assert_eq!(default_run_id(runs.path(), stamp), stamp);
        std::fs::create_dir(runs.path().join(stamp)).unwrap();
        assert_eq!(default_run_id(runs.path(), stamp), format!("{stamp}-2"));
        std::fs::write(runs.path().join(format!(".{stamp}-2.claim")), "1").unwrap();
        assert_eq!(default_run_id(runs.path(), stamp), format!("{stamp}-3"));
    }
}
