//! `new` on real code nobody here wrote: functions of five published
//! crates (box operations, image processing, assignment, triangulation),
//! found through
//! `cargo metadata` as dev-dependencies of `tests/corpus/` and copied into
//! a temporary workspace as its production crates, as a user's own code
//! would be. Every snippet must be linked in with no hand edit: cfg decided
//! by production's features, the crates it names in its own Cargo.toml,
//! private helpers and modules copied beside it (of other modules too, and
//! macros), private methods given back through a trait, re-exports
//! resolved, owned fields for borrowed parameters, inputs from the record,
//! scalars and unit-only enums as settings with defaults. Where the parity
//! test can run, the copy must compute what production computes.
//!
//! The workspace lives under `target/real-crates/` (removed after) and
//! builds in `target/snippet-check/`, which the other cargo-running tests
//! share by turns (`snippet_check_build`).

use std::path::{Path, PathBuf};

use crate::common::{profile_cli_in, snippet_check_build, workspace_root, RemoveOnDrop};

/// What the parity test must say after `new`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parity {
    /// The copy computes what production computes.
    Passes,
    /// It cannot run until a parameter of a production type is mapped by
    /// hand (`new` says which, and exits 0).
    NotYet,
    /// There is none: the function returns nothing and changes nothing
    /// the snippet can compare (`new` says so, and exits 0).
    None,
}

/// (profile name, `--from` below the workspace, `--type-args`, parity).
/// The first snippet of each crate makes it a dependency of the profiling
/// crate, which changes the features of what they share (`rten-tensor`
/// asks `smallvec` for more) and rebuilds every crate above those:
/// `imageproc`, which brings `image`'s every format and the runtime above
/// it, comes last, so that this happens to them once.
const CASES: &[(&str, &str, &str, Parity)] = &[
    // Generic over borrowed views: owned fields, f64 scores converted from
    // the record's f32, thresholds from a production call's literals; its
    // `#[cfg(feature = "ndarray")]` decided by production's features.
    (
        "pb-nms",
        "powerboxesrs/src/nms.rs::nms",
        "N=f32,BA=ndarray::ArrayView2<'_, f32>,SA=ndarray::ArrayView1<'_, f64>",
        Parity::Passes,
    ),
    // Calls into a crate-private module (`pub(crate) mod utils`): copied.
    (
        "pb-nms-slice",
        "powerboxesrs/src/nms.rs::nms_slice",
        "N=f32",
        Parity::Passes,
    ),
    (
        "pb-iou",
        "powerboxesrs/src/iou.rs::iou_distance",
        "N=f32,BA=ndarray::ArrayView2<'_, f32>",
        Parity::Passes,
    ),
    (
        "pb-areas",
        "powerboxesrs/src/boxes.rs::box_areas",
        "N=f32,BA=ndarray::ArrayView2<'_, f32>",
        Parity::Passes,
    ),
    // A `no_std` crate's file: imports from `alloc`, private methods of
    // its public `Point` given back, its private helpers copied once.
    (
        "dl-triangulate",
        "delaunator/src/lib.rs::triangulate",
        "",
        Parity::NotYet,
    ),
    // Private `macro_rules!` macros copied before the copy, a public type
    // whose private fields it reads copied too, an alias of `usize` read
    // from the record; the same error from copy and production is parity.
    (
        "ec-earcut",
        "earcutr/src/lib.rs::earcut",
        "T=f64",
        Parity::Passes,
    ),
    // `Vec<f64>` from the record's tensor, scalars as settings.
    ("lsap-solve", "lsap/src/lib.rs::solve", "", Parity::Passes),
    // In a private module whose items the crate root re-exports
    // (`pub use poly_algos::{..}`): the sibling it calls
    // (`simplify_polyline`) and the types of other private modules
    // (`PointF`, from `shapes`) named by their public paths.
    (
        "ri-simplify",
        "rten-imageproc/src/poly_algos.rs::simplify_polygon",
        "",
        Parity::NotYet,
    ),
    // A view of another crate with its lifetime left out
    // (`NdTensorView<bool, 2>` for `NdTensorView<'a, bool, 2>`), held
    // `'static` in the inputs; the return type (`Polygons`) by its public
    // path, the module's private helpers copied.
    (
        "ri-contours",
        "rten-imageproc/src/contours.rs::find_contours",
        "",
        Parity::NotYet,
    ),
    // A mutable view of another crate passed by value
    // (`NdTensorViewMut<T, 2>`): not `Clone`, so made for each call by a
    // function `prepare` holds; the production call's `true` (of
    // `T = bool`) is no default for `T = u8`.
    (
        "ri-stroke",
        "rten-imageproc/src/drawing.rs::stroke_rect",
        "T=u8",
        Parity::None,
    ),
    // Private helpers copied transitively, a `pub use self::m::*` of a
    // private module resolved, `Image<Rgb<u8>>` taken as the record's image.
    (
        "ip-blur",
        "imageproc/src/filter/mod.rs::gaussian_blur_f32",
        "P=image::Rgb<u8>",
        Parity::Passes,
    ),
    // Private traits of the module and their impls copied.
    (
        "ip-edt",
        "imageproc/src/distance_transform.rs::euclidean_squared_distance_transform",
        "",
        Parity::Passes,
    ),
    // A grey image from the record's RGB one.
    (
        "ip-otsu",
        "imageproc/src/contrast.rs::otsu_level",
        "",
        Parity::Passes,
    ),
    // A unit-only enum of the production crate (`Norm`) is a setting by
    // variant name, its default what a production call passes.
    (
        "ip-dilate",
        "imageproc/src/morphology.rs::dilate",
        "",
        Parity::Passes,
    ),
    // One that is neither Clone nor Copy (`ThresholdType`): the setting is
    // the snippet's enum, made into production's for each call.
    (
        "ip-threshold",
        "imageproc/src/contrast.rs::threshold",
        "",
        Parity::Passes,
    ),
    // In a private module its parent re-exports: parity calls the
    // re-exported path.
    (
        "ip-median",
        "imageproc/src/filter/median.rs::median_filter",
        "P=image::Rgb<u8>",
        Parity::Passes,
    ),
    // `pub(crate)` methods of another module's type (`Point::to_i32`)
    // given back through a trait of the snippet's.
    (
        "ip-contours",
        "imageproc/src/contours.rs::find_contours_with_threshold",
        "T=i32",
        Parity::Passes,
    ),
    // Those, and a `pub(crate)` function of another module (`distance`)
    // and the private one it calls, copied.
    (
        "ip-hull",
        "imageproc/src/geometry.rs::convex_hull",
        "T=i32",
        Parity::NotYet,
    ),
    // A parameter of an associated type of the generic one (`I::Pixel`),
    // named for the type given.
    (
        "ip-labels",
        "imageproc/src/region_labelling.rs::connected_components",
        "I=image::GrayImage",
        Parity::NotYet,
    ),
];

