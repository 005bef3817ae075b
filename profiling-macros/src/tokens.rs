//! Tokens written back as text the way a reader writes them: type and
//! factory names for the registry, and the calls a target's attribute names.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use quote::ToTokens;

/// Tokens as a reader writes them: `targets::Smoke<f32>`, `Vec<(u8, u8)>`,
/// `&'static str`, with no spaces around `::` or inside `<...>`.
pub(crate) fn compact_tokens(tokens: &impl ToTokens) -> String {
    let mut pieces = Vec::new();
    flatten(tokens.to_token_stream(), &mut pieces);
    let mut out = String::new();
    let mut previous: Option<&Piece> = None;
    for piece in &pieces {
        if let Some(previous) = previous {
            let spaced = matches!((previous, piece), (Piece::Word(_), Piece::Word(_)))
                || matches!(piece, Piece::Op(op) if is_spaced_op(op))
                || matches!(previous, Piece::Op(op) if is_spaced_op(op) || op == "," || op == ";");
            if spaced {
                out.push(' ');
            }
        }
        match piece {
            Piece::Word(text) | Piece::Op(text) => out.push_str(text),
            Piece::Open(c) | Piece::Close(c) => out.push(*c),
        }
        previous = Some(piece);
    }
    out
}

fn is_spaced_op(op: &str) -> bool {
    matches!(op, "->" | "+" | "=" | "=>")
}

enum Piece {
    /// An identifier or a literal (a lifetime is the op `'` and a word).
    Word(String),
    /// Punctuation, joint characters together: `::`, `->`, `&`.
    Op(String),
    Open(char),
    Close(char),
}

fn flatten(tokens: TokenStream, out: &mut Vec<Piece>) {
    // A lifetime is a joint `'` then its name: the `'` is pending when the
    // name comes, and nothing puts a space between the two.
    let mut pending_op = String::new();
    for tree in tokens {
        match tree {
            TokenTree::Punct(punct) => {
                pending_op.push(punct.as_char());
                if punct.spacing() == Spacing::Alone {
                    flush(&mut pending_op, out);
                }
            }
            TokenTree::Ident(ident) => {
                flush(&mut pending_op, out);
                out.push(Piece::Word(ident.to_string()));
            }
            TokenTree::Literal(literal) => {
                flush(&mut pending_op, out);
                out.push(Piece::Word(literal.to_string()));
            }
            TokenTree::Group(group) => {
                flush(&mut pending_op, out);
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => (Some('('), Some(')')),
                    Delimiter::Bracket => (Some('['), Some(']')),
                    Delimiter::Brace => (Some('{'), Some('}')),
                    Delimiter::None => (None, None),
                };
                out.extend(open.map(Piece::Open));
                flatten(group.stream(), out);
                out.extend(close.map(Piece::Close));
            }
        }
    }
    flush(&mut pending_op, out);
}

fn flush(pending_op: &mut String, out: &mut Vec<Piece>) {
    if !pending_op.is_empty() {
        out.push(Piece::Op(std::mem::take(pending_op)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::{parse_quote, Type};

    fn compact_type(ty: Type) -> String {
        compact_tokens(&ty)
    }

    #[test]
    fn compact_tokens_keeps_lifetimes_whole() {
        assert_eq!(compact_type(parse_quote!(Ref<'a, T>)), "Ref<'a, T>");
        assert_eq!(compact_type(parse_quote!(&'static str)), "&'static str");
    }

    #[test]
    fn compact_tokens_removes_spaces_inside_paths() {
        assert_eq!(compact_type(parse_quote!(SmokeTensor)), "SmokeTensor");
        assert_eq!(
            compact_type(parse_quote!(targets::SmokeTensor)),
            "targets::SmokeTensor"
        );
        assert_eq!(compact_type(parse_quote!(::a::b::C<f32>)), "::a::b::C<f32>");
        assert_eq!(compact_type(parse_quote!(Vec<Vec<u8>>)), "Vec<Vec<u8>>");
        assert_eq!(
            compact_type(parse_quote!(<T as Trait>::Assoc)),
            "<T as Trait>::Assoc"
        );
    }

    #[test]
    fn compact_tokens_keeps_spaces_a_reader_expects() {
        assert_eq!(
            compact_type(parse_quote!(Pair<(u8, u16), [f32; 4]>)),
            "Pair<(u8, u16), [f32; 4]>"
        );
        assert_eq!(
            compact_type(parse_quote!(&'static mut str)),
            "&'static mut str"
        );
        assert_eq!(
            compact_type(parse_quote!(Box<dyn Fn(u8) -> u8 + Send>)),
            "Box<dyn Fn(u8) -> u8 + Send>"
        );
        assert_eq!(
            compact_type(parse_quote!(Iter<Item = u8>)),
            "Iter<Item = u8>"
        );
    }
}
