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
