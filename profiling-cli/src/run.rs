//! `profile-cli run`: plans a run from its arguments and config, runs it,
//! says how it went, and does what follows it (the comparison with a
//! baseline, the page, the baseline saved, the `--json` document): here,
//! or in the `profile-cli` that ran a profiling binary (`handoff`).

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use profiling_core::device::Device;
use profiling_core::driver::config::{GpuTiming, MemoryMode, Overrides, RecordReading};
use profiling_core::driver::nsys::{NsysArgs, NsysCapture, NsysCommand};
use profiling_core::driver::registry;
use profiling_core::driver::session::{self, ConfigOrigin, RunRequest, SessionError};

use crate::exit::{EXIT_OK, EXIT_TARGET_FAILED, EXIT_USAGE};
use crate::run_dir::RunDirArgs;
use crate::streams::{warn_of_a_debug_build, Streams};
use crate::{cache, decide, handoff, summary};
#[cfg(feature = "full")]
use crate::{compare, report};

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The target to run (`profile-cli list` shows them); defaults to the config's target.name.
    pub(crate) name: Option<String>,
    /// The YAML config of the run.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// The data source: a registered name (`list --sources`); its parameters come from the config.
    #[arg(long, value_name = "NAME")]
    pub(crate) data_source: Option<String>,
    /// The images in DIR are the records (the images source's `directory`, in place of the
    /// config's `directory` or `paths`); the source is images unless --data-source names another.
    #[arg(long, value_name = "DIR")]
    pub(crate) directory: Option<PathBuf>,
    /// cpu, cuda (= cuda:0) or cuda:N.
    #[arg(long, value_name = "DEVICE", value_parser = parse_device)]
    pub(crate) device: Option<Device>,
    /// Passes run before the capture range opens.
    #[arg(long, value_name = "N", value_parser = crate::units::parse_count::<u32>)]
    pub(crate) warmup: Option<u32>,
    /// Measured passes inside the capture range (at least 1).
    #[arg(long, value_name = "N", value_parser = crate::units::parse_nonzero_count::<u32>)]
    pub(crate) iterations: Option<u32>,
    /// Size the measured passes by time instead (criterion's rule): as many as fit in DURATION
    /// (`5s`, `500ms`) at the warmup passes' median pace; needs a warmup pass. The manifest's
    /// workload.measurement_time says how they were sized.
    #[arg(long, value_name = "DURATION", conflicts_with = "iterations", value_parser = parse_measurement_time)]
    pub(crate) measurement_time: Option<u64>,
    /// Records per target call (workload.batch_size, at least 1): above 1, the records are grouped
    /// in order into batches, each prepared by the target's `prepare_batch` and run in one call.
    #[arg(long, value_name = "N", value_parser = crate::units::parse_count::<u32>)]
    pub(crate) batch_size: Option<u32>,
    /// The name of the NVTX range Nsight captures.
    #[arg(long, value_name = "NAME")]
    pub(crate) capture_range: Option<String>,
    /// eager (read records once) or lazy (read them in every pass; needs target.profile_prepare).
    #[arg(long, value_name = "MODE", value_parser = parse_record_loading)]
    pub(crate) record_loading: Option<RecordReading>,
    /// Seeds every random generator the run uses.
    #[arg(long, value_name = "N")]
    pub(crate) seed: Option<u64>,
    /// GPU time per range from CUDA events at range, call and pass boundaries: auto (on for cuda
    /// runs of a build with the tch feature), on (refused where it cannot be) or off.
    #[arg(long, value_name = "MODE", value_parser = parse_gpu_timing)]
    pub(crate) gpu_timing: Option<GpuTiming>,
    /// Allocations, bytes and peak per pass, call and range (`--memory` alone is `on`; `off`
    /// overrides a config's `memory: on`).
    #[arg(long, value_name = "MODE", num_args = 0..=1, default_missing_value = "on", value_parser = parse_memory)]
    pub(crate) memory: Option<MemoryMode>,
    /// Read decoded images from the image cache where their files are unchanged, and store the
    /// ones decoded (images source; as `data_source.cache: true`). `profile-cli cache clean`
    /// empties it.
    #[arg(long, conflicts_with = "no_cache")]
    pub(crate) cache: bool,
    /// Decode every image, whatever the config's `data_source.cache` says.
    #[arg(long)]
    pub(crate) no_cache: bool,
    #[command(flatten)]
    pub(crate) run_dir: RunDirArgs,
    /// Print the nsys command that captures this run, and run nothing.
    #[arg(long)]
    pub(crate) print_nsys_command: bool,
    /// Replace an earlier run with the same --run-id, or the baseline --save-baseline names (by
    /// default both are refused).
    #[arg(long)]
    pub(crate) force: bool,
    /// Print one JSON document on stdout (manifest path, status, timings); human output goes to stderr.
    #[arg(long)]
    pub(crate) json: bool,
    /// Run under Nsight Systems (the command --print-nsys-command prints), then analyze its
    /// report: per range, host and GPU time and the time blocked in OS calls. Needs nsys on PATH
    /// (scripts/setup-nsys); without it, exit 2 with the command.
    #[arg(long, conflicts_with = "print_nsys_command")]
    pub(crate) nsys: bool,
    /// With --nsys or --print-nsys-command: also sample the CPU and trace context switches (the
    /// top functions per range). Off by default: Nsight Systems 2022.4 can hang at the end of
    /// such a capture on a busy machine.
    #[arg(long)]
    pub(crate) nsys_sample: bool,
    /// With --nsys or --print-nsys-command: an option of `nsys profile` to add to the capture
    /// (repeatable; one word each, `--nsys-arg=--cuda-graph-trace=node`), after the config's
    /// `nsys.args`. `--trace` adds to the capture's APIs and `-e` to its variables; options that
    /// would break the capture (output, capture range, delay, duration) are refused, saying why.
    #[arg(long = "nsys-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub(crate) nsys_args: Vec<String>,
    /// Write no report.html beside the manifest (also `write_report: false` in the config).
    #[arg(long)]
    pub(crate) no_report: bool,
    /// Once the run completes, save it as the profile's baseline NAME (a copy beside runs/, in
    /// baselines/NAME/), for `--baseline NAME` and `compare --baseline NAME` later.
    #[arg(long, value_name = "NAME")]
    pub(crate) save_baseline: Option<String>,
    /// Once the run completes, compare it with the profile's baseline NAME and print the
    /// comparison (as `profile-cli compare` does).
    #[arg(long, value_name = "NAME")]
    pub(crate) baseline: Option<String>,
    #[command(flatten)]
    pub(crate) decide: decide::DecideArgs,
    /// Where a profiling binary leaves what is left to do after the run (the comparison with
    /// the baseline, the page, the baseline saved), for the `profile-cli` that ran it.
    #[arg(long = "handoff", alias = "outcome", value_name = "FILE", hide = true)]
    pub(crate) handoff: Option<PathBuf>,
    /// Does what is left after a run that another build of profile-cli ran with `--handoff FILE`
    /// (the first `scripts/profile`'s build, which has no history store): the record in the
    /// store, the comparison, the page, the baseline saved, the `--json` document.
    #[arg(long, value_name = "FILE", hide = true, conflicts_with = "handoff")]
    pub(crate) finish_handoff: Option<PathBuf>,
}

