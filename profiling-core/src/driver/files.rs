//! The one way this project writes a file the user keeps: into a temporary
//! file beside it, flushed to the disk, renamed over the path, and the
//! directory flushed so that the rename itself survives a crash. A reader
//! sees the old content or all of the new, never a part; a full disk leaves
//! the old file as it was and no temporary behind.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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
    write_through_temporary(path, true, write)
}

/// Writes `path` atomically but without flushing it to the disk: for a
/// cache, whose entries are checked when read and cost only time when
/// lost, and which a flush per entry would make slower than no cache. A
/// reader still sees the old file or all of the new one.
pub fn write_replaceable_with(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    write_through_temporary(path, false, write)
}

fn write_through_temporary(
    path: &Path,
    durable: bool,
    write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    // Renamed into place or removed before a signal ends the process.
    let _writing = crate::driver::interrupt::Hold::new();
    // A new file, never one a link points at, nor another thread's.
    let (temporary, file) = loop {
        let temporary = temporary_beside(path);
        match File::create_new(&temporary) {
            Ok(file) => break (temporary, file),
            // A leftover of a process that had this id: a later name.
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(error),
        }
    };
    let result = (|| {
        let mut file = BufWriter::new(file);
        write(&mut file)?;
        let file = file.into_inner().map_err(|e| e.into_error())?;
        if durable {
            file.sync_all()?;
        }
        drop(file);
        std::fs::rename(&temporary, path)?;
        if durable {
            sync_directory(directory_of(path))?;
        }
        Ok(())
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

/// A temporary file that becomes `path`: hidden, beside it (a rename
/// within one directory is atomic), named for the process that writes it
/// and a count of its writes, so that two threads never share one; what
/// `runs clean` and a cache's cleaning recognize by its `.tmp` end.
pub fn temporary_beside(path: &Path) -> PathBuf {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy());
    directory_of(path).join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ))
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

    /// The names of the entries of `dir`.
    fn names_in(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect()
    }

    #[test]
    fn replaces_the_old_content_whole_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("load.yaml");
        std::fs::write(&path, "old").unwrap();
        write_atomically(&path, b"new content").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new content");
        assert_eq!(names_in(dir.path()), ["load.yaml"]);
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_removes_the_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("load.html");
        std::fs::write(&path, "old page").unwrap();
        let error = write_atomically_with(&path, |file| {
            file.write_all(b"half a page")?;
            Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "disk full",
            ))
        })
        .unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::StorageFull);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old page");
        assert_eq!(names_in(dir.path()), ["load.html"]);
    }

    #[test]
    fn threads_writing_one_path_never_share_a_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry");
        std::thread::scope(|scope| {
            for thread in 0..8u8 {
                let path = &path;
                scope.spawn(move || {
                    for _ in 0..50 {
                        write_replaceable_with(path, |f| f.write_all(&[thread; 4096])).unwrap();
                    }
                });
            }
        });
        // Whole: one thread's bytes, never a mix.
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 4096);
        assert!(bytes.iter().all(|&b| b == bytes[0]));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_relative_path_without_a_directory_is_written_in_the_current_one() {
        assert_eq!(directory_of(Path::new("x.yaml")), Path::new("."));
        let temporary = temporary_beside(Path::new("x.yaml"));
        assert_eq!(temporary.parent(), Some(Path::new(".")));
        let name = temporary
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            name.starts_with(&format!(".x.yaml.{}.", std::process::id())),
            "{name}"
        );
        assert!(name.ends_with(".tmp"), "{name}");
    }
}
