//! The names the copied function uses, and where the snippet takes them
//! from: items of the function's own module are imported from the
//! production crate (so the copy calls the production helpers), the
//! module's own `use` declarations are carried over with `crate::`,
//! `self::` and `super::` made absolute, and what production does not
//! export is listed as something to resolve.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{TokenStream, TokenTree};
use syn::spanned::Spanned;
use syn::visit::{self, Visit};

use super::select::{type_name, Function};
use super::source::{ModuleLocation, SourceFile};

/// Something the copy needs that the snippet cannot reach as generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved {
    /// `fit`, `self.grid`, `rand::Rng`.
    pub name: String,
    /// Why it cannot be reached, and where it is defined.
    pub reason: String,
}

/// The `use` declarations of the snippet, and what they cannot provide.
#[derive(Debug, Default)]
pub(crate) struct Imports {
    /// Paths to import, each `a::b::c`, `a::b::c as d` or `a::b::*`.
    pub paths: Vec<ImportPath>,
    pub unresolved: Vec<Unresolved>,
    /// Imports of the production module the copy does not name, left out,
    /// that could be traits whose methods it calls.
    pub left_out: Vec<String>,
    /// Imports of the production module the copy does not name, kept
    /// because they may be traits whose methods it calls.
    pub kept_for_traits: Vec<String>,
    /// The items of the production module the copy calls or names.
    pub module_items: Vec<String>,
    /// Private items of the production module the copy needs (and those
    /// they need, transitively): copied beside it, in source order, as
    /// indices into the module's items.
    pub helpers: Vec<usize>,
    /// Modules declared at the crate root without `pub` (`mod utils;`)
    /// the copy uses: copied whole into the snippet, under the same name.
    pub private_modules: Vec<String>,
    /// Items of other modules of the crate that the snippet cannot name
    /// (private, `pub(crate)`, or in a private module), each as its
    /// module's path below the crate root and its name: copied beside the
    /// copy ([`crate::foreign`]).
    pub foreign_requests: Vec<Request>,
    /// What those requests copied: the items of other modules, and the
    /// methods the snippet cannot call on the crate's types.
    pub foreign: Foreign,
    /// Public types of the crate copied because the copied code reads
    /// their private fields, with those fields: the snippet works on its
    /// own copy of each.
    pub local_types: Vec<(String, Vec<String>)>,
}

/// One imported path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ImportPath {
    pub parent: Vec<String>,
    /// The last segment, `*` for a glob.
    pub name: String,
    pub rename: Option<String>,
}

impl ImportPath {
    fn binding(&self) -> &str {
        self.rename.as_deref().unwrap_or(&self.name)
    }

    pub(crate) fn display(&self) -> String {
        let mut text = self.parent.join("::");
        if !text.is_empty() {
            text.push_str("::");
        }
        text.push_str(&self.name);
        if let Some(rename) = &self.rename {
            text.push_str(" as ");
            text.push_str(rename);
        }
        text
    }
}

/// What the function's text refers to, gathered from its syntax tree and
/// from the tokens of the macros it calls (which syn leaves unparsed).
#[derive(Default)]
pub(crate) struct Uses {
    /// First segments of paths with two or more segments (`Foo::new`).
    qualified: BTreeSet<String>,
    /// Paths of one segment (`decode`, `Detection`, `x`).
    single: BTreeSet<String>,
    /// Names bound by patterns: parameters, `let`, closures, `match` arms.
    locals: BTreeSet<String>,
    /// Identifiers inside macro calls, and `{name}` captures in their strings.
    in_macros: BTreeSet<String>,
    /// `self.<field>` reads, with their lines.
    self_fields: Vec<(String, proc_macro2::Span)>,
    /// `self.<method>(...)` calls and `Self::<item>` paths.
    self_items: Vec<(String, proc_macro2::Span)>,
}

impl<'ast> Visit<'ast> for Uses {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            if let Some(first) = path.segments.first() {
                let name = first.ident.to_string();
                if path.segments.len() == 1 {
                    self.single.insert(name);
                } else {
                    if name == "Self" {
                        let second = &path.segments[1];
                        self.self_items
                            .push((second.ident.to_string(), second.ident.span()));
                    }
                    self.qualified.insert(name);
                }
            }
        }
        visit::visit_path(self, path);
    }

    fn visit_pat_ident(&mut self, pat: &'ast syn::PatIdent) {
        self.locals.insert(pat.ident.to_string());
        visit::visit_pat_ident(self, pat);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        scan_tokens(mac.tokens.clone(), &mut self.in_macros);
        visit::visit_macro(self, mac);
    }

    fn visit_expr_field(&mut self, expr: &'ast syn::ExprField) {
        if is_self(&expr.base) {
            if let syn::Member::Named(field) = &expr.member {
                self.self_fields.push((field.to_string(), field.span()));
            }
        }
        visit::visit_expr_field(self, expr);
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        if is_self(&call.receiver) {
            self.self_items
                .push((call.method.to_string(), call.method.span()));
        }
        visit::visit_expr_method_call(self, call);
    }
}

impl Uses {
    /// The names used that are not bound locally: first segments of
    /// qualified paths, then single names, then names in macros.
    pub(crate) fn free_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.qualified.iter().cloned().collect();
        names.extend(self.single.difference(&self.locals).cloned());
        names.extend(self.in_macros.difference(&self.locals).cloned());
        names
    }
}

fn is_self(expr: &syn::Expr) -> bool {
    matches!(expr, syn::Expr::Path(path) if path.path.is_ident("self"))
}

/// Every identifier in `tokens`, and the `{name}` or `{name:...}` captures
/// of their string literals (format strings).
fn scan_tokens(tokens: TokenStream, out: &mut BTreeSet<String>) {
    for token in tokens {
        match token {
            TokenTree::Ident(ident) => {
                out.insert(ident.to_string());
            }
            TokenTree::Group(group) => scan_tokens(group.stream(), out),
            TokenTree::Literal(literal) => format_captures(&literal.to_string(), out),
            TokenTree::Punct(_) => {}
        }
    }
}

