//! The sweep page as a browser shows it. A sweep document (for now made
//! here; the real `profile-cli sweep` writes the same page) is written as
//! `sweep.html` by `write_sweep_page`; headless Chromium renders it, and the
//! rendered DOM must hold a chart per quantity, a row per point and, for a
//! sweep of two keys, a legend entry per value of the second; the page must
//! run without a script error, draw something, and load nothing from the
//! network. `scripts/setup-chromium` installs a browser; where none can be
//! had, the tests that need one skip and say so.
//!
//! The pages stay under `target/tmp/sweep_browser/` after the run, with
//! their screenshots, for a look by eye. The browser, DOM reader and
//! network rule are those of `report_browser.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use profiling_cli::report::write_sweep_page;
use profiling_core::driver::sweep::document::{
    Axis, Estimate, PointResult, PointStatus, RangeEstimate, SweepDocument, SweepStatus,
    SWEEP_SCHEMA_VERSION,
};
use serde_yaml::{Mapping, Value};

use crate::browser::*;

// ---------------------------------------------------------------------------
// The pages under test.

/// An estimate of `median_ns` whose interval is a few percent either side,
/// not quite symmetric.
fn estimate(median_ns: f64, samples: u64) -> Estimate {
    let median = median_ns.round() as u64;
    Estimate {
        median_ns: median,
        low_ns: (median_ns * 0.96).round() as u64,
        high_ns: (median_ns * 1.05).round() as u64,
        samples,
    }
}

/// A sweep document over `grid` (each key with its values as a YAML list),
/// the last key varying fastest, each point as `point` makes it from its
/// values (index, name and values are filled in here).
fn sweep(
    id: &str,
    grid: &[(&str, &str)],
    mut point: impl FnMut(&[Value]) -> PointResult,
) -> SweepDocument {
    let grid: Vec<Axis> = grid
        .iter()
        .map(|(key, values)| Axis {
            key: (*key).to_owned(),
            values: serde_yaml::from_str(values).unwrap(),
        })
        .collect();
    let mut combinations: Vec<Vec<Value>> = vec![Vec::new()];
    for axis in &grid {
        combinations = combinations
            .into_iter()
            .flat_map(|prefix| {
                axis.values.iter().map(move |value| {
                    let mut next = prefix.clone();
                    next.push(value.clone());
                    next
                })
            })
            .collect();
    }
    let points = combinations
        .iter()
        .enumerate()
        .map(|(index, values)| PointResult {
            index,
            point: format!("{index:03}"),
            values: grid
                .iter()
                .zip(values)
                .map(|(axis, value)| (Value::from(axis.key.clone()), value.clone()))
                .collect::<Mapping>(),
            ..point(values)
        })
        .collect();
    SweepDocument {
        schema_version: SWEEP_SCHEMA_VERSION,
        sweep_id: id.to_owned(),
        profile_name: "detection-pipeline".to_owned(),
        target: "detection-postprocess".to_owned(),
        config_path: Some(PathBuf::from(
            "inference_profiling/snippets/detection/profile.yaml",
        )),
        command_line: format!("profile-cli sweep detection-pipeline --run-id {id}"),
        started_at: "2025-06-01T10:00:00Z".to_owned(),
        finished_at: Some("2025-06-01T10:04:12Z".to_owned()),
        status: SweepStatus::Completed,
        zip: false,
        confidence: 0.95,
        grid,
        points,
    }
}

/// A point that did not complete.
fn not_run(status: PointStatus, error: Option<&str>) -> PointResult {
    PointResult {
        index: 0,
        point: String::new(),
        values: Mapping::new(),
        status,
        run_dir: None,
        error: error.map(str::to_owned),
        batch_size: 1,
        records_per_pass: None,
        pass: None,
        call: None,
        time_per_record_ns: None,
        records_per_second: None,
        ranges: Vec::new(),
        memory: None,
    }
}

