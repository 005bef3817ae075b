//! Each range's p99 against the rate a load offered, and the queueing's:
//! which part grows as the load does.

use maud::Markup;
use profiling_core::driver::load::summary::LoadStep;

use super::lines::{line_chart, Line, LineChart, Point};
use super::{load_rate, ms};

/// A line per range of `steps` (in the order of their rates), by name, and
/// one for the queueing.
pub(in crate::report) fn load_ranges(steps: &[&LoadStep]) -> Markup {
    let mut names: Vec<&str> = steps
        .iter()
        .flat_map(|step| step.ranges.iter().map(|range| range.name.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut lines: Vec<Line> = names
        .iter()
        .map(|name| Line {
            name: (*name).to_owned(),
            points: steps
                .iter()
                .filter_map(|step| {
                    let range = step.ranges.iter().find(|range| range.name == *name)?;
                    Some(Point::at(load_rate(step), ms(range.p99_ns)))
                })
                .collect(),
        })
        .collect();
    lines.push(Line {
        name: "queueing".to_owned(),
        points: steps
            .iter()
            .filter_map(|step| {
                let p99 = step.queueing.as_ref()?.get("p99")?.value_ns;
                Some(Point::at(load_rate(step), ms(p99)))
            })
            .collect(),
    });
    line_chart(&LineChart {
        id: "ranges",
        caption: "each range's p99 against load",
        x_desc: "queries a second (offered)",
        y_desc: "p99, ms",
        lines,
        bound: None,
    })
}
