//! The queue of a load step over its length: at each window's end, the
//! queries meant to be sent by then that no worker had begun.

use maud::Markup;
use profiling_core::driver::load::summary::LoadStep;

use super::lines::{line_chart, Line, LineChart, Point};

/// A point a window of `step`, at its end.
pub(in crate::report) fn load_waiting(step: &LoadStep) -> Markup {
    line_chart(&LineChart {
        id: "waiting",
        caption: "queries meant to be sent that no worker had begun, at each window's end",
        x_desc: "seconds from the first intended send",
        y_desc: "queries waiting",
        lines: vec![Line {
            name: "waiting".to_owned(),
            points: step
                .timeline
                .iter()
                .map(|w| Point::at(w.end_ns as f64 / 1e9, w.waiting_at_end as f64))
                .collect(),
        }],
        bound: None,
    })
}
