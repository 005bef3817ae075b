//! The store: one interface over a database of records. SQLite is the
//! backend here, a file beside the run directories by default
//! ([`DEFAULT_FILE`]), in WAL mode so that readers never wait for a
//! writer and concurrent writers take turns. Each record is written in one
//! transaction: a reader sees a run whole or not at all. Every value goes
//! into a statement as a parameter (names are data, never SQL).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};

use crate::record::{Record, SAMPLES_CODEC};
use crate::schema::{self, SchemaError};
use crate::series::{Metric, Point, Series, SeriesQuery};

/// The store's file name beside the run directories.
pub const DEFAULT_FILE: &str = "history.sqlite";
/// The environment variable that names a store (a path, `sqlite:PATH`, or
/// `off`).
pub const ENV: &str = "PROFILING_STORE";

/// One run's figures of one range path, as [`Store::rows`] gives them:
/// the columns of `history --export csv`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FlatRow {
    pub profile: String,
    pub kind: String,
    pub run_id: String,
    pub status: String,
    pub started_at: String,
    pub commit: Option<String>,
    pub dirty: Option<bool>,
    pub machine: String,
    pub config: String,
    pub part: String,
    pub path: String,
    pub name: String,
    pub depth: u32,
    pub count: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub mean_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub low_ns: Option<u64>,
    pub high_ns: Option<u64>,
    pub alloc_bytes: Option<u64>,
    pub peak_bytes: Option<u64>,
}

impl FlatRow {
    /// The CSV header, in the fields' order.
    pub const COLUMNS: [&'static str; 24] = [
        "profile",
        "kind",
        "run_id",
        "status",
        "started_at",
        "commit",
        "dirty",
        "machine",
        "config",
        "part",
        "path",
        "name",
        "depth",
        "count",
        "p50_ns",
        "p90_ns",
        "p99_ns",
        "mean_ns",
        "min_ns",
        "max_ns",
        "low_ns",
        "high_ns",
        "alloc_bytes",
        "peak_bytes",
    ];

    /// Its fields as CSV text, in [`FlatRow::COLUMNS`]' order (an empty
    /// field where there is no value).
    pub fn fields(&self) -> [String; 24] {
        let opt = |v: Option<u64>| v.map_or_else(String::new, |v| v.to_string());
        [
            self.profile.clone(),
            self.kind.clone(),
            self.run_id.clone(),
            self.status.clone(),
            self.started_at.clone(),
            self.commit.clone().unwrap_or_default(),
            self.dirty.map_or_else(String::new, |d| d.to_string()),
            self.machine.clone(),
            self.config.clone(),
            self.part.clone(),
            self.path.clone(),
            self.name.clone(),
            self.depth.to_string(),
            self.count.to_string(),
            self.p50_ns.to_string(),
            self.p90_ns.to_string(),
            self.p99_ns.to_string(),
            self.mean_ns.to_string(),
            self.min_ns.to_string(),
            self.max_ns.to_string(),
            opt(self.low_ns),
            opt(self.high_ns),
            opt(self.alloc_bytes),
            opt(self.peak_bytes),
        ]
    }
}

/// `field` as one CSV field (RFC 4180): quoted when it holds a comma, a
/// quote or a line break, its quotes doubled.
pub fn csv_field(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

/// Where records go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    /// Nothing is recorded.
    Off,
}

impl Location {
    /// `text` as a user gives it: `off` (or `none`), `sqlite:PATH`,
    /// `sqlite://PATH`, or a path; a relative path is taken from `base`.
    pub fn parse(text: &str, base: &Path) -> Result<Location, StoreError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(StoreError::Location {
                given: String::new(),
                reason: "empty: give a path, `sqlite:PATH` or `off`".to_owned(),
            });
        }
        if matches!(text, "off" | "none") {
            return Ok(Location::Off);
        }
        let path = if let Some(rest) = text.strip_prefix("sqlite://") {
            rest
        } else if let Some(rest) = text.strip_prefix("sqlite:") {
            rest
        } else if let Some((scheme, _)) = text.split_once("://") {
            return Err(StoreError::Location {
                given: mask(text),
                reason: format!(
                    "`{scheme}` stores are not in this build: it writes SQLite files (a path, `sqlite:PATH`)"
                ),
            });
        } else {
            text
        };
        Ok(Location::Sqlite(base.join(path)))
    }
}

