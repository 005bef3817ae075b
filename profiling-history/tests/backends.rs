//! The store on both backends: an SQLite file and a real PostgreSQL (a
//! throwaway cluster, see `cluster`). The same runs read back the same
//! from each, many processes writing at once lose none and duplicate none,
//! names are data on both, and a server that goes away or was never there
//! is an error that names the store with its password masked.

mod cluster;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use cluster::Cluster;
use profiling_history::{Machine, Metric, RangeRow, Record, SeriesQuery, Store, StoreError};

fn machine(name: &str) -> Machine {
    Machine {
        fingerprint: format!("fp-{name}"),
        host: name.to_owned(),
        os: "Linux 6.1".to_owned(),
        cpu_model: "Robert'); DROP TABLE machines;--".to_owned(),
        cores: 2,
        backend: "none".to_owned(),
        gpus: String::new(),
        kernel: "6.1.0-27-amd64".to_owned(),
        governor: "performance".to_owned(),
        gpu_driver: String::new(),
    }
}

fn row(part: &'static str, path: &str, depth: u32, p50: u64, memory: bool) -> RangeRow {
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
        low_ns: memory.then_some(p50 - 2),
        high_ns: memory.then_some(p50 + 2),
        alloc_bytes: memory.then_some(4096),
        peak_bytes: memory.then_some(1 << 40),
    }
}

/// Run `k` of `profile`: every kind of value the schema holds, some
/// absent (no commit, no dirty flag, no memory, no samples).
fn record(profile: &str, run_id: &str, k: u64) -> Record {
    Record {
        kind: if k.is_multiple_of(3) {
            "ab-base"
        } else {
            "run"
        },
        profile: profile.to_owned(),
        run_id: run_id.to_owned(),
        place: String::new(),
        status: if k % 7 == 6 {
            "interrupted"
        } else {
            "completed"
        },
        started_at: format!("2026-12-06T10:{:02}:{:02}.{run_id}Z", k / 60 % 60, k % 60),
        finished_at: "2026-12-06T11:00:00Z".to_owned(),
        git_commit: (k % 5 != 4).then(|| format!("c{k}")),
        git_dirty: match k % 4 {
            0 => None,
            1 => Some(true),
            _ => Some(false),
        },
        machine: machine(if k.is_multiple_of(2) {
            "box"
        } else {
            "other box"
        }),
        config: format!("cfg-{}", k % 2),
        config_description: "{\"data\": \"it's\"}".to_owned(),
        iterations: 10 + k,
        run_dir: PathBuf::from(format!("/runs/{profile}/{run_id}")),
        ranges: vec![
            row("pass", "pass", 0, 4000 + k, k.is_multiple_of(2)),
            row("range", "\"; DELETE FROM ranges; --", 0, 2000 + k, false),
            row(
                "range",
                "\"; DELETE FROM ranges; --/' OR '1'='1",
                1,
                1000 + k,
                true,
            ),
        ],
        manifest: "{}".to_owned(),
        samples: k
            .is_multiple_of(2)
            .then(|| profiling_history::record::deflate(&samples(k))),
    }
}

/// A `samples.bin` of run `k`: its passes and one range's calls.
fn samples(k: u64) -> Vec<u8> {
    use profiling_core::driver::run_samples::{RangeSeries, RunSamples, Series};
    let series = |kept: Vec<u64>| Series {
        count: kept.len() as u64,
        min: *kept.iter().min().unwrap(),
        max: *kept.iter().max().unwrap(),
        total: kept.iter().map(|&v| u128::from(v)).sum(),
        kept,
        buckets: Vec::new(),
    };
    RunSamples {
        passes: series(vec![4000 + k, 4100 + k, 3900 + k]),
        calls: series(vec![4000 + k, 4100 + k, 3900 + k]),
        ranges: vec![RangeSeries {
            name: "it's".to_owned(),
            inclusive: series(vec![2000 + k, 2050 + k, 1950 + k]),
            exclusive: series(vec![1000 + k, 1025 + k, 975 + k]),
        }],
        ..RunSamples::default()
    }
    .encode()
}

fn query(profile: &str, metric: Metric, machine: Option<&str>) -> SeriesQuery {
    SeriesQuery {
        profile: profile.to_owned(),
        metric,
        machine: machine.map(str::to_owned),
        config: None,
    }
}

