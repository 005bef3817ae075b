//! The pair's process when its sides are two builds (`ab --against`):
//! each side a process of its own (`step`), started with its
//! [`StepSpec`], and paced in lock-step over pipes: both open (their
//! records read, their targets built), the base warms up, then the
//! candidate, then the blocks run one at a time, each side waiting while
//! the other runs, in the seeded order of a pair run in one process.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use profiling_core::driver::canary;
use profiling_core::driver::interrupt;
use profiling_core::driver::runner::PairSide;
use profiling_core::driver::session::{Planned, RunRequest};

use super::step::{StepEnd, StepSpec, MARK};
use profiling_core::driver::session::pair::{SideEnd, SideFailure, SidesRan};

/// The two binaries of a pair run as two processes, and what they are
/// called when said.
pub(crate) struct Binaries {
    pub base: PathBuf,
    pub candidate: PathBuf,
    pub base_label: String,
    pub candidate_label: String,
    /// What was built for them (worktrees, a lock), held until the pair
    /// is done: a binary finds its targets' files in its worktree.
    #[allow(dead_code)]
    pub held: Option<Box<dyn std::any::Any>>,
}

impl Binaries {
    /// Binaries given (`--base-binary`): the candidate this program
    /// unless one is given too.
    pub(crate) fn given(
        base: PathBuf,
        candidate: Option<PathBuf>,
        labels: (Option<String>, Option<String>),
    ) -> anyhow::Result<Binaries> {
        let candidate = match candidate {
            Some(candidate) => candidate,
            None => std::env::current_exe()?,
        };
        Ok(Binaries {
            base_label: labels.0.unwrap_or_else(|| base.display().to_string()),
            candidate_label: labels.1.unwrap_or_else(|| "the working tree".to_owned()),
            base,
            candidate,
            held: None,
        })
    }

    pub(crate) fn base_named(&self) -> String {
        self.base_label.clone()
    }

    pub(crate) fn candidate_named(&self) -> String {
        self.candidate_label.clone()
    }
}

/// The description of `planned`'s side of the pair, for its process.
pub(super) fn spec(
    planned: &Planned,
    request: &RunRequest,
    side: PairSide,
    base: &Planned,
) -> StepSpec {
    let overrides = &request.overrides;
    // The candidate runs the base's records and workload (as in one
    // process): from the base's config, when its own is another.
    let workload = (side == PairSide::Candidate
        && (planned.config_path != base.config_path || planned.entry.name != base.entry.name))
        .then(|| (base.entry.name.to_owned(), base.config_path.clone()));
    StepSpec {
        side: side.word().to_owned(),
        target: planned.entry.name.to_owned(),
        config: planned.config_path.clone(),
        workload,
        iterations: base.config.iterations,
        warmup: overrides.warmup,
        seed: overrides.seed,
        memory: overrides.memory.and_then(|mode| {
            serde_json::to_value(mode)
                .ok()
                .and_then(|value| value.as_str().map(str::to_owned))
        }),
        output_dir: overrides.output_dir.clone(),
        default_output_dir: request.default_output_dir.clone(),
        run_id: planned.run_id.clone(),
        staged_in: planned.write_dir().to_path_buf(),
        run_dir: planned.run_dir.clone(),
        force: request.force,
        command_line: request.command_line.clone(),
        pair: request.pair.clone().expect("a side of a pair"),
    }
}

/// One side's process.
struct Side {
    word: &'static str,
    /// How the binary is named where it is said (`the base (at REV)`).
    named: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// Its last line, once said.
    end: Option<StepEnd>,
    /// Whether it has said a line of the protocol.
    spoke: bool,
    /// The file its description was given in, when it was too long for
    /// the command line: removed with the side.
    spec_file: Option<std::path::PathBuf>,
}

