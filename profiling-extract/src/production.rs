//! What the production crate a snippet copies from builds with: its
//! dependencies (so that a crate the copy names goes into the snippet's own
//! `Cargo.toml` with the requirement and features production asks for) and
//! its enabled features (so that `cfg` attributes of the copied code are
//! decided as production's build decides them, [`crate::cfg`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, InlineTable, Item, Table, Value};

use crate::source::crate_ident;

/// One dependency of the production crate, as the snippet's `Cargo.toml`
/// writes it.
#[derive(Debug, Clone)]
pub struct ProductionDependency {
    /// The key in `[dependencies]`: the package name, or the name it is
    /// renamed to (`package = ...`).
    pub key: String,
    /// How code names it: `key` with `-` as `_`.
    pub ident: String,
    /// The spec, with `optional` dropped, workspace inheritance resolved and
    /// a `path` made relative to the snippet's directory.
    pub spec: InlineTable,
    /// The production package that declares it.
    pub declared_by: String,
    /// Why the snippet needs it, in words.
    pub reason: String,
}

impl std::fmt::Display for ProductionDependency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let spec = self.spec.to_string();
        write!(f, "{} = {}", self.key, spec.trim())
    }
}

/// The production crate: its manifest's directory, package name, normal
/// dependencies and the features it is built with.
#[derive(Debug, Clone, Default)]
pub struct Production {
    pub package: String,
    pub dependencies: Vec<ProductionDependency>,
    /// The features enabled when the workspace builds it (`cargo metadata`'s
    /// resolve), else its default features expanded through its own
    /// `[features]`; `None` when neither can be known.
    pub features: Option<BTreeSet<String>>,
    /// Where `features` came from, for the snippet's README.
    pub features_from: String,
    /// Its dependencies' libraries as the resolve has them: the name code
    /// gives each and the directory of its library's root file (where
    /// the types its signatures name are defined). Empty when
    /// `cargo metadata` could not say.
    pub dependency_sources: Vec<(String, PathBuf)>,
}

impl Production {
    /// Reads the package whose `Cargo.toml` is in `dir`, with paths of its
    /// path dependencies made relative to `snippet_dir`. `None` when it has
    /// no readable manifest with a `[package]`.
    pub fn read(dir: &Path, snippet_dir: &Path) -> Option<Production> {
        let text = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
        let document: DocumentMut = text.parse().ok()?;
        let package = document.get("package")?.get("name")?.as_str()?.to_owned();
        let workspace = workspace_dependencies(dir);
        let mut dependencies = Vec::new();
        let mut tables: Vec<&Item> = document.get("dependencies").into_iter().collect();
        if let Some(targets) = document.get("target").and_then(Item::as_table_like) {
            for (_, target) in targets.iter() {
                tables.extend(target.get("dependencies"));
            }
        }
        for table in tables.into_iter().filter_map(Item::as_table_like) {
            for (key, spec) in table.iter() {
                if dependencies
                    .iter()
                    .any(|d: &ProductionDependency| d.key == key)
                {
                    continue;
                }
                let Some(spec) = resolve_spec(spec, key, dir, workspace.as_ref(), snippet_dir)
                else {
                    continue;
                };
                dependencies.push(ProductionDependency {
                    key: key.to_owned(),
                    ident: crate_ident(key),
                    spec,
                    declared_by: package.clone(),
                    reason: format!(
                        "the copy names `{}`, a dependency of {package}",
                        crate_ident(key)
                    ),
                });
            }
        }
        let (features, features_from, dependency_sources) = match resolved(dir, &package) {
            Some(resolved) => (
                Some(resolved.features),
                "the features the workspace builds it with (cargo metadata)".to_owned(),
                resolved.dependency_sources,
            ),
            None => (
                Some(default_features(&document)),
                "its default features (cargo metadata could not say more)".to_owned(),
                Vec::new(),
            ),
        };
        Some(Production {
            package,
            dependencies,
            features,
            features_from,
            dependency_sources,
        })
    }

