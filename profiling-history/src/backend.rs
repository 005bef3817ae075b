//! The two databases behind the store's one interface: an SQLite file
//! (rusqlite) and a PostgreSQL server (the `postgres` client, no TLS).
//!
//! Every statement is written once, with SQLite's `?N` parameters, and
//! given to PostgreSQL as `$N`; values go in as [`Value`]s and come back
//! as [`Cell`]s, so the store's queries are the same text on both. The
//! statements keep to SQL both understand (`ON CONFLICT`, `RETURNING`,
//! `CASE`, `EXISTS`); the one difference in types is a flag, an `INTEGER`
//! 0 or 1 in SQLite and a `BOOLEAN` in PostgreSQL, which [`Cell::flag`]
//! reads either way.

use std::collections::HashMap;

use bytes::BytesMut;
use postgres::types::{IsNull, ToSql, Type};
use rusqlite::types::{ToSqlOutput, ValueRef};

/// A value given to a statement.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Value<'a> {
    Int(Option<i64>),
    Text(Option<&'a str>),
    Blob(Option<&'a [u8]>),
    Flag(Option<bool>),
}

/// A value read from a row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    Null,
    Int(i64),
    Text(String),
    Blob(Vec<u8>),
    Flag(bool),
}

/// Why a statement failed.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error("{}", postgres_message(.0))]
    Postgres(#[from] postgres::Error),
    /// A column held another type than the store's schema gives it.
    #[error("column {column}: {found} where the schema has {expected}")]
    Shape {
        column: usize,
        expected: &'static str,
        found: String,
    },
}

impl DbError {
    /// True when PostgreSQL could not be reached or the connection broke
    /// (as opposed to a statement it refused).
    pub fn is_connection(&self) -> bool {
        match self {
            DbError::Postgres(error) => error.as_db_error().is_none(),
            _ => false,
        }
    }
}

/// PostgreSQL's own message, with its detail and hint, or the client's.
fn postgres_message(error: &postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => {
            let mut message = format!("{} ({})", db.message(), db.code().code());
            if let Some(detail) = db.detail() {
                message.push_str(&format!("; {detail}"));
            }
            if let Some(hint) = db.hint() {
                message.push_str(&format!("; hint: {hint}"));
            }
            message
        }
        None => {
            let mut message = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(cause) = source {
                let text = cause.to_string();
                if !message.contains(&text) {
                    message.push_str(&format!(": {text}"));
                }
                source = cause.source();
            }
            message
        }
    }
}

impl Cell {
    fn kind(&self) -> String {
        match self {
            Cell::Null => "NULL".to_owned(),
            Cell::Int(v) => format!("the integer {v}"),
            Cell::Text(_) => "text".to_owned(),
            Cell::Blob(_) => "bytes".to_owned(),
            Cell::Flag(v) => format!("the flag {v}"),
        }
    }

    fn shape(&self, column: usize, expected: &'static str) -> DbError {
        DbError::Shape {
            column,
            expected,
            found: self.kind(),
        }
    }
}

/// One row's cells, read by position and type.
pub(crate) struct Row(pub(crate) Vec<Cell>);

impl Row {
    fn cell(&self, column: usize) -> &Cell {
        self.0.get(column).unwrap_or(&Cell::Null)
    }

    pub(crate) fn text(&self, column: usize) -> Result<String, DbError> {
        match self.cell(column) {
            Cell::Text(text) => Ok(text.clone()),
            other => Err(other.shape(column, "text")),
        }
    }

    pub(crate) fn opt_text(&self, column: usize) -> Result<Option<String>, DbError> {
        match self.cell(column) {
            Cell::Null => Ok(None),
            _ => self.text(column).map(Some),
        }
    }

    pub(crate) fn int(&self, column: usize) -> Result<i64, DbError> {
        match self.cell(column) {
            Cell::Int(value) => Ok(*value),
            other => Err(other.shape(column, "an integer")),
        }
    }

    pub(crate) fn opt_int(&self, column: usize) -> Result<Option<i64>, DbError> {
        match self.cell(column) {
            Cell::Null => Ok(None),
            _ => self.int(column).map(Some),
        }
    }

    /// A flag: SQLite's 0 or 1, PostgreSQL's boolean.
    pub(crate) fn flag(&self, column: usize) -> Result<Option<bool>, DbError> {
        match self.cell(column) {
            Cell::Null => Ok(None),
            Cell::Flag(value) => Ok(Some(*value)),
            Cell::Int(value) => Ok(Some(*value != 0)),
            other => Err(other.shape(column, "a flag")),
        }
    }

    pub(crate) fn opt_blob(&self, column: usize) -> Result<Option<Vec<u8>>, DbError> {
        match self.cell(column) {
            Cell::Null => Ok(None),
            Cell::Blob(bytes) => Ok(Some(bytes.clone())),
            other => Err(other.shape(column, "bytes")),
        }
    }
}

