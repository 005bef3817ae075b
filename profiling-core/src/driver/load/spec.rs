//! What a load asks for, resolved: each setting from its option, else the
//! config's `load:` section, else its default (the quick length of
//! [`QUICK_MIN_DURATION_S`], or LoadGen's minimums when asked), every
//! rule checked before anything runs, and a refusal that names the option
//! or the config key (its file, line and column) it came from.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::arrivals::Arrival;
use super::drive::{LoadPlan, Scenario, MAX_QUERIES};
use super::latency::needed_for;
use super::peak::PeakSearch;
use super::summary::CONFIDENCE;
use crate::driver::config::{describe_value, locate_key, LoadConfig};
use crate::units;

/// LoadGen's minimum duration of a performance run.
pub const LOADGEN_MIN_DURATION_S: f64 = 600.0;

/// The minimum duration of a load given no length: about half a minute,
/// a developer's loop rather than a published result's (LoadGen's ten
/// minutes, with `--loadgen-minimums`).
pub const QUICK_MIN_DURATION_S: f64 = 30.0;

/// The minimum query count of a load given no length: as many as p99's
/// 95 % interval needs (368), so that the percentile asked of it, and the
/// bound, are decided; a rate too low to send them in
/// [`QUICK_MIN_DURATION_S`] takes longer.
pub fn quick_min_queries() -> u64 {
    needed_for(0.99, CONFIDENCE)
}

/// LoadGen's minimum query count of a scenario (single-stream's for a
/// concurrency load, offline's sample count for an offline one).
pub fn loadgen_min_queries(scenario: &str) -> u64 {
    match scenario {
        "server" => 270_336,
        "offline" => 24_576,
        _ => 1_024,
    }
}

/// The options of a load as given on its command line: each `None` (or
/// `false`) is taken from the config's `load:` section, else defaulted.
/// Durations are text with their unit (`30s`, `10ms`).
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    pub scenario: Option<String>,
    pub qps: Option<f64>,
    pub arrival: Option<String>,
    pub concurrency: Option<u32>,
    pub workers: Option<u32>,
    pub warmup: Option<u64>,
    pub queries: Option<u64>,
    pub duration: Option<String>,
    pub p99_bound: Option<String>,
    pub find_peak: bool,
    /// `--loadgen-minimums`: LoadGen's minimum count and duration when no
    /// length is given, in place of the quick ones.
    pub loadgen_minimums: bool,
}

/// What `load` was asked to do.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    pub plan: LoadPlan,
    /// `--p99-bound`.
    pub bound_ns: Option<u64>,
    /// `--find-peak`: search the rate (a server scenario's `qps`, when
    /// given, is the first tried).
    pub find_peak: Option<PeakSearch>,
    /// How the request reads in the record.
    pub request: LoadRequestRecord,
}

/// The request as the record keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadRequestRecord {
    pub scenario: String,
    #[serde(default)]
    pub qps: Option<f64>,
    #[serde(default)]
    pub arrival: Option<String>,
    #[serde(default)]
    pub concurrency: Option<u32>,
    pub workers: u32,
    /// Queries each worker served before the measurement.
    pub warmup: u64,
    /// The minimum query count (LoadGen's `min_query_count`).
    pub min_queries: u64,
    /// The minimum duration (LoadGen's `min_duration`), seconds.
    pub min_duration_s: f64,
    /// Where the minimums came from: `LoadGen's defaults`, the command
    /// line or the config.
    pub minimums_from: String,
    #[serde(default)]
    pub p99_bound_ns: Option<u64>,
    #[serde(default)]
    pub find_peak: bool,
    pub seed: u64,
}

/// A load refused before it runs: what is wrong, and where the setting
/// came from (`--qps: ...` or `FILE:line:col: load.qps: ...`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct LoadRefusal(pub String);

/// Where a setting came from: its option, or the config's key.
struct Origin<'a> {
    option: &'a str,
    key: &'a str,
    config: Option<&'a Path>,
    from_config: bool,
}

