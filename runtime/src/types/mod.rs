//! Argument types that say exactly what they accept: each has a precise JSON Schema
//! (format, pattern, description, example) and a strict `Deserialize` whose refusals say
//! what was wrong, so a model's next call is right. The server checks each of them beside
//! the schema (see `check`), so one `INVALID_ARGUMENT` names every bad field in the
//! type's own words.

/// `FromStr`, `Serialize` and `Deserialize` for a type written as one JSON string: read
/// with its strict `parse`, written with its `Display`.
macro_rules! text_type {
    ($type:ty, $error:ty) => {
        impl ::std::str::FromStr for $type {
            type Err = $error;
            fn from_str(text: &str) -> Result<Self, Self::Err> {
                Self::parse(text)
            }
        }

        impl ::serde::Serialize for $type {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $type {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(deserializer)?;
                Self::parse(&text).map_err(::serde::de::Error::custom)
            }
        }
    };
}

pub(crate) mod check;
mod count;
mod date;
mod date_time;
mod duration;
mod money;
mod time_zone;

pub use count::{Count, CountError, Days, Items, Nights, Persons, Unit};
pub use date::{DATE_PATTERN, Date, DateError};
pub use date_time::{DATE_TIME_PATTERN, DateTime, DateTimeError};
pub use duration::{DURATION_PATTERN, Duration, DurationError};
pub use money::{Currency, MAX_MINOR_UNITS, Money, MoneyError};
pub use time_zone::{TimeZone, TimeZoneError};

/// The pattern DateTime's schema carries (for tests that build schemas by hand).
#[cfg(test)]
pub(crate) fn date_time_pattern() -> &'static str {
    DATE_TIME_PATTERN
}

/// Arbitrary input never makes a reader panic; every value a type writes, it reads back.
#[cfg(test)]
mod properties {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn no_string_makes_a_reader_panic(text in any::<String>(), code in "[A-Za-z]{0,4}") {
            let _ = Date::parse(&text);
            let _ = Duration::parse(&text);
            let _ = TimeZone::parse(&text);
            let _ = Money::parse(&text, &code);
            let _ = Money::from_json(&json!({ "amount": text, "currency": code }));
        }

        #[test]
        fn every_amount_round_trips(minor in 0..=MAX_MINOR_UNITS, code in prop::sample::select(vec!["EUR", "JPY", "KWD", "CLF", "USD"])) {
            let money = Money::from_minor_units(minor, Currency::parse(code).unwrap()).unwrap();
            let written = serde_json::to_value(money).unwrap();
            prop_assert_eq!(Money::from_json(&written), Ok(money));
            prop_assert_eq!(Money::parse(&money.amount(), code), Ok(money));
        }

        /// What the schema's pattern refuses, the type refuses: they never disagree.
        #[test]
        fn what_the_date_pattern_refuses_the_type_refuses(text in r"[0-9]{1,5}[-/.][0-9]{1,3}[-/.][0-9]{1,3}( |T)?") {
            let validator = jsonschema::validator_for(&json!({ "type": "string", "pattern": DATE_PATTERN })).unwrap();
            if !validator.is_valid(&json!(text)) {
                prop_assert!(Date::parse(&text).is_err(), "{}", text);
            }
        }

        #[test]
        fn every_date_round_trips(days in 0i64..3_652_424) {
            let day = chrono::NaiveDate::from_ymd_opt(0, 1, 1).unwrap() + chrono::TimeDelta::days(days);
            let date = Date::try_from(day).unwrap();
            prop_assert_eq!(Date::parse(&date.to_string()), Ok(date));
        }
    }
}
