//! Judging a pair: its comparison from `paired.json`, its gates and tails,
//! printed as `compare` prints one, its experiment record and its page;
//! with `--repetitions`, the verdict of all of them together.

use std::io::Write;
use std::path::Path;

use profiling_core::driver::run_samples::{PairedSamples, PAIRED_FILE};
use profiling_core::driver::{run_dir, session};

use super::AbArgs;
use crate::exit::{EXIT_OK, EXIT_TARGET_FAILED, EXIT_USAGE};
use crate::handoff::Paired;
use profiling_compare::gates::GateResult;

/// After the paired runs (one, or `--repetitions` of them): each pair's
/// comparison from its `paired.json`, printed as `compare` prints one, and
/// its page; with gates, the verdict of all the repetitions together.
pub(crate) fn after_pair(
    pairs: Vec<Paired>,
    args: &AbArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    use profiling_compare::gates::GateVerdict;
    let count = pairs.len();
    let mut judged = Vec::with_capacity(count);
    for (index, paired) in pairs.into_iter().enumerate() {
        // Each side into the history store, once the pair is in place.
        if let Some(store) = &paired.store {
            for (dir, kind) in [
                (&paired.base_dir, "ab-base"),
                (&paired.candidate_dir, "ab-candidate"),
            ] {
                crate::recording::record_text(store, dir, kind, err)?;
            }
        }
        if count > 1 && !args.json {
            if index > 0 {
                writeln!(out)?;
            }
            if !args.markdown {
                writeln!(out, "repetition {} of {count}:", index + 1)?;
            }
        }
        match judge_pair(paired, args, (index + 1, count), out, err)? {
            Ok(one) => judged.push(one),
            Err(code) => return Ok(code),
        }
    }
    write_junit(args, &judged.iter().collect::<Vec<_>>(), err)?;
    let verdicts: Vec<GateVerdict> = judged.iter().filter_map(|j| j.verdict).collect();
    let together = (verdicts.len() == count && count > 0)
        .then(|| profiling_compare::gates::verdict_of_repetitions(&verdicts));
    if args.json {
        let document = match judged.as_slice() {
            [one] => one.document.clone().unwrap_or_default(),
            _ => serde_json::json!({
                "repetitions": judged.iter().map(|j| j.document.clone().unwrap_or_default()).collect::<Vec<_>>(),
                "verdict": together,
            }),
        };
        writeln!(out, "{document}")?;
    } else if let (Some(together), true) = (together, count > 1) {
        let each: Vec<String> = verdicts.iter().map(ToString::to_string).collect();
        let why = if verdicts.iter().all(|v| *v == together) {
            "every repetition agrees"
        } else {
            "the repetitions disagree"
        };
        writeln!(
            out,
            "\nrepetitions: {} → {together} ({why})",
            each.join(", ")
        )?;
    }
    Ok(match together {
        Some(GateVerdict::Accept) => EXIT_OK,
        Some(GateVerdict::Reject) => crate::exit::EXIT_REGRESSION,
        Some(GateVerdict::Inconclusive) => crate::exit::EXIT_INCONCLUSIVE,
        None => judged.iter().map(|j| j.code).max().unwrap_or(EXIT_OK),
    })
}

/// What judging one pair gave: its `--json` document (when asked), its
/// gates' verdict, and the exit code of the pair alone.
pub(super) struct Judged {
    pub document: Option<serde_json::Value>,
    pub verdict: Option<profiling_compare::gates::GateVerdict>,
    pub code: u8,
    /// The gates' results as a JUnit `<testsuite>`, when judged by gates.
    pub junit: Option<String>,
}

