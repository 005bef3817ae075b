//! Eager runs count what `prepare` keeps: a target whose prepared inputs
//! are several times its records is refused, before the rest of the records
//! are prepared, with an error naming both sizes. The prepared size is
//! measured with the crate's counting allocator, installed here as the
//! binary's global allocator, as `profile-cli` installs it.

use profiling_core::data::{
    self, AvailableMemory, DataError, PreparedBytes, RECORD_OVERHEAD_BYTES,
};
use profiling_core::driver::config::{ConfigFile, Overrides};
use profiling_core::driver::runner::{run_target, Pass, Phase, Records, RunPlan};
use profiling_core::memory::CountingAllocator;
use profiling_core::prelude::*;

mod sequential;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Records of 64 KiB of tensor data, each prepared into a buffer `factor`
/// times its size.
struct Expanding {
    factor: usize,
    prepared: usize,
}

impl ProfileTarget for Expanding {
    type Prepared = Vec<f32>;
    type Output = usize;

    fn prepare(&mut self, record: &DataRecord, _device: Device) -> anyhow::Result<Vec<f32>> {
        self.prepared += 1;
        let tensor = record.tensor("tensor")?;
        let mut expanded = Vec::with_capacity(tensor.len() * self.factor);
        for _ in 0..self.factor {
            expanded.extend(tensor.iter().copied());
        }
        Ok(expanded)
    }

    fn prepare_batch(
        &mut self,
        records: &[DataRecord],
        device: Device,
    ) -> anyhow::Result<Vec<f32>> {
        let mut batch = Vec::new();
        for record in records {
            batch.extend(self.prepare(record, device)?);
        }
        Ok(batch)
    }

    fn run(&mut self, prepared: &Vec<f32>) -> anyhow::Result<usize> {
        Ok(prepared.len())
    }
}

const TENSOR_BYTES: u64 = 16384 * 4;
const RECORDS: u64 = 10;
/// Each prepared input is this many copies of its record's tensor.
const FACTOR: usize = 32;

fn plan(available: u64) -> RunPlan {
    batched_plan(available, 1)
}

/// [`plan`] in batches of `batch_size`.
fn batched_plan(available: u64, batch_size: u32) -> RunPlan {
    let config = ConfigFile::parse(
        &format!("target: {{name: expanding}}\ndata_source: {{name: dummy, record_count: 10, tensor_shape: [16384]}}\nbatch_size: {batch_size}\n"),
        None,
    )
    .unwrap()
    .resolve(&Overrides::default())
    .unwrap();
    let source = data::build("dummy", &config.data_source.parameters).unwrap();
    let mut plan = RunPlan::new(config, Records::Eager(source.read_all().unwrap()));
    plan.memory = Some(AvailableMemory::plain(available));
    plan
}

/// What the records of [`plan`] hold by the check's own count.
fn record_bytes() -> u64 {
    let source = data::build(
        "dummy",
        &serde_yaml::from_str("{record_count: 10, tensor_shape: [16384]}").unwrap(),
    )
    .unwrap();
    source
        .read_all()
        .unwrap()
        .iter()
        .map(|r| r.decoded_bytes() as u64 + RECORD_OVERHEAD_BYTES)
        .sum()
}