impl Origin<'_> {
    /// `message` about the setting, said with where it came from.
    fn refuse(&self, message: impl std::fmt::Display) -> LoadRefusal {
        if !self.from_config {
            return LoadRefusal(format!("{}: {message}", self.option));
        }
        let path = self.config.map(Path::display);
        let key = format!("load.{}", self.key);
        LoadRefusal(
            match (path, self.config.and_then(|p| locate_key(p, &key))) {
                (Some(path), Some((line, column))) => {
                    format!("{path}:{line}:{column}: {key}: {message}")
                }
                (Some(path), None) => format!("{path}: {key}: {message}"),
                (None, _) => format!("{key}: {message}"),
            },
        )
    }
}

/// A refusal that no one setting is to blame for.
fn refuse(message: impl Into<String>) -> Result<LoadSpec, LoadRefusal> {
    Err(LoadRefusal(message.into()))
}

/// The options and the config's section, read side by side.
struct Sources<'a> {
    options: &'a LoadOptions,
    section: &'a LoadConfig,
    config: Option<&'a Path>,
}

impl<'a> Sources<'a> {
    fn origin(&self, option: &'a str, key: &'a str, from_config: bool) -> Origin<'a> {
        Origin {
            option,
            key,
            config: self.config,
            from_config,
        }
    }

    /// The option's value, else the config's, with where it came from.
    fn pick<T: Clone>(
        &self,
        (option, config): (&Option<T>, &Option<T>),
        flag: &'a str,
        key: &'a str,
    ) -> Option<(T, Origin<'a>)> {
        match (option, config) {
            (Some(value), _) => Some((value.clone(), self.origin(flag, key, false))),
            (None, Some(value)) => Some((value.clone(), self.origin(flag, key, true))),
            (None, None) => None,
        }
    }

    /// A duration's option, else the config's value, parsed; refused with
    /// its origin when it does not parse (a bare number has no unit).
    fn duration(
        &self,
        (option, config): (&Option<String>, &Option<serde_yaml::Value>),
        flag: &'a str,
        key: &'a str,
    ) -> Result<Option<std::time::Duration>, LoadRefusal> {
        let Some((text, from_config)) = pick_value(option, config) else {
            return Ok(None);
        };
        let at = self.origin(flag, key, from_config);
        units::parse_duration(&text)
            .map(Some)
            .map_err(|message| at.refuse(message))
    }
}

/// The scenario asked for, its rate and its queries outstanding, checked
/// against each other.
struct Shape {
    name: String,
    workers: u32,
    qps: Option<f64>,
    /// Where the rate came from, for a refusal of what it sends.
    qps_origin: Option<String>,
    arrival: Arrival,
    concurrency: Option<u32>,
    find_peak: bool,
}

/// The load `options` and the config's `load:` section (`section`, read
/// from `config`) ask for, with the run's `seed` and its capture range;
/// refused, saying where the setting came from, when a setting is out of
/// range or settings disagree.
pub fn resolve(
    options: &LoadOptions,
    section: &LoadConfig,
    config: Option<&Path>,
    seed: u64,
    capture_range: &str,
) -> Result<LoadSpec, LoadRefusal> {
    let sources = Sources {
        options,
        section,
        config,
    };
    let shape = shape_of(&sources)?;
    let duration = sources.duration(
        (&options.duration, &section.duration),
        "--duration",
        "duration",
    )?;
    let bound_ns = sources
        .duration(
            (&options.p99_bound, &section.p99_bound),
            "--p99-bound",
            "p99_bound",
        )?
        .map(units::nanos);
    if shape.find_peak && bound_ns.is_none() {
        return refuse("--find-peak searches for the highest rate whose p99 holds a bound: give --p99-bound (10ms, say)");
    }
    let queries = sources.pick((&options.queries, &section.queries), "--queries", "queries");
    if let Some((0, at)) = &queries {
        return Err(at.refuse("a load measures at least one query (got 0)"));
    }
    let loadgen = options.loadgen_minimums || section.loadgen_minimums == Some(true);
    let (min_queries, min_duration_s, minimums_from) = match (&queries, duration) {
        (None, None) if loadgen => (
            loadgen_min_queries(&shape.name),
            LOADGEN_MIN_DURATION_S,
            "LoadGen's defaults".to_owned(),
        ),
        (None, None) => (
            quick_min_queries(),
            QUICK_MIN_DURATION_S,
            QUICK_DEFAULTS.to_owned(),
        ),
        (q, d) => (
            q.as_ref().map_or(0, |(n, _)| *n),
            d.map_or(0.0, |d| d.as_secs_f64()),
            if q.as_ref().is_some_and(|(_, at)| at.from_config) {
                "the config".to_owned()
            } else {
                "the command line".to_owned()
            },
        ),
    };
    if shape.name == "offline" && min_queries == 0 {
        return refuse("offline sends a count of queries at once: give --queries N");
    }
    let warmup = options.warmup.or(section.warmup).unwrap_or(10);
    check_counts(&shape, min_queries, min_duration_s, bound_ns)?;
    Ok(spec_of(
        shape,
        Minimums {
            queries: min_queries,
            duration_s: min_duration_s,
            from: minimums_from,
        },
        warmup,
        bound_ns,
        (seed, capture_range),
    ))
}

