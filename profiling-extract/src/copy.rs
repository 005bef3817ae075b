//! The copy of the selected function: its bytes from the source file,
//! comments and layout kept, with the few edits a snippet needs, each
//! recorded so the README can list them: the NVTX range (on the function,
//! or around the selected statements), absolute paths for `crate::`,
//! `self::` and `super::`, and for a method the visibility a trait impl
//! does not allow.

use std::ops::Range;
use std::str::FromStr;

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use syn::spanned::Spanned;
use syn::visit::{self, Visit};

use super::select::Function;
use super::source::{ModuleLocation, SourceFile};

/// How the copy is instrumented.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Instrumentation {
    /// The production function already carries `#[nvtx_range]`: kept.
    KeptAttribute,
    /// `#[nvtx_range]` added to the function.
    AddedAttribute,
    /// A range guard around the selected statements.
    Statements {
        /// The range's name: `<function>:<start>-<end>`.
        name: String,
        /// The lines of the statements in the source file.
        first: usize,
        last: usize,
    },
}

/// The function as it goes into `target.rs`.
pub(crate) struct Copied {
    /// Indented for where it goes: column 0 for a function, 4 inside the
    /// trait impl of a method.
    pub text: String,
    /// For a method: its signature for the trait declaration, ending in `;`.
    pub trait_signature: Option<String>,
    /// The source lines copied (the doc comment is not).
    pub first_line: usize,
    pub last_line: usize,
    /// Where the production doc comment starts, when there is one.
    pub doc_line: Option<usize>,
    pub instrumentation: Instrumentation,
    /// The edits made to the copy, in words.
    pub changes: Vec<String>,
    /// Why a line range was not instrumented as statements, when it was not.
    pub range_note: Option<String>,
    /// Private helpers of the production module copied beside it
    /// ([`copy_helper`]), in source order.
    pub helpers: Vec<String>,
    /// Private `macro_rules!` macros of production the copy calls, copied
    /// before it (a macro is in scope from its definition on).
    pub macros: Vec<String>,
}

struct Edit {
    at: Range<usize>,
    text: String,
}

fn is_doc(attr: &syn::Attribute) -> bool {
    attr.path().is_ident("doc")
}

fn is_nvtx_range(attr: &syn::Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "nvtx_range")
}

