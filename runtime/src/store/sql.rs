//! The values a handler's own SQL binds and reads through a [`Transaction`](crate::Transaction),
//! the same on every store that keeps tables of yours: [`SqlValue`] in, rows as JSON objects
//! out (read as your own `Deserialize` types).
//!
//! Parameters are written `$1`, `$2`, … on every store: Postgres's own spelling, and on
//! SQLite a named parameter bound by that name (so `$2` may come before `$1`).

use serde_json::{Map, Value};

/// A value a statement binds: `$1` is the first of the slice given with the statement.
///
/// Built with `.into()` from the Rust types below, or from an `Option` of one (`None`
/// binds `NULL`):
///
/// ```
/// # use toolgate_runtime::store::SqlValue;
/// let params: [SqlValue; 3] = ["INV-7".into(), 12_500_i64.into(), None::<String>.into()];
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    /// `NULL`.
    Null,
    /// An integer: binds to Postgres's `smallint`, `integer` and `bigint` (refused if it
    /// does not fit) and to SQLite's `INTEGER`.
    Integer(i64),
    /// A floating-point number: `real`, `double precision`; SQLite's `REAL`.
    Real(f64),
    /// Text: `text`, `varchar`, `char`, `name`; SQLite's `TEXT`.
    Text(String),
    /// A boolean: `boolean`; on SQLite, the integer 0 or 1.
    Bool(bool),
}

macro_rules! sql_value_from {
    ($($ty:ty => $variant:ident $(as $cast:ty)?),* $(,)?) => {$(
        impl From<$ty> for SqlValue {
            fn from(value: $ty) -> Self {
                SqlValue::$variant((value $(as $cast)?).into())
            }
        }
    )*};
}

sql_value_from! {
    i64 => Integer, i32 => Integer as i64, i16 => Integer as i64, u32 => Integer as i64,
    f64 => Real, f32 => Real as f64, bool => Bool, String => Text, &str => Text, &String => Text as &str,
}

impl<T: Into<SqlValue>> From<Option<T>> for SqlValue {
    fn from(value: Option<T>) -> Self {
        value.map_or(SqlValue::Null, Into::into)
    }
}

/// A row as its columns' names and values: what a `Deserialize` type of yours reads.
pub(crate) type SqlRow = Map<String, Value>;

fn real(value: f64) -> Value {
    serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
}

impl rusqlite::ToSql for SqlValue {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, Value as Sqlite};
        Ok(ToSqlOutput::Owned(match self {
            SqlValue::Null => Sqlite::Null,
            SqlValue::Integer(n) => Sqlite::Integer(*n),
            SqlValue::Real(x) => Sqlite::Real(*x),
            SqlValue::Text(text) => Sqlite::Text(text.clone()),
            SqlValue::Bool(b) => Sqlite::Integer(i64::from(*b)),
        }))
    }
}

/// Binds `params` to `statement` by the names `$1`, `$2`, … (or, where the statement
/// numbers them another way, `?1` or `?`, by position).
pub(crate) fn bind_sqlite(statement: &mut rusqlite::Statement<'_>, params: &[SqlValue]) -> rusqlite::Result<()> {
    for (i, value) in params.iter().enumerate() {
        let index = statement.parameter_index(&format!("${}", i + 1))?.unwrap_or(i + 1);
        statement.raw_bind_parameter(index, value)?;
    }
    Ok(())
}

/// Runs `sql` with `params` on `connection`: the rows it changed.
pub(crate) fn execute_sqlite(
    connection: &rusqlite::Connection,
    sql: &str,
    params: &[SqlValue],
) -> rusqlite::Result<u64> {
    let mut statement = connection.prepare_cached(sql)?;
    bind_sqlite(&mut statement, params)?;
    statement.raw_execute().map(|rows| rows as u64)
}

/// Runs the query `sql` with `params` on `connection`: its rows.
pub(crate) fn query_sqlite(
    connection: &rusqlite::Connection,
    sql: &str,
    params: &[SqlValue],
) -> rusqlite::Result<Vec<SqlRow>> {
    use rusqlite::types::ValueRef;
    let mut statement = connection.prepare_cached(sql)?;
    bind_sqlite(&mut statement, params)?;
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

#[cfg(feature = "postgres")]
mod postgres {
    use std::error::Error;

    use bytes::BytesMut;
    use serde_json::{Map, Value};
    use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

    use super::{SqlRow, SqlValue, real};

    type Failure = Box<dyn Error + Sync + Send>;

    impl ToSql for SqlValue {
        fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Failure> {
            match (self, ty) {
                (SqlValue::Null, _) => Ok(IsNull::Yes),
                (SqlValue::Integer(n), &Type::INT2) => i16::try_from(*n)?.to_sql(ty, out),
                (SqlValue::Integer(n), &Type::INT4) => i32::try_from(*n)?.to_sql(ty, out),
                (SqlValue::Integer(n), &Type::INT8) => n.to_sql(ty, out),
                (SqlValue::Integer(n), &Type::FLOAT8) => (*n as f64).to_sql(ty, out),
                (SqlValue::Real(x), &Type::FLOAT4) => (*x as f32).to_sql(ty, out),
                (SqlValue::Real(x), &Type::FLOAT8) => x.to_sql(ty, out),
                (SqlValue::Bool(b), &Type::BOOL) => b.to_sql(ty, out),
                (SqlValue::Text(text), _) if <&str as ToSql>::accepts(ty) => text.as_str().to_sql(ty, out),
                (value, ty) => Err(format!("cannot bind {value:?} to a parameter of type {ty}").into()),
            }
        }

        fn accepts(_: &Type) -> bool {
            // Judged per value in `to_sql`, which names what does not fit.
            true
        }

        to_sql_checked!();
    }

    /// The parameters as tokio-postgres binds them.
    pub(crate) fn params(params: &[SqlValue]) -> Vec<&(dyn ToSql + Sync)> {
        params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
    }

    /// A Postgres row as its columns' names and values; a column of a type this does not
    /// read is an error naming it (cast it in the query: `amount::text`).
    pub(crate) fn row(row: &tokio_postgres::Row) -> Result<SqlRow, Failure> {
        let mut fields = Map::with_capacity(row.len());
        for (i, column) in row.columns().iter().enumerate() {
            let ty = column.type_();
            let value = match *ty {
                Type::INT2 => row.try_get::<_, Option<i16>>(i)?.map(Value::from),
                Type::INT4 => row.try_get::<_, Option<i32>>(i)?.map(Value::from),
                Type::INT8 => row.try_get::<_, Option<i64>>(i)?.map(Value::from),
                Type::FLOAT4 => row.try_get::<_, Option<f32>>(i)?.map(|x| real(f64::from(x))),
                Type::FLOAT8 => row.try_get::<_, Option<f64>>(i)?.map(real),
                Type::BOOL => row.try_get::<_, Option<bool>>(i)?.map(Value::from),
                _ if <String as tokio_postgres::types::FromSql>::accepts(ty) => {
                    row.try_get::<_, Option<String>>(i)?.map(Value::from)
                }
                _ => {
                    return Err(format!(
                        "column `{}` is of type {ty}, which toolgate does not read: cast it (`{}::text`)",
                        column.name(),
                        column.name()
                    )
                    .into());
                }
            };
            fields.insert(column.name().to_string(), value.unwrap_or(Value::Null));
        }
        Ok(fields)
    }
}

#[cfg(feature = "postgres")]
pub(crate) use postgres::{params as postgres_params, row as postgres_row};
