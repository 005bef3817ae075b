//! What `--from` selects: the spec (`<file.rs>::<function>`,
//! `<file.rs>::<Type>::<method>` or `<file.rs>:<start>-<end>`) and the
//! function it names in the parsed file.

use std::path::PathBuf;

use syn::spanned::Spanned;

use super::source::SourceFile;
use super::SnippetError;

/// `--from`, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSpec {
    /// The source file, as written.
    pub file: PathBuf,
    pub selector: Selector,
}

/// What to take from the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// `function`, `Type::method`, or either below inline modules
    /// (`tests::helper`).
    Path(Vec<String>),
    /// Lines `start..=end` (from 1): the function holding them.
    Lines { start: usize, end: usize },
}

const SPEC_FORMS: &str =
    "<file.rs>::<function>, <file.rs>::<Type>::<method> or <file.rs>:<start>-<end>";

impl std::str::FromStr for SourceSpec {
    type Err = SnippetError;

    fn from_str(text: &str) -> Result<SourceSpec, SnippetError> {
        let usage = |why: &str| SnippetError::Usage(format!("--from `{text}`: {why}"));
        let Some(at) = text.find(".rs:") else {
            return Err(usage(&format!("expected {SPEC_FORMS}")));
        };
        let file = PathBuf::from(&text[..at + 3]);
        let rest = &text[at + 3..];
        if let Some(path) = rest.strip_prefix("::") {
            let segments: Vec<String> = path.split("::").map(str::to_owned).collect();
            if let Some(bad) = segments.iter().find(|s| !is_identifier(s)) {
                return Err(usage(&format!(
                    "`{bad}` is not a Rust identifier; expected {SPEC_FORMS}"
                )));
            }
            return Ok(SourceSpec {
                file,
                selector: Selector::Path(segments),
            });
        }
        let lines = &rest[1..];
        let (start, end) = lines.split_once('-').unwrap_or((lines, lines));
        let parse = |n: &str| n.trim().parse::<usize>().ok().filter(|n| *n >= 1);
        match (parse(start), parse(end)) {
            (Some(start), Some(end)) if start <= end => Ok(SourceSpec {
                file,
                selector: Selector::Lines { start, end },
            }),
            (Some(start), Some(end)) => Err(usage(&format!(
                "the line range {start}-{end} ends before it starts"
            ))),
            _ => Err(usage(&format!(
                "`{lines}` is not a line range: expected <start>-<end>, lines counted from 1"
            ))),
        }
    }
}

impl std::fmt::Display for SourceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file.display())?;
        match &self.selector {
            Selector::Path(segments) => write!(f, "::{}", segments.join("::")),
            Selector::Lines { start, end } => write!(f, ":{start}-{end}"),
        }
    }
}

fn is_identifier(text: &str) -> bool {
    let text = text.strip_prefix("r#").unwrap_or(text);
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// The selected function, with what surrounds it.
pub(crate) struct Function<'a> {
    pub attrs: &'a [syn::Attribute],
    pub vis: &'a syn::Visibility,
    pub sig: &'a syn::Signature,
    pub block: &'a syn::Block,
    /// Inline modules between the file's module and the function.
    pub inline_modules: Vec<String>,
    /// The items of the module the function is defined in.
    pub scope: &'a [syn::Item],
    /// The impl block, for a method or associated function.
    pub owner: Option<&'a syn::ItemImpl>,
    /// `Type::method` or `function`.
    pub label: String,
}

impl Function<'_> {
    pub fn name(&self) -> String {
        self.sig.ident.to_string()
    }

    /// The name of the type a method belongs to: the last segment of the
    /// impl block's type.
    pub fn owner_name(&self) -> Option<String> {
        self.owner.and_then(|imp| type_name(&imp.self_ty))
    }

    /// From the first attribute (doc comments included) to the closing brace.
    pub fn lines(&self, source: &SourceFile) -> (usize, usize) {
        let start = self
            .attrs
            .first()
            .map_or_else(|| self.sig.span(), Spanned::span);
        (source.lines(start).0, source.lines(self.block.span()).1)
    }
}

