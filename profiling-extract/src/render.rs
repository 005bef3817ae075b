//! The three files of a snippet as text: `target.rs` (header, imports,
//! the copy, the target), `config.yaml` (every key, commented) and
//! `README.md` (provenance, what is left to do, the commands).

use std::fmt::Write as _;

use super::copy::{Copied, Instrumentation};
use super::names::{render_uses, ImportPath, Imports};
use super::scaffold::{Target, ValueSource};
use super::text::{hanging, sentence_case, wrap};
use super::{Extracted, Parity};
use profiling_core::driver::provenance::GitState;

/// `target.rs`.
pub(crate) fn target_rs(
    extracted: &Extracted,
    copied: &Copied,
    imports: &Imports,
    target: &Target,
) -> String {
    let provenance = format!(
        "{}:{}-{}",
        extracted.source, copied.first_line, copied.last_line
    );
    let range = match &copied.instrumentation {
        Instrumentation::Statements { name, .. } => {
            format!("with an NVTX range `{name}` around the selected lines")
        }
        _ => "with an NVTX range around it".to_owned(),
    };
    let mut text = wrap(
        &format!(
            "Snippet `{}`: a copy of `{}` ({provenance}), made by `profile-cli new` {range}. \
             Its calls into `{}` run the production code. README.md says where it came from and \
             what is left to do.",
            extracted.target_name, extracted.item, extracted.module
        ),
        80,
        "//!",
    );
    text.push('\n');

    let mut paths = imports.paths.clone();
    let prelude = ImportPath {
        parent: vec!["profiling_core".to_owned(), "prelude".to_owned()],
        name: "*".to_owned(),
        rename: None,
    };
    if !paths.contains(&prelude) {
        paths.push(prelude);
    }
    for line in render_uses(&paths) {
        text.push_str(&line);
        text.push('\n');
    }
    text.push('\n');
    // `macro_rules!` macros are in scope from where they are defined on:
    // before the copy that calls them.
    for copied_macro in &copied.macros {
        text.push_str(copied_macro);
        text.push('\n');
    }

    let doc = format!("Copy of `{}` ({provenance}).", extracted.item);
    match (
        &target.trait_name,
        &copied.trait_signature,
        extracted.owner.as_deref(),
    ) {
        (Some(trait_name), Some(signature), Some(owner)) => {
            text.push_str(&wrap(
                &format!(
                    "Holds the copy of `{}`: as a method of this trait, implemented for `{owner}`, it keeps its `self`.",
                    target.function
                ),
                100,
                "///",
            ));
            let (params, self_ty) = if target.owner_lifetimes.is_empty() {
                (String::new(), owner.to_owned())
            } else {
                let params = format!("<{}>", target.owner_lifetimes.join(", "));
                (params.clone(), format!("{owner}{params}"))
            };
            let _ = write!(
                text,
                "trait {trait_name}{params} {{\n{signature}\n}}\n\nimpl{params} {trait_name}{params} for {self_ty} {{\n{}{}\n}}\n",
                wrap(&doc, 100, "    ///"),
                copied.text
            );
        }
        _ => {
            let _ = writeln!(text, "{}{}", wrap(&doc, 100, "///"), copied.text);
        }
    }
    text.push('\n');
    for helper in copied.helpers.iter().chain(&target.projections) {
        text.push_str(helper);
        text.push('\n');
    }
    text.push_str(&target.render(&provenance));
    if let Parity::Test { production } = &extracted.parity {
        text.push_str(&target.render_parity(production));
    }
    text
}

