//! A histogram of durations, the median and p90 marked.

use maud::Markup;
use plotters::prelude::*;
use profiling_core::stats::DurationStats;

use super::{framed, nothing_to_draw, plot, unit_for};
use crate::summary::format_ns;

/// Bins of the histograms.
const BINS: usize = 40;

/// A histogram of sorted durations, the median and p90 marked.
pub(in crate::report) fn histogram(id: &str, title: &str, sorted: &[u64]) -> Markup {
    let mut drawn = None;
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
        drawn = plot((600, 320), |root| {
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
    match drawn {
        Some(plot) => framed(&plot, id, title),
        None => nothing_to_draw(id, 600, &format!("{title} has no samples")),
    }
}
