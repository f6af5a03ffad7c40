//! [`DateTime`]: an instant written in RFC 3339 with its UTC offset.

use std::borrow::Cow;
use std::fmt;

use chrono::{FixedOffset, NaiveDate, NaiveTime};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

/// An instant with the UTC offset it was given in: RFC 3339 / ISO-8601, e.g.
/// `2026-12-04T08:00:00+01:00` or `2026-12-04T07:00:00Z`.
///
/// The offset is mandatory: a time without one means a different instant in every time
/// zone, which is how a model books the wrong flight. Refused, each with a message that
/// says which it was: a time without offset (`2026-12-01T10:00:00`), a space instead of
/// `T`, a regional format (`01/12/2026`, `10h`), a date alone, lowercase `t`/`z`, the
/// unknown offset `-00:00`, offsets beyond ±14:00, and dates or times that do not exist
/// (`2026-02-29`, `24:00`). Fractional seconds (up to nanoseconds) are kept.
///
/// ```
/// use toolgate_runtime::types::DateTime;
/// let departure: DateTime = "2026-12-04T08:00:00+01:00".parse().unwrap();
/// assert_eq!(departure.to_string(), "2026-12-04T08:00:00+01:00");
/// let naive = "2026-12-04T08:00:00".parse::<DateTime>().unwrap_err();
/// assert!(naive.to_string().contains("no UTC offset"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DateTime(chrono::DateTime<FixedOffset>);

/// The pattern of the schema's `pattern`: what the parser accepts, before the calendar
/// (`2026-02-30`) and clock (`24:00`) are checked.
pub const DATE_TIME_PATTERN: &str = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$";

/// The example the schema and the messages give.
const EXAMPLE: &str = "2026-12-04T08:00:00+01:00";

/// Why a string is not a [`DateTime`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DateTimeError {
    /// A date and time without a UTC offset.
    #[error("has no UTC offset: add `Z` (UTC) or the offset, e.g. `{EXAMPLE}`")]
    MissingOffset,
    /// Date and time separated by a space.
    #[error("separates the date and the time with a space: write `T`, e.g. `{EXAMPLE}`")]
    SpaceSeparated,
    /// A date alone.
    #[error("is a date without a time: give the time and its UTC offset too, e.g. `{EXAMPLE}`")]
    DateOnly,
    /// Day/month orders, dots, `10h` and other regional spellings.
    #[error("is a regional format: write RFC 3339, year first, e.g. `{EXAMPLE}`")]
    Regional,
    /// Lowercase `t` or `z`.
    #[error("uses a lowercase `t` or `z`: write them uppercase, e.g. `{EXAMPLE}`")]
    Lowercase,
    /// `-00:00`, RFC 3339's "offset unknown".
    #[error("has the offset `-00:00`, which means \"unknown\": give the real offset or `Z`")]
    UnknownOffset,
    /// An offset beyond ±14:00 or with minutes over 59.
    #[error("has an offset that no place uses: offsets go from -12:00 to +14:00")]
    OffsetOutOfRange,
    /// A date or a time that does not exist (month 13, 30 February, 24:00, …).
    #[error("is not a real {0}")]
    OutOfRange(&'static str),
    /// Anything else.
    #[error("is not an RFC 3339 date-time: write it like `{EXAMPLE}`")]
    Malformed,
}

impl DateTime {
    /// The instant, with its offset, as chrono sees it.
    pub fn as_chrono(&self) -> &chrono::DateTime<FixedOffset> {
        &self.0
    }

    /// The instant in UTC.
    pub fn to_utc(&self) -> chrono::DateTime<chrono::Utc> {
        self.0.to_utc()
    }

