//! The record of an experiment judged by gates (`ab --accept`):
//! `runs/<AB_ID>/experiment.md`, in the shape of an experiment report: the
//! hypothesis (the gates, agreed before measuring), the protocol (what
//! ran against what, on which records, how many passes in which blocks,
//! on what machine), each gate's result with its interval, the verdict,
//! and every row of the comparison. `ab --accept --markdown` prints it,
//! for a pull request's comment.

use std::fmt::Write as _;

use profiling_compare::gates::{self, GateOutcome, GateResult};
use profiling_compare::runs::LoadedRun;
use profiling_compare::{Comparison, Options};

/// The file beside `paired.json`.
pub(crate) const EXPERIMENT_FILE: &str = "experiment.md";

/// How the pair judged was measured: one pair (of `--repetitions`), or
/// stages of `--until-decided` pooled.
pub(crate) enum Protocol {
    /// This pair is repetition `.0` of `.1`.
    Repetition(usize, usize),
    Stages(Stages),
}

impl Protocol {
    /// Why the pair may not be given a verdict, when it may not: the first
    /// stage of `--until-decided` alone, when the budget held no second.
    pub(crate) fn unlooked(&self) -> Option<&'static str> {
        match self {
            Protocol::Stages(stages) if stages.looks == 0 => {
                Some("one stage only, which is never judged alone: the budget held no second stage")
            }
            _ => None,
        }
    }
}

/// The stages of `--until-decided` a verdict pooled.
pub(crate) struct Stages {
    /// Their ids, in order.
    pub ids: Vec<String>,
    /// The looks allowed, one after each stage from the second, fixed
    /// after the first stage.
    pub looks: u32,
    pub budget: std::time::Duration,
    /// Measured passes a side, over all the stages.
    pub passes: usize,
    /// Each look's confidence and significance, before the adjustment.
    pub confidence: f64,
    pub significance: f64,
    /// Whether the last look decided (else the looks or the budget ran out).
    pub decided: bool,
}

impl Stages {
    /// One sentence: what was pooled, how often it was looked at, at which level.
    pub(crate) fn describe(&self) -> String {
        let looks = self.looks.max(1) as f64;
        format!(
            "{} pooled ({}), looked at after each from the second (stages resampled as well as the block pairs within them: each stage built both sides anew): at most {} looks, fixed after the first stage from its time and the {:.0} s budget, each at confidence {} % and significance {} (so that over all the looks, the chance of a wrong call stays within {} %, as one look at {} % and {} would give); {}",
            plural(self.ids.len(), "stage"),
            self.ids.join(", "),
            self.looks,
            self.budget.as_secs_f64(),
            trim_float((1.0 - (1.0 - self.confidence) / looks) * 100.0),
            trim_float(self.significance / looks),
            trim_float((1.0 - self.confidence) * 100.0),
            trim_float(self.confidence * 100.0),
            trim_float(self.significance),
            if self.decided {
                "the last look decided"
            } else if self.looks == 0 {
                "the budget held no second stage, and one stage is not looked at"
            } else if self.ids.len() as u32 > self.looks {
                "no look decided, and none is left"
            } else {
                "no look decided before the budget was spent"
            }
        )
    }
}

