//! The target around the copy: which record field feeds which parameter
//! (where the types make it clear), the struct that holds one call's
//! arguments, and the `#[profile_target]` impl whose `run` calls the copy.
//! What the types do not make clear becomes an error `prepare` returns,
//! never a panic.

use std::collections::BTreeSet;

use syn::spanned::Spanned;
use syn::visit::{self, Visit};

use super::select::{generic_params, type_name, Function, TypeArgs};
use super::source::SourceFile;

/// Widest line rustfmt keeps.
const WIDTH: usize = 100;

/// Where `prepare` gets a parameter's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ValueSource {
    /// The record's decoded image, converted to the pixel type the copy
    /// takes.
    Image(ImageKind),
    /// The record itself.
    Record,
    /// The run's device.
    Device,
    /// One of the record's tensors, flattened into a `Vec<f32>`.
    Values {
        name: &'static str,
        /// The element type: `f32`, or a numeric type the values are
        /// converted to (`as`).
        element: &'static str,
    },
    /// One of the record's tensors, as an array of `dims` dimensions
    /// (`None`: any).
    Tensor {
        name: &'static str,
        dims: Option<usize>,
        /// The array's element type: the record's `f32`, or a numeric type
        /// its values are converted to (`as`).
        element: &'static str,
    },
    /// `Default::default()` of a type whose production module implements it.
    Default,
    /// A scalar read from `target.parameters.<name>`, with a default: the
    /// literal a production call passes (`call site`), else a neutral value.
    Setting {
        /// As Rust writes it: `0.5`, `(640, 480)`.
        default: String,
        /// As the config writes it: `0.5`, `[640, 480]`.
        yaml: String,
        /// Where the default comes from, in words.
        origin: String,
        /// For a unit-only enum of the crate: its name and variants. The
        /// setting is the variant's name, held as the snippet's enum
        /// `<name>Setting`.
        variants: Option<(String, Vec<String>)>,
    },
    /// Not clear from the type.
    Unmapped,
}

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
    fn of(ty: &syn::Type) -> Option<ImageKind> {
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
    fn field_type(self) -> &'static str {
        match self {
            ImageKind::Rgb8 => "image::RgbImage",
            ImageKind::Luma8 => "image::GrayImage",
            ImageKind::Rgba8 => "image::RgbaImage",
            ImageKind::Rgb32F => "image::Rgb32FImage",
            ImageKind::Luma32F => "image::ImageBuffer<image::Luma<f32>, Vec<f32>>",
        }
    }

    /// The expression that makes it from `record`.
    fn conversion_from_record(self) -> &'static str {
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

    fn describe(self) -> &'static str {
        match self {
            ImageKind::Rgb8 => "the record's image (`record.image()`)",
            ImageKind::Luma8 => "the record's image in grey levels (`image::imageops::grayscale`)",
            ImageKind::Rgba8 => "the record's image with an opaque alpha channel",
            ImageKind::Rgb32F => "the record's image as `f32` channels in [0, 1]",
            ImageKind::Luma32F => "the record's image in grey levels as `f32` in [0, 1]",
        }
    }
}

/// How `run` hands the held value to the copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// `&inputs.x`.
    Ref,
    /// `&mut x` on a clone made in `run`.
    RefMut,
    /// `inputs.x.view()`.
    View,
    /// `&inputs.x.view()`.
    ViewRef,
    /// `x.view_mut()` on a clone made in `run`.
    ViewMut,
    /// `inputs.x`, a `Copy` value.
    Copy,
    /// `inputs.x.clone()`.
    Clone,
    /// `(inputs.x)()`: a value that is neither `Clone` nor `Copy`, made
    /// for each call by a function `prepare` holds.
    Make,
    /// `&mut x` on a value made in `run` by a function `prepare` holds:
    /// a type that is neither `Clone` nor `Copy`, passed as `&mut`.
    MakeMut,
    /// `inputs.x.production()`: a unit-only enum of the crate, held as
    /// the snippet's enum of the same variants that settings name.
    Variant,
    /// `&inputs.x.production()`.
    VariantRef,
}

/// One parameter of the copied function.
#[derive(Debug, Clone)]
pub(crate) struct Parameter {
    /// The field of the inputs struct.
    pub name: String,
    /// As declared: `raw: ArrayView2<f32>`.
    pub declared: String,
    /// The type the inputs struct holds.
    pub field_type: String,
    pub source: ValueSource,
    pub pass: Pass,
}

impl Parameter {
    /// How `prepare` fills it, in words, for the README and the output.
    pub fn describe_source(&self) -> String {
        match &self.source {
            ValueSource::Image(kind) => kind.describe().to_owned(),
            ValueSource::Record => "the record".to_owned(),
            ValueSource::Device => "the run's device".to_owned(),
            ValueSource::Values { name, element } => {
                let converted = match *element {
                    "f32" => "",
                    _ => " (converted from `f32`)",
                };
                format!(
                    "the record's tensor `{name}`, flattened into a `Vec<{element}>`{converted}"
                )
            }
            ValueSource::Tensor {
                name,
                dims,
                element,
            } => {
                let converted = match *element {
                    "f32" => String::new(),
                    "bool" => " of `bool` (its values above 0.5)".to_owned(),
                    other => format!(" of `{other}` (converted from `f32`)"),
                };
                match dims {
                    Some(dims) => format!(
                        "the record's tensor `{name}`, as a {dims}-dimensional array{converted}"
                    ),
                    None => format!("the record's tensor `{name}`{converted}"),
                }
            }
            ValueSource::Default if self.pass == Pass::MakeMut => format!(
                "a new `{}::default()` for each call",
                self.field_type.trim_start_matches("fn() -> ")
            ),
            ValueSource::Default => format!("`{}::default()`", self.field_type),
            ValueSource::Setting {
                yaml,
                origin,
                variants: Some((production, variants)),
                ..
            } => format!(
                "`target.parameters.{}` in config.yaml, a variant of `{production}` by name ({}; default `{yaml}`, {origin})",
                self.name,
                variants.join(", ")
            ),
            ValueSource::Setting {
                default, origin, ..
            } => format!(
                "`target.parameters.{}` in config.yaml (default `{default}`, {origin})",
                self.name
            ),
            ValueSource::Unmapped => "still to map".to_owned(),
        }
    }

    fn needs_local(&self) -> bool {
        matches!(self.pass, Pass::RefMut | Pass::ViewMut | Pass::MakeMut)
    }

    /// How `run` makes the value a `&mut` parameter is lent: a clone of
    /// the prepared one, or one made by the function `prepare` holds.
    fn local_value(&self) -> String {
        match self.pass {
            Pass::MakeMut => format!("(inputs.{})()", self.name),
            _ => format!("inputs.{}.clone()", self.name),
        }
    }

    fn argument(&self) -> String {
        let name = &self.name;
        match self.pass {
            Pass::Ref => format!("&inputs.{name}"),
            Pass::RefMut => format!("&mut {name}"),
            Pass::View => format!("inputs.{name}.view()"),
            Pass::ViewRef => format!("&inputs.{name}.view()"),
            Pass::ViewMut => format!("{name}.view_mut()"),
            Pass::Copy => format!("inputs.{name}"),
            Pass::Clone => format!("inputs.{name}.clone()"),
            Pass::Make => format!("(inputs.{name})()"),
            Pass::MakeMut => format!("&mut {name}"),
            Pass::Variant => format!("inputs.{name}.production()"),
            Pass::VariantRef => format!("&inputs.{name}.production()"),
        }
    }
}

/// The `self` of a method: the target holds it.
#[derive(Debug, Clone)]
pub(crate) struct Receiver {
    pub type_text: String,
    pub pass: Pass,
    /// Its type implements `Default` in the production module, so the
    /// target can be built by `Default`.
    pub default: bool,
}

/// What `run` returns.
#[derive(Debug, Clone)]
pub(crate) enum Output {
    /// The function's return value.
    Value(String),
    /// The `Ok` value of a returned `Result`; its error fails the call.
    Result(String),
    /// Nothing.
    Unit,
    /// The one `&mut` parameter of a function that returns nothing.
    Mutated(usize),
    /// A return value that borrows (or is `impl Trait`): passed to
    /// `black_box` and dropped.
    Discarded(String),
}

/// Everything the target needs to know about the copy.
pub(crate) struct Target {
    pub profile_name: String,
    pub type_name: String,
    pub inputs_name: String,
    pub function: String,
    pub parameters: Vec<Parameter>,
    pub receiver: Option<Receiver>,
    pub output: Output,
    /// How `run` names the copy: `f`, or `<Type as Trait>::method`, with
    /// the type arguments of a generic function (`f::<f32, 3>`).
    pub call_path: String,
    /// `::<f32, 3>` for a generic function, else empty.
    pub turbofish: String,
    /// For a method: the trait the snippet declares to hold the copy.
    pub trait_name: Option<String>,
    /// Whether the function is `unsafe`.
    pub is_unsafe: bool,
    /// The traits that name associated types of the type parameters
    /// (`I::Pixel`) for the types given: rendered before the target.
    pub projections: Vec<String>,
    /// For a method of an impl block with lifetime parameters only
    /// (`impl<'a> Tokens<'a>`): those lifetimes, which the trait holding
    /// the copy takes too.
    pub owner_lifetimes: Vec<String>,
}

