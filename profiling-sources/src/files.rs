//! The files a source reads, as its parameters list them: the files of a
//! `directory` (those whose names match a `pattern`, else those with the
//! source's extensions), a `pattern` that names its directory, or `paths`.
//! The one place that choice is made and checked, for `images` and
//! `tensors` alike; what each says of a directory or file it cannot read is
//! its own ([`FileKind`]).

use std::path::{Path, PathBuf};

use profiling_core::data::DataError;
use profiling_core::yaml::check_literal_path;

/// What a source reads from its file list, and what it says when the list
/// gives none.
pub(crate) struct FileKind {
    /// The source's name, as its messages say it.
    pub source: &'static str,
    /// One of its files, in words: `image file`.
    pub file: &'static str,
    /// Whether a file of the directory is kept when no `pattern` is given.
    pub keeps: fn(&Path) -> bool,
    /// The error when the directory cannot be listed.
    pub unlisted: fn(&Path, std::io::Error) -> DataError,
    /// The error when the directory holds no file it keeps (with the
    /// `pattern` they were matched against, if any).
    pub no_files: fn(&Path, Option<&str>) -> DataError,
    /// Why an entry of `paths` cannot be read, when it cannot.
    pub unreadable: fn(&Path) -> Option<String>,
}

/// Where the files came from, for the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOrigin {
    Directory(PathBuf),
    Paths,
}

/// A source's files, as listed.
#[derive(Debug, Clone)]
pub(crate) struct FileList {
    pub origin: FileOrigin,
    /// A directory's files, sorted; `paths` as given.
    pub files: Vec<PathBuf>,
    /// Entries of the directory that would have been kept by their name
    /// but are not files that can be read (`name (a FIFO)`), sorted.
    pub skipped: Vec<String>,
}

pub(crate) fn parameter_error(key: &str, message: impl Into<String>) -> DataError {
    DataError::Parameter {
        key: key.to_owned(),
        message: message.into(),
    }
}

impl FileKind {
    /// The files of `directory` xor `paths`; `pattern` (for a source that
    /// takes one) filters the directory's names, or, without either, names
    /// the directory itself (`/data/outputs/*.npz`).
    pub fn list(
        &self,
        directory: Option<PathBuf>,
        pattern: Option<String>,
        paths: Option<Vec<PathBuf>>,
    ) -> Result<FileList, DataError> {
        let (directory, pattern) = match (directory, &paths, pattern) {
            (None, None, Some(pattern)) => {
                let (directory, names) = self.split_pattern(&pattern)?;
                (Some(directory), Some(names))
            }
            (directory, _, pattern) => (directory, pattern),
        };
        match (directory, paths) {
            (Some(_), Some(_)) => Err(parameter_error(
                "paths",
                "give either `directory` or `paths`, not both",
            )),
            (None, None) => Err(parameter_error(
                "directory",
                format!(
                    "missing: the {} source needs `directory` (or `paths`, a list of files)",
                    self.source
                ),
            )),
            (Some(directory), None) => {
                check_literal_path(&directory.to_string_lossy())
                    .map_err(|m| parameter_error("directory", m))?;
                let glob = match &pattern {
                    Some(text) => Some(glob::Pattern::new(text).map_err(|error| {
                        parameter_error("pattern", format!("`{text}` is not a glob: {error}"))
                    })?),
                    None => None,
                };
                let (files, skipped) = self.list_directory(&directory, glob.as_ref())?;
                if files.is_empty() {
                    return Err((self.no_files)(&directory, pattern.as_deref()));
                }
                Ok(FileList {
                    origin: FileOrigin::Directory(directory),
                    files,
                    skipped,
                })
            }
            (None, Some(paths)) => {
                if pattern.is_some() {
                    return Err(parameter_error(
                        "pattern",
                        "filters `directory`; `paths` lists the files itself",
                    ));
                }
                if paths.is_empty() {
                    return Err(parameter_error(
                        "paths",
                        format!("is empty: list at least one {}", self.file),
                    ));
                }
                for path in &paths {
                    check_literal_path(&path.to_string_lossy())
                        .map_err(|m| parameter_error("paths", m))?;
                    if let Some(why) = (self.unreadable)(path) {
                        return Err(parameter_error("paths", why));
                    }
                }
                Ok(FileList {
                    origin: FileOrigin::Paths,
                    files: paths,
                    skipped: Vec::new(),
                })
            }
        }
    }

