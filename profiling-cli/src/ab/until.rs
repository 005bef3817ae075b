//! `ab --until-decided`: pairs run in stages (`AB_ID-1`, `AB_ID-2`, ...)
//! until the verdict is clear or the budget is spent.
//!
//! Looking at a comparison again and again, and stopping when it says
//! something, calls a difference where there is none more often than one
//! look's level says: each look is another chance to be wrong. So the
//! looks are fixed in advance and share the error rate (Bonferroni): after
//! the first stage, from its time alone (never from what it measured), the
//! schedule is fixed: K more stages at most ([`super::MAX_LOOKS`]), sized
//! to fill the budget in equal parts, each followed by a look that judges
//! the stages pooled so far at confidence `1 - (1 - C) / K` and
//! significance `S / K`. Whatever look stops the pairing, the chance that
//! any look called a change wrongly stays within `1 - C` (and `S`).
//!
//! The first stage alone is never looked at: each stage builds both
//! sides' targets anew, and where a target's data lands (which pages,
//! which memory behind them) can make one side slower for a whole stage;
//! the pairs within a stage all share it. The looks resample stages as
//! well as pairs ([`profiling_compare::paired`]), so a verdict needs the
//! stages to agree, and a single stage cannot show whether they do.
//! Bonferroni spends the error rate more cautiously than a group
//! sequential design (Pocock's or O'Brien-Fleming's boundaries) would, so
//! a verdict takes a little longer; it needs no assumption about how the
//! looks' statistics are correlated, which the bootstrap over block pairs
//! does not give.

use std::io::Write;
use std::time::{Duration, Instant};

use profiling_compare::gates::{self, Gate, GateVerdict};
use profiling_compare::{Options, Verdict};
use profiling_core::driver::run_samples::{PairedSamples, SidePasses, PAIRED_VERSION};

use super::{
    agreed_gates, gate_results, judge_samples, read_samples, refuse_unmeasured, AbArgs, MAX_LOOKS,
};
use crate::experiment::{Protocol, Stages};
use crate::outcome::Paired;
use crate::{EXIT_INCONCLUSIVE, EXIT_USAGE};

/// The budget without `--budget`.
pub(crate) const DEFAULT_BUDGET: Duration = Duration::from_secs(60);

/// A stage that would end this much past the budget is not started.
const SLACK: f64 = 1.05;

/// Runs stage `K` of the pair (`AB_ID-K`), of the size given (`None`: as
/// asked); `Err` with the exit code after saying why it could not.
pub(crate) type RunStage<'a> =
    dyn FnMut(u32, Option<Size>, &mut dyn Write) -> anyhow::Result<Result<Paired, u8>> + 'a;

/// A later stage's measured passes a side and, when the first stage's
/// blocks were sized by `--block-passes`, its blocks' passes: as many
/// block pairs as the first stage had, each longer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Size {
    pub passes: u32,
    pub block_passes: Option<u32>,
}

/// The looks and the later stages' size, fixed after the first stage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Schedule {
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
    pub(crate) fn stage_seconds(&self) -> f64 {
        self.overhead + self.pass_pair * f64::from(self.later_passes)
    }
}

/// The most measured passes a side of a later stage runs: each pass's,
/// call's and range's time is kept until the stages are pooled and judged.
pub(crate) const MAX_STAGE_PASSES: u32 = 1_000_000;