    /// Parses strictly; see the type's documentation for what is refused and why.
    pub fn parse(text: &str) -> Result<Self, DateTimeError> {
        let bytes = text.as_bytes();
        if !matches_pattern(bytes) {
            return Err(classify(text));
        }
        let number = |range: std::ops::Range<usize>| -> u32 { text[range].parse().unwrap_or(u32::MAX) };
        let date = NaiveDate::from_ymd_opt(number(0..4) as i32, number(5..7), number(8..10))
            .ok_or(DateTimeError::OutOfRange("date"))?;
        let (hour, minute, second) = (number(11..13), number(14..16), number(17..19));
        let fraction_end = bytes[19..].iter().position(|&b| b == b'Z' || b == b'+' || b == b'-').map_or(19, |p| p + 19);
        let nanos = match &text[19..fraction_end] {
            "" => 0,
            fraction => {
                let digits = &fraction[1..];
                digits.parse::<u32>().unwrap_or(0) * 10u32.pow(9 - digits.len() as u32)
            }
        };
        // 60 seconds (a leap second) is refused too: no model needs one, and chrono would
        // fold it into the next second.
        let time = (second < 60)
            .then(|| NaiveTime::from_hms_nano_opt(hour, minute, second, nanos))
            .flatten()
            .ok_or(DateTimeError::OutOfRange("time of day"))?;
        let offset = match &text[fraction_end..] {
            "Z" => 0,
            "-00:00" => return Err(DateTimeError::UnknownOffset),
            offset => {
                let (hours, minutes) =
                    (number(fraction_end + 1..fraction_end + 3), number(fraction_end + 4..fraction_end + 6));
                let sign = if offset.starts_with('-') { -1 } else { 1 };
                let seconds = (hours * 3600 + minutes * 60) as i32 * sign;
                if minutes > 59 || !(-12 * 3600..=14 * 3600).contains(&seconds) {
                    return Err(DateTimeError::OffsetOutOfRange);
                }
                seconds
            }
        };
        let offset = FixedOffset::east_opt(offset).ok_or(DateTimeError::OffsetOutOfRange)?;
        let local = date.and_time(time);
        local.and_local_timezone(offset).single().map(Self).ok_or(DateTimeError::OutOfRange("date-time"))
    }
}

/// `DATE_TIME_PATTERN`, checked by hand (no regex engine on the call path).
fn matches_pattern(b: &[u8]) -> bool {
    let digits = |range: std::ops::Range<usize>| b.get(range).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    if b.len() < 20 || !(digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10)) {
        return false;
    }
    if !(b[10] == b'T' && digits(11..13) && b[13] == b':' && digits(14..16) && b[16] == b':' && digits(17..19)) {
        return false;
    }
    let mut at = 19;
    if b[at] == b'.' {
        let count = b[at + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if !(1..=9).contains(&count) {
            return false;
        }
        at += 1 + count;
    }
    match &b[at..] {
        [b'Z'] => true,
        [sign, ..] if *sign == b'+' || *sign == b'-' => {
            b.len() == at + 6 && digits(at + 1..at + 3) && b[at + 3] == b':' && digits(at + 4..at + 6)
        }
        _ => false,
    }
}

/// Says what a string that does not match the pattern was.
fn classify(text: &str) -> DateTimeError {
    let t = text.trim();
    let b = t.as_bytes();
    let is_iso_date = b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit);
    if is_iso_date {
        return match b.get(10) {
            None => DateTimeError::DateOnly,
            Some(b' ') => DateTimeError::SpaceSeparated,
            Some(b't') => DateTimeError::Lowercase,
            Some(b'T') if t.ends_with('z') => DateTimeError::Lowercase,
            Some(b'T') if !t[11..].contains(['Z', '+']) && !t[11..].contains('-') => DateTimeError::MissingOffset,
            _ => DateTimeError::Malformed,
        };
    }
    let regional = t.contains('/')
        || t.split(['.', ' '])
            .next()
            .is_some_and(|first| first.len() <= 2 && first.chars().all(|c| c.is_ascii_digit()) && t.contains('.'))
        || t.chars().any(|c| c == 'h' || c == 'H') && t.chars().any(|c| c.is_ascii_digit());
    if regional { DateTimeError::Regional } else { DateTimeError::Malformed }
}

