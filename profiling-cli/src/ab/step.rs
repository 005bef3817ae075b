//! `profile step SPEC`: one side of a pair whose other side is another
//! build (`ab --against`), run in a process of its own and paced by the
//! pair's process over its standard input and output.
//!
//! The pair's process starts the side with a [`StepSpec`] (what to run,
//! where to write it, which side it is) and then speaks in lines. The
//! side says where it is (`opened`, `warmed`, `ran`, `stopped`, `failed`)
//! and is told what to do next (`warmup`, `passes N`, `end`, `abort OTHER
//! WHY`); its last line is how it ended ([`SideEnd`] as JSON), or why it
//! was refused. Every line of the protocol starts with [`MARK`], so that
//! what a target prints on its standard output is not taken for one.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use profiling_core::driver::manifest::PairInfo;
use profiling_core::driver::runner::{Next, PairSide, Step};
use profiling_core::driver::session::{self, RunRequest};
use serde::{Deserialize, Serialize};

use profiling_core::driver::session::pair::{share_workload, SideEnd};

/// What every line of the protocol starts with.
pub(crate) const MARK: &str = "\u{1}ab ";

/// What a side runs, and where it writes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct StepSpec {
    /// `base` or `candidate`.
    pub side: String,
    pub target: String,
    pub config: Option<PathBuf>,
    /// The base's target and config, whose records and workload the
    /// candidate runs when its config is another.
    pub workload: Option<(String, Option<PathBuf>)>,
    pub iterations: u32,
    pub warmup: Option<u32>,
    pub seed: Option<u64>,
    /// `memory:` as the config spells it.
    pub memory: Option<String>,
    pub output_dir: Option<PathBuf>,
    pub default_output_dir: Option<PathBuf>,
    pub run_id: String,
    /// Where the side is written, and where it lands with the pair.
    pub staged_in: PathBuf,
    pub run_dir: PathBuf,
    pub force: bool,
    pub command_line: Vec<String>,
    pub pair: PairInfo,
}

/// The last line of a side: how it ended, or that it was refused before
/// anything was written (with the exit code of the refusal).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum StepEnd {
    Ended(SideEnd),
    Refused { message: String, code: u8 },
}

/// `step`: runs the side `spec` (JSON) describes, paced over standard
/// input and output. The exit code is 0 whenever the last line was said.
pub(crate) fn step_command(spec: &str, workspace_root: &Path) -> u8 {
    let stdout = std::io::stdout();
    // `@FILE`: the description is in FILE (one too long for an argument).
    let read = match spec.strip_prefix('@') {
        Some(file) => {
            std::fs::read_to_string(file).map_err(|error| format!("step: {file}: {error}"))
        }
        None => Ok(spec.to_owned()),
    };
    let end = match read.and_then(|spec| {
        serde_json::from_str::<StepSpec>(&spec)
            .map_err(|error| format!("step: not a side's description: {error}"))
    }) {
        Ok(spec) => run_side(&spec, workspace_root, &mut std::io::stdin().lock(), &stdout),
        Err(message) => StepEnd::Refused {
            message,
            code: crate::exit::EXIT_USAGE,
        },
    };
    let line = serde_json::to_string(&end).unwrap_or_default();
    let mut out = stdout.lock();
    let said = writeln!(out, "{MARK}end {line}").and_then(|()| out.flush());
    match (said, end) {
        (Err(_), _) => 1,
        (Ok(()), StepEnd::Refused { code, .. }) => code,
        (Ok(()), StepEnd::Ended(_)) => crate::exit::EXIT_OK,
    }
}

fn run_side(
    spec: &StepSpec,
    workspace_root: &Path,
    commands: &mut dyn BufRead,
    replies: &std::io::Stdout,
) -> StepEnd {
    let refused = |error: session::SessionError| StepEnd::Refused {
        message: error.to_string(),
        code: error.exit_code(),
    };
    let memory = match spec.memory.as_deref().map(str::parse).transpose() {
        Ok(memory) => memory,
        Err(message) => {
            return StepEnd::Refused {
                message: format!("memory: {message}"),
                code: crate::exit::EXIT_USAGE,
            }
        }
    };
    let request = |target: &str, config: Option<&PathBuf>| RunRequest {
        target: Some(target.to_owned()),
        config_path: config.cloned(),
        overrides: profiling_core::driver::config::Overrides {
            iterations: Some(spec.iterations),
            warmup: spec.warmup,
            seed: spec.seed,
            output_dir: spec.output_dir.clone(),
            memory,
            ..Default::default()
        },
        run_id: Some(spec.run_id.clone()),
        force: spec.force,
        workspace_root: workspace_root.to_path_buf(),
        default_output_dir: spec.default_output_dir.clone(),
        command_line: spec.command_line.clone(),
        program_version: env!("CARGO_PKG_VERSION").to_owned(),
        pair: Some(spec.pair.clone()),
        ..Default::default()
    };
    let side_request = request(&spec.target, spec.config.as_ref());
    let mut planned = match session::plan(&side_request) {
        Ok(planned) => planned,
        Err(error) => return refused(error),
    };
    if let Some((target, config)) = &spec.workload {
        match session::plan(&request(target, config.as_ref())) {
            Ok(base) => share_workload(&base, &mut planned),
            Err(error) => return refused(error),
        }
    }
    planned.staged_in = Some(spec.staged_in.clone());
    planned.run_dir = spec.run_dir.clone();
    let side = if spec.side == "base" {
        PairSide::Base
    } else {
        PairSide::Candidate
    };
    let mut pace = |step: Step| -> Next {
        let word = match step {
            Step::Opened => "opened",
            Step::Warmed => "warmed",
            Step::Ran => "ran",
            Step::Stopped => "stopped",
            Step::Failed => "failed",
        };
        let mut out = replies.lock();
        if writeln!(out, "{MARK}{word}")
            .and_then(|()| out.flush())
            .is_err()
        {
            return Next::End;
        }
        drop(out);
        let mut line = String::new();
        match commands.read_line(&mut line) {
            Ok(0) | Err(_) => Next::End,
            Ok(_) => command(line.trim_end()),
        }
    };
    match session::execute_stepped(&planned, &side_request, side, &mut pace) {
        Ok(report) => StepEnd::Ended(SideEnd::of(&report)),
        Err(error) => refused(error),
    }
}

/// What a line from the pair's process asks.
fn command(line: &str) -> Next {
    let mut words = line.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some("warmup"), None, None) => Next::Warmup,
        (Some("passes"), Some(count), None) => count.parse().map_or(Next::End, Next::Passes),
        (Some("abort"), Some(other), Some(why)) => Next::Abort {
            other: if other == "base" {
                "the base"
            } else {
                "the candidate"
            },
            because: if why == "built" {
                "could not be built"
            } else {
                "failed before the paired passes"
            },
        },
        _ => Next::End,
    }
}

#[cfg(test)]
mod tests {
    use super::{command, Next};

    #[test]
    fn the_pair_s_lines_read_as_the_next_step() {
        assert_eq!(command("warmup"), Next::Warmup);
        assert_eq!(command("passes 12"), Next::Passes(12));
        assert_eq!(command("end"), Next::End);
        assert_eq!(command("passes many"), Next::End);
        assert_eq!(
            command("abort candidate built"),
            Next::Abort {
                other: "the candidate",
                because: "could not be built"
            }
        );
        assert_eq!(
            command("abort base warmup"),
            Next::Abort {
                other: "the base",
                because: "failed before the paired passes"
            }
        );
    }
}
