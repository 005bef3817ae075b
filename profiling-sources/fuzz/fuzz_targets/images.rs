//! Any bytes, as the content of an image file, decode to RGB or give the
//! decoder's error, through the decoding step of the images source; what
//! decodes has the dimensions its header gives, which the memory estimate
//! of eager loading relies on. Never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use profiling_sources::images::{decode_rgb_bytes, image_dimensions_bytes};

fuzz_target!(|bytes: &[u8]| {
    match decode_rgb_bytes(bytes) {
        Ok(image) => {
            let header = image_dimensions_bytes(bytes).expect("a decodable image has a header");
            assert_eq!(header, image.dimensions());
        }
        Err(message) => assert!(!message.trim().is_empty()),
    }
});
