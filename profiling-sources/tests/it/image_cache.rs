//! The `images` source with its decoded-image cache: what a warm cache
//! gives is what decoding gives, byte for byte, and a file that changed or
//! went is never served from it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use profiling_core::data::{self, DataError, DataRecord, DataSource, SourceContext};
use profiling_sources::cache::{self, ImageCache, DEFAULT_MAX_BYTES};
use profiling_sources::images::ImageSource;

/// A JPEG, a PNG and a BMP whose pixels differ from pixel to pixel.
fn write_images(dir: &Path) {
    for (index, name) in ["a.jpg", "b.png", "c.bmp"].iter().enumerate() {
        write_pattern(&dir.join(name), 24 + index as u32, 16, index as u8);
    }
}

fn write_pattern(path: &Path, width: u32, height: u32, seed: u8) {
    image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([
            (x * 9 + y * 5) as u8 ^ seed,
            (x * y) as u8,
            seed.wrapping_mul(40),
        ])
    })
    .save(path)
    .unwrap();
}

/// The images of `dir`, twice over (`repeat`), with a cache under `root`
/// when one is given.
fn source(dir: &Path, root: Option<&Path>) -> Box<dyn DataSource> {
    let mapping: serde_yaml::Mapping =
        serde_yaml::from_str(&format!("{{directory: {}, repeat: 6}}", dir.display())).unwrap();
    let source = ImageSource::from_parameters(&mapping).unwrap();
    data::named(
        "images",
        match root {
            Some(root) => source.with_cache(Arc::new(ImageCache::under(root, DEFAULT_MAX_BYTES))),
            None => source,
        },
    )
}

/// Reads every record through a fresh cache under `root`, returning them
/// and the cache's hits and misses.
fn read_cached(dir: &Path, root: &Path) -> (Vec<DataRecord>, u64, u64) {
    let cache = Arc::new(ImageCache::under(root, DEFAULT_MAX_BYTES));
    let mapping: serde_yaml::Mapping =
        serde_yaml::from_str(&format!("{{directory: {}, repeat: 6}}", dir.display())).unwrap();
    let source = ImageSource::from_parameters(&mapping)
        .unwrap()
        .with_cache(cache.clone());
    let records = data::named("images", source).read_all().unwrap();
    let summary = cache.summary();
    (records, summary.hits, summary.misses)
}

fn entries(root: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(cache::images_dir(root))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    found.sort();
    found
}

#[test]
fn a_warm_cache_gives_the_records_of_a_cold_load_byte_for_byte() {
    let (images, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_images(images.path());
    let decoded = source(images.path(), None).read_all().unwrap();

    let (cold, hits, misses) = read_cached(images.path(), root.path());
    assert_eq!((hits, misses), (0, 3), "each distinct file decoded once");
    assert_eq!(entries(root.path()).len(), 3);
    let (warm, hits, misses) = read_cached(images.path(), root.path());
    assert_eq!((hits, misses), (3, 0));

    assert_eq!(cold, decoded);
    assert_eq!(warm, decoded);
    let ids: Vec<&str> = warm.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        ["a", "b", "c", "a-repeat-1", "b-repeat-1", "c-repeat-1"]
    );
    for (warm, decoded) in warm.iter().zip(&decoded) {
        assert_eq!(
            warm.image.as_ref().unwrap().as_raw(),
            decoded.image.as_ref().unwrap().as_raw(),
            "{}",
            warm.id
        );
    }
    // A lazy run reads the same records, one at a time.
    let lazy = source(images.path(), Some(root.path()));
    for (index, record) in decoded.iter().enumerate() {
        assert_eq!(&lazy.read(index).unwrap(), record);
    }
}

