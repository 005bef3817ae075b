//! Snippet extraction on a fixture library: what `profile-cli new` copies,
//! imports, instruments and generates, and what it refuses.

use std::path::{Path, PathBuf};

use profiling_core::device::Device;
use profiling_core::driver::config::{ConfigFile, Overrides};
use profiling_extract::{
    self as snippet, Generated, Instrumentation, NewSnippet, SnippetError, SourceSpec,
};
// The sources a config may name, as `profile-cli` links them.
use profiling_sources as _;

/// The production module the snippets copy from.
const OPS: &str = r#"//! Fixture operations.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::hidden::secret;
use crate::shapes::Shape;

/// Scores above this are kept.
pub const THRESHOLD: f32 = 0.5;
const PRIVATE_LIMIT: usize = 8;

/// How to scale what is kept.
#[derive(Debug, Clone, Copy, Default)]
pub struct Settings {
    pub scale: f32,
}

/// Counts what it is given.
#[derive(Default)]
pub struct Counter {
    pub total: usize,
    hidden: usize,
}

impl Counter {
    /// Adds the values.
    pub fn add(&mut self, values: &[f32]) -> usize {
        self.total += values.len();
        self.hidden += self.bump();
        self.total
    }

    fn bump(&self) -> usize {
        1
    }

    /// A counter that starts at `total`.
    pub fn with_total(total: usize) -> Counter {
        Counter { total, hidden: 0 }
    }
}

/// Doubles.
pub fn helper(x: f32) -> f32 {
    x * 2.0
}

fn private_helper(x: f32) -> f32 {
    x + 1.0
}

/// Calls `helper` with a literal.
pub fn quarter() -> f32 {
    helper(0.25_f32)
}

/// Built with the default feature `fast` only.
#[cfg(feature = "fast")]
pub fn gated(values: &[f32]) -> usize {
    #[cfg(feature = "slow")]
    let n = 0;
    #[cfg(not(feature = "slow"))]
    let n = values.len();
    #[cfg(all(unix, feature = "fast"))]
    let n = n + 1;
    n + smallvec::SmallVec::<[u8; 2]>::new().len()
}

#[cfg(feature = "slow")]
pub fn never() {}

/// Sizes and weights: a tuple and an array of scalars.
pub fn resize_to(size: (u32, u32), weights: [f32; 3], flags: (bool,)) -> u32 {
    size.0 + size.1 + weights.len() as u32 + u32::from(flags.0)
}

pub fn resize_default() -> u32 {
    resize_to((640, 480), [0.5, 0.25, 0.25_f32], (true,))
}

/// A value of this crate the types say nothing about.
pub struct Opaque(pub u8);

pub fn opaque(o: Opaque, factor: f32, count: usize, keep: bool) -> u8 {
    if keep { o.0 + (factor as u8) * count as u8 } else { 0 }
}

/// Keeps the big ones.
///
/// More text.
pub fn odd_layout(values: &[f32],   settings: &Settings) -> Vec<f32> {
    // keep the big ones
    let kept: Vec<f32> = values.iter().copied().filter(|v| *v > THRESHOLD)   /* inline */
        .map(helper)
        .collect();
    assert!(kept.len() <= 1000, "more than {PRIVATE_LIMIT}");
    kept.iter().map(|v| v * settings.scale).collect()   // trailing
}

pub fn uses_private(x: f32) -> f32 {
    private_helper(x) + secret() + Shape::area()
}

pub fn with_paths(x: f32) -> f32 {
    crate::ops::helper(x) + self::helper(x) + super::ops::helper(x)
}

pub fn statements(values: &[f32]) -> f32 {
    let mut total = 0.0;
    // sum them
    for v in values {
        total += v;
    }
    let doubled = total * 2.0;
    doubled + 1.0
}

pub fn from_record(image: &RgbImage, raw: ArrayView2<f32>, scores: &[f32], device: Device) -> usize {
    image.len() + raw.len() + scores.len() + usize::from(device.is_cuda())
}

pub async fn later() {}

pub fn generic<T: Copy>(x: T) -> T {
    x
}

pub fn twice() {}

/// The first `N` values, scaled.
pub fn first<S, const N: usize>(values: &[S], scale: S) -> [S; N]
where
    S: Copy + std::ops::Mul<Output = S>,
{
    std::array::from_fn(|i| values[i] * scale)
}
"#;

const LIB: &str = "pub mod ops;\nmod hidden;\npub mod shapes;\n";
const HIDDEN: &str = "pub fn secret() -> f32 {\n    1.0\n}\n";
const SHAPES: &str =
    "pub struct Shape;\n\nimpl Shape {\n    pub fn area() -> f32 {\n        0.0\n    }\n}\n";

/// A workspace in a temporary directory: a fixture library, and a
/// snippets crate that depends on it.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            "Cargo.toml",
            "[workspace]\nmembers = [\"fixture\", \"host\"]\n",
        );
        write(
            "fixture/Cargo.toml",
            "[package]\nname = \"fixture-ops\"\nversion = \"0.1.0\"\n",
        );
        write("fixture/src/lib.rs", LIB);
        write("fixture/src/ops.rs", OPS);
        write("fixture/src/hidden.rs", HIDDEN);
        write("fixture/src/shapes.rs", SHAPES);
        write(
            "host/Cargo.toml",
            "[package]\nname = \"host-snippets\"\nversion = \"0.1.0\"\n\n[dependencies]\nfixture-ops = { path = \"../fixture\" }\nprofiling-core.workspace = true\nndarray.workspace = true\nimage.workspace = true\nanyhow.workspace = true\n",
        );
        std::fs::create_dir_all(dir.path().join("host/snippets")).unwrap();
        Fixture { dir }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    fn ops(&self) -> PathBuf {
        self.root().join("fixture/src/ops.rs")
    }

    fn request(&self, name: &str, selector: &str) -> NewSnippet {
        let from: SourceSpec = format!("{}{selector}", self.ops().display())
            .parse()
            .unwrap();
        let mut request = NewSnippet::new(name, from, &self.root());
        request.directory = Some(
            self.root()
                .join("host/snippets")
                .join(name.replace('-', "_")),
        );
        request
    }

    fn generate(&self, name: &str, selector: &str) -> Generated {
        snippet::generate(&self.request(name, selector)).unwrap()
    }

    fn error(&self, name: &str, selector: &str) -> String {
        match snippet::generate(&self.request(name, selector)) {
            Ok(_) => panic!("{selector} was accepted"),
            Err(error) => error.to_string(),
        }
    }
}

/// The text of the function `name` in OPS, from `pub fn` to its closing brace.
fn source_of(name: &str) -> &'static str {
    let start = OPS.find(&format!("pub fn {name}")).unwrap();
    let end = start + OPS[start..].find("\n}\n").unwrap() + 2;
    &OPS[start..end]
}

fn line_of(text: &str) -> usize {
    OPS.lines().position(|l| l.trim() == text).unwrap() + 1
}

#[test]
fn the_copy_is_the_source_text_byte_for_byte_with_a_range_added() {
    let generated = Fixture::new().generate("extract-odd", "::odd_layout");
    let target = generated.file("target.rs").unwrap();
    let expected = format!("#[nvtx_range]\n{}", source_of("odd_layout"));
    assert!(target.contains(&expected), "{target}");
    assert!(
        !target.contains("More text."),
        "the production doc is not copied"
    );
    assert_eq!(
        generated.extracted.instrumentation,
        Instrumentation::AddedAttribute
    );
    let first = line_of("pub fn odd_layout(values: &[f32],   settings: &Settings) -> Vec<f32> {");
    assert_eq!(generated.extracted.lines, (first, first + 7));
    assert_eq!(generated.extracted.item, "fixture_ops::ops::odd_layout");
}

