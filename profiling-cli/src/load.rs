//! `profile-cli load`: a target driven as a service is driven (LoadGen's
//! scenarios), its latency from each query's intended send, the bound
//! checked, the peak rate searched, and which range owns the p99.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Args;
use profiling_core::device::Device;
use profiling_core::driver::config::{locate_key, LoadConfig, Overrides};
use profiling_core::driver::interrupt;
use profiling_core::driver::load::arrivals::Arrival;
use profiling_core::driver::load::drive::{LoadPlan, Scenario};
use profiling_core::driver::load::latency::needed_for;
use profiling_core::driver::load::peak::PeakSearch;
use profiling_core::driver::load::summary::{Distribution, LoadStep, CONFIDENCE};
use profiling_core::driver::session::{
    self, LoadManifest, LoadRequestRecord, LoadSpec, LoadStatus, RunRequest,
};

use crate::exit::{EXIT_OK, EXIT_TARGET_FAILED, EXIT_USAGE};
use crate::handoff::{self, Loaded};
use crate::run_dir::RunDirArgs;
use crate::streams::Streams;
use crate::units;

/// LoadGen's minimum duration of a performance run.
pub(crate) const LOADGEN_MIN_DURATION_S: f64 = 600.0;

/// LoadGen's minimum query count of a scenario (single-stream's for a
/// concurrency load, offline's sample count for an offline one).
pub(crate) fn loadgen_min_queries(scenario: &str) -> u64 {
    match scenario {
        "server" => 270_336,
        "offline" => 24_576,
        _ => 1_024,
    }
}

#[derive(Debug, Args)]
pub(crate) struct LoadArgs {
    /// The target to load (`profile-cli list` shows them); defaults to the config's target.name.
    pub(crate) name: Option<String>,
    /// The YAML config: the data source, the target's parameters and, under `load:`, this
    /// command's defaults (each option below overrides its key).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// The data source: a registered name (`list --sources`); its parameters come from the config.
    #[arg(long, value_name = "NAME")]
    pub(crate) data_source: Option<String>,
    /// cpu, cuda (= cuda:0) or cuda:N.
    #[arg(long, value_name = "DEVICE", value_parser = crate::run::parse_device)]
    pub(crate) device: Option<Device>,
    /// Seeds the arrivals and every random generator the target uses.
    #[arg(long, value_name = "N")]
    pub(crate) seed: Option<u64>,
    /// single-stream (the next query when the last answers), server (queries sent at --qps
    /// whether or not the workers keep up), concurrency (--concurrency N queries outstanding) or
    /// offline (every query at once). Default: server with --qps or --find-peak, concurrency
    /// with --concurrency, else single-stream.
    #[arg(long, value_name = "SCENARIO")]
    pub(crate) scenario: Option<String>,
    /// The server scenario's offered rate, queries a second (above 0).
    #[arg(long, value_name = "Q", value_parser = units::parse_rate)]
    pub(crate) qps: Option<f64>,
    /// The server scenario's arrivals, from the run's seed: poisson (default), constant, or
    /// gamma:SHAPE (below 1 burstier than Poisson, above 1 more even).
    #[arg(long, value_name = "ARRIVAL")]
    pub(crate) arrival: Option<String>,
    /// The concurrency scenario's queries outstanding.
    #[arg(long, value_name = "N", value_parser = units::parse_count::<u32>)]
    pub(crate) concurrency: Option<u32>,
    /// Worker threads, each with its own target instance (the factory called once per worker;
    /// the records read once and shared).
    #[arg(long, value_name = "W", value_parser = units::parse_count::<u32>)]
    pub(crate) workers: Option<u32>,
    /// Queries each worker serves before the measurement (default 10).
    #[arg(long, value_name = "N", value_parser = units::parse_count::<u64>)]
    pub(crate) warmup: Option<u64>,
    /// The minimum query count. With neither this nor --duration, LoadGen's minimums: 600 s
    /// and 1,024 queries (server 270,336; offline 24,576); either one set replaces both.
    #[arg(long, value_name = "N", value_parser = units::parse_count::<u64>)]
    pub(crate) queries: Option<u64>,
    /// The minimum duration: a number and a unit (500ms, 30s, 2m). A server load sends
    /// qps × duration queries; a closed loop sends until both minimums are reached.
    #[arg(long, value_name = "DURATION")]
    pub(crate) duration: Option<String>,
    /// The latency the p99 must hold, with its unit (10ms, 250us, 1.5s): held or missed, and
    /// whether the p99's 95 % interval decides it.
    #[arg(long, value_name = "DURATION")]
    pub(crate) p99_bound: Option<String>,
    /// Search the highest server rate whose p99 holds --p99-bound: from --qps (default: half
    /// what the workers serve by a single-stream calibration), doubled or halved until a
    /// bracket, then bisected to 5 %; each step a full measurement, the curve printed.
    #[arg(long)]
    pub(crate) find_peak: bool,
    #[command(flatten)]
    pub(crate) run_dir: RunDirArgs,
    /// Replace an earlier run with the same --run-id.
    #[arg(long)]
    pub(crate) force: bool,
    /// Write no load.html beside load.yaml.
    #[arg(long)]
    pub(crate) no_report: bool,
    /// Print one JSON document on stdout (the record's path, status and `load` section); human
    /// output goes to stderr.
    #[arg(long)]
    pub(crate) json: bool,
    /// Where a profiling binary leaves what is left to do after the load (the page, the `--json`
    /// document), for the `profile-cli` that ran it.
    #[arg(long = "handoff", alias = "outcome", value_name = "FILE", hide = true)]
    pub(crate) outcome: Option<PathBuf>,
}