/// A level as few digits as say it: 99.375, 0.00625.
fn trim_float(value: f64) -> String {
    let text = format!("{value:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The record, as Markdown.
pub(crate) fn record(
    base: &LoadedRun,
    candidate: &LoadedRun,
    comparison: &Comparison,
    results: &[GateResult],
    options: &Options,
    protocol: &Protocol,
) -> String {
    let verdict = gates::verdict(results);
    let (b, c) = (&base.typed, &candidate.typed);
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# Experiment: `{}` against `{}`\n",
        c.target.name, b.target.name
    );
    let _ = writeln!(text, "**Verdict: {verdict}**\n");
    text.push_str("## Hypothesis\n\nAgreed before measuring: the candidate is accepted when every gate holds.\n\n");
    for result in results {
        let _ = writeln!(text, "- `{}`", result.gate.text);
    }
    write_protocol(&mut text, base, candidate, comparison, protocol);
    write_results(&mut text, results, options);
    let _ = writeln!(
        text,
        "\n{}\n",
        gates::render(results)
            .lines()
            .last()
            .unwrap_or_default()
            .replacen("verdict: ", "Verdict: ", 1)
    );
    text.push_str("## Every row\n\n");
    let mut rows = Vec::new();
    if crate::compare::write_comparisons(
        std::slice::from_ref(comparison),
        options,
        crate::compare::Format::Markdown,
        &mut rows,
    )
    .is_ok()
    {
        text.push_str(&String::from_utf8_lossy(&rows));
    }
    text
}

/// The protocol's section: a table of what ran against what, on which
/// records and device, how many passes in which blocks and repetitions or
/// stages, with which build on which machine.
fn write_protocol(
    text: &mut String,
    base: &LoadedRun,
    candidate: &LoadedRun,
    comparison: &Comparison,
    protocol: &Protocol,
) {
    let (b, c) = (&base.typed, &candidate.typed);
    text.push_str("\n## Protocol\n\n| | |\n|---|---|\n");
    let mut row = |key: &str, value: String| {
        let _ = writeln!(text, "| {key} | {} |", cell(&value));
    };
    row("base", format!("`{}` ({})", b.target.name, git(base)));
    row(
        "candidate",
        format!("`{}` ({})", c.target.name, git(candidate)),
    );
    row(
        "records",
        format!(
            "{} from `{}`, seed {}",
            plural(b.record_ids.len(), "record"),
            b.data_source.name,
            b.workload
                .seed
                .map_or("none".to_owned(), |seed| seed.to_string())
        ),
    );
    row("device", b.device.to_string());
    row(
        "passes",
        match protocol {
            Protocol::Stages(stages) => format!(
                "{} warmup a stage, then {} measured a side in all",
                b.workload.warmup, stages.passes
            ),
            Protocol::Repetition(..) => format!(
                "{} warmup, then {} measured a side",
                b.workload.warmup, b.completed_iterations
            ),
        },
    );
    if let Some(pairing) = &comparison.pairing {
        row(
            "blocks",
            format!(
                "{} block pairs of {} passes a side, alternated {} (ABBA from a seeded start)",
                pairing.pairs,
                pairing.passes_per_block,
                pairing.where_run()
            ),
        );
    }
    match protocol {
        Protocol::Repetition(_, 1) => row("repetitions", "1".to_owned()),
        Protocol::Repetition(repetition, repetitions) => row(
            "repetitions",
            format!(
                "this is {repetition} of {repetitions}, each a pair of its own (`--repetitions`)"
            ),
        ),
        Protocol::Stages(stages) => row("until decided", stages.describe()),
    }
    row(
        "build",
        format!("{} profile-cli {}", b.build_profile, b.profile_cli_version),
    );
    row(
        "machine",
        format!(
            "{} ({}, {} cores)",
            b.host.name, b.host.cpu_model, b.host.cores
        ),
    );
    for (side, info) in [
        ("base", &comparison.base),
        ("candidate", &comparison.candidate),
    ] {
        if let Some(machine) = &info.machine {
            row(&format!("during the {side}"), machine.summary());
        }
    }
}

/// The commit `run` was built from, and whether it had uncommitted changes.
fn git(run: &LoadedRun) -> String {
    match (&run.typed.git_commit, run.typed.git_dirty) {
        (Some(commit), Some(true)) => {
            format!("{}, with uncommitted changes", short(commit))
        }
        (Some(commit), _) => short(commit).to_owned(),
        (None, _) => "no git commit".to_owned(),
    }
}

/// The results' section: a table of each gate's figures, its change with
/// its interval at the options' confidence, and whether it holds.
fn write_results(text: &mut String, results: &[GateResult], options: &Options) {
    let _ = write!(
        text,
        "\n## Results\n\n| gate | base | candidate | change | {} % interval | result |\n|---|---:|---:|---:|---:|---|\n",
        trim_float(options.bootstrap.confidence * 100.0)
    );
    for result in results {
        let figure = |value: Option<f64>| value.map_or("-".to_owned(), |v| figure(result, v));
        let (change, interval) = match (result.change, result.interval) {
            (Some(change), Some([low, high])) => (
                gates::format_change(&result.gate, change),
                format!(
                    "[{}, {}]",
                    gates::format_change(&result.gate, low),
                    gates::format_change(&result.gate, high)
                ),
            ),
            _ => ("-".to_owned(), "-".to_owned()),
        };
        let outcome = match result.outcome {
            GateOutcome::Holds => "holds".to_owned(),
            GateOutcome::Fails => "**fails**".to_owned(),
            GateOutcome::Unclear => "unclear".to_owned(),
        };
        let outcome = match &result.note {
            Some(note) => format!("{outcome}: {note}"),
            None => outcome,
        };
        let _ = writeln!(
            text,
            "| `{}` | {} | {} | {} | {} | {} |",
            result.gate.text,
            figure(result.base),
            figure(result.candidate),
            change,
            interval,
            cell(&outcome)
        );
    }
}

/// One gate's result in a line: `base 1.20 ms, candidate 1.18 ms, change
/// -1.7 % [-2.9 %, -0.4 %]: holds` (the note after an unclear one).
pub(crate) fn gate_line(result: &GateResult) -> String {
    let side = |value: Option<f64>| value.map_or("-".to_owned(), |v| figure(result, v));
    let change = match (result.change, result.interval) {
        (Some(change), Some([low, high])) => format!(
            "{} [{}, {}]",
            gates::format_change(&result.gate, change),
            gates::format_change(&result.gate, low),
            gates::format_change(&result.gate, high)
        ),
        (Some(change), None) => gates::format_change(&result.gate, change),
        _ => "-".to_owned(),
    };
    let outcome = match result.outcome {
        GateOutcome::Holds => "holds",
        GateOutcome::Fails => "fails",
        GateOutcome::Unclear => "unclear",
    };
    let mut line = format!(
        "base {}, candidate {}, change {change}: {outcome}",
        side(result.base),
        side(result.candidate)
    );
    if let Some(note) = &result.note {
        line.push_str(&format!(" ({note})"));
    }
    line
}

/// A gate's figure of one side in its metric's unit.
pub(crate) fn figure(result: &GateResult, value: f64) -> String {
    use profiling_compare::gates::Metric;
    match result.gate.metric {
        Metric::Allocations => format!("{value:.1}"),
        Metric::Bytes | Metric::Peak => gates::format_bytes(value),
        _ => crate::summary::format_ns(value.round() as u64),
    }
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

fn plural(count: usize, word: &str) -> String {
    if count == 1 {
        format!("1 {word}")
    } else {
        format!("{count} {word}s")
    }
}

/// `value` inside a table cell: its bars escaped, on one line.
fn cell(value: &str) -> String {
    value.replace('|', "\\|").replace('\n', " ")
}
