//! Ctrl-C and SIGTERM: the run stops after the current target call, closes
//! its ranges and writes a manifest that says it was interrupted. A second
//! signal ends the process at once.

use std::sync::atomic::{AtomicI32, Ordering};

static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    // Only async-signal-safe work here: an atomic swap, and `_exit`.
    if SIGNAL.swap(signal, Ordering::SeqCst) != 0 {
        // SAFETY: `_exit` is async-signal-safe; the user asked twice.
        unsafe { libc::_exit(128 + signal) };
    }
}

/// Routes SIGINT and SIGTERM to [`requested`] for the rest of the process.
pub fn install_handlers() -> std::io::Result<()> {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction with a handler and an empty mask is
        // valid; the handler only touches an atomic and calls `_exit`.
        let result = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if result != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The signal received since the handlers were installed, if any.
#[inline]
pub fn requested() -> Option<i32> {
    match SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        signal => Some(signal),
    }
}

/// The conventional exit code after `signal`: 130 for SIGINT, 143 for SIGTERM.
pub fn exit_code(signal: i32) -> u8 {
    (128 + signal).clamp(0, 255) as u8
}

/// Forgets a received signal (for tests that raise one in-process).
pub fn reset() {
    SIGNAL.store(0, Ordering::SeqCst);
}

/// Records `signal` as if it had been received (for tests).
pub fn simulate(signal: i32) {
    SIGNAL.store(signal, Ordering::SeqCst);
}
