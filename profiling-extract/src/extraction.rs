//! A function being copied into a snippet, and the snippet's parts worked
//! out from it: the crates it can name, its imports, the helpers copied
//! beside it, its target, what was extracted ([`Extracted`]) and its files.

use std::path::{Path, PathBuf};

use crate::parity::parity_of;
use crate::production::{Production, ProductionDependency};
use crate::provenance::{
    command_line, first_doc_paragraph, git_provenance, nsys_command, runner_command,
};
use crate::select::{self, Selector, SourceSpec};
use crate::snippet_crate::{self, AddedDependency, DRAFT_FILE};
use crate::source::{self, display_path, ModuleLocation, SourceFile};
use crate::{cfg, copy, names, production, render, scaffold};
use crate::{Extracted, NewSnippet, SnippetError, SnippetsCrate};

/// The crates a snippet can name, and the production crate it copies from.
pub(crate) struct Crates {
    /// Those of the crate that compiles the snippet, else those of the
    /// workspace's snippets crate, with the one `create` adds.
    pub dependencies: Vec<String>,
    /// The package whose dependencies those are.
    pub snippets_package: String,
    /// The dependency on the production crate that `create` adds to the
    /// snippets crate, which lacks it.
    pub added_dependency: Option<AddedDependency>,
    /// The package the source file belongs to, when it has a manifest.
    pub production: Option<Production>,
    /// `dependencies`, and in a snippets crate the production crate's own
    /// dependencies, which the snippet's Cargo.toml can add.
    pub visible: Vec<String>,
}

/// A function being copied into a snippet, and where the snippet goes:
/// what the snippet's parts are worked out from.
pub(crate) struct Extraction<'a> {
    pub request: &'a NewSnippet,
    /// The snippet directory.
    pub directory: &'a Path,
    /// The crate that compiles the snippet, when it lands in one.
    pub snippets_crate: Option<&'a SnippetsCrate>,
    /// The workspace root the snippet's files name paths from.
    pub root: &'a Path,
    /// The source file.
    pub path: &'a Path,
    /// The source file, as messages name it.
    pub display: &'a str,
    pub source: &'a SourceFile,
    pub function: &'a select::Function<'a>,
    pub location: &'a ModuleLocation,
}

