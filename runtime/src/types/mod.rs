//! Argument types that say exactly what they accept: each has a precise JSON Schema
//! (format, pattern, description, example) and a strict `Deserialize` whose refusals say
//! what was wrong, so a model's next call is right.

mod date_time;

pub use date_time::{DateTime, DateTimeError};
