//! An `#[action]`'s tool entry: checked against its machine (binding, key, context,
//! `creates`, idempotency key, rate limit, headers), its schemas completed with the
//! fields toolgate adds, its definitions built. Every problem is reported at once.

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{JsonObject, Tool};
use serde_json::{Value, json};

use super::instance_key::InstanceKey;
use super::startup_error::StartupProblem;
use super::tool_description::description;
use super::tool_entry::{Context, ToolEntry, ToolKind};
use super::tool_schemas::{Owned, object, output_schema};
use crate::action::{ActionRegistration, RatePer};
use crate::arguments::ArgumentCheck;
use crate::fsm::{BindingError, Machine};
use crate::schema::{admit_errors, drop_boilerplate, drop_examples, keep_standard_formats};
use crate::types::check::remove_markers;

impl ToolEntry {
    /// Checks `registration` against its machine and builds its definitions; every
    /// problem is reported at once.
    pub(crate) fn new(
        registration: &'static ActionRegistration,
        context: &Context,
    ) -> Result<Self, Vec<StartupProblem>> {
        let mut problems = Problems { registration, found: Vec::new() };
        let mut machine = machine_of(registration, context, &mut problems);
        let is_bound = !registration.bind_states.is_empty();
        let mut input = problems.object_schema((registration.handler.input_schema)(), "input");
        let (mut output, wraps_output) = output_schema((registration.handler.output_schema)());
        let instance =
            input.as_ref().and_then(|schema| instance_key(registration, context, &mut machine, schema, &mut problems));
        if let Some(key) = registration.idempotency_key {
            let has_field = input
                .as_ref()
                .and_then(|schema| schema.get("properties"))
                .and_then(Value::as_object)
                .is_some_and(|properties| properties.contains_key(key));
            if !has_field {
                problems.found.push(StartupProblem::IdempotencyKey {
                    tool: registration.name.to_string(),
                    key: key.to_string(),
                    location: registration.location,
                });
            }
        }
        // The active domain lives in the flow, and every result (global tools' too) echoes it.
        let needs_flow = context.lock.uses_flow() || machine.as_deref().is_some_and(|m| m.key().is_none());
        let owned = Owned {
            domain: registration.domain,
            machine: machine.as_deref(),
            needs_flow,
            confirmed: registration.confirm.is_some(),
            handle_argument: context.handle_argument,
            cross_domain: context.cross_domain,
        };
        if let Some(schema) = &mut input {
            problems.schema(owned.add_to_input(schema));
            if let (true, Some(key)) =
                (context.key_headers && instance.is_some(), machine.as_deref().and_then(Machine::key))
            {
                super::param_header::annotate_key(schema, key);
            }
            for problem in super::param_header::check(schema) {
                problems.found.push(StartupProblem::ParamHeader {
                    tool: registration.name.to_string(),
                    problem,
                    location: registration.location,
                });
            }
        }
        if let Some(schema) = &mut output {
            problems.schema(owned.add_to_output(schema));
        }
        if registration.rate_limit.is_some_and(|limit| limit.per == RatePer::Instance) && instance.is_none() {
            problems.found.push(StartupProblem::RateLimitPerInstance {
                tool: registration.name.to_string(),
                location: registration.location,
            });
        }
        if let Some(problem) = context_problem(registration, machine.as_deref(), context) {
            problems.found.push(StartupProblem::Context {
                tool: registration.name.to_string(),
                problem,
                location: registration.location,
            });
        }
        if registration.compact.is_some() && machine.is_none() {
            problems.found.push(StartupProblem::CompactWithoutMachine {
                tool: registration.name.to_string(),
                location: registration.location,
            });
        }
        if !problems.found.is_empty() {
            return Err(problems.found);
        }
        let mut input = Value::Object(input.unwrap_or_default());
        keep_standard_formats(&mut input);
        // The declared `domain` is the intent lock's to judge (DOMAIN_MISMATCH, with its
        // hint), so the check only asks that it be a string.
        let mut checked = input.clone();
        if !registration.allow_unknown_fields {
            // Refuse arguments the tool does not take (a typo the handler would ignore).
            // `unevaluated` rather than `additional`: it also sees flattened fields. Only
            // the check has it: the refusal says so, and every listed tool need not.
            checked["unevaluatedProperties"] = Value::Bool(false);
        }
        if let (Some(property), Some(domain)) = (checked.pointer_mut("/properties/domain"), registration.domain) {
            *property = json!({
                "type": "string",
                "description": format!("the string \"{domain}\": every call states the intent domain it belongs to"),
                "examples": [domain],
            });
        }
        // What clients see is standard JSON Schema; the server checks with the markers.
        remove_markers(&mut input);
        drop_boilerplate(&mut input);
        let arguments = match ArgumentCheck::new(checked) {
            Ok(check) => check,
            Err(problem) => {
                let (tool, location) = (registration.name.to_string(), registration.location);
                return Err(vec![StartupProblem::Schema { tool, problem, location }]);
            }
        };
        // An output with no field at all (a handler returning content blocks, on a tool
        // toolgate adds no field to) has no structured content to describe.
        let has_fields = |schema: &JsonObject| {
            schema.get("properties").and_then(Value::as_object).is_some_and(|properties| !properties.is_empty())
        };
        let output = output.filter(has_fields).map(|mut schema| {
            admit_errors(&mut schema);
            let mut schema = Value::Object(schema);
            keep_standard_formats(&mut schema);
            remove_markers(&mut schema);
            drop_examples(&mut schema);
            Arc::new(object(schema))
        });
        let input = Arc::new(object(input));
        let define = |description: String| {
            let mut tool = Tool::new(registration.name, description, input.clone());
            tool.output_schema = output.clone();
            tool
        };
        let limit_scope = registration.rate_limit.map(|limit| match (limit.per, &instance) {
            (RatePer::Client, _) => "per client".to_string(),
            (RatePer::Instance, Some(key)) => format!("per `{}`", key.field),
            (RatePer::Instance | RatePer::Tool, _) => "for everyone together".to_string(),
        });
        Ok(Self {
            name: registration.name,
            domain: registration.domain,
            kind: ToolKind::Action(registration),
            tool: define(description(registration, machine.as_deref().filter(|_| is_bound), limit_scope.as_deref())),
            compact: registration.compact.map(|c| define(c.to_string())),
            machine,
            instance,
            creates: registration.creates,
            writes_context: registration.contexts.iter().flatten().any(|c| c.writes),
            takes_transaction: registration
                .parameters
                .iter()
                .any(|ty| ty() == std::any::TypeId::of::<crate::action::Transaction>()),
            needs_flow,
            arguments: Some(arguments),
            unlocked_by: HashMap::new(),
            seen_with: Vec::new(),
            wraps_output,
        })
    }
}

