//! Any text, as what ffprobe prints of a video stream, parses to a stream
//! whose frame sides are 1 to 16384, or gives an error that says which key
//! is missing or wrong. Never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use profiling_sources::video::parse_probe;

fuzz_target!(|bytes: &[u8]| {
    let text = String::from_utf8_lossy(bytes);
    match parse_probe(&text) {
        Ok(info) => {
            assert!((1..=16384).contains(&info.width));
            assert!((1..=16384).contains(&info.height));
            if let Some((numerator, denominator)) = info.frame_rate {
                assert!(numerator > 0 && denominator > 0);
            }
        }
        Err(message) => assert!(!message.trim().is_empty()),
    }
});
