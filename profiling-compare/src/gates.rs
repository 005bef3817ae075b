//! Gates agreed before measuring, and the verdict they give a paired run:
//! `p50<=-3%, mean<=-3%, p99<=+2%, peak<=+2%` says what the candidate must
//! show to be accepted, written down before either side runs.
//!
//! A gate is a metric of the pass or of one range (`p99[decode/nms]`), a
//! comparison and a threshold: a relative change (`-3%`, `+2%`) or an
//! absolute one with its unit (`+50us`, `-1ms`, `+64KiB`; allocations are
//! counted, `allocations<=+0`). Each gate's estimate is the candidate's
//! figure against the base's over all passes of each side, with a 95 %
//! interval from a bootstrap over the block pairs (whole pairs are drawn,
//! so that what the machine did during a block falls on both of its
//! sides). A gate *holds* when its whole interval meets the threshold,
//! *fails* when its whole interval misses it, and is *unclear* when the
//! interval straddles it. The verdict: **accept** when every gate holds,
//! **reject** when any fails (each named, with its interval), else
//! **inconclusive**.

use std::fmt;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use profiling_core::driver::run_samples::{PairedSamples, SidePasses};

/// The metrics a gate can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Mean,
    P50,
    P90,
    P95,
    P99,
    Max,
    /// Allocations per pass (their mean).
    Allocations,
    /// Bytes allocated per pass (their mean).
    Bytes,
    /// The peak of live bytes (the highest pass).
    Peak,
    /// The snippet's parity check passes on both sides.
    Parity,
}

/// Every metric with its name in a gate, in the order the help lists them.
pub const METRICS: &[(&str, Metric)] = &[
    ("mean", Metric::Mean),
    ("p50", Metric::P50),
    ("p90", Metric::P90),
    ("p95", Metric::P95),
    ("p99", Metric::P99),
    ("max", Metric::Max),
    ("allocations", Metric::Allocations),
    ("bytes", Metric::Bytes),
    ("peak", Metric::Peak),
    ("parity", Metric::Parity),
];

impl Metric {
    /// Its name in a gate.
    pub fn name(self) -> &'static str {
        METRICS
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("?", |(name, _)| name)
    }

    fn unit(self) -> Unit {
        match self {
            Metric::Mean | Metric::P50 | Metric::P90 | Metric::P95 | Metric::P99 | Metric::Max => {
                Unit::Time
            }
            Metric::Allocations => Unit::Count,
            Metric::Bytes | Metric::Peak => Unit::Bytes,
            Metric::Parity => Unit::Count,
        }
    }

    fn is_memory(self) -> bool {
        matches!(self, Metric::Allocations | Metric::Bytes | Metric::Peak)
    }
}

/// What a metric counts, for its absolute thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Time,
    Bytes,
    Count,
}

/// How the estimate must compare with the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Comparison {
    #[serde(rename = "<=")]
    AtMost,
    #[serde(rename = "<")]
    Below,
    #[serde(rename = ">=")]
    AtLeast,
    #[serde(rename = ">")]
    Above,
}

impl Comparison {
    fn meets(self, value: f64, threshold: f64) -> bool {
        match self {
            Comparison::AtMost => value <= threshold,
            Comparison::Below => value < threshold,
            Comparison::AtLeast => value >= threshold,
            Comparison::Above => value > threshold,
        }
    }
}

/// A gate's threshold: a change relative to the base, or the candidate's
/// figure minus the base's in the metric's unit (nanoseconds, bytes or a
/// count).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Threshold {
    /// A fraction: -0.03 for `-3%`.
    Relative(f64),
    Absolute(f64),
}

/// One gate: `p99[decode/nms]<=+2%`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gate {
    /// As written, spaces removed.
    pub text: String,
    pub metric: Metric,
    /// A range's name; `None`: the pass.
    pub range: Option<String>,
    pub comparison: Comparison,
    pub threshold: Threshold,
}

/// A gate list that cannot be read: which gate, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("gate {index} `{text}`: {problem}\n(a gate is METRIC[RANGE] OP THRESHOLD, like `p50<=-3%`, `p99[decode]<=+2%`, `mean<=+50us`, `peak<=+2%`, `allocations<=+0` or `parity`; metrics: {metrics})", metrics = metric_names())]
pub struct GateError {
    /// 1 for the first gate of the list.
    pub index: usize,
    pub text: String,
    pub problem: String,
}

