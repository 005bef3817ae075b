//! What the copy reaches in *other* modules of its crate that the snippet,
//! another crate, cannot name: private and `pub(crate)` functions, types,
//! constants, statics and traits (and the public ones of private modules),
//! copied beside the copy with what they need in turn, each resolved in its
//! own module; and the private or `pub(crate)` methods of the crate's types
//! that the copied code calls (`point.to_i32()`), given back through a
//! trait of the snippet's implemented for the production type, so the
//! calls build unchanged.

use std::collections::BTreeSet;
use std::path::Path;

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};

use super::names::{ImportPath, Imports, Resolver, SnippetCrates, Unresolved};
use super::select::type_name;
use super::source::{display_path, ModuleLocation, SourceFile};

/// An item of another module the copy (or something copied for it) names
/// and the snippet cannot: to be copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    /// The item's module, below the crate root.
    pub modules: Vec<String>,
    pub name: String,
    /// The import that names it, as written absolute (`imageproc::point::distance`).
    pub import: String,
    /// Why the snippet cannot name it.
    pub reason: String,
}

/// A module of the crate items are copied from.
pub(crate) struct ForeignModule {
    /// Below the crate root.
    pub modules: Vec<String>,
    pub source: SourceFile,
    pub location: ModuleLocation,
    /// Indices into the file's items of those copied, in source order.
    pub helpers: BTreeSet<usize>,
}

/// Methods of one inherent impl block of a crate type that the snippet
/// cannot call: given back through a trait of its own.
pub(crate) struct Methods {
    /// Index into [`Foreign::modules`].
    pub module: usize,
    /// Index of the impl block in the module's items.
    pub impl_index: usize,
    /// Indices of the methods in the impl block, in source order.
    pub methods: BTreeSet<usize>,
}

/// What is copied from other modules of the crate.
#[derive(Default)]
pub(crate) struct Foreign {
    pub modules: Vec<ForeignModule>,
    pub methods: Vec<Methods>,
}

impl std::fmt::Debug for Foreign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Foreign")
            .field(
                "modules",
                &self
                    .modules
                    .iter()
                    .map(|m| (&m.source.display, &m.helpers))
                    .collect::<Vec<_>>(),
            )
            .field("methods", &self.methods.len())
            .finish()
    }
}

impl Foreign {
    /// The module `modules` of the crate `location` is in, read once.
    fn module(
        &mut self,
        location: &ModuleLocation,
        modules: &[String],
        root: &Path,
    ) -> Option<usize> {
        if let Some(found) = self.modules.iter().position(|m| m.modules == modules) {
            return Some(found);
        }
        let file = location.module_file(modules)?;
        let source = SourceFile::read(&file, display_path(&file, root)).ok()?;
        self.modules.push(ForeignModule {
            modules: modules.to_vec(),
            location: ModuleLocation::of_file(&file),
            source,
            helpers: BTreeSet::new(),
        });
        Some(self.modules.len() - 1)
    }

    /// The names of the methods copied for the type `name`.
    pub fn methods_of(&self, name: &str) -> BTreeSet<String> {
        let mut found = BTreeSet::new();
        for methods in &self.methods {
            let module = &self.modules[methods.module];
            let syn::Item::Impl(imp) = &module.source.syntax.items[methods.impl_index] else {
                continue;
            };
            if type_name(&imp.self_ty).as_deref() != Some(name) {
                continue;
            }
            for &index in &methods.methods {
                if let Some(syn::ImplItem::Fn(method)) = imp.items.get(index) {
                    found.insert(method.sig.ident.to_string());
                }
            }
        }
        found
    }
}

/// The names of the methods and associated items code calls or names:
/// `x.name()`, `Type::name`, and every identifier inside a macro call
/// (whose tokens syn leaves unparsed).
#[derive(Default)]
pub(crate) struct Called(pub BTreeSet<String>);

