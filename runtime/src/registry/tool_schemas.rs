//! What toolgate adds to a tool's schemas: `domain`, the handle and the confirmation's
//! fields on the input; on the output, the result fields (`state`, `next`,
//! `next_after_switch`) and the wrapping of an output that is not an object.

use std::collections::BTreeSet;

use rmcp::model::JsonObject;
use serde_json::{Value, json};

use crate::domain::field;
use crate::flow::field as flow_field;
use crate::fsm::Machine;
use crate::schema::{Position, Presence, add_owned_property};

/// The result field toolgate adds: the tool's machine state after the call.
pub(crate) const STATE_FIELD: &str = "state";

/// The result field toolgate adds to every result of a machine's tool, success or refusal:
/// the tools callable now on the same instance (or flow), so a model that sees every tool
/// (MCP 2026-07-28) learns its legal moves from the answers it reads.
pub(crate) const NEXT_FIELD: &str = "next";

/// The result field toolgate adds beside `next` when the intent lock leaves tools out of
/// it: the tools callable on the same instance (or flow) in another domain, by domain, so
/// a model calls `switch_domain` before them rather than after a `DOMAIN_MISMATCH`.
pub(crate) const NEXT_AFTER_SWITCH_FIELD: &str = "next_after_switch";

/// The field a non-object output is wrapped in.
pub(crate) const OUTPUT_RESULT_FIELD: &str = "result";

/// The output schema as an object, which MCP's `structuredContent` is, and whether the
/// output was wrapped to make it one: a `String`, a number, a list or an enum is the
/// result's `result` field (`{"result": "…"}`, its definitions kept at the root).
pub(super) fn output_schema(schema: schemars::Schema) -> (Option<JsonObject>, bool) {
    match schema.to_value() {
        Value::Object(obj) if obj.get("type") == Some(&json!("object")) => (Some(obj), false),
        Value::Object(mut scalar) => {
            let mut wrapped = JsonObject::new();
            for root in ["$schema", "$defs"] {
                if let Some(value) = scalar.shift_remove(root) {
                    wrapped.insert(root.into(), value);
                }
            }
            wrapped.insert("type".into(), "object".into());
            wrapped.insert("properties".into(), json!({ OUTPUT_RESULT_FIELD: scalar }));
            wrapped.insert("required".into(), json!([OUTPUT_RESULT_FIELD]));
            (Some(wrapped), true)
        }
        // `true` (any value): wrapped as such.
        other => (Some(object(json!({ "type": "object", "properties": { OUTPUT_RESULT_FIELD: other } }))), true),
    }
}

/// The fields toolgate adds to a tool's schemas: `domain`, `state`, the handle.
pub(super) struct Owned<'a> {
    pub(super) domain: Option<&'static str>,
    pub(super) machine: Option<&'a Machine>,
    pub(super) needs_flow: bool,
    /// `confirm`: the input takes the confirmation's fields.
    pub(super) confirmed: bool,
    /// The name of the handle argument.
    pub(super) handle_argument: &'a str,
    /// The machines with tools in several domains, whose results may name
    /// `next_after_switch`.
    pub(super) cross_domain: &'a BTreeSet<String>,
}

impl Owned<'_> {
    pub(super) fn add_to_input(&self, schema: &mut JsonObject) -> Result<(), String> {
        if let Some(domain) = self.domain {
            field::add_to_input_schema(schema, domain)?;
        }
        if self.needs_flow {
            flow_field::add_to_input_schema(schema, self.handle_argument)?;
        }
        if self.confirmed {
            crate::confirm::add_to_input_schema(schema)?;
        }
        Ok(())
    }

    pub(super) fn add_to_output(&self, schema: &mut JsonObject) -> Result<(), String> {
        field::add_to_output_schema(schema, self.domain)?;
        if let Some(machine) = self.machine {
            add_machine_fields(schema, machine, self.cross_domain.contains(machine.id()))?;
        }
        if self.needs_flow {
            flow_field::add_to_output_schema(schema, self.handle_argument)?;
        }
        Ok(())
    }
}

/// Declares the fields toolgate adds to every result of a machine's tool: its `state`
/// after the call, and the tools callable `next` on the same instance or flow — and,
/// for a machine with tools in several domains (`cross_domain`), those callable after a
/// `switch_domain` (only there: every byte of an output schema costs context).
pub(super) fn add_machine_fields(schema: &mut JsonObject, machine: &Machine, cross_domain: bool) -> Result<(), String> {
    let states: Vec<&str> = machine.spec().states.iter().map(|s| s.name.as_str()).collect();
    let property = json!({ "type": "string", "enum": states, "description": "The state after this call." });
    let purpose = format!("the `{}` machine's state after the call", machine.id());
    add_owned_property(schema, STATE_FIELD, property, Position::Last, Presence::Required, "output", &purpose)?;
    // Optional: a replayed result kept before `next` existed has none.
    let next =
        json!({ "type": "array", "items": { "type": "string" }, "description": "The tools callable now on it." });
    let purpose = "the tools callable next";
    add_owned_property(schema, NEXT_FIELD, next, Position::Last, Presence::Optional, "output", purpose)?;
    if !cross_domain {
        return Ok(());
    }
    let after_switch = json!({
        "type": "object",
        "additionalProperties": { "type": "array", "items": { "type": "string" } },
        "description": "Tools callable on it in another domain, by domain: call `switch_domain` to that domain first."
    });
    let purpose = "the tools callable next in another domain";
    add_owned_property(
        schema,
        NEXT_AFTER_SWITCH_FIELD,
        after_switch,
        Position::Last,
        Presence::Optional,
        "output",
        purpose,
    )
}

/// A JSON object (what `Value::Object` holds), from a value known to be one.
pub(super) fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}