/// Everything the store answers about what is in it.
fn everything(store: &mut Store) -> Vec<String> {
    let mut answers = vec![
        format!("{:?}", store.runs().unwrap()),
        format!("{:?}", store.profiles().unwrap()),
        format!("{:?}", store.identities().unwrap()),
        format!("{:?}", store.machine("fp-other box").unwrap()),
        format!("{:?}", store.machine("fp-none").unwrap()),
    ];
    for profile in ["x'); DROP TABLE runs; --", "nms"] {
        for metric in [Metric::P50, Metric::P99, Metric::AllocBytes, Metric::Peak] {
            for machine in [None, Some("fp-box")] {
                answers.push(format!(
                    "{:?}",
                    store.series(&query(profile, metric, machine)).unwrap()
                ));
            }
        }
        answers.push(format!("{:?}", store.rows(profile, None, None).unwrap()));
        answers.push(format!(
            "{:?}",
            store.rows(profile, Some("fp-box"), Some("cfg-0")).unwrap()
        ));
        answers.push(format!(
            "{:?}",
            store.sample_rows(profile, Some("fp-box"), None).unwrap()
        ));
    }
    for id in 1..=4 {
        answers.push(format!("{:?}", store.samples(id).unwrap()));
    }
    answers.push(format!("{:?}", store.verdicts("nms").unwrap()));
    answers
}

/// A pair's verdict on runs `base` and `candidate` of `nms`.
fn verdict(base: u64, candidate: u64, verdict: &str) -> profiling_history::Verdict {
    let side = |k: u64| record("nms", &k.to_string(), k);
    profiling_history::Verdict {
        profile: "nms".to_owned(),
        ab_id: format!("ab-{base}-{candidate}"),
        base: side(base).identity(),
        candidate: side(candidate).identity(),
        base_commit: side(base).git_commit,
        candidate_commit: side(candidate).git_commit,
        verdict: verdict.to_owned(),
        gates: r#"[{"gate":"p50<=-3%","outcome":"fails"}]"#.to_owned(),
    }
}

#[test]
fn the_same_runs_read_the_same_from_sqlite_and_postgres() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut sqlite = Store::open(&dir.path().join("history.sqlite")).unwrap();
    let mut postgres = Store::connect(&cluster.url()).unwrap();
    assert!(postgres.is_postgres() && !sqlite.is_postgres());
    for store in [&mut sqlite, &mut postgres] {
        for k in 0..24 {
            let profile = if k % 3 == 2 {
                "nms"
            } else {
                "x'); DROP TABLE runs; --"
            };
            let recorded = store.record(&record(profile, &k.to_string(), k)).unwrap();
            assert!(recorded.inserted);
        }
        // The same run again: nothing new, its id.
        let again = store.record(&record("nms", "2", 2)).unwrap();
        assert_eq!((again.inserted, again.id), (false, 3));
        // Verdicts: one on stored runs, one whose sides are not stored;
        // each once.
        assert!(
            store
                .record_verdict(&verdict(2, 5, "reject"))
                .unwrap()
                .inserted
        );
        assert!(
            store
                .record_verdict(&verdict(98, 99, "accept"))
                .unwrap()
                .inserted
        );
        assert!(
            !store
                .record_verdict(&verdict(2, 5, "reject"))
                .unwrap()
                .inserted
        );
    }
    let ours = everything(&mut sqlite);
    assert_eq!(everything(&mut postgres), ours);
    // The raw samples read back as rows on both: a pass's three and a
    // range's three inclusive and three exclusive per run with samples.
    let (rows, sketched) = postgres.sample_rows("nms", Some("fp-box"), None).unwrap();
    assert_eq!(sketched, 0);
    assert!(!rows.is_empty() && rows.len() % 9 == 0, "{rows:?}");
    assert!(rows
        .iter()
        .any(|r| r.name == "it's" && r.measure == "exclusive"));
    // Not vacuous: the runs, their rows, a series with intervals and one
    // of memory, and the samples are there.
    assert_eq!(ours[0], "24");
    assert!(ours.iter().any(|a| a.contains("low: Some(")));
    assert!(ours.iter().any(|a| a.contains("1099511627776")));
    assert!(ours.iter().any(|a| *a == format!("{:?}", Some(samples(0)))));
    let verdicts = sqlite.verdicts("nms").unwrap();
    assert_eq!(verdicts.len(), 2);
    assert_eq!(
        (verdicts[0].verdict.as_str(), verdicts[0].ab_id.as_str()),
        ("reject", "ab-2-5")
    );
    assert_eq!(verdicts[0].base, record("nms", "2", 2).identity());
    // Opened again, a PostgreSQL store is migrated once: its version, not
    // its tables, is made again.
    drop(postgres);
    let mut again = Store::connect(&cluster.url()).unwrap();
    assert_eq!(again.runs().unwrap(), 24);
}

/// Set in the writer processes [`many_processes_lose_none_and_duplicate_none`]
/// starts: the store and the writer's number.
const WRITER_ENV: &str = "PROFILING_HISTORY_TEST_WRITER";
const WRITES: u64 = 500;

