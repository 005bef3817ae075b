//! The HTML report as a browser shows it. The real binary writes the page of
//! a run and the page comparing two runs; headless Chromium renders them, and
//! the rendered DOM must hold every part of the report, the scripts must run
//! without an error, the screenshot must show a drawn page, and nothing may
//! be loaded from the network. `scripts/setup-chromium` installs a browser;
//! where none can be had, the tests that need one skip and say so.
//!
//! The pages stay under `target/tmp/report_browser/` after the run, with
//! their screenshots, for a look by eye.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::browser::*;
impl Dom {
    fn flamegraphs(&self) -> usize {
        self.tagged("svg")
            .filter(|&index| self.elements[index].has_class("flamegraph"))
            .count()
    }
}

// ---------------------------------------------------------------------------
// The pages under test, written once per test binary by the real `profile-cli`.

/// Runs `a` and `b` of `detection-pipeline`, under `out`.
struct Runs {
    out: PathBuf,
    /// What `profile-cli run ... --run-id a` printed.
    run_stdout: String,
    run_dir: PathBuf,
    run_page: PathBuf,
}

fn profile_cli(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_profile-cli"))
        .args(args)
        .output()
        .unwrap()
}

/// Why `output` is not a success, naming `what` ran.
fn succeeded(output: &Output, what: &str) -> Result<(), String> {
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} exited with {:?}:\n{}\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    ))
}

/// Runs `detection-pipeline` as run `id` (5 passes on the dummy data) into
/// `out`, with `extra` arguments, and returns what it printed.
fn run(out: &Path, id: &str, extra: &[&str]) -> Result<String, String> {
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "run".as_ref(),
        "detection-pipeline".as_ref(),
        "--iterations".as_ref(),
        "5".as_ref(),
        "--output-dir".as_ref(),
        out.as_os_str(),
        "--run-id".as_ref(),
        id.as_ref(),
    ];
    args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
    let output = profile_cli(&args);
    succeeded(&output, &format!("profile-cli run (run {id})"))?;
    Ok(String::from_utf8(output.stdout).unwrap())
}

/// The two runs, made by the first test that asks; when that fails, every
/// test that asks fails with the same reason.
fn runs() -> &'static Runs {
    static RUNS: OnceLock<Result<Runs, String>> = OnceLock::new();
    let runs = RUNS.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report_browser");
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        // Run `a` attributes memory too: its page has the memory section.
        let run_stdout = run(&out, "a", &["--memory"])?;
        run(&out, "b", &[])?;
        let run_dir = out.join("detection-pipeline/runs/a");
        Ok(Runs {
            run_page: run_dir.join("report.html"),
            run_dir,
            run_stdout,
            out,
        })
    });
    runs.as_ref().unwrap_or_else(|why| panic!("{why}"))
}

/// The page comparing the two runs, made like them.
fn comparison_page() -> &'static Path {
    static PAGE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let page = PAGE.get_or_init(|| {
        let runs = runs();
        let page = runs.out.join("comparison.html");
        let output = profile_cli(&[
            "report".as_ref(),
            runs.run_dir.as_os_str(),
            runs.run_dir.with_file_name("b").as_os_str(),
            "-o".as_ref(),
            page.as_os_str(),
        ]);
        succeeded(&output, "profile-cli report")?;
        Ok(page)
    });
    page.as_ref().unwrap_or_else(|why| panic!("{why}"))
}

/// The page of a pair judged by gates: `ab` of `detection-pipeline`
/// against itself, one gate that holds and one that fails (exit 3).
fn experiment_page() -> &'static Path {
    static PAGE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let page = PAGE.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report_browser_ab");
        let _ = std::fs::remove_dir_all(&out);
        let output = profile_cli(&[
            "ab".as_ref(),
            "detection-pipeline".as_ref(),
            "detection-pipeline".as_ref(),
            "--iterations".as_ref(),
            "12".as_ref(),
            "--block-passes".as_ref(),
            "1".as_ref(),
            "--output-dir".as_ref(),
            out.as_os_str(),
            "--ab-id".as_ref(),
            "exp".as_ref(),
            "--accept".as_ref(),
            "p50<=+1000%, mean<=-99%".as_ref(),
        ]);
        if output.status.code() != Some(3) {
            return Err(format!(
                "profile-cli ab --accept exited with {:?}, not 3 (rejected):\n{}",
                output.status.code(),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(out.join("detection-pipeline/runs/exp/report.html"))
    });
    page.as_ref().unwrap_or_else(|why| panic!("{why}"))
}

