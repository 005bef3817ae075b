//! The page of one run: what ran, where the time went (the flame graph and
//! the range table), the distributions of pass and call times, the pass
//! timeline, the comparison with its baseline, and the GPU time per range
//! once its Nsight Systems report is analyzed.

use std::path::Path;

use maud::{html, Markup};
use profiling_analyze::Analysis;
use profiling_compare::runs::ReadRunError;
use profiling_compare::{one_line, Comparison, Options};
use profiling_core::driver::manifest::Manifest;
use profiling_core::driver::provenance::NOT_A_CHECKOUT_NOTE;
use profiling_core::driver::run_samples::{RunSamples, SAMPLES_FILE};
use profiling_core::memory::human_bytes;
use profiling_core::timing::memory::MemoryTimings;
use serde_yaml::Value;

use super::charts::flame::{flame_graph, FLAME_WIDTH};
use super::charts::histogram::histogram;
use super::charts::memory::{allocations_chart, live_bytes_chart, RangeAllocations};
use super::charts::timeline::timeline;
use super::comparison::comparison_section;
use super::ranges::RangeRows;
use super::{duration_cell, facts, layout, Fact};
use crate::summary::{figures_text, format_ns};

/// What a run's page is made of: its manifest as written, its samples
/// when it kept them, and where it is.
pub struct RunPage<'a> {
    pub dir: &'a Path,
    pub manifest: &'a Manifest,
    pub samples: Option<&'a RunSamples>,
    /// The comparison with the run's `--baseline`, when it had one.
    pub comparison: Option<(&'a Comparison, &'a Options)>,
}

/// Reads the run in `dir` (its manifest, and its samples when it kept
/// them) for a page; a run made before samples were kept has none.
pub fn read_run(dir: &Path) -> Result<(Manifest, Option<RunSamples>), ReadRunError> {
    let manifest_path = dir.join("manifest.yaml");
    if !manifest_path.is_file() {
        return Err(ReadRunError::NotARun(dir.to_path_buf()));
    }
    let manifest = profiling_compare::runs::read_manifest(&manifest_path)?;
    let manifest = Manifest::from_value(manifest).map_err(|reason| ReadRunError::NotAManifest {
        path: manifest_path,
        reason,
    })?;
    let samples_path = dir.join(SAMPLES_FILE);
    let samples = match std::fs::read(&samples_path) {
        Ok(bytes) => Some(
            RunSamples::decode(&bytes).map_err(|source| ReadRunError::Samples {
                path: samples_path,
                source,
            })?,
        ),
        Err(_) => None,
    };
    Ok((manifest, samples))
}

/// A part of the manifest as one line, as the page shows it.
fn show<T: serde::Serialize>(value: &T) -> String {
    match serde_yaml::to_value(value) {
        Ok(Value::Null) | Err(_) => "-".to_owned(),
        Ok(value) => one_line(&value),
    }
}

/// What the page of a run shows, read from its manifest and its directory.
struct RunView {
    facts: Vec<Fact>,
    tree: RangeRows,
    /// With `memory: on`: the first measured pass's live bytes, from the
    /// run's `trace.json`.
    live_bytes: Vec<(f64, u64)>,
    /// `analysis.yaml` of the run's Nsight Systems report, once analyzed.
    analysis: Option<Analysis>,
}

impl RunView {
    fn of(page: &RunPage<'_>) -> RunView {
        let analysis = std::fs::read_to_string(page.dir.join("analysis.yaml"))
            .ok()
            .and_then(|text| serde_yaml::from_str(&text).ok());
        let live_bytes = match &page.manifest.timings.memory {
            Some(_) => std::fs::read(page.dir.join("trace.json"))
                .ok()
                .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
                .map(|trace| profiling_core::driver::trace::live_bytes_of_pass(&trace, 0))
                .unwrap_or_default(),
            None => Vec::new(),
        };
        RunView {
            facts: run_facts(page),
            tree: RangeRows::of(page.manifest, Some(page.dir)),
            live_bytes,
            analysis,
        }
    }
}