/// Copies `function` from `source`. `lines` is the `--from` line range, if
/// the function was selected by one; `indent` is the column the copy goes to.
pub(crate) fn copy(
    source: &SourceFile,
    function: &Function<'_>,
    location: &ModuleLocation,
    lines: Option<(usize, usize)>,
    indent: usize,
    features: Option<&std::collections::BTreeSet<String>>,
) -> Copied {
    let sig_start = source.range(function.sig.span()).start;
    let head_start = match function.vis {
        syn::Visibility::Inherited => sig_start,
        vis => source.range(vis.span()).start,
    };
    let leading_docs = function.attrs.iter().take_while(|a| is_doc(a)).count();
    let start = function.attrs[leading_docs..]
        .first()
        .map_or(head_start, |attr| source.range(attr.span()).start);
    let end = source.range(function.block.span()).end;
    let doc_line = function
        .attrs
        .first()
        .filter(|a| is_doc(a))
        .map(|a| source.lines(a.span()).0);
    let name = function.name();
    let mut changes = Vec::new();
    let mut edits = Vec::new();

    if doc_line.is_some() {
        changes.push(
            "its doc comment is not copied: the copy's doc says where it came from".to_owned(),
        );
    }

    // The range: around the selected statements, or on the whole function.
    let statements = lines.and_then(|(first, last)| statements(source, function, first, last));
    let (instrumentation, range_note) = match (&statements, lines) {
        (Some(found), _) => {
            edits.extend(found.edits(source));
            (found.instrumentation.clone(), None)
        }
        (None, selected) => {
            let note = selected.map(|(first, last)| {
                let body_line = source.lines(function.block.span()).0;
                if first <= body_line {
                    format!("lines {first}-{last} reach outside the body of `{name}`: the whole function is instrumented")
                } else {
                    format!("lines {first}-{last} are not whole statements of one block of `{name}`: the whole function is instrumented")
                }
            });
            if function.attrs.iter().any(is_nvtx_range) {
                (Instrumentation::KeptAttribute, note)
            } else {
                // On a line of its own before the signature, indented like it.
                let before = source.before_on_line(head_start);
                let (at, text) = if !before.trim().is_empty() {
                    (head_start, "#[nvtx_range] ".to_owned())
                } else if head_start == start {
                    (head_start, format!("#[nvtx_range]\n{before}"))
                } else {
                    let line_start = head_start - before.len();
                    (line_start, format!("{before}#[nvtx_range]\n"))
                };
                edits.push(Edit { at: at..at, text });
                (Instrumentation::AddedAttribute, note)
            }
        }
    };

    if function.owner.is_some() && !matches!(function.vis, syn::Visibility::Inherited) {
        let vis = source.range(function.vis.span());
        let removed = &source.text[vis.clone()];
        edits.push(Edit {
            at: vis.start..skip_spaces(source, vis.end),
            text: String::new(),
        });
        changes.push(format!(
            "`{removed}` is removed: a method of a trait impl takes no visibility"
        ));
    }
    if let Some(constness) = &function.sig.constness {
        let at = source.range(constness.span());
        edits.push(Edit {
            at: at.start..skip_spaces(source, at.end),
            text: String::new(),
        });
        changes.push("`const` is removed: an NVTX range opens at run time".to_owned());
    }

    if let Some(features) = features {
        cfg_edits(source, function, features, &mut edits, &mut changes);
    }

    let rewritten = rewrite_paths(
        source,
        sig_start..end,
        location,
        &function.inline_modules,
        false,
    );
    if !rewritten.is_empty() {
        let lines: Vec<String> = rewritten
            .iter()
            .map(|edit| source.line_of(edit.at.start).to_string())
            .collect();
        changes.push(format!(
            "`crate::`, `self::` and `super::` paths are written from the crate's name (line{} {})",
            if lines.len() == 1 { "" } else { "s" },
            lines.join(", ")
        ));
        edits.extend(rewritten);
    }

    let source_indent = indentation(source, start);
    let multiline_literal = has_multiline_literal(&source.text[start..end]);
    let text = apply(&source.text, start..end, &mut edits);
    let text = reindent(&text, source_indent, indent, multiline_literal);

    let trait_signature = function
        .owner
        .map(|_| trait_signature(source, function, source_indent, indent, multiline_literal));

    Copied {
        text,
        trait_signature,
        first_line: source.line_of(start),
        last_line: source.line_of(end.max(start + 1) - 1),
        doc_line,
        instrumentation,
        changes,
        range_note,
        helpers: Vec::new(),
        macros: Vec::new(),
    }
}

/// The `cfg`s of the function and its body, decided by the production
/// crate's features ([`crate::cfg`]), as edits; the README lists what was
/// kept and left out. A function that production compiles out is refused
/// before copying ([`crate::cfg::function_is_off`]).
fn cfg_edits(
    source: &SourceFile,
    function: &Function<'_>,
    features: &std::collections::BTreeSet<String>,
    edits: &mut Vec<Edit>,
    changes: &mut Vec<String>,
) {
    let mut kept = attribute_cfg_edits(source, function.attrs, features, edits);
    let body = body_cfg_edits(source, function.block, features, edits);
    kept.extend(body.kept);
    if !kept.is_empty() {
        changes.push(format!(
            "`cfg` attributes that production's features turn on are removed ({})",
            kept.join(", ")
        ));
    }
    if !body.left_out.is_empty() {
        changes.push(format!(
            "code that production's features turn off is left out ({})",
            body.left_out.join(", ")
        ));
    }
}

/// The edits of the `#[cfg]`s among `attrs` that production's features
/// decide: on, the attribute goes; partly decided, what is left of it
/// stays. (Off is refused, or leaves the item out, before copying.) The
/// lines of those removed.
fn attribute_cfg_edits(
    source: &SourceFile,
    attrs: &[syn::Attribute],
    features: &std::collections::BTreeSet<String>,
    edits: &mut Vec<Edit>,
) -> Vec<String> {
    let mut kept = Vec::new();
    for attr in attrs {
        let Some(predicate) = crate::cfg::cfg_predicate(attr) else {
            continue;
        };
        let at = source.range(attr.span());
        match crate::cfg::decide(&predicate, features) {
            crate::cfg::Decided::On => {
                kept.push(format!("line {}", source.line_of(at.start)));
                edits.push(Edit {
                    at: whole_lines(source, at),
                    text: String::new(),
                });
            }
            crate::cfg::Decided::Platform(rest) => edits.push(Edit {
                at,
                text: format!("#[cfg({rest})]"),
            }),
            crate::cfg::Decided::Off => {}
        }
    }
    kept
}