impl Target {
    /// The dimensions the dummy source's `tensor` needs, when they are not
    /// its default `[4, 4]`.
    pub fn tensor_shape(&self) -> Option<Vec<usize>> {
        self.parameters.iter().find_map(|p| match p.source {
            ValueSource::Tensor {
                name: "tensor",
                dims: Some(dims),
                ..
            } if dims != 2 => Some(match dims {
                0 => Vec::new(),
                1 => vec![16],
                n => {
                    let mut shape = vec![1; n.saturating_sub(3)];
                    shape.extend([3, 64, 64]);
                    shape
                }
            }),
            _ => None,
        })
    }

    pub fn unmapped(&self) -> Vec<&Parameter> {
        self.parameters
            .iter()
            .filter(|p| p.source == ValueSource::Unmapped)
            .collect()
    }

    /// Whether a parameter takes the record's `boxes` or `scores`: the
    /// dummy source then makes them as a detector would.
    pub fn takes_detections(&self) -> bool {
        self.parameters.iter().any(|p| {
            matches!(
                p.source,
                ValueSource::Tensor {
                    name: "boxes" | "scores",
                    ..
                } | ValueSource::Values {
                    name: "boxes" | "scores",
                    ..
                }
            )
        })
    }

    /// The parameters read from `target.parameters`.
    pub fn settings(&self) -> Vec<&Parameter> {
        self.parameters
            .iter()
            .filter(|p| matches!(p.source, ValueSource::Setting { .. }))
            .collect()
    }

    /// The struct `prepare` reads `target.parameters` into, when the copy
    /// has scalar parameters.
    pub fn settings_name(&self) -> Option<String> {
        (!self.settings().is_empty()).then(|| format!("{}Settings", self.type_name))
    }

    /// The settings struct and its defaults, for `target.rs`.
    fn render_settings(&self) -> String {
        let Some(name) = self.settings_name() else {
            return String::new();
        };
        let mut text = String::new();
        // One enum of the snippet's for each of production's, however
        // many parameters take it.
        let mut rendered: Vec<&str> = Vec::new();
        for parameter in self.settings() {
            if let ValueSource::Setting {
                variants: Some((production, variants)),
                ..
            } = &parameter.source
            {
                if !rendered.contains(&production.as_str()) {
                    rendered.push(production);
                    text.push_str(&render_variant_enum(production, variants));
                }
            }
        }
        text += &format!(
            "/// The scalar parameters of `{}`: `target.parameters` in config.yaml (a\n\
             /// sweep can vary them), each defaulting to the value below.\n\
             #[derive(Debug, Clone, serde::Deserialize)]\n#[serde(default, deny_unknown_fields)]\n\
             pub struct {name} {{\n",
            self.function
        );
        for parameter in self.settings() {
            text.push_str(&format!(
                "    pub {}: {},\n",
                parameter.name, parameter.field_type
            ));
        }
        text.push_str(&format!(
            "}}\n\nimpl Default for {name} {{\n    fn default() -> Self {{\n        {name} {{\n"
        ));
        for parameter in self.settings() {
            if let ValueSource::Setting {
                default, origin, ..
            } = &parameter.source
            {
                text.push_str(&format!(
                    "            // {origin}\n            {}: {default},\n",
                    parameter.name
                ));
            }
        }
        text.push_str("        }\n    }\n}\n\n");
        text
    }

    pub fn needs_factory(&self) -> bool {
        self.receiver.as_ref().is_some_and(|r| !r.default)
    }

    /// What `run` returns, as a type.
    pub fn output_type(&self) -> String {
        match &self.output {
            Output::Value(ty) | Output::Result(ty) => ty.clone(),
            Output::Unit | Output::Discarded(_) => "()".to_owned(),
            Output::Mutated(index) => self.parameters[*index].field_type.clone(),
        }
    }
}

/// The snippet's enum of the variants of production's unit-only enum
/// `production`, which `target.parameters` names by variant (serde refuses
/// another name with the list of them), and its way back to production's.
fn render_variant_enum(production: &str, variants: &[String]) -> String {
    let name = format!("{production}Setting");
    let mut text = format!(
        "/// Production's `{production}` as `target.parameters` names it: by variant.\n\
         #[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]\npub enum {name} {{\n"
    );
    for variant in variants {
        text.push_str(&format!("    {variant},\n"));
    }
    text.push_str(&format!(
        "}}\n\nimpl {name} {{\n    /// Production's value.\n    pub fn production(self) -> {production} {{\n        match self {{\n"
    ));
    for variant in variants {
        text.push_str(&format!(
            "            {name}::{variant} => {production}::{variant},\n"
        ));
    }
    text.push_str("        }\n    }\n}\n\n");
    text
}

/// Facts about the production module's types that decide mappings.
struct ModuleTypes {
    defaults: Vec<String>,
    copies: Vec<String>,
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
    lifetimed: Vec<(String, usize)>,
    /// The crate's type aliases of a number or `bool`
    /// (`type VerticesIndex = usize;`), with what they alias.
    scalar_aliases: Vec<(String, syn::Type)>,
}