fn format_captures(literal: &str, out: &mut BTreeSet<String>) {
    if !literal.ends_with('"') {
        return;
    }
    let mut rest = literal;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        if let Some(escaped) = rest.strip_prefix('{') {
            rest = escaped;
            continue;
        }
        let end = rest.find(['}', ':']).unwrap_or(rest.len());
        let name = rest[..end].trim();
        let mut chars = name.chars();
        if chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
            && chars.all(|c| c.is_alphanumeric() || c == '_')
        {
            out.insert(name.to_owned());
        }
    }
}

/// An item defined in the function's module.
struct ModuleItem {
    kind: &'static str,
    public: bool,
    line: usize,
    /// `#[macro_export]` macros live at the crate root.
    exported_macro: bool,
}

fn module_items(source: &SourceFile, scope: &[syn::Item]) -> BTreeMap<String, ModuleItem> {
    let mut items = BTreeMap::new();
    for item in scope {
        let (ident, kind, vis) = match item {
            syn::Item::Fn(i) => (&i.sig.ident, "fn", &i.vis),
            syn::Item::Struct(i) => (&i.ident, "struct", &i.vis),
            syn::Item::Enum(i) => (&i.ident, "enum", &i.vis),
            syn::Item::Union(i) => (&i.ident, "union", &i.vis),
            syn::Item::Const(i) => (&i.ident, "const", &i.vis),
            syn::Item::Static(i) => (&i.ident, "static", &i.vis),
            syn::Item::Type(i) => (&i.ident, "type", &i.vis),
            syn::Item::Trait(i) => (&i.ident, "trait", &i.vis),
            syn::Item::Mod(i) => (&i.ident, "mod", &i.vis),
            syn::Item::Macro(i) => {
                if let Some(ident) = &i.ident {
                    let exported = i.attrs.iter().any(|a| a.path().is_ident("macro_export"));
                    items.insert(
                        ident.to_string(),
                        ModuleItem {
                            kind: "macro",
                            public: exported,
                            line: source.lines(i.span()).0,
                            exported_macro: exported,
                        },
                    );
                }
                continue;
            }
            _ => continue,
        };
        items.insert(
            ident.to_string(),
            ModuleItem {
                kind,
                public: matches!(vis, syn::Visibility::Public(_)),
                line: source.lines(item.span()).0,
                exported_macro: false,
            },
        );
    }
    items
}

/// The module's `use` declarations, flattened and made absolute.
fn module_imports(
    scope: &[syn::Item],
    location: &ModuleLocation,
    inline: &[String],
    items: &BTreeMap<String, ModuleItem>,
) -> Vec<ImportPath> {
    let mut out = Vec::new();
    for item in scope {
        if let syn::Item::Use(item_use) = item {
            let prefix = if item_use.leading_colon.is_some() {
                vec![String::new()]
            } else {
                Vec::new()
            };
            let mut leaves = Vec::new();
            super::source::use_leaves(&item_use.tree, prefix, &mut leaves);
            out.extend(leaves.into_iter().map(|(parent, name, rename)| ImportPath {
                parent,
                name,
                rename,
            }));
        }
    }
    let here: Vec<String> = location
        .path(inline)
        .split("::")
        .map(str::to_owned)
        .collect();
    for import in &mut out {
        let mut full = import.parent.clone();
        full.push(import.name.clone());
        let mut absolute = absolutize(&full, &here, items);
        // `alloc` (of a `no_std` crate with `extern crate alloc`) is not in
        // a snippet's scope; `std` re-exports all of it.
        if absolute.first().is_some_and(|root| root == "alloc") {
            absolute[0] = "std".to_owned();
        }
        import.name = absolute.last().cloned().unwrap_or_default();
        import.parent = absolute[..absolute.len().saturating_sub(1)].to_vec();
        if import.name == "self" {
            if let Some(last) = import.parent.pop() {
                import.name = last;
            }
        }
    }
    out
}

/// A path as the production module writes it, made absolute from `here`
/// (the module's absolute path): `crate`, `self`, `super` and names of
/// the module's own items become paths from the crate's name.
fn absolutize(
    path: &[String],
    here: &[String],
    items: &BTreeMap<String, ModuleItem>,
) -> Vec<String> {
    let Some(first) = path.first() else {
        return Vec::new();
    };
    match first.as_str() {
        "" => path[1..].to_vec(),
        "crate" => here[..1].iter().chain(&path[1..]).cloned().collect(),
        "self" => here.iter().chain(&path[1..]).cloned().collect(),
        "super" => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let keep = here.len().saturating_sub(ups).max(1);
            here[..keep].iter().chain(&path[ups..]).cloned().collect()
        }
        name if items.contains_key(name) => here.iter().chain(path).cloned().collect(),
        _ => path.to_vec(),
    }
}

/// Traits of `std` outside its prelude whose methods code calls without
/// naming them: imports of these are kept; other `std` names the copy does
/// not use are not traits.
const STD_TRAITS: &[&str] = &[
    "Add",
    "AddAssign",
    "AsMut",
    "AsRef",
    "Borrow",
    "BorrowMut",
    "BufRead",
    "Deref",
    "DerefMut",
    "Display",
    "Debug",
    "Div",
    "DivAssign",
    "Error",
    "FromStr",
    "Hash",
    "Hasher",
    "Index",
    "IndexMut",
    "Mul",
    "MulAssign",
    "Neg",
    "Not",
    "Read",
    "Rem",
    "Seek",
    "Sub",
    "SubAssign",
    "Sum",
    "Product",
    "Write",
    "FromIterator",
    "Extend",
    "BitAnd",
    "BitOr",
    "BitXor",
    "Shl",
    "Shr",
    "Step",
    "TryFrom",
    "TryInto",
];

