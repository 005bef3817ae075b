//! The store: one interface over a database of records, in one of two
//! backends. An SQLite file beside the run directories by default
//! ([`DEFAULT_FILE`]), in WAL mode so that readers never wait for a
//! writer and concurrent writers take turns; or a PostgreSQL database
//! (`postgres://...`), which many machines and CI runners write to at
//! once. Each record is written in one transaction: a reader sees a run
//! whole or not at all. Every value goes into a statement as a parameter
//! (names are data, never SQL), and the statements are the same text on
//! both backends ([`crate::backend`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::OpenFlags;

use crate::backend::{Connection, DbError, Row, Value};
use crate::record::{Record, SAMPLES_CODEC};
use crate::schema::{self, Dialect, SchemaError};
use crate::series::{Metric, Point, Series, SeriesQuery};

/// The store's file name beside the run directories.
pub const DEFAULT_FILE: &str = "history.sqlite";
/// The environment variable that names a store (a path, `sqlite:PATH`,
/// `postgres://...`, or `off`).
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
    /// Absent for runs recorded before it was.
    pub p95_ns: Option<u64>,
    pub p99_ns: u64,
    pub mean_ns: u64,
    pub min_ns: Option<u64>,
    pub max_ns: u64,
    pub low_ns: Option<u64>,
    pub high_ns: Option<u64>,
    pub alloc_bytes: Option<u64>,
    pub peak_bytes: Option<u64>,
}

impl FlatRow {
    /// The CSV header, in the fields' order.
    pub const COLUMNS: [&'static str; 25] = [
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
        "p95_ns",
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
    pub fn fields(&self) -> [String; 25] {
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
            opt(self.p95_ns),
            self.p99_ns.to_string(),
            self.mean_ns.to_string(),
            opt(self.min_ns),
            self.max_ns.to_string(),
            opt(self.low_ns),
            opt(self.high_ns),
            opt(self.alloc_bytes),
            opt(self.peak_bytes),
        ]
    }
}

impl FlatRow {
    /// `rows` as an Apache Parquet file, a column per field (in
    /// [`FlatRow::COLUMNS`]' order): text, 64-bit integers (nanoseconds and
    /// bytes), `dirty` a boolean, and nulls where a figure is not there.
    pub fn parquet(rows: &[FlatRow]) -> Vec<u8> {
        use crate::parquet::Column;
        let text = |f: fn(&FlatRow) -> Option<String>| Column::Text(rows.iter().map(f).collect());
        let int = |f: fn(&FlatRow) -> Option<u64>| {
            Column::Int(rows.iter().map(|r| f(r).map(as_i64)).collect())
        };
        let columns: [Column; 25] = [
            text(|r| Some(r.profile.clone())),
            text(|r| Some(r.kind.clone())),
            text(|r| Some(r.run_id.clone())),
            text(|r| Some(r.status.clone())),
            text(|r| Some(r.started_at.clone())),
            text(|r| r.commit.clone()),
            Column::Bool(rows.iter().map(|r| r.dirty).collect()),
            text(|r| Some(r.machine.clone())),
            text(|r| Some(r.config.clone())),
            text(|r| Some(r.part.clone())),
            text(|r| Some(r.path.clone())),
            text(|r| Some(r.name.clone())),
            int(|r| Some(u64::from(r.depth))),
            int(|r| Some(r.count)),
            int(|r| Some(r.p50_ns)),
            int(|r| Some(r.p90_ns)),
            int(|r| r.p95_ns),
            int(|r| Some(r.p99_ns)),
            int(|r| Some(r.mean_ns)),
            int(|r| r.min_ns),
            int(|r| Some(r.max_ns)),
            int(|r| r.low_ns),
            int(|r| r.high_ns),
            int(|r| r.alloc_bytes),
            int(|r| r.peak_bytes),
        ];
        let named: Vec<(&str, Column)> = FlatRow::COLUMNS.into_iter().zip(columns).collect();
        crate::parquet::write(&named)
    }
}

/// A count or a duration as Parquet's signed 64-bit integer (none comes
/// near 2^63).
fn as_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// One sample of a stored run: a measured pass's time, or one call of a
/// range (inclusive of the ranges inside it, or exclusive of them), in the
/// order measured.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SampleRow {
    pub profile: String,
    pub run_id: String,
    pub started_at: String,
    pub commit: Option<String>,
    pub machine: String,
    pub config: String,
    /// "pass" or "range".
    pub part: &'static str,
    /// The range's name ("pass" for the pass).
    pub name: String,
    /// "inclusive" or "exclusive" for a range; empty for the pass.
    pub measure: &'static str,
    /// Its place among the samples of its series, from 0.
    pub index: u64,
    pub ns: u64,
}

