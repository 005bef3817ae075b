//! The `images` source: listing, order, `limit` and `repeat`, decoding, and
//! an error naming the path for every bad input.

use std::path::{Path, PathBuf};

use profiling_core::data::{self, DataSource};
use profiling_sources::images::ImageSource;

fn write_image(path: &Path, width: u32, height: u32, shade: u8) {
    image::RgbImage::from_pixel(width, height, image::Rgb([shade, 255 - shade, 7]))
        .save(path)
        .unwrap();
}

/// The source as a run builds it, or why it cannot be.
fn source(yaml: &str) -> Result<Box<dyn DataSource>, String> {
    data::build("images", &serde_yaml::from_str(yaml).unwrap()).map_err(|error| error.to_string())
}

/// The files the source lists.
fn files(yaml: &str) -> Vec<PathBuf> {
    let mapping: serde_yaml::Mapping = serde_yaml::from_str(yaml).unwrap();
    ImageSource::from_parameters(&mapping)
        .unwrap()
        .files()
        .to_vec()
}

/// A directory with b.png (8x4), a.JPG (6x3), c.bmp (2x2) and a text file.
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_image(&dir.path().join("b.png"), 8, 4, 10);
    write_image(&dir.path().join("a.JPG"), 6, 3, 20);
    write_image(&dir.path().join("c.bmp"), 2, 2, 30);
    std::fs::write(dir.path().join("notes.txt"), "not an image").unwrap();
    dir
}

fn ids(records: &[profiling_core::data::DataRecord]) -> Vec<&str> {
    records.iter().map(|r| r.id.as_str()).collect()
}

#[test]
fn lists_images_sorted_by_path_any_case() {
    let dir = fixture();
    let source = source(&format!("directory: {}", dir.path().display())).unwrap();
    let listed = files(&format!("directory: {}", dir.path().display()));
    let names: Vec<_> = listed
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap())
        .collect();
    assert_eq!(names, ["a.JPG", "b.png", "c.bmp"]);
    let records = source.read_all().unwrap();
    assert_eq!(ids(&records), ["a", "b", "c"]);
    let first = records[0].image.as_ref().unwrap();
    assert_eq!((first.width(), first.height()), (6, 3));
    assert_eq!(
        records[1].image.as_ref().unwrap().get_pixel(0, 0).0,
        [10, 245, 7]
    );
    assert_eq!(
        records[1].path.as_deref(),
        Some(dir.path().join("b.png").as_path())
    );
    assert_eq!(records[1].metadata["width"], 8);
}

#[test]
fn limit_then_repeat_cycles_with_numbered_ids() {
    let dir = fixture();
    let source = source(&format!(
        "{{directory: {}, limit: 2, repeat: 5}}",
        dir.path().display()
    ))
    .unwrap();
    assert_eq!(source.len(), 5);
    let records = source.read_all().unwrap();
    assert_eq!(
        ids(&records),
        ["a", "b", "a-repeat-1", "b-repeat-1", "a-repeat-2"]
    );
    assert_eq!(records[2].image, records[0].image);
    let lazily: Vec<_> = (0..5).map(|i| source.read(i).unwrap()).collect();
    assert_eq!(lazily, records);
}

#[test]
fn repeat_below_the_file_count_truncates() {
    let dir = fixture();
    let records = source(&format!(
        "{{directory: {}, repeat: 2}}",
        dir.path().display()
    ))
    .unwrap()
    .read_all()
    .unwrap();
    assert_eq!(ids(&records), ["a", "b"]);
}

#[test]
fn decode_false_keeps_paths_only() {
    let dir = fixture();
    let records = source(&format!(
        "{{directory: {}, decode: false}}",
        dir.path().display()
    ))
    .unwrap()
    .read_all()
    .unwrap();
    assert!(records
        .iter()
        .all(|r| r.image.is_none() && r.path.is_some()));
}

#[test]
fn explicit_paths_are_sorted_too() {
    let dir = fixture();
    let c = dir.path().join("c.bmp");
    let b = dir.path().join("b.png");
    let records = source(&format!("paths: [{}, {}]", c.display(), b.display()))
        .unwrap()
        .read_all()
        .unwrap();
    assert_eq!(ids(&records), ["b", "c"]);
}

