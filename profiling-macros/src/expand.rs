//! The code both attributes generate.
//!
//! `#[nvtx_range]` adds one statement, a range guard, to the top of the
//! body and leaves every other token as written, spans included, so errors
//! in the body still point at the user's code. `#[profile_target]` leaves
//! the impl alone and adds a launch function and a registry entry.

use std::ffi::CString;

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{ItemFn, ItemImpl, LitStr, Path};

use crate::attr::{DataSourceArgs, NvtxRangeArgs, ProfileTargetArgs};
use crate::doc::{first_doc_line, type_ident};
use crate::name::{kebab_case, target_name_problem, TARGET_NAME_RULE};
use crate::tokens::compact_tokens;

fn default_crate_path() -> Path {
    syn::parse_quote!(::profiling_core)
}

/// The function with a range guard as the first statement of its body.
///
/// The guard is a local, so it drops when the body ends however it ends
/// (tail expression, `return`, `?`, unwinding), after everything it wraps.
pub(crate) fn nvtx_range(args: NvtxRangeArgs, mut function: ItemFn) -> syn::Result<TokenStream> {
    let krate = args.krate.unwrap_or_else(default_crate_path);
    let (name, name_span) = match &args.name {
        Some(name) => (name.value(), name.span()),
        None => (
            function.sig.ident.unraw().to_string(),
            function.sig.ident.span(),
        ),
    };
    let name = CString::new(name)
        .map_err(|_| syn::Error::new(name_span, "the range name contains a NUL character"))?;
    let mut name = Literal::c_string(&name);
    name.set_span(name_span);

    // Mixed-site: the body cannot see, nor be shadowed by, the guard.
    let guard = Ident::new("__nvtx_range_guard", Span::mixed_site());
    let open = match &args.if_cuda {
        None => quote! { #krate::nvtx::profiling_range(#name) },
        Some(device) => quote! { #krate::nvtx::profiling_range_if_cuda(#name, #device) },
    };
    function
        .block
        .stmts
        .insert(0, syn::parse_quote! { let #guard = #open; });
    Ok(function.into_token_stream())
}

/// The impl block as written, then its launch function and registry entry.
///
/// `source_doc` looks up the doc line of the type named by its argument in
/// the impl's source file; it is only called when nothing closer describes
/// the target.
pub(crate) fn profile_target(
    args: ProfileTargetArgs,
    block: ItemImpl,
    source_doc: impl FnOnce(&str) -> Option<String>,
) -> syn::Result<TokenStream> {
    let krate = args.krate.clone().unwrap_or_else(default_crate_path);
    let self_ty = &block.self_ty;
    let name = target_name(&args, &block)?;
    let type_name = compact_tokens(self_ty);
    let doc = description(args.description.as_ref(), &block, source_doc);
    let (constructor, build) = match &args.factory {
        None => (
            "Default::default".to_owned(),
            build_by_default(&krate, &block),
        ),
        Some(factory) => (
            compact_tokens(factory),
            build_by_factory(&krate, &block, factory),
        ),
    };
    // `line!()` and `file!()` spanned on the impl: one source location,
    // resolved the same way for both, even when a macro wrote the impl.
    let impl_span = block.impl_token.span;
    let file = quote_spanned!(impl_span=> ::core::file!());
    let line = quote_spanned!(impl_span=> ::core::line!());
    let plan = Ident::new("plan", Span::mixed_site());
    let (load, stop) = (
        Ident::new("load", Span::mixed_site()),
        Ident::new("stop", Span::mixed_site()),
    );
    let takes_batches = defines_prepare_batch(&block);
    // The config, as an absolute path: the crate's directory when it was
    // compiled, then the path given.
    let config = match &args.config {
        Some(config) => quote! {
            ::core::option::Option::Some(::core::concat!(
                ::core::env!("CARGO_MANIFEST_DIR"), "/", #config
            ))
        },
        None => quote! { ::core::option::Option::None },
    };
    let setup = match &args.setup {
        Some(setup) => quote! { ::core::option::Option::Some(#setup) },
        None => quote! { ::core::option::Option::None },
    };

    Ok(quote! {
        #block

        const _: () = {
            #build

            fn __profiling_launch(
                #plan: &#krate::__private::RunPlan,
            ) -> ::core::result::Result<#krate::__private::RunOutcome, #krate::__private::RunError> {
                #krate::__private::run_target::<#self_ty, _>(#plan, __profiling_build)
            }

            fn __profiling_open(
                #plan: &#krate::__private::RunPlan,
            ) -> ::core::result::Result<
                #krate::__private::Box<dyn #krate::__private::SteppedRun + '_>,
                #krate::__private::RunError,
            > {
                #krate::__private::open_target::<#self_ty, _>(#plan, __profiling_build)
            }

            fn __profiling_load(
                #plan: &#krate::__private::RunPlan,
                #load: &#krate::__private::LoadPlan,
                #stop: &::std::sync::atomic::AtomicBool,
            ) -> ::core::result::Result<#krate::__private::LoadRun, #krate::__private::LoadError> {
                #krate::__private::load_target::<#self_ty, _>(#plan, #load, #stop, __profiling_build)
            }

            #krate::__private::inventory::submit! {
                #krate::__private::TargetEntry {
                    name: #name,
                    type_name: #type_name,
                    file: #file,
                    line: #line,
                    module_path: ::core::module_path!(),
                    doc: #doc,
                    constructor: #constructor,
                    takes_batches: #takes_batches,
                    config: #config,
                    setup: #setup,
                    launch: __profiling_launch,
                    open: __profiling_open,
                    load: __profiling_load,
                }
            }
        };
    })
}

/// The impl block as written, then its registry entry.
pub(crate) fn data_source(
    args: DataSourceArgs,
    block: ItemImpl,
    source_doc: impl FnOnce(&str) -> Option<String>,
) -> syn::Result<TokenStream> {
    let krate = args.krate.clone().unwrap_or_else(default_crate_path);
    let self_ty = &block.self_ty;
    let name = args.name.as_ref().expect("the arguments require a name");
    let type_name = compact_tokens(self_ty);
    let doc = description(args.description.as_ref(), &block, source_doc);
    let impl_span = block.impl_token.span;
    let file = quote_spanned!(impl_span=> ::core::file!());
    let line = quote_spanned!(impl_span=> ::core::line!());
    Ok(quote! {
        #block

        const _: () = {
            fn __profiling_parameters() -> ::std::vec::Vec<&'static str> {
                #krate::data::parameter_fields::<<#self_ty as #krate::data::RecordSource>::Parameters>()
            }

            #krate::__private::inventory::submit! {
                #krate::__private::SourceEntry {
                    name: #name,
                    type_name: #type_name,
                    file: #file,
                    line: #line,
                    doc: #doc,
                    parameters: __profiling_parameters,
                    image_parameter: <#self_ty as #krate::data::RecordSource>::IMAGE_PARAMETER,
                    directory_option: <#self_ty as #krate::data::RecordSource>::DIRECTORY_OPTION,
                    build: #krate::__private::build_source::<#self_ty>,
                }
            }
        };
    })
}

