//! The one-line description of a target: the first line of a doc comment.
//!
//! An attribute macro sees only the impl block, so the type's own doc
//! comment is read from the source file the impl is in. Anything that goes
//! wrong there (no file, a type defined elsewhere) means no description,
//! never an error.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use syn::{Attribute, Expr, Item, Lit, Meta, Stmt, Type};

/// The first non-empty line of the doc comment in `attrs`, trimmed.
pub(crate) fn first_doc_line(attrs: &[Attribute]) -> Option<String> {
    attrs
        .iter()
        .filter_map(doc_text)
        .flat_map(|text| text.lines().map(str::to_owned).collect::<Vec<_>>())
        .map(|line| clean_line(&line))
        .find(|line| !line.is_empty())
}

fn doc_text(attr: &Attribute) -> Option<String> {
    if !attr.path().is_ident("doc") {
        return None;
    }
    match &attr.meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(syn::ExprLit {
                lit: Lit::Str(s), ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    }
}

/// A doc line without its surrounding space, nor the ` * ` margin of a
/// `/** ... */` comment.
fn clean_line(line: &str) -> String {
    let line = line.trim();
    match line.strip_prefix('*') {
        Some(rest) if rest.is_empty() || rest.starts_with(char::is_whitespace) => {
            rest.trim().to_owned()
        }
        _ => line.to_owned(),
    }
}

/// The last path segment of a type, the name its definition goes by:
/// `targets::Smoke<f32>` is `Smoke`.
pub(crate) fn type_ident(ty: &Type) -> Option<&syn::Ident> {
    match ty {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last().map(|s| &s.ident),
        Type::Group(group) => type_ident(&group.elem),
        Type::Paren(paren) => type_ident(&paren.elem),
        _ => None,
    }
}

/// The first doc line of the struct, enum, union or type alias named
/// `type_name` in the file at `path`, searching inline modules and function
/// bodies too.
pub(crate) fn type_doc_in_file(path: &Path, type_name: &str) -> Option<String> {
    let source = std::fs::read_to_string(path).ok()?;
    let index = cached_index(path, source)?;
    index.doc_of(type_name)
}

thread_local! {
    /// The last file indexed: a file with several targets is parsed once.
    /// Keyed by the contents too, since a long-lived macro server sees edits.
    static LAST_INDEX: RefCell<Option<(PathBuf, String, Rc<TypeIndex>)>> = const { RefCell::new(None) };
}

fn cached_index(path: &Path, source: String) -> Option<Rc<TypeIndex>> {
    LAST_INDEX.with(|cache| {
        if let Some((cached_path, cached_source, index)) = &*cache.borrow() {
            if cached_path == path && *cached_source == source {
                return Some(Rc::clone(index));
            }
        }
        let index = Rc::new(TypeIndex::of_source(&source)?);
        *cache.borrow_mut() = Some((path.to_owned(), source, Rc::clone(&index)));
        Some(index)
    })
}

/// The types a file defines, with their doc lines. Plain data: tokens from
/// one macro call must not outlive it.
#[derive(Debug, Default)]
pub(crate) struct TypeIndex {
    types: Vec<TypeDoc>,
}

#[derive(Debug)]
struct TypeDoc {
    name: String,
    doc: Option<String>,
    /// The same scope holds `impl ProfileTarget for` this type: when names
    /// repeat across modules, that definition is the one meant.
    has_target_impl: bool,
}

impl TypeIndex {
    pub(crate) fn of_source(source: &str) -> Option<TypeIndex> {
        let file = syn::parse_file(source).ok()?;
        let mut index = TypeIndex::default();
        index.add_scope(&file.items.iter().collect::<Vec<_>>());
        Some(index)
    }

    pub(crate) fn doc_of(&self, type_name: &str) -> Option<String> {
        let mut candidates = self.types.iter().filter(|t| t.name == type_name);
        let first = candidates.next()?;
        let chosen = if first.has_target_impl {
            first
        } else {
            candidates.find(|t| t.has_target_impl).unwrap_or(first)
        };
        chosen.doc.clone()
    }

    fn add_scope(&mut self, items: &[&Item]) {
        let implemented: Vec<String> = items
            .iter()
            .filter_map(|item| match item {
                Item::Impl(block) => {
                    let (_, trait_path, _) = block.trait_.as_ref()?;
                    let is_target = trait_path.segments.last()?.ident == "ProfileTarget";
                    is_target.then(|| type_ident(&block.self_ty).map(|i| i.to_string()))?
                }
                _ => None,
            })
            .collect();
        for item in items {
            let (ident, attrs) = match *item {
                Item::Struct(i) => (&i.ident, &i.attrs),
                Item::Enum(i) => (&i.ident, &i.attrs),
                Item::Union(i) => (&i.ident, &i.attrs),
                Item::Type(i) => (&i.ident, &i.attrs),
                Item::Mod(module) => {
                    if let Some((_, content)) = &module.content {
                        self.add_scope(&content.iter().collect::<Vec<_>>());
                    }
                    continue;
                }
                Item::Fn(function) => {
                    let body_items: Vec<&Item> = function
                        .block
                        .stmts
                        .iter()
                        .filter_map(|stmt| match stmt {
                            Stmt::Item(item) => Some(item),
                            _ => None,
                        })
                        .collect();
                    self.add_scope(&body_items);
                    continue;
                }
                _ => continue,
            };
            let name = ident.to_string();
            self.types.push(TypeDoc {
                has_target_impl: implemented.contains(&name),
                doc: first_doc_line(attrs),
                name,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_doc_line_skips_blank_lines_and_trims() {
        let item: syn::ItemStruct = syn::parse_quote! {
            #[doc = ""]
            #[doc = "   Decodes boxes.  "]
            #[doc = " Second line."]
            struct Decode;
        };
        assert_eq!(
            first_doc_line(&item.attrs).as_deref(),
            Some("Decodes boxes.")
        );
    }

    #[test]
    fn first_doc_line_drops_the_margin_of_block_comments() {
        let item: syn::ItemStruct = syn::parse_quote! {
            #[doc = "\n * Runs NMS.\n * More.\n "]
            struct Nms;
        };
        assert_eq!(first_doc_line(&item.attrs).as_deref(), Some("Runs NMS."));
    }

    #[test]
    fn first_doc_line_ignores_other_attributes() {
        let item: syn::ItemStruct = syn::parse_quote! {
            #[derive(Default)]
            #[doc(hidden)]
            struct Bare;
        };
        assert_eq!(first_doc_line(&item.attrs), None);
    }

    #[test]
    fn type_index_finds_types_in_modules_and_function_bodies() {
        let source = r#"
            /// Top level.
            struct Top;
            mod inner {
                /// In a module.
                pub enum Nested { A }
            }
            fn main() {
                /// In a body.
                struct Local;
            }
        "#;
        let index = TypeIndex::of_source(source).unwrap();
        assert_eq!(index.doc_of("Top").as_deref(), Some("Top level."));
        assert_eq!(index.doc_of("Nested").as_deref(), Some("In a module."));
        assert_eq!(index.doc_of("Local").as_deref(), Some("In a body."));
        assert_eq!(index.doc_of("Missing"), None);
    }

    #[test]
    fn only_a_star_margin_is_dropped() {
        assert_eq!(clean_line(" * Runs NMS. "), "Runs NMS.");
        assert_eq!(clean_line("*"), "");
        // A star that starts a word is text.
        assert_eq!(clean_line("*emphasis* first"), "*emphasis* first");
    }

    #[test]
    fn type_ident_is_the_last_segment_through_groups_and_parentheses() {
        let ident = |ty: syn::Type| type_ident(&ty).map(|i| i.to_string());
        assert_eq!(
            ident(syn::parse_quote!(targets::Smoke<f32>)),
            Some("Smoke".into())
        );
        assert_eq!(ident(syn::parse_quote!((Smoke))), Some("Smoke".into()));
        let grouped = syn::Type::Group(syn::TypeGroup {
            group_token: Default::default(),
            elem: Box::new(syn::parse_quote!(a::Grouped)),
        });
        assert_eq!(ident(grouped), Some("Grouped".into()));
        // A qualified path names an associated type, not a definition.
        assert_eq!(ident(syn::parse_quote!(<T as Trait>::Assoc)), None);
        assert_eq!(ident(syn::parse_quote!(&Smoke)), None);
    }

    #[test]
    fn the_index_cache_is_keyed_by_path_and_contents() {
        let a = Path::new("/a.rs");
        let b = Path::new("/b.rs");
        let first = "/// First.\nstruct T;".to_owned();
        let second = "/// Second.\nstruct T;".to_owned();
        let doc =
            |path: &Path, source: &str| cached_index(path, source.to_owned()).unwrap().doc_of("T");
        assert_eq!(doc(a, &first).as_deref(), Some("First."));
        // The same path, edited: indexed again.
        assert_eq!(doc(a, &second).as_deref(), Some("Second."));
        // Another path with other contents: not the cached one.
        assert_eq!(doc(b, &first).as_deref(), Some("First."));
        // Another path with the same contents as the cache.
        assert_eq!(doc(a, &first).as_deref(), Some("First."));
        assert_eq!(doc(b, &first).as_deref(), Some("First."));
        let cached = cached_index(b, first.clone()).unwrap();
        assert!(
            Rc::ptr_eq(&cached, &cached_index(b, first).unwrap()),
            "reused"
        );
    }

    #[test]
    fn unions_and_type_aliases_have_docs_too() {
        let source = r#"
            /// A union.
            union Bits { a: u32, b: f32 }
            /// An alias.
            type Alias = Vec<f32>;
        "#;
        let index = TypeIndex::of_source(source).unwrap();
        assert_eq!(index.doc_of("Bits").as_deref(), Some("A union."));
        assert_eq!(index.doc_of("Alias").as_deref(), Some("An alias."));
    }

    #[test]
    fn type_index_prefers_the_definition_next_to_the_target_impl() {
        let source = r#"
            /// Unrelated.
            struct Smoke;
            mod targets {
                /// The target.
                pub struct Smoke;
                impl profiling_core::ProfileTarget for Smoke {}
            }
        "#;
        let index = TypeIndex::of_source(source).unwrap();
        assert_eq!(index.doc_of("Smoke").as_deref(), Some("The target."));
    }
}