impl Drop for Side {
    fn drop(&mut self) {
        if let Some(file) = &self.spec_file {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// The longest side description given on the command line itself.
const SPEC_ON_COMMAND_LINE: usize = 64 * 1024;

/// What a side said.
enum Said {
    Step(String),
    End,
}

impl Side {
    fn start(
        word: &'static str,
        named: String,
        binary: &Path,
        spec: &StepSpec,
    ) -> std::io::Result<Side> {
        let spec = serde_json::to_string(spec).map_err(std::io::Error::other)?;
        // A long description (tens of thousands of blocks) goes in a file
        // named `@FILE`: one argument may not be longer than 128 KiB.
        let spec_file = (spec.len() > SPEC_ON_COMMAND_LINE).then(|| {
            std::env::temp_dir().join(format!(
                "profile-cli-step-{}-{word}.json",
                std::process::id()
            ))
        });
        let argument = match &spec_file {
            Some(file) => {
                std::fs::write(file, &spec)?;
                format!("@{}", file.display())
            }
            None => spec,
        };
        let started = Command::new(binary)
            .args(["step", "--spec", &argument])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn();
        let mut child = match started {
            Ok(child) => child,
            Err(error) => {
                if let Some(file) = &spec_file {
                    let _ = std::fs::remove_file(file);
                }
                return Err(error);
            }
        };
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        Ok(Side {
            word,
            named,
            child,
            stdin,
            stdout,
            end: None,
            spoke: false,
            spec_file,
        })
    }

    /// Its next line of the protocol; what else it prints goes to
    /// standard error. A process that ends without its last line ends as
    /// a failure that says so.
    fn hear(&mut self, err: &mut dyn Write) -> Said {
        if self.end.is_some() {
            return Said::End;
        }
        let mut line = String::new();
        loop {
            line.clear();
            match self.stdout.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let Some(said) = line.trim_end_matches('\n').strip_prefix(MARK) else {
                let _ = err.write_all(line.as_bytes());
                continue;
            };
            self.spoke = true;
            if let Some(end) = said.strip_prefix("end ") {
                self.end =
                    Some(
                        serde_json::from_str(end).unwrap_or_else(|error| StepEnd::Refused {
                            message: format!("{} said what cannot be read: {error}", self.named),
                            code: crate::exit::EXIT_TARGET_FAILED,
                        }),
                    );
                return Said::End;
            }
            return Said::Step(said.to_owned());
        }
        let status = self.child.wait();
        let status = status.map_or_else(|error| error.to_string(), |status| status.to_string());
        if !self.spoke {
            // A binary that does not know `step`: one built at a revision
            // from before `ab --against`, or another program.
            self.end = Some(StepEnd::Refused {
                message: format!(
                    "it ended before it said a word of the pair's protocol ({status}): a binary built before `ab --against` existed cannot be a side of one"
                ),
                code: crate::exit::EXIT_USAGE,
            });
            return Said::End;
        }
        self.end = Some(StepEnd::Ended(SideEnd {
            passes: Err(SideFailure {
                message: format!("{} ended without saying how ({status})", self.named),
                not_run: false,
            }),
            interrupted: None,
            write_error: None,
        }));
        Said::End
    }

    /// Tells it `line`; a side that has ended is told nothing.
    fn tell(&mut self, line: &str) {
        if self.end.is_some() {
            return;
        }
        if let Some(stdin) = &mut self.stdin {
            if writeln!(stdin, "{line}")
                .and_then(|()| stdin.flush())
                .is_err()
            {
                self.stdin = None;
            }
        }
    }

    /// Tells it `line` and waits for its answer: true when it is `want`.
    fn ask(&mut self, line: &str, want: &str, err: &mut dyn Write) -> bool {
        self.tell(line);
        matches!(self.hear(err), Said::Step(word) if word == want)
    }

    /// Ends it: its last line, its process waited for.
    fn finish(mut self, err: &mut dyn Write) -> StepEnd {
        self.tell("end");
        // Its standard input closed: a side waiting for a line reads the end.
        self.stdin = None;
        while !matches!(self.hear(err), Said::End) {}
        let _ = self.child.wait();
        self.end.take().expect("heard to the end")
    }
}

/// Runs the pair's two sides as two processes, `binaries` the base's and
/// the candidate's, in `blocks`. A side refused before anything was
/// written is said here, and its exit code returned.
pub(super) fn run(
    binaries: &Binaries,
    [base_spec, candidate_spec]: [StepSpec; 2],
    blocks: &[(PairSide, u32)],
    err: &mut dyn Write,
) -> anyhow::Result<Result<SidesRan, u8>> {
    // A first signal reaches the sides from the terminal: they stop after
    // the call in progress, and this process waits to hear it.
    let _hold = interrupt::Hold::new();
    // A signal before the sides run, or one that made starting a side
    // fail (a `fork` it interrupted): said, and nothing is kept.
    let interrupted = |err: &mut dyn Write| -> anyhow::Result<Option<u8>> {
        let Some(signal) = interrupt::received() else {
            return Ok(None);
        };
        interrupt::acknowledge();
        writeln!(
            err,
            "interrupted by {} before the paired passes: the pair is not kept",
            profiling_core::driver::manifest::signal_name(signal)
        )?;
        Ok(Some(interrupt::exit_code(signal)))
    };
    if let Some(code) = interrupted(err)? {
        return Ok(Err(code));
    }
    let mut base = match Side::start("base", binaries.base_named(), &binaries.base, &base_spec) {
        Ok(side) => side,
        Err(error) => {
            if let Some(code) = interrupted(err)? {
                return Ok(Err(code));
            }
            anyhow::bail!("cannot run {}: {error}", binaries.base.display());
        }
    };
    let mut candidate = match Side::start(
        "candidate",
        binaries.candidate_named(),
        &binaries.candidate,
        &candidate_spec,
    ) {
        Ok(side) => side,
        Err(error) => {
            base.finish(err);
            if let Some(code) = interrupted(err)? {
                return Ok(Err(code));
            }
            anyhow::bail!("cannot run {}: {error}", binaries.candidate.display());
        }
    };
    let (blocks_run, between) = pace(&mut base, &mut candidate, blocks, err);
    let ends = [base, candidate].map(|side| (side.word, side.named.clone(), side.finish(err)));
    // A signal that ended a side before its passes (while it read its
    // records, say): nothing of the pair is kept.
    let cut = ends
        .iter()
        .any(|(_, _, end)| matches!(end, StepEnd::Ended(end) if end.interrupted.is_some()));
    if let (Some(signal), false) = (interrupt::received(), cut) {
        interrupt::acknowledge();
        let when = if blocks_run == 0 {
            "before the paired passes".to_owned()
        } else {
            format!("after {blocks_run} of {} blocks", blocks.len())
        };
        writeln!(
            err,
            "interrupted by {} {when}: the pair is not kept",
            profiling_core::driver::manifest::signal_name(signal)
        )?;
        return Ok(Err(interrupt::exit_code(signal)));
    }
    let mut refused = None;
    for (word, named, end) in &ends {
        if let StepEnd::Refused { message, code } = end {
            writeln!(err, "error: the {word} ({named}): {message}")?;
            refused = Some(refused.unwrap_or(*code).max(*code));
        }
    }
    if let Some(code) = refused {
        return Ok(Err(code));
    }
    Ok(Ok(SidesRan {
        ends: ends.map(|(_, _, end)| match end {
            StepEnd::Ended(end) => end,
            StepEnd::Refused { .. } => unreachable!("said above"),
        }),
        between,
    }))
}

/// Both sides opened, then each warmed up alone (the base first), then
/// their blocks in order, the machine-speed canary read between some
/// block pairs while both wait: the blocks run and the canary's readings.
/// A side that fails ends the pacing, the other told why.
fn pace(
    base: &mut Side,
    candidate: &mut Side,
    blocks: &[(PairSide, u32)],
    err: &mut dyn Write,
) -> (usize, Vec<canary::Canary>) {
    let mut blocks_run = 0;
    let read_after = canary::between_blocks(blocks.len());
    let mut between = Vec::with_capacity(read_after.len());
    let opened = [base.hear(err), candidate.hear(err)];
    let opened = opened.map(|said| matches!(said, Said::Step(word) if word == "opened"));
    if opened != [true, true] {
        abort(base, candidate, opened, "built");
        return (blocks_run, between);
    }
    if !base.ask("warmup", "warmed", err) {
        candidate.tell("abort base warmup");
        return (blocks_run, between);
    }
    if !candidate.ask("warmup", "warmed", err) {
        base.tell("abort candidate warmup");
        return (blocks_run, between);
    }
    for (index, &(side, passes)) in blocks.iter().enumerate() {
        // A signal this process alone was sent (a SIGTERM to it, not to
        // the terminal's group): no further block is started.
        if interrupt::received().is_some() {
            break;
        }
        // The machine's speed between block pairs, read here while both
        // sides wait.
        if index > 0 && read_after.contains(&(index - 1)) {
            between.push(canary::read());
        }
        let running = match side {
            PairSide::Base => &mut *base,
            PairSide::Candidate => &mut *candidate,
        };
        if !running.ask(&format!("passes {passes}"), "ran", err) {
            break;
        }
        blocks_run += 1;
    }
    (blocks_run, between)
}

/// Tells the side that opened that the other could not be built.
fn abort(base: &mut Side, candidate: &mut Side, opened: [bool; 2], why: &str) {
    match opened {
        [true, false] => base.tell(&format!("abort candidate {why}")),
        [false, true] => candidate.tell(&format!("abort base {why}")),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};

    use profiling_core::driver::manifest::PairInfo;
    use profiling_core::driver::runner::PairSide;

    use super::{run, Binaries, StepSpec};

    /// A side that speaks the protocol: says where it is, logs each line
    /// it is told (with its name) to `log`, and ends with no passes. With
    /// `die_after`, it ends without a last line once told that many lines.
    fn fake_side(dir: &Path, name: &str, log: &Path, die_after: Option<u32>) -> PathBuf {
        let script = dir.join(name);
        let die = die_after.map_or(String::new(), |n| {
            format!("  told=$((told + 1)); [ \"$told\" -ge {n} ] && exit 3\n")
        });
        executable(
            &script,
            &format!(
                "#!/bin/sh\ntold=0\nsay() {{ printf '\\001ab %s\\n' \"$1\"; }}\n\
                 echo 'what a target prints'\nsay opened\n\
                 while read -r line; do\n  echo \"{name} $line\" >> '{log}'\n{die}\
                 case \"$line\" in\n    warmup) say warmed ;;\n    passes*) say ran ;;\n    *) break ;;\n  esac\ndone\n\
                 say 'end {{\"Ended\":{{\"passes\":{{\"Ok\":{{\"pass_ns\":[],\"call_ns\":[],\"ranges\":{{}}}}}},\"interrupted\":null,\"write_error\":null}}}}'\n",
                log = log.display()
            ),
        );
        script
    }

    /// Writes a script and makes it executable from a child process, so
    /// that no process that another test forks meanwhile inherits a
    /// descriptor open for writing on it (which makes running it fail
    /// with "Text file busy").
    fn executable(path: &Path, text: &str) {
        let mut writer = Command::new("sh")
            .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
            .arg(path)
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        writer
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        assert!(
            writer.wait().unwrap().success(),
            "cannot write {}",
            path.display()
        );
    }

    fn spec(side: &str) -> StepSpec {
        StepSpec {
            side: side.to_owned(),
            target: "t".to_owned(),
            config: None,
            workload: None,
            iterations: 4,
            warmup: None,
            seed: None,
            memory: None,
            output_dir: None,
            default_output_dir: None,
            run_id: "pair".to_owned(),
            staged_in: PathBuf::from("/nonexistent"),
            run_dir: PathBuf::from("/nonexistent"),
            force: false,
            command_line: Vec::new(),
            pair: PairInfo {
                id: "pair".to_owned(),
                side: side.to_owned(),
                other_target: "t".to_owned(),
                blocks: Vec::new(),
            },
        }
    }

    fn binaries(base: PathBuf, candidate: PathBuf) -> Binaries {
        Binaries::given(
            base,
            Some(candidate),
            (Some("base".to_owned()), Some("candidate".to_owned())),
        )
        .unwrap()
    }

    /// The base warms up before the candidate, then the blocks run one at
    /// a time in the pair's order, each side told only its own; both are
    /// ended; what a side prints outside the protocol is passed on.
    #[test]
    fn the_sides_are_paced_one_block_at_a_time_in_the_pair_s_order() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let sides = binaries(
            fake_side(dir.path(), "base", &log, None),
            fake_side(dir.path(), "candidate", &log, None),
        );
        let blocks = [
            (PairSide::Candidate, 2),
            (PairSide::Base, 2),
            (PairSide::Base, 1),
            (PairSide::Candidate, 1),
        ];
        let mut err = Vec::new();
        let ends = run(&sides, [spec("base"), spec("candidate")], &blocks, &mut err)
            .unwrap()
            .unwrap_or_else(|code| panic!("{code}: {}", String::from_utf8_lossy(&err)))
            .ends;
        assert!(ends.iter().all(|end| end.passes.is_ok()));
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "base warmup\ncandidate warmup\ncandidate passes 2\nbase passes 2\nbase passes 1\ncandidate passes 1\nbase end\ncandidate end\n"
        );
        assert_eq!(
            String::from_utf8(err).unwrap(),
            "what a target prints\nwhat a target prints\n"
        );
    }

    /// A side that dies during the passes: no later block runs, the other
    /// side is ended, and the dead one's end says it ended without saying
    /// how, with its exit status.
    #[test]
    fn a_side_that_dies_ends_the_pair_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let sides = binaries(
            fake_side(dir.path(), "base", &log, None),
            fake_side(dir.path(), "candidate", &log, Some(2)),
        );
        let blocks = [
            (PairSide::Base, 1),
            (PairSide::Candidate, 1),
            (PairSide::Candidate, 1),
            (PairSide::Base, 1),
        ];
        let mut err = Vec::new();
        let [base, candidate] = run(&sides, [spec("base"), spec("candidate")], &blocks, &mut err)
            .unwrap()
            .unwrap()
            .ends;
        assert!(base.passes.is_ok());
        let failure = candidate.passes.unwrap_err();
        assert!(!failure.not_run);
        assert_eq!(
            failure.message,
            "candidate ended without saying how (exit status: 3)"
        );
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "base warmup\ncandidate warmup\nbase passes 1\ncandidate passes 1\nbase end\n"
        );
    }

    /// A binary that does not know the protocol (one built before it, as
    /// a base at an old revision is): refused with exit 2, saying why,
    /// and the other side is ended.
    #[test]
    fn a_binary_that_does_not_speak_the_protocol_is_refused_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let old = dir.path().join("old");
        executable(
            &old,
            "#!/bin/sh\necho \"error: unrecognized subcommand 'step'\" >&2\nexit 2\n",
        );
        let sides = binaries(old, fake_side(dir.path(), "candidate", &log, None));
        let mut err = Vec::new();
        let refused = run(
            &sides,
            [spec("base"), spec("candidate")],
            &[(PairSide::Base, 1), (PairSide::Candidate, 1)],
            &mut err,
        )
        .unwrap();
        assert_eq!(refused.err(), Some(crate::exit::EXIT_USAGE));
        let said = String::from_utf8(err).unwrap();
        assert!(
            said.contains("error: the base (base): it ended before it said a word of the pair's protocol (exit status: 2): a binary built before `ab --against` existed cannot be a side of one"),
            "{said}"
        );
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "candidate abort base built\n"
        );
    }
}
