//! [`Duration`]: a length of time, ISO-8601 (`PT1H30M`, `P3D`).

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

/// A length of time in ISO-8601: weeks (`P2W`), or days and a time part
/// (`P1DT2H`, `PT1H30M`, `PT45.5S`).
///
/// Years and months are refused: their length varies (a month is 28 to 31 days), so a
/// server would have to guess; give days, or a [`Date`](super::Date). Also refused, each
/// said: informal spellings (`1h30m`, `90 minutes`, `01:30`), lowercase letters, negative
/// durations, an empty `P`/`PT`, and lengths beyond what a `u64` of seconds holds.
///
/// ```
/// use toolgate_runtime::types::Duration;
/// let stay: Duration = "PT1H30M".parse().unwrap();
/// assert_eq!(std::time::Duration::from(stay).as_secs(), 5_400);
/// assert_eq!(stay.to_string(), "PT1H30M");
/// let months = "P1M".parse::<Duration>().unwrap_err();
/// assert!(months.to_string().contains("months"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Duration(std::time::Duration);

/// The pattern of the schema's `pattern` (no years or months; weeks alone).
pub const DURATION_PATTERN: &str = r"^P(\d+W|\d+D(T(\d+H(\d+M)?(\d+(\.\d{1,9})?S)?|\d+M(\d+(\.\d{1,9})?S)?|\d+(\.\d{1,9})?S))?|T(\d+H(\d+M)?(\d+(\.\d{1,9})?S)?|\d+M(\d+(\.\d{1,9})?S)?|\d+(\.\d{1,9})?S))$";

const EXAMPLE: &str = "PT1H30M";

/// Why a string is not a [`Duration`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationError {
    /// Years or months.
    #[error("has years or months, whose length varies: give days (`P30D`) or hours instead")]
    CalendarUnits,
    /// Lowercase designators.
    #[error("uses lowercase letters: write the designators uppercase, e.g. `{EXAMPLE}`")]
    Lowercase,
    /// A minus sign.
    #[error("is negative: a duration is zero or more")]
    Negative,
    /// `P` or `PT` with nothing after it.
    #[error("has no amount: write at least one, e.g. `PT0S` or `{EXAMPLE}`")]
    Empty,
    /// Beyond `u64` seconds.
    #[error("is too long")]
    TooLong,
    /// Anything else (`1h30m`, `90 minutes`, `01:30`).
    #[error("is not an ISO-8601 duration: write it like `{EXAMPLE}` (1 hour 30 minutes) or `P3D` (3 days)")]
    Malformed,
}

impl Duration {
    /// Reads an ISO-8601 duration, strictly.
    pub fn parse(text: &str) -> Result<Self, DurationError> {
        let Some(body) = text.strip_prefix('P') else {
            return Err(classify(text));
        };
        if body.is_empty() || body == "T" {
            return Err(DurationError::Empty);
        }
        if body.chars().any(|c| c.is_ascii_lowercase()) {
            return Err(DurationError::Lowercase);
        }
        let (date, time) = match body.split_once('T') {
            Some((_, "")) => return Err(DurationError::Malformed),
            Some((date, time)) => (date, Some(time)),
            None => (body, None),
        };
        if date.contains(['Y', 'M']) {
            return Err(DurationError::CalendarUnits);
        }
        let mut total = std::time::Duration::ZERO;
        let mut add = |amount: std::time::Duration| -> Result<(), DurationError> {
            total = total.checked_add(amount).ok_or(DurationError::TooLong)?;
            Ok(())
        };
        let date_parts = components(date, &['W', 'D'])?;
        if date_parts.iter().any(|(unit, _)| *unit == 'W') && (date_parts.len() > 1 || time.is_some()) {
            return Err(DurationError::Malformed); // weeks stand alone
        }
        for (unit, amount) in date_parts {
            let days: u64 = if unit == 'W' { 7 } else { 1 };
            add(scaled(&amount, days * 86_400)?)?;
        }
        if let Some(time) = time {
            for (unit, amount) in components(time, &['H', 'M', 'S'])? {
                add(scaled(
                    &amount,
                    match unit {
                        'H' => 3_600,
                        'M' => 60,
                        _ => 1,
                    },
                )?)?;
            }
        }
        Ok(Self(total))
    }

    /// The length as a standard-library duration.
    pub fn as_std(&self) -> std::time::Duration {
        self.0
    }
}

/// `3D`, `1H30M`, … split into (designator, amount) in the order `units` allows, each once;
/// only seconds take a fraction.
fn components(text: &str, units: &[char]) -> Result<Vec<(char, String)>, DurationError> {
    let mut out = Vec::new();
    let mut next_unit = 0;
    let mut amount = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() || c == '.' {
            amount.push(c);
            continue;
        }
        let position = units[next_unit..].iter().position(|u| *u == c).ok_or(DurationError::Malformed)?;
        let fraction_ok = c == 'S'
            && amount
                .split_once('.')
                .is_some_and(|(w, f)| !w.is_empty() && (1..=9).contains(&f.len()) && !f.contains('.'));
        if amount.is_empty() || amount.contains('.') && !fraction_ok {
            return Err(DurationError::Malformed);
        }
        out.push((c, std::mem::take(&mut amount)));
        next_unit += position + 1;
    }
    if amount.is_empty() { Ok(out) } else { Err(DurationError::Malformed) }
}

