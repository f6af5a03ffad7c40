//! What the pipeline lets through ([`Admission`]): an [`Admitted`] call — what it read,
//! what its commit will write, and the leases that keep both still meanwhile — or an
//! idempotent retry's first result. The commit itself is `commit/`'s.

use serde_json::{Map, Value};

use super::idempotency::Recalled;
use super::{Idempotency, Spent};
use crate::auth::Principal;
use crate::domain::switch::SwitchRequest;
use crate::flow::FlowRef;
use crate::fsm::Machine;
use crate::records::Records;
use crate::registry::{InstanceHistory, ToolEntry};
use crate::store::{FlowLease, Snapshot, StoreKey, StoreTransaction};

/// The keyed machine's instance a call names.
pub(crate) struct Instance<'a> {
    pub(crate) machine: &'a Machine,
    /// The key's canonical value (`INV-7`).
    pub(crate) id: String,
    pub(crate) key: StoreKey,
}

/// What the pipeline lets through: a call to run, or an idempotent retry answered with
/// the first call's result.
// Not boxed: every call would pay an allocation so that the rare replay moves fewer bytes.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Admission<'a> {
    /// Run the handler, then commit.
    Run(Admitted<'a>),
    /// The first result of this idempotent call; nothing runs.
    Replay(Recalled),
}

/// The leases an admitted call holds until it commits or is dropped.
#[derive(Default)]
pub(crate) struct Leases {
    pub(crate) flow: Option<FlowLease>,
    pub(crate) instance: Option<FlowLease>,
}

/// A call allowed to run: what it read, what its commit will write, and the leases that
/// keep both still meanwhile.
pub(crate) struct Admitted<'a> {
    pub(crate) records: Records<'a>,
    pub(crate) tool: &'a ToolEntry,
    /// The arguments the handler receives: checked, with toolgate's own fields taken out
    /// and the instance key canonical.
    pub(crate) arguments: Map<String, Value>,
    pub(crate) flow: Option<FlowRef>,
    pub(crate) instance: Option<Instance<'a>>,
    /// The flow as committed when the call was admitted.
    pub(crate) flow_before: Snapshot,
    pub(crate) instance_before: Option<Snapshot>,
    pub(crate) selects: Option<String>,
    /// The flow's expiry needs refreshing.
    pub(crate) refresh: bool,
    /// What `switch_domain` asked for.
    pub(crate) switch: Option<SwitchRequest>,
    /// The state of the tool's machine (its instance's, for a keyed machine).
    pub(crate) from: Option<String>,
    /// Where an idempotent call keeps its result for its retries.
    pub(crate) idempotency: Option<Idempotency>,
    /// Who is calling, for the history entry of the transition.
    pub(crate) principal: Option<Principal>,
    pub(crate) history: &'a InstanceHistory,
    /// The note the handler attached to the instance's transition
    /// ([`Ctx::note`](crate::Ctx::note)), set once it returned.
    pub(crate) note: Option<String>,
    /// The effects the handler recorded (name, input), committed with the instance.
    pub(crate) effects: Vec<(String, Value)>,
    /// The context the handler set for the instance ([`InstanceMut::set`](crate::InstanceMut::set)),
    /// set once it returned: committed with the call.
    pub(crate) context: Option<Value>,
    /// The branch the transition's guards picked, for a guarded transition.
    pub(crate) guarded_branch: Option<crate::fsm::Transition>,
    /// The MCP task the call runs as, once it holds its instance: the id names the
    /// transition in the instance's history.
    pub(crate) task: Option<String>,
    /// The transaction the handler opened ([`Transaction`](crate::Transaction)), set once
    /// it returned: the commit writes the call's records in it.
    pub(crate) transaction: Option<Box<dyn StoreTransaction>>,
    pub(crate) leases: Leases,
    /// The allowance the call spent: it counts whatever the handler does.
    pub(super) _spent: Option<Spent<'a>>,
}

impl Admitted<'_> {
    /// Whether the call's success writes anything: a transition, or its flow.
    pub(crate) fn writes(&self) -> bool {
        self.target().is_some()
            || self.writes_flow()
            || self.writes_context()
            || self.held_instance().is_some()
            || self.transaction.is_some()
    }

    /// Whether the commit writes the instance's context: the handler set one, on an
    /// instance whose lease the call holds.
    pub(crate) fn writes_context(&self) -> bool {
        self.context.is_some() && self.instance.is_some() && self.leases.instance.is_some()
    }

    /// The committed context of the instance the call names, as it was admitted.
    pub(crate) fn committed_context(&self) -> Option<Value> {
        self.instance_before.as_ref().and_then(|before| before.context.clone())
    }

    /// The instance a task holds: its store key and id.
    pub(crate) fn held_instance(&self) -> Option<(String, String)> {
        let held = self.task.is_some()
            && self.leases.instance.is_some()
            && self.instance_before.as_ref().is_some_and(|before| before.task.is_some());
        self.instance.as_ref().filter(|_| held).map(|i| (i.key.to_string(), i.id.clone()))
    }

    /// The state the call's transition moves its machine to, if it fires one.
    pub(crate) fn target(&self) -> Option<String> {
        let machine = self.tool.machine.as_deref();
        if self.tool.creates {
            // A new instance starts in the initial state.
            return machine.map(|m| m.initial().to_string());
        }
        if let Some(branch) = &self.guarded_branch {
            return Some(branch.target.clone());
        }
        self.tool
            .transition()
            .zip(machine)
            .zip(self.from.as_deref())
            .map(|((event, machine), from)| machine.target(from, event).unwrap_or(from).to_string())
    }

    /// Whether the call's transition enters its target even when the instance is in it
    /// already (`reenter: true`, XState v5), restarting the state's `after` clock: the
    /// branch the guards picked, or the event's own.
    pub(crate) fn reenters(&self) -> bool {
        if let Some(branch) = &self.guarded_branch {
            return branch.reenter;
        }
        let machine = self.tool.machine.as_deref();
        let transition = self.tool.transition().zip(machine).zip(self.from.as_deref());
        transition
            .and_then(|((event, machine), from)| machine.spec().branches(from, event).next())
            .is_some_and(|t| t.reenter)
    }

    pub(crate) fn switch_changes(&self) -> bool {
        let switches = self.switch.as_ref().map(|s| s.domain.as_str());
        switches.is_some_and(|d| self.flow_before.active_domain.as_deref() != Some(d))
    }

    /// Whether the commit writes the flow: a conversation machine's transition, a domain
    /// selected or switched to (a new flow's first), or a refreshed expiry.
    pub(crate) fn writes_flow(&self) -> bool {
        let flow_transition =
            self.tool.transition().is_some() && self.tool.machine.is_some() && self.instance.is_none();
        let new_flow = self.flow.as_ref().is_some_and(|f| f.is_new);
        self.flow.is_some()
            && (flow_transition
                || self.selects.is_some()
                || self.refresh
                || self.switch_changes()
                || (self.switch.is_some() && new_flow))
    }
}