impl SampleRow {
    /// The CSV header, in the fields' order.
    pub const COLUMNS: [&'static str; 11] = [
        "profile",
        "run_id",
        "started_at",
        "commit",
        "machine",
        "config",
        "part",
        "name",
        "measure",
        "index",
        "ns",
    ];

    /// `rows` as an Apache Parquet file, a column per field (in
    /// [`SampleRow::COLUMNS`]' order).
    pub fn parquet(rows: &[SampleRow]) -> Vec<u8> {
        use crate::parquet::Column;
        let text = |f: fn(&SampleRow) -> Option<String>| Column::Text(rows.iter().map(f).collect());
        let columns: [Column; 11] = [
            text(|r| Some(r.profile.clone())),
            text(|r| Some(r.run_id.clone())),
            text(|r| Some(r.started_at.clone())),
            text(|r| r.commit.clone()),
            text(|r| Some(r.machine.clone())),
            text(|r| Some(r.config.clone())),
            text(|r| Some(r.part.to_owned())),
            text(|r| Some(r.name.clone())),
            text(|r| Some(r.measure.to_owned())),
            Column::Int(rows.iter().map(|r| Some(as_i64(r.index))).collect()),
            Column::Int(rows.iter().map(|r| Some(as_i64(r.ns))).collect()),
        ];
        let named: Vec<(&str, Column)> = SampleRow::COLUMNS.into_iter().zip(columns).collect();
        crate::parquet::write(&named)
    }

    /// The fields as text, in [`SampleRow::COLUMNS`]' order.
    pub fn fields(&self) -> [String; 11] {
        [
            self.profile.clone(),
            self.run_id.clone(),
            self.started_at.clone(),
            self.commit.clone().unwrap_or_default(),
            self.machine.clone(),
            self.config.clone(),
            self.part.to_owned(),
            self.name.clone(),
            self.measure.to_owned(),
            self.index.to_string(),
            self.ns.to_string(),
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
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL (`postgres://` or `postgresql://`),
    /// as given; shown with its password masked.
    Postgres(String),
    /// Nothing is recorded.
    Off,
}

impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            Location::Postgres(url) => f.debug_tuple("Postgres").field(&mask(url)).finish(),
            Location::Off => f.write_str("Off"),
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sqlite(path) => write!(f, "{}", path.display()),
            Location::Postgres(url) => f.write_str(&mask(url)),
            Location::Off => f.write_str("off"),
        }
    }
}

