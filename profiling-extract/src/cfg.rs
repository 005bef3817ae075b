//! `cfg` in copied code, decided as production's build decides it.
//!
//! A `#[cfg(feature = "x")]` in the production crate asks about *its*
//! features; copied into a snippet crate, which has none of them, it would
//! silently compile the code out. So predicates are evaluated against the
//! features the production crate is built with
//! ([`crate::production::Production::features`]): what is on loses the
//! attribute, what is off is left out, and a predicate that also asks
//! about the platform (`unix`, `target_os`, `debug_assertions`) keeps
//! only that part, which the snippet's build decides as production's does.
//! `test` and `doc` are off: production's tests are not the snippet's.

use std::collections::BTreeSet;

use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Attribute, Meta, Token};

/// What a predicate comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decided {
    On,
    Off,
    /// Not decided by features: the rest of the predicate, as written.
    Platform(String),
}

/// Evaluates a `cfg` predicate against `features`.
pub(crate) fn decide(predicate: &Meta, features: &BTreeSet<String>) -> Decided {
    match predicate {
        Meta::Path(path) => match path.get_ident().map(ToString::to_string).as_deref() {
            Some("test" | "doc" | "doctest") => Decided::Off,
            _ => Decided::Platform(path_text(path)),
        },
        Meta::NameValue(pair) => {
            let value = match &pair.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(text),
                    ..
                }) => text.value(),
                _ => return Decided::Platform(meta_text(predicate)),
            };
            if pair.path.is_ident("feature") {
                if features.contains(&value) {
                    Decided::On
                } else {
                    Decided::Off
                }
            } else {
                Decided::Platform(meta_text(predicate))
            }
        }
        Meta::List(list) => {
            let Ok(parts) = list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            else {
                return Decided::Platform(meta_text(predicate));
            };
            let decided: Vec<Decided> = parts.iter().map(|p| decide(p, features)).collect();
            match list.path.get_ident().map(ToString::to_string).as_deref() {
                Some("all") => combine(decided, Decided::Off, Decided::On, "all"),
                Some("any") => combine(decided, Decided::On, Decided::Off, "any"),
                Some("not") if decided.len() == 1 => match &decided[0] {
                    Decided::On => Decided::Off,
                    Decided::Off => Decided::On,
                    Decided::Platform(rest) => Decided::Platform(format!("not({rest})")),
                },
                _ => Decided::Platform(meta_text(predicate)),
            }
        }
    }
}

/// `all` (one `Off` decides, `On`s drop out) or `any` (the reverse).
fn combine(parts: Vec<Decided>, deciding: Decided, neutral: Decided, name: &str) -> Decided {
    if parts.contains(&deciding) {
        return deciding;
    }
    let rest: Vec<String> = parts
        .into_iter()
        .filter_map(|part| match part {
            Decided::Platform(rest) => Some(rest),
            _ => None,
        })
        .collect();
    match rest.len() {
        0 => neutral,
        1 => Decided::Platform(rest.into_iter().next().expect("one")),
        _ => Decided::Platform(format!("{name}({})", rest.join(", "))),
    }
}

