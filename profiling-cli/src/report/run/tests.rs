//! The run page of fixed manifests: what it shows, and that it stays small
//! and escaped.

use std::collections::BTreeMap;

use profiling_core::driver::manifest::Manifest;
use profiling_core::driver::run_samples::RunSamples;
use profiling_core::stats::DurationStats;
use profiling_core::timing::SampleSet;
use serde_yaml::Value;

use crate::report::charts::flame::flame_graph;

/// A manifest of the tests: the sample run, with what `yaml` gives in
/// place of its keys (statistics filled with zeros where `yaml` gives only
/// the figures a test reads).
pub(crate) fn typed(yaml: &str) -> Manifest {
    fn merge(into: &mut Value, from: Value) {
        match (into, from) {
            (Value::Mapping(into), Value::Mapping(from)) => {
                for (key, value) in from {
                    match into.get_mut(&key) {
                        Some(existing) if existing.is_mapping() && value.is_mapping() => {
                            merge(existing, value)
                        }
                        _ => {
                            into.insert(key, value);
                        }
                    }
                }
            }
            (into, from) => *into = from,
        }
    }
    fn fill_stats(value: &mut Value, zero: &Value) {
        match value {
            Value::Mapping(mapping) => {
                if ["p50_ns", "total_ns", "mean_ns"]
                    .iter()
                    .any(|key| mapping.contains_key(*key))
                {
                    for (key, default) in zero.as_mapping().into_iter().flatten() {
                        if !mapping.contains_key(key) {
                            mapping.insert(key.clone(), default.clone());
                        }
                    }
                }
                for (_, inner) in mapping.iter_mut() {
                    fill_stats(inner, zero);
                }
            }
            Value::Sequence(items) => items.iter_mut().for_each(|i| fill_stats(i, zero)),
            _ => {}
        }
    }
    let zero = serde_yaml::to_value(DurationStats::of(&[0]).unwrap()).unwrap();
    let mut manifest = serde_yaml::to_value(Manifest::sample("r")).unwrap();
    merge(&mut manifest, serde_yaml::from_str(yaml).unwrap());
    fill_stats(&mut manifest, &zero);
    Manifest::from_value(manifest).unwrap()
}

/// The `<tr>` of `html` whose `data-path` is `path`, up to its `</tr>`.
fn row<'a>(html: &'a str, path: &str) -> &'a str {
    let start = html
        .find(&format!("<tr data-path=\"{path}\">"))
        .unwrap_or_else(|| panic!("no row {path}: {html}"));
    let end = start + html[start..].find("</tr>").unwrap() + "</tr>".len();
    &html[start..end]
}

#[test]
fn the_range_table_shows_gpu_medians_on_runs_with_gpu_timing() {
    let manifest = typed(
        "timings:\n  iterations: {count: 2, mean_ns: 200}\n  range_tree:\n    - {path: a, name: a, depth: 0, count: 2, inclusive: {p50_ns: 100, total_ns: 200}, exclusive: {p50_ns: 50, total_ns: 100}, gpu: {count: 2, inclusive: {p50_ns: 7000}, exclusive: {p50_ns: 3000}}}\n    - {path: a/b, name: b, depth: 1, count: 2, inclusive: {p50_ns: 50, total_ns: 100}, exclusive: {p50_ns: 50, total_ns: 100}}\n",
    );
    let table = range_table(&RangeRows::of(&manifest, None), &manifest).into_string();
    assert!(
        table.contains("<th>GPU median per call</th><th>GPU self median</th>"),
        "{table}"
    );
    let row_a = row(&table, "a");
    assert!(
        row_a.ends_with(
            "<td data-sort=\"7000\">7.00 µs</td><td data-sort=\"3000\">3.00 µs</td></tr>"
        ),
        "{row_a}"
    );
    let row_b = row(&table, "a/b");
    assert!(
        row_b.ends_with("<td data-sort=\"-1\">-</td><td data-sort=\"-1\">-</td></tr>"),
        "{row_b}"
    );
    // Nested under `a`, two non-breaking spaces in.
    assert!(
        row_b.contains("title=\"a/b\">\u{a0}\u{a0}b</td>"),
        "{row_b}"
    );
    // Without GPU timing, no GPU column.
    let host_only = typed(
        "timings:\n  iterations: {count: 2, mean_ns: 200}\n  range_tree:\n    - {path: a, name: a, depth: 0, count: 2, inclusive: {p50_ns: 100, total_ns: 200}, exclusive: {p50_ns: 50, total_ns: 100}}\n",
    );
    assert!(!range_table(&RangeRows::of(&host_only, None), &host_only)
        .into_string()
        .contains("GPU"));
}

#[test]
fn the_flame_graph_is_inline_svg_with_a_frame_per_range_and_ids_of_its_own() {
    let manifest = typed(
        "timings:\n  iterations: {count: 2, mean_ns: 200}\n  range_tree:\n    - {path: a, name: a, depth: 0, count: 2, inclusive: {p50_ns: 100, total_ns: 200}, exclusive: {p50_ns: 50, total_ns: 100}}\n    - {path: a/b, name: b, depth: 1, count: 2, inclusive: {p50_ns: 50, total_ns: 100}, exclusive: {p50_ns: 50, total_ns: 100}}\n",
    );
    let tree = RangeRows::of(&manifest, None);
    let svg = flame_graph(&tree, 3, 1200).into_string();
    assert!(
        svg.starts_with("<svg class=\"flamegraph\" id=\"fg3\""),
        "{svg}"
    );
    for absent in ["<script", "<style", "onload"] {
        assert!(!svg.contains(absent), "{absent}: {svg}");
    }
    // `all`, then `a` (its 100 ns and b's 100), then `b`, half of it all.
    assert_eq!(svg.matches("<g ").count(), 3, "{svg}");
    assert!(svg.contains("<title>a (200 ns, 100.00 %)</title>"), "{svg}");
    assert!(svg.contains("<title>b (100 ns, 50.00 %)</title>"), "{svg}");
    // b starts where a does, half as wide, one level down.
    assert!(
        svg.contains("<rect x=\"10.00\" y=\"35\" width=\"590.00\""),
        "{svg}"
    );
}

