//! The load generator's own cost per query: what `profile-cli load` adds
//! to each query besides the target's time (the send, the two clock
//! readings, the query's NVTX range, its record), on one worker, beside
//! the same load of an empty target through the whole target path; and,
//! printed after the benchmarks, how late an empty target's queries start
//! at 100,000 queries a second on one worker.
//!
//! `cargo bench -p profiling-core --bench load`

use std::hint::black_box;
use std::sync::atomic::AtomicBool;

use divan::counter::ItemsCount;
use profiling_core::data;
use profiling_core::driver::config::{ConfigFile, Overrides};
use profiling_core::driver::load::arrivals::Arrival;
use profiling_core::driver::load::drive::{drive, LoadPlan, Scenario};
use profiling_core::driver::load::summary::Distribution;
use profiling_core::driver::load::target::load_target;
use profiling_core::driver::runner::{Records, RunPlan};
use profiling_core::prelude::*;

fn main() {
    divan::main();
    server_lateness();
}

const QUERIES: usize = 100_000;

fn plan(scenario: Scenario, queries: usize, record_ranges: bool) -> LoadPlan {
    LoadPlan {
        scenario,
        queries,
        warmup: 100,
        workers: 1,
        seed: 1,
        min_duration_ns: 0,
        record_ranges,
        capture_range: "profile-target".to_owned(),
    }
}

/// Does nothing, or opens one range: what is measured is the load
/// around it.
struct Empty {
    ranged: bool,
}

impl ProfileTarget for Empty {
    type Prepared = ();
    type Output = ();
    fn prepare(&mut self, _record: &DataRecord, _device: Device) -> anyhow::Result<()> {
        Ok(())
    }
    #[inline(never)]
    fn run(&mut self, prepared: &()) -> anyhow::Result<()> {
        let _range = self.ranged.then(|| profiling_range("empty"));
        black_box(prepared);
        Ok(())
    }
}

fn run_plan() -> RunPlan {
    let yaml = "target: {name: empty}\ndata_source: {name: dummy, include_image: false}";
    let config = ConfigFile::parse(yaml, None)
        .unwrap()
        .resolve(&Overrides::default())
        .unwrap();
    let source = data::build(&config.data_source.name, &config.data_source.parameters).unwrap();
    RunPlan::new(config, Records::Eager(source.read_all().unwrap()))
}

/// The generator alone: 100,000 offline queries of a closure that does
/// nothing, on one worker (its build and warmup included, once).
#[divan::bench(sample_count = 10)]
fn generator_per_query(bencher: divan::Bencher) {
    let stop = AtomicBool::new(false);
    let plan = plan(Scenario::Offline, QUERIES, false);
    bencher.counter(ItemsCount::new(QUERIES)).bench_local(|| {
        drive(
            &plan,
            |_| Ok(()),
            |_, query| {
                black_box(query);
                Ok(())
            },
            &stop,
        )
        .unwrap()
    });
}

/// The same through a registered target's path: the target called
/// inside its panic guard on its prepared input.
#[divan::bench(sample_count = 10, args = [false, true])]
fn empty_target_per_query(bencher: divan::Bencher, ranged: bool) {
    let stop = AtomicBool::new(false);
    let run_plan = run_plan();
    // With a range in the target, the ranges are recorded as `load` does.
    let plan = plan(Scenario::Offline, QUERIES, ranged);
    bencher
        .counter(ItemsCount::new(QUERIES))
        .bench_local(|| load_target(&run_plan, &plan, &stop, || Ok(Empty { ranged })).unwrap());
}

/// An empty target at 100,000 queries a second, constant arrivals, on
/// one worker: how late its queries start (the generator's own delay)
/// and what it served.
fn server_lateness() {
    let stop = AtomicBool::new(false);
    let run_plan = run_plan();
    let queries = 200_000;
    let run = load_target(
        &run_plan,
        &plan(
            Scenario::Server {
                qps: 100_000.0,
                arrival: Arrival::Constant,
            },
            queries,
            false,
        ),
        &stop,
        || Ok(Empty { ranged: false }),
    )
    .unwrap();
    let late = Distribution::of(run.queries.iter().map(|q| q.queueing_ns()).collect()).unwrap();
    let service = Distribution::of(run.queries.iter().map(|q| q.service_ns()).collect()).unwrap();
    let duration_s = run.queries.iter().map(|q| q.ended_ns).max().unwrap_or(0) as f64 / 1e9;
    let get = |d: &Distribution, name: &str| d.get(name).map_or(0, |p| p.value_ns);
    println!(
        "server at 100000 q/s, empty target, 1 worker: {} queries served in {duration_s:.3} s ({:.0} a second); start after the intended send p50 {} ns, p99 {} ns, max {} ns; the target's call p50 {} ns",
        run.queries.len(),
        run.queries.len() as f64 / duration_s,
        get(&late, "p50"),
        get(&late, "p99"),
        late.max_ns,
        get(&service, "p50"),
    );
}