#[test]
fn the_estimate_with_a_warm_cache_is_what_is_decoded() {
    let (images, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_images(images.path());
    let cached = source(images.path(), Some(root.path()));
    let cold = cached.estimated_bytes().unwrap();
    let records = cached.read_all().unwrap();
    let decoded: u64 = records.iter().map(|r| r.decoded_bytes() as u64).sum();
    assert_eq!(cold, decoded);
    assert_eq!(cached.estimated_bytes().unwrap(), decoded, "warm");
}

/// Rewrites `path` with other pixels, then sets its modification time
/// `seconds` after what it was: what an editor saving it later does.
fn rewrite(path: &Path, width: u32, seed: u8, seconds: u64) {
    let before = std::fs::metadata(path).unwrap().modified().unwrap();
    write_pattern(path, width, 16, seed);
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(before + Duration::from_secs(seconds))
        .unwrap();
}

#[test]
fn a_file_changed_in_size_is_decoded_again_not_served_from_the_cache() {
    let (images, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_images(images.path());
    read_cached(images.path(), root.path());
    let bmp = images.path().join("c.bmp");
    let size = std::fs::metadata(&bmp).unwrap().len();
    rewrite(&bmp, 40, 99, 0);
    assert_ne!(std::fs::metadata(&bmp).unwrap().len(), size);

    let (records, hits, misses) = read_cached(images.path(), root.path());
    assert_eq!((hits, misses), (2, 1));
    let fresh = source(images.path(), None).read_all().unwrap();
    assert_eq!(records, fresh);
    assert_eq!(records[2].image.as_ref().unwrap().width(), 40);
    assert_eq!(entries(root.path()).len(), 3, "its entry was replaced");
}

#[test]
fn a_file_changed_in_place_with_its_size_kept_is_decoded_again() {
    let (images, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_images(images.path());
    read_cached(images.path(), root.path());
    // A BMP of the same dimensions has the same size, whatever its pixels.
    let bmp = images.path().join("c.bmp");
    let size = std::fs::metadata(&bmp).unwrap().len();
    rewrite(&bmp, 26, 77, 2);
    assert_eq!(std::fs::metadata(&bmp).unwrap().len(), size);

    let (records, hits, misses) = read_cached(images.path(), root.path());
    assert_eq!((hits, misses), (2, 1));
    assert_eq!(records, source(images.path(), None).read_all().unwrap());
    assert_eq!(
        records[2].image.as_ref().unwrap().get_pixel(0, 0).0,
        [77, 0, 77u8.wrapping_mul(40)]
    );
}

#[test]
fn a_deleted_file_is_never_served_from_the_cache() {
    let (images, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_images(images.path());
    read_cached(images.path(), root.path());
    let gone = images.path().join("b.png");
    // Listed while it was there, as a run's source is; then removed.
    let cached = source(images.path(), Some(root.path()));
    std::fs::remove_file(&gone).unwrap();
    for error in [cached.read_all().unwrap_err(), cached.read(1).unwrap_err()] {
        match error {
            DataError::Io { path, .. } => assert_eq!(path, gone),
            other => panic!("expected an error naming {}, got {other:?}", gone.display()),
        }
    }
    assert!(cached.estimated_bytes().is_err(), "nor its dimensions");
}

#[test]
fn a_damaged_entry_is_decoded_again_and_replaced() {
    let (images, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_images(images.path());
    let (cold, _, _) = read_cached(images.path(), root.path());
    for entry in entries(root.path()) {
        let bytes = std::fs::read(&entry).unwrap();
        std::fs::write(&entry, &bytes[..bytes.len() / 2]).unwrap();
    }
    let (records, hits, misses) = read_cached(images.path(), root.path());
    assert_eq!((hits, misses), (0, 3));
    assert_eq!(records, cold);
    let (_, hits, _) = read_cached(images.path(), root.path());
    assert_eq!(hits, 3, "replaced by whole entries");
}

#[test]
fn an_entry_used_now_is_the_last_to_be_evicted() {
    let (images, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_images(images.path());
    read_cached(images.path(), root.path());
    let long_ago = SystemTime::now() - Duration::from_secs(3600);
    for entry in entries(root.path()) {
        let file = std::fs::File::options().write(true).open(&entry).unwrap();
        file.set_modified(long_ago).unwrap();
    }
    read_cached(images.path(), root.path());
    for entry in entries(root.path()) {
        let used = std::fs::metadata(&entry).unwrap().modified().unwrap();
        assert!(
            used > long_ago + Duration::from_secs(60),
            "{}",
            entry.display()
        );
    }
}

/// Built by name, as a run builds it: `cache` and `cache_max_bytes` are the
/// source's own parameters, the cache lives under the context's root, and
/// the source reports it; with no root to keep it under (a parity check, a
/// count of records) it reads without one.
#[test]
fn the_cache_is_a_parameter_of_the_images_source_kept_under_the_context_s_root() {
    let images = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write_images(images.path());
    let mapping: serde_yaml::Mapping = serde_yaml::from_str(&format!(
        "{{directory: {}, cache: true, cache_max_bytes: 1.5 GiB}}",
        images.path().display()
    ))
    .unwrap();
    let context = SourceContext {
        cache_root: Some(root.path().to_path_buf()),
    };
    let source = profiling_core::data::build_in("images", &mapping, &context).unwrap();
    source.read_all().unwrap();
    let summary = source
        .cache()
        .expect("the images source reports its cache")
        .summary();
    assert_eq!(summary.dir, cache::images_dir(root.path()));
    assert_eq!(summary.max_bytes, 3 << 29);
    assert_eq!((summary.misses, summary.stored), (3, 3));
    assert_eq!(entries(root.path()).len(), 3);

    let without_root = profiling_core::data::build("images", &mapping).unwrap();
    assert!(without_root.cache().is_none());
    let off: serde_yaml::Mapping =
        serde_yaml::from_str(&format!("{{directory: {}}}", images.path().display())).unwrap();
    assert!(profiling_core::data::build_in("images", &off, &context)
        .unwrap()
        .cache()
        .is_none());
}

/// `cache_max_bytes` is bytes, or a number with a unit, as the config
/// accepts it: the cache the source opens holds at most that.
#[test]
fn the_cache_s_bound_takes_a_number_of_bytes_or_a_unit() {
    let images = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write_images(images.path());
    let context = SourceContext {
        cache_root: Some(root.path().to_path_buf()),
    };
    for (text, bytes) in [
        ("1048576", 1u64 << 20),
        ("500 MB", 500_000_000),
        ("2GiB", 2 << 30),
        ("64 kib", 64 << 10),
        ("3 KB", 3_000),
        ("1 tb", 1_000_000_000_000),
    ] {
        let mapping: serde_yaml::Mapping = serde_yaml::from_str(&format!(
            "{{directory: {}, cache: true, cache_max_bytes: {text}}}",
            images.path().display()
        ))
        .unwrap();
        let source = profiling_core::data::build_in("images", &mapping, &context).unwrap();
        assert_eq!(source.cache().unwrap().summary().max_bytes, bytes, "{text}");
    }
}
