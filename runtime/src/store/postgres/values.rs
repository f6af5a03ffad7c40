//! [`SqlValue`]s bound to Postgres statements, and Postgres rows read as JSON: what a
//! handler's [`Transaction`](crate::Transaction) runs in its transaction.

use std::error::Error;

use bytes::BytesMut;
use serde_json::{Map, Value};
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use crate::store::sql::real;
use crate::store::{SqlRow, SqlValue};

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
pub(super) fn params(params: &[SqlValue]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

/// A Postgres row as its columns' names and values; a column of a type this does not
/// read is an error naming it (cast it in the query: `amount::text`).
pub(super) fn row(row: &tokio_postgres::Row) -> Result<SqlRow, Failure> {
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