impl Extraction<'_> {
    /// The crates the snippet can name, with those `create` and the
    /// snippet's own Cargo.toml add.
    pub fn crates(&self) -> Crates {
        // Which crates the snippet can name: those of the crate that
        // compiles it, else those of the workspace's snippets crate.
        let dependencies_of = self.snippets_crate.cloned().or_else(|| {
            SnippetsCrate::at(&self.request.workspace_root.join("inference_profiling"))
        });
        let (mut dependencies, snippets_package) = match &dependencies_of {
            Some(krate) => (krate.dependencies.clone(), krate.package.clone()),
            None => (Vec::new(), "inference-profiling".to_owned()),
        };
        // A crate of the workspace the snippets crate does not depend on
        // yet: `create` adds the dependency, so the snippet names it as if
        // it did.
        let added_dependency = match (self.snippets_crate, &self.location.crate_ident) {
            (Some(krate), Some(ident)) if !dependencies.contains(ident) => {
                snippet_crate::path_dependency(krate, self.path)
            }
            _ => None,
        };
        if let Some(added) = &added_dependency {
            dependencies.push(source::crate_ident(&added.package));
        }
        // The production crate's own dependencies: a crate the copy names
        // that the snippets crate lacks goes into the snippet's Cargo.toml,
        // as production declares it, so the copy names it as if it were
        // there.
        let production = source::CargoManifest::of_file(self.path)
            .and_then(|manifest| production::Production::read(&manifest.dir, self.directory));
        let mut visible = dependencies.clone();
        if let (Some(_), Some(production)) = (self.snippets_crate, &production) {
            visible.extend(
                production
                    .dependencies
                    .iter()
                    .filter(|d| !dependencies.contains(&d.ident))
                    .map(|d| d.ident.clone()),
            );
        }
        Crates {
            dependencies,
            snippets_package,
            added_dependency,
            production,
            visible,
        }
    }

    /// The copy's imports, without those of `leave_out`.
    pub fn imports(&self, crates: &Crates, leave_out: &[String]) -> names::Imports {
        let mut imports = names::imports(
            self.source,
            self.function,
            self.location,
            &crates.visible,
            &crates.snippets_package,
        );
        // Kept as possible traits, found unused by the compiler.
        imports
            .paths
            .retain(|path| !leave_out.contains(&path.display()));
        imports
            .kept_for_traits
            .retain(|path| !leave_out.contains(path));
        imports
    }

    /// Refuses a function that `production` is not built with, by its
    /// `cfg`.
    pub fn check_compiled(&self, production: Option<&Production>) -> Result<(), SnippetError> {
        let Some(production) = production else {
            return Ok(());
        };
        if let Some(features) = &production.features {
            if let Some(predicate) = cfg::function_is_off(self.function.attrs, features) {
                return Err(SnippetError::Source(format!(
                    "`{}` is compiled only with `cfg({predicate})`, which {} is not built with ({}): there is nothing of it to profile",
                    self.function.label, production.package, production.features_from
                )));
            }
        }
        Ok(())
    }

    /// The line where `callee`, a function of the module, is defined.
    fn callee_line(&self, callee: &str) -> Option<usize> {
        self.function.scope.iter().find_map(|item| match item {
            syn::Item::Fn(f) if f.sig.ident == callee => {
                Some(self.source.lines(f.sig.ident.span()).0)
            }
            _ => None,
        })
    }

    /// With `--follow`, the request for `callee`, the function of the module
    /// the copied one only delegates to, to copy in its place, and the
    /// warning that says so; `None` without `--follow` or when `callee` is
    /// not in the module.
    pub fn follow(&self, callee: &str) -> Option<(NewSnippet, String)> {
        let callee_item = self.function.scope.iter().find_map(|item| match item {
            syn::Item::Fn(f) if f.sig.ident == callee => Some(f),
            _ => None,
        });
        let (true, Some(callee_fn)) = (self.request.follow, callee_item) else {
            return None;
        };
        // The body that does the work: copied in its place, with the type
        // arguments that are its own.
        let mut path = self.function.inline_modules.clone();
        path.push(callee.to_owned());
        let mut followed = self.request.clone();
        followed.follow = false;
        followed.from = SourceSpec {
            file: self.request.from.file.clone(),
            selector: Selector::Path(path),
        };
        followed.type_args = self.request.type_args.for_generics(&callee_fn.sig.generics);
        let note = format!(
            "`{}` only prepares its arguments and delegates to `{callee}`: followed, the snippet copies `{callee}` ({}:{})",
            self.function.label,
            self.display,
            self.callee_line(callee).unwrap_or_default()
        );
        Some((followed, note))
    }

    /// The warning that the copied function only delegates to `callee`, and
    /// how to profile `callee` instead.
    pub fn delegation_warning(&self, callee: &str) -> String {
        let display = self.display;
        let next = match self.callee_line(callee) {
            Some(line) => format!(
                "to profile its body instead: profile-cli new {} --from {display}::{callee} (defined at line {line}), or `--follow`",
                callee.replace('_', "-")
            ),
            None => format!("to profile its body instead, copy `{callee}` with `profile-cli new`"),
        };
        format!(
            "`{}` only prepares its arguments and delegates to `{callee}`: the profile times one call into production code, not a body; {next}",
            self.function.label
        )
    }

    /// Copies the private items and root modules of production that the
    /// copy calls (`imports`) beside it, and says so in its changes.
    pub fn copy_helpers(
        &self,
        copied: &mut copy::Copied,
        imports: &names::Imports,
        features: Option<&std::collections::BTreeSet<String>>,
    ) {
        let (source, function, location) = (self.source, self.function, self.location);
        let mut helper_names = Vec::new();
        for &index in &imports.helpers {
            let item = &function.scope[index];
            if let Some(text) =
                copy::copy_helper(source, item, location, &function.inline_modules, features)
            {
                if matches!(item, syn::Item::Macro(_)) {
                    copied.macros.push(text);
                } else {
                    copied.helpers.push(text);
                }
                helper_names.push(format!(
                    "`{}` (line {})",
                    helper_label(item),
                    source.lines(syn::spanned::Spanned::span(item)).0
                ));
            }
        }
        for module in &imports.private_modules {
            let Some(file) = location.private_root_module(module) else {
                continue;
            };
            let shown = display_path(&file, self.root);
            let crate_name = location.crate_ident.clone().unwrap_or_default();
            if let Some(text) =
                copy::copy_private_module(module, &file, &shown, &crate_name, &location.files)
            {
                copied.helpers.push(text);
                helper_names.push(format!("module `{module}` ({shown})"));
            }
        }
        if !helper_names.is_empty() {
            copied.changes.push(format!(
                "private items of the production module it calls are copied beside it, marked as copied helpers: {}",
                helper_names.join(", ")
            ));
        }
        for (name, fields) in &imports.local_types {
            copied.changes.push(format!(
                "`{name}` is public, but the copied code reads its private fields ({}): it is copied too, with its impl blocks, and the snippet works on its own `{name}`, not production's",
                fields
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let foreign = &imports.foreign;
        let mut foreign_names = Vec::new();
        for module in &foreign.modules {
            for &index in &module.helpers {
                let item = &module.source.syntax.items[index];
                if let Some(text) =
                    copy::copy_helper(&module.source, item, &module.location, &[], features)
                {
                    if matches!(item, syn::Item::Macro(_)) {
                        copied.macros.push(text);
                    } else {
                        copied.helpers.push(text);
                    }
                    let (first, last) = module.source.lines(syn::spanned::Spanned::span(item));
                    foreign_names.push(format!(
                        "`{}` ({}:{first}-{last})",
                        helper_label(item),
                        module.source.display
                    ));
                }
            }
        }
        if !foreign_names.is_empty() {
            copied.changes.push(format!(
                "items of other modules of the crate that the snippet cannot name (private, `pub(crate)` or in a private module) and that it reaches are copied beside it, marked as copied helpers: {}",
                foreign_names.join(", ")
            ));
        }
        let mut trait_names: Vec<String> = Vec::new();
        for methods in &foreign.methods {
            let module = &foreign.modules[methods.module];
            let syn::Item::Impl(imp) = &module.source.syntax.items[methods.impl_index] else {
                continue;
            };
            let owner = select::type_name(&imp.self_ty).unwrap_or_else(|| "Type".to_owned());
            let base = format!("{owner}CopiedMethods");
            let mut name = base.clone();
            let mut count = 1;
            while trait_names.contains(&name) {
                count += 1;
                name = format!("{base}{count}");
            }
            if let Some(text) = copy::copy_methods(
                &module.source,
                imp,
                &methods.methods,
                &module.location,
                &name,
                features,
            ) {
                copied.helpers.push(text);
                let listed: Vec<String> = methods
                    .methods
                    .iter()
                    .filter_map(|&i| match imp.items.get(i) {
                        Some(syn::ImplItem::Fn(f)) => {
                            let (first, last) = module.source.lines(syn::spanned::Spanned::span(f));
                            Some(format!(
                                "`{}` ({}:{first}-{last})",
                                f.sig.ident, module.source.display
                            ))
                        }
                        _ => None,
                    })
                    .collect();
                copied.changes.push(format!(
                    "methods of production's `{owner}` that are not `pub` and that it calls are copied into the snippet's trait `{name}`, implemented for `{owner}`, so the calls build unchanged: {}",
                    listed.join(", ")
                ));
                trait_names.push(name);
            }
        }
    }

    /// The target around the copy.
    pub fn plan_target(&self, production: Option<&Production>) -> scaffold::Target {
        let function = self.function;
        // A literal a production call passes is the default of a scalar
        // parameter's setting.
        let call_site = source::CargoManifest::of_file(self.path).and_then(|manifest| {
            scaffold::find_call_site(
                &self.location.files,
                &manifest.dir,
                self.root,
                &function.name(),
                function.sig.inputs.len(),
                function.owner.is_some(),
            )
        });
        scaffold::plan(
            self.source,
            function,
            &self.request.name,
            &self.request.type_args,
            call_site.as_ref(),
            self.location
                .lib_root
                .as_deref()
                .and_then(Path::parent)
                .map(|src| (src, &*self.location.files)),
            production.map_or(&[], |p| &p.dependency_sources[..]),
        )
    }

    /// Where a snippet made outside every snippets directory is to be moved
    /// for it to be compiled (the paths in its files name that place), with
    /// a warning when that place is taken.
    fn move_to(&self, warnings: &mut Vec<String>) -> Option<PathBuf> {
        if self.snippets_crate.is_some() {
            return None;
        }
        let placed = self
            .request
            .workspace_root
            .join("inference_profiling")
            .join("snippets")
            .join(self.request.name.replace('-', "_"));
        if placed.exists() {
            warnings.push(format!(
                "{} already exists: give the snippet another name before moving it there",
                display_path(&placed, self.root)
            ));
        }
        Some(placed)
    }

    /// What `new` makes and what it could not do for the user, all but the
    /// crates the snippet's own Cargo.toml adds.
    pub fn extracted(
        &self,
        crates: &Crates,
        copied: &copy::Copied,
        imports: &names::Imports,
        target: &scaffold::Target,
        mut warnings: Vec<String>,
    ) -> Extracted {
        let (request, function, root) = (self.request, self.function, self.root);
        let module = self.location.path(&function.inline_modules);
        let item = format!("{module}::{}", function.label);
        let parity = parity_of(
            self.source,
            function,
            self.location,
            &crates.dependencies,
            &crates.snippets_package,
            target,
            &item,
            &imports.local_types,
        );
        // Outside a snippets directory nothing compiles the snippet: its
        // files name the paths it will have once moved into the
        // workspace's.
        let move_to = self.move_to(&mut warnings);
        let home = move_to.as_deref().unwrap_or(self.directory);
        let config_path = home.join("config.yaml");
        let target_path = home.join("target.rs");
        Extracted {
            target_name: request.name.clone(),
            type_name: target.type_name.clone(),
            source: self.display.to_owned(),
            item,
            module,
            function_name: function.name(),
            owner: function.owner_name(),
            lines: (copied.first_line, copied.last_line),
            instrumentation: copied.instrumentation.clone(),
            range_note: copied.range_note.clone(),
            mapped: target
                .parameters
                .iter()
                .filter(|p| p.source != scaffold::ValueSource::Unmapped)
                .map(|p| (p.declared.clone(), p.describe_source()))
                .collect(),
            unmapped: target
                .unmapped()
                .iter()
                .map(|p| p.declared.clone())
                .collect(),
            needs_factory: target.needs_factory(),
            production_src: self
                .location
                .lib_root
                .as_deref()
                .and_then(Path::parent)
                .map(Path::to_path_buf),
            unresolved: imports.unresolved.clone(),
            left_out: imports.left_out.clone(),
            kept_for_traits: imports.kept_for_traits.clone(),
            module_items: imports.module_items.clone(),
            changes: copied.changes.clone(),
            warnings,
            production_doc: first_doc_paragraph(function.attrs),
            git: git_provenance(self.path),
            data_source: request.data_source.clone(),
            device: request.device,
            command: command_line(request, self.display, self.directory, root),
            nsys_command: nsys_command(request, root, &config_path),
            runner: runner_command(root),
            directory_display: display_path(self.directory, root),
            config_display: display_path(&config_path, root),
            target_display: display_path(&target_path, root),
            snippets_crate: self.snippets_crate.cloned(),
            added_dependency: crates.added_dependency.clone(),
            snippet_dependencies: Vec::new(),
            parity,
            move_to: move_to.as_deref().map(|placed| display_path(placed, root)),
            parsed: Vec::new(),
            allocator_note: None,
        }
    }

    /// The snippet's files: `target.rs` (`target_rs`), `config.yaml` and
    /// `README.md`, and in a snippets crate its `Cargo.toml` and `DRAFT`.
    pub fn files(
        &self,
        extracted: &Extracted,
        copied: &copy::Copied,
        target: &scaffold::Target,
        target_rs: String,
        crates: &Crates,
    ) -> Result<Vec<(&'static str, String)>, SnippetError> {
        let mut files = vec![
            ("target.rs", target_rs),
            ("config.yaml", render::config_yaml(extracted, target)),
            ("README.md", render::readme(extracted, copied, target)),
        ];
        // In a snippets crate: a crate of its own, a draft until checked.
        if let Some(krate) = &extracted.snippets_crate {
            files.push((
                "Cargo.toml",
                snippet_crate::manifest_with(
                    krate,
                    self.directory,
                    &self.request.name,
                    crates.added_dependency.as_ref(),
                    &extracted.snippet_dependencies,
                )?,
            ));
            files.push((
                DRAFT_FILE,
                snippet_crate::draft_text(
                    &self.request.name,
                    "not checked yet: `profile-cli new` made it and has not built it",
                    "",
                ),
            ));
        }
        Ok(files)
    }
}

/// The dependencies of `production` that `target_rs` names and the
/// snippets crate (with `dependencies`) lacks.
pub(crate) fn named_dependencies(
    production: &Production,
    dependencies: &[String],
    target_rs: &str,
) -> Vec<ProductionDependency> {
    let named = crate_roots(target_rs);
    production
        .dependencies
        .iter()
        .filter(|d| named.contains(&d.ident) && !dependencies.contains(&d.ident))
        .cloned()
        .collect()
}

/// For a snippet whose settings struct derives `serde::Deserialize`: the
/// `derive` feature on the serde its Cargo.toml takes from production, or
/// in a snippets crate without serde (`dependencies`) serde on its own.
pub(crate) fn add_serde_derive(extracted: &mut Extracted, dependencies: &[String], why: &str) {
    if let Some(serde) = extracted
        .snippet_dependencies
        .iter_mut()
        .find(|d| d.ident == "serde")
    {
        let mut features: Vec<String> = serde
            .spec
            .get("features")
            .and_then(toml_edit::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|f| f.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if !features.iter().any(|f| f == "derive") {
            features.push("derive".to_owned());
            serde.spec.insert(
                "features",
                toml_edit::Value::Array(features.into_iter().collect()),
            );
        }
        serde.reason = format!("{why} (as {} declares it)", serde.declared_by);
    }
    let serde_needed = !dependencies.iter().any(|d| d == "serde")
        && !extracted
            .snippet_dependencies
            .iter()
            .any(|d| d.ident == "serde");
    if let (true, Some(_)) = (serde_needed, &extracted.snippets_crate) {
        let mut spec = toml_edit::InlineTable::new();
        spec.insert("version", "1".into());
        spec.insert(
            "features",
            toml_edit::Value::Array(std::iter::once("derive").collect()),
        );
        extracted.snippet_dependencies.push(ProductionDependency {
            key: "serde".to_owned(),
            ident: "serde".to_owned(),
            spec,
            declared_by: String::new(),
            reason: why.to_owned(),
        });
    }
}

/// The function a `function` only delegates to, when it does: its body is
/// `let`s and assertions without loops or closures, ending in one call of
/// a function by a plain name or path (not a method, not a macro).
pub(crate) fn thin_wrapper(function: &select::Function<'_>) -> Option<String> {
    struct Work(bool);
    impl<'ast> syn::visit::Visit<'ast> for Work {
        fn visit_expr(&mut self, expr: &'ast syn::Expr) {
            if matches!(
                expr,
                syn::Expr::ForLoop(_)
                    | syn::Expr::While(_)
                    | syn::Expr::Loop(_)
                    | syn::Expr::Closure(_)
                    | syn::Expr::Match(_)
                    | syn::Expr::If(_)
            ) {
                self.0 = true;
            }
            syn::visit::visit_expr(self, expr);
        }
    }
    let (last, rest) = function.block.stmts.split_last()?;
    let syn::Stmt::Expr(syn::Expr::Call(call), None) = last else {
        return None;
    };
    let syn::Expr::Path(path) = &*call.func else {
        return None;
    };
    let callee = path.path.segments.last()?.ident.to_string();
    if callee == function.name() || callee.starts_with(char::is_uppercase) {
        return None;
    }
    let mut work = Work(false);
    for stmt in rest {
        match stmt {
            syn::Stmt::Local(_) | syn::Stmt::Macro(_) => {
                syn::visit::Visit::visit_stmt(&mut work, stmt)
            }
            _ => return None,
        }
    }
    syn::visit::Visit::visit_expr_call(&mut work, call);
    (!work.0).then_some(callee)
}

/// How a copied helper is named in messages: `gaussian_pdf`, `impl Kernel`.
fn helper_label(item: &syn::Item) -> String {
    match item {
        syn::Item::Fn(i) => i.sig.ident.to_string(),
        syn::Item::Const(i) => i.ident.to_string(),
        syn::Item::Static(i) => i.ident.to_string(),
        syn::Item::Type(i) => i.ident.to_string(),
        syn::Item::Struct(i) => i.ident.to_string(),
        syn::Item::Enum(i) => i.ident.to_string(),
        syn::Item::Trait(i) => format!("trait {}", i.ident),
        syn::Item::Mod(i) => format!("mod {}", i.ident),
        syn::Item::Macro(syn::ItemMacro {
            ident: Some(ident), ..
        }) => format!("{ident}!"),
        syn::Item::Impl(i) => {
            let ty = &i.self_ty;
            format!("impl {}", quote::quote!(#ty))
        }
        _ => "item".to_owned(),
    }
}

/// The first segments of the paths `text` writes (`a` of `a::b`, in `use`
/// declarations, types, expressions and macro arguments alike): the crates
/// it may name.
fn crate_roots(text: &str) -> std::collections::BTreeSet<String> {
    fn walk(tokens: proc_macro2::TokenStream, roots: &mut std::collections::BTreeSet<String>) {
        let tokens: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
        for (index, token) in tokens.iter().enumerate() {
            match token {
                proc_macro2::TokenTree::Group(group) => walk(group.stream(), roots),
                proc_macro2::TokenTree::Ident(ident) => {
                    let path_follows = matches!(
                        (tokens.get(index + 1), tokens.get(index + 2)),
                        (Some(proc_macro2::TokenTree::Punct(a)), Some(proc_macro2::TokenTree::Punct(b)))
                            if a.as_char() == ':' && b.as_char() == ':' && a.spacing() == proc_macro2::Spacing::Joint
                    );
                    // `a::b`, not `x::a::b`.
                    let continues = index >= 1
                        && matches!(&tokens[index - 1], proc_macro2::TokenTree::Punct(p) if p.as_char() == ':');
                    if path_follows && !continues {
                        roots.insert(ident.to_string());
                    }
                }
                _ => {}
            }
        }
    }
    let mut roots = std::collections::BTreeSet::new();
    if let Ok(tokens) = text.parse::<proc_macro2::TokenStream>() {
        walk(tokens, &mut roots);
    }
    roots
}
