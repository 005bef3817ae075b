//! The memory estimate of eager loading: each source's estimate is the size
//! of what `read_all` decodes, found without decoding, and a source that
//! would not fit in the memory available is refused with advice.

use std::path::Path;

use profiling_core::data::{self, DataError, DataSource, EAGER_MEMORY_PERCENT};

fn build(name: &str, yaml: &str) -> Box<dyn DataSource> {
    let parameters: serde_yaml::Mapping = serde_yaml::from_str(yaml).unwrap();
    data::build(name, &parameters).unwrap()
}

/// What the records of one pass decode to, measured on the records.
fn decoded_bytes(source: &dyn DataSource) -> u64 {
    let records = source.read_all().unwrap();
    records.iter().map(|r| r.decoded_bytes() as u64).sum()
}

fn write_image(path: &Path, width: u32, height: u32) {
    image::RgbImage::from_pixel(width, height, image::Rgb([1, 2, 3]))
        .save(path)
        .unwrap();
}

/// a.png (6x3), b.jpg (8x4), c.bmp (2x2).
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_image(&dir.path().join("a.png"), 6, 3);
    write_image(&dir.path().join("b.jpg"), 8, 4);
    write_image(&dir.path().join("c.bmp"), 2, 2);
    dir
}

#[test]
fn the_dummy_estimate_is_the_decoded_size() {
    for yaml in [
        "{}",
        "{record_count: 3, image_shape: [5, 7, 3], tensor_shape: [2, 3]}",
        "{record_count: 2, include_image: false, tensor_shape: [4, 2, 3]}",
        "{limit: 4, image_shape: [1, 1, 3], tensor_shape: [1]}",
    ] {
        let source = build("dummy", yaml);
        assert_eq!(
            source.estimated_bytes().unwrap(),
            decoded_bytes(&*source),
            "{yaml}"
        );
    }
}

#[test]
fn the_dummy_estimate_counts_images_and_three_tensors() {
    let source = build(
        "dummy",
        "{record_count: 10, image_shape: [1080, 1920, 3], tensor_shape: [100, 85]}",
    );
    // Per record: the image, then `tensor`, `scores` (100) and `boxes` (400) as f32.
    let per_record = 1080 * 1920 * 3 + 4 * (100 * 85 + 100 + 400);
    assert_eq!(source.estimated_bytes().unwrap(), 10 * per_record);
}

#[test]
fn the_images_estimate_is_the_decoded_size() {
    let dir = fixture();
    let d = dir.path().display();
    for yaml in [
        format!("{{directory: {d}}}"),
        format!("{{directory: {d}, limit: 2}}"),
        format!("{{directory: {d}, repeat: 7}}"),
        format!("{{directory: {d}, repeat: 2}}"),
        format!("{{paths: [{d}/b.jpg, {d}/b.jpg]}}"),
    ] {
        let source = build("images", &yaml);
        assert_eq!(
            source.estimated_bytes().unwrap(),
            decoded_bytes(&*source),
            "{yaml}"
        );
    }
}

#[test]
fn the_images_estimate_counts_every_repeat() {
    let dir = fixture();
    let source = build(
        "images",
        &format!("{{directory: {}, repeat: 5}}", dir.path().display()),
    );
    // a, b, c, a, b.
    assert_eq!(
        source.estimated_bytes().unwrap(),
        3 * (18 + 32 + 4 + 18 + 32)
    );
}

#[test]
fn undecoded_images_are_estimated_at_nothing() {
    let dir = fixture();
    let source = build(
        "images",
        &format!(
            "{{directory: {}, decode: false, repeat: 100}}",
            dir.path().display()
        ),
    );
    assert_eq!(source.estimated_bytes().unwrap(), 0);
}

#[test]
fn the_images_estimate_reads_headers_only() {
    let dir = fixture();
    // A PNG whose header is intact but whose pixel data is cut off: the
    // estimate needs no more than the header; decoding fails.
    let mut bytes = Vec::new();
    image::RgbImage::from_pixel(40, 30, image::Rgb([9, 9, 9]))
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .unwrap();
    bytes.truncate(bytes.len() - 20);
    std::fs::write(dir.path().join("d.png"), &bytes).unwrap();
    let source = build(
        "images",
        &format!("{{directory: {}}}", dir.path().display()),
    );
    assert_eq!(
        source.estimated_bytes().unwrap(),
        3 * (18 + 32 + 4 + 40 * 30)
    );
    assert!(source.read_all().is_err());
}

