//! The store's tables, and the migrations that make them, in order.
//!
//! `meta.schema_version` says which migrations a store has had. Opening a
//! store runs the ones it lacks, each in its own transaction; a store of a
//! newer version than this build knows is refused, both versions named,
//! and left as it is.

use crate::backend::{Connection, DbError, Tx, Value};

/// The migrations of an SQLite store, the first making version 1. Append
/// only: a published migration never changes, and each has its
/// PostgreSQL twin in [`POSTGRES`] at the same place.
const SQLITE: &[&str] = &[
    // 1: runs, the machines and configs they name, their ranges and their
    // documents (the manifest, the samples).
    "
    CREATE TABLE machines (
        fingerprint TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        os TEXT NOT NULL,
        cpu_model TEXT NOT NULL,
        cores INTEGER NOT NULL,
        backend TEXT NOT NULL,
        gpus TEXT NOT NULL
    );
    CREATE TABLE configs (
        hash TEXT PRIMARY KEY,
        description TEXT NOT NULL
    );
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        identity TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        profile TEXT NOT NULL,
        run_id TEXT NOT NULL,
        status TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT NOT NULL,
        git_commit TEXT,
        git_dirty INTEGER,
        machine TEXT NOT NULL REFERENCES machines(fingerprint),
        config TEXT NOT NULL REFERENCES configs(hash),
        iterations INTEGER NOT NULL,
        run_dir TEXT NOT NULL,
        recorded_at TEXT NOT NULL
    );
    CREATE INDEX runs_by_series ON runs(profile, machine, config, started_at);
    CREATE TABLE ranges (
        run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        part TEXT NOT NULL,
        path TEXT NOT NULL,
        name TEXT NOT NULL,
        depth INTEGER NOT NULL,
        count INTEGER NOT NULL,
        p50_ns INTEGER NOT NULL,
        p90_ns INTEGER NOT NULL,
        p99_ns INTEGER NOT NULL,
        mean_ns INTEGER NOT NULL,
        min_ns INTEGER NOT NULL,
        max_ns INTEGER NOT NULL,
        low_ns INTEGER,
        high_ns INTEGER,
        alloc_bytes INTEGER,
        peak_bytes INTEGER,
        PRIMARY KEY (run, part, path)
    );
    CREATE TABLE documents (
        run INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        manifest TEXT NOT NULL,
        samples BLOB,
        samples_codec TEXT
    );
    ",
    // 2: the machine's kernel, CPU governor and GPU driver.
    "
    ALTER TABLE machines ADD COLUMN kernel TEXT NOT NULL DEFAULT '';
    ALTER TABLE machines ADD COLUMN governor TEXT NOT NULL DEFAULT '';
    ALTER TABLE machines ADD COLUMN gpu_driver TEXT NOT NULL DEFAULT '';
    ",
    // 3: a range's minimum may be absent (a load's distributions have
    // none); SQLite changes a column's constraint by making the table anew.
    "
    ALTER TABLE ranges RENAME TO ranges_before_3;
    CREATE TABLE ranges (
        run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        part TEXT NOT NULL,
        path TEXT NOT NULL,
        name TEXT NOT NULL,
        depth INTEGER NOT NULL,
        count INTEGER NOT NULL,
        p50_ns INTEGER NOT NULL,
        p90_ns INTEGER NOT NULL,
        p99_ns INTEGER NOT NULL,
        mean_ns INTEGER NOT NULL,
        min_ns INTEGER,
        max_ns INTEGER NOT NULL,
        low_ns INTEGER,
        high_ns INTEGER,
        alloc_bytes INTEGER,
        peak_bytes INTEGER,
        PRIMARY KEY (run, part, path)
    );
    INSERT INTO ranges SELECT * FROM ranges_before_3;
    DROP TABLE ranges_before_3;
    ",
    // 4: the verdicts of pairs judged by gates.
    "
    CREATE TABLE verdicts (
        id INTEGER PRIMARY KEY,
        identity TEXT NOT NULL UNIQUE,
        profile TEXT NOT NULL,
        ab_id TEXT NOT NULL,
        base_run INTEGER REFERENCES runs(id) ON DELETE SET NULL,
        candidate_run INTEGER REFERENCES runs(id) ON DELETE SET NULL,
        base_commit TEXT,
        candidate_commit TEXT,
        verdict TEXT NOT NULL,
        gates TEXT NOT NULL,
        recorded_at TEXT NOT NULL
    );
    CREATE INDEX verdicts_by_profile ON verdicts(profile, id);
    ",
    // 5: a range's p95, absent for the runs recorded before it.
    "ALTER TABLE ranges ADD COLUMN p95_ns INTEGER;",
];

