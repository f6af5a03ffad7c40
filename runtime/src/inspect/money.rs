//! Where a tool's types hold toolgate's [`Money`](crate::types::Money): the audit judges
//! what moves money by the types a tool takes and returns, never by its name.
//!
//! `Money`'s schema carries the marker the argument check runs it by (`"x-toolgate":
//! "money"`), which the schemas clients are shown no longer have: so the audit reads the
//! handler's own schemas, and walks them as a validator would — properties, array items,
//! `anyOf`/`oneOf`/`allOf` (an `Option<Money>`), and `$ref`s into `$defs` (each followed
//! once per path, so a recursive type ends).

use serde_json::{Map, Value};

use crate::action::ActionRegistration;
use crate::types::check::MARKER;

/// The fields of a tool's input and of its result that hold an amount of money.
#[derive(Debug, Default)]
pub(super) struct MoneyFields {
    /// In the input: amounts the caller chooses (`amount`, `lines[].price`).
    pub(super) taken: Vec<String>,
    /// In the result: amounts the call reports (`fine`; `result` for a result that is one).
    pub(super) returned: Vec<String>,
}

impl MoneyFields {
    /// Where `registration`'s input and output schemas hold `Money`.
    pub(super) fn of(registration: &ActionRegistration) -> Self {
        let taken = money_fields(&(registration.handler.input_schema)().to_value());
        let returned = money_fields(&(registration.handler.output_schema)().to_value());
        Self { taken, returned }
    }
}

/// The fields of `schema` that hold `Money`, in the order found, each once: a dotted path
/// with `[]` for an array's items (`lines[].price`); `result` when the whole value is one.
pub(super) fn money_fields(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(schema, schema, "", &mut Vec::new(), &mut found);
    found
}

/// The keywords whose value is one subschema at the same place in the value.
const IN_PLACE: [&str; 5] = ["not", "if", "then", "else", "contentSchema"];
/// The keywords whose value is a list of subschemas at the same place.
const IN_PLACE_LISTS: [&str; 3] = ["allOf", "anyOf", "oneOf"];
/// The keywords whose subschemas describe an array's items.
const ITEMS: [&str; 5] = ["items", "prefixItems", "additionalItems", "unevaluatedItems", "contains"];
/// The keywords whose subschemas describe an object's values under names it does not list.
const OTHER_VALUES: [&str; 3] = ["additionalProperties", "unevaluatedProperties", "patternProperties"];

fn walk<'a>(root: &'a Value, schema: &'a Value, at: &str, following: &mut Vec<&'a str>, found: &mut Vec<String>) {
    let Value::Object(schema) = schema else { return };
    if schema.get(MARKER).and_then(Value::as_str) == Some("money") {
        let field = if at.is_empty() { "result".to_string() } else { at.to_string() };
        if !found.contains(&field) {
            found.push(field);
        }
        return;
    }
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str)
        && !following.contains(&reference)
        && let Some(target) = resolve(root, reference)
    {
        following.push(reference);
        walk(root, target, at, following, found);
        following.pop();
    }
    for keyword in IN_PLACE {
        if let Some(sub) = schema.get(keyword) {
            walk(root, sub, at, following, found);
        }
    }
    for keyword in IN_PLACE_LISTS {
        for sub in schema.get(keyword).and_then(Value::as_array).into_iter().flatten() {
            walk(root, sub, at, following, found);
        }
    }
    for (name, sub) in named(schema, "properties") {
        walk(root, sub, &join(at, name), following, found);
    }
    for (_, sub) in named(schema, "dependentSchemas") {
        walk(root, sub, at, following, found);
    }
    // A result that is a list is served as `result` (a structured result is an object).
    let items = if at.is_empty() { "result[]".to_string() } else { format!("{at}[]") };
    for keyword in ITEMS {
        match schema.get(keyword) {
            Some(Value::Array(subs)) => subs.iter().for_each(|sub| walk(root, sub, &items, following, found)),
            Some(sub) => walk(root, sub, &items, following, found),
            None => {}
        }
    }
    let other = join(at, "*");
    for keyword in OTHER_VALUES {
        match keyword {
            "patternProperties" => {
                named(schema, keyword).for_each(|(_, sub)| walk(root, sub, &other, following, found));
            }
            _ => {
                if let Some(sub) = schema.get(keyword) {
                    walk(root, sub, &other, following, found);
                }
            }
        }
    }
}

/// The subschemas of a keyword whose value maps names to schemas (`properties`).
fn named<'a>(schema: &'a Map<String, Value>, keyword: &str) -> impl Iterator<Item = (&'a String, &'a Value)> {
    schema.get(keyword).and_then(Value::as_object).into_iter().flatten()
}

fn join(at: &str, name: &str) -> String {
    if at.is_empty() { name.to_string() } else { format!("{at}.{name}") }
}

/// The schema a local `$ref` (`#/$defs/Money`, `#/definitions/Money`) points at, its
/// pointer read as written and, failing that, percent-decoded (a URI fragment).
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    root.pointer(pointer).or_else(|| root.pointer(&percent_decoded(pointer)?))
}

fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use schemars::{JsonSchema, schema_for};
    use serde_json::json;

    use super::*;
    use crate::types::Money;

    #[derive(JsonSchema)]
    #[allow(dead_code)] // only its schema is read
    struct Order {
        total: Money,
        tip: Option<Money>,
        lines: Vec<Line>,
        by_currency: std::collections::BTreeMap<String, Money>,
        note: String,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)] // only its schema is read
    struct Line {
        price: Money,
        parts: Vec<Line>,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)] // only its schema is read
    struct NoMoney {
        /// Looks like money, is not toolgate's `Money`.
        amount: u64,
        currency: String,
    }

    #[test]
    fn finds_money_behind_refs_options_lists_maps_and_recursion() {
        let schema = schema_for!(Order).to_value();
        // `Line` inside a `Line` is not walked again: its price was found the first time.
        assert_eq!(money_fields(&schema), ["total", "tip", "lines[].price", "by_currency.*"], "{schema:#}");
    }

    #[test]
    fn a_result_that_is_money_is_the_result_and_look_alikes_are_not_money() {
        assert_eq!(money_fields(&schema_for!(Money).to_value()), ["result"]);
        assert_eq!(money_fields(&schema_for!(Vec<Money>).to_value()), ["result[]"]);
        assert!(money_fields(&schema_for!(NoMoney).to_value()).is_empty());
        // A property named like the marker is a field, not the marker.
        let field_named_so = json!({ "type": "object", "properties": { MARKER: { "type": "string" } } });
        assert!(money_fields(&field_named_so).is_empty());
    }

    #[test]
    fn follows_percent_encoded_and_draft_7_references() {
        let money = json!({ "type": "object", MARKER: "money" });
        let schema = json!({
            "properties": {
                "a": { "$ref": "#/definitions/Price%20Tag" },
                "b": { "$ref": "#/$defs/Cost" },
                "c": { "$ref": "#/$defs/Missing" },
            },
            "definitions": { "Price Tag": money },
            "$defs": { "Cost": money },
        });
        assert_eq!(money_fields(&schema), ["a", "b"]);
    }
}