/// An open database.
pub(crate) enum Connection {
    Sqlite(rusqlite::Connection),
    Postgres(Box<Postgres>),
}

/// A PostgreSQL client and the statements it prepared, by their text.
pub(crate) struct Postgres {
    pub(crate) client: postgres::Client,
    pub(crate) statements: HashMap<String, postgres::Statement>,
}

/// A transaction on one: committed by [`Tx::commit`], rolled back when
/// dropped without it.
pub(crate) enum Tx<'c> {
    Sqlite(rusqlite::Transaction<'c>),
    Postgres(
        postgres::Transaction<'c>,
        &'c mut HashMap<String, postgres::Statement>,
    ),
}

impl Connection {
    /// A transaction; in SQLite it takes the write lock at once
    /// (`IMMEDIATE`), so that a reader in it never has to upgrade.
    pub(crate) fn transaction(&mut self) -> Result<Tx<'_>, DbError> {
        Ok(match self {
            Connection::Sqlite(conn) => Tx::Sqlite(
                conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?,
            ),
            Connection::Postgres(pg) => {
                let Postgres { client, statements } = &mut **pg;
                Tx::Postgres(client.transaction()?, statements)
            }
        })
    }

    pub(crate) fn query(&mut self, sql: &str, values: &[Value<'_>]) -> Result<Vec<Row>, DbError> {
        match self {
            Connection::Sqlite(conn) => sqlite_query(conn, sql, values),
            Connection::Postgres(pg) => {
                let Postgres { client, statements } = &mut **pg;
                postgres_query(client, statements, sql, values)
            }
        }
    }
}

impl Tx<'_> {
    pub(crate) fn query(&mut self, sql: &str, values: &[Value<'_>]) -> Result<Vec<Row>, DbError> {
        match self {
            Tx::Sqlite(tx) => sqlite_query(tx, sql, values),
            Tx::Postgres(tx, statements) => postgres_query(tx, statements, sql, values),
        }
    }

    pub(crate) fn execute(&mut self, sql: &str, values: &[Value<'_>]) -> Result<u64, DbError> {
        match self {
            Tx::Sqlite(tx) => {
                let mut statement = tx.prepare_cached(sql)?;
                Ok(statement.execute(rusqlite::params_from_iter(values.iter()))? as u64)
            }
            Tx::Postgres(tx, statements) => {
                let statement = prepared(tx, statements, sql)?;
                Ok(tx.execute(&statement, &postgres_values(values))?)
            }
        }
    }

    /// Several statements without values, in order (a migration).
    pub(crate) fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        match self {
            Tx::Sqlite(tx) => Ok(tx.execute_batch(sql)?),
            Tx::Postgres(tx, _) => Ok(tx.batch_execute(sql)?),
        }
    }

    pub(crate) fn commit(self) -> Result<(), DbError> {
        match self {
            Tx::Sqlite(tx) => Ok(tx.commit()?),
            Tx::Postgres(tx, _) => Ok(tx.commit()?),
        }
    }
}

