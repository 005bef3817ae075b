//! `report.html`: a self-contained page for a run, or for a comparison of
//! runs. Inline SVG (plots by `plotters`, the flame graph by `inferno`),
//! inline CSS and a few lines of script that sort tables; nothing is
//! fetched from anywhere, so the file opens from disk anywhere.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::prelude::*;
use profiling_analyze::Analysis;
use profiling_compare::runs::{LoadedRun, RunError};
use profiling_compare::statistics::lower_median;
use profiling_compare::{one_line, Comparison, Options, Row, Verdict};
use profiling_core::host::NOT_A_CHECKOUT_NOTE;
use profiling_core::manifest::Manifest;
use profiling_core::run_samples::{RunSamples, SAMPLES_FILE};
use profiling_core::runner::Timings;
use profiling_core::stats::DurationStats;
use profiling_core::timing::RangePathTimings;
use serde_yaml::Value;

use crate::summary::format_ns;

/// The page's file name, beside `manifest.yaml`.
pub const REPORT_FILE: &str = "report.html";

/// Points drawn at most on the pass timeline; longer runs are shown as
/// the median, minimum and maximum of consecutive passes.
const TIMELINE_POINTS: usize = 1_500;
/// Bins of the histograms.
const BINS: usize = 40;

/// What a run's page is made of: its manifest as written, its samples
/// when it kept them, and where it is.
pub struct RunPage<'a> {
    pub dir: &'a Path,
    pub manifest: &'a Manifest,
    pub samples: Option<&'a RunSamples>,
    /// The comparison with the run's `--baseline`, when it had one.
    pub comparison: Option<(&'a Comparison, &'a Options)>,
}

/// Reads the run in `dir` (its manifest, and its samples when it kept
/// them) for a page; a run made before samples were kept has none.
pub fn read_run(dir: &Path) -> Result<(Manifest, Option<RunSamples>), RunError> {
    let manifest_path = dir.join("manifest.yaml");
    if !manifest_path.is_file() {
        return Err(RunError::NotARun(dir.to_path_buf()));
    }
    let manifest = profiling_compare::runs::read_manifest(&manifest_path)?;
    let manifest = Manifest::from_value(manifest).map_err(|reason| RunError::NotAManifest {
        path: manifest_path,
        reason,
    })?;
    let samples_path = dir.join(SAMPLES_FILE);
    let samples = match std::fs::read(&samples_path) {
        Ok(bytes) => Some(
            RunSamples::decode(&bytes).map_err(|source| RunError::Samples {
                path: samples_path,
                source,
            })?,
        ),
        Err(_) => None,
    };
    Ok((manifest, samples))
}

/// Writes `page` into `path` through a temporary file and a rename.
pub fn write_page(path: &Path, page: &str) -> std::io::Result<PathBuf> {
    profiling_core::run_dir::write_atomically(path, page.as_bytes())?;
    Ok(path.to_path_buf())
}

pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A part of the manifest as one line, as the page shows it.
fn show<T: serde::Serialize>(value: &T) -> String {
    match serde_yaml::to_value(value) {
        Ok(Value::Null) | Err(_) => "-".to_owned(),
        Ok(value) => one_line(&value),
    }
}

