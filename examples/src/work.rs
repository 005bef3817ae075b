//! A fixed amount of CPU work, to measure how well this machine resolves
//! a change: `cpu-work` does `rounds` steps of a serial integer chain in
//! the range `work` and `steady_rounds` more in `steady`, nothing else;
//! `memory-work` the same for memory: it reads `kib` KiB a call.
//!
//! With `allocations` above 0, `work` also allocates that many buffers of
//! 1 KiB and frees them: a known change of allocations per pass for
//! `memory: on` to find (`--memory`).
//!
//! The work is a count of dependent steps, not a wait for a clock: a
//! busy-wait on the clock finishes on time however often the thread is
//! preempted, and so hides the very load an experiment wants to see. Each
//! step depends on the one before (no vectorizing, no overlap) and touches
//! no memory, so its time is the core's and nothing else's; 1 % more
//! `rounds` is 1 % more work in `work`. `scripts/ab-experiment` runs it
//! under load to say which differences `compare` and `ab` resolve.
//!
//! ```
//! use profiling_examples::work::chain;
//!
//! // The same steps from the same start, the same end.
//! assert_eq!(chain(1_000, 7), chain(1_000, 7));
//! assert_ne!(chain(1_000, 7), chain(1_001, 7));
//! ```

use profiling_core::prelude::*;
use profiling_core::target::ParameterError;
use serde_yaml::Value;

/// `target.parameters` of `cpu-work`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkParameters {
    /// Steps of the chain in the range `work`.
    #[serde(default = "default_rounds")]
    pub rounds: u64,
    /// Steps in the range `steady`, after `work`.
    #[serde(default = "default_steady_rounds")]
    pub steady_rounds: u64,
    /// Buffers of [`BUFFER_BYTES`] allocated (and freed) in `work` each
    /// call.
    #[serde(default)]
    pub allocations: u64,
}

/// The size of each buffer `allocations` asks for.
pub const BUFFER_BYTES: usize = 1024;

/// About a millisecond of `work` on a 3 GHz core.
fn default_rounds() -> u64 {
    400_000
}

/// A quarter of the default `work`.
fn default_steady_rounds() -> u64 {
    100_000
}

/// `rounds` dependent steps of an xorshift-multiply chain, and one word
/// of every cache line of a buffer read: the machine-speed canary's
/// kernels, the work of `cpu-work` and `memory-work`.
pub use profiling_core::driver::canary::{chain, stream};

/// A fixed amount of CPU work in two ranges: `work` (`rounds` steps)
/// and `steady` (`steady_rounds`).
#[derive(Debug)]
pub struct CpuWork {
    parameters: WorkParameters,
}

fn cpu_work() -> anyhow::Result<CpuWork> {
    let parameters: WorkParameters = profiling_core::target::parameters()?;
    if parameters.rounds == 0 {
        return Err(ParameterError::new("rounds", "must be >= 1, got 0").into());
    }
    Ok(CpuWork { parameters })
}

#[profile_target(name = "cpu-work", factory = cpu_work)]
impl ProfileTarget for CpuWork {
    /// Where the chain starts: from the record's id, so that records differ.
    type Prepared = u64;
    /// Where `work` and `steady` ended.
    type Output = (u64, u64);

    fn prepare(&mut self, record: &DataRecord, _device: Device) -> anyhow::Result<u64> {
        Ok(record
            .id
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325, |hash: u64, byte| {
                (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
            }))
    }

    fn run(&mut self, start: &u64) -> anyhow::Result<(u64, u64)> {
        let work = {
            let _range = profiling_range("work");
            let mut end = chain(self.parameters.rounds, *start);
            for _ in 0..self.parameters.allocations {
                let buffer = std::hint::black_box(vec![end as u8; BUFFER_BYTES]);
                end = end.wrapping_add(u64::from(buffer[BUFFER_BYTES - 1]));
            }
            end
        };
        let steady = {
            let _range = profiling_range("steady");
            chain(self.parameters.steady_rounds, work)
        };
        Ok((work, steady))
    }

    fn summarize(&self, &(work, steady): &(u64, u64)) -> Summary {
        Summary::from([
            ("rounds".to_owned(), Value::from(self.parameters.rounds)),
            (
                "steady_rounds".to_owned(),
                Value::from(self.parameters.steady_rounds),
            ),
            ("work_end".to_owned(), Value::from(format!("{work:016x}"))),
            (
                "steady_end".to_owned(),
                Value::from(format!("{steady:016x}")),
            ),
        ])
    }
}