/// The problems found with one action, each with its tool and location.
struct Problems {
    registration: &'static ActionRegistration,
    found: Vec<StartupProblem>,
}

impl Problems {
    fn binding(&mut self, error: BindingError) {
        let (tool, location) = (self.registration.name.to_string(), self.registration.location);
        self.found.push(StartupProblem::Binding { tool, error, location });
    }

    fn schema(&mut self, added: Result<(), String>) {
        if let Err(problem) = added {
            let (tool, location) = (self.registration.name.to_string(), self.registration.location);
            self.found.push(StartupProblem::Schema { tool, problem, location });
        }
    }

    /// The schema as a JSON object, which MCP requires of inputs and outputs.
    fn object_schema(&mut self, schema: schemars::Schema, which: &str) -> Option<JsonObject> {
        match schema.to_value() {
            Value::Object(obj) if obj.get("type") == Some(&json!("object")) => Some(obj),
            _ => {
                self.schema(Err(format!(
                    "the {which} type's JSON Schema must be an object (a struct with named fields)"
                )));
                None
            }
        }
    }
}

/// The id of the machine that gates the tool: `machine = "…"`, else the domain's (the
/// default, applied here once), whether or not such a machine exists.
pub(super) fn gating_machine_id(registration: &ActionRegistration) -> Option<&'static str> {
    registration.machine.or(registration.domain)
}

/// The machine that gates the tool ([`gating_machine_id`]), and whether its binding fits.
fn machine_of(registration: &ActionRegistration, context: &Context, problems: &mut Problems) -> Option<Arc<Machine>> {
    let id = gating_machine_id(registration);
    let machine = id.and_then(|id| context.machines.get(id)).cloned();
    if registration.bind_states.is_empty() {
        return machine;
    }
    match &machine {
        None => problems.found.push(StartupProblem::UnknownMachine {
            tool: registration.name.to_string(),
            machine: id.unwrap_or_default().to_string(),
            known: context.machines.keys().cloned().collect(),
            location: registration.location,
        }),
        Some(m) => {
            for error in m.spec().check_binding(registration.bind_states, registration.transition) {
                problems.binding(error);
            }
        }
    }
    machine
}

