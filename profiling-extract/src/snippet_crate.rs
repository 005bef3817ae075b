//! A snippet as a crate of its own, and drafts.
//!
//! A snippet directory under `<snippets crate>/snippets/` that holds a
//! `Cargo.toml` is a crate (`snippet-<directory>`, its library root
//! `target.rs`), so that editing one snippet rebuilds that crate alone. The
//! snippets crate (`inference-profiling`) links it in by depending on it:
//! `snippet-x = { path = "snippets/x" }` in its `[dependencies]`, which its
//! build script turns into `pub use snippet_x as x;`.
//!
//! A snippet that does not build is a *draft*: its directory holds a `DRAFT`
//! file, whose first line says why, and nothing depends on it, so it breaks
//! no other build. [`check`](crate::check_snippet) builds the snippets crate
//! with it included and, when that compiles, removes the file.
//!
//! The snippet crate's dependencies and features are those of the snippets
//! crate (its own manifest is the template): a snippet can name what a
//! snippet compiled into the snippets crate could.

use std::path::{Path, PathBuf};

use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value};

use super::source::is_snippet_path;
use super::{SnippetError, SnippetsCrate};

/// The file that makes a snippet directory a draft.
pub const DRAFT_FILE: &str = "DRAFT";

/// The package name of the crate of snippet directory `directory`:
/// `snippet-` and the directory name, characters outside `[A-Za-z0-9]` as
/// `-`.
pub fn package_name(directory: &str) -> String {
    let name: String = directory
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("snippet-{}", name.trim_matches('-'))
}

fn read_manifest(path: &Path) -> Result<DocumentMut, SnippetError> {
    let text = std::fs::read_to_string(path).map_err(|source| SnippetError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    text.parse().map_err(|error: toml_edit::TomlError| {
        SnippetError::Manifest(format!("{}: {}", path.display(), error.to_string().trim()))
    })
}

fn write(path: &Path, text: &str) -> Result<(), SnippetError> {
    profiling_core::driver::files::write_atomically(path, text.as_bytes()).map_err(|source| {
        SnippetError::Write {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// Adds `dependency` to `[dependencies]` of the manifest at `path`, as
/// production declares it; false where it has one of that key already.
pub(crate) fn add_production_dependency(
    path: &Path,
    dependency: &crate::ProductionDependency,
) -> Result<bool, SnippetError> {
    let mut document = read_manifest(path)?;
    let table = document
        .entry("dependencies")
        .or_insert(toml_edit::table())
        .as_table_like_mut()
        .ok_or_else(|| {
            SnippetError::Manifest(format!("{}: `dependencies` is not a table", path.display()))
        })?;
    if table.contains_key(&dependency.key) {
        return Ok(false);
    }
    table.insert(
        &dependency.key,
        toml_edit::Item::Value(toml_edit::Value::InlineTable(dependency.spec.clone())),
    );
    write(path, &document.to_string())?;
    Ok(true)
}

/// A path dependency of the snippets crate on a crate of its workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedDependency {
    /// The package name.
    pub package: String,
    /// Its directory, relative to the snippets crate's.
    pub path: String,
}

impl std::fmt::Display for AddedDependency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} = {{ path = {:?} }}", self.package, self.path)
    }
}

/// The dependency `krate` needs to name the crate `file` belongs to, when
/// that is a package of the same workspace (not one from a registry).
pub(crate) fn path_dependency(krate: &SnippetsCrate, file: &Path) -> Option<AddedDependency> {
    let manifest = super::source::CargoManifest::of_file(file)?;
    let package = manifest.package.clone()?;
    manifest.lib_root()?;
    let root = krate.workspace_root().canonicalize().ok()?;
    let from = krate.dir.canonicalize().ok()?;
    let to = manifest.dir.canonicalize().ok()?;
    if !to.starts_with(&root) || to == from {
        return None;
    }
    Some(AddedDependency {
        package,
        path: relative_path(&from, &to),
    })
}

/// `to` as seen from `from`, both absolute: `../examples`.
pub(crate) fn relative_path(from: &Path, to: &Path) -> String {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let shared = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_owned(); from.len() - shared];
    parts.extend(
        to[shared..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    }
}

fn insert_path_dependency(
    document: &mut DocumentMut,
    manifest_path: &Path,
    added: &AddedDependency,
) -> Result<bool, SnippetError> {
    let dependencies = dependencies_mut(document, manifest_path)?;
    if dependencies.contains_key(&added.package) {
        return Ok(false);
    }
    dependencies.insert(&added.package, path_spec(&added.path));
    Ok(true)
}

/// `[dependencies]` of a manifest, made when it has none.
fn dependencies_mut<'d>(
    document: &'d mut DocumentMut,
    manifest_path: &Path,
) -> Result<&'d mut dyn toml_edit::TableLike, SnippetError> {
    document
        .entry("dependencies")
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| {
            SnippetError::Manifest(format!(
                "{}: `dependencies` is not a table",
                manifest_path.display()
            ))
        })
}

