//! Where a source file's items live in their crate (its module path,
//! whether code outside the crate reaches them) and what its package's
//! `Cargo.toml` says. The file itself is [`crate::source_file`]'s.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::crate_files::CrateFiles;
pub(crate) use super::source_file::{display_path, rust_files, SourceFile};

/// What a `Cargo.toml` says about its package, read line by line: the
/// package and library names, the library's root file, and the names the
/// package's code gives its dependencies.
///
/// Enough for the manifests of a workspace like this one; keys written in
/// forms this reader does not know are simply not found.
#[derive(Debug, Clone, Default)]
pub(crate) struct CargoManifest {
    pub dir: PathBuf,
    pub package: Option<String>,
    lib_name: Option<String>,
    lib_path: Option<String>,
    /// As the code names them: `-` becomes `_`.
    pub dependencies: Vec<String>,
}

impl CargoManifest {
    /// Reads the `Cargo.toml` in `dir`; `None` when there is none or it
    /// is not TOML. Path dependencies under `snippets/` (snippet crates)
    /// are not counted: a snippet does not name another.
    pub fn read(dir: &Path) -> Option<CargoManifest> {
        let text = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
        let document: toml_edit::DocumentMut = text.parse().ok()?;
        let string =
            |table: &str, key: &str| document.get(table)?.get(key)?.as_str().map(str::to_owned);
        let dependencies = document
            .get("dependencies")
            .and_then(toml_edit::Item::as_table_like)
            .map(|table| {
                table
                    .iter()
                    .filter(|(_, spec)| !is_snippet_path(spec))
                    .map(|(name, _)| crate_ident(name))
                    .collect()
            })
            .unwrap_or_default();
        Some(CargoManifest {
            dir: dir.to_path_buf(),
            package: string("package", "name"),
            lib_name: string("lib", "name"),
            lib_path: string("lib", "path"),
            dependencies,
        })
    }

    /// The manifest of the package `file` belongs to: the nearest
    /// `Cargo.toml` with a `[package]` above it.
    pub fn of_file(file: &Path) -> Option<CargoManifest> {
        file.ancestors()
            .skip(1)
            .filter_map(CargoManifest::read)
            .find(|manifest| manifest.package.is_some())
    }

    /// The name the library is used by in code, when the package has one.
    pub fn lib_ident(&self) -> Option<String> {
        self.lib_root()?;
        match (&self.lib_name, &self.package) {
            (Some(name), _) | (None, Some(name)) => Some(crate_ident(name)),
            (None, None) => None,
        }
    }

    /// The library's root file, when it exists.
    pub fn lib_root(&self) -> Option<PathBuf> {
        let root = self
            .dir
            .join(self.lib_path.as_deref().unwrap_or("src/lib.rs"));
        root.is_file().then_some(root)
    }
}

/// A package name as code writes it.
pub(crate) fn crate_ident(name: &str) -> String {
    name.replace('-', "_")
}

/// Where a file's items live in their crate, and whether code outside the
/// crate can reach them.
#[derive(Debug, Clone)]
pub(crate) struct ModuleLocation {
    /// The library's name in code (`profiling_examples`), when the file is
    /// part of a library.
    pub crate_ident: Option<String>,
    /// The modules from the crate root down to the file.
    pub modules: Vec<String>,
    /// Why the file's items cannot be named from another crate, when they
    /// cannot.
    pub unreachable: Option<String>,
    /// The library's root file.
    pub lib_root: Option<PathBuf>,
    /// The crate's files, each parsed once for the whole extraction.
    pub files: Rc<CrateFiles>,
}

impl ModuleLocation {
    /// The absolute path of the module `inline` (modules inside the file)
    /// below the file's module.
    pub fn path(&self, inline: &[String]) -> String {
        let mut segments = vec![self
            .crate_ident
            .clone()
            .unwrap_or_else(|| "crate".to_owned())];
        segments.extend(self.modules.iter().cloned());
        segments.extend(inline.iter().cloned());
        segments.join("::")
    }