/// The last path segment of a type, without generics.
pub(crate) fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(path) => path.path.segments.last().map(|s| s.ident.to_string()),
        syn::Type::Group(group) => type_name(&group.elem),
        syn::Type::Paren(paren) => type_name(&paren.elem),
        _ => None,
    }
}

/// Finds what `selector` names in `source`.
pub(crate) fn find<'a>(
    source: &'a SourceFile,
    selector: &Selector,
) -> Result<Function<'a>, SnippetError> {
    match selector {
        Selector::Path(segments) => find_by_path(source, segments),
        Selector::Lines { start, end } => find_by_lines(source, *start, *end),
    }
}

fn find_by_path<'a>(
    source: &'a SourceFile,
    segments: &[String],
) -> Result<Function<'a>, SnippetError> {
    let file = &source.display;
    let mut items: &'a [syn::Item] = &source.syntax.items;
    let mut modules = Vec::new();
    let mut rest = segments;
    while rest.len() > 1 {
        let inline = items.iter().find_map(|item| match item {
            syn::Item::Mod(module) if module.ident == rest[0].as_str() => {
                module.content.as_ref().map(|(_, items)| items.as_slice())
            }
            _ => None,
        });
        match inline {
            Some(inner) => {
                items = inner;
                modules.push(rest[0].clone());
                rest = &rest[1..];
            }
            None => break,
        }
    }
    let place = if modules.is_empty() {
        file.clone()
    } else {
        format!("module `{}` of {file}", modules.join("::"))
    };
    match rest {
        [name] => {
            let found: Vec<&syn::ItemFn> = items
                .iter()
                .filter_map(|item| match item {
                    syn::Item::Fn(function) if function.sig.ident == name.as_str() => {
                        Some(function)
                    }
                    _ => None,
                })
                .collect();
            match found.as_slice() {
                [function] => Ok(Function {
                    attrs: &function.attrs,
                    vis: &function.vis,
                    sig: &function.sig,
                    block: &function.block,
                    inline_modules: modules,
                    scope: items,
                    owner: None,
                    label: name.clone(),
                }),
                [] => {
                    let functions: Vec<String> = items
                        .iter()
                        .filter_map(|item| match item {
                            syn::Item::Fn(f) => Some(f.sig.ident.to_string()),
                            _ => None,
                        })
                        .collect();
                    let methods: Vec<String> = impl_methods(items)
                        .filter(|(_, method)| method.sig.ident == name.as_str())
                        .filter_map(|(imp, _)| type_name(&imp.self_ty))
                        .map(|owner| format!("{owner}::{name}"))
                        .collect();
                    let hint = if !methods.is_empty() {
                        format!("; it is a method: select {}", methods.join(" or "))
                    } else {
                        suggestion(name, &functions, "its functions")
                    };
                    Err(SnippetError::Source(format!(
                        "{place} has no function `{name}`{hint}"
                    )))
                }
                several => Err(ambiguous(source, name, several.iter().map(|f| f.span()))),
            }
        }
        [owner, name] => {
            let impls: Vec<&syn::ItemImpl> = items
                .iter()
                .filter_map(|item| match item {
                    syn::Item::Impl(imp) if type_name(&imp.self_ty).as_deref() == Some(owner) => {
                        Some(imp)
                    }
                    _ => None,
                })
                .collect();
            if impls.is_empty() {
                let types: Vec<String> = items
                    .iter()
                    .filter_map(|item| match item {
                        syn::Item::Impl(imp) => type_name(&imp.self_ty),
                        _ => None,
                    })
                    .collect();
                let hint = if items.iter().any(
                    |item| matches!(item, syn::Item::Mod(m) if m.ident == owner.as_str()),
                ) {
                    format!("; module `{owner}` is not inline in {file}: select the function from its own file")
                } else {
                    suggestion(owner, &types, "the types it implements")
                };
                return Err(SnippetError::Source(format!(
                    "{place} has no impl block for `{owner}`{hint}"
                )));
            }
            let found: Vec<(&syn::ItemImpl, &syn::ImplItemFn)> = impl_methods(items)
                .filter(|(imp, method)| {
                    type_name(&imp.self_ty).as_deref() == Some(owner)
                        && method.sig.ident == name.as_str()
                })
                .collect();
            match found.as_slice() {
                [(imp, method)] => Ok(Function {
                    attrs: &method.attrs,
                    vis: &method.vis,
                    sig: &method.sig,
                    block: &method.block,
                    inline_modules: modules,
                    scope: items,
                    owner: Some(imp),
                    label: format!("{owner}::{name}"),
                }),
                [] => {
                    let methods: Vec<String> = impl_methods(items)
                        .filter(|(imp, _)| type_name(&imp.self_ty).as_deref() == Some(owner))
                        .map(|(_, m)| m.sig.ident.to_string())
                        .collect();
                    Err(SnippetError::Source(format!(
                        "`{owner}` has no method `{name}` in {place}{}",
                        suggestion(name, &methods, "its methods")
                    )))
                }
                several => Err(ambiguous(
                    source,
                    &format!("{owner}::{name}"),
                    several.iter().map(|(_, m)| m.span()),
                )),
            }
        }
        _ => Err(SnippetError::Source(format!(
            "{file} has no inline module `{}`: select `function`, `Type::method`, or either inside inline modules (`module::function`)",
            rest[0]
        ))),
    }
}

