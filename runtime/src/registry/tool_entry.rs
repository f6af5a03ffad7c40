//! One served tool — an `#[action]`, the generated `switch_domain` or a generated history
//! tool — checked against its machine, with its MCP definitions built once.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use rmcp::model::{JsonObject, Tool};
use serde_json::{Value, json};

use super::StartupProblem;
use super::instance_key::{CanonicalKeys, InstanceKey};
use crate::action::{ActionRegistration, RatePer};
use crate::arguments::ArgumentCheck;
use crate::auth::Principal;
use crate::domain::{IntentLock, field, switch::SWITCH_DOMAIN};
use crate::flow::field as flow_field;
use crate::fsm::{BindingError, Machine};
use crate::schema::{
    Position, Presence, add_owned_property, admit_errors, drop_boilerplate, drop_examples, keep_standard_formats,
};
use crate::types::check::remove_markers;

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
    /// `creates`: the call creates an instance of its machine, with a minted key.
    pub(crate) creates: bool,
    /// A parameter may change the instance's context (`InstanceMut<T>`): the call holds
    /// its instance's lease and commits it, with or without a transition.
    pub(crate) writes_context: bool,
    /// A parameter is the call's [`Transaction`](crate::Transaction): what the handler
    /// writes in tables of yours is committed with the call's records.
    pub(crate) takes_transaction: bool,
    /// Whether the call runs in a flow (a conversation machine, or the active domain):
    /// its schemas then carry the optional handle argument.
    pub(crate) needs_flow: bool,
    /// The input schema, compiled: every call's arguments are checked against it first.
    /// (`switch_domain` checks its own.)
    pub(crate) arguments: Option<ArgumentCheck>,
    /// By state of the tool's machine where the tool is not allowed: the tools callable
    /// there whose success brings the machine nearest to a state where it is (none from a
    /// state that cannot reach one, a final state say).
    pub(crate) unlocked_by: HashMap<String, Vec<String>>,
    /// For a tool generated to show what other tools did (a machine's history tool): the
    /// scopes of each of those tools. A principal sees and calls it when it holds every
    /// scope of one of them. Empty: the tool's own scopes decide.
    pub(crate) seen_with: Vec<&'static [&'static str]>,
    /// The handler's output is not a JSON object (a `String`, a number): results carry it
    /// as `result`.
    pub(crate) wraps_output: bool,
}

/// What every tool entry is built against.
pub(crate) struct Context<'a> {
    pub(crate) machines: &'a BTreeMap<String, Arc<Machine>>,
    pub(crate) lock: &'a IntentLock,
    /// The name of the handle argument.
    pub(crate) handle_argument: &'a str,
    pub(crate) canonical_keys: &'a CanonicalKeys,
    /// Whether key arguments travel as `Mcp-Param-{Key}` headers too.
    pub(crate) key_headers: bool,
    /// The machines with tools in several domains, whose results may name
    /// `next_after_switch`.
    pub(crate) cross_domain: &'a BTreeSet<String>,
}

/// What runs when the tool is called.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ToolKind {
    /// A user's `#[action]`, or a generated history tool (whose handler reads the call's
    /// instance from its context).
    Action(&'static ActionRegistration),
    /// The generated `switch_domain`.
    SwitchDomain,
}

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

impl ToolEntry {
    /// A handler's output as the result's structured content: wrapped as `{"result": …}`
    /// where the output type is not an object; otherwise it must serialize to one.
    pub(crate) fn shape_output(
        &self,
        mut output: crate::action::Output,
    ) -> Result<crate::action::Output, crate::error::ToolError> {
        if self.wraps_output {
            output.structured = json!({ OUTPUT_RESULT_FIELD: output.structured });
        } else if !output.structured.is_object() {
            return Err(crate::error::ToolError::internal(format_args!(
                "the handler's output must serialize to a JSON object, got {}",
                output.structured
            )));
        }
        Ok(output)
    }

