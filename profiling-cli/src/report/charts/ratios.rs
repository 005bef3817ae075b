//! The ratio of each row of a comparison, with its interval.

use maud::{html, Markup};
use plotters::prelude::*;
use profiling_compare::{Comparison, Row, Verdict};

use super::{bar_label, framed, nothing_to_draw, plot};

/// Each row's ratio as a bar from 1, its interval as a whisker; the
/// chart's id is `id`.
pub(in crate::report) fn ratio_chart(comparison: &Comparison, id: &str) -> Markup {
    let id = id.to_owned();
    let rows: Vec<&Row> = comparison
        .rows
        .iter()
        .filter(|r| r.ratio.is_some_and(f64::is_finite))
        .collect();
    let mut drawn = None;
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
        drawn = plot((1100, height), |root| {
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
                .y_label_formatter(&|y| bar_label(&labels, count, *y))
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
    match drawn {
        Some(plot) => html! {
            div.plots { (framed(&plot, &id, "ratio of each row with its interval")) }
        },
        None => nothing_to_draw(&id, 600, "No row has a ratio."),
    }
}