    /// Finds the crate and module of `file` and checks that every module
    /// from the crate root down to it is declared `pub`; the module files
    /// on the way are read through `files`.
    pub fn of_file(file: &Path, files: &Rc<CrateFiles>) -> ModuleLocation {
        let Some(manifest) = CargoManifest::of_file(file) else {
            return ModuleLocation {
                crate_ident: None,
                modules: Vec::new(),
                unreachable: Some("it belongs to no Cargo package".to_owned()),
                lib_root: None,
                files: files.clone(),
            };
        };
        let package = manifest.package.clone();
        let unreachable = |why: String| ModuleLocation {
            crate_ident: manifest.lib_ident(),
            modules: Vec::new(),
            unreachable: Some(why),
            lib_root: None,
            files: files.clone(),
        };
        let (Some(crate_ident), Some(root)) = (manifest.lib_ident(), manifest.lib_root()) else {
            return unreachable(format!(
                "package `{}` has no library",
                package.as_deref().unwrap_or("?")
            ));
        };
        let src = root.parent().unwrap_or(Path::new("."));
        let Ok(relative) = file.strip_prefix(src) else {
            return unreachable(format!(
                "it lies outside {}, the library's source directory",
                src.display()
            ));
        };
        let mut modules: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if file == root {
            modules.clear();
        } else if let Some(last) = modules.pop() {
            if last != "mod.rs" {
                modules.push(last.trim_end_matches(".rs").to_owned());
            }
        }
        let unreachable = check_declarations(files, &root, src, &modules);
        ModuleLocation {
            crate_ident: Some(crate_ident),
            modules,
            unreachable,
            lib_root: Some(root),
            files: files.clone(),
        }
    }

    /// Where another crate reaches `name`, an item of this file's module
    /// that cannot be named where it is defined (a private module on the
    /// way), when the crate re-exports it ([`Self::public_path`]): the
    /// path from the crate's name.
    pub fn reexported(&self, name: &str) -> Option<String> {
        let crate_ident = self.crate_ident.as_deref()?;
        let mut path = self.modules.clone();
        path.push(name.to_owned());
        let public = self.public_path(&path)?;
        Some(
            std::iter::once(crate_ident.to_owned())
                .chain(public)
                .collect::<Vec<_>>()
                .join("::"),
        )
    }

    /// The path by which another crate names `path` (an item of this
    /// crate: its modules from the crate root, then its name), below the
    /// crate's name: the path itself where every module on the way is
    /// `pub`, else the shortest re-export of it (`pub use m::{f, T};`,
    /// `pub use self::m::*;`, `pub use crate::m::T as U;`) in a module
    /// another crate reaches, searched from the crate root down through its
    /// `pub mod`s. `None` when the item is not `pub` or nothing re-exports
    /// it where it can be reached.
    pub fn public_path(&self, path: &[String]) -> Option<Vec<String>> {
        let (name, modules) = path.split_last()?;
        let (_, public) = self.find_item(path)?;
        if !public {
            return None;
        }
        let root = self.lib_root.as_deref()?;
        let src = root.parent()?;
        if check_declarations(&self.files, root, src, modules).is_none() {
            return Some(path.to_vec());
        }
        // Breadth first: the first re-export found is the shortest path.
        let mut queue: std::collections::VecDeque<Vec<String>> = [Vec::new()].into();
        let mut visited = 0;
        while let Some(module) = queue.pop_front() {
            visited += 1;
            if visited > 256 {
                break;
            }
            let Ok(file) = self.files.needed(&module_file(root, src, &module)) else {
                continue;
            };
            let children: Vec<String> = file
                .syntax
                .items
                .iter()
                .filter_map(|item| match item {
                    syn::Item::Mod(m) => Some(m.ident.to_string()),
                    _ => None,
                })
                .collect();
            for item in &file.syntax.items {
                let syn::Item::Use(item_use) = item else {
                    continue;
                };
                if !matches!(item_use.vis, syn::Visibility::Public(_)) {
                    continue;
                }
                let mut leaves = Vec::new();
                use_leaves(&item_use.tree, Vec::new(), &mut leaves);
                for (from, leaf, rename) in leaves {
                    let Some(from) = absolute_use_path(&module, &children, &from) else {
                        continue;
                    };
                    let exported = match leaf.as_str() {
                        "*" => (from == modules).then(|| name.clone()),
                        _ => (from == modules && leaf == *name).then(|| rename.unwrap_or(leaf)),
                    };
                    if let Some(exported) = exported {
                        let mut found = module.clone();
                        found.push(exported);
                        return Some(found);
                    }
                }
            }
            for item in &file.syntax.items {
                if let syn::Item::Mod(m) = item {
                    if m.content.is_none() && matches!(m.vis, syn::Visibility::Public(_)) {
                        let mut child = module.clone();
                        child.push(m.ident.to_string());
                        queue.push_back(child);
                    }
                }
            }
        }
        None
    }

    /// The file of a module of the library declared at its root without
    /// `pub` (`mod utils;`), when `name` is one: a module the snippet can
    /// copy whole.
    pub fn private_root_module(&self, name: &str) -> Option<PathBuf> {
        let root = self.lib_root.as_deref()?;
        let file = self.files.needed(root).ok()?;
        let private = file.syntax.items.iter().any(|item| {
            matches!(item, syn::Item::Mod(m)
                if m.ident == name
                    && m.content.is_none()
                    && !matches!(m.vis, syn::Visibility::Public(_)))
        });
        let path = module_file(root, root.parent()?, &[name.to_owned()]);
        (private && path.is_file()).then_some(path)
    }

