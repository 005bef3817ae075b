//! `history.html`: a target's history, one chart per range path and per
//! machine and config. Commits run along the x axis in first-parent
//! order; each commit's value is a point that links to the page of its
//! newest run, with the interval of its median where the store has one;
//! each change found is a dashed line where it began, labelled with its
//! size. Drawn as inline SVG by this module (no plotting library: the
//! points are links), so the page opens from disk anywhere.

use std::path::Path;

use maud::{html, Markup};
use profiling_history::series::CommitPoint;
use profiling_history::{Change, Metric, Series};

use super::{facts, layout, Fact};

/// The page's file name, beside the target's runs.
pub const HISTORY_PAGE_FILE: &str = "history.html";

/// What the page shows.
pub struct HistoryView<'a> {
    pub target: &'a str,
    pub metric: Metric,
    /// The store, as it is named (a URL with its password masked).
    pub store: &'a str,
    pub groups: Vec<HistoryGroup<'a>>,
    /// Every change found, in any group.
    pub changes: &'a [Change],
    /// Where the page is written: links to run pages under it are
    /// relative.
    pub page_dir: &'a Path,
}

/// The series of one machine and config.
pub struct HistoryGroup<'a> {
    pub machine: &'a str,
    /// The machine in words (its host, CPU, cores).
    pub machine_text: String,
    pub config: &'a str,
    pub series: &'a [(&'a Series, Vec<CommitPoint>)],
}

/// The drawing's size, and the margins of the plot inside it.
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 240.0;
const LEFT: f64 = 76.0;
const RIGHT: f64 = 36.0;
const TOP: f64 = 22.0;
const BOTTOM: f64 = 46.0;

/// The page.
pub fn history_page(view: &HistoryView<'_>) -> String {
    let title = format!("{}: {} per commit", view.target, view.metric.name());
    let body = html! {
        h1 { (title) }
        (facts(&[
            Fact::text("store", view.store),
            Fact::text("metric", view.metric.name()),
            Fact::text("changes", format!(
                "{} found (E-Divisive means, p <= 0.01, three or more commits a side)",
                view.changes.len()
            )),
        ]))
        @for (g, group) in view.groups.iter().enumerate() {
            section.history-group id=(format!("group-{g}")) data-machine=(group.machine) data-config=(group.config) {
                h2 { "machine " (short_hash(group.machine)) ", config " (short_hash(group.config)) }
                p.note { (group.machine_text) }
                @for (k, (series, points)) in group.series.iter().enumerate() {
                    (chart(view, group, g, k, series, points))
                }
            }
        }
        @if !view.changes.is_empty() {
            h2 { "Changes, newest first" }
            table #changes {
                thead { tr { th { "commit" } th { "range" } th { "change" } th { "before" } th { "after" } th { "p" } th { "moved with it" } } }
                tbody {
                    @for change in view.changes {
                        tr data-path=(change.path) data-commit=(change.commit.as_deref().unwrap_or("")) {
                            td { (change.commit.as_deref().map_or("-", |c| &c[..c.len().min(10)])) }
                            td { (change.path) }
                            td data-sort=(change.ratio) { (percent(change.ratio)) " [" (percent(change.low)) ", " (percent(change.high)) "]" }
                            td data-sort=(change.before) { (value_text(view.metric, change.before)) }
                            td data-sort=(change.after) { (value_text(view.metric, change.after)) }
                            td data-sort=(change.p_value) { (format!("{:.3}", change.p_value)) }
                            td { (change.also.join(", ")) }
                        }
                    }
                }
            }
        }
    };
    layout(&title, body)
}

fn short_hash(hash: &str) -> &str {
    &hash[..hash.len().min(16)]
}

fn percent(ratio: f64) -> String {
    format!("{:+.1} %", (ratio - 1.0) * 100.0)
}

fn value_text(metric: Metric, value: u64) -> String {
    if metric.is_bytes() {
        profiling_core::data::human_bytes(value)
    } else {
        crate::summary::format_ns(value)
    }
}

