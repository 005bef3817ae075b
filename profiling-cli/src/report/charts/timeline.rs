//! The pass timeline: each pass's time in order, warmup first.

use maud::Markup;
use plotters::prelude::*;
use profiling_compare::statistics::lower_median;
use profiling_core::driver::run_samples::RunSamples;

use super::{framed, nothing_to_draw, plot, unit_for, Area, Drawn};

/// Points drawn at most on the pass timeline; longer runs are shown as
/// the median, minimum and maximum of consecutive passes.
const TIMELINE_POINTS: usize = 1_500;

/// Pass time against pass index, warmup passes first; long runs as the
/// median and range of consecutive passes.
pub(in crate::report) fn timeline(samples: &RunSamples) -> Markup {
    let drawn = if samples.passes.kept.is_empty() {
        None
    } else {
        let timeline = Timeline::of(samples);
        plot((1220, 340), |root| timeline.draw(root))
    };
    match drawn {
        Some(plot) => framed(&plot, "pass-timeline", "pass time by pass"),
        None => nothing_to_draw("pass-timeline", 600, "No measured pass completed."),
    }
}

/// A point of the timeline: the index of its first pass, and the median,
/// minimum and maximum of the passes it stands for.
type Point = (i64, f64, f64, f64);

/// What the timeline draws, times in the unit of its axis.
struct Timeline {
    warmup: Vec<Point>,
    measured: Vec<Point>,
    /// Whether a point stands for several consecutive passes.
    grouped: bool,
    /// Passes in all, warmup included.
    total: i64,
    unit: &'static str,
    bottom: f64,
    top: f64,
    caption: String,
}

impl Timeline {
    /// The timeline of `samples`, which has at least one measured pass.
    fn of(samples: &RunSamples) -> Self {
        let measured = &samples.passes.kept;
        let warmup = &samples.warmup.kept;
        let max = measured.iter().chain(warmup).copied().max().unwrap_or(0);
        let (divisor, unit) = unit_for(max);
        let warmups = warmup.len() as i64;
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
        Self {
            warmup: points(warmup, 0, divisor),
            measured: points(measured, warmups, divisor),
            grouped,
            total: warmups + measured.len() as i64,
            unit,
            bottom,
            top: top_value + spread * 0.15,
            caption,
        }
    }

    /// Draws the warmup's and the measured passes' lines on `root`, with a
    /// bar for each grouped point's range and a dot for each point of a
    /// short line.
    fn draw(&self, root: &Area<'_>) -> Drawn {
        let (bottom, top) = (self.bottom, self.top);
        let mut chart = ChartBuilder::on(root)
            .caption(&self.caption, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0i64..self.total.max(1), bottom..top.max(bottom + 1e-9))?;
        chart
            .configure_mesh()
            .x_desc("pass (warmup first)")
            .y_desc(format!("pass time ({})", self.unit))
            .light_line_style(WHITE)
            .draw()?;
        for (series, color, label) in [
            (&self.warmup, RGBColor(230, 140, 0), "warmup (calls only)"),
            (&self.measured, RGBColor(70, 110, 180), "measured"),
        ] {
            if series.is_empty() {
                continue;
            }
            if self.grouped {
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
    }
}

/// The points of `values` (pass times in ns) in units of `divisor`, the
/// first pass at index `offset`: one per pass, or per run of consecutive
/// passes where there are more than the timeline draws.
fn points(values: &[u64], offset: i64, divisor: f64) -> Vec<Point> {
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
}
