//! The modules of each crate depend on one another in one direction: no
//! two modules (or longer rings) import each other. A circle says a piece
//! sits in the wrong module; the message names the ring and its edges.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::workspace_root;

/// The source directories of the workspace's crates.
const CRATES: &[&str] = &[
    "profiling-macros/src",
    "profiling-core/src",
    "profiling-sources/src",
    "profiling-compare/src",
    "profiling-cli/src",
    "profiling-extract/src",
    "profiling-analyze/src",
];

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// `a/b.rs` and `a/b/mod.rs` are `a::b`; `lib.rs`, `main.rs` the crate.
fn module_name(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

/// The code of a file without its comments and its unit tests.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths after each `prefix` in `code`: `crate::a::b::C` gives
/// `a::b::C`, and `crate::{a, b::c}` gives `a` and `b::c`.
fn paths_after(code: &str, prefix: &str) -> Vec<String> {
    let path_end = |text: &str| {
        text.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(text.len())
    };
    let mut paths = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                let item = item.trim();
                paths.push(item[..path_end(item)].trim_end_matches(':').to_owned());
            }
        } else {
            paths.push(rest[..path_end(rest)].trim_end_matches(':').to_owned());
        }
    }
    paths
}

/// Each module and the modules of its crate it names.
fn dependencies(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let code: BTreeMap<String, String> = files
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            (module_name(src, file), code_of(&text))
        })
        .collect();
    let known: BTreeSet<&String> = code.keys().collect();
    let related = |a: &str, b: &str| {
        a == b || a.starts_with(&format!("{b}::")) || b.starts_with(&format!("{a}::"))
    };
    let mut graph = BTreeMap::new();
    for (module, text) in &code {
        let parent = module.rsplit_once("::").map_or("", |(parent, _)| parent);
        let mut named = BTreeSet::new();
        let absolute = paths_after(text, "crate::").into_iter();
        let relative = paths_after(text, "super::")
            .into_iter()
            .map(|path| match parent {
                "" => path,
                parent => format!("{parent}::{path}"),
            });
        for path in absolute.chain(relative) {
            let parts: Vec<&str> = path.split("::").collect();
            let target = (1..=parts.len())
                .rev()
                .map(|n| parts[..n].join("::"))
                .find(|candidate| known.contains(candidate));
            if let Some(target) = target {
                if !related(module, &target) {
                    named.insert(target);
                }
            }
        }
        graph.insert(module.clone(), named);
    }
    graph
}

/// The rings of `graph`: its strongly connected parts of two modules or more.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Two modules are in one ring when each reaches the other.
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(module) = todo.pop() {
            for next in graph.get(&module).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|m| (m, reach(m))).collect();
    let mut rings: Vec<Vec<String>> = Vec::new();
    for module in graph.keys() {
        if rings.iter().flatten().any(|m| m == module) {
            continue;
        }
        let ring: Vec<String> = graph
            .keys()
            .filter(|other| {
                *other == module
                    || (reached[module].contains(*other) && reached[*other].contains(module))
            })
            .cloned()
            .collect();
        if ring.len() > 1 {
            rings.push(ring);
        }
    }
    rings
}