impl Location {
    /// `text` as a user gives it: `off` (or `none`), `sqlite:PATH`,
    /// `sqlite://PATH`, `postgres://...` (or `postgresql://...`), or a
    /// path; a relative path is taken from `base`.
    pub fn parse(text: &str, base: &Path) -> Result<Location, StoreError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(StoreError::Location {
                given: String::new(),
                reason: "empty: give a path, `sqlite:PATH`, `postgres://...` or `off`".to_owned(),
            });
        }
        if matches!(text, "off" | "none") {
            return Ok(Location::Off);
        }
        let path = if let Some(rest) = text.strip_prefix("sqlite://") {
            rest
        } else if let Some(rest) = text.strip_prefix("sqlite:") {
            rest
        } else if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            crate::pg::config(text)?;
            return Ok(Location::Postgres(text.to_owned()));
        } else if let Some((scheme, _)) = text.split_once("://") {
            return Err(StoreError::Location {
                given: mask(text),
                reason: format!(
                    "`{scheme}` is not a store this build writes: a path or `sqlite:PATH` for an SQLite file, `postgres://USER@HOST/DATABASE` for PostgreSQL"
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

/// Why the store could not be used. `store` is its path, or its URL with
/// the password masked.
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
    #[error("{store}: cannot open the history store: {source}")]
    Open { store: String, source: DbError },
    #[error("{store}: the history store has schema version {found}, and this build knows versions up to {supported}: a newer profile-cli wrote it; use that one")]
    Newer {
        store: String,
        found: u32,
        supported: u32,
    },
    #[error("{store}: not a history store: {reason}")]
    NotAStore { store: String, reason: String },
    #[error("{store}: {source}")]
    Sql { store: String, source: DbError },
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
    dialect: Dialect,
    /// Its path, or its URL with the password masked.
    name: String,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("store", &self.name).finish()
    }
}

/// How long a writer waits for another to finish before it gives up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

impl Store {
    /// Opens the store `location` names for writing (making an SQLite
    /// file and its directory when they are not there), migrated to this
    /// build's schema; `None` for [`Location::Off`].
    pub fn open_location(location: &Location) -> Result<Option<Store>, StoreError> {
        match location {
            Location::Sqlite(path) => Store::open(path).map(Some),
            Location::Postgres(url) => Store::connect(url).map(Some),
            Location::Off => Ok(None),
        }
    }

    /// Opens the store `location` names to read it: an SQLite file must
    /// be there ([`StoreError::Missing`]); `None` for [`Location::Off`].
    pub fn open_location_existing(location: &Location) -> Result<Option<Store>, StoreError> {
        match location {
            Location::Sqlite(path) => Store::open_existing(path).map(Some),
            Location::Postgres(url) => Store::connect(url).map(Some),
            Location::Off => Ok(None),
        }
    }

    /// Connects to the PostgreSQL database `url` names, migrating it to
    /// this build's schema. The password comes from the URL, else
    /// `PGPASSWORD`, else the password file (`PGPASSFILE` or
    /// `~/.pgpass`), as libpq finds it.
    pub fn connect(url: &str) -> Result<Store, StoreError> {
        let name = mask(url);
        let client = crate::pg::config(url)?
            .connect(postgres::NoTls)
            .map_err(|source| StoreError::Open {
                store: name.clone(),
                source: source.into(),
            })?;
        let mut conn = Connection::Postgres(Box::new(crate::backend::Postgres {
            client,
            statements: Default::default(),
        }));
        schema::migrate(&mut conn, Dialect::Postgres)
            .map_err(|error| schema_error(&name, error))?;
        Ok(Store {
            conn,
            dialect: Dialect::Postgres,
            name,
        })
    }

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
        let conn = rusqlite::Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| StoreError::Open {
            store: path.display().to_string(),
            source: source.into(),
        })?;
        Store::set_up(conn, path, true)
    }

    /// Opens the SQLite store at `path` to read it; [`StoreError::Missing`]
    /// when there is none.
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        if !path.is_file() {
            return Err(StoreError::Missing {
                path: path.to_path_buf(),
            });
        }
        let conn = rusqlite::Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .or_else(|_| {
            rusqlite::Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
        })
        .map_err(|source| StoreError::Open {
            store: path.display().to_string(),
            source: source.into(),
        })?;
        let writable = !conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(true);
        Store::set_up(conn, path, writable)
    }

    fn set_up(
        conn: rusqlite::Connection,
        path: &Path,
        writable: bool,
    ) -> Result<Store, StoreError> {
        let name = path.display().to_string();
        let sql = |source: rusqlite::Error| StoreError::Sql {
            store: name.clone(),
            source: source.into(),
        };
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        if writable {
            // Not a database (a text file, a truncated copy) fails here.
            conn.pragma_update(None, "journal_mode", "WAL")
                .map_err(|source| not_a_store(&name, source.into()))?;
            conn.pragma_update(None, "synchronous", "NORMAL")
                .map_err(sql)?;
        }
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(sql)?;
        let mut conn = Connection::Sqlite(conn);
        if writable {
            schema::migrate(&mut conn, Dialect::Sqlite).map_err(|e| schema_error(&name, e))?;
        } else {
            let found =
                schema::version(&mut conn, Dialect::Sqlite).map_err(|e| schema_error(&name, e))?;
            if found > schema::VERSION {
                return Err(schema_error(&name, SchemaError::Newer { found }));
            }
            if found < schema::VERSION {
                return Err(StoreError::NotAStore {
                    store: name,
                    reason: format!(
                        "it has schema version {found} and is read-only, so it cannot be brought to version {}",
                        schema::VERSION
                    ),
                });
            }
        }
        Ok(Store {
            conn,
            dialect: Dialect::Sqlite,
            name,
        })
    }

    /// Where the store is: its path, or its URL with the password masked.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// True for a PostgreSQL store.
    pub fn is_postgres(&self) -> bool {
        self.dialect == Dialect::Postgres
    }

    fn sql(&self, source: DbError) -> StoreError {
        StoreError::Sql {
            store: self.name.clone(),
            source,
        }
    }

    fn query(&mut self, sql: &str, values: &[Value<'_>]) -> Result<Vec<Row>, StoreError> {
        let name = &self.name;
        self.conn
            .query(sql, values)
            .map_err(|source| StoreError::Sql {
                store: name.clone(),
                source,
            })
    }

    /// Writes `record` in one transaction, unless the store holds the run
    /// already. Two writers of the same run at once write it once: the
    /// second finds the first's.
    pub fn record(&mut self, record: &Record) -> Result<Recorded, StoreError> {
        let name = self.name.clone();
        let sql = |source| StoreError::Sql {
            store: name.clone(),
            source,
        };
        let identity = record.identity();
        let mut tx = self.conn.transaction().map_err(sql)?;
        let existing = tx
            .query(
                "SELECT id FROM runs WHERE identity = ?1",
                &[Value::Text(Some(&identity))],
            )
            .map_err(sql)?;
        if let Some(row) = existing.first() {
            return Ok(Recorded {
                id: row.int(0).map_err(sql)?,
                inserted: false,
            });
        }
        let recorded = insert(&mut tx, record, &identity).map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(recorded)
    }

    /// How many runs the store holds.
    pub fn runs(&mut self) -> Result<u64, StoreError> {
        let rows = self.query("SELECT COUNT(*) FROM runs", &[])?;
        let count = rows[0].int(0).map_err(|e| self.sql(e))?;
        Ok(from_sql_int(count))
    }

    /// The identities of every stored run (`profile/run_id@started_at`,
    /// with the place of a pair's side or a sweep's point), in the order
    /// they were written.
    pub fn identities(&mut self) -> Result<Vec<String>, StoreError> {
        let rows = self.query("SELECT identity FROM runs ORDER BY id", &[])?;
        rows.iter()
            .map(|row| row.text(0))
            .collect::<Result<_, _>>()
            .map_err(|e| self.sql(e))
    }

    /// The profiles the store holds runs of, by name.
    pub fn profiles(&mut self) -> Result<Vec<String>, StoreError> {
        let rows = self.query("SELECT DISTINCT profile FROM runs ORDER BY profile", &[])?;
        rows.iter()
            .map(|row| row.text(0))
            .collect::<Result<_, _>>()
            .map_err(|e| self.sql(e))
    }

    /// The runs of `query.profile`, one series per machine, config and
    /// range path (the pass first, then the paths in order), each run a
    /// point, oldest first. Failed runs are never stored; interrupted ones
    /// are left out.
    pub fn series(&mut self, query: &SeriesQuery) -> Result<Vec<Series>, StoreError> {
        let column = query.metric.column();
        let (low, high) = if query.metric.has_interval() {
            ("r.low_ns", "r.high_ns")
        } else {
            ("NULL", "NULL")
        };
        let statement = format!(
            "SELECT u.machine, u.config, r.part, r.path, r.name, r.depth, u.id, u.run_id,
                    u.started_at, u.git_commit, u.git_dirty, u.run_dir, {column}, {low}, {high}
             FROM runs u JOIN ranges r ON r.run = u.id
             WHERE u.profile = ?1 AND u.status = 'completed'
               AND (CAST(?2 AS TEXT) IS NULL OR u.machine = ?2) AND (CAST(?3 AS TEXT) IS NULL OR u.config = ?3)
               AND {column} IS NOT NULL
             ORDER BY u.machine, u.config, CASE r.part WHEN 'pass' THEN 0 WHEN 'load' THEN 1 ELSE 2 END, r.path,
                      u.started_at, u.id"
        );
        let rows = self.query(
            &statement,
            &[
                Value::Text(Some(&query.profile)),
                Value::Text(query.machine.as_deref()),
                Value::Text(query.config.as_deref()),
            ],
        )?;
        let mut series: Vec<Series> = Vec::new();
        for row in &rows {
            let read = || -> Result<(Series, Point), DbError> {
                let key = Series {
                    profile: query.profile.clone(),
                    metric: query.metric,
                    machine: row.text(0)?,
                    config: row.text(1)?,
                    part: row.text(2)?,
                    path: row.text(3)?,
                    name: row.text(4)?,
                    depth: u32::try_from(row.int(5)?).unwrap_or(u32::MAX),
                    points: Vec::new(),
                };
                let point = Point {
                    run: row.int(6)?,
                    run_id: row.text(7)?,
                    started_at: row.text(8)?,
                    commit: row.opt_text(9)?,
                    dirty: row.flag(10)?,
                    run_dir: PathBuf::from(row.text(11)?),
                    value: from_sql_int(row.int(12)?),
                    low: row.opt_int(13)?.map(from_sql_int),
                    high: row.opt_int(14)?.map(from_sql_int),
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
        &mut self,
        profile: &str,
        machine: Option<&str>,
        config: Option<&str>,
    ) -> Result<Vec<FlatRow>, StoreError> {
        let rows = self.query(
            "SELECT u.profile, u.kind, u.run_id, u.status, u.started_at, u.git_commit,
                    u.git_dirty, u.machine, u.config, r.part, r.path, r.name, r.depth,
                    r.count, r.p50_ns, r.p90_ns, r.p99_ns, r.mean_ns, r.min_ns, r.max_ns,
                    r.low_ns, r.high_ns, r.alloc_bytes, r.peak_bytes, r.p95_ns
             FROM runs u JOIN ranges r ON r.run = u.id
             WHERE u.profile = ?1 AND (CAST(?2 AS TEXT) IS NULL OR u.machine = ?2)
               AND (CAST(?3 AS TEXT) IS NULL OR u.config = ?3)
             ORDER BY u.started_at, u.id, CASE r.part WHEN 'pass' THEN 0 WHEN 'load' THEN 1 ELSE 2 END, r.path",
            &[
                Value::Text(Some(profile)),
                Value::Text(machine),
                Value::Text(config),
            ],
        )?;
        let flat = |row: &Row| -> Result<FlatRow, DbError> {
            let count = |k: usize| row.int(k).map(from_sql_int);
            let maybe = |k: usize| row.opt_int(k).map(|v| v.map(from_sql_int));
            Ok(FlatRow {
                profile: row.text(0)?,
                kind: row.text(1)?,
                run_id: row.text(2)?,
                status: row.text(3)?,
                started_at: row.text(4)?,
                commit: row.opt_text(5)?,
                dirty: row.flag(6)?,
                machine: row.text(7)?,
                config: row.text(8)?,
                part: row.text(9)?,
                path: row.text(10)?,
                name: row.text(11)?,
                depth: u32::try_from(row.int(12)?).unwrap_or(u32::MAX),
                count: count(13)?,
                p50_ns: count(14)?,
                p90_ns: count(15)?,
                p95_ns: maybe(24)?,
                p99_ns: count(16)?,
                mean_ns: count(17)?,
                min_ns: maybe(18)?,
                max_ns: count(19)?,
                low_ns: maybe(20)?,
                high_ns: maybe(21)?,
                alloc_bytes: maybe(22)?,
                peak_bytes: maybe(23)?,
            })
        };
        rows.iter()
            .map(flat)
            .collect::<Result<_, _>>()
            .map_err(|e| self.sql(e))
    }

    /// Every kept sample of the target's stored runs, a row each, the runs
    /// in the order they started (`machine` and `config` filter them as in
    /// [`Store::rows`]); and how many samples were known only by histogram
    /// buckets (a run past its kept samples), which have no row.
    pub fn sample_rows(
        &mut self,
        profile: &str,
        machine: Option<&str>,
        config: Option<&str>,
    ) -> Result<(Vec<SampleRow>, u64), StoreError> {
        let runs = self.query(
            "SELECT id, run_id, started_at, git_commit, machine, config FROM runs
             WHERE profile = ?1 AND (CAST(?2 AS TEXT) IS NULL OR machine = ?2)
               AND (CAST(?3 AS TEXT) IS NULL OR config = ?3)
             ORDER BY started_at, id",
            &[
                Value::Text(Some(profile)),
                Value::Text(machine),
                Value::Text(config),
            ],
        )?;
        let runs = runs
            .iter()
            .map(|row| -> Result<_, DbError> {
                Ok((
                    row.int(0)?,
                    row.text(1)?,
                    row.text(2)?,
                    row.opt_text(3)?,
                    row.text(4)?,
                    row.text(5)?,
                ))
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.sql(e))?;
        let mut rows = Vec::new();
        let mut sketched = 0;
        for (id, run_id, started_at, commit, machine, config) in runs {
            let Some(bytes) = self.samples(id)? else {
                continue;
            };
            let decoded =
                profiling_core::driver::run_samples::RunSamples::decode(&bytes).map_err(|e| {
                    StoreError::NotAStore {
                        store: self.name.clone(),
                        reason: format!("the samples of run {run_id} do not read: {e}"),
                    }
                })?;
            let mut series: Vec<(
                &'static str,
                String,
                &'static str,
                &profiling_core::driver::run_samples::Series,
            )> = vec![("pass", "pass".to_owned(), "", &decoded.passes)];
            for range in &decoded.ranges {
                series.push(("range", range.name.clone(), "inclusive", &range.inclusive));
                series.push(("range", range.name.clone(), "exclusive", &range.exclusive));
            }
            for (part, name, measure, values) in series {
                sketched += values.count.saturating_sub(values.kept.len() as u64);
                for (index, &ns) in values.kept.iter().enumerate() {
                    rows.push(SampleRow {
                        profile: profile.to_owned(),
                        run_id: run_id.clone(),
                        started_at: started_at.clone(),
                        commit: commit.clone(),
                        machine: machine.clone(),
                        config: config.clone(),
                        part,
                        name: name.clone(),
                        measure,
                        index: index as u64,
                        ns,
                    });
                }
            }
        }
        Ok((rows, sketched))
    }

    /// The machine stored under `fingerprint`.
    pub fn machine(&mut self, fingerprint: &str) -> Result<Option<crate::Machine>, StoreError> {
        let rows = self.query(
            "SELECT fingerprint, host, os, cpu_model, cores, backend, gpus, kernel, governor,
                    gpu_driver
             FROM machines WHERE fingerprint = ?1",
            &[Value::Text(Some(fingerprint))],
        )?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let read = || -> Result<crate::Machine, DbError> {
            Ok(crate::Machine {
                fingerprint: row.text(0)?,
                host: row.text(1)?,
                os: row.text(2)?,
                cpu_model: row.text(3)?,
                cores: from_sql_int(row.int(4)?),
                backend: row.text(5)?,
                gpus: row.text(6)?,
                kernel: row.text(7)?,
                governor: row.text(8)?,
                gpu_driver: row.text(9)?,
            })
        };
        read().map(Some).map_err(|e| self.sql(e))
    }

    /// The raw samples of stored run `id` (`samples.bin` as written), when
    /// it had any.
    pub fn samples(&mut self, id: i64) -> Result<Option<Vec<u8>>, StoreError> {
        let rows = self.query(
            "SELECT samples, samples_codec FROM documents WHERE run = ?1",
            &[Value::Int(Some(id))],
        )?;
        let stored = rows
            .first()
            .map(|row| Ok::<_, DbError>((row.opt_blob(0)?, row.opt_text(1)?)))
            .transpose()
            .map_err(|e| self.sql(e))?;
        match stored {
            Some((Some(bytes), Some(codec))) if codec == SAMPLES_CODEC => {
                crate::record::inflate(&bytes)
                    .map(Some)
                    .map_err(|e| StoreError::NotAStore {
                        store: self.name.clone(),
                        reason: format!("the samples of run {id} do not inflate: {e}"),
                    })
            }
            Some((Some(_), codec)) => Err(StoreError::NotAStore {
                store: self.name.clone(),
                reason: format!("the samples of run {id} have an unknown codec {codec:?}"),
            }),
            _ => Ok(None),
        }
    }
}

/// A pair's verdict by its gates, as [`Store::record_verdict`] writes it
/// and [`Store::verdicts`] reads it back.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Verdict {
    pub profile: String,
    pub ab_id: String,
    /// The sides' record identities ([`Record::identity`]): the verdict
    /// names the stored runs when they are in the store.
    pub base: String,
    pub candidate: String,
    pub base_commit: Option<String>,
    pub candidate_commit: Option<String>,
    /// `accept`, `reject` or `inconclusive`.
    pub verdict: String,
    /// Each gate's result, as JSON (the `ab --json` document's
    /// `gates.results`).
    pub gates: String,
}

impl Verdict {
    /// What makes a verdict one: the same pair judged twice is one.
    pub fn identity(&self) -> String {
        format!("{} vs {}", self.base, self.candidate)
    }
}

impl Store {
    /// Writes `verdict` in one transaction, unless the store holds it
    /// already; it names its sides' stored runs where they are there.
    pub fn record_verdict(&mut self, verdict: &Verdict) -> Result<Recorded, StoreError> {
        let name = self.name.clone();
        let sql = |source| StoreError::Sql {
            store: name.clone(),
            source,
        };
        let identity = verdict.identity();
        let now = profiling_core::driver::provenance::UtcTime::now().rfc3339();
        let mut tx = self.conn.transaction().map_err(sql)?;
        let inserted = tx
            .query(
                "INSERT INTO verdicts (identity, profile, ab_id, base_run, candidate_run,
                     base_commit, candidate_commit, verdict, gates, recorded_at)
                 VALUES (?1, ?2, ?3, (SELECT id FROM runs WHERE identity = ?4),
                     (SELECT id FROM runs WHERE identity = ?5), ?6, ?7, ?8, ?9, ?10)
                 ON CONFLICT (identity) DO NOTHING RETURNING id",
                &[
                    Value::Text(Some(&identity)),
                    Value::Text(Some(&verdict.profile)),
                    Value::Text(Some(&verdict.ab_id)),
                    Value::Text(Some(&verdict.base)),
                    Value::Text(Some(&verdict.candidate)),
                    Value::Text(verdict.base_commit.as_deref()),
                    Value::Text(verdict.candidate_commit.as_deref()),
                    Value::Text(Some(&verdict.verdict)),
                    Value::Text(Some(&verdict.gates)),
                    Value::Text(Some(&now)),
                ],
            )
            .map_err(sql)?;
        let recorded = match inserted.first() {
            Some(row) => Recorded {
                id: row.int(0).map_err(sql)?,
                inserted: true,
            },
            None => {
                let existing = tx
                    .query(
                        "SELECT id FROM verdicts WHERE identity = ?1",
                        &[Value::Text(Some(&identity))],
                    )
                    .map_err(sql)?;
                Recorded {
                    id: existing
                        .first()
                        .map(|r| r.int(0))
                        .transpose()
                        .map_err(sql)?
                        .unwrap_or(0),
                    inserted: false,
                }
            }
        };
        tx.commit().map_err(sql)?;
        Ok(recorded)
    }

    /// The verdicts of `profile`'s pairs, oldest first.
    pub fn verdicts(&mut self, profile: &str) -> Result<Vec<Verdict>, StoreError> {
        let rows = self.query(
            "SELECT v.profile, v.ab_id, v.identity, v.base_commit, v.candidate_commit, v.verdict,
                    v.gates, b.identity, c.identity
             FROM verdicts v LEFT JOIN runs b ON b.id = v.base_run
                  LEFT JOIN runs c ON c.id = v.candidate_run
             WHERE v.profile = ?1 ORDER BY v.id",
            &[Value::Text(Some(profile))],
        )?;
        let read = |row: &Row| -> Result<Verdict, DbError> {
            let identity = row.text(2)?;
            let (base, candidate) = identity
                .split_once(" vs ")
                .map(|(b, c)| (b.to_owned(), c.to_owned()))
                .unwrap_or_default();
            Ok(Verdict {
                profile: row.text(0)?,
                ab_id: row.text(1)?,
                base: row.opt_text(7)?.unwrap_or(base),
                candidate: row.opt_text(8)?.unwrap_or(candidate),
                base_commit: row.opt_text(3)?,
                candidate_commit: row.opt_text(4)?,
                verdict: row.text(5)?,
                gates: row.text(6)?,
            })
        };
        rows.iter()
            .map(read)
            .collect::<Result<_, _>>()
            .map_err(|e| self.sql(e))
    }
}

/// Inserts `record` (its machine and config where new, the run, its rows
/// and its documents) in `tx`. A run another writer stored since the
/// transaction began is left as it is, its id returned.
fn insert(
    tx: &mut crate::backend::Tx<'_>,
    record: &Record,
    identity: &str,
) -> Result<Recorded, DbError> {
    let machine = &record.machine;
    tx.execute(
        "INSERT INTO machines (fingerprint, host, os, cpu_model, cores, backend, gpus, kernel,
             governor, gpu_driver)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT (fingerprint) DO NOTHING",
        &[
            Value::Text(Some(&machine.fingerprint)),
            Value::Text(Some(&machine.host)),
            Value::Text(Some(&machine.os)),
            Value::Text(Some(&machine.cpu_model)),
            Value::Int(Some(sql_int(machine.cores))),
            Value::Text(Some(&machine.backend)),
            Value::Text(Some(&machine.gpus)),
            Value::Text(Some(&machine.kernel)),
            Value::Text(Some(&machine.governor)),
            Value::Text(Some(&machine.gpu_driver)),
        ],
    )?;
    tx.execute(
        "INSERT INTO configs (hash, description) VALUES (?1, ?2)
         ON CONFLICT (hash) DO NOTHING",
        &[
            Value::Text(Some(&record.config)),
            Value::Text(Some(&record.config_description)),
        ],
    )?;
    let run_dir = record.run_dir.to_string_lossy();
    let now = profiling_core::driver::provenance::UtcTime::now().rfc3339();
    let inserted = tx.query(
        "INSERT INTO runs (identity, kind, profile, run_id, status, started_at, finished_at,
             git_commit, git_dirty, machine, config, iterations, run_dir, recorded_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
         ON CONFLICT (identity) DO NOTHING RETURNING id",
        &[
            Value::Text(Some(identity)),
            Value::Text(Some(record.kind)),
            Value::Text(Some(&record.profile)),
            Value::Text(Some(&record.run_id)),
            Value::Text(Some(record.status)),
            Value::Text(Some(&record.started_at)),
            Value::Text(Some(&record.finished_at)),
            Value::Text(record.git_commit.as_deref()),
            Value::Flag(record.git_dirty),
            Value::Text(Some(&machine.fingerprint)),
            Value::Text(Some(&record.config)),
            Value::Int(Some(sql_int(record.iterations))),
            Value::Text(Some(&run_dir)),
            Value::Text(Some(&now)),
        ],
    )?;
    let Some(row) = inserted.first() else {
        let existing = tx.query(
            "SELECT id FROM runs WHERE identity = ?1",
            &[Value::Text(Some(identity))],
        )?;
        let id = existing
            .first()
            .map(|row| row.int(0))
            .transpose()?
            .unwrap_or(0);
        return Ok(Recorded {
            id,
            inserted: false,
        });
    };
    let id = row.int(0)?;
    for row in &record.ranges {
        tx.execute(
            "INSERT INTO ranges (run, part, path, name, depth, count, p50_ns, p90_ns,
                 p99_ns, mean_ns, min_ns, max_ns, low_ns, high_ns, alloc_bytes, peak_bytes,
                 p95_ns)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                 ?17)",
            &[
                Value::Int(Some(id)),
                Value::Text(Some(row.part)),
                Value::Text(Some(&row.path)),
                Value::Text(Some(&row.name)),
                Value::Int(Some(i64::from(row.depth))),
                Value::Int(Some(sql_int(row.count))),
                Value::Int(Some(sql_int(row.p50_ns))),
                Value::Int(Some(sql_int(row.p90_ns))),
                Value::Int(Some(sql_int(row.p99_ns))),
                Value::Int(Some(sql_int(row.mean_ns))),
                Value::Int(row.min_ns.map(sql_int)),
                Value::Int(Some(sql_int(row.max_ns))),
                Value::Int(row.low_ns.map(sql_int)),
                Value::Int(row.high_ns.map(sql_int)),
                Value::Int(row.alloc_bytes.map(sql_int)),
                Value::Int(row.peak_bytes.map(sql_int)),
                Value::Int(row.p95_ns.map(sql_int)),
            ],
        )?;
    }
    tx.execute(
        "INSERT INTO documents (run, manifest, samples, samples_codec) VALUES (?1, ?2, ?3, ?4)",
        &[
            Value::Int(Some(id)),
            Value::Text(Some(&record.manifest)),
            Value::Blob(record.samples.as_deref()),
            Value::Text(record.samples.as_ref().map(|_| SAMPLES_CODEC)),
        ],
    )?;
    Ok(Recorded { id, inserted: true })
}