/// The source directories of the corpus crates, by package name, as cargo
/// resolves and fetches them for `tests/corpus/`.
fn corpus_sources() -> Vec<(String, PathBuf)> {
    let manifest = workspace_root().join("profiling-cli/tests/corpus/Cargo.toml");
    let metadata = cargo_metadata::MetadataCommand::new()
        .cargo_path(env!("CARGO"))
        .manifest_path(&manifest)
        .other_options(vec!["--locked".to_owned()])
        .exec()
        .unwrap_or_else(|error| panic!("cargo metadata: {error}"));
    let wanted = [
        "powerboxesrs",
        "imageproc",
        "lsap",
        "delaunator",
        "earcutr",
        "rten-imageproc",
    ];
    let found: Vec<(String, PathBuf)> = metadata
        .packages
        .iter()
        .filter(|package| wanted.contains(&package.name.as_str()))
        .map(|package| {
            let dir = package.manifest_path.parent().unwrap();
            (package.name.to_string(), dir.as_std_path().to_path_buf())
        })
        .collect();
    assert_eq!(found.len(), wanted.len(), "{found:?}");
    found
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn new_on_published_crates_builds_links_in_and_matches_production() {
    let _build = snippet_check_build();
    let place = RemoveOnDrop(workspace_root().join("target/real-crates"));
    let _ = std::fs::remove_dir_all(&place.0);
    let ws = place.0.join("ws");
    let sources = corpus_sources();
    let mut members = Vec::new();
    for (name, dir) in &sources {
        copy_dir(dir, &ws.join(name));
        members.push(format!("\"{name}\""));
    }
    std::fs::write(
        ws.join("Cargo.toml"),
        format!(
            "[workspace]\nresolver = \"2\"\nmembers = [{}]\n",
            members.join(", ")
        ),
    )
    .unwrap();
    // The versions this project was tested with, as own_workspace.rs does;
    // cargo adds what the corpus needs on top.
    std::fs::copy(workspace_root().join("Cargo.lock"), ws.join("Cargo.lock")).unwrap();

    let root = workspace_root();
    let init = profile_cli_in(&ws, &["init", "--core-path", root.to_str().unwrap()]);
    assert_eq!(init.code, Some(0), "{init}");

    let mut failures = Vec::new();
    for (name, from, type_args, parity) in CASES {
        let mut args = vec!["new", name, "--from", from];
        if !type_args.is_empty() {
            args.extend(["--type-args", type_args]);
        }
        let made = profile_cli_in(&ws, &args);
        let linked = made.stdout.contains(": linked in");
        let parity_line = match parity {
            Parity::Passes => "  parity: the copy computes what production computes on ",
            Parity::NotYet => "  parity: cannot run yet: ",
            Parity::None => "  parity: no parity test in ",
        };
        if made.code != Some(0) || !linked || !made.stdout.contains(parity_line) {
            failures.push(format!("{name} ({from}):\n{made}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} snippets were not linked in with the parity expected:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
    // The crates the copies name went into their own Cargo.toml.
    let manifest =
        std::fs::read_to_string(ws.join("inference_profiling/snippets/pb_nms/Cargo.toml")).unwrap();
    assert!(
        manifest.contains("\nnum-traits = { version = \"0.2.17\" }\n"),
        "{manifest}"
    );
    let target =
        std::fs::read_to_string(ws.join("inference_profiling/snippets/pb_nms/target.rs")).unwrap();
    assert!(!target.contains("#[cfg(feature"), "{target}");
    assert!(
        target.contains("    pub scores: ndarray::Array1<f64>,\n"),
        "{target}"
    );
    // Boxes and scores come from detector-like dummy records, so that NMS
    // has overlapping boxes to suppress.
    let config =
        std::fs::read_to_string(ws.join("inference_profiling/snippets/pb_nms/config.yaml"))
            .unwrap();
    assert!(config.contains("\n  detections: {count: 1000,"), "{config}");
    // Imports kept as possible traits that the build found unused are gone.
    assert!(!target.contains("use rstar::"), "{target}");

    let snippet_file = |dir: &str, file: &str| {
        std::fs::read_to_string(ws.join("inference_profiling/snippets").join(dir).join(file))
            .unwrap()
    };
    // Items of private modules reached through the root's re-exports:
    // production's own, neither copied nor left unresolved.
    let simplify = snippet_file("ri_simplify", "target.rs");
    assert!(
        simplify.contains("\nuse rten_imageproc::{PointF, simplify_polyline};\n")
            || simplify.contains("\nuse rten_imageproc::{simplify_polyline, PointF};\n"),
        "{simplify}"
    );
    assert!(!simplify.contains("fn simplify_polyline"), "{simplify}");
    // Another crate's view, its lifetime given: `'static` in the inputs.
    let contours = snippet_file("ri_contours", "target.rs");
    assert!(
        contours.contains("    pub mask: NdTensorView<'static, bool, 2>,\n"),
        "{contours}"
    );
    assert!(
        contours.contains("\nuse rten_imageproc::{Point, Polygons, RetrievalMode};\n"),
        "{contours}"
    );
    let stroke = snippet_file("ri_stroke", "target.rs");
    assert!(
        stroke.contains("    pub mask: fn() -> NdTensorViewMut<'static, u8, 2>,\n"),
        "{stroke}"
    );
    assert!(!stroke.contains("value: true"), "{stroke}");

    // A published crate's function profiled with its memory: imageproc's
    // blur allocates its output image (and its f32 buffers) in every call,
    // charged to the copied function's range. The workspace's binary built
    // in cargo's `dev` profile (`--profile`), on the dependencies the
    // parity tests built: own_workspace.rs runs the default release build.
    let ran = profile_cli_in(
        &ws,
        &[
            "--profile",
            "dev",
            "run",
            "ip-blur",
            "--memory",
            "--run-id",
            "mem",
            "--iterations",
            "3",
        ],
    );
    assert_eq!(ran.code, Some(0), "{ran}");
    let manifest: serde_yaml::Value = serde_yaml::from_str(
        &std::fs::read_to_string(
            ws.join("inference_profiling/snippets/ip_blur/runs/mem/manifest.yaml"),
        )
        .unwrap(),
    )
    .unwrap();
    // `--profile dev` reached the build: a debug build ran.
    assert_eq!(manifest["build_profile"], "debug", "{ran}");
    let blur = manifest["timings"]["ranges"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|r| {
            r["name"]
                .as_str()
                .is_some_and(|n| n.contains("gaussian_blur_f32"))
        })
        .unwrap_or_else(|| panic!("the blur's range: {:?}", manifest["timings"]["ranges"]));
    let memory = &blur["memory"]["per_range"];
    let image_bytes = 64 * 64 * 3;
    assert!(
        memory["allocations"]["min"].as_u64().unwrap() >= 1,
        "{memory:?}"
    );
    assert!(
        memory["allocated_bytes"]["min"].as_u64().unwrap() >= image_bytes,
        "{memory:?}"
    );
    // Deterministic code: every range allocates the same.
    for figure in ["allocations", "allocated_bytes"] {
        assert_eq!(
            memory[figure]["min"], memory[figure]["max"],
            "{figure}: {memory:?}"
        );
    }
}