/// The edits of the `cfg`s inside `block` ([`crate::cfg::body_edits`]),
/// a removed node taking its whole lines; what they kept and left out, in
/// words.
fn body_cfg_edits(
    source: &SourceFile,
    block: &syn::Block,
    features: &std::collections::BTreeSet<String>,
    edits: &mut Vec<Edit>,
) -> crate::cfg::CfgEdits {
    let range = |span: proc_macro2::Span| source.range(span);
    let line = |span: proc_macro2::Span| source.lines(span).0;
    let mut body = crate::cfg::body_edits(block, features, &range, &line);
    for edit in std::mem::take(&mut body.edits) {
        let at = if edit.text.is_empty() {
            whole_lines(source, edit.at)
        } else {
            edit.at
        };
        edits.push(Edit {
            at,
            text: edit.text,
        });
    }
    body
}

/// `at`, widened to the whole lines it covers when nothing else is on them:
/// removing it then leaves no blank line.
fn whole_lines(source: &SourceFile, at: Range<usize>) -> Range<usize> {
    let before = source.before_on_line(at.start);
    let after = source.after_on_line(at.end);
    if before.trim().is_empty() && after.trim().is_empty() {
        let start = at.start - before.len();
        let mut end = at.end + after.len();
        if source.text[end..].starts_with("\r\n") {
            end += 2;
        } else if source.text[end..].starts_with('\n') {
            end += 1;
        }
        start..end
    } else {
        at.start..skip_spaces(source, at.end)
    }
}

/// A private item of the production module the copy needs, copied beside
/// it: its text (doc comment and attributes kept) with the same edits as
/// the copy (`crate::`, `self::`, `super::` paths from the crate's name;
/// `cfg`s decided by production's features), after a line that says where
/// it comes from. `None` when production's features compile it out.
pub(crate) fn copy_helper(
    source: &SourceFile,
    item: &syn::Item,
    location: &ModuleLocation,
    inline: &[String],
    features: Option<&std::collections::BTreeSet<String>>,
) -> Option<String> {
    let attrs: &[syn::Attribute] = match item {
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        _ => &[],
    };
    let range = source.range(item.span());
    let mut edits = Vec::new();
    if let Some(features) = features {
        if crate::cfg::function_is_off(attrs, features).is_some() {
            return None;
        }
        attribute_cfg_edits(source, attrs, features, &mut edits);
        if let syn::Item::Fn(function) = item {
            body_cfg_edits(source, &function.block, features, &mut edits);
        }
    }
    let inline_module = matches!(item, syn::Item::Mod(_));
    edits.extend(rewrite_paths(
        source,
        range.clone(),
        location,
        inline,
        inline_module,
    ));
    let text = apply(&source.text, range.clone(), &mut edits);
    let text = reindent(
        &text,
        indentation(source, range.start),
        0,
        has_multiline_literal(&source.text[range.clone()]),
    );
    let (first, last) = source.lines(item.span());
    let module = location.path(inline);
    let note = crate::text::wrap(
        &format!(
            "Copied helper: private to `{module}` ({}:{first}-{last}), so the snippet cannot \
             call it there. The copy above calls it; a change here is a change to the profile.",
            source.display
        ),
        100,
        "//",
    );
    Some(format!("{note}{text}\n"))
}

