//! What a run directory holds is read back by `compare`, `report` and
//! `sweep --resume`, and a run directory may come from someone else: any
//! samples file and any manifest are read or refused with an error that
//! reads well, never a panic. (The fuzz target `run_dir` runs the same
//! reading for longer; see docs/TESTING.md.)

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;
use proptest::sample::select;
use serde_yaml::{Mapping, Value};

use profiling_compare::runs;
use profiling_core::driver::run_samples::{RunSamples, SAMPLES_FILE};
use profiling_core::timing::SampleSet;

#[path = "../../profiling-core/tests/common/mod.rs"]
mod common;

use common::{assert_reads_well, config};

/// The samples of a small measured run, as `samples.bin` holds them.
fn valid_samples() -> Vec<u8> {
    let mut passes = SampleSet::with_capacity(8);
    for value in [1_000, 3_000, 2_000, 2_500] {
        passes.push(value);
    }
    let mut ranges = BTreeMap::new();
    ranges.insert("work".to_owned(), (passes.clone(), passes.clone()));
    RunSamples::from_sets(&passes, &passes, &ranges).encode()
}

/// A manifest `runs::load` reads, as YAML: one a run writes.
fn valid_manifest() -> Value {
    let mut manifest = profiling_core::driver::manifest::Manifest::sample("r1");
    manifest.samples = Some(profiling_core::driver::manifest::SamplesSummary {
        path: SAMPLES_FILE.into(),
        version: 2,
        series: 3,
        bytes: 1,
        sketched: false,
    });
    serde_yaml::to_value(&manifest).unwrap()
}

/// Writes a run directory of `manifest` and `samples` under `dir`.
fn write_run(dir: &Path, manifest: &Value, samples: &[u8]) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("manifest.yaml"),
        serde_yaml::to_string(manifest).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.join(SAMPLES_FILE), samples).unwrap();
}

/// Values a crafted manifest might put anywhere.
fn hostile_value() -> impl Strategy<Value = Value> {
    select(vec![
        Value::Null,
        Value::from(""),
        Value::from("../../../../etc/passwd"),
        Value::from("a/b"),
        Value::from("\u{1b}[2J"),
        Value::from(-1),
        Value::from(u64::MAX),
        Value::from(1e308),
        Value::from(99),
        Value::Bool(true),
        Value::Sequence(vec![Value::from(1), Value::Null]),
        Value::Mapping(Mapping::new()),
        Value::from("completed"),
        Value::from("failed"),
    ])
}

/// Keys of a manifest, at the top and one level down.
const KEYS: &[&str] = &[
    "schema_version",
    "profile_name",
    "run_id",
    "status",
    "workload",
    "workload.iterations",
    "completed_iterations",
    "completed_warmup",
    "samples",
    "samples.path",
    "error",
    "error.message",
    "record_ids",
    "target",
    "git_commit",
    "timings",
];

fn set(manifest: &mut Value, key: &str, value: Value) {
    let mut at = manifest;
    let parts: Vec<&str> = key.split('.').collect();
    for part in &parts[..parts.len() - 1] {
        if !at.get(*part).is_some_and(Value::is_mapping) {
            at[*part] = Value::Mapping(Mapping::new());
        }
        at = &mut at[*part];
    }
    if let Value::Mapping(mapping) = at {
        mapping.insert(Value::from(parts[parts.len() - 1]), value);
    }
}

fn check_load(dir: &Path) {
    match runs::load(dir) {
        Ok(run) => {
            // What was read is what paths are built from: plain names.
            for name in [&run.profile, &run.run_id] {
                assert!(
                    !name.contains('/') && name != ".." && !name.is_empty(),
                    "{name}"
                );
            }
        }
        Err(error) => assert_reads_well(&error),
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn arbitrary_bytes_as_samples_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..1024)) {
        if let Err(error) = RunSamples::decode(&bytes) {
            assert_reads_well(&error);
        }
    }

    #[test]
    fn a_damaged_samples_file_never_panics(
        flips in prop::collection::vec((any::<usize>(), any::<u8>()), 0..8),
        cut in any::<usize>(),
    ) {
        let mut bytes = valid_samples();
        let len = bytes.len();
        for (at, byte) in flips {
            bytes[at % len] ^= byte;
        }
        bytes.truncate(cut % (len + 1));
        if let Err(error) = RunSamples::decode(&bytes) {
            assert_reads_well(&error);
        }
    }

    #[test]
    fn a_crafted_manifest_is_read_or_refused_never_a_panic(
        edits in prop::collection::vec((select(KEYS), hostile_value()), 0..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut manifest = valid_manifest();
        for (key, value) in edits {
            set(&mut manifest, key, value);
        }
        write_run(&dir.path().join("r1"), &manifest, &valid_samples());
        check_load(&dir.path().join("r1"));
    }

    #[test]
    fn arbitrary_text_as_a_manifest_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("manifest.yaml"), &bytes).unwrap();
        std::fs::write(dir.path().join(SAMPLES_FILE), valid_samples()).unwrap();
        check_load(dir.path());
    }
}

/// The fixture itself is a run `load` reads: the properties above start
/// from something valid.
#[test]
fn the_valid_run_is_read() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &valid_manifest(), &valid_samples());
    let run = runs::load(dir.path()).unwrap();
    assert_eq!((run.profile.as_str(), run.run_id.as_str()), ("t", "r1"));
    assert_eq!(run.samples.passes.kept, [1_000, 3_000, 2_000, 2_500]);
}
