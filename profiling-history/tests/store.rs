//! The store end to end on SQLite files in temporary directories: records
//! written once, read back as series, schema versions, hostile names,
//! concurrent writers, and changes found in what was stored.

use std::path::{Path, PathBuf};

use profiling_history::changes::{self, Detector};
use profiling_history::{Machine, Metric, RangeRow, Record, SeriesQuery, Store, StoreError};

fn machine(name: &str) -> Machine {
    Machine {
        fingerprint: format!("fp-{name}"),
        host: name.to_owned(),
        os: "Linux 6.1".to_owned(),
        cpu_model: "a CPU".to_owned(),
        cores: 2,
        backend: "none".to_owned(),
        gpus: String::new(),
        kernel: "6.1.0-27-amd64".to_owned(),
        governor: "performance".to_owned(),
        gpu_driver: String::new(),
    }
}

fn row(part: &'static str, path: &str, depth: u32, p50: u64) -> RangeRow {
    RangeRow {
        part,
        path: path.to_owned(),
        name: path.rsplit('/').next().unwrap().to_owned(),
        depth,
        count: 10,
        p50_ns: p50,
        p90_ns: p50 + 10,
        p95_ns: Some(p50 + 15),
        p99_ns: p50 + 20,
        mean_ns: p50 + 1,
        min_ns: Some(p50 - 5),
        max_ns: p50 + 30,
        low_ns: Some(p50 - 2),
        high_ns: Some(p50 + 2),
        alloc_bytes: None,
        peak_bytes: None,
    }
}

/// A run of `profile` at `commit` whose pass, `pre` and `pre/resize` take
/// `pass`, `pass / 2` and `pass / 4`.
fn record(profile: &str, run_id: &str, commit: &str, pass: u64) -> Record {
    Record {
        kind: "run",
        profile: profile.to_owned(),
        run_id: run_id.to_owned(),
        place: String::new(),
        status: "completed",
        started_at: format!("2026-12-06T10:00:00.{run_id}Z"),
        finished_at: "2026-12-06T10:00:01Z".to_owned(),
        git_commit: Some(commit.to_owned()),
        git_dirty: Some(false),
        machine: machine("box"),
        config: "cfg-1".to_owned(),
        config_description: "{}".to_owned(),
        iterations: 10,
        run_dir: PathBuf::from(format!("/runs/{run_id}")),
        ranges: vec![
            row("pass", "pass", 0, pass),
            row("range", "pre", 0, pass / 2),
            row("range", "pre/resize", 1, pass / 4),
        ],
        manifest: "{}".to_owned(),
        samples: None,
    }
}

fn store_in(dir: &Path) -> Store {
    Store::open(&dir.join("history.sqlite")).unwrap()
}

fn p50(profile: &str) -> SeriesQuery {
    SeriesQuery {
        profile: profile.to_owned(),
        metric: Metric::P50,
        machine: None,
        config: None,
    }
}

#[test]
fn a_run_is_written_once_and_read_back_as_its_series() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    let first = store.record(&record("nms", "1", "c1", 4000)).unwrap();
    assert!(first.inserted);
    assert!(
        store
            .record(&record("nms", "2", "c2", 4400))
            .unwrap()
            .inserted
    );
    // The same run again: nothing new.
    let again = store.record(&record("nms", "1", "c1", 4000)).unwrap();
    assert_eq!(
        again,
        profiling_history::Recorded {
            id: first.id,
            inserted: false
        }
    );
    assert_eq!(store.runs().unwrap(), 2);
    assert_eq!(store.profiles().unwrap(), ["nms"]);

    let series = store.series(&p50("nms")).unwrap();
    let paths: Vec<&str> = series.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, ["pass", "pre", "pre/resize"]);
    let values: Vec<u64> = series[2].points.iter().map(|p| p.value).collect();
    assert_eq!(values, [1000, 1100]);
    assert_eq!(series[2].points[0].low, Some(998));
    assert_eq!(series[2].points[0].commit.as_deref(), Some("c1"));

    // Other metrics read their own column; p99 has no interval.
    let p99 = store
        .series(&SeriesQuery {
            metric: Metric::P99,
            ..p50("nms")
        })
        .unwrap();
    assert_eq!(p99[0].points[1].value, 4420);
    assert_eq!(p99[0].points[1].low, None);
    let p95 = store
        .series(&SeriesQuery {
            metric: Metric::P95,
            ..p50("nms")
        })
        .unwrap();
    assert_eq!(p95[0].points[1].value, 4415);
    // No memory figures stored: no alloc-bytes series.
    let alloc = store
        .series(&SeriesQuery {
            metric: Metric::AllocBytes,
            ..p50("nms")
        })
        .unwrap();
    assert!(alloc.is_empty());
}

