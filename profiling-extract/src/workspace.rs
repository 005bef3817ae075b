//! The user's workspace, and `profile-cli init`: the profiling crate of a
//! workspace of one's own.
//!
//! [`find_workspace`] finds the workspace a directory belongs to as cargo
//! does: the nearest `Cargo.toml` above it, and above that the nearest one
//! with a `[workspace]` table, if any. [`init`] creates
//! `inference_profiling/` there (its manifest, the build script that links
//! `snippets/*` in, a library and a `profile` binary whose `main` is this
//! project's command line) and adds it to the workspace's members, leaving
//! every other file as it was.

use std::path::{Path, PathBuf};

use toml_edit::{Array, DocumentMut, Item, Table, Value};

use super::SnippetError;

/// The profiling crate's directory in a workspace.
pub const PROFILING_DIR: &str = "inference_profiling";

/// The profiling crate's package: not `inference-profiling`, which
/// `profiling-cli`'s own binary links and so is in every lockfile that
/// depends on it.
pub const PROFILING_PACKAGE: &str = "profiling-snippets";

/// The build script of a profiling crate: the one this workspace's own
/// snippets crate uses.
const BUILD_SCRIPT: &str = include_str!("../../inference_profiling/build.rs");

/// The root of the cargo workspace `start` lies in: the nearest directory
/// at or above it whose `Cargo.toml` has a `[workspace]` table, else the
/// nearest with a `Cargo.toml` (a package on its own); `None` when no
/// directory above it has one.
pub fn find_workspace(start: &Path) -> Option<PathBuf> {
    let start = std::path::absolute(start).ok()?;
    workspace_above(&start).map(|(dir, _)| dir).or_else(|| {
        start
            .ancestors()
            .find(|dir| dir.join("Cargo.toml").is_file())
            .map(Path::to_path_buf)
    })
}

/// The root of the workspace `start` lies in, by cargo's rule, with its
/// manifest: the one rule every part of the extractor finds a workspace
/// root by. The package `start` is in (the nearest `Cargo.toml` with a
/// `[package]`) may name its root (`package.workspace`); else it is the
/// nearest directory at or above `start` whose `Cargo.toml` has a
/// `[workspace]` table (or any `[workspace.*]`) that does not exclude the
/// package (`workspace.exclude`, unless `workspace.members` names it).
pub(crate) fn workspace_above(start: &Path) -> Option<(PathBuf, DocumentMut)> {
    let read = |dir: &Path| -> Option<DocumentMut> {
        std::fs::read_to_string(dir.join("Cargo.toml"))
            .ok()?
            .parse()
            .ok()
    };
    // Every manifest at or above `start`, nearest first, each read once.
    let mut manifests: Vec<(&Path, DocumentMut)> = start
        .ancestors()
        .filter_map(|dir| read(dir).map(|document| (dir, document)))
        .collect();
    let package = manifests
        .iter()
        .position(|(_, d)| d.contains_key("package"));
    let member = package.map_or(start, |at| manifests[at].0);
    if let Some(at) = package {
        let named = manifests[at]
            .1
            .get("package")
            .and_then(|p| p.get("workspace"));
        if let Some(named) = named.and_then(Item::as_str) {
            let root = lexically_normal(&member.join(named));
            if let Some(document) = read(&root).filter(|d| d.contains_key("workspace")) {
                return Some((root, document));
            }
        }
    }
    let at = manifests.iter().position(|(dir, document)| {
        document
            .get("workspace")
            .is_some_and(|workspace| !excludes(workspace, dir, member))
    })?;
    let (dir, document) = manifests.swap_remove(at);
    Some((dir.to_path_buf(), document))
}

/// Whether the `[workspace]` of `root` leaves out the package in
/// `package`: under a path of its `exclude`, and not under one of its
/// `members` (written out; a glob is not expanded).
fn excludes(workspace: &Item, root: &Path, package: &Path) -> bool {
    let paths = |key: &str| -> Vec<PathBuf> {
        workspace
            .get(key)
            .and_then(Item::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|path| lexically_normal(&root.join(path)))
            .collect()
    };
    let package = lexically_normal(package);
    paths("exclude")
        .iter()
        .any(|path| package.starts_with(path))
        && !paths("members")
            .iter()
            .any(|path| package.starts_with(path))
}