/// Methods of a type of the crate that are not `pub` and that the copied
/// code calls (`methods`: indices into the impl block `imp`), given back
/// through a trait of the snippet's named `trait_name`: declared with the
/// impl block's generics and implemented for the production type with
/// production's bodies (paths made absolute, `cfg`s decided), after a line
/// that says where they come from. Method-call syntax finds the trait's
/// method where the production one is out of reach, so the calls build
/// unchanged. `None` when production's features compile them all out.
pub(crate) fn copy_methods(
    source: &SourceFile,
    imp: &syn::ItemImpl,
    methods: &std::collections::BTreeSet<usize>,
    location: &ModuleLocation,
    trait_name: &str,
    features: Option<&std::collections::BTreeSet<String>>,
) -> Option<String> {
    let text_of = |range: Range<usize>| {
        let mut edits = rewrite_paths(source, range.clone(), location, &[], false);
        apply(&source.text, range, &mut edits)
    };
    let mut declarations = String::new();
    let mut definitions = String::new();
    let mut names = Vec::new();
    let (mut first, mut last) = (usize::MAX, 0);
    for &index in methods {
        let Some(syn::ImplItem::Fn(method)) = imp.items.get(index) else {
            continue;
        };
        if let Some(features) = features {
            if crate::cfg::function_is_off(&method.attrs, features).is_some() {
                continue;
            }
        }
        // A trait's methods cannot be `const`.
        let start = match &method.sig.constness {
            Some(constness) => skip_spaces(source, source.range(constness.span).end),
            None => source.range(method.sig.span()).start,
        };
        let signature_end = source.range(method.sig.span()).end;
        let end = source.range(method.block.span()).end;
        let line = source.line_text(source.line_of(start));
        let column = line.len() - line.trim_start().len();
        let multiline = has_multiline_literal(&source.text[start..end]);
        let mut edits = rewrite_paths(source, start..end, location, &[], false);
        if let Some(features) = features {
            body_cfg_edits(source, &method.block, features, &mut edits);
        }
        let body = apply(&source.text, start..end, &mut edits);
        definitions.push_str(&reindent(&body, column, 4, multiline));
        definitions.push_str("\n\n");
        let mut declaration = rewrite_paths(source, start..signature_end, location, &[], false);
        declaration.extend(declaration_edits(source, &method.sig));
        let declaration = apply(&source.text, start..signature_end, &mut declaration);
        declarations.push_str(&reindent(&declaration, column, 4, false));
        declarations.push_str(";\n");
        names.push(format!("`{}`", method.sig.ident));
        let (from, to) = source.lines(method.span());
        first = first.min(from);
        last = last.max(to);
    }
    if names.is_empty() {
        return None;
    }
    let generics = match (&imp.generics.lt_token, &imp.generics.gt_token) {
        (Some(lt), Some(gt)) => text_of(source.range(lt.span).start..source.range(gt.span).end),
        _ => String::new(),
    };
    let arguments: Vec<String> = imp
        .generics
        .params
        .iter()
        .map(|param| match param {
            syn::GenericParam::Lifetime(l) => l.lifetime.to_string(),
            syn::GenericParam::Type(t) => t.ident.to_string(),
            syn::GenericParam::Const(c) => c.ident.to_string(),
        })
        .collect();
    let arguments = if arguments.is_empty() {
        String::new()
    } else {
        format!("<{}>", arguments.join(", "))
    };
    let open = match &imp.generics.where_clause {
        Some(clause) => format!("\n{}\n{{", text_of(source.range(clause.span()))),
        None => " {".to_owned(),
    };
    let self_ty = text_of(source.range(imp.self_ty.span()));
    let owner = type_name_of(&imp.self_ty);
    let module = location.path(&[]);
    let note = crate::text::wrap(
        &format!(
            "Copied methods: {} of `{module}::{owner}` ({}:{first}-{last}) {} not `pub`, so the \
             snippet cannot call {} on production's type; this trait gives {} back with \
             production's bodies. A change here is a change to the profile.",
            names.join(", "),
            source.display,
            if names.len() == 1 { "is" } else { "are" },
            if names.len() == 1 { "it" } else { "them" },
            if names.len() == 1 { "it" } else { "them" },
        ),
        100,
        "//",
    );
    Some(format!(
        "{note}trait {trait_name}{generics}{open}\n{declarations}}}\n\nimpl{generics} {trait_name}{arguments} for {self_ty}{open}\n{}}}\n",
        definitions.trim_end_matches('\n').to_owned() + "\n"
    ))
}

/// The last segment of a type's path: `Point` for `Point<T>`.
fn type_name_of(ty: &syn::Type) -> String {
    crate::select::type_name(ty).unwrap_or_else(|| "Self".to_owned())
}

