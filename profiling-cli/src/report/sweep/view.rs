//! What a sweep's page draws: the x axis and the lines, shared by every
//! chart, and each chart's points, from `sweep.yaml`.

use std::collections::BTreeMap;

use profiling_compare::one_line;
use serde_yaml::Value;

use profiling_core::driver::sweep::document::{
    Axis, Estimate, PointResult, PointStatus, SweepDocument,
};

/// How the first key's values sit on the x axis.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum XAxis {
    /// Numbers at their value, on a log scale when `log`.
    Numeric { log: bool },
    /// Anything else (devices, shapes): evenly spaced in grid order,
    /// labelled by their value.
    Categories(Vec<String>),
}

/// The x axis and the lines every chart of a sweep draws.
#[derive(Debug)]
pub(crate) struct Layout {
    /// The key on the x axis: the grid's first.
    pub(crate) key: String,
    pub(crate) axis: XAxis,
    /// The swept values: their positions on the axis and labels, in axis
    /// order.
    pub(crate) ticks: Vec<(f64, String)>,
    pub(crate) lines: Vec<Line>,
}

/// The points of one value of the other keys (or of all the points, when
/// only one key is swept or the keys are zipped), in x order.
#[derive(Debug)]
pub(crate) struct Line {
    /// What the other keys are on this line; empty when there is one line.
    pub(crate) label: String,
    /// (x, index into the document's points).
    pub(crate) points: Vec<(f64, usize)>,
}

/// The value of `key` at `point`.
pub(crate) fn value_of<'a>(point: &'a PointResult, key: &str) -> Option<&'a Value> {
    point.values.get(key)
}

pub(crate) fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64().filter(|v| v.is_finite()),
        _ => None,
    }
}

impl Layout {
    /// The layout of `document`'s charts: the first key that varies along
    /// x, one line per combination of the other varying keys' values.
    pub(crate) fn of(document: &SweepDocument) -> Layout {
        // A key given one value splits no line: the x axis is the first
        // key that varies, the lines the others that do.
        let varying: Vec<&Axis> = document
            .grid
            .iter()
            .filter(|axis| axis.values.len() > 1)
            .collect();
        let first = varying.first().copied().or(document.grid.first());
        let Some(first) = first else {
            return Layout::side_by_side(document);
        };
        let mut distinct: Vec<&Value> = Vec::new();
        for value in &first.values {
            if !distinct.contains(&value) {
                distinct.push(value);
            }
        }
        let (axis, ticks) = x_axis(first, &distinct);
        let x_of = |value: &Value| match axis {
            XAxis::Numeric { .. } => number(value),
            XAxis::Categories(_) => distinct.iter().position(|v| *v == value).map(|i| i as f64),
        };
        let others: Vec<&Axis> = if document.zip {
            Vec::new()
        } else {
            varying
                .iter()
                .copied()
                .filter(|axis| axis.key != first.key)
                .collect()
        };
        let lines = lines_of(document, first, &others, &x_of);
        Layout {
            key: first.key.clone(),
            axis,
            ticks,
            lines,
        }
    }

    /// The layout of a document without a grid (a hand-made file): its
    /// points side by side, on one line.
    fn side_by_side(document: &SweepDocument) -> Layout {
        let ticks: Vec<(f64, String)> = document
            .points
            .iter()
            .enumerate()
            .map(|(i, p)| (i as f64, p.point.clone()))
            .collect();
        Layout {
            key: "point".to_owned(),
            axis: XAxis::Categories(ticks.iter().map(|(_, l)| l.clone()).collect()),
            lines: vec![Line {
                label: String::new(),
                points: (0..document.points.len()).map(|i| (i as f64, i)).collect(),
            }],
            ticks,
        }
    }
}

/// The x axis of `first` and its ticks: numbers at their value (on a log
/// scale when they span more than tenfold), else its `distinct` values as
/// categories in grid order.
fn x_axis(first: &Axis, distinct: &[&Value]) -> (XAxis, Vec<(f64, String)>) {
    let numbers: Option<Vec<f64>> = first.values.iter().map(number).collect();
    match numbers.filter(|n| !n.is_empty()) {
        Some(numbers) => {
            let low = numbers.iter().copied().fold(f64::INFINITY, f64::min);
            let high = numbers.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut ticks: Vec<(f64, String)> = first
                .values
                .iter()
                .zip(&numbers)
                .map(|(value, &x)| (x, one_line(value)))
                .collect();
            ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
            ticks.dedup_by(|a, b| a.0 == b.0);
            let log = spans_more_than_tenfold(low, high);
            (XAxis::Numeric { log }, ticks)
        }
        None => {
            let labels: Vec<String> = distinct.iter().map(|v| one_line(v)).collect();
            let ticks = labels.iter().cloned().enumerate();
            let ticks = ticks.map(|(i, l)| (i as f64, l)).collect();
            (XAxis::Categories(labels), ticks)
        }
    }
}