fn sqlite_query(
    conn: &rusqlite::Connection,
    sql: &str,
    values: &[Value<'_>],
) -> Result<Vec<Row>, DbError> {
    let mut statement = conn.prepare_cached(sql)?;
    let columns = statement.column_count();
    let mut rows = statement.query(rusqlite::params_from_iter(values.iter()))?;
    let mut read = Vec::new();
    while let Some(row) = rows.next()? {
        let mut cells = Vec::with_capacity(columns);
        for column in 0..columns {
            cells.push(match row.get_ref(column)? {
                ValueRef::Null => Cell::Null,
                ValueRef::Integer(v) => Cell::Int(v),
                // No column of the schema is a real; kept as its text.
                ValueRef::Real(v) => Cell::Text(v.to_string()),
                ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(b) => Cell::Blob(b.to_vec()),
            });
        }
        read.push(Row(cells));
    }
    Ok(read)
}

/// `sql`'s statement, prepared once per connection.
fn prepared(
    client: &mut impl postgres::GenericClient,
    statements: &mut HashMap<String, postgres::Statement>,
    sql: &str,
) -> Result<postgres::Statement, DbError> {
    if let Some(statement) = statements.get(sql) {
        return Ok(statement.clone());
    }
    let statement = client.prepare(&numbered(sql))?;
    statements.insert(sql.to_owned(), statement.clone());
    Ok(statement)
}

fn postgres_query(
    client: &mut impl postgres::GenericClient,
    statements: &mut HashMap<String, postgres::Statement>,
    sql: &str,
    values: &[Value<'_>],
) -> Result<Vec<Row>, DbError> {
    let statement = prepared(client, statements, sql)?;
    let rows = client.query(&statement, &postgres_values(values))?;
    let mut read = Vec::with_capacity(rows.len());
    for row in &rows {
        let mut cells = Vec::with_capacity(row.len());
        for (column, described) in row.columns().iter().enumerate() {
            let ty = described.type_();
            let cell = if *ty == Type::INT8 {
                row.try_get::<_, Option<i64>>(column)?.map(Cell::Int)
            } else if *ty == Type::INT4 {
                row.try_get::<_, Option<i32>>(column)?
                    .map(|v| Cell::Int(v.into()))
            } else if *ty == Type::BOOL {
                row.try_get::<_, Option<bool>>(column)?.map(Cell::Flag)
            } else if *ty == Type::BYTEA {
                row.try_get::<_, Option<Vec<u8>>>(column)?.map(Cell::Blob)
            } else if *ty == Type::TEXT || *ty == Type::VARCHAR || *ty == Type::NAME {
                row.try_get::<_, Option<String>>(column)?.map(Cell::Text)
            } else {
                return Err(DbError::Shape {
                    column,
                    expected: "a column of the store's schema",
                    found: ty.to_string(),
                });
            };
            cells.push(cell.unwrap_or(Cell::Null));
        }
        read.push(Row(cells));
    }
    Ok(read)
}

/// `sql` with SQLite's `?N` parameters as PostgreSQL's `$N` (no statement
/// of the store has a `?` anywhere else).
pub(crate) fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

fn postgres_values<'v>(values: &'v [Value<'v>]) -> Vec<&'v (dyn ToSql + Sync)> {
    values.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match *self {
            Value::Int(v) => v.map_or(ToSqlOutput::Borrowed(ValueRef::Null), ToSqlOutput::from),
            Value::Text(v) => v.map_or(ToSqlOutput::Borrowed(ValueRef::Null), |t| {
                ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes()))
            }),
            Value::Blob(v) => v.map_or(ToSqlOutput::Borrowed(ValueRef::Null), |b| {
                ToSqlOutput::Borrowed(ValueRef::Blob(b))
            }),
            Value::Flag(v) => v.map_or(ToSqlOutput::Borrowed(ValueRef::Null), |f| {
                ToSqlOutput::from(i64::from(f))
            }),
        })
    }
}

impl ToSql for Value<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match *self {
            Value::Int(None) | Value::Text(None) | Value::Blob(None) | Value::Flag(None) => {
                Ok(IsNull::Yes)
            }
            Value::Int(Some(v)) if *ty == Type::INT4 => i32::try_from(v)?.to_sql(ty, out),
            Value::Int(Some(v)) => v.to_sql(ty, out),
            Value::Text(Some(v)) => v.to_sql(ty, out),
            Value::Blob(Some(v)) => v.to_sql(ty, out),
            Value::Flag(Some(v)) => v.to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        [
            Type::INT8,
            Type::INT4,
            Type::TEXT,
            Type::VARCHAR,
            Type::NAME,
            Type::BYTEA,
            Type::BOOL,
        ]
        .contains(ty)
    }

    fn to_sql_checked(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        // Each variant's own type check, so that a text given where the
        // schema has an integer is refused rather than sent as bytes.
        let fits = match self {
            Value::Int(_) => *ty == Type::INT8 || *ty == Type::INT4,
            Value::Text(_) => *ty == Type::TEXT || *ty == Type::VARCHAR || *ty == Type::NAME,
            Value::Blob(_) => *ty == Type::BYTEA,
            Value::Flag(_) => *ty == Type::BOOL,
        };
        if !fits {
            return Err(format!("{self:?} given for a parameter of type {ty}").into());
        }
        self.to_sql(ty, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_turns_question_marks_with_numbers_into_dollars() {
        assert_eq!(
            numbered("SELECT a FROM t WHERE b = ?1 AND (?2 IS NULL OR c = ?2) AND d = ?10"),
            "SELECT a FROM t WHERE b = $1 AND ($2 IS NULL OR c = $2) AND d = $10"
        );
        assert_eq!(numbered("SELECT '?' || ?"), "SELECT '?' || ?");
    }

    #[test]
    fn a_flag_reads_from_an_integer_or_a_boolean() {
        let row = Row(vec![
            Cell::Int(1),
            Cell::Flag(false),
            Cell::Null,
            Cell::Text("x".into()),
        ]);
        assert_eq!(row.flag(0).unwrap(), Some(true));
        assert_eq!(row.flag(1).unwrap(), Some(false));
        assert_eq!(row.flag(2).unwrap(), None);
        assert!(row
            .flag(3)
            .unwrap_err()
            .to_string()
            .contains("column 3: text"));
    }
}