/// A module of the production crate declared at its root without `pub`
/// (`mod utils;`), copied whole into the snippet under the same name, as
/// an inline module: its file's text, with `crate::` and `super::` paths
/// to the rest of the crate written from the crate's name (those into the
/// module itself stay: it has the same place in the snippet).
pub(crate) fn copy_private_module(
    name: &str,
    file: &std::path::Path,
    shown: &str,
    crate_ident: &str,
    files: &crate::crate_files::CrateFiles,
) -> Option<String> {
    let text = files.text(file).ok()?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let tokens = TokenStream::from_str(text).ok()?;
    // Byte ranges of spans are from the start of the text parsed.
    fn walk(tokens: TokenStream, name: &str, crate_ident: &str, edits: &mut Vec<Edit>) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        for (index, token) in tokens.iter().enumerate() {
            match token {
                TokenTree::Group(group) => walk(group.stream(), name, crate_ident, edits),
                TokenTree::Ident(ident) if ident == "crate" || ident == "super" => {
                    let path_follows = matches!(
                        (tokens.get(index + 1), tokens.get(index + 2), tokens.get(index + 3)),
                        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)), Some(TokenTree::Ident(next)))
                            if a.as_char() == ':' && b.as_char() == ':' && next != name
                    );
                    if path_follows {
                        edits.push(Edit {
                            at: ident.span().byte_range(),
                            text: crate_ident.to_owned(),
                        });
                    }
                }
                _ => {}
            }
        }
    }
    let mut edits = Vec::new();
    walk(tokens, name, crate_ident, &mut edits);
    let body = apply(text, 0..text.len(), &mut edits);
    let body = reindent(body.trim_end(), 0, 4, has_multiline_literal(text));
    let note = crate::text::wrap(
        &format!(
            "Copied module: `{crate_ident}::{name}` is private to its crate ({shown}), so the \
             snippet cannot use it there; the copy above uses it. A change here is a change to \
             the profile."
        ),
        100,
        "//",
    );
    Some(format!(
        "{note}#[allow(dead_code, unused_imports)]\nmod {name} {{\n{body}\n}}\n"
    ))
}

fn skip_spaces(source: &SourceFile, mut at: usize) -> usize {
    let bytes = source.text.as_bytes();
    while at < bytes.len() && (bytes[at] == b' ' || bytes[at] == b'\t') {
        at += 1;
    }
    at
}

/// The columns of whitespace before `at` on its line; 0 when other code
/// comes first.
fn indentation(source: &SourceFile, at: usize) -> usize {
    let before = source.before_on_line(at);
    if before.chars().all(|c| c == ' ') {
        before.len()
    } else {
        0
    }
}

/// The text of `range` with `edits` (absolute offsets, none overlapping)
/// applied.
fn apply(text: &str, range: Range<usize>, edits: &mut [Edit]) -> String {
    edits.sort_by_key(|edit| (edit.at.start, edit.at.end));
    let mut out = String::new();
    let mut at = range.start;
    for edit in edits.iter() {
        let start = edit.at.start.clamp(range.start, range.end);
        if start < at {
            continue;
        }
        out.push_str(&text[at..start]);
        out.push_str(&edit.text);
        at = edit.at.end.clamp(start, range.end);
    }
    out.push_str(&text[at..range.end]);
    out
}

/// Moves `text` (which starts `from` columns in) to start `to` columns in:
/// the first line gets the new indentation, the others shift by the
/// difference, unless a string literal spans lines (shifting would change
/// it) or a line is not indented enough.
fn reindent(text: &str, from: usize, to: usize, multiline_literal: bool) -> String {
    let mut lines = text.split('\n');
    let mut out = " ".repeat(to);
    out.push_str(lines.next().unwrap_or(""));
    let rest: Vec<&str> = lines.collect();
    let shift_left = from.saturating_sub(to);
    let shift_right = to.saturating_sub(from);
    let can_shift = !multiline_literal
        && rest
            .iter()
            .all(|line| line.trim().is_empty() || line.starts_with(&" ".repeat(shift_left)));
    for line in rest {
        out.push('\n');
        if !can_shift || line.trim().is_empty() {
            out.push_str(if can_shift { line.trim_end() } else { line });
        } else {
            out.push_str(&" ".repeat(shift_right));
            out.push_str(&line[shift_left..]);
        }
    }
    out
}