/// The facts of the page's header: what ran, on what, from which build.
fn run_facts(page: &RunPage<'_>) -> Vec<Fact> {
    let m = page.manifest;
    let git = match (&m.git_commit, m.git_dirty) {
        (Some(commit), Some(true)) => format!("{commit} (dirty)"),
        (Some(commit), _) => commit.clone(),
        (None, _) => m
            .git_note
            .clone()
            .unwrap_or_else(|| NOT_A_CHECKOUT_NOTE.to_owned()),
    };
    let passes = format!(
        "{} measured of {} (warmup {})",
        m.completed_iterations, m.workload.iterations, m.completed_warmup
    );
    let link = |file: &'static str| {
        html! {
            @if page.dir.join(file).is_file() { a href=(file) { (file) } }
            @else { (file) " (not written)" }
        }
    };
    vec![
        Fact::text("profile", &m.profile_name),
        Fact::text("run", &m.run_id),
        Fact::text("status", show(&m.status)),
        Fact::text("target", format!("{} ({})", m.target.name, m.target.source)),
        Fact::text("parameters", show(&m.target.parameters)),
        Fact::text(
            "data source",
            format!(
                "{}: {}",
                m.data_source.name,
                show(&m.data_source.description)
            ),
        ),
        Fact::text("records", m.record_ids.len().to_string()),
        Fact::text("passes", passes),
        Fact::text("device", show(&m.device)),
        Fact::text("backend", show(&m.backend)),
        Fact::text(
            "host",
            format!(
                "{}, {} ({} cores), {}",
                m.host.name, m.host.cpu_model, m.host.cores, m.host.os
            ),
        ),
        Fact::text("build", &m.build_profile),
        Fact::text("git", git),
        Fact::text("command", &m.command_line),
        Fact::text("started", &m.started_at),
        Fact {
            key: "files",
            value: html! {
                (link("manifest.yaml")) " · " (link("trace.json")) " · " (link(SAMPLES_FILE))
            },
        },
    ]
}

/// The page of one run.
pub fn run_page(page: &RunPage<'_>) -> String {
    let view = RunView::of(page);
    let m = page.manifest;
    let body = html! {
        h1 { (m.profile_name) " " span.mono { (m.run_id) } }
        p.lead {
            "target " code { (m.target.name) } " at " code { (m.target.source) } ", " (show(&m.status))
        }
        (facts(&view.facts))
        @if let Some(error) = &m.error {
            p.note { "The run failed: " (error.message) }
        }
        @if page.samples.is_none() {
            p.note {
                "This run has no " code { "samples.bin" } " (it was made before runs kept their samples, or it failed): the distributions and the pass timeline need them and are left out; re-run it for the whole page."
            }
        }
        h2 id="flame-graph" { "Where the time goes" }
        p.lead { "The NVTX ranges of the measured passes as an icicle: each range under the one it ran in, as wide as its total time. Hover for the figures." }
        @if let Some(note) = &view.tree.note { p.note { (note) } }
        (flame_graph(&view.tree, 0, FLAME_WIDTH))
        h2 id="ranges-title" { "Ranges" }
        (range_table(&view.tree, m))
        @if let Some(memory) = &m.timings.memory {
            (memory_section(memory, &view))
        }
        @if let Some(samples) = page.samples {
            h2 { "Distributions" }
            div.plots {
                (histogram("pass-histogram", "Pass time", &samples.passes.sorted_values()))
                (histogram("call-histogram", "Call time", &samples.calls.sorted_values()))
            }
            h2 { "Passes" }
            p.lead { "Each pass's time in order: drift, throttling, or a warmup that did not settle show here." }
            div.plots { (timeline(samples)) }
        }
        @if let Some((comparison, options)) = page.comparison {
            section id="comparison-with-baseline" {
                h2 {
                    "Compared with baseline "
                    code { (comparison.base.baseline.as_deref().unwrap_or(&comparison.base.label)) }
                }
                (comparison_section(comparison, options, 0))
            }
        }
        (nsight_section(view.analysis.as_ref()))
    };
    layout(&format!("{} {}", m.profile_name, m.run_id), body)
}

