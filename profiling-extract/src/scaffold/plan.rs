//! Works out the target for a copied function: where `prepare` gets each
//! parameter (by its type, the types given for its generics and what its
//! crate's types implement), how `run` passes it, and what `run` returns.

use std::collections::BTreeSet;

use syn::spanned::Spanned;

use super::call_site::CallSite;
use super::target::{Output, Parameter, Pass, Receiver, Target, ValueSource};
use super::type_text::{
    owned_text, projection_trait, projections_in, substitute, type_text, with_static_lifetimes,
};
use super::types::{
    borrows, is_named, last_segment, ndarray_numeric, numeric_values, scalar_elements,
    type_arguments, ImageKind, ModuleTypes, Shape, NUMERIC, PRIMITIVES,
};
use crate::crate_files::CrateFiles;
use crate::select::{generic_params, Function, TypeArgs};
use crate::source::SourceFile;

/// Works out the target for the copied `function`.
pub(crate) fn plan(
    source: &SourceFile,
    function: &Function<'_>,
    profile_name: &str,
    type_args: &TypeArgs,
    call_site: Option<&CallSite>,
    crate_src: Option<(&std::path::Path, &CrateFiles)>,
    dependencies: &[(String, std::path::PathBuf)],
) -> Target {
    let generics = generic_params(source, &function.sig.generics);
    let planner = Planner::new(
        source,
        function,
        type_args,
        &generics,
        call_site,
        crate_src,
        dependencies,
    );
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

/// The names the target is planned from: those in the function's
/// signature, its impl block's type and the types given for its generics.
/// Only facts about these types decide anything.
fn signature_names(function: &Function<'_>, type_args: &TypeArgs) -> BTreeSet<String> {
    // Identifiers, keywords (`fn`, `mut`) left out: every file has those.
    #[derive(Default)]
    struct Names(BTreeSet<String>);
    impl<'ast> syn::visit::Visit<'ast> for Names {
        fn visit_ident(&mut self, ident: &'ast syn::Ident) {
            self.0.insert(ident.to_string());
        }
    }
    let mut names = Names::default();
    syn::visit::Visit::visit_signature(&mut names, function.sig);
    if let Some(owner) = function.owner {
        syn::visit::Visit::visit_type(&mut names, &owner.self_ty);
    }
    for (_, given) in type_args.iter() {
        if let Ok(ty) = syn::parse_str::<syn::Type>(given) {
            syn::visit::Visit::visit_type(&mut names, &ty);
        }
    }
    names.0
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
        generics: &[crate::select::GenericParam],
        call_site: Option<&'a CallSite>,
        crate_src: Option<(&std::path::Path, &CrateFiles)>,
        dependencies: &[(String, std::path::PathBuf)],
    ) -> Planner<'a> {
        let owner = function.owner_name();
        let mut substitutions: Vec<(String, String)> = generics
            .iter()
            .filter_map(|p| Some((p.name.clone(), type_args.get(&p.name)?.to_owned())))
            .collect();
        let names = signature_names(function, type_args);
        let mut types = ModuleTypes::of(function.scope, crate_src, &names);
        if let Some((_, files)) = crate_src {
            types.add_foreign(function.scope, dependencies, files, &names);
        }
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
        let declared_ty = crate::select::into_target(&typed.ty).unwrap_or(&typed.ty);
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
            .and_then(|literal| split_literal(&literal, shape, elements.len()))
            .map(|literals| {
                elements
                    .iter()
                    .zip(&literals)
                    .map(|(ty, literal)| literal_for(ty, literal))
                    .collect::<Vec<_>>()
            })
            // A call of another instance (`true` where the type given is
            // `u8`) says nothing of this one.
            .filter(|values| {
                elements
                    .iter()
                    .zip(values)
                    .all(|(ty, value)| literal_fits(ty, value))
            });
        let (values, origin) = match given {
            Some(values) => (
                values,
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

fn tensor_for(name: &str, dims: Option<usize>) -> &'static str {
    match (name, dims) {
        ("scores", Some(1)) => "scores",
        ("boxes", Some(2)) => "boxes",
        _ => "tensor",
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

/// Whether `value`, a literal as [`literal_for`] writes it, is one of the
/// scalar type `ty`: `true` or `false` for `bool`, a number for the others,
/// a whole one for integers.
fn literal_fits(ty: &str, value: &str) -> bool {
    let boolean = value == "true" || value == "false";
    match ty {
        "bool" => boolean,
        "f32" | "f64" => !boolean && value.parse::<f64>().is_ok(),
        "char" => value.starts_with('\''),
        _ if NUMERIC.contains(&ty) => {
            let digits = value.trim_start_matches('-');
            // No negative value for an unsigned type (`-1` of an `i32`
            // instance given to a `u8` one).
            let sign_fits = digits.len() == value.len() || ty.starts_with('i');
            let whole = digits.parse::<u128>().is_ok()
                || ["0x", "0o", "0b"]
                    .iter()
                    .any(|radix| digits.starts_with(radix));
            sign_fits && whole
        }
        // An alias or a type this does not know: as production wrote it.
        _ => true,
    }
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

    /// A production call of another instance of a generic function
    /// (`stroke_rect(mask, rect, true, 1)` with `T = bool`) gives no default
    /// to the one profiled (`T = u8`).
    #[test]
    fn a_literal_of_another_type_is_no_default() {
        assert!(literal_fits("u8", &literal_for("u8", "255u8")));
        assert!(literal_fits("i32", &literal_for("i32", "-1")));
        assert!(literal_fits("f32", &literal_for("f32", "1")));
        assert!(literal_fits("bool", "true"));
        assert!(!literal_fits("u8", "true"));
        assert!(!literal_fits("usize", &literal_for("usize", "0.5")));
        assert!(!literal_fits("bool", "1"));
        assert!(!literal_fits("f64", "false"));
        assert!(!literal_fits("u32", "\"ab\""));
        assert!(literal_fits("u32", "0xFF"));
        assert!(!literal_fits("u8", &literal_for("u8", "-1")));
        assert!(literal_fits("isize", &literal_for("isize", "-1_000")));
        // An alias it does not know: as written.
        assert!(literal_fits("Coord", "3"));
    }
}
