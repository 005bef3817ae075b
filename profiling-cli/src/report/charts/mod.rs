//! The charts of the pages, one file each. Plots are drawn by `plotters`
//! into an SVG string; [`framed`] puts what it drew inside an `<svg>` root
//! of ours, so that a chart's id and attributes are written (and escaped)
//! like the rest of the page. The flame graph is drawn by our own code.

pub(super) mod flame;
pub(super) mod histogram;
pub(super) mod lines;
pub(super) mod load_curve;
pub(super) mod load_queueing;
pub(super) mod load_ranges;
pub(super) mod load_tail;
pub(super) mod load_timeline;
pub(super) mod load_waiting;
pub(super) mod memory;
pub(super) mod ratios;
pub(super) mod sweep;
pub(super) mod timeline;

use maud::{html, Markup, PreEscaped};
use plotters::prelude::*;
use profiling_core::driver::load::summary::LoadStep;

pub(super) type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
pub(super) type Drawn = Result<(), Box<dyn std::error::Error>>;

/// What plotters drew on an area of `size`, on a white background.
pub(super) struct Plot {
    size: (u32, u32),
    /// The elements inside plotters' `<svg>` root.
    inner: String,
}

/// Draws a plot of `size` with `draw`; None when drawing failed.
pub(super) fn plot(size: (u32, u32), draw: impl FnOnce(&Area<'_>) -> Drawn) -> Option<Plot> {
    let mut svg = String::new();
    let drawn = {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE)
            .map_err(Into::into)
            .and_then(|()| draw(&root))
            .and_then(|()| root.present().map_err(Into::into))
    };
    drawn.ok()?;
    // plotters writes one root, `<svg ...>` to `</svg>`, around what it drew.
    let start = svg.find('>')? + 1;
    let end = svg.rfind("</svg>")?;
    Some(Plot {
        size,
        inner: svg.get(start..end)?.to_owned(),
    })
}

impl Plot {
    /// What plotters drew, without its root.
    pub(super) fn inner(&self) -> &str {
        &self.inner
    }
}

/// The `<svg>` of `plot`, with its `id` and, for a screen reader, what it
/// shows (`label`).
pub(super) fn framed(plot: &Plot, id: &str, label: &str) -> Markup {
    let (width, height) = plot.size;
    html! {
        svg id=(id) role="img" aria-label=(label) width=(width) height=(height)
            viewBox=(format!("0 0 {width} {height}")) xmlns="http://www.w3.org/2000/svg" {
            (PreEscaped(&plot.inner))
        }
    }
}

/// The `<svg>` of `plot` with `over` drawn on it: marks of ours (lines,
/// points, bars) placed by plotters' coordinates, each carrying what it is
/// as attributes; no id (the figure around it has one).
pub(super) fn framed_under(plot: &Plot, label: &str, over: Markup) -> Markup {
    let (width, height) = plot.size;
    html! {
        svg role="img" aria-label=(label) width=(width) height=(height)
            viewBox=(format!("0 0 {width} {height}")) xmlns="http://www.w3.org/2000/svg" {
            (PreEscaped(&plot.inner))
            (over)
        }
    }
}

/// The stand-in for a chart that has nothing to draw: `text` in a strip
/// `width` wide.
pub(super) fn nothing_to_draw(id: &str, width: u32, text: &str) -> Markup {
    html! {
        svg id=(id) viewBox=(format!("0 0 {width} 40")) {
            text x="10" y="24" { (text) }
        }
    }
}

/// The label of the bar at `y` of a horizontal bar chart whose `count`
/// bars are drawn top down from `labels[0]`: empty between bars.
pub(super) fn bar_label(labels: &[String], count: i32, y: f64) -> String {
    let index = count - 1 - y.round() as i32;
    usize::try_from(index)
        .ok()
        .filter(|_| (y - y.round()).abs() < 0.05)
        .and_then(|index| labels.get(index))
        .cloned()
        .unwrap_or_default()
}

/// A unit for durations up to `max` ns: (divisor, name).
pub(super) fn unit_for(max: u64) -> (f64, &'static str) {
    match max {
        0..=9_999 => (1.0, "ns"),
        10_000..=9_999_999 => (1e3, "µs"),
        10_000_000..=9_999_999_999 => (1e6, "ms"),
        _ => (1e9, "s"),
    }
}

/// One colour per line (Tableau 10); past ten lines, the colours come round
/// again with dashed lines.
pub(in crate::report) const PALETTE: [(u8, u8, u8); 10] = [
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

pub(in crate::report) fn colour(line: usize) -> RGBColor {
    let (r, g, b) = PALETTE[line % PALETTE.len()];
    RGBColor(r, g, b)
}

pub(in crate::report) fn dashed(line: usize) -> bool {
    line / PALETTE.len() % 2 == 1
}

/// `value` in three significant digits at most, without trailing zeros.
pub(in crate::report) fn short(value: f64) -> String {
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

/// `colour` as CSS writes it.
pub(in crate::report) fn css(colour: RGBColor) -> String {
    let RGBColor(r, g, b) = colour;
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// A load step's rate: the one offered, else the one served (a closed
/// loop offers none).
pub(in crate::report) fn load_rate(step: &LoadStep) -> f64 {
    step.offered_qps.unwrap_or(step.served_qps)
}

/// Nanoseconds in milliseconds, the load charts' unit.
pub(in crate::report) fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}
