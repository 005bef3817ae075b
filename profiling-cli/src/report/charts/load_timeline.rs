//! A load step over its length: each window's median and slowest query
//! against the bound; a climb window after window is a load the workers
//! did not keep up with.

use maud::Markup;
use profiling_core::driver::load::latency::Window;
use profiling_core::driver::load::summary::LoadStep;

use super::lines::{line_chart, Bound, Line, LineChart, Point};
use super::{ms, short};

/// Each window of `step` at its middle; `bound` in ms.
pub(in crate::report) fn load_timeline(step: &LoadStep, bound: Option<f64>) -> Markup {
    let middle = |w: &Window| (w.start_ns + w.end_ns) as f64 / 2e9;
    let line = |name: &str, of: fn(&Window) -> u64| Line {
        name: name.to_owned(),
        points: step
            .timeline
            .iter()
            .map(|w| Point::at(middle(w), ms(of(w))))
            .collect(),
    };
    let under = match step.offered() {
        Some(qps) => format!(" at {} queries a second", short(qps)),
        None => String::new(),
    };
    line_chart(&LineChart {
        id: "timeline",
        caption: &format!("latency over the load{under}: each window's median and slowest query"),
        x_desc: "seconds from the first intended send",
        y_desc: "latency, ms",
        lines: vec![
            line("median", |w| w.latency_p50_ns),
            line("slowest", |w| w.latency_max_ns),
        ],
        bound: bound.map(Bound::p99),
    })
}