impl ModuleTypes {
    /// The module's types, and whether those of the rest of the crate
    /// (the `.rs` files under `src`, when given) are `Clone` or `Copy`.
    fn of(scope: &[syn::Item], src: Option<&std::path::Path>) -> ModuleTypes {
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
        let mut files = Vec::new();
        if let Some(src) = src {
            rust_files(src, &mut files, 0);
        }
        for file in files.iter().take(2000) {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            if let Ok(parsed) = syn::parse_file(&text) {
                types.add(&parsed.items, false);
            }
        }
        types
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
            let lifetimes = match item {
                syn::Item::Struct(s) => Some((&s.ident, s.generics.lifetimes().count())),
                syn::Item::Enum(e) => Some((&e.ident, e.generics.lifetimes().count())),
                _ => None,
            };
            if let Some((ident, count)) = lifetimes.filter(|(_, count)| *count > 0) {
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
    fn unit_enum(&self, name: &str) -> Option<(&str, &[String])> {
        self.unit_enums
            .iter()
            .find(|(n, _)| n == name)
            .map(|(n, v)| (n.as_str(), v.as_slice()))
    }

    /// A struct or enum of the production crate that is neither `Clone`
    /// nor `Copy`: a call cannot take it from the held inputs by value.
    fn is_unclonable(&self, name: &str) -> bool {
        self.known.iter().any(|k| k == name)
            && !self.clones.iter().any(|k| k == name)
            && !self.copies.iter().any(|k| k == name)
    }
}

/// The `.rs` files under `dir`, in name order, at most 8 folders deep.
pub(crate) fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>, depth: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() && depth < 8 {
            rust_files(&path, out, depth + 1);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

const PRIMITIVES: &[&str] = &[
    "bool", "char", "f32", "f64", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32",
    "u64", "u128", "usize", "Device",
];

/// The type `ty` written as source text, owned: `Self` becomes the
/// method's type and every lifetime `'static`, on one line.
fn owned_text(
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
fn with_static_lifetimes(name: &str, lifetimed: &[(String, usize)]) -> String {
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
fn projection_trait(parameter: &str, assoc: &str) -> String {
    format!("{assoc}Of{parameter}")
}

/// The associated types of the function's type parameters (`I::Pixel`)
/// that `ty` names, as (parameter, associated type).
fn projections_in(ty: &syn::Type, parameters: &[String], out: &mut BTreeSet<(String, String)>) {
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
fn substitute(ty: &syn::Type, given: &[(String, syn::Type)]) -> syn::Type {
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
fn type_text(ty: &syn::Type, lifetimed: &[(String, usize)]) -> String {
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

fn last_segment(ty: &syn::Type) -> Option<&syn::PathSegment> {
    match ty {
        syn::Type::Path(path) if path.qself.is_none() => path.path.segments.last(),
        syn::Type::Group(group) => last_segment(&group.elem),
        syn::Type::Paren(paren) => last_segment(&paren.elem),
        _ => None,
    }
}

fn type_arguments(segment: &syn::PathSegment) -> Vec<&syn::Type> {
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

fn is_named(ty: &syn::Type, name: &str) -> bool {
    last_segment(ty).is_some_and(|s| s.ident == name && s.arguments.is_none())
}

/// The numeric element types an array made from the record's `f32`
/// tensor can have (converted with `as`).
const NUMERIC: &[&str] = &[
    "f32", "f64", "i8", "i16", "i32", "i64", "isize", "u8", "u16", "u32", "u64", "usize",
];

/// `ndarray` arrays and views of a numeric type: (is a view, is mutable,
/// dimensions, element type).
fn ndarray_numeric(ty: &syn::Type) -> Option<(bool, bool, Option<usize>, &'static str)> {
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
fn numeric_values(ty: &syn::Type) -> Option<&'static str> {
    let element = match ty {
        syn::Type::Slice(slice) => &*slice.elem,
        _ => {
            let segment = last_segment(ty).filter(|s| s.ident == "Vec")?;
            type_arguments(segment).first().copied()?
        }
    };
    NUMERIC.iter().find(|name| is_named(element, name)).copied()
}

fn tensor_for(name: &str, dims: Option<usize>) -> &'static str {
    match (name, dims) {
        ("scores", Some(1)) => "scores",
        ("boxes", Some(2)) => "boxes",
        _ => "tensor",
    }
}

/// A call of the copied function in production code, with the literal it
/// passes for each parameter (`None` where it passes something else).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallSite {
    /// The file, as the snippet's files show it.
    pub file: String,
    /// By position in the function's inputs (a method's receiver first).
    pub literals: Vec<Option<String>>,
}

/// The call of `name` with `inputs` inputs (a method's receiver counted) in
/// the `.rs` files under `dir` (its `src`, `tests`, `benches`, `examples`)
/// that passes the most literals; file names shown from `root`.
pub(crate) fn find_call_site(
    dir: &std::path::Path,
    root: &std::path::Path,
    name: &str,
    inputs: usize,
    method: bool,
) -> Option<CallSite> {
    struct Calls<'n> {
        name: &'n str,
        inputs: usize,
        method: bool,
        found: Vec<Vec<Option<String>>>,
    }
    fn literal(expr: &syn::Expr) -> Option<String> {
        match expr {
            syn::Expr::Lit(lit) => match &lit.lit {
                syn::Lit::Int(_) | syn::Lit::Float(_) | syn::Lit::Bool(_) => {
                    let lit = &lit.lit;
                    Some(quote::quote!(#lit).to_string())
                }
                _ => None,
            },
            syn::Expr::Unary(unary) if matches!(unary.op, syn::UnOp::Neg(_)) => {
                literal(&unary.expr).map(|text| format!("-{text}"))
            }
            syn::Expr::Paren(paren) => literal(&paren.expr),
            // A variant of an enum: `Norm::L1`.
            syn::Expr::Path(path) if path.qself.is_none() && path.path.segments.len() == 2 => {
                let owner = &path.path.segments[0];
                let variant = &path.path.segments[1];
                let capital = |ident: &syn::Ident| {
                    ident
                        .to_string()
                        .starts_with(|c: char| c.is_ascii_uppercase())
                };
                (owner.arguments.is_none()
                    && variant.arguments.is_none()
                    && owner.ident != "Self"
                    && capital(&owner.ident)
                    && capital(&variant.ident))
                .then(|| format!("{}::{}", owner.ident, variant.ident))
            }
            syn::Expr::Tuple(tuple) => {
                let parts: Option<Vec<String>> = tuple.elems.iter().map(literal).collect();
                Some(format!("({})", parts?.join(", ")))
            }
            syn::Expr::Array(array) => {
                let parts: Option<Vec<String>> = array.elems.iter().map(literal).collect();
                Some(format!("[{}]", parts?.join(", ")))
            }
            _ => None,
        }
    }
    impl<'ast> Visit<'ast> for Calls<'_> {
        // A test that expects a panic passes the values that make one.
        fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
            if !item.attrs.iter().any(|a| a.path().is_ident("should_panic")) {
                visit::visit_item_fn(self, item);
            }
        }
        fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
            if let syn::Expr::Path(path) = &*call.func {
                let named = path
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == self.name);
                if named && call.args.len() == self.inputs {
                    self.found.push(call.args.iter().map(literal).collect());
                }
            }
            visit::visit_expr_call(self, call);
        }
        fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
            if self.method && call.method == self.name && call.args.len() + 1 == self.inputs {
                let mut literals = vec![None];
                literals.extend(call.args.iter().map(literal));
                self.found.push(literals);
            }
            visit::visit_expr_method_call(self, call);
        }
    }
    let mut files = Vec::new();
    for folder in ["src", "tests", "benches", "examples"] {
        rust_files(&dir.join(folder), &mut files, 0);
    }
    // The calls passing the most literals; of those, the literals passed
    // most often.
    let mut seen: Vec<(Vec<Option<String>>, usize, String)> = Vec::new();
    let count = |literals: &[Option<String>]| literals.iter().filter(|l| l.is_some()).count();
    for file in files.iter().take(2000) {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let Ok(parsed) = syn::parse_file(&text) else {
            continue;
        };
        let mut calls = Calls {
            name,
            inputs,
            method,
            found: Vec::new(),
        };
        calls.visit_file(&parsed);
        for literals in calls.found {
            if count(&literals) == 0 {
                continue;
            }
            match seen.iter_mut().find(|(l, _, _)| *l == literals) {
                Some((_, times, _)) => *times += 1,
                None => seen.push((literals, 1, crate::source::display_path(file, root))),
            }
        }
    }
    let (literals, _, file) = seen
        .into_iter()
        .enumerate()
        .max_by_key(|(index, (literals, times, _))| {
            (count(literals), *times, std::cmp::Reverse(*index))
        })
        .map(|(_, found)| found)?;
    Some(CallSite { file, literals })
}

/// How a setting holds its scalars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Scalar,
    /// `(u32, u32)`.
    Tuple,
    /// `[f32; 4]`.
    Array,
}

/// The scalar types a parameter is made of, when it is a number, a `bool`,
/// or a tuple or array of them (of at most 32, written as a number: what serde reads).
fn scalar_elements(ty: &syn::Type) -> Option<(Shape, Vec<String>)> {
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

/// The literals of a call's argument as written (`0.5`, `(640, 480)`,
/// `[1, 2]`), one per element of `shape`, when there are `count`.
fn split_literal(literal: &str, shape: Shape, count: usize) -> Option<Vec<String>> {
    let inner = match shape {
        Shape::Scalar => return Some(vec![literal.to_owned()]),
        Shape::Tuple => literal.strip_prefix('(')?.strip_suffix(')')?,
        Shape::Array => literal.strip_prefix('[')?.strip_suffix(']')?,
    };
    let parts: Vec<String> = inner
        .split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(str::to_owned)
        .collect();
    (parts.len() == count).then_some(parts)
}

/// `literal` as a value of the scalar type `ty`: suffixes dropped, a
/// whole number made a float where `ty` is one.
fn literal_for(ty: &str, literal: &str) -> String {
    let mut text = literal.replace('_', "");
    for suffix in NUMERIC {
        if let Some(stripped) = text.strip_suffix(suffix) {
            if stripped.ends_with(|c: char| c.is_ascii_digit() || c == '.') {
                text = stripped.to_owned();
                break;
            }
        }
    }
    let float = ty.starts_with('f');
    if float && !text.contains(['.', 'e', 'E']) && text != "true" && text != "false" {
        text.push_str(".0");
    }
    if text.ends_with('.') {
        text.push('0');
    }
    text
}

/// A value that makes the copy do its work when production says nothing:
/// `0.5` for thresholds and ratios, `1.0` for other floats, `1` for
/// integers, `false` for flags.
fn neutral_value(name: &str, ty: &str) -> String {
    let lower = name.to_lowercase();
    match ty {
        "bool" => "false".to_owned(),
        "f32" | "f64" => {
            let threshold = ["iou", "thresh", "conf", "score", "prob", "ratio", "overlap"]
                .iter()
                .any(|word| lower.contains(word));
            if threshold { "0.5" } else { "1.0" }.to_owned()
        }
        _ => "1".to_owned(),
    }
}

/// Works out the target for the copied `function`.
pub(crate) fn plan(
    source: &SourceFile,
    function: &Function<'_>,
    profile_name: &str,
    type_args: &TypeArgs,
    call_site: Option<&CallSite>,
    crate_src: Option<&std::path::Path>,
) -> Target {
    let generics = generic_params(source, &function.sig.generics);
    let planner = Planner::new(source, function, type_args, &generics, call_site, crate_src);
    let mut parameters = Vec::new();
    let mut receiver = None;
    for (index, input) in function.sig.inputs.iter().enumerate() {
        match input {
            syn::FnArg::Receiver(r) => receiver = Some(planner.receiver(r)),
            syn::FnArg::Typed(typed) => parameters.push(planner.parameter(index, typed)),
        }
    }
    let output = planner.output(&function.sig.output, &parameters);
    let projections = planner
        .projections
        .borrow()
        .iter()
        .filter_map(|(parameter, assoc)| {
            let bounds = &generics.iter().find(|g| &g.name == parameter)?.bounds;
            let given = type_args.get(parameter)?;
            Some(render_projection(parameter, assoc, bounds, given))
        })
        .collect();

    let type_name = pascal_case(profile_name);
    let function_name = function.name();
    // `Tokens::first` profiled as `tokens-first`: the target's type takes
    // that name, so the trait another.
    let trait_name = planner
        .owner
        .as_ref()
        .map(|owner| format!("{owner}{}", pascal_case(&function_name)))
        .map(|name| {
            if name == type_name {
                format!("{name}Copy")
            } else {
                name
            }
        });
    let turbofish = type_args.turbofish(&generics);
    // A method of `impl<'a> Tokens<'a>`: the trait that holds the copy
    // takes the impl's lifetimes, and the target's receiver is `'static`.
    let owner_lifetimes: Vec<String> = function
        .owner
        .filter(|imp| {
            imp.generics
                .params
                .iter()
                .all(|p| matches!(p, syn::GenericParam::Lifetime(_)))
        })
        .map(|imp| {
            imp.generics
                .lifetimes()
                .map(|l| l.lifetime.to_string())
                .collect()
        })
        .unwrap_or_default();
    let call_path = match (&planner.owner, &trait_name) {
        (Some(owner), Some(trait_name)) => {
            let owner = with_static_lifetimes(owner, &planner.types.lifetimed);
            let trait_args = if owner_lifetimes.is_empty() {
                String::new()
            } else {
                format!("<{}>", vec!["'static"; owner_lifetimes.len()].join(", "))
            };
            format!("<{owner} as {trait_name}{trait_args}>::{function_name}{turbofish}")
        }
        _ => format!("{function_name}{turbofish}"),
    };
    Target {
        profile_name: profile_name.to_owned(),
        inputs_name: format!("{type_name}Inputs"),
        type_name,
        function: function.label.clone(),
        parameters,
        receiver,
        output,
        call_path,
        turbofish,
        trait_name,
        is_unsafe: function.sig.unsafety.is_some(),
        projections,
        owner_lifetimes,
    }
}

/// The trait that names `parameter::assoc` for the type given for
/// `parameter`: implemented for every type with production's bounds on
/// the parameter, which is where the associated type is found (a struct
/// field cannot name `I::Pixel`, and `<Given as Bound>::Pixel` does not
/// find an associated type of the bound's supertrait).
fn render_projection(parameter: &str, assoc: &str, bounds: &str, given: &str) -> String {
    let name = projection_trait(parameter, assoc);
    let bounds = if bounds.is_empty() {
        String::new()
    } else {
        format!(": {bounds}")
    };
    let doc = crate::text::wrap(
        &format!(
            "`{parameter}::{assoc}` for the `{parameter}` given with `--type-args` (`{given}`), \
             found through production's bounds on `{parameter}`: the target's types name it \
             as `<{given} as {name}>::Type`."
        ),
        100,
        "///",
    );
    format!(
        "{doc}pub trait {name} {{\n    type Type;\n}}\n\nimpl<{parameter}{bounds}> {name} for {parameter} {{\n    type Type = {parameter}::{assoc};\n}}\n"
    )
}

/// What the copied function's parameters and return value are classified
/// with: the types given for its generics, what its module's types
/// implement, and the literals a production call passes.
struct Planner<'a> {
    source: &'a SourceFile,
    /// For a method: its type.
    owner: Option<String>,
    /// Text of a type as the target holds it: `Self` as the owner, the
    /// function's type parameters as the types given for them.
    substitutions: Vec<(String, String)>,
    /// The types given for the function's type parameters, parsed.
    given: Vec<(String, syn::Type)>,
    /// The associated types of those parameters the target holds
    /// (`I::Pixel`), named through a trait of the snippet's each.
    projections: std::cell::RefCell<BTreeSet<(String, String)>>,
    types: ModuleTypes,
    call_site: Option<&'a CallSite>,
}

/// One typed parameter, with the type arguments given: what decides where
/// `prepare` takes it from (`&[S]` with `S=f32` is a tensor's values; `B`
/// with `B=&Array2<f32>` a reference to an array).
struct Typed<'t> {
    /// Its position in the function's inputs.
    index: usize,
    /// The field of the inputs struct.
    name: String,
    /// The type, behind its reference when it is one.
    inner: &'t syn::Type,
    /// `Some(mutable)` for a reference.
    reference: Option<bool>,
    /// Whether a type argument went in, or it was an `impl Into<X>`: its
    /// text is then written from the type itself, owned, not from the
    /// source.
    substituted: bool,
}

/// `&mut` or `&`, as `run` passes a reference.
fn by_reference(mutable: bool) -> Pass {
    if mutable {
        Pass::RefMut
    } else {
        Pass::Ref
    }
}

impl<'a> Planner<'a> {
    /// Gathers what classifying `function`'s parameters needs.
    fn new(
        source: &'a SourceFile,
        function: &Function<'_>,
        type_args: &TypeArgs,
        generics: &[super::select::GenericParam],
        call_site: Option<&'a CallSite>,
        crate_src: Option<&std::path::Path>,
    ) -> Planner<'a> {
        let owner = function.owner_name();
        let mut substitutions: Vec<(String, String)> = generics
            .iter()
            .filter_map(|p| Some((p.name.clone(), type_args.get(&p.name)?.to_owned())))
            .collect();
        let types = ModuleTypes::of(function.scope, crate_src);
        if let Some(owner) = &owner {
            substitutions.push((
                "Self".to_owned(),
                with_static_lifetimes(owner, &types.lifetimed),
            ));
        }
        let mut given: Vec<(String, syn::Type)> = generics
            .iter()
            .filter_map(|p| {
                let text = type_args.get(&p.name)?;
                Some((p.name.clone(), syn::parse_str::<syn::Type>(text).ok()?))
            })
            .collect();
        // The crate's aliases of numbers, as the numbers (a type parameter
        // of the same name wins).
        for (name, aliased) in &types.scalar_aliases {
            if !generics.iter().any(|g| &g.name == name) {
                given.push((name.clone(), aliased.clone()));
            }
        }
        Planner {
            source,
            owner,
            substitutions,
            given,
            projections: Default::default(),
            types,
            call_site,
        }
    }

