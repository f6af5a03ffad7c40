//! [`SqlValue`]s bound to Postgres statements, and Postgres rows read as JSON: what a
//! handler's [`Transaction`](crate::Transaction) runs in its transaction.

use std::error::Error;

use bytes::{Buf, BufMut, BytesMut};
use serde_json::{Map, Value};
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};

use crate::store::sql::real;
use crate::store::sql_decimal::NumericParts;
use crate::store::{SqlDecimal, SqlRow, SqlValue};

type Failure = Box<dyn Error + Sync + Send>;

impl ToSql for SqlValue {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Failure> {
        match (self, ty) {
            (SqlValue::Null, _) => Ok(IsNull::Yes),
            (SqlValue::Integer(n), &Type::INT2) => i16::try_from(*n)?.to_sql(ty, out),
            (SqlValue::Integer(n), &Type::INT4) => i32::try_from(*n)?.to_sql(ty, out),
            (SqlValue::Integer(n), &Type::INT8) => n.to_sql(ty, out),
            (SqlValue::Integer(n), &Type::FLOAT8) => (*n as f64).to_sql(ty, out),
            (SqlValue::Integer(n), &Type::NUMERIC) => numeric(&SqlDecimal::from(*n), out),
            (SqlValue::Unsigned(n), &Type::INT2) => i16::try_from(*n)?.to_sql(ty, out),
            (SqlValue::Unsigned(n), &Type::INT4) => i32::try_from(*n)?.to_sql(ty, out),
            (SqlValue::Unsigned(n), &Type::INT8) => i64::try_from(*n)?.to_sql(ty, out),
            (SqlValue::Unsigned(n), &Type::NUMERIC) => numeric(&SqlDecimal::from(*n), out),
            (SqlValue::Decimal(decimal), &Type::NUMERIC) => numeric(decimal, out),
            (SqlValue::Decimal(decimal), _) if <&str as ToSql>::accepts(ty) => decimal.to_string().to_sql(ty, out),
            (SqlValue::Timestamp(at), &Type::TIMESTAMPTZ) => at.to_sql(ty, out),
            (SqlValue::Timestamp(at), &Type::TIMESTAMP) => at.naive_utc().to_sql(ty, out),
            (SqlValue::Timestamp(at), _) if <&str as ToSql>::accepts(ty) => at.to_rfc3339().to_sql(ty, out),
            (SqlValue::Json(value), &Type::JSON | &Type::JSONB) => value.to_sql(ty, out),
            (SqlValue::Json(value), _) if <&str as ToSql>::accepts(ty) => value.to_string().to_sql(ty, out),
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

/// `decimal` in `numeric`'s binary form: the count of base-10000 digits, the weight of the
/// first, the sign, the display scale, then the digits.
fn numeric(decimal: &SqlDecimal, out: &mut BytesMut) -> Result<IsNull, Failure> {
    let NumericParts { digits, weight, negative, scale } = decimal.numeric_parts();
    out.put_i16(i16::try_from(digits.len())?);
    out.put_i16(weight);
    out.put_u16(if negative { NUMERIC_NEGATIVE } else { 0 });
    out.put_u16(scale);
    for digit in digits {
        out.put_i16(digit);
    }
    Ok(IsNull::No)
}

const NUMERIC_NEGATIVE: u16 = 0x4000;

/// A `numeric` column read as the text of its exact value (`"12.50"`; `"NaN"`,
/// `"Infinity"`, `"-Infinity"` as Postgres spells them).
struct NumericText(String);

impl<'a> FromSql<'a> for NumericText {
    fn from_sql(_: &Type, mut raw: &'a [u8]) -> Result<Self, Failure> {
        if raw.len() < 8 {
            return Err("a numeric value shorter than its header".into());
        }
        let (count, weight, sign, scale) = (raw.get_i16(), raw.get_i16(), raw.get_u16(), raw.get_u16());
        let special = match sign {
            0xC000 => Some("NaN"),
            0xD000 => Some("Infinity"),
            0xF000 => Some("-Infinity"),
            _ => None,
        };
        if let Some(special) = special {
            return Ok(Self(special.to_string()));
        }
        if raw.len() != usize::try_from(count)? * 2 {
            return Err("a numeric value whose digits do not match its count".into());
        }
        let digits = (0..count).map(|_| raw.get_i16()).collect();
        let parts = NumericParts { digits, weight, negative: sign == NUMERIC_NEGATIVE, scale };
        Ok(Self(SqlDecimal::from_numeric_parts(&parts)))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }
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
            Type::NUMERIC => row.try_get::<_, Option<NumericText>>(i)?.map(|n| Value::from(n.0)),
            Type::TIMESTAMPTZ => row
                .try_get::<_, Option<chrono::DateTime<chrono::Utc>>>(i)?
                .map(|at| Value::from(at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))),
            Type::TIMESTAMP => row
                .try_get::<_, Option<chrono::NaiveDateTime>>(i)?
                .map(|at| Value::from(at.format("%FT%T%.f").to_string())),
            Type::DATE => row.try_get::<_, Option<chrono::NaiveDate>>(i)?.map(|day| Value::from(day.to_string())),
            Type::JSON | Type::JSONB => row.try_get::<_, Option<Value>>(i)?,
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