impl fmt::Display for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
    }
}

/// Years RFC 3339 can write (four digits).
const YEARS: std::ops::RangeInclusive<i32> = 0..=9999;

/// Any chrono instant whose year RFC 3339 can write (0000 to 9999), so that what
/// toolgate sends matches the schema it publishes.
impl TryFrom<chrono::DateTime<FixedOffset>> for DateTime {
    type Error = DateTimeError;

    fn try_from(value: chrono::DateTime<FixedOffset>) -> Result<Self, Self::Error> {
        use chrono::Datelike;
        if YEARS.contains(&value.year()) {
            Ok(Self(value))
        } else {
            Err(DateTimeError::OutOfRange("year (0000 to 9999)"))
        }
    }
}

impl TryFrom<chrono::DateTime<chrono::Utc>> for DateTime {
    type Error = DateTimeError;

    fn try_from(value: chrono::DateTime<chrono::Utc>) -> Result<Self, Self::Error> {
        Self::try_from(value.fixed_offset())
    }
}

impl From<DateTime> for chrono::DateTime<FixedOffset> {
    fn from(value: DateTime) -> Self {
        value.0
    }
}

text_type!(DateTime, DateTimeError);

impl JsonSchema for DateTime {
    fn schema_name() -> Cow<'static, str> {
        "DateTime".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "format": "date-time",
            "pattern": DATE_TIME_PATTERN,
            "description": "A date and time with its UTC offset, RFC 3339: YYYY-MM-DDThh:mm:ss, optional fraction, then Z or ±hh:mm. Never without the offset.",
            "examples": [EXAMPLE, "2026-12-04T07:00:00Z"],
            "x-toolgate": "date-time",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_rfc3339_with_an_offset() {
        for (text, shown) in [
            ("2026-12-04T08:00:00+01:00", "2026-12-04T08:00:00+01:00"),
            ("2026-12-04T07:00:00Z", "2026-12-04T07:00:00Z"),
            ("2028-02-29T12:00:00-05:30", "2028-02-29T12:00:00-05:30"),
            ("2026-12-04T08:00:00.5+14:00", "2026-12-04T08:00:00.500+14:00"),
            ("2026-12-04T08:00:00.123456789-12:00", "2026-12-04T08:00:00.123456789-12:00"),
            ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),
            ("9999-12-31T23:59:59Z", "9999-12-31T23:59:59Z"),
        ] {
            let parsed = DateTime::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(parsed.to_string(), shown, "{text}");
        }
    }

    #[test]
    fn says_what_each_wrong_form_is() {
        use DateTimeError::*;
        for (text, expected) in [
            ("2026-12-01T10:00:00", MissingOffset),
            ("2026-12-01T10:00", MissingOffset),
            ("2026-12-01 10:00", SpaceSeparated),
            ("2026-12-01 10:00:00+01:00", SpaceSeparated),
            ("2026-12-01", DateOnly),
            ("01/12/2026", Regional),
            ("01/12/2026 10h", Regional),
            ("1.12.2026", Regional),
            ("10h", Regional),
            ("2026-12-01t10:00:00Z", Lowercase),
            ("2026-12-01T10:00:00z", Lowercase),
            ("2026-12-01T10:00:00-00:00", UnknownOffset),
            ("2026-12-01T10:00:00+14:30", OffsetOutOfRange),
            ("2026-12-01T10:00:00-13:00", OffsetOutOfRange),
            ("2026-12-01T10:00:00+01:60", OffsetOutOfRange),
            ("2026-02-29T10:00:00Z", OutOfRange("date")),
            ("2026-13-01T10:00:00Z", OutOfRange("date")),
            ("2026-12-32T10:00:00Z", OutOfRange("date")),
            ("2026-12-01T24:00:00Z", OutOfRange("time of day")),
            ("2026-12-01T10:60:00Z", OutOfRange("time of day")),
            ("2026-12-01T23:59:60Z", OutOfRange("time of day")),
            ("+262142-12-31T23:00:00+00:00", Malformed),
            ("2026-12-01T10:00:00.+01:00", Malformed),
            ("2026-12-01T10:00:00.1234567890Z", Malformed),
            ("tomorrow", Malformed),
            ("", Malformed),
        ] {
            assert_eq!(DateTime::parse(text), Err(expected.clone()), "{text:?}");
        }
    }

    #[test]
    fn messages_give_an_example() {
        let message = DateTime::parse("2026-12-01 10:00").unwrap_err().to_string();
        assert!(message.contains("write `T`") && message.contains(EXAMPLE), "{message}");
    }

    #[test]
    fn deserializes_strictly_and_serializes_back() {
        let parsed: DateTime = serde_json::from_str("\"2026-12-04T08:00:00+01:00\"").unwrap();
        assert_eq!(serde_json::to_string(&parsed).unwrap(), "\"2026-12-04T08:00:00+01:00\"");
        let error = serde_json::from_str::<DateTime>("\"2026-12-04T08:00:00\"").unwrap_err().to_string();
        assert!(error.contains("no UTC offset"), "{error}");
    }

    #[test]
    fn converts_to_and_from_chrono() {
        let parsed = DateTime::parse("2026-12-04T08:00:00+01:00").unwrap();
        let chrono: chrono::DateTime<FixedOffset> = parsed.into();
        assert_eq!(DateTime::try_from(chrono), Ok(parsed));
        let far = chrono + chrono::Duration::days(366 * 8000);
        assert_eq!(DateTime::try_from(far), Err(DateTimeError::OutOfRange("year (0000 to 9999)")));
        assert_eq!(parsed.to_utc().to_rfc3339(), "2026-12-04T07:00:00+00:00");
    }
}

