//! Ctrl-C and SIGTERM. Inside the measured passes, the run stops after the
//! current target call, closes its ranges and writes a manifest that says
//! it was interrupted; a second signal ends the process at once. Everywhere
//! else (reading a config, loading records, statistics, a comparison, a
//! page) the first signal ends the process at once, except while a file is
//! being written ([`Hold`]): the write finishes (a temporary file renamed
//! into place, or removed), then the process ends, so that no partial file
//! is left.
//!
//! However it ends for a signal, the process dies *by* that signal, as
//! bash, make and cargo do after cleaning up: its default action is
//! restored and the signal raised again ([`die_by`]), so that a shell loop
//! around the command stops with it, and the shell reports 128 + the
//! signal (130 for Ctrl-C, 143 for SIGTERM).
//!
//! The handlers are `signal-hook`'s: per signal, in this order, the default
//! action armed by an earlier signal, the default action armed while
//! nothing holds signals off (`flag::register_conditional_default`), then
//! the flags the runner reads.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::flag;

/// The signal that asked the run to stop; 0 while none did.
static SIGNAL: AtomicUsize = AtomicUsize::new(0);

/// Raised by the first signal: the next one ends the process.
static RECEIVED: AtomicBool = AtomicBool::new(false);

/// While raised, `requested` keeps a first signal from the runner: a
/// sweep lets its current point finish, then stops ([`received`]).
static DEFERRED: AtomicBool = AtomicBool::new(false);

/// True while nothing holds signals off ([`Hold`]): a signal ends the
/// process at once.
static ARMED: AtomicBool = AtomicBool::new(true);

/// How many [`Hold`]s are alive.
static HOLDS: AtomicUsize = AtomicUsize::new(0);

/// Raised once the signal received has been acted on (the runner or a
/// sweep stopping for it): ending a hold then does not end the process.
static ACTED: AtomicBool = AtomicBool::new(false);

/// Raised once the handlers are installed: only then does ending a hold
/// end the process (a test that records a signal in-process never does).
static INSTALLED_HANDLERS: AtomicBool = AtomicBool::new(false);

/// Routes SIGINT and SIGTERM to `requested` for the rest of the process.
/// Installs once: later calls return the first call's outcome.
pub fn install_handlers() -> std::io::Result<()> {
    static INSTALLED: OnceLock<Result<(), (std::io::ErrorKind, String)>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            register([SIGINT, SIGTERM]).map_err(|error| (error.kind(), error.to_string()))?;
            INSTALLED_HANDLERS.store(true, Ordering::SeqCst);
            Ok(())
        })
        .clone()
        .map_err(|(kind, message)| std::io::Error::new(kind, message))
}

fn register(signals: [i32; 2]) -> std::io::Result<()> {
    for signal in signals {
        // Registered first, so it sees the flag as the signal before left it.
        flag::register_conditional_default(signal, &RECEIVED)?;
        flag::register_conditional_default(signal, &ARMED)?;
        flag::register_usize(signal, &SIGNAL, signal as usize)?;
        flag::register(signal, &RECEIVED)?;
    }
    Ok(())
}

/// The signal received since the handlers were installed, if any: the
/// runner stops for it (which counts as acting on it, see [`Hold`]).
#[inline]
pub(crate) fn requested() -> Option<i32> {
    match SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        _ if DEFERRED.load(Ordering::Relaxed) => None,
        signal => {
            ACTED.store(true, Ordering::SeqCst);
            Some(signal as i32)
        }
    }
}

/// Says that the signal received was acted on (a sweep stopping after its
/// point): ending a [`Hold`] then does not end the process.
pub fn acknowledge() {
    ACTED.store(true, Ordering::SeqCst);
}

/// While one lives, a first signal does not end the process: the measured
/// passes (which stop after the call in progress), a file being written (a
/// temporary file and its rename), a sweep's points. When the last one
/// ends, a signal received meanwhile that nothing acted on ends the process
/// then, with its code.
#[must_use = "signals are held off only while the hold lives"]
pub struct Hold(());

impl Hold {
    pub fn new() -> Hold {
        HOLDS.fetch_add(1, Ordering::SeqCst);
        ARMED.store(false, Ordering::SeqCst);
        Hold(())
    }
}

impl Default for Hold {
    fn default() -> Self {
        Hold::new()
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if HOLDS.fetch_sub(1, Ordering::SeqCst) != 1 {
            return;
        }
        ARMED.store(true, Ordering::SeqCst);
        let signal = SIGNAL.load(Ordering::SeqCst);
        if signal != 0
            && !ACTED.load(Ordering::SeqCst)
            && INSTALLED_HANDLERS.load(Ordering::SeqCst)
            && !std::thread::panicking()
        {
            die_by(signal as i32);
        }
    }
}

/// Ends the process by `signal`, after flushing the standard streams: its
/// default action restored and the signal raised again, so that the parent
/// sees the process die of it (a shell stops a loop; `$?` is 128 + the
/// signal). Should the signal not end it (ignored by whoever started the
/// process), it exits with [`exit_code`].
pub fn die_by(signal: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    let _ = signal_hook::low_level::emulate_default_handler(signal);
    std::process::exit(i32::from(exit_code(signal)))
}

/// The signal whose [`exit_code`] `code` is (SIGINT for 130, SIGTERM for
/// 143), if it is one of those this module handles.
pub fn signal_of_exit_code(code: u8) -> Option<i32> {
    [SIGINT, SIGTERM]
        .into_iter()
        .find(|&signal| exit_code(signal) == code)
}

/// The signal received since the handlers were installed, deferred or
/// not.
pub fn received() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal as i32),
    }
}

/// Runs `work` with a flag that a first signal (SIGINT, SIGTERM) sets,
/// looked for every 20 ms by a watcher thread, and acknowledged: the work
/// stops when it sees the flag and returns what it has, and the process
/// does not end at the signal (the caller says it was interrupted and
/// exits with the signal's code). A second signal still ends it at once.
pub fn stop_on_signal<R>(work: impl FnOnce(&AtomicBool) -> R) -> R {
    let stop = AtomicBool::new(false);
    let finished = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let _hold = Hold::new();
        scope.spawn(|| {
            while !finished.load(Ordering::SeqCst) {
                if received().is_some() {
                    acknowledge();
                    stop.store(true, Ordering::SeqCst);
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        let result = work(&stop);
        finished.store(true, Ordering::SeqCst);
        result
    })
}

/// Keeps a first signal from runs (`requested` says none) until `false`
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
    ACTED.store(false, Ordering::SeqCst);
}

/// Records `signal` as if it had been received (for tests).
pub fn simulate(signal: i32) {
    SIGNAL.store(usize::try_from(signal).unwrap_or(0), Ordering::SeqCst);
    RECEIVED.store(true, Ordering::SeqCst);
}
