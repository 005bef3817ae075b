//! `ab --until-decided`: pairs run in stages (`AB_ID-1`, `AB_ID-2`, ...)
//! until the verdict is clear or the budget is spent.
//!
//! The looks are fixed in advance and share the error rate (Bonferroni):
//! [`profiling_compare::sequential`] holds the schedule, the pooling of
//! the stages and each look's levels; this module runs the stages and
//! says what each look saw.
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
use profiling_compare::sequential::{at_look, pool, schedule, Schedule};
use profiling_compare::{Options, Verdict};
use profiling_core::driver::run_samples::PairedSamples;

use super::{gate_results, gates_of, judge_samples, read_samples, refuse_unmeasured, AbArgs};
use crate::exit::{EXIT_INCONCLUSIVE, EXIT_USAGE};
use crate::experiment::{Protocol, Stages};
use crate::handoff::Paired;

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
    let mut run = Staged {
        budget: args.budget.unwrap_or(DEFAULT_BUDGET),
        options: args.decide.options(),
        started: Instant::now(),
        stages: Vec::new(),
        plan: None,
        gates: None,
        decided: false,
    };
    loop {
        let stage = run.stages.len() as u32 + 1;
        run.say_stage(stage, err)?;
        let stage_started = Instant::now();
        let size = run.plan.map(|plan| Size {
            passes: plan.later_passes,
            block_passes: args
                .block_passes
                .map(|_| plan.later_passes.div_ceil(plan.first_pairs.max(1))),
        });
        let paired = match run_stage(stage, size, err)? {
            Ok(paired) => paired,
            Err(code) => {
                run.say_kept(err)?;
                return Ok(code);
            }
        };
        let samples = match read_samples(&paired, err)? {
            Ok(samples) => samples,
            Err(code) => return Ok(code),
        };
        let next = match run.plan {
            None => run.fix_plan(args, (paired, samples), stage_started.elapsed(), err)?,
            Some(plan) => run.look(plan, stage, (paired, samples), err)?,
        };
        match next {
            Next::Stage => {}
            Next::Judge => break,
            Next::Exit(code) => return Ok(code),
        }
    }
    run.judge(args, out, err)
}

/// What follows a stage.
enum Next {
    Stage,
    Judge,
    Exit(u8),
}

/// The stages run so far, and what the first fixed: the looks and the
/// gates.
struct Staged {
    budget: Duration,
    options: Options,
    started: Instant,
    stages: Vec<(Paired, PairedSamples)>,
    plan: Option<Schedule>,
    gates: Option<Vec<Gate>>,
    decided: bool,
}

impl Staged {
    /// The line that starts stage `stage`.
    fn say_stage(&self, stage: u32, err: &mut dyn Write) -> std::io::Result<()> {
        match self.plan {
            None => writeln!(
                err,
                "ab: stage 1, until decided within {:.0} s (its time fixes how many looks the budget allows)",
                self.budget.as_secs_f64()
            ),
            Some(plan) => writeln!(
                err,
                "ab: stage {stage} of at most {}: {} passes a side",
                plan.looks + 1,
                plan.later_passes
            ),
        }
    }

    /// After a stage that failed: the stages before it, kept unjudged.
    fn say_kept(&self, err: &mut dyn Write) -> std::io::Result<()> {
        if self.stages.is_empty() {
            return Ok(());
        }
        let kept: Vec<String> = self
            .stages
            .iter()
            .map(|(p, _)| p.dir.display().to_string())
            .collect();
        writeln!(
            err,
            "note: the {} stage(s) before it are kept, not judged: {}",
            self.stages.len(),
            kept.join(", ")
        )
    }