fn impl_methods(
    items: &[syn::Item],
) -> impl Iterator<Item = (&syn::ItemImpl, &syn::ImplItemFn)> + '_ {
    items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Impl(imp) => Some(imp),
            _ => None,
        })
        .flat_map(|imp| {
            imp.items.iter().filter_map(move |item| match item {
                syn::ImplItem::Fn(method) => Some((imp, method)),
                _ => None,
            })
        })
}

fn ambiguous(
    source: &SourceFile,
    name: &str,
    spans: impl Iterator<Item = proc_macro2::Span>,
) -> SnippetError {
    let lines: Vec<String> = spans.map(|span| source.lines(span).0.to_string()).collect();
    SnippetError::Source(format!(
        "{} defines `{name}` {} times (lines {}): select one by its lines, {}:<start>-<end>",
        source.display,
        lines.len(),
        lines.join(", "),
        source.display
    ))
}

fn suggestion(wanted: &str, known: &[String], what: &str) -> String {
    if known.is_empty() {
        return String::new();
    }
    let near = profiling_core::suggest::near_matches(wanted, known.iter().map(String::as_str));
    match near.first() {
        Some(near) => format!("; did you mean `{near}`?"),
        None => {
            let mut sorted: Vec<&str> = known.iter().map(String::as_str).collect();
            sorted.sort_unstable();
            sorted.dedup();
            format!("; {what}: {}", sorted.join(", "))
        }
    }
}

/// Every function with a body at item level: free functions and the
/// methods of impl blocks, in inline modules too.
fn all_functions<'a>(items: &'a [syn::Item], modules: &[String], out: &mut Vec<Function<'a>>) {
    for item in items {
        match item {
            syn::Item::Fn(function) => out.push(Function {
                attrs: &function.attrs,
                vis: &function.vis,
                sig: &function.sig,
                block: &function.block,
                inline_modules: modules.to_vec(),
                scope: items,
                owner: None,
                label: function.sig.ident.to_string(),
            }),
            syn::Item::Impl(imp) => {
                for impl_item in &imp.items {
                    if let syn::ImplItem::Fn(method) = impl_item {
                        out.push(Function {
                            attrs: &method.attrs,
                            vis: &method.vis,
                            sig: &method.sig,
                            block: &method.block,
                            inline_modules: modules.to_vec(),
                            scope: items,
                            owner: Some(imp),
                            label: format!(
                                "{}::{}",
                                type_name(&imp.self_ty).unwrap_or_default(),
                                method.sig.ident
                            ),
                        });
                    }
                }
            }
            syn::Item::Mod(module) => {
                if let Some((_, inner)) = &module.content {
                    let mut path = modules.to_vec();
                    path.push(module.ident.to_string());
                    all_functions(inner, &path, out);
                }
            }
            _ => {}
        }
    }
}

