//! Where a new snippet goes and how it is written: a directory and a name
//! no other snippet takes, all its files or none, and no counting allocator
//! in a binary whose production library declares its own.

use std::path::{Path, PathBuf};

use crate::allocator;
use crate::source::{self, display_path};
use crate::{Extracted, NewSnippet, SnippetError, SnippetsCrate};

/// The snippet directory: `--directory`, else the profile's place among the
/// workspace's snippets; for a new snippet, one that does not exist yet.
pub(crate) fn destination(request: &NewSnippet, fresh: bool) -> Result<PathBuf, SnippetError> {
    let directory = match &request.directory {
        Some(dir) => std::path::absolute(dir).map_err(|error| {
            SnippetError::Usage(format!("--directory {}: {error}", dir.display()))
        })?,
        None => request
            .workspace_root
            .join("inference_profiling")
            .join("snippets")
            .join(request.name.replace('-', "_")),
    };
    if fresh && directory.exists() {
        return Err(SnippetError::Exists(directory));
    }
    match directory.parent() {
        Some(parent) if parent.is_dir() => Ok(directory),
        Some(parent) => Err(SnippetError::Usage(format!(
            "--directory {}: the directory above it, {}, does not exist",
            directory.display(),
            parent.display()
        ))),
        None => Err(SnippetError::Usage(format!(
            "--directory {}: not a directory a snippet can go in",
            directory.display()
        ))),
    }
}

/// Refuses a directory that would compile into the same module as another
/// snippet, and a name that a compiled target already has.
pub(crate) fn check_name_is_free(
    request: &NewSnippet,
    directory: &Path,
    snippets_crate: Option<&SnippetsCrate>,
    warnings: &mut Vec<String>,
) -> Result<(), SnippetError> {
    let module = |name: &str| -> String {
        name.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect()
    };
    if let (Some(parent), Some(name)) = (directory.parent(), directory.file_name()) {
        let wanted = module(&name.to_string_lossy());
        if let Ok(entries) = std::fs::read_dir(parent) {
            for entry in entries.flatten() {
                let other = entry.file_name().to_string_lossy().into_owned();
                if entry.path().join("target.rs").is_file() && module(&other) == wanted {
                    return Err(SnippetError::Usage(format!(
                        "snippet directory {} would compile into module `{wanted}`, as {} does: choose another name",
                        directory.display(),
                        entry.path().display()
                    )));
                }
            }
        }
    }
    // A target compiled from this very directory, since removed, is the
    // snippet being made again.
    let remade = directory.join("target.rs");
    let taken: Vec<String> = profiling_core::driver::registry::targets()
        .iter()
        .filter(|entry| {
            entry.name == request.name && entry.source_path(&request.workspace_root) != remade
        })
        .map(|entry| {
            format!(
                "{}:{}",
                entry.display_file(&request.workspace_root),
                entry.line
            )
        })
        .collect();
    if let Some(place) = taken.first() {
        let message = format!(
            "a target named `{}` is already registered ({place})",
            request.name
        );
        if snippets_crate.is_some() {
            return Err(SnippetError::Usage(format!(
                "{message}: `profile-cli run` would refuse both; choose another name"
            )));
        }
        warnings.push(format!(
            "{message}; the new snippet is not compiled where it is, but rename one before compiling both"
        ));
    }
    Ok(())
}

