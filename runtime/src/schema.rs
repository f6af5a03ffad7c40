//! The fields toolgate owns in a tool's JSON Schemas (`domain`, `state`, the handle):
//! added as properties, and refused in a user's type so the two never fight over one.
//!
//! A leaf: the modules that own a field (`domain`, `flow`, `registry`) use it, and it uses
//! none of them.

use rmcp::model::JsonObject;
use serde_json::{Map, Value, json};

/// Where the added property goes among the others (the order clients display).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Position {
    First,
    Last,
}

/// Whether the added property is required.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Presence {
    Required,
    Optional,
}

/// Adds the property `name` to `schema`. A schema that already has it is refused with a
/// message saying `which` type it is and what toolgate uses `name` for.
pub(crate) fn add_owned_property(
    schema: &mut JsonObject,
    name: &str,
    property: Value,
    position: Position,
    presence: Presence,
    which: &str,
    purpose: &str,
) -> Result<(), String> {
    let existing = match schema.remove("properties") {
        Some(Value::Object(map)) => map,
        None => Map::new(),
        Some(_) => return Err(format!("the {which} schema's `properties` is not an object")),
    };
    if existing.contains_key(name) {
        return Err(format!("the {which} type has a field `{name}`, which toolgate fills with {purpose}; rename it"));
    }
    let mut properties = Map::new();
    if position == Position::First {
        properties.insert(name.into(), property.clone());
    }
    properties.extend(existing);
    if position == Position::Last {
        properties.insert(name.into(), property);
    }
    schema.insert("properties".into(), Value::Object(properties));
    if presence == Presence::Optional {
        return Ok(());
    }
    let required = schema.entry("required").or_insert_with(|| json!([]));
    if let Some(required) = required.as_array_mut() {
        match position {
            Position::First => required.insert(0, json!(name)),
            Position::Last => required.push(json!(name)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(value: Value) -> JsonObject {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn adds_a_required_property_where_asked() {
        let mut s = schema(json!({ "type": "object", "properties": { "id": {} }, "required": ["id"] }));
        add_owned_property(&mut s, "domain", json!({}), Position::First, Presence::Required, "input", "x").unwrap();
        add_owned_property(&mut s, "state", json!({}), Position::Last, Presence::Required, "input", "x").unwrap();
        add_owned_property(&mut s, "flow", json!({}), Position::Last, Presence::Optional, "input", "x").unwrap();
        let names: Vec<&String> = s["properties"].as_object().unwrap().keys().collect();
        assert_eq!(names, ["domain", "id", "state", "flow"]);
        assert_eq!(s["required"], json!(["domain", "id", "state"]));
    }

    #[test]
    fn refuses_a_type_that_has_the_field() {
        let mut s = schema(json!({ "type": "object", "properties": { "state": {} } }));
        let error =
            add_owned_property(&mut s, "state", json!({}), Position::Last, Presence::Required, "output", "the state")
                .unwrap_err();
        assert_eq!(error, "the output type has a field `state`, which toolgate fills with the state; rename it");
    }
}
