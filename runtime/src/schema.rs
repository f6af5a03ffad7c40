//! What toolgate does to a tool's JSON Schemas: the fields it owns (`domain`, `state`,
//! the handle), added as properties and refused in a user's type so the two never fight
//! over one; an output schema that admits error results too; standard formats only.
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

/// Removes what a model reading an input schema gains nothing from, and pays for on every
/// turn: the root `title` (the Rust type's name). schemars adds no `$schema` to an input
/// schema (`action/handler.rs`), so one there was declared, and stays: a client may
/// validate with it.
pub(crate) fn drop_boilerplate(schema: &mut Value) {
    if let Value::Object(fields) = schema {
        fields.shift_remove("title");
    }
}

/// Removes every `examples`, at any depth: they show how to fill an input, and an output
/// schema (whose `$defs` every tool repeats) only describes what comes back.
pub(crate) fn drop_examples(schema: &mut Value) {
    match schema {
        Value::Object(keywords) => {
            keywords.shift_remove("examples");
            for (keyword, value) in keywords.iter_mut() {
                match (keyword.as_str(), value) {
                    // Maps of names to schemas: a property may be called `examples`.
                    ("properties" | "patternProperties" | "$defs" | "definitions", Value::Object(named)) => {
                        named.values_mut().for_each(drop_examples);
                    }
                    (_, value) => drop_examples(value),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(drop_examples),
        _ => {}
    }
}

/// The formats JSON Schema 2020-12 defines; schemars adds others (`uint64`, `double`, …)
/// that validating clients warn about or reject.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Removes every `format` JSON Schema does not define, at any depth. (Their meaning
/// stays in `minimum`/`maximum`, which schemars writes beside them.)
pub(crate) fn keep_standard_formats(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.get("format").and_then(Value::as_str).is_some_and(|f| !STANDARD_FORMATS.contains(&f)) {
                map.remove("format");
            }
            map.values_mut().for_each(keep_standard_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(keep_standard_formats),
        _ => {}
    }
}

/// Makes an output schema admit toolgate's error results too: clients (the TypeScript
/// SDK, the Inspector) validate `structuredContent` against `outputSchema` even when
/// `isError` is true. The success shape (its `properties` and `required`) becomes one
/// branch of an `anyOf`, an error (a string `code` and `message`, anything else) the
/// other; the root keeps `type: object` and the shared `$defs`. Keeping the branches
/// apart means no success field can clash with an error's fields.
pub(crate) fn admit_errors(schema: &mut JsonObject) {
    let mut success = Map::new();
    success.insert("type".into(), json!("object"));
    for key in ["properties", "required", "additionalProperties"] {
        if let Some(value) = schema.remove(key) {
            success.insert(key.into(), value);
        }
    }
    schema.insert("anyOf".into(), json!([Value::Object(success), error_shape()]));
}

/// The shape of every error's `structuredContent`, as output schemas admit it.
pub(crate) fn error_shape() -> Value {
    json!({
        "type": "object",
        "description": "The call failed: a refusal or an error the model can act on.",
        "properties": {
            "code": { "type": "string", "description": "Why the call failed (a stable code such as FORBIDDEN)." },
            "message": { "type": "string", "description": "What happened, and what to do." },
        },
        "required": ["code", "message"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(value: Value) -> JsonObject {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn examples_go_and_a_property_called_examples_stays() {
        let mut schema = json!({
            "examples": [1],
            "properties": { "examples": { "type": "string", "examples": ["a"] } },
            "$defs": { "Money": { "examples": [{}], "anyOf": [{ "examples": [2] }] } },
        });
        drop_examples(&mut schema);
        assert_eq!(
            schema,
            json!({ "properties": { "examples": { "type": "string" } }, "$defs": { "Money": { "anyOf": [{}] } } })
        );
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
    fn only_standard_formats_stay() {
        let mut s = json!({ "properties": {
            "n": { "type": "integer", "format": "uint64", "minimum": 0 },
            "at": { "type": "string", "format": "date-time" },
            "list": { "items": { "type": "number", "format": "double" } },
        }});
        keep_standard_formats(&mut s);
        assert_eq!(s["properties"]["n"], json!({ "type": "integer", "minimum": 0 }));
        assert_eq!(s["properties"]["at"]["format"], "date-time");
        assert!(s["properties"]["list"]["items"].get("format").is_none());
    }

    #[test]
    fn an_output_schema_admits_its_success_and_an_error() {
        let mut s =
            schema(json!({ "type": "object", "properties": { "id": { "type": "string" } }, "required": ["id"] }));
        admit_errors(&mut s);
        assert!(s.get("required").is_none() && s.get("properties").is_none());
        assert_eq!(s["type"], "object");
        assert_eq!(s["anyOf"][0]["required"], json!(["id"]));
        assert_eq!(s["anyOf"][0]["properties"]["id"]["type"], "string");
        assert_eq!(s["anyOf"][1]["required"], json!(["code", "message"]));
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