/// Crates a snippet can always name.
const BUILT_IN_CRATES: &[&str] = &["std", "core", "alloc"];

/// Names that are not items to import: `Self`, `self`, `crate`, `super`.
pub(crate) const PATH_KEYWORDS: [&str; 4] = ["Self", "self", "crate", "super"];

/// Works out the snippet's imports for `function`.
///
/// `dependencies` are the crates the snippets crate depends on, as code
/// names them; `generated` are names the snippet itself defines.
pub(crate) fn imports(
    source: &SourceFile,
    function: &Function<'_>,
    location: &ModuleLocation,
    dependencies: &[String],
    snippets_package: &str,
) -> Imports {
    let mut uses = Uses::default();
    for attr in function.attrs {
        uses.visit_attribute(attr);
    }
    uses.visit_signature(function.sig);
    uses.visit_block(function.block);
    let crates = SnippetCrates {
        dependencies,
        snippets_package,
    };
    // Public types of the crate whose private fields the copied code reads
    // are copied too: resolved again until no new one turns up.
    let mut force: BTreeSet<String> = BTreeSet::new();
    let mut read_fields: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut rounds = 0;
    let (mut result, mut chosen) = loop {
        let mut resolver = Resolver::new(
            source,
            function.scope,
            &function.inline_modules,
            location,
            crates,
        );
        resolver.force = force.clone();
        resolver.resolve(used_names(function, &uses));
        resolver.keep_unnamed_imports();
        let Resolver { result, chosen, .. } = resolver;
        let mut fields = FieldsRead::default();
        fields.visit_signature(function.sig);
        fields.visit_block(function.block);
        for &index in &result.helpers {
            fields.visit_item(&function.scope[index]);
        }
        let mut found = private_fields_read(location, &chosen, &fields.0);
        // A method's own type stays production's: the copy is a method of
        // it (its private fields are listed unresolved).
        if let Some(owner) = function.owner_name() {
            found.remove(&owner);
        }
        let new: Vec<String> = found
            .keys()
            .filter(|name| !force.contains(*name))
            .cloned()
            .collect();
        read_fields.extend(found);
        rounds += 1;
        if new.is_empty() || rounds > 4 {
            break (result, chosen);
        }
        force.extend(new);
    };
    result.local_types = read_fields
        .into_iter()
        .filter(|(name, _)| force.contains(name))
        .collect();
    // What the copy and its helpers call, for the methods of the crate's
    // types they may need copied.
    let mut called = Called::default();
    called.visit_signature(function.sig);
    called.visit_block(function.block);
    for &index in &result.helpers {
        called.visit_item(&function.scope[index]);
    }
    reach(&mut result, &mut chosen, location, crates, called.0, &force);
    // What was copied from the copy's own file through another way in
    // (a method given back that calls a private helper of the file) is
    // one of its helpers: copied once.
    if function.inline_modules.is_empty() {
        for module in &mut result.foreign.modules {
            if module.modules == location.modules {
                result.helpers.extend(std::mem::take(&mut module.helpers));
            }
        }
        result.helpers.sort_unstable();
        result.helpers.dedup();
    }
    // A method's private siblings copied into a trait are reached.
    let given_back = function
        .owner_name()
        .map(|owner| (result.foreign.methods_of(&owner), owner));
    result.unresolved.extend(
        private_members(source, function, &uses)
            .into_iter()
            .filter(|u| {
                !given_back.as_ref().is_some_and(|(methods, owner)| {
                    u.name
                        .strip_prefix(owner.as_str())
                        .and_then(|rest| rest.strip_prefix("::"))
                        .is_some_and(|m| methods.contains(m))
                })
            }),
    );
    result.helpers.sort_unstable();
    // The copy itself is not its own helper (a recursive call).
    if function.owner.is_none() {
        result.helpers.retain(|&index| {
            !matches!(&function.scope[index], syn::Item::Fn(f) if f.sig.ident == function.name())
        });
    }
    result.paths = chosen.into_iter().collect();
    result
}

/// The names the copy uses that the snippet may have to import: those not
/// bound locally, with a method's type and without the copy's own name.
fn used_names(function: &Function<'_>, uses: &Uses) -> BTreeSet<String> {
    let mut used: BTreeSet<String> = uses.free_names().into_iter().collect();
    for keyword in PATH_KEYWORDS {
        used.remove(keyword);
    }
    match function.owner_name() {
        // The target names the method's type even when the body does not.
        Some(owner) => {
            used.insert(owner);
        }
        // The copy is defined in the snippet under its own name.
        None => {
            used.remove(&function.name());
        }
    }
    used
}

/// The names of the fields code reads or writes: `x.field`, `T { field }`
/// and the same in patterns.
#[derive(Default)]
pub(crate) struct FieldsRead(pub BTreeSet<String>);

impl<'ast> Visit<'ast> for FieldsRead {
    fn visit_expr_field(&mut self, expr: &'ast syn::ExprField) {
        if let syn::Member::Named(field) = &expr.member {
            self.0.insert(field.to_string());
        }
        visit::visit_expr_field(self, expr);
    }

    fn visit_field_value(&mut self, field: &'ast syn::FieldValue) {
        if let syn::Member::Named(name) = &field.member {
            self.0.insert(name.to_string());
        }
        visit::visit_field_value(self, field);
    }

    fn visit_field_pat(&mut self, field: &'ast syn::FieldPat) {
        if let syn::Member::Named(name) = &field.member {
            self.0.insert(name.to_string());
        }
        visit::visit_field_pat(self, field);
    }
}