#[test]
fn an_unreadable_header_is_an_error_naming_the_file() {
    let dir = fixture();
    let broken = dir.path().join("broken.png");
    std::fs::write(&broken, b"\x89PNG\r\n\x1a\nnot really").unwrap();
    let source = build(
        "images",
        &format!("{{directory: {}}}", dir.path().display()),
    );
    let error = source.estimated_bytes().unwrap_err();
    assert!(matches!(error, DataError::Decode { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.starts_with(&format!("cannot decode image {}:", broken.display())),
        "{message}"
    );
}

#[test]
fn a_file_gone_since_listing_is_an_error_naming_it() {
    let dir = fixture();
    let source = build(
        "images",
        &format!("{{directory: {}}}", dir.path().display()),
    );
    let gone = dir.path().join("b.jpg");
    std::fs::remove_file(&gone).unwrap();
    let error = source.estimated_bytes().unwrap_err();
    assert!(matches!(error, DataError::Io { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .starts_with(&format!("cannot read {}:", gone.display())),
        "{error}"
    );
}

#[test]
fn a_source_beyond_the_available_memory_is_refused_with_advice() {
    // 1000 Full HD images: about 5.8 GiB, against 4 GiB available.
    let source = build(
        "dummy",
        "{record_count: 1000, image_shape: [1080, 1920, 3], tensor_shape: [1]}",
    );
    let available = 4 << 30;
    let error = data::check_fits(&*source, available).unwrap_err();
    let DataError::TooLargeForMemory {
        needed,
        ref prepared,
        available: ref reported,
    } = error
    else {
        panic!("expected TooLargeForMemory, got {error:?}");
    };
    assert_eq!(reported.bytes, available);
    assert_eq!(
        *prepared, None,
        "the prepared inputs are measured later, by the runner"
    );
    assert_eq!(needed, data::eager_bytes(&*source).unwrap());
    assert_eq!(
        error.to_string(),
        "eager loading would hold about 5.8 GiB of records, more than 80% of the 4.0 GiB of memory available, \
         the other 20% being kept for the target's outputs and the rest of the process: \
         use `record_loading: lazy` with `target.profile_prepare: true`, or fewer records (limit/repeat/record_count)"
    );
}

#[test]
fn a_source_within_the_margin_passes_and_gives_its_size() {
    let source = build("dummy", "{record_count: 3}");
    let needed = data::eager_bytes(&*source).unwrap();
    assert_eq!(
        needed,
        source.estimated_bytes().unwrap() + 3 * data::RECORD_OVERHEAD_BYTES
    );
    // Exactly the share allowed passes; a byte less available refuses.
    let available = needed * 100 / EAGER_MEMORY_PERCENT;
    assert_eq!(available * EAGER_MEMORY_PERCENT / 100, needed);
    assert_eq!(data::check_fits(&*source, available).unwrap(), needed);
    assert!(matches!(
        data::check_fits(&*source, available - 1),
        Err(DataError::TooLargeForMemory { .. })
    ));
}

#[test]
fn millions_of_undecoded_records_are_refused_too() {
    let dir = fixture();
    let source = build(
        "images",
        &format!(
            "{{directory: {}, decode: false, repeat: 1000000000}}",
            dir.path().display()
        ),
    );
    assert!(matches!(
        data::check_fits(&*source, 16 << 30),
        Err(DataError::TooLargeForMemory { .. })
    ));
}

#[test]
fn huge_parameters_saturate_instead_of_overflowing() {
    let source = build(
        "dummy",
        "{record_count: 18446744073709551615, image_shape: [46340, 15447, 3], tensor_shape: [2147483648]}",
    );
    assert_eq!(source.estimated_bytes().unwrap(), u64::MAX);
    assert!(matches!(
        data::check_fits(&*source, u64::MAX),
        Err(DataError::TooLargeForMemory { .. })
    ));
}

#[test]
fn the_check_against_this_machine_reads_its_memory() {
    let source = build("dummy", "{}");
    assert_eq!(
        data::check_fits_in_memory(&*source).unwrap(),
        data::eager_bytes(&*source).unwrap()
    );
    // This machine's figure is read (Linux has /proc/meminfo) and used: a
    // source twice its size is refused against it.
    let available = data::memory_budget().expect("this machine's memory is readable");
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let mem_available: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap()
        * 1024;
    // Read a moment apart: allow what other processes moved meanwhile.
    assert!(
        available.bytes <= mem_available + mem_available / 10,
        "{available:?} against MemAvailable {mem_available}"
    );
    let image = 1000 * 1000 * 3;
    let records = 2 * available.bytes / image + 1;
    let source = build(
        "dummy",
        &format!("{{record_count: {records}, image_shape: [1000, 1000, 3], tensor_shape: [1]}}"),
    );
    let error = data::check_fits_in_memory(&*source).unwrap_err();
    let DataError::TooLargeForMemory {
        available: ref checked,
        ..
    } = error
    else {
        panic!("expected TooLargeForMemory, got {error:?}");
    };
    assert!(
        checked.description.contains("(MemAvailable)")
            || checked.description.contains("its cgroup's limit"),
        "{checked:?}"
    );
}