/// `config.yaml`.
pub(crate) fn config_yaml(extracted: &Extracted, target: &Target) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# Profile of the copy of `{}` in target.rs.\n# Run from the workspace root:\n#   {} run --config {} --run-id smoke\n",
        target.function, extracted.runner, extracted.config_display
    );
    let _ = writeln!(
        text,
        "# Names the run directory's manifest and the profile; defaults to target.name.\nprofile_name: {}\n",
        extracted.target_name
    );
    let _ = writeln!(
        text,
        "target:\n  # The name the target registers with #[profile_target].\n  name: {}\n  # The file that defines it; the run refuses to start if it does not match.\n  import_path: {}\n  # false: prepare runs once per record before any pass, outside every range.\n  profile_prepare: false\n",
        extracted.target_name, extracted.target_display
    );
    if let Some(settings) = target.settings_name() {
        let _ = writeln!(
            text,
            "  # The copy's scalar parameters, read into `{settings}` in target.rs\n  # (a sweep can vary them): a key it does not have is refused.\n  parameters:"
        );
        for parameter in target.settings() {
            if let ValueSource::Setting { yaml, origin, .. } = &parameter.source {
                let _ = writeln!(text, "    # {origin}\n    {}: {yaml}", parameter.name);
            }
        }
        text.push('\n');
    }
    text.push_str("data_source:\n");
    if extracted.data_source == crate::CUSTOM_SOURCE {
        let _ = writeln!(
            text,
            "  # The snippet's own source, `{}` at the end of target.rs: its keys\n  \
             # are the fields of `{}`.\n  name: {}\n  record_count: 1",
            custom_source_type(extracted),
            custom_parameters_type(extracted),
            custom_source_name(extracted)
        );
    } else if extracted.data_source == "images" {
        text.push_str(
            "  # Image files decoded to RGB, in path order.\n  name: images\n  \
             # The directory of images: an absolute path (`~` is not expanded).\n  \
             directory: /path/to/images\n  decode: true\n  \
             # The first N files; `repeat: M` then cycles them into M records.\n  limit: 4\n",
        );
    } else {
        text.push_str(
            "  # Synthetic records: a 64x64 RGB image and the tensors `tensor`, `scores`\n  \
             # and `boxes`.\n  name: dummy\n  record_count: 1\n",
        );
        if target.takes_detections() {
            text.push_str(
                "  # Boxes, scores and class ids as a detector emits them before NMS (the\n  \
                 # copy takes `boxes` or `scores`): `count` boxes in `format` (xyxy, xywh,\n  \
                 # cxcywh) gathered around `objects` places of a `canvas` [width, height],\n  \
                 # a share `above` of the scores over `threshold`. Seeded by the record.\n  \
                 detections: {count: 1000, format: xyxy, objects: 20, classes: 80, above: 0.2, threshold: 0.5, canvas: [640, 640]}\n",
            );
        }
        if let Some(shape) = target.tensor_shape() {
            let shape: Vec<String> = shape.iter().map(ToString::to_string).collect();
            let _ = writeln!(
                text,
                "  # The shape of `tensor`, for the parameter that takes it.\n  tensor_shape: [{}]",
                shape.join(", ")
            );
        }
    }
    let _ = writeln!(
        text,
        "\n# cpu, cuda or cuda:N.\ndevice: {}",
        extracted.device
    );
    text.push_str(
        "# Unmeasured passes first; their outputs are validated.\n\
         warmup: 10\n\
         # Measured passes, each an `iteration <i>` range inside the capture range.\n\
         iterations: 100\n\
         # eager: read every record once before the passes (lazy needs profile_prepare: true).\n\
         record_loading: eager\n\
         # Seeds every random generator of the run: the same seed, the same data.\n\
         seed: 0\n\
         # Run validate on every warmup output (never on measured ones).\n\
         validate_output: true\n\
         # The NVTX range around the measured passes, which Nsight captures.\n\
         capture_range: profile-target\n\
         # Write runs/<run-id>/manifest.yaml.\n\
         write_manifest: true\n\
         # Left out on purpose: runs then go to runs/ beside this file. Setting it\n\
         # sends them to <output_dir>/<profile_name>/runs instead.\n\
         # output_dir: /absolute/path\n\
         \n\
         # Where the runner waits for the device; no-ops on the CPU.\n\
         cuda:\n  \
         synchronize_before_warmup: true\n  \
         synchronize_after_warmup: true\n  \
         synchronize_before_capture: true\n  \
         synchronize_after_capture: true\n  \
         # true adds a wait after every target call, inside the measured passes.\n  \
         synchronize_each_iteration: false\n",
    );
    text
}

