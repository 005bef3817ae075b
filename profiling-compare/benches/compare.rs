//! Writing a run's samples and comparing two runs.
//!
//! `cargo bench -p profiling-compare --bench compare`

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::Path;

use profiling_compare::{self as compare, runs, Options};
use profiling_core::driver::manifest::{Manifest, SamplesSummary};
use profiling_core::driver::run_samples::{RunSamples, SAMPLES_FILE, SAMPLES_VERSION};
use profiling_core::timing::SampleSet;

fn main() {
    divan::main();
}

/// `count` durations around `center` ns, varied by a fixed sequence.
fn durations(count: usize, center: u64, salt: u64) -> SampleSet {
    let mut set = SampleSet::with_capacity(count);
    for i in 0..count as u64 {
        let wobble = (i.wrapping_mul(7919).wrapping_add(salt) % 2001) * center / 20_000;
        set.push(center - center / 20 + wobble);
    }
    set
}

/// 100,000 passes of one call with 5 ranges: the samples of a long run.
fn long_run() -> RunSamples {
    let passes = durations(100_000, 2_000_000, 0);
    let mut ranges = BTreeMap::new();
    for (index, center) in [50_000u64, 100_000, 200_000, 400_000, 1_000_000]
        .into_iter()
        .enumerate()
    {
        ranges.insert(
            format!("range {index}"),
            (
                durations(100_000, center, index as u64),
                durations(100_000, center / 3, index as u64),
            ),
        );
    }
    RunSamples::from_sets(&passes, &passes, &ranges)
}

/// Encoding the samples of 100,000 passes with 5 ranges (1.2 million
/// durations), as a run writes them; the bytes are printed once.
#[divan::bench(sample_count = 10)]
fn encode_100k_passes_5_ranges(bencher: divan::Bencher) {
    let samples = long_run();
    eprintln!(
        "samples.bin of 100,000 passes with 5 ranges: {} bytes",
        samples.encode().len()
    );
    bencher.bench(|| black_box(samples.encode()));
}

/// Writes a run whose 1,000,000 calls take `center` ns, with one range:
/// its samples and a manifest as a run writes one.
fn write_call_run(dir: &Path, run_id: &str, center: u64) {
    let calls = durations(1_000_000, center, 3);
    let passes = durations(1_000, center * 1_000, 5);
    let mut ranges = BTreeMap::new();
    ranges.insert(
        "work".to_owned(),
        (
            durations(1_000_000, center / 2, 7),
            durations(1_000_000, center / 2, 7),
        ),
    );
    let samples = RunSamples::from_sets(&passes, &calls, &ranges);
    let run = dir.join(run_id);
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join(SAMPLES_FILE), samples.encode()).unwrap();
    let mut manifest = Manifest::sample(run_id);
    manifest.profile_name = "bench".to_owned();
    manifest.target.name = "bench".to_owned();
    manifest.workload.iterations = 1_000;
    manifest.completed_iterations = 1_000;
    manifest.samples = Some(SamplesSummary {
        path: SAMPLES_FILE.into(),
        version: SAMPLES_VERSION,
        series: 0,
        bytes: 0,
        sketched: false,
    });
    let manifest = manifest.to_yaml().unwrap();
    std::fs::write(run.join("manifest.yaml"), manifest).unwrap();
}

/// `profile-cli compare` of two runs of 1,000,000 call samples each (and
/// as many of one range): both read from disk, then every row with the
/// default 100,000 bootstrap resamples and the U test.
#[divan::bench(sample_count = 10)]
fn compare_two_runs_of_1m_calls(bencher: divan::Bencher) {
    let out = tempfile::tempdir().unwrap();
    write_call_run(out.path(), "base", 10_000);
    write_call_run(out.path(), "candidate", 10_300);
    let options = Options::default();
    bencher.bench(|| {
        let base = runs::load(&out.path().join("base")).unwrap();
        let candidate = runs::load(&out.path().join("candidate")).unwrap();
        black_box(compare::compare(&base, &candidate, &options, false).unwrap())
    });
}