/// A completed point of `records` records a pass in calls of `batch`, its
/// ranges (name, median per opening in ns) opened once per call.
fn completed(batch: u32, ranges: &[(&str, f64)]) -> PointResult {
    let records = 64u64;
    let calls = records.div_ceil(u64::from(batch));
    let call_ns = ranges.iter().map(|r| r.1).sum::<f64>() + 4_000.0;
    let pass_ns = call_ns * calls as f64;
    PointResult {
        index: 0,
        point: String::new(),
        values: Mapping::new(),
        status: PointStatus::Completed,
        run_dir: Some(PathBuf::from("/runs/sweep/point")),
        error: None,
        batch_size: batch,
        records_per_pass: Some(records),
        pass: Some(estimate(pass_ns, 30)),
        call: Some(estimate(call_ns, 30 * calls)),
        time_per_record_ns: Some(pass_ns / records as f64),
        records_per_second: Some(records as f64 * 1e9 / pass_ns),
        ranges: ranges
            .iter()
            .map(|&(name, median)| RangeEstimate {
                name: name.to_owned(),
                inclusive: estimate(median, 30 * calls),
                calls_per_pass: calls as f64,
                time_per_record_ns: Some(median * calls as f64 / records as f64),
            })
            .collect(),
        memory: None,
    }
}

/// A range name that needs escaping.
const NMS: &str = "postprocess/nms <&>";

/// Batch size 1 to 16 by input size: the forward pass grows with the
/// batch and the square of the size, over a fixed cost per call; batch 8 at
/// 640 failed (after measuring a little) and batch 16 at 640 did not run
/// (the sweep was interrupted).
fn batched_two_keys() -> SweepDocument {
    let mut document = sweep(
        "batch-by-size",
        &[
            ("workload.batch_size", "[1, 2, 4, 8, 16]"),
            ("target.parameters.input_size", "[224, 320, 640]"),
        ],
        |values| {
            let batch = values[0].as_u64().unwrap() as u32;
            let size = values[1].as_u64().unwrap() as f64;
            match (batch, size as u64) {
                // It failed after some passes: what it measured is not drawn.
                (8, 640) => PointResult {
                    status: PointStatus::Failed,
                    error: Some("CUDA out of memory <&>".to_owned()),
                    ..completed(batch, &[("forward", 90_000.0)])
                },
                (16, 640) => not_run(PointStatus::Pending, None),
                _ => {
                    let b = f64::from(batch);
                    completed(
                        batch,
                        &[
                            ("forward", 20_000.0 + b * size * size / 50.0),
                            ("preprocess", 1_500.0 + b * size * 10.0),
                            (NMS, 3_000.0 + 200.0 * b),
                        ],
                    )
                }
            }
        },
    );
    document.status = SweepStatus::Interrupted;
    document.finished_at = None;
    document
}

/// One key of devices (not numbers), one record per call.
fn devices() -> SweepDocument {
    sweep(
        "by-device",
        &[("device", "[cpu, \"cuda:0\", \"cuda:1\"]")],
        |values| {
            let scale = match values[0].as_str().unwrap() {
                "cpu" => 9.0,
                _ => 1.0,
            };
            completed(
                1,
                &[("decode", 40_000.0 * scale), ("resize", 9_000.0 * scale)],
            )
        },
    )
}

/// The pages, written once per test binary under `target/tmp/sweep_browser/`.
fn pages() -> &'static [(SweepDocument, PathBuf); 2] {
    static PAGES: OnceLock<[(SweepDocument, PathBuf); 2]> = OnceLock::new();
    PAGES.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sweep_browser");
        let _ = std::fs::remove_dir_all(&out);
        [batched_two_keys(), devices()].map(|document| {
            let dir = out.join(&document.sweep_id);
            std::fs::create_dir_all(&dir).unwrap();
            let page = write_sweep_page(&dir, &document).unwrap();
            assert_eq!(page, dir.join("sweep.html"));
            (document, page)
        })
    })
}

