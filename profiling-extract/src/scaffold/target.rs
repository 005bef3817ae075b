//! What the plan says the target is: where `prepare` gets each parameter,
//! how `run` passes it and what `run` returns; emitted by `emit`.

use super::types::ImageKind;

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

    pub(super) fn needs_local(&self) -> bool {
        matches!(self.pass, Pass::RefMut | Pass::ViewMut | Pass::MakeMut)
    }

    /// How `run` makes the value a `&mut` parameter is lent: a clone of
    /// the prepared one, or one made by the function `prepare` holds.
    pub(super) fn local_value(&self) -> String {
        match self.pass {
            Pass::MakeMut => format!("(inputs.{})()", self.name),
            _ => format!("inputs.{}.clone()", self.name),
        }
    }

    pub(super) fn argument(&self) -> String {
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
}
