//! One served tool — an `#[action]`, the generated `switch_domain` or a generated history
//! tool — with its MCP definitions built once, and what the pipeline asks of it. (An
//! action's entry is checked and built in `action_entry.rs`; what its schemas gain in
//! `tool_schemas.rs`.)

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::json;

use super::instance_key::{CanonicalKeys, InstanceKey};
use super::tool_schemas::OUTPUT_RESULT_FIELD;
use crate::action::ActionRegistration;
use crate::arguments::ArgumentCheck;
use crate::auth::Principal;
use crate::domain::{IntentLock, switch::SWITCH_DOMAIN};
use crate::flow::field as flow_field;
use crate::fsm::Machine;
use crate::schema::admit_errors;

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

    /// Whether its calls may or must run as MCP tasks.
    pub(crate) fn task(&self) -> crate::action::TaskSupport {
        match self.kind {
            ToolKind::Action(registration) => registration.task,
            ToolKind::SwitchDomain => crate::action::TaskSupport::Never,
        }
    }

    /// The tool's confirmation policy, for a `confirm`ed tool.
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
}