#[test]
fn a_series_never_mixes_machines_or_configs() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    store.record(&record("nms", "1", "c1", 4000)).unwrap();
    let mut other_machine = record("nms", "2", "c1", 9000);
    other_machine.machine = machine("other");
    store.record(&other_machine).unwrap();
    let mut other_config = record("nms", "3", "c1", 7000);
    other_config.config = "cfg-2".to_owned();
    store.record(&other_config).unwrap();

    let passes: Vec<(String, String, Vec<u64>)> = store
        .series(&p50("nms"))
        .unwrap()
        .into_iter()
        .filter(|s| s.part == "pass")
        .map(|s| {
            (
                s.machine,
                s.config,
                s.points.iter().map(|p| p.value).collect(),
            )
        })
        .collect();
    assert_eq!(
        passes,
        [
            ("fp-box".to_owned(), "cfg-1".to_owned(), vec![4000]),
            ("fp-box".to_owned(), "cfg-2".to_owned(), vec![7000]),
            ("fp-other".to_owned(), "cfg-1".to_owned(), vec![9000]),
        ]
    );
    let one = store
        .series(&SeriesQuery {
            machine: Some("fp-other".to_owned()),
            ..p50("nms")
        })
        .unwrap();
    assert!(one
        .iter()
        .all(|s| s.machine == "fp-other" && s.points.len() == 1));
    assert_eq!(store.machine("fp-other").unwrap().unwrap().host, "other");
}

#[test]
fn points_follow_the_commits_and_leave_out_dirty_trees_and_other_branches() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    // Run in another order than the commits'.
    store.record(&record("nms", "1", "c3", 3000)).unwrap();
    store.record(&record("nms", "2", "c1", 1000)).unwrap();
    store.record(&record("nms", "3", "c2", 2000)).unwrap();
    store.record(&record("nms", "4", "c1", 1200)).unwrap();
    let mut dirty = record("nms", "5", "c2", 99_000);
    dirty.git_dirty = Some(true);
    store.record(&dirty).unwrap();
    store
        .record(&record("nms", "6", "elsewhere", 5000))
        .unwrap();

    let pass = store.series(&p50("nms")).unwrap().remove(0);
    let commits: Vec<String> = ["c1", "c2", "c3"].map(String::from).to_vec();
    let along = pass.along(&commits, false);
    let values: Vec<u64> = along.points.iter().map(|p| p.value).collect();
    assert_eq!(values, [1000, 1200, 2000, 3000]);
    assert_eq!((along.dirty, along.off_line), (1, 1));
    let by_commit = profiling_history::series::by_commit(&along.points);
    let medians: Vec<(Option<&str>, u64, usize)> = by_commit
        .iter()
        .map(|c| (c.commit.as_deref(), c.value, c.runs.len()))
        .collect();
    assert_eq!(
        medians,
        [
            (Some("c1"), 1000, 2),
            (Some("c2"), 2000, 1),
            (Some("c3"), 3000, 1)
        ]
    );
    // --dirty keeps the dirty run at its commit.
    assert_eq!(pass.along(&commits, true).points.len(), 5);
}