fn find_by_lines(
    source: &SourceFile,
    start: usize,
    end: usize,
) -> Result<Function<'_>, SnippetError> {
    let file = &source.display;
    let count = source.line_count();
    if end > count {
        return Err(SnippetError::Source(format!(
            "{file} has {count} lines: the line range {start}-{end} runs past its end"
        )));
    }
    let mut functions = Vec::new();
    all_functions(&source.syntax.items, &[], &mut functions);
    let mut overlapping = Vec::new();
    for function in functions {
        let (first, last) = function.lines(source);
        if first <= start && end <= last {
            return Ok(function);
        }
        if first <= end && start <= last {
            overlapping.push(format!("`{}` (lines {first}-{last})", function.label));
        }
    }
    if overlapping.is_empty() {
        Err(SnippetError::Source(format!(
            "lines {start}-{end} of {file} are not inside a function"
        )))
    } else {
        Err(SnippetError::Source(format!(
            "lines {start}-{end} of {file} are not inside one function: they overlap {}; give lines inside one of them",
            overlapping.join(" and ")
        )))
    }
}

/// Checks what the copy and the target cannot handle: generic, `async` or
/// variadic functions, generic impl blocks, typed `self` and `impl Trait`
/// or `dyn Trait` parameters.
pub(crate) fn check_supported(
    source: &SourceFile,
    function: &Function<'_>,
    type_args: &TypeArgs,
) -> Result<(), SnippetError> {
    let (first, last) = function.lines(source);
    let refuse = |why: String| {
        SnippetError::Source(format!(
            "{}:{first}-{last}: `{}` {why}",
            source.display, function.label
        ))
    };
    let sig = function.sig;
    if sig.asyncness.is_some() {
        return Err(refuse("is an `async fn`: an NVTX range belongs to one thread, and an async body moves between threads at each `.await`; select a synchronous function it calls".to_owned()));
    }
    if sig.variadic.is_some() {
        return Err(refuse("is variadic".to_owned()));
    }
    let params = generic_params(source, &sig.generics);
    if params.is_empty() && !type_args.is_empty() {
        return Err(SnippetError::Usage(format!(
            "--type-args: `{}` has no type or const parameters to give",
            function.label
        )));
    }
    if !params.is_empty() {
        let listed = params
            .iter()
            .map(GenericParam::describe)
            .collect::<Vec<_>>()
            .join(", ");
        let example = params
            .iter()
            .map(|p| {
                format!(
                    "{}={}",
                    p.name,
                    if p.is_const { "<value>" } else { "<type>" }
                )
            })
            .collect::<Vec<_>>()
            .join(",");
        if type_args.is_empty() {
            return Err(refuse(format!(
                "is generic over {listed}: a target runs one concrete function; give its parameters with --type-args {example} (the copy keeps its generics, `run` calls it with these)"
            )));
        }
        for (name, _) in type_args.iter() {
            if !params.iter().any(|p| &p.name == name) {
                return Err(SnippetError::Usage(format!(
                    "--type-args: `{}` has no parameter `{name}`; its parameters: {listed}",
                    function.label
                )));
            }
        }
        let missing: Vec<&str> = params
            .iter()
            .filter(|p| type_args.get(&p.name).is_none())
            .map(|p| p.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(SnippetError::Usage(format!(
                "--type-args: give every parameter of `{}`: missing {} (its parameters: {listed})",
                function.label,
                missing.join(", ")
            )));
        }
    }
    if let Some(imp) = function.owner {
        // Lifetimes are fine: the target holds the type with `'static`
        // ones.
        let generic = imp
            .generics
            .params
            .iter()
            .any(|p| !matches!(p, syn::GenericParam::Lifetime(_)));
        if generic {
            return Err(refuse(
                "belongs to a generic impl block: a target needs one concrete type; copy it by hand"
                    .to_owned(),
            ));
        }
    }
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(receiver) if receiver.colon_token.is_some() => {
                return Err(refuse(
                    "takes `self` with an explicit type: the copy takes `self`, `&self`, `&mut self` or `mut self` only".to_owned(),
                ));
            }
            // `impl Into<X>`: the target holds an `X`.
            syn::FnArg::Typed(typed)
                if into_target(&typed.ty).is_some_and(|target| !has_opaque_type(target)) => {}
            syn::FnArg::Typed(typed) if has_opaque_type(&typed.ty) => {
                return Err(refuse(format!(
                    "takes `impl Trait` or `dyn Trait` (parameter at line {}): the target needs a concrete type to hold",
                    source.lines(typed.span()).0
                )));
            }
            _ => {}
        }
    }
    Ok(())
}

