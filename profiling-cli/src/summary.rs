//! What `profile-cli run` prints after a run: the human summary, the
//! `--json` document, and the progress bar shown during long phases.

use std::cell::RefCell;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};
use profiling_core::driver::manifest::Manifest;
use profiling_core::driver::runner::Progress;
use profiling_core::memory::human_bytes;
use profiling_core::stats::DurationStats;
use profiling_core::timing::memory::{CountStats, FigureStats, MemoryTimings, RangeMemory};

/// Ranges listed in each of the two top lists.
const TOP_RANGES: usize = 5;

pub use profiling_core::units::format_ns;

/// A time per record that may be a fraction of a nanosecond.
fn format_ns_f64(ns: f64) -> String {
    if ns < 1_000.0 {
        format!("{ns:.1} ns")
    } else {
        format_ns(ns.round() as u64)
    }
}

/// Records per second, with a unit prefix.
pub fn format_rate(per_second: f64) -> String {
    if !per_second.is_finite() {
        "-".to_owned()
    } else if per_second < 1e3 {
        format!("{per_second:.1}")
    } else if per_second < 1e6 {
        format!("{:.1} k", per_second / 1e3)
    } else {
        format!("{:.2} M", per_second / 1e6)
    }
}

fn plural(count: u64, word: &str) -> String {
    if count == 1 {
        format!("{count} {word}")
    } else if word.ends_with('s') || word.ends_with("ch") {
        format!("{count} {word}es")
    } else {
        format!("{count} {word}s")
    }
}

fn spread(stats: &DurationStats) -> String {
    format!(
        "median {} (p90 {}{}, min {}, max {})",
        format_ns(stats.p50_ns),
        format_ns(stats.p90_ns),
        stats
            .p95_ns
            .map_or_else(String::new, |p95| format!(", p95 {}", format_ns(p95))),
        format_ns(stats.min_ns),
        format_ns(stats.max_ns)
    )
}

/// A range as the summary lists it: by path, or by name.
struct Listed<'a> {
    label: &'a str,
    count: u64,
    inclusive: &'a DurationStats,
    exclusive: &'a DurationStats,
    /// GPU inclusive and exclusive, on runs with GPU timing.
    gpu: Option<(&'a DurationStats, &'a DurationStats)>,
}

/// The pass and call statistics, the top ranges (by path) by inclusive and
/// by self time with their share of a pass, and what the clock means. A
/// range's time per pass is its mean (what the share of a pass is of);
/// its median is per call.
pub fn write_summary(manifest: &Manifest, out: &mut dyn Write) -> std::io::Result<()> {
    let timings = &manifest.timings;
    if let Some(sized) = &manifest.workload.measurement_time {
        writeln!(out, "{}", sized.describe())?;
    }
    write_passes_and_calls(manifest, out)?;
    let ranges = listed_ranges(timings);
    if !ranges.is_empty() {
        let top = Top {
            ranges: &ranges,
            passes: timings.iterations.as_ref().map_or(1, |p| p.count.max(1)),
            pass_total: timings.iterations.as_ref().map_or(0, |p| p.total_ns),
            records_per_pass: timings
                .per_record
                .as_ref()
                .filter(|p| p.batch_size > 1)
                .map(|p| p.records_per_pass.max(1)),
        };
        top.write(
            "top ranges by inclusive time:",
            |r| r.inclusive,
            |r| r.gpu.map(|g| g.0),
            out,
        )?;
        top.write(
            "top ranges by self time:",
            |r| r.exclusive,
            |r| r.gpu.map(|g| g.1),
            out,
        )?;
    }
    if let Some(gpu) = &timings.gpu {
        write_gpu(gpu, out)?;
    }
    if let Some(memory) = &timings.memory {
        write_memory(memory, timings, out)?;
    }
    write_clock_and_notes(manifest, out)
}

