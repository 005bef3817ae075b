//! The link-time registry of profile targets.
//!
//! `#[profile_target]` submits one [`TargetEntry`] per target through
//! `inventory`; every crate linked into the binary contributes its entries
//! before `main` runs. Lookups sort, since link order is not stable.

use crate::driver::runner::{RunError, RunOutcome, RunPlan, SteppedRun};
use crate::suggest::near_matches;

/// One registered target, as `#[profile_target]` describes it.
#[derive(Debug)]
pub struct TargetEntry {
    /// The name `profile-cli run` takes.
    pub name: &'static str,
    /// The implementing type as written in the impl block.
    pub type_name: &'static str,
    /// The source file of the impl block, as the compiler names it.
    pub file: &'static str,
    /// The line of the impl block.
    pub line: u32,
    /// The module path of the impl block.
    pub module_path: &'static str,
    /// The first line of the type's doc comment, or empty.
    pub doc: &'static str,
    /// How the target is built: `Default::default` or the factory path.
    pub constructor: &'static str,
    /// Whether the target takes batches (`workload.batch_size` > 1): true
    /// when its impl block defines `prepare_batch`, false when it keeps the
    /// default, which refuses them. Read from the impl block by
    /// `#[profile_target]`, so that a run with batches is refused before the
    /// target is built ([`crate::driver::session::check_batches`]). An impl block
    /// whose items a macro writes counts as taking batches: should the
    /// default be called all the same, its error refuses the run.
    pub takes_batches: bool,
    /// The config the target runs on when `run` names it without one
    /// (`#[profile_target(config = "...")]`): an absolute path, the crate's
    /// directory when it was compiled followed by the path given. For a
    /// target that needs data of its own, which the built-in defaults (the
    /// `dummy` source) do not have.
    pub config: Option<&'static str>,
    /// What installs the data that config reads (`#[profile_target(setup =
    /// "...")]`), said when it is missing.
    pub setup: Option<&'static str>,
    /// Runs the target on a plan: monomorphized for the target's type.
    pub launch: fn(&RunPlan) -> Result<RunOutcome, RunError>,
    /// Builds the target on a plan for a paired run, its passes run one at
    /// a time (`runner::run_paired`).
    pub open: OpenTarget,
    /// Drives the target under load (`profile-cli load`): one instance a
    /// worker, each built on its worker's thread.
    pub load: LoadTarget,
}

/// [`TargetEntry::load`]: the plan, the load, and the flag that stops it.
pub(crate) type LoadTarget =
    fn(
        &RunPlan,
        &crate::driver::load::drive::LoadPlan,
        &std::sync::atomic::AtomicBool,
    ) -> Result<crate::driver::load::drive::LoadRun, crate::driver::load::drive::LoadError>;

/// [`TargetEntry::open`]: the target built on a plan, ready for its
/// warmup.
pub(crate) type OpenTarget = for<'p> fn(&'p RunPlan) -> Result<Box<dyn SteppedRun + 'p>, RunError>;

inventory::collect!(TargetEntry);

impl TargetEntry {
    /// The source file relative to `root` when it lies under it, else as
    /// the compiler named it.
    pub fn display_file(&self, root: &std::path::Path) -> String {
        let path = std::path::Path::new(self.file);
        path.strip_prefix(root)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }

    /// The source file as a path: relative names are taken from `root`,
    /// which for workspace crates is the workspace root.
    pub fn source_path(&self, root: &std::path::Path) -> std::path::PathBuf {
        let path = std::path::Path::new(self.file);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            root.join(path)
        }
    }
}

/// A target that exists, but not in this build: it needs a cargo feature
/// the binary was built without. Submitted with `inventory::submit!` by the
/// crate that defines the target, under `#[cfg(not(feature = ...))]`, so
/// that `run` and `list` can say how to get it.
///
/// [`targets_needing_feature!`](crate::targets_needing_feature) submits
/// them.
#[derive(Debug)]
pub struct UnavailableTarget {
    pub name: &'static str,
    /// The cargo feature of `profiling-cli` that builds it in.
    pub feature: &'static str,
}