#[cfg(test)]
mod properties {
    use chrono::{NaiveDate, TimeZone};
    use proptest::prelude::*;

    use super::*;

    static PATTERN: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(DATE_TIME_PATTERN).unwrap());

    fn any_date_time() -> impl Strategy<Value = DateTime> {
        (1i32..=9999, 1u32..=12, 1u32..=28, 0u32..24, 0u32..60, 0u32..60, 0u32..1_000_000_000, -720i32..=840).prop_map(
            |(year, month, day, hour, minute, second, nanos, offset_minutes)| {
                let offset = FixedOffset::east_opt(offset_minutes * 60).unwrap();
                let local =
                    NaiveDate::from_ymd_opt(year, month, day).unwrap().and_hms_nano_opt(hour, minute, second, nanos);
                DateTime(offset.from_local_datetime(&local.unwrap()).unwrap())
            },
        )
    }

    /// Strings close to date-times: their characters, in any order and length, and valid
    /// ones with one byte changed.
    fn near_date_times() -> impl Strategy<Value = String> {
        let shuffled = proptest::string::string_regex("[0-9T:Zz+\\-. t/h]{0,40}").unwrap();
        let mutated =
            (any_date_time(), any::<prop::sample::Index>(), "[0-9T:Zz+\\-. t/]").prop_map(|(value, at, with)| {
                let mut text = value.to_string();
                let at = at.index(text.len());
                text.replace_range(at..at + 1, &with);
                text
            });
        prop_oneof![shuffled, mutated]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn every_accepted_value_round_trips(value in any_date_time()) {
            let text = value.to_string();
            prop_assert!(PATTERN.is_match(&text), "{text} does not match the schema");
            prop_assert_eq!(DateTime::parse(&text), Ok(value));
        }

        #[test]
        fn what_the_schema_refuses_the_type_refuses(text in near_date_times()) {
            let parsed = DateTime::parse(&text);
            if !PATTERN.is_match(&text) {
                prop_assert!(parsed.is_err(), "{text:?} fails the pattern but parsed as {parsed:?}");
            }
        }

        #[test]
        fn no_string_makes_the_parser_panic(text in any::<String>()) {
            let _ = DateTime::parse(&text);
        }
    }
}