fn parse_measurement_time(text: &str) -> Result<u64, String> {
    profiling_core::units::parse_duration(text).map(profiling_core::units::nanos)
}

pub(crate) fn parse_device(text: &str) -> Result<Device, String> {
    text.parse()
        .map_err(|e: profiling_core::device::ParseDeviceError| e.to_string())
}

fn parse_record_loading(text: &str) -> Result<RecordReading, String> {
    text.parse()
}

fn parse_gpu_timing(text: &str) -> Result<GpuTiming, String> {
    text.parse()
}

pub(crate) fn parse_memory(text: &str) -> Result<MemoryMode, String> {
    text.parse()
}

/// Why `run` refuses `name`, when it is a draft's target.
fn draft_refusal(name: &str) -> Option<String> {
    let draft = registry::drafts().into_iter().find(|d| d.target == name)?;
    Some(format!(
        "`{name}` is a draft, not compiled ({path}/DRAFT): {}; fix {path}/target.rs, then: scripts/profile check {name}",
        draft.summary(),
        path = draft.path()
    ))
}

/// What `run --baseline NAME` and `run --save-baseline NAME` check before
/// the run starts, so that nothing runs for a request that is refused.
fn check_baselines(args: &RunArgs, planned: &session::Planned) -> Result<(), String> {
    let runs_dir = planned.run_dir.parent().unwrap_or(Path::new("."));
    let profile = &planned.config.profile_name;
    #[cfg(feature = "full")]
    if args.handoff.is_none() {
        compare::check_options(&args.decide)?;
        return crate::baselines::check_run_baselines(
            runs_dir,
            profile,
            args.baseline.as_deref(),
            args.save_baseline.as_deref(),
            args.force,
        )
        .map_err(|error| error.to_string());
    }
    #[cfg(not(feature = "full"))]
    if args.handoff.is_none() && args.baseline.is_some() {
        return Err("comparing with a baseline is profile-cli's, not this profiling binary's: run it through `profile-cli run ... --baseline NAME`".to_owned());
    }
    // The `profile-cli` that reads the outcome compares; here, the files.
    let dir = profiling_core::driver::baselines::baselines_dir_of_runs(runs_dir);
    if let Some(name) = &args.baseline {
        profiling_core::driver::baselines::check_baseline_exists(&dir, profile, name)
            .map_err(|error| error.to_string())?;
    }
    if let Some(name) = &args.save_baseline {
        profiling_core::driver::baselines::check_baseline_free(&dir, profile, name, args.force)
            .map_err(|error| error.to_string())?;
    }
    Ok(())
}