/// A usage error, with where it came from (an option or a config key).
struct Refusal(String);

/// Where a setting came from: `--qps`, or `FILE:line:col: load.qps`.
struct Origin<'a> {
    option: &'a str,
    key: &'a str,
    config: Option<&'a Path>,
    from_config: bool,
}

impl Origin<'_> {
    fn refuse(&self, message: impl std::fmt::Display) -> Refusal {
        if !self.from_config {
            return Refusal(format!("{}: {message}", self.option));
        }
        let path = self.config.map(Path::display);
        let key = format!("load.{}", self.key);
        Refusal(
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

/// The load the arguments and the config's `load:` section ask for.
fn spec_of(
    args: &LoadArgs,
    section: &LoadConfig,
    config_path: Option<&Path>,
    seed: u64,
    capture_range: &str,
) -> Result<LoadSpec, Refusal> {
    let origin = |option: &'static str, key: &'static str, from_config: bool| Origin {
        option,
        key,
        config: config_path,
        from_config,
    };
    // Each setting: the option's, else the config's, with its origin.
    macro_rules! pick {
        ($field:ident, $option:literal, $key:literal) => {
            match (&args.$field, &section.$field) {
                (Some(v), _) => Some((v.clone(), origin($option, $key, false))),
                (None, Some(v)) => Some((v.clone(), origin($option, $key, true))),
                (None, None) => None,
            }
        };
    }
    let find_peak = args.find_peak || section.find_peak.unwrap_or(false);
    let qps = pick!(qps, "--qps", "qps");
    let scenario_name = match pick!(scenario, "--scenario", "scenario") {
        Some((name, at)) => match name.as_str() {
            "single-stream" | "server" | "concurrency" | "offline" => name,
            other => {
                return Err(at.refuse(format!(
                    "unknown scenario `{other}`: single-stream, server, concurrency or offline"
                )))
            }
        },
        None if qps.is_some() || find_peak => "server".to_owned(),
        None if args.concurrency.is_some() || section.concurrency.is_some() => {
            "concurrency".to_owned()
        }
        None => "single-stream".to_owned(),
    };
    let workers = match pick!(workers, "--workers", "workers") {
        Some((0, at)) => {
            return Err(at.refuse("a load needs at least one worker (got 0)"));
        }
        Some((n, _)) => n,
        None => 1,
    };
    if scenario_name == "single-stream" && workers != 1 {
        return Err(Refusal(format!(
            "single-stream has one query outstanding: it runs on one worker, not {workers} (concurrency N keeps N outstanding)"
        )));
    }
    let qps_value = match &qps {
        Some((q, at)) if let Err(message) = units::check_rate(*q) => return Err(at.refuse(message)),
        Some((_, at)) if scenario_name != "server" => {
            return Err(at.refuse(format!(
                "an offered rate is the server scenario's, not {scenario_name}'s"
            )))
        }
        Some((q, _)) => Some(*q),
        None => None,
    };
    if scenario_name == "server" && qps_value.is_none() && !find_peak {
        return Err(Refusal(
            "the server scenario sends queries at a rate: give --qps Q (or --find-peak with --p99-bound)".to_owned(),
        ));
    }
    if find_peak && scenario_name != "server" {
        return Err(Refusal(format!(
            "--find-peak searches the server scenario's rate, not {scenario_name}'s"
        )));
    }
    let arrival = match pick!(arrival, "--arrival", "arrival") {
        Some((text, at)) => parse_arrival(&text).map_err(|message| at.refuse(message))?,
        None => Arrival::Poisson,
    };
    let concurrency = match pick!(concurrency, "--concurrency", "concurrency") {
        Some((0, at)) => return Err(at.refuse("at least one query outstanding (got 0)")),
        Some((_, at)) if scenario_name != "concurrency" => {
            return Err(at.refuse(format!(
                "queries outstanding are the concurrency scenario's, not {scenario_name}'s"
            )))
        }
        Some((n, _)) => Some(n),
        None if scenario_name == "concurrency" => {
            return Err(Refusal(
                "the concurrency scenario keeps N queries outstanding: give --concurrency N"
                    .to_owned(),
            ))
        }
        None => None,
    };
    let duration = match pick_value(&args.duration, &section.duration) {
        Some((text, from_config)) => {
            let at = origin("--duration", "duration", from_config);
            Some(units::parse_duration(&text).map_err(|message| at.refuse(message))?)
        }
        None => None,
    };
    let bound_ns = match pick_value(&args.p99_bound, &section.p99_bound) {
        Some((text, from_config)) => {
            let at = origin("--p99-bound", "p99_bound", from_config);
            let bound = units::parse_duration(&text).map_err(|message| at.refuse(message))?;
            Some(units::nanos(bound))
        }
        None => None,
    };
    if find_peak && bound_ns.is_none() {
        return Err(Refusal(
            "--find-peak searches for the highest rate whose p99 holds a bound: give --p99-bound (10ms, say)".to_owned(),
        ));
    }
    let queries = pick!(queries, "--queries", "queries");
    if let Some((0, at)) = &queries {
        return Err(at.refuse("a load measures at least one query (got 0)"));
    }
    let (min_queries, min_duration_s, minimums_from) = match (&queries, duration) {
        (None, None) => (
            loadgen_min_queries(&scenario_name),
            LOADGEN_MIN_DURATION_S,
            "LoadGen's defaults".to_owned(),
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
    if scenario_name == "offline" && min_queries == 0 {
        return Err(Refusal(
            "offline sends a count of queries at once: give --queries N".to_owned(),
        ));
    }
    let warmup = args.warmup.or(section.warmup).unwrap_or(10);
    let p99_needs = needed_for(0.99, CONFIDENCE);
    let p999_needs = needed_for(0.999, CONFIDENCE);
    // What an open loop sends is known now: too few for the percentile
    // asked is refused before anything runs.
    let sent = match (scenario_name.as_str(), qps_value) {
        ("server", Some(q)) if !find_peak => {
            Some(min_queries.max((q * min_duration_s).ceil() as u64))
        }
        ("offline", _) => Some(min_queries),
        _ => None,
    };
    // An open loop's count and length follow from its rate, and are
    // refused as the rate's; a closed loop (or a search) sends at least
    // the minimum count.
    let sendable = match sent {
        Some(sent) => check_sendable(sent, qps_value.filter(|_| scenario_name == "server")),
        None => check_sendable(min_queries, None),
    };
    if let Err(message) = sendable {
        return Err(match (&qps, sent) {
            (Some((_, at)), Some(_)) => at.refuse(message),
            _ => Refusal(message),
        });
    }
    if let (Some(sent), Some(_)) = (sent, bound_ns) {
        if sent < p99_needs {
            return Err(Refusal(format!(
                "this load sends {sent} queries; a p99 with its 95 % interval needs {p99_needs} (p99.9 needs {p999_needs}): a longer --duration or more --queries"
            )));
        }
    }
    let scenario = match scenario_name.as_str() {
        "single-stream" => Scenario::SingleStream,
        "server" => Scenario::Server {
            qps: qps_value.unwrap_or(0.0),
            arrival,
        },
        "concurrency" => Scenario::Concurrency(concurrency.unwrap_or(1)),
        _ => Scenario::Offline,
    };
    let min_duration_ns = (min_duration_s * 1e9) as u64;
    // A closed loop with a bound runs at least the p99's count.
    let closed_minimum = if bound_ns.is_some() { p99_needs } else { 0 };
    let plan_queries = match scenario {
        Scenario::Server { qps, .. } => {
            (min_queries.max((qps * min_duration_s).ceil() as u64)).max(closed_minimum)
        }
        Scenario::Offline => min_queries,
        _ => min_queries.max(closed_minimum),
    };
    Ok(LoadSpec {
        plan: LoadPlan {
            scenario,
            queries: usize::try_from(plan_queries).unwrap_or(usize::MAX),
            warmup: usize::try_from(warmup).unwrap_or(usize::MAX),
            workers,
            seed,
            min_duration_ns: match scenario {
                Scenario::SingleStream | Scenario::Concurrency(_) => min_duration_ns,
                _ => 0,
            },
            record_ranges: true,
            capture_range: capture_range.to_owned(),
        },
        bound_ns,
        find_peak: find_peak.then(|| PeakSearch {
            start_qps: qps_value.unwrap_or(0.0),
            tolerance: 0.05,
            max_steps: 12,
        }),
        request: LoadRequestRecord {
            scenario: scenario_name,
            qps: qps_value,
            arrival: matches!(scenario, Scenario::Server { .. }).then(|| arrival.to_string()),
            concurrency,
            workers,
            warmup,
            min_queries,
            min_duration_s,
            minimums_from,
            p99_bound_ns: bound_ns,
            find_peak,
            seed,
        },
    })
}

/// A load that sends `sent` queries (at `qps` a second, for an open loop)
/// fits what a step records and what the clock holds, or is refused with
/// its numbers before anything runs.
fn check_sendable(sent: u64, qps: Option<f64>) -> Result<(), String> {
    let most = profiling_core::driver::load::drive::MAX_QUERIES;
    let rate = qps.map_or_else(String::new, |q| format!(" (at {q} a second)"));
    if usize::try_from(sent).map_or(true, |sent| sent > most) {
        return Err(format!(
            "this load sends {sent} queries{rate}: more than a step records, at most {most} (each query's times and ranges are kept in memory): a lower --qps, a shorter --duration or fewer --queries"
        ));
    }
    if let Some(qps) = qps {
        let seconds = sent as f64 / qps;
        let longest = profiling_core::units::MAX_DURATION;
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
                other => profiling_core::driver::config::describe_value(other),
            },
            true,
        )),
        (None, None) => None,
    }
}

/// `poisson`, `constant` or `gamma:SHAPE`.
fn parse_arrival(text: &str) -> Result<Arrival, String> {
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

/// The session's request for `args`.
fn request_of(args: &LoadArgs, argv: &[OsString], root: &Path) -> RunRequest {
    RunRequest {
        target: args.name.clone(),
        config_path: args.config.clone(),
        overrides: Overrides {
            data_source: args.data_source.clone(),
            device: args.device,
            seed: args.seed,
            output_dir: args.run_dir.output_dir.clone(),
            ..Overrides::default()
        },
        run_id: args.run_dir.run_id.clone(),
        force: args.force,
        workspace_root: root.to_path_buf(),
        default_output_dir: args.run_dir.default_output_dir.clone(),
        command_line: argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        program_version: env!("CARGO_PKG_VERSION").to_owned(),
        config_edits: Vec::new(),
        sweep: None,
        pair: None,
    }
}

pub(crate) fn load_command(
    args: LoadArgs,
    argv: &[OsString],
    root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let mut streams = Streams {
        out,
        err,
        json: args.json,
    };
    let request = request_of(&args, argv, root);
    let planned = match session::plan(&request) {
        Ok(planned) => planned,
        Err(error) => return streams.fail(&error),
    };
    let section = planned.sections.load.clone().unwrap_or_default();
    if planned.config.batch_size > 1 {
        return streams.refuse(
            &format!(
                "a load sends one record a query: workload.batch_size must be 1, not {} (a batch is a query of its own target)",
                planned.config.batch_size
            ),
            EXIT_USAGE,
        );
    }
    let seed = planned.config.seed.unwrap_or(0);
    let spec = match spec_of(
        &args,
        &section,
        planned.config_path.as_deref(),
        seed,
        &planned.config.capture_range,
    ) {
        Ok(spec) => spec,
        Err(Refusal(message)) => return streams.refuse(&message, EXIT_USAGE),
    };
    if let Err(error) = session::check_run_dir_free(&planned) {
        return streams.fail(&error);
    }
    announce(&planned, &spec, &mut streams)?;
    crate::streams::warn_of_a_debug_build(streams.err)?;
    let wants_page = !args.no_report && planned.config.write_report;
    // A signal ends the step in progress; what was measured is written.
    let stop = AtomicBool::new(false);
    let finished = AtomicBool::new(false);
    let report = std::thread::scope(|scope| {
        let _hold = interrupt::Hold::new();
        scope.spawn(|| {
            while !finished.load(Ordering::SeqCst) {
                if interrupt::received().is_some() {
                    interrupt::acknowledge();
                    stop.store(true, Ordering::SeqCst);
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        let human = streams.human();
        let mut on_step = |step: &LoadStep| {
            let _ = writeln!(human, "  {}", step_line(step));
        };
        // The page is drawn with the record, when this build draws pages
        // and no `profile-cli` will (a profiling binary's load).
        #[cfg(feature = "full")]
        let render =
            |manifest: &LoadManifest| crate::report::load_page(manifest, &tables_text(manifest));
        #[cfg(feature = "full")]
        let page = (wants_page && args.outcome.is_none()).then_some((
            crate::report::LOAD_PAGE_FILE,
            &render as &dyn Fn(&LoadManifest) -> String,
        ));
        #[cfg(not(feature = "full"))]
        let page = None;
        let report = session::execute_load(&planned, &request, &spec, &stop, &mut on_step, page);
        finished.store(true, Ordering::SeqCst);
        report
    });
    let report = match report {
        Ok(report) => report,
        Err(error) => return streams.fail(&error),
    };
    let manifest = &report.manifest;
    write_tables(manifest, streams.human())?;
    let mut code = match (&report.outcome, manifest.status) {
        (Err(error), _) => {
            writeln!(streams.err, "error: {error}")?;
            EXIT_TARGET_FAILED
        }
        (Ok(()), LoadStatus::Interrupted) => {
            writeln!(
                streams.err,
                "interrupted: the record keeps what was measured before the signal"
            )?;
            interrupt::received().map_or(EXIT_TARGET_FAILED, interrupt::exit_code)
        }
        (Ok(()), _) => EXIT_OK,
    };
    match (&report.manifest_path, &report.write_error) {
        (Some(path), _) => writeln!(
            streams.human(),
            "record: {}",
            session::absolute(path).display()
        )?,
        (None, Some(error)) => {
            writeln!(streams.err, "error: the record was not written: {error}")?;
            if code == EXIT_OK {
                code = EXIT_TARGET_FAILED;
            }
        }
        (None, None) => writeln!(
            streams.human(),
            "record: not written (write_manifest: false)"
        )?,
    }
    let record = report.manifest_path.as_deref().map(session::absolute);
    let document = streams.json.then(|| {
        serde_json::json!({
            "manifest_path": record,
            "status": manifest.status,
            "error": manifest.error,
            "load": manifest.load,
        })
    });
    let loaded = Loaded {
        code,
        page_to_draw: wants_page && report.page_path.is_none() && report.page_error.is_none(),
        record,
        page_path: report.page_path.as_deref().map(session::absolute),
        page_error: report.page_error.clone(),
        document,
    };
    if let Some(file) = &args.outcome {
        handoff::write(file, &handoff::Handoff::Load(loaded))?;
        return Ok(code);
    }
    after_load(loaded, &mut streams)
}

/// What follows a load that ran: its page, drawn here when the process
/// that ran the load did not (a profiling binary's), its path or why it
/// was not written, and the `--json` document; as the load's own process
/// or the `profile-cli` that ran a profiling binary does them.
pub(crate) fn after_load(loaded: Loaded, streams: &mut Streams<'_>) -> anyhow::Result<u8> {
    #[cfg(feature = "full")]
    let loaded = draw_page(loaded);
    let mut code = loaded.code;
    if loaded.record.is_some() {
        if let Some(path) = &loaded.page_path {
            writeln!(streams.human(), "report: {}", path.display())?;
        }
        if let Some(error) = &loaded.page_error {
            writeln!(streams.err, "error: {error}")?;
            if code == EXIT_OK {
                code = EXIT_TARGET_FAILED;
            }
        }
    }
    if let Some(mut document) = loaded.document {
        document["report_path"] = serde_json::json!(loaded.page_path);
        writeln!(streams.out, "{document}")?;
    }
    Ok(code)
}

/// `load.html` drawn from the record, when it is still to be drawn.
#[cfg(feature = "full")]
fn draw_page(mut loaded: Loaded) -> Loaded {
    if let (true, Some(record)) = (loaded.page_to_draw, &loaded.record) {
        let dir = record.parent().unwrap_or(Path::new("."));
        let written = session::read_load_manifest(record).and_then(|manifest| {
            crate::report::write_load_page(dir, &manifest, &tables_text(&manifest))
        });
        match written {
            Ok(path) => loaded.page_path = Some(path),
            Err(error) => loaded.page_error = Some(error),
        }
    }
    loaded
}

/// The tables of `manifest` as [`write_tables`] prints them, for the page.
#[cfg(feature = "full")]
fn tables_text(manifest: &LoadManifest) -> String {
    let mut tables = Vec::new();
    let _ = write_tables(manifest, &mut tables);
    String::from_utf8_lossy(&tables).into_owned()
}

/// The line that says what is loaded, how, and for how long.
fn announce(
    planned: &session::Planned,
    spec: &LoadSpec,
    streams: &mut Streams<'_>,
) -> std::io::Result<()> {
    let request = &spec.request;
    let how = match spec.plan.scenario {
        Scenario::SingleStream => "single-stream".to_owned(),
        Scenario::Server { qps, arrival } if spec.find_peak.is_none() => {
            format!("server at {qps} queries a second ({arrival} arrivals)")
        }
        Scenario::Server { arrival, .. } => {
            format!("server, searching the peak rate ({arrival} arrivals)")
        }
        Scenario::Concurrency(n) => format!("concurrency {n}"),
        Scenario::Offline => "offline".to_owned(),
    };
    let minimums = match (request.min_queries, request.min_duration_s) {
        (0, d) => format!("{d} s"),
        (q, 0.0) => format!("{q} queries"),
        (q, d) => format!("{d} s and {q} queries"),
    };
    writeln!(
        streams.human(),
        "load `{}` on {}: {how}, {} worker{}, {} warmup queries each; at least {minimums} ({}){}",
        planned.config.target.name,
        planned.config.data_source.name,
        request.workers,
        if request.workers == 1 { "" } else { "s" },
        request.warmup,
        if request.minimums_from == "LoadGen's defaults" {
            "LoadGen's minimums; --duration or --queries sets others".to_owned()
        } else {
            format!("from {}", request.minimums_from)
        },
        spec.bound_ns
            .map_or_else(String::new, |b| format!("; p99 bound {}", ms(b))),
    )
}

/// Nanoseconds as milliseconds, three decimals.
pub(crate) fn ms(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// The rate asked, where the schedule offered another (bursty arrivals
/// over few queries): ` (50.0 asked)`.
fn asked(step: &LoadStep) -> String {
    match (step.scheduled_qps, step.offered_qps) {
        (Some(scheduled), Some(asked)) if (scheduled / asked - 1.0).abs() > 0.01 => {
            format!(" ({asked:.1} asked)")
        }
        _ => String::new(),
    }
}

/// One step, in one line.
fn step_line(step: &LoadStep) -> String {
    let offered = step.offered().map_or_else(
        || step.scenario.clone(),
        |q| format!("{q:.1} q/s offered{}", asked(step)),
    );
    let p99 = step.p99_ns().map_or_else(|| "-".to_owned(), ms);
    let bound = step
        .bound
        .as_ref()
        .map_or("", |b| if b.held { ", held" } else { ", missed" });
    format!(
        "{offered}: {:.1} q/s served, {} queries, p99 {p99}{bound}{}{}",
        step.served_qps,
        step.queries,
        if step.fell_behind() {
            ", fell behind"
        } else {
            ""
        },
        if step.stopped { ", stopped" } else { "" },
    )
}

/// The tables of a load run: each distribution with its intervals, the
/// bound, the backlog, the ranges under load, the p99's owner, threads,
/// and a search's curve and growth.
pub(crate) fn write_tables(manifest: &LoadManifest, out: &mut dyn Write) -> std::io::Result<()> {
    let load = &manifest.load;
    if let Some(peak) = &load.peak {
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
        if !peak.growth.is_empty() {
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
        }
    }
    let Some(step) = load.detailed_step() else {
        return Ok(());
    };
    writeln!(
        out,
        "\n{}{} queries in {:.2} s: {:.1} served a second{}",
        if load.peak.is_some() {
            "at the peak: "
        } else {
            ""
        },
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
        "{:<10} {:>26} {:>26} {:>26} {:>26} {:>12}",
        "", "p50", "p90", "p99", "p99.9", "max"
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
    if !step.ranges.is_empty() {
        writeln!(out, "\nranges under load, over every worker:")?;
        writeln!(
            out,
            "{:<28} {:>9} {:>14} {:>14} {:>14} {:>14}",
            "range", "count", "p50", "p90", "p99", "max"
        )?;
        for range in &step.ranges {
            writeln!(
                out,
                "{:<28} {:>9} {:>14} {:>14} {:>14} {:>14}{}",
                range.name,
                range.count,
                ms(range.p50_ns),
                ms(range.p90_ns),
                ms(range.p99_ns),
                ms(range.max_ns),
                if range.other_threads > 0 {
                    format!("  (also on {} other threads)", range.other_threads)
                } else {
                    String::new()
                }
            )?;
        }
    }
    if let Some(tail) = &step.tail {
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
    }
    let threads = &step.threads;
    writeln!(
        out,
        "\nthreads: {} worker{}, {} in the process, {} cores{}{}",
        threads.workers,
        if threads.workers == 1 { "" } else { "s" },
        threads
            .in_process
            .map_or_else(|| "?".to_owned(), |n| n.to_string()),
        threads.cores,
        if threads.ranged_elsewhere.is_empty() {
            String::new()
        } else {
            format!("; ranges also on {}", threads.ranged_elsewhere.join(", "))
        },
        if threads.environment.is_empty() {
            String::new()
        } else {
            format!(
                "; {}",
                threads
                    .environment
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        }
    )?;
    Ok(())
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
        "{:<10} {:>26} {:>26} {:>26} {:>26} {:>12}",
        format!("{label} ms"),
        cell("p50"),
        cell("p90"),
        cell("p99"),
        cell("p99.9"),
        format!("{:.3}", distribution.max_ns as f64 / 1e6)
    )
}
