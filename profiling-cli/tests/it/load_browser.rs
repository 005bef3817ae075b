//! The load page as a browser shows it: the real `profile-cli load
//! --find-peak` writes `load.html`; headless Chromium renders it, and the
//! rendered page must hold the latency-throughput curve with the bound,
//! a line per range (and the queueing) against load, the queueing share,
//! the peak and its step over time, run without a script error, draw something, and load nothing
//! from the network. The page stays under `target/tmp/load_browser/`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::browser::*;
use crate::common::profile_cli_in;

/// The page of a real search on `cpu-work` (two ranges, `work` and
/// `steady`), with a bound of three times its service time.
fn page() -> &'static PathBuf {
    static PAGE: OnceLock<PathBuf> = OnceLock::new();
    PAGE.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("load_browser");
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        let out_dir = out.to_string_lossy().into_owned();
        let ran = profile_cli_in(
            &out,
            &[
                "load",
                "cpu-work",
                "--find-peak",
                "--p99-bound",
                "20ms",
                "--queries",
                "400",
                "--run-id",
                "page",
                "--output-dir",
                &out_dir,
            ],
        );
        assert_eq!(ran.code, Some(0), "{ran}");
        out.join("cpu-work/runs/page/load.html")
    })
}

#[test]
fn the_load_page_draws_the_curve_the_ranges_and_the_queueing() {
    let page = page();
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let rendered = browser.dump_dom(page);
    assert_console_is_silent(page, &rendered.stderr);
    let dom = Dom::parse(&rendered.dom);
    for id in ["curve", "ranges", "queueing"] {
        let figure = dom.by_id("figure", id);
        let lines = dom
            .tagged("polyline")
            .filter(|&i| dom.is_inside(i, figure))
            .count();
        assert!(lines >= 1, "#{id} has no line");
    }
    // One line per range and one for the queueing.
    let ranges = dom.by_id("figure", "ranges");
    let mut names = dom.values_inside(ranges, "polyline", "data-name");
    names.sort();
    assert_eq!(names, ["queueing", "steady", "work"]);
    // The bound is drawn on the curve.
    let curve = dom.by_id("figure", "curve");
    assert!(dom
        .tagged("line")
        .any(|i| dom.is_inside(i, curve) && dom.elements[i].has_class("bound")));
    assert!(rendered.dom.contains("id=\"peak\""));
    // The peak's tail: a median and a tail bar for each part, queueing
    // among them.
    let tail = dom.by_id("figure", "tail");
    let mut parts = dom.values_inside(tail, "rect", "data-part");
    parts.sort();
    parts.dedup();
    assert!(
        parts.contains(&"queueing".to_owned()) && parts.contains(&"work".to_owned()),
        "{parts:?}"
    );
    assert_eq!(
        dom.values_inside(tail, "rect", "data-part").len(),
        2 * parts.len()
    );
    // The peak's step over its length: the median and the slowest query
    // of each window against the bound, and the queue at each window's
    // end, a point a window.
    let timeline = dom.by_id("figure", "timeline");
    let mut lines = dom.values_inside(timeline, "polyline", "data-name");
    lines.sort();
    assert_eq!(lines, ["median", "slowest"]);
    assert!(dom
        .tagged("line")
        .any(|i| dom.is_inside(i, timeline) && dom.elements[i].has_class("bound")));
    let waiting = dom.by_id("figure", "waiting");
    let points = |figure| {
        dom.tagged("circle")
            .filter(|&i| dom.is_inside(i, figure))
            .count()
    };
    assert_eq!(points(timeline), 2 * points(waiting));
    assert_eq!(points(waiting), 20, "400 queries, 20 a window");
    let png = page.with_extension("png");
    let stderr = browser.screenshot(page, &png);
    assert_console_is_silent(page, &stderr);
    if let Err(why) = looks_drawn(&png) {
        panic!("the screenshot of {} looks blank: {why}", page.display());
    }
    assert_loads_nothing_from_the_network(page);
}
