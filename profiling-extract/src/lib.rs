//! Snippet extraction: what `profile-cli new` does. A crate of its own:
//! snippets link `profiling-core` and never need a Rust parser at run time.
//!
//! [`generate`] copies one production function (found with syn, copied
//! from the file's own bytes) into the three files of a snippet directory:
//! `target.rs` (the copy with an NVTX range, imports of the production
//! helpers it calls, and a `#[profile_target]` around it), `config.yaml`
//! and `README.md`. [`create`] writes them all or nothing; [`check_build`]
//! then compiles the snippets crate and [`smoke_run`] runs the new target.
//!
//! ```no_run
//! use profiling_extract::{self as snippet, NewSnippet};
//!
//! let request = NewSnippet::new(
//!     "nms",
//!     "examples/src/postprocess.rs::non_max_suppression".parse()?,
//!     std::path::Path::new("."),
//! );
//! let created = snippet::create(&request)?;
//! println!("{}", created.directory.display());
//! # Ok::<(), snippet::SnippetError>(())
//! ```

mod allocator;
mod cfg;
mod check;
mod copy;
mod names;
mod production;
mod render;
mod scaffold;
mod select;
mod snippet_crate;
mod source;
mod text;
pub mod workspace;

use std::path::{Path, PathBuf};

pub use check::{
    check_build, check_command, check_snippet, parity_run, smoke_command, smoke_run, BuildCheck,
    Diagnostic, ParityOutcome, ParityRun, SmokeRun, SnippetCheck, SnippetState,
};
pub use copy::Instrumentation;
pub use names::Unresolved;
pub use production::{Production, ProductionDependency};
pub use select::{Selector, SourceSpec, TypeArgs};
pub use snippet_crate::{
    draft_reason, is_included, manifest as snippet_manifest, mark_draft, package_name, package_of,
    remove_entry, set_included, stale_entries, unmark_draft, AddedDependency, StaleEntry,
    DRAFT_FILE,
};

use profiling_core::device::Device;
use profiling_core::driver::config::check_profile_name;
use source::{display_path, Manifest, ModuleLocation, SourceFile};

/// `new --data-source custom`: the snippet gets a data source of its own,
/// appended to its `target.rs` and named in its config.
pub const CUSTOM_SOURCE: &str = "custom";

/// The name the data source of the snippet `profile`'s own registers as
/// (`new --data-source custom`); a variant of the snippet renames it with
/// the target.
pub fn custom_source_name(profile: &str) -> String {
    format!("{profile}-records")
}

/// What `profile-cli new` was asked for.
#[derive(Debug, Clone)]
pub struct NewSnippet {
    /// The profile name: the target's name, and with `-` as `_` the
    /// directory's.
    pub name: String,
    /// What to copy.
    pub from: SourceSpec,
    /// A registered source's name, or [`CUSTOM_SOURCE`] for a source of
    /// the snippet's own.
    pub data_source: String,
    pub device: Device,
    /// The snippet directory to create, instead of
    /// `inference_profiling/snippets/<name with - as _>`.
    pub directory: Option<PathBuf>,
    /// The workspace `profile-cli` was built from: relative source files
    /// that are not found from the current directory are looked up here, and
    /// the snippet's files show paths from it (from the workspace of the
    /// crate that compiles the snippet, when that is another one).
    pub workspace_root: PathBuf,
    /// The types (and const values) of a generic function's parameters.
    pub type_args: TypeArgs,
    /// When the function only delegates to another of its file, copy that
    /// one instead (`--follow`).
    pub follow: bool,
}

impl NewSnippet {
    /// A request with the defaults: the dummy source, on the CPU, in the
    /// workspace's snippets directory.
    pub fn new(name: &str, from: SourceSpec, workspace_root: &Path) -> NewSnippet {
        NewSnippet {
            name: name.to_owned(),
            from,
            data_source: "dummy".to_owned(),
            device: Device::Cpu,
            directory: None,
            workspace_root: workspace_root.to_path_buf(),
            type_args: TypeArgs::default(),
            follow: false,
        }
    }
}

/// Why `new` did not create a snippet.
#[derive(Debug, thiserror::Error)]
pub enum SnippetError {
    /// Bad arguments: the name, `--from`, an option.
    #[error("{0}")]
    Usage(String),
    /// The source cannot be used: an unknown file, function or line range,
    /// or a function the command cannot copy.
    #[error("{0}")]
    Source(String),
    #[error("{} already exists: `new` never overwrites a snippet; choose another name or --directory, or remove it first", .0.display())]
    Exists(PathBuf),
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A `Cargo.toml` that cannot be read as the snippet crates need.
    #[error("{0}")]
    Manifest(String),
    /// cargo could not be started for the build check or the smoke run.
    #[error("cannot run `{command}`: {source}")]
    Cargo {
        command: String,
        source: std::io::Error,
    },
}

impl SnippetError {
    /// 2 for bad usage or an unusable source; 1 when writing or cargo failed.
    pub fn exit_code(&self) -> u8 {
        match self {
            SnippetError::Write { .. }
            | SnippetError::Read { .. }
            | SnippetError::Manifest(_)
            | SnippetError::Cargo { .. } => 1,
            _ => 2,
        }
    }
}

/// The crate that compiles the snippets under its `snippets/` directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnippetsCrate {
    /// The directory of its `Cargo.toml`.
    pub dir: PathBuf,
    pub package: String,
    /// Its dependencies, as code names them.
    pub dependencies: Vec<String>,
}

/// The command a user types to run snippets of the workspace at `root`:
/// `profile-cli` (which builds and runs the workspace's own `profile`
/// binary) where `init` made a profiling crate, `scripts/profile` in this
/// project's own checkout.
pub fn runner_command(root: &Path) -> &'static str {
    if workspace::profiling_crate(root).is_some() {
        "profile-cli"
    } else {
        "scripts/profile"
    }
}

/// The binary that runs snippets of the workspace at `root`, as
/// `--print-nsys-command` names it: the workspace's own `profile` where
/// `init` made a profiling crate, else this project's `profile-cli`.
fn runner_binary(root: &Path) -> PathBuf {
    if workspace::profiling_crate(root).is_some() {
        root.join("target/release/profile")
    } else {
        root.join("target/release/profile-cli")
    }
}

impl SnippetsCrate {
    /// The crate a snippet directory at `directory` is compiled by: the
    /// package whose `snippets/` holds it.
    pub fn of_directory(directory: &Path) -> Option<SnippetsCrate> {
        let snippets = directory.parent()?;
        if snippets.file_name()? != "snippets" {
            return None;
        }
        SnippetsCrate::at(snippets.parent()?)
    }

