//! The clock every timing reads: nanoseconds since a process-wide origin
//! (the first reading), on the host's monotonic timeline.
//!
//! Where the kernel says the CPU's time-stamp counter is sound (the `tsc`
//! clocksource, or the `constant_tsc` and `nonstop_tsc` flags), the clock
//! is the counter read through `quanta`, converted to nanoseconds with a
//! calibration against `CLOCK_MONOTONIC` made on the first reading, before
//! any capture opens: about 10 ns a reading where `Instant` takes about 25.
//! Elsewhere, or with `PROFILING_CLOCK=instant` in the environment, it is
//! `std::time::Instant`. Either way, one reading is one call of
//! [`now_ns`] (or, on the measured paths, of [`ticks`], turned into
//! nanoseconds later), and the manifest's `timings.timer` says which clock
//! it was.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// The environment variable that forces `std::time::Instant`.
pub const CLOCK_ENV: &str = "PROFILING_CLOCK";

enum Source {
    /// The counter and its calibration; `origin` is the first raw reading.
    Counter {
        clock: quanta::Clock,
        origin: u64,
        why: String,
    },
    Instant {
        origin: Instant,
        why: String,
    },
}

fn source() -> &'static Source {
    static SOURCE: OnceLock<Source> = OnceLock::new();
    SOURCE.get_or_init(Source::choose)
}

/// True once the clock is chosen and is the counter: [`ticks`] then reads
/// it inline.
static TICKS_ARE_COUNTER: AtomicBool = AtomicBool::new(false);

impl Source {
    fn choose() -> Source {
        let instant = |why: String| Source::Instant {
            origin: Instant::now(),
            why,
        };
        if std::env::var(CLOCK_ENV).is_ok_and(|value| value == "instant") {
            return instant(format!("{CLOCK_ENV}=instant"));
        }
        let Some(sound) = kernel_says_tsc_is_sound() else {
            return instant(
                "the kernel does not report an invariant time-stamp counter".to_owned(),
            );
        };
        // Calibrates against CLOCK_MONOTONIC (under a millisecond).
        let clock = quanta::Clock::new();
        if !reads_the_counter(&clock) {
            return instant(
                "quanta does not use the time-stamp counter here (no invariant TSC in CPUID)"
                    .to_owned(),
            );
        }
        let origin = clock.raw();
        TICKS_ARE_COUNTER.store(true, Ordering::Release);
        Source::Counter {
            clock,
            origin,
            why: sound,
        }
    }
}

/// Nanoseconds since the process's timing origin (its first clock read).
#[inline]
pub fn now_ns() -> u64 {
    match source() {
        Source::Counter { clock, origin, .. } => clock.delta_as_nanos(*origin, clock.raw()),
        Source::Instant { origin, .. } => {
            u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
        }
    }
}

/// A reading of the clock in its own units, for the paths that read it
/// between a measured pass's calls and inside recorded ranges: counter
/// ticks (one `rdtsc`, inlined) where the clock is the counter, else
/// nanoseconds since the origin. Spans between two readings become
/// nanoseconds with [`span_ns`], readings with [`ticks_ns`], later,
/// outside what is timed; they agree with [`now_ns`] to the nanosecond.
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if TICKS_ARE_COUNTER.load(Ordering::Relaxed) {
        // SAFETY: `rdtsc` has no preconditions on x86_64; quanta reads the
        // counter the same way (checked when the clock was chosen).
        return unsafe { std::arch::x86_64::_rdtsc() };
    }
    ticks_chosen()
}

/// [`ticks`] before the clock is chosen, or where it is `Instant`.
#[cold]
#[inline(never)]
fn ticks_chosen() -> u64 {
    match source() {
        Source::Counter { clock, .. } => clock.raw(),
        Source::Instant { .. } => now_ns(),
    }
}

/// The nanoseconds between two readings of [`ticks`] `span` apart.
#[inline]
pub fn span_ns(span: u64) -> u64 {
    Scale::get().span(span)
}

/// A reading of [`ticks`] as nanoseconds since the origin: what [`now_ns`]
/// would have read at that moment.
#[inline]
pub fn ticks_ns(ticks: u64) -> u64 {
    Scale::get().reading(ticks)
}

