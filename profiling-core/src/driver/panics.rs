//! Panics in target code become errors of the call that panicked.
//!
//! Every target call runs inside `catch_unwind` (free when nothing panics);
//! the panic hook remembers where a panic happened and, unless
//! `RUST_BACKTRACE` asks for the usual report, stays quiet about panics the
//! runner catches, so the user sees one line naming the call, not a trace.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    static GUARDED: Cell<bool> = const { Cell::new(false) };
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

static INSTALL: Once = Once::new();

/// Installs the hook (once per process). Panics outside target calls keep
/// the default report.
pub fn install_hook() {
    INSTALL.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let location = info
                .location()
                .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
            LOCATION.with(|cell| *cell.borrow_mut() = location);
            let wants_backtrace = std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0");
            if !GUARDED.with(Cell::get) || wants_backtrace {
                default(info);
            }
        }));
    });
}

/// A panic caught in a target call.
#[derive(Debug, thiserror::Error)]
#[error("panicked{}: {message}", .location.as_ref().map(|l| format!(" at {l}")).unwrap_or_default())]
pub(crate) struct Panicked {
    pub message: String,
    pub location: Option<String>,
}

/// Runs `call`, turning a panic into an error.
#[inline(always)]
pub(crate) fn guard<R>(call: impl FnOnce() -> anyhow::Result<R>) -> anyhow::Result<R> {
    let was_guarded = GUARDED.with(|g| g.replace(true));
    let result = panic::catch_unwind(AssertUnwindSafe(call));
    GUARDED.with(|g| g.set(was_guarded));
    match result {
        Ok(result) => result,
        Err(payload) => Err(Panicked {
            // One line: multi-line messages (assert_eq!'s) are joined.
            message: message(&payload)
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join("; "),
            location: LOCATION.with(|cell| cell.borrow_mut().take()),
        }
        .into()),
    }
}

/// The text of a panic payload.
pub(crate) fn message(payload: &Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-text payload".to_owned())
}