    /// Why `path` (an item of this crate: its modules from the crate root,
    /// then its name) cannot be named from another crate, when the source
    /// shows it: a private module on the way, or a private item.
    pub fn unreachable_item(&self, path: &[String]) -> Option<String> {
        let root = self.lib_root.as_deref()?;
        let src = root.parent()?;
        let (_, modules) = path.split_last()?;
        if let Some(why) = check_declarations(&self.files, root, src, modules) {
            return Some(why);
        }
        let (_, public) = self.find_item(path)?;
        let file = module_file(root, src, modules);
        (!public).then(|| format!("private to its module ({})", display_below(&file, src)))
    }

    /// The file of the module `modules` (below the crate root) of this
    /// file's library.
    pub fn module_file(&self, modules: &[String]) -> Option<PathBuf> {
        let root = self.lib_root.as_deref()?;
        Some(module_file(root, root.parent()?, modules))
    }

    /// The kind (`fn`, `struct`, `trait`...) of the item at `path` (its
    /// modules from the crate root, then its name), and whether it is
    /// `pub`, when its module's file defines it.
    pub fn find_item(&self, path: &[String]) -> Option<(&'static str, bool)> {
        let root = self.lib_root.as_deref()?;
        let (name, modules) = path.split_last()?;
        let file = module_file(root, root.parent()?, modules);
        let file = self.files.needed(&file).ok()?;
        file.syntax.items.iter().find_map(|item| {
            let (ident, kind, vis) = match item {
                syn::Item::Fn(i) => (&i.sig.ident, "fn", &i.vis),
                syn::Item::Struct(i) => (&i.ident, "struct", &i.vis),
                syn::Item::Enum(i) => (&i.ident, "enum", &i.vis),
                syn::Item::Const(i) => (&i.ident, "const", &i.vis),
                syn::Item::Static(i) => (&i.ident, "static", &i.vis),
                syn::Item::Type(i) => (&i.ident, "type", &i.vis),
                syn::Item::Trait(i) => (&i.ident, "trait", &i.vis),
                syn::Item::Mod(i) => (&i.ident, "mod", &i.vis),
                _ => return None,
            };
            let public = matches!(vis, syn::Visibility::Public(_));
            (ident == name.as_str()).then_some((kind, public))
        })
    }
}

/// The leaves of a `use` tree below `prefix`: the path before each, the
/// name (`*` for a glob) and its rename.
pub(crate) fn use_leaves(
    tree: &syn::UseTree,
    prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, String, Option<String>)>,
) {
    match tree {
        syn::UseTree::Path(path) => {
            let mut prefix = prefix;
            prefix.push(path.ident.to_string());
            use_leaves(&path.tree, prefix, out);
        }
        syn::UseTree::Name(leaf) => out.push((prefix, leaf.ident.to_string(), None)),
        syn::UseTree::Rename(leaf) => out.push((
            prefix,
            leaf.ident.to_string(),
            Some(leaf.rename.to_string()),
        )),
        syn::UseTree::Glob(_) => out.push((prefix, "*".to_owned(), None)),
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                use_leaves(tree, prefix.clone(), out);
            }
        }
    }
}

/// The modules below the crate root that `from`, the path of a `use`
/// declaration in `module` (whose own modules are `children`), names:
/// `crate::`, `self::` and `super::` resolved, and a first segment that is
/// one of `module`'s modules read from there (the 2018 rule; at the root
/// the 2015 one agrees). `None` for a path into another crate.
fn absolute_use_path(
    module: &[String],
    children: &[String],
    from: &[String],
) -> Option<Vec<String>> {
    let (first, rest) = from.split_first()?;
    let mut base: Vec<String> = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => module.get(..module.len().checked_sub(1)?)?.to_vec(),
        name if children.iter().any(|child| child == name) => {
            let mut base = module.to_vec();
            base.push(name.to_owned());
            base
        }
        _ => return None,
    };
    for segment in rest {
        match segment.as_str() {
            "super" => {
                base.pop()?;
            }
            "self" => {}
            name => base.push(name.to_owned()),
        }
    }
    Some(base)
}

/// The file of the module `modules` below the crate root `root`.
fn module_file(root: &Path, src: &Path, modules: &[String]) -> PathBuf {
    if modules.is_empty() {
        return root.to_path_buf();
    }
    let dir = src.join(modules.join("/"));
    if dir.join("mod.rs").is_file() {
        dir.join("mod.rs")
    } else {
        dir.with_extension("rs")
    }
}

