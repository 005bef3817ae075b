//! The Nsight Systems command that captures exactly one run's capture range.
//!
//! `run --nsys` runs it and `--print-nsys-command` prints it: one word per
//! line, joined by ` \` continuations, each word quoted for a POSIX shell
//! where it needs to be.
//!
//! Nsight writes its report when the capture range closes, while the run
//! goes on, and the run directory appears only when the run is whole (a
//! staging directory renamed into place). So nsys writes into a directory of
//! its own beside the run's, [`report_dir`] (`.<run id>.nsys/`), which
//! exists before nsys starts, and `analyze`, the command's last step, moves
//! the report into the finished run directory.
//!
//! What nsys records is chosen for a capture that ends by itself on any
//! machine: NVTX and OS runtime calls always, CUDA on a CUDA device, and no
//! collector built on perf events (CPU sampling, context switches) unless
//! asked for ([`NsysCapture::sample`]): with those, Nsight Systems 2022.4
//! hangs at the end of the capture, or of the process, in about half the
//! runs on a busy machine (docs/guide/nsight.md has the counts).

use std::path::{Path, PathBuf};

/// The directory nsys writes a run's report into: `.<run id>.nsys/`
/// beside the run directory.
pub fn report_dir(run_dir: &Path) -> PathBuf {
    let name = run_dir
        .file_name()
        .map_or_else(|| "run".into(), |n| n.to_string_lossy());
    run_dir.with_file_name(format!(".{name}{REPORT_DIR_SUFFIX}"))
}

/// What ends the name of [`report_dir`].
pub const REPORT_DIR_SUFFIX: &str = ".nsys";

/// The run id whose report directory `name` (a file name in `runs/`) is:
/// `x` for `.x.nsys`.
pub fn report_dir_id(name: &str) -> Option<&str> {
    name.strip_prefix('.')?
        .strip_suffix(REPORT_DIR_SUFFIX)
        .filter(|id| !id.is_empty())
}

/// A report directory held by the `run --nsys` writing into it: an
/// exclusive lock on the directory itself, which goes with the process
/// however it ends. `runs clean` leaves a held one alone, and a second
/// `run --nsys` of the same id does not take it over.
#[derive(Debug)]
pub struct ReportDirLock {
    _dir: std::fs::File,
}

impl ReportDirLock {
    /// Locks `dir` without waiting: `Ok(None)` when another process holds
    /// it.
    pub fn try_take(dir: &Path) -> std::io::Result<Option<ReportDirLock>> {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open(dir)?;
        // SAFETY: flock(2) on a descriptor open for the call.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(Some(ReportDirLock { _dir: file }));
        }
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Ok(None)
        } else {
            Err(error)
        }
    }
}

/// The report's name, without its extension, in [`report_dir`] and in the
/// run directory.
pub const REPORT_STEM: &str = "trace";

/// What one capture records.
#[derive(Debug, Clone)]
pub struct NsysCapture<'a> {
    /// The run directory the report ends in.
    pub run_dir: &'a Path,
    /// The NVTX range that starts and stops the capture.
    pub capture_range: &'a str,
    /// Trace CUDA calls and GPU work (a CUDA device).
    pub cuda: bool,
    /// Sample the CPU and trace context switches (perf events).
    pub sample: bool,
    /// The user's own options of `nsys profile` (`--nsys-arg`, the
    /// config's `nsys.args`), checked by [`NsysArgs::parse`].
    pub args: &'a NsysArgs,
}

/// Options of `nsys profile` that the capture sets and that a user's may
/// not replace, each with why: they decide where the report goes and that
/// the capture is the run's capture range, once.
const REFUSED: &[(&[&str], &str)] = &[
    (
        &["-o", "--output"],
        "the report goes where `analyze` moves it into the run directory from (the run's `.<run id>.nsys/trace`)",
    ),
    (
        &["-c", "--capture-range"],
        "the capture is the run's capture range (`--capture-range=nvtx`); name another range with the config's `capture_range`",
    ),
    (
        &["--capture-range-end"],
        "nsys stops when the capture range closes (`stop`): the run writes its files after it, and a second capture would hold no pass of the run",
    ),
    (
        &["-p", "--nvtx-capture"],
        "the capture range is the config's `capture_range` (or --capture-range)",
    ),
    (
        &["-y", "--delay"],
        "the capture starts when the capture range opens, not after a delay",
    ),
    (
        &["-d", "--duration"],
        "the capture ends when the capture range closes; a duration could end it inside a pass",
    ),
    (
        &["-f", "--force-overwrite"],
        "the report directory is the run's own, and its report is overwritten already",
    ),
    (
        &["--trace-fork-before-exec"],
        "it is on already, so that a profiling binary the command starts is traced",
    ),
];