fn prepared_inputs_several_times_the_records_are_refused_naming_both_sizes() {
    let records = record_bytes();
    assert!(records > RECORDS * (TENSOR_BYTES + RECORD_OVERHEAD_BYTES));
    let each = FACTOR as u64 * TENSOR_BYTES + std::mem::size_of::<Vec<f32>>() as u64;
    // The records alone fit with room to spare; with the inputs they do not.
    let available = 2 * records;
    assert!(each > 4 * records / RECORDS, "several times a record");

    let mut target = Some(Expanding {
        factor: FACTOR,
        prepared: 0,
    });
    let error = run_target(&plan(available), || Ok(target.take().unwrap())).unwrap_err();
    assert_eq!(error.phase, Phase::Prepare);
    assert_eq!(error.pass, Pass::Setup);
    assert_eq!(error.record_id.as_deref(), Some("dummy-0"));
    assert_eq!(error.calls.prepare, 1, "refused before preparing the rest");
    assert_eq!(error.calls.run, 0);

    let refusal = error.source.downcast_ref::<DataError>().unwrap();
    let DataError::TooLargeForMemory {
        needed,
        prepared,
        available: checked,
    } = refusal
    else {
        panic!("expected TooLargeForMemory, got {refusal:?}");
    };
    assert_eq!(
        prepared.as_ref(),
        Some(&PreparedBytes {
            each,
            total: each * RECORDS,
            record_id: "dummy-0".to_owned(),
            batch: None,
        })
    );
    assert_eq!(*needed, records + each * RECORDS);
    assert_eq!(checked.bytes, available);
    assert_eq!(
        refusal.to_string(),
        format!(
            "eager loading would hold about {}: {} of records and {} of prepared inputs ({} each, measured on record `dummy-0`), \
             more than 80% of the {} of memory available, the other 20% being kept for the target's outputs and the rest of the process: \
             use `record_loading: lazy` with `target.profile_prepare: true`, or fewer records (limit/repeat/record_count)",
            data::human_bytes(records + each * RECORDS),
            data::human_bytes(records),
            data::human_bytes(each * RECORDS),
            data::human_bytes(each),
            data::human_bytes(available),
        )
    );
}

/// In batches, the first batch is measured, and the check counts one
/// such input per batch.
fn prepared_batches_are_measured_on_the_first_batch() {
    let records = record_bytes();
    let each = FACTOR as u64 * TENSOR_BYTES;
    let available = 2 * records;
    let mut target = Some(Expanding {
        factor: FACTOR,
        prepared: 0,
    });
    let error = run_target(&batched_plan(available, 5), || Ok(target.take().unwrap())).unwrap_err();
    assert_eq!((error.phase, error.pass), (Phase::Prepare, Pass::Setup));
    assert_eq!((error.calls.prepare_batch, error.batch), (1, Some(0)));
    let Some(DataError::TooLargeForMemory {
        prepared: Some(prepared),
        ..
    }) = error.source.downcast_ref::<DataError>()
    else {
        panic!("expected TooLargeForMemory, got {:?}", error.source);
    };
    assert_eq!(prepared.batch, Some(5));
    // Five records' expansions in one buffer (its growth may round up).
    assert!(prepared.each >= 5 * each, "{prepared:?}");
    assert_eq!(prepared.total, 2 * prepared.each);
    assert!(
        error.source.to_string().contains(&format!(
            "({} a batch, measured on the batch of 5 from record `dummy-0`)",
            data::human_bytes(prepared.each)
        )),
        "{}",
        error.source
    );
}

fn prepared_inputs_that_fit_run_as_before() {
    let records = record_bytes();
    let each = FACTOR as u64 * TENSOR_BYTES + std::mem::size_of::<Vec<f32>>() as u64;
    // Exactly the share allowed: the check passes and every record is prepared.
    let needed = records + each * RECORDS;
    let available = needed * 100 / 80;
    assert_eq!(available * 80 / 100, needed);
    let outcome = run_target(&plan(available), || {
        Ok(Expanding {
            factor: FACTOR,
            prepared: 0,
        })
    })
    .unwrap();
    assert_eq!(outcome.calls.prepare, RECORDS);
    assert_eq!(outcome.completed_iterations, 1);
    // A byte less is refused: the measurement is exact.
    let error = run_target(&plan(available - 1), || {
        Ok(Expanding {
            factor: FACTOR,
            prepared: 0,
        })
    })
    .unwrap_err();
    assert!(matches!(
        error.source.downcast_ref::<DataError>(),
        Some(DataError::TooLargeForMemory { .. })
    ));
}

fn without_a_memory_budget_nothing_is_measured_or_refused() {
    let mut plan = plan(0);
    plan.memory = None;
    let outcome = run_target(&plan, || {
        Ok(Expanding {
            factor: FACTOR,
            prepared: 0,
        })
    })
    .unwrap();
    assert_eq!(outcome.calls.prepare, RECORDS);
}