fn schema_error(name: &str, error: SchemaError) -> StoreError {
    match error {
        SchemaError::Newer { found } => StoreError::Newer {
            store: name.to_owned(),
            found,
            supported: schema::VERSION,
        },
        SchemaError::Unreadable { value } => StoreError::NotAStore {
            store: name.to_owned(),
            reason: format!("meta.schema_version is `{value}`, not a version"),
        },
        SchemaError::Sql(source) => not_a_store(name, source),
    }
}

fn not_a_store(name: &str, source: DbError) -> StoreError {
    match source {
        DbError::Sqlite(rusqlite::Error::SqliteFailure(error, _))
            if error.code == rusqlite::ErrorCode::NotADatabase =>
        {
            StoreError::NotAStore {
                store: name.to_owned(),
                reason: "the file is not an SQLite database".to_owned(),
            }
        }
        DbError::Sqlite(rusqlite::Error::SqliteFailure(error, detail))
            if error.code == rusqlite::ErrorCode::DatabaseCorrupt =>
        {
            StoreError::NotAStore {
                store: name.to_owned(),
                reason: format!(
                    "the SQLite file is damaged ({}): restore it from a copy, or move it away and `profile-cli history import` the run directories",
                    detail.as_deref().unwrap_or("database disk image is malformed")
                ),
            }
        }
        source => StoreError::Sql {
            store: name.to_owned(),
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
            Metric::P95 => "r.p95_ns",
            Metric::P99 => "r.p99_ns",
            Metric::Mean => "r.mean_ns",
            Metric::Min => "r.min_ns",
            Metric::Max => "r.max_ns",
            Metric::AllocBytes => "r.alloc_bytes",
            Metric::Peak => "r.peak_bytes",
        }
    }
}