/// The public structs of the crate the snippet imports (`chosen`) whose
/// private fields are among `read`: each with those fields.
fn private_fields_read(
    location: &ModuleLocation,
    chosen: &BTreeSet<ImportPath>,
    read: &BTreeSet<String>,
) -> BTreeMap<String, Vec<String>> {
    let mut found = BTreeMap::new();
    let Some(crate_ident) = location.crate_ident.as_deref() else {
        return found;
    };
    for import in chosen {
        if import.parent.first().map(String::as_str) != Some(crate_ident) || import.name == "*" {
            continue;
        }
        let Some(file) = location.module_file(&import.parent[1..]) else {
            continue;
        };
        let Ok(parsed) = location.files.needed(&file) else {
            continue;
        };
        for item in &parsed.syntax.items {
            let syn::Item::Struct(definition) = item else {
                continue;
            };
            if definition.ident != import.name.as_str() {
                continue;
            }
            let private: Vec<String> = definition
                .fields
                .iter()
                .filter(|f| !matches!(f.vis, syn::Visibility::Public(_)))
                .filter_map(|f| f.ident.as_ref().map(ToString::to_string))
                .filter(|name| read.contains(name))
                .collect();
            if !private.is_empty() {
                found.insert(import.name.clone(), private);
            }
        }
    }
    found
}

/// The crates the snippet can name.
#[derive(Clone, Copy)]
pub(crate) struct SnippetCrates<'a> {
    /// The snippets crate's dependencies, as code names them.
    dependencies: &'a [String],
    snippets_package: &'a str,
}

impl SnippetCrates<'_> {
    /// Whether the snippet can name crate `name`.
    fn is_dependency(&self, name: &str) -> bool {
        BUILT_IN_CRATES.contains(&name) || self.dependencies.iter().any(|d| d == name)
    }

    /// Why the snippet cannot name crate `name`, and what to do about it.
    fn not_dependency(&self, name: &str) -> String {
        format!(
            "crate `{name}` is a dependency neither of `{}` nor of the crate the copy comes from: add it to the snippet's own Cargo.toml (beside target.rs)",
            self.snippets_package
        )
    }
}

/// Where each name the copy uses comes from: what the function's module
/// provides, and the imports chosen so far.
pub(crate) struct Resolver<'a> {
    source: &'a SourceFile,
    /// The items of the module resolved in.
    scope: &'a [syn::Item],
    /// Inline modules between the file's module and `scope`.
    inline: &'a [String],
    location: &'a ModuleLocation,
    crates: SnippetCrates<'a>,
    /// The items defined in the function's module.
    items: BTreeMap<String, ModuleItem>,
    /// The module's `use` declarations, made absolute.
    carried: Vec<ImportPath>,
    /// The module's absolute path, from the crate's name.
    module_path: Vec<String>,
    /// Why the module's items cannot be named from the snippet, if they
    /// cannot.
    pub(crate) blocked: Option<String>,
    /// Why nothing of the crate can be named, if nothing can: what blocks
    /// imports of its other modules, which the source module's privacy
    /// does not.
    crate_blocked: Option<String>,
    /// Whether the module's public items are copied too: for a module of
    /// the crate the snippet cannot reach, whose items are copied from.
    pub(crate) copy_public: bool,
    /// Public types copied all the same: the copied code reads their
    /// private fields.
    pub(crate) force: BTreeSet<String>,
    pub(crate) result: Imports,
    /// The paths to import.
    pub(crate) chosen: BTreeSet<ImportPath>,
}