impl<'ast> Visit<'ast> for Called {
    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        self.0.insert(call.method.to_string());
        visit::visit_expr_method_call(self, call);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.segments.len() >= 2 {
            if let Some(last) = path.segments.last() {
                self.0.insert(last.ident.to_string());
            }
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        fn idents(tokens: TokenStream, out: &mut BTreeSet<String>) {
            for token in tokens {
                match token {
                    TokenTree::Ident(ident) => {
                        out.insert(ident.to_string());
                    }
                    TokenTree::Group(group) => idents(group.stream(), out),
                    _ => {}
                }
            }
        }
        idents(mac.tokens.clone(), &mut self.0);
        visit::visit_macro(self, mac);
    }
}

/// Copies what `imports.foreign_requests` ask for, and the private methods
/// of the crate's types that the copied code calls (`called`: the names
/// the copy and its helpers call), transitively: each item copied is
/// resolved in its own module, which may ask for more. Imports the copied
/// items need join `chosen`; what cannot be copied is listed unresolved.
pub(crate) fn reach(
    imports: &mut Imports,
    chosen: &mut BTreeSet<ImportPath>,
    location: &ModuleLocation,
    crates: SnippetCrates<'_>,
    root: &Path,
    mut called: BTreeSet<String>,
    force: &BTreeSet<String>,
) {
    let Some(crate_ident) = location.crate_ident.clone() else {
        return;
    };
    let mut foreign = std::mem::take(&mut imports.foreign);
    let mut seen: Vec<Request> = Vec::new();
    loop {
        while let Some(request) = imports.foreign_requests.pop() {
            if seen.contains(&request) {
                continue;
            }
            seen.push(request.clone());
            let copied = foreign
                .module(location, &request.modules, root)
                .is_some_and(|m| {
                    let names = BTreeSet::from([request.name.clone()]);
                    resolve_in(
                        &mut foreign,
                        m,
                        names,
                        imports,
                        chosen,
                        crates,
                        &mut called,
                        force,
                    )
                });
            if !copied {
                imports.unresolved.push(Unresolved {
                    name: request.import,
                    reason: request.reason,
                });
            }
        }
        let added = private_methods(&mut foreign, location, &crate_ident, chosen, &called, root);
        for &(m, impl_index, method_index) in &added {
            let module = &foreign.modules[m];
            let syn::Item::Impl(imp) = &module.source.syntax.items[impl_index] else {
                continue;
            };
            let Some(syn::ImplItem::Fn(method)) = imp.items.get(method_index) else {
                continue;
            };
            let mut uses = super::names::Uses::default();
            uses.visit_impl_item_fn(method);
            let mut inner = Called::default();
            inner.visit_impl_item_fn(method);
            called.extend(inner.0);
            let names: BTreeSet<String> = uses
                .free_names()
                .into_iter()
                .filter(|n| !super::names::PATH_KEYWORDS.contains(&n.as_str()))
                .collect();
            resolve_in(
                &mut foreign,
                m,
                names,
                imports,
                chosen,
                crates,
                &mut called,
                force,
            );
        }
        if added.is_empty() && imports.foreign_requests.is_empty() {
            break;
        }
    }
    imports.foreign = foreign;
}