/// `--type-args D=(),T=f32,N=4`: the types (and const values) a generic
/// function's parameters take in the target. The copy keeps its generics;
/// `run` calls it with these.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeArgs(Vec<(String, String)>);

impl TypeArgs {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value given for parameter `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(given, _)| given == name)
            .map(|(_, value)| value.as_str())
    }

    pub fn iter(&self) -> impl Iterator<Item = &(String, String)> {
        self.0.iter()
    }

    /// Only those given for the generic parameters of `generics`.
    pub(crate) fn for_generics(&self, generics: &syn::Generics) -> TypeArgs {
        let names: Vec<String> = generics
            .params
            .iter()
            .filter_map(|param| match param {
                syn::GenericParam::Type(t) => Some(t.ident.to_string()),
                syn::GenericParam::Const(c) => Some(c.ident.to_string()),
                syn::GenericParam::Lifetime(_) => None,
            })
            .collect();
        TypeArgs(
            self.0
                .iter()
                .filter(|(name, _)| names.contains(name))
                .cloned()
                .collect(),
        )
    }

    /// `::<A, B>` for `params` in order; empty without parameters.
    pub(crate) fn turbofish(&self, params: &[GenericParam]) -> String {
        if params.is_empty() {
            return String::new();
        }
        let values: Vec<&str> = params
            .iter()
            .map(|p| self.get(&p.name).unwrap_or("_"))
            .collect();
        format!("::<{}>", values.join(", "))
    }
}

impl std::str::FromStr for TypeArgs {
    type Err = SnippetError;

    fn from_str(text: &str) -> Result<TypeArgs, SnippetError> {
        let usage = |why: String| SnippetError::Usage(format!("--type-args {text}: {why}"));
        let mut pairs: Vec<(String, String)> = Vec::new();
        for item in split_top_level(text) {
            let Some((name, value)) = item.split_once('=') else {
                return Err(usage(format!(
                    "`{item}` is not NAME=TYPE (or NAME=VALUE for a const parameter)"
                )));
            };
            let (name, value) = (name.trim(), value.trim());
            if !is_identifier(name) {
                return Err(usage(format!("`{name}` is not a parameter name")));
            }
            if syn::parse_str::<syn::Type>(value).is_err()
                && syn::parse_str::<syn::Expr>(value).is_err()
            {
                return Err(usage(format!(
                    "`{value}` (for `{name}`) is not a Rust type or value"
                )));
            }
            if pairs.iter().any(|(given, _)| given == name) {
                return Err(usage(format!("`{name}` is given twice")));
            }
            pairs.push((name.to_owned(), value.to_owned()));
        }
        if pairs.is_empty() {
            return Err(usage("give at least one NAME=TYPE".to_owned()));
        }
        Ok(TypeArgs(pairs))
    }
}

impl std::fmt::Display for TypeArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pairs: Vec<String> = self.0.iter().map(|(n, v)| format!("{n}={v}")).collect();
        f.write_str(&pairs.join(","))
    }
}

/// `text` split at the commas outside brackets: `T=(f32, f32),N=4` is two
/// items.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (at, c) in text.char_indices() {
        match c {
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => depth -= 1,
            ',' if depth == 0 => {
                items.push(text[start..at].trim());
                start = at + 1;
            }
            _ => {}
        }
    }
    items.push(text[start..].trim());
    items.into_iter().filter(|item| !item.is_empty()).collect()
}

/// A type or const parameter of a function (lifetimes need nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GenericParam {
    pub name: String,
    pub is_const: bool,
    /// `Copy + Debug`, `usize`: its bounds, or a const parameter's type.
    pub bounds: String,
}

impl GenericParam {
    fn describe(&self) -> String {
        match (self.is_const, self.bounds.is_empty()) {
            (true, _) => format!("`const {}: {}`", self.name, self.bounds),
            (false, true) => format!("`{}`", self.name),
            (false, false) => format!("`{}: {}`", self.name, self.bounds),
        }
    }
}

/// The type and const parameters of `generics`, in order, with the bounds
/// their `where` clause adds, as the source writes them.
pub(crate) fn generic_params(source: &SourceFile, generics: &syn::Generics) -> Vec<GenericParam> {
    let text = |node: &dyn Spanned| {
        source.text[source.range(node.span())]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    generics
        .params
        .iter()
        .filter_map(|param| match param {
            syn::GenericParam::Type(t) => {
                let mut bounds: Vec<String> = t.bounds.iter().map(|b| text(b)).collect();
                let predicates = generics.where_clause.iter().flat_map(|c| &c.predicates);
                for predicate in predicates {
                    if let syn::WherePredicate::Type(p) = predicate {
                        if t.ident == text(&p.bounded_ty) {
                            bounds.extend(p.bounds.iter().map(|b| text(b)));
                        }
                    }
                }
                Some(GenericParam {
                    name: t.ident.to_string(),
                    is_const: false,
                    bounds: bounds.join(" + "),
                })
            }
            syn::GenericParam::Const(c) => Some(GenericParam {
                name: c.ident.to_string(),
                is_const: true,
                bounds: text(&c.ty),
            }),
            syn::GenericParam::Lifetime(_) => None,
        })
        .collect()
}

/// `X` of a parameter type `impl Into<X>` (its only bound).
pub(crate) fn into_target(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::ImplTrait(opaque) = ty else {
        return None;
    };
    let [syn::TypeParamBound::Trait(bound)] = opaque.bounds.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let segment = bound.path.segments.last().filter(|s| s.ident == "Into")?;
    match &segment.arguments {
        syn::PathArguments::AngleBracketed(args) => match args.args.first() {
            Some(syn::GenericArgument::Type(target)) if args.args.len() == 1 => Some(target),
            _ => None,
        },
        _ => None,
    }
}

fn has_opaque_type(ty: &syn::Type) -> bool {
    struct Finder(bool);
    impl<'ast> syn::visit::Visit<'ast> for Finder {
        fn visit_type_impl_trait(&mut self, _: &'ast syn::TypeImplTrait) {
            self.0 = true;
        }
        fn visit_type_trait_object(&mut self, _: &'ast syn::TypeTraitObject) {
            self.0 = true;
        }
    }
    let mut finder = Finder(false);
    syn::visit::visit_type(&mut finder, ty);
    finder.0
}
