//! One served tool — an `#[action]` or the generated `switch_domain` — checked against its
//! machine, with its MCP definitions built once.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{JsonObject, Tool};
use serde_json::{Value, json};

use super::StartupProblem;
use super::schema::{Position, add_owned_property};
use crate::action::ActionRegistration;
use crate::domain::{IntentLock, field, switch::SWITCH_DOMAIN};
use crate::fsm::Machine;

/// A tool ready to serve: what it is, its machine, and its MCP definitions.
#[derive(Debug)]
pub(crate) struct ToolEntry {
    pub(crate) name: &'static str,
    /// The intent domain; `None` for global tools.
    pub(crate) domain: Option<&'static str>,
    pub(crate) kind: ToolKind,
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

/// What runs when the tool is called.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ToolKind {
    /// A user's `#[action]`.
    Action(&'static ActionRegistration),
    /// The generated `switch_domain`.
    SwitchDomain,
}

/// The result field toolgate adds: the tool's machine state after the call.
pub(crate) const STATE_FIELD: &str = "state";

impl ToolEntry {
    /// The states the tool is bound to (empty: always available).
    pub(crate) fn bind_states(&self) -> &'static [&'static str] {
        match self.kind {
            ToolKind::Action(registration) => registration.bind_states,
            ToolKind::SwitchDomain => &[],
        }
    }

    /// The event a successful call fires.
    pub(crate) fn transition(&self) -> Option<&'static str> {
        match self.kind {
            ToolKind::Action(registration) => registration.transition,
            ToolKind::SwitchDomain => None,
        }
    }

    /// The generated `switch_domain`.
    pub(crate) fn switch_domain(lock: &IntentLock) -> Self {
        Self {
            name: SWITCH_DOMAIN,
            domain: None,
            kind: ToolKind::SwitchDomain,
            machine: None,
            tool: lock.switch_tool(),
            compact: None,
            unlocked_by: Vec::new(),
        }
    }

    pub(crate) fn new(
        registration: &'static ActionRegistration,
        machines: &BTreeMap<String, Arc<Machine>>,
    ) -> Result<Self, Vec<StartupProblem>> {
        let name = registration.name;
        let location = registration.location;
        let mut problems = Vec::new();
        let machine_id = registration.machine.or(registration.domain);
        let machine = machine_id.and_then(|id| machines.get(id)).cloned();
        let is_bound = !registration.bind_states.is_empty();
        match &machine {
            None if is_bound => problems.push(StartupProblem::UnknownMachine {
                tool: name.to_string(),
                machine: machine_id.unwrap_or_default().to_string(),
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
        let mut schema_problem = |problem: String| {
            problems.push(StartupProblem::Schema { tool: name.to_string(), problem, location });
        };

        let mut input_schema = object_schema(registration.handler.input_schema().to_value());
        match (&mut input_schema, registration.domain) {
            (None, _) => {
                schema_problem("the input type's JSON Schema must be an object (a struct with named fields)".into())
            }
            (Some(schema), Some(domain)) => {
                if let Err(problem) = field::add_to_input_schema(schema, domain) {
                    schema_problem(problem);
                }
            }
            (Some(_), None) => {}
        }
        let mut output_schema = object_schema(registration.handler.output_schema().to_value());
        match &mut output_schema {
            None => schema_problem(
                "the output type's JSON Schema must be an object (a struct with named fields); MCP structuredContent is an object".into(),
            ),
            Some(schema) => {
                let added = field::add_to_output_schema(schema, registration.domain)
                    .and_then(|()| machine.as_deref().map_or(Ok(()), |m| add_state_field(schema, m)));
                if let Err(problem) = added {
                    schema_problem(problem);
                }
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let (input_schema, output_schema) = (Arc::new(input_schema.unwrap_or_default()), output_schema.map(Arc::new));
        let define = |description: String| {
            let mut tool = Tool::new(name, description, input_schema.clone());
            tool.output_schema = output_schema.clone();
            tool
        };
        let description = match registration.not_for {
            Some(not_for) => format!("{}\n\nNot for: {}.", registration.description, not_for.trim_end_matches('.')),
            None => registration.description.to_string(),
        };
        Ok(Self {
            name,
            domain: registration.domain,
            kind: ToolKind::Action(registration),
            tool: define(description),
            compact: registration.compact.filter(|_| machine.is_some()).map(|c| define(c.to_string())),
            machine,
            unlocked_by: Vec::new(),
        })
    }

    /// The other tools of the same machine whose transition leads into one of this
    /// tool's bound states.
    pub(crate) fn find_unlockers(&self, tools: &[ToolEntry]) -> Vec<String> {
        let Some(machine) = &self.machine else { return Vec::new() };
        let targets = self.bind_states();
        tools
            .iter()
            .filter(|other| other.name != self.name)
            .filter(|other| other.machine.as_ref().is_some_and(|m| m.id() == machine.id()))
            .filter(|other| {
                let Some(event) = other.transition() else { return false };
                other
                    .bind_states()
                    .iter()
                    .filter_map(|from| machine.target(from, event))
                    .any(|to| targets.contains(&to))
            })
            .map(|other| other.name.to_string())
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
    let states: Vec<&str> = machine.spec().states.iter().map(|s| s.name.as_str()).collect();
    let property = json!({
        "type": "string",
        "enum": states,
        "description": format!("The `{}` workflow's state after this call.", machine.id()),
    });
    let purpose = format!("the `{}` machine's state after the call", machine.id());
    add_owned_property(schema, STATE_FIELD, property, Position::Last, "output", &purpose)
}