    /// The root of the workspace the crate belongs to: the nearest
    /// directory above it whose `Cargo.toml` has a `[workspace]`, else the
    /// crate's own.
    pub fn workspace_root(&self) -> PathBuf {
        self.dir
            .ancestors()
            .find(|dir| {
                std::fs::read_to_string(dir.join("Cargo.toml"))
                    .is_ok_and(|text| text.lines().any(|l| l.trim() == "[workspace]"))
            })
            .unwrap_or(&self.dir)
            .to_path_buf()
    }

    /// The snippets crate whose `Cargo.toml` is in `dir`, when there is one.
    pub fn at(dir: &Path) -> Option<SnippetsCrate> {
        let manifest = Manifest::read(dir)?;
        Some(SnippetsCrate {
            // Absolute: the commands it is given to can never read one of
            // its paths as an option.
            dir: std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
            package: manifest.package?,
            dependencies: manifest.dependencies,
        })
    }
}

/// What `new` made, and what it could not do for the user.
#[derive(Debug, Clone)]
pub struct Report {
    /// The target's (and profile's) name.
    pub target_name: String,
    /// The target's type in `target.rs`.
    pub type_name: String,
    /// The source file, from the workspace root when under it.
    pub source: String,
    /// `profiling_examples::postprocess::postprocess_detections`.
    pub item: String,
    /// The module the function is defined in.
    pub module: String,
    /// The function's name.
    pub function_name: String,
    /// For a method: its type.
    pub owner: Option<String>,
    /// The source lines copied.
    pub lines: (usize, usize),
    pub instrumentation: Instrumentation,
    /// Why a line range was instrumented as a whole function.
    pub range_note: Option<String>,
    /// `name: Type` and where `prepare` gets it.
    pub mapped: Vec<(String, String)>,
    /// `name: Type` of the parameters `prepare` cannot fill yet.
    pub unmapped: Vec<String>,
    /// Whether `build_target` is still to write (a method's `self`).
    pub needs_factory: bool,
    pub unresolved: Vec<Unresolved>,
    /// Imports the copy does not name, kept as possible traits.
    pub kept_for_traits: Vec<String>,
    /// Imports of the source module the copy does not name.
    pub left_out: Vec<String>,
    /// Items of the source module the copy imports from production.
    pub module_items: Vec<String>,
    /// Edits made to the copied text.
    pub changes: Vec<String>,
    pub warnings: Vec<String>,
    /// The first line of the production doc comment.
    pub production_doc: Option<String>,
    /// The commit of the source file's repository; `dirty` when the source
    /// file had uncommitted changes.
    pub git: profiling_core::driver::host::GitState,
    pub data_source: String,
    pub device: Device,
    /// The command that makes this snippet again.
    pub command: String,
    /// How messages name the snippet directory, its config and target files:
    /// from the workspace root when under it.
    pub directory_display: String,
    pub config_display: String,
    pub target_display: String,
    /// The `nsys profile` command, as `--print-nsys-command` prints it.
    pub nsys_command: String,
    /// The command that runs the snippet where it lives: `scripts/profile`
    /// in this project's checkout, `profile-cli` in a workspace `init`
    /// set up.
    pub runner: &'static str,
    /// The crate that compiles the snippet, when it lands in one.
    pub snippets_crate: Option<SnippetsCrate>,
    /// The source directory of the production library the copy comes
    /// from.
    pub production_src: Option<PathBuf>,
    /// The dependency on the production crate that `create` adds to the
    /// snippets crate, which did not have it.
    pub added_dependency: Option<AddedDependency>,
    /// Dependencies of the production crate the copy names and the
    /// snippets crate lacks: in the snippet's own `Cargo.toml`.
    pub snippet_dependencies: Vec<ProductionDependency>,
    /// Whether `target.rs` holds a parity test, and if not, why.
    pub parity: Parity,
    /// Where to move a snippet made outside every snippets directory for it
    /// to be compiled (the paths in its files name that place).
    pub move_to: Option<String>,
}

/// Whether a snippet can prove it computes what production computes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parity {
    /// `mod parity` in `target.rs` calls the copy and `production` (a path
    /// the snippet can name) on the same inputs and compares the outputs.
    Test { production: String },
    /// No parity test could be made: why.
    Unavailable { why: String },
}

/// A snippet ready to be written.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The directory to create.
    pub directory: PathBuf,
    /// File names and contents.
    pub files: Vec<(&'static str, String)>,
    pub report: Report,
}

impl Generated {
    /// The contents of one of the files.
    pub fn file(&self, name: &str) -> Option<&str> {
        self.files
            .iter()
            .find(|(file, _)| *file == name)
            .map(|(_, text)| text.as_str())
    }
}

/// Works out a snippet without writing anything: every check `new` makes
/// before it writes.
pub fn generate(request: &NewSnippet) -> Result<Generated, SnippetError> {
    generate_with(request, &[], true)
}

