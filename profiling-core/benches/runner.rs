//! The runner's own cost: per call, per range, and past the kept samples.
//!
//! `cargo bench -p profiling-core --bench runner`

use std::hint::black_box;

use divan::counter::ItemsCount;
use profiling_core::data;
use profiling_core::driver::config::{ConfigFile, Overrides};
use profiling_core::driver::runner::{run_target, Records, RunPlan};
use profiling_core::prelude::*;
use profiling_core::timing::SampleSet;

fn main() {
    divan::main();
}

/// Does nothing: what is measured is the runner around it.
struct Empty;

impl ProfileTarget for Empty {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    #[inline(never)]
    fn run(&mut self, prepared: &()) -> anyhow::Result<()> {
        black_box(prepared);
        Ok(())
    }
}

const CALLS: u32 = 100_000;

/// One measured run of an empty target, 100,000 passes of one record: the
/// time per item is the runner's cost per call, its clock reads included.
#[divan::bench(sample_count = 10)]
fn empty_target_per_call(bencher: divan::Bencher) {
    let yaml = format!("target: {{name: empty}}\ndata_source: {{name: dummy, include_image: false}}\nwarmup: 0\niterations: {CALLS}");
    let config = ConfigFile::parse(&yaml, None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    let source = data::build(&config.data_source.name, &config.data_source.parameters).unwrap();
    let plan = RunPlan::new(config, Records::Eager(source.read_all().unwrap()));
    bencher
        .counter(ItemsCount::new(CALLS))
        .bench_local(|| run_target(&plan, || Ok(Empty)).unwrap());
}

/// Opens one range per call.
struct OneRange;

impl ProfileTarget for OneRange {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    #[inline(never)]
    fn run(&mut self, prepared: &()) -> anyhow::Result<()> {
        let _range = profiling_range("work");
        black_box(prepared);
        Ok(())
    }
}

/// A device whose events cost nothing: what GPU timing adds on the host
/// besides the driver's own `cuEventRecord`.
struct NullEvents;

impl profiling_core::timing::EventBackend for NullEvents {
    fn stream(&self) -> String {
        "null".to_owned()
    }
    fn bind_thread(&self) -> anyhow::Result<()> {
        Ok(())
    }
    fn create(&self) -> anyhow::Result<u64> {
        Ok(1)
    }
    #[inline(never)]
    fn record(&self, event: u64) -> bool {
        black_box(event);
        true
    }
    fn synchronize(&self, _event: u64) -> anyhow::Result<()> {
        Ok(())
    }
    fn elapsed_ns(&self, start: u64, end: u64) -> anyhow::Result<f64> {
        Ok((end - start) as f64)
    }
    fn destroy(&self, _event: u64) {}
}

/// 100,000 passes of one record whose `run()` opens one range, with and
/// without device events on a device that costs nothing: per call, the
/// runner, the range and (with events) three event records (the range's
/// two and the call's boundary), the pool and reading them back.
#[divan::bench(sample_count = 10, args = [false, true])]
fn one_range_per_call(bencher: divan::Bencher, events: bool) {
    let yaml = format!("target: {{name: one-range}}\ndata_source: {{name: dummy, include_image: false}}\nwarmup: 1\niterations: {CALLS}");
    let config = ConfigFile::parse(&yaml, None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    let source = data::build(&config.data_source.name, &config.data_source.parameters).unwrap();
    let mut plan = RunPlan::new(config, Records::Eager(source.read_all().unwrap()));
    if events {
        plan.events = Some(std::sync::Arc::new(NullEvents));
    }
    bencher
        .counter(ItemsCount::new(CALLS))
        .bench_local(|| run_target(&plan, || Ok(OneRange)).unwrap());
}

/// A pass or call sample once the kept ones are full (past 2^20 of them in
/// a run): exact aggregates and a histogram record, between two clock reads
/// of the measured loop.
#[divan::bench]
fn sample_past_the_kept_ones(bencher: divan::Bencher) {
    let mut set = SampleSet::expecting(usize::MAX, 0);
    let mut value = 0u64;
    bencher.bench_local(|| {
        // Durations from 10 µs to 100 µs, a new bucket most of the time.
        value = (value + 7_919) % 90_000;
        set.push(black_box(10_000 + value));
    });
    black_box(set.count());
}