/// `{ path = "<path>" }`.
fn path_spec(path: &str) -> Item {
    let mut spec = InlineTable::new();
    spec.insert("path", Value::from(path));
    Item::Value(Value::InlineTable(spec))
}

/// Adds `added` to `krate`'s `[dependencies]`, keeping the rest of its
/// manifest (comments, order, layout) as it is; whether it was missing.
pub fn add_dependency(
    krate: &SnippetsCrate,
    added: &AddedDependency,
) -> Result<bool, SnippetError> {
    let manifest_path = krate.dir.join("Cargo.toml");
    let mut document = read_manifest(&manifest_path)?;
    if !insert_path_dependency(&mut document, &manifest_path, added)? {
        return Ok(false);
    }
    write(&manifest_path, &document.to_string())?;
    Ok(true)
}

/// The `Cargo.toml` of the snippet crate in `directory` (a directory of
/// `krate`'s `snippets/`) that profiles `profile`.
pub fn manifest(
    krate: &SnippetsCrate,
    directory: &Path,
    profile: &str,
) -> Result<String, SnippetError> {
    manifest_with(krate, directory, profile, None, &[])
}

/// [`manifest`], with a dependency `krate` is about to get.
pub(crate) fn manifest_with(
    krate: &SnippetsCrate,
    directory: &Path,
    profile: &str,
    added: Option<&AddedDependency>,
    production: &[crate::ProductionDependency],
) -> Result<String, SnippetError> {
    let manifest_path = krate.dir.join("Cargo.toml");
    let mut template = read_manifest(&manifest_path)?;
    if let Some(added) = added {
        insert_path_dependency(&mut template, &manifest_path, added)?;
    }
    let dir_name = directory_name(directory)?;
    let mut document = DocumentMut::new();
    document.decor_mut().set_prefix(
        crate::text::wrap(
            &format!(
                "The snippet `{profile}` as a crate of its own: editing it rebuilds it alone. \
             `profile-cli check {profile}` builds it and links it into {package}, or leaves \
             it a draft (a {DRAFT_FILE} file here) while it does not build. Its dependencies \
             and features are those of {package}{production}.",
                package = krate.package,
                production = if production.is_empty() {
                    ""
                } else {
                    ", with the crates the copy names that the production crate depends on, \
                     declared as production declares them"
                }
            ),
            76,
            "# ",
        ) + "\n",
    );

    let mut package = Table::new();
    package.insert("name", toml_edit::value(package_name(&dir_name)));
    package.insert("version", toml_edit::value("0.1.0"));
    if let Some(template_package) = template.get("package").and_then(Item::as_table_like) {
        for key in ["edition", "rust-version"] {
            if let Some(item) = template_package.get(key) {
                package.insert(key, item.clone());
            }
        }
    }
    package.insert("publish", toml_edit::value(false));
    document.insert("package", Item::Table(package));

    let mut lib = Table::new();
    lib.insert("path", toml_edit::value("target.rs"));
    document.insert("lib", Item::Table(lib));

    let mut copied = Vec::new();
    for section in ["dependencies", "dev-dependencies"] {
        let Some(dependencies) = template.get(section).and_then(Item::as_table_like) else {
            continue;
        };
        let mut table = Table::new();
        for (name, spec) in dependencies.iter() {
            // Other snippets are not its to name; the command line is the
            // profiling binary's, not a snippet's.
            if is_snippet_path(spec) || name == "profiling-cli" {
                continue;
            }
            let mut spec = spec.clone();
            rebase_path(&mut spec);
            table.insert(name, spec);
            copied.push(name.to_owned());
        }
        if section == "dependencies" {
            // Crates the copy names that production depends on, declared
            // as production declares them.
            for dependency in production {
                if !table.contains_key(&dependency.key) {
                    table.insert(
                        &dependency.key,
                        Item::Value(Value::InlineTable(dependency.spec.clone())),
                    );
                    copied.push(dependency.key.clone());
                }
            }
        }
        if !table.is_empty() {
            document.insert(section, Item::Table(table));
        }
    }
    if let Some(features) = template.get("features").and_then(Item::as_table_like) {
        let mut table = Table::new();
        for (feature, enables) in features.iter() {
            let Some(enables) = enables.as_array() else {
                continue;
            };
            // What the feature turns on in the crates the snippet depends
            // on; other snippets' features are theirs.
            let kept: Array = enables
                .iter()
                .filter_map(Value::as_str)
                .filter(|entry| {
                    let krate = entry.split('/').next().unwrap_or(entry);
                    let krate = krate.trim_start_matches("dep:").trim_end_matches('?');
                    copied.iter().any(|c| c == krate)
                })
                .collect();
            table.insert(feature, toml_edit::value(kept));
        }
        if !table.is_empty() {
            document.insert("features", Item::Table(table));
        }
    }
    Ok(document.to_string())
}

