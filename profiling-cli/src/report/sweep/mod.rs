//! `sweep.html`: the page of a sweep, beside its `sweep.yaml`. A line chart
//! per measured quantity (the pass, the call, every range) of its median
//! time, with the confidence interval as whiskers, against the first swept
//! key; where the sweep is batched, time per record beside it. Then a table
//! of every point.

pub(in crate::report) mod view;

use std::path::{Path, PathBuf};

use maud::{html, Markup};
use plotters::style::RGBColor;
use profiling_compare::one_line;

use super::charts::sweep::chart_svg;
use super::charts::{colour, dashed, short};
use super::{facts, layout as page_layout, missing_cell, write_page, Fact};
use crate::summary::format_ns;
use profiling_core::driver::sweep::document::{
    Estimate, PointResult, PointStatus, SweepDocument, SweepStatus,
};
use view::{charts, number, quantities, value_of, Chart, Layout, Quantity, XAxis};

/// The page's file name, beside `sweep.yaml`.
pub const SWEEP_PAGE_FILE: &str = "sweep.html";

/// Writes the page of `document` into `sweep_dir` as `sweep.html`.
pub fn write_sweep_page(sweep_dir: &Path, document: &SweepDocument) -> std::io::Result<PathBuf> {
    write_page(&sweep_dir.join(SWEEP_PAGE_FILE), &sweep_page(document))
}

/// A chart's id on the page.
fn chart_id(chart: &Chart, index: usize) -> String {
    let base = match &chart.quantity {
        Quantity::Pass => "chart-pass".to_owned(),
        Quantity::Call => "chart-call".to_owned(),
        Quantity::Range(_) => format!("chart-range-{index}"),
    };
    if chart.per_record {
        base + "-per-record"
    } else {
        base
    }
}

fn measure_words(chart: &Chart, batched: bool) -> &'static str {
    match (&chart.quantity, chart.per_record) {
        (_, true) => "time per record",
        (Quantity::Pass, false) => "time per pass",
        (Quantity::Call, false) if batched => "time per call (one batch)",
        (Quantity::Call, false) => "time per call",
        (Quantity::Range(_), false) => "inclusive time per opening",
    }
}

fn status_word(status: PointStatus) -> &'static str {
    match status {
        PointStatus::Pending => "pending",
        PointStatus::Running => "running",
        PointStatus::Completed => "completed",
        PointStatus::Failed => "failed",
    }
}

fn sweep_status_word(status: SweepStatus) -> &'static str {
    match status {
        SweepStatus::Running => "running",
        SweepStatus::Completed => "completed",
        SweepStatus::Interrupted => "interrupted",
        SweepStatus::Stopped => "stopped",
    }
}