/// The `path` of every entry of the manifest's `timings.range_tree`.
fn range_paths(path: &Path) -> Vec<String> {
    let manifest: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let tree = manifest["timings"]["range_tree"]
        .as_sequence()
        .unwrap_or_else(|| panic!("{} has no timings.range_tree list", path.display()));
    tree.iter()
        .map(|entry| {
            entry["path"]
                .as_str()
                .expect("a range has a path")
                .to_owned()
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The report.

#[test]
fn a_run_writes_its_report_beside_the_manifest() {
    let runs = runs();
    assert!(runs.run_page.is_absolute());
    assert!(
        runs.run_stdout
            .lines()
            .any(|line| line == format!("report: {}", runs.run_page.display())),
        "the run prints where its report is:\n{}",
        runs.run_stdout
    );
    assert!(runs.run_dir.join("manifest.yaml").is_file());
    assert!(
        runs.run_page.is_file(),
        "{} was not written",
        runs.run_page.display()
    );
}

#[test]
fn the_report_command_writes_the_comparison_page() {
    let page = comparison_page();
    assert!(page.is_file(), "{} was not written", page.display());
}

#[test]
fn the_run_page_shows_every_range_of_the_manifest() {
    let runs = runs();
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let mut paths = range_paths(&runs.run_dir.join("manifest.yaml"));
    assert!(
        paths.iter().any(|path| path.contains('/')),
        "the range tree of detection-pipeline has nested ranges: {paths:?}"
    );
    let dom = Dom::parse(&browser.dump_dom(&runs.run_page).dom);
    let table = dom.by_id("table", "ranges");
    let mut rows = dom.values_inside(table, "tr", "data-path");
    rows.sort();
    paths.sort();
    assert_eq!(rows, paths, "one row of table#ranges per range path");
}

#[test]
fn the_run_page_has_its_flame_graph_charts_and_nsight_section() {
    let runs = runs();
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let dom = Dom::parse(&browser.dump_dom(&runs.run_page).dom);
    assert_eq!(dom.flamegraphs(), 1, "one <svg class=\"flamegraph\">");
    for id in ["pass-histogram", "call-histogram", "pass-timeline"] {
        dom.by_id("svg", id);
    }
    dom.by_id("section", "nsight");
}

/// A run with `memory: on`: memory columns in the range table, the chart
/// of allocations by range and the live bytes over a pass, both drawn.
#[test]
fn the_run_page_of_a_memory_run_shows_its_memory() {
    let runs = runs();
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let rendered = browser.dump_dom(&runs.run_page);
    let dom = Dom::parse(&rendered.dom);
    dom.by_id("section", "memory");
    let table = dom.by_id("table", "ranges");
    let headers: Vec<usize> = dom
        .tagged("th")
        .filter(|&th| dom.is_inside(th, table))
        .collect();
    assert!(headers.len() >= 13, "memory columns in the range table");
    for id in ["allocations-chart", "live-bytes"] {
        let chart = dom.by_id("svg", id);
        // Drawn: plotters' paths and rectangles, not the stand-in's text.
        let drawn = ["path", "polyline", "rect"]
            .iter()
            .flat_map(|tag| dom.tagged(tag))
            .filter(|&element| dom.is_inside(element, chart))
            .count();
        assert!(drawn > 3, "#{id} is drawn ({drawn} shapes)");
    }
    assert!(
        rendered.dom.contains("Allocations per pass, by range"),
        "the chart's caption"
    );
    assert!(
        rendered.dom.contains("to_chw_tensor"),
        "the letterbox's tensor has a bar"
    );
}

#[test]
fn the_comparison_page_has_its_table_chart_differences_and_a_flame_graph_per_run() {
    let page = comparison_page();
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let dom = Dom::parse(&browser.dump_dom(page).dom);
    let table = dom.by_id("table", "comparison");
    let rows = dom.values_inside(table, "tr", "data-row");
    for label in ["pass", "call"] {
        assert!(
            rows.iter().any(|row| row == label),
            "table#comparison has a row {label:?}: {rows:?}"
        );
    }
    dom.by_id("svg", "ratios");
    dom.by_id("section", "differences");
    assert_eq!(
        dom.flamegraphs(),
        2,
        "one <svg class=\"flamegraph\"> per run"
    );
}

/// A pair judged by gates: its page says the verdict and each gate's
/// result, as its `experiment.md` does.
#[test]
fn the_page_of_a_judged_pair_shows_its_experiment() {
    let page = experiment_page();
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let rendered = browser.dump_dom(page);
    let dom = Dom::parse(&rendered.dom);
    let section = dom.by_id("section", "experiment");
    let table = dom.by_id("table", "gates");
    assert!(dom.is_inside(table, section));
    assert_eq!(
        dom.values_inside(table, "tr", "data-gate"),
        ["p50<=+1000%", "mean<=-99%"]
    );
    assert_eq!(
        dom.values_inside(section, "span", "data-verdict"),
        ["reject"]
    );
    for text in ["Agreed before measuring", "holds", "fails"] {
        assert!(rendered.dom.contains(text), "{text}");
    }
    // A pair's page without gates has none.
    let plain = Dom::parse(&browser.dump_dom(comparison_page()).dom);
    assert!(plain
        .tagged("section")
        .all(|s| plain.elements[s].attribute("id") != Some("experiment")));
}

/// The run page, the comparison page, and the page of a judged pair.
fn pages() -> [&'static Path; 3] {
    [&runs().run_page, comparison_page(), experiment_page()]
}

#[test]
fn the_pages_run_without_a_javascript_error() {
    let pages = pages();
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    for page in pages {
        assert_console_is_silent(page, &browser.dump_dom(page).stderr);
    }
}

#[test]
fn the_pages_draw_something() {
    let pages = pages();
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    for page in pages {
        let png = page.with_extension("png");
        let stderr = browser.screenshot(page, &png);
        assert_console_is_silent(page, &stderr);
        if let Err(why) = looks_drawn(&png) {
            panic!("the screenshot of {} looks blank: {why}", page.display());
        }
    }
}

#[test]
fn the_pages_load_nothing_from_the_network() {
    for page in pages() {
        assert_loads_nothing_from_the_network(page);
    }
}

// ---------------------------------------------------------------------------
// The checks themselves, on pages made here: each must be able to fail.

/// A page named `name` in `dir` with `body` as its body.
fn page(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"></head><body>{body}</body></html>\n"),
    )
    .unwrap();
    path
}

#[test]
fn the_browser_check_sees_a_javascript_error() {
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let broken = page(
        dir.path(),
        "broken.html",
        "<p>broken</p><script>undefined_function()</script>",
    );
    let stderr = browser.dump_dom(&broken).stderr;
    let messages = console_messages(&stderr);
    assert!(
        messages
            .iter()
            .any(|line| line.contains("Uncaught ReferenceError: undefined_function is not defined")),
        "the error is in the browser's log:\n{stderr}"
    );
}

#[test]
fn the_browser_check_reads_the_dom_that_scripts_made() {
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let built = page(
        dir.path(),
        "built.html",
        r##"<table id="ranges"><tbody></tbody></table>
<script>
  for (const path of ["preprocess", "preprocess/letterbox"]) {
    const row = document.createElement("tr");
    row.dataset.path = path;
    row.innerHTML = "<td>" + path + "</td>";
    document.querySelector("#ranges tbody").appendChild(row);
  }
</script>"##,
    );
    let rendered = browser.dump_dom(&built);
    assert_console_is_silent(&built, &rendered.stderr);
    let dom = Dom::parse(&rendered.dom);
    let table = dom.by_id("table", "ranges");
    assert_eq!(
        dom.values_inside(table, "tr", "data-path"),
        ["preprocess", "preprocess/letterbox"]
    );
}

#[test]
fn the_screenshot_check_tells_a_blank_page_from_a_drawn_one() {
    let Some(browser) = Browser::or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let blank = page(dir.path(), "blank.html", "");
    let drawn = page(
        dir.path(),
        "drawn.html",
        r##"<h1>drawn</h1><svg width="600" height="300">
<rect x="0" y="0" width="300" height="150" fill="#d62728"/>
<rect x="300" y="150" width="300" height="150" fill="#1f77b4"/></svg>"##,
    );
    let blank_png = dir.path().join("blank.png");
    let drawn_png = dir.path().join("drawn.png");
    browser.screenshot(&blank, &blank_png);
    browser.screenshot(&drawn, &drawn_png);
    assert!(looks_drawn(&blank_png).is_err());
    assert_eq!(looks_drawn(&drawn_png), Ok(()));
    let (width, height) = image::image_dimensions(&drawn_png).unwrap();
    assert_eq!((width, height), (1280, 2000));
}

#[test]
fn a_browser_that_hangs_is_killed() {
    let started = Instant::now();
    let mut command = Command::new("sh");
    command.args(["-c", "sleep 30 & sleep 30"]);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        output_within(command, Duration::from_millis(300))
    }));
    assert!(result.is_err(), "a command past its limit fails the test");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn the_dom_reader_places_elements_inside_their_ancestors() {
    let dom = Dom::parse(
        r#"<!DOCTYPE html><html><body><!-- <table id="ranges"> -->
<table id="ranges"><tbody><tr data-path="a/b&amp;c"><td>x<br>y</td></tr></tbody></table>
<script>const s = "<tr data-path='in-script'>";</script>
<svg class="chart flamegraph"><rect/><g><rect></rect></g></svg>
<tr data-path="outside"></tr></body></html>"#,
    );
    let table = dom.by_id("table", "ranges");
    assert_eq!(dom.values_inside(table, "tr", "data-path"), ["a/b&c"]);
    assert_eq!(dom.with_attribute("tr", "data-path", "outside").count(), 1);
    assert_eq!(
        dom.with_attribute("tr", "data-path", "in-script").count(),
        0
    );
    assert_eq!(dom.flamegraphs(), 1);
}