#[test]
fn parallel_decoding_keeps_order() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..24u8 {
        write_image(
            &dir.path().join(format!("img{i:02}.png")),
            16 + u32::from(i),
            8,
            i,
        );
    }
    let records = source(&format!("directory: {}", dir.path().display()))
        .unwrap()
        .read_all()
        .unwrap();
    for (i, record) in records.iter().enumerate() {
        assert_eq!(record.id, format!("img{i:02}"));
        assert_eq!(record.image.as_ref().unwrap().width(), 16 + i as u32);
    }
}

#[test]
fn a_missing_directory_is_named() {
    let error = source("directory: /no/such/images")
        .err()
        .unwrap()
        .to_string();
    assert_eq!(error, "image directory /no/such/images does not exist");
}

#[test]
fn an_empty_directory_is_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("readme.md"), "x").unwrap();
    let error = source(&format!("directory: {}", dir.path().display()))
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.starts_with(&format!(
            "image directory {} holds no images",
            dir.path().display()
        )),
        "{error}"
    );
}

#[test]
fn a_tilde_directory_is_refused() {
    let error = source("directory: ~/images").err().unwrap().to_string();
    assert_eq!(error, "data_source.directory: `~/images` starts with `~`, which is not expanded: write the absolute path instead");
}

#[test]
fn an_undecodable_file_is_named() {
    let dir = fixture();
    let broken: PathBuf = dir.path().join("broken.png");
    std::fs::write(&broken, b"\x89PNG\r\n\x1a\nnot really").unwrap();
    let source = source(&format!("directory: {}", dir.path().display())).unwrap();
    let error = source.read_all().unwrap_err().to_string();
    assert!(
        error.starts_with(&format!("cannot decode image {}:", broken.display())),
        "{error}"
    );
    let error = source.read(2).unwrap_err().to_string();
    assert!(error.contains("broken.png"), "{error}");
}

#[test]
fn bad_parameters_name_their_key() {
    let dir = fixture();
    let d = dir.path().display();
    for (yaml, expected) in [
        ("{}".to_owned(), "data_source.directory: missing"),
        (
            format!("{{directory: {d}, limit: 0}}"),
            "data_source.limit: must be >= 1",
        ),
        (
            format!("{{directory: {d}, repeat: 0}}"),
            "data_source.repeat: must be >= 1",
        ),
        (
            format!("{{directory: {d}, paths: [{d}/a.JPG]}}"),
            "data_source.paths: give either",
        ),
        (
            "paths: [/no/such.png]".to_owned(),
            "data_source.paths: /no/such.png is not a file",
        ),
        (
            format!("{{directory: {d}, recursive: true}}"),
            "data_source (images): unknown field `recursive`",
        ),
    ] {
        let error = source(&yaml).err().unwrap().to_string();
        assert!(error.starts_with(expected), "{yaml}: {error}");
    }
}

#[test]
fn describe_reports_what_was_read() {
    let dir = fixture();
    let source = source(&format!(
        "{{directory: {}, limit: 2, repeat: 3}}",
        dir.path().display()
    ))
    .unwrap();
    let description = source.describe();
    assert_eq!(description["files"], 2);
    assert_eq!(description["records"], 3);
    assert_eq!(description["decode"], true);
}

/// Every extension docs/reference/config.md lists is read and decoded, in
/// any case; a look-alike (`.gif`, `.jpe`) is not listed.
#[test]
fn every_listed_extension_is_read_and_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let formats = [
        ("a.jpeg", image::ImageFormat::Jpeg),
        ("b.jpg", image::ImageFormat::Jpeg),
        ("c.TIF", image::ImageFormat::Tiff),
        ("d.tiff", image::ImageFormat::Tiff),
        ("e.webp", image::ImageFormat::WebP),
        ("f.png", image::ImageFormat::Png),
        ("g.bmp", image::ImageFormat::Bmp),
    ];
    for (index, (name, format)) in formats.iter().enumerate() {
        let width = 3 + index as u32;
        image::RgbImage::from_pixel(width, 2, image::Rgb([9, 9, 9]))
            .save_with_format(dir.path().join(name), *format)
            .unwrap();
    }
    for other in ["h.gif", "i.jpe", "j.tiff.txt"] {
        std::fs::write(dir.path().join(other), b"not listed").unwrap();
    }
    let source = source(&format!("directory: {}", dir.path().display())).unwrap();
    let records = source.read_all().unwrap();
    assert_eq!(ids(&records), ["a", "b", "c", "d", "e", "f", "g"]);
    for (index, record) in records.iter().enumerate() {
        let image = record.image.as_ref().unwrap();
        assert_eq!(
            (image.width(), image.height()),
            (3 + index as u32, 2),
            "{}",
            record.id
        );
    }
}