/// The scenario, workers, rate, arrivals and queries outstanding, each
/// checked against the others.
fn shape_of(sources: &Sources<'_>) -> Result<Shape, LoadRefusal> {
    let (options, section) = (sources.options, sources.section);
    let find_peak = options.find_peak || section.find_peak.unwrap_or(false);
    let qps = sources.pick((&options.qps, &section.qps), "--qps", "qps");
    let name = match sources.pick(
        (&options.scenario, &section.scenario),
        "--scenario",
        "scenario",
    ) {
        Some((name, at)) => match name.as_str() {
            "single-stream" | "server" | "concurrency" | "offline" => name,
            other => {
                return Err(at.refuse(format!(
                    "unknown scenario `{other}`: single-stream, server, concurrency or offline"
                )))
            }
        },
        None if qps.is_some() || find_peak => "server".to_owned(),
        None if options.concurrency.is_some() || section.concurrency.is_some() => {
            "concurrency".to_owned()
        }
        None => "single-stream".to_owned(),
    };
    let workers = match sources.pick((&options.workers, &section.workers), "--workers", "workers") {
        Some((0, at)) => return Err(at.refuse("a load needs at least one worker (got 0)")),
        Some((n, _)) => n,
        None => 1,
    };
    if name == "single-stream" && workers != 1 {
        return Err(LoadRefusal(format!(
            "single-stream has one query outstanding: it runs on one worker, not {workers} (concurrency N keeps N outstanding)"
        )));
    }
    let qps_value = match &qps {
        Some((q, at)) if let Err(message) = units::check_rate(*q) => return Err(at.refuse(message)),
        Some((_, at)) if name != "server" => {
            return Err(at.refuse(format!(
                "an offered rate is the server scenario's, not {name}'s"
            )))
        }
        Some((q, _)) => Some(*q),
        None => None,
    };
    if name == "server" && qps_value.is_none() && !find_peak {
        return Err(LoadRefusal(
            "the server scenario sends queries at a rate: give --qps Q (or --find-peak with --p99-bound)".to_owned(),
        ));
    }
    if find_peak && name != "server" {
        return Err(LoadRefusal(format!(
            "--find-peak searches the server scenario's rate, not {name}'s"
        )));
    }
    let arrival = match sources.pick((&options.arrival, &section.arrival), "--arrival", "arrival") {
        Some((text, at)) => parse_arrival(&text).map_err(|message| at.refuse(message))?,
        None => Arrival::Poisson,
    };
    let concurrency = concurrency_of(sources, &name)?;
    Ok(Shape {
        qps_origin: qps.map(|(_, at)| at.refuse("").0),
        name,
        workers,
        qps: qps_value,
        arrival,
        concurrency,
        find_peak,
    })
}

/// The concurrency scenario's queries outstanding: given for it, and only
/// for it.
fn concurrency_of(sources: &Sources<'_>, scenario: &str) -> Result<Option<u32>, LoadRefusal> {
    let given = sources.pick(
        (&sources.options.concurrency, &sources.section.concurrency),
        "--concurrency",
        "concurrency",
    );
    match given {
        Some((0, at)) => Err(at.refuse("at least one query outstanding (got 0)")),
        Some((_, at)) if scenario != "concurrency" => Err(at.refuse(format!(
            "queries outstanding are the concurrency scenario's, not {scenario}'s"
        ))),
        Some((n, _)) => Ok(Some(n)),
        None if scenario == "concurrency" => Err(LoadRefusal(
            "the concurrency scenario keeps N queries outstanding: give --concurrency N".to_owned(),
        )),
        None => Ok(None),
    }
}