/// What follows a run that measured something: the comparison with the
/// baseline, the page, the baseline saved and the `--json` document, as
/// the run's own process or the `profile-cli` that ran a profiling binary
/// does them.
#[cfg(feature = "full")]
pub(crate) fn after_run(
    ran: handoff::Ran,
    args: &RunArgs,
    streams: &mut Streams<'_>,
) -> anyhow::Result<u8> {
    let mut code = ran.code;
    // Into the history store first, once the run is in place: a failure
    // there is a warning, and the run directory stays.
    if let (Some(store), true, true) = (&ran.store, ran.manifest_written, ran.measured) {
        crate::recording::record_text(store, &ran.run_dir, "run", streams.err)?;
    }
    // The baseline, compared with and saved, once the run is in place.
    let mut compared = None;
    if let (Some(name), true, true) = (&args.baseline, ran.manifest_written, ran.measured) {
        match compare::compare_with_baseline(&ran.run_dir, name, &args.decide) {
            Ok((found, options)) => {
                writeln!(streams.human(), "\ncompared with baseline `{name}`:")?;
                // Colour only for a table on the terminal's stdout.
                let format = if streams.json {
                    compare::Format::Table { colored: false }
                } else {
                    compare::table_format(&args.decide)
                };
                compare::write_comparisons(
                    std::slice::from_ref(&found),
                    &options,
                    format,
                    streams.human(),
                )?;
                if code == EXIT_OK {
                    code = compare::regression_code(
                        std::slice::from_ref(&found),
                        &options,
                        args.decide.fail_on_regression,
                    );
                }
                compared = Some((found, options));
            }
            Err(message) => {
                writeln!(
                    streams.err,
                    "error: not compared with baseline `{name}`: {message}"
                )?;
                if code == EXIT_OK {
                    code = EXIT_USAGE;
                }
            }
        }
    }
    // The page, beside the manifest of a run that measured something.
    let mut page_path = None;
    if ran.page && ran.measured {
        match report::write_run_page(&ran.run_dir, compared.as_ref()) {
            Ok(path) => {
                writeln!(streams.human(), "report: {}", path.display())?;
                page_path = Some(path);
            }
            Err(message) => {
                writeln!(streams.err, "error: report.html not written: {message}")?;
                if code == EXIT_OK {
                    code = EXIT_TARGET_FAILED;
                }
            }
        }
    }
    let saved = save_baseline(&ran, args, streams, &mut code)?;
    if let Some(mut document) = ran.document {
        if let Some((found, options)) = &compared {
            document["comparison"] = compare::json_document(std::slice::from_ref(found), options);
        }
        if let Some(saved) = saved {
            document["baseline_saved"] = serde_json::json!(saved);
        }
        document["report_path"] = serde_json::json!(page_path);
        writeln!(streams.out, "{document}")?;
    }
    Ok(code)
}