/// With `memory: on`: what a pass and a call allocate, the ranges that
/// allocate most per pass, and what attributing cost.
fn write_memory(
    memory: &MemoryTimings,
    timings: &profiling_core::driver::runner::Timings,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if let Some(pass) = &memory.per_pass {
        writeln!(out, "memory: per pass {}", figures_text(pass))?;
    }
    if let Some(call) = &memory.per_call {
        writeln!(out, "        per call {}", figures_text(call))?;
    }
    let mut ranges: Vec<(&str, &RangeMemory)> = timings
        .ranges
        .iter()
        .filter_map(|r| Some((r.name.as_str(), r.memory.as_ref()?)))
        .filter(|(_, m)| m.allocations > 0)
        .collect();
    ranges.sort_by(|a, b| {
        b.1.per_pass
            .allocated_bytes
            .mean
            .total_cmp(&a.1.per_pass.allocated_bytes.mean)
            .then_with(|| a.0.cmp(b.0))
    });
    if !ranges.is_empty() {
        writeln!(out, "top ranges by bytes allocated per pass:")?;
        let width = ranges
            .iter()
            .take(TOP_RANGES)
            .map(|r| r.0.chars().count())
            .max()
            .unwrap_or(0);
        for (name, m) in ranges.iter().take(TOP_RANGES) {
            let per_pass = &m.per_pass;
            writeln!(
                out,
                "  {name:width$}  {:>10} in {:>6} allocations per pass ({} of them its own), peak {}",
                human_bytes(per_pass.allocated_bytes.mean.round() as u64),
                format_count(per_pass.allocations.mean),
                format_count(per_pass.self_allocations.mean),
                human_bytes(m.peak_bytes)
            )?;
        }
    }
    writeln!(
        out,
        "note:   attributing memory cost {:.0} ns per allocation and {:.0} ns per range, in these times",
        memory.cost_per_allocation_ns, memory.cost_per_range_ns
    )?;
    if let Some(note) = &memory.note {
        writeln!(out, "note:   {note}")?;
    }
    Ok(())
}

/// Allocations, bytes and peak of a pass or a call: the median, with the
/// range when the samples differ.
pub(crate) fn figures_text(stats: &FigureStats) -> String {
    let exact = |c: &CountStats, text: &dyn Fn(u64) -> String| {
        if c.is_constant() {
            text(c.median)
        } else {
            format!("{} ({}..{})", text(c.median), text(c.min), text(c.max))
        }
    };
    format!(
        "{} allocations, {} allocated, peak {}",
        exact(&stats.allocations, &|v| v.to_string()),
        exact(&stats.allocated_bytes, &|v| human_bytes(v)),
        exact(&stats.peak_bytes, &|v| human_bytes(v))
    )
}

/// A mean count: whole when it is one.
fn format_count(mean: f64) -> String {
    if mean.fract() == 0.0 {
        format!("{mean:.0}")
    } else {
        format!("{mean:.1}")
    }
}

/// The pass, the call, the eager load and, in batches, time per record.
fn write_passes_and_calls(manifest: &Manifest, out: &mut dyn Write) -> std::io::Result<()> {
    let timings = &manifest.timings;
    let records = manifest.record_ids.len() as u64;
    // Time per record where a call covers more than one.
    let batched = timings.per_record.as_ref().filter(|p| p.batch_size > 1);
    let in_batches = batched.map_or_else(String::new, |p| {
        format!(
            " in {} of {}",
            plural(p.batches_per_pass, "batch"),
            p.batch_size
        )
    });
    if let Some(passes) = &timings.iterations {
        writeln!(
            out,
            "passes: {} of {}{in_batches}, {} per pass",
            plural(passes.count, "measured pass"),
            plural(records, "record"),
            spread(passes)
        )?;
    }
    if let Some(calls) = &timings.runs {
        writeln!(
            out,
            "calls:  {}{}, {} per call",
            plural(calls.count, "target call"),
            if batched.is_some() {
                " (one per batch)"
            } else {
                ""
            },
            spread(calls)
        )?;
    }
    if timings.read_ns > 0 {
        writeln!(
            out,
            "load:   {} to read the records before the passes (eager loading)",
            format_ns(timings.read_ns)
        )?;
    }
    if let Some(per_record) = batched {
        let figure = |throughput: &Option<profiling_core::driver::runner::Throughput>| {
            throughput.as_ref().map_or_else(
                || "-".to_owned(),
                |t| {
                    format!(
                        "{} per record ({} records/s)",
                        format_ns_f64(t.time_per_record_ns),
                        format_rate(t.records_per_second)
                    )
                },
            )
        };
        writeln!(
            out,
            "records: {} from the median pass, {} from the median call",
            figure(&per_record.pass),
            figure(&per_record.call)
        )?;
    }
    Ok(())
}

