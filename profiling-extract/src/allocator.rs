//! The production program's global allocator
//! (`#[global_allocator] static GLOBAL: MiMalloc = MiMalloc;`, common in
//! inference services).
//!
//! Declared by a production *binary* (its `main.rs`, `src/bin/`), which
//! the profiling binary does not link: `new` wraps it in the counting
//! allocator in the profiling binary's `main.rs` (the block `init` wrote)
//! and adds its crate to the profiling crate, so that the snippets are
//! timed on the allocator production runs on and memory per range still
//! counts.
//!
//! Declared by the production *library*, which the profiling binary links:
//! a program has one, so the binary cannot install the counting allocator
//! too. `new` takes it out of the binary's `main.rs` when it is the one
//! `init` wrote, and says so; the run then says that memory per range is
//! unavailable.

use std::path::{Path, PathBuf};

use syn::visit::{self, Visit};

/// The block `init` writes into the profiling crate's `src/main.rs`.
pub(crate) const COUNTING_ALLOCATOR: &str =
    "// Measures what a target's `prepare` keeps, so that eager runs that\n\
     // would not fit in memory are refused.\n\
     #[global_allocator]\n\
     static ALLOCATOR: profiling_core::memory::CountingAllocator =\n    \
     profiling_core::memory::CountingAllocator;\n";

/// Where the library whose sources are under `src` declares a global
/// allocator, outside `#[cfg(test)]` modules: the file and line.
pub(crate) fn declared_in(src: &Path) -> Option<(PathBuf, usize)> {
    let mut files = Vec::new();
    crate::source::rust_files(src, &mut files, 0);
    // The binaries beside the library are not part of it.
    let (main, bins) = (src.join("main.rs"), src.join("bin"));
    files.retain(|file| *file != main && !file.starts_with(&bins));
    files.into_iter().find_map(|file| {
        let text = std::fs::read_to_string(&file).ok()?;
        if !text.contains("global_allocator") {
            return None;
        }
        let syntax = syn::parse_file(&text).ok()?;
        let mut finder = Finder(None);
        finder.visit_file(&syntax);
        finder.0.map(|line| (file, line))
    })
}

struct Finder(Option<usize>);

impl<'ast> Visit<'ast> for Finder {
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        let test_only = module.attrs.iter().any(|attr| {
            attr.path().is_ident("cfg")
                && attr
                    .parse_args::<syn::Ident>()
                    .is_ok_and(|ident| ident == "test")
        });
        if !test_only {
            visit::visit_item_mod(self, module);
        }
    }

    fn visit_item_static(&mut self, item: &'ast syn::ItemStatic) {
        if let Some(attr) = item
            .attrs
            .iter()
            .find(|a| a.path().is_ident("global_allocator"))
        {
            self.0.get_or_insert(attr.pound_token.span.start().line);
        }
    }
}

/// What the profiling binary's `main.rs` (`main`) becomes when the
/// library `package` declares the global allocator at `declared` (as the
/// snippets' files show it): the counting allocator `init` wrote replaced
/// by a comment that says why. `None` when it has no such block.
pub(crate) fn without_counting(main: &str, package: &str, declared: &str) -> Option<String> {
    // The block `new` wrote over a production binary's allocator: from its
    // first line to the blank line after it.
    let wrapped = main.find(WRAPPED_MARK).map(|start| {
        let end = main[start..]
            .find("\n\n")
            .map_or(main.len(), |at| start + at + 1);
        &main[start..end]
    });
    let block = match wrapped {
        Some(block) => block,
        None if main.contains(COUNTING_ALLOCATOR) => COUNTING_ALLOCATOR,
        None => return None,
    };
    Some({
        let note = crate::text::wrap(
            &format!(
                "No counting allocator: `{package}` declares the program's global allocator \
                 ({declared}), and a program has one. Memory per range (`--memory`) and the \
                 check that eager records fit in memory are off; to have them back, move that \
                 `#[global_allocator]` into `{package}`'s binary and restore the block \
                 `profile-cli init` writes here."
            ),
            76,
            "//",
        );
        main.replacen(block, &note, 1)
    })
}

/// How the block [`wrapping`] writes begins.
const WRAPPED_MARK: &str = "// Counts allocations over the allocator `";