#[test]
fn items_of_the_module_are_imported_from_production_not_copied() {
    let generated = Fixture::new().generate("extract-imports", "::odd_layout");
    let target = generated.file("target.rs").unwrap();
    assert!(
        target.contains("use fixture_ops::ops::{helper, Settings, THRESHOLD};\n"),
        "{target}"
    );
    assert!(!target.contains("pub fn helper"), "helpers are not copied");
    assert_eq!(
        generated.extracted.module_items,
        vec!["Settings", "THRESHOLD", "helper"]
    );
    // `PRIVATE_LIMIT`, in a format string, is private: copied beside it,
    // marked, with where it comes from; nothing is out of reach.
    assert!(generated.extracted.unresolved.is_empty());
    let line = line_of("const PRIVATE_LIMIT: usize = 8;");
    assert!(
        target.contains(&format!(
            "// Copied helper: private to `fixture_ops::ops` (fixture/src/ops.rs:{line}-{line}), so the snippet cannot\n"
        )),
        "{target}"
    );
    assert!(
        target.contains("profile.\nconst PRIVATE_LIMIT: usize = 8;\n"),
        "{target}"
    );
}

#[test]
fn module_imports_are_carried_when_named_and_listed_when_not() {
    let generated = Fixture::new().generate("extract-carried", "::uses_private");
    let target = generated.file("target.rs").unwrap();
    assert!(
        target.contains("use fixture_ops::shapes::Shape;\n"),
        "{target}"
    );
    assert!(
        target.contains("use std::fmt::Write as _;\n"),
        "trait imports as `_` always come along: {target}"
    );
    assert_eq!(
        generated.extracted.left_out,
        vec!["std::collections::BTreeMap"]
    );
}

