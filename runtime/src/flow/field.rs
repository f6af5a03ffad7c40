//! The handle argument (`flow` by default): optional in the input schema of every tool
//! that runs in a flow, and returned in their results where a handle names the flow.

use rmcp::model::JsonObject;
use serde_json::{Map, Value, json};

use crate::error::{FieldError, ToolError};
use crate::schema::{Position, Presence, add_owned_property};

/// Adds the optional handle property to an input schema.
pub(crate) fn add_to_input_schema(schema: &mut JsonObject, argument: &str) -> Result<(), String> {
    let property = json!({
        "type": "string",
        "description": format!(
            "The latest result's `{argument}`; omit at first."
        ),
    });
    add_owned_property(schema, argument, property, Position::Last, Presence::Optional, "input", "the state handle")
}

/// Declares the handle results carry.
pub(crate) fn add_to_output_schema(schema: &mut JsonObject, argument: &str) -> Result<(), String> {
    let property = json!({
        "type": "string",
        "description": format!("Pass it as `{argument}` in the next call."),
    });
    add_owned_property(schema, argument, property, Position::Last, Presence::Optional, "output", "the state handle")
}

/// The handle the arguments carry, if any.
pub(crate) fn read<'a>(arguments: &'a Map<String, Value>, argument: &str) -> Result<Option<&'a str>, ToolError> {
    match arguments.get(argument) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(handle)) => Ok(Some(handle)),
        Some(_) => Err(ToolError::invalid_arguments([FieldError::new(
            format!("/{argument}"),
            "must be a string: the handle a previous result returned",
        )
        .expected("the exact string of the latest result's handle")])),
    }
}