fn metric_names() -> String {
    METRICS
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads a comma-separated list of gates.
pub fn parse_gates(list: &str) -> Result<Vec<Gate>, GateError> {
    let gates: Vec<&str> = list.split(',').collect();
    if gates.iter().all(|g| g.trim().is_empty()) {
        return Err(GateError {
            index: 1,
            text: list.to_owned(),
            problem: "no gate given".to_owned(),
        });
    }
    gates
        .iter()
        .enumerate()
        .map(|(i, text)| {
            parse_gate(text).map_err(|problem| GateError {
                index: i + 1,
                text: text.trim().to_owned(),
                problem,
            })
        })
        .collect()
}

fn parse_gate(text: &str) -> Result<Gate, String> {
    let compact: String = text.split_whitespace().collect();
    if compact.is_empty() {
        return Err("empty: two commas in a row, or one at the end".to_owned());
    }
    if compact == "parity" {
        return Ok(Gate {
            text: compact,
            metric: Metric::Parity,
            range: None,
            comparison: Comparison::AtLeast,
            threshold: Threshold::Absolute(1.0),
        });
    }
    let op_at = compact
        .find(['<', '>', '='])
        .ok_or_else(|| "no comparison: use <=, <, >= or >".to_owned())?;
    let (subject, rest) = compact.split_at(op_at);
    let (comparison, value) = if let Some(value) = rest.strip_prefix("<=") {
        (Comparison::AtMost, value)
    } else if let Some(value) = rest.strip_prefix(">=") {
        (Comparison::AtLeast, value)
    } else if let Some(value) = rest.strip_prefix('<') {
        (Comparison::Below, value)
    } else if let Some(value) = rest.strip_prefix('>') {
        (Comparison::Above, value)
    } else {
        return Err(format!("`{rest}` is not a comparison: use <=, <, >= or >"));
    };
    let (name, range) = match subject.split_once('[') {
        Some((name, range)) => {
            let range = range
                .strip_suffix(']')
                .ok_or_else(|| format!("`[{range}` is not closed with `]`"))?;
            if range.is_empty() {
                return Err("`[]` names no range".to_owned());
            }
            (name, Some(range.to_owned()))
        }
        None => (subject, None),
    };
    let metric = METRICS
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, metric)| *metric)
        .ok_or_else(|| {
            if name.is_empty() {
                "no metric before the comparison".to_owned()
            } else {
                format!("unknown metric `{name}`")
            }
        })?;
    if metric == Metric::Parity {
        return Err("`parity` is a gate of its own, without a comparison".to_owned());
    }
    if range.is_some() && matches!(metric, Metric::Bytes | Metric::Peak) {
        return Err(format!(
            "`{}` is measured for the pass, not per range (ranges have `allocations`)",
            metric.name()
        ));
    }
    let threshold = parse_threshold(value, metric.unit())?;
    Ok(Gate {
        text: compact,
        metric,
        range,
        comparison,
        threshold,
    })
}

/// `-3%`, `+2%`, `+50us`, `-1.5ms`, `+64KiB`, `+0`.
fn parse_threshold(value: &str, unit: Unit) -> Result<Threshold, String> {
    if value.is_empty() {
        return Err("no threshold after the comparison".to_owned());
    }
    let split = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(value.len());
    let (number, suffix) = value.split_at(split);
    let parsed: f64 = number
        .parse()
        .ok()
        .filter(|n: &f64| n.is_finite())
        .ok_or_else(|| format!("`{value}` is not a number with a unit or %"))?;
    if suffix == "%" {
        return Ok(Threshold::Relative(parsed / 100.0));
    }
    // The units of every duration and size the tool reads.
    let time = profiling_core::units::nanos_per_unit(suffix);
    let size = profiling_core::units::bytes_per_unit(suffix).map(|b| b as f64);
    let scale = match (unit, suffix, time, size) {
        (Unit::Time, _, Some(nanos), _) => nanos,
        (Unit::Bytes, _, _, Some(bytes)) => bytes,
        (Unit::Count, "", ..) => 1.0,
        (Unit::Time, "", ..) => {
            return Err(format!(
                "`{value}` has no unit: a change in % (`{value}%`) or a time (`{value}us`: ns, us, ms, s)"
            ))
        }
        (Unit::Bytes, "", ..) => {
            return Err(format!(
                "`{value}` has no unit: a change in % (`{value}%`) or bytes (`{value}KiB`: B, KiB, MiB, GiB)"
            ))
        }
        (Unit::Time, other, ..) => {
            return Err(format!(
                "unknown unit `{other}` for a time: {} (or %)",
                profiling_core::units::TIME_UNITS
            ))
        }
        (Unit::Bytes, other, ..) => {
            return Err(format!(
                "unknown unit `{other}` for bytes: {} (or %)",
                profiling_core::units::SIZE_UNITS
            ))
        }
        (Unit::Count, other, ..) => {
            return Err(format!(
                "allocations are counted: `{number}` without `{other}` (or a change in %)"
            ))
        }
    };
    Ok(Threshold::Absolute(parsed * scale))
}

/// A gate that reads but that no pair of these targets, run this way,
/// can decide: it names what it needs and the pair does not record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("gate {index} `{text}`: {problem}")]
pub struct UndecidableGate {
    /// 1 for the first gate of the list.
    pub index: usize,
    pub text: String,
    pub problem: String,
}

fn undecidable(index: usize, gate: &Gate, problem: String) -> UndecidableGate {
    UndecidableGate {
        index: index + 1,
        text: gate.text.clone(),
        problem,
    }
}

fn needs_memory(metric: Metric) -> String {
    format!(
        "`{}` is recorded only with memory on (--memory, or `memory: on` in the config): no pair without it can decide this gate",
        metric.name()
    )
}

/// Before a pair runs: the first gate on memory when the pair records
/// none (`memory` off). Ranges are checked once a pair has run
/// ([`check_measured`]): a target's ranges are what its code opens while
/// it runs.
pub fn check_recorded(gates: &[Gate], memory: bool) -> Result<(), UndecidableGate> {
    match gates
        .iter()
        .enumerate()
        .find(|(_, gate)| gate.metric.is_memory() && !memory)
    {
        Some((index, gate)) => Err(undecidable(index, gate, needs_memory(gate.metric))),
        None => Ok(()),
    }
}