/// A production binary's global allocator, as the profiling binary wraps
/// it: each name of its type and value resolved through the file's `use`
/// items, so that it reads the same from another crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProductionAllocator {
    /// The static's type (`mimalloc::MiMalloc`).
    pub ty: String,
    /// Its value (`mimalloc::MiMalloc`, `Cap::new(...)`).
    pub value: String,
    /// The crate the type comes from, as code names it (`mimalloc`).
    pub krate: String,
    /// The static's `#[cfg(...)]` attributes, as written.
    pub cfgs: Vec<String>,
    /// Where it is declared: the file and line.
    pub file: PathBuf,
    pub line: usize,
}

/// The global allocator a binary of the package in `crate_dir` declares
/// (`src/main.rs`, `src/bin/`, and `[[bin]] path`s), outside
/// `#[cfg(test)]`: `Ok(None)` where none does or it is the system's,
/// `Err` saying why one cannot be named from another crate (a type of the
/// binary's own).
pub(crate) fn in_binaries(crate_dir: &Path) -> Result<Option<ProductionAllocator>, String> {
    let mut files = vec![crate_dir.join("src/main.rs")];
    if let Ok(entries) = std::fs::read_dir(crate_dir.join("src/bin")) {
        let mut bins: Vec<PathBuf> = entries
            .flatten()
            .map(|entry| entry.path())
            .map(|path| {
                if path.is_dir() {
                    path.join("main.rs")
                } else {
                    path
                }
            })
            .filter(|path| path.extension().is_some_and(|e| e == "rs"))
            .collect();
        bins.sort();
        files.extend(bins);
    }
    if let Some(document) = std::fs::read_to_string(crate_dir.join("Cargo.toml"))
        .ok()
        .and_then(|text| text.parse::<toml_edit::DocumentMut>().ok())
    {
        if let Some(bins) = document.get("bin").and_then(|b| b.as_array_of_tables()) {
            for bin in bins {
                if let Some(path) = bin.get("path").and_then(|p| p.as_str()) {
                    files.push(crate_dir.join(path));
                }
            }
        }
    }
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        if !text.contains("global_allocator") {
            continue;
        }
        let Ok(syntax) = syn::parse_file(&text) else {
            continue;
        };
        if let Some(found) = declared_at_top(&syntax, &file)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// The `#[global_allocator]` static among a file's top-level items.
fn declared_at_top(syntax: &syn::File, file: &Path) -> Result<Option<ProductionAllocator>, String> {
    let uses = imports(syntax);
    for item in &syntax.items {
        let syn::Item::Static(item) = item else {
            continue;
        };
        let Some(attr) = item
            .attrs
            .iter()
            .find(|a| a.path().is_ident("global_allocator"))
        else {
            continue;
        };
        let line = attr.pound_token.span.start().line;
        let at = format!("{}:{line}", file.display());
        let mut ty = (*item.ty).clone();
        let mut value = (*item.expr).clone();
        let mut resolver = Resolver {
            uses: &uses,
            unresolved: Vec::new(),
        };
        syn::visit_mut::VisitMut::visit_type_mut(&mut resolver, &mut ty);
        syn::visit_mut::VisitMut::visit_expr_mut(&mut resolver, &mut value);
        resolver.unresolved.dedup();
        if !resolver.unresolved.is_empty() {
            return Err(format!(
                "the global allocator at {at} names {} of the binary's own, which the profiling binary cannot name",
                resolver
                    .unresolved
                    .iter()
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let syn::Type::Path(path) = &ty else {
            return Err(format!(
                "the global allocator at {at} has a type that is not a path"
            ));
        };
        let krate = path
            .path
            .segments
            .first()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        if matches!(krate.as_str(), "std" | "core" | "alloc") {
            return Ok(None);
        }
        let cfgs = item
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("cfg"))
            .map(|a| tidy(&quote::ToTokens::to_token_stream(a).to_string()))
            .collect();
        return Ok(Some(ProductionAllocator {
            ty: tidy(&quote::ToTokens::to_token_stream(&ty).to_string()),
            value: tidy(&quote::ToTokens::to_token_stream(&value).to_string()),
            krate,
            cfgs,
            file: file.to_path_buf(),
            line,
        }));
    }
    Ok(None)
}

/// What each name a file's top-level `use` items bring in stands for:
/// `MiMalloc` for `mimalloc::MiMalloc`, an alias for its path.
fn imports(syntax: &syn::File) -> Vec<(String, Vec<String>)> {
    fn walk(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                walk(&path.tree, prefix, out);
                prefix.pop();
            }
            syn::UseTree::Name(name) => {
                let mut full = prefix.clone();
                full.push(name.ident.to_string());
                out.push((name.ident.to_string(), full));
            }
            syn::UseTree::Rename(rename) => {
                let mut full = prefix.clone();
                full.push(rename.ident.to_string());
                out.push((rename.rename.to_string(), full));
            }
            syn::UseTree::Group(group) => {
                for tree in &group.items {
                    walk(tree, prefix, out);
                }
            }
            syn::UseTree::Glob(_) => {}
        }
    }
    let mut out = Vec::new();
    for item in &syntax.items {
        if let syn::Item::Use(item) = item {
            walk(&item.tree, &mut Vec::new(), &mut out);
        }
    }
    out
}

/// Rewrites the first name of each path through the file's imports, and
/// notes the names that stay the binary's own.
struct Resolver<'a> {
    uses: &'a [(String, Vec<String>)],
    unresolved: Vec<String>,
}

