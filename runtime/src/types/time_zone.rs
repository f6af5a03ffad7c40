//! [`TimeZone`]: an IANA time zone name, checked against the tz database.

use std::borrow::Cow;
use std::fmt;

use chrono_tz::{TZ_VARIANTS, Tz};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

/// A time zone by its IANA name, e.g. `Europe/Madrid` or `America/New_York`, checked
/// against the tz database `chrono-tz` carries.
///
/// A zone, not an offset: `Europe/Madrid` is `+01:00` in winter and `+02:00` in summer, so
/// "every Monday at 09:00 in Madrid" needs the zone. Refused, each said: an offset
/// (`+01:00`, `UTC+1`), a wrong capitalisation (the message gives the right one), and
/// names the database does not have (`Madrid`, `CEST`).
///
/// ```
/// use toolgate_runtime::types::TimeZone;
/// let zone: TimeZone = "Europe/Madrid".parse().unwrap();
/// assert_eq!(zone.to_string(), "Europe/Madrid");
/// let wrong_case = "europe/madrid".parse::<TimeZone>().unwrap_err();
/// assert!(wrong_case.to_string().contains("`Europe/Madrid`"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimeZone(Tz);

const EXAMPLE: &str = "Europe/Madrid";

/// Why a string is not a [`TimeZone`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TimeZoneError {
    /// An offset where a zone was asked for.
    #[error("is an offset, not a time zone: give the IANA name of the place, e.g. `{EXAMPLE}`")]
    Offset,
    /// A real zone written with other capitals.
    #[error("is written `{0}` in the IANA time zone database")]
    Capitalisation(&'static str),
    /// Not in the database.
    #[error("is not an IANA time zone name: write Area/City, e.g. `{EXAMPLE}`")]
    Unknown,
}

impl TimeZone {
    /// Reads an IANA name, exactly as the database spells it.
    pub fn parse(text: &str) -> Result<Self, TimeZoneError> {
        if let Ok(zone) = text.parse::<Tz>() {
            return Ok(Self(zone));
        }
        if let Some(zone) = TZ_VARIANTS.iter().find(|zone| zone.name().eq_ignore_ascii_case(text)) {
            return Err(TimeZoneError::Capitalisation(zone.name()));
        }
        let offset = text.trim_start_matches("UTC").trim_start_matches("GMT");
        if offset.starts_with(['+', '-']) && offset[1..].chars().all(|c| c.is_ascii_digit() || c == ':') {
            return Err(TimeZoneError::Offset);
        }
        Err(TimeZoneError::Unknown)
    }

    /// The zone, as chrono-tz sees it.
    pub fn as_chrono_tz(&self) -> Tz {
        self.0
    }

    /// The IANA name.
    pub fn name(&self) -> &'static str {
        self.0.name()
    }
}

impl fmt::Display for TimeZone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name())
    }
}

impl From<Tz> for TimeZone {
    fn from(value: Tz) -> Self {
        Self(value)
    }
}

impl From<TimeZone> for Tz {
    fn from(value: TimeZone) -> Self {
        value.0
    }
}

text_type!(TimeZone, TimeZoneError);

impl JsonSchema for TimeZone {
    fn schema_name() -> Cow<'static, str> {
        "TimeZone".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "minLength": 1,
            "description": "An IANA time zone name, Area/City as in the tz database (not an offset).",
            "examples": [EXAMPLE, "America/New_York", "UTC"],
            "x-toolgate": "time-zone",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_database_names_and_says_what_each_wrong_one_is() {
        for name in ["Europe/Madrid", "America/Argentina/Buenos_Aires", "UTC", "Asia/Kolkata", "Pacific/Chatham"] {
            assert_eq!(TimeZone::parse(name).unwrap().name(), name);
        }
        for (text, problem) in [
            ("europe/madrid", TimeZoneError::Capitalisation("Europe/Madrid")),
            ("AMERICA/NEW_YORK", TimeZoneError::Capitalisation("America/New_York")),
            ("+01:00", TimeZoneError::Offset),
            ("UTC+1", TimeZoneError::Offset),
            ("GMT-05:00", TimeZoneError::Offset),
            ("Madrid", TimeZoneError::Unknown),
            ("CEST", TimeZoneError::Unknown),
            ("Europe/Atlantis", TimeZoneError::Unknown),
            ("", TimeZoneError::Unknown),
        ] {
            assert_eq!(TimeZone::parse(text), Err(problem.clone()), "{text}");
        }
    }

    #[test]
    fn round_trips_through_json() {
        let zone: TimeZone = serde_json::from_value(serde_json::json!("Asia/Tokyo")).unwrap();
        assert_eq!(serde_json::to_value(zone).unwrap(), "Asia/Tokyo");
        assert_eq!(Tz::from(zone), chrono_tz::Asia::Tokyo);
    }
}