/// `text` with the password of a URL's user, if any, masked.
pub fn mask(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else {
        return text.to_owned();
    };
    let (authority, tail) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((user, host)) if user.contains(':') => {
            let name = user.split(':').next().unwrap_or("");
            format!("{scheme}://{name}:***@{host}{tail}")
        }
        _ => text.to_owned(),
    }
}

/// Why the store could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("history store `{given}`: {reason}")]
    Location { given: String, reason: String },
    #[error("{}: no history store here yet: runs write it when they finish, and `profile-cli history import DIR` writes runs already on disk", path.display())]
    Missing { path: PathBuf },
    #[error("{}: cannot make the history store's directory: {source}", path.display())]
    Directory {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: cannot open the history store: {source}", path.display())]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("{}: the history store has schema version {found}, and this build knows versions up to {supported}: a newer profile-cli wrote it; use that one", path.display())]
    Newer {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("{}: not a history store: {reason}", path.display())]
    NotAStore { path: PathBuf, reason: String },
    #[error("{}: {source}", path.display())]
    Sql {
        path: PathBuf,
        source: rusqlite::Error,
    },
}

/// What [`Store::record`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    /// The record's id in the store.
    pub id: i64,
    /// False when the store held the run already (nothing was written).
    pub inserted: bool,
}

/// An open store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// How long a writer waits for another to finish before it gives up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

