//! The store's tables, and the migrations that make them, in order.
//!
//! `meta.schema_version` says which migrations a store has had. Opening a
//! store runs the ones it lacks, each in its own transaction; a store of a
//! newer version than this build knows is refused, both versions named,
//! and left as it is.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

/// The migrations, the first making version 1. Append only: a published
/// migration never changes.
const MIGRATIONS: &[&str] = &[
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
];

/// The version a store has once every migration of this build ran.
pub const VERSION: u32 = MIGRATIONS.len() as u32;

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
    Sql(rusqlite::Error),
}

impl From<rusqlite::Error> for SchemaError {
    fn from(error: rusqlite::Error) -> SchemaError {
        SchemaError::Sql(error)
    }
}

/// The store's version: 0 before any migration.
pub fn version(conn: &Connection) -> Result<u32, SchemaError> {
    let has_meta: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta')",
        [],
        |row| row.get(0),
    )?;
    if !has_meta {
        return Ok(0);
    }
    let value: Option<String> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |row| row.get(0),
        )
        .optional()?;
    match value {
        None => Ok(0),
        Some(value) => value.parse().map_err(|_| SchemaError::Unreadable { value }),
    }
}

/// Runs the migrations `conn` lacks, each in a transaction that also
/// moves the version; refuses a newer store untouched.
pub fn migrate(conn: &mut Connection) -> Result<u32, SchemaError> {
    loop {
        // Under the write lock, so that two processes opening a new store
        // at once run each migration once.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let current = version(&tx)?;
        if current > VERSION {
            return Err(SchemaError::Newer { found: current });
        }
        if current == VERSION {
            tx.commit()?;
            return Ok(current);
        }
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        )?;
        tx.execute_batch(MIGRATIONS[current as usize])?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [(current + 1).to_string()],
        )?;
        tx.commit()?;
    }
}
