//! What the production crate's types are, as far as mapping parameters
//! goes: what its types implement, and the kinds of type the record can
//! feed (images, numeric arrays and values, scalars).

use std::collections::BTreeSet;

use syn::visit::Visit;

use crate::crate_files::{names_word, CrateFiles};
use crate::select::type_name;
use crate::source::rust_files;

/// The `image` buffers a parameter can take, made from the record's RGB
/// image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ImageKind {
    Rgb8,
    Luma8,
    Rgba8,
    Rgb32F,
    Luma32F,
}

impl ImageKind {
    /// `RgbImage`, `GrayImage`, `RgbaImage`, `Rgb32FImage`; an
    /// `ImageBuffer<P, Vec<S>>` or an alias of one with a pixel parameter
    /// (`imageproc::definitions::Image<P>`) of those pixels.
    pub(super) fn of(ty: &syn::Type) -> Option<ImageKind> {
        let segment = last_segment(ty)?;
        let by_name = match segment.ident.to_string().as_str() {
            "RgbImage" => Some(ImageKind::Rgb8),
            "GrayImage" => Some(ImageKind::Luma8),
            "RgbaImage" => Some(ImageKind::Rgba8),
            "Rgb32FImage" => Some(ImageKind::Rgb32F),
            _ => None,
        };
        if segment.arguments.is_none() {
            return by_name;
        }
        // `ImageBuffer<P, C>` or an alias of one (`Image<P>`), not any type
        // with a pixel parameter (`Border<P>`).
        let ident = segment.ident.to_string();
        if ident != "ImageBuffer" && !ident.ends_with("Image") {
            return None;
        }
        // The pixel: the first type argument.
        let pixel = last_segment(type_arguments(segment).first()?)?;
        let subpixel = type_arguments(pixel)
            .first()
            .and_then(|t| last_segment(t))
            .map(|s| s.ident.to_string())?;
        match (pixel.ident.to_string().as_str(), subpixel.as_str()) {
            ("Rgb", "u8") => Some(ImageKind::Rgb8),
            ("Luma", "u8") => Some(ImageKind::Luma8),
            ("Rgba", "u8") => Some(ImageKind::Rgba8),
            ("Rgb", "f32") => Some(ImageKind::Rgb32F),
            ("Luma", "f32") => Some(ImageKind::Luma32F),
            _ => None,
        }
    }

    /// The type the inputs struct holds.
    pub(super) fn field_type(self) -> &'static str {
        match self {
            ImageKind::Rgb8 => "image::RgbImage",
            ImageKind::Luma8 => "image::GrayImage",
            ImageKind::Rgba8 => "image::RgbaImage",
            ImageKind::Rgb32F => "image::Rgb32FImage",
            ImageKind::Luma32F => "image::ImageBuffer<image::Luma<f32>, Vec<f32>>",
        }
    }

    /// The expression that makes it from `record`.
    pub(super) fn conversion_from_record(self) -> &'static str {
        match self {
            ImageKind::Rgb8 => "record.image()?.clone()",
            ImageKind::Luma8 => "image::imageops::grayscale(record.image()?)",
            ImageKind::Rgba8 => {
                "image::DynamicImage::ImageRgb8(record.image()?.clone()).to_rgba8()"
            }
            ImageKind::Rgb32F => {
                "image::DynamicImage::ImageRgb8(record.image()?.clone()).to_rgb32f()"
            }
            ImageKind::Luma32F => {
                "image::DynamicImage::ImageRgb8(record.image()?.clone()).into_luma32f()"
            }
        }
    }

    pub(super) fn describe(self) -> &'static str {
        match self {
            ImageKind::Rgb8 => "the record's image (`record.image()`)",
            ImageKind::Luma8 => "the record's image in grey levels (`image::imageops::grayscale`)",
            ImageKind::Rgba8 => "the record's image with an opaque alpha channel",
            ImageKind::Rgb32F => "the record's image as `f32` channels in [0, 1]",
            ImageKind::Luma32F => "the record's image in grey levels as `f32` in [0, 1]",
        }
    }
}

/// The name and generics of a struct, enum or type alias.
fn generics_of(item: &syn::Item) -> Option<(&syn::Ident, &syn::Generics)> {
    match item {
        syn::Item::Struct(s) => Some((&s.ident, &s.generics)),
        syn::Item::Enum(e) => Some((&e.ident, &e.generics)),
        syn::Item::Type(t) => Some((&t.ident, &t.generics)),
        _ => None,
    }
}