/// [`generate`]; `leave_out` are imports (as [`Report::kept_for_traits`]
/// shows them) not to keep after all; `fresh`: the snippet must not exist
/// yet.
fn generate_with(
    request: &NewSnippet,
    leave_out: &[String],
    fresh: bool,
) -> Result<Generated, SnippetError> {
    check_request(request)?;
    let directory = destination(request, fresh)?;
    let snippets_crate = SnippetsCrate::of_directory(&directory);
    let mut warnings = Vec::new();
    if fresh {
        check_name_is_free(request, &directory, snippets_crate.as_ref(), &mut warnings)?;
    }
    // The snippet's files name paths from the workspace that compiles it,
    // where its commands run.
    let root = &snippets_crate
        .as_ref()
        .map_or_else(|| request.workspace_root.clone(), |k| k.workspace_root());

    let path = find_source(&request.from.file, &request.workspace_root)?;
    let display = display_path(&path, root);
    let source = SourceFile::read(&path, display.clone())?;
    let function = select::find(&source, &request.from.selector)?;
    select::check_supported(&source, &function, &request.type_args)?;

    let location = ModuleLocation::of_file(&path);
    let extraction = Extraction {
        request,
        directory: &directory,
        snippets_crate: snippets_crate.as_ref(),
        root,
        path: &path,
        display: &display,
        source: &source,
        function: &function,
        location: &location,
    };
    let crates = extraction.crates();
    let imports = extraction.imports(&crates, leave_out);
    let lines = match request.from.selector {
        Selector::Lines { start, end } => Some((start, end)),
        Selector::Path(_) => None,
    };
    let indent = if function.owner.is_some() { 4 } else { 0 };
    let features = crates.production.as_ref().and_then(|p| p.features.as_ref());
    extraction.check_compiled(crates.production.as_ref())?;
    if let Some(callee) = thin_wrapper(&function) {
        if let Some(followed) = extraction.follow(&callee, leave_out, fresh)? {
            return Ok(followed);
        }
        warnings.push(extraction.delegation_warning(&callee));
    }
    let mut copied = copy::copy(&source, &function, &location, lines, indent, features);
    extraction.copy_helpers(&mut copied, &imports, features);
    let target = extraction.plan_target();
    let mut report = extraction.report(&crates, &copied, &imports, &target, warnings);
    let mut target_rs = render::target_rs(&report, &copied, &imports, &target);
    if request.data_source == CUSTOM_SOURCE {
        target_rs.push_str(&render::custom_source(&report, &target));
    }
    if let (Some(_), Some(production)) = (&report.snippets_crate, &crates.production) {
        report.snippet_dependencies =
            named_dependencies(production, &crates.dependencies, &target_rs);
    }
    // The settings struct derives serde's `Deserialize`: production's serde
    // gets the `derive` feature, or serde comes on its own.
    if target.settings_name().is_some() {
        add_serde_derive(
            &mut report,
            &crates.dependencies,
            "the settings struct of the copy's scalar parameters derives `serde::Deserialize`",
        );
    }
    if request.data_source == CUSTOM_SOURCE {
        add_serde_derive(
            &mut report,
            &crates.dependencies,
            "the parameters of the snippet's own data source derive `serde::Deserialize`",
        );
    }
    let files = extraction.files(&report, &copied, &target, target_rs, &crates)?;
    Ok(Generated {
        directory,
        files,
        report,
    })
}

/// Refuses a bad profile name and an unknown data source.
fn check_request(request: &NewSnippet) -> Result<(), SnippetError> {
    check_profile_name(&request.name)
        .map_err(|message| SnippetError::Usage(format!("profile name: {message}")))?;
    if request.data_source == CUSTOM_SOURCE {
        return Ok(());
    }
    if let Err(error) = profiling_core::data::find_source(&request.data_source) {
        return Err(SnippetError::Usage(format!("--data-source: {error}")));
    }
    Ok(())
}

/// The crates a snippet can name, and the production crate it copies from.
struct Crates {
    /// Those of the crate that compiles the snippet, else those of the
    /// workspace's snippets crate, with the one `create` adds.
    dependencies: Vec<String>,
    /// The package whose dependencies those are.
    snippets_package: String,
    /// The dependency on the production crate that `create` adds to the
    /// snippets crate, which lacks it.
    added_dependency: Option<AddedDependency>,
    /// The package the source file belongs to, when it has a manifest.
    production: Option<Production>,
    /// `dependencies`, and in a snippets crate the production crate's own
    /// dependencies, which the snippet's Cargo.toml can add.
    visible: Vec<String>,
}

/// A function being copied into a snippet, and where the snippet goes:
/// what the snippet's parts are worked out from.
struct Extraction<'a> {
    request: &'a NewSnippet,
    /// The snippet directory.
    directory: &'a Path,
    /// The crate that compiles the snippet, when it lands in one.
    snippets_crate: Option<&'a SnippetsCrate>,
    /// The workspace root the snippet's files name paths from.
    root: &'a Path,
    /// The source file.
    path: &'a Path,
    /// The source file, as messages name it.
    display: &'a str,
    source: &'a SourceFile,
    function: &'a select::Function<'a>,
    location: &'a ModuleLocation,
}