/// How the tool names its keyed machine's instance. An unbound tool whose input names no
/// instance (a list, a search) keeps no machine: it reports no state.
fn instance_key(
    registration: &ActionRegistration,
    context: &Context,
    machine: &mut Option<Arc<Machine>>,
    input: &JsonObject,
    problems: &mut Problems,
) -> Option<InstanceKey> {
    if registration.creates {
        creates(registration, machine.as_deref(), input, problems);
        return None;
    }
    let key = machine.as_deref().and_then(Machine::key)?;
    let canonicalize = context.canonical_keys.0.get(machine.as_deref().map(Machine::id).unwrap_or_default()).cloned();
    let problem = match InstanceKey::find(input, key, canonicalize) {
        Ok(Some(found)) => return Some(found),
        Ok(None) if registration.bind_states.is_empty() => {
            *machine = None;
            return None;
        }
        Ok(None) => "its input has no such field".to_string(),
        Err(problem) => problem,
    };
    problems.binding(key_missing(machine.as_deref(), &problem));
    None
}

/// An `Instance<T>` or `InstanceMut<T>` parameter: the tool's machine is keyed and its
/// context is `T`.
fn context_problem(registration: &ActionRegistration, machine: Option<&Machine>, context: &Context) -> Option<String> {
    let wanted = registration.contexts.iter().flatten().next()?;
    let name = wanted.ty.short_name();
    if registration.contexts.iter().flatten().count() > 1 {
        return Some(
            "its handler takes the instance's context twice: take one `Instance<…>` or `InstanceMut<…>`".into(),
        );
    }
    let Some(machine) = machine.filter(|m| m.key().is_some()) else {
        return Some(no_instance(registration, name, context));
    };
    match machine.context() {
        Some(declared) if declared == wanted.ty => None,
        Some(declared) => Some(format!(
            "its handler takes `{name}`, and the context of machine `{}` is `{}`",
            machine.id(),
            declared.short_name()
        )),
        None => Some(format!(
            "its handler takes `{name}`, and machine `{}` declares no context: add `context: {name}` to its `machine!`",
            machine.id()
        )),
    }
}

/// What a tool that takes an instance's context and names no instance is told. Its
/// machine minting keys, it most likely makes a new instance and forgot `creates`.
fn no_instance(registration: &ActionRegistration, name: &str, context: &Context) -> String {
    let id = registration.machine.or(registration.domain);
    match id.and_then(|id| context.machines.get(id)).filter(|m| m.mint().is_some()) {
        Some(machine) => {
            let (id, key) = (machine.id(), machine.key().unwrap_or_default());
            format!(
                "its handler takes `{name}`, an instance's context, and its input names no `{id}` (it has no `{key}`): a call that makes a new `{id}` needs `creates` in its `#[action(…)]` (machine `{id}` mints its `{key}`, and the handler reads the new one with `ctx.instance()`); a call on an existing one takes its `{key}`"
            )
        }
        None => format!(
            "its handler takes `{name}`, an instance's context, and the tool acts on no instance of a keyed machine: bind it to one (`bind_state`, or an input with the machine's key)"
        ),
    }
}

/// A creating tool (`#[action(creates)]`): its machine mints keys, and its input does not
/// take the key (the store gives it).
fn creates(registration: &ActionRegistration, machine: Option<&Machine>, input: &JsonObject, problems: &mut Problems) {
    let problem = match machine {
        None => Some("no machine: give it a domain whose machine it creates, or `machine = \"…\"`".to_string()),
        Some(m) if m.mint().is_none() => Some(format!(
            "machine `{}` does not mint its keys: add `mint: \"{}-{{n}}\"` (say) to its `machine!`",
            m.id(),
            m.id().to_uppercase()
        )),
        Some(m) => m.key().filter(|key| input.get("properties").and_then(|p| p.get(*key)).is_some()).map(|key| {
            format!("its input takes `{key}`, which the store mints for the new `{}`: remove the field", m.id())
        }),
    };
    if let Some(problem) = problem {
        problems.found.push(StartupProblem::Creates {
            tool: registration.name.to_string(),
            problem,
            location: registration.location,
        });
    }
}

fn key_missing(machine: Option<&Machine>, problem: &str) -> BindingError {
    BindingError::KeyMissing {
        machine: machine.map(|m| m.id().to_string()).unwrap_or_default(),
        key: machine.and_then(Machine::key).unwrap_or_default().to_string(),
        problem: problem.to_string(),
    }
}