/// A struct, enum or type alias with lifetime parameters, and how many.
fn lifetimes_of(item: &syn::Item) -> Option<(&syn::Ident, usize)> {
    let (ident, generics) = generics_of(item)?;
    let count = generics.lifetimes().count();
    (count > 0).then_some((ident, count))
}

/// Whether a type with lifetime parameters holds a mutable borrow under
/// one of them: `&'a mut T`, or a type of its crate named `..Mut` that
/// takes the lifetime (`ViewMutData<'a, T>`, as `NdTensorViewMut` is
/// defined), which no `Clone` can copy.
fn borrows_mutably(item: &syn::Item) -> bool {
    use quote::ToTokens;
    let Some((_, generics)) = generics_of(item) else {
        return false;
    };
    let text = item.to_token_stream().to_string();
    let words: Vec<&str> = text.split_whitespace().collect();
    generics.lifetimes().any(|param| {
        let lifetime = param.lifetime.to_string();
        words.windows(3).any(|w| match w {
            ["&", l, "mut"] => *l == lifetime,
            [name, "<", l] => *l == lifetime && name.contains("Mut"),
            _ => false,
        })
    })
}

/// Facts about the production module's types that decide mappings.
pub(super) struct ModuleTypes {
    pub defaults: Vec<String>,
    pub copies: Vec<String>,
    /// Types of the production crate (any module) that are `Clone`.
    clones: Vec<String>,
    /// Every struct and enum the production crate defines.
    known: Vec<String>,
    /// The crate's enums without generics whose variants all are units,
    /// with their variants; a name two such enums share is left out.
    unit_enums: Vec<(String, Vec<String>)>,
    /// Names of the crate's enums that are not unit-only, or that two
    /// enums share.
    other_enums: Vec<String>,
    /// The crate's structs and enums with lifetime parameters, and how
    /// many: the target holds them with `'static` ones.
    pub lifetimed: Vec<(String, usize)>,
    /// The crate's type aliases of a number or `bool`
    /// (`type VerticesIndex = usize;`), with what they alias.
    pub scalar_aliases: Vec<(String, syn::Type)>,
}

impl ModuleTypes {
    /// The module's types, and what the rest of the crate (the `.rs` files
    /// under `src`, when given, searched through `files`) says of the
    /// types named `names`: whether they are `Clone`, unit-only enums,
    /// aliases of numbers, or have lifetimes. Every fact is of a type by
    /// its name, so a file that does not name one has none to give and
    /// is not parsed.
    pub(super) fn of(
        scope: &[syn::Item],
        src: Option<(&std::path::Path, &CrateFiles)>,
        names: &BTreeSet<String>,
    ) -> ModuleTypes {
        let mut types = ModuleTypes {
            defaults: Vec::new(),
            copies: Vec::new(),
            clones: Vec::new(),
            known: Vec::new(),
            unit_enums: Vec::new(),
            other_enums: Vec::new(),
            lifetimed: Vec::new(),
            scalar_aliases: Vec::new(),
        };
        types.add(scope, true);
        if let Some((src, files)) = src {
            let mut paths = Vec::new();
            rust_files(src, &mut paths, 0);
            let named = |text: &str| names.iter().any(|name| names_word(text, name));
            for file in paths.iter().take(2000) {
                files.search(file, named, |parsed| types.add(&parsed.items, false));
            }
        }
        types
    }

    /// The lifetime parameters of the types of other crates among `names`
    /// (the signature's), which a signature may leave out
    /// (`NdTensorView<f32, 2>` for `NdTensorView<'a, f32, 2>`): each looked
    /// for in the sources of the dependencies (`dependencies`: the name
    /// code gives each, and its library's source directory) that the
    /// module's `use` declarations or the signature name. A type of the
    /// crate's own keeps its own facts.
    pub(super) fn add_foreign(
        &mut self,
        scope: &[syn::Item],
        dependencies: &[(String, std::path::PathBuf)],
        files: &CrateFiles,
        names: &BTreeSet<String>,
    ) {
        let wanted: Vec<&String> = names
            .iter()
            .filter(|name| name.starts_with(|c: char| c.is_ascii_uppercase()))
            .filter(|name| !self.known.contains(name))
            .filter(|name| !self.lifetimed.iter().any(|(n, _)| n == *name))
            .collect();
        if wanted.is_empty() {
            return;
        }
        // The crates the module's imports start from, and those the
        // signature names by path.
        let mut named: BTreeSet<String> = names.clone();
        for item in scope {
            if let syn::Item::Use(item_use) = item {
                let mut leaves = Vec::new();
                crate::source::use_leaves(&item_use.tree, Vec::new(), &mut leaves);
                named.extend(
                    leaves
                        .into_iter()
                        .filter_map(|(path, _, _)| path.into_iter().next()),
                );
            }
        }
        for (_, src) in dependencies
            .iter()
            .filter(|(ident, _)| named.contains(ident))
        {
            let mut paths = Vec::new();
            rust_files(src, &mut paths, 0);
            let mentions = |text: &str| wanted.iter().any(|name| names_word(text, name));
            for file in paths.iter().take(2000) {
                files.search(file, mentions, |parsed| {
                    self.add_lifetimes_of(&parsed.items, &wanted);
                });
            }
        }
    }