/// `README.md`.
pub(crate) fn readme(extracted: &Extracted, copied: &Copied, target: &Target) -> String {
    let mut text = format!("# {}\n\n", extracted.target_name);
    let summary = match &extracted.production_doc {
        Some(doc) => format!(
            "Profiles a copy of `{}`, made by `profile-cli new`. Production says of it: \"{doc}\"",
            extracted.item
        ),
        None => format!(
            "Profiles a copy of `{}`, made by `profile-cli new`.",
            extracted.item
        ),
    };
    text.push_str(&wrap(&summary, 78, ""));

    text.push_str("\n## Provenance\n\n| | |\n| --- | --- |\n");
    let _ = writeln!(text, "| source file | `{}` |", extracted.source);
    let doc_note = copied
        .doc_line
        .map(|line| format!("; its doc comment starts at line {line}"))
        .unwrap_or_default();
    let _ = writeln!(
        text,
        "| lines | {}-{} (`{}`{doc_note}) |",
        copied.first_line, copied.last_line, target.function
    );
    let _ = writeln!(text, "| item | `{}` |", extracted.item);
    let git = match &extracted.git {
        GitState::Commit {
            commit,
            dirty: false,
        } => format!("`{commit}`; the source file had no uncommitted changes"),
        GitState::Commit {
            commit,
            dirty: true,
        } => {
            format!("`{commit}`; the source file had uncommitted changes, which the copy holds")
        }
        GitState::NoCommit => "none: the source file's repository has no commit yet".to_owned(),
        GitState::NotACheckout => "none: the source file is not in a git work tree".to_owned(),
        GitState::NoGit => "none: git was not found".to_owned(),
    };
    let _ = writeln!(text, "| git commit | {git} |");
    let copied_into = match &target.trait_name {
        Some(trait_name) => format!(
            "`target.rs`, method `{}` of trait `{trait_name}`",
            extracted.function_name
        ),
        None => format!("`target.rs`, function `{}`", extracted.function_name),
    };
    let _ = writeln!(text, "| copied into | {copied_into} |");
    let _ = writeln!(text, "| made by | `{}` |", extracted.command);

    text.push_str("\nHow it was made:\n\n");
    let made = how_it_was_made(extracted, copied, target);
    for line in made {
        text.push_str(&hanging(&line, 78, "- ", "  "));
    }

    text.push_str("\n## To do\n\n");
    let todo = to_do(extracted, target);
    for line in todo {
        text.push_str(&hanging(&line, 78, "- [ ] ", "  "));
    }

    text.push_str("\n## Assumptions and differences from production\n\n");
    text.push_str("To fill in. What `profile-cli new` knows:\n\n");
    let facts = known_facts(extracted, target);
    for fact in facts {
        text.push_str(&hanging(&fact, 78, "- ", "  "));
    }

    text.push_str("\n## Parity with production\n\n");
    let parity = parity_text(extracted);
    text.push_str(&wrap(&parity, 78, ""));

    text.push_str("\n## Requirements\n\n");
    if extracted.data_source == crate::CUSTOM_SOURCE {
        text.push_str(&wrap(
            &format!(
                "The snippet's own data source, `{}` at the end of target.rs, gives the dummy source's records until its `read` is written: make it read what production feeds the copy. To fill in: any model, file or environment variable the copied code needs.",
                custom_source_type(extracted)
            ),
            78,
            "",
        ));
    } else if extracted.data_source == "images" {
        text.push_str(&wrap(
            "Set `data_source.directory` in config.yaml to a directory of images (an absolute path). To fill in: any model, file or environment variable the copied code needs.",
            78,
            "",
        ));
    } else {
        text.push_str(&wrap(
            "The dummy data source builds its records in memory. To fill in: any model, file or environment variable the copied code needs.",
            78,
            "",
        ));
    }

    let _ = write!(
        text,
        "\n## Smoke run (no Nsight)\n\nFrom the workspace root:\n\n```sh\n{} run \\\n  --config {} \\\n  --run-id smoke\n```\n",
        extracted.runner, extracted.config_display
    );
    let _ = write!(
        text,
        "\n## Nsight Systems\n\nAdding `--print-nsys-command` prints the full `nsys profile` command instead\nof running; paste it to record the trace:\n\n```sh\n{} run \\\n  --config {} \\\n  --run-id smoke \\\n  --print-nsys-command\n```\n\nIt prints (`<repo>` is the absolute path of the workspace root):\n\n```text\n{}\n```\n",
        extracted.runner, extracted.config_display, extracted.nsys_command
    );
    let _ = write!(
        text,
        "\n## Where runs go\n\n`runs/<run-id>/manifest.yaml` beside config.yaml, with the trace beside it as\n`trace.nsys-rep` when recorded with Nsight. A run id is used once.\n\n## Regenerate\n\nFrom the workspace root (into a new directory: `new` never overwrites):\n\n```sh\n{}\n```\n",
        extracted.command
    );
    text
}

