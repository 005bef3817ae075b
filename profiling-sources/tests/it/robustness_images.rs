//! The `images` source never panics: generated parameters go through
//! `data::build`, and arbitrary bytes, written as image files, through the
//! memory estimate, `read` and `read_all`. Each comes back as records or as
//! an error; an error about a file names it.

use std::path::PathBuf;

use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestRunner;
use serde_yaml::{Mapping, Value};

use profiling_core::data::{self, DataError, DataSource};
use profiling_sources::images::{self, EXTENSIONS};

use crate::common::{assert_reads_well, config};

/// The memory eager loading may use in these tests: sources beyond it are
/// refused by the check, as a run refuses them, and never read.
const TEST_MEMORY: u64 = 64 << 20;

/// An error reading files reads well and names the file it is about.
fn assert_names_its_file(error: &DataError, files: &[PathBuf]) {
    assert_reads_well(error);
    let path = match error {
        DataError::Io { path, .. } | DataError::Decode { path, .. } => path,
        other => panic!("reading files gave an error about no file: {other:?}"),
    };
    assert!(
        files.contains(path),
        "an error about {} while reading {files:?}",
        path.display()
    );
    assert!(
        error.to_string().contains(&path.display().to_string()),
        "{error}"
    );
}

/// Estimates, checks and reads `source` as an eager and a lazy run would,
/// asserting that every step succeeds or names the file that failed it,
/// that the estimate is what was decoded, and that both runs read the same
/// records.
fn exercise(source: &dyn DataSource, files: &[PathBuf]) {
    let _ = source.describe();
    let estimate = match source.estimated_bytes() {
        Ok(bytes) => Some(bytes),
        Err(error) => {
            assert_names_its_file(&error, files);
            None
        }
    };
    // An eager run reads everything only once the check passed.
    let all = match data::check_fits(source, TEST_MEMORY) {
        Ok(_) => Some(source.read_all()),
        Err(error @ DataError::TooLargeForMemory { .. }) => return assert_reads_well(&error),
        Err(error) => {
            assert_names_its_file(&error, files);
            None
        }
    };
    match (&all, estimate) {
        (Some(Ok(records)), Some(estimate)) => {
            let decoded: u64 = records.iter().map(|r| r.decoded_bytes() as u64).sum();
            assert_eq!(estimate, decoded, "the estimate is not what was decoded");
        }
        (Some(Ok(_)), None) => panic!("a header that cannot be read, but files that decode"),
        (Some(Err(error)), _) => assert_names_its_file(error, files),
        (None, _) => {}
    }
    // A lazy run reads the same records, one at a time.
    for index in [0, source.len() - 1] {
        match (source.read(index), &all) {
            (Ok(record), Some(Ok(records))) => assert_eq!(record, records[index]),
            (Ok(_), _) => {}
            (Err(error), _) => assert_names_its_file(&error, files),
        }
    }
    assert!(matches!(
        source.read(source.len()),
        Err(DataError::OutOfRange { .. })
    ));
}

fn encode(image: &image::DynamicImage, format: image::ImageFormat) -> Vec<u8> {
    let mut bytes = Vec::new();
    image
        .write_to(&mut std::io::Cursor::new(&mut bytes), format)
        .unwrap();
    bytes
}

/// Small valid images of every format read, to mutate.
fn valid_encodings() -> Vec<Vec<u8>> {
    let rgb = image::DynamicImage::ImageRgb8(image::RgbImage::from_fn(5, 3, |x, y| {
        image::Rgb([x as u8 * 40, y as u8 * 80, 200])
    }));
    let rgba = image::DynamicImage::ImageRgba8(rgb.to_rgba8());
    vec![
        encode(&rgb, image::ImageFormat::Png),
        encode(&rgba, image::ImageFormat::Png),
        encode(&rgb, image::ImageFormat::Jpeg),
        encode(&rgb, image::ImageFormat::Bmp),
        encode(&rgb, image::ImageFormat::Tiff),
        encode(&rgba, image::ImageFormat::WebP),
    ]
}

/// What the formats' headers start with.
const MAGIC: &[&[u8]] = &[
    b"\x89PNG\r\n\x1a\n",
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
    b"\xff\xd8\xff",
    b"BM",
    b"II*\0",
    b"MM\0*",
    b"RIFF\0\0\0\0WEBPVP8 ",
    b"RIFF\0\0\0\0WEBPVP8L",
    b"GIF89a",
];

