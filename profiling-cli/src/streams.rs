//! Where the commands write: the standard streams, which go on quietly
//! once their reader has gone ([`ClosedQuietly`]); human text and the one
//! `--json` document kept apart ([`Streams`]); and the warning that opens
//! every command that measures.

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};

use profiling_core::driver::session::SessionError;

/// How much the process says besides its results, from the global `-q`
/// and `-v` (see [`say`]): 0 quiet, 1 the default, 2 and more verbose.
static VERBOSITY: AtomicU8 = AtomicU8::new(1);

/// Sets what [`quiet`] and [`verbose`] say, once the command line is
/// parsed: `-q` (no progress bars, no `note:` advice, no cargo progress of
/// a workspace's build), `-v` (the commands run for a workspace's binary,
/// and cargo's whole output).
pub(crate) fn say(quiet: bool, verbose: u8) {
    let level = if quiet { 0 } else { verbose.saturating_add(1) };
    VERBOSITY.store(level, Ordering::Relaxed);
}

/// `-q` was given.
pub(crate) fn quiet() -> bool {
    VERBOSITY.load(Ordering::Relaxed) == 0
}

/// `-v` was given.
#[cfg_attr(not(feature = "full"), allow(dead_code))]
pub(crate) fn verbose() -> bool {
    VERBOSITY.load(Ordering::Relaxed) >= 2
}

/// Writes `note: TEXT` on `err` unless `-q` was given: advice, never a
/// result, a warning or an error.
pub(crate) fn note(err: &mut dyn Write, text: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    if quiet() {
        return Ok(());
    }
    writeln!(err, "note: {text}")
}

/// A terminal stream whose reader may go away (`profile-cli run ... | head
/// -2`): from the first broken pipe on, what is printed goes nowhere and the
/// command goes on, so that a run still writes its files, page and
/// baseline, and exits as it would have; as cargo and ripgrep do.
pub struct ClosedQuietly<W> {
    inner: W,
    closed: bool,
}

impl<W: Write> ClosedQuietly<W> {
    pub fn new(inner: W) -> Self {
        ClosedQuietly {
            inner,
            closed: false,
        }
    }

    fn absorb<T>(&mut self, result: std::io::Result<T>, ok: T) -> std::io::Result<T> {
        match result {
            Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(ok)
            }
            other => other,
        }
    }
}

impl<W: Write> Write for ClosedQuietly<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        let result = self.inner.write(buf);
        self.absorb(result, buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let result = self.inner.flush();
        self.absorb(result, ())
    }
}

/// Where `run` writes: human text on stdout, or on stderr with `--json`,
/// which keeps stdout for the one JSON document.
pub(crate) struct Streams<'a> {
    pub(crate) out: &'a mut dyn Write,
    pub(crate) err: &'a mut dyn Write,
    pub(crate) json: bool,
}

impl Streams<'_> {
    pub(crate) fn human(&mut self) -> &mut dyn Write {
        if self.json {
            &mut *self.err
        } else {
            &mut *self.out
        }
    }

    /// A refusal or failure: one `error:` line on stderr, and with `--json`
    /// the document saying so.
    pub(crate) fn fail(&mut self, error: &SessionError) -> anyhow::Result<u8> {
        self.refuse(&error.to_string(), error.exit_code())
    }

    pub(crate) fn refuse(&mut self, message: &str, code: u8) -> anyhow::Result<u8> {
        writeln!(self.err, "error: {message}")?;
        if self.json {
            let document = serde_json::json!({
                "manifest_path": null,
                "status": "refused",
                "error": message,
            });
            writeln!(self.out, "{document}")?;
        }
        Ok(code)
    }
}

/// Says so on `err` when this is a debug build, whose timings mislead.
pub(crate) fn warn_of_a_debug_build(err: &mut dyn Write) -> std::io::Result<()> {
    if profiling_core::driver::provenance::build_profile() == "debug" {
        writeln!(
            err,
            "warning: this is a debug build: its timings say little about optimized code (build with --release)"
        )?;
    }
    Ok(())
}
