//! Building a workspace's `profile` binary with cargo, release, and
//! showing only what the user needs of cargo's output: nothing for a quick
//! build, everything once cargo has kept them waiting or when it fails.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use profiling_extract::workspace::cargo_for_snippets;

use super::Delegated;
use crate::Command;

/// How long cargo may be busy before its output is shown: past this, the
/// user is waiting and should see on what.
const A_MOMENT: Duration = Duration::from_secs(2);

/// Why the workspace's binary is not there to run.
pub(super) enum NotBuilt {
    /// Cargo could not be started (said).
    NoCargo,
    /// Cargo ran and the build failed (cargo's output and one line said so).
    Failed,
}

/// Builds `to`'s `profile` binary (in release, unless `--profile` names
/// another of cargo's profiles; with the `--features` given); its path.
///
/// Cargo's own output is shown when the build fails, or once it has been
/// busy (compiling, downloading, waiting for a lock) for more than
/// [`A_MOMENT`]; a build with nothing to do, or a quick one, prints
/// nothing of cargo's. Warnings are shown only for `snippet`, the snippet
/// a `run` runs; other crates' warnings are counted in one line when
/// something was compiled.
pub(super) fn build(to: &Delegated, snippet: Option<&Path>) -> Result<PathBuf, NotBuilt> {
    let package = &to.package;
    let manifest = to.workspace.join("Cargo.toml");
    let terminal = std::io::stderr().is_terminal();
    let mut selection: Vec<String> = vec!["build".to_owned()];
    selection.extend(to.profile.args());
    selection.extend(["-p", package.as_str(), "--bin", "profile"].map(str::to_owned));
    if !to.features.is_empty() {
        selection.extend(["--features".to_owned(), to.features.join(",")]);
    }
    let typed = format!("cargo {}", selection.join(" "));
    let cargo = cargo_for_snippets(&to.krate)
        .current_dir(&to.krate)
        .args(&selection)
        .arg(if terminal {
            "--message-format=json-diagnostic-rendered-ansi"
        } else {
            "--message-format=json"
        })
        .args(["--color", if terminal { "always" } else { "never" }])
        .arg("--manifest-path")
        .arg(&manifest)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    if crate::streams::verbose() {
        eprintln!(
            "profile-cli: running `{typed} --manifest-path {}` in {}",
            manifest.display(),
            to.krate.display()
        );
    }
    let child = match cargo {
        Ok(child) => child,
        Err(error) => {
            eprintln!("error: cannot run cargo to build {package}: {error}");
            return Err(NotBuilt::NoCargo);
        }
    };
    let built = watch_build(child, snippet, &mut std::io::stderr().lock());
    let Some(executable) = built.executable.filter(|_| built.success) else {
        eprintln!(
            "error: `{typed} --manifest-path {}` failed (above)",
            manifest.display()
        );
        return Err(NotBuilt::Failed);
    };
    if built.compiled && built.hidden_warnings > 0 {
        eprintln!(
            "profile-cli: {} from other crates of {} not shown (`{typed} --manifest-path {}` shows them)",
            plural_warnings(built.hidden_warnings),
            to.workspace.display(),
            manifest.display()
        );
    }
    Ok(executable)
}

fn plural_warnings(count: usize) -> String {
    if count == 1 {
        "1 warning".to_owned()
    } else {
        format!("{count} warnings")
    }
}

/// The snippet directory of the target a `run` runs: its config's
/// directory, else `snippets/<name, - as _>/` of the profiling crate.
pub(super) fn run_snippet_dir(command: &Command, krate: &Path) -> Option<PathBuf> {
    let Command::Run(run) = command else {
        return None;
    };
    let dir = match (&run.config, &run.name) {
        (Some(config), _) => std::path::absolute(config).ok()?.parent()?.to_path_buf(),
        (None, Some(name)) => krate.join("snippets").join(name.replace('-', "_")),
        (None, None) => return None,
    };
    dir.canonicalize().ok()
}

/// What cargo said while building, one item at a time in the order it
/// came.
enum Said {
    /// A line of cargo's stderr (its status lines and its own warnings).
    Line(String),
    /// A JSON message of its stdout.
    Message(Box<cargo_metadata::Message>),
}

/// What [`watch_build`] saw.
struct Built {
    executable: Option<PathBuf>,
    success: bool,
    /// Whether anything was compiled (not only found fresh).
    compiled: bool,
    /// Warnings of other crates than the snippet, not shown.
    hidden_warnings: usize,
}