/// Arbitrary bytes, bytes behind a format's magic number, and valid images
/// with bytes overwritten or cut off.
fn image_bytes(valid: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let random = prop::collection::vec(any::<u8>(), 0..256);
    let behind_magic = (select(MAGIC), prop::collection::vec(any::<u8>(), 0..256))
        .prop_map(|(magic, rest)| [magic, rest.as_slice()].concat());
    let mutated = (
        select(valid),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(|(mut bytes, writes, cut, truncate)| {
            for (at, byte) in writes {
                let at = at.index(bytes.len());
                bytes[at] = byte;
            }
            if truncate {
                bytes.truncate(cut.index(bytes.len()));
            }
            bytes
        });
    prop_oneof![1 => random, 1 => behind_magic, 2 => mutated]
}

#[test]
fn arbitrary_bytes_as_image_files_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let strategy = (
        image_bytes(valid_encodings()),
        select(EXTENSIONS),
        any::<bool>(),
    );
    let mut runner = TestRunner::new(config(384));
    runner
        .run(&strategy, |(bytes, extension, with_a_good_one)| {
            let file = dir.path().join(format!("case.{extension}"));
            std::fs::write(&file, &bytes).unwrap();
            let mut files = vec![file.clone()];
            if with_a_good_one {
                files.push(dir.path().join("good.png"));
                image::RgbImage::new(3, 2).save(&files[1]).unwrap();
            }
            let parameters = Mapping::from_iter([
                (Value::from("paths"), serde_yaml::to_value(&files).unwrap()),
                (Value::from("repeat"), Value::from(3)),
            ]);
            let source = data::build("images", &parameters).unwrap();
            exercise(&*source, &files);
            // Decoding the bytes in memory agrees with decoding the file,
            // where the bytes name their format; where they do not, the
            // file may still decode by its extension.
            let from_bytes = images::decode_rgb_bytes(&bytes);
            let from_file = images::decode_rgb(&file);
            if image::guess_format(&bytes).is_ok() {
                assert_eq!(from_bytes.is_ok(), from_file.is_ok());
            } else {
                assert!(from_bytes.is_err());
            }
            if let Ok(image) = &from_bytes {
                let dimensions = images::image_dimensions_bytes(&bytes).unwrap();
                assert_eq!(dimensions, image.dimensions());
            }
            std::fs::remove_file(&file).unwrap();
            Ok(())
        })
        .unwrap();
}

/// good/ holds a.png (6x3), b.jpg (8x4) and c.bmp (2x2), a text file and a
/// directory named like an image; mixed/ adds broken.png, whose header
/// cannot be read, and cut.png, whose header can but whose pixels are cut
/// off.
struct Fixture {
    _dir: tempfile::TempDir,
    good: PathBuf,
    mixed: PathBuf,
    files: Vec<PathBuf>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good");
    let mixed = dir.path().join("mixed");
    let mut files = Vec::new();
    for folder in [&good, &mixed] {
        std::fs::create_dir(folder).unwrap();
        std::fs::create_dir(folder.join("folder.png")).unwrap();
        std::fs::write(folder.join("notes.txt"), "not an image").unwrap();
        files.push(folder.join("notes.txt"));
        for (name, width, height) in [("a.png", 6, 3), ("b.jpg", 8, 4), ("c.bmp", 2, 2)] {
            let path = folder.join(name);
            image::RgbImage::new(width, height).save(&path).unwrap();
            files.push(path);
        }
    }
    let broken = mixed.join("broken.png");
    std::fs::write(&broken, b"\x89PNG\r\n\x1a\nnot really").unwrap();
    files.push(broken);
    let mut cut = encode(
        &image::DynamicImage::ImageRgb8(image::RgbImage::new(40, 30)),
        image::ImageFormat::Png,
    );
    cut.truncate(cut.len() - 20);
    std::fs::write(mixed.join("cut.png"), cut).unwrap();
    files.push(mixed.join("cut.png"));
    Fixture {
        _dir: dir,
        good,
        mixed,
        files,
    }
}