fn has_multiline_literal(text: &str) -> bool {
    fn walk(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|token| match token {
            TokenTree::Literal(literal) => literal.to_string().contains('\n'),
            TokenTree::Group(group) => walk(group.stream()),
            _ => false,
        })
    }
    TokenStream::from_str(text).map_or(true, walk)
}

/// Rewrites the paths in `range` that start with `crate`, `self` or
/// `super`, which would name the snippets crate once copied, into paths
/// from the production crate's name.
fn rewrite_paths(
    source: &SourceFile,
    range: Range<usize>,
    location: &ModuleLocation,
    inline: &[String],
    keep_relative: bool,
) -> Vec<Edit> {
    if location.crate_ident.is_none() {
        return Vec::new();
    }
    let Ok(tokens) = TokenStream::from_str(&source.text[range.clone()]) else {
        return Vec::new();
    };
    let here: Vec<String> = location
        .path(inline)
        .split("::")
        .map(str::to_owned)
        .collect();
    let mut edits = Vec::new();
    rewrite_in(tokens, range.start, &here, keep_relative, &mut edits);
    edits
}

/// With `keep_relative`, only `crate::` paths are rewritten: `self::` and
/// `super::` in an inline module copied whole keep their meaning, the
/// module having the same place relative to the copy.
fn rewrite_in(
    tokens: TokenStream,
    base: usize,
    here: &[String],
    keep_relative: bool,
    edits: &mut Vec<Edit>,
) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let is_path_sep = |i: usize| {
        matches!((tokens.get(i), tokens.get(i + 1)),
            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':')
    };
    let ident_at = |i: usize| match tokens.get(i) {
        Some(TokenTree::Ident(ident)) => Some(ident.to_string()),
        _ => None,
    };
    let mut i = 0;
    while i < tokens.len() {
        if let TokenTree::Group(group) = &tokens[i] {
            if group.delimiter() != Delimiter::None || !group.stream().is_empty() {
                rewrite_in(group.stream(), base, here, keep_relative, edits);
            }
            i += 1;
            continue;
        }
        let after_separator = i >= 2 && is_path_sep(i - 2);
        let after_dollar = matches!(i.checked_sub(1).and_then(|j| tokens.get(j)),
            Some(TokenTree::Punct(p)) if p.as_char() == '$');
        let Some(first) = ident_at(i) else {
            i += 1;
            continue;
        };
        if after_separator || after_dollar || !is_path_sep(i + 1) {
            i += 1;
            continue;
        }
        let replacement: Vec<String> = match first.as_str() {
            "crate" => here[..1].to_vec(),
            "self" | "super" if keep_relative => {
                i += 1;
                continue;
            }
            "self" => here.to_vec(),
            "super" => {
                let mut ups = 1;
                while ident_at(i + ups * 3).as_deref() == Some("super")
                    && is_path_sep(i + ups * 3 - 2)
                {
                    ups += 1;
                }
                let keep = here.len().saturating_sub(ups).max(1);
                let start = tokens[i].span().byte_range().start;
                let end = tokens[i + (ups - 1) * 3].span().byte_range().end;
                edits.push(Edit {
                    at: base + start..base + end,
                    text: here[..keep].join("::"),
                });
                i += (ups - 1) * 3 + 1;
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        };
        let span = tokens[i].span().byte_range();
        edits.push(Edit {
            at: base + span.start..base + span.end,
            text: replacement.join("::"),
        });
        i += 1;
    }
}

/// The method's signature for the trait the snippet declares: patterns
/// other than plain names become `_` (a declaration takes no patterns),
/// `mut` on a name is dropped, and so are `const` and the visibility.
fn trait_signature(
    source: &SourceFile,
    function: &Function<'_>,
    source_indent: usize,
    indent: usize,
    multiline_literal: bool,
) -> String {
    let sig = function.sig;
    let range = source.range(sig.span());
    let mut edits = Vec::new();
    if let Some(constness) = &sig.constness {
        let at = source.range(constness.span());
        edits.push(Edit {
            at: at.start..skip_spaces(source, at.end),
            text: String::new(),
        });
    }
    edits.extend(declaration_edits(source, sig));
    let mut text = apply(&source.text, range, &mut edits);
    text.push(';');
    reindent(&text, source_indent, indent, multiline_literal)
}

