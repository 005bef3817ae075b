//! `sweep.html`: the page of a sweep, beside its `sweep.yaml`. A line chart
//! per measured quantity (the pass, the call, every range) of its median
//! time, with the confidence interval as whiskers, against the first swept
//! key; where the sweep is batched, time per record beside it. Then a table
//! of every point. Drawn like the run pages (`crate::page`): inline SVG by
//! `plotters`, nothing fetched from anywhere.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::{AsRangedCoord, DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use profiling_compare::one_line;
use serde_yaml::Value;

use super::document::{Estimate, PointResult, PointStatus, SweepDocument, SweepStatus};
use crate::page::{document as html_document, esc, plot, unit_for, write_page, Area, Drawn};
use crate::summary::format_ns;

/// The page's file name, beside `sweep.yaml`.
pub const SWEEP_PAGE_FILE: &str = "sweep.html";

/// A chart's drawing size; two stand side by side on the page.
const CHART_SIZE: (u32, u32) = (600, 340);
/// Room for the y axis's labels and description, and the chart's margin.
const Y_LABEL_AREA: u32 = 70;
const MARGIN: u32 = 14;
/// Room right of the plot for half of its last label.
const RIGHT_MARGIN: u32 = 30;
/// Axis labels are drawn at this size; about this wide per character.
const LABEL_FONT: u32 = 13;
const LABEL_CHAR_WIDTH: f64 = 6.0;

/// One colour per line (Tableau 10); past ten lines, the colours come round
/// again with dashed lines.
const PALETTE: [(u8, u8, u8); 10] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
];

fn colour(line: usize) -> RGBColor {
    let (r, g, b) = PALETTE[line % PALETTE.len()];
    RGBColor(r, g, b)
}

fn dashed(line: usize) -> bool {
    line / PALETTE.len() % 2 == 1
}

/// Writes the page of `document` into `sweep_dir` as `sweep.html`.
pub fn write_sweep_page(sweep_dir: &Path, document: &SweepDocument) -> std::io::Result<PathBuf> {
    write_page(&sweep_dir.join(SWEEP_PAGE_FILE), &sweep_page(document))
}

// ---------------------------------------------------------------------------
// What is drawn: the x axis and the lines, shared by every chart, and each
// chart's points.

/// How the first key's values sit on the x axis.
#[derive(Debug, Clone, PartialEq)]
enum XAxis {
    /// Numbers at their value, on a log scale when `log`.
    Numeric { log: bool },
    /// Anything else (devices, shapes): evenly spaced in grid order,
    /// labelled by their value.
    Categories(Vec<String>),
}

/// The x axis and the lines every chart of a sweep draws.
#[derive(Debug)]
struct Layout {
    /// The key on the x axis: the grid's first.
    key: String,
    axis: XAxis,
    /// The swept values: their positions on the axis and labels, in axis
    /// order.
    ticks: Vec<(f64, String)>,
    lines: Vec<Line>,
}

/// The points of one value of the other keys (or of all the points, when
/// only one key is swept or the keys are zipped), in x order.
#[derive(Debug)]
struct Line {
    /// What the other keys are on this line; empty when there is one line.
    label: String,
    /// (x, index into the document's points).
    points: Vec<(f64, usize)>,
}

/// The value of `key` at `point`.
fn value_of<'a>(point: &'a PointResult, key: &str) -> Option<&'a Value> {
    point.values.get(key)
}

fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64().filter(|v| v.is_finite()),
        _ => None,
    }
}