/// Once a pair has run (the first of several, or the first stage): the
/// first gate on what its samples do not hold on both sides, a range
/// (named with the ranges there are) or memory. Every later pair of the
/// same targets, run the same way, would lack it too.
pub fn check_measured(gates: &[Gate], samples: &PairedSamples) -> Result<(), UndecidableGate> {
    for (index, gate) in gates.iter().enumerate() {
        if gate.metric == Metric::Parity {
            continue;
        }
        let has =
            |side: &SidePasses| side_values(side, gate.metric, gate.range.as_deref()).is_some();
        if has(&samples.base) && has(&samples.candidate) {
            continue;
        }
        let Some(range) = gate.range.as_deref() else {
            return Err(undecidable(index, gate, needs_memory(gate.metric)));
        };
        let names = |side: &SidePasses| -> Vec<String> {
            let ranges = if gate.metric == Metric::Allocations {
                &side.range_allocations
            } else {
                &side.ranges
            };
            ranges.keys().cloned().collect()
        };
        if gate.metric == Metric::Allocations
            && samples.base.allocations.is_empty()
            && samples.candidate.allocations.is_empty()
        {
            return Err(undecidable(index, gate, needs_memory(gate.metric)));
        }
        let (base, candidate) = (names(&samples.base), names(&samples.candidate));
        let listed = |names: &[String]| {
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        };
        let whose = match (has(&samples.base), has(&samples.candidate)) {
            (false, false) => "the pair",
            (false, true) => "the base",
            (true, _) => "the candidate",
        };
        let ranges = if base == candidate {
            format!("the ranges there are: {}", listed(&base))
        } else {
            format!(
                "the base's ranges: {}; the candidate's: {}",
                listed(&base),
                listed(&candidate)
            )
        };
        return Err(undecidable(
            index,
            gate,
            format!("{whose} has no range `{range}`: no pair of these targets can decide this gate ({ranges})"),
        ));
    }
    Ok(())
}

/// How one gate came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateOutcome {
    /// The whole interval meets the threshold.
    Holds,
    /// The whole interval misses it.
    Fails,
    /// The interval straddles it, or the run cannot say.
    Unclear,
}

/// One gate's estimate and outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateResult {
    pub gate: Gate,
    /// The base's and the candidate's figure over all their passes
    /// (nanoseconds, a count or bytes); `None` when not measured.
    pub base: Option<f64>,
    pub candidate: Option<f64>,
    /// The change the threshold is read against: a fraction for a
    /// relative threshold, a difference for an absolute one.
    pub change: Option<f64>,
    /// Its 95 % interval.
    pub interval: Option<[f64; 2]>,
    pub outcome: GateOutcome,
    /// Why a gate is unclear without an interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The verdict of the gates as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateVerdict {
    Accept,
    Reject,
    Inconclusive,
}

impl fmt::Display for GateVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GateVerdict::Accept => "accept",
            GateVerdict::Reject => "reject",
            GateVerdict::Inconclusive => "inconclusive",
        })
    }
}

/// The verdict of `results`: reject when any failed, accept when all
/// held, else inconclusive.
pub fn verdict(results: &[GateResult]) -> GateVerdict {
    if results.iter().any(|r| r.outcome == GateOutcome::Fails) {
        GateVerdict::Reject
    } else if results.iter().all(|r| r.outcome == GateOutcome::Holds) {
        GateVerdict::Accept
    } else {
        GateVerdict::Inconclusive
    }
}

/// The verdict of repetitions of one experiment (`ab --repetitions`):
/// accept or reject only when every repetition says so, else inconclusive.
pub fn verdict_of_repetitions(verdicts: &[GateVerdict]) -> GateVerdict {
    match verdicts.first() {
        Some(first) if verdicts.iter().all(|v| v == first) => *first,
        _ => GateVerdict::Inconclusive,
    }
}

/// Whether the snippet's parity check passed on both sides, when the run
/// checked it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parity {
    Passed,
    Failed(String),
    NotChecked(String),
}

/// Bootstrap settings of the gates' intervals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GateBootstrap {
    pub resamples: u32,
    pub seed: u64,
    pub confidence: f64,
}

impl Default for GateBootstrap {
    fn default() -> Self {
        GateBootstrap {
            resamples: 4000,
            seed: crate::statistics::DEFAULT_SEED,
            confidence: 0.95,
        }
    }
}

/// Evaluates `gates` on a paired run's samples.
pub fn evaluate(
    gates: &[Gate],
    samples: &PairedSamples,
    parity: &Parity,
    bootstrap: GateBootstrap,
) -> Vec<GateResult> {
    gates
        .iter()
        .map(|gate| evaluate_one(gate, samples, parity, bootstrap))
        .collect()
}

/// The values of `metric` (and `range`) on one side, pass by pass.
fn side_values<'a>(side: &'a SidePasses, metric: Metric, range: Option<&str>) -> Option<&'a [u64]> {
    let values = match (metric, range) {
        (Metric::Allocations, None) => &side.allocations,
        (Metric::Allocations, Some(range)) => side.range_allocations.get(range)?,
        (Metric::Bytes, _) => &side.allocated_bytes,
        (Metric::Peak, _) => &side.peak_bytes,
        (_, None) => &side.pass_ns,
        (_, Some(range)) => side.ranges.get(range)?,
    };
    (!values.is_empty()).then_some(values.as_slice())
}