/// Writes `--junit FILE` from the pairs judged (nothing without it);
/// a failure to write is a warning, never the verdict's.
pub(super) fn write_junit(
    args: &AbArgs,
    judged: &[&Judged],
    err: &mut dyn Write,
) -> std::io::Result<()> {
    let Some(path) = &args.junit else {
        return Ok(());
    };
    let suites: Vec<String> = judged.iter().filter_map(|j| j.junit.clone()).collect();
    if suites.is_empty() {
        writeln!(
            err,
            "warning: --junit {}: no gates judged the pair (give them with --accept or the config's ab.accept); the file holds no test",
            path.display()
        )?;
    }
    match super::junit::write(path, &suites) {
        Ok(()) => writeln!(err, "junit: {}", session::absolute(path).display()),
        Err(error) => writeln!(err, "warning: cannot write {}: {error}", path.display()),
    }
}

/// One pair's comparison, gates, record and page; `Err` with the exit
/// code after saying why it cannot be read back.
fn judge_pair(
    paired: Paired,
    args: &AbArgs,
    repetition: (usize, usize),
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Result<Judged, u8>> {
    let samples = match read_samples(&paired, err)? {
        Ok(samples) => samples,
        Err(code) => return Ok(Err(code)),
    };
    judge_samples(
        &paired,
        &samples,
        &args.decide.options(),
        crate::experiment::Protocol::Repetition(repetition.0, repetition.1),
        args,
        out,
        err,
    )
}

/// A pair's `paired.json`; `Err` with the exit code after saying why not.
pub(super) fn read_samples(
    paired: &Paired,
    err: &mut dyn Write,
) -> anyhow::Result<Result<PairedSamples, u8>> {
    let samples_path = paired.dir.join(PAIRED_FILE);
    match std::fs::read_to_string(&samples_path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
    {
        Ok(samples) => Ok(Ok(samples)),
        Err(message) => {
            writeln!(err, "error: {}: {message}", samples_path.display())?;
            Ok(Err(EXIT_TARGET_FAILED))
        }
    }
}

/// The comparison of `samples` (one pair's, or stages' pooled) with the
/// manifests of `paired`'s sides, its gates, record and page, written
/// beside `paired`.
pub(super) fn judge_samples(
    paired: &Paired,
    samples: &PairedSamples,
    options: &profiling_compare::Options,
    protocol: crate::experiment::Protocol,
    args: &AbArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Result<Judged, u8>> {
    use profiling_compare::runs;

    let options = *options;
    let load = |dir: &Path| runs::load(dir).map_err(|error| error.to_string());
    let (base, candidate) = match (load(&paired.base_dir), load(&paired.candidate_dir)) {
        (Ok(base), Ok(candidate)) => (base, candidate),
        (Err(message), _) | (_, Err(message)) => {
            writeln!(err, "error: {message}")?;
            return Ok(Err(EXIT_TARGET_FAILED));
        }
    };
    let mut comparison =
        profiling_compare::paired::compare_paired(&base, &candidate, samples, &options);
    let alone = protocol.unlooked();
    if let Some(why) = alone {
        profiling_compare::sequential::demote(&mut comparison, why);
    }
    let comparisons = [comparison];
    let gates = match judged_gates(paired, samples, &options, alone, args, err)? {
        Ok(gates) => gates,
        Err(code) => return Ok(Err(code)),
    };
    let document = render(&comparisons, samples, gates.as_deref(), &options, args, out)?;
    // Judged by gates: the experiment's record beside the pair, which
    // `--markdown` prints.
    if let Some(results) = &gates {
        let record = crate::experiment::record(
            &base,
            &candidate,
            &comparisons[0],
            results,
            &options,
            &protocol,
        );
        if args.markdown {
            write!(out, "{record}")?;
        }
        let path = paired.dir.join(crate::experiment::EXPERIMENT_FILE);
        match run_dir::write_atomically(&path, record.as_bytes()) {
            Ok(()) => writeln!(err, "experiment: {}", session::absolute(&path).display())?,
            Err(error) => writeln!(err, "warning: cannot write {}: {error}", path.display())?,
        }
    }
    if !args.no_report {
        let html = crate::report::judged_comparison_page(
            &[&base, &candidate],
            &comparisons,
            &options,
            gates.as_deref(),
        );
        let path = paired.dir.join(crate::report::REPORT_FILE);
        match crate::report::write_page(&path, &html) {
            Ok(path) => writeln!(err, "report: {}", session::absolute(&path).display())?,
            Err(error) => writeln!(err, "warning: cannot write {}: {error}", path.display())?,
        }
    }
    if let (Some(results), Some(store)) = (&gates, &paired.store) {
        crate::recording::record_verdict(store, &paired.dir, (&base, &candidate), results, err)?;
    }
    let junit = gates.as_deref().map(|results| {
        let id = paired
            .dir
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        super::junit::testsuite(&format!("{} {id}", base.profile), results)
    });
    Ok(Ok(Judged {
        junit,
        document,
        verdict: gates.as_deref().map(profiling_compare::gates::verdict),
        code: crate::compare::regression_code(
            &comparisons,
            &options,
            args.decide.fail_on_regression,
        ),
    }))
}

/// Each gate agreed (`--accept`, else the config's `ab.accept`) judged
/// on `samples`, demoted when the protocol's looks do not allow a verdict
/// (`alone` says why); `None` without gates. `Err` with the exit code,
/// said, when the gates do not parse or name what the pair lacks.
fn judged_gates(
    paired: &Paired,
    samples: &PairedSamples,
    options: &profiling_compare::Options,
    alone: Option<&str>,
    args: &AbArgs,
    err: &mut dyn Write,
) -> std::io::Result<Result<Option<Vec<GateResult>>, u8>> {
    let accept = args.accept.as_deref();
    let config = paired.config.as_deref();
    let gates = match gates_of(accept, config, paired.accept.as_deref()) {
        Ok(Some(gates)) => gates,
        Ok(None) => return Ok(Ok(None)),
        Err(message) => {
            writeln!(
                err,
                "error: {message} (the pair is kept in {})",
                paired.dir.display()
            )?;
            return Ok(Err(EXIT_USAGE));
        }
    };
    if let Err(code) = refuse_unmeasured(&gates, samples, (accept, config), &paired.dir, err)? {
        return Ok(Err(code));
    }
    let mut results = gate_results(&gates, samples, options);
    if let Some(why) = alone {
        profiling_compare::sequential::demote_gates(&mut results, why);
    }
    Ok(Ok(Some(results)))
}

/// The comparison as `args` ask: the `--json` document (returned, not
/// printed), Markdown (the experiment's record prints it when judged by
/// gates), or the tables with the tails and the gates.
fn render(
    comparisons: &[profiling_compare::Comparison],
    samples: &PairedSamples,
    gates: Option<&[GateResult]>,
    options: &profiling_compare::Options,
    args: &AbArgs,
    out: &mut dyn Write,
) -> std::io::Result<Option<serde_json::Value>> {
    use crate::compare::{self, Format};

    let format = if args.json {
        Format::Json
    } else if args.markdown {
        Format::Markdown
    } else {
        compare::table_format(&args.decide)
    };
    let tails = profiling_compare::gates::paired_tails(samples, gate_bootstrap(options));
    match (gates, format) {
        (_, Format::Json) => {
            let mut document = compare::json_document(comparisons, options);
            if let Some(object) = document.as_object_mut() {
                let tails: serde_json::Map<String, serde_json::Value> = tails
                    .iter()
                    .map(|(metric, tail)| (metric.name().to_owned(), serde_json::json!(tail)))
                    .collect();
                object.insert("tails".to_owned(), tails.into());
                if let Some(results) = gates {
                    object.insert(
                        "gates".to_owned(),
                        serde_json::json!({
                            "verdict": profiling_compare::gates::verdict(results),
                            "results": results,
                        }),
                    );
                }
            }
            return Ok(Some(document));
        }
        (Some(_), Format::Markdown) => {}
        (gates, _) => {
            compare::write_comparisons(comparisons, options, format, out)?;
            if !args.markdown {
                write_tails(&tails, out)?;
            }
            if let Some(results) = gates {
                writeln!(out)?;
                write!(out, "{}", profiling_compare::gates::render(results))?;
            }
        }
    }
    Ok(None)
}

/// The gates agreed: `accept` (`--accept`), else `from_config`, the
/// config's `ab.accept` as read with the rest of `config`; an error names
/// where the gate that does not parse came from.
pub(super) fn gates_of(
    accept: Option<&str>,
    config: Option<&Path>,
    from_config: Option<&str>,
) -> Result<Option<Vec<profiling_compare::gates::Gate>>, String> {
    use profiling_compare::gates::parse_gates;
    if let Some(list) = accept {
        return parse_gates(list)
            .map(Some)
            .map_err(|error| format!("--accept: {error}"));
    }
    let Some(list) = from_config else {
        return Ok(None);
    };
    parse_gates(list)
        .map(Some)
        .map_err(|error| format!("{}: {error}", gates_source(None, config)))
}

/// Where the gates agreed come from, as an error about one of them names
/// it: `--accept`, else the base's config, its line and column.
pub(super) fn gates_source(accept: Option<&str>, config: Option<&Path>) -> String {
    match (accept, config) {
        (None, Some(path)) => {
            let at = profiling_core::driver::config::locate_key(path, "ab.accept")
                .map_or(String::new(), |(line, column)| format!(":{line}:{column}"));
            format!("{}{at}: ab.accept", path.display())
        }
        _ => "--accept".to_owned(),
    }
}

/// After a pair (the first of several, or a stage): the first gate that
/// no pair of these targets could decide, for want of what it names (a
/// range, memory), said with where the gates come from and where the
/// pair is kept; `Err` with the exit code then.
pub(super) fn refuse_unmeasured(
    gates: &[profiling_compare::gates::Gate],
    samples: &PairedSamples,
    (accept, config): (Option<&str>, Option<&Path>),
    kept: &Path,
    err: &mut dyn Write,
) -> std::io::Result<Result<(), u8>> {
    match profiling_compare::gates::check_measured(gates, samples) {
        Ok(()) => Ok(Ok(())),
        Err(error) => {
            writeln!(
                err,
                "error: {}: {error} (the pair is kept in {})",
                gates_source(accept, config),
                kept.display()
            )?;
            Ok(Err(EXIT_USAGE))
        }
    }
}

/// The gates' bootstrap: the comparison's seed and confidence, at most
/// the gates' default resamples (each draw recomputes a percentile).
fn gate_bootstrap(options: &profiling_compare::Options) -> profiling_compare::gates::GateBootstrap {
    use profiling_compare::gates::GateBootstrap;
    GateBootstrap {
        resamples: options
            .bootstrap
            .resamples
            .min(GateBootstrap::default().resamples),
        seed: options.bootstrap.seed,
        confidence: options.bootstrap.confidence,
    }
}

/// One line: the pass's p95 and p99 on each side and their change.
fn write_tails(
    tails: &[(
        profiling_compare::gates::Metric,
        profiling_compare::gates::PairedEstimate,
    )],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if tails.is_empty() {
        return Ok(());
    }
    let parts: Vec<String> = tails
        .iter()
        .map(|(metric, tail)| {
            format!(
                "{} {} → {} {:+.1} % [{:+.1} %, {:+.1} %]",
                metric.name(),
                crate::summary::format_ns(tail.base.round() as u64),
                crate::summary::format_ns(tail.candidate.round() as u64),
                tail.change * 100.0,
                tail.interval[0] * 100.0,
                tail.interval[1] * 100.0
            )
        })
        .collect();
    writeln!(
        out,
        "tails of the pass (over all passes; interval over the block pairs): {}",
        parts.join("; ")
    )
}

/// The gates on the pair's samples.
pub(super) fn gate_results(
    parsed: &[profiling_compare::gates::Gate],
    samples: &PairedSamples,
    options: &profiling_compare::Options,
) -> Vec<profiling_compare::gates::GateResult> {
    use profiling_compare::gates;
    let parity = gates::Parity::NotChecked(
        "a pair of targets of one build runs no parity test (its snippet's `cargo test` does)"
            .to_owned(),
    );
    gates::evaluate(parsed, samples, &parity, gate_bootstrap(options))
}
