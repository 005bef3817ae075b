//! The target's items as `target.rs` writes them: the settings struct, the
//! inputs struct, the target and its `#[profile_target]` impl, and the
//! parity test.

use super::layout::{call_layout, call_statement, missing_values, struct_literal};
use super::target::{Output, Parameter, Pass, Target, ValueSource};
use super::types::last_segment;

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
        out.push_str(&crate::text::wrap(
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

    fn render_inputs(&self) -> String {
        let mut text = crate::text::wrap(
            &format!(
                "The arguments of one call to `{}`, made from a record by `prepare`.",
                self.function
            ),
            100,
            "///",
        );
        text.push_str(&format!("pub struct {} {{\n", self.inputs_name));
        for parameter in &self.parameters {
            text.push_str(&crate::text::wrap(
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
        text.push_str(&crate::text::wrap(
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
