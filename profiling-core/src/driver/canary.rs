//! The machine-speed canary: two fixed micro-kernels timed just before a
//! capture opens and just after it closes (and, in a paired run, between
//! some of its block pairs), so that a comparison can tell a machine that
//! was slower during one run from code that is.
//!
//! A thread slowed by other processes streaming memory stays on its CPU:
//! the time it was off the CPU says nothing of it. The memory kernel reads
//! one word of every cache line of a 64 MiB buffer (four times a 16 MiB
//! last-level cache), so its time is the memory's; the compute kernel is a
//! chain of dependent integer steps, so its time is the core's. Each is
//! the fastest of a few tries (the least disturbed), and both together
//! take about 60 ms on a two-core virtual machine.
//!
//! That is more than a short run takes in all: a run reads the canary
//! only when its warmup says the run will last [`WORTH_READING_NS`] or
//! more ([`worth_reading`]), so that the readings are a small share of it;
//! the manifest says why when it was not read. A paired run always reads
//! it: it is a comparison, and long.

use std::time::Instant;

/// Bytes of the memory kernel's buffer: 64 MiB.
pub const MEMORY_BYTES: usize = 64 << 20;
/// Steps of the compute kernel: about a quarter of a millisecond.
pub const COMPUTE_STEPS: u64 = 200_000;
/// Tries of each kernel; the fastest counts.
const TRIES: usize = 3;

/// One reading of both kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Canary {
    /// The memory kernel's time, nanoseconds.
    pub memory_ns: u64,
    /// The compute kernel's time, nanoseconds.
    pub compute_ns: u64,
}

/// The canary read before the capture and after it, and in a paired run
/// between some of its block pairs ([`between_blocks`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Canaries {
    pub before: Canary,
    pub after: Canary,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub between: Vec<Canary>,
}

impl Canaries {
    /// The mean of the two readings of each kernel: memory, compute.
    pub fn mean_ns(&self) -> (f64, f64) {
        (
            (self.before.memory_ns + self.after.memory_ns) as f64 / 2.0,
            (self.before.compute_ns + self.after.compute_ns) as f64 / 2.0,
        )
    }
}

/// Readings between a paired run's block pairs at most: each takes about
/// 40 ms, outside every pass.
pub const BETWEEN_MOST: usize = 8;

/// After which of a paired run's `blocks` (their indices, in the order
/// they run; two blocks, one of each side, make a pair) the canary is
/// read: at most [`BETWEEN_MOST`] pair boundaries, spread evenly, none
/// after the last pair (the closing reading follows it). A reading fills
/// the caches with its own buffer, so the block after it starts cold:
/// the boundaries chosen are followed by as many pairs that the base
/// opens as pairs the candidate opens (pairs alternate which side runs
/// first).
pub fn between_blocks(blocks: usize) -> Vec<usize> {
    let pairs = blocks / 2;
    // An even count, so that both sides follow a reading equally often.
    let count = pairs.saturating_sub(1).min(BETWEEN_MOST) & !1;
    let mut after_pairs: Vec<usize> = Vec::with_capacity(count);
    for k in 1..=count {
        let mut boundary = (k * pairs).div_ceil(count + 1).clamp(1, pairs - 1);
        // Boundaries alternate in parity: the pairs after them alternate
        // in which side opens them.
        if boundary % 2 != k % 2 {
            boundary = if boundary < pairs - 1 {
                boundary + 1
            } else {
                boundary - 1
            };
        }
        if after_pairs.last().is_none_or(|&last| boundary > last) {
            after_pairs.push(boundary);
        }
    }
    // After `b` pairs: after block 2b - 1.
    after_pairs.into_iter().map(|b| 2 * b - 1).collect()
}

/// How long a run's warmup and capture together must be expected to take
/// for the canary to be read before and after its capture: two readings
/// (about 120 ms on a two-core virtual machine) are then at most a
/// sixteenth of the run.
pub const WORTH_READING_NS: u64 = 2_000_000_000;

/// Whether a run reads the canary around its capture, from its warmup:
/// `warmup_ns` for `warmup_passes` passes, and `iterations` measured
/// passes to come, each expected to take what a warmup pass took on
/// average. `Err` says why not, for the manifest.
pub fn worth_reading(warmup_ns: u64, warmup_passes: u32, iterations: u32) -> Result<(), String> {
    if warmup_passes == 0 {
        return Err(format!(
            "not read: without a warmup pass, nothing said how long the capture would take (it is read for runs expected to take {} s or more)",
            WORTH_READING_NS / 1_000_000_000
        ));
    }
    let capture_ns = (warmup_ns / u64::from(warmup_passes)).saturating_mul(u64::from(iterations));
    let run_ns = warmup_ns.saturating_add(capture_ns);
    if run_ns >= WORTH_READING_NS {
        Ok(())
    } else {
        Err(format!(
            "not read: the warmup and capture were expected to take {:.0} ms, and the canary (about 120 ms) is read for runs of {} s or more",
            run_ns as f64 / 1e6,
            WORTH_READING_NS / 1_000_000_000
        ))
    }
}

