//! A line chart of points against an axis from 0, the shape of every load
//! chart: plotters draws the frame (the axes, their labels and
//! descriptions); the lines, their points, the legend and a bound are ours,
//! placed by plotters' coordinates, so that each says what it is
//! (`data-name`, `class="bound"`, a tooltip per point).

use maud::{html, Markup};
use plotters::prelude::*;

use super::{colour, css, framed_under, nothing_to_draw, plot, short};

/// The drawing's width, and its height without the legend.
const SIZE: (u32, u32) = (640, 300);
/// The height of a line of the legend, above the plot.
const LEGEND_LINE: u32 = 14;

/// One point of a line.
pub(in crate::report) struct Point {
    pub x: f64,
    pub y: f64,
    /// Drawn filled; hollow says the point missed what the chart checks
    /// (the bound).
    pub filled: bool,
}

impl Point {
    pub(in crate::report) fn at(x: f64, y: f64) -> Point {
        Point { x, y, filled: true }
    }
}

/// A line and its name, as the legend and its `data-name` say it.
pub(in crate::report) struct Line {
    pub name: String,
    pub points: Vec<Point>,
}

/// A horizontal line across the chart: a bound the values are held to.
pub(in crate::report) struct Bound {
    pub y: f64,
    pub label: String,
}

impl Bound {
    /// The p99 bound of a load, in ms.
    pub(in crate::report) fn p99(ms: f64) -> Bound {
        Bound {
            y: ms,
            label: format!("p99 bound {ms} ms"),
        }
    }
}

/// A chart: its figure's `id` and caption, its axes' descriptions, its
/// lines and its bound.
pub(in crate::report) struct LineChart<'a> {
    pub id: &'a str,
    pub caption: &'a str,
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    pub lines: Vec<Line>,
    pub bound: Option<Bound>,
}

/// Where plotters' axes put the lines' points and the bound's ends, in
/// pixels.
#[derive(Default)]
struct Placed {
    lines: Vec<Vec<(i32, i32)>>,
    bound: Option<((i32, i32), (i32, i32))>,
}

/// `chart` as a `<figure>` with its caption and its drawing.
pub(in crate::report) fn line_chart(chart: &LineChart<'_>) -> Markup {
    let (mut x_max, mut y_max) = (0.0f64, 0.0f64);
    for point in chart.lines.iter().flat_map(|line| &line.points) {
        x_max = x_max.max(point.x);
        y_max = y_max.max(point.y);
    }
    if let Some(bound) = &chart.bound {
        y_max = y_max.max(bound.y);
    }
    let x_max = if x_max > 0.0 { x_max * 1.05 } else { 1.0 };
    let y_max = if y_max > 0.0 { y_max * 1.1 } else { 1.0 };
    let legend = LEGEND_LINE * chart.lines.len() as u32;
    let mut placed = Placed::default();
    let drawn = plot((SIZE.0, SIZE.1 + legend), |root| {
        let mut context = ChartBuilder::on(root)
            .margin(12)
            .margin_top(12 + legend)
            .margin_right(24)
            .x_label_area_size(44)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
        context
            .configure_mesh()
            .x_desc(chart.x_desc)
            .y_desc(chart.y_desc)
            .x_label_formatter(&|v| short(*v))
            .y_label_formatter(&|v| short(*v))
            .label_style(("sans-serif", 12))
            .axis_desc_style(("sans-serif", 13))
            .light_line_style(WHITE)
            .draw()?;
        placed.lines = chart
            .lines
            .iter()
            .map(|line| {
                line.points
                    .iter()
                    .map(|p| context.backend_coord(&(p.x, p.y)))
                    .collect()
            })
            .collect();
        placed.bound = chart.bound.as_ref().map(|bound| {
            (
                context.backend_coord(&(0.0, bound.y)),
                context.backend_coord(&(x_max, bound.y)),
            )
        });
        Ok(())
    });
    let Some(drawn) = drawn else {
        return html! {
            figure.load id=(chart.id) {
                figcaption { (chart.caption) }
                (nothing_to_draw(&format!("{}-chart", chart.id), SIZE.0, "Nothing could be drawn."))
            }
        };
    };
    let over = html! {
        @if let (Some(bound), Some((from, to))) = (&chart.bound, placed.bound) {
            line.bound x1=(from.0) y1=(from.1) x2=(to.0) y2=(to.1)
                stroke="#d62728" stroke-dasharray="5 4" {}
            text x=(to.0) y=(to.1 - 4) font-size="11" text-anchor="end" fill="#d62728" {
                (bound.label)
            }
        }
        @for (index, (line, at)) in chart.lines.iter().zip(&placed.lines).enumerate() {
            @let stroke = css(colour(index));
            @let points = at.iter().map(|(x, y)| format!("{x},{y}")).collect::<Vec<_>>().join(" ");
            polyline.series data-name=(line.name) points=(points) fill="none"
                stroke=(stroke) stroke-width="1.5" {}
            @for (point, (x, y)) in line.points.iter().zip(at) {
                circle cx=(x) cy=(y) r="3.5" stroke=(stroke)
                    fill=(if point.filled { stroke.as_str() } else { "white" }) {
                    title { (line.name) ": " (short(point.y)) " at " (short(point.x)) }
                }
            }
            @let top = 14 + LEGEND_LINE * index as u32;
            text x="80" y=(top) font-size="12" fill=(stroke) { (line.name) }
        }
    };
    html! {
        figure.load id=(chart.id) {
            figcaption { (chart.caption) }
            (framed_under(&drawn, chart.caption, over))
        }
    }
}