    /// The dependency code names `ident`, if production has one.
    pub fn dependency(&self, ident: &str) -> Option<&ProductionDependency> {
        self.dependencies.iter().find(|d| d.ident == ident)
    }
}

/// A dependency spec as the snippet writes it: a table, `optional` gone,
/// `workspace = true` replaced by the workspace's entry (features merged),
/// a relative `path` rebased from `dir` (or the workspace root) to
/// `snippet_dir`.
fn resolve_spec(
    spec: &Item,
    key: &str,
    dir: &Path,
    workspace: Option<&(PathBuf, Table)>,
    snippet_dir: &Path,
) -> Option<InlineTable> {
    let mut table = as_inline(spec)?;
    let mut base = dir.to_path_buf();
    if table.get("workspace").and_then(Value::as_bool) == Some(true) {
        let (root, dependencies) = workspace?;
        let mut inherited = as_inline(dependencies.get(key)?)?;
        if let Some(extra) = table.get("features").and_then(Value::as_array) {
            let mut features: Vec<String> = inherited
                .get("features")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            for feature in extra.iter().filter_map(Value::as_str) {
                if !features.iter().any(|f| f == feature) {
                    features.push(feature.to_owned());
                }
            }
            inherited.insert("features", Value::Array(features.into_iter().collect()));
        }
        table = inherited;
        base = root.clone();
    }
    table.remove("optional");
    table.remove("workspace");
    if let Some(path) = table.get("path").and_then(Value::as_str) {
        let absolute = crate::workspace::lexically_normal(&base.join(path));
        let rebased = crate::snippet_crate::relative_path(snippet_dir, &absolute);
        table.insert("path", Value::from(rebased));
    }
    table.fmt();
    Some(table)
}

fn as_inline(spec: &Item) -> Option<InlineTable> {
    match spec {
        Item::Value(Value::String(version)) => {
            let mut table = InlineTable::new();
            table.insert("version", Value::from(version.value().as_str()));
            Some(table)
        }
        Item::Value(Value::InlineTable(table)) => Some(table.clone()),
        Item::Table(table) => Some(table.clone().into_inline_table()),
        _ => None,
    }
}

/// The nearest workspace root above `dir` (itself included) and its
/// `[workspace.dependencies]`.
fn workspace_dependencies(dir: &Path) -> Option<(PathBuf, Table)> {
    crate::workspace::workspace_above(dir).map(|(root, document)| {
        let dependencies = document["workspace"]
            .get("dependencies")
            .and_then(Item::as_table_like)
            .map(|table| {
                let mut owned = Table::new();
                for (key, value) in table.iter() {
                    owned.insert(key, value.clone());
                }
                owned
            })
            .unwrap_or_default();
        (root, dependencies)
    })
}

/// What cargo's resolve says of a package.
struct Resolved {
    features: BTreeSet<String>,
    dependency_sources: Vec<(String, PathBuf)>,
}

/// The features cargo enables for `package` (the package in `dir`) when
/// its workspace builds, and where its dependencies' libraries are: the
/// resolve of `cargo metadata`, offline first (nothing fetched when the
/// lock file and the cache suffice).
fn resolved(dir: &Path, package: &str) -> Option<Resolved> {
    // Absolute: cargo never reads it as an option.
    let manifest = std::path::absolute(dir.join("Cargo.toml")).ok()?;
    let run = |offline: bool| {
        let mut metadata = cargo_metadata::MetadataCommand::new();
        metadata
            .cargo_path(crate::cargo_program())
            .manifest_path(&manifest);
        if offline {
            metadata.other_options(vec!["--offline".to_owned()]);
        }
        let mut command = metadata.cargo_command();
        command
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|output| output.status.success())
    };
    let output = run(true).or_else(|| run(false))?;
    let metadata =
        cargo_metadata::MetadataCommand::parse(std::str::from_utf8(&output.stdout).ok()?).ok()?;
    let manifest = std::fs::canonicalize(&manifest).ok()?;
    let id = metadata.packages.iter().find_map(|p| {
        let path = std::fs::canonicalize(&p.manifest_path).ok()?;
        (path == manifest && p.name.as_str() == package).then(|| p.id.clone())
    })?;
    let node = metadata
        .resolve?
        .nodes
        .into_iter()
        .find(|node| node.id == id)?;
    let dependency_sources = node
        .deps
        .iter()
        .filter_map(|dep| {
            let package = metadata.packages.iter().find(|p| p.id == dep.pkg)?;
            let library = package.targets.iter().find(|t| t.is_lib())?;
            let src = library.src_path.parent()?.as_std_path().to_path_buf();
            Some((dep.name.clone(), src))
        })
        .collect();
    Some(Resolved {
        features: node.features.iter().map(|f| f.to_string()).collect(),
        dependency_sources,
    })
}