/// One range path's chart.
fn chart(
    view: &HistoryView<'_>,
    group: &HistoryGroup<'_>,
    g: usize,
    k: usize,
    series: &Series,
    points: &[CommitPoint],
) -> Markup {
    let id = format!("chart-{g}-{k}");
    let changes: Vec<&Change> = view
        .changes
        .iter()
        .filter(|c| {
            c.path == series.path
                && c.part == series.part
                && c.machine == group.machine
                && c.config == group.config
        })
        .collect();
    let intervals = |p: &CommitPoint| {
        // The interval of the run whose value the commit shows, when the
        // commit has one run.
        match p.runs.as_slice() {
            [run] => run.low.zip(run.high),
            _ => None,
        }
    };
    let lowest = points
        .iter()
        .map(|p| intervals(p).map_or(p.value, |(low, _)| low.min(p.value)))
        .min()
        .unwrap_or(0) as f64;
    let highest = points
        .iter()
        .map(|p| intervals(p).map_or(p.value, |(_, high)| high.max(p.value)))
        .max()
        .unwrap_or(1) as f64;
    let pad = ((highest - lowest) * 0.08).max(highest * 0.01).max(1.0);
    let (y_min, y_max) = ((lowest - pad).max(0.0), highest + pad);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |i: usize| {
        if points.len() <= 1 {
            LEFT + plot_w / 2.0
        } else {
            LEFT + plot_w * i as f64 / (points.len() - 1) as f64
        }
    };
    let y = |v: f64| TOP + plot_h * (1.0 - (v - y_min) / (y_max - y_min));
    let line: Vec<String> = points
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{:.1},{:.1}", x(i), y(p.value as f64)))
        .collect();
    let ticks: Vec<f64> = (0..=4)
        .map(|t| y_min + (y_max - y_min) * f64::from(t) / 4.0)
        .collect();
    // Every commit's label when they fit, else every n-th.
    let every = points.len().div_ceil(16).max(1);
    let caption = if series.part == "pass" {
        "the measured pass".to_owned()
    } else {
        series.path.clone()
    };
    html! {
        figure.history-chart id=(id) data-path=(series.path) data-part=(series.part) {
            figcaption { (caption) " — " (view.metric.name()) " per commit, " (points.len()) " commits" }
            svg xmlns="http://www.w3.org/2000/svg" width=(WIDTH) height=(HEIGHT)
                viewBox=(format!("0 0 {WIDTH} {HEIGHT}")) role="img"
                aria-label=(format!("{} of {} per commit", view.metric.name(), series.path)) {
                @for tick in &ticks {
                    line.grid x1=(LEFT) x2=(WIDTH - RIGHT) y1=(format!("{:.1}", y(*tick))) y2=(format!("{:.1}", y(*tick))) stroke="#ddd" {}
                    text x=(LEFT - 6.0) y=(format!("{:.1}", y(*tick) + 4.0)) text-anchor="end" font-size="11" {
                        (value_text(view.metric, tick.round() as u64))
                    }
                }
                @for (i, point) in points.iter().enumerate() {
                    @if i % every == 0 || i + 1 == points.len() {
                        text.commit-label x=(format!("{:.1}", x(i))) y=(HEIGHT - BOTTOM + 16.0) text-anchor="middle" font-size="10" {
                            (point.commit.as_deref().map_or("-", |c| &c[..c.len().min(7)]))
                        }
                    }
                }
                text x=(LEFT + plot_w / 2.0) y=(HEIGHT - 6.0) text-anchor="middle" font-size="11" { "commits, first parent, oldest first" }
                @for change in &changes {
                    @let at = x(change.index) - if change.index > 0 { (x(change.index) - x(change.index - 1)) / 2.0 } else { 0.0 };
                    line.change x1=(format!("{at:.1}")) x2=(format!("{at:.1}")) y1=(TOP) y2=(HEIGHT - BOTTOM)
                        stroke=(if change.is_regression() { "#c0392b" } else { "#1e8449" })
                        stroke-dasharray="5,4" data-commit=(change.commit.as_deref().unwrap_or(""))
                        data-ratio=(format!("{:.4}", change.ratio)) {}
                    text.change-label x=(format!("{:.1}", at + 4.0)) y=(TOP - 6.0) font-size="11"
                        fill=(if change.is_regression() { "#c0392b" } else { "#1e8449" }) {
                        (percent(change.ratio))
                    }
                }
                polyline points=(line.join(" ")) fill="none" stroke="#2e86c1" stroke-width="1.5" {}
                @for (i, point) in points.iter().enumerate() {
                    @if let Some((low, high)) = intervals(point) {
                        line.interval x1=(format!("{:.1}", x(i))) x2=(format!("{:.1}", x(i)))
                            y1=(format!("{:.1}", y(low as f64))) y2=(format!("{:.1}", y(high as f64)))
                            stroke="#2e86c1" stroke-width="1" {}
                    }
                    @let circle = html! {
                        circle.point cx=(format!("{:.1}", x(i))) cy=(format!("{:.1}", y(point.value as f64))) r="3.5"
                            fill="#2e86c1" data-commit=(point.commit.as_deref().unwrap_or(""))
                            data-value=(point.value) {
                            title { (tooltip(view.metric, point)) }
                        }
                    };
                    @match run_page(view.page_dir, point) {
                        Some(href) => a href=(href) { (circle) },
                        None => (circle),
                    }
                }
            }
        }
    }
}

fn tooltip(metric: Metric, point: &CommitPoint) -> String {
    let runs: Vec<&str> = point.runs.iter().map(|r| r.run_id.as_str()).collect();
    format!(
        "{}: {} ({} {}: {})",
        point
            .commit
            .as_deref()
            .map_or("-", |c| &c[..c.len().min(10)]),
        value_text(metric, point.value),
        runs.len(),
        if runs.len() == 1 { "run" } else { "runs" },
        runs.join(", ")
    )
}

/// The page of the commit's newest run, when it is on disk: relative to
/// `page_dir` when under it, else its absolute path.
fn run_page(page_dir: &Path, point: &CommitPoint) -> Option<String> {
    let run = point.runs.last()?;
    let page = run.run_dir.join(super::REPORT_FILE);
    if !page.is_file() {
        return None;
    }
    let href = match page.strip_prefix(page_dir) {
        Ok(relative) => relative.to_string_lossy().into_owned(),
        Err(_) => page.to_string_lossy().into_owned(),
    };
    // Each path segment as a URL segment.
    Some(
        href.split('/')
            .map(|segment| {
                segment
                    .bytes()
                    .map(|b| match b {
                        b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                            (b as char).to_string()
                        }
                        _ => format!("%{b:02X}"),
                    })
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("/"),
    )
}