/// Parameters of the images source: mostly of the types they take, with
/// paths that exist, do not, or are not what they should be.
fn image_parameters(fixture: &Fixture) -> impl Strategy<Value = Mapping> {
    let mut places: Vec<String> = vec![
        fixture.good.display().to_string(),
        fixture.mixed.display().to_string(),
        fixture.good.join("missing").display().to_string(),
        fixture.good.join("notes.txt").display().to_string(),
        fixture.good.join("folder.png").display().to_string(),
        "~/images".to_owned(),
        String::new(),
        "\0".to_owned(),
    ];
    places.extend(fixture.files.iter().map(|f| f.display().to_string()));
    let place = prop_oneof![
        4 => select(places).prop_map(Value::from),
        1 => any::<String>().prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => Just(Value::Null),
    ];
    let count = prop_oneof![
        4 => (0u64..8).prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => Just(Value::from("3")),
    ];
    (
        prop::option::weighted(0.6, place.clone()),
        prop::option::weighted(0.4, prop::collection::vec(place, 0..4)),
        prop::option::weighted(
            0.5,
            prop_oneof![
                any::<bool>().prop_map(Value::Bool),
                Just(Value::from("yes"))
            ],
        ),
        prop::option::weighted(0.4, count.clone()),
        prop::option::weighted(0.4, count),
        prop::option::weighted(0.1, "[a-z]{1,8}"),
    )
        .prop_map(|(directory, paths, decode, limit, repeat, unknown)| {
            let mut parameters = Mapping::new();
            let mut put = |key: &str, value: Option<Value>| {
                if let Some(value) = value {
                    parameters.insert(Value::from(key), value);
                }
            };
            put("directory", directory);
            put("paths", paths.map(Value::Sequence));
            put("decode", decode);
            put("limit", limit);
            put("repeat", repeat);
            if let Some(key) = unknown {
                parameters.insert(Value::from(key), Value::Null);
            }
            parameters
        })
}

#[test]
fn generated_image_parameters_never_panic() {
    let fixture = fixture();
    let mut runner = TestRunner::new(config(384));
    runner
        .run(&image_parameters(&fixture), |parameters| {
            match data::build("images", &parameters) {
                Ok(source) => exercise(&*source, &fixture.files),
                Err(error) => assert_reads_well(&error),
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn generated_dummy_parameters_are_checked_before_they_are_read() {
    let shape = prop::collection::vec(
        prop_oneof![4 => (0u64..6).prop_map(Value::from), 1 => any::<u64>().prop_map(Value::from)],
        0..5,
    );
    let count = prop_oneof![
        4 => (0u64..6).prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
    ];
    let strategy = (
        prop::option::of(count.clone()),
        prop::option::weighted(0.2, count),
        prop::option::of(shape.clone()),
        prop::option::of(any::<bool>()),
        prop::option::of(shape),
    );
    let mut runner = TestRunner::new(config(384));
    runner
        .run(
            &strategy,
            |(record_count, limit, image_shape, include_image, tensor_shape)| {
                let mut parameters = Mapping::new();
                let mut put = |key: &str, value: Option<Value>| {
                    if let Some(value) = value {
                        parameters.insert(Value::from(key), value);
                    }
                };
                put("record_count", record_count);
                put("limit", limit);
                put("image_shape", image_shape.map(Value::Sequence));
                put("include_image", include_image.map(Value::Bool));
                put("tensor_shape", tensor_shape.map(Value::Sequence));
                match data::build("dummy", &parameters) {
                    Ok(source) => exercise(&*source, &[]),
                    Err(error) => assert_reads_well(&error),
                }
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn a_path_that_is_not_a_file_is_refused_when_built() {
    let fixture = fixture();
    let folder = fixture.good.join("folder.png");
    let parameters = Mapping::from_iter([(
        Value::from("paths"),
        Value::Sequence(vec![Value::from(folder.display().to_string())]),
    )]);
    let error = data::build("images", &parameters).err().unwrap();
    assert_eq!(
        error.to_string(),
        format!("data_source.paths: {} is not a file", folder.display())
    );
}

#[test]
fn a_readable_source_passes_every_check() {
    let fixture = fixture();
    let parameters: Mapping = serde_yaml::from_str(&format!(
        "{{directory: {}, repeat: 4}}",
        fixture.good.display()
    ))
    .unwrap();
    let source = data::build("images", &parameters).unwrap();
    exercise(&*source, &fixture.files);
    assert_eq!(source.read_all().unwrap().len(), 4);
}

/// A JPEG whose magic number is broken (`FF D8 00` for `FF D8 FF`): in
/// memory its format cannot be told, as a `.jpg` file its extension tells
/// it. (A case the property test above once drew.)
#[test]
fn a_file_whose_bytes_name_no_format_decodes_by_its_extension() {
    let mut bytes = Vec::new();
    image::RgbImage::from_pixel(5, 3, image::Rgb([200, 10, 10]))
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Jpeg,
        )
        .unwrap();
    bytes[2] = 0;
    assert!(image::guess_format(&bytes).is_err());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broken-magic.jpg");
    std::fs::write(&file, &bytes).unwrap();
    assert_eq!(
        images::decode_rgb_bytes(&bytes).unwrap_err(),
        "The image format could not be determined"
    );
    assert_eq!(images::decode_rgb(&file).unwrap().dimensions(), (5, 3));
}
