//! Whether a snippet can hold a parity test: the production path it can
//! call on the copy's inputs, or why it cannot.

use crate::source::{ModuleLocation, SourceFile};
use crate::{scaffold, select};

/// Whether a snippet can prove it computes what production computes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parity {
    /// `mod parity` in `target.rs` calls the copy and `production` (a path
    /// the snippet can name) on the same inputs and compares the outputs.
    Test { production: String },
    /// No parity test could be made: why.
    Unavailable { why: String },
}

/// Whether the snippet can call the production function it copies, so that
/// a parity test can compare the two: the production path to call, or why
/// not.
#[allow(clippy::too_many_arguments)]
pub(crate) fn parity_of(
    source: &SourceFile,
    function: &select::Function<'_>,
    location: &ModuleLocation,
    dependencies: &[String],
    snippets_package: &str,
    target: &scaffold::Target,
    item: &str,
    local_types: &[(String, Vec<String>)],
) -> Parity {
    let unavailable = |why: String| Parity::Unavailable { why };
    if let Some(why) = target.parity_blocker() {
        return unavailable(why);
    }
    // The copy takes the snippet's copy of a type production does not.
    let signature = {
        let sig = function.sig;
        quote::quote!(#sig).to_string()
    };
    if let Some((name, fields)) = local_types.iter().find(|(name, _)| {
        signature
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|word| word == name)
    }) {
        return unavailable(format!(
            "the copy takes the snippet's own copy of `{name}` (copied because it reads its private fields {}), which production's `{item}` does not take",
            fields
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let Some(krate) = &location.crate_ident else {
        return unavailable(format!(
            "{} is not part of a library, so the snippet cannot call the production function",
            source.display
        ));
    };
    // A function of a private module the crate re-exports is called by
    // the path it is re-exported at.
    let reexported = match (&location.unreachable, function.owner) {
        (Some(_), None) => location.reexported(&function.name()),
        _ => None,
    };
    if let (Some(why), None) = (&location.unreachable, &reexported) {
        return unavailable(format!(
            "the snippet cannot call the production function: {} is not reachable: {why}",
            source.display
        ));
    }
    if !dependencies.iter().any(|d| d == krate) {
        return unavailable(format!(
            "crate `{krate}` is not a dependency of `{snippets_package}`, so the snippet cannot call the production function"
        ));
    }
    if !function.inline_modules.is_empty() {
        return unavailable(format!(
            "`{item}` is inside an inline module (`mod {} {{ ... }}`), which the parity test does not reach",
            function.inline_modules.join("::")
        ));
    }
    if !matches!(function.vis, syn::Visibility::Public(_))
        && function.owner.and_then(|o| o.trait_.as_ref()).is_none()
    {
        return unavailable(format!(
            "`{item}` is not `pub`, so the snippet cannot call it"
        ));
    }
    if let Some(owner) = function.owner {
        if owner.trait_.is_some() {
            return unavailable(format!(
                "`{item}` implements a trait method: call it through its trait by hand to compare"
            ));
        }
        let owner_name = function.owner_name().unwrap_or_default();
        let mut path = location.modules.clone();
        path.push(owner_name.clone());
        if location.find_item(&path).is_some_and(|(_, public)| !public) {
            return unavailable(format!(
                "type `{owner_name}` is not `pub`, so the snippet cannot call `{item}`"
            ));
        }
    }
    Parity::Test {
        production: reexported.unwrap_or_else(|| item.to_owned()),
    }
}