/// The ranges by path (`preprocess/letterbox`) as the page and the
/// manifest's range tree have them; by name for a run without a tree.
fn listed_ranges(timings: &profiling_core::driver::runner::Timings) -> Vec<Listed<'_>> {
    if timings.range_tree.is_empty() {
        timings
            .ranges
            .iter()
            .map(|r| Listed {
                label: &r.name,
                count: r.count,
                inclusive: &r.inclusive,
                exclusive: &r.exclusive,
                gpu: r.gpu.as_ref().map(|g| (&g.inclusive, &g.exclusive)),
            })
            .collect()
    } else {
        timings
            .range_tree
            .iter()
            .map(|r| Listed {
                label: &r.path,
                count: r.count,
                inclusive: &r.inclusive,
                exclusive: &r.exclusive,
                gpu: r.gpu.as_ref().map(|g| (&g.inclusive, &g.exclusive)),
            })
            .collect()
    }
}

/// What the top lists of ranges are drawn from.
struct Top<'a> {
    ranges: &'a [Listed<'a>],
    /// Measured passes, at least 1.
    passes: u64,
    /// The passes' total time, for each range's share of a pass.
    pass_total: u64,
    /// In batches: records per pass, for time per record.
    records_per_pass: Option<u64>,
}

impl Top<'_> {
    fn share(&self, total: u64) -> String {
        if self.pass_total == 0 {
            "-".to_owned()
        } else {
            format!("{:.1} %", total as f64 * 100.0 / self.pass_total as f64)
        }
    }

    /// The top ranges by the total of `pick`, largest first.
    fn write(
        &self,
        title: &str,
        pick: for<'a> fn(&'a Listed<'a>) -> &'a DurationStats,
        pick_gpu: for<'a> fn(&'a Listed<'a>) -> Option<&'a DurationStats>,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let passes = self.passes;
        let mut ranges: Vec<&Listed<'_>> = self.ranges.iter().collect();
        ranges.sort_by(|a, b| {
            pick(b)
                .total_ns
                .cmp(&pick(a).total_ns)
                .then_with(|| a.label.cmp(b.label))
        });
        ranges.truncate(TOP_RANGES);
        writeln!(out, "{title}")?;
        let width = ranges
            .iter()
            .map(|r| r.label.chars().count())
            .max()
            .unwrap_or(0);
        for range in ranges {
            let stats = pick(range);
            // GPU time beside the host's, on runs with GPU timing.
            let gpu = pick_gpu(range).map_or_else(String::new, |gpu| {
                format!(
                    "; GPU mean {} per pass, median {} per call",
                    format_ns(gpu.total_ns / passes),
                    format_ns(gpu.p50_ns)
                )
            });
            let per_record = self.records_per_pass.map_or_else(String::new, |records| {
                let ns = stats.total_ns as f64 / passes as f64 / records as f64;
                format!(", {} per record", format_ns_f64(ns))
            });
            writeln!(
                out,
                "  {:width$}  mean {:>9} per pass  {:>7} of a pass  {}, median {} per call{per_record}{gpu}",
                range.label,
                format_ns(stats.total_ns / passes),
                self.share(stats.total_ns),
                plural(range.count, "call"),
                format_ns(stats.p50_ns),
            )?;
        }
        Ok(())
    }
}

/// GPU time of passes and calls, and what kept ranges from having it.
fn write_gpu(gpu: &profiling_core::timing::GpuTimings, out: &mut dyn Write) -> std::io::Result<()> {
    let median = |stats: &Option<DurationStats>| {
        stats
            .as_ref()
            .map_or_else(|| "-".to_owned(), |s| format_ns(s.p50_ns))
    };
    if gpu.events_recorded > 0 {
        writeln!(
            out,
            "gpu:    median {} per pass, {} per call; {} events on the {}; {} of host time per event record",
            median(&gpu.iterations),
            median(&gpu.runs),
            gpu.events_recorded,
            gpu.stream,
            format_ns(gpu.event_record_ns.round() as u64)
        )?;
    }
    if gpu.ranges_without_events > 0 {
        writeln!(
            out,
            "note:   {} ranges have no GPU time: the event pool ran out inside a pass, a guard was kept across passes, or the driver refused a record",
            gpu.ranges_without_events
        )?;
    }
    if gpu.events_recorded == 0 {
        writeln!(out, "note:   {}", gpu.note)?;
    }
    Ok(())
}

