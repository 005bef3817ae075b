//! Ranges that come from outside the recorder: a profiler of its own (ONNX
//! Runtime's) that times what happened inside a recorded range and can only
//! say so once its run is over. Each source registers itself, and is asked
//! to add its ranges to every capture's log when the capture ends, before
//! anything reads the log.

use std::sync::{Mutex, Weak};

use super::log::RangeLog;

/// A source of ranges added after a capture.
pub(crate) trait CaptureHook: Send + Sync {
    /// Adds to `log` what the source recorded during the capture that has
    /// just ended. Runs on the capturing thread, with recording off.
    fn capture_ended(&self, log: &mut RangeLog);
}

static HOOKS: Mutex<Vec<Weak<dyn CaptureHook>>> = Mutex::new(Vec::new());

/// Asks `hook` about every later capture, for as long as it lives.
pub(crate) fn register(hook: Weak<dyn CaptureHook>) {
    let mut hooks = HOOKS.lock().unwrap_or_else(|e| e.into_inner());
    hooks.retain(|h| h.strong_count() > 0);
    hooks.push(hook);
}

/// Lets every live source add its ranges to `log`.
pub(crate) fn capture_ended(log: &mut RangeLog) {
    let live: Vec<_> = {
        let mut hooks = HOOKS.lock().unwrap_or_else(|e| e.into_inner());
        hooks.retain(|h| h.strong_count() > 0);
        hooks.iter().filter_map(Weak::upgrade).collect()
    };
    for hook in live {
        crate::memory::attribution::unattributed(|| hook.capture_ended(log));
    }
}
