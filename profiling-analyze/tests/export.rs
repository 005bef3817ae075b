//! The analysis of exports built here from NVIDIA's documented SQLite
//! schema: three passes; `preprocess` holding `resize` on the main thread
//! and `decode` on a second one; kernels, a memcpy and a memset launched
//! inside ranges; a kernel launched in a pass outside any range; a kernel
//! launched outside the capture (it must not count); a kernel finishing
//! after its range closed (it counts for the range); range texts both
//! inline and through `StringIds`.

use std::path::Path;

use profiling_analyze::{analyze, AnalyzeError, Request};
use rusqlite::{params, Connection};

const PID: i64 = 100;
const MAIN: i64 = (PID << 24) | 1;
const WORKER: i64 = (PID << 24) | 2;
const GLOBAL_PID: i64 = PID << 24;

/// The tables, with the columns of the documented schema this analysis
/// reads (and a few it does not).
const SCHEMA: &str = "
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, srcKind INTEGER, dstKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER PRIMARY KEY, name TEXT NOT NULL, label TEXT);
";

fn range(
    db: &Connection,
    start: i64,
    end: i64,
    tid: i64,
    text: Option<&str>,
    text_id: Option<i64>,
) {
    db.execute(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId) VALUES (?1, ?2, 59, ?3, ?4, ?5)",
        params![start, end, text, tid, text_id],
    )
    .unwrap();
}

fn launch(db: &Connection, correlation: i64, tid: i64, start: i64) {
    db.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue) VALUES (?1, ?2, 0, ?3, ?4, 0, 0)",
        params![start, start + 5, tid, correlation],
    )
    .unwrap();
}

fn kernel(db: &Connection, correlation: i64, start: i64, end: i64, name_id: i64) {
    db.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ) VALUES (?1, ?2, 0, 1, 7, ?3, ?4, ?5, ?5, 32, 1, 1, 1, 128, 1, 1)",
        params![start, end, correlation, GLOBAL_PID, name_id],
    )
    .unwrap();
}

/// Writes the export described at the top of this file.
fn write_export(path: &Path) {
    let db = Connection::open(path).unwrap();
    db.execute_batch(SCHEMA).unwrap();
    for (id, value) in [
        (1, "profile-target"),
        (2, "preprocess"),
        (3, "kernelA(float*)"),
        (4, "kernelB"),
        (5, "kernelC"),
        (6, "runner"),
        (7, "worker"),
        (8, "kernelOutside"),
    ] {
        db.execute(
            "INSERT INTO StringIds (id, value) VALUES (?1, ?2)",
            params![id, value],
        )
        .unwrap();
    }
    db.execute_batch(&format!(
        "INSERT INTO ThreadNames VALUES (6, 0, {MAIN}); INSERT INTO ThreadNames VALUES (7, 0, {WORKER});
         INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (1, 'CUDA_MEMCPY_OPER_HTOD', 'Host-to-Device');"
    ))
    .unwrap();
    // The capture, by id; passes inline.
    range(&db, 1_000, 10_000, MAIN, None, Some(1));
    for pass in 0..3i64 {
        let b = 1_000 + 3_000 * pass;
        range(
            &db,
            b,
            b + 3_000,
            MAIN,
            Some(&format!("iteration {pass}")),
            None,
        );
        range(&db, b + 100, b + 2_100, MAIN, None, Some(2));
        range(&db, b + 200, b + 1_200, MAIN, Some("resize"), None);
        range(&db, b + 500, b + 1_500, WORKER, Some("decode"), None);
        let c = 10 * pass;
        // In `resize` (so in `preprocess` too).
        launch(&db, c + 1, MAIN, b + 300);
        kernel(&db, c + 1, b + 400, b + 900, 3);
        // In `preprocess` after `resize`: a memcpy.
        launch(&db, c + 2, MAIN, b + 1_500);
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, copyKind) VALUES (?1, ?2, 0, 1, 7, ?3, ?4, 4096, 1)",
            params![b + 1_600, b + 1_700, c + 2, GLOBAL_PID],
        )
        .unwrap();
        // In `preprocess`, finishing after it closed (at b + 2,100).
        launch(&db, c + 3, MAIN, b + 2_000);
        kernel(&db, c + 3, b + 2_050, b + 2_600, 4);
        // In `decode` on the worker: a memset.
        launch(&db, c + 4, WORKER, b + 600);
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, correlationId, globalPid, value, bytes) VALUES (?1, ?2, 0, 1, 7, ?3, ?4, 0, 1024)",
            params![b + 700, b + 800, c + 4, GLOBAL_PID],
        )
        .unwrap();
        // In the pass, outside every range.
        launch(&db, c + 5, MAIN, b + 2_500);
        kernel(&db, c + 5, b + 2_700, b + 2_800, 5);
    }
    // Outside the capture: a range and its kernel, which must not count.
    range(&db, 20_000, 21_000, MAIN, None, Some(2));
    launch(&db, 99, MAIN, 20_500);
    kernel(&db, 99, 20_600, 20_700, 8);
}

