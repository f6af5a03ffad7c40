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

/// A float as JSON (`null` where JSON has none: NaN, infinities).
pub(crate) fn real(value: f64) -> Value {
    serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
}