/// The one-line description `list` shows: the one given, else the first
/// line of the impl block's doc comment, else of the type's (looked up in
/// the impl's file by `source_doc`).
fn description(
    given: Option<&LitStr>,
    block: &ItemImpl,
    source_doc: impl FnOnce(&str) -> Option<String>,
) -> String {
    match given {
        Some(description) => description.value(),
        None => first_doc_line(&block.attrs)
            .or_else(|| {
                type_ident(&block.self_ty).and_then(|ident| source_doc(&ident.unraw().to_string()))
            })
            .unwrap_or_default(),
    }
}

/// Whether the impl block defines `prepare_batch`, or may: items written by
/// a macro inside it cannot be seen here, and count as defining it (the
/// trait's default refuses batches at run time all the same).
fn defines_prepare_batch(block: &ItemImpl) -> bool {
    block.items.iter().any(|item| match item {
        syn::ImplItem::Fn(function) => function.sig.ident == "prepare_batch",
        syn::ImplItem::Macro(_) | syn::ImplItem::Verbatim(_) => true,
        _ => false,
    })
}

/// The name given, or the kebab-case of the type's name, checked.
fn target_name(args: &ProfileTargetArgs, block: &ItemImpl) -> syn::Result<LitStr> {
    if let Some(name) = &args.name {
        return Ok(name.clone());
    }
    let self_ty = &block.self_ty;
    let Some(ident) = type_ident(self_ty) else {
        return Err(syn::Error::new_spanned(
            self_ty,
            "name this target: `#[profile_target(\"my-target\")]`; a name is derived only from a type \
             path like `MyTarget`",
        ));
    };
    let ident_text = ident.unraw().to_string();
    let derived = kebab_case(&ident_text);
    if let Some(problem) = target_name_problem(&derived) {
        return Err(syn::Error::new(
            ident.span(),
            format!(
                "the name derived from `{ident_text}`, {derived:?}, is not a valid target name: {problem}\n\
                 {TARGET_NAME_RULE}\nname the target: `#[profile_target(\"my-target\")]`"
            ),
        ));
    }
    Ok(LitStr::new(&derived, ident.span()))
}

