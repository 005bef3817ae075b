//! Types written as the target holds them: owned, every lifetime
//! `'static`, the types given in place of type parameters, spaced as
//! rustfmt spaces them.

use std::collections::BTreeSet;

use syn::spanned::Spanned;
use syn::visit::{self, Visit};

use crate::source::SourceFile;

/// The type `ty` written as source text, owned: `Self` becomes the
/// method's type and every lifetime `'static`, on one line.
pub(super) fn owned_text(
    source: &SourceFile,
    ty: &syn::Type,
    substitutions: &[(String, String)],
    lifetimed: &[(String, usize)],
) -> String {
    struct Edits<'s> {
        substitutions: &'s [(String, String)],
        lifetimed: &'s [(String, usize)],
        edits: Vec<(proc_macro2::Span, String)>,
    }
    impl<'ast> Visit<'ast> for Edits<'_> {
        fn visit_lifetime(&mut self, lifetime: &'ast syn::Lifetime) {
            self.edits.push((lifetime.span(), "'static".to_owned()));
        }
        fn visit_type_path(&mut self, path: &'ast syn::TypePath) {
            // `T` alone (not `T::Assoc` nor `x::T`): a type parameter or `Self`.
            if let (None, Some(ident)) = (&path.qself, path.path.get_ident()) {
                if let Some((_, text)) = self.substitutions.iter().find(|(name, _)| ident == name) {
                    self.edits.push((ident.span(), text.clone()));
                    return;
                }
            }
            // `T::Assoc`: named through the snippet's trait for it.
            if let Some((parameter, assoc)) = projection(path) {
                if let Some((_, text)) = self
                    .substitutions
                    .iter()
                    .find(|(name, _)| *name == parameter && name != "Self")
                {
                    let trait_name = projection_trait(&parameter, &assoc);
                    self.edits
                        .push((path.span(), format!("<{text} as {trait_name}>::Type")));
                    return;
                }
            }
            visit::visit_type_path(self, path);
        }
        fn visit_path_segment(&mut self, segment: &'ast syn::PathSegment) {
            // A type of the crate with lifetime parameters, written without
            // them (`Tokens` for `Tokens<'a>`): a field must name them.
            if let Some(edit) = static_lifetimes(segment, self.lifetimed) {
                self.edits.push(edit);
            }
            if segment.ident == "Self" {
                if let Some((_, owner)) = self.substitutions.iter().find(|(name, _)| name == "Self")
                {
                    self.edits.push((segment.ident.span(), owner.clone()));
                }
            }
            visit::visit_path_segment(self, segment);
        }
        fn visit_expr_path(&mut self, path: &'ast syn::ExprPath) {
            // A const parameter in an array length: `[f32; N]`.
            if let Some(ident) = path.path.get_ident() {
                if let Some((_, text)) = self.substitutions.iter().find(|(name, _)| ident == name) {
                    self.edits.push((ident.span(), text.clone()));
                    return;
                }
            }
            visit::visit_expr_path(self, path);
        }
    }
    let range = source.range(ty.span());
    let mut finder = Edits {
        substitutions,
        lifetimed,
        edits: Vec::new(),
    };
    finder.visit_type(ty);
    let mut edits: Vec<(std::ops::Range<usize>, String)> = finder
        .edits
        .into_iter()
        .map(|(span, text)| (source.range(span), text))
        .collect();
    edits.sort_by_key(|(at, _)| at.start);
    let mut text = String::new();
    let mut at = range.start;
    for (edit, replacement) in edits {
        if edit.start < at || edit.end > range.end {
            continue;
        }
        text.push_str(&source.text[at..edit.start]);
        text.push_str(&replacement);
        at = edit.end;
    }
    text.push_str(&source.text[at..range.end]);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// For a path segment naming a type of `lifetimed` (the crate's types with
