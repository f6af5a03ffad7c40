//! One served tool — an `#[action]` or the generated `switch_domain` — checked against its
//! machine, with its MCP definitions built once.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{JsonObject, Tool};
use serde_json::{Value, json};

use super::StartupProblem;
use super::instance_key::InstanceKey;
use crate::action::ActionRegistration;
use crate::domain::{IntentLock, field, switch::SWITCH_DOMAIN};
use crate::flow::field as flow_field;
use crate::fsm::{BindingError, Machine};
use crate::schema::{Position, Presence, add_owned_property};

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
    /// How the call names its machine's instance, for a keyed machine.
    pub(crate) instance: Option<InstanceKey>,
    /// Whether the call runs in a flow (a conversation machine, or the active domain):
    /// its schemas then carry the optional handle argument.
    pub(crate) needs_flow: bool,
    /// Tools whose success leads to a state where this one is allowed.
    pub(crate) unlocked_by: Vec<String>,
}

/// What every tool entry is built against.
pub(crate) struct Context<'a> {
    pub(crate) machines: &'a BTreeMap<String, Arc<Machine>>,
    pub(crate) lock: &'a IntentLock,
    /// The name of the handle argument.
    pub(crate) handle_argument: &'a str,
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
    pub(crate) fn switch_domain(lock: &IntentLock, handle_argument: &str) -> Self {
        let mut tool = lock.switch_tool();
        let mut input = (*tool.input_schema).clone();
        let mut output = tool.output_schema.as_deref().cloned().unwrap_or_default();
        // The generated schemas have no property of that name: adding cannot fail.
        let _ = flow_field::add_to_input_schema(&mut input, handle_argument);
        let _ = flow_field::add_to_output_schema(&mut output, handle_argument);
        tool.input_schema = Arc::new(input);
        tool.output_schema = Some(Arc::new(output));
        Self {
            name: SWITCH_DOMAIN,
            domain: None,
            kind: ToolKind::SwitchDomain,
            machine: None,
            tool,
            compact: None,
            instance: None,
            needs_flow: true,
            unlocked_by: Vec::new(),
        }
    }

    pub(crate) fn new(
        registration: &'static ActionRegistration,
        context: &Context,
    ) -> Result<Self, Vec<StartupProblem>> {
        let name = registration.name;
        let location = registration.location;
        let mut problems = Vec::new();
        // Defaults apply here, once: a domain's tools use the machine named like the domain.
        let machine_id = registration.machine.or(registration.domain);
        let mut machine = machine_id.and_then(|id| context.machines.get(id)).cloned();
        let is_bound = !registration.bind_states.is_empty();
        let binding_problem = |error| StartupProblem::Binding { tool: name.to_string(), error, location };
        match &machine {
            None if is_bound => problems.push(StartupProblem::UnknownMachine {
                tool: name.to_string(),
                machine: machine_id.unwrap_or_default().to_string(),
                known: context.machines.keys().cloned().collect(),
                location,
            }),
            Some(m) if is_bound => problems.extend(
                m.spec()
                    .check_binding(registration.bind_states, registration.transition)
                    .into_iter()
                    .map(binding_problem),
            ),
            _ => {}
        }
        let schema_problem = |problem: String| StartupProblem::Schema { tool: name.to_string(), problem, location };

        let mut input_schema = object_schema((registration.handler.input_schema)().to_value());
        if input_schema.is_none() {
            problems.push(schema_problem(
                "the input type's JSON Schema must be an object (a struct with named fields)".into(),
            ));
        }
        let mut instance = None;
        if let (Some(schema), Some(key)) = (&input_schema, machine.as_deref().and_then(Machine::key)) {
            match InstanceKey::find(schema, key) {
                Ok(Some(found)) => instance = Some(found),
                // An unbound tool that names no instance (a list, a search) reports no state.
                Ok(None) if !is_bound => machine = None,
                Ok(None) => {
                    problems.push(binding_problem(key_missing(machine.as_deref(), "its input has no such field")))
                }
                Err(problem) => problems.push(binding_problem(key_missing(machine.as_deref(), &problem))),
            }
        }
        // The active domain lives in the flow, and every result (global tools' too) echoes it.
        let needs_flow = context.lock.uses_flow() || machine.as_deref().is_some_and(|m| m.key().is_none());
        if let Some(schema) = &mut input_schema {
            let mut added = registration.domain.map_or(Ok(()), |domain| field::add_to_input_schema(schema, domain));
            if needs_flow {
                added = added.and_then(|()| flow_field::add_to_input_schema(schema, context.handle_argument));
            }
            if let Err(problem) = added {
                problems.push(schema_problem(problem));
            }
        }
        let mut output_schema = object_schema((registration.handler.output_schema)().to_value());
        match &mut output_schema {
            None => problems.push(schema_problem(
                "the output type's JSON Schema must be an object (a struct with named fields); MCP structuredContent is an object".into(),
            )),
            Some(schema) => {
                let mut added = field::add_to_output_schema(schema, registration.domain)
                    .and_then(|()| machine.as_deref().map_or(Ok(()), |m| add_state_field(schema, m)));
                if needs_flow {
                    added = added.and_then(|()| flow_field::add_to_output_schema(schema, context.handle_argument));
                }
                if let Err(problem) = added {
                    problems.push(schema_problem(problem));
                }
            }
        }
        if registration.compact.is_some() && machine.is_none() {
            problems.push(StartupProblem::CompactWithoutMachine { tool: name.to_string(), location });
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
        let mut description = registration.description.to_string();
        if let Some(machine) = machine.as_deref().filter(|_| is_bound) {
            description.push_str("\n\n");
            description.push_str(&precondition(machine, registration.bind_states, registration.transition));
        }
        if let Some(not_for) = registration.not_for {
            description.push_str(&format!("\n\nNot for: {}.", not_for.trim_end_matches('.')));
        }
        Ok(Self {
            name,
            domain: registration.domain,
            kind: ToolKind::Action(registration),
            tool: define(description),
            compact: registration.compact.map(|c| define(c.to_string())),
            machine,
            instance,
            needs_flow,
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
    add_owned_property(schema, STATE_FIELD, property, Position::Last, Presence::Required, "output", &purpose)
}

fn key_missing(machine: Option<&Machine>, problem: &str) -> BindingError {
    BindingError::KeyMissing {
        machine: machine.map(|m| m.id().to_string()).unwrap_or_default(),
        key: machine.and_then(Machine::key).unwrap_or_default().to_string(),
        problem: problem.to_string(),
    }
}

/// When a bound tool is callable, in words, for its description: where the listing
/// cannot show it (sessionless clients, keyed instances other than the focus), the model
/// still reads it.
fn precondition(machine: &Machine, bind_states: &[&str], transition: Option<&str>) -> String {
    let subject = match machine.key() {
        Some(key) => format!("the `{}` named by `{key}`", machine.id()),
        None => format!("this conversation's `{}` workflow", machine.id()),
    };
    let mut text = format!("Only while {subject} is {}", either(bind_states));
    if let Some(event) = transition {
        let mut targets: Vec<&str> = bind_states.iter().filter_map(|from| machine.target(from, event)).collect();
        targets.dedup();
        text.push_str(&format!("; a successful call moves it to {}", either(&targets)));
    }
    text.push_str(". Otherwise the call is refused with FORBIDDEN and the tools that are allowed.");
    text
}

/// "`a`", "`a` or `b`", "`a`, `b` or `c`".
fn either(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}
