//! The `coco` and `video` sources never panic on what they parse: arbitrary
//! bytes and a valid COCO file with bytes changed or cut, written as the
//! annotation file, go through `data::build` and `read_all`, and come back
//! as records or an error that names the file; arbitrary text as what
//! ffprobe says of a stream gives a stream or an error.

use proptest::prelude::*;

use profiling_core::data;
use profiling_sources::{coco::parse_annotations, video::parse_probe};

use crate::common::{assert_reads_well, each_damaged};

const VALID: &str = r#"{"images": [{"id": 1, "file_name": "a.png", "width": 4, "height": 2}],
"annotations": [{"id": 7, "image_id": 1, "category_id": 3, "bbox": [0, 0.5, 2, 1], "area": 2, "iscrowd": 0}],
"categories": [{"id": 3, "name": "cup"}]}"#;

/// Builds the source on an annotation file holding `bytes` beside the one
/// image it may name, and reads it; every error reads well and names the
/// file.
fn exercise(bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    image::RgbImage::new(4, 2)
        .save(dir.path().join("a.png"))
        .unwrap();
    let annotations = dir.path().join("instances.json");
    std::fs::write(&annotations, bytes).unwrap();
    let parameters = serde_yaml::from_str(&format!(
        "{{annotations: '{}', images: '{}'}}",
        annotations.display(),
        dir.path().display()
    ))
    .unwrap();
    let direct = parse_annotations(bytes);
    match data::build("coco", &parameters) {
        Ok(source) => {
            assert!(direct.is_ok());
            let _ = source.describe();
            let _ = source.estimated_bytes();
            let records = source.read_all().unwrap();
            for record in &records {
                let boxes = record.tensor("boxes").unwrap();
                assert!(boxes.iter().all(|v| v.is_finite()), "{boxes:?}");
            }
        }
        Err(error) => {
            assert_reads_well(&error);
            if let Err(message) = direct {
                assert!(
                    error
                        .to_string()
                        .contains(&annotations.display().to_string()),
                    "{error}"
                );
                assert!(error.to_string().ends_with(message.as_str()), "{error}");
            }
        }
    }
}

#[test]
fn a_valid_coco_file_reads_and_every_change_to_it_reads_or_is_refused_naming_the_file() {
    exercise(VALID.as_bytes());
    assert!(parse_annotations(VALID.as_bytes()).is_ok());
    each_damaged(VALID.as_bytes(), 128, exercise);
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_as_a_coco_file_parse_or_are_refused(
        bytes in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        if let Err(message) = parse_annotations(&bytes) {
            prop_assert!(!message.trim().is_empty());
        }
    }

    #[test]
    fn arbitrary_text_as_ffprobes_answer_gives_a_stream_or_an_error(
        text in "((codec_name|width|height|r_frame_rate|nb_read_packets|[a-z]{0,4})=[0-9/A-Za-z-]{0,8}\n){0,7}",
    ) {
        match parse_probe(&text) {
            Ok(info) => prop_assert!(info.width >= 1 && info.height >= 1),
            Err(message) => prop_assert!(!message.trim().is_empty()),
        }
    }
}