/// `metric` of the pooled passes of the chosen blocks.
fn statistic(metric: Metric, blocks: &[&[u64]]) -> Option<f64> {
    let mut pooled: Vec<u64> = blocks.iter().flat_map(|b| b.iter().copied()).collect();
    if pooled.is_empty() {
        return None;
    }
    let quantile = |pooled: &mut Vec<u64>, q: f64| {
        pooled.sort_unstable();
        // Nearest rank: the smallest value with at least q of the passes
        // at or below it (p50 is the lower median).
        let rank = ((q * pooled.len() as f64).ceil() as usize).clamp(1, pooled.len());
        pooled[rank - 1] as f64
    };
    Some(match metric {
        Metric::Mean | Metric::Allocations | Metric::Bytes => {
            pooled.iter().map(|&v| v as f64).sum::<f64>() / pooled.len() as f64
        }
        Metric::P50 => quantile(&mut pooled, 0.50),
        Metric::P90 => quantile(&mut pooled, 0.90),
        Metric::P95 => quantile(&mut pooled, 0.95),
        Metric::P99 => quantile(&mut pooled, 0.99),
        Metric::Max | Metric::Peak => pooled.iter().copied().max().unwrap_or(0) as f64,
        Metric::Parity => return None,
    })
}

fn unclear(gate: &Gate, note: String) -> GateResult {
    GateResult {
        gate: gate.clone(),
        base: None,
        candidate: None,
        change: None,
        interval: None,
        outcome: GateOutcome::Unclear,
        note: Some(note),
    }
}

/// A figure of both sides and its change, with a bootstrap interval over
/// the block pairs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PairedEstimate {
    /// The figure over all passes of each side.
    pub base: f64,
    pub candidate: f64,
    /// A fraction (`candidate / base - 1`) when relative, else the
    /// difference.
    pub change: f64,
    pub interval: [f64; 2],
    /// Block pairs drawn from.
    pub pairs: usize,
}

/// `metric` of `values` (base, candidate; pass by pass, in the order they
/// ran) on both sides, its change and interval: whole block pairs drawn
/// with replacement (and stages, when pooled from several:
/// [`crate::paired::Resample`]), both sides' figures recomputed from the
/// drawn blocks.
fn paired_estimate(
    samples: &PairedSamples,
    metric: Metric,
    (base, candidate): (&[u64], &[u64]),
    relative: bool,
    bootstrap: GateBootstrap,
) -> Result<PairedEstimate, String> {
    let base_blocks = crate::paired::side_blocks(&samples.blocks, "base", base);
    let candidate_blocks = crate::paired::side_blocks(&samples.blocks, "candidate", candidate);
    let pairs = base_blocks.len().min(candidate_blocks.len());
    if pairs == 0 {
        return Err("no block pair to compare".to_owned());
    }
    let estimate = |chosen: &[usize]| -> Option<(f64, f64, f64)> {
        let b: Vec<&[u64]> = chosen.iter().map(|&i| base_blocks[i]).collect();
        let c: Vec<&[u64]> = chosen.iter().map(|&i| candidate_blocks[i]).collect();
        let (b, c) = (statistic(metric, &b)?, statistic(metric, &c)?);
        let change = if relative {
            (b > 0.0).then(|| c / b - 1.0)?
        } else {
            c - b
        };
        Some((b, c, change))
    };
    let all: Vec<usize> = (0..pairs).collect();
    let (base_figure, candidate_figure, point) = estimate(&all).ok_or_else(|| {
        "the base's figure is 0: no relative change (give the threshold with a unit)".to_owned()
    })?;
    let resample =
        crate::paired::Resample::new(&crate::paired::stage_of_pairs(&samples.stages, pairs));
    let mut rng = ChaCha8Rng::seed_from_u64(bootstrap.seed);
    let mut chosen = Vec::with_capacity(pairs);
    let mut draws: Vec<f64> = (0..bootstrap.resamples)
        .filter_map(|_| {
            resample.draw(&mut rng, &mut chosen);
            estimate(&chosen).map(|(_, _, change)| change)
        })
        .collect();
    let (low, high) = crate::statistics::percentile_interval(&mut draws, bootstrap.confidence)
        .unwrap_or((point, point));
    Ok(PairedEstimate {
        base: base_figure,
        candidate: candidate_figure,
        change: point,
        interval: [low, high],
        pairs,
    })
}

/// The tails of the pass, paired: p95 and p99 of each side over all its
/// passes, their relative change and its interval over the block pairs.
pub fn paired_tails(
    samples: &PairedSamples,
    bootstrap: GateBootstrap,
) -> Vec<(Metric, PairedEstimate)> {
    [Metric::P95, Metric::P99]
        .into_iter()
        .filter_map(|metric| {
            paired_estimate(
                samples,
                metric,
                (&samples.base.pass_ns, &samples.candidate.pass_ns),
                true,
                bootstrap,
            )
            .ok()
            .map(|estimate| (metric, estimate))
        })
        .collect()
}