/// [`ticks_ns`] of every reading in `readings`, in place.
pub fn readings_to_ns<'a>(readings: impl IntoIterator<Item = &'a mut u64>) {
    let scale = Scale::get();
    for reading in readings {
        *reading = scale.reading(*reading);
    }
}

/// [`ticks_ns`] and [`span_ns`] with the clock looked up once, for many
/// readings.
#[derive(Clone, Copy)]
pub struct Scale {
    counter: Option<(&'static quanta::Clock, u64)>,
}

impl Scale {
    pub fn get() -> Scale {
        Scale {
            counter: match source() {
                Source::Counter { clock, origin, .. } => Some((clock, *origin)),
                Source::Instant { .. } => None,
            },
        }
    }

    /// [`ticks_ns`].
    #[inline]
    pub fn reading(self, ticks: u64) -> u64 {
        match self.counter {
            Some((clock, origin)) => clock.delta_as_nanos(origin, ticks),
            None => ticks,
        }
    }

    /// [`span_ns`].
    #[inline]
    pub fn span(self, span: u64) -> u64 {
        match self.counter {
            Some((clock, _)) => clock.delta_as_nanos(0, span),
            None => span,
        }
    }
}

/// What the kernel says of the time-stamp counter, when it says it is
/// constant and invariant.
#[cfg(target_arch = "x86_64")]
fn kernel_says_tsc_is_sound() -> Option<String> {
    let clocksource =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default();
    if clocksource.trim() == "tsc" {
        return Some("the kernel's clocksource is tsc".to_owned());
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = cpuinfo
        .lines()
        .find(|line| line.starts_with("flags"))
        .unwrap_or_default();
    let has = |flag: &str| flags.split_whitespace().any(|f| f == flag);
    (has("constant_tsc") && has("nonstop_tsc"))
        .then(|| "the CPU flags constant_tsc and nonstop_tsc".to_owned())
}

#[cfg(not(target_arch = "x86_64"))]
fn kernel_says_tsc_is_sound() -> Option<String> {
    None
}

/// True when `clock` reads the time-stamp counter itself (quanta falls
/// back to the monotonic clock without an invariant TSC in CPUID): its
/// reading lies between two reads of the counter.
#[cfg(target_arch = "x86_64")]
fn reads_the_counter(clock: &quanta::Clock) -> bool {
    // SAFETY: `rdtsc` has no preconditions on x86_64.
    let before = unsafe { std::arch::x86_64::_rdtsc() };
    let raw = clock.raw();
    let after = unsafe { std::arch::x86_64::_rdtsc() };
    before <= raw && raw <= after
}

#[cfg(not(target_arch = "x86_64"))]
fn reads_the_counter(_clock: &quanta::Clock) -> bool {
    false
}

/// What the clock is and what reading it costs, measured at start-up and
/// reported as is: timings are never corrected by it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerInfo {
    pub source: String,
    /// The smallest step between two readings seen.
    pub resolution_ns: u64,
    /// The mean cost of one reading.
    pub overhead_ns: f64,
}

impl TimerInfo {
    /// Measures the clock: a few thousand back-to-back readings.
    pub fn measure() -> TimerInfo {
        const READS: u32 = 2_000;
        let mut resolution = u64::MAX;
        let mut previous = now_ns();
        let started = now_ns();
        for _ in 0..READS {
            let now = now_ns();
            if now > previous {
                resolution = resolution.min(now - previous);
            }
            previous = now;
        }
        let overhead = (previous - started) as f64 / f64::from(READS);
        TimerInfo {
            source: describe(),
            resolution_ns: if resolution == u64::MAX {
                0
            } else {
                resolution
            },
            overhead_ns: (overhead * 10.0).round() / 10.0,
        }
    }
}

/// Which clock [`now_ns`] reads, and why.
pub fn describe() -> String {
    match source() {
        Source::Counter { why, .. } => format!(
            "time-stamp counter (rdtsc, through quanta), calibrated against CLOCK_MONOTONIC: {why}"
        ),
        Source::Instant { why, .. } => {
            format!("std::time::Instant (clock_gettime CLOCK_MONOTONIC): {why}")
        }
    }
}

/// True when [`now_ns`] reads the time-stamp counter.
pub fn is_counter() -> bool {
    matches!(source(), Source::Counter { .. })
}
