//! Looking at a paired comparison more than once: the fixed schedule of
//! `ab --until-decided`'s looks, the stages pooled, each look's levels, and
//! what a verdict that must not stand is demoted to.
//!
//! Looking at a comparison again and again, and stopping when it says
//! something, calls a difference where there is none more often than one
//! look's level says: each look is another chance to be wrong. So the
//! looks are fixed in advance and share the error rate (Bonferroni): after
//! the first stage, from its time alone (never from what it measured), the
//! [`schedule`] is fixed: K more stages at most ([`MAX_LOOKS`]), sized to
//! fill the budget in equal parts, each followed by a look that judges the
//! stages [`pool`]ed so far at confidence `1 - (1 - C) / K` and significance
//! `S / K` ([`at_look`]). Whatever look stops the pairing, the chance that
//! any look called a change wrongly stays within `1 - C` (and `S`).

use std::time::Duration;

use profiling_core::driver::run_samples::{PairedSamples, SidePasses, PAIRED_VERSION};

use crate::gates::{GateOutcome, GateResult};
use crate::{Comparison, Options, Verdict};

pub use profiling_core::driver::run_samples::MAX_LOOKS;

/// The looks and the later stages' size, fixed after the first stage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    /// Looks at most: one after each stage after the first (0: the budget
    /// holds no second stage).
    pub looks: u32,
    /// Measured passes a side of each later stage.
    pub later_passes: u32,
    /// Seconds a stage takes besides its measured passes (starting,
    /// warming up, writing), and a pass of both sides.
    pub overhead: f64,
    pub pass_pair: f64,
    /// Block pairs of the first stage.
    pub first_pairs: u32,
}

impl Schedule {
    /// The seconds a later stage is expected to take.
    pub fn stage_seconds(&self) -> f64 {
        self.overhead + self.pass_pair * f64::from(self.later_passes)
    }
}

/// The most measured passes a side of a later stage runs: each pass's,
/// call's and range's time is kept until the stages are pooled and judged.
pub const MAX_STAGE_PASSES: u32 = 1_000_000;

/// The schedule for `budget`, after a first stage that took `first` and
/// measured `samples`: its time alone (the passes of both sides together,
/// never their difference) fixes how many more stages of at least its size
/// fit, and how many passes fill each one's share of what is left.
pub fn schedule(budget: Duration, first: Duration, samples: &PairedSamples) -> Schedule {
    let passes = samples.base.pass_ns.len().max(1);
    let first_pairs = samples
        .blocks
        .iter()
        .filter(|(side, _)| side == "base")
        .count() as u32;
    let measured = samples
        .base
        .pass_ns
        .iter()
        .chain(&samples.candidate.pass_ns)
        .map(|&ns| ns as f64 / 1e9)
        .sum::<f64>();
    let pass_pair = (measured / passes as f64).max(1e-9);
    let first = first.as_secs_f64().max(1e-9);
    let overhead = (first - measured).max(0.0);
    let left = budget.as_secs_f64() - first;
    let fit = (left / first).floor();
    if fit < 1.0 {
        return Schedule {
            looks: 0,
            later_passes: passes as u32,
            overhead,
            pass_pair,
            first_pairs,
        };
    }
    let later = fit.min(f64::from(MAX_LOOKS));
    let share = left / later;
    // Never fewer passes than the first stage's, never more than a stage
    // keeps in memory (a week's budget of microsecond passes would ask
    // for billions).
    let most = f64::from(MAX_STAGE_PASSES).max(passes as f64);
    let later_passes = ((share - overhead) / pass_pair)
        .floor()
        .max(passes as f64)
        .min(most) as u32;
    Schedule {
        looks: later as u32,
        later_passes,
        overhead,
        pass_pair,
        first_pairs,
    }
}