/// Resolves `names` in the module `m`: its private items they name are
/// copied (and what those name, transitively), its public ones imported.
/// Returns whether anything was copied or imported.
#[allow(clippy::too_many_arguments)]
fn resolve_in(
    foreign: &mut Foreign,
    m: usize,
    names: BTreeSet<String>,
    imports: &mut Imports,
    chosen: &mut BTreeSet<ImportPath>,
    crates: SnippetCrates<'_>,
    called: &mut BTreeSet<String>,
    force: &BTreeSet<String>,
) -> bool {
    let (result, found) = {
        let module = &foreign.modules[m];
        let mut resolver = Resolver::new(
            &module.source,
            &module.source.syntax.items,
            &[],
            &module.location,
            crates,
        );
        // The module cannot be named: its public items are copied too.
        resolver.copy_public = resolver.blocked.is_some();
        resolver.force = force.clone();
        resolver.resolve(names);
        resolver.keep_unnamed_imports();
        (resolver.result, resolver.chosen)
    };
    let module = &mut foreign.modules[m];
    let mut any = false;
    for index in result.helpers {
        if module.helpers.insert(index) {
            any = true;
            let mut inner = Called::default();
            inner.visit_item(&module.source.syntax.items[index]);
            called.extend(inner.0);
        }
    }
    for import in found {
        // A name the snippet already binds to something else keeps that
        // binding: two imports of one name do not build.
        let binding = import.rename.clone().unwrap_or_else(|| import.name.clone());
        let taken = binding != "*"
            && binding != "_"
            && chosen.iter().any(|other| {
                other != &import && other.rename.as_ref().unwrap_or(&other.name) == &binding
            });
        if !taken {
            any |= chosen.insert(import);
        }
    }
    imports.unresolved.extend(result.unresolved);
    imports.foreign_requests.extend(result.foreign_requests);
    for module in result.private_modules {
        if !imports.private_modules.contains(&module) {
            imports.private_modules.push(module);
        }
    }
    for kept in result.kept_for_traits {
        if !imports.kept_for_traits.contains(&kept) {
            imports.kept_for_traits.push(kept);
        }
    }
    any
}

/// The methods of the crate's types the snippet imports that are not
/// `pub` and that the copied code calls (`called`), not taken yet: as
/// (module, impl block, method) indices.
fn private_methods(
    foreign: &mut Foreign,
    location: &ModuleLocation,
    crate_ident: &str,
    chosen: &BTreeSet<ImportPath>,
    called: &BTreeSet<String>,
    root: &Path,
) -> Vec<(usize, usize, usize)> {
    let types: Vec<(Vec<String>, String)> = chosen
        .iter()
        .filter(|import| import.parent.first().map(String::as_str) == Some(crate_ident))
        .filter(|import| import.name.starts_with(|c: char| c.is_uppercase()))
        .map(|import| (import.parent[1..].to_vec(), import.name.clone()))
        .collect();
    let mut added = Vec::new();
    for (modules, name) in types {
        let Some(m) = foreign.module(location, &modules, root) else {
            continue;
        };
        let items = &foreign.modules[m].source.syntax.items;
        let defined = items.iter().any(|item| match item {
            syn::Item::Struct(s) => s.ident == name,
            syn::Item::Enum(e) => e.ident == name,
            syn::Item::Union(u) => u.ident == name,
            _ => false,
        });
        if !defined {
            continue;
        }
        let mut found = Vec::new();
        for (impl_index, item) in items.iter().enumerate() {
            let syn::Item::Impl(imp) = item else {
                continue;
            };
            if imp.trait_.is_some() || type_name(&imp.self_ty).as_deref() != Some(name.as_str()) {
                continue;
            }
            for (method_index, impl_item) in imp.items.iter().enumerate() {
                let syn::ImplItem::Fn(method) = impl_item else {
                    continue;
                };
                let public = matches!(method.vis, syn::Visibility::Public(_));
                if !public && called.contains(&method.sig.ident.to_string()) {
                    found.push((impl_index, method_index));
                }
            }
        }
        for (impl_index, method_index) in found {
            let entry = match foreign
                .methods
                .iter()
                .position(|e| e.module == m && e.impl_index == impl_index)
            {
                Some(at) => at,
                None => {
                    foreign.methods.push(Methods {
                        module: m,
                        impl_index,
                        methods: BTreeSet::new(),
                    });
                    foreign.methods.len() - 1
                }
            };
            if foreign.methods[entry].methods.insert(method_index) {
                added.push((m, impl_index, method_index));
            }
        }
    }
    added
}
