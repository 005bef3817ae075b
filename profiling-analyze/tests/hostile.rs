//! Exports made to hurt: SQL in a table's name, queries that never end,
//! ranges nested past any real program's depth. Each is refused, naming
//! the file, or analyzed as any other export, within a bounded time.
//!
//! Each analysis runs on a thread with a generous limit only so that a
//! hang fails the test instead of blocking the suite; no assertion depends
//! on how long anything took.

use std::path::Path;
use std::time::Duration;

use profiling_analyze::{
    analyze, Analysis, AnalyzeError, Request, MAX_NESTING_DEPTH, MAX_PATH_TEXT,
};
use rusqlite::{params, Connection};

const TID: i64 = (42 << 24) | 3;

/// Past this, the analysis is taken to hang and the test fails.
const HANG_LIMIT: Duration = Duration::from_secs(300);

fn request() -> Request {
    Request {
        capture_range: "profile-target".to_owned(),
        kernels: 3,
        time_limit: profiling_analyze::DEFAULT_TIME_LIMIT,
    }
}

/// `analyze(path, request)` on a thread; fails the test past [`HANG_LIMIT`].
fn analyze_or_hang(path: &Path, request: Request) -> Result<Analysis, AnalyzeError> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let owned = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = sender.send(analyze(&owned, &request));
    });
    receiver
        .recv_timeout(HANG_LIMIT)
        .unwrap_or_else(|_| panic!("the analysis of {} did not end", path.display()))
}

/// A capture of one pass holding `preprocess`, inline texts.
fn write_minimal(db: &Connection) {
    db.execute_batch(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT, globalTid INTEGER, textId INTEGER);",
    )
    .unwrap();
    for (start, end, text) in [
        (0, 1_000, "profile-target"),
        (0, 1_000, "iteration 0"),
        (100, 600, "preprocess"),
    ] {
        db.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?1, ?2, 59, ?3, ?4)",
            params![start, end, text, TID],
        )
        .unwrap();
    }
}

/// Table names are data: a quote in one (`it's`) is no syntax error, and
/// one written to be SQL (here a query that would never end) is never run.
#[test]
fn table_names_of_the_export_are_never_run_as_sql() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crafted.sqlite");
    let db = Connection::open(&path).unwrap();
    write_minimal(&db);
    db.execute_batch(
        r#"CREATE TABLE "it's" (a INTEGER);
           CREATE TABLE "x') UNION ALL SELECT * FROM (WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT i FROM c) --" (a INTEGER);"#,
    )
    .unwrap();
    drop(db);
    let analysis = analyze_or_hang(&path, request()).unwrap();
    let paths: Vec<&str> = analysis.ranges.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["preprocess"]);
}

/// Every query on an export stops at the request's time limit: a query
/// that would not end (a crafted view, a generated column that costs
/// seconds a row) becomes a refusal that names the file and the limit.
#[test]
fn queries_past_the_time_limit_are_refused_naming_the_export() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("slow.sqlite");
    let db = Connection::open(&path).unwrap();
    write_minimal(&db);
    // Enough rows that reading them takes the handler's turn.
    db.execute_batch("BEGIN").unwrap();
    for i in 0..5_000i64 {
        db.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?1, ?2, 59, 'step', ?3)",
            params![100 + i, 101 + i, TID],
        )
        .unwrap();
    }
    db.execute_batch("COMMIT").unwrap();
    drop(db);
    let error = analyze_or_hang(
        &path,
        Request {
            time_limit: Duration::ZERO,
            ..request()
        },
    )
    .unwrap_err();
    assert!(matches!(error, AnalyzeError::TimeLimit { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.starts_with(&format!("{}: ", path.display())) && message.contains("time limit"),
        "{message}"
    );
}

/// `depth` ranges nested one in the other inside one pass, each named
/// `level` (one string, as nsys writes repeated texts).
fn write_nested(path: &Path, depth: i64) {
    let mut db = Connection::open(path).unwrap();
    write_minimal(&db);
    let transaction = db.transaction().unwrap();
    {
        let mut insert = transaction
            .prepare("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?1, ?2, 59, 'level', ?3)")
            .unwrap();
        for level in 0..depth {
            // Inside `iteration 0` (0..1_000_000 after the update below).
            insert
                .execute(params![1_000 + level, 900_000 - level, TID])
                .unwrap();
        }
        transaction
            .execute_batch(
                "UPDATE NVTX_EVENTS SET end = 1000000 WHERE text IN ('profile-target', 'iteration 0')",
            )
            .unwrap();
    }
    transaction.commit().unwrap();
}

/// Ranges nested deeper than [`MAX_NESTING_DEPTH`] are refused before
/// their paths are made (each path holds every name above it: their text
/// grows with the square of the depth), naming the file, the limit and
/// the thread.
#[test]
fn ranges_nested_past_the_limit_are_refused_naming_the_export() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep.sqlite");
    write_nested(&path, i64::from(MAX_NESTING_DEPTH) + 1);
    let error = analyze_or_hang(&path, request()).unwrap_err();
    assert!(matches!(error, AnalyzeError::TooDeep { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.starts_with(&format!("{}: ", path.display()))
            && message.contains(&format!("more than {MAX_NESTING_DEPTH}"))
            && message.contains("thread 3"),
        "{message}"
    );
}

/// Up to the limit, nested ranges are analyzed: one path per depth.
#[test]
fn ranges_nested_up_to_the_limit_are_analyzed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep.sqlite");
    // `preprocess` is one level; the chain of `level` the rest.
    write_nested(&path, i64::from(MAX_NESTING_DEPTH));
    let analysis = analyze_or_hang(&path, request()).unwrap();
    let deepest = analysis.ranges.iter().map(|r| r.depth).max().unwrap();
    assert_eq!(deepest, MAX_NESTING_DEPTH - 1);
    assert_eq!(analysis.ranges.len(), MAX_NESTING_DEPTH as usize + 1);
}

/// One long name, stored once in `StringIds`, as the text of ranges nested
/// in each other: each path names it again for every range above, so the
/// paths' text would grow far past the file. Refused past
/// [`MAX_PATH_TEXT`], naming the file.
#[test]
fn paths_past_the_text_limit_are_refused_naming_the_export() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long-names.sqlite");
    let db = Connection::open(&path).unwrap();
    write_minimal(&db);
    // 1 MiB, 20 deep: 210 MiB of paths from a 1 MiB file.
    let name = "n".repeat(1 << 20);
    db.execute("INSERT INTO StringIds (id, value) VALUES (1, ?1)", [&name])
        .unwrap();
    for level in 0..20i64 {
        db.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, textId, globalTid) VALUES (?1, ?2, 59, 1, ?3)",
            params![110 + level, 590 - level, TID],
        )
        .unwrap();
    }
    drop(db);
    // Not printed when analyzed: the paths alone are hundreds of MiB.
    let error = match analyze_or_hang(&path, request()) {
        Err(error) => error,
        Ok(analysis) => panic!("analyzed, {} ranges", analysis.ranges.len()),
    };
    assert!(
        matches!(error, AnalyzeError::PathsTooLong { .. }),
        "{error}"
    );
    let message = error.to_string();
    assert!(
        message.starts_with(&format!("{}: ", path.display()))
            && message.contains(&format!("more than {} MiB", MAX_PATH_TEXT >> 20)),
        "{message}"
    );
}