    /// A `pattern` given without `directory`: its directory (every
    /// component but the last, which must hold no glob character) and the
    /// glob of the file names (the last). `outputs/*.npz` is `outputs` and
    /// `*.npz`.
    fn split_pattern(&self, pattern: &str) -> Result<(PathBuf, String), DataError> {
        let path = Path::new(pattern);
        let (Some(directory), Some(names)) = (path.parent(), path.file_name()) else {
            return Err(parameter_error(
                "directory",
                format!(
                    "missing: the {} source needs `directory` (or `paths`, a list of files, or a `pattern` that names its directory, such as `/data/outputs/*.npz`)",
                    self.source
                ),
            ));
        };
        if directory.as_os_str().is_empty() {
            return Err(parameter_error(
                "directory",
                format!("missing: `pattern: {pattern}` names no directory; give `directory`, or write the directory into the pattern (`/data/outputs/{pattern}`)"),
            ));
        }
        let text = directory.to_string_lossy();
        if text.contains(['*', '?', '[']) {
            return Err(parameter_error(
                "pattern",
                format!("`{pattern}`: only the file name may be a glob; `{text}` names more than one directory (the files of one directory are read)"),
            ));
        }
        check_literal_path(&text).map_err(|m| parameter_error("pattern", m))?;
        Ok((
            directory.to_path_buf(),
            names.to_string_lossy().into_owned(),
        ))
    }

    /// The files of `directory` it keeps (those matching `pattern` when
    /// given), sorted; and the entries that would have been kept by their
    /// name but are not files that can be read (`name (a FIFO)`), sorted.
    fn list_directory(
        &self,
        directory: &Path,
        pattern: Option<&glob::Pattern>,
    ) -> Result<(Vec<PathBuf>, Vec<String>), DataError> {
        let entries =
            std::fs::read_dir(directory).map_err(|error| (self.unlisted)(directory, error))?;
        let mut files = Vec::new();
        let mut skipped = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| DataError::Io {
                path: directory.to_path_buf(),
                source,
            })?;
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let keep = match pattern {
                Some(pattern) => pattern.matches(&name),
                None => (self.keeps)(&path),
            };
            if !keep {
                continue;
            }
            match not_a_regular_file(&path) {
                None => files.push(path),
                // A directory named like a kept file is not worth a note.
                Some(what) if what == "a directory" => {}
                Some(what) => skipped.push(format!("{name} ({what})")),
            }
        }
        files.sort();
        skipped.sort();
        Ok((files, skipped))
    }
}

/// What kind of entry `path` is when it is not a file that can be read:
/// `Some("a FIFO")`, `Some("a symbolic link that loops")`; `None` for a
/// regular file (through symbolic links) and for a path that is not there
/// (which reading it then says).
pub(crate) fn not_a_regular_file(path: &Path) -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    let kind = match std::fs::metadata(path) {
        Ok(metadata) => metadata.file_type(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return std::fs::symlink_metadata(path)
                .is_ok()
                .then(|| "a symbolic link to nothing".to_owned());
        }
        Err(error) if error.raw_os_error() == Some(libc::ELOOP) => {
            return Some("a symbolic link that loops".to_owned());
        }
        Err(error) => return Some(format!("not readable ({error})")),
    };
    let what = if kind.is_file() {
        return None;
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    };
    Some(what.to_owned())
}