/// Reads both kernels now.
pub fn read() -> Canary {
    Canary {
        memory_ns: fastest(|| {
            let buffer = vec![0x5555_5555_u64; MEMORY_BYTES / 8];
            // The pages mapped and written before the timed reads.
            std::hint::black_box(&buffer);
            let timed = |buffer: &[u64]| {
                let started = Instant::now();
                std::hint::black_box(stream(std::hint::black_box(buffer)));
                started.elapsed()
            };
            (0..TRIES).map(|_| timed(&buffer)).min().unwrap_or_default()
        }),
        compute_ns: fastest(|| {
            (0..TRIES)
                .map(|_| {
                    let started = Instant::now();
                    std::hint::black_box(chain(COMPUTE_STEPS, 7));
                    started.elapsed()
                })
                .min()
                .unwrap_or_default()
        }),
    }
}

fn fastest(kernel: impl FnOnce() -> std::time::Duration) -> u64 {
    u64::try_from(kernel().as_nanos()).unwrap_or(u64::MAX)
}

/// The sum of one word of every 64 bytes (a cache line) of `buffer`: the
/// memory kernel, which the built-in `memory-work` target runs too.
#[inline(never)]
pub fn stream(buffer: &[u64]) -> u64 {
    buffer
        .iter()
        .step_by(8)
        .fold(0u64, |sum, &word| sum.wrapping_add(word))
}

/// `steps` dependent xorshift-multiply steps from `start`; returns where
/// it ends: the compute kernel, which the built-in `cpu-work` target runs
/// too.
#[inline(never)]
pub fn chain(steps: u64, start: u64) -> u64 {
    let mut x = start | 1;
    for _ in 0..std::hint::black_box(steps) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_between_blocks_are_few_spread_and_balanced_between_the_sides() {
        // 25 pairs (50 blocks): 8 readings, each after a whole pair.
        let after = between_blocks(50);
        assert_eq!(after.len(), BETWEEN_MOST, "{after:?}");
        assert!(after.iter().all(|b| b % 2 == 1 && *b < 49), "{after:?}");
        assert!(after.windows(2).all(|w| w[0] < w[1]), "{after:?}");
        // The pairs after them: half opened by one side, half by the other.
        let pairs_after: Vec<usize> = after.iter().map(|b| b.div_ceil(2)).collect();
        let even = pairs_after.iter().filter(|p| *p % 2 == 0).count();
        assert_eq!(even * 2, pairs_after.len(), "{pairs_after:?}");
        // Spread over the run, not bunched at one end.
        assert!(
            pairs_after[0] <= 4 && *pairs_after.last().unwrap() >= 20,
            "{pairs_after:?}"
        );
        // Too few pairs for a reading between them, or for an even count.
        assert!(between_blocks(2).is_empty());
        assert!(between_blocks(4).is_empty());
        assert_eq!(between_blocks(6).len(), 2);
        assert!(between_blocks(0).is_empty());
    }

    #[test]
    fn the_canary_is_read_for_runs_expected_to_last_two_seconds_or_more() {
        // 10 warmup passes of 100 ms, 10 measured to come: 2 s.
        assert_eq!(worth_reading(1_000_000_000, 10, 10), Ok(()));
        // One pass of 1 s, one to come.
        assert_eq!(worth_reading(1_000_000_000, 1, 1), Ok(()));
        // A long warmup alone is enough.
        assert_eq!(worth_reading(2_000_000_000, 2, 0), Ok(()));
        // Just short: 1 ms per pass, 1 warmup and 1,998 measured.
        let short = worth_reading(1_000_000, 1, 1_998).unwrap_err();
        assert!(short.contains("expected to take 1999 ms"), "{short}");
        assert!(short.starts_with("not read: "), "{short}");
        assert_eq!(worth_reading(1_000_000, 1, 1_999), Ok(()));
        // No warmup: no estimate.
        let blind = worth_reading(0, 0, 1_000_000).unwrap_err();
        assert!(blind.contains("without a warmup pass"), "{blind}");
        // Saturating, not wrapping.
        assert_eq!(worth_reading(u64::MAX, 1, u32::MAX), Ok(()));
    }

    #[test]
    fn both_kernels_take_time_and_the_mean_is_of_both_readings() {
        let canary = read();
        assert!(canary.memory_ns > 0 && canary.compute_ns > 0, "{canary:?}");
        let canaries = Canaries {
            before: Canary {
                memory_ns: 100,
                compute_ns: 10,
            },
            after: Canary {
                memory_ns: 300,
                compute_ns: 30,
            },
            between: Vec::new(),
        };
        assert_eq!(canaries.mean_ns(), (200.0, 20.0));
    }
}