/// Not a test of its own: the body of one writer process.
#[test]
fn writer_process() {
    let Ok(spec) = std::env::var(WRITER_ENV) else {
        return;
    };
    let (writer, store) = spec.split_once(' ').unwrap();
    let writer: u64 = writer.parse().unwrap();
    let mut store = if store.starts_with("postgres://") {
        Store::connect(store).unwrap()
    } else {
        Store::open(std::path::Path::new(store)).unwrap()
    };
    for k in 0..WRITES {
        let id = format!("{writer}-{k}");
        store.record(&record("nms", &id, k)).unwrap();
        // Every tenth write, a run every writer writes.
        if k % 10 == 0 {
            store
                .record(&record("nms", &format!("shared-{k}"), k))
                .unwrap();
        }
    }
}

fn write_from_eight_processes(store: &str) {
    let children: Vec<_> = (0..8)
        .map(|writer| {
            Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "writer_process", "--test-threads", "1"])
                .env(WRITER_ENV, format!("{writer} {store}"))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // A few lines each: no pipe fills while another writer is waited for.
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "a writer failed:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

fn assert_every_run_once(store: &mut Store) {
    let identities = store.identities().unwrap();
    let unique: BTreeSet<&String> = identities.iter().collect();
    assert_eq!(unique.len(), identities.len(), "a run stored twice");
    let mut expected: BTreeSet<String> = BTreeSet::new();
    for k in 0..WRITES {
        for writer in 0..8 {
            expected.insert(record("nms", &format!("{writer}-{k}"), k).identity());
        }
        if k % 10 == 0 {
            expected.insert(record("nms", &format!("shared-{k}"), k).identity());
        }
    }
    let stored: BTreeSet<String> = identities.into_iter().collect();
    assert_eq!(stored.len(), 8 * 500 + 50);
    assert_eq!(stored, expected);
    // Each run with its three rows, none half written.
    let rows = store.rows("nms", None, None).unwrap();
    assert_eq!(rows.len(), 3 * (8 * 500 + 50));
}

#[test]
fn many_processes_lose_none_and_duplicate_none_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.sqlite");
    write_from_eight_processes(path.to_str().unwrap());
    assert_every_run_once(&mut Store::open_existing(&path).unwrap());
}

#[test]
fn many_processes_lose_none_and_duplicate_none_in_postgres() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    // A new database: the writers race to make its tables.
    let url = cluster.database("history");
    write_from_eight_processes(&url);
    assert_every_run_once(&mut Store::connect(&url).unwrap());
}

#[test]
fn a_server_that_goes_away_is_an_error_and_the_store_takes_writes_when_it_is_back() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let mut store = Store::connect(&cluster.url()).unwrap();
    store.record(&record("nms", "before", 0)).unwrap();
    cluster.stop();
    let error = store.record(&record("nms", "during", 1)).unwrap_err();
    let text = error.to_string();
    assert!(
        matches!(error, StoreError::Sql { .. })
            && text.starts_with("postgres://profiling@/postgres?host="),
        "{text}"
    );
    // Not there: connecting names the store and why.
    let refused = Store::connect(&cluster.url()).unwrap_err().to_string();
    assert!(
        refused.contains("cannot open the history store"),
        "{refused}"
    );
    cluster.pg_ctl_start();
    let mut store = Store::connect(&cluster.url()).unwrap();
    store.record(&record("nms", "during", 1)).unwrap();
    assert_eq!(store.runs().unwrap(), 2);
}

#[test]
fn a_server_that_is_not_there_is_named_with_its_password_masked() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "postgres://ci:hunter2@/perf?host={}&connect_timeout=5",
        dir.path().display()
    );
    let error = Store::connect(&url).unwrap_err().to_string();
    assert!(!error.contains("hunter2"), "{error}");
    assert!(
        error.starts_with("postgres://ci:***@/perf?host=")
            && error.contains("cannot open the history store: "),
        "{error}"
    );
    // A URL it cannot read is refused before any connection.
    let error = Store::connect("postgres://ci:hunter2@db.example:port/perf")
        .unwrap_err()
        .to_string();
    assert!(
        !error.contains("hunter2") && error.contains("not a PostgreSQL URL"),
        "{error}"
    );
}

#[test]
fn a_postgres_store_of_a_newer_schema_is_refused_and_left_as_it_is() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let mut store = Store::connect(&cluster.url()).unwrap();
    store.record(&record("nms", "1", 1)).unwrap();
    drop(store);
    let mut client = postgres::Client::connect(
        &format!(
            "host={} user=profiling dbname=postgres",
            cluster.socket_dir().display()
        ),
        postgres::NoTls,
    )
    .unwrap();
    client
        .execute(
            "UPDATE meta SET value = '99' WHERE key = 'schema_version'",
            &[],
        )
        .unwrap();
    let error = Store::connect(&cluster.url()).unwrap_err().to_string();
    assert!(
        error.ends_with("the history store has schema version 99, and this build knows versions up to 5: a newer profile-cli wrote it; use that one"),
        "{error}"
    );
    let runs: i64 = client
        .query_one("SELECT COUNT(*) FROM runs", &[])
        .unwrap()
        .get(0);
    assert_eq!(runs, 1);
}