impl<'a> Resolver<'a> {
    /// Reads the function's module: its items, its imports, and what keeps
    /// the snippet from naming them.
    pub(crate) fn new(
        source: &'a SourceFile,
        scope: &'a [syn::Item],
        inline: &'a [String],
        location: &'a ModuleLocation,
        crates: SnippetCrates<'a>,
    ) -> Resolver<'a> {
        let items = module_items(source, scope);
        let carried = module_imports(scope, location, inline, &items);
        let module_path: Vec<String> = location
            .path(inline)
            .split("::")
            .map(str::to_owned)
            .collect();
        let blocked: Option<String> = match (&location.crate_ident, &location.unreachable) {
            (_, Some(why)) => Some(format!("{} is not reachable: {why}", source.display)),
            (Some(name), None) if !crates.is_dependency(name) => Some(crates.not_dependency(name)),
            (None, None) => Some(format!("{} is not part of a library", source.display)),
            _ => None,
        };
        let crate_blocked: Option<String> = match &location.crate_ident {
            Some(name) if !crates.is_dependency(name) => Some(crates.not_dependency(name)),
            Some(_) => None,
            None => Some(format!("{} is not part of a library", source.display)),
        };
        Resolver {
            source,
            scope,
            inline,
            location,
            crates,
            items,
            carried,
            module_path,
            blocked,
            crate_blocked,
            copy_public: false,
            force: BTreeSet::new(),
            result: Imports::default(),
            chosen: BTreeSet::new(),
        }
    }

    /// Whether `root` is the crate the function comes from.
    fn is_source_crate(&self, root: &str) -> bool {
        self.location.crate_ident.as_deref() == Some(root)
    }

    /// Resolves each of the names `used`, and then those of the private
    /// helpers they bring beside the copy.
    pub(crate) fn resolve(&mut self, used: BTreeSet<String>) {
        // Names still to look at: the copy's, then those of the private
        // helpers copied beside it.
        let mut pending: Vec<String> = used.into_iter().rev().collect();
        let mut looked_at: BTreeSet<String> = BTreeSet::new();
        while let Some(name) = pending.pop() {
            if !looked_at.insert(name.clone()) {
                continue;
            }
            if self.items.contains_key(&name) {
                pending.extend(self.module_item(&name));
            } else if let Some(import) = self.carried.iter().find(|i| i.binding() == name) {
                let import = import.clone();
                self.carried_import(&import);
            }
        }
    }

    /// Resolves `name`, an item of the function's module: copied beside the
    /// copy when private and copyable, else imported from production or
    /// listed as unresolved. Returns the names the copied items use.
    fn module_item(&mut self, name: &str) -> Vec<String> {
        let item = &self.items[name];
        // A `pub` item of a module the snippet cannot reach that the crate
        // re-exports (`pub use m::{f, T};` at its root): production's, by
        // that path, so that the copy calls production's and its values
        // are production's types.
        if item.public && self.blocked.is_some() && !self.force.contains(name) {
            let mut path = self.module_path[1..].to_vec();
            path.push(name.to_owned());
            if let Some(import) = self.public_import(&path, None) {
                self.result.module_items.push(name.to_owned());
                self.chosen.insert(import);
                return Vec::new();
            }
        }
        let helper = (!item.public || self.copy_public || self.force.contains(name))
            .then(|| helper_items(self.scope, name))
            .filter(|found| !found.is_empty());
        if let Some(found) = helper {
            return self.add_helpers(found);
        }
        let place = format!(
            "{} {name}, {}:{}",
            item.kind, self.source.display, item.line
        );
        if let Some(why) = &self.blocked {
            self.result.unresolved.push(Unresolved {
                name: name.to_owned(),
                reason: format!("{place}: {why}"),
            });
        } else if !item.public {
            self.result.unresolved.push(Unresolved {
                name: name.to_owned(),
                reason: if item.kind == "macro" {
                    format!("{place}: not `#[macro_export]`ed, so other crates cannot use it")
                } else {
                    format!("{place}: private to `{}`", self.module_path.join("::"))
                },
            });
        } else {
            let parent = if item.exported_macro {
                self.module_path[..1].to_vec()
            } else {
                self.module_path.clone()
            };
            self.result.module_items.push(name.to_owned());
            self.chosen.insert(ImportPath {
                parent,
                name: name.to_owned(),
                rename: None,
            });
        }
        Vec::new()
    }

    /// Adds the module items `found` (indices) to the helpers copied beside
    /// the copy; returns the names the newly added ones use.
    fn add_helpers(&mut self, found: Vec<usize>) -> Vec<String> {
        let mut names = Vec::new();
        for index in found {
            if !self.result.helpers.contains(&index) {
                self.result.helpers.push(index);
                let mut inner = Uses::default();
                inner.visit_item(&self.scope[index]);
                names.extend(
                    inner
                        .free_names()
                        .into_iter()
                        .filter(|n| !PATH_KEYWORDS.contains(&n.as_str())),
                );
            }
        }
        names
    }

    /// Resolves a name one of the module's `use` declarations, `import`,
    /// binds: carried over, unless it names a private module at the crate
    /// root, which is copied instead.
    fn carried_import(&mut self, import: &ImportPath) {
        if let Some(root) = import.parent.first() {
            if self.is_source_crate(root) && self.force.contains(import.binding()) {
                let mut path = import.parent[1..].to_vec();
                path.push(import.name.clone());
                let why = "the copied code reads its private fields".to_owned();
                if self.request_copy(&path, import, &why) {
                    return;
                }
            }
            if self.is_source_crate(root) {
                if self.copied_as_private_module(import) {
                    return;
                }
            } else if !self.crates.is_dependency(root) {
                self.result.unresolved.push(Unresolved {
                    name: import.display(),
                    reason: self.crates.not_dependency(root),
                });
            }
        }
        self.chosen.insert(import.clone());
    }

    /// For an import from the function's own crate: whether it names a
    /// private module at the crate root (`use crate::utils;` or an item of
    /// it), which is then copied whole under its own name, so the import
    /// becomes one of the snippet's own; else lists it as unresolved when
    /// the snippet cannot reach it.
    fn copied_as_private_module(&mut self, import: &ImportPath) -> bool {
        let mut path = import.parent[1..].to_vec();
        path.push(import.name.clone());
        let why = self
            .crate_blocked
            .clone()
            .or_else(|| self.location.unreachable_item(&path));
        // Named where the crate re-exports it, rather than copied.
        if why.is_some() {
            if let Some(public) = self.public_import(&path, Some(import.binding())) {
                self.chosen.insert(public);
                return true;
            }
        }
        let module = path
            .first()
            .filter(|_| why.is_some() && self.crate_blocked.is_none());
        if let Some(module) = module.filter(|m| self.location.private_root_module(m).is_some()) {
            if !self.result.private_modules.contains(module) {
                self.result.private_modules.push(module.clone());
            }
            if path.len() > 1 {
                let mut parent = vec!["crate".to_owned()];
                parent.extend(path[..path.len() - 1].iter().cloned());
                self.chosen.insert(ImportPath {
                    parent,
                    name: import.name.clone(),
                    rename: import.rename.clone(),
                });
            }
            return true;
        }
        if let Some(why) = why {
            if self.crate_blocked.is_none() && self.request_copy(&path, import, &why) {
                return true;
            }
            self.result.unresolved.push(Unresolved {
                name: import.display(),
                reason: why,
            });
        }
        false
    }

    /// The import of `path` (an item of the crate: its modules below the
    /// root, then its name) through the path the crate re-exports it by,
    /// bound to `binding` (the item's own name when `None`); `None` when
    /// the crate cannot be named or does not export the item.
    fn public_import(&self, path: &[String], binding: Option<&str>) -> Option<ImportPath> {
        if self.crate_blocked.is_some() {
            return None;
        }
        let crate_ident = self.location.crate_ident.clone()?;
        let public = self.location.public_path(path)?;
        let (name, modules) = public.split_last()?;
        let binding = binding.unwrap_or(path.last()?);
        Some(ImportPath {
            parent: std::iter::once(crate_ident)
                .chain(modules.iter().cloned())
                .collect(),
            name: name.clone(),
            rename: (name != binding).then(|| binding.to_owned()),
        })
    }

    /// For an import of an item of another module of the crate that the
    /// snippet cannot name (`path`: its modules below the crate root, then
    /// its name): asks for the item to be copied beside the copy, when it
    /// is one that can be, so the name is the snippet's own. A renamed
    /// import (`use crate::m::f as g;`) then names the copy.
    fn request_copy(&mut self, path: &[String], import: &ImportPath, why: &str) -> bool {
        const COPIED: [&str; 7] = ["fn", "struct", "enum", "const", "static", "type", "trait"];
        let Some((name, modules)) = path.split_last() else {
            return false;
        };
        let copyable = self
            .location
            .find_item(path)
            .is_some_and(|(kind, _)| COPIED.contains(&kind));
        if !copyable || modules == &self.module_path[1..] {
            return false;
        }
        let request = Request {
            modules: modules.to_vec(),
            name: name.clone(),
            import: import.display(),
            reason: why.to_owned(),
        };
        if !self.result.foreign_requests.contains(&request) {
            self.result.foreign_requests.push(request);
        }
        if let Some(rename) = &import.rename {
            self.chosen.insert(ImportPath {
                parent: vec!["self".to_owned()],
                name: name.clone(),
                rename: Some(rename.clone()),
            });
        }
        true
    }

    /// Looks at the module's imports the copy does not name: globs and
    /// possible traits are kept where the snippet can reach them, the rest
    /// left out.
    pub(crate) fn keep_unnamed_imports(&mut self) {
        let reexported = self.reexports();
        for import in &self.carried {
            if self.is_unreachable_glob(import) {
                // A re-export (`pub use self::m::*`) is reached through
                // this module's path; otherwise it is left out.
                let here_reachable = self.blocked.is_none()
                    && self
                        .location
                        .unreachable_item(&self.module_path[1..])
                        .is_none();
                if reexported.contains(import) && here_reachable {
                    self.chosen.insert(ImportPath {
                        parent: self.module_path.clone(),
                        name: "*".to_owned(),
                        rename: None,
                    });
                } else {
                    self.result.left_out.push(import.display());
                }
                continue;
            }
            // Globs, and traits imported as `_`, may provide what the copy
            // calls without naming it.
            if import.name == "*" || import.rename.as_deref() == Some("_") {
                self.chosen.insert(import.clone());
            } else if !self.chosen.contains(import)
                && !self.chosen.iter().any(|c| c.binding() == import.binding())
                && could_be_trait(import, self.location)
            {
                // Kept where the snippet can name it: a trait brings the
                // methods the copy calls without being named, and a missing
                // one does not build, where an unused one is only a warning.
                if self.trait_is_reachable(import) {
                    self.chosen.insert(import.clone());
                    self.result.kept_for_traits.push(import.display());
                } else {
                    self.result.left_out.push(import.display());
                }
            }
        }
    }

    /// The module's `pub use` declarations: re-exports, which the module's
    /// own path reaches.
    fn reexports(&self) -> Vec<ImportPath> {
        let public_uses: Vec<syn::Item> = self
            .scope
            .iter()
            .filter(
                |item| matches!(item, syn::Item::Use(u) if matches!(u.vis, syn::Visibility::Public(_))),
            )
            .cloned()
            .collect();
        module_imports(&public_uses, self.location, self.inline, &self.items)
    }

    /// Whether `import` is a glob of a module of this crate the snippet
    /// cannot reach.
    fn is_unreachable_glob(&self, import: &ImportPath) -> bool {
        import.name == "*"
            && self.location.crate_ident.as_deref() == import.parent.first().map(String::as_str)
            && (self.blocked.is_some()
                || self
                    .location
                    .unreachable_item(&import.parent[1..])
                    .is_some())
    }

    /// Whether the snippet can name `import`, a possible trait: an item of
    /// this crate it can reach, a trait of `std` outside the prelude, or an
    /// item of a crate it depends on.
    fn trait_is_reachable(&self, import: &ImportPath) -> bool {
        match import.parent.split_first() {
            Some((root, modules)) if self.is_source_crate(root) => {
                let mut path = modules.to_vec();
                path.push(import.name.clone());
                self.crate_blocked.is_none() && self.location.unreachable_item(&path).is_none()
            }
            Some((root, _)) if BUILT_IN_CRATES.contains(&root.as_str()) => {
                STD_TRAITS.contains(&import.name.as_str())
            }
            Some((root, _)) => self.crates.is_dependency(root),
            None => false,
        }
    }
}

