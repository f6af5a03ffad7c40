//! The registry: every `#[action]` and `machine!` of the binary, collected once at
//! start-up, checked, sorted, and turned into ready-to-send MCP tool definitions.

mod action_entry;
mod delays;
mod grouped;
mod history;
mod history_tool;
mod hooks;
use crate::hook::Hooks;
pub(crate) use delays::DelayOverride;
use delays::apply_delays;
mod instance_key;
mod managers;
mod param_header;
pub(crate) use param_header::KEYWORD as PARAM_HEADER_KEYWORD;

pub(crate) use history::InstanceHistory;
pub(crate) use history_tool::{HistoryOptions, is_history_tool};
pub(crate) use instance_key::{CanonicalKeys, InstanceKey};
mod startup_error;
mod tool_description;
mod tool_entry;
mod tool_schemas;
mod unlockers;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

pub use grouped::Exposition;
pub(crate) use grouped::{Group, Groups};
pub use startup_error::{StartupError, StartupProblem};
use tool_entry::Context;
pub(crate) use tool_entry::{ToolEntry, ToolKind};
pub(crate) use tool_schemas::{NEXT_AFTER_SWITCH_FIELD, NEXT_FIELD, STATE_FIELD};

use crate::action::{ActionRegistration, SourceLocation, States};
use crate::domain::{DomainPolicy, IntentLock, switch::SWITCH_DOMAIN};
use crate::fsm::{Delayed, Guard, Machine, MachineSpec, StateSpec, Transition};
use rmcp::model::Tool;

/// One `machine!`, as the macro registers it at link time (generated code only).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct MachineRegistration {
    /// The machine's id.
    pub id: &'static str,
    /// The initial state.
    pub initial: &'static str,
    /// The argument that names an instance, for a keyed machine.
    pub key: Option<&'static str>,
    /// `scope: tenant`.
    pub tenant_scoped: bool,
    /// `owner: principal`.
    pub principal_owned: bool,
    /// `mint: "PAY-{n}"` or `mint: "Q-{random}"`.
    pub mint: Option<&'static str>,
    /// The states in declaration order.
    pub states: &'static [StateRegistration],
    /// `context: Payment`: the type of each instance's data.
    pub context: Option<crate::fsm::ContextType>,
    /// The guards its transitions name, with their functions.
    pub guards: &'static [crate::fsm::GuardRegistration],
    /// Where the `machine!` is.
    pub location: SourceLocation,
}

/// One state of a [`MachineRegistration`] (generated code only).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct StateRegistration {
    /// The state's name.
    pub name: &'static str,
    /// `type: "final"`.
    pub is_final: bool,
    /// `(event, target, guard, reenter)`, one per branch.
    pub on: &'static [(&'static str, &'static str, Option<&'static str>, bool)],
    /// `(milliseconds, target)`: the `after` transitions.
    pub after: &'static [(u64, &'static str)],
    /// The effects run on entering the state: `(name, function)`.
    pub entry: &'static [(&'static str, crate::effect::EffectFnPtr)],
    /// The effects run on leaving the state: `(name, function)`.
    pub exit: &'static [(&'static str, crate::effect::EffectFnPtr)],
}

inventory::collect!(MachineRegistration);

impl MachineRegistration {
    fn spec(&self) -> MachineSpec {
        MachineSpec {
            id: self.id.to_string(),
            initial: Some(self.initial.to_string()),
            key: self.key.map(str::to_string),
            tenant_scoped: self.tenant_scoped,
            principal_owned: self.principal_owned,
            mint: self.mint.map(str::to_string),
            states: self
                .states
                .iter()
                .map(|s| StateSpec {
                    name: s.name.to_string(),
                    is_final: s.is_final,
                    on: (s.on.iter())
                        .map(|(event, target, guard, reenter)| Transition {
                            event: event.to_string(),
                            target: target.to_string(),
                            guard: guard.map(str::to_string),
                            reenter: *reenter,
                        })
                        .collect(),
                    after: (s.after.iter())
                        .map(|(after_ms, target)| Delayed { after_ms: *after_ms, target: target.to_string() })
                        .collect(),
                    entry: s.entry.iter().map(|(name, _)| name.to_string()).collect(),
                    exit: s.exit.iter().map(|(name, _)| name.to_string()).collect(),
                })
                .collect(),
        }
    }
}