/// `fn __profiling_build()` through `Default`, with an error that says what
/// to do when the type has no `Default`.
fn build_by_default(krate: &Path, block: &ItemImpl) -> TokenStream {
    let self_ty = &block.self_ty;
    let type_name = compact_tokens(self_ty);
    let message = format!(
        "`#[profile_target]` builds `{type_name}` with `Default::default()`, but `{type_name}` does \
         not implement `Default`"
    );
    // Spanned on the self type: that is where the error points.
    let call = quote_spanned!(self_ty.span()=> <#self_ty as BuildByDefault>::build());
    quote! {
        #[diagnostic::on_unimplemented(
            message = #message,
            label = "not `Default`",
            note = "derive or implement `Default`, or name a function that builds the target: \
                    `#[profile_target(factory = make_target)]`"
        )]
        trait BuildByDefault: ::core::marker::Sized {
            fn build() -> Self;
        }

        #[diagnostic::do_not_recommend]
        impl<T: ::core::default::Default> BuildByDefault for T {
            #[inline]
            fn build() -> Self {
                <T as ::core::default::Default>::default()
            }
        }

        fn __profiling_build() -> #krate::__private::anyhow::Result<#self_ty> {
            ::core::result::Result::Ok(#call)
        }
    }
}

/// `fn __profiling_build()` through the factory, which may return the
/// target or a `Result` of it whose error converts into `anyhow::Error`.
fn build_by_factory(krate: &Path, block: &ItemImpl, factory: &syn::ExprPath) -> TokenStream {
    let self_ty = &block.self_ty;
    let type_name = compact_tokens(self_ty);
    let factory_name = compact_tokens(factory);
    let message = format!(
        "the factory `{factory_name}` returns `{{Self}}`, but `#[profile_target]` needs `{type_name}` \
         or a `Result<{type_name}, E>` whose error converts into `anyhow::Error`"
    );
    let call = quote_spanned!(factory.span()=> FactoryReturn::<#self_ty>::into_target(#factory()));
    quote! {
        #[diagnostic::on_unimplemented(message = #message, label = "returns `{Self}`")]
        trait FactoryReturn<T> {
            fn into_target(self) -> #krate::__private::anyhow::Result<T>;
        }

        #[diagnostic::do_not_recommend]
        impl<T, O: #krate::__private::FactoryOutput<T>> FactoryReturn<T> for O {
            #[inline]
            fn into_target(self) -> #krate::__private::anyhow::Result<T> {
                #krate::__private::FactoryOutput::<T>::into_target(self)
            }
        }

        fn __profiling_build() -> #krate::__private::anyhow::Result<#self_ty> {
            #call
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    #[test]
    fn range_guard_is_the_only_statement_added() {
        let function: ItemFn = parse_quote! {
            /// Docs stay.
            #[inline]
            pub fn decode(x: u32) -> u32 { if x == 0 { return 1; } x }
        };
        let expanded: ItemFn =
            syn::parse2(nvtx_range(NvtxRangeArgs::default(), function.clone()).unwrap()).unwrap();
        assert_eq!(expanded.attrs, function.attrs);
        assert_eq!(expanded.vis, function.vis);
        assert_eq!(expanded.sig, function.sig);
        assert_eq!(expanded.block.stmts.len(), function.block.stmts.len() + 1);
        assert_eq!(expanded.block.stmts[1..], function.block.stmts[..]);
        let guard = expanded.block.stmts[0].to_token_stream().to_string();
        assert_eq!(
            guard,
            "let __nvtx_range_guard = :: profiling_core :: nvtx :: profiling_range (c\"decode\") ;"
        );
    }

    #[test]
    fn range_guard_uses_the_name_device_and_crate_given() {
        let args: NvtxRangeArgs =
            parse_quote!("upload boxes", if_cuda = self.device, crate = my::core);
        let function: ItemFn = parse_quote!(
            fn upload(&self) {}
        );
        let expanded: ItemFn = syn::parse2(nvtx_range(args, function).unwrap()).unwrap();
        let guard = expanded.block.stmts[0].to_token_stream().to_string();
        assert_eq!(
            guard,
            "let __nvtx_range_guard = my :: core :: nvtx :: profiling_range_if_cuda (c\"upload boxes\" , self . device) ;"
        );
    }

    #[test]
    fn raw_identifiers_name_ranges_without_the_prefix() {
        let function: ItemFn = parse_quote!(
            fn r#match() {}
        );
        let expanded: ItemFn =
            syn::parse2(nvtx_range(NvtxRangeArgs::default(), function).unwrap()).unwrap();
        let guard = expanded.block.stmts[0].to_token_stream().to_string();
        assert!(guard.contains("c\"match\""), "{guard}");
    }
}