/// A profiling binary run by itself: no comparison and no page (those are
/// `profile-cli`'s, on the files the run wrote), the baseline saved.
#[cfg(not(feature = "full"))]
pub(crate) fn after_run(
    ran: handoff::Ran,
    args: &RunArgs,
    streams: &mut Streams<'_>,
) -> anyhow::Result<u8> {
    let mut code = ran.code;
    if ran.page && ran.measured {
        writeln!(
            streams.human(),
            "report: `profile-cli report {}` writes the page",
            ran.run_dir.display()
        )?;
    }
    let saved = save_baseline(&ran, args, streams, &mut code)?;
    if let Some(mut document) = ran.document {
        if let Some(saved) = saved {
            document["baseline_saved"] = serde_json::json!(saved);
        }
        document["report_path"] = serde_json::Value::Null;
        writeln!(streams.out, "{document}")?;
    }
    Ok(code)
}

/// `--save-baseline NAME` once the run completed: where it was saved.
fn save_baseline(
    ran: &handoff::Ran,
    args: &RunArgs,
    streams: &mut Streams<'_>,
    code: &mut u8,
) -> anyhow::Result<Option<PathBuf>> {
    let (Some(name), true) = (&args.save_baseline, ran.manifest_written) else {
        return Ok(None);
    };
    if !ran.completed {
        writeln!(
            streams.err,
            "baseline `{name}` not saved: the run did not complete"
        )?;
        return Ok(None);
    }
    match profiling_core::driver::baselines::save_baseline(&ran.run_dir, name, args.force) {
        Ok(dir) => {
            writeln!(
                streams.human(),
                "baseline `{name}` saved: {}",
                dir.display()
            )?;
            Ok(Some(dir))
        }
        Err(error) => {
            writeln!(streams.err, "error: baseline `{name}` not saved: {error}")?;
            if *code == EXIT_OK {
                *code = EXIT_TARGET_FAILED;
            }
            Ok(None)
        }
    }
}

/// The config a target registered with one (`#[profile_target(config =
/// "...")]`) runs on when `run` names it without `--config`.
struct OwnConfig {
    path: PathBuf,
    /// The path as messages show it.
    display: String,
    setup: Option<&'static str>,
    note: String,
}

/// [`OwnConfig`] for `request`, when it names a target that has one and no
/// config; an error when that config is not there.
fn own_config(request: &RunRequest, root: &Path) -> Result<Option<OwnConfig>, String> {
    let (None, Some(name)) = (&request.config_path, &request.target) else {
        return Ok(None);
    };
    let profiling_core::driver::registry::Lookup::Found(entry) =
        profiling_core::driver::registry::lookup(name)
    else {
        return Ok(None);
    };
    let Some(config) = entry.config else {
        return Ok(None);
    };
    let path = PathBuf::from(config);
    let display = path
        .strip_prefix(root)
        .unwrap_or(&path)
        .display()
        .to_string();
    let setup = entry
        .setup
        .map(|setup| format!(" ({setup} installs it)"))
        .unwrap_or_default();
    if !path.is_file() {
        return Err(format!(
            "`{name}` needs data of its own and runs on its config {display}, which is not there: give one with --config FILE"
        ));
    }
    Ok(Some(OwnConfig {
        note: format!(
            "`{name}` needs data of its own: it runs on its config {display}{setup}; --config FILE gives another"
        ),
        path,
        display,
        setup: entry.setup,
    }))
}

/// A refusal or failure of a run; on the config of a target's own
/// ([`OwnConfig`]), followed by what installs the data it reads.
fn fail_on_own_config(
    streams: &mut Streams<'_>,
    error: &SessionError,
    own: Option<&OwnConfig>,
) -> anyhow::Result<u8> {
    let code = streams.fail(error)?;
    if let Some((display, Some(setup))) = own.map(|own| (&own.display, own.setup)) {
        crate::streams::note(
            streams.err,
            format_args!("the data {display} reads is installed by {setup}"),
        )?;
    }
    Ok(code)
}