    /// The types of `items` (and of their inline modules) named in
    /// `wanted` that have lifetime parameters.
    fn add_lifetimes_of(&mut self, items: &[syn::Item], wanted: &[&String]) {
        for item in items {
            if let syn::Item::Mod(module) = item {
                if let Some((_, inner)) = &module.content {
                    self.add_lifetimes_of(inner, wanted);
                }
                continue;
            }
            if let Some((ident, count)) = lifetimes_of(item) {
                let name = ident.to_string();
                if wanted.iter().any(|w| **w == name)
                    && !self.lifetimed.iter().any(|(n, _)| *n == name)
                {
                    // A mutable borrow is neither `Clone` nor `Copy`: a
                    // value passed by value is made for each call.
                    if borrows_mutably(item) {
                        self.known.push(name.clone());
                    }
                    self.lifetimed.push((name, count));
                }
            }
        }
    }

    /// `scope`'s facts; `Default` and `Copy` only of the copy's own module
    /// (`own`), where a name means one type.
    fn add(&mut self, scope: &[syn::Item], own: bool) {
        let types = self;
        for item in scope {
            if let syn::Item::Mod(module) = item {
                if let Some((_, items)) = &module.content {
                    types.add(items, false);
                }
                continue;
            }
            // `type VerticesIndex = usize;`: held and read as the number.
            if let syn::Item::Type(alias) = item {
                let primitive = matches!(&*alias.ty, syn::Type::Path(p)
                    if p.qself.is_none()
                        && p.path.get_ident().is_some_and(|i| PRIMITIVES.contains(&i.to_string().as_str()) && i != "Device"));
                if alias.generics.params.is_empty() && primitive {
                    let name = alias.ident.to_string();
                    match types.scalar_aliases.iter().position(|(n, _)| *n == name) {
                        Some(at) if types.scalar_aliases[at].1 != *alias.ty => {
                            // Two aliases of one name: neither.
                            types.scalar_aliases.remove(at);
                        }
                        Some(_) => {}
                        None => types.scalar_aliases.push((name, (*alias.ty).clone())),
                    }
                }
            }
            if let Some((ident, count)) = lifetimes_of(item) {
                if !types.lifetimed.iter().any(|(n, _)| ident == n) {
                    types.lifetimed.push((ident.to_string(), count));
                }
            }
            if let syn::Item::Struct(s) = item {
                types.known.push(s.ident.to_string());
            }
            if let syn::Item::Enum(e) = item {
                types.known.push(e.ident.to_string());
                types.add_enum(e);
            }
            let (ident, attrs) = match item {
                syn::Item::Struct(s) => (&s.ident, &s.attrs),
                syn::Item::Enum(e) => (&e.ident, &e.attrs),
                syn::Item::Impl(imp) => {
                    let implemented = imp
                        .trait_
                        .as_ref()
                        .and_then(|(_, path, _)| path.segments.last())
                        .map(|s| s.ident.to_string());
                    if let (Some(name), Some(ty)) = (implemented, type_name(&imp.self_ty)) {
                        match name.as_str() {
                            "Default" if own => types.defaults.push(ty),
                            "Copy" if own => types.copies.push(ty),
                            "Clone" => types.clones.push(ty),
                            _ => {}
                        }
                    }
                    continue;
                }
                _ => continue,
            };
            for attr in attrs.iter().filter(|a| a.path().is_ident("derive")) {
                let Ok(paths) = attr.parse_args_with(
                    syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
                ) else {
                    continue;
                };
                for path in paths {
                    match path.segments.last().map(|s| s.ident.to_string()).as_deref() {
                        Some("Default") if own => types.defaults.push(ident.to_string()),
                        Some("Copy") if own => types.copies.push(ident.to_string()),
                        Some("Clone") => types.clones.push(ident.to_string()),
                        _ => {}
                    }
                }
            }
        }
    }

