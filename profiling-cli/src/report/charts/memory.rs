//! The memory of a run with `memory: on`: the allocations each range
//! makes per pass, and the live bytes over one pass.

use maud::Markup;
use plotters::prelude::*;
use profiling_core::memory::human_bytes;

use super::{bar_label, framed, nothing_to_draw, plot};

/// One bar: a range path, its own allocations per pass and the bytes
/// they asked for.
pub(in crate::report) struct RangeAllocations {
    pub path: String,
    pub self_allocations: f64,
    pub self_bytes: f64,
}

/// Ranges drawn at most, those that allocate most.
const BARS: usize = 25;

/// Each range's own allocations per pass (those made while it was the
/// innermost range) as a bar, labelled with their bytes.
pub(in crate::report) fn allocations_chart(ranges: &[RangeAllocations]) -> Markup {
    let mut bars: Vec<&RangeAllocations> =
        ranges.iter().filter(|r| r.self_allocations > 0.0).collect();
    bars.sort_by(|a, b| b.self_allocations.total_cmp(&a.self_allocations));
    bars.truncate(BARS);
    let mut drawn = None;
    if !bars.is_empty() {
        let high = bars.iter().map(|b| b.self_allocations).fold(0.0, f64::max) * 1.25;
        let height = 80 + 26 * bars.len() as u32;
        drawn = plot((1100, height), |root| {
            let count = bars.len() as i32;
            let labels: Vec<String> = bars.iter().map(|b| b.path.clone()).collect();
            let mut chart = ChartBuilder::on(root)
                .caption(
                    "Allocations per pass, by range (its own)",
                    ("sans-serif", 16),
                )
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(300)
                .build_cartesian_2d(0f64..high.max(1.0), -0.6f64..count as f64 - 0.4)?;
            chart
                .configure_mesh()
                .x_desc("allocations per pass")
                .y_labels(bars.len())
                .y_label_formatter(&|y| bar_label(&labels, count, *y))
                .disable_y_mesh()
                .light_line_style(WHITE)
                .draw()?;
            for (index, bar) in bars.iter().enumerate() {
                let y = (count - 1 - index as i32) as f64;
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(0.0, y - 0.3), (bar.self_allocations, y + 0.3)],
                    RGBColor(120, 80, 170).mix(0.8).filled(),
                )))?;
                chart.draw_series(std::iter::once(Text::new(
                    format!(
                        "{:.1} ({} per pass)",
                        bar.self_allocations,
                        human_bytes(bar.self_bytes.round() as u64)
                    ),
                    (bar.self_allocations, y - 0.15),
                    ("sans-serif", 12),
                )))?;
            }
            Ok(())
        });
    }
    match drawn {
        Some(plot) => framed(&plot, "allocations-chart", "allocations per pass by range"),
        None => nothing_to_draw(
            "allocations-chart",
            600,
            "No range allocated inside the measured passes.",
        ),
    }
}

/// The live bytes of one pass (allocated on every thread since it began,
/// less what was freed of them) at each range boundary: `points` are
/// (µs from the pass's start, bytes).
pub(in crate::report) fn live_bytes_chart(pass: u64, points: &[(f64, u64)]) -> Markup {
    let mut drawn = None;
    if points.len() > 1 {
        let last = points.iter().map(|p| p.0).fold(0.0, f64::max);
        let (scale, time_unit) = match last {
            t if t >= 10_000_000.0 => (1e6, "s"),
            t if t >= 10_000.0 => (1e3, "ms"),
            _ => (1.0, "µs"),
        };
        let points: Vec<(f64, u64)> = points.iter().map(|&(t, b)| (t / scale, b)).collect();
        let points = &points[..];
        let end = (last / scale).max(1e-3);
        let high = points.iter().map(|p| p.1).max().unwrap_or(0);
        let (divisor, unit) = byte_unit(high);
        drawn = plot((1220, 340), |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(
                    format!("Live bytes over measured pass {pass}, at every range boundary"),
                    ("sans-serif", 16),
                )
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(70)
                .build_cartesian_2d(0f64..end, 0f64..(high as f64 / divisor * 1.1).max(1e-9))?;
            chart
                .configure_mesh()
                .x_desc(format!("{time_unit} since the pass began"))
                .y_desc(format!("live ({unit})"))
                .light_line_style(WHITE)
                .draw()?;
            // A step: the count holds until the next boundary.
            let mut steps = Vec::with_capacity(points.len() * 2);
            for pair in points.windows(2) {
                let (x, y) = (pair[0].0, pair[0].1 as f64 / divisor);
                steps.push((x, y));
                steps.push((pair[1].0, y));
            }
            if let Some(&(x, y)) = points.last() {
                steps.push((x, y as f64 / divisor));
            }
            chart.draw_series(LineSeries::new(
                steps,
                RGBColor(120, 80, 170).stroke_width(2),
            ))?;
            Ok(())
        });
    }
    match drawn {
        Some(plot) => framed(&plot, "live-bytes", "live bytes over a pass"),
        None => nothing_to_draw(
            "live-bytes",
            600,
            "No range boundary was recorded in the first measured pass.",
        ),
    }
}

/// A binary unit for byte counts up to `max`: (divisor, name).
fn byte_unit(max: u64) -> (f64, &'static str) {
    match max {
        0..=8_191 => (1.0, "B"),
        8_192..=8_388_607 => (1024.0, "KiB"),
        8_388_608..=8_589_934_591 => (1_048_576.0, "MiB"),
        _ => (1_073_741_824.0, "GiB"),
    }
}
