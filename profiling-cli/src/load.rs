//! `profile-cli load`: a target driven as a service is driven (LoadGen's
//! scenarios), its latency from each query's intended send, the bound
//! checked, the peak rate searched, and which range owns the p99.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use profiling_core::device::Device;
use profiling_core::driver::config::Overrides;
use profiling_core::driver::interrupt;
use profiling_core::driver::load::drive::Scenario;
use profiling_core::driver::load::spec::{self, LoadOptions};
use profiling_core::driver::load::summary::LoadStep;
use profiling_core::driver::session::{self, LoadSpec, LoadStatus, RunRequest};

use crate::exit::{EXIT_OK, EXIT_TARGET_FAILED, EXIT_USAGE};
use crate::handoff::{self, Loaded};
use crate::run_dir::RunDirArgs;
use crate::streams::Streams;
use crate::units;

mod tables;

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
    /// The minimum query count. With neither this nor --duration, the quick minimums: 368
    /// queries (what p99's 95 % interval needs) and 30 s, a server's rate permitting; either one
    /// set replaces both.
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
    /// With neither --queries nor --duration, MLPerf LoadGen's minimums for a result to publish
    /// (600 s and 1,024 queries; server 270,336; offline 24,576) instead of the quick ones (also
    /// `load.loadgen_minimums: true`).
    #[arg(long)]
    pub(crate) loadgen_minimums: bool,
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
    pub(crate) handoff: Option<PathBuf>,
}

impl LoadArgs {
    /// The options as the runtime resolves them with the config's `load:`
    /// section.
    fn options(&self) -> LoadOptions {
        LoadOptions {
            scenario: self.scenario.clone(),
            qps: self.qps,
            arrival: self.arrival.clone(),
            concurrency: self.concurrency,
            workers: self.workers,
            warmup: self.warmup,
            queries: self.queries,
            duration: self.duration.clone(),
            p99_bound: self.p99_bound.clone(),
            find_peak: self.find_peak,
            loadgen_minimums: self.loadgen_minimums,
        }
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
    let spec = match spec::resolve(
        &args.options(),
        &section,
        planned.config_path.as_deref(),
        seed,
        &planned.config.capture_range,
    ) {
        Ok(spec) => spec,
        Err(refusal) => return streams.refuse(&refusal.to_string(), EXIT_USAGE),
    };
    if let Err(error) = session::check_run_dir_free(&planned) {
        return streams.fail(&error);
    }
    announce(&planned, &spec, &mut streams)?;
    crate::streams::warn_of_a_debug_build(streams.err)?;
    let wants_page = !args.no_report && planned.config.write_report;
    // A signal ends the step in progress; what was measured is written.
    let ended = interrupt::stop_on_signal(|stop| {
        let human = streams.human();
        let mut on_step = |step: &LoadStep| {
            let _ = writeln!(human, "  {}", step_line(step));
        };
        // The page is drawn with the record, when this build draws pages
        // and no `profile-cli` will (a profiling binary's load).
        #[cfg(feature = "full")]
        let render = |manifest: &session::LoadManifest| {
            crate::report::load_page(manifest, &tables_text(manifest))
        };
        #[cfg(feature = "full")]
        let page = (wants_page && args.handoff.is_none()).then_some((
            crate::report::LOAD_PAGE_FILE,
            &render as &dyn Fn(&session::LoadManifest) -> String,
        ));
        #[cfg(not(feature = "full"))]
        let page = None;
        session::execute_load(&planned, &request, &spec, stop, &mut on_step, page)
    });
    let ended = match ended {
        Ok(ended) => ended,
        Err(error) => return streams.fail(&error),
    };
    let mut loaded = conclude(&ended, wants_page, &mut streams)?;
    loaded.store = planned
        .config
        .write_manifest
        .then(|| handoff::store_of(planned.config.output_dir.as_deref(), root));
    let code = loaded.code;
    if let Some(file) = &args.handoff {
        handoff::write(file, &handoff::Handoff::Load(loaded))?;
        return Ok(code);
    }
    after_load(loaded, &mut streams)
}

/// After a load ran: its tables, how it ended (its exit code), where its
/// record is or why it was not written, and what follows (the page to
/// draw, the `--json` document).
fn conclude(
    ended: &session::LoadEnd,
    wants_page: bool,
    streams: &mut Streams<'_>,
) -> std::io::Result<Loaded> {
    let manifest = &ended.manifest;
    tables::write_tables(manifest, streams.human())?;
    let mut code = match (&ended.outcome, manifest.status) {
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
    match (&ended.manifest_path, &ended.write_error) {
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
    let record = ended.manifest_path.as_deref().map(session::absolute);
    let document = streams.json.then(|| {
        serde_json::json!({
            "manifest_path": record,
            "status": manifest.status,
            "error": manifest.error,
            "load": manifest.load,
        })
    });
    Ok(Loaded {
        code,
        page_to_draw: wants_page && ended.page_path.is_none() && ended.page_error.is_none(),
        record,
        page_path: ended.page_path.as_deref().map(session::absolute),
        page_error: ended.page_error.clone(),
        document,
        store: None,
    })
}

/// What follows a load that ran: its page, drawn here when the process
/// that ran the load did not (a profiling binary's), its path or why it
/// was not written, and the `--json` document; as the load's own process
/// or the `profile-cli` that ran a profiling binary does them.
pub(crate) fn after_load(loaded: Loaded, streams: &mut Streams<'_>) -> anyhow::Result<u8> {
    #[cfg(feature = "full")]
    let loaded = draw_page(loaded);
    // Into the history store, once the record is in place.
    #[cfg(feature = "full")]
    if let (Some(store), Some(record)) = (&loaded.store, &loaded.record) {
        let dir = record.parent().unwrap_or(Path::new("."));
        crate::recording::record_text(store, dir, "load", streams.err)?;
    }
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

/// The tables of `manifest` as [`tables::write_tables`] prints them, for the page.
#[cfg(feature = "full")]
fn tables_text(manifest: &session::LoadManifest) -> String {
    let mut tables = Vec::new();
    let _ = tables::write_tables(manifest, &mut tables);
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
        } else if request.minimums_from == profiling_core::driver::load::spec::QUICK_DEFAULTS {
            "the quick defaults: enough for p99's interval, in about 30 s where the rate allows; --loadgen-minimums for LoadGen's, --duration or --queries for others".to_owned()
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