#[test]
fn names_are_data_never_sql() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    let hostile = "x'); DROP TABLE runs; --";
    let mut run = record(hostile, "1", "c1", 4000);
    run.ranges[1].path = "\"; DELETE FROM ranges; --".to_owned();
    run.ranges[1].name = "' OR '1'='1".to_owned();
    run.machine.cpu_model = "Robert'); DROP TABLE machines;--".to_owned();
    store.record(&run).unwrap();
    store.record(&record("other", "1", "c1", 4000)).unwrap();
    assert_eq!(store.runs().unwrap(), 2);
    let series = store.series(&p50(hostile)).unwrap();
    assert_eq!(series.len(), 3);
    assert!(series
        .iter()
        .any(|s| s.path == "\"; DELETE FROM ranges; --"));
    assert_eq!(
        store.machine("fp-box").unwrap().unwrap().cpu_model,
        "Robert'); DROP TABLE machines;--"
    );
    // Exported as CSV, each name is one field.
    let rows = store.rows(hostile, None, None).unwrap();
    assert_eq!(rows.len(), 3);
    let field = profiling_history::store::csv_field(&rows[1].path);
    assert_eq!(field, "\"\"\"; DELETE FROM ranges; --\"");
    assert_eq!(profiling_history::store::csv_field("a,b"), "\"a,b\"");
    assert_eq!(profiling_history::store::csv_field("plain"), "plain");
    // A name that matches everything in SQL matches nothing here.
    assert!(store.series(&p50("' OR '1'='1")).unwrap().is_empty());
}

#[test]
fn a_store_of_a_newer_schema_is_refused_and_left_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.sqlite");
    drop(Store::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE meta SET value = '7' WHERE key = 'schema_version'",
        [],
    )
    .unwrap();
    drop(conn);
    let error = Store::open(&path).unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::Newer {
                found: 7,
                supported: 5,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "{}: the history store has schema version 7, and this build knows versions up to 5: a newer profile-cli wrote it; use that one",
            path.display()
        )
    );
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: String = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(version, "7");
}

#[test]
fn a_file_that_is_no_database_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.sqlite");
    std::fs::write(&path, "my notes, not a database\n".repeat(100)).unwrap();
    let error = Store::open(&path).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}: not a history store: the file is not an SQLite database",
            path.display()
        )
    );
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .starts_with("my notes"));
    // A store cut short (a copy that stopped half way) is named damaged.
    let whole = dir.path().join("whole.sqlite");
    let mut store = Store::open(&whole).unwrap();
    for k in 0..50 {
        store
            .record(&record("nms", &k.to_string(), "c1", 4000))
            .unwrap();
    }
    drop(store);
    let cut = dir.path().join("cut.sqlite");
    std::fs::write(&cut, &std::fs::read(&whole).unwrap()[..3000]).unwrap();
    let damaged = Store::open_existing(&cut)
        .and_then(|mut store| store.runs().map(|_| ()))
        .unwrap_err()
        .to_string();
    assert!(
        damaged.starts_with(&format!(
            "{}: not a history store: the SQLite file is damaged",
            cut.display()
        )),
        "{damaged}"
    );
    // Reading where there is no store says how one comes to be.
    let missing = Store::open_existing(&dir.path().join("none.sqlite")).unwrap_err();
    assert!(
        missing.to_string().contains("no history store here yet"),
        "{missing}"
    );
}