/// What an open loop sends is known before it runs: refused when it is
/// more than a step records or takes longer than a load runs, or too few
/// for the p99 a bound asks for.
fn check_counts(
    shape: &Shape,
    min_queries: u64,
    min_duration_s: f64,
    bound_ns: Option<u64>,
) -> Result<(), LoadRefusal> {
    let sent = match (shape.name.as_str(), shape.qps) {
        ("server", Some(q)) if !shape.find_peak => {
            Some(min_queries.max((q * min_duration_s).ceil() as u64))
        }
        ("offline", _) => Some(min_queries),
        _ => None,
    };
    // An open loop's count and length follow from its rate, and are
    // refused as the rate's; a closed loop (or a search) sends at least
    // the minimum count.
    let sendable = match sent {
        Some(sent) => check_sendable(sent, shape.qps.filter(|_| shape.name == "server")),
        None => check_sendable(min_queries, None),
    };
    if let Err(message) = sendable {
        return Err(match (&shape.qps_origin, sent) {
            (Some(origin), Some(_)) => LoadRefusal(format!("{origin}{message}")),
            _ => LoadRefusal(message),
        });
    }
    let p99_needs = needed_for(0.99, CONFIDENCE);
    let p999_needs = needed_for(0.999, CONFIDENCE);
    if let (Some(sent), Some(_)) = (sent, bound_ns) {
        if sent < p99_needs {
            return Err(LoadRefusal(format!(
                "this load sends {sent} queries; a p99 with its 95 % interval needs {p99_needs} (p99.9 needs {p999_needs}): a longer --duration or more --queries"
            )));
        }
    }
    Ok(())
}

/// Where the minimums of a load given no length come from, as the record
/// and the output say it.
pub const QUICK_DEFAULTS: &str = "the quick defaults";

/// A load's minimum query count and duration, and where they came from.
struct Minimums {
    queries: u64,
    duration_s: f64,
    from: String,
}

/// The spec of a load whose settings passed every check.
fn spec_of(
    shape: Shape,
    minimums: Minimums,
    warmup: u64,
    bound_ns: Option<u64>,
    (seed, capture_range): (u64, &str),
) -> LoadSpec {
    let scenario = match shape.name.as_str() {
        "single-stream" => Scenario::SingleStream,
        "server" => Scenario::Server {
            qps: shape.qps.unwrap_or(0.0),
            arrival: shape.arrival,
        },
        "concurrency" => Scenario::Concurrency(shape.concurrency.unwrap_or(1)),
        _ => Scenario::Offline,
    };
    let min_duration_ns = (minimums.duration_s * 1e9) as u64;
    // A closed loop with a bound runs at least the p99's count.
    let closed_minimum = if bound_ns.is_some() {
        needed_for(0.99, CONFIDENCE)
    } else {
        0
    };
    let plan_queries = match scenario {
        Scenario::Server { qps, .. } => (minimums
            .queries
            .max((qps * minimums.duration_s).ceil() as u64))
        .max(closed_minimum),
        Scenario::Offline => minimums.queries,
        _ => minimums.queries.max(closed_minimum),
    };
    LoadSpec {
        plan: LoadPlan {
            scenario,
            queries: usize::try_from(plan_queries).unwrap_or(usize::MAX),
            warmup: usize::try_from(warmup).unwrap_or(usize::MAX),
            workers: shape.workers,
            seed,
            min_duration_ns: match scenario {
                Scenario::SingleStream | Scenario::Concurrency(_) => min_duration_ns,
                _ => 0,
            },
            record_ranges: true,
            capture_range: capture_range.to_owned(),
        },
        bound_ns,
        find_peak: shape.find_peak.then(|| PeakSearch {
            start_qps: shape.qps.unwrap_or(0.0),
            tolerance: 0.05,
            max_steps: 12,
        }),
        request: LoadRequestRecord {
            scenario: shape.name,
            qps: shape.qps,
            arrival: matches!(scenario, Scenario::Server { .. }).then(|| shape.arrival.to_string()),
            concurrency: shape.concurrency,
            workers: shape.workers,
            warmup,
            min_queries: minimums.queries,
            min_duration_s: minimums.duration_s,
            minimums_from: minimums.from,
            p99_bound_ns: bound_ns,
            find_peak: shape.find_peak,
            seed,
        },
    }
}

