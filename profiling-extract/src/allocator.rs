//! A production library that declares the program's global allocator
//! (`#[global_allocator] static GLOBAL: MiMalloc = MiMalloc;`, common in
//! inference services): a program has one, so the profiling binary that
//! links the library cannot install its counting allocator too. `new`
//! takes the counting allocator out of the binary's `main.rs` when it is
//! the one `init` wrote, and says so; the run then says that memory per
//! range is unavailable.

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
    main.contains(COUNTING_ALLOCATOR).then(|| {
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
        main.replacen(COUNTING_ALLOCATOR, &note, 1)
    })
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
}
