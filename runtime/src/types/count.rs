//! [`Count`]: a whole number of some unit, with its bounds in the schema.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What a [`Count`] counts: its names, which the schema and the messages use.
///
/// ```
/// use toolgate_runtime::types::{Count, Unit};
/// /// Seats on a bus.
/// pub struct Seats;
/// impl Unit for Seats {
///     const SINGULAR: &'static str = "seat";
///     const PLURAL: &'static str = "seats";
/// }
/// let seats: Count<Seats, 1, 50> = serde_json::from_value(serde_json::json!(3)).unwrap();
/// assert_eq!(seats.get(), 3);
/// ```
pub trait Unit: 'static {
    /// One of it: `person`.
    const SINGULAR: &'static str;
    /// Several: `persons`.
    const PLURAL: &'static str;
}

macro_rules! units {
    ($($(#[$doc:meta])* $name:ident: $singular:literal, $plural:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name;
        impl Unit for $name {
            const SINGULAR: &'static str = $singular;
            const PLURAL: &'static str = $plural;
        }
    )*};
}

units! {
    /// People: passengers, guests, attendees.
    Persons: "person", "persons";
    /// Nights of a stay.
    Nights: "night", "nights";
    /// Days.
    Days: "day", "days";
    /// Items of an order or a list.
    Items: "item", "items";
}

/// A whole number of `U`, from `MIN` to `MAX`: `Count<Persons, 1, 9>` is one to nine
/// persons. The schema is an integer with `minimum`, `maximum`, the unit as `title` and a
/// description that says all three; the value is read strictly (`2`, never `"2"`, `2.0`
/// or `"two"`) and a number out of range is refused with the bounds and the unit.
///
/// ```
/// use toolgate_runtime::types::{Count, Persons};
/// let passengers: Count<Persons, 1, 9> = serde_json::from_value(serde_json::json!(2)).unwrap();
/// assert_eq!(passengers.to_string(), "2 persons");
/// let too_many = serde_json::from_value::<Count<Persons, 1, 9>>(serde_json::json!(12)).unwrap_err();
/// assert!(too_many.to_string().contains("from 1 to 9 persons"));
/// ```
pub struct Count<U: Unit, const MIN: u32 = 0, const MAX: u32 = { u32::MAX }> {
    value: u32,
    unit: PhantomData<fn() -> U>,
}

/// Why a value is not a [`Count`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CountError {
    /// Not a whole JSON number.
    #[error("must be a whole number of {plural}, from {min} to {max}, e.g. {min}")]
    NotAWholeNumber {
        /// The unit.
        plural: &'static str,
        /// The least allowed.
        min: u32,
        /// The most allowed.
        max: u32,
    },
    /// Out of the bounds.
    #[error("must be from {min} to {max} {plural}")]
    OutOfRange {
        /// The unit.
        plural: &'static str,
        /// The least allowed.
        min: u32,
        /// The most allowed.
        max: u32,
    },
}

impl<U: Unit, const MIN: u32, const MAX: u32> Count<U, MIN, MAX> {
    /// `value` of `U`, if it is within the bounds.
    pub fn new(value: u32) -> Result<Self, CountError> {
        if (MIN..=MAX).contains(&value) {
            Ok(Self { value, unit: PhantomData })
        } else {
            Err(CountError::OutOfRange { plural: U::PLURAL, min: MIN, max: MAX })
        }
    }

    /// The number.
    pub fn get(&self) -> u32 {
        self.value
    }
}

impl<U: Unit, const MIN: u32, const MAX: u32> Clone for Count<U, MIN, MAX> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<U: Unit, const MIN: u32, const MAX: u32> Copy for Count<U, MIN, MAX> {}

impl<U: Unit, const MIN: u32, const MAX: u32> PartialEq for Count<U, MIN, MAX> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<U: Unit, const MIN: u32, const MAX: u32> Eq for Count<U, MIN, MAX> {}

impl<U: Unit, const MIN: u32, const MAX: u32> fmt::Debug for Count<U, MIN, MAX> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Count({} {})", self.value, U::PLURAL)
    }
}

impl<U: Unit, const MIN: u32, const MAX: u32> fmt::Display for Count<U, MIN, MAX> {
    /// `1 person`, `2 persons`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.value, if self.value == 1 { U::SINGULAR } else { U::PLURAL })
    }
}

impl<U: Unit, const MIN: u32, const MAX: u32> Serialize for Count<U, MIN, MAX> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(self.value)
    }
}

impl<'de, U: Unit, const MIN: u32, const MAX: u32> Deserialize<'de> for Count<U, MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        let not_whole = || CountError::NotAWholeNumber { plural: U::PLURAL, min: MIN, max: MAX };
        let number = value.as_u64().ok_or_else(not_whole).map_err(serde::de::Error::custom)?;
        let number = u32::try_from(number)
            .map_err(|_| CountError::OutOfRange { plural: U::PLURAL, min: MIN, max: MAX })
            .map_err(serde::de::Error::custom)?;
        Self::new(number).map_err(serde::de::Error::custom)
    }
}

impl<U: Unit, const MIN: u32, const MAX: u32> JsonSchema for Count<U, MIN, MAX> {
    fn schema_name() -> Cow<'static, str> {
        format!("Count_{}_{}_{}", U::PLURAL, MIN, MAX).into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let description = format!("A whole number of {}, from {MIN} to {MAX}.", U::PLURAL);
        json_schema!({
            "type": "integer",
            "minimum": MIN,
            "maximum": MAX,
            "title": U::PLURAL,
            "description": description,
            "examples": [MIN.max(1).min(MAX)],
            "x-toolgate": "count",
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    type Passengers = Count<Persons, 1, 9>;

    #[test]
    fn reads_whole_numbers_within_the_bounds() {
        for n in [1, 2, 9] {
            assert_eq!(serde_json::from_value::<Passengers>(json!(n)).unwrap().get(), n);
        }
        for (value, problem) in [
            (json!(0), "must be from 1 to 9 persons"),
            (json!(10), "must be from 1 to 9 persons"),
            (json!(5_000_000_000_u64), "must be from 1 to 9 persons"),
            (json!(-1), "must be a whole number of persons, from 1 to 9, e.g. 1"),
            (json!(2.0), "must be a whole number of persons, from 1 to 9, e.g. 1"),
            (json!(2.5), "must be a whole number of persons, from 1 to 9, e.g. 1"),
            (json!("2"), "must be a whole number of persons, from 1 to 9, e.g. 1"),
            (json!("two"), "must be a whole number of persons, from 1 to 9, e.g. 1"),
        ] {
            let error = serde_json::from_value::<Passengers>(value.clone()).unwrap_err().to_string();
            assert_eq!(error, problem, "{value}");
        }
    }

    #[test]
    fn the_schema_carries_the_unit_and_the_bounds() {
        let schema = schemars::SchemaGenerator::default().into_root_schema_for::<Passengers>();
        let schema = schema.as_value();
        assert_eq!((schema["minimum"].clone(), schema["maximum"].clone()), (json!(1), json!(9)));
        assert_eq!(schema["title"], "persons");
        assert_eq!(schema["description"], "A whole number of persons, from 1 to 9.");
        assert_eq!(Count::<Nights>::new(3).unwrap().to_string(), "3 nights");
        assert_eq!(Count::<Nights>::new(1).unwrap().to_string(), "1 night");
    }
}
