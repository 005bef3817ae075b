//! Any bytes, as a COCO annotation file, parse to images with their
//! annotations or give an error that says what is wrong. Never a panic;
//! every box kept is four finite numbers with a width and height >= 0,
//! and every annotation belongs to an image the file lists.

#![no_main]

use libfuzzer_sys::fuzz_target;
use profiling_sources::coco::parse_annotations;

fuzz_target!(|bytes: &[u8]| {
    match parse_annotations(bytes) {
        Ok(index) => {
            for entry in &index.entries {
                for annotation in &entry.annotations {
                    let [_, _, width, height] = annotation.bbox_xywh;
                    assert!(annotation.bbox_xywh.iter().all(|v| v.is_finite()));
                    assert!(width >= 0.0 && height >= 0.0);
                    assert!(annotation.area.is_finite() && annotation.area >= 0.0);
                    assert!(annotation.iscrowd <= 1);
                }
            }
        }
        Err(message) => assert!(!message.trim().is_empty()),
    }
});