fn request() -> Request {
    Request {
        capture_range: "profile-target".to_owned(),
        kernels: 5,
        time_limit: profiling_analyze::DEFAULT_TIME_LIMIT,
    }
}

#[test]
fn every_range_gets_the_gpu_work_launched_inside_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.sqlite");
    write_export(&path);
    let analysis = analyze(&path, &request()).unwrap();
    assert!(analysis.cuda_traced, "an export with CUDA tables");
    assert_eq!(analysis.nsys_version, None, "no EXPORT_META_DATA");
    assert_eq!((analysis.process_id, analysis.capture_ns), (100, 9_000));

    let paths: Vec<(&str, u32, &str, u64)> = analysis
        .ranges
        .iter()
        .map(|r| (r.path.as_str(), r.depth, r.thread.as_str(), r.count))
        .collect();
    assert_eq!(
        paths,
        [
            ("preprocess", 0, "runner", 3),
            ("preprocess/resize", 1, "runner", 3),
            ("decode", 0, "worker", 3),
        ]
    );
    let figures: Vec<(u64, u64, u64, u64, u64)> = analysis
        .ranges
        .iter()
        .map(|r| {
            (
                r.host.p50_ns,
                r.gpu_busy.unwrap().p50_ns,
                r.gpu_sum_ns,
                r.gpu_activities,
                r.launch_to_completion.unwrap().p50_ns,
            )
        })
        .collect();
    assert_eq!(
        figures,
        [
            // kernelA 500 + memcpy 100 + kernelB 550, launched from 300
            // until kernelB ends at 2,600 (after the range closed).
            (2_000, 1_150, 3 * 1_150, 9, 2_300),
            (1_000, 500, 3 * 500, 3, 600),
            (1_000, 100, 3 * 100, 3, 200),
        ]
    );
    let kernels: Vec<(&str, u64, u64, u64)> = analysis.ranges[0]
        .kernels
        .iter()
        .map(|k| (k.name.as_str(), k.count, k.total_ns, k.median_ns))
        .collect();
    assert_eq!(
        kernels,
        [
            ("kernelB", 3, 1_650, 550),
            ("kernelA(float*)", 3, 1_500, 500),
            ("[CUDA memcpy Host-to-Device]", 3, 300, 100)
        ]
    );
    assert_eq!(analysis.ranges[2].kernels[0].name, "[CUDA memset]");

    // Per pass: the union of everything launched in it, within it.
    assert_eq!(analysis.passes.len(), 3);
    for (index, pass) in analysis.passes.iter().enumerate() {
        assert_eq!(pass.name, format!("iteration {index}"));
        assert_eq!(pass.start_ns, 3_000 * index as u64);
        assert_eq!((pass.duration_ns, pass.gpu_busy_ns), (3_000, 1_250));
        // From kernelA's end (900) to the memcpy (1,600).
        assert_eq!(pass.largest_gpu_idle_ns, 700);
    }
    assert!((analysis.mean_gpu_busy_fraction - 1_250.0 / 3_000.0).abs() < 1e-12);
    // 5 activities a pass; kernelC in no range; kernelOutside not at all.
    assert_eq!(
        (
            analysis.gpu_activities,
            analysis.gpu_activities_outside_ranges
        ),
        (15, 3)
    );
    assert!(analysis.notes.is_empty(), "{:?}", analysis.notes);
}

