//! What each attribute is written on, and whether it can go there.
//!
//! `#[nvtx_range]` needs a function with a synchronous, non-const body;
//! `#[profile_target]` needs `impl ProfileTarget for ConcreteType`.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::{ForeignItemFn, Item, ItemFn, ItemImpl, Type};

/// The function under `#[nvtx_range]`, checked: it has a body, and the body
/// can hold a range guard.
pub(crate) fn range_fn(tokens: TokenStream) -> syn::Result<ItemFn> {
    let function = match syn::parse2::<ItemFn>(tokens.clone()) {
        Ok(function) => function,
        Err(error) => return Err(not_a_range_fn(tokens).unwrap_or(error)),
    };
    let sig = &function.sig;
    if let Some(asyncness) = sig.asyncness {
        return Err(syn::Error::new(
            asyncness.span,
            "`#[nvtx_range]` cannot wrap an `async fn`: an NVTX push/pop range belongs to the thread \
             that opened it, and an async body may move between threads and interleave with other tasks \
             at each `.await`\nput the range on the synchronous work instead: a `#[nvtx_range]` function \
             called from the async body, or `let _range = profiling_range(\"...\");` in a block without `.await`",
        ));
    }
    if let Some(constness) = sig.constness {
        return Err(syn::Error::new(
            constness.span,
            "`#[nvtx_range]` cannot wrap a `const fn`: opening a range is a call into NVTX at run time, \
             which a const body cannot make\nremove `const`, or open the range where the function is \
             called at run time",
        ));
    }
    Ok(function)
}