/// lifetime parameters, and how many) without lifetimes: the edit that
/// gives it `'static` ones.
fn static_lifetimes(
    segment: &syn::PathSegment,
    lifetimed: &[(String, usize)],
) -> Option<(proc_macro2::Span, String)> {
    let (_, count) = lifetimed.iter().find(|(name, _)| segment.ident == name)?;
    let statics = vec!["'static"; *count].join(", ");
    match &segment.arguments {
        syn::PathArguments::None => Some((
            segment.ident.span(),
            format!("{}<{statics}>", segment.ident),
        )),
        syn::PathArguments::AngleBracketed(args)
            if !args
                .args
                .iter()
                .any(|a| matches!(a, syn::GenericArgument::Lifetime(_))) =>
        {
            Some((args.lt_token.span, format!("<{statics}, ")))
        }
        _ => None,
    }
}

/// `name` with `'static` for each of its lifetime parameters, when
/// `lifetimed` says it has some: `Tokens<'static>`.
pub(super) fn with_static_lifetimes(name: &str, lifetimed: &[(String, usize)]) -> String {
    match lifetimed.iter().find(|(n, _)| n == name) {
        Some((_, count)) => format!("{name}<{}>", vec!["'static"; *count].join(", ")),
        None => name.to_owned(),
    }
}

/// `(T, Assoc)` of a path `T::Assoc` (two plain segments, no `<...>`).
fn projection(path: &syn::TypePath) -> Option<(String, String)> {
    if path.qself.is_some() || path.path.leading_colon.is_some() {
        return None;
    }
    let segments: Vec<&syn::PathSegment> = path.path.segments.iter().collect();
    match segments[..] {
        [first, second] if first.arguments.is_none() && second.arguments.is_none() => {
            Some((first.ident.to_string(), second.ident.to_string()))
        }
        _ => None,
    }
}

/// The snippet's trait that names `T::Assoc` for the type given for `T`.
pub(super) fn projection_trait(parameter: &str, assoc: &str) -> String {
    format!("{assoc}Of{parameter}")
}

/// The associated types of the function's type parameters (`I::Pixel`)
/// that `ty` names, as (parameter, associated type).
pub(super) fn projections_in(
    ty: &syn::Type,
    parameters: &[String],
    out: &mut BTreeSet<(String, String)>,
) {
    struct Find<'p, 'o>(&'p [String], &'o mut BTreeSet<(String, String)>);
    impl<'ast> Visit<'ast> for Find<'_, '_> {
        fn visit_type_path(&mut self, path: &'ast syn::TypePath) {
            if let Some((parameter, assoc)) = projection(path) {
                if self.0.contains(&parameter) {
                    self.1.insert((parameter, assoc));
                    return;
                }
            }
            visit::visit_type_path(self, path);
        }
    }
    Find(parameters, out).visit_type(ty);
}

/// `ty` with each bare type parameter of `given` (`S`, not `S::Item`)
/// replaced by the type given for it.
pub(super) fn substitute(ty: &syn::Type, given: &[(String, syn::Type)]) -> syn::Type {
    struct Replace<'g>(&'g [(String, syn::Type)]);
    impl syn::visit_mut::VisitMut for Replace<'_> {
        fn visit_type_mut(&mut self, ty: &mut syn::Type) {
            if let syn::Type::Path(path) = ty {
                if let (None, Some(ident)) = (&path.qself, path.path.get_ident()) {
                    if let Some((_, given)) = self.0.iter().find(|(name, _)| ident == name) {
                        *ty = given.clone();
                        return;
                    }
                }
            }
            syn::visit_mut::visit_type_mut(self, ty);
        }
    }
    let mut ty = ty.clone();
    if !given.is_empty() {
        syn::visit_mut::VisitMut::visit_type_mut(&mut Replace(given), &mut ty);
    }
    ty
}