/// The module items a private `name` brings when copied: a function,
/// constant, static or type alias of that name; a struct or enum with the
/// impl blocks of the module for it; a trait with the module's impls of it. Empty for what is not copied (a
/// module, a macro).
fn helper_items(scope: &[syn::Item], name: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut is_type = false;
    let mut is_trait = false;
    for (index, item) in scope.iter().enumerate() {
        let matches = match item {
            syn::Item::Fn(i) => i.sig.ident == name,
            syn::Item::Const(i) => i.ident == name,
            syn::Item::Static(i) => i.ident == name,
            syn::Item::Type(i) => i.ident == name,
            syn::Item::Struct(i) if i.ident == name => {
                is_type = true;
                true
            }
            syn::Item::Enum(i) if i.ident == name => {
                is_type = true;
                true
            }
            syn::Item::Trait(i) if i.ident == name => {
                is_trait = true;
                true
            }
            // An inline module (`mod methods { ... }`), copied whole.
            syn::Item::Mod(i) => i.ident == name && i.content.is_some(),
            // A `macro_rules!` macro that is not exported.
            syn::Item::Macro(i) => i.ident.as_ref().is_some_and(|ident| ident == name),
            _ => false,
        };
        if matches {
            found.push(index);
        }
    }
    for (index, item) in scope.iter().enumerate() {
        if let syn::Item::Impl(imp) = item {
            let for_type = is_type && type_name(&imp.self_ty).as_deref() == Some(name);
            let of_trait = is_trait
                && imp
                    .trait_
                    .as_ref()
                    .and_then(|(_, path, _)| path.segments.last())
                    .is_some_and(|segment| segment.ident == name);
            if (for_type || of_trait) && !found.contains(&index) {
                found.push(index);
            }
        }
    }
    found
}

