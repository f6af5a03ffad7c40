//! Argument types that say exactly what they accept: each has a precise JSON Schema
//! (format, pattern, description, example) and a strict `Deserialize` whose refusals say
//! what was wrong, so a model's next call is right.

mod date_time;

pub use date_time::{DATE_TIME_PATTERN, DateTime, DateTimeError};

/// The pattern DateTime's schema carries (for tests that build schemas by hand).
#[cfg(test)]
pub(crate) fn date_time_pattern() -> &'static str {
    DATE_TIME_PATTERN
}