/// The user's own options of `nsys profile`, checked and sorted: those
/// the capture also sets are merged with its own (`--trace` adds to its
/// list, `-e` to its variables) or replace them (`--sample`,
/// `--cpuctxsw`), since nsys takes each option once; the rest follow its
/// options as they were given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NsysArgs {
    /// APIs to trace besides the capture's own (`--trace`, `-t`).
    pub trace: Vec<String>,
    /// `--sample` (`-s`), in place of the capture's.
    pub sample: Option<String>,
    /// `--cpuctxsw`, in place of the capture's.
    pub cpuctxsw: Option<String>,
    /// Variables for the profiled process (`--env-var`, `-e`), besides
    /// the capture's.
    pub env: Vec<String>,
    /// Every other option, with the words that followed it, in order.
    pub other: Vec<Vec<String>>,
}

/// A word of the user's nsys options that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NsysArgError {
    /// Its place among the words given, from 0.
    pub index: usize,
    pub word: String,
    pub reason: String,
}

impl std::fmt::Display for NsysArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`: {}", self.word, self.reason)
    }
}

impl NsysArgs {
    /// Checks and sorts `words`, options of `nsys profile` as a shell
    /// would pass them: `--name=value`, or `--name value` (the value its
    /// own word), or a flag alone. Refused: what [`REFUSED`] lists, and a
    /// first word that is not an option.
    pub fn parse(words: &[String]) -> Result<NsysArgs, NsysArgError> {
        let mut args = NsysArgs::default();
        let mut index = 0;
        while index < words.len() {
            let word = &words[index];
            let refuse = |reason: String| NsysArgError {
                index,
                word: word.clone(),
                reason,
            };
            if !word.starts_with('-') || word == "-" || word == "--" {
                return Err(refuse(
                    "not an option of `nsys profile`: the command it profiles is the run's own; give options only (`--name=value`, or `--name` then its value)".to_owned(),
                ));
            }
            let (name, inline) = match word.split_once('=') {
                Some((name, value)) => (name, Some(value.to_owned())),
                None => (word.as_str(), None),
            };
            if let Some((_, why)) = REFUSED.iter().find(|(names, _)| names.contains(&name)) {
                return Err(refuse(format!("set by the capture itself: {why}")));
            }
            // The words up to the next option are this one's value.
            let mut end = index + 1;
            while end < words.len() && !words[end].starts_with('-') {
                end += 1;
            }
            let following = &words[index + 1..end];
            let value = || -> Result<String, NsysArgError> {
                match (&inline, following) {
                    (Some(value), []) if !value.is_empty() => Ok(value.clone()),
                    (None, [value]) => Ok(value.clone()),
                    _ => Err(refuse(format!("`{name}` takes one value: `{name}=VALUE`"))),
                }
            };
            match name {
                "-t" | "--trace" => {
                    for api in value()?.split(',').map(str::trim).filter(|a| !a.is_empty()) {
                        if !args.trace.iter().any(|a| a == api) {
                            args.trace.push(api.to_owned());
                        }
                    }
                }
                "-s" | "--sample" => args.sample = Some(value()?),
                "--cpuctxsw" => args.cpuctxsw = Some(value()?),
                "-e" | "--env-var" => args.env.push(value()?),
                _ => args.other.push(words[index..end].to_vec()),
            }
            index = end;
        }
        Ok(args)
    }

    /// Whether no option was given.
    pub fn is_empty(&self) -> bool {
        *self == NsysArgs::default()
    }
}

/// The nsys command around a profiling command: the directory it writes
/// into, made first, and the step that moves its report into the run
/// directory after it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NsysCommand {
    /// The run directory the report ends in.
    pub run_dir: PathBuf,
    /// Made before nsys starts: [`report_dir`].
    pub report_dir: PathBuf,
    /// `nsys profile` and its options, then the profiling command.
    pub lines: Vec<Vec<String>>,
    /// After nsys ended well: `analyze RUN_DIR`, which moves the report in.
    pub finish: Vec<String>,
    /// Whether the run writes its directory (`write_manifest`): without
    /// one, `run --nsys` makes the run directory for Nsight's report.
    #[serde(default = "yes")]
    pub run_writes_manifest: bool,
}

fn yes() -> bool {
    true
}

/// The nsys command around `command`, the profiling command with every
/// setting spelled out (a program and its subcommand on its first line,
/// then one option and its value per line); `analyzer` is the program whose
/// `analyze` finishes it.
pub fn nsys_command(
    capture: &NsysCapture<'_>,
    command: &[Vec<String>],
    analyzer: &str,
) -> NsysCommand {
    let line = |words: &[&str]| words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    // Absolute: no path of the command can be read as an option.
    let run_dir = std::path::absolute(capture.run_dir).unwrap_or_else(|_| capture.run_dir.into());
    let report_dir = report_dir(&run_dir);
    let output = report_dir.join(REPORT_STEM).to_string_lossy().into_owned();
    let args = capture.args;
    let mut apis: Vec<&str> = if capture.cuda {
        vec!["cuda", "nvtx", "osrt"]
    } else {
        vec!["nvtx", "osrt"]
    };
    for api in &args.trace {
        // `none` would drop the NVTX the capture range is found by.
        if api != "none" && !apis.contains(&api.as_str()) {
            apis.push(api);
        }
    }
    let trace = format!("--trace={}", apis.join(","));
    let collector = if capture.sample {
        "process-tree"
    } else {
        "none"
    };
    let sample = format!("--sample={}", args.sample.as_deref().unwrap_or(collector));
    let switches = format!(
        "--cpuctxsw={}",
        args.cpuctxsw.as_deref().unwrap_or(collector)
    );
    let nvtx_capture = format!("--nvtx-capture={}@*", capture.capture_range);
    // Lets Nsight match a capture range named by a plain, unregistered string.
    let mut env = vec!["NSYS_NVTX_PROFILER_REGISTER_ONLY=0".to_owned()];
    env.extend(args.env.iter().cloned());
    let env = env.join(",");
    let mut lines = vec![
        line(&["nsys", "profile"]),
        line(&["-o", &output]),
        // The directory is the command's own: a report left by an earlier
        // attempt is replaced.
        line(&["--force-overwrite=true"]),
        line(&[&trace]),
        line(&[&sample]),
        line(&[&switches]),
        line(&["--capture-range=nvtx"]),
        // The run goes on after the capture: it writes its files, then ends.
        line(&["--capture-range-end=stop"]),
        line(&[&nvtx_capture]),
        line(&["-e", &env]),
        line(&["--trace-fork-before-exec=true"]),
    ];
    lines.extend(args.other.iter().cloned());
    lines.extend(command.iter().cloned());
    NsysCommand {
        finish: vec![
            analyzer.to_owned(),
            "analyze".to_owned(),
            run_dir.to_string_lossy().into_owned(),
        ],
        run_dir,
        report_dir,
        lines,
        run_writes_manifest: true,
    }
}

impl NsysCommand {
    /// The whole command as a shell runs it: the directory made, nsys, then
    /// the analysis that moves the report in, each step only when the one
    /// before succeeded.
    pub fn render(&self) -> String {
        let mkdir = render_command(&[vec![
            "mkdir".to_owned(),
            "-p".to_owned(),
            self.report_dir.to_string_lossy().into_owned(),
        ]]);
        let finish = render_command(std::slice::from_ref(&self.finish));
        format!(
            "{mkdir} && {} \\\n  && {finish}",
            render_command(&self.lines)
        )
    }
}

/// Renders lines of words as one shell command with ` \` continuations,
/// quoting each word where it needs it.
pub fn render_command(lines: &[Vec<String>]) -> String {
    lines
        .iter()
        .map(|words| {
            words
                .iter()
                .map(|w| shell_quote(w))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join(" \\\n  ")
}

/// Quotes `word` for a POSIX shell when it holds anything but plainly safe
/// characters.
pub fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,+%@".contains(&b));
    if safe {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(shell_quote("--warmup"), "--warmup");
        assert_eq!(shell_quote("/a/b-c_d.e"), "/a/b-c_d.e");
        assert_eq!(
            shell_quote("--nvtx-capture=profile-target@*"),
            "'--nvtx-capture=profile-target@*'"
        );
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b"), "'a b'");
    }

    fn command(cuda: bool, sample: bool) -> NsysCommand {
        let profiling = vec![
            vec![
                "/bin/profile-cli".to_owned(),
                "run".to_owned(),
                "smoke".to_owned(),
            ],
            vec!["--run-id".to_owned(), "r1".to_owned()],
        ];
        nsys_command(
            &NsysCapture {
                run_dir: Path::new("/r/runs/r1"),
                capture_range: "profile-target",
                cuda,
                sample,
                args: &NsysArgs::default(),
            },
            &profiling,
            "/bin/profile-cli",
        )
    }

    #[test]
    fn one_option_per_line_between_the_report_directory_and_the_analysis() {
        let text = command(false, false).render();
        let expected = [
            "mkdir -p /r/runs/.r1.nsys && nsys profile \\",
            "  -o /r/runs/.r1.nsys/trace \\",
            "  --force-overwrite=true \\",
            "  --trace=nvtx,osrt \\",
            "  --sample=none \\",
            "  --cpuctxsw=none \\",
            "  --capture-range=nvtx \\",
            "  --capture-range-end=stop \\",
            "  '--nvtx-capture=profile-target@*' \\",
            "  -e NSYS_NVTX_PROFILER_REGISTER_ONLY=0 \\",
            "  --trace-fork-before-exec=true \\",
            "  /bin/profile-cli run smoke \\",
            "  --run-id r1 \\",
            "  && /bin/profile-cli analyze /r/runs/r1",
        ];
        assert_eq!(text.lines().collect::<Vec<_>>(), expected);
    }

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn a_users_options_merge_with_the_captures_own_or_follow_them() {
        let args = NsysArgs::parse(&words(
            "--trace=cublas,cudnn,nvtx --cuda-graph-trace node -e A=1 --gpu-metrics-devices=all -s cpu --cudabacktrace=all:500",
        ))
        .unwrap();
        let command = nsys_command(
            &NsysCapture {
                run_dir: Path::new("/r/runs/r1"),
                capture_range: "profile-target",
                cuda: true,
                sample: false,
                args: &args,
            },
            &[vec!["/bin/profile-cli".to_owned()]],
            "/bin/profile-cli",
        );
        let text = command.render();
        let expected = [
            "mkdir -p /r/runs/.r1.nsys && nsys profile \\",
            "  -o /r/runs/.r1.nsys/trace \\",
            "  --force-overwrite=true \\",
            "  --trace=cuda,nvtx,osrt,cublas,cudnn \\",
            "  --sample=cpu \\",
            "  --cpuctxsw=none \\",
            "  --capture-range=nvtx \\",
            "  --capture-range-end=stop \\",
            "  '--nvtx-capture=profile-target@*' \\",
            "  -e NSYS_NVTX_PROFILER_REGISTER_ONLY=0,A=1 \\",
            "  --trace-fork-before-exec=true \\",
            "  --cuda-graph-trace node \\",
            "  --gpu-metrics-devices=all \\",
            "  --cudabacktrace=all:500 \\",
            "  /bin/profile-cli \\",
            "  && /bin/profile-cli analyze /r/runs/r1",
        ];
        assert_eq!(text.lines().collect::<Vec<_>>(), expected);
        // Nothing given: the capture's own command.
        assert!(NsysArgs::parse(&[]).unwrap().is_empty());
        // `none` cannot take the NVTX tracing away.
        let none = NsysArgs::parse(&words("-t none")).unwrap();
        let command = nsys_command(
            &NsysCapture {
                run_dir: Path::new("/r/runs/r1"),
                capture_range: "profile-target",
                cuda: false,
                sample: false,
                args: &none,
            },
            &[],
            "p",
        );
        assert_eq!(command.lines[3], ["--trace=nvtx,osrt"]);
    }

    #[test]
    fn options_that_would_break_the_capture_are_refused_saying_why() {
        for (given, index, word, why) in [
            ("-o /tmp/x", 0, "-o", "the report goes where `analyze`"),
            (
                "--stats=true --output=/tmp/x",
                1,
                "--output=/tmp/x",
                "the report goes",
            ),
            (
                "--capture-range=cudaProfilerApi",
                0,
                "--capture-range=cudaProfilerApi",
                "the capture is the run's capture range",
            ),
            ("-c none", 0, "-c", "the capture is the run's capture range"),
            (
                "--capture-range-end=repeat",
                0,
                "--capture-range-end=repeat",
                "nsys stops when the capture range closes",
            ),
            ("--nvtx-capture=x", 0, "--nvtx-capture=x", "`capture_range`"),
            ("--delay=5", 0, "--delay=5", "not after a delay"),
            ("-d 10", 0, "-d", "could end it inside a pass"),
            (
                "--force-overwrite=false",
                0,
                "--force-overwrite=false",
                "overwritten already",
            ),
            (
                "--trace-fork-before-exec=false",
                0,
                "--trace-fork-before-exec=false",
                "on already",
            ),
            ("cuda", 0, "cuda", "not an option of `nsys profile`"),
            ("--trace", 0, "--trace", "takes one value"),
            ("--trace=", 0, "--trace=", "takes one value"),
            ("--sample=cpu none", 0, "--sample=cpu", "takes one value"),
        ] {
            let error = NsysArgs::parse(&words(given)).unwrap_err();
            assert_eq!((error.index, error.word.as_str()), (index, word), "{given}");
            assert!(error.reason.contains(why), "{given}: {}", error.reason);
            assert!(
                error.to_string().starts_with(&format!("`{word}`: ")),
                "{error}"
            );
        }
    }

    #[test]
    fn cuda_is_traced_on_a_cuda_device_and_perf_collectors_only_when_asked() {
        let cuda = command(true, false).lines.concat();
        assert!(cuda.contains(&"--trace=cuda,nvtx,osrt".to_owned()));
        let sampled = command(false, true).lines.concat();
        assert!(sampled.contains(&"--trace=nvtx,osrt".to_owned()));
        assert!(sampled.contains(&"--sample=process-tree".to_owned()));
        assert!(sampled.contains(&"--cpuctxsw=process-tree".to_owned()));
    }

    /// A run directory given relative, even one that starts with `-`,
    /// becomes absolute in every word that names it: none can be read as
    /// an option by `mkdir`, nsys or the analysis.
    #[test]
    fn every_path_of_the_command_is_absolute() {
        let command = nsys_command(
            &NsysCapture {
                run_dir: Path::new("-o/runs/r1"),
                capture_range: "profile-target",
                cuda: false,
                sample: false,
                args: &NsysArgs::default(),
            },
            &[vec!["/bin/profile-cli".to_owned()]],
            "/bin/profile-cli",
        );
        let here = std::env::current_dir().unwrap();
        assert_eq!(command.run_dir, here.join("-o/runs/r1"));
        assert_eq!(command.report_dir, here.join("-o/runs/.r1.nsys"));
        assert_eq!(
            command.lines[1],
            ["-o", &here.join("-o/runs/.r1.nsys/trace").to_string_lossy()]
        );
        assert_eq!(command.finish[2], here.join("-o/runs/r1").to_string_lossy());
    }

    #[test]
    fn the_report_directory_is_a_hidden_sibling_of_the_run() {
        assert_eq!(
            report_dir(Path::new("/x/runs/20261203T101010Z")),
            Path::new("/x/runs/.20261203T101010Z.nsys")
        );
        assert_eq!(
            report_dir_id(".20261203T101010Z.nsys"),
            Some("20261203T101010Z")
        );
        assert_eq!(report_dir_id(".nsys"), None);
        assert_eq!(report_dir_id("r1.nsys"), None);
    }

    #[test]
    fn a_report_directory_is_held_by_one_lock_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let held = ReportDirLock::try_take(dir.path()).unwrap();
        assert!(held.is_some());
        assert!(ReportDirLock::try_take(dir.path()).unwrap().is_none());
        drop(held);
        assert!(ReportDirLock::try_take(dir.path()).unwrap().is_some());
    }
}