    /// Notes `e`: unit-only and without generics, or not.
    fn add_enum(&mut self, e: &syn::ItemEnum) {
        let name = e.ident.to_string();
        let unit = e.generics.params.is_empty()
            && !e.variants.is_empty()
            && e.variants
                .iter()
                .all(|v| matches!(v.fields, syn::Fields::Unit));
        let variants: Vec<String> = e.variants.iter().map(|v| v.ident.to_string()).collect();
        let known = self.unit_enums.iter().position(|(n, _)| *n == name);
        match known {
            // The same file seen twice (the copy's module, then the crate).
            Some(at) if unit && self.unit_enums[at].1 == variants => {}
            Some(at) => {
                self.unit_enums.remove(at);
                self.other_enums.push(name);
            }
            None if unit && !self.other_enums.contains(&name) => {
                self.unit_enums.push((name, variants));
            }
            None => self.other_enums.push(name),
        }
    }

    /// The variants of `name`, when it is a unit-only enum of the crate.
    pub(super) fn unit_enum(&self, name: &str) -> Option<(&str, &[String])> {
        self.unit_enums
            .iter()
            .find(|(n, _)| n == name)
            .map(|(n, v)| (n.as_str(), v.as_slice()))
    }

    /// A struct or enum of the production crate that is neither `Clone`
    /// nor `Copy`: a call cannot take it from the held inputs by value.
    pub(super) fn is_unclonable(&self, name: &str) -> bool {
        self.known.iter().any(|k| k == name)
            && !self.clones.iter().any(|k| k == name)
            && !self.copies.iter().any(|k| k == name)
    }
}

pub(super) const PRIMITIVES: &[&str] = &[
    "bool", "char", "f32", "f64", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32",
    "u64", "u128", "usize", "Device",
];

pub(super) fn last_segment(ty: &syn::Type) -> Option<&syn::PathSegment> {
    match ty {
        syn::Type::Path(path) if path.qself.is_none() => path.path.segments.last(),
        syn::Type::Group(group) => last_segment(&group.elem),
        syn::Type::Paren(paren) => last_segment(&paren.elem),
        _ => None,
    }
}

pub(super) fn type_arguments(segment: &syn::PathSegment) -> Vec<&syn::Type> {
    match &segment.arguments {
        syn::PathArguments::AngleBracketed(args) => args
            .args
            .iter()
            .filter_map(|arg| match arg {
                syn::GenericArgument::Type(ty) => Some(ty),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

pub(super) fn is_named(ty: &syn::Type, name: &str) -> bool {
    last_segment(ty).is_some_and(|s| s.ident == name && s.arguments.is_none())
}

/// The numeric element types an array made from the record's `f32`
/// tensor can have (converted with `as`).
pub(super) const NUMERIC: &[&str] = &[
    "f32", "f64", "i8", "i16", "i32", "i64", "isize", "u8", "u16", "u32", "u64", "usize",
];

/// `ndarray` arrays and views of a numeric type: (is a view, is mutable,
/// dimensions, element type).
pub(super) fn ndarray_numeric(ty: &syn::Type) -> Option<(bool, bool, Option<usize>, &'static str)> {
    let segment = last_segment(ty)?;
    let ident = segment.ident.to_string();
    let (view, mutable, suffix) = if let Some(rest) = ident.strip_prefix("ArrayViewMut") {
        (true, true, rest)
    } else if let Some(rest) = ident.strip_prefix("ArrayView") {
        (true, false, rest)
    } else if let Some(rest) = ident.strip_prefix("Array") {
        (false, false, rest)
    } else {
        return None;
    };
    let args = type_arguments(segment);
    let first = args.first().copied()?;
    let element = NUMERIC
        .iter()
        .chain(&["bool"])
        .find(|name| is_named(first, name))
        .copied()?;
    let dims = match suffix {
        "D" => None,
        "" => {
            let dim = last_segment(args.get(1)?)?.ident.to_string();
            match dim.strip_prefix("Ix")? {
                "Dyn" => None,
                n => Some(n.parse::<usize>().ok()?),
            }
        }
        n => Some(n.parse::<usize>().ok().filter(|n| *n <= 6)?),
    };
    Some((view, mutable, dims, element))
}

/// The element of a slice or `Vec` of a numeric type.
pub(super) fn numeric_values(ty: &syn::Type) -> Option<&'static str> {
    let element = match ty {
        syn::Type::Slice(slice) => &*slice.elem,
        _ => {
            let segment = last_segment(ty).filter(|s| s.ident == "Vec")?;
            type_arguments(segment).first().copied()?
        }
    };
    NUMERIC.iter().find(|name| is_named(element, name)).copied()
}

/// How a setting holds its scalars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    Scalar,
    /// `(u32, u32)`.
    Tuple,
    /// `[f32; 4]`.
    Array,
}

/// The scalar types a parameter is made of, when it is a number, a `bool`,
/// or a tuple or array of them (of at most 32, written as a number: what serde reads).
pub(super) fn scalar_elements(ty: &syn::Type) -> Option<(Shape, Vec<String>)> {
    let scalar = |ty: &syn::Type| {
        last_segment(ty)
            .filter(|s| {
                s.arguments.is_none()
                    && (NUMERIC.contains(&s.ident.to_string().as_str()) || s.ident == "bool")
            })
            .map(|s| s.ident.to_string())
    };
    match ty {
        syn::Type::Tuple(tuple) if !tuple.elems.is_empty() => Some((
            Shape::Tuple,
            tuple.elems.iter().map(scalar).collect::<Option<Vec<_>>>()?,
        )),
        syn::Type::Array(array) => {
            let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(length),
                ..
            }) = &array.len
            else {
                return None;
            };
            let length: usize = length.base10_parse().ok().filter(|n| *n <= 32)?;
            let element = scalar(&array.elem)?;
            Some((Shape::Array, vec![element; length]))
        }
        _ => Some((Shape::Scalar, vec![scalar(ty)?])),
    }
}