/// Whether an import the copy does not name may still be needed: a trait
/// brings methods into scope without being named. Only CamelCase names can
/// be traits, and an item of the production crate is looked up.
fn could_be_trait(import: &ImportPath, location: &ModuleLocation) -> bool {
    let name = import.binding();
    let camel =
        name.starts_with(|c: char| c.is_uppercase()) && name.chars().any(char::is_lowercase);
    if !camel {
        return false;
    }
    match import.parent.split_first() {
        Some((root, modules)) if location.crate_ident.as_deref() == Some(root.as_str()) => {
            let mut path = modules.to_vec();
            path.push(import.name.clone());
            location
                .find_item(&path)
                .is_none_or(|(kind, _)| kind == "trait")
        }
        _ => true,
    }
}

/// For a method: the private fields and methods of its own type that it
/// uses through `self` or `Self`, which the snippet, in another crate,
/// cannot reach.
fn private_members(source: &SourceFile, function: &Function<'_>, uses: &Uses) -> Vec<Unresolved> {
    let Some(owner) = function.owner_name() else {
        return Vec::new();
    };
    let mut private_fields = BTreeMap::new();
    let mut private_items = BTreeMap::new();
    for item in function.scope {
        match item {
            syn::Item::Struct(definition) if definition.ident == owner.as_str() => {
                for field in &definition.fields {
                    if let (Some(ident), false) = (
                        &field.ident,
                        matches!(field.vis, syn::Visibility::Public(_)),
                    ) {
                        private_fields.insert(ident.to_string(), source.lines(field.span()).0);
                    }
                }
            }
            syn::Item::Impl(imp)
                if imp.trait_.is_none() && type_name(&imp.self_ty).as_deref() == Some(&owner) =>
            {
                for impl_item in &imp.items {
                    let (ident, vis) = match impl_item {
                        syn::ImplItem::Fn(f) => (&f.sig.ident, &f.vis),
                        syn::ImplItem::Const(c) => (&c.ident, &c.vis),
                        _ => continue,
                    };
                    if !matches!(vis, syn::Visibility::Public(_)) {
                        private_items.insert(ident.to_string(), source.lines(impl_item.span()).0);
                    }
                }
            }
            _ => {}
        }
    }
    let mut found = BTreeMap::new();
    for (name, _) in &uses.self_fields {
        if let Some(line) = private_fields.get(name) {
            found.entry(format!("self.{name}")).or_insert(format!(
                "private field of `{owner}` ({}:{line})",
                source.display
            ));
        }
    }
    for (name, _) in &uses.self_items {
        if let Some(line) = private_items.get(name) {
            found
                .entry(format!("{owner}::{name}"))
                .or_insert(format!("private to `{owner}` ({}:{line})", source.display));
        }
    }
    found
        .into_iter()
        .map(|(name, reason)| Unresolved { name, reason })
        .collect()
}

/// The `use` declarations for `paths`, grouped by parent and laid out as
/// rustfmt lays them out.
pub(crate) fn render_uses(paths: &[ImportPath]) -> Vec<String> {
    let mut groups: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
    for path in paths {
        let leaf = match &path.rename {
            Some(rename) => format!("{} as {rename}", path.name),
            None => path.name.clone(),
        };
        let leaves = groups.entry(path.parent.clone()).or_default();
        if !leaves.contains(&leaf) {
            leaves.push(leaf);
        }
    }
    // A line sorts by its path; a group of names, `{...}`, after every name.
    let key = |parent: &[String], leaves: &[String]| -> Vec<String> {
        let mut key = parent.to_vec();
        key.push(if leaves.len() == 1 {
            leaves[0].clone()
        } else {
            "{".to_owned()
        });
        key
    };
    let mut ordered: Vec<(Vec<String>, Vec<String>)> = groups.into_iter().collect();
    ordered.sort_by(|a, b| compare_segments(&key(&a.0, &a.1), &key(&b.0, &b.1)));
    ordered
        .into_iter()
        .map(|(parent, mut leaves)| {
            leaves.sort_by(|a, b| compare_segment(a, b));
            let prefix = parent.join("::");
            if leaves.len() == 1 {
                return format!("use {prefix}::{};", leaves[0]);
            }
            let one_line = format!("use {prefix}::{{{}}};", leaves.join(", "));
            if one_line.len() <= 100 {
                return one_line;
            }
            let mut text = format!("use {prefix}::{{\n");
            let mut line = String::from("   ");
            for leaf in &leaves {
                if line.len() + 1 + leaf.len() + 1 > 100 {
                    text.push_str(&line);
                    text.push('\n');
                    line = String::from("   ");
                }
                line.push(' ');
                line.push_str(leaf);
                line.push(',');
            }
            text.push_str(&line);
            text.push_str("\n};");
            text
        })
        .collect()
}

