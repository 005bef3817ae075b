//! The production calls of the copied function: the literals they pass are
//! the defaults of the snippet's settings.

use syn::visit::{self, Visit};

use crate::crate_files::{names_word, CrateFiles};
use crate::source::rust_files;

/// A call of the copied function in production code, with the literal it
/// passes for each parameter (`None` where it passes something else).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallSite {
    /// The file, as the snippet's files show it.
    pub file: String,
    /// By position in the function's inputs (a method's receiver first).
    pub literals: Vec<Option<String>>,
}

/// The call of `name` with `inputs` inputs (a method's receiver counted) in
/// the `.rs` files under `dir` (its `src`, `tests`, `benches`, `examples`)
/// that passes the most literals; file names shown from `root`. Only the
/// files that name `name` are parsed, as `files` searches.
pub(crate) fn find_call_site(
    files: &CrateFiles,
    dir: &std::path::Path,
    root: &std::path::Path,
    name: &str,
    inputs: usize,
    method: bool,
) -> Option<CallSite> {
    struct Calls<'n> {
        name: &'n str,
        inputs: usize,
        method: bool,
        found: Vec<Vec<Option<String>>>,
    }
    fn literal(expr: &syn::Expr) -> Option<String> {
        match expr {
            syn::Expr::Lit(lit) => match &lit.lit {
                syn::Lit::Int(_) | syn::Lit::Float(_) | syn::Lit::Bool(_) => {
                    let lit = &lit.lit;
                    Some(quote::quote!(#lit).to_string())
                }
                _ => None,
            },
            syn::Expr::Unary(unary) if matches!(unary.op, syn::UnOp::Neg(_)) => {
                literal(&unary.expr).map(|text| format!("-{text}"))
            }
            syn::Expr::Paren(paren) => literal(&paren.expr),
            // A variant of an enum: `Norm::L1`.
            syn::Expr::Path(path) if path.qself.is_none() && path.path.segments.len() == 2 => {
                let owner = &path.path.segments[0];
                let variant = &path.path.segments[1];
                let capital = |ident: &syn::Ident| {
                    ident
                        .to_string()
                        .starts_with(|c: char| c.is_ascii_uppercase())
                };
                (owner.arguments.is_none()
                    && variant.arguments.is_none()
                    && owner.ident != "Self"
                    && capital(&owner.ident)
                    && capital(&variant.ident))
                .then(|| format!("{}::{}", owner.ident, variant.ident))
            }
            syn::Expr::Tuple(tuple) => {
                let parts: Option<Vec<String>> = tuple.elems.iter().map(literal).collect();
                Some(format!("({})", parts?.join(", ")))
            }
            syn::Expr::Array(array) => {
                let parts: Option<Vec<String>> = array.elems.iter().map(literal).collect();
                Some(format!("[{}]", parts?.join(", ")))
            }
            _ => None,
        }
    }
    impl<'ast> Visit<'ast> for Calls<'_> {
        // A test that expects a panic passes the values that make one.
        fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
            if !item.attrs.iter().any(|a| a.path().is_ident("should_panic")) {
                visit::visit_item_fn(self, item);
            }
        }
        fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
            if let syn::Expr::Path(path) = &*call.func {
                let named = path
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == self.name);
                if named && call.args.len() == self.inputs {
                    self.found.push(call.args.iter().map(literal).collect());
                }
            }
            visit::visit_expr_call(self, call);
        }
        fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
            if self.method && call.method == self.name && call.args.len() + 1 == self.inputs {
                let mut literals = vec![None];
                literals.extend(call.args.iter().map(literal));
                self.found.push(literals);
            }
            visit::visit_expr_method_call(self, call);
        }
    }
    let mut paths = Vec::new();
    for folder in ["src", "tests", "benches", "examples"] {
        rust_files(&dir.join(folder), &mut paths, 0);
    }
    // The calls passing the most literals; of those, the literals passed
    // most often.
    let mut seen: Vec<(Vec<Option<String>>, usize, String)> = Vec::new();
    let count = |literals: &[Option<String>]| literals.iter().filter(|l| l.is_some()).count();
    for file in paths.iter().take(2000) {
        let found = files.search(
            file,
            |text| names_word(text, name),
            |parsed| {
                let mut calls = Calls {
                    name,
                    inputs,
                    method,
                    found: Vec::new(),
                };
                calls.visit_file(parsed);
                calls.found
            },
        );
        for literals in found.into_iter().flatten() {
            if count(&literals) == 0 {
                continue;
            }
            match seen.iter_mut().find(|(l, _, _)| *l == literals) {
                Some((_, times, _)) => *times += 1,
                None => seen.push((literals, 1, crate::source::display_path(file, root))),
            }
        }
    }
    let (literals, _, file) = seen
        .into_iter()
        .enumerate()
        .max_by_key(|(index, (literals, times, _))| {
            (count(literals), *times, std::cmp::Reverse(*index))
        })
        .map(|(_, found)| found)?;
    Some(CallSite { file, literals })
}