/// JPEGs in colour go straight through zune-jpeg, grey ones through the
/// `image` crate: either way, the pixels are those `image::open` gives.
#[test]
fn jpegs_decode_to_the_pixels_the_image_crate_gives() {
    let dir = tempfile::tempdir().unwrap();
    let colour = dir.path().join("colour.jpg");
    image::RgbImage::from_fn(61, 33, |x, y| {
        image::Rgb([(x * 4) as u8, (y * 7) as u8, (x ^ y) as u8])
    })
    .save(&colour)
    .unwrap();
    let grey = dir.path().join("grey.jpg");
    image::GrayImage::from_fn(17, 9, |x, y| image::Luma([(x * 15 + y) as u8]))
        .save(&grey)
        .unwrap();
    for path in [&colour, &grey] {
        let expected = image::open(path).unwrap().to_rgb8();
        let decoded = profiling_sources::images::decode_rgb(path).unwrap();
        assert_eq!(decoded.dimensions(), expected.dimensions());
        assert!(decoded.as_raw() == expected.as_raw(), "{}", path.display());
        let bytes = std::fs::read(path).unwrap();
        let from_bytes = profiling_sources::images::decode_rgb_bytes(&bytes).unwrap();
        assert!(
            from_bytes.as_raw() == expected.as_raw(),
            "{}",
            path.display()
        );
    }
}

/// A JPEG whose header claims more pixels than one image may hold is
/// refused before anything is allocated for it.
#[test]
fn a_jpeg_claiming_too_many_pixels_is_refused_with_its_size() {
    let mut bytes = Vec::new();
    image::RgbImage::new(8, 8)
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Jpeg,
        )
        .unwrap();
    // The frame header (SOF0): FF C0, length, precision, height, width.
    let sof = bytes.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
    bytes[sof + 5..sof + 9].copy_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF]);
    let error = profiling_sources::images::decode_rgb_bytes(&bytes).unwrap_err();
    assert_eq!(
        error,
        "the decoded image would take 12.0 GiB, more than the 512.0 MiB one image may"
    );
}

/// An image file larger than `max_file_bytes` (default 512 MiB) is refused
/// by its size, naming it, before a byte of it is read (a sparse 6 GB
/// file, here); `oversized: skip` leaves it out and the description lists
/// it.
#[test]
fn an_image_file_past_the_size_bound_is_refused_or_skipped_unread() {
    let dir = fixture();
    let huge = dir.path().join("huge.jpg");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(6 << 30)
        .unwrap();
    let refused = source(&format!("{{directory: {}}}", dir.path().display()))
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        refused,
        format!(
            "data_source.max_file_bytes: {} is 6.0 GiB, more than the 512.0 MiB an image file may be: raise `max_file_bytes`, or set `oversized: skip` to leave such files out",
            huge.display()
        )
    );
    let yaml = format!(
        "{{directory: {}, oversized: skip, max_file_bytes: 1 MiB}}",
        dir.path().display()
    );
    let skipped = source(&yaml).unwrap();
    assert_eq!(files(&yaml).len(), 3);
    let description = skipped.describe();
    assert_eq!(description["max_file_bytes"], 1u64 << 20);
    assert_eq!(
        description["skipped_oversized"],
        serde_yaml::Value::Sequence(vec![huge.to_string_lossy().into_owned().into()])
    );
    assert_eq!(ids(&skipped.read_all().unwrap()), ["a", "b", "c"]);
}

/// Linking the crate registers the source by name, with its parameters:
/// its cache's among them, which `--cache` sets.
#[test]
fn the_images_source_is_registered_with_its_parameters_and_its_cache() {
    let entry = data::find_source("images").unwrap();
    let parameters = entry.parameters();
    for key in ["directory", "paths", "decode", "cache", "cache_max_bytes"] {
        assert!(
            parameters.contains(&key),
            "{key} missing from {parameters:?}"
        );
    }
    assert!(data::takes_cache("images"));
    assert!(!data::takes_cache("dummy"));
    assert!(data::cache_refusal("dummy")
        .starts_with("only the `images` source reads files whose decoded images can be cached"));
}