/// The range names of `document`'s completed points.
fn range_names(document: &SweepDocument) -> Vec<String> {
    let mut names: Vec<String> = document
        .completed()
        .flat_map(|p| p.ranges.iter().map(|r| r.name.clone()))
        .collect();
    names.sort();
    names.dedup();
    names
}

// ---------------------------------------------------------------------------
// The sweep page.

/// The `(data-quantity, data-range, data-measure)` of every chart.
fn charts(dom: &Dom) -> Vec<(String, String, String)> {
    dom.tagged("svg")
        .filter(|&index| dom.elements[index].has_class("sweep-chart"))
        .map(|index| {
            let element = &dom.elements[index];
            let attribute = |name| element.attribute(name).unwrap_or_default().to_owned();
            (
                attribute("data-quantity"),
                attribute("data-range"),
                attribute("data-measure"),
            )
        })
        .collect()
}

/// Checks that `page` of `document` has a chart per quantity and measure,
/// and a row per point; returns its DOM.
fn check_charts_and_rows(browser: &Browser, document: &SweepDocument, page: &Path) -> Dom {
    let dom = Dom::parse(&browser.dump_dom(page).dom);
    let measures: &[&str] = if document.batched() {
        &["time", "per-record"]
    } else {
        &["time"]
    };
    let charts = charts(&dom);
    let mut expected = Vec::new();
    for quantity in ["pass", "call"] {
        for measure in measures {
            expected.push((quantity.to_owned(), String::new(), (*measure).to_owned()));
        }
    }
    for name in range_names(document) {
        for measure in measures {
            expected.push(("range".to_owned(), name.clone(), (*measure).to_owned()));
        }
    }
    let mut found = charts.clone();
    found.sort();
    expected.sort();
    assert_eq!(found, expected, "one chart per quantity and measure");
    // The pass and the call first.
    assert_eq!(charts[0].0, "pass");
    assert_eq!(charts[measures.len()].0, "call");

    let table = dom.by_id("table", "points");
    let rows = dom.values_inside(table, "tr", "data-point");
    let points: Vec<&str> = document.points.iter().map(|p| p.point.as_str()).collect();
    assert_eq!(
        rows, points,
        "one row of table#points per point, in grid order"
    );
    dom
}

#[test]
fn a_two_key_sweep_has_its_charts_rows_and_a_legend_entry_per_second_key_value() {
    let (document, page) = &pages()[0];
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let dom = check_charts_and_rows(&browser, document, page);
    let legend = dom.by_id("ul", "sweep-legend");
    assert_eq!(
        dom.values_inside(legend, "li", "data-series"),
        [
            "target.parameters.input_size = 224",
            "target.parameters.input_size = 320",
            "target.parameters.input_size = 640"
        ]
    );
    // Every chart draws the three lines; the failed and the pending point
    // are left out of them, and listed.
    for index in dom.tagged("svg") {
        let element = &dom.elements[index];
        if element.has_class("sweep-chart") {
            assert_eq!(element.attribute("data-lines"), Some("3"));
            assert_eq!(element.attribute("data-points"), Some("13"));
            assert_eq!(element.attribute("data-log-x"), Some("true"), "1 to 16");
        }
    }
    let missing = dom.by_id("ul", "missing-points");
    assert_eq!(
        dom.values_inside(missing, "li", "data-point"),
        ["011", "014"]
    );
    let table = dom.by_id("table", "points");
    assert_eq!(
        dom.values_inside(table, "tr", "data-status")
            .iter()
            .filter(|s| *s != "completed")
            .collect::<Vec<_>>(),
        ["failed", "pending"]
    );
}