impl Layout {
    fn of(document: &SweepDocument) -> Layout {
        // A key given one value splits no line: the x axis is the first
        // key that varies, the lines the others that do.
        let varying: Vec<&crate::sweep::document::Axis> = document
            .grid
            .iter()
            .filter(|axis| axis.values.len() > 1)
            .collect();
        let first = varying.first().copied().or(document.grid.first());
        let Some(first) = first else {
            // No grid (a hand-made file): the points side by side.
            let ticks: Vec<(f64, String)> = document
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| (i as f64, p.point.clone()))
                .collect();
            return Layout {
                key: "point".to_owned(),
                axis: XAxis::Categories(ticks.iter().map(|(_, l)| l.clone()).collect()),
                lines: vec![Line {
                    label: String::new(),
                    points: (0..document.points.len()).map(|i| (i as f64, i)).collect(),
                }],
                ticks,
            };
        };
        let numbers: Option<Vec<f64>> = first.values.iter().map(number).collect();
        let mut distinct: Vec<&Value> = Vec::new();
        for value in &first.values {
            if !distinct.contains(&value) {
                distinct.push(value);
            }
        }
        let (axis, ticks) = match numbers.filter(|n| !n.is_empty()) {
            Some(numbers) => {
                let low = numbers.iter().copied().fold(f64::INFINITY, f64::min);
                let high = numbers.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let mut ticks: Vec<(f64, String)> = first
                    .values
                    .iter()
                    .zip(&numbers)
                    .map(|(value, &x)| (x, one_line(value)))
                    .collect();
                ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
                ticks.dedup_by(|a, b| a.0 == b.0);
                let log = spans_more_than_tenfold(low, high);
                (XAxis::Numeric { log }, ticks)
            }
            None => {
                let labels: Vec<String> = distinct.iter().map(|v| one_line(v)).collect();
                let ticks = labels.iter().cloned().enumerate();
                let ticks = ticks.map(|(i, l)| (i as f64, l)).collect();
                (XAxis::Categories(labels), ticks)
            }
        };
        let x_of = |value: &Value| match axis {
            XAxis::Numeric { .. } => number(value),
            XAxis::Categories(_) => distinct.iter().position(|v| *v == value).map(|i| i as f64),
        };
        let others: Vec<&crate::sweep::document::Axis> = if document.zip {
            Vec::new()
        } else {
            varying
                .iter()
                .copied()
                .filter(|axis| axis.key != first.key)
                .collect()
        };
        // One line per combination of the other keys' values, in the order
        // of their values in the grid.
        let mut lines: BTreeMap<Vec<usize>, Line> = BTreeMap::new();
        for (index, point) in document.points.iter().enumerate() {
            let Some(x) = value_of(point, &first.key).and_then(&x_of) else {
                continue;
            };
            let mut order = Vec::with_capacity(others.len());
            let mut label = Vec::with_capacity(others.len());
            for axis in &others {
                let value = value_of(point, &axis.key);
                order.push(
                    value
                        .and_then(|v| axis.values.iter().position(|a| a == v))
                        .unwrap_or(usize::MAX),
                );
                label.push(format!(
                    "{} = {}",
                    axis.key,
                    value.map_or("-".to_owned(), one_line)
                ));
            }
            lines
                .entry(order)
                .or_insert_with(|| Line {
                    label: label.join(", "),
                    points: Vec::new(),
                })
                .points
                .push((x, index));
        }
        let mut lines: Vec<Line> = lines.into_values().collect();
        for line in &mut lines {
            line.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        Layout {
            key: first.key.clone(),
            axis,
            ticks,
            lines,
        }
    }
}

/// True when `high` is more than ten times `low`, both above zero: such
/// values are drawn on a log scale.
fn spans_more_than_tenfold(low: f64, high: f64) -> bool {
    low > 0.0 && high / low > 10.0
}

/// What a chart measures.
#[derive(Debug, Clone, PartialEq)]
enum Quantity {
    Pass,
    Call,
    Range(String),
}

/// A median and its interval, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Interval {
    median: f64,
    low: f64,
    high: f64,
}

impl Interval {
    fn scaled(estimate: &Estimate, factor: f64) -> Option<Interval> {
        factor.is_finite().then_some(Interval {
            median: estimate.median_ns as f64 * factor,
            low: estimate.low_ns as f64 * factor,
            high: estimate.high_ns as f64 * factor,
        })
    }
}

/// One chart: a quantity's time (or time per record) along every line.
#[derive(Debug)]
struct Chart {
    quantity: Quantity,
    per_record: bool,
    /// Per line of the layout, each of its points' x and interval; None
    /// where the point did not complete or did not measure this (a gap).
    lines: Vec<Vec<Option<(f64, Interval)>>>,
    /// The medians span more than a factor of ten.
    log: bool,
}

impl Chart {
    fn drawn(&self) -> impl Iterator<Item = (usize, f64, Interval)> + '_ {
        self.lines.iter().enumerate().flat_map(|(line, points)| {
            points
                .iter()
                .flatten()
                .map(move |&(x, interval)| (line, x, interval))
        })
    }

    /// The number of points drawn on each line.
    #[cfg(test)]
    fn points_per_line(&self) -> Vec<usize> {
        self.lines
            .iter()
            .map(|line| line.iter().flatten().count())
            .collect()
    }
}

/// What `point` measured of `quantity`, per record when `per_record`; None
/// unless it completed.
fn measured(point: &PointResult, quantity: &Quantity, per_record: bool) -> Option<Interval> {
    if point.status != PointStatus::Completed {
        return None;
    }
    let per = |estimate: &Estimate, time_per_record: Option<f64>, fallback: Option<f64>| {
        let factor = if !per_record {
            Some(1.0)
        } else {
            match time_per_record {
                Some(t) if estimate.median_ns > 0 => Some(t / estimate.median_ns as f64),
                _ => fallback,
            }
        };
        factor.and_then(|f| Interval::scaled(estimate, f))
    };
    let records = point.records_per_pass.filter(|&r| r > 0).map(|r| r as f64);
    match quantity {
        Quantity::Pass => {
            let pass = point.pass.as_ref()?;
            per(pass, point.time_per_record_ns, records.map(|r| 1.0 / r))
        }
        Quantity::Call => {
            let call = point.call.as_ref()?;
            per(call, None, Some(1.0 / f64::from(point.batch_size.max(1))))
        }
        Quantity::Range(name) => {
            let range = point.ranges.iter().find(|r| &r.name == name)?;
            per(
                &range.inclusive,
                range.time_per_record_ns,
                records.map(|r| range.calls_per_pass / r),
            )
        }
    }
}