#[test]
fn an_external_src_breaks_the_network_rule() {
    assert_eq!(
        external_urls(r#"<script src="https://cdn.example/d3.js"></script>"#),
        ["https://cdn.example/d3.js"]
    );
}

#[test]
fn external_hrefs_and_css_urls_break_the_network_rule_in_either_quotes() {
    let source = r#"<link rel='stylesheet' HREF = 'http://fonts.example/a.css'>
<svg><image xlink:href="//img.example/x.png"/></svg>
<style>@import "https://css.example/b.css"; body { background: url( 'https://img.example/bg.png' ) }
.x { background: url(http://img.example/y.png) }</style>"#;
    assert_eq!(
        external_urls(source),
        [
            "http://fonts.example/a.css",
            "//img.example/x.png",
            "https://img.example/bg.png",
            "http://img.example/y.png",
            "https://css.example/b.css",
        ]
    );
}

#[test]
fn namespaces_text_and_local_urls_keep_the_network_rule() {
    let source = r##"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">
<a href="#pass-histogram">histogram</a><img src="data:image/png;base64,AAAA"><img data-src="https://lazy.example">
<use xlink:href="#frame"/></svg><p>Made with https://example.org, see http://example.org/docs.</p>
<style>.a { fill: url(#gradient) } .b { background: url("data:image/svg+xml,%3Csvg%3E") }</style>
<a href="other/report.html">the other run</a>"##;
    assert_eq!(external_urls(source), Vec::<String>::new());
}
