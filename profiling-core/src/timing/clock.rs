//! The clock every timing reads: nanoseconds since a process-wide origin
//! (the first reading), on the host's monotonic timeline.
//!
//! Where the kernel says the CPU's time-stamp counter is sound (the `tsc`
//! clocksource, or the `constant_tsc` and `nonstop_tsc` flags), the clock
//! is the counter, about 10 ns a reading where `Instant` takes about 25.
//! Its scale to nanoseconds is the ratio of two (counter, `CLOCK_MONOTONIC`)
//! pairs: one taken with the first reading (the origin), one when a reading
//! is first turned into nanoseconds, at least [`SCALE_WINDOW_NS`] later (if
//! that first need comes sooner, it waits out the rest of the window). Each
//! pair is the tightest of a few brackets of `CLOCK_MONOTONIC` between two
//! counter reads, so the scale is exact to about ten parts in a million at
//! worst (measured: 0.1 to 10), 10 ns on a millisecond's range. Nothing is
//! calibrated in a loop at start-up, and a run that lasts past the window
//! before it converts pays nothing for it.
//!
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

/// The least time between the two (counter, monotonic) pairs whose ratio
/// scales the counter to nanoseconds.
pub const SCALE_WINDOW_NS: u64 = 1_000_000;

enum Source {
    /// The counter: `origin` is the first pair, the scale is set from a
    /// second pair when first needed.
    Counter {
        origin: Pair,
        scale: OnceLock<Ratio>,
        why: String,
    },
    Instant {
        origin: Instant,
        why: String,
    },
}

/// A counter reading and the monotonic instant it was taken at.
#[derive(Clone, Copy)]
struct Pair {
    ticks: u64,
    instant: Instant,
}

impl Pair {
    /// The tightest of a few brackets `rdtsc; clock_gettime; rdtsc`, the
    /// counter taken as the bracket's middle.
    #[cfg(target_arch = "x86_64")]
    fn read() -> Pair {
        let mut best: Option<(u64, Pair)> = None;
        for _ in 0..16 {
            // SAFETY: `rdtsc` has no preconditions on x86_64.
            let before = unsafe { std::arch::x86_64::_rdtsc() };
            let instant = Instant::now();
            let after = unsafe { std::arch::x86_64::_rdtsc() };
            let width = after.wrapping_sub(before);
            if after >= before && best.is_none_or(|(narrowest, _)| width < narrowest) {
                let ticks = before + width / 2;
                best = Some((width, Pair { ticks, instant }));
            }
        }
        best.map(|(_, pair)| pair).unwrap_or_else(|| Pair {
            ticks: 0,
            instant: Instant::now(),
        })
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn read() -> Pair {
        Pair {
            ticks: 0,
            instant: Instant::now(),
        }
    }
}

/// Nanoseconds per tick as a 32.32 fixed-point number.
#[derive(Clone, Copy)]
struct Ratio {
    per_tick: u64,
}

impl Ratio {
    /// The ratio of the spans between two pairs, waiting until they are at
    /// least [`SCALE_WINDOW_NS`] apart.
    fn between(origin: Pair) -> Ratio {
        let window = std::time::Duration::from_nanos(SCALE_WINDOW_NS);
        while origin.instant.elapsed() < window {
            std::hint::spin_loop();
        }
        let end = Pair::read();
        let nanos = (end.instant - origin.instant).as_nanos();
        let ticks = u128::from(end.ticks.saturating_sub(origin.ticks).max(1));
        let per_tick = ((nanos << 32) + ticks / 2) / ticks;
        Ratio {
            per_tick: u64::try_from(per_tick).unwrap_or(u64::MAX),
        }
    }

    #[inline]
    fn nanos(self, ticks: u64) -> u64 {
        u64::try_from((u128::from(ticks) * u128::from(self.per_tick)) >> 32).unwrap_or(u64::MAX)
    }
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
        let origin = Pair::read();
        TICKS_ARE_COUNTER.store(true, Ordering::Release);
        Source::Counter {
            origin,
            scale: OnceLock::new(),
            why: sound,
        }
    }
}

/// Takes the clock's origin now: the process's first reading. A program
/// calls it first thing, so that the scale's window runs while it starts
/// up rather than when it first needs nanoseconds.
pub fn start() {
    let _ = source();
}

/// Nanoseconds since the process's timing origin (its first clock read).
#[inline]
pub fn now_ns() -> u64 {
    match source() {
        Source::Counter { .. } => ticks_ns(ticks()),
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
        // SAFETY: `rdtsc` has no preconditions on x86_64.
        return unsafe { std::arch::x86_64::_rdtsc() };
    }
    ticks_chosen()
}

/// [`ticks`] before the clock is chosen, or where it is `Instant`.
#[cold]
#[inline(never)]
fn ticks_chosen() -> u64 {
    match source() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `rdtsc` has no preconditions on x86_64.
        Source::Counter { .. } => unsafe { std::arch::x86_64::_rdtsc() },
        #[cfg(not(target_arch = "x86_64"))]
        Source::Counter { .. } => unreachable!("the counter is chosen on x86_64 only"),
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
    counter: Option<(Ratio, u64)>,
}

impl Scale {
    /// The scale, set on the first call where the clock is the counter
    /// (waiting out the rest of [`SCALE_WINDOW_NS`] since the origin).
    pub fn get() -> Scale {
        Scale {
            counter: match source() {
                Source::Counter { origin, scale, .. } => {
                    Some((*scale.get_or_init(|| Ratio::between(*origin)), origin.ticks))
                }
                Source::Instant { .. } => None,
            },
        }
    }

    /// [`ticks_ns`]: readings before the origin (none are taken) read 0.
    #[inline]
    pub fn reading(self, ticks: u64) -> u64 {
        match self.counter {
            Some((ratio, origin)) => ratio.nanos(ticks.saturating_sub(origin)),
            None => ticks,
        }
    }

    /// [`span_ns`].
    #[inline]
    pub fn span(self, span: u64) -> u64 {
        match self.counter {
            Some((ratio, _)) => ratio.nanos(span),
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
            "time-stamp counter (rdtsc), scaled by two readings of CLOCK_MONOTONIC at least {} ms apart: {why}",
            SCALE_WINDOW_NS / 1_000_000
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