/// `target.parameters` of `spin-and-sleep`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpinAndSleepParameters {
    /// Steps of the chain in the range `step/spin`.
    #[serde(default = "default_spin_rounds")]
    pub rounds: u64,
    /// Microseconds slept in the range `step/sleep`.
    #[serde(default = "default_sleep_us")]
    pub sleep_us: u64,
}

/// About a quarter of a millisecond on a 3 GHz core.
fn default_spin_rounds() -> u64 {
    100_000
}

fn default_sleep_us() -> u64 {
    500
}

/// Known time on the CPU and known time waiting, in nested ranges: `step`
/// holds `spin` (`rounds` steps of [`chain`]) and then `sleep`
/// (`sleep_us` in `std::thread::sleep`, one `nanosleep` call). Nsight's
/// OS runtime trace puts the sleep, and only it, in `step/sleep` and
/// `step`; its CPU samples put `chain` in `step/spin`.
#[derive(Debug)]
pub struct SpinAndSleep {
    parameters: SpinAndSleepParameters,
}

fn spin_and_sleep() -> anyhow::Result<SpinAndSleep> {
    let parameters: SpinAndSleepParameters = profiling_core::target::parameters()?;
    Ok(SpinAndSleep { parameters })
}

#[profile_target(name = "spin-and-sleep", factory = spin_and_sleep)]
impl ProfileTarget for SpinAndSleep {
    type Prepared = u64;
    type Output = u64;

    fn prepare(&mut self, record: &DataRecord, _device: Device) -> anyhow::Result<u64> {
        Ok(record.id.len() as u64)
    }

    fn run(&mut self, start: &u64) -> anyhow::Result<u64> {
        let _step = profiling_range("step");
        let end = {
            let _range = profiling_range("spin");
            chain(self.parameters.rounds, *start)
        };
        {
            let _range = profiling_range("sleep");
            std::thread::sleep(std::time::Duration::from_micros(self.parameters.sleep_us));
        }
        Ok(end)
    }
}

/// `target.parameters` of `memory-work`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryWorkParameters {
    /// KiB of the buffer streamed in the range `stream`, once a call.
    #[serde(default = "default_stream_kib")]
    pub kib: u64,
}

/// 64 MiB: four times the last-level cache of most servers' cores'
/// share, so that every pass reads from memory.
fn default_stream_kib() -> u64 {
    64 * 1024
}

/// A fixed amount of memory traffic: `stream` reads one word of every
/// cache line of a `kib` KiB buffer, filled once by the factory, so its
/// time is the memory's: a thread slowed by other processes streaming
/// memory stays on its core, where `cpu-work` would not be slowed at all.
/// 1 % more `kib` is 1 % more lines read.
#[derive(Debug)]
pub struct MemoryWork {
    buffer: Vec<u64>,
}

fn memory_work() -> anyhow::Result<MemoryWork> {
    let parameters: MemoryWorkParameters = profiling_core::target::parameters()?;
    if parameters.kib == 0 {
        return Err(ParameterError::new("kib", "must be >= 1, got 0").into());
    }
    let words = usize::try_from(parameters.kib)
        .ok()
        .and_then(|kib| kib.checked_mul(1024 / 8))
        .ok_or_else(|| ParameterError::new("kib", format!("{} is too large", parameters.kib)))?;
    let buffer = (0..words as u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9))
        .collect();
    Ok(MemoryWork { buffer })
}

#[profile_target(name = "memory-work", factory = memory_work)]
impl ProfileTarget for MemoryWork {
    type Prepared = ();
    type Output = u64;

    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }

    fn run(&mut self, _: &()) -> anyhow::Result<u64> {
        let _range = profiling_range("stream");
        Ok(stream(std::hint::black_box(&self.buffer)))
    }

    fn summarize(&self, sum: &u64) -> Summary {
        Summary::from([
            (
                "kib".to_owned(),
                Value::from(self.buffer.len() as u64 * 8 / 1024),
            ),
            ("sum".to_owned(), Value::from(format!("{sum:016x}"))),
        ])
    }
}