/// A load that sends `sent` queries (at `qps` a second, for an open loop)
/// fits what a step records and what the clock holds, or is refused with
/// its numbers before anything runs.
pub fn check_sendable(sent: u64, qps: Option<f64>) -> Result<(), String> {
    let rate = qps.map_or_else(String::new, |q| format!(" (at {q} a second)"));
    if usize::try_from(sent).map_or(true, |sent| sent > MAX_QUERIES) {
        return Err(format!(
            "this load sends {sent} queries{rate}: more than a step records, at most {MAX_QUERIES} (each query's times and ranges are kept in memory): a lower --qps, a shorter --duration or fewer --queries"
        ));
    }
    if let Some(qps) = qps {
        let seconds = sent as f64 / qps;
        let longest = units::MAX_DURATION;
        if seconds > longest.as_secs_f64() {
            return Err(format!(
                "{sent} queries at {qps} a second take {seconds:.0} s to send, longer than a load runs (at most {} h): a higher --qps or fewer --queries",
                longest.as_secs() / 3600
            ));
        }
    }
    Ok(())
}

/// An option's text, else the config's value (text, or a bare number that
/// the parser then refuses for want of a unit); whether it came from the
/// config.
fn pick_value(
    option: &Option<String>,
    config: &Option<serde_yaml::Value>,
) -> Option<(String, bool)> {
    match (option, config) {
        (Some(text), _) => Some((text.clone(), false)),
        (None, Some(value)) => Some((
            match value {
                serde_yaml::Value::String(text) => text.clone(),
                serde_yaml::Value::Number(number) => number.to_string(),
                other => describe_value(other),
            },
            true,
        )),
        (None, None) => None,
    }
}

