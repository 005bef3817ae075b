//! The page comparing runs, and the comparison section a run's page gets
//! from its `--baseline`: what differs between the manifests, the table of
//! ratios with their intervals, and the ratio chart.

use maud::{html, Markup};
use profiling_compare::gates::{self, GateOutcome, GateResult, GateVerdict};
use profiling_compare::memory::CountVerdict;
use profiling_compare::runs::LoadedRun;
use profiling_compare::{Comparison, Options, Row, Side, Verdict};

use super::charts::flame::{flame_graph, FLAME_WIDTH_SIDE_BY_SIDE};
use super::charts::ratios::ratio_chart;
use super::ranges::RangeRows;
use super::{layout, missing_cell};
use crate::summary::format_ns;

fn verdict_class(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Faster => "verdict-faster",
        Verdict::Slower => "verdict-slower",
        Verdict::NoChange => "verdict-no-change",
        Verdict::Unclear => "verdict-unclear",
        Verdict::Added => "verdict-added",
        Verdict::Removed => "verdict-removed",
    }
}

/// `text` with its first letter in capitals.
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or(String::new(), |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// `name` on the page's first comparison, `name-index` on the others.
fn numbered(name: &str, index: usize) -> String {
    match index {
        0 => name.to_owned(),
        index => format!("{name}-{index}"),
    }
}

/// The differences, the table and the ratio chart of a comparison, the
/// `index`-th of its page (their ids numbered after the first).
pub(super) fn comparison_section(
    comparison: &Comparison,
    options: &Options,
    index: usize,
) -> Markup {
    html! {
        p.lead {
            "base " code { (comparison.base.label) }
            (format!(" ({}, {} passes) → candidate ", comparison.base.status, comparison.base.completed_passes))
            code { (comparison.candidate.label) }
            (format!(" ({}, {} passes). ", comparison.candidate.status, comparison.candidate.completed_passes))
            (format!("{}.", capitalized(&comparison.method(options))))
        }
        @if comparison.base.machine.is_some() || comparison.candidate.machine.is_some() {
            ul.machine {
                @for (side, info) in [("base", &comparison.base), ("candidate", &comparison.candidate)] {
                    li {
                        "machine during the " (side) "'s capture: "
                        (info.machine.as_ref().map_or("not recorded".to_owned(), |m| m.summary()))
                    }
                }
            }
        }
        section id=(numbered("differences", index)) {
            @if comparison.differences.is_empty() && comparison.warnings.is_empty() {
                p.lead { "The two manifests agree on everything that changes what a time means." }
            } @else {
                ul.differences {
                    @for difference in &comparison.differences {
                        li { code { (difference.key) } ": " (difference.base) " → " (difference.candidate) }
                    }
                    @for warning in &comparison.warnings {
                        li.note { (warning) }
                    }
                }
            }
        }
        table id=(numbered("comparison", index)) class="sortable" {
            thead {
                tr {
                    th {} th { "base" } th { "candidate" } th { "ratio" } th { "interval" } th { "p" }
                    th { "pass Δ" } th { "verdict" }
                }
            }
            tbody {
                @for row in &comparison.rows { (comparison_row(row)) }
            }
        }
        @for row in &comparison.rows {
            @if let Some(note) = &row.note {
                p.lead { (row.subject.label()) ": " (note) }
            }
        }
        (ratio_chart(comparison, &numbered("ratios", index)))
        @if !comparison.memory.is_empty() {
            h3 { "Memory per pass" }
            p.lead {
                "Exact where every pass of both runs counted the same; otherwise more or fewer only when every pass of one lies beyond every pass of the other."
            }
            table id=(numbered("memory-comparison", index)) class="sortable" {
                thead { tr { th {} th { "counts" } th { "change" } th { "verdict" } } }
                tbody {
                    @for row in &comparison.memory {
                        tr data-memory-row=(format!("{} {}", row.subject, row.measure.word())) {
                            td.path { (row.subject) }
                            td { (row.measure.word()) }
                            td data-sort=(row.change) { (row.change_text()) }
                            td class=(count_verdict_class(row.verdict)) {
                                (row.verdict.word()) @if row.exact && row.verdict != CountVerdict::Same { " (exact)" }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The colour of a memory row's verdict: more is a regression.
fn count_verdict_class(verdict: CountVerdict) -> &'static str {
    match verdict {
        CountVerdict::More => verdict_class(Verdict::Slower),
        CountVerdict::Fewer => verdict_class(Verdict::Faster),
        CountVerdict::Same => verdict_class(Verdict::NoChange),
        _ => verdict_class(Verdict::Unclear),
    }
}

/// A cell of a ratio, an interval, a p value or a share: sorted by
/// `value`, showing `text`; `-` where there is no finite value.
fn number_cell(value: Option<f64>, text: impl FnOnce(f64) -> String) -> Markup {
    match value.filter(|v| v.is_finite()) {
        Some(v) => html! { td data-sort=(v) { (text(v)) } },
        None => missing_cell(),
    }
}

fn median_cell(side: Option<&Side>) -> Markup {
    match side {
        Some(side) => html! { td data-sort=(side.median_ns) { (format_ns(side.median_ns)) } },
        None => missing_cell(),
    }
}

fn comparison_row(row: &Row) -> Markup {
    let label = row.subject.label();
    let interval = row.interval;
    html! {
        tr data-row=(label) {
            td.path { (label) }
            (median_cell(row.base.as_ref()))
            (median_cell(row.candidate.as_ref()))
            (number_cell(row.ratio, |r| format!("{r:.3}")))
            (number_cell(interval.map(|[low, _]| low), |_| {
                interval.map_or(String::new(), |[low, high]| format!("[{low:.3}, {high:.3}]"))
            }))
            (number_cell(row.p_value, |p| if p < 0.001 { "<0.001".to_owned() } else { format!("{p:.3}") }))
            (number_cell(row.pass_share, |s| format!("{:+.2} %", s * 100.0)))
            td class=(verdict_class(row.verdict)) { (row.verdict.word()) }
        }
    }
}

/// The experiment of a pair judged by gates (`ab --accept`): the verdict,
/// the hypothesis, each gate's figures, change, interval and result, as
/// `experiment.md` records them.
fn experiment_section(results: &[GateResult], options: &Options) -> Markup {
    // 95 %, or a look's stricter level under `ab --until-decided`.
    let level = format!("{:.3}", options.bootstrap.confidence * 100.0);
    let interval = format!(
        "{} % interval",
        level.trim_end_matches('0').trim_end_matches('.')
    );
    let verdict = gates::verdict(results);
    let verdict_class = match verdict {
        GateVerdict::Accept => "verdict-faster",
        GateVerdict::Reject => "verdict-slower",
        GateVerdict::Inconclusive => "verdict-unclear",
    };
    let outcome = |outcome: GateOutcome| match outcome {
        GateOutcome::Holds => ("holds", "verdict-faster"),
        GateOutcome::Fails => ("fails", "verdict-slower"),
        GateOutcome::Unclear => ("unclear", "verdict-unclear"),
    };
    html! {
        section id="experiment" {
            h2 { "Experiment: " span class=(verdict_class) data-verdict=(verdict.to_string()) { (verdict.to_string()) } }
            p.lead {
                "Agreed before measuring: the candidate is accepted when every gate holds, rejected when one fails, and the experiment is inconclusive when an interval straddles a threshold. The record is "
                code { (crate::experiment::EXPERIMENT_FILE) } " beside this page."
            }
            table id="gates" {
                thead {
                    tr { th { "gate" } th { "base" } th { "candidate" } th { "change" } th { (interval) } th { "result" } }
                }
                tbody {
                    @for result in results {
                        @let (word, class) = outcome(result.outcome);
                        tr data-gate=(result.gate.text) {
                            td { code { (result.gate.text) } }
                            td { (result.base.map_or("-".to_owned(), |v| crate::experiment::figure(result, v))) }
                            td { (result.candidate.map_or("-".to_owned(), |v| crate::experiment::figure(result, v))) }
                            td { (result.change.map_or("-".to_owned(), |c| gates::format_change(&result.gate, c))) }
                            td {
                                @if let Some([low, high]) = result.interval {
                                    "[" (gates::format_change(&result.gate, low)) ", " (gates::format_change(&result.gate, high)) "]"
                                } @else { "-" }
                            }
                            td class=(class) {
                                (word)
                                @if let Some(note) = &result.note { ": " (note) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The page comparing `runs[0]` (the base) with each other run.
pub fn comparison_page(
    runs: &[&LoadedRun],
    comparisons: &[Comparison],
    options: &Options,
) -> String {
    judged_comparison_page(runs, comparisons, options, None)
}

/// The page of a pair, with its experiment when gates judged it.
pub fn judged_comparison_page(
    runs: &[&LoadedRun],
    comparisons: &[Comparison],
    options: &Options,
    gates: Option<&[GateResult]>,
) -> String {
    let base = runs[0];
    // As the comparisons label them (a paired run's sides say which they
    // are), else as the runs do.
    let labels: Vec<String> = runs
        .iter()
        .enumerate()
        .map(|(index, run)| {
            let info = match index {
                0 => comparisons.first().map(|c| &c.base),
                _ => comparisons.get(index - 1).map(|c| &c.candidate),
            };
            info.map_or_else(|| run.label(), |info| info.label.clone())
        })
        .collect();
    let body = html! {
        h1 { (base.profile) " compared" }
        p.lead {
            "base " code { (labels[0]) } " against "
            @for (index, label) in labels[1..].iter().enumerate() {
                @if index > 0 { ", " }
                code { (label) }
            }
        }
        @if let Some(results) = gates {
            (experiment_section(results, options))
        }
        @for (index, comparison) in comparisons.iter().enumerate() {
            h2 { (comparison.base.label) " → " (comparison.candidate.label) }
            (comparison_section(comparison, options, index))
        }
        h2 { "Where the time goes, run by run" }
        div.flames {
            @for (index, run) in runs.iter().enumerate() {
                @let tree = RangeRows::of(&run.typed, Some(&run.dir));
                div {
                    h3 { code { (labels[index]) } }
                    @if let Some(note) = &tree.note { p.note { (note) } }
                    (flame_graph(&tree, index, FLAME_WIDTH_SIDE_BY_SIDE))
                }
            }
        }
        section id="nsight" {
            h2 { "Nsight Systems" }
            p.lead { "GPU time per range from the Nsight Systems reports of these runs appears here once they are analyzed." }
        }
    };
    layout(&format!("{} compared", base.profile), body)
}
