//! One registered tool, checked against its machine, with its MCP definitions built once.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{JsonObject, Tool};
use serde_json::{Value, json};

use super::StartupProblem;
use crate::action::ActionRegistration;
use crate::fsm::Machine;

/// A tool ready to serve: its registration, its machine, and its MCP definitions.
#[derive(Debug)]
pub(crate) struct ToolEntry {
    pub(crate) registration: &'static ActionRegistration,
    /// The machine that gates the tool (bound tools) or whose state its results report
    /// (unbound tools of a domain that has a machine).
    pub(crate) machine: Option<Arc<Machine>>,
    /// The definition with the full description.
    pub(crate) tool: Tool,
    /// The definition shown while the machine is in its initial state, if it differs.
    pub(crate) compact: Option<Tool>,
    /// Tools whose success leads to a state where this one is allowed.
    pub(crate) unlocked_by: Vec<String>,
}

/// The result field toolgate adds: the tool's machine state after the call.
pub(crate) const STATE_FIELD: &str = "state";

impl ToolEntry {
    pub(crate) fn new(
        registration: &'static ActionRegistration,
        machines: &BTreeMap<String, Arc<Machine>>,
    ) -> Result<Self, Vec<StartupProblem>> {
        let name = registration.name;
        let location = registration.location;
        let mut problems = Vec::new();
        let machine = machines.get(registration.machine).cloned();
        let is_bound = !registration.bind_states.is_empty();
        match &machine {
            None if is_bound => problems.push(StartupProblem::UnknownMachine {
                tool: name.to_string(),
                machine: registration.machine.to_string(),
                known: machines.keys().cloned().collect(),
                location,
            }),
            Some(m) if is_bound => problems.extend(
                m.spec()
                    .check_binding(registration.bind_states, registration.transition)
                    .into_iter()
                    .map(|error| StartupProblem::Binding { tool: name.to_string(), error, location }),
            ),
            _ => {}
        }
        let schema_problem = |problem: String| StartupProblem::Schema { tool: name.to_string(), problem, location };

        let input_schema = object_schema(registration.handler.input_schema().to_value());
        if input_schema.is_none() {
            problems.push(schema_problem(
                "the input type's JSON Schema must be an object (a struct with named fields)".into(),
            ));
        }
        let mut output_schema = object_schema(registration.handler.output_schema().to_value());
        match (&mut output_schema, &machine) {
            (None, _) => problems.push(schema_problem(
                "the output type's JSON Schema must be an object (a struct with named fields); MCP structuredContent is an object".into(),
            )),
            (Some(schema), Some(machine)) => {
                if let Err(problem) = add_state_field(schema, machine) {
                    problems.push(schema_problem(problem));
                }
            }
            (Some(_), None) => {}
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let (input_schema, output_schema) = (Arc::new(input_schema.unwrap_or_default()), output_schema.map(Arc::new));
        let define = |description: &'static str| {
            let mut tool = Tool::new(name, description, input_schema.clone());
            tool.output_schema = output_schema.clone();
            tool
        };
        Ok(Self {
            registration,
            tool: define(registration.description),
            compact: registration.compact.filter(|_| machine.is_some()).map(define),
            machine,
            unlocked_by: Vec::new(),
        })
    }

    /// The other tools of the same machine whose transition leads into one of this
    /// tool's bound states.
    pub(crate) fn find_unlockers(&self, tools: &[ToolEntry]) -> Vec<String> {
        let Some(machine) = &self.machine else {
            return Vec::new();
        };
        let targets = self.registration.bind_states;
        tools
            .iter()
            .filter(|other| other.registration.name != self.registration.name)
            .filter(|other| other.machine.as_ref().is_some_and(|m| m.id() == machine.id()))
            .filter(|other| {
                let Some(event) = other.registration.transition else {
                    return false;
                };
                other
                    .registration
                    .bind_states
                    .iter()
                    .filter_map(|from| machine.target(from, event))
                    .any(|to| targets.contains(&to))
            })
            .map(|other| other.registration.name.to_string())
            .collect()
    }
}

fn object_schema(schema: Value) -> Option<JsonObject> {
    match schema {
        Value::Object(obj) if obj.get("type") == Some(&json!("object")) => Some(obj),
        _ => None,
    }
}

/// Declares the `state` field toolgate adds to every result of a machine's tool.
fn add_state_field(schema: &mut JsonObject, machine: &Machine) -> Result<(), String> {
    let properties = schema.entry("properties").or_insert_with(|| json!({}));
    let Some(properties) = properties.as_object_mut() else {
        return Err("the output schema's `properties` is not an object".into());
    };
    if properties.contains_key(STATE_FIELD) {
        return Err(format!(
            "the output type has a field `{STATE_FIELD}`, which toolgate fills with the `{}` machine's state after the call; rename it",
            machine.id()
        ));
    }
    let states: Vec<&str> = machine.spec().states.iter().map(|s| s.name.as_str()).collect();
    properties.insert(
        STATE_FIELD.into(),
        json!({
            "type": "string",
            "enum": states,
            "description": format!("The `{}` workflow's state after this call.", machine.id()),
        }),
    );
    let required = schema.entry("required").or_insert_with(|| json!([]));
    if let Some(required) = required.as_array_mut() {
        required.push(json!(STATE_FIELD));
    }
    Ok(())
}
