//! Machines as XState v5 JSON, which XState and Stately's tools load, and which
//! [`Machine::from_xstate_json`](crate::Machine::from_xstate_json) reads back.

use serde_json::{Map, Value, json};

use crate::fsm::Machine;
use crate::registry::Registry;

/// One machine as XState v5 JSON: `{"id", "initial", "states": {…}}`, with toolgate's
/// key and tenant scope in `meta` (which XState keeps and ignores).
pub fn machine_json(machine: &Machine) -> Value {
    let spec = machine.spec();
    let mut states = Map::new();
    for state in &spec.states {
        let mut node = Map::new();
        if state.is_final {
            node.insert("type".into(), json!("final"));
        }
        if !state.on.is_empty() {
            let mut on = Map::new();
            for transition in &state.on {
                let branch = match &transition.guard {
                    Some(guard) => json!({ "target": transition.target, "guard": guard }),
                    None => Value::String(transition.target.clone()),
                };
                match on.get_mut(&transition.event) {
                    // A second branch of the event: XState's array form.
                    Some(Value::Array(branches)) => branches.push(branch),
                    Some(first) => *first = Value::Array(vec![first.take(), branch]),
                    None => {
                        on.insert(transition.event.clone(), branch);
                    }
                }
            }
            node.insert("on".into(), Value::Object(on));
        }
        if !state.after.is_empty() {
            // XState's delays are milliseconds.
            let after: Map<String, Value> =
                state.after.iter().map(|d| (d.after_ms.to_string(), Value::String(d.target.clone()))).collect();
            node.insert("after".into(), Value::Object(after));
        }
        states.insert(state.name.clone(), Value::Object(node));
    }
    let mut out = json!({ "id": machine.id(), "initial": machine.initial(), "states": states });
    if machine.key().is_some() || machine.is_tenant_scoped() {
        out["meta"] = json!({ "toolgate": { "key": machine.key(), "tenantScoped": machine.is_tenant_scoped() } });
    }
    out
}

/// Every machine of `registry`, by id.
pub fn export_xstate(registry: &Registry) -> Value {
    Value::Object(registry.machines().map(|m| (m.id().to_string(), machine_json(m))).collect())
}