/// A relative `path` of a dependency spec, from the snippets crate's
/// directory, made relative to a snippet directory two levels below it.
fn rebase_path(spec: &mut Item) {
    let Some(table) = spec.as_table_like_mut() else {
        return;
    };
    let Some(path) = table.get("path").and_then(Item::as_str) else {
        return;
    };
    if Path::new(path).is_absolute() {
        return;
    }
    let rebased = Path::new("../..").join(path);
    let rebased = rebased.to_string_lossy().into_owned();
    match table.get_mut("path") {
        Some(Item::Value(value)) => *value = Value::from(rebased),
        Some(item) => *item = toml_edit::value(rebased),
        None => {}
    }
}

fn directory_name(directory: &Path) -> Result<String, SnippetError> {
    directory
        .file_name()
        .and_then(|name| name.to_str())
        .map(str::to_owned)
        .ok_or_else(|| {
            SnippetError::Usage(format!(
                "{}: a snippet directory needs a UTF-8 name",
                directory.display()
            ))
        })
}

/// The package name of the snippet crate in `directory`.
pub fn package_of(directory: &Path) -> Result<String, SnippetError> {
    let manifest = directory.join("Cargo.toml");
    package_in(&read_manifest(&manifest)?, &manifest)
}

/// `[package] name` of a parsed manifest read from `path`.
fn package_in(manifest: &DocumentMut, path: &Path) -> Result<String, SnippetError> {
    manifest
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(Item::as_str)
        .map(str::to_owned)
        .ok_or_else(|| SnippetError::Manifest(format!("{}: no `[package] name`", path.display())))
}

/// Whether `krate` depends on the snippet crate in `directory`.
pub fn is_included(krate: &SnippetsCrate, directory: &Path) -> Result<bool, SnippetError> {
    let document = read_manifest(&krate.dir.join("Cargo.toml"))?;
    let path = dependency_path(directory)?;
    Ok(document
        .get("dependencies")
        .and_then(Item::as_table_like)
        .is_some_and(|table| {
            table
                .iter()
                .any(|(_, spec)| spec.get("path").and_then(Item::as_str) == Some(path.as_str()))
        }))
}

fn dependency_path(directory: &Path) -> Result<String, SnippetError> {
    Ok(format!("snippets/{}", directory_name(directory)?))
}

/// A dependency of a snippets crate on a snippet directory that holds no
/// crate any more (deleted by hand): cargo refuses the whole workspace
/// while it is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleEntry {
    /// The dependency's name: the snippet crate's package.
    pub package: String,
    /// As written: `snippets/<dir>`.
    pub path: String,
}

