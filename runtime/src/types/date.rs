//! [`Date`]: a calendar day, ISO-8601 `YYYY-MM-DD`.

use std::borrow::Cow;
use std::fmt;

use chrono::NaiveDate;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

/// A calendar day with no time and no zone: ISO-8601 / RFC 3339 `full-date`, e.g.
/// `2026-12-04` (a birthday, a check-in day, a due date).
///
/// Refused, each with a message that says which it was: a date with a time (use
/// [`DateTime`](super::DateTime) for an instant), a regional format (`04/12/2026`,
/// `4.12.2026`), and days that do not exist (`2026-02-29`, `2026-13-01`).
///
/// ```
/// use toolgate_runtime::types::Date;
/// let due: Date = "2026-12-04".parse().unwrap();
/// assert_eq!(due.to_string(), "2026-12-04");
/// let regional = "04/12/2026".parse::<Date>().unwrap_err();
/// assert!(regional.to_string().contains("regional"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Date(NaiveDate);

/// The pattern of the schema's `pattern`.
pub const DATE_PATTERN: &str = r"^\d{4}-\d{2}-\d{2}$";

const EXAMPLE: &str = "2026-12-04";

/// Why a string is not a [`Date`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DateError {
    /// A date followed by a time.
    #[error("has a time: this is a date alone, e.g. `{EXAMPLE}`")]
    HasTime,
    /// Day/month orders, dots and other regional spellings.
    #[error("is a regional format: write YYYY-MM-DD, year first, e.g. `{EXAMPLE}`")]
    Regional,
    /// A day that does not exist.
    #[error("is not a real date")]
    OutOfRange,
    /// Anything else.
    #[error("is not an ISO-8601 date: write it like `{EXAMPLE}`")]
    Malformed,
}

impl Date {
    /// Reads `YYYY-MM-DD`, strictly.
    pub fn parse(text: &str) -> Result<Self, DateError> {
        let b = text.as_bytes();
        let shaped = b.len() == 10
            && b.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() });
        if !shaped {
            return Err(classify(text));
        }
        let number = |range: std::ops::Range<usize>| text[range].parse::<u32>().unwrap_or(0);
        let year = i32::try_from(number(0..4)).unwrap_or(0);
        NaiveDate::from_ymd_opt(year, number(5..7), number(8..10)).map(Self).ok_or(DateError::OutOfRange)
    }

    /// The day, as chrono sees it.
    pub fn as_chrono(&self) -> NaiveDate {
        self.0
    }
}

fn classify(text: &str) -> DateError {
    let b = text.as_bytes();
    let date_first = b.len() > 10
        && b[..10].iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() });
    if date_first {
        return DateError::HasTime;
    }
    let regional = text.chars().any(|c| matches!(c, '/' | '.')) && text.chars().any(|c| c.is_ascii_digit())
        || text
            .split('-')
            .next()
            .is_some_and(|first| (1..=2).contains(&first.len()) && first.chars().all(|c| c.is_ascii_digit()));
    if regional { DateError::Regional } else { DateError::Malformed }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.format("%Y-%m-%d"))
    }
}

impl TryFrom<NaiveDate> for Date {
    type Error = DateError;
    /// Years 0000–9999 only, so that what is written back matches the schema.
    fn try_from(value: NaiveDate) -> Result<Self, Self::Error> {
        use chrono::Datelike;
        if (0..=9999).contains(&value.year()) { Ok(Self(value)) } else { Err(DateError::OutOfRange) }
    }
}

impl From<Date> for NaiveDate {
    fn from(value: Date) -> Self {
        value.0
    }
}

text_type!(Date, DateError);

impl JsonSchema for Date {
    fn schema_name() -> Cow<'static, str> {
        "Date".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "format": "date",
            "pattern": DATE_PATTERN,
            "description": "A calendar day, ISO-8601: YYYY-MM-DD, year first, no time.",
            "examples": [EXAMPLE],
            "x-toolgate": "date",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_real_days_and_says_what_each_wrong_form_is() {
        assert_eq!(Date::parse("2028-02-29").unwrap().to_string(), "2028-02-29"); // leap year
        assert_eq!(Date::parse("2000-02-29").unwrap().to_string(), "2000-02-29"); // divisible by 400
        for (text, problem) in [
            ("2026-02-29", DateError::OutOfRange), // not a leap year
            ("1900-02-29", DateError::OutOfRange), // divisible by 100, not 400
            ("2026-13-01", DateError::OutOfRange),
            ("2026-04-31", DateError::OutOfRange),
            ("2026-00-10", DateError::OutOfRange),
            ("2026-12-04T10:00:00Z", DateError::HasTime),
            ("2026-12-04 10:00", DateError::HasTime),
            ("04/12/2026", DateError::Regional),
            ("4.12.2026", DateError::Regional),
            ("04-12-2026", DateError::Regional),
            ("2026-1-4", DateError::Malformed),
            ("20261204", DateError::Malformed),
            ("", DateError::Malformed),
            ("tomorrow", DateError::Malformed),
        ] {
            assert_eq!(Date::parse(text), Err(problem.clone()), "{text}");
        }
    }

    #[test]
    fn deserializes_strictly_and_converts() {
        let date: Date = serde_json::from_value(serde_json::json!("2026-12-04")).unwrap();
        assert_eq!(serde_json::to_value(date).unwrap(), "2026-12-04");
        assert!(serde_json::from_value::<Date>(serde_json::json!(20261204)).is_err());
        let chrono_date = NaiveDate::from_ymd_opt(2026, 12, 4).unwrap();
        assert_eq!(NaiveDate::from(Date::try_from(chrono_date).unwrap()), chrono_date);
        assert!(Date::try_from(NaiveDate::from_ymd_opt(10_000, 1, 1).unwrap()).is_err());
    }
}