    /// The states the tool is bound to (empty: always available).
    pub(crate) fn bind_states(&self) -> &'static [&'static str] {
        match self.kind {
            ToolKind::Action(registration) => registration.bind_states,
            ToolKind::SwitchDomain => &[],
        }
    }

    /// The event a successful call fires.
    /// Every scope a principal needs to see and call the tool.
    pub(crate) fn scopes(&self) -> &'static [&'static str] {
        match self.kind {
            ToolKind::Action(registration) => registration.scopes,
            ToolKind::SwitchDomain => &[],
        }
    }

    /// The input field that carries the idempotency key, for an idempotent tool.
    pub(crate) fn idempotency_key(&self) -> Option<&'static str> {
        match self.kind {
            ToolKind::Action(registration) => registration.idempotency_key,
            ToolKind::SwitchDomain => None,
        }
    }

    /// The tool's confirmation policy, for a `confirm`ed tool.
    /// Whether its calls may or must run as MCP tasks.
    pub(crate) fn task(&self) -> crate::action::TaskSupport {
        match self.kind {
            ToolKind::Action(registration) => registration.task,
            ToolKind::SwitchDomain => crate::action::TaskSupport::Never,
        }
    }

    pub(crate) fn confirm(&self) -> Option<&'static crate::confirm::ConfirmPolicy> {
        match self.kind {
            ToolKind::Action(registration) => registration.confirm.as_ref(),
            ToolKind::SwitchDomain => None,
        }
    }

    /// Whether the handler can send the client requests of its own (it takes a `Ctx`), or
    /// the gate does (a confirmation).
    pub(crate) fn reaches_client(&self) -> bool {
        match self.kind {
            ToolKind::Action(r) => {
                let takes_ctx = r.parameters.iter().any(|ty| ty() == std::any::TypeId::of::<crate::action::Ctx>());
                takes_ctx || r.confirm.is_some()
            }
            ToolKind::SwitchDomain => false,
        }
    }

    /// Whether a call needs an authenticated principal: the tool is `transactional`,
    /// requires a scope, its handler takes a `Principal`, it names an instance of a
    /// tenant-scoped machine (whose tenant is the caller's), or it names or creates an
    /// instance of a principal-owned machine (whose owner is the caller).
    pub(crate) fn needs_principal(&self) -> bool {
        match self.kind {
            ToolKind::Action(r) => {
                r.transactional
                    || r.confirm.is_some()
                    || r.needs_principal
                    || !r.scopes.is_empty()
                    || (self.instance.is_some() && self.machine.as_deref().is_some_and(Machine::is_tenant_scoped))
                    || ((self.instance.is_some() || self.creates)
                        && self.machine.as_deref().is_some_and(Machine::is_principal_owned))
                    || (!self.seen_with.is_empty() && self.seen_with.iter().all(|scopes| !scopes.is_empty()))
            }
            ToolKind::SwitchDomain => false,
        }
    }

    /// Whether `principal` may see the tool: it holds every scope the tool requires (for a
    /// tool [`seen_with`](Self::seen_with) others' scopes, every scope of one of them). (A
    /// `transactional` tool without scopes is listed to everyone, and refuses a caller
    /// that did not authenticate.)
    pub(crate) fn visible_to(&self, principal: Option<&Principal>) -> bool {
        let holds = |scopes: &[&str]| scopes.is_empty() || principal.is_some_and(|p| p.missing_scope(scopes).is_none());
        match self.seen_with.as_slice() {
            [] => holds(self.scopes()),
            alternatives => alternatives.iter().any(|scopes| holds(scopes)),
        }
    }

    /// A scope `principal` lacks to call the tool, if it lacks one (for a tool seen with
    /// others' scopes, one of the first such tool's).
    pub(crate) fn missing_scope(&self, principal: &Principal) -> Option<&'static str> {
        match self.seen_with.first() {
            None => principal.missing_scope(self.scopes()),
            Some(_) if self.visible_to(Some(principal)) => None,
            Some(first) => principal.missing_scope(first),
        }
    }

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
        admit_errors(&mut output);
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
            creates: false,
            writes_context: false,
            takes_transaction: false,
            needs_flow: true,
            arguments: None,
            unlocked_by: HashMap::new(),
            seen_with: Vec::new(),
            wraps_output: false,
        }
    }

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
            context,
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

    /// For each state of the tool's machine where the tool is not allowed, the tools
    /// callable there whose transition leads nearest to a state where it is: the next
    /// step on a shortest way, never a tool that cannot apply from that state.
    pub(crate) fn find_unlockers(&self, tools: &[ToolEntry]) -> HashMap<String, Vec<String>> {
        let (Some(machine), bound) = (&self.machine, self.bind_states()) else { return HashMap::new() };
        if bound.is_empty() {
            return HashMap::new();
        }
        let distance = distances_to(machine, bound);
        let same_machine: Vec<&ToolEntry> = tools
            .iter()
            .filter(|other| other.name != self.name)
            .filter(|other| other.machine.as_ref().is_some_and(|m| m.id() == machine.id()))
            .collect();
        let mut unlockers = HashMap::new();
        for state in machine.spec().states.iter().map(|s| s.name.as_str()).filter(|s| !bound.contains(s)) {
            let steps: Vec<(usize, &str)> = same_machine
                .iter()
                .filter(|other| other.bind_states().contains(&state))
                .filter_map(|other| {
                    let to = machine.target(state, other.transition()?)?;
                    Some((*distance.get(to)?, other.name))
                })
                .collect();
            let Some(nearest) = steps.iter().map(|(d, _)| *d).min() else { continue };
            let names = steps.iter().filter(|(d, _)| *d == nearest).map(|(_, name)| name.to_string()).collect();
            unlockers.insert(state.to_string(), names);
        }
        unlockers
    }
}

/// How many transitions each state is from the nearest of `targets` (absent: none is
/// reachable from it), by a breadth-first search over the transitions reversed.
fn distances_to<'m>(machine: &'m Machine, targets: &[&str]) -> HashMap<&'m str, usize> {
    let states = &machine.spec().states;
    let mut distance: HashMap<&str, usize> = HashMap::new();
    let mut queue = VecDeque::new();
    for state in states.iter().filter(|s| targets.contains(&s.name.as_str())) {
        distance.insert(&state.name, 0);
        queue.push_back(state.name.as_str());
    }
    while let Some(to) = queue.pop_front() {
        let next = distance[to] + 1;
        for from in states.iter().filter(|s| s.on.iter().any(|t| t.target == to)) {
            if !distance.contains_key(from.name.as_str()) {
                distance.insert(&from.name, next);
                queue.push_back(&from.name);
            }
        }
    }
    distance
}

