//! The inputs of a pass, in each of the ways a run gets them: records
//! prepared once, records or batches read once and prepared in each pass,
//! or read afresh in each pass.

use super::outcome::{CallCounts, Failure, Phase};
use crate::data::{DataError, DataRecord, DataSource};
use crate::device::Device;
use crate::driver::config::Batches;
use crate::driver::panics::guard;
use crate::target::ProfileTarget;

/// The inputs of a pass, in each of the three ways a run can get them, one
/// record or one batch per input.
pub(super) trait Inputs<T: ProfileTarget> {
    /// Target calls in a pass.
    fn len(&self) -> usize;
    /// Prepares (when the pass does) and runs input `index`.
    fn call(
        &mut self,
        target: &mut T,
        index: usize,
        calls: &mut CallCounts,
    ) -> Result<T::Output, Failure>;
    /// The record of input `index`; of a batch, its first record.
    fn record_id(&self, index: usize) -> &str;
    /// Every record a pass runs, in order.
    fn record_ids(&self) -> Vec<String>;
    /// The batch input `index` is, when inputs are batches.
    fn batch(&self, index: usize) -> Option<u32> {
        let _ = index;
        None
    }
    /// Inputs whose slots (an output, a call's time) are set aside before
    /// the passes: all of them where the records are in memory already; of
    /// a lazily read source, no more than [`LAZY_ROOM`], the rest growing
    /// as its records are read (a source may be far larger than memory).
    fn room(&self) -> usize {
        self.len()
    }
}

/// The inputs of a lazily read source whose slots are set aside before
/// the passes.
pub(super) const LAZY_ROOM: usize = 1 << 16;

/// Eager without `profile_prepare`: prepared once, before the passes, one
/// input per record or per batch.
pub(super) struct Prepared<'r, P> {
    pub(super) prepared: Vec<P>,
    /// The records a pass runs.
    pub(super) records: &'r [DataRecord],
    /// `Some` with `batch_size` > 1: input `i` is batch `i`.
    pub(super) batches: Option<Batches>,
}

impl<T: ProfileTarget> Inputs<T> for Prepared<'_, T::Prepared> {
    fn len(&self) -> usize {
        self.prepared.len()
    }

    #[inline]
    fn call(
        &mut self,
        target: &mut T,
        index: usize,
        calls: &mut CallCounts,
    ) -> Result<T::Output, Failure> {
        calls.run += 1;
        guard(|| target.run(&self.prepared[index])).map_err(|source| match self.batches {
            None => Failure::new(Phase::Run, Some(&self.records[index].id), source),
            Some(batches) => {
                let records = &self.records[batches.range(index)];
                Failure::on_batch(Phase::Run, records, index, source)
            }
        })
    }

    fn record_id(&self, index: usize) -> &str {
        let first = self.batches.map_or(index, |b| b.range(index).start);
        &self.records[first].id
    }

    fn batch(&self, index: usize) -> Option<u32> {
        self.batches.map(|_| index as u32)
    }

    fn record_ids(&self) -> Vec<String> {
        self.records.iter().map(|r| r.id.clone()).collect()
    }
}

/// Eager with `profile_prepare`: every pass prepares each record again.
pub(super) struct EagerRecords<'r> {
    pub(super) records: &'r [DataRecord],
    pub(super) device: Device,
}

impl<T: ProfileTarget> Inputs<T> for EagerRecords<'_> {
    fn len(&self) -> usize {
        self.records.len()
    }

    #[inline]
    fn call(
        &mut self,
        target: &mut T,
        index: usize,
        calls: &mut CallCounts,
    ) -> Result<T::Output, Failure> {
        prepare_and_run(target, &self.records[index], self.device, calls)
    }

    fn record_id(&self, index: usize) -> &str {
        &self.records[index].id
    }

    fn record_ids(&self) -> Vec<String> {
        self.records.iter().map(|r| r.id.clone()).collect()
    }
}

/// Eager with `profile_prepare` and batches: every pass prepares each
/// batch again.
pub(super) struct EagerBatches<'r> {
    /// The records a pass runs.
    pub(super) records: &'r [DataRecord],
    pub(super) batches: Batches,
    pub(super) device: Device,
}

impl<T: ProfileTarget> Inputs<T> for EagerBatches<'_> {
    fn len(&self) -> usize {
        self.batches.batches
    }

    #[inline]
    fn call(
        &mut self,
        target: &mut T,
        index: usize,
        calls: &mut CallCounts,
    ) -> Result<T::Output, Failure> {
        let records = &self.records[self.batches.range(index)];
        prepare_batch_and_run(target, records, index, self.device, calls)
    }

    fn record_id(&self, index: usize) -> &str {
        &self.records[self.batches.range(index).start].id
    }

    fn batch(&self, index: usize) -> Option<u32> {
        Some(index as u32)
    }

    fn record_ids(&self) -> Vec<String> {
        self.records.iter().map(|r| r.id.clone()).collect()
    }
}

