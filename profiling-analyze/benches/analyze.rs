//! Analyzing a large export.
//!
//! `cargo bench -p profiling-analyze --bench analyze`

use std::hint::black_box;
use std::path::Path;

use profiling_analyze::{analyze, Request};
use rusqlite::{params, Connection};

fn main() {
    divan::main();
}

const PASSES: i64 = 1_000;
const KERNELS_PER_PASS: i64 = 1_000;

/// The passes written: [`PASSES`], or 10 when the benchmark runs once as a
/// test (`cargo test`, unoptimized), which checks that it runs, not what it
/// costs (`cargo bench` passes `--bench`).
fn passes() -> i64 {
    if std::env::args().any(|a| a == "--bench") {
        PASSES
    } else {
        10
    }
}

/// 1,000 passes of a range holding a nested one, each launching 1,000
/// kernels: 1,000,000 kernel records and as many runtime calls.
fn write_export(path: &Path) {
    let passes = passes();
    let mut db = Connection::open(path).unwrap();
    db.execute_batch(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT, globalTid INTEGER, textId INTEGER);
         CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER);
         CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL);
         INSERT INTO StringIds VALUES (1, 'gemm'), (2, 'relu'), (3, 'softmax');",
    )
    .unwrap();
    let tid = (7i64 << 24) | 1;
    let transaction = db.transaction().unwrap();
    {
        let mut range = transaction
            .prepare("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?1, ?2, 59, ?3, ?4)")
            .unwrap();
        let mut launch = transaction
            .prepare("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?1, ?2, ?3, ?4)")
            .unwrap();
        let mut kernel = transaction
            .prepare("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?1, ?2, ?3, ?4, ?5, ?5)")
            .unwrap();
        let pass_ns = KERNELS_PER_PASS * 100 + 1_000;
        range
            .execute(params![0, passes * pass_ns, "profile-target", tid])
            .unwrap();
        for pass in 0..passes {
            let b = pass * pass_ns;
            range
                .execute(params![b, b + pass_ns, format!("iteration {pass}"), tid])
                .unwrap();
            range
                .execute(params![b + 10, b + pass_ns - 10, "model", tid])
                .unwrap();
            range
                .execute(params![b + 20, b + pass_ns / 2, "encoder", tid])
                .unwrap();
            for k in 0..KERNELS_PER_PASS {
                let correlation = pass * KERNELS_PER_PASS + k;
                let at = b + 30 + k * 100;
                launch
                    .execute(params![at, at + 5, tid, correlation])
                    .unwrap();
                kernel
                    .execute(params![
                        at + 20,
                        at + 90,
                        correlation,
                        7i64 << 24,
                        1 + k % 3
                    ])
                    .unwrap();
            }
        }
    }
    transaction.commit().unwrap();
}

/// The analysis of an export with 1,000,000 kernels.
#[divan::bench(sample_count = 3)]
fn one_million_kernels(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.sqlite");
    write_export(&path);
    let request = Request {
        capture_range: "profile-target".to_owned(),
        kernels: 5,
        time_limit: profiling_analyze::DEFAULT_TIME_LIMIT,
    };
    bencher.bench(|| black_box(analyze(&path, &request).unwrap()));
}
