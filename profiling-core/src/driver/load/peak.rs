//! `--find-peak`: the highest offered rate whose p99 holds the bound,
//! found by a stated search, each step a full measurement: from a first
//! rate, double while the bound holds (or halve while it does not) until
//! one step holds and the next does not, then bisect that bracket (on a
//! log scale) until its ends are within the tolerance of each other.

use serde::{Deserialize, Serialize};

use super::summary::LoadStep;

/// How the search goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeakSearch {
    /// The first rate tried.
    pub start_qps: f64,
    /// The search ends when the highest rate that held and the lowest
    /// that did not are within this share of each other (0.05: 5 %).
    pub tolerance: f64,
    /// At most this many steps.
    pub max_steps: u32,
}

impl PeakSearch {
    /// The search in one sentence, for the record and the table.
    pub fn describe(&self) -> String {
        format!(
            "from {:.1} queries a second, doubled while p99 held the bound (halved while it did not), then the bracket bisected on a log scale until its ends were within {:.0} % (at most {} steps, each a full measurement)",
            self.start_qps,
            self.tolerance * 100.0,
            self.max_steps
        )
    }
}

/// One point of the latency-throughput curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub offered_qps: f64,
    pub served_qps: f64,
    pub p99_ns: Option<u64>,
    pub held: bool,
    pub fell_behind: bool,
}

/// How a range's p99 changed from the lowest rate measured to the peak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RangeGrowth {
    pub name: String,
    pub low_qps: f64,
    pub low_p99_ns: u64,
    pub peak_qps: f64,
    pub peak_p99_ns: u64,
    /// Peak over low.
    pub ratio: f64,
}

/// What the search found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeakRecord {
    pub bound_ns: u64,
    /// `None` when no rate tried held the bound.
    pub peak_qps: Option<f64>,
    /// The lowest rate tried that did not hold, when one did not.
    pub first_missed_qps: Option<f64>,
    pub search: String,
    /// Every step, by offered rate.
    pub curve: Vec<CurvePoint>,
    /// Each range's p99 at the lowest rate and at the peak, the ranges
    /// that grew most first (queueing among them).
    pub growth: Vec<RangeGrowth>,
    /// The search stopped before it converged (a signal, or the steps ran
    /// out): why.
    #[serde(default)]
    pub unfinished: Option<String>,
}

/// Runs the search: `measure(qps)` is one full load at `qps`; `None` from
/// it stops the search (a signal), keeping the steps measured.
pub fn find_peak<E>(
    search: &PeakSearch,
    bound_ns: u64,
    mut measure: impl FnMut(f64) -> Result<Option<LoadStep>, E>,
) -> Result<(PeakRecord, Vec<LoadStep>), E> {
    let held = |step: &LoadStep| step.bound.as_ref().is_some_and(|b| b.held);
    let mut steps: Vec<LoadStep> = Vec::new();
    let mut best: Option<f64> = None;
    let mut missed: Option<f64> = None;
    let mut qps = search.start_qps;
    let mut unfinished = None;
    // The p99 of the step before a halving, while no rate has held.
    let mut halved_from: Option<u64> = None;
    loop {
        if steps.len() as u32 >= search.max_steps {
            unfinished = Some(format!(
                "the search used its {} steps before the bracket closed",
                search.max_steps
            ));
            break;
        }
        let Some(step) = measure(qps)? else {
            unfinished = Some("stopped by a signal: the steps measured are kept".to_owned());
            break;
        };
        // A query takes at least its service time: when that alone misses
        // the bound, no rate holds it, however low.
        let service_p99 = step
            .service
            .as_ref()
            .and_then(|s| s.get("p99"))
            .map(|p| p.value_ns);
        let hopeless = service_p99.filter(|&p99| p99 > bound_ns);
        let p99 = step.p99_ns();
        if held(&step) {
            best = Some(best.map_or(qps, |b: f64| b.max(qps)));
        } else {
            missed = Some(missed.map_or(qps, |m: f64| m.min(qps)));
        }
        steps.push(step);
        if let (None, Some(service)) = (best, hopeless) {
            unfinished = Some(format!(
                "the target's own time alone misses the bound (its p99 {:.3} ms, the bound {:.3} ms): no rate holds it",
                service as f64 / 1e6,
                bound_ns as f64 / 1e6
            ));
            break;
        }
        // Halving the rate that did not lower the p99 by a tenth will not
        // lower it further: what is left is the machine's, not the load's.
        if let (None, Some(now), Some(before)) = (best, p99, halved_from) {
            if now as f64 >= 0.9 * before as f64 {
                unfinished = Some(format!(
                    "halving the rate did not lower the p99 ({:.3} ms, then {:.3} ms): no lower rate holds the bound on this machine",
                    before as f64 / 1e6,
                    now as f64 / 1e6
                ));
                break;
            }
        }
        halved_from = p99;
        qps = match (best, missed) {
            (Some(low), Some(high)) => {
                if high / low <= 1.0 + search.tolerance {
                    break;
                }
                (low * high).sqrt()
            }
            (Some(low), None) => low * 2.0,
            (None, Some(high)) => {
                if high < search.start_qps / 1024.0 {
                    // Not even a trickle holds: the bound is below what
                    // one query takes.
                    break;
                }
                high / 2.0
            }
            (None, None) => unreachable!("a step either held or did not"),
        };
    }
    let mut curve: Vec<CurvePoint> = steps
        .iter()
        .map(|step| CurvePoint {
            offered_qps: step.offered_qps.unwrap_or(step.served_qps),
            served_qps: step.served_qps,
            p99_ns: step.p99_ns(),
            held: held(step),
            fell_behind: step.fell_behind(),
        })
        .collect();
    curve.sort_by(|a, b| a.offered_qps.total_cmp(&b.offered_qps));
    let growth = growth(&steps, best);
    Ok((
        PeakRecord {
            bound_ns,
            peak_qps: best,
            first_missed_qps: missed,
            search: search.describe(),
            curve,
            growth,
            unfinished,
        },
        steps,
    ))
}