impl Store {
    /// Opens the SQLite store at `path` for writing, making it (and its
    /// directory) when it is not there, and migrating it to this build's
    /// schema.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::Directory {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        Store::set_up(conn, path, true)
    }

    /// Opens the store at `path` to read it; [`StoreError::Missing`] when
    /// there is none.
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        if !path.is_file() {
            return Err(StoreError::Missing {
                path: path.to_path_buf(),
            });
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .or_else(|_| {
            Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
        })
        .map_err(|source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let writable = !conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(true);
        Store::set_up(conn, path, writable)
    }

    fn set_up(mut conn: Connection, path: &Path, writable: bool) -> Result<Store, StoreError> {
        let sql = |source| StoreError::Sql {
            path: path.to_path_buf(),
            source,
        };
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        if writable {
            // Not a database (a text file, a truncated copy) fails here.
            conn.pragma_update(None, "journal_mode", "WAL")
                .map_err(|source| not_a_store(path, source))?;
            conn.pragma_update(None, "synchronous", "NORMAL")
                .map_err(sql)?;
        }
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(sql)?;
        let schema_error = |error| match error {
            SchemaError::Newer { found } => StoreError::Newer {
                path: path.to_path_buf(),
                found,
                supported: schema::VERSION,
            },
            SchemaError::Unreadable { value } => StoreError::NotAStore {
                path: path.to_path_buf(),
                reason: format!("meta.schema_version is `{value}`, not a version"),
            },
            SchemaError::Sql(source) => not_a_store(path, source),
        };
        if writable {
            schema::migrate(&mut conn).map_err(schema_error)?;
        } else {
            let found = schema::version(&conn).map_err(schema_error)?;
            if found > schema::VERSION {
                return Err(schema_error(SchemaError::Newer { found }));
            }
            if found < schema::VERSION {
                return Err(StoreError::NotAStore {
                    path: path.to_path_buf(),
                    reason: format!(
                        "it has schema version {found} and is read-only, so it cannot be brought to version {}",
                        schema::VERSION
                    ),
                });
            }
        }
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// Where the store is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sql {
            path: self.path.clone(),
            source,
        }
    }

    /// Writes `record` in one transaction, unless the store holds the run
    /// already.
    pub fn record(&mut self, record: &Record) -> Result<Recorded, StoreError> {
        let path = self.path.clone();
        let sql = |source| StoreError::Sql {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let existing: Option<i64> = tx
            .query_row(
                "SELECT id FROM runs WHERE identity = ?1",
                [record.identity()],
                |row| row.get(0),
            )
            .optional()
            .map_err(sql)?;
        if let Some(id) = existing {
            return Ok(Recorded {
                id,
                inserted: false,
            });
        }
        let id = insert(&tx, record).map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(Recorded { id, inserted: true })
    }

    /// How many runs the store holds.
    pub fn runs(&self) -> Result<u64, StoreError> {
        self.conn
            .query_row("SELECT COUNT(*) FROM runs", [], |row| row.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| self.sql(e))
    }

    /// The profiles the store holds runs of, by name.
    pub fn profiles(&self) -> Result<Vec<String>, StoreError> {
        let mut statement = self
            .conn
            .prepare("SELECT DISTINCT profile FROM runs ORDER BY profile")
            .map_err(|e| self.sql(e))?;
        let names = statement
            .query_map([], |row| row.get(0))
            .and_then(|rows| rows.collect::<Result<Vec<String>, _>>())
            .map_err(|e| self.sql(e))?;
        Ok(names)
    }

    /// The runs of `query.profile`, one series per machine, config and
    /// range path (the pass first, then the paths in order), each run a
    /// point, oldest first. Failed runs are never stored; interrupted ones
    /// are left out.
    pub fn series(&self, query: &SeriesQuery) -> Result<Vec<Series>, StoreError> {
        let column = query.metric.column();
        let (low, high) = if query.metric.has_interval() {
            ("r.low_ns", "r.high_ns")
        } else {
            ("NULL", "NULL")
        };
        let statement_text = format!(
            "SELECT u.machine, u.config, r.part, r.path, r.name, r.depth, u.id, u.run_id,
                    u.started_at, u.git_commit, u.git_dirty, u.run_dir, {column}, {low}, {high}
             FROM runs u JOIN ranges r ON r.run = u.id
             WHERE u.profile = ?1 AND u.status = 'completed'
               AND (?2 IS NULL OR u.machine = ?2) AND (?3 IS NULL OR u.config = ?3)
               AND {column} IS NOT NULL
             ORDER BY u.machine, u.config, CASE r.part WHEN 'pass' THEN 0 ELSE 1 END, r.path,
                      u.started_at, u.id"
        );
        let mut statement = self
            .conn
            .prepare(&statement_text)
            .map_err(|e| self.sql(e))?;
        let mut rows = statement
            .query(params![query.profile, query.machine, query.config])
            .map_err(|e| self.sql(e))?;
        let mut series: Vec<Series> = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.sql(e))? {
            let read = || -> rusqlite::Result<(Series, Point)> {
                let key = Series {
                    profile: query.profile.clone(),
                    metric: query.metric,
                    machine: row.get(0)?,
                    config: row.get(1)?,
                    part: row.get(2)?,
                    path: row.get(3)?,
                    name: row.get(4)?,
                    depth: row.get(5)?,
                    points: Vec::new(),
                };
                let point = Point {
                    run: row.get(6)?,
                    run_id: row.get(7)?,
                    started_at: row.get(8)?,
                    commit: row.get(9)?,
                    dirty: row.get(10)?,
                    run_dir: PathBuf::from(row.get::<_, String>(11)?),
                    value: from_sql_int(row.get(12)?),
                    low: row.get::<_, Option<i64>>(13)?.map(from_sql_int),
                    high: row.get::<_, Option<i64>>(14)?.map(from_sql_int),
                };
                Ok((key, point))
            };
            let (key, point) = read().map_err(|e| self.sql(e))?;
            match series.last_mut() {
                Some(last) if last.same_series(&key) => last.points.push(point),
                _ => {
                    let mut key = key;
                    key.points.push(point);
                    series.push(key);
                }
            }
        }
        Ok(series)
    }

    /// Every stored figure of `profile`'s runs (completed or interrupted),
    /// one row per run and range path (the pass's first), oldest run
    /// first; `machine` and `config` filter as in [`Store::series`].
    pub fn rows(
        &self,
        profile: &str,
        machine: Option<&str>,
        config: Option<&str>,
    ) -> Result<Vec<FlatRow>, StoreError> {
        let mut statement = self
            .conn
            .prepare(
                "SELECT u.profile, u.kind, u.run_id, u.status, u.started_at, u.git_commit,
                        u.git_dirty, u.machine, u.config, r.part, r.path, r.name, r.depth,
                        r.count, r.p50_ns, r.p90_ns, r.p99_ns, r.mean_ns, r.min_ns, r.max_ns,
                        r.low_ns, r.high_ns, r.alloc_bytes, r.peak_bytes
                 FROM runs u JOIN ranges r ON r.run = u.id
                 WHERE u.profile = ?1 AND (?2 IS NULL OR u.machine = ?2)
                   AND (?3 IS NULL OR u.config = ?3)
                 ORDER BY u.started_at, u.id, CASE r.part WHEN 'pass' THEN 0 ELSE 1 END, r.path",
            )
            .map_err(|e| self.sql(e))?;
        let rows = statement
            .query_map(params![profile, machine, config], |row| {
                let count = |k: usize| row.get::<_, i64>(k).map(from_sql_int);
                let maybe = |k: usize| row.get::<_, Option<i64>>(k).map(|v| v.map(from_sql_int));
                Ok(FlatRow {
                    profile: row.get(0)?,
                    kind: row.get(1)?,
                    run_id: row.get(2)?,
                    status: row.get(3)?,
                    started_at: row.get(4)?,
                    commit: row.get(5)?,
                    dirty: row.get(6)?,
                    machine: row.get(7)?,
                    config: row.get(8)?,
                    part: row.get(9)?,
                    path: row.get(10)?,
                    name: row.get(11)?,
                    depth: row.get(12)?,
                    count: count(13)?,
                    p50_ns: count(14)?,
                    p90_ns: count(15)?,
                    p99_ns: count(16)?,
                    mean_ns: count(17)?,
                    min_ns: count(18)?,
                    max_ns: count(19)?,
                    low_ns: maybe(20)?,
                    high_ns: maybe(21)?,
                    alloc_bytes: maybe(22)?,
                    peak_bytes: maybe(23)?,
                })
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.sql(e))?;
        Ok(rows)
    }

    /// The machine stored under `fingerprint`.
    pub fn machine(&self, fingerprint: &str) -> Result<Option<crate::Machine>, StoreError> {
        self.conn
            .query_row(
                "SELECT fingerprint, host, os, cpu_model, cores, backend, gpus FROM machines
                 WHERE fingerprint = ?1",
                [fingerprint],
                |row| {
                    Ok(crate::Machine {
                        fingerprint: row.get(0)?,
                        host: row.get(1)?,
                        os: row.get(2)?,
                        cpu_model: row.get(3)?,
                        cores: from_sql_int(row.get(4)?),
                        backend: row.get(5)?,
                        gpus: row.get(6)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.sql(e))
    }

    /// The raw samples of stored run `id` (`samples.bin` as written), when
    /// it had any.
    pub fn samples(&self, id: i64) -> Result<Option<Vec<u8>>, StoreError> {
        let stored: Option<(Option<Vec<u8>>, Option<String>)> = self
            .conn
            .query_row(
                "SELECT samples, samples_codec FROM documents WHERE run = ?1",
                [id],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        match stored {
            Some((Some(bytes), Some(codec))) if codec == SAMPLES_CODEC => {
                crate::record::inflate(&bytes)
                    .map(Some)
                    .map_err(|e| StoreError::NotAStore {
                        path: self.path.clone(),
                        reason: format!("the samples of run {id} do not inflate: {e}"),
                    })
            }
            Some((Some(_), codec)) => Err(StoreError::NotAStore {
                path: self.path.clone(),
                reason: format!("the samples of run {id} have an unknown codec {codec:?}"),
            }),
            _ => Ok(None),
        }
    }
}

/// Inserts `record` (its machine and config where new, the run, its rows
/// and its documents) in `tx`; the run's id.
fn insert(tx: &rusqlite::Transaction<'_>, record: &Record) -> rusqlite::Result<i64> {
    let machine = &record.machine;
    tx.execute(
        "INSERT INTO machines (fingerprint, host, os, cpu_model, cores, backend, gpus)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (fingerprint) DO NOTHING",
        params![
            machine.fingerprint,
            machine.host,
            machine.os,
            machine.cpu_model,
            sql_int(machine.cores),
            machine.backend,
            machine.gpus
        ],
    )?;
    tx.execute(
        "INSERT INTO configs (hash, description) VALUES (?1, ?2)
         ON CONFLICT (hash) DO NOTHING",
        params![record.config, record.config_description],
    )?;
    tx.execute(
        "INSERT INTO runs (identity, kind, profile, run_id, status, started_at, finished_at,
             git_commit, git_dirty, machine, config, iterations, run_dir, recorded_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        params![
            record.identity(),
            record.kind,
            record.profile,
            record.run_id,
            record.status,
            record.started_at,
            record.finished_at,
            record.git_commit,
            record.git_dirty,
            machine.fingerprint,
            record.config,
            sql_int(record.iterations),
            record.run_dir.to_string_lossy(),
            profiling_core::driver::provenance::UtcTime::now().rfc3339(),
        ],
    )?;
    let id = tx.last_insert_rowid();
    let mut rows = tx.prepare(
        "INSERT INTO ranges (run, part, path, name, depth, count, p50_ns, p90_ns,
             p99_ns, mean_ns, min_ns, max_ns, low_ns, high_ns, alloc_bytes, peak_bytes)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
    )?;
    for row in &record.ranges {
        rows.execute(params![
            id,
            row.part,
            row.path,
            row.name,
            row.depth,
            sql_int(row.count),
            sql_int(row.p50_ns),
            sql_int(row.p90_ns),
            sql_int(row.p99_ns),
            sql_int(row.mean_ns),
            sql_int(row.min_ns),
            sql_int(row.max_ns),
            row.low_ns.map(sql_int),
            row.high_ns.map(sql_int),
            row.alloc_bytes.map(sql_int),
            row.peak_bytes.map(sql_int),
        ])?;
    }
    tx.execute(
        "INSERT INTO documents (run, manifest, samples, samples_codec) VALUES (?1, ?2, ?3, ?4)",
        params![
            id,
            record.manifest,
            record.samples,
            record.samples.as_ref().map(|_| SAMPLES_CODEC)
        ],
    )?;
    Ok(id)
}

fn not_a_store(path: &Path, source: rusqlite::Error) -> StoreError {
    match source {
        rusqlite::Error::SqliteFailure(error, _)
            if error.code == rusqlite::ErrorCode::NotADatabase =>
        {
            StoreError::NotAStore {
                path: path.to_path_buf(),
                reason: "the file is not an SQLite database".to_owned(),
            }
        }
        rusqlite::Error::SqliteFailure(error, detail)
            if error.code == rusqlite::ErrorCode::DatabaseCorrupt =>
        {
            StoreError::NotAStore {
                path: path.to_path_buf(),
                reason: format!(
                    "the SQLite file is damaged ({}): restore it from a copy, or move it away and `profile-cli history import` the run directories",
                    detail.as_deref().unwrap_or("database disk image is malformed")
                ),
            }
        }
        source => StoreError::Sql {
            path: path.to_path_buf(),
            source,
        },
    }
}

/// SQLite integers are signed: a count or duration past `i64::MAX` (none
/// is) is kept at the largest.
fn sql_int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn from_sql_int(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

impl Metric {
    /// The column of `ranges` it reads.
    fn column(self) -> &'static str {
        match self {
            Metric::P50 => "r.p50_ns",
            Metric::P90 => "r.p90_ns",
            Metric::P99 => "r.p99_ns",
            Metric::Mean => "r.mean_ns",
            Metric::Min => "r.min_ns",
            Metric::Max => "r.max_ns",
            Metric::AllocBytes => "r.alloc_bytes",
            Metric::Peak => "r.peak_bytes",
        }
    }
}