/// With `memory: on`: what a pass and a call allocate, the allocations of
/// each range, and the live bytes over the first pass.
fn memory_section(memory: &MemoryTimings, view: &RunView) -> Markup {
    let ranges: Vec<RangeAllocations> = view
        .tree
        .rows
        .iter()
        .filter_map(|row| {
            let memory = row.memory?;
            Some(RangeAllocations {
                path: row.path.clone(),
                self_allocations: memory.self_allocations,
                self_bytes: memory.self_bytes,
            })
        })
        .collect();
    html! {
        section id="memory" {
            h2 { "Memory" }
            p.lead {
                "Every allocation of the measured passes, charged to the innermost range open on its thread (and every range around it), to its call and to its pass. "
                "Attributing cost " (format!("{:.0}", memory.cost_per_allocation_ns)) " ns per allocation and "
                (format!("{:.0}", memory.cost_per_range_ns)) " ns per range, included in the times above."
            }
            @if let Some(pass) = &memory.per_pass { p { "A pass (median): " (figures_text(pass)) "." } }
            @if let Some(call) = &memory.per_call { p { "A call (median): " (figures_text(call)) "." } }
            @if let Some(note) = &memory.note { p.note { (note) } }
            div.plots { (allocations_chart(&ranges)) }
            div.plots { (live_bytes_chart(0, &view.live_bytes)) }
        }
    }
}

/// What Nsight Systems recorded per range (`analysis.yaml`): GPU time
/// where CUDA was traced, time in OS calls where the OS runtime was, the
/// functions sampled where the CPU was; or where it will be once the run's
/// Nsight Systems report is analyzed.
fn nsight_section(analysis: Option<&Analysis>) -> Markup {
    html! {
        section id="nsight" {
            h2 { "Nsight Systems: per range" }
            @match analysis {
                None => p.lead {
                    "No Nsight Systems report of this run is analyzed yet: capture one with the command "
                    code { "profile-cli run ... --print-nsys-command" } " prints (or " code { "run --nsys" }
                    "), then " code { "profile-cli analyze" } " this run directory."
                },
                Some(analysis) => (nsight_ranges(analysis)),
            }
        }
    }
}

fn nsight_ranges(analysis: &Analysis) -> Markup {
    let passes = analysis.passes.len().max(1) as u64;
    let gpu = analysis.cuda_traced;
    let os = analysis.os_runtime_traced;
    let sampled = analysis.cpu_samples > 0;
    let version = analysis
        .nsys_version
        .as_deref()
        .map_or_else(String::new, |v| format!(" (Nsight Systems {v})"));
    html! {
        p.lead {
            "From " code { (analysis.export.display()) } (version)
            @if gpu {
                (format!(": the GPU was busy {:.1} % of a pass on average; its longest idle stretch in a pass was {}.",
                    analysis.mean_gpu_busy_fraction * 100.0, format_ns(analysis.largest_gpu_idle_ns)))
            } @else {
                ": a capture without CUDA (no GPU columns): host times"
                @if os { ", the time each range spent in OS runtime calls" }
                @if sampled { ", the functions its thread was sampled in" }
                "."
            }
        }
        div.scroll { table id="gpu-ranges" class="sortable" {
            thead {
                tr {
                    th { "range path" } th { "calls" } th { "host p50 (Nsight)" } th { "host p50 (this run)" }
                    @if gpu {
                        th { "GPU busy p50" } th { "GPU per pass" } th { "first launch to last completion p50" } th { "top kernel" }
                    }
                    @if os { th { "in OS calls per pass" } th { "OS calls" } }
                    @if sampled { th { "samples" } th { "sampled in" } }
                }
            }
            tbody {
                @for range in &analysis.ranges {
                    @let per_pass = range.gpu_sum_ns / passes;
                    @let os_per_pass = range.os_runtime_ns / passes;
                    tr data-gpu-path=(range.path) {
                        td.path { (range.path) }
                        td { (range.count) }
                        (duration_cell(Some(range.host.p50_ns)))
                        (duration_cell(range.manifest_host_p50_ns))
                        @if gpu {
                            (duration_cell(range.gpu_busy.map(|s| s.p50_ns)))
                            td data-sort=(per_pass) { (format_ns(per_pass)) }
                            (duration_cell(range.launch_to_completion.map(|s| s.p50_ns)))
                            td.path {
                                @match range.kernels.first() {
                                    Some(k) => { (k.name) " ×" (k.count) },
                                    None => "-",
                                }
                            }
                        }
                        @if os {
                            td data-sort=(os_per_pass) { (format_ns(os_per_pass)) }
                            td.path data-os-calls=(range.path) {
                                @if range.os_calls.is_empty() { "-" }
                                @for (i, call) in range.os_calls.iter().enumerate() {
                                    @if i > 0 { "; " }
                                    (call.name) " ×" (call.count) " (" (format_ns(call.total_ns / passes)) " per pass)"
                                }
                            }
                        }
                        @if sampled {
                            td data-sort=(range.samples) { (range.samples) }
                            td.path {
                                @if range.sampled_functions.is_empty() { "-" }
                                @for (i, function) in range.sampled_functions.iter().enumerate() {
                                    @if i > 0 { "; " }
                                    (function.name) " "
                                    (format!("{:.0} %", function.samples as f64 * 100.0 / range.samples.max(1) as f64))
                                }
                            }
                        }
                    }
                }
            }
        } }
        @for note in &analysis.notes {
            p.note { (note) }
        }
    }
}