/// Where the profiling crate takes `profiling-core` and `profiling-cli`
/// from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoreSource {
    /// A checkout of this project: the directory holding `profiling-core/`
    /// and `profiling-cli/`.
    Path(PathBuf),
    /// Its git repository.
    Git(String),
}

/// What `init` was asked for.
#[derive(Debug, Clone)]
pub struct InitRequest {
    /// The workspace root.
    pub workspace: PathBuf,
    pub core: CoreSource,
    /// Consent to add a `[workspace]` table to a lone package's manifest.
    pub make_workspace: bool,
}

/// What `init` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InitOutcome {
    /// The profiling crate was created: its files, from the workspace root,
    /// and what was done to the root manifest.
    Created {
        files: Vec<String>,
        manifest_change: String,
    },
    /// The workspace already has the profiling crate `init` makes: nothing
    /// was written.
    AlreadyThere,
}

/// Creates the profiling crate of `request.workspace`; see the module
/// docs. Refuses, writing nothing, a workspace whose `inference_profiling/`
/// is something else, and a lone package without `make_workspace`.
pub fn init(request: &InitRequest) -> Result<InitOutcome, SnippetError> {
    let root = &request.workspace;
    let manifest_path = root.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest_path).map_err(|source| SnippetError::Read {
        path: manifest_path.clone(),
        source,
    })?;
    let mut manifest: DocumentMut = text.parse().map_err(|error: toml_edit::TomlError| {
        SnippetError::Manifest(format!(
            "{}: {}",
            manifest_path.display(),
            error.to_string().trim()
        ))
    })?;
    let directory = root.join(PROFILING_DIR);
    if directory.exists() {
        return if profiling_package(&directory).is_some() {
            Ok(InitOutcome::AlreadyThere)
        } else {
            Err(SnippetError::Usage(format!(
                "{} exists and is not a profiling crate `init` made: nothing was written; move it aside to make one",
                directory.display()
            )))
        };
    }
    let manifest_change = add_member(&mut manifest, &manifest_path, request.make_workspace)?;

    let files = crate_files(&directory, &request.core)?;
    // All the files in a directory beside it, renamed into place at once.
    let staging = root.join(format!(".{PROFILING_DIR}.init-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let written = files.iter().try_for_each(|(name, text)| {
        let path = staging.join(name);
        std::fs::create_dir_all(path.parent().unwrap_or(&staging))?;
        profiling_core::driver::files::write_atomically(&path, text.as_bytes())
    });
    let placed = written.and_then(|()| std::fs::rename(&staging, &directory));
    if placed.is_ok() {
        let _ = profiling_core::driver::files::sync_directory(root);
    }
    if let Err(source) = placed {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(SnippetError::Write {
            path: directory,
            source,
        });
    }
    if let Err(source) = profiling_core::driver::files::write_atomically(
        &manifest_path,
        manifest.to_string().as_bytes(),
    ) {
        let _ = std::fs::remove_dir_all(&directory);
        return Err(SnippetError::Write {
            path: manifest_path,
            source,
        });
    }
    Ok(InitOutcome::Created {
        files: files
            .iter()
            .map(|(name, _)| format!("{PROFILING_DIR}/{name}"))
            .collect(),
        manifest_change,
    })
}

/// The variable the snippets crate's build script (`build.rs`, the
/// same in every profiling crate) reruns on when it changes: cargo runs
/// it again only when a file it read changed, and cannot watch
/// `snippets/` for new directories without watching every run written
/// there. Every cargo command that builds a snippets crate sets it to
/// [`snippets_listing`].
pub const SNIPPETS_LISTING_VARIABLE: &str = "PROFILING_SNIPPETS_LISTING";

