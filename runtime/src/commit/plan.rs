//! What an admitted call's commit will write, read off the [`Admitted`] call: whether it
//! writes at all, its transition's target, its context, its flow, the instance a task holds.

use serde_json::Value;

use crate::gate::Admitted;

impl Admitted<'_> {
    /// Whether the call's success writes anything: a transition, its flow, or the spend of
    /// the code that confirmed it.
    pub(crate) fn writes(&self) -> bool {
        self.spend.is_some()
            || self.target().is_some()
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
