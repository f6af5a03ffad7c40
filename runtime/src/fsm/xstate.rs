//! The XState v5 JSON loader: the subset toolgate gates on (flat states, string,
//! `{ "target", "guard", "reenter" }` or array transitions, `after` delays in milliseconds or ISO-8601,
//! `type: "final"`, and toolgate's own `meta.toolgate` key and tenant scope). Anything
//! else that would change which transitions fire — nested or parallel states, guards on
//! delays, parameterized guards — is refused, never ignored.

use serde_json::{Map, Value};

use super::{Delayed, MachineError, MachineSpec, StateSpec, Transition};

/// Why an XState JSON machine could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum MachineLoadError {
    /// The text is not JSON.
    #[error("malformed XState JSON: {0}")]
    Syntax(#[from] serde_json::Error),
    /// The JSON does not have the shape of a machine; `key` is where it goes wrong.
    #[error("XState JSON: `{key}` {problem}")]
    Shape {
        /// The dotted path of the offending key (`states.review.on.APPROVE`).
        key: String,
        /// What is wrong there.
        problem: String,
    },
    /// The machine is well-formed JSON but breaks a machine rule.
    #[error("invalid machine: {}", join(.0))]
    Invalid(Vec<MachineError>),
}

fn join(errors: &[MachineError]) -> String {
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

fn shape(key: impl Into<String>, problem: impl Into<String>) -> MachineLoadError {
    MachineLoadError::Shape { key: key.into(), problem: problem.into() }
}

/// Keys XState allows that do not affect which transitions fire; they are accepted and
/// ignored so machines exported from XState tooling load unchanged.
const INERT_MACHINE_KEYS: &[&str] =
    &["$schema", "context", "description", "meta", "version", "predictableActionArguments"];
const INERT_STATE_KEYS: &[&str] = &["description", "meta", "tags", "output"];

pub(super) fn parse(json: &str) -> Result<MachineSpec, MachineLoadError> {
    let root: Value = serde_json::from_str(json)?;
    let root = root.as_object().ok_or_else(|| shape("(root)", "must be an object"))?;
    reject_unknown(root, "", &["id", "initial", "states"], INERT_MACHINE_KEYS)?;
    let id = string(root, "id", "id")?.ok_or_else(|| shape("id", "is missing"))?;
    let initial = string(root, "initial", "initial")?;
    let states = root
        .get("states")
        .ok_or_else(|| shape("states", "is missing"))?
        .as_object()
        .ok_or_else(|| shape("states", "must be an object of states"))?;
    let states = states.iter().map(|(name, state)| parse_state(name, state)).collect::<Result<_, _>>()?;
    // What toolgate's own export keeps in `meta` (which XState keeps and ignores).
    let toolgate = root.get("meta").and_then(|meta| meta.get("toolgate"));
    let key = match toolgate.and_then(|t| t.get("key")) {
        None | Some(Value::Null) => None,
        Some(Value::String(key)) => Some(key.clone()),
        Some(_) => return Err(shape("meta.toolgate.key", "must be a string")),
    };
    let flag = |name: &str| toolgate.and_then(|t| t.get(name)).and_then(Value::as_bool).unwrap_or(false);
    let (tenant_scoped, principal_owned) = (flag("tenantScoped"), flag("principalOwned"));
    Ok(MachineSpec { id, initial, key, tenant_scoped, principal_owned, mint: None, states })
}

fn parse_state(name: &str, state: &Value) -> Result<StateSpec, MachineLoadError> {
    let key = format!("states.{name}");
    let state = state.as_object().ok_or_else(|| shape(&key, "must be an object"))?;
    reject_unknown(state, &key, &["on", "after", "type", "entry", "exit"], INERT_STATE_KEYS)?;
    let is_final = match string(state, "type", &format!("{key}.type"))?.as_deref() {
        None | Some("atomic") => false,
        Some("final") => true,
        Some(other) => {
            return Err(shape(
                format!("{key}.type"),
                format!("is `{other}`; toolgate supports flat machines (`atomic` or `final` states)"),
            ));
        }
    };
    let mut on = Vec::new();
    if let Some(events) = state.get("on") {
        let events = events.as_object().ok_or_else(|| shape(format!("{key}.on"), "must be an object of events"))?;
        for (event, branches) in events {
            let path = format!("{key}.on.{event}");
            match branches {
                Value::Array(branches) => {
                    for (i, branch) in branches.iter().enumerate() {
                        let Branch { target, guard, reenter } = parse_branch(&format!("{path}.{i}"), branch, true)?;
                        on.push(Transition { event: event.clone(), target, guard, reenter });
                    }
                }
                branch => {
                    let Branch { target, guard, reenter } = parse_branch(&path, branch, true)?;
                    on.push(Transition { event: event.clone(), target, guard, reenter });
                }
            }
        }
    }
    let mut after = Vec::new();
    if let Some(delays) = state.get("after") {
        let delays = delays.as_object().ok_or_else(|| shape(format!("{key}.after"), "must be an object of delays"))?;
        for (delay, target) in delays {
            let path = format!("{key}.after.{delay}");
            // XState's milliseconds, or an ISO-8601 duration as `machine!` writes it.
            let after_ms = match delay.parse::<u64>() {
                Ok(ms) if ms > 0 => ms,
                _ => toolgate_machine::grammar::parse_iso_duration_ms(delay).map_err(|problem| {
                    shape(&path, format!("is not a delay: a number of milliseconds above zero or {problem}"))
                })?,
            };
            let Branch { target, .. } = parse_branch(&path, target, false)?;
            after.push(Delayed { after_ms, target });
        }
    }
    let entry = effects(state, &format!("{key}.entry"), "entry")?;
    let exit = effects(state, &format!("{key}.exit"), "exit")?;
    Ok(StateSpec { name: name.to_string(), is_final, on, after, entry, exit })
}

/// A state's `entry` or `exit` actions, by name: a string, or a list of strings and
/// `{ "type": "name" }` objects (XState v5's forms).
fn effects(state: &Map<String, Value>, path: &str, key: &str) -> Result<Vec<String>, MachineLoadError> {
    let named = |action: &Value| match action {
        Value::String(name) => Some(name.clone()),
        Value::Object(object) => object.get("type").and_then(Value::as_str).map(str::to_string),
        _ => None,
    };
    let problem = "must name effects: a string, or a list of strings or `{ \"type\": \"name\" }`";
    match state.get(key) {
        None => Ok(Vec::new()),
        Some(Value::Array(actions)) => actions.iter().map(|a| named(a).ok_or_else(|| shape(path, problem))).collect(),
        Some(action) => named(action).map(|name| vec![name]).ok_or_else(|| shape(path, problem)),
    }
}

/// One branch of an event, as a transition takes it.
struct Branch {
    target: String,
    guard: Option<String>,
    reenter: bool,
}

/// A transition's target, guard and `reenter`: `"approved"`, or `{ "target": "approved",
/// "guard": "small_amount", "reenter": true }` (the guard also as `{ "type": "small_amount"
/// }`), the last two where `guarded` (an event's transition, not a delay's).
fn parse_branch(key: &str, branch: &Value, guarded: bool) -> Result<Branch, MachineLoadError> {
    match branch {
        Value::String(target) => Ok(Branch { target: target.clone(), guard: None, reenter: false }),
        Value::Object(obj) => {
            let known: &[&str] = if guarded { &["target", "guard", "reenter"] } else { &["target"] };
            reject_unknown(obj, key, known, &["description", "actions", "meta"])?;
            let target = string(obj, "target", &format!("{key}.target"))?
                .ok_or_else(|| shape(format!("{key}.target"), "is missing"))?;
            let guard = match obj.get("guard") {
                None => None,
                Some(Value::String(guard)) => Some(guard.clone()),
                Some(Value::Object(guard)) if guard.len() == 1 => match guard.get("type") {
                    Some(Value::String(guard)) => Some(guard.clone()),
                    _ => return Err(shape(format!("{key}.guard"), "must be a guard's name or `{ \"type\": name }`")),
                },
                Some(_) => {
                    return Err(shape(
                        format!("{key}.guard"),
                        "must be a guard's name or `{ \"type\": name }` (toolgate's guards take no parameters)",
                    ));
                }
            };
            let reenter = match obj.get("reenter") {
                None => false,
                Some(Value::Bool(reenter)) => *reenter,
                Some(_) => return Err(shape(format!("{key}.reenter"), "must be `true` or `false`")),
            };
            Ok(Branch { target, guard, reenter })
        }
        _ => Err(shape(key, "must be a target state name or `{ \"target\": … }`")),
    }
}

fn string(obj: &Map<String, Value>, field: &str, key: &str) -> Result<Option<String>, MachineLoadError> {
    match obj.get(field) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(shape(key, "must be a string")),
    }
}