/// What the build script looks for under `snippets_dir`, as one line:
/// each directory, sorted, with which of `Cargo.toml` (C), `target.rs`
/// (M), `DRAFT` (D) and `config.yaml` (Y) it holds; directories with none
/// left out. Empty when the directory cannot be read. `scripts/profile`
/// writes the same line.
pub fn snippets_listing(snippets_dir: &Path) -> String {
    let Ok(entries) = std::fs::read_dir(snippets_dir) else {
        return String::new();
    };
    let mut entries: Vec<std::fs::DirEntry> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    entries
        .iter()
        .filter_map(|entry| {
            let dir = entry.path();
            let flags: String = [
                ("Cargo.toml", 'C'),
                ("target.rs", 'M'),
                ("DRAFT", 'D'),
                ("config.yaml", 'Y'),
            ]
            .iter()
            .filter(|(file, _)| dir.join(file).is_file())
            .map(|(_, flag)| *flag)
            .collect();
            (!flags.is_empty()).then(|| format!("{}:{flags}", entry.file_name().to_string_lossy()))
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// `cargo` (as `$CARGO` names it) for a command that builds the snippets
/// crate in `krate_dir`, with [`SNIPPETS_LISTING_VARIABLE`] set. A build
/// that runs nothing of the user's runs in `krate_dir` too
/// ([`Command::current_dir`](std::process::Command::current_dir)): cargo
/// reads the configuration (`.cargo/config.toml`) of the directory it runs
/// in, not of `--manifest-path`, and other flags from another directory
/// would rebuild everything.
pub fn cargo_for_snippets(krate_dir: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(crate::cargo_program());
    command.env(
        SNIPPETS_LISTING_VARIABLE,
        snippets_listing(&krate_dir.join("snippets")),
    );
    command
}

/// The profiling crate's `.gitignore`: everything runs write under it (run
/// directories with their sweeps and pages, saved baselines, the image
/// cache, the history store), none of which belongs in the repository.
const GITIGNORE: &str = "# What runs write: run directories, saved baselines, the decoded-image cache, the history store.\n/snippets/*/runs/\n/snippets/*/baselines/\n/.cache/\n/history.sqlite*\n";

/// The profiling crate of `workspace` that `init` made, with its package
/// name: `None` when it has none.
pub fn profiling_crate(workspace: &Path) -> Option<(PathBuf, String)> {
    let directory = workspace.join(PROFILING_DIR);
    let package = profiling_package(&directory)?;
    Some((directory, package))
}

/// The package name of the crate in `directory` when it is the profiling
/// crate `init` makes: a package with the `profile` binary that depends on
/// `profiling-cli`.
pub fn profiling_package(directory: &Path) -> Option<String> {
    let manifest: DocumentMut = std::fs::read_to_string(directory.join("Cargo.toml"))
        .ok()?
        .parse()
        .ok()?;
    let has_binary = manifest
        .get("bin")
        .and_then(Item::as_array_of_tables)
        .is_some_and(|bins| {
            bins.iter()
                .any(|bin| bin.get("name").and_then(Item::as_str) == Some("profile"))
        });
    let depends = manifest
        .get("dependencies")
        .and_then(Item::as_table_like)
        .is_some_and(|deps| deps.contains_key("profiling-cli"));
    let package = manifest.get("package")?.get("name")?.as_str()?;
    (has_binary && depends).then(|| package.to_owned())
}

/// Adds the profiling crate to the workspace's members (a lone package
/// gets a `[workspace]` table first, with consent); says what it did.
fn add_member(
    manifest: &mut DocumentMut,
    path: &Path,
    make_workspace: bool,
) -> Result<String, SnippetError> {
    if !manifest.contains_key("workspace") {
        if !make_workspace {
            return Err(SnippetError::Usage(format!(
                "{} is a package, not a workspace: `profile-cli init --make-workspace` adds a [workspace] table with it and {PROFILING_DIR} as members; nothing was written",
                path.display()
            )));
        }
        let mut workspace = Table::new();
        let mut members = Array::new();
        members.push(".");
        members.push(PROFILING_DIR);
        workspace.insert("members", Item::Value(Value::Array(members)));
        manifest.insert("workspace", Item::Table(workspace));
        return Ok(format!(
            "added [workspace] with members \".\" and \"{PROFILING_DIR}\""
        ));
    }
    let workspace = manifest["workspace"].as_table_like_mut().ok_or_else(|| {
        SnippetError::Manifest(format!("{}: `workspace` is not a table", path.display()))
    })?;
    let members = workspace
        .entry("members")
        .or_insert(Item::Value(Value::Array(Array::new())));
    let Some(members) = members.as_array_mut() else {
        return Err(SnippetError::Manifest(format!(
            "{}: `workspace.members` is not an array",
            path.display()
        )));
    };
    let listed = members.iter().filter_map(Value::as_str).any(|member| {
        member.trim_end_matches('/') == PROFILING_DIR || member == "*" || member == "./*"
    });
    if listed {
        return Ok(format!("{PROFILING_DIR} was already a workspace member"));
    }
    members.push(PROFILING_DIR);
    Ok(format!("added \"{PROFILING_DIR}\" to workspace.members"))
}

/// The files of the profiling crate in `directory`, by path below it.
fn crate_files(
    directory: &Path,
    core: &CoreSource,
) -> Result<Vec<(&'static str, String)>, SnippetError> {
    let dependency = |name: &str| match core {
        CoreSource::Path(checkout) => {
            let target = std::path::absolute(checkout.join(name)).map_err(|error| {
                SnippetError::Usage(format!("--core-path {}: {error}", checkout.display()))
            })?;
            let base = std::path::absolute(directory).map_err(|error| {
                SnippetError::Usage(format!("{}: {error}", directory.display()))
            })?;
            Ok(format!(
                "{{ path = {:?} }}",
                super::snippet_crate::relative_path(&base, &target)
            ))
        }
        CoreSource::Git(url) => Ok(format!("{{ git = {url:?} }}")),
    };
    let core_dependency = dependency("profiling-core")?;
    let cli_dependency = dependency("profiling-cli")?;
    let cli_dependency = cli_dependency.replacen(" }", ", default-features = false }", 1);
    let manifest = format!(
        "# The profiling crate of this workspace, made by `profile-cli init`: its\n\
         # snippets (snippets/<dir>/, each a crate of its own once `profile-cli\n\
         # new` or `profile-cli check` made it) are linked into the `profile`\n\
         # binary, which `profile-cli` builds and runs here.\n\
         [package]\n\
         name = \"profiling-snippets\"\n\
         version = \"0.1.0\"\n\
         edition = \"2021\"\n\
         publish = false\n\
         build = \"build.rs\"\n\
         \n\
         [lib]\n\
         name = \"profiling_snippets\"\n\
         \n\
         [[bin]]\n\
         name = \"profile\"\n\
         path = \"src/main.rs\"\n\
         \n\
         [dependencies]\n\
         profiling-core = {core_dependency}\n\
         profiling-cli = {cli_dependency}\n\
         anyhow = \"1\"\n\
         ndarray = \"0.16\"\n\
         serde_yaml = \"0.9\"\n\
         \n\
         [build-dependencies]\n\
         toml = \"1\"\n\
         serde_yaml = \"0.9\"\n\
         \n\
         [features]\n\
         # The data sources that read files (images with their cache, tensors,\n\
         # video, COCO): add it to `default` when a snippet's config names one.\n\
         # Without it, the profile binary builds no image decoder.\n\
         default = []\n\
         sources = [\"profiling-cli/sources\"]\n\
         # CUDA devices and tensors through libtorch.\n\
         tch = [\"profiling-core/tch\", \"profiling-cli/tch\"]\n"
    );
    let lib = "//! The profiling snippets of this workspace, linked in: every\n\
               //! `snippets/<dir>/` that `profile-cli new` (or `check`) made a crate of\n\
               //! its own is a dependency, and a `target.rs` dropped in by hand is\n\
               //! compiled here as a module (see `build.rs`).\n\
               \n\
               pub use profiling_core::driver::registry::Draft;\n\
               \n\
               include!(concat!(env!(\"OUT_DIR\"), \"/snippets.rs\"));\n";
    let main = "//! `profile`: this workspace's profiling binary. `profile-cli` builds and\n\
                //! runs it here; its command line is `profile-cli`'s.\n\
                \n\
                // Linking the snippets is what registers their targets.\n\
                use profiling_snippets as _;\n\
                \n"
    .to_owned()
        + crate::allocator::COUNTING_ALLOCATOR
        + "\n\
                fn main() -> std::process::ExitCode {\n    \
                let crate_dir = std::path::Path::new(env!(\"CARGO_MANIFEST_DIR\"));\n    \
                profiling_cli::run_main_for(crate_dir.parent().unwrap_or(crate_dir))\n\
                }\n";
    Ok(vec![
        ("Cargo.toml", manifest),
        ("build.rs", BUILD_SCRIPT.to_owned()),
        ("src/lib.rs", lib.to_owned()),
        ("src/main.rs", main),
        (".gitignore", GITIGNORE.to_owned()),
        ("snippets/.gitkeep", String::new()),
    ])
}

/// `path` with `.` and `a/..` pairs removed, without looking at the file
/// system (no link followed).
pub(crate) fn lexically_normal(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::ParentDir
                if matches!(
                    normal.components().next_back(),
                    Some(std::path::Component::Normal(_))
                ) =>
            {
                normal.pop();
            }
            std::path::Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The build script reruns on the variable the commands set, and
    /// watches no directory (cargo would scan every run under it).
    #[test]
    fn the_build_script_reruns_on_the_listing_the_commands_pass() {
        assert!(BUILD_SCRIPT.contains(&format!(
            "const LISTING_VARIABLE: &str = \"{SNIPPETS_LISTING_VARIABLE}\";"
        )));
        assert!(
            BUILD_SCRIPT.contains("println!(\"cargo:rerun-if-env-changed={LISTING_VARIABLE}\");")
        );
        assert!(!BUILD_SCRIPT.contains("rerun-if-changed=snippets"));
    }

    #[test]
    fn the_listing_names_each_snippet_directory_with_what_it_holds() {
        let dir = tempfile::tempdir().unwrap();
        let snippets = dir.path();
        assert_eq!(snippets_listing(&snippets.join("missing")), "");
        for (path, text) in [
            ("b_crate/Cargo.toml", "[package]"),
            ("b_crate/DRAFT", "why"),
            ("a_module/target.rs", ""),
            ("a_module/config.yaml", ""),
            ("a_module/runs/r1/manifest.yaml", ""),
            ("notes/readme.txt", ""),
        ] {
            let path = snippets.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        assert_eq!(snippets_listing(snippets), "a_module:MY;b_crate:CD");
        let before = snippets_listing(snippets);
        // A run written under a snippet changes nothing.
        std::fs::create_dir_all(snippets.join("a_module/runs/r2")).unwrap();
        assert_eq!(snippets_listing(snippets), before);
        std::fs::remove_file(snippets.join("b_crate/DRAFT")).unwrap();
        assert_eq!(snippets_listing(snippets), "a_module:MY;b_crate:C");
    }

    #[test]
    fn the_workspace_is_the_nearest_one_above() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("app/src/deep")).unwrap();
        std::fs::write(
            root.join("Cargo.toml"),
            "[workspace]\nmembers = [\"app\"]\n",
        )
        .unwrap();
        std::fs::write(root.join("app/Cargo.toml"), "[package]\nname = \"app\"\n").unwrap();
        assert_eq!(
            find_workspace(&root.join("app/src/deep")),
            Some(root.clone())
        );
        assert_eq!(find_workspace(&root), Some(root.clone()));
        std::fs::remove_file(root.join("Cargo.toml")).unwrap();
        assert_eq!(
            find_workspace(&root.join("app/src/deep")),
            Some(root.join("app")),
            "a package on its own"
        );
        let nowhere = tempfile::tempdir().unwrap();
        assert_eq!(find_workspace(nowhere.path()), None);
    }

    /// As cargo finds it: a package the workspace above excludes is a
    /// workspace of its own (unless a member path names it), and
    /// `package.workspace` names the root.
    #[test]
    fn the_workspace_is_found_by_cargos_rule() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let write = |path: &str, text: &str| {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            "Cargo.toml",
            "[workspace]\nmembers = [\"crates/kept\"]\nexclude = [\"vendor\", \"crates\"]\n",
        );
        write("vendor/lib/Cargo.toml", "[package]\nname = \"lib\"\n");
        write("crates/kept/Cargo.toml", "[package]\nname = \"kept\"\n");
        write("crates/other/Cargo.toml", "[package]\nname = \"other\"\n");
        write(
            "elsewhere/inner/Cargo.toml",
            "[package]\nname = \"inner\"\nworkspace = \"../../outer\"\n",
        );
        write(
            "outer/Cargo.toml",
            "[workspace]\nmembers = [\"../elsewhere/inner\"]\n",
        );
        let found = |path: &str| find_workspace(&root.join(path));
        assert_eq!(found("vendor/lib/src"), Some(root.join("vendor/lib")));
        assert_eq!(found("crates/other"), Some(root.join("crates/other")));
        assert_eq!(found("crates/kept"), Some(root.clone()));
        assert_eq!(found("elsewhere/inner"), Some(root.join("outer")));
        assert_eq!(found("vendor"), Some(root.clone()));
    }
}
