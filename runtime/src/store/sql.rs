//! The values a handler's own SQL binds and reads through a [`Transaction`](crate::Transaction),
//! the same on every store that keeps tables of yours: [`SqlValue`] in, rows as JSON objects
//! out (read as your own `Deserialize` types).
//!
//! Parameters are written `$1`, `$2`, … on every store: Postgres's own spelling, and on
//! SQLite a named parameter bound by that name (so `$2` may come before `$1`).

use serde_json::{Map, Value};

pub use super::sql_decimal::{NotADecimal, SqlDecimal};

/// A value a statement binds: `$1` is the first of the slice given with the statement.
///
/// Built with `.into()` from the Rust types below, or from an `Option` of one (`None`
/// binds `NULL`):
///
/// ```
/// # use toolgate_runtime::store::{SqlDecimal, SqlValue};
/// let due = chrono::DateTime::parse_from_rfc3339("2026-12-06T19:00:00+01:00").unwrap();
/// let params: [SqlValue; 6] = [
///     "INV-7".into(),
///     12_500_i64.into(),
///     None::<String>.into(),
///     "125.00".parse::<SqlDecimal>().unwrap().into(),
///     due.into(),
///     serde_json::json!({ "lines": 3 }).into(),
/// ];
/// ```
///
/// A value that does not fit the parameter's type (an unsigned integer past `bigint`, a
/// decimal bound to an `integer`) fails its statement, and so the call, with `INTERNAL`:
/// nothing of the call is kept, and what the database said goes to the log only.
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
    /// An unsigned integer: Postgres's `smallint`, `integer`, `bigint` (refused if it does
    /// not fit) and `numeric` (always fits); SQLite's `INTEGER` up to `i64::MAX`, refused
    /// past it (bind a [`SqlDecimal`] to keep larger ones as text).
    Unsigned(u64),
    /// An exact decimal: Postgres's `numeric`; on SQLite, its text (`"12.50"`: SQLite has
    /// no exact decimal type, and a `REAL` would round it).
    Decimal(SqlDecimal),
    /// An instant with its UTC offset: Postgres's `timestamptz` (the instant; Postgres
    /// keeps no offset) and `timestamp` (its UTC wall time); on SQLite, the text
    /// `2026-12-06 19:00:00+01:00`, as rusqlite writes one, which SQLite's date functions
    /// read.
    Timestamp(chrono::DateTime<chrono::FixedOffset>),
    /// A JSON value: Postgres's `json` and `jsonb`; on SQLite, its text (which SQLite's
    /// JSON functions read).
    Json(serde_json::Value),
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
    i64 => Integer, i32 => Integer as i64, i16 => Integer as i64, u32 => Integer as i64, u16 => Integer as i64,
    u8 => Integer as i64, u64 => Unsigned,
    f64 => Real, f32 => Real as f64, bool => Bool, String => Text, &str => Text, &String => Text as &str,
    SqlDecimal => Decimal, serde_json::Value => Json,
}

impl<Tz: chrono::TimeZone> From<chrono::DateTime<Tz>> for SqlValue {
    fn from(value: chrono::DateTime<Tz>) -> Self {
        SqlValue::Timestamp(value.fixed_offset())
    }
}

impl<T: Into<SqlValue>> From<Option<T>> for SqlValue {
    fn from(value: Option<T>) -> Self {
        value.map_or(SqlValue::Null, Into::into)
    }
}

/// A row as its columns' names and values: what a `Deserialize` type of yours reads.
pub(crate) type SqlRow = Map<String, Value>;

/// A float as JSON (`null` where JSON has none: NaN, infinities).
pub(crate) fn real(value: f64) -> Value {
    serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
}