#[test]
fn a_public_type_whose_private_fields_the_copy_reads_is_copied_too() {
    let fixture = Fixture::new();
    let root = fixture.root();
    std::fs::write(
        root.join("fixture/src/grid.rs"),
        "pub struct Grid {\n    pub width: usize,\n    cells: Vec<f32>,\n}\n\nimpl Grid {\n    pub fn new(width: usize) -> Grid {\n        Grid { width, cells: vec![1.0; width] }\n    }\n}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("fixture/src/lib.rs"),
        format!("{LIB}pub mod grid;\n"),
    )
    .unwrap();
    let mut text = std::fs::read_to_string(fixture.ops()).unwrap();
    text.push_str(
        "\nuse crate::grid::Grid;\n\npub fn cell_sum(grid: &Grid) -> f32 {\n    grid.cells.iter().sum::<f32>() + grid.width as f32\n}\n",
    );
    std::fs::write(fixture.ops(), text).unwrap();
    let generated = fixture.generate("cell-sum", "::cell_sum");
    let target = generated.file("target.rs").unwrap();
    assert!(
        target.contains("pub struct Grid {\n    pub width: usize,\n    cells: Vec<f32>,\n}\n"),
        "{target}"
    );
    assert!(target.contains("impl Grid {\n    pub fn new("), "{target}");
    assert!(!target.contains("use fixture_ops::grid::Grid"), "{target}");
    assert!(
        generated.extracted.unresolved.is_empty(),
        "{:?}",
        generated.extracted.unresolved
    );
    match &generated.extracted.parity {
        snippet::Parity::Unavailable { why } => assert!(
            why.contains("the copy takes the snippet's own copy of `Grid` (copied because it reads its private fields `cells`)"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    let readme = generated.file("README.md").unwrap();
    let readme = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        readme.contains("`Grid` is public, but the copied code reads its private fields (`cells`): it is copied too"),
        "{readme}"
    );
}

#[test]
fn a_private_macro_is_copied_before_the_copy() {
    let fixture = Fixture::new();
    let mut text = std::fs::read_to_string(fixture.ops()).unwrap();
    text.push_str(
        "\npub fn doubled(x: f32) -> f32 {\n    twice!(x)\n}\n\nmacro_rules! twice {\n    ($x:expr) => {\n        $x * 2.0\n    };\n}\n",
    );
    std::fs::write(fixture.ops(), text).unwrap();
    let generated = fixture.generate("doubled", "::doubled");
    let target = generated.file("target.rs").unwrap();
    let definition = target
        .find("macro_rules! twice {\n    ($x:expr) => {\n        $x * 2.0\n    };\n}\n")
        .unwrap_or_else(|| panic!("{target}"));
    let copy = target.find("pub fn doubled(").unwrap();
    assert!(
        definition < copy,
        "a macro is in scope after its definition: {target}"
    );
    assert!(
        generated.extracted.unresolved.is_empty(),
        "{:?}",
        generated.extracted.unresolved
    );
}

#[test]
fn an_alias_of_a_number_is_read_as_the_number() {
    let fixture = Fixture::new();
    let mut text = std::fs::read_to_string(fixture.ops()).unwrap();
    text.push_str(
        "\ntype Index = usize;\n\npub fn largest(indices: &[Index]) -> Index {\n    indices.iter().copied().max().unwrap_or(0)\n}\n",
    );
    std::fs::write(fixture.ops(), text).unwrap();
    let generated = fixture.generate("largest", "::largest");
    let target = generated.file("target.rs").unwrap();
    assert!(
        target.contains("    pub indices: Vec<usize>,\n"),
        "{target}"
    );
    assert!(
        generated.extracted.unmapped.is_empty(),
        "{:?}",
        generated.extracted.unmapped
    );
}

#[test]
fn unclonable_mut_state_is_made_per_call_and_generic_views_are_static() {
    let fixture = Fixture::new();
    let mut text = std::fs::read_to_string(fixture.ops()).unwrap();
    text.push_str(
        "\npub struct Tally {\n    pub total: f32,\n}\n\npub fn add_to(tally: &mut Tally, x: f32) {\n    tally.total += x;\n}\n\n#[derive(Default)]\npub struct Log(pub Vec<f32>);\n\npub fn log_to(log: &mut Log, x: f32) {\n    log.0.push(x);\n}\n\npub struct View<'a, T>(pub &'a [T]);\n\npub fn first_of<T: Copy>(view: &View<T>) -> T {\n    view.0[0]\n}\n",
    );
    std::fs::write(fixture.ops(), text).unwrap();
    let generated = fixture.generate("add-to", "::add_to");
    let target = generated.file("target.rs").unwrap();
    for expected in [
        "    pub tally: fn() -> Tally,\n",
        "        let mut tally = (inputs.tally)();\n",
        "add_to(&mut tally, inputs.x)",
    ] {
        assert!(
            target.contains(expected),
            "{expected} missing from {target}"
        );
    }
    assert!(!target.contains("inputs.tally.clone()"), "{target}");
    // `Default`, not `Clone`: a new default for each call.
    let generated = fixture.generate("log-to", "::log_to");
    let target = generated.file("target.rs").unwrap();
    for expected in [
        "    pub log: fn() -> Log,\n",
        "        let log: fn() -> Log = <Log>::default;\n",
        "        let mut log = (inputs.log)();\n",
    ] {
        assert!(
            target.contains(expected),
            "{expected} missing from {target}"
        );
    }
    let mut request = fixture.request("first-of", "::first_of");
    request.type_args = "T=f32".parse().unwrap();
    let generated = snippet::generate(&request).unwrap();
    let target = generated.file("target.rs").unwrap();
    assert!(
        target.contains("    pub view: View<'static, f32>,\n"),
        "{target}"
    );
}

#[test]
fn a_private_method_that_reads_private_fields_is_not_given_back() {
    let fixture = Fixture::new();
    let mut text = std::fs::read_to_string(fixture.ops()).unwrap();
    text.push_str(
        "\npub struct Store {\n    items: Vec<f32>,\n}\n\nimpl Store {\n    fn len(&self) -> usize {\n        self.items.len()\n    }\n\n    pub fn new() -> Store {\n        Store { items: Vec::new() }\n    }\n}\n\npub fn counted(store: &Store, values: &[f32]) -> usize {\n    let _ = store;\n    values.len()\n}\n",
    );
    std::fs::write(fixture.ops(), text).unwrap();
    let generated = fixture.generate("counted", "::counted");
    let target = generated.file("target.rs").unwrap();
    // `values.len()` is not `Store::len`: a private method that reads the
    // type's private fields would not build in the snippet, so it is never
    // given back on a name alone.
    assert!(!target.contains("StoreCopiedMethods"), "{target}");
}

#[test]
fn imports_from_alloc_are_taken_from_std() {
    let fixture = Fixture::new();
    let root = fixture.root();
    std::fs::write(
        root.join("fixture/src/lib.rs"),
        format!("extern crate alloc;\n{LIB}"),
    )
    .unwrap();
    let mut text = std::fs::read_to_string(fixture.ops()).unwrap();
    text.push_str(
        "\nuse alloc::collections::VecDeque;\n\npub fn queued(n: usize) -> usize {\n    let mut queue = VecDeque::new();\n    queue.push_back(n);\n    queue.len()\n}\n",
    );
    std::fs::write(fixture.ops(), text).unwrap();
    let generated = fixture.generate("queued", "::queued");
    let target = generated.file("target.rs").unwrap();
    assert!(
        target.contains("use std::collections::VecDeque;\n"),
        "{target}"
    );
    assert!(!target.contains("alloc::"), "{target}");
}

#[test]
fn what_production_does_not_export_is_listed_with_where_it_is() {
    let fixture = Fixture::new();
    let generated = fixture.generate("extract-private", "::uses_private");
    let reasons: Vec<(String, String)> = generated
        .extracted
        .unresolved
        .iter()
        .map(|u| (u.name.clone(), u.reason.clone()))
        .collect();
    // A private item of the copy's own module is copied beside it; a
    // module the crate root declares without `pub` is copied whole.
    assert_eq!(reasons, Vec::<(String, String)>::new());
    let target = generated.file("target.rs").unwrap();
    assert!(
        target.contains("#[allow(dead_code, unused_imports)]\nmod hidden {\n    pub fn secret() -> f32 {\n        1.0\n    }\n}\n"),
        "{target}"
    );
    assert!(target.contains("// Copied module: `fixture_ops::hidden` is private to its crate (fixture/src/hidden.rs)"), "{target}");
    assert!(target.contains("use crate::hidden::secret;\n"), "{target}");
    assert!(
        target.contains("\nfn private_helper(x: f32) -> f32 {\n    x + 1.0\n}\n"),
        "{target}"
    );
    let readme = generated.file("README.md").unwrap();
    assert!(
        readme.contains("as copied helpers: `private_helper` (line "),
        "{readme}"
    );
}

/// Private helpers are copied transitively, a private type with its impl
/// blocks; `crate::` paths in them are written from the crate's name; a
/// `pub use self::m::*` of a private module is reached through the
/// module's own path.
#[test]
fn private_helpers_are_copied_transitively_and_reexports_resolve() {
    let fixture = Fixture::new();
    let ops = fixture.ops();
    let mut text = std::fs::read_to_string(&ops).unwrap();
    text.push_str(
        "\nmod inner {\n    pub fn deep() -> f32 {\n        3.0\n    }\n}\npub use self::inner::*;\n\nstruct Acc(f32);\n\nimpl Acc {\n    fn add(&mut self, x: f32) {\n        self.0 += level(x);\n    }\n}\n\nfn level(x: f32) -> f32 {\n    crate::ops::helper(x) + deep()\n}\n\npub fn accumulate(values: &[f32]) -> f32 {\n    let mut acc = Acc(0.0);\n    for v in values {\n        acc.add(*v);\n    }\n    acc.0\n}\n",
    );
    std::fs::write(&ops, text).unwrap();
    let generated = fixture.generate("extract-transitive", "::accumulate");
    let target = generated.file("target.rs").unwrap();
    assert!(
        generated.extracted.unresolved.is_empty(),
        "{:?}",
        generated.extracted.unresolved
    );
    for copied in [
        "\nstruct Acc(f32);\n",
        "\nimpl Acc {\n    fn add(&mut self, x: f32) {\n        self.0 += level(x);\n    }\n}\n",
        "\nfn level(x: f32) -> f32 {\n    fixture_ops::ops::helper(x) + deep()\n}\n",
    ] {
        assert!(target.contains(copied), "{copied} missing from {target}");
    }
    assert!(target.contains("use fixture_ops::ops::*;\n"), "{target}");
    assert!(!target.contains("inner"), "{target}");
}

#[test]
fn crate_self_and_super_paths_are_written_from_the_crate_name() {
    let generated = Fixture::new().generate("extract-paths", "::with_paths");
    let target = generated.file("target.rs").unwrap();
    assert!(
        target.contains(
            "    fixture_ops::ops::helper(x) + fixture_ops::ops::helper(x) + fixture_ops::ops::helper(x)\n"
        ),
        "{target}"
    );
    assert!(generated
        .extracted
        .changes
        .iter()
        .any(|c| c.contains("`crate::`")));
}

#[test]
fn a_method_is_copied_unchanged_into_a_trait_impl_and_keeps_its_self() {
    let generated = Fixture::new().generate("extract-method", "::Counter::add");
    let target = generated.file("target.rs").unwrap();
    assert!(
        target.contains(
            "trait CounterAdd {\n    fn add(&mut self, values: &[f32]) -> usize;\n}\n\nimpl CounterAdd for Counter {\n"
        ),
        "{target}"
    );
    // The body is the production one; only the visibility a trait impl
    // refuses is gone.
    let start = OPS.find("    pub fn add").unwrap();
    let end = start + OPS[start..].find("\n    }\n").unwrap() + 7;
    let method = OPS[start..end].replacen("pub fn", "fn", 1);
    assert!(
        target.contains(&format!("    #[nvtx_range]\n{method}")),
        "{target}"
    );
    assert!(target.contains("#[derive(Default)]\npub struct ExtractMethod {\n"));
    assert!(
        target.contains(
            "        Ok(<Counter as CounterAdd>::add(\n            &mut self.receiver,\n            &inputs.values,\n        ))\n"
        ),
        "{target}"
    );
    let unresolved: Vec<&str> = generated
        .extracted
        .unresolved
        .iter()
        .map(|u| u.name.as_str())
        .collect();
    // Its private sibling is given back through a trait; a private field
    // cannot be.
    assert_eq!(unresolved, vec!["self.hidden"]);
    assert!(
        target.contains(
            "trait CounterCopiedMethods {\n    fn bump(&self) -> usize;\n}\n\nimpl CounterCopiedMethods for Counter {\n    fn bump(&self) -> usize {\n        1\n    }\n}\n"
        ),
        "{target}"
    );
    let readme = generated.file("README.md").unwrap();
    assert!(readme.contains("`self`: the method is copied unchanged into `impl CounterAdd for"));
}

/// A module of the fixture crate whose items the snippet cannot name.
const GEOMETRY: &str = r#"use crate::ops::THRESHOLD;

pub struct Point {
    pub x: f32,
    pub y: f32,
}

impl<'a> Point {
    /// Both coordinates.
    pub(crate) fn pair(&self) -> (f32, f32) {
        (self.x, self.y)
    }

    fn unused(&self) -> f32 {
        0.0
    }

    fn scaled(&self, mut by: f32) -> f32 {
        by *= 2.0;
        self.x * by
    }

    pub fn new(x: f32, y: f32) -> Point {
        Point { x, y }
    }
}

/// How far apart.
pub(crate) fn distance(a: &Point, b: &Point) -> f32 {
    squared(a, b).sqrt() + THRESHOLD * 0.0
}

fn squared(a: &Point, b: &Point) -> f32 {
    let (ax, ay) = a.pair();
    (ax - b.x).powi(2) + (ay - b.y).powi(2)
}
"#;

#[test]
fn private_items_of_other_modules_are_copied_and_private_methods_given_back() {
    let fixture = Fixture::new();
    let root = fixture.root();
    std::fs::write(root.join("fixture/src/geometry.rs"), GEOMETRY).unwrap();
    std::fs::write(
        root.join("fixture/src/lib.rs"),
        format!("{LIB}pub mod geometry;\n"),
    )
    .unwrap();
    let mut text = std::fs::read_to_string(fixture.ops()).unwrap();
    text.push_str(
        "\nuse crate::geometry::{distance as dist, Point};\n\npub fn span(a: &Point, b: &Point) -> f32 {\n    dist(a, b) + a.pair().1 + b.scaled(1.0)\n}\n",
    );
    std::fs::write(fixture.ops(), text).unwrap();
    let generated = fixture.generate("extract-foreign", "::span");
    let target = generated.file("target.rs").unwrap();
    assert!(
        generated.extracted.unresolved.is_empty(),
        "{:?}",
        generated.extracted.unresolved
    );
    // The private function, and the one it calls, copied as written; the
    // renamed import names the copy; what they name that production
    // exports is imported.
    for copied in [
        "/// How far apart.\npub(crate) fn distance(a: &Point, b: &Point) -> f32 {\n    squared(a, b).sqrt() + THRESHOLD * 0.0\n}\n",
        "\nfn squared(a: &Point, b: &Point) -> f32 {\n",
        "use self::distance as dist;\n",
        "use fixture_ops::geometry::Point;\n",
        "use fixture_ops::ops::THRESHOLD;\n",
    ] {
        assert!(target.contains(copied), "{copied} missing from {target}");
    }
    assert!(
        target.contains(
            "// Copied helper: private to `fixture_ops::geometry` (fixture/src/geometry.rs:28-31)"
        ),
        "{target}"
    );
    // The `pub(crate)` method both call, given back through a trait with
    // the impl block's generics; the one nothing calls is not.
    assert!(
        target.contains(
            "trait PointCopiedMethods<'a> {\n    fn pair(&self) -> (f32, f32);\n    fn scaled(&self, by: f32) -> f32;\n}\n\nimpl<'a> PointCopiedMethods<'a> for Point {\n    fn pair(&self) -> (f32, f32) {\n        (self.x, self.y)\n    }\n\n    fn scaled(&self, mut by: f32) -> f32 {\n        by *= 2.0;\n        self.x * by\n    }\n}\n"
        ),
        "{target}"
    );
    assert!(!target.contains("fn unused"), "{target}");
    let readme = generated.file("README.md").unwrap();
    let readme = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        readme.contains("`distance` (fixture/src/geometry.rs:28-31)"),
        "{readme}"
    );
    assert!(
        readme.contains("`squared` (fixture/src/geometry.rs:33-36)"),
        "{readme}"
    );
    assert!(
        readme.contains("`pair` (fixture/src/geometry.rs:9-12)"),
        "{readme}"
    );
}

