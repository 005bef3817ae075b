//! The one way this project writes a file the user keeps: into a temporary
//! file beside it, flushed to the disk, renamed over the path, and the
//! directory flushed so that the rename itself survives a crash. A reader
//! sees the old content or all of the new, never a part; a full disk leaves
//! the old file as it was and no temporary behind.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically (see the module's doc).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomically_with(path, |file| file.write_all(bytes))
}

/// Writes `path` atomically from what `write` puts into a buffered writer:
/// for a file serialized as it is made (a JSON document, a page), without a
/// copy of it in memory.
pub fn write_atomically_with(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let temporary = temporary_beside(path);
    // Renamed into place or removed before a signal ends the process.
    let _writing = crate::driver::interrupt::Hold::new();
    let result = (|| {
        let mut file = BufWriter::new(
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temporary)
                .or_else(|error| {
                    // A leftover of this same process id (a process that
                    // died with it): ours to replace.
                    if error.kind() == std::io::ErrorKind::AlreadyExists {
                        std::fs::remove_file(&temporary)?;
                        File::create_new(&temporary)
                    } else {
                        Err(error)
                    }
                })?,
        );
        write(&mut file)?;
        let file = file.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temporary, path)?;
        sync_directory(directory_of(path))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

/// Flushes a directory's entries (a rename or a new file in it) to the
/// disk. A file system that cannot (some network and FUSE ones answer
/// `EINVAL`) is taken at its word: the data itself was flushed.
pub fn sync_directory(directory: &Path) -> std::io::Result<()> {
    match File::open(directory).and_then(|d| d.sync_all()) {
        Err(error)
            if matches!(
                error.raw_os_error(),
                Some(libc::EINVAL) | Some(libc::ENOTSUP) | Some(libc::EBADF)
            ) =>
        {
            Ok(())
        }
        other => other,
    }
}

/// The temporary file that becomes `path`: hidden, beside it (a rename
/// within one directory is atomic), named for the process that writes it.
pub fn temporary_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy());
    directory_of(path).join(format!(".{name}.{}.tmp", std::process::id()))
}

fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_old_content_whole_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("load.yaml");
        std::fs::write(&path, "old").unwrap();
        write_atomically(&path, b"new content").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new content");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["load.yaml"]);
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_removes_the_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("load.html");
        std::fs::write(&path, "old page").unwrap();
        let error = write_atomically_with(&path, |file| {
            file.write_all(b"half a page")?;
            Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "disk full"))
        })
        .unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::StorageFull);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old page");
        assert!(!temporary_beside(&path).exists());
    }

    #[test]
    fn a_relative_path_without_a_directory_is_written_in_the_current_one() {
        assert_eq!(directory_of(Path::new("x.yaml")), Path::new("."));
        assert_eq!(
            temporary_beside(Path::new("x.yaml")),
            Path::new(".").join(format!(".x.yaml.{}.tmp", std::process::id()))
        );
    }
}