/// `file` from the directory above the library's source directory.
fn display_below(file: &Path, src: &Path) -> String {
    file.strip_prefix(src.parent().unwrap_or(src))
        .unwrap_or(file)
        .display()
        .to_string()
}

/// Walks the `mod` declarations from the crate root to `modules`; says why
/// the last module cannot be reached from outside the crate, if it cannot.
fn check_declarations(
    files: &CrateFiles,
    root: &Path,
    src: &Path,
    modules: &[String],
) -> Option<String> {
    for depth in 0..modules.len() {
        let parent = module_file(root, src, &modules[..depth]);
        let name = &modules[depth];
        if !parent.is_file() {
            return Some(format!("cannot read {}", parent.display()));
        }
        let Ok(file) = files.needed(&parent) else {
            return Some(format!("cannot parse {}", parent.display()));
        };
        let declaration = file.syntax.items.iter().find_map(|item| match item {
            syn::Item::Mod(module) if module.ident == name.as_str() => Some(module),
            _ => None,
        });
        let parent_name = display_below(&parent, src);
        match declaration {
            None => {
                return Some(format!(
                    "{parent_name} declares no `mod {name}`: the file is not part of the library"
                ))
            }
            Some(module) if !matches!(module.vis, syn::Visibility::Public(_)) => {
                return Some(format!(
                    "module `{name}` is private (declared in {parent_name} without `pub`)"
                ))
            }
            Some(_) => {}
        }
    }
    None
}

/// Whether a dependency spec is a path into `snippets/` (a snippet crate).
pub(crate) fn is_snippet_path(spec: &toml_edit::Item) -> bool {
    spec.get("path")
        .and_then(toml_edit::Item::as_str)
        .is_some_and(|path| Path::new(path).starts_with("snippets"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn path(segments: &[&str]) -> Vec<String> {
        segments.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn items_of_private_modules_are_named_by_the_shortest_reexport() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            &root.join("Cargo.toml"),
            "[package]\nname = \"geo-kit\"\nversion = \"0.1.0\"\n",
        );
        write(
            &root.join("src/lib.rs"),
            "mod shapes;\nmod algos;\npub mod nested;\nmod unexported;\n\
             pub use shapes::{Point, Polygon as Poly};\npub use crate::algos::*;\n",
        );
        write(
            &root.join("src/shapes.rs"),
            "pub struct Point;\npub struct Polygon;\npub(crate) struct Hidden;\n",
        );
        write(
            &root.join("src/algos.rs"),
            "pub fn hull() {}\nfn private_helper() {}\n",
        );
        write(
            &root.join("src/nested/mod.rs"),
            "mod deep;\npub use self::deep::Deep;\n",
        );
        write(&root.join("src/nested/deep.rs"), "pub struct Deep;\n");
        write(&root.join("src/unexported.rs"), "pub fn lost() {}\n");
        let files = CrateFiles::new(root);
        let location = ModuleLocation::of_file(&root.join("src/algos.rs"), &files);
        assert_eq!(location.crate_ident.as_deref(), Some("geo_kit"));
        let public = |p: &[&str]| location.public_path(&path(p));
        assert_eq!(public(&["shapes", "Point"]), Some(path(&["Point"])));
        assert_eq!(public(&["shapes", "Polygon"]), Some(path(&["Poly"])));
        assert_eq!(public(&["algos", "hull"]), Some(path(&["hull"])));
        assert_eq!(
            public(&["nested", "deep", "Deep"]),
            Some(path(&["nested", "Deep"]))
        );
        // Not `pub`, or `pub` where nothing re-exports it.
        assert_eq!(public(&["shapes", "Hidden"]), None);
        assert_eq!(public(&["algos", "private_helper"]), None);
        assert_eq!(public(&["unexported", "lost"]), None);
        assert_eq!(
            location.reexported("hull").as_deref(),
            Some("geo_kit::hull")
        );
    }

    #[test]
    fn use_paths_are_read_from_the_module_they_are_in() {
        let module = path(&["a", "b"]);
        let children = path(&["c"]);
        let absolute = |from: &[&str]| absolute_use_path(&module, &children, &path(from));
        assert_eq!(absolute(&["crate", "x"]), Some(path(&["x"])));
        assert_eq!(absolute(&["self", "c"]), Some(path(&["a", "b", "c"])));
        assert_eq!(absolute(&["c", "d"]), Some(path(&["a", "b", "c", "d"])));
        assert_eq!(absolute(&["super", "y"]), Some(path(&["a", "y"])));
        assert_eq!(absolute(&["super", "super", "z"]), Some(path(&["z"])));
        // Another crate's path.
        assert_eq!(absolute(&["std", "fmt"]), None);
    }
}