impl Resolver<'_> {
    fn resolve(&mut self, path: &mut syn::Path) {
        if path.leading_colon.is_some() {
            return;
        }
        let Some(first) = path.segments.first().map(|s| s.ident.to_string()) else {
            return;
        };
        if matches!(first.as_str(), "crate" | "self" | "super") {
            self.unresolved.push(
                quote::ToTokens::to_token_stream(&*path)
                    .to_string()
                    .replace(' ', ""),
            );
            return;
        }
        if let Some((_, full)) = self.uses.iter().find(|(name, _)| *name == first) {
            if full
                .first()
                .is_some_and(|f| matches!(f.as_str(), "crate" | "self" | "super"))
            {
                self.unresolved.push(full.join("::"));
                return;
            }
            let rest: Vec<syn::PathSegment> = path.segments.iter().skip(1).cloned().collect();
            let head = path.segments.first().cloned();
            let mut segments: syn::punctuated::Punctuated<syn::PathSegment, syn::Token![::]> = full
                .iter()
                .map(|name| {
                    syn::PathSegment::from(syn::Ident::new(name, proc_macro2::Span::call_site()))
                })
                .collect();
            // The imported name's own arguments (`Cap<System>`) stay on it.
            if let (Some(head), Some(last)) = (head, segments.last_mut()) {
                last.arguments = head.arguments;
            }
            segments.extend(rest);
            path.segments = segments;
        } else if path.segments.len() == 1 && !is_prelude(&first) {
            self.unresolved.push(first);
        }
    }
}

/// Names every crate sees without a `use`.
fn is_prelude(name: &str) -> bool {
    matches!(
        name,
        "usize"
            | "u8"
            | "u16"
            | "u32"
            | "u64"
            | "u128"
            | "isize"
            | "i8"
            | "i16"
            | "i32"
            | "i64"
            | "i128"
            | "bool"
            | "char"
            | "str"
            | "f32"
            | "f64"
            | "Box"
            | "Vec"
            | "String"
            | "Option"
            | "Some"
            | "None"
            | "Default"
    )
}

impl syn::visit_mut::VisitMut for Resolver<'_> {
    fn visit_path_mut(&mut self, path: &mut syn::Path) {
        self.resolve(path);
        syn::visit_mut::visit_path_mut(self, path);
    }
}

/// Token text as code is written: no space around `::`, before `,`, `;`
/// or a closing bracket, or after an opening one.
fn tidy(tokens: &str) -> String {
    let mut text = tokens.replace(" :: ", "::").replace(":: ", "::");
    for (from, to) in [
        (" ,", ","),
        (" ;", ";"),
        ("( ", "("),
        (" )", ")"),
        ("[ ", "["),
        (" ]", "]"),
        (" < ", "<"),
        (" >", ">"),
        ("# [", "#["),
        (" (", "("),
    ] {
        text = text.replace(from, to);
    }
    text
}