/// The edits that make `sig` a declaration without a body: parameters
/// are plain names (`mut a` is `a`, a pattern `_`), `mut self` is `self`.
fn declaration_edits(source: &SourceFile, sig: &syn::Signature) -> Vec<Edit> {
    let mut edits = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Typed(typed) => {
                let text = match &*typed.pat {
                    syn::Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => {
                        pat.ident.to_string()
                    }
                    _ => "_".to_owned(),
                };
                edits.push(Edit {
                    at: source.range(typed.pat.span()),
                    text,
                });
            }
            syn::FnArg::Receiver(receiver) if receiver.reference.is_none() => {
                if let Some(mutability) = &receiver.mutability {
                    let at = source.range(mutability.span());
                    edits.push(Edit {
                        at: at.start..skip_spaces(source, at.end),
                        text: String::new(),
                    });
                }
            }
            syn::FnArg::Receiver(_) => {}
        }
    }
    edits
}

/// Statements of one block that exactly fill a line range.
struct Statements {
    instrumentation: Instrumentation,
    /// Where the guard opens: the start of the range's first line.
    open_at: usize,
    /// Where it is dropped: after the last statement's line, unless the
    /// last statement ends the block or leaves it.
    close_at: Option<usize>,
    indent: String,
}

impl Statements {
    fn edits(&self, _source: &SourceFile) -> Vec<Edit> {
        let Instrumentation::Statements { name, .. } = &self.instrumentation else {
            return Vec::new();
        };
        let mut edits = vec![Edit {
            at: self.open_at..self.open_at,
            text: format!(
                "{}let _snippet_range = profiling_range({name:?});\n",
                self.indent
            ),
        }];
        if let Some(at) = self.close_at {
            edits.push(Edit {
                at: at..at,
                text: format!("{}drop(_snippet_range);\n", self.indent),
            });
        }
        edits
    }
}

#[derive(Default)]
struct Blocks<'a>(Vec<&'a syn::Block>);

impl<'a> Visit<'a> for Blocks<'a> {
    fn visit_block(&mut self, block: &'a syn::Block) {
        self.0.push(block);
        visit::visit_block(self, block);
    }
}

fn statements(
    source: &SourceFile,
    function: &Function<'_>,
    start: usize,
    end: usize,
) -> Option<Statements> {
    let mut blocks = Blocks::default();
    blocks.visit_block(function.block);
    let is_filler = |line: usize| {
        let text = source.line_text(line).trim();
        text.is_empty() || text.starts_with("//")
    };
    for block in blocks.0 {
        let spans: Vec<(usize, usize, &syn::Stmt)> = block
            .stmts
            .iter()
            .map(|stmt| {
                let (first, last) = source.lines(stmt.span());
                (first, last, stmt)
            })
            .filter(|(first, last, _)| *first <= end && start <= *last)
            .collect();
        let (Some(&(first, _, first_stmt)), Some(&(_, last, last_stmt))) =
            (spans.first(), spans.last())
        else {
            continue;
        };
        if first < start || last > end {
            continue;
        }
        let first_at = source.range(first_stmt.span()).start;
        let last_at = source.range(last_stmt.span()).end;
        let after = source.after_on_line(last_at).trim();
        if !source.before_on_line(first_at).trim().is_empty()
            || !(after.is_empty() || after.starts_with("//"))
            || !(start..first).all(is_filler)
            || !(last + 1..=end).all(is_filler)
        {
            continue;
        }
        let is_tail = std::ptr::eq(last_stmt, block.stmts.last()?)
            && matches!(last_stmt, syn::Stmt::Expr(_, None));
        let close_at = (!is_tail && !leaves_block(last_stmt)).then(|| source.line_start(last + 1));
        let name = if start == end {
            format!("{}:{start}", function.name())
        } else {
            format!("{}:{start}-{end}", function.name())
        };
        return Some(Statements {
            instrumentation: Instrumentation::Statements { name, first, last },
            open_at: source.line_start(start),
            close_at,
            indent: source.before_on_line(first_at).to_owned(),
        });
    }
    None
}