/// The quantities charted: the pass, the call, then every range in order
/// of its largest median.
fn quantities(document: &SweepDocument) -> Vec<Quantity> {
    let mut largest: BTreeMap<&str, u64> = BTreeMap::new();
    for point in document.completed() {
        for range in &point.ranges {
            let entry = largest.entry(range.name.as_str()).or_default();
            *entry = (*entry).max(range.inclusive.median_ns);
        }
    }
    let mut ranges: Vec<(&str, u64)> = largest.into_iter().collect();
    ranges.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    [Quantity::Pass, Quantity::Call]
        .into_iter()
        .chain(
            ranges
                .into_iter()
                .map(|(n, _)| Quantity::Range(n.to_owned())),
        )
        .collect()
}

/// Every chart of the page, in order; with time per record after each
/// quantity's time where the sweep is batched.
fn charts(document: &SweepDocument, layout: &Layout) -> Vec<Chart> {
    let measures: &[bool] = if document.batched() {
        &[false, true]
    } else {
        &[false]
    };
    let mut charts = Vec::new();
    for quantity in quantities(document) {
        for &per_record in measures {
            let lines: Vec<Vec<Option<(f64, Interval)>>> = layout
                .lines
                .iter()
                .map(|line| {
                    line.points
                        .iter()
                        .map(|&(x, index)| {
                            measured(&document.points[index], &quantity, per_record)
                                .map(|interval| (x, interval))
                        })
                        .collect()
                })
                .collect();
            let medians = lines.iter().flatten().flatten().map(|(_, i)| i.median);
            let (low, high) = medians.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), m| {
                (l.min(m), h.max(m))
            });
            charts.push(Chart {
                log: spans_more_than_tenfold(low, high),
                quantity: quantity.clone(),
                per_record,
                lines,
            });
        }
    }
    charts
}

// ---------------------------------------------------------------------------
// Axes: where the labels go.

/// Up to a handful of round values from 0 to `top`.
fn linear_ticks(top: f64) -> Vec<f64> {
    if top.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return vec![0.0];
    }
    let raw = top / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&step| top / step <= 6.0)
        .unwrap_or(10.0 * magnitude);
    (0..)
        .map(|i| i as f64 * step)
        .take_while(|&v| v <= top * (1.0 + 1e-9))
        .collect()
}

/// Round values between `low` and `high` (both above zero) on a log scale:
/// 1-2-5 in each decade (1-2-3-5 on a narrow span), fewer where there are
/// too many.
fn log_ticks(low: f64, high: f64) -> Vec<f64> {
    let first = low.log10().floor() as i32;
    let last = high.log10().ceil() as i32;
    let within = |mantissas: &[f64], every: i32| -> Vec<f64> {
        (first..=last)
            .filter(|decade| decade.rem_euclid(every) == 0)
            .flat_map(|decade| mantissas.iter().map(move |m| m * 10f64.powi(decade)))
            .filter(|&v| v >= low * (1.0 - 1e-9) && v <= high * (1.0 + 1e-9))
            .collect()
    };
    let standard = within(&[1.0, 2.0, 5.0], 1);
    if standard.len() < 3 {
        return within(&[1.0, 2.0, 3.0, 5.0], 1);
    }
    for ticks in [standard, within(&[1.0, 3.0], 1), within(&[1.0], 1)] {
        if ticks.len() <= 8 {
            return ticks;
        }
    }
    let every = ((last - first) / 8).max(1) + 1;
    within(&[1.0], every)
}

/// An axis (linear or log) labelled at the given values and nowhere else.
struct Ticked<R> {
    inner: R,
    ticks: Vec<f64>,
}

trait IntoTicked: AsRangedCoord<Value = f64> {
    fn ticked(self, ticks: Vec<f64>) -> Ticked<Self::CoordDescType> {
        Ticked {
            inner: self.into(),
            ticks,
        }
    }
}

impl<T: AsRangedCoord<Value = f64>> IntoTicked for T {}

impl<R: Ranged<ValueType = f64>> Ranged for Ticked<R> {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }

    fn axis_pixel_range(&self, limit: (i32, i32)) -> std::ops::Range<i32> {
        self.inner.axis_pixel_range(limit)
    }
}