/// The session's request for `args`.
fn request_of(args: &RunArgs, argv: &[OsString], root: &Path) -> RunRequest {
    RunRequest {
        target: args.name.clone(),
        config_path: args.config.clone(),
        overrides: Overrides {
            target: None,
            data_source: args.data_source.clone(),
            device: args.device,
            warmup: args.warmup,
            iterations: args.iterations,
            measurement_time_ns: args.measurement_time,
            batch_size: args.batch_size,
            capture_range: args.capture_range.clone(),
            record_loading: args.record_loading,
            seed: args.seed,
            output_dir: args.run_dir.output_dir.clone(),
            gpu_timing: args.gpu_timing,
            memory: args.memory,
            cache: match (args.cache, args.no_cache) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            directory: args.directory.clone(),
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

pub(crate) fn run(
    args: RunArgs,
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
    if let Some(file) = &args.finish_handoff {
        #[cfg(feature = "full")]
        return finish_handoff(file, &args, &mut streams);
        #[cfg(not(feature = "full"))]
        return streams.refuse(
            &format!(
                "--finish-handoff {}: the whole profile-cli does what is left after a run, not this build",
                file.display()
            ),
            EXIT_USAGE,
        );
    }
    let mut request = request_of(&args, argv, root);
    // A target that needs data of its own runs on its config.
    let own_config = match own_config(&request, root) {
        Ok(found) => found,
        Err(message) => return streams.refuse(&message, EXIT_USAGE),
    };
    if let Some(own) = &own_config {
        writeln!(streams.human(), "note: {}", own.note)?;
        request.config_path = Some(own.path.clone());
    }
    let planned = match session::plan(&request) {
        Ok(planned) => planned,
        Err(SessionError::UnknownTarget { name, .. }) if draft_refusal(&name).is_some() => {
            let message = draft_refusal(&name).unwrap_or_default();
            return streams.refuse(&message, EXIT_USAGE);
        }
        Err(error) => return fail_on_own_config(&mut streams, &error, own_config.as_ref()),
    };
    if args.print_nsys_command {
        return print_nsys_command(&args, &planned, &mut streams);
    }
    if args.nsys {
        return under_nsys(&args, &planned, &mut streams);
    }
    if !args.nsys_args.is_empty() {
        return streams.refuse(
            "--nsys-arg adds options to the Nsight Systems capture: give it with --nsys or --print-nsys-command",
            EXIT_USAGE,
        );
    }
    // A baseline to compare with or to save is checked before anything runs.
    if args.baseline.is_some() || args.save_baseline.is_some() {
        if let Err(message) = check_baselines(&args, &planned) {
            return streams.refuse(&message, EXIT_USAGE);
        }
    }

    // Panics in target code become one error line; see profiling_core::driver::panics.
    profiling_core::driver::panics::install_hook();
    undo_the_umask_of_nsys();
    announce(&planned, root, &mut streams)?;
    let progress = std::io::stderr().is_terminal().then(summary::progress_bar);
    let ended = match session::execute_with_progress(&planned, &request, progress) {
        Ok(ended) => ended,
        Err(error) => return fail_on_own_config(&mut streams, &error, own_config.as_ref()),
    };
    let config = &planned.config;
    let manifest = &ended.manifest;
    let (code, error) = tell_how_it_ended(&ended, &mut streams)?;
    let manifest_path = ended.manifest_path.as_deref().map(session::absolute);
    let mut document = streams
        .json
        .then(|| summary::json_document(manifest, manifest_path.as_deref(), error.as_deref()));
    if let (Some(document), Some(summary)) = (&mut document, &ended.image_cache) {
        document["image_cache"] = cache::json(summary);
    }
    let ran = handoff::Ran {
        code,
        run_dir: planned.run_dir.clone(),
        manifest_written: ended.manifest_path.is_some(),
        measured: manifest.status != profiling_core::driver::manifest::Status::Failed,
        completed: manifest.status == profiling_core::driver::manifest::Status::Completed,
        // Not after a write that failed: what did not fit is said above.
        page: config.write_report
            && !args.no_report
            && ended.manifest_path.is_some()
            && ended.write_error.is_none(),
        document,
        store: planned
            .config
            .write_manifest
            .then(|| handoff::store_of(planned.config.output_dir.as_deref(), root)),
    };
    if let Some(file) = &args.handoff {
        handoff::write(file, &handoff::Handoff::Run(ran))?;
        return Ok(code);
    }
    after_run(ran, &args, &mut streams)
}

/// `run --finish-handoff FILE`: what is left after the run another build
/// ran with `--handoff FILE`, as the `profile-cli` that delegated to it
/// does; the file is removed once read.
#[cfg(feature = "full")]
fn finish_handoff(file: &Path, args: &RunArgs, streams: &mut Streams<'_>) -> anyhow::Result<u8> {
    let handoff = match handoff::read(file) {
        Ok(Some(handoff)) => handoff,
        Ok(None) => {
            return streams.refuse(
                &format!(
                    "--finish-handoff {}: no run left anything there (it ended before its end, or the file was already used)",
                    file.display()
                ),
                EXIT_USAGE,
            )
        }
        Err(error) => return streams.refuse(&format!("--finish-handoff: {error}"), EXIT_USAGE),
    };
    let _ = std::fs::remove_file(file);
    match handoff {
        handoff::Handoff::Run(ran) => after_run(ran, args, streams),
        handoff::Handoff::Nsys { command } => {
            crate::analyze::run_under_nsys(&command, args.json, streams.out, streams.err)
        }
        _ => streams.refuse(
            &format!(
                "--finish-handoff {}: the file holds what another command left, not a run",
                file.display()
            ),
            EXIT_USAGE,
        ),
    }
}

/// Nsight Systems starts the program it profiles with a umask of 0, which
/// would make the run directory and its files writable by everyone: under
/// nsys (`NSYS_PROFILING_SESSION_ID` set), a umask of 0 becomes the usual
/// 022. Any other umask is the user's and stays.
fn undo_the_umask_of_nsys() {
    if std::env::var_os("NSYS_PROFILING_SESSION_ID").is_none() {
        return;
    }
    // SAFETY: umask(2) only swaps the process's file mode creation mask.
    let before = unsafe { libc::umask(0o022) };
    if before != 0 {
        // SAFETY: as above; puts the user's mask back.
        unsafe { libc::umask(before) };
    }
}

/// The user's options of `nsys profile`: the config's `nsys.args`, then
/// `--nsys-arg`s; an error names the option or key and why it cannot be.
fn nsys_args_of(args: &RunArgs, planned: &session::Planned) -> Result<NsysArgs, String> {
    let from_config = planned.sections.nsys_args.len();
    let mut words = planned.sections.nsys_args.clone();
    words.extend(args.nsys_args.iter().cloned());
    NsysArgs::parse(&words).map_err(|error| {
        if error.index < from_config {
            let file = planned
                .config_path
                .as_deref()
                .map_or_else(|| "the config".to_owned(), |p| p.display().to_string());
            format!("{file}: nsys.args[{}]: {error}", error.index)
        } else {
            format!("--nsys-arg {error}")
        }
    })
}

/// The nsys command that captures the planned run.
fn nsys_command_of(
    args: &RunArgs,
    planned: &session::Planned,
    nsys_args: &NsysArgs,
) -> NsysCommand {
    let program = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("profile-cli"));
    let run_dir = session::absolute(&planned.run_dir);
    let command = session::explicit_command(planned, &program);
    // A profiling binary of a workspace of one's own does not analyze: the
    // installed profile-cli does.
    let analyzer = if cfg!(feature = "full") {
        program.to_string_lossy().into_owned()
    } else {
        "profile-cli".to_owned()
    };
    let mut nsys = profiling_core::driver::nsys::nsys_command(
        &NsysCapture {
            run_dir: &run_dir,
            capture_range: &planned.config.capture_range,
            cuda: planned.config.device.is_cuda(),
            sample: args.nsys_sample,
            args: nsys_args,
        },
        &command,
        &analyzer,
    );
    nsys.run_writes_manifest = planned.config.write_manifest;
    nsys
}

/// `run --print-nsys-command`: the command, and nothing run.
fn print_nsys_command(
    args: &RunArgs,
    planned: &session::Planned,
    streams: &mut Streams<'_>,
) -> anyhow::Result<u8> {
    let nsys_args = match nsys_args_of(args, planned) {
        Ok(nsys_args) => nsys_args,
        Err(message) => return streams.refuse(&message, EXIT_USAGE),
    };
    writeln!(
        streams.out,
        "{}",
        nsys_command_of(args, planned, &nsys_args).render()
    )?;
    if let Err(error) = session::check_run_dir_free(planned) {
        writeln!(
            streams.err,
            "warning: {error}; the command above fails until then"
        )?;
    }
    Ok(EXIT_OK)
}

/// `run --nsys`: the run under Nsight Systems, then its report analyzed.
/// Nsight's capture and its analysis are `profile-cli`'s: a profiling
/// binary says what to run under nsys.
fn under_nsys(
    args: &RunArgs,
    planned: &session::Planned,
    streams: &mut Streams<'_>,
) -> anyhow::Result<u8> {
    let nsys_args = match nsys_args_of(args, planned) {
        Ok(nsys_args) => nsys_args,
        Err(message) => return streams.refuse(&message, EXIT_USAGE),
    };
    if let Err(error) = session::check_run_dir_free(planned) {
        return streams.fail(&error);
    }
    let command = nsys_command_of(args, planned, &nsys_args);
    if let Some(file) = &args.handoff {
        handoff::write(file, &handoff::Handoff::Nsys { command })?;
        return Ok(EXIT_OK);
    }
    #[cfg(feature = "full")]
    return crate::analyze::run_under_nsys(&command, args.json, streams.out, streams.err);
    #[cfg(not(feature = "full"))]
    return streams.refuse(
        "run --nsys analyzes Nsight's report, which this profiling binary does not: run it through `profile-cli run ... --nsys`",
        EXIT_USAGE,
    );
}

/// The line that says what runs, on what, with which config.
fn announce(
    planned: &session::Planned,
    root: &Path,
    streams: &mut Streams<'_>,
) -> std::io::Result<()> {
    let config = &planned.config;
    let origin = match planned.config_origin {
        ConfigOrigin::Explicit | ConfigOrigin::BesideTarget => planned
            .config_path
            .as_ref()
            .map_or_else(String::new, |p| format!("config {}", p.display())),
        ConfigOrigin::Defaults => "built-in defaults".to_owned(),
    };
    writeln!(
        streams.human(),
        "running `{}` ({}) on {} with {}: device {}, warmup {}, iterations {}{}, {} loading",
        config.target.name,
        planned.entry.display_file(root),
        config.data_source.name,
        origin,
        config.device,
        config.warmup,
        match config.measurement_time_ns {
            Some(nanos) => format!(
                "sized by time ({})",
                profiling_core::units::format_ns(nanos)
            ),
            None => config.iterations.to_string(),
        },
        match config.batch_size {
            1 => String::new(),
            size => format!(", batches of {size} (last batch: {})", config.last_batch),
        },
        config.record_loading,
    )
}

/// The terminal summary of a run that ran, and how it ended: the exit code
/// and the error the `--json` document names.
fn tell_how_it_ended(
    ended: &session::RunEnd,
    streams: &mut Streams<'_>,
) -> anyhow::Result<(u8, Option<String>)> {
    let manifest = &ended.manifest;
    for note in &ended.recovered {
        writeln!(streams.err, "note: {note}")?;
    }
    warn_of_a_debug_build(streams.err)?;
    summary::write_summary(manifest, streams.human())?;
    if let Some(summary) = &ended.image_cache {
        writeln!(streams.human(), "{}", cache::summary_line(summary))?;
        if let Some(warning) = cache::failure_line(summary) {
            writeln!(streams.err, "{warning}")?;
        }
    }
    let (mut code, mut error) = match &ended.outcome {
        Ok(outcome) => match outcome.interrupted {
            Some(signal) => {
                writeln!(
                    streams.err,
                    "interrupted by {} after {} of {} measured passes: the manifest keeps what completed",
                    profiling_core::driver::manifest::signal_name(signal),
                    outcome.completed_iterations,
                    manifest.workload.iterations
                )?;
                (profiling_core::driver::interrupt::exit_code(signal), None)
            }
            None => (EXIT_OK, None),
        },
        Err(error) => {
            writeln!(streams.err, "error: {error}")?;
            (error.exit_code(), Some(error.to_string()))
        }
    };
    let manifest_path = ended.manifest_path.as_deref().map(session::absolute);
    match (&manifest_path, &ended.write_error) {
        (Some(path), _) => writeln!(streams.human(), "manifest: {}", path.display())?,
        (None, Some(_)) => writeln!(streams.human(), "manifest: not written (below)")?,
        (None, None) => writeln!(
            streams.human(),
            "manifest: not written (write_manifest: false)"
        )?,
    }
    if let Some(failure) = &ended.write_error {
        writeln!(streams.err, "error: {failure}")?;
        if code == EXIT_OK {
            code = EXIT_TARGET_FAILED;
        }
        error.get_or_insert_with(|| failure.to_string());
    }
    Ok((code, error))
}