/// Each range's p99 (and the queueing's) at the lowest rate measured and
/// at the peak (the highest that held, or the highest tried when none
/// did), the largest growth first.
pub fn growth(steps: &[LoadStep], peak: Option<f64>) -> Vec<RangeGrowth> {
    let rate = |step: &LoadStep| step.offered_qps.unwrap_or(step.served_qps);
    let Some(low) = steps.iter().min_by(|a, b| rate(a).total_cmp(&rate(b))) else {
        return Vec::new();
    };
    let top = match peak {
        Some(peak) => steps.iter().find(|s| rate(s) == peak),
        None => steps.iter().max_by(|a, b| rate(a).total_cmp(&rate(b))),
    };
    let Some(top) = top.filter(|top| rate(top) > rate(low)) else {
        return Vec::new();
    };
    let queueing_p99 = |step: &LoadStep| {
        step.queueing
            .as_ref()
            .and_then(|q| q.get("p99"))
            .map(|p| p.value_ns)
    };
    let mut grown: Vec<RangeGrowth> = top
        .ranges
        .iter()
        .filter_map(|range| {
            let before = low.ranges.iter().find(|r| r.name == range.name)?;
            Some((range.name.clone(), before.p99_ns, range.p99_ns))
        })
        .chain(
            queueing_p99(low)
                .zip(queueing_p99(top))
                .map(|(a, b)| (super::summary::QUEUEING.to_owned(), a, b)),
        )
        .map(|(name, low_p99_ns, peak_p99_ns)| RangeGrowth {
            name,
            low_qps: rate(low),
            low_p99_ns,
            peak_qps: rate(top),
            peak_p99_ns,
            ratio: peak_p99_ns.max(1) as f64 / low_p99_ns.max(1) as f64,
        })
        .collect();
    grown.sort_by(|a, b| {
        (b.peak_p99_ns as i64 - b.low_p99_ns as i64)
            .cmp(&(a.peak_p99_ns as i64 - a.low_p99_ns as i64))
    });
    grown
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::load::summary::{BoundCheck, Distribution, ThreadsRecord};

    /// A step at `qps` whose p99 is `p99_ns`, judged against `bound_ns`.
    fn step(qps: f64, p99_ns: u64, bound_ns: u64) -> LoadStep {
        LoadStep {
            scenario: "server".to_owned(),
            offered_qps: Some(qps),
            scheduled_qps: None,
            arrival: Some("poisson".to_owned()),
            concurrency: None,
            workers: 1,
            queries: 400,
            duration_ns: 1,
            served_qps: qps,
            latency: Distribution::of(vec![p99_ns; 400]),
            queueing: None,
            service: None,
            bound: Some(BoundCheck {
                bound_ns,
                p99_ns,
                held: p99_ns <= bound_ns,
                certain: true,
                statement: String::new(),
            }),
            backlog: None,
            ranges: Vec::new(),
            tail: None,
            timeline: Vec::new(),
            threads: ThreadsRecord {
                workers: 1,
                in_process: None,
                ranged_elsewhere: Vec::new(),
                cores: 1,
                environment: Default::default(),
            },
            stopped: false,
        }
    }

    /// A server whose p99 is 1 ms up to 730 queries a second and 50 ms
    /// above: the search brackets 730 and closes in within 5 %.
    #[test]
    fn the_search_brackets_the_knee_and_closes_within_the_tolerance() {
        let search = PeakSearch {
            start_qps: 100.0,
            tolerance: 0.05,
            max_steps: 20,
        };
        let mut tried = Vec::new();
        let (record, steps) = find_peak(&search, 10_000_000, |qps| {
            tried.push(qps);
            let p99 = if qps <= 730.0 { 1_000_000 } else { 50_000_000 };
            Ok::<_, ()>(Some(step(qps, p99, 10_000_000)))
        })
        .unwrap();
        // Doubling: 100, 200, 400 held, 800 did not; then bisection.
        assert_eq!(tried[..4], [100.0, 200.0, 400.0, 800.0]);
        let peak = record.peak_qps.unwrap();
        let missed = record.first_missed_qps.unwrap();
        assert!(peak <= 730.0 && missed > 730.0, "{peak} {missed}");
        assert!(missed / peak <= 1.05, "{peak} {missed}");
        assert!(record.unfinished.is_none());
        assert_eq!(steps.len(), tried.len());
        // The curve is by rate, each step once.
        assert_eq!(record.curve.len(), tried.len());
        assert!(record
            .curve
            .windows(2)
            .all(|w| w[0].offered_qps < w[1].offered_qps));
    }

    /// A bound below the target's own time ends the search at once: no
    /// rate could hold it.
    #[test]
    fn a_bound_below_the_service_time_is_said_at_once() {
        let search = PeakSearch {
            start_qps: 100.0,
            tolerance: 0.05,
            max_steps: 12,
        };
        let (record, steps) = find_peak(&search, 10, |qps| {
            let mut slow = step(qps, 50, 10);
            slow.service = Distribution::of(vec![40; 400]);
            Ok::<_, ()>(Some(slow))
        })
        .unwrap();
        assert_eq!(steps.len(), 1);
        assert_eq!(record.peak_qps, None);
        assert!(record
            .unfinished
            .unwrap()
            .contains("own time alone misses the bound"),);
    }

    /// A first rate that misses halves until one holds; a bound nothing
    /// holds ends the search with no peak; a stop keeps what was measured.
    #[test]
    fn the_search_halves_down_gives_up_and_stops_when_told() {
        let search = PeakSearch {
            start_qps: 1000.0,
            tolerance: 0.05,
            max_steps: 40,
        };
        // Above 200 a second, the p99 falls with the rate but misses.
        let (record, _) = find_peak(&search, 10, |qps| {
            let p99 = if qps <= 200.0 { 5 } else { (qps / 10.0) as u64 };
            Ok::<_, ()>(Some(step(qps, p99, 10)))
        })
        .unwrap();
        let peak = record.peak_qps.unwrap();
        assert!((190.0..=200.0).contains(&peak), "{peak}");
        let (never, steps) =
            find_peak(&search, 10, |qps| Ok::<_, ()>(Some(step(qps, 50, 10)))).unwrap();
        assert_eq!(never.peak_qps, None);
        // Halving once did not lower the p99: the search says so and ends.
        assert_eq!(steps.len(), 2);
        assert!(never
            .unfinished
            .unwrap()
            .contains("halving the rate did not lower the p99"));
        let mut calls = 0;
        let (stopped, steps) = find_peak(&search, 10, |qps| {
            calls += 1;
            Ok::<_, ()>((calls < 3).then(|| step(qps, 5, 10)))
        })
        .unwrap();
        assert_eq!(steps.len(), 2);
        assert!(stopped.unfinished.unwrap().contains("signal"));
    }
}
