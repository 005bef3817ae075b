//! Any bytes, split into a manifest and a samples file, written as a run
//! directory and read back as `compare` and `report` read one: a run, or an
//! error whose first line says what is wrong. Never a panic, and a run read
//! never names a path with its profile or run id.

#![no_main]

use libfuzzer_sys::fuzz_target;
use profiling_compare::runs;
use profiling_core::driver::run_samples::{RunSamples, SAMPLES_FILE};

fn assert_reads_well(error: &dyn std::fmt::Display) {
    let text = error.to_string();
    let first = text.lines().next().unwrap_or_default();
    assert!(!first.trim().is_empty(), "{text:?}");
}

fuzz_target!(|bytes: &[u8]| {
    // The first byte says where the manifest ends and the samples begin.
    let Some((&split, rest)) = bytes.split_first() else {
        return;
    };
    let at = (split as usize * rest.len()) / 255;
    let (manifest, samples) = rest.split_at(at.min(rest.len()));
    if let Err(error) = RunSamples::decode(samples) {
        assert_reads_well(&error);
    }
    let dir = std::env::temp_dir().join(format!("profiling-fuzz-run-dir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("manifest.yaml"), manifest).unwrap();
    std::fs::write(dir.join(SAMPLES_FILE), samples).unwrap();
    match runs::load(&dir) {
        Ok(run) => {
            for name in [&run.profile, &run.run_id] {
                assert!(!name.contains('/') && name != "..", "{name}");
            }
        }
        Err(error) => assert_reads_well(&error),
    }
});