/// The clock, what host times mean on the device, and the trace.
fn write_clock_and_notes(manifest: &Manifest, out: &mut dyn Write) -> std::io::Result<()> {
    let timings = &manifest.timings;
    if let Some(timer) = &timings.timer {
        writeln!(
            out,
            "timer:  {}, resolution {} ns, {:.1} ns per reading (not subtracted)",
            timer.source, timer.resolution_ns, timer.overhead_ns
        )?;
    }
    if manifest.device.is_cuda() {
        writeln!(out, "note:   {}", timings.host_timing_note)?;
    }
    if let Some(note) = &timings.sketch_note {
        writeln!(out, "note:   {note}")?;
    }
    if let Some(trace) = &manifest.trace {
        writeln!(out, "trace:  {}", trace.path.display())?;
        if let Some(note) = &trace.note {
            writeln!(out, "note:   {note}")?;
        }
    }
    Ok(())
}

/// The one JSON document `--json` prints.
pub fn json_document(
    manifest: &Manifest,
    manifest_path: Option<&Path>,
    error: Option<&str>,
) -> serde_json::Value {
    serde_json::json!({
        "manifest_path": manifest_path,
        "status": manifest.status,
        "profile_name": manifest.profile_name,
        "run_id": manifest.run_id,
        "target": manifest.target.name,
        "device": manifest.device,
        "record_ids": manifest.record_ids,
        "record_batches": manifest.record_batches,
        "workload": manifest.workload,
        "calls": manifest.calls,
        "timings": manifest.timings,
        "trace": manifest.trace,
        "error": error,
    })
}

/// A progress bar on stderr for phases that last: it appears once a phase
/// has run for a second, redraws at most ten times a second, and clears
/// itself at the end of each phase, or when the run stops before (it is
/// dropped with the run). Called between passes, outside their timed
/// windows; it draws only then (no ticking thread).
pub fn progress_bar() -> Box<dyn Fn(Progress)> {
    let phase = RefCell::new(None::<PhaseBar>);
    Box::new(move |progress: Progress| {
        let now = Instant::now();
        let mut phase = phase.borrow_mut();
        // A new phase drops the last one's bar, which clears it.
        let current = match phase.take() {
            Some(bar) if bar.measured == progress.measured => bar,
            _ => PhaseBar {
                measured: progress.measured,
                started: now,
                bar: None,
                last_draw: None,
            },
        };
        phase.insert(current).show(progress, now);
    })
}

/// The bar of one phase, made once the phase has run a second.
struct PhaseBar {
    measured: bool,
    started: Instant,
    bar: Option<ProgressBar>,
    last_draw: Option<Instant>,
}

impl PhaseBar {
    const SHOWN_AFTER: Duration = Duration::from_secs(1);
    const REDRAWN_AFTER: Duration = Duration::from_millis(100);

    fn show(&mut self, progress: Progress, now: Instant) {
        if progress.done >= progress.total {
            if let Some(bar) = self.bar.take() {
                bar.finish_and_clear();
            }
            return;
        }
        let due = self
            .last_draw
            .is_none_or(|at| now.duration_since(at) >= Self::REDRAWN_AFTER);
        if now.duration_since(self.started) < Self::SHOWN_AFTER || !due || crate::streams::quiet() {
            return;
        }
        self.last_draw = Some(now);
        let measured = self.measured;
        self.bar
            .get_or_insert_with(|| phase_bar(measured, progress.total))
            .set_position(u64::from(progress.done));
    }
}

/// `measured ████████░░░░ 12/40` on stderr, cleared when finished or
/// dropped.
fn phase_bar(measured: bool, total: u32) -> ProgressBar {
    let style = ProgressStyle::with_template("{prefix:>8} {bar:30} {pos}/{len}").map_or_else(
        |_| ProgressStyle::default_bar(),
        |style| style.progress_chars("█░"),
    );
    ProgressBar::with_draw_target(
        Some(u64::from(total)),
        ProgressDrawTarget::stderr_with_hz(10),
    )
    .with_style(style)
    .with_prefix(if measured { "measured" } else { "warmup" })
    .with_finish(ProgressFinish::AndClear)
}