fn reject_unknown(
    obj: &Map<String, Value>,
    prefix: &str,
    known: &[&str],
    inert: &[&str],
) -> Result<(), MachineLoadError> {
    for key in obj.keys() {
        if known.contains(&key.as_str()) || inert.contains(&key.as_str()) {
            continue;
        }
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        return Err(shape(path, format!("is not supported (toolgate understands: {})", known.join(", "))));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::Machine;

    use super::*;

    const INVOICE: &str = r#"{
        "id": "invoice",
        "initial": "draft",
        "context": {},
        "states": {
            "draft": { "on": { "SUBMIT": "review" } },
            "review": { "on": { "APPROVE": { "target": "approved" }, "REJECT": "draft" } },
            "approved": { "on": { "DISCHARGE": "discharged" }, "description": "ready to pay" },
            "discharged": { "type": "final" }
        }
    }"#;

    #[test]
    fn loads_the_invoice_machine() {
        let m = Machine::from_xstate_json(INVOICE).unwrap();
        assert_eq!(m.id(), "invoice");
        assert_eq!(m.initial(), "draft");
        assert_eq!(m.target("review", "APPROVE"), Some("approved"));
        assert!(m.spec().state("discharged").unwrap().is_final);
    }

    #[test]
    fn malformed_json_is_a_syntax_error_with_position() {
        let err = Machine::from_xstate_json(r#"{"id": "invoice", "states": {"#).unwrap_err();
        assert!(matches!(err, MachineLoadError::Syntax(_)));
        assert!(err.to_string().starts_with("malformed XState JSON"), "{err}");
        assert!(err.to_string().contains("line 1"), "{err}");
    }

    #[test]
    fn an_unknown_target_names_the_key() {
        let err = Machine::from_xstate_json(&INVOICE.replace("\"discharged\" }", "\"dischargd\" }")).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("`states.approved.on.DISCHARGE` targets unknown state `dischargd`"), "{text}");
        assert!(text.contains("valid states: draft, review, approved, discharged"), "{text}");
    }

    #[test]
    fn shape_errors_name_the_key() {
        let cases = [
            (r#"[]"#, "`(root)` must be an object"),
            (r#"{"initial": "a", "states": {}}"#, "`id` is missing"),
            (r#"{"id": 3, "states": {}}"#, "`id` must be a string"),
            (r#"{"id": "m", "initial": "a"}"#, "`states` is missing"),
            (r#"{"id": "m", "initial": "a", "states": {"a": {"on": {"GO": 1}}}}"#, "`states.a.on.GO` must be a target"),
            (
                r#"{"id": "m", "initial": "a", "states": {"a": {"on": {"GO": {"target": "a", "guard": {"type": "g", "params": 1}}}}}}"#,
                "`states.a.on.GO.guard` must be a guard's name",
            ),
            (
                r#"{"id": "m", "initial": "a", "states": {"a": {"after": {"soon": "a"}}}}"#,
                "`states.a.after.soon` is not a delay",
            ),
            (
                r#"{"id": "m", "initial": "a", "states": {"a": {"after": {"1000": {"target": "a", "guard": "g"}}}}}"#,
                "`states.a.after.1000.guard` is not supported",
            ),
            (
                r#"{"id": "m", "initial": "a", "states": {"a": {"on": {"GO": {"target": "a", "reenter": "yes"}}}}}"#,
                "`states.a.on.GO.reenter` must be `true` or `false`",
            ),
            (r#"{"id": "m", "initial": "a", "states": {"a": {"type": "parallel"}}}"#, "`states.a.type` is `parallel`"),
            (r#"{"id": "m", "initial": "a", "states": {"a": {"states": {}}}}"#, "`states.a.states` is not supported"),
        ];
        for (json, expected) in cases {
            let err = Machine::from_xstate_json(json).unwrap_err().to_string();
            assert!(err.contains(expected), "{json}: {err}");
        }
    }

    #[test]
    fn rule_violations_are_all_reported() {
        let json = r#"{"id": "m", "states": {"a": {"type": "final", "on": {"GO": "b"}}}}"#;
        let MachineLoadError::Invalid(errors) = Machine::from_xstate_json(json).unwrap_err() else {
            panic!("expected rule violations");
        };
        assert!(errors.contains(&MachineError::MissingInitial { machine: "m".into() }));
        assert!(errors.iter().any(|e| matches!(e, MachineError::FinalWithTransitions { .. })));
        assert!(errors.iter().any(|e| matches!(e, MachineError::UnknownTarget { target, .. } if target == "b")));
    }
}