/// The range table: path, calls, per call and per pass times, share, and
/// on runs with GPU timing the GPU medians.
fn range_table(tree: &RangeRows, m: &Manifest) -> Markup {
    let passes = tree.passes.max(1);
    let gpu = tree.rows.iter().any(|row| row.gpu_p50.is_some());
    let memory = tree.rows.iter().any(|row| row.memory.is_some());
    html! {
        div.scroll { table id="ranges" class="sortable" {
            thead {
                tr {
                    th { "range path" } th { "calls" } th { "per pass" } th { "median per call" }
                    th { "inclusive per pass: median" } th { "p90" } th { "p95" } th { "self per pass: median" } th { "p90" } th { "p95" }
                    th { "share of a pass" }
                    @if gpu { th { "GPU median per call" } th { "GPU self median" } }
                    @if memory { th { "allocations per pass" } th { "own" } th { "bytes per pass" } th { "peak" } }
                }
            }
            tbody {
                @for row in &tree.rows {
                    @let per_pass_mean = row.inclusive_per_pass.map_or(row.inclusive_total / passes, |p| p.mean);
                    @let share = if tree.pass_mean > 0 { per_pass_mean as f64 / tree.pass_mean as f64 } else { 0.0 };
                    @let rate = row.count as f64 / passes as f64;
                    tr data-path=(row.path) {
                        td.path title=(row.path) { ("\u{a0}\u{a0}".repeat(row.depth)) (row.name) }
                        td data-sort=(row.count) { (row.count) }
                        td data-sort=(rate) { (format!("{rate:.2}")) }
                        (duration_cell(Some(row.inclusive_p50)))
                        (duration_cell(row.inclusive_per_pass.map(|p| p.p50)))
                        (duration_cell(row.inclusive_per_pass.map(|p| p.p90)))
                        (duration_cell(row.inclusive_per_pass.and_then(|p| p.p95)))
                        (duration_cell(row.exclusive_per_pass.map(|p| p.p50)))
                        (duration_cell(row.exclusive_per_pass.map(|p| p.p90)))
                        (duration_cell(row.exclusive_per_pass.and_then(|p| p.p95)))
                        td data-sort=(share) { (format!("{:.1} %", share * 100.0)) }
                        @if gpu {
                            (duration_cell(row.gpu_p50.map(|g| g.0)))
                            (duration_cell(row.gpu_p50.map(|g| g.1)))
                        }
                        @if memory {
                            @match row.memory {
                                Some(mem) => {
                                    td data-sort=(mem.allocations) { (format!("{:.1}", mem.allocations)) }
                                    td data-sort=(mem.self_allocations) { (format!("{:.1}", mem.self_allocations)) }
                                    td data-sort=(mem.bytes) { (human_bytes(mem.bytes.round() as u64)) }
                                    td data-sort=(mem.peak) { (human_bytes(mem.peak)) }
                                }
                                None => { td {"-"} td {"-"} td {"-"} td {"-"} }
                            }
                        }
                    }
                }
            }
        } }
        @if tree.rows.is_empty() {
            p.lead {
                "No NVTX range was recorded inside the measured passes: mark the operations of the target with "
                code { "#[nvtx_range]" } " or " code { "profiling_range(...)" } "."
            }
        }
        p.lead { (m.timings.host_timing_note) }
    }
}

#[cfg(test)]
mod tests;
