//! The runner's own cost, and eager loading of images: on one thread and
//! on all, with each decoder compared, and through a cold and a warm cache.
//!
//! `cargo bench -p profiling-core --bench runner`
//! (`BENCH_JPEG_DIR=DIR` keeps the 64 JPEGs there, for another program to
//! read the same files.)

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use divan::counter::ItemsCount;
use profiling_core::data::cache::{ImageCache, DEFAULT_MAX_BYTES};
use profiling_core::data::images::{self, ImageSource};
use profiling_core::data::{self, DataSource};
use profiling_core::driver::config::{ConfigFile, Overrides};
use profiling_core::driver::runner::{run_target, Records, RunPlan};
use profiling_core::driver::timing::SampleSet;
use profiling_core::prelude::*;

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

impl profiling_core::driver::timing::EventBackend for NullEvents {
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

const IMAGES: usize = 64;

/// 64 JPEGs of 640x480 with varied content, written once per process into
/// a temporary directory, or into `$BENCH_JPEG_DIR` when it is set (so that
/// another program can read the same files).
fn jpeg_directory() -> &'static Path {
    static DIRECTORY: std::sync::OnceLock<(Option<tempfile::TempDir>, PathBuf)> =
        std::sync::OnceLock::new();
    let (_, path) = DIRECTORY.get_or_init(|| {
        let (temporary, path) = match std::env::var_os("BENCH_JPEG_DIR") {
            Some(dir) => (None, PathBuf::from(dir)),
            None => {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().to_path_buf();
                (Some(dir), path)
            }
        };
        std::fs::create_dir_all(&path).unwrap();
        for index in 0..IMAGES {
            let file = path.join(format!("image{index:02}.jpg"));
            if file.exists() {
                continue;
            }
            let image = image::RgbImage::from_fn(640, 480, |x, y| {
                let v = (x * 7 + y * 13 + index as u32 * 31) ^ (x * y / 97);
                image::Rgb([v as u8, (v >> 3) as u8, (x ^ y) as u8])
            });
            image.save(file).unwrap();
        }
        (temporary, path)
    });
    path
}

fn image_source() -> ImageSource {
    let mapping: serde_yaml::Mapping =
        serde_yaml::from_str(&format!("directory: {}", jpeg_directory().display())).unwrap();
    ImageSource::from_parameters(&mapping).unwrap()
}

/// `f` on a rayon pool of `threads` threads, or on the global pool (one
/// thread per core) for 0.
fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    if threads == 0 {
        return f();
    }
    static POOLS: std::sync::Mutex<Vec<(usize, &'static rayon::ThreadPool)>> =
        std::sync::Mutex::new(Vec::new());
    let pool = {
        let mut pools = POOLS.lock().unwrap();
        match pools.iter().find(|(n, _)| *n == threads) {
            Some((_, pool)) => *pool,
            None => {
                let pool: &'static rayon::ThreadPool = Box::leak(Box::new(
                    rayon::ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .build()
                        .unwrap(),
                ));
                pools.push((threads, pool));
                pool
            }
        }
    };
    pool.install(f)
}

/// Eager loading as the runner does it (`read_all`: every file read and
/// decoded on the pool's threads, in order), on one thread (`1`) and on
/// one per core (`0`, rayon's default pool).
#[divan::bench(sample_count = 10, args = [1, 0])]
fn eager_load_64_jpegs(bencher: divan::Bencher, threads: usize) {
    let source = image_source();
    bencher
        .counter(ItemsCount::new(IMAGES))
        .bench_local(|| on_threads(threads, || source.read_all().unwrap()));
}

/// The decoders compared, one thread, file read included: this source's
/// (zune-jpeg straight into the image's buffer) and the `image` crate's
/// general path it replaced (`ImageReader` → `DynamicImage` → `to_rgb8`).
#[divan::bench(sample_count = 10, args = ["zune-jpeg direct", "image crate"])]
fn decode_64_jpegs_one_thread(bencher: divan::Bencher, decoder: &str) {
    let files = image_source().files().to_vec();
    let decode: fn(&Path) -> image::RgbImage = match decoder {
        "zune-jpeg direct" => |path| images::decode_rgb(path).unwrap(),
        _ => |path| {
            image::ImageReader::open(path)
                .unwrap()
                .with_guessed_format()
                .unwrap()
                .decode()
                .unwrap()
                .to_rgb8()
        },
    };
    bencher
        .counter(ItemsCount::new(IMAGES))
        .bench_local(|| files.iter().map(|p| decode(p)).collect::<Vec<_>>());
}

/// Eager loading through the decoded-image cache, on one thread per core:
/// `cold`, an empty cache each time (decoding, and storing every image);
/// `warm`, a cache that holds them all (reading them back).
#[divan::bench(sample_count = 10, sample_size = 1, args = ["cold", "warm"])]
fn eager_load_64_jpegs_cached(bencher: divan::Bencher, cache: &str) {
    let root = tempfile::tempdir().unwrap();
    let cached = |root: &Path| {
        image_source().with_cache(Arc::new(ImageCache::under(root, DEFAULT_MAX_BYTES)))
    };
    match cache {
        "cold" => bencher
            .counter(ItemsCount::new(IMAGES))
            .with_inputs(|| {
                profiling_core::data::cache::clean(root.path()).unwrap();
                cached(root.path())
            })
            .bench_local_values(|source| source.read_all().unwrap()),
        _ => {
            let source = cached(root.path());
            source.read_all().unwrap();
            bencher
                .counter(ItemsCount::new(IMAGES))
                .bench_local(|| source.read_all().unwrap());
        }
    }
}

/// The image cache's pixel checksum (CRC-32, crc32fast), on its own: what
/// storing an image and reading it back each add, per image of the size
/// given (640x480 as the JPEGs above, 1920x1080).
#[divan::bench(args = [(640, 480), (1920, 1080)])]
fn pixel_checksum(bencher: divan::Bencher, (width, height): (usize, usize)) {
    let pixels: Vec<u8> = (0..width * height * 3)
        .map(|i| (i * 31 % 251) as u8)
        .collect();
    bencher
        .counter(divan::counter::BytesCount::new(pixels.len()))
        .bench_local(|| crc32fast::hash(black_box(&pixels)));
}

/// The memory estimate made before eager loading: every file's dimensions,
/// from its header (`none`), or from the cache's entries (`warm`).
#[divan::bench(sample_count = 10, args = ["none", "warm"])]
fn estimate_64_jpegs(bencher: divan::Bencher, cache: &str) {
    let root = tempfile::tempdir().unwrap();
    let source = match cache {
        "none" => image_source(),
        _ => {
            let source = image_source()
                .with_cache(Arc::new(ImageCache::under(root.path(), DEFAULT_MAX_BYTES)));
            source.read_all().unwrap();
            source
        }
    };
    bencher
        .counter(ItemsCount::new(IMAGES))
        .bench_local(|| source.estimated_bytes().unwrap());
}