/// The schedule for `budget`, after a first stage that took `first` and
/// measured `samples`: its time alone (the passes of both sides together,
/// never their difference) fixes how many more stages of at least its size
/// fit, and how many passes fill each one's share of what is left.
pub(crate) fn schedule(budget: Duration, first: Duration, samples: &PairedSamples) -> Schedule {
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
pub(crate) fn pool(stages: &[&PairedSamples]) -> PairedSamples {
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
pub(crate) fn at_look(options: &Options, looks: u32) -> Options {
    let looks = f64::from(looks.max(1));
    let mut look = *options;
    look.bootstrap.confidence = 1.0 - (1.0 - options.bootstrap.confidence) / looks;
    look.significance = options.significance / looks;
    look
}

/// What one look says: decided or not, in words.
pub(crate) struct Look {
    pub decided: bool,
    pub said: String,
}

/// The look at `samples`: with gates, decided when they accept or reject;
/// without, when the pass is faster, slower or no change.
pub(crate) fn look(samples: &PairedSamples, gates: Option<&[Gate]>, options: &Options) -> Look {
    match gates {
        Some(gates) => {
            let results = gate_results(gates, samples, options);
            let verdict = gates::verdict(&results);
            let failed: Vec<&str> = results
                .iter()
                .filter(|r| r.outcome == gates::GateOutcome::Fails)
                .map(|r| r.gate.text.as_str())
                .collect();
            Look {
                decided: verdict != GateVerdict::Inconclusive,
                said: if failed.is_empty() {
                    format!("gates: {verdict}")
                } else {
                    format!("gates: {verdict} ({} failed)", failed.join(", "))
                },
            }
        }
        None => {
            let rows = profiling_compare::paired::paired_rows(samples, options);
            let Some(pass) = rows.first() else {
                return Look {
                    decided: false,
                    said: "no passes".to_owned(),
                };
            };
            let change = match (pass.ratio, pass.interval) {
                (Some(ratio), Some([low, high])) => format!(
                    " {:+.1} % [{:+.1} %, {:+.1} %]",
                    (ratio - 1.0) * 100.0,
                    (low - 1.0) * 100.0,
                    (high - 1.0) * 100.0
                ),
                _ => String::new(),
            };
            Look {
                decided: matches!(
                    pass.verdict,
                    Verdict::Faster | Verdict::Slower | Verdict::NoChange
                ),
                said: format!("the pass{change}: {}", pass.verdict.word()),
            }
        }
    }
}

/// The stages of `args` run by `run_stage` until a look decides, the
/// looks run out or the budget is spent; then the pooled comparison,
/// printed, recorded and paged beside the last stage. The exit code: the
/// gates' (0, 3, 4), or without gates `compare`'s, and 4 when no look
/// decided.
pub(crate) fn until_decided(
    args: &AbArgs,
    run_stage: &mut RunStage<'_>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let budget = args.budget.unwrap_or(DEFAULT_BUDGET);
    let options = args.decide.options();
    let started = Instant::now();
    let mut stages: Vec<(Paired, PairedSamples)> = Vec::new();
    let mut plan: Option<Schedule> = None;
    let mut gates: Option<Vec<Gate>> = None;
    let mut decided;
    loop {
        let stage = stages.len() as u32 + 1;
        match plan {
            None => writeln!(
                err,
                "ab: stage 1, until decided within {:.0} s (its time fixes how many looks the budget allows)",
                budget.as_secs_f64()
            )?,
            Some(plan) => writeln!(
                err,
                "ab: stage {stage} of at most {}: {} passes a side",
                plan.looks + 1,
                plan.later_passes
            )?,
        }
        let stage_started = Instant::now();
        let size = plan.map(|plan| Size {
            passes: plan.later_passes,
            block_passes: args
                .block_passes
                .map(|_| plan.later_passes.div_ceil(plan.first_pairs.max(1))),
        });
        let paired = match run_stage(stage, size, err)? {
            Ok(paired) => paired,
            Err(code) => {
                if !stages.is_empty() {
                    writeln!(
                        err,
                        "note: the {} stage(s) before it are kept, not judged: {}",
                        stages.len(),
                        stages
                            .iter()
                            .map(|(p, _)| p.dir.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )?;
                }
                return Ok(code);
            }
        };
        let samples = match read_samples(&paired, err)? {
            Ok(samples) => samples,
            Err(code) => return Ok(code),
        };
        let plan = match plan {
            Some(plan) => plan,
            None => {
                gates = match agreed_gates(args.accept.as_deref(), paired.config.as_deref()) {
                    Ok(gates) => gates,
                    Err(message) => {
                        writeln!(err, "error: {message}")?;
                        return Ok(EXIT_USAGE);
                    }
                };
                // What no stage could decide is refused before the budget
                // is spent on more stages.
                if let Some(gates) = &gates {
                    if let Err(code) = refuse_unmeasured(
                        gates,
                        &samples,
                        (args.accept.as_deref(), paired.config.as_deref()),
                        &paired.dir,
                        err,
                    )? {
                        return Ok(code);
                    }
                }
                let took = stage_started.elapsed();
                let fixed = schedule(budget, took, &samples);
                plan = Some(fixed);
                stages.push((paired, samples));
                decided = false;
                if fixed.looks == 0 {
                    writeln!(
                        err,
                        "ab: stage 1 took {:.1} s; the budget of {:.0} s holds no second stage, and one stage gives no verdict (each stage builds both sides anew, and where their data lands differs from one to the next): give a larger --budget, or fewer --passes",
                        took.as_secs_f64(),
                        budget.as_secs_f64()
                    )?;
                    break;
                }
                writeln!(
                    err,
                    "ab: stage 1 took {:.1} s: at most {} more, of {} passes a side, each followed by a look at the stages so far (no verdict from one stage: each builds both sides anew, and where their data lands differs from one to the next)",
                    took.as_secs_f64(),
                    fixed.looks,
                    fixed.later_passes
                )?;
                continue;
            }
        };
        stages.push((paired, samples));
        let pooled = pool(&stages.iter().map(|(_, s)| s).collect::<Vec<_>>());
        let level = at_look(&options, plan.looks);
        let looked = look(&pooled, gates.as_deref(), &level);
        decided = looked.decided;
        let spent = started.elapsed().as_secs_f64();
        let next_fits = spent + plan.stage_seconds() <= budget.as_secs_f64() * SLACK;
        let look_number = stage - 1;
        let then = if decided {
            "decided".to_owned()
        } else if look_number >= plan.looks {
            "not decided, and no look is left".to_owned()
        } else if !next_fits {
            format!(
                "not decided, and another stage would end past the budget ({spent:.0} s of {:.0} s spent)",
                budget.as_secs_f64()
            )
        } else {
            "not yet: another stage".to_owned()
        };
        writeln!(
            err,
            "ab: look {look_number} of {} ({stage} stages) at {} % confidence, over {} passes a side: {} → {then}",
            plan.looks,
            trim(level.bootstrap.confidence * 100.0),
            pooled.base.pass_ns.len(),
            looked.said
        )?;
        if decided || look_number >= plan.looks || !next_fits {
            break;
        }
    }
    let looks = plan.map_or(0, |p| p.looks);
    let level = at_look(&options, looks);
    let pooled = pool(&stages.iter().map(|(_, s)| s).collect::<Vec<_>>());
    let described = Stages {
        ids: stages
            .iter()
            .map(|(p, _)| {
                p.dir
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            })
            .collect(),
        looks,
        budget,
        passes: pooled.base.pass_ns.len(),
        confidence: options.bootstrap.confidence,
        significance: options.significance,
        decided,
    };
    let sentence = described.describe();
    let (last, _) = stages.last().expect("a stage ran");
    let judged = match judge_samples(
        last,
        &pooled,
        &level,
        Protocol::Stages(described),
        args,
        out,
        err,
    )? {
        Ok(judged) => judged,
        Err(code) => return Ok(code),
    };
    if let Some(mut document) = judged.document {
        if let Some(object) = document.as_object_mut() {
            object.insert(
                "until_decided".to_owned(),
                serde_json::json!({
                    "stages": stages.iter().map(|(p, _)| p.dir.display().to_string()).collect::<Vec<_>>(),
                    "looks": looks,
                    "budget_s": budget.as_secs_f64(),
                    "decided": decided,
                    "confidence": level.bootstrap.confidence,
                    "significance": level.significance,
                }),
            );
        }
        writeln!(out, "{document}")?;
    } else if !args.markdown {
        writeln!(out, "\nuntil decided: {sentence}")?;
    }
    Ok(match judged.verdict {
        Some(GateVerdict::Accept) => crate::EXIT_OK,
        Some(GateVerdict::Reject) => crate::compare::EXIT_REGRESSION,
        Some(GateVerdict::Inconclusive) => EXIT_INCONCLUSIVE,
        None if decided => judged.code,
        None => EXIT_INCONCLUSIVE,
    })
}

fn trim(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
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
