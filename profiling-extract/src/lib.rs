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
mod crate_files;
mod extraction;
mod names;
mod parity;
mod production;
mod provenance;
mod render;
mod scaffold;
mod select;
mod snippet_crate;
mod source;
mod source_file;
mod text;
pub mod workspace;
mod write;

use std::path::{Path, PathBuf};

pub use check::{
    check_build, check_command, check_snippet, parity_run, smoke_command, smoke_run, BuildCheck,
    Diagnostic, ParityOutcome, ParityRun, SmokeRun, SnippetCheck, SnippetState,
};
pub use copy::Instrumentation;
pub use names::Unresolved;
pub use parity::Parity;
pub use production::{Production, ProductionDependency};
pub use provenance::runner_command;
pub use select::{Selector, SourceSpec, TypeArgs};
pub use snippet_crate::{
    draft_reason, is_included, manifest as snippet_manifest, mark_draft, package_name, package_of,
    remove_entry, set_included, stale_entries, unmark_draft, AddedDependency, StaleEntry,
    DRAFT_FILE,
};

use crate_files::CrateFiles;
use extraction::{add_serde_derive, named_dependencies, thin_wrapper, Extraction};
use profiling_core::device::Device;
use profiling_core::driver::config::check_profile_name;
use source::{display_path, CargoManifest, ModuleLocation};
use write::{
    check_name_is_free, destination, leave_out_counting_allocator, wrap_production_allocator,
    write_all_or_nothing,
};

/// The cargo to run: the one running this build (`$CARGO`, set by cargo
/// for the programs it runs), else `cargo` on `PATH`. Every command the
/// tool runs cargo for takes it from here.
pub fn cargo_program() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

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
        workspace::workspace_above(&self.dir).map_or_else(|| self.dir.clone(), |(dir, _)| dir)
    }

    /// The snippets crate whose `Cargo.toml` is in `dir`, when there is one.
    pub fn at(dir: &Path) -> Option<SnippetsCrate> {
        let manifest = CargoManifest::read(dir)?;
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
pub struct Extracted {
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
    pub git: profiling_core::driver::provenance::GitState,
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
    /// The production files `new` parsed, as shown from the workspace
    /// root, with their sizes in bytes, in the order parsed: the copy's
    /// own, the modules its names lead to, and those a search for its
    /// production calls or its types found naming them. A file over 1 MB
    /// is parsed only when the copy needs it, and none over 32 MB.
    pub parsed: Vec<(String, u64)>,
    /// What became of the production binary's global allocator in the
    /// profiling binary (wrapped by the counting allocator), when it
    /// declares one.
    pub allocator_note: Option<String>,
}

/// A snippet ready to be written.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The directory to create.
    pub directory: PathBuf,
    /// File names and contents.
    pub files: Vec<(&'static str, String)>,
    pub extracted: Extracted,
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

/// [`generate`]; `leave_out` are imports (as [`Extracted::kept_for_traits`]
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
    // The crate's files are parsed as the resolution reaches them, once.
    let files = CrateFiles::new(root);
    let source = files.needed(&path)?;
    let function = select::find(&source, &request.from.selector)?;
    select::check_supported(&source, &function, &request.type_args)?;

    let location = ModuleLocation::of_file(&path, &files);
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
        if let Some((followed, note)) = extraction.follow(&callee) {
            let mut generated = generate_with(&followed, leave_out, fresh)?;
            generated.extracted.warnings.insert(0, note);
            return Ok(generated);
        }
        warnings.push(extraction.delegation_warning(&callee));
    }
    let mut copied = copy::copy(&source, &function, &location, lines, indent, features);
    extraction.copy_helpers(&mut copied, &imports, features);
    let target = extraction.plan_target(crates.production.as_ref());
    let mut extracted = extraction.extracted(&crates, &copied, &imports, &target, warnings);
    let mut target_rs = render::target_rs(&extracted, &copied, &imports, &target);
    if request.data_source == CUSTOM_SOURCE {
        target_rs.push_str(&render::custom_source(&extracted, &target));
    }
    if let (Some(_), Some(production)) = (&extracted.snippets_crate, &crates.production) {
        extracted.snippet_dependencies =
            named_dependencies(production, &crates.dependencies, &target_rs);
    }
    // The settings struct derives serde's `Deserialize`: production's serde
    // gets the `derive` feature, or serde comes on its own.
    if target.settings_name().is_some() {
        add_serde_derive(
            &mut extracted,
            &crates.dependencies,
            "the settings struct of the copy's scalar parameters derives `serde::Deserialize`",
        );
    }
    if request.data_source == CUSTOM_SOURCE {
        add_serde_derive(
            &mut extracted,
            &crates.dependencies,
            "the parameters of the snippet's own data source derive `serde::Deserialize`",
        );
    }
    let written = extraction.files(&extracted, &copied, &target, target_rs, &crates)?;
    // A file the resolution needed and could not parse for its size left
    // its questions unanswered: refused rather than guessed.
    files.check()?;
    extracted.parsed = files.parsed();
    Ok(Generated {
        directory,
        files: written,
        extracted,
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

/// The imports `new` kept as possible traits (`created`'s
/// [`Extracted::kept_for_traits`]) that the compiler found unused in the
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
        for kept in &created.extracted.kept_for_traits {
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
    again.extracted.warnings = created.extracted.warnings.clone();
    // `create` added it; said as it was.
    again.extracted.added_dependency = created.extracted.added_dependency.clone();
    for (name, text) in &again.files {
        if *name == DRAFT_FILE {
            continue;
        }
        let path = again.directory.join(name);
        profiling_core::driver::files::write_atomically(&path, text.as_bytes())
            .map_err(|source| SnippetError::Write { path, source })?;
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
        &generated.extracted.snippets_crate,
        &generated.extracted.added_dependency,
    ) {
        snippet_crate::add_dependency(krate, added)?;
    }
    if let Some(note) = leave_out_counting_allocator(&generated.extracted, &request.workspace_root)?
    {
        generated.extracted.warnings.push(note);
    } else {
        generated.extracted.allocator_note =
            wrap_production_allocator(&generated.extracted, &request.workspace_root)?;
    }
    Ok(generated)
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