fn evaluate_one(
    gate: &Gate,
    samples: &PairedSamples,
    parity: &Parity,
    bootstrap: GateBootstrap,
) -> GateResult {
    if gate.metric == Metric::Parity {
        let (outcome, note) = match parity {
            Parity::Passed => (GateOutcome::Holds, None),
            Parity::Failed(why) => (GateOutcome::Fails, Some(why.clone())),
            Parity::NotChecked(why) => (GateOutcome::Unclear, Some(why.clone())),
        };
        return GateResult {
            gate: gate.clone(),
            base: None,
            candidate: None,
            change: None,
            interval: None,
            outcome,
            note,
        };
    }
    let range = gate.range.as_deref();
    let (Some(base), Some(candidate)) = (
        side_values(&samples.base, gate.metric, range),
        side_values(&samples.candidate, gate.metric, range),
    ) else {
        let what = match range {
            Some(range) => format!("`{}` of range `{range}`", gate.metric.name()),
            None => format!("`{}`", gate.metric.name()),
        };
        let why = if gate.metric.is_memory() {
            "measured on both sides (run with --memory)"
        } else {
            "measured on both sides"
        };
        return unclear(gate, format!("{what} was not {why}"));
    };
    let relative = matches!(gate.threshold, Threshold::Relative(_));
    let estimate =
        match paired_estimate(samples, gate.metric, (base, candidate), relative, bootstrap) {
            Ok(estimate) => estimate,
            Err(why) => return unclear(gate, why),
        };
    let (base_figure, candidate_figure, point) =
        (estimate.base, estimate.candidate, estimate.change);
    let interval = (estimate.interval[0], estimate.interval[1]);
    let pairs = estimate.pairs;
    let threshold = match gate.threshold {
        Threshold::Relative(t) | Threshold::Absolute(t) => t,
    };
    let low_meets = gate.comparison.meets(interval.0, threshold);
    let high_meets = gate.comparison.meets(interval.1, threshold);
    let outcome = match (low_meets, high_meets) {
        (true, true) => GateOutcome::Holds,
        (false, false) => GateOutcome::Fails,
        _ => GateOutcome::Unclear,
    };
    let note = (pairs < crate::paired::MIN_PAIRS).then(|| {
        format!(
            "only {pairs} block pairs ({} are needed for an interval worth trusting)",
            crate::paired::MIN_PAIRS
        )
    });
    GateResult {
        gate: gate.clone(),
        base: Some(base_figure),
        candidate: Some(candidate_figure),
        change: Some(point),
        interval: Some([interval.0, interval.1]),
        outcome: if note.is_some() {
            GateOutcome::Unclear
        } else {
            outcome
        },
        note,
    }
}

/// `value` of `gate`'s kind as a reader expects it: `-3.1 %`, `+48 µs`,
/// `+1.5 KiB`, `+2`.
pub fn format_change(gate: &Gate, value: f64) -> String {
    match gate.threshold {
        Threshold::Relative(_) => format!("{:+.1} %", value * 100.0),
        Threshold::Absolute(_) => match gate.metric.unit() {
            Unit::Time => {
                let sign = if value < 0.0 { "-" } else { "+" };
                let ns = value.abs();
                if ns >= 1e9 {
                    format!("{sign}{:.2} s", ns / 1e9)
                } else if ns >= 1e6 {
                    format!("{sign}{:.2} ms", ns / 1e6)
                } else if ns >= 1e3 {
                    format!("{sign}{:.2} µs", ns / 1e3)
                } else {
                    format!("{sign}{ns:.0} ns")
                }
            }
            Unit::Bytes => {
                let sign = if value < 0.0 { "-" } else { "+" };
                format!("{sign}{}", format_bytes(value.abs()))
            }
            Unit::Count => format!("{value:+.1}"),
        },
    }
}

/// `bytes` as a gate's figures are shown: [`profiling_core::units::format_bytes`].
pub fn format_bytes(bytes: f64) -> String {
    profiling_core::units::format_bytes(bytes)
}