/// `value` in three significant digits at most, without trailing zeros.
fn short(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return "0".to_owned();
    }
    let digits = (2 - value.abs().log10().floor() as i32).max(0) as usize;
    let text = format!("{value:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// The `ticks` whose labels fit along `width` pixels without overlapping
/// (nor running past the chart's right margin), where `position` maps a
/// value to 0..1 along the axis.
fn thinned(ticks: &[(f64, String)], width: f64, position: impl Fn(f64) -> f64) -> Vec<f64> {
    let mut kept: Vec<f64> = Vec::new();
    let mut last_end = f64::NEG_INFINITY;
    for (value, label) in ticks {
        let half = label.chars().count() as f64 * LABEL_CHAR_WIDTH / 2.0 + 4.0;
        let at = position(*value) * width;
        if at - half >= last_end && at + half <= width + f64::from(RIGHT_MARGIN) {
            kept.push(*value);
            last_end = at + half;
        }
    }
    kept
}

/// Every k-th of `ticks` from the first, for the smallest k whose labels
/// do not overlap: evenly spaced categories stay evenly labelled.
fn every_kth(ticks: &[(f64, String)], width: f64, position: impl Fn(f64) -> f64) -> Vec<f64> {
    for k in 1..=ticks.len().max(1) {
        let chosen: Vec<(f64, String)> = ticks.iter().step_by(k).cloned().collect();
        let kept = thinned(&chosen, width, &position);
        if kept.len() == chosen.len() {
            return kept;
        }
    }
    Vec::new()
}

/// A duration of `ns` in the unit that suits it: "500 ns", "2 µs", "1.5 s".
fn duration_label(ns: f64) -> String {
    match ns.abs() {
        v if v >= 1e9 => format!("{} s", short(ns / 1e9)),
        v if v >= 1e6 => format!("{} ms", short(ns / 1e6)),
        v if v >= 1e3 => format!("{} µs", short(ns / 1e3)),
        _ => format!("{} ns", short(ns)),
    }
}

// ---------------------------------------------------------------------------
// Drawing.

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

/// The `<svg>` of `chart`, with its id, class and what it draws as
/// attributes.
/// `caption` is drawn above the chart, `label` names it for a screen reader.
fn chart_svg(
    chart: &Chart,
    layout: &Layout,
    id: &str,
    (caption, label): (&str, &str),
    confidence: f64,
) -> String {
    let drawn: Vec<(usize, f64, Interval)> = chart.drawn().collect();
    let (measure, range) = match &chart.quantity {
        Quantity::Pass => ("pass", String::new()),
        Quantity::Call => ("call", String::new()),
        Quantity::Range(name) => ("range", format!(" data-range=\"{}\"", esc(name))),
    };
    let attributes = format!(
        "<svg id=\"{id}\" class=\"sweep-chart\" data-quantity=\"{measure}\"{range} data-measure=\"{}\" data-lines=\"{}\" data-points=\"{}\" data-log-x=\"{}\" data-log-y=\"{}\" role=\"img\" aria-label=\"{}\" ",
        if chart.per_record { "per-record" } else { "time" },
        chart.lines.iter().filter(|l| l.iter().any(Option::is_some)).count(),
        drawn.len(),
        matches!(layout.axis, XAxis::Numeric { log: true }),
        chart.log,
        esc(label),
    );
    let svg = if drawn.is_empty() {
        String::new()
    } else {
        plot(CHART_SIZE, |root| {
            draw_chart(root, chart, layout, &drawn, caption, confidence)
        })
    };
    if svg.is_empty() {
        let (width, _) = CHART_SIZE;
        return format!(
            "{attributes}viewBox=\"0 0 {width} 60\"><text x=\"12\" y=\"34\">{}: no completed point measured this.</text></svg>\n",
            esc(label)
        );
    }
    svg.replacen("<svg ", &attributes, 1) + "\n"
}

fn draw_chart(
    root: &Area<'_>,
    chart: &Chart,
    layout: &Layout,
    drawn: &[(usize, f64, Interval)],
    caption: &str,
    confidence: f64,
) -> Drawn {
    let high_ns = drawn.iter().map(|d| d.2.high).fold(0.0, f64::max);
    // A linear time axis in one unit; a log one in ns, each label in its own.
    let (divisor, unit) = if chart.log {
        (1.0, "")
    } else {
        unit_for(high_ns.round() as u64)
    };
    let top = high_ns / divisor;
    let plot_width = f64::from(CHART_SIZE.0 - Y_LABEL_AREA - MARGIN - RIGHT_MARGIN);

    // x: the swept values, with a little room either side.
    let tick_values: Vec<f64> = layout.ticks.iter().map(|t| t.0).collect();
    let (x_low, x_high) = (
        tick_values.iter().copied().fold(f64::INFINITY, f64::min),
        tick_values
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max),
    );
    let labels: BTreeMap<u64, String> = layout
        .ticks
        .iter()
        .map(|(v, l)| (v.to_bits(), l.clone()))
        .collect();
    let x_label = |v: &f64| {
        labels
            .get(&v.to_bits())
            .cloned()
            .unwrap_or_else(|| short(*v))
    };
    let x_desc = match layout.axis {
        XAxis::Numeric { log: true } => format!("{} (log scale)", layout.key),
        _ => layout.key.clone(),
    };
    let median = if chart.per_record {
        "median per record"
    } else {
        "median"
    };
    let y_desc = if chart.log {
        format!("{median} (log scale)")
    } else {
        format!("{median}, {unit}")
    };

    // y: from 0, or on a log scale around the intervals.
    let y_low_ns = drawn
        .iter()
        .map(|d| if d.2.low > 0.0 { d.2.low } else { d.2.median })
        .fold(f64::INFINITY, f64::min);
    let (y_low, y_high) = if chart.log {
        (y_low_ns / divisor / 1.2, top * 1.2)
    } else {
        (0.0, if top > 0.0 { top * 1.08 } else { 1.0 })
    };
    let y_ticks = if chart.log {
        log_ticks(y_low, y_high)
    } else {
        linear_ticks(y_high)
    };

    let caption = format!("{caption}: median, {:.0} % interval", confidence * 100.0);
    let mesh = Mesh {
        x_desc: &x_desc,
        y_desc: &y_desc,
        x_label: &x_label,
        chart,
        divisor,
        y_floor: y_low,
    };
    let builder = || {
        let mut builder = ChartBuilder::on(root);
        builder
            .caption(caption.as_str(), ("sans-serif", 16))
            .margin(MARGIN)
            .margin_right(RIGHT_MARGIN)
            .x_label_area_size(46)
            .y_label_area_size(Y_LABEL_AREA);
        builder
    };
    match &layout.axis {
        XAxis::Numeric { log: true } => {
            let (low, high) = (x_low / 1.25, x_high * 1.25);
            let ticks = thinned(&layout.ticks, plot_width, |v| {
                (v / low).ln() / (high / low).ln()
            });
            let x = (low..high).log_scale().ticked(ticks);
            if chart.log {
                let y = (y_low..y_high).log_scale().ticked(y_ticks);
                mesh.draw(builder().build_cartesian_2d(x, y)?)
            } else {
                mesh.draw(builder().build_cartesian_2d(x, (y_low..y_high).ticked(y_ticks))?)
            }
        }
        axis => {
            let (low, high) = match axis {
                XAxis::Categories(_) => (x_low - 0.5, x_high + 0.5),
                _ => {
                    let pad = ((x_high - x_low) * 0.06).max(x_high.abs() * 0.05).max(0.5);
                    (x_low - pad, x_high + pad)
                }
            };
            let position = |v: f64| (v - low) / (high - low);
            let ticks = match axis {
                XAxis::Categories(_) => every_kth(&layout.ticks, plot_width, position),
                _ => thinned(&layout.ticks, plot_width, position),
            };
            let x = (low..high).ticked(ticks);
            if chart.log {
                let y = (y_low..y_high).log_scale().ticked(y_ticks);
                mesh.draw(builder().build_cartesian_2d(x, y)?)
            } else {
                mesh.draw(builder().build_cartesian_2d(x, (y_low..y_high).ticked(y_ticks))?)
            }
        }
    }
}