fn path_text(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

fn meta_text(meta: &Meta) -> String {
    match meta {
        Meta::Path(path) => path_text(path),
        Meta::NameValue(pair) => {
            let value = &pair.value;
            format!("{} = {}", path_text(&pair.path), quote::quote!(#value))
        }
        Meta::List(list) => {
            let parts = list
                .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .map(|parts| parts.iter().map(meta_text).collect::<Vec<_>>().join(", "))
                .unwrap_or_else(|_| list.tokens.to_string());
            format!("{}({parts})", path_text(&list.path))
        }
    }
}

/// One change to the copy's text, by byte range of the source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CfgEdit {
    pub at: std::ops::Range<usize>,
    pub text: String,
}

/// What the `cfg`s of a function's body come to: the edits, and in words
/// what was kept and left out (with source lines).
#[derive(Debug, Default)]
pub(crate) struct CfgEdits {
    pub edits: Vec<CfgEdit>,
    pub kept: Vec<String>,
    pub left_out: Vec<String>,
}

/// The predicate of `#[cfg(...)]`, when `attr` is one.
pub(crate) fn cfg_predicate(attr: &Attribute) -> Option<Meta> {
    if !attr.path().is_ident("cfg") {
        return None;
    }
    attr.parse_args::<Meta>().ok()
}

/// The `cfg` of `attrs` that production's features turn off, as written,
/// when one does: the function is not in production's build.
pub(crate) fn function_is_off(attrs: &[Attribute], features: &BTreeSet<String>) -> Option<String> {
    attrs.iter().find_map(|attr| {
        let predicate = cfg_predicate(attr)?;
        (decide(&predicate, features) == Decided::Off).then(|| meta_text(&predicate))
    })
}

/// Walks `block` for `#[cfg]`, `#[cfg_attr]` and `cfg!`, deciding each.
/// `range` gives a node's byte range in the source; `line` its line.
pub(crate) fn body_edits(
    block: &syn::Block,
    features: &BTreeSet<String>,
    range: &dyn Fn(proc_macro2::Span) -> std::ops::Range<usize>,
    line: &dyn Fn(proc_macro2::Span) -> usize,
) -> CfgEdits {
    let mut walker = Walker {
        features,
        range,
        line,
        out: CfgEdits::default(),
        removed: Vec::new(),
    };
    walker.visit_block(block);
    // Nothing inside a removed node is edited again.
    let removed = walker.removed.clone();
    walker.out.edits.retain(|edit| {
        !removed
            .iter()
            .any(|r| r.start <= edit.at.start && edit.at.end <= r.end && *r != edit.at)
    });
    walker.out
}

struct Walker<'f> {
    features: &'f BTreeSet<String>,
    range: &'f dyn Fn(proc_macro2::Span) -> std::ops::Range<usize>,
    line: &'f dyn Fn(proc_macro2::Span) -> usize,
    out: CfgEdits,
    removed: Vec<std::ops::Range<usize>>,
}

impl Walker<'_> {
    /// Decides the attributes of a node; `whole` is the node's span when it
    /// can be removed whole (a statement, an item, a match arm), with the
    /// byte just after it to take too (an arm's comma).
    fn attributes(&mut self, attrs: &[Attribute], whole: Option<std::ops::Range<usize>>) {
        use syn::spanned::Spanned;
        for attr in attrs {
            let at = (self.range)(attr.span());
            let line = (self.line)(attr.span());
            if let Some(predicate) = cfg_predicate(attr) {
                let written = meta_text(&predicate);
                match decide(&predicate, self.features) {
                    Decided::On => {
                        self.out.edits.push(CfgEdit {
                            at,
                            text: String::new(),
                        });
                        self.out
                            .kept
                            .push(format!("line {line} (`cfg({written})`)"));
                    }
                    Decided::Off => {
                        match &whole {
                            Some(node) => {
                                self.removed.push(node.clone());
                                self.out.edits.push(CfgEdit {
                                    at: node.clone(),
                                    text: String::new(),
                                });
                            }
                            // Where a node cannot go whole, it stays out of
                            // the build as it does in production.
                            None => self.out.edits.push(CfgEdit {
                                at,
                                text: "#[cfg(any())]".to_owned(),
                            }),
                        }
                        self.out
                            .left_out
                            .push(format!("line {line} (`cfg({written})`)"));
                        return;
                    }
                    Decided::Platform(rest) if rest != written => {
                        self.out.edits.push(CfgEdit {
                            at,
                            text: format!("#[cfg({rest})]"),
                        });
                    }
                    Decided::Platform(_) => {}
                }
            } else if attr.path().is_ident("cfg_attr") {
                let Ok(parts) =
                    attr.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                else {
                    continue;
                };
                let mut parts = parts.into_iter();
                let Some(predicate) = parts.next() else {
                    continue;
                };
                let attrs: Vec<String> = parts.map(|m| quote::quote!(#m).to_string()).collect();
                let text = match decide(&predicate, self.features) {
                    Decided::On => attrs
                        .iter()
                        .map(|a| format!("#[{a}]"))
                        .collect::<Vec<_>>()
                        .join(" "),
                    Decided::Off => String::new(),
                    Decided::Platform(rest) => {
                        format!("#[cfg_attr({rest}, {})]", attrs.join(", "))
                    }
                };
                self.out.edits.push(CfgEdit { at, text });
            }
        }
    }
}

impl<'ast> Visit<'ast> for Walker<'_> {
    fn visit_stmt(&mut self, stmt: &'ast syn::Stmt) {
        use syn::spanned::Spanned;
        let whole = Some((self.range)(stmt.span()));
        match stmt {
            syn::Stmt::Local(local) => self.attributes(&local.attrs, whole),
            syn::Stmt::Macro(mac) => self.attributes(&mac.attrs, whole),
            syn::Stmt::Item(item) => {
                if let Some(attrs) = item_attrs(item) {
                    self.attributes(attrs, whole);
                }
            }
            syn::Stmt::Expr(expr, Some(_)) => {
                if let Some(attrs) = expr_attrs(expr) {
                    self.attributes(attrs, whole);
                }
                // The attributes were this statement's: not the expression's
                // again below.
                visit::visit_stmt(self, stmt);
                return;
            }
            syn::Stmt::Expr(_, None) => {}
        }
        visit::visit_stmt(self, stmt);
    }

    fn visit_arm(&mut self, arm: &'ast syn::Arm) {
        use syn::spanned::Spanned;
        let mut whole = (self.range)(arm.span());
        if let Some(comma) = &arm.comma {
            whole.end = (self.range)(comma.span()).end;
        }
        self.attributes(&arm.attrs, Some(whole));
        visit::visit_arm(self, arm);
    }

    fn visit_expr(&mut self, expr: &'ast syn::Expr) {
        if let syn::Expr::Macro(mac) = expr {
            self.cfg_macro(&mac.mac);
        }
        visit::visit_expr(self, expr);
    }
}

impl Walker<'_> {
    /// `cfg!(predicate)` becomes `true` or `false` when features decide it.
    fn cfg_macro(&mut self, mac: &syn::Macro) {
        use syn::spanned::Spanned;
        if !mac.path.is_ident("cfg") {
            return;
        }
        let Ok(predicate) = mac.parse_body::<Meta>() else {
            return;
        };
        let text = match decide(&predicate, self.features) {
            Decided::On => "true".to_owned(),
            Decided::Off => "false".to_owned(),
            Decided::Platform(rest) if rest != meta_text(&predicate) => format!("cfg!({rest})"),
            Decided::Platform(_) => return,
        };
        self.out.edits.push(CfgEdit {
            at: (self.range)(mac.span()),
            text,
        });
    }
}