#[test]
fn a_sweep_of_devices_has_its_charts_and_rows_and_no_legend() {
    let (document, page) = &pages()[1];
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let dom = check_charts_and_rows(&browser, document, page);
    assert_eq!(dom.with_attribute("ul", "id", "sweep-legend").count(), 0);
    for index in dom.tagged("svg") {
        let element = &dom.elements[index];
        if element.has_class("sweep-chart") {
            assert_eq!(element.attribute("data-log-x"), Some("false"));
            assert_eq!(element.attribute("data-points"), Some("3"));
        }
    }
}

#[test]
fn the_sweep_pages_run_without_a_javascript_error() {
    let pages = pages();
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    for (_, page) in pages {
        assert_console_is_silent(page, &browser.dump_dom(page).stderr);
    }
}

#[test]
fn the_sweep_pages_draw_something() {
    let pages = pages();
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    for (_, page) in pages {
        let png = page.with_extension("png");
        let stderr = browser.screenshot(page, &png);
        assert_console_is_silent(page, &stderr);
        if let Err(why) = looks_drawn(&png) {
            panic!("the screenshot of {} looks blank: {why}", page.display());
        }
    }
}

#[test]
fn the_sweep_pages_load_nothing_from_the_network() {
    for (_, page) in pages() {
        assert_loads_nothing_from_the_network(page);
    }
}

/// The page the real `profile-cli sweep` writes: a sweep of two keys of
/// `detection-pipeline` on the dummy data (its output is the document).
fn real_sweep() -> &'static (SweepDocument, PathBuf) {
    static REAL: OnceLock<(SweepDocument, PathBuf)> = OnceLock::new();
    REAL.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sweep_browser_real");
        let _ = std::fs::remove_dir_all(&out);
        let output = Command::new(env!("CARGO_BIN_EXE_profile-cli"))
            .args(["sweep", "detection-pipeline", "--output-dir"])
            .arg(&out)
            .args([
                "--set",
                "data_source.record_count=1,2",
                "--set",
                "data_source.image_shape=[48,64,3],[96,128,3]",
                "--set",
                "iterations=3",
                "--sweep-id",
                "real",
                "--json",
            ])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let page = PathBuf::from(json["report_path"].as_str().unwrap());
        let dir = page.parent().unwrap();
        let document = profiling_core::driver::sweep::document::SweepDocument::read(dir).unwrap();
        (document, page)
    })
}

#[test]
fn the_page_of_a_real_sweep_has_its_charts_rows_and_legend() {
    let (document, page) = real_sweep();
    assert_eq!(document.points.len(), 4);
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let dom = check_charts_and_rows(&browser, document, page);
    let legend = dom.by_id("ul", "sweep-legend");
    assert_eq!(
        dom.values_inside(legend, "li", "data-series"),
        [
            "data_source.image_shape = [48, 64, 3]",
            "data_source.image_shape = [96, 128, 3]"
        ]
    );
    // The pass and the call at every point; a range where it opened (the
    // letterbox pads only the shapes that need it).
    for index in dom.tagged("svg") {
        let element = &dom.elements[index];
        if !element.has_class("sweep-chart") {
            continue;
        }
        let quantity = element.attribute("data-quantity").unwrap_or_default();
        if quantity == "pass" || quantity == "call" {
            assert_eq!(element.attribute("data-lines"), Some("2"), "{quantity}");
            assert_eq!(element.attribute("data-points"), Some("4"), "{quantity}");
        } else {
            let name = element.attribute("data-range").unwrap_or_default();
            let drawn = document
                .completed()
                .filter(|p| p.ranges.iter().any(|r| r.name == name))
                .count();
            assert_eq!(
                element.attribute("data-points"),
                Some(drawn.to_string().as_str()),
                "{name}"
            );
        }
    }
    let png = page.with_extension("png");
    let stderr = browser.screenshot(page, &png);
    assert_console_is_silent(page, &stderr);
    looks_drawn(&png).unwrap();
    assert_loads_nothing_from_the_network(page);
}