const STYLE: &str = r#"
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1280px; padding: 1rem 1.5rem 3rem; color: #1d1d1f; background: #fff; }
h1 { font-size: 1.5rem; margin: .5rem 0 .25rem; }
h2 { font-size: 1.15rem; margin: 2rem 0 .5rem; border-bottom: 1px solid #ddd; padding-bottom: .25rem; }
p.lead { margin: 0 0 1rem; color: #555; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: 0; font-size: .9rem; }
dl.facts dt { color: #666; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: .85rem; }
table { border-collapse: collapse; font-size: .85rem; width: 100%; }
th, td { padding: .25rem .5rem; border-bottom: 1px solid #eee; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
th { cursor: pointer; background: #f6f6f6; position: sticky; top: 0; user-select: none; }
th[aria-sort="ascending"]::after { content: " ▲"; }
th[aria-sort="descending"]::after { content: " ▼"; }
td.path { font-family: ui-monospace, Menlo, monospace; }
.note { background: #fff8e1; border-left: 3px solid #f0b400; padding: .4rem .75rem; margin: .5rem 0; font-size: .9rem; }
.plots { display: flex; flex-wrap: wrap; gap: 1rem; }
.plots svg { max-width: 100%; height: auto; border: 1px solid #eee; }
svg.flamegraph { width: 100%; height: auto; }
svg.flamegraph text { font-family: ui-monospace, Menlo, monospace; font-size: 12px; pointer-events: none; }
svg.flamegraph g:hover rect { stroke: #000; stroke-width: .5; }
.flames { display: grid; grid-template-columns: repeat(auto-fit, minmax(480px, 1fr)); gap: 1rem; }
.verdict-faster { color: #0a7d28; font-weight: 600; }
.verdict-slower { color: #c0161b; font-weight: 600; }
.verdict-unclear { color: #8a6d00; }
.verdict-no-change { color: #777; }
.verdict-added, .verdict-removed { color: #0b6b8a; }
ul.differences { font-size: .9rem; }
ul.legend { list-style: none; display: flex; flex-wrap: wrap; gap: .3rem 1.5rem; margin: 0 0 .75rem; padding: .5rem .75rem; font-size: .85rem; background: rgba(255, 255, 255, .96); border: 1px solid #ddd; position: sticky; top: 0; z-index: 1; }
ul.legend li { display: flex; align-items: center; gap: .4rem; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(600px, 1fr)); gap: 1rem; }
.figures.pairs { grid-template-columns: 1fr; }
figure.sweep { margin: 0; }
figure.sweep figcaption { font-weight: 600; margin: 0 0 .3rem; overflow-wrap: anywhere; }
figure.sweep svg { max-width: 100%; height: auto; border: 1px solid #eee; }
.scroll { overflow-x: auto; }
table#points th { white-space: normal; vertical-align: bottom; }
td .interval { color: #777; font-size: .75rem; }
.status-failed { color: #c0161b; font-weight: 600; }
.status-pending, .status-running { color: #8a6d00; }
"#;

/// Sorts a table by the column whose header is clicked, by each cell's
/// `data-sort` (numbers) or its text.
const SCRIPT: &str = r#"
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, column) {
    th.addEventListener("click", function () {
      var body = table.tBodies[0];
      var descending = th.getAttribute("aria-sort") !== "descending";
      table.querySelectorAll("th").forEach(function (other) { other.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      var key = function (row) {
        var cell = row.cells[column];
        var sort = cell.getAttribute("data-sort");
        return sort !== null ? parseFloat(sort) : cell.textContent;
      };
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        var order = (typeof x === "number" && typeof y === "number") ? x - y : String(x).localeCompare(String(y));
        return descending ? -order : order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"#;

pub(crate) fn document(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}\n<script>{SCRIPT}</script>\n</body>\n</html>\n",
        esc(title)
    )
}

/// The page of one run.
pub fn run_page(page: &RunPage<'_>) -> String {
    let m = page.manifest;
    let profile = &m.profile_name;
    let run_id = &m.run_id;
    let mut body = String::new();
    let _ = writeln!(
        body,
        "<h1>{} <span class=\"mono\">{}</span></h1>\n<p class=\"lead\">target <code>{}</code> at <code>{}</code>, {}</p>",
        esc(profile),
        esc(run_id),
        esc(&m.target.name),
        esc(&m.target.source),
        esc(&show(&m.status)),
    );
    body.push_str(&header(page));
    if let Some(error) = &m.error {
        let _ = writeln!(
            body,
            "<p class=\"note\">The run failed: {}</p>",
            esc(&error.message)
        );
    }
    if page.samples.is_none() {
        body.push_str("<p class=\"note\">This run has no <code>samples.bin</code> (it was made before runs kept their samples, or it failed): the distributions and the pass timeline need them and are left out; re-run it for the whole page.</p>\n");
    }

    let tree = RangeRows::of(m, Some(page.dir));
    body.push_str("<h2 id=\"flame-graph\">Where the time goes</h2>\n");
    body.push_str("<p class=\"lead\">The NVTX ranges of the measured passes as an icicle: each range under the one it ran in, as wide as its total time. Hover for the figures.</p>\n");
    if let Some(note) = &tree.note {
        let _ = writeln!(body, "<p class=\"note\">{}</p>", esc(note));
    }
    body.push_str(&flame_graph(&tree, 0, FLAME_WIDTH));

    body.push_str("<h2 id=\"ranges-title\">Ranges</h2>\n");
    body.push_str(&range_table(&tree, m));

    if let Some(samples) = page.samples {
        body.push_str("<h2>Distributions</h2>\n<div class=\"plots\">\n");
        body.push_str(&histogram(
            "pass-histogram",
            "Pass time",
            &samples.passes.sorted_values(),
        ));
        body.push_str(&histogram(
            "call-histogram",
            "Call time",
            &samples.calls.sorted_values(),
        ));
        body.push_str("</div>\n<h2>Passes</h2>\n<p class=\"lead\">Each pass's time in order: drift, throttling, or a warmup that did not settle show here.</p>\n<div class=\"plots\">\n");
        body.push_str(&timeline(samples));
        body.push_str("</div>\n");
    }

    if let Some((comparison, options)) = page.comparison {
        body.push_str("<section id=\"comparison-with-baseline\">\n");
        let _ = writeln!(
            body,
            "<h2>Compared with baseline <code>{}</code></h2>",
            esc(comparison
                .base
                .baseline
                .as_deref()
                .unwrap_or(&comparison.base.label))
        );
        body.push_str(&comparison_section(comparison, options, "comparison"));
        body.push_str("</section>\n");
    }

    body.push_str(&nsight_section(page.dir));
    document(&format!("{profile} {run_id}"), &body)
}

/// The GPU time per range of `analysis.yaml` in `dir`, or where it will
/// be once the run's Nsight Systems report is analyzed.
fn nsight_section(dir: &Path) -> String {
    let mut html =
        String::from("<section id=\"nsight\">\n<h2>Nsight Systems: GPU time per range</h2>\n");
    let analysis: Option<Analysis> = std::fs::read_to_string(dir.join("analysis.yaml"))
        .ok()
        .and_then(|text| serde_yaml::from_str(&text).ok());
    let Some(analysis) = analysis else {
        html.push_str("<p class=\"lead\">No Nsight Systems report of this run is analyzed yet: capture one with the command <code>profile-cli run ... --print-nsys-command</code> prints (or <code>run --nsys</code>), then <code>profile-cli analyze</code> this run directory.</p>\n</section>\n");
        return html;
    };
    let _ = writeln!(
        html,
        "<p class=\"lead\">From <code>{}</code>: the GPU was busy {:.1} % of a pass on average; its longest idle stretch in a pass was {}.</p>",
        esc(&analysis.export.display().to_string()),
        analysis.mean_gpu_busy_fraction * 100.0,
        format_ns(analysis.largest_gpu_idle_ns),
    );
    html.push_str("<table id=\"gpu-ranges\" class=\"sortable\">\n<thead><tr><th>range path</th><th>calls</th><th>host p50 (Nsight)</th><th>host p50 (this run)</th><th>GPU busy p50</th><th>GPU per pass</th><th>first launch to last completion p50</th><th>top kernel</th></tr></thead>\n<tbody>\n");
    let passes = analysis.passes.len().max(1) as u64;
    let cell = |value: Option<u64>| match value {
        Some(ns) => format!("<td data-sort=\"{ns}\">{}</td>", format_ns(ns)),
        None => "<td data-sort=\"-1\">-</td>".to_owned(),
    };
    for range in &analysis.ranges {
        let per_pass = range.gpu_sum_ns / passes;
        let kernel = range
            .kernels
            .first()
            .map_or("-".to_owned(), |k| format!("{} ×{}", k.name, k.count));
        let _ = writeln!(
            html,
            "<tr data-gpu-path=\"{path}\"><td class=\"path\">{path}</td><td>{count}</td>{host}{here}{busy}<td data-sort=\"{per_pass}\">{per_pass_text}</td>{span}<td class=\"path\">{kernel}</td></tr>",
            path = esc(&range.path),
            count = range.count,
            host = cell(Some(range.host.p50_ns)),
            here = cell(range.manifest_host_p50_ns),
            busy = cell(range.gpu_busy.map(|s| s.p50_ns)),
            per_pass_text = format_ns(per_pass),
            span = cell(range.launch_to_completion.map(|s| s.p50_ns)),
            kernel = esc(&kernel),
        );
    }
    html.push_str("</tbody>\n</table>\n</section>\n");
    html
}

fn header(page: &RunPage<'_>) -> String {
    let m = page.manifest;
    let records = m.record_ids.len();
    let git = match (&m.git_commit, m.git_dirty) {
        (Some(commit), Some(true)) => format!("{commit} (dirty)"),
        (Some(commit), _) => commit.clone(),
        (None, _) => m
            .git_note
            .clone()
            .unwrap_or_else(|| NOT_A_CHECKOUT_NOTE.to_owned()),
    };
    let passes = format!(
        "{} measured of {} (warmup {})",
        m.completed_iterations, m.workload.iterations, m.completed_warmup
    );
    let link = |file: &str| {
        if page.dir.join(file).is_file() {
            format!("<a href=\"{file}\">{file}</a>")
        } else {
            format!("{file} (not written)")
        }
    };
    let rows = [
        ("profile", m.profile_name.clone()),
        ("run", m.run_id.clone()),
        ("status", show(&m.status)),
        ("target", format!("{} ({})", m.target.name, m.target.source)),
        ("parameters", show(&m.target.parameters)),
        (
            "data source",
            format!(
                "{}: {}",
                m.data_source.name,
                show(&m.data_source.description)
            ),
        ),
        ("records", records.to_string()),
        ("passes", passes),
        ("device", show(&m.device)),
        ("backend", show(&m.backend)),
        (
            "host",
            format!(
                "{}, {} ({} cores), {}",
                m.host.name, m.host.cpu_model, m.host.cores, m.host.os
            ),
        ),
        ("build", m.build_profile.clone()),
        ("git", git),
        ("command", m.command_line.clone()),
        ("started", m.started_at.clone()),
    ];
    let mut html = String::from("<dl class=\"facts\">\n");
    for (key, value) in rows {
        let _ = writeln!(html, "<dt>{key}</dt><dd>{}</dd>", esc(&value));
    }
    let _ = writeln!(
        html,
        "<dt>files</dt><dd>{} · {} · {}</dd>\n</dl>",
        link("manifest.yaml"),
        link("trace.json"),
        link(SAMPLES_FILE)
    );
    html
}

/// One row of the range table and one frame of the flame graph.
struct RangeRow {
    path: String,
    name: String,
    depth: usize,
    count: u64,
    inclusive_p50: u64,
    exclusive_total: u64,
    inclusive_total: u64,
    /// Per pass: (median, p90, mean) of inclusive and of self time.
    inclusive_per_pass: Option<(u64, u64, u64)>,
    exclusive_per_pass: Option<(u64, u64, u64)>,
    /// GPU medians per call (inclusive, self), on runs with GPU timing.
    gpu_p50: Option<(u64, u64)>,
}

struct RangeRows {
    rows: Vec<RangeRow>,
    note: Option<String>,
    passes: u64,
    pass_mean: u64,
}

impl RangeRows {
    /// From `timings.range_tree`; a manifest without one (made before
    /// range paths) gets its tree from the `trace.json` in `dir`, and
    /// without that its ranges by name, each at the top.
    fn of(m: &Manifest, dir: Option<&Path>) -> RangeRows {
        let timings = &m.timings;
        if timings.range_tree.is_empty() && !timings.ranges.is_empty() {
            let trace = dir
                .and_then(|dir| std::fs::read(dir.join("trace.json")).ok())
                .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok());
            if let Some(tree) = trace
                .as_ref()
                .and_then(profiling_core::trace::range_tree_of)
            {
                let mut rows = RangeRows::of_paths(timings, &tree.paths, None);
                rows.note = Some("This run was made before ranges were kept by path: the tree comes from its trace.json (the passes and events the trace holds).".to_owned());
                return rows;
            }
            return RangeRows::by_name(timings);
        }
        RangeRows::of_paths(
            timings,
            &timings.range_tree,
            timings.range_tree_note.clone(),
        )
    }

    fn of_paths(timings: &Timings, paths: &[RangePathTimings], note: Option<String>) -> RangeRows {
        let per_pass =
            |stats: &Option<DurationStats>| stats.as_ref().map(|s| (s.p50_ns, s.p90_ns, s.mean_ns));
        let rows = paths
            .iter()
            .map(|entry| RangeRow {
                path: entry.path.clone(),
                name: entry.name.clone(),
                depth: entry.depth as usize,
                count: entry.count,
                inclusive_p50: entry.inclusive.p50_ns,
                exclusive_total: entry.exclusive.total_ns,
                inclusive_total: entry.inclusive.total_ns,
                inclusive_per_pass: per_pass(&entry.inclusive_per_pass),
                exclusive_per_pass: per_pass(&entry.exclusive_per_pass),
                gpu_p50: entry
                    .gpu
                    .as_ref()
                    .map(|g| (g.inclusive.p50_ns, g.exclusive.p50_ns)),
            })
            .collect();
        RangeRows {
            rows,
            note,
            passes: timings.iterations.map_or(0, |p| p.count),
            pass_mean: timings.iterations.map_or(0, |p| p.mean_ns),
        }
    }

    fn by_name(timings: &Timings) -> RangeRows {
        let rows = timings
            .ranges
            .iter()
            .map(|entry| RangeRow {
                path: entry.name.clone(),
                name: entry.name.clone(),
                depth: 0,
                count: entry.count,
                inclusive_p50: entry.inclusive.p50_ns,
                exclusive_total: entry.exclusive.total_ns,
                inclusive_total: entry.inclusive.total_ns,
                inclusive_per_pass: None,
                exclusive_per_pass: None,
                gpu_p50: entry
                    .gpu
                    .as_ref()
                    .map(|g| (g.inclusive.p50_ns, g.exclusive.p50_ns)),
            })
            .collect();
        RangeRows {
            rows,
            note: Some("This run was made before ranges were recorded by path: they are listed by name, without their nesting; re-run it for the tree.".to_owned()),
            passes: timings.iterations.map_or(0, |p| p.count),
            pass_mean: timings.iterations.map_or(0, |p| p.mean_ns),
        }
    }

    /// Folded stacks: each path's self time on its stack of names.
    fn folded(&self) -> Vec<String> {
        profiling_core::timing::tree::folded_stacks(
            self.rows
                .iter()
                .map(|r| (r.depth, r.name.as_str(), r.exclusive_total)),
        )
    }
}

/// The range table: path, calls, per call and per pass times, share, and
/// on runs with GPU timing the GPU medians.
fn range_table(tree: &RangeRows, m: &Manifest) -> String {
    let passes = tree.passes.max(1);
    let gpu = tree.rows.iter().any(|row| row.gpu_p50.is_some());
    let mut html = String::from("<table id=\"ranges\" class=\"sortable\">\n<thead><tr><th>range path</th><th>calls</th><th>per pass</th><th>median per call</th><th>inclusive per pass: median</th><th>p90</th><th>self per pass: median</th><th>p90</th><th>share of a pass</th>");
    if gpu {
        html.push_str("<th>GPU median per call</th><th>GPU self median</th>");
    }
    html.push_str("</tr></thead>\n<tbody>\n");
    for row in &tree.rows {
        let per_pass_mean = row
            .inclusive_per_pass
            .map_or(row.inclusive_total / passes, |(_, _, mean)| mean);
        let share = if tree.pass_mean > 0 {
            per_pass_mean as f64 / tree.pass_mean as f64
        } else {
            0.0
        };
        let cell = |value: Option<u64>| match value {
            Some(ns) => format!("<td data-sort=\"{ns}\">{}</td>", format_ns(ns)),
            None => "<td data-sort=\"-1\">-</td>".to_owned(),
        };
        let indent = "&nbsp;&nbsp;".repeat(row.depth);
        let gpu_cells = if gpu {
            cell(row.gpu_p50.map(|g| g.0)) + &cell(row.gpu_p50.map(|g| g.1))
        } else {
            String::new()
        };
        let _ = writeln!(
            html,
            "<tr data-path=\"{path}\"><td class=\"path\" title=\"{path}\">{indent}{name}</td><td data-sort=\"{count}\">{count}</td><td data-sort=\"{rate}\">{rate:.2}</td>{p50}{ip50}{ip90}{ep50}{ep90}<td data-sort=\"{share}\">{percent:.1} %</td>{gpu_cells}</tr>",
            path = esc(&row.path),
            name = esc(&row.name),
            count = row.count,
            rate = row.count as f64 / passes as f64,
            p50 = cell(Some(row.inclusive_p50)),
            ip50 = cell(row.inclusive_per_pass.map(|p| p.0)),
            ip90 = cell(row.inclusive_per_pass.map(|p| p.1)),
            ep50 = cell(row.exclusive_per_pass.map(|p| p.0)),
            ep90 = cell(row.exclusive_per_pass.map(|p| p.1)),
            share = share,
            percent = share * 100.0,
        );
    }
    html.push_str("</tbody>\n</table>\n");
    if tree.rows.is_empty() {
        html.push_str("<p class=\"lead\">No NVTX range was recorded inside the measured passes: mark the operations of the target with <code>#[nvtx_range]</code> or <code>profiling_range(...)</code>.</p>\n");
    }
    let _ = writeln!(
        html,
        "<p class=\"lead\">{}</p>",
        esc(&m.timings.host_timing_note)
    );
    html
}

/// The flame graph of `tree` as inline SVG: inferno's drawing, without its
/// script and style (the page styles it), its labels cut to fit their
/// frames, its ids made unique with `index`.
fn flame_graph(tree: &RangeRows, index: usize, width: usize) -> String {
    let lines = tree.folded();
    if lines.is_empty() {
        return "<svg class=\"flamegraph\" viewBox=\"0 0 1200 40\" role=\"img\" aria-label=\"no ranges\"><text x=\"10\" y=\"24\">No ranges were recorded.</text></svg>\n".to_owned();
    }
    let mut options = inferno::flamegraph::Options::default();
    options.direction = inferno::flamegraph::Direction::Inverted;
    options.title = String::new();
    options.count_name = "ns".to_owned();
    options.name_type = "Range:".to_owned();
    options.hash = true;
    options.image_width = Some(width);
    let mut svg = Vec::new();
    if inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut svg)
        .is_err()
    {
        return "<svg class=\"flamegraph\" viewBox=\"0 0 1200 40\"><text x=\"10\" y=\"24\">The flame graph could not be drawn.</text></svg>\n".to_owned();
    }
    clean_flame_graph(&String::from_utf8_lossy(&svg), index, width)
}

/// The flame graph's width on a run's page, and on a comparison's, where
/// two stand side by side.
const FLAME_WIDTH: usize = 1200;
const FLAME_WIDTH_SIDE_BY_SIDE: usize = 720;

/// Cuts `<open ... </close>` blocks out of `text`.
fn remove_blocks(text: &str, open: &str, close: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(open) {
        out.push_str(&rest[..start]);
        match rest[start..].find(close) {
            Some(end) => rest = &rest[start + end + close.len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

fn clean_flame_graph(svg: &str, index: usize, width: usize) -> String {
    let start = svg.find("<svg").unwrap_or(0);
    let mut svg = svg[start..].to_owned();
    for (open, close) in [
        ("<!--", "-->"),
        ("<style", "</style>"),
        ("<script", "</script>"),
        ("<text id=\"title\"", "</text>"),
        ("<text id=\"details\"", "</text>"),
        ("<text id=\"unzoom\"", "</text>"),
        ("<text id=\"search\"", "</text>"),
        ("<text id=\"matched\"", "</text>"),
    ] {
        svg = remove_blocks(&svg, open, close);
    }
    svg = svg.replacen(" onload=\"init(evt)\"", "", 1);
    svg = svg.replacen(
        "<svg ",
        "<svg class=\"flamegraph\" role=\"img\" aria-label=\"flame graph of the ranges\" ",
        1,
    );
    let prefix = format!("fg{index}-");
    svg = svg
        .replace(" id=\"", &format!(" id=\"{prefix}"))
        .replace("url(#", &format!("url(#{prefix}"));
    crop_to_frames(&fit_labels(&svg, width))
}

/// The frames start below the room inferno keeps for its title and search
/// box, gone here: the drawing starts just above the first frame.
fn crop_to_frames(svg: &str) -> String {
    let frames_top = svg
        .split("<rect ")
        .skip(2)
        .filter_map(|rect| {
            rect.split(" y=\"")
                .nth(1)?
                .split('"')
                .next()?
                .parse::<f64>()
                .ok()
        })
        .fold(f64::INFINITY, f64::min);
    let Some(open_end) = svg.find('>') else {
        return svg.to_owned();
    };
    let open = &svg[..open_end];
    let attribute = |name: &str| -> Option<f64> {
        open.split(&format!(" {name}=\""))
            .nth(1)?
            .split('"')
            .next()?
            .parse()
            .ok()
    };
    let (Some(width), Some(height)) = (attribute("width"), attribute("height")) else {
        return svg.to_owned();
    };
    if !frames_top.is_finite() || frames_top <= 8.0 {
        return svg.to_owned();
    }
    let top = frames_top - 6.0;
    let cropped = open
        .replacen(
            &format!(" height=\"{height}\""),
            &format!(" height=\"{}\"", height - top),
            1,
        )
        .replacen(
            &format!(" viewBox=\"0 0 {width} {height}\""),
            &format!(" viewBox=\"0 {top} {width} {}\"", height - top),
            1,
        );
    // The frames' own viewport is as tall as the original drawing.
    let rest = svg[open_end..].replacen(
        "-frames\" x=\"",
        &format!("-frames\" height=\"{height}\" x=\""),
        1,
    );
    format!("{cropped}{rest}")
}

/// Cuts each frame's label to the characters that fit its width (the
/// work inferno's script does in a browser).
fn fit_labels(svg: &str, width: usize) -> String {
    let frames_width = width.saturating_sub(20) as f64;
    let char_width = 12.0 * 0.59;
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(rect) = rest.find("<rect ") {
        let Some(text_start) = rest[rect..].find("<text ").map(|i| rect + i) else {
            break;
        };
        let Some(label_start) = rest[text_start..].find('>').map(|i| text_start + i + 1) else {
            break;
        };
        let Some(label_end) = rest[label_start..].find("</text>").map(|i| label_start + i) else {
            break;
        };
        let rect_text = &rest[rect..text_start];
        let width = rect_text
            .split("width=\"")
            .nth(1)
            .and_then(|w| w.split('%').next())
            .and_then(|w| w.parse::<f64>().ok());
        out.push_str(&rest[..label_start]);
        let label = &rest[label_start..label_end];
        match width {
            Some(percent) => {
                let fits = (percent / 100.0 * frames_width / char_width) as usize;
                let chars = label.chars().count();
                if fits < 4 {
                } else if chars <= fits {
                    out.push_str(label);
                } else {
                    out.extend(label.chars().take(fits - 2));
                    out.push_str("..");
                }
            }
            None => out.push_str(label),
        }
        rest = &rest[label_end..];
    }
    out.push_str(rest);
    out
}

pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
pub(crate) type Drawn = Result<(), Box<dyn std::error::Error>>;

/// An SVG plot of `size` that `draw` draws on a white background; empty
/// when drawing failed.
pub(crate) fn plot(size: (u32, u32), draw: impl FnOnce(&Area<'_>) -> Drawn) -> String {
    let mut svg = String::new();
    let drawn = {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE)
            .map_err(Into::into)
            .and_then(|()| draw(&root))
            .and_then(|()| root.present().map_err(Into::into))
    };
    if drawn.is_err() {
        svg.clear();
    }
    svg
}

/// A unit for durations up to `max` ns: (divisor, name).
pub(crate) fn unit_for(max: u64) -> (f64, &'static str) {
    match max {
        0..=9_999 => (1.0, "ns"),
        10_000..=9_999_999 => (1e3, "µs"),
        10_000_000..=9_999_999_999 => (1e6, "ms"),
        _ => (1e9, "s"),
    }
}

/// Adds `id` to the root `<svg` of a plot.
fn with_id(svg: String, id: &str, label: &str) -> String {
    svg.replacen(
        "<svg ",
        &format!(
            "<svg id=\"{id}\" role=\"img\" aria-label=\"{}\" ",
            esc(label)
        ),
        1,
    )
}

/// A histogram of sorted durations, the median and p90 marked.
fn histogram(id: &str, title: &str, sorted: &[u64]) -> String {
    let mut svg = String::new();
    if let (Some(&min), Some(&max)) = (sorted.first(), sorted.last()) {
        let (divisor, unit) = unit_for(max);
        // The manifest's nearest-rank quantiles.
        let stats = DurationStats::from_samples(&mut sorted.to_vec()).expect("not empty");
        let (median, p90) = (stats.p50_ns, stats.p90_ns);
        let low = min as f64 / divisor;
        let high = (max as f64 / divisor).max(low + 1e-9);
        let width = (high - low) / BINS as f64;
        let mut counts = [0u64; BINS];
        for &value in sorted {
            let bin = (((value as f64 / divisor) - low) / width) as usize;
            counts[bin.min(BINS - 1)] += 1;
        }
        let top = counts.iter().copied().max().unwrap_or(1) as f64 * 1.1;
        svg = plot((600, 320), |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(
                    format!("{title}: {} samples", sorted.len()),
                    ("sans-serif", 16),
                )
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(56)
                .build_cartesian_2d(low..high + width * 0.01, 0f64..top)?;
            chart
                .configure_mesh()
                .x_desc(format!("{title} ({unit})"))
                .y_desc("samples")
                .x_labels(6)
                .y_labels(5)
                .light_line_style(WHITE)
                .draw()?;
            chart.draw_series(counts.iter().enumerate().map(|(i, &count)| {
                let x0 = low + i as f64 * width;
                Rectangle::new(
                    [(x0, 0.0), (x0 + width * 0.95, count as f64)],
                    RGBColor(70, 110, 180).mix(0.75).filled(),
                )
            }))?;
            for (value, label, color) in [
                (median, "median", RGBColor(200, 30, 30)),
                (p90, "p90", RGBColor(230, 140, 0)),
            ] {
                let x = value as f64 / divisor;
                chart
                    .draw_series(LineSeries::new([(x, 0.0), (x, top)], color.stroke_width(2)))?
                    .label(format!("{label} {}", format_ns(value)))
                    .legend(move |(x, y)| {
                        PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2))
                    });
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.3))
                .position(SeriesLabelPosition::UpperRight)
                .draw()?;
            Ok(())
        });
    }
    if svg.is_empty() {
        return format!("<svg id=\"{id}\" viewBox=\"0 0 600 40\"><text x=\"10\" y=\"24\">{} has no samples</text></svg>\n", esc(title));
    }
    with_id(svg, id, title) + "\n"
}

/// Pass time against pass index, warmup passes first; long runs as the
/// median and range of consecutive passes.
fn timeline(samples: &RunSamples) -> String {
    let measured = &samples.passes.kept;
    let warmup = &samples.warmup.kept;
    let mut svg = String::new();
    let max = measured.iter().chain(warmup).copied().max().unwrap_or(0);
    if !measured.is_empty() {
        let (divisor, unit) = unit_for(max);
        let warmups = warmup.len() as i64;
        let total = warmups + measured.len() as i64;
        let points = |values: &[u64], offset: i64| -> Vec<(i64, f64, f64, f64)> {
            let per = values.len().div_ceil(TIMELINE_POINTS).max(1);
            values
                .chunks(per)
                .enumerate()
                .map(|(i, chunk)| {
                    let mut sorted = chunk.to_vec();
                    sorted.sort_unstable();
                    let median = lower_median(&sorted).unwrap_or(0) as f64 / divisor;
                    let low = sorted[0] as f64 / divisor;
                    let high = sorted[sorted.len() - 1] as f64 / divisor;
                    (offset + (i * per) as i64, median, low, high)
                })
                .collect()
        };
        let measured_points = points(measured, warmups);
        let warmup_points = points(warmup, 0);
        let grouped = measured.len() > TIMELINE_POINTS;
        let min = measured.iter().chain(warmup).copied().min().unwrap_or(0) as f64 / divisor;
        let top_value = max as f64 / divisor;
        // Zoomed on the passes' spread, so that drift shows; from 0 when the
        // spread is most of the scale anyway.
        let spread = (top_value - min).max(top_value * 0.02);
        let bottom = if min - spread < top_value * 0.25 {
            0.0
        } else {
            min - spread
        };
        let top = top_value + spread * 0.15;
        svg = plot((1220, 340), |root| {
            let zoomed = if bottom > 0.0 {
                " (axis not from 0)"
            } else {
                ""
            };
            let caption = if grouped {
                format!(
                    "Pass time by pass: {} warmup, {} measured (median, min and max of each {} passes){zoomed}",
                    warmup.len(),
                    measured.len(),
                    measured.len().div_ceil(TIMELINE_POINTS)
                )
            } else {
                format!(
                    "Pass time by pass: {} warmup, {} measured{zoomed}",
                    warmup.len(),
                    measured.len()
                )
            };
            let mut chart = ChartBuilder::on(root)
                .caption(caption, ("sans-serif", 16))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(0i64..total.max(1), bottom..top.max(bottom + 1e-9))?;
            chart
                .configure_mesh()
                .x_desc("pass (warmup first)")
                .y_desc(format!("pass time ({unit})"))
                .light_line_style(WHITE)
                .draw()?;
            for (series, color, label) in [
                (&warmup_points, RGBColor(230, 140, 0), "warmup (calls only)"),
                (&measured_points, RGBColor(70, 110, 180), "measured"),
            ] {
                if series.is_empty() {
                    continue;
                }
                if grouped {
                    chart.draw_series(series.iter().map(|&(x, _, low, high)| {
                        PathElement::new([(x, low), (x, high)], color.mix(0.3))
                    }))?;
                }
                chart
                    .draw_series(LineSeries::new(
                        series.iter().map(|&(x, median, _, _)| (x, median)),
                        color.stroke_width(1),
                    ))?
                    .label(label)
                    .legend(move |(x, y)| {
                        PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2))
                    });
                if series.len() <= 200 {
                    chart.draw_series(
                        series
                            .iter()
                            .map(|&(x, median, _, _)| Circle::new((x, median), 2, color.filled())),
                    )?;
                }
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.3))
                .position(SeriesLabelPosition::LowerRight)
                .draw()?;
            Ok(())
        });
    }
    if svg.is_empty() {
        return "<svg id=\"pass-timeline\" viewBox=\"0 0 600 40\"><text x=\"10\" y=\"24\">No measured pass completed.</text></svg>\n".to_owned();
    }
    with_id(svg, "pass-timeline", "pass time by pass") + "\n"
}

fn verdict_class(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Faster => "verdict-faster",
        Verdict::Slower => "verdict-slower",
        Verdict::NoChange => "verdict-no-change",
        Verdict::Unclear => "verdict-unclear",
        Verdict::Added => "verdict-added",
        Verdict::Removed => "verdict-removed",
    }
}

/// The differences, the table (with `table_id`) and the ratio chart of a
/// comparison.
fn comparison_section(comparison: &Comparison, options: &Options, table_id: &str) -> String {
    let mut html = String::new();
    let _ = writeln!(
        html,
        "<p class=\"lead\">base <code>{}</code> ({}, {} passes) → candidate <code>{}</code> ({}, {} passes). Ratio = candidate / base median; the interval is a {} % bootstrap interval from {} resamples; p from the Mann-Whitney U test; noise threshold {} %, significance {}.</p>",
        esc(&comparison.base.label),
        esc(&comparison.base.status),
        comparison.base.completed_passes,
        esc(&comparison.candidate.label),
        esc(&comparison.candidate.status),
        comparison.candidate.completed_passes,
        (options.bootstrap.confidence * 100.0).round(),
        options.bootstrap.resamples,
        options.noise * 100.0,
        options.significance,
    );
    html.push_str("<section id=\"differences\">\n");
    if comparison.differences.is_empty() && comparison.warnings.is_empty() {
        html.push_str("<p class=\"lead\">The two manifests agree on everything that changes what a time means.</p>\n");
    } else {
        html.push_str("<ul class=\"differences\">\n");
        for difference in &comparison.differences {
            let _ = writeln!(
                html,
                "<li><code>{}</code>: {} → {}</li>",
                esc(&difference.key),
                esc(&difference.base),
                esc(&difference.candidate)
            );
        }
        for warning in &comparison.warnings {
            let _ = writeln!(html, "<li class=\"note\">{}</li>", esc(warning));
        }
        html.push_str("</ul>\n");
    }
    html.push_str("</section>\n");
    let _ = writeln!(
        html,
        "<table id=\"{table_id}\" class=\"sortable\">\n<thead><tr><th></th><th>base</th><th>candidate</th><th>ratio</th><th>interval</th><th>p</th><th>pass Δ</th><th>verdict</th></tr></thead>\n<tbody>"
    );
    for row in &comparison.rows {
        html.push_str(&comparison_row(row));
    }
    html.push_str("</tbody>\n</table>\n");
    for row in &comparison.rows {
        if let Some(note) = &row.note {
            let _ = writeln!(
                html,
                "<p class=\"lead\">{}: {}</p>",
                esc(&row.subject.label()),
                esc(note)
            );
        }
    }
    html.push_str(&ratio_chart(comparison));
    html
}

fn comparison_row(row: &Row) -> String {
    let median = |side: Option<&profiling_compare::Side>| match side {
        Some(side) => format!(
            "<td data-sort=\"{0}\">{1}</td>",
            side.median_ns,
            format_ns(side.median_ns)
        ),
        None => "<td data-sort=\"-1\">-</td>".to_owned(),
    };
    let number = |value: Option<f64>, text: String| match value {
        Some(v) if v.is_finite() => format!("<td data-sort=\"{v}\">{text}</td>"),
        _ => "<td data-sort=\"-1\">-</td>".to_owned(),
    };
    let label = row.subject.label();
    format!(
        "<tr data-row=\"{label}\"><td class=\"path\">{label}</td>{base}{candidate}{ratio}{interval}{p}{share}<td class=\"{class}\">{verdict}</td></tr>\n",
        label = esc(&label),
        base = median(row.base.as_ref()),
        candidate = median(row.candidate.as_ref()),
        ratio = number(row.ratio, row.ratio.map_or(String::new(), |r| format!("{r:.3}"))),
        interval = number(
            row.interval.map(|[low, _]| low),
            row.interval
                .map_or(String::new(), |[low, high]| format!("[{low:.3}, {high:.3}]"))
        ),
        p = number(
            row.p_value,
            row.p_value.map_or(String::new(), |p| if p < 0.001 {
                "&lt;0.001".to_owned()
            } else {
                format!("{p:.3}")
            })
        ),
        share = number(
            row.pass_share,
            row.pass_share
                .map_or(String::new(), |s| format!("{:+.2} %", s * 100.0))
        ),
        class = verdict_class(row.verdict),
        verdict = row.verdict.word(),
    )
}

/// Each row's ratio as a bar from 1, its interval as a whisker.
fn ratio_chart(comparison: &Comparison) -> String {
    let rows: Vec<&Row> = comparison
        .rows
        .iter()
        .filter(|r| r.ratio.is_some_and(f64::is_finite))
        .collect();
    let mut svg = String::new();
    if !rows.is_empty() {
        let values = rows.iter().flat_map(|r| {
            let [low, high] = r.interval.unwrap_or([r.ratio.unwrap_or(1.0); 2]);
            [low, high, r.ratio.unwrap_or(1.0)]
        });
        let (mut low, mut high) = (1.0f64, 1.0f64);
        for value in values.filter(|v| v.is_finite()) {
            low = low.min(value);
            high = high.max(value);
        }
        let pad = ((high - low) * 0.08).max(0.02);
        let (low, high) = ((low - pad).max(0.0), high + pad);
        let height = 80 + 26 * rows.len() as u32;
        svg = plot((1100, height), |root| {
            let count = rows.len() as i32;
            let labels: Vec<String> = rows.iter().map(|r| r.subject.label()).collect();
            let mut chart = ChartBuilder::on(root)
                .caption(
                    "Ratio candidate / base, with its interval",
                    ("sans-serif", 16),
                )
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(260)
                .build_cartesian_2d(low..high, -0.6f64..count as f64 - 0.4)?;
            chart
                .configure_mesh()
                .x_desc("ratio (1 = no change; above 1 = slower)")
                .y_labels(rows.len())
                .y_label_formatter(&|y| {
                    let index = count - 1 - y.round() as i32;
                    usize::try_from(index)
                        .ok()
                        .filter(|_| (y - y.round()).abs() < 0.05)
                        .and_then(|index| labels.get(index))
                        .cloned()
                        .unwrap_or_default()
                })
                .disable_y_mesh()
                .light_line_style(WHITE)
                .draw()?;
            chart.draw_series(LineSeries::new(
                [(1.0, -0.6), (1.0, count as f64 - 0.4)],
                BLACK.mix(0.6),
            ))?;
            for (index, row) in rows.iter().enumerate() {
                let y = (count - 1 - index as i32) as f64;
                let ratio = row.ratio.unwrap_or(1.0);
                let color = match row.verdict {
                    Verdict::Slower => RGBColor(192, 22, 27),
                    Verdict::Faster => RGBColor(10, 125, 40),
                    Verdict::NoChange => RGBColor(150, 150, 150),
                    _ => RGBColor(200, 160, 0),
                };
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(1.0f64.min(ratio), y - 0.3), (1.0f64.max(ratio), y + 0.3)],
                    color.mix(0.8).filled(),
                )))?;
                if let Some([l, h]) = row.interval {
                    chart.draw_series(std::iter::once(PathElement::new(
                        [(l, y), (h, y)],
                        BLACK.stroke_width(2),
                    )))?;
                    for end in [l, h] {
                        chart.draw_series(std::iter::once(PathElement::new(
                            [(end, y - 0.2), (end, y + 0.2)],
                            BLACK.stroke_width(2),
                        )))?;
                    }
                }
            }
            Ok(())
        });
    }
    if svg.is_empty() {
        return "<svg id=\"ratios\" viewBox=\"0 0 600 40\"><text x=\"10\" y=\"24\">No row has a ratio.</text></svg>\n".to_owned();
    }
    format!(
        "<div class=\"plots\">{}</div>\n",
        with_id(svg, "ratios", "ratio of each row with its interval")
    )
}

/// The page comparing `runs[0]` (the base) with each other run.
pub fn comparison_page(
    runs: &[&LoadedRun],
    comparisons: &[Comparison],
    options: &Options,
) -> String {
    let mut body = String::new();
    let base = runs[0];
    let _ = writeln!(
        body,
        "<h1>{} compared</h1>\n<p class=\"lead\">base <code>{}</code> against {}</p>",
        esc(&base.profile),
        esc(&base.label()),
        runs[1..]
            .iter()
            .map(|run| format!("<code>{}</code>", esc(&run.label())))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (index, comparison) in comparisons.iter().enumerate() {
        let _ = writeln!(
            body,
            "<h2>{} → {}</h2>",
            esc(&comparison.base.label),
            esc(&comparison.candidate.label)
        );
        let id = if index == 0 {
            "comparison".to_owned()
        } else {
            format!("comparison-{index}")
        };
        let section = comparison_section(comparison, options, &id);
        let section = if index == 0 {
            section
        } else {
            section
                .replace("id=\"differences\"", &format!("id=\"differences-{index}\""))
                .replace("id=\"ratios\"", &format!("id=\"ratios-{index}\""))
        };
        body.push_str(&section);
    }
    body.push_str("<h2>Where the time goes, run by run</h2>\n<div class=\"flames\">\n");
    for (index, run) in runs.iter().enumerate() {
        let _ = writeln!(body, "<div><h3><code>{}</code></h3>", esc(&run.label()));
        let tree = RangeRows::of(&run.typed, Some(&run.dir));
        if let Some(note) = &tree.note {
            let _ = writeln!(body, "<p class=\"note\">{}</p>", esc(note));
        }
        body.push_str(&flame_graph(&tree, index, FLAME_WIDTH_SIDE_BY_SIDE));
        body.push_str("</div>\n");
    }
    body.push_str("</div>\n<section id=\"nsight\">\n<h2>Nsight Systems</h2>\n<p class=\"lead\">GPU time per range from the Nsight Systems reports of these runs appears here once they are analyzed.</p>\n</section>\n");
    document(&format!("{} compared", base.profile), &body)
}

/// A manifest of the tests: the sample run, with what `yaml` gives in
/// place of its keys (statistics filled with zeros where `yaml` gives only
/// the figures a test reads).
#[cfg(test)]
fn typed(yaml: &str) -> Manifest {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_cut_to_their_frames() {
        let svg = "<g><rect width=\"50%\"/><text x=\"1\">a_long_range_name</text></g><g><rect width=\"0.5%\"/><text x=\"2\">hidden</text></g><g><rect width=\"1.5%\"/><text x=\"2\">decode_predictions</text></g>";
        let fitted = fit_labels(svg, 1200);
        assert!(fitted.contains(">a_long_range_name</text>"), "{fitted}");
        assert!(fitted.contains("<text x=\"2\"></text>"), "{fitted}");
        // 1.5 % of 1180 px is 17.7 px: two characters of 7.08 px fit, too few.
        let wide = fit_labels(
            "<rect width=\"5%\"/><text x=\"1\">decode_predictions</text>",
            1200,
        );
        assert_eq!(wide, "<rect width=\"5%\"/><text x=\"1\">decode..</text>");
    }

    #[test]
    fn the_range_table_shows_gpu_medians_on_runs_with_gpu_timing() {
        let manifest = typed(
            "timings:\n  iterations: {count: 2, mean_ns: 200}\n  range_tree:\n    - {path: a, name: a, depth: 0, count: 2, inclusive: {p50_ns: 100, total_ns: 200}, exclusive: {p50_ns: 50, total_ns: 100}, gpu: {count: 2, inclusive: {p50_ns: 7000}, exclusive: {p50_ns: 3000}}}\n    - {path: a/b, name: b, depth: 1, count: 2, inclusive: {p50_ns: 50, total_ns: 100}, exclusive: {p50_ns: 50, total_ns: 100}}\n",
        );
        let table = range_table(&RangeRows::of(&manifest, None), &manifest);
        assert!(
            table.contains("<th>GPU median per call</th><th>GPU self median</th>"),
            "{table}"
        );
        let row_a = table
            .lines()
            .find(|l| l.contains("data-path=\"a\""))
            .unwrap();
        assert!(
            row_a.ends_with(
                "<td data-sort=\"7000\">7.00 µs</td><td data-sort=\"3000\">3.00 µs</td></tr>"
            ),
            "{row_a}"
        );
        let row_b = table
            .lines()
            .find(|l| l.contains("data-path=\"a/b\""))
            .unwrap();
        assert!(
            row_b.ends_with("<td data-sort=\"-1\">-</td><td data-sort=\"-1\">-</td></tr>"),
            "{row_b}"
        );
        // Without GPU timing, no GPU column.
        let host_only = typed(
            "timings:\n  iterations: {count: 2, mean_ns: 200}\n  range_tree:\n    - {path: a, name: a, depth: 0, count: 2, inclusive: {p50_ns: 100, total_ns: 200}, exclusive: {p50_ns: 50, total_ns: 100}}\n",
        );
        assert!(!range_table(&RangeRows::of(&host_only, None), &host_only).contains("GPU"));
    }

    #[test]
    fn the_flame_graph_is_inline_svg_without_script_style_or_shared_ids() {
        let manifest = typed(
            "timings:\n  iterations: {count: 2, mean_ns: 200}\n  range_tree:\n    - {path: a, name: a, depth: 0, count: 2, inclusive: {p50_ns: 100, total_ns: 200}, exclusive: {p50_ns: 50, total_ns: 100}}\n    - {path: a/b, name: b, depth: 1, count: 2, inclusive: {p50_ns: 50, total_ns: 100}, exclusive: {p50_ns: 50, total_ns: 100}}\n",
        );
        let tree = RangeRows::of(&manifest, None);
        assert_eq!(tree.folded(), ["a 100", "a;b 100"]);
        let svg = flame_graph(&tree, 3, 1200);
        assert!(svg.starts_with("<svg class=\"flamegraph\""), "{svg}");
        for absent in [
            "<script",
            "<style",
            "onload",
            "<!--",
            "id=\"frames\"",
            "Search",
        ] {
            assert!(!svg.contains(absent), "{absent}: {svg}");
        }
        assert!(svg.contains("id=\"fg3-frames\""));
        assert!(svg.contains("<title>b (100 ns, 50.00%)</title>"), "{svg}");
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}

#[cfg(test)]
mod size_tests {
    use super::*;
    use profiling_core::timing::SampleSet;
    use std::collections::BTreeMap;

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
        samples.warmup = profiling_core::run_samples::Series::from_set(&set(100, 400_000));
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
}
