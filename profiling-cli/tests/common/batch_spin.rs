//! `batch-spin`: a test target that takes batches and busy-waits a fixed
//! time per record of each, so that a call's time is proportional to the
//! batch size and the time per record is the same at every batch size.
//! It counts its own `prepare` and `prepare_batch` calls and reports them
//! in every output's summary.
//!
//! A test binary registers it with `#[path = "common/batch_spin.rs"] mod
//! batch_spin;`.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use profiling_core::prelude::*;
use serde_yaml::Value;

/// The target's name.
pub const NAME: &str = "batch-spin";

/// Busy-waits `per_record_us` (`target.parameters`, default 200) for each
/// record of a batch, inside the range `work`.
pub struct BatchSpin {
    per_record: Duration,
    prepare_calls: u64,
    prepare_batch_calls: u64,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Parameters {
    #[serde(default = "per_record_default")]
    per_record_us: u64,
}

fn per_record_default() -> u64 {
    200
}

fn batch_spin() -> anyhow::Result<BatchSpin> {
    let parameters: Parameters = profiling_core::target::parameters()?;
    Ok(BatchSpin {
        per_record: Duration::from_micros(parameters.per_record_us),
        prepare_calls: 0,
        prepare_batch_calls: 0,
    })
}

/// Busy-waits `duration` on this thread.
pub fn spin_for(duration: Duration) {
    let started = Instant::now();
    while started.elapsed() < duration {
        std::hint::spin_loop();
    }
}

#[profile_target(name = "batch-spin", factory = batch_spin)]
impl ProfileTarget for BatchSpin {
    /// The records in the batch.
    type Prepared = u32;
    type Output = u32;

    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<u32> {
        self.prepare_calls += 1;
        Ok(1)
    }

    fn prepare_batch(&mut self, records: &[DataRecord], _device: Device) -> anyhow::Result<u32> {
        self.prepare_batch_calls += 1;
        Ok(records.len() as u32)
    }

    fn run(&mut self, records: &u32) -> anyhow::Result<u32> {
        let _range = profiling_range("work");
        spin_for(self.per_record * *records);
        Ok(*records)
    }

    /// `records` in the output's batch, and the calls of `prepare` and
    /// `prepare_batch` so far.
    fn summarize(&self, records: &u32) -> Summary {
        Summary::from([
            ("records".to_owned(), Value::from(*records)),
            ("prepare_calls".to_owned(), Value::from(self.prepare_calls)),
            (
                "prepare_batch_calls".to_owned(),
                Value::from(self.prepare_batch_calls),
            ),
        ])
    }
}
