//! The attributes of the snippet profiler: [`macro@profile_target`]
//! registers a target, [`macro@data_source`] a data source, and
//! [`macro@nvtx_range`] puts a function in an NVTX range.
//!
//! Use them through `profiling_core`, which re-exports both and holds the
//! code they expand to: `use profiling_core::prelude::*;`.

use proc_macro::TokenStream;

mod attr;
mod doc;
mod expand;
mod item;
mod name;
mod tokens;

// The documentation, with its examples, is docs/nvtx_range.md: the examples
// use the runtime, so they run among profiling-core's documentation
// tests (a proc-macro crate's would build the runtime for the host).
#[cfg_attr(not(doctest), doc = include_str!("../docs/nvtx_range.md"))]
#[proc_macro_attribute]
pub fn nvtx_range(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let function = item::range_fn(item.clone());
    let args = syn::parse::<attr::NvtxRangeArgs>(args);
    let expanded = match (args, function) {
        (Ok(args), Ok(function)) => expand::nvtx_range(args, function),
        (Err(args_error), Err(item_error)) => Err(combine(item_error, args_error)),
        (Err(error), _) | (_, Err(error)) => Err(error),
    };
    with_item_on_error(expanded, item)
}

// The documentation, with its examples, is docs/profile_target.md: the examples
// use the runtime, so they run among profiling-core's documentation
// tests (a proc-macro crate's would build the runtime for the host).
#[cfg_attr(not(doctest), doc = include_str!("../docs/profile_target.md"))]
#[proc_macro_attribute]
pub fn profile_target(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let block = item::target_impl(item.clone());
    let args = syn::parse::<attr::ProfileTargetArgs>(args);
    let expanded = match (args, block) {
        (Ok(args), Ok(block)) => expand::profile_target(args, block, source_doc),
        (Err(args_error), Err(item_error)) => Err(combine(item_error, args_error)),
        (Err(error), _) | (_, Err(error)) => Err(error),
    };
    with_item_on_error(expanded, item)
}

// The documentation, with its examples, is docs/data_source.md: the examples
// use the runtime, so they run among profiling-core's documentation
// tests (a proc-macro crate's would build the runtime for the host).
#[cfg_attr(not(doctest), doc = include_str!("../docs/data_source.md"))]
#[proc_macro_attribute]
pub fn data_source(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let block = item::source_impl(item.clone());
    let args = syn::parse::<attr::DataSourceArgs>(args);
    let expanded = match (args, block) {
        (Ok(args), Ok(block)) => expand::data_source(args, block, source_doc),
        (Err(args_error), Err(item_error)) => Err(combine(item_error, args_error)),
        (Err(error), _) | (_, Err(error)) => Err(error),
    };
    with_item_on_error(expanded, item)
}

fn source_doc(type_name: &str) -> Option<String> {
    let path = proc_macro::Span::call_site().local_file()?;
    doc::type_doc_in_file(&path, type_name)
}

fn combine(mut first: syn::Error, second: syn::Error) -> syn::Error {
    first.combine(second);
    first
}

/// The expansion, or the errors followed by the item as written: code that
/// uses the item then still compiles, and only the real error shows.
fn with_item_on_error(
    expanded: syn::Result<proc_macro2::TokenStream>,
    item: proc_macro2::TokenStream,
) -> TokenStream {
    match expanded {
        Ok(tokens) => tokens.into(),
        Err(error) => {
            let mut tokens = error.to_compile_error();
            tokens.extend(item);
            tokens.into()
        }
    }
}