#[test]
fn an_associated_function_is_called_through_its_trait() {
    let generated = Fixture::new().generate("extract-assoc", "::Counter::with_total");
    let target = generated.file("target.rs").unwrap();
    assert!(
        target.contains("trait CounterWithTotal {\n    fn with_total(total: usize) -> Counter;\n}")
    );
    assert!(target.contains("Ok(<Counter as CounterWithTotal>::with_total(inputs.total))"));
    assert!(target.contains("#[derive(Default)]\npub struct ExtractAssoc;"));
}

#[test]
fn whole_statements_of_a_line_range_get_a_range_named_after_them() {
    let fixture = Fixture::new();
    let first = line_of("// sum them");
    let last = line_of("let doubled = total * 2.0;");
    let generated = fixture.generate("extract-lines", &format!(":{first}-{last}"));
    let target = generated.file("target.rs").unwrap();
    let name = format!("statements:{first}-{last}");
    assert!(
        target.contains(&format!(
            "    let mut total = 0.0;\n    let _snippet_range = profiling_range(\"{name}\");\n    // sum them\n    for v in values {{\n        total += v;\n    }}\n    let doubled = total * 2.0;\n    drop(_snippet_range);\n    doubled + 1.0\n"
        )),
        "{target}"
    );
    assert!(!target.contains("#[nvtx_range]\npub fn statements"));
    assert_eq!(
        generated.extracted.instrumentation,
        Instrumentation::Statements {
            name,
            first: first + 1,
            last
        }
    );
}

#[test]
fn lines_that_are_not_whole_statements_instrument_the_whole_function() {
    let fixture = Fixture::new();
    let line = line_of("total += v;");
    let generated = fixture.generate("extract-part", &format!(":{}-{}", line, line + 1));
    assert_eq!(
        generated.extracted.instrumentation,
        Instrumentation::AddedAttribute
    );
    assert_eq!(
        generated.extracted.range_note.as_deref(),
        Some(&*format!("lines {}-{} are not whole statements of one block of `statements`: the whole function is instrumented", line, line + 1))
    );
}

