//! The tables `load` prints after its steps (and its page shows): a
//! search's curve and growth, each distribution with its intervals, the
//! bound, the backlog, the ranges under load, the p99's owner, threads.

use std::io::Write;

use profiling_core::driver::load::peak::PeakRecord;
use profiling_core::driver::load::summary::{Distribution, LoadStep};
use profiling_core::driver::session::LoadManifest;

use super::{asked, ms};

/// The tables of a load run: a search's first, then the step measured
/// in detail (the peak's, after a search).
pub(crate) fn write_tables(manifest: &LoadManifest, out: &mut dyn Write) -> std::io::Result<()> {
    let load = &manifest.load;
    if let Some(peak) = &load.peak {
        write_search(peak, out)?;
    }
    let Some(step) = load.detailed_step() else {
        return Ok(());
    };
    write_distributions(step, load.peak.is_some(), out)?;
    write_ranges(step, out)?;
    write_tail(step, out)?;
    write_threads(step, out)
}

/// A search's curve, the peak it found, and the ranges that grew most
/// from the lowest rate to the peak.
fn write_search(peak: &PeakRecord, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "\nsearch: {}", peak.search)?;
    writeln!(
        out,
        "{:>12} {:>12} {:>14} {:>6}",
        "offered q/s", "served q/s", "p99", "bound"
    )?;
    for point in &peak.curve {
        writeln!(
            out,
            "{:>12.1} {:>12.1} {:>14} {:>6}",
            point.offered_qps,
            point.served_qps,
            point.p99_ns.map_or_else(|| "-".to_owned(), ms),
            if point.held {
                "held"
            } else if point.fell_behind {
                "behind"
            } else {
                "missed"
            }
        )?;
    }
    match peak.peak_qps {
        Some(q) => writeln!(
            out,
            "peak: {q:.1} queries a second hold p99 ≤ {}{}",
            ms(peak.bound_ns),
            peak.first_missed_qps
                .map_or_else(String::new, |m| format!(" ({m:.1} did not)"))
        )?,
        None => writeln!(
            out,
            "peak: no rate tried held p99 ≤ {} (the lowest, {:.1} a second, did not)",
            ms(peak.bound_ns),
            peak.first_missed_qps.unwrap_or(0.0)
        )?,
    }
    if let Some(why) = &peak.unfinished {
        writeln!(out, "the search did not converge: {why}")?;
    }
    if peak.growth.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "\np99 from the lowest rate to the peak, the most grown first:"
    )?;
    writeln!(
        out,
        "{:<28} {:>14} {:>14} {:>8}",
        "range", "low", "peak", "ratio"
    )?;
    for grown in &peak.growth {
        writeln!(
            out,
            "{:<28} {:>14} {:>14} {:>7.2}x",
            grown.name,
            ms(grown.low_p99_ns),
            ms(grown.peak_p99_ns),
            grown.ratio
        )?;
    }
    Ok(())
}

/// The step's rates, its latency, queueing and service distributions,
/// the intervals too few queries left open, the bound and the backlog.
fn write_distributions(step: &LoadStep, at_peak: bool, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "\n{}{} queries in {:.2} s: {:.1} served a second{}",
        if at_peak { "at the peak: " } else { "" },
        step.queries,
        step.duration_ns as f64 / 1e9,
        step.served_qps,
        step.offered().map_or_else(String::new, |q| format!(
            " of {q:.1} offered{}",
            asked(step)
        )),
    )?;
    writeln!(
        out,
        "{:<10} {:>26} {:>26} {:>26} {:>26} {:>26} {:>12}",
        "", "p50", "p90", "p95", "p99", "p99.9", "max"
    )?;
    for (label, distribution) in [
        ("latency", &step.latency),
        ("queueing", &step.queueing),
        ("service", &step.service),
    ] {
        if let Some(distribution) = distribution {
            writeln!(out, "{}", distribution_row(label, distribution))?;
        }
    }
    writeln!(
        out,
        "latency is from each query's intended send; [low, high] is its 95 % interval"
    )?;
    let short: Vec<String> = step
        .latency
        .iter()
        .flat_map(|l| &l.percentiles)
        .filter_map(|p| p.needed.map(|n| format!("{} needs {n}", p.name)))
        .collect();
    if !short.is_empty() {
        writeln!(
            out,
            "too few queries for some intervals ({}; the run has {})",
            short.join(", "),
            step.queries
        )?;
    }
    if let Some(bound) = &step.bound {
        writeln!(out, "p99 bound: {}", bound.statement)?;
    }
    if let Some(backlog) = &step.backlog {
        writeln!(out, "{}", backlog.statement)?;
    }
    Ok(())
}