fn compare_segments(a: &[String], b: &[String]) -> std::cmp::Ordering {
    for (x, y) in a.iter().zip(b) {
        let order = compare_segment(x, y);
        if order.is_ne() {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

/// rustfmt's order of names in a `use`: `self`, then snake_case, then
/// CamelCase, then SCREAMING_CASE, then globs.
fn compare_segment(a: &str, b: &str) -> std::cmp::Ordering {
    fn rank(name: &str) -> u8 {
        let first = name.chars().next().unwrap_or('a');
        if name == "self" || name.starts_with("self ") {
            0
        } else if name == "*" {
            4
        } else if name == "{" {
            5
        } else if first.is_lowercase() || first == '_' {
            1
        } else if name.chars().any(|c| c.is_lowercase()) {
            2
        } else {
            3
        }
    }
    (rank(a), a).cmp(&(rank(b), b))
}

// What the copy reaches in other modules of its crate.
//
// What the copy reaches in *other* modules of its crate that the snippet,
// another crate, cannot name: private and `pub(crate)` functions, types,
// constants, statics and traits (and the public ones of private modules),
// copied beside the copy with what they need in turn, each resolved in its
// own module; and the private or `pub(crate)` methods of the crate's types
// that the copied code calls (`point.to_i32()`), given back through a
// trait of the snippet's implemented for the production type, so the
// calls build unchanged.
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
    pub source: std::rc::Rc<SourceFile>,
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
    fn module(&mut self, location: &ModuleLocation, modules: &[String]) -> Option<usize> {
        if let Some(found) = self.modules.iter().position(|m| m.modules == modules) {
            return Some(found);
        }
        let file = location.module_file(modules)?;
        let source = location.files.needed(&file).ok()?;
        self.modules.push(ForeignModule {
            modules: modules.to_vec(),
            location: ModuleLocation::of_file(&file, &location.files),
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
            let copied = foreign.module(location, &request.modules).is_some_and(|m| {
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
        let added = private_methods(&mut foreign, location, &crate_ident, chosen, &called);
        for &(m, impl_index, method_index) in &added {
            let module = &foreign.modules[m];
            let syn::Item::Impl(imp) = &module.source.syntax.items[impl_index] else {
                continue;
            };
            let Some(syn::ImplItem::Fn(method)) = imp.items.get(method_index) else {
                continue;
            };
            let mut uses = Uses::default();
            uses.visit_impl_item_fn(method);
            let mut inner = Called::default();
            inner.visit_impl_item_fn(method);
            called.extend(inner.0);
            let names: BTreeSet<String> = uses
                .free_names()
                .into_iter()
                .filter(|n| !PATH_KEYWORDS.contains(&n.as_str()))
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
) -> Vec<(usize, usize, usize)> {
    let types: Vec<(Vec<String>, String)> = chosen
        .iter()
        .filter(|import| import.parent.first().map(String::as_str) == Some(crate_ident))
        .filter(|import| import.name.starts_with(|c: char| c.is_uppercase()))
        .map(|import| (import.parent[1..].to_vec(), import.name.clone()))
        .collect();
    let mut added = Vec::new();
    for (modules, name) in types {
        let Some(m) = foreign.module(location, &modules) else {
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
        // A method that reads the type's private fields cannot be given
        // back (the snippet cannot read them either): left out, so that a
        // name matched by chance does not break the build.
        let private_fields: BTreeSet<String> = items
            .iter()
            .filter_map(|item| match item {
                syn::Item::Struct(s) if s.ident == name => Some(&s.fields),
                _ => None,
            })
            .flat_map(|fields| fields.iter())
            .filter(|f| !matches!(f.vis, syn::Visibility::Public(_)))
            .filter_map(|f| f.ident.as_ref().map(ToString::to_string))
            .collect();
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
                if public || !called.contains(&method.sig.ident.to_string()) {
                    continue;
                }
                let mut read = FieldsRead::default();
                read.visit_impl_item_fn(method);
                if read.0.is_disjoint(&private_fields) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_captures_skip_escapes_and_take_names() {
        let mut out = BTreeSet::new();
        format_captures(r#""{{not}} {BOX_COLUMNS} and {count:>4} {0} {}""#, &mut out);
        assert_eq!(
            out.into_iter().collect::<Vec<_>>(),
            vec!["BOX_COLUMNS", "count"]
        );
    }

    #[test]
    fn absolutize_makes_crate_self_and_super_paths_absolute() {
        let here: Vec<String> = ["lib", "a", "b"].map(String::from).to_vec();
        let items = BTreeMap::new();
        let path = |p: &str| p.split("::").map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            absolutize(&path("crate::x::Y"), &here, &items),
            path("lib::x::Y")
        );
        assert_eq!(
            absolutize(&path("super::Y"), &here, &items),
            path("lib::a::Y")
        );
        assert_eq!(
            absolutize(&path("super::super::Y"), &here, &items),
            path("lib::Y")
        );
        assert_eq!(
            absolutize(&path("self::Y"), &here, &items),
            path("lib::a::b::Y")
        );
        assert_eq!(
            absolutize(&path("ndarray::Array2"), &here, &items),
            path("ndarray::Array2")
        );
    }

    #[test]
    fn uses_are_grouped_sorted_and_wrapped_like_rustfmt() {
        let path = |parent: &str, name: &str| ImportPath {
            parent: parent.split("::").map(str::to_owned).collect(),
            name: name.to_owned(),
            rename: None,
        };
        let lines = render_uses(&[
            path("profiling_examples::postprocess", "MAX_NMS_CANDIDATES"),
            path("profiling_examples::postprocess", "Detection"),
            path("profiling_examples::postprocess", "decode_predictions"),
            path("profiling_examples::postprocess", "keep_top_candidates"),
            path("profiling_examples::postprocess", "non_max_suppression"),
            path("profiling_examples::postprocess", "scale_boxes"),
            path("profiling_examples::postprocess", "PostprocessParams"),
            path("ndarray", "ArrayView2"),
        ]);
        assert_eq!(
            lines,
            vec![
                "use ndarray::ArrayView2;".to_owned(),
                "use profiling_examples::postprocess::{\n    decode_predictions, keep_top_candidates, non_max_suppression, scale_boxes, Detection,\n    PostprocessParams, MAX_NMS_CANDIDATES,\n};".to_owned(),
            ]
        );
    }
}