    /// The text of `ty` as the target holds it.
    fn held(&self, ty: &syn::Type) -> String {
        let given: Vec<String> = self.given.iter().map(|(name, _)| name.clone()).collect();
        projections_in(ty, &given, &mut self.projections.borrow_mut());
        owned_text(self.source, ty, &self.substitutions, &self.types.lifetimed)
    }

    /// `ty`, or the type given for it when it is a bare type parameter.
    fn resolve(&self, ty: &syn::Type) -> syn::Type {
        if let syn::Type::Path(path) = ty {
            if let (None, Some(ident)) = (&path.qself, path.path.get_ident()) {
                if let Some((_, given)) = self.given.iter().find(|(name, _)| ident == name) {
                    return given.clone();
                }
            }
        }
        ty.clone()
    }

    /// Whether `ty` is `Copy`: a shared reference, `()`, a primitive, or a
    /// type of the module that derives `Copy`.
    fn is_copy(&self, ty: &syn::Type) -> bool {
        match &self.resolve(ty) {
            syn::Type::Reference(r) => r.mutability.is_none(),
            syn::Type::Tuple(t) => t.elems.is_empty(),
            resolved => last_segment(resolved).is_some_and(|s| {
                let name = s.ident.to_string();
                s.arguments.is_none()
                    && (PRIMITIVES.contains(&name.as_str()) || self.types.copies.contains(&name))
            }),
        }
    }

    /// Whether the production module implements `Default` for `ty`.
    fn has_default(&self, ty: &syn::Type) -> bool {
        last_segment(&self.resolve(ty)).is_some_and(|s| {
            let name = s.ident.to_string();
            self.types.defaults.contains(&name)
                || (name == "Self"
                    && self
                        .owner
                        .as_ref()
                        .is_some_and(|o| self.types.defaults.contains(o)))
        })
    }

    /// How `run` hands over a value of type `ty` it holds.
    fn by_value(&self, ty: &syn::Type) -> Pass {
        if self.is_copy(ty) {
            Pass::Copy
        } else {
            Pass::Clone
        }
    }

    /// The `self` of a method, which the target holds.
    fn receiver(&self, r: &syn::Receiver) -> Receiver {
        let owner = self.owner.clone().unwrap_or_else(|| "Self".to_owned());
        let default = self.types.defaults.contains(&owner);
        let copy = self.types.copies.contains(&owner);
        let type_text = with_static_lifetimes(&owner, &self.types.lifetimed);
        Receiver {
            pass: match (&r.reference, &r.mutability) {
                (Some(_), None) => Pass::Ref,
                (Some(_), Some(_)) => Pass::RefMut,
                (None, _) if copy => Pass::Copy,
                (None, _) => Pass::Clone,
            },
            type_text,
            default,
        }
    }