/// The output schema as an object, which MCP's `structuredContent` is, and whether the
/// output was wrapped to make it one: a `String`, a number, a list or an enum is the
/// result's `result` field (`{"result": "…"}`, its definitions kept at the root).
fn output_schema(schema: schemars::Schema) -> (Option<JsonObject>, bool) {
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

/// The field a non-object output is wrapped in.
pub(crate) const OUTPUT_RESULT_FIELD: &str = "result";

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

/// The fields toolgate adds to a tool's schemas: `domain`, `state`, the handle.
struct Owned<'a> {
    domain: Option<&'static str>,
    machine: Option<&'a Machine>,
    needs_flow: bool,
    /// `confirm`: the input takes the confirmation's fields.
    confirmed: bool,
    context: &'a Context<'a>,
}

impl Owned<'_> {
    fn add_to_input(&self, schema: &mut JsonObject) -> Result<(), String> {
        if let Some(domain) = self.domain {
            field::add_to_input_schema(schema, domain)?;
        }
        if self.needs_flow {
            flow_field::add_to_input_schema(schema, self.context.handle_argument)?;
        }
        if self.confirmed {
            crate::confirm::add_to_input_schema(schema)?;
        }
        Ok(())
    }

    fn add_to_output(&self, schema: &mut JsonObject) -> Result<(), String> {
        field::add_to_output_schema(schema, self.domain)?;
        if let Some(machine) = self.machine {
            add_machine_fields(schema, machine, self.context.cross_domain.contains(machine.id()))?;
        }
        if self.needs_flow {
            flow_field::add_to_output_schema(schema, self.context.handle_argument)?;
        }
        Ok(())
    }
}

/// The doc comment, then when the tool is callable (bound tools), its rate limit (`scope`:
/// what the limit counts per), then what it is not for.
fn description(registration: &ActionRegistration, bound_machine: Option<&Machine>, scope: Option<&str>) -> String {
    let mut description = registration.description.to_string();
    if let Some(machine) = bound_machine {
        description.push_str("\n\n");
        description.push_str(&precondition(machine, registration.bind_states, registration.transition));
    }
    if let (Some(limit), Some(scope)) = (registration.rate_limit, scope) {
        description.push_str(&format!("\n\nAt most {} {scope}.", limit.in_words()));
    }
    if let Some(not_for) = registration.not_for {
        description.push_str(&format!("\n\nNot for: {}.", not_for.trim_end_matches('.')));
    }
    description
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
    // Short: every listed tool pays for these words on every turn.
    let subject = match machine.key() {
        Some(_) => format!("the `{}`", machine.id()),
        None => format!("this conversation's `{}`", machine.id()),
    };
    let mut text = format!("Only while {subject} is {}", either(bind_states));
    if let Some(event) = transition {
        let mut targets: Vec<&str> = Vec::new();
        let branches = bind_states.iter().flat_map(|from| machine.spec().branches(from, event));
        for to in branches.map(|t| t.target.as_str()) {
            if !targets.contains(&to) {
                targets.push(to);
            }
        }
        text.push_str(&format!("; moves it to {}", either(&targets)));
    }
    // What time does to it: "`quoted` lasts 15 minutes, then it is `expired`".
    for state in bind_states {
        if let Some(delayed) = machine.spec().first_delayed(state) {
            let lasts = toolgate_machine::grammar::duration_in_words(delayed.after_ms);
            text.push_str(&format!("; after {lasts} `{state}` becomes `{}`", delayed.target));
        }
    }
    text.push('.');
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

/// A JSON object (what `Value::Object` holds), from a value known to be one.
pub(super) fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::{MachineSpec, StateSpec, Transition};

    fn state(name: &str, on: &[(&str, &str)]) -> StateSpec {
        StateSpec {
            name: name.into(),
            is_final: on.is_empty(),
            on: on.iter().map(|(e, t)| Transition::new(*e, *t)).collect(),
            after: vec![],
            entry: vec![],
            exit: vec![],
        }
    }

    #[test]
    fn a_precondition_names_each_target_state_once() {
        let machine = Machine::new(MachineSpec {
            id: "order".into(),
            initial: Some("new".into()),
            key: None,
            tenant_scoped: false,
            principal_owned: false,
            mint: None,
            states: vec![
                state("new", &[("PAY", "paid"), ("HOLD", "held")]),
                state("held", &[("PAY", "review"), ("RELEASE", "late")]),
                state("late", &[("PAY", "paid")]),
                state("review", &[("ACCEPT", "paid")]),
                state("paid", &[]),
            ],
        })
        .expect("a valid machine");
        let text = precondition(&machine, &["new", "held", "late"], Some("PAY"));
        assert!(text.contains("moves it to `paid` or `review`."), "{text}");
    }
}
