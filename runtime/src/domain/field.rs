//! The mandatory `domain` field: required in every domain tool's arguments (the model
//! restates which domain it means on every call) and echoed in every result.

use rmcp::model::JsonObject;
use serde_json::{Map, Value, json};

use crate::error::{FieldError, ToolError};
use crate::schema::{Position, Presence, add_owned_property};

/// The field's name, in arguments and in results.
pub(crate) const DOMAIN_FIELD: &str = "domain";

/// Adds the required `domain` property, `const` the tool's domain, first in the input
/// schema. Refuses a user type that already has a `domain` field.
pub(crate) fn add_to_input_schema(schema: &mut JsonObject, domain: &str) -> Result<(), String> {
    let property = json!({
        "type": "string",
        "const": domain,
        "description": format!(
            "Must be \"{domain}\": the intent domain of this tool. If the user now wants something from another domain, call switch_domain instead."
        ),
    });
    add_owned_property(
        schema,
        DOMAIN_FIELD,
        property,
        Position::First,
        Presence::Required,
        "input",
        "the intent domain",
    )
}

/// Declares the `domain` toolgate adds to results.
pub(crate) fn add_to_output_schema(schema: &mut JsonObject, domain: Option<&str>) -> Result<(), String> {
    let property = match domain {
        Some(domain) => {
            json!({ "type": "string", "const": domain, "description": "The intent domain of this result." })
        }
        None => {
            json!({ "type": ["string", "null"], "description": "The flow's active intent domain after this call." })
        }
    };
    add_owned_property(
        schema,
        DOMAIN_FIELD,
        property,
        Position::First,
        Presence::Required,
        "output",
        "the intent domain",
    )
}

/// Removes the declared `domain` from the arguments (the handler's type does not have it)
/// and returns it; a missing or non-string one is `INVALID_ARGUMENT`.
pub(crate) fn take_declared(arguments: &mut Map<String, Value>, tool_domain: &str) -> Result<String, ToolError> {
    let problem = match arguments.remove(DOMAIN_FIELD) {
        Some(Value::String(declared)) => return Ok(declared),
        None => FieldError::new(
            format!("/{DOMAIN_FIELD}"),
            "is required: every call states the intent domain it belongs to",
        ),
        Some(other) => FieldError::new(format!("/{DOMAIN_FIELD}"), "must be a string").got(other),
    };
    Err(ToolError::invalid_arguments([problem.expected(format!("the string \"{tool_domain}\"")).example(tool_domain)]))
}

/// Puts `domain` into a result's `structuredContent` (success or error).
pub(crate) fn echo(content: &mut Value, domain: Option<&str>) {
    if let Value::Object(fields) = content {
        fields.insert(DOMAIN_FIELD.into(), domain.map_or(Value::Null, Value::from));
    }
}