/// A dummy source that counts the records read.
struct CountingReads {
    inner: Box<dyn data::DataSource>,
    reads: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl data::RecordSource for CountingReads {
    type Parameters = ();
    fn open(_: ()) -> anyhow::Result<Self> {
        anyhow::bail!("opened by the test, not by a config")
    }
    fn describe(&self) -> std::collections::BTreeMap<String, serde_yaml::Value> {
        self.inner.describe()
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn estimated_bytes(&self) -> anyhow::Result<Option<u64>> {
        Ok(Some(self.inner.estimated_bytes()?))
    }
    fn read(&self, index: usize) -> anyhow::Result<DataRecord> {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(self.inner.read(index)?)
    }
}

fn an_unread_source_is_refused_after_reading_only_its_first_record() {
    let reads = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut plan = plan(0);
    let source = data::named(
        "dummy",
        CountingReads {
            inner: data::build("dummy", &plan.config.data_source.parameters).unwrap(),
            reads: reads.clone(),
        },
    );
    let estimate = data::eager_bytes(&*source).unwrap();
    plan.records = Records::Unread(source);
    plan.memory = Some(AvailableMemory::plain(2 * estimate));
    let error = run_target(&plan, || {
        Ok(Expanding {
            factor: FACTOR,
            prepared: 0,
        })
    })
    .unwrap_err();
    let Some(DataError::TooLargeForMemory {
        needed, prepared, ..
    }) = error.source.downcast_ref::<DataError>()
    else {
        panic!("expected TooLargeForMemory, got {:?}", error.source);
    };
    let each = FACTOR as u64 * TENSOR_BYTES + std::mem::size_of::<Vec<f32>>() as u64;
    assert_eq!(prepared.as_ref().map(|p| p.each), Some(each));
    assert_eq!(
        *needed,
        estimate + each * RECORDS,
        "the records by the estimate"
    );
    assert_eq!(
        reads.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "only the first record was read"
    );
    assert_eq!(error.calls.prepare, 1);

    // With room for everything, the run reads every record, each once (the
    // first, read alone, is not read again).
    reads.store(0, std::sync::atomic::Ordering::SeqCst);
    plan.memory = Some(AvailableMemory::plain(u64::MAX));
    let outcome = run_target(&plan, || {
        Ok(Expanding {
            factor: FACTOR,
            prepared: 0,
        })
    })
    .unwrap();
    assert_eq!(outcome.calls.prepare, RECORDS);
    assert_eq!(
        reads.load(std::sync::atomic::Ordering::SeqCst),
        RECORDS as usize
    );
}

/// Each window counts what was allocated while it was open, whatever the
/// windows before it counted.
fn a_window_counts_only_its_own_allocations() {
    let (kept, first) = profiling_core::memory::count_allocations(|| vec![1u8; 4096]);
    let first = first.expect("the counting allocator is installed here");
    assert_eq!(first.count, 1);
    assert_eq!(first.net_bytes, 4096);
    let ((), second) = profiling_core::memory::count_allocations(|| ());
    assert_eq!(
        second.unwrap(),
        profiling_core::memory::Allocations::default()
    );
    let ((), freed) = profiling_core::memory::count_allocations(|| drop(kept));
    assert_eq!(freed.unwrap().net_bytes, -4096);
}

fn main() {
    sequential::run(&[
        (
            "prepared_inputs_several_times_the_records_are_refused_naming_both_sizes",
            prepared_inputs_several_times_the_records_are_refused_naming_both_sizes,
        ),
        (
            "prepared_batches_are_measured_on_the_first_batch",
            prepared_batches_are_measured_on_the_first_batch,
        ),
        (
            "prepared_inputs_that_fit_run_as_before",
            prepared_inputs_that_fit_run_as_before,
        ),
        (
            "without_a_memory_budget_nothing_is_measured_or_refused",
            without_a_memory_budget_nothing_is_measured_or_refused,
        ),
        (
            "an_unread_source_is_refused_after_reading_only_its_first_record",
            an_unread_source_is_refused_after_reading_only_its_first_record,
        ),
        (
            "a_window_counts_only_its_own_allocations",
            a_window_counts_only_its_own_allocations,
        ),
    ]);
}
