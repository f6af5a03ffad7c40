//! [`FieldError`]: one offending argument of an `INVALID_ARGUMENT`, named by a JSON
//! pointer whoever reported it.

use serde::Serialize;
use serde_json::Value;

/// One offending field of an `INVALID_ARGUMENT` error.
///
/// The field is always a JSON pointer into the call's arguments (`/id`,
/// `/items/2/amount`), whether the argument check or a handler reported it, so a model
/// reads one spelling in every error. [`FieldError::new`] turns a handler's spelling into
/// one: see there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldError {
    pub(crate) field: String,
    pub(crate) problem: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) expected: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) example: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) got: Option<Value>,
}

impl FieldError {
    /// A field error with just a field and a problem.
    ///
    /// `field` is read as a JSON pointer if it starts with `/` (`/items/2/amount`, kept
    /// as it is), as the whole arguments object if it is empty, and otherwise as a name or
    /// a dotted path (`id`, `items.2.amount`) whose parts become the pointer's segments
    /// (`/id`, `/items/2/amount`; `~` and `/` inside a part are escaped as `~0` and `~1`).
    /// A name that itself contains a `.` is written as a pointer: `/amount.eur`.
    ///
    /// ```
    /// use toolgate_runtime::FieldError;
    /// assert_eq!(FieldError::new("id", "is required").field(), "/id");
    /// assert_eq!(FieldError::new("items.2.amount", "is negative").field(), "/items/2/amount");
    /// assert_eq!(FieldError::new("/amount.eur", "is negative").field(), "/amount.eur");
    /// ```
    pub fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self { field: to_pointer(field.into()), problem: problem.into(), expected: None, example: None, got: None }
    }

    /// Adds the expected format.
    pub fn expected(mut self, expected: impl Into<String>) -> Self {
        self.expected = Some(expected.into());
        self
    }

    /// Adds a valid example value.
    pub fn example(mut self, example: impl Into<Value>) -> Self {
        self.example = Some(example.into());
        self
    }

    /// Adds the value that was received.
    pub fn got(mut self, got: impl Into<Value>) -> Self {
        self.got = Some(got.into());
        self
    }

    /// The field, as a JSON pointer into the arguments (`/id`, `/items/2/amount`).
    pub fn field(&self) -> &str {
        &self.field
    }

    /// What is wrong with it.
    pub fn problem(&self) -> &str {
        &self.problem
    }
}

/// A name or dotted path as a JSON pointer; a pointer (or the empty root pointer) as is.
fn to_pointer(field: String) -> String {
    if field.is_empty() || field.starts_with('/') {
        return field;
    }
    let mut pointer = String::with_capacity(field.len() + 1);
    for part in field.split('.') {
        pointer.push('/');
        pointer.push_str(&part.replace('~', "~0").replace('/', "~1"));
    }
    pointer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_name_becomes_a_pointer() {
        assert_eq!(FieldError::new("id", "x").field(), "/id");
    }

    #[test]
    fn a_dotted_path_becomes_a_pointer_with_one_segment_per_part() {
        assert_eq!(FieldError::new("items.2.amount", "x").field(), "/items/2/amount");
        assert_eq!(FieldError::new("a.b", "x").field(), "/a/b");
    }

    #[test]
    fn a_pointer_is_kept_as_it_is() {
        assert_eq!(FieldError::new("/items/2/amount", "x").field(), "/items/2/amount");
        assert_eq!(FieldError::new("/a.b", "x").field(), "/a.b");
        assert_eq!(FieldError::new("/a~1b", "x").field(), "/a~1b");
    }

    #[test]
    fn the_empty_field_is_the_whole_arguments_object() {
        assert_eq!(FieldError::new("", "x").field(), "");
    }

    #[test]
    fn pointer_syntax_inside_a_name_is_escaped() {
        assert_eq!(FieldError::new("a~b", "x").field(), "/a~0b");
        assert_eq!(FieldError::new("rate/hour.max", "x").field(), "/rate~1hour/max");
    }

    #[test]
    fn serializes_only_what_was_said() {
        let error = FieldError::new("id", "must not be empty").expected("INV-<digits>").example("INV-1");
        assert_eq!(
            serde_json::to_value(&error).unwrap(),
            serde_json::json!({
                "field": "/id",
                "problem": "must not be empty",
                "expected": "INV-<digits>",
                "example": "INV-1",
            })
        );
    }
}