/// The axes' descriptions and labels, and what is drawn on them.
struct Mesh<'a> {
    x_desc: &'a str,
    y_desc: &'a str,
    x_label: &'a dyn Fn(&f64) -> String,
    chart: &'a Chart,
    /// Nanoseconds per unit of the time axis.
    divisor: f64,
    /// The bottom of the time axis: whiskers stop there.
    y_floor: f64,
}

impl Mesh<'_> {
    fn draw<'a, X, Y>(
        &self,
        mut context: ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    ) -> Drawn
    where
        X: Ranged<ValueType = f64, FormatOption = DefaultFormatting>,
        Y: Ranged<ValueType = f64, FormatOption = DefaultFormatting>,
    {
        context
            .configure_mesh()
            .x_desc(self.x_desc)
            .y_desc(self.y_desc)
            .x_label_formatter(self.x_label)
            .y_label_formatter(&|v| {
                if self.chart.log {
                    duration_label(*v)
                } else {
                    short(*v)
                }
            })
            .label_style(("sans-serif", LABEL_FONT))
            .axis_desc_style(("sans-serif", 14))
            .light_line_style(WHITE)
            .draw()?;
        draw_lines(&mut context, self.chart, self.divisor, self.y_floor)
    }
}

/// Each line through its medians, broken where a point is missing, with a
/// whisker for each point's interval and a marker at its median.
fn draw_lines<'a, X, Y>(
    context: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    chart: &Chart,
    divisor: f64,
    y_floor: f64,
) -> Drawn
where
    X: Ranged<ValueType = f64, FormatOption = DefaultFormatting>,
    Y: Ranged<ValueType = f64, FormatOption = DefaultFormatting>,
{
    let y = |ns: f64| (ns / divisor).max(y_floor);
    for (index, line) in chart.lines.iter().enumerate() {
        let colour = colour(index);
        let style = colour.stroke_width(2);
        for segment in line.split(Option::is_none) {
            let points: Vec<(f64, f64)> = segment
                .iter()
                .flatten()
                .map(|&(x, i)| (x, y(i.median)))
                .collect();
            if points.len() < 2 {
                continue;
            }
            if dashed(index) {
                context.draw_series(DashedLineSeries::new(points, 6, 4, style))?;
            } else {
                context.draw_series(LineSeries::new(points, style))?;
            }
        }
        for &(x, interval) in line.iter().flatten() {
            let whisker = colour.mix(0.8).stroke_width(1);
            context.draw_series(std::iter::once(PathElement::new(
                [(x, y(interval.low)), (x, y(interval.high))],
                whisker,
            )))?;
            for end in [interval.low, interval.high] {
                context.draw_series(std::iter::once(
                    EmptyElement::at((x, y(end))) + PathElement::new([(-4, 0), (4, 0)], whisker),
                ))?;
            }
            context.draw_series(std::iter::once(Circle::new(
                (x, y(interval.median)),
                3,
                colour.filled(),
            )))?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The page.

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
            .filter_map(Value::as_str)
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
fn estimate_cell(estimate: Option<&Estimate>) -> String {
    match estimate {
        Some(e) => format!(
            "<td data-sort=\"{}\">{}<br><span class=\"interval\">{} – {}</span></td>",
            e.median_ns,
            format_ns(e.median_ns),
            format_ns(e.low_ns),
            format_ns(e.high_ns)
        ),
        None => "<td data-sort=\"-1\">-</td>".to_owned(),
    }
}

fn ns_cell(ns: Option<f64>) -> String {
    match ns.filter(|v| v.is_finite()) {
        Some(ns) => format!(
            "<td data-sort=\"{ns}\">{}</td>",
            if ns < 1.0 {
                format!("{} ns", short(ns))
            } else {
                format_ns(ns.round() as u64)
            }
        ),
        None => "<td data-sort=\"-1\">-</td>".to_owned(),
    }
}

fn header(document: &SweepDocument) -> String {
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
        let _ = write!(points, ", {running} running");
    }
    let _ = write!(points, " (of {})", document.points.len());
    let mut grid = String::new();
    for (index, axis) in document.grid.iter().enumerate() {
        if index > 0 {
            grid.push_str(if document.zip { " with " } else { " × " });
        }
        let _ = write!(
            grid,
            "<code>{}</code>: {}",
            esc(&axis.key),
            esc(&axis
                .values
                .iter()
                .map(one_line)
                .collect::<Vec<_>>()
                .join(", "))
        );
    }
    if document.grid.len() > 1 {
        grid.push_str(if document.zip {
            " (side by side, <code>--zip</code>)"
        } else {
            " (every combination)"
        });
    }
    let plain = |text: &str| esc(text);
    let rows = [
        ("profile", plain(&document.profile_name)),
        ("sweep", plain(&document.sweep_id)),
        ("status", plain(sweep_status_word(document.status))),
        ("target", format!("<code>{}</code>", esc(&document.target))),
        ("grid", grid),
        ("points", plain(&points)),
        (
            "config",
            plain(
                &document
                    .config_path
                    .as_ref()
                    .map_or("built-in defaults".to_owned(), |p| p.display().to_string()),
            ),
        ),
        (
            "command",
            format!("<code>{}</code>", esc(&document.command_line)),
        ),
        ("started", plain(&document.started_at)),
        (
            "finished",
            plain(document.finished_at.as_deref().unwrap_or("-")),
        ),
        ("files", "<a href=\"sweep.yaml\">sweep.yaml</a>".to_owned()),
    ];
    let mut html = String::from("<dl class=\"facts\">\n");
    for (key, value) in rows {
        let _ = writeln!(html, "<dt>{key}</dt><dd>{value}</dd>");
    }
    html.push_str("</dl>\n");
    let note = match document.status {
        SweepStatus::Running => Some(
            "The sweep is running, or the process running it was stopped without a word: the points not completed are not drawn.".to_owned(),
        ),
        SweepStatus::Interrupted => Some(format!(
            "The sweep was interrupted: <code>profile-cli sweep --resume {}</code> runs the rest.",
            esc(&document.sweep_id)
        )),
        SweepStatus::Stopped => Some(format!(
            "The sweep stopped at a failed point (<code>--fail-fast</code>): <code>profile-cli sweep --resume {}</code> runs the rest.",
            esc(&document.sweep_id)
        )),
        SweepStatus::Completed => None,
    };
    if let Some(note) = note {
        let _ = writeln!(html, "<p class=\"note\">{note}</p>");
    }
    html
}

/// The legend of the lines, one entry per line: the same colours in every
/// chart.
fn legend(layout: &Layout) -> String {
    if layout.lines.len() < 2 {
        return String::new();
    }
    let mut html = String::from("<ul class=\"legend\" id=\"sweep-legend\">\n");
    for (index, line) in layout.lines.iter().enumerate() {
        let RGBColor(r, g, b) = colour(index);
        let dash = if dashed(index) {
            " stroke-dasharray=\"6 4\""
        } else {
            ""
        };
        let _ = writeln!(
            html,
            "<li data-series=\"{label}\"><svg width=\"28\" height=\"10\" aria-hidden=\"true\"><line x1=\"0\" y1=\"5\" x2=\"28\" y2=\"5\" stroke=\"rgb({r},{g},{b})\" stroke-width=\"2\"{dash}/><circle cx=\"14\" cy=\"5\" r=\"3\" fill=\"rgb({r},{g},{b})\"/></svg>{label}</li>",
            label = esc(&line.label)
        );
    }
    html.push_str("</ul>\n");
    html
}

fn quantity_title(quantity: &Quantity) -> String {
    match quantity {
        Quantity::Pass => "Pass".to_owned(),
        Quantity::Call => "Call".to_owned(),
        Quantity::Range(name) => format!("Range <code>{}</code>", esc(name)),
    }
}

/// The charts, a figure per quantity.
fn charts_section(document: &SweepDocument, layout: &Layout) -> String {
    let charts = charts(document, layout);
    let batched = document.batched();
    let mut html = String::new();
    let _ = writeln!(
        html,
        "<h2 id=\"charts-title\">Time against <code>{}</code></h2>",
        esc(&layout.key)
    );
    let mut lead = format!(
        "The median of each completed point, its {:.0} % interval as a whisker.",
        document.confidence * 100.0
    );
    match &layout.axis {
        XAxis::Numeric { log: true } => {
            lead.push_str(" The swept values span more than tenfold: a log scale.")
        }
        XAxis::Categories(_) => {
            lead.push_str(" The swept values are not numbers: evenly spaced, in grid order.")
        }
        XAxis::Numeric { log: false } => {}
    }
    lead.push_str(
        " Times start at zero, or are on a log scale where their medians span more than tenfold.",
    );
    if layout.lines.len() > 1 {
        let _ = write!(
            lead,
            " One line per {}.",
            if document.grid.len() == 2 {
                format!("value of <code>{}</code>", esc(&document.grid[1].key))
            } else {
                "combination of the other keys".to_owned()
            }
        );
    }
    if batched {
        lead.push_str(" Batched: time per record beside each time.");
    }
    if document
        .points
        .iter()
        .any(|p| p.status != PointStatus::Completed)
    {
        lead.push_str(" Points that did not complete are gaps, listed below.");
    }
    let _ = writeln!(html, "<p class=\"lead\">{lead}</p>");
    html.push_str("<section id=\"charts\">\n");
    html.push_str(&legend(layout));
    let _ = writeln!(
        html,
        "<div class=\"figures{}\">",
        if batched { " pairs" } else { "" }
    );
    let (mut next_range, mut range_index) = (0, 0);
    let mut open = false;
    for chart in &charts {
        if !chart.per_record {
            if let Quantity::Range(_) = chart.quantity {
                range_index = next_range;
                next_range += 1;
            }
            if open {
                html.push_str("</div></figure>\n");
            }
            let quantity = match &chart.quantity {
                Quantity::Pass => "pass".to_owned(),
                Quantity::Call => "call".to_owned(),
                Quantity::Range(name) => format!("range:{}", esc(name)),
            };
            let _ = write!(
                html,
                "<figure class=\"sweep\" data-quantity=\"{quantity}\"><figcaption>{}</figcaption><div class=\"plots\">",
                quantity_title(&chart.quantity)
            );
            open = true;
        }
        let id = chart_id(chart, range_index);
        // The range's name is the figure's caption (it may be long); the
        // drawing says what it measures.
        let words = measure_words(chart, batched);
        let mut caption = words[..1].to_uppercase();
        caption.push_str(&words[1..]);
        let label = match &chart.quantity {
            Quantity::Range(name) => format!("{name}: {words}"),
            Quantity::Pass => format!("pass: {words}"),
            Quantity::Call => format!("call: {words}"),
        };
        html.push_str(&chart_svg(
            chart,
            layout,
            &id,
            (&caption, &label),
            document.confidence,
        ));
    }
    if open {
        html.push_str("</div></figure>\n");
    }
    html.push_str("</div>\n</section>\n");
    html
}

fn missing_section(document: &SweepDocument) -> String {
    let missing: Vec<&PointResult> = document
        .points
        .iter()
        .filter(|p| p.status != PointStatus::Completed)
        .collect();
    if missing.is_empty() {
        return String::new();
    }
    let mut html = String::from(
        "<section id=\"missing\">\n<h2>Points not drawn</h2>\n<ul id=\"missing-points\">\n",
    );
    for point in missing {
        let _ = write!(
            html,
            "<li data-point=\"{}\"><code>{}</code>: <span class=\"status-{status}\">{status}</span>",
            esc(&point.point),
            esc(&point_values(document, point)),
            status = status_word(point.status)
        );
        if let Some(error) = &point.error {
            let _ = write!(html, ": {}", esc(error));
        }
        html.push_str("</li>\n");
    }
    html.push_str("</ul>\n</section>\n");
    html
}

/// `text` escaped, with a line break allowed after each `.` and `/` (long
/// config keys and range paths in column headers).
fn breakable(text: &str) -> String {
    esc(text).replace('.', ".<wbr>").replace('/', "/<wbr>")
}

fn points_table(document: &SweepDocument) -> String {
    let ranges: Vec<String> = quantities(document)
        .into_iter()
        .filter_map(|q| match q {
            Quantity::Range(name) => Some(name),
            _ => None,
        })
        .collect();
    let mut html = String::from("<h2 id=\"points-title\">Points</h2>\n<p class=\"lead\">Every point in grid order: the pass and call medians with their interval, each range's median per opening (hover for its interval); click a column to sort.</p>\n<div class=\"scroll\">\n<table id=\"points\" class=\"sortable\">\n<thead><tr><th>point</th>");
    for axis in &document.grid {
        let _ = write!(html, "<th>{}</th>", breakable(&axis.key));
    }
    // The batch of each point, unless it is one of the keys or always 1.
    let batch_column = document.batched()
        && !document
            .grid
            .iter()
            .any(|axis| matches!(axis.key.as_str(), "workload.batch_size" | "batch_size"));
    html.push_str("<th>status</th>");
    if batch_column {
        html.push_str("<th>batch</th>");
    }
    html.push_str("<th>pass</th><th>call</th><th>per record</th><th>records/s</th>");
    for name in &ranges {
        let _ = write!(html, "<th title=\"{}\">{}</th>", esc(name), breakable(name));
    }
    html.push_str("</tr></thead>\n<tbody>\n");
    for point in &document.points {
        let status = status_word(point.status);
        let name = if point.run_dir.is_some() && point.status == PointStatus::Completed {
            format!("<a href=\"{0}/report.html\">{0}</a>", esc(&point.point))
        } else {
            esc(&point.point)
        };
        let _ = write!(
            html,
            "<tr data-point=\"{}\" data-status=\"{status}\"><td data-sort=\"{}\">{name}</td>",
            esc(&point.point),
            point.index
        );
        for axis in &document.grid {
            let value = value_of(point, &axis.key);
            let sort = value
                .and_then(number)
                .map_or(String::new(), |n| format!(" data-sort=\"{n}\""));
            let _ = write!(
                html,
                "<td{sort}>{}</td>",
                esc(&value.map_or("-".to_owned(), one_line))
            );
        }
        let title = point
            .error
            .as_ref()
            .map_or(String::new(), |e| format!(" title=\"{}\"", esc(e)));
        let _ = write!(
            html,
            "<td class=\"status-{status}\"{title}>{status}</td>{0}{1}{2}{3}",
            if batch_column {
                format!("<td data-sort=\"{0}\">{0}</td>", point.batch_size)
            } else {
                String::new()
            },
            estimate_cell(point.pass.as_ref()),
            estimate_cell(point.call.as_ref()),
            ns_cell(point.time_per_record_ns),
        );
        match point.records_per_second.filter(|r| r.is_finite()) {
            Some(r) => {
                let _ = write!(html, "<td data-sort=\"{r}\">{}</td>", rate(r));
            }
            None => html.push_str("<td data-sort=\"-1\">-</td>"),
        }
        for name in &ranges {
            match point.ranges.iter().find(|r| &r.name == name) {
                Some(range) => {
                    let e = &range.inclusive;
                    let _ = write!(
                        html,
                        "<td data-sort=\"{}\" title=\"{} – {}\">{}</td>",
                        e.median_ns,
                        format_ns(e.low_ns),
                        format_ns(e.high_ns),
                        format_ns(e.median_ns)
                    );
                }
                None => html.push_str("<td data-sort=\"-1\">-</td>"),
            }
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</tbody>\n</table>\n</div>\n");
    html
}

/// The page of a sweep: its header, a chart per quantity, the points that
/// were not drawn, and the table of every point.
pub fn sweep_page(document: &SweepDocument) -> String {
    let layout = Layout::of(document);
    let mut body = String::new();
    let _ = writeln!(
        body,
        "<h1>{} sweep <span class=\"mono\">{}</span></h1>\n<p class=\"lead\">target <code>{}</code>, {} point{}, {}</p>",
        esc(&document.profile_name),
        esc(&document.sweep_id),
        esc(&document.target),
        document.points.len(),
        if document.points.len() == 1 { "" } else { "s" },
        sweep_status_word(document.status),
    );
    body.push_str(&header(document));
    body.push_str(&charts_section(document, &layout));
    body.push_str(&missing_section(document));
    body.push_str(&points_table(document));
    html_document(
        &format!("{} sweep {}", document.profile_name, document.sweep_id),
        &body,
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sweep::document::{Axis, RangeEstimate, SWEEP_SCHEMA_VERSION};
    use serde_yaml::Mapping;

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
    fn ticks_are_round_and_their_labels_do_not_overlap() {
        assert_eq!(linear_ticks(7.3), [0.0, 2.0, 4.0, 6.0]);
        assert_eq!(linear_ticks(0.0), [0.0]);
        assert_eq!(log_ticks(1.2, 15.0), [2.0, 5.0, 10.0]);
        assert_eq!(log_ticks(1.2, 6.0), [2.0, 3.0, 5.0]);
        assert_eq!(
            log_ticks(0.8, 120.0),
            [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]
        );
        assert!(log_ticks(0.5, 5e9).len() <= 10);
        assert_eq!(short(2.5), "2.5");
        assert_eq!(short(1000.0), "1000");
        assert_eq!(short(0.125), "0.125");
        assert_eq!(short(12.34), "12.3");
        let ticks: Vec<(f64, String)> = [500.0, 510.0, 700.0, 1000.0]
            .iter()
            .map(|&v| (v, short(v)))
            .collect();
        // 500 px for 500..1000: 510 sits 10 px from 500, too close.
        assert_eq!(
            thinned(&ticks, 500.0, |v| (v - 500.0) / 500.0),
            [500.0, 700.0, 1000.0]
        );
        // Ten categories whose labels need 1.4 slots each: every second.
        let categories: Vec<(f64, String)> =
            (0..10).map(|i| (f64::from(i), "x".repeat(9))).collect();
        assert_eq!(
            every_kth(&categories, 500.0, |v| (v + 0.5) / 10.0),
            [0.0, 2.0, 4.0, 6.0, 8.0]
        );
        assert_eq!(duration_label(2_000.0), "2 µs");
        assert_eq!(duration_label(500.0), "500 ns");
        assert_eq!(duration_label(1.5e9), "1.5 s");
        assert_eq!(duration_label(0.2), "0.2 ns");
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
