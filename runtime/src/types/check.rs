//! The checks a JSON Schema cannot say, run by the same validator as the schema.
//!
//! Each type here marks its schema with [`MARKER`] (`"x-toolgate": "money"`, …). The
//! server compiles a tool's input schema with a custom keyword of that name, so a
//! currency's minor-unit digits or an IANA zone name are judged beside every other field
//! and one `INVALID_ARGUMENT` lists every bad field at once, each in the type's own words.
//! The schema clients see has the marker removed: it is standard JSON Schema.

use serde_json::{Map, Value};

use super::{Date, DateTime, Duration, Money, TimeZone};

/// The keyword that names a toolgate type in a schema the server checks with.
pub(crate) const MARKER: &str = "x-toolgate";

/// One type's check, from its marker and the schema around it.
#[derive(Debug, Clone)]
pub(crate) enum TypeCheck {
    DateTime,
    Date,
    TimeZone,
    Duration,
    Money,
    /// A count of `plural`, between `minimum` and `maximum`.
    Count {
        plural: String,
        minimum: u64,
        maximum: u64,
    },
}

impl TypeCheck {
    /// The check a marker asks for; `None` for a marker this version does not know.
    pub(crate) fn from_marker(marker: &Value, schema: &Map<String, Value>) -> Option<Self> {
        Some(match marker.as_str()? {
            "date-time" => Self::DateTime,
            "date" => Self::Date,
            "time-zone" => Self::TimeZone,
            "duration" => Self::Duration,
            "money" => Self::Money,
            "count" => Self::Count {
                plural: schema.get("title").and_then(Value::as_str).unwrap_or("units").to_string(),
                minimum: schema.get("minimum").and_then(Value::as_u64).unwrap_or(0),
                maximum: schema.get("maximum").and_then(Value::as_u64).unwrap_or(u64::MAX),
            },
            _ => return None,
        })
    }

    /// What is wrong with `value`, said for the model, or nothing.
    pub(crate) fn problem(&self, value: &Value) -> Option<String> {
        let text = || value.as_str().ok_or_else(|| "must be a string".to_string());
        let outcome: Result<(), String> = match self {
            Self::DateTime => text().and_then(|t| DateTime::parse(t).map(drop).map_err(|e| e.to_string())),
            Self::Date => text().and_then(|t| Date::parse(t).map(drop).map_err(|e| e.to_string())),
            Self::TimeZone => text().and_then(|t| TimeZone::parse(t).map(drop).map_err(|e| e.to_string())),
            Self::Duration => text().and_then(|t| Duration::parse(t).map(drop).map_err(|e| e.to_string())),
            Self::Money => Money::from_json(value).map(drop).map_err(|e| e.to_string()),
            Self::Count { plural, minimum, maximum } => match value.as_u64() {
                Some(n) if (*minimum..=*maximum).contains(&n) => Ok(()),
                Some(_) => Err(format!("must be from {minimum} to {maximum} {plural}")),
                None => Err(format!("must be a whole number of {plural}, from {minimum} to {maximum}, e.g. {minimum}")),
            },
        };
        outcome.err()
    }
}

/// Removes every [`MARKER`] at any depth: what clients see is standard JSON Schema.
pub(crate) fn remove_markers(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            // A string: a property a user named `x-toolgate` is an object and stays.
            if map.get(MARKER).is_some_and(Value::is_string) {
                map.remove(MARKER);
            }
            map.values_mut().for_each(remove_markers);
        }
        Value::Array(items) => items.iter_mut().for_each(remove_markers),
        _ => {}
    }
}