/// The block that replaces [`COUNTING_ALLOCATOR`] in the profiling
/// binary's `main.rs` for `allocator`, declared by `package`'s binary at
/// `declared`: the counting allocator over it, and over the system's
/// where its `cfg` does not hold.
pub(crate) fn wrapping(allocator: &ProductionAllocator, package: &str, declared: &str) -> String {
    let note = crate::text::wrap(
        &format!(
            "Counts allocations over the allocator `{package}` runs on ({declared}): the \
             snippets are timed on it, and memory per range still counts."
        ),
        76,
        "//",
    );
    let mut block = format!("{}\n", note.trim_end());
    for cfg in &allocator.cfgs {
        block.push_str(cfg);
        block.push('\n');
    }
    block.push_str(&format!(
        "#[global_allocator]\nstatic ALLOCATOR: profiling_core::memory::CountingAllocator<{}> =\n    profiling_core::memory::CountingAllocator::new({});\n",
        allocator.ty, allocator.value
    ));
    if !allocator.cfgs.is_empty() {
        let conditions: Vec<String> = allocator
            .cfgs
            .iter()
            .map(|cfg| {
                cfg.trim_start_matches("#[cfg(")
                    .trim_end_matches(")]")
                    .to_owned()
            })
            .collect();
        block.push_str(&format!(
            "#[cfg(not(all({})))]\n#[global_allocator]\nstatic ALLOCATOR: profiling_core::memory::CountingAllocator =\n    profiling_core::memory::CountingAllocator;\n",
            conditions.join(", ")
        ));
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declaration_outside_test_modules_is_found_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("lib.rs"),
            "#[cfg(test)]\nmod tests {\n    #[global_allocator]\n    static A: std::alloc::System = std::alloc::System;\n}\n",
        )
        .unwrap();
        assert_eq!(declared_in(dir.path()), None);
        std::fs::create_dir(dir.path().join("alloc")).unwrap();
        std::fs::write(
            dir.path().join("alloc/mod.rs"),
            "use std::alloc::System;\n\n/// The allocator.\n#[global_allocator]\nstatic GLOBAL: System = System;\n",
        )
        .unwrap();
        assert_eq!(
            declared_in(dir.path()),
            Some((dir.path().join("alloc/mod.rs"), 4))
        );
    }

    #[test]
    fn only_the_block_init_writes_is_replaced() {
        let main = format!("use x as _;\n\n{COUNTING_ALLOCATOR}\nfn main() {{}}\n");
        let edited = without_counting(&main, "svc", "svc/src/lib.rs:4").unwrap();
        assert!(
            !edited.lines().any(|l| l.starts_with("#[global_allocator]")),
            "{edited}"
        );
        assert!(edited.contains("// No counting allocator: `svc` declares the program's global allocator\n// (svc/src/lib.rs:4)"), "{edited}");
        assert!(edited.ends_with("\nfn main() {}\n"), "{edited}");
        assert_eq!(without_counting(&edited, "svc", "svc/src/lib.rs:4"), None);
    }

    fn crate_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn a_binarys_allocator_is_named_as_another_crate_names_it() {
        let dir = crate_with(&[
            ("Cargo.toml", "[package]\nname = \"svc\"\n"),
            ("src/lib.rs", "pub fn f() {}\n"),
            (
                "src/main.rs",
                "use mimalloc::MiMalloc;\n\n#[global_allocator]\nstatic GLOBAL: MiMalloc = MiMalloc;\n\nfn main() {}\n",
            ),
        ]);
        let found = in_binaries(dir.path()).unwrap().unwrap();
        assert_eq!(
            (
                found.ty.as_str(),
                found.value.as_str(),
                found.krate.as_str()
            ),
            ("mimalloc::MiMalloc", "mimalloc::MiMalloc", "mimalloc")
        );
        assert_eq!(
            (&found.file, found.line),
            (&dir.path().join("src/main.rs"), 3)
        );
        assert!(found.cfgs.is_empty());
        // Not the library's: the library's check leaves it alone.
        assert_eq!(declared_in(&dir.path().join("src")), None);
        let block = wrapping(&found, "svc", "svc/src/main.rs:3");
        assert!(block.ends_with(
            "#[global_allocator]\nstatic ALLOCATOR: profiling_core::memory::CountingAllocator<mimalloc::MiMalloc> =\n    profiling_core::memory::CountingAllocator::new(mimalloc::MiMalloc);\n"
        ), "{block}");
        assert!(
            block.starts_with(
                "// Counts allocations over the allocator `svc` runs on (svc/src/main.rs:3):"
            ),
            "{block}"
        );
    }

    #[test]
    fn a_cfg_an_alias_a_generic_and_a_bin_directory_are_kept() {
        let dir = crate_with(&[(
            "src/bin/server.rs",
            "#[cfg(not(target_env = \"msvc\"))]\nuse tikv_jemallocator::Jemalloc as Je;\n\n#[cfg(not(target_env = \"msvc\"))]\n#[global_allocator]\nstatic GLOBAL: Je = Je;\nfn main() {}\n",
        )]);
        let found = in_binaries(dir.path()).unwrap().unwrap();
        assert_eq!(found.ty, "tikv_jemallocator::Jemalloc");
        assert_eq!(found.cfgs, ["#[cfg(not(target_env = \"msvc\"))]"]);
        let block = wrapping(&found, "svc", "svc/src/bin/server.rs:5");
        assert!(
            block.contains("#[cfg(not(target_env = \"msvc\"))]\n#[global_allocator]\nstatic ALLOCATOR: profiling_core::memory::CountingAllocator<tikv_jemallocator::Jemalloc> =\n    profiling_core::memory::CountingAllocator::new(tikv_jemallocator::Jemalloc);\n#[cfg(not(all(not(target_env = \"msvc\"))))]\n#[global_allocator]\nstatic ALLOCATOR: profiling_core::memory::CountingAllocator =\n    profiling_core::memory::CountingAllocator;\n"),
            "{block}"
        );

        let capped = crate_with(&[(
            "src/main.rs",
            "use cap::Cap;\nuse std::alloc;\n\n#[global_allocator]\nstatic ALLOCATOR: Cap<alloc::System> = Cap::new(alloc::System, usize::MAX);\nfn main() {}\n",
        )]);
        let found = in_binaries(capped.path()).unwrap().unwrap();
        assert_eq!(found.ty, "cap::Cap<std::alloc::System>");
        assert_eq!(found.value, "cap::Cap::new(std::alloc::System, usize::MAX)");
        assert_eq!(found.krate, "cap");
    }

    #[test]
    fn a_wrapped_allocator_is_taken_out_whole_when_a_library_declares_one() {
        let found = ProductionAllocator {
            ty: "mimalloc::MiMalloc".to_owned(),
            value: "mimalloc::MiMalloc".to_owned(),
            krate: "mimalloc".to_owned(),
            cfgs: vec!["#[cfg(unix)]".to_owned()],
            file: PathBuf::from("app/src/main.rs"),
            line: 3,
        };
        let main = format!("use x as _;\n\n{COUNTING_ALLOCATOR}\nfn main() {{}}\n");
        let wrapped = main.replacen(
            COUNTING_ALLOCATOR,
            &wrapping(&found, "app", "app/src/main.rs:3"),
            1,
        );
        assert!(
            !wrapped.contains("\n\n#[global_allocator]"),
            "one block: {wrapped}"
        );
        let edited = without_counting(&wrapped, "svc", "svc/src/lib.rs:4").unwrap();
        assert!(
            !edited
                .lines()
                .any(|l| l.starts_with("#[global_allocator]") || l.contains("CountingAllocator")),
            "{edited}"
        );
        assert!(edited.ends_with("\nfn main() {}\n"), "{edited}");
    }

    #[test]
    fn the_systems_is_nothing_to_wrap_and_a_type_of_the_binarys_own_is_said() {
        let system = crate_with(&[(
            "src/main.rs",
            "#[global_allocator]\nstatic A: std::alloc::System = std::alloc::System;\nfn main() {}\n",
        )]);
        assert_eq!(in_binaries(system.path()), Ok(None));
        let own = crate_with(&[(
            "src/main.rs",
            "struct Mine;\n#[global_allocator]\nstatic A: Mine = Mine;\nfn main() {}\n",
        )]);
        let why = in_binaries(own.path()).unwrap_err();
        assert!(why.ends_with("/src/main.rs:2 names `Mine` of the binary's own, which the profiling binary cannot name"), "{why}");
        let none = crate_with(&[("src/main.rs", "fn main() {}\n")]);
        assert_eq!(in_binaries(none.path()), Ok(None));
    }
}