#[test]
fn text_from_the_manifest_is_escaped() {
    let manifest = typed(
        "profile_name: \"<script>alert(1)</script>\"\nrun_id: \"a&b\"\ntimings:\n  iterations: {count: 2, mean_ns: 200}\n  range_tree:\n    - {path: \"<img src=x>\", name: \"<img src=x>\", depth: 0, count: 2, inclusive: {p50_ns: 100, total_ns: 200}, exclusive: {p50_ns: 50, total_ns: 100}}\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let html = run_page(&RunPage {
        dir: dir.path(),
        manifest: &manifest,
        samples: None,
        comparison: None,
    });
    assert!(!html.contains("<script>alert"), "{html}");
    assert!(!html.contains("<img"), "{html}");
    assert!(html.contains("<title>&lt;script&gt;alert(1)&lt;/script&gt; a&amp;b</title>"));
    assert!(
        html.contains("<tr data-path=\"&lt;img src=x&gt;\">"),
        "{html}"
    );
}
use super::*;

fn set(count: u64, center: u64) -> SampleSet {
    let mut set = SampleSet::with_capacity(count as usize);
    for i in 0..count {
        set.push(center + (i * 7919) % (center / 10));
    }
    set
}

#[test]
fn the_page_of_100k_passes_stays_under_2_mb() {
    let mut ranges = BTreeMap::new();
    let mut tree = String::new();
    for (index, name) in ["decode", "nms", "resize", "pad", "forward"]
        .iter()
        .enumerate()
    {
        ranges.insert(
            name.to_string(),
            (set(100_000, 50_000), set(100_000, 40_000)),
        );
        tree.push_str(&format!(
            "    - {{path: stage/{name}, name: {name}, depth: 1, count: 100000, inclusive: {{p50_ns: 50000, total_ns: {}}}, exclusive: {{p50_ns: 40000, total_ns: 4000000000}}, inclusive_per_pass: {{p50_ns: 50000, p90_ns: 55000, mean_ns: 50000}}, exclusive_per_pass: {{p50_ns: 40000, p90_ns: 45000, mean_ns: 40000}}}}\n",
            5_000_000_000u64 + index as u64
        ));
    }
    let mut samples =
        RunSamples::from_sets(&set(100_000, 300_000), &set(100_000, 300_000), &ranges);
    samples.warmup = profiling_core::driver::run_samples::Series::from_set(&set(100, 400_000));
    let manifest = typed(&format!(
        "profile_name: long\nrun_id: r\nstatus: completed\ntimings:\n  iterations: {{count: 100000, mean_ns: 300000}}\n  range_tree:\n    - {{path: stage, name: stage, depth: 0, count: 100000, inclusive: {{p50_ns: 300000, total_ns: 30000000000}}, exclusive: {{p50_ns: 1000, total_ns: 100000000}}}}\n{tree}"
    ));
    let dir = tempfile::tempdir().unwrap();
    let html = run_page(&RunPage {
        dir: dir.path(),
        manifest: &manifest,
        samples: Some(&samples),
        comparison: None,
    });
    assert!(html.len() < 2_000_000, "{} bytes", html.len());
    for id in [
        "pass-histogram",
        "call-histogram",
        "pass-timeline",
        "nsight",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "{id}");
    }
    assert!(html.contains("median, min and max of each 67 passes"));
    assert!(html.contains("<tr data-path=\"stage/decode\">"));
}

#[test]
fn a_run_without_samples_or_paths_gets_a_page_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = typed(
        "profile_name: old\nrun_id: r\nstatus: completed\ntimings:\n  iterations: {count: 2, mean_ns: 100}\n  ranges:\n    - {name: decode, count: 2, inclusive: {p50_ns: 50, total_ns: 100}, exclusive: {p50_ns: 50, total_ns: 100}}\n",
    );
    let page = RunPage {
        dir: dir.path(),
        manifest: &manifest,
        samples: None,
        comparison: None,
    };
    let html = run_page(&page);
    assert!(html.contains("has no <code>samples.bin</code>"));
    assert!(!html.contains("id=\"pass-histogram\""));
    assert!(html.contains("listed by name, without their nesting"));
    assert!(html.contains("<tr data-path=\"decode\">"));
    // With its trace beside it, the tree comes from the trace.
    std::fs::write(
        dir.path().join("trace.json"),
        r#"{"traceEvents": [
            {"cat": "pass", "name": "iteration 0", "ph": "X", "ts": 0.0, "dur": 100.0, "tid": 1},
            {"cat": "range", "name": "decode", "ph": "X", "ts": 1.0, "dur": 50.0, "tid": 1, "args": {"exclusive_us": 20.0}},
            {"cat": "range", "name": "boxes", "ph": "X", "ts": 2.0, "dur": 30.0, "tid": 1, "args": {"exclusive_us": 30.0}}
        ]}"#,
    )
    .unwrap();
    let html = run_page(&page);
    assert!(html.contains("the tree comes from its trace.json"));
    assert!(html.contains("<tr data-path=\"decode/boxes\">"), "{html}");
}
