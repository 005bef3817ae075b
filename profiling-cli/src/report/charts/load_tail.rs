//! The p99 tail of a load as bars: each part of a query's time (the
//! queueing, each range's own time, the time outside every range), its
//! median over all queries beside its mean over the slowest, the owner
//! first. Plotters draws the axes; the bars are ours, each saying its part
//! (`data-part`) and which of the two it is (`class`).

use maud::{html, Markup};
use plotters::prelude::*;
use profiling_core::driver::load::summary::TailBreakdown;

use super::{bar_label, framed_under, ms, nothing_to_draw, plot};

const WIDTH: u32 = 640;
/// The height of a part's row.
const ROW: u32 = 26;
const MEDIAN_FILL: &str = "#9ecae1";
const TAIL_FILL: &str = "#08519c";

/// A part's bars, in pixels: the median's and the tail mean's corners.
type Bars = [((i32, i32), (i32, i32)); 2];

pub(in crate::report) fn load_tail(tail: &TailBreakdown) -> Markup {
    let caption = format!(
        "the p99 tail: each part of a query's time, its median (light) and its mean over the {} slowest queries (dark); `{}` owns the p99",
        tail.tail_queries, tail.owner
    );
    let count = tail.parts.len();
    let most = tail
        .parts
        .iter()
        .map(|p| p.median_ns.max(p.tail_mean_ns))
        .max()
        .unwrap_or(0)
        .max(1);
    // Room right of the longest bar for its figure.
    let x_max = ms(most) * 1.2;
    let labels: Vec<String> = tail.parts.iter().map(|p| p.component.clone()).collect();
    let mut placed: Vec<Bars> = Vec::new();
    let drawn = (count > 0)
        .then(|| {
            plot((WIDTH, 70 + ROW * count as u32), |root| {
                let rows = count as i32;
                let mut context = ChartBuilder::on(root)
                    .margin(10)
                    .margin_right(24)
                    .x_label_area_size(40)
                    .y_label_area_size(160)
                    .build_cartesian_2d(0.0..x_max, -0.5f64..rows as f64 - 0.5)?;
                context
                    .configure_mesh()
                    .x_desc("ms")
                    .y_labels(count)
                    .y_label_formatter(&|y| bar_label(&labels, rows, *y))
                    .label_style(("sans-serif", 12))
                    .axis_desc_style(("sans-serif", 13))
                    .disable_y_mesh()
                    .light_line_style(WHITE)
                    .draw()?;
                placed = tail
                    .parts
                    .iter()
                    .enumerate()
                    .map(|(index, part)| {
                        let y = (rows - 1 - index as i32) as f64;
                        let bar = |ns: u64, from: f64, to: f64| {
                            (
                                context.backend_coord(&(0.0, to)),
                                context.backend_coord(&(ms(ns), from)),
                            )
                        };
                        [
                            bar(part.median_ns, y + 0.04, y + 0.36),
                            bar(part.tail_mean_ns, y - 0.36, y - 0.04),
                        ]
                    })
                    .collect();
                Ok(())
            })
        })
        .flatten();
    let Some(drawn) = drawn else {
        return html! {
            figure.load id="tail" {
                figcaption { (caption) }
                (nothing_to_draw("tail-chart", WIDTH, "No part of the tail to draw."))
            }
        };
    };
    let over = html! {
        @for (part, [median, mean]) in tail.parts.iter().zip(&placed) {
            @for (class, fill, (top_left, bottom_right), ns, what) in [
                ("median", MEDIAN_FILL, median, part.median_ns, "median"),
                ("tail", TAIL_FILL, mean, part.tail_mean_ns, "tail mean"),
            ] {
                rect class=(class) data-part=(part.component) x=(top_left.0) y=(top_left.1)
                    width=((bottom_right.0 - top_left.0).max(1))
                    height=((bottom_right.1 - top_left.1).max(1)) fill=(fill) {
                    title { (what) " " (format!("{:.3}", ms(ns))) " ms" }
                }
            }
            text x=(median.1 .0.max(mean.1 .0) + 6) y=(mean.1 .1) font-size="11" {
                (format!("{:.3}", ms(part.tail_mean_ns))) " ms"
            }
        }
    };
    html! {
        figure.load id="tail" {
            figcaption { (caption) }
            (framed_under(&drawn, "the p99 tail", over))
        }
    }
}