impl Extraction<'_> {
    /// The crates the snippet can name, with those `create` and the
    /// snippet's own Cargo.toml add.
    fn crates(&self) -> Crates {
        // Which crates the snippet can name: those of the crate that
        // compiles it, else those of the workspace's snippets crate.
        let dependencies_of = self.snippets_crate.cloned().or_else(|| {
            SnippetsCrate::at(&self.request.workspace_root.join("inference_profiling"))
        });
        let (mut dependencies, snippets_package) = match &dependencies_of {
            Some(krate) => (krate.dependencies.clone(), krate.package.clone()),
            None => (Vec::new(), "inference-profiling".to_owned()),
        };
        // A crate of the workspace the snippets crate does not depend on
        // yet: `create` adds the dependency, so the snippet names it as if
        // it did.
        let added_dependency = match (self.snippets_crate, &self.location.crate_ident) {
            (Some(krate), Some(ident)) if !dependencies.contains(ident) => {
                snippet_crate::path_dependency(krate, self.path)
            }
            _ => None,
        };
        if let Some(added) = &added_dependency {
            dependencies.push(source::crate_ident(&added.package));
        }
        // The production crate's own dependencies: a crate the copy names
        // that the snippets crate lacks goes into the snippet's Cargo.toml,
        // as production declares it, so the copy names it as if it were
        // there.
        let production = source::Manifest::of_file(self.path)
            .and_then(|manifest| production::Production::read(&manifest.dir, self.directory));
        let mut visible = dependencies.clone();
        if let (Some(_), Some(production)) = (self.snippets_crate, &production) {
            visible.extend(
                production
                    .dependencies
                    .iter()
                    .filter(|d| !dependencies.contains(&d.ident))
                    .map(|d| d.ident.clone()),
            );
        }
        Crates {
            dependencies,
            snippets_package,
            added_dependency,
            production,
            visible,
        }
    }

    /// The copy's imports, without those of `leave_out`.
    fn imports(&self, crates: &Crates, leave_out: &[String]) -> names::Imports {
        let mut imports = names::imports(
            self.source,
            self.function,
            self.location,
            &crates.visible,
            &crates.snippets_package,
            self.root,
        );
        // Kept as possible traits, found unused by the compiler.
        imports
            .paths
            .retain(|path| !leave_out.contains(&path.display()));
        imports
            .kept_for_traits
            .retain(|path| !leave_out.contains(path));
        imports
    }

    /// Refuses a function that `production` is not built with, by its
    /// `cfg`.
    fn check_compiled(&self, production: Option<&Production>) -> Result<(), SnippetError> {
        let Some(production) = production else {
            return Ok(());
        };
        if let Some(features) = &production.features {
            if let Some(predicate) = cfg::function_is_off(self.function.attrs, features) {
                return Err(SnippetError::Source(format!(
                    "`{}` is compiled only with `cfg({predicate})`, which {} is not built with ({}): there is nothing of it to profile",
                    self.function.label, production.package, production.features_from
                )));
            }
        }
        Ok(())
    }

    /// The line where `callee`, a function of the module, is defined.
    fn callee_line(&self, callee: &str) -> Option<usize> {
        self.function.scope.iter().find_map(|item| match item {
            syn::Item::Fn(f) if f.sig.ident == callee => {
                Some(self.source.lines(f.sig.ident.span()).0)
            }
            _ => None,
        })
    }

    /// With `--follow`, the snippet of `callee`, the function of the module
    /// the copied one only delegates to, copied in its place; `None`
    /// without `--follow` or when `callee` is not in the module.
    fn follow(
        &self,
        callee: &str,
        leave_out: &[String],
        fresh: bool,
    ) -> Result<Option<Generated>, SnippetError> {
        let callee_item = self.function.scope.iter().find_map(|item| match item {
            syn::Item::Fn(f) if f.sig.ident == callee => Some(f),
            _ => None,
        });
        let (true, Some(callee_fn)) = (self.request.follow, callee_item) else {
            return Ok(None);
        };
        // The body that does the work: copied in its place, with the type
        // arguments that are its own.
        let mut path = self.function.inline_modules.clone();
        path.push(callee.to_owned());
        let mut followed = self.request.clone();
        followed.follow = false;
        followed.from = SourceSpec {
            file: self.request.from.file.clone(),
            selector: Selector::Path(path),
        };
        followed.type_args = self.request.type_args.for_generics(&callee_fn.sig.generics);
        let mut generated = generate_with(&followed, leave_out, fresh)?;
        generated.report.warnings.insert(
            0,
            format!(
                "`{}` only prepares its arguments and delegates to `{callee}`: followed, the snippet copies `{callee}` ({}:{})",
                self.function.label,
                self.display,
                self.callee_line(callee).unwrap_or_default()
            ),
        );
        Ok(Some(generated))
    }

    /// The warning that the copied function only delegates to `callee`, and
    /// how to profile `callee` instead.
    fn delegation_warning(&self, callee: &str) -> String {
        let display = self.display;
        let next = match self.callee_line(callee) {
            Some(line) => format!(
                "to profile its body instead: profile-cli new {} --from {display}::{callee} (defined at line {line}), or `--follow`",
                callee.replace('_', "-")
            ),
            None => format!("to profile its body instead, copy `{callee}` with `profile-cli new`"),
        };
        format!(
            "`{}` only prepares its arguments and delegates to `{callee}`: the profile times one call into production code, not a body; {next}",
            self.function.label
        )
    }

    /// Copies the private items and root modules of production that the
    /// copy calls (`imports`) beside it, and says so in its changes.
    fn copy_helpers(
        &self,
        copied: &mut copy::Copied,
        imports: &names::Imports,
        features: Option<&std::collections::BTreeSet<String>>,
    ) {
        let (source, function, location) = (self.source, self.function, self.location);
        let mut helper_names = Vec::new();
        for &index in &imports.helpers {
            let item = &function.scope[index];
            if let Some(text) =
                copy::copy_helper(source, item, location, &function.inline_modules, features)
            {
                if matches!(item, syn::Item::Macro(_)) {
                    copied.macros.push(text);
                } else {
                    copied.helpers.push(text);
                }
                helper_names.push(format!(
                    "`{}` (line {})",
                    helper_label(item),
                    source.lines(syn::spanned::Spanned::span(item)).0
                ));
            }
        }
        for module in &imports.private_modules {
            let Some(file) = location.private_root_module(module) else {
                continue;
            };
            let shown = display_path(&file, self.root);
            let crate_name = location.crate_ident.clone().unwrap_or_default();
            if let Some(text) = copy::copy_private_module(module, &file, &shown, &crate_name) {
                copied.helpers.push(text);
                helper_names.push(format!("module `{module}` ({shown})"));
            }
        }
        if !helper_names.is_empty() {
            copied.changes.push(format!(
                "private items of the production module it calls are copied beside it, marked as copied helpers: {}",
                helper_names.join(", ")
            ));
        }
        for (name, fields) in &imports.local_types {
            copied.changes.push(format!(
                "`{name}` is public, but the copied code reads its private fields ({}): it is copied too, with its impl blocks, and the snippet works on its own `{name}`, not production's",
                fields
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let foreign = &imports.foreign;
        let mut foreign_names = Vec::new();
        for module in &foreign.modules {
            for &index in &module.helpers {
                let item = &module.source.syntax.items[index];
                if let Some(text) =
                    copy::copy_helper(&module.source, item, &module.location, &[], features)
                {
                    if matches!(item, syn::Item::Macro(_)) {
                        copied.macros.push(text);
                    } else {
                        copied.helpers.push(text);
                    }
                    let (first, last) = module.source.lines(syn::spanned::Spanned::span(item));
                    foreign_names.push(format!(
                        "`{}` ({}:{first}-{last})",
                        helper_label(item),
                        module.source.display
                    ));
                }
            }
        }
        if !foreign_names.is_empty() {
            copied.changes.push(format!(
                "items of other modules of the crate that the snippet cannot name (private, `pub(crate)` or in a private module) and that it reaches are copied beside it, marked as copied helpers: {}",
                foreign_names.join(", ")
            ));
        }
        let mut trait_names: Vec<String> = Vec::new();
        for methods in &foreign.methods {
            let module = &foreign.modules[methods.module];
            let syn::Item::Impl(imp) = &module.source.syntax.items[methods.impl_index] else {
                continue;
            };
            let owner = select::type_name(&imp.self_ty).unwrap_or_else(|| "Type".to_owned());
            let base = format!("{owner}CopiedMethods");
            let mut name = base.clone();
            let mut count = 1;
            while trait_names.contains(&name) {
                count += 1;
                name = format!("{base}{count}");
            }
            if let Some(text) = copy::copy_methods(
                &module.source,
                imp,
                &methods.methods,
                &module.location,
                &name,
                features,
            ) {
                copied.helpers.push(text);
                let listed: Vec<String> = methods
                    .methods
                    .iter()
                    .filter_map(|&i| match imp.items.get(i) {
                        Some(syn::ImplItem::Fn(f)) => {
                            let (first, last) = module.source.lines(syn::spanned::Spanned::span(f));
                            Some(format!(
                                "`{}` ({}:{first}-{last})",
                                f.sig.ident, module.source.display
                            ))
                        }
                        _ => None,
                    })
                    .collect();
                copied.changes.push(format!(
                    "methods of production's `{owner}` that are not `pub` and that it calls are copied into the snippet's trait `{name}`, implemented for `{owner}`, so the calls build unchanged: {}",
                    listed.join(", ")
                ));
                trait_names.push(name);
            }
        }
    }

    /// The target around the copy.
    fn plan_target(&self) -> scaffold::Target {
        let function = self.function;
        // A literal a production call passes is the default of a scalar
        // parameter's setting.
        let call_site = source::Manifest::of_file(self.path).and_then(|manifest| {
            scaffold::find_call_site(
                &manifest.dir,
                self.root,
                &function.name(),
                function.sig.inputs.len(),
                function.owner.is_some(),
            )
        });
        scaffold::plan(
            self.source,
            function,
            &self.request.name,
            &self.request.type_args,
            call_site.as_ref(),
            self.location.lib_root.as_deref().and_then(Path::parent),
        )
    }

    /// Where a snippet made outside every snippets directory is to be moved
    /// for it to be compiled (the paths in its files name that place), with
    /// a warning when that place is taken.
    fn move_to(&self, warnings: &mut Vec<String>) -> Option<PathBuf> {
        if self.snippets_crate.is_some() {
            return None;
        }
        let placed = self
            .request
            .workspace_root
            .join("inference_profiling")
            .join("snippets")
            .join(self.request.name.replace('-', "_"));
        if placed.exists() {
            warnings.push(format!(
                "{} already exists: give the snippet another name before moving it there",
                display_path(&placed, self.root)
            ));
        }
        Some(placed)
    }

    /// What `new` makes and what it could not do for the user, all but the
    /// crates the snippet's own Cargo.toml adds.
    fn report(
        &self,
        crates: &Crates,
        copied: &copy::Copied,
        imports: &names::Imports,
        target: &scaffold::Target,
        mut warnings: Vec<String>,
    ) -> Report {
        let (request, function, root) = (self.request, self.function, self.root);
        let module = self.location.path(&function.inline_modules);
        let item = format!("{module}::{}", function.label);
        let parity = parity_of(
            self.source,
            function,
            self.location,
            &crates.dependencies,
            &crates.snippets_package,
            target,
            &item,
            &imports.local_types,
        );
        // Outside a snippets directory nothing compiles the snippet: its
        // files name the paths it will have once moved into the
        // workspace's.
        let move_to = self.move_to(&mut warnings);
        let home = move_to.as_deref().unwrap_or(self.directory);
        let config_path = home.join("config.yaml");
        let target_path = home.join("target.rs");
        Report {
            target_name: request.name.clone(),
            type_name: target.type_name.clone(),
            source: self.display.to_owned(),
            item,
            module,
            function_name: function.name(),
            owner: function.owner_name(),
            lines: (copied.first_line, copied.last_line),
            instrumentation: copied.instrumentation.clone(),
            range_note: copied.range_note.clone(),
            mapped: target
                .parameters
                .iter()
                .filter(|p| p.source != scaffold::ValueSource::Unmapped)
                .map(|p| (p.declared.clone(), p.describe_source()))
                .collect(),
            unmapped: target
                .unmapped()
                .iter()
                .map(|p| p.declared.clone())
                .collect(),
            needs_factory: target.needs_factory(),
            production_src: self
                .location
                .lib_root
                .as_deref()
                .and_then(Path::parent)
                .map(Path::to_path_buf),
            unresolved: imports.unresolved.clone(),
            left_out: imports.left_out.clone(),
            kept_for_traits: imports.kept_for_traits.clone(),
            module_items: imports.module_items.clone(),
            changes: copied.changes.clone(),
            warnings,
            production_doc: first_doc_paragraph(function.attrs),
            git: git_provenance(self.path),
            data_source: request.data_source.clone(),
            device: request.device,
            command: command_line(request, self.display, self.directory, root),
            nsys_command: nsys_command(request, root, &config_path),
            runner: runner_command(root),
            directory_display: display_path(self.directory, root),
            config_display: display_path(&config_path, root),
            target_display: display_path(&target_path, root),
            snippets_crate: self.snippets_crate.cloned(),
            added_dependency: crates.added_dependency.clone(),
            snippet_dependencies: Vec::new(),
            parity,
            move_to: move_to.as_deref().map(|placed| display_path(placed, root)),
        }
    }

    /// The snippet's files: `target.rs` (`target_rs`), `config.yaml` and
    /// `README.md`, and in a snippets crate its `Cargo.toml` and `DRAFT`.
    fn files(
        &self,
        report: &Report,
        copied: &copy::Copied,
        target: &scaffold::Target,
        target_rs: String,
        crates: &Crates,
    ) -> Result<Vec<(&'static str, String)>, SnippetError> {
        let mut files = vec![
            ("target.rs", target_rs),
            ("config.yaml", render::config_yaml(report, target)),
            ("README.md", render::readme(report, copied, target)),
        ];
        // In a snippets crate: a crate of its own, a draft until checked.
        if let Some(krate) = &report.snippets_crate {
            files.push((
                "Cargo.toml",
                snippet_crate::manifest_with(
                    krate,
                    self.directory,
                    &self.request.name,
                    crates.added_dependency.as_ref(),
                    &report.snippet_dependencies,
                )?,
            ));
            files.push((
                DRAFT_FILE,
                snippet_crate::draft_text(
                    &self.request.name,
                    "not checked yet: `profile-cli new` made it and has not built it",
                    "",
                ),
            ));
        }
        Ok(files)
    }
}

/// The dependencies of `production` that `target_rs` names and the
/// snippets crate (with `dependencies`) lacks.
fn named_dependencies(
    production: &Production,
    dependencies: &[String],
    target_rs: &str,
) -> Vec<ProductionDependency> {
    let named = crate_roots(target_rs);
    production
        .dependencies
        .iter()
        .filter(|d| named.contains(&d.ident) && !dependencies.contains(&d.ident))
        .cloned()
        .collect()
}

/// For a snippet whose settings struct derives `serde::Deserialize`: the
/// `derive` feature on the serde its Cargo.toml takes from production, or
/// in a snippets crate without serde (`dependencies`) serde on its own.
fn add_serde_derive(report: &mut Report, dependencies: &[String], why: &str) {
    if let Some(serde) = report
        .snippet_dependencies
        .iter_mut()
        .find(|d| d.ident == "serde")
    {
        let mut features: Vec<String> = serde
            .spec
            .get("features")
            .and_then(toml_edit::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|f| f.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if !features.iter().any(|f| f == "derive") {
            features.push("derive".to_owned());
            serde.spec.insert(
                "features",
                toml_edit::Value::Array(features.into_iter().collect()),
            );
        }
        serde.reason = format!("{why} (as {} declares it)", serde.declared_by);
    }
    let serde_needed = !dependencies.iter().any(|d| d == "serde")
        && !report
            .snippet_dependencies
            .iter()
            .any(|d| d.ident == "serde");
    if let (true, Some(_)) = (serde_needed, &report.snippets_crate) {
        let mut spec = toml_edit::InlineTable::new();
        spec.insert("version", "1".into());
        spec.insert(
            "features",
            toml_edit::Value::Array(std::iter::once("derive").collect()),
        );
        report.snippet_dependencies.push(ProductionDependency {
            key: "serde".to_owned(),
            ident: "serde".to_owned(),
            spec,
            declared_by: String::new(),
            reason: why.to_owned(),
        });
    }
}

/// The function a `function` only delegates to, when it does: its body is
/// `let`s and assertions without loops or closures, ending in one call of
/// a function by a plain name or path (not a method, not a macro).
fn thin_wrapper(function: &select::Function<'_>) -> Option<String> {
    struct Work(bool);
    impl<'ast> syn::visit::Visit<'ast> for Work {
        fn visit_expr(&mut self, expr: &'ast syn::Expr) {
            if matches!(
                expr,
                syn::Expr::ForLoop(_)
                    | syn::Expr::While(_)
                    | syn::Expr::Loop(_)
                    | syn::Expr::Closure(_)
                    | syn::Expr::Match(_)
                    | syn::Expr::If(_)
            ) {
                self.0 = true;
            }
            syn::visit::visit_expr(self, expr);
        }
    }
    let (last, rest) = function.block.stmts.split_last()?;
    let syn::Stmt::Expr(syn::Expr::Call(call), None) = last else {
        return None;
    };
    let syn::Expr::Path(path) = &*call.func else {
        return None;
    };
    let callee = path.path.segments.last()?.ident.to_string();
    if callee == function.name() || callee.starts_with(char::is_uppercase) {
        return None;
    }
    let mut work = Work(false);
    for stmt in rest {
        match stmt {
            syn::Stmt::Local(_) | syn::Stmt::Macro(_) => {
                syn::visit::Visit::visit_stmt(&mut work, stmt)
            }
            _ => return None,
        }
    }
    syn::visit::Visit::visit_expr_call(&mut work, call);
    (!work.0).then_some(callee)
}

/// How a copied helper is named in messages: `gaussian_pdf`, `impl Kernel`.
fn helper_label(item: &syn::Item) -> String {
    match item {
        syn::Item::Fn(i) => i.sig.ident.to_string(),
        syn::Item::Const(i) => i.ident.to_string(),
        syn::Item::Static(i) => i.ident.to_string(),
        syn::Item::Type(i) => i.ident.to_string(),
        syn::Item::Struct(i) => i.ident.to_string(),
        syn::Item::Enum(i) => i.ident.to_string(),
        syn::Item::Trait(i) => format!("trait {}", i.ident),
        syn::Item::Mod(i) => format!("mod {}", i.ident),
        syn::Item::Macro(syn::ItemMacro {
            ident: Some(ident), ..
        }) => format!("{ident}!"),
        syn::Item::Impl(i) => {
            let ty = &i.self_ty;
            format!("impl {}", quote::quote!(#ty))
        }
        _ => "item".to_owned(),
    }
}

/// The first segments of the paths `text` writes (`a` of `a::b`, in `use`
/// declarations, types, expressions and macro arguments alike): the crates
/// it may name.
fn crate_roots(text: &str) -> std::collections::BTreeSet<String> {
    fn walk(tokens: proc_macro2::TokenStream, roots: &mut std::collections::BTreeSet<String>) {
        let tokens: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
        for (index, token) in tokens.iter().enumerate() {
            match token {
                proc_macro2::TokenTree::Group(group) => walk(group.stream(), roots),
                proc_macro2::TokenTree::Ident(ident) => {
                    let path_follows = matches!(
                        (tokens.get(index + 1), tokens.get(index + 2)),
                        (Some(proc_macro2::TokenTree::Punct(a)), Some(proc_macro2::TokenTree::Punct(b)))
                            if a.as_char() == ':' && b.as_char() == ':' && a.spacing() == proc_macro2::Spacing::Joint
                    );
                    // `a::b`, not `x::a::b`.
                    let continues = index >= 1
                        && matches!(&tokens[index - 1], proc_macro2::TokenTree::Punct(p) if p.as_char() == ':');
                    if path_follows && !continues {
                        roots.insert(ident.to_string());
                    }
                }
                _ => {}
            }
        }
    }
    let mut roots = std::collections::BTreeSet::new();
    if let Ok(tokens) = text.parse::<proc_macro2::TokenStream>() {
        walk(tokens, &mut roots);
    }
    roots
}

/// Whether the snippet can call the production function it copies, so that
/// a parity test can compare the two: the production path to call, or why
/// not.
fn parity_of(
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
    // A function of a private module its parent re-exports is called
    // where the parent puts it.
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

/// The imports `new` kept as possible traits (`created`'s
/// [`Report::kept_for_traits`]) that the compiler found unused in the
/// snippet's first build (its unused-import warnings in `diagnostics`):
/// they were not traits the copy needs.
pub fn unused_kept_imports(created: &Generated, diagnostics: &[Diagnostic]) -> Vec<String> {
    let mut unused = Vec::new();
    for diagnostic in diagnostics {
        let first = diagnostic.rendered.lines().next().unwrap_or_default();
        let Some(names) = first
            .strip_prefix("warning: unused import: ")
            .or_else(|| first.strip_prefix("warning: unused imports: "))
        else {
            continue;
        };
        let named: Vec<&str> = names.split('`').skip(1).step_by(2).collect();
        for kept in &created.report.kept_for_traits {
            let binding = kept.rsplit("::").next().unwrap_or(kept);
            let binding = binding.rsplit(" as ").next().unwrap_or(binding);
            if named.iter().any(|n| *n == kept || *n == binding) && !unused.contains(kept) {
                unused.push(kept.clone());
            }
        }
    }
    unused
}

/// Writes the snippet `created` was made for again without the imports
/// `leave_out` (from [`unused_kept_imports`]): its `target.rs`,
/// `config.yaml`, `README.md` and `Cargo.toml` (the crates named may be
/// fewer), its `DRAFT` as it is.
pub fn rewrite_without_imports(
    request: &NewSnippet,
    created: &Generated,
    leave_out: &[String],
) -> Result<Generated, SnippetError> {
    let mut again = generate_with(request, leave_out, false)?;
    again.report.warnings = created.report.warnings.clone();
    // `create` added it; said as it was.
    again.report.added_dependency = created.report.added_dependency.clone();
    for (name, text) in &again.files {
        if *name == DRAFT_FILE {
            continue;
        }
        let path = again.directory.join(name);
        std::fs::write(&path, text).map_err(|source| SnippetError::Write { path, source })?;
    }
    Ok(again)
}

/// Generates the snippet and writes it: all its files, or nothing; then
/// adds the dependency on the production crate to the snippets crate when
/// it lacked it.
pub fn create(request: &NewSnippet) -> Result<Generated, SnippetError> {
    let mut generated = generate(request)?;
    write_all_or_nothing(&generated.directory, &generated.files)?;
    if let (Some(krate), Some(added)) = (
        &generated.report.snippets_crate,
        &generated.report.added_dependency,
    ) {
        snippet_crate::add_dependency(krate, added)?;
    }
    if let Some(note) = leave_out_counting_allocator(&generated.report, &request.workspace_root)? {
        generated.report.warnings.push(note);
    }
    Ok(generated)
}

/// When the production library declares the program's global allocator,
/// the profiling binary cannot install the counting one: takes it out of
/// the binary's `main.rs` (the block `init` wrote) and says so, or says
/// what to change when `main.rs` is not as `init` wrote it.
fn leave_out_counting_allocator(
    report: &Report,
    workspace_root: &Path,
) -> Result<Option<String>, SnippetError> {
    let (Some(krate), Some(src)) = (&report.snippets_crate, &report.production_src) else {
        return Ok(None);
    };
    let Some((file, line)) = allocator::declared_in(src) else {
        return Ok(None);
    };
    let package = source::Manifest::of_file(&file)
        .and_then(|m| m.package)
        .unwrap_or_else(|| "the production crate".to_owned());
    let root = krate.dir.parent().unwrap_or(workspace_root);
    let declared = format!("{}:{line}", display_path(&file, root));
    let main = krate.dir.join("src/main.rs");
    let Ok(text) = std::fs::read_to_string(&main) else {
        return Ok(None);
    };
    if !text.contains("#[global_allocator]") {
        return Ok(None);
    }
    let shown = display_path(&main, root);
    match allocator::without_counting(&text, &package, &declared) {
        Some(edited) => {
            std::fs::write(&main, edited).map_err(|source| SnippetError::Write {
                path: main.clone(),
                source,
            })?;
            Ok(Some(format!(
                "`{package}` declares the program's global allocator ({declared}): the counting allocator is taken out of {shown}, as a program has one; memory per range (`--memory`) is unavailable in runs of this workspace"
            )))
        }
        None => Ok(Some(format!(
            "`{package}` declares the program's global allocator ({declared}), and {shown} declares one too: a program has one, so remove the `#[global_allocator]` of {shown}"
        ))),
    }
}

fn destination(request: &NewSnippet, fresh: bool) -> Result<PathBuf, SnippetError> {
    let directory = match &request.directory {
        Some(dir) => std::path::absolute(dir).map_err(|error| {
            SnippetError::Usage(format!("--directory {}: {error}", dir.display()))
        })?,
        None => request
            .workspace_root
            .join("inference_profiling")
            .join("snippets")
            .join(request.name.replace('-', "_")),
    };
    if fresh && directory.exists() {
        return Err(SnippetError::Exists(directory));
    }
    match directory.parent() {
        Some(parent) if parent.is_dir() => Ok(directory),
        Some(parent) => Err(SnippetError::Usage(format!(
            "--directory {}: the directory above it, {}, does not exist",
            directory.display(),
            parent.display()
        ))),
        None => Err(SnippetError::Usage(format!(
            "--directory {}: not a directory a snippet can go in",
            directory.display()
        ))),
    }
}

/// Refuses a directory that would compile into the same module as another
/// snippet, and a name that a compiled target already has.
fn check_name_is_free(
    request: &NewSnippet,
    directory: &Path,
    snippets_crate: Option<&SnippetsCrate>,
    warnings: &mut Vec<String>,
) -> Result<(), SnippetError> {
    let module = |name: &str| -> String {
        name.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect()
    };
    if let (Some(parent), Some(name)) = (directory.parent(), directory.file_name()) {
        let wanted = module(&name.to_string_lossy());
        if let Ok(entries) = std::fs::read_dir(parent) {
            for entry in entries.flatten() {
                let other = entry.file_name().to_string_lossy().into_owned();
                if entry.path().join("target.rs").is_file() && module(&other) == wanted {
                    return Err(SnippetError::Usage(format!(
                        "snippet directory {} would compile into module `{wanted}`, as {} does: choose another name",
                        directory.display(),
                        entry.path().display()
                    )));
                }
            }
        }
    }
    // A target compiled from this very directory, since removed, is the
    // snippet being made again.
    let remade = directory.join("target.rs");
    let taken: Vec<String> = profiling_core::driver::registry::targets()
        .iter()
        .filter(|entry| {
            entry.name == request.name && entry.source_path(&request.workspace_root) != remade
        })
        .map(|entry| {
            format!(
                "{}:{}",
                entry.display_file(&request.workspace_root),
                entry.line
            )
        })
        .collect();
    if let Some(place) = taken.first() {
        let message = format!(
            "a target named `{}` is already registered ({place})",
            request.name
        );
        if snippets_crate.is_some() {
            return Err(SnippetError::Usage(format!(
                "{message}: `profile-cli run` would refuse both; choose another name"
            )));
        }
        warnings.push(format!(
            "{message}; the new snippet is not compiled where it is, but rename one before compiling both"
        ));
    }
    Ok(())
}

/// The source file: as given when absolute or found from the current
/// directory, else from the workspace root.
fn find_source(file: &Path, root: &Path) -> Result<PathBuf, SnippetError> {
    let candidates = if file.is_absolute() {
        vec![file.to_path_buf()]
    } else {
        vec![file.to_path_buf(), root.join(file)]
    };
    candidates
        .iter()
        .find(|c| c.is_file())
        .and_then(|c| c.canonicalize().ok())
        .ok_or_else(|| {
            SnippetError::Source(if file.is_absolute() {
                format!("--from: no such file: {}", file.display())
            } else {
                format!(
                    "--from: no such file: {} (looked in the current directory and in {})",
                    file.display(),
                    root.display()
                )
            })
        })
}

/// The first paragraph of a doc comment, on one line.
fn first_doc_paragraph(attrs: &[syn::Attribute]) -> Option<String> {
    let lines = attrs.iter().filter_map(|attr| match &attr.meta {
        syn::Meta::NameValue(meta) if meta.path.is_ident("doc") => match &meta.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(text),
                ..
            }) => Some(text.value()),
            _ => None,
        },
        _ => None,
    });
    let paragraph: Vec<String> = lines
        .flat_map(|text| {
            text.lines()
                .map(|l| l.trim().to_owned())
                .collect::<Vec<_>>()
        })
        .skip_while(String::is_empty)
        .take_while(|line| !line.is_empty())
        .collect();
    (!paragraph.is_empty()).then(|| paragraph.join(" "))
}

/// The commit checked out where `file` is, and whether `file` differs from
/// it (not the rest of the tree); or why there is no commit.
fn git_provenance(file: &Path) -> profiling_core::driver::host::GitState {
    use profiling_core::driver::host::GitState;
    use std::ffi::OsStr;
    let Some(dir) = file.parent() else {
        return GitState::NotACheckout;
    };
    let state = profiling_core::driver::host::git_state(dir);
    let GitState::Commit { commit, .. } = state else {
        return state;
    };
    let status = profiling_core::driver::host::git_output(
        dir,
        [
            OsStr::new("--no-optional-locks"),
            OsStr::new("status"),
            OsStr::new("--porcelain"),
            OsStr::new("--"),
            file.as_os_str(),
        ],
    );
    GitState::Commit {
        commit,
        dirty: status.is_some_and(|s| !s.is_empty()),
    }
}

/// The `profile-cli new` command that makes the same snippet.
fn command_line(request: &NewSnippet, source: &str, directory: &Path, root: &Path) -> String {
    let spec = SourceSpec {
        file: PathBuf::from(source),
        selector: request.from.selector.clone(),
    };
    let mut words = vec![
        "profile-cli".to_owned(),
        "new".to_owned(),
        request.name.clone(),
        "--from".to_owned(),
        spec.to_string(),
    ];
    if request.data_source != "dummy" {
        words.extend(["--data-source".to_owned(), request.data_source.clone()]);
    }
    if request.device != Device::Cpu {
        words.extend(["--device".to_owned(), request.device.to_string()]);
    }
    if !request.type_args.is_empty() {
        words.extend(["--type-args".to_owned(), request.type_args.to_string()]);
    }
    if request.directory.is_some() {
        words.extend(["--directory".to_owned(), display_path(directory, root)]);
    }
    words
        .iter()
        .map(|w| profiling_core::driver::nsys::shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The command `--print-nsys-command` prints for the generated config,
/// with the workspace root shown as `<repo>`.
fn nsys_command(request: &NewSnippet, root: &Path, config: &Path) -> String {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let run_dir = config
        .parent()
        .unwrap_or(Path::new("."))
        .join("runs")
        .join("smoke");
    let word = |text: &str| text.to_owned();
    let program = runner_binary(&root);
    let mut lines = vec![vec![
        program.to_string_lossy().into_owned(),
        word("run"),
        request.name.clone(),
    ]];
    for (option, value) in [
        ("--config", config.to_string_lossy().into_owned()),
        ("--data-source", request.data_source.clone()),
        ("--device", request.device.to_string()),
        ("--warmup", "10".to_owned()),
        ("--iterations", "100".to_owned()),
        (
            "--capture-range",
            profiling_core::driver::config::DEFAULT_CAPTURE_RANGE.to_owned(),
        ),
        ("--record-loading", "eager".to_owned()),
        ("--seed", "0".to_owned()),
        ("--run-id", "smoke".to_owned()),
    ] {
        lines.push(vec![word(option), value]);
    }
    let command = profiling_core::driver::nsys::nsys_command(
        &profiling_core::driver::nsys::NsysCapture {
            run_dir: &run_dir,
            capture_range: profiling_core::driver::config::DEFAULT_CAPTURE_RANGE,
            cuda: request.device.is_cuda(),
            sample: false,
        },
        &lines,
        &program.to_string_lossy(),
    );
    command.render().replace(&*root.to_string_lossy(), "<repo>")
}

/// Writes `files` into a staging directory beside `directory`, then
/// renames it into place: a failure leaves nothing behind.
fn write_all_or_nothing(
    directory: &Path,
    files: &[(&'static str, String)],
) -> Result<(), SnippetError> {
    struct Staging(Option<PathBuf>);
    impl Drop for Staging {
        fn drop(&mut self) {
            if let Some(path) = &self.0 {
                let _ = std::fs::remove_dir_all(path);
            }
        }
    }
    let parent = directory.parent().unwrap_or(Path::new("."));
    let name = directory
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let staging_path = parent.join(format!(".{name}.new-{}", std::process::id()));
    let write_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SnippetError::Write { path, source }
    };
    std::fs::create_dir(&staging_path).map_err(write_error(&staging_path))?;
    let mut staging = Staging(Some(staging_path.clone()));
    for (file, text) in files {
        let path = staging_path.join(file);
        std::fs::write(&path, text).map_err(write_error(&directory.join(file)))?;
    }
    if directory.exists() {
        return Err(SnippetError::Exists(directory.to_path_buf()));
    }
    std::fs::rename(&staging_path, directory).map_err(write_error(directory))?;
    staging.0 = None;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_that_fails_midway_leaves_nothing_behind() {
        let parent = tempfile::tempdir().unwrap();
        let directory = parent.path().join("half");
        let files = [
            ("target.rs", "// written first\n".to_owned()),
            ("no/such/dir/README.md", "never written\n".to_owned()),
        ];
        let error = write_all_or_nothing(&directory, &files).unwrap_err();
        assert!(
            matches!(&error, SnippetError::Write { path, .. } if path.ends_with("no/such/dir/README.md")),
            "{error}"
        );
        assert_eq!(error.exit_code(), 1);
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_directory_that_compiles_into_a_taken_module_is_refused() {
        let parent = tempfile::tempdir().unwrap();
        let taken = parent.path().join("my_nms");
        std::fs::create_dir(&taken).unwrap();
        std::fs::write(taken.join("target.rs"), "").unwrap();
        let mut request = NewSnippet::new("my-nms", "src/x.rs::f".parse().unwrap(), parent.path());
        request.directory = Some(parent.path().join("my.nms"));
        let error = generate(&request).unwrap_err().to_string();
        assert!(
            error.contains("would compile into module `my_nms`"),
            "{error}"
        );
    }
}
