//! The latency-throughput curve of a load: each step's p99 against the
//! rate it served, hollow where it missed the bound, the bound across.

use maud::Markup;
use profiling_core::driver::load::summary::LoadStep;

use super::lines::{line_chart, Bound, Line, LineChart, Point};
use super::ms;

/// `steps` in the order of their rates; `bound` in ms.
pub(in crate::report) fn load_curve(steps: &[&LoadStep], bound: Option<f64>) -> Markup {
    let points = steps
        .iter()
        .filter_map(|step| {
            Some(Point {
                x: step.served_qps,
                y: ms(step.p99_ns()?),
                filled: step.bound.as_ref().is_none_or(|b| b.held),
            })
        })
        .collect();
    line_chart(&LineChart {
        id: "curve",
        caption: "latency against throughput: p99 at each rate served (hollow: bound missed)",
        x_desc: "queries a second (served)",
        y_desc: "p99 latency, ms",
        lines: vec![Line {
            name: "p99".to_owned(),
            points,
        }],
        bound: bound.map(Bound::p99),
    })
}
