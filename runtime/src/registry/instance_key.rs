//! The argument that names a keyed machine's instance (`id` of `invoice_discharge`):
//! found in the tool's input schema at start-up, read from each call's arguments.

use rmcp::model::JsonObject;
use serde_json::{Map, Value};

use crate::arguments::shortened;
use crate::error::{FieldError, ToolError};

/// The longest instance key accepted, in bytes: ids, not documents.
const MAX_KEY_BYTES: usize = 256;

/// How a tool names the instance it acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InstanceKey {
    /// The argument (the machine's `key`).
    pub(crate) field: String,
    /// Whether the argument is an integer (else a string).
    pub(crate) integer: bool,
}

impl InstanceKey {
    /// Finds `field` in an input schema: it must be a required string or integer property.
    /// `Ok(None)`: the input has no such property.
    pub(crate) fn find(schema: &JsonObject, field: &str) -> Result<Option<Self>, String> {
        let Some(property) = schema.get("properties").and_then(|p| p.get(field)) else { return Ok(None) };
        let property = resolve(schema, property);
        let required = schema.get("required").and_then(Value::as_array).is_some_and(|r| r.iter().any(|f| f == field));
        let integer = match property.get("type").and_then(Value::as_str) {
            Some("string") => false,
            Some("integer") => true,
            _ => return Err(format!("its `{field}` field is {}", describe(property))),
        };
        if !required {
            return Err(format!("its `{field}` field is optional"));
        }
        Ok(Some(Self { field: field.to_string(), integer }))
    }

    /// The instance a call names: the argument's value as text. A missing, mistyped or
    /// oversized value is `INVALID_ARGUMENT` before any state is read.
    pub(crate) fn read(&self, arguments: &Map<String, Value>) -> Result<String, ToolError> {
        let field = self.field.as_str();
        let expected = if self.integer { "an integer id" } else { "a non-empty string id" };
        let problem = match (arguments.get(field), self.integer) {
            (Some(Value::String(s)), false) if !s.is_empty() && s.len() <= MAX_KEY_BYTES => return Ok(s.clone()),
            (Some(Value::Number(n)), true) if n.is_i64() || n.is_u64() => return Ok(n.to_string()),
            (None, _) => "is required: it names the object this call acts on",
            (Some(Value::String(s)), false) if s.is_empty() => "must not be empty",
            (Some(Value::String(_)), false) => "is too long for an id",
            _ => "has the wrong type",
        };
        let mut error = FieldError::new(format!("/{field}"), problem).expected(expected);
        if let Some(got) = arguments.get(field) {
            error = error.got(shortened(got));
        }
        Err(ToolError::invalid_arguments([error]))
    }
}

/// Follows a local `$ref` (`#/$defs/InvoiceId`) to its definition.
fn resolve<'a>(schema: &'a JsonObject, property: &'a Value) -> &'a Value {
    property
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| schema.get("$defs")?.get(name))
        .unwrap_or(property)
}

fn describe(property: &Value) -> String {
    match property.get("type") {
        Some(kind) => format!("of type {kind}, not a string or an integer"),
        None => "not a plain string or integer".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(value: Value) -> JsonObject {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn finds_required_string_and_integer_keys() {
        let s = schema(json!({"properties": {"id": {"type": "string"}}, "required": ["id"]}));
        assert_eq!(InstanceKey::find(&s, "id"), Ok(Some(InstanceKey { field: "id".into(), integer: false })));
        let s = schema(json!({
            "properties": {"id": {"$ref": "#/$defs/Id"}}, "required": ["id"],
            "$defs": {"Id": {"type": "integer", "format": "int64"}}
        }));
        assert!(InstanceKey::find(&s, "id").unwrap().unwrap().integer);
        assert_eq!(InstanceKey::find(&schema(json!({"properties": {}})), "id"), Ok(None));
    }

    #[test]
    fn refuses_optional_and_other_types() {
        let s = schema(json!({"properties": {"id": {"type": "string"}}}));
        assert_eq!(InstanceKey::find(&s, "id").unwrap_err(), "its `id` field is optional");
        let s = schema(json!({"properties": {"id": {"type": ["string", "null"]}}, "required": ["id"]}));
        assert!(InstanceKey::find(&s, "id").unwrap_err().contains("not a string or an integer"));
    }

    #[test]
    fn reads_the_instance_or_says_what_is_wrong() {
        let key = InstanceKey { field: "id".into(), integer: false };
        let args = |v: Value| v.as_object().cloned().unwrap();
        assert_eq!(key.read(&args(json!({"id": "INV-1"}))), Ok("INV-1".into()));
        for (bad, problem) in [
            (json!({}), "is required"),
            (json!({"id": ""}), "must not be empty"),
            (json!({"id": 7}), "has the wrong type"),
            (json!({"id": "x".repeat(300)}), "is too long"),
        ] {
            let error = key.read(&args(bad)).unwrap_err().to_structured();
            assert!(error["errors"][0]["problem"].as_str().unwrap().starts_with(problem), "{error}");
        }
        let key = InstanceKey { field: "n".into(), integer: true };
        assert_eq!(key.read(&args(json!({"n": 42}))), Ok("42".into()));
        assert!(key.read(&args(json!({"n": 4.5}))).is_err());
    }
}