/// One line per combination of the `others` keys' values, in the order of
/// their values in the grid, each with its points at `x_of` their value of
/// `first`, in x order; a point without such an x is on none.
fn lines_of(
    document: &SweepDocument,
    first: &Axis,
    others: &[&Axis],
    x_of: &dyn Fn(&Value) -> Option<f64>,
) -> Vec<Line> {
    let mut lines: BTreeMap<Vec<usize>, Line> = BTreeMap::new();
    for (index, point) in document.points.iter().enumerate() {
        let Some(x) = value_of(point, &first.key).and_then(x_of) else {
            continue;
        };
        let mut order = Vec::with_capacity(others.len());
        let mut label = Vec::with_capacity(others.len());
        for axis in others {
            let value = value_of(point, &axis.key);
            order.push(
                value
                    .and_then(|v| axis.values.iter().position(|a| a == v))
                    .unwrap_or(usize::MAX),
            );
            label.push(format!(
                "{} = {}",
                axis.key,
                value.map_or("-".to_owned(), one_line)
            ));
        }
        lines
            .entry(order)
            .or_insert_with(|| Line {
                label: label.join(", "),
                points: Vec::new(),
            })
            .points
            .push((x, index));
    }
    let mut lines: Vec<Line> = lines.into_values().collect();
    for line in &mut lines {
        line.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    lines
}

/// True when `high` is more than ten times `low`, both above zero: such
/// values are drawn on a log scale.
pub(crate) fn spans_more_than_tenfold(low: f64, high: f64) -> bool {
    low > 0.0 && high / low > 10.0
}

/// What a chart measures.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Quantity {
    Pass,
    Call,
    Range(String),
}

/// A median and its interval, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Interval {
    pub(crate) median: f64,
    pub(crate) low: f64,
    pub(crate) high: f64,
}

impl Interval {
    pub(crate) fn scaled(estimate: &Estimate, factor: f64) -> Option<Interval> {
        factor.is_finite().then_some(Interval {
            median: estimate.median_ns as f64 * factor,
            low: estimate.low_ns as f64 * factor,
            high: estimate.high_ns as f64 * factor,
        })
    }
}

/// One chart: a quantity's time (or time per record) along every line.
#[derive(Debug)]
pub(crate) struct Chart {
    pub(crate) quantity: Quantity,
    pub(crate) per_record: bool,
    /// Per line of the layout, each of its points' x and interval; None
    /// where the point did not complete or did not measure this (a gap).
    pub(crate) lines: Vec<Vec<Option<(f64, Interval)>>>,
    /// The medians span more than a factor of ten.
    pub(crate) log: bool,
}

impl Chart {
    pub(crate) fn drawn(&self) -> impl Iterator<Item = (usize, f64, Interval)> + '_ {
        self.lines.iter().enumerate().flat_map(|(line, points)| {
            points
                .iter()
                .flatten()
                .map(move |&(x, interval)| (line, x, interval))
        })
    }

    /// The number of points drawn on each line.
    #[cfg(test)]
    pub(crate) fn points_per_line(&self) -> Vec<usize> {
        self.lines
            .iter()
            .map(|line| line.iter().flatten().count())
            .collect()
    }
}

/// What `point` measured of `quantity`, per record when `per_record`; None
/// unless it completed.
pub(crate) fn measured(
    point: &PointResult,
    quantity: &Quantity,
    per_record: bool,
) -> Option<Interval> {
    if point.status != PointStatus::Completed {
        return None;
    }
    let per = |estimate: &Estimate, time_per_record: Option<f64>, fallback: Option<f64>| {
        let factor = if !per_record {
            Some(1.0)
        } else {
            match time_per_record {
                Some(t) if estimate.median_ns > 0 => Some(t / estimate.median_ns as f64),
                _ => fallback,
            }
        };
        factor.and_then(|f| Interval::scaled(estimate, f))
    };
    let records = point.records_per_pass.filter(|&r| r > 0).map(|r| r as f64);
    match quantity {
        Quantity::Pass => {
            let pass = point.pass.as_ref()?;
            per(pass, point.time_per_record_ns, records.map(|r| 1.0 / r))
        }
        Quantity::Call => {
            let call = point.call.as_ref()?;
            per(call, None, Some(1.0 / f64::from(point.batch_size.max(1))))
        }
        Quantity::Range(name) => {
            let range = point.ranges.iter().find(|r| &r.name == name)?;
            per(
                &range.inclusive,
                range.time_per_record_ns,
                records.map(|r| range.calls_per_pass / r),
            )
        }
    }
}

/// The quantities charted: the pass, the call, then every range in order
/// of its largest median.
pub(crate) fn quantities(document: &SweepDocument) -> Vec<Quantity> {
    let mut largest: BTreeMap<&str, u64> = BTreeMap::new();
    for point in document.completed() {
        for range in &point.ranges {
            let entry = largest.entry(range.name.as_str()).or_default();
            *entry = (*entry).max(range.inclusive.median_ns);
        }
    }
    let mut ranges: Vec<(&str, u64)> = largest.into_iter().collect();
    ranges.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    [Quantity::Pass, Quantity::Call]
        .into_iter()
        .chain(
            ranges
                .into_iter()
                .map(|(n, _)| Quantity::Range(n.to_owned())),
        )
        .collect()
}

/// Every chart of the page, in order; with time per record after each
/// quantity's time where the sweep is batched.
pub(crate) fn charts(document: &SweepDocument, layout: &Layout) -> Vec<Chart> {
    let measures: &[bool] = if document.batched() {
        &[false, true]
    } else {
        &[false]
    };
    let mut charts = Vec::new();
    for quantity in quantities(document) {
        for &per_record in measures {
            let lines: Vec<Vec<Option<(f64, Interval)>>> = layout
                .lines
                .iter()
                .map(|line| {
                    line.points
                        .iter()
                        .map(|&(x, index)| {
                            measured(&document.points[index], &quantity, per_record)
                                .map(|interval| (x, interval))
                        })
                        .collect()
                })
                .collect();
            let medians = lines.iter().flatten().flatten().map(|(_, i)| i.median);
            let (low, high) = medians.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), m| {
                (l.min(m), h.max(m))
            });
            charts.push(Chart {
                log: spans_more_than_tenfold(low, high),
                quantity: quantity.clone(),
                per_record,
                lines,
            });
        }
    }
    charts
}
