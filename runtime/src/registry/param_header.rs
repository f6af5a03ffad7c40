//! Arguments that travel as HTTP headers too (SEP-2243, MCP 2026-07-28): a property of a
//! tool's input annotated `"x-mcp-header": "Region"` is sent by the client as
//! `Mcp-Param-Region` beside the body, so a gateway can route or authorize a call without
//! parsing it. rmcp checks each such header against the body (400 with `-32020` on a
//! mismatch or a missing header, with the base64 form `=?base64?…?=` for unsafe values),
//! from the definitions this server gives it; here the annotations are checked once, at
//! start-up, so a client never drops a tool for a malformed one:
//!
//! - the name is a non-empty HTTP token, and unique in the tool (ignoring case);
//! - the property is a string, an integer or a boolean (or one of them or null);
//! - it is reached from the input's root through `properties` alone.
//!
//! A user marks an argument with schemars:
//! `#[schemars(extend("x-mcp-header" = "Region"))]`. A keyed machine's key travels as
//! `Mcp-Param-{Key}` when the server is built with
//! [`ServerBuilder::key_headers`](crate::ServerBuilder::key_headers).

use serde_json::{Value, json};

use rmcp::model::JsonObject;

/// The JSON Schema keyword that names a property's header.
pub(crate) const KEYWORD: &str = "x-mcp-header";

/// The header name a key argument travels in: `payment_id` → `Payment-Id` (dashes, not
/// underscores, which some proxies drop).
pub(crate) fn key_header_name(key: &str) -> String {
    key.split(['_', '-'])
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map(|first| first.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// Annotates the input's `key` property to travel as a header (if it has no annotation).
pub(crate) fn annotate_key(input: &mut JsonObject, key: &str) {
    if let Some(Value::Object(property)) = input.get_mut("properties").and_then(|p| p.get_mut(key)) {
        property.entry(KEYWORD).or_insert_with(|| json!(key_header_name(key)));
    }
}

/// Every problem with the input schema's header annotations, in words.
pub(crate) fn check(input: &JsonObject) -> Vec<String> {
    let mut problems = Vec::new();
    let mut names: Vec<String> = Vec::new();
    walk(&Value::Object(input.clone()), "", true, &mut names, &mut problems);
    problems
}

/// Visits `schema` at `path`; `reachable`: whether it is reached through `properties` alone.
fn walk(schema: &Value, path: &str, reachable: bool, names: &mut Vec<String>, problems: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(name) = map.get(KEYWORD) {
                judge(map, name, path, reachable, names, problems);
            }
            for (key, value) in map {
                match key.as_str() {
                    "properties" => {
                        if let Value::Object(properties) = value {
                            for (property, schema) in properties {
                                walk(schema, &format!("{path}/{property}"), reachable, names, problems);
                            }
                        }
                    }
                    KEYWORD => {}
                    _ => walk(value, path, false, names, problems),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| walk(item, path, false, names, problems)),
        _ => {}
    }
}

fn judge(
    property: &serde_json::Map<String, Value>,
    name: &Value,
    path: &str,
    reachable: bool,
    names: &mut Vec<String>,
    problems: &mut Vec<String>,
) {
    let at = if path.is_empty() { "the input itself".to_string() } else { format!("`{path}`") };
    let Some(name) = name.as_str().filter(|n| !n.is_empty() && n.chars().all(is_token_char)) else {
        problems.push(format!("{at}: `{KEYWORD}` must be a non-empty HTTP token (letters, digits, `-`, `_`, …)"));
        return;
    };
    if !reachable || path.is_empty() {
        problems.push(format!(
            "{at}: `{KEYWORD}: \"{name}\"` is only allowed on a property reached through `properties` (not in a list, an `anyOf` or a `$ref`)"
        ));
        return;
    }
    let types: Vec<&str> = match property.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect(),
        _ => Vec::new(),
    };
    if types.len() != 1 || !["string", "integer", "boolean"].contains(&types[0]) {
        problems.push(format!("{at}: `{KEYWORD}: \"{name}\"` needs a string, an integer or a boolean"));
        return;
    }
    if names.iter().any(|seen| seen.eq_ignore_ascii_case(name)) {
        problems.push(format!("{at}: the header name `{name}` is used twice (names ignore case)"));
        return;
    }
    names.push(name.to_string());
}

/// RFC 9110 `tchar`.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> JsonObject {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn a_key_travels_under_a_dashed_name() {
        assert_eq!(key_header_name("payment_id"), "Payment-Id");
        assert_eq!(key_header_name("id"), "Id");
        let mut input = object(json!({ "properties": { "id": { "type": "string" } } }));
        annotate_key(&mut input, "id");
        assert_eq!(input["properties"]["id"][KEYWORD], "Id");
        assert!(check(&input).is_empty());
    }

    #[test]
    fn misplaced_and_malformed_annotations_are_problems() {
        let input = object(json!({ "properties": {
            "region": { "type": "string", KEYWORD: "Region" },
            "again": { "type": "string", KEYWORD: "region" },
            "amount": { "type": "number", KEYWORD: "Amount" },
            "lines": { "type": "array", "items": { "type": "string", KEYWORD: "Line" } },
            "spaced": { "type": "string", KEYWORD: "A B" },
            "maybe": { "type": ["integer", "null"], KEYWORD: "Maybe" },
            "nested": { "type": "object", "properties": { "flag": { "type": "boolean", KEYWORD: "Flag" } } },
        }}));
        let problems = check(&input);
        assert_eq!(problems.len(), 4, "{problems:#?}");
        for says in ["used twice", "needs a string, an integer", "only allowed on a property", "HTTP token"] {
            assert!(problems.iter().any(|p| p.contains(says)), "{says}: {problems:#?}");
        }
    }
}