impl StaleEntry {
    /// The snippet directory's name.
    pub fn directory(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// The entries of the snippets crate in `krate_dir` whose snippet
/// directory has no `Cargo.toml`.
pub fn stale_entries(krate_dir: &Path) -> Vec<StaleEntry> {
    let Ok(document) = read_manifest(&krate_dir.join("Cargo.toml")) else {
        return Vec::new();
    };
    let Some(dependencies) = document.get("dependencies").and_then(Item::as_table_like) else {
        return Vec::new();
    };
    dependencies
        .iter()
        .filter(|(_, spec)| is_snippet_path(spec))
        .filter_map(|(name, spec)| {
            let path = spec.get("path").and_then(Item::as_str)?;
            (!krate_dir.join(path).join("Cargo.toml").is_file()).then(|| StaleEntry {
                package: name.to_owned(),
                path: path.to_owned(),
            })
        })
        .collect()
}

/// Drops `krate`'s dependency on the snippet directory `dir_name` (and
/// the features that forward to it), whether or not the directory is
/// still there; whether the manifest changed.
pub fn remove_entry(krate: &SnippetsCrate, dir_name: &str) -> Result<bool, SnippetError> {
    let manifest_path = krate.dir.join("Cargo.toml");
    let mut document = read_manifest(&manifest_path)?;
    let path = format!("snippets/{dir_name}");
    let before = document.to_string();
    let dependencies = dependencies_mut(&mut document, &manifest_path)?;
    let removed: Vec<String> = dependencies
        .iter()
        .filter(|(_, spec)| spec.get("path").and_then(Item::as_str) == Some(path.as_str()))
        .map(|(name, _)| name.to_owned())
        .collect();
    for name in &removed {
        dependencies.remove(name);
    }
    if let Some(features) = document
        .get_mut("features")
        .and_then(Item::as_table_like_mut)
    {
        for (_, enables) in features.iter_mut() {
            if let Some(enables) = enables.as_array_mut() {
                enables.retain(|entry| {
                    entry.as_str().is_none_or(|entry| {
                        let krate = entry.split('/').next().unwrap_or(entry);
                        let krate = krate.trim_start_matches("dep:").trim_end_matches('?');
                        !removed.iter().any(|r| r == krate)
                    })
                });
            }
        }
    }
    let after = document.to_string();
    if after == before {
        return Ok(false);
    }
    write(&manifest_path, &after)?;
    Ok(true)
}

/// Makes `krate` depend on the snippet crate in `directory` (`include`),
/// or no longer; each feature of the snippet crate that `krate` also has
/// is forwarded to it. Returns whether the manifest changed.
pub fn set_included(
    krate: &SnippetsCrate,
    directory: &Path,
    include: bool,
) -> Result<bool, SnippetError> {
    let manifest_path = krate.dir.join("Cargo.toml");
    let mut document = read_manifest(&manifest_path)?;
    let path = dependency_path(directory)?;
    let snippet_path = directory.join("Cargo.toml");
    let snippet = read_manifest(&snippet_path)?;
    let package = package_in(&snippet, &snippet_path)?;
    let before = document.to_string();

    let dependencies = dependencies_mut(&mut document, &manifest_path)?;
    let stale: Vec<String> = dependencies
        .iter()
        .filter(|(_, spec)| spec.get("path").and_then(Item::as_str) == Some(path.as_str()))
        .map(|(name, _)| name.to_owned())
        .collect();
    for name in &stale {
        dependencies.remove(name);
    }
    if include {
        dependencies.insert(&package, path_spec(&path));
    }

    let snippet_features: Vec<String> = snippet
        .get("features")
        .and_then(Item::as_table_like)
        .map(|f| f.iter().map(|(name, _)| name.to_owned()).collect())
        .unwrap_or_default();
    if let Some(features) = document
        .get_mut("features")
        .and_then(Item::as_table_like_mut)
    {
        for (feature, enables) in features.iter_mut() {
            let Some(enables) = enables.as_array_mut() else {
                continue;
            };
            let forwarded = format!("{package}/{feature}");
            enables.retain(|entry| {
                entry.as_str().is_none_or(|entry| {
                    let krate = entry.split('/').next().unwrap_or(entry);
                    !stale.iter().any(|s| s == krate) && krate != package
                })
            });
            if include && snippet_features.iter().any(|f| f.as_str() == feature.get()) {
                enables.push(forwarded.as_str());
            }
        }
    }

    let after = document.to_string();
    if after == before {
        return Ok(false);
    }
    write(&manifest_path, &after)?;
    Ok(true)
}

/// The text of `directory`'s `DRAFT` file, when it is a draft.
pub fn draft_reason(directory: &Path) -> Option<String> {
    std::fs::read_to_string(directory.join(DRAFT_FILE)).ok()
}

/// The text of a `DRAFT` file: `reason` (one line) first, then what to
/// do, then `details`.
pub(crate) fn draft_text(profile: &str, reason: &str, details: &str) -> String {
    let mut text = format!(
        "{reason}\n\n\
         This snippet is a draft: nothing compiles it, so it breaks no other build.\n\
         Fix target.rs, then `profile-cli check {profile}` builds it and, when it\n\
         compiles, removes this file and links it in.\n"
    );
    if !details.trim().is_empty() {
        text.push('\n');
        text.push_str(details.trim_end());
        text.push('\n');
    }
    text
}

/// Makes `directory` a draft: its `DRAFT` file says `reason` (one line)
/// first, then `details`.
pub fn mark_draft(
    directory: &Path,
    profile: &str,
    reason: &str,
    details: &str,
) -> Result<PathBuf, SnippetError> {
    let path = directory.join(DRAFT_FILE);
    write(&path, &draft_text(profile, reason, details))?;
    Ok(path)
}

/// Removes `directory`'s `DRAFT` file; whether there was one.
pub fn unmark_draft(directory: &Path) -> Result<bool, SnippetError> {
    let path = directory.join(DRAFT_FILE);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(SnippetError::Write { path, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names_keep_letters_and_digits() {
        assert_eq!(
            package_name("example_candidate"),
            "snippet-example-candidate"
        );
        assert_eq!(package_name("v2.nms"), "snippet-v2-nms");
    }

    #[test]
    fn only_paths_into_snippets_are_snippet_crates() {
        let document: DocumentMut = "[dependencies]\na = { path = \"snippets/a\" }\nb = { path = \"../b\" }\nc.workspace = true\n"
            .parse()
            .unwrap();
        let deps = document["dependencies"].as_table_like().unwrap();
        let snippet: Vec<&str> = deps
            .iter()
            .filter(|(_, spec)| is_snippet_path(spec))
            .map(|(name, _)| name)
            .collect();
        assert_eq!(snippet, ["a"]);
    }

    #[test]
    fn stale_entries_are_found_and_removed_with_their_features() {
        let root = tempfile::tempdir().unwrap();
        let krate_dir = root.path().join("inference_profiling");
        std::fs::create_dir_all(krate_dir.join("snippets/kept")).unwrap();
        std::fs::write(
            krate_dir.join("snippets/kept/Cargo.toml"),
            "[package]\nname = \"snippet-kept\"\n",
        )
        .unwrap();
        std::fs::write(
            krate_dir.join("Cargo.toml"),
            "[package]\nname = \"snips\"\n\n[dependencies]\nanyhow = \"1\"\nsnippet-kept = { path = \"snippets/kept\" }\nsnippet-gone = { path = \"snippets/gone\" }\n\n[features]\n# CUDA.\ntch = [\"snippet-kept/tch\", \"snippet-gone/tch\"]\n",
        )
        .unwrap();
        let stale = stale_entries(&krate_dir);
        assert_eq!(
            stale,
            [StaleEntry {
                package: "snippet-gone".to_owned(),
                path: "snippets/gone".to_owned()
            }]
        );
        assert_eq!(stale[0].directory(), "gone");
        let krate = SnippetsCrate {
            dir: krate_dir.clone(),
            package: "snips".to_owned(),
            dependencies: Vec::new(),
        };
        assert!(remove_entry(&krate, "gone").unwrap());
        assert_eq!(
            std::fs::read_to_string(krate_dir.join("Cargo.toml")).unwrap(),
            "[package]\nname = \"snips\"\n\n[dependencies]\nanyhow = \"1\"\nsnippet-kept = { path = \"snippets/kept\" }\n\n[features]\n# CUDA.\ntch = [\"snippet-kept/tch\"]\n"
        );
        assert!(stale_entries(&krate_dir).is_empty());
        assert!(!remove_entry(&krate, "gone").unwrap());
    }
}