#[test]
fn without_its_capture_range_the_passes_stand_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.sqlite");
    write_export(&path);
    Connection::open(&path)
        .unwrap()
        .execute("DELETE FROM NVTX_EVENTS WHERE textId = 1", [])
        .unwrap();
    let analysis = analyze(&path, &request()).unwrap();
    assert_eq!(analysis.capture_ns, 9_000);
    assert_eq!(analysis.passes.len(), 3);
    assert_eq!(analysis.ranges[0].gpu_sum_ns, 3 * 1_150);
    assert!(analysis.notes[0].starts_with("no range named `profile-target`"));
}

#[test]
fn top_kernels_are_cut_to_the_number_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.sqlite");
    write_export(&path);
    let analysis = analyze(
        &path,
        &Request {
            kernels: 1,
            ..request()
        },
    )
    .unwrap();
    assert_eq!(analysis.ranges[0].kernels.len(), 1);
    assert_eq!(analysis.ranges[0].kernels[0].name, "kernelB");
}

#[test]
fn what_is_not_an_export_of_this_capture_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.sqlite");
    std::fs::write(&text, "not a database").unwrap();
    assert!(matches!(
        analyze(&text, &request()),
        Err(AnalyzeError::NotSqlite(_))
    ));
    assert!(analyze(&text, &request())
        .unwrap_err()
        .to_string()
        .ends_with("notes.sqlite: not a SQLite file (export the report with: nsys export --type sqlite REPORT.nsys-rep)"));

    let other = dir.path().join("other.sqlite");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE things (id INTEGER);")
        .unwrap();
    assert!(matches!(
        analyze(&other, &request()),
        Err(AnalyzeError::NotAnExport(_))
    ));

    let bare = dir.path().join("bare.sqlite");
    Connection::open(&bare)
        .unwrap()
        .execute_batch("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);")
        .unwrap();
    assert!(matches!(
        analyze(&bare, &request()),
        Err(AnalyzeError::NoNvtx(_))
    ));

    let path = dir.path().join("trace.sqlite");
    write_export(&path);
    let wrong = Request {
        capture_range: "capture".to_owned(),
        ..request()
    };
    let error = analyze(&path, &wrong).unwrap_err().to_string();
    assert!(
        error.ends_with("no NVTX range named `capture` (the capture range); the export's ranges include: decode, iteration 0, iteration 1, iteration 2, preprocess, profile-target, resize"),
        "{error}"
    );
}

/// The tables as Nsight Systems 2022.4 writes them on a CPU capture
/// (`--trace=nvtx,osrt --sample=process-tree`, read off a real export):
/// range texts inline, no CUDA table at all, OS runtime calls with their
/// nesting, samples with their call chains, and the export's metadata.
const SCHEMA_2022_4_CPU: &str = "
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE OSRT_API (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, nestingLevel INTEGER, callchainId INTEGER);
CREATE TABLE COMPOSITE_EVENTS (id INTEGER NOT NULL, start INTEGER NOT NULL, cpu INTEGER, threadState INTEGER, globalTid INTEGER, cpuCycles INTEGER NOT NULL);
CREATE TABLE SAMPLING_CALLCHAINS (id INTEGER NOT NULL, symbol INTEGER NOT NULL, module INTEGER NOT NULL, kernelMode INTEGER, thumbCode INTEGER, unresolved INTEGER, specialEntry INTEGER, originalIP INTEGER, unwindMethod INTEGER, stackDepth INTEGER NOT NULL);
CREATE TABLE EXPORT_META_DATA (name TEXT, value TEXT);
INSERT INTO EXPORT_META_DATA VALUES ('EXPORT_PRODUCT_NAME', 'NVIDIA Nsight Systems'), ('EXPORT_PRODUCT_VERSION', '2022.4.2.1');
";