/// What a server adds to the linked registrations: machines loaded at start-up and how
/// the intent lock applies.
#[derive(Debug, Clone)]
pub(crate) struct RegistryOptions {
    pub(crate) machines: Vec<Machine>,
    pub(crate) policy: DomainPolicy,
    pub(crate) list_active_only: bool,
    /// Domain → one-line description, shown in `switch_domain`'s description.
    pub(crate) domain_descriptions: BTreeMap<String, String>,
    /// The name of the state-handle argument.
    pub(crate) handle_argument: String,
    /// Canonical spellings of keyed machines' keys.
    pub(crate) canonical_keys: CanonicalKeys,
    /// Whether keyed tools' key arguments travel as `Mcp-Param-{Key}` headers too.
    pub(crate) key_headers: bool,
    /// Instances' histories: how much is kept, and which machines offer a history tool.
    pub(crate) history: HistoryOptions,
    /// Per principal-owned machine, the scopes that act on any owner's instance.
    pub(crate) managers: BTreeMap<String, Vec<String>>,
    /// The transactional hooks of machines' states, in the order given.
    pub(crate) hooks: Vec<crate::hook::HookRegistration>,
    /// The functions of the guards machines loaded at start-up name.
    pub(crate) guards: Vec<Guard>,
    /// States whose `after` lasts other than declared (`--after`).
    pub(crate) delays: Vec<DelayOverride>,
    /// The most tokens one tool may cost a model (the audit's `context_budget`).
    pub(crate) context_budget: usize,
    /// A tool per action, or per domain.
    pub(crate) exposition: Exposition,
}

impl Default for RegistryOptions {
    fn default() -> Self {
        Self {
            machines: Vec::new(),
            policy: DomainPolicy::default(),
            list_active_only: false,
            domain_descriptions: BTreeMap::new(),
            handle_argument: crate::flow::DEFAULT_HANDLE_ARGUMENT.to_string(),
            canonical_keys: CanonicalKeys::default(),
            key_headers: false,
            history: HistoryOptions::default(),
            managers: BTreeMap::new(),
            hooks: Vec::new(),
            guards: Vec::new(),
            delays: Vec::new(),
            context_budget: DEFAULT_CONTEXT_BUDGET,
            exposition: Exposition::default(),
        }
    }
}

/// A machine as declared: its spec, where it was declared, its context type and the
/// functions of the guards it names.
struct DeclaredSpec {
    spec: MachineSpec,
    origin: String,
    context: Option<crate::fsm::ContextType>,
    guards: Vec<Guard>,
}