/// A point's values, `key = value` joined.
fn point_values(document: &SweepDocument, point: &PointResult) -> String {
    let keys: Vec<&str> = if document.grid.is_empty() {
        point
            .values
            .keys()
            .filter_map(serde_yaml::Value::as_str)
            .collect::<Vec<_>>()
    } else {
        document.grid.iter().map(|a| a.key.as_str()).collect()
    };
    keys.iter()
        .map(|key| {
            format!(
                "{key} = {}",
                value_of(point, key).map_or("-".to_owned(), one_line)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Records per second, in three digits and a prefix.
fn rate(per_second: f64) -> String {
    match per_second {
        r if r >= 1e9 => format!("{} G/s", short(r / 1e9)),
        r if r >= 1e6 => format!("{} M/s", short(r / 1e6)),
        r if r >= 1e3 => format!("{} k/s", short(r / 1e3)),
        r => format!("{} /s", short(r)),
    }
}

/// A cell with a median and its interval under it; sorted by the median.
fn estimate_cell(estimate: Option<&Estimate>) -> Markup {
    match estimate {
        Some(e) => html! {
            td data-sort=(e.median_ns) {
                (format_ns(e.median_ns)) br;
                span.interval { (format_ns(e.low_ns)) " – " (format_ns(e.high_ns)) }
            }
        },
        None => missing_cell(),
    }
}

fn ns_cell(ns: Option<f64>) -> Markup {
    match ns.filter(|v| v.is_finite()) {
        Some(ns) => html! {
            td data-sort=(ns) {
                @if ns < 1.0 { (short(ns)) " ns" } @else { (format_ns(ns.round() as u64)) }
            }
        },
        None => missing_cell(),
    }
}

/// How many points ended each way.
fn points_summary(document: &SweepDocument) -> String {
    let count = |status| {
        document
            .points
            .iter()
            .filter(|p| p.status == status)
            .count()
    };
    let mut points = format!(
        "{} completed, {} failed, {} pending",
        count(PointStatus::Completed),
        count(PointStatus::Failed),
        count(PointStatus::Pending)
    );
    let running = count(PointStatus::Running);
    if running > 0 {
        points.push_str(&format!(", {running} running"));
    }
    points.push_str(&format!(" (of {})", document.points.len()));
    points
}

/// The swept keys and their values.
fn grid(document: &SweepDocument) -> Markup {
    html! {
        @for (index, axis) in document.grid.iter().enumerate() {
            @if index > 0 { (if document.zip { " with " } else { " × " }) }
            code { (axis.key) } ": "
            (axis.values.iter().map(one_line).collect::<Vec<_>>().join(", "))
        }
        @if document.grid.len() > 1 {
            @if document.zip { " (side by side, " code { "--zip" } ")" } @else { " (every combination)" }
        }
    }
}

fn header(document: &SweepDocument) -> Markup {
    let config = document
        .config_path
        .as_ref()
        .map_or("built-in defaults".to_owned(), |p| p.display().to_string());
    let rows = [
        Fact::text("profile", &document.profile_name),
        Fact::text("sweep", &document.sweep_id),
        Fact::text("status", sweep_status_word(document.status)),
        Fact {
            key: "target",
            value: html! { code { (document.target) } },
        },
        Fact {
            key: "grid",
            value: grid(document),
        },
        Fact::text("points", points_summary(document)),
        Fact::text("config", config),
        Fact {
            key: "command",
            value: html! { code { (document.command_line) } },
        },
        Fact::text("started", &document.started_at),
        Fact::text("finished", document.finished_at.as_deref().unwrap_or("-")),
        Fact {
            key: "files",
            value: html! { a href="sweep.yaml" { "sweep.yaml" } },
        },
    ];
    let resume = html! { code { "profile-cli sweep --resume " (document.sweep_id) } };
    html! {
        (facts(&rows))
        @match document.status {
            SweepStatus::Running => p.note { "The sweep is running, or the process running it was stopped without a word: the points not completed are not drawn." },
            SweepStatus::Interrupted => p.note { "The sweep was interrupted: " (resume) " runs the rest." },
            SweepStatus::Stopped => p.note { "The sweep stopped at a failed point (" code { "--fail-fast" } "): " (resume) " runs the rest." },
            SweepStatus::Completed => {},
        }
    }
}

/// The legend of the lines, one entry per line: the same colours in every
/// chart.
fn legend(layout: &Layout) -> Markup {
    if layout.lines.len() < 2 {
        return html! {};
    }
    html! {
        ul.legend id="sweep-legend" {
            @for (index, line) in layout.lines.iter().enumerate() {
                @let RGBColor(r, g, b) = colour(index);
                @let stroke = format!("rgb({r},{g},{b})");
                li data-series=(line.label) {
                    svg width="28" height="10" aria-hidden="true" {
                        line x1="0" y1="5" x2="28" y2="5" stroke=(stroke) stroke-width="2"
                            stroke-dasharray=[dashed(index).then_some("6 4")] {}
                        circle cx="14" cy="5" r="3" fill=(stroke) {}
                    }
                    (line.label)
                }
            }
        }
    }
}

fn quantity_title(quantity: &Quantity) -> Markup {
    match quantity {
        Quantity::Pass => html! { "Pass" },
        Quantity::Call => html! { "Call" },
        Quantity::Range(name) => html! { "Range " code { (name) } },
    }
}

/// What the charts show, in a sentence or a few.
fn charts_lead(document: &SweepDocument, layout: &Layout) -> Markup {
    html! {
        p.lead {
            (format!("The median of each completed point, its {:.0} % interval as a whisker.", document.confidence * 100.0))
            @match &layout.axis {
                XAxis::Numeric { log: true } => " The swept values span more than tenfold: a log scale.",
                XAxis::Categories(_) => " The swept values are not numbers: evenly spaced, in grid order.",
                XAxis::Numeric { log: false } => {},
            }
            " Times start at zero, or are on a log scale where their medians span more than tenfold."
            @if layout.lines.len() > 1 {
                " One line per "
                @if document.grid.len() == 2 {
                    "value of " code { (document.grid[1].key) }
                } @else {
                    "combination of the other keys"
                }
                "."
            }
            @if document.batched() { " Batched: time per record beside each time." }
            @if document.points.iter().any(|p| p.status != PointStatus::Completed) {
                " Points that did not complete are gaps, listed below."
            }
        }
    }
}

/// The charts, a figure per quantity (its time, and its time per record
/// where the sweep is batched).
fn charts_section(document: &SweepDocument, layout: &Layout) -> Markup {
    let charts = charts(document, layout);
    let batched = document.batched();
    // The charts of each quantity, with the index of its range among the
    // ranges.
    let mut figures: Vec<(usize, Vec<&Chart>)> = Vec::new();
    let mut ranges = 0;
    for chart in &charts {
        match figures.last_mut() {
            Some((_, group)) if chart.per_record => group.push(chart),
            _ => {
                let index = ranges;
                if let Quantity::Range(_) = chart.quantity {
                    ranges += 1;
                }
                figures.push((index, vec![chart]));
            }
        }
    }
    html! {
        h2 id="charts-title" { "Time against " code { (layout.key) } }
        (charts_lead(document, layout))
        section id="charts" {
            (legend(layout))
            div class=(if batched { "figures pairs" } else { "figures" }) {
                @for (range_index, group) in &figures {
                    @let quantity = match &group[0].quantity {
                        Quantity::Pass => "pass".to_owned(),
                        Quantity::Call => "call".to_owned(),
                        Quantity::Range(name) => format!("range:{name}"),
                    };
                    figure.sweep data-quantity=(quantity) {
                        figcaption { (quantity_title(&group[0].quantity)) }
                        div.plots {
                            @for chart in group {
                                (figure_chart(chart, layout, *range_index, document))
                            }
                        }
                    }
                }
            }
        }
    }
}

/// One chart of a figure, with its id, caption and label.
fn figure_chart(
    chart: &Chart,
    layout: &Layout,
    range_index: usize,
    document: &SweepDocument,
) -> Markup {
    let id = chart_id(chart, range_index);
    // The range's name is the figure's caption (it may be long); the
    // drawing says what it measures.
    let words = measure_words(chart, document.batched());
    let mut caption = words[..1].to_uppercase();
    caption.push_str(&words[1..]);
    let label = match &chart.quantity {
        Quantity::Range(name) => format!("{name}: {words}"),
        Quantity::Pass => format!("pass: {words}"),
        Quantity::Call => format!("call: {words}"),
    };
    chart_svg(chart, layout, &id, (&caption, &label), document.confidence)
}

fn missing_section(document: &SweepDocument) -> Markup {
    let missing: Vec<&PointResult> = document
        .points
        .iter()
        .filter(|p| p.status != PointStatus::Completed)
        .collect();
    if missing.is_empty() {
        return html! {};
    }
    html! {
        section id="missing" {
            h2 { "Points not drawn" }
            ul id="missing-points" {
                @for point in missing {
                    @let status = status_word(point.status);
                    li data-point=(point.point) {
                        code { (point_values(document, point)) } ": "
                        span class=(format!("status-{status}")) { (status) }
                        @if let Some(error) = &point.error { ": " (error) }
                    }
                }
            }
        }
    }
}

/// `text` with a line break allowed after each `.` and `/` (long config
/// keys and range paths in column headers).
fn breakable(text: &str) -> Markup {
    html! {
        @for (index, part) in text.split_inclusive(['.', '/']).enumerate() {
            @if index > 0 { wbr; }
            (part)
        }
    }
}

/// One row of the points table.
fn point_row(
    document: &SweepDocument,
    point: &PointResult,
    ranges: &[String],
    batch_column: bool,
) -> Markup {
    let status = status_word(point.status);
    let linked = point.run_dir.is_some() && point.status == PointStatus::Completed;
    html! {
        tr data-point=(point.point) data-status=(status) {
            td data-sort=(point.index) {
                @if linked { a href=(format!("{}/report.html", point.point)) { (point.point) } }
                @else { (point.point) }
            }
            @for axis in &document.grid {
                @let value = value_of(point, &axis.key);
                td data-sort=[value.and_then(number)] { (value.map_or("-".to_owned(), one_line)) }
            }
            td class=(format!("status-{status}")) title=[point.error.as_ref()] { (status) }
            @if batch_column { td data-sort=(point.batch_size) { (point.batch_size) } }
            (estimate_cell(point.pass.as_ref()))
            (estimate_cell(point.call.as_ref()))
            (ns_cell(point.time_per_record_ns))
            @match point.records_per_second.filter(|r| r.is_finite()) {
                Some(r) => td data-sort=(r) { (rate(r)) },
                None => (missing_cell()),
            }
            @for name in ranges {
                @match point.ranges.iter().find(|r| &r.name == name) {
                    Some(range) => {
                        @let e = &range.inclusive;
                        td data-sort=(e.median_ns) title=(format!("{} – {}", format_ns(e.low_ns), format_ns(e.high_ns))) {
                            (format_ns(e.median_ns))
                        }
                    },
                    None => (missing_cell()),
                }
            }
        }
    }
}

fn points_table(document: &SweepDocument) -> Markup {
    let ranges: Vec<String> = quantities(document)
        .into_iter()
        .filter_map(|q| match q {
            Quantity::Range(name) => Some(name),
            _ => None,
        })
        .collect();
    // The batch of each point, unless it is one of the keys or always 1.
    let batch_column = document.batched()
        && !document
            .grid
            .iter()
            .any(|axis| matches!(axis.key.as_str(), "workload.batch_size" | "batch_size"));
    html! {
        h2 id="points-title" { "Points" }
        p.lead { "Every point in grid order: the pass and call medians with their interval, each range's median per opening (hover for its interval); click a column to sort." }
        div.scroll {
            table id="points" class="sortable" {
                thead {
                    tr {
                        th { "point" }
                        @for axis in &document.grid { th { (breakable(&axis.key)) } }
                        th { "status" }
                        @if batch_column { th { "batch" } }
                        th { "pass" } th { "call" } th { "per record" } th { "records/s" }
                        @for name in &ranges { th title=(name) { (breakable(name)) } }
                    }
                }
                tbody {
                    @for point in &document.points {
                        (point_row(document, point, &ranges, batch_column))
                    }
                }
            }
        }
    }
}

/// The page of a sweep: its header, a chart per quantity, the points that
/// were not drawn, and the table of every point.
pub fn sweep_page(document: &SweepDocument) -> String {
    let layout = Layout::of(document);
    let points = document.points.len();
    let body = html! {
        h1 { (document.profile_name) " sweep " span.mono { (document.sweep_id) } }
        p.lead {
            "target " code { (document.target) } ", "
            (points) " point" (if points == 1 { "" } else { "s" }) ", "
            (sweep_status_word(document.status))
        }
        (header(document))
        (charts_section(document, &layout))
        (missing_section(document))
        (points_table(document))
    };
    page_layout(
        &format!("{} sweep {}", document.profile_name, document.sweep_id),
        body,
    )
}

#[cfg(test)]
mod tests {
    use super::view::spans_more_than_tenfold;
    use super::*;
    use crate::report::charts::PALETTE;
    use profiling_core::driver::sweep::document::{Axis, RangeEstimate, SWEEP_SCHEMA_VERSION};
    use serde_yaml::Mapping;
    use serde_yaml::Value;
    use std::path::PathBuf;

    fn estimate(median_ns: u64) -> Estimate {
        Estimate {
            median_ns,
            low_ns: median_ns * 95 / 100,
            high_ns: median_ns * 106 / 100,
            samples: 21,
        }
    }

    /// A completed point: `pass_ns` per pass of `records` records in calls
    /// of `batch` records, and each range's median, opened once per call.
    pub(crate) fn completed(pass_ns: u64, batch: u32, ranges: &[(&str, u64)]) -> PointResult {
        let records = 8u64;
        let calls = records.div_ceil(u64::from(batch));
        PointResult {
            index: 0,
            point: String::new(),
            values: Mapping::new(),
            status: PointStatus::Completed,
            run_dir: Some(PathBuf::from("/runs/sweep/p")),
            error: None,
            batch_size: batch,
            records_per_pass: Some(records),
            pass: Some(estimate(pass_ns)),
            call: Some(estimate(pass_ns / calls)),
            time_per_record_ns: Some(pass_ns as f64 / records as f64),
            records_per_second: Some(records as f64 * 1e9 / pass_ns as f64),
            ranges: ranges
                .iter()
                .map(|&(name, median)| RangeEstimate {
                    name: name.to_owned(),
                    inclusive: estimate(median),
                    calls_per_pass: calls as f64,
                    time_per_record_ns: Some(median as f64 * calls as f64 / records as f64),
                })
                .collect(),
            memory: None,
        }
    }

    pub(crate) fn not_run(status: PointStatus, error: Option<&str>) -> PointResult {
        PointResult {
            status,
            run_dir: None,
            error: error.map(str::to_owned),
            records_per_pass: None,
            pass: None,
            call: None,
            time_per_record_ns: None,
            records_per_second: None,
            ranges: Vec::new(),
            ..completed(0, 1, &[])
        }
    }

    /// A sweep over `grid` (each key with its values as a YAML list), its
    /// points in grid order (the last key fastest) as `point` makes them
    /// from their index and values.
    pub(crate) fn sweep(
        grid: &[(&str, &str)],
        mut point: impl FnMut(usize, &[Value]) -> PointResult,
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
            .map(|(index, values)| {
                let mut result = point(index, values);
                result.index = index;
                result.point = format!("{index:03}");
                result.values = grid
                    .iter()
                    .zip(values)
                    .map(|(axis, value)| (Value::from(axis.key.clone()), value.clone()))
                    .collect();
                result
            })
            .collect();
        SweepDocument {
            schema_version: SWEEP_SCHEMA_VERSION,
            sweep_id: "sweep-1".to_owned(),
            profile_name: "detection".to_owned(),
            target: "busy-wait".to_owned(),
            config_path: None,
            command_line: "profile-cli sweep detection".to_owned(),
            started_at: "2025-01-01T00:00:00Z".to_owned(),
            finished_at: None,
            status: SweepStatus::Completed,
            zip: false,
            confidence: 0.95,
            grid,
            points,
        }
    }

    fn as_u32(value: &Value) -> u32 {
        value.as_u64().unwrap() as u32
    }

    /// A batch sweep over 1..32: 8 failed, 32 pending; the ranges scale
    /// with the batch.
    fn batch_sweep() -> SweepDocument {
        sweep(
            &[("workload.batch_size", "[1, 2, 4, 8, 16, 32]")],
            |_, values| match as_u32(&values[0]) {
                // Failed after it measured something: still not drawn.
                8 => PointResult {
                    status: PointStatus::Failed,
                    error: Some("out of memory".to_owned()),
                    ..completed(900_000, 8, &[("decode", 2_400)])
                },
                32 => not_run(PointStatus::Pending, None),
                batch => {
                    let b = u64::from(batch);
                    completed(
                        8_000 * 100 + 1_000 * b,
                        batch,
                        &[("decode", 300 * b), ("postprocess", 600 * b), ("a", 5 * b)],
                    )
                }
            },
        )
    }

    fn count(html: &str, needle: &str) -> usize {
        html.matches(needle).count()
    }

    #[test]
    fn a_key_given_one_value_splits_no_line_and_is_not_the_x_axis() {
        let document = sweep(
            &[("iterations", "[30]"), ("workload.batch_size", "[1, 2, 4]")],
            |_, values| completed(1000 * values[1].as_u64().unwrap(), 1, &[]),
        );
        let layout = Layout::of(&document);
        assert_eq!(layout.key, "workload.batch_size");
        assert_eq!(layout.lines.len(), 1);
        assert_eq!(layout.lines[0].label, "");
        assert_eq!(layout.lines[0].points.len(), 3);
    }

    #[test]
    fn a_batch_sweep_has_a_time_and_a_per_record_chart_per_quantity() {
        let document = batch_sweep();
        assert!(document.batched());
        let layout = Layout::of(&document);
        assert_eq!(layout.axis, XAxis::Numeric { log: true });
        assert_eq!(layout.lines.len(), 1);
        assert_eq!(
            quantities(&document),
            [
                Quantity::Pass,
                Quantity::Call,
                Quantity::Range("postprocess".to_owned()),
                Quantity::Range("decode".to_owned()),
                Quantity::Range("a".to_owned()),
            ]
        );
        let charts = charts(&document, &layout);
        assert_eq!(charts.len(), 10);
        for chart in &charts {
            // Six points, of which 8 failed and 32 is pending.
            assert_eq!(chart.points_per_line(), [4], "{chart:?}");
        }
        let xs: Vec<f64> = charts[0].lines[0]
            .iter()
            .map(|p| p.map_or(-1.0, |p| p.0))
            .collect();
        assert_eq!(xs, [1.0, 2.0, 4.0, -1.0, 16.0, -1.0]);
        // Time per record: the call (batch of 4 at 4 records) by 4, the
        // range by its openings per record.
        let call_per_record = &charts[3];
        assert_eq!(
            (call_per_record.quantity.clone(), call_per_record.per_record),
            (Quantity::Call, true)
        );
        let at_4 = call_per_record.lines[0][2].unwrap().1;
        let call_4 = document.points[2].call.unwrap();
        assert_eq!(at_4.median, call_4.median_ns as f64 / 4.0);
        assert_eq!(at_4.high, call_4.high_ns as f64 / 4.0);
        let decode_per_record = charts[7].lines[0][2].unwrap().1;
        assert_eq!(
            decode_per_record.median,
            document.points[2].ranges[0].time_per_record_ns.unwrap()
        );

        let html = sweep_page(&document);
        assert_eq!(count(&html, "class=\"sweep-chart\""), 10);
        assert_eq!(count(&html, "data-measure=\"per-record\""), 5);
        for name in ["postprocess", "decode", "a"] {
            assert_eq!(
                count(
                    &html,
                    &format!("data-quantity=\"range\" data-range=\"{name}\"")
                ),
                2,
                "{name}"
            );
        }
        assert_eq!(count(&html, "data-points=\"4\""), 10);
        // The charts in order of the ranges' largest median.
        let at = |needle: &str| html.find(needle).unwrap();
        assert!(at("data-range=\"postprocess\"") < at("data-range=\"decode\""));
        assert!(at("data-range=\"decode\"") < at("data-range=\"a\""));
        assert!(html.contains("1 failed, 1 pending"), "{html}");
    }

    #[test]
    fn failed_and_pending_points_leave_gaps_and_are_listed_and_in_the_table() {
        let document = batch_sweep();
        let layout = Layout::of(&document);
        let pass = &charts(&document, &layout)[0];
        assert!(pass.lines[0][3].is_none() && pass.lines[0][5].is_none());
        let html = sweep_page(&document);
        let table = &html[html.find("<table id=\"points\"").unwrap()..];
        assert_eq!(count(table, "<tr data-point="), 6);
        assert!(table.contains("<tr data-point=\"003\" data-status=\"failed\">"));
        assert!(table.contains("<tr data-point=\"005\" data-status=\"pending\">"));
        assert!(table.contains("title=\"out of memory\">failed</td>"));
        let missing = &html[html.find("<ul id=\"missing-points\">").unwrap()..];
        let missing = &missing[..missing.find("</ul>").unwrap()];
        assert_eq!(count(missing, "<li "), 2);
        assert!(missing.contains("<code>workload.batch_size = 8</code>: <span class=\"status-failed\">failed</span>: out of memory"), "{missing}");
        // A completed row links its point's run page; a failed one does not.
        assert!(table.contains("<a href=\"000/report.html\">000</a>"));
        assert!(!table.contains("003/report.html"));
    }

    #[test]
    fn log_axes_only_where_the_values_span_more_than_tenfold() {
        assert!(!spans_more_than_tenfold(10.0, 100.0));
        assert!(spans_more_than_tenfold(10.0, 100.5));
        assert!(!spans_more_than_tenfold(0.0, 100.0));
        let axis = |values: &str| {
            Layout::of(&sweep(&[("data_source.record_count", values)], |_, _| {
                completed(1_000, 1, &[])
            }))
            .axis
        };
        assert_eq!(axis("[10, 50, 100]"), XAxis::Numeric { log: false });
        assert_eq!(axis("[100, 10, 50]"), XAxis::Numeric { log: false });
        assert_eq!(axis("[10, 50, 101]"), XAxis::Numeric { log: true });
        assert_eq!(axis("[0, 5, 500]"), XAxis::Numeric { log: false });
        // The time axis: on the medians, each chart on its own.
        let document = sweep(&[("target.parameters.size", "[1, 2, 3]")], |_, v| {
            let size = v[0].as_u64().unwrap();
            completed(
                1_000 * size,
                1,
                &[("flat", 500), ("steep", 10u64.pow(size as u32))],
            )
        });
        let layout = Layout::of(&document);
        let charts = charts(&document, &layout);
        let log = |quantity: Quantity| charts.iter().find(|c| c.quantity == quantity).unwrap().log;
        assert!(!log(Quantity::Pass), "3x");
        assert!(!log(Quantity::Range("flat".to_owned())));
        assert!(log(Quantity::Range("steep".to_owned())), "100x");
        let html = sweep_page(&document);
        assert!(html.contains("data-range=\"steep\" data-measure=\"time\" data-lines=\"1\" data-points=\"3\" data-log-x=\"false\" data-log-y=\"true\""), "{html}");
        assert!(html.contains("data-range=\"flat\" data-measure=\"time\" data-lines=\"1\" data-points=\"3\" data-log-x=\"false\" data-log-y=\"false\""));
        // Exactly tenfold stays linear.
        let tenfold = sweep(&[("target.parameters.size", "[1, 10]")], |_, v| {
            completed(1_000 * v[0].as_u64().unwrap(), 1, &[])
        });
        assert!(!super::charts(&tenfold, &Layout::of(&tenfold))[0].log);
    }

    #[test]
    fn two_keys_draw_one_line_per_value_of_the_second_with_a_legend() {
        let document = sweep(
            &[
                ("workload.batch_size", "[1, 2, 4]"),
                ("target.parameters.input_size", "[224, 320, 640]"),
            ],
            |index, values| {
                if index == 4 {
                    return not_run(PointStatus::Failed, Some("boom"));
                }
                let b = values[0].as_u64().unwrap();
                let size = values[1].as_u64().unwrap();
                completed(b * size * 100, b as u32, &[("forward", b * size * 90)])
            },
        );
        let layout = Layout::of(&document);
        let labels: Vec<&str> = layout.lines.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "target.parameters.input_size = 224",
                "target.parameters.input_size = 320",
                "target.parameters.input_size = 640"
            ]
        );
        let charts = charts(&document, &layout);
        // Point 4 is batch 2 at 320.
        assert_eq!(charts[0].points_per_line(), [3, 2, 3]);
        let html = sweep_page(&document);
        let legend = &html[html
            .find("<ul class=\"legend\" id=\"sweep-legend\">")
            .unwrap()..];
        let legend = &legend[..legend.find("</ul>").unwrap()];
        assert_eq!(count(legend, "<li data-series="), 3);
        assert!(legend.contains("<li data-series=\"target.parameters.input_size = 640\">"));
        assert!(html.contains("data-lines=\"3\" data-points=\"8\""));
        // Each line its own colour, in the legend and on the chart.
        for (r, g, b) in &PALETTE[..3] {
            assert!(legend.contains(&format!("stroke=\"rgb({r},{g},{b})\"")));
            assert!(
                html.contains(&format!("stroke=\"#{r:02X}{g:02X}{b:02X}\"")),
                "#{r:02X}{g:02X}{b:02X}"
            );
        }
        // One key, one line: no legend.
        assert!(!sweep_page(&batch_sweep()).contains("sweep-legend"));
    }

    #[test]
    fn three_keys_draw_one_line_per_combination_of_the_others() {
        let document = sweep(
            &[
                ("a", "[1, 2]"),
                ("device", "[cpu, cuda]"),
                ("c", "[1, 2, 3]"),
            ],
            |_, _| completed(1_000, 1, &[]),
        );
        let layout = Layout::of(&document);
        assert_eq!(layout.lines.len(), 6);
        assert_eq!(layout.lines[0].label, "device = cpu, c = 1");
        assert_eq!(layout.lines[5].label, "device = cuda, c = 3");
        assert!(layout.lines.iter().all(|l| l.points.len() == 2));
        // Zipped, the keys move together: one line.
        let mut zipped = sweep(&[("a", "[1, 2]"), ("c", "[3, 4]")], |_, _| {
            completed(1_000, 1, &[])
        });
        zipped.zip = true;
        zipped.points = vec![zipped.points[0].clone(), zipped.points[3].clone()];
        let layout = Layout::of(&zipped);
        assert_eq!(layout.lines.len(), 1);
        assert_eq!(layout.lines[0].points.len(), 2);
    }

    #[test]
    fn values_that_are_not_numbers_stand_evenly_spaced_as_categories() {
        let document = sweep(
            &[(
                "data_source.image_shape",
                "[[640, 640], [224, 224], [1280, 1280]]",
            )],
            |index, _| completed(1_000 + 7_000 * index as u64, 1, &[]),
        );
        let layout = Layout::of(&document);
        assert_eq!(
            layout.axis,
            XAxis::Categories(vec![
                "[640, 640]".to_owned(),
                "[224, 224]".to_owned(),
                "[1280, 1280]".to_owned()
            ])
        );
        let xs: Vec<f64> = layout.lines[0].points.iter().map(|p| p.0).collect();
        assert_eq!(xs, [0.0, 1.0, 2.0]);
        let html = sweep_page(&document);
        for label in ["[640, 640]", "[224, 224]", "[1280, 1280]"] {
            assert!(html.contains(&format!(">\n{label}\n</text>")), "{label}");
        }
        let devices = sweep(&[("device", "[cpu, \"cuda:0\"]")], |_, _| {
            completed(1_000, 1, &[])
        });
        assert_eq!(
            Layout::of(&devices).axis,
            XAxis::Categories(vec!["cpu".to_owned(), "cuda:0".to_owned()])
        );
    }

    #[test]
    fn range_names_and_values_are_escaped() {
        let document = sweep(&[("device", "[\"<cpu>\"]")], |_, _| {
            completed(1_000, 1, &[("<script>alert(1)</script> & co", 500)])
        });
        let html = sweep_page(&document);
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(!html.contains("<cpu>"));
        assert!(html.contains("Range <code>&lt;script&gt;alert(1)&lt;/script&gt; &amp; co</code>"));
        assert!(html.contains("data-range=\"&lt;script&gt;alert(1)&lt;/script&gt; &amp; co\""));
        assert!(html.contains("<th title=\"&lt;script&gt;alert(1)&lt;/script&gt; &amp; co\">"));
        assert!(html.contains("<td>&lt;cpu&gt;</td>"));
    }

    #[test]
    fn a_sweep_with_no_completed_point_says_so_in_each_chart() {
        let mut document = batch_sweep();
        for point in &mut document.points {
            *point = PointResult {
                values: point.values.clone(),
                ..not_run(PointStatus::Pending, None)
            };
        }
        document.status = SweepStatus::Interrupted;
        let html = sweep_page(&document);
        assert_eq!(count(&html, "no completed point measured this"), 4);
        assert!(html.contains("profile-cli sweep --resume sweep-1"));
        assert!(html.contains("0 completed, 0 failed, 6 pending (of 6)"));
    }

    #[test]
    fn the_page_is_written_beside_sweep_yaml() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_sweep_page(dir.path(), &batch_sweep()).unwrap();
        assert_eq!(path, dir.path().join("sweep.html"));
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .starts_with("<!DOCTYPE html>"));
    }

    #[test]
    fn a_range_of_zero_time_gets_an_axis_from_zero_to_one_ns() {
        let document = sweep(&[("target.parameters.size", "[1, 2]")], |_, _| {
            completed(1_000, 1, &[("empty", 0)])
        });
        let html = sweep_page(&document);
        let chart = &html[html.find("data-range=\"empty\"").unwrap()..];
        let chart = &chart[..chart.find("</svg>").unwrap()];
        assert!(chart.contains("data-points=\"2\" data-log-x=\"false\" data-log-y=\"false\""));
        assert!(chart.contains("median, ns"), "{chart}");
        assert!(chart.contains(">\n0.8\n</text>"), "{chart}");
    }
}