#[test]
fn prepare_maps_what_the_types_make_clear_and_names_the_rest() {
    let fixture = Fixture::new();
    let generated = fixture.generate("extract-record", "::from_record");
    let target = generated.file("target.rs").unwrap();
    for line in [
        "        let image = record.image()?.clone();\n",
        "        let raw = record_tensor::<ndarray::Ix2>(record, \"tensor\")?;\n",
        "        let scores: Vec<f32> = record.tensor(\"scores\")?.iter().copied().collect();\n",
        "            device,\n",
    ] {
        assert!(target.contains(line), "{line} missing from {target}");
    }
    assert!(generated.extracted.unmapped.is_empty());
    // `scores` is taken: the dummy source makes detector-like records.
    let config = generated.file("config.yaml").unwrap();
    assert!(
        config.contains("\n  detections: {count: 1000, format: xyxy, objects: 20, classes: 80, above: 0.2, threshold: 0.5, canvas: [640, 640]}\n"),
        "{config}"
    );
    let parsed = ConfigFile::parse(config, None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    assert!(parsed.data_source.parameters.contains_key("detections"));

    let generated = fixture.generate("extract-default", "::odd_layout");
    let target = generated.file("target.rs").unwrap();
    assert!(target.contains("        let settings: Settings = Default::default();\n"));
    assert!(target.contains(
        "        let values: Vec<f32> = record.tensor(\"tensor\")?.iter().copied().collect();\n"
    ));

    // Scalars are settings: target.parameters with a default, the literal a
    // production call passes (suffix dropped), else a neutral value.
    let generated = fixture.generate("extract-setting", "::helper");
    let target = generated.file("target.rs").unwrap();
    assert!(generated.extracted.unmapped.is_empty());
    assert!(
        target.contains("#[derive(Debug, Clone, serde::Deserialize)]\n#[serde(default, deny_unknown_fields)]\npub struct ExtractSettingSettings {\n    pub x: f32,\n}\n"),
        "{target}"
    );
    assert!(
        target.contains(
            "            // as a call in fixture/src/ops.rs passes it\n            x: 0.25,\n"
        ),
        "{target}"
    );
    assert!(target.contains("        let settings: ExtractSettingSettings = profiling_core::target::parameters()?;\n        let x = settings.x;\n"), "{target}");
    let config = generated.file("config.yaml").unwrap();
    assert!(
        config.contains(
            "  parameters:\n    # as a call in fixture/src/ops.rs passes it\n    x: 0.25\n"
        ),
        "{config}"
    );

    // Tuples and arrays of scalars too, from a call's literals.
    let generated = fixture.generate("extract-tuple", "::resize_to");
    let target = generated.file("target.rs").unwrap();
    assert!(generated.extracted.unmapped.is_empty());
    assert!(
        target.contains(
            "    pub size: (u32, u32),\n    pub weights: [f32; 3],\n    pub flags: (bool,),\n"
        ),
        "{target}"
    );
    assert!(
        target.contains("            size: (640, 480),\n"),
        "{target}"
    );
    assert!(
        target.contains("            weights: [0.5, 0.25, 0.25],\n"),
        "{target}"
    );
    assert!(target.contains("            flags: (true,),\n"), "{target}");
    let config = generated.file("config.yaml").unwrap();
    assert!(config.contains("    size: [640, 480]\n"), "{config}");
    assert!(
        config.contains("    weights: [0.5, 0.25, 0.25]\n"),
        "{config}"
    );
    let parsed = ConfigFile::parse(config, None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    let flags = parsed
        .target
        .parameters
        .get("flags")
        .and_then(|v| v.as_sequence());
    assert_eq!(flags.map(|f| f.len()), Some(1), "{config}");
    assert_eq!(flags.and_then(|f| f[0].as_bool()), Some(true), "{config}");

    let generated = fixture.generate("extract-unmapped", "::opaque");
    let target = generated.file("target.rs").unwrap();
    assert_eq!(generated.extracted.unmapped, vec!["o: Opaque"]);
    assert!(
        target.contains("        // Neither Clone nor Copy: a function that makes one for each call,\n        // such as `Some(|| Opaque::...)`.\n        let o: Option<fn() -> Opaque> = None;\n        let Some(o) = o else {\n            anyhow::bail!(\n                \"{}: prepare does not map these parameters of `opaque` yet: \\\n                 `o: Opaque`\",\n                file!()\n            );\n        };\n"),
        "{target}"
    );
    for neutral in ["factor: 1.0,", "count: 1,", "keep: false,"] {
        assert!(target.contains(&format!("            // a neutral value: no production call passes a literal\n            {neutral}\n")), "{neutral} in {target}");
    }
    assert!(!target.contains("todo!") && !target.contains("panic!") && !target.contains("unwrap"));
}

/// `cfg`s of the copy are decided by the features production is built
/// with (here its defaults), and a crate the copy names that production
/// depends on goes into the snippet's own Cargo.toml as production declares
/// it; a function production compiles out is refused.
#[test]
fn production_features_decide_cfg_and_its_dependencies_go_into_the_snippet() {
    let fixture = Fixture::new();
    std::fs::write(
        fixture.root().join("fixture/Cargo.toml"),
        "[package]\nname = \"fixture-ops\"\nversion = \"0.1.0\"\n\n[dependencies]\nsmallvec = { version = \"1.13\", features = [\"union\"], optional = true }\n\n[features]\ndefault = [\"fast\"]\nfast = [\"smallvec\"]\nslow = []\n",
    )
    .unwrap();
    let generated = fixture.generate("extract-gated", "::gated");
    let target = generated.file("target.rs").unwrap();
    assert!(
        target.contains("#[nvtx_range]\npub fn gated(values: &[f32]) -> usize {\n    let n = values.len();\n    #[cfg(unix)]\n    let n = n + 1;\n    n + smallvec::"),
        "{target}"
    );
    assert!(!target.contains("feature"), "{target}");
    let changes = generated.extracted.changes.join("\n");
    assert!(
        changes.contains("`cfg` attributes that production's features turn on are removed (line "),
        "{changes}"
    );
    assert!(
        changes.contains("code that production's features turn off is left out (line "),
        "{changes}"
    );
    let manifest = generated.file("Cargo.toml").unwrap();
    assert!(
        manifest.contains("\nsmallvec = { version = \"1.13\", features = [\"union\"] }\n"),
        "{manifest}"
    );
    let added: Vec<String> = generated
        .extracted
        .snippet_dependencies
        .iter()
        .map(|d| format!("{d}: {}", d.reason))
        .collect();
    assert_eq!(
        added,
        ["smallvec = { version = \"1.13\", features = [\"union\"] }: the copy names `smallvec`, a dependency of fixture-ops"]
    );
    let refused = fixture.error("extract-never", "::never");
    assert!(
        refused.starts_with("`never` is compiled only with `cfg(feature = \"slow\")`, which fixture-ops is not built with (its default features"),
        "{refused}"
    );
}

/// A function that only delegates is said to, with the command that
/// copies the function it calls; one with a body of its own is not.
#[test]
fn a_thin_wrapper_is_said_with_the_command_for_its_callee() {
    let fixture = Fixture::new();
    let generated = fixture.generate("extract-thin", "::quarter");
    assert_eq!(
        generated.extracted.warnings,
        [format!(
            "`quarter` only prepares its arguments and delegates to `helper`: the profile times one call into production code, not a body; to profile its body instead: profile-cli new helper --from fixture/src/ops.rs::helper (defined at line {}), or `--follow`",
            line_of("pub fn helper(x: f32) -> f32 {")
        )]
    );
    // --follow copies the function it calls instead.
    let mut request = fixture.request("extract-followed", "::quarter");
    request.follow = true;
    let followed = snippet::generate(&request).unwrap();
    assert_eq!(followed.extracted.item, "fixture_ops::ops::helper");
    assert_eq!(
        followed.extracted.warnings[0],
        format!(
            "`quarter` only prepares its arguments and delegates to `helper`: followed, the snippet copies `helper` (fixture/src/ops.rs:{})",
            line_of("pub fn helper(x: f32) -> f32 {")
        )
    );
    assert!(followed
        .file("target.rs")
        .unwrap()
        .contains("pub fn helper(x: f32) -> f32 {"));
    for body in ["::helper", "::with_paths", "::statements"] {
        let generated = fixture.generate("extract-body", body);
        assert!(
            generated.extracted.warnings.is_empty(),
            "{body}: {:?}",
            generated.extracted.warnings
        );
    }
}

#[test]
fn the_config_names_the_target_and_parses_with_every_key() {
    let fixture = Fixture::new();
    let mut request = fixture.request("extract-config", "::helper");
    request.device = Device::Cuda(1);
    let generated = snippet::generate(&request).unwrap();
    let text = generated.file("config.yaml").unwrap();
    let config = ConfigFile::parse(text, None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    assert_eq!(config.target.name, "extract-config");
    assert_eq!(config.profile_name, "extract-config");
    assert_eq!(
        config.target.import_path.as_deref(),
        Some("host/snippets/extract_config/target.rs")
    );
    assert_eq!(config.device, Device::Cuda(1));
    assert_eq!(
        (config.warmup, config.iterations, config.seed),
        (10, 100, Some(0))
    );
    for key in [
        "validate_output:",
        "capture_range:",
        "write_manifest:",
        "record_loading:",
        "synchronize_each_iteration:",
    ] {
        assert!(text.contains(key), "{key} missing from {text}");
    }

    let mut request = fixture.request("extract-images", "::helper");
    request.data_source = "images".to_owned();
    let text = snippet::generate(&request).unwrap().files[1].1.clone();
    assert!(text.contains("  name: images\n") && text.contains("  directory: /path/to/images\n"));
}

#[test]
fn the_readme_records_provenance_and_the_commands() {
    let fixture = Fixture::new();
    let generated = fixture.generate("extract-readme", "::odd_layout");
    let readme = generated.file("README.md").unwrap();
    let first = line_of("pub fn odd_layout(values: &[f32],   settings: &Settings) -> Vec<f32> {");
    for expected in [
        "| source file | `fixture/src/ops.rs` |".to_owned(),
        format!(
            "| lines | {first}-{} (`odd_layout`; its doc comment starts at line {}) |",
            first + 7,
            first - 3
        ),
        "| item | `fixture_ops::ops::odd_layout` |".to_owned(),
        "| git commit | none: the source file is not in a git work tree |".to_owned(),
        "| made by | `profile-cli new extract-readme --from fixture/src/ops.rs::odd_layout --directory host/snippets/extract_readme` |".to_owned(),
        "  --config host/snippets/extract_readme/config.yaml \\\n  --run-id smoke\n".to_owned(),
        "  --print-nsys-command\n".to_owned(),
        "mkdir -p <repo>/host/snippets/extract_readme/runs/.smoke.nsys && nsys profile \\\n  -o <repo>/host/snippets/extract_readme/runs/.smoke.nsys/trace \\\n".to_owned(),
        "  && <repo>/target/release/profile-cli analyze <repo>/host/snippets/extract_readme/runs/smoke\n".to_owned(),
        "  '--nvtx-capture=profile-target@*' \\\n".to_owned(),
        "## Assumptions and differences from production\n".to_owned(),
        "## Requirements\n".to_owned(),
    ] {
        assert!(readme.contains(&expected), "{expected}\nmissing from\n{readme}");
    }
}

#[test]
fn a_snippet_is_written_whole_and_never_over_another() {
    let fixture = Fixture::new();
    let request = fixture.request("extract-write", "::helper");
    let created = snippet::create(&request).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(&created.directory)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            "Cargo.toml",
            "DRAFT",
            "README.md",
            "config.yaml",
            "target.rs"
        ],
        "in a snippets crate: a crate of its own, a draft until checked"
    );
    assert_eq!(
        std::fs::read_to_string(created.directory.join("target.rs")).unwrap(),
        created.file("target.rs").unwrap()
    );
    let draft = created.file("DRAFT").unwrap();
    assert!(
        draft.starts_with("not checked yet: `profile-cli new` made it and has not built it\n"),
        "{draft}"
    );
    assert!(created
        .file("Cargo.toml")
        .unwrap()
        .contains("name = \"snippet-extract-write\""));
    let again = snippet::create(&request).unwrap_err();
    assert!(matches!(again, SnippetError::Exists(ref dir) if dir == &created.directory));
    assert_eq!(again.exit_code(), 2);
    assert_eq!(
        entries(&fixture.root().join("host/snippets")),
        vec!["extract_write"]
    );
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn unknown_or_unusable_sources_are_refused_with_what_and_where() {
    let fixture = Fixture::new();
    let ops = "fixture/src/ops.rs";
    let count = OPS.lines().count();
    let cases = [
        (
            "::odd_layot",
            format!("{ops} has no function `odd_layot`; did you mean `odd_layout`?"),
        ),
        (
            "::add",
            format!("{ops} has no function `add`; it is a method: select Counter::add"),
        ),
        (
            "::Counter::sub",
            format!("`Counter` has no method `sub` in {ops}; its methods: add, bump, with_total"),
        ),
        (
            "::Gauge::add",
            format!("{ops} has no impl block for `Gauge`; the types it implements: Counter"),
        ),
        (
            ":1-2",
            format!("lines 1-2 of {ops} are not inside a function"),
        ),
        (
            &format!(":{}-{}", count, count + 3),
            format!(
                "{ops} has {count} lines: the line range {count}-{} runs past its end",
                count + 3
            ),
        ),
        ("::later", "`later` is an `async fn`".to_owned()),
        (
            "::generic",
            "`generic` is generic over `T: Copy`: a target runs one concrete function; give its parameters with --type-args T=<type> (the copy keeps its generics, `run` calls it with these)".to_owned(),
        ),
    ];
    for (selector, expected) in cases {
        let error = fixture.error("extract-refused", selector);
        assert!(error.contains(&expected), "{selector}: {error}");
    }
    assert_eq!(
        entries(&fixture.root().join("host/snippets")),
        Vec::<String>::new()
    );
}

#[test]
fn bad_names_specs_and_options_are_usage_errors() {
    let fixture = Fixture::new();
    let mut request = fixture.request("Not a name", "::helper");
    request.directory = None;
    let error = snippet::generate(&request).unwrap_err();
    assert_eq!(error.exit_code(), 2);
    assert!(
        error
            .to_string()
            .starts_with("profile name: `Not a name` is not a valid profile name"),
        "{error}"
    );

    let mut request = fixture.request("extract-source", "::helper");
    request.data_source = "webcam".to_owned();
    assert_eq!(
        snippet::generate(&request).unwrap_err().to_string(),
        "--data-source: unknown data source `webcam`: the registered ones are coco, dummy, images, tensors, video"
    );

    for (spec, expected) in [
        ("ops.rs", "--from `ops.rs`: expected <file.rs>::<function>, <file.rs>::<Type>::<method> or <file.rs>:<start>-<end>"),
        ("ops.rs:9-3", "--from `ops.rs:9-3`: the line range 9-3 ends before it starts"),
        ("ops.rs:a-b", "--from `ops.rs:a-b`: `a-b` is not a line range: expected <start>-<end>, lines counted from 1"),
        ("ops.rs::my-fn", "--from `ops.rs::my-fn`: `my-fn` is not a Rust identifier"),
    ] {
        let error = spec.parse::<SourceSpec>().unwrap_err();
        assert!(error.to_string().starts_with(expected), "{spec}: {error}");
        assert_eq!(error.exit_code(), 2);
    }

    let mut request = fixture.request("extract-missing", "::helper");
    request.from = "nowhere/ops.rs::helper".parse().unwrap();
    let error = snippet::generate(&request).unwrap_err().to_string();
    assert!(
        error.starts_with(
            "--from: no such file: nowhere/ops.rs (looked in the current directory and in "
        ),
        "{error}"
    );
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn example_candidate_has_the_generated_manifest() {
    let directory = workspace_root().join("inference_profiling/snippets/example_candidate");
    let krate = snippet::SnippetsCrate::of_directory(&directory).unwrap();
    let generated = snippet::snippet_manifest(&krate, &directory, "example-candidate").unwrap();
    let committed = std::fs::read_to_string(directory.join("Cargo.toml")).unwrap();
    assert!(
        generated == committed,
        "inference_profiling/snippets/example_candidate/Cargo.toml is not what `new` makes:\n{generated}"
    );
}

#[test]
fn a_snippet_crate_takes_the_snippets_crate_s_dependencies_and_features() {
    let fixture = Fixture::new();
    let host = fixture.root().join("host");
    std::fs::write(
        host.join("Cargo.toml"),
        "[package]\nname = \"host-snippets\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\nfixture-ops = { path = \"../fixture\", features = [\"fast\"] }\n\
         profiling-core.workspace = true\nsnippet-old = { path = \"snippets/old\" }\n\n\
         [features]\ngpu = [\"profiling-core/tch\", \"snippet-old/gpu\"]\n",
    )
    .unwrap();
    let directory = host.join("snippets/my_copy");
    let krate = snippet::SnippetsCrate::of_directory(&directory).unwrap();
    let manifest = snippet::snippet_manifest(&krate, &directory, "my-copy").unwrap();
    let body = manifest.split("\n[package]").nth(1).unwrap();
    assert_eq!(
        body,
        "\nname = \"snippet-my-copy\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
         [lib]\npath = \"target.rs\"\n\n\
         [dependencies]\nfixture-ops = { path = \"../../../fixture\", features = [\"fast\"] }\n\
         profiling-core.workspace = true\n\n\
         [features]\ngpu = [\"profiling-core/tch\"]\n"
    );
    assert!(manifest.starts_with("# The snippet `my-copy` as a crate of its own"));
}

#[test]
fn including_a_snippet_crate_adds_its_dependency_and_forwards_features() {
    let fixture = Fixture::new();
    let host = fixture.root().join("host");
    let original = "[package]\nname = \"host-snippets\"\nversion = \"0.1.0\"\n\n\
                    [dependencies]\n# kept\nprofiling-core.workspace = true\n\n\
                    [features]\ngpu = [\"profiling-core/tch\"]\nother = []\n";
    std::fs::write(host.join("Cargo.toml"), original).unwrap();
    let directory = host.join("snippets/my_copy");
    std::fs::create_dir_all(&directory).unwrap();
    let krate = snippet::SnippetsCrate::of_directory(&directory).unwrap();
    let manifest = snippet::snippet_manifest(&krate, &directory, "my-copy").unwrap();
    std::fs::write(directory.join("Cargo.toml"), manifest).unwrap();

    assert!(!snippet::is_included(&krate, &directory).unwrap());
    assert!(snippet::set_included(&krate, &directory, true).unwrap());
    let included = std::fs::read_to_string(host.join("Cargo.toml")).unwrap();
    assert_eq!(
        included,
        "[package]\nname = \"host-snippets\"\nversion = \"0.1.0\"\n\n\
         [dependencies]\n# kept\nprofiling-core.workspace = true\n\
         snippet-my-copy = { path = \"snippets/my_copy\" }\n\n\
         [features]\ngpu = [\"profiling-core/tch\", \"snippet-my-copy/gpu\"]\n\
         other = [\"snippet-my-copy/other\"]\n"
    );
    assert!(snippet::is_included(&krate, &directory).unwrap());
    assert!(
        !snippet::set_included(&krate, &directory, true).unwrap(),
        "a second inclusion changes nothing"
    );
    assert!(snippet::set_included(&krate, &directory, false).unwrap());
    assert_eq!(
        std::fs::read_to_string(host.join("Cargo.toml")).unwrap(),
        original,
        "leaving it out restores the manifest"
    );
}

#[test]
fn a_draft_file_says_why_first() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(snippet::draft_reason(dir.path()), None);
    let path = snippet::mark_draft(
        dir.path(),
        "my-copy",
        "does not build: 1 error",
        "error[E0425]: x\n",
    )
    .unwrap();
    assert_eq!(path, dir.path().join("DRAFT"));
    let text = snippet::draft_reason(dir.path()).unwrap();
    assert_eq!(text.lines().next(), Some("does not build: 1 error"));
    assert!(text.contains("`profile-cli check my-copy`"), "{text}");
    assert!(text.ends_with("error[E0425]: x\n"), "{text}");
    assert!(snippet::unmark_draft(dir.path()).unwrap());
    assert!(!snippet::unmark_draft(dir.path()).unwrap());
}

#[test]
fn a_parity_test_is_written_when_the_snippet_can_call_production() {
    let fixture = Fixture::new();
    let generated = fixture.generate("doubled", "::helper");
    assert_eq!(
        generated.extracted.parity,
        snippet::Parity::Test {
            production: "fixture_ops::ops::helper".to_owned()
        }
    );
    let target = generated.file("target.rs").unwrap();
    let module = &target[target
        .find("#[cfg(test)]\nmod parity {")
        .expect("a parity module")..];
    assert!(
        module.contains("            let copy = helper(inputs.x);\n            let production = fixture_ops::ops::helper(inputs.x);\n"),
        "{module}"
    );
    assert!(module.contains("profiling_core::parity::each_record(&config, |record, device| {"));
    let readme = generated.file("README.md").unwrap();
    assert!(
        readme.contains("`target.rs` ends with a parity test (`mod parity`)"),
        "{readme}"
    );
}

#[test]
fn without_a_way_to_call_production_the_readme_says_why_there_is_no_parity_test() {
    let fixture = Fixture::new();
    for (selector, why) in [
        ("::private_helper", "`fixture_ops::ops::private_helper` is not `pub`, so the snippet cannot call it"),
        ("::twice", "it returns nothing and changes none of its arguments: there is no output to compare"),
        ("::Counter::add", "the copied method changes its `self`: the copy and production would not start from the same value"),
    ] {
        let generated = fixture.generate("no-parity", selector);
        assert_eq!(
            generated.extracted.parity,
            snippet::Parity::Unavailable { why: why.to_owned() },
            "{selector}"
        );
        assert!(!generated.file("target.rs").unwrap().contains("mod parity"), "{selector}");
        let readme = generated.file("README.md").unwrap().replace('\n', " ");
        assert!(
            readme.contains(&format!("No parity test could be made: {why}.")),
            "{selector}: {readme}"
        );
    }
}

#[test]
fn a_unit_only_enum_of_the_crate_is_a_setting_by_variant_name() {
    let fixture = Fixture::new();
    let mut text = std::fs::read_to_string(fixture.ops()).unwrap();
    text.push_str(
        "\n/// How to pick.\npub enum Mode {\n    Fast,\n    Exact,\n}\n\npub fn pick(values: &[f32], mode: Mode, then: Mode) -> f32 {\n    match (mode, then) {\n        (Mode::Fast, _) => values[0],\n        _ => values.iter().sum(),\n    }\n}\n\npub fn picked() -> f32 {\n    pick(&[1.0], Mode::Exact, Mode::Fast)\n}\n",
    );
    std::fs::write(fixture.ops(), text).unwrap();
    let generated = fixture.generate("pick", "::pick");
    let target = generated.file("target.rs").unwrap();
    for expected in [
        "#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]\npub enum ModeSetting {\n    Fast,\n    Exact,\n}\n",
        "    pub fn production(self) -> Mode {\n        match self {\n            ModeSetting::Fast => Mode::Fast,\n            ModeSetting::Exact => Mode::Exact,\n        }\n    }\n",
        "    pub mode: ModeSetting,\n",
        // The default is what production's call passes.
        "            mode: ModeSetting::Exact,\n",
        "let mode = settings.mode;",
        "inputs.mode.production()",
        "            then: ModeSetting::Fast,\n",
    ] {
        assert!(target.contains(expected), "{expected} missing from {target}");
    }
    // One enum of the snippet's for the two parameters.
    assert_eq!(
        target.matches("pub enum ModeSetting").count(),
        1,
        "{target}"
    );
    let config = generated.file("config.yaml").unwrap();
    assert!(config.contains("    mode: Exact\n"), "{config}");
    assert!(
        generated.extracted.unresolved.is_empty(),
        "{:?}",
        generated.extracted.unresolved
    );
}

#[test]
fn borrowed_state_is_held_static_and_the_trait_takes_the_impl_s_lifetimes() {
    let fixture = Fixture::new();
    let mut text = std::fs::read_to_string(fixture.ops()).unwrap();
    text.push_str(
        "\npub struct Tokens<'a> {\n    pub text: &'a str,\n}\n\nimpl<'a> Tokens<'a> {\n    pub fn first(&self, sep: char) -> Option<&'a str> {\n        self.text.split(sep).next()\n    }\n}\n\npub fn longest(tokens: Tokens, other: std::borrow::Cow<'_, str>) -> usize {\n    tokens.text.len().max(other.len())\n}\n",
    );
    std::fs::write(fixture.ops(), text).unwrap();
    let generated = fixture.generate("tokens-first", "::Tokens::first");
    let target = generated.file("target.rs").unwrap();
    for expected in [
        "trait TokensFirstCopy<'a> {\n    fn first(&self, sep: char) -> Option<&'a str>;\n}\n\nimpl<'a> TokensFirstCopy<'a> for Tokens<'a> {\n",
        "    pub receiver: Tokens<'static>,\n",
        "<Tokens<'static> as TokensFirstCopy<'static>>::first(",
    ] {
        assert!(target.contains(expected), "{expected} missing from {target}");
    }
    let generated = fixture.generate("tokens-longest", "::longest");
    let target = generated.file("target.rs").unwrap();
    for expected in [
        "    pub tokens: fn() -> Tokens<'static>,\n",
        "    pub other: std::borrow::Cow<'static, str>,\n",
    ] {
        assert!(
            target.contains(expected),
            "{expected} missing from {target}"
        );
    }
    let readme = generated.file("README.md").unwrap();
    let readme = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        readme.contains("Types that borrow are held with `'static` lifetimes (the target outlives every call): `fn() -> Tokens<'static>`, `std::borrow::Cow<'static, str>`"),
        "{readme}"
    );
}

#[test]
fn associated_types_of_type_parameters_are_named_for_the_types_given() {
    let fixture = Fixture::new();
    let mut text = std::fs::read_to_string(fixture.ops()).unwrap();
    text.push_str(
        "\npub fn last_or<I>(items: I, fallback: I::Item) -> Option<I::Item>\nwhere\n    I: IntoIterator,\n{\n    items.into_iter().last().or(Some(fallback))\n}\n",
    );
    std::fs::write(fixture.ops(), text).unwrap();
    let mut request = fixture.request("last-or", "::last_or");
    request.type_args = "I=Vec<u8>".parse().unwrap();
    let generated = snippet::generate(&request).unwrap();
    let target = generated.file("target.rs").unwrap();
    assert!(
        target.contains("pub trait ItemOfI {\n    type Type;\n}\n\nimpl<I: IntoIterator> ItemOfI for I {\n    type Type = I::Item;\n}\n"),
        "{target}"
    );
    assert!(
        target.contains("    pub fallback: <Vec<u8> as ItemOfI>::Type,\n"),
        "{target}"
    );
    assert!(
        target.contains("    type Output = Option<<Vec<u8> as ItemOfI>::Type>;\n"),
        "{target}"
    );
}

#[test]
fn a_generic_function_is_called_with_the_type_args_given() {
    let fixture = Fixture::new();
    let mut request = fixture.request("first-three", "::first");
    request.type_args = "S=f32,N=3".parse().unwrap();
    let generated = snippet::generate(&request).unwrap();
    let target = generated.file("target.rs").unwrap();
    assert!(
        target.contains("pub fn first<S, const N: usize>(values: &[S], scale: S) -> [S; N]"),
        "the copy keeps its generics: {target}"
    );
    assert!(target.contains("    type Output = [f32; 3];\n"), "{target}");
    assert!(target.contains("    pub scale: f32,\n"), "{target}");
    assert!(
        target.contains("Ok(first::<f32, 3>(&inputs.values, inputs.scale))"),
        "{target}"
    );
    assert!(
        target.contains(
            "let production = fixture_ops::ops::first::<f32, 3>(&inputs.values, inputs.scale);"
        ),
        "the parity test calls production with the same types: {target}"
    );
    assert!(
        generated
            .extracted
            .command
            .contains("--type-args S=f32,N=3"),
        "{}",
        generated.extracted.command
    );

    let mut request = fixture.request("first-three", "::first");
    request.type_args = "S=f32".parse().unwrap();
    assert_eq!(
        snippet::generate(&request).unwrap_err().to_string(),
        "--type-args: give every parameter of `first`: missing N (its parameters: `S: Copy + std::ops::Mul<Output = S>`, `const N: usize`)"
    );
    request.type_args = "S=f32,N=3,X=u8".parse().unwrap();
    assert!(snippet::generate(&request)
        .unwrap_err()
        .to_string()
        .starts_with("--type-args: `first` has no parameter `X`"));
    let mut request = fixture.request("doubled", "::helper");
    request.type_args = "T=f32".parse().unwrap();
    assert_eq!(
        snippet::generate(&request).unwrap_err().to_string(),
        "--type-args: `helper` has no type or const parameters to give"
    );
    let error = fixture.error("first-three", "::first");
    assert!(
        error.contains("`first` is generic over `S: Copy + std::ops::Mul<Output = S>`, `const N: usize`: a target runs one concrete function; give its parameters with --type-args S=<type>,N=<value>"),
        "{error}"
    );
}

#[test]
fn type_args_are_read_with_their_brackets() {
    let args: snippet::TypeArgs = "T=(f32, f32),N=4, D = Vec<(u8, u8)>".parse().unwrap();
    assert_eq!(args.get("T"), Some("(f32, f32)"));
    assert_eq!(args.get("N"), Some("4"));
    assert_eq!(args.get("D"), Some("Vec<(u8, u8)>"));
    assert_eq!(args.to_string(), "T=(f32, f32),N=4,D=Vec<(u8, u8)>");
    for (text, why) in [
        (
            "T",
            "`T` is not NAME=TYPE (or NAME=VALUE for a const parameter)",
        ),
        ("1T=f32", "`1T` is not a parameter name"),
        ("T=f32,T=u8", "`T` is given twice"),
        ("T=)(", "`)(` (for `T`) is not a Rust type or value"),
        ("", "give at least one NAME=TYPE"),
    ] {
        assert_eq!(
            text.parse::<snippet::TypeArgs>().unwrap_err().to_string(),
            format!("--type-args {text}: {why}")
        );
    }
}

#[test]
fn a_missing_dependency_on_the_production_crate_is_added_once_keeping_the_manifest() {
    let fixture = Fixture::new();
    let host = fixture.root().join("host/Cargo.toml");
    let original = "# The snippets of this workspace.\n[package]\nname = \"host-snippets\"\nversion = \"0.1.0\"\n\n[dependencies]\n# what every snippet uses\nprofiling-core.workspace = true   # the contract\nanyhow.workspace = true\n";
    std::fs::write(&host, original).unwrap();

    let created = snippet::create(&fixture.request("doubled", "::helper")).unwrap();
    assert_eq!(
        created.extracted.added_dependency,
        Some(snippet::AddedDependency {
            package: "fixture-ops".to_owned(),
            path: "../fixture".to_owned(),
        })
    );
    assert!(
        created.extracted.unresolved.is_empty(),
        "{:?}",
        created.extracted.unresolved
    );
    assert!(matches!(
        created.extracted.parity,
        snippet::Parity::Test { .. }
    ));
    assert_eq!(
        std::fs::read_to_string(&host).unwrap(),
        format!("{original}fixture-ops = {{ path = \"../fixture\" }}\n"),
        "added once, the comments and layout kept"
    );
    let manifest = created.file("Cargo.toml").unwrap();
    assert!(
        manifest.contains("fixture-ops = { path = \"../../../fixture\" }"),
        "{manifest}"
    );

    let again = snippet::create(&fixture.request("doubled-again", "::helper")).unwrap();
    assert_eq!(again.extracted.added_dependency, None);
    assert_eq!(
        std::fs::read_to_string(&host).unwrap(),
        format!("{original}fixture-ops = {{ path = \"../fixture\" }}\n")
    );
}

// What `new` parses: the copy's file and the modules its names lead to,
// each once; a search over the crate parses only the files that name what
// it looks for, and no large file the copy does not need.

/// A generated module of about `bytes` bytes that names what the copies of
/// OPS name (`f32`, `Vec`, `Settings`, `helper`, `odd_layout`) and
/// defines `Table`, as code generators write them.
fn generated_module(bytes: usize) -> String {
    let mut text = String::from(
        "//! Generated lookups.\n\nuse crate::ops::{helper, odd_layout, Settings};\n\n#[derive(Debug, Clone)]\npub struct Table(pub [f32; 4]);\n\n",
    );
    let mut index = 0;
    while text.len() < bytes {
        text.push_str(&format!(
            "pub fn generated_{index:06}(values: &[f32], settings: &Settings) -> Vec<f32> {{\n    odd_layout(values, settings).iter().map(|v| helper(*v) + {index}.5).collect()\n}}\n\n"
        ));
        index += 1;
    }
    text
}

impl Fixture {
    fn write(&self, path: &str, text: &str) {
        std::fs::write(self.root().join(path), text).unwrap();
    }

    /// A request for `selector` in `file`, below `fixture/src/`.
    fn request_in(&self, name: &str, file: &str, selector: &str) -> NewSnippet {
        let mut request = self.request(name, selector);
        request.from = format!(
            "{}{selector}",
            self.root().join("fixture/src").join(file).display()
        )
        .parse()
        .unwrap();
        request
    }
}

fn parsed_names(generated: &Generated) -> Vec<&str> {
    generated
        .extracted
        .parsed
        .iter()
        .map(|(file, _)| file.as_str())
        .collect()
}

#[test]
fn a_large_generated_module_the_copy_does_not_need_is_not_parsed() {
    let fixture = Fixture::new();
    let before = fixture.generate("kept", "::odd_layout");
    fixture.write("fixture/src/lib.rs", &format!("{LIB}pub mod generated;\n"));
    fixture.write("fixture/src/generated.rs", &generated_module(2_000_000));

    let after = fixture.generate("kept", "::odd_layout");
    let parsed = parsed_names(&after);
    assert!(!parsed.contains(&"fixture/src/generated.rs"), "{parsed:?}");
    assert!(parsed.contains(&"fixture/src/ops.rs"), "{parsed:?}");
    assert_eq!(after.files, before.files, "the snippet is the same");
}

#[test]
fn a_file_that_names_nothing_a_search_looks_for_is_not_parsed() {
    let fixture = Fixture::new();
    fixture.write("fixture/src/lib.rs", &format!("{LIB}pub mod unrelated;\n"));
    fixture.write(
        "fixture/src/unrelated.rs",
        "pub fn unrelated(x: u8) -> u8 {\n    x + 1\n}\n",
    );
    let generated = fixture.generate("kept", "::odd_layout");
    let parsed = parsed_names(&generated);
    assert!(!parsed.contains(&"fixture/src/unrelated.rs"), "{parsed:?}");
    // What names the function is searched: its production callers.
    assert!(parsed.contains(&"fixture/src/ops.rs"), "{parsed:?}");
}

#[test]
fn a_large_module_the_copys_names_lead_to_is_parsed_once() {
    let fixture = Fixture::new();
    fixture.write(
        "fixture/src/lib.rs",
        &format!("{LIB}pub mod generated;\npub mod tables;\n"),
    );
    fixture.write("fixture/src/generated.rs", &generated_module(2_000_000));
    fixture.write(
        "fixture/src/tables.rs",
        "use crate::generated::Table;\n\npub fn first(table: &Table) -> f32 {\n    table.0[0]\n}\n",
    );
    let generated =
        snippet::generate(&fixture.request_in("first", "tables.rs", "::first")).unwrap();
    let parsed = parsed_names(&generated);
    let times = parsed
        .iter()
        .filter(|file| **file == "fixture/src/generated.rs")
        .count();
    assert_eq!(times, 1, "{parsed:?}");
    let target = generated.file("target.rs").unwrap();
    assert!(
        target.contains("use fixture_ops::generated::Table;\n"),
        "{target}"
    );
}

#[test]
fn a_module_the_copy_needs_over_the_parse_limit_is_refused_by_name() {
    let fixture = Fixture::new();
    fixture.write(
        "fixture/src/lib.rs",
        &format!("{LIB}pub mod generated;\npub mod tables;\n"),
    );
    let mut huge = "// padding\n".repeat(3_000_000);
    huge.push_str("pub struct Table(pub [f32; 4]);\n");
    fixture.write("fixture/src/generated.rs", &huge);
    fixture.write(
        "fixture/src/tables.rs",
        "use crate::generated::Table;\n\npub fn first(table: &Table) -> f32 {\n    table.0[0]\n}\n",
    );
    let error = snippet::generate(&fixture.request_in("first", "tables.rs", "::first"))
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with(
            "fixture/src/generated.rs is 33.0 MB, more than the 32.0 MB `new` parses in one file"
        ),
        "{error}"
    );
}