/// The machines whose tools the intent lock keeps apart: tools of two domains or more
/// (a `billing_refund` gated on a `ticket`). Their results may name `next_after_switch`.
fn machines_in_several_domains(actions: &[&'static ActionRegistration], lock: &IntentLock) -> BTreeSet<String> {
    let mut domains: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for action in actions {
        if let (Some(machine), Some(domain)) = (action_entry::gating_machine_id(action), action.domain) {
            domains.entry(machine).or_default().insert(domain);
        }
    }
    domains.into_iter().filter(|(_, d)| d.len() > 1 && lock.uses_flow()).map(|(m, _)| m.to_string()).collect()
}

/// The machines that mint their keys and have tools, none of which creates an instance:
/// a tool that makes one forgot `creates`, since only a creating call makes an instance of
/// such a machine.
fn never_created(
    actions: &[&'static ActionRegistration],
    machines: &BTreeMap<String, Arc<Machine>>,
) -> Vec<StartupProblem> {
    let gated_by =
        |action: &ActionRegistration, machine: &Machine| action.machine.or(action.domain) == Some(machine.id());
    let minting = machines.values().filter(|m| m.mint().is_some());
    minting
        .filter(|machine| !actions.iter().any(|a| a.creates && gated_by(a, machine)))
        .filter_map(|machine| {
            let tools: Vec<String> =
                actions.iter().filter(|a| gated_by(a, machine)).map(|a| a.name.to_string()).collect();
            (!tools.is_empty()).then(|| StartupProblem::NeverCreated {
                machine: machine.id().to_string(),
                key: machine.key().unwrap_or_default().to_string(),
                tools,
            })
        })
        .collect()
}

/// Validates every machine; invalid and duplicate ones become problems.
fn checked_machines(specs: Vec<DeclaredSpec>, problems: &mut Vec<StartupProblem>) -> BTreeMap<String, Arc<Machine>> {
    let mut machines: BTreeMap<String, (Arc<Machine>, String)> = BTreeMap::new();
    for DeclaredSpec { spec, origin, context, guards } in specs {
        let id = spec.id.clone();
        let machine = Machine::new(spec).map(|machine| {
            let machine = machine.with_context(context);
            let named = machine.spec().guards().into_iter().map(str::to_string).collect::<Vec<_>>();
            guards.into_iter().filter(|g| named.iter().any(|n| n == g.name())).fold(machine, Machine::with_guard)
        });
        if let Ok(machine) = &machine {
            let missing = machine.missing_guards();
            if !missing.is_empty() {
                let guards = missing.into_iter().map(str::to_string).collect();
                problems.push(StartupProblem::MissingGuards { machine: id.clone(), origin: origin.clone(), guards });
            }
        }
        match machine {
            Err(errors) => problems.push(StartupProblem::InvalidMachine { machine: id, origin, errors }),
            Ok(_) if machines.contains_key(&id) => {
                let first = machines[&id].1.clone();
                problems.push(StartupProblem::DuplicateMachine { machine: id, first, second: origin });
            }
            Ok(machine) => {
                machines.insert(id, (Arc::new(machine), origin));
            }
        }
    }
    machines.into_iter().map(|(id, (machine, _))| (id, machine)).collect()
}

/// The actions sorted by tool name, one per name; duplicates become problems.
fn unique_actions(
    mut actions: Vec<&'static ActionRegistration>,
    problems: &mut Vec<StartupProblem>,
) -> Vec<&'static ActionRegistration> {
    actions.sort_by_key(|a| (a.name, a.location.file, a.location.line));
    for pair in actions.windows(2) {
        if pair[0].name == pair[1].name {
            problems.push(StartupProblem::DuplicateTool {
                tool: pair[0].name.to_string(),
                first: pair[0].location,
                second: pair[1].location,
            });
        }
    }
    actions.dedup_by_key(|a| a.name);
    actions
}

/// The domains the actions belong to, with the descriptions given for them; describing a
/// domain no action has is a problem (a typo would otherwise go unnoticed).
fn intent_lock(
    actions: &[&'static ActionRegistration],
    options: &RegistryOptions,
    problems: &mut Vec<StartupProblem>,
) -> IntentLock {
    let names: BTreeSet<&str> = actions.iter().filter_map(|a| a.domain).collect();
    for described in options.domain_descriptions.keys() {
        if !names.contains(described.as_str()) {
            problems.push(StartupProblem::UnknownDomain {
                domain: described.clone(),
                known: names.iter().map(|d| d.to_string()).collect(),
            });
        }
    }
    IntentLock {
        policy: options.policy,
        list_active_only: options.list_active_only,
        domains: names.into_iter().map(|d| (d.to_string(), options.domain_descriptions.get(d).cloned())).collect(),
    }
}

/// Every `State<T>` a handler asks for that the server was not given.
fn missing_states(actions: &[&'static ActionRegistration], states: &States) -> Vec<StartupProblem> {
    let mut problems = Vec::new();
    for action in actions {
        for requirement in action.states.iter().flatten().filter(|r| !states.contains((r.id)())) {
            problems.push(StartupProblem::MissingState {
                tool: action.name.to_string(),
                type_name: (requirement.name)().to_string(),
                location: action.location,
            });
        }
    }
    problems
}

/// The most tokens one tool may cost by default before the audit's `context_budget` rule
/// fails it. Playwright's 24 tools cost about 170 tokens each; the richest tool of
/// toolgate's examples (a search with typed dates, counts and places) about 600. Past 800,
/// one tool is worth splitting or trimming.
pub const DEFAULT_CONTEXT_BUDGET: usize = 800;

/// The checked, sorted table of tools and machines a server serves.
#[derive(Debug)]
pub struct Registry {
    tools: Vec<ToolEntry>,
    by_name: HashMap<&'static str, usize>,
    machines: BTreeMap<String, Arc<Machine>>,
    lock: IntentLock,
    /// The machines with tools in several domains: their results name `next_after_switch`.
    cross_domain: BTreeSet<String>,
    /// How instances' histories are kept, and the notes of the transitions in flight.
    history: InstanceHistory,
    /// The most tokens one tool may cost a model (the audit's `context_budget`).
    context_budget: usize,
    /// Each domain's grouped tool, and which of the two expositions clients are shown.
    groups: Groups,
    exposition: Exposition,
    /// The transactional hooks of machines' states.
    hooks: Hooks,
}

impl Registry {
    /// Collects every linked `#[action]` and `machine!`, adds what `options` brings, and
    /// checks them all; every problem is reported at once.
    pub(crate) fn collect(options: RegistryOptions, states: &States) -> Result<Self, StartupError> {
        let actions: Vec<&'static ActionRegistration> = inventory::iter::<ActionRegistration>().collect();
        let machines: Vec<DeclaredSpec> = inventory::iter::<MachineRegistration>()
            .map(|m| DeclaredSpec {
                spec: m.spec(),
                origin: m.location.to_string(),
                context: m.context,
                guards: m.guards.iter().map(Guard::registered).collect(),
            })
            .chain(options.machines.iter().map(|m| DeclaredSpec {
                spec: m.spec().clone(),
                origin: "ServerBuilder::machine".to_string(),
                context: None,
                guards: options.guards.clone(),
            }))
            .collect();
        let mut problems = missing_states(&actions, states);
        let mut machines = machines;
        let mut specs: Vec<&mut crate::fsm::MachineSpec> = machines.iter_mut().map(|m| &mut m.spec).collect();
        apply_delays(&mut specs, &options.delays, &mut problems);
        match Self::build(actions, machines, &options) {
            Ok(registry) if problems.is_empty() => Ok(registry),
            Ok(_) => Err(StartupError { problems }),
            Err(error) => {
                problems.extend(error.problems);
                Err(StartupError { problems })
            }
        }
    }

    fn build(
        actions: Vec<&'static ActionRegistration>,
        machines: Vec<DeclaredSpec>,
        options: &RegistryOptions,
    ) -> Result<Self, StartupError> {
        let mut problems = Vec::new();
        let machines = managers::managed(checked_machines(machines, &mut problems), &options.managers, &mut problems);
        let hooks = hooks::checked(&machines, &options.hooks, &mut problems);
        let actions = unique_actions(actions, &mut problems);
        let lock = intent_lock(&actions, options, &mut problems);
        for machine in options.canonical_keys.0.keys() {
            if machines.get(machine).is_none_or(|m| m.key().is_none()) {
                let keyed = machines.values().filter(|m| m.key().is_some()).map(|m| m.id().to_string()).collect();
                problems.push(StartupProblem::CanonicalKey { machine: machine.clone(), keyed });
            }
        }
        let cross_domain = machines_in_several_domains(&actions, &lock);
        let context = Context {
            machines: &machines,
            lock: &lock,
            cross_domain: &cross_domain,
            handle_argument: &options.handle_argument,
            canonical_keys: &options.canonical_keys,
            key_headers: options.key_headers,
        };
        problems.extend(never_created(&actions, &machines));
        let mut tools: Vec<ToolEntry> = actions
            .into_iter()
            .filter_map(|action| ToolEntry::new(action, &context).map_err(|p| problems.extend(p)).ok())
            .collect();
        if lock.has_switch() {
            if let Some(ToolKind::Action(action)) = tools.iter().find(|t| t.name == SWITCH_DOMAIN).map(|t| t.kind) {
                problems.push(StartupProblem::ReservedName { tool: SWITCH_DOMAIN.into(), location: action.location });
            }
            tools.push(ToolEntry::switch_domain(&lock, &options.handle_argument));
            tools.sort_by_key(|t| t.name);
        }
        let history_tools = history_tool::history_tools(&tools, &options.history, &context, &mut problems);
        if !history_tools.is_empty() {
            tools.extend(history_tools);
            tools.sort_by_key(|t| t.name);
        }
        if tools.is_empty() && problems.is_empty() {
            problems.push(StartupProblem::NoTools);
        }
        let unlocks: Vec<_> = tools.iter().map(|t| t.find_unlockers(&tools)).collect();
        for (tool, unlocked_by) in tools.iter_mut().zip(unlocks) {
            tool.unlocked_by = unlocked_by;
        }
        if !problems.is_empty() {
            return Err(StartupError { problems });
        }
        let by_name = tools.iter().enumerate().map(|(i, t)| (t.name, i)).collect();
        for machine in
            options.history.with_data.iter().filter(|m| machines.get(*m).is_none_or(|m| m.context().is_none()))
        {
            let with_context =
                machines.values().filter(|m| m.context().is_some()).map(|m| m.id().to_string()).collect();
            problems.push(StartupProblem::HistoryData { machine: machine.clone(), with_context });
        }
        if !problems.is_empty() {
            return Err(StartupError { problems });
        }
        let groups = Groups::new(&tools, &lock.domains);
        if options.exposition == Exposition::Grouped {
            // A grouped tool takes its domain's name, which no other tool may have.
            for tool in tools.iter().filter(|t| groups.get(t.name).is_some()) {
                if let ToolKind::Action(action) = tool.kind {
                    problems.push(StartupProblem::ReservedName { tool: tool.name.into(), location: action.location });
                }
            }
            if !problems.is_empty() {
                return Err(StartupError { problems });
            }
        }
        let history = InstanceHistory::new(options.history.retention, options.history.with_data.clone());
        let (context_budget, exposition) = (options.context_budget, options.exposition);
        Ok(Self { tools, by_name, machines, lock, cross_domain, history, context_budget, groups, exposition, hooks })
    }

    /// Whether the tools of `machine` are in several domains, so that its results name
    /// `next_after_switch` (and their output schemas declare it).
    pub(crate) fn is_cross_domain(&self, machine: &str) -> bool {
        self.cross_domain.contains(machine)
    }

    /// The most tokens one tool may cost a model, as the audit judges it.
    pub(crate) fn context_budget(&self) -> usize {
        self.context_budget
    }

    /// The tools, sorted by name.
    pub(crate) fn tools(&self) -> &[ToolEntry] {
        &self.tools
    }

    /// The tool called `name`.
    pub(crate) fn tool(&self, name: &str) -> Option<&ToolEntry> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// The tool names, sorted.
    pub fn tool_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.tools.iter().map(|t| t.name)
    }

    /// Whether some tool runs in a flow, so that state handles can be minted.
    pub(crate) fn uses_flows(&self) -> bool {
        self.tools.iter().any(|t| t.needs_flow)
    }

    /// Every tool's full definition: what a sessionless `tools/list` shows, the same for
    /// everyone (`docs/call-pipeline.md`, "Listing and calling").
    pub(crate) fn definitions(&self) -> Vec<Tool> {
        self.tools.iter().map(|t| t.tool.clone()).collect()
    }

    /// Each domain's grouped tool.
    pub(crate) fn groups(&self) -> &Groups {
        &self.groups
    }

    /// The grouped tool `name`, when the server shows grouped tools.
    pub(crate) fn group(&self, name: &str) -> Option<&Group> {
        self.groups.get(name).filter(|_| self.exposition == Exposition::Grouped)
    }

    /// What clients are shown of `tools`, the flat definitions a listing holds: those, or
    /// their domains' grouped tools.
    pub(crate) fn expose(&self, tools: Vec<Tool>) -> Vec<Tool> {
        match self.exposition {
            Exposition::Flat => tools,
            Exposition::Grouped => self.groups.expose(tools),
        }
    }

    /// A reply's tool names as a client of this exposition calls them, for a call to a
    /// tool of `domain`.
    pub(crate) fn regroup(&self, content: &mut serde_json::Value, domain: Option<&str>) {
        if self.exposition == Exposition::Grouped {
            self.groups.regroup(content, domain);
        }
    }

    /// The tool a client may call by the name `name`: any, where tools are flat; where
    /// they are grouped, only a tool of no domain (a domain's are its group's actions).
    pub(crate) fn served(&self, name: &str) -> Option<&ToolEntry> {
        self.tool(name).filter(|t| self.exposition == Exposition::Flat || t.domain.is_none())
    }

    /// The definition of the tool a client calls `name`: flat, or grouped with every
    /// action.
    pub(crate) fn definition(&self, name: &str) -> Option<Tool> {
        match self.group(name) {
            Some(group) => Some(group.full_definition()),
            None => self.served(name).map(|t| t.tool.clone()),
        }
    }

    /// Every scope some tool requires, once each, sorted.
    pub(crate) fn declared_scopes(&self) -> std::collections::BTreeSet<&'static str> {
        self.tools.iter().flat_map(|t| t.scopes().iter().copied()).collect()
    }

    /// The keyed machine `machine` and its key, as its tools read it from their arguments.
    pub(crate) fn instance_key_of(&self, machine: &str) -> Option<(&Machine, &InstanceKey)> {
        self.tools.iter().find_map(|tool| {
            let m = tool.machine.as_deref().filter(|m| m.id() == machine)?;
            Some((m, tool.instance.as_ref()?))
        })
    }

    /// Whether some tool requires a scope, so that what a client lists depends on who it is.
    pub(crate) fn has_scopes(&self) -> bool {
        self.tools.iter().any(|t| !t.scopes().is_empty())
    }

    /// How instances' histories are kept, and the notes handlers attach to transitions.
    pub(crate) fn history(&self) -> &InstanceHistory {
        &self.history
    }

    /// The transactional hooks of machines' states.
    pub(crate) fn hooks(&self) -> &Hooks {
        &self.hooks
    }

    /// The generated history tools' names, sorted.
    pub(crate) fn history_tools(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.tools.iter().filter(|t| !t.seen_with.is_empty()).map(|t| t.name)
    }

    /// The intent lock this registry's tools are served under.
    pub(crate) fn lock(&self) -> &IntentLock {
        &self.lock
    }

    /// The machine `id`.
    pub fn machine(&self, id: &str) -> Option<&Machine> {
        self.machines.get(id).map(Arc::as_ref)
    }

    /// The machines, by id.
    pub fn machines(&self) -> impl Iterator<Item = &Machine> {
        self.machines.values().map(Arc::as_ref)
    }
}