/// `default` expanded through the package's own `[features]` (entries
/// naming another crate's feature, or a dependency with `dep:`, are not
/// features of it).
fn default_features(document: &DocumentMut) -> BTreeSet<String> {
    let features = document.get("features").and_then(Item::as_table_like);
    let mut enabled = BTreeSet::new();
    let mut pending = vec!["default".to_owned()];
    while let Some(feature) = pending.pop() {
        // An entry that is not in `[features]` is an optional dependency's
        // implicit feature: on all the same.
        if !enabled.insert(feature.clone()) {
            continue;
        }
        let Some(enables) = features
            .and_then(|f| f.get(&feature))
            .and_then(Item::as_array)
        else {
            continue;
        };
        for entry in enables.iter().filter_map(Value::as_str) {
            if entry.contains('/') || entry.starts_with("dep:") {
                continue;
            }
            pending.push(entry.to_owned());
        }
    }
    enabled
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn dependencies_are_resolved_as_the_snippet_writes_them() {
        let root = tempfile::tempdir().unwrap();
        write(
            &root.path().join("Cargo.toml"),
            "[workspace]\nmembers = [\"prod\"]\n[workspace.dependencies]\nimage = { version = \"0.25\", default-features = false, features = [\"png\"] }\nlocal = { path = \"local\" }\n",
        );
        write(
            &root.path().join("prod/Cargo.toml"),
            "[package]\nname = \"prod\"\nversion = \"0.1.0\"\n\n[dependencies]\nnum-traits = \"0.2.17\"\nndarray = { version = \">=0.15, <=0.16\", optional = true, features = [\"rayon\"] }\nimage = { workspace = true, features = [\"jpeg\"] }\nlocal.workspace = true\nhelper = { path = \"../helper\" }\n\n[target.'cfg(unix)'.dependencies]\nlibc = \"0.2\"\n\n[features]\ndefault = [\"fast\"]\nfast = [\"ndarray\", \"simd\", \"dep:ndarray\", \"ndarray/rayon\"]\nsimd = []\nslow = []\n",
        );
        let snippet = root.path().join("inference_profiling/snippets/s");
        let production = Production::read(&root.path().join("prod"), &snippet).unwrap();
        assert_eq!(production.package, "prod");
        let shown: Vec<String> = production
            .dependencies
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            shown,
            [
                "num-traits = { version = \"0.2.17\" }",
                "ndarray = { version = \">=0.15, <=0.16\", features = [\"rayon\"] }",
                "image = { version = \"0.25\", default-features = false, features = [\"png\", \"jpeg\"] }",
                "local = { path = \"../../../local\" }",
                "helper = { path = \"../../../helper\" }",
                "libc = { version = \"0.2\" }",
            ]
        );
        assert_eq!(
            production.dependency("num_traits").unwrap().key,
            "num-traits"
        );
        let document: DocumentMut = std::fs::read_to_string(root.path().join("prod/Cargo.toml"))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            default_features(&document),
            ["default", "fast", "ndarray", "simd"]
                .map(str::to_owned)
                .into_iter()
                .collect::<BTreeSet<_>>()
        );
    }
}