/// The same migrations for PostgreSQL: its types for SQLite's (`BIGINT`
/// for `INTEGER`, an identity column for the row id, `BOOLEAN` for the
/// dirty flag, `BYTEA` for `BLOB`), the same tables, columns and keys.
const POSTGRES: &[&str] = &[
    "
    CREATE TABLE machines (
        fingerprint TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        os TEXT NOT NULL,
        cpu_model TEXT NOT NULL,
        cores BIGINT NOT NULL,
        backend TEXT NOT NULL,
        gpus TEXT NOT NULL
    );
    CREATE TABLE configs (
        hash TEXT PRIMARY KEY,
        description TEXT NOT NULL
    );
    CREATE TABLE runs (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        identity TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        profile TEXT NOT NULL,
        run_id TEXT NOT NULL,
        status TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT NOT NULL,
        git_commit TEXT,
        git_dirty BOOLEAN,
        machine TEXT NOT NULL REFERENCES machines(fingerprint),
        config TEXT NOT NULL REFERENCES configs(hash),
        iterations BIGINT NOT NULL,
        run_dir TEXT NOT NULL,
        recorded_at TEXT NOT NULL
    );
    CREATE INDEX runs_by_series ON runs(profile, machine, config, started_at);
    CREATE TABLE ranges (
        run BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        part TEXT NOT NULL,
        path TEXT NOT NULL,
        name TEXT NOT NULL,
        depth BIGINT NOT NULL,
        count BIGINT NOT NULL,
        p50_ns BIGINT NOT NULL,
        p90_ns BIGINT NOT NULL,
        p99_ns BIGINT NOT NULL,
        mean_ns BIGINT NOT NULL,
        min_ns BIGINT NOT NULL,
        max_ns BIGINT NOT NULL,
        low_ns BIGINT,
        high_ns BIGINT,
        alloc_bytes BIGINT,
        peak_bytes BIGINT,
        PRIMARY KEY (run, part, path)
    );
    CREATE TABLE documents (
        run BIGINT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        manifest TEXT NOT NULL,
        samples BYTEA,
        samples_codec TEXT
    );
    ",
    "
    ALTER TABLE machines ADD COLUMN kernel TEXT NOT NULL DEFAULT '';
    ALTER TABLE machines ADD COLUMN governor TEXT NOT NULL DEFAULT '';
    ALTER TABLE machines ADD COLUMN gpu_driver TEXT NOT NULL DEFAULT '';
    ",
    "ALTER TABLE ranges ALTER COLUMN min_ns DROP NOT NULL;",
    "
    CREATE TABLE verdicts (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        identity TEXT NOT NULL UNIQUE,
        profile TEXT NOT NULL,
        ab_id TEXT NOT NULL,
        base_run BIGINT REFERENCES runs(id) ON DELETE SET NULL,
        candidate_run BIGINT REFERENCES runs(id) ON DELETE SET NULL,
        base_commit TEXT,
        candidate_commit TEXT,
        verdict TEXT NOT NULL,
        gates TEXT NOT NULL,
        recorded_at TEXT NOT NULL
    );
    CREATE INDEX verdicts_by_profile ON verdicts(profile, id);
    ",
    "ALTER TABLE ranges ADD COLUMN p95_ns BIGINT;",
];

/// Which database a store is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    fn migrations(self) -> &'static [&'static str] {
        match self {
            Dialect::Sqlite => SQLITE,
            Dialect::Postgres => POSTGRES,
        }
    }
}

/// The key of the advisory lock PostgreSQL writers migrate under
/// ("PRFHIST1" as a number).
const MIGRATION_LOCK: i64 = 0x5052_4648_4953_5431;

/// The version a store has once every migration of this build ran.
pub const VERSION: u32 = SQLITE.len() as u32;

const _: () = assert!(SQLITE.len() == POSTGRES.len());

/// Why a store's schema cannot be used.
#[derive(Debug)]
pub enum SchemaError {
    /// A newer build made it.
    Newer {
        found: u32,
    },
    /// `meta.schema_version` is not a version.
    Unreadable {
        value: String,
    },
    Sql(DbError),
}

impl From<DbError> for SchemaError {
    fn from(error: DbError) -> SchemaError {
        SchemaError::Sql(error)
    }
}

/// The store's version: 0 before any migration.
fn version_in(tx: &mut Tx<'_>, dialect: Dialect) -> Result<u32, SchemaError> {
    let has_meta = match dialect {
        Dialect::Sqlite => tx.query(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta')",
            &[],
        )?,
        Dialect::Postgres => tx.query("SELECT to_regclass('meta') IS NOT NULL", &[])?,
    };
    if !has_meta
        .first()
        .map(|row| row.flag(0))
        .transpose()?
        .flatten()
        .unwrap_or(false)
    {
        return Ok(0);
    }
    let value = tx.query(
        "SELECT value FROM meta WHERE key = ?1",
        &[Value::Text(Some("schema_version"))],
    )?;
    match value.first() {
        None => Ok(0),
        Some(row) => {
            let value = row.text(0)?;
            value.parse().map_err(|_| SchemaError::Unreadable { value })
        }
    }
}

/// The store's version, read in a transaction of its own.
pub(crate) fn version(conn: &mut Connection, dialect: Dialect) -> Result<u32, SchemaError> {
    let mut tx = match (dialect, &mut *conn) {
        // A read-only SQLite file cannot take the write lock.
        (Dialect::Sqlite, Connection::Sqlite(sqlite)) => {
            Tx::Sqlite(sqlite.transaction().map_err(DbError::from)?)
        }
        (_, conn) => conn.transaction()?,
    };
    let found = version_in(&mut tx, dialect)?;
    tx.commit()?;
    Ok(found)
}

/// Runs the migrations `conn` lacks, each in a transaction that also
/// moves the version; refuses a newer store untouched.
pub(crate) fn migrate(conn: &mut Connection, dialect: Dialect) -> Result<u32, SchemaError> {
    loop {
        // Under the write lock (SQLite's, or an advisory lock PostgreSQL
        // holds until the transaction ends), so that two processes opening
        // a new store at once run each migration once.
        let mut tx = conn.transaction()?;
        if dialect == Dialect::Postgres {
            tx.query(
                "SELECT 1 FROM (SELECT pg_advisory_xact_lock(?1)) AS locked",
                &[Value::Int(Some(MIGRATION_LOCK))],
            )?;
        }
        let current = version_in(&mut tx, dialect)?;
        if current > VERSION {
            return Err(SchemaError::Newer { found: current });
        }
        if current == VERSION {
            tx.commit()?;
            return Ok(current);
        }
        tx.batch("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")?;
        tx.batch(dialect.migrations()[current as usize])?;
        let next = (current + 1).to_string();
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[Value::Text(Some(&next))],
        )?;
        tx.commit()?;
    }
}