/// The stages' samples as one paired run: their blocks in order, each
/// side's passes after the other's, and how many block pairs each stage
/// gave. A range missing from a stage counts 0
/// in its passes, as in a pass without it.
pub fn pool(stages: &[&PairedSamples]) -> PairedSamples {
    let mut pooled = PairedSamples {
        format_version: PAIRED_VERSION,
        blocks: Vec::new(),
        base: SidePasses::default(),
        candidate: SidePasses::default(),
        processes: stages.first().map_or(1, |s| s.processes),
        stages: Vec::new(),
        canary: Vec::new(),
    };
    for stage in stages {
        let pairs = stage
            .blocks
            .iter()
            .filter(|(side, _)| side == "base")
            .count() as u32;
        if stage.stages.is_empty() {
            pooled.stages.push(pairs);
        } else {
            pooled.stages.extend(&stage.stages);
        }
        pooled.blocks.extend(stage.blocks.iter().cloned());
        pooled.canary.extend(&stage.canary);
        append(&mut pooled.base, &stage.base);
        append(&mut pooled.candidate, &stage.candidate);
    }
    pooled
}

fn append(into: &mut SidePasses, from: &SidePasses) {
    let (before, added) = (into.pass_ns.len(), from.pass_ns.len());
    into.pass_ns.extend(&from.pass_ns);
    into.call_ns.extend(&from.call_ns);
    into.allocations.extend(&from.allocations);
    into.allocated_bytes.extend(&from.allocated_bytes);
    into.peak_bytes.extend(&from.peak_bytes);
    for (into, from) in [
        (&mut into.ranges, &from.ranges),
        (&mut into.range_allocations, &from.range_allocations),
    ] {
        let names: Vec<String> = into.keys().chain(from.keys()).cloned().collect();
        for name in names {
            let values = into.entry(name.clone()).or_insert_with(|| vec![0; before]);
            if values.len() == before {
                match from.get(&name) {
                    Some(more) => values.extend(more),
                    None => values.extend(std::iter::repeat_n(0, added)),
                }
            }
        }
    }
}

/// `options` at one of `looks` looks: the confidence and significance
/// that keep the error rate over all of them within the options' own.
pub fn at_look(options: &Options, looks: u32) -> Options {
    let looks = f64::from(looks.max(1));
    let mut look = *options;
    look.bootstrap.confidence = 1.0 - (1.0 - options.bootstrap.confidence) / looks;
    look.significance = options.significance / looks;
    look
}

/// Demotes every verdict of `comparison` that says something (faster,
/// slower, no change) to unclear, with `why`: a comparison that may not be
/// read alone (the first stage of a sequential pairing, never looked at).
pub fn demote(comparison: &mut Comparison, why: &str) {
    for row in &mut comparison.rows {
        if matches!(
            row.verdict,
            Verdict::Faster | Verdict::Slower | Verdict::NoChange
        ) {
            row.verdict = Verdict::Unclear;
            row.note = Some(why.to_owned());
        }
    }
}