    /// The parameter at `index`: its field, where `prepare` gets it, and
    /// how `run` passes it.
    fn parameter(&self, index: usize, typed: &syn::PatType) -> Parameter {
        let name = match &*typed.pat {
            syn::Pat::Ident(pat) if pat.subpat.is_none() => pat.ident.to_string(),
            _ => format!("arg{index}"),
        };
        let declared = format!(
            "{}: {}",
            self.source.text[self.source.range(typed.pat.span())]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
            owned_text(self.source, &typed.ty, &[], &[])
        );
        // `impl Into<X>` is held, and passed, as an `X`.
        let declared_ty = super::select::into_target(&typed.ty).unwrap_or(&typed.ty);
        let effective = substitute(declared_ty, &self.given);
        let as_written = &typed.ty;
        let substituted =
            quote::quote!(#effective).to_string() != quote::quote!(#as_written).to_string();
        let source_ty: &syn::Type = if substituted { &effective } else { &typed.ty };
        let (inner, reference) = match source_ty {
            syn::Type::Reference(r) => (&*r.elem, Some(r.mutability.is_some())),
            other => (other, None),
        };
        let typed = Typed {
            index,
            name,
            inner,
            reference,
            substituted,
        };
        let (field_type, source, pass) = self.classify(&typed);
        Parameter {
            name: typed.name,
            declared,
            field_type,
            source,
            pass,
        }
    }

    /// The text of `ty`, part of parameter `p`'s type, as its field holds
    /// it.
    fn field_text(&self, p: &Typed<'_>, ty: &syn::Type) -> String {
        if p.substituted {
            type_text(ty, &self.types.lifetimed)
        } else {
            self.held(ty)
        }
    }

    /// The field type, value source and passing of parameter `p`, by the
    /// kind of its type: a numeric array, numeric values, a slice, a
    /// `str`, an image, or anything else.
    fn classify(&self, p: &Typed<'_>) -> (String, ValueSource, Pass) {
        let inner = p.inner;
        if let Some(array) = ndarray_numeric(inner) {
            array_parameter(p, array)
        } else if let Some(element) = numeric_values(inner) {
            let tensor = match p.name.as_str() {
                "scores" => "scores",
                "boxes" => "boxes",
                _ => "tensor",
            };
            let pass = p.reference.map_or(Pass::Clone, by_reference);
            let source = ValueSource::Values {
                name: tensor,
                element,
            };
            (format!("Vec<{element}>"), source, pass)
        } else if let (syn::Type::Slice(slice), Some(mutable)) = (inner, p.reference) {
            // `&[T]` and `&mut [T]`: held as a `Vec<T>`, which derefs to the slice.
            let element = self.field_text(p, &slice.elem);
            let field = format!("Vec<{element}>");
            (field, ValueSource::Unmapped, by_reference(mutable))
        } else if let (true, Some(mutable)) = (is_named(inner, "str"), p.reference) {
            let field = "String".to_owned();
            (field, ValueSource::Unmapped, by_reference(mutable))
        } else if let Some(kind) = ImageKind::of(inner) {
            let pass = p.reference.map_or(Pass::Clone, by_reference);
            (kind.field_type().to_owned(), ValueSource::Image(kind), pass)
        } else {
            self.other_parameter(p)
        }
    }

    /// The field type, value source and passing of parameter `p`, whose
    /// type is none of the kinds [`Planner::classify`] knows by shape: a
    /// setting, the record, the device, a `Default`, or unmapped.
    fn other_parameter(&self, p: &Typed<'_>) -> (String, ValueSource, Pass) {
        let inner = p.inner;
        let field = self.field_text(p, inner);
        let value_source = self.value_source(p);
        if let ValueSource::Setting {
            variants: Some((name, _)),
            ..
        } = &value_source
        {
            let pass = if p.reference.is_some() {
                Pass::VariantRef
            } else {
                Pass::Variant
            };
            return (format!("{name}Setting"), value_source, pass);
        }
        let unclonable = p.reference.is_none()
            && !self.is_copy(inner)
            && last_segment(inner).is_some_and(|s| self.types.is_unclonable(&s.ident.to_string()));
        let unclonable_mut = p.reference == Some(true)
            && !self.is_copy(inner)
            && last_segment(inner).is_some_and(|s| self.types.is_unclonable(&s.ident.to_string()));
        if value_source == ValueSource::Unmapped && unclonable {
            // Neither `Clone` nor `Copy`: made for each call by a
            // function `prepare` keeps (`|| Kind::Variant`).
            (format!("fn() -> {field}"), value_source, Pass::Make)
        } else if unclonable_mut
            && matches!(value_source, ValueSource::Unmapped | ValueSource::Default)
        {
            // Lent as `&mut` and neither `Clone` nor `Copy`: made afresh
            // for each call, as a clone would be.
            (format!("fn() -> {field}"), value_source, Pass::MakeMut)
        } else {
            let pass = p
                .reference
                .map_or_else(|| self.by_value(inner), by_reference);
            (field, value_source, pass)
        }
    }

    /// Where `prepare` gets parameter `p`, of no type known by shape.
    fn value_source(&self, p: &Typed<'_>) -> ValueSource {
        let inner = p.inner;
        let scalars = p
            .reference
            .is_none()
            .then(|| scalar_elements(inner))
            .flatten();
        let unit_enum = last_segment(inner)
            .filter(|s| s.arguments.is_none())
            .and_then(|s| self.types.unit_enum(&s.ident.to_string()));
        if let Some((shape, elements)) = scalars {
            self.setting(p, shape, &elements)
        } else if let Some((name, variants)) = unit_enum {
            self.variant_setting(p, name, variants)
        } else if is_named(inner, "DataRecord") {
            ValueSource::Record
        } else if is_named(inner, "Device") {
            ValueSource::Device
        } else if self.has_default(inner) {
            ValueSource::Default
        } else {
            ValueSource::Unmapped
        }
    }

    /// The setting for parameter `p`, of scalars `elements` held as
    /// `shape`: its default is the literal a production call passes, else a
    /// neutral value.
    fn setting(&self, p: &Typed<'_>, shape: Shape, elements: &[String]) -> ValueSource {
        let given = self
            .call_site
            .and_then(|c| c.literals.get(p.index).cloned().flatten())
            .filter(|literal| !literal.contains("::"))
            .and_then(|literal| split_literal(&literal, shape, elements.len()));
        let (values, origin) = match given {
            Some(literals) => (
                elements
                    .iter()
                    .zip(&literals)
                    .map(|(ty, literal)| literal_for(ty, literal))
                    .collect::<Vec<_>>(),
                format!(
                    "as a call in {} passes it",
                    self.call_site.map_or("production", |c| c.file.as_str())
                ),
            ),
            None => (
                elements
                    .iter()
                    .map(|ty| neutral_value(&p.name, ty))
                    .collect(),
                "a neutral value: no production call passes a literal".to_owned(),
            ),
        };
        let (default, yaml) = match shape {
            Shape::Scalar => (values[0].clone(), values[0].clone()),
            Shape::Tuple => (
                format!(
                    "({}{})",
                    values.join(", "),
                    if values.len() == 1 { "," } else { "" }
                ),
                format!("[{}]", values.join(", ")),
            ),
            Shape::Array => (
                format!("[{}]", values.join(", ")),
                format!("[{}]", values.join(", ")),
            ),
        };
        ValueSource::Setting {
            default,
            yaml,
            origin,
            variants: None,
        }
    }

    /// The setting for parameter `p`, of the crate's unit-only enum
    /// `name`: a variant's name, by default the one a production call
    /// passes, else the first.
    fn variant_setting(&self, p: &Typed<'_>, name: &str, variants: &[String]) -> ValueSource {
        let passed = self
            .call_site
            .and_then(|c| c.literals.get(p.index).cloned().flatten())
            .and_then(|literal| {
                let (owner, variant) = literal.split_once("::")?;
                (owner == name && variants.iter().any(|v| v == variant)).then(|| variant.to_owned())
            });
        let (variant, origin) = match passed {
            Some(variant) => (
                variant,
                format!(
                    "as a call in {} passes it",
                    self.call_site.map_or("production", |c| c.file.as_str())
                ),
            ),
            None => (
                variants[0].clone(),
                format!(
                    "its first variant: no production call passes one; the others: {}",
                    variants[1..].join(", ")
                ),
            ),
        };
        ValueSource::Setting {
            default: format!("{name}Setting::{variant}"),
            yaml: variant,
            origin,
            variants: Some((name.to_owned(), variants.to_vec())),
        }
    }

    /// What `run` returns for a function that returns `output` and takes
    /// `parameters`.
    fn output(&self, output: &syn::ReturnType, parameters: &[Parameter]) -> Output {
        match output {
            syn::ReturnType::Default => {
                let mutated: Vec<usize> = parameters
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.needs_local())
                    .map(|(i, _)| i)
                    .collect();
                match mutated.as_slice() {
                    [only] => Output::Mutated(*only),
                    _ => Output::Unit,
                }
            }
            syn::ReturnType::Type(_, ty) => {
                let text = self.held(ty);
                let result_ok = last_segment(ty)
                    .filter(|s| s.ident == "Result")
                    .and_then(|s| type_arguments(s).first().copied());
                if borrows(ty) {
                    Output::Discarded(text)
                } else if let Some(ok) = result_ok {
                    Output::Result(self.held(ok))
                } else if text == "()" {
                    Output::Unit
                } else {
                    Output::Value(text)
                }
            }
        }
    }
}

