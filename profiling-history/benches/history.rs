//! What the store costs: writing one long run, reading a target's series
//! over many stored runs, and finding the changes of a long series.
//!
//! `cargo bench -p profiling-history --bench history`

use std::hint::black_box;
use std::path::PathBuf;

use profiling_history::changes::Detector;
use profiling_history::{Machine, Metric, RangeRow, Record, SeriesQuery, Store};

fn main() {
    divan::main();
}

/// Ranges of the runs written (and the pass).
const RANGES: usize = 20;
/// Runs in the store `series` reads.
const STORED: usize = 10_000;
/// Commits of the series whose changes are found.
const COMMITS: usize = 1_000;

/// `n`, or a hundredth of it (at least 10) when the benchmarks run once
/// each as tests (`cargo test`, unoptimized), which checks that they run,
/// not what they cost: `cargo bench` passes `--bench`.
fn sized(n: usize) -> usize {
    if std::env::args().any(|a| a == "--bench") {
        n
    } else {
        (n / 100).max(10)
    }
}

fn row(part: &'static str, path: String, p50: u64) -> RangeRow {
    RangeRow {
        part,
        name: path.clone(),
        path,
        depth: 0,
        count: 10_000,
        p50_ns: p50,
        p90_ns: p50 + 10,
        p95_ns: Some(p50 + 15),
        p99_ns: p50 + 20,
        mean_ns: p50,
        min_ns: Some(p50 / 2),
        max_ns: p50 * 2,
        low_ns: Some(p50 - 1),
        high_ns: Some(p50 + 1),
        alloc_bytes: None,
        peak_bytes: None,
    }
}

/// A run of 10,000 passes and [`RANGES`] ranges: its rows, and samples
/// the size a run of that many keeps (every sample of every range, inclusive
/// and exclusive, two bytes each before deflating), compressed as a run's are.
fn record(k: usize, samples: &[u8]) -> Record {
    let mut ranges = vec![row("pass", "pass".to_owned(), 100_000 + k as u64 % 97)];
    ranges.extend((0..RANGES).map(|r| row("range", format!("stage-{r:02}"), 5_000 + r as u64)));
    Record {
        kind: "run",
        profile: "bench".to_owned(),
        run_id: format!("run-{k}"),
        place: String::new(),
        status: "completed",
        started_at: format!("2026-12-06T10:00:00.{k:06}Z"),
        finished_at: "2026-12-06T10:00:01Z".to_owned(),
        git_commit: Some(format!("{:040x}", k / 4)),
        git_dirty: Some(false),
        machine: Machine {
            fingerprint: "0123456789abcdef".to_owned(),
            host: "bench".to_owned(),
            os: "Linux".to_owned(),
            cpu_model: "a CPU".to_owned(),
            cores: 2,
            backend: "none".to_owned(),
            gpus: String::new(),
            kernel: "6.1.0".to_owned(),
            governor: "performance".to_owned(),
            gpu_driver: String::new(),
        },
        config: "cfg".to_owned(),
        config_description: "{}".to_owned(),
        iterations: 10_000,
        run_dir: PathBuf::from(format!("/runs/{k}")),
        ranges,
        manifest: "{}".to_owned(),
        samples: Some(samples.to_vec()),
    }
}

/// 10,000 passes × (2 × 20 ranges + 2) series of samples, two bytes of
/// varint each as `samples.bin` keeps durations of a few µs, varying as
/// measured durations do (a generator's low bits, which deflate cannot
/// squeeze much).
fn long_run_samples() -> Vec<u8> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..10_000u32 * 42)
        .flat_map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let value = (state >> 33) as u16 & 0x3fff;
            [(value & 0x7f) as u8 | 0x80, (value >> 7) as u8]
        })
        .collect()
}

/// The samples deflated, then the record written: what a run costs the
/// store once its directory is complete (the manifest's reading aside).
#[divan::bench(sample_count = 20)]
fn write_a_run_of_10000_passes_and_20_ranges(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("history.sqlite")).unwrap();
    let raw = long_run_samples();
    let mut k = 0;
    bencher.bench_local(|| {
        k += 1;
        let samples = profiling_history::record::deflate(black_box(&raw));
        store.record(&record(k, &samples)).unwrap()
    });
}

#[divan::bench(sample_count = 10)]
fn series_of_a_target_over_10000_runs(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("history.sqlite")).unwrap();
    for k in 0..sized(STORED) {
        store.record(&record(k, &[])).unwrap();
    }
    let query = SeriesQuery {
        profile: "bench".to_owned(),
        metric: Metric::P50,
        machine: None,
        config: None,
    };
    bencher.bench_local(|| {
        let series = store.series(black_box(&query)).unwrap();
        assert_eq!(series.len(), RANGES + 1);
        series
    });
}

#[divan::bench(sample_count = 10)]
fn changes_in_a_series_of_1000_commits(bencher: divan::Bencher) {
    // A 3 % shift a third of the way and a 5 % one two thirds of the way,
    // in noise of 1 %.
    let commits = sized(COMMITS);
    let values: Vec<f64> = (0..commits)
        .map(|k| {
            let level = if k < commits / 3 {
                1000.0
            } else if k < 2 * commits / 3 {
                1030.0
            } else {
                1081.5
            };
            let noise = ((k * 7919 % 101) as f64 - 50.0) / 50.0 * 10.0;
            level + noise
        })
        .collect();
    let detector = Detector::default();
    bencher.bench_local(|| detector.splits(black_box(&values)));
}
