//! The pass timeline: each pass's time in order, warmup first.

use maud::Markup;
use plotters::prelude::*;
use profiling_compare::statistics::lower_median;
use profiling_core::driver::run_samples::RunSamples;

use super::{framed, nothing_to_draw, plot, unit_for};

/// Points drawn at most on the pass timeline; longer runs are shown as
/// the median, minimum and maximum of consecutive passes.
const TIMELINE_POINTS: usize = 1_500;

/// Pass time against pass index, warmup passes first; long runs as the
/// median and range of consecutive passes.
pub(in crate::report) fn timeline(samples: &RunSamples) -> Markup {
    let measured = &samples.passes.kept;
    let warmup = &samples.warmup.kept;
    let mut drawn = None;
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
        drawn = plot((1220, 340), |root| {
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
    match drawn {
        Some(plot) => framed(&plot, "pass-timeline", "pass time by pass"),
        None => nothing_to_draw("pass-timeline", 600, "No measured pass completed."),
    }
}