/// `amount` (digits, maybe a fraction of up to nine digits) times `unit` seconds.
fn scaled(amount: &str, unit: u64) -> Result<std::time::Duration, DurationError> {
    let (whole, fraction) = amount.split_once('.').unwrap_or((amount, ""));
    let whole: u64 = whole.parse().map_err(|_| DurationError::TooLong)?;
    let seconds = whole.checked_mul(unit).ok_or(DurationError::TooLong)?;
    let nanos: u32 = if fraction.is_empty() { 0 } else { format!("{fraction:0<9}").parse().unwrap_or(0) };
    Ok(std::time::Duration::new(seconds, nanos))
}

fn classify(text: &str) -> DurationError {
    if text.starts_with('-') {
        DurationError::Negative
    } else if text.starts_with('p') {
        DurationError::Lowercase
    } else {
        DurationError::Malformed
    }
}

impl fmt::Display for Duration {
    /// Days and a time part, e.g. `P1DT2H`, `PT1H30M`, `PT0.5S`; zero is `PT0S`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seconds = self.0.as_secs();
        let (days, hours, minutes, secs) =
            (seconds / 86_400, seconds % 86_400 / 3_600, seconds % 3_600 / 60, seconds % 60);
        let nanos = self.0.subsec_nanos();
        f.write_str("P")?;
        if days > 0 {
            write!(f, "{days}D")?;
        }
        if hours == 0 && minutes == 0 && secs == 0 && nanos == 0 {
            return if days == 0 { f.write_str("T0S") } else { Ok(()) };
        }
        f.write_str("T")?;
        if hours > 0 {
            write!(f, "{hours}H")?;
        }
        if minutes > 0 {
            write!(f, "{minutes}M")?;
        }
        if secs > 0 || nanos > 0 {
            write!(f, "{secs}")?;
            if nanos > 0 {
                write!(f, ".{}", format!("{nanos:09}").trim_end_matches('0'))?;
            }
            f.write_str("S")?;
        }
        Ok(())
    }
}

impl From<std::time::Duration> for Duration {
    fn from(value: std::time::Duration) -> Self {
        Self(value)
    }
}

impl From<Duration> for std::time::Duration {
    fn from(value: Duration) -> Self {
        value.0
    }
}

text_type!(Duration, DurationError);

impl JsonSchema for Duration {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "format": "duration",
            "pattern": DURATION_PATTERN,
            "description": "A length of time, ISO-8601: PnW, or PnD and/or T with nH nM nS (e.g. PT1H30M, P3D). No years or months.",
            "examples": [EXAMPLE, "P3D"],
            "x-toolgate": "duration",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(text: &str) -> Result<f64, DurationError> {
        Duration::parse(text).map(|d| d.as_std().as_secs_f64())
    }

    #[test]
    fn accepts_iso_durations() {
        for (text, seconds, shown) in [
            ("PT1H30M", 5_400.0, "PT1H30M"),
            ("P3D", 259_200.0, "P3D"),
            ("P2W", 1_209_600.0, "P14D"),
            ("P1DT2H", 93_600.0, "P1DT2H"),
            ("PT90M", 5_400.0, "PT1H30M"),
            ("PT0S", 0.0, "PT0S"),
            ("PT45.5S", 45.5, "PT45.5S"),
            ("PT0.000000001S", 0.000_000_001, "PT0.000000001S"),
        ] {
            assert_eq!(secs(text), Ok(seconds), "{text}");
            assert_eq!(Duration::parse(text).unwrap().to_string(), shown, "{text}");
        }
    }

    #[test]
    fn says_what_each_wrong_form_is() {
        for (text, problem) in [
            ("P1Y", DurationError::CalendarUnits),
            ("P1M", DurationError::CalendarUnits),
            ("P1Y2M3D", DurationError::CalendarUnits),
            ("pt1h", DurationError::Lowercase),
            ("PT1h", DurationError::Lowercase),
            ("-PT1H", DurationError::Negative),
            ("P", DurationError::Empty),
            ("PT", DurationError::Empty),
            ("P1DT", DurationError::Malformed),
            ("1h30m", DurationError::Malformed),
            ("90 minutes", DurationError::Malformed),
            ("01:30", DurationError::Malformed),
            ("PT1M1H", DurationError::Malformed),
            ("PT1.5H", DurationError::Malformed),
            ("PT1.S", DurationError::Malformed),
            ("PT1.0000000001S", DurationError::Malformed),
            ("P1W1D", DurationError::Malformed),
            ("PT99999999999999999999S", DurationError::TooLong),
            ("P999999999999999999W", DurationError::TooLong),
        ] {
            assert_eq!(Duration::parse(text), Err(problem.clone()), "{text}");
        }
    }

    proptest::proptest! {
        /// What the type accepts matches the schema's pattern, both ways.
        #[test]
        fn the_schema_and_the_type_agree(text in r"P[0-9.WDTHMS]{0,12}") {
            let pattern = regex_lite(DURATION_PATTERN);
            let parsed = Duration::parse(&text);
            if !matches!(parsed, Err(DurationError::TooLong)) {
                proptest::prop_assert_eq!(parsed.is_ok(), pattern(&text), "{}", text);
            }
        }

        #[test]
        fn every_duration_round_trips(seconds in 0u64..10_000_000_000, nanos in 0u32..1_000_000_000) {
            let value = Duration::from(std::time::Duration::new(seconds, nanos));
            proptest::prop_assert_eq!(Duration::parse(&value.to_string()), Ok(value));
        }
    }

    /// The schema's pattern, run by the validator the server uses.
    fn regex_lite(pattern: &str) -> impl Fn(&str) -> bool {
        let validator =
            jsonschema::validator_for(&serde_json::json!({ "type": "string", "pattern": pattern })).unwrap();
        move |text| validator.is_valid(&serde_json::json!(text))
    }
}
