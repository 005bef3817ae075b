//! Ctrl-C and SIGTERM: the run stops after the current target call, closes
//! its ranges and writes a manifest that says it was interrupted. A second
//! signal ends the process at once, with exit code 128 + that signal.
//!
//! The handlers are `signal-hook`'s: per signal, in this order, an exit
//! armed by an earlier signal (`flag::register_conditional_shutdown`, with
//! the signal's own code), then the flags the runner reads.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::flag;

/// The signal that asked the run to stop; 0 while none did.
static SIGNAL: AtomicUsize = AtomicUsize::new(0);

/// Raised by the first signal: the next one ends the process.
static RECEIVED: AtomicBool = AtomicBool::new(false);

/// While raised, [`requested`] keeps a first signal from the runner: a
/// sweep lets its current point finish, then stops ([`received`]).
static DEFERRED: AtomicBool = AtomicBool::new(false);

/// Routes SIGINT and SIGTERM to [`requested`] for the rest of the process.
/// Installs once: later calls return the first call's outcome.
pub fn install_handlers() -> std::io::Result<()> {
    static INSTALLED: OnceLock<Result<(), (std::io::ErrorKind, String)>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            register([SIGINT, SIGTERM]).map_err(|error| (error.kind(), error.to_string()))
        })
        .clone()
        .map_err(|(kind, message)| std::io::Error::new(kind, message))
}

fn register(signals: [i32; 2]) -> std::io::Result<()> {
    for signal in signals {
        // Registered first, so it sees the flag as the signal before left it.
        flag::register_conditional_shutdown(signal, 128 + signal, &RECEIVED)?;
        flag::register_usize(signal, &SIGNAL, signal as usize)?;
        flag::register(signal, &RECEIVED)?;
    }
    Ok(())
}

/// The signal received since the handlers were installed, if any.
#[inline]
pub fn requested() -> Option<i32> {
    match SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        _ if DEFERRED.load(Ordering::Relaxed) => None,
        signal => Some(signal as i32),
    }
}

/// The signal received since the handlers were installed, deferred or
/// not.
pub fn received() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal as i32),
    }
}

/// Keeps a first signal from runs ([`requested`] says none) until `false`
/// again: the caller looks at [`received`] between runs. A second signal
/// still ends the process at once.
pub fn defer(deferred: bool) {
    DEFERRED.store(deferred, Ordering::SeqCst);
}

/// The conventional exit code after `signal`: 130 for SIGINT, 143 for SIGTERM.
pub fn exit_code(signal: i32) -> u8 {
    (128 + signal).clamp(0, 255) as u8
}

/// Forgets a received signal (for tests that raise one in-process).
pub fn reset() {
    RECEIVED.store(false, Ordering::SeqCst);
    SIGNAL.store(0, Ordering::SeqCst);
}

/// Records `signal` as if it had been received (for tests).
pub fn simulate(signal: i32) {
    SIGNAL.store(usize::try_from(signal).unwrap_or(0), Ordering::SeqCst);
    RECEIVED.store(true, Ordering::SeqCst);
}
