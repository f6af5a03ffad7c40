//! [`SqlValue`]s bound to SQLite statements, and SQLite rows read as JSON: what a
//! handler's [`Transaction`](crate::Transaction) runs on the file.

use serde_json::{Map, Value};

use crate::store::sql::real;
use crate::store::{SqlRow, SqlValue};

impl rusqlite::ToSql for SqlValue {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, Value as Sqlite};
        Ok(ToSqlOutput::Owned(match self {
            SqlValue::Null => Sqlite::Null,
            SqlValue::Integer(n) => Sqlite::Integer(*n),
            SqlValue::Real(x) => Sqlite::Real(*x),
            SqlValue::Text(text) => Sqlite::Text(text.clone()),
            SqlValue::Bool(b) => Sqlite::Integer(i64::from(*b)),
            SqlValue::Unsigned(n) => Sqlite::Integer(i64::try_from(*n).map_err(|_| {
                rusqlite::Error::ToSqlConversionFailure(
                    format!("{n} does not fit SQLite's INTEGER: bind it as a `SqlDecimal` (text)").into(),
                )
            })?),
            SqlValue::Decimal(decimal) => Sqlite::Text(decimal.to_string()),
            // rusqlite's own spelling of a `DateTime<FixedOffset>`, which SQLite's date
            // functions read: code that wrote the column through rusqlite reads it the same.
            SqlValue::Timestamp(at) => Sqlite::Text(at.format("%F %T%.f%:z").to_string()),
            SqlValue::Json(value) => Sqlite::Text(value.to_string()),
        }))
    }
}

/// Binds `params` to `statement` by the names `$1`, `$2`, … (or, where the statement
/// numbers them another way, `?1` or `?`, by position).
fn bind(statement: &mut rusqlite::Statement<'_>, params: &[SqlValue]) -> rusqlite::Result<()> {
    for (i, value) in params.iter().enumerate() {
        let index = statement.parameter_index(&format!("${}", i + 1))?.unwrap_or(i + 1);
        statement.raw_bind_parameter(index, value)?;
    }
    Ok(())
}

/// Runs `sql` with `params` on `connection`: the rows it changed.
pub(super) fn execute(connection: &rusqlite::Connection, sql: &str, params: &[SqlValue]) -> rusqlite::Result<u64> {
    let mut statement = connection.prepare_cached(sql)?;
    bind(&mut statement, params)?;
    statement.raw_execute().map(|rows| rows as u64)
}

/// Runs the query `sql` with `params` on `connection`: its rows.
pub(super) fn query(
    connection: &rusqlite::Connection,
    sql: &str,
    params: &[SqlValue],
) -> rusqlite::Result<Vec<SqlRow>> {
    use rusqlite::types::ValueRef;
    let mut statement = connection.prepare_cached(sql)?;
    bind(&mut statement, params)?;
    let names: Vec<String> = statement.column_names().map(str::to_string).collect();
    let mut rows = statement.raw_query();
    let mut read = Vec::new();
    while let Some(row) = rows.next()? {
        let mut fields = Map::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let value = match row.get_ref(i)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(n) => n.into(),
                ValueRef::Real(x) => real(x),
                ValueRef::Text(text) => String::from_utf8_lossy(text).into_owned().into(),
                ValueRef::Blob(_) => {
                    return Err(rusqlite::Error::InvalidColumnType(i, name.clone(), rusqlite::types::Type::Blob));
                }
            };
            fields.insert(name.clone(), value);
        }
        read.push(fields);
    }
    Ok(read)
}
