//! [`Visibility`]: the registry seen through one flow's view — which tools a principal may
//! see and call, for the gate's admission, the reply's `next` and every listing alike —
//! and where a keyed machine's instance lives ([`instance_key`]).

use std::collections::BTreeMap;

use rmcp::model::Tool;

use crate::auth::Principal;
use crate::error::{Forbidden, ToolError};
use crate::fsm::Machine;
use crate::registry::{Registry, ToolEntry};
use crate::store::{Snapshot, StoreKey};

/// Where the instance `id` of keyed `machine` lives: for a tenant-scoped or principal-owned
/// machine, in the tenant of `principal` (a principal without a tenant is in the default
/// one). An owned instance's key does not name its owner: one id is one instance in a
/// tenant, and whoever reads it judges its owner ([`Snapshot::hidden_from`], [`seen_by`]).
pub(crate) fn instance_key(machine: &Machine, id: &str, principal: Option<&Principal>) -> StoreKey {
    if machine.is_owned() {
        StoreKey::tenant_instance(principal.and_then(Principal::tenant).unwrap_or_default(), machine.id(), id)
    } else {
        StoreKey::instance(machine.id(), id)
    }
}

/// Whether `principal` is held to the owner rule on `machine`'s instances: the machine is
/// principal-owned (`owner: principal`) and the principal holds none of the scopes that
/// act on any owner's instance in its tenant (`ServerBuilder::owned_instances_managed_by`:
/// the manager who approves the reports of others). The one rule the gate, the history,
/// resources, listings and the console read.
pub(crate) fn owner_rule_applies(machine: &Machine, principal: Option<&Principal>) -> bool {
    machine.is_principal_owned()
        && !principal.is_some_and(|principal| machine.managers().iter().any(|scope| principal.has_scope(scope)))
}

/// The instance `snapshot` of `machine` as `principal` may see it: another principal's
/// instance of a principal-owned machine reads as a key never created (the default
/// record: version 0, the initial state), unless the principal manages the machine's
/// instances.
pub(crate) fn seen_by(machine: &Machine, snapshot: Snapshot, principal: Option<&Principal>) -> Snapshot {
    if snapshot.hidden_from(owner_rule_applies(machine, principal), principal) { Snapshot::default() } else { snapshot }
}

/// The view of `flow` with keyed machines' instance states laid over it.
pub(crate) fn view<'a>(flow: &Snapshot, instances: impl IntoIterator<Item = (&'a str, &'a str)>) -> Snapshot {
    let mut view = flow.clone();
    for (machine, state) in instances {
        view.states.insert(machine.to_string(), state.to_string());
    }
    view
}

/// The registry seen through one flow's snapshot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Visibility<'a> {
    registry: &'a Registry,
    snapshot: &'a Snapshot,
    /// Who looks: a tool whose scopes the principal lacks is neither shown nor named.
    principal: Option<&'a Principal>,
}