/// The error for tokens that are not a function with a body, when they can
/// be told apart: a declaration, or another kind of item.
fn not_a_range_fn(tokens: TokenStream) -> Option<syn::Error> {
    if let Ok(declaration) = syn::parse2::<ForeignItemFn>(tokens.clone()) {
        let sig = &declaration.sig;
        let semi = &declaration.semi_token;
        return Some(syn::Error::new_spanned(
            quote!(#sig #semi),
            format!(
                "`#[nvtx_range]` wraps a function body, and `fn {}` has none\nput the attribute on the \
                 functions that implement it, or give this declaration a default body",
                sig.ident
            ),
        ));
    }
    let item = syn::parse2::<Item>(tokens).ok()?;
    let (what, span) = describe(&item);
    Some(syn::Error::new(
        span,
        format!("`#[nvtx_range]` goes on a function or a method with a body, not on {what}"),
    ))
}

/// What an attribute that registers an impl block says about it.
pub(crate) struct Registering {
    /// `profile_target`.
    pub attribute: &'static str,
    /// `ProfileTarget`.
    pub trait_name: &'static str,
    /// `YourType`: the type in "goes on an `impl ... for YourType` block".
    pub sample_type: &'static str,
    /// `target`: what a negative impl says the type is not.
    pub noun: &'static str,
    /// "a profile target": what must be a concrete type.
    pub kind: &'static str,
    /// Why a generic impl cannot be registered.
    pub why_concrete: &'static str,
    /// Said after "implement `Trait` for each concrete type".
    pub each: &'static str,
}

/// `#[profile_target]`'s impl block.
pub(crate) const TARGET: Registering = Registering {
    attribute: "profile_target",
    trait_name: "ProfileTarget",
    sample_type: "YourType",
    noun: "target",
    kind: "a profile target",
    why_concrete: "the runner builds a target from its name alone",
    each: " to profile",
};

/// `#[data_source]`'s impl block.
pub(crate) const SOURCE: Registering = Registering {
    attribute: "data_source",
    trait_name: "RecordSource",
    sample_type: "YourSource",
    noun: "data source",
    kind: "a data source",
    why_concrete: "a config picks a source by its name alone",
    each: "",
};

/// The impl block under `#[profile_target]`, checked: a positive impl of
/// `ProfileTarget` with no generic parameters. (`unsafe impl` is left to
/// the compiler, whose error says to remove `unsafe`.)
pub(crate) fn target_impl(tokens: TokenStream) -> syn::Result<ItemImpl> {
    registered_impl(tokens, &TARGET)
}

/// The impl block under `#[data_source]`, checked: a positive impl of
/// `RecordSource` with no generic parameters.
pub(crate) fn source_impl(tokens: TokenStream) -> syn::Result<ItemImpl> {
    registered_impl(tokens, &SOURCE)
}

/// The impl block under the attribute `what` describes, checked: a
/// positive impl of its trait with no generic parameters.
fn registered_impl(tokens: TokenStream, what: &Registering) -> syn::Result<ItemImpl> {
    let Registering {
        attribute,
        trait_name,
        ..
    } = what;
    let item = syn::parse2::<Item>(tokens)?;
    let block = match item {
        Item::Impl(block) => block,
        other => {
            let (item, span) = describe(&other);
            return Err(syn::Error::new(
                span,
                format!(
                    "`#[{attribute}]` goes on an `impl {trait_name} for {}` block, not on {item}",
                    what.sample_type
                ),
            ));
        }
    };
    let self_ty = &block.self_ty;
    let Some((negative, trait_path, _)) = &block.trait_ else {
        let impl_token = block.impl_token;
        return Err(syn::Error::new_spanned(
            quote!(#impl_token #self_ty),
            format!(
                "`#[{attribute}]` goes on the `{trait_name}` impl of a type, and this is an inherent \
                 impl\nwrite `impl {trait_name} for {}` and put the attribute there",
                crate::tokens::compact_tokens(self_ty)
            ),
        ));
    };
    if trait_path
        .segments
        .last()
        .is_none_or(|s| s.ident != trait_name)
    {
        return Err(syn::Error::new_spanned(
            trait_path,
            format!(
                "`#[{attribute}]` goes on an `impl {trait_name} for ...` block, and this implements `{}`",
                crate::tokens::compact_tokens(trait_path)
            ),
        ));
    }
    if let Some(bang) = negative {
        return Err(syn::Error::new(
            bang.span,
            format!(
                "a negative impl says the type is not a {}: it cannot be registered as one",
                what.noun
            ),
        ));
    }
    if !block.generics.params.is_empty() {
        let generics = &block.generics;
        return Err(syn::Error::new_spanned(
            generics,
            format!(
                "{} must be a concrete type, and this impl is generic over {}: {}, with nothing to \
                 choose the parameters\nimplement `{trait_name}` for each concrete type{}, like \
                 `impl {trait_name} for {}`, each with its own name",
                what.kind,
                generic_names(generics),
                what.why_concrete,
                what.each,
                concrete_example(self_ty),
            ),
        ));
    }
    Ok(block)
}

fn generic_names(generics: &syn::Generics) -> String {
    let names: Vec<String> = generics
        .params
        .iter()
        .map(|param| match param {
            syn::GenericParam::Type(t) => format!("`{}`", t.ident),
            syn::GenericParam::Lifetime(l) => format!("`{}`", l.lifetime),
            syn::GenericParam::Const(c) => format!("`{}`", c.ident),
        })
        .collect();
    names.join(", ")
}

/// `Foo<T>` as `Foo<f32>`-like text: the type with its arguments replaced
/// by placeholders a reader recognises as "fill in".
fn concrete_example(self_ty: &Type) -> String {
    match self_ty {
        Type::Path(path) if path.qself.is_none() => {
            let last = path
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            match path.path.segments.last().map(|s| &s.arguments) {
                Some(syn::PathArguments::AngleBracketed(args)) => {
                    let filled: Vec<&str> = args
                        .args
                        .iter()
                        .map(|arg| match arg {
                            syn::GenericArgument::Lifetime(_) => "'static",
                            syn::GenericArgument::Const(_) => "4",
                            _ => "f32",
                        })
                        .collect();
                    format!("{last}<{}>", filled.join(", "))
                }
                _ => last,
            }
        }
        other => crate::tokens::compact_tokens(other),
    }
}

/// "a struct" and the span of its keyword, for "not on a struct".
fn describe(item: &Item) -> (&'static str, Span) {
    match item {
        Item::Const(i) => ("a const", i.const_token.span),
        Item::Enum(i) => ("an enum", i.enum_token.span),
        Item::ExternCrate(i) => ("an `extern crate`", i.extern_token.span),
        Item::Fn(i) => ("a function", i.sig.fn_token.span),
        Item::ForeignMod(i) => ("an extern block", i.abi.extern_token.span),
        Item::Impl(i) => ("an impl block", i.impl_token.span),
        Item::Macro(i) => ("a macro invocation", i.mac.path.span()),
        Item::Mod(i) => ("a module", i.mod_token.span),
        Item::Static(i) => ("a static", i.static_token.span),
        Item::Struct(i) => ("a struct", i.struct_token.span),
        Item::Trait(i) => ("a trait", i.trait_token.span),
        Item::TraitAlias(i) => ("a trait alias", i.trait_token.span),
        Item::Type(i) => ("a type alias", i.type_token.span),
        Item::Union(i) => ("a union", i.union_token.span),
        Item::Use(i) => ("a `use` declaration", i.use_token.span),
        _ => ("this item", item.span()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target_error(tokens: TokenStream) -> String {
        target_impl(tokens).unwrap_err().to_string()
    }

    #[test]
    fn every_item_kind_is_named_in_the_refusal() {
        let cases: [(TokenStream, &str); 15] = [
            (
                quote!(
                    const C: u8 = 1;
                ),
                "a const",
            ),
            (
                quote!(
                    enum E {
                        A,
                    }
                ),
                "an enum",
            ),
            (
                quote!(
                    extern crate alloc;
                ),
                "an `extern crate`",
            ),
            (
                quote!(
                    fn f() {}
                ),
                "a function",
            ),
            (
                quote!(
                    extern "C" {
                        fn g();
                    }
                ),
                "an extern block",
            ),
            (quote!(m!();), "a macro invocation"),
            (
                quote!(
                    mod m {}
                ),
                "a module",
            ),
            (
                quote!(
                    static S: u8 = 1;
                ),
                "a static",
            ),
            (
                quote!(
                    struct S;
                ),
                "a struct",
            ),
            (
                quote!(
                    trait T {}
                ),
                "a trait",
            ),
            (
                quote!(
                    trait T = Clone;
                ),
                "a trait alias",
            ),
            (
                quote!(
                    type A = u8;
                ),
                "a type alias",
            ),
            (quote!(union U { a: u8 }), "a union"),
            (
                quote!(
                    use a::b;
                ),
                "a `use` declaration",
            ),
            (quote!(impl S {}), "inherent impl"),
        ];
        for (tokens, what) in cases {
            let message = target_error(tokens.clone());
            assert!(message.contains(what), "{tokens}: {message}");
            if what != "inherent impl" {
                assert_eq!(
                    message,
                    format!("`#[profile_target]` goes on an `impl ProfileTarget for YourType` block, not on {what}")
                );
                if what != "a function" && what != "an extern block" {
                    let range = range_fn(tokens.clone()).unwrap_err().to_string();
                    assert_eq!(
                        range,
                        format!("`#[nvtx_range]` goes on a function or a method with a body, not on {what}"),
                        "{tokens}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_generic_impl_is_refused_with_a_concrete_example() {
        let message = target_error(quote!(
            impl<'a, T, const N: usize> ProfileTarget for Boxes<'a, T, { N }> {}
        ));
        assert!(
            message.contains("is generic over `'a`, `T`, `N`"),
            "{message}"
        );
        assert!(
            message.contains("like `impl ProfileTarget for Boxes<'static, f32, 4>`"),
            "{message}"
        );
        // A qualified self type has no name to fill in: it is shown as written.
        let message = target_error(quote!(
            impl<T> ProfileTarget for <T as Wrap>::Out {}
        ));
        assert!(
            message.contains("like `impl ProfileTarget for <T as Wrap>::Out`"),
            "{message}"
        );
    }
}