/// Writes `files` into a staging directory beside `directory`, then
/// renames it into place: a failure leaves nothing behind.
pub(crate) fn write_all_or_nothing(
    directory: &Path,
    files: &[(&'static str, String)],
) -> Result<(), SnippetError> {
    struct Staging(Option<PathBuf>);
    impl Drop for Staging {
        fn drop(&mut self) {
            if let Some(path) = &self.0 {
                let _ = std::fs::remove_dir_all(path);
            }
        }
    }
    let parent = directory.parent().unwrap_or(Path::new("."));
    let name = directory
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let staging_path = parent.join(format!(".{name}.new-{}", std::process::id()));
    let write_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SnippetError::Write { path, source }
    };
    std::fs::create_dir(&staging_path).map_err(write_error(&staging_path))?;
    let mut staging = Staging(Some(staging_path.clone()));
    for (file, text) in files {
        let path = staging_path.join(file);
        profiling_core::driver::files::write_atomically(&path, text.as_bytes())
            .map_err(write_error(&directory.join(file)))?;
    }
    if directory.exists() {
        return Err(SnippetError::Exists(directory.to_path_buf()));
    }
    std::fs::rename(&staging_path, directory).map_err(write_error(directory))?;
    staging.0 = None;
    // The rename made durable; the snippet is in place whatever this says.
    let _ = profiling_core::driver::files::sync_directory(parent);
    Ok(())
}

/// When the production library declares the program's global allocator,
/// the profiling binary cannot install the counting one: takes it out of
/// the binary's `main.rs` (the block `init` wrote) and says so, or says
/// what to change when `main.rs` is not as `init` wrote it.
pub(crate) fn leave_out_counting_allocator(
    extracted: &Extracted,
    workspace_root: &Path,
) -> Result<Option<String>, SnippetError> {
    let (Some(krate), Some(src)) = (&extracted.snippets_crate, &extracted.production_src) else {
        return Ok(None);
    };
    let Some((file, line)) = allocator::declared_in(src) else {
        return Ok(None);
    };
    let package = source::CargoManifest::of_file(&file)
        .and_then(|m| m.package)
        .unwrap_or_else(|| "the production crate".to_owned());
    let root = krate.dir.parent().unwrap_or(workspace_root);
    let declared = format!("{}:{line}", display_path(&file, root));
    let main = krate.dir.join("src/main.rs");
    let Ok(text) = std::fs::read_to_string(&main) else {
        return Ok(None);
    };
    if !text.contains("#[global_allocator]") {
        return Ok(None);
    }
    let shown = display_path(&main, root);
    match allocator::without_counting(&text, &package, &declared) {
        Some(edited) => {
            profiling_core::driver::files::write_atomically(&main, edited.as_bytes()).map_err(|source| SnippetError::Write {
                path: main.clone(),
                source,
            })?;
            Ok(Some(format!(
                "`{package}` declares the program's global allocator ({declared}): the counting allocator is taken out of {shown}, as a program has one; memory per range (`--memory`) is unavailable in runs of this workspace"
            )))
        }
        None => Ok(Some(format!(
            "`{package}` declares the program's global allocator ({declared}), and {shown} declares one too: a program has one, so remove the `#[global_allocator]` of {shown}"
        ))),
    }
}

/// When a binary of the production package declares the program's global
/// allocator, wraps it in the counting allocator in the profiling binary's
/// `main.rs` (in place of the block `init` wrote, which counts over the
/// system's) and adds its crate to the profiling crate, as production
/// declares it: the snippets are then timed on production's allocator, and
/// memory per range still counts. What it did, or why it could not, in
/// words.
pub(crate) fn wrap_production_allocator(
    extracted: &Extracted,
    workspace_root: &Path,
) -> Result<Option<String>, SnippetError> {
    let (Some(krate), Some(crate_dir)) = (
        &extracted.snippets_crate,
        extracted.production_src.as_deref().and_then(Path::parent),
    ) else {
        return Ok(None);
    };
    let root = krate.dir.parent().unwrap_or(workspace_root);
    let found = match allocator::in_binaries(crate_dir) {
        Ok(Some(found)) => found,
        Ok(None) => return Ok(None),
        Err(why) => {
            return Ok(Some(format!(
                "{why}: the snippets run on the system's allocator, which production does not"
            )))
        }
    };
    let declared = format!("{}:{}", display_path(&found.file, root), found.line);
    let production = crate::production::Production::read(crate_dir, &krate.dir);
    let package = production
        .as_ref()
        .map_or_else(|| "the production crate".to_owned(), |p| p.package.clone());
    let main = krate.dir.join("src/main.rs");
    let shown = display_path(&main, root);
    let Ok(text) = std::fs::read_to_string(&main) else {
        return Ok(None);
    };
    if !text.contains(allocator::COUNTING_ALLOCATOR) {
        if text.contains(&format!("CountingAllocator<{}>", found.ty)) {
            return Ok(None);
        }
        return Ok(Some(format!(
            "`{package}` runs on `{}` ({declared}), and {shown} is not as `profile-cli init` wrote it: to time the snippets on it, make its global allocator `profiling_core::memory::CountingAllocator<{}>` = `profiling_core::memory::CountingAllocator::new({})`",
            found.ty, found.ty, found.value
        )));
    }
    let Some(dependency) = production
        .as_ref()
        .and_then(|p| p.dependency(&found.krate))
        .cloned()
    else {
        return Ok(Some(format!(
            "`{package}` runs on `{}` ({declared}), but its crate `{}` is not among {package}'s dependencies in its Cargo.toml: the snippets run on the system's allocator",
            found.ty, found.krate
        )));
    };
    let cargo = krate.dir.join("Cargo.toml");
    let added = crate::snippet_crate::add_production_dependency(&cargo, &dependency)?;
    let edited = text.replacen(
        allocator::COUNTING_ALLOCATOR,
        &allocator::wrapping(&found, &package, &declared),
        1,
    );
    profiling_core::driver::files::write_atomically(&main, edited.as_bytes()).map_err(
        |source| SnippetError::Write {
            path: main.clone(),
            source,
        },
    )?;
    Ok(Some(format!(
        "`{package}` runs on `{}` ({declared}): {shown} counts allocations over it{}, so the snippets are timed on it and memory per range still counts",
        found.ty,
        if added {
            format!(
                " (`{dependency}` added to {})",
                display_path(&cargo, root)
            )
        } else {
            String::new()
        }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate;

    #[test]
    fn a_write_that_fails_midway_leaves_nothing_behind() {
        let parent = tempfile::tempdir().unwrap();
        let directory = parent.path().join("half");
        let files = [
            ("target.rs", "// written first\n".to_owned()),
            ("no/such/dir/README.md", "never written\n".to_owned()),
        ];
        let error = write_all_or_nothing(&directory, &files).unwrap_err();
        assert!(
            matches!(&error, SnippetError::Write { path, .. } if path.ends_with("no/such/dir/README.md")),
            "{error}"
        );
        assert_eq!(error.exit_code(), 1);
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_directory_that_compiles_into_a_taken_module_is_refused() {
        let parent = tempfile::tempdir().unwrap();
        let taken = parent.path().join("my_nms");
        std::fs::create_dir(&taken).unwrap();
        std::fs::write(taken.join("target.rs"), "").unwrap();
        let mut request = NewSnippet::new("my-nms", "src/x.rs::f".parse().unwrap(), parent.path());
        request.directory = Some(parent.path().join("my.nms"));
        let error = generate(&request).unwrap_err().to_string();
        assert!(
            error.contains("would compile into module `my_nms`"),
            "{error}"
        );
    }
}