#[test]
fn no_module_imports_a_module_that_imports_it() {
    let root = workspace_root();
    let mut found = Vec::new();
    for src in CRATES {
        let graph = dependencies(&root.join(src));
        assert!(!graph.is_empty(), "{src}: no modules found");
        for ring in circles(&graph) {
            let edges: Vec<String> = ring
                .iter()
                .map(|m| {
                    let inside: Vec<&String> =
                        graph[m].iter().filter(|n| ring.contains(n)).collect();
                    format!("{m} -> {inside:?}")
                })
                .collect();
            found.push(format!("{src}: {}", edges.join("; ")));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

/// Where a module of the runtime's root (what a target or a data source
/// uses) may reach into `driver` (what plans, runs and writes runs): the
/// arrows docs/architecture.md names, each with its reason.
const ROOT_INTO_DRIVER: &[(&str, &str)] = &[("parity", "driver::config")];

#[test]
fn the_runtime_s_root_imports_nothing_of_the_driver_but_what_the_architecture_page_names() {
    let graph = dependencies(&workspace_root().join("profiling-core/src"));
    let mut found = Vec::new();
    for (module, named) in &graph {
        if module.is_empty() || module == "driver" || module.starts_with("driver::") {
            continue;
        }
        for target in named.iter().filter(|t| t.starts_with("driver::")) {
            if !ROOT_INTO_DRIVER.contains(&(module.as_str(), target.as_str())) {
                found.push(format!("{module} -> {target}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "modules at profiling-core's root that import from driver/ (move the item down, or name the arrow and its reason in docs/architecture.md and here):\n{}",
        found.join("\n")
    );
    let page = std::fs::read_to_string(workspace_root().join("docs/architecture.md")).unwrap();
    for (from, to) in ROOT_INTO_DRIVER {
        let from_file = from.replace("::", "/");
        assert!(
            page.contains(&format!("`{from_file}")) || page.contains(&format!("`{from}`")),
            "docs/architecture.md does not name the arrow {from} -> {to}"
        );
    }
}

/// A module of profiling-cli by its top folder or file: `report::sweep::view`
/// is part of `report`.
fn top_level(module: &str) -> &str {
    module.split("::").next().unwrap_or(module)
}

/// The modules of profiling-cli whose files import, or lead through other
/// modules to, `to`, as `module -> named` edges that start the way there.
fn ways_from(graph: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> Vec<String> {
    // What each top-level module reaches, through any of its files.
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (module, named) in graph {
        for target in named {
            if top_level(module) != top_level(target) {
                edges
                    .entry(top_level(module))
                    .or_default()
                    .insert(top_level(target));
            }
        }
    }
    let reaches = |start: &str| {
        let mut seen = BTreeSet::from([start]);
        let mut todo = vec![start];
        while let Some(module) = todo.pop() {
            for next in edges.get(module).into_iter().flatten() {
                if seen.insert(next) {
                    todo.push(next);
                }
            }
        }
        seen.contains(to)
    };
    graph
        .iter()
        .filter(|(module, _)| top_level(module) == from)
        .flat_map(|(module, named)| {
            named
                .iter()
                .filter(|target| top_level(target) != from && reaches(top_level(target)))
                .map(move |target| format!("{module} -> {target}"))
        })
        .collect()
}

/// `report` draws what a sweep writes (`sweep.yaml`) from the runtime's
/// document (`driver::sweep::document`), not from the `sweep` command;
/// the command is handed its page writer by the program's root and never
/// reaches `report`: neither reaches the other.
#[test]
fn the_page_engine_and_the_sweep_do_not_import_each_other() {
    let graph = dependencies(&workspace_root().join("profiling-cli/src"));
    let there = ways_from(&graph, "report", "sweep");
    let back = ways_from(&graph, "sweep", "report");
    assert!(
        there.is_empty() && back.is_empty(),
        "report and sweep reach each other:\n{}\n{}",
        there.join("\n"),
        back.join("\n")
    );
}

/// The page engine is `report/`: a page is drawn by its templates and
/// charts and written by its writers, and the rest of the CLI names only
/// what `report/mod.rs` exports. No other module draws HTML or SVG.
#[test]
fn pages_are_drawn_and_written_only_through_report_s_entry() {
    let src = workspace_root().join("profiling-cli/src");
    let graph = dependencies(&src);
    let mut found: Vec<String> = graph
        .iter()
        .filter(|(module, _)| top_level(module) != "report")
        .flat_map(|(module, named)| {
            named
                .iter()
                .filter(|target| target.starts_with("report::"))
                .map(move |target| format!("{module} -> {target}"))
        })
        .collect();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    for file in files {
        let module = module_name(&src, &file);
        if top_level(&module) == "report" {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        for marker in ["maud::", "plotters::", "html!", "<!DOCTYPE", "<svg"] {
            if code.contains(marker) {
                found.push(format!("{module} draws a page itself: `{marker}`"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "pages drawn or reached outside report/'s entry (draw them under report/, export from report/mod.rs):\n{}",
        found.join("\n")
    );
}

/// Delegation (`delegate/`) is the program's root's to call: it runs a
/// command through another workspace's binary, or leaves it to the root.
/// No command reaches into it; what a command hands back to it is
/// `handoff`, below the commands.
#[test]
fn only_the_program_s_root_goes_through_delegate() {
    let graph = dependencies(&workspace_root().join("profiling-cli/src"));
    let found: Vec<String> = graph
        .iter()
        .filter(|(module, _)| !module.is_empty() && top_level(module) != "delegate")
        .flat_map(|(module, named)| {
            named
                .iter()
                .filter(|target| top_level(target) == "delegate")
                .map(move |target| format!("{module} -> {target}"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "modules that import from delegate/ (only lib.rs calls it; what a command hands back belongs in handoff.rs):\n{}",
        found.join("\n")
    );
}

#[test]
fn a_ring_is_found_and_named() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(m, to)| (m.to_owned(), to.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(circles(&graph), [vec!["a", "b", "c"]]);
    let code = code_of(
        "use crate::timing::log::{RangeLog};\nuse crate::{data, yaml::parse_size};\n\
         let x = super::gpu::record();\n// crate::not::this\n",
    );
    assert_eq!(
        paths_after(&code, "crate::"),
        ["timing::log", "data", "yaml::parse_size"]
    );
    assert_eq!(paths_after(&code, "super::"), ["gpu::record"]);
}
