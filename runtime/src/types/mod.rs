//! Argument types that say exactly what they accept: each has a precise JSON Schema
//! (format, pattern, description, example) and a strict `Deserialize` whose refusals say
//! what was wrong, so a model's next call is right. The server checks each of them beside
//! the schema (see `check`), so one `INVALID_ARGUMENT` names every bad field in the
//! type's own words.

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