/// The field type, value source and passing of parameter `p`, a numeric
/// `ndarray` array or view (`array`: view, mutable, dimensions, element).
fn array_parameter(
    p: &Typed<'_>,
    (view, mutable, dims, element): (bool, bool, Option<usize>, &'static str),
) -> (String, ValueSource, Pass) {
    let field = match dims {
        Some(n) => format!("ndarray::Array{n}<{element}>"),
        None => format!("ndarray::ArrayD<{element}>"),
    };
    let pass = match (view, mutable, p.reference) {
        (true, true, _) => Pass::ViewMut,
        (true, false, Some(_)) => Pass::ViewRef,
        (true, false, None) => Pass::View,
        (false, _, Some(mutable)) => by_reference(mutable),
        (false, _, None) => Pass::Clone,
    };
    let tensor = tensor_for(&p.name, dims);
    let source = ValueSource::Tensor {
        name: tensor,
        dims,
        element,
    };
    (field, source, pass)
}

/// Whether a return type borrows (a reference or a lifetime) or is `impl
/// Trait`: a value `run` cannot return.
fn borrows(ty: &syn::Type) -> bool {
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

/// `example-candidate` and `postprocess_detections` to `ExampleCandidate`
/// and `PostprocessDetections`; a leading digit gets `Target` before it.
pub(crate) fn pascal_case(name: &str) -> String {
    let mut out = String::new();
    for word in name.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) || out.is_empty() {
        out.insert_str(0, "Target");
    }
    out
}

/// `head(args)tail` on one line when it fits, else one argument per line.
fn call_layout(indent: usize, head: &str, args: &[String], tail: &str) -> String {
    let pad = " ".repeat(indent);
    let one_line = format!("{pad}{head}({}){tail}", args.join(", "));
    if one_line.len() <= WIDTH || args.is_empty() {
        return one_line;
    }
    vertical(&pad, head, args, tail)
}

fn vertical(pad: &str, head: &str, args: &[String], tail: &str) -> String {
    let mut text = format!("{pad}{head}(\n");
    for arg in args {
        text.push_str(&format!("{pad}    {arg},\n"));
    }
    text.push_str(&format!("{pad}){tail}"));
    text
}

/// Widest argument list rustfmt keeps on one line (`fn_call_width`).
const CALL_WIDTH: usize = 60;

/// A statement around the call `head(args)close`, laid out as rustfmt
/// does: `prefix` before it (`let output = `, or `Ok(` when `nested`, a
/// call whose only argument is this call), `end` after it.
fn call_statement(
    indent: usize,
    prefix: &str,
    head: &str,
    args: &[String],
    close: &str,
    end: &str,
    nested: bool,
) -> String {
    let pad = " ".repeat(indent);
    let joined = args.join(", ");
    let call = format!("{head}({joined}){close}");
    // Nested in another call, a call of several arguments breaks when it is
    // wider than a call may be on one line.
    let fits =
        joined.len() <= CALL_WIDTH && (!nested || args.len() < 2 || call.len() <= CALL_WIDTH);
    let one_line = format!("{pad}{prefix}{call}{end}");
    if fits && one_line.len() <= WIDTH {
        return one_line;
    }
    if fits && prefix.starts_with("let ") {
        let next_line = format!("{pad}    {call}{end}");
        if next_line.len() <= WIDTH {
            return format!("{pad}{}\n{next_line}", prefix.trim_end());
        }
    }
    vertical(
        &pad,
        &format!("{prefix}{head}"),
        args,
        &format!("{close}{end}"),
    )
}

/// `Name { a, b }` as rustfmt writes a struct literal of shorthand fields.
fn struct_literal(indent: usize, head: &str, name: &str, fields: &[String], tail: &str) -> String {
    let pad = " ".repeat(indent);
    let inline = fields.join(", ");
    let one_line = format!("{pad}{head}{name} {{ {inline} }}{tail}");
    if fields.is_empty() {
        return format!("{pad}{head}{name} {{}}{tail}");
    }
    if inline.len() <= 18 && one_line.len() <= WIDTH {
        return one_line;
    }
    let mut text = format!("{pad}{head}{name} {{\n");
    for field in fields {
        text.push_str(&format!("{pad}    {field},\n"));
    }
    text.push_str(&format!("{pad}}}{tail}"));
    text
}

/// The let-else that returns an error naming the values still to set.
fn missing_values(indent: usize, names: &[(String, String)], what: &str) -> String {
    let pad = " ".repeat(indent);
    let pattern = if names.len() == 1 {
        format!("Some({})", names[0].0)
    } else {
        format!(
            "({})",
            names
                .iter()
                .map(|(n, _)| format!("Some({n})"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let value = if names.len() == 1 {
        names[0].0.clone()
    } else {
        format!(
            "({})",
            names
                .iter()
                .map(|(n, _)| n.clone())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let mut text = format!("{pad}let {pattern} = {value} else {{\n");
    text.push_str(&format!("{pad}    anyhow::bail!(\n"));
    text.push_str(&format!("{pad}        \"{{}}: {what} yet:"));
    for (i, (_, ty)) in names.iter().enumerate() {
        let separator = if i + 1 == names.len() { "" } else { "," };
        text.push_str(&format!(" \\\n{pad}         `{ty}`{separator}"));
    }
    text.push_str("\",\n");
    text.push_str(&format!("{pad}        file!()\n"));
    text.push_str(&format!("{pad}    );\n"));
    text.push_str(&format!("{pad}}};\n"));
    text
}

impl Target {
    /// The items after the copy in `target.rs`: the inputs struct, the
    /// target and its impl.
    pub fn render(&self, provenance: &str) -> String {
        let mut out = String::new();
        if self
            .parameters
            .iter()
            .any(|p| matches!(p.source, ValueSource::Tensor { dims: Some(_), .. }))
        {
            out.push_str(TENSOR_HELPER);
            out.push('\n');
        }
        out.push_str(&self.render_settings());
        let prepared = if self.parameters.is_empty() {
            "()".to_owned()
        } else {
            out.push_str(&self.render_inputs());
            out.push('\n');
            self.inputs_name.clone()
        };

        // The target type.
        out.push_str(&super::text::wrap(
            &format!("Profiles a copy of `{}` ({provenance}).", self.function),
            100,
            "///",
        ));
        match &self.receiver {
            Some(receiver) => {
                if receiver.default {
                    out.push_str("#[derive(Default)]\n");
                }
                out.push_str(&format!("pub struct {} {{\n", self.type_name));
                out.push_str(&format!(
                    "    /// The `{}` the copied method runs on: its `self`.\n",
                    receiver.type_text
                ));
                out.push_str(&format!(
                    "    pub receiver: {},\n}}\n\n",
                    receiver.type_text
                ));
            }
            None => out.push_str(&format!(
                "#[derive(Default)]\npub struct {};\n\n",
                self.type_name
            )),
        }
        if self.needs_factory() {
            out.push_str(&self.render_factory());
            out.push('\n');
        }

        let factory = if self.needs_factory() {
            ", factory = build_target"
        } else {
            ""
        };
        out.push_str(&format!(
            "#[profile_target(name = {:?}{factory})]\n",
            self.profile_name
        ));
        out.push_str(&format!("impl ProfileTarget for {} {{\n", self.type_name));
        let output = self.output_type();
        out.push_str(&format!("    type Prepared = {prepared};\n"));
        out.push_str(&format!("    type Output = {output};\n\n"));
        out.push_str(&self.render_prepare(&prepared));
        out.push('\n');
        out.push_str(&self.render_run(&prepared, &output));
        out.push('\n');
        out.push_str(
            "    // Warmup outputs only, never inside the capture range: check here what\n    \
             // production promises (shapes, ranges, ordering).\n",
        );
        out.push_str(&call_layout(
            4,
            "fn validate",
            &["&self".to_owned(), format!("_output: &{output}")],
            " -> anyhow::Result<()> {",
        ));
        out.push_str("\n        Ok(())\n    }\n\n");
        out.push_str(&self.render_summarize(&output));
        out.push_str("}\n");
        out
    }

    fn render_inputs(&self) -> String {
        let mut text = super::text::wrap(
            &format!(
                "The arguments of one call to `{}`, made from a record by `prepare`.",
                self.function
            ),
            100,
            "///",
        );
        text.push_str(&format!("pub struct {} {{\n", self.inputs_name));
        for parameter in &self.parameters {
            text.push_str(&super::text::wrap(
                &format!("`{}`: {}.", parameter.declared, parameter.describe_source()),
                100,
                "    ///",
            ));
            text.push_str(&format!(
                "    pub {}: {},\n",
                parameter.name, parameter.field_type
            ));
        }
        text.push_str("}\n");
        text
    }

    fn render_factory(&self) -> String {
        let Some(receiver) = &self.receiver else {
            return String::new();
        };
        let ty = &receiver.type_text;
        let mut text = format!(
            "/// Builds the target: the `{ty}` the copied method runs on.\nfn build_target() -> anyhow::Result<{}> {{\n",
            self.type_name
        );
        text.push_str(&format!(
            "    // Not clear from the types: build the `{ty}` here.\n    let receiver: Option<{ty}> = None;\n"
        ));
        text.push_str(&missing_values(
            4,
            &[("receiver".to_owned(), format!("self: {ty}"))],
            "build_target does not build the `self` of the copied method",
        ));
        text.push_str(&format!("    Ok({} {{ receiver }})\n}}\n", self.type_name));
        text
    }

    fn render_prepare(&self, prepared: &str) -> String {
        let uses_device = self
            .parameters
            .iter()
            .any(|p| p.source == ValueSource::Device);
        let record = if self.parameters.iter().any(|p| {
            matches!(
                p.source,
                ValueSource::Image(_)
                    | ValueSource::Record
                    | ValueSource::Values { .. }
                    | ValueSource::Tensor { .. }
            )
        }) {
            "record"
        } else {
            "_record"
        };
        let device = if uses_device { "device" } else { "_device" };
        let mut text = String::from(
            "    // Once per record, outside every range (inside the passes with\n    \
             // target.profile_prepare: true).\n",
        );
        text.push_str(&call_layout(
            4,
            "fn prepare",
            &[
                "&mut self".to_owned(),
                format!("{record}: &DataRecord"),
                format!("{device}: Device"),
            ],
            &format!(" -> anyhow::Result<{prepared}> {{"),
        ));
        text.push('\n');
        if self.parameters.is_empty() {
            text.push_str("        Ok(())\n    }\n");
            return text;
        }
        if let Some(settings) = self.settings_name() {
            text.push_str(&format!(
                "        // config.yaml's target.parameters; outside a run (the parity test), the\n        \
                 // defaults.\n        let settings: {settings} = profiling_core::target::parameters()?;\n"
            ));
        }
        for parameter in &self.parameters {
            let name = &parameter.name;
            let line = match &parameter.source {
                ValueSource::Image(kind) => format!("let {name} = {};", kind.conversion_from_record()),
                ValueSource::Record => format!("let {name} = record.clone();"),
                // Taken straight from `prepare`'s parameter in the struct below.
                ValueSource::Device => continue,
                ValueSource::Values {
                    name: tensor,
                    element: "f32",
                } => {
                    format!("let {name}: Vec<f32> = record.tensor({tensor:?})?.iter().copied().collect();")
                }
                ValueSource::Values {
                    name: tensor,
                    element,
                } => format!(
                    "let {name}: Vec<{element}> = record.tensor({tensor:?})?.iter().map(|&value| value as {element}).collect();"
                ),
                ValueSource::Tensor {
                    name: tensor,
                    dims,
                    element,
                } => {
                    let read = match dims {
                        Some(dims) => {
                            format!("record_tensor::<ndarray::Ix{dims}>(record, {tensor:?})?")
                        }
                        None => format!("record.tensor({tensor:?})?.clone()"),
                    };
                    match *element {
                        "f32" => format!("let {name} = {read};"),
                        // A mask: what is above one half.
                        "bool" => format!("let {name} = {read}.mapv(|value| value > 0.5);"),
                        other => format!("let {name} = {read}.mapv(|value| value as {other});"),
                    }
                }
                // Made for each call: its `Default::default`, held.
                ValueSource::Default if parameter.pass == Pass::MakeMut => format!(
                    "let {name}: {} = <{}>::default;",
                    parameter.field_type,
                    parameter.field_type.trim_start_matches("fn() -> ")
                ),
                ValueSource::Default => {
                    format!("let {name}: {} = Default::default();", parameter.field_type)
                }
                ValueSource::Setting { .. } => format!("let {name} = settings.{name};"),
                ValueSource::Unmapped => continue,
            };
            text.push_str(&format!("        {line}\n"));
        }
        let unmapped = self.unmapped();
        if !unmapped.is_empty() {
            text.push_str(
                "        // Not clear from the types: make these from the record, the config or\n        \
                 // constants, as production does.\n",
            );
            for parameter in &unmapped {
                if matches!(parameter.pass, Pass::Make | Pass::MakeMut) {
                    text.push_str(&format!(
                        "        // Neither Clone nor Copy: a function that makes one for each call,\n        \
                         // such as `Some(|| {}::...)`.\n",
                        parameter.field_type.trim_start_matches("fn() -> ")
                    ));
                }
                text.push_str(&format!(
                    "        let {}: Option<{}> = None;\n",
                    parameter.name, parameter.field_type
                ));
            }
            let names: Vec<(String, String)> = unmapped
                .iter()
                .map(|p| (p.name.clone(), p.declared.clone()))
                .collect();
            text.push_str(&missing_values(
                8,
                &names,
                &format!(
                    "prepare does not map these parameters of `{}`",
                    self.function
                ),
            ));
        }
        let fields: Vec<String> = self
            .parameters
            .iter()
            .map(|p| {
                if p.source == ValueSource::Device && p.name != "device" {
                    format!("{}: device", p.name)
                } else {
                    p.name.clone()
                }
            })
            .collect();
        text.push_str(&struct_literal(8, "Ok(", &self.inputs_name, &fields, ")"));
        text.push_str("\n    }\n");
        text
    }

    fn render_run(&self, prepared: &str, output: &str) -> String {
        let inputs = if self.parameters.is_empty() {
            "_inputs"
        } else {
            "inputs"
        };
        let mut text = String::from("    // Measured: runs in every warmup and measured pass.\n");
        text.push_str(&call_layout(
            4,
            "fn run",
            &["&mut self".to_owned(), format!("{inputs}: &{prepared}")],
            &format!(" -> anyhow::Result<{output}> {{"),
        ));
        text.push('\n');
        for parameter in self.parameters.iter().filter(|p| p.needs_local()) {
            text.push_str(&format!(
                "        let mut {} = {};\n",
                parameter.name,
                parameter.local_value()
            ));
        }
        let mut args = Vec::new();
        if let Some(receiver) = &self.receiver {
            args.push(match receiver.pass {
                Pass::Ref => "&self.receiver".to_owned(),
                Pass::RefMut => "&mut self.receiver".to_owned(),
                Pass::Copy => "self.receiver".to_owned(),
                _ => "self.receiver.clone()".to_owned(),
            });
        }
        args.extend(self.parameters.iter().map(Parameter::argument));
        if self.is_unsafe {
            text.push_str(
                "        // SAFETY: the production function's conditions must hold for the\n        \
                 // prepared inputs: check them before profiling.\n",
            );
        }
        let (head, close) = if self.is_unsafe {
            (format!("unsafe {{ {}", self.call_path), " }")
        } else {
            (self.call_path.clone(), "")
        };
        let call = |prefix: &str, end: &str, nested: bool| {
            call_statement(8, prefix, &head, &args, close, end, nested)
        };
        match &self.output {
            Output::Value(_) => {
                text.push_str(&call("Ok(", ")", true));
                text.push('\n');
            }
            Output::Result(_) => {
                text.push_str(&call("let output = ", ";", false));
                text.push_str("\n        output.map_err(|error| anyhow::anyhow!(\"{error:#}\"))\n");
            }
            Output::Unit => {
                text.push_str(&call("", ";", false));
                text.push_str("\n        Ok(())\n");
            }
            Output::Mutated(index) => {
                text.push_str(&call("", ";", false));
                text.push_str(&format!("\n        Ok({})\n", self.parameters[*index].name));
            }
            Output::Discarded(_) => {
                text.push_str(
                    "        // The result borrows from the inputs: kept from the optimizer, then dropped.\n",
                );
                text.push_str(&call("let output = ", ";", false));
                text.push_str("\n        std::hint::black_box(output);\n        Ok(())\n");
            }
        }
        text.push_str("    }\n");
        text
    }

    /// Why the copy and production cannot be compared on the same inputs,
    /// when that is so whatever production allows.
    pub fn parity_blocker(&self) -> Option<String> {
        match &self.output {
            Output::Unit => {
                return Some(
                    "it returns nothing and changes none of its arguments: there is no output to compare"
                        .to_owned(),
                )
            }
            Output::Discarded(_) => {
                return Some(
                    "its result borrows from its inputs (or is `impl Trait`): there is no owned output to compare"
                        .to_owned(),
                )
            }
            _ => {}
        }
        if self
            .receiver
            .as_ref()
            .is_some_and(|r| r.pass == Pass::RefMut)
        {
            return Some(
                "the copied method changes its `self`: the copy and production would not start from the same value"
                    .to_owned(),
            );
        }
        if self.is_unsafe {
            return Some(
                "it is `unsafe`: whether its conditions hold for a second call is for you to check"
                    .to_owned(),
            );
        }
        None
    }

    /// The statements that call `head` on the prepared inputs and bind
    /// what it computes to `binding` (`who` names it in an error).
    fn parity_call(&self, binding: &str, head: &str) -> String {
        let mut args = Vec::new();
        if let Some(receiver) = &self.receiver {
            args.push(match receiver.pass {
                Pass::Ref => "&target.receiver".to_owned(),
                Pass::Copy => "target.receiver".to_owned(),
                _ => "target.receiver.clone()".to_owned(),
            });
        }
        args.extend(self.parameters.iter().map(Parameter::argument));
        let locals: Vec<&Parameter> = self.parameters.iter().filter(|p| p.needs_local()).collect();
        let indent = if locals.is_empty() { 12 } else { 16 };
        let (statement, last) = match &self.output {
            Output::Mutated(index) => (
                call_statement(indent, "", head, &args, "", ";", false),
                Some(self.parameters[*index].name.clone()),
            ),
            // A `Result` too: both are compared, and the same error from
            // both is parity.
            _ => (
                call_statement(
                    indent,
                    &format!("let {binding} = "),
                    head,
                    &args,
                    "",
                    ";",
                    false,
                ),
                None,
            ),
        };
        if locals.is_empty() {
            return statement + "\n";
        }
        let pad = " ".repeat(indent);
        let mut text = format!("            let {binding} = {{\n");
        for local in &locals {
            text.push_str(&format!(
                "{pad}let mut {} = {};\n",
                local.name,
                local.local_value()
            ));
        }
        text.push_str(&statement);
        text.push('\n');
        text.push_str(&format!(
            "{pad}{}\n",
            last.unwrap_or_else(|| binding.to_owned())
        ));
        text.push_str("            };\n");
        text
    }

    /// The parity test: for each record of the snippet's `config.yaml`, the
    /// copy and `production` (its path) on the same prepared inputs.
    pub fn render_parity(&self, production: &str) -> String {
        let mut text = String::from("\n");
        text.push_str(&super::text::wrap(
            &format!(
                "The copy against production: for each record of `config.yaml`, `prepare` makes the \
                 inputs once, then the copy and `{production}` run on them, and their outputs must \
                 be equal: `==` when the output type is `PartialEq`, else the target's `summarize` \
                 of each. `profile-cli check {}` runs it.",
                self.profile_name
            ),
            80,
            "///",
        ));
        text.push_str("#[cfg(test)]\nmod parity {\n    use super::*;\n\n    #[test]\n");
        text.push_str("    fn the_copy_computes_what_production_computes() {\n");
        text.push_str(
            "        let config = profiling_core::parity::config_beside(file!(), env!(\"CARGO_MANIFEST_DIR\"));\n",
        );
        text.push_str("        profiling_core::parity::each_record(&config, |record, device| {\n");
        let construct = match &self.receiver {
            Some(_) if self.needs_factory() => "build_target()?".to_owned(),
            Some(_) => format!("{}::default()", self.type_name),
            None => self.type_name.clone(),
        };
        text.push_str(&format!("            let mut target = {construct};\n"));
        let inputs = if self.parameters.is_empty() {
            "_inputs"
        } else {
            "inputs"
        };
        text.push_str(&format!(
            "            let {inputs} = target.prepare(record, device)?;\n"
        ));
        text.push_str(&self.parity_call("copy", &self.call_path));
        let production = format!("{production}{}", self.turbofish);
        text.push_str(&self.parity_call("production", &production));
        if matches!(self.output, Output::Result(_)) {
            text.push_str(
                "            match (copy, production) {\n                \
                 (Ok(copy), Ok(production)) => Ok(profiling_core::same_output!(copy, production, |output| {\n                    \
                 target.summarize(output)\n                })),\n                \
                 // The same input refused the same way by both.\n                \
                 (Err(copy), Err(production)) => Ok(profiling_core::same_output!(\n                    \
                 format!(\"error: {copy}\"),\n                    \
                 format!(\"error: {production}\"),\n                    \
                 |_: &String| Summary::new()\n                )),\n                \
                 (Err(error), Ok(_)) => Err(anyhow::anyhow!(\"the copy: {error:#}\")),\n                \
                 (Ok(_), Err(error)) => Err(anyhow::anyhow!(\"production: {error:#}\")),\n            \
                 }\n",
            );
        } else {
            text.push_str(
                "            Ok(profiling_core::same_output!(copy, production, |output| {\n                \
                 target.summarize(output)\n            }))\n",
            );
        }
        text.push_str("        });\n    }\n}\n");
        text
    }

    fn render_summarize(&self, output: &str) -> String {
        let mut text = String::from(
            "    // Outputs of the last measured pass, into the manifest: a few values that\n    \
             // say what came out.\n",
        );
        let ty: syn::Type = match syn::parse_str(output) {
            Ok(ty) => ty,
            Err(_) => syn::parse_quote!(()),
        };
        let segment = last_segment(&ty).map(|s| s.ident.to_string());
        let body = match segment.as_deref() {
            Some("Vec") => Some(
                "        Summary::from([(\"len\".to_owned(), (output.len() as u64).into())])\n"
                    .to_owned(),
            ),
            Some(name) if name.starts_with("Array") => Some(
                "        let shape: Vec<u64> = output.shape().iter().map(|&d| d as u64).collect();\n        \
                 Summary::from([(\"shape\".to_owned(), shape.into())])\n"
                    .to_owned(),
            ),
            Some("usize" | "u64" | "u32" | "u16" | "u8") => Some(
                "        Summary::from([(\"value\".to_owned(), (*output as u64).into())])\n".to_owned(),
            ),
            Some("isize" | "i64" | "i32" | "i16" | "i8") => Some(
                "        Summary::from([(\"value\".to_owned(), (*output as i64).into())])\n".to_owned(),
            ),
            Some("f32" | "f64") => Some(
                "        Summary::from([(\"value\".to_owned(), <f64 as From<_>>::from(*output).into())])\n"
                    .to_owned(),
            ),
            Some("bool") => Some(
                "        Summary::from([(\"value\".to_owned(), (*output).into())])\n".to_owned(),
            ),
            _ => None,
        };
        match body {
            Some(body) => {
                text.push_str(&format!(
                    "    fn summarize(&self, output: &{output}) -> Summary {{\n"
                ));
                text.push_str(&body);
            }
            None => {
                text.push_str(&format!(
                    "    fn summarize(&self, _output: &{output}) -> Summary {{\n"
                ));
                text.push_str("        Summary::new()\n");
            }
        }
        text.push_str("    }\n");
        text
    }
}

/// The helper `prepare` uses for tensors of a fixed number of dimensions.
const TENSOR_HELPER: &str = "\
/// The record's tensor `name` as an array of `D`'s dimensions, or an error
/// that says which shape it has.
fn record_tensor<D: ndarray::Dimension>(
    record: &DataRecord,
    name: &str,
) -> anyhow::Result<ndarray::Array<f32, D>> {
    let tensor = record.tensor(name)?;
    tensor.clone().into_dimensionality::<D>().map_err(|_| {
        anyhow::anyhow!(
            \"record `{}`: tensor `{name}` has shape {:?}, not the {} dimensions the copy \\
             takes (set data_source.tensor_shape in config.yaml)\",
            record.id,
            tensor.shape(),
            D::NDIM.unwrap_or(0)
        )
    })
}
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pascal_case_of_profile_and_function_names() {
        assert_eq!(pascal_case("example-candidate"), "ExampleCandidate");
        assert_eq!(
            pascal_case("postprocess_detections"),
            "PostprocessDetections"
        );
        assert_eq!(pascal_case("nms.v2"), "NmsV2");
        assert_eq!(pascal_case("3d-nms"), "Target3dNms");
    }

    #[test]
    fn calls_break_one_argument_per_line_past_the_width() {
        let args: Vec<String> = ["inputs.raw.view()", "&inputs.letterbox", "&inputs.params"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            call_layout(8, "Ok(f", &args, ")"),
            "        Ok(f(inputs.raw.view(), &inputs.letterbox, &inputs.params))"
        );
        assert_eq!(
            call_layout(8, "Ok(postprocess_detections_with_a_very_long_name", &args, ")"),
            "        Ok(postprocess_detections_with_a_very_long_name(\n            inputs.raw.view(),\n            &inputs.letterbox,\n            &inputs.params,\n        ))"
        );
    }

    #[test]
    fn statements_around_a_call_are_laid_out_as_rustfmt_lays_them_out() {
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        // Several arguments, nested in `Ok(`: broken past 60 columns.
        assert_eq!(
            call_statement(
                8,
                "Ok(",
                "postprocess_detections",
                &args(&["inputs.raw.view()", "&inputs.letterbox", "&inputs.params"]),
                "",
                ")",
                true
            ),
            "        Ok(postprocess_detections(\n            inputs.raw.view(),\n            &inputs.letterbox,\n            &inputs.params,\n        ))"
        );
        // One argument stays on the line.
        assert_eq!(
            call_statement(
                8,
                "Ok(",
                "<SyntheticDetector as SyntheticDetectorNumAnchors>::num_anchors",
                &args(&["&self.receiver"]),
                "",
                ")",
                true
            ),
            "        Ok(<SyntheticDetector as SyntheticDetectorNumAnchors>::num_anchors(&self.receiver))"
        );
        // After `let`, the call moves to the next line before it breaks.
        assert_eq!(
            call_statement(
                8,
                "let output = ",
                "<DetectionPipeline as DetectionPipelineRun>::run",
                &args(&["&mut self.receiver", "&inputs.image"]),
                "",
                ";",
                false
            ),
            "        let output =\n            <DetectionPipeline as DetectionPipelineRun>::run(&mut self.receiver, &inputs.image);"
        );
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