/// Each range under load, over every worker.
fn write_ranges(step: &LoadStep, out: &mut dyn Write) -> std::io::Result<()> {
    if step.ranges.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nranges under load, over every worker:")?;
    writeln!(
        out,
        "{:<28} {:>9} {:>14} {:>14} {:>14} {:>14} {:>14}",
        "range", "count", "p50", "p90", "p95", "p99", "max"
    )?;
    for range in &step.ranges {
        writeln!(
            out,
            "{:<28} {:>9} {:>14} {:>14} {:>14} {:>14} {:>14}{}",
            range.name,
            range.count,
            ms(range.p50_ns),
            ms(range.p90_ns),
            range.p95_ns.map_or_else(|| "-".to_owned(), ms),
            ms(range.p99_ns),
            ms(range.max_ns),
            if range.other_threads > 0 {
                format!("  (also on {} other threads)", range.other_threads)
            } else {
                String::new()
            }
        )?;
    }
    Ok(())
}

/// The p99 tail: which part of a query owns it, and by how much each
/// part's tail mean exceeds its median.
fn write_tail(step: &LoadStep, out: &mut dyn Write) -> std::io::Result<()> {
    let Some(tail) = &step.tail else {
        return Ok(());
    };
    writeln!(
        out,
        "\nthe p99 tail ({} queries at or above p99; {} told apart by range): `{}` owns it",
        tail.tail_queries, tail.attributed_queries, tail.owner
    )?;
    writeln!(
        out,
        "{:<28} {:>14} {:>14} {:>14}",
        "part", "median", "tail mean", "excess"
    )?;
    for part in &tail.parts {
        writeln!(
            out,
            "{:<28} {:>14} {:>14} {:>14}",
            part.component,
            ms(part.median_ns),
            ms(part.tail_mean_ns),
            format!("{:+.3} ms", part.excess_ns() as f64 / 1e6)
        )?;
    }
    Ok(())
}

/// The threads: workers, the process's, the cores, where else ranges ran
/// and the environment that sets thread pools.
fn write_threads(step: &LoadStep, out: &mut dyn Write) -> std::io::Result<()> {
    let threads = &step.threads;
    let elsewhere = if threads.ranged_elsewhere.is_empty() {
        String::new()
    } else {
        format!("; ranges also on {}", threads.ranged_elsewhere.join(", "))
    };
    let environment = if threads.environment.is_empty() {
        String::new()
    } else {
        let pairs: Vec<String> = threads
            .environment
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("; {}", pairs.join(" "))
    };
    writeln!(
        out,
        "\nthreads: {} worker{}, {} in the process, {} cores{elsewhere}{environment}",
        threads.workers,
        if threads.workers == 1 { "" } else { "s" },
        threads
            .in_process
            .map_or_else(|| "?".to_owned(), |n| n.to_string()),
        threads.cores,
    )
}

/// A distribution's row: each percentile with its interval.
fn distribution_row(label: &str, distribution: &Distribution) -> String {
    let cell = |name: &str| match distribution.get(name) {
        Some(p) => match (p.low_ns, p.high_ns) {
            (Some(low), Some(high)) => format!(
                "{:.3} [{:.3}, {:.3}]",
                p.value_ns as f64 / 1e6,
                low as f64 / 1e6,
                high as f64 / 1e6
            ),
            _ => format!("{:.3}", p.value_ns as f64 / 1e6),
        },
        None => "-".to_owned(),
    };
    format!(
        "{:<10} {:>26} {:>26} {:>26} {:>26} {:>26} {:>12}",
        format!("{label} ms"),
        cell("p50"),
        cell("p90"),
        cell("p95"),
        cell("p99"),
        cell("p99.9"),
        format!("{:.3}", distribution.max_ns as f64 / 1e6)
    )
}