/// The README's "How it was made": what the copy is and how it differs
/// from the source's text.
fn how_it_was_made(extracted: &Extracted, copied: &Copied, target: &Target) -> Vec<String> {
    let mut made = vec![format!(
        "The function was copied byte for byte from the source file, with its comments and layout (lines {}-{}).",
        copied.first_line, copied.last_line
    )];
    made.push(match &copied.instrumentation {
        Instrumentation::KeptAttribute => {
            "Its `#[nvtx_range]` is kept: the copy runs inside a range named after it.".to_owned()
        }
        Instrumentation::AddedAttribute => {
            "`#[nvtx_range]` is added: the copy runs inside a range named after it.".to_owned()
        }
        Instrumentation::Statements { name, first, last } => format!(
            "A range `{name}` is opened before the statements of lines {first}-{last} and closed after them (`_snippet_range`)."
        ),
    });
    if let Some(note) = &copied.range_note {
        made.push(format!(
            "The line range was not instrumented as statements: {note}."
        ));
    }
    made.extend(
        copied
            .changes
            .iter()
            .map(|change| format!("{}.", sentence_case(change))),
    );
    if extracted.module_items.is_empty() {
        made.push("It names no other item of its module.".to_owned());
    } else {
        made.push(format!(
            "The items of `{}` it names are not copied but imported from production, so the copy runs the production code: {}.",
            extracted.module,
            extracted
                .module_items
                .iter()
                .map(|i| format!("`{i}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !extracted.left_out.is_empty() {
        made.push(format!(
            "The imports of the source module that the copy does not name are left out. These could be traits whose methods it calls, which it would need back: {}.",
            extracted
                .left_out
                .iter()
                .map(|i| format!("`{i}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let (Some(trait_name), Some(receiver), Some(owner)) =
        (&target.trait_name, &target.receiver, &extracted.owner)
    {
        let built = if receiver.default {
            format!("built with `{owner}::default()`")
        } else {
            "built by `build_target`, which is still to write".to_owned()
        };
        let how = match receiver.pass {
            super::scaffold::Pass::Ref => "`run` lends it to every call (`&self`)",
            super::scaffold::Pass::RefMut => {
                "`run` lends it mutably to every call (`&mut self`): what a call changes, the next call sees, across passes and records"
            }
            _ => "`run` passes every call a copy of it (`self` by value)",
        };
        made.push(format!(
            "`self`: the method is copied unchanged into `impl {trait_name} for {owner}`, a trait `target.rs` declares, so its `self` is still a `{owner}` and its body reads fields and calls methods as production does. The target holds that `{owner}` in its field `receiver`, {built}; {how}."
        ));
    } else if let (Some(trait_name), Some(owner)) = (&target.trait_name, &extracted.owner) {
        made.push(format!(
            "The associated function is copied unchanged into `impl {trait_name} for {owner}`, a trait `target.rs` declares, so `Self` is still `{owner}`."
        ));
    }
    made
}

/// The README's to-do list.
fn to_do(extracted: &Extracted, target: &Target) -> Vec<String> {
    let mut todo = Vec::new();
    for unresolved in &extracted.unresolved {
        todo.push(format!(
            "Resolve `{}`: {}. Make it reachable in production, or copy it into `target.rs`.",
            unresolved.name, unresolved.reason
        ));
    }
    for parameter in target.unmapped() {
        todo.push(format!(
            "Map `{}` in `prepare`: the types do not say where it comes from (it returns an error until then).",
            parameter.declared
        ));
    }
    if target.needs_factory() {
        todo.push("Write `build_target`: it makes the `self` of the copied method (it returns an error until then).".to_owned());
    }
    todo.push("Place ranges (`profiling_range`) around the meaningful operations inside the copied body: decoding, model calls, filtering, NMS.".to_owned());
    todo.push("Fill in `validate` (what production promises of the output) and `summarize` (a few values that say what came out).".to_owned());
    if let Parity::Unavailable { .. } = &extracted.parity {
        todo.push(
            "Compare the copy against production by hand, in a unit test in `target.rs`: no parity test could be made (see Parity with production)."
                .to_owned(),
        );
    }
    todo
}

/// What `new` knows of the snippet's assumptions.
fn known_facts(extracted: &Extracted, target: &Target) -> Vec<String> {
    let mut facts = Vec::new();
    for parameter in &target.parameters {
        if parameter.source != ValueSource::Unmapped {
            facts.push(format!(
                "`{}` is {}.",
                parameter.declared,
                parameter.describe_source()
            ));
        }
    }
    if target.parameters.iter().any(|p| {
        matches!(
            p.pass,
            super::scaffold::Pass::RefMut | super::scaffold::Pass::ViewMut
        )
    }) {
        facts.push("Parameters taken by `&mut` are cloned from the prepared inputs in every `run` call: inside the measured pass, outside the copy's range.".to_owned());
    }
    // Borrowed parameters held owned, lent to each call.
    let lent: Vec<String> = target
        .parameters
        .iter()
        .filter(|p| {
            matches!(
                p.pass,
                super::scaffold::Pass::Ref
                    | super::scaffold::Pass::ViewRef
                    | super::scaffold::Pass::View
            ) && p.declared.contains('&')
        })
        .map(|p| format!("`{}` as `{}`", p.declared, p.field_type))
        .collect();
    if !lent.is_empty() {
        facts.push(format!(
            "Borrowed parameters are held owned by the prepared inputs and lent to each call: {}.",
            lent.join(", ")
        ));
    }
    let statics: Vec<String> = target
        .parameters
        .iter()
        .map(|p| &p.field_type)
        .chain(target.receiver.as_ref().map(|r| &r.type_text))
        .filter(|ty| ty.contains("'static"))
        .map(|ty| format!("`{ty}`"))
        .collect();
    if !statics.is_empty() {
        facts.push(format!(
            "Types that borrow are held with `'static` lifetimes (the target outlives every call): {}; what they borrow must live as long (a `String` leaked once in `prepare`, or data of the program).",
            statics.join(", ")
        ));
    }
    if target
        .parameters
        .iter()
        .any(|p| p.pass == super::scaffold::Pass::Clone)
    {
        facts.push(
            "Parameters taken by value are cloned from the prepared inputs in every `run` call."
                .to_owned(),
        );
    }
    match &target.output {
        super::scaffold::Output::Discarded(ty) => facts.push(format!(
            "The result (`{ty}`) borrows from the inputs: `run` passes it to `black_box` and returns nothing."
        )),
        super::scaffold::Output::Result(_) => facts.push(
            "An `Err` from the copy fails the call, with its message.".to_owned(),
        ),
        super::scaffold::Output::Mutated(index) => facts.push(format!(
            "The function returns nothing: `run` returns `{}` as the call left it.",
            target.parameters[*index].name
        )),
        _ => {}
    }
    facts.push(format!(
        "The config runs it on the `{}` data source, on `{}`.",
        extracted.data_source, extracted.device
    ));
    facts
}

/// The README's "Parity with production".
fn parity_text(extracted: &Extracted) -> String {
    match &extracted.parity {
        Parity::Test { production } => format!(
            "`target.rs` ends with a parity test (`mod parity`): for each record of the data source of `config.yaml`, `prepare` makes the inputs once, then the copy and `{production}` run on them, and their outputs must be equal (`==` when the output type is `PartialEq`, else the target's `summarize` of each). An edit that changes what the copy computes fails it. `profile-cli check {}` runs it, as does `cargo test -p {}`.",
            extracted.target_name,
            extracted
                .snippets_crate
                .as_ref()
                .map(|_| crate::snippet_crate::package_name(
                    std::path::Path::new(&extracted.directory_display)
                        .file_name()
                        .map(|name| name.to_string_lossy())
                        .unwrap_or_default()
                        .as_ref()
                ))
                .unwrap_or_else(|| "inference-profiling".to_owned())
        ),
        Parity::Unavailable { why } => format!(
            "No parity test could be made: {why}. Compare the copy with production by hand."
        ),
    }
}

/// The registered name of a snippet's own source (`new --data-source custom`).
fn custom_source_name(extracted: &Extracted) -> String {
    crate::custom_source_name(&extracted.target_name)
}

fn custom_source_type(extracted: &Extracted) -> String {
    format!(
        "{}Records",
        crate::scaffold::pascal_case(&extracted.target_name)
    )
}

fn custom_parameters_type(extracted: &Extracted) -> String {
    format!("{}Parameters", custom_source_type(extracted))
}

/// The data source of a snippet's own that `new --data-source custom`
/// appends to target.rs: registered under [`custom_source_name`], its
/// parameters a struct deriving `Deserialize`, its records the dummy
/// source's (with the keys the copy's parameters need) until `read` is
/// written.
pub(crate) fn custom_source(extracted: &Extracted, target: &Target) -> String {
    let source = custom_source_type(extracted);
    let parameters = custom_parameters_type(extracted);
    let name = custom_source_name(extracted);
    let mut stand_in = vec!["record_count: {}".to_owned()];
    if target.takes_detections() {
        stand_in.push("detections: {{count: 1000}}".to_owned());
    }
    if let Some(shape) = target.tensor_shape() {
        let shape: Vec<String> = shape.iter().map(ToString::to_string).collect();
        stand_in.push(format!("tensor_shape: [{}]", shape.join(", ")));
    }
    format!(
        r#"
/// The records `{target_name}` profiles on: a data source of the snippet's
/// own, named `{name}` in config.yaml's `data_source.name`. It gives the
/// dummy source's records until `read` is written: make `read` give what
/// production feeds the copy (recorded inputs, a format of your own).
pub struct {source} {{
    parameters: {parameters},
    /// The dummy source's records, until `read` is written.
    stand_in: Box<dyn ::profiling_core::data::DataSource>,
}}

/// The keys of config.yaml's `data_source` besides `name`: one it has no
/// field for is refused, with its line and column, before anything runs.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct {parameters} {{
    /// How many records one pass reads.
    pub record_count: usize,
}}

#[data_source(name = "{name}")]
impl ::profiling_core::data::RecordSource for {source} {{
    type Parameters = {parameters};

    fn open(parameters: {parameters}) -> ::anyhow::Result<Self> {{
        ::anyhow::ensure!(parameters.record_count > 0, "record_count: must be >= 1");
        let stand_in = ::profiling_core::data::build(
            "dummy",
            &::serde_yaml::from_str(&format!("{{{{{stand_in}}}}}", parameters.record_count))?,
        )?;
        Ok({source} {{ parameters, stand_in }})
    }}

    fn len(&self) -> usize {{
        self.parameters.record_count
    }}

    fn read(&self, index: usize) -> ::anyhow::Result<DataRecord> {{
        Ok(self.stand_in.read(index)?)
    }}
}}
"#,
        target_name = extracted.target_name,
        stand_in = stand_in.join(", "),
    )
}