/// One line per gate, then the verdict: what `ab --accept` prints.
pub fn render(results: &[GateResult]) -> String {
    let width = results
        .iter()
        .map(|r| r.gate.text.chars().count())
        .max()
        .unwrap_or(0);
    let mut text = String::from("gates, agreed before measuring:\n");
    for result in results {
        let estimate = match (result.change, result.interval) {
            (Some(change), Some([low, high])) => format!(
                "{} [{}, {}]",
                format_change(&result.gate, change),
                format_change(&result.gate, low),
                format_change(&result.gate, high)
            ),
            _ => String::new(),
        };
        let outcome = match result.outcome {
            GateOutcome::Holds => "holds",
            GateOutcome::Fails => "fails",
            GateOutcome::Unclear => "unclear",
        };
        let note = result
            .note
            .as_deref()
            .map(|n| format!(": {n}"))
            .unwrap_or_default();
        let estimate = if estimate.is_empty() {
            String::new()
        } else {
            format!("{estimate}  ")
        };
        text.push_str(&format!(
            "  {:<width$}  {estimate}{outcome}{note}\n",
            result.gate.text
        ));
    }
    let verdict = verdict(results);
    let failed: Vec<&str> = results
        .iter()
        .filter(|r| r.outcome == GateOutcome::Fails)
        .map(|r| r.gate.text.as_str())
        .collect();
    let unclear: Vec<&str> = results
        .iter()
        .filter(|r| r.outcome == GateOutcome::Unclear)
        .map(|r| r.gate.text.as_str())
        .collect();
    let why = match verdict {
        GateVerdict::Accept => "every gate holds".to_owned(),
        GateVerdict::Reject => format!("failed: {}", failed.join(", ")),
        GateVerdict::Inconclusive => format!(
            "unclear: {} (more passes, or --repetitions, narrow the intervals)",
            unclear.join(", ")
        ),
    };
    text.push_str(&format!("verdict: {verdict} ({why})\n"));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(text: &str) -> Gate {
        parse_gates(text).unwrap().remove(0)
    }

    #[test]
    fn the_reference_gates_read_as_written() {
        let gates = parse_gates("p50<=-3%, mean<=-3%, p99<=+2%, peak<=+2%").unwrap();
        let read: Vec<(Metric, Comparison, Threshold)> = gates
            .iter()
            .map(|g| (g.metric, g.comparison, g.threshold))
            .collect();
        assert_eq!(
            read,
            [
                (Metric::P50, Comparison::AtMost, Threshold::Relative(-0.03)),
                (Metric::Mean, Comparison::AtMost, Threshold::Relative(-0.03)),
                (Metric::P99, Comparison::AtMost, Threshold::Relative(0.02)),
                (Metric::Peak, Comparison::AtMost, Threshold::Relative(0.02)),
            ]
        );
        assert!(gates.iter().all(|g| g.range.is_none()));
    }

    #[test]
    fn ranges_units_and_parity() {
        let g = gate(" p99 [decode/nms] < +50us ");
        assert_eq!(g.range.as_deref(), Some("decode/nms"));
        assert_eq!(g.comparison, Comparison::Below);
        assert_eq!(g.threshold, Threshold::Absolute(50_000.0));
        assert_eq!(g.text, "p99[decode/nms]<+50us");
        assert_eq!(gate("max>=-1.5ms").threshold, Threshold::Absolute(-1.5e6));
        assert_eq!(
            gate("bytes<=+64KiB").threshold,
            Threshold::Absolute(65536.0)
        );
        // The units of every duration and size the tool reads.
        assert_eq!(
            gate("peak<=+1.5MB").threshold,
            Threshold::Absolute(1_500_000.0)
        );
        assert_eq!(gate("mean<=+1m").threshold, Threshold::Absolute(60e9));
        assert_eq!(
            gate("allocations[step]<=+0").threshold,
            Threshold::Absolute(0.0)
        );
        assert_eq!(gate("parity").metric, Metric::Parity);
    }

    /// A memory gate on a pair that records no memory can never decide:
    /// refused before anything runs, the gate and the option named.
    #[test]
    fn memory_gates_without_memory_are_refused_before_the_pair() {
        let gates = parse_gates("p50<=-3%, peak<=+2%, allocations[step]<=+0").unwrap();
        let refused = check_recorded(&gates, false).unwrap_err();
        assert_eq!((refused.index, refused.text.as_str()), (2, "peak<=+2%"));
        assert_eq!(
            refused.to_string(),
            "gate 2 `peak<=+2%`: `peak` is recorded only with memory on (--memory, or `memory: on` in the config): no pair without it can decide this gate"
        );
        assert_eq!(check_recorded(&gates, true), Ok(()));
        assert_eq!(
            check_recorded(&parse_gates("p99[x]<=+2%").unwrap(), false),
            Ok(())
        );
    }

    /// A gate on a range the pair does not have (on either side), or on
    /// memory it did not record, is refused naming the ranges there are.
    #[test]
    fn a_gate_on_a_range_the_pair_lacks_names_the_ranges_there_are() {
        let mut samples = samples(1.0);
        for side in [&mut samples.base, &mut samples.candidate] {
            side.ranges.insert("decode".into(), side.pass_ns.clone());
            side.ranges
                .insert("decode/nms".into(), side.pass_ns.clone());
        }
        let check = |list: &str, samples: &PairedSamples| {
            check_measured(&parse_gates(list).unwrap(), samples)
        };
        assert_eq!(check("p50<=-3%, p99[decode/nms]<=+2%", &samples), Ok(()));
        let refused = check("p50<=-3%, p99[nonexistent]<=+2%", &samples).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "gate 2 `p99[nonexistent]<=+2%`: the pair has no range `nonexistent`: no pair of these targets can decide this gate (the ranges there are: decode, decode/nms)"
        );
        samples
            .candidate
            .ranges
            .insert("only-new".into(), samples.candidate.pass_ns.clone());
        let check = |list: &str| check(list, &samples);
        assert_eq!(
            check("mean[only-new]<=+0%").unwrap_err().to_string(),
            "gate 1 `mean[only-new]<=+0%`: the base has no range `only-new`: no pair of these targets can decide this gate (the base's ranges: decode, decode/nms; the candidate's: decode, decode/nms, only-new)"
        );
        assert_eq!(
            check("bytes<=+0%").unwrap_err().to_string(),
            "gate 1 `bytes<=+0%`: `bytes` is recorded only with memory on (--memory, or `memory: on` in the config): no pair without it can decide this gate"
        );
        // Parity is not measured: whether it was checked is the caller's.
        assert_eq!(check("parity"), Ok(()));
    }

    #[test]
    fn bad_gates_say_which_and_why() {
        let problem = |list: &str| {
            let error = parse_gates(list).unwrap_err();
            (error.index, error.problem)
        };
        assert_eq!(problem("p50<=-3%, p42<=1%").0, 2);
        assert_eq!(problem("p50<=-3%, p42<=1%").1, "unknown metric `p42`");
        assert_eq!(
            problem("p99<=2").1,
            "`2` has no unit: a change in % (`2%`) or a time (`2us`: ns, us, ms, s)"
        );
        assert_eq!(
            problem("p99<=2parsecs").1,
            "unknown unit `parsecs` for a time: ns, us, ms, s, m or h (or %)"
        );
        assert_eq!(
            problem("p99=2%").1,
            "`=2%` is not a comparison: use <=, <, >= or >"
        );
        assert_eq!(problem("p99").1, "no comparison: use <=, <, >= or >");
        assert_eq!(problem("p99<=").1, "no threshold after the comparison");
        assert_eq!(
            problem("p99<=abc%").1,
            "`abc%` is not a number with a unit or %"
        );
        assert_eq!(problem("p99[nms<=1%").1, "`[nms` is not closed with `]`");
        assert_eq!(problem("p50<=-3%,").0, 2);
        assert_eq!(problem("").1, "no gate given");
        let message = parse_gates("mean<=-3%, wat<1%").unwrap_err().to_string();
        assert!(
            message.starts_with("gate 2 `wat<1%`: unknown metric `wat`\n"),
            "{message}"
        );
        assert!(
            message.contains(
                "metrics: mean, p50, p90, p95, p99, max, allocations, bytes, peak, parity"
            ),
            "{message}"
        );
    }

    /// Percentiles by nearest rank over the pooled passes of the blocks
    /// drawn: the smallest value with at least that share at or below it.
    #[test]
    fn each_metric_is_computed_over_the_pooled_passes() {
        let (a, b): (Vec<u64>, Vec<u64>) = ((1..=6).collect(), (7..=10).collect());
        let blocks = [a.as_slice(), b.as_slice()];
        let of = |metric| statistic(metric, &blocks).unwrap();
        assert_eq!(of(Metric::P50), 5.0);
        assert_eq!(of(Metric::P90), 9.0);
        assert_eq!(of(Metric::P95), 10.0);
        assert_eq!(of(Metric::P99), 10.0);
        assert_eq!(of(Metric::Max), 10.0);
        assert_eq!(of(Metric::Mean), 5.5);
        assert_eq!(of(Metric::Peak), 10.0);
        assert_eq!(of(Metric::Allocations), 5.5);
        assert_eq!(statistic(Metric::P50, &[]), None);
    }

    /// 12 block pairs of 10 passes; the candidate's passes are the base's
    /// times `factor`, with a spread so that the intervals are not points.
    fn samples(factor: f64) -> PairedSamples {
        let mut blocks = Vec::new();
        let (mut base, mut candidate) = (Vec::new(), Vec::new());
        for block in 0..12u64 {
            blocks.push(("base".to_owned(), 10));
            blocks.push(("candidate".to_owned(), 10));
            for pass in 0..10u64 {
                let t = 1_000_000 + 10_000 * ((block * 7 + pass * 3) % 11);
                base.push(t);
                candidate.push((t as f64 * factor) as u64);
            }
        }
        let side = |pass_ns: Vec<u64>| SidePasses {
            pass_ns,
            ..SidePasses::default()
        };
        PairedSamples {
            format_version: profiling_core::driver::run_samples::PAIRED_VERSION,
            blocks,
            processes: 1,
            stages: Vec::new(),
            canary: Vec::new(),
            base: side(base),
            candidate: side(candidate),
        }
    }

    fn outcome(list: &str, factor: f64) -> Vec<GateOutcome> {
        evaluate(
            &parse_gates(list).unwrap(),
            &samples(factor),
            &Parity::NotChecked("not checked".into()),
            GateBootstrap::default(),
        )
        .iter()
        .map(|r| r.outcome)
        .collect()
    }

    #[test]
    fn a_change_well_inside_a_gate_holds_and_well_outside_fails() {
        // 10 % faster: every pass 0.9 times the base's.
        assert_eq!(
            outcome("p50<=-3%, mean<=-3%, p99<=+2%, max<=+2%", 0.9),
            [GateOutcome::Holds; 4]
        );
        assert_eq!(verdict_of("p50<=-3%, p99<=+2%", 0.9), GateVerdict::Accept);
        // 10 % slower fails them all.
        assert_eq!(
            outcome("p50<=-3%, mean<=-3%, p99<=+2%", 1.1),
            [GateOutcome::Fails; 3]
        );
        assert_eq!(verdict_of("p50<=-3%, p99<=+2%", 1.1), GateVerdict::Reject);
        // Unchanged code: no speed-up, and no slow-down either.
        assert_eq!(
            outcome("mean<=-3%, p99<=+2%", 1.0),
            [GateOutcome::Fails, GateOutcome::Holds]
        );
        // An absolute threshold in the metric's unit: 10 % of ~1.05 ms.
        assert_eq!(
            outcome("mean<=-50us, mean<=-200us", 0.9),
            [GateOutcome::Holds, GateOutcome::Fails]
        );
    }

    fn verdict_of(list: &str, factor: f64) -> GateVerdict {
        verdict(&evaluate(
            &parse_gates(list).unwrap(),
            &samples(factor),
            &Parity::NotChecked("not checked".into()),
            GateBootstrap::default(),
        ))
    }

    /// Two stages of six block pairs: in the first the candidate landed
    /// its data 10 % slower, in the second it is the base's equal. Every
    /// pair of the first is clear of a +2 % gate, the pooled mean too, but
    /// a fresh start says otherwise: resampling stages keeps it unclear.
    #[test]
    fn a_gate_over_stages_that_disagree_is_unclear() {
        let mut s = samples(1.0);
        for t in &mut s.candidate.pass_ns[..60] {
            *t = (*t as f64 * 1.1) as u64;
        }
        let judge = |s: &PairedSamples| {
            evaluate(
                &parse_gates("mean<=+2%").unwrap(),
                s,
                &Parity::Passed,
                GateBootstrap::default(),
            )[0]
            .clone()
        };
        assert_eq!(judge(&s).outcome, GateOutcome::Fails);
        s.stages = vec![6, 6];
        let staged = judge(&s);
        let [low, high] = staged.interval.unwrap();
        assert!(low < 0.02 && high > 0.09, "{low} {high}");
        assert_eq!(staged.outcome, GateOutcome::Unclear);
    }

    /// A change the blocks disagree on straddles a threshold near it.
    #[test]
    fn an_interval_across_the_threshold_is_unclear() {
        let mut s = samples(1.0);
        // Half the candidate's blocks 6 % faster, half as fast as the base.
        for (i, t) in s.candidate.pass_ns.iter_mut().enumerate() {
            if (i / 10) % 2 == 0 {
                *t = (*t as f64 * 0.94) as u64;
            }
        }
        let results = evaluate(
            &parse_gates("mean<=-3%").unwrap(),
            &s,
            &Parity::Passed,
            GateBootstrap::default(),
        );
        let [low, high] = results[0].interval.unwrap();
        assert!(low < -0.03 && high > -0.03, "{low} {high}");
        assert_eq!(results[0].outcome, GateOutcome::Unclear);
        assert_eq!(verdict(&results), GateVerdict::Inconclusive);
    }

    #[test]
    fn what_a_run_did_not_measure_is_unclear_and_says_so() {
        let results = evaluate(
            &parse_gates("peak<=+2%, p99[nms]<=+2%, parity").unwrap(),
            &samples(1.0),
            &Parity::NotChecked("this run checks no parity".into()),
            GateBootstrap::default(),
        );
        let notes: Vec<&str> = results.iter().map(|r| r.note.as_deref().unwrap()).collect();
        assert_eq!(
            notes,
            [
                "`peak` was not measured on both sides (run with --memory)",
                "`p99` of range `nms` was not measured on both sides",
                "this run checks no parity",
            ]
        );
        assert!(results.iter().all(|r| r.outcome == GateOutcome::Unclear));
        let failed = evaluate(
            &parse_gates("parity").unwrap(),
            &samples(1.0),
            &Parity::Failed("record 3 differs".into()),
            GateBootstrap::default(),
        );
        assert_eq!(verdict(&failed), GateVerdict::Reject);
    }

    #[test]
    fn repetitions_decide_only_when_they_agree() {
        use GateVerdict::*;
        assert_eq!(verdict_of_repetitions(&[Accept, Accept, Accept]), Accept);
        assert_eq!(verdict_of_repetitions(&[Reject, Reject]), Reject);
        assert_eq!(
            verdict_of_repetitions(&[Accept, Reject, Accept]),
            Inconclusive
        );
        assert_eq!(
            verdict_of_repetitions(&[Reject, Inconclusive]),
            Inconclusive
        );
        assert_eq!(verdict_of_repetitions(&[]), Inconclusive);
    }

    /// The pass's p95 and p99 paired: each side's over its passes, the
    /// change between them with an interval over the block pairs.
    #[test]
    fn the_tails_of_the_pass_are_paired_too() {
        let tails = paired_tails(&samples(1.1), GateBootstrap::default());
        let metrics: Vec<Metric> = tails.iter().map(|(m, _)| *m).collect();
        assert_eq!(metrics, [Metric::P95, Metric::P99]);
        for (metric, tail) in &tails {
            assert!((tail.change - 0.1).abs() < 0.001, "{metric:?}: {tail:?}");
            let [low, high] = tail.interval;
            assert!(low <= tail.change && tail.change <= high, "{tail:?}");
            assert!(tail.candidate > tail.base);
            assert_eq!(tail.pairs, 12);
        }
        // The base's p99 is its 119th of 120 passes: 1.1 ms at most.
        assert!(tails[1].1.base <= 1_100_000.0 && tails[1].1.base >= 1_090_000.0);
    }

    #[test]
    fn the_report_names_each_gate_its_interval_and_the_verdict() {
        let results = evaluate(
            &parse_gates("p50<=-3%, p99<=+2%").unwrap(),
            &samples(1.1),
            &Parity::Passed,
            GateBootstrap::default(),
        );
        let text = render(&results);
        assert!(
            text.starts_with("gates, agreed before measuring:\n  p50<=-3%  +10.0 % ["),
            "{text}"
        );
        assert!(
            text.ends_with("verdict: reject (failed: p50<=-3%, p99<=+2%)\n"),
            "{text}"
        );
    }
}