/// Lazy: every pass reads each record afresh, then prepares and runs it.
pub(super) struct LazyRecords<'s> {
    pub(super) source: &'s dyn DataSource,
    pub(super) device: Device,
    /// The ids of the records read so far, by index: grown as they are
    /// read, so that memory follows the records the run reaches, not the
    /// source's length.
    pub(super) ids: Vec<String>,
}

/// Sets `ids[index]`, growing `ids` to reach it.
pub(super) fn set_id(ids: &mut Vec<String>, index: usize, id: String) {
    if ids.len() <= index {
        ids.resize(index + 1, String::new());
    }
    ids[index] = id;
}

impl<T: ProfileTarget> Inputs<T> for LazyRecords<'_> {
    fn len(&self) -> usize {
        self.source.len()
    }

    fn call(
        &mut self,
        target: &mut T,
        index: usize,
        calls: &mut CallCounts,
    ) -> Result<T::Output, Failure> {
        let record = self
            .source
            .read(index)
            .map_err(|error: DataError| Failure::new(Phase::Load, None, error.into()))?;
        let output = prepare_and_run(target, &record, self.device, calls);
        set_id(&mut self.ids, index, record.id);
        output
    }

    fn record_id(&self, index: usize) -> &str {
        self.ids.get(index).map_or("", String::as_str)
    }

    fn room(&self) -> usize {
        self.source.len().min(LAZY_ROOM)
    }

    fn record_ids(&self) -> Vec<String> {
        self.ids.clone()
    }
}

/// Lazy with batches: every pass reads each batch's records afresh, then
/// prepares and runs the batch.
pub(super) struct LazyBatches<'s> {
    pub(super) source: &'s dyn DataSource,
    pub(super) batches: Batches,
    pub(super) device: Device,
    /// The records of the batch in progress.
    pub(super) batch: Vec<DataRecord>,
    /// One per record read so far, grown as they are read.
    pub(super) ids: Vec<String>,
}

impl<T: ProfileTarget> Inputs<T> for LazyBatches<'_> {
    fn len(&self) -> usize {
        self.batches.batches
    }

    fn call(
        &mut self,
        target: &mut T,
        index: usize,
        calls: &mut CallCounts,
    ) -> Result<T::Output, Failure> {
        let range = self.batches.range(index);
        self.batch.clear();
        for record in range.clone() {
            let record = self
                .source
                .read(record)
                .map_err(|error: DataError| Failure {
                    batch: Some(index as u32),
                    ..Failure::new(Phase::Load, None, error.into())
                })?;
            self.batch.push(record);
        }
        let output = prepare_batch_and_run(target, &self.batch, index, self.device, calls);
        for (at, record) in range.zip(self.batch.drain(..)) {
            set_id(&mut self.ids, at, record.id);
        }
        output
    }

    fn record_id(&self, index: usize) -> &str {
        let start = self.batches.range(index).start;
        self.ids.get(start).map_or("", String::as_str)
    }

    fn room(&self) -> usize {
        self.batches.batches.min(LAZY_ROOM)
    }

    fn batch(&self, index: usize) -> Option<u32> {
        Some(index as u32)
    }

    fn record_ids(&self) -> Vec<String> {
        self.ids.clone()
    }
}

#[inline]
pub(super) fn prepare_and_run<T: ProfileTarget>(
    target: &mut T,
    record: &DataRecord,
    device: Device,
    calls: &mut CallCounts,
) -> Result<T::Output, Failure> {
    calls.prepare += 1;
    let prepared = guard(|| target.prepare(record, device))
        .map_err(|source| Failure::new(Phase::Prepare, Some(&record.id), source))?;
    calls.run += 1;
    guard(|| target.run(&prepared))
        .map_err(|source| Failure::new(Phase::Run, Some(&record.id), source))
}

#[inline]
pub(super) fn prepare_batch_and_run<T: ProfileTarget>(
    target: &mut T,
    records: &[DataRecord],
    index: usize,
    device: Device,
    calls: &mut CallCounts,
) -> Result<T::Output, Failure> {
    calls.prepare_batch += 1;
    let prepared = guard(|| target.prepare_batch(records, device))
        .map_err(|source| Failure::on_batch(Phase::Prepare, records, index, source))?;
    calls.run += 1;
    guard(|| target.run(&prepared))
        .map_err(|source| Failure::on_batch(Phase::Run, records, index, source))
}