    /// After the first stage (which `took` so long): the gates read and
    /// checked against what it measured, and the looks the budget allows
    /// fixed.
    fn fix_plan(
        &mut self,
        args: &AbArgs,
        (paired, samples): (Paired, PairedSamples),
        took: Duration,
        err: &mut dyn Write,
    ) -> anyhow::Result<Next> {
        let config = paired.config.as_deref();
        self.gates = match gates_of(args.accept.as_deref(), config, paired.accept.as_deref()) {
            Ok(gates) => gates,
            Err(message) => {
                writeln!(err, "error: {message}")?;
                return Ok(Next::Exit(EXIT_USAGE));
            }
        };
        // What no stage could decide is refused before the budget is
        // spent on more stages.
        if let Some(gates) = &self.gates {
            let source = (args.accept.as_deref(), config);
            if let Err(code) = refuse_unmeasured(gates, &samples, source, &paired.dir, err)? {
                return Ok(Next::Exit(code));
            }
        }
        let fixed = schedule(self.budget, took, &samples);
        self.plan = Some(fixed);
        self.stages.push((paired, samples));
        if fixed.looks == 0 {
            writeln!(
                err,
                "ab: stage 1 took {:.1} s; the budget of {:.0} s holds no second stage, and one stage gives no verdict (each stage builds both sides anew, and where their data lands differs from one to the next): give a larger --budget, or fewer --passes",
                took.as_secs_f64(),
                self.budget.as_secs_f64()
            )?;
            return Ok(Next::Judge);
        }
        writeln!(
            err,
            "ab: stage 1 took {:.1} s: at most {} more, of {} passes a side, each followed by a look at the stages so far (no verdict from one stage: each builds both sides anew, and where their data lands differs from one to the next)",
            took.as_secs_f64(),
            fixed.looks,
            fixed.later_passes
        )?;
        Ok(Next::Stage)
    }

    /// The look after stage `stage`, over every stage so far pooled, at
    /// its share of the error rate: decided, out of looks or budget, or
    /// another stage.
    fn look(
        &mut self,
        plan: Schedule,
        stage: u32,
        ran: (Paired, PairedSamples),
        err: &mut dyn Write,
    ) -> std::io::Result<Next> {
        self.stages.push(ran);
        let pooled = pool(&self.stages.iter().map(|(_, s)| s).collect::<Vec<_>>());
        let level = at_look(&self.options, plan.looks);
        let looked = look(&pooled, self.gates.as_deref(), &level);
        self.decided = looked.decided;
        let spent = self.started.elapsed().as_secs_f64();
        let budget = self.budget.as_secs_f64();
        let next_fits = spent + plan.stage_seconds() <= budget * SLACK;
        let look_number = stage - 1;
        let then = if self.decided {
            "decided".to_owned()
        } else if look_number >= plan.looks {
            "not decided, and no look is left".to_owned()
        } else if !next_fits {
            format!(
                "not decided, and another stage would end past the budget ({spent:.0} s of {budget:.0} s spent)"
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
        Ok(if self.decided || look_number >= plan.looks || !next_fits {
            Next::Judge
        } else {
            Next::Stage
        })
    }

    /// The stages pooled and judged beside the last one, at the last
    /// look's level; the exit code.
    fn judge(self, args: &AbArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<u8> {
        let looks = self.plan.map_or(0, |p| p.looks);
        let level = at_look(&self.options, looks);
        let pooled = pool(&self.stages.iter().map(|(_, s)| s).collect::<Vec<_>>());
        let described = Stages {
            ids: self
                .stages
                .iter()
                .map(|(p, _)| {
                    p.dir
                        .file_name()
                        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
                })
                .collect(),
            looks,
            budget: self.budget,
            passes: pooled.base.pass_ns.len(),
            confidence: self.options.bootstrap.confidence,
            significance: self.options.significance,
            decided: self.decided,
        };
        let sentence = described.describe();
        let (last, _) = self.stages.last().expect("a stage ran");
        let protocol = Protocol::Stages(described);
        let judged = match judge_samples(last, &pooled, &level, protocol, args, out, err)? {
            Ok(judged) => judged,
            Err(code) => return Ok(code),
        };
        super::judge::write_junit(args, &[&judged], err)?;
        if let Some(mut document) = judged.document {
            if let Some(object) = document.as_object_mut() {
                let stages: Vec<String> = self
                    .stages
                    .iter()
                    .map(|(p, _)| p.dir.display().to_string())
                    .collect();
                object.insert(
                    "until_decided".to_owned(),
                    serde_json::json!({
                        "stages": stages,
                        "looks": looks,
                        "budget_s": self.budget.as_secs_f64(),
                        "decided": self.decided,
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
            Some(GateVerdict::Accept) => crate::exit::EXIT_OK,
            Some(GateVerdict::Reject) => crate::exit::EXIT_REGRESSION,
            Some(GateVerdict::Inconclusive) => EXIT_INCONCLUSIVE,
            None if self.decided => judged.code,
            None => EXIT_INCONCLUSIVE,
        })
    }
}

/// A percentage with its trailing zeros trimmed.
fn trim(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}
