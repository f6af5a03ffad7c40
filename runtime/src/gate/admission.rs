//! Admission: whether a call may run, decided in one place, in order — the declared
//! domain, the instance it names, the leases of what it will write, the intent lock on
//! the committed flow, the state gate on the committed instance or flow, with the tool's
//! declared rate limit checked before any lease. (Principals and confirmations are the
//! next steps here.) An admitted call holds its
//! leases until its [`Admitted::commit`] or its drop, so its handler runs on state no one
//! else can change.

use serde_json::{Map, Value};

use super::{Gate, Limiter, Records, view};
use crate::action::ActionRegistration;
use crate::domain::field;
use crate::error::ToolError;
use crate::flow::FlowRef;
use crate::fsm::Machine;
use crate::registry::{Registry, ToolEntry};
use crate::store::{FlowLease, Snapshot, StoreKey};

/// The keyed machine's instance a call names.
pub(crate) struct Instance<'a> {
    pub(crate) machine: &'a Machine,
    /// The key's value (`INV-7`).
    pub(crate) id: String,
    pub(crate) key: StoreKey,
}

/// A call allowed to run: what it read, what its commit will write, and the leases that
/// keep both still meanwhile.
pub(crate) struct Admitted<'a> {
    records: Records<'a>,
    flow: Option<&'a FlowRef>,
    machine: Option<&'a Machine>,
    pub(crate) instance: Option<Instance<'a>>,
    /// The flow as committed when the call was admitted.
    pub(crate) flow_before: Snapshot,
    instance_before: Option<Snapshot>,
    /// The domain this call selects (lock on first use).
    selects: Option<String>,
    /// The flow's expiry needs refreshing.
    refresh: bool,
    transition: Option<&'static str>,
    /// The state of the tool's machine (its instance's, for a keyed machine).
    pub(crate) from: Option<String>,
    _leases: (Option<FlowLease>, Option<FlowLease>),
}

/// Admits a call to `tool` or refuses it. Takes the declared `domain` out of `arguments`.
pub(crate) async fn admit<'a>(
    registry: &'a Registry,
    records: Records<'a>,
    limiter: Option<&Limiter>,
    tool: &'a ToolEntry,
    registration: &'static ActionRegistration,
    flow: Option<&'a FlowRef>,
    arguments: &mut Map<String, Value>,
) -> Result<Admitted<'a>, ToolError> {
    let lock = registry.lock();
    let declared = tool.domain.map(|domain| field::take_declared(arguments, domain)).transpose()?;
    let machine = tool.machine.as_deref();
    let instance = match (&tool.instance, machine) {
        (Some(key), Some(machine)) => {
            let id = key.read(arguments)?;
            Some(Instance { machine, key: StoreKey::instance(machine.id(), &id), id })
        }
        _ => None,
    };
    let transition = registration.transition.filter(|_| machine.is_some());
    let flow_key = flow.map(|f| &f.key);
    if let Some(limiter) = limiter {
        // Per instance where the tool names one, else per flow, else per tool. A call
        // without a handle runs in a flow minted for it alone: counting per that flow would
        // give every such call a fresh allowance, so they share the tool's.
        let existing_flow = flow.filter(|f| !f.is_new).map(|f| &f.key);
        let key =
            instance.as_ref().map(|i| &i.key).or(existing_flow).map_or_else(|| "tool".to_string(), ToString::to_string);
        limiter.check(&key)?;
    }

    // Leases: the flow's before the instance's, always in that order.
    let mut flow_lease = match (transition, &instance, flow_key) {
        (Some(_), None, Some(key)) => Some(records.lease(key, "flow").await?),
        _ => None,
    };
    let mut flow_before = records.load_flow(flow).await?;
    let check_domain = |snapshot: &Snapshot| match (tool.domain, &declared) {
        (Some(domain), Some(declared)) => lock.check_call(tool.name, domain, declared, snapshot),
        _ => Ok(None),
    };
    let mut selects = check_domain(&flow_before)?;
    let mut refresh = records.needs_refresh(flow, &flow_before);
    if let (true, None, Some(key)) = (selects.is_some() || refresh, &flow_lease, flow_key) {
        // This call writes the flow after all: take its lease and decide again on what is
        // committed now.
        flow_lease = Some(records.lease(key, "flow").await?);
        flow_before = records.load_flow(flow).await?;
        selects = check_domain(&flow_before)?;
        refresh = records.needs_refresh(flow, &flow_before);
    }
    let instance_lease = match (&instance, transition) {
        (Some(instance), Some(_)) => Some(records.lease(&instance.key, "instance").await?),
        _ => None,
    };
    let instance_before = match &instance {
        Some(instance) => Some(records.load(&instance.key).await?),
        None => None,
    };
    let instance_state = instance
        .as_ref()
        .zip(instance_before.as_ref())
        .map(|(i, snapshot)| (i.machine.id(), snapshot.state_of(i.machine.id(), i.machine.initial()).to_string()));
    let view = view(&flow_before, instance_state.as_ref().map(|(m, s)| (*m, s.as_str())));
    let gate = Gate::new(registry, &view);
    gate.admit(tool, instance.as_ref().map(|i| i.id.as_str()))?;
    let from = gate.state_of(tool).map(str::to_string);
    Ok(Admitted {
        records,
        flow,
        machine,
        instance,
        flow_before,
        instance_before,
        selects,
        refresh,
        transition,
        from,
        _leases: (flow_lease, instance_lease),
    })
}

/// What a commit wrote.
pub(crate) struct Committed {
    /// The flow after the call, if the call wrote it.
    pub(crate) flow_after: Option<Snapshot>,
    /// The machine state the transition moved to, if it fired one.
    pub(crate) to: Option<String>,
}

impl Admitted<'_> {
    /// Commits what the successful call changes — its transition, the domain it
    /// selects, its flow's refreshed expiry — then releases the leases. The flow is
    /// committed first, then the instance: should the second commit fail, the first (a
    /// domain selection, an expiry) is harmless on its own.
    pub(crate) async fn commit(self, tool: &str) -> Result<Committed, ToolError> {
        let to = self
            .transition
            .zip(self.machine)
            .zip(self.from.as_deref())
            .map(|((event, machine), from)| machine.target(from, event).unwrap_or(from).to_string());
        let flow_transition = to.as_ref().filter(|_| self.instance.is_none());
        let flow_after = match self.flow {
            Some(flow) if flow_transition.is_some() || self.selects.is_some() || self.refresh => {
                let mut next = self.flow_before.next();
                if let (Some(to), Some(machine)) = (flow_transition, self.machine) {
                    next.states.insert(machine.id().to_string(), to.clone());
                }
                if let Some(domain) = &self.selects {
                    next.active_domain = Some(domain.clone());
                }
                Some(self.records.commit(&flow.key, &self.flow_before, next).await?)
            }
            _ => None,
        };
        if let (Some(instance), Some(before), Some(to)) = (&self.instance, &self.instance_before, &to) {
            self.records.commit(&instance.key, before, before.with_state(instance.machine.id(), to)).await?;
        }
        if let Some((to, machine)) = to.as_ref().zip(self.machine) {
            let on = self
                .instance
                .as_ref()
                .map_or_else(|| self.flow.map(|f| f.key.to_string()), |i| Some(i.key.to_string()));
            tracing::info!(tool, on, machine = machine.id(), from = self.from, to, "transition committed");
        }
        Ok(Committed { flow_after, to })
    }
}