/// [`demote`] for gates: every gate that holds or fails becomes unclear.
pub fn demote_gates(results: &mut [GateResult], why: &str) {
    for result in results {
        if result.outcome != GateOutcome::Unclear {
            result.outcome = GateOutcome::Unclear;
            result.note = Some(why.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(passes: usize, base_ns: u64, candidate_ns: u64) -> PairedSamples {
        let side = |ns: u64, range: &str| SidePasses {
            pass_ns: vec![ns; passes],
            call_ns: vec![ns; passes],
            ranges: [(range.to_owned(), vec![ns / 2; passes])].into(),
            ..Default::default()
        };
        PairedSamples {
            format_version: PAIRED_VERSION,
            blocks: vec![
                ("base".to_owned(), passes as u32 / 2),
                ("candidate".to_owned(), passes as u32),
                ("base".to_owned(), passes as u32 - passes as u32 / 2),
            ],
            base: side(base_ns, "a"),
            candidate: side(candidate_ns, "b"),
            processes: 1,
            stages: Vec::new(),
            canary: Vec::new(),
        }
    }

    #[test]
    fn the_schedule_is_fixed_by_the_first_stages_time_and_fills_the_budget() {
        // 100 passes of 1 ms a side: 0.2 s measured, 0.8 s of starting.
        let first = samples(100, 1_000_000, 1_000_000);
        let plan = schedule(Duration::from_secs(60), Duration::from_secs(1), &first);
        assert_eq!(plan.looks, MAX_LOOKS);
        assert!((plan.overhead - 0.8).abs() < 1e-9, "{plan:?}");
        // 59 s left in 8 stages: 7.375 s each, 0.8 s of it starting.
        assert_eq!(plan.later_passes, 3287, "{plan:?}");
        assert!((1.0 + 8.0 * plan.stage_seconds() - 60.0).abs() < 0.01);
        // A budget that holds one more stage of the first's size: one look.
        let plan = schedule(Duration::from_secs(2), Duration::from_secs(1), &first);
        assert_eq!((plan.looks, plan.later_passes), (1, 100));
        // None: no look (the first stage alone is not looked at).
        let plan = schedule(Duration::from_millis(1500), Duration::from_secs(1), &first);
        assert_eq!(plan.looks, 0);
        // The difference between the sides does not move it.
        let slower = samples(100, 900_000, 1_100_000);
        let plan = schedule(Duration::from_secs(60), Duration::from_secs(1), &slower);
        assert_eq!(
            (plan.looks, plan.later_passes),
            (MAX_LOOKS, 3287),
            "{plan:?}"
        );
    }

    #[test]
    fn a_long_budget_of_fast_passes_plans_no_more_than_a_stage_keeps() {
        // A week of budget, passes of a microsecond: billions would fit.
        let first = samples(100, 1_000, 1_000);
        let week = Duration::from_secs(7 * 24 * 3600);
        let plan = schedule(week, Duration::from_millis(10), &first);
        assert_eq!(plan.later_passes, MAX_STAGE_PASSES, "{plan:?}");
        // A first stage longer than the cap keeps its own count.
        let big = samples(2_000_000, 1_000, 1_000);
        let plan = schedule(week, Duration::from_secs(5), &big);
        assert_eq!(plan.later_passes, 2_000_000, "{plan:?}");
    }

    #[test]
    fn pooled_stages_keep_every_pass_and_block_in_order() {
        let (one, two) = (samples(4, 10, 20), samples(6, 30, 40));
        let pooled = pool(&[&one, &two]);
        assert_eq!(pooled.blocks.len(), 6);
        assert_eq!(pooled.blocks[3], ("base".to_owned(), 3));
        assert_eq!(pooled.stages, [2, 2]);
        assert_eq!(pooled.base.pass_ns, [vec![10; 4], vec![30; 6]].concat());
        assert_eq!(
            pooled.candidate.call_ns,
            [vec![20; 4], vec![40; 6]].concat()
        );
        assert_eq!(pooled.base.ranges["a"], [vec![5; 4], vec![15; 6]].concat());
        // A range only the second stage's candidate has counts 0 before.
        let mut three = samples(2, 50, 60);
        three.candidate.ranges.insert("c".to_owned(), vec![7, 7]);
        let pooled = pool(&[&one, &three]);
        assert_eq!(pooled.candidate.ranges["c"], vec![0, 0, 0, 0, 7, 7]);
        assert_eq!(pooled.candidate.ranges["b"], vec![10, 10, 10, 10, 30, 30]);
    }

    #[test]
    fn each_of_k_looks_spends_a_kth_of_the_error_rate() {
        let options = Options::default();
        let look = at_look(&options, 8);
        assert!((look.bootstrap.confidence - (1.0 - 0.05 / 8.0)).abs() < 1e-12);
        assert!((look.significance - options.significance / 8.0).abs() < 1e-12);
        assert_eq!(at_look(&options, 1), options);
    }
}
