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
                let mut branch = Map::new();
                branch.insert("target".into(), Value::String(transition.target.clone()));
                if let Some(guard) = &transition.guard {
                    branch.insert("guard".into(), Value::String(guard.clone()));
                }
                if transition.reenter {
                    branch.insert("reenter".into(), Value::Bool(true));
                }
                // The short form, where the target is all there is.
                let branch = match branch.len() {
                    1 => Value::String(transition.target.clone()),
                    _ => Value::Object(branch),
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
        for (key, effects) in [("entry", &state.entry), ("exit", &state.exit)] {
            if !effects.is_empty() {
                node.insert(key.into(), json!(effects));
            }
        }
        states.insert(state.name.clone(), Value::Object(node));
    }
    let mut out = json!({ "id": machine.id(), "initial": machine.initial(), "states": states });
    if machine.key().is_some() || machine.is_owned() {
        let mut toolgate = json!({ "key": machine.key(), "tenantScoped": machine.is_tenant_scoped() });
        if machine.is_principal_owned() {
            toolgate["principalOwned"] = Value::Bool(true);
        }
        out["meta"] = json!({ "toolgate": toolgate });
    }
    out
}

/// Every machine of `registry`, by id.
pub fn export_xstate(registry: &Registry) -> Value {
    Value::Object(registry.machines().map(|m| (m.id().to_string(), machine_json(m))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_and_delays_load_and_export_round_trips() {
        let json = r#"{
            "id": "quote", "initial": "quoted", "meta": {"toolgate": {"key": "quote_id", "tenantScoped": false}},
            "states": {
                "quoted": {
                    "on": { "REVIEW": [{ "target": "booked", "guard": "small_amount" }, { "target": "review" }] },
                    "after": { "900000": "expired", "PT1H": "review" }
                },
                "review": {
                    "on": {
                        "BOOK": { "target": "booked", "guard": { "type": "approved" } },
                        "RECHECK": { "target": "review", "reenter": true }
                    },
                    "after": { "PT10M": "expired" }
                },
                "booked": { "type": "final", "entry": "confirm_booking" },
                "expired": { "type": "final", "entry": ["release_hold", { "type": "tell_owner" }] }
            }
        }"#;
        let machine = crate::Machine::from_xstate_json(json).unwrap();
        assert_eq!(machine.key(), Some("quote_id"));
        assert_eq!(machine.spec().guards(), ["small_amount", "approved"]);
        assert_eq!(
            machine.spec().first_delayed("quoted").map(|d| (d.after_ms, d.target.as_str())),
            Some((900_000, "expired"))
        );
        assert!(machine.spec().branches("review", "RECHECK").all(|t| t.reenter));
        let expired = machine.spec().states.iter().find(|s| s.name == "expired").unwrap();
        assert_eq!(expired.entry, ["release_hold", "tell_owner"]);
        let exported = machine_json(&machine);
        assert_eq!(exported["states"]["review"]["on"]["RECHECK"], json!({ "target": "review", "reenter": true }));
        let again = crate::Machine::from_xstate_json(&exported.to_string()).unwrap();
        assert_eq!(again.spec(), machine.spec());
    }
}
