//! What `profile-cli` does itself for a command that a workspace's binary
//! runs: the refusals of what it will do after the binary (before building
//! it), what the binary handed back (the comparison, the pages, the
//! baseline saved, Nsight's capture), and the runs of `compare`,
//! `baselines` and `report` once the binary said where they are.

use std::ffi::OsString;
use std::path::Path;

use profiling_core::driver::session;

use crate::exit::EXIT_USAGE;
use crate::handoff::Handoff;
use crate::streams::{ClosedQuietly, Streams};
use crate::{ab, analyze, baselines, compare, load, report, run, sweep, Cli, Command};

/// After a workspace's profiling binary ran `command` (`run`, `sweep`,
/// `ab` or `load`): what it left to do (the comparison, the pages, the
/// baseline saved, Nsight's capture and analysis), on this process's
/// streams; the exit code.
pub(super) fn finish_delegated(command: &Command, handoff: Handoff) -> u8 {
    let mut out = ClosedQuietly::new(std::io::stdout().lock());
    let mut err = ClosedQuietly::new(std::io::stderr().lock());
    let result = match (command, handoff) {
        (Command::Run(run_args), Handoff::Run(ran)) => {
            let json = run_args.json;
            run::after_run(
                ran,
                run_args,
                &mut Streams {
                    out: &mut out,
                    err: &mut err,
                    json,
                },
            )
        }
        (Command::Run(run_args), Handoff::Nsys { command }) => {
            analyze::run_under_nsys(&command, run_args.json, &mut out, &mut err)
        }
        (Command::Ab(ab_args), Handoff::Paired(pairs)) => {
            ab::after_pair(pairs, ab_args, &mut out, &mut err)
        }
        (Command::Sweep(sweep_args), Handoff::Sweep(swept)) => sweep::after_sweep(
            swept,
            crate::SWEEP_PAGES,
            &mut Streams {
                out: &mut out,
                err: &mut err,
                json: sweep_args.json,
            },
        ),
        (Command::Load(load_args), Handoff::Load(loaded)) => load::after_load(
            loaded,
            &mut Streams {
                out: &mut out,
                err: &mut err,
                json: load_args.json,
            },
        ),
        _ => Err(anyhow::anyhow!(
            "the profiling binary left an outcome of another command"
        )),
    };
    crate::exit_code(result, &mut err)
}

/// Before a workspace's profiling binary runs `command`: a refusal of what
/// this process will do after it (options of the comparison out of range,
/// gates that do not parse), said as `run` says it; `None` when the binary
/// may run.
pub(super) fn refuse_before_delegating(command: &Command) -> Option<u8> {
    let run_args = match command {
        Command::Run(run_args) => run_args,
        // The gates are read here: the workspace's binary cannot.
        Command::Ab(ab_args) => {
            let error = ab_args
                .accept
                .as_deref()
                .map(profiling_compare::gates::parse_gates)?
                .err()?;
            eprintln!("error: --accept: {error}");
            return Some(EXIT_USAGE);
        }
        _ => return None,
    };
    if run_args.baseline.is_none() && run_args.save_baseline.is_none() {
        return None;
    }
    let message = compare::check_options(&run_args.decide).err()?;
    let mut out = ClosedQuietly::new(std::io::stdout().lock());
    let mut err = ClosedQuietly::new(std::io::stderr().lock());
    let mut streams = Streams {
        out: &mut out,
        err: &mut err,
        json: run_args.json,
    };
    Some(streams.refuse(&message, EXIT_USAGE).unwrap_or(EXIT_USAGE))
}

/// `compare`, `report` and `baselines` of `cli` (`args` its command line)
/// for a workspace whose profiling binary said where its profiles' runs
/// are.
pub(super) fn read_delegated(
    cli: Cli,
    args: &[OsString],
    workspace_root: &Path,
    profiles: &[session::ProfileRuns],
) -> u8 {
    let mut out = ClosedQuietly::new(std::io::stdout().lock());
    let mut err = ClosedQuietly::new(std::io::stderr().lock());
    let result = match cli.command {
        Command::Compare(compare_args) => {
            compare::compare_command(compare_args, profiles, &mut out, &mut err)
        }
        Command::Baselines(baselines_args) => {
            baselines::baselines_command(baselines_args, profiles, &mut out, &mut err)
        }
        Command::Report(report_args) => {
            report::report_command(report_args, profiles, &mut out, &mut err)
        }
        command => {
            let cli = Cli { command, ..cli };
            return crate::main_in(cli, args, workspace_root, None, &mut out, &mut err);
        }
    };
    crate::exit_code(result, &mut err)
}