/// `ty` as source text on one line, every lifetime `'static`: for types
/// that come from `--type-args` rather than from the source file.
pub(super) fn type_text(ty: &syn::Type, lifetimed: &[(String, usize)]) -> String {
    struct Static<'l>(&'l [(String, usize)]);
    impl syn::visit_mut::VisitMut for Static<'_> {
        fn visit_lifetime_mut(&mut self, lifetime: &mut syn::Lifetime) {
            *lifetime = syn::Lifetime::new("'static", lifetime.span());
        }
        // A type of the crate with lifetime parameters written without
        // them: `'static` ones.
        fn visit_path_segment_mut(&mut self, segment: &mut syn::PathSegment) {
            if let Some((_, count)) = self.0.iter().find(|(name, _)| segment.ident == name) {
                let statics =
                    (0..*count).map(|_| -> syn::GenericArgument { syn::parse_quote!('static) });
                match &mut segment.arguments {
                    syn::PathArguments::None => {
                        let statics: Vec<syn::GenericArgument> = statics.collect();
                        segment.arguments =
                            syn::PathArguments::AngleBracketed(syn::parse_quote!(<#(#statics),*>));
                    }
                    syn::PathArguments::AngleBracketed(args)
                        if !args
                            .args
                            .iter()
                            .any(|a| matches!(a, syn::GenericArgument::Lifetime(_))) =>
                    {
                        for (at, lifetime) in statics.enumerate() {
                            args.args.insert(at, lifetime);
                        }
                    }
                    _ => {}
                }
            }
            syn::visit_mut::visit_path_segment_mut(self, segment);
        }
    }
    let mut ty = ty.clone();
    syn::visit_mut::VisitMut::visit_type_mut(&mut Static(lifetimed), &mut ty);
    let mut text = String::new();
    tokens_text(quote::quote!(#ty), &mut text);
    text
}

/// Tokens written as rustfmt writes a type: no spaces inside paths,
/// generics and brackets, one after a comma or a semicolon.
fn tokens_text(tokens: proc_macro2::TokenStream, out: &mut String) {
    use proc_macro2::{Delimiter, TokenTree};
    let mut previous_joint = false;
    for token in tokens {
        match token {
            TokenTree::Group(group) => {
                // `Fn(f32)`, but `&'a [u8]`, `&mut (A, B)`, `dyn (Trait)`.
                let after_word = out.ends_with(|c: char| c.is_alphanumeric() || c == '_');
                let last_word = out
                    .rsplit(|c: char| !(c.is_alphanumeric() || c == '_' || c == '\''))
                    .next()
                    .unwrap_or_default();
                let spaced = match group.delimiter() {
                    Delimiter::Bracket => after_word,
                    Delimiter::Parenthesis => {
                        after_word
                            && (last_word.starts_with('\'')
                                || matches!(last_word, "mut" | "dyn" | "impl" | "const"))
                    }
                    _ => false,
                };
                if spaced {
                    out.push(' ');
                }
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::None => ("", ""),
                };
                out.push_str(open);
                tokens_text(group.stream(), out);
                out.push_str(close);
                previous_joint = false;
            }
            TokenTree::Punct(punct) => {
                let c = punct.as_char();
                match c {
                    ',' | ';' => out.push_str(&format!("{c} ")),
                    '+' | '=' if !previous_joint => out.push_str(&format!(" {c} ")),
                    _ => out.push(c),
                }
                previous_joint = punct.spacing() == proc_macro2::Spacing::Joint;
                if c == '\'' {
                    previous_joint = true;
                }
            }
            TokenTree::Ident(ident) => {
                if out.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                    out.push(' ');
                }
                out.push_str(&ident.to_string());
                previous_joint = false;
            }
            TokenTree::Literal(literal) => {
                out.push_str(&literal.to_string());
                previous_joint = false;
            }
        }
    }
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_from_type_arguments_are_written_owned_and_tidy() {
        let text = |t: &str| type_text(&syn::parse_str::<syn::Type>(t).unwrap(), &[]);
        assert_eq!(
            text("ndarray :: ArrayView1 < '_ , f64 >"),
            "ndarray::ArrayView1<'static, f64>"
        );
        assert_eq!(text("&'a [ u8 ; 4 ]"), "&'static [u8; 4]");
        assert_eq!(text("Vec<(f32, usize)>"), "Vec<(f32, usize)>");
        assert_eq!(
            text("image::ImageBuffer<image::Rgb<u8>, Vec<u8>>"),
            "image::ImageBuffer<image::Rgb<u8>, Vec<u8>>"
        );
    }
}
