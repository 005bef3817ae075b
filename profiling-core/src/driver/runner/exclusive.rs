//! One run at a time in a process.
//!
//! The recorder is the process's: while a capture is open, every range any
//! thread opens is recorded into it, since a target's own worker threads
//! are part of what it measures. A second run in the same process (a test
//! harness running several, a program driving two sessions) would put its
//! construction, preparation and warmup ranges into the first run's
//! capture, and its registration would switch the first one's off. So the
//! runner's entry points hold this lock from the target's construction to
//! its last pass: a second run waits for the first to finish.
//!
//! The lock is reentrant on its thread: a paired run holds it once per
//! side and once for the passes. Its guard stays on the thread that took
//! it (it is neither `Send` nor `Sync`).

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::{Condvar, Mutex};

/// True while some thread holds the lock.
static HELD: Mutex<bool> = Mutex::new(false);
/// Signalled when the lock is let go.
static RELEASED: Condvar = Condvar::new();

thread_local! {
    /// How many guards this thread holds.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Holds the process's one run until dropped.
pub(crate) struct Exclusive {
    // Not Send: the guard is let go on the thread that took it.
    _thread: PhantomData<*const ()>,
}

/// Waits until no other thread is running a target, then holds the run
/// for this thread. A thread that already holds it takes it again at
/// once.
pub(crate) fn exclusive() -> Exclusive {
    DEPTH.with(|depth| {
        if depth.get() == 0 {
            let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
            while *held {
                held = RELEASED.wait(held).unwrap_or_else(|e| e.into_inner());
            }
            *held = true;
        }
        depth.set(depth.get() + 1);
    });
    Exclusive {
        _thread: PhantomData,
    }
}

impl Drop for Exclusive {
    fn drop(&mut self) {
        DEPTH.with(|depth| {
            depth.set(depth.get() - 1);
            if depth.get() == 0 {
                *HELD.lock().unwrap_or_else(|e| e.into_inner()) = false;
                RELEASED.notify_one();
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::mpsc;

    #[test]
    fn a_thread_that_holds_the_run_takes_it_again() {
        let outer = exclusive();
        let inner = exclusive();
        drop(outer);
        drop(inner);
        // Let go: another thread takes it.
        std::thread::spawn(|| drop(exclusive())).join().unwrap();
    }

    #[test]
    fn a_second_thread_waits_until_the_first_lets_go() {
        static INSIDE: AtomicU32 = AtomicU32::new(0);
        let held = exclusive();
        let _nested = exclusive();
        INSIDE.store(1, Ordering::SeqCst);
        let (asked, asking) = mpsc::channel();
        let waiter = std::thread::spawn(move || {
            asked.send(()).unwrap();
            let _run = exclusive();
            // The first thread let go of both of its guards before this.
            INSIDE.load(Ordering::SeqCst)
        });
        asking.recv().unwrap();
        INSIDE.store(2, Ordering::SeqCst);
        drop(held);
        INSIDE.store(3, Ordering::SeqCst);
        drop(_nested);
        assert_eq!(waiter.join().unwrap(), 3);
    }
}
