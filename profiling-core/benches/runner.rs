//! The runner's own cost, and eager loading of images.
//!
//! `cargo bench -p profiling-core --bench runner`

use std::hint::black_box;
use std::path::Path;

use divan::counter::ItemsCount;
use profiling_core::config::{ConfigFile, Overrides};
use profiling_core::data::images::ImageSource;
use profiling_core::data::{self, DataSource};
use profiling_core::prelude::*;
use profiling_core::runner::{run_target, Records, RunPlan};

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

const IMAGES: usize = 64;

/// 64 JPEGs of 640x480 with varied content, written once per process.
fn jpeg_directory() -> &'static Path {
    static DIRECTORY: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIRECTORY
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            for index in 0..IMAGES {
                let image = image::RgbImage::from_fn(640, 480, |x, y| {
                    let v = (x * 7 + y * 13 + index as u32 * 31) ^ (x * y / 97);
                    image::Rgb([v as u8, (v >> 3) as u8, (x ^ y) as u8])
                });
                image
                    .save(dir.path().join(format!("image{index:02}.jpg")))
                    .unwrap();
            }
            dir
        })
        .path()
}

fn image_source() -> ImageSource {
    let mapping: serde_yaml::Mapping =
        serde_yaml::from_str(&format!("directory: {}", jpeg_directory().display())).unwrap();
    ImageSource::from_parameters(&mapping).unwrap()
}

/// Eager loading as the runner does it: decoded on every core, in order.
#[divan::bench(sample_count = 10)]
fn eager_load_64_jpegs_parallel(bencher: divan::Bencher) {
    let source = image_source();
    bencher
        .counter(ItemsCount::new(IMAGES))
        .bench_local(|| source.read_all().unwrap());
}

/// The same images decoded one by one.
#[divan::bench(sample_count = 10)]
fn eager_load_64_jpegs_one_by_one(bencher: divan::Bencher) {
    let source = image_source();
    bencher.counter(ItemsCount::new(IMAGES)).bench_local(|| {
        (0..source.len())
            .map(|i| source.read(i).unwrap())
            .collect::<Vec<_>>()
    });
}