/// Whether a statement always leaves its block (after it, a `drop` would
/// be unreachable).
fn leaves_block(stmt: &syn::Stmt) -> bool {
    let diverging_macro = |mac: &syn::Macro| {
        mac.path.segments.last().is_some_and(|s| {
            ["panic", "unreachable", "todo", "unimplemented", "bail"]
                .contains(&s.ident.to_string().as_str())
        })
    };
    match stmt {
        syn::Stmt::Expr(expr, _) => match expr {
            syn::Expr::Return(_) | syn::Expr::Break(_) | syn::Expr::Continue(_) => true,
            syn::Expr::Macro(mac) => diverging_macro(&mac.mac),
            _ => false,
        },
        syn::Stmt::Macro(mac) => diverging_macro(&mac.mac),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reindent_shifts_every_line_but_keeps_blank_ones_empty() {
        let text = "fn f() {\n        x();\n\n    }";
        assert_eq!(reindent(text, 4, 0, false), "fn f() {\n    x();\n\n}");
        assert_eq!(
            reindent("fn f() {\n    x();\n}", 0, 4, false),
            "    fn f() {\n        x();\n    }"
        );
    }

    #[test]
    fn reindent_leaves_lines_alone_when_a_literal_spans_lines() {
        let text = "fn f() {\n        x();\n    }";
        assert_eq!(reindent(text, 4, 0, true), "fn f() {\n        x();\n    }");
    }

    #[test]
    fn multiline_literals_are_found() {
        assert!(has_multiline_literal("fn f() { g(\"a\n b\") }"));
        assert!(!has_multiline_literal("fn f() {\n g(\"a b\")\n}"));
    }
}

#[cfg(test)]
mod statement_tests {
    use super::*;
    use crate::select::{find, Selector};

    const SOURCE: &str = "\
fn f(x: &mut Vec<u32>) -> usize {
    let a = 1;
    // push
    x.push(a);
    if a > 0 {
        x.push(2);
        return x.len();
    }
    x.len()
}
";

    fn copy_lines(start: usize, end: usize) -> Copied {
        let location = ModuleLocation {
            crate_ident: Some("lib".to_owned()),
            modules: vec!["m".to_owned()],
            unreachable: None,
            lib_root: None,
            files: crate::crate_files::CrateFiles::new(std::path::Path::new(".")),
        };
        let source = SourceFile::parse("m.rs".to_owned(), SOURCE.to_owned()).unwrap();
        let function = find(&source, &Selector::Lines { start, end }).unwrap();
        copy(&source, &function, &location, Some((start, end)), 0, None)
    }

    #[test]
    fn whole_statements_get_a_guard_and_a_drop_after_the_last() {
        let copied = copy_lines(3, 4);
        assert_eq!(
            copied.text,
            SOURCE
                .trim_end()
                .replace(
                    "    // push\n",
                    "    let _snippet_range = profiling_range(\"f:3-4\");\n    // push\n"
                )
                .replace("x.push(a);\n", "x.push(a);\n    drop(_snippet_range);\n")
        );
        assert_eq!(
            copied.instrumentation,
            Instrumentation::Statements {
                name: "f:3-4".to_owned(),
                first: 4,
                last: 4
            }
        );
    }

    #[test]
    fn statements_that_leave_the_block_or_end_it_get_no_drop() {
        let leaving = copy_lines(6, 7);
        assert!(leaving.text.contains("        let _snippet_range = profiling_range(\"f:6-7\");\n        x.push(2);\n        return x.len();\n    }"), "{}", leaving.text);
        let tail = copy_lines(9, 9);
        assert!(
            tail.text
                .ends_with("    let _snippet_range = profiling_range(\"f:9\");\n    x.len()\n}"),
            "{}",
            tail.text
        );
        assert!(!tail.text.contains("drop("));
    }

    #[test]
    fn part_of_a_statement_instruments_the_whole_function() {
        let copied = copy_lines(5, 6);
        assert_eq!(copied.instrumentation, Instrumentation::AddedAttribute);
        assert!(
            copied.text.starts_with("#[nvtx_range]\nfn f("),
            "{}",
            copied.text
        );
        assert_eq!(
            copied.range_note.as_deref(),
            Some("lines 5-6 are not whole statements of one block of `f`: the whole function is instrumented")
        );
    }
}
