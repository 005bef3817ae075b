//! Eager loading of images: on one thread and on all, with each decoder
//! compared, through a cold and a warm cache, and the estimate made before
//! eager loading.
//!
//! `cargo bench -p profiling-sources --bench images`
//! (`BENCH_JPEG_DIR=DIR` keeps the 64 JPEGs there, for another program to
//! read the same files.)

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use divan::counter::ItemsCount;
use profiling_core::data::{self, DataSource};
use profiling_sources::cache::{ImageCache, DEFAULT_MAX_BYTES};
use profiling_sources::images::{self, ImageSource};

fn main() {
    divan::main();
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

/// `source` as the runner reads it.
fn as_run(source: ImageSource) -> Box<dyn DataSource> {
    data::named("images", source)
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
    let source = as_run(image_source());
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
        as_run(image_source().with_cache(Arc::new(ImageCache::under(root, DEFAULT_MAX_BYTES))))
    };
    match cache {
        "cold" => bencher
            .counter(ItemsCount::new(IMAGES))
            .with_inputs(|| {
                profiling_sources::cache::clean(root.path()).unwrap();
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
        "none" => as_run(image_source()),
        _ => {
            let source = as_run(
                image_source()
                    .with_cache(Arc::new(ImageCache::under(root.path(), DEFAULT_MAX_BYTES))),
            );
            source.read_all().unwrap();
            source
        }
    };
    bencher
        .counter(ItemsCount::new(IMAGES))
        .bench_local(|| source.estimated_bytes().unwrap());
}