#[test]
fn writers_at_once_lose_nothing_and_duplicate_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.sqlite");
    let writers: Vec<_> = (0..8)
        .map(|writer| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut store = Store::open(&path).unwrap();
                for k in 0..60 {
                    let id = format!("{writer}-{k}");
                    store.record(&record("nms", &id, "c1", 1000 + k)).unwrap();
                    // Every writer also writes one run they all share.
                    store.record(&record("nms", "shared", "c1", 500)).unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let mut store = Store::open_existing(&path).unwrap();
    assert_eq!(store.runs().unwrap(), 8 * 60 + 1);
    let pass = store.series(&p50("nms")).unwrap().remove(0);
    assert_eq!(pass.points.len(), 8 * 60 + 1);
}

#[test]
fn a_shift_in_a_nested_range_is_one_change_at_its_commit() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    let commits: Vec<String> = (0..24).map(|c| format!("c{c:02}")).collect();
    for (k, commit) in commits.iter().enumerate() {
        // 10 % slower from commit 12 on, with a little noise.
        let noise = [0, 7, 3, 11, 5, 9][k % 6];
        let pass = if k < 12 { 4000 } else { 4400 } + noise;
        store
            .record(&record("nms", &format!("{k:02}"), commit, pass))
            .unwrap();
    }
    let series = store.series(&p50("nms")).unwrap();
    let prepared = changes::prepare(&series, &commits, false);
    let found = changes::find(&prepared, &Detector::default());
    assert_eq!(found.len(), 1, "{found:#?}");
    let change = &found[0];
    assert_eq!(change.path, "pre/resize");
    assert_eq!(change.commit.as_deref(), Some("c12"));
    assert_eq!(change.also, ["pass", "pre"]);
    assert!(change.is_regression());
    assert!((change.ratio - 1.1).abs() < 0.01, "{change:?}");
    assert!(change.low > 1.0 && change.low <= change.ratio && change.ratio <= change.high);
}

#[test]
fn the_samples_come_back_as_they_were_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    let mut run = record("nms", "1", "c1", 4000);
    let samples: Vec<u8> = (0..10_000u32)
        .flat_map(|v| (v % 300).to_le_bytes())
        .collect();
    let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut encoder, &samples).unwrap();
    run.samples = Some(encoder.finish().unwrap());
    let id = store.record(&run).unwrap().id;
    assert_eq!(store.samples(id).unwrap(), Some(samples));
    let other = store.record(&record("nms", "2", "c1", 4000)).unwrap().id;
    assert_eq!(store.samples(other).unwrap(), None);
}

/// A store of version 1 (before machines had a kernel, a governor and a
/// GPU driver) is brought to this build's version when it is opened, its
/// runs kept, its machines with those fields empty.
#[test]
fn a_store_of_an_older_schema_is_migrated_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.sqlite");
    let mut store = Store::open(&path).unwrap();
    store.record(&record("nms", "1", "c1", 4000)).unwrap();
    drop(store);
    // What version 1 had.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "ALTER TABLE machines DROP COLUMN kernel;
         ALTER TABLE machines DROP COLUMN governor;
         ALTER TABLE machines DROP COLUMN gpu_driver;
         DROP TABLE verdicts;
         ALTER TABLE ranges DROP COLUMN p95_ns;
         UPDATE meta SET value = '1' WHERE key = 'schema_version';",
    )
    .unwrap();
    drop(conn);
    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.runs().unwrap(), 1);
    let machine = store.machine("fp-box").unwrap().unwrap();
    assert_eq!(
        (machine.kernel.as_str(), machine.governor.as_str()),
        ("", "")
    );
    store.record(&record("nms", "2", "c2", 4000)).unwrap();
    assert_eq!(store.series(&p50("nms")).unwrap()[0].points.len(), 2);
    // The run recorded before the store kept p95 has none: its series
    // holds the later run only, and the export leaves the field empty.
    let p95 = store
        .series(&SeriesQuery {
            metric: Metric::P95,
            ..p50("nms")
        })
        .unwrap();
    let runs: Vec<&str> = p95[0].points.iter().map(|p| p.run_id.as_str()).collect();
    assert_eq!(runs, ["2"]);
    let rows = store.rows("nms", None, None).unwrap();
    let p95s: Vec<Option<u64>> = rows
        .iter()
        .filter(|r| r.part == "pass")
        .map(|r| r.p95_ns)
        .collect();
    assert_eq!(p95s, [None, Some(4015)]);
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: String = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(version, "5");
}
