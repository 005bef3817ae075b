//! The machine-speed canary: two fixed micro-kernels timed just before a
//! capture opens and just after it closes, so that a comparison can tell
//! a machine that was slower during one run from code that is.
//!
//! A thread slowed by other processes streaming memory stays on its CPU:
//! the time it was off the CPU says nothing of it. The memory kernel reads
//! one word of every cache line of a 64 MiB buffer (four times a 16 MiB
//! last-level cache), so its time is the memory's; the compute kernel is a
//! chain of dependent integer steps, so its time is the core's. Each is
//! the fastest of a few tries (the least disturbed), and both together
//! take about 60 ms on a two-core virtual machine.

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

/// The canary read before the capture and after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Canaries {
    pub before: Canary,
    pub after: Canary,
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
        };
        assert_eq!(canaries.mean_ns(), (200.0, 20.0));
    }
}