inventory::collect!(UnavailableTarget);

/// The targets this build lacks, sorted by name.
pub fn unavailable() -> Vec<&'static UnavailableTarget> {
    let mut entries: Vec<&'static UnavailableTarget> =
        inventory::iter::<UnavailableTarget>.into_iter().collect();
    // By feature, then name: `list` says each feature's targets in one line.
    entries.sort_by_key(|e| (e.feature, e.name));
    entries
}

/// A snippet left out of the build: its directory holds a `DRAFT` file,
/// which says why. The snippets crate's build script registers one for
/// each draft, so that `list` shows it and `run` refuses its target with
/// the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Draft {
    /// The directory under `snippets/`.
    pub directory: &'static str,
    /// The snippets directory, from the workspace root
    /// (`inference_profiling/snippets`).
    pub snippets: &'static str,
    /// The target it profiles: its config's `target.name`, else the
    /// directory name with `_` as `-`.
    pub target: &'static str,
    /// The `DRAFT` file's text; its first line is the reason.
    pub reason: &'static str,
}

impl Draft {
    /// The first line of the `DRAFT` file, or a note that it gives none.
    pub fn summary(&self) -> &'static str {
        self.reason
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty())
            .unwrap_or("its DRAFT file gives no reason")
    }

    /// `inference_profiling/snippets/<directory>`.
    pub fn path(&self) -> String {
        format!("{}/{}", self.snippets, self.directory)
    }
}

inventory::collect!(Draft);

/// The drafts of this build, sorted by directory.
pub fn drafts() -> Vec<&'static Draft> {
    let mut entries: Vec<&'static Draft> = inventory::iter::<Draft>.into_iter().collect();
    entries.sort_by_key(|d| (d.snippets, d.directory));
    entries
}

/// Every registered target, sorted by name, then file and line.
pub fn targets() -> Vec<&'static TargetEntry> {
    let mut entries: Vec<&'static TargetEntry> =
        inventory::iter::<TargetEntry>.into_iter().collect();
    entries.sort_by(|a, b| (a.name, a.file, a.line).cmp(&(b.name, b.file, b.line)));
    entries
}

/// The result of looking a name up.
#[derive(Debug)]
pub enum Lookup {
    Found(&'static TargetEntry),
    /// Two or more targets share the name: none can be run by it.
    Ambiguous(Vec<&'static TargetEntry>),
    /// No target has the name; the near matches, closest first.
    Missing {
        near: Vec<&'static str>,
    },
}

/// Finds the target registered under `name`.
pub fn lookup(name: &str) -> Lookup {
    lookup_in(&targets(), name)
}

/// [`lookup`] over a given list of entries.
pub(crate) fn lookup_in(entries: &[&'static TargetEntry], name: &str) -> Lookup {
    let matching: Vec<_> = entries.iter().copied().filter(|e| e.name == name).collect();
    match matching.len() {
        0 => Lookup::Missing {
            near: near_matches(name, entries.iter().map(|e| e.name)),
        },
        1 => Lookup::Found(matching[0]),
        _ => Lookup::Ambiguous(matching),
    }
}

/// What a factory named in `#[profile_target(factory = ...)]` may return:
/// the target itself, or a `Result` of it whose error converts to
/// `anyhow::Error`.
pub trait FactoryOutput<T> {
    fn into_target(self) -> anyhow::Result<T>;
}

impl<T> FactoryOutput<T> for T {
    #[inline]
    fn into_target(self) -> anyhow::Result<T> {
        Ok(self)
    }
}

impl<T, E: Into<anyhow::Error>> FactoryOutput<T> for Result<T, E> {
    #[inline]
    fn into_target(self) -> anyhow::Result<T> {
        self.map_err(Into::into)
    }
}
