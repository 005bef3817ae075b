//! The share of a load's mean latency spent queueing, against the rate
//! offered: where the workers stop keeping up.

use maud::Markup;
use profiling_core::driver::load::summary::LoadStep;

use super::lines::{line_chart, Line, LineChart, Point};
use super::load_rate;

/// `steps` in the order of their rates.
pub(in crate::report) fn load_queueing(steps: &[&LoadStep]) -> Markup {
    let points = steps
        .iter()
        .filter_map(|step| {
            let latency = step.latency.as_ref()?.mean_ns.max(1);
            let queueing = step.queueing.as_ref()?.mean_ns;
            Some(Point::at(
                load_rate(step),
                100.0 * queueing as f64 / latency as f64,
            ))
        })
        .collect();
    line_chart(&LineChart {
        id: "queueing",
        caption: "the share of the mean latency spent queueing",
        x_desc: "queries a second (offered)",
        y_desc: "queueing share, %",
        lines: vec![Line {
            name: "queueing share".to_owned(),
            points,
        }],
        bound: None,
    })
}