/// Whether a return type borrows (a reference or a lifetime) or is `impl
/// Trait`: a value `run` cannot return.
pub(super) fn borrows(ty: &syn::Type) -> bool {
    struct Borrow(bool);
    impl<'ast> Visit<'ast> for Borrow {
        fn visit_type_reference(&mut self, _: &'ast syn::TypeReference) {
            self.0 = true;
        }
        fn visit_lifetime(&mut self, _: &'ast syn::Lifetime) {
            self.0 = true;
        }
        fn visit_type_impl_trait(&mut self, _: &'ast syn::TypeImplTrait) {
            self.0 = true;
        }
    }
    let mut finder = Borrow(false);
    finder.visit_type(ty);
    finder.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutable_borrows_are_told_from_shared_ones() {
        let item = |text: &str| syn::parse_str::<syn::Item>(text).unwrap();
        for mutable in [
            "pub type NdTensorViewMut<'a, T, const N: usize> = TensorBase<ViewMutData<'a, T>, NdLayout<N>>;",
            "pub type ArrayViewMut<'a, A, D> = ArrayBase<ViewRepr<&'a mut A>, D>;",
            "pub struct Cursor<'b> { data: &'b mut [u8] }",
        ] {
            assert!(borrows_mutably(&item(mutable)), "{mutable}");
        }
        for shared in [
            "pub type NdTensorView<'a, T, const N: usize> = TensorBase<ViewData<'a, T>, NdLayout<N>>;",
            "pub type ArrayView<'a, A, D> = ArrayBase<ViewRepr<&'a A>, D>;",
            "pub struct Tokens<'a> { text: &'a str, muted: Mut<u8> }",
        ] {
            assert!(!borrows_mutably(&item(shared)), "{shared}");
        }
    }

    #[test]
    fn numeric_arrays_and_views_are_recognized_with_their_dimensions_and_element() {
        let parse = |text: &str| ndarray_numeric(&syn::parse_str::<syn::Type>(text).unwrap());
        assert_eq!(
            parse("ArrayView2<f32>"),
            Some((true, false, Some(2), "f32"))
        );
        assert_eq!(
            parse("ndarray::ArrayView2<'a, f32>"),
            Some((true, false, Some(2), "f32"))
        );
        assert_eq!(
            parse("ArrayViewMut1<f32>"),
            Some((true, true, Some(1), "f32"))
        );
        assert_eq!(parse("Array3<f32>"), Some((false, false, Some(3), "f32")));
        assert_eq!(parse("ArrayD<f32>"), Some((false, false, None, "f32")));
        assert_eq!(
            parse("Array<f32, Ix4>"),
            Some((false, false, Some(4), "f32"))
        );
        assert_eq!(parse("Array2<f64>"), Some((false, false, Some(2), "f64")));
        assert_eq!(
            parse("ndarray::ArrayView1<'_, u8>"),
            Some((true, false, Some(1), "u8"))
        );
        assert_eq!(parse("Array2<String>"), None);
        assert_eq!(parse("Vec<f32>"), None);
    }
}