fn item_attrs(item: &syn::Item) -> Option<&Vec<Attribute>> {
    Some(match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        _ => return None,
    })
}

fn expr_attrs(expr: &syn::Expr) -> Option<&Vec<Attribute>> {
    Some(match expr {
        syn::Expr::Assign(e) => &e.attrs,
        syn::Expr::Call(e) => &e.attrs,
        syn::Expr::MethodCall(e) => &e.attrs,
        syn::Expr::Block(e) => &e.attrs,
        syn::Expr::If(e) => &e.attrs,
        syn::Expr::ForLoop(e) => &e.attrs,
        syn::Expr::While(e) => &e.attrs,
        syn::Expr::Loop(e) => &e.attrs,
        syn::Expr::Match(e) => &e.attrs,
        syn::Expr::Macro(e) => &e.attrs,
        syn::Expr::Unsafe(e) => &e.attrs,
        syn::Expr::Binary(e) => &e.attrs,
        syn::Expr::Return(e) => &e.attrs,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    fn decided(predicate: &str, on: &[&str]) -> Decided {
        decide(&syn::parse_str::<Meta>(predicate).unwrap(), &features(on))
    }

    #[test]
    fn predicates_are_decided_by_features_and_keep_what_the_platform_decides() {
        assert_eq!(decided("feature = \"ndarray\"", &["ndarray"]), Decided::On);
        assert_eq!(decided("feature = \"ndarray\"", &[]), Decided::Off);
        assert_eq!(decided("not(feature = \"a\")", &[]), Decided::On);
        assert_eq!(
            decided("all(feature = \"a\", feature = \"b\")", &["a"]),
            Decided::Off
        );
        assert_eq!(
            decided("any(feature = \"a\", feature = \"b\")", &["b"]),
            Decided::On
        );
        assert_eq!(decided("test", &[]), Decided::Off);
        assert_eq!(
            decided("all(feature = \"a\", unix)", &["a"]),
            Decided::Platform("unix".to_owned())
        );
        assert_eq!(decided("all(feature = \"a\", unix)", &[]), Decided::Off);
        assert_eq!(
            decided("any(feature = \"a\", target_os = \"linux\", windows)", &[]),
            Decided::Platform("any(target_os = \"linux\", windows)".to_owned())
        );
        assert_eq!(
            decided("not(all(unix, feature = \"a\"))", &["a"]),
            Decided::Platform("not(unix)".to_owned())
        );
        assert_eq!(decided("any(test, feature = \"x\")", &["x"]), Decided::On);
    }

    #[test]
    fn body_cfgs_are_kept_left_out_or_narrowed() {
        let text = "fn f() -> u32 {\n    #[cfg(feature = \"on\")]\n    let a = 1;\n    #[cfg(feature = \"off\")]\n    let a = 2;\n    #[cfg(all(unix, feature = \"on\"))]\n    let b = 3;\n    let c = match a {\n        #[cfg(feature = \"off\")]\n        0 => 9,\n        _ => 1,\n    };\n    if cfg!(feature = \"on\") { a + b + c } else { 0 }\n}\n";
        let file: syn::File = syn::parse_str(text).unwrap();
        let syn::Item::Fn(function) = &file.items[0] else {
            panic!("a function")
        };
        // Byte ranges of spans are from the start of the text parsed.
        let range = |span: proc_macro2::Span| span.byte_range();
        let line = |span: proc_macro2::Span| span.start().line;
        let out = body_edits(&function.block, &features(&["on"]), &range, &line);
        let mut edited = text.to_owned();
        let mut edits = out.edits.clone();
        edits.sort_by_key(|e| std::cmp::Reverse(e.at.start));
        for edit in edits {
            edited.replace_range(edit.at, &edit.text);
        }
        assert_eq!(
            edited,
            "fn f() -> u32 {\n    \n    let a = 1;\n    \n    #[cfg(unix)]\n    let b = 3;\n    let c = match a {\n        \n        _ => 1,\n    };\n    if true { a + b + c } else { 0 }\n}\n"
        );
        assert_eq!(out.kept, ["line 2 (`cfg(feature = \"on\")`)"]);
        assert_eq!(
            out.left_out,
            [
                "line 4 (`cfg(feature = \"off\")`)",
                "line 9 (`cfg(feature = \"off\")`)"
            ]
        );
    }
}