/// `poisson`, `constant` or `gamma:SHAPE`.
pub fn parse_arrival(text: &str) -> Result<Arrival, String> {
    match text.trim() {
        "poisson" => Ok(Arrival::Poisson),
        "constant" => Ok(Arrival::Constant),
        "gamma" => Err("a gamma arrival needs its shape: gamma:0.5 (burstier than Poisson) or gamma:4 (more even)".to_owned()),
        other => match other.strip_prefix("gamma:") {
            Some(shape) => match shape.trim().parse::<f64>() {
                Ok(shape) if shape.is_finite() && shape > 0.0 => Ok(Arrival::Gamma { shape }),
                _ => Err(format!("`{other}`: a gamma arrival's shape is a number above 0")),
            },
            None => Err(format!(
                "unknown arrival `{other}`: poisson, constant or gamma:SHAPE"
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(options: &LoadOptions, section: &LoadConfig) -> Result<LoadSpec, LoadRefusal> {
        resolve(options, section, None, 7, "capture")
    }

    /// Nothing asked: one query outstanding, the quick minimums (p99's
    /// interval and half a minute), the run's seed and capture range.
    #[test]
    fn a_load_with_no_settings_is_single_stream_at_the_quick_minimums() {
        let spec = resolved(&LoadOptions::default(), &LoadConfig::default()).unwrap();
        assert!(matches!(spec.plan.scenario, Scenario::SingleStream));
        assert_eq!(spec.plan.queries, 368);
        assert_eq!(spec.plan.min_duration_ns, 30_000_000_000);
        assert_eq!(spec.plan.workers, 1);
        assert_eq!(spec.plan.warmup, 10);
        assert_eq!(spec.plan.seed, 7);
        assert_eq!(spec.plan.capture_range, "capture");
        assert_eq!(spec.request.minimums_from, QUICK_DEFAULTS);
        assert_eq!(spec.request.scenario, "single-stream");
        // A server at 100 queries a second: half a minute's worth.
        let server = LoadOptions {
            qps: Some(100.0),
            ..LoadOptions::default()
        };
        assert_eq!(
            resolved(&server, &LoadConfig::default())
                .unwrap()
                .plan
                .queries,
            3_000
        );
        // At 2 a second, 368 queries: longer than half a minute, for p99.
        let slow = LoadOptions {
            qps: Some(2.0),
            ..LoadOptions::default()
        };
        assert_eq!(
            resolved(&slow, &LoadConfig::default())
                .unwrap()
                .plan
                .queries,
            368
        );
    }

    /// `--loadgen-minimums` (or `load.loadgen_minimums: true`): LoadGen's
    /// minimums, for a result to publish.
    #[test]
    fn loadgen_minimums_are_asked_for() {
        let asked = LoadOptions {
            loadgen_minimums: true,
            ..LoadOptions::default()
        };
        let spec = resolved(&asked, &LoadConfig::default()).unwrap();
        assert_eq!(spec.plan.queries, 1_024);
        assert_eq!(spec.plan.min_duration_ns, 600_000_000_000);
        assert_eq!(spec.request.minimums_from, "LoadGen's defaults");
        let section = LoadConfig {
            loadgen_minimums: Some(true),
            qps: Some(1_000.0),
            ..LoadConfig::default()
        };
        let server = resolved(&LoadOptions::default(), &section).unwrap();
        assert_eq!(server.plan.queries, 600_000);
    }

    /// The option wins over the config's key; a rate makes the load a
    /// server's, which sends `qps × duration` queries.
    #[test]
    fn an_option_overrides_the_config_and_a_rate_makes_a_server_load() {
        let section = LoadConfig {
            qps: Some(10.0),
            duration: Some(serde_yaml::Value::String("2s".to_owned())),
            ..LoadConfig::default()
        };
        let options = LoadOptions {
            qps: Some(50.0),
            ..LoadOptions::default()
        };
        let spec = resolved(&options, &section).unwrap();
        match spec.plan.scenario {
            Scenario::Server { qps, arrival } => {
                assert_eq!(qps, 50.0);
                assert_eq!(arrival, Arrival::Poisson);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(spec.plan.queries, 100);
        assert_eq!(spec.request.min_duration_s, 2.0);
        assert_eq!(spec.plan.min_duration_ns, 0, "an open loop sends a count");
    }

    /// A refusal names the option it came from, or the config key with
    /// its file, line and column.
    #[test]
    fn a_refusal_names_the_option_or_the_config_key_with_its_line() {
        let options = LoadOptions {
            workers: Some(0),
            ..LoadOptions::default()
        };
        let refusal = resolved(&options, &LoadConfig::default()).unwrap_err();
        assert_eq!(
            refusal.0,
            "--workers: a load needs at least one worker (got 0)"
        );
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config.yaml");
        std::fs::write(
            &config,
            "target:\n  name: t\nload:\n  qps: 5\n  scenario: offline\n",
        )
        .unwrap();
        let section = LoadConfig {
            qps: Some(5.0),
            scenario: Some("offline".to_owned()),
            ..LoadConfig::default()
        };
        let refusal =
            resolve(&LoadOptions::default(), &section, Some(&config), 0, "c").unwrap_err();
        assert_eq!(
            refusal.0,
            format!(
                "{}:4:8: load.qps: an offered rate is the server scenario's, not offline's",
                config.display()
            )
        );
    }

    /// What an open loop would send is refused before it runs: more than
    /// a step records, longer than a load runs, or too few for the p99 a
    /// bound asks for.
    #[test]
    fn an_open_loop_that_cannot_be_measured_is_refused_with_its_numbers() {
        let too_long = LoadOptions {
            qps: Some(1e-9),
            queries: Some(1_000),
            ..LoadOptions::default()
        };
        let refusal = resolved(&too_long, &LoadConfig::default()).unwrap_err();
        assert!(
            refusal
                .0
                .starts_with("--qps: 1000 queries at 0.000000001 a second take"),
            "{refusal}"
        );
        let too_many = LoadOptions {
            scenario: Some("offline".to_owned()),
            queries: Some(MAX_QUERIES as u64 + 1),
            ..LoadOptions::default()
        };
        let refusal = resolved(&too_many, &LoadConfig::default()).unwrap_err();
        assert!(refusal.0.contains("more than a step records"), "{refusal}");
        let too_few = LoadOptions {
            qps: Some(100.0),
            queries: Some(10),
            p99_bound: Some("10ms".to_owned()),
            ..LoadOptions::default()
        };
        let refusal = resolved(&too_few, &LoadConfig::default()).unwrap_err();
        let needs = needed_for(0.99, CONFIDENCE);
        assert!(
            refusal.0.starts_with(&format!(
                "this load sends 10 queries; a p99 with its 95 % interval needs {needs}"
            )),
            "{refusal}"
        );
    }
}