/// Two passes of `work` holding `read` on the main thread: in each, one
/// `read` call (with a nested `__read_nocancel` that must not count
/// twice), three samples in `decode` and one in `memcpy` (inside `read`);
/// an OS call between ranges and one on another thread, which count for
/// no range.
fn write_cpu_export(path: &Path) {
    let db = Connection::open(path).unwrap();
    db.execute_batch(SCHEMA_2022_4_CPU).unwrap();
    for (id, value) in [
        (1, "read"),
        (2, "__read_nocancel"),
        (3, "pthread_mutex_lock"),
        (4, "decode"),
        (5, "memcpy"),
        (6, "main"),
        (7, "/bin/app"),
        (8, "libc.so.6"),
    ] {
        db.execute("INSERT INTO StringIds VALUES (?1, ?2)", params![id, value])
            .unwrap();
    }
    range(&db, 1_000, 10_000, MAIN, Some("profile-target"), None);
    let mut sample = 0;
    let mut sampled = |db: &Connection, time: i64, leaf: i64, module: i64| {
        sample += 1;
        db.execute(
            "INSERT INTO COMPOSITE_EVENTS VALUES (?1, ?2, 0, 1, ?3, 100)",
            params![sample, time, MAIN],
        )
        .unwrap();
        for (depth, symbol) in [leaf, 6].into_iter().enumerate() {
            db.execute(
                "INSERT INTO SAMPLING_CALLCHAINS VALUES (?1, ?2, ?3, 0, 0, NULL, 0, 0, 1, ?4)",
                params![sample, symbol, module, depth as i64],
            )
            .unwrap();
        }
    };
    let osrt = |db: &Connection, start: i64, end: i64, tid: i64, name: i64, nesting: i64| {
        db.execute(
            "INSERT INTO OSRT_API VALUES (?1, ?2, 27, ?3, ?4, 0, ?5, 0)",
            params![start, end, tid, name, nesting],
        )
        .unwrap();
    };
    for pass in 0..2i64 {
        let b = 1_000 + 4_000 * pass;
        range(
            &db,
            b,
            b + 4_000,
            MAIN,
            Some(&format!("iteration {pass}")),
            None,
        );
        range(&db, b + 100, b + 2_000, MAIN, Some("work"), None);
        range(&db, b + 500, b + 1_500, MAIN, Some("read"), None);
        osrt(&db, b + 600, b + 1_400, MAIN, 1, 0);
        osrt(&db, b + 700, b + 1_300, MAIN, 2, 1);
        osrt(&db, b + 2_500, b + 3_000, MAIN, 3, 0);
        osrt(&db, b + 600, b + 1_400, WORKER, 1, 0);
        for time in [b + 200, b + 300, b + 1_700] {
            sampled(&db, time, 4, 7);
        }
        sampled(&db, b + 1_000, 5, 8);
    }
}

/// A CPU capture of Nsight Systems 2022.4: per range, the time in OS
/// calls made on its thread while it was open (outermost calls only,
/// counting for the ranges around them too) and the functions it was
/// sampled in; no GPU columns, and a note that says why.
#[test]
fn a_cpu_capture_gives_os_calls_and_samples_per_range_and_says_it_has_no_cuda() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.sqlite");
    write_cpu_export(&path);
    let analysis = analyze(&path, &request()).unwrap();
    assert_eq!(analysis.nsys_version.as_deref(), Some("2022.4.2.1"));
    assert!(!analysis.cuda_traced);
    assert!(analysis.os_runtime_traced);
    assert_eq!(analysis.cpu_samples, 8);
    assert_eq!(analysis.passes.len(), 2);
    assert!(analysis
        .notes
        .iter()
        .any(|n| n.starts_with("the report holds no CUDA trace")));
    let paths: Vec<&str> = analysis.ranges.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["work", "work/read"]);
    let (work, read) = (&analysis.ranges[0], &analysis.ranges[1]);
    for range in [work, read] {
        assert_eq!(range.os_runtime_ns, 2 * 800, "{}", range.path);
        assert_eq!(
            range.os_calls,
            [profiling_analyze::OsCall {
                name: "read".to_owned(),
                count: 2,
                total_ns: 1_600,
            }]
        );
    }
    assert_eq!(work.samples, 8);
    let functions: Vec<(&str, &str, u64)> = work
        .sampled_functions
        .iter()
        .map(|f| (f.name.as_str(), f.module.as_str(), f.samples))
        .collect();
    assert_eq!(
        functions,
        [("decode", "/bin/app", 6), ("memcpy", "libc.so.6", 2)]
    );
    assert_eq!(read.samples, 2);
    assert_eq!(read.sampled_functions[0].name, "memcpy");
    assert_eq!(work.gpu_busy, None);
}
