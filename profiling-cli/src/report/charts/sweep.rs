//! The line charts of a sweep: a quantity's median time against the first
//! swept key, one line per value of the others, the confidence interval
//! of each point as a whisker; linear or log axes labelled at round values
//! whose labels do not overlap.

use std::collections::BTreeMap;

use maud::{html, Markup};
use plotters::coord::ranged1d::{AsRangedCoord, DefaultFormatting, KeyPointHint};
use plotters::prelude::*;

use super::{colour, dashed, plot, short, unit_for, Area, Drawn};
use crate::report::sweep::view::{Chart, Interval, Layout, Quantity, XAxis};

/// A chart's drawing size; two stand side by side on the page.
pub(crate) const CHART_SIZE: (u32, u32) = (600, 340);
/// Room for the y axis's labels and description, and the chart's margin.
const Y_LABEL_AREA: u32 = 70;
const MARGIN: u32 = 14;
/// Room right of the plot for half of its last label.
const RIGHT_MARGIN: u32 = 30;
/// Axis labels are drawn at this size; about this wide per character.
const LABEL_FONT: u32 = 13;
const LABEL_CHAR_WIDTH: f64 = 6.0;

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

/// The `<svg>` of `chart`, with its id, class and what it draws as
/// attributes.
/// `caption` is drawn above the chart, `label` names it for a screen reader.
pub(crate) fn chart_svg(
    chart: &Chart,
    layout: &Layout,
    id: &str,
    (caption, label): (&str, &str),
    confidence: f64,
) -> Markup {
    let drawn: Vec<(usize, f64, Interval)> = chart.drawn().collect();
    let (measure, range) = match &chart.quantity {
        Quantity::Pass => ("pass", None),
        Quantity::Call => ("call", None),
        Quantity::Range(name) => ("range", Some(name)),
    };
    let per = if chart.per_record {
        "per-record"
    } else {
        "time"
    };
    let lines = chart
        .lines
        .iter()
        .filter(|l| l.iter().any(Option::is_some))
        .count();
    let log_x = matches!(layout.axis, XAxis::Numeric { log: true });
    let plot = if drawn.is_empty() {
        None
    } else {
        plot(CHART_SIZE, |root| {
            draw_chart(root, chart, layout, &drawn, caption, confidence)
        })
    };
    let (width, height) = match &plot {
        Some(_) => CHART_SIZE,
        None => (CHART_SIZE.0, 60),
    };
    html! {
        svg id=(id) class="sweep-chart" data-quantity=(measure) data-range=[range]
            data-measure=(per) data-lines=(lines) data-points=(drawn.len())
            data-log-x=(log_x) data-log-y=(chart.log) role="img" aria-label=(label)
            width=[plot.as_ref().map(|_| width)] height=[plot.as_ref().map(|_| height)]
            viewBox=(format!("0 0 {width} {height}"))
            xmlns=[plot.as_ref().map(|_| "http://www.w3.org/2000/svg")] {
            @match &plot {
                Some(plot) => { (maud::PreEscaped(plot.inner())) }
                None => { text x="12" y="34" { (label) ": no completed point measured this." } }
            }
        }
    }
}

/// The time axis of a chart: its unit, its bounds and where it is labelled.
struct TimeAxis {
    /// Nanoseconds per unit: 1 on a log axis, whose labels each carry
    /// their own unit.
    divisor: f64,
    unit: &'static str,
    low: f64,
    high: f64,
    ticks: Vec<f64>,
}

/// The time axis for `drawn`: from 0, or on a log scale around the
/// intervals; a linear one in one unit, a log one in ns.
fn time_axis(chart: &Chart, drawn: &[(usize, f64, Interval)]) -> TimeAxis {
    let high_ns = drawn.iter().map(|d| d.2.high).fold(0.0, f64::max);
    let (divisor, unit) = if chart.log {
        (1.0, "")
    } else {
        unit_for(high_ns.round() as u64)
    };
    let top = high_ns / divisor;
    let low_ns = drawn
        .iter()
        .map(|d| if d.2.low > 0.0 { d.2.low } else { d.2.median })
        .fold(f64::INFINITY, f64::min);
    let (low, high) = if chart.log {
        (low_ns / divisor / 1.2, top * 1.2)
    } else {
        (0.0, if top > 0.0 { top * 1.08 } else { 1.0 })
    };
    let ticks = if chart.log {
        log_ticks(low, high)
    } else {
        linear_ticks(high)
    };
    TimeAxis {
        divisor,
        unit,
        low,
        high,
        ticks,
    }
}

/// What the x axis (the swept key) and the time axis say they show.
fn axis_descriptions(chart: &Chart, layout: &Layout, unit: &str) -> (String, String) {
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
    (x_desc, y_desc)
}

/// Draws `chart` on `root`: the swept values along x with a little room
/// either side, labelled where their labels fit, and the time axis up.
fn draw_chart(
    root: &Area<'_>,
    chart: &Chart,
    layout: &Layout,
    drawn: &[(usize, f64, Interval)],
    caption: &str,
    confidence: f64,
) -> Drawn {
    let y = time_axis(chart, drawn);
    let plot_width = f64::from(CHART_SIZE.0 - Y_LABEL_AREA - MARGIN - RIGHT_MARGIN);
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
    let (x_desc, y_desc) = axis_descriptions(chart, layout, y.unit);
    let caption = format!("{caption}: median, {:.0} % interval", confidence * 100.0);
    let mesh = Mesh {
        x_desc: &x_desc,
        y_desc: &y_desc,
        x_label: &x_label,
        chart,
        divisor: y.divisor,
        y_floor: y.low,
    };
    match &layout.axis {
        XAxis::Numeric { log: true } => {
            let (low, high) = (x_low / 1.25, x_high * 1.25);
            let ticks = thinned(&layout.ticks, plot_width, |v| {
                (v / low).ln() / (high / low).ln()
            });
            let x = (low..high).log_scale().ticked(ticks);
            mesh.build_and_draw(root, &caption, x, y)
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
            mesh.build_and_draw(root, &caption, (low..high).ticked(ticks), y)
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
    /// Builds the chart on `root` under `caption`, with `x` across and the
    /// time axis `y` up (log or linear as the chart is), and draws on it.
    fn build_and_draw<X>(&self, root: &Area<'_>, caption: &str, x: X, y: TimeAxis) -> Drawn
    where
        X: Ranged<ValueType = f64, FormatOption = DefaultFormatting>,
    {
        let mut builder = ChartBuilder::on(root);
        builder
            .caption(caption, ("sans-serif", 16))
            .margin(MARGIN)
            .margin_right(RIGHT_MARGIN)
            .x_label_area_size(46)
            .y_label_area_size(Y_LABEL_AREA);
        if self.chart.log {
            let y_axis = (y.low..y.high).log_scale().ticked(y.ticks);
            self.draw(builder.build_cartesian_2d(x, y_axis)?)
        } else {
            self.draw(builder.build_cartesian_2d(x, (y.low..y.high).ticked(y.ticks))?)
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