/// What a client sees of one tool: which tool, and whether with its compact description.
pub(crate) type ListingEntry = (&'static str, bool);

impl<'a> Visibility<'a> {
    pub(crate) fn new(registry: &'a Registry, snapshot: &'a Snapshot) -> Self {
        Self { registry, snapshot, principal: None }
    }

    /// The same gate as `principal` sees it: tools it lacks a scope for are not listed,
    /// not callable, and never named in a refusal.
    pub(crate) fn seen_by(self, principal: Option<&'a Principal>) -> Self {
        Self { principal, ..self }
    }

    /// The state of the tool's machine in this flow (`None` without a machine).
    pub(crate) fn state_of(&self, tool: &'a ToolEntry) -> Option<&'a str> {
        let machine = tool.machine.as_deref()?;
        Some(self.snapshot.state_of(machine.id(), machine.initial()))
    }

    /// Whether the flow's state allows `tool`: unbound tools always, bound ones in their
    /// bound states.
    fn state_allows(&self, tool: &ToolEntry) -> bool {
        let bound = tool.bind_states();
        bound.is_empty() || self.state_of(tool).is_some_and(|state| bound.contains(&state))
    }

    /// Whether the flow may call `tool` now: its state and its active domain allow it.
    pub(crate) fn callable(&self, tool: &ToolEntry) -> bool {
        tool.visible_to(self.principal)
            && self.state_allows(tool)
            && self.registry.lock().admits(tool.domain, self.snapshot)
    }

    fn visible(&self, tool: &ToolEntry) -> bool {
        tool.visible_to(self.principal)
            && self.state_allows(tool)
            && self.registry.lock().lists(tool.domain, self.snapshot)
    }

    /// Whether `tool` is shown with its compact description (its machine is initial).
    fn is_compact(&self, tool: &ToolEntry) -> bool {
        tool.compact.is_some()
            && tool.machine.as_deref().is_some_and(|m| self.snapshot.state_of(m.id(), m.initial()) == m.initial())
    }

    /// The tools the flow's `tools/list` shows, in name order, each with whether it is
    /// shown compact.
    fn shown(&self) -> impl Iterator<Item = (&'a ToolEntry, bool)> + '_ {
        self.registry.tools().iter().filter(|t| self.visible(t)).map(|t| (t, self.is_compact(t)))
    }

    /// What the flow's `tools/list` shows: compared before and after a commit to decide
    /// whether to send `list_changed`.
    pub(crate) fn listing(&self) -> Vec<ListingEntry> {
        self.shown().map(|(t, compact)| (t.name, compact)).collect()
    }

    /// The MCP definitions of [`Visibility::listing`].
    pub(crate) fn tools(&self) -> Vec<Tool> {
        self.shown()
            .map(|(t, compact)| match (&t.compact, compact) {
                (Some(definition), true) => definition.clone(),
                _ => t.tool.clone(),
            })
            .collect()
    }

    /// The tools a result may name after a call on `machine`'s instance (a keyed machine)
    /// or this flow's `machine`, in `state` (whatever the view says of it), as the principal
    /// sees them, whatever the domain. (Not a creating tool: it makes another instance.)
    fn moves<'s>(&'s self, machine: &'s Machine, state: &'s str) -> impl Iterator<Item = &'a ToolEntry> + 's {
        self.registry
            .tools()
            .iter()
            .filter(move |t| !t.creates && t.machine.as_deref().is_some_and(|m| m.id() == machine.id()))
            .filter(move |t| t.bind_states().is_empty() || t.bind_states().contains(&state))
            .filter(move |t| t.visible_to(self.principal))
    }

    /// What a result names as `next`: the [moves](Self::moves) the flow's active domain
    /// admits, callable now.
    pub(crate) fn next<'s>(&'s self, machine: &'s Machine, state: &'s str) -> impl Iterator<Item = &'static str> + 's {
        let lock = self.registry.lock();
        self.moves(machine, state).filter(move |t| lock.admits(t.domain, self.snapshot)).map(|t| t.name)
    }

    /// What a result names as `next_after_switch`: the [moves](Self::moves) left out of
    /// `next` only because the flow's active domain is another, by their domain. A model
    /// that reads it calls `switch_domain` before such a tool, instead of being refused
    /// (`DOMAIN_MISMATCH`) and learning it then.
    pub(crate) fn next_after_switch(
        &self,
        machine: &Machine,
        state: &str,
    ) -> BTreeMap<&'static str, Vec<&'static str>> {
        let lock = self.registry.lock();
        let mut by_domain: BTreeMap<&'static str, Vec<&'static str>> = BTreeMap::new();
        for tool in self.moves(machine, state).filter(|t| !lock.admits(t.domain, self.snapshot)) {
            if let Some(domain) = tool.domain {
                by_domain.entry(domain).or_default().push(tool.name);
            }
        }
        by_domain
    }

    /// The names of the tools the flow may call now.
    pub(crate) fn callable_names(&self) -> Vec<String> {
        self.registry.tools().iter().filter(|t| self.callable(t)).map(|t| t.name.to_string()).collect()
    }

    /// Admits a call to `tool` on `instance` (keyed machines) by state, or refuses it with
    /// `FORBIDDEN` and what *is* allowed. (The domain is checked before, with the call's
    /// declared `domain`.)
    pub(crate) fn admit(&self, tool: &ToolEntry, instance: Option<&str>) -> Result<(), ToolError> {
        if self.state_allows(tool) {
            return Ok(());
        }
        let machine = tool.machine.as_deref().map(|m| m.id().to_string()).unwrap_or_default();
        let current_state = self.state_of(tool).unwrap_or_default();
        Err(ToolError::forbidden(Forbidden {
            tool: tool.name.to_string(),
            machine,
            instance: instance.map(str::to_string),
            expired_at: None,
            current_state: current_state.to_string(),
            allowed_tools: self.callable_names(),
            unlocked_by: tool
                .unlocked_by
                .get(current_state)
                .into_iter()
                .flatten()
                .filter(|name| self.registry.tool(name).is_some_and(|t| t.visible_to(self.principal)))
                .cloned()
                .collect(),
        }))
    }
}
