//! The mandatory `domain` field: required in every domain tool's arguments (the model
//! restates which domain it means on every call) and echoed in every result.

use rmcp::model::JsonObject;
use serde_json::{Value, json};

use crate::schema::{Position, Presence, add_owned_property};

/// The field's name, in arguments and in results.
pub(crate) const DOMAIN_FIELD: &str = "domain";

/// Adds the required `domain` property, `const` the tool's domain, first in the input
/// schema. Refuses a user type that already has a `domain` field.
pub(crate) fn add_to_input_schema(schema: &mut JsonObject, domain: &str) -> Result<(), String> {
    // No description: the `const` says it all, and every listed tool pays for the words
    // on every turn (a domain change is `switch_domain`'s to explain).
    let property = json!({ "type": "string", "const": domain });
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
        Some(domain) => json!({ "type": "string", "const": domain }),
        None => json!({ "type": ["string", "null"], "description": "The active domain after this call." }),
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

/// Puts `domain` into a result's `structuredContent` (success or error).
pub(crate) fn echo(content: &mut Value, domain: Option<&str>) {
    if let Value::Object(fields) = content {
        fields.insert(DOMAIN_FIELD.into(), domain.map_or(Value::Null, Value::from));
    }
}