/// Follows a cargo build started with a JSON message format, printing on
/// `err` what [`build`] documents.
fn watch_build(mut child: Child, snippet: Option<&Path>, err: &mut dyn Write) -> Built {
    let (said, readers) = listen(&mut child);
    let mut built = Built {
        executable: None,
        success: false,
        compiled: false,
        hidden_warnings: 0,
    };
    // -v: cargo's output as it comes; -q: only a failure's.
    let mut shown = Shown {
        err,
        held: Vec::new(),
        busy_since: None,
        showing: crate::streams::verbose(),
        never_early: crate::streams::quiet(),
    };
    loop {
        match said.recv_timeout(Duration::from_millis(100)) {
            Ok(Said::Line(line)) => {
                if is_busy_line(&line) {
                    shown.busy();
                }
                shown.line(line);
            }
            Ok(Said::Message(message)) => built.read(&message, snippet, &mut shown),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        shown.show_once_long();
    }
    for reader in readers {
        let _ = reader.join();
    }
    let exited = child.wait().is_ok_and(|status| status.success());
    built.success &= exited;
    shown.finish(built.success);
    built
}

/// Cargo's stdout (its JSON messages) and stderr, read on threads of
/// their own into one channel, in the order they come.
fn listen(child: &mut Child) -> (mpsc::Receiver<Said>, Vec<JoinHandle<()>>) {
    let (sender, said) = mpsc::channel();
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        let sender = sender.clone();
        readers.push(std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(message) = serde_json::from_str::<cargo_metadata::Message>(&line) {
                    let _ = sender.send(Said::Message(Box::new(message)));
                }
            }
        }));
    }
    if let Some(stderr) = child.stderr.take() {
        readers.push(std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = sender.send(Said::Line(line));
            }
        }));
    }
    (said, readers)
}

impl Built {
    /// Takes in one JSON message of cargo's: what was compiled, the
    /// binary, the diagnostics (shown for errors and the snippet's,
    /// counted for other warnings) and how the build ended.
    fn read(
        &mut self,
        message: &cargo_metadata::Message,
        snippet: Option<&Path>,
        shown: &mut Shown,
    ) {
        use cargo_metadata::diagnostic::DiagnosticLevel;
        use cargo_metadata::Message;
        match message {
            Message::CompilerArtifact(artifact) => {
                if !artifact.fresh {
                    self.compiled = true;
                    shown.busy();
                }
                if artifact.target.name == "profile" {
                    self.executable = artifact
                        .executable
                        .as_ref()
                        .map(|path| path.clone().into_std_path_buf());
                }
            }
            Message::CompilerMessage(compiler) => {
                let diagnostic = &compiler.message;
                let rendered = diagnostic.rendered.as_deref().unwrap_or_default();
                // The package's target lies in the snippet's directory.
                let of_snippet = snippet.is_some_and(|dir| {
                    compiler
                        .target
                        .src_path
                        .canonicalize()
                        .is_ok_and(|source| source.starts_with(dir))
                });
                let error = matches!(
                    diagnostic.level,
                    DiagnosticLevel::Error | DiagnosticLevel::Ice
                );
                if error || of_snippet {
                    shown.diagnostic(rendered);
                } else if diagnostic.level == DiagnosticLevel::Warning {
                    self.hidden_warnings += 1;
                }
            }
            Message::BuildFinished(finished) => self.success = finished.success,
            _ => {}
        }
    }
}

/// Cargo's output as the user sees it: held while the build is quick,
/// shown as it comes once cargo has been busy for [`A_MOMENT`].
struct Shown<'a> {
    err: &'a mut dyn Write,
    /// Until cargo's output is shown: its lines (for a failure) and the
    /// diagnostics to show, marked `true`, in the order they came.
    held: Vec<(bool, String)>,
    busy_since: Option<Instant>,
    showing: bool,
    /// `-q`: held until the end, shown only if the build fails.
    never_early: bool,
}

impl Shown<'_> {
    /// Cargo is busy from now, unless it already was.
    fn busy(&mut self) {
        self.busy_since.get_or_insert_with(Instant::now);
    }

    /// A line of cargo's stderr.
    fn line(&mut self, line: String) {
        if self.showing {
            let _ = writeln!(self.err, "{line}");
        } else {
            self.held.push((false, line));
        }
    }

    /// A diagnostic to show, as the compiler rendered it.
    fn diagnostic(&mut self, rendered: &str) {
        if self.showing {
            let _ = write!(self.err, "{rendered}");
        } else {
            self.held.push((true, rendered.trim_end().to_owned()));
        }
    }

    /// Once cargo has been busy for [`A_MOMENT`]: what was held, and from
    /// then on everything as it comes.
    fn show_once_long(&mut self) {
        if !self.showing
            && !self.never_early
            && self
                .busy_since
                .is_some_and(|since| since.elapsed() >= A_MOMENT)
        {
            self.showing = true;
            for (_, text) in self.held.drain(..) {
                let _ = writeln!(self.err, "{text}");
            }
        }
    }

    /// A build that succeeded without showing cargo's output shows only
    /// the diagnostics kept; a failed one, everything.
    fn finish(self, success: bool) {
        for (diagnostic, text) in &self.held {
            if *diagnostic || !success {
                let _ = writeln!(self.err, "{text}");
            }
        }
    }
}

/// A status line of cargo's that says it is busy: while it lasts past
/// [`A_MOMENT`], cargo's output is shown.
fn is_busy_line(line: &str) -> bool {
    let word = line.trim_start().split(' ').next().unwrap_or_default();
    [
        "Compiling",
        "Downloading",
        "Downloaded",
        "Updating",
        "Blocking",
        "Locking",
        "Adding",
        "Building",
    ]
    .contains(&word)
}
